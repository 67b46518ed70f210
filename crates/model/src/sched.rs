//! Virtual time: the clock, the event queue, the simulated CPUs and the run loop.
//!
//! Events are ordered by (time, sequence number), so ties break in insertion order and a run
//! is a pure function of its inputs. A task runs in quanta: when its run event fires it takes
//! a free CPU (or waits for the earliest one), calls its program's `step` until the quantum
//! is used, it sleeps, holds or exits, and is rescheduled after the CPU and wait time it
//! consumed. kswapd and the flusher are event-driven kernel threads; kswapd runs one
//! balance_pgdat() priority step per event and does not occupy a simulated CPU.
//!
//! A task can sleep inside an allocation (reclaim_throttle() and folio_wait_writeback(),
//! vmscan.rs): the allocation fails with `Fault::Blocked`, the program returns, and the task
//! is not run again until the sleep's timeout or a wakeup, whichever comes first; a wakeup
//! supersedes the timeout's run event through the task's generation.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::machine::Machine;
use crate::program::{Pid, Step, TaskOutcome};
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
}

/// The context currently executing, to which time is charged.
#[derive(Clone, Debug)]
pub struct ExecCtx {
    pub pid: Option<Pid>,
    pub cpu: u32,
    pub start: u64,
    pub cpu_ns: u64,
    pub wait_ns: u64,
}

pub struct Sched {
    pub clock: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    /// When each CPU becomes free.
    pub cpu_free: Vec<u64>,
    /// Events processed so far.
    pub nr_events: u64,
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
            nr_events: 0,
        }
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
        match ev {
            Event::TaskRun(pid, gen) => self.run_task(pid, gen),
            Event::Kswapd(gen) => {
                if gen != self.kswapd.gen {
                    return;
                }
                self.kswapd_end_throttle();
                self.cur = Some(ExecCtx {
                    pid: None,
                    cpu: 0,
                    start: t,
                    cpu_ns: 0,
                    wait_ns: 0,
                });
                let more = self.kswapd_step();
                let ctx = self.cur.take().expect("kswapd context");
                self.kswapd.cpu_ns += ctx.cpu_ns;
                if let Some(sleep) = more {
                    let next = t + (ctx.cpu_ns + ctx.wait_ns).max(1_000) + sleep;
                    self.sched.push(next, Event::Kswapd(self.kswapd.gen));
                }
            }
            Event::Flusher => self.flusher_run(),
            Event::FlusherKick => self.flusher_kick(),
            Event::FlusherWb(wb) => self.flusher_wb(wb),
            Event::WritebackDone(id) => self.writeback_done(id),
            Event::SwapWritebackDone(id) => self.swap_writeback_done(id),
        }
        if !self.dying_release.is_empty() {
            self.release_dying_memcgs();
        }
        self.after_step_check();
    }

    fn run_task(&mut self, pid: Pid, gen: u64) {
        let t = self.sched.clock;
        {
            let task = self.task(pid);
            if task.gen != gen || task.state != TaskState::Runnable {
                return;
            }
        }
        self.end_block(pid);
        if self.task(pid).frozen {
            self.task_mut(pid).parked = true;
            return;
        }
        // Take a free CPU: the last one if free, else the lowest free; else wait for the
        // earliest to free up.
        let last = self.task(pid).cpu as usize;
        let cpu = if self.sched.cpu_free[last] <= t {
            last
        } else if let Some(c) =
            (0..self.sched.cpu_free.len()).find(|&c| self.sched.cpu_free[c] <= t)
        {
            c
        } else {
            let (c, &free_at) = self
                .sched
                .cpu_free
                .iter()
                .enumerate()
                .min_by_key(|(i, f)| (**f, *i))
                .expect("at least one CPU");
            let _ = c;
            self.sched.push(free_at, Event::TaskRun(pid, gen));
            return;
        };
        self.task_mut(pid).cpu = cpu as u32;
        let Some(mut prog) = self.task_mut(pid).program.take() else {
            return;
        };
        self.cur = Some(ExecCtx {
            pid: Some(pid),
            cpu: cpu as u32,
            start: t,
            cpu_ns: 0,
            wait_ns: 0,
        });
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
        self.sched.cpu_free[cpu] = t + ctx.cpu_ns;
        {
            let st = &mut self.task_mut(pid).stats;
            st.cpu_ns += ctx.cpu_ns;
        }
        let end = t + ctx.cpu_ns + ctx.wait_ns;
        if self.task(pid).exited() {
            self.task_mut(pid).stats.end_ns = end;
            return;
        }
        if let Some(b) = self.task(pid).block {
            if matches!(outcome, Some(Step::Exit(_) | Step::Hold)) {
                // The program gave up the operation it slept in.
                self.end_block(pid);
            } else {
                self.task_mut(pid).program = Some(prog);
                self.sleep_blocked(pid, b, end);
                return;
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
        self.task_mut(pid).block = Some(Block {
            wait,
            from: None,
            woken: false,
        });
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
