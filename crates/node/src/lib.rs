//! Bring your node: a real host's cgroup tree as a memcgsim scenario. scripts/memcgsim-snapshot
//! reads a host's cgroup v2 tree and memory state into a JSON snapshot (snapshot.rs reads it;
//! `snapshot::take()` writes one of a simulated machine), and `memcgsim import` turns it into
//! a scenario whose groups hold what the host's held (import.rs). systemd.rs and
//! kubernetes.rs lay out what a node's managers set up, systemd units and slices and the
//! kubelet's pods, for scenarios' `[systemd]` and `[kubernetes]` sections.

pub mod import;
pub mod kubernetes;
pub mod snapshot;
pub mod systemd;

/// A cgroup a manager (systemd, the kubelet) creates, with the files it writes, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedCgroup {
    pub path: String,
    pub files: Vec<(String, String)>,
    /// Whose cgroup it is: a unit's name, a pod's or container's, or the manager's own.
    pub owner: String,
}

/// A userspace controller a manager runs over one of its cgroups (systemd-oomd for a unit
/// with `ManagedOOMMemoryPressure=kill`, the kubelet's eviction manager).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedController {
    pub name: String,
    pub kind: String,
    pub cgroup: String,
    pub settings: Vec<(String, String)>,
}

/// What a manager sets up: cgroups parents first, and the controllers over them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Managed {
    pub cgroups: Vec<ManagedCgroup>,
    pub controllers: Vec<ManagedController>,
}

impl Managed {
    /// The cgroup at `path`, created (after its parents) if it is not there yet.
    pub fn cgroup(&mut self, path: &str, owner: &str) -> &mut ManagedCgroup {
        let i = match self.cgroups.iter().position(|c| c.path == path) {
            Some(i) => i,
            None => {
                self.cgroups.push(ManagedCgroup {
                    path: path.to_string(),
                    files: Vec::new(),
                    owner: owner.to_string(),
                });
                self.cgroups.len() - 1
            }
        };
        &mut self.cgroups[i]
    }

    /// Set `file` of the cgroup at `path` (which must exist), replacing an earlier value.
    pub fn set(&mut self, path: &str, file: &str, value: &str) {
        let c = self.cgroup(path, "");
        match c.files.iter_mut().find(|(k, _)| k == file) {
            Some(kv) => kv.1 = value.to_string(),
            None => c.files.push((file.to_string(), value.to_string())),
        }
    }

    /// Every proper ancestor of `path` below the root, outermost first.
    pub fn ancestors(path: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(i) = path[at + 1..].find('/') {
            at += 1 + i;
            out.push(path[..at].to_string());
        }
        out
    }
}

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
