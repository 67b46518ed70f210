//! Pressure stall information: kernel/sched/psi.c as of Linux 6.1.
//!
//! Every task carries the kernel's psi flags (TSK_IOWAIT, TSK_MEMSTALL, TSK_RUNNING,
//! TSK_MEMSTALL_RUNNING, TSK_ONCPU). Each change of a task's flags is applied, on the CPU the
//! task is on, to its group and every ancestor up to the system group (psi_group_change()):
//! the per-CPU task counts give the CPU's state mask (test_state(): SOME, FULL and NONIDLE
//! of io, memory and cpu, and memory FULL while the task on the CPU is in a memstall), and
//! the time since the last change is added to the states that were on (record_times()).
//! Readers and the averaging work fold the per-CPU times into one figure per state, each CPU
//! weighted by its non-idle jiffies (collect_percpu_times()), and the averaging work feeds
//! the 10 s, 60 s and 300 s averages every PSI_FREQ (2 s and one jiffy) with the load
//! average's fixed-point decay (update_averages(), calc_avgs()); it stops while the group
//! is idle and catches the missed periods up when it starts again.
//!
//! The model runs a task's quantum in one piece (sched.rs), so a quantum's changes are known
//! when it ends, with times up to its end, while other CPUs' events come later with earlier
//! times. Changes therefore wait in a queue ordered by time and are applied, with the
//! averaging work's runs between them, only up to the simulated clock: every change before
//! the clock is known by then, because a later event cannot emit a change before its own
//! time. Within a quantum the task's CPU time comes first (its memstall part last) and its
//! waits after, each wait as its kind of sleep (docs/FIDELITY.md).
//!
//! Triggers (psi_trigger_create(), psi_poll_work(), update_triggers()): a trigger watches one
//! state of its group over a window; while any watched state is on, a change schedules the
//! group's poll work one jiffy later; the work folds the per-CPU times into the poll
//! aggregator, keeps polling for ten update periods after the last growth, and every
//! window/10 compares the growth over the sliding window (the last window's growth
//! interpolated, window_update()) with the threshold, signalling at most once per window.
//! The psimon thread's own CPU time is not modelled.
//!
//! Simplified: no psi=0/cgroup.pressure switch, no irq pressure (6.1 needs
//! CONFIG_IRQ_TIME_ACCOUNTING, which Debian's kernel lacks); jiffies are the machine's HZ.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashSet};

use crate::memcontrol::HZ;

/// A pressure group (a cgroup's `struct psi_group`).
pub type PsiId = u32;
/// psi_system: the root cgroup's group and /proc/pressure's.
pub const PSI_SYSTEM: PsiId = 0;

/// Task flags (include/linux/psi_types.h).
pub const TSK_IOWAIT: u8 = 1 << 0;
pub const TSK_MEMSTALL: u8 = 1 << 1;
pub const TSK_RUNNING: u8 = 1 << 2;
pub const TSK_MEMSTALL_RUNNING: u8 = 1 << 3;
pub const TSK_ONCPU: u8 = 1 << 4;
/// The flags with a per-CPU task count (NR_IOWAIT .. NR_MEMSTALL_RUNNING).
const NR_TASK_COUNTS: usize = 4;

/// The states (enum psi_states), in the kernel's order.
pub const IO_SOME: usize = 0;
pub const IO_FULL: usize = 1;
pub const MEM_SOME: usize = 2;
pub const MEM_FULL: usize = 3;
pub const CPU_SOME: usize = 4;
pub const CPU_FULL: usize = 5;
const NONIDLE: usize = 6;
const NR_STATES: usize = 7;
/// PSI_ONCPU: the state-mask bit after the states.
const ONCPU_MASK: u32 = 1 << NR_STATES;

/// The resources a pressure file reports (enum psi_res).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Io = 0,
    Memory = 1,
    Cpu = 2,
}

/// The aggregator of the averaging work and readers (PSI_AVGS) and the trigger poller's
/// (PSI_POLL), each with its own view of the per-CPU times.
const AVGS: usize = 0;
const POLL: usize = 1;

/// Trigger windows (WINDOW_MIN_US, WINDOW_MAX_US in 6.1), in microseconds.
pub const WINDOW_MIN_US: u64 = 500_000;
pub const WINDOW_MAX_US: u64 = 10_000_000;
/// Trigger updates per window (UPDATES_PER_WINDOW).
const UPDATES_PER_WINDOW: u64 = 10;
/// A bound on the triggers open at once (each is an open fd).
pub const MAX_TRIGGERS: usize = 65_536;

/// Fixed-point arithmetic of the load average (include/linux/sched/loadavg.h).
const FSHIFT: u32 = 11;
const FIXED_1: u64 = 1 << FSHIFT;
/// 1/exp(2s/10s), 1/exp(2s/60s), 1/exp(2s/300s) in fixed point.
const EXP: [u64; 3] = [1677, 1981, 2034];

const NS_PER_JIFFY: u64 = 1_000_000_000 / HZ;
/// PSI_FREQ: 2 s and one jiffy, in ns (psi_period).
pub const PSI_PERIOD_NS: u64 = (2 * HZ + 1) * NS_PER_JIFFY;

/// A bound on the changes waiting to be applied before the queue is drained to the clock.
const MAX_PENDING: usize = 4096;

/// One CPU's view of a group (struct psi_group_cpu).
#[derive(Clone, Debug, Default)]
struct GroupCpu {
    tasks: [u32; NR_TASK_COUNTS],
    state_mask: u32,
    state_start: u64,
    times: [u64; NR_STATES],
    /// The times as the averaging aggregator last folded them (times_prev[PSI_AVGS]; the
    /// poller's are in [`Poll`]).
    times_prev: [u64; NR_STATES],
}

/// struct psi_group.
#[derive(Clone, Debug)]
struct Group {
    parent: Option<PsiId>,
    /// Per-CPU state, allocated at the group's first change (never resized).
    pcpu: Box<[GroupCpu]>,
    /// total[PSI_AVGS] (the poller's is in [`Poll`]).
    total: [u64; NR_STATES - 1],
    avg_total: [u64; NR_STATES - 1],
    /// The 10 s, 60 s and 300 s averages in fixed point: at most 100 % (100 << FSHIFT), so
    /// 32 bits hold them (the kernel's are unsigned long).
    avg: [[u32; 3]; NR_STATES - 1],
    avg_last_update: u64,
    avg_next_update: u64,
    /// When the pending averaging work runs, if one is pending.
    avgs_work: Option<u64>,
    /// rmdir'ed: freed once no queued change can reach it.
    dead: bool,
    /// The trigger side, allocated at the group's first trigger: until then its poller has
    /// folded nothing, so its times and totals are the zeros it starts from.
    poll: Option<Box<Poll>>,
}

/// The trigger side of a struct psi_group: the triggers, the poll aggregator's view of the
/// per-CPU times (times_prev[PSI_POLL], total[PSI_POLL]) and the poll work's state.
#[derive(Clone, Debug)]
struct Poll {
    /// total[PSI_POLL].
    total: [u64; NR_STATES - 1],
    /// Each CPU's times as the poller last folded them (times_prev[PSI_POLL]).
    times_prev: Vec<[u64; NR_STATES]>,
    /// The triggers on this group, newest first (list_add()).
    triggers: Vec<TriggerId>,
    nr_triggers: [u32; NR_STATES - 1],
    /// The states some trigger watches.
    poll_states: u32,
    poll_min_period: u64,
    polling_total: [u64; NR_STATES - 1],
    polling_until: u64,
    polling_next_update: u64,
    /// poll_scheduled: a poll work is armed (or about to be).
    poll_scheduled: bool,
    /// When the armed poll timer fires.
    poll_work: Option<u64>,
}

impl Group {
    fn new(parent: Option<PsiId>, now: u64) -> Group {
        Group {
            parent,
            pcpu: Box::default(),
            total: [0; NR_STATES - 1],
            avg_total: [0; NR_STATES - 1],
            avg: [[0; 3]; NR_STATES - 1],
            avg_last_update: now,
            avg_next_update: now + PSI_PERIOD_NS,
            avgs_work: None,
            dead: false,
            poll: None,
        }
    }

    /// The states some trigger watches.
    fn poll_states(&self) -> u32 {
        self.poll.as_ref().map_or(0, |p| p.poll_states)
    }

    /// The trigger side, made at the first trigger.
    fn poll_mut(&mut self, cpus: usize) -> &mut Poll {
        self.poll.get_or_insert_with(|| {
            Box::new(Poll {
                total: [0; NR_STATES - 1],
                times_prev: vec![[0; NR_STATES]; cpus],
                triggers: Vec::new(),
                nr_triggers: [0; NR_STATES - 1],
                poll_states: 0,
                poll_min_period: u64::from(u32::MAX),
                polling_total: [0; NR_STATES - 1],
                polling_until: 0,
                polling_next_update: u64::MAX,
                poll_scheduled: false,
                poll_work: None,
            })
        })
    }
}

/// A trigger, as an open pressure file holds it.
pub type TriggerId = u32;

/// struct psi_window: growth of a state over a sliding window.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    size: u64,
    start_time: u64,
    start_value: u64,
    prev_growth: u64,
}

impl Window {
    fn reset(&mut self, now: u64, value: u64, prev_growth: u64) {
        self.start_time = now;
        self.start_value = value;
        self.prev_growth = prev_growth;
    }

    /// window_update(): the growth since the window started, plus the share of the last
    /// window's growth that the sliding window still covers.
    fn update(&mut self, now: u64, value: u64) -> u64 {
        let elapsed = now - self.start_time;
        let mut growth = value - self.start_value;
        if elapsed > self.size {
            self.reset(now, value, growth);
        } else {
            let remaining = self.size - elapsed;
            growth += (u128::from(self.prev_growth) * u128::from(remaining) / u128::from(self.size))
                as u64;
        }
        growth
    }
}

/// struct psi_trigger.
#[derive(Clone, Debug)]
struct Trigger {
    group: PsiId,
    state: usize,
    threshold: u64,
    win: Window,
    /// An event waits for the poller (t->event).
    event: bool,
    last_event_time: u64,
    pending_event: bool,
    /// Events signalled so far.
    fired: u64,
}

/// A task's (or a kernel thread's) psi state: its flags, the group and CPU they are counted
/// on, and the time of its last change (a task's changes are applied in its own order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PsiTask {
    /// Which thread: a task's index, or [`KTHREAD`] numbers after them.
    pub id: u32,
    pub group: PsiId,
    pub flags: u8,
    pub cpu: u32,
    pub last: u64,
}

impl PsiTask {
    pub fn new(id: u32, group: PsiId, cpu: u32, now: u64) -> PsiTask {
        PsiTask {
            id,
            group,
            flags: 0,
            cpu,
            last: now,
        }
    }
}

/// The id of kswapd's [`PsiTask`].
pub const KTHREAD: u32 = u32::MAX;

/// A queued change: at `time` (then `seq`), on `cpu`, clear and set flags of thread `task`
/// of `group`, whose flags are `after` once it is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Change {
    time: u64,
    seq: u64,
    task: u32,
    cpu: u32,
    group: PsiId,
    clear: u8,
    set: u8,
    after: u8,
}

/// What a thread's queued change leaves it with: (time, group, cpu, flags after).
type Queued = (u64, PsiId, u32, u8);

/// The kind of a wait inside a quantum (what the task sleeps on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// io_schedule(): TSK_IOWAIT.
    Io,
    /// An I/O wait inside a memstall section (a refault's read, reclaim's I/O).
    IoMemstall,
    /// A sleep inside a memstall section that is not I/O (memory.high throttling).
    Memstall,
}

impl Stall {
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The flags of a task asleep in this wait.
    pub fn flags(self) -> u8 {
        match self {
            Stall::Io => TSK_IOWAIT,
            Stall::IoMemstall => TSK_IOWAIT | TSK_MEMSTALL,
            Stall::Memstall => TSK_MEMSTALL,
        }
    }

    /// An I/O wait for a page, a memstall too if the page refaults from the workingset.
    pub fn io(workingset: bool) -> Stall {
        if workingset {
            Stall::IoMemstall
        } else {
            Stall::Io
        }
    }

    /// The same wait made inside a memstall section.
    pub fn in_memstall(self) -> Stall {
        match self {
            Stall::Io => Stall::IoMemstall,
            s => s,
        }
    }

    pub const ALL: [Stall; 3] = [Stall::Io, Stall::IoMemstall, Stall::Memstall];
}

/// All pressure groups and the changes waiting to be applied to them.
pub struct Psi {
    groups: Vec<Option<Group>>,
    free_ids: Vec<PsiId>,
    cpus: usize,
    /// The task on each CPU is in a memstall (cpu_curr(cpu)->in_memstall).
    curr_memstall: Vec<bool>,
    pending: BinaryHeap<Reverse<Change>>,
    /// The `seq` of changes still in `pending` that a task's exit dropped: skipped when they
    /// come out of the queue, so an exit costs what the task queued, not the whole queue.
    cancelled: HashSet<u64>,
    /// The changes still in `pending` by thread and `seq`, for an exit to find its thread's
    /// (taking memory per queued change, none per thread).
    queued: BTreeMap<(u32, u64), Queued>,
    /// The groups rmdir'ed and not yet freed (the kernel frees a psi_group with its cgroup;
    /// here a group waits until nothing queued can reach it).
    dead: Vec<PsiId>,
    /// The averaging work items pending: (when, group).
    works: BTreeSet<(u64, PsiId)>,
    seq: u64,
    /// Changes up to this time are applied.
    applied: u64,
    /// Task counts that would have gone below zero (psi_bug); the checker wants none.
    pub underflows: u64,
    /// For the checker: each thread's group, CPU and flags as of its last applied change
    /// (tasks by index, kswapd last).
    applied_flags: Vec<(PsiId, u32, u8)>,
    kthread_flags: (PsiId, u32, u8),
    triggers: Vec<Option<Trigger>>,
    free_triggers: Vec<TriggerId>,
    /// The armed poll timers: (when, group).
    polls: BTreeSet<(u64, PsiId)>,
}

fn test_state(tasks: &[u32; NR_TASK_COUNTS], s: usize, oncpu: bool) -> bool {
    let [iowait, memstall, running, memstall_running] = *tasks;
    match s {
        IO_SOME => iowait > 0,
        IO_FULL => iowait > 0 && running == 0,
        MEM_SOME => memstall > 0,
        MEM_FULL => memstall > 0 && running == memstall_running,
        CPU_SOME => running > u32::from(oncpu),
        CPU_FULL => running > 0 && !oncpu,
        NONIDLE => iowait > 0 || memstall > 0 || running > 0,
        _ => false,
    }
}

/// record_times(): the time since the CPU's last change goes to the states that were on.
fn record_times(gc: &mut GroupCpu, now: u64) {
    let delta = now.saturating_sub(gc.state_start);
    gc.state_start = gc.state_start.max(now);
    for s in 0..NR_STATES {
        if gc.state_mask & (1 << s) != 0 {
            gc.times[s] += delta;
        }
    }
}

/// calc_load(): one step of an exponentially decaying average in fixed point.
pub fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut newload = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        newload += FIXED_1 - 1;
    }
    newload / FIXED_1
}

/// fixed_power_int(): x^n in fixed point with FSHIFT fraction bits, rounding each step.
fn fixed_power_int(mut x: u64, mut n: u64) -> u64 {
    let mut result = FIXED_1;
    let half = 1 << (FSHIFT - 1);
    while n > 0 {
        if n & 1 != 0 {
            result = (result * x + half) >> FSHIFT;
        }
        n >>= 1;
        if n == 0 {
            break;
        }
        x = (x * x + half) >> FSHIFT;
    }
    result
}

/// calc_avgs(): zeroes for the missed periods, then the last period's share of stall.
pub fn calc_avgs(avg: &mut [u64; 3], missed_periods: u64, time: u64, period: u64) {
    if missed_periods > 0 {
        for (a, &e) in avg.iter_mut().zip(EXP.iter()) {
            *a = calc_load(*a, fixed_power_int(e, missed_periods), 0);
        }
    }
    let pct = time * 100 / period.max(1) * FIXED_1;
    for (a, &e) in avg.iter_mut().zip(EXP.iter()) {
        *a = calc_load(*a, e, pct);
    }
}

/// sscanf(buf, "some %u %u") or "full %u %u": the kind, threshold and window in µs. As
/// sscanf, a space in the format takes any run of white space (or none), the numbers are
/// decimal with an optional sign and wrap to 32 bits, and anything after them is ignored.
fn parse_trigger(text: &str) -> Option<(bool, u64, u64)> {
    let (full, rest) = if let Some(r) = text.strip_prefix("some") {
        (false, r)
    } else {
        (true, text.strip_prefix("full")?)
    };
    let mut rest = rest;
    let mut nums = [0u64; 2];
    for n in nums.iter_mut() {
        rest = rest.trim_start();
        let (neg, r) = match rest.as_bytes().first() {
            Some(b'-') => (true, &rest[1..]),
            Some(b'+') => (false, &rest[1..]),
            _ => (false, rest),
        };
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let mut v: u64 = 0;
        for b in r[..digits].bytes() {
            v = v.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
        }
        let v = if neg { v.wrapping_neg() } else { v };
        *n = u64::from(v as u32);
        rest = &r[digits..];
    }
    Some((full, nums[0], nums[1]))
}

/// An average as psi_show() prints it: LOAD_INT.LOAD_FRAC.
pub fn format_avg(avg: u64) -> String {
    let int = avg >> FSHIFT;
    let frac = ((avg & (FIXED_1 - 1)) * 100) >> FSHIFT;
    format!("{int}.{frac:02}")
}

impl Psi {
    pub fn new(cpus: u32, now: u64) -> Psi {
        Psi {
            groups: vec![Some(Group::new(None, now))],
            free_ids: Vec::new(),
            cpus: cpus as usize,
            curr_memstall: vec![false; cpus as usize],
            pending: BinaryHeap::new(),
            cancelled: HashSet::new(),
            queued: BTreeMap::new(),
            dead: Vec::new(),
            works: BTreeSet::new(),
            seq: 0,
            applied: now,
            underflows: 0,
            applied_flags: Vec::new(),
            kthread_flags: (PSI_SYSTEM, 0, 0),
            triggers: Vec::new(),
            free_triggers: Vec::new(),
            polls: BTreeSet::new(),
        }
    }

    fn group(&self, g: PsiId) -> &Group {
        self.groups[g as usize].as_ref().expect("live psi group")
    }

    fn group_mut(&mut self, g: PsiId) -> &mut Group {
        self.groups[g as usize].as_mut().expect("live psi group")
    }

    /// The trigger side of a group that has had a trigger.
    fn poll(&mut self, g: PsiId) -> &mut Poll {
        Self::poll_in(&mut self.groups, g)
    }

    /// [`Self::poll`], borrowing only the groups.
    fn poll_in(groups: &mut [Option<Group>], g: PsiId) -> &mut Poll {
        groups[g as usize]
            .as_mut()
            .expect("live psi group")
            .poll
            .as_deref_mut()
            .expect("a group with triggers")
    }

    /// psi_cgroup_alloc(): a group for a new cgroup under `parent`.
    pub fn create(&mut self, parent: PsiId, now: u64) -> PsiId {
        self.reap_dead();
        let g = Group::new(Some(parent), now);
        match self.free_ids.pop() {
            Some(id) => {
                self.groups[id as usize] = Some(g);
                id
            }
            None => {
                self.groups.push(Some(g));
                (self.groups.len() - 1) as PsiId
            }
        }
    }

    /// psi_cgroup_free(): the cgroup is gone (it has no tasks). The group stays until the
    /// changes queued for it are applied.
    pub fn destroy(&mut self, g: PsiId) {
        debug_assert_ne!(g, PSI_SYSTEM);
        debug_assert!(
            self.group(g)
                .poll
                .as_ref()
                .is_none_or(|p| p.triggers.is_empty()),
            "triggers go with the files"
        );
        let grp = self.group_mut(g);
        if !std::mem::replace(&mut grp.dead, true) {
            self.dead.push(g);
        }
        self.reap_dead();
    }

    /// Free the dead groups once nothing queued can reach them, lowest id first (the ids are
    /// handed out again last freed first), with their pending work items.
    fn reap_dead(&mut self) {
        if self.dead.is_empty() || self.live_pending() != 0 {
            return;
        }
        // Only dropped changes are left in the queue.
        self.pending.clear();
        self.cancelled.clear();
        debug_assert!(self.queued.is_empty());
        let mut dead = std::mem::take(&mut self.dead);
        dead.sort_unstable();
        for &id in &dead {
            let g = self.groups[id as usize].take().expect("dead psi group");
            if let Some(at) = g.avgs_work {
                self.works.remove(&(at, id));
            }
            if let Some(at) = g.poll.and_then(|p| p.poll_work) {
                self.polls.remove(&(at, id));
            }
            self.free_ids.push(id);
        }
        dead.clear();
        self.dead = dead;
    }

    /// The changes queued and not dropped.
    fn live_pending(&self) -> usize {
        self.pending.len() - self.cancelled.len()
    }

    pub fn nr_groups(&self) -> usize {
        self.groups.iter().filter(|g| g.is_some()).count()
    }

    /// Queue a change of thread `task` at `time` on `(group, cpu)` from flags `before` to
    /// `after` there, numbered after the changes queued before it.
    fn push(&mut self, task: u32, time: u64, (group, cpu): (PsiId, u32), before: u8, after: u8) {
        self.seq += 1;
        let seq = self.seq;
        self.queued.insert((task, seq), (time, group, cpu, after));
        self.pending.push(Reverse(Change {
            time,
            seq: self.seq,
            task,
            cpu,
            group,
            clear: before & !after,
            set: after & !before,
            after,
        }));
    }

    /// psi_task_change(): the task's flags become `flags` at `at` (or at its last change, if
    /// later: a task's changes keep their order).
    pub fn task_set(&mut self, t: &mut PsiTask, flags: u8, at: u64) {
        let at = at.max(t.last);
        t.last = at;
        if flags == t.flags {
            return;
        }
        self.push(t.id, at, (t.group, t.cpu), t.flags, flags);
        t.flags = flags;
    }

    /// The task runs on `cpu` from `at`: its counts move from the CPU it was on.
    pub fn task_migrate(&mut self, t: &mut PsiTask, cpu: u32, at: u64) {
        self.relocate(t, t.group, cpu, at);
    }

    /// cgroup_move_task(): the task's counts move to another group.
    pub fn task_move_group(&mut self, t: &mut PsiTask, group: PsiId, at: u64) {
        self.relocate(t, group, t.cpu, at);
    }

    /// The task's flags leave its (group, CPU) and are set on the new one at `at`.
    fn relocate(&mut self, t: &mut PsiTask, group: PsiId, cpu: u32, at: u64) {
        if (t.group, t.cpu) == (group, cpu) {
            return;
        }
        let at = at.max(t.last);
        t.last = at;
        if t.flags != 0 {
            self.push(t.id, at, (t.group, t.cpu), t.flags, 0);
            self.push(t.id, at, (group, cpu), 0, t.flags);
        }
        t.group = group;
        t.cpu = cpu;
    }

    /// The thread ends at `now` (killed): the changes its last run laid out after `now` are
    /// dropped, and it leaves the state it was in at `now`.
    pub fn task_cut(&mut self, t: &mut PsiTask, now: u64) {
        if t.last <= now {
            self.task_set(t, 0, now);
            return;
        }
        let applied = if t.id == KTHREAD {
            self.kthread_flags
        } else {
            self.applied_flags
                .get(t.id as usize)
                .copied()
                .unwrap_or((t.group, t.cpu, 0))
        };
        let mut state = applied;
        let mut last_seq = 0;
        let mut dropped = Vec::new();
        for (&(_, seq), &(time, group, cpu, after)) in
            self.queued.range((t.id, 0)..=(t.id, u64::MAX))
        {
            if time > now {
                dropped.push(seq);
            } else if seq > last_seq {
                last_seq = seq;
                state = (group, cpu, after);
            }
        }
        for seq in dropped {
            self.queued.remove(&(t.id, seq));
            self.cancelled.insert(seq);
        }
        let (group, cpu, flags) = state;
        t.flags = 0;
        t.last = now;
        t.group = group;
        t.cpu = cpu;
        if flags != 0 {
            self.push(t.id, now, (group, cpu), flags, 0);
        }
    }

    /// A thread (task or kswapd) is given `cpu` at `at`: its counts move there and it is on
    /// the CPU.
    pub fn dispatch(&mut self, t: &mut PsiTask, cpu: u32, at: u64) {
        self.task_migrate(t, cpu, at);
        self.task_set(t, TSK_RUNNING | TSK_ONCPU, at);
    }

    /// The run of a thread that began at `start` with context `c` is over: lay its CPU time
    /// (the memstall part last) and then its waits, each as its kind of sleep, on the
    /// timeline, and leave it with `end_flags` at the end.
    pub fn run_end(
        &mut self,
        t: &mut PsiTask,
        start: u64,
        c: &crate::sched::ExecCtx,
        end_flags: u8,
    ) {
        let memstall_cpu = c.memstall_cpu_ns
            + if c.in_memstall {
                c.cpu_ns - c.memstall_from
            } else {
                0
            };
        let mut at = start + (c.cpu_ns - memstall_cpu);
        if memstall_cpu > 0 {
            self.task_set(
                t,
                TSK_RUNNING | TSK_ONCPU | TSK_MEMSTALL | TSK_MEMSTALL_RUNNING,
                at,
            );
            at += memstall_cpu;
        }
        for s in Stall::ALL {
            let d = c.waits[s.index()];
            if d > 0 {
                self.task_set(t, s.flags(), at);
                at += d;
            }
        }
        debug_assert_eq!(at, start + c.cpu_ns + c.wait_ns, "waits add up");
        self.task_set(t, end_flags, start + c.cpu_ns + c.wait_ns);
    }

    /// Keep the queue bounded: apply what the clock has passed once it grows long.
    pub fn maybe_advance(&mut self, clock: u64) {
        if self.live_pending() > MAX_PENDING {
            self.advance(clock);
        }
    }

    /// Apply the queued changes up to `to`, running the averaging and poll work items due
    /// in between, in time order (at one time: changes, then averaging, then polling).
    pub fn advance(&mut self, to: u64) {
        loop {
            self.skip_cancelled();
            let change = self.pending.peek().map(|r| r.0.time).filter(|&t| t <= to);
            let avgs = self.works.first().copied().filter(|&(t, _)| t <= to);
            let poll = self.polls.first().copied().filter(|&(t, _)| t <= to);
            let work_time = match (avgs, poll) {
                (Some((a, _)), Some((p, _))) => Some(a.min(p)),
                (a, p) => a.or(p).map(|(t, _)| t),
            };
            match (change, work_time) {
                (Some(c), Some(w)) if c <= w => self.apply_next(),
                (Some(_), None) => self.apply_next(),
                (_, Some(w)) => match avgs {
                    Some((a, g)) if a == w => {
                        self.works.remove(&(a, g));
                        self.avgs_work(g, a);
                    }
                    _ => {
                        let (p, g) = poll.expect("a poll work is due");
                        self.polls.remove(&(p, g));
                        self.poll(g).poll_work = None;
                        self.poll_work(g, p);
                    }
                },
                (None, None) => break,
            }
        }
        self.applied = self.applied.max(to);
        self.reap_dead();
    }

    /// When the next trigger poll work runs, if one is armed.
    pub fn next_poll_work(&self) -> Option<u64> {
        self.polls.first().map(|&(t, _)| t)
    }

    /// Drop the dropped changes at the head of the queue.
    fn skip_cancelled(&mut self) {
        if self.cancelled.is_empty() {
            return;
        }
        while let Some(Reverse(c)) = self.pending.peek() {
            if !self.cancelled.remove(&c.seq) {
                break;
            }
            self.pending.pop();
        }
    }

    fn apply_next(&mut self) {
        let Reverse(c) = self.pending.pop().expect("a queued change");
        self.queued.remove(&(c.task, c.seq));
        let cpu = c.cpu as usize;
        let applied = (c.group, c.cpu, c.after);
        if c.task == KTHREAD {
            self.kthread_flags = applied;
        } else {
            let i = c.task as usize;
            if self.applied_flags.len() <= i {
                self.applied_flags.resize(i + 1, (PSI_SYSTEM, 0, 0));
            }
            self.applied_flags[i] = applied;
        }
        // in_memstall of the CPU's current task is set before the change is accounted.
        if c.after & TSK_ONCPU != 0 {
            self.curr_memstall[cpu] = c.after & TSK_MEMSTALL != 0;
        } else if c.clear & TSK_ONCPU != 0 {
            self.curr_memstall[cpu] = false;
        }
        let mut g = Some(c.group);
        let mut depth = 0;
        while let Some(id) = g {
            self.group_change(id, cpu, c.clear, c.set, c.time);
            g = self.group(id).parent;
            depth += 1;
            assert!(depth <= self.groups.len(), "psi group chain has a cycle");
        }
    }

    /// psi_group_change() on one group.
    fn group_change(&mut self, id: PsiId, cpu: usize, clear: u8, set: u8, now: u64) {
        let cpus = self.cpus;
        let curr_memstall = self.curr_memstall[cpu];
        let grp = self.groups[id as usize].as_mut().expect("live psi group");
        if grp.pcpu.is_empty() {
            grp.pcpu = vec![
                GroupCpu {
                    state_start: now,
                    ..GroupCpu::default()
                };
                cpus
            ]
            .into_boxed_slice();
        }
        let gc = &mut grp.pcpu[cpu];
        let mut state_mask = if clear & TSK_ONCPU != 0 {
            0
        } else if set & TSK_ONCPU != 0 {
            ONCPU_MASK
        } else {
            gc.state_mask & ONCPU_MASK
        };
        for t in 0..NR_TASK_COUNTS {
            if clear & (1 << t) != 0 {
                if gc.tasks[t] > 0 {
                    gc.tasks[t] -= 1;
                } else {
                    self.underflows += 1;
                }
            }
        }
        for t in 0..NR_TASK_COUNTS {
            if set & (1 << t) != 0 {
                gc.tasks[t] += 1;
            }
        }
        let oncpu = state_mask & ONCPU_MASK != 0;
        for s in 0..NR_STATES {
            if test_state(&gc.tasks, s, oncpu) {
                state_mask |= 1 << s;
            }
        }
        // A CPU busy reclaiming is a full memory stall whatever else is runnable.
        if oncpu && curr_memstall {
            state_mask |= 1 << MEM_FULL;
        }
        record_times(gc, now);
        gc.state_mask = state_mask;
        if grp.avgs_work.is_none() {
            let at = now + PSI_PERIOD_NS;
            grp.avgs_work = Some(at);
            self.works.insert((at, id));
        }
        if state_mask & grp.poll_states() != 0 {
            self.schedule_poll_work(id, now, 1, false);
        }
    }

    /// psi_schedule_poll_work(): arm the group's poll timer `delay` jiffies after `now`,
    /// unless one is already scheduled (or `force`, which re-arms it).
    fn schedule_poll_work(&mut self, id: PsiId, now: u64, delay: u64, force: bool) {
        let grp = self.poll(id);
        let was = std::mem::replace(&mut grp.poll_scheduled, true);
        if was && !force {
            return;
        }
        if grp.triggers.is_empty() {
            // No psimon thread: nothing to wake.
            grp.poll_scheduled = false;
            return;
        }
        let at = now + delay * NS_PER_JIFFY;
        if let Some(old) = grp.poll_work.replace(at) {
            self.polls.remove(&(old, id));
        }
        self.polls.insert((at, id));
    }

    /// psi_poll_work(): fold the poll aggregator's times; while watched states grow, keep
    /// polling (for ten update periods after the last growth) and update the triggers every
    /// poll_min_period.
    fn poll_work(&mut self, id: PsiId, now: u64) {
        let force = if now > self.poll(id).polling_until {
            self.poll(id).poll_scheduled = false;
            false
        } else {
            true
        };
        let changed = self.collect(id, POLL, now);
        let grp = self.poll(id);
        if changed & grp.poll_states != 0 {
            if now > grp.polling_until {
                self.init_triggers(id, now);
            }
            let grp = self.poll(id);
            grp.polling_until = now + grp.poll_min_period * UPDATES_PER_WINDOW;
        }
        let (until, next_update) = {
            let grp = self.poll(id);
            (grp.polling_until, grp.polling_next_update)
        };
        if now > until {
            self.poll(id).polling_next_update = u64::MAX;
            return;
        }
        if now >= next_update {
            let next = self.update_triggers(id, now);
            self.poll(id).polling_next_update = next;
        }
        let next = self.poll(id).polling_next_update;
        self.schedule_poll_work(id, now, (next - now) / NS_PER_JIFFY + 1, force);
    }

    /// init_triggers(): polling starts; every window starts now.
    fn init_triggers(&mut self, id: PsiId, now: u64) {
        let grp = Self::poll_in(&mut self.groups, id);
        for &t in &grp.triggers {
            let t = self.triggers[t as usize].as_mut().expect("live trigger");
            t.win.reset(now, grp.total[t.state], 0);
        }
        grp.polling_total = grp.total;
        grp.polling_next_update = now + grp.poll_min_period;
    }

    /// update_triggers(): compare each trigger's window growth with its threshold and
    /// signal, at most once per window. Returns when the next update is due.
    fn update_triggers(&mut self, id: PsiId, now: u64) -> u64 {
        let grp = Self::poll_in(&mut self.groups, id);
        let total = grp.total;
        let mut update_total = false;
        for &tid in &grp.triggers {
            let t = self.triggers[tid as usize].as_mut().expect("live trigger");
            let new_stall = grp.polling_total[t.state] != total[t.state];
            if !new_stall && !t.pending_event {
                continue;
            }
            if new_stall {
                update_total = true;
                let growth = t.win.update(now, total[t.state]);
                if !t.pending_event {
                    if growth < t.threshold {
                        continue;
                    }
                    t.pending_event = true;
                }
            }
            if now < t.last_event_time + t.win.size {
                continue;
            }
            t.event = true;
            t.fired += 1;
            t.last_event_time = now;
            t.pending_event = false;
        }
        if update_total {
            grp.polling_total = total;
        }
        now + grp.poll_min_period
    }

    /// psi_trigger_create(): parse `some|full THRESHOLD_US WINDOW_US` written to a pressure
    /// file of `res` and add the trigger to the group, at `now` (the queue applied up to it).
    pub fn trigger_create(
        &mut self,
        id: PsiId,
        res: Resource,
        text: &str,
        now: u64,
    ) -> Result<TriggerId, crate::Errno> {
        use crate::Errno;
        self.advance(now);
        let (full, threshold_us, window_us) = parse_trigger(text).ok_or(Errno::EINVAL)?;
        let state = res as usize * 2 + usize::from(full);
        if !(WINDOW_MIN_US..=WINDOW_MAX_US).contains(&window_us) {
            return Err(Errno::EINVAL);
        }
        if threshold_us == 0 || threshold_us > window_us {
            return Err(Errno::EINVAL);
        }
        let live = self.triggers.len() - self.free_triggers.len();
        if live >= MAX_TRIGGERS {
            return Err(Errno::ENOMEM);
        }
        let size = window_us * 1000;
        let mut win = Window {
            size,
            ..Window::default()
        };
        let cpus = self.cpus;
        win.reset(now, self.group_mut(id).poll_mut(cpus).total[state], 0);
        let t = Trigger {
            group: id,
            state,
            threshold: threshold_us * 1000,
            win,
            event: false,
            last_event_time: 0,
            pending_event: false,
            fired: 0,
        };
        let tid = match self.free_triggers.pop() {
            Some(tid) => {
                self.triggers[tid as usize] = Some(t);
                tid
            }
            None => {
                self.triggers.push(Some(t));
                (self.triggers.len() - 1) as TriggerId
            }
        };
        let grp = self.poll(id);
        grp.triggers.insert(0, tid);
        grp.poll_min_period = grp.poll_min_period.min(size / UPDATES_PER_WINDOW);
        grp.nr_triggers[state] += 1;
        grp.poll_states |= 1 << state;
        Ok(tid)
    }

    /// psi_trigger_destroy(): the fd holding the trigger is closed (or its cgroup removed).
    pub fn trigger_destroy(&mut self, tid: TriggerId, now: u64) {
        self.advance(now);
        let Some(t) = self.triggers.get_mut(tid as usize).and_then(Option::take) else {
            return;
        };
        self.free_triggers.push(tid);
        let id = t.group;
        let grp = Self::poll_in(&mut self.groups, id);
        grp.triggers.retain(|&x| x != tid);
        grp.nr_triggers[t.state] -= 1;
        if grp.nr_triggers[t.state] == 0 {
            grp.poll_states &= !(1 << t.state);
        }
        let mut period = u64::MAX;
        for &x in &grp.triggers {
            let w = self.triggers[x as usize]
                .as_ref()
                .expect("live trigger")
                .win
                .size;
            period = period.min(w / UPDATES_PER_WINDOW);
        }
        let grp = self.poll(id);
        grp.poll_min_period = period;
        if grp.poll_states == 0 {
            grp.polling_until = 0;
            grp.poll_scheduled = false;
            if let Some(at) = grp.poll_work.take() {
                self.polls.remove(&(at, id));
            }
        }
    }

    /// psi_trigger_poll() at `now`: whether an event was waiting (it is consumed).
    pub fn trigger_poll(&mut self, tid: TriggerId, now: u64) -> bool {
        self.advance(now);
        match self.triggers.get_mut(tid as usize).and_then(Option::as_mut) {
            Some(t) => std::mem::take(&mut t.event),
            None => false,
        }
    }

    /// How many events the trigger has signalled, and the time of the last one.
    pub fn trigger_events(&self, tid: TriggerId) -> Option<(u64, u64)> {
        self.triggers
            .get(tid as usize)
            .and_then(Option::as_ref)
            .map(|t| (t.fired, t.last_event_time))
    }

    /// get_recent_times() of every CPU and collect_percpu_times(): fold the per-CPU times
    /// into the group's totals for `agg`. Returns the states whose time grew.
    fn collect(&mut self, id: PsiId, agg: usize, now: u64) -> u32 {
        let grp = self.groups[id as usize].as_mut().expect("live psi group");
        let (totals, mut poll_prev) = if agg == AVGS {
            (&mut grp.total, None)
        } else {
            let p = grp
                .poll
                .as_deref_mut()
                .expect("a group that polls has triggers");
            (&mut p.total, Some(&mut p.times_prev))
        };
        let mut deltas = [0u128; NR_STATES - 1];
        let mut nonidle_total: u128 = 0;
        let mut changed = 0u32;
        for (cpu, gc) in grp.pcpu.iter_mut().enumerate() {
            let prev = match poll_prev.as_mut() {
                Some(p) => &mut p[cpu],
                None => &mut gc.times_prev,
            };
            let mut times = [0u64; NR_STATES];
            for (s, delta) in times.iter_mut().enumerate() {
                let mut t = gc.times[s];
                if gc.state_mask & (1 << s) != 0 {
                    t += now.saturating_sub(gc.state_start);
                }
                *delta = t - prev[s];
                prev[s] = t;
                if *delta > 0 {
                    changed |= 1 << s;
                }
            }
            let nonidle = u128::from(times[NONIDLE] / NS_PER_JIFFY);
            nonidle_total += nonidle;
            for (d, &t) in deltas.iter_mut().zip(&times[..NONIDLE]) {
                *d += u128::from(t) * nonidle;
            }
        }
        for (total, d) in totals.iter_mut().zip(deltas) {
            *total += (d / nonidle_total.max(1)) as u64;
        }
        changed
    }

    /// update_averages(): feed the periods since the last update into the averages.
    /// Returns when the next update is due.
    fn update_averages(&mut self, id: PsiId, now: u64) -> u64 {
        let grp = self.group_mut(id);
        let expires = grp.avg_next_update;
        let missed = if now - expires >= PSI_PERIOD_NS {
            (now - expires) / PSI_PERIOD_NS
        } else {
            0
        };
        let next = expires + (1 + missed) * PSI_PERIOD_NS;
        let period = now - (grp.avg_last_update + missed * PSI_PERIOD_NS);
        grp.avg_last_update = now;
        for s in 0..NONIDLE {
            let sample = (grp.total[s] - grp.avg_total[s]).min(period);
            grp.avg_total[s] += sample;
            let mut avg = grp.avg[s].map(u64::from);
            calc_avgs(&mut avg, missed, sample, period);
            grp.avg[s] = avg.map(|a| u32::try_from(a).unwrap_or(u32::MAX));
        }
        next
    }

    /// Update the averages if their period is over (psi_avgs_work() and psi_show()).
    fn update_if_due(&mut self, id: PsiId, now: u64) {
        if now >= self.group(id).avg_next_update {
            let next = self.update_averages(id, now);
            self.group_mut(id).avg_next_update = next;
        }
    }

    /// psi_avgs_work() at `now`: fold, update the averages when due, and run again at the
    /// next update while the group is not idle.
    fn avgs_work(&mut self, id: PsiId, now: u64) {
        if self.groups[id as usize].is_none() {
            return;
        }
        let changed = self.collect(id, AVGS, now);
        self.update_if_due(id, now);
        let grp = self.group_mut(id);
        grp.avgs_work = None;
        if changed & (1 << NONIDLE) != 0 {
            let at = now + ((grp.avg_next_update - now) / NS_PER_JIFFY + 1) * NS_PER_JIFFY;
            grp.avgs_work = Some(at);
            self.works.insert((at, id));
        }
    }

    /// psi_show(): the two lines of a pressure file at `now` (the queue applied up to it).
    pub fn show(&mut self, id: PsiId, res: Resource, now: u64) -> String {
        self.advance(now);
        self.collect(id, AVGS, now);
        self.update_if_due(id, now);
        let grp = self.group(id);
        let mut out = String::new();
        for full in 0..2 {
            let s = res as usize * 2 + full;
            // CPU FULL is undefined at the system level.
            let (avg, total) = if id == PSI_SYSTEM && res == Resource::Cpu && full == 1 {
                ([0; 3], 0)
            } else {
                (grp.avg[s].map(u64::from), grp.total[s] / 1000)
            };
            out.push_str(&format!(
                "{} avg10={} avg60={} avg300={} total={}\n",
                if full == 1 { "full" } else { "some" },
                format_avg(avg[0]),
                format_avg(avg[1]),
                format_avg(avg[2]),
                total
            ));
        }
        out
    }

    /// The group's stall time so far in ns (`total` of the averaging aggregator), after
    /// applying the queue up to `now`.
    pub fn total_ns(&mut self, id: PsiId, state: usize, now: u64) -> u64 {
        self.advance(now);
        self.collect(id, AVGS, now);
        self.group(id).total[state]
    }

    /// The checker: once the queue is applied up to `now`, every group's per-CPU counts are
    /// those of the threads counted in it, as of their last applied change.
    pub fn check_counts(&mut self, now: u64) -> Result<(), String> {
        self.advance(now);
        if self.underflows > 0 {
            return Err(format!("psi: {} task count underflows", self.underflows));
        }
        let mut want: Vec<Vec<[u32; NR_TASK_COUNTS]>> = self
            .groups
            .iter()
            .map(|_| vec![[0; NR_TASK_COUNTS]; self.cpus])
            .collect();
        for &(group, cpu, flags) in self.applied_flags.iter().chain([&self.kthread_flags]) {
            if flags == 0 {
                continue;
            }
            let mut g = Some(group);
            while let Some(id) = g {
                for (k, c) in want[id as usize][cpu as usize].iter_mut().enumerate() {
                    if flags & (1 << k) != 0 {
                        *c += 1;
                    }
                }
                g = self.groups[id as usize]
                    .as_ref()
                    .ok_or_else(|| format!("psi: a thread counts in freed group {id}"))?
                    .parent;
            }
        }
        for (id, grp) in self.groups.iter().enumerate() {
            let Some(grp) = grp else { continue };
            for (cpu, gc) in grp.pcpu.iter().enumerate() {
                if gc.tasks != want[id][cpu] {
                    return Err(format!(
                        "psi group {id} cpu {cpu}: counts {:?}, threads say {:?}",
                        gc.tasks, want[id][cpu]
                    ));
                }
            }
        }
        Ok(())
    }
}

impl crate::machine::Machine {
    /// psi_memstall_enter() of the running context: returns whether it already was in one
    /// (the kernel's nesting flag), for [`Self::psi_memstall_leave`].
    pub(crate) fn psi_memstall_enter(&mut self) -> bool {
        let Some(c) = self.cur.as_mut() else {
            return true;
        };
        if c.in_memstall {
            return true;
        }
        c.in_memstall = true;
        c.memstall_from = c.cpu_ns;
        false
    }

    /// psi_memstall_leave(): the CPU time since the section began was a memstall.
    pub(crate) fn psi_memstall_leave(&mut self, was: bool) {
        if was {
            return;
        }
        if let Some(c) = self.cur.as_mut() {
            c.memstall_cpu_ns += c.cpu_ns - c.memstall_from;
            c.in_memstall = false;
        }
    }

    /// The pressure groups and a task's psi state, borrowed together.
    pub(crate) fn task_psi(&mut self, pid: crate::program::Pid) -> (&mut Psi, &mut PsiTask) {
        let t = &mut self.tasks[(pid.0 - crate::task::FIRST_PID) as usize];
        (&mut self.psi, &mut t.psi)
    }

    /// A task killed from outside its run stops stalling now, whatever its last run laid
    /// out after now.
    pub(crate) fn psi_task_exit(&mut self, pid: crate::program::Pid) {
        let now = self.now();
        let (psi, t) = self.task_psi(pid);
        psi.task_cut(t, now);
    }

    /// A task's psi flags become `flags` at `at`.
    pub(crate) fn psi_task_set(&mut self, pid: crate::program::Pid, flags: u8, at: u64) {
        let clock = self.sched.clock;
        let (psi, t) = self.task_psi(pid);
        psi.task_set(t, flags, at);
        psi.maybe_advance(clock);
    }

    /// cgroup_move_task(): the task's pressure now counts in `group`.
    pub fn psi_move_task(&mut self, pid: crate::program::Pid, group: PsiId) {
        let now = self.now();
        let (psi, t) = self.task_psi(pid);
        psi.task_move_group(t, group, now);
    }

    /// A cgroup's pressure file (`memory.pressure`, `/proc/pressure/memory`, ...) now.
    pub fn psi_show(&mut self, group: PsiId, res: Resource) -> String {
        let now = self.sched.clock;
        self.psi.show(group, res, now)
    }

    /// psi_cgroup_alloc() for a new cgroup under the cgroup of `parent`.
    pub fn psi_group_create(&mut self, parent: PsiId) -> PsiId {
        let now = self.sched.clock;
        self.psi.create(parent, now)
    }

    /// psi_cgroup_free() of a removed cgroup.
    pub fn psi_group_destroy(&mut self, group: PsiId) {
        self.psi.destroy(group);
    }

    /// psi_trigger_create() for a write to a pressure file of `group` now.
    pub fn psi_trigger_create(
        &mut self,
        group: PsiId,
        res: Resource,
        text: &str,
    ) -> Result<TriggerId, crate::Errno> {
        let now = self.sched.clock;
        self.psi.trigger_create(group, res, text, now)
    }

    /// psi_trigger_destroy(): the file holding the trigger is released now.
    pub fn psi_trigger_destroy(&mut self, t: TriggerId) {
        let now = self.sched.clock;
        self.psi.trigger_destroy(t, now);
    }

    /// psi_trigger_poll() now: whether an event was waiting (consumed).
    pub fn psi_trigger_poll(&mut self, t: TriggerId) -> bool {
        let now = self.sched.clock;
        self.psi.trigger_poll(t, now)
    }

    /// The checker's view: the per-CPU counts agree with every thread's flags.
    pub fn psi_check(&mut self) -> Result<(), String> {
        let now = self.sched.clock;
        self.psi.check_counts(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    #[test]
    fn calc_load_matches_the_formula_by_hand() {
        // 100% for one period from 0: (0 * 1677 + 204800 * 371 + 2047) / 2048 = 37100.
        assert_eq!(calc_load(0, 1677, 100 * FIXED_1), 37_100);
        // Decaying with no activity: 37100 * 1677 / 2048, rounded down.
        assert_eq!(calc_load(37_100, 1677, 0), 30_379);
        // 37100 >> 11 = 18; (37100 & 2047) * 100 >> 11 = 236 * 100 / 2048 = 11.
        assert_eq!(format_avg(37_100), "18.11");
        // fixed_power_int(1677, 2): (1677 * 1677 + 1024) >> 11 = 1373.
        assert_eq!(fixed_power_int(1677, 2), 1373);
        assert_eq!(fixed_power_int(1677, 0), FIXED_1);
        assert_eq!(fixed_power_int(1677, 1), 1677);
    }

    #[test]
    fn avg10_after_one_full_period_is_18_percent() {
        // A whole period of stall: pct = 100 * 2048; avg10 = 1 - e^-0.2 = 18.1%.
        let mut avg = [0; 3];
        calc_avgs(&mut avg, 0, PSI_PERIOD_NS, PSI_PERIOD_NS);
        assert_eq!(format_avg(avg[0]), "18.11");
        // avg60: (204800 * (2048 - 1981) + 2047) / 2048 = 6700 -> 3.27; avg300 likewise.
        assert_eq!(avg[1], 6_700);
        assert_eq!(format_avg(avg[1]), "3.27");
        assert_eq!(avg[2], 1_400);
        assert_eq!(format_avg(avg[2]), "0.68");
        // Half a period: pct = 50 * 2048; (102400 * 371 + 2047) / 2048 = 18550.
        let mut half = [0; 3];
        calc_avgs(&mut half, 0, PSI_PERIOD_NS / 2, PSI_PERIOD_NS);
        assert_eq!(half[0], 18_550);
    }

    #[test]
    fn a_full_stall_averages_at_most_100_percent() {
        let mut avg = [0u64; 3];
        for _ in 0..2000 {
            calc_avgs(&mut avg, 0, PSI_PERIOD_NS, PSI_PERIOD_NS);
        }
        assert!(avg.iter().all(|&a| a <= 100 << FSHIFT), "{avg:?}");
        assert_eq!(format_avg(avg[0]), "100.00");
    }

    #[test]
    fn missed_periods_decay_with_the_power_of_exp() {
        let mut a = [37_100, 6_700, 1_400];
        calc_avgs(&mut a, 3, 0, PSI_PERIOD_NS);
        let p = fixed_power_int(1677, 3);
        let once = calc_load(37_100, p, 0);
        assert_eq!(a[0], calc_load(once, 1677, 0));
    }

    /// One task on one CPU: running 1 s, reclaiming 1 s, asleep on I/O in a refault 1 s.
    #[test]
    fn one_task_some_and_full() {
        let mut p = Psi::new(2, 0);
        let a = p.create(PSI_SYSTEM, 0);
        let mut t = PsiTask::new(0, a, 0, 0);
        p.task_set(&mut t, TSK_RUNNING | TSK_ONCPU, 0);
        let ms = TSK_MEMSTALL | TSK_MEMSTALL_RUNNING;
        p.task_set(&mut t, TSK_RUNNING | TSK_ONCPU | ms, S);
        p.task_set(&mut t, TSK_IOWAIT | TSK_MEMSTALL, 2 * S);
        p.task_set(&mut t, TSK_RUNNING | TSK_ONCPU, 3 * S);
        p.advance(4 * S);
        assert_eq!(p.total_ns(a, MEM_SOME, 4 * S), 2 * S);
        assert_eq!(p.total_ns(a, MEM_FULL, 4 * S), 2 * S);
        assert_eq!(p.total_ns(a, IO_SOME, 4 * S), S);
        assert_eq!(p.total_ns(a, IO_FULL, 4 * S), S);
        assert_eq!(p.total_ns(a, CPU_SOME, 4 * S), 0);
        // The system group sees the same task.
        assert_eq!(p.total_ns(PSI_SYSTEM, MEM_SOME, 4 * S), 2 * S);
        assert_eq!(p.underflows, 0);
    }

    /// A reclaimer beside a productive task on another CPU: SOME counts, FULL does not on
    /// the productive CPU; the group's figure weights both CPUs by their non-idle time.
    #[test]
    fn two_cpus_weight_by_nonidle_time() {
        let mut p = Psi::new(2, 0);
        let a = p.create(PSI_SYSTEM, 0);
        let mut r = PsiTask::new(1, a, 0, 0);
        let mut w = PsiTask::new(2, a, 1, 0);
        let ms = TSK_MEMSTALL | TSK_MEMSTALL_RUNNING;
        p.task_set(&mut r, TSK_RUNNING | TSK_ONCPU | ms, 0);
        p.task_set(&mut w, TSK_RUNNING | TSK_ONCPU, 0);
        // Both CPUs non-idle for 1 s: CPU 0 is memstall SOME and FULL, CPU 1 nothing.
        // total = (1 s * 1000 jiffies + 0 * 1000) / 2000 = 0.5 s.
        assert_eq!(p.total_ns(a, MEM_SOME, S), S / 2);
        assert_eq!(p.total_ns(a, MEM_FULL, S), S / 2);
        // The reclaimer's CPU gets a second runnable task of the group: still FULL there
        // (the CPU is busy reclaiming), and CPU pressure SOME.
        let mut q = PsiTask::new(3, a, 0, 0);
        p.task_set(&mut q, TSK_RUNNING, S);
        assert_eq!(p.total_ns(a, MEM_FULL, 2 * S), S);
        assert_eq!(p.total_ns(a, CPU_SOME, 2 * S), S / 2);
    }

    #[test]
    fn averages_follow_the_worker_periods() {
        let mut p = Psi::new(1, 0);
        let a = p.create(PSI_SYSTEM, 0);
        let mut t = PsiTask::new(4, a, 0, 0);
        let ms = TSK_MEMSTALL | TSK_MEMSTALL_RUNNING;
        p.task_set(&mut t, TSK_RUNNING | TSK_ONCPU | ms, 0);
        // Full stall for 10 s. The worker runs at PSI_FREQ (2.001 s), then one jiffy after
        // each due update: 4.003, 6.004, 8.005 s; the next update (10.005 s) is not due at
        // the read. Four full periods: four steps at 100%.
        let out = p.show(a, Resource::Memory, 10 * S);
        let mut avg = [0u64; 3];
        for _ in 0..4 {
            calc_avgs(&mut avg, 0, 1, 1);
        }
        assert!(
            out.starts_with(&format!("some avg10={} ", format_avg(avg[0]))),
            "{out} vs {}",
            format_avg(avg[0])
        );
        // By hand: 37100, 67480, 92356, 112726 (each (a * 1677 + 204800 * 371 + 2047) /
        // 2048); 112726 >> 11 = 55, 86 * 100 >> 11 = 4.
        assert_eq!(avg[0], 112_726);
        assert_eq!(format_avg(avg[0]), "55.04");
        assert!(out.contains("total=10000000\nfull"), "{out}");
        // Idle afterwards: the worker stops; a read 60 s later catches the missed periods.
        p.task_set(&mut t, 0, 10 * S);
        let later = p.show(a, Resource::Memory, 70 * S);
        // 28 periods with no stall: 55% decays by 0.82^28 to 0.2%.
        assert!(later.starts_with("some avg10=0.20 "), "{later}");
        assert!(later.contains("total=10000000\n"), "{later}");
    }

    #[test]
    fn changes_apply_in_time_order_whatever_order_they_come_in() {
        let mut p = Psi::new(2, 0);
        let mut late = PsiTask::new(5, PSI_SYSTEM, 0, 0);
        let mut early = PsiTask::new(6, PSI_SYSTEM, 1, 0);
        // A quantum on CPU 0 reports its memstall first, up to 30 ms...
        p.task_set(&mut late, TSK_RUNNING | TSK_ONCPU, 0);
        p.task_set(&mut late, TSK_MEMSTALL, 10 * MS);
        p.task_set(&mut late, TSK_RUNNING, 30 * MS);
        // ...then CPU 1's event at 5 ms reports its own.
        p.task_set(&mut early, TSK_RUNNING | TSK_ONCPU, 5 * MS);
        p.task_set(&mut early, 0, 20 * MS);
        p.advance(40 * MS);
        assert_eq!(p.underflows, 0);
        p.check_counts(40 * MS).unwrap();
    }

    #[test]
    fn a_kill_cuts_the_rest_of_a_run() {
        let mut p = Psi::new(1, 0);
        let mut t = PsiTask::new(8, PSI_SYSTEM, 0, 0);
        // A run laid out to 3 s: 1 s on the CPU, then 2 s throttled in a memstall.
        p.task_set(&mut t, TSK_RUNNING | TSK_ONCPU, 0);
        p.task_set(&mut t, TSK_MEMSTALL, S);
        p.task_set(&mut t, TSK_RUNNING, 3 * S);
        // Killed at 2 s: the stall ends there.
        p.task_cut(&mut t, 2 * S);
        assert_eq!(p.total_ns(PSI_SYSTEM, MEM_SOME, 4 * S), S);
        p.check_counts(4 * S).unwrap();
    }

    #[test]
    fn moving_a_task_moves_its_counts() {
        let mut p = Psi::new(1, 0);
        let a = p.create(PSI_SYSTEM, 0);
        let b = p.create(PSI_SYSTEM, 0);
        let mut t = PsiTask::new(7, a, 0, 0);
        p.task_set(&mut t, TSK_RUNNING, 0);
        p.task_move_group(&mut t, b, MS);
        p.check_counts(2 * MS).unwrap();
        p.task_set(&mut t, 0, 3 * MS);
        p.destroy(a);
        p.advance(4 * MS);
        assert_eq!(p.nr_groups(), 2);
        let c = p.create(PSI_SYSTEM, 5 * MS);
        assert_eq!(c, a, "the freed id is reused");
    }

    #[test]
    fn dead_groups_are_freed_once_the_queue_is_empty_lowest_id_first() {
        let mut p = Psi::new(1, 0);
        let ids: Vec<PsiId> = (0..4).map(|_| p.create(PSI_SYSTEM, 0)).collect();
        let mut t = PsiTask::new(0, ids[0], 0, 0);
        p.task_set(&mut t, TSK_RUNNING, MS);
        // Removed in any order while a change is queued: none is freed yet.
        p.destroy(ids[3]);
        p.destroy(ids[1]);
        assert_eq!(p.nr_groups(), 5);
        p.advance(2 * MS);
        assert_eq!(p.nr_groups(), 3);
        // Freed in id order, handed out again last freed first.
        assert_eq!(p.create(PSI_SYSTEM, 3 * MS), ids[3]);
        assert_eq!(p.create(PSI_SYSTEM, 3 * MS), ids[1]);
        assert_eq!(p.create(PSI_SYSTEM, 3 * MS), ids[3] + 1);
    }

    #[test]
    fn a_kill_drops_only_the_killed_tasks_later_changes() {
        let mut p = Psi::new(1, 0);
        let mut a = PsiTask::new(0, PSI_SYSTEM, 0, 0);
        let mut b = PsiTask::new(1, PSI_SYSTEM, 0, 0);
        // a: memstall from 1 s to 3 s; b: memstall from 2 s to 4 s.
        p.task_set(&mut a, TSK_MEMSTALL, S);
        p.task_set(&mut b, TSK_MEMSTALL, 2 * S);
        p.task_set(&mut a, 0, 3 * S);
        p.task_set(&mut b, 0, 4 * S);
        // a killed at 1.5 s: its stall ends there, b's is kept whole.
        p.task_cut(&mut a, S + S / 2);
        // a's change at 3 s is dropped, one at 1.5 s queued in its place.
        assert_eq!(p.live_pending(), 4);
        p.maybe_advance(5 * S);
        // MEM_SOME: 1 s to 1.5 s, then 2 s to 4 s.
        assert_eq!(p.total_ns(PSI_SYSTEM, MEM_SOME, 5 * S), S / 2 + 2 * S);
        assert_eq!(p.live_pending(), 0);
        assert!(p.cancelled.is_empty(), "the dropped change left the queue");
        p.check_counts(5 * S).unwrap();
    }
    /// A trigger on 150 ms of memory SOME in a 1 s window, with a task stalled from 1 s.
    /// By hand: the stall's first change arms the poll 1 jiffy later (1.001 s), which
    /// starts polling and the window (growth so far 1 ms); updates follow every
    /// window/10 = 100 ms, re-armed 100 jiffies + 1 later: 1.102 s (growth 101 ms, under
    /// the threshold), 1.203 s (202 ms: event). The next event waits a window: the first
    /// update at or after 2.203 s is 1.203 + 10 * 0.101 = 2.213 s.
    #[test]
    fn trigger_fires_as_the_kernel_would() {
        let mut p = Psi::new(1, 0);
        let a = p.create(PSI_SYSTEM, 0);
        let tid = p
            .trigger_create(a, Resource::Memory, "some 150000 1000000", 0)
            .unwrap();
        let mut t = PsiTask::new(0, a, 0, 0);
        p.task_set(&mut t, TSK_RUNNING | TSK_ONCPU, 0);
        p.task_set(
            &mut t,
            TSK_RUNNING | TSK_ONCPU | TSK_MEMSTALL | TSK_MEMSTALL_RUNNING,
            S,
        );
        assert!(!p.trigger_poll(tid, S + 202 * MS));
        assert_eq!(p.next_poll_work(), Some(S + 203 * MS));
        assert!(p.trigger_poll(tid, S + 203 * MS));
        assert_eq!(p.trigger_events(tid), Some((1, S + 203 * MS)));
        // Consumed: no second event until a window has passed.
        assert!(!p.trigger_poll(tid, 2 * S + 212 * MS));
        assert!(p.trigger_poll(tid, 2 * S + 213 * MS));
        // The stall ends: polling goes on for ten updates after the last growth, then stops.
        p.task_set(&mut t, TSK_RUNNING | TSK_ONCPU, 3 * S);
        p.advance(5 * S);
        assert_eq!(p.next_poll_work(), None, "polling stops when nothing grows");
        // The growth seen at 2.314 s was held back a window, not dropped: it fires at the
        // first update after 3.213 s, 2.213 + 10 * 0.101 = 3.223 s.
        assert_eq!(p.trigger_events(tid), Some((3, 3 * S + 223 * MS)));
        assert!(p.trigger_poll(tid, 5 * S));
        assert!(!p.trigger_poll(tid, 5 * S));
        // A FULL trigger on the io file sees nothing of a memory stall.
        let io = p
            .trigger_create(a, Resource::Io, "full 100000 500000", 5 * S)
            .unwrap();
        p.task_set(
            &mut t,
            TSK_RUNNING | TSK_ONCPU | TSK_MEMSTALL | TSK_MEMSTALL_RUNNING,
            6 * S,
        );
        assert!(!p.trigger_poll(io, 8 * S));
        p.trigger_destroy(tid, 8 * S);
        p.trigger_destroy(io, 8 * S);
        p.advance(9 * S);
        assert_eq!(p.next_poll_work(), None, "no triggers, no polling");
        p.task_set(&mut t, 0, 9 * S);
        p.destroy(a);
    }

    #[test]
    fn trigger_writes_are_checked_as_psi_trigger_create_does() {
        use crate::Errno;
        let mut p = Psi::new(1, 0);
        let ok = |p: &mut Psi, s: &str| p.trigger_create(PSI_SYSTEM, Resource::Memory, s, 0);
        assert!(ok(&mut p, "some 150000 1000000").is_ok());
        assert!(ok(&mut p, "full 500000 500000\n").is_ok());
        // sscanf: a format space matches no space too, and the rest is ignored.
        assert!(ok(&mut p, "some150000 1000000 trailing").is_ok());
        assert!(ok(&mut p, "full 1 10000000").is_ok());
        for bad in [
            "some 0 1000000",
            "some 150000 499999",
            "some 150000 10000001",
            "full 1000001 1000000",
            "some 150000",
            "other 1 1000000",
            " some 150000 1000000",
            "",
            "some x 1000000",
            "some -1 1000000",
        ] {
            assert_eq!(ok(&mut p, bad), Err(Errno::EINVAL), "{bad:?}");
        }
        // The CPU file takes FULL triggers too (6.1 checks only state < PSI_NONIDLE).
        assert!(p
            .trigger_create(PSI_SYSTEM, Resource::Cpu, "full 100000 1000000", 0)
            .is_ok());
    }
}
