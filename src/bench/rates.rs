//! The `hits` and `churn` parts, and the two rates other parts measure again under each
//! design: the hit-dominated rate (page hits per wall-clock second of a task touching memory
//! it already has) and the fault+reclaim churn rate (faults and pages scanned per
//! wall-clock second of seed 002's pagetest).

use memcgsim_cgroupfs::System;

use super::machine::{boot_with, run_anon};
use super::meter::{Meter, Samples};

/// What the `hits` part's figure means.
pub const HITS_LEGEND: &[&str] = &[
    "hit-dominated: one task faults 256 MiB of anon in, then touches it 400 x scale times;",
    "  the rate counts page hits only (the time of that run less that of a run of one pass)",
];

/// What the `churn` part's figure means.
pub const CHURN_LEGEND: &[&str] = &[
    "fault+reclaim churn: seed 002's pagetest, 1000M of anon touched twice in a group limited",
    "  to 400M, with 2G of swap, scale times; events are faults plus pages scanned by reclaim",
];

/// The hit-dominated rate: (page hits, hits per wall-clock second) of a task in `cgroup` of a
/// machine with `keys`.
pub fn hit_rate(scale: u64, keys: &[(&str, &str)], cgroup: &str) -> (u64, f64) {
    let passes = 400 * scale;
    let boot_in = |keys| {
        let mut sys = boot_with("1G", "0", keys);
        if cgroup != "/" {
            sys.mkdir(cgroup).expect("mkdir");
        }
        sys
    };
    let mut sys = boot_in(keys);
    let (t1, _) = run_anon(&mut sys, cgroup, &["256M"]);
    let mut sys = boot_in(keys);
    let p = passes.to_string();
    let (tn, _) = run_anon(&mut sys, cgroup, &["256M", "--passes", &p]);
    let hits = 65536 * (passes - 1);
    (hits, hits as f64 / (tn - t1).max(1e-9))
}

/// Seed 002's pagetest on a machine with `keys`: (events, events per wall-clock second, the
/// machine after the run).
pub fn churn_run(keys: &[(&str, &str)]) -> (u64, f64, System) {
    let mut sys = boot_with("2G", "2G", keys);
    sys.mkdir("/pagetest").expect("mkdir");
    sys.write("/pagetest/memory.max", "400M").expect("limit");
    let (secs, events) = run_anon(&mut sys, "/pagetest", &["1000M", "--passes", "2"]);
    (events, events as f64 / secs.max(1e-9), sys)
}

/// Runs of the `hits` part.
pub fn hits_runs(_scale: u64) -> u64 {
    1
}

/// The `hits` part: fault 256 MiB in once, then touch it again and again. The hit rate is
/// the difference between a run with many passes and a run with one.
pub fn hits(scale: u64, m: &Meter) {
    let passes = 400 * scale;
    let (hits, rate) = m.run("256 MiB", || hit_rate(scale, &[], "/"));
    m.say(format_args!(
        "hit-dominated      {rate:>12.0} page events/s  ({hits} hits over {passes} passes of 256 MiB)"
    ));
}

/// Runs of the `churn` part.
pub fn churn_runs(scale: u64) -> u64 {
    scale
}

/// The `churn` part: a 400M-limited group touches 1000M twice with swap (seed 002's
/// pagetest), `scale` times; the rate is all the events over all the time.
pub fn churn(scale: u64, m: &mut Meter) {
    let mut total_events = 0u64;
    let mut total_secs = 0f64;
    let mut rates = Samples::default();
    for k in 0..scale {
        let (events, rate, _) = m.run(&format!("pagetest {}", k + 1), || churn_run(&[]));
        total_events += events;
        total_secs += events as f64 / rate;
        rates.push(rate / 1e6);
    }
    m.say(format_args!(
        "fault+reclaim churn{:>12.0} page events/s  ({total_events} faults and scanned pages)",
        total_events as f64 / total_secs.max(1e-9)
    ));
    m.check("fault+reclaim churn", "M page events/s", &rates);
}
