//! cgroup v1 memory files: mem_cgroup_legacy_files[] and memsw_files[] (mm/memcontrol-v1.c,
//! formerly mm/memcontrol.c), with the v1 semantics: limits that return EBUSY when reclaim
//! cannot make room, "-1" for unlimited, watermark and failcnt resets on any write,
//! force_empty, use_hierarchy always 1, memory.stat with total_* keys.
//!
//! Under `machine dirty=seed001` or `seed001-hier`, seed 001's files as well
//! (memory.dirty_ratio, memory.dirty_limit_in_bytes, memory.dirty_background_ratio,
//! memory.dirty_background_limit_in_bytes), and memory.use_hierarchy as 2.6.36 had it:
//! 0 by default, inherited at mkdir, writable only while the group has no children and its
//! parent has it clear.

use memcgsim_model::{Errno, Stat, PAGE_COUNTER_MAX, PAGE_SIZE, ROOT_MEMCG};

use crate::parse::{fmt_bytes, kstrtoull, page_counter_memparse};
use crate::System;

const FILES: &[&str] = &[
    "memory.usage_in_bytes",
    "memory.max_usage_in_bytes",
    "memory.limit_in_bytes",
    "memory.soft_limit_in_bytes",
    "memory.failcnt",
    "memory.stat",
    "memory.force_empty",
    "memory.use_hierarchy",
    "memory.swappiness",
    "memory.move_charge_at_immigrate",
    "memory.oom_control",
    "memory.numa_stat",
    "memory.kmem.limit_in_bytes",
    "memory.kmem.usage_in_bytes",
    "memory.kmem.max_usage_in_bytes",
    "memory.kmem.failcnt",
    "memory.memsw.usage_in_bytes",
    "memory.memsw.max_usage_in_bytes",
    "memory.memsw.limit_in_bytes",
    "memory.memsw.failcnt",
];

/// Seed 001's files (dirty=seed001*).
const DIRTY_FILES: &[&str] = &[
    "memory.dirty_ratio",
    "memory.dirty_limit_in_bytes",
    "memory.dirty_background_ratio",
    "memory.dirty_background_limit_in_bytes",
];

fn seed001(m: &memcgsim_model::Machine) -> bool {
    matches!(
        m.cfg.dirty,
        memcgsim_model::DirtyPolicy::Seed001 | memcgsim_model::DirtyPolicy::Seed001Hier
    )
}

pub(crate) fn files(sys: &System, i: usize) -> Vec<String> {
    let mut v = sys.core_file_names(i);
    v.extend(FILES.iter().map(|s| s.to_string()));
    if seed001(&sys.machine) {
        v.extend(DIRTY_FILES.iter().map(|s| s.to_string()));
    }
    v
}

pub(crate) fn read(sys: &mut System, i: usize, f: &str) -> Result<String, Errno> {
    let memcg = sys.cg(i).memcg.ok_or(Errno::ENOENT)?;
    let root = memcg == ROOT_MEMCG;
    // memcg_stat_show() and memcg_numa_stat_show() flush; so does mem_cgroup_usage() for the
    // root, whose usage comes from the statistics.
    match f {
        "memory.stat" | "memory.numa_stat" => sys.machine.stats_read_flush(memcg),
        "memory.usage_in_bytes" | "memory.memsw.usage_in_bytes" if root => {
            sys.machine.mem_cgroup_flush_stats()
        }
        _ => {}
    }
    let m = &sys.machine;
    let id = memcg as usize;
    let mem = m.memory.get(id);
    let memsw = m.memsw.get(id);
    let s = match f {
        "memory.usage_in_bytes" => {
            if root {
                fmt_bytes(m.stat_view(ROOT_MEMCG, Stat::Anon) + m.stat_view(ROOT_MEMCG, Stat::File))
            } else {
                fmt_bytes(mem.usage)
            }
        }
        "memory.memsw.usage_in_bytes" => {
            if root {
                fmt_bytes(
                    m.stat_view(ROOT_MEMCG, Stat::Anon)
                        + m.stat_view(ROOT_MEMCG, Stat::File)
                        + m.stat_view(ROOT_MEMCG, Stat::Swap),
                )
            } else {
                fmt_bytes(memsw.usage)
            }
        }
        "memory.max_usage_in_bytes" => fmt_bytes(mem.watermark),
        "memory.memsw.max_usage_in_bytes" => fmt_bytes(memsw.watermark),
        "memory.limit_in_bytes" => fmt_bytes(mem.max),
        "memory.memsw.limit_in_bytes" => fmt_bytes(memsw.max),
        "memory.soft_limit_in_bytes" => fmt_bytes(m.memcg_soft_limit(memcg)),
        "memory.failcnt" => format!("{}\n", mem.failcnt),
        "memory.memsw.failcnt" => format!("{}\n", memsw.failcnt),
        "memory.kmem.limit_in_bytes" => fmt_bytes(PAGE_COUNTER_MAX),
        "memory.kmem.usage_in_bytes" => fmt_bytes(m.kmem.counter.get(memcg as usize).usage),
        "memory.kmem.max_usage_in_bytes" => fmt_bytes(m.kmem.counter.get(memcg as usize).watermark),
        "memory.kmem.failcnt" => format!("{}\n", m.kmem.counter.get(memcg as usize).failcnt),
        "memory.use_hierarchy" if seed001(m) => {
            format!("{}\n", m.memcg(memcg).use_hierarchy as u8)
        }
        "memory.use_hierarchy" => "1\n".into(),
        "memory.dirty_ratio"
        | "memory.dirty_limit_in_bytes"
        | "memory.dirty_background_ratio"
        | "memory.dirty_background_limit_in_bytes"
            if seed001(m) =>
        {
            let p = m.memcg_dirty_param(memcg);
            let v = match f {
                "memory.dirty_ratio" => p.ratio,
                "memory.dirty_limit_in_bytes" => p.bytes,
                "memory.dirty_background_ratio" => p.background_ratio,
                _ => p.background_bytes,
            };
            format!("{v}\n")
        }
        "memory.swappiness" => format!("{}\n", m.memcg_swappiness(memcg)),
        "memory.move_charge_at_immigrate" => "0\n".into(),
        "memory.oom_control" => {
            let mc = m.memcg(memcg);
            format!(
                "oom_kill_disable {}\nunder_oom {}\noom_kill {}\n",
                mc.oom_kill_disable as u8,
                mc.under_oom as u8,
                mc.events_local[memcgsim_model::MemcgEvent::OomKill as usize]
            )
        }
        "memory.stat" => crate::stat::memory_stat_v1(m, memcg),
        "memory.numa_stat" => crate::stat::memory_numa_stat_v1(m, memcg),
        "memory.force_empty" => return Err(Errno::EACCES),
        _ => return Err(Errno::ENOENT),
    };
    let _ = PAGE_SIZE;
    Ok(s)
}

pub(crate) fn write(sys: &mut System, i: usize, f: &str, data: &str) -> Result<(), Errno> {
    let memcg = sys.cg(i).memcg.ok_or(Errno::ENOENT)?;
    let id = memcg as usize;
    let root = memcg == ROOT_MEMCG;
    let m = &mut sys.machine;
    match f {
        "memory.limit_in_bytes" | "memory.memsw.limit_in_bytes" => {
            let v = page_counter_memparse(data, "-1")?;
            if root {
                return Err(Errno::EINVAL);
            }
            m.resize_max_v1(memcg, v, f == "memory.memsw.limit_in_bytes")?;
        }
        "memory.soft_limit_in_bytes" => {
            let v = page_counter_memparse(data, "-1")?;
            m.set_memcg_soft_limit(memcg, v);
        }
        "memory.max_usage_in_bytes" => m.memory.reset_watermark(id),
        "memory.memsw.max_usage_in_bytes" => m.memsw.reset_watermark(id),
        "memory.failcnt" => m.memory.get_mut(id).failcnt = 0,
        "memory.memsw.failcnt" => m.memsw.get_mut(id).failcnt = 0,
        "memory.kmem.max_usage_in_bytes" => m.kmem.counter.reset_watermark(id),
        "memory.kmem.failcnt" => m.kmem.counter.get_mut(id).failcnt = 0,
        "memory.kmem.limit_in_bytes" => {
            // Deprecated: accepted with no effect, as the kernel does.
            page_counter_memparse(data, "-1")?;
        }
        "memory.force_empty" => {
            if root {
                return Err(Errno::EINVAL);
            }
            m.force_empty(memcg);
        }
        "memory.use_hierarchy" if seed001(m) => {
            // mem_cgroup_hierarchy_write() of 2.6.36.
            let v = kstrtoull(data)?;
            let parent_has = m
                .memcg(memcg)
                .parent
                .is_some_and(|p| m.memcg(p).use_hierarchy);
            if parent_has || v > 1 {
                return Err(Errno::EINVAL);
            }
            if m.memcg(memcg).first_child.is_some() {
                return Err(Errno::EBUSY);
            }
            m.memcg_mut(memcg).use_hierarchy = v == 1;
        }
        "memory.use_hierarchy" => {
            if kstrtoull(data)? != 1 {
                return Err(Errno::EINVAL);
            }
        }
        "memory.dirty_ratio" | "memory.dirty_background_ratio" if seed001(m) => {
            // mem_cgroup_dirty_write(): a u64, at most 100; only a group with limits of its
            // own (not the root; under dirty=seed001, not with use_hierarchy).
            let v = kstrtoull(data)?;
            if !m.memcg_has_dirty_limit(memcg) || v > 100 {
                return Err(Errno::EINVAL);
            }
            let background = f == "memory.dirty_background_ratio";
            m.memcg_mut(memcg).dirty_param.set(background, false, v);
        }
        "memory.dirty_limit_in_bytes" | "memory.dirty_background_limit_in_bytes" if seed001(m) => {
            // mem_cgroup_dirty_write_string().
            if !m.memcg_has_dirty_limit(memcg) {
                return Err(Errno::EINVAL);
            }
            let v = crate::parse::res_counter_memparse(data)?;
            let background = f == "memory.dirty_background_limit_in_bytes";
            m.memcg_mut(memcg).dirty_param.set(background, true, v);
        }
        "memory.swappiness" => {
            let v = kstrtoull(data)?;
            if v > 200 {
                return Err(Errno::EINVAL);
            }
            if root {
                m.vm_swappiness = v as u32;
            } else {
                m.memcg_mut(memcg).swappiness = v as u32;
            }
        }
        "memory.move_charge_at_immigrate" => {
            // Charge moving is gone from the newest kernels: only 0 is accepted.
            if kstrtoull(data)? != 0 {
                return Err(Errno::EINVAL);
            }
        }
        "memory.oom_control" => {
            let v = kstrtoull(data)?;
            if root || v > 1 {
                return Err(Errno::EINVAL);
            }
            let mc = m.memcg_mut(memcg);
            mc.oom_kill_disable = v == 1;
            if v == 0 {
                mc.under_oom = false;
            }
        }
        "memory.usage_in_bytes"
        | "memory.memsw.usage_in_bytes"
        | "memory.stat"
        | "memory.numa_stat"
        | "memory.kmem.usage_in_bytes" => return Err(Errno::EACCES),
        _ => return Err(Errno::ENOENT),
    }
    Ok(())
}
