//! The multi-generational LRU of Linux 6.1 (CONFIG_LRU_GEN): the lru_gen part of
//! mm/vmscan.c, its helpers in include/linux/mm_inline.h (lru_gen_add_folio(),
//! lru_gen_del_folio(), lru_gen_update_size()), folio_inc_refs() of mm/swap.c, and
//! lru_gen_eviction() / lru_gen_refault() of mm/workingset.c.
//!
//! Each lruvec keeps its evictable pages in generations numbered `min_seq[type]..=max_seq`
//! (anon and file apart; between MIN_NR_GENS 2 and MAX_NR_GENS 4 of them), a list per
//! generation, type and zone. A page's generation is kept in its flags (here a byte per
//! frame, [`LruGenCtl::pages`], beside the list it sits on, which may lag: the page-table
//! walk changes a page's generation without moving it, and eviction's sort_folio() moves it
//! to its list when it meets it). The two youngest generations count as active in
//! memory.stat and /proc/meminfo, the others as inactive.
//!
//! * Placement (lru_gen_add_folio()): a page faulted in (PG_active set by folio_add_lru() in
//!   a fault, unless reclaim or compaction inside it adds the page: PF_MEMALLOC) joins
//!   max_seq; anon not in the swap cache, and a page waiting for its write
//!   with PG_reclaim, max_seq - 1; a page rotated at the end of its write, the oldest
//!   generation at its tail; anything else the second oldest (the oldest while there are
//!   only two or three).
//! * Accesses through file descriptors (folio_mark_accessed() → folio_inc_refs()): PG_referenced,
//!   then PG_workingset, then the two refs bits. refs (the bits plus PG_workingset) make the
//!   tier: order_base_2(refs + 1), tiers 0..3.
//! * The aging (try_to_inc_max_seq(), inc_max_seq(), inc_min_seq()): a new youngest
//!   generation when should_run_aging() finds too few (min_seq + 2 > max_seq, or max_seq
//!   = min_seq + 2 and the youngest holds more than half or the oldest less than a quarter),
//!   from kswapd's lru_gen_age_node() before its reclaim, and from direct and memcg reclaim
//!   when eviction runs short. With the LRU_GEN_MM_WALK capability (0x0002) it first walks
//!   the page tables of the group's processes: every young PTE of a page of the group moves
//!   the page to max_seq and clears the bit.
//! * The eviction (evict_folios()): from the oldest generation of the type
//!   get_type_to_scan() picks, zone by zone from the highest, up to MAX_LRU_BATCH folios a
//!   call and MIN_LRU_BATCH isolated: sort_folio() moves a page whose generation moved on
//!   (promoted), protects one whose tier is above the one the PID controller chose
//!   (protected: the next generation, counted in workingset_activate), and moves one under
//!   writeback, or a dirty file page, to the next generation with PG_reclaim; the rest are
//!   isolated and go through shrink_folio_list(). Rejected pages go back to the youngest
//!   generation (PG_active); clean ones that shrink_folio_list() kept are tried once more.
//! * The PID controller (read_ctrl_pos(), positive_ctrl_err(), get_tier_idx(),
//!   get_type_to_scan()): refaults against evictions (plus protections) per type and tier,
//!   averaged over the generations evicted (halved at each min_seq step); a tier is
//!   protected while its refault rate is above the first tier's, and the type whose first
//!   tier refaults less, weighed by swappiness, is evicted.
//! * lru_gen_look_around(): a young page found by the rmap walk during eviction has its
//!   neighbours in the same page table (up to MIN_LRU_BATCH pages around it) checked as
//!   well, and the young ones promoted to max_seq.
//! * Refaults (lru_gen_refault()): a shadow holds the group, the min_seq of the page's type
//!   at eviction and its refs; a refault counts (workingset_refault_*, and refaulted[] for
//!   the controller) only while that min_seq has not moved; one in a fault, or of a page used
//!   through file descriptors four times, restores PG_workingset and the refs
//!   (workingset_restore_*).
//! * min_ttl_ms: kswapd does not age a group whose oldest file generation is younger, and
//!   when it can age none it invokes the OOM killer.
//! * /sys/kernel/mm/lru_gen/enabled switches it at run time (lru_gen_change_state():
//!   every evictable page moves between the two-list LRU and the generations).
//!
//! Simplified, with the reasons in docs/FIDELITY.md: the page-table walk is the group's
//! own pages with their accessed bits, not its processes' page tables (no mm_struct list,
//! no bloom filters, no skipping of processes that did not run or hold fewer than 64
//! pages; a page of the group mapped only by another group's process is walked too; a
//! group with no page mapped is not walked at all; a PTE looked at costs an eighth of
//! `scan_cost`);
//! look-around reaches the neighbours of anon pages and file pages in their mapping; a
//! walk's or look-around's `can_swap` is the reclaim's; no per-CPU LRU batches; the memcg
//! LRU of 6.5 is not there (6.1 walks the groups as classic reclaim does).

use crate::machine::Machine;
use crate::memcontrol::{MemcgId, ROOT_MEMCG};
use crate::mmzone::NR_ZONES;
use crate::page_cgroup::{pf, Pfn, NIL};
use crate::stat::{NodeEvent, Stat};
use crate::swap::NID0;
use crate::vmscan::{ScanControl, DEF_PRIORITY};

pub const MIN_NR_GENS: u64 = 2;
pub const MAX_NR_GENS: usize = 4;
pub const MAX_NR_TIERS: usize = 4;
/// LRU_REFS_WIDTH on x86_64 (MAX_NR_TIERS - 2).
pub const LRU_REFS_WIDTH: u32 = 2;
const REFS_MAX: u8 = (1 << LRU_REFS_WIDTH) - 1;
/// MIN_LRU_BATCH (BITS_PER_LONG) and MAX_LRU_BATCH.
pub const MIN_LRU_BATCH: u64 = 64;
pub const MAX_LRU_BATCH: u64 = MIN_LRU_BATCH * 64;

/// The capabilities of /sys/kernel/mm/lru_gen/enabled.
pub const CAP_CORE: u32 = 1;
pub const CAP_MM_WALK: u32 = 2;
pub const CAP_NONLEAF_YOUNG: u32 = 4;
pub const CAPS_ALL: u32 = CAP_CORE | CAP_MM_WALK | CAP_NONLEAF_YOUNG;

/// The LRU value of a page on a generation list (the page's generation is in
/// [`LruGenCtl::pages`]).
pub const LRU_GEN: u16 = 6;

/// Debian's 6.1 runs at HZ=250: the files' times are jiffies of 4 ms.
pub const JIFFY_NS: u64 = 4_000_000;
/// MAX_JIFFY_OFFSET: what msecs_to_jiffies() gives for 2^31 ms and more.
const MAX_JIFFY_OFFSET: u64 = (i64::MAX as u64 >> 1) - 1;

const ANON: usize = 0;
const FILE: usize = 1;

/// The per-frame byte: the generation + 1 (0: on no generation list), the refs bits, and the
/// generation of the list the page sits on.
const GEN_MASK: u8 = 0b111;
const REFS_SHIFT: u8 = 3;
const REFS_MASK: u8 = 0b11 << REFS_SHIFT;
const LIST_SHIFT: u8 = 5;
const LIST_MASK: u8 = 0b11 << LIST_SHIFT;

/// Lists per lruvec: generation × type × zone.
const NR_LISTS: usize = MAX_NR_GENS * 2 * NR_ZONES;

fn list_index(gen: usize, ty: usize, zone: usize) -> usize {
    (gen * 2 + ty) * NR_ZONES + zone
}

/// lru_gen_from_seq().
pub fn gen_from_seq(seq: u64) -> usize {
    (seq % MAX_NR_GENS as u64) as usize
}

/// lru_tier_from_refs(): order_base_2(refs + 1).
pub fn tier_from_refs(refs: u32) -> usize {
    debug_assert!(refs <= 1 << LRU_REFS_WIDTH);
    (u32::BITS - refs.leading_zeros()) as usize
}

/// The machine's lru_gen state: the capabilities, min_ttl and each frame's byte.
#[derive(Clone, Debug, Default)]
pub struct LruGenCtl {
    /// The capability bits written to /sys/kernel/mm/lru_gen/enabled.
    pub caps: u32,
    /// lru_gen_min_ttl, in jiffies.
    pub min_ttl: u64,
    /// Per frame: generation + 1, refs, list generation (see GEN_MASK), up to the highest
    /// frame used since the multi-generational LRU was first enabled.
    pages: Vec<u8>,
}

impl LruGenCtl {
    pub fn new(mglru: bool, min_ttl_ms: u32) -> LruGenCtl {
        LruGenCtl {
            caps: if mglru { CAPS_ALL } else { 0 },
            min_ttl: msecs_to_jiffies(min_ttl_ms),
            pages: Vec::new(),
        }
    }

    /// show_enabled(): "0x%04x\n" of the capabilities x86_64 has (all three).
    pub fn show_enabled(&self) -> String {
        format!("0x{:04x}\n", self.caps & CAPS_ALL)
    }

    /// show_min_ttl(): jiffies_to_msecs(), an unsigned int.
    pub fn show_min_ttl(&self) -> String {
        format!(
            "{}\n",
            (self.min_ttl.wrapping_mul(JIFFY_NS / 1_000_000)) as u32
        )
    }
}

/// msecs_to_jiffies() at HZ=250: rounded up; 2^31 ms and more are MAX_JIFFY_OFFSET.
pub fn msecs_to_jiffies(ms: u32) -> u64 {
    if ms >= 1 << 31 {
        return MAX_JIFFY_OFFSET;
    }
    u64::from(ms).div_ceil(JIFFY_NS / 1_000_000)
}

/// One lruvec's generations (struct lru_gen_struct and lru_gen_mm_state's seq).
#[derive(Clone, Debug)]
pub struct LruGen {
    pub max_seq: u64,
    pub min_seq: [u64; 2],
    /// Each generation's birth, in jiffies.
    pub timestamps: [u64; MAX_NR_GENS],
    head: [Pfn; NR_LISTS],
    tail: [Pfn; NR_LISTS],
    /// Pages per generation, type and zone, by the pages' own generation.
    pub nr_pages: [i64; NR_LISTS],
    /// The PID controller: averages over evicted generations, and the counts of the
    /// generation being evicted (NR_HIST_GENS 1, as without CONFIG_LRU_GEN_STATS).
    pub avg_refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub avg_total: [[u64; MAX_NR_TIERS]; 2],
    pub protected: [[u64; MAX_NR_TIERS - 1]; 2],
    pub evicted: [[u64; MAX_NR_TIERS]; 2],
    pub refaulted: [[u64; MAX_NR_TIERS]; 2],
    /// mm_state.seq: the last max_seq whose walk is done.
    mm_seq: u64,
}

impl LruGen {
    /// lru_gen_init_lruvec() at `jiffies`.
    fn new(jiffies: u64) -> LruGen {
        LruGen {
            max_seq: MIN_NR_GENS + 1,
            min_seq: [0; 2],
            timestamps: [jiffies; MAX_NR_GENS],
            head: [NIL; NR_LISTS],
            tail: [NIL; NR_LISTS],
            nr_pages: [0; NR_LISTS],
            avg_refaulted: [[0; MAX_NR_TIERS]; 2],
            avg_total: [[0; MAX_NR_TIERS]; 2],
            protected: [[0; MAX_NR_TIERS - 1]; 2],
            evicted: [[0; MAX_NR_TIERS]; 2],
            refaulted: [[0; MAX_NR_TIERS]; 2],
            mm_seq: MIN_NR_GENS,
        }
    }

    /// get_nr_gens().
    pub fn nr_gens(&self, ty: usize) -> u64 {
        self.max_seq - self.min_seq[ty] + 1
    }

    /// lru_gen_is_active(): the two youngest generations.
    pub fn is_active(&self, gen: usize) -> bool {
        gen == gen_from_seq(self.max_seq) || gen == gen_from_seq(self.max_seq - 1)
    }

    /// Pages of a generation and type, each zone's count taken at 0 at least.
    pub fn size(&self, gen: usize, ty: usize) -> u64 {
        (0..NR_ZONES)
            .map(|z| self.nr_pages[list_index(gen, ty, z)].max(0) as u64)
            .sum()
    }

    fn list_empty(&self, gen: usize, ty: usize, zone: usize) -> bool {
        self.tail[list_index(gen, ty, zone)] == NIL
    }

    /// The list a page sits on and whether it is empty, for the invariant checker: each
    /// (generation, type, zone) list's head.
    pub fn list_head(&self, gen: usize, ty: usize, zone: usize) -> Pfn {
        self.head[list_index(gen, ty, zone)]
    }

    /// seq_is_valid().
    pub fn seq_is_valid(&self) -> bool {
        self.nr_gens(FILE) >= MIN_NR_GENS
            && self.nr_gens(FILE) <= self.nr_gens(ANON)
            && self.nr_gens(ANON) <= MAX_NR_GENS as u64
    }
}

/// A position of the PID controller (struct ctrl_pos).
#[derive(Clone, Copy, Debug)]
struct CtrlPos {
    refaulted: u64,
    total: u64,
    gain: u64,
}

/// positive_ctrl_err(): the process variable refaults little, or less than the setpoint.
fn positive_ctrl_err(sp: CtrlPos, pv: CtrlPos) -> bool {
    pv.refaulted < MIN_LRU_BATCH
        || u128::from(pv.refaulted) * u128::from(sp.total + MIN_LRU_BATCH) * u128::from(sp.gain)
            <= u128::from(sp.refaulted + 1) * u128::from(pv.total) * u128::from(pv.gain)
}

/// What lru_gen_shrink_lruvec()'s loop keeps between its passes (kswapd resumes it).
#[derive(Clone, Copy, Debug)]
pub struct GenScan {
    scanned: u64,
    reclaimed: u64,
    max_seq: u64,
    need_aging: bool,
    need_swapping: bool,
    /// The loop ended by `goto done` (no memcgs_need_aging update).
    done: bool,
}

/// A page's type: 0 anon, 1 file (folio_is_file_lru()).
#[inline]
fn page_type(flags: u16) -> usize {
    (flags & pf::SWAPBACKED == 0) as usize
}

impl Machine {
    /// lru_gen_enabled().
    #[inline]
    pub fn lru_gen_enabled(&self) -> bool {
        self.lru_gen.caps & CAP_CORE != 0
    }

    fn gen_jiffies(&self) -> u64 {
        self.now() / JIFFY_NS
    }

    /// A group's generations, made as lru_gen_init_lruvec() would at their first use.
    pub(crate) fn lrugen_mut(&mut self, memcg: MemcgId) -> &mut LruGen {
        let j = self.gen_jiffies();
        self.memcgs[memcg as usize].lruvec[NID0]
            .gen
            .get_or_insert_with(|| Box::new(LruGen::new(j)))
    }

    /// A group's generations, if it has any yet.
    pub fn lrugen(&self, memcg: MemcgId) -> Option<&LruGen> {
        self.memcgs[memcg as usize].lruvec[NID0].gen.as_deref()
    }

    fn lg(&self, memcg: MemcgId) -> &LruGen {
        self.lrugen(memcg)
            .expect("a group with pages has generations")
    }

    fn page_byte(&self, pfn: Pfn) -> u8 {
        self.lru_gen.pages.get(pfn as usize).copied().unwrap_or(0)
    }

    /// The byte of frame `pfn`, the array grown to cover the frames handed out so far (as
    /// `Frames::meta` grows), so that a big machine costs the host what a run uses.
    fn page_byte_mut(&mut self, pfn: Pfn) -> &mut u8 {
        let i = pfn as usize;
        if self.lru_gen.pages.len() <= i {
            let n = self.frames.meta.len().max(i + 1);
            self.lru_gen.pages.resize(n, 0);
        }
        &mut self.lru_gen.pages[i]
    }

    /// folio_lru_gen(): the page's generation, None off the generation lists.
    pub fn folio_lru_gen(&self, pfn: Pfn) -> Option<usize> {
        let g = self.page_byte(pfn) & GEN_MASK;
        (g > 0).then(|| (g - 1) as usize)
    }

    /// The generation of the list the page sits on (it may lag its own).
    pub fn folio_list_gen(&self, pfn: Pfn) -> usize {
        ((self.page_byte(pfn) & LIST_MASK) >> LIST_SHIFT) as usize
    }

    fn set_folio_gen(&mut self, pfn: Pfn, gen: Option<usize>) {
        let b = self.page_byte_mut(pfn);
        *b = (*b & !GEN_MASK) | gen.map_or(0, |g| g as u8 + 1);
    }

    fn refs_bits(&self, pfn: Pfn) -> u8 {
        (self.page_byte(pfn) & REFS_MASK) >> REFS_SHIFT
    }

    fn set_refs_bits(&mut self, pfn: Pfn, refs: u8) {
        if refs == 0 && self.lru_gen.pages.is_empty() {
            return;
        }
        let b = self.page_byte_mut(pfn);
        *b = (*b & !REFS_MASK) | (refs << REFS_SHIFT);
    }

    /// Clear the refs bits and PG_referenced | PG_workingset (LRU_REFS_FLAGS).
    fn clear_refs(&mut self, pfn: Pfn) {
        self.set_refs_bits(pfn, 0);
        self.frames.clear(pfn, pf::REFERENCED | pf::WORKINGSET);
    }

    /// folio_lru_refs(): the refs bits plus PG_workingset.
    pub fn folio_lru_refs(&self, pfn: Pfn) -> u32 {
        u32::from(self.refs_bits(pfn)) + u32::from(self.frames.test(pfn, pf::WORKINGSET))
    }

    /// folio_inc_refs(): folio_mark_accessed() under the multi-generational LRU.
    pub(crate) fn folio_inc_refs(&mut self, pfn: Pfn) {
        let f = self.frames.flags(pfn);
        if f & pf::MLOCKED != 0 {
            return;
        }
        if f & pf::REFERENCED == 0 {
            self.frames.set(pfn, pf::REFERENCED);
        } else if f & pf::WORKINGSET == 0 {
            self.frames.set(pfn, pf::WORKINGSET);
        } else {
            let r = self.refs_bits(pfn);
            if r < REFS_MAX {
                self.set_refs_bits(pfn, r + 1);
            }
        }
    }

    /// The statistic a page of type `ty` counts in from generation `gen`.
    fn gen_stat(lg: &LruGen, ty: usize, gen: usize) -> Stat {
        match (ty, lg.is_active(gen)) {
            (ANON, false) => Stat::InactiveAnon,
            (ANON, true) => Stat::ActiveAnon,
            (_, false) => Stat::InactiveFile,
            (_, true) => Stat::ActiveFile,
        }
    }

    /// lru_gen_update_size(): a page leaves generation `old` or joins `new` (or both).
    fn lru_gen_update_size(
        &mut self,
        memcg: MemcgId,
        pfn: Pfn,
        old: Option<usize>,
        new: Option<usize>,
    ) {
        let flags = self.frames.flags(pfn);
        let (ty, zone) = (page_type(flags), self.zones.zone_of(pfn));
        let nr = self.folio_nr_pages(pfn) as i64;
        let lg = self.lrugen_mut(memcg);
        let mut moves = [(Stat::InactiveAnon, 0i64); 2];
        if let Some(g) = old {
            lg.nr_pages[list_index(g, ty, zone)] -= nr;
            moves[0] = (Self::gen_stat(lg, ty, g), -nr);
        }
        if let Some(g) = new {
            lg.nr_pages[list_index(g, ty, zone)] += nr;
            moves[1] = (Self::gen_stat(lg, ty, g), nr);
        }
        if old.is_some() && new.is_some() && moves[0].0 == moves[1].0 {
            return;
        }
        for (s, d) in moves {
            if d != 0 {
                self.mod_stat(memcg, s, d);
            }
        }
    }

    /// Link a page at the head or tail of list (gen, its type, its zone).
    fn gen_link(&mut self, memcg: MemcgId, pfn: Pfn, gen: usize, at_tail: bool) {
        let flags = self.frames.flags(pfn);
        let li = list_index(gen, page_type(flags), self.zones.zone_of(pfn));
        {
            let b = self.page_byte_mut(pfn);
            *b = (*b & !LIST_MASK) | ((gen as u8) << LIST_SHIFT);
        }
        let lg = self.memcgs[memcg as usize].lruvec[NID0]
            .gen
            .as_deref_mut()
            .expect("generations");
        let pc = &mut self.frames.meta;
        crate::swap::list_link(pc, &mut lg.head[li], &mut lg.tail[li], pfn, at_tail);
        let f = &mut pc[pfn as usize].pc.flags;
        *f = (*f & !pf::LRU_MASK) | LRU_GEN;
    }

    /// Unlink a page from the generation list it sits on.
    fn gen_unlink(&mut self, memcg: MemcgId, pfn: Pfn) {
        let flags = self.frames.flags(pfn);
        debug_assert_eq!(flags & pf::LRU_MASK, LRU_GEN);
        let li = list_index(
            self.folio_list_gen(pfn),
            page_type(flags),
            self.zones.zone_of(pfn),
        );
        let lg = self.memcgs[memcg as usize].lruvec[NID0]
            .gen
            .as_deref_mut()
            .expect("generations");
        let pc = &mut self.frames.meta;
        crate::swap::list_unlink(pc, &mut lg.head[li], &mut lg.tail[li], pfn);
        let f = &mut pc[pfn as usize].pc.flags;
        *f = (*f & !pf::LRU_MASK) | crate::page_cgroup::LRU_NONE;
    }

    /// list_move() / list_move_tail() of a page to list `gen` of its type and zone.
    fn gen_move(&mut self, memcg: MemcgId, pfn: Pfn, gen: usize, at_tail: bool) {
        self.gen_unlink(memcg, pfn);
        self.gen_link(memcg, pfn, gen, at_tail);
    }

    /// lru_gen_add_folio(): put a page off the LRU on a generation list; false for an
    /// unevictable page (the caller puts it on the unevictable list).
    pub(crate) fn lru_gen_add_folio(&mut self, pfn: Pfn, reclaiming: bool) -> bool {
        let flags = self.frames.flags(pfn);
        if flags & pf::MLOCKED != 0 {
            return false;
        }
        debug_assert!(self.folio_lru_gen(pfn).is_none());
        let memcg = self.frames.memcg(pfn);
        let ty = page_type(flags);
        let anon_not_swapcache = ty == ANON && self.swapcache_slot(pfn).is_none();
        let lg = self.lrugen_mut(memcg);
        let seq = if flags & pf::ACTIVE != 0 {
            lg.max_seq
        } else if anon_not_swapcache
            || (flags & pf::RECLAIM != 0 && flags & (pf::DIRTY | pf::WRITEBACK) != 0)
        {
            lg.max_seq - 1
        } else if reclaiming || lg.min_seq[ty] + MIN_NR_GENS >= lg.max_seq {
            lg.min_seq[ty]
        } else {
            lg.min_seq[ty] + 1
        };
        let gen = gen_from_seq(seq);
        self.frames.clear(pfn, pf::ACTIVE);
        self.set_folio_gen(pfn, Some(gen));
        self.lru_gen_update_size(memcg, pfn, None, Some(gen));
        self.gen_link(memcg, pfn, gen, reclaiming);
        true
    }

    /// lru_gen_del_folio(): take a page off its generation list; a page of an active
    /// generation leaves with PG_active unless reclaim takes it. False if it is on none.
    pub(crate) fn lru_gen_del_folio(&mut self, pfn: Pfn, reclaiming: bool) -> bool {
        let Some(gen) = self.folio_lru_gen(pfn) else {
            return false;
        };
        let memcg = self.frames.memcg(pfn);
        if !reclaiming && self.lg(memcg).is_active(gen) {
            self.frames.set(pfn, pf::ACTIVE);
        }
        self.set_folio_gen(pfn, None);
        self.lru_gen_update_size(memcg, pfn, Some(gen), None);
        self.gen_unlink(memcg, pfn);
        true
    }

    /// folio_update_gen(): the walk or look-around found the page young: its generation
    /// becomes `gen` (its list stays), its refs go. Returns the old generation (None for a
    /// page off the lists, which gets PG_referenced for shrink_folio_list()).
    fn folio_update_gen(&mut self, pfn: Pfn, gen: usize) -> Option<usize> {
        let Some(old) = self.folio_lru_gen(pfn) else {
            self.frames.set(pfn, pf::REFERENCED);
            return None;
        };
        self.clear_refs(pfn);
        self.set_folio_gen(pfn, Some(gen));
        Some(old)
    }

    /// folio_inc_gen(): move a page of the oldest generation to the next one (its refs
    /// go; `reclaiming` sets PG_reclaim for folio_end_writeback()). Returns its generation.
    fn folio_inc_gen(&mut self, memcg: MemcgId, pfn: Pfn, reclaiming: bool) -> usize {
        let ty = page_type(self.frames.flags(pfn));
        let old = gen_from_seq(self.lg(memcg).min_seq[ty]);
        let cur = self.folio_lru_gen(pfn).expect("on a generation list");
        if cur != old {
            return cur;
        }
        let new = (old + 1) % MAX_NR_GENS;
        self.clear_refs(pfn);
        self.set_folio_gen(pfn, Some(new));
        if reclaiming {
            self.frames.set(pfn, pf::RECLAIM);
        }
        self.lru_gen_update_size(memcg, pfn, Some(old), Some(new));
        new
    }

    // ------------------------------------------------------------------ the PID controller

    fn read_ctrl_pos(&self, memcg: MemcgId, ty: usize, tier: usize, gain: u64) -> CtrlPos {
        let lg = self.lg(memcg);
        let mut total = lg.avg_total[ty][tier] + lg.evicted[ty][tier];
        if tier > 0 {
            total += lg.protected[ty][tier - 1];
        }
        CtrlPos {
            refaulted: lg.avg_refaulted[ty][tier] + lg.refaulted[ty][tier],
            total,
            gain,
        }
    }

    /// reset_ctrl_pos() with carryover (NR_HIST_GENS 1: the other call clears nothing):
    /// the averages take half of what they were plus the evicted generation's counts.
    fn reset_ctrl_pos(&mut self, memcg: MemcgId, ty: usize) {
        let lg = self.lrugen_mut(memcg);
        for tier in 0..MAX_NR_TIERS {
            lg.avg_refaulted[ty][tier] = (lg.avg_refaulted[ty][tier] + lg.refaulted[ty][tier]) / 2;
            let mut sum = lg.avg_total[ty][tier] + lg.evicted[ty][tier];
            if tier > 0 {
                sum += lg.protected[ty][tier - 1];
                lg.protected[ty][tier - 1] = 0;
            }
            lg.avg_total[ty][tier] = sum / 2;
            lg.refaulted[ty][tier] = 0;
            lg.evicted[ty][tier] = 0;
        }
    }

    /// get_tier_idx(): the last tier to evict (the ones above are protected).
    fn get_tier_idx(&self, memcg: MemcgId, ty: usize) -> usize {
        let sp = self.read_ctrl_pos(memcg, ty, 0, 1);
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            let pv = self.read_ctrl_pos(memcg, ty, tier, 2);
            if !positive_ctrl_err(sp, pv) {
                break;
            }
            tier += 1;
        }
        tier - 1
    }

    /// get_type_to_scan(): the type whose first tier refaults less, weighed by swappiness,
    /// and its last tier to evict.
    fn get_type_to_scan(&self, memcg: MemcgId, swappiness: u64) -> (usize, usize) {
        let gain = [swappiness, 200 - swappiness];
        let sp = self.read_ctrl_pos(memcg, ANON, 0, gain[ANON]);
        let pv = self.read_ctrl_pos(memcg, FILE, 0, gain[FILE]);
        let ty = positive_ctrl_err(sp, pv) as usize;
        let sp = self.read_ctrl_pos(memcg, 1 - ty, 0, gain[1 - ty]);
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            let pv = self.read_ctrl_pos(memcg, ty, tier, gain[ty]);
            if !positive_ctrl_err(sp, pv) {
                break;
            }
            tier += 1;
        }
        (ty, tier - 1)
    }

    // ------------------------------------------------------------------ the aging

    /// get_swappiness(): 0 without 64 pages of swap the group may use.
    pub(crate) fn lru_gen_swappiness(&self, memcg: MemcgId, sc: &ScanControl) -> u64 {
        if self.mem_cgroup_get_nr_swap_pages(memcg) < MIN_LRU_BATCH {
            return 0;
        }
        u64::from(
            sc.proactive_swappiness
                .unwrap_or_else(|| self.memcg_swappiness(memcg)),
        )
    }

    /// inc_min_seq(): the oldest generation's pages move to the next one (anon's only when
    /// it may swap), and min_seq steps.
    fn inc_min_seq(&mut self, memcg: MemcgId, ty: usize, can_swap: bool) {
        let old = gen_from_seq(self.lg(memcg).min_seq[ty]);
        if ty == FILE || can_swap {
            for zone in 0..NR_ZONES {
                // Each step moves one page off the list.
                for _ in 0..self.frames.nr_frames() {
                    let t = self.lg(memcg).tail[list_index(old, ty, zone)];
                    if t == NIL {
                        break;
                    }
                    let new = self.folio_inc_gen(memcg, t, false);
                    self.gen_move(memcg, t, new, true);
                }
            }
        }
        self.reset_ctrl_pos(memcg, ty);
        self.lrugen_mut(memcg).min_seq[ty] += 1;
    }

    /// try_to_inc_min_seq(): min_seq moves past the empty oldest generations (keeping anon's
    /// at or below file's when it may swap). Returns whether it moved.
    pub(crate) fn try_to_inc_min_seq(&mut self, memcg: MemcgId, can_swap: bool) -> bool {
        let lg = self.lg(memcg);
        debug_assert!(lg.seq_is_valid());
        let mut min_seq = lg.min_seq;
        for (ty, seq) in min_seq.iter_mut().enumerate().skip(!can_swap as usize) {
            while *seq + MIN_NR_GENS <= lg.max_seq {
                let gen = gen_from_seq(*seq);
                if (0..NR_ZONES).any(|z| !lg.list_empty(gen, ty, z)) {
                    break;
                }
                *seq += 1;
            }
        }
        if can_swap {
            min_seq[ANON] = min_seq[ANON].min(min_seq[FILE]);
            min_seq[FILE] = min_seq[ANON].max(lg.min_seq[FILE]);
        }
        let mut success = false;
        for (ty, &seq) in min_seq.iter().enumerate().skip(!can_swap as usize) {
            if seq == self.lg(memcg).min_seq[ty] {
                continue;
            }
            self.reset_ctrl_pos(memcg, ty);
            self.lrugen_mut(memcg).min_seq[ty] = seq;
            success = true;
        }
        success
    }

    /// inc_max_seq(): a new youngest generation (a type with four first loses its oldest),
    /// with the active/inactive sizes moved as the two youngest change.
    fn inc_max_seq(&mut self, memcg: MemcgId, can_swap: bool) {
        for ty in [FILE, ANON] {
            if self.lg(memcg).nr_gens(ty) == MAX_NR_GENS as u64 {
                self.inc_min_seq(memcg, ty, can_swap);
            }
        }
        let j = self.gen_jiffies();
        let lg = self.lrugen_mut(memcg);
        let prev = gen_from_seq(lg.max_seq - 1);
        let next = gen_from_seq(lg.max_seq + 1);
        let mut deltas = [0i64; 2];
        for (ty, d) in deltas.iter_mut().enumerate() {
            for z in 0..NR_ZONES {
                *d += lg.nr_pages[list_index(prev, ty, z)] - lg.nr_pages[list_index(next, ty, z)];
            }
        }
        lg.timestamps[next] = j;
        lg.max_seq += 1;
        for (ty, d) in deltas.into_iter().enumerate() {
            if d != 0 {
                let (inactive, active) = if ty == ANON {
                    (Stat::InactiveAnon, Stat::ActiveAnon)
                } else {
                    (Stat::InactiveFile, Stat::ActiveFile)
                };
                self.mod_stat(memcg, inactive, d);
                self.mod_stat(memcg, active, -d);
            }
        }
    }

    /// The page-table walk of try_to_inc_max_seq(), approximated: every page of the group
    /// on its generation lists that is mapped with its accessed bit set (anon only when it
    /// may swap) loses the bit and joins generation `max_seq`.
    fn lru_gen_walk(&mut self, memcg: MemcgId, max_seq: u64, can_swap: bool) {
        // A group with no page mapped (only page cache read through read()) has no page
        // table entry to walk.
        let local = &self.memcgs[memcg as usize].stats.local;
        if local[Stat::Anon as usize]
            + local[Stat::FileMapped as usize]
            + local[Stat::Shmem as usize]
            <= 0
        {
            return;
        }
        let new = gen_from_seq(max_seq);
        let mut visited = 0u64;
        for li in 0..NR_LISTS {
            let ty = (li / NR_ZONES) % 2;
            if ty == ANON && !can_swap {
                continue;
            }
            let mut cur = self.lg(memcg).head[li];
            while cur != NIL {
                let next = self.frames.meta[cur as usize].pc.next;
                let f = self.frames.flags(cur);
                if f & pf::YOUNG != 0 && f & pf::MLOCKED == 0 && self.folio_mapped(cur) {
                    visited += 1;
                    self.frames.clear(cur, pf::YOUNG);
                    if let Some(old) = self.folio_update_gen(cur, new) {
                        if old != new {
                            self.lru_gen_update_size(memcg, cur, Some(old), Some(new));
                        }
                    }
                } else if f & pf::MAPPED != 0 {
                    visited += 1;
                }
                cur = next;
            }
        }
        // A PTE is one load of a page table the walk reads in order.
        self.spend_cpu(visited * self.cfg.costs.scan_ns / 8);
    }

    /// try_to_inc_max_seq(): walk (with the MM_WALK capability or `force_scan`) and step
    /// max_seq, unless a walk for `max_seq` is done already. Returns whether max_seq moved
    /// past `max_seq`.
    pub(crate) fn try_to_inc_max_seq(
        &mut self,
        memcg: MemcgId,
        max_seq: u64,
        can_swap: bool,
        force_scan: bool,
    ) -> bool {
        let lg = self.lrugen_mut(memcg);
        if max_seq <= lg.mm_seq {
            return max_seq < lg.max_seq;
        }
        lg.mm_seq += 1;
        if force_scan || self.lru_gen.caps & CAP_MM_WALK != 0 {
            self.lru_gen_walk(memcg, max_seq, can_swap);
        }
        debug_assert_eq!(self.lg(memcg).max_seq, max_seq);
        self.inc_max_seq(memcg, can_swap);
        true
    }

    /// should_run_aging(): whether the group needs a new generation, and nr_to_scan (its
    /// pages of the types it may evict, >> priority while it is online).
    fn should_run_aging(&self, memcg: MemcgId, can_swap: bool, priority: i32) -> (bool, u64) {
        let lg = self.lg(memcg);
        let (mut old, mut young, mut total) = (0, 0, 0);
        for ty in (!can_swap as usize)..2 {
            for seq in lg.min_seq[ty]..=lg.max_seq {
                let size = lg.size(gen_from_seq(seq), ty);
                total += size;
                if seq == lg.max_seq {
                    young += size;
                } else if seq + MIN_NR_GENS == lg.max_seq {
                    old += size;
                }
            }
        }
        let nr_to_scan = if self.memcg(memcg).online {
            total >> priority
        } else {
            total
        };
        let min = lg.min_seq[!can_swap as usize];
        let need = if min + MIN_NR_GENS > lg.max_seq {
            true
        } else if min + MIN_NR_GENS < lg.max_seq {
            false
        } else {
            young * MIN_NR_GENS > total || old * (MIN_NR_GENS + 2) < total
        };
        (need, nr_to_scan)
    }

    /// Whether memory.min protects the group, or memory.low does and reclaim may not touch
    /// it (mem_cgroup_below_min(), mem_cgroup_below_low()), with the protection as the
    /// reclaim calculated it.
    fn lru_gen_protected(&self, memcg: MemcgId, sc: &ScanControl) -> bool {
        if memcg == ROOT_MEMCG || !self.memory.ever_protected() {
            return false;
        }
        let c = self.memory.get(memcg as usize);
        c.emin >= c.usage || (c.elow >= c.usage && !sc.memcg_low_reclaim)
    }

    /// get_nr_to_scan(): how much to scan of the group this round, ageing it first when
    /// needed (not kswapd, not at DEF_PRIORITY); 0 to stop.
    fn get_nr_to_scan(&mut self, memcg: MemcgId, sc: &ScanControl, can_swap: bool) -> (u64, bool) {
        if self.lru_gen_protected(memcg, sc) {
            return (0, false);
        }
        let (need_aging, nr_to_scan) = self.should_run_aging(memcg, can_swap, sc.priority);
        if !need_aging {
            return (nr_to_scan, false);
        }
        if sc.priority != DEF_PRIORITY {
            if sc.kswapd {
                return (0, true);
            }
            let max_seq = self.lg(memcg).max_seq;
            if self.try_to_inc_max_seq(memcg, max_seq, can_swap, false) {
                return (nr_to_scan, true);
            }
        }
        let lg = self.lg(memcg);
        let n = if lg.min_seq[!can_swap as usize] + MIN_NR_GENS <= lg.max_seq {
            nr_to_scan
        } else {
            0
        };
        (n, true)
    }

    /// age_lruvec(): kswapd's aging of one group; false when min_ttl protects it (or
    /// memory.min does).
    fn age_lruvec(&mut self, memcg: MemcgId, sc: &ScanControl, min_ttl: u64) -> bool {
        let recursive = self.cfg.recursive_prot;
        if memcg != ROOT_MEMCG && self.memory.ever_protected() {
            self.memory
                .calculate_protection(ROOT_MEMCG as usize, memcg as usize, recursive);
            let c = self.memory.get(memcg as usize);
            if c.emin >= c.usage {
                return false;
            }
        }
        let swappiness = self.lru_gen_swappiness(memcg, sc);
        self.lrugen_mut(memcg);
        let (need_aging, nr_to_scan) = self.should_run_aging(memcg, swappiness != 0, sc.priority);
        if min_ttl > 0 {
            let lg = self.lg(memcg);
            let birth = lg.timestamps[gen_from_seq(lg.min_seq[FILE])];
            if birth.saturating_add(min_ttl) > self.gen_jiffies() {
                return false;
            }
            if nr_to_scan == 0 && sc.priority != DEF_PRIORITY {
                return false;
            }
        }
        if need_aging {
            let max_seq = self.lg(memcg).max_seq;
            self.try_to_inc_max_seq(memcg, max_seq, swappiness != 0, false);
        }
        true
    }

    /// lru_gen_age_node(): kswapd ages every group before it evicts, every other priority
    /// step unless eviction found no need; with min_ttl set, it invokes the OOM killer when
    /// every group's oldest generation is younger than that.
    pub(crate) fn lru_gen_age_node(&mut self, sc: &ScanControl) {
        if !self.kswapd.lru_gen_need_aging {
            self.kswapd.lru_gen_need_aging = true;
            return;
        }
        let min_ttl = self.lru_gen.min_ttl;
        let mut groups = Vec::new();
        let looked = self.memcg_subtree_preorder(ROOT_MEMCG, &mut groups);
        self.charge_walk(looked);
        let mut success = false;
        for memcg in groups {
            if self.age_lruvec(memcg, sc, min_ttl) {
                success = true;
            }
        }
        if success || min_ttl == 0 {
            return;
        }
        self.lru_gen_oom();
    }

    // ------------------------------------------------------------------ look-around

    /// lru_gen_look_around(): the rmap walk met `pfn` (isolated, in group `memcg`) young:
    /// the young pages of the same group in the same page table, up to MIN_LRU_BATCH
    /// around it, lose their accessed bit and join max_seq; `pfn` itself gets PG_referenced.
    fn lru_gen_look_around(&mut self, pfn: Pfn, can_swap: bool) {
        let memcg = self.frames.memcg(pfn);
        let m = self.frames.meta[pfn as usize].map;
        let new = gen_from_seq(self.lrugen_mut(memcg).max_seq);
        let neighbours = self.mapping_neighbours(m.mapping, u64::from(m.index));
        let mut promote = Vec::new();
        for (p, young) in neighbours {
            if !young {
                continue;
            }
            if self.frames.memcg(p) != memcg {
                continue;
            }
            let f = self.frames.flags(p);
            if page_type(f) == ANON && !can_swap && p != pfn {
                continue;
            }
            self.frames.clear(p, pf::YOUNG);
            match self.folio_lru_gen(p) {
                None => self.frames.set(p, pf::REFERENCED),
                Some(g) if g != new => promote.push(p),
                Some(_) => {}
            }
        }
        // Reclaim always has its walk (set_mm_walk()): the pages' generations change in
        // place; their sizes move with the batch.
        for p in promote {
            if let Some(old) = self.folio_update_gen(p, new) {
                if old != new {
                    self.lru_gen_update_size(memcg, p, Some(old), Some(new));
                }
            }
        }
    }

    /// The pages mapped in the same page table as page `index` of `mapping` (a PMD's 512
    /// entries), MIN_LRU_BATCH of them around it at most, with their accessed bits: an anon
    /// mapping's PTEs, or a file's pages that are mapped.
    fn mapping_neighbours(&self, mapping: u32, index: u64) -> Vec<(Pfn, bool)> {
        let span = crate::kmem::PTE_SPAN_PAGES;
        let file = mapping & crate::page_cgroup::MAPPING_FILE_BIT != 0;
        let len = if file {
            let f = (mapping & !crate::page_cgroup::MAPPING_FILE_BIT) as usize;
            self.files.v.get(f).map_or(0, |f| f.entries.len() as u64)
        } else {
            self.vmas
                .v
                .get(mapping as usize)
                .map_or(0, |v| v.ptes.len() as u64)
        };
        if index >= len {
            return Vec::new();
        }
        let mut start = index / span * span;
        let mut end = (start + span).min(len);
        if end - start > MIN_LRU_BATCH {
            if index - start < MIN_LRU_BATCH / 2 {
                end = start + MIN_LRU_BATCH;
            } else if end - index < MIN_LRU_BATCH / 2 {
                start = end - MIN_LRU_BATCH;
            } else {
                start = index - MIN_LRU_BATCH / 2;
                end = index + MIN_LRU_BATCH / 2;
            }
        }
        let mut out = Vec::with_capacity((end - start) as usize);
        for i in start..end {
            let p = if file {
                let f = (mapping & !crate::page_cgroup::MAPPING_FILE_BIT) as usize;
                match crate::filemap::resident(self.files.v[f].entries[i as usize]) {
                    Some(p) if self.frames.test(p, pf::MAPPED) => p,
                    _ => continue,
                }
            } else {
                let pte = self.vmas.v[mapping as usize].ptes[i as usize];
                if pte == 0 || pte & crate::memory::SWAP_PTE != 0 {
                    continue;
                }
                let p = pte - 1;
                if self.frames.lru(p) == crate::huge_memory::LRU_TAIL {
                    continue;
                }
                p
            };
            out.push((p, self.frames.test(p, pf::YOUNG)));
        }
        out
    }

    /// folio_referenced() under the multi-generational LRU: a mapped young page is looked
    /// around, and counts as referenced (with PG_referenced, so that
    /// folio_check_references() activates it).
    pub(crate) fn lru_gen_page_referenced(&mut self, pfn: Pfn, can_swap: bool) -> bool {
        if !self.folio_mapped(pfn) || !self.frames.test(pfn, pf::YOUNG) {
            return false;
        }
        let m = self.frames.meta[pfn as usize].map;
        let anon_vma = m.mapping & crate::page_cgroup::MAPPING_FILE_BIT == 0
            && self.frames.test(pfn, pf::MAPPED);
        let file_map = m.mapping & crate::page_cgroup::MAPPING_FILE_BIT != 0
            && self.frames.test(pfn, pf::MAPPED);
        if anon_vma || file_map {
            self.lru_gen_look_around(pfn, can_swap);
        }
        // Its own PTE: cleared by look-around or here; the page was off the lists.
        self.frames.clear(pfn, pf::YOUNG);
        self.frames.set(pfn, pf::REFERENCED);
        true
    }

    // ------------------------------------------------------------------ the eviction

    /// sort_folio(): whether the page at the tail of the oldest generation goes elsewhere
    /// instead of being isolated.
    fn sort_folio(&mut self, memcg: MemcgId, pfn: Pfn, tier_idx: usize) -> bool {
        let flags = self.frames.flags(pfn);
        if flags & pf::MLOCKED != 0 {
            return false;
        }
        let ty = page_type(flags);
        let gen = self.folio_lru_gen(pfn).expect("on a generation list");
        let min_gen = gen_from_seq(self.lg(memcg).min_seq[ty]);
        // promoted
        if gen != min_gen {
            self.gen_move(memcg, pfn, gen, false);
            return true;
        }
        // protected
        let refs = self.folio_lru_refs(pfn);
        let tier = tier_from_refs(refs);
        if tier > tier_idx || refs == 1 << LRU_REFS_WIDTH {
            let nr = self.folio_nr_pages(pfn);
            let new = self.folio_inc_gen(memcg, pfn, false);
            self.gen_move(memcg, pfn, new, true);
            self.lrugen_mut(memcg).protected[ty][tier - 1] += nr;
            let item = if ty == ANON {
                Stat::WorkingsetActivateAnon
            } else {
                Stat::WorkingsetActivateFile
            };
            self.mod_stat(memcg, item, nr as i64);
            return true;
        }
        // waiting for writeback
        if flags & pf::WRITEBACK != 0 || (ty == FILE && flags & pf::DIRTY != 0) {
            let new = self.folio_inc_gen(memcg, pfn, true);
            self.gen_move(memcg, pfn, new, false);
            return true;
        }
        false
    }

    /// isolate_folio(): take the page for shrink_folio_list(), or refuse it.
    fn isolate_folio(&mut self, pfn: Pfn, sc: &ScanControl) -> bool {
        let flags = self.frames.flags(pfn);
        if !sc.may_unmap && self.folio_mapped(pfn) {
            return false;
        }
        if !sc.may_writepage
            && (flags & pf::DIRTY != 0
                || (flags & pf::SWAPBACKED != 0 && self.swapcache_slot(pfn).is_none()))
        {
            return false;
        }
        if flags & pf::REFERENCED == 0 {
            self.clear_refs(pfn);
        }
        self.frames.clear(pfn, pf::RECLAIM | pf::REFERENCED);
        let ok = self.lru_gen_del_folio(pfn, true);
        debug_assert!(ok);
        true
    }

    /// scan_folios(): sort or isolate from the tail of the oldest generation of `ty`, zone
    /// by zone from the highest. Returns the pages scanned (0 when none could be isolated
    /// and the batch was not used up).
    fn scan_folios(
        &mut self,
        memcg: MemcgId,
        sc: &ScanControl,
        ty: usize,
        tier: usize,
        out: &mut Vec<Pfn>,
    ) -> u64 {
        if self.lg(memcg).nr_gens(ty) == MIN_NR_GENS {
            return 0;
        }
        let gen = gen_from_seq(self.lg(memcg).min_seq[ty]);
        let (mut sorted, mut scanned, mut isolated) = (0u64, 0u64, 0u64);
        let mut remaining = MAX_LRU_BATCH;
        for zone in (0..NR_ZONES).rev() {
            let mut moved = Vec::new();
            let mut skipped = 0u64;
            let li = list_index(gen, ty, zone);
            while remaining > 0 {
                let pfn = self.lg(memcg).tail[li];
                if pfn == NIL {
                    break;
                }
                let nr = self.folio_nr_pages(pfn);
                scanned += nr;
                if self.sort_folio(memcg, pfn, tier) {
                    sorted += nr;
                } else if self.isolate_folio(pfn, sc) {
                    out.push(pfn);
                    isolated += nr;
                } else {
                    self.gen_unlink(memcg, pfn);
                    moved.push(pfn);
                    skipped += nr;
                }
                remaining -= 1;
                if remaining == 0 || isolated.max(skipped) >= MIN_LRU_BATCH {
                    break;
                }
            }
            for p in moved {
                self.gen_link(memcg, p, gen, false);
            }
            if remaining == 0 || isolated >= MIN_LRU_BATCH {
                break;
            }
        }
        self.spend_cpu((MAX_LRU_BATCH - remaining) * self.cfg.costs.scan_ns);
        self.count_reclaim_events(sc, memcg, ty == FILE, isolated, false);
        if !sc.cgroup_reclaim {
            self.node_events.count(NodeEvent::Pgrefill, sorted);
        }
        self.mod_stat(memcg, Stat::Pgrefill, sorted as i64);
        if isolated > 0 || remaining == 0 {
            scanned
        } else {
            0
        }
    }

    /// isolate_folios(): choose the type (swappiness 1 and 200 as file and anon first) and
    /// scan it, or the other when it gives nothing. Returns (scanned, type).
    fn isolate_folios(
        &mut self,
        memcg: MemcgId,
        sc: &ScanControl,
        swappiness: u64,
        out: &mut Vec<Pfn>,
    ) -> (u64, usize) {
        let lg = self.lg(memcg);
        let mut tier = None;
        let mut ty = if swappiness == 0 {
            FILE
        } else if lg.min_seq[ANON] < lg.min_seq[FILE] {
            ANON
        } else if swappiness == 1 {
            FILE
        } else if swappiness == 200 {
            ANON
        } else {
            let (t, tier_idx) = self.get_type_to_scan(memcg, swappiness);
            tier = Some(tier_idx);
            t
        };
        let mut scanned = 0;
        for _ in (swappiness == 0) as usize..2 {
            let t = tier.unwrap_or_else(|| self.get_tier_idx(memcg, ty));
            scanned = self.scan_folios(memcg, sc, ty, t, out);
            if scanned > 0 {
                break;
            }
            ty = 1 - ty;
            tier = None;
        }
        (scanned, ty)
    }

    /// evict_folios(): isolate a batch from the oldest generation, reclaim it through
    /// shrink_folio_list(), put the rest back (rejected ones to the youngest generation)
    /// and try the clean ones that were kept once more. Returns the pages scanned.
    pub(crate) fn evict_folios(
        &mut self,
        memcg: MemcgId,
        sc: &mut ScanControl,
        swappiness: u64,
        need_swapping: Option<&mut bool>,
    ) -> u64 {
        self.swap_io_poll();
        let mut list = Vec::new();
        let (mut scanned, ty) = self.isolate_folios(memcg, sc, swappiness, &mut list);
        scanned += u64::from(self.try_to_inc_min_seq(memcg, swappiness != 0));
        if self.lg(memcg).nr_gens((swappiness == 0) as usize) == MIN_NR_GENS {
            scanned = 0;
        }
        if list.is_empty() {
            return scanned;
        }
        // shrink_folio_list()'s own counts stay out of shrink_node()'s (evict_folios() does
        // not add them to sc->nr).
        let saved = (
            sc.nr_dirty,
            sc.nr_unqueued_dirty,
            sc.nr_congested,
            sc.nr_writeback,
            sc.nr_immediate,
        );
        let mut skip_retry = false;
        // At most two passes: the retry has skip_retry set.
        for _ in 0..2 {
            let pages: u64 = list.iter().map(|&p| self.folio_nr_pages(p)).sum();
            sc.nr_scanned += pages;
            let batch = self.shrink_folio_batch(list, memcg, sc);
            if batch.nr_activate > 0 {
                self.mod_stat(memcg, Stat::Pgactivate, batch.nr_activate);
            }
            let (reclaimed, kept) = (batch.reclaimed, batch.putback);
            sc.nr_reclaimed += reclaimed;
            let mut putback = Vec::with_capacity(kept.len());
            let mut clean = Vec::new();
            for pfn in kept {
                let f = self.frames.flags(pfn);
                if f & pf::MLOCKED != 0 {
                    putback.push(pfn);
                    continue;
                }
                if f & pf::RECLAIM != 0 && f & (pf::DIRTY | pf::WRITEBACK) != 0 {
                    if f & pf::WORKINGSET != 0 {
                        self.frames.set(pfn, pf::REFERENCED);
                    }
                    putback.push(pfn);
                    continue;
                }
                if skip_retry
                    || f & (pf::ACTIVE | pf::REFERENCED | pf::DIRTY | pf::WRITEBACK) != 0
                    || self.folio_mapped(pfn)
                {
                    self.clear_refs(pfn);
                    self.frames.set(pfn, pf::ACTIVE);
                    putback.push(pfn);
                    continue;
                }
                clean.push(pfn);
            }
            self.lru_add_batch(memcg, &putback);
            self.count_reclaim_events(sc, memcg, ty == FILE, reclaimed, true);
            if clean.is_empty() || sc.throttle.is_some() {
                if !clean.is_empty() {
                    self.lru_add_batch(memcg, &clean);
                }
                break;
            }
            list = clean;
            skip_retry = true;
        }
        (
            sc.nr_dirty,
            sc.nr_unqueued_dirty,
            sc.nr_congested,
            sc.nr_writeback,
            sc.nr_immediate,
        ) = saved;
        if let Some(n) = need_swapping {
            if ty == ANON {
                *n = true;
            }
        }
        scanned
    }

    /// should_abort_scan(): whether lru_gen_shrink_lruvec() stops before its nr_to_scan.
    fn should_abort_scan(&mut self, memcg: MemcgId, s: &GenScan, sc: &mut ScanControl) -> bool {
        if !sc.kswapd {
            if self.lg(memcg).max_seq - s.max_seq > 1 {
                return true;
            }
            if sc.nr_reclaimed >= sc.nr_to_reclaim && s.need_swapping {
                return true;
            }
            if self.current_pid().is_some_and(|p| self.task(p).killed) {
                sc.nr_reclaimed += MIN_LRU_BATCH;
                return true;
            }
            if sc.cgroup_reclaim {
                return false;
            }
        } else if sc.nr_reclaimed.saturating_sub(sc.last_reclaimed) < sc.nr_to_reclaim {
            return false;
        }
        if sc.priority > DEF_PRIORITY - 2 {
            return false;
        }
        for z in 0..NR_ZONES {
            let zone = &self.zones.zone[z];
            if zone.managed == 0 {
                continue;
            }
            let wmark = if sc.kswapd { zone.high } else { zone.low };
            if wmark > self.frames.free.zone_len(z) {
                return false;
            }
        }
        sc.nr_reclaimed += MIN_LRU_BATCH;
        true
    }

    /// lru_gen_shrink_lruvec()'s start.
    pub(crate) fn lru_gen_scan_begin(&mut self, memcg: MemcgId, sc: &ScanControl) -> GenScan {
        GenScan {
            scanned: 0,
            reclaimed: sc.nr_reclaimed,
            max_seq: self.lrugen_mut(memcg).max_seq,
            need_aging: false,
            need_swapping: false,
            done: false,
        }
    }

    /// One pass of lru_gen_shrink_lruvec()'s loop: None when it ended without evicting
    /// (`goto done`), Some(true) when it ended after this pass, Some(false) to go on.
    pub(crate) fn lru_gen_scan_batch(
        &mut self,
        memcg: MemcgId,
        s: &mut GenScan,
        sc: &mut ScanControl,
    ) -> Option<bool> {
        if s.done {
            return None;
        }
        let swappiness = if sc.may_swap {
            self.lru_gen_swappiness(memcg, sc)
        } else if !sc.cgroup_reclaim && self.lru_gen_swappiness(memcg, sc) > 0 {
            1
        } else {
            0
        };
        let (nr_to_scan, need_aging) = self.get_nr_to_scan(memcg, sc, swappiness != 0);
        s.need_aging = need_aging;
        if nr_to_scan == 0 {
            s.done = true;
            return None;
        }
        let mut need_swapping = s.need_swapping;
        let delta = self.evict_folios(memcg, sc, swappiness, Some(&mut need_swapping));
        s.need_swapping = need_swapping;
        if delta == 0 {
            s.done = true;
            return None;
        }
        s.scanned += delta;
        if s.scanned >= nr_to_scan || sc.throttle.is_some() {
            return Some(true);
        }
        if self.should_abort_scan(memcg, s, sc) {
            return Some(true);
        }
        Some(false)
    }

    /// lru_gen_shrink_lruvec()'s end: a group that gave a batch without needing its aging
    /// lets kswapd skip its next aging.
    pub(crate) fn lru_gen_scan_end(&mut self, s: GenScan, sc: &ScanControl) {
        if !s.done && sc.kswapd && sc.nr_reclaimed - s.reclaimed >= MIN_LRU_BATCH && !s.need_aging {
            self.kswapd.lru_gen_need_aging = false;
        }
    }

    // ------------------------------------------------------------------ workingset

    /// lru_gen_eviction(): the shadow of a page evicted from group `memcg`'s generations:
    /// min_seq of its type and its refs; the evicted count of its tier.
    pub(crate) fn lru_gen_eviction(&mut self, pfn: Pfn) -> u64 {
        let memcg = self.frames.memcg(pfn);
        let ty = page_type(self.frames.flags(pfn));
        let nr = self.folio_nr_pages(pfn);
        let refs = self.folio_lru_refs(pfn);
        let tier = tier_from_refs(refs);
        let lg = self.lrugen_mut(memcg);
        let min_seq = lg.min_seq[ty];
        lg.evicted[ty][tier] += nr;
        let token = (min_seq << LRU_REFS_WIDTH) | u64::from(refs.saturating_sub(1));
        crate::workingset::pack_shadow(memcg, token, refs > 0)
    }

    /// lru_gen_refault(): a page comes back where its shadow was; it counts only in the
    /// group that evicted it, while that min_seq has not moved.
    pub(crate) fn lru_gen_refault(&mut self, pfn: Pfn, shadow: u64) {
        let (memcg_id, token, workingset) = crate::workingset::unpack_shadow(shadow);
        let memcg = self.frames.memcg(pfn);
        if memcg_id != memcg {
            return;
        }
        let ty = page_type(self.frames.flags(pfn));
        let nr = self.folio_nr_pages(pfn);
        let mask = crate::workingset::EVICTION_MASK >> LRU_REFS_WIDTH;
        let lg = self.lrugen_mut(memcg);
        if token >> LRU_REFS_WIDTH != lg.min_seq[ty] & mask {
            return;
        }
        let refs = (token & u64::from(REFS_MAX)) as u32 + u32::from(workingset);
        let tier = tier_from_refs(refs);
        lg.refaulted[ty][tier] += nr;
        let (refault, restore) = if ty == ANON {
            (Stat::WorkingsetRefaultAnon, Stat::WorkingsetRestoreAnon)
        } else {
            (Stat::WorkingsetRefaultFile, Stat::WorkingsetRestoreFile)
        };
        self.mod_stat(memcg, refault, nr as i64);
        if self.lru_fault || refs >= (1 << LRU_REFS_WIDTH) - 1 {
            self.set_refs_bits(pfn, REFS_MAX);
            self.frames.set(pfn, pf::WORKINGSET);
            self.mod_stat(memcg, restore, nr as i64);
        }
    }

    // ------------------------------------------------------------------ state change

    /// lru_gen_change_state(): switch the multi-generational LRU on or off, moving every
    /// evictable page of every group between the two-list LRU and the generations.
    pub fn lru_gen_change_state(&mut self, enable: bool) {
        if enable == self.lru_gen_enabled() {
            return;
        }
        if enable {
            self.lru_gen.caps |= CAP_CORE;
        } else {
            self.lru_gen.caps &= !CAP_CORE;
        }
        let mut groups = Vec::new();
        self.memcg_subtree_preorder(ROOT_MEMCG, &mut groups);
        for memcg in groups {
            self.lrugen_mut(memcg);
            if enable {
                // fill_evictable(): each evictable list from its tail.
                for l in 0..4 {
                    for _ in 0..self.frames.nr_frames() {
                        let t = self.memcgs[memcg as usize].lruvec[NID0].tail[l];
                        if t == NIL {
                            break;
                        }
                        self.lru_del(t);
                        let ok = self.lru_gen_add_folio(t, false);
                        debug_assert!(ok);
                    }
                }
            } else {
                // drain_evictable(): each generation list from its tail.
                for li in 0..NR_LISTS {
                    for _ in 0..self.frames.nr_frames() {
                        let t = self.lg(memcg).tail[li];
                        if t == NIL {
                            break;
                        }
                        self.lru_gen_del_folio(t, false);
                        self.lru_add_classic(t);
                    }
                }
            }
        }
    }

    /// store_enabled(): 'y'/'n' (the first byte, any case) or a number in any base
    /// kstrtouint() takes; bits above the three are ignored.
    pub fn lru_gen_store_enabled(&mut self, caps: u32) {
        self.lru_gen_change_state(caps & CAP_CORE != 0);
        self.lru_gen.caps =
            (self.lru_gen.caps & CAP_CORE) | (caps & (CAP_MM_WALK | CAP_NONLEAF_YOUNG));
    }

    /// The OOM kill of lru_gen_age_node() when min_ttl protects every group. While a
    /// victim's memory is still on its way back (kswapd's kill frees it over kswapd's
    /// time), out_of_memory() finds that victim and kills no other (oom_evaluate_task()'s
    /// abort on a pending OOM victim).
    fn lru_gen_oom(&mut self) {
        if !self.kswapd.freeing.is_empty() {
            return;
        }
        self.lru_gen_oom_kills += 1;
        self.out_of_memory_global();
    }

    // ------------------------------------------------------------------ debugfs

    /// get_swappiness() for a debugfs command that names none.
    pub fn lru_gen_debug_swappiness(&self, memcg: MemcgId) -> u64 {
        self.lru_gen_swappiness(memcg, &ScanControl::new(ROOT_MEMCG, 0, false))
    }

    /// run_aging() of a debugfs `+` command.
    pub fn lru_gen_run_aging(
        &mut self,
        memcg: MemcgId,
        seq: u64,
        can_swap: bool,
        force_scan: bool,
    ) -> Result<(), crate::Errno> {
        let lg = self.lrugen_mut(memcg);
        let (max_seq, min_seq) = (lg.max_seq, lg.min_seq);
        if seq < max_seq {
            return Ok(());
        }
        if seq > max_seq {
            return Err(crate::Errno::EINVAL);
        }
        if !force_scan && min_seq[!can_swap as usize] + MAX_NR_GENS as u64 - 1 <= max_seq {
            return Err(crate::Errno::ERANGE);
        }
        self.try_to_inc_max_seq(memcg, max_seq, can_swap, force_scan);
        Ok(())
    }

    /// run_eviction() of a debugfs `-` command: evict until min_seq passes `seq` or
    /// `nr_to_reclaim` pages are reclaimed, with no target group (global counts).
    pub fn lru_gen_run_eviction(
        &mut self,
        memcg: MemcgId,
        seq: u64,
        swappiness: u64,
        nr_to_reclaim: u64,
    ) -> Result<(), crate::Errno> {
        let max_seq = self.lrugen_mut(memcg).max_seq;
        // Unsigned long arithmetic, as 6.1's: a seq near 2^64 wraps and passes.
        if seq.wrapping_add(MIN_NR_GENS) > max_seq {
            return Err(crate::Errno::EINVAL);
        }
        let mut sc = ScanControl::new(ROOT_MEMCG, nr_to_reclaim, false);
        sc.priority = 0;
        // Each pass evicts at least one page or ends; the group's pages bound them.
        for _ in 0..=self.frames.nr_frames() {
            let lg = self.lg(memcg);
            if seq < lg.min_seq[(swappiness == 0) as usize] {
                break;
            }
            if sc.nr_reclaimed >= nr_to_reclaim {
                break;
            }
            if self.evict_folios(memcg, &mut sc, swappiness, None) == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Whether the machine's kernel has lru_gen (6.1's reclaim; 3.11 had none).
    pub fn lru_gen_available(&self) -> bool {
        !self.reclaim_3_11()
    }

    /// The groups in mem_cgroup_iter()'s order: pre-order, children in creation order.
    pub fn lru_gen_groups(&self) -> Vec<MemcgId> {
        let mut out = Vec::new();
        self.memcg_walk(
            ROOT_MEMCG,
            |_, _| crate::memcontrol::IterVisit::Visit,
            &mut out,
        );
        out
    }

    /// lru_gen_seq_show() for one group: its node line and a line per generation from the
    /// oldest anon one (`full`: the last four, with 'x' where a type has none). A group
    /// whose generations were never used reads as new ones.
    pub fn lru_gen_show(&self, memcg: MemcgId, full: bool) -> String {
        let now = self.gen_jiffies();
        let fresh;
        let lg = match self.lrugen(memcg) {
            Some(lg) => lg,
            None => {
                fresh = LruGen::new(now);
                &fresh
            }
        };
        let mut out = format!(" node {:5}\n", 0);
        let first = if !full {
            lg.min_seq[ANON]
        } else if lg.max_seq >= MAX_NR_GENS as u64 {
            lg.max_seq - MAX_NR_GENS as u64 + 1
        } else {
            0
        };
        for seq in first..=lg.max_seq {
            let gen = gen_from_seq(seq);
            let age_ms = (now.wrapping_sub(lg.timestamps[gen]) * (JIFFY_NS / 1_000_000)) as u32;
            out.push_str(&format!(" {seq:10} {age_ms:10}"));
            for ty in 0..2 {
                let mark = if full && seq < lg.min_seq[ty] {
                    'x'
                } else {
                    ' '
                };
                out.push_str(&format!(" {:10}{mark}", lg.size(gen, ty)));
            }
            out.push('\n');
            if full {
                for tier in 0..MAX_NR_TIERS {
                    out.push_str(&format!("            {tier:10}"));
                    for ty in 0..2 {
                        let (s, n) = if seq == lg.max_seq {
                            (
                                "RT ",
                                [lg.avg_refaulted[ty][tier], lg.avg_total[ty][tier], 0],
                            )
                        } else if seq == lg.min_seq[ty] {
                            let p = if tier > 0 {
                                lg.protected[ty][tier - 1]
                            } else {
                                0
                            };
                            ("rep", [lg.refaulted[ty][tier], lg.evicted[ty][tier], p])
                        } else {
                            ("   ", [0, 0, 0])
                        };
                        for (v, c) in n.iter().zip(s.chars()) {
                            out.push_str(&format!(" {v:10}{c}"));
                        }
                    }
                    out.push('\n');
                }
                out.push_str("                      ");
                for _ in 0..6 {
                    out.push_str(&format!(" {:10} ", 0));
                }
                out.push('\n');
            }
        }
        out
    }
}

impl Machine {
    /// The invariant checker's part for the generations of group `memcg`: each list's links,
    /// every page on it owned by the group, of the list's type and zone, marked as on a
    /// generation list that is the list's, with its own generation within
    /// [min_seq, max_seq] of its type, not active, not mlocked; nr_pages equal to the pages
    /// counted by their own generation; min_seq and max_seq valid. Marks the pages in
    /// `seen` and returns them per active/inactive statistic (inactive anon, active anon,
    /// inactive file, active file).
    pub(crate) fn check_lru_gen(
        &self,
        memcg: MemcgId,
        seen: &mut [bool],
    ) -> Result<[u64; 4], String> {
        let mut out = [0u64; 4];
        let Some(lg) = self.lrugen(memcg) else {
            return Ok(out);
        };
        if !lg.seq_is_valid() || lg.min_seq[ANON] > lg.min_seq[FILE] {
            return Err(format!(
                "memcg {memcg}: generations {:?}..{} not valid",
                lg.min_seq, lg.max_seq
            ));
        }
        let mut counted = [0i64; NR_LISTS];
        for gen in 0..MAX_NR_GENS {
            for ty in 0..2 {
                for zone in 0..NR_ZONES {
                    let li = list_index(gen, ty, zone);
                    let mut prev = NIL;
                    let mut cur = lg.head[li];
                    while cur != NIL {
                        let c = cur as usize;
                        if c >= seen.len() {
                            return Err(format!("memcg {memcg} generation list: bad frame {cur}"));
                        }
                        if seen[c] {
                            return Err(format!("frame {cur} on two lists (or a cycle)"));
                        }
                        seen[c] = true;
                        let pc = self.frames.get(cur).pc;
                        let own = self.folio_lru_gen(cur);
                        let valid = own.is_some_and(|g| {
                            (lg.min_seq[ty]..=lg.max_seq).any(|s| gen_from_seq(s) == g)
                        });
                        let why = if pc.memcg != memcg {
                            "owned by another group"
                        } else if pc.flags & pf::LRU_MASK != LRU_GEN {
                            "not marked as on a generation list"
                        } else if self.folio_list_gen(cur) != gen {
                            "marked as on another generation's list"
                        } else if page_type(pc.flags) != ty || self.zones.zone_of(cur) != zone {
                            "of another type or zone"
                        } else if !valid {
                            "in no generation between min_seq and max_seq"
                        } else if pc.flags & (pf::ACTIVE | pf::MLOCKED) != 0 {
                            "active or mlocked"
                        } else if pc.prev != prev {
                            "with a broken prev link"
                        } else {
                            ""
                        };
                        if !why.is_empty() {
                            return Err(format!(
                                "frame {cur} on memcg {memcg}'s list of generation {gen}, type \
                                 {ty}, zone {zone}: {why}"
                            ));
                        }
                        let g = own.expect("checked");
                        let nr = self.folio_nr_pages(cur);
                        counted[list_index(g, ty, zone)] += nr as i64;
                        out[ty * 2 + lg.is_active(g) as usize] += nr;
                        prev = cur;
                        cur = pc.next;
                    }
                    if lg.tail[li] != prev {
                        return Err(format!(
                            "memcg {memcg} generation {gen} type {ty} zone {zone}: tail mismatch"
                        ));
                    }
                }
            }
        }
        if counted != lg.nr_pages {
            return Err(format!(
                "memcg {memcg}: generation sizes {:?} but the lists hold {counted:?}",
                lg.nr_pages
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::MachineConfig;
    use crate::page_io::tests::{holding_group, reclaim};

    fn mglru(pages: u64) -> (Machine, MemcgId, crate::program::Pid) {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "256M").unwrap();
        cfg.set("swap", "256M").unwrap();
        cfg.set("thp", "never").unwrap();
        cfg.set("lru", "mglru").unwrap();
        holding_group(cfg, pages)
    }

    /// The frames of the task's first mapping, in order.
    fn frames_of(m: &Machine, pid: crate::program::Pid) -> Vec<Pfn> {
        let vma = m.task(pid).vmas[0];
        m.vmas.v[vma as usize]
            .ptes
            .iter()
            .map(|&p| {
                assert!(p != 0 && p & crate::memory::SWAP_PTE == 0);
                p - 1
            })
            .collect()
    }

    #[test]
    fn faulted_pages_join_the_youngest_generation_and_count_as_active() {
        let (m, a, _) = mglru(4096);
        let lg = m.lrugen(a).unwrap();
        assert_eq!((lg.min_seq, lg.max_seq), ([0, 0], 3));
        assert_eq!(lg.size(gen_from_seq(3), ANON), 4096);
        assert_eq!(m.stat_total(a, Stat::ActiveAnon), 4096);
        assert_eq!(m.stat_total(a, Stat::InactiveAnon), 0);
        m.check().unwrap();
    }

    #[test]
    fn a_page_added_by_reclaim_or_compaction_inside_a_fault_is_not_faulted() {
        let (mut m, a, pid) = mglru(4096);
        let pages = frames_of(&m, pid);
        assert!(m.try_to_inc_max_seq(a, 3, true, true));
        assert!(m.try_to_inc_max_seq(a, 4, true, true));
        assert_eq!(m.lrugen(a).unwrap().max_seq, 5);
        // folio_add_lru() in a fault: the youngest generation.
        m.lru_del(pages[0]);
        m.in_lru_fault(|m| m.lru_add(pages[0]));
        assert_eq!(m.folio_lru_gen(pages[0]), Some(gen_from_seq(5)));
        // The same under PF_MEMALLOC (zswap's writeback page, a page migrated by the
        // fault's compaction): placed by its own flags, here those of an inactive anon page
        // outside the swap cache, max_seq - 1.
        m.lru_del(pages[1]);
        m.frames.clear(pages[1], pf::ACTIVE);
        m.in_lru_fault(|m| m.in_memalloc(|m| m.lru_add(pages[1])));
        assert_eq!(m.folio_lru_gen(pages[1]), Some(gen_from_seq(4)));
        m.check().unwrap();
    }

    #[test]
    fn aging_promotes_young_pages_and_folds_the_oldest_generation() {
        let (mut m, a, pid) = mglru(4096);
        let pages = frames_of(&m, pid);
        // The walk clears the fault's accessed bits; the pages stay in generation 3.
        assert!(m.try_to_inc_max_seq(a, 3, true, true));
        assert!(m.try_to_inc_max_seq(a, 4, true, true));
        let lg = m.lrugen(a).unwrap();
        assert_eq!((lg.min_seq, lg.max_seq), ([2, 2], 5));
        assert_eq!(lg.size(gen_from_seq(3), ANON), 4096);
        assert_eq!(m.stat_total(a, Stat::InactiveAnon), 4096);
        // A stale max_seq does nothing.
        assert!(m.try_to_inc_max_seq(a, 4, true, true));
        assert_eq!(m.lrugen(a).unwrap().max_seq, 5);
        // Touch the first 1000: the next walk moves them to max_seq 5, where they stay on
        // their old list until eviction sorts them.
        for &p in &pages[..1000] {
            m.frames.set(p, pf::YOUNG);
        }
        assert!(m.try_to_inc_max_seq(a, 5, true, true));
        let lg = m.lrugen(a).unwrap();
        assert_eq!((lg.min_seq, lg.max_seq), ([3, 3], 6));
        assert_eq!(
            (
                lg.size(gen_from_seq(3), ANON),
                lg.size(gen_from_seq(5), ANON)
            ),
            (3096, 1000)
        );
        assert_eq!(m.folio_lru_gen(pages[0]), Some(gen_from_seq(5)));
        assert_eq!(m.folio_list_gen(pages[0]), gen_from_seq(3));
        assert_eq!(m.stat_total(a, Stat::ActiveAnon), 1000);
        m.check().unwrap();
        // A fourth generation: the oldest folds into the next on the next aging.
        assert!(m.try_to_inc_max_seq(a, 6, true, true));
        let lg = m.lrugen(a).unwrap();
        assert_eq!((lg.min_seq, lg.max_seq), ([4, 4], 7));
        assert_eq!(lg.size(gen_from_seq(4), ANON), 3096);
        m.check().unwrap();
    }

    #[test]
    fn eviction_takes_the_idle_pages_before_the_young_ones() {
        let (mut m, a, pid) = mglru(8192);
        let pages = frames_of(&m, pid);
        assert!(m.try_to_inc_max_seq(a, 3, true, true));
        // The second half is in use: young again when reclaim comes.
        for &p in &pages[4096..] {
            m.frames.set(p, pf::YOUNG);
        }
        let freed = reclaim(&mut m, a, 2048);
        assert!(freed > 0);
        let vma = m.task(pid).vmas[0];
        let ptes = &m.vmas.v[vma as usize].ptes;
        let swapped = |r: std::ops::Range<usize>| {
            ptes[r]
                .iter()
                .filter(|&&p| p & crate::memory::SWAP_PTE != 0)
                .count()
        };
        assert!(swapped(0..4096) >= 2048, "{}", swapped(0..4096));
        assert_eq!(swapped(4096..8192), 0);
        assert!(m.stat_total(a, Stat::PgscanDirect) >= 2048);
        m.check().unwrap();
    }

    #[test]
    fn full_refs_are_protected_and_counted_as_activations() {
        let (mut m, a, pid) = mglru(1024);
        let pages = frames_of(&m, pid);
        assert!(m.try_to_inc_max_seq(a, 3, true, true));
        assert!(m.try_to_inc_max_seq(a, 4, true, true));
        // The first 100 were used four times more through a file descriptor.
        for &p in &pages[..100] {
            for _ in 0..5 {
                m.folio_inc_refs(p);
            }
            assert_eq!(m.folio_lru_refs(p), 1 << LRU_REFS_WIDTH);
        }
        m.lrugen_mut(a).min_seq = [3, 3];
        let mut list = Vec::new();
        let sc = ScanControl::new(a, 32, true);
        let scanned = m.scan_folios(a, &sc, ANON, 0, &mut list);
        assert!(scanned > 0);
        assert!(list.iter().all(|p| !pages[..100].contains(p)));
        assert_eq!(m.stat_total(a, Stat::WorkingsetActivateAnon), 100);
        assert_eq!(m.lrugen(a).unwrap().protected[ANON][MAX_NR_TIERS - 2], 100);
        // Protected: the next generation, refs gone.
        assert_eq!(m.folio_lru_gen(pages[0]), Some(gen_from_seq(4)));
        assert_eq!(m.folio_lru_refs(pages[0]), 0);
        m.lru_add_batch(a, &list);
        m.check().unwrap();
    }

    #[test]
    fn the_controller_protects_the_tiers_that_refault_more() {
        let (mut m, a, _) = mglru(64);
        // No refaults: every tier may be evicted.
        assert_eq!(m.get_tier_idx(a, FILE), MAX_NR_TIERS - 1);
        let lg = m.lrugen_mut(a);
        lg.evicted[FILE] = [10_000, 1_000, 1_000, 1_000];
        lg.refaulted[FILE] = [100, 500, 0, 0];
        // Tier 1 refaults 50% against tier 0's 1%: tiers from 1 up are protected.
        assert_eq!(m.get_tier_idx(a, FILE), 0);
        // Anon refaults less than file at the same weight: anon is evicted.
        let lg = m.lrugen_mut(a);
        lg.evicted[ANON] = [10_000, 0, 0, 0];
        lg.refaulted[ANON] = [10, 0, 0, 0];
        lg.refaulted[FILE] = [5_000, 0, 0, 0];
        assert_eq!(m.get_type_to_scan(a, 100).0, ANON);
        lg_swap(&mut m, a);
        assert_eq!(m.get_type_to_scan(a, 100).0, FILE);
        // Each min_seq step halves the history into the averages.
        m.reset_ctrl_pos(a, FILE);
        let lg = m.lrugen(a).unwrap();
        assert_eq!(lg.avg_refaulted[FILE][0], 5);
        assert_eq!(lg.refaulted[FILE][0], 0);
    }

    fn lg_swap(m: &mut Machine, a: MemcgId) {
        let lg = m.lrugen_mut(a);
        lg.refaulted.swap(ANON, FILE);
        lg.evicted.swap(ANON, FILE);
    }

    #[test]
    fn a_refault_counts_while_the_evicting_min_seq_stands() {
        let (mut m, a, pid) = mglru(64);
        let p = frames_of(&m, pid)[0];
        m.folio_inc_refs(p);
        m.folio_inc_refs(p);
        let shadow = m.lru_gen_eviction(p);
        assert_eq!(m.lrugen(a).unwrap().evicted[ANON][1], 1);
        m.lru_gen_refault(p, shadow);
        assert_eq!(m.lrugen(a).unwrap().refaulted[ANON][1], 1);
        assert_eq!(m.stat_total(a, Stat::WorkingsetRefaultAnon), 1);
        // Outside a fault and with few refs, nothing is restored.
        assert_eq!(m.stat_total(a, Stat::WorkingsetRestoreAnon), 0);
        m.lrugen_mut(a).min_seq[ANON] += 1;
        m.lru_gen_refault(p, shadow);
        assert_eq!(m.stat_total(a, Stat::WorkingsetRefaultAnon), 1);
        m.lrugen_mut(a).min_seq[ANON] -= 1;
    }

    #[test]
    fn switching_moves_every_page_and_back() {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "256M").unwrap();
        cfg.set("swap", "256M").unwrap();
        cfg.set("thp", "never").unwrap();
        let (mut m, a, _) = holding_group(cfg, 2048);
        let inactive = m.stat_total(a, Stat::InactiveAnon);
        assert_eq!(inactive, 2048);
        m.lru_gen_store_enabled(u32::MAX);
        assert_eq!(m.lru_gen.show_enabled(), "0x0007\n");
        // Inactive anon not in the swap cache goes to max_seq - 1: still "active".
        assert_eq!(m.lrugen(a).unwrap().size(gen_from_seq(2), ANON), 2048);
        assert_eq!(m.stat_total(a, Stat::ActiveAnon), 2048);
        m.check().unwrap();
        m.lru_gen_store_enabled(0);
        assert_eq!(m.lru_gen.show_enabled(), "0x0000\n");
        // Back from an active generation with PG_active.
        assert_eq!(m.stat_total(a, Stat::ActiveAnon), 2048);
        assert_eq!(
            m.memcgs[a as usize].lruvec[NID0].size[crate::stat::lru::ACTIVE_ANON],
            2048
        );
        m.check().unwrap();
    }

    #[test]
    fn tiers_follow_order_base_2() {
        assert_eq!(
            (0..=4).map(tier_from_refs).collect::<Vec<_>>(),
            [0, 1, 2, 2, 3]
        );
    }

    #[test]
    fn min_ttl_rounds_up_to_jiffies_of_4_ms() {
        for (ms, shown) in [
            (0u32, "0\n"),
            (1, "4\n"),
            (4, "4\n"),
            (5, "8\n"),
            (1000, "1000\n"),
            (1001, "1004\n"),
            (2_147_483_647, "2147483648\n"),
            (2_147_483_648, "4294967288\n"),
            (u32::MAX, "4294967288\n"),
        ] {
            let c = LruGenCtl::new(false, ms);
            assert_eq!(c.show_min_ttl(), shown, "{ms}");
        }
        assert_eq!(LruGenCtl::new(true, 0).show_enabled(), "0x0007\n");
        assert_eq!(LruGenCtl::new(false, 0).show_enabled(), "0x0000\n");
    }

    #[test]
    fn the_controller_protects_a_tier_that_refaults_more() {
        let sp = CtrlPos {
            refaulted: 100,
            total: 1000,
            gain: 1,
        };
        // Few refaults: always positive (evict).
        let pv = CtrlPos {
            refaulted: 63,
            total: 64,
            gain: 2,
        };
        assert!(positive_ctrl_err(sp, pv));
        // 50% refaulted against 10%: protect.
        let pv = CtrlPos {
            refaulted: 500,
            total: 1000,
            gain: 2,
        };
        assert!(!positive_ctrl_err(sp, pv));
        // 4% against 10%, gain 2: evict.
        let pv = CtrlPos {
            refaulted: 80,
            total: 2000,
            gain: 2,
        };
        assert!(positive_ctrl_err(sp, pv));
    }
}
