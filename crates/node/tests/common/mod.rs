//! What an imported node's run is held to: each group's memory.current, memory.swap.current
//! and memory.stat composition within 5 % of the snapshot's (1M for the small figures).

use memcgsim_node::{Imported, Snapshot};

/// The figures that differ by more than the import promises, one line each (empty: none).
pub fn differences(
    snap: &Snapshot,
    imp: &Imported,
    r: &memcgsim_experiment::RunResult,
) -> Vec<String> {
    let mut bad = Vec::new();
    for t in &imp.groups {
        let got = |key: &str| r.series.last(&t.path, key).unwrap_or(0);
        let mut check = |what: &str, want: u64, got: u64| {
            let slack = (want / 20).max(1 << 20);
            if want.abs_diff(got) > slack {
                bad.push(format!(
                    "{} {what}: snapshot {want}, imported {got}",
                    t.path
                ));
            }
        };
        check("memory.current", t.current, got("memory.current"));
        for k in [
            "anon",
            "file",
            "shmem",
            "kernel",
            "active_file",
            "inactive_file",
            "anon_thp",
        ] {
            let want = t.stat.get(k).copied().unwrap_or(0);
            check(k, want, got(&format!("memory.stat:{k}")));
        }
        let swap = snap
            .group(&t.path)
            .and_then(|g| g.number("memory.swap.current", "snapshot").ok().flatten())
            .unwrap_or(0);
        check("memory.swap.current", swap, got("memory.swap.current"));
    }
    bad
}
