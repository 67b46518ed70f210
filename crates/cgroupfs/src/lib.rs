//! The virtual cgroupfs: cgroup v2 (default) and v1 memory-controller files, cgroup core
//! files, /proc files (meminfo, vmstat, sys/vm) and /sys/kernel/mm files over a
//! [`memcgsim_model::Machine`].
//!
//! This layer owns the cgroup tree (directories). A cgroup has its own memcg when the memory
//! controller is enabled for it: always in v1, and in v2 when its parent has `memory` in
//! cgroup.subtree_control. Tasks are charged to the nearest cgroup (self or ancestor) with a
//! memcg. Read formats, parse rules (page_counter_memparse) and errnos follow
//! mm/memcontrol.c, mm/memcontrol-v1.c and kernel/cgroup/cgroup.c of Linux 6.1, plus the
//! writable memory.peak / memory.swap.peak of newer kernels.

mod lru_gen;
mod parse;
mod proc;
mod stat;
mod sysfs;
mod task_list;
mod v1;
mod v2;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use memcgsim_model::{CgroupVersion, Machine, MemcgId, ROOT_MEMCG};
pub use memcgsim_model::{Errno, MachineConfig, Pid, Program, TaskOutcome};
pub use parse::{memparse, page_counter_memparse};

/// The size of the buffer a path is copied into, its NUL included (PATH_MAX of
/// include/uapi/linux/limits.h): getname() refuses a longer path with ENAMETOOLONG. kernfs,
/// and so cgroupfs, sets no limit of its own on one name: Linux 6.1 takes a 4000-byte cgroup
/// name (checked with the oracle).
pub const PATH_MAX: usize = 4096;

/// psi_write()'s buffer: a /proc/pressure write is cut to this many bytes.
const PSI_WRITE_MAX: usize = 32;

/// An open file description on a cgroupfs file (needed for memory.peak's per-fd reset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fd(pub u32);

/// Options for starting a task.
#[derive(Clone, Debug, Default)]
pub struct SpawnOpts {
    /// Task name (as `ps` would show `comm`); defaults to the workload name.
    pub name: Option<String>,
    /// /proc/PID/oom_score_adj, -1000..=1000.
    pub oom_score_adj: i32,
}

/// What `wait` observed about a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// The task has ended (exited or killed).
    Ended(TaskOutcome),
    /// The task finished its work and is holding its memory (`--hold`), alive.
    Holding,
    /// The interrupt flag was raised (see [`System::set_interrupt`]) before either; the
    /// machine stopped between two events, the task is as it was.
    Interrupted,
}

/// How a task ended, for reports: its outcome, who killed it and when it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskEnd {
    pub outcome: TaskOutcome,
    /// Killed by the OOM killer: the cgroup whose limit was hit, or None for a global
    /// (machine-wide) OOM. Not set when the task died otherwise.
    pub oom: Option<Option<String>>,
    /// Virtual time from start to end, in nanoseconds.
    pub elapsed_ns: u64,
    /// The failed system call the program reported before it exited (the overcommit check
    /// refusing a mapping, say); None when it ended otherwise.
    pub error: Option<memcgsim_model::SyscallError>,
}

/// One cgroup directory.
#[derive(Clone, Debug)]
pub(crate) struct Cgroup {
    pub name: String,
    pub parent: Option<usize>,
    pub children: BTreeMap<String, usize>,
    /// Its own memcg (memory controller enabled for this cgroup).
    pub memcg: Option<MemcgId>,
    /// v2: `memory` is in cgroup.subtree_control.
    pub subtree_memory: bool,
    /// Tasks attached to this cgroup, in attach order.
    pub tasks: task_list::TaskList,
    /// cgroup.freeze as written (the subtree is frozen if this or an ancestor's is set).
    pub freeze: bool,
    /// cgroup.max.depth and cgroup.max.descendants (i32::MAX is "max").
    pub max_depth: i32,
    pub max_descendants: i32,
    /// v2: made threaded by writing "threaded" to cgroup.type (never undone).
    pub threaded: bool,
    /// Its pressure group (v2; on v1 every task counts in the system's only).
    pub psi: memcgsim_model::psi::PsiId,
}

/// Which counter a peak file watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PeakKind {
    Memory,
    Swap,
}

#[derive(Clone, Debug)]
struct OpenFile {
    path: String,
    cg: usize,
    file: String,
    /// The fd's memory.peak view: None until written.
    peak: Option<u64>,
    /// The PSI trigger written through this fd (one at most), until the fd is closed or its
    /// cgroup removed.
    trigger: Option<memcgsim_model::psi::TriggerId>,
}

/// What a `poll()` for POLLPRI on a pressure file's fd returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollResult {
    /// EPOLLPRI: the trigger signalled an event (now consumed).
    Event,
    /// The timeout passed first.
    Timeout,
    /// EPOLLERR | EPOLLPRI at once: the fd holds no trigger, or its cgroup was removed.
    Error,
    /// The interrupt flag was raised first.
    Interrupted,
}

/// The simulated system: one machine and its cgroup filesystem.
pub struct System {
    pub machine: Machine,
    pub(crate) cgroups: Vec<Option<Cgroup>>,
    fds: BTreeMap<u32, OpenFile>,
    next_fd: u32,
    /// Task -> cgroup index, and its attach sequence number on that cgroup's task list.
    task_cg: BTreeMap<Pid, (usize, u64)>,
    /// Raised from outside (a signal handler) to stop `wait` and `advance` between events.
    interrupt: Option<Arc<AtomicBool>>,
    /// Attaches so far: the next attach's sequence number on its cgroup's task list.
    attach_seq: u64,
}

/// A resolved path.
pub(crate) enum Node {
    Dir(usize),
    File(usize, String),
    ProcDir,
    ProcFile(String),
}

impl System {
    /// Boot a machine. Errors name what is wrong with the configuration.
    pub fn new(cfg: MachineConfig) -> Result<System, String> {
        let v2 = cfg.cgroup == CgroupVersion::V2;
        let root_mem = cfg.root_memory_enabled && v2;
        let machine = Machine::new(cfg)?;
        Ok(System {
            machine,
            cgroups: vec![Some(Cgroup {
                name: String::new(),
                parent: None,
                children: BTreeMap::new(),
                memcg: Some(ROOT_MEMCG),
                subtree_memory: root_mem,
                tasks: Default::default(),
                freeze: false,
                max_depth: i32::MAX,
                max_descendants: i32::MAX,
                threaded: false,
                psi: memcgsim_model::psi::PSI_SYSTEM,
            })],
            fds: BTreeMap::new(),
            next_fd: 3,
            task_cg: BTreeMap::new(),
            interrupt: None,
            attach_seq: 0,
        })
    }

    pub fn is_v1(&self) -> bool {
        self.machine.is_v1()
    }

    /// Turn on the full invariant check after every simulation step (used by the tests).
    pub fn set_check_invariants(&mut self, on: bool) {
        self.machine.check_invariants = on;
        self.machine.check_now();
    }

    /// Check after every `every`-th step only (at least 1), when checks are on.
    pub fn set_check_interval(&mut self, every: u32) {
        self.machine.check_every = every.max(1);
    }

    /// Run the full invariant check now, if checks are on, whatever the interval.
    pub fn check_now(&mut self) {
        self.machine.check_now();
    }

    /// Current virtual time in nanoseconds.
    pub fn now_ns(&self) -> u64 {
        self.machine.sched.clock
    }

    pub(crate) fn cg(&self, i: usize) -> &Cgroup {
        self.cgroups[i].as_ref().expect("live cgroup")
    }

    pub(crate) fn cg_mut(&mut self, i: usize) -> &mut Cgroup {
        self.cgroups[i].as_mut().expect("live cgroup")
    }

    /// The memcg a cgroup's tasks are charged to.
    pub(crate) fn effective_memcg(&self, mut i: usize) -> MemcgId {
        loop {
            let c = self.cg(i);
            if let Some(m) = c.memcg {
                return m;
            }
            i = c.parent.expect("root has a memcg");
        }
    }

    fn split(path: &str) -> Result<Vec<&str>, Errno> {
        if path.len() >= PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if !path.starts_with('/') {
            return Err(Errno::ENOENT);
        }
        Ok(path
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect())
    }

    /// Resolve an absolute path.
    pub(crate) fn resolve(&self, path: &str) -> Result<Node, Errno> {
        let parts = Self::split(path)?;
        // /proc and /sys: their files are pseudo-files keyed by their path below the mount
        // (a /sys key keeps its prefix, so that no key is both).
        let pseudo = match parts.first() {
            Some(&"proc") => Some((proc::proc_files(), proc::proc_dirs(), "")),
            Some(&"sys") => Some((sysfs::files(), sysfs::dirs(), sysfs::KEY)),
            _ => None,
        };
        if let Some((files, dirs, key)) = pseudo {
            let rest = parts[1..].join("/");
            return if parts.len() == 1 || dirs.contains(&rest.as_str()) {
                Ok(Node::ProcDir)
            } else if files.contains(&rest.as_str()) {
                Ok(Node::ProcFile(format!("{key}{rest}")))
            } else {
                Err(Errno::ENOENT)
            };
        }
        let mut cur = 0usize;
        for (k, part) in parts.iter().enumerate() {
            if *part == ".." {
                cur = self.cg(cur).parent.unwrap_or(0);
                continue;
            }
            if let Some(&c) = self.cg(cur).children.get(*part) {
                cur = c;
                continue;
            }
            if k == parts.len() - 1 && self.files(cur).contains(&part.to_string()) {
                return Ok(Node::File(cur, part.to_string()));
            }
            if k < parts.len() - 1 && self.files(cur).contains(&part.to_string()) {
                return Err(Errno::ENOTDIR);
            }
            return Err(Errno::ENOENT);
        }
        Ok(Node::Dir(cur))
    }

    /// Files present in a cgroup directory.
    pub(crate) fn files(&self, i: usize) -> Vec<String> {
        if self.is_v1() {
            v1::files(self, i)
        } else {
            v2::files(self, i)
        }
    }

    /// Create a cgroup directory. `path` is absolute within the cgroupfs, e.g. "/A/B".
    ///
    /// As Linux refuses it: a path of [`PATH_MAX`] bytes or more is ENAMETOOLONG (the model's
    /// cgroupfs is mounted at `/`, Linux's usually at /sys/fs/cgroup, 14 bytes longer); a
    /// missing parent is ENOENT and a file on the way ENOTDIR; an existing entry (a cgroup, a
    /// control file, `..`, /proc, /sys and what is in them) EEXIST; a new name in a directory of
    /// /proc ENOENT, as procfs's lookup answers before mkdir is tried. As cgroup_mkdir(): a
    /// NUL, which no C string can hold, or a newline, which would make /proc/PID/cgroup
    /// unparsable, is EINVAL.
    pub fn mkdir(&mut self, path: &str) -> Result<(), Errno> {
        let parts = Self::split(path)?;
        let Some((name, parent_parts)) = parts.split_last() else {
            return Err(Errno::EEXIST);
        };
        let parent_path = format!("/{}", parent_parts.join("/"));
        let parent = self.resolve(&parent_path)?;
        if *name == ".." || self.resolve(path).is_ok() {
            return Err(Errno::EEXIST);
        }
        let parent = match parent {
            Node::Dir(p) => p,
            Node::File(..) | Node::ProcFile(_) => return Err(Errno::ENOTDIR),
            Node::ProcDir => return Err(Errno::ENOENT),
        };
        if name.contains(['\0', '\n']) {
            return Err(Errno::EINVAL);
        }
        if self.cg(parent).children.contains_key(*name)
            || self.files(parent).contains(&name.to_string())
        {
            return Err(Errno::EEXIST);
        }
        if !self.hierarchy_limits_allow(parent) {
            return Err(Errno::EAGAIN);
        }
        let memcg = if self.is_v1() || self.cg(parent).subtree_memory {
            let pm = self.effective_memcg(parent);
            Some(self.machine.memcg_create(pm)?)
        } else {
            None
        };
        // psi_cgroup_alloc(): every cgroup of the v2 hierarchy has its pressure group.
        let psi = if self.is_v1() {
            memcgsim_model::psi::PSI_SYSTEM
        } else {
            let pp = self.cg(parent).psi;
            self.machine.psi_group_create(pp)
        };
        let idx = self.cgroups.len();
        self.cgroups.push(Some(Cgroup {
            name: name.to_string(),
            parent: Some(parent),
            children: BTreeMap::new(),
            memcg,
            subtree_memory: false,
            tasks: Default::default(),
            freeze: false,
            max_depth: i32::MAX,
            max_descendants: i32::MAX,
            threaded: false,
            psi,
        }));
        self.cg_mut(parent).children.insert(name.to_string(), idx);
        self.machine.after_step_check();
        Ok(())
    }

    /// Remove a cgroup directory (EBUSY if it has tasks or children).
    pub fn rmdir(&mut self, path: &str) -> Result<(), Errno> {
        let i = match self.resolve(path)? {
            Node::Dir(i) => i,
            Node::File(..) | Node::ProcFile(_) => return Err(Errno::ENOTDIR),
            Node::ProcDir => return Err(Errno::EPERM),
        };
        if i == 0 {
            return Err(Errno::EBUSY);
        }
        let c = self.cg(i);
        if !c.children.is_empty() || !c.tasks.is_empty() {
            return Err(Errno::EBUSY);
        }
        let (memcg, parent, name) = (c.memcg, c.parent.expect("non-root"), c.name.clone());
        // kernfs drains the removed files: their triggers are released, the fds stay open
        // (reads give ENODEV, a poll EPOLLERR).
        let triggers: Vec<_> = self
            .fds
            .values_mut()
            .filter(|f| f.cg == i)
            .filter_map(|f| f.trigger.take())
            .collect();
        for t in triggers {
            self.machine.psi_trigger_destroy(t);
        }
        if !self.is_v1() {
            let psi = self.cg(i).psi;
            self.machine.psi_group_destroy(psi);
        }
        if let Some(m) = memcg {
            self.machine.memcg_offline(m)?;
            // A group with nothing charged is freed at once; others stay dying.
            self.machine.release_dying_memcgs();
        }
        self.cg_mut(parent).children.remove(&name);
        self.cgroups[i] = None;
        self.machine.after_step_check();
        Ok(())
    }

    /// mount -t tmpfs -o size=SIZE,huge=HUGE tmpfs DIR, or with `remount` a new size or
    /// huge option for the tmpfs at DIR (size None: the default, half of RAM, or on a
    /// remount the size it has; 0: no limit).
    pub fn mount_tmpfs(
        &mut self,
        dir: &str,
        opts: &memcgsim_model::shmem::TmpfsOptions,
    ) -> Result<(), Errno> {
        let size = opts.size.map(|s| s.pages(self.machine.totalram_pages));
        let r = if opts.bad.is_some() {
            // shmem_parse_one(): a value it cannot take.
            Err(Errno::EINVAL)
        } else if opts.remount {
            self.machine.tmpfs_remount(dir, size, opts.huge)
        } else {
            self.machine.tmpfs_mount(dir, size, opts.huge)
        };
        self.machine.after_step_check();
        r
    }

    /// umount DIR (a tmpfs): its files go with their pages and swap.
    pub fn umount(&mut self, dir: &str) -> Result<(), Errno> {
        let r = self.machine.tmpfs_umount(dir);
        self.machine.after_step_check();
        r
    }

    /// rm FILE: unlink a file of the simulated machine's filesystems (not of cgroupfs).
    pub fn unlink(&mut self, name: &str) -> Result<(), Errno> {
        let r = self.machine.unlink(name);
        self.machine.after_step_check();
        r
    }

    /// Whether `path` names a directory (a cgroup, a directory of /proc or /sys, or "/").
    pub fn is_dir(&self, path: &str) -> bool {
        matches!(self.resolve(path), Ok(Node::Dir(_)) | Ok(Node::ProcDir))
    }

    /// Entries of a directory, sorted: child cgroups and files.
    pub fn list(&self, path: &str) -> Result<Vec<String>, Errno> {
        match self.resolve(path)? {
            Node::Dir(i) => {
                let mut v: Vec<String> = self.cg(i).children.keys().cloned().collect();
                v.extend(self.files(i));
                if i == 0 {
                    v.push("proc".to_string());
                    v.push("sys".to_string());
                }
                v.sort();
                Ok(v)
            }
            Node::ProcDir => {
                let parts = Self::split(path)?;
                let prefix = parts[1..].join("/");
                let (files, dirs) = if parts[0] == "sys" {
                    (sysfs::files(), sysfs::dirs())
                } else {
                    (proc::proc_files(), proc::proc_dirs())
                };
                let mut v: Vec<String> = files
                    .iter()
                    .chain(dirs.iter())
                    .filter_map(|f| {
                        let rest = if prefix.is_empty() {
                            Some(*f)
                        } else {
                            f.strip_prefix(&format!("{prefix}/"))
                        }?;
                        Some(rest.split('/').next().unwrap_or(rest).to_string())
                    })
                    .collect();
                v.sort();
                v.dedup();
                Ok(v)
            }
            Node::File(..) | Node::ProcFile(_) => Err(Errno::ENOTDIR),
        }
    }

    /// Read a whole file, exactly as the kernel prints it (with trailing newline).
    pub fn read(&mut self, path: &str) -> Result<String, Errno> {
        match self.resolve(path)? {
            Node::Dir(_) | Node::ProcDir => Err(Errno::EISDIR),
            Node::ProcFile(f) => proc::read(self, &f),
            Node::File(i, f) => self.read_file(i, &f, None),
        }
    }

    fn read_file(&mut self, i: usize, f: &str, peak: Option<Option<u64>>) -> Result<String, Errno> {
        // Groups emptied outside an event (by a control-file write) are freed before anyone
        // looks.
        self.machine.release_dying_memcgs();
        if let Some(s) = self.read_core(i, f)? {
            return Ok(s);
        }
        if self.is_v1() {
            v1::read(self, i, f)
        } else {
            v2::read(self, i, f, peak)
        }
    }

    /// Write to a file (open, write, close), as `echo VALUE > FILE` does.
    pub fn write(&mut self, path: &str, data: &str) -> Result<(), Errno> {
        let fd = self.open(path)?;
        let r = self.write_fd(fd, data);
        let _ = self.close(fd);
        r
    }

    /// Open a file for reading and writing.
    pub fn open(&mut self, path: &str) -> Result<Fd, Errno> {
        let (cg, file) = match self.resolve(path)? {
            Node::Dir(_) | Node::ProcDir => return Err(Errno::EISDIR),
            Node::ProcFile(f) => (usize::MAX, f),
            Node::File(i, f) => (i, f),
        };
        let fd = self.next_fd;
        self.next_fd += 1;
        self.fds.insert(
            fd,
            OpenFile {
                path: path.to_string(),
                cg,
                file,
                peak: None,
                trigger: None,
            },
        );
        Ok(Fd(fd))
    }

    /// Read a whole file through an open fd.
    pub fn read_fd(&mut self, fd: Fd) -> Result<String, Errno> {
        let of = self.fds.get(&fd.0).ok_or(Errno::EBADF)?.clone();
        if of.cg == usize::MAX {
            return proc::read(self, &of.file);
        }
        if self.cgroups.get(of.cg).map(|c| c.is_none()).unwrap_or(true) {
            return Err(Errno::ENODEV);
        }
        self.read_file(of.cg, &of.file, Some(of.peak))
    }

    /// Write through an open fd. A cgroup file takes at most a page in one write
    /// (kernfs's atomic_write_len for every cgroup file): longer is E2BIG.
    pub fn write_fd(&mut self, fd: Fd, data: &str) -> Result<(), Errno> {
        let began = self.machine.begin_external_write();
        let r = self.write_fd_inner(fd, data);
        self.machine.end_external_write(began);
        r
    }

    fn write_fd_inner(&mut self, fd: Fd, data: &str) -> Result<(), Errno> {
        let of = self.fds.get(&fd.0).ok_or(Errno::EBADF)?.clone();
        if let Some(res) = pressure_resource(&of.file, of.cg == usize::MAX) {
            return self.trigger_write(fd, &of, res, data);
        }
        if of.cg == usize::MAX {
            return proc::write(self, &of.file, data);
        }
        if data.len() as u64 > memcgsim_model::PAGE_SIZE {
            return Err(Errno::E2BIG);
        }
        if self.cgroups.get(of.cg).map(|c| c.is_none()).unwrap_or(true) {
            return Err(Errno::ENODEV);
        }
        let _ = &of.path;
        if let Some(kind) = v2::peak_kind(&of.file) {
            if !self.is_v1() {
                return self.peak_write(fd, of.cg, kind);
            }
        }
        if self.write_core(of.cg, &of.file, data)? {
            return Ok(());
        }
        let r = if self.is_v1() {
            v1::write(self, of.cg, &of.file, data)
        } else {
            v2::write(self, of.cg, &of.file, data)
        };
        self.machine.after_step_check();
        r
    }

    /// Close an open fd (releasing the PSI trigger it holds).
    pub fn close(&mut self, fd: Fd) -> Result<(), Errno> {
        let of = self.fds.remove(&fd.0).ok_or(Errno::EBADF)?;
        if let Some(t) = of.trigger {
            self.machine.psi_trigger_destroy(t);
        }
        Ok(())
    }

    /// A write to a pressure file creates the fd's trigger: cgroup_pressure_write() (the
    /// cgroup must be alive, ENODEV) and psi_write() for /proc/pressure, which refuses an
    /// empty write (EINVAL), copies at most 32 bytes and drops the last byte it copied
    /// (meant for the newline of `echo`; the data written here is VALUE alone, as with
    /// `echo -n`). One trigger per fd, else EBUSY.
    fn trigger_write(
        &mut self,
        fd: Fd,
        of: &OpenFile,
        res: memcgsim_model::psi::Resource,
        data: &str,
    ) -> Result<(), Errno> {
        let (group, text) = if of.cg == usize::MAX {
            if data.is_empty() {
                return Err(Errno::EINVAL);
            }
            let mut end = data.len().min(PSI_WRITE_MAX) - 1;
            while !data.is_char_boundary(end) {
                end -= 1;
            }
            (memcgsim_model::psi::PSI_SYSTEM, &data[..end])
        } else {
            if data.len() as u64 > memcgsim_model::PAGE_SIZE {
                return Err(Errno::E2BIG);
            }
            match self.cgroups.get(of.cg) {
                Some(Some(c)) => (c.psi, data),
                _ => return Err(Errno::ENODEV),
            }
        };
        if of.trigger.is_some() {
            return Err(Errno::EBUSY);
        }
        let t = self.machine.psi_trigger_create(group, res, text)?;
        self.fds.get_mut(&fd.0).expect("open fd").trigger = Some(t);
        Ok(())
    }

    /// poll() for POLLPRI on an open pressure file: run the simulation until the fd's
    /// trigger signals an event, for at most `timeout_ns` of virtual time. The event is seen
    /// when the poll work that signals it runs. Err(EBADF) for an fd that is not open,
    /// Err(EINVAL) for a file other than a pressure file (whose poll is not modelled).
    pub fn poll(&mut self, fd: Fd, timeout_ns: u64) -> Result<PollResult, Errno> {
        let of = self.fds.get(&fd.0).ok_or(Errno::EBADF)?;
        if pressure_resource(&of.file, of.cg == usize::MAX).is_none() {
            return Err(Errno::EINVAL);
        }
        let until = self.machine.sched.clock.saturating_add(timeout_ns);
        let flag = self.interrupt.clone();
        // Each step runs the machine to its next event or the next poll work, whichever
        // comes first, so the trigger's event is seen at the time it is signalled.
        loop {
            let Some(t) = self.fds.get(&fd.0).and_then(|f| f.trigger) else {
                return Ok(PollResult::Error);
            };
            if self.machine.psi_trigger_poll(t) {
                return Ok(PollResult::Event);
            }
            let clock = self.machine.sched.clock;
            if clock >= until {
                return Ok(PollResult::Timeout);
            }
            if flag.as_ref().is_some_and(|f| f.load(Ordering::Relaxed)) {
                return Ok(PollResult::Interrupted);
            }
            let next_event = self.machine.sched.next_time().unwrap_or(u64::MAX);
            let next_poll = self.machine.psi.next_poll_work().unwrap_or(u64::MAX);
            let to = until.min(next_event.max(clock)).min(next_poll);
            self.machine.run_until(to, |_| false);
            self.reap();
        }
    }

    /// memory.peak / memory.swap.peak write: reset this fd's view and the local watermark.
    fn peak_write(&mut self, fd: Fd, cg: usize, kind: PeakKind) -> Result<(), Errno> {
        let memcg = self.cg(cg).memcg.ok_or(Errno::ENOENT)? as usize;
        let counters = match kind {
            PeakKind::Memory => &mut self.machine.memory,
            PeakKind::Swap => &mut self.machine.swap_counter,
        };
        let usage = counters.get(memcg).usage;
        counters.reset_local_watermark(memcg);
        let file = self.fds[&fd.0].file.clone();
        for (k, of) in self.fds.iter_mut() {
            if *k == fd.0 || of.cg != cg || of.file != file {
                continue;
            }
            if let Some(v) = of.peak.as_mut() {
                *v = (*v).max(usage);
            }
        }
        self.fds.get_mut(&fd.0).expect("open fd").peak = Some(usage);
        Ok(())
    }

    /// Start a task in cgroup `cgroup` (absolute path) running `program`.
    pub fn spawn(
        &mut self,
        cgroup: &str,
        opts: SpawnOpts,
        program: Box<dyn Program>,
    ) -> Result<Pid, Errno> {
        let i = match self.resolve(cgroup)? {
            Node::Dir(i) => i,
            _ => return Err(Errno::ENOTDIR),
        };
        self.can_attach(i)?;
        if !(-1000..=1000).contains(&opts.oom_score_adj) {
            return Err(Errno::EINVAL);
        }
        let memcg = self.effective_memcg(i);
        let name = opts.name.unwrap_or_else(|| program.name().to_string());
        let pid = self.machine.spawn(memcg, name, opts.oom_score_adj, program);
        let seq = self.attach_seq;
        self.attach_seq += 1;
        self.cg_mut(i).tasks.push(seq, pid);
        self.task_cg.insert(pid, (i, seq));
        let psi = self.cg(i).psi;
        self.machine.psi_move_task(pid, psi);
        // A task forked into a frozen cgroup is frozen too.
        let frozen = self.effectively_frozen(i);
        self.machine.set_task_frozen(pid, frozen);
        self.machine.after_step_check();
        Ok(pid)
    }

    /// v2's no-internal-process rule: a non-root cgroup that distributes controllers to its
    /// children cannot hold tasks.
    /// and cgroup_migrate_vet_dst(): only a valid domain's subtree can hold tasks; a thread
    /// root or a threaded cgroup can hold them beside its children.
    fn can_attach(&self, i: usize) -> Result<(), Errno> {
        if self.is_v1() || i == 0 {
            return Ok(());
        }
        if !self.is_valid_domain(self.dom_cgrp(i)) {
            return Err(Errno::EOPNOTSUPP);
        }
        if self.can_be_thread_root(i) || self.cg(i).threaded {
            return Ok(());
        }
        if self.cg(i).subtree_memory {
            return Err(Errno::EBUSY);
        }
        Ok(())
    }

    // Threaded subtrees (kernel/cgroup/cgroup.c). The memory controller is a domain
    // controller, so a threaded cgroup has no memcg of its own: its tasks are charged to
    // its domain (the thread root), as the kernel charges them to the domain's css.

    /// A cgroup's dom_cgrp: itself, or for a threaded cgroup its thread root.
    fn dom_cgrp(&self, mut i: usize) -> usize {
        while self.cg(i).threaded {
            i = self.cg(i).parent.expect("the root is never threaded");
        }
        i
    }

    /// cgroup_is_thread_root(): a domain with threaded children (no threaded controller is
    /// modelled, so subtree_control never makes one).
    fn is_thread_root(&self, i: usize) -> bool {
        let c = self.cg(i);
        !c.threaded && c.children.values().any(|&k| self.cg(k).threaded)
    }

    /// cgroup_is_valid_domain(): not threaded, and no ancestor is threaded or a thread root
    /// other than the root (which is mixable).
    fn is_valid_domain(&self, i: usize) -> bool {
        if self.cg(i).threaded {
            return false;
        }
        let mut cur = self.cg(i).parent;
        while let Some(a) = cur {
            if (a != 0 && self.is_thread_root(a)) || self.cg(a).threaded {
                return false;
            }
            cur = self.cg(a).parent;
        }
        true
    }

    /// cgroup_can_be_thread_root(): the root always; else a domain without populated domain
    /// children and without domain controllers enabled for its children.
    fn can_be_thread_root(&self, i: usize) -> bool {
        if i == 0 {
            return true;
        }
        let c = self.cg(i);
        if c.threaded || c.subtree_memory {
            return false;
        }
        !c.children
            .values()
            .any(|&k| !self.cg(k).threaded && self.has_live_task(k))
    }

    /// Whether the subtree of `i` holds a task that has not exited (cgroup_is_populated()).
    fn has_live_task(&self, i: usize) -> bool {
        let mut stack = vec![i];
        while let Some(c) = stack.pop() {
            let cg = self.cg(c);
            if cg.tasks.iter().any(|&p| !self.machine.task(p).exited()) {
                return true;
            }
            stack.extend(cg.children.values().copied());
        }
        false
    }

    /// cgroup.type as cgroup_type_show() prints it.
    fn cgroup_type(&self, i: usize) -> &'static str {
        if self.cg(i).threaded {
            "threaded"
        } else if !self.is_valid_domain(i) {
            "domain invalid"
        } else if self.is_thread_root(i) {
            "domain threaded"
        } else {
            "domain"
        }
    }

    /// cgroup_enable_threaded(): make `i` threaded, joining its parent's domain.
    fn enable_threaded(&mut self, i: usize) -> Result<(), Errno> {
        if self.cg(i).threaded {
            return Ok(());
        }
        if self.has_live_task(i) || self.cg(i).subtree_memory {
            return Err(Errno::EOPNOTSUPP);
        }
        let parent = self.cg(i).parent.expect("cgroup.type is not on the root");
        let dom = self.dom_cgrp(parent);
        if !self.is_valid_domain(dom) || !self.can_be_thread_root(dom) {
            return Err(Errno::EOPNOTSUPP);
        }
        self.cg_mut(i).threaded = true;
        // A threaded cgroup gets threaded controllers only: its memcg goes (offlined, its
        // remaining charges stay with it while it is dying, as when the controller is disabled).
        if let Some(m) = self.cg_mut(i).memcg.take() {
            self.machine.memcg_offline(m)?;
            self.machine.release_dying_memcgs();
        }
        Ok(())
    }

    /// Move a task to cgroup `i` (a write of its pid to cgroup.procs).
    pub(crate) fn attach(&mut self, i: usize, pid: Pid) -> Result<(), Errno> {
        let Some(&(old, old_seq)) = self.task_cg.get(&pid) else {
            return Err(Errno::ESRCH);
        };
        if !self.machine.task_exists(pid) || self.machine.task(pid).exited() {
            return Err(Errno::ESRCH);
        }
        self.can_attach(i)?;
        self.cg_mut(old).tasks.remove(old_seq);
        let seq = self.attach_seq;
        self.attach_seq += 1;
        self.cg_mut(i).tasks.push(seq, pid);
        self.task_cg.insert(pid, (i, seq));
        let m = self.effective_memcg(i);
        self.machine.move_task(pid, m);
        let psi = self.cg(i).psi;
        self.machine.psi_move_task(pid, psi);
        let frozen = self.effectively_frozen(i);
        self.machine.set_task_frozen(pid, frozen);
        Ok(())
    }

    /// cgroup.freeze of the cgroup or an ancestor is set (the cgroup's e_freeze).
    pub(crate) fn effectively_frozen(&self, mut i: usize) -> bool {
        loop {
            let c = self.cg(i);
            if c.freeze {
                return true;
            }
            match c.parent {
                Some(p) => i = p,
                None => return false,
            }
        }
    }

    /// Live descendants of cgroup `i` (cgroup.stat nr_descendants).
    fn nr_descendants(&self, i: usize) -> usize {
        let mut n = 0usize;
        let mut stack: Vec<usize> = self.cg(i).children.values().copied().collect();
        while let Some(c) = stack.pop() {
            n += 1;
            stack.extend(self.cg(c).children.values().copied());
        }
        n
    }

    /// cgroup_check_hierarchy_limits(): may a child be made under `parent`? No if an
    /// ancestor (or the parent) has max.descendants descendants already, or the new cgroup
    /// would be deeper below one than its max.depth.
    fn hierarchy_limits_allow(&self, parent: usize) -> bool {
        let mut level = 1i64;
        let mut cur = Some(parent);
        while let Some(c) = cur {
            let cg = self.cg(c);
            // Count the descendants only under a finite limit: a walk per ancestor on every
            // mkdir would make building a large tree quadratic.
            let too_many = cg.max_descendants != i32::MAX
                && self.nr_descendants(c) as i64 >= cg.max_descendants as i64;
            if too_many || level > cg.max_depth as i64 {
                return false;
            }
            level += 1;
            cur = cg.parent;
        }
        true
    }

    /// Freeze or thaw every task of `i`'s subtree as its cgroups' e_freeze says.
    fn apply_freeze(&mut self, i: usize) {
        let mut stack = vec![i];
        while let Some(c) = stack.pop() {
            let frozen = self.effectively_frozen(c);
            for p in self.cg(c).tasks.to_vec() {
                self.machine.set_task_frozen(p, frozen);
            }
            stack.extend(self.cg(c).children.values().copied());
        }
    }

    /// Drop exited tasks from the cgroups' task lists.
    pub(crate) fn reap(&mut self) {
        // The machine lists its exits, so this costs what exited, not what lives.
        for p in self.machine.take_exited() {
            let Some((i, seq)) = self.task_cg.remove(&p) else {
                continue;
            };
            if let Some(c) = self.cgroups[i].as_mut() {
                c.tasks.remove(seq);
            }
        }
    }

    /// Pids in a cgroup (cgroup.procs), live tasks only.
    pub(crate) fn procs(&mut self, i: usize) -> Vec<Pid> {
        self.reap();
        self.cg(i).tasks.to_vec()
    }

    /// Whether the cgroup or a descendant has a live task.
    pub(crate) fn populated(&mut self, i: usize) -> bool {
        self.reap();
        let mut stack = vec![i];
        while let Some(c) = stack.pop() {
            let cg = self.cg(c);
            if !cg.tasks.is_empty() {
                return true;
            }
            stack.extend(cg.children.values().copied());
        }
        false
    }

    /// Let `flag` interrupt [`System::wait`] and [`System::advance`]: when it is raised
    /// (by a signal handler, say), they return between two events. Clearing it is the
    /// caller's business. Without a flag nothing interrupts them.
    pub fn set_interrupt(&mut self, flag: Option<Arc<AtomicBool>>) {
        self.interrupt = flag;
    }

    /// Run the simulation until `pid` ends, until it holds (if `stop_at_hold`), or until
    /// the interrupt flag is raised. Err if the task is unknown, or if virtual time runs past
    /// `limit_ns` first.
    pub fn wait(
        &mut self,
        pid: Pid,
        stop_at_hold: bool,
        limit_ns: u64,
    ) -> Result<WaitResult, String> {
        if !self.machine.task_exists(pid) {
            return Err(format!("no task with pid {pid}"));
        }
        let until = self.machine.sched.clock.saturating_add(limit_ns);
        let flag = self.interrupt.clone();
        let mut interrupted = false;
        let done = |m: &Machine| {
            let t = m.task(pid);
            if t.exited() || (stop_at_hold && t.state == memcgsim_model::TaskState::Holding) {
                return true;
            }
            interrupted = flag.as_ref().is_some_and(|f| f.load(Ordering::Relaxed));
            interrupted
        };
        let stopped = self.machine.run_until(until, done);
        self.reap();
        if interrupted {
            return Ok(WaitResult::Interrupted);
        }
        if !stopped {
            let frozen = if self.machine.task(pid).frozen {
                " (it is frozen: see cgroup.freeze)"
            } else {
                ""
            };
            return Err(format!(
                "task {pid} did not finish within {} s of virtual time{frozen}",
                limit_ns / 1_000_000_000
            ));
        }
        Ok(match self.machine.task(pid).state {
            memcgsim_model::TaskState::Exited(o) => WaitResult::Ended(o),
            _ => WaitResult::Holding,
        })
    }

    /// Run the simulation for `ns` nanoseconds of virtual time. Returns false if the
    /// interrupt flag stopped it first.
    pub fn advance(&mut self, ns: u64) -> bool {
        let until = self.machine.sched.clock.saturating_add(ns);
        let flag = self.interrupt.clone();
        let mut interrupted = false;
        self.machine.run_until(until, |_| {
            interrupted = flag.as_ref().is_some_and(|f| f.load(Ordering::Relaxed));
            interrupted
        });
        self.reap();
        !interrupted
    }

    /// SIGINT to a task, as Ctrl-C sends it to a shell's foreground job: its default action
    /// ends the task (ESRCH if it has ended).
    pub fn interrupt_task(&mut self, pid: Pid) -> Result<(), Errno> {
        self.signal_task(pid, Machine::interrupt_task)
    }

    /// Deliver a fatal signal (`deliver`) to a live task, then drop it from its cgroup.
    fn signal_task(&mut self, pid: Pid, deliver: fn(&mut Machine, Pid)) -> Result<(), Errno> {
        if !self.machine.task_exists(pid) || self.machine.task(pid).exited() {
            return Err(Errno::ESRCH);
        }
        deliver(&mut self.machine, pid);
        self.reap();
        self.machine.after_step_check();
        Ok(())
    }

    /// How a task ended, with who killed it and how long it ran; None while it lives.
    pub fn task_end(&self, pid: Pid) -> Option<TaskEnd> {
        let outcome = self.outcome(pid)?;
        let t = self.machine.task(pid);
        let oom = t
            .oom_domain
            .map(|m| (m != ROOT_MEMCG).then(|| self.memcg_path(m)));
        // Only an exit with a failure status follows a reported error.
        let error = match outcome {
            TaskOutcome::Exited(c) if c != 0 => t.error.as_deref().cloned(),
            _ => None,
        };
        Some(TaskEnd {
            outcome,
            oom,
            elapsed_ns: t.stats.end_ns.saturating_sub(t.stats.start_ns),
            error,
        })
    }

    /// The path of the cgroup that owns memcg `m` (`/` for the root).
    pub fn memcg_path(&self, m: MemcgId) -> String {
        let Some(i) = self
            .cgroups
            .iter()
            .position(|c| c.as_ref().is_some_and(|c| c.memcg == Some(m)))
        else {
            return "(a removed cgroup)".to_string();
        };
        self.cgroup_path(i)
    }

    /// The absolute path of cgroup `i`.
    pub(crate) fn cgroup_path(&self, mut i: usize) -> String {
        let mut parts = Vec::new();
        while let Some(p) = self.cg(i).parent {
            parts.push(self.cg(i).name.clone());
            i = p;
        }
        parts.reverse();
        format!("/{}", parts.join("/"))
    }

    /// Send SIGKILL to a task (ESRCH if it has ended).
    pub fn kill(&mut self, pid: Pid) -> Result<(), Errno> {
        self.signal_task(pid, Machine::kill_task)
    }

    /// How a task ended, if it has.
    pub fn outcome(&self, pid: Pid) -> Option<TaskOutcome> {
        if !self.machine.task_exists(pid) {
            return None;
        }
        match self.machine.task(pid).state {
            memcgsim_model::TaskState::Exited(o) => Some(o),
            _ => None,
        }
    }

    // ------------------------------------------------------------ cgroup core files

    fn core_files(&self, i: usize) -> Vec<&'static str> {
        let mut v = vec!["cgroup.procs"];
        if self.is_v1() {
            v.push("tasks");
            v.push("cgroup.clone_children");
            return v;
        }
        v.extend([
            "cgroup.controllers",
            "cgroup.subtree_control",
            "cgroup.stat",
            "cgroup.max.depth",
            "cgroup.max.descendants",
            "cgroup.threads",
            // cgroup_base_files[]' CFTYPE_PRESSURE files, on the root too.
            "cpu.pressure",
            "io.pressure",
            "memory.pressure",
        ]);
        if i != 0 {
            v.extend([
                "cgroup.events",
                "cgroup.type",
                "cgroup.freeze",
                "cgroup.kill",
            ]);
        }
        v
    }

    pub(crate) fn core_file_names(&self, i: usize) -> Vec<String> {
        self.core_files(i).into_iter().map(String::from).collect()
    }

    /// cgroup_control() has `memory`: the parent enables it for its children, and this is
    /// not a threaded cgroup (which gets threaded controllers only).
    fn controllers_available(&self, i: usize) -> bool {
        match self.cg(i).parent {
            None => true,
            Some(p) => self.cg(p).subtree_memory && !self.cg(i).threaded,
        }
    }

    fn read_core(&mut self, i: usize, f: &str) -> Result<Option<String>, Errno> {
        let s = match f {
            // cgroup_procs_start(): every process of a threaded subtree belongs to its
            // domain, so cgroup.procs cannot be read in a threaded cgroup.
            "cgroup.procs" if !self.is_v1() && self.cg(i).threaded => {
                return Err(Errno::EOPNOTSUPP)
            }
            "cgroup.procs" | "tasks" | "cgroup.threads" => {
                let mut s = String::new();
                for p in self.procs(i) {
                    s.push_str(&format!("{p}\n"));
                }
                s
            }
            "cgroup.clone_children" => "0\n".into(),
            "cpu.pressure" | "io.pressure" | "memory.pressure" if !self.is_v1() => {
                let res = match f {
                    "cpu.pressure" => memcgsim_model::psi::Resource::Cpu,
                    "io.pressure" => memcgsim_model::psi::Resource::Io,
                    _ => memcgsim_model::psi::Resource::Memory,
                };
                let psi = self.cg(i).psi;
                self.machine.psi_show(psi, res)
            }
            "cgroup.controllers" => {
                if self.controllers_available(i) {
                    "memory\n".into()
                } else {
                    "\n".into()
                }
            }
            "cgroup.subtree_control" => {
                if self.cg(i).subtree_memory {
                    "memory\n".into()
                } else {
                    "\n".into()
                }
            }
            // Tasks freeze between events, so a cgroup is frozen as soon as it is told to.
            "cgroup.events" => format!(
                "populated {}\nfrozen {}\n",
                self.populated(i) as u8,
                self.effectively_frozen(i) as u8
            ),
            "cgroup.stat" => {
                let n = self.nr_descendants(i);
                let dying = self
                    .cg(i)
                    .memcg
                    .map_or(0, |m| self.machine.nr_dying_descendants(m));
                format!("nr_descendants {n}\nnr_dying_descendants {dying}\n")
            }
            "cgroup.max.depth" | "cgroup.max.descendants" => {
                let v = if f == "cgroup.max.depth" {
                    self.cg(i).max_depth
                } else {
                    self.cg(i).max_descendants
                };
                if v == i32::MAX {
                    "max\n".into()
                } else {
                    format!("{v}\n")
                }
            }
            "cgroup.type" => format!("{}\n", self.cgroup_type(i)),
            "cgroup.freeze" => format!("{}\n", self.cg(i).freeze as u8),
            "cgroup.kill" => return Err(Errno::EACCES),
            _ => return Ok(None),
        };
        Ok(Some(s))
    }

    /// Cgroup core writes. Ok(true) if handled.
    fn write_core(&mut self, i: usize, f: &str, data: &str) -> Result<bool, Errno> {
        match f {
            "cgroup.procs" | "tasks" | "cgroup.threads" => {
                // cgroup_procs_write_start(): any bad number is EINVAL.
                let pid = parse::kstrtoint(data)
                    .ok()
                    .filter(|&p| p >= 0)
                    .ok_or(Errno::EINVAL)?;
                self.attach(i, Pid(pid as u32))?;
            }
            "cgroup.subtree_control" => self.write_subtree_control(i, data)?,
            "cgroup.kill" => {
                if parse::kstrtoint(data)? != 1 {
                    return Err(Errno::ERANGE);
                }
                let mut stack = vec![i];
                let mut pids = Vec::new();
                while let Some(c) = stack.pop() {
                    pids.extend(self.cg(c).tasks.iter().copied());
                    stack.extend(self.cg(c).children.values().copied());
                }
                for p in pids {
                    self.machine.kill_task(p);
                }
                self.reap();
            }
            "cgroup.freeze" => {
                let v = parse::kstrtoint(data)?;
                if !(0..=1).contains(&v) {
                    return Err(Errno::ERANGE);
                }
                self.cg_mut(i).freeze = v == 1;
                self.apply_freeze(i);
            }
            "cgroup.max.depth" | "cgroup.max.descendants" => {
                let s = data.trim();
                let v = if s == "max" {
                    i32::MAX as i64
                } else {
                    parse::kstrtoint(s)?
                };
                if v < 0 {
                    return Err(Errno::ERANGE);
                }
                let v = v as i32;
                if f == "cgroup.max.depth" {
                    self.cg_mut(i).max_depth = v;
                } else {
                    self.cg_mut(i).max_descendants = v;
                }
            }
            "cgroup.type" => {
                // Only switching to threaded mode is supported.
                if data.trim() != "threaded" {
                    return Err(Errno::EINVAL);
                }
                self.enable_threaded(i)?;
            }
            "cgroup.clone_children" => return Err(Errno::EOPNOTSUPP),
            "cgroup.controllers" | "cgroup.events" | "cgroup.stat" => return Err(Errno::EACCES),
            _ => return Ok(false),
        }
        self.machine.after_step_check();
        Ok(true)
    }

    fn write_subtree_control(&mut self, i: usize, data: &str) -> Result<(), Errno> {
        let mut enable = None;
        for tok in data.split_whitespace() {
            let (on, name) = if let Some(n) = tok.strip_prefix('+') {
                (true, n)
            } else if let Some(n) = tok.strip_prefix('-') {
                (false, n)
            } else {
                return Err(Errno::EINVAL);
            };
            if name != "memory" {
                // Other controllers are not modelled.
                return Err(Errno::EINVAL);
            }
            enable = Some(on);
        }
        let Some(on) = enable else {
            return Ok(());
        };
        if on == self.cg(i).subtree_memory {
            return Ok(());
        }
        if on {
            if !self.controllers_available(i) {
                return Err(Errno::ENOENT);
            }
            // cgroup_vet_subtree_control_enable(): no domain controller in a threaded
            // subtree, nor beside tasks.
            if !self.is_valid_domain(self.dom_cgrp(i)) {
                return Err(Errno::EOPNOTSUPP);
            }
            if i != 0 && (self.is_thread_root(i) || self.cg(i).threaded) {
                return Err(Errno::EOPNOTSUPP);
            }
            if i != 0 && !self.cg(i).tasks.is_empty() {
                return Err(Errno::EBUSY);
            }
            let pm = self.effective_memcg(i);
            let children: Vec<usize> = self.cg(i).children.values().copied().collect();
            for c in children {
                let m = self.machine.memcg_create(pm)?;
                self.cg_mut(c).memcg = Some(m);
                self.retarget_tasks(c);
            }
            self.cg_mut(i).subtree_memory = true;
        } else {
            let children: Vec<usize> = self.cg(i).children.values().copied().collect();
            if children.iter().any(|&c| self.cg(c).subtree_memory) {
                return Err(Errno::EBUSY);
            }
            self.cg_mut(i).subtree_memory = false;
            for c in children {
                let m = self.cg_mut(c).memcg.take();
                self.retarget_tasks(c);
                if let Some(m) = m {
                    self.machine.memcg_offline(m)?;
                    self.machine.release_dying_memcgs();
                }
            }
        }
        Ok(())
    }

    /// Re-point the tasks of `c`'s subtree at their (new) effective memcg.
    fn retarget_tasks(&mut self, c: usize) {
        let mut stack = vec![c];
        while let Some(x) = stack.pop() {
            let m = self.effective_memcg(x);
            for p in self.cg(x).tasks.to_vec() {
                self.machine.move_task(p, m);
            }
            stack.extend(self.cg(x).children.values().copied());
        }
    }
}

/// The resource of a pressure file (`memory.pressure` in a v2 cgroup, `pressure/memory`
/// under /proc), if `file` is one.
fn pressure_resource(file: &str, proc: bool) -> Option<memcgsim_model::psi::Resource> {
    use memcgsim_model::psi::Resource;
    let name = if proc {
        file.strip_prefix("pressure/")?
    } else {
        file.strip_suffix(".pressure")?
    };
    match name {
        "cpu" => Some(Resource::Cpu),
        "io" => Some(Resource::Io),
        "memory" => Some(Resource::Memory),
        _ => None,
    }
}
