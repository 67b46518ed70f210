//! Inputs the fuzz targets (fuzz/, docs/TESTING.md) found to panic, kept as tests.

use memcgsim_experiment::parse;

const SCENARIO: &str = r#"name = "t"

[machine]
memory = "32M"

[[cgroup]]
path = "/A"

[[task]]
name = "a"
cgroup = "CGROUP"
workload = "anon"
args = ["4M"]

[run]
duration = "1s"
"#;

/// A cgroup path of slashes only ("//") indexed past the end of the path without its
/// trailing slashes. Like "/", it names the root.
#[test]
fn cgroup_path_of_slashes_only_is_the_root() {
    for path in ["//", "///"] {
        let sc = parse(&SCENARIO.replace("CGROUP", path), "t.toml").unwrap();
        assert_eq!(sc.tasks[0].cgroup, "/", "{path}");
    }
    let e = parse(&SCENARIO.replace("CGROUP", "/A//B"), "t.toml").unwrap_err();
    assert!(e.contains("empty, '.' or '..' component"), "{e}");
}
