//! The `stats` part (seed 003): the hit-dominated and churn rates under each statistics
//! scheme, in a child group so every update has an ancestor to reach, and the wall-clock
//! time of experiments/seed003/nested-build (two kernel builds in a nested tree, memory.stat
//! read once a second). The schemes alternate and each keeps its best of three, so the
//! host's noise hits all alike; the ratio is against `exact`.

use std::time::Instant;

use super::meter::{Meter, Samples};
use super::rates::{churn_run, hit_rate};

/// What the part's labels mean.
pub const LEGEND: &[&str] = &[
    "stats: the machine's statistics scheme (stats=exact, legacy or rstat)",
    "hit-dominated, churn: the figures of the hits and churn parts (the hits in a child group",
    "  /bench); nested build: wall-clock seconds of experiments/seed003/nested-build (less is",
    "  faster); ratio: against stats=exact",
];

/// The seed 003 nested-build experiment's script.
const NESTED_BUILD: &str = include_str!("../../experiments/seed003/nested-build/nested-build.mcg");

/// The schemes, `exact` (the ratios' base) first.
const SCHEMES: [&str; 3] = ["exact", "legacy", "rstat"];

/// Rounds; each scheme keeps its best.
const ROUNDS: usize = 3;

/// Runs of the part.
pub fn runs(scale: u64) -> u64 {
    (ROUNDS * SCHEMES.len()) as u64 * (2 + scale)
}

/// Wall-clock seconds of one run of the nested-build script under `stats`.
fn nested_build_secs(stats: &str) -> f64 {
    let mut it = memcgsim_script::Interpreter::new("nested-build.mcg");
    it.set_machine_overrides(vec![("stats".into(), stats.into())]);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let t = Instant::now();
    let status = it.run(NESTED_BUILD, &mut out, &mut err);
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(status, 0, "{}", String::from_utf8_lossy(&err));
    secs
}

/// The part: one row per scheme.
pub fn run(scale: u64, m: &mut Meter) {
    m.say(
        "statistics schemes: page events per wall-clock second, in millions, and seconds of \
         the nested build; best of 3; ratio against stats=exact",
    );
    m.say(format_args!(
        "{:<7} {:>14} {:>7} {:>14} {:>7} {:>13} {:>7}",
        "stats", "hit-dominated", "ratio", "churn", "ratio", "nested build", "ratio"
    ));
    // Per scheme: hit rate, churn rate, build seconds.
    let mut runs: [[Samples; 3]; 3] = Default::default();
    for _ in 0..ROUNDS {
        for (scheme, r) in SCHEMES.iter().zip(runs.iter_mut()) {
            let keys = [("stats", *scheme)];
            let hits = m.run(&format!("{scheme} hit-dominated"), || {
                hit_rate(scale, &keys, "/bench").1
            });
            r[0].push(hits / 1e6);
            for _ in 0..scale {
                let (_, rate, _) = m.run(&format!("{scheme} churn"), || churn_run(&keys));
                r[1].push(rate / 1e6);
            }
            r[2].push(m.run(&format!("{scheme} nested build"), || {
                nested_build_secs(scheme)
            }));
        }
    }
    let best = |r: &[Samples; 3]| [r[0].max(), r[1].max(), r[2].min()];
    let base = best(&runs[0]);
    for (scheme, r) in SCHEMES.iter().zip(&runs) {
        let b = best(r);
        m.say(format_args!(
            "{scheme:<7} {:>14.1} {:>6.1}% {:>14.2} {:>6.1}% {:>12.2}s {:>6.1}%",
            b[0],
            100.0 * b[0] / base[0].max(1e-9),
            b[1],
            100.0 * b[1] / base[1].max(1e-9),
            b[2],
            100.0 * b[2] / base[2].max(1e-9)
        ));
    }
    for (scheme, r) in SCHEMES.iter().zip(&runs) {
        m.check(format_args!("{scheme} hit-dominated"), "M/s", &r[0]);
        m.check(format_args!("{scheme} churn"), "M/s", &r[1]);
        m.check(format_args!("{scheme} nested build"), "s", &r[2]);
    }
}
