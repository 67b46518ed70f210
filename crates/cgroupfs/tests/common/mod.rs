//! Helpers shared by the cgroupfs crate's integration tests.

use memcgsim_cgroupfs::{SpawnOpts, System};
use memcgsim_model::{MachineConfig, Pid};

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

/// Start the workload `name ARGS...` in `cgroup`.
pub fn spawn(sys: &mut System, cgroup: &str, name: &str, args: &[&str]) -> Pid {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let prog = memcgsim_workloads::build(name, &args).unwrap();
    sys.spawn(cgroup, SpawnOpts::default(), prog).unwrap()
}
