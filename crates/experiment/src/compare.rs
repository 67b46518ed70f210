//! A/B comparison: every variant over every seed, and per figure (per task: elapsed, user,
//! system, faults, I/O wait, throttling; per cgroup and for the machine: peak usage, swap
//! peak, faults, swap-ins and -outs, scanned and reclaimed pages, OOM kills, memory stall
//! time from the pressure totals) the min, max,
//! average and standard deviation of each variant, with each statistic's change against the
//! base variant's same statistic in percent (or, with `--ratio`, the statistic as a percentage
//! of the base's). A count's min and max print as integers, everything else with two
//! decimals. The machine also has the average swap usage and the counters of soft-limit
//! reclaim and reclaim walks (/proc/memcgsim/reclaim).
//!
//! The time series of each variant's run with the first seed are kept (out of
//! `compare.json`) for the overlay charts crate::results::write_comparison draws: one chart
//! per figure (memory, swap, fault and reclaim rates), a line per variant.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::runner::{
    run_variant, run_variant_with, CgroupSummary, Progress, RunResult, MACHINE_ROW,
};
use crate::scenario::Scenario;

/// min / max / avg / std of one variant's values of a figure (std is the sample standard
/// deviation, 0 for one run).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    pub min: f64,
    pub max: f64,
    pub avg: f64,
    pub std: f64,
    pub runs: usize,
}

/// Change of each statistic against the base variant's, in percent; `None` where the base
/// statistic is 0 and this one is not.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub avg: Option<f64>,
    pub std: Option<f64>,
}

/// One variant's line of a figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FigureRow {
    pub variant: String,
    /// One value per seed, in seed order.
    pub values: Vec<f64>,
    pub stats: Stats,
    /// Against the base variant; absent on the base's own line.
    pub change_pct: Option<Change>,
    /// Each statistic as a percentage of the base variant's (100 is equal); `None` in a
    /// statistic where the base's is 0; absent on the base's own line.
    pub ratio_pct: Option<Change>,
}

/// One figure: a title naming the quantity, its unit and its subject, and a line per variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    pub title: String,
    pub unit: String,
    pub rows: Vec<FigureRow>,
}

impl Figure {
    /// Is the figure a count (faults, pages, calls: no unit)?
    pub fn is_count(&self) -> bool {
        self.unit.is_empty()
    }
}

/// How the tasks of one `[[task]]` ended, per variant: outcome -> number of task runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcomes {
    pub task: String,
    pub by_variant: Vec<(String, BTreeMap<String, u64>)>,
}

/// The result of `memcgsim compare`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub scenario: String,
    pub description: String,
    pub base: String,
    /// The variants, base first.
    pub variants: Vec<String>,
    pub seeds: Vec<u64>,
    pub outcomes: Vec<Outcomes>,
    pub figures: Vec<Figure>,
    /// Print the brackets as a percentage of the base (`[100.8%]`) instead of the change
    /// (`[+0.8%]`). Only the text report depends on it.
    #[serde(skip)]
    pub ratio: bool,
    /// The run of each variant with the first seed, base first, whose time series the
    /// overlay charts draw. Not part of `compare.json`, which stays small.
    #[serde(skip)]
    pub first_seed_runs: Vec<RunResult>,
}

#[derive(Clone, Copy)]
enum Kind {
    Time,
    Size,
    Count,
}

fn stats(v: &[f64]) -> Stats {
    let n = v.len();
    if n == 0 {
        return Stats {
            min: 0.0,
            max: 0.0,
            avg: 0.0,
            std: 0.0,
            runs: 0,
        };
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let avg = v.iter().sum::<f64>() / n as f64;
    let std = if n > 1 {
        (v.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    Stats {
        min,
        max,
        avg,
        std,
        runs: n,
    }
}

fn pct(x: f64, base: f64) -> Option<f64> {
    if base == 0.0 {
        if x == 0.0 {
            Some(0.0)
        } else {
            None
        }
    } else {
        Some((x - base) / base * 100.0)
    }
}

/// A statistic as a percentage of the base's; `None` when the base's is 0.
fn ratio(x: f64, base: f64) -> Option<f64> {
    if base == 0.0 {
        None
    } else {
        Some(x / base * 100.0)
    }
}

/// The machine's swap usage averaged over the samples of a run (sum / number of samples,
/// rounded to the nearest byte).
fn swap_avg(r: &RunResult) -> Option<u64> {
    r.series.avg(MACHINE_ROW, "swap_used")
}

/// The machine figures from /proc/memcgsim/reclaim: title, kind and key.
const RECLAIM_FIGURES: &[(&str, Kind, &str)] = &[
    ("soft reclaim calls", Kind::Count, "soft_reclaim_calls"),
    ("soft reclaim time", Kind::Time, "soft_reclaim_ns"),
    ("soft groups walked", Kind::Count, "soft_groups_walked"),
    ("soft groups shrunk", Kind::Count, "soft_groups_shrunk"),
    ("soft scanned", Kind::Count, "soft_scanned"),
    ("soft reclaimed", Kind::Count, "soft_reclaimed"),
    (
        "reclaim-all fallbacks",
        Kind::Count,
        "reclaim_all_fallbacks",
    ),
    ("memcg walk steps", Kind::Count, "memcg_walk_steps"),
];

/// Per-task aggregate of one run: all copies and repetitions of a `[[task]]` together.
#[derive(Default)]
pub(crate) struct TaskAgg {
    pub(crate) started: bool,
    pub(crate) first_start: u64,
    pub(crate) last_end: u64,
    pub(crate) user: u64,
    pub(crate) system: u64,
    pub(crate) minflt: u64,
    pub(crate) majflt: u64,
    pub(crate) io_wait: u64,
    pub(crate) throttled: u64,
    pub(crate) reclaim: u64,
}

pub(crate) fn task_agg(r: &RunResult, task: &str) -> TaskAgg {
    let mut a = TaskAgg {
        first_start: u64::MAX,
        ..TaskAgg::default()
    };
    for t in r.tasks.iter().filter(|t| t.task == task) {
        let Some(s) = t.start_ns else { continue };
        a.started = true;
        a.first_start = a.first_start.min(s);
        a.last_end = a.last_end.max(t.end_ns.unwrap_or(s));
        a.user += t.user_ns;
        a.system += t.system_ns;
        a.minflt += t.minflt;
        a.majflt += t.majflt;
        a.io_wait += t.io_wait_ns;
        a.throttled += t.throttled_ns;
        a.reclaim += t.reclaim_ns;
    }
    a
}

type Extract = Box<dyn Fn(&RunResult) -> Option<u64>>;

fn cg_of<'a>(r: &'a RunResult, cg: &str) -> Option<&'a CgroupSummary> {
    r.cgroups.iter().find(|c| c.cgroup == cg)
}

/// The figures of a scenario, in report order.
fn figure_specs(sc: &Scenario, runs: &[RunResult]) -> Vec<(String, Kind, Extract)> {
    let mut v: Vec<(String, Kind, Extract)> = Vec::new();
    let mut task_names: Vec<String> = Vec::new();
    for t in &sc.tasks {
        task_names.push(t.name.clone());
    }
    for name in task_names {
        let subj = format!("of task {name}");
        type F = fn(&TaskAgg) -> u64;
        let items: [(&str, Kind, F); 8] = [
            ("elapsed", Kind::Time, |a| {
                a.last_end.saturating_sub(a.first_start)
            }),
            ("user", Kind::Time, |a| a.user),
            ("system", Kind::Time, |a| a.system),
            ("minflt", Kind::Count, |a| a.minflt),
            ("majflt", Kind::Count, |a| a.majflt),
            ("io wait", Kind::Time, |a| a.io_wait),
            ("throttled", Kind::Time, |a| a.throttled),
            ("reclaim stall", Kind::Time, |a| a.reclaim),
        ];
        for (what, kind, f) in items {
            let n = name.clone();
            v.push((
                format!("{what} {subj}"),
                kind,
                Box::new(move |r: &RunResult| {
                    let a = task_agg(r, &n);
                    a.started.then(|| f(&a))
                }),
            ));
        }
    }
    // Cgroups in the order of the runs (every variant's cgroups, first seen first).
    let mut cgs: Vec<String> = Vec::new();
    for r in runs {
        for c in &r.cgroups {
            if c.cgroup != MACHINE_ROW && !cgs.contains(&c.cgroup) {
                cgs.push(c.cgroup.clone());
            }
        }
    }
    cgs.push(MACHINE_ROW.to_string());
    for cg in cgs {
        // A unit's or pod's cgroup goes by its owner's name (the same in every variant).
        let owner = runs
            .iter()
            .find_map(|r| r.setup.owners.iter().find(|(p, _)| *p == cg))
            .map(|(_, o)| o.clone());
        let subj = if cg == MACHINE_ROW {
            "of the machine".to_string()
        } else if let Some(o) = &owner {
            format!("of {o}")
        } else {
            format!("of cgroup {cg}")
        };
        type G = fn(&CgroupSummary) -> Option<u64>;
        let items: [(&str, Kind, G); 21] = [
            ("peak usage", Kind::Size, |c| c.usage_peak),
            ("usage avg", Kind::Size, |c| c.usage_avg),
            ("swap peak", Kind::Size, |c| c.swap_peak),
            ("pgfault", Kind::Count, |c| c.pgfault),
            ("pgmajfault", Kind::Count, |c| c.pgmajfault),
            ("pswpin", Kind::Count, |c| c.pswpin),
            ("pswpout", Kind::Count, |c| c.pswpout),
            ("zswap peak", Kind::Size, |c| c.zswap_peak),
            ("zswpin", Kind::Count, |c| c.zswpin),
            ("zswpout", Kind::Count, |c| c.zswpout),
            ("workingset_refault_anon", Kind::Count, |c| {
                c.workingset_refault_anon
            }),
            ("pgscan", Kind::Count, |c| c.pgscan),
            ("pgsteal", Kind::Count, |c| c.pgsteal),
            ("oom_kill", Kind::Count, |c| c.oom_kill),
            ("memory stall some", Kind::Time, |c| c.memory_some_ns),
            ("memory stall full", Kind::Time, |c| c.memory_full_ns),
            ("anon_thp peak", Kind::Size, |c| c.anon_thp_peak),
            ("thp_fault_alloc", Kind::Count, |c| c.thp_fault_alloc),
            ("thp_fault_fallback", Kind::Count, |c| c.thp_fault_fallback),
            ("thp_collapse_alloc", Kind::Count, |c| c.thp_collapse_alloc),
            ("compact_stall", Kind::Count, |c| c.compact_stall),
        ];
        let machine = cg == MACHINE_ROW;
        if owner.is_some() {
            // What the managers' users ask first: throttling, limit hits, kills by userspace.
            let extra: [(&str, G); 2] = [
                ("memory.high events", |c| c.high),
                ("memory.max events", |c| c.max),
            ];
            for (what, g) in extra {
                let c2 = cg.clone();
                v.push((
                    format!("{what} {subj}"),
                    Kind::Count,
                    Box::new(move |r: &RunResult| cg_of(r, &c2).and_then(g)),
                ));
            }
            for act in ["evict", "kill"] {
                let c2 = cg.clone();
                let what = if act == "evict" {
                    "evictions"
                } else {
                    "controller kills"
                };
                v.push((
                    format!("{what} {subj}"),
                    Kind::Count,
                    Box::new(move |r: &RunResult| {
                        Some(
                            r.actions
                                .iter()
                                .filter(|a| a.action == act && a.cgroup == c2)
                                .count() as u64,
                        )
                    }),
                ));
            }
        }
        for (what, kind, g) in items {
            let c2 = cg.clone();
            v.push((
                format!("{what} {subj}"),
                kind,
                Box::new(move |r: &RunResult| cg_of(r, &c2).and_then(g)),
            ));
            if machine && what == "swap peak" {
                v.push((format!("swap avg {subj}"), Kind::Size, Box::new(swap_avg)));
            }
        }
        if machine && sc.run.stats.iter().any(|k| k == "kswapd_cpu") {
            // kswapd's CPU time (/proc/memcgsim/reclaim), when the scenario asks for it.
            v.push((
                format!("kswapd CPU {subj}"),
                Kind::Time,
                Box::new(|r: &RunResult| r.reclaim.get("kswapd_cpu_ns")),
            ));
        }
        if machine {
            for &(what, kind, key) in RECLAIM_FIGURES {
                v.push((
                    format!("{what} {subj}"),
                    kind,
                    Box::new(move |r: &RunResult| r.reclaim.get(key)),
                ));
            }
        }
    }
    v
}

/// The unit and divisor of a figure, chosen from the largest value so that small runs do not
/// print as zeros.
fn unit(kind: Kind, largest: u64) -> (&'static str, f64) {
    match kind {
        Kind::Time if largest >= 1_000_000_000 => ("s", 1e9),
        Kind::Time if largest >= 1_000_000 => ("ms", 1e6),
        Kind::Time => ("us", 1e3),
        Kind::Size => ("MiB", 1024.0 * 1024.0),
        Kind::Count => ("", 1.0),
    }
}

/// Build the comparison from runs already made (`runs` holds every variant for every seed).
fn build(sc: &Scenario, order: &[String], runs: &[RunResult]) -> Comparison {
    let mut figures = Vec::new();
    for (title, kind, get) in figure_specs(sc, runs) {
        let raw: Vec<(String, Vec<u64>)> = order
            .iter()
            .map(|vn| {
                let vals = sc
                    .run
                    .seeds
                    .iter()
                    .filter_map(|s| {
                        runs.iter()
                            .find(|r| &r.variant == vn && r.seed == *s)
                            .and_then(&get)
                    })
                    .collect();
                (vn.clone(), vals)
            })
            .collect();
        // A figure missing from a variant, or 0 in every run, tells nothing.
        if raw.iter().any(|(_, v)| v.is_empty())
            || raw.iter().all(|(_, v)| v.iter().all(|&x| x == 0))
        {
            continue;
        }
        let largest = raw
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .max()
            .unwrap_or(0);
        let (u, div) = unit(kind, largest);
        let mut rows: Vec<FigureRow> = Vec::new();
        for (vn, vals) in raw {
            let values: Vec<f64> = vals.iter().map(|&x| x as f64 / div).collect();
            let st = stats(&values);
            let against = |f: fn(f64, f64) -> Option<f64>| {
                rows.first().map(|b: &FigureRow| Change {
                    min: f(st.min, b.stats.min),
                    max: f(st.max, b.stats.max),
                    avg: f(st.avg, b.stats.avg),
                    std: f(st.std, b.stats.std),
                })
            };
            let change_pct = against(pct);
            let ratio_pct = against(ratio);
            rows.push(FigureRow {
                variant: vn,
                values,
                stats: st,
                change_pct,
                ratio_pct,
            });
        }
        let full = if u.is_empty() {
            title
        } else {
            match title.find(" of ") {
                Some(i) => format!("{} ({u}){}", &title[..i], &title[i..]),
                None => format!("{title} ({u})"),
            }
        };
        figures.push(Figure {
            title: full,
            unit: u.to_string(),
            rows,
        });
    }
    let mut outcomes = Vec::new();
    for t in &sc.tasks {
        let mut by_variant = Vec::new();
        for vn in order {
            let mut m: BTreeMap<String, u64> = BTreeMap::new();
            for r in runs.iter().filter(|r| &r.variant == vn) {
                for rec in r.tasks.iter().filter(|x| x.task == t.name) {
                    *m.entry(rec.outcome.clone()).or_default() += 1;
                }
            }
            by_variant.push((vn.clone(), m));
        }
        outcomes.push(Outcomes {
            task: t.name.clone(),
            by_variant,
        });
    }
    Comparison {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        base: sc.base.clone(),
        variants: order.to_vec(),
        seeds: sc.run.seeds.clone(),
        outcomes,
        figures,
        ratio: false,
        first_seed_runs: Vec::new(),
    }
}

/// Run every variant over every seed, one after the other, and compare them.
pub fn compare(sc: &Scenario, progress: bool) -> Result<Comparison, String> {
    compare_jobs(sc, progress, 1)
}

/// [`compare`] with up to `jobs` runs at once, each on a thread of its own. Runs share
/// nothing (each has its own machine), and their results are put in the order a sequential
/// comparison makes them, so the comparison is the same for every `jobs`; an error is the
/// one the sequential comparison would meet first.
pub fn compare_jobs(sc: &Scenario, progress: bool, jobs: usize) -> Result<Comparison, String> {
    let mut order = vec![sc.base.clone()];
    for v in &sc.variants {
        if v.name != sc.base {
            order.push(v.name.clone());
        }
    }
    let plan: Vec<(&str, u64)> = order
        .iter()
        .flat_map(|vn| sc.run.seeds.iter().map(move |&seed| (vn.as_str(), seed)))
        .collect();
    let runs = run_plan(sc, &plan, progress, jobs)?;
    let mut c = build(sc, &order, &runs);
    // Keep one run per variant for the charts: the first seed's.
    let first = sc.run.seeds[0];
    for r in runs {
        if r.seed == first && !c.first_seed_runs.iter().any(|k| k.variant == r.variant) {
            c.first_seed_runs.push(r);
        }
    }
    Ok(c)
}

/// Run the (variant, seed) pairs of `plan` on up to `jobs` threads, results in plan order.
pub fn run_plan(
    sc: &Scenario,
    plan: &[(&str, u64)],
    progress: bool,
    jobs: usize,
) -> Result<Vec<RunResult>, String> {
    let jobs = jobs.clamp(1, plan.len().max(1));
    if jobs == 1 {
        return plan
            .iter()
            .map(|&(vn, seed)| run_variant(sc, vn, seed, progress))
            .collect();
    }
    let multi = indicatif::MultiProgress::new();
    let target = if progress {
        Progress::Shared(&multi)
    } else {
        Progress::Off
    };
    crate::parallel::run_parallel(plan.len(), jobs, |i| {
        run_variant_with(sc, plan[i].0, plan[i].1, target)
    })
}

fn fmt_change(c: Option<f64>) -> String {
    match c {
        Some(x) => format!(" [{x:+.1}%]"),
        None => " [n/a]".into(),
    }
}

fn fmt_ratio(c: Option<f64>) -> String {
    match c {
        Some(x) => format!(" [{x:.1}%]"),
        None => " [n/a]".into(),
    }
}

impl Comparison {
    /// A row's min, max, avg and std as the report prints them, then (for a variant other
    /// than the base) the bracket of the change or ratio against the base. A count's min
    /// and max are counts, printed whole (`1414367`); its avg and std, and every statistic
    /// of a time or a size, take two decimals.
    pub fn stat_cells(&self, f: &Figure, r: &FigureRow) -> [String; 4] {
        let st = &r.stats;
        let (c, fmt): (_, fn(Option<f64>) -> String) = if self.ratio {
            (r.ratio_pct.as_ref(), fmt_ratio)
        } else {
            (r.change_pct.as_ref(), fmt_change)
        };
        let ch = |g: fn(&Change) -> Option<f64>| c.map(|c| fmt(g(c))).unwrap_or_default();
        let whole = f.is_count();
        let extreme = |x: f64| {
            if whole {
                format!("{x:.0}")
            } else {
                format!("{x:.2}")
            }
        };
        [
            format!("{}{}", extreme(st.min), ch(|c| c.min)),
            format!("{}{}", extreme(st.max), ch(|c| c.max)),
            format!("{:.2}{}", st.avg, ch(|c| c.avg)),
            format!("{:.2}{}", st.std, ch(|c| c.std)),
        ]
    }

    /// The text report (also `compare.txt`).
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = write!(s, "scenario {}", self.scenario);
        if !self.description.is_empty() {
            let _ = write!(s, ": {}", self.description);
        }
        s.push('\n');
        let seeds: Vec<String> = self.seeds.iter().map(|x| x.to_string()).collect();
        let brackets = if self.ratio {
            "[%] is the statistic as a percentage of the base's same statistic"
        } else {
            "[%] is the change against the base's same statistic"
        };
        let _ = writeln!(
            s,
            "variants: {} (base: {}); seeds: {}; {brackets}",
            self.variants.join(", "),
            self.base,
            seeds.join(", ")
        );
        let w = self.variants.iter().map(|v| v.len()).max().unwrap_or(0) + 1;
        if !self.outcomes.is_empty() {
            s.push_str("\noutcomes (task runs):\n");
            for o in &self.outcomes {
                let _ = writeln!(s, "  task {}:", o.task);
                for (vn, m) in &o.by_variant {
                    let parts: Vec<String> = m.iter().map(|(k, n)| format!("{k} x{n}")).collect();
                    let label = format!("{vn}:");
                    let _ = writeln!(s, "    {label:<w$} {}", parts.join(", "));
                }
            }
        }
        for f in &self.figures {
            let _ = writeln!(s, "\n{}:", f.title);
            for r in &f.rows {
                let st = &r.stats;
                let label = format!("{}:", r.variant);
                let [min, max, avg, std] = self.stat_cells(f, r);
                let _ = writeln!(
                    s,
                    "  {label:<w$}  min: {min} max: {max} avg: {avg} std: {std} runs: {}",
                    st.runs
                );
            }
        }
        s
    }

    /// `compare.json`.
    pub fn to_json(&self) -> Result<String, String> {
        let mut s = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        s.push('\n');
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics() {
        let s = stats(&[1.0, 2.0, 3.0]);
        assert_eq!((s.min, s.max, s.avg, s.runs), (1.0, 3.0, 2.0, 3));
        assert!((s.std - 1.0).abs() < 1e-12);
        assert_eq!(stats(&[5.0]).std, 0.0);
        assert_eq!(pct(90.0, 100.0), Some(-10.0));
        assert_eq!(pct(0.0, 0.0), Some(0.0));
        assert_eq!(pct(1.0, 0.0), None);
        assert_eq!(ratio(90.0, 100.0), Some(90.0));
        assert_eq!(ratio(0.0, 0.0), None);
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(fmt_ratio(ratio(657.34, 651.92)), " [100.8%]");
        assert_eq!(fmt_change(pct(657.34, 651.92)), " [+0.8%]");
        assert_eq!(fmt_ratio(None), " [n/a]");
    }
}
