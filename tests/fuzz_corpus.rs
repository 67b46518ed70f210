//! The fuzz targets' checked-in corpora (fuzz/corpus/TARGET/) replayed through the targets'
//! bodies (the memcgsim-fuzz library) on the stable toolchain, so that `cargo test` runs
//! every input the fuzzer kept without cargo-fuzz or nightly. An input that panics names its
//! file; docs/TESTING.md says how to fuzz further.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

#[test]
fn every_corpus_input_runs_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut failures = Vec::new();
    for (name, body) in memcgsim_fuzz::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: an empty corpus", dir.display());
        for f in &files {
            let data = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            if catch_unwind(AssertUnwindSafe(|| body(&data))).is_err() {
                failures.push(format!("{name}: {}", f.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "inputs that panic (reproduce with `cargo +nightly fuzz run -s none TARGET FILE` in fuzz/):\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_target_has_a_fuzz_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in memcgsim_fuzz::TARGETS {
        let src = root.join(format!("fuzz_targets/{name}.rs"));
        let text =
            std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        assert!(
            text.contains(&format!("memcgsim_fuzz::{name}(data)")),
            "{} does not call memcgsim_fuzz::{name}",
            src.display()
        );
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
    }
}
