//! Write-side parse rules of the kernel: page_counter_memparse() over memparse()
//! (lib/cmdline.c, simple_strtoull with base 0 and one K/M/G/T/P/E suffix), and
//! kstrtoull()/kstrtoint() as the cftype write handlers use them.

use memcgsim_model::{Errno, PAGE_COUNTER_MAX, PAGE_SIZE};

pub use memcgsim_model::units::memparse;
use memcgsim_model::units::strtoull as simple_strtoull;

/// page_counter_memparse(): the exact `max_token` means unlimited; otherwise bytes rounded
/// down to pages, capped at PAGE_COUNTER_MAX. Anything left over is EINVAL.
pub fn page_counter_memparse(buf: &str, max_token: &str) -> Result<u64, Errno> {
    let buf = buf.trim();
    if buf == max_token {
        return Ok(PAGE_COUNTER_MAX);
    }
    let (bytes, rest) = memparse(buf);
    if !rest.is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok((bytes / PAGE_SIZE).min(PAGE_COUNTER_MAX))
}

/// res_counter_memparse_write_strategy() of 2.6.36 (seed 001's byte files): "-1" is
/// unlimited (the largest u64), anything else a memparse() size rounded up to whole pages.
pub fn res_counter_memparse(buf: &str) -> Result<u64, Errno> {
    let buf = buf.trim();
    if let Some(rest) = buf.strip_prefix('-') {
        let (v, left, _) = simple_strtoull(rest);
        return if v == 1 && left.is_empty() {
            Ok(u64::MAX)
        } else {
            Err(Errno::EINVAL)
        };
    }
    let (bytes, rest) = memparse(buf);
    if !rest.is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok(bytes.div_ceil(PAGE_SIZE).saturating_mul(PAGE_SIZE))
}

/// kstrtoull(s, 0): the whole (stripped) string must be a number.
pub fn kstrtoull(buf: &str) -> Result<u64, Errno> {
    let s = buf.trim();
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.is_empty() {
        return Err(Errno::EINVAL);
    }
    let (v, rest, overflowed) = simple_strtoull(s);
    if !rest.is_empty() || (s.len() > 1 && s == "0x") {
        return Err(Errno::EINVAL);
    }
    if overflowed {
        return Err(Errno::ERANGE);
    }
    Ok(v)
}

/// kstrtoint(s, 0): ERANGE when the number does not fit an int.
pub fn kstrtoint(buf: &str) -> Result<i64, Errno> {
    let s = buf.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let v = kstrtoull(digits)?;
    if v > i32::MAX as u64 + neg as u64 {
        return Err(Errno::ERANGE);
    }
    Ok(if neg { -(v as i64) } else { v as i64 })
}

/// proc_get_long() as the sysctl write handlers use it: leading blanks, an optional `-`,
/// digits in base 0, then only blanks; every failure is EINVAL. Ok(None) when the write
/// holds nothing but blanks (the handler then changes nothing and succeeds).
fn proc_get_long(buf: &str) -> Result<Option<(bool, u64)>, Errno> {
    let s = buf.trim_start_matches([' ', '\t', '\n']);
    if s.is_empty() {
        return Ok(None);
    }
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(Errno::EINVAL);
    }
    let (v, rest, overflowed) = simple_strtoull(digits);
    if overflowed || !rest.trim_matches([' ', '\t', '\n']).is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok(Some((neg, v)))
}

/// proc_dointvec_minmax(): an int within [min, max], else EINVAL.
pub fn proc_dointvec_minmax(buf: &str, min: i64, max: i64) -> Result<Option<i64>, Errno> {
    let Some((neg, v)) = proc_get_long(buf)? else {
        return Ok(None);
    };
    let limit = if neg { 1u64 << 31 } else { i32::MAX as u64 };
    if v > limit {
        return Err(Errno::EINVAL);
    }
    let v = if neg { -(v as i64) } else { v as i64 };
    if v < min || v > max {
        return Err(Errno::EINVAL);
    }
    Ok(Some(v))
}

/// proc_doulongvec_minmax() with a minimum: no sign, at least `min`, else EINVAL.
pub fn proc_doulongvec_min(buf: &str, min: u64) -> Result<Option<u64>, Errno> {
    match proc_get_long(buf)? {
        None => Ok(None),
        Some((true, _)) => Err(Errno::EINVAL),
        Some((false, v)) if v < min => Err(Errno::EINVAL),
        Some((false, v)) => Ok(Some(v)),
    }
}

/// A page count as a v2 tunable prints it: "max" or bytes.
pub fn fmt_max(pages: u64) -> String {
    if pages == PAGE_COUNTER_MAX {
        "max\n".to_string()
    } else {
        format!("{}\n", pages * PAGE_SIZE)
    }
}

/// A page count in bytes.
pub fn fmt_bytes(pages: u64) -> String {
    format!("{}\n", pages * PAGE_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memparse_rules() {
        assert_eq!(page_counter_memparse("30M", "max"), Ok(30 * 256));
        assert_eq!(page_counter_memparse("30m\n", "max"), Ok(30 * 256));
        assert_eq!(page_counter_memparse("max", "max"), Ok(PAGE_COUNTER_MAX));
        assert_eq!(page_counter_memparse("-1", "max"), Err(Errno::EINVAL));
        assert_eq!(page_counter_memparse("-1", "-1"), Ok(PAGE_COUNTER_MAX));
        assert_eq!(page_counter_memparse("max", "-1"), Err(Errno::EINVAL));
        assert_eq!(page_counter_memparse("4097", "max"), Ok(1));
        assert_eq!(page_counter_memparse("1", "max"), Ok(0));
        assert_eq!(page_counter_memparse("1.0", "-1"), Err(Errno::EINVAL));
        assert_eq!(page_counter_memparse("1xx", "-1"), Err(Errno::EINVAL));
        assert_eq!(page_counter_memparse("xx", "-1"), Err(Errno::EINVAL));
        assert_eq!(page_counter_memparse("1KB", "-1"), Err(Errno::EINVAL));
        assert_eq!(page_counter_memparse("0x1000", "max"), Ok(1));
        assert_eq!(page_counter_memparse("010000", "max"), Ok(1)); // octal 4096
        assert_eq!(page_counter_memparse("", "max"), Ok(0));
        assert_eq!(page_counter_memparse("1G", "max"), Ok(262144));
        assert_eq!(
            page_counter_memparse("9223372036854771712", "-1"),
            Ok(PAGE_COUNTER_MAX)
        );
    }

    #[test]
    fn res_counter_memparse_rules() {
        assert_eq!(res_counter_memparse("400M"), Ok(400 << 20));
        assert_eq!(res_counter_memparse("1"), Ok(4096));
        assert_eq!(res_counter_memparse("-1"), Ok(u64::MAX));
        assert_eq!(res_counter_memparse("-2"), Err(Errno::EINVAL));
        assert_eq!(res_counter_memparse("1x"), Err(Errno::EINVAL));
        assert_eq!(res_counter_memparse("0"), Ok(0));
    }

    #[test]
    fn kstrto() {
        assert_eq!(kstrtoull("1\n"), Ok(1));
        assert_eq!(kstrtoull("x"), Err(Errno::EINVAL));
        assert_eq!(kstrtoull(""), Err(Errno::EINVAL));
        assert_eq!(kstrtoint("-1000"), Ok(-1000));
        assert_eq!(kstrtoint("2"), Ok(2));
        assert_eq!(kstrtoint("1.5"), Err(Errno::EINVAL));
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_max(PAGE_COUNTER_MAX), "max\n");
        assert_eq!(fmt_max(7680), "31457280\n");
        assert_eq!(fmt_bytes(PAGE_COUNTER_MAX), "9223372036854771712\n");
    }
}
