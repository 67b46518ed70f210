//! /proc files: meminfo (fs/proc/meminfo.c), uptime (virtual time since boot), vmstat (mm/vmstat.c, the subset of items the
//! model produces, in kernel order; reclaim's pgscan/pgsteal/pgrefill from the node's own
//! counters, which count global reclaim only, as 6.1's do), zoneinfo (zoneinfo_show_print() in mm/vmstat.c, with the
//! same subset of node items), buddyinfo and pagetypeinfo (frag_show_print(),
//! pagetypeinfo_show() in mm/vmstat.c), compact_memory, compact_unevictable_allowed,
//! compaction_proactiveness and extfrag_threshold (mm/compaction.c), and the vm sysctls swappiness, page-cluster,
//! min_free_kbytes and watermark_scale_factor (the last two read-only), the dirty sysctls of
//! mm/page-writeback.c (dirty_ratio, dirty_bytes, dirty_background_ratio,
//! dirty_background_bytes, dirty_expire_centisecs, dirty_writeback_centisecs, with their
//! handlers' rules: a ratio and its bytes twin exclude each other), and the simulator's own
//! /proc/memcgsim/reclaim (reclaim-walk and soft-limit reclaim counters),
//! /proc/memcgsim/stats (the statistics scheme's work) and /proc/memcgsim/vmscan
//! (shrink_inactive_list() per reclaimer and priority, the mm_vmscan_lru_shrink_inactive
//! tracepoint's fields summed).

use std::fmt::Write;

use memcgsim_model::stat::NodeEvent;
use memcgsim_model::vmscan::ShrinkInactiveHist;
use memcgsim_model::{Errno, Stat, PAGE_SIZE};

use crate::parse::{kstrtoull, proc_dointvec_minmax, proc_doulongvec_min};
use crate::System;

pub(crate) fn proc_files() -> &'static [&'static str] {
    &[
        "meminfo",
        "uptime",
        "vmstat",
        "zoneinfo",
        "buddyinfo",
        "pagetypeinfo",
        "swaps",
        "pressure/cpu",
        "pressure/io",
        "pressure/memory",
        "sys/vm/swappiness",
        "sys/vm/page-cluster",
        "sys/vm/min_free_kbytes",
        "sys/vm/watermark_scale_factor",
        "sys/vm/compact_memory",
        "sys/vm/compact_unevictable_allowed",
        "sys/vm/compaction_proactiveness",
        "sys/vm/extfrag_threshold",
        "sys/vm/dirty_ratio",
        "sys/vm/dirty_bytes",
        "sys/vm/dirty_background_ratio",
        "sys/vm/dirty_background_bytes",
        "sys/vm/dirty_expire_centisecs",
        "sys/vm/dirty_writeback_centisecs",
        "memcgsim/reclaim",
        "memcgsim/stats",
        "memcgsim/vmscan",
    ]
}

pub(crate) fn proc_dirs() -> &'static [&'static str] {
    &["pressure", "sys", "sys/vm", "memcgsim"]
}

fn kb(s: &mut String, name: &str, pages: u64) {
    let _ = writeln!(
        s,
        "{:<16}{:>8} kB",
        format!("{name}:"),
        pages * (PAGE_SIZE / 1024)
    );
}

pub(crate) fn read(sys: &mut System, f: &str) -> Result<String, Errno> {
    if let Some(k) = f.strip_prefix(crate::sysfs::KEY) {
        return crate::sysfs::read(sys, k);
    }
    if let Some(res) = f.strip_prefix("pressure/") {
        let res = match res {
            "cpu" => memcgsim_model::psi::Resource::Cpu,
            "io" => memcgsim_model::psi::Resource::Io,
            _ => memcgsim_model::psi::Resource::Memory,
        };
        return Ok(sys.machine.psi_show(memcgsim_model::psi::PSI_SYSTEM, res));
    }
    let m = &sys.machine;
    let g = |st| m.global_stat(st);
    let mut s = String::with_capacity(2048);
    match f {
        "meminfo" => {
            let free = m.nr_free_pages();
            let pagecache = g(Stat::ActiveFile) + g(Stat::InactiveFile);
            // si_mem_available(): free less totalreserve_pages, plus the page cache less
            // what the low watermarks would keep.
            let reserve = m.zones.totalreserve_pages();
            let wmark_low = m.zones.total(memcgsim_model::mmzone::Wmark::Low);
            let avail = (free as i64 - reserve as i64 + pagecache as i64
                - (pagecache / 2).min(wmark_low) as i64)
                .max(0) as u64;
            let swap_free = m.swap.nr_free() as u64;
            kb(&mut s, "MemTotal", m.totalram_pages);
            kb(&mut s, "MemFree", free);
            kb(&mut s, "MemAvailable", avail);
            kb(&mut s, "Buffers", 0);
            kb(&mut s, "Cached", g(Stat::File));
            kb(&mut s, "SwapCached", g(Stat::SwapCached));
            kb(&mut s, "Active", g(Stat::ActiveAnon) + g(Stat::ActiveFile));
            kb(
                &mut s,
                "Inactive",
                g(Stat::InactiveAnon) + g(Stat::InactiveFile),
            );
            kb(&mut s, "Active(anon)", g(Stat::ActiveAnon));
            kb(&mut s, "Inactive(anon)", g(Stat::InactiveAnon));
            kb(&mut s, "Active(file)", g(Stat::ActiveFile));
            kb(&mut s, "Inactive(file)", g(Stat::InactiveFile));
            kb(&mut s, "Unevictable", g(Stat::Unevictable));
            kb(&mut s, "Mlocked", g(Stat::Mlock));
            kb(&mut s, "SwapTotal", m.total_swap_pages);
            kb(&mut s, "SwapFree", swap_free);
            kb(&mut s, "Zswap", m.zswap.pool_pages());
            kb(&mut s, "Zswapped", m.zswap.stored_pages());
            kb(&mut s, "Dirty", g(Stat::FileDirty));
            kb(&mut s, "Writeback", g(Stat::Writeback));
            kb(&mut s, "AnonPages", g(Stat::Anon));
            kb(&mut s, "Mapped", g(Stat::FileMapped));
            kb(&mut s, "Shmem", g(Stat::Shmem));
            let k = |st| m.meminfo_kernel_kb(st);
            let (srec, sunrec) = (k(Stat::SlabReclaimableB), k(Stat::SlabUnreclaimableB));
            for (name, v) in [
                ("KReclaimable", srec),
                ("Slab", srec + sunrec),
                ("SReclaimable", srec),
                ("SUnreclaim", sunrec),
                ("KernelStack", k(Stat::KernelStackKb)),
                ("PageTables", k(Stat::Pagetables)),
                ("SecPageTables", 0),
                ("NFS_Unstable", 0),
                ("Bounce", 0),
                ("WritebackTmp", 0),
            ] {
                let _ = writeln!(s, "{:<16}{:>8} kB", format!("{name}:"), v);
            }
            kb(
                &mut s,
                "CommitLimit",
                m.totalram_pages / 2 + m.total_swap_pages,
            );
            kb(&mut s, "Committed_AS", g(Stat::Anon) + g(Stat::Swap));
            let _ = writeln!(s, "{:<16}{:>8} kB", "VmallocTotal:", 34359738367u64);
            kb(&mut s, "VmallocUsed", 0);
            kb(&mut s, "VmallocChunk", 0);
            let _ = writeln!(
                s,
                "{:<16}{:>8} kB",
                "Percpu:",
                m.meminfo_kernel_kb(Stat::PercpuB)
            );
            kb(&mut s, "HardwareCorrupted", 0);
            kb(&mut s, "AnonHugePages", g(Stat::AnonThp));
            kb(&mut s, "ShmemHugePages", g(Stat::ShmemThp));
            kb(&mut s, "ShmemPmdMapped", g(Stat::ShmemPmdMapped));
            kb(&mut s, "FileHugePages", 0);
            kb(&mut s, "FilePmdMapped", 0);
            for name in [
                "HugePages_Total",
                "HugePages_Free",
                "HugePages_Rsvd",
                "HugePages_Surp",
            ] {
                let _ = writeln!(s, "{:<16}{:>5}", format!("{name}:"), 0);
            }
            kb(&mut s, "Hugepagesize", 512);
            kb(&mut s, "Hugetlb", 0);
            kb(&mut s, "DirectMap4k", m.totalram_pages);
            kb(&mut s, "DirectMap2M", 0);
            kb(&mut s, "DirectMap1G", 0);
        }
        "vmstat" => {
            // Reclaim's scan and steal counts are the node's own (global reclaim only, as
            // 6.1 counts them), not the root memcg's, which has every reclaim.
            let ne = |item| m.node_events.get(item);
            let zone_items: [(&str, u64); 8] = [
                ("nr_free_pages", m.nr_free_pages()),
                ("nr_zone_inactive_anon", g(Stat::InactiveAnon)),
                ("nr_zone_active_anon", g(Stat::ActiveAnon)),
                ("nr_zone_inactive_file", g(Stat::InactiveFile)),
                ("nr_zone_active_file", g(Stat::ActiveFile)),
                ("nr_zone_unevictable", g(Stat::Unevictable)),
                (
                    "nr_zone_write_pending",
                    g(Stat::FileDirty) + g(Stat::Writeback),
                ),
                ("nr_mlock", g(Stat::Mlock)),
            ];
            let events = [
                ("pgpgin", m.pgpg_kb().0),
                ("pgpgout", m.pgpg_kb().1),
                ("pswpin", g(Stat::Pswpin)),
                ("pswpout", g(Stat::Pswpout)),
                ("pgactivate", g(Stat::Pgactivate)),
                ("pgdeactivate", g(Stat::Pgdeactivate)),
                ("pgfault", g(Stat::Pgfault)),
                ("pgmajfault", g(Stat::Pgmajfault)),
                ("pgrefill", ne(NodeEvent::Pgrefill)),
                ("pgsteal_kswapd", ne(NodeEvent::PgstealKswapd)),
            ];
            let (node, kernel) = node_items(m);
            for (k, v) in zone_items
                .into_iter()
                .chain(node)
                .chain(events)
                .chain(kernel)
            {
                let _ = writeln!(s, "{k} {v}");
            }
            for (k, v) in [
                ("pgsteal_direct", ne(NodeEvent::PgstealDirect)),
                ("pgscan_kswapd", ne(NodeEvent::PgscanKswapd)),
                ("pgscan_direct", ne(NodeEvent::PgscanDirect)),
                ("pgscan_anon", ne(NodeEvent::PgscanAnon)),
                ("pgscan_file", ne(NodeEvent::PgscanFile)),
                ("pgsteal_anon", ne(NodeEvent::PgstealAnon)),
                ("pgsteal_file", ne(NodeEvent::PgstealFile)),
                ("pgrotated", g(Stat::Pgrotated)),
                ("oom_kill", g(Stat::OomKill)),
                // ALLOCSTALL counts at the allocation's highest zone: ZONE_MOVABLE for
                // user pages (GFP_HIGHUSER_MOVABLE), even where the zone is empty. The model
                // counts every entry there, kernel allocations' too.
                ("allocstall_normal", 0),
                ("allocstall_movable", g(Stat::Allocstall)),
                ("pgmigrate_success", m.compact_events.migrate_success),
                ("pgmigrate_fail", m.compact_events.migrate_fail),
                ("compact_migrate_scanned", m.compact_events.migrate_scanned),
                ("compact_free_scanned", m.compact_events.free_scanned),
                ("compact_isolated", m.compact_events.isolated),
                ("compact_stall", m.compact_events.stall),
                ("compact_fail", m.compact_events.fail),
                ("compact_success", m.compact_events.success),
                ("thp_fault_alloc", m.thp.events.fault_alloc),
                ("thp_fault_fallback", m.thp.events.fault_fallback),
                (
                    "thp_fault_fallback_charge",
                    m.thp.events.fault_fallback_charge,
                ),
                ("thp_collapse_alloc", m.thp.events.collapse_alloc),
                (
                    "thp_collapse_alloc_failed",
                    m.thp.events.collapse_alloc_failed,
                ),
                ("thp_file_alloc", m.thp.events.file_alloc),
                ("thp_file_fallback", m.thp.events.file_fallback),
                (
                    "thp_file_fallback_charge",
                    m.thp.events.file_fallback_charge,
                ),
                ("thp_file_mapped", m.thp.events.file_mapped),
                ("thp_split_page", m.thp.events.split_page),
                ("thp_deferred_split_page", m.thp.events.deferred_split_page),
                ("thp_split_pmd", m.thp.events.split_pmd),
                ("thp_swpout", 0),
                ("thp_swpout_fallback", m.thp.events.swpout_fallback),
                ("zswpin", g(Stat::Zswpin)),
                ("zswpout", g(Stat::Zswpout)),
            ] {
                let _ = writeln!(s, "{k} {v}");
            }
        }
        "zoneinfo" => zoneinfo(sys, &mut s),
        "buddyinfo" => buddyinfo(sys, &mut s),
        "pagetypeinfo" => pagetypeinfo(sys, &mut s),
        "uptime" => {
            // Seconds since boot and idle CPU-seconds, with two decimals, as the kernel prints.
            let up = m.sched.clock;
            let busy: u64 = m.tasks.iter().map(|t| t.stats.cpu_ns).sum();
            let idle = (up as u128 * m.cfg.cpus as u128).saturating_sub(busy as u128) as u64;
            let cs = |ns: u64| (ns / 1_000_000_000, (ns / 10_000_000) % 100);
            let (us, uc) = cs(up);
            let (is, ic) = cs(idle);
            let _ = writeln!(s, "{us}.{uc:02} {is}.{ic:02}");
        }
        "swaps" => {
            s.push_str("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
            if m.total_swap_pages > 0 {
                let used = m.total_swap_pages - m.swap.nr_free() as u64;
                let _ = writeln!(
                    s,
                    "/dev/vdb                                partition\t{}\t\t{}\t\t-2",
                    m.total_swap_pages * 4,
                    used * 4
                );
            }
        }
        "sys/vm/swappiness" => {
            let _ = writeln!(s, "{}", m.vm_swappiness);
        }
        "sys/vm/page-cluster" => {
            let _ = writeln!(s, "{}", m.page_cluster);
        }
        "sys/vm/min_free_kbytes" => {
            let _ = writeln!(s, "{}", m.zones.min_free_kbytes);
        }
        // Mode 0200: the sysctl's permission check refuses to open it for reading.
        "sys/vm/compact_memory" => return Err(Errno::EACCES),
        "sys/vm/compact_unevictable_allowed" => {
            let _ = writeln!(s, "{}", u8::from(m.compact_unevictable_allowed));
        }
        "sys/vm/compaction_proactiveness" => {
            let _ = writeln!(s, "{}", m.compaction.proactiveness);
        }
        "sys/vm/extfrag_threshold" => {
            let _ = writeln!(s, "{}", m.compaction.extfrag_threshold);
        }
        "sys/vm/watermark_scale_factor" => {
            let _ = writeln!(s, "{}", m.cfg.watermark_scale_factor);
        }
        "sys/vm/dirty_ratio"
        | "sys/vm/dirty_bytes"
        | "sys/vm/dirty_background_ratio"
        | "sys/vm/dirty_background_bytes"
        | "sys/vm/dirty_expire_centisecs"
        | "sys/vm/dirty_writeback_centisecs" => {
            let d = m.writeback.sysctl;
            let v = match &f[7..] {
                "dirty_ratio" => d.ratio,
                "dirty_bytes" => d.bytes,
                "dirty_background_ratio" => d.background_ratio,
                "dirty_background_bytes" => d.background_bytes,
                "dirty_expire_centisecs" => d.expire_cs,
                // proc_dointvec prints the unsigned interval as an int.
                _ => d.writeback_cs as u32 as i32 as i64 as u64,
            };
            if f.ends_with("writeback_centisecs") {
                let _ = writeln!(s, "{}", v as i64);
            } else {
                let _ = writeln!(s, "{v}");
            }
        }
        "memcgsim/reclaim" => {
            // The simulator's own counters of reclaim walks and soft-limit reclaim; no kernel
            // file has them (the kernel hid soft reclaim from its vmstat counters).
            let st = &m.soft_stats;
            counters(
                &mut s,
                &[
                    ("soft_reclaim_calls", st.calls),
                    ("soft_reclaim_ns", st.ns),
                    ("soft_groups_walked", st.walked),
                    ("soft_groups_shrunk", st.shrunk),
                    ("soft_scanned", st.scanned),
                    ("soft_reclaimed", st.reclaimed),
                    ("reclaim_all_fallbacks", st.fallbacks),
                    ("soft_limit_updates", st.updates),
                    ("memcg_walk_steps", st.walk_steps),
                    ("kswapd_cpu_ns", m.kswapd.cpu_ns),
                    ("flusher_cpu_ns", m.writeback.flusher_cpu_ns),
                    ("isolated_throttles", m.reclaim_wait.isolated_throttles),
                    ("isolated_skips", m.reclaim_wait.isolated_skips),
                    ("tlb_flush_ipis", m.reclaim_wait.tlb_flush_ipis),
                ],
            );
        }
        "memcgsim/stats" => {
            // The statistics scheme's work since boot (seed 003; rstat.rs): no kernel file
            // has these either.
            let w = &m.rstat.work;
            let _ = writeln!(s, "scheme {}", m.rstat.scheme.name());
            counters(
                &mut s,
                &[
                    ("updates", w.updates),
                    ("tree_links", w.tree_links),
                    ("batches_propagated", w.propagated),
                    ("flushes", w.flushes),
                    ("flush_visits", w.flush_visits),
                    ("stat_reads", w.reads),
                    ("read_sum_visits", w.read_sum_visits),
                ],
            );
        }
        "memcgsim/vmscan" => {
            // shrink_inactive_list() per reclaimer and priority, summed as a histogram
            // trigger on mm_vmscan_lru_shrink_inactive sums it on a kernel.
            let _ = writeln!(
                s,
                "reclaimer priority calls scanned reclaimed ref_keep activate writeback"
            );
            let h = &m.shrink_inactive_hist;
            for (kind, rows) in ShrinkInactiveHist::KINDS.iter().zip(&h.rows) {
                for (prio, r) in rows.iter().enumerate().rev() {
                    if r.calls > 0 {
                        let _ = writeln!(
                            s,
                            "{kind} {prio} {} {} {} {} {} {}",
                            r.calls, r.scanned, r.reclaimed, r.ref_keep, r.activate, r.writeback
                        );
                    }
                }
            }
        }
        _ => return Err(Errno::ENOENT),
    }
    Ok(s)
}

/// `KEY VALUE` lines, one per counter.
fn counters(s: &mut String, list: &[(&str, u64)]) {
    for (k, v) in list {
        let _ = writeln!(s, "{k} {v}");
    }
}

pub(crate) fn write(sys: &mut System, f: &str, data: &str) -> Result<(), Errno> {
    if let Some(k) = f.strip_prefix(crate::sysfs::KEY) {
        return crate::sysfs::write(sys, k, data);
    }
    match f {
        "sys/vm/swappiness" => {
            let v = kstrtoull(data)?;
            if v > 200 {
                return Err(Errno::EINVAL);
            }
            sys.machine.vm_swappiness = v as u32;
            Ok(())
        }
        // 6.1's sysctl_compaction_handler() compacts at any write, whatever was written
        // (later kernels parse it and want 1).
        "sys/vm/compact_memory" => {
            sys.machine.compact_nodes();
            Ok(())
        }
        // compaction_proactiveness_sysctl_handler(): 0 to 100; a value above 0 wakes
        // kcompactd for a proactive check at once (proactive_compact_trigger).
        "sys/vm/compaction_proactiveness" => {
            if let Some(v) = proc_dointvec_minmax(data, 0, 100)? {
                sys.machine.compaction.proactiveness = v as u32;
                let now = sys.machine.now();
                sys.machine.kcompactd_schedule(now);
            }
            Ok(())
        }
        "sys/vm/extfrag_threshold" => {
            if let Some(v) = proc_dointvec_minmax(data, 0, 1000)? {
                sys.machine.compaction.extfrag_threshold = v as u32;
            }
            Ok(())
        }
        // proc_dointvec_minmax_warn_RT_change(): 0 or 1.
        "sys/vm/compact_unevictable_allowed" => {
            if let Some(v) = proc_dointvec_minmax(data, 0, 1)? {
                sys.machine.compact_unevictable_allowed = v == 1;
            }
            Ok(())
        }
        // proc_dointvec_minmax with a minimum of 0 (6.1 has no maximum; 6.3 added 31).
        "sys/vm/page-cluster" => {
            if let Some(v) = proc_dointvec_minmax(data, 0, i32::MAX as i64)? {
                sys.machine.page_cluster = v as u32;
            }
            Ok(())
        }
        // vm_dirty_table's handlers: writing a ratio zeroes its bytes twin and vice versa
        // (dirty_ratio and dirty_bytes only when the value changes).
        "sys/vm/dirty_ratio" => {
            if let Some(v) = proc_dointvec_minmax(data, 0, 100)? {
                let d = &mut sys.machine.writeback.sysctl;
                if v as u64 != d.ratio {
                    d.ratio = v as u64;
                    d.bytes = 0;
                }
            }
            Ok(())
        }
        "sys/vm/dirty_bytes" => {
            if let Some(v) = proc_doulongvec_min(data, 2 * PAGE_SIZE)? {
                let d = &mut sys.machine.writeback.sysctl;
                if v != d.bytes {
                    d.bytes = v;
                    d.ratio = 0;
                }
            }
            Ok(())
        }
        "sys/vm/dirty_background_ratio" => {
            if let Some(v) = proc_dointvec_minmax(data, 0, 100)? {
                let d = &mut sys.machine.writeback.sysctl;
                d.background_ratio = v as u64;
                d.background_bytes = 0;
            }
            Ok(())
        }
        "sys/vm/dirty_background_bytes" => {
            if let Some(v) = proc_doulongvec_min(data, 1)? {
                let d = &mut sys.machine.writeback.sysctl;
                d.background_bytes = v;
                d.background_ratio = 0;
            }
            Ok(())
        }
        "sys/vm/dirty_expire_centisecs" => {
            if let Some(v) = proc_dointvec_minmax(data, 0, i32::MAX as i64)? {
                sys.machine.writeback.sysctl.expire_cs = v as u64;
            }
            Ok(())
        }
        "sys/vm/dirty_writeback_centisecs" => {
            // proc_dointvec into an unsigned int: a negative value wraps.
            if let Some(v) = proc_dointvec_minmax(data, i32::MIN as i64, i32::MAX as i64)? {
                sys.machine.set_dirty_writeback_cs(v as i32 as u32 as u64);
            }
            Ok(())
        }
        _ => Err(Errno::EACCES),
    }
}

/// /proc/zoneinfo as 6.1's zoneinfo_show_print() lays it out: per zone of the node (the
/// kernel's five, Movable and Device always empty) its free pages, watermarks, spans and
/// protection; for a populated zone its page counts, per-CPU lists, vmstat threshold,
/// node_unreclaimable and start_pfn; the node's items once, under the first populated zone.
fn zoneinfo(sys: &System, s: &mut String) {
    use memcgsim_model::memcontrol::MAX_RECLAIM_RETRIES;
    use memcgsim_model::mmzone::{NR_ZONES, ZONE_NAMES};
    let m = &sys.machine;
    let g = |st| m.global_stat(st);
    let names = ["DMA", "DMA32", "Normal", "Movable", "Device"];
    debug_assert_eq!(&names[..NR_ZONES], &ZONE_NAMES[..]);
    let cpus = m.cfg.cpus.max(1);
    let mut node_done = false;
    for (z, name) in names.iter().enumerate() {
        let zone = m.zones.zone.get(z);
        let managed = zone.map_or(0, |zn| zn.managed);
        let _ = write!(s, "Node 0, zone {name:>8}");
        if managed > 0 && !node_done {
            node_done = true;
            s.push_str("\n  per-node stats");
            let (node, kernel) = node_items(m);
            let swapcached = [("nr_swapcached", g(Stat::SwapCached))];
            for (k, v) in node.into_iter().chain(kernel).chain(swapcached) {
                let _ = write!(s, "\n      {k:<12} {v}");
            }
        }
        let free = if z < NR_ZONES {
            m.frames.free.zone_len(z)
        } else {
            0
        };
        let (min, low, high, spanned) =
            zone.map_or((0, 0, 0, 0), |zn| (zn.min, zn.low, zn.high, zn.spanned));
        let _ = write!(
            s,
            "\n  pages free     {free}\n        boost    0\n        min      {min}\n        low      {low}\n        high     {high}\n        spanned  {spanned}\n        present  {spanned}\n        managed  {managed}\n        cma      0"
        );
        let p = m.zones.protection(z);
        let _ = write!(
            s,
            "\n        protection: ({}, {}, {}, {}, {})",
            p[0], p[1], p[2], p[3], p[4]
        );
        if managed == 0 {
            s.push('\n');
            continue;
        }
        let zp = m.zone_pages(z);
        for (k, v) in [
            ("nr_free_pages", free),
            ("nr_zone_inactive_anon", zp.lru[0]),
            ("nr_zone_active_anon", zp.lru[1]),
            ("nr_zone_inactive_file", zp.lru[2]),
            ("nr_zone_active_file", zp.lru[3]),
            ("nr_zone_unevictable", zp.lru[4]),
            ("nr_zone_write_pending", zp.write_pending),
            ("nr_mlock", zp.mlock),
            ("nr_bounce", 0),
            ("nr_free_cma", 0),
        ] {
            let _ = write!(s, "\n      {k:<12} {v}");
        }
        let zn = &m.zones.zone[z];
        s.push_str("\n  pagesets");
        for cpu in 0..cpus {
            let _ = write!(
                s,
                "\n    cpu: {cpu}\n              count: {}\n              high:  {}\n              batch: {}\n  vm stats threshold: {}",
                m.frames.free.pcp_count(cpu as usize, z),
                zn.pcp_high,
                zn.pcp_batch,
                m.zones.stat_threshold(z, cpus)
            );
        }
        let _ = write!(
            s,
            "\n  node_unreclaimable:  {}\n  start_pfn:           {}\n",
            u32::from(m.kswapd.failures >= MAX_RECLAIM_RETRIES),
            m.zones.start_pfn(z)
        );
    }
}

/// /proc/buddyinfo as 6.1's frag_show_print() prints it: per populated zone the free blocks
/// of each order.
fn buddyinfo(sys: &System, s: &mut String) {
    use memcgsim_model::mmzone::{NR_ZONES, ZONE_NAMES};
    let m = &sys.machine;
    for (z, name) in ZONE_NAMES.iter().enumerate().take(NR_ZONES) {
        if m.zones.zone[z].managed == 0 {
            continue;
        }
        let _ = write!(s, "Node 0, zone {name:>8} ");
        for n in m.frames.free.buddyinfo(z) {
            let _ = write!(s, "{n:>6} ");
        }
        s.push('\n');
    }
}

/// /proc/pagetypeinfo as 6.1's pagetypeinfo_show() prints it: the pageblock order, then per
/// populated zone and migrate type the free blocks of each order (a count of 100,000 or more
/// shows as ">100000", where the kernel stops counting), then the pageblocks of each type.
/// HighAtomic and Isolate are never used by the model and print as empty.
fn pagetypeinfo(sys: &System, s: &mut String) {
    use memcgsim_model::buddy::{
        MigrateType, MAX_ORDER, MIGRATETYPE_NAMES, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER,
    };
    use memcgsim_model::mmzone::{NR_ZONES, ZONE_NAMES};
    let m = &sys.machine;
    let populated = || (0..NR_ZONES).filter(|&z| m.zones.zone[z].managed > 0);
    let _ = write!(
        s,
        "Page block order: {PAGEBLOCK_ORDER}\nPages per block:  {PAGEBLOCK_NR_PAGES}\n\n{:<43} ",
        "Free pages count per migrate type at order"
    );
    for o in 0..MAX_ORDER {
        let _ = write!(s, "{o:>6} ");
    }
    s.push('\n');
    for z in populated() {
        let zb = m.frames.free.zone(z);
        for (t, name) in MIGRATETYPE_NAMES.iter().enumerate() {
            let _ = write!(
                s,
                "Node {:>4}, zone {:>8}, type {name:>12} ",
                0, ZONE_NAMES[z]
            );
            for o in 0..MAX_ORDER as u32 {
                let n = MigrateType::ALL.get(t).map_or(0, |&mt| zb.nr_free(o, mt));
                if n >= 100_000 {
                    let _ = write!(s, ">{:>6} ", 100_000);
                } else {
                    let _ = write!(s, "{n:>6} ");
                }
            }
            s.push('\n');
        }
    }
    let _ = write!(s, "\n{:<23}", "Number of blocks type ");
    for name in MIGRATETYPE_NAMES {
        let _ = write!(s, "{name:>12} ");
    }
    s.push('\n');
    for z in populated() {
        let span_start = m.zones.start_pfn(z);
        let span_end = span_start + m.zones.zone[z].spanned;
        let c = m
            .frames
            .free
            .zone(z)
            .span_pageblock_counts(span_start, span_end);
        let _ = write!(s, "Node 0, zone {:>8} ", ZONE_NAMES[z]);
        for t in 0..MIGRATETYPE_NAMES.len() {
            let _ = write!(s, "{:>12} ", c.get(t).copied().unwrap_or(0));
        }
        s.push('\n');
    }
}

/// Named counters, in the order a /proc file prints them.
type Items = Vec<(&'static str, u64)>;

/// The node's items /proc/vmstat and /proc/zoneinfo show: the LRU, workingset and page-cache
/// items, then kernel memory in pages (slab), KiB (kernel stacks) and pages (page tables).
fn node_items(m: &memcgsim_model::Machine) -> (Items, Items) {
    let g = |st| m.global_stat(st);
    let kp = |st| m.meminfo_kernel_kb(st) / (PAGE_SIZE / 1024);
    (
        vec![
            ("nr_inactive_anon", g(Stat::InactiveAnon)),
            ("nr_active_anon", g(Stat::ActiveAnon)),
            ("nr_inactive_file", g(Stat::InactiveFile)),
            ("nr_active_file", g(Stat::ActiveFile)),
            ("nr_unevictable", g(Stat::Unevictable)),
            ("workingset_refault_anon", g(Stat::WorkingsetRefaultAnon)),
            ("workingset_refault_file", g(Stat::WorkingsetRefaultFile)),
            ("workingset_activate_anon", g(Stat::WorkingsetActivateAnon)),
            ("workingset_activate_file", g(Stat::WorkingsetActivateFile)),
            ("workingset_restore_anon", g(Stat::WorkingsetRestoreAnon)),
            ("workingset_restore_file", g(Stat::WorkingsetRestoreFile)),
            ("workingset_nodereclaim", g(Stat::WorkingsetNodereclaim)),
            ("nr_anon_pages", g(Stat::Anon)),
            ("nr_mapped", g(Stat::FileMapped)),
            // add_to_swap_cache() counts swap-cache pages in the node's NR_FILE_PAGES
            // (not in a memcg's `file`); meminfo's Cached takes them out again.
            ("nr_file_pages", g(Stat::File) + g(Stat::SwapCached)),
            ("nr_dirty", g(Stat::FileDirty)),
            ("nr_writeback", g(Stat::Writeback)),
            ("nr_shmem", g(Stat::Shmem)),
            // The THP items, printed in huge pages (vmstat_item_print_in_thp()).
            (
                "nr_shmem_hugepages",
                g(Stat::ShmemThp) / memcgsim_model::huge_memory::HPAGE_PMD_NR,
            ),
            (
                "nr_shmem_pmdmapped",
                g(Stat::ShmemPmdMapped) / memcgsim_model::huge_memory::HPAGE_PMD_NR,
            ),
            (
                "nr_anon_transparent_hugepages",
                g(Stat::AnonThp) / memcgsim_model::huge_memory::HPAGE_PMD_NR,
            ),
            ("nr_dirtied", m.writeback.nr_dirtied),
            ("nr_written", m.writeback.nr_written),
        ],
        vec![
            ("nr_slab_reclaimable", kp(Stat::SlabReclaimableB)),
            ("nr_slab_unreclaimable", kp(Stat::SlabUnreclaimableB)),
            ("nr_kernel_stack", m.meminfo_kernel_kb(Stat::KernelStackKb)),
            ("nr_page_table_pages", kp(Stat::Pagetables)),
        ],
    )
}
