//! Size and duration parsing. There is one size syntax: the kernel's memparse()
//! (lib/cmdline.c: simple_strtoull() with base 0, then one K/M/G/T/P/E suffix), used as it is
//! by the control files' write paths (page_counter_memparse in the cgroupfs crate), and, for
//! scripts, workloads and scenarios, checked for overflow and extended with fractions before
//! a suffix ("1.5G").

/// simple_strtoull(s, &end, 0): the value, the unparsed rest, and whether the value wrapped
/// (the kernel's wraps silently).
fn simple_strtoull(s: &str) -> (u64, &str, bool) {
    let b = s.as_bytes();
    let (base, mut i) = if b.len() > 2
        && b[0] == b'0'
        && (b[1] == b'x' || b[1] == b'X')
        && (b[2] as char).is_ascii_hexdigit()
    {
        (16, 2)
    } else if !b.is_empty() && b[0] == b'0' {
        // The leading 0 is itself an octal digit: "0" parses as 0 with nothing left.
        (8, 1)
    } else {
        (10, 0)
    };
    let mut v: u64 = 0;
    let mut wrapped = false;
    while i < b.len() {
        let d = match (b[i] as char).to_digit(16) {
            Some(d) if d < base => d as u64,
            _ => break,
        };
        let next = v.checked_mul(base as u64).and_then(|x| x.checked_add(d));
        wrapped |= next.is_none();
        v = v.wrapping_mul(base as u64).wrapping_add(d);
        i += 1;
    }
    (v, &s[i..], wrapped)
}

/// The shift of a memparse suffix letter.
fn suffix_shift(c: char) -> Option<u32> {
    Some(match c.to_ascii_uppercase() {
        'K' => 10,
        'M' => 20,
        'G' => 30,
        'T' => 40,
        'P' => 50,
        'E' => 60,
        _ => return None,
    })
}

/// The kernel's memparse(): a number with an optional binary suffix; returns the bytes
/// (wrapping on overflow, as the kernel does) and the unparsed rest.
pub fn memparse(s: &str) -> (u64, &str) {
    let (v, rest, _) = memparse_checked(s);
    (v, rest)
}

/// memparse() that also says whether the value overflowed.
fn memparse_checked(s: &str) -> (u64, &str, bool) {
    let (v, rest, mut wrapped) = simple_strtoull(s);
    let mut chars = rest.chars();
    let Some(shift) = chars.next().and_then(suffix_shift) else {
        return (v, rest, wrapped);
    };
    wrapped |= v.leading_zeros() < shift;
    (v.wrapping_shl(shift), chars.as_str(), wrapped)
}

/// The kernel's simple_strtoull() with base 0, for the kstrto* parse rules: the value, the
/// unparsed rest, and whether it overflowed (kstrtoull's ERANGE).
pub fn strtoull(s: &str) -> (u64, &str, bool) {
    simple_strtoull(s)
}

/// Parse a size for scripts, workloads and configuration: memparse()'s syntax ("50M",
/// "4096", "0x1000", "1E"; K/M/G/T/P/E are binary multiples, either case), the whole word,
/// without overflow; or a decimal fraction with a suffix ("1.5G").
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if !s.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err(format!("bad size '{s}'"));
    }
    let (v, rest, wrapped) = memparse_checked(s);
    if rest.is_empty() {
        return if wrapped {
            Err(format!("size '{s}' is too large"))
        } else {
            Ok(v)
        };
    }
    // A fraction with a suffix.
    let mut chars = s.chars();
    let last = chars.next_back();
    let (num, shift) = match last.and_then(suffix_shift) {
        Some(shift) => (chars.as_str(), shift),
        None => {
            return Err(match last {
                Some(c) if c.is_ascii_alphabetic() => {
                    format!("bad size '{s}': unknown suffix '{c}', not one of K, M, G, T, P, E")
                }
                _ => format!("bad size '{s}'"),
            })
        }
    };
    match num.parse::<f64>() {
        Ok(f)
            if f >= 0.0
                && f.is_finite()
                && num.bytes().all(|b| b.is_ascii_digit() || b == b'.') =>
        {
            let v = f * (1u64 << shift) as f64;
            if v >= u64::MAX as f64 {
                return Err(format!("size '{s}' is too large"));
            }
            Ok(v as u64)
        }
        _ => Err(format!("bad size '{s}'")),
    }
}

/// Parse a duration: a number of seconds ("2", "0.5") or a number with a unit
/// ("500ms", "2s", "100us", "10ns", "1m" for minutes). Returns nanoseconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mult: f64 = match unit {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(format!("bad duration '{s}': unknown unit '{unit}'")),
    };
    match num.parse::<f64>() {
        Ok(f) if f >= 0.0 && f.is_finite() => {
            let v = f * mult;
            if v > 1e18 {
                return Err(format!(
                    "duration '{s}' is too long: at most 1000000000s (about 31 years)"
                ));
            }
            Ok(v.round() as u64)
        }
        _ => Err(format!("bad duration '{s}'")),
    }
}

/// A size in bytes, short, in binary units with one decimal: `3.0G`, `1015.6M`, `4.0K`,
/// `512B`, for messages.
pub fn fmt_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 6] = [
        (60, "E"),
        (50, "P"),
        (40, "T"),
        (30, "G"),
        (20, "M"),
        (10, "K"),
    ];
    for (shift, suffix) in UNITS {
        if bytes >= 1 << shift {
            return format!("{:.1}{suffix}", bytes as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{bytes}B")
}

/// A duration in nanoseconds, short: `1.234s`, `12.500ms`, `3.0us`, `7ns`, `0`.
pub fn fmt_ns(ns: u64) -> String {
    let f = ns as f64;
    if ns == 0 {
        "0".into()
    } else if ns >= 1_000_000_000 {
        format!("{:.3}s", f / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3}ms", f / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1}us", f / 1e3)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn short_sizes() {
        assert_eq!(fmt_size(0), "0B");
        assert_eq!(fmt_size(512), "512B");
        assert_eq!(fmt_size(4096), "4.0K");
        assert_eq!(fmt_size(3 << 30), "3.0G");
        assert_eq!(fmt_size((1 << 30) - (8 << 20)), "1016.0M");
        assert_eq!(fmt_size(u64::MAX), "16.0E");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("50M").unwrap(), 50 << 20);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert!(parse_size("x").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("1.5").is_err());
        // The kernel's suffixes and bases, as `echo ... > memory.max` takes them.
        assert_eq!(parse_size("1E").unwrap(), 1 << 60);
        assert_eq!(parse_size("15e").unwrap(), 15 << 60);
        assert!(parse_size("16E").unwrap_err().contains("too large"));
        assert_eq!(parse_size("0x1000").unwrap(), 4096);
        assert_eq!(parse_size("1p").unwrap(), 1 << 50);
        assert!(parse_size("18446744073709551616").is_err());
        assert!(parse_size("2X").unwrap_err().contains("unknown suffix 'X'"));
        assert!(parse_size("-1").is_err());
        assert!(parse_size("1.5.1G").is_err());
        assert!(parse_size("").is_err());
        assert_eq!(memparse("1E"), (1 << 60, ""));
        assert_eq!(memparse("16E").0, 0, "memparse wraps as the kernel's does");
        assert_eq!(memparse("12abc"), (12, "abc"));
    }
    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("2").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration_ns("500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration_ns("0.1s").unwrap(), 100_000_000);
        assert_eq!(parse_duration_ns("3us").unwrap(), 3_000);
        assert!(parse_duration_ns("2x").is_err());
        assert!(parse_duration_ns("-1").is_err());
    }
}
