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
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compare::task_agg;
use crate::runner::{run_setup, Progress, RunResult, MACHINE_ROW};
use crate::scenario::Scenario;

pub use crate::scenario::{point_setup, points, Point, MAX_RUNS, MAX_VALUES};

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

/// A chart's line: its label and its (x, y) points.
pub type Series = (String, Vec<(f64, f64)>);

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

    /// `columns` of the table as aligned text: a header line, then a line per run (numbers
    /// right-aligned, fractions to two decimals, null as `-`). Nothing for no columns; an
    /// error naming the table's columns for a name it does not have.
    pub fn show(&self, columns: &[String]) -> Result<String, String> {
        if columns.is_empty() {
            return Ok(String::new());
        }
        let mut idx = Vec::with_capacity(columns.len());
        for c in columns {
            match self.columns.iter().position(|x| x == c) {
                Some(i) => idx.push(i),
                None => {
                    return Err(format!(
                        "--show: the table has no column '{}'; it has: {}",
                        memcgsim_model::text::clip(c),
                        self.columns.join(", ")
                    ))
                }
            }
        }
        let cell = |v: &Value| match v {
            Value::Null => "-".to_string(),
            Value::String(s) => s.clone(),
            Value::Number(n) if n.is_f64() => format!("{:.2}", n.as_f64().unwrap_or(0.0)),
            other => other.to_string(),
        };
        let mut grid = vec![columns.to_vec()];
        grid.extend(
            self.rows
                .iter()
                .map(|r| idx.iter().map(|&i| cell(&r[i])).collect::<Vec<_>>()),
        );
        let width: Vec<usize> = (0..idx.len())
            .map(|j| grid.iter().map(|r| r[j].chars().count()).max().unwrap_or(0))
            .collect();
        // A column is right-aligned when every value in it is a number.
        let numeric: Vec<bool> = idx
            .iter()
            .map(|&i| self.rows.iter().all(|r| r[i].is_number() || r[i].is_null()))
            .collect();
        let mut out = String::new();
        for r in &grid {
            let cells: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    if numeric[j] {
                        format!("{c:>w$}", w = width[j])
                    } else {
                        format!("{c:<w$}", w = width[j])
                    }
                })
                .collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        }
        Ok(out)
    }

    /// The points of a chart of column `y` against column `x`: a series per value of column
    /// `series` (one series, `all`, without), a point per run of the grid with its seeds
    /// averaged (the runs whose columns before `seed` are the same). Err: a column the
    /// table does not have, or a value of `x` or `y` that is not a number.
    pub fn xy_series(&self, x: &str, y: &str, series: Option<&str>) -> Result<Vec<Series>, String> {
        let col = |c: &str| {
            self.columns.iter().position(|x| x == c).ok_or_else(|| {
                format!(
                    "--chart: the table has no column '{}'; it has: {}",
                    memcgsim_model::text::clip(c),
                    self.columns.join(", ")
                )
            })
        };
        let (xi, yi) = (col(x)?, col(y)?);
        let si = series.map(col).transpose()?;
        let key_end = self
            .columns
            .iter()
            .position(|c| c == "seed")
            .unwrap_or(self.columns.len());
        // Per (series, point): the sums of x and y and the runs counted, in first-seen
        // order, found through an index (a sweep has up to a million runs).
        let mut groups: Vec<(String, f64, f64, u32)> = Vec::new();
        let mut index: std::collections::HashMap<(String, String), usize> = Default::default();
        for r in &self.rows {
            let num = |i: usize, name: &str| {
                r[i].as_f64().ok_or_else(|| {
                    format!(
                        "--chart: column '{name}' has a value that is not a number: {}",
                        r[i]
                    )
                })
            };
            let (xv, yv) = (num(xi, x)?, num(yi, y)?);
            let label = match si {
                Some(i) => match &r[i] {
                    Value::String(s) => s.clone(),
                    v => v.to_string(),
                },
                None => "all".to_string(),
            };
            let key = Value::Array(r[..key_end].to_vec()).to_string();
            match index.get(&(label.clone(), key.clone())) {
                Some(&g) => {
                    let g = &mut groups[g];
                    g.1 += xv;
                    g.2 += yv;
                    g.3 += 1;
                }
                None => {
                    index.insert((label.clone(), key), groups.len());
                    groups.push((label, xv, yv, 1));
                }
            }
        }
        let mut out: Vec<Series> = Vec::new();
        for (label, sx, sy, n) in groups {
            let p = (sx / f64::from(n), sy / f64::from(n));
            match out.iter_mut().find(|(l, _)| *l == label) {
                Some((_, pts)) => pts.push(p),
                None => out.push((label, vec![p])),
            }
        }
        Ok(out)
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

/// Run a whole sweep on up to `jobs` threads. `done` is called after each run with the
/// number finished so far (for a progress display).
pub fn sweep(sc: &Scenario, jobs: usize, done: &(dyn Fn(usize) + Sync)) -> Result<Table, String> {
    if sc.sweep.is_empty() {
        return Err(format!("{}: the scenario has no [[sweep]]", sc.file));
    }
    let pts = points(sc);
    let finished = AtomicUsize::new(0);
    let rows = crate::parallel::run_parallel(pts.len(), jobs, |i| {
        let r = run_point(sc, &pts[i])?;
        done(finished.fetch_add(1, Ordering::SeqCst) + 1);
        Ok(row(sc, &pts[i], &r))
    })?;
    Ok(Table::from_rows(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_prints_the_columns_asked_for_aligned() {
        let t = Table::from_rows(vec![
            vec![
                ("variant".into(), "base".into()),
                ("heap".into(), "10M".into()),
                ("task.b.elapsed_s".into(), 3600.0.into()),
                ("task.b.majflt".into(), 180_852u64.into()),
            ],
            vec![
                ("variant".into(), "rework".into()),
                ("heap".into(), "2M".into()),
                ("task.b.elapsed_s".into(), 334.756.into()),
                ("task.b.majflt".into(), Value::Null),
            ],
        ]);
        let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(t.show(&[]).unwrap(), "");
        assert_eq!(
            t.show(&cols(&[
                "variant",
                "heap",
                "task.b.elapsed_s",
                "task.b.majflt"
            ]))
            .unwrap(),
            "variant  heap  task.b.elapsed_s  task.b.majflt\n\
             base     10M            3600.00         180852\n\
             rework   2M              334.76              -\n"
        );
        let e = t.show(&cols(&["heap", "majflt"])).unwrap_err();
        assert!(e.contains("no column 'majflt'"), "{e}");
        assert!(
            e.contains("variant, heap, task.b.elapsed_s, task.b.majflt"),
            "{e}"
        );
    }
}
