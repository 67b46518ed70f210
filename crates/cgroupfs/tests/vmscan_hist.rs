//! /proc/memcgsim/vmscan: what shrink_inactive_list() did per reclaimer and priority adds up
//! to the vmstat and memory.stat counters the same calls moved.

mod common;

use common::{machine, spawn, vmstat};
use memcgsim_cgroupfs::System;

#[test]
fn the_histogram_adds_up_to_pgscan_and_pgsteal() {
    let mut sys = machine(&[("memory", "256M"), ("swap", "512M"), ("cpus", "2")]);
    sys.mkdir("/A").unwrap();
    sys.mkdir("/B").unwrap();
    sys.write("/B/memory.max", "40M").unwrap();
    let mut pids = Vec::new();
    for (g, size) in [("/A", "300M"), ("/B", "60M")] {
        pids.push(spawn(&mut sys, g, "anon", &[size]));
    }
    for p in pids {
        sys.wait(p, false, u64::MAX).unwrap();
    }
    let text = sys.read("/proc/memcgsim/vmscan").unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("reclaimer priority calls scanned reclaimed ref_keep activate writeback")
    );
    // [kswapd, direct, memcg] × [scanned, reclaimed]
    let mut sum = [[0u64; 2]; 3];
    let mut last_prio = [13u64; 3];
    for l in lines {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 8, "{l}");
        let kind = ["kswapd", "direct", "memcg"]
            .iter()
            .position(|k| *k == f[0])
            .unwrap_or_else(|| panic!("reclaimer {l}"));
        let n: Vec<u64> = f[1..].iter().map(|x| x.parse().unwrap()).collect();
        // Rows run from DEF_PRIORITY down, each with calls, and a call scans at most a batch.
        assert!(n[0] < last_prio[kind], "{l}");
        last_prio[kind] = n[0];
        assert!(n[1] > 0 && n[2] <= n[1] * 32, "{l}");
        // Reclaimed, kept and activated pages are among the scanned ones.
        assert!(n[3] + n[4] + n[5] <= n[2], "{l}");
        sum[kind][0] += n[2];
        sum[kind][1] += n[3];
    }
    assert_eq!(sum[0][0], vmstat(&mut sys, "pgscan_kswapd"));
    assert_eq!(sum[0][1], vmstat(&mut sys, "pgsteal_kswapd"));
    // B's limit reclaim is memcg reclaim: /proc/vmstat's direct counts are global reclaim's
    // alone, as 6.1 counts them; the anon/file split counts every reclaim.
    assert_eq!(sum[1][0], vmstat(&mut sys, "pgscan_direct"));
    assert_eq!(sum[1][1], vmstat(&mut sys, "pgsteal_direct"));
    let all: [u64; 2] = [0, 1].map(|i| sum.iter().map(|r| r[i]).sum());
    assert_eq!(
        all[0],
        vmstat(&mut sys, "pgscan_anon") + vmstat(&mut sys, "pgscan_file")
    );
    assert_eq!(
        all[1],
        vmstat(&mut sys, "pgsteal_anon") + vmstat(&mut sys, "pgsteal_file")
    );
    // B's memory.stat has its limit reclaim in its direct counts, with what global
    // reclaim took from it.
    let b_stat = sys.read("/B/memory.stat").unwrap();
    let b = |k: &str| -> u64 {
        b_stat
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k} ")))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(b("pgscan_direct") >= sum[2][0], "{b_stat}");
    assert!(b("pgsteal_direct") >= sum[2][1], "{b_stat}");
    assert!(sum[2][1] > 0, "B's limit reclaim is in the memcg rows");
    assert!(sum[0][1] > 0, "A's overcommit woke kswapd");
}

/// ALLOCSTALL counts each pass of do_try_to_free_pages(), not each call: when every page
/// cache page belongs to a group under memory.low and anon cannot be swapped, a direct
/// reclaimer's first pass skips the group and finds nothing, and its second pass
/// (memcg_low_reclaim) reclaims from the group, one shrink_inactive_list() at priority 12
/// before going down. Two passes per call: allocstall is twice the direct calls at 12.
#[test]
fn allocstall_counts_every_pass_of_direct_reclaim() {
    let mut sys = machine(&[("memory", "256M"), ("swap", "0"), ("cpus", "1")]);
    sys.mkdir("/P").unwrap();
    sys.mkdir("/Q").unwrap();
    sys.write("/P/memory.low", "max").unwrap();
    let pid = spawn(&mut sys, "/P", "cat", &["--file", "f", "150M"]);
    sys.wait(pid, false, u64::MAX).unwrap();
    let before = vmstat(&mut sys, "allocstall_movable");
    let pid = spawn(&mut sys, "/Q", "anon", &["150M"]);
    sys.wait(pid, false, u64::MAX).unwrap();
    let allocstall = vmstat(&mut sys, "allocstall_movable") - before;
    let text = sys.read("/proc/memcgsim/vmscan").unwrap();
    let direct_at = |prio: &str| -> u64 {
        text.lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[0] == "direct" && f[1] == prio).then(|| f[2].parse().unwrap())
            })
            .unwrap_or(0)
    };
    let calls = direct_at("12");
    assert!(calls > 10, "direct reclaim ran: {text}");
    assert_eq!(allocstall, 2 * calls, "{text}");
    // The low events count the second passes that reclaimed from the protected group.
    let events = sys.read("/P/memory.events").unwrap();
    assert!(events.contains("low "), "{events}");
}

/// PGREFILL, PGSCAN_* and PGSTEAL_* of limit reclaim stay out of /proc/vmstat (6.1's
/// `if (!cgroup_reclaim(sc))`), while the group's memory.stat counts them; global reclaim
/// counts in both.
#[test]
fn limit_reclaim_stays_out_of_the_node_counters() {
    let mut sys = machine(&[("memory", "256M"), ("swap", "512M"), ("cpus", "2")]);
    sys.mkdir("/A").unwrap();
    sys.write("/A/memory.max", "20M").unwrap();
    // Page cache read twice is activated, so limit reclaim ages the active file list.
    let pid = spawn(
        &mut sys,
        "/A",
        "access",
        &[
            "16M",
            "--file",
            "f",
            "--read-only",
            "--pattern",
            "seq",
            "--count",
            "8192",
        ],
    );
    sys.wait(pid, false, u64::MAX).unwrap();
    let pid = spawn(&mut sys, "/A", "anon", &["40M"]);
    sys.wait(pid, false, u64::MAX).unwrap();
    let stat = |sys: &mut System, g: &str, k: &str| -> u64 {
        let text = sys.read(&format!("{g}/memory.stat")).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} ")))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(stat(&mut sys, "/A", "pgrefill") > 0);
    assert!(stat(&mut sys, "/A", "pgscan_direct") > 0);
    assert!(stat(&mut sys, "/A", "pgsteal_direct") > 0);
    for k in [
        "pgrefill",
        "pgscan_direct",
        "pgsteal_direct",
        "pgscan_kswapd",
    ] {
        assert_eq!(vmstat(&mut sys, k), 0, "{k}");
    }
    assert_eq!(
        vmstat(&mut sys, "pgscan_anon") + vmstat(&mut sys, "pgscan_file"),
        stat(&mut sys, "/A", "pgscan")
    );
    // Global reclaim: a group without a limit overcommits the machine.
    sys.mkdir("/B").unwrap();
    let pid = spawn(&mut sys, "/B", "anon", &["300M"]);
    sys.wait(pid, false, u64::MAX).unwrap();
    let node = vmstat(&mut sys, "pgscan_direct") + vmstat(&mut sys, "pgscan_kswapd");
    let b = stat(&mut sys, "/B", "pgscan");
    assert!(b > 0);
    assert!(node >= b, "{node} < {b}");
    let node_steal = vmstat(&mut sys, "pgsteal_direct") + vmstat(&mut sys, "pgsteal_kswapd");
    assert!(node_steal >= stat(&mut sys, "/B", "pgsteal"));
}
