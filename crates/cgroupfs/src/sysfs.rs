//! /sys files of the memory manager: /sys/kernel/mm/transparent_hugepage/{enabled, defrag,
//! hpage_pmd_size} (mm/huge_memory.c: enabled_store() and defrag_store() take one of their
//! words, with or without a trailing newline, as sysfs_streq() compares; anything else is
//! EINVAL; hpage_pmd_size is read-only), shmem_enabled (mm/shmem.c: one word, exactly, but
//! for one trailing newline) and khugepaged/ (mm/khugepaged.c: the sleeps and
//! pages_to_scan as kstrtouint() reads them, EINVAL for anything else and for 0 pages;
//! max_ptes_* up to 511; defrag 0 or 1; pages_collapsed and full_scans read-only), and
//! /sys/module/zswap/parameters/ (mm/zswap.c's module parameters, zswap.rs) and zswap's
//! debugfs counters in /sys/kernel/debug/zswap/ (read-only, as debugfs_create_u64() and
//! debugfs_create_atomic_t() make them). The multi-generational LRU's files are
//! lru_gen.rs's.

use memcgsim_model::huge_memory::{ShmemHuge, ThpDefrag, ThpEnabled, HPAGE_PMD_NR};
use memcgsim_model::{Errno, PAGE_SIZE};

use crate::System;

/// The key prefix of a /sys file among the pseudo-files (proc keys never start with '/').
pub(crate) const KEY: &str = "/sys/";

const THP: &str = "kernel/mm/transparent_hugepage/";

pub(crate) fn files() -> &'static [&'static str] {
    &[
        "kernel/mm/transparent_hugepage/enabled",
        "kernel/mm/transparent_hugepage/defrag",
        "kernel/mm/transparent_hugepage/shmem_enabled",
        "kernel/mm/transparent_hugepage/hpage_pmd_size",
        "kernel/mm/transparent_hugepage/khugepaged/defrag",
        "kernel/mm/transparent_hugepage/khugepaged/max_ptes_none",
        "kernel/mm/transparent_hugepage/khugepaged/max_ptes_swap",
        "kernel/mm/transparent_hugepage/khugepaged/max_ptes_shared",
        "kernel/mm/transparent_hugepage/khugepaged/pages_to_scan",
        "kernel/mm/transparent_hugepage/khugepaged/pages_collapsed",
        "kernel/mm/transparent_hugepage/khugepaged/full_scans",
        "kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs",
        "kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs",
        "module/zswap/parameters/enabled",
        "module/zswap/parameters/compressor",
        "module/zswap/parameters/zpool",
        "module/zswap/parameters/max_pool_percent",
        "module/zswap/parameters/accept_threshold_percent",
        "module/zswap/parameters/same_filled_pages_enabled",
        "module/zswap/parameters/non_same_filled_pages_enabled",
        "kernel/debug/zswap/pool_limit_hit",
        "kernel/debug/zswap/reject_reclaim_fail",
        "kernel/debug/zswap/reject_alloc_fail",
        "kernel/debug/zswap/reject_kmemcache_fail",
        "kernel/debug/zswap/reject_compress_poor",
        "kernel/debug/zswap/written_back_pages",
        "kernel/debug/zswap/duplicate_entry",
        "kernel/debug/zswap/pool_total_size",
        "kernel/debug/zswap/stored_pages",
        "kernel/debug/zswap/same_filled_pages",
        crate::lru_gen::ENABLED,
        crate::lru_gen::MIN_TTL,
        crate::lru_gen::DEBUG,
        crate::lru_gen::DEBUG_FULL,
    ]
}

pub(crate) fn dirs() -> &'static [&'static str] {
    &[
        "kernel",
        "kernel/mm",
        "kernel/mm/transparent_hugepage",
        "kernel/mm/transparent_hugepage/khugepaged",
        "module",
        "module/zswap",
        "module/zswap/parameters",
        "kernel/debug",
        "kernel/debug/zswap",
        "kernel/mm/lru_gen",
    ]
}

/// /sys/module/zswap/parameters/: zswap's module parameters (zswap.rs).
const ZSWAP: &str = "module/zswap/parameters/";

/// /sys/kernel/debug/zswap/: zswap's counters.
const ZSWAP_DEBUG: &str = "kernel/debug/zswap/";

/// sysfs_streq(): equal, a trailing newline on either side aside.
fn streq(data: &str, word: &str) -> bool {
    data.strip_suffix('\n').unwrap_or(data) == word
}

pub(crate) fn read(sys: &System, f: &str) -> Result<String, Errno> {
    if let Some(r) = crate::lru_gen::read(sys, f) {
        return r;
    }
    let m = &sys.machine;
    if let Some(p) = f.strip_prefix(ZSWAP) {
        return m.zswap.params.read(p).ok_or(Errno::ENOENT);
    }
    if let Some(p) = f.strip_prefix(ZSWAP_DEBUG) {
        let z = &m.zswap.stats;
        let v = match p {
            "pool_limit_hit" => z.pool_limit_hit,
            "reject_reclaim_fail" => z.reject_reclaim_fail,
            "reject_alloc_fail" => z.reject_alloc_fail,
            "reject_kmemcache_fail" => z.reject_kmemcache_fail,
            "reject_compress_poor" => z.reject_compress_poor,
            "written_back_pages" => z.written_back_pages,
            "duplicate_entry" => z.duplicate_entry,
            "pool_total_size" => m.zswap.pool_pages() * PAGE_SIZE,
            "stored_pages" => m.zswap.stored_pages(),
            "same_filled_pages" => z.same_filled_pages,
            _ => return Err(Errno::ENOENT),
        };
        return Ok(format!("{v}\n"));
    }
    match f.strip_prefix(THP) {
        Some("enabled") => Ok(m.thp.enabled.show()),
        Some("defrag") => Ok(m.thp.defrag.show()),
        Some("shmem_enabled") => Ok(m.thp.shmem_huge.show()),
        Some("hpage_pmd_size") => Ok(format!("{}\n", HPAGE_PMD_NR * PAGE_SIZE)),
        Some(k) => {
            let kh = &m.khugepaged;
            let v = match k.strip_prefix("khugepaged/") {
                Some("defrag") => u64::from(kh.defrag),
                Some("max_ptes_none") => u64::from(kh.max_ptes_none),
                Some("max_ptes_swap") => u64::from(kh.max_ptes_swap),
                Some("max_ptes_shared") => u64::from(kh.max_ptes_shared),
                Some("pages_to_scan") => u64::from(kh.pages_to_scan),
                Some("pages_collapsed") => kh.pages_collapsed,
                Some("full_scans") => kh.full_scans,
                Some("scan_sleep_millisecs") => u64::from(kh.scan_sleep_ms),
                Some("alloc_sleep_millisecs") => u64::from(kh.alloc_sleep_ms),
                _ => return Err(Errno::ENOENT),
            };
            Ok(format!("{v}\n"))
        }
        None => Err(Errno::ENOENT),
    }
}

/// kstrtoul(buf, 10): decimal digits after an optional '+', one trailing newline allowed;
/// EINVAL for anything else, ERANGE past 64 bits.
fn kstrtoul10(data: &str) -> Result<u64, Errno> {
    let s = data.strip_suffix('\n').unwrap_or(data);
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Errno::EINVAL);
    }
    s.bytes().try_fold(0u64, |v, b| {
        v.checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(Errno::ERANGE)
    })
}

/// kstrtouint() as the khugepaged stores use it: any error is EINVAL.
fn uint(data: &str) -> Result<u32, Errno> {
    kstrtoul10(data)
        .ok()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(Errno::EINVAL)
}

/// The max_ptes_* stores: kstrtoul(), then at most HPAGE_PMD_NR - 1, else EINVAL.
fn max_ptes(data: &str) -> Result<u32, Errno> {
    match kstrtoul10(data) {
        Ok(v) if v < HPAGE_PMD_NR => Ok(v as u32),
        _ => Err(Errno::EINVAL),
    }
}

/// shmem_enabled_store(): at most 15 bytes, one trailing newline dropped, then exactly one
/// of the words (shmem_parse_huge()'s strcmp()); EINVAL for anything else.
fn shmem_enabled(data: &str) -> Result<ShmemHuge, Errno> {
    if data.len() > 15 {
        return Err(Errno::EINVAL);
    }
    ShmemHuge::from_name(data.strip_suffix('\n').unwrap_or(data)).ok_or(Errno::EINVAL)
}

/// The word of `names` that `data` is (sysfs_streq()), or EINVAL.
fn word<'a>(names: &[&'a str], data: &str) -> Result<&'a str, Errno> {
    names
        .iter()
        .copied()
        .find(|w| streq(data, w))
        .ok_or(Errno::EINVAL)
}

pub(crate) fn write(sys: &mut System, f: &str, data: &str) -> Result<(), Errno> {
    if let Some(r) = crate::lru_gen::write(sys, f, data) {
        return r;
    }
    if let Some(p) = f.strip_prefix(ZSWAP) {
        return sys.machine.zswap.write_param(p, data);
    }
    match f.strip_prefix(THP) {
        Some("enabled") => {
            let e = ThpEnabled::from_name(word(&ThpEnabled::NAMES, data)?).ok_or(Errno::EINVAL)?;
            sys.machine.set_thp_enabled(e);
            Ok(())
        }
        Some("defrag") => {
            let d = ThpDefrag::from_name(word(&ThpDefrag::NAMES, data)?).ok_or(Errno::EINVAL)?;
            sys.machine.thp.defrag = d;
            Ok(())
        }
        Some("shmem_enabled") => {
            sys.machine.set_shmem_enabled(shmem_enabled(data)?);
            Ok(())
        }
        Some("khugepaged/pages_to_scan") => {
            let v = uint(data)?;
            if v == 0 {
                return Err(Errno::EINVAL);
            }
            sys.machine.khugepaged.pages_to_scan = v;
            Ok(())
        }
        Some("khugepaged/scan_sleep_millisecs") => {
            sys.machine.khugepaged.scan_sleep_ms = uint(data)?;
            sys.machine.khugepaged_kick();
            Ok(())
        }
        Some("khugepaged/alloc_sleep_millisecs") => {
            sys.machine.khugepaged.alloc_sleep_ms = uint(data)?;
            sys.machine.khugepaged_kick();
            Ok(())
        }
        Some("khugepaged/max_ptes_none") => {
            sys.machine.khugepaged.max_ptes_none = max_ptes(data)?;
            Ok(())
        }
        Some("khugepaged/max_ptes_swap") => {
            sys.machine.khugepaged.max_ptes_swap = max_ptes(data)?;
            Ok(())
        }
        Some("khugepaged/max_ptes_shared") => {
            sys.machine.khugepaged.max_ptes_shared = max_ptes(data)?;
            Ok(())
        }
        Some("khugepaged/defrag") => {
            // single_hugepage_flag_store(): kstrtoul()'s own error, or EINVAL above 1.
            match kstrtoul10(data)? {
                v @ (0 | 1) => sys.machine.khugepaged.defrag = v == 1,
                _ => return Err(Errno::EINVAL),
            }
            Ok(())
        }
        // Mode 0444: opening it for writing is refused.
        _ => Err(Errno::EACCES),
    }
}
