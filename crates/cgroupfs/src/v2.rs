//! cgroup v2 memory files: memory_files[] and swap_files[] of mm/memcontrol.c (6.1), with
//! memory.peak / memory.swap.peak writable per fd as in newer kernels, and zswap's
//! memory.zswap.current and memory.zswap.max; the pressure files are core files (lib.rs).

use memcgsim_model::{Errno, MemcgEvent, ROOT_MEMCG};

use crate::parse::{fmt_bytes, fmt_max, kstrtoint, kstrtoull, page_counter_memparse};
use crate::{PeakKind, System};

const NOT_ON_ROOT: &[&str] = &[
    "memory.current",
    "memory.min",
    "memory.low",
    "memory.high",
    "memory.max",
    "memory.events",
    "memory.events.local",
    "memory.oom.group",
    "memory.peak",
    "memory.swap.current",
    "memory.swap.high",
    "memory.swap.max",
    "memory.swap.peak",
    "memory.swap.events",
    "memory.zswap.current",
    "memory.zswap.max",
];
const ON_ROOT: &[&str] = &["memory.stat", "memory.numa_stat", "memory.reclaim"];

pub(crate) fn files(sys: &System, i: usize) -> Vec<String> {
    let mut v = sys.core_file_names(i);
    if sys.cg(i).memcg.is_some() {
        v.extend(ON_ROOT.iter().map(|s| s.to_string()));
        if i != 0 {
            v.extend(NOT_ON_ROOT.iter().map(|s| s.to_string()));
        }
    }
    v
}

pub(crate) fn peak_kind(f: &str) -> Option<PeakKind> {
    match f {
        "memory.peak" => Some(PeakKind::Memory),
        "memory.swap.peak" => Some(PeakKind::Swap),
        _ => None,
    }
}

fn events(ev: &[u64], swap: bool) -> String {
    if swap {
        return format!(
            "high {}\nmax {}\nfail {}\n",
            ev[MemcgEvent::SwapHigh as usize],
            ev[MemcgEvent::SwapMax as usize],
            ev[MemcgEvent::SwapFail as usize]
        );
    }
    format!(
        "low {}\nhigh {}\nmax {}\noom {}\noom_kill {}\noom_group_kill {}\n",
        ev[MemcgEvent::Low as usize],
        ev[MemcgEvent::High as usize],
        ev[MemcgEvent::Max as usize],
        ev[MemcgEvent::Oom as usize],
        ev[MemcgEvent::OomKill as usize],
        ev[MemcgEvent::OomGroupKill as usize]
    )
}

/// `peak`: Some(fd view) when read through an fd.
pub(crate) fn read(
    sys: &mut System,
    i: usize,
    f: &str,
    peak: Option<Option<u64>>,
) -> Result<String, Errno> {
    let memcg = sys.cg(i).memcg.ok_or(Errno::ENOENT)?;
    // memory_stat_format() and memory_numa_stat_show() flush (6.1's ratelimited flush).
    if matches!(f, "memory.stat" | "memory.numa_stat") {
        sys.machine.stats_read_flush(memcg);
    }
    let m = &sys.machine;
    let id = memcg as usize;
    let mem = m.memory.get(id);
    let swp = m.swap_counter.get(id);
    let s = match f {
        "memory.current" => fmt_bytes(mem.usage),
        "memory.min" => fmt_max(mem.min),
        "memory.low" => fmt_max(mem.low),
        "memory.high" => fmt_max(mem.high),
        "memory.max" => fmt_max(mem.max),
        "memory.peak" | "memory.swap.peak" => {
            let c = if f == "memory.peak" { mem } else { swp };
            let v = match peak {
                Some(Some(fdv)) => fdv.max(c.local_watermark),
                _ => c.watermark,
            };
            fmt_bytes(v)
        }
        "memory.events" => {
            let mc = m.memcg(memcg);
            if m.cfg.local_events {
                events(&mc.events_local, false)
            } else {
                events(&mc.events, false)
            }
        }
        "memory.events.local" => events(&m.memcg(memcg).events_local, false),
        "memory.swap.events" => events(&m.memcg(memcg).events, true),
        "memory.oom.group" => format!("{}\n", m.memcg(memcg).oom_group as u8),
        "memory.swap.current" => fmt_bytes(swp.usage),
        "memory.swap.high" => fmt_max(swp.high),
        "memory.swap.max" => fmt_max(swp.max),
        "memory.zswap.current" => {
            format!("{}\n", m.stat_total(memcg, memcgsim_model::Stat::ZswapB))
        }
        "memory.zswap.max" => fmt_max(m.memcg(memcg).zswap_max),
        "memory.stat" => crate::stat::memory_stat_v2(m, memcg),
        "memory.numa_stat" => crate::stat::memory_numa_stat_v2(m, memcg),
        "memory.reclaim" => return Err(Errno::EACCES),
        _ => return Err(Errno::ENOENT),
    };
    Ok(s)
}

pub(crate) fn write(sys: &mut System, i: usize, f: &str, data: &str) -> Result<(), Errno> {
    let memcg = sys.cg(i).memcg.ok_or(Errno::ENOENT)?;
    let id = memcg as usize;
    let m = &mut sys.machine;
    match f {
        "memory.min" => {
            let v = page_counter_memparse(data, "max")?;
            m.memory.set_min(id, v);
        }
        "memory.low" => {
            let v = page_counter_memparse(data, "max")?;
            m.memory.set_low(id, v);
        }
        "memory.high" => {
            let v = page_counter_memparse(data, "max")?;
            m.write_memory_high(memcg, v);
        }
        "memory.max" => {
            let v = page_counter_memparse(data, "max")?;
            m.write_memory_max(memcg, v);
        }
        "memory.swap.high" => {
            let v = page_counter_memparse(data, "max")?;
            m.swap_counter.get_mut(id).high = v;
        }
        "memory.swap.max" => {
            let v = page_counter_memparse(data, "max")?;
            m.swap_counter.get_mut(id).max = v;
        }
        "memory.zswap.max" => {
            let v = page_counter_memparse(data, "max")?;
            m.memcg_mut(memcg).zswap_max = v;
        }
        "memory.oom.group" => {
            let v = kstrtoint(data)?;
            if v != 0 && v != 1 {
                return Err(Errno::EINVAL);
            }
            m.memcg_mut(memcg).oom_group = v == 1;
        }
        "memory.reclaim" => {
            let mut words = data.split_whitespace();
            let size = words.next().unwrap_or("");
            let nr = page_counter_memparse(size, "")?;
            let mut swappiness = None;
            for w in words {
                match w.strip_prefix("swappiness=") {
                    Some(v) => {
                        let v = kstrtoull(v)?;
                        if v > 200 {
                            return Err(Errno::EINVAL);
                        }
                        swappiness = Some(v as u32);
                    }
                    None => return Err(Errno::EINVAL),
                }
            }
            if nr > 0 {
                m.write_memory_reclaim(memcg, nr, swappiness)?;
            }
        }
        "memory.current"
        | "memory.events"
        | "memory.events.local"
        | "memory.stat"
        | "memory.numa_stat"
        | "memory.swap.current"
        | "memory.swap.events"
        | "memory.zswap.current" => return Err(Errno::EACCES),
        _ => return Err(Errno::ENOENT),
    }
    let _ = ROOT_MEMCG;
    Ok(())
}
