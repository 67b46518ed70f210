//! Helpers shared by the cgroupfs crate's integration tests.

use memcgsim_cgroupfs::System;
use memcgsim_model::MachineConfig;

/// One key of /proc/vmstat.
pub fn vmstat(sys: &mut System, key: &str) -> u64 {
    let text = sys.read("/proc/vmstat").unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{key} in /proc/vmstat"))
}

/// A machine with these `machine` keys, the rest default.
pub fn machine(keys: &[(&str, &str)]) -> System {
    let mut cfg = MachineConfig::default();
    for (k, v) in keys {
        cfg.set(k, v).unwrap();
    }
    System::new(cfg).unwrap()
}
