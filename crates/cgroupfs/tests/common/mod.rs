//! Helpers shared by the cgroupfs crate's integration tests.

use memcgsim_cgroupfs::System;

/// One key of /proc/vmstat.
pub fn vmstat(sys: &mut System, key: &str) -> u64 {
    let text = sys.read("/proc/vmstat").unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{key} in /proc/vmstat"))
}
