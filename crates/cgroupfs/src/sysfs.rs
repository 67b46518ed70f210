//! /sys files of the memory manager: /sys/kernel/mm/transparent_hugepage/{enabled, defrag,
//! hpage_pmd_size} (mm/huge_memory.c: enabled_store() and defrag_store() take one of their
//! words, with or without a trailing newline, as sysfs_streq() compares; anything else is
//! EINVAL; hpage_pmd_size is read-only).

use memcgsim_model::huge_memory::{ThpDefrag, ThpEnabled, HPAGE_PMD_NR};
use memcgsim_model::{Errno, PAGE_SIZE};

use crate::System;

/// The key prefix of a /sys file among the pseudo-files (proc keys never start with '/').
pub(crate) const KEY: &str = "/sys/";

const THP: &str = "kernel/mm/transparent_hugepage/";

pub(crate) fn files() -> &'static [&'static str] {
    &[
        "kernel/mm/transparent_hugepage/enabled",
        "kernel/mm/transparent_hugepage/defrag",
        "kernel/mm/transparent_hugepage/hpage_pmd_size",
    ]
}

pub(crate) fn dirs() -> &'static [&'static str] {
    &["kernel", "kernel/mm", "kernel/mm/transparent_hugepage"]
}

/// sysfs_streq(): equal, a trailing newline on either side aside.
fn streq(data: &str, word: &str) -> bool {
    data.strip_suffix('\n').unwrap_or(data) == word
}

pub(crate) fn read(sys: &System, f: &str) -> Result<String, Errno> {
    let m = &sys.machine;
    match f.strip_prefix(THP) {
        Some("enabled") => Ok(m.thp.enabled.show()),
        Some("defrag") => Ok(m.thp.defrag.show()),
        Some("hpage_pmd_size") => Ok(format!("{}\n", HPAGE_PMD_NR * PAGE_SIZE)),
        _ => Err(Errno::ENOENT),
    }
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
        // Mode 0444: opening it for writing is refused.
        _ => Err(Errno::EACCES),
    }
}
