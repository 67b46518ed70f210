//! Scenario parse errors name the file, the line and the key.

use memcgsim_experiment::{parse, Until};

const GOOD: &str = r#"name = "t"
description = "a test"

[machine]
memory = "32M"
swap = "16M"
cpus = 2

[[cgroup]]
path = "/A"
files = { "memory.max" = "8M", "memory.swap.max" = "max" }

[[task]]
name = "a"
cgroup = "/A"
workload = "anon"
args = ["4M"]

[run]
duration = "5s"
sample = "10ms"
seeds = [1, 2]
"#;

/// Replace one line (1-based) of GOOD.
fn with_line(n: usize, text: &str) -> String {
    GOOD.lines()
        .enumerate()
        .map(|(i, l)| if i + 1 == n { text } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

fn err(text: &str) -> String {
    parse(text, "t.toml").expect_err("a parse error")
}

#[test]
fn good_scenario_parses_with_defaults() {
    let sc = parse(GOOD, "t.toml").unwrap();
    assert_eq!(sc.name, "t");
    assert_eq!(sc.variants.len(), 1);
    assert_eq!(sc.base, "base");
    assert_eq!(sc.run.seeds, vec![1, 2]);
    assert_eq!(sc.run.until, Until::Tasks);
    assert_eq!(sc.run.sample_ns, 10_000_000);
    assert_eq!(sc.tasks[0].repeat, 1);
    assert_eq!(sc.tasks[0].count, 1);
    assert_eq!(sc.cgroups[0].files[0].key, "memory.max");
    assert_eq!(sc.cgroups[0].files[1].key, "memory.swap.max");
    assert_eq!(sc.run.stats[0], "anon");
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let e = err(&with_line(18, "bogus = 1"));
    assert!(e.starts_with("t.toml:18: "), "{e}");
    assert!(e.contains("bogus"), "{e}");
    assert!(e.contains("task"), "{e}");

    let e = err(&format!("{GOOD}\n[extra]\nx = 1\n"));
    assert!(e.starts_with("t.toml:24: "), "{e}");
    assert!(e.contains("extra"), "{e}");
}

#[test]
fn bad_machine_size_names_file_line_and_key() {
    let e = err(&with_line(5, "memory = \"32Q\""));
    assert!(e.starts_with("t.toml:5: "), "{e}");
    assert!(e.contains("machine.memory"), "{e}");
    assert!(
        e.contains("got '32Q' (unknown suffix 'Q', not one of K, M, G, T, P, E)"),
        "{e}"
    );
    assert!(
        !e.contains("machine option"),
        "the TOML key is named once: {e}"
    );
    // A boolean where a size belongs says what the key takes.
    let e = err(&with_line(5, "memory = true"));
    assert!(e.starts_with("t.toml:5: machine.memory: "), "{e}");
    assert!(e.contains("memory takes a value such as \"2G\""), "{e}");
    assert!(!e.contains("'on'"), "{e}");
    let e = err(&with_line(5, "memory = \"lots\""));
    assert!(
        e.contains("wants a size such as 512M or 2G, got 'lots'"),
        "{e}"
    );
}

#[test]
fn bad_cgroup_file_size_names_file_line_and_key() {
    let e = err(&with_line(11, "files = { \"memory.max\" = \"8MB\" }"));
    assert!(e.starts_with("t.toml:11: "), "{e}");
    assert!(e.contains("memory.max"), "{e}");
    assert!(e.contains("bad size"), "{e}");
}

#[test]
fn bad_workload_size_names_file_line_and_key() {
    let e = err(&with_line(17, "args = [\"4X\"]"));
    assert!(e.starts_with("t.toml:17: task.args: "), "{e}");
    assert!(e.contains("bad size"), "{e}");
}

#[test]
fn bad_duration_names_file_line_and_key() {
    let e = err(&with_line(20, "duration = \"5 parsecs\""));
    assert!(e.starts_with("t.toml:20: "), "{e}");
    assert!(e.contains("run.duration"), "{e}");
    let e = err(&with_line(21, "sample = \"0s\""));
    assert!(e.starts_with("t.toml:21: run.sample: "), "{e}");
}

#[test]
fn missing_field_names_file_line_and_key() {
    let e = err(&with_line(16, ""));
    assert!(e.starts_with("t.toml:13: "), "{e}");
    assert!(e.contains("[[task]]"), "{e}");
    assert!(e.contains("workload"), "{e}");

    let e = err("name = \"x\"\n");
    assert_eq!(e, "t.toml:1: missing field `run`");
}

#[test]
fn wrong_type_names_file_line_and_key() {
    let e = err(&with_line(15, "cgroup = 5"));
    assert!(e.starts_with("t.toml:15: task.cgroup: "), "{e}");
    let e = err(&with_line(22, "seeds = [1, -2]"));
    assert!(e.starts_with("t.toml:22: run.seeds: "), "{e}");
}

#[test]
fn syntax_error_has_a_line() {
    let e = err(&with_line(13, "[[task]"));
    assert!(e.starts_with("t.toml:13: "), "{e}");
}

#[test]
fn semantic_errors() {
    // A task in a cgroup nobody creates.
    let e = err(&with_line(15, "cgroup = \"/Z\""));
    assert!(e.starts_with("t.toml:14: task.cgroup: "), "{e}");
    // An unknown workload.
    let e = err(&with_line(16, "workload = \"nothing\""));
    assert!(e.starts_with("t.toml:16: task.workload: "), "{e}");
    assert!(e.contains("unknown workload"), "{e}");
    // An unknown machine key.
    let e = err(&with_line(7, "turbo = \"on\""));
    assert!(e.starts_with("t.toml:7: machine.turbo: "), "{e}");
    // The seed belongs in [run].
    let e = err(&with_line(7, "seed = 3"));
    assert!(e.starts_with("t.toml:7: machine.seed: "), "{e}");
    // A bad `until`.
    let e = err(&format!("{GOOD}until = \"never\"\n"));
    assert!(e.starts_with("t.toml:23: run.until: "), "{e}");
    // A bad name.
    let e = err(&with_line(1, "name = \"a b\""));
    assert!(e.starts_with("t.toml:1: name: "), "{e}");
    // Out of range.
    let e = err(&with_line(18, "repeat = 0"));
    assert!(e.contains("task.repeat"), "{e}");
}

#[test]
fn variant_errors() {
    let v = format!(
        "{GOOD}\n[[variant]]\nname = \"x\"\n[[variant]]\nname = \"y\"\ntask = {{ \"nope\" = {{ args = [\"1M\"] }} }}\n"
    );
    let e = err(&v);
    assert!(e.starts_with("t.toml:28: variant.task: "), "{e}");
    assert!(e.contains("nope"), "{e}");

    let v = format!(
        "{GOOD}\n[[variant]]\nname = \"x\"\ncgroup = {{ \"/A\" = {{ \"memory.max\" = \"lots\" }} }}\n"
    );
    let e = err(&v);
    assert!(e.starts_with("t.toml:26: "), "{e}");
    assert!(e.contains("memory.max"), "{e}");

    let v = format!("{GOOD}base = \"zz\"\n[[variant]]\nname = \"x\"\n");
    let e = err(&v);
    assert!(e.starts_with("t.toml:23: run.base: "), "{e}");

    let v = format!("{GOOD}\n[[variant]]\nname = \"x\"\nmachine = {{ memory = \"1K\" }}\n");
    let e = err(&v);
    assert!(e.contains("memory must be at least 16M"), "{e}");
}

#[test]
fn garbage_never_panics() {
    let samples = [
        "",
        "\u{0}",
        "name = ",
        "[[task]]\n[[task]]",
        "name = \"x\"\n[run]\nduration = [1]\n",
        "name = \"x\"\n[run]\nduration = \"1s\"\n[machine]\nmemory = { a = 1 }\n",
        "name = \"x\"\n[run]\nduration = \"1s\"\nseeds = []\n",
        "name = \"x\"\n[run]\nduration = \"1s\"\nsample = \"1ns\"\n",
        "name = \"x\"\n[run]\nduration = -1\n",
        "name = \"\u{e9}\"\n[run]\nduration = \"1s\"\n",
    ];
    for s in samples {
        assert!(parse(s, "g.toml").is_err(), "{s:?}");
    }
}

#[test]
fn shipped_scenarios_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) == Some("toml") {
            let sc = memcgsim_experiment::load(&p).unwrap_or_else(|e| panic!("{e}"));
            assert!(sc.variants.len() >= 2, "{}", p.display());
            n += 1;
        }
    }
    assert!(n >= 2);
}

#[test]
fn load_reports_a_missing_file() {
    let e = memcgsim_experiment::load("/nonexistent/x.toml").unwrap_err();
    assert!(e.starts_with("/nonexistent/x.toml: "), "{e}");
}

#[test]
fn mutated_files_never_panic() {
    // Every single-byte deletion and a few replacements of a good file: parse returns.
    let bytes = GOOD.as_bytes();
    for i in 0..bytes.len() {
        for repl in [
            None,
            Some(b'"'),
            Some(b'['),
            Some(b'='),
            Some(b'9'),
            Some(b'\n'),
        ] {
            let mut v = bytes.to_vec();
            match repl {
                None => {
                    v.remove(i);
                }
                Some(c) => v[i] = c,
            }
            if let Ok(text) = String::from_utf8(v) {
                let _ = parse(&text, "m.toml");
            }
        }
    }
}
