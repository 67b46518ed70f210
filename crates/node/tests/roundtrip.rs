//! A simulated node snapshotted, imported and run again: each group's memory.current and
//! memory.stat composition come back within 5 % (the import's promise, docs/NODES.md).

mod common;

use memcgsim_cgroupfs::{SpawnOpts, System};
use memcgsim_model::MachineConfig;
use memcgsim_node::{import, snapshot, ImportOpts, Snapshot};

/// A node: groups with limits, protections and children, holding anonymous memory (some of
/// it in swap), page cache read once and twice, shmem and slab.
fn source_node() -> System {
    let mut cfg = MachineConfig::default();
    for (k, v) in [("memory", "1G"), ("swap", "512M"), ("thp", "never")] {
        cfg.set(k, v).unwrap();
    }
    let mut sys = System::new(cfg).unwrap();
    sys.set_check_invariants(true);
    sys.set_check_interval(1000);
    let w = |sys: &mut System, p: &str, v: &str| sys.write(p, v).unwrap();
    w(&mut sys, "/cgroup.subtree_control", "+memory");
    for g in ["/web", "/batch", "/batch/a", "/batch/b", "/cold"] {
        sys.mkdir(g).unwrap();
    }
    w(&mut sys, "/web/memory.max", "300M");
    w(&mut sys, "/web/memory.low", "100M");
    w(&mut sys, "/batch/memory.high", "400M");
    w(&mut sys, "/batch/cgroup.subtree_control", "+memory");
    w(&mut sys, "/cold/memory.swap.max", "200M");
    let run = |sys: &mut System, cg: &str, name: &str, args: &[&str]| {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let prog = memcgsim_workloads::build(name, &args).unwrap();
        sys.spawn(cg, SpawnOpts::default(), prog).unwrap();
        for _ in 0..2000 {
            sys.advance(20_000_000);
        }
    };
    run(&mut sys, "/web", "anon", &["120M", "--hold"]);
    run(&mut sys, "/web", "cat", &["--file", "web.data", "40M"]);
    run(&mut sys, "/web", "cat", &["--file", "web.data", "40M"]);
    run(&mut sys, "/batch/a", "anon", &["60M", "--hold"]);
    run(
        &mut sys,
        "/batch/a",
        "dd",
        &["24M", "--file", "/dev/shm/a.buf"],
    );
    run(&mut sys, "/batch/b", "cat", &["--file", "b.log", "80M"]);
    run(&mut sys, "/batch/b", "dcache", &["30000", "--hold"]);
    run(&mut sys, "/cold", "anon", &["100M", "--hold"]);
    w(&mut sys, "/cold/memory.reclaim", "60M");
    sys.advance(2_000_000_000);
    sys
}

#[test]
fn an_imported_node_holds_what_the_snapshot_shows() {
    let mut sys = source_node();
    let json = snapshot::take(&mut sys);
    let snap = Snapshot::parse(&json, "node.json").unwrap();
    let imp = import(
        &snap,
        &ImportOpts {
            name: "node".into(),
            file: "node.json".into(),
        },
    )
    .unwrap();
    assert!(imp.notes.is_empty(), "{:#?}", imp.notes);
    let sc = memcgsim_experiment::parse(&imp.scenario, "node.toml").unwrap();
    let r = memcgsim_experiment::run_variant(&sc, "base", 1, false).unwrap();
    let bad = common::differences(&snap, &imp, &r);
    assert!(bad.is_empty(), "{}\n{}", bad.join("\n"), imp.scenario);
}

#[test]
fn a_snapshot_of_the_model_reads_back_and_says_what_it_holds() {
    let mut sys = source_node();
    let json = snapshot::take(&mut sys);
    let snap = Snapshot::parse(&json, "node.json").unwrap();
    assert_eq!(snap.cgroups[0].path, "/");
    let paths: Vec<&str> = snap.cgroups.iter().map(|g| g.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/", "/batch", "/batch/a", "/batch/b", "/cold", "/web"]
    );
    assert_eq!(
        snap.meminfo("MemTotal"),
        Some(sys.machine.totalram_pages * 4096)
    );
    assert_eq!(snap.thp_mode("enabled"), Some("never"));
    let web = snap.group("/web").unwrap();
    assert_eq!(web.number("memory.max", "n").unwrap(), Some(300 << 20));
    assert_eq!(web.procs, Some(1));
    let stat = web.keyed("memory.stat", "n").unwrap().unwrap();
    assert!(stat["active_file"] >= 39 << 20, "{stat:?}");
}
