//! The memory cgroup soft limit (cgroup v1 `memory.soft_limit_in_bytes`) in the three designs
//! the `softlimit` machine key selects (seed 000).
//!
//! **Mainline** (`softlimit=tree`, mm/memcontrol-v1.c of 6.12, mm/memcontrol.c before):
//! * the page-event ratelimit of `memcg_check_events()` / `mem_cgroup_event_ratelimit()`:
//!   every charge and uncharge adds its pages to the memcg's per-CPU `nr_page_events`; when
//!   they pass the CPU's THRESH target (moved on by 128) and then its SOFTLIMIT target (moved
//!   on by SOFTLIMIT_EVENTS_TARGET = 1024), `mem_cgroup_update_tree()` re-keys the memcg and
//!   every ancestor in the node's soft-limit tree;
//! * the tree (`mem_cgroup_tree_per_node`): memcgs ordered by `usage_in_excess` (usage minus
//!   soft limit at the last update, so stale by design); among equal keys the newest
//!   insertion is taken first, as the RB tree's rightmost node;
//! * `mem_cgroup_soft_limit_reclaim()`, called by kswapd at every priority of
//!   balance_pgdat() and by direct global reclaim once per priority: pop the largest
//!   offender, reclaim its subtree with `mem_cgroup_soft_reclaim()` (rounds of
//!   `mem_cgroup_shrink_node()` at priority 0 through the node's shared reclaim iterator,
//!   until the excess is gone or a quarter of it is reclaimed after two rounds, at most
//!   MEM_CGROUP_MAX_RECLAIM_LOOPS = 100), re-insert it with its new excess, and try the next
//!   largest when nothing came back, giving up after MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS
//!   = 2 victims.
//!
//! **The 2013 rework** (`softlimit=rework`; "memcg: soft limit reclaim rework" v5.1, eight
//! patches, merged for 3.12-rc1 and reverted before 3.12):
//! * `mem_cgroup_soft_reclaim_eligible()`, the predicate of the memcg iterator: VISIT a group
//!   over its soft limit or below an ancestor over it (up to the reclaim root), else SKIP it
//!   when some descendant is in excess, else SKIP_TREE;
//! * `children_in_excess` / `soft_contributed`, kept from the same event ratelimit that fed
//!   the tree (`mem_cgroup_update_soft_limit()`), and dropped from the ancestors when a
//!   contributing group goes away;
//! * `mem_cgroup_should_soft_reclaim()`: a soft pass only if the root is eligible or has
//!   children in excess. The two passes themselves are in vmscan.rs (`shrink_node()`).
//!
//! **The rework without counters** (`softlimit=rework-walk`, patches 1–4, the version whose
//! walk cost worried its reviewers): the predicate never answers SKIP_TREE, the soft pass is
//! always tried, and a soft pass that visited nobody is not repeated.
//!
//! Under `reclaim=3.11` the tree reclaim runs zone by zone, as 3.11 called it from
//! balance_pgdat()'s and shrink_zones()' zone loops: each call shrinks the victims' lruvecs of
//! one zone (mem_cgroup_shrink_node_zone()) until a quarter of the group's whole excess is
//! back.
//!
//! Simplifications (docs/FIDELITY.md): one NUMA node, so one tree and one iterator position
//! per memcg (3.11 kept a tree per zone, a group joining a zone's tree when one of its
//! charge events fell on a page of that zone; here every zone's reclaim pops from the one
//! tree, and a group with no pages in the zone yields nothing, as it would not be on that
//! zone's tree); uncharges are counted page by page, where the kernel counts a freed batch at
//! once; the hierarchy is always on (use_hierarchy = 1), so the rework's patch 7 (the root
//! counts every group when use_hierarchy = 0) changes nothing.

use std::collections::BTreeSet;

use crate::config::SoftLimitPolicy;
use crate::machine::Machine;
use crate::memcontrol::{IterVisit, MemcgId, NO_MEMCG};
use crate::page_counter::PAGE_COUNTER_MAX;
use crate::vmscan::{ScanControl, SWAP_CLUSTER_MAX};

/// THRESHOLDS_EVENTS_TARGET: page events between two threshold checks.
pub const THRESHOLDS_EVENTS_TARGET: u64 = 128;
/// SOFTLIMIT_EVENTS_TARGET: page events between two soft-limit updates.
pub const SOFTLIMIT_EVENTS_TARGET: u64 = 1024;
/// MEM_CGROUP_MAX_RECLAIM_LOOPS: rounds of a victim's subtree in mem_cgroup_soft_reclaim().
pub const MEM_CGROUP_MAX_RECLAIM_LOOPS: u32 = 100;
/// MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS: victims tried when none yields a page.
pub const MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS: u32 = 2;

/// A memcg's per-CPU page-event counter and its ratelimit targets (memcg_vmstats_percpu's
/// nr_page_events and targets[]).
#[derive(Clone, Copy, Debug, Default)]
pub struct PageEvents {
    pub nr: u64,
    pub thresh_target: u64,
    pub soft_target: u64,
}

/// A memcg's soft-limit state: its node in the tree (mem_cgroup_per_node's on_tree and
/// usage_in_excess) and the rework's soft_contributed. The soft limit itself and the rework's
/// children_in_excess, which the eligibility walk tests at every group, are in the packed
/// memcg tree (`MemcgTopo`, memcontrol.rs).
#[derive(Clone, Copy, Debug, Default)]
pub struct SoftNode {
    pub on_tree: bool,
    /// The key it was inserted with.
    pub usage_in_excess: u64,
    /// Insertion sequence number, the tie-break among equal keys.
    pub seq: u64,
    /// The rework's soft_contributed: it has counted itself in its ancestors.
    pub contributed: bool,
    /// The reclaim iterator's position for soft reclaim rooted here (mem_cgroup_reclaim_iter
    /// at priority 0): the group returned last.
    pub iter_pos: Option<MemcgId>,
}

/// The per-node soft-limit tree: (excess, insertion sequence, memcg); the largest element is
/// the rightmost node.
#[derive(Clone, Debug, Default)]
pub struct SoftLimitTree {
    pub set: BTreeSet<(u64, u64, MemcgId)>,
    pub seq: u64,
}

/// Where mem_cgroup_soft_reclaim() stands: its victim subtree, the lruvec slot it shrinks
/// (3.11: the zone), the excess it started from, what it reclaimed, the rounds it finished,
/// and the group it visited last.
#[derive(Clone, Copy, Debug)]
pub struct SoftReclaimState {
    pub root: MemcgId,
    pub slot: usize,
    pub excess: u64,
    pub total: u64,
    pub loops: u32,
    pub victim: Option<MemcgId>,
}

/// What soft-limit reclaim did, machine-wide (the model's own counters; the kernel does not
/// export these, see /proc/memcgsim/reclaim in the cgroupfs crate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoftStats {
    /// Soft reclaim entries: tree reclaim calls that found the tree non-empty, or soft passes.
    pub calls: u64,
    /// Virtual time spent inside them.
    pub ns: u64,
    /// Memcgs their walks looked at (tree: victims popped plus iterator steps; rework:
    /// iterator steps, each asking the predicate).
    pub walked: u64,
    /// Lruvecs they shrank.
    pub shrunk: u64,
    pub scanned: u64,
    pub reclaimed: u64,
    /// Rework: reclaim-all passes that followed a soft pass which scanned nothing.
    pub fallbacks: u64,
    /// Tree updates (mem_cgroup_update_tree) or counter updates (update_soft_limit).
    pub updates: u64,
    /// Memcgs looked at by every reclaim walk, soft or not.
    pub walk_steps: u64,
}

impl Machine {
    /// soft_limit_excess(): usage above the soft limit, in pages.
    #[inline]
    pub fn soft_limit_excess(&self, memcg: MemcgId) -> u64 {
        let soft_limit = self.memcg_soft_limit(memcg);
        if soft_limit >= PAGE_COUNTER_MAX {
            // No soft limit: no usage exceeds PAGE_COUNTER_MAX (the walks need not load the
            // page counter).
            debug_assert!(self.memory.get(memcg as usize).usage <= PAGE_COUNTER_MAX);
            return 0;
        }
        let usage = self.memory.get(memcg as usize).usage;
        usage.saturating_sub(soft_limit)
    }

    /// memcg_check_events(): count `nr` page events of `memcg` on the current CPU and run the
    /// ratelimited soft-limit update.
    pub fn memcg_check_events(&mut self, memcg: MemcgId, nr: u64) {
        let cpu = self.current_cpu();
        let pe = &mut self.memcgs[memcg as usize].page_events[cpu];
        pe.nr += nr;
        // mem_cgroup_event_ratelimit(): a target fires once the counter has passed it.
        if pe.nr <= pe.thresh_target {
            return;
        }
        pe.thresh_target = pe.nr + THRESHOLDS_EVENTS_TARGET;
        if pe.nr <= pe.soft_target {
            return;
        }
        pe.soft_target = pe.nr + SOFTLIMIT_EVENTS_TARGET;
        match self.cfg.softlimit {
            SoftLimitPolicy::Tree => self.mem_cgroup_update_tree(memcg),
            SoftLimitPolicy::Rework => self.mem_cgroup_update_soft_limit(memcg),
            SoftLimitPolicy::ReworkWalk => {}
        }
    }

    // ---------------------------------------------------------------- mainline tree

    /// mem_cgroup_update_tree(): re-key `memcg` and every ancestor whose excess is positive
    /// or which is on the tree.
    fn mem_cgroup_update_tree(&mut self, memcg: MemcgId) {
        self.soft_stats.updates += 1;
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            let excess = self.soft_limit_excess(m);
            if excess > 0 || self.memcg(m).soft.on_tree {
                self.soft_tree_remove(m);
                self.soft_tree_insert(m, excess);
            }
            cur = self.memcg(m).parent;
        }
    }

    /// __mem_cgroup_insert_exceeded(): no-op when already on the tree or with no excess.
    fn soft_tree_insert(&mut self, memcg: MemcgId, excess: u64) {
        if self.memcg(memcg).soft.on_tree {
            return;
        }
        self.memcg_mut(memcg).soft.usage_in_excess = excess;
        if excess == 0 {
            return;
        }
        self.soft_tree.seq += 1;
        let seq = self.soft_tree.seq;
        self.soft_tree.set.insert((excess, seq, memcg));
        let s = &mut self.memcg_mut(memcg).soft;
        s.seq = seq;
        s.on_tree = true;
    }

    /// __mem_cgroup_remove_exceeded().
    pub(crate) fn soft_tree_remove(&mut self, memcg: MemcgId) {
        let s = self.memcg(memcg).soft;
        if !s.on_tree {
            return;
        }
        let removed = self
            .soft_tree
            .set
            .remove(&(s.usage_in_excess, s.seq, memcg));
        assert!(
            removed,
            "memcg {memcg} marked on the soft-limit tree but not in it"
        );
        self.memcg_mut(memcg).soft.on_tree = false;
    }

    /// __mem_cgroup_largest_soft_limit_node(): pop the rightmost node, dropping nodes whose
    /// memcg is no longer in excess.
    fn soft_tree_pop_largest(&mut self) -> Option<MemcgId> {
        let bound = self.soft_tree.set.len();
        for _ in 0..=bound {
            let &(_, _, m) = self.soft_tree.set.last()?;
            self.soft_tree_remove(m);
            self.soft_stats.walked += 1;
            if self.soft_limit_excess(m) > 0 && self.memcg(m).online {
                return Some(m);
            }
        }
        unreachable!("popping shrinks the tree")
    }

    /// mem_cgroup_soft_limit_reclaim() for an order-0 request: returns (reclaimed, scanned,
    /// the sleep it asked for). `kswapd` tells whose statistics the scan and steal counts go
    /// to; `may_block` whether the reclaimer can sleep; `slot` which lruvec of each group it
    /// shrinks (3.11: the zone it was called for, against the group's whole excess). Its
    /// scan controls are cgroup reclaim, so on cgroup v1 a page met again under writeback is
    /// waited for (folio_wait_writeback(), kswapd included): the reclaim stops there and the
    /// sleep is returned.
    pub fn mem_cgroup_soft_limit_reclaim(
        &mut self,
        kswapd: bool,
        may_block: bool,
        slot: usize,
    ) -> (u64, u64, Option<crate::vmscan::Wait>) {
        if self.soft_tree.set.is_empty() {
            return (0, 0, None);
        }
        let start = self.now();
        self.soft_stats.calls += 1;
        let mut total_scanned = 0u64;
        let mut nr_reclaimed = 0u64;
        let mut next: Option<MemcgId> = None;
        let mut loops = 0u32;
        let mut wait = None;
        // Bound: every iteration pops a victim; without progress at most two more.
        let bound = self.memcgs.len() + 2;
        for _ in 0..bound {
            let victim = match next.take() {
                Some(v) => Some(v),
                None => self.soft_tree_pop_largest(),
            };
            let Some(victim) = victim else {
                break;
            };
            let (reclaimed, w) =
                self.mem_cgroup_soft_reclaim(victim, slot, kswapd, may_block, &mut total_scanned);
            nr_reclaimed += reclaimed;
            if w.is_some() {
                if self.soft_interrupted.is_none() {
                    // The model's 6.1 reclaimer sleeps after the call, so the victim goes
                    // back now. A 3.11 reclaimer sleeps inside mem_cgroup_soft_reclaim(), and
                    // the victim stays off the tree until its rounds end (or its own charge
                    // events put it back; soft_limit_resume()).
                    let excess = self.soft_limit_excess(victim);
                    self.soft_tree_insert(victim, excess);
                }
                wait = w;
                break;
            }
            if reclaimed == 0 {
                next = self.soft_tree_pop_largest();
            }
            let excess = self.soft_limit_excess(victim);
            self.soft_tree_insert(victim, excess);
            loops += 1;
            if nr_reclaimed == 0
                && (next.is_none() || loops > MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS)
            {
                // A popped `next` stays off the tree until its next update, as in the kernel.
                break;
            }
            if nr_reclaimed > 0 {
                break;
            }
        }
        self.soft_stats.ns += self.now() - start;
        self.soft_stats.scanned += total_scanned;
        self.soft_stats.reclaimed += nr_reclaimed;
        (nr_reclaimed, total_scanned, wait)
    }

    /// mem_cgroup_iter() with a reclaim cookie over `root`'s subtree: the next group after
    /// `prev` (None: join the shared walk at its saved position). Returns None at the end of
    /// a round, which only a walker already under way sees.
    fn soft_reclaim_iter(&mut self, root: MemcgId, prev: Option<MemcgId>) -> Option<MemcgId> {
        self.soft_stats.walked += 1;
        self.soft_stats.walk_steps += 1;
        self.spend_cpu(self.cfg.costs.memcg_iter_ns);
        let pos = self.memcg(root).soft.iter_pos;
        let next = match pos {
            Some(p) if self.memcg_topo.online(p) && self.memcg_is_descendant(p, root) => {
                self.memcg_iter_next(root, p, false)
            }
            _ => Some(root),
        };
        let next = match next {
            Some(n) => Some(n),
            None if prev.is_none() => Some(root),
            None => None,
        };
        self.memcg_mut(root).soft.iter_pos = next;
        next
    }

    /// mem_cgroup_soft_reclaim(): rounds of `root`'s subtree, 32 pages from each group at
    /// priority 0, until `root` is back under its soft limit or enough is reclaimed.
    fn mem_cgroup_soft_reclaim(
        &mut self,
        root: MemcgId,
        slot: usize,
        kswapd: bool,
        may_block: bool,
        total_scanned: &mut u64,
    ) -> (u64, Option<crate::vmscan::Wait>) {
        let mut st = SoftReclaimState {
            root,
            slot,
            excess: self.soft_limit_excess(root),
            total: 0,
            loops: 0,
            victim: None,
        };
        let wait = self.soft_reclaim_rounds(&mut st, kswapd, may_block, total_scanned);
        if wait.is_some() && self.reclaim_3_11() {
            // 3.11's reclaimer sleeps in wait_on_page_writeback() and then goes on with the
            // same rounds (soft_limit_resume()).
            self.soft_interrupted = Some(st);
        }
        (st.total, wait)
    }

    /// The rounds of mem_cgroup_soft_reclaim() from where `st` stands. Returns the sleep
    /// that stopped them, if one did.
    fn soft_reclaim_rounds(
        &mut self,
        st: &mut SoftReclaimState,
        kswapd: bool,
        may_block: bool,
        total_scanned: &mut u64,
    ) -> Option<crate::vmscan::Wait> {
        // Bound: at most MAX_RECLAIM_LOOPS + 1 rounds of the subtree.
        let bound = (MEM_CGROUP_MAX_RECLAIM_LOOPS as usize + 2) * (self.memcgs.len() + 1);
        for _ in 0..bound {
            st.victim = self.soft_reclaim_iter(st.root, st.victim);
            let Some(v) = st.victim else {
                st.loops += 1;
                if st.loops >= 2 {
                    if st.total == 0 {
                        break;
                    }
                    if st.total >= st.excess >> 2 || st.loops > MEM_CGROUP_MAX_RECLAIM_LOOPS {
                        break;
                    }
                }
                continue;
            };
            let (reclaimed, scanned, wait) =
                self.mem_cgroup_shrink_node(v, st.slot, kswapd, may_block);
            st.total += reclaimed;
            *total_scanned += scanned;
            if wait.is_some() {
                return wait;
            }
            if self.soft_limit_excess(st.root) == 0 {
                break;
            }
        }
        None
    }

    /// 3.11's reclaimer (kswapd, or a task in direct reclaim) after its sleep on a page's
    /// writeback in soft-limit reclaim: the rest of the victim's rounds. Returns
    /// (reclaimed, another sleep, with the rounds left in `soft_interrupted`), or None when
    /// there was nothing to resume (the victim went away).
    pub(crate) fn soft_limit_resume(
        &mut self,
        mut st: SoftReclaimState,
        kswapd: bool,
    ) -> Option<(u64, Option<crate::vmscan::Wait>)> {
        if !self.memcg_alive(st.root) {
            return None;
        }
        let start = self.now();
        let before = st.total;
        let mut scanned = 0u64;
        let wait = self.soft_reclaim_rounds(&mut st, kswapd, true, &mut scanned);
        let reclaimed = st.total - before;
        if wait.is_some() {
            self.soft_interrupted = Some(st);
        } else {
            // mem_cgroup_soft_limit_reclaim() puts the victim back once its rounds end (a
            // no-op if an update of its charge events already has).
            let excess = self.soft_limit_excess(st.root);
            self.soft_tree_insert(st.root, excess);
        }
        self.soft_stats.ns += self.now() - start;
        self.soft_stats.scanned += scanned;
        self.soft_stats.reclaimed += reclaimed;
        Some((reclaimed, wait))
    }

    /// mem_cgroup_shrink_node() (3.11: mem_cgroup_shrink_node_zone()): shrink_lruvec() of
    /// `memcg`'s own lruvec `slot` at priority 0 for SWAP_CLUSTER_MAX pages, with a scan
    /// control nobody prepared (no deactivation, no cost balance). Returns (reclaimed,
    /// scanned, the sleep it asked for).
    fn mem_cgroup_shrink_node(
        &mut self,
        memcg: MemcgId,
        slot: usize,
        kswapd: bool,
        may_block: bool,
    ) -> (u64, u64, Option<crate::vmscan::Wait>) {
        let mut sc = ScanControl::new(memcg, SWAP_CLUSTER_MAX, true);
        sc.priority = 0;
        sc.slot = slot;
        sc.kswapd = kswapd;
        sc.may_block = may_block;
        self.soft_stats.shrunk += 1;
        self.shrink_lruvec(memcg, &mut sc);
        (sc.nr_reclaimed, sc.nr_scanned, sc.throttle)
    }

    // ---------------------------------------------------------------- the rework

    /// mem_cgroup_update_soft_limit(): flip soft_contributed when the excess appears or
    /// goes, and count the flip in every ancestor's children_in_excess.
    fn mem_cgroup_update_soft_limit(&mut self, memcg: MemcgId) {
        self.soft_stats.updates += 1;
        let excess = self.soft_limit_excess(memcg);
        let contributed = self.memcg(memcg).soft.contributed;
        let delta: i64 = match (excess > 0, contributed) {
            (true, false) => 1,
            (false, true) => -1,
            _ => return,
        };
        self.memcg_mut(memcg).soft.contributed = delta > 0;
        self.soft_contribute(memcg, delta);
    }

    fn soft_contribute(&mut self, memcg: MemcgId, delta: i64) {
        let mut cur = self.memcg_topo.parent(memcg);
        while let Some(p) = cur {
            let c = self.memcg_topo.children_in_excess_mut(p);
            *c = (*c as i64 + delta) as u32;
            cur = self.memcg_topo.parent(p);
        }
    }

    /// css_offline of a memcg: leave the tree, withdraw from the ancestors' counters.
    pub(crate) fn soft_limit_offline(&mut self, memcg: MemcgId) {
        self.soft_tree_remove(memcg);
        if self.memcg(memcg).soft.contributed {
            self.soft_contribute(memcg, -1);
            self.memcg_mut(memcg).soft.contributed = false;
        }
    }

    /// mem_cgroup_soft_reclaim_eligible(memcg, root). As in the patch, the climb over the
    /// ancestors stops at `root` only when it meets it as a parent, so for `memcg == root`
    /// it goes on to the top of the hierarchy.
    pub fn soft_reclaim_eligible(&self, memcg: MemcgId, root: MemcgId) -> IterVisit {
        if self.soft_limit_excess(memcg) > 0 {
            return IterVisit::Visit;
        }
        let mut cur = self.memcg_topo.parent(memcg);
        while let Some(p) = cur {
            if self.soft_limit_excess(p) > 0 {
                return IterVisit::Visit;
            }
            if p == root {
                break;
            }
            cur = self.memcg_topo.parent(p);
        }
        self.soft_reclaim_ineligible(memcg)
    }

    /// What the predicate answers for a group neither in excess nor below an offender.
    #[inline]
    fn soft_reclaim_ineligible(&self, memcg: MemcgId) -> IterVisit {
        if self.cfg.softlimit == SoftLimitPolicy::Rework
            && self.memcg_topo.children_in_excess(memcg) == 0
        {
            return IterVisit::SkipTree;
        }
        IterVisit::Skip
    }

    /// `memcg_walk(root, soft_reclaim_eligible(_, root))`: the same groups in the same order,
    /// and the same number looked at, without climbing the ancestors at every group. The walk
    /// is pre-order, so when it reaches a group below `root` the last group it looked at one
    /// level up is the parent, whose "in excess or below an offender up to `root`" it
    /// recorded at that level. Only `root` itself climbs, past `root`, to the top.
    pub fn soft_eligible_walk(&self, root: MemcgId, out: &mut Vec<MemcgId>) -> usize {
        out.clear();
        if self.cfg.softlimit == SoftLimitPolicy::ReworkWalk
            && self.memcg_topo.nr_soft_limited() == 0
        {
            // No group has a soft limit, so none is in excess: the walk visits none and looks
            // at every group of the subtree (this predicate never skips a subtree).
            return self.memcg(root).subtree_groups as usize;
        }
        let walk_policy = self.cfg.softlimit == SoftLimitPolicy::ReworkWalk;
        let t = &self.memcg_topo;
        // below[d]: the group last looked at `d` levels below `root`, or an ancestor of it up
        // to `root`, is in excess.
        let mut below: Vec<bool> = Vec::new();
        let mut looked = 0usize;
        let mut depth = 0usize;
        let mut cur = root;
        loop {
            looked += 1;
            assert!(looked <= self.memcgs.len(), "memcg walk does not terminate");
            let own = self.soft_limit_excess(cur) > 0;
            let v = if depth == 0 {
                let v = self.soft_reclaim_eligible(cur, root);
                below.clear();
                below.push(own);
                v
            } else {
                let under = below[depth - 1];
                below.truncate(depth);
                below.push(own || under);
                if own || under {
                    IterVisit::Visit
                } else {
                    self.soft_reclaim_ineligible(cur)
                }
            };
            if v == IterVisit::Visit {
                out.push(cur);
            }
            // memcg_iter_next(), keeping the depth.
            let l = t.links(cur);
            let mut descend = v != IterVisit::SkipTree;
            if walk_policy && v == IterVisit::Skip && l.first_child != NO_MEMCG && !t.soft_seen(cur)
            {
                // Neither it nor an ancestor up to `root` is in excess, and no soft limit was
                // ever set below it: the walk would look at its whole subtree and visit none
                // of it (this policy's predicate never skips a subtree).
                looked += self.memcg(cur).subtree_groups as usize - 1;
                descend = false;
            }
            if descend && l.first_child != NO_MEMCG {
                cur = l.first_child;
                depth += 1;
                continue;
            }
            let mut x = cur;
            let next = loop {
                if x == root {
                    break None;
                }
                let l = t.links(x);
                if l.next_sibling != NO_MEMCG {
                    break Some(l.next_sibling);
                }
                if l.parent == NO_MEMCG {
                    break None;
                }
                x = l.parent;
                depth -= 1;
            };
            match next {
                Some(n) => cur = n,
                None => return looked,
            }
        }
    }

    /// mem_cgroup_should_soft_reclaim(sc): whether shrink_node starts with a soft pass.
    pub fn should_soft_reclaim(&self, sc: &ScanControl) -> bool {
        match self.cfg.softlimit {
            SoftLimitPolicy::Tree => false,
            SoftLimitPolicy::ReworkWalk => true,
            SoftLimitPolicy::Rework => {
                self.soft_reclaim_eligible(sc.target, sc.target) != IterVisit::SkipTree
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CgroupVersion, MachineConfig};
    use crate::memcontrol::ROOT_MEMCG;

    fn machine(policy: &str) -> Machine {
        let mut cfg = MachineConfig {
            cgroup: CgroupVersion::V1,
            ..Default::default()
        };
        cfg.set("softlimit", policy).unwrap();
        Machine::new(cfg).unwrap()
    }

    /// Charge `n` pages to `memcg` through the counter and the event path.
    fn charge(m: &mut Machine, memcg: MemcgId, n: u64) {
        for _ in 0..n {
            m.memory.try_charge(memcg as usize, 1).unwrap();
            m.memcg_check_events(memcg, 1);
        }
    }

    #[test]
    fn the_tree_is_refreshed_every_1024_events_not_before() {
        let mut m = machine("tree");
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        m.set_memcg_soft_limit(a, 100);
        // Event 1 passes the initial targets (0): an update with no excess yet.
        charge(&mut m, a, 1);
        assert_eq!(m.soft_stats.updates, 1);
        assert!(m.soft_tree.set.is_empty());
        // The soft target is now 1 + 1024, but it is only looked at when the threshold
        // target (129 after event 1, then 258, 387, ..., 1032) fires, at event 1033.
        charge(&mut m, a, 1031);
        assert_eq!(m.soft_stats.updates, 1, "updated before the target");
        assert!(m.soft_tree.set.is_empty(), "stale by design");
        charge(&mut m, a, 1);
        assert_eq!(m.soft_stats.updates, 2);
        assert_eq!(m.soft_tree.set.len(), 1);
        assert_eq!(m.memcg(a).soft.usage_in_excess, 1033 - 100);
    }

    #[test]
    fn the_tree_keys_ancestors_and_takes_the_newest_of_equal_keys_first() {
        let mut m = machine("tree");
        let p = m.memcg_create(ROOT_MEMCG).unwrap();
        let a = m.memcg_create(p).unwrap();
        let b = m.memcg_create(p).unwrap();
        for x in [p, a, b] {
            m.set_memcg_soft_limit(x, 0);
        }
        // p's counter already holds its children's per-CPU memory (charged to the parent's
        // obj_cgroup at creation, as 6.1's mem_cgroup_alloc() does with __GFP_ACCOUNT).
        let percpu = m.memory.get(p as usize).usage;
        let bytes = 2 * crate::kmem::MEMCG_PERCPU_BYTES * m.cfg.cpus as u64;
        assert_eq!(percpu, bytes.div_ceil(crate::config::PAGE_SIZE));
        charge(&mut m, a, 10);
        charge(&mut m, b, 10);
        // a's first event put a (1) and p on the tree; b's first put b (1) and re-keyed
        // p with its usage then (its percpu, a's 10 and b's 1).
        let keys: Vec<(u64, MemcgId)> = m.soft_tree.set.iter().map(|&(e, _, x)| (e, x)).collect();
        assert_eq!(keys, vec![(1, a), (1, b), (11 + percpu, p)]);
        assert_eq!(m.soft_tree_pop_largest(), Some(p));
        assert_eq!(
            m.soft_tree_pop_largest(),
            Some(b),
            "newest of equal keys first"
        );
        assert_eq!(m.soft_tree_pop_largest(), Some(a));
        assert_eq!(m.soft_tree_pop_largest(), None);
    }

    #[test]
    fn popping_drops_groups_no_longer_in_excess() {
        let mut m = machine("tree");
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let b = m.memcg_create(ROOT_MEMCG).unwrap();
        m.set_memcg_soft_limit(a, 0);
        m.set_memcg_soft_limit(b, 0);
        charge(&mut m, a, 1);
        charge(&mut m, b, 1);
        // b is uncharged without an event reaching the tree: its key is stale, and it is the
        // rightmost node.
        m.memory.uncharge(b as usize, 1);
        assert_eq!(m.soft_tree_pop_largest(), Some(a));
        assert!(m.soft_tree.set.is_empty());
        assert!(!m.memcg(b).soft.on_tree);
    }

    #[test]
    fn counters_count_contributing_descendants() {
        let mut m = machine("rework");
        let p = m.memcg_create(ROOT_MEMCG).unwrap();
        let a = m.memcg_create(p).unwrap();
        let b = m.memcg_create(p).unwrap();
        m.set_memcg_soft_limit(a, 0);
        m.set_memcg_soft_limit(b, 0);
        charge(&mut m, a, 1);
        charge(&mut m, b, 1);
        assert_eq!(m.memcg_topo.children_in_excess(p), 2);
        assert_eq!(m.memcg_topo.children_in_excess(ROOT_MEMCG), 2);
        assert_eq!(m.memcg_topo.children_in_excess(a), 0);
        // a drops to its soft limit: the next update withdraws it.
        m.set_memcg_soft_limit(a, 2000);
        charge(&mut m, a, 1100);
        assert!(!m.memcg(a).soft.contributed);
        assert_eq!(m.memcg_topo.children_in_excess(p), 1);
        // b goes away while contributing.
        m.memory.uncharge(b as usize, 1);
        m.memcg_offline(b).unwrap();
        assert_eq!(m.memcg_topo.children_in_excess(p), 0);
        assert_eq!(m.memcg_topo.children_in_excess(ROOT_MEMCG), 0);
    }

    /// The predicate on the tree of the rework's patch 3 changelog, with E in excess:
    /// root - A - B (limit reclaim root) - {C, D}; root - E - F; root - G.
    #[test]
    fn the_predicate_visits_skips_and_skips_trees() {
        let mut m = machine("rework");
        let r = ROOT_MEMCG;
        let a = m.memcg_create(r).unwrap();
        let b = m.memcg_create(a).unwrap();
        let c = m.memcg_create(b).unwrap();
        let d = m.memcg_create(b).unwrap();
        let e = m.memcg_create(r).unwrap();
        let f = m.memcg_create(e).unwrap();
        let g = m.memcg_create(r).unwrap();
        m.set_memcg_soft_limit(e, 0);
        m.set_memcg_soft_limit(c, 0);
        charge(&mut m, e, 1);
        charge(&mut m, c, 1);
        use IterVisit::*;
        assert_eq!(m.soft_reclaim_eligible(r, r), Skip);
        assert_eq!(m.soft_reclaim_eligible(a, r), Skip);
        assert_eq!(m.soft_reclaim_eligible(e, r), Visit);
        assert_eq!(m.soft_reclaim_eligible(f, r), Visit, "below an offender");
        assert_eq!(m.soft_reclaim_eligible(g, r), SkipTree);
        assert_eq!(m.soft_reclaim_eligible(c, b), Visit);
        assert_eq!(m.soft_reclaim_eligible(d, b), SkipTree);
        let mut out = Vec::new();
        let looked = m.memcg_walk(r, |m, x| m.soft_reclaim_eligible(x, r), &mut out);
        assert_eq!(out, vec![c, e, f]);
        // r, a, b, c, d, e, f, g: d's and g's subtrees are empty, so all are looked at.
        assert_eq!(looked, 8);
        // Without counters the same groups are visited.
        m.cfg.softlimit = SoftLimitPolicy::ReworkWalk;
        let mut out2 = Vec::new();
        m.memcg_walk(r, |m, x| m.soft_reclaim_eligible(x, r), &mut out2);
        assert_eq!(out, out2);
    }

    #[test]
    fn skip_tree_saves_the_walk_of_idle_subtrees() {
        let mut m = machine("rework");
        let r = ROOT_MEMCG;
        let hog = m.memcg_create(r).unwrap();
        m.set_memcg_soft_limit(hog, 0);
        charge(&mut m, hog, 1);
        let idle = m.memcg_create(r).unwrap();
        for _ in 0..50 {
            let x = m.memcg_create(idle).unwrap();
            m.memcg_create(x).unwrap();
        }
        let mut out = Vec::new();
        let looked = m.memcg_walk(r, |m, x| m.soft_reclaim_eligible(x, r), &mut out);
        assert_eq!(out, vec![hog]);
        assert_eq!(looked, 3, "root, hog, and idle's skipped subtree");
        m.cfg.softlimit = SoftLimitPolicy::ReworkWalk;
        let looked = m.memcg_walk(r, |m, x| m.soft_reclaim_eligible(x, r), &mut out);
        assert_eq!(out, vec![hog]);
        assert_eq!(looked, 103);
        // Nobody in excess: the rework does not even start a soft pass.
        m.cfg.softlimit = SoftLimitPolicy::Rework;
        m.set_memcg_soft_limit(hog, crate::page_counter::PAGE_COUNTER_MAX);
        charge(&mut m, hog, 1100);
        let sc = ScanControl::new(r, 32, false);
        assert!(!m.should_soft_reclaim(&sc));
        m.cfg.softlimit = SoftLimitPolicy::ReworkWalk;
        assert!(m.should_soft_reclaim(&sc));
    }

    #[test]
    fn the_reclaim_iterator_resumes_where_the_last_walker_left() {
        let mut m = machine("tree");
        let r = ROOT_MEMCG;
        let a = m.memcg_create(r).unwrap();
        let b = m.memcg_create(a).unwrap();
        let c = m.memcg_create(a).unwrap();
        assert_eq!(m.soft_reclaim_iter(a, None), Some(a));
        assert_eq!(m.soft_reclaim_iter(a, Some(a)), Some(b));
        // A new walker joins at the saved position.
        assert_eq!(m.soft_reclaim_iter(a, None), Some(c));
        // A walker under way sees the end of the round.
        assert_eq!(m.soft_reclaim_iter(a, Some(c)), None);
        assert_eq!(m.soft_reclaim_iter(a, None), Some(a));
        // One that just joined at the end restarts instead.
        m.soft_reclaim_iter(a, Some(a));
        m.soft_reclaim_iter(a, Some(b));
        assert_eq!(m.soft_reclaim_iter(a, None), Some(a));
    }

    /// The eligibility walk that keeps the ancestors' excess on a stack returns what the
    /// predicate walk returns (same groups, same order, same count looked at) for every
    /// policy, walk root and mix of soft limits, usages and removed groups, with soft limits
    /// set anywhere or only on a few groups (whole subtrees never have one). The kept
    /// pre-order list of reclaim's full walk stays what a fresh walk returns.
    #[test]
    fn eligible_walk_equals_the_predicate_walk() {
        for (policy, limited) in [
            ("tree", 1),
            ("rework-walk", 1),
            ("rework", 1),
            ("rework-walk", 17),
            ("rework", 17),
        ] {
            let mut m = machine(policy);
            let mut rng = crate::rng::Rng::new(7);
            let mut ids = vec![ROOT_MEMCG];
            for _ in 0..300 {
                let p = ids[rng.below(ids.len() as u64) as usize];
                ids.push(m.memcg_create(p).unwrap());
            }
            for round in 0..40 {
                for &x in &ids[1..] {
                    if !m.memcg_topo.online(x) {
                        continue;
                    }
                    match rng.below(6) {
                        0 if x % limited == 0 => m.set_memcg_soft_limit(x, rng.below(4)),
                        1 => m.set_memcg_soft_limit(x, PAGE_COUNTER_MAX),
                        2 => charge(&mut m, x, 1 + rng.below(3)),
                        _ => {}
                    }
                }
                // Remove a few leaves; their pages keep some of them as dying groups.
                for _ in 0..3 {
                    let x = ids[1 + rng.below(ids.len() as u64 - 1) as usize];
                    let _ = m.memcg_offline(x);
                }
                m.release_dying_memcgs();
                m.check_memcg_topology().unwrap();
                let mut roots: Vec<MemcgId> = ids
                    .iter()
                    .copied()
                    .filter(|&x| m.memcg_alive(x))
                    .step_by(7)
                    .collect();
                roots.push(ROOT_MEMCG);
                for r in roots {
                    let (mut want, mut got) = (Vec::new(), Vec::new());
                    let looked = m.memcg_walk(r, |m, x| m.soft_reclaim_eligible(x, r), &mut want);
                    assert_eq!(
                        m.soft_eligible_walk(r, &mut got),
                        looked,
                        "{policy}, round {round}, root {r}"
                    );
                    assert_eq!(got, want, "{policy}, round {round}, root {r}");
                    let looked = m.memcg_walk(r, |_, _| IterVisit::Visit, &mut want);
                    for _ in 0..2 {
                        assert_eq!(m.memcg_subtree_preorder(r, &mut got), looked);
                        assert_eq!(got, want, "full walk, round {round}, root {r}");
                    }
                }
            }
        }
    }
}
