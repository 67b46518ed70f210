//! `memcgsim bench`: simulated page events per second for a hit-dominated pattern and for a
//! fault+reclaim churn, and resident bytes per simulated frame. Wall-clock figures are
//! measured here, in the front end; the model itself never reads a clock.

use std::time::Instant;

use memcgsim_cgroupfs::{SpawnOpts, System, WaitResult};
use memcgsim_model::{MachineConfig, Stat};

const HOUR_NS: u64 = 3_600_000_000_000;

fn boot(memory: &str, swap: &str) -> System {
    let mut cfg = MachineConfig::default();
    cfg.set("memory", memory).expect("valid size");
    cfg.set("swap", swap).expect("valid size");
    System::new(cfg).expect("valid machine")
}

/// Run one anon task to completion; returns (wall seconds, page events).
fn run_anon(sys: &mut System, cgroup: &str, args: &[&str]) -> (f64, u64) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let prog = memcgsim_workloads::build("anon", &args).expect("valid workload");
    let m = &sys.machine;
    let before = m.global_stat(Stat::Pgfault)
        + m.global_stat(Stat::PgscanDirect)
        + m.global_stat(Stat::PgscanKswapd);
    let t = Instant::now();
    let pid = sys
        .spawn(cgroup, SpawnOpts::default(), prog)
        .expect("spawn");
    let r = sys.wait(pid, false, HOUR_NS).expect("task finishes");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(r, WaitResult::Ended(memcgsim_model::TaskOutcome::Exited(0)));
    let m = &sys.machine;
    let after = m.global_stat(Stat::Pgfault)
        + m.global_stat(Stat::PgscanDirect)
        + m.global_stat(Stat::PgscanKswapd);
    (secs, after - before)
}

fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Print the benchmark figures. `scale` multiplies the work (1 = the documented figures).
pub fn run(scale: u64) -> i32 {
    let scale = scale.max(1);
    println!("memcgsim bench (scale {scale})");

    // 1. Hit-dominated: fault 256 MiB in once, then touch it again and again. The hit rate
    //    is the difference between a run with many passes and a run with one.
    let passes = 400 * scale;
    let mut sys = boot("1G", "0");
    let (t1, _) = run_anon(&mut sys, "/", &["256M"]);
    let mut sys = boot("1G", "0");
    let p = passes.to_string();
    let (tn, _) = run_anon(&mut sys, "/", &["256M", "--passes", &p]);
    let hits = 65536 * (passes - 1);
    let hit_rate = hits as f64 / (tn - t1).max(1e-9);
    println!(
        "hit-dominated      {:>12.0} page events/s  ({hits} hits over {} passes of 256 MiB)",
        hit_rate, passes
    );

    // 2. Fault + reclaim churn: a 400M-limited group touches 1000M twice with swap (the
    //    seed 002 pagetest); events are faults plus pages scanned by reclaim.
    let mut total_events = 0u64;
    let mut total_secs = 0f64;
    for _ in 0..scale {
        let mut sys = boot("2G", "2G");
        sys.mkdir("/pagetest").expect("mkdir");
        sys.write("/pagetest/memory.max", "400M").expect("limit");
        let (secs, events) = run_anon(&mut sys, "/pagetest", &["1000M", "--passes", "2"]);
        total_events += events;
        total_secs += secs;
    }
    println!(
        "fault+reclaim churn{:>12.0} page events/s  ({total_events} faults and scanned pages)",
        total_events as f64 / total_secs.max(1e-9)
    );

    // 3. Memory: resident bytes per simulated frame of a booted 16 GiB machine.
    let before = rss_bytes();
    let sys = boot("16G", "0");
    let after = rss_bytes();
    let frames = sys.machine.totalram_pages;
    match (before, after) {
        (Some(b), Some(a)) => println!(
            "resident memory    {:>12.1} bytes per simulated frame ({} frames; metadata {} B/frame + free list 4 B/frame)",
            (a.saturating_sub(b)) as f64 / frames as f64,
            frames,
            memcgsim_model::page_cgroup::Frames::BYTES_PER_FRAME
        ),
        _ => println!("resident memory    unavailable (no /proc/self/statm)"),
    }
    drop(sys);
    0
}
