//! The `fault-overhead` part: what per-memcg dirty accounting costs the simulator on seed
//! 001's fault benchmark (its fault-overhead table). s_read, s_write: one fault-bench task;
//! p_read, p_write: 16 tasks, a file each; dd: 1 GiB written, every page newly dirtied; each
//! in the root and in a child group, without per-memcg dirty accounting (`dirty=global`, the
//! seed's "w/ memcg" row) and with it (`dirty=seed001`, "all patches"): simulated faults per
//! wall-clock second. The two configurations alternate and each cell keeps its best of three
//! runs, so the host's noise hits both alike; runs of a cell that disagree are warned about.

use std::time::Instant;

use memcgsim_cgroupfs::{SpawnOpts, System, WaitResult};
use memcgsim_model::Stat;

use super::machine::HOUR_NS;
use super::meter::{Meter, Samples};

/// What the part's labels mean.
pub const LEGEND: &[&str] = &[
    "group: root = the tasks run in the root cgroup, child = in the child group /A",
    "mode: s_read, s_write = one fault-bench task faulting its file in for reading or writing,",
    "  10 M x scale times; p_read, p_write = 16 such tasks at once, a file each;",
    "  dd = dd of 1 GiB x scale, every page newly dirtied (pages written per second)",
    "off = dirty=global (no per-memcg dirty accounting), on = dirty=seed001;",
    "  on/off = on as a percentage of off (100% = the accounting costs nothing)",
];

/// Rounds; each configuration keeps its best.
const ROUNDS: usize = 3;

/// The table's rows: (label, write, tasks); dd comes after them.
const MODES: [(&str, bool, u64); 4] = [
    ("s_read", false, 1),
    ("s_write", true, 1),
    ("p_read", false, 16),
    ("p_write", true, 16),
];

/// The groups the rows run in: (label, cgroup).
const GROUPS: [(&str, &str); 2] = [("root", "/"), ("child", "/A")];

/// The accounting configurations: (column, `dirty=` value).
const CONFIGS: [(&str, &str); 2] = [("off", "global"), ("on", "seed001")];

/// Runs of the part.
pub fn runs(_scale: u64) -> u64 {
    (GROUPS.len() * (MODES.len() + 1) * ROUNDS * CONFIGS.len()) as u64
}

/// Run `progs` (workload, args) to completion in `cgroup` of a fresh 16-CPU cgroup v1
/// machine with 4G under `dirty`; returns the wall seconds and the machine.
fn run_cell(dirty: &str, cgroup: &str, progs: &[(&str, Vec<String>)]) -> (f64, System) {
    let mut cfg = super::machine::default_config();
    for (k, v) in [
        ("memory", "4G"),
        ("swap", "0"),
        ("cpus", "16"),
        ("cgroup", "v1"),
        ("dirty", dirty),
    ] {
        cfg.set(k, v).expect("valid machine key");
    }
    let mut sys = System::new(cfg).expect("valid machine");
    if cgroup != "/" {
        sys.mkdir(cgroup).expect("mkdir");
    }
    let t = Instant::now();
    let pids: Vec<_> = progs
        .iter()
        .map(|(w, args)| {
            let prog = memcgsim_workloads::build(w, args).expect("valid workload");
            sys.spawn(cgroup, SpawnOpts::default(), prog)
                .expect("spawn")
        })
        .collect();
    for pid in pids {
        let r = sys.wait(pid, false, HOUR_NS).expect("task finishes");
        assert_eq!(r, WaitResult::Ended(memcgsim_model::TaskOutcome::Exited(0)));
    }
    (t.elapsed().as_secs_f64(), sys)
}

/// One cell of the table: `tasks` copies of fault-bench, a file each; returns (wall seconds,
/// simulated faults).
fn fault_cell(dirty: &str, cgroup: &str, write: bool, tasks: u64, iterations: u64) -> (f64, u64) {
    let mode = if write { "write" } else { "read" };
    let progs: Vec<_> = (0..tasks)
        .map(|i| {
            let args = [
                "--mode".to_string(),
                mode.to_string(),
                "--iterations".to_string(),
                iterations.to_string(),
                "--file".to_string(),
                format!("foo.{i}"),
            ];
            ("fault-bench", args.to_vec())
        })
        .collect();
    let (secs, sys) = run_cell(dirty, cgroup, &progs);
    (secs, sys.machine.global_stat(Stat::Pgfault))
}

/// dd of `size` MiB: every page written is newly dirtied and accounted. Returns (wall
/// seconds, pages written).
fn dd_cell(dirty: &str, cgroup: &str, size: u64) -> (f64, u64) {
    let (secs, _) = run_cell(dirty, cgroup, &[("dd", vec![format!("{size}M")])]);
    (secs, size * 256)
}

/// Print one row from the runs of both configurations (millions per second), and note them
/// for the noise warning.
fn row(m: &mut Meter, group: &str, mode: &str, runs: &[Samples; 2]) {
    let (off, on) = (runs[0].max(), runs[1].max());
    m.say(format_args!(
        "{group:<6} {mode:<8} {off:>9.2} {on:>9.2} {:>6.1}%",
        100.0 * on / off.max(1e-9)
    ));
    for ((config, _), s) in CONFIGS.iter().zip(runs) {
        m.check(format_args!("{group} {mode} {config}"), "M/s", s);
    }
}

/// The part: the table of seed 001's fault benchmark, accounting off against on.
pub fn run(scale: u64, m: &mut Meter) {
    m.say(format_args!(
        "fault overhead: simulated faults (dd: pages written) per wall-clock second, in \
         millions, best of {ROUNDS}; accounting off = dirty=global, on = dirty=seed001"
    ));
    m.say(format_args!(
        "{:<6} {:<8} {:>9} {:>9} {:>7}",
        "group", "mode", "off", "on", "on/off"
    ));
    for (group, cgroup) in GROUPS {
        for (mode, write, tasks) in MODES {
            let iterations = 10_000_000 * scale / tasks;
            let mut runs: [Samples; 2] = Default::default();
            for _ in 0..ROUNDS {
                for ((config, dirty), s) in CONFIGS.iter().zip(runs.iter_mut()) {
                    let (secs, faults) = m.run(&format!("{group} {mode} {config}"), || {
                        fault_cell(dirty, cgroup, write, tasks, iterations)
                    });
                    s.push(faults as f64 / secs.max(1e-9) / 1e6);
                }
            }
            row(m, group, mode, &runs);
        }
        let mut runs: [Samples; 2] = Default::default();
        for _ in 0..ROUNDS {
            for ((config, dirty), s) in CONFIGS.iter().zip(runs.iter_mut()) {
                let (secs, pages) = m.run(&format!("{group} dd {config}"), || {
                    dd_cell(dirty, cgroup, 1024 * scale)
                });
                s.push(pages as f64 / secs.max(1e-9) / 1e6);
            }
        }
        row(m, group, "dd", &runs);
    }
}
