//! Virtual time: the clock, the event queue, the simulated CPUs and the run loop.
//!
//! Events are ordered by (time, sequence number), so ties break in insertion order and a run
//! is a pure function of its inputs.
//!
//! Threads share the simulated CPUs as under CFS (kernel/sched/fair.c), with one global run
//! queue: an event that runs a thread (a task's quantum, a kswapd step) joins the queue,
//! ordered by the thread's virtual runtime (the CPU time it has used; every thread has the
//! weight of nice 0), and the leftmost thread takes each free CPU, preferring the CPU it
//! last ran on. A thread that slept is placed no further back than the queue's
//! min_vruntime minus half the scheduling latency (place_entity() with
//! GENTLE_FAIR_SLEEPERS), so a sleeper gets that much credit and no more. A task runs in
//! quanta: it calls its program's `step` until the quantum is used, it sleeps, holds or
//! exits, and is queued again after the CPU and wait time it consumed. kswapd is a kernel
//! thread on the same CPUs: batches of its balance_pgdat() priority step for a quantum per
//! run, so allocators can outrun it and fall into direct reclaim. A task's global direct
//! reclaim gives its CPU up between priorities once its quantum is used (`Wait::Resched`,
//! which puts it back in the run queue at once rather than to sleep).
//!
//! Simplified (docs/FIDELITY.md): one run queue for all CPUs (ideal load balancing); no
//! preemption inside a quantum or a kswapd step, so a thread waits at most until a CPU's
//! current run ends; no wakeup preemption granularity.
//!
//! A task can sleep inside an allocation (reclaim_throttle() and folio_wait_writeback(),
//! vmscan.rs): the allocation fails with `Fault::Blocked`, the program returns, and the task
//! is not run again until the sleep's timeout or a wakeup, whichever comes first; a wakeup
//! supersedes the timeout's run event through the task's generation.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use crate::machine::Machine;
use crate::program::{Pid, Step, TaskOutcome};
use crate::psi;
use crate::task::{Block, TaskCtx, TaskState};
use crate::vmscan::Wait;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// Run a task (with the generation it was scheduled for).
    TaskRun(Pid, u64),
    /// A kswapd step (with the generation it was scheduled for).
    Kswapd(u64),
    /// The periodic flusher wakeup (dirty_writeback_interval).
    Flusher,
    /// wakeup_flusher_threads(): write everything.
    FlusherKick,
    /// Background writeback of one memcg's wb.
    FlusherWb(u16),
    WritebackDone(u32),
    /// A batch of swap writes completed (page_io.rs).
    SwapWritebackDone(u32),
    /// A CPU became free while threads wait in the run queue.
    Dispatch,
    /// kcompactd's proactive check (compaction.rs).
    Kcompactd,
    /// khugepaged's scan (khugepaged.rs).
    Khugepaged,
}

impl Event {
    /// Does this event run a thread on a CPU (through the run queue)?
    fn runs_thread(self) -> bool {
        matches!(self, Event::TaskRun(..) | Event::Kswapd(_)) || self.is_flusher()
    }

    /// Is this a work item of the flusher thread?
    fn is_flusher(self) -> bool {
        matches!(
            self,
            Event::Flusher | Event::FlusherKick | Event::FlusherWb(_)
        )
    }
}

/// The run queue: threads waiting for a CPU, leftmost (least virtual runtime) first.
#[derive(Default)]
pub struct RunQueue {
    queue: BTreeSet<(u64, u64, Event)>,
    seq: u64,
    /// cfs_rq->min_vruntime: never decreases.
    pub min_vruntime: u64,
    /// When the pending Dispatch event fires, if one is pending.
    dispatch_at: Option<u64>,
}

impl RunQueue {
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// The context currently executing, to which time is charged.
#[derive(Clone, Debug)]
pub struct ExecCtx {
    pub pid: Option<Pid>,
    pub cpu: u32,
    pub start: u64,
    pub cpu_ns: u64,
    pub wait_ns: u64,
    /// In a memstall section (psi_memstall_enter()), since `memstall_from` of its CPU time.
    pub in_memstall: bool,
    pub memstall_from: u64,
    /// CPU time spent in memstall sections.
    pub memstall_cpu_ns: u64,
    /// Waits by kind ([`crate::psi::Stall`]), which add up to `wait_ns`.
    pub waits: [u64; 3],
}

impl ExecCtx {
    /// A context that starts at `start` on `cpu`, having used nothing yet.
    pub fn new(pid: Option<Pid>, cpu: u32, start: u64) -> ExecCtx {
        ExecCtx {
            pid,
            cpu,
            start,
            cpu_ns: 0,
            wait_ns: 0,
            in_memstall: false,
            memstall_from: 0,
            memstall_cpu_ns: 0,
            waits: [0; 3],
        }
    }
}

pub struct Sched {
    pub clock: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    /// When each CPU becomes free.
    pub cpu_free: Vec<u64>,
    /// The task each CPU's current (or last) run belongs to, and when that run started
    /// (None for kswapd and the flusher, kernel threads that borrow the last mm lazily).
    pub cpu_task: Vec<Option<(Pid, u64)>>,
    /// Events processed so far.
    pub nr_events: u64,
    pub rq: RunQueue,
    /// Half of sysctl_sched_latency (6 ms × (1 + ilog2(CPUs)), CPUs capped at 8): the credit
    /// a waking thread gets.
    pub sleeper_credit_ns: u64,
}

/// Upper bound on program steps in one quantum (each step costs at least 1 ns).
const MAX_STEPS_PER_QUANTUM: u32 = 10_000_000;

impl Sched {
    pub fn new(cpus: u32) -> Sched {
        Sched {
            clock: 0,
            heap: BinaryHeap::new(),
            seq: 0,
            cpu_free: vec![0; cpus as usize],
            cpu_task: vec![None; cpus as usize],
            nr_events: 0,
            rq: RunQueue::default(),
            sleeper_credit_ns: 6_000_000 * (1 + u64::from(cpus.clamp(1, 8).ilog2())) / 2,
        }
    }

    /// A free CPU at `now`: `last` if it is free, else the lowest free one.
    fn free_cpu(&self, now: u64, last: u32) -> Option<u32> {
        if self.cpu_free.get(last as usize).is_some_and(|&f| f <= now) {
            return Some(last);
        }
        (0..self.cpu_free.len() as u32).find(|&c| self.cpu_free[c as usize] <= now)
    }

    /// When the next CPU becomes free.
    fn earliest_free(&self) -> u64 {
        self.cpu_free
            .iter()
            .copied()
            .min()
            .expect("at least one CPU")
    }

    pub fn push(&mut self, at: u64, ev: Event) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    pub fn next_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|Reverse((t, _, e))| (t, e))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

impl Machine {
    /// Process events until virtual time would pass `until` or `stop` holds. Returns true if
    /// `stop` became true. The clock ends at `until` when time runs out.
    pub fn run_until(&mut self, until: u64, mut stop: impl FnMut(&Machine) -> bool) -> bool {
        loop {
            if stop(self) {
                return true;
            }
            match self.sched.next_time() {
                Some(t) if t <= until => {
                    self.step_event();
                }
                _ => {
                    self.sched.clock = self.sched.clock.max(until);
                    self.kswapd_release_freed(self.sched.clock);
                    return stop(self);
                }
            }
        }
    }

    /// Is there anything left that could make progress?
    pub fn has_pending_work(&self) -> bool {
        self.tasks.iter().any(|t| t.state == TaskState::Runnable)
    }

    /// Process one event.
    pub fn step_event(&mut self) {
        let Some((t, ev)) = self.sched.pop() else {
            return;
        };
        debug_assert!(t >= self.sched.clock, "time goes backwards");
        self.sched.clock = t;
        self.sched.nr_events += 1;
        self.kswapd_release_freed(t);
        self.device.retire(t);
        if let Some(d) = &mut self.swap_device {
            d.retire(t);
        }
        match ev {
            ev if ev.runs_thread() => {
                self.enqueue_thread(ev);
                self.dispatch();
            }
            Event::Dispatch => {
                if self.sched.rq.dispatch_at == Some(t) {
                    self.sched.rq.dispatch_at = None;
                }
                self.dispatch();
            }
            Event::WritebackDone(id) => self.writeback_done(id),
            Event::SwapWritebackDone(id) => self.swap_writeback_done(id),
            Event::Kcompactd => self.kcompactd_event(t),
            Event::Khugepaged => self.khugepaged_event(t),
            _ => unreachable!("threads run from the queue"),
        }
        if !self.dying_release.is_empty() {
            self.release_dying_memcgs();
        }
        self.after_step_check();
    }

    /// Is this thread's event still current (not superseded by a wakeup, the task alive)?
    fn thread_current(&self, ev: Event) -> bool {
        match ev {
            Event::TaskRun(pid, gen) => {
                let task = self.task(pid);
                task.gen == gen && task.state == TaskState::Runnable
            }
            Event::Kswapd(gen) => gen == self.kswapd.gen,
            ev => ev.is_flusher(),
        }
    }

    fn vruntime_mut(&mut self, ev: Event) -> &mut u64 {
        match ev {
            Event::TaskRun(pid, _) => &mut self.task_mut(pid).vruntime,
            Event::Kswapd(_) => &mut self.kswapd.vruntime,
            ev if ev.is_flusher() => &mut self.writeback.flusher_vruntime,
            _ => unreachable!("not a thread"),
        }
    }

    /// enqueue_entity(): a thread's event fired; it waits for a CPU in the run queue. A sleep
    /// it was in (in an allocation) is over now, and a frozen task parks instead.
    fn enqueue_thread(&mut self, ev: Event) {
        if !self.thread_current(ev) {
            return;
        }
        match ev {
            Event::TaskRun(pid, _) => {
                self.end_block(pid);
                let now = self.sched.clock;
                if self.task(pid).frozen {
                    self.task_mut(pid).parked = true;
                    self.psi_task_set(pid, 0, now);
                    return;
                }
                let flags = self.task(pid).psi.flags;
                if flags & psi::TSK_RUNNING == 0 {
                    // Woken: a sleep inside reclaim goes on as a runnable memstall.
                    self.psi_task_set(pid, wake_flags(flags), now);
                }
            }
            Event::Kswapd(_) => {
                self.kswapd_end_throttle();
                let flags = self.kswapd.psi.flags;
                if flags & psi::TSK_RUNNING == 0 {
                    let now = self.sched.clock;
                    self.psi
                        .task_set(&mut self.kswapd.psi, wake_flags(flags), now);
                }
            }
            _ => {}
        }
        let floor = self
            .sched
            .rq
            .min_vruntime
            .saturating_sub(self.sched.sleeper_credit_ns);
        let vr = self.vruntime_mut(ev);
        *vr = (*vr).max(floor);
        let vr = *vr;
        let rq = &mut self.sched.rq;
        rq.seq += 1;
        rq.queue.insert((vr, rq.seq, ev));
    }

    /// Give every free CPU to the leftmost waiting thread; when threads are left waiting,
    /// look again when the next CPU becomes free.
    fn dispatch(&mut self) {
        let now = self.sched.clock;
        loop {
            let Some(&(vr, seq, ev)) = self.sched.rq.queue.first() else {
                return;
            };
            if !self.thread_current(ev) {
                self.sched.rq.queue.remove(&(vr, seq, ev));
                continue;
            }
            let last = match ev {
                Event::TaskRun(pid, _) => self.task(pid).cpu,
                Event::Kswapd(_) => self.kswapd.cpu,
                _ => self.writeback.flusher_cpu,
            };
            let Some(cpu) = self.sched.free_cpu(now, last) else {
                let at = self.sched.earliest_free();
                if self.sched.rq.dispatch_at.is_none_or(|d| d > at) {
                    self.sched.rq.dispatch_at = Some(at);
                    self.sched.push(at, Event::Dispatch);
                }
                return;
            };
            self.sched.rq.queue.remove(&(vr, seq, ev));
            let rq = &mut self.sched.rq;
            rq.min_vruntime = rq.min_vruntime.max(vr);
            match ev {
                Event::TaskRun(pid, _) => {
                    let (psi, t) = self.task_psi(pid);
                    psi.dispatch(t, cpu, now);
                }
                Event::Kswapd(_) => {
                    self.psi.dispatch(&mut self.kswapd.psi, cpu, now);
                }
                _ => {}
            }
            self.sched.cpu_task[cpu as usize] = match ev {
                Event::TaskRun(pid, _) => Some((pid, now)),
                _ => None,
            };
            let used = match ev {
                Event::TaskRun(pid, _) => self.run_task(pid, cpu),
                Event::Kswapd(_) => self.run_kswapd(cpu),
                ev if ev.is_flusher() => self.run_flusher(ev, cpu),
                _ => unreachable!("not a thread"),
            };
            self.sched.cpu_free[cpu as usize] = now + used;
            *self.vruntime_mut(ev) += used;
        }
    }

    /// Is `pid` on a CPU other than the current context's at the current time (its mm
    /// loaded and not lazy, so a TLB flush of its pages must interrupt that CPU)?
    pub(crate) fn task_running_elsewhere(&self, pid: Pid) -> bool {
        let (me, now) = (self.current_cpu(), self.now());
        self.sched.cpu_task.iter().enumerate().any(|(cpu, run)| {
            cpu != me
                && run.is_some_and(|(p, start)| {
                    p == pid && start <= now && now < self.sched.cpu_free[cpu]
                })
        })
    }

    /// One balance_pgdat() priority step of kswapd on `cpu`. Returns the CPU time used.
    fn run_kswapd(&mut self, cpu: u32) -> u64 {
        let t = self.sched.clock;
        self.kswapd.cpu = cpu;
        self.cur = Some(ExecCtx::new(None, cpu, t));
        // balance_pgdat() runs inside psi_memstall_enter().
        self.psi_memstall_enter();
        self.kswapd.in_step = true;
        // kswapd's cond_resched() between batches gives the CPU up only once the tick has
        // found its slice used (need_resched): batches follow each other for a quantum, as a
        // task's steps do, unless one slept.
        let mut more = self.kswapd_step();
        for _ in 0..MAX_STEPS_PER_QUANTUM {
            let c = self.cur.as_ref().expect("kswapd context");
            if more != Some(0) || c.wait_ns > 0 || c.cpu_ns >= self.cfg.costs.quantum_ns {
                break;
            }
            more = self.kswapd_step();
        }
        self.kswapd.in_step = false;
        let ctx = self.cur.take().expect("kswapd context");
        self.kswapd.cpu_ns += ctx.cpu_ns;
        let end_flags = match more {
            Some(0) => psi::TSK_RUNNING | psi::TSK_MEMSTALL | psi::TSK_MEMSTALL_RUNNING,
            Some(_) => psi::TSK_MEMSTALL,
            None => 0,
        };
        self.psi.run_end(&mut self.kswapd.psi, t, &ctx, end_flags);
        if let Some(sleep) = more {
            let next = t + (ctx.cpu_ns + ctx.wait_ns).max(1_000) + sleep;
            self.sched.push(next, Event::Kswapd(self.kswapd.gen));
        }
        ctx.cpu_ns
    }

    /// One work item of the flusher (wb_workfn() on a kworker) on `cpu`: the periodic
    /// writeback, a wakeup_flusher_threads(), or one wb's background writeback. Returns the
    /// CPU time used (writepage_cost per page submitted).
    fn run_flusher(&mut self, ev: Event, cpu: u32) -> u64 {
        self.writeback.flusher_cpu = cpu;
        self.cur = Some(ExecCtx::new(None, cpu, self.sched.clock));
        match ev {
            Event::Flusher => self.flusher_run(),
            Event::FlusherKick => self.flusher_kick(),
            Event::FlusherWb(wb) => self.flusher_wb(wb),
            _ => unreachable!("not a flusher work item"),
        }
        let ctx = self.cur.take().expect("flusher context");
        self.writeback.flusher_cpu_ns += ctx.cpu_ns;
        ctx.cpu_ns
    }

    /// A task's quantum on `cpu`. Returns the CPU time used.
    fn run_task(&mut self, pid: Pid, cpu: u32) -> u64 {
        let t = self.sched.clock;
        let cpu = cpu as usize;
        self.task_mut(pid).cpu = cpu as u32;
        let Some(mut prog) = self.task_mut(pid).program.take() else {
            return 0;
        };
        self.cur = Some(ExecCtx::new(Some(pid), cpu as u32, t));
        let quantum_end = t + self.cfg.costs.quantum_ns;
        let mut outcome: Option<Step> = None;
        for _ in 0..MAX_STEPS_PER_QUANTUM {
            if self.task(pid).killed {
                break;
            }
            let before = self.now();
            let step = {
                let mut cx = TaskCtx {
                    m: self,
                    pid,
                    quantum_end,
                };
                prog.step(&mut cx)
            };
            if self.task(pid).killed {
                break;
            }
            if self.now() == before {
                self.spend_cpu(1);
            }
            if self.task(pid).block.is_some() {
                break;
            }
            match step {
                Step::Continue => {
                    if self.now() >= quantum_end {
                        break;
                    }
                }
                other => {
                    outcome = Some(other);
                    break;
                }
            }
        }
        let ctx = self.cur.take().expect("task context");
        let used = ctx.cpu_ns;
        let end_flags = if self.task(pid).exited() {
            0
        } else {
            match (self.task(pid).block, outcome) {
                (Some(b), _) if b.wait == Wait::Resched => {
                    psi::TSK_RUNNING | psi::TSK_MEMSTALL | psi::TSK_MEMSTALL_RUNNING
                }
                (Some(b), Some(Step::Continue) | None) => match b.wait {
                    Wait::PageWriteback(_) => psi::TSK_MEMSTALL | psi::TSK_IOWAIT,
                    _ => psi::TSK_MEMSTALL,
                },
                (_, Some(Step::Continue) | None) => psi::TSK_RUNNING,
                _ => 0,
            }
        };
        {
            let clock = self.sched.clock;
            let (psi, task) = self.task_psi(pid);
            psi.run_end(task, t, &ctx, end_flags);
            psi.maybe_advance(clock);
        }
        {
            let st = &mut self.task_mut(pid).stats;
            st.cpu_ns += ctx.cpu_ns;
        }
        let end = t + ctx.cpu_ns + ctx.wait_ns;
        if self.task(pid).exited() {
            self.task_mut(pid).stats.end_ns = end;
            return used;
        }
        if let Some(b) = self.task(pid).block {
            if matches!(outcome, Some(Step::Exit(_) | Step::Hold)) {
                // The program gave up the operation it slept in.
                self.end_block(pid);
            } else {
                self.task_mut(pid).program = Some(prog);
                self.sleep_blocked(pid, b, end);
                return used;
            }
        }
        match outcome {
            Some(Step::Exit(code)) => {
                self.sched.clock = self.sched.clock.max(t);
                self.exit_task(pid, TaskOutcome::Exited(code));
                self.task_mut(pid).stats.end_ns = end;
            }
            Some(Step::Hold) => {
                let task = self.task_mut(pid);
                task.state = TaskState::Holding;
                task.program = Some(prog);
            }
            Some(Step::Sleep(ns)) => {
                let task = self.task_mut(pid);
                task.program = Some(prog);
                let g = task.gen;
                self.sched.push(end + ns, Event::TaskRun(pid, g));
            }
            Some(Step::Continue) | None => {
                let task = self.task_mut(pid);
                task.program = Some(prog);
                let g = task.gen;
                self.sched.push(end, Event::TaskRun(pid, g));
            }
        }
        used
    }
}

impl Machine {
    /// The running task goes to sleep in its allocation; the allocation returns
    /// `Blocked` and the sleep begins when the task's step ends.
    pub(crate) fn block_current(&mut self, pid: Pid, wait: Wait) {
        debug_assert!(
            self.task(pid).block.is_none(),
            "a task sleeps once at a time"
        );
        // folio_wait_writeback() tests PG_writeback before it sleeps: a write that ended
        // while its page was still isolated in the reclaimer's batch (page_io.rs) leaves
        // nothing to wait for, and no wakeup would come.
        let written = match wait {
            Wait::PageWriteback(pfn) => !self.frames.test(pfn, crate::page_cgroup::pf::WRITEBACK),
            _ => false,
        };
        self.task_mut(pid).block = Some(Block {
            wait,
            from: None,
            woken: written,
        });
        if wait == Wait::Resched {
            // Not asleep: back in the run queue when the step ends.
            return;
        }
        self.reclaim_wait.sleepers.push(pid);
        if wait == Wait::Writeback {
            self.writeback_throttled_inc();
        }
    }

    /// The step that blocked has ended at `end`: the sleep begins, until its timeout or an
    /// earlier wakeup.
    fn sleep_blocked(&mut self, pid: Pid, mut b: Block, end: u64) {
        b.from = Some(end);
        let task = self.task_mut(pid);
        task.block = Some(b);
        let g = task.gen;
        if b.woken {
            self.sched.push(end, Event::TaskRun(pid, g));
        } else if let Some(timeout) = b.wait.timeout_ns() {
            self.sched.push(end + timeout, Event::TaskRun(pid, g));
        }
    }

    /// wake_up() of a task asleep in an allocation: it runs again at once (or when its
    /// sleep begins, if the step that blocked has not ended yet).
    pub(crate) fn wake_blocked(&mut self, pid: Pid) {
        let now = self.now();
        let task = self.task_mut(pid);
        let Some(b) = task.block.as_mut() else {
            return;
        };
        if b.woken {
            return;
        }
        b.woken = true;
        if let Some(from) = b.from {
            task.gen += 1;
            let g = task.gen;
            self.sched.push(from.max(now), Event::TaskRun(pid, g));
        }
    }

    /// The sleep is over (the task runs again, or exits): it leaves the wait queue, and the
    /// time asleep counts as direct-reclaim stall.
    pub(crate) fn end_block(&mut self, pid: Pid) {
        let Some(b) = self.task_mut(pid).block.take() else {
            return;
        };
        self.reclaim_wait.sleepers.retain(|&p| p != pid);
        if b.wait == Wait::Writeback {
            self.reclaim_wait.nr_writeback_throttled -= 1;
        }
        if let Some(from) = b.from {
            let slept = self.sched.clock.saturating_sub(from);
            self.task_mut(pid).stats.reclaim_ns += slept;
        }
    }
}

/// The psi flags of a thread woken from a sleep with `flags`: runnable, and still in its
/// memstall if it slept inside one (reclaim goes on when it runs).
fn wake_flags(flags: u8) -> u8 {
    if flags & psi::TSK_MEMSTALL != 0 {
        psi::TSK_RUNNING | psi::TSK_MEMSTALL | psi::TSK_MEMSTALL_RUNNING
    } else {
        psi::TSK_RUNNING
    }
}

#[cfg(test)]
mod tests {
    use crate::config::MachineConfig;
    use crate::memcontrol::ROOT_MEMCG;
    use crate::program::{Program, Step};
    use crate::task::{TaskCtx, TaskState, Vma};
    use crate::{Machine, Pid};

    /// Computes for `left` ns of CPU, 100 µs at a time, then exits.
    struct Spinner {
        left: u64,
    }

    impl Program for Spinner {
        fn name(&self) -> &str {
            "spinner"
        }
        fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
            while self.left > 0 && cx.has_time() {
                let ns = self.left.min(100_000);
                cx.compute(ns);
                self.left -= ns;
            }
            if self.left == 0 {
                Step::Exit(0)
            } else {
                Step::Continue
            }
        }
    }

    /// Touches `pages` of anon memory once, then exits.
    struct Toucher {
        pages: u64,
        next: u64,
        vma: Option<Vma>,
    }

    impl Toucher {
        fn new(pages: u64) -> Self {
            Toucher {
                pages,
                next: 0,
                vma: None,
            }
        }
    }

    impl Program for Toucher {
        fn name(&self) -> &str {
            "toucher"
        }
        fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
            let vma = match self.vma {
                Some(v) => v,
                None => match cx.mmap_anon(self.pages, false) {
                    Ok(v) => *self.vma.insert(v),
                    Err(_) => return Step::Exit(1),
                },
            };
            while self.next < self.pages && cx.has_time() {
                if cx.touch(vma, self.next).is_err() {
                    return Step::Continue;
                }
                self.next += 1;
            }
            if self.next < self.pages {
                Step::Continue
            } else {
                Step::Exit(0)
            }
        }
    }

    fn machine(cpus: u32, memory: &str, swap: &str) -> Machine {
        let mut cfg = MachineConfig::default();
        cfg.set("cpus", &cpus.to_string()).unwrap();
        cfg.set("memory", memory).unwrap();
        cfg.set("swap", swap).unwrap();
        cfg.set("swap_disk", "zram").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        m.check_invariants = true;
        m
    }

    fn run_all(m: &mut Machine, pids: &[Pid]) {
        let done = |m: &Machine| pids.iter().all(|&p| m.task(p).state != TaskState::Runnable);
        assert!(m.run_until(600_000_000_000, done), "tasks did not finish");
    }

    #[test]
    fn cpu_bound_tasks_share_one_cpu_in_turn() {
        let mut m = machine(1, "256M", "0");
        let pids: Vec<Pid> = (0..3)
            .map(|i| {
                let p = Box::new(Spinner { left: 50_000_000 });
                m.spawn(ROOT_MEMCG, format!("s{i}"), 0, p)
            })
            .collect();
        run_all(&mut m, &pids);
        // 150 ms of work on one CPU: each task ends in the last few quanta, none first.
        for &p in &pids {
            let st = &m.task(p).stats;
            assert_eq!(st.cpu_ns, 50_000_000);
            assert!(
                (147_000_000..=150_000_000).contains(&st.end_ns),
                "{p:?} ended at {} ns",
                st.end_ns
            );
        }
    }

    #[test]
    fn more_cpus_than_tasks_run_them_side_by_side() {
        let mut m = machine(2, "256M", "0");
        let pids: Vec<Pid> = (0..2)
            .map(|i| {
                let p = Box::new(Spinner { left: 20_000_000 });
                m.spawn(ROOT_MEMCG, format!("s{i}"), 0, p)
            })
            .collect();
        run_all(&mut m, &pids);
        for &p in &pids {
            assert_eq!(m.task(p).stats.end_ns, 20_000_000);
        }
    }

    #[test]
    fn a_sleeper_is_credited_at_most_half_the_latency() {
        // Two spinners on one CPU; a third thread that slept long comes back with no more
        // than the sleeper credit over them, so it cannot starve them for its whole sleep.
        let mut m = machine(1, "256M", "0");
        let credit = m.sched.sleeper_credit_ns;
        assert_eq!(credit, 3_000_000, "6 ms latency on one CPU, halved");
        let a = m.spawn(
            ROOT_MEMCG,
            "a".into(),
            0,
            Box::new(Spinner { left: 40_000_000 }),
        );
        let b = m.spawn(
            ROOT_MEMCG,
            "b".into(),
            0,
            Box::new(Spinner { left: 40_000_000 }),
        );
        m.run_until(20_000_000, |_| false);
        let c = m.spawn(
            ROOT_MEMCG,
            "c".into(),
            0,
            Box::new(Spinner { left: 10_000_000 }),
        );
        let min_vr = m.sched.rq.min_vruntime;
        assert!(min_vr >= 9_000_000, "min_vruntime {min_vr}");
        run_all(&mut m, &[a, b, c]);
        // c starts at min_vruntime (a new task gets no credit) and shares the CPU three ways:
        // its 10 ms take about 30 ms of wall time.
        let c_end = m.task(c).stats.end_ns;
        assert!(
            (45_000_000..=52_000_000).contains(&c_end),
            "c ended at {c_end}"
        );
    }

    #[test]
    fn kswapd_competes_for_the_cpu_with_the_allocator() {
        // One allocator overcommits RAM with swap on a synchronous device: on one CPU it
        // waits while kswapd reclaims; with a second CPU kswapd runs beside it.
        let elapsed = |cpus| {
            let mut m = machine(cpus, "64M", "256M");
            let pid = m.spawn(ROOT_MEMCG, "t".into(), 0, Box::new(Toucher::new(40_000)));
            run_all(&mut m, &[pid]);
            assert!(matches!(m.task(pid).state, TaskState::Exited(_)));
            let st = &m.task(pid).stats;
            (st.end_ns - st.start_ns, m.kswapd.cpu_ns)
        };
        let (one, ks1) = elapsed(1);
        let (two, ks2) = elapsed(2);
        assert!(
            ks1 > 1_000_000 && ks2 > 1_000_000,
            "kswapd used {ks1} and {ks2} ns"
        );
        assert!(one > two + ks1 / 4, "1 CPU: {one} ns, 2 CPUs: {two} ns");
    }

    #[test]
    fn kswapd_waits_for_the_tlb_flush_of_a_task_running_elsewhere() {
        // kswapd unmaps pages of an allocator that runs on the other CPU: the batch's TLB
        // flush interrupts that CPU and waits (ipi_cost). On one CPU the allocator is never
        // running while kswapd is, and the flush stays local.
        let run = |cpus, ipi: &str| {
            let mut m = machine(cpus, "64M", "256M");
            m.cfg.costs.ipi_ns = crate::units::parse_duration_ns(ipi).unwrap();
            let pid = m.spawn(ROOT_MEMCG, "t".into(), 0, Box::new(Toucher::new(40_000)));
            run_all(&mut m, &[pid]);
            (m.reclaim_wait.tlb_flush_ipis, m.kswapd.cpu_ns)
        };
        assert_eq!(run(1, "1ms").0, 0);
        let (ipis, cheap) = run(2, "0");
        assert!(ipis > 0, "no remote flush on 2 CPUs");
        let (_, dear) = run(2, "1ms");
        assert!(
            dear > cheap + 1_000_000,
            "kswapd CPU {cheap} ns, with 1 ms IPIs {dear} ns"
        );
    }
}
