//! Tasks (processes) and the context a program sees while it runs.
//!
//! A task lives in a memcg (its cgroup's effective memcg), has an oom_score_adj, owns anon
//! VMAs, and can move between cgroups (charges stay where they were made, as in v2). On exit
//! or kill its anon memory and swap entries are freed, and so is the page cache of unnamed
//! files it created (O_TMPFILE); page-cache pages of named files stay charged to its memcg.

use crate::machine::Machine;
use crate::memcontrol::MemcgId;
use crate::program::{Fault, Pid, Program, TaskOutcome};

/// The first pid handed out.
pub const FIRST_PID: u32 = 100;

/// A handle on an anon mapping of the running task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma(pub u32);

/// A task's shared read-only mapping of a whole file (VM_EXEC if `exec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMap {
    pub file: u32,
    pub exec: bool,
}

/// A handle on a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    Runnable,
    /// Finished its work, holding its memory until killed.
    Holding,
    Exited(TaskOutcome),
}

/// What a task did and how long it took, in virtual time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    pub start_ns: u64,
    pub end_ns: u64,
    /// CPU time in user space (page hits and the program's own work).
    pub user_ns: u64,
    /// All CPU time (user + system).
    pub cpu_ns: u64,
    pub io_wait_ns: u64,
    /// Time slept in memory.high throttling.
    pub throttled_ns: u64,
    /// Time spent in direct reclaim (memcg limit and high reclaim, global direct reclaim).
    pub reclaim_ns: u64,
    pub minflt: u64,
    pub majflt: u64,
}

pub struct Task {
    pub pid: Pid,
    pub name: String,
    pub memcg: MemcgId,
    pub oom_score_adj: i32,
    pub state: TaskState,
    pub program: Option<Box<dyn Program>>,
    /// What only a task that has not exited holds; freed at its exit. Its fields read
    /// through the task (`Deref`).
    live: LivePart,
    /// Pages of all its mappings (mm->total_vm).
    pub total_vm: u64,
    /// PMD pages of its page tables are charged to this obj_cgroup (kmem.rs).
    pub pmd_objcg: crate::kmem::ObjcgId,
    /// Threads created so far: the next one runs on the CPU this many places after the
    /// task's (round robin; see `kmem_thread_exit`).
    pub thread_seq: u32,
    pub rss_anon: u64,
    pub rss_file: u64,
    /// MM_SHMEMPAGES: mapped pages of shmem files this task mapped first (shmem.rs).
    pub rss_shmem: u64,
    /// MMF_VM_HUGEPAGE: registered with khugepaged (khugepaged.rs).
    pub khugepaged: bool,
    pub swapents: u64,
    /// Dirty throttling (task_struct's nr_dirtied, nr_dirtied_pause, dirty_paused_when).
    pub dirty: crate::page_writeback::TaskDirty,
    /// SIGKILL (or a fatal SIGINT) received.
    pub killed: bool,
    /// Killed by the OOM killer: the OOM domain (ROOT_MEMCG for a global OOM).
    pub oom_domain: Option<MemcgId>,
    /// Frozen by the cgroup freezer (cgroup.freeze): it does not run until thawed.
    pub frozen: bool,
    /// A run event found it frozen and was dropped; thawing schedules it again.
    pub parked: bool,
    /// Generation of the task's pending run event.
    pub gen: u64,
    /// The CPU it last ran on.
    pub cpu: u32,
    /// CPU time used, as the run queue orders it (sched.rs; vruntime at nice 0).
    pub vruntime: u64,
    /// memcg_nr_pages_over_high.
    pub nr_pages_over_high: u64,
    /// Asleep inside an allocation (reclaim_throttle(), or a wait on a page's writeback).
    /// (It and the count above, which every fault's return tests, stay out of the live
    /// part: reading them costs no load of it.)
    pub block: Option<Block>,
    /// It slept in reclaim_throttle(VMSCAN_THROTTLE_ISOLATED): its next reclaim goes on
    /// past too many isolated pages instead of sleeping again (shrink_inactive_list()'s
    /// `stalled`).
    pub isolated_stalled: bool,
    /// Its pressure state (psi.rs).
    pub psi: crate::psi::PsiTask,
    pub stats: TaskStats,
    /// The system call that last failed for want of memory, as the program reports it on
    /// its standard error before it exits (None if none has; boxed: few tasks have one).
    pub error: Option<Box<SyscallError>>,
}

/// The part of a task that its exit empties: its mappings, open files, threads and the
/// allocation it may sleep in (in the kernel, the mm_struct, files_struct and the rest
/// that exit_mm() and exit_files() release, while the task_struct stays for its parent to
/// reap). Allocated at spawn and freed at exit, when every field holds its default: an
/// exited task reads the defaults, and a write to one allocates it again.
#[derive(Debug, Default)]
pub struct TaskLive {
    pub vmas: Vec<u32>,
    /// Unnamed files (O_TMPFILE) the task holds open; deleted when it exits.
    pub tmpfiles: Vec<u32>,
    /// Its shared read-only file mappings: (file, VM_EXEC), one entry per mmap().
    pub file_maps: Vec<(u32, bool)>,
    /// The readahead state of each file the task reads (its open file's file_ra_state).
    pub ra: crate::readahead::RaStates,
    /// PMD pages of its page tables.
    pub pmd_pages: u64,
    /// Its threads besides the first: the obj_cgroup each one's kernel stack and slab are
    /// charged to.
    pub threads: Vec<(crate::kmem::ObjcgId, u32)>,
    /// Its own kernel stack and task_struct were allocated (the root's).
    pub own_stack: bool,
    /// Where the retry loop of the allocation it sleeps in stood.
    pub alloc_retry: Option<AllocRetry>,
    /// A global direct reclaim that gave its CPU up between priorities (cond_resched(),
    /// `Wait::Resched`): it goes on from its next priority when the task runs again.
    pub reclaim_resume: Option<Box<crate::vmscan::ScanControl>>,
}

impl TaskLive {
    /// Whether exit left every field as a fresh task's (the readahead state, taken at exit,
    /// is not looked at).
    fn emptied(&self) -> bool {
        self.vmas.is_empty()
            && self.tmpfiles.is_empty()
            && self.file_maps.is_empty()
            && self.pmd_pages == 0
            && self.threads.is_empty()
            && !self.own_stack
            && self.alloc_retry.is_none()
            && self.reclaim_resume.is_none()
    }
}

/// What an exited task's live part reads as.
static EXITED_LIVE: std::sync::LazyLock<TaskLive> = std::sync::LazyLock::new(TaskLive::default);

/// A task's live part, or none once it has exited.
#[derive(Debug, Default)]
struct LivePart(Option<Box<TaskLive>>);

/// The live part an exited task reads (out of line: the paths that read a live task's
/// fields stay as short as they were).
#[cold]
#[inline(never)]
fn exited_live() -> &'static TaskLive {
    &EXITED_LIVE
}

/// A fresh live part, for a write to an exited task's.
#[cold]
#[inline(never)]
fn revive(live: &mut Option<Box<TaskLive>>) -> &mut TaskLive {
    live.insert(Box::default())
}

impl std::ops::Deref for Task {
    type Target = TaskLive;
    #[inline]
    fn deref(&self) -> &TaskLive {
        match &self.live.0 {
            Some(l) => l,
            None => exited_live(),
        }
    }
}

impl std::ops::DerefMut for Task {
    #[inline]
    fn deref_mut(&mut self) -> &mut TaskLive {
        match self.live.0 {
            Some(ref mut l) => l,
            None => revive(&mut self.live.0),
        }
    }
}

/// A system call a program could not do for want of memory, with what the kernel weighed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyscallError {
    /// mmap() refused by the overcommit heuristic (__vm_enough_memory() under
    /// vm.overcommit_memory = 0): the mapping is larger than RAM + swap.
    Overcommit {
        /// The size asked for, in bytes.
        bytes: u64,
        /// totalram_pages and total_swap_pages, in bytes.
        ram: u64,
        swap: u64,
    },
    /// mmap() of more pages than the model's 31-bit page numbers hold.
    MappingTooLarge { bytes: u64 },
    /// clone() of a thread: no memory for its kernel stack.
    CloneNoMem,
    /// A tmpfs is full (shmem_inode_acct_block()): write() fails with ENOSPC, a fault is
    /// SIGBUS. `file` is the file's name (None: an unnamed object).
    NoSpace { file: Option<String>, fault: bool },
}

impl std::fmt::Display for SyscallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::units::fmt_size;
        match *self {
            SyscallError::Overcommit { bytes, ram, swap } => write!(
                f,
                "cannot allocate {}: more than RAM + swap (MemTotal {} + SwapTotal {}) \
                 under vm.overcommit_memory=0 (mmap: ENOMEM)",
                fmt_size(bytes),
                fmt_size(ram),
                fmt_size(swap)
            ),
            SyscallError::MappingTooLarge { bytes } => write!(
                f,
                "cannot allocate {}: the model maps at most 8T at once (mmap: ENOMEM)",
                fmt_size(bytes)
            ),
            SyscallError::CloneNoMem => f.write_str(
                "cannot create a thread: no memory for its kernel stack (clone: ENOMEM)",
            ),
            SyscallError::NoSpace { ref file, fault } => {
                let name = file.as_deref().unwrap_or("shared memory");
                if fault {
                    write!(f, "{name}: its tmpfs is full (page fault: SIGBUS)")
                } else {
                    write!(f, "error writing {name}: No space left on device (ENOSPC)")
                }
            }
        }
    }
}

/// A sleep inside an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub wait: crate::vmscan::Wait,
    /// When the sleep began (the end of the step that blocked); None while that step runs.
    pub from: Option<u64>,
    /// Woken before the step that blocked had ended.
    pub woken: bool,
}

/// The state of an allocation's retry loop, kept across a sleep in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocRetry {
    /// try_charge_memcg(): the memcg charged, its retry counters, and what the reclaim
    /// before the sleep reclaimed (the loop goes on from there).
    Charge {
        memcg: MemcgId,
        nr_retries: u32,
        drained: bool,
        passed_oom: bool,
        reclaimed: u64,
    },
    /// __alloc_pages_slowpath(): no_progress_loops and the reclaim before the sleep.
    Page { no_progress: u32, reclaimed: u64 },
}

impl Task {
    pub fn exited(&self) -> bool {
        matches!(self.state, TaskState::Exited(_))
    }
}

impl Machine {
    #[inline]
    pub fn task(&self, pid: Pid) -> &Task {
        &self.tasks[(pid.0 - FIRST_PID) as usize]
    }

    #[inline]
    pub fn task_mut(&mut self, pid: Pid) -> &mut Task {
        &mut self.tasks[(pid.0 - FIRST_PID) as usize]
    }

    pub fn task_exists(&self, pid: Pid) -> bool {
        pid.0 >= FIRST_PID && ((pid.0 - FIRST_PID) as usize) < self.tasks.len()
    }

    /// Is the task running in the current context killed (task_is_dying())?
    pub fn current_is_dying(&self) -> bool {
        match self.cur.as_ref().and_then(|c| c.pid) {
            Some(p) => self.task(p).killed,
            None => false,
        }
    }

    /// fork+exec into `memcg`: the task becomes runnable now.
    pub fn spawn(
        &mut self,
        memcg: MemcgId,
        name: String,
        oom_score_adj: i32,
        program: Box<dyn Program>,
    ) -> Pid {
        let pid = Pid(FIRST_PID + self.tasks.len() as u32);
        let now = self.sched.clock;
        self.tasks.push(Task {
            pid,
            name,
            memcg,
            oom_score_adj,
            state: TaskState::Runnable,
            program: Some(program),
            live: LivePart(Some(Box::default())),
            total_vm: 0,
            pmd_objcg: crate::kmem::ROOT_OBJCG,
            thread_seq: 0,
            rss_anon: 0,
            rss_file: 0,
            rss_shmem: 0,
            khugepaged: false,
            swapents: 0,
            dirty: crate::page_writeback::TaskDirty::new(now),
            killed: false,
            oom_domain: None,
            frozen: false,
            parked: false,
            gen: 0,
            cpu: (pid.0 - FIRST_PID) % self.cfg.cpus,
            vruntime: self.sched.rq.min_vruntime,
            nr_pages_over_high: 0,
            block: None,
            isolated_stalled: false,
            psi: crate::psi::PsiTask::new(
                pid.0 - FIRST_PID,
                crate::psi::PSI_SYSTEM,
                (pid.0 - FIRST_PID) % self.cfg.cpus,
                now,
            ),
            stats: TaskStats {
                start_ns: now,
                ..TaskStats::default()
            },
            error: None,
        });
        self.memcg_mut(memcg).nr_tasks += 1;
        // The task is forked by the shell outside any group and then moved in, so its kernel
        // stack and task_struct are the root's (not charged), as for `cg_run()` in the
        // kernel's selftests.
        // (With no free frame at all, it has none.)
        let own = self
            .kmem_thread_charge(crate::kmem::ROOT_OBJCG, true)
            .is_ok();
        self.task_mut(pid).own_stack = own;
        self.sched.push(now, crate::sched::Event::TaskRun(pid, 0));
        pid
    }

    /// Move a task to another memcg (writing its pid to cgroup.procs). Charges stay.
    pub fn move_task(&mut self, pid: Pid, memcg: MemcgId) {
        let old = self.task(pid).memcg;
        if old == memcg || self.task(pid).exited() {
            return;
        }
        self.memcg_mut(old).nr_tasks -= 1;
        self.memcg_mut(memcg).nr_tasks += 1;
        self.task_mut(pid).memcg = memcg;
    }

    /// Free the task's memory and mark it exited.
    pub fn exit_task(&mut self, pid: Pid, outcome: TaskOutcome) {
        if self.task(pid).exited() {
            return;
        }
        self.end_block(pid);
        self.task_mut(pid).alloc_retry = None;
        self.task_mut(pid).reclaim_resume = None;
        let vmas = std::mem::take(&mut self.task_mut(pid).vmas);
        for v in vmas {
            self.munmap(v);
        }
        for (f, exec) in std::mem::take(&mut self.task_mut(pid).file_maps) {
            self.file_munmap_shared(f, exec);
        }
        // Its open files' readahead state goes with them (file_ra_state lives in the struct
        // file); nothing reads it once the task has exited.
        self.ra_exit(pid);
        // Closing the last fd of an unlinked file frees its page cache and its inode.
        for f in std::mem::take(&mut self.task_mut(pid).tmpfiles) {
            self.file_truncate(f, 0);
            self.file_free_inode(f);
        }
        // The rest of the page tables, the threads, and the task's own stack.
        let t = self.task_mut(pid);
        let (pmd, pmd_objcg) = (t.pmd_pages, t.pmd_objcg);
        t.pmd_pages = 0;
        for _ in 0..pmd {
            self.kmem_uncharge(
                pmd_objcg,
                crate::kmem::KmemKind::Pagetable,
                crate::PAGE_SIZE,
            );
        }
        let threads = std::mem::take(&mut self.task_mut(pid).threads);
        for (objcg, cpu) in threads.into_iter().rev() {
            self.kmem_thread_exit(objcg, cpu);
        }
        if std::mem::take(&mut self.task_mut(pid).own_stack) {
            self.kmem_thread_uncharge(crate::kmem::ROOT_OBJCG);
        }
        let memcg = self.task(pid).memcg;
        self.memcg_mut(memcg).nr_tasks -= 1;
        let now = self.now();
        // A task that ends its own quantum leaves its flags when the quantum's are laid out
        // (sched.rs); one killed from outside leaves them now.
        if self.current_pid() != Some(pid) {
            self.psi_task_exit(pid);
        }
        let t = self.task_mut(pid);
        t.state = TaskState::Exited(outcome);
        t.stats.end_ns = now;
        t.gen += 1;
        // The program is dropped unless it is running right now (then the scheduler drops it).
        t.program = None;
        t.nr_pages_over_high = 0;
        if t.live.0.as_ref().is_some_and(|l| l.emptied()) {
            t.live.0 = None;
        }
        self.exited_pids.push(pid);
    }

    /// The tasks that exited since the last call, in the order they exited.
    pub fn take_exited(&mut self) -> Vec<Pid> {
        std::mem::take(&mut self.exited_pids)
    }

    /// The cgroup freezer (kernel/cgroup/freezer.c), at the granularity of events: a frozen
    /// task is not scheduled (its pending run is parked) and its memory stays charged and
    /// reclaimable; thawing makes it runnable at once. Fatal signals still end it.
    pub fn set_task_frozen(&mut self, pid: Pid, frozen: bool) {
        let now = self.sched.clock;
        let t = self.task_mut(pid);
        if t.frozen == frozen {
            return;
        }
        t.frozen = frozen;
        if !frozen && t.parked {
            t.parked = false;
            let g = t.gen;
            self.sched.push(now, crate::sched::Event::TaskRun(pid, g));
        }
    }

    /// SIGKILL: the task dies; its memory is reaped at once.
    pub fn kill_task(&mut self, pid: Pid) {
        self.signal_fatal(pid, TaskOutcome::Killed);
    }

    /// SIGINT with its default action: the task dies as on SIGKILL, but reports it. Only
    /// between events (never while the task's program is running).
    pub fn interrupt_task(&mut self, pid: Pid) {
        self.signal_fatal(pid, TaskOutcome::Interrupted);
    }

    fn signal_fatal(&mut self, pid: Pid, outcome: TaskOutcome) {
        if self.task(pid).exited() {
            return;
        }
        self.task_mut(pid).killed = true;
        self.exit_task(pid, outcome);
    }
}

/// What a program sees while it runs: the operations a process can do to memory, each
/// charging its cost in virtual time to the task.
pub struct TaskCtx<'a> {
    pub(crate) m: &'a mut Machine,
    pub(crate) pid: Pid,
    pub(crate) quantum_end: u64,
}

impl TaskCtx<'_> {
    /// The task's pid.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Current virtual time.
    pub fn now(&self) -> u64 {
        self.m.now()
    }

    /// Whether the task may keep working in this quantum (programs loop while this holds).
    #[inline]
    pub fn has_time(&self) -> bool {
        !self.m.task(self.pid).killed && self.m.now() < self.quantum_end
    }

    /// Charge user-space CPU time (the program's own computation).
    pub fn compute(&mut self, ns: u64) {
        self.m.spend_cpu(ns);
        self.m.task_mut(self.pid).stats.user_ns += ns;
    }

    /// mmap an anonymous region of `pages` pages (`locked`: mlocked). Fails (ENOMEM) as
    /// __vm_enough_memory() does under the default overcommit heuristic
    /// (vm.overcommit_memory = 0, OVERCOMMIT_GUESS): a single mapping larger than RAM + swap
    /// is refused.
    pub fn mmap_anon(&mut self, pages: u64, locked: bool) -> Result<Vma, Fault> {
        self.vm_enough_memory(pages)?;
        // vm_area_struct and anon_vma, charged to the task's group.
        let objcg = self.m.memcg_objcg(self.m.task(self.pid).memcg);
        self.m.kmem_charge(
            objcg,
            crate::kmem::KmemKind::SlabUnreclaimable,
            crate::kmem::VMA_SLAB_BYTES,
            false,
        )?;
        let v = self.m.mmap_anon(self.pid, pages as u32, locked);
        self.m.vmas.v[v as usize].objcg = objcg;
        self.m.khugepaged_enter_vma(self.pid, v);
        Ok(Vma(v))
    }

    /// mmap(MAP_SHARED | MAP_ANONYMOUS) of `pages` pages, or memfd_create(), ftruncate() and
    /// a shared mapping of the memfd, which the model does alike: a new shmem object of
    /// the kernel's internal tmpfs (shmem.rs), whose pages are charged to the tasks that
    /// fault them and which goes with its last unmap. shmem_acct_size() applies the
    /// overcommit heuristic as for a private mapping.
    pub fn mmap_shared_anon(&mut self, pages: u64) -> Result<FileMap, Fault> {
        self.vm_enough_memory(pages)?;
        let memcg = self.m.task(self.pid).memcg;
        let f = self.m.shmem_new_object(pages, memcg);
        self.m.file_mmap(self.pid, f, false);
        Ok(FileMap {
            file: f,
            exec: false,
        })
    }

    /// A user-space write of page `idx` through a shared mapping of a shmem file (faults it
    /// in if needed); a read is `touch_file()`.
    #[inline]
    pub fn write_shared(&mut self, map: FileMap, idx: u64) -> Result<(), Fault> {
        if !self.m.file_is_shmem(map.file) {
            return Err(Fault::Segv);
        }
        self.m.shmem_map_access(self.pid, map.file, idx, true)
    }

    /// __vm_enough_memory() under the default overcommit heuristic: a mapping of `pages`
    /// larger than RAM + swap is refused (ENOMEM).
    fn vm_enough_memory(&mut self, pages: u64) -> Result<(), Fault> {
        let (ram, swap) = (self.m.totalram_pages, self.m.total_swap_pages);
        let refused = if pages > ram + swap {
            Some(SyscallError::Overcommit {
                bytes: pages.saturating_mul(crate::PAGE_SIZE),
                ram: ram * crate::PAGE_SIZE,
                swap: swap * crate::PAGE_SIZE,
            })
        } else if pages > u32::MAX as u64 / 2 {
            Some(SyscallError::MappingTooLarge {
                bytes: pages.saturating_mul(crate::PAGE_SIZE),
            })
        } else {
            None
        };
        if let Some(e) = refused {
            self.m.task_mut(self.pid).error = Some(Box::new(e));
            return Err(Fault::Segv);
        }
        Ok(())
    }

    /// madvise(MADV_DONTNEED) of pages `start..end` of an anonymous mapping: their memory
    /// goes (a huge page partly inside stays, partly mapped, for the deferred split).
    pub fn madvise_dontneed(&mut self, vma: Vma, start: u64, end: u64) {
        let len = self.m.vmas.v[vma.0 as usize].ptes.len() as u64;
        self.m
            .madvise_dontneed(vma.0, start.min(len) as u32, end.min(len) as u32);
    }

    /// What the task writes into the pages of `vma` (the workloads' `--data`), which is what
    /// zswap compresses.
    pub fn set_page_data(&mut self, vma: Vma, data: crate::zswap::PageData) {
        self.m.vmas.v[vma.0 as usize].data = data;
    }

    /// madvise(MADV_HUGEPAGE or MADV_NOHUGEPAGE) over a whole anonymous mapping: the
    /// mapping's VM_HUGEPAGE or VM_NOHUGEPAGE, which later faults' THP decisions read
    /// (huge_memory.rs).
    pub fn madvise_huge(&mut self, vma: Vma, advice: crate::huge_memory::HugeAdvice) {
        if let Some(v) = self.m.vmas.v.get_mut(vma.0 as usize) {
            v.huge = advice;
            // hugepage_madvise(): MADV_HUGEPAGE registers the task with khugepaged.
            if advice == crate::huge_memory::HugeAdvice::Huge {
                self.m.khugepaged_enter_vma(self.pid, vma.0);
            }
        }
    }

    /// madvise(MADV_HUGEPAGE or MADV_NOHUGEPAGE) over a whole shared mapping of a shmem
    /// file: the advice its later faults' huge page decisions read (shmem.rs). The model
    /// keeps it with the file, whose mappings all cover it.
    pub fn madvise_huge_shared(&mut self, map: FileMap, advice: crate::huge_memory::HugeAdvice) {
        if self.m.file_is_shmem(map.file) {
            self.m.files.v[map.file as usize].huge_advice = advice;
        }
    }

    /// clone(CLONE_THREAD): a new thread's kernel stack and task_struct, charged to the
    /// task's group. The thread's user stack is the caller's mapping to make. Segv: clone()
    /// failed for want of memory.
    pub fn clone_thread(&mut self) -> Result<(), Fault> {
        let objcg = self.m.memcg_objcg(self.m.task(self.pid).memcg);
        match self.m.kmem_thread_charge(objcg, false) {
            Ok(()) => {}
            // clone() fails (EAGAIN/ENOMEM); the caller sees Segv.
            Err(crate::memcontrol::ChargeError::NoMem) => {
                self.m.task_mut(self.pid).error = Some(Box::new(SyscallError::CloneNoMem));
                return Err(Fault::Segv);
            }
            Err(e) => return Err(e.into()),
        }
        let cpus = self.m.cfg.cpus.max(1);
        let home = self.m.current_cpu() as u32;
        let t = self.m.task_mut(self.pid);
        let cpu = (home + 1 + t.thread_seq % cpus) % cpus;
        t.thread_seq = t.thread_seq.wrapping_add(1);
        t.threads.push((objcg, cpu));
        self.m.spend_cpu(crate::kmem::CLONE_NS);
        Ok(())
    }

    /// One thread exits (the last one created); its kernel memory is freed.
    pub fn exit_thread(&mut self) {
        if let Some((objcg, cpu)) = self.m.task_mut(self.pid).threads.pop() {
            self.m.kmem_thread_exit(objcg, cpu);
        }
    }

    /// Path lookups that find nothing (stat() of names that do not exist): each leaves a
    /// negative dentry, charged to the task's group and reclaimable.
    pub fn lookup_negative(&mut self, n: u64) -> Result<(), Fault> {
        let memcg = self.m.task(self.pid).memcg;
        match self.m.kmem_neg_dentries(memcg, n) {
            // d_alloc() fails: the lookups return ENOMEM and leave nothing.
            Ok(()) | Err(crate::memcontrol::ChargeError::NoMem) => {}
            Err(e) => return Err(e.into()),
        }
        self.m.spend_cpu(n * crate::kmem::LOOKUP_NS);
        Ok(())
    }

    /// A user-space access to page `idx` of `vma` (faults it in if needed).
    #[inline]
    pub fn touch(&mut self, vma: Vma, idx: u64) -> Result<(), Fault> {
        self.m.touch_anon(self.pid, vma.0, idx as u32)
    }

    /// Fault in page `idx` from inside the kernel (mlock, MAP_POPULATE).
    pub fn populate(&mut self, vma: Vma, idx: u64) -> Result<(), Fault> {
        self.m.populate_anon(self.pid, vma.0, idx as u32)
    }

    /// Return from a system call that populated memory: pending memory.high work runs now.
    pub fn return_to_user(&mut self) -> Result<(), Fault> {
        if self.m.task(self.pid).nr_pages_over_high > 0 {
            self.m.mem_cgroup_handle_over_high(self.pid);
        }
        if self.m.task(self.pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }

    pub fn munmap(&mut self, vma: Vma) {
        self.m.munmap(vma.0)
    }

    /// mmap(PROT_READ [| PROT_EXEC], MAP_SHARED) of a whole file.
    pub fn mmap_file(&mut self, f: FileId, exec: bool) -> FileMap {
        self.m.file_mmap(self.pid, f.0, exec);
        FileMap { file: f.0, exec }
    }

    /// A user-space read of page `idx` through a file mapping (faults it in if needed).
    #[inline]
    pub fn touch_file(&mut self, map: FileMap, idx: u64) -> Result<(), Fault> {
        self.m.file_map_access(self.pid, map.file, idx)
    }

    /// munmap() of a file mapping.
    pub fn munmap_file(&mut self, map: FileMap) {
        let maps = &mut self.m.task_mut(self.pid).file_maps;
        if let Some(i) = maps.iter().position(|&m| m == (map.file, map.exec)) {
            maps.remove(i);
            self.m.file_munmap_shared(map.file, map.exec);
        }
    }

    /// Open (or create) a named file.
    pub fn open(&mut self, name: &str) -> FileId {
        let new = !self.m.files.by_name.contains_key(name);
        let f = self.m.file_open(name);
        if new {
            self.m.file_alloc_inode(f, self.m.task(self.pid).memcg);
        }
        FileId(f)
    }

    /// Create an unnamed temporary file (O_TMPFILE); it is deleted when the task exits.
    pub fn tmpfile(&mut self) -> FileId {
        let f = self.m.file_new(None);
        self.m.file_alloc_inode(f, self.m.task(self.pid).memcg);
        self.m.task_mut(self.pid).tmpfiles.push(f);
        FileId(f)
    }

    /// File size in pages.
    pub fn file_size(&self, f: FileId) -> u64 {
        self.m.file_size(f.0)
    }

    pub fn truncate(&mut self, f: FileId, pages: u64) {
        self.m.file_truncate(f.0, pages)
    }

    /// Grow a file to `pages` pages that are on disk but not in the page cache (a file
    /// written earlier, with the caches dropped since).
    pub fn extend_on_disk(&mut self, f: FileId, pages: u64) {
        self.m.file_extend_on_disk(f.0, pages)
    }

    /// A hint that page `idx` of `f` will be read soon (Machine::prefetch_file_page()); it
    /// changes nothing in the simulation.
    #[inline]
    pub fn prefetch_read(&self, f: FileId, idx: u64, stage: u8) {
        self.m.prefetch_file_page(f.0, idx, stage);
    }

    /// read() one page.
    pub fn read(&mut self, f: FileId, idx: u64) -> Result<(), Fault> {
        self.m.file_read(self.pid, f.0, idx)
    }

    /// write() one page.
    pub fn write(&mut self, f: FileId, idx: u64) -> Result<(), Fault> {
        self.m.file_write(self.pid, f.0, idx)
    }

    /// mmap page `idx` of a file shared, read or write it once, munmap it.
    pub fn fault_file(&mut self, f: FileId, idx: u64, write: bool) -> Result<(), Fault> {
        self.m.file_fault(self.pid, f.0, idx, write)
    }
}
