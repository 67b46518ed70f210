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
