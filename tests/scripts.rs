//! Runs the memcgsim scripts kept under `tests/` through the `memcgsim` binary.
//!
//! * One `#[test]` per script in `tests/selftests/` (ports of the kernel's
//!   `tools/testing/selftests/cgroup/test_memcontrol.c`), `tests/kmem/` (ports of its
//!   `test_kmem.c`), `tests/cgroup/` (the
//!   cgroup core files), `tests/v1/` (cgroup v1 behaviour) and `tests/seed000/`, `tests/seed002/` (seed reports). Each runs
//!   `memcgsim script --check FILE` (`--check-every N` for [`SAMPLED_SCRIPTS`]) and
//!   requires exit status 0.
//! * Tests of the script runner itself, on the small scripts in
//!   `tests/fixtures/`: determinism, the report of a failed `expect`, the
//!   report of a script error, and a failed write that the script survives.
//!
//! Every script is run with `tests/` as the working directory and its path
//! relative to it (e.g. `selftests/min.mcg`), so diagnostics read
//! `selftests/min.mcg:LINE: ...`.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Wall-clock limit for one script. The scripts need seconds; this only
/// keeps a hung engine from hanging the test run.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Scripts that describe the oracle's slow guest (cpu_scale=24 and its measured IPI and
/// major-fault costs): their runs last 11 to 31 s of virtual time, about 100,000 events;
/// they get the longer time limit.
const SLOW_SCRIPTS: &[&str] = &[
    "swap/kswapd_split.mcg",
    "swap/kswapd_single.mcg",
    "swap/direct_probe.mcg",
];

/// Scripts whose full invariant check after every step would take most of the suite's
/// time, checked after every N-th step instead (and at their end): a violation that
/// persists is still caught, a step or more after the one that caused it
/// (`memcgsim script --check FILE` finds that step). The slow guest's scripts (about
/// 100,000 steps; ten minutes each with every step checked, on a loaded machine), a
/// 400M pagetest and a page-cache workload whose every step is checked elsewhere on smaller
/// machines, and the 5G machines with a Normal zone that stream gigabytes (over a million
/// frames per check; every step would take hours).
const SAMPLED_SCRIPTS: &[(&str, u32)] = &[
    ("swap/kswapd_split.mcg", 16),
    ("swap/kswapd_single.mcg", 16),
    ("swap/direct_probe.mcg", 16),
    ("kmem/pagecache_shadow.mcg", 4),
    ("seed002/pagetest_400M.mcg", 4),
    ("seed000/stream_tree_3_11.mcg", 100),
    ("seed000/stream_rework_3_11.mcg", 100),
];

/// Wall-clock limit for [`SLOW_SCRIPTS`].
const SLOW_TIMEOUT: Duration = Duration::from_secs(1800);

/// Directories under `tests/` whose scripts are not run on their own.
const NOT_RUN_DIRS: &[&str] = &["fixtures"];

/// What one run of `memcgsim script --check FILE` produced.
struct Run {
    file: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// A full report of the run, for failure messages.
    fn report(&self) -> String {
        format!(
            "memcgsim script --check {}\n{}\n--- stdout ---\n{}\n--- stderr ---\n{}\n--------------",
            self.file, self.status, self.stdout, self.stderr
        )
    }
}

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

#[test]
fn sampled_and_slow_scripts_exist() {
    let dir = tests_dir();
    for f in SAMPLED_SCRIPTS
        .iter()
        .map(|(f, _)| *f)
        .chain(SLOW_SCRIPTS.iter().copied())
    {
        assert!(dir.join(f).is_file(), "{f} is listed but does not exist");
    }
}

/// Run `memcgsim script --check FILE` in `tests/`, with a time limit.
fn run_script(file: &str) -> Run {
    run_script_with(file, &[])
}

/// Run `memcgsim script --check [ARGS] FILE` in `tests/`, with a time limit.
fn run_script_with(file: &str, args: &[&str]) -> Run {
    let dir = tests_dir();
    assert!(
        dir.join(file).is_file(),
        "script {} does not exist under {}",
        file,
        dir.display()
    );
    let check = match SAMPLED_SCRIPTS.iter().find(|(f, _)| *f == file) {
        Some((_, every)) => vec!["--check-every".to_string(), every.to_string()],
        None => vec!["--check".to_string()],
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_memcgsim"))
        .arg("script")
        .args(&check)
        .args(args)
        .arg(file)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start memcgsim for {file}: {e}"));

    // Drain both pipes on their own threads so a chatty script cannot block.
    let mut out_pipe = child.stdout.take().expect("stdout is piped");
    let mut err_pipe = child.stderr.take().expect("stderr is piped");
    let (out_tx, out_rx) = mpsc::channel();
    let (err_tx, err_rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out_pipe.read_to_end(&mut buf);
        let _ = out_tx.send(buf);
    });
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err_pipe.read_to_end(&mut buf);
        let _ = err_tx.send(buf);
    });

    let limit = if SLOW_SCRIPTS.contains(&file) {
        SLOW_TIMEOUT
    } else {
        TIMEOUT
    };
    let deadline = Instant::now() + limit;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().expect("wait for the killed memcgsim");
            }
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("waiting for memcgsim on {file}: {e}"),
        }
    };
    // The pipes close when the process is gone; the grace period only matters
    // if something else still holds them open.
    let collect = |rx: mpsc::Receiver<Vec<u8>>| match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(buf) => String::from_utf8_lossy(&buf).into_owned(),
        Err(_) => "<output not available: the pipe stayed open>".to_string(),
    };
    let run = Run {
        file: file.to_string(),
        status,
        stdout: collect(out_rx),
        stderr: collect(err_rx),
    };
    if timed_out {
        panic!(
            "script {} did not finish within {:?}; killed\n{}",
            file,
            limit,
            run.report()
        );
    }
    run
}

fn assert_script_passes(file: &str) {
    let run = run_script(file);
    if run.code() != Some(0) {
        panic!("script {} failed\n{}", file, run.report());
    }
}

/// 1-based numbers of the lines of a fixture whose trimmed text is exactly `text`.
fn lines_of(file: &str, text: &str) -> Vec<usize> {
    let path = tests_dir().join(file);
    let src = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let lines: Vec<usize> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == text)
        .map(|(i, _)| i + 1)
        .collect();
    assert!(!lines.is_empty(), "fixture {file} has no line `{text}`");
    lines
}

// ---------------------------------------------------------------------------
// One test per script.
// ---------------------------------------------------------------------------

macro_rules! script_tests {
    ($($name:ident => $file:literal,)*) => {
        /// Every script that has its own test, as paths relative to `tests/`.
        const LISTED_SCRIPTS: &[&str] = &[$($file),*];

        $(
            #[test]
            fn $name() {
                assert_script_passes($file);
            }
        )*
    };
}

script_tests! {
    // Ports of tools/testing/selftests/cgroup/test_memcontrol.c.
    selftest_subtree_control => "selftests/subtree_control.mcg",
    selftest_current_peak => "selftests/current_peak.mcg",
    selftest_min => "selftests/min.mcg",
    selftest_low => "selftests/low.mcg",
    selftest_low_recursiveprot => "selftests/low_recursiveprot.mcg",
    selftest_high => "selftests/high.mcg",
    selftest_high_sync => "selftests/high_sync.mcg",
    selftest_max => "selftests/max.mcg",
    selftest_reclaim => "selftests/reclaim.mcg",
    selftest_reclaim_swap => "selftests/reclaim_swap.mcg",
    selftest_oom_events => "selftests/oom_events.mcg",
    selftest_swap_max_peak => "selftests/swap_max_peak.mcg",
    selftest_oom_group_leaf_events => "selftests/oom_group_leaf_events.mcg",
    selftest_oom_group_leaf_events_localevents => "selftests/oom_group_leaf_events_localevents.mcg",
    selftest_oom_group_parent_events => "selftests/oom_group_parent_events.mcg",
    selftest_oom_group_score_events => "selftests/oom_group_score_events.mcg",
    // Ports of tools/testing/selftests/cgroup/test_kmem.c.
    kmem_basic => "kmem/basic.mcg",
    kmem_kernel_stacks => "kmem/kernel_stacks.mcg",
    kmem_dead_cgroups => "kmem/dead_cgroups.mcg",
    kmem_memcg_deletion => "kmem/memcg_deletion.mcg",
    kmem_percpu_basic => "kmem/percpu_basic.mcg",
    // Issue 38, item 1: the kernel memory that comes with the page cache.
    kmem_pagecache_dd => "kmem/pagecache_dd.mcg",
    kmem_pagecache_read => "kmem/pagecache_read.mcg",
    kmem_pagecache_tar => "kmem/pagecache_tar.mcg",
    kmem_pagecache_limit => "kmem/pagecache_limit.mcg",
    kmem_pagecache_shadow => "kmem/pagecache_shadow.mcg",
    // Swap readahead and the swap cache.
    swap_readahead => "swap/readahead.mcg",
    // Issue 38, items 5 and 6: VMA-based swap readahead, and the swap cache after a
    // swap-out.
    swap_vma_readahead => "swap/vma_readahead.mcg",
    swap_swapcache => "swap/swapcache.mcg",
    // kswapd and the allocators on the same CPUs.
    swap_kswapd_split => "swap/kswapd_split.mcg",
    // One allocator: the run the oracle guest's swap disk is measured on.
    swap_kswapd_single => "swap/kswapd_single.mcg",
    // The zones of a 512M machine.
    mm_zoneinfo => "mm/zoneinfo.mcg",
    // The buddy allocator: blocks split and merged, pageblocks claimed by kernel objects.
    mm_buddyinfo => "mm/buddyinfo.mcg",
    // Compaction through /proc/sys/vm/compact_memory.
    mm_compaction => "mm/compaction.mcg",
    // Compaction moves anon, page-cache, mlocked and swap-cache pages intact.
    mm_migrate_kinds => "mm/migrate_kinds.mcg",
    // Anonymous huge pages at fault: charged as one, counted, freed, falling back.
    thp_fault => "thp/fault.mcg",
    // Limit reclaim splits huge pages to swap them.
    thp_reclaim => "thp/reclaim.mcg",
    // A fragmented machine: huge faults fall back, compact directly when advised, and
    // kcompactd compacts proactively.
    thp_fragmented => "thp/fragmented.mcg",
    // khugepaged collapses a group's small pages once it has room.
    thp_khugepaged => "thp/khugepaged.mcg",
    // A partial MADV_DONTNEED leaves huge pages to the deferred split.
    thp_deferred_split => "thp/deferred_split.mcg",
    // tmpfs: charged to the writer as shmem, holes, unlink.
    shmem_tmpfs => "shmem/tmpfs.mcg",
    // Shared anonymous memory and memfd.
    shmem_shared => "shmem/shared.mcg",
    // tmpfs under a limit: swapped out, read back, freed.
    shmem_swap => "shmem/swap.mcg",
    // tmpfs size=, remount, umount; no swap: the writer OOM-killed, its pages kept.
    shmem_limits => "shmem/limits.mcg",
    // Huge shmem pages: huge=, shmem_enabled, fallback, the shrinker, reclaim's split.
    shmem_huge => "shmem/huge.mcg",
    // zswap: parameters, stores instead of device writes, memory.zswap.max, loads.
    swap_zswap => "swap/zswap.mcg",
    // zswap's pool limit: stores stop at max_pool_percent, the rest goes to the device.
    swap_zswap_pool => "swap/zswap_pool.mcg",
    // The pool's accept threshold: no store after a full pool until below 90% of it.
    swap_zswap_accept => "swap/zswap_accept.mcg",
    // Compressors and zpools switched at run time, each a pool of its own.
    swap_zswap_compressors => "swap/zswap_compressors.mcg",
    // Page contents (anon --data): text, half random, zeros, random; zstd on zsmalloc.
    swap_zswap_data => "swap/zswap_data.mcg",
    // MGLRU: lru_gen's sysfs and debugfs files, their formats and errnos.
    mglru_interface => "mglru/interface.mcg",
    // MGLRU aging: touched pages join the youngest generation, untouched ones grow old.
    mglru_aging => "mglru/aging.mcg",
    // MGLRU eviction order: idle pages go before a working set in use.
    mglru_hot_cold => "mglru/hot_cold.mcg",
    // MGLRU tiers: a file read many times is protected from a stream.
    mglru_refault => "mglru/refault.mcg",
    // MGLRU min_ttl_ms: kswapd's OOM rule.
    mglru_min_ttl => "mglru/min_ttl.mcg",
    // The kubelet's tree on cgroup v2: its files as written, memory.high throttling, the
    // container's group OOM kill.
    node_kubelet => "node/kubelet.mcg",
    // Direct reclaimers throttled on pages other reclaimers isolated.
    swap_too_many_isolated => "swap/too_many_isolated.mcg",
    // Mapped file pages: executable text against a file reader.
    file_exec_text => "file/exec_text.mcg",
    // Read-around and fault-around of a file read in order through a mapping.
    file_mmap_faults => "file/mmap_faults.mcg",
    // Pressure stall information.
    psi_high_throttle => "psi/high_throttle.mcg",
    psi_direct_reclaim => "psi/direct_reclaim.mcg",
    psi_trigger => "psi/trigger.mcg",
    psi_trigger_rules => "psi/trigger_rules.mcg",
    // cgroup core files.
    cgroup_core_files => "cgroup/core_files.mcg",
    cgroup_dying => "cgroup/dying.mcg",
    cgroup_names => "cgroup/names.mcg",
    // Dirty memory.
    dirty_sysctl => "dirty/sysctl.mcg",
    // cgroup v1.
    v1_limit_parse => "v1/limit_parse.mcg",
    v1_limit_busy => "v1/limit_busy.mcg",
    v1_force_empty => "v1/force_empty.mcg",
    v1_failcnt => "v1/failcnt.mcg",
    v1_max_usage => "v1/max_usage.mcg",
    v1_use_hierarchy => "v1/use_hierarchy.mcg",
    v1_stat => "v1/stat.mcg",
    v1_memsw => "v1/memsw.mcg",
    v1_soft_limit => "v1/soft_limit.mcg",
    // File writers and readers (dd, cat, tar): where their pages are charged.
    dirty_dd_charge => "dirty/dd_charge.mcg",
    dirty_first_touch => "dirty/first_touch.mcg",
    dirty_tar => "dirty/tar.mcg",
    dirty_high => "dirty/high.mcg",
    dirty_cat_limit => "dirty/cat_limit.mcg",
    dirty_beside_dd => "dirty/beside_dd.mcg",
    dirty_writer_limit => "dirty/writer_limit.mcg",
    // Issue 38, items 2-4: counters as 6.1 keeps them (global vmstat without cgroup
    // reclaim, failcnt, activations).
    vmstat_cgroup_reclaim => "vmstat/cgroup_reclaim.mcg",
    vmstat_activate => "vmstat/activate.mcg",
    vmstat_events => "vmstat/events.mcg",
    v1_failcnt_ltp => "v1/failcnt_ltp.mcg",
    // Seed 001's per-memcg dirty limits (dirty=seed001; never merged, no oracle).
    seed001_files => "seed001/files.mcg",
    seed001_held => "seed001/held.mcg",
    seed001_global => "seed001/global.mcg",
    // The hierarchy experiment (experiments/seed001/hierarchy) is small enough to run whole.
    seed001_hierarchy => "../experiments/seed001/hierarchy/seed001.mcg",
    seed001_hierarchy_fixed => "../experiments/seed001/hierarchy/seed001-hier.mcg",
    // Seed reports.
    seed002_pagetest_400m => "seed002/pagetest_400M.mcg",
    seed002_scan_split => "seed002/scan_split.mcg",
    seed002_scan_unified => "seed002/scan_unified.mcg",
    seed000_global_tree => "seed000/global_tree.mcg",
    seed000_global_rework => "seed000/global_rework.mcg",
    seed000_global_rework_walk => "seed000/global_rework_walk.mcg",
    seed000_limit_tree => "seed000/limit_tree.mcg",
    seed000_limit_rework => "seed000/limit_rework.mcg",
    seed000_fallback_rework => "seed000/fallback_rework.mcg",
    seed000_reclaim_3_11 => "seed000/reclaim_3_11.mcg",
    seed000_reclaim_6_1 => "seed000/reclaim_6_1.mcg",
    seed000_stream_tree_3_11 => "seed000/stream_tree_3_11.mcg",
    seed000_stream_rework_3_11 => "seed000/stream_rework_3_11.mcg",
    // Issue 38 item 7: thread stacks kept and reused by the C library.
    kmem_thread_stacks => "kmem/thread_stacks.mcg",
    // Issue 38 item 8: global direct reclaim under a fast allocator.
    swap_direct_probe => "swap/direct_probe.mcg",
    // Script blocks (every, if/else, break, nested repeat, $now) driving small policies.
    script_blocks_policy => "script_blocks/policy.mcg",
    script_blocks_watchdog => "script_blocks/watchdog.mcg",
}

/// Collect the `.mcg` files under `dir` (recursively), relative to `tests/`.
fn collect_scripts(dir: &Path, root: &Path, out: &mut BTreeSet<String>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect_scripts(&path, root, out);
        } else if path.extension().is_some_and(|ext| ext == "mcg") {
            let rel = path.strip_prefix(root).expect("under tests/");
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.insert(rel.join("/"));
        }
    }
}

/// A script added under tests/ without a test of its own would never run.
#[test]
fn every_script_has_a_test() {
    let root = tests_dir();
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(&root).expect("list tests/") {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && !NOT_RUN_DIRS.contains(&name.as_str()) {
            collect_scripts(&path, &root, &mut found);
        }
    }
    let listed: BTreeSet<String> = LISTED_SCRIPTS.iter().map(|s| s.to_string()).collect();
    let unlisted: Vec<&String> = found.difference(&listed).collect();
    // Experiment scripts outside tests/ (`../experiments/...`) count if they exist.
    let missing: Vec<&String> = listed
        .difference(&found)
        .filter(|s| !(s.starts_with("../") && root.join(s).is_file()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "scripts without a test in tests/scripts.rs: {unlisted:?}"
    );
    assert!(
        missing.is_empty(),
        "tests in tests/scripts.rs whose script does not exist: {missing:?}"
    );
}

// ---------------------------------------------------------------------------
// The script runner itself.
// ---------------------------------------------------------------------------

fn assert_deterministic(file: &str) {
    let first = run_script(file);
    let second = run_script(file);
    assert!(
        !first.stdout.is_empty(),
        "{file} printed nothing, so there is nothing to compare\n{}",
        first.report()
    );
    if first.stdout != second.stdout {
        let line = first
            .stdout
            .lines()
            .zip(second.stdout.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1)
            .unwrap_or_else(|| {
                first
                    .stdout
                    .lines()
                    .count()
                    .min(second.stdout.lines().count())
                    + 1
            });
        panic!(
            "two runs of {file} printed different stdout (first difference at output line {line})\n\
             === first run ===\n{}\n=== second run ===\n{}",
            first.report(),
            second.report()
        );
    }
    assert_eq!(
        first.stderr,
        second.stderr,
        "two runs of {file} printed different stderr\n=== first run ===\n{}\n=== second run ===\n{}",
        first.report(),
        second.report()
    );
    assert_eq!(
        first.code(),
        second.code(),
        "two runs of {file} ended with different exit status"
    );
}

/// (a) The same script gives byte-identical output every time.
#[test]
fn runner_is_deterministic() {
    assert_deterministic("fixtures/determinism.mcg");
}

/// (a) The same for a kernel selftest port with background tasks, protection
/// and proactive reclaim.
#[test]
fn runner_is_deterministic_on_a_selftest() {
    assert_deterministic("selftests/low.mcg");
}

/// Seed 004: where a frame's memcg is kept (the flat array, a radix tree, per-section
/// arrays) changes the host's work, never the simulation: the same scripts print the same
/// bytes under each design, with the invariant checker on.
#[test]
fn page_cgroup_designs_print_the_same() {
    for file in [
        "selftests/low.mcg",
        "fixtures/determinism.mcg",
        "seed002/scan_split.mcg",
        "v1/stat.mcg",
    ] {
        // Each script's expects check per-group figures; a design that lost an owner would
        // fail them or print other numbers.
        let flat = run_script_with(file, &["--set", "page_cgroup=flat"]);
        assert_eq!(flat.code(), Some(0), "{}", flat.report());
        for design in ["radix", "section"] {
            let other = run_script_with(file, &["--set", &format!("page_cgroup={design}")]);
            assert_eq!(
                (&flat.stdout, &flat.stderr),
                (&other.stdout, &other.stderr),
                "{file} under page_cgroup={design}\n{}",
                other.report()
            );
        }
    }
}

/// (b) A failed expect is reported as FILE:LINE: expect failed: ... on
/// stderr, the script goes on, and the exit status is 1.
#[test]
fn runner_reports_failed_expect() {
    let file = "fixtures/expect_fail.mcg";
    let run = run_script(file);
    assert_eq!(
        run.code(),
        Some(1),
        "expected exit status 1\n{}",
        run.report()
    );
    let mut failing = lines_of(file, "expect 1 == 2");
    failing.extend(lines_of(file, "expect 4K > 1M"));
    for line in &failing {
        let wanted = format!("{file}:{line}: expect failed:");
        assert!(
            run.stderr.contains(&wanted),
            "stderr lacks `{wanted}`\n{}",
            run.report()
        );
    }
    let reported = run.stderr.matches("expect failed:").count();
    assert_eq!(
        reported,
        failing.len(),
        "expected exactly {} failed expects to be reported\n{}",
        failing.len(),
        run.report()
    );
    for passing in lines_of(file, "expect 1K == 1024")
        .into_iter()
        .chain(lines_of(file, "expect /A/memory.current == 0"))
    {
        let unwanted = format!("{file}:{passing}: expect failed:");
        assert!(
            !run.stderr.contains(&unwanted),
            "a passing expect was reported as failed: `{unwanted}`\n{}",
            run.report()
        );
    }
    assert!(
        run.stdout.contains("still-running") && run.stdout.contains("reached-the-end"),
        "the script did not run on after a failed expect\n{}",
        run.report()
    );
}

/// (c) An unknown command is a script error: FILE:LINE: error: and exit 2.
#[test]
fn runner_reports_unknown_command() {
    let file = "fixtures/unknown_command.mcg";
    let run = run_script(file);
    assert_eq!(
        run.code(),
        Some(2),
        "expected exit status 2\n{}",
        run.report()
    );
    let line = lines_of(file, "frobnicate /A")[0];
    let wanted = format!("{file}:{line}: error:");
    assert!(
        run.stderr.contains(&wanted),
        "stderr lacks `{wanted}`\n{}",
        run.report()
    );
}

/// (d) A write the kernel rejects prints `write error` with the errno text,
/// and the script goes on (exit 0 here, since every expect holds).
#[test]
fn runner_survives_write_error() {
    let file = "fixtures/write_error.mcg";
    let run = run_script(file);
    let all = format!("{}\n{}", run.stdout, run.stderr);
    assert!(
        all.lines()
            .any(|l| l.contains("write error") && l.contains("Invalid argument")),
        "no line with `write error` and `Invalid argument`\n{}",
        run.report()
    );
    assert!(
        run.stdout.contains("after-write-error"),
        "the script did not go on after the failed write\n{}",
        run.report()
    );
    assert_eq!(
        run.code(),
        Some(0),
        "expected exit status 0\n{}",
        run.report()
    );
}

/// The README's demo scenario keeps working (and keeps its own expectations).
#[test]
fn readme_demo_runs() {
    let out = Command::new(env!("CARGO_BIN_EXE_memcgsim"))
        .args(["script", "--check", "examples/demo.mcg"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run memcgsim");
    assert!(
        out.status.success(),
        "demo failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `memcgsim shell` reads commands from a pipe, without a prompt, as the README shows.
#[test]
fn shell_reads_piped_commands() {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_memcgsim"))
        .arg("shell")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start memcgsim shell");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(
            b"mkdir A\necho 30M > A/memory.max\necho 0 > A/memory.swap.max\n\
              run A anon 100M\ncat A/memory.events\ncd A\ncat memory.max\n",
        )
        .expect("write commands");
    let out = child.wait_with_output().expect("shell exits");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("oom 1\noom_kill 1\n"), "{stdout}");
    assert!(stdout.ends_with("31457280\n"), "{stdout}");
    assert!(
        !stdout.contains("memcgsim:/"),
        "no prompt on a pipe: {stdout}"
    );
}
