//! The reclaim counters (/proc/memcgsim/reclaim) in runs and comparisons, the machine's
//! average swap usage, `--ratio` brackets, and generated idle cgroup subtrees.

mod common;

use std::fs;

use common::{scenario, scratch};
use memcgsim_experiment::{
    compare, parse, run_variant, write_comparison, write_results, Comparison, Overwrite, RunResult,
    MACHINE_ROW,
};

fn err(text: &str) -> String {
    parse(text, "t.toml").expect_err("the scenario should not load")
}

/// Two cgroup v1 groups with soft limits under global pressure, an idle subtree, and a
/// variant with the reworked soft-limit reclaim and a larger subtree.
const SOFT: &str = r#"name = "soft"
description = "soft limits under global pressure"

[machine]
memory = "128M"
swap = "128M"
cgroup = "v1"

[[cgroup]]
path = "/a"
files = { "memory.soft_limit_in_bytes" = "16M" }

[[cgroup]]
path = "/b"
files = { "memory.soft_limit_in_bytes" = "100M" }

[[cgroup]]
path = "/idle"
subtree = { groups = 100, fanout = 4 }

[[task]]
name = "a"
cgroup = "/a"
workload = "anon"
args = ["75M", "--passes", "2"]

[[task]]
name = "b"
cgroup = "/b"
workload = "anon"
args = ["75M", "--passes", "2"]

[run]
duration = "5m"
sample = "50ms"
seeds = [1, 2]

[[variant]]
name = "tree"

[[variant]]
name = "rework"
machine = { softlimit = "rework", iter_cost = "200ns" }
subtree = { "/idle" = { groups = 300 } }
"#;

const RECLAIM_KEYS: &[&str] = &[
    "soft_reclaim_calls",
    "soft_reclaim_ns",
    "soft_groups_walked",
    "soft_groups_shrunk",
    "soft_scanned",
    "soft_reclaimed",
    "reclaim_all_fallbacks",
    "soft_limit_updates",
    "memcg_walk_steps",
];

fn has_reclaim_file(r: &RunResult) -> bool {
    !r.reclaim.0.is_empty()
}

#[test]
fn reclaim_counters_are_sampled_summarised_and_printed() {
    let sc = scenario(SOFT);
    let r = run_variant(&sc, "tree", 1, false).unwrap();
    if !has_reclaim_file(&r) {
        eprintln!("the model has no /proc/memcgsim/reclaim; nothing to check");
        return;
    }
    for k in RECLAIM_KEYS {
        let key = format!("reclaim:{k}");
        assert!(
            r.series.index(MACHINE_ROW, &key).is_some(),
            "{key} is not sampled"
        );
        assert_eq!(r.reclaim.get(k), r.series.last(MACHINE_ROW, &key), "{k}");
    }
    assert!(r.reclaim.get("soft_reclaim_calls").unwrap() > 0);
    assert!(r.reclaim.get("soft_reclaimed").unwrap() > 0);

    // The printed summary: one line right after the machine row.
    let text = r.render();
    let lines: Vec<&str> = text.lines().collect();
    let m = lines
        .iter()
        .position(|l| l.starts_with("machine "))
        .unwrap();
    let line = lines[m + 1];
    assert!(line.starts_with("soft-limit reclaim: "), "{text}");
    let calls = r.reclaim.get("soft_reclaim_calls").unwrap();
    assert!(line.contains(&format!(" {calls} calls, ")), "{line}");
    assert!(line.contains("memcg walk steps"), "{line}");
    assert_eq!(lines[m + 2], "");
    assert_eq!(text.matches("soft-limit reclaim:").count(), 1);

    // summary.json has the end values in the file's order; the CSV has the series.
    let json = r.summary_json().unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    for k in RECLAIM_KEYS {
        assert_eq!(v["reclaim"][k].as_u64(), r.reclaim.get(k), "{k}");
    }
    let first = json.find("\"soft_reclaim_calls\"").unwrap();
    let last = json.find("\"memcg_walk_steps\"").unwrap();
    assert!(first < last);
    let csv = r.timeseries_csv();
    assert!(csv.contains(",machine,reclaim:soft_reclaim_calls,"));
}

#[test]
fn no_reclaim_line_when_every_counter_is_zero() {
    // Nothing reclaims: a tiny task in a big machine.
    let sc = scenario(
        r#"name = "calm"
[machine]
memory = "256M"
[[cgroup]]
path = "/"
files = { "cgroup.subtree_control" = "+memory" }
[[cgroup]]
path = "/w"
[[task]]
name = "w"
cgroup = "/w"
workload = "anon"
args = ["256K"]
[run]
duration = "10s"
"#,
    );
    let mut r = run_variant(&sc, "base", 1, false).unwrap();
    let zero = r.reclaim.0.iter().all(|(_, v)| *v == 0);
    assert_eq!(r.render().contains("soft-limit reclaim"), !zero);
    for kv in r.reclaim.0.iter_mut() {
        kv.1 = 0;
    }
    assert!(!r.render().contains("soft-limit reclaim"));
    let v: serde_json::Value = serde_json::from_str(&r.summary_json().unwrap()).unwrap();
    assert!(v["reclaim"].is_object());
    let c = compare(&sc, false).unwrap();
    for f in &c.figures {
        assert!(!f.title.starts_with("soft reclaim"), "{}", f.title);
        assert!(!f.title.starts_with("memcg walk steps"), "{}", f.title);
        assert!(!f.title.starts_with("swap avg"), "{}", f.title);
    }
}

fn figure<'a>(c: &'a Comparison, title: &str) -> Option<&'a memcgsim_experiment::Figure> {
    c.figures.iter().find(|f| f.title == title)
}

#[test]
fn compare_has_swap_avg_and_reclaim_figures_after_the_machine_ones() {
    let sc = scenario(SOFT);
    let c = compare(&sc, false).unwrap();
    let titles: Vec<&str> = c.figures.iter().map(|f| f.title.as_str()).collect();

    // swap avg: next to swap peak, the average of the sampled swap_used.
    let peak = titles
        .iter()
        .position(|t| *t == "swap peak (MiB) of the machine")
        .unwrap();
    assert_eq!(titles[peak + 1], "swap avg (MiB) of the machine");
    let avg = figure(&c, "swap avg (MiB) of the machine").unwrap();
    for (i, &seed) in sc.run.seeds.iter().enumerate() {
        let r = run_variant(&sc, &c.base, seed, false).unwrap();
        let pts = r.series.points(MACHINE_ROW, "swap_used");
        let mean = pts.iter().map(|p| p.1 as f64).sum::<f64>() / pts.len() as f64;
        let got = avg.rows[0].values[i] * 1024.0 * 1024.0;
        assert!((got - mean).abs() <= 1.0, "{got} vs {mean}");
        let peak_v = figure(&c, "swap peak (MiB) of the machine").unwrap().rows[0].values[i];
        assert!(avg.rows[0].values[i] <= peak_v);
    }

    let run = run_variant(&sc, "tree", 1, false).unwrap();
    if !has_reclaim_file(&run) {
        return;
    }
    // The reclaim figures come last, in this order, those that are 0 everywhere left out.
    let expected = [
        ("soft reclaim calls of the machine", "soft_reclaim_calls"),
        ("soft reclaim time", "soft_reclaim_ns"),
        ("soft groups walked of the machine", "soft_groups_walked"),
        ("soft groups shrunk of the machine", "soft_groups_shrunk"),
        ("soft scanned of the machine", "soft_scanned"),
        ("soft reclaimed of the machine", "soft_reclaimed"),
        (
            "reclaim-all fallbacks of the machine",
            "reclaim_all_fallbacks",
        ),
        ("memcg walk steps of the machine", "memcg_walk_steps"),
    ];
    // They follow the machine's last figure of the common set: its memory stall (with a
    // pressure file), else oom_kill, else pgsteal.
    let oom = titles
        .iter()
        .rposition(|t| t.starts_with("memory stall") && t.ends_with("of the machine"))
        .or_else(|| titles.iter().position(|t| *t == "oom_kill of the machine"))
        .unwrap_or_else(|| {
            titles
                .iter()
                .position(|t| *t == "pgsteal of the machine")
                .unwrap()
        });
    let tail: Vec<&str> = titles[oom + 1..].to_vec();
    let runs: Vec<RunResult> = ["tree", "rework"]
        .iter()
        .flat_map(|v| {
            sc.run
                .seeds
                .iter()
                .map(|&s| run_variant(&sc, v, s, false).unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut want: Vec<&str> = Vec::new();
    for (title, key) in expected {
        let any = runs.iter().any(|r| r.reclaim.get(key).unwrap_or(0) > 0);
        if any {
            want.push(title);
        }
    }
    assert_eq!(tail.len(), want.len(), "{tail:?} vs {want:?}");
    for (got, w) in tail.iter().zip(&want) {
        if w.starts_with("soft reclaim time") {
            assert!(
                got.starts_with("soft reclaim time (") && got.ends_with(") of the machine"),
                "{got}"
            );
            let f = figure(&c, got).unwrap();
            assert!(["s", "ms", "us"].contains(&f.unit.as_str()), "{}", f.unit);
        } else {
            assert_eq!(got, w);
        }
    }
    let calls = figure(&c, "soft reclaim calls of the machine").unwrap();
    assert_eq!(
        calls.rows[0].values[0],
        run.reclaim.get("soft_reclaim_calls").unwrap() as f64
    );
}

#[test]
fn ratio_brackets_are_percent_of_the_base() {
    let sc = scenario(SOFT);
    let mut c = compare(&sc, false).unwrap();
    let plain = c.render();
    c.ratio = true;
    let ratio = c.render();
    assert!(plain.contains("[%] is the change against the base's same statistic"));
    assert!(ratio.contains("[%] is the statistic as a percentage of the base's same statistic"));
    // Every row of the other variant: brackets with the ratio, [n/a] where the base is 0.
    for f in &c.figures {
        let base = &f.rows[0];
        assert!(base.ratio_pct.is_none() && base.change_pct.is_none());
        let row = &f.rows[1];
        let rp = row.ratio_pct.as_ref().unwrap();
        let cp = row.change_pct.as_ref().unwrap();
        for (b, r, ch) in [
            (base.stats.min, rp.min, cp.min),
            (base.stats.max, rp.max, cp.max),
            (base.stats.avg, rp.avg, cp.avg),
            (base.stats.std, rp.std, cp.std),
        ] {
            if b == 0.0 {
                assert_eq!(r, None);
            } else {
                let (r, ch) = (r.unwrap(), ch.unwrap());
                assert!((r - (100.0 + ch)).abs() < 1e-9, "{r} vs {ch}");
            }
        }
        let st = &row.stats;
        // A count's min is printed whole, a time's or a size's with two decimals.
        let min = if f.is_count() {
            format!("{:.0}", st.min)
        } else {
            format!("{:.2}", st.min)
        };
        let expected = match rp.min {
            Some(x) => format!("min: {min} [{x:.1}%]"),
            None => format!("min: {min} [n/a]"),
        };
        let block = format!("\n{}:\n", f.title);
        let at = ratio.find(&block).unwrap() + block.len();
        let body: Vec<&str> = ratio[at..].lines().take(2).collect();
        assert!(body[1].contains(&expected), "{} / {expected}", body[1]);
        assert!(!body[0].contains('['), "{}", body[0]);
    }
    assert!(!ratio.contains("[+") && !ratio.contains("[-"));

    // compare.txt holds what was printed; compare.json has both.
    let tmp = scratch();
    let dir = tmp.path();
    write_comparison(&c, dir.join("out"), Overwrite::Safe).unwrap();
    let txt = fs::read_to_string(dir.join("out/compare.txt")).unwrap();
    assert_eq!(txt, ratio);
    let json = fs::read_to_string(dir.join("out/compare.json")).unwrap();
    assert!(json.contains("\"change_pct\"") && json.contains("\"ratio_pct\""));
}

#[test]
fn generated_cgroups_are_counted_but_not_sampled() {
    let sc = scenario(SOFT);
    let r = run_variant(&sc, "rework", 1, false).unwrap();
    assert_eq!(r.setup.generated_cgroups, 300);
    let idle = r.setup.cgroups.iter().find(|c| c.path == "/idle").unwrap();
    let st = idle.subtree.unwrap();
    assert_eq!((st.groups, st.fanout), (300, 2));
    assert!(r
        .render()
        .contains("(cgroup v1, 300 generated idle cgroups)"));
    let names: Vec<&str> = r.cgroups.iter().map(|c| c.cgroup.as_str()).collect();
    assert_eq!(names, ["/a", "/b", "/idle", MACHINE_ROW]);
    assert!(r.series.series.iter().all(|k| !k.cgroup.contains("/g")));
    assert!(!r.timeseries_csv().contains("/idle/g"));
    let v: serde_json::Value = serde_json::from_str(&r.summary_json().unwrap()).unwrap();
    assert_eq!(v["setup"]["generated_cgroups"], 300);
    let tree = run_variant(&sc, "tree", 1, false).unwrap();
    assert_eq!(tree.setup.generated_cgroups, 100);
    let c = compare(&sc, false).unwrap();
    assert!(c.figures.iter().all(|f| !f.title.contains("/idle/g")));
}

#[test]
fn generated_subtree_on_v2_and_its_size() {
    // Each group's per-CPU memory (7,136 bytes on 2 CPUs) is charged to its parent: the
    // 60,000 groups of "wide" hold about 410M of kernel memory.
    let text = r#"name = "scale"
[machine]
memory = "1G"
[[cgroup]]
path = "/"
files = { "cgroup.subtree_control" = "+memory" }
[[cgroup]]
path = "/idle"
subtree = { groups = 10000 }
[[cgroup]]
path = "/idle/work"
[[cgroup]]
path = "/w"
[[task]]
name = "w"
cgroup = "/w"
workload = "anon"
args = ["8M"]
[run]
duration = "1s"
[[variant]]
name = "big"
[[variant]]
name = "none"
subtree = { "/idle" = { groups = 0 } }
[[variant]]
name = "wide"
subtree = { "/idle" = { groups = 60000, fanout = 1000 } }
"#;
    let sc = scenario(text);
    let r = run_variant(&sc, "big", 1, false).unwrap();
    assert_eq!(r.setup.generated_cgroups, 10000);
    assert_eq!(r.tasks[0].outcome, "exit 0");
    // /idle/work sits beside the generated g1 and g2.
    assert!(r.cgroups.iter().any(|c| c.cgroup == "/idle/work"));
    let none = run_variant(&sc, "none", 1, false).unwrap();
    assert_eq!(none.setup.generated_cgroups, 0);
    assert!(!none.render().contains("generated"));
    let wide = run_variant(&sc, "wide", 1, false).unwrap();
    assert_eq!(wide.setup.generated_cgroups, 60000);
}

#[test]
fn runs_with_reclaim_counters_and_subtrees_are_deterministic() {
    let sc = scenario(SOFT);
    let tmp = scratch();
    let dir = tmp.path();
    for n in ["x", "y"] {
        let r = run_variant(&sc, "rework", 2, false).unwrap();
        write_results(&r, dir.join(n), Overwrite::Safe).unwrap();
        let mut c = compare(&sc, false).unwrap();
        c.ratio = true;
        write_comparison(&c, dir.join(format!("c{n}")), Overwrite::Safe).unwrap();
    }
    for f in ["summary.txt", "summary.json", "timeseries.csv", "usage.svg"] {
        assert_eq!(
            fs::read(dir.join("x").join(f)).unwrap(),
            fs::read(dir.join("y").join(f)).unwrap(),
            "{f}"
        );
    }
    for f in ["compare.txt", "compare.json"] {
        assert_eq!(
            fs::read(dir.join("cx").join(f)).unwrap(),
            fs::read(dir.join("cy").join(f)).unwrap(),
            "{f}"
        );
    }
}

// ------------------------------------------------------------------ load-time errors

const BASE: &str = r#"name = "e"
[machine]
memory = "64M"
[[cgroup]]
path = "/"
files = { "cgroup.subtree_control" = "+memory" }
[[cgroup]]
path = "/idle"
SUBTREE
[[task]]
name = "w"
cgroup = "/"
workload = "anon"
args = ["1M"]
[run]
duration = "1s"
"#;

fn with_subtree(s: &str) -> String {
    BASE.replace("SUBTREE", s)
}

#[test]
fn subtree_errors_name_file_line_and_key() {
    let cases = [
        (
            "subtree = { groups = 60001 }",
            "t.toml:9: cgroup.subtree.groups: 60001 is out of range (0 to 60000)",
        ),
        (
            "subtree = { groups = -1 }",
            "t.toml:9: cgroup.subtree.groups: -1 is out of range (0 to 60000)",
        ),
        (
            "subtree = { groups = 5, fanout = 0 }",
            "t.toml:9: cgroup.subtree.fanout: 0 is out of range (1 to 1000)",
        ),
        (
            "subtree = { groups = 5, fanout = 1001 }",
            "t.toml:9: cgroup.subtree.fanout: 1001 is out of range (1 to 1000)",
        ),
        (
            "subtree = { fanout = 3 }",
            "t.toml:9: cgroup.subtree: missing field `groups`",
        ),
        (
            "subtree = { groups = 5, depth = 3 }",
            "t.toml:9: cgroup.subtree",
        ),
        ("subtree = 5", "t.toml:9: cgroup.subtree: invalid type"),
        (
            "subtree = { groups = 1000, fanout = 1 }",
            "t.toml:9: cgroup.subtree: 1000 groups with fanout 1 below /idle make paths",
        ),
    ];
    for (line, want) in cases {
        let e = err(&with_subtree(line));
        assert!(e.starts_with(want), "{line}: {e}");
    }
    // A chain within PATH_MAX is fine.
    scenario(&with_subtree("subtree = { groups = 300, fanout = 1 }"));
    scenario(&with_subtree("subtree = { groups = 0 }"));
}

#[test]
fn subtree_conflicts_are_found_at_load_time() {
    // An explicit cgroup where a generated one goes.
    let t = format!(
        "{}[[cgroup]]\npath = \"/idle/g2/x\"\n",
        with_subtree("subtree = { groups = 5 }")
    );
    let e = err(&t);
    assert!(
        e.starts_with("t.toml:18: cgroup.path: '/idle/g2/x' is inside the subtree generated below /idle (line 9)"),
        "{e}"
    );
    // g3 is not a child of /idle with fanout 2, and g10 is beyond the groups: both fine.
    for p in ["/idle/g3", "/idle/g10", "/idle/gx", "/idle/g01"] {
        scenario(&format!(
            "{}[[cgroup]]\npath = \"{p}\"\n",
            with_subtree("subtree = { groups = 5 }")
        ));
    }
    // On cgroup v2, a task cannot run in a cgroup that gets generated children.
    let t = with_subtree("subtree = { groups = 5 }")
        .replace("cgroup = \"/\"\n", "cgroup = \"/idle\"\n");
    let e = err(&t);
    assert!(
        e.starts_with("t.toml:11: task.cgroup: task 'w' runs in '/idle'"),
        "{e}"
    );
    // On v1 it can.
    scenario(
        &t.replace("memory = \"64M\"", "memory = \"64M\"\ncgroup = \"v1\"")
            .replace("files = { \"cgroup.subtree_control\" = \"+memory\" }", ""),
    );
}

#[test]
fn variant_subtree_errors() {
    let good = with_subtree("subtree = { groups = 5 }");
    let v = |s: &str| format!("{good}[[variant]]\nname = \"v\"\n{s}\n");
    let e = err(&v("subtree = { \"/nope\" = { groups = 3 } }"));
    assert_eq!(
        e,
        "t.toml:19: variant.subtree: no [[cgroup]] has path '/nope'"
    );
    let e = err(&v("subtree = { \"/idle\" = { groups = 70000 } }"));
    assert_eq!(
        e,
        "t.toml:19: variant.subtree./idle.groups: 70000 is out of range (0 to 60000)"
    );
    let e = err(&v("subtree = { \"/idle\" = { groups = 3, fanout = 0 } }"));
    assert!(
        e.starts_with("t.toml:19: variant.subtree./idle.fanout: "),
        "{e}"
    );
    let e = err(&v("subtree = { \"/idle\" = 3 }"));
    assert!(e.starts_with("t.toml:19: variant.subtree./idle: "), "{e}");
    let e = err(&v("subtree = { \"idle\" = { groups = 3 } }"));
    assert!(
        e.starts_with("t.toml:19: variant.subtree: bad cgroup path"),
        "{e}"
    );
    let e = err(&v(
        "subtree = { \"/idle\" = { groups = 3000, fanout = 1 } }",
    ));
    assert!(e.starts_with("t.toml:19: cgroup.subtree: "), "{e}");
    assert!(e.contains("(variant v)"), "{e}");
    // A variant override replaces the whole subtree (the fanout goes back to 2).
    let sc = scenario(&format!(
        "{}[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nsubtree = {{ \"/idle\" = {{ groups = 7 }} }}\n",
        with_subtree("subtree = { groups = 5, fanout = 3 }")
    ));
    let a = sc.setup("a").unwrap();
    let b = sc.setup("b").unwrap();
    let st = |s: &memcgsim_experiment::Setup| {
        let t = s
            .cgroups
            .iter()
            .find(|c| c.path == "/idle")
            .unwrap()
            .subtree
            .unwrap();
        (t.groups, t.fanout)
    };
    assert_eq!(st(&a), (5, 3));
    assert_eq!(st(&b), (7, 2));
    assert_eq!((a.generated_cgroups, b.generated_cgroups), (5, 7));
}

#[test]
fn soft_limit_machine_keys_are_accepted() {
    let t = |m: &str| BASE.replace("SUBTREE", "").replace("memory = \"64M\"", m);
    for m in [
        "memory = \"64M\"\nsoftlimit = \"tree\"",
        "memory = \"64M\"\nsoftlimit = \"rework-walk\"\niter_cost = \"1us\"",
    ] {
        scenario(&t(m));
    }
    let e = err(&t("memory = \"64M\"\nsoftlimit = \"bogus\""));
    assert!(e.starts_with("t.toml:4: machine.softlimit: "), "{e}");
    let e = err(&format!(
        "{}[[variant]]\nname = \"v\"\nmachine = {{ iter_cost = \"fast\" }}\n",
        t("memory = \"64M\"")
    ));
    assert!(e.starts_with("t.toml:19: machine.iter_cost: "), "{e}");
}

/// A v2 run that sets no soft limit: its summary has no soft-limit line (the reclaim walks
/// have a line of their own), no column that is `-` in every row, and a machine peak that
/// no group's peak exceeds.
#[test]
fn run_summary_shows_only_what_the_run_used() {
    let sc = scenario(
        r#"name = "limited"
[machine]
memory = "128M"
swap = "128M"
[[cgroup]]
path = "/"
files = { "cgroup.subtree_control" = "+memory" }
[[cgroup]]
path = "/w"
files = { "memory.max" = "16M" }
[[task]]
name = "w"
cgroup = "/w"
workload = "anon"
args = ["32M", "--passes", "2"]
[run]
duration = "30s"
until = "tasks"
sample = "1s"
"#,
    );
    let r = run_variant(&sc, "base", 1, false).unwrap();
    let text = r.render();
    assert!(!text.contains("soft-limit"), "{text}");
    if r.reclaim.get("memcg_walk_steps").unwrap_or(0) > 0 {
        assert!(text.contains("\nreclaim walks: "), "{text}");
    }
    let header = text.lines().find(|l| l.starts_with("cgroup ")).unwrap();
    for col in ["usage", "peak", "pgfault", "high", "max"] {
        assert!(header.split_whitespace().any(|c| c == col), "{header}");
    }
    let machine = r.cgroups.iter().find(|c| c.cgroup == MACHINE_ROW).unwrap();
    let w = r.cgroups.iter().find(|c| c.cgroup == "/w").unwrap();
    assert!(w.usage_peak.unwrap() <= machine.usage_peak.unwrap());
    assert!(w.swap_peak.unwrap() <= machine.swap_peak.unwrap());
    assert!(w.swap_peak.unwrap() > 0, "the task did not swap");
    let sampled = r.series.max(MACHINE_ROW, "used").unwrap();
    assert!(machine.usage_peak.unwrap() >= sampled);

    // On cgroup v1 the `high` column (no such file) is left out.
    let v1 = scenario(
        r#"name = "v1"
[machine]
memory = "128M"
cgroup = "v1"
[[cgroup]]
path = "/w"
[[task]]
name = "w"
cgroup = "/w"
workload = "anon"
args = ["1M"]
[run]
duration = "2s"
"#,
    );
    let text = run_variant(&v1, "base", 1, false).unwrap().render();
    let header = text.lines().find(|l| l.starts_with("cgroup ")).unwrap();
    assert!(!header.split_whitespace().any(|c| c == "high"), "{header}");
    assert!(header.split_whitespace().any(|c| c == "max"), "{header}");
}
