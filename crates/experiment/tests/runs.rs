//! Runs of small scenarios: summaries, determinism, charts, comparisons, atomic output.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::{scenario, scratch};
use memcgsim_experiment::{
    compare, compare_jobs, run_variant, write_comparison, write_dir_atomic, write_results,
    Overwrite, MARKER,
};

const SMALL: &str = r#"name = "small"

[machine]
memory = "64M"
swap = "32M"

[[cgroup]]
path = "/grp"
files = { "memory.max" = "32M" }

[[cgroup]]
path = "/tight"
files = { "memory.max" = "6M" }

[[task]]
name = "eater"
cgroup = "/grp"
workload = "anon"
args = ["8M"]

[[task]]
name = "squeezed"
cgroup = "/tight"
workload = "anon"
args = ["10M", "--passes", "2"]
start = "5ms"

[run]
duration = "30s"
sample = "2ms"
seeds = [7]
"#;

fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        // A folder's contents are not compared, only its presence.
        let data = if e.path().is_dir() {
            Vec::new()
        } else {
            fs::read(e.path()).unwrap()
        };
        m.insert(e.file_name().to_string_lossy().into_owned(), data);
    }
    m
}

#[test]
fn small_scenario_summary_is_sane() {
    let sc = scenario(SMALL);
    let r = run_variant(&sc, "base", 7, false).unwrap();
    assert_eq!(r.variant, "base");
    assert_eq!(r.seed, 7);
    let eater = r.tasks.iter().find(|t| t.name == "eater").unwrap();
    assert_eq!(eater.outcome, "exit 0");
    assert_eq!(eater.start_ns, Some(0));
    assert!(eater.elapsed_ns > 0);
    assert!(eater.minflt >= 2048, "{eater:?}");
    let sq = r.tasks.iter().find(|t| t.name == "squeezed").unwrap();
    assert_eq!(sq.start_ns, Some(5_000_000));
    assert_eq!(sq.outcome, "exit 0");
    assert!(sq.majflt > 0, "swapped pages fault back in: {sq:?}");

    let grp = r.cgroups.iter().find(|c| c.cgroup == "/grp").unwrap();
    assert!(grp.usage_peak.unwrap() >= 8 << 20, "{grp:?}");
    // Its tasks are gone: what stays charged is the per-CPU charge stock, under one batch of
    // 64 pages (its kernel pages made the charges no longer a multiple of the batch).
    assert!(grp.usage_end.unwrap() < 64 * 4096, "{grp:?}");
    assert_eq!(grp.oom_kill, Some(0));
    let tight = r.cgroups.iter().find(|c| c.cgroup == "/tight").unwrap();
    assert!(tight.usage_peak.unwrap() <= 6 << 20, "{tight:?}");
    assert!(tight.max.unwrap() > 0, "{tight:?}");
    assert!(tight.pgscan.unwrap() > 0 && tight.pgsteal.unwrap() > 0);
    assert!(tight.swap_peak.unwrap() > 0);
    let machine = r.cgroups.iter().find(|c| c.cgroup == "machine").unwrap();
    assert!(machine.pswpout.unwrap() > 0);
    // Ended when the tasks did, well before the 30 s duration.
    assert!(r.end_ns < 30_000_000_000);
    assert!(r.series.times_ns.len() > 2);
    assert_eq!(r.series.times_ns[0], 0);

    let table = r.render();
    assert!(table.contains("/grp") && table.contains("eater") && table.contains("exit 0"));
    let csv = r.timeseries_csv();
    assert!(csv.starts_with("time_s,cgroup,key,value\n"));
    assert!(csv.contains("0.000000000,/grp,memory.current,0\n"));
    assert!(csv.contains(",/tight,memory.stat:pgscan,"));
}

#[test]
fn copies_and_repeats_run_in_parallel_and_in_turn() {
    let text = r#"name = "rep"
[machine]
memory = "32M"
[[cgroup]]
path = "/A"
[[task]]
name = "w"
cgroup = "/A"
workload = "anon"
args = ["2M"]
count = 2
repeat = 3
[run]
duration = "10s"
"#;
    let r = run_variant(&scenario(text), "base", 1, false).unwrap();
    let names: Vec<&str> = r.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["w.1#1", "w.1#2", "w.1#3", "w.2#1", "w.2#2", "w.2#3"]
    );
    for copy in [1, 2] {
        let runs: Vec<_> = r.tasks.iter().filter(|t| t.copy == copy).collect();
        for w in runs.windows(2) {
            assert!(w[1].start_ns.unwrap() >= w[0].end_ns.unwrap(), "{w:?}");
        }
        assert!(runs.iter().all(|t| t.outcome == "exit 0"));
    }
    assert_eq!(r.tasks[0].start_ns, r.tasks[3].start_ns);
}

#[test]
fn until_duration_runs_the_whole_duration_and_holders_count_as_done() {
    let text = r#"name = "hold"
[machine]
memory = "32M"
[[cgroup]]
path = "/A"
[[task]]
name = "h"
cgroup = "/A"
workload = "anon"
args = ["2M", "--hold"]
[[task]]
name = "late"
cgroup = "/A"
workload = "anon"
args = ["1M"]
start = "1h"
[run]
duration = "50ms"
sample = "10ms"
"#;
    let sc = scenario(text);
    let r = run_variant(&sc, "base", 1, false).unwrap();
    assert_eq!(r.end_ns, 50_000_000);
    let h = r.tasks.iter().find(|t| t.task == "h").unwrap();
    assert_eq!(h.outcome, "holding");
    let late = r.tasks.iter().find(|t| t.task == "late").unwrap();
    assert_eq!(late.outcome, "not started");
    let times = &r.series.times_ns;
    assert_eq!(
        times,
        &[0, 10_000_000, 20_000_000, 30_000_000, 40_000_000, 50_000_000]
    );

    // Without the late task, `until = "tasks"` ends once the holder holds.
    let early = text.replace("start = \"1h\"", "start = \"0s\"");
    let r = run_variant(&scenario(&early), "base", 1, false).unwrap();
    assert!(r.end_ns < 50_000_000, "{}", r.end_ns);
    let full = format!("{text}until = \"duration\"\n").replace("start = \"1h\"", "start = \"0s\"");
    let r = run_variant(&scenario(&full), "base", 1, false).unwrap();
    assert_eq!(r.end_ns, 50_000_000);
}

#[test]
fn a_task_refused_its_memory_says_why_in_the_summary() {
    // 3G on a 1G machine without swap: the overcommit check refuses the mapping, and the
    // program exits 1 after saying so, as the summary and summary.json must show.
    let text = r#"name = "refused"
[machine]
memory = "1G"
swap = "0"
[[task]]
name = "big"
cgroup = "/"
workload = "anon"
args = ["3G"]
[[task]]
name = "fits"
cgroup = "/"
workload = "anon"
args = ["1M"]
[run]
duration = "1s"
sample = "10ms"
"#;
    let r = run_variant(&scenario(text), "base", 1, false).unwrap();
    let big = r.tasks.iter().find(|t| t.task == "big").unwrap();
    assert_eq!(big.outcome, "exit 1");
    let why = big.error.as_deref().expect("the refusal is recorded");
    assert!(
        why.starts_with("cannot allocate 3.0G: more than RAM + swap"),
        "{why}"
    );
    assert!(r
        .tasks
        .iter()
        .find(|t| t.task == "fits")
        .unwrap()
        .error
        .is_none());
    let summary = r.render();
    assert!(summary.contains(&format!("\nbig: {why}\n")), "{summary}");
    let json = r.summary_json().unwrap();
    assert_eq!(json.matches("\"error\"").count(), 1, "{json}");
}

#[test]
fn a_holder_killed_later_is_reported_killed() {
    // h holds 6M of an 8M limit; late then needs 4M in the same group and the memcg OOM
    // killer takes the largest task, the holder.
    let text = r#"name = "hold-kill"
[machine]
memory = "64M"
swap = "0"
[[cgroup]]
path = "/A"
files = { "memory.max" = "8M" }
[[task]]
name = "h"
cgroup = "/A"
workload = "anon"
args = ["6M", "--hold"]
[[task]]
name = "late"
cgroup = "/A"
workload = "anon"
args = ["4M"]
start = "100ms"
[run]
duration = "1s"
sample = "10ms"
until = "duration"
"#;
    let r = run_variant(&scenario(text), "base", 1, false).unwrap();
    let h = r.tasks.iter().find(|t| t.task == "h").unwrap();
    assert_eq!(h.outcome, "killed");
    assert!(h.end_ns.unwrap() >= 100_000_000, "{h:?}");
    let late = r.tasks.iter().find(|t| t.task == "late").unwrap();
    assert_eq!(late.outcome, "exit 0");
}

#[test]
fn cgroup_v1_scenario_runs() {
    let text = r#"name = "v1"
[machine]
memory = "32M"
swap = "16M"
cgroup = "v1"
[[cgroup]]
path = "/A"
files = { "memory.limit_in_bytes" = "4M" }
[[task]]
name = "a"
cgroup = "/A"
workload = "anon"
args = ["6M"]
[run]
duration = "10s"
"#;
    let r = run_variant(&scenario(text), "base", 1, false).unwrap();
    assert_eq!(r.cgroup_version, "v1");
    let a = r.cgroups.iter().find(|c| c.cgroup == "/A").unwrap();
    assert!(
        a.usage_peak.unwrap() <= 4 << 20 && a.usage_peak.unwrap() > 2 << 20,
        "{a:?}"
    );
    assert!(a.pgfault.unwrap() > 0);
    assert_eq!(r.tasks[0].outcome, "exit 0");
}

#[test]
fn runtime_errors_name_file_and_line() {
    // A v2 cgroup whose parent does not give it the memory controller has no memory.max.
    let text = r#"name = "bad"
[machine]
memory = "32M"
[[cgroup]]
path = "/A"
[[cgroup]]
path = "/A/B"
files = { "memory.max" = "4M" }
[run]
duration = "1s"
"#;
    let e = run_variant(&scenario(text), "base", 1, false).unwrap_err();
    assert!(
        e.starts_with("test.toml:8: cgroup.files.memory.max: "),
        "{e}"
    );
    let e = run_variant(&scenario(text), "nope", 1, false).unwrap_err();
    assert!(e.contains("no variant named 'nope'"), "{e}");
}

#[test]
fn same_scenario_variant_and_seed_give_identical_folders() {
    let sc = scenario(SMALL);
    let tmp = scratch();
    let d = tmp.path();
    let a = d.join("a");
    let b = d.join("b");
    write_results(
        &run_variant(&sc, "base", 7, false).unwrap(),
        &a,
        Overwrite::Safe,
    )
    .unwrap();
    write_results(
        &run_variant(&sc, "base", 7, false).unwrap(),
        &b,
        Overwrite::Safe,
    )
    .unwrap();
    let fa = files_of(&a);
    let fb = files_of(&b);
    assert_eq!(
        fa.keys().collect::<Vec<_>>(),
        [
            MARKER,
            "faults.png",
            "faults.svg",
            "pressure.png",
            "pressure.svg",
            "reclaim.png",
            "reclaim.svg",
            "summary.json",
            "summary.txt",
            "timeseries.csv",
            "usage.png",
            "usage.svg"
        ]
    );
    for (name, bytes) in &fa {
        assert!(bytes == &fb[name], "{name} differs between two equal runs");
    }
}

#[test]
fn charts_are_written_as_svg_and_png() {
    let sc = scenario(SMALL);
    let r = run_variant(&sc, "base", 7, false).unwrap();
    let tmp = scratch();
    let d = tmp.path();
    memcgsim_experiment::render_charts(&r, d).unwrap();
    for stem in ["usage", "faults", "reclaim", "pressure"] {
        let png = fs::read(d.join(format!("{stem}.png"))).unwrap();
        assert!(png.len() > 1000, "{stem}.png is too small");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}.png signature");
        let svg = fs::read_to_string(d.join(format!("{stem}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") || svg.starts_with("<?xml"),
            "{stem}.svg"
        );
        for cg in ["/grp", "/tight", "machine"] {
            assert!(svg.contains(&format!("\n{cg}\n")), "{stem}.svg lacks {cg}");
        }
    }
    let summary = fs::read_dir(d).unwrap().count();
    assert_eq!(
        summary, 8,
        "usage, faults, reclaim and pressure, each as SVG and PNG"
    );
}

#[test]
fn compare_two_limits() {
    let text = r#"name = "limits"
description = "a 12M task under 8M and 16M limits"
[machine]
memory = "64M"
swap = "64M"
[[cgroup]]
path = "/A"
files = { "memory.max" = "8M" }
[[task]]
name = "t"
cgroup = "/A"
workload = "anon"
args = ["12M", "--passes", "2"]
[run]
duration = "1m"
sample = "5ms"
seeds = [1, 2]
[[variant]]
name = "small"
[[variant]]
name = "large"
cgroup = { "/A" = { "memory.max" = "16M" } }
"#;
    let sc = scenario(text);
    let c = compare(&sc, false).unwrap();
    assert_eq!(c.variants, ["small", "large"]);
    assert_eq!(c.base, "small");
    let text_out = c.render();
    assert!(
        text_out.contains("  small:") && text_out.contains("  large:"),
        "{text_out}"
    );
    assert!(text_out.contains("%]"), "{text_out}");
    assert!(text_out.contains("elapsed (ms) of task t:"), "{text_out}");
    let peak = c
        .figures
        .iter()
        .find(|f| f.title == "peak usage (MiB) of cgroup /A")
        .expect("a peak figure");
    assert_eq!(peak.rows.len(), 2);
    assert_eq!(peak.rows[0].stats.runs, 2);
    assert!(peak.rows[0].change_pct.is_none());
    let ch = peak.rows[1].change_pct.as_ref().unwrap();
    assert!(
        ch.max.unwrap() > 0.0,
        "the larger limit lets usage peak higher"
    );
    let majflt = c
        .figures
        .iter()
        .find(|f| f.title == "majflt of task t")
        .unwrap();
    assert!(majflt.rows[0].stats.avg > majflt.rows[1].stats.avg);

    let tmp = scratch();
    let d = tmp.path();
    let out = d.join("compare");
    write_comparison(&c, &out, Overwrite::Safe).unwrap();
    assert_eq!(
        fs::read_to_string(out.join("compare.txt")).unwrap(),
        text_out
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("compare.json")).unwrap()).unwrap();
    assert_eq!(json["base"], "small");
    assert!(json["figures"].as_array().unwrap().len() > 3);
    // Deterministic.
    assert_eq!(compare(&sc, false).unwrap(), c);
}

const LIMITS3: &str = r#"name = "limits3"
[machine]
memory = "64M"
swap = "64M"
[[cgroup]]
path = "/A"
files = { "memory.max" = "8M" }
[[task]]
name = "t"
cgroup = "/A"
workload = "anon"
args = ["12M", "--passes", "2"]
[run]
duration = "1m"
sample = "5ms"
seeds = [1, 2, 3]
[[variant]]
name = "small"
[[variant]]
name = "mid"
cgroup = { "/A" = { "memory.max" = "12M" } }
[[variant]]
name = "large"
cgroup = { "/A" = { "memory.max" = "16M" } }
"#;

#[test]
fn compare_on_several_threads_equals_the_sequential_comparison() {
    let sc = scenario(LIMITS3);
    let one = compare(&sc, false).unwrap();
    assert_eq!(one.variants, ["small", "mid", "large"]);
    let tmp = scratch();
    let seq = tmp.path().join("seq");
    write_comparison(&one, &seq, Overwrite::Safe).unwrap();
    for jobs in [2, 4, 64] {
        let par = compare_jobs(&sc, false, jobs).unwrap();
        assert_eq!(par, one, "jobs {jobs}");
        let dir = tmp.path().join(format!("jobs{jobs}"));
        write_comparison(&par, &dir, Overwrite::Safe).unwrap();
        assert_eq!(files_of(&dir), files_of(&seq), "jobs {jobs}");
    }
}

#[test]
fn compare_on_several_threads_reports_the_first_failing_run() {
    // Values the kernel refuses when they are written, at the start of the variant's run.
    let text = LIMITS3
        .replace(r#""12M" } }"#, r#""12M", "memory.oom.group" = "7" } }"#)
        .replace(r#""16M" } }"#, r#""16M", "memory.oom.group" = "9" } }"#);
    let sc = scenario(&text);
    let seq = compare(&sc, false).unwrap_err();
    assert!(seq.contains("'7'") && seq.contains("variant mid"), "{seq}");
    for jobs in [2, 3, 9] {
        assert_eq!(
            compare_jobs(&sc, false, jobs).unwrap_err(),
            seq,
            "jobs {jobs}"
        );
    }
}

#[test]
fn results_folders_never_remove_what_memcgsim_did_not_write() {
    let tmp = scratch();
    let d = tmp.path();
    let r = run_variant(&scenario(SMALL), "base", 7, false).unwrap();

    // A folder of the user's is refused and left as it was.
    let mine = d.join("mine");
    fs::create_dir_all(mine.join("sub")).unwrap();
    fs::write(mine.join("stale.txt"), "old").unwrap();
    fs::write(mine.join("sub/deep.txt"), "old").unwrap();
    let e = write_results(&r, &mine, Overwrite::Safe).unwrap_err();
    assert!(e.contains("holds files memcgsim did not write"), "{e}");
    assert_eq!(
        fs::read_to_string(mine.join("sub/deep.txt")).unwrap(),
        "old"
    );
    assert_eq!(files_of(&mine).len(), 2);

    // With --force its files go in beside the user's.
    write_results(&r, &mine, Overwrite::Force).unwrap();
    let names: Vec<String> = files_of(&mine).into_keys().collect();
    assert!(names.contains(&"stale.txt".to_string()));
    assert!(names.contains(&"sub".to_string()));
    assert!(names.contains(&"summary.json".to_string()));
    assert!(names.contains(&MARKER.to_string()));

    // A results folder memcgsim wrote is replaced wholly, and nothing is left beside it.
    let out = d.join("run");
    write_results(&r, &out, Overwrite::Safe).unwrap();
    let first = files_of(&out);
    write_results(&r, &out, Overwrite::Safe).unwrap();
    assert_eq!(files_of(&out), first);
    let mut siblings: Vec<String> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    siblings.sort();
    assert_eq!(siblings, ["mine", "run"]);

    // A file at the path is refused, and kept.
    let file = d.join("file.txt");
    fs::write(&file, "notes").unwrap();
    let e = write_results(&r, &file, Overwrite::Safe).unwrap_err();
    assert!(e.contains("is not a folder"), "{e}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "notes");

    // A failed write leaves the old folder as it was.
    let before = files_of(&out);
    let e = write_dir_atomic(&out, Overwrite::Safe, |tmp| {
        fs::write(tmp.join("half.txt"), "x").unwrap();
        Err("disk on fire".to_string())
    })
    .unwrap_err();
    assert_eq!(e, "disk on fire");
    assert_eq!(files_of(&out), before);
    assert_eq!(fs::read_dir(d).unwrap().count(), 3);
}

#[test]
fn timed_writes_are_made_at_their_time_and_reported() {
    // A group holds 64M; at 2 s memory.reclaim takes half of it to swap; at 3 s a
    // memory.reclaim larger than what can go fails with EAGAIN, and the run goes on; the run
    // waits for the last write though the task holds from the start.
    let text = r#"name = "writes"
[machine]
memory = "512M"
swap = "512M"
thp = "never"
[[cgroup]]
path = "/a"
[[task]]
name = "t"
cgroup = "/a"
workload = "anon"
args = ["64M", "--hold"]
[[write]]
at = "3s"
cgroup = "/"
file = "cgroup.subtree_control"
value = "+nosuch"
[[write]]
at = "2s"
cgroup = "/a"
file = "memory.reclaim"
value = "32M"
[run]
duration = "1m"
"#;
    let r = run_variant(&scenario(text), "base", 1, false).unwrap();
    let got: Vec<_> = r
        .writes
        .iter()
        .map(|w| {
            (
                w.time_ns,
                w.path.as_str(),
                w.value.as_str(),
                w.result.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (2_000_000_000, "/a/memory.reclaim", "32M", "ok"),
            (
                3_000_000_000,
                "/cgroup.subtree_control",
                "+nosuch",
                "EINVAL"
            ),
        ]
    );
    assert!(r.end_ns >= 3_000_000_000);
    let swap = r.cgroups.iter().find(|c| c.cgroup == "/a").unwrap();
    assert!(swap.swap_peak.unwrap_or(0) >= 32 << 20, "{swap:?}");
    let report = r.render();
    assert!(
        report.contains("timed writes:\n      2.000s 32M > /a/memory.reclaim: ok\n"),
        "{report}"
    );
}
