//! Results folders: a run's (`memcgsim run --out`) and a comparison's (`memcgsim compare
//! --out`), each with its text report, its JSON and its charts, written all or nothing.

use std::path::Path;

use crate::charts::{render_charts, render_compare_charts};
use crate::compare::Comparison;
use crate::output::{write_dir_atomic, Overwrite};
use crate::runner::RunResult;

/// Write a run's files into the results folder `dir`: `summary.txt`, `summary.json`,
/// `timeseries.csv` and the charts (`usage`, `faults`, `reclaim`, each as `.svg` and
/// `.png`). The folder is written completely or not at all, and what memcgsim did not write
/// is never removed (see [`write_dir_atomic`] for what `overwrite` allows).
pub fn write_results(
    r: &RunResult,
    dir: impl AsRef<Path>,
    overwrite: Overwrite,
) -> Result<(), String> {
    let json = r.summary_json()?;
    let csv = r.timeseries_csv();
    let txt = r.render();
    write_dir_atomic(dir.as_ref(), overwrite, |tmp| {
        let w = |name: &str, data: &str| {
            std::fs::write(tmp.join(name), data)
                .map_err(|e| format!("{}: {e}", tmp.join(name).display()))
        };
        w("summary.txt", &txt)?;
        w("summary.json", &json)?;
        w("timeseries.csv", &csv)?;
        if !r.actions.is_empty() {
            w("actions.csv", &r.actions_csv())?;
        }
        render_charts(r, tmp)
    })
}

/// Write `compare.txt`, `compare.json` and the overlay charts (one per figure of
/// [`COMPARE_CHARTS`](crate::charts::COMPARE_CHARTS), each as `.svg` and `.png`) into the results
/// folder `dir`, as [`write_dir_atomic`] does with `overwrite`.
pub fn write_comparison(
    c: &Comparison,
    dir: impl AsRef<Path>,
    overwrite: Overwrite,
) -> Result<(), String> {
    let txt = c.render();
    let json = c.to_json()?;
    write_dir_atomic(dir.as_ref(), overwrite, |tmp| {
        for (name, data) in [("compare.txt", &txt), ("compare.json", &json)] {
            std::fs::write(tmp.join(name), data)
                .map_err(|e| format!("{}: {e}", tmp.join(name).display()))?;
        }
        render_compare_charts(c, tmp)
    })
}
