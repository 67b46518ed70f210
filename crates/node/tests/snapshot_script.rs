//! scripts/memcgsim-snapshot on a made-up cgroup tree and procfs: what it keeps, how it
//! escapes, that `memcgsim import` reads it, and that it never overwrites a file.

use std::fs;
use std::path::Path;
use std::process::Command;

use memcgsim_node::Snapshot;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/memcgsim-snapshot")
}

fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// A host: the root delegates memory to /a, whose child /a/b holds 4M of anonymous memory;
/// /a has a limit with a character JSON must escape in a file the import does not know.
fn fake_host(dir: &Path) {
    let cg = dir.join("cg");
    put(&cg, "cgroup.controllers", "cpu io memory pids\n");
    put(&cg, "cgroup.subtree_control", "memory pids\n");
    put(&cg, "memory.stat", "anon 8388608\nfile 0\n");
    put(&cg, "a/cgroup.subtree_control", "memory\n");
    put(&cg, "a/memory.current", "4194304\n");
    put(&cg, "a/memory.max", "67108864\n");
    put(&cg, "a/memory.stat", "anon 4194304\nfile 0\nkernel 0\n");
    put(&cg, "a/cgroup.procs", "");
    put(&cg, "a/b/memory.current", "4194304\n");
    put(&cg, "a/b/memory.stat", "anon 4194304\nfile 0\nkernel 0\n");
    put(&cg, "a/b/memory.high", "max\n");
    put(&cg, "a/b/cgroup.procs", "12\n13\n");
    put(&cg, "a/b/notes", "x");
    let proc = dir.join("proc");
    put(
        &proc,
        "meminfo",
        "MemTotal:        1000000 kB\nMemFree:          900000 kB\nSwapTotal:             0 kB\n",
    );
    put(&proc, "vmstat", "nr_free_pages 225000\n");
    put(
        &proc,
        "cpuinfo",
        "processor\t: 0\nprocessor\t: 1\nprocessor\t: 2\n",
    );
    put(&proc, "sys/vm/swappiness", "60\n");
    put(&proc, "sys/vm/odd", "tab\there \"quoted\" back\\slash\n");
    put(&proc, "sys/kernel/osrelease", "6.1.0-test\n");
    let sys = dir.join("sys");
    put(
        &sys,
        "kernel/mm/transparent_hugepage/enabled",
        "[always] madvise never\n",
    );
}

fn snapshot(dir: &Path, out: &Path) -> std::process::Output {
    Command::new("sh")
        .arg(script())
        .args([
            "--cgroup-root",
            "cg",
            "--proc",
            "proc",
            "--sys",
            "sys",
            "--out",
        ])
        .arg(out)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn the_snapshot_script_keeps_the_tree_as_the_kernel_printed_it() {
    let dir = tempfile::tempdir().unwrap();
    fake_host(dir.path());
    let out = dir.path().join("host.json");
    let o = snapshot(dir.path(), &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = fs::read_to_string(&out).unwrap();
    let snap = Snapshot::parse(&text, "host.json").unwrap();
    assert_eq!(snap.kernel.as_deref(), Some("6.1.0-test"));
    assert_eq!(snap.cpus, 3);
    assert_eq!(snap.meminfo("MemTotal"), Some(1_000_000 * 1024));
    assert_eq!(snap.sysctl("odd"), Some("tab\there \"quoted\" back\\slash"));
    assert_eq!(snap.thp_mode("enabled"), Some("always"));
    let paths: Vec<&str> = snap.cgroups.iter().map(|g| g.path.as_str()).collect();
    assert_eq!(paths, ["/", "/a", "/a/b"]);
    let b = snap.group("/a/b").unwrap();
    assert_eq!(b.procs, Some(2));
    assert_eq!(
        b.files.get("memory.high").map(String::as_str),
        Some("max\n")
    );
    // Only the files it knows are kept.
    assert!(!b.files.contains_key("notes"));
    // The import reads it: /a's own share is nothing, /a/b holds 4M of anonymous memory.
    let imp = memcgsim_node::import(
        &snap,
        &memcgsim_node::ImportOpts {
            name: "host".into(),
            file: "host.json".into(),
        },
    )
    .unwrap();
    assert!(
        imp.scenario
            .contains("cgroup = \"/a/b\"\nworkload = \"anon\"\nargs = [\"4096K\""),
        "{}",
        imp.scenario
    );
    assert!(
        imp.scenario.contains("\"memory.max\" = \"67108864\""),
        "{}",
        imp.scenario
    );
    // An existing file is left alone.
    let o = snapshot(dir.path(), &out);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("exists; not overwriting it"));
    assert_eq!(fs::read_to_string(&out).unwrap(), text);
}

#[test]
fn a_tree_that_is_not_cgroup_v2_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("cg")).unwrap();
    let out = dir.path().join("x.json");
    let o = snapshot(dir.path(), &out);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a cgroup v2 mount"));
    assert!(!out.exists());
}

#[test]
fn bad_snapshots_name_the_file_and_the_field() {
    let e = Snapshot::parse("{\"format\": \"x\"", "h.json").unwrap_err();
    assert!(e.starts_with("h.json:1:"), "{e}");
    let good = r#"{"format": "memcgsim-snapshot", "version": 1, "cpus": 1, "page_size": 4096,
        "cgroups": [{"path": "/", "procs": 0, "threads": 0, "files": {}}]}"#;
    assert!(Snapshot::parse(good, "h.json").is_ok());
    for (bad, want) in [
        (
            good.replace("\"version\": 1", "\"version\": 2"),
            "h.json: version",
        ),
        (good.replace("4096", "65536"), "h.json: page_size"),
        (good.replace("\"/\"", "\"/a\""), "h.json: cgroups[0]"),
        (good.replace("\"cpus\"", "\"cpuz\""), "unknown field `cpuz`"),
    ] {
        let e = Snapshot::parse(&bad, "h.json").unwrap_err();
        assert!(e.contains(want), "{want}: {e}");
    }
    let with_bad_stat = good.replace(
        "\"files\": {}",
        "\"files\": {\"memory.stat\": \"anon x\\n\"}",
    );
    let s = Snapshot::parse(&with_bad_stat, "h.json").unwrap();
    let e = s.cgroups[0].keyed("memory.stat", "h.json").unwrap_err();
    assert_eq!(
        e,
        "h.json: cgroup /: memory.stat: anon: 'x' is not a number"
    );
}
