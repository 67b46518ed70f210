//! memory.failcnt and memory.memsw.failcnt as 6.1's try_charge_memcg() leaves them: one per
//! failed page_counter_try_charge() at the level that failed, the batch attempt and every
//! retry included.

#[allow(dead_code)]
mod common;

use common::{machine, spawn};
use memcgsim_cgroupfs::System;

fn read(sys: &mut System, path: &str) -> u64 {
    sys.read(path).unwrap().trim().parse().unwrap()
}

fn run(sys: &mut System, group: &str, args: &[&str]) {
    let pid = spawn(sys, group, "anon", args);
    sys.wait(pid, false, u64::MAX).unwrap();
}

/// LTP's memcg_failcnt (anon): a one-page limit, and a task that touches two pages. The
/// page-table page takes the page (its batch of 64 fails first: 1). The first anon page
/// cannot be charged and nothing can be reclaimed: the batch and the single page fail
/// (2), the retry after drain_all_stock() (1) and MAX_RECLAIM_RETRIES retries (16) fail,
/// the OOM killer kills the task, and the victim's charge goes round 1 + 16 more times
/// before it gives up (17): 37, as on Linux 6.1.
#[test]
fn one_page_limit_counts_the_victims_retries() {
    let mut sys = machine(&[("memory", "1G"), ("swap", "1G"), ("cgroup", "v1")]);
    sys.mkdir("/A").unwrap();
    sys.write("/A/memory.limit_in_bytes", "4096").unwrap();
    run(&mut sys, "/A", &["8K"]);
    assert_eq!(read(&mut sys, "/A/memory.failcnt"), 37);
    assert_eq!(read(&mut sys, "/A/memory.memsw.failcnt"), 0);
    assert_eq!(
        sys.read("/A/memory.oom_control")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .unwrap(),
        "1"
    );
}

/// memsw checked first: with memory.memsw.limit_in_bytes equal to the memory limit the
/// memory+swap counter is the one that fails (36: no page-table batch failure there, the
/// group starts empty), and memory.failcnt stays 0.
#[test]
fn memsw_at_the_memory_limit_fails_on_memsw() {
    // Small pages, as LTP's count assumes (THP always adds one failure).
    let mut sys = machine(&[
        ("memory", "1G"),
        ("swap", "1G"),
        ("cgroup", "v1"),
        ("thp", "never"),
    ]);
    sys.mkdir("/E").unwrap();
    sys.write("/E/memory.limit_in_bytes", "4M").unwrap();
    sys.write("/E/memory.memsw.limit_in_bytes", "4M").unwrap();
    run(&mut sys, "/E", &["16M"]);
    assert_eq!(read(&mut sys, "/E/memory.failcnt"), 0);
    assert_eq!(read(&mut sys, "/E/memory.memsw.failcnt"), 36);
}

/// A failed batch over memory+swap turns swapping off for the rest of the charge (6.1
/// clears MEMCG_RECLAIM_MAY_SWAP and no retry sets it again): once memsw has less than a
/// batch of room, the first charge that also meets the memory limit reclaims without swap,
/// finds nothing and ends in the OOM killer. So memsw fails a few times only, where
/// swapping on would have let it fail on every charge of its last 64 pages.
#[test]
fn memsw_batch_failure_turns_swap_off_for_the_charge() {
    let mut sys = machine(&[("memory", "1G"), ("swap", "1G"), ("cgroup", "v1")]);
    sys.mkdir("/D").unwrap();
    sys.write("/D/memory.limit_in_bytes", "4M").unwrap();
    sys.write("/D/memory.memsw.limit_in_bytes", "8M").unwrap();
    run(&mut sys, "/D", &["16M"]);
    let memsw_fails = read(&mut sys, "/D/memory.memsw.failcnt");
    assert!(memsw_fails > 0 && memsw_fails < 32, "{memsw_fails}");
    // Every page past the first 1024 met the memory limit once, and the victim 17 times.
    let fails = read(&mut sys, "/D/memory.failcnt");
    assert!((1000..1100).contains(&fails), "{fails}");
    // The group was killed with memory+swap still short of its limit.
    assert!(read(&mut sys, "/D/memory.memsw.max_usage_in_bytes") <= 8 << 20);
}

/// memory.events `high` counts each reclaim_high() of a group over its memory.high. The
/// selftests' alloc_pagecache() reads a page per read(), and each return to user space runs
/// the memory.high work the read's charges queued (a batch of 64 pages over high), so
/// reclaim_high() runs about every 64 pages past the limit, as on 6.1 (28 and 30 high
/// events in two runs of this on the 6.1 guest); waiting for the next charge to find more
/// than a batch queued halves that.
#[test]
fn page_cache_reads_handle_memory_high_on_return() {
    let mut sys = machine(&[("memory", "1G"), ("swap", "1G")]);
    sys.mkdir("/C").unwrap();
    sys.write("/C/memory.high", "4M").unwrap();
    let pid = spawn(&mut sys, "/C", "pagecache", &["16M"]);
    sys.wait(pid, false, u64::MAX).unwrap();
    let events = sys.read("/C/memory.events").unwrap();
    let high: u64 = events
        .lines()
        .find_map(|l| l.strip_prefix("high "))
        .unwrap()
        .parse()
        .unwrap();
    // 3,072 pages past memory.high; each reclaim_high() takes about two batches.
    assert!((24..=36).contains(&high), "{events}");
}
