//! The values table of `memcgsim oracle --values`: every counter that both the model and the
//! kernel read in a script (a `cat` of a single value, each key of a keyed file, a `let`, each
//! file operand of an `expect`), model and kernel side by side with the kernel/model ratio,
//! flagged where the two differ beyond the tolerance, so that a gap in the values shows
//! without reading the raw output.
//!
//! [`counters`] reads the numbers of a file's text as both sides print it; [`cat_rows`]
//! pairs the model's and the kernel's by key; [`ValueTable::render`] lays the rows out in
//! aligned columns. The rows are collected by [`crate::compare::compare`] in script order.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use memcgsim_model::units::{fmt_ns, fmt_size};

use crate::compare::{unit_of, within, CompareOpts, Unit};

/// Why the kernel has no value where the model has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// The kernel's file has no such key.
    Absent,
    /// The kernel could not read the file (or the value is not a number there).
    Unreadable,
}

impl Missing {
    fn word(self) -> &'static str {
        match self {
            Missing::Absent => "(absent)",
            Missing::Unreadable => "(unreadable)",
        }
    }
}

/// One counter read on both sides.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueRow {
    /// The script file's line.
    pub line: usize,
    /// What was read: an absolute path (several, space-separated, for a `cat` of several
    /// keyed files), or `$NAME` for a `let`.
    pub file: String,
    /// The key in a keyed file; empty for a single value. A key that occurs again in the
    /// same output is numbered from its second occurrence: `min#2`.
    pub key: String,
    pub unit: Unit,
    pub model: i64,
    pub kernel: Result<i64, Missing>,
}

impl ValueRow {
    /// Whether the two values agree within the options' tolerance (and slack, for sizes).
    pub fn agrees(&self, opts: &CompareOpts) -> bool {
        match self.kernel {
            Ok(k) => within(self.model, k, opts, self.unit),
            Err(_) => false,
        }
    }
}

/// Every value of a script that both sides read, in the order the script reads them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueTable {
    pub rows: Vec<ValueRow>,
    /// Keys the kernel's keyed files show and the model's do not (not listed: /proc/vmstat
    /// alone has a hundred the model does not keep).
    pub kernel_only_keys: usize,
}

/// One number of a file's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counter {
    /// Empty for a line that is a number alone.
    pub key: String,
    pub value: i64,
    /// The line gives the value in kB (/proc/meminfo).
    pub kb: bool,
}

/// A whole number as a kernel file prints it (`max` is i64::MAX, as the script language
/// reads it); None for anything else (`0.00`, `N0=5`, `kB`).
fn int(word: &str) -> Option<i64> {
    if word == "max" {
        return Some(i64::MAX);
    }
    let digits = word.strip_prefix('-').unwrap_or(word);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

/// The numbers of a file's text, as the script language names them: a line that is a
/// number alone has the empty key; `KEY VALUE [kB]` has KEY (a trailing `:` dropped);
/// `KEY a=1 b=2` (memory.pressure's `some ... total=N`, memory.numa_stat's `N0=`) has
/// `KEY.a`, `KEY.b` for each whole number (so pressure's averages, `0.00`, are left out);
/// any other line ending in a number has its words before it (`pages free`); a per-zone
/// line `Node 0, zone ZONE[, type TYPE] n0 n1 ...` (/proc/buddyinfo, /proc/pagetypeinfo) has
/// `ZONE.I` or `ZONE.TYPE.I` for its I-th count, as the script language names them. A key
/// seen again is numbered `KEY#2`, `KEY#3`, ... Lines without a number are skipped.
pub fn counters(lines: &[String]) -> Vec<Counter> {
    let mut out: Vec<Counter> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut push = |key: String, value: i64, kb: bool, out: &mut Vec<Counter>| {
        let n = seen.entry(key.clone()).or_insert(0);
        *n += 1;
        let key = if *n == 1 { key } else { format!("{key}#{n}") };
        out.push(Counter { key, value, kb });
    };
    for line in lines {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            [] => {}
            ["Node", _, "zone", zone, rest @ ..] => {
                let zone = zone.trim_end_matches(',');
                let (prefix, counts) = match rest {
                    ["type", ty, counts @ ..] => (format!("{zone}.{ty}"), counts),
                    counts => (zone.to_string(), counts),
                };
                for (i, c) in counts.iter().enumerate() {
                    if let Some(v) = int(c.trim_start_matches('>')) {
                        push(format!("{prefix}.{i}"), v, false, &mut out);
                    }
                }
            }
            [v] => {
                if let Some(v) = int(v) {
                    push(String::new(), v, false, &mut out);
                }
            }
            [k, v, rest @ ..] if int(v).is_some() => {
                let kb = rest.first() == Some(&"kB");
                let key = k.trim_end_matches(':').to_string();
                push(key.clone(), int(v).unwrap_or(0), kb, &mut out);
                for word in rest {
                    if let Some((a, b)) = word.split_once('=') {
                        if let Some(b) = int(b) {
                            push(format!("{key}.{a}"), b, false, &mut out);
                        }
                    }
                }
            }
            [k, rest @ ..] if rest.iter().any(|x| x.contains('=')) => {
                let key = k.trim_end_matches(':');
                for word in rest {
                    if let Some((a, b)) = word.split_once('=') {
                        if let Some(b) = int(b) {
                            push(format!("{key}.{a}"), b, false, &mut out);
                        }
                    }
                }
            }
            [head @ .., last] => {
                if let Some(v) = int(last) {
                    let key = head
                        .iter()
                        .map(|x| x.trim_end_matches(':'))
                        .collect::<Vec<_>>()
                        .join(" ");
                    push(key, v, false, &mut out);
                }
            }
        }
    }
    out
}

/// The unit of a counter of `path`: as [`unit_of`] says, except that a /proc/meminfo line
/// without `kB` (HugePages_Total) is a count.
fn counter_unit(path: &str, c: &Counter) -> Unit {
    let key = c.key.split('#').next().unwrap_or("");
    let key = (!key.is_empty()).then_some(key);
    match unit_of(path, key) {
        Unit::Kib if !c.kb => Unit::Count,
        u => u,
    }
}

/// Files whose numbers are process or thread ids, not counters: the two sides' ids have
/// nothing to do with each other.
fn lists_ids(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    matches!(file, "cgroup.procs" | "cgroup.threads" | "tasks")
}

/// The rows of one `cat` of `files` (absolute paths) at `line`: the model's output, and the
/// kernel's (None: the kernel could not read it). Values the model printed are paired with
/// the kernel's of the same key; several single values (one per file) are paired in order.
/// Also returns how many keys only the kernel printed. A `cat` of a list of process ids
/// (cgroup.procs, cgroup.threads, v1's tasks) has no rows.
pub fn cat_rows(
    line: usize,
    files: &[String],
    model: &[String],
    kernel: Option<&[String]>,
) -> (Vec<ValueRow>, usize) {
    if files.iter().any(|f| lists_ids(f)) {
        return (Vec::new(), 0);
    }
    let mc = counters(model);
    let kc = kernel.map(counters);
    let unkeyed = |c: &Counter| c.key.is_empty() || c.key.starts_with('#');
    let per_file = files.len() > 1 && mc.len() == files.len() && mc.iter().all(unkeyed);
    let joined = files.join(" ");
    let mut rows = Vec::new();
    for (i, c) in mc.iter().enumerate() {
        let file = if per_file { &files[i] } else { &joined };
        let kernel = match &kc {
            None => Err(Missing::Unreadable),
            Some(kc) => kc
                .iter()
                .find(|k| k.key == c.key)
                .map(|k| k.value)
                .ok_or(Missing::Absent),
        };
        rows.push(ValueRow {
            line,
            file: file.clone(),
            key: if per_file {
                String::new()
            } else {
                c.key.clone()
            },
            unit: counter_unit(file, c),
            model: c.value,
            kernel,
        });
    }
    let kernel_only = kc.map_or(0, |kc| {
        kc.iter()
            .filter(|k| !mc.iter().any(|m| m.key == k.key))
            .count()
    });
    (rows, kernel_only)
}

/// The kernel's value over the model's, as shown: `-` when both are 0 (they agree, there is
/// no ratio), `inf` when only the model's is 0, `0` when only the kernel's is.
pub fn ratio(model: i64, kernel: i64) -> String {
    match (model, kernel) {
        (0, 0) => "-".into(),
        (0, _) => "inf".into(),
        (_, 0) => "0".into(),
        _ => {
            let r = kernel as f64 / model as f64;
            if r.abs() >= 1e6 || r.abs() < 1e-3 {
                format!("{r:.2e}")
            } else {
                format!("{r:.3}")
            }
        }
    }
}

/// A value exactly, `max` for no limit.
fn exact(v: i64) -> String {
    if v == i64::MAX {
        "max".into()
    } else {
        v.to_string()
    }
}

/// A value in human units beside the exact one: sizes in binary units (`28.2M`), kB of
/// /proc/meminfo likewise, pressure times as durations (`1.250s`); empty for counts and
/// for sizes below 1K, which the exact value says as well.
pub fn human(v: i64, unit: Unit) -> String {
    if v == i64::MAX {
        // The exact column says `max`.
        return String::new();
    }
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    let s = match unit {
        Unit::Count => return String::new(),
        Unit::Bytes if a < 1024 => return String::new(),
        Unit::Bytes => fmt_size(a),
        Unit::Kib => fmt_size(a.saturating_mul(1024)),
        Unit::Micros if a == 0 => return String::new(),
        Unit::Micros => fmt_ns(a.saturating_mul(1000)),
    };
    format!("{sign}{s}")
}

/// Lay out rows of cells: each column as wide as its widest cell, numbers right-aligned,
/// columns that are empty throughout left out, two spaces between columns, no trailing
/// spaces.
fn layout(rows: &[Vec<String>], right: &[bool]) -> String {
    let cols = right.len();
    let width: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for c in 0..cols {
            if width[c] == 0 {
                continue;
            }
            if !line.is_empty() {
                line.push_str("  ");
            }
            let pad = width[c] - r[c].chars().count();
            if right[c] {
                line.push_str(&" ".repeat(pad));
                line.push_str(&r[c]);
            } else {
                line.push_str(&r[c]);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

impl ValueTable {
    /// How many rows are flagged: beyond the tolerance, or missing on the kernel.
    pub fn flagged(&self, opts: &CompareOpts) -> usize {
        self.rows.iter().filter(|r| !r.agrees(opts)).count()
    }

    /// The table as printed: a title naming the tolerance, a header, one line per value
    /// (script line, file, key, model, kernel, kernel/model, flag) and a summary.
    pub fn render(&self, opts: &CompareOpts) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "-- values: ratio = kernel/model; 'beyond' = differs by more than {}% (sizes: and by more than {})",
            opts.tolerance_pct,
            fmt_size(opts.slack)
        );
        if self.rows.is_empty() {
            let _ = writeln!(out, "(no value read on both sides)");
            return out;
        }
        let mut cells = vec![vec![
            "line".to_string(),
            "file".into(),
            "key".into(),
            "model".into(),
            String::new(),
            "kernel".into(),
            String::new(),
            "kernel/model".into(),
            String::new(),
        ]];
        let mut beyond = 0;
        let mut missing = 0;
        for r in &self.rows {
            let (kexact, khuman, rat, flag) = match r.kernel {
                Ok(k) => {
                    let ok = r.agrees(opts);
                    if !ok {
                        beyond += 1;
                    }
                    (
                        exact(k),
                        human(k, r.unit),
                        ratio(r.model, k),
                        if ok { "" } else { "beyond" },
                    )
                }
                Err(m) => {
                    missing += 1;
                    (
                        m.word().to_string(),
                        String::new(),
                        String::new(),
                        "missing",
                    )
                }
            };
            cells.push(vec![
                r.line.to_string(),
                r.file.clone(),
                if r.key.is_empty() {
                    "-".into()
                } else {
                    r.key.clone()
                },
                exact(r.model),
                human(r.model, r.unit),
                kexact,
                khuman,
                rat,
                flag.to_string(),
            ]);
        }
        out.push_str(&layout(
            &cells,
            &[true, false, false, true, false, true, false, true, false],
        ));
        let _ = write!(
            out,
            "{} values: {} agree, {} beyond, {} missing on the kernel",
            self.rows.len(),
            self.rows.len() - beyond - missing,
            beyond,
            missing
        );
        match self.kernel_only_keys {
            0 => {}
            1 => out.push_str("; 1 key only the kernel shows is not listed"),
            n => {
                let _ = write!(out, "; {n} keys only the kernel shows are not listed");
            }
        }
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(String::from).collect()
    }

    fn opts(tolerance_pct: f64, slack: u64) -> CompareOpts {
        CompareOpts {
            tolerance_pct,
            slack,
            strict: false,
        }
    }

    #[test]
    fn counters_read_every_kind_of_file() {
        let c = counters(&lines(
            "anon 29569024\nfile 0\npgfault 7702\nMemFree:  123456 kB\nHugePages_Total:   0\n\
             some avg10=0.00 avg60=1.25 avg300=0.00 total=1234567\n\
             full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n\
             anon 4096 N0=4096\n  pages free     3968\nNode 0, zone      DMA\n\
             max\n-5\n12.5\n",
        ));
        let got: Vec<(&str, i64, bool)> =
            c.iter().map(|c| (c.key.as_str(), c.value, c.kb)).collect();
        assert_eq!(
            got,
            vec![
                ("anon", 29569024, false),
                ("file", 0, false),
                ("pgfault", 7702, false),
                ("MemFree", 123456, true),
                ("HugePages_Total", 0, false),
                ("some.total", 1234567, false),
                ("full.total", 0, false),
                ("anon#2", 4096, false),
                ("anon.N0", 4096, false),
                ("pages free", 3968, false),
                ("", i64::MAX, false),
                ("#2", -5, false),
            ]
        );
        assert!(counters(&lines("some text here\n\n")).is_empty());
    }

    #[test]
    fn ratios_handle_zeros() {
        assert_eq!(ratio(0, 0), "-");
        assert_eq!(ratio(0, 7), "inf");
        assert_eq!(ratio(7, 0), "0");
        assert_eq!(ratio(200, 100), "0.500");
        assert_eq!(ratio(100, 125), "1.250");
        assert_eq!(ratio(1, 10_000_000), "1.00e7");
        assert_eq!(ratio(i64::MAX, i64::MAX), "1.000");
    }

    #[test]
    fn human_units_for_sizes_kb_and_times_not_counts() {
        assert_eq!(human(29569024, Unit::Bytes), "28.2M");
        assert_eq!(human(512, Unit::Bytes), "");
        assert_eq!(human(-2 << 20, Unit::Bytes), "-2.0M");
        assert_eq!(human(i64::MAX, Unit::Bytes), "");
        assert_eq!(exact(i64::MAX), "max");
        assert_eq!(human(2048, Unit::Kib), "2.0M");
        assert_eq!(human(7702, Unit::Count), "");
        assert_eq!(human(1_250_000, Unit::Micros), "1.250s");
        assert_eq!(human(0, Unit::Micros), "");
    }

    #[test]
    fn per_zone_lines_are_keyed_by_zone_type_and_index() {
        let lines: Vec<String> = [
            "Node 0, zone      DMA      0      1 ",
            "Node    0, zone    DMA32, type      Movable      7 >100000 ",
            "Node 0, zone      DMA",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let keys: Vec<(String, i64)> = counters(&lines)
            .into_iter()
            .map(|c| (c.key, c.value))
            .collect();
        assert_eq!(
            keys,
            [
                ("DMA.0".to_string(), 0),
                ("DMA.1".to_string(), 1),
                ("DMA32.Movable.0".to_string(), 7),
                ("DMA32.Movable.1".to_string(), 100_000),
            ]
        );
    }

    #[test]
    fn keyed_files_pair_by_key_and_count_the_kernels_extra_keys() {
        let (rows, extra) = cat_rows(
            9,
            &["/A/memory.events".to_string()],
            &lines("low 0\nhigh 10\nmax 3\noom 0"),
            Some(&lines("low 0\nhigh 12\nmax 0\noom_kill 0")),
        );
        assert_eq!(extra, 1);
        let kv: Vec<(&str, i64, Result<i64, Missing>, Unit)> = rows
            .iter()
            .map(|r| (r.key.as_str(), r.model, r.kernel, r.unit))
            .collect();
        assert_eq!(
            kv,
            vec![
                ("low", 0, Ok(0), Unit::Count),
                ("high", 10, Ok(12), Unit::Count),
                ("max", 3, Ok(0), Unit::Count),
                ("oom", 0, Err(Missing::Absent), Unit::Count),
            ]
        );
        // An unreadable file on the kernel: every row is missing there.
        let (rows, extra) = cat_rows(
            3,
            &["/proc/meminfo".to_string()],
            &lines("MemFree: 100 kB\nHugePages_Total: 0"),
            None,
        );
        assert_eq!(extra, 0);
        assert_eq!(rows[0].unit, Unit::Kib);
        assert_eq!(rows[1].unit, Unit::Count);
        assert!(rows.iter().all(|r| r.kernel == Err(Missing::Unreadable)));
        // memory.pressure's totals are times: no slack.
        let (rows, _) = cat_rows(
            4,
            &["/A/memory.pressure".to_string()],
            &lines("some avg10=0.00 avg60=0.00 avg300=0.00 total=100\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0"),
            Some(&lines("some avg10=1.00 avg60=0.00 avg300=0.00 total=300000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0")),
        );
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].key.as_str(), rows[0].unit),
            ("some.total", Unit::Micros)
        );
        assert!(!rows[0].agrees(&opts(25.0, 1 << 20)));
        assert!(rows[1].agrees(&opts(25.0, 1 << 20)));
    }

    #[test]
    fn several_single_values_pair_one_per_file() {
        let files = [
            "/A/memory.current".to_string(),
            "/B/memory.current".to_string(),
        ];
        let (rows, _) = cat_rows(5, &files, &lines("4096\n8192"), Some(&lines("4096\n12288")));
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[1].file.as_str(), rows[1].key.as_str()),
            ("/B/memory.current", "")
        );
        assert_eq!((rows[1].model, rows[1].kernel), (8192, Ok(12288)));
        // Process ids are not counters.
        let (rows, _) = cat_rows(
            6,
            &["/A/cgroup.procs".to_string()],
            &lines("2"),
            Some(&lines("117")),
        );
        assert!(rows.is_empty());
    }

    #[test]
    fn the_table_flags_values_beyond_the_tolerance_and_aligns_its_columns() {
        let row = |line, file: &str, key: &str, unit, model, kernel| ValueRow {
            line,
            file: file.into(),
            key: key.into(),
            unit,
            model,
            kernel,
        };
        let t = ValueTable {
            rows: vec![
                row(
                    8,
                    "/A/memory.current",
                    "",
                    Unit::Bytes,
                    31457280,
                    Ok(30932992),
                ),
                // A size within the slack though 3x: not flagged.
                row(9, "/A/memory.stat", "slab", Unit::Bytes, 2048, Ok(6144)),
                // A size 12M apart, but within 25%.
                row(
                    9,
                    "/A/memory.stat",
                    "file",
                    Unit::Bytes,
                    268369920,
                    Ok(255852544),
                ),
                // A count: no slack, 20 against 37 is beyond 25%.
                row(10, "/A/memory.failcnt", "", Unit::Count, 20, Ok(37)),
                row(11, "/A/memory.events", "oom", Unit::Count, 0, Ok(0)),
                row(11, "/A/memory.events", "max", Unit::Count, 0, Ok(4)),
                row(
                    11,
                    "/A/memory.events",
                    "oom_kill",
                    Unit::Count,
                    1,
                    Err(Missing::Absent),
                ),
                row(12, "$rss", "", Unit::Bytes, 1 << 20, Ok(1 << 20)),
                row(
                    13,
                    "/A/memory.high",
                    "",
                    Unit::Bytes,
                    i64::MAX,
                    Ok(i64::MAX),
                ),
            ],
            kernel_only_keys: 2,
        };
        let o = opts(25.0, 1 << 20);
        assert_eq!(t.flagged(&o), 3);
        let text = t.render(&o);
        let want = "\
-- values: ratio = kernel/model; 'beyond' = differs by more than 25% (sizes: and by more than 1.0M)
line  file               key           model             kernel          kernel/model
   8  /A/memory.current  -          31457280  30.0M    30932992  29.5M          0.983
   9  /A/memory.stat     slab           2048  2.0K         6144  6.0K           3.000
   9  /A/memory.stat     file      268369920  255.9M  255852544  244.0M         0.953
  10  /A/memory.failcnt  -                20                 37                 1.850  beyond
  11  /A/memory.events   oom               0                  0                     -
  11  /A/memory.events   max               0                  4                   inf  beyond
  11  /A/memory.events   oom_kill          1           (absent)                        missing
  12  $rss               -           1048576  1.0M      1048576  1.0M           1.000
  13  /A/memory.high     -               max                max                 1.000
9 values: 6 agree, 2 beyond, 1 missing on the kernel; 2 keys only the kernel shows are not listed
";
        assert_eq!(text, want, "\n{text}");
        // A tighter tolerance flags the file size too (4.7% apart, 12M).
        assert_eq!(t.flagged(&opts(4.0, 1 << 20)), 4);
        // Nothing read on both sides.
        let empty = ValueTable::default().render(&o);
        assert!(
            empty.ends_with("(no value read on both sides)\n"),
            "{empty}"
        );
    }
}
