//! Size and duration parsing for scripts and configuration (not the kernel's memparse, which
//! lives with the cgroupfs parse rules in `memparse`).

/// Parse a size: a decimal number with an optional K/M/G/T suffix (binary multiples),
/// e.g. "50M", "4096", "1G". Fractions are accepted with a suffix ("1.5G").
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                'P' => 1 << 50,
                _ => return Err(format!("bad size '{s}': unknown suffix '{c}'")),
            };
            (&s[..s.len() - 1], m)
        }
        _ => (s, 1),
    };
    if num.is_empty() {
        return Err(format!("bad size '{s}'"));
    }
    if let Ok(v) = num.parse::<u64>() {
        return v
            .checked_mul(mult)
            .ok_or_else(|| format!("size '{s}' is too large"));
    }
    match num.parse::<f64>() {
        Ok(f) if f >= 0.0 && f.is_finite() && mult > 1 => {
            let v = f * mult as f64;
            if v > u64::MAX as f64 / 2.0 {
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
                return Err(format!("duration '{s}' is too long"));
            }
            Ok(v.round() as u64)
        }
        _ => Err(format!("bad duration '{s}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes() {
        assert_eq!(parse_size("50M").unwrap(), 50 << 20);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert!(parse_size("x").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("1.5").is_err());
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
