//! Values in `expect` expressions: integer literals with size suffixes, single-value files,
//! keys of keyed files and open file descriptors; the comparison operators; the kernel
//! selftests' `values_close` arithmetic; and `$(( ))` arithmetic, exact in 64 bits (division
//! by zero and overflow are errors that say so).

use std::fmt;

use memcgsim_model::text::clip;
use memcgsim_model::units;

/// Where an `expect` operand comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A literal: `4096`, `30M`, `-1`, `max` (i64::MAX).
    Int(i64),
    /// A single-value file (its first word), path as written (relative or absolute).
    File(String),
    /// A key of a keyed file: `FILE:KEY`, the second word of the line whose first word is KEY.
    Key(String, String),
    /// A file read through the fd bound to this name by `open` (`@NAME`).
    Fd(String),
    /// A variable set by `let` (`$NAME`), or the built-in [`NOW`] (`$now`).
    Var(String),
}

/// The built-in variable `$now`: the virtual time in nanoseconds. `let` cannot set it.
pub const NOW: &str = "now";

/// Whether `name` is a variable name: a letter or `_`, then letters, digits and `_`.
pub fn is_var_name(name: &str) -> bool {
    let mut c = name.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// A comparison operator of `expect A OP B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// Parse `==`, `!=`, `<`, `<=`, `>`, `>=`.
    pub fn parse(s: &str) -> Option<CmpOp> {
        Some(match s {
            "==" => CmpOp::Eq,
            "!=" => CmpOp::Ne,
            "<" => CmpOp::Lt,
            "<=" => CmpOp::Le,
            ">" => CmpOp::Gt,
            ">=" => CmpOp::Ge,
            _ => return None,
        })
    }

    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// Apply the operator.
    pub fn eval(self, a: i64, b: i64) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kernel selftests' `values_close(a, b, err)`: `labs(a - b) <= (a + b) / 100 * err`,
/// with C's truncating integer division done before the multiplication. Computed in 128 bits
/// so that no operand can overflow.
pub fn values_close(a: i64, b: i64, pct: i64) -> bool {
    let (a, b, pct) = (a as i128, b as i128, pct as i128);
    (a - b).abs() <= (a + b) / 100 * pct
}

/// Whether a word is written as a number literal: it starts with a digit or `-` and has no
/// `/` or `:` (which would make it a path or a key).
pub fn looks_numeric(word: &str) -> bool {
    matches!(word.chars().next(), Some(c) if c.is_ascii_digit() || c == '-')
        && !word.contains('/')
        && !word.contains(':')
}

/// Parse an integer literal: an optional `-`, a decimal number and an optional binary suffix
/// K, M, G or T (`30M` = 31457280; fractions need a suffix: `1.5G`).
pub fn parse_int(word: &str) -> Result<i64, String> {
    let (neg, mag) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word),
    };
    if mag.is_empty() || mag.starts_with('-') || mag.starts_with('+') {
        return Err(format!("bad number '{word}'"));
    }
    let m = units::parse_size(mag).map_err(|_| format!("bad number '{word}'"))?;
    if neg {
        if m > 1u64 << 63 {
            return Err(format!("number '{word}' is out of range"));
        }
        Ok((m as i128).wrapping_neg() as i64)
    } else {
        i64::try_from(m).map_err(|_| format!("number '{word}' is out of range"))
    }
}

/// Parse one operand word of an `expect` expression.
pub fn parse_value(word: &str) -> Result<Value, String> {
    if word.is_empty() {
        return Err("empty value".into());
    }
    if word == "max" {
        return Ok(Value::Int(i64::MAX));
    }
    if let Some(name) = word.strip_prefix('@') {
        if name.is_empty() {
            return Err("'@' needs an fd name".into());
        }
        return Ok(Value::Fd(name.to_string()));
    }
    if let Some(name) = word.strip_prefix('$') {
        if !is_var_name(name) {
            return Err(format!(
                "'{word}': a variable is $NAME, NAME of letters, digits and _ not starting with a digit"
            ));
        }
        return Ok(Value::Var(name.to_string()));
    }
    if looks_numeric(word) {
        return parse_int(word).map(Value::Int);
    }
    if let Some((file, key)) = word.split_once(':') {
        if file.is_empty() {
            return Err(format!("'{word}': no file before ':'"));
        }
        if key.is_empty() {
            return Err(format!("'{word}': no key after ':'"));
        }
        return Ok(Value::Key(file.to_string(), key.to_string()));
    }
    Ok(Value::File(word.to_string()))
}

/// Parse a number as a control file prints it: decimal, or `max` for "no limit".
pub fn parse_file_number(word: &str) -> Result<i64, String> {
    if word == "max" {
        return Ok(i64::MAX);
    }
    word.parse::<i64>()
        .map_err(|_| format!("'{word}' is not a number"))
}

/// The value of a single-value file: its first word as an integer (`max` is i64::MAX).
pub fn single_value(content: &str) -> Result<i64, String> {
    match content.split_whitespace().next() {
        Some(w) => parse_file_number(w),
        None => Err("the file is empty".into()),
    }
}

/// The value of `key` in a keyed file: the second word of the first line whose first word is
/// exactly `key` (a trailing `:` on the first word is ignored, as in /proc/meminfo). A key
/// `LINE.FIELD` that no line starts with names the `FIELD=VALUE` word of the line starting
/// with `LINE`, as in the pressure files (`some.total`, `full.avg10`); a decimal VALUE such
/// as an average's `32.61` reads as hundredths (3261). In the per-zone files whose lines start
/// `Node 0, zone ZONE` (/proc/buddyinfo, /proc/pagetypeinfo), `ZONE.N` names the N-th count
/// after the zone's name on its first line that names no type (buddyinfo's blocks of order
/// N; in pagetypeinfo the pageblocks of the N-th type), and `ZONE.TYPE.N` the N-th count of
/// the line `Node 0, zone ZONE, type TYPE` (free blocks of order N); a count capped as
/// `>100000` reads as 100000.
pub fn keyed_value(content: &str, key: &str) -> Result<i64, String> {
    if content.starts_with("memcg ") {
        return lru_gen_value(content, key);
    }
    for line in content.lines() {
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if first == key || first.strip_suffix(':') == Some(key) {
            return match words.next() {
                Some(v) => parse_file_number(v),
                None => Err(format!("key '{key}' has no value")),
            };
        }
    }
    if let Some((head, field)) = key.split_once('.') {
        for line in content.lines() {
            let mut words = line.split_whitespace();
            if words.next() != Some(head) {
                continue;
            }
            for w in words {
                if let Some(v) = w.strip_prefix(field).and_then(|r| r.strip_prefix('=')) {
                    return parse_field_number(v)
                        .ok_or_else(|| format!("field '{field}' of '{head}' is not a number"));
                }
            }
            return Err(format!("line '{head}' has no field '{field}'"));
        }
    }
    if let Some(v) = zone_count(content, key) {
        return v;
    }
    Err(format!("no key '{key}'"))
}

/// A key of /sys/kernel/debug/lru_gen (`memcg ID PATH`, ` node N`, then a line per
/// generation: seq, age in ms, anon pages, file pages): `ID.max_seq`, `ID.min_seq` (the
/// first generation shown), `ID.gens` (how many), `ID.anon` and `ID.file` (pages over them
/// all), and `ID.SEQ.anon`, `ID.SEQ.file`, `ID.SEQ.age` of one generation.
fn lru_gen_value(content: &str, key: &str) -> Result<i64, String> {
    let parts: Vec<&str> = key.split('.').collect();
    let (id, seq, what) = match parts[..] {
        [id, what] => (id, None, what),
        [id, seq, what] => (id, Some(seq), what),
        _ => return Err(format!("no key '{key}' (ID.WHAT or ID.SEQ.WHAT)")),
    };
    let mut cur = false;
    let mut gens: Vec<[i64; 4]> = Vec::new();
    for line in content.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.first() {
            Some(&"memcg") => cur = w.get(1) == Some(&id),
            Some(_) if cur && w.len() == 4 => {
                let mut v = [0i64; 4];
                for (x, s) in v.iter_mut().zip(&w) {
                    *x = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
                }
                gens.push(v);
            }
            _ => {}
        }
    }
    let (Some(first), Some(last)) = (gens.first(), gens.last()) else {
        return Err(format!("no generations of group {id}"));
    };
    let field = |what: &str| match what {
        "age" => Some(1),
        "anon" => Some(2),
        "file" => Some(3),
        _ => None,
    };
    match (seq, what) {
        (None, "max_seq") => Ok(last[0]),
        (None, "min_seq") => Ok(first[0]),
        (None, "gens") => Ok(gens.len() as i64),
        (None, w) if field(w).is_some_and(|f| f >= 2) => {
            let f = field(w).expect("checked");
            Ok(gens.iter().map(|g| g[f]).sum())
        }
        (Some(seq), w) => {
            let f = field(w).ok_or_else(|| format!("no field '{w}' (age, anon or file)"))?;
            let seq: i64 = seq
                .parse()
                .map_err(|_| format!("'{seq}' is not a sequence number"))?;
            gens.iter()
                .find(|g| g[0] == seq)
                .map(|g| g[f])
                .ok_or_else(|| format!("group {id} has no generation {seq}"))
        }
        _ => Err(format!("no key '{key}'")),
    }
}

/// A `ZONE.N` or `ZONE.TYPE.N` key of a per-zone file (see [`keyed_value`]); None when the key
/// has no such form or no line names the zone (and type).
fn zone_count(content: &str, key: &str) -> Option<Result<i64, String>> {
    let parts: Vec<&str> = key.split('.').collect();
    let (zone, ty, n) = match parts[..] {
        [z, n] => (z, None, n),
        [z, t, n] => (z, Some(t), n),
        _ => return None,
    };
    let n: usize = n.parse().ok()?;
    for line in content.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 4 || w[0] != "Node" || w[2] != "zone" || w[3].trim_end_matches(',') != zone {
            continue;
        }
        let first = match (ty, w.get(4)) {
            (Some(t), Some(&"type")) if w.get(5) == Some(&t) => 6,
            (None, Some(&"type")) | (Some(_), _) => continue,
            (None, _) => 4,
        };
        return Some(match w.get(first + n) {
            Some(v) => parse_file_number(v.trim_start_matches('>')),
            None => Err(format!("zone {zone} has no count {n}")),
        });
    }
    None
}

/// A `FIELD=VALUE` number: an integer, or a decimal with two places read as hundredths.
fn parse_field_number(v: &str) -> Option<i64> {
    match v.split_once('.') {
        None => v.parse().ok(),
        Some((int, frac)) if frac.len() == 2 && frac.bytes().all(|b| b.is_ascii_digit()) => {
            let int: i64 = int.parse().ok()?;
            int.checked_mul(100)?.checked_add(frac.parse::<i64>().ok()?)
        }
        Some(_) => None,
    }
}

/// Format a value for a failure message (`max` for i64::MAX, as cgroupfs shows it).
pub fn show(v: i64) -> String {
    if v == i64::MAX {
        "max".to_string()
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_literals() {
        assert_eq!(parse_int("0").unwrap(), 0);
        assert_eq!(parse_int("4096").unwrap(), 4096);
        assert_eq!(parse_int("30M").unwrap(), 31457280);
        assert_eq!(parse_int("30m").unwrap(), 31457280);
        assert_eq!(parse_int("4K").unwrap(), 4096);
        assert_eq!(parse_int("1G").unwrap(), 1 << 30);
        assert_eq!(parse_int("2T").unwrap(), 2 << 40);
        assert_eq!(parse_int("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_int("-1").unwrap(), -1);
        assert_eq!(parse_int("-4K").unwrap(), -4096);
        assert_eq!(parse_int("9223372036854775807").unwrap(), i64::MAX);
        assert_eq!(parse_int("-9223372036854775808").unwrap(), i64::MIN);
    }

    #[test]
    fn bad_integer_literals() {
        for w in [
            "",
            "-",
            "--1",
            "-+1",
            "+1",
            "1.5",
            "30MB",
            "3X",
            "x",
            "M",
            "1e3",
            "9223372036854775808",
            "-9223372036854775809",
            "99999999T",
        ] {
            assert!(parse_int(w).is_err(), "{w:?} should not parse");
        }
    }

    #[test]
    fn operand_kinds() {
        assert_eq!(parse_value("30M").unwrap(), Value::Int(30 << 20));
        assert_eq!(parse_value("-1").unwrap(), Value::Int(-1));
        assert_eq!(parse_value("max").unwrap(), Value::Int(i64::MAX));
        assert_eq!(
            parse_value("/A/memory.current").unwrap(),
            Value::File("/A/memory.current".into())
        );
        assert_eq!(
            parse_value("memory.current").unwrap(),
            Value::File("memory.current".into())
        );
        assert_eq!(
            parse_value("/A/memory.stat:anon").unwrap(),
            Value::Key("/A/memory.stat".into(), "anon".into())
        );
        assert_eq!(
            parse_value("memory.events:oom_kill").unwrap(),
            Value::Key("memory.events".into(), "oom_kill".into())
        );
        assert_eq!(
            parse_value("/proc/meminfo:MemTotal").unwrap(),
            Value::Key("/proc/meminfo".into(), "MemTotal".into())
        );
        assert_eq!(parse_value("@peak").unwrap(), Value::Fd("peak".into()));
        // A leading digit with a '/' is a relative path, not a number.
        assert_eq!(
            parse_value("1/memory.current").unwrap(),
            Value::File("1/memory.current".into())
        );
        assert!(parse_value("30MB").is_err());
        assert!(parse_value("@").is_err());
        assert_eq!(parse_value("$slab0").unwrap(), Value::Var("slab0".into()));
        assert!(parse_value("$").is_err());
        assert!(parse_value("$0x").is_err());
        assert!(parse_value("$a-b").is_err());
        assert!(parse_value(":anon").is_err());
        assert!(parse_value("memory.stat:").is_err());
        assert!(parse_value("").is_err());
    }

    #[test]
    fn comparisons() {
        for (s, a, b, want) in [
            ("==", 1, 1, true),
            ("==", 1, 2, false),
            ("!=", 1, 2, true),
            ("<", 1, 2, true),
            ("<", 2, 2, false),
            ("<=", 2, 2, true),
            (">", 3, 2, true),
            (">", 2, 2, false),
            (">=", 2, 2, true),
            (">=", 1, 2, false),
        ] {
            let op = CmpOp::parse(s).unwrap();
            assert_eq!(op.as_str(), s);
            assert_eq!(op.eval(a, b), want, "{a} {s} {b}");
        }
        assert!(CmpOp::parse("=").is_none());
        assert!(CmpOp::parse("=>").is_none());
    }

    #[test]
    fn values_close_is_integer_arithmetic() {
        // (a + b) / 100 truncates before the multiply.
        assert!(values_close(100, 100, 1));
        assert!(values_close(101, 99, 1)); // |2| <= 200/100*1 = 2
        assert!(!values_close(102, 97, 1)); // |5| <= 199/100*1 = 1
        assert!(!values_close(50, 49, 1)); // |1| <= 99/100*1 = 0
        assert!(values_close(50, 50, 1));
        assert!(values_close(105, 95, 5)); // |10| <= 2*5 = 10
        assert!(!values_close(106, 95, 5)); // |11| <= 201/100*5 = 10
        assert!(values_close(30 << 20, (30 << 20) + 900_000, 3));
        // close(x, 0, 1) passes only when x == 0.
        assert!(values_close(0, 0, 1));
        for x in [1, 2, 50, 99, 100, 101, 1000, 1 << 30, i64::MAX] {
            assert!(!values_close(x, 0, 1), "close({x}, 0, 1)");
            assert!(!values_close(0, x, 1), "close(0, {x}, 1)");
        }
        // Negative operands truncate toward zero as in C.
        assert!(!values_close(-1, 0, 100));
        assert!(values_close(-100, -100, 0));
        // Extreme operands do not overflow.
        assert!(values_close(i64::MAX, i64::MAX, 1));
        assert!(!values_close(i64::MAX, i64::MIN, 100));
        assert!(values_close(i64::MIN, i64::MIN, 0));
    }

    #[test]
    fn file_values() {
        assert_eq!(single_value("31662080\n").unwrap(), 31662080);
        assert_eq!(single_value("max\n").unwrap(), i64::MAX);
        assert_eq!(single_value("-1\n").unwrap(), -1);
        assert_eq!(single_value("12 34\n56\n").unwrap(), 12);
        assert!(single_value("").is_err());
        assert!(single_value("\n").is_err());
        assert!(single_value("some avg10=0.00\n").is_err());
    }

    #[test]
    fn zone_counts_of_buddyinfo_and_pagetypeinfo() {
        let buddy = "Node 0, zone      DMA      0      0      1 \nNode 0, zone    DMA32      5      4      3 \n";
        assert_eq!(keyed_value(buddy, "DMA.2").unwrap(), 1);
        assert_eq!(keyed_value(buddy, "DMA32.0").unwrap(), 5);
        assert!(keyed_value(buddy, "DMA32.3").is_err());
        assert!(keyed_value(buddy, "Normal.0").is_err());
        let types =
            "Page block order: 9\n\nFree pages count per migrate type at order       0      1 \n\
            Node    0, zone    DMA32, type    Unmovable      2 >100000 \n\
            Node    0, zone    DMA32, type      Movable      7      8 \n\n\
            Number of blocks type     Unmovable      Movable \n\
            Node 0, zone    DMA32           18          230 \n";
        assert_eq!(keyed_value(types, "DMA32.Movable.1").unwrap(), 8);
        assert_eq!(keyed_value(types, "DMA32.Unmovable.1").unwrap(), 100_000);
        assert_eq!(keyed_value(types, "DMA32.1").unwrap(), 230);
        assert!(keyed_value(types, "DMA32.Isolate.0").is_err());
    }

    #[test]
    fn lru_gen_keys() {
        let f = "memcg     1 /\n node     0\n          0       1000          5          7 \n          1         10          0          0 \nmemcg     2 /A\n node     0\n          3       2000        100         50 \n          4        500        200          0 \n          5          4          1          2 \n";
        assert_eq!(keyed_value(f, "2.max_seq").unwrap(), 5);
        assert_eq!(keyed_value(f, "2.min_seq").unwrap(), 3);
        assert_eq!(keyed_value(f, "2.gens").unwrap(), 3);
        assert_eq!(keyed_value(f, "2.anon").unwrap(), 301);
        assert_eq!(keyed_value(f, "2.file").unwrap(), 52);
        assert_eq!(keyed_value(f, "2.4.anon").unwrap(), 200);
        assert_eq!(keyed_value(f, "2.3.age").unwrap(), 2000);
        assert_eq!(keyed_value(f, "1.0.file").unwrap(), 7);
        assert!(keyed_value(f, "2.9.anon").is_err());
        assert!(keyed_value(f, "3.max_seq").is_err());
        assert!(keyed_value(f, "2.size").is_err());
        assert!(keyed_value(f, "2.age").is_err());
    }

    #[test]
    fn keyed_values() {
        let stat = "anon 1234\nfile 5678\nanon_thp 0\nfile_mapped 9\n";
        assert_eq!(keyed_value(stat, "anon").unwrap(), 1234);
        assert_eq!(keyed_value(stat, "file").unwrap(), 5678);
        assert_eq!(keyed_value(stat, "anon_thp").unwrap(), 0);
        assert_eq!(keyed_value(stat, "file_mapped").unwrap(), 9);
        // Exact first-word match, never a substring or prefix.
        assert!(keyed_value(stat, "ano").is_err());
        assert!(keyed_value(stat, "mapped").is_err());
        assert!(keyed_value(stat, "1234").is_err());
        let events = "low 0\nhigh 3\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(keyed_value(events, "max").unwrap(), 7);
        assert_eq!(keyed_value(events, "oom").unwrap(), 1);
        let meminfo = "MemTotal:        1048576 kB\nMemFree:          900000 kB\n";
        assert_eq!(keyed_value(meminfo, "MemTotal").unwrap(), 1048576);
        assert_eq!(keyed_value(meminfo, "MemTotal:").unwrap(), 1048576);
        assert!(keyed_value("anon\n", "anon").is_err());
        assert!(keyed_value("anon x\n", "anon").is_err());
        assert!(keyed_value("", "anon").is_err());
        let pressure = "some avg10=32.61 avg60=6.37 avg300=1.34 total=4991378\n\
                        full avg10=0.05 avg60=0.00 avg300=0.00 total=12\n";
        assert_eq!(keyed_value(pressure, "some.total").unwrap(), 4_991_378);
        assert_eq!(keyed_value(pressure, "some.avg10").unwrap(), 3261);
        assert_eq!(keyed_value(pressure, "full.avg10").unwrap(), 5);
        assert_eq!(keyed_value(pressure, "full.total").unwrap(), 12);
        assert!(keyed_value(pressure, "some.avg").is_err());
        assert!(keyed_value(pressure, "none.total").is_err());
        assert!(keyed_value("some avg10=1.5\n", "some.avg10").is_err());
    }

    #[test]
    fn show_values() {
        assert_eq!(show(5), "5");
        assert_eq!(show(-1), "-1");
        assert_eq!(show(i64::MAX), "max");
    }
}

/// A piece of an `echo` text: literal text, or a `$(( VALUE [OP VALUE]... ))` expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Segment {
    Text(String),
    /// Terms with the operator before each: `+`, `-`, `*`, `/` or `%` (the first's is `+`).
    Arith(Vec<(char, Value)>),
}

/// The operators of `$(( ))`.
const ARITH_OPS: [char; 5] = ['+', '-', '*', '/', '%'];

/// Whether `word` is an operand that can be written glued to operators: a number literal or
/// a `$NAME` variable.
fn glueable(word: &str) -> bool {
    match word.strip_prefix('$') {
        Some(name) => is_var_name(name),
        None => looks_numeric(word) && parse_int(word).is_ok(),
    }
}

/// A word of a `$(( ))` that glues operators to numbers and variables, as `1/0`, `$x%2` or
/// `2*-1` (a `-` where an operand starts is its sign), split into its operands and operators;
/// None when it has no operator or an operand that is neither (`1/memory.current` is a
/// relative path, whose operators need spaces).
fn split_glued(word: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = word.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        let at_operand_start = i == start;
        if ARITH_OPS.contains(&c) && !(at_operand_start && c == '-') {
            out.push(&word[start..i]);
            out.push(&word[i..i + 1]);
            start = i + 1;
        }
        i += 1;
    }
    out.push(&word[start..]);
    let operands_ok = out.iter().step_by(2).all(|w| glueable(w));
    (out.len() > 1 && operands_ok).then_some(out)
}

/// Split an echo text into literal text and `$(( ))` expressions (bash arithmetic
/// expansion, with `+`, `-`, `*`, `/` and `%` between VALUEs as in `expect`). Operators stand
/// between spaces; between numbers and variables they may be glued (`$((1/0))`, `$(($n+1))`).
pub fn parse_arith(text: &str) -> Result<Vec<Segment>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    for _ in 0..64 {
        let Some(start) = rest.find("$((") else {
            break;
        };
        let body_start = start + 3;
        let Some(len) = rest[body_start..].find("))") else {
            return Err(format!("unterminated '$((' in '{}'", clip(text)));
        };
        if start > 0 {
            out.push(Segment::Text(rest[..start].to_string()));
        }
        let body = &rest[body_start..body_start + len];
        let mut terms = Vec::new();
        let mut op = Some('+');
        for word in body.split_whitespace() {
            let pieces = split_glued(word).unwrap_or_else(|| vec![word]);
            for piece in pieces {
                let as_op = match piece {
                    "+" | "-" | "*" | "/" | "%" => piece.chars().next(),
                    _ => None,
                };
                match (as_op, op) {
                    (Some(o), None) => op = Some(o),
                    (_, Some(o)) => {
                        terms.push((
                            o,
                            parse_value(piece).map_err(|e| format!("in $(( )): {e}"))?,
                        ));
                        op = None;
                    }
                    (None, None) => {
                        return Err(format!(
                            "in $(( )): expected +, -, *, / or % before '{}'",
                            clip(piece)
                        ))
                    }
                }
            }
        }
        if op.is_some() {
            return Err(format!("in $(( )): incomplete expression '{}'", clip(body)));
        }
        out.push(Segment::Arith(terms));
        rest = &rest[body_start + len + 2..];
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest.to_string()));
    }
    Ok(out)
}

/// The value of the terms of a `$(( ))` whose operands are `values`: `*`, `/` (integer
/// division, toward zero) and `%` (its remainder) bind tighter than `+` and `-`. Division by
/// zero and a result (or step) outside the 64-bit range are errors that say so.
pub fn arith(terms: &[(char, i64)]) -> Result<i64, String> {
    let overflow = |a: i64, op: char, b: i64| {
        format!(
            "in $(( )): {a} {op} {b} overflows: values are 64-bit, from {} to {}",
            i64::MIN,
            i64::MAX
        )
    };
    // The sum of the finished products, and the product being built with its sign.
    let (mut sum, mut term, mut sign): (i64, i64, char) = (0, 0, '+');
    let add = |sum: i64, sign: char, term: i64| match sign {
        '+' => sum
            .checked_add(term)
            .ok_or_else(|| overflow(sum, '+', term)),
        _ => sum
            .checked_sub(term)
            .ok_or_else(|| overflow(sum, '-', term)),
    };
    for &(op, n) in terms {
        match op {
            '+' | '-' => {
                sum = add(sum, sign, term)?;
                (term, sign) = (n, op);
            }
            '*' => term = term.checked_mul(n).ok_or_else(|| overflow(term, '*', n))?,
            '/' | '%' => {
                if n == 0 {
                    return Err(format!("in $(( )): division by zero in {term} {op} 0"));
                }
                term = if op == '/' {
                    term.checked_div(n).ok_or_else(|| overflow(term, '/', n))?
                } else {
                    // i64::MIN % -1 is 0, though the division overflows.
                    term.checked_rem(n).unwrap_or(0)
                };
            }
            _ => return Err(format!("in $(( )): unknown operator '{op}'")),
        }
    }
    add(sum, sign, term)
}

/// Split literal text at its `$NAME` variable references (as bash expands them in `echo`):
/// `Ok(text)` pieces and `Err(name)` references, in order. A `$` not followed by a name
/// character stays text.
pub fn split_vars(text: &str) -> Vec<Result<String, String>> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let starts_name = c == '$'
            && text[i + 1..]
                .chars()
                .next()
                .is_some_and(|n| n.is_ascii_alphabetic() || n == '_');
        if !starts_name {
            lit.push(c);
            continue;
        }
        let rest = &text[i + 1..];
        let len = rest
            .find(|n: char| !(n.is_ascii_alphanumeric() || n == '_'))
            .unwrap_or(rest.len());
        if !lit.is_empty() {
            out.push(Ok(std::mem::take(&mut lit)));
        }
        out.push(Err(rest[..len].to_string()));
        for _ in 0..len {
            chars.next();
        }
    }
    if !lit.is_empty() {
        out.push(Ok(lit));
    }
    out
}

#[cfg(test)]
mod arith_tests {
    use super::*;

    #[test]
    fn glued_operators_split_between_numbers_and_variables() {
        assert_eq!(split_glued("1/0"), Some(vec!["1", "/", "0"]));
        assert_eq!(split_glued("$x%2"), Some(vec!["$x", "%", "2"]));
        assert_eq!(split_glued("2*-1"), Some(vec!["2", "*", "-1"]));
        assert_eq!(split_glued("30M-1"), Some(vec!["30M", "-", "1"]));
        assert_eq!(split_glued("1--1"), Some(vec!["1", "-", "-1"]));
        // No operator, or an operand that is a path: the word stays whole.
        assert_eq!(split_glued("-1"), None);
        assert_eq!(split_glued("42"), None);
        assert_eq!(split_glued("1/memory.current"), None);
        assert_eq!(split_glued("/A/memory.current"), None);
        assert_eq!(split_glued("1/"), None);
        assert_eq!(split_glued("--"), None);
        assert_eq!(
            parse_arith("$((1/0))").unwrap(),
            vec![Segment::Arith(vec![
                ('+', Value::Int(1)),
                ('/', Value::Int(0))
            ])]
        );
    }

    #[test]
    fn arithmetic_is_checked() {
        assert_eq!(
            arith(&[('+', 1), ('+', 2), ('*', 3), ('-', 4), ('/', 2)]),
            Ok(5)
        );
        assert_eq!(arith(&[('+', -7), ('%', 3)]), Ok(-1));
        assert_eq!(arith(&[('+', i64::MIN), ('%', -1)]), Ok(0));
        assert_eq!(arith(&[('+', -1), ('-', i64::MIN)]), Ok(i64::MAX));
        assert_eq!(
            arith(&[('+', 7), ('%', 0)]),
            Err("in $(( )): division by zero in 7 % 0".into())
        );
        for terms in [
            vec![('+', i64::MAX), ('+', 1)],
            vec![('+', i64::MIN), ('-', 1)],
            vec![('+', 0), ('-', i64::MIN)],
            vec![('+', i64::MIN), ('/', -1)],
            vec![('+', 1 << 32), ('*', 1 << 32)],
        ] {
            let e = arith(&terms).unwrap_err();
            assert!(e.contains("overflows: values are 64-bit"), "{terms:?}: {e}");
        }
    }

    #[test]
    fn variables_in_text() {
        assert_eq!(
            split_vars("a $x, $y_1b $ 5$ $9"),
            vec![
                Ok("a ".to_string()),
                Err("x".to_string()),
                Ok(", ".to_string()),
                Err("y_1b".to_string()),
                Ok(" $ 5$ $9".to_string()),
            ]
        );
        assert!(split_vars("").is_empty());
    }

    #[test]
    fn arith_segments() {
        let s = parse_arith("x $(( /A/memory.current - 30M + 1 )) y").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0], Segment::Text("x ".into()));
        assert_eq!(
            s[1],
            Segment::Arith(vec![
                ('+', Value::File("/A/memory.current".into())),
                ('-', Value::Int(30 << 20)),
                ('+', Value::Int(1)),
            ])
        );
        assert!(parse_arith("$(( 1 -").is_err());
        assert!(parse_arith("$(( 1 2 ))").is_err());
        assert!(parse_arith("$(( 1 - ))").is_err());
        assert!(parse_arith("$(( 1 * ))").is_err());
        assert_eq!(
            parse_arith("$(( 2 * 3 ))").unwrap(),
            vec![Segment::Arith(vec![
                ('+', Value::Int(2)),
                ('*', Value::Int(3))
            ])]
        );
        assert_eq!(
            parse_arith("plain").unwrap(),
            vec![Segment::Text("plain".into())]
        );
    }
}
