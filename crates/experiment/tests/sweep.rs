//! `[[sweep]]`: the grid's points, their set-ups, the errors a bad axis gives, and the table,
//! which must not depend on the number of threads and must hold what a variant with the same
//! settings would give.

use memcgsim_experiment::sweep::{point_setup, points, row, run_point, sweep, Table};
use memcgsim_experiment::{parse, run_variant, Scenario};

const BASE: &str = r#"
name = "sw"
[machine]
memory = "256M"
swap = "256M"
[[cgroup]]
path = "/A"
files = { "memory.high" = "max" }
[[task]]
name = "ws"
cgroup = "/A"
workload = "usemem"
args = ["64M", "--random", "--passes", "2", "--seed", "{seed}"]
[run]
duration = "60s"
seeds = [1, 2]
[[variant]]
name = "v60"
machine = { swappiness = 60 }
[[variant]]
name = "v100"
machine = { swappiness = 100 }
"#;

fn scenario(sweep: &str) -> Result<Scenario, String> {
    parse(&format!("{BASE}\n{sweep}"), "sw.toml")
}

const TWO_AXES: &str = r#"
[[sweep]]
name = "high"
cgroup = "/A"
file = "memory.high"
values = ["32M", "48M", "max"]
[[sweep]]
name = "size"
task = "ws"
arg = 0
values = ["40M", "64M"]
"#;

#[test]
fn points_cover_variants_grid_and_seeds_in_order() {
    let sc = scenario(TWO_AXES).unwrap();
    let p = points(&sc);
    assert_eq!(p.len(), 2 * 3 * 2 * 2);
    let labels: Vec<String> = p
        .iter()
        .take(5)
        .map(|x| format!("{} {}", x.label(&sc), x.seed))
        .collect();
    assert_eq!(
        labels,
        [
            "v60[high=32M,size=40M] 1",
            "v60[high=32M,size=40M] 2",
            "v60[high=32M,size=64M] 1",
            "v60[high=32M,size=64M] 2",
            "v60[high=48M,size=40M] 1",
        ]
    );
    assert_eq!(p[12].variant, "v100");
    let setup = point_setup(&sc, &p[2]).unwrap();
    let a = setup.cgroups.iter().find(|c| c.path == "/A").unwrap();
    assert_eq!(
        a.files
            .iter()
            .find(|s| s.key == "memory.high")
            .unwrap()
            .value,
        "32M"
    );
    assert_eq!(setup.tasks[0].args[0], "64M");
    assert_eq!(setup.variant, "v60[high=32M,size=64M]");
    assert!(points(&scenario("").unwrap()).is_empty());
}

#[test]
fn bad_axes_are_refused_with_file_and_line() {
    let cases = [
        ("[[sweep]]\nname = \"x\"\nvalues = [1]\n", "must set one thing"),
        (
            "[[sweep]]\nname = \"x\"\nvalues = [1]\nmachine = \"swappiness\"\ncgroup = \"/A\"\n",
            "must set one thing",
        ),
        ("[[sweep]]\nname = \"x\"\nvalues = []\nmachine = \"swappiness\"\n", "1 to 10000 values"),
        ("[[sweep]]\nname = \"x\"\nvalues = [300]\nmachine = \"swappiness\"\n", "swappiness"),
        ("[[sweep]]\nname = \"x\"\nvalues = [1]\nmachine = \"bogus\"\n", "bogus"),
        (
            "[[sweep]]\nname = \"x\"\nvalues = [\"1M\"]\ncgroup = \"/B\"\nfile = \"memory.max\"\n",
            "no [[cgroup]] /B",
        ),
        ("[[sweep]]\nname = \"x\"\nvalues = [\"1M\"]\ntask = \"ws\"\narg = 9\n", "no argument 9"),
        ("[[sweep]]\nname = \"x\"\nvalues = [\"1M\"]\ntask = \"nope\"\narg = 0\n", "no [[task]] named 'nope'"),
        (
            "[[sweep]]\nname = \"x\"\nvalues = [1]\nmachine = \"cpus\"\n[[sweep]]\nname = \"x\"\nvalues = [1]\nmachine = \"seed\"\n",
            "used twice",
        ),
        ("[[sweep]]\nname = \"x\"\nvalues = [[1]]\nmachine = \"cpus\"\n", "expected a string or a number"),
        ("[[sweep]]\nname = \"x\"\nvalues = [1]\nmachine = \"cpus\"\nextra = 1\n", "extra"),
    ];
    for (text, want) in cases {
        let e = scenario(text).expect_err(text);
        assert!(e.starts_with("sw.toml:"), "{e}");
        assert!(e.contains(want), "{text}: {e}");
    }
    let big = format!(
        "[[sweep]]\nname = \"a\"\nmachine = \"cpus\"\nvalues = [{}]\n[[sweep]]\nname = \"b\"\nmachine = \"seed\"\nvalues = [{}]\n",
        vec!["2"; 10000].join(","),
        vec!["1"; 100].join(",")
    );
    assert!(scenario(&big)
        .unwrap_err()
        .contains("more than 1000000 runs"));
}

#[test]
fn the_table_is_what_the_runs_give_whatever_the_threads() {
    let sc = scenario(TWO_AXES).unwrap();
    let one = sweep(&sc, 1, &|_| {}).unwrap();
    let four = sweep(&sc, 4, &|_| {}).unwrap();
    assert_eq!(one, four);
    assert_eq!(one.rows.len(), 24);
    assert_eq!(&one.columns[..4], ["variant", "high", "size", "seed"]);
    let col = |name: &str| one.columns.iter().position(|c| c == name).unwrap();
    // A lower memory.high costs the 64M working set more reclaim.
    let pgscan = |i: usize| one.rows[i][col("cgroup./A.pgscan")].as_u64().unwrap();
    assert!(
        pgscan(2) > pgscan(10),
        "32M {} vs max {}",
        pgscan(2),
        pgscan(10)
    );
    assert_eq!(one.rows[2][col("task.ws.outcome")], "exit 0");

    // A point is the variant with its files set: the same figures.
    let with_high = BASE.replace("\"memory.high\" = \"max\"", "\"memory.high\" = \"48M\"");
    let sc2 = parse(&with_high, "sw.toml").unwrap();
    let direct = run_variant(&sc2, "v100", 2, false).unwrap();
    let p = points(&sc)
        .into_iter()
        .find(|p| p.variant == "v100" && p.values == ["48M", "64M"] && p.seed == 2)
        .unwrap();
    let via = run_point(&sc, &p).unwrap();
    assert_eq!(via.cgroups, direct.cgroups);
    assert_eq!(via.variant, "v100[high=48M,size=64M]");
    let r = row(&sc, &p, &via);
    assert_eq!(r[0], ("variant".to_string(), "v100".into()));
}

#[test]
fn csv_quotes_what_needs_quoting() {
    let t = Table::from_rows(vec![
        vec![("a".into(), "x,y".into()), ("b".into(), 1.into())],
        vec![
            ("a".into(), "say \"hi\"".into()),
            ("c".into(), serde_json::Value::Null),
        ],
    ]);
    assert_eq!(t.columns, ["a", "b", "c"]);
    assert_eq!(t.to_csv(), "a,b,c\n\"x,y\",1,\n\"say \"\"hi\"\"\",,\n");
}

const SENPAI: &str = r#"
[[controller]]
name = "senpai"
kind = "senpai"
cgroup = "/A"
start = "5s"
min_size = "8M"
"#;

#[test]
fn a_controller_setting_is_an_axis() {
    let sc = scenario(&format!(
        "{SENPAI}\n[[sweep]]\nname = \"target\"\ncontroller = \"senpai\"\nkey = \"pressure\"\nvalues = [\"1ms\", \"100ms\"]\n"
    ))
    .unwrap();
    let p = points(&sc);
    assert_eq!(p.len(), 2 * 2 * 2);
    let setup = point_setup(&sc, &p[2]).unwrap();
    let s = &setup.controllers[0].settings;
    assert_eq!(
        s.iter().find(|s| s.key == "pressure").unwrap().value,
        "100ms"
    );
    assert_eq!(setup.variant, "v60[target=100ms]");
    // `enabled` turns the controller on and off.
    let sc = scenario(&format!(
        "{SENPAI}\n[[sweep]]\nname = \"on\"\ncontroller = \"senpai\"\nkey = \"enabled\"\nvalues = [false, true]\n"
    ))
    .unwrap();
    let p = points(&sc);
    assert!(!point_setup(&sc, &p[0]).unwrap().controllers[0].enabled);
    assert!(point_setup(&sc, &p[2]).unwrap().controllers[0].enabled);
    // Bad axes: every value is checked as the controller would take it.
    let cases = [
        (
            "controller = \"nope\"\nkey = \"pressure\"\nvalues = [\"1ms\"]\n",
            "no [[controller]] named 'nope'",
        ),
        (
            "controller = \"senpai\"\nkey = \"pressure\"\nvalues = [\"1ms\", \"fast\"]\n",
            "controller.pressure",
        ),
        (
            "controller = \"senpai\"\nkey = \"bogus\"\nvalues = [1]\n",
            "bogus",
        ),
        (
            "controller = \"senpai\"\nkey = \"kind\"\nvalues = [\"oomd\"]\n",
            "not swept",
        ),
        (
            "controller = \"senpai\"\nkey = \"enabled\"\nvalues = [\"maybe\"]\n",
            "true or false",
        ),
        (
            "controller = \"senpai\"\nvalues = [1]\n",
            "must set one thing",
        ),
    ];
    for (axis, want) in cases {
        let text = format!("{SENPAI}\n[[sweep]]\nname = \"x\"\n{axis}");
        let e = scenario(&text).expect_err(axis);
        assert!(e.starts_with("sw.toml:"), "{e}");
        assert!(e.contains(want), "{axis}: {e}");
    }
}

#[test]
fn chart_series_average_the_seeds_of_each_point() {
    let t = Table {
        columns: ["variant", "a", "seed", "x", "y"]
            .map(String::from)
            .to_vec(),
        rows: vec![
            serde_json::json!(["v", "1", 1, 10, 1.0]),
            serde_json::json!(["v", "1", 2, 20, 3.0]),
            serde_json::json!(["v", "2", 1, 30, 5.0]),
            serde_json::json!(["w", "1", 1, 40, 7.0]),
        ]
        .into_iter()
        .map(|r| r.as_array().unwrap().clone())
        .collect(),
    };
    let s = t.xy_series("x", "y", Some("variant")).unwrap();
    assert_eq!(
        s,
        [
            ("v".to_string(), vec![(15.0, 2.0), (30.0, 5.0)]),
            ("w".to_string(), vec![(40.0, 7.0)]),
        ]
    );
    assert_eq!(t.xy_series("x", "y", None).unwrap()[0].1.len(), 3);
    assert!(t
        .xy_series("x", "nope", None)
        .unwrap_err()
        .contains("no column 'nope'"));
    assert!(t
        .xy_series("a", "y", None)
        .unwrap_err()
        .contains("not a number"));
}
