//! Bring your node: a real host's cgroup tree as a memcgsim scenario. scripts/memcgsim-snapshot
//! reads a host's cgroup v2 tree and memory state into a JSON snapshot (snapshot.rs reads it;
//! `snapshot::take()` writes one of a simulated machine), and `memcgsim import` turns it into
//! a scenario whose groups hold what the host's held (import.rs).

pub mod import;
pub mod snapshot;
pub mod systemd;

pub use import::{import, ImportOpts, Imported, Target};
pub use snapshot::Snapshot;

/// Write `text` to `path`, a new file: a snapshot or an imported scenario never replaces a
/// file that is there already (the error is the open's, AlreadyExists).
pub fn write_new(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?
        .write_all(text.as_bytes())
}
