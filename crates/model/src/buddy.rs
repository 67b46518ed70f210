//! The buddy allocator of mm/page_alloc.c as 6.1 has it: per zone a free_area of
//! MAX_ORDER (11) orders, each with a free list per migrate type; __rmqueue_smallest() with
//! expand(), __rmqueue_fallback() with find_suitable_fallback(), can_steal_fallback() and
//! steal_suitable_fallback() (move_freepages_block(), the half-pageblock claim rule),
//! __free_one_page() with its buddy merging up to MAX_ORDER − 1 and buddy_merge_likely()'s
//! tail placement, the pageblock migrate types (pageblock_order 9), and the per-CPU lists
//! (struct per_cpu_pages: 13 lists, one per pcp migrate type and order up to
//! PAGE_ALLOC_COSTLY_ORDER plus one for pageblock-order pages; free_unref_page_commit(),
//! nr_pcp_high(), nr_pcp_free(), free_pcppages_bulk()'s round robin, rmqueue_pcplist() with
//! rmqueue_bulk() refills of batch >> order, drain_all_pages()). /proc/buddyinfo and
//! /proc/pagetypeinfo read their counts from here.
//!
//! Frames are numbered densely (the model's frame numbers, page_cgroup.rs); buddy alignment
//! is that of the physical frame numbers, `phys = pfn + off` per zone (mmzone.rs lays the
//! zones out).
//!
//! Memory: a free block's head is linked through its own LRU `prev`/`next` fields (a free
//! frame is on no LRU) and tagged in its `map.index` with its order and list, as the kernel
//! keeps PageBuddy and the order in struct page; no memory per frame beyond the 20 bytes of
//! FrameMeta. Pageblock migrate types take a byte per 512 frames. The max-order blocks never
//! used since boot are not written at boot: they are a range at the tail of the order-10
//! Movable list (where memblock_free_all() puts them, ascending), and a block's metadata is
//! written when it first leaves that range, so a machine costs the host what a run touches.
//! The partial blocks at a zone's edges are written at boot.
//!
//! Simplified: MIGRATE_HIGHATOMIC and isolation are not modelled (no allocation of the model
//! asks for them; /proc/pagetypeinfo prints them as empty; Debian's amd64 6.1 has no CMA); a
//! block put at the tail of the order-10 Movable list (FPI_TO_TAIL) goes before the
//! never-used range rather than after it; watermark boosting on a fallback
//! (boost_watermark()) is not modelled yet; no page shuffling (6.1's default). The
//! compaction scanners (compaction.rs) read the free blocks through free_block_at() and take
//! them with isolate_free_block() (__isolate_free_page()).

use std::collections::VecDeque;

use crate::mmzone::{Zones, NR_ZONES};
use crate::page_cgroup::{pf, FrameMeta, Pfn, FRAME_AT_BOOT, LRU_NONE, NIL};

/// Orders 0..MAX_ORDER (6.1's MAX_ORDER is 11: blocks of up to 4 MiB).
pub const MAX_ORDER: usize = 11;
/// The largest order.
pub const TOP_ORDER: u32 = MAX_ORDER as u32 - 1;
/// pageblock_order on x86_64 (HPAGE_PMD_ORDER) and its pages.
pub const PAGEBLOCK_ORDER: u32 = 9;
pub const PAGEBLOCK_NR_PAGES: u64 = 1 << PAGEBLOCK_ORDER;
/// Orders above this are "costly" (no per-CPU list, no retries without compaction).
pub const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;
/// The migrate types that have per-CPU lists and free lists in the model.
pub const MIGRATE_PCPTYPES: usize = 3;
/// Per-CPU lists of a zone: one per pcp migrate type and order 0..=3, and one for order 9.
pub const NR_PCP_LISTS: usize = MIGRATE_PCPTYPES * (PAGE_ALLOC_COSTLY_ORDER as usize + 1) + 1;
/// The migrate type names /proc/pagetypeinfo prints: 6.1's MIGRATE_TYPES as Debian's amd64
/// kernel has them (CONFIG_MEMORY_ISOLATION, no CONFIG_CMA), the oracle guest's.
pub const MIGRATETYPE_NAMES: [&str; 5] = [
    "Unmovable",
    "Movable",
    "Reclaimable",
    "HighAtomic",
    "Isolate",
];

/// A migrate type (enum migratetype, the ones with free lists here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MigrateType {
    Unmovable = 0,
    Movable = 1,
    Reclaimable = 2,
}

impl MigrateType {
    pub const ALL: [MigrateType; MIGRATE_PCPTYPES] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
    ];

    #[inline]
    fn from_bits(b: u32) -> MigrateType {
        match b {
            0 => MigrateType::Unmovable,
            2 => MigrateType::Reclaimable,
            _ => MigrateType::Movable,
        }
    }

    /// fallbacks[]: the types an allocation of this type may steal from, in order.
    fn fallbacks(self) -> [MigrateType; 2] {
        match self {
            MigrateType::Unmovable => [MigrateType::Reclaimable, MigrateType::Movable],
            MigrateType::Movable => [MigrateType::Reclaimable, MigrateType::Unmovable],
            MigrateType::Reclaimable => [MigrateType::Unmovable, MigrateType::Movable],
        }
    }
}

/// `map.index` of a free block's head: PageBuddy, the order and the list's migrate type.
const BUDDY_TAG: u32 = 1 << 31;
/// `map.index` of a page on a per-CPU list: its pcp migrate type.
const PCP_TAG: u32 = 1 << 30;

#[inline]
fn buddy_tag(order: u32, mt: MigrateType) -> u32 {
    BUDDY_TAG | order << 8 | mt as u32
}

/// Grow the metadata array to cover frames below `hi` (frames above it are still as at
/// boot).
#[inline]
fn ensure(meta: &mut Vec<FrameMeta>, hi: Pfn) {
    if hi as usize > meta.len() {
        meta.resize(hi as usize, FRAME_AT_BOOT);
    }
}

/// One free list: its ends and its blocks (linked through the heads' LRU fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FreeList {
    head: Pfn,
    tail: Pfn,
    nr: u64,
}

impl Default for FreeList {
    fn default() -> Self {
        FreeList {
            head: NIL,
            tail: NIL,
            nr: 0,
        }
    }
}

/// One zone's free_area and pageblock migrate types.
#[derive(Clone, Debug, Default)]
pub struct ZoneBuddy {
    /// The zone's frames: start..end.
    start: Pfn,
    end: Pfn,
    /// Physical frame number minus the model's.
    off: u64,
    /// [order][migrate type]
    lists: [[FreeList; MIGRATE_PCPTYPES]; MAX_ORDER],
    /// Order-10 Movable blocks never used since boot: fresh..fresh_end, at the tail of that
    /// list, handed out from the lowest.
    fresh: Pfn,
    fresh_end: Pfn,
    /// NR_FREE_PAGES: pages in the free lists (not those on per-CPU lists).
    free_pages: u64,
    /// The migrate type of each pageblock, from the one holding `start`.
    pageblock: Vec<u8>,
    pb_base: u64,
}

impl ZoneBuddy {
    /// A zone of `managed` frames from `start`, the first at physical frame `phys_start`, with
    /// every frame free as memblock_free_all() leaves it: the partial blocks at the zone's
    /// edges written into the lists' tails, the max-order blocks between them as the
    /// never-used range; every pageblock Movable.
    fn boot(start: Pfn, managed: u64, phys_start: u64, meta: &mut Vec<FrameMeta>) -> ZoneBuddy {
        let end = start + managed as Pfn;
        let off = phys_start - u64::from(start);
        let pb_base = phys_start >> PAGEBLOCK_ORDER;
        let pb_last = if managed == 0 {
            pb_base
        } else {
            (u64::from(end) - 1 + off) >> PAGEBLOCK_ORDER
        };
        let mut zb = ZoneBuddy {
            start,
            end,
            off,
            lists: Default::default(),
            fresh: start,
            fresh_end: start,
            free_pages: 0,
            pageblock: vec![MigrateType::Movable as u8; (pb_last - pb_base + 1) as usize],
            pb_base,
        };
        // memmap_init() marks pageblocks Movable from each memory range's first frame; the
        // range at physical frame 0 starts at frame 1 (frame 0 is the BIOS's), so the first
        // pageblock keeps type 0, Unmovable.
        if pb_base == 0 {
            zb.pageblock[0] = MigrateType::Unmovable as u8;
        }
        let top = 1u64 << TOP_ORDER;
        let mut p = start;
        // The partial blocks below the first max-order boundary, and a max-order block at
        // frame 0, whose first pageblock puts it on the Unmovable list, are written now.
        while p < end && (!zb.phys(p).is_multiple_of(top) || zb.phys(p) == 0) {
            p = zb.boot_block(p, meta);
        }
        zb.fresh = p;
        zb.fresh_end = p + (((end - p) as u64 / top) * top) as Pfn;
        zb.free_pages += u64::from(zb.fresh_end - zb.fresh);
        p = zb.fresh_end;
        while p < end {
            p = zb.boot_block(p, meta);
        }
        zb
    }

    /// __free_pages_memory()'s next block from `p`: the largest aligned one that fits.
    fn boot_block(&mut self, p: Pfn, meta: &mut Vec<FrameMeta>) -> Pfn {
        let mut o = self.phys(p).trailing_zeros().min(TOP_ORDER);
        while p as u64 + (1u64 << o) > self.end as u64 {
            o -= 1;
        }
        ensure(meta, p + (1 << o));
        let mt = self.pageblock_mt(p);
        self.add(meta, p, o, mt, true);
        self.free_pages += 1 << o;
        p + (1 << o)
    }

    #[inline]
    fn phys(&self, p: Pfn) -> u64 {
        u64::from(p) + self.off
    }

    /// The frame whose physical number is `phys`, if it is in the zone.
    #[inline]
    fn in_zone(&self, phys: u64) -> Option<Pfn> {
        let p = phys.checked_sub(self.off)?;
        (p >= u64::from(self.start) && p < u64::from(self.end)).then_some(p as Pfn)
    }

    #[inline]
    fn in_fresh(&self, p: Pfn) -> bool {
        p >= self.fresh && p < self.fresh_end
    }

    #[inline]
    fn pb_index(&self, p: Pfn) -> usize {
        ((self.phys(p) >> PAGEBLOCK_ORDER) - self.pb_base) as usize
    }

    /// get_pageblock_migratetype()
    #[inline]
    pub fn pageblock_mt(&self, p: Pfn) -> MigrateType {
        MigrateType::from_bits(u32::from(self.pageblock[self.pb_index(p)]))
    }

    fn set_pageblock_mt(&mut self, p: Pfn, mt: MigrateType) {
        let i = self.pb_index(p);
        self.pageblock[i] = mt as u8;
    }

    /// NR_FREE_PAGES of the zone.
    #[inline]
    pub fn free_pages(&self) -> u64 {
        self.free_pages
    }

    /// The zone's frames: start..end.
    pub fn span(&self) -> (Pfn, Pfn) {
        (self.start, self.end)
    }

    /// The first frame of `p`'s pageblock (within the zone).
    pub fn pageblock_start(&self, p: Pfn) -> Pfn {
        let first = self.phys(p) & !(PAGEBLOCK_NR_PAGES - 1);
        self.in_zone(first).unwrap_or(self.start)
    }

    /// The frame after `p`'s pageblock (at most the zone's end).
    pub fn pageblock_end(&self, p: Pfn) -> Pfn {
        let next = (self.phys(p) | (PAGEBLOCK_NR_PAGES - 1)) + 1 - self.off;
        next.min(u64::from(self.end)) as Pfn
    }

    /// PageBuddy() and buddy_order(): if `p` heads a free block, its order and list (a block
    /// never used since boot included).
    pub fn free_block_at(&self, meta: &[FrameMeta], p: Pfn) -> Option<(u32, MigrateType)> {
        if self.in_fresh(p) {
            return (p - self.fresh)
                .is_multiple_of(1 << TOP_ORDER)
                .then_some((TOP_ORDER, MigrateType::Movable));
        }
        let idx = meta.get(p as usize)?.map.index;
        (idx & BUDDY_TAG != 0).then(|| ((idx >> 8) & 0xff, MigrateType::from_bits(idx & 0xff)))
    }

    /// __isolate_free_page(): take the free block at `p` of `order` off its list for
    /// compaction, if the zone stays above `min` + 2^order free pages; a block of at least
    /// half a pageblock makes its pageblocks Movable. Returns whether it was taken. (Blocks
    /// never used since boot are max-order and never isolated: the free scanner skips a
    /// pageblock that starts with a free block of pageblock order.)
    pub fn isolate_free_block(
        &mut self,
        meta: &mut [FrameMeta],
        p: Pfn,
        order: u32,
        min: u64,
    ) -> bool {
        debug_assert!(!self.in_fresh(p));
        if self.free_pages <= min + (1 << order) {
            return false;
        }
        let Some((o, mt)) = self.free_block_at(meta, p) else {
            return false;
        };
        debug_assert_eq!(o, order);
        self.del(meta, p, order, mt);
        self.free_pages -= 1 << order;
        if order + 1 >= PAGEBLOCK_ORDER {
            let mut q = p;
            while q < p + (1 << order) {
                self.set_pageblock_mt(q, MigrateType::Movable);
                q += PAGEBLOCK_NR_PAGES as Pfn;
            }
        }
        true
    }

    /// __zone_watermark_ok() without ALLOC_HIGH, ALLOC_HARDER or highatomic reserves: the free
    /// pages less those an `order` block cannot use ((1 << order) − 1) must be above `mark`
    /// plus the lowmem reserve, and for order > 0 some list of a pcp migrate type must hold a
    /// block of at least that order.
    pub fn watermark_ok(&self, order: u32, mark: u64, lowmem_reserve: u64) -> bool {
        let usable = self.free_pages.saturating_sub((1 << order) - 1);
        if usable <= mark + lowmem_reserve {
            return false;
        }
        order == 0
            || (order..=TOP_ORDER)
                .any(|o| MigrateType::ALL.iter().any(|&mt| !self.list_empty(o, mt)))
    }

    /// Blocks of `order` on the list of `mt` (the never-used range included).
    pub fn nr_free(&self, order: u32, mt: MigrateType) -> u64 {
        let fresh = if order == TOP_ORDER && mt == MigrateType::Movable {
            u64::from(self.fresh_end - self.fresh) >> TOP_ORDER
        } else {
            0
        };
        self.lists[order as usize][mt as usize].nr + fresh
    }

    /// area->nr_free: blocks of `order` on every list.
    pub fn nr_free_order(&self, order: u32) -> u64 {
        MigrateType::ALL
            .iter()
            .map(|&mt| self.nr_free(order, mt))
            .sum()
    }

    #[inline]
    fn list_empty(&self, order: u32, mt: MigrateType) -> bool {
        self.lists[order as usize][mt as usize].head == NIL
            && !(order == TOP_ORDER && mt == MigrateType::Movable && self.fresh < self.fresh_end)
    }

    /// If `p` heads a free block of `order`, the list it is on (page_is_buddy()).
    #[inline]
    fn buddy_list(&self, meta: &[FrameMeta], p: Pfn, order: u32) -> Option<MigrateType> {
        if self.in_fresh(p) {
            let aligned = (p - self.fresh).is_multiple_of(1 << TOP_ORDER);
            return (order == TOP_ORDER && aligned).then_some(MigrateType::Movable);
        }
        let idx = meta.get(p as usize)?.map.index;
        (idx & BUDDY_TAG != 0 && (idx >> 8) & 0xff == order)
            .then(|| MigrateType::from_bits(idx & 0xff))
    }

    /// add_to_free_list() (head) or add_to_free_list_tail().
    fn add(&mut self, meta: &mut [FrameMeta], p: Pfn, order: u32, mt: MigrateType, tail: bool) {
        debug_assert!(!self.in_fresh(p));
        debug_assert_eq!(
            self.phys(p) % (1 << order),
            0,
            "unaligned block {p}/{order}"
        );
        let l = &mut self.lists[order as usize][mt as usize];
        let m = &mut meta[p as usize];
        m.map.index = buddy_tag(order, mt);
        if tail {
            m.pc.prev = l.tail;
            m.pc.next = NIL;
            if l.tail != NIL {
                meta[l.tail as usize].pc.next = p;
            } else {
                l.head = p;
            }
            l.tail = p;
        } else {
            m.pc.next = l.head;
            m.pc.prev = NIL;
            if l.head != NIL {
                meta[l.head as usize].pc.prev = p;
            } else {
                l.tail = p;
            }
            l.head = p;
        }
        l.nr += 1;
    }

    /// del_page_from_free_list(): the block leaves its list and loses its tag.
    fn del(&mut self, meta: &mut [FrameMeta], p: Pfn, order: u32, mt: MigrateType) {
        let l = &mut self.lists[order as usize][mt as usize];
        let m = &mut meta[p as usize];
        let (prev, next) = (m.pc.prev, m.pc.next);
        m.pc.prev = NIL;
        m.pc.next = NIL;
        m.map.index = 0;
        if prev != NIL {
            meta[prev as usize].pc.next = next;
        } else {
            l.head = next;
        }
        if next != NIL {
            meta[next as usize].pc.prev = prev;
        } else {
            l.tail = prev;
        }
        l.nr -= 1;
    }

    /// The head of a list, written into the list if it comes from the never-used range.
    fn head(&mut self, meta: &mut Vec<FrameMeta>, order: u32, mt: MigrateType) -> Option<Pfn> {
        let h = self.lists[order as usize][mt as usize].head;
        if h != NIL {
            return Some(h);
        }
        if order == TOP_ORDER && mt == MigrateType::Movable && self.fresh < self.fresh_end {
            let p = self.fresh;
            self.fresh += 1 << TOP_ORDER;
            ensure(meta, p + (1 << TOP_ORDER));
            self.add(meta, p, TOP_ORDER, mt, false);
            return Some(p);
        }
        None
    }

    /// expand(): split a block of order `high` down to `low`, the upper halves to the heads
    /// of their lists.
    fn expand(&mut self, meta: &mut [FrameMeta], p: Pfn, low: u32, mut high: u32, mt: MigrateType) {
        while high > low {
            high -= 1;
            self.add(meta, p + (1 << high), high, mt, false);
        }
    }

    /// __rmqueue_smallest(): the head of the smallest order's list of `mt` that has a block.
    fn rmqueue_smallest(
        &mut self,
        meta: &mut Vec<FrameMeta>,
        order: u32,
        mt: MigrateType,
    ) -> Option<Pfn> {
        for o in order..=TOP_ORDER {
            if let Some(p) = self.head(meta, o, mt) {
                self.del(meta, p, o, mt);
                self.expand(meta, p, order, o, mt);
                return Some(p);
            }
        }
        None
    }

    /// find_suitable_fallback(): the first type in `mt`'s fallbacks with a block of `order`,
    /// and whether the allocation may steal the whole pageblock.
    fn find_suitable_fallback(&self, order: u32, mt: MigrateType) -> Option<(MigrateType, bool)> {
        if self.nr_free_order(order) == 0 {
            return None;
        }
        mt.fallbacks()
            .into_iter()
            .find(|&f| !self.list_empty(order, f))
            .map(|f| (f, can_steal_fallback(order, mt)))
    }

    /// __rmqueue_fallback(): steal from another type's largest block (or, for a movable
    /// allocation that could not take a whole pageblock, its smallest); under
    /// ALLOC_NOFRAGMENT only blocks of at least pageblock order.
    fn rmqueue_fallback(
        &mut self,
        meta: &mut Vec<FrameMeta>,
        order: u32,
        start_mt: MigrateType,
        nofragment: bool,
    ) -> bool {
        let min_order = if nofragment { PAGEBLOCK_ORDER } else { order };
        let mut found = None;
        for o in (min_order..=TOP_ORDER).rev() {
            let Some((f, can_steal)) = self.find_suitable_fallback(o, start_mt) else {
                continue;
            };
            if !can_steal && start_mt == MigrateType::Movable && o > order {
                // find_smallest
                found = (order..=TOP_ORDER)
                    .find_map(|o| self.find_suitable_fallback(o, start_mt).map(|x| (o, x)));
                break;
            }
            found = Some((o, (f, can_steal)));
            break;
        }
        let Some((o, (f, can_steal))) = found else {
            return false;
        };
        let p = self
            .head(meta, o, f)
            .expect("a suitable fallback has a block");
        self.steal_suitable_fallback(meta, p, o, f, start_mt, can_steal);
        true
    }

    /// steal_suitable_fallback(): take a pageblock-order block's pageblocks outright; for a
    /// smaller one move the free pages of its pageblock to `start_mt`'s lists and claim the
    /// pageblock when half of it is free or of a compatible kind; otherwise move the block
    /// alone.
    fn steal_suitable_fallback(
        &mut self,
        meta: &mut [FrameMeta],
        p: Pfn,
        order: u32,
        from: MigrateType,
        start_mt: MigrateType,
        whole_block: bool,
    ) {
        let old = self.pageblock_mt(p);
        if order >= PAGEBLOCK_ORDER {
            // change_pageblock_range()
            let mut q = p;
            while q < p + (1 << order) {
                self.set_pageblock_mt(q, start_mt);
                q += PAGEBLOCK_NR_PAGES as Pfn;
            }
        } else if whole_block {
            if let Some((free, movable)) = self.move_freepages_block(meta, p, start_mt) {
                let alike = if start_mt == MigrateType::Movable {
                    movable
                } else if old == MigrateType::Movable {
                    PAGEBLOCK_NR_PAGES - (free + movable)
                } else {
                    0
                };
                if free + alike >= PAGEBLOCK_NR_PAGES / 2 {
                    self.set_pageblock_mt(p, start_mt);
                }
                return;
            }
        }
        // move_to_free_list()
        self.del(meta, p, order, from);
        self.add(meta, p, order, start_mt, true);
    }

    /// move_freepages_block(): every free block of `p`'s pageblock to the tail of
    /// `mt`'s lists; the pages moved and the pages in use that are on an LRU (movable).
    /// None when the pageblock runs past the zone's end.
    fn move_freepages_block(
        &mut self,
        meta: &mut [FrameMeta],
        p: Pfn,
        mt: MigrateType,
    ) -> Option<(u64, u64)> {
        let first = self.phys(p) & !(PAGEBLOCK_NR_PAGES - 1);
        let start = self.in_zone(first).unwrap_or(p);
        let last = self.in_zone(first + PAGEBLOCK_NR_PAGES - 1)?;
        let (mut moved, mut movable) = (0, 0);
        let mut q = start;
        let mut guard = 0;
        while q <= last {
            guard += 1;
            debug_assert!(guard <= PAGEBLOCK_NR_PAGES);
            let idx = meta[q as usize].map.index;
            if idx & BUDDY_TAG == 0 {
                if meta[q as usize].pc.flags & pf::LRU_MASK != LRU_NONE {
                    movable += 1;
                }
                q += 1;
                continue;
            }
            let o = (idx >> 8) & 0xff;
            let cur = MigrateType::from_bits(idx & 0xff);
            self.del(meta, q, o, cur);
            self.add(meta, q, o, mt, true);
            moved += 1 << o;
            q += 1 << o;
        }
        (moved > 0).then_some((moved, movable))
    }

    /// __rmqueue(): a block of `order` for `mt`, stealing from other types when its own lists
    /// are empty. Takes the pages out of NR_FREE_PAGES.
    pub fn rmqueue(
        &mut self,
        meta: &mut Vec<FrameMeta>,
        order: u32,
        mt: MigrateType,
        nofragment: bool,
    ) -> Option<Pfn> {
        // Each fallback moves a block to `mt`'s lists; 2 × MAX_ORDER rounds bound the retries.
        for _ in 0..2 * MAX_ORDER {
            if let Some(p) = self.rmqueue_smallest(meta, order, mt) {
                self.free_pages -= 1 << order;
                return Some(p);
            }
            if !self.rmqueue_fallback(meta, order, mt, nofragment) {
                return None;
            }
        }
        None
    }

    /// __free_one_page(): merge the block with its free buddies up to MAX_ORDER − 1 and put
    /// it on `mt`'s list: at the tail when `to_tail` (FPI_TO_TAIL) or when the merged block's
    /// own buddy is free one order up (buddy_merge_likely()), else at the head.
    pub fn free_one_page(
        &mut self,
        meta: &mut [FrameMeta],
        p: Pfn,
        order: u32,
        mt: MigrateType,
        to_tail: bool,
    ) {
        debug_assert!(p >= self.start && p + (1 << order) <= self.end);
        self.free_pages += 1 << order;
        meta[p as usize].map.index = 0;
        let (mut pfn, mut order) = (p, order);
        let mut buddy_phys = 0;
        while order < TOP_ORDER {
            buddy_phys = self.phys(pfn) ^ (1 << order);
            let Some(b) = self.in_zone(buddy_phys) else {
                break;
            };
            let Some(bmt) = self.buddy_list(meta, b, order) else {
                break;
            };
            self.del(meta, b, order, bmt);
            pfn = pfn.min(b);
            order += 1;
        }
        let tail = to_tail || self.buddy_merge_likely(meta, pfn, buddy_phys, order);
        self.add(meta, pfn, order, mt, tail);
    }

    /// buddy_merge_likely(): is the buddy of the block one order up free?
    fn buddy_merge_likely(
        &self,
        meta: &[FrameMeta],
        pfn: Pfn,
        buddy_phys: u64,
        order: u32,
    ) -> bool {
        if order >= TOP_ORDER - 1 {
            return false;
        }
        let higher = buddy_phys & self.phys(pfn);
        let hb = higher ^ (1 << (order + 1));
        self.in_zone(hb)
            .is_some_and(|b| self.buddy_list(meta, b, order + 1).is_some())
    }

    /// The free blocks (head, order, list), the never-used range's included.
    pub fn blocks<'a>(
        &'a self,
        meta: &'a [FrameMeta],
    ) -> impl Iterator<Item = (Pfn, u32, MigrateType)> + 'a {
        let listed = (0..MAX_ORDER).flat_map(move |o| {
            MigrateType::ALL.into_iter().flat_map(move |mt| {
                let mut cur = self.lists[o][mt as usize].head;
                std::iter::from_fn(move || {
                    let p = cur;
                    cur = meta.get(p as usize)?.pc.next;
                    Some((p, o as u32, mt))
                })
                .take(self.lists[o][mt as usize].nr as usize)
            })
        });
        let fresh = (self.fresh..self.fresh_end)
            .step_by(1 << TOP_ORDER)
            .map(|p| (p, TOP_ORDER, MigrateType::Movable));
        listed.chain(fresh)
    }

    /// Pageblocks of each migrate type among those holding the zone's frames.
    pub fn pageblock_counts(&self) -> [u64; MIGRATE_PCPTYPES] {
        let mut c = [0; MIGRATE_PCPTYPES];
        for &b in &self.pageblock {
            c[b as usize] += 1;
        }
        c
    }

    /// The block counts /proc/pagetypeinfo prints for a zone spanning physical frames
    /// `span_start..span_end` (pagetypeinfo_showblockcount_print()): every pageblock of the
    /// span, those with managed frames by their type, those of reserved frames only Movable
    /// as memmap_init() left them (the one at frame 0 Unmovable).
    pub fn span_pageblock_counts(&self, span_start: u64, span_end: u64) -> [u64; MIGRATE_PCPTYPES] {
        let mut c = [0; MIGRATE_PCPTYPES];
        if span_end <= span_start {
            return c;
        }
        for pb in span_start >> PAGEBLOCK_ORDER..=(span_end - 1) >> PAGEBLOCK_ORDER {
            let mt = match pb.checked_sub(self.pb_base) {
                Some(i) if (i as usize) < self.pageblock.len() && self.end > self.start => {
                    self.pageblock[i as usize] as usize
                }
                _ if pb == 0 => MigrateType::Unmovable as usize,
                _ => MigrateType::Movable as usize,
            };
            c[mt] += 1;
        }
        c
    }

    /// The lists' links, tags, alignment and counts, and NR_FREE_PAGES against them.
    fn check(&self, meta: &[FrameMeta]) -> Result<u64, String> {
        let mut pages = 0u64;
        let mut heads = 0u64;
        for o in 0..MAX_ORDER {
            for mt in MigrateType::ALL {
                let l = &self.lists[o][mt as usize];
                let (mut cur, mut prev, mut n) = (l.head, NIL, 0u64);
                while cur != NIL {
                    if n >= l.nr {
                        return Err(format!("order {o} {mt:?} list longer than {}", l.nr));
                    }
                    let Some(m) = meta.get(cur as usize) else {
                        return Err(format!("free block {cur} beyond the written frames"));
                    };
                    if cur < self.start || cur as u64 + (1 << o) > self.end as u64 {
                        return Err(format!("free block {cur}/{o} outside its zone"));
                    }
                    if self.in_fresh(cur) {
                        return Err(format!("free block {cur} inside the never-used range"));
                    }
                    if !self.phys(cur).is_multiple_of(1 << o) {
                        return Err(format!("free block {cur}/{o} unaligned"));
                    }
                    if m.map.index != buddy_tag(o as u32, mt) || m.pc.prev != prev {
                        return Err(format!("free block {cur}/{o} {mt:?}: bad tag or link"));
                    }
                    if m.pc.flags & (pf::ALLOCATED | pf::LRU_MASK) != LRU_NONE {
                        return Err(format!("free block {cur} allocated or on an LRU"));
                    }
                    prev = cur;
                    cur = m.pc.next;
                    n += 1;
                }
                if n != l.nr || l.tail != prev {
                    return Err(format!("order {o} {mt:?}: {n} blocks, count {}", l.nr));
                }
                pages += n << o;
                heads += n;
            }
        }
        pages += u64::from(self.fresh_end - self.fresh);
        if pages != self.free_pages {
            return Err(format!(
                "free lists hold {pages} pages, NR_FREE_PAGES {}",
                self.free_pages
            ));
        }
        Ok(heads)
    }
}

/// can_steal_fallback(): whole pageblocks may be claimed for big blocks and for unmovable and
/// reclaimable allocations.
fn can_steal_fallback(order: u32, start_mt: MigrateType) -> bool {
    order >= PAGEBLOCK_ORDER / 2 || start_mt != MigrateType::Movable
}

/// pcp_allowed_order(): orders that go through the per-CPU lists.
#[inline]
pub fn pcp_allowed_order(order: u32) -> bool {
    order <= PAGE_ALLOC_COSTLY_ORDER || order == PAGEBLOCK_ORDER
}

/// order_to_pindex()
#[inline]
fn order_to_pindex(mt: MigrateType, order: u32) -> usize {
    if order > PAGE_ALLOC_COSTLY_ORDER {
        debug_assert_eq!(order, PAGEBLOCK_ORDER);
        NR_PCP_LISTS - 1
    } else {
        MIGRATE_PCPTYPES * order as usize + mt as usize
    }
}

/// pindex_to_order()
#[inline]
fn pindex_to_order(i: usize) -> u32 {
    if i == NR_PCP_LISTS - 1 {
        PAGEBLOCK_ORDER
    } else {
        (i / MIGRATE_PCPTYPES) as u32
    }
}

/// One CPU's free pages of one zone (struct per_cpu_pages): allocations take a list's front
/// (the most recently freed), refills join its back, spills leave from its back.
#[derive(Clone, Debug, Default)]
pub struct PerCpuPages {
    lists: [VecDeque<Pfn>; NR_PCP_LISTS],
    /// Pages on the lists (a block of order n counts 2^n).
    count: u64,
    /// Doubles the spill each time a free finds the lists full with no allocation between.
    free_factor: u32,
}

/// The free frames of every zone (free_area) and of every CPU's lists.
#[derive(Clone, Debug, Default)]
pub struct FreeArea {
    zones: [ZoneBuddy; NR_ZONES],
    /// [cpu][zone]
    pcp: Vec<[PerCpuPages; NR_ZONES]>,
}

impl FreeArea {
    /// Every frame of the zones free (memblock_free_all()), the lists of `cpus` CPUs empty.
    pub fn new(zones: &Zones, cpus: u32, meta: &mut Vec<FrameMeta>) -> FreeArea {
        FreeArea {
            zones: std::array::from_fn(|z| {
                let zone = &zones.zone[z];
                ZoneBuddy::boot(zone.start, zone.managed, zone.phys_start, meta)
            }),
            pcp: (0..cpus.max(1)).map(|_| Default::default()).collect(),
        }
    }

    /// A zone's free area.
    pub fn zone(&self, z: usize) -> &ZoneBuddy {
        &self.zones[z]
    }

    /// A zone's free area, to change (compaction takes free blocks off its lists).
    pub fn zone_mut(&mut self, z: usize) -> &mut ZoneBuddy {
        &mut self.zones[z]
    }

    /// Free frames, on the zones' lists and the CPUs'.
    pub fn len(&self) -> usize {
        (self.nr_free_pages() + self.pcp_len()) as usize
    }

    fn pcp_len(&self) -> u64 {
        self.pcp.iter().flatten().map(|p| p.count).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// NR_FREE_PAGES of every zone: what MemFree shows (not the per-CPU lists).
    pub fn nr_free_pages(&self) -> u64 {
        self.zones.iter().map(ZoneBuddy::free_pages).sum()
    }

    /// NR_FREE_PAGES of one zone, what its watermark checks see.
    #[inline]
    pub fn zone_len(&self, z: usize) -> u64 {
        self.zones[z].free_pages
    }

    /// Pages on CPU `cpu`'s lists of zone `z`.
    pub fn pcp_count(&self, cpu: usize, z: usize) -> u64 {
        self.pcp[cpu][z].count
    }

    /// free_unref_page() on CPU `cpu` for a block of `order`: a block of an order the per-CPU
    /// lists take joins its list (by its pageblock's migrate type); lists at their high mark
    /// (nr_pcp_high(): at most 4 batches while kswapd reclaims, `reclaim_active`; none while
    /// freeing small high-order blocks without allocations between) spill to the zone
    /// (free_pcppages_bulk() of nr_pcp_free() pages). Other orders go straight to the zone.
    pub fn free_unref_page(
        &mut self,
        pfn: Pfn,
        order: u32,
        cpu: usize,
        zones: &Zones,
        reclaim_active: bool,
        meta: &mut [FrameMeta],
    ) {
        let z = zones.zone_of(pfn);
        let zb = &mut self.zones[z];
        let mt = zb.pageblock_mt(pfn);
        if !pcp_allowed_order(order) {
            zb.free_one_page(meta, pfn, order, mt, false);
            return;
        }
        let zone = &zones.zone[z];
        let cpu = cpu.min(self.pcp.len() - 1);
        let pcp = &mut self.pcp[cpu][z];
        let pindex = order_to_pindex(mt, order);
        meta[pfn as usize].map.index = PCP_TAG | mt as u32;
        pcp.lists[pindex].push_front(pfn);
        pcp.count += 1 << order;
        let free_high = pcp.free_factor > 0 && order > 0 && order <= PAGE_ALLOC_COSTLY_ORDER;
        let high = if free_high {
            0
        } else if reclaim_active {
            (zone.pcp_batch << 2).min(zone.pcp_high)
        } else {
            zone.pcp_high
        };
        if pcp.count < high {
            return;
        }
        // nr_pcp_free()
        let batch = zone.pcp_batch;
        let n = if free_high {
            pcp.count
        } else if high < batch {
            1
        } else {
            let (min_nr, max_nr) = (batch, high - batch);
            let b = batch << pcp.free_factor.min(16);
            if b < max_nr {
                pcp.free_factor += 1;
            }
            b.clamp(min_nr, max_nr.max(min_nr))
        };
        self.free_pcppages_bulk(z, cpu, n, pindex, meta);
    }

    /// free_pcppages_bulk(): `count` pages from CPU `cpu`'s lists of zone `z` to the zone,
    /// list `pindex` first, then round robin over the others, each list from its back.
    fn free_pcppages_bulk(
        &mut self,
        z: usize,
        cpu: usize,
        count: u64,
        pindex: usize,
        meta: &mut [FrameMeta],
    ) {
        let pcp = &mut self.pcp[cpu][z];
        let zb = &mut self.zones[z];
        let mut count = count.min(pcp.count) as i64;
        let (mut min_i, mut max_i) = (0usize, NR_PCP_LISTS - 1);
        // The requested list is drained first.
        let mut i = if pindex == 0 { max_i } else { pindex - 1 };
        while count > 0 {
            loop {
                i = if i >= max_i { min_i } else { i + 1 };
                if !pcp.lists[i].is_empty() {
                    break;
                }
                if i == max_i {
                    max_i -= 1;
                }
                if i == min_i {
                    min_i += 1;
                }
            }
            let order = pindex_to_order(i);
            while count > 0 {
                let Some(p) = pcp.lists[i].pop_back() else {
                    break;
                };
                let mt = MigrateType::from_bits(meta[p as usize].map.index & 0xff);
                count -= 1 << order;
                pcp.count -= 1 << order;
                zb.free_one_page(meta, p, order, mt, false);
            }
        }
    }

    /// rmqueue(): a block of `order` and migrate type `mt` from zone `z`, through CPU
    /// `cpu`'s list when the order has one (rmqueue_pcplist(), refilled with
    /// max(batch >> order, 2) blocks by rmqueue_bulk() when empty), else from the zone
    /// (__rmqueue()). `nofragment`: ALLOC_NOFRAGMENT.
    #[allow(clippy::too_many_arguments)]
    pub fn rmqueue(
        &mut self,
        z: usize,
        order: u32,
        mt: MigrateType,
        cpu: usize,
        zones: &Zones,
        nofragment: bool,
        meta: &mut Vec<FrameMeta>,
    ) -> Option<Pfn> {
        let zb = &mut self.zones[z];
        if !pcp_allowed_order(order) {
            return zb.rmqueue(meta, order, mt, nofragment);
        }
        let cpu = cpu.min(self.pcp.len() - 1);
        let pcp = &mut self.pcp[cpu][z];
        pcp.free_factor >>= 1;
        let i = order_to_pindex(mt, order);
        if pcp.lists[i].is_empty() {
            let mut batch = zones.zone[z].pcp_batch;
            if batch > 1 {
                batch = (batch >> order).max(2);
            }
            for _ in 0..batch {
                let Some(p) = zb.rmqueue(meta, order, mt, nofragment) else {
                    break;
                };
                meta[p as usize].map.index = PCP_TAG | mt as u32;
                pcp.lists[i].push_back(p);
                pcp.count += 1 << order;
            }
        }
        let p = pcp.lists[i].pop_front()?;
        pcp.count -= 1 << order;
        meta[p as usize].map.index = 0;
        Some(p)
    }

    /// drain_all_pages(): every CPU's lists back to their zones.
    pub fn drain_all_pages(&mut self, meta: &mut [FrameMeta]) {
        for cpu in 0..self.pcp.len() {
            for z in 0..NR_ZONES {
                let n = self.pcp[cpu][z].count;
                if n > 0 {
                    self.free_pcppages_bulk(z, cpu, n, 0, meta);
                }
            }
        }
    }

    /// An order-0 frame of type `mt` from the highest zone that has one, with no watermark
    /// (the kernel's allocations the model forces: the base system at boot, __GFP_NOFAIL, OOM
    /// victims), then from the CPUs' order-0 lists.
    pub fn pop(&mut self, mt: MigrateType, meta: &mut Vec<FrameMeta>) -> Option<Pfn> {
        for z in (0..NR_ZONES).rev() {
            if let Some(p) = self.zones[z].rmqueue(meta, 0, mt, false) {
                return Some(p);
            }
        }
        for cpu in self.pcp.iter_mut() {
            for pcp in cpu.iter_mut() {
                for i in 0..MIGRATE_PCPTYPES {
                    if let Some(p) = pcp.lists[i].pop_front() {
                        pcp.count -= 1;
                        meta[p as usize].map.index = 0;
                        return Some(p);
                    }
                }
            }
        }
        None
    }

    /// The free frames of zone `z`, its CPUs' lists included.
    pub fn zone_iter<'a>(
        &'a self,
        z: usize,
        meta: &'a [FrameMeta],
    ) -> impl Iterator<Item = Pfn> + 'a {
        let blocks = self.zones[z]
            .blocks(meta)
            .flat_map(|(p, o, _)| p..p + (1 << o));
        let pcp = self.pcp.iter().flat_map(move |c| {
            c[z].lists.iter().enumerate().flat_map(|(i, l)| {
                let o = pindex_to_order(i);
                l.iter().flat_map(move |&p| p..p + (1 << o))
            })
        });
        blocks.chain(pcp)
    }

    /// /proc/buddyinfo's counts: free blocks of each order in zone `z`.
    pub fn buddyinfo(&self, z: usize) -> [u64; MAX_ORDER] {
        std::array::from_fn(|o| self.zones[z].nr_free_order(o as u32))
    }

    /// The free lists' and per-CPU lists' structure (Machine::check): links, tags,
    /// alignment, counts, and no stale PageBuddy tag on a frame outside the lists.
    pub fn check(&self, meta: &[FrameMeta]) -> Result<(), String> {
        let mut heads = 0;
        for (z, zb) in self.zones.iter().enumerate() {
            heads += zb.check(meta).map_err(|e| format!("zone {z}: {e}"))?;
        }
        let tagged = meta.iter().filter(|m| m.map.index & BUDDY_TAG != 0).count() as u64;
        if tagged != heads {
            return Err(format!(
                "{tagged} frames tagged as free block heads, {heads} on the lists"
            ));
        }
        for (cpu, c) in self.pcp.iter().enumerate() {
            for (z, pcp) in c.iter().enumerate() {
                let mut n = 0;
                for (i, l) in pcp.lists.iter().enumerate() {
                    for &p in l {
                        let m = meta.get(p as usize).ok_or("pcp frame beyond the array")?;
                        if m.map.index & PCP_TAG == 0 {
                            return Err(format!("cpu {cpu} zone {z}: frame {p} untagged"));
                        }
                        if i < NR_PCP_LISTS - 1 && (m.map.index & 0xff) as usize % 3 != i % 3 {
                            // An order ≤ 3 page sits on its pcp type's list.
                            return Err(format!("cpu {cpu} zone {z}: frame {p} on list {i}"));
                        }
                    }
                    n += (l.len() as u64) << pindex_to_order(i);
                }
                if n != pcp.count {
                    return Err(format!(
                        "cpu {cpu} zone {z}: {n} pages, count {}",
                        pcp.count
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mmzone::{ZONE_DMA, ZONE_DMA32};

    /// A single zone of `managed` frames starting at physical frame `phys`.
    fn zone(managed: u64, phys: u64) -> (ZoneBuddy, Vec<FrameMeta>) {
        let mut meta = Vec::new();
        let zb = ZoneBuddy::boot(0, managed, phys, &mut meta);
        (zb, meta)
    }

    fn alloc(zb: &mut ZoneBuddy, meta: &mut Vec<FrameMeta>, order: u32, mt: MigrateType) -> Pfn {
        let p = zb.rmqueue(meta, order, mt, false).expect("free memory");
        meta[p as usize].pc.flags = LRU_NONE | pf::ALLOCATED;
        p
    }

    fn free(zb: &mut ZoneBuddy, meta: &mut [FrameMeta], p: Pfn, order: u32) {
        meta[p as usize].pc.flags = LRU_NONE;
        let mt = zb.pageblock_mt(p);
        zb.free_one_page(meta, p, order, mt, false);
    }

    #[test]
    fn boot_leaves_partial_blocks_at_the_edges_and_max_order_blocks_unwritten() {
        // 3840 frames from physical 256 (ZONE_DMA): an order-8 block at 256, an order-9 at
        // 512, then three order-10 blocks.
        let (zb, meta) = zone(3840, 256);
        assert_eq!(zb.nr_free_order(8), 1);
        assert_eq!(zb.nr_free_order(9), 1);
        assert_eq!(zb.nr_free_order(10), 3);
        assert_eq!(zb.free_pages(), 3840);
        assert_eq!(meta.len(), 768, "only the partial blocks are written");
        assert_eq!(zb.check(&meta), Ok(2));
        // The max-order block at physical frame 0 is on the Unmovable list (its first
        // pageblock was never marked Movable) and written at boot.
        let (zb, meta) = zone(2048, 0);
        assert_eq!(zb.nr_free(TOP_ORDER, MigrateType::Unmovable), 1);
        assert_eq!(zb.nr_free(TOP_ORDER, MigrateType::Movable), 1);
        assert_eq!(meta.len(), 1024);
        assert_eq!(zb.span_pageblock_counts(0, 2048), [1, 3, 0]);
        // A zone ending off a max-order boundary writes its top partial blocks too.
        let (zb, _) = zone(1024 + 512 + 3, 0);
        assert_eq!(zb.buddyinfo_row(), [1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
    }

    impl ZoneBuddy {
        fn buddyinfo_row(&self) -> [u64; MAX_ORDER] {
            std::array::from_fn(|o| self.nr_free_order(o as u32))
        }
    }

    #[test]
    fn splitting_hands_out_ascending_frames_and_freeing_merges_back() {
        let (mut zb, mut meta) = zone(4096, 8192);
        let got: Vec<Pfn> = (0..8)
            .map(|_| alloc(&mut zb, &mut meta, 0, MigrateType::Movable))
            .collect();
        assert_eq!(got, (0..8).collect::<Vec<_>>());
        // The first max-order block split into 1+2+4+...+512 beside the 8 taken.
        assert_eq!(
            zb.buddyinfo_row(),
            [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 3],
            "8..16 at order 3, 16..32 at 4, ..., 512..1024 at 9"
        );
        for p in got {
            free(&mut zb, &mut meta, p, 0);
        }
        assert_eq!(zb.buddyinfo_row(), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]);
        assert_eq!(zb.free_pages(), 4096);
        assert_eq!(zb.check(&meta), Ok(1));
    }

    #[test]
    fn a_lone_free_page_stays_unmerged_while_its_buddy_is_in_use() {
        let (mut zb, mut meta) = zone(1024, 8192);
        let a = alloc(&mut zb, &mut meta, 0, MigrateType::Movable);
        let b = alloc(&mut zb, &mut meta, 0, MigrateType::Movable);
        assert_eq!((a, b), (0, 1));
        free(&mut zb, &mut meta, a, 0);
        assert_eq!(zb.nr_free_order(0), 1);
        assert_eq!(zb.nr_free_order(TOP_ORDER), 0);
        // An order-1 request cannot use frame 0: it splits the order-1 block at 2.
        assert_eq!(alloc(&mut zb, &mut meta, 1, MigrateType::Movable), 2);
        free(&mut zb, &mut meta, b, 0);
        free(&mut zb, &mut meta, 2, 1);
        assert_eq!(zb.nr_free_order(TOP_ORDER), 1);
    }

    #[test]
    fn an_unmovable_allocation_claims_a_whole_movable_block() {
        let (mut zb, mut meta) = zone(4096, 8192);
        let p = alloc(&mut zb, &mut meta, 0, MigrateType::Unmovable);
        // It stole the largest block: both its pageblocks are now Unmovable, and the rest of
        // the block sits on Unmovable lists.
        assert_eq!(p, 0);
        assert_eq!(zb.pageblock_counts(), [2, 6, 0]);
        assert_eq!(zb.nr_free(9, MigrateType::Unmovable), 1);
        assert_eq!(zb.nr_free(10, MigrateType::Movable), 3);
        // Movable allocations keep to their own blocks.
        assert_eq!(alloc(&mut zb, &mut meta, 0, MigrateType::Movable), 1024);
        assert_eq!(
            zb.check(&meta),
            Ok(zb.lists.iter().flatten().map(|l| l.nr).sum())
        );
    }

    #[test]
    fn movable_allocations_win_back_a_stolen_pageblock_by_the_half_rule() {
        let (mut zb, mut meta) = zone(1024, 8192);
        let mv = MigrateType::Movable;
        assert_eq!(alloc(&mut zb, &mut meta, 0, MigrateType::Unmovable), 0);
        assert_eq!(zb.pageblock_counts(), [2, 0, 0]);
        // With no Movable block left, the largest Unmovable block (order 9, pageblock 1) is
        // taken whole: pageblock 1 turns Movable.
        assert_eq!(alloc(&mut zb, &mut meta, 0, mv), 512);
        assert_eq!(zb.pageblock_counts(), [1, 1, 0]);
        for _ in 1..512 {
            alloc(&mut zb, &mut meta, 0, mv);
        }
        // Pageblock 0 has 511 free pages on Unmovable lists: the next movable request moves
        // them all and claims the pageblock (free + movable ≥ 256).
        assert_eq!(zb.nr_free(8, MigrateType::Unmovable), 1);
        let p = alloc(&mut zb, &mut meta, 0, mv);
        assert!(p > 0 && p < 512);
        assert_eq!(zb.pageblock_counts(), [0, 2, 0]);
        assert_eq!(
            zb.nr_free_order(0) + zb.nr_free(8, MigrateType::Unmovable),
            0
        );
        let mut n = 513;
        while zb.rmqueue(&mut meta, 0, mv, false).is_some() {
            n += 1;
        }
        assert_eq!(n, 1023);
        assert_eq!(zb.free_pages(), 0);
    }

    #[test]
    fn the_watermark_check_wants_a_block_of_the_order() {
        let (mut zb, mut meta) = zone(1024, 8192);
        assert!(zb.watermark_ok(10, 0, 0));
        assert!(!zb.watermark_ok(0, 1024, 0), "free must exceed the mark");
        assert!(!zb.watermark_ok(0, 1000, 24), "the lowmem reserve counts");
        alloc(&mut zb, &mut meta, 0, MigrateType::Movable);
        // 1023 pages free, but no block of order 10 any more.
        assert!(zb.watermark_ok(0, 1000, 0));
        assert!(zb.watermark_ok(9, 0, 0));
        assert!(!zb.watermark_ok(10, 0, 0));
        // An order-9 request cannot count the 511 pages it could not use.
        assert!(!zb.watermark_ok(9, 512, 0));
        assert!(zb.watermark_ok(9, 511, 0));
    }

    #[test]
    fn nofragment_refuses_to_steal_below_pageblock_order() {
        let (mut zb, mut meta) = zone(1024, 8192);
        alloc(&mut zb, &mut meta, 0, MigrateType::Unmovable);
        alloc(&mut zb, &mut meta, 9, MigrateType::Unmovable);
        // All that is free is on Unmovable lists, in blocks under pageblock order.
        assert_eq!(zb.rmqueue(&mut meta, 0, MigrateType::Movable, true), None);
        assert!(zb
            .rmqueue(&mut meta, 0, MigrateType::Movable, false)
            .is_some());
    }

    #[test]
    fn per_cpu_lists_are_kept_per_migrate_type() {
        let z = Zones::new(131_072, 116_534, None, 10, 2);
        let mut meta = Vec::new();
        let mut f = FreeArea::new(&z, 2, &mut meta);
        let p = f
            .rmqueue(ZONE_DMA32, 0, MigrateType::Movable, 0, &z, false, &mut meta)
            .unwrap();
        assert_eq!(f.pcp_count(0, ZONE_DMA32), 30);
        let k = f
            .rmqueue(
                ZONE_DMA32,
                0,
                MigrateType::Unmovable,
                0,
                &z,
                false,
                &mut meta,
            )
            .unwrap();
        // An unmovable request does not take the movable list's pages: it refills its own.
        assert_eq!(f.pcp_count(0, ZONE_DMA32), 60);
        assert_ne!(f.zone(ZONE_DMA32).pageblock_mt(k), MigrateType::Movable);
        assert_eq!(f.zone(ZONE_DMA32).pageblock_mt(p), MigrateType::Movable);
        assert_eq!(f.check(&meta), Ok(()));
        // Freed, each goes to the list of its pageblock's type; a drain returns them all.
        for q in [p, k] {
            meta[q as usize] = FRAME_AT_BOOT;
            f.free_unref_page(q, 0, 0, &z, false, &mut meta);
        }
        assert_eq!(f.pcp_count(0, ZONE_DMA32), 62);
        f.drain_all_pages(&mut meta);
        assert_eq!(f.pcp_count(0, ZONE_DMA32), 0);
        assert_eq!(f.nr_free_pages(), 116_534);
        assert_eq!(f.check(&meta), Ok(()));
        assert_eq!(f.zone_iter(ZONE_DMA, &meta).count(), 3840);
    }

    #[test]
    fn free_pages_sit_on_per_cpu_lists_out_of_the_zone_count() {
        let z = Zones::new(131_072, 116_534, None, 10, 2);
        let mut meta = Vec::new();
        let mut f = FreeArea::new(&z, 2, &mut meta);
        assert_eq!(f.len(), 116_534);
        assert_eq!(f.zone_len(ZONE_DMA), 3840);
        let mv = MigrateType::Movable;
        // An allocation refills its CPU's list with a batch and takes the first page.
        let first = f
            .rmqueue(ZONE_DMA32, 0, mv, 0, &z, false, &mut meta)
            .unwrap();
        assert_eq!(first, 3840);
        assert_eq!(f.pcp_count(0, ZONE_DMA32), 30);
        assert_eq!(f.nr_free_pages(), 116_534 - 31);
        assert_eq!(f.len(), 116_534 - 1);
        // Forced allocations take the highest zone first.
        assert_eq!(f.pop(mv, &mut meta), Some(3871));
        // Frees fill CPU 1's list up to its high mark (411), then spill a batch, doubling
        // while frees come without allocations.
        let taken: Vec<Pfn> = (0..600).map(|_| f.pop(mv, &mut meta).unwrap()).collect();
        let before = f.nr_free_pages();
        for (i, &p) in taken.iter().enumerate() {
            f.free_unref_page(p, 0, 1, &z, false, &mut meta);
            if i == 409 {
                assert_eq!(f.pcp_count(1, ZONE_DMA32), 410);
            }
        }
        assert!(f.pcp_count(1, ZONE_DMA32) < 411);
        assert_eq!(f.nr_free_pages() - before + f.pcp_count(1, ZONE_DMA32), 600);
        // While kswapd reclaims, a list above 4 batches spills at every free until it is
        // under them.
        let mut prev = f.pcp_count(1, ZONE_DMA32);
        for _ in 0..20 {
            let p = f.pop(mv, &mut meta).unwrap();
            f.free_unref_page(p, 0, 1, &z, true, &mut meta);
            let now = f.pcp_count(1, ZONE_DMA32);
            assert!(now < 124 || now + 31 <= prev + 1, "{prev} -> {now}");
            prev = now;
        }
        assert!(prev < 124);
        let dma = f.rmqueue(ZONE_DMA, 0, mv, 0, &z, false, &mut meta).unwrap();
        assert!(dma < 3840);
        f.free_unref_page(dma, 0, 0, &z, false, &mut meta);
        f.free_unref_page(first, 0, 0, &z, false, &mut meta);
        f.drain_all_pages(&mut meta);
        assert_eq!(f.zone_len(ZONE_DMA), 3840);
        assert_eq!(f.nr_free_pages() as usize, f.len());
        assert_eq!(f.check(&meta), Ok(()));
    }

    proptest::proptest! {
        /// Allocations through the per-CPU lists of two zones and two CPUs, frees to them
        /// (while kswapd reclaims or not) and drains keep every list consistent, hand no
        /// frame out twice, keep each frame in its own zone, and account every page once.
        #[test]
        fn the_per_cpu_lists_and_zones_stay_consistent(
            ops in proptest::collection::vec((0u8..5, 0u8..3, 0u8..3, 0u8..2), 0..400),
        ) {
            let z = Zones::new(16_384, 16_000, None, 10, 2);
            let mut meta = Vec::new();
            let mut f = FreeArea::new(&z, 2, &mut meta);
            let total = f.len();
            let mut held: Vec<(Pfn, u32)> = Vec::new();
            let mut owned = std::collections::HashSet::new();
            for (op, zone, mt, cpu) in ops {
                let (zone, cpu) = (zone as usize % NR_ZONES, cpu as usize);
                let mt = MigrateType::ALL[mt as usize];
                match op {
                    0 | 1 => {
                        let order = if op == 0 { 0 } else { [1, 3, 9][mt as usize] };
                        if let Some(p) = f.rmqueue(zone, order, mt, cpu, &z, false, &mut meta) {
                            proptest::prop_assert_eq!(z.zone_of(p), zone);
                            for q in p..p + (1 << order) {
                                proptest::prop_assert!(owned.insert(q), "frame {} twice", q);
                            }
                            meta[p as usize].pc.flags = LRU_NONE | pf::ALLOCATED;
                            held.push((p, order));
                        }
                    }
                    2 | 3 => {
                        if let Some((p, order)) = held.pop() {
                            for q in p..p + (1 << order) {
                                owned.remove(&q);
                            }
                            meta[p as usize] = FRAME_AT_BOOT;
                            f.free_unref_page(p, order, cpu, &z, op == 3, &mut meta);
                        }
                    }
                    _ => f.drain_all_pages(&mut meta),
                }
                proptest::prop_assert_eq!(f.check(&meta), Ok(()));
                proptest::prop_assert_eq!(f.len() + owned.len(), total);
            }
        }

        /// Any sequence of allocations and frees of mixed orders and types keeps the lists
        /// consistent, never hands out a frame twice, and merges everything back into the
        /// boot layout once all is freed.
        #[test]
        fn the_buddy_lists_stay_consistent(
            ops in proptest::collection::vec((0u8..4, 0u32..11, 0u8..3), 0..300),
            phys in 0u64..2048,
            managed in 1u64..5000,
        ) {
            let (mut zb, mut meta) = zone(managed, phys);
            let boot = zb.buddyinfo_row();
            let mut held: Vec<(Pfn, u32)> = Vec::new();
            let mut owned = std::collections::HashSet::new();
            for (op, order, mt) in ops {
                let mt = MigrateType::ALL[mt as usize];
                if op < 3 {
                    let order = if op == 0 { order } else { order % 4 };
                    if let Some(p) = zb.rmqueue(&mut meta, order, mt, op == 2) {
                        for q in p..p + (1 << order) {
                            proptest::prop_assert!(owned.insert(q), "frame {} handed out twice", q);
                            proptest::prop_assert!(q < managed as Pfn);
                        }
                        meta[p as usize].pc.flags = LRU_NONE | pf::ALLOCATED;
                        held.push((p, order));
                    }
                } else if let Some((p, order)) = held.pop() {
                    for q in p..p + (1 << order) {
                        owned.remove(&q);
                    }
                    free(&mut zb, &mut meta, p, order);
                }
                proptest::prop_assert!(zb.check(&meta).is_ok(), "{:?}", zb.check(&meta));
                let free: u64 = managed - owned.len() as u64;
                proptest::prop_assert_eq!(zb.free_pages(), free);
            }
            while let Some((p, order)) = held.pop() {
                free(&mut zb, &mut meta, p, order);
            }
            proptest::prop_assert_eq!(zb.buddyinfo_row(), boot);
        }
    }
}
