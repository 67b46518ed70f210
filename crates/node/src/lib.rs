//! Bring your node: a real host's cgroup tree as a memcgsim scenario. scripts/memcgsim-snapshot
//! reads a host's cgroup v2 tree and memory state into a JSON snapshot (snapshot.rs reads it;
//! `snapshot::take()` writes one of a simulated machine), and `memcgsim import` turns it into
//! a scenario whose groups hold what the host's held (import.rs).

pub mod import;
pub mod snapshot;
pub mod systemd;

pub use import::{import, ImportOpts, Imported, Target};
pub use snapshot::Snapshot;
