//! Parameter sweeps: a scenario's `[[sweep]]` axes span a grid, and every variant runs at
//! every point of the grid with every seed. An axis sets a `[machine]` key, a control file
//! of a `[[cgroup]]` (written after the scenario's own files) or one argument of a
//! `[[task]]`'s workload. The result is one table, a row per run: the variant, the axes'
//! values and the seed, then the run's figures (per task, per cgroup, for the machine).
//!
//! The runs are independent, so any engine can run them: [`sweep`] runs them on local
//! threads; [`points`] and [`run_point`] let another (the Python package's Ray backend) run
//! each where it likes and put the rows back in point order, which makes the table the same.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compare::task_agg;
use crate::runner::{run_setup, Progress, RunResult, MACHINE_ROW};
use crate::scenario::{machine_config, Scenario, Setting, Setup, SweepAxis, SweepTarget};

/// The most values one axis takes.
pub const MAX_VALUES: usize = 10_000;
/// The most runs one sweep makes (variants × grid points × seeds).
pub const MAX_RUNS: usize = 1_000_000;

/// One run of a sweep: a variant, a value per axis (in axis order), a seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub variant: String,
    pub values: Vec<String>,
    pub seed: u64,
}

impl Point {
    /// How the point names itself in results and errors: `VARIANT[AXIS=VALUE,...]`.
    pub fn label(&self, sc: &Scenario) -> String {
        let parts: Vec<String> = sc
            .sweep
            .iter()
            .zip(&self.values)
            .map(|(a, v)| format!("{}={v}", a.name))
            .collect();
        format!("{}[{}]", self.variant, parts.join(","))
    }
}

/// The number of runs of a sweep, or None past [`MAX_RUNS`].
fn run_count(sc: &Scenario) -> Option<usize> {
    let mut n = sc.variants.len().checked_mul(sc.run.seeds.len())?;
    for a in &sc.sweep {
        n = n.checked_mul(a.values.len())?;
    }
    (n <= MAX_RUNS).then_some(n)
}

/// Every run of the sweep, in table order: variants in file order, then the grid with the
/// first axis outermost, then the seeds. Empty when the scenario has no `[[sweep]]`.
pub fn points(sc: &Scenario) -> Vec<Point> {
    if sc.sweep.is_empty() {
        return Vec::new();
    }
    let n = run_count(sc).expect("checked when the scenario was loaded");
    let mut out = Vec::with_capacity(n);
    let sizes: Vec<usize> = sc.sweep.iter().map(|a| a.values.len()).collect();
    let grid: usize = sizes.iter().product();
    for v in &sc.variants {
        for mut k in 0..grid {
            // Mixed-radix digits of k, the last axis fastest.
            let mut idx = vec![0; sizes.len()];
            for (i, &size) in sizes.iter().enumerate().rev() {
                idx[i] = k % size;
                k /= size;
            }
            let values: Vec<String> = sc
                .sweep
                .iter()
                .zip(&idx)
                .map(|(a, &i)| a.values[i].clone())
                .collect();
            for &seed in &sc.run.seeds {
                out.push(Point {
                    variant: v.name.clone(),
                    values: values.clone(),
                    seed,
                });
            }
        }
    }
    out
}

/// Set one axis's value in a set-up.
fn apply(sc: &Scenario, setup: &mut Setup, axis: &SweepAxis, value: &str) -> Result<(), String> {
    let f = &sc.file;
    let set = |key: &str| Setting {
        key: key.to_string(),
        value: value.to_string(),
        line: axis.line,
    };
    match &axis.target {
        SweepTarget::Machine(key) => match setup.machine.iter_mut().find(|s| &s.key == key) {
            Some(s) => *s = set(key),
            None => setup.machine.push(set(key)),
        },
        SweepTarget::File { cgroup, file } => {
            let c = setup
                .cgroups
                .iter_mut()
                .find(|c| &c.path == cgroup)
                .ok_or_else(|| {
                    format!(
                        "{f}:{}: sweep.cgroup: no [[cgroup]] {cgroup} (variant {}, axis {})",
                        axis.line, setup.variant, axis.name
                    )
                })?;
            match c.files.iter_mut().find(|s| &s.key == file) {
                Some(s) => *s = set(file),
                None => c.files.push(set(file)),
            }
        }
        SweepTarget::Arg { task, index } => {
            let t = setup
                .tasks
                .iter_mut()
                .find(|t| &t.name == task)
                .ok_or_else(|| {
                    format!(
                        "{f}:{}: sweep.task: no [[task]] named '{task}' (variant {}, axis {})",
                        axis.line, setup.variant, axis.name
                    )
                })?;
            let n = t.args.len();
            let a = t.args.get_mut(*index).ok_or_else(|| {
                format!(
                    "{f}:{}: sweep.arg: task '{task}' has {n} arguments, no argument {index} (variant {}, axis {})",
                    axis.line, setup.variant, axis.name
                )
            })?;
            *a = value.to_string();
        }
    }
    Ok(())
}

/// The set-up of a point: its variant's, with every axis's value set, named by its label.
pub fn point_setup(sc: &Scenario, p: &Point) -> Result<Setup, String> {
    let mut setup = sc.setup(&p.variant)?;
    if p.values.len() != sc.sweep.len() {
        return Err(format!(
            "{}: a sweep point has {} values for {} axes",
            sc.file,
            p.values.len(),
            sc.sweep.len()
        ));
    }
    for (a, v) in sc.sweep.iter().zip(&p.values) {
        apply(sc, &mut setup, a, v)?;
    }
    setup.variant = p.label(sc);
    Ok(setup)
}

/// Checks made when a scenario is loaded: the sweep's size, and for every variant that each
/// axis finds its cgroup, task and argument, and that each machine value is a valid one.
pub(crate) fn check(sc: &Scenario) -> Result<(), String> {
    if sc.sweep.is_empty() {
        return Ok(());
    }
    if run_count(sc).is_none() {
        return Err(format!(
            "{}:{}: sweep: more than {MAX_RUNS} runs (variants x values of every axis x seeds)",
            sc.file, sc.sweep[0].line
        ));
    }
    for v in &sc.variants {
        let base = sc.setup(&v.name)?;
        for a in &sc.sweep {
            let values: &[String] = match a.target {
                SweepTarget::Machine(_) => &a.values,
                _ => &a.values[..1],
            };
            for value in values {
                let mut setup = base.clone();
                apply(sc, &mut setup, a, value)?;
                if matches!(a.target, SweepTarget::Machine(_)) {
                    machine_config(&sc.file, &setup.machine)
                        .map_err(|e| format!("{e} (sweep axis {}, variant {})", a.name, v.name))?;
                }
            }
        }
    }
    Ok(())
}

/// Run one point.
pub fn run_point(sc: &Scenario, p: &Point) -> Result<RunResult, String> {
    run_setup(sc, &point_setup(sc, p)?, p.seed, Progress::Off)
}

/// One row of the table: the point, then the run's figures, as (column, value) pairs in
/// column order. Times are in seconds, sizes in bytes; a figure the run lacks is null.
pub fn row(sc: &Scenario, p: &Point, r: &RunResult) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = vec![("variant".into(), p.variant.clone().into())];
    for (a, v) in sc.sweep.iter().zip(&p.values) {
        out.push((a.name.clone(), v.clone().into()));
    }
    out.push(("seed".into(), p.seed.into()));
    let secs = |ns: u64| Value::from(ns as f64 / 1e9);
    for t in &sc.tasks {
        let agg = task_agg(r, &t.name);
        let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
        for rec in r.tasks.iter().filter(|x| x.task == t.name) {
            *outcomes.entry(rec.outcome.as_str()).or_default() += 1;
        }
        let outcome = outcomes
            .iter()
            .map(|(o, n)| {
                if *n == 1 {
                    o.to_string()
                } else {
                    format!("{o} x{n}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let k = |what: &str| format!("task.{}.{what}", t.name);
        out.push((k("outcome"), outcome.into()));
        let started = |v: Value| if agg.started { v } else { Value::Null };
        out.push((
            k("elapsed_s"),
            started(secs(agg.last_end.saturating_sub(agg.first_start))),
        ));
        out.push((k("majflt"), started(agg.majflt.into())));
        out.push((k("io_wait_s"), started(secs(agg.io_wait))));
        out.push((k("throttled_s"), started(secs(agg.throttled))));
        out.push((k("reclaim_s"), started(secs(agg.reclaim))));
    }
    for c in &r.cgroups {
        let prefix = if c.cgroup == MACHINE_ROW {
            "machine".to_string()
        } else {
            format!("cgroup.{}", c.cgroup)
        };
        let n = |v: Option<u64>| v.map_or(Value::Null, Value::from);
        let s = |v: Option<u64>| v.map_or(Value::Null, secs);
        for (what, v) in [
            ("usage_peak", n(c.usage_peak)),
            ("usage_avg", n(c.usage_avg)),
            ("swap_peak", n(c.swap_peak)),
            ("pgmajfault", n(c.pgmajfault)),
            ("pgscan", n(c.pgscan)),
            ("pgsteal", n(c.pgsteal)),
            ("oom_kill", n(c.oom_kill)),
            ("memory_some_s", s(c.memory_some_ns)),
            ("memory_full_s", s(c.memory_full_ns)),
        ] {
            out.push((format!("{prefix}.{what}"), v));
        }
    }
    out
}

/// A sweep's results: its columns and a row per run, in point order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// The table of rows made by [`row`] (each run's cgroups may differ, so the columns are
    /// their union, in the order first seen).
    pub fn from_rows(rows: Vec<Vec<(String, Value)>>) -> Table {
        let mut columns: Vec<String> = Vec::new();
        for r in &rows {
            for (k, _) in r {
                if !columns.contains(k) {
                    columns.push(k.clone());
                }
            }
        }
        let rows = rows
            .into_iter()
            .map(|r| {
                let mut m: BTreeMap<String, Value> = r.into_iter().collect();
                columns
                    .iter()
                    .map(|c| m.remove(c).unwrap_or(Value::Null))
                    .collect()
            })
            .collect();
        Table { columns, rows }
    }

    /// RFC 4180 CSV: a header line, then a line per run; null is an empty field.
    pub fn to_csv(&self) -> String {
        fn field(s: &str) -> String {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        }
        let mut out = String::new();
        let header: Vec<String> = self.columns.iter().map(|c| field(c)).collect();
        let _ = writeln!(out, "{}", header.join(","));
        for r in &self.rows {
            let cells: Vec<String> = r
                .iter()
                .map(|v| match v {
                    Value::Null => String::new(),
                    Value::String(s) => field(s),
                    other => other.to_string(),
                })
                .collect();
            let _ = writeln!(out, "{}", cells.join(","));
        }
        out
    }
}

/// Run `n` jobs, job `i` being `f(i)`, on up to `jobs` threads, results in job order. After a
/// failure no new job starts; the first failure in job order is returned.
pub(crate) fn run_parallel<T: Send>(
    n: usize,
    jobs: usize,
    f: impl Fn(usize) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    let jobs = jobs.clamp(1, n.max(1));
    if jobs == 1 {
        return (0..n).map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Vec<Mutex<Option<Result<T, String>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                // Jobs are taken in order, and none after a failure: every job before the
                // first failing one has been started, so the first error in job order is the
                // one a sequential run reports.
                if failed.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    break;
                }
                let r = f(i);
                if r.is_err() {
                    failed.store(true, Ordering::SeqCst);
                }
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    let mut out = Vec::with_capacity(n);
    for slot in slots {
        match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(r)) => out.push(r),
            Some(Err(e)) => return Err(e),
            None => unreachable!("a job after the first failure was reported first"),
        }
    }
    Ok(out)
}

/// Run a whole sweep on up to `jobs` threads. `done` is called after each run with the
/// number finished so far (for a progress display).
pub fn sweep(sc: &Scenario, jobs: usize, done: &(dyn Fn(usize) + Sync)) -> Result<Table, String> {
    if sc.sweep.is_empty() {
        return Err(format!("{}: the scenario has no [[sweep]]", sc.file));
    }
    let pts = points(sc);
    let finished = AtomicUsize::new(0);
    let rows = run_parallel(pts.len(), jobs, |i| {
        let r = run_point(sc, &pts[i])?;
        done(finished.fetch_add(1, Ordering::SeqCst) + 1);
        Ok(row(sc, &pts[i], &r))
    })?;
    Ok(Table::from_rows(rows))
}
