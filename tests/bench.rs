//! `memcgsim bench`: the trace replay's figures on a trace small enough to count by hand, its
//! generated trace deterministic, and files it did not create left alone; the page_cgroup
//! designs' bytes per frame; the progress line and legend of a part, the labels in `--help`,
//! and `--scale 0` refused.

mod common;

use std::path::Path;

use memcgsim_workloads::trace::object_id_for_page;

fn bench(args: &[&str]) -> (bool, String, String) {
    let all: Vec<&str> = std::iter::once("bench")
        .chain(args.iter().copied())
        .collect();
    common::memcgsim(&all)
}

/// An oracleGeneral trace of one-page objects on the given pages of the replay's region.
fn write_trace(path: &Path, pages: &[u64]) {
    let mut b = Vec::new();
    for (t, &p) in pages.iter().enumerate() {
        b.extend_from_slice(&(t as u32).to_le_bytes());
        b.extend_from_slice(&object_id_for_page(p).to_le_bytes());
        b.extend_from_slice(&4096u32.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn trace_replay_counts_each_first_access_as_a_miss() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t.oracleGeneral");
    // Three distinct pages far apart (no readahead neighbours), two of them read again.
    write_trace(&t, &[10, 500, 10, 9000, 500]);
    let (ok, out, err) = bench(&["--only", "trace", "--trace", t.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        out.contains("miss ratio 0.6000 (3 misses of 5 requests"),
        "{out}"
    );
}

#[test]
fn trace_replay_misses_once_the_cache_is_full() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t.oracleGeneral");
    // memory.max holds 200,000 pages: two passes over a cycle of 250,000 (every third page,
    // so that no read is sequential and none reads ahead) miss on every access, the second
    // pass too, as they would in an LRU cache.
    let pages: Vec<u64> = (0..250_000u64).map(|i| 3 * i + 7).collect();
    let twice: Vec<u64> = pages.iter().chain(pages.iter()).copied().collect();
    write_trace(&t, &twice);
    let (ok, out, err) = bench(&["--only", "trace", "--trace", t.to_str().unwrap()]);
    assert!(ok, "{err}");
    let misses: u64 = out
        .split(" misses of ")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(misses, 500_000, "{out}");
}

#[test]
fn generated_trace_is_the_same_every_time_and_never_overwrites() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    for p in [&a, &b] {
        let (ok, out, err) = bench(&["--only", "trace", "--trace-out", p.to_str().unwrap()]);
        assert!(ok, "{err}");
        assert!(out.contains("2000000 requests, Zipf 0.8"), "{out}");
    }
    let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(x.len(), 2_000_000 * 24);
    assert!(x == y, "the generated traces differ");
    // A file that exists is not replaced.
    std::fs::write(&a, b"mine").unwrap();
    let (ok, _, err) = bench(&["--only", "trace", "--trace-out", a.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("File exists"), "{err}");
    assert_eq!(std::fs::read(&a).unwrap(), b"mine");
}

/// Seed 004: the three designs of the per-frame memcg lookup, their bytes per frame counted
/// from what each allocated (the rates are the host's and are not asserted).
#[test]
fn page_cgroup_designs_report_their_bytes_per_frame() {
    let (ok, out, err) = bench(&["--only", "page-cgroup"]);
    assert!(ok, "{err}");
    let row = |name: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let bytes = |name: &str| -> [f64; 3] {
        let r = row(name);
        assert_eq!(r.len(), 10, "{r:?}");
        [7, 8, 9].map(|i| r[i].parse().unwrap())
    };
    // The flat array spends a u16 on every frame, charged or not.
    assert_eq!(row("flat")[2], "100.0%");
    assert_eq!(bytes("flat"), [2.0, 2.0, 2.0]);
    // The tree and the sections cost only what is charged: less than the flat array on the
    // partly charged machines; on the full one the tree's 64-slot nodes of 4-byte slots
    // cost about twice the flat array, the sections a little more than it (their table).
    let radix = bytes("radix");
    let section = bytes("section");
    assert!(radix[0] < 1.0 && radix[1] < 1.0, "{radix:?}");
    assert!(radix[2] > 3.0 && radix[2] < 4.5, "{radix:?}");
    assert!(section[0] < 1.0 && section[1] < 1.0, "{section:?}");
    assert!(section[2] > 2.0 && section[2] < 2.5, "{section:?}");
}

/// An oracleGeneral trace of three requests, replayed in milliseconds.
fn tiny_trace(dir: &Path) -> String {
    let t = dir.join("tiny.oracleGeneral");
    write_trace(&t, &[10, 500, 10]);
    t.to_str().unwrap().to_string()
}

#[test]
fn a_part_says_when_it_starts_and_explains_its_labels() {
    let d = tempfile::tempdir().unwrap();
    let t = tiny_trace(d.path());
    let (ok, out, err) = bench(&["--only", "trace", "--trace", &t]);
    assert!(ok, "{err}");
    // Standard error is no terminal here: one plain line as the part starts, no bar.
    assert_eq!(err, "memcgsim bench: part 1 of 1, trace: 1 run\n");
    // The legend follows the figures.
    let figures = out.find("M requests/s, miss ratio 0.6667").unwrap();
    let legend = out
        .find("  miss ratio: pages read into the page cache")
        .unwrap();
    assert!(figures < legend, "{out}");
}

#[test]
fn help_explains_every_part_and_label() {
    let (ok, out, err) = bench(&["--help"]);
    assert!(ok, "{err}");
    for label in [
        "\nhits:\n",
        "\nfault-overhead:\n",
        "\npage-cgroup:\n",
        "\ngrowth:\n",
        "GROWS: a step above 1.5",
        "group: root = the tasks run in the root cgroup, child = in the child group /A",
        "mode: s_read, s_write = one fault-bench task",
        "p_read, p_write = 16 such tasks",
        "off = dirty=global",
        "stats: the machine's statistics scheme",
        "reclaim walk: one memory.reclaim",
        "B/frame full: on a 1 GiB machine",
        "differ by more than 10%",
    ] {
        assert!(out.contains(label), "no {label:?} in\n{out}");
    }
}

#[test]
fn scale_zero_is_refused() {
    for bad in ["0", "x", "-1"] {
        let (ok, out, err) = bench(&[&format!("--scale={bad}"), "--only", "trace"]);
        assert!(!ok, "--scale {bad} ran:\n{out}");
        assert!(err.contains("--scale"), "{err}");
        assert!(out.is_empty(), "{out}");
    }
    let (_, _, err) = bench(&["--scale", "0"]);
    assert!(err.contains("it must be 1 or more"), "{err}");
}
