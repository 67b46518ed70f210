//! `memcgsim import`: a snapshot (snapshot.rs) becomes a scenario (docs/SCENARIOS.md) that
//! rebuilds the host's cgroup v2 tree with its settings, on a machine of its size and vm
//! sysctls, and puts in each group stand-in workloads that hold what the group held:
//!
//! * anonymous memory: `anon SIZE --hold`, its transparent huge pages apart (`--madvise
//!   hugepage` for `anon_thp`, `nohugepage` for the rest), and its swapped pages written and
//!   then paged out (`--pageout`, MADV_PAGEOUT);
//! * page cache: a file read once for `inactive_file`, a file read twice for `active_file`
//!   (the second read activates it, mark_page_accessed());
//! * shmem: a tmpfs file on /dev/shm written by `dd`;
//! * kernel memory: negative dentries (`dcache N --hold`, 336 bytes of slab each).
//!
//! memory.stat is hierarchical, so a group's own share is its figures less its children's;
//! a group with children cannot hold tasks on cgroup v2, and its own share goes to a leaf
//! below it, `memcgsim-own`. Groups without the memory controller count in their parent,
//! whose figures hold them. Everything the scenario cannot carry is reported as a note:
//! unreadable files, files the model does not have, figures left out.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::snapshot::{parent_of, Group, Limit, Snapshot};

/// What `memcgsim import` is asked for.
#[derive(Clone, Debug)]
pub struct ImportOpts {
    /// The scenario's name.
    pub name: String,
    /// The snapshot's file name, for messages and the scenario's description.
    pub file: String,
}

/// A scenario and what it could not carry.
#[derive(Clone, Debug, Default)]
pub struct Imported {
    pub scenario: String,
    pub notes: Vec<String>,
    /// The groups made, with the memory.current and memory.stat the snapshot gives them.
    pub groups: Vec<Target>,
}

/// A group's figures in the snapshot, which the scenario's run should reproduce.
#[derive(Clone, Debug)]
pub struct Target {
    pub path: String,
    pub current: u64,
    pub stat: BTreeMap<String, u64>,
}

/// The smallest share a stand-in is made for: less is noise of the snapshot's moment.
const MIN_STANDIN: u64 = 256 << 10;
/// Bytes of slab a negative dentry of the `dcache` workload holds.
const DENTRY_BYTES: u64 = 336;
/// The vm sysctls carried over (as machine keys of the same name).
const SYSCTLS: [&str; 2] = ["swappiness", "watermark_scale_factor"];

/// The leaf that holds a parent's own share.
pub const OWN_LEAF: &str = "memcgsim-own";

/// The limit files carried over, with their defaults (a default is not written).
const LIMITS: [(&str, &str); 7] = [
    ("memory.min", "0"),
    ("memory.low", "0"),
    ("memory.high", "max"),
    ("memory.max", "max"),
    ("memory.swap.high", "max"),
    ("memory.swap.max", "max"),
    ("memory.oom.group", "0"),
];

/// The memory.stat figures a group's own share is made of.
#[derive(Clone, Copy, Debug, Default)]
struct Share {
    anon: u64,
    anon_thp: u64,
    active_file: u64,
    inactive_file: u64,
    shmem: u64,
    kernel: u64,
    swap: u64,
}

impl Share {
    fn of(stat: &BTreeMap<String, u64>, swap: u64) -> Share {
        let g = |k: &str| stat.get(k).copied().unwrap_or(0);
        Share {
            anon: g("anon"),
            anon_thp: g("anon_thp"),
            active_file: g("active_file"),
            inactive_file: g("inactive_file"),
            shmem: g("shmem"),
            kernel: g("kernel"),
            swap,
        }
    }

    fn minus(self, o: Share) -> Share {
        Share {
            anon: self.anon.saturating_sub(o.anon),
            anon_thp: self.anon_thp.saturating_sub(o.anon_thp),
            active_file: self.active_file.saturating_sub(o.active_file),
            inactive_file: self.inactive_file.saturating_sub(o.inactive_file),
            shmem: self.shmem.saturating_sub(o.shmem),
            kernel: self.kernel.saturating_sub(o.kernel),
            swap: self.swap.saturating_sub(o.swap),
        }
    }

    fn plus(self, o: Share) -> Share {
        Share {
            anon: self.anon + o.anon,
            anon_thp: self.anon_thp + o.anon_thp,
            active_file: self.active_file + o.active_file,
            inactive_file: self.inactive_file + o.inactive_file,
            shmem: self.shmem + o.shmem,
            kernel: self.kernel + o.kernel,
            swap: self.swap + o.swap,
        }
    }
}

/// A TOML string.
fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A size for a workload argument: whole KiB, rounded up.
fn kib(bytes: u64) -> String {
    format!("{}K", bytes.div_ceil(1024))
}

/// Turn a snapshot into a scenario.
pub fn import(snap: &Snapshot, opts: &ImportOpts) -> Result<Imported, String> {
    let file = opts.file.as_str();
    let mut notes = Vec::new();
    let mut s = String::new();
    let kernel = snap.kernel.as_deref().unwrap_or("an unknown kernel");
    let _ = writeln!(
        s,
        "# Imported by `memcgsim import` from {file}, a snapshot of {kernel}.\n\
         # Each group holds stand-in workloads for what it held (docs/NODES.md)."
    );
    let _ = writeln!(s, "name = {}", q(&opts.name));
    let _ = writeln!(
        s,
        "description = {}\n",
        q(&format!("the cgroup tree of {file} ({kernel})"))
    );

    // The machine.
    let mem_total = snap
        .meminfo("MemTotal")
        .ok_or_else(|| format!("{file}: meminfo: no MemTotal line"))?;
    let swap_total = snap.meminfo("SwapTotal").unwrap_or(0);
    let page = memcgsim_model::PAGE_SIZE;
    let _ = writeln!(s, "[machine]");
    let _ = writeln!(s, "memory = {}", q(&kib(mem_total - mem_total % page)));
    let _ = writeln!(
        s,
        "# MemTotal as the snapshot's: the kernel's boot reservations are outside it."
    );
    let _ = writeln!(s, "reserved = \"0\"");
    let _ = writeln!(s, "swap = {}", q(&kib(swap_total - swap_total % page)));
    let _ = writeln!(s, "cpus = {}", snap.cpus.max(1));
    for key in SYSCTLS {
        if let Some(v) = snap.sysctl(key) {
            if v.parse::<u64>().is_ok() {
                let _ = writeln!(s, "{key} = {v}");
            }
        }
    }
    for (name, key) in [
        ("enabled", "thp"),
        ("defrag", "thp_defrag"),
        ("shmem_enabled", "shmem_thp"),
    ] {
        match snap.thp_mode(name) {
            Some(m) => {
                let _ = writeln!(s, "{key} = {}", q(m));
            }
            None => notes.push(format!(
                "transparent_hugepage/{name} was not read: the model's default stands"
            )),
        }
    }
    s.push('\n');

    // The files the import reads that the host would not give (write-only sysctls such as
    // drop_caches are unreadable by design and not used).
    for u in &snap.unreadable {
        let used = u.path.starts_with('/') && !u.path.starts_with("/proc/sys/vm")
            || (u.path == "/proc/sys/vm" && SYSCTLS.contains(&u.file.as_str()))
            || u.path == "/sys/kernel/mm/transparent_hugepage";
        if used {
            notes.push(format!(
                "{} {} could not be read on the host ({}): left out",
                u.path, u.file, u.error
            ));
        }
    }

    // The groups with the memory controller (a root's child has it when the root delegates
    // it, and so on down).
    let root = &snap.cgroups[0];
    let mut memcg: BTreeMap<&str, &Group> = BTreeMap::new();
    let mut merged = 0u64;
    for g in &snap.cgroups[1..] {
        let parent = parent_of(&g.path).unwrap_or("/");
        let parent_has = if parent == "/" {
            root.memory_delegated()
        } else {
            memcg.get(parent).is_some_and(|p| p.memory_delegated())
        };
        if parent_has && g.files.contains_key("memory.current") {
            memcg.insert(g.path.as_str(), g);
        } else {
            merged += 1;
        }
    }
    if merged > 0 {
        notes.push(format!(
            "{merged} groups without the memory controller: their memory counts in the nearest parent that has it"
        ));
    }
    for g in snap.cgroups.iter() {
        for f in g.files.keys() {
            if !crate::snapshot::GROUP_FILES.contains(&f.as_str()) {
                notes.push(format!(
                    "{} {f}: not a file the import knows; left out",
                    g.path
                ));
            }
        }
    }

    // Each group's figures, and its own share (its figures less its memory children's).
    let mut shares: BTreeMap<&str, Share> = BTreeMap::new();
    let mut targets = Vec::new();
    for (&path, g) in &memcg {
        let stat = g
            .keyed("memory.stat", file)?
            .ok_or_else(|| format!("{file}: cgroup {path}: memory.current without memory.stat"))?;
        let swap = g.number("memory.swap.current", file)?.unwrap_or(0);
        let current = g
            .number("memory.current", file)?
            .expect("a memory group has memory.current");
        shares.insert(path, Share::of(&stat, swap));
        targets.push(Target {
            path: path.to_string(),
            current,
            stat,
        });
    }
    let mut own: BTreeMap<&str, Share> = BTreeMap::new();
    for (&path, &total) in &shares {
        let children = memcg
            .keys()
            .filter(|c| parent_of(c) == Some(path))
            .map(|c| shares[c])
            .fold(Share::default(), Share::plus);
        own.insert(path, total.minus(children));
    }

    // The tree, parents first, with its settings.
    if root.memory_delegated() && !memcg.is_empty() {
        let _ = writeln!(s, "[[cgroup]]\npath = \"/\"");
        let _ = writeln!(
            s,
            "files = {{ \"cgroup.subtree_control\" = \"+memory\" }}\n"
        );
    }
    let has_children = |path: &str| memcg.keys().any(|c| parent_of(c) == Some(path));
    // (group number, where its stand-ins run, the stand-ins, bytes to swap out there)
    let mut placed: Vec<(usize, String, Vec<Standin>, u64)> = Vec::new();
    for (i, (&path, g)) in memcg.iter().enumerate() {
        let mut files: Vec<(String, String)> = Vec::new();
        for (f, default) in LIMITS {
            if let Some(v) = g.files.get(f) {
                let v = v.trim();
                if v != default {
                    if f != "memory.oom.group" {
                        // Checked: a number or max.
                        let _ = g.limit(f, file)?;
                    }
                    files.push((f.to_string(), v.to_string()));
                }
            }
        }
        if let Some(Limit::Bytes(_)) = g.limit("memory.zswap.max", file)? {
            notes.push(format!(
                "{path} memory.zswap.max: zswap is not modelled; the limit is left out"
            ));
        }
        let kids = has_children(path);
        let sh = own[path];
        let standin = standins(&sh);
        let swap = if sh.swap >= MIN_STANDIN { sh.swap } else { 0 };
        let own_leaf = kids && (!standin.is_empty() || swap > 0);
        if kids || g.memory_delegated() {
            files.push(("cgroup.subtree_control".into(), "+memory".into()));
        }
        let procs = match g.procs {
            Some(1) => " (1 process on the host)".to_string(),
            Some(p) => format!(" ({p} processes on the host)"),
            None => String::new(),
        };
        let _ = writeln!(s, "# {path}{procs}");
        let _ = writeln!(s, "[[cgroup]]\npath = {}", q(path));
        if !files.is_empty() {
            let body: Vec<String> = files
                .iter()
                .map(|(k, v)| format!("{} = {}", q(k), q(v)))
                .collect();
            let _ = writeln!(s, "files = {{ {} }}", body.join(", "));
        }
        s.push('\n');
        let at = if own_leaf {
            let leaf = format!("{path}/{OWN_LEAF}");
            let _ = writeln!(s, "[[cgroup]]\npath = {}\n", q(&leaf));
            leaf
        } else {
            path.to_string()
        };
        if sh.shmem > 0 && sh.shmem < MIN_STANDIN {
            notes.push(format!(
                "{path}: {} of shmem, too little to stand in for",
                kib(sh.shmem)
            ));
        }
        placed.push((i + 1, at, standin, swap));
    }
    // Swapped memory: anonymous memory written first, alone in its group, then reclaimed
    // to swap by memory.reclaim; the other stand-ins start once that is done. The times
    // allow 2 us per page written and 10 us per page reclaimed, twice over.
    let swap_pages: u64 = placed.iter().map(|p| p.3 / page).sum();
    let (reclaim_at, others_at) = if swap_pages > 0 {
        let cpus = u64::from(snap.cpus.max(1));
        let t1 = 1 + (swap_pages * 4).div_ceil(cpus * 1_000_000);
        (t1, t1 + 1 + (swap_pages * 20).div_ceil(1_000_000))
    } else {
        (0, 0)
    };
    let mut tasks = String::new();
    let mut writes = String::new();
    for (n, at, standin, swap) in &placed {
        if *swap > 0 {
            let _ = writeln!(
                tasks,
                "[[task]]\nname = {}\ncgroup = {}\nworkload = \"anon\"",
                q(&format!("g{n}.swapped")),
                q(at)
            );
            let _ = writeln!(
                tasks,
                "args = [{}, \"--madvise\", \"nohugepage\", \"--hold\"]\n",
                q(&kib(*swap))
            );
            let _ = writeln!(
                writes,
                "[[write]]\nat = \"{reclaim_at}s\"\ncgroup = {}\nfile = \"memory.reclaim\"\nvalue = {}\n",
                q(at),
                q(&kib(*swap))
            );
        }
        for w in standin {
            let _ = writeln!(
                tasks,
                "[[task]]\nname = {}\ncgroup = {}",
                q(&format!("g{n}.{}", w.kind)),
                q(at)
            );
            let _ = writeln!(tasks, "workload = {}", q(w.workload));
            let args: Vec<String> = w
                .args
                .iter()
                .map(|a| q(&a.replace("{group}", &format!("g{n}"))))
                .collect();
            let _ = writeln!(tasks, "args = [{}]", args.join(", "));
            if w.repeat > 1 {
                let _ = writeln!(tasks, "repeat = {}", w.repeat);
            }
            if others_at > 0 {
                let _ = writeln!(tasks, "start = \"{others_at}s\"");
            }
            tasks.push('\n');
        }
    }
    let n_task = placed
        .iter()
        .map(|p| p.2.len() + usize::from(p.3 > 0))
        .sum::<usize>();
    s.push_str(&tasks);
    s.push_str(&writes);
    let _ = writeln!(s, "[run]\nduration = \"10m\"\nsample = \"1s\"");
    let _ = writeln!(
        s,
        "stats = [\"anon\", \"file\", \"shmem\", \"kernel\", \"active_file\", \"inactive_file\", \"anon_thp\"]"
    );
    if n_task == 0 {
        notes.push("no group held enough memory for a stand-in workload".into());
    }
    Ok(Imported {
        scenario: s,
        notes,
        groups: targets,
    })
}

/// A stand-in workload.
struct Standin {
    kind: &'static str,
    workload: &'static str,
    args: Vec<String>,
    repeat: u32,
}

/// The stand-ins for a group's own share.
fn standins(sh: &Share) -> Vec<Standin> {
    let mut v = Vec::new();
    let huge = sh.anon_thp.min(sh.anon);
    let small = sh.anon - huge;
    if huge >= MIN_STANDIN {
        v.push(Standin {
            kind: "anon-thp",
            workload: "anon",
            args: vec![
                kib(huge),
                "--madvise".into(),
                "hugepage".into(),
                "--hold".into(),
            ],
            repeat: 1,
        });
    }
    if small >= MIN_STANDIN {
        v.push(Standin {
            kind: "anon",
            workload: "anon",
            args: vec![
                kib(small),
                "--madvise".into(),
                "nohugepage".into(),
                "--hold".into(),
            ],
            repeat: 1,
        });
    }
    if sh.inactive_file >= MIN_STANDIN {
        v.push(Standin {
            kind: "inactive-file",
            workload: "cat",
            args: vec![
                "--file".into(),
                "{group}.inactive".into(),
                kib(sh.inactive_file),
            ],
            repeat: 1,
        });
    }
    if sh.active_file >= MIN_STANDIN {
        v.push(Standin {
            kind: "active-file",
            workload: "cat",
            args: vec![
                "--file".into(),
                "{group}.active".into(),
                kib(sh.active_file),
            ],
            repeat: 2,
        });
    }
    if sh.shmem >= MIN_STANDIN {
        v.push(Standin {
            kind: "shmem",
            workload: "dd",
            args: vec![
                kib(sh.shmem),
                "--file".into(),
                "/dev/shm/{group}.shmem".into(),
            ],
            repeat: 1,
        });
    }
    if sh.kernel >= MIN_STANDIN {
        v.push(Standin {
            kind: "kernel",
            workload: "dcache",
            args: vec![
                (sh.kernel / DENTRY_BYTES).clamp(1, 100_000_000).to_string(),
                "--hold".into(),
            ],
            repeat: 1,
        });
    }
    v
}
