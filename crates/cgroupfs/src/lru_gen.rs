//! The multi-generational LRU's files (mm/vmscan.c of Linux 6.1): /sys/kernel/mm/lru_gen/
//! enabled and min_ttl_ms (show_enabled()/store_enabled(), show_min_ttl()/store_min_ttl()),
//! and debugfs's /sys/kernel/debug/lru_gen (read and write) and lru_gen_full (read only):
//! lru_gen_seq_show() and lru_gen_seq_write() with its `+` (aging) and `-` (eviction)
//! commands and their errnos. The model is lru_gen.rs.

use memcgsim_model::{Errno, MemcgId};

use crate::System;

pub(crate) const ENABLED: &str = "kernel/mm/lru_gen/enabled";
pub(crate) const MIN_TTL: &str = "kernel/mm/lru_gen/min_ttl_ms";
pub(crate) const DEBUG: &str = "kernel/debug/lru_gen";
pub(crate) const DEBUG_FULL: &str = "kernel/debug/lru_gen_full";

/// kstrtouint(buf, 0): a base from the prefix (0x hex, 0 octal, else decimal), one '+'
/// first and one newline last allowed; None for anything else or past 32 bits.
fn kstrtouint0(data: &str) -> Option<u32> {
    let s = data.strip_suffix('\n').unwrap_or(data);
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.is_empty() {
        return None;
    }
    let (v, rest, wrapped) = memcgsim_model::units::strtoull(s);
    if !rest.is_empty() || wrapped {
        return None;
    }
    u32::try_from(v).ok()
}

pub(crate) fn read(sys: &System, f: &str) -> Option<Result<String, Errno>> {
    let m = &sys.machine;
    let full = match f {
        ENABLED | MIN_TTL | DEBUG | DEBUG_FULL if !m.lru_gen_available() => {
            return Some(Err(Errno::ENOENT))
        }
        ENABLED => return Some(Ok(m.lru_gen.show_enabled())),
        MIN_TTL => return Some(Ok(m.lru_gen.show_min_ttl())),
        DEBUG => false,
        DEBUG_FULL => true,
        _ => return None,
    };
    let mut out = String::new();
    for memcg in m.lru_gen_groups() {
        out.push_str(&format!("memcg {:5} {}\n", memcg, sys.memcg_path(memcg)));
        out.push_str(&m.lru_gen_show(memcg, full));
    }
    Some(Ok(out))
}

pub(crate) fn write(sys: &mut System, f: &str, data: &str) -> Option<Result<(), Errno>> {
    if matches!(f, ENABLED | MIN_TTL | DEBUG | DEBUG_FULL) && !sys.machine.lru_gen_available() {
        return Some(Err(Errno::ENOENT));
    }
    let r = match f {
        ENABLED => {
            // Only the first byte says y or n.
            let caps = match data.bytes().next().map(|b| b.to_ascii_lowercase()) {
                Some(b'n') => Some(0),
                Some(b'y') => Some(u32::MAX),
                _ => kstrtouint0(data),
            };
            caps.map(|c| sys.machine.lru_gen_store_enabled(c))
                .ok_or(Errno::EINVAL)
        }
        MIN_TTL => kstrtouint0(data)
            .map(|ms| sys.machine.lru_gen.min_ttl = memcgsim_model::lru_gen::msecs_to_jiffies(ms))
            .ok_or(Errno::EINVAL),
        DEBUG => debug_write(sys, data),
        // No write operation: write() fails (the open for writing succeeds for root).
        DEBUG_FULL => Err(Errno::EINVAL),
        _ => return None,
    };
    Some(r)
}

/// One command of lru_gen_seq_write(), as its sscanf("%c %u %u %lu %n %u %n %lu %n") reads
/// it: the command, memcg id, node, seq, and the optional swappiness and last number.
struct Cmd {
    cmd: char,
    memcg_id: u32,
    nid: u32,
    seq: u64,
    swappiness: Option<u32>,
    opt: Option<u64>,
}

/// vsscanf()'s %u / %lu: blanks, then decimal digits (wrapping, no sign); None without a
/// digit.
fn scan_number(s: &str, pos: &mut usize) -> Option<u64> {
    let b = s.as_bytes();
    let mut i = *pos;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return None;
    }
    let mut v = 0u64;
    while i < b.len() && b[i].is_ascii_digit() {
        v = v.wrapping_mul(10).wrapping_add(u64::from(b[i] - b'0'));
        i += 1;
    }
    *pos = i;
    Some(v)
}

/// Skip blanks (a space of the format).
fn skip_blanks(s: &str, pos: &mut usize) {
    let b = s.as_bytes();
    while *pos < b.len() && b[*pos].is_ascii_whitespace() {
        *pos += 1;
    }
}

fn parse_cmd(cur: &str) -> Result<Cmd, Errno> {
    let mut chars = cur.char_indices();
    let (_, cmd) = chars.next().ok_or(Errno::EINVAL)?;
    let mut pos = cmd.len_utf8();
    let mut nums = [0u64; 3];
    for n in &mut nums {
        *n = scan_number(cur, &mut pos).ok_or(Errno::EINVAL)?;
    }
    skip_blanks(cur, &mut pos);
    let mut end = pos;
    let swappiness = scan_number(cur, &mut pos).map(|v| v as u32);
    let mut opt = None;
    if swappiness.is_some() {
        skip_blanks(cur, &mut pos);
        end = pos;
        opt = scan_number(cur, &mut pos);
        if opt.is_some() {
            skip_blanks(cur, &mut pos);
            end = pos;
        }
    }
    if end != cur.len() {
        return Err(Errno::EINVAL);
    }
    Ok(Cmd {
        cmd,
        memcg_id: nums[0] as u32,
        nid: nums[1] as u32,
        seq: nums[2],
        swappiness,
        opt,
    })
}

/// lru_gen_seq_write(): commands separated by ',', ';' or newlines, run in order until one
/// fails; EINVAL when there is none.
fn debug_write(sys: &mut System, data: &str) -> Result<(), Errno> {
    let mut err = Err(Errno::EINVAL);
    for piece in data.split([',', ';', '\n']) {
        let cur = piece.trim_start();
        if cur.is_empty() {
            continue;
        }
        err = parse_cmd(cur).and_then(|c| run_cmd(sys, &c));
        if err.is_err() {
            break;
        }
    }
    err
}

/// run_cmd(): the node and group checks, then run_aging() or run_eviction().
fn run_cmd(sys: &mut System, c: &Cmd) -> Result<(), Errno> {
    // One node: node 0 has memory, any other below MAX_NUMNODES has none.
    if c.nid != 0 {
        return Err(Errno::EINVAL);
    }
    let id = c.memcg_id as u16;
    let m = &mut sys.machine;
    let exists = id != 0 && usize::from(id) < m.memcgs.len() && m.memcg_alive(id as MemcgId);
    if u32::from(id) != c.memcg_id || !exists {
        return Err(Errno::EINVAL);
    }
    let memcg = id as MemcgId;
    let swappiness = match c.swappiness {
        None => None,
        Some(s) if (s as i32) < 0 => None,
        Some(s) if s > 200 => return Err(Errno::EINVAL),
        Some(s) => Some(u64::from(s)),
    };
    let swappiness = swappiness.unwrap_or_else(|| m.lru_gen_debug_swappiness(memcg));
    let opt = c.opt.unwrap_or(u64::MAX);
    match c.cmd {
        '+' => m.lru_gen_run_aging(memcg, c.seq, swappiness != 0, opt != 0),
        '-' => m.lru_gen_run_eviction(memcg, c.seq, swappiness, opt),
        _ => Err(Errno::EINVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kstrtouint_takes_any_base_and_refuses_the_rest() {
        for (s, v) in [
            ("7", Some(7)),
            ("07\n", Some(7)),
            ("0x5", Some(5)),
            ("010", Some(8)),
            ("+3", Some(3)),
            ("0", Some(0)),
            ("0x", None),
            ("", None),
            ("\n", None),
            (" 1", None),
            ("1 ", None),
            ("-1", None),
            ("4294967296", None),
            ("4294967295", Some(u32::MAX)),
            ("09", None),
        ] {
            assert_eq!(kstrtouint0(s), v, "{s:?}");
        }
    }

    #[test]
    fn commands_parse_as_sscanf_reads_them() {
        let c = parse_cmd("+ 1 0 5").unwrap();
        assert_eq!((c.cmd, c.memcg_id, c.nid, c.seq), ('+', 1, 0, 5));
        assert!(c.swappiness.is_none() && c.opt.is_none());
        let c = parse_cmd("-1 0 3 0 100 ").unwrap();
        assert_eq!((c.cmd, c.swappiness, c.opt), ('-', Some(0), Some(100)));
        for bad in [
            "+ 1 0",
            "+ 1 0 x",
            "+ 1 0 5 x",
            "+ 1 0 5 1 2 3",
            "+ -1 0 5",
            "+",
        ] {
            assert!(parse_cmd(bad).is_err(), "{bad}");
        }
        // %u keeps 32 bits of what it read; the group check catches a truncated id.
        assert_eq!(parse_cmd("+ 4294967297 0 1").unwrap().memcg_id, 1);
    }
}
