//! /proc/zoneinfo: the zones of a 512M machine as a 6.1 x86_64 guest of that size shows them,
//! and per-zone counts that add up to the node's.

mod common;

use std::collections::BTreeMap;

use common::{machine, spawn, vmstat};

/// Each zone's "key value" lines (the first value of a line), by zone name; the node's
/// items under "node".
fn parse(text: &str) -> BTreeMap<String, BTreeMap<String, Vec<u64>>> {
    let mut zones: BTreeMap<String, BTreeMap<String, Vec<u64>>> = BTreeMap::new();
    let mut zone = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("Node 0, zone ") {
            zone = name.trim().to_string();
            continue;
        }
        let line = line.trim_start();
        let line = line.strip_prefix("vm stats ").unwrap_or(line);
        let line = line.strip_prefix("pages ").unwrap_or(line);
        let mut words = line.split_whitespace();
        let (Some(key), Some(val)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(v) = val.parse::<u64>() else {
            continue;
        };
        zones
            .entry(zone.clone())
            .or_default()
            .entry(key.trim_end_matches(':').to_string())
            .or_default()
            .push(v);
    }
    zones
}

#[test]
fn zones_of_a_512m_machine_and_their_counts() {
    let mut sys = machine(&[("memory", "512M"), ("swap", "512M"), ("cpus", "2")]);
    sys.mkdir("/A").unwrap();
    let pid = spawn(&mut sys, "/A", "anon", &["600M"]);
    sys.wait(pid, false, u64::MAX).unwrap();
    let pid = spawn(&mut sys, "/A", "anon", &["100M", "--hold"]);
    sys.wait(pid, true, u64::MAX).unwrap();

    let text = sys.read("/proc/zoneinfo").unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Node 0, zone "))
        .collect();
    assert_eq!(
        names,
        ["     DMA", "   DMA32", "  Normal", " Movable", "  Device"]
    );
    let z = parse(&text);
    let one = |zone: &str, key: &str| z[zone][key][0];
    // The guest's /proc/zoneinfo: DMA 3840 managed with min/low/high 22/27/32; DMA32 112,691
    // managed, 649/811/973 (the model takes min_free_kbytes from MemTotal, 6.1 from the
    // free pages at boot: 1.5% higher marks). DMA's protection is DMA32's managed / 256.
    assert_eq!(one("DMA", "managed"), 3840);
    assert_eq!(
        (one("DMA", "min"), one("DMA", "low"), one("DMA", "high")),
        (22, 27, 32)
    );
    let dma32 = one("DMA32", "managed");
    assert!((112_000..113_500).contains(&dma32), "{dma32}");
    assert!(text.contains(&format!(
        "protection: (0, {p}, {p}, {p}, {p})",
        p = dma32 / 256
    )));
    assert_eq!(one("Normal", "managed"), 0);
    assert_eq!(one("DMA", "start_pfn"), 0);
    assert_eq!(one("DMA32", "start_pfn"), 4096);
    // Per-CPU lists: DMA batch 1, high 13; DMA32 batch 31; two CPUs each.
    assert_eq!(z["DMA"]["batch"], [1, 1]);
    // "high" is the watermark, then each CPU list's high mark.
    assert_eq!(z["DMA"]["high"], [32, 13, 13]);
    assert_eq!(z["DMA32"]["batch"], [31, 31]);
    assert_eq!(z["DMA32"]["threshold"], [12, 12]);

    // The zones' free pages are the node's; their LRU pages add up to the node's lists.
    let free: u64 = ["DMA", "DMA32"]
        .iter()
        .map(|n| one(n, "nr_free_pages"))
        .sum();
    assert_eq!(free, vmstat(&mut sys, "nr_free_pages"));
    for (zone_key, node_key) in [
        ("nr_zone_inactive_anon", "nr_inactive_anon"),
        ("nr_zone_active_anon", "nr_active_anon"),
        ("nr_zone_inactive_file", "nr_inactive_file"),
        ("nr_zone_active_file", "nr_active_file"),
    ] {
        let sum: u64 = ["DMA", "DMA32"].iter().map(|n| one(n, zone_key)).sum();
        assert_eq!(sum, vmstat(&mut sys, node_key), "{zone_key}");
        // The node's items are printed once, under the first populated zone.
        assert_eq!(z["DMA"][node_key], [vmstat(&mut sys, node_key)]);
        assert!(!z["DMA32"].contains_key(node_key));
    }
    // The 100M held are anon pages, nearly all in DMA32.
    let anon32 = one("DMA32", "nr_zone_inactive_anon") + one("DMA32", "nr_zone_active_anon");
    assert!(anon32 > 20_000, "{anon32}");
}

/// The counts of a `Node 0, zone NAME n n n ...` line (the node's "0," is no count).
fn counts(line: &str) -> Vec<u64> {
    line.split_whitespace()
        .filter_map(|w| w.trim_start_matches('>').parse().ok())
        .collect()
}

#[test]
fn buddyinfo_and_pagetypeinfo_as_6_1_prints_them() {
    let mut sys = machine(&[("memory", "512M"), ("swap", "512M"), ("cpus", "2")]);
    // At boot: DMA's managed frames from 1 MiB are an order-8 block, an order-9 block and
    // three order-10 blocks; the first pageblock (frame 0's) is Unmovable.
    let text = sys.read("/proc/buddyinfo").unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "populated zones only: {text}");
    assert!(lines[0].starts_with("Node 0, zone      DMA      0      0 "));
    assert!(lines[0].ends_with(' '), "each count is followed by a space");
    let dma = counts(lines[0]);
    assert_eq!(dma, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 3]);
    let boot_dma32 = counts(lines[1]);
    assert_eq!(boot_dma32.len(), 11);

    // Free pages add up to MemFree less what sits on the per-CPU lists.
    let free_kb = |sys: &mut memcgsim_cgroupfs::System| {
        let meminfo = sys.read("/proc/meminfo").unwrap();
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemFree:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap()
    };
    sys.mkdir("/A").unwrap();
    let pid = spawn(&mut sys, "/A", "anon", &["300M", "--hold"]);
    sys.wait(pid, true, u64::MAX).unwrap();
    let text = sys.read("/proc/buddyinfo").unwrap();
    let pages: u64 = text
        .lines()
        .map(|l| {
            counts(l)
                .iter()
                .enumerate()
                .map(|(o, n)| n << o)
                .sum::<u64>()
        })
        .sum();
    assert_eq!(pages * 4, free_kb(&mut sys));
    let dma32 = counts(text.lines().nth(1).unwrap());
    assert!(dma32[10] < boot_dma32[10], "max-order blocks used: {text}");

    let p = sys.read("/proc/pagetypeinfo").unwrap();
    let mut lines = p.lines();
    assert_eq!(lines.next(), Some("Page block order: 9"));
    assert_eq!(lines.next(), Some("Pages per block:  512"));
    assert_eq!(lines.next(), Some(""));
    assert_eq!(
        lines.next(),
        Some(
            "Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 "
        )
    );
    let free: Vec<&str> = p.lines().filter(|l| l.contains(", type ")).collect();
    assert_eq!(free.len(), 2 * 5, "five types per populated zone");
    assert!(free[0].starts_with("Node    0, zone      DMA, type    Unmovable "));
    assert!(free[4].starts_with("Node    0, zone      DMA, type      Isolate "));
    // Per zone, the types' counts add up to buddyinfo's.
    for (z, line) in text.lines().enumerate() {
        let total = counts(line);
        let mut sum = vec![0u64; 11];
        for l in &free[z * 5..z * 5 + 5] {
            for (s, n) in sum.iter_mut().zip(counts(l)) {
                *s += n;
            }
        }
        assert_eq!(sum, total, "zone {z}");
    }
    let blocks_header = p
        .lines()
        .find(|l| l.starts_with("Number of blocks type "))
        .unwrap();
    assert_eq!(
        blocks_header,
        "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate "
    );
    let blocks: Vec<Vec<u64>> = p
        .lines()
        .skip_while(|l| !l.starts_with("Number of blocks"))
        .skip(1)
        .map(counts)
        .collect();
    // DMA: 16 MiB is 8 pageblocks, the first Unmovable; DMA32's span is 248 of them, the
    // kernel's own pages having claimed some from Movable.
    assert_eq!(blocks[0], [1, 7, 0, 0, 0]);
    assert_eq!(blocks[1].iter().sum::<u64>(), 248);
    assert!(blocks[1][0] > 0 && blocks[1][1] > 200, "{:?}", blocks[1]);
}
