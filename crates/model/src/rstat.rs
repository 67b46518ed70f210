//! How memcg statistics reach their readers (seed 003): three schemes behind one update and
//! one read interface, chosen with `machine stats=rstat|legacy|exact`.
//!
//! * `rstat` (the default; Linux 6.1): kernel/cgroup/rstat.c with mm/memcontrol.c's
//!   memcg_rstat_updated(), mem_cgroup_css_rstat_flush() and mem_cgroup_flush_stats().
//!   An update lands in a per-CPU delta of its group and puts the group (and the ancestors
//!   not yet there) on that CPU's updated tree (cgroup_rstat_updated()). A flush detaches the
//!   updated tree of each CPU and visits it children first, folding each group's per-CPU
//!   delta into its local and hierarchical counters and pushing the sum into its parent's
//!   pending deltas, which the parent folds when it is visited later in the same walk. Only
//!   groups with pending updates are visited. The kernel adds every item of a visited group;
//!   the model marks each per-CPU and pending delta's item when it is written and adds the
//!   marked ones only (the others are 0). 6.1 ratelimits flushing: every update adds its
//!   magnitude to a per-CPU count; each time that count passes MEMCG_CHARGE_BATCH (64) it adds
//!   count/64 to a global threshold (capped), and mem_cgroup_flush_stats() flushes the whole
//!   tree from the root only when the threshold exceeds the number of CPUs. A periodic worker
//!   flushes unconditionally every FLUSH_TIME (2 s), and mem_cgroup_flush_stats_delayed() (the
//!   refault path) flushes only when that worker is more than 2 × FLUSH_TIME late.
//! * `legacy` (5.2–5.12, the scheme rstat replaced): __mod_memcg_state() and
//!   __count_memcg_events() keep a per-CPU, per-group, per-item residue; when its magnitude
//!   exceeds 32 pages (5.10's MEMCG_CHARGE_BATCH) the residue is added to the group's local
//!   counter and to the hierarchical counter of the group and every ancestor. Reads never
//!   flush, so each counter lags by up to 32 × CPUs pages per group of its subtree.
//! * `exact`: every update reaches the group and all its ancestors at once (the model's
//!   reference; what rstat gives right after a full flush).
//!
//! The model always keeps the exact counters too (`Memcg::stats`): node statistics
//! (/proc/vmstat, /proc/meminfo), LRU list sizes and the invariant checker read those, as the
//! kernel's node counters and lru_zone_size are not rstat-aggregated. What the kernel reads
//! through memcg_page_state() / lruvec_page_state() — memory.stat, memory.numa_stat, v1
//! memory.stat and the root's usage_in_bytes, the refault distance's workingset size,
//! inactive_is_low(), the refault snapshot of prepare_scan_count(), lru_note_cost() and
//! mem_cgroup_wb_stats() — reads this module's view, flushed where 6.1 flushes.
//!
//! Simplifications (docs/FIDELITY.md): one set of counters stands for both the memcg and the
//! per-node lruvec copies the kernel keeps (one node; the lruvec copy batches separately in
//! 5.10); the periodic worker runs lazily, at the first update or read at or after its due
//! time, which is the same as running it on time since nothing observes the counters between;
//! under `legacy` the residues of a removed group never reach its ancestors (5.10 folded them
//! in mem_cgroup_free(), after grace periods and page references the model does not keep).

use crate::machine::Machine;
use crate::memcontrol::MemcgId;
use crate::stat::{Stat, NR_STATS};

/// The statistics scheme (`machine stats=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsScheme {
    /// Linux 6.1: rstat with the ratelimited flush and the 2 s periodic flusher.
    Rstat,
    /// Linux 5.10: per-CPU batches of 32 pages propagated upward when exceeded.
    Legacy,
    /// Every update applied to the group and its ancestors at once.
    Exact,
}

impl StatsScheme {
    /// The `stats=` names, in the order of the variants.
    pub const NAMES: [&'static str; 3] = ["rstat", "legacy", "exact"];

    /// The scheme's `stats=` name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The scheme a `stats=` name selects.
    pub fn from_name(name: &str) -> Option<StatsScheme> {
        [StatsScheme::Rstat, StatsScheme::Legacy, StatsScheme::Exact]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// FLUSH_TIME: the periodic flush worker's interval (2 s).
pub const FLUSH_TIME_NS: u64 = 2_000_000_000;
/// MEMCG_CHARGE_BATCH of 6.1, which scales the flush ratelimit.
pub const RSTAT_BATCH: u64 = 64;
/// MEMCG_CHARGE_BATCH of 5.10, the per-CPU statistics batch of the legacy scheme.
pub const LEGACY_BATCH: i64 = 32;

/// No link: not on an updated tree, or an empty child list.
const NONE: u16 = 0;
/// End of a child list, and the root's "on the tree" mark (memcg ids are never 0xffff).
const END: u16 = u16::MAX;

/// A group's pending deltas (one per statistic), allocated when a child first pushes one:
/// reads of a group without any see zeros; a write allocates them.
#[derive(Clone, Debug, Default)]
pub struct PendingDeltas(Option<Box<[i64; NR_STATS]>>);

/// What a group without pending deltas reads.
static NO_DELTAS: [i64; NR_STATS] = [0; NR_STATS];

impl std::ops::Deref for PendingDeltas {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        self.0.as_deref().unwrap_or(&NO_DELTAS)
    }
}

impl std::ops::DerefMut for PendingDeltas {
    fn deref_mut(&mut self) -> &mut [i64] {
        &mut self.0.get_or_insert_with(|| Box::new([0; NR_STATS]))[..]
    }
}

/// One group's statistics as a reader sees them (struct memcg_vmstats with its per-CPU part).
#[derive(Clone, Debug)]
pub struct MemcgVmstats {
    /// Hierarchical counters (memcg_vmstats.state / events; 5.10's vmstats / vmevents).
    pub state: [i64; NR_STATS],
    /// This group's own counters (state_local; 5.10's vmstats_local).
    pub local: [i64; NR_STATS],
    /// rstat: deltas that children pushed up during a flush and this group has not folded
    /// yet. legacy: residues stranded in removed descendants (never read; kept so the
    /// checker can account for every update). Allocated at the first push: a leaf group
    /// never has any.
    pub pending: PendingDeltas,
    /// Per-CPU deltas not yet folded (rstat: state − state_prev; legacy: the batch residue),
    /// CPU-major, allocated at the group's first update; after the ncpus × NR_STATS deltas,
    /// one word per CPU whose bit i is set when item i's delta on that CPU may be non-zero
    /// (a flush folds those items only, the others adding 0).
    pub percpu: Vec<i64>,
    /// rstat per-CPU tree links (updated_next, updated_children), allocated when the group
    /// first joins a tree.
    pub updated_next: Vec<u16>,
    pub updated_children: Vec<u16>,
    /// Bit c set: on CPU c's updated tree (CPUs 0-63; the update's fast path).
    on_tree: u64,
    /// Bit i set when `pending[i]` may be non-zero.
    pending_dirty: u64,
}

// The per-item masks hold every item.
const _: () = assert!(NR_STATS <= 64);

impl Default for MemcgVmstats {
    fn default() -> Self {
        MemcgVmstats {
            on_tree: 0,
            pending_dirty: 0,
            state: [0; NR_STATS],
            local: [0; NR_STATS],
            pending: PendingDeltas::default(),
            percpu: Vec::new(),
            updated_next: Vec::new(),
            updated_children: Vec::new(),
        }
    }
}

impl MemcgVmstats {
    /// Is the group on `cpu`'s updated tree?
    #[inline]
    fn is_on_tree(&self, cpu: usize) -> bool {
        if cpu < 64 {
            self.on_tree & (1 << cpu) != 0
        } else {
            !self.updated_next.is_empty() && self.updated_next[cpu] != NONE
        }
    }

    /// Set a group's link on `cpu`'s tree (NONE: off the tree).
    #[inline]
    fn set_next(&mut self, cpu: usize, next: u16) {
        self.updated_next[cpu] = next;
        if cpu < 64 {
            if next == NONE {
                self.on_tree &= !(1 << cpu);
            } else {
                self.on_tree |= 1 << cpu;
            }
        }
    }

    /// Whether every non-zero per-CPU delta and pending delta has its bit set (the
    /// invariant the flush relies on).
    pub fn dirty_masks_cover(&self) -> bool {
        let pending =
            (0..NR_STATS).all(|i| self.pending[i] == 0 || self.pending_dirty >> i & 1 != 0);
        let n = self.deltas_len();
        let percpu = self.percpu[..n]
            .iter()
            .enumerate()
            .all(|(k, &v)| v == 0 || self.percpu[n + k / NR_STATS] >> (k % NR_STATS) & 1 != 0);
        pending && percpu
    }

    /// The sum of this group's per-CPU deltas of one item.
    pub fn percpu_sum(&self, item: usize) -> i64 {
        self.percpu[..self.deltas_len()]
            .iter()
            .skip(item)
            .step_by(NR_STATS)
            .sum()
    }

    /// Where the per-CPU deltas end and the per-CPU dirty words begin.
    #[inline]
    fn deltas_len(&self) -> usize {
        self.percpu.len() / (NR_STATS + 1) * NR_STATS
    }

    /// Mark item `i` of `cpu`'s deltas as possibly non-zero.
    #[inline]
    fn mark_dirty(&mut self, cpu: usize, i: usize) {
        let k = self.deltas_len() + cpu;
        self.percpu[k] |= 1 << i;
    }

    /// Take `cpu`'s dirty word (all clear after).
    #[inline]
    fn take_dirty(&mut self, cpu: usize) -> u64 {
        let k = self.deltas_len() + cpu;
        std::mem::take(&mut self.percpu[k]) as u64
    }
}

/// What the statistics cost: the work each scheme does, for the seed 003 experiments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsWork {
    /// Statistic updates (mod_stat calls).
    pub updates: u64,
    /// rstat: groups linked onto a per-CPU updated tree (cgroup_rstat_updated()'s slow
    /// path). legacy: batches propagated upward.
    pub tree_links: u64,
    /// legacy: counters written while propagating batches (group × ancestors).
    pub propagated: u64,
    /// Flushes of the tree (rstat), periodic ones included.
    pub flushes: u64,
    /// (group, CPU) pairs a flush visited.
    pub flush_visits: u64,
    /// Reads of a statistics file (memory.stat, memory.numa_stat).
    pub reads: u64,
    /// (group, CPU) pairs a read-side sum would have visited for the same reads: the read
    /// group's whole subtree, dying groups included, on every CPU. The aggregation memcg
    /// used before the per-CPU batches (memory.stat summing per-CPU counters over
    /// for_each_mem_cgroup_tree()), counted under every scheme for comparison.
    pub read_sum_visits: u64,
}

/// The machine-wide statistics state.
#[derive(Clone, Debug)]
pub struct Rstat {
    pub scheme: StatsScheme,
    ncpus: usize,
    /// 6.1's per-CPU stats_updates.
    stats_updates: Vec<u64>,
    /// 6.1's stats_flush_threshold.
    flush_threshold: u64,
    /// 6.1's flush_next_time: a delayed flusher flushes only after it.
    flush_next_time: u64,
    /// When the periodic worker runs next.
    next_periodic: u64,
    pub work: StatsWork,
}

impl Rstat {
    pub fn new(scheme: StatsScheme, ncpus: usize) -> Rstat {
        Rstat {
            scheme,
            ncpus,
            stats_updates: vec![0; ncpus],
            flush_threshold: 0,
            flush_next_time: 2 * FLUSH_TIME_NS,
            next_periodic: FLUSH_TIME_NS,
            work: StatsWork::default(),
        }
    }
}

impl Machine {
    /// Route one statistic update through the scheme (called by mod_stat after the exact
    /// counters were updated).
    #[inline]
    pub(crate) fn stats_update(&mut self, memcg: MemcgId, item: Stat, delta: i64) {
        self.rstat.work.updates += 1;
        match self.rstat.scheme {
            StatsScheme::Exact => {}
            StatsScheme::Rstat => self.rstat_update(memcg, item as usize, delta),
            StatsScheme::Legacy => self.legacy_update(memcg, item, delta),
        }
    }

    /// `n` unit updates in a row (memcontrol.rs's mod_stat_units()): the same end state as
    /// `n` calls of stats_update(memcg, item, unit), computed in one step for rstat.
    pub(crate) fn stats_update_units(&mut self, memcg: MemcgId, item: Stat, unit: i64, n: u64) {
        match self.rstat.scheme {
            StatsScheme::Exact => self.rstat.work.updates += n,
            StatsScheme::Rstat => {
                self.rstat.work.updates += n;
                // The first unit runs the periodic worker if it is due; time does not move
                // within the run, so the others would not.
                self.rstat_update(memcg, item as usize, unit);
                self.rstat_units_rest(memcg, item as usize, unit, n - 1);
            }
            StatsScheme::Legacy => {
                for _ in 0..n {
                    self.stats_update(memcg, item, unit);
                }
            }
        }
    }

    /// rstat_update() for `n` more unit updates after the first: the per-CPU delta grows by
    /// `n`, and stats_updates crosses RSTAT_BATCH once every RSTAT_BATCH + 1 units (it starts
    /// again from 0 after each crossing), each crossing raising the flush threshold by one
    /// while it is at most the CPU count.
    fn rstat_units_rest(&mut self, memcg: MemcgId, i: usize, unit: i64, n: u64) {
        if n == 0 {
            return;
        }
        let cpu = self.current_cpu();
        let vm = &mut self.memcgs[memcg as usize].vm;
        vm.percpu[cpu * NR_STATS + i] += unit * n as i64;
        vm.mark_dirty(cpu, i);
        let ncpus = self.rstat.ncpus as u64;
        let r = &mut self.rstat;
        let s0 = r.stats_updates[cpu];
        debug_assert!(s0 <= RSTAT_BATCH);
        let first = RSTAT_BATCH + 1 - s0;
        if n < first {
            r.stats_updates[cpu] = s0 + n;
            return;
        }
        let crossings = 1 + (n - first) / (RSTAT_BATCH + 1);
        r.stats_updates[cpu] = (n - first) % (RSTAT_BATCH + 1);
        if r.flush_threshold <= ncpus {
            r.flush_threshold = (r.flush_threshold + crossings).min(ncpus + 1);
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_percpu(&mut self, memcg: MemcgId) {
        let n = self.rstat.ncpus;
        self.memcgs[memcg as usize].vm.percpu = vec![0; n * (NR_STATS + 1)];
    }

    /// __mod_memcg_lruvec_state() + memcg_rstat_updated() of 6.1.
    #[inline]
    fn rstat_update(&mut self, memcg: MemcgId, i: usize, delta: i64) {
        if self.now() >= self.rstat.next_periodic {
            self.stats_periodic();
        }
        let cpu = self.current_cpu();
        if self.memcgs[memcg as usize].vm.percpu.is_empty() {
            self.alloc_percpu(memcg);
        }
        let vm = &mut self.memcgs[memcg as usize].vm;
        vm.percpu[cpu * NR_STATS + i] += delta;
        vm.mark_dirty(cpu, i);
        if !vm.is_on_tree(cpu) {
            self.cgroup_rstat_updated(memcg, cpu);
        }
        let ncpus = self.rstat.ncpus as u64;
        let r = &mut self.rstat;
        let x = r.stats_updates[cpu] + delta.unsigned_abs();
        if x > RSTAT_BATCH {
            if r.flush_threshold <= ncpus {
                r.flush_threshold += x / RSTAT_BATCH;
            }
            r.stats_updates[cpu] = 0;
        } else {
            r.stats_updates[cpu] = x;
        }
    }

    /// cgroup_rstat_updated(): put `memcg` and the ancestors not yet there on `cpu`'s
    /// updated tree.
    #[cold]
    #[inline(never)]
    fn cgroup_rstat_updated(&mut self, memcg: MemcgId, cpu: usize) {
        let n = self.rstat.ncpus;
        let mut c = memcg;
        let mut guard = 0usize;
        loop {
            guard += 1;
            assert!(
                guard <= self.memcgs.len(),
                "rstat tree walk does not terminate"
            );
            let vm = &mut self.memcgs[c as usize].vm;
            if vm.updated_next.is_empty() {
                vm.updated_next = vec![NONE; n];
                vm.updated_children = vec![NONE; n];
            }
            if vm.updated_next[cpu] != NONE {
                return;
            }
            self.rstat.work.tree_links += 1;
            let Some(p) = self.memcgs[c as usize].parent else {
                self.memcgs[c as usize].vm.set_next(cpu, END);
                return;
            };
            let pv = &mut self.memcgs[p as usize].vm;
            if pv.updated_next.is_empty() {
                pv.updated_next = vec![NONE; n];
                pv.updated_children = vec![NONE; n];
            }
            let head = pv.updated_children[cpu];
            pv.updated_children[cpu] = c;
            self.memcgs[c as usize]
                .vm
                .set_next(cpu, if head == NONE { END } else { head });
            c = p;
        }
    }

    /// 5.10's __mod_memcg_state() / __count_memcg_events().
    #[inline]
    fn legacy_update(&mut self, memcg: MemcgId, item: Stat, delta: i64) {
        let i = item as usize;
        let cpu = self.current_cpu();
        if self.memcgs[memcg as usize].vm.percpu.is_empty() {
            self.alloc_percpu(memcg);
        }
        let slot = cpu * NR_STATS + i;
        let vm = &mut self.memcgs[memcg as usize].vm;
        let x = vm.percpu[slot] + delta;
        // 5.10 scales the batch of byte-sized items by the page size.
        let batch = if item.in_bytes() {
            LEGACY_BATCH << 12
        } else {
            LEGACY_BATCH
        };
        if x.abs() <= batch {
            vm.percpu[slot] = x;
            vm.mark_dirty(cpu, i);
            return;
        }
        vm.percpu[slot] = 0;
        vm.local[i] += x;
        self.rstat.work.tree_links += 1;
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            let mc = &mut self.memcgs[m as usize];
            mc.vm.state[i] += x;
            self.rstat.work.propagated += 1;
            cur = mc.parent;
        }
    }

    /// Run the periodic flush worker if it is due (flush_memcg_stats_dwork()).
    #[cold]
    fn stats_periodic(&mut self) {
        if self.rstat.scheme != StatsScheme::Rstat {
            return;
        }
        let now = self.now();
        if now < self.rstat.next_periodic {
            return;
        }
        // Runs that were due while nothing happened found nothing to flush.
        let missed = (now - self.rstat.next_periodic) / FLUSH_TIME_NS;
        self.rstat.work.flushes += missed;
        self.rstat.next_periodic += (missed + 1) * FLUSH_TIME_NS;
        self.do_flush_stats();
    }

    /// __mem_cgroup_flush_stats(): flush the whole tree and reset the ratelimit.
    fn do_flush_stats(&mut self) {
        self.rstat.flush_next_time = self.now() + 2 * FLUSH_TIME_NS;
        self.rstat_flush(crate::memcontrol::ROOT_MEMCG);
        self.rstat.flush_threshold = 0;
    }

    /// mem_cgroup_flush_stats(): flush when enough updates are pending (rstat only).
    pub fn mem_cgroup_flush_stats(&mut self) {
        if self.rstat.scheme != StatsScheme::Rstat {
            return;
        }
        self.stats_periodic();
        if self.rstat.flush_threshold > self.rstat.ncpus as u64 {
            self.do_flush_stats();
        }
    }

    /// mem_cgroup_flush_stats_delayed(): flush only when the periodic worker is late.
    pub fn mem_cgroup_flush_stats_delayed(&mut self) {
        if self.rstat.scheme != StatsScheme::Rstat {
            return;
        }
        self.stats_periodic();
        if self.now() > self.rstat.flush_next_time {
            self.mem_cgroup_flush_stats();
        }
    }

    /// Flush everything now, whatever the ratelimit says (tests and the checker's
    /// "after a full flush, rstat equals exact").
    pub fn stats_flush_all(&mut self) {
        if self.rstat.scheme == StatsScheme::Rstat {
            self.do_flush_stats();
        }
    }

    /// cgroup_rstat_flush(root): on every CPU, detach the updated subtree of `root` and fold
    /// it children first.
    pub(crate) fn rstat_flush(&mut self, root: MemcgId) {
        self.rstat.work.flushes += 1;
        let mut order: Vec<MemcgId> = Vec::new();
        let mut stack: Vec<(MemcgId, bool)> = Vec::new();
        for cpu in 0..self.rstat.ncpus {
            order.clear();
            self.rstat_updated_list(root, cpu, &mut stack, &mut order);
            for &m in order.iter() {
                self.rstat_flush_one(m, cpu);
            }
            self.rstat.work.flush_visits += order.len() as u64;
        }
    }

    /// cgroup_rstat_updated_list(): detach `root`'s updated subtree on `cpu` into `out` in
    /// post-order (children before parents).
    fn rstat_updated_list(
        &mut self,
        root: MemcgId,
        cpu: usize,
        stack: &mut Vec<(MemcgId, bool)>,
        out: &mut Vec<MemcgId>,
    ) {
        {
            let vm = &self.memcgs[root as usize].vm;
            if vm.updated_next.is_empty() || vm.updated_next[cpu] == NONE {
                return;
            }
        }
        // Unlink root from its parent's child list (a subtree flush), or clear the root mark.
        if let Some(p) = self.memcgs[root as usize].parent {
            let next = self.memcgs[root as usize].vm.updated_next[cpu];
            let pv = &mut self.memcgs[p as usize].vm;
            if pv.updated_children[cpu] == root {
                pv.updated_children[cpu] = if next == END { NONE } else { next };
            } else {
                let mut c = pv.updated_children[cpu];
                let mut guard = 0usize;
                while c != NONE && c != END {
                    guard += 1;
                    assert!(guard <= self.memcgs.len(), "rstat child list cycle");
                    let cn = self.memcgs[c as usize].vm.updated_next[cpu];
                    if cn == root {
                        self.memcgs[c as usize].vm.set_next(cpu, next);
                        break;
                    }
                    c = cn;
                }
            }
        }
        self.memcgs[root as usize].vm.set_next(cpu, NONE);
        stack.clear();
        stack.push((root, false));
        while let Some((m, expanded)) = stack.pop() {
            if expanded {
                out.push(m);
                continue;
            }
            assert!(
                out.len() + stack.len() <= self.memcgs.len(),
                "rstat list too long"
            );
            stack.push((m, true));
            let vm = &mut self.memcgs[m as usize].vm;
            let mut c = vm.updated_children[cpu];
            vm.updated_children[cpu] = NONE;
            while c != NONE && c != END {
                let cv = &mut self.memcgs[c as usize].vm;
                let next = cv.updated_next[cpu];
                cv.set_next(cpu, NONE);
                stack.push((c, false));
                c = next;
            }
        }
    }

    /// mem_cgroup_css_rstat_flush(): fold one group's delta on one CPU and its children's
    /// pending deltas, and push the sum to the parent. The kernel adds every item; the
    /// model adds those whose dirty bit says they may be non-zero (adding 0 changes nothing).
    fn rstat_flush_one(&mut self, m: MemcgId, cpu: usize) {
        let parent = self.memcgs[m as usize].parent;
        let mut up = [0i64; NR_STATS];
        let mut up_mask = 0u64;
        {
            let vm = &mut self.memcgs[m as usize].vm;
            let has_cpu = !vm.percpu.is_empty();
            let mut mask = std::mem::take(&mut vm.pending_dirty);
            if has_cpu {
                mask |= vm.take_dirty(cpu);
            }
            // Read without allocating: a group no child pushed to has none.
            let mut pending = vm.pending.0.as_deref_mut();
            while mask != 0 {
                let i = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let mut delta = pending.as_mut().map_or(0, |p| std::mem::take(&mut p[i]));
                if has_cpu {
                    let d = std::mem::take(&mut vm.percpu[cpu * NR_STATS + i]);
                    vm.local[i] += d;
                    delta += d;
                }
                if delta != 0 {
                    vm.state[i] += delta;
                    up[i] = delta;
                    up_mask |= 1 << i;
                }
            }
        }
        if let (Some(p), true) = (parent, up_mask != 0) {
            let pv = &mut self.memcgs[p as usize].vm;
            pv.pending_dirty |= up_mask;
            let mut mask = up_mask;
            while mask != 0 {
                let i = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                pv.pending[i] += up[i];
            }
        }
    }

    /// A group is going away: make sure what it counted reaches its ancestors as the kernel
    /// does when it frees the group (rstat: cgroup_rstat_exit() flushes its subtree into the
    /// parent; legacy: the residues are stranded; exact: nothing pending).
    pub(crate) fn stats_memcg_free(&mut self, memcg: MemcgId) {
        match self.rstat.scheme {
            StatsScheme::Exact => {}
            StatsScheme::Rstat => {
                self.rstat_flush(memcg);
                // The flush pushed the group's deltas into the parent's pending; put the
                // parent on a tree so the next flush folds them.
                debug_assert!(self.memcgs[memcg as usize]
                    .vm
                    .pending
                    .iter()
                    .all(|&v| v == 0));
                if let Some(p) = self.memcgs[memcg as usize].parent {
                    let has = self.memcgs[p as usize].vm.pending.iter().any(|&v| v != 0);
                    if has {
                        self.cgroup_rstat_updated(p, 0);
                    }
                }
            }
            StatsScheme::Legacy => {
                // Keep the stranded residues in every ancestor's `pending`, so the checker
                // still accounts for each update (the group's own `pending` already is).
                let mut res = [0i64; NR_STATS];
                let vm = &self.memcgs[memcg as usize].vm;
                for (i, r) in res.iter_mut().enumerate() {
                    *r = vm.percpu_sum(i);
                }
                let mut cur = self.memcgs[memcg as usize].parent;
                while let Some(m) = cur {
                    let mc = &mut self.memcgs[m as usize];
                    for (i, r) in res.iter().enumerate() {
                        if *r != 0 {
                            mc.vm.pending_dirty |= 1 << i;
                        }
                    }
                    for (pp, r) in mc.vm.pending.iter_mut().zip(res) {
                        *pp += r;
                    }
                    cur = mc.parent;
                }
            }
        }
    }

    /// memcg_page_state() / lruvec_page_state(): the hierarchical value a reader sees.
    #[inline]
    pub fn stat_view(&self, memcg: MemcgId, item: Stat) -> u64 {
        match self.rstat.scheme {
            StatsScheme::Exact => self.stat_total(memcg, item),
            _ => self.memcg(memcg).vm.state[item as usize].max(0) as u64,
        }
    }

    /// memcg_page_state_local(): the group's own value a reader sees.
    #[inline]
    pub fn stat_view_local(&self, memcg: MemcgId, item: Stat) -> u64 {
        match self.rstat.scheme {
            StatsScheme::Exact => self.stat_local(memcg, item),
            _ => self.memcg(memcg).vm.local[item as usize].max(0) as u64,
        }
    }

    /// `memcg`'s statistics file is read: count it (and what a read-side sum would visit)
    /// and flush as 6.1's memory_stat_format() does.
    pub fn stats_read_flush(&mut self, memcg: MemcgId) {
        self.rstat.work.reads += 1;
        let groups = self.memcg(memcg).subtree_groups;
        self.rstat.work.read_sum_visits += groups * self.rstat.ncpus as u64;
        self.mem_cgroup_flush_stats();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MachineConfig;
    use crate::memcontrol::ROOT_MEMCG;

    fn machine(scheme: &str, cpus: u32) -> Machine {
        let mut cfg = MachineConfig::default();
        cfg.set("stats", scheme).unwrap();
        cfg.cpus = cpus;
        Machine::new(cfg).unwrap()
    }

    fn on_cpu(m: &mut Machine, cpu: u32) {
        m.cur = Some(crate::sched::ExecCtx::new(None, cpu, m.sched.clock));
    }

    #[test]
    fn rstat_flush_folds_only_updated_groups_children_first() {
        let mut m = machine("rstat", 2);
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let b = m.memcg_create(a).unwrap();
        let idle: Vec<_> = (0..5).map(|_| m.memcg_create(a).unwrap()).collect();
        on_cpu(&mut m, 1);
        m.mod_stat(b, Stat::Pgfault, 10);
        on_cpu(&mut m, 0);
        m.mod_stat(b, Stat::Pgfault, 5);
        // Nothing reached a reader yet.
        assert_eq!(m.stat_view(a, Stat::Pgfault), 0);
        assert_eq!(m.stat_total(a, Stat::Pgfault), 15);
        m.stats_flush_all();
        assert_eq!(m.stat_view(b, Stat::Pgfault), 15);
        assert_eq!(m.stat_view_local(b, Stat::Pgfault), 15);
        assert_eq!(m.stat_view(a, Stat::Pgfault), 15);
        assert_eq!(m.stat_view_local(a, Stat::Pgfault), 0);
        assert_eq!(m.stat_view(ROOT_MEMCG, Stat::Pgfault), 15);
        // b, a and root on each of two CPUs; the idle siblings were never visited.
        assert_eq!(m.rstat.work.flush_visits, 6);
        for g in idle {
            assert_eq!(m.stat_view(g, Stat::Pgfault), 0);
        }
        // A second flush finds nothing.
        m.stats_flush_all();
        assert_eq!(m.rstat.work.flush_visits, 6);
        m.check().unwrap();
    }

    #[test]
    fn rstat_ratelimit_flushes_past_batch_times_cpus() {
        let mut m = machine("rstat", 2);
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        on_cpu(&mut m, 0);
        // 2 CPUs: the threshold must exceed 2, i.e. three batches of more than 64 updates.
        for _ in 0..(3 * 65 - 1) {
            m.mod_stat(a, Stat::Pgactivate, 1);
        }
        m.mem_cgroup_flush_stats();
        assert_eq!(m.stat_view(a, Stat::Pgactivate), 0, "below the ratelimit");
        m.mod_stat(a, Stat::Pgactivate, 1);
        m.mem_cgroup_flush_stats();
        assert_eq!(m.stat_view(a, Stat::Pgactivate), 195);
    }

    #[test]
    fn rstat_periodic_flush_every_two_seconds() {
        let mut m = machine("rstat", 4);
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        m.mod_stat(a, Stat::Pgfault, 3);
        m.mem_cgroup_flush_stats();
        assert_eq!(m.stat_view(a, Stat::Pgfault), 0);
        m.sched.clock = FLUSH_TIME_NS;
        m.mem_cgroup_flush_stats();
        assert_eq!(m.stat_view(a, Stat::Pgfault), 3);
        // The delayed flusher trusts the worker for 4 s after a flush.
        m.mod_stat(a, Stat::Pgfault, 3);
        m.sched.clock = FLUSH_TIME_NS + 100;
        m.mem_cgroup_flush_stats_delayed();
        assert_eq!(m.stat_view(a, Stat::Pgfault), 3);
    }

    #[test]
    fn legacy_batches_drift_by_32_per_cpu_and_group() {
        let mut m = machine("legacy", 4);
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let kids: Vec<_> = (0..10).map(|_| m.memcg_create(a).unwrap()).collect();
        for &k in &kids {
            for cpu in 0..4 {
                on_cpu(&mut m, cpu);
                m.mod_stat(k, Stat::Pgactivate, 32);
            }
        }
        // Every residue sits at the limit: nothing reached the counters.
        assert_eq!(m.stat_view(a, Stat::Pgactivate), 0);
        assert_eq!(m.stat_total(a, Stat::Pgactivate), 32 * 4 * 10);
        on_cpu(&mut m, 0);
        m.mod_stat(kids[0], Stat::Pgactivate, 1);
        assert_eq!(m.stat_view(kids[0], Stat::Pgactivate), 33);
        assert_eq!(m.stat_view(a, Stat::Pgactivate), 33);
        assert_eq!(m.stat_view(ROOT_MEMCG, Stat::Pgactivate), 33);
        m.check().unwrap();
    }

    #[test]
    fn rstat_removed_group_reaches_parent_legacy_strands() {
        for (scheme, expect) in [("rstat", 20), ("legacy", 0), ("exact", 20)] {
            let mut m = machine(scheme, 2);
            let a = m.memcg_create(ROOT_MEMCG).unwrap();
            let b = m.memcg_create(a).unwrap();
            m.mod_stat(b, Stat::Pgfault, 20);
            m.memcg_offline(b).unwrap();
            m.release_dying_memcgs();
            m.stats_flush_all();
            assert_eq!(m.stat_view(a, Stat::Pgfault), expect, "{scheme}");
            m.check().unwrap();
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, .. Default::default() })]
        /// mod_stat_units(n) leaves every scheme exactly where n single updates leave it:
        /// counters, per-CPU deltas, updated trees, ratelimit state and work counts.
        #[test]
        fn units_equal_single_updates(
            ops in proptest::collection::vec(
                (0u32..3, 0usize..2, 0usize..3, proptest::bool::ANY, 0u64..300, -40i64..40),
                1..60,
            ),
            scheme in 0usize..3,
        ) {
            let scheme = ["exact", "rstat", "legacy"][scheme];
            let mut a = machine(scheme, 3);
            let mut b = machine(scheme, 3);
            let mut groups = vec![ROOT_MEMCG];
            for m in [&mut a, &mut b] {
                let x = m.memcg_create(ROOT_MEMCG).unwrap();
                let y = m.memcg_create(x).unwrap();
                groups = vec![ROOT_MEMCG, x, y];
            }
            let items = [Stat::InactiveFile, Stat::PgscanKswapd];
            for (cpu, item, g, batched, n, delta) in ops {
                let (item, g) = (items[item], groups[g]);
                on_cpu(&mut a, cpu);
                on_cpu(&mut b, cpu);
                if batched {
                    let unit = if delta < 0 { -1 } else { 1 };
                    a.mod_stat_units(g, item, unit, n);
                    for _ in 0..n {
                        b.mod_stat(g, item, unit);
                    }
                } else {
                    a.mod_stat(g, item, delta);
                    b.mod_stat(g, item, delta);
                }
            }
            proptest::prop_assert_eq!(format!("{:?}", a.rstat), format!("{:?}", b.rstat));
            for &g in &groups {
                let (ma, mb) = (a.memcg(g), b.memcg(g));
                proptest::prop_assert_eq!(format!("{:?}", ma.vm), format!("{:?}", mb.vm));
                proptest::prop_assert_eq!(format!("{:?}", ma.stats), format!("{:?}", mb.stats));
            }
            a.stats_flush_all();
            b.stats_flush_all();
            for &g in &groups {
                for item in items {
                    proptest::prop_assert_eq!(a.stat_view(g, item), b.stat_view(g, item));
                }
            }
        }
    }
}
