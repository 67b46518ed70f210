//! LRU lists and their maintenance: struct lruvec (include/linux/mmzone.h) and mm/swap.c —
//! adding pages to the LRU (6.1 placement: new anon and file pages start inactive, mlocked
//! pages go to the unevictable list), folio_mark_accessed()'s two-step promotion,
//! activation, rotation to the tail at writeback end, and lru_note_cost().
//!
//! Lists are intrusive and doubly linked through frame numbers in [`PageCgroup`]: O(1) add at
//! the head, isolate from the tail, move and delete. Per-CPU LRU add batches are not modelled
//! (a page is on its list as soon as it is added).
//!
//! Reaching the tail's pages one after another is a chain of dependent loads, one frame's
//! metadata after another. So that isolation does not wait on each, a reader's requests
//! advance a cursor from the tail of its group's file lists towards the head, a page a
//! request, asking the host to load the page it reaches (`Lruvec::walk`, lru_walk_step()):
//! by the time reclaim isolates from the tail, the frames it will walk are mostly in the
//! host's cache. The cursor is a hint only: nothing in the model reads it.

use crate::machine::Machine;
use crate::memcontrol::MemcgId;
use crate::page_cgroup::{pf, Pfn, LRU_NONE, NIL};
use crate::stat::{lru, Stat};

/// Node id of the (single) node modelled now: every frame is on node 0. Lruvecs are per
/// (memcg, node) in the data; reclaim and placement use the page's node, which is always 0.
pub const NID0: usize = 0;
/// Number of lruvecs each memcg carries. With 6.1's reclaim, one per node: slot NID0 (one
/// node is supported now). With `reclaim=3.11`, one per zone, as that kernel kept LRU lists
/// per (memcg, zone) (mem_cgroup_per_zone): slot z holds the group's pages of zone z, and
/// what 6.1 keeps per node (the reclaim costs, refault snapshots, the workingset clock, the
/// congested flag) stays in slot NID0.
pub const LRUVEC_SLOTS: usize = crate::mmzone::NR_ZONES;

/// A memcg's lruvecs, indexed by slot (`LRUVEC_SLOTS`). Slot NID0 sits in the memcg struct;
/// the other slots, which only `reclaim=3.11` fills, are allocated at the first page linked
/// to one, so that a 6.1 machine's groups do not carry them. An unallocated slot reads as
/// an empty lruvec.
#[derive(Clone, Debug, Default)]
pub struct Lruvecs {
    node: Lruvec,
    zones: Option<Box<[Lruvec; LRUVEC_SLOTS - 1]>>,
}

impl Lruvecs {
    /// The allocated lruvecs with their slots.
    pub fn iter(&self) -> impl Iterator<Item = &Lruvec> {
        std::iter::once(&self.node).chain(self.zones.iter().flat_map(|z| z.iter()))
    }
}

impl std::ops::Index<usize> for Lruvecs {
    type Output = Lruvec;
    #[inline]
    fn index(&self, slot: usize) -> &Lruvec {
        static EMPTY: std::sync::OnceLock<Lruvec> = std::sync::OnceLock::new();
        if slot == NID0 {
            return &self.node;
        }
        match &self.zones {
            Some(z) => &z[slot - 1],
            None => EMPTY.get_or_init(Lruvec::default),
        }
    }
}

impl std::ops::IndexMut<usize> for Lruvecs {
    #[inline]
    fn index_mut(&mut self, slot: usize) -> &mut Lruvec {
        if slot == NID0 {
            return &mut self.node;
        }
        let z = self.zones.get_or_insert_with(Default::default);
        &mut z[slot - 1]
    }
}

/// One (memcg, node) set of LRU lists and the reclaim state kept with it.
#[derive(Clone, Debug)]
pub struct Lruvec {
    pub head: [Pfn; lru::NR_LRU_LISTS],
    pub tail: [Pfn; lru::NR_LRU_LISTS],
    /// Exact list sizes (lruvec_lru_size()).
    pub size: [u64; lru::NR_LRU_LISTS],
    pub anon_cost: u64,
    pub file_cost: u64,
    /// 3.11's zone_reclaim_stat (`reclaim=3.11`): pages of each type (anon 0, file 1)
    /// recently added or scanned, and those of them recently activated or found referenced;
    /// get_scan_count() weighs each type by their ratio.
    pub recent_scanned: [u64; 2],
    pub recent_rotated: [u64; 2],
    /// The workingset eviction clock (nonresident_age).
    pub nonresident_age: u64,
    /// Snapshot of WORKINGSET_ACTIVATE_{ANON,FILE} at the end of the last reclaim cycle.
    pub refaults: [u64; 2],
    /// LRUVEC_CONGESTED: reclaim found every dirty page queued and marked for immediate
    /// reclaim.
    pub congested: bool,
    /// The multi-generational LRU's generations (lru_gen.rs), made at their first use.
    pub gen: Option<Box<crate::lru_gen::LruGen>>,
    /// Per list, the page up to which the frames from the tail were last asked to be loaded
    /// (NIL: start again at the tail), and how many pages that is.
    walk: [Pfn; lru::NR_LRU_LISTS],
    walk_ahead: [u8; lru::NR_LRU_LISTS],
}

/// How far from a list's tail its cursor loads frames ahead of isolation: two batches of
/// SWAP_CLUSTER_MAX.
const WALK_AHEAD: u8 = 64;

impl Default for Lruvec {
    fn default() -> Self {
        Lruvec {
            head: [NIL; lru::NR_LRU_LISTS],
            tail: [NIL; lru::NR_LRU_LISTS],
            size: [0; lru::NR_LRU_LISTS],
            anon_cost: 0,
            file_cost: 0,
            recent_scanned: [0; 2],
            recent_rotated: [0; 2],
            nonresident_age: 0,
            refaults: [0; 2],
            congested: false,
            gen: None,
            walk: [NIL; lru::NR_LRU_LISTS],
            walk_ahead: [0; lru::NR_LRU_LISTS],
        }
    }
}

impl Lruvec {
    pub fn evictable_size(&self) -> u64 {
        self.size[0] + self.size[1] + self.size[2] + self.size[3]
    }
}

/// Link `pfn` at the head (or the tail) of the intrusive list whose ends are `head` and
/// `tail`, through the frames' prev/next (a list_head's list_add() and list_add_tail()).
#[inline]
pub(crate) fn list_link(
    meta: &mut [crate::page_cgroup::FrameMeta],
    head: &mut Pfn,
    tail: &mut Pfn,
    pfn: Pfn,
    at_tail: bool,
) {
    if at_tail {
        let t = *tail;
        meta[pfn as usize].pc.prev = t;
        meta[pfn as usize].pc.next = NIL;
        if t == NIL {
            *head = pfn;
        } else {
            meta[t as usize].pc.next = pfn;
        }
        *tail = pfn;
    } else {
        let h = *head;
        meta[pfn as usize].pc.prev = NIL;
        meta[pfn as usize].pc.next = h;
        if h == NIL {
            *tail = pfn;
        } else {
            meta[h as usize].pc.prev = pfn;
        }
        *head = pfn;
    }
}

/// Unlink `pfn` from the intrusive list whose ends are `head` and `tail` (list_del()), its
/// links cleared; returns the page that followed it towards the tail.
#[inline]
pub(crate) fn list_unlink(
    meta: &mut [crate::page_cgroup::FrameMeta],
    head: &mut Pfn,
    tail: &mut Pfn,
    pfn: Pfn,
) -> Pfn {
    let (prev, next) = (meta[pfn as usize].pc.prev, meta[pfn as usize].pc.next);
    if prev == NIL {
        *head = next;
    } else {
        meta[prev as usize].pc.next = next;
    }
    if next == NIL {
        *tail = prev;
    } else {
        meta[next as usize].pc.prev = prev;
    }
    meta[pfn as usize].pc.prev = NIL;
    meta[pfn as usize].pc.next = NIL;
    next
}

impl Machine {
    /// The list a page belongs on from its flags (folio_lru_list()).
    #[inline]
    pub fn page_lru_list(&self, pfn: Pfn) -> usize {
        let f = self.frames.flags(pfn);
        if f & pf::MLOCKED != 0 {
            return lru::UNEVICTABLE;
        }
        // With a unified LRU, anon and file pages share one list pair (kept in the file
        // slots, so memory.stat reports them there).
        let base = if f & pf::SWAPBACKED != 0 && !self.unified_lru {
            lru::INACTIVE_ANON
        } else {
            lru::INACTIVE_FILE
        };
        if f & pf::ACTIVE != 0 {
            base + lru::LRU_ACTIVE
        } else {
            base
        }
    }

    /// Link a folio at the head (or tail) of list `l` of its memcg's lruvec.
    fn lru_link(&mut self, pfn: Pfn, l: usize, at_tail: bool) {
        let (memcg, nr) = self.lru_link_nostat(pfn, l, at_tail);
        let slot = self.lru_slot(pfn);
        self.lru_walk_step(memcg, slot, l);
        self.mod_stat(memcg, lru::stat(l), nr as i64);
    }

    /// lru_link() leaving the list's statistic to the caller; returns the folio's memcg and
    /// its pages (a huge folio's 512 count in the list's size).
    #[inline]
    fn lru_link_nostat(&mut self, pfn: Pfn, l: usize, at_tail: bool) -> (MemcgId, u64) {
        let nr = self.folio_nr_pages(pfn);
        let memcg = self.frames.memcg(pfn);
        debug_assert!(memcg != 0, "page on LRU without a memcg");
        debug_assert_eq!(self.frames.lru(pfn), LRU_NONE, "page already on an LRU");
        let slot = self.lru_slot(pfn);
        let lv = &mut self.memcgs[memcg as usize].lruvec[slot];
        let pc = &mut self.frames.meta;
        list_link(pc, &mut lv.head[l], &mut lv.tail[l], pfn, at_tail);
        lv.size[l] += nr;
        let f = &mut pc[pfn as usize].pc.flags;
        *f = (*f & !pf::LRU_MASK) | l as u16;
        (memcg, nr)
    }

    /// One step of list `l`'s cursor towards the head: ask the host to load the frame that
    /// reclaim will take from the tail after those already loaded. Called once per request
    /// by a reader whose pages the list holds, so that each load has the time of a request
    /// to arrive before the next step follows it.
    #[inline]
    pub(crate) fn lru_walk_step(&mut self, memcg: MemcgId, slot: usize, l: usize) {
        let lv = &mut self.memcgs[memcg as usize].lruvec[slot];
        if lv.walk_ahead[l] >= WALK_AHEAD {
            return;
        }
        let pc = &self.frames.meta;
        let c = lv.walk[l];
        let next = if c == NIL {
            lv.walk_ahead[l] = 0;
            lv.tail[l]
        } else {
            pc[c as usize].pc.prev
        };
        if next != NIL {
            crate::page_cgroup::prefetch_read(&pc[next as usize]);
            lv.walk[l] = next;
            lv.walk_ahead[l] += 1;
        }
    }

    /// Unlink a folio from whatever list it is on.
    pub fn lru_del(&mut self, pfn: Pfn) {
        if self.frames.lru(pfn) == crate::lru_gen::LRU_GEN {
            self.lru_gen_del_folio(pfn, false);
            return;
        }
        if let Some((memcg, l, nr)) = self.lru_unlink(pfn) {
            self.mod_stat(memcg, lru::stat(l), -(nr as i64));
        }
    }

    /// Unlink a folio from its list, leaving the list's statistic to the caller; returns
    /// the folio's memcg, list and pages, or None if it was on none.
    #[inline]
    fn lru_unlink(&mut self, pfn: Pfn) -> Option<(MemcgId, usize, u64)> {
        let l = self.frames.lru(pfn);
        if l == LRU_NONE {
            return None;
        }
        debug_assert!(l < lru::NR_LRU_LISTS as u16, "a tail frame is on no list");
        let nr = self.folio_nr_pages(pfn);
        let l = l as usize;
        let memcg = self.frames.memcg(pfn);
        let slot = self.lru_slot(pfn);
        let lv = &mut self.memcgs[memcg as usize].lruvec[slot];
        let pc = &mut self.frames.meta;
        let next = list_unlink(pc, &mut lv.head[l], &mut lv.tail[l], pfn);
        lv.size[l] -= nr;
        if lv.walk[l] == pfn {
            // The cursor goes back to the page after it, towards the tail (or starts over).
            lv.walk[l] = next;
            lv.walk_ahead[l] = lv.walk_ahead[l].saturating_sub(1);
        }
        let f = &mut pc[pfn as usize].pc.flags;
        *f = (*f & !pf::LRU_MASK) | LRU_NONE;
        Some((memcg, l, nr))
    }

    /// folio_add_lru(): put a new page at the head of the list its flags select.
    pub fn lru_add(&mut self, pfn: Pfn) {
        if self.lru_gen_enabled() {
            // folio_add_lru(): a page added in a fault is hot (the youngest generation),
            // unless reclaim or compaction inside the fault added it (PF_MEMALLOC).
            if self.lru_fault && !self.memalloc && !self.frames.test(pfn, pf::MLOCKED) {
                self.frames.set(pfn, pf::ACTIVE);
            }
            if self.lru_gen_add_folio(pfn, false) {
                return;
            }
        }
        self.lru_add_classic(pfn);
    }

    /// lruvec_add_folio() on the two-list LRU.
    pub(crate) fn lru_add_classic(&mut self, pfn: Pfn) {
        let l = self.lru_link_head(pfn);
        if l != lru::UNEVICTABLE && self.reclaim_3_11() {
            // 3.11's __pagevec_lru_add_fn(): update_page_reclaim_stat(), an active page
            // counting as rotated.
            self.note_reclaim_stat(pfn, 1, lru::is_active(l) as u64);
        }
    }

    /// Link a page off the LRU at the head of the list its flags select (an unevictable one
    /// loses PG_active); returns the list.
    fn lru_link_head(&mut self, pfn: Pfn) -> usize {
        let l = self.page_lru_list(pfn);
        if l == lru::UNEVICTABLE {
            self.frames.clear(pfn, pf::ACTIVE);
        }
        self.lru_link(pfn, l, false);
        l
    }

    /// 3.11's update_page_reclaim_stat() for `pfn`'s lruvec and type: `scanned` pages
    /// scanned, `rotated` of them rotated.
    pub(crate) fn note_reclaim_stat(&mut self, pfn: Pfn, scanned: u64, rotated: u64) {
        let memcg = self.frames.memcg(pfn);
        let file = self.frames.flags(pfn) & pf::SWAPBACKED == 0;
        let slot = self.lru_slot(pfn);
        self.note_lruvec_reclaim_stat(memcg, slot, file, scanned, rotated);
    }

    /// The lruvec slot of a page's memcg that holds it: its zone's under `reclaim=3.11`,
    /// else its node's.
    #[inline]
    pub(crate) fn lru_slot(&self, pfn: Pfn) -> usize {
        if self.reclaim_3_11() {
            self.zones.zone_of(pfn)
        } else {
            NID0
        }
    }

    /// 3.11's reclaim_stat of `memcg`'s lruvec for one type: `scanned` pages scanned,
    /// `rotated` of them rotated.
    pub(crate) fn note_lruvec_reclaim_stat(
        &mut self,
        memcg: MemcgId,
        slot: usize,
        file: bool,
        scanned: u64,
        rotated: u64,
    ) {
        let lv = &mut self.memcgs[memcg as usize].lruvec[slot];
        lv.recent_scanned[file as usize] += scanned;
        lv.recent_rotated[file as usize] += rotated;
    }

    /// Unlink folios from the tail of list `l` of `memcg`'s lruvec `slot` until `n` pages
    /// are taken, appending them to `out` oldest first, and cut the list once after the last
    /// (isolate_lru_folios()'s list moves: a huge folio counts its 512 pages towards `n`);
    /// the list's statistic is left to the caller. Returns the pages taken.
    pub(crate) fn lru_unlink_tail(
        &mut self,
        memcg: MemcgId,
        slot: usize,
        l: usize,
        n: u64,
        out: &mut Vec<Pfn>,
    ) -> u64 {
        let huge = self.thp.folios > 0;
        let lv = &mut self.memcgs[memcg as usize].lruvec[slot];
        let meta = &mut self.frames.meta;
        let mut t = lv.tail[l];
        let mut taken = 0u64;
        let mut folios = 0u64;
        let cursor = lv.walk[l];
        let mut passed = false;
        while taken < n && t != NIL {
            passed |= t == cursor;
            let nr = crate::huge_memory::nr_pages(meta, t, huge);
            let pc = &mut meta[t as usize].pc;
            debug_assert_eq!(pc.memcg, memcg);
            debug_assert_eq!((pc.flags & pf::LRU_MASK) as usize, l);
            let prev = pc.prev;
            pc.prev = NIL;
            pc.next = NIL;
            pc.flags = (pc.flags & !pf::LRU_MASK) | LRU_NONE;
            out.push(t);
            taken += nr;
            folios += 1;
            t = prev;
        }
        lv.tail[l] = t;
        if t == NIL {
            lv.head[l] = NIL;
        } else {
            meta[t as usize].pc.next = NIL;
        }
        lv.size[l] -= taken;
        if passed {
            lv.walk[l] = NIL;
        } else {
            lv.walk_ahead[l] = u64::from(lv.walk_ahead[l]).saturating_sub(folios) as u8;
        }
        taken
    }

    /// move_folios_to_lru(): put isolated folios of `memcg` back, in order, each at the head
    /// of the list its flags select (as lru_add()), with each list's statistic updated once.
    pub(crate) fn lru_add_batch(&mut self, memcg: MemcgId, pages: &[Pfn]) {
        if self.lru_gen_enabled() {
            for &pfn in pages {
                if !self.lru_gen_add_folio(pfn, false) {
                    self.lru_link_head(pfn);
                }
            }
            return;
        }
        let mut added = [0u64; lru::NR_LRU_LISTS];
        for &pfn in pages {
            debug_assert_eq!(self.frames.memcg(pfn), memcg);
            let l = self.page_lru_list(pfn);
            if l == lru::UNEVICTABLE {
                self.frames.clear(pfn, pf::ACTIVE);
            }
            let (_, nr) = self.lru_link_nostat(pfn, l, false);
            added[l] += nr;
        }
        for (l, &n) in added.iter().enumerate() {
            self.mod_stat_units(memcg, lru::stat(l), 1, n);
        }
    }

    /// Put back a page (after isolation or a flag change) at the head of its list.
    pub fn lru_putback(&mut self, pfn: Pfn) {
        self.lru_del(pfn);
        if self.lru_gen_enabled() && self.lru_gen_add_folio(pfn, false) {
            return;
        }
        self.lru_link_head(pfn);
    }

    /// folio_rotate_reclaimable(): move to the tail of the inactive list, and count
    /// PGROTATED. Only a page on the LRU moves: one isolated by a reclaimer stays where it
    /// is, uncounted, and its putback puts it at the head.
    pub fn lru_rotate_to_tail(&mut self, pfn: Pfn) {
        if self.frames.lru(pfn) == LRU_NONE {
            return;
        }
        if self.frames.lru(pfn) == crate::lru_gen::LRU_GEN {
            // lru_move_tail_fn(): the oldest generation's tail.
            self.lru_gen_del_folio(pfn, false);
            self.frames.clear(pfn, pf::ACTIVE);
            self.lru_gen_add_folio(pfn, true);
            self.mod_stat(crate::memcontrol::ROOT_MEMCG, Stat::Pgrotated, 1);
            return;
        }
        let l = self.page_lru_list(pfn);
        if l == lru::UNEVICTABLE {
            return;
        }
        self.lru_del(pfn);
        self.frames.clear(pfn, pf::ACTIVE);
        let l = self.page_lru_list(pfn);
        self.lru_link(pfn, l, true);
        self.mod_stat(crate::memcontrol::ROOT_MEMCG, Stat::Pgrotated, 1);
    }

    /// folio_mark_accessed(): the two-step promotion of unmapped page-cache pages.
    pub fn mark_page_accessed(&mut self, pfn: Pfn) {
        if self.lru_gen_enabled() {
            self.folio_inc_refs(pfn);
            return;
        }
        let f = self.frames.flags(pfn);
        if f & pf::REFERENCED == 0 {
            self.frames.set(pfn, pf::REFERENCED);
            return;
        }
        if f & pf::MLOCKED != 0 {
            return;
        }
        if f & pf::ACTIVE == 0 {
            self.frames.set(pfn, pf::ACTIVE);
            if self.frames.lru(pfn) != LRU_NONE {
                if self.reclaim_3_11() {
                    // 3.11's __activate_page(): update_page_reclaim_stat(lruvec, file, 1).
                    self.note_reclaim_stat(pfn, 1, 1);
                }
                self.lru_putback(pfn);
                let memcg = self.frames.memcg(pfn);
                self.mod_stat(memcg, Stat::Pgactivate, 1);
            }
            self.frames.clear(pfn, pf::REFERENCED);
            // workingset_activation()
            let memcg = self.frames.memcg(pfn);
            self.workingset_age_nonresident(memcg, 1);
        }
    }

    /// lru_note_cost(): add reclaim cost to a lruvec and every ancestor, halving both costs
    /// when they exceed a quarter of the lruvec's evictable size.
    pub fn lru_note_cost(&mut self, memcg: MemcgId, file: bool, nr_io: u64, nr_rotated: u64) {
        // 6.1: IO and rotations are weighed 1:1 (a single nr_pages argument).
        let cost = nr_io + nr_rotated;
        if cost == 0 {
            return;
        }
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            // lruvec_page_state(): the statistics a reader sees (rstat.rs).
            let lrusize = self.stat_view(m, Stat::InactiveAnon)
                + self.stat_view(m, Stat::ActiveAnon)
                + self.stat_view(m, Stat::InactiveFile)
                + self.stat_view(m, Stat::ActiveFile);
            let mc = &mut self.memcgs[m as usize];
            let lv = &mut mc.lruvec[NID0];
            if file {
                lv.file_cost += cost;
            } else {
                lv.anon_cost += cost;
            }
            if lv.anon_cost + lv.file_cost > lrusize / 4 {
                lv.anon_cost /= 2;
                lv.file_cost /= 2;
            }
            cur = mc.parent;
        }
    }
}
