//! The `growth` part: whether the model's cost grows faster than what it simulates. For each
//! dimension of a run (file size written, groups, tasks, mapped pages, machine size: its boot
//! and a fixed task on it) the same work is measured at three sizes a factor of 10 apart, in
//! wall-clock time per unit of work (a MiB written, a group, a task, a page, a GiB booted, a
//! run). A cost linear in what is simulated shows
//! as a flat row; a row whose cost per unit grows by more than [`GROWTH_LIMIT`] from one size
//! to the next is flagged `GROWS`, with a warning on standard error.
//!
//! Each size runs on a machine of its own, booted outside the time measured; small sizes
//! are repeated (the best run counts) until they have taken [`MIN_SECS`] or
//! [`MAX_REPEATS`] runs, so a warm-up or a noisy moment weighs less.
//!
//! The machine boot row starts at 8 GiB: a machine of up to 4 GiB has no Normal zone,
//! while a bigger one's first allocation comes from its Normal zone, above 4 GiB, and so
//! writes the frame metadata of every frame below it once (page_cgroup.rs keeps the
//! metadata of the frames below the highest one handed out). Across that boundary the cost
//! per GiB would compare zone layouts, not growth. The row also runs first: a boot's arrays
//! are then fresh memory of the host at every size, where after the other rows the smallest
//! size's could be memory they freed, already mapped, and cost it a tenth of the others'.
use std::time::Instant;

use memcgsim_cgroupfs::{SpawnOpts, System, WaitResult};
use memcgsim_model::TaskOutcome;

use super::machine::{boot, HOUR_NS};
use super::meter::{Meter, Samples};

/// What the part's labels mean.
pub const LEGEND: &[&str] = &[
    "each row: one dimension of a run at three sizes a factor of 10 apart (x scale where the",
    "  dimension allows), in wall-clock µs per unit of work; flat when the model's cost is",
    "  linear in what it simulates; step: the largest ratio of a size's cost per unit to the",
    "  size before it; GROWS: a step above 1.5 (warned on standard error)",
    "machine boot: a machine of SIZE booted; unit: a GiB of it (not scaled; from 8G, so that",
    "  every size has a Normal zone above the 4G of DMA and DMA32; run first, on fresh memory)",
    "file size: one task writes a file of SIZE (dd, 1M blocks) in a group whose memory.max is",
    "  32M, so the page cache is written back and reclaimed as it goes; unit: a MiB written",
    "groups: SIZE sibling groups created, each charged 64 KiB of page cache by a task of its own",
    "  run to its exit; unit: a group (at most 65,535 memcg ids: not scaled)",
    "tasks: SIZE tasks started at once in one group, each writing 64 KiB of anon, all run to",
    "  their exit; unit: a task",
    "mapped pages: one task faults SIZE of anon in and writes it once more; unit: a 4 KiB page",
    "machine size: a task writing 64M of anon run on a machine of SIZE; unit: a run (not",
    "  scaled)",
];

/// How much a cost per unit may grow from one size to the next (10 times more work) before
/// the row is flagged.
pub const GROWTH_LIMIT: f64 = 1.5;
/// A size is repeated until its runs have taken this many wall-clock seconds...
const MIN_SECS: f64 = 0.3;
/// ... or this many runs.
const MAX_REPEATS: usize = 3;

/// A dimension of a run, measured at three sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dimension {
    FileSize,
    Groups,
    Tasks,
    MappedPages,
    MachineBoot,
    MachineSize,
}

impl Dimension {
    /// In the order they run: machine boot first (see the module's comment).
    const ALL: [Dimension; 6] = [
        Dimension::MachineBoot,
        Dimension::FileSize,
        Dimension::Groups,
        Dimension::Tasks,
        Dimension::MappedPages,
        Dimension::MachineSize,
    ];

    fn name(self) -> &'static str {
        match self {
            Dimension::FileSize => "file size",
            Dimension::Groups => "groups",
            Dimension::Tasks => "tasks",
            Dimension::MappedPages => "mapped pages",
            Dimension::MachineBoot => "machine boot",
            Dimension::MachineSize => "machine size",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Dimension::FileSize => "MiB",
            Dimension::Groups => "group",
            Dimension::Tasks => "task",
            Dimension::MappedPages => "page",
            Dimension::MachineBoot => "GiB",
            Dimension::MachineSize => "run",
        }
    }

    /// The three sizes, in the dimension's own measure (MiB, groups, tasks, MiB, GiB), and
    /// the units of work each is.
    fn sizes(self, scale: u64) -> [(u64, u64); 3] {
        let steps = |base: u64, units_per: u64| {
            [1, 10, 100].map(|k| (base * k * scale, base * k * scale * units_per))
        };
        match self {
            // 64M, 640M, 6.4G written.
            Dimension::FileSize => steps(64, 1),
            Dimension::Groups => [600, 6_000, 60_000].map(|n| (n, n)),
            Dimension::Tasks => steps(100, 1),
            // 16M, 160M, 1.6G of anon: 4,096 pages a step of 16M.
            Dimension::MappedPages => steps(16, 256),
            // Every size has a Normal zone (see the module's comment).
            Dimension::MachineBoot => [8, 80, 800].map(|g| (g, g)),
            Dimension::MachineSize => [1, 10, 100].map(|g| (g, 1)),
        }
    }

    /// A size as the table prints it.
    fn label(self, size: u64) -> String {
        match self {
            Dimension::FileSize | Dimension::MappedPages => mib_label(size),
            Dimension::MachineBoot | Dimension::MachineSize => format!("{size}G"),
            Dimension::Groups | Dimension::Tasks => size.to_string(),
        }
    }

    /// Boot what the size needs, then run its work: the wall-clock seconds of the work.
    fn measure(self, size: u64) -> Result<f64, String> {
        match self {
            Dimension::FileSize => file_size(size),
            Dimension::Groups => groups(size),
            Dimension::Tasks => tasks(size),
            Dimension::MappedPages => mapped_pages(size),
            Dimension::MachineBoot => machine_boot(size),
            Dimension::MachineSize => machine_size(size),
        }
    }
}

/// `SIZE` in MiB as a size argument reads best: 64M, 640M, 6.4G, 16M.
fn mib_label(mib: u64) -> String {
    if mib >= 1024 && mib.is_multiple_of(1024) {
        format!("{}G", mib / 1024)
    } else if mib >= 1000 {
        format!("{:.1}G", mib as f64 / 1000.0)
    } else {
        format!("{mib}M")
    }
}

/// The ratio of each size's cost per unit to the size before it.
pub fn steps(costs: &[f64]) -> Vec<f64> {
    costs
        .windows(2)
        .map(|w| {
            if w[0] > 0.0 {
                w[1] / w[0]
            } else if w[1] > 0.0 {
                f64::INFINITY
            } else {
                1.0
            }
        })
        .collect()
}

/// The flag rule: a row grows when some step's cost per unit is more than [`GROWTH_LIMIT`]
/// times the step before.
pub fn grows(costs: &[f64]) -> bool {
    steps(costs).iter().any(|&r| r > GROWTH_LIMIT)
}

fn run_task(sys: &mut System, pid: memcgsim_model::program::Pid) -> Result<(), String> {
    let r = sys.wait(pid, false, HOUR_NS)?;
    if r != WaitResult::Ended(TaskOutcome::Exited(0)) {
        return Err(format!("task {pid} ended {r:?}"));
    }
    Ok(())
}

fn spawn(
    sys: &mut System,
    cgroup: &str,
    workload: &str,
    args: &[String],
) -> Result<memcgsim_model::program::Pid, String> {
    let prog = memcgsim_workloads::build(workload, args)?;
    sys.spawn(cgroup, SpawnOpts::default(), prog)
        .map_err(|e| format!("spawn {workload} in {cgroup}: {e}"))
}

fn limited_group(sys: &mut System, path: &str, max: &str) -> Result<(), String> {
    sys.mkdir(path).map_err(|e| format!("mkdir {path}: {e}"))?;
    let file = format!("{path}/memory.max");
    sys.write(&file, max).map_err(|e| format!("{file}: {e}"))?;
    Ok(())
}

/// One task writes `mib` MiB through the page cache of a 32M-limited group.
fn file_size(mib: u64) -> Result<f64, String> {
    let mut sys = boot("2G", "0");
    limited_group(&mut sys, "/w", "32M")?;
    let t = Instant::now();
    let args = [format!("{mib}M"), "--file".into(), "out".into()];
    let pid = spawn(&mut sys, "/w", "dd", &args)?;
    run_task(&mut sys, pid)?;
    Ok(t.elapsed().as_secs_f64())
}

/// `n` groups made and each charged 64 KiB of page cache by a task run to its exit.
fn groups(n: u64) -> Result<f64, String> {
    let mut sys = boot("16G", "0");
    let t = Instant::now();
    for i in 0..n {
        let g = format!("/g{i}");
        sys.mkdir(&g).map_err(|e| format!("mkdir {g}: {e}"))?;
        let args = ["64K".to_string(), "--file".into(), format!("f{i}")];
        let pid = spawn(&mut sys, &g, "pagecache", &args)?;
        run_task(&mut sys, pid)?;
    }
    Ok(t.elapsed().as_secs_f64())
}

/// `n` tasks started at once in one group, each writing 64 KiB of anon, run to their exit.
fn tasks(n: u64) -> Result<f64, String> {
    let mut sys = boot("4G", "0");
    sys.mkdir("/t").map_err(|e| format!("mkdir /t: {e}"))?;
    let t = Instant::now();
    let args = ["64K".to_string()];
    let pids = (0..n)
        .map(|_| spawn(&mut sys, "/t", "anon", &args))
        .collect::<Result<Vec<_>, _>>()?;
    for pid in pids {
        run_task(&mut sys, pid)?;
    }
    Ok(t.elapsed().as_secs_f64())
}

/// One task faults `mib` MiB of anon in and writes it once more.
fn mapped_pages(mib: u64) -> Result<f64, String> {
    let mut sys = boot(&format!("{}M", (2 * mib).max(1024)), "0");
    let t = Instant::now();
    let args = [format!("{mib}M"), "--passes".into(), "2".into()];
    let pid = spawn(&mut sys, "/", "anon", &args)?;
    run_task(&mut sys, pid)?;
    Ok(t.elapsed().as_secs_f64())
}

/// A machine of `gib` GiB booted.
fn machine_boot(gib: u64) -> Result<f64, String> {
    let t = Instant::now();
    let sys = boot(&format!("{gib}G"), "0");
    let secs = t.elapsed().as_secs_f64();
    drop(sys);
    Ok(secs)
}

/// A task writing 64M of anon run on a machine of `gib` GiB.
fn machine_size(gib: u64) -> Result<f64, String> {
    let mut sys = boot(&format!("{gib}G"), "0");
    let t = Instant::now();
    let pid = spawn(&mut sys, "/", "anon", &["64M".to_string()])?;
    run_task(&mut sys, pid)?;
    Ok(t.elapsed().as_secs_f64())
}

/// The best wall-clock seconds of a size's runs, repeated while they are quick.
fn best_of(d: Dimension, size: u64) -> Result<f64, String> {
    let mut runs = Samples::default();
    let mut spent = 0.0;
    while runs.runs() < MAX_REPEATS && (runs.runs() == 0 || spent < MIN_SECS) {
        let secs = d.measure(size)?;
        spent += secs;
        runs.push(secs);
    }
    Ok(runs.min())
}

/// Runs of the part: one per size of each dimension (a quick size's repeats are one).
pub fn runs(_scale: u64) -> u64 {
    (Dimension::ALL.len() * 3) as u64
}

/// The part: one row per dimension.
pub fn run(scale: u64, m: &Meter) -> Result<(), String> {
    m.say("growth with what is simulated (wall-clock µs per unit of work at three sizes a factor of 10 apart):");
    m.say(format_args!(
        "  {:<13} {:<6} {:>7} {:>7} {:>7} {:>11} {:>11} {:>11} {:>6}",
        "dimension",
        "unit",
        "size 1",
        "size 2",
        "size 3",
        "µs/unit 1",
        "µs/unit 2",
        "µs/unit 3",
        "step"
    ));
    for d in Dimension::ALL {
        let sizes = d.sizes(scale);
        let mut costs = [0f64; 3];
        for (cost, &(size, units)) in costs.iter_mut().zip(&sizes) {
            let what = format!("{} {}", d.name(), d.label(size));
            let best = m.run(&what, || best_of(d, size))?;
            *cost = best * 1e6 / units as f64;
        }
        let worst = steps(&costs).into_iter().fold(0.0, f64::max);
        let flag = if grows(&costs) { " GROWS" } else { "" };
        m.say(format_args!(
            "  {:<13} {:<6} {:>7} {:>7} {:>7} {:>11.3} {:>11.3} {:>11.3} {:>5.2}x{flag}",
            d.name(),
            d.unit(),
            d.label(sizes[0].0),
            d.label(sizes[1].0),
            d.label(sizes[2].0),
            costs[0],
            costs[1],
            costs[2],
            worst
        ));
        if !flag.is_empty() {
            m.warn(format_args!(
                "growth: {}: the cost per {} grows {worst:.2}x in a step of 10x (more than \
                 {GROWTH_LIMIT}x): {:.3}, {:.3}, {:.3} µs at {}, {}, {}",
                d.name(),
                d.unit(),
                costs[0],
                costs[1],
                costs[2],
                d.label(sizes[0].0),
                d.label(sizes[1].0),
                d.label(sizes[2].0),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_grows_when_one_step_is_over_the_limit() {
        // Flat, falling (warm-up), and growing up to the limit: not flagged.
        assert!(!grows(&[2.0, 2.0, 2.0]));
        assert!(!grows(&[10.0, 3.0, 2.9]));
        assert!(!grows(&[1.0, 1.5, 2.25]));
        // One step over it, the first or the last: flagged.
        assert!(grows(&[1.0, 1.51, 1.51]));
        assert!(grows(&[4.0, 4.0, 6.5]));
        // Linear work per unit (a quadratic path) grows 10x a step.
        assert!(grows(&[1.0, 10.0, 100.0]));
        // A size too quick to measure, then one that is not.
        assert!(grows(&[0.0, 1.0, 1.0]));
        assert!(!grows(&[0.0, 0.0, 0.0]));
        assert_eq!(steps(&[2.0, 3.0, 1.5]), vec![1.5, 0.5]);
    }

    #[test]
    fn sizes_are_a_factor_of_10_apart() {
        for d in Dimension::ALL {
            for scale in [1, 3] {
                let s = d.sizes(scale);
                assert_eq!(s[1].0, 10 * s[0].0, "{d:?}");
                assert_eq!(s[2].0, 10 * s[1].0, "{d:?}");
                if d != Dimension::MachineSize {
                    assert_eq!(s[2].1, 10 * s[1].1, "{d:?}");
                }
            }
        }
        assert_eq!(Dimension::FileSize.label(6400), "6.4G");
        assert_eq!(Dimension::FileSize.label(640), "640M");
        assert_eq!(Dimension::MappedPages.label(2048), "2G");
        // 1.6G of anon is 409,600 pages.
        assert_eq!(Dimension::MappedPages.sizes(1)[2].1, 409_600);
    }
}
