//! memory.stat and memory.numa_stat formats: memory_stat_format() (v2) and
//! memcg_stat_show() (v1) of Linux 6.1, keys in kernel order. Items the model does not
//! produce (sockets, vmalloc, file THP) print 0. Values are what a
//! reader sees under the machine's statistics scheme (`Machine::stat_view`); the caller
//! flushes first as the kernel does (`Machine::stats_read_flush`).

use std::fmt::Write;

use memcgsim_model::{Machine, MemcgId, Stat, PAGE_COUNTER_MAX, PAGE_SIZE};

/// A memory.stat item: a modelled statistic in pages, a modelled event count, or a constant 0.
enum Item {
    Pages(Stat),
    /// Kept in bytes.
    Bytes(Stat),
    /// Kept in KiB (NR_KERNEL_STACK_KB).
    Kb(Stat),
    /// slab_reclaimable + slab_unreclaimable.
    Slab,
    Count(Stat),
    Zero,
}

/// memory_stats[] of 6.1 (with "slab" printed after slab_unreclaimable).
const V2_STATS: &[(&str, Item, bool)] = &[
    // (name, item, is a node (lruvec) stat shown in numa_stat)
    ("anon", Item::Pages(Stat::Anon), true),
    ("file", Item::Pages(Stat::File), true),
    ("kernel", Item::Pages(Stat::Kmem), false),
    ("kernel_stack", Item::Kb(Stat::KernelStackKb), true),
    ("pagetables", Item::Pages(Stat::Pagetables), true),
    ("sec_pagetables", Item::Zero, true),
    ("percpu", Item::Bytes(Stat::PercpuB), false),
    ("sock", Item::Zero, false),
    ("vmalloc", Item::Zero, false),
    ("shmem", Item::Pages(Stat::Shmem), true),
    ("zswap", Item::Bytes(Stat::ZswapB), false),
    ("zswapped", Item::Pages(Stat::Zswapped), false),
    ("file_mapped", Item::Pages(Stat::FileMapped), true),
    ("file_dirty", Item::Pages(Stat::FileDirty), true),
    ("file_writeback", Item::Pages(Stat::Writeback), true),
    ("swapcached", Item::Pages(Stat::SwapCached), true),
    ("anon_thp", Item::Pages(Stat::AnonThp), true),
    ("file_thp", Item::Zero, true),
    ("shmem_thp", Item::Pages(Stat::ShmemThp), true),
    ("inactive_anon", Item::Pages(Stat::InactiveAnon), true),
    ("active_anon", Item::Pages(Stat::ActiveAnon), true),
    ("inactive_file", Item::Pages(Stat::InactiveFile), true),
    ("active_file", Item::Pages(Stat::ActiveFile), true),
    ("unevictable", Item::Pages(Stat::Unevictable), true),
    (
        "slab_reclaimable",
        Item::Bytes(Stat::SlabReclaimableB),
        true,
    ),
    (
        "slab_unreclaimable",
        Item::Bytes(Stat::SlabUnreclaimableB),
        true,
    ),
    ("slab", Item::Slab, false),
    (
        "workingset_refault_anon",
        Item::Count(Stat::WorkingsetRefaultAnon),
        true,
    ),
    (
        "workingset_refault_file",
        Item::Count(Stat::WorkingsetRefaultFile),
        true,
    ),
    (
        "workingset_activate_anon",
        Item::Count(Stat::WorkingsetActivateAnon),
        true,
    ),
    (
        "workingset_activate_file",
        Item::Count(Stat::WorkingsetActivateFile),
        true,
    ),
    (
        "workingset_restore_anon",
        Item::Count(Stat::WorkingsetRestoreAnon),
        true,
    ),
    (
        "workingset_restore_file",
        Item::Count(Stat::WorkingsetRestoreFile),
        true,
    ),
    (
        "workingset_nodereclaim",
        Item::Count(Stat::WorkingsetNodereclaim),
        true,
    ),
];

/// memcg_vm_event_stat[] of 6.1 without pgpgin/pgpgout (skipped on v2).
const V2_EVENTS: &[(&str, Item)] = &[
    ("pgscan_kswapd", Item::Count(Stat::PgscanKswapd)),
    ("pgscan_direct", Item::Count(Stat::PgscanDirect)),
    ("pgsteal_kswapd", Item::Count(Stat::PgstealKswapd)),
    ("pgsteal_direct", Item::Count(Stat::PgstealDirect)),
    ("pgfault", Item::Count(Stat::Pgfault)),
    ("pgmajfault", Item::Count(Stat::Pgmajfault)),
    ("pgrefill", Item::Count(Stat::Pgrefill)),
    ("pgactivate", Item::Count(Stat::Pgactivate)),
    ("pgdeactivate", Item::Count(Stat::Pgdeactivate)),
    ("pglazyfree", Item::Count(Stat::Pglazyfree)),
    ("pglazyfreed", Item::Count(Stat::Pglazyfreed)),
    ("zswpin", Item::Count(Stat::Zswpin)),
    ("zswpout", Item::Count(Stat::Zswpout)),
    ("thp_fault_alloc", Item::Count(Stat::ThpFaultAlloc)),
    ("thp_collapse_alloc", Item::Count(Stat::ThpCollapseAlloc)),
];

fn value(m: &Machine, memcg: MemcgId, item: &Item, local: bool) -> u64 {
    let get = |s: Stat| {
        if local {
            m.stat_view_local(memcg, s)
        } else {
            m.stat_view(memcg, s)
        }
    };
    match item {
        Item::Pages(s) => get(*s) * PAGE_SIZE,
        Item::Bytes(s) | Item::Count(s) => get(*s),
        Item::Kb(s) => get(*s) * 1024,
        Item::Slab => get(Stat::SlabReclaimableB) + get(Stat::SlabUnreclaimableB),
        Item::Zero => 0,
    }
}

/// v2 memory.stat (hierarchical values).
pub(crate) fn memory_stat_v2(m: &Machine, memcg: MemcgId) -> String {
    let mut s = String::with_capacity(1500);
    for (name, item, _) in V2_STATS {
        let _ = writeln!(s, "{name} {}", value(m, memcg, item, false));
    }
    let t = |st| m.stat_view(memcg, st);
    let _ = writeln!(
        s,
        "pgscan {}",
        t(Stat::PgscanKswapd) + t(Stat::PgscanDirect)
    );
    let _ = writeln!(
        s,
        "pgsteal {}",
        t(Stat::PgstealKswapd) + t(Stat::PgstealDirect)
    );
    for (name, item) in V2_EVENTS {
        let _ = writeln!(s, "{name} {}", value(m, memcg, item, false));
    }
    s
}

/// v2 memory.numa_stat: node items per node ("N0=").
pub(crate) fn memory_numa_stat_v2(m: &Machine, memcg: MemcgId) -> String {
    let mut s = String::new();
    for (name, item, node) in V2_STATS {
        if !node || name.starts_with("workingset") {
            continue;
        }
        let _ = writeln!(s, "{name} N0={}", value(m, memcg, item, false));
    }
    s
}

const V1_STATS: &[(&str, Item)] = &[
    ("cache", Item::Pages(Stat::File)),
    ("rss", Item::Pages(Stat::Anon)),
    ("rss_huge", Item::Pages(Stat::AnonThp)),
    ("shmem", Item::Pages(Stat::Shmem)),
    ("mapped_file", Item::Pages(Stat::FileMapped)),
    ("dirty", Item::Pages(Stat::FileDirty)),
    ("writeback", Item::Pages(Stat::Writeback)),
    (
        "workingset_refault_anon",
        Item::Count(Stat::WorkingsetRefaultAnon),
    ),
    (
        "workingset_refault_file",
        Item::Count(Stat::WorkingsetRefaultFile),
    ),
    ("swap", Item::Pages(Stat::Swap)),
];
const V1_EVENTS: &[(&str, Item)] = &[
    ("pgpgin", Item::Count(Stat::Pgpgin)),
    ("pgpgout", Item::Count(Stat::Pgpgout)),
    ("pgfault", Item::Count(Stat::Pgfault)),
    ("pgmajfault", Item::Count(Stat::Pgmajfault)),
];
const V1_LRU: &[(&str, Item)] = &[
    ("inactive_anon", Item::Pages(Stat::InactiveAnon)),
    ("active_anon", Item::Pages(Stat::ActiveAnon)),
    ("inactive_file", Item::Pages(Stat::InactiveFile)),
    ("active_file", Item::Pages(Stat::ActiveFile)),
    ("unevictable", Item::Pages(Stat::Unevictable)),
];

/// v1 memory.stat: local values, hierarchical limits, then total_* values.
pub(crate) fn memory_stat_v1(m: &Machine, memcg: MemcgId) -> String {
    let mut s = String::with_capacity(1500);
    // Under dirty=global (before seed 001) no memcg counts dirty or writeback pages, and
    // memory.stat has no such keys.
    let global = m.cfg.dirty == memcgsim_model::DirtyPolicy::Global;
    let shown = |name: &&str| !(global && matches!(*name, "dirty" | "writeback"));
    for list in [V1_STATS, V1_EVENTS, V1_LRU] {
        for (name, item) in list.iter().filter(|(n, _)| shown(n)) {
            let _ = writeln!(s, "{name} {}", value(m, memcg, item, true));
        }
    }
    let (mut mem, mut memsw) = (PAGE_COUNTER_MAX, PAGE_COUNTER_MAX);
    let mut cur = Some(memcg);
    while let Some(c) = cur {
        mem = mem.min(m.memory.get(c as usize).max);
        memsw = memsw.min(m.memsw.get(c as usize).max);
        cur = m.memcg(c).parent;
    }
    let _ = writeln!(s, "hierarchical_memory_limit {}", mem * PAGE_SIZE);
    let _ = writeln!(s, "hierarchical_memsw_limit {}", memsw * PAGE_SIZE);
    for list in [V1_STATS, V1_EVENTS, V1_LRU] {
        for (name, item) in list.iter().filter(|(n, _)| shown(n)) {
            let _ = writeln!(s, "total_{name} {}", value(m, memcg, item, false));
        }
    }
    s
}

/// v1 memory.numa_stat (pages).
pub(crate) fn memory_numa_stat_v1(m: &Machine, memcg: MemcgId) -> String {
    let mut s = String::new();
    for hier in [false, true] {
        let g = |st: Stat| {
            if hier {
                m.stat_view(memcg, st)
            } else {
                m.stat_view_local(memcg, st)
            }
        };
        let file = g(Stat::InactiveFile) + g(Stat::ActiveFile);
        let anon = g(Stat::InactiveAnon) + g(Stat::ActiveAnon);
        let unev = g(Stat::Unevictable);
        let p = if hier { "hierarchical_" } else { "" };
        for (name, v) in [
            ("total", file + anon + unev),
            ("file", file),
            ("anon", anon),
            ("unevictable", unev),
        ] {
            let _ = writeln!(s, "{p}{name}={v} N0={v}");
        }
    }
    s
}
