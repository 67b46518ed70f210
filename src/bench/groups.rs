//! The `groups` part: how the model's costs grow with the number of memory
//! cgroups, up to 60,000 (the kernel allows 65,535 memcg ids). For 1,000, 10,000 and 60,000
//! sibling groups under the root: creating them (mkdir), charging each with 64 KiB of page
//! cache (one `pagecache 64K` task per group, run to its exit), one proactive reclaim from
//! the root that walks every group (memory.reclaim of a quarter of what they hold), and one
//! read of the root's memory.stat (rstat flushes every group the charges left pending).
//! Each phase is printed in wall-clock time per group, so growth no worse than linear shows
//! as a flat column; the process's resident memory per group is printed beside them.

use std::time::Instant;

use memcgsim_cgroupfs::{SpawnOpts, System, WaitResult};

use super::machine::HOUR_NS;
use super::meter::Meter;

/// What the part's labels mean.
pub const LEGEND: &[&str] = &[
    "groups: sibling groups under the root; mkdir: creating one; charge: a task reading 64 KiB",
    "  of page cache in it, run to its exit; reclaim walk: one memory.reclaim from the root of",
    "  a quarter of what all hold; stat read: one read of the root's memory.stat (an rstat",
    "  flush of every group); bytes/group: the process's growth per group",
];

/// Group counts measured.
pub const SIZES: [usize; 3] = [1_000, 10_000, 60_000];
/// Page cache each group's task reads in.
const PER_GROUP: &str = "64K";

/// Runs of the part.
pub fn runs(_scale: u64) -> u64 {
    SIZES.len() as u64
}

fn rss_bytes() -> u64 {
    super::machine::rss_bytes().unwrap_or(0)
}

/// Wall-clock seconds of one phase per group, in microseconds.
fn per_group_us(secs: f64, n: usize) -> f64 {
    secs * 1e6 / n as f64
}

/// One row: (create, charge, reclaim walk, stat read) in µs per group, and bytes per group.
fn row(n: usize) -> Result<([f64; 4], f64), String> {
    let mut cfg = super::machine::default_config();
    for (k, v) in [("memory", "16G"), ("swap", "0")] {
        cfg.set(k, v).map_err(|e| format!("machine {k}={v}: {e}"))?;
    }
    let mut sys = System::new(cfg).map_err(|e| format!("machine: {e}"))?;
    // The machine's own arrays are not the groups'.
    let rss0 = rss_bytes();
    let names: Vec<String> = (0..n).map(|i| format!("/g{i}")).collect();

    let t = Instant::now();
    for g in &names {
        sys.mkdir(g).map_err(|e| format!("mkdir {g}: {e}"))?;
    }
    let create = t.elapsed().as_secs_f64();

    let t = Instant::now();
    for (i, g) in names.iter().enumerate() {
        let args = [PER_GROUP.to_string(), "--file".into(), format!("f{i}")];
        let prog = memcgsim_workloads::build("pagecache", &args)?;
        let pid = sys
            .spawn(g, SpawnOpts::default(), prog)
            .map_err(|e| format!("spawn in {g}: {e}"))?;
        let r = sys.wait(pid, false, HOUR_NS)?;
        if r != WaitResult::Ended(memcgsim_model::TaskOutcome::Exited(0)) {
            return Err(format!("the task in {g} ended {r:?}"));
        }
    }
    let charge = t.elapsed().as_secs_f64();

    let quarter = n as u64 * 64 * 1024 / 4;
    let t = Instant::now();
    // memory.reclaim may fall short of the amount (EAGAIN); the walk is what is measured.
    let _ = sys.write("/memory.reclaim", &quarter.to_string());
    let walk = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let stat = sys
        .read("/memory.stat")
        .map_err(|e| format!("/memory.stat: {e}"))?;
    let read = t.elapsed().as_secs_f64();
    if stat.is_empty() {
        return Err("/memory.stat is empty".into());
    }
    let bytes = rss_bytes().saturating_sub(rss0) as f64 / n as f64;
    drop(sys);
    Ok((
        [
            per_group_us(create, n),
            per_group_us(charge, n),
            per_group_us(walk, n),
            per_group_us(read, n),
        ],
        bytes,
    ))
}

/// The part: one row per size.
pub fn run(m: &Meter) -> Result<(), String> {
    m.say("growth with the number of groups (wall-clock µs per group; resident bytes per group):");
    m.say(format_args!(
        "  {:>7} {:>9} {:>9} {:>12} {:>10} {:>12}",
        "groups", "mkdir", "charge", "reclaim walk", "stat read", "bytes/group"
    ));
    for n in SIZES {
        let (us, bytes) = m.run(&format!("{n} groups"), || row(n))?;
        m.say(format_args!(
            "  {:>7} {:>9.2} {:>9.2} {:>12.3} {:>10.3} {:>12.0}",
            n, us[0], us[1], us[2], us[3], bytes
        ));
    }
    Ok(())
}
