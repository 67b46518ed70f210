//! `memcgsim run --seed A,B --jobs N`: several seeds, each into its own folder, the same as
//! one run per seed, whatever the number of jobs.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::memcgsim;

const SCENARIO: &str = "experiments/seed000/kbuild/small.toml";

/// Every file under `dir`, by path relative to it.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                m.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    m
}

#[test]
fn several_seeds_equal_one_run_per_seed() {
    let d = tempfile::tempdir().unwrap();
    let both = d.path().join("both");
    let (ok, out, err) = memcgsim(&[
        "run",
        SCENARIO,
        "--seed",
        "1,2",
        "--jobs",
        "2",
        "--no-progress",
        "--out",
        both.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let mut printed = String::new();
    for seed in ["1", "2"] {
        let one = d.path().join(format!("one{seed}"));
        let (ok, o, err) = memcgsim(&[
            "run",
            SCENARIO,
            "--seed",
            seed,
            "--no-progress",
            "--out",
            one.to_str().unwrap(),
        ]);
        assert!(ok, "{err}");
        if !printed.is_empty() {
            printed.push('\n');
        }
        printed.push_str(&o);
        assert!(
            tree(&one) == tree(&both.join(format!("base-seed{seed}"))),
            "seed {seed}: the folders differ"
        );
    }
    assert_eq!(out, printed);
}

#[test]
fn a_seed_given_twice_is_refused_before_any_run() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o");
    let (ok, _, err) = memcgsim(&[
        "run",
        SCENARIO,
        "--seed",
        "3,3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(err.contains("--seed 3 is given twice"), "{err}");
    assert!(!out.exists());
}
