//! The `page-cgroup` part: seed 004 in the simulator's own terms. The same three workloads
//! run with each design of the per-frame memcg lookup (`page_cgroup=flat|radix|section`,
//! crates/model/src/page_cgroup_store.rs): the hit-dominated pattern and seed 002's pagetest
//! churn of the rates module, and the trace part's replay. Each design keeps its best of
//! five rounds (the designs alternate within a round, so the host's noise falls on all of
//! them alike), and the ratio is against flat. The bytes are what the design spends on the
//! lookup per frame of the machine (the flat array's memcg field, the tree's nodes at their
//! peak, the section table and the arrays allocated), on the churn's 2 GiB machine and the
//! trace's 4 GiB one, partly charged, and on a 1 GiB machine whose frames were nearly all
//! charged at once (850M of anon). The three designs simulate the same run (the test suite
//! checks their outputs are byte-identical); only the host's work differs.

use memcgsim_model::page_cgroup_store::PcDesign;

use super::machine::{boot_with, run_anon};
use super::meter::{Meter, Samples};
use super::rates::{churn_run, hit_rate};
use super::trace::{replay, write_zipf_trace, REQUESTS_PER_SCALE};

/// What the part's labels mean.
pub const LEGEND: &[&str] = &[
    "design: the per-frame memcg lookup, page_cgroup=flat (one array), radix (a tree) or section",
    "  (an array per memory section); ratio: against flat",
    "hit-dominated, churn: the figures of the hits and churn parts (the hits in a child group",
    "  /bench); trace: the trace part's replay, in requests",
    "B/frame 2G, 4G: bytes of the lookup per frame on the churn's 2 GiB machine and the trace's",
    "  4 GiB one; B/frame full: on a 1 GiB machine with 850M of anon charged",
];

/// Rounds; each design keeps its best.
const ROUNDS: usize = 5;

/// Runs of the part.
pub fn runs(scale: u64) -> u64 {
    let designs = PcDesign::ALL.len() as u64;
    1 + designs + ROUNDS as u64 * designs * (2 + scale)
}

/// Bytes per frame the machine's design spends on the memcg lookup.
fn bytes_per_frame(sys: &memcgsim_cgroupfs::System) -> f64 {
    let frames = &sys.machine.frames;
    frames.memcg_store().1 as f64 / frames.nr_frames().max(1) as f64
}

/// The part: one row per design.
pub fn run(scale: u64, m: &mut Meter) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
    let trace = tmp.path().join("zipf.oracleGeneral");
    m.run("writing the trace", || {
        write_zipf_trace(&trace, REQUESTS_PER_SCALE * scale)
    })?;
    m.say(format_args!(
        "page_cgroup designs (seed 004): page events or requests per wall-clock second, in \
         millions; best of {ROUNDS}; ratio against flat; bytes of the memcg lookup per frame"
    ));
    m.say(format_args!(
        "{:<8} {:>13} {:>7} {:>7} {:>7} {:>7} {:>7} {:>10} {:>10} {:>12}",
        "design",
        "hit-dominated",
        "ratio",
        "churn",
        "ratio",
        "trace",
        "ratio",
        "B/frame 2G",
        "B/frame 4G",
        "B/frame full"
    ));
    let designs = PcDesign::ALL;
    // Per design: the runs of the hit, churn and trace rates; the bytes per frame.
    let mut runs: [[Samples; 3]; 3] = Default::default();
    let mut bytes = [[0f64; 3]; 3];
    for (k, d) in designs.iter().enumerate() {
        bytes[k][2] = m.run(&format!("{} 850M charged", d.name()), || {
            let mut sys = boot_with("1G", "0", &[("page_cgroup", d.name())]);
            run_anon(&mut sys, "/", &["850M"]);
            bytes_per_frame(&sys)
        });
    }
    for _ in 0..ROUNDS {
        for (k, d) in designs.iter().enumerate() {
            let keys = [("page_cgroup", d.name())];
            let name = d.name();
            let hits = m.run(&format!("{name} hit-dominated"), || {
                hit_rate(scale, &keys, "/bench").1
            });
            runs[k][0].push(hits / 1e6);
            for _ in 0..scale {
                let (_, rate, sys) = m.run(&format!("{name} churn"), || churn_run(&keys));
                runs[k][1].push(rate / 1e6);
                bytes[k][0] = bytes_per_frame(&sys);
            }
            let r = m.run(&format!("{name} trace"), || replay(&trace, &keys))?;
            runs[k][2].push(r.requests as f64 / r.secs.max(1e-9) / 1e6);
            bytes[k][1] = bytes_per_frame(&r.sys);
        }
    }
    let best = |k: usize, i: usize| runs[k][i].max();
    for (k, d) in designs.iter().enumerate() {
        let ratio = |i: usize| 100.0 * best(k, i) / best(0, i).max(1e-9);
        m.say(format_args!(
            "{:<8} {:>13.1} {:>6.1}% {:>7.2} {:>6.1}% {:>7.2} {:>6.1}% {:>10.2} {:>10.2} {:>12.2}",
            d.name(),
            best(k, 0),
            ratio(0),
            best(k, 1),
            ratio(1),
            best(k, 2),
            ratio(2),
            bytes[k][0],
            bytes[k][1],
            bytes[k][2]
        ));
    }
    for (d, r) in designs.iter().zip(&runs) {
        for (figure, s) in ["hit-dominated", "churn", "trace"].iter().zip(r) {
            m.check(format_args!("{} {figure}", d.name()), "M/s", s);
        }
    }
    Ok(())
}
