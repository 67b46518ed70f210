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
//!
//! # Layers
//!
//! The modules form layers, listed here from the bottom; a module uses only modules of the
//! layers below its own (a unit test reads the sources and checks every `crate::` path
//! outside the test modules against this list):
//!
//! 1. `units`, `keyed`, `output`, `parallel`: formatting of sizes and times; settings, file
//!    paths and the readers of keyed and pressure files; results folders written all or
//!    nothing; jobs on threads.
//! 2. `eviction`: the kubelet's eviction manager.
//! 3. `controller`: the userspace controllers run inside the simulation.
//! 4. `scenario`: scenario files, their variants and sweep grids.
//! 5. `runner`: one run of a set-up with a seed.
//! 6. `report`, `compare`: a run's summary; comparisons of variants over seeds.
//! 7. `charts`, `sweep`: the PNG and SVG charts; sweeps into one table.
//! 8. `html`, `results`: the HTML pages; results folders with their charts.
//! 9. `cli`: the subcommands.

mod charts;
pub mod cli;
mod compare;
pub mod controller;
mod eviction;
pub mod html;
mod keyed;
mod output;
mod parallel;
mod report;
mod results;
mod runner;
mod scenario;
pub mod sweep;
mod units;

pub use charts::{render_charts, render_compare_charts, COMPARE_CHARTS};
pub use compare::{
    compare, compare_jobs, run_plan, Change, Comparison, Figure, FigureRow, Outcomes, Stats,
};
pub use output::{check_output, write_dir_atomic, Overwrite, MARKER};
pub use results::{write_comparison, write_results};
pub use runner::{
    run_setup, run_variant, run_variant_with, CgroupSummary, KeyValues, Progress, RunResult,
    SeriesKey, TaskRecord, TimeSeries, WriteRecord, MACHINE_ROW, RECLAIM_FILE, SUMMARY_STATS,
};
pub use scenario::{
    load, machine_config, parse, CgroupSpec, ControllerOverride, ControllerSpec, RunSpec, Scenario,
    Setting, Setup, Subtree, SweepAxis, SweepTarget, TaskOverride, TaskSpec, Until, Variant,
    WriteSpec, DEFAULT_STATS, MAX_SUBTREE_FANOUT, MAX_SUBTREE_GROUPS,
};
pub use units::{fmt_ns, fmt_size, fmt_time_s};

#[cfg(test)]
mod layers {
    use std::collections::BTreeMap;

    /// The layers of the crate doc's list (`N. \`a\`, \`b\`: ...`), bottom first.
    fn declared() -> BTreeMap<String, usize> {
        let lib = include_str!("lib.rs");
        let mut out = BTreeMap::new();
        let mut layer = 0;
        for line in lib.lines() {
            let Some(rest) = line.strip_prefix("//! ") else {
                continue;
            };
            let Some((num, body)) = rest.split_once(". ") else {
                continue;
            };
            if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            layer += 1;
            assert_eq!(
                num.parse::<usize>().unwrap(),
                layer,
                "layers are numbered in order"
            );
            let names = body.split(':').next().unwrap();
            for n in names.split(',') {
                let n = n.trim().trim_matches('`');
                assert!(
                    out.insert(n.to_string(), layer).is_none(),
                    "{n} listed twice"
                );
            }
        }
        out
    }

    /// The code of a source file outside its test modules, without comments.
    fn code(text: &str) -> String {
        let end = text.find("#[cfg(test)]").unwrap_or(text.len());
        text[..end]
            .lines()
            .map(|l| match l.find("//") {
                Some(i) => &l[..i],
                None => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The first path segment after each `crate::` (each item of a `crate::{...}` group).
    fn crate_refs(code: &str) -> Vec<String> {
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        let mut out = Vec::new();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 0;
                let mut item_start = true;
                for (j, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            item_start = true;
                            continue;
                        }
                        c if c.is_whitespace() => continue,
                        _ => {}
                    }
                    if item_start && depth == 0 {
                        out.push(ident(&group[j..]));
                    }
                    item_start = false;
                }
            } else {
                out.push(ident(rest));
            }
        }
        out
    }

    fn violations(layers: &BTreeMap<String, usize>, module: &str, text: &str) -> Vec<String> {
        let own = layers[module];
        let mut bad = Vec::new();
        for r in crate_refs(&code(text)) {
            match layers.get(&r) {
                Some(_) if r == module => {}
                Some(&l) if l < own => {}
                Some(&l) => bad.push(format!(
                    "{module} (layer {own}) uses crate::{r} (layer {l}, not below)"
                )),
                None => bad.push(format!(
                    "{module} uses crate::{r}, which is not a module of the layer list"
                )),
            }
        }
        bad
    }

    #[test]
    fn every_module_uses_only_the_layers_below_it() {
        let layers = declared();
        assert!(
            layers.len() >= 10,
            "the layer list was not found: {layers:?}"
        );
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut bad = Vec::new();
        let mut seen = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(module) = name.strip_suffix(".rs") else {
                continue;
            };
            if module == "lib" {
                continue;
            }
            assert!(
                layers.contains_key(module),
                "src/{name} is in no layer of lib.rs's list"
            );
            seen += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            bad.extend(violations(&layers, module, &text));
        }
        assert_eq!(
            seen,
            layers.len(),
            "the layer list names a module with no file"
        );
        assert!(
            bad.is_empty(),
            "imports against the layers:\n{}",
            bad.join("\n")
        );
    }

    #[test]
    fn the_check_sees_upward_and_unknown_imports() {
        let layers = declared();
        let up = "use crate::runner::RunResult;\nfn f() { crate::cli::run(); }\n";
        assert_eq!(violations(&layers, "controller", up).len(), 2);
        let group = "use crate::{\n    units::fmt_size, compare::{a, b},\n};\n";
        assert_eq!(
            violations(&layers, "report", group),
            ["report (layer 6) uses crate::compare (layer 6, not below)"]
        );
        assert_eq!(
            violations(&layers, "cli", "use crate::run_variant;").len(),
            1
        );
        let fine = "use crate::units::fmt_ns; // crate::cli::run\n#[cfg(test)]\nmod tests { use crate::cli; }\n";
        assert!(violations(&layers, "report", fine).is_empty());
    }
}
