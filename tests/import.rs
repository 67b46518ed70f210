//! `memcgsim import`: a snapshot into a scenario file, notes on standard error, errors that
//! name the file, and no file overwritten.

use std::path::Path;
use std::process::Command;

fn memcgsim(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_memcgsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn guest_snapshot() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/node/guest-6.1.json")
        .display()
        .to_string()
}

#[test]
fn import_writes_a_new_scenario_that_runs() {
    let dir = tempfile::tempdir().unwrap();
    let snap = guest_snapshot();
    let (ok, out, err) = memcgsim(
        dir.path(),
        &["import", &snap, "--out", "n.toml", "--name", "n"],
    );
    assert!(ok, "{err}");
    assert!(out.is_empty());
    assert_eq!(err, "memcgsim import: 6 groups into n.toml\n");
    let text = std::fs::read_to_string(dir.path().join("n.toml")).unwrap();
    assert!(text.contains("name = \"n\""));
    // Again: the file is there, and stays as it is.
    let (ok, _, err) = memcgsim(dir.path(), &["import", &snap, "--out", "n.toml"]);
    assert!(!ok);
    assert!(err.starts_with("memcgsim: n.toml: "), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("n.toml")).unwrap(),
        text
    );
    // Without --out, the scenario goes to standard output, the same text.
    let (ok, out, _) = memcgsim(dir.path(), &["import", &snap, "--name", "n"]);
    assert!(ok);
    assert_eq!(out, text);
    let (ok, out, err) = memcgsim(dir.path(), &["run", "n.toml", "--no-progress"]);
    assert!(ok, "{err}");
    assert!(out.contains("/system.slice/db.service"), "{out}");
}

#[test]
fn import_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.json"),
        "{\"format\": \"memcgsim-snapshot\",\n \"version\": 1,\n \"cpus\": \"two\"}",
    )
    .unwrap();
    let (ok, _, err) = memcgsim(dir.path(), &["import", "bad.json"]);
    assert!(!ok);
    assert!(err.starts_with("memcgsim: bad.json:3:"), "{err}");
    let (ok, _, err) = memcgsim(dir.path(), &["import", "missing.json"]);
    assert!(!ok);
    assert!(err.starts_with("memcgsim: missing.json: "), "{err}");
}
