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
    for f in [
        "kbuild/no-limit",
        "kbuild/0-limit",
        "stream/scenario",
        "kbuild-eater/scenario",
        "scaling/0-limit",
        "scaling/no-limit",
    ] {
        let path = format!(
            "{}/experiments/seed000/{f}.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        load(&path).unwrap_or_else(|e| panic!("{e}"));
    }
    for f in ["dirty/scenario", "dirty/small", "fault-overhead/small"] {
        let path = format!(
            "{}/experiments/seed001/{f}.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        load(&path).unwrap_or_else(|e| panic!("{e}"));
    }
    for f in ["streaming", "pagetest", "kbuild", "stream", "dirty"] {
        let path = format!(
            "{}/experiments/mglru/seeds/{f}.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        load(&path).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// experiments/mglru/seeds at small scale: the multi-generational LRU keeps the idle working
/// set under a stream as the two-list LRU does, scans fewer pages per page it reclaims in
/// pagetest, and under soft-limit reclaim of the kernel builds scans less and builds faster;
/// seed 000's stream and seed 001's dirty test run to their end under it.
#[test]
fn mglru_on_the_seed_experiments() {
    let dir = "experiments/mglru/seeds";
    let r = run(&format!("{dir}/small-streaming.toml"), "mglru");
    assert_eq!(task(&r, "ws").outcome, "exit 0");
    assert_eq!(task(&r, "ws").majflt, 0, "MGLRU lost working set pages");

    let per_page = |r: &RunResult| {
        let scanned = cgroup_stat(r, "/pagetest", |c| c.pgscan);
        let stolen = cgroup_stat(r, "/pagetest", |c| c.pgsteal);
        assert!(stolen > 0);
        scanned as f64 / stolen as f64
    };
    let split = run(&format!("{dir}/small-pagetest.toml"), "split");
    let mglru = run(&format!("{dir}/small-pagetest.toml"), "mglru");
    assert_eq!(task(&mglru, "pagetest").outcome, "exit 0");
    assert!(
        per_page(&mglru) < 0.8 * per_page(&split),
        "pagetest: {} pages scanned per page reclaimed under MGLRU, {} under the two-list LRU",
        per_page(&mglru),
        per_page(&split)
    );

    let split = run(&format!("{dir}/small-kbuild.toml"), "split");
    let mglru = run(&format!("{dir}/small-kbuild.toml"), "mglru");
    for b in ["buildA", "buildB"] {
        assert_eq!(task(&mglru, b).outcome, "exit 0");
        assert!(
            task(&mglru, b).elapsed_ns < task(&split, b).elapsed_ns,
            "{b}"
        );
    }
    assert!(reclaim(&mglru, "soft_scanned") < reclaim(&split, "soft_scanned") / 2);

    for (f, t) in [
        ("small-stream", "dd"),
        ("small-dirty", "dd"),
        ("small-dirty", "tar"),
    ] {
        let r = run(&format!("{dir}/{f}.toml"), "mglru");
        assert_eq!(task(&r, t).outcome, "exit 0", "{f} {t}");
    }
}

fn reclaim(r: &RunResult, key: &str) -> u64 {
    r.reclaim
        .0
        .iter()
        .find(|(k, _)| k == key)
        .unwrap_or_else(|| panic!("no reclaim counter {key}"))
        .1
}

/// Major faults of all copies of a task.
fn majflt(r: &RunResult, task: &str) -> u64 {
    r.tasks
        .iter()
        .filter(|t| t.task == task)
        .map(|t| t.majflt)
        .sum()
}

#[test]
fn seed000_kbuild_0_limit_thrashes_under_the_tree_not_the_rework() {
    let base = run("experiments/seed000/kbuild/small.toml", "base");
    let rework = run("experiments/seed000/kbuild/small.toml", "rework");
    for r in [&base, &rework] {
        assert!(r.tasks.iter().all(|t| t.outcome == "exit 0"));
        assert!(reclaim(r, "soft_reclaim_calls") > 0);
    }
    // Priority-0 reclaim of a quarter of the excess swaps the builds' heaps out.
    let (b, w) = (
        majflt(&base, "buildA") + majflt(&base, "buildB"),
        majflt(&rework, "buildA") + majflt(&rework, "buildB"),
    );
    assert!(b > 1000, "base: {b} major faults");
    assert_eq!(w, 0, "rework: {w} major faults");
    // On the seed's rotational disk the base's swap-ins make its builds much slower (the
    // seed: the rework took 30% of the base's time).
    let slowest = |r: &RunResult| r.tasks.iter().map(|t| t.elapsed_ns).max().unwrap_or(0);
    assert!(
        slowest(&rework) * 3 < slowest(&base) * 2,
        "rework {} base {}",
        slowest(&rework),
        slowest(&base)
    );
}

#[test]
fn seed000_stream_leaves_the_mem_eater_alone() {
    for v in ["base", "rework"] {
        let r = run("experiments/seed000/stream/small.toml", v);
        assert_eq!(task(&r, "dd").outcome, "exit 0");
        assert_eq!(task(&r, "mem_eater").outcome, "holding");
        // dd still streams when the mem_eater is full, so they compete to the end.
        assert!(task(&r, "dd").end_ns > task(&r, "mem_eater").end_ns, "{v}");
        // B holds 958M of anon memory and about 2M of page tables and kernel objects. Soft
        // reclaim of the stream finds enough in A under both designs, so B keeps all but a
        // few pages: the seed's base swapped B (TEST 2), which the model does not reproduce
        // at this pace (the README of experiments/seed000/stream names the mechanism
        // missing, and what a faster-growing mem_eater does).
        let b_end = cgroup_stat(&r, "/B", |c| c.usage_end);
        let b_swap = cgroup_stat(&r, "/B", |c| c.swap_peak);
        assert!(b_swap < 1 << 20, "{v}: {b_swap}");
        assert!(
            b_end > (959 << 20) - b_swap && b_end < (962 << 20),
            "{v}: {b_end}"
        );
        // All of the stream's reclaim is soft-limit reclaim of A.
        assert!(
            reclaim(&r, "soft_reclaimed") * 100 > cgroup_stat(&r, "machine", |c| c.pgsteal) * 95
        );
    }
}

#[test]
fn seed000_kbuild_eater_swaps_the_build_only_under_the_tree() {
    let base = run("experiments/seed000/kbuild-eater/small.toml", "base");
    let rework = run("experiments/seed000/kbuild-eater/small.toml", "rework");
    assert!(majflt(&base, "kbuild") > 100);
    assert_eq!(majflt(&rework, "kbuild"), 0);
    for r in [&base, &rework] {
        assert!(r
            .tasks
            .iter()
            .filter(|t| t.task == "kbuild")
            .all(|t| t.outcome == "exit 0"));
        assert_eq!(task(r, "mem_eater").outcome, "holding");
    }
}

#[test]
fn seed000_scaling_counters_skip_the_idle_hierarchy() {
    let f = "experiments/seed000/scaling/small.toml";
    let tree = run(f, "tree");
    let walk = run(f, "rework-walk");
    let rework = run(f, "rework");
    // Without counters every soft pass asks the predicate of every group: the root, /dd,
    // /idle and its 1000 descendants.
    let calls = reclaim(&walk, "soft_reclaim_calls");
    assert_eq!(reclaim(&walk, "soft_groups_walked"), calls * 1003);
    // The soft passes' time includes their walks, at iter_cost (100 ns) a group, in kswapd's
    // passes as in direct reclaim's.
    let (ns, walked) = (
        reclaim(&walk, "soft_reclaim_ns"),
        reclaim(&walk, "soft_groups_walked"),
    );
    assert!(ns >= walked * 100, "{ns} ns for {walked} groups");
    // With them, /idle's subtree is skipped whole: root, /dd, /idle.
    let calls = reclaim(&rework, "soft_reclaim_calls");
    assert_eq!(reclaim(&rework, "soft_groups_walked"), calls * 3);
    // Both passes of the rework found /dd, so no reclaim-all walk happened at all.
    assert_eq!(reclaim(&rework, "reclaim_all_fallbacks"), 0);
    assert_eq!(reclaim(&rework, "memcg_walk_steps"), calls * 3);
    // The tree's own walk is /dd's subtree, but every shrink_node after it walks all 1003.
    assert!(reclaim(&tree, "memcg_walk_steps") > reclaim(&rework, "memcg_walk_steps"));
    assert!(reclaim(&tree, "memcg_walk_steps") - reclaim(&tree, "soft_groups_walked") >= 1003);
    let sys = |r: &RunResult| task(r, "dd").system_ns;
    assert!(sys(&walk) > sys(&tree) && sys(&walk) > sys(&rework));
}

#[test]
fn seed001_dirty_containing_dd_speeds_up_tar() {
    let f = "experiments/seed001/dirty/small.toml";
    let elapsed = |v: &str, t: &str| {
        let r = run(f, v);
        let rec = task(&r, t);
        assert_eq!(rec.outcome, "exit 0", "{v}: {t}");
        rec.elapsed_ns as f64
    };
    for (shared, contained) in [("v1-false", "v1-true"), ("v2-false", "v2-max")] {
        let (tar_s, tar_c) = (elapsed(shared, "tar"), elapsed(contained, "tar"));
        let (dd_s, dd_c) = (elapsed(shared, "dd"), elapsed(contained, "dd"));
        // tar runs at its own CPU-bound pace once dd is contained: 3,500 files and 40M
        // (10,240 pages) of gunzip take 0.37 s.
        assert!(
            (0.36e9..0.40e9).contains(&tar_c),
            "{contained}: tar {tar_c}"
        );
        // The seed: 12.2 s -> 3.8 s (31%); the target is within 2x of that ratio.
        let ratio = tar_c / tar_s;
        assert!(
            ratio < 0.7,
            "{shared} -> {contained}: tar {tar_s} -> {tar_c} ({ratio:.2})"
        );
        // dd keeps most of its throughput (seed: 93%), paying for the dirty pages it can
        // no longer leave in the cache when it exits.
        let kept = dd_s / dd_c;
        assert!(
            (0.8..1.0).contains(&kept),
            "{shared} -> {contained}: dd keeps {kept:.2}"
        );
    }
    // Linux 6.1 shares one dirty ratelimit among a wb's writers: beside dd, tar gets about
    // half the disk, far slower than under 2.6.36's task_dirty_limit().
    assert!(elapsed("v2-false", "tar") > 2.0 * elapsed("v1-false", "tar"));
}

#[test]
fn seed001_fault_overhead_accounting_changes_no_simulated_result() {
    let f = "experiments/seed001/fault-overhead/small.toml";
    let (off, on) = (run(f, "off"), run(f, "on"));
    for r in [&off, &on] {
        let copies: Vec<_> = r.tasks.iter().filter(|t| t.task == "p_write").collect();
        assert_eq!(copies.len(), 16);
        for t in copies {
            assert_eq!(t.outcome, "exit 0");
            // One fault per iteration: mmap, *p = 1, munmap of a one-page file.
            assert_eq!(t.minflt, 20_000);
        }
        assert_eq!(cgroup_stat(r, "/A", |c| c.pgfault), 16 * 20_000);
    }
    // Dirty accounting is bookkeeping: the simulated run is the same with it and without.
    let elapsed = |r: &RunResult| r.tasks.iter().map(|t| t.elapsed_ns).collect::<Vec<_>>();
    assert_eq!(elapsed(&off), elapsed(&on));
}

/// What `memcgsim script --set stats=SCHEME` printed for a seed 003 script (the path under
/// experiments/seed003/); the run must succeed.
fn seed003_script(script: &str, scheme: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memcgsim"))
        .args(["script", "--set", &format!("stats={scheme}")])
        .arg(format!(
            "{}/experiments/seed003/{script}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .output()
        .expect("memcgsim runs");
    assert!(out.status.success(), "{scheme}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// experiments/seed003/vmstat: the root's memory.stat inactive_file against /proc/vmstat's,
/// under each statistics scheme: legacy drifts and stays off, rstat lags until its periodic
/// flush, exact never differs.
#[test]
fn seed003_vmstat_drift_by_scheme() {
    let diffs = |scheme: &str| -> Vec<i64> {
        let text = seed003_script("vmstat/vmstat.mcg", scheme);
        text.lines()
            .filter_map(|l| l.split(" difference ").nth(1))
            .map(|d| d.trim().parse().expect("a number"))
            .collect()
    };
    let legacy = diffs("legacy");
    assert_eq!(legacy.len(), 2);
    assert!(
        legacy[0] != 0 && legacy[1] == legacy[0],
        "legacy: {legacy:?}"
    );
    // 16 groups x 16 CPUs x at most 32 pages of residue each.
    assert!(
        legacy[0].unsigned_abs() <= 16 * 16 * 32 * 4096,
        "{legacy:?}"
    );
    let rstat = diffs("rstat");
    assert_eq!(rstat[1], 0, "rstat after the periodic flush: {rstat:?}");
    // Lag below the ratelimit: (16 + 1) x 64 page updates.
    assert!(rstat[0].unsigned_abs() <= 17 * 64 * 4096, "{rstat:?}");
    assert_eq!(diffs("exact"), vec![0, 0]);
}

/// experiments/seed003/drift: test_kmem_memcg_deletion's sums after 100 deleted children.
/// Under legacy the parent's items far exceed memory.current (the kernel stack alone does,
/// as in the seed's failing run); under rstat they are within the test's tolerance, and
/// equal to exact's.
#[test]
fn seed003_drift_legacy_exceeds_current_rstat_does_not() {
    let run = |scheme: &str| -> std::collections::BTreeMap<String, i64> {
        let text = seed003_script("drift/drift.mcg", scheme);
        text.lines()
            .filter_map(|l| l.split_once(" = "))
            .map(|(k, v)| (k.to_string(), v.trim().parse().expect("a number")))
            .collect()
    };
    let legacy = run("legacy");
    let current = legacy["memory.current"];
    let tolerance = legacy["tolerance 64 pages x 8 CPUs"];
    assert!(current > 0);
    assert!(legacy["kernel_stack"] > current, "{legacy:?}");
    assert!(
        legacy["slab + anon + file + kernel_stack"] > 2 * current,
        "{legacy:?}"
    );
    assert!(legacy["anon + file + kernel + sock"] - current > tolerance);
    let rstat = run("rstat");
    assert_eq!(
        rstat["memory.current"], current,
        "the charges do not depend on the scheme"
    );
    assert!((rstat["anon + file + kernel + sock"] - current).abs() < tolerance);
    assert_eq!(rstat["kernel_stack"], 0, "every thread has exited");
    assert_eq!(rstat, run("exact"));
}

/// experiments/seed003/read-cost: in a tree of 10,010 mostly idle or dying groups, rstat's
/// flushes visit work in proportion to the busy groups, a read-side sum the whole subtree.
#[test]
fn seed003_read_cost_follows_the_updated_groups_under_rstat() {
    let run = |scheme: &str| -> Vec<(u64, u64)> {
        let text = seed003_script("read-cost/read-cost.mcg", scheme);
        assert!(text.starts_with("groups under /top: 10010\n"), "{text}");
        let num = |l: &str, key: &str| -> u64 {
            let at = l.find(key).expect(key) + key.len();
            let digits: String = l[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().expect("a number")
        };
        text.lines()
            .filter(|l| l.contains("busy group"))
            .map(|l| {
                (
                    num(l, "flush visits per second "),
                    num(l, "read-side sum visits per read "),
                )
            })
            .collect()
    };
    let rstat = run("rstat");
    assert_eq!(rstat.len(), 2);
    // A read-side sum visits /top and its 10,010 groups on 8 CPUs, however few are busy.
    assert!(rstat.iter().all(|r| r.1 == 10_011 * 8), "{rstat:?}");
    let (one, ten) = (rstat[0].0, rstat[1].0);
    assert!(one > 0 && one * 20 < rstat[0].1, "{rstat:?}");
    assert!(ten > 5 * one, "grows with the busy groups: {rstat:?}");
    // The per-CPU batches never flush.
    assert!(run("legacy").iter().all(|r| r.0 == 0));
}

/// experiments/seed003/nested-build: two builds in a nested tree, kernelbuild/memory.stat
/// read once a second. rstat's flushes visit only the busy path, never the idle siblings:
/// at most the 7 groups from kernelbuild down to the two builds on each of the 16 CPUs per
/// flush, and about what a read-side sum would per read; legacy propagates batches instead
/// of flushing.
#[test]
fn seed003_nested_build_statistics_work() {
    let run = |scheme: &str| -> std::collections::BTreeMap<String, u64> {
        let text = seed003_script("nested-build/nested-build.mcg", scheme);
        text.lines()
            .filter_map(|l| {
                let (k, v) = l.rsplit_once(' ')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect()
    };
    let r = run("rstat");
    assert_eq!(r["stat_reads"], 30);
    // kernelbuild and its 15 descendants on 16 CPUs.
    assert_eq!(r["read-side sum visits per read"], 16 * 16);
    let per_read = r["flush visits per read"];
    assert!(per_read > 0 && per_read <= 16 * 16 * 11 / 10, "{r:?}");
    assert!(r["flush_visits"] <= r["flushes"] * 7 * 16, "{r:?}");
    assert!(r["updates"] > 10_000_000, "{r:?}");
    assert!(r["tree_links"] < r["updates"] / 1000, "{r:?}");
}

/// experiments/pressure/oomd: a 4M/s leak beside a service reading its cached file.
#[test]
fn pressure_oomd_kills_the_leak_before_the_kernel_does() {
    let f = "experiments/pressure/oomd/small.toml";
    let kernel = run(f, "kernel");
    let min = run(f, "kernel-min");
    let oomd = run(f, "oomd");
    let nominal = 200_000_000_000; // 1,000,000 reads at 5000 a second
                                   // The kernel alone: the OOM killer takes the leak only when swap is full, after the
                                   // service has lost its cache and fallen far behind.
    assert!(kernel.actions.is_empty());
    assert_eq!(task(&kernel, "runaway").outcome, "killed");
    assert_eq!(cgroup_stat(&kernel, "/w/runaway", |c| c.oom_kill), 1);
    assert!(task(&kernel, "service").elapsed_ns > 2 * nominal);
    // memory.min keeps the service whole: it finishes on schedule.
    assert_eq!(task(&min, "service").outcome, "exit 0");
    assert!(task(&min, "service").elapsed_ns < nominal + 1_000_000_000);
    assert_eq!(task(&min, "runaway").outcome, "killed");
    // oomd kills the leak, through cgroup.kill, long before the kernel would have, and the
    // service loses less.
    assert_eq!(oomd.actions.len(), 1, "{:?}", oomd.actions);
    let a = &oomd.actions[0];
    assert_eq!(
        (a.cgroup.as_str(), a.action.as_str()),
        ("/w/runaway", "kill")
    );
    assert!(a.time_ns + 30_000_000_000 < task(&kernel, "runaway").end_ns.unwrap());
    assert_eq!(cgroup_stat(&oomd, "/w/runaway", |c| c.oom_kill), 0);
    assert_eq!(task(&oomd, "service").outcome, "exit 0");
    assert!(task(&oomd, "service").elapsed_ns < task(&kernel, "service").elapsed_ns);
    assert!(
        cgroup_stat(&oomd, "/w", |c| c.memory_full_ns)
            < cgroup_stat(&kernel, "/w", |c| c.memory_full_ns)
    );

    // At full scale, 50% for 20 s kills the service too: 15 s after the first kill its own
    // refaults still hold /w's full avg10 above the limit.
    let storm = run("experiments/pressure/oomd/scenario.toml", "oomd-50-20");
    let kills: Vec<(&str, u64)> = storm
        .actions
        .iter()
        .map(|a| (a.cgroup.as_str(), a.time_ns))
        .collect();
    assert_eq!(kills.len(), 2, "{kills:?}");
    assert_eq!(kills[0].0, "/w/runaway");
    assert_eq!(kills[1].0, "/w/service");
    assert!(kills[1].1 - kills[0].1 >= 15_000_000_000);
    assert_eq!(task(&storm, "service").outcome, "killed");
}

/// experiments/pressure/senpai: Senpai squeezes a service with cold memory, and the target
/// trades the memory saved against the stall paid.
#[test]
fn pressure_senpai_saves_memory_for_stall_by_its_target() {
    let f = "experiments/pressure/senpai/small.toml";
    let runs: Vec<RunResult> = ["none", "senpai-1ms", "senpai-10ms", "senpai-100ms"]
        .iter()
        .map(|v| run(f, v))
        .collect();
    let usage = |r: &RunResult| cgroup_stat(r, "/service", |c| c.usage_avg);
    let stall = |r: &RunResult| cgroup_stat(r, "/service", |c| c.memory_some_ns);
    let [none, t1, t10, t100] = &runs[..] else {
        unreachable!()
    };
    assert!(none.actions.is_empty());
    assert_eq!(stall(none), 0);
    // A higher target saves more memory and pays more stall.
    assert!(usage(t1) < usage(none));
    assert!(usage(t10) < usage(t1) && usage(t100) <= usage(t10));
    assert!(usage(t10) < usage(none) * 4 / 5, "saved under 20%");
    assert!(0 < stall(t1) && stall(t1) < stall(t10) && stall(t10) < stall(t100));
    // Senpai's steps are memory.high writes on /service, the first at its start (10 s).
    for r in [t1, t10, t100] {
        assert!(r.actions.len() > 20);
        assert!(r
            .actions
            .iter()
            .all(|a| a.cgroup == "/service" && a.action == "high"));
        assert_eq!(r.actions[0].time_ns, 10_000_000_000);
    }
    // The batch job finds its memory free: faster, and no memory stall of its own.
    assert!(task(t10, "batch").elapsed_ns < task(none, "batch").elapsed_ns * 9 / 10);
    assert!(cgroup_stat(none, "/batch", |c| c.memory_some_ns) > 0);
    assert_eq!(cgroup_stat(t10, "/batch", |c| c.memory_some_ns), 0);

    // memory.reclaim instead: as much saved, no limit left on the service.
    let rec = run(f, "reclaim-10ms");
    assert!(usage(&rec) < usage(none) * 4 / 5);
    assert!(rec.actions.iter().all(|a| a.action == "reclaim"));
    assert_eq!(task(&rec, "serve").reclaim_ns, 0);
}

/// experiments/tmo/backends: Senpai in every container offloads a mixed node's cold memory to zswap,
/// to the SSD or to both, at a stall within its target, and the service keeps its pace.
#[test]
fn tmo_offloads_cold_memory_within_the_stall_target() {
    let f = "experiments/tmo/backends/small.toml";
    let [none, ssd, zswap, both] = ["none", "ssd", "zswap", "both"].map(|v| run(f, v));
    let used = |r: &RunResult| cgroup_stat(r, "machine", |c| c.usage_avg);
    let stall = |r: &RunResult, cg: &str| cgroup_stat(r, cg, |c| c.memory_some_ns);
    let machine = |r: &RunResult, g: fn(&memcgsim_experiment::CgroupSummary) -> Option<u64>| {
        cgroup_stat(r, "machine", g)
    };
    assert!(none.actions.is_empty());
    assert_eq!(
        machine(&none, |c| c.pswpout) + machine(&none, |c| c.zswpout),
        0
    );
    // Senpai's target, 10 ms of `some` stall per 6 s, from its start at 100 s to the end;
    // a feedback loop, it overshoots by a fraction (backing off after the interval that
    // passed it).
    let target = (400 - 100) / 6 * 10_000_000 * 3 / 2;
    for r in [&ssd, &zswap, &both] {
        // A tenth of the node's memory or more saved on average over the run, every
        // backend (the full scenario, longer, saves a quarter).
        assert!(used(r) < used(&none) * 9 / 10, "{}", r.variant);
        for cg in ["/web", "/batch", "/cache"] {
            assert!(stall(r, cg) < target, "{} {cg}", r.variant);
        }
        // The service answers at its rate: it ends when it would without Senpai.
        assert_eq!(task(r, "serve").elapsed_ns, task(&none, "serve").elapsed_ns);
    }
    // Each backend takes what it is given: the SSD alone, zswap alone (room for all), and
    // zswap up to its pool limit, then the SSD.
    assert!(machine(&ssd, |c| c.pswpout) > 0 && machine(&ssd, |c| c.zswpout) == 0);
    assert!(machine(&zswap, |c| c.zswpout) > 0 && machine(&zswap, |c| c.pswpout) == 0);
    assert!(machine(&both, |c| c.zswpout) > 0 && machine(&both, |c| c.pswpout) > 0);
    assert_eq!(machine(&zswap, |c| c.pswpin), 0);
    assert!(machine(&zswap, |c| c.zswpin) > 0);
    // The compressed copies stay in memory, charged to their groups: the service keeps more
    // under zswap than with the SSD.
    assert!(cgroup_stat(&zswap, "/web", |c| c.zswap_peak) > 0);
    let web = |r: &RunResult| cgroup_stat(r, "/web", |c| c.usage_avg);
    assert!(web(&zswap) > web(&ssd));
}

/// experiments/tmo/frontier: a sweep of Senpai's target over zswap's pool limit; a higher
/// target saves more memory whatever the pool, and the service keeps its pace.
#[test]
fn tmo_frontier_sweeps_the_target_and_the_pool() {
    let path = format!(
        "{}/experiments/tmo/frontier/small.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let sc = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let t = memcgsim_experiment::sweep::sweep(&sc, 2, &|_| {}).unwrap();
    assert_eq!(t.rows.len(), 4);
    let col = |name: &str| t.columns.iter().position(|c| c == name).unwrap();
    let cell = |r: usize, name: &str| t.rows[r][col(name)].clone();
    let (usage, elapsed) = ("cgroup./web.usage_avg", "task.serve.elapsed_s");
    // Rows: 3ms at pools 2 and 25, then 100ms at both.
    for pool in 0..2 {
        assert_eq!(cell(pool, "pool"), cell(pool + 2, "pool"));
        let (low, high) = (cell(pool, usage), cell(pool + 2, usage));
        assert!(high.as_f64() < low.as_f64(), "{low} {high}");
    }
    for r in 0..4 {
        // On pace: its million requests at 4000 a second take 250 s (and a few µs).
        let e = cell(r, elapsed).as_f64().unwrap();
        assert!((250.0..250.01).contains(&e), "{e}");
        assert!(cell(r, "machine.swap_peak").as_f64() > Some(0.0));
    }
}

/// experiments/thp/modes: on an idle machine `always` maps the dense heap with huge pages (one
/// fault per 2 MiB) and brings in the whole of a sparse heap; on a machine full of page
/// cache the huge faults fall back, and those that may reclaim directly (defrag `always`)
/// fall back less, and no fault compacts without it; `madvise` without advice is `never`.
#[test]
fn thp_faults_fewer_and_bloats_a_sparse_heap() {
    let f = "experiments/thp/modes/small.toml";
    let idle_never = run(f, "never-idle");
    let idle_always = run(f, "always-idle");
    let mib = 1 << 20;
    // Dense: 200M in 100 huge faults, against one fault a page.
    assert_eq!(task(&idle_never, "dense").minflt, 51_200);
    assert_eq!(task(&idle_always, "dense").minflt, 100);
    assert_eq!(
        cgroup_stat(&idle_always, "/dense", |c| c.anon_thp_peak),
        200 * mib
    );
    assert!(task(&idle_always, "dense").elapsed_ns < task(&idle_never, "dense").elapsed_ns / 2);
    // Sparse: 10,000 pages of a 512M heap touch every 2 MiB range; always maps all of it.
    let sparse = |r: &RunResult| cgroup_stat(r, "/sparse", |c| c.usage_peak);
    assert!(sparse(&idle_never) < 40 * mib);
    assert!(sparse(&idle_always) > 512 * mib);
    // Full of cache: fallbacks; compaction only where defrag lets faults compact.
    let never = run(f, "never");
    let madvise = run(f, "madvise");
    let always = run(f, "always");
    let defrag = run(f, "always-defrag");
    let machine = |r: &RunResult, g: fn(&memcgsim_experiment::CgroupSummary) -> Option<u64>| {
        cgroup_stat(r, "machine", g)
    };
    assert_eq!(task(&madvise, "dense").minflt, task(&never, "dense").minflt);
    assert_eq!(machine(&madvise, |c| c.thp_fault_alloc), 0);
    assert!(machine(&always, |c| c.thp_fault_fallback) > 0);
    assert_eq!(machine(&always, |c| c.compact_stall), 0);
    assert!(machine(&defrag, |c| c.thp_fault_alloc) > machine(&always, |c| c.thp_fault_alloc));
    assert!(
        machine(&defrag, |c| c.thp_fault_fallback) < machine(&always, |c| c.thp_fault_fallback)
    );
    assert!(sparse(&always) < sparse(&idle_always) / 2);
}
