//! What the integration tests that run the binary share.

use std::process::Command;

/// Run memcgsim with `args` from the repository's top folder; returns whether it exited 0,
/// and its standard output and error.
pub fn memcgsim(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_memcgsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("memcgsim runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
