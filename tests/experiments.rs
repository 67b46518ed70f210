//! The experiments of experiments/, at small scale (each `small.toml` beside a scenario), so
//! they cannot rot: each run must show the property its README reports.

use memcgsim_experiment::{load, run_variant, RunResult};

fn run(file: &str, variant: &str) -> RunResult {
    let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
    let sc = load(&path).unwrap_or_else(|e| panic!("{e}"));
    run_variant(&sc, variant, 1, false).unwrap_or_else(|e| panic!("{file} {variant}: {e}"))
}

fn cgroup_stat(
    r: &RunResult,
    cg: &str,
    f: impl Fn(&memcgsim_experiment::CgroupSummary) -> Option<u64>,
) -> u64 {
    let c = r
        .cgroups
        .iter()
        .find(|c| c.cgroup == cg)
        .unwrap_or_else(|| panic!("no cgroup {cg}"));
    f(c).unwrap_or_else(|| panic!("{cg}: figure missing"))
}

fn task<'a>(r: &'a RunResult, name: &str) -> &'a memcgsim_experiment::TaskRecord {
    r.tasks
        .iter()
        .find(|t| t.task == name)
        .unwrap_or_else(|| panic!("no task {name}"))
}

#[test]
fn seed002_scanning_split_scans_only_what_it_frees() {
    for size in ["64M", "128M"] {
        let split = run(
            "experiments/seed002/scanning/small.toml",
            &format!("split-{size}"),
        );
        assert_eq!(
            cgroup_stat(&split, "/hog", |c| c.pgscan),
            0,
            "split scanned the anon"
        );
        let scanned = cgroup_stat(&split, "/reader", |c| c.pgscan);
        assert!(scanned > 0);
        assert_eq!(scanned, cgroup_stat(&split, "/reader", |c| c.pgsteal));

        let unified = run(
            "experiments/seed002/scanning/small.toml",
            &format!("unified-{size}"),
        );
        let wasted = cgroup_stat(&unified, "/hog", |c| c.pgscan);
        assert!(
            wasted > scanned / 2,
            "{size}: unified scanned only {wasted} anon pages"
        );
        assert_eq!(cgroup_stat(&unified, "/hog", |c| c.pgsteal), 0);
    }
}

#[test]
fn seed002_streaming_keeps_the_idle_working_set_with_split_lru() {
    let split = run("experiments/seed002/streaming/small.toml", "split");
    let unified = run("experiments/seed002/streaming/small.toml", "unified");
    assert_eq!(task(&split, "ws").outcome, "exit 0");
    assert_eq!(task(&unified, "ws").outcome, "exit 0");
    assert_eq!(
        task(&split, "ws").majflt,
        0,
        "split LRU lost working set pages"
    );
    assert!(
        task(&unified, "ws").majflt > 1000,
        "unified LRU kept the working set"
    );
    assert!(task(&unified, "ws").elapsed_ns > task(&split, "ws").elapsed_ns);
}

#[test]
fn seed002_pagetest_completes_without_oom() {
    for v in ["split", "unified"] {
        let r = run("experiments/seed002/pagetest/small.toml", v);
        assert_eq!(task(&r, "pagetest").outcome, "exit 0", "{v}");
        assert_eq!(cgroup_stat(&r, "/pagetest", |c| c.oom_kill), 0, "{v}");
        assert!(task(&r, "pagetest").majflt > 0, "{v}: no swap-in");
    }
}

#[test]
fn full_scale_scenarios_parse() {
    for exp in ["scanning", "streaming", "pagetest"] {
        let path = format!(
            "{}/experiments/seed002/{exp}/scenario.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        load(&path).unwrap_or_else(|e| panic!("{e}"));
    }
}
