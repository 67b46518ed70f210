//! memcgsim-experiment: the experiment layer of memcgsim.
//!
//! A *scenario* (a TOML file, see docs/SCENARIOS.md) describes a machine, cgroups and the
//! files written in them, tasks with their start times, copies and repetitions, how long to
//! run and what to sample, and named *variants* that override any of these. From it:
//!
//! * [`run_variant`] runs one variant with one seed and returns a [`RunResult`]: per-cgroup
//!   and per-task figures and the sampled time series; [`write_results`] writes its
//!   `summary.txt`, `summary.json`, `timeseries.csv` and charts (`usage`, `faults`, `reclaim`
//!   as SVG and PNG) into a folder, all or nothing;
//! * [`compare()`] runs every variant over every seed and returns a [`Comparison`]: per figure
//!   and variant, min/max/avg/std and the change against the base variant (or, with
//!   [`Comparison::ratio`], the percentage of the base); [`write_comparison`] writes
//!   `compare.txt`, `compare.json` and overlay charts of the variants (one per figure in
//!   [`COMPARE_CHARTS`], as SVG and PNG, drawn from each variant's run with the first seed).
//!
//! The charts ([`render_charts`], [`render_compare_charts`]) draw the machine-wide line
//! beneath the cgroups' lines, keep each legend in a column beside its panel, and label their
//! axes with units (`bytes`, `faults/s`, `pages/s`) and ticks with suffixes (`512M`, `12k`).
//!
//! A `[[cgroup]]` may generate a tree of idle cgroups below it ([`Subtree`]) for scaling
//! studies; those are created but neither sampled nor reported. When the model has
//! [`RECLAIM_FILE`], its counters are sampled on the machine row as `reclaim:KEY`.
//!
//! Runs are deterministic: the same scenario, variant and seed give byte-identical files.
//! The [`cli`] module holds the `memcgsim run` and `memcgsim compare` subcommands.

mod charts;
pub mod cli;
mod compare;
pub mod controller;
pub mod html;
mod output;
mod report;
mod runner;
mod scenario;
pub mod sweep;

pub use charts::{render_charts, render_compare_charts, COMPARE_CHARTS};
pub use compare::{
    compare, compare_jobs, run_plan, write_comparison, Change, Comparison, Figure, FigureRow,
    Outcomes, Stats,
};
pub use output::{check_output, write_dir_atomic, Overwrite, MARKER};
pub use report::{fmt_ns, fmt_size, fmt_time_s, write_results};
pub use runner::{
    run_setup, run_variant, run_variant_with, CgroupSummary, KeyValues, Progress, RunResult,
    SeriesKey, TaskRecord, TimeSeries, MACHINE_ROW, RECLAIM_FILE, SUMMARY_STATS,
};
pub use scenario::{
    load, machine_config, parse, CgroupSpec, ControllerOverride, ControllerSpec, RunSpec, Scenario,
    Setting, Setup, Subtree, SweepAxis, SweepTarget, TaskOverride, TaskSpec, Until, Variant,
    DEFAULT_STATS, MAX_SUBTREE_FANOUT, MAX_SUBTREE_GROUPS,
};
