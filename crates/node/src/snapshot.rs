//! The snapshot of a host that scripts/memcgsim-snapshot writes: its cgroup v2 tree with each
//! group's control files and statistics as the kernel printed them (mm/memcontrol.c's
//! memory_stat_format(), memory.events, the limits), /proc/meminfo, /proc/vmstat, the vm
//! sysctls and the transparent huge page switches.
//!
//! Reading keeps the kernel's text and parses it on demand; a value that cannot be parsed is
//! an error naming the snapshot file, the group and the file.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The `format` field of a snapshot.
pub const FORMAT: &str = "memcgsim-snapshot";
/// The version this reader takes.
pub const VERSION: u32 = 1;

/// A whole snapshot.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    pub format: String,
    pub version: u32,
    /// /proc/sys/kernel/osrelease.
    #[serde(default)]
    pub kernel: Option<String>,
    pub cpus: u32,
    pub page_size: u64,
    /// The text of /proc/meminfo, /proc/vmstat and /proc/swaps.
    #[serde(default)]
    pub meminfo: Option<String>,
    #[serde(default)]
    pub vmstat: Option<String>,
    #[serde(default)]
    pub swaps: Option<String>,
    /// /proc/sys/vm/NAME → its text.
    #[serde(default)]
    pub sysctl_vm: BTreeMap<String, String>,
    /// /sys/kernel/mm/transparent_hugepage/NAME → its text.
    #[serde(default)]
    pub thp: BTreeMap<String, String>,
    /// The groups, the root ("/") first, parents before children.
    pub cgroups: Vec<Group>,
    /// Files that exist but could not be read.
    #[serde(default)]
    pub unreadable: Vec<Unreadable>,
}

/// One cgroup.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// "/" for the root, "/a/b" below it.
    pub path: String,
    /// Lines of cgroup.procs and cgroup.threads (None: not read).
    pub procs: Option<u64>,
    pub threads: Option<u64>,
    /// File name → its text.
    pub files: BTreeMap<String, String>,
}

/// A file the snapshot could not read.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unreadable {
    pub path: String,
    pub file: String,
    pub error: String,
}

/// A limit file's value: a number of bytes or `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Bytes(u64),
    Max,
}

impl Snapshot {
    /// Parse a snapshot's JSON; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Snapshot, String> {
        let s: Snapshot = serde_json::from_str(text).map_err(|e| {
            format!(
                "{file}:{}:{}: {}",
                e.line(),
                e.column(),
                e.to_string().split(" at line ").next().unwrap_or_default()
            )
        })?;
        if s.format != FORMAT {
            return Err(format!(
                "{file}: format: '{}' is not a memcgsim snapshot (want '{FORMAT}')",
                s.format
            ));
        }
        if s.version != VERSION {
            return Err(format!(
                "{file}: version: {} is not one this memcgsim reads (it reads {VERSION})",
                s.version
            ));
        }
        if s.page_size != memcgsim_model::PAGE_SIZE {
            return Err(format!(
                "{file}: page_size: {} bytes; the model has 4096-byte pages only",
                s.page_size
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, g) in s.cgroups.iter().enumerate() {
            let ok_path = g.path == "/"
                || (g.path.starts_with('/')
                    && !g.path.ends_with('/')
                    && g.path[1..]
                        .split('/')
                        .all(|c| !c.is_empty() && c != "." && c != ".."));
            if !ok_path {
                return Err(format!(
                    "{file}: cgroups[{i}].path: '{}' is not a cgroup path",
                    g.path
                ));
            }
            if (i == 0) != (g.path == "/") {
                return Err(format!(
                    "{file}: cgroups[{i}]: the root (\"/\") must come first, once"
                ));
            }
            if let Some(parent) = parent_of(&g.path) {
                if !seen.contains(parent) {
                    return Err(format!(
                        "{file}: cgroups[{i}]: '{}' comes before its parent '{parent}'",
                        g.path
                    ));
                }
            }
            if !seen.insert(g.path.as_str()) {
                return Err(format!("{file}: cgroups[{i}]: '{}' appears twice", g.path));
            }
        }
        if s.cgroups.is_empty() {
            return Err(format!("{file}: cgroups: empty (the root is missing)"));
        }
        Ok(s)
    }

    /// The value of a /proc/meminfo line, in bytes for the kB ones.
    pub fn meminfo(&self, key: &str) -> Option<u64> {
        self.meminfo.as_deref()?.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            if k.trim() != key {
                return None;
            }
            let mut w = v.split_whitespace();
            let n: u64 = w.next()?.parse().ok()?;
            Some(if w.next() == Some("kB") { n * 1024 } else { n })
        })
    }

    /// A vm sysctl's value, trimmed.
    pub fn sysctl(&self, name: &str) -> Option<&str> {
        self.sysctl_vm.get(name).map(|v| v.trim())
    }

    /// The current word of a THP switch (the one in brackets).
    pub fn thp_mode(&self, name: &str) -> Option<&str> {
        let t = self.thp.get(name)?;
        let start = t.find('[')?;
        let end = t[start..].find(']')?;
        Some(&t[start + 1..start + end])
    }

    /// The group at `path`.
    pub fn group(&self, path: &str) -> Option<&Group> {
        self.cgroups.iter().find(|g| g.path == path)
    }

    /// The direct children of `path`, in snapshot order.
    pub fn children<'a>(&'a self, path: &'a str) -> impl Iterator<Item = &'a Group> + 'a {
        self.cgroups
            .iter()
            .filter(move |g| parent_of(&g.path) == Some(path))
    }
}

/// The parent of a cgroup path (None for the root).
pub fn parent_of(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    let i = path.rfind('/')?;
    Some(if i == 0 { "/" } else { &path[..i] })
}

impl Group {
    /// A keyed file (memory.stat, memory.events): its `key value` lines.
    pub fn keyed(
        &self,
        file: &str,
        snap_file: &str,
    ) -> Result<Option<BTreeMap<String, u64>>, String> {
        let Some(text) = self.files.get(file) else {
            return Ok(None);
        };
        let mut m = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let mut w = line.split_whitespace();
            let (Some(k), Some(v), None) = (w.next(), w.next(), w.next()) else {
                return Err(format!(
                    "{snap_file}: cgroup {}: {file} line {}: '{line}' is not 'key value'",
                    self.path,
                    n + 1
                ));
            };
            let v = v.parse::<u64>().map_err(|_| {
                format!(
                    "{snap_file}: cgroup {}: {file}: {k}: '{v}' is not a number",
                    self.path
                )
            })?;
            m.insert(k.to_string(), v);
        }
        Ok(Some(m))
    }

    /// A single-number file (memory.current): its value.
    pub fn number(&self, file: &str, snap_file: &str) -> Result<Option<u64>, String> {
        let Some(text) = self.files.get(file) else {
            return Ok(None);
        };
        text.trim().parse::<u64>().map(Some).map_err(|_| {
            format!(
                "{snap_file}: cgroup {}: {file}: '{}' is not a number",
                self.path,
                text.trim()
            )
        })
    }

    /// A limit file (memory.max, memory.low, ...): bytes or `max`.
    pub fn limit(&self, file: &str, snap_file: &str) -> Result<Option<Limit>, String> {
        let Some(text) = self.files.get(file) else {
            return Ok(None);
        };
        let t = text.trim();
        if t == "max" {
            return Ok(Some(Limit::Max));
        }
        t.parse::<u64>()
            .map(|b| Some(Limit::Bytes(b)))
            .map_err(|_| {
                format!(
                    "{snap_file}: cgroup {}: {file}: '{t}' is neither a number nor max",
                    self.path
                )
            })
    }

    /// Whether the group enables the memory controller for its children.
    pub fn memory_delegated(&self) -> bool {
        self.files
            .get("cgroup.subtree_control")
            .is_some_and(|t| t.split_whitespace().any(|c| c == "memory"))
    }
}

/// The files scripts/memcgsim-snapshot keeps of each group, when the group has them.
pub const GROUP_FILES: [&str; 19] = [
    "cgroup.controllers",
    "cgroup.subtree_control",
    "cgroup.type",
    "memory.current",
    "memory.peak",
    "memory.min",
    "memory.low",
    "memory.high",
    "memory.max",
    "memory.oom.group",
    "memory.swap.current",
    "memory.swap.high",
    "memory.swap.max",
    "memory.zswap.current",
    "memory.zswap.max",
    "memory.stat",
    "memory.events",
    "memory.events.local",
    "memory.pressure",
];

/// A snapshot of a simulated machine, in the format scripts/memcgsim-snapshot gives a real
/// one: what the cgroupfs shows, read as the script reads it (a file the model does not
/// have is left out, as a missing file is).
pub fn take(sys: &mut memcgsim_cgroupfs::System) -> String {
    use serde_json::{json, Map, Value};
    let mut top = Map::new();
    top.insert("format".into(), json!(FORMAT));
    top.insert("version".into(), json!(VERSION));
    top.insert("kernel".into(), json!("memcgsim"));
    for f in ["meminfo", "vmstat", "swaps"] {
        if let Ok(t) = sys.read(&format!("/proc/{f}")) {
            top.insert(f.into(), json!(t));
        }
    }
    let mut vm = Map::new();
    for f in sys.list("/proc/sys/vm").unwrap_or_default() {
        if let Ok(t) = sys.read(&format!("/proc/sys/vm/{f}")) {
            vm.insert(f, json!(t));
        }
    }
    top.insert("sysctl_vm".into(), Value::Object(vm));
    let mut thp = Map::new();
    for f in ["enabled", "defrag", "shmem_enabled"] {
        if let Ok(t) = sys.read(&format!("/sys/kernel/mm/transparent_hugepage/{f}")) {
            thp.insert(f.into(), json!(t));
        }
    }
    top.insert("thp".into(), Value::Object(thp));
    top.insert("cpus".into(), json!(sys.machine.cfg.cpus));
    top.insert("page_size".into(), json!(memcgsim_model::PAGE_SIZE));
    // The groups, sorted by path as `find | sort` gives them.
    let mut paths = vec!["/".to_string()];
    let mut i = 0;
    while i < paths.len() {
        let p = paths[i].clone();
        for e in sys.list(&p).unwrap_or_default() {
            let child = if p == "/" {
                format!("/{e}")
            } else {
                format!("{p}/{e}")
            };
            if child != "/proc" && child != "/sys" && sys.is_dir(&child) {
                paths.push(child);
            }
        }
        i += 1;
    }
    paths[1..].sort();
    let mut groups = Vec::new();
    for p in paths {
        let at = |f: &str| {
            if p == "/" {
                format!("/{f}")
            } else {
                format!("{p}/{f}")
            }
        };
        let mut files = Map::new();
        for f in GROUP_FILES {
            if let Ok(t) = sys.read(&at(f)) {
                files.insert(f.into(), json!(t));
            }
        }
        let lines = |t: Option<String>| t.map(|t| t.lines().count());
        let procs = lines(sys.read(&at("cgroup.procs")).ok());
        let threads = lines(sys.read(&at("cgroup.threads")).ok());
        groups.push(json!({
            "path": p,
            "procs": procs,
            "threads": threads,
            "files": Value::Object(files),
        }));
    }
    top.insert("cgroups".into(), Value::Array(groups));
    top.insert("unreadable".into(), json!([]));
    let mut s = serde_json::to_string_pretty(&Value::Object(top)).expect("JSON of strings");
    s.push('\n');
    s
}
