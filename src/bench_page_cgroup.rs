//! `memcgsim bench --only page-cgroup`: seed 004 in the simulator's own terms. The same three
//! workloads run with each design of the per-frame memcg lookup (`page_cgroup=flat|radix|
//! section`, crates/model/src/page_cgroup_store.rs): the hit-dominated pattern and seed 002's
//! pagetest churn of the other bench parts, and the trace replay of bench_trace.rs. Each
//! design keeps its best of five rounds (the designs alternate within a round, so the
//! host's noise falls on all of them alike), and the ratio is against flat. The bytes are
//! what the design spends on the lookup per frame of the machine (the flat array's memcg
//! field, the tree's nodes at their peak, the section table and the arrays allocated), on
//! the churn's 2 GiB machine and the trace's 4 GiB one, partly charged, and on a 1 GiB
//! machine whose frames were nearly all charged at once (850M of anon). The three designs simulate the same
//! run (the test suite checks their outputs are byte-identical); only the host's work
//! differs.

use memcgsim_model::page_cgroup_store::PcDesign;

use crate::bench::{boot_with, churn_run, hit_rate, run_anon};
use crate::bench_trace::{replay, write_zipf_trace, REQUESTS_PER_SCALE};

/// Rounds; each design keeps its best.
const ROUNDS: usize = 5;

/// Bytes per frame the machine's design spends on the memcg lookup.
fn bytes_per_frame(sys: &memcgsim_cgroupfs::System) -> f64 {
    let frames = &sys.machine.frames;
    frames.memcg_store().1 as f64 / frames.nr_frames().max(1) as f64
}

pub fn run(scale: u64) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
    let trace = tmp.path().join("zipf.oracleGeneral");
    write_zipf_trace(&trace, REQUESTS_PER_SCALE * scale)?;
    println!(
        "page_cgroup designs (seed 004): page events or requests per wall-clock second, in \
         millions; best of {ROUNDS}; ratio against flat; bytes of the memcg lookup per frame"
    );
    println!(
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
    );
    let designs = PcDesign::ALL;
    let mut best = [[0f64; 3]; 3];
    let mut bytes = [[0f64; 3]; 3];
    for (k, d) in designs.iter().enumerate() {
        let mut sys = boot_with("1G", "0", &[("page_cgroup", d.name())]);
        run_anon(&mut sys, "/", &["850M"]);
        bytes[k][2] = bytes_per_frame(&sys);
    }
    for _ in 0..ROUNDS {
        for (k, d) in designs.iter().enumerate() {
            let keys = [("page_cgroup", d.name())];
            best[k][0] = best[k][0].max(hit_rate(scale, &keys, "/bench").1 / 1e6);
            for _ in 0..scale {
                let (_, rate, sys) = churn_run(&keys);
                best[k][1] = best[k][1].max(rate / 1e6);
                bytes[k][0] = bytes_per_frame(&sys);
            }
            let r = replay(&trace, &keys)?;
            best[k][2] = best[k][2].max(r.requests as f64 / r.secs.max(1e-9) / 1e6);
            bytes[k][1] = bytes_per_frame(&r.sys);
        }
    }
    for (k, d) in designs.iter().enumerate() {
        let ratio = |i: usize| 100.0 * best[k][i] / best[0][i].max(1e-9);
        println!(
            "{:<8} {:>13.1} {:>6.1}% {:>7.2} {:>6.1}% {:>7.2} {:>6.1}% {:>10.2} {:>10.2} {:>12.2}",
            d.name(),
            best[k][0],
            ratio(0),
            best[k][1],
            ratio(1),
            best[k][2],
            ratio(2),
            bytes[k][0],
            bytes[k][1],
            bytes[k][2]
        );
    }
    Ok(())
}
