//! Swap space: mm/swapfile.c (slot allocation and the per-slot use count), mm/swap_cgroup.c
//! (the memcg id recorded per swap entry), the swap cache of mm/swap_state.c (a page holding a
//! slot's data while the slot lives) and the shadow entry an evicted anon page leaves (the
//! kernel keeps it in the swap cache's xarray).
//!
//! A slot is in use while a PTE refers to it (the swap_map count; pages are never shared, so
//! it is 0 or 1) or a page of the swap cache holds it (SWAP_HAS_CACHE). Swap readahead
//! (swapin_readahead() and swap_cluster_readahead()) is in memory.rs; its window heuristic,
//! swapin_nr_pages(), is here. A swap-cache page is in no PTE (read ahead, or written out),
//! or mapped by the PTE that faulted it back while its write was in flight; the slot of a
//! mapped one is kept in a table by frame.

use crate::memcontrol::MemcgId;
use crate::page_cgroup::Pfn;

pub type SwapSlot = u32;

/// No page of the swap cache holds the slot.
const NO_PAGE: Pfn = u32::MAX;
/// `SwapSpace::map` bits: a PTE holds the entry (swap_map's count).
const SWAP_COUNT: u8 = 1;
/// A swap-cache page holds the slot, or will (SWAP_HAS_CACHE).
const SWAP_HAS_CACHE: u8 = 2;
/// On the free list (to catch a slot freed twice).
const SWAP_FREE: u8 = 0x80;

pub struct SwapSpace {
    /// memcg id the slot's swap charge is recorded for (0 = none: a free slot, or on cgroup
    /// v1 a slot whose swap-cache page carries the charge).
    owner: Vec<MemcgId>,
    /// Workingset shadow entry of the page in each slot.
    shadow: Vec<u64>,
    /// The swap-cache page holding each slot, or NO_PAGE.
    cache: Vec<Pfn>,
    /// swap_map: SWAP_COUNT | SWAP_HAS_CACHE per slot, SWAP_FREE on the free list, 0 unused
    /// and not yet released.
    map: Vec<u8>,
    /// Whether the slot's page was written to the swap device (and no later copy went to
    /// zswap): where its data is when no page holds it.
    written: Vec<bool>,
    /// The slot of each swap-cache page that a PTE maps.
    mapped: std::collections::HashMap<Pfn, SwapSlot>,
    free: Vec<SwapSlot>,
    nr_cached: u64,
    /// swapin_nr_pages() state: readahead hits since the last fault that read, the offset of
    /// the last fault without hits, and the last window.
    pub ra_hits: u32,
    pub ra_prev_offset: SwapSlot,
    pub ra_last_pages: u32,
}

impl SwapSpace {
    pub fn new(nr: u32) -> SwapSpace {
        SwapSpace {
            owner: vec![0; nr as usize],
            shadow: vec![0; nr as usize],
            cache: vec![NO_PAGE; nr as usize],
            map: vec![SWAP_FREE; nr as usize],
            written: vec![false; nr as usize],
            mapped: Default::default(),
            free: (0..nr).rev().collect(),
            nr_cached: 0,
            // swapin_readahead_hits starts at 4: the first fault reads a window of 8.
            ra_hits: 4,
            ra_prev_offset: 0,
            ra_last_pages: 0,
        }
    }
    pub fn nr_slots(&self) -> u32 {
        self.owner.len() as u32
    }
    pub fn nr_free(&self) -> u32 {
        self.free.len() as u32
    }
    /// get_swap_pages(): a free slot, reserved for the swap-cache page that will hold it.
    pub fn alloc(&mut self) -> Option<SwapSlot> {
        let s = self.free.pop()?;
        debug_assert_eq!(self.map[s as usize], SWAP_FREE);
        self.map[s as usize] = SWAP_HAS_CACHE;
        Some(s)
    }
    pub fn in_use(&self, slot: SwapSlot) -> bool {
        self.map[slot as usize] & (SWAP_COUNT | SWAP_HAS_CACHE) != 0
    }
    /// Whether a PTE holds the entry.
    pub fn pte_held(&self, slot: SwapSlot) -> bool {
        self.map[slot as usize] & SWAP_COUNT != 0
    }
    /// swap_duplicate() from try_to_unmap(): a PTE now holds the entry.
    pub fn pte_get(&mut self, slot: SwapSlot) {
        debug_assert!(self.map[slot as usize] & SWAP_HAS_CACHE != 0);
        debug_assert!(
            self.map[slot as usize] & SWAP_COUNT == 0,
            "slot {slot} shared"
        );
        self.map[slot as usize] |= SWAP_COUNT;
    }
    /// swap_free() of the PTE's reference. Returns whether the slot is now unused (to be
    /// released with its charge).
    pub fn pte_put(&mut self, slot: SwapSlot) -> bool {
        debug_assert!(self.map[slot as usize] & SWAP_COUNT != 0);
        self.map[slot as usize] &= !SWAP_COUNT;
        self.map[slot as usize] == 0
    }
    pub fn set_owner(&mut self, slot: SwapSlot, memcg: MemcgId) {
        self.owner[slot as usize] = memcg;
    }
    pub fn owner(&self, slot: SwapSlot) -> MemcgId {
        self.owner[slot as usize]
    }
    pub fn set_shadow(&mut self, slot: SwapSlot, shadow: u64) {
        self.shadow[slot as usize] = shadow;
    }
    pub fn shadow(&self, slot: SwapSlot) -> u64 {
        self.shadow[slot as usize]
    }
    /// The swap-cache page holding `slot`, if any.
    pub fn cached(&self, slot: SwapSlot) -> Option<Pfn> {
        let p = self.cache[slot as usize];
        (p != NO_PAGE).then_some(p)
    }
    /// add_to_swap_cache(): `pfn` now holds `slot`.
    pub fn add_cache(&mut self, slot: SwapSlot, pfn: Pfn) {
        debug_assert!(self.in_use(slot) && self.cache[slot as usize] == NO_PAGE);
        self.map[slot as usize] |= SWAP_HAS_CACHE;
        self.cache[slot as usize] = pfn;
        self.nr_cached += 1;
    }
    /// __delete_from_swap_cache(): the slot's page goes. Returns whether the slot is now
    /// unused (to be released with its charge).
    pub fn del_cache(&mut self, slot: SwapSlot) -> bool {
        debug_assert!(self.cache[slot as usize] != NO_PAGE);
        let pfn = self.cache[slot as usize];
        self.mapped.remove(&pfn);
        self.cache[slot as usize] = NO_PAGE;
        self.map[slot as usize] &= !SWAP_HAS_CACHE;
        self.nr_cached -= 1;
        self.map[slot as usize] == 0
    }
    /// migrate_folio() of a swap-cache page: the slot's page is now `new` (and so is the
    /// PTE's, if one maps it).
    pub fn migrate_cache(&mut self, slot: SwapSlot, old: Pfn, new: Pfn) {
        debug_assert_eq!(self.cache[slot as usize], old);
        self.cache[slot as usize] = new;
        if self.mapped.remove(&old).is_some() {
            self.mapped.insert(new, slot);
        }
    }

    /// The swap-cache page `pfn` is mapped by a PTE again (`Some(slot)`) or unmapped (None).
    pub fn set_mapped(&mut self, pfn: Pfn, slot: Option<SwapSlot>) {
        match slot {
            Some(s) => {
                debug_assert_eq!(self.cache[s as usize], pfn);
                self.mapped.insert(pfn, s);
            }
            None => {
                self.mapped.remove(&pfn);
            }
        }
    }
    /// The slot of a mapped swap-cache page.
    pub fn mapped_slot(&self, pfn: Pfn) -> Option<SwapSlot> {
        self.mapped.get(&pfn).copied()
    }
    /// Mapped swap-cache pages (for the invariant checker).
    pub fn nr_mapped(&self) -> usize {
        self.mapped.len()
    }
    /// Pages in the swap cache.
    pub fn nr_cached(&self) -> u64 {
        self.nr_cached
    }
    /// Put an unused slot back on the free list.
    pub fn free(&mut self, slot: SwapSlot) {
        debug_assert!((slot as usize) < self.owner.len());
        debug_assert!(
            self.map[slot as usize] == 0,
            "slot {slot} freed in use or twice"
        );
        debug_assert!(
            self.cache[slot as usize] == NO_PAGE,
            "slot {slot} freed with its page"
        );
        self.owner[slot as usize] = 0;
        self.shadow[slot as usize] = 0;
        self.written[slot as usize] = false;
        self.map[slot as usize] = SWAP_FREE;
        self.free.push(slot);
    }
    /// The slot's data is on the swap device (`true`: a write was submitted for it) or
    /// not (`false`: zswap took a newer copy).
    pub fn set_written(&mut self, slot: SwapSlot, on: bool) {
        self.written[slot as usize] = on;
    }
    pub fn written(&self, slot: SwapSlot) -> bool {
        self.written[slot as usize]
    }
    /// An allocated slot whose page did not get it (the swap charge failed).
    pub fn cancel(&mut self, slot: SwapSlot) {
        debug_assert_eq!(self.map[slot as usize], SWAP_HAS_CACHE);
        self.map[slot as usize] = 0;
        self.free(slot);
    }
    /// Slots charged per owner (for the invariant checker).
    pub fn used_by(&self) -> impl Iterator<Item = MemcgId> + '_ {
        self.owner.iter().copied().filter(|&m| m != 0)
    }
    /// Slots held by a swap-cache page, with the page (for the invariant checker).
    pub fn cached_slots(&self) -> impl Iterator<Item = (SwapSlot, Pfn)> + '_ {
        self.cache
            .iter()
            .enumerate()
            .filter(|(_, &p)| p != NO_PAGE)
            .map(|(s, &p)| (s as SwapSlot, p))
    }

    /// swapin_nr_pages(): the readahead window of swap_cluster_readahead(), in pages, for a
    /// fault on `offset` with 2^`page_cluster` pages at most, from the readahead hits counted
    /// since the last fault that read (swapin_readahead_hits), the offset of the last fault
    /// without hits and the last window: [`ra_window()`].
    pub fn swapin_nr_pages(&mut self, offset: SwapSlot, page_cluster: u32) -> u32 {
        // 6.1 takes any page-cluster; `1 << page_cluster` is an int shift, whose count
        // x86-64 takes modulo 32.
        let max_pages = 1u32 << (page_cluster % 32);
        if max_pages <= 1 {
            return 1;
        }
        let hits = std::mem::take(&mut self.ra_hits);
        let prev = self.ra_prev_offset;
        let adjacent = offset == prev.wrapping_add(1) || offset == prev.wrapping_sub(1);
        let pages = ra_window(adjacent, hits, max_pages, self.ra_last_pages);
        if hits == 0 {
            self.ra_prev_offset = offset;
        }
        self.ra_last_pages = pages;
        pages
    }
}

/// SWAP_RA_ORDER_CEILING (64-bit): VMA readahead reads at most 2^5 pages, whatever
/// page-cluster says.
const SWAP_RA_ORDER_CEILING: u32 = 5;
/// SWAP_RA_HITS_MAX: the hits a VMA's readahead state counts up to (its low PAGE_SHIFT / 2
/// bits).
const SWAP_RA_HITS_MAX: u32 = (1 << 6) - 1;
/// The pages a PTE page maps (PTRS_PER_PTE): VMA readahead stays within the faulting PTE's
/// page table, as the model's VMAs start on a 2 MiB boundary (kmem.rs's page tables do too).
const PTRS_PER_PTE: u32 = 512;

/// struct vm_area_struct's swap_readahead_info for swap_vma_readahead(): the page of the last
/// swap fault (or swap-cache hit), the last window and the readahead hits since. A VMA that
/// never faulted on swap reads as 4 hits, no window and no last page (GET_SWAP_RA_VAL()), so
/// its first window is 4 pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VmaSwapRa {
    /// The page index of the last fault in the VMA; None before the first.
    addr: Option<u32>,
    win: u32,
    hits: u32,
}

impl VmaSwapRa {
    fn load(&self) -> (Option<u32>, u32, u32) {
        match self.addr {
            Some(a) => (Some(a), self.win, self.hits),
            None => (None, 0, 4),
        }
    }

    /// swap_ra_info(): the window of a fault on page `idx` of a VMA of `len` pages, with
    /// vm.page-cluster `page_cluster`. The window, from [`ra_window()`] with the VMA's hits,
    /// its last window and whether `idx` is next to the last fault, is placed after `idx` for
    /// a fault just after the last one, before it for one just before, else around it
    /// ((window - 1) / 2 pages before it); then clipped to the VMA and to the PTE page of
    /// `idx`.
    /// The state keeps `idx` and the window, its hits start again from 0. Returns the pages
    /// to look at, None for a window of one page (page-cluster 0 leaves the state alone).
    pub fn swap_ra_info(
        &mut self,
        idx: u32,
        len: u32,
        page_cluster: u32,
    ) -> Option<std::ops::Range<u32>> {
        let max_win = 1u32 << page_cluster.min(SWAP_RA_ORDER_CEILING);
        if max_win == 1 {
            return None;
        }
        let (prev, prev_win, hits) = self.load();
        let after = prev.is_some_and(|p| idx == p.wrapping_add(1));
        let before = prev.is_some_and(|p| p == idx.wrapping_add(1));
        let win = ra_window(after || before, hits, max_win, prev_win);
        *self = VmaSwapRa {
            addr: Some(idx),
            win,
            hits: 0,
        };
        if win == 1 {
            return None;
        }
        let (f, w) = (i64::from(idx), i64::from(win));
        let (lo, hi) = if after {
            (f, f + w)
        } else if before {
            (f - w + 1, f + 1)
        } else {
            let left = (w - 1) / 2;
            (f - left, f + w - left)
        };
        let pmd = i64::from(idx / PTRS_PER_PTE * PTRS_PER_PTE);
        let start = lo.max(0).max(pmd);
        let end = hi.min(i64::from(len)).min(pmd + i64::from(PTRS_PER_PTE));
        Some(start as u32..end as u32)
    }

    /// A fault on page `idx` found its page in the swap cache (swap_cache_get_folio()): the
    /// state takes `idx` as the last fault and, if the page was read ahead (PG_readahead, now
    /// cleared), one more hit.
    pub fn cache_hit(&mut self, idx: u32, readahead: bool) {
        let (_, win, hits) = self.load();
        *self = VmaSwapRa {
            addr: Some(idx),
            win,
            hits: (hits + u32::from(readahead)).min(SWAP_RA_HITS_MAX),
        };
    }
}

/// __swapin_nr_pages(), the window heuristic both swap readaheads share: after `hits`
/// readahead hits, hits + 2 rounded up to a power of two (at least 4); without hits 2 for a
/// fault `adjacent` to the last one (the next or the previous offset, or page of the VMA),
/// else 1; at most `max_pages`, and never below half the last window `prev_win`.
pub fn ra_window(adjacent: bool, hits: u32, max_pages: u32, prev_win: u32) -> u32 {
    let mut pages = hits.saturating_add(2);
    if pages == 2 {
        if !adjacent {
            pages = 1;
        }
    } else {
        let mut roundup = 4u32;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages.min(max_pages).max(prev_win / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_grows_with_hits_and_shrinks_by_halves() {
        let mut s = SwapSpace::new(64);
        // The first fault: 4 hits as the kernel starts with, 4 + 2 rounds up to 8.
        assert_eq!(s.swapin_nr_pages(20, 3), 8);
        assert_eq!(s.swapin_nr_pages(8, 3), 4);
        assert_eq!(s.swapin_nr_pages(4, 3), 2);
        // No hits, not adjacent to the last fault (4): one page.
        assert_eq!(s.swapin_nr_pages(10, 3), 1);
        // Adjacent to the last fault: two.
        assert_eq!(s.swapin_nr_pages(11, 3), 2);
        // One hit: 3 rounds up to 4; five hits: 7 rounds up to 8, the cap of page-cluster 3.
        s.ra_hits = 1;
        assert_eq!(s.swapin_nr_pages(40, 3), 4);
        s.ra_hits = 5;
        assert_eq!(s.swapin_nr_pages(50, 3), 8);
        // No hits and far away: not below half the last window.
        assert_eq!(s.swapin_nr_pages(3, 3), 4);
        assert_eq!(s.swapin_nr_pages(30, 3), 2);
        assert_eq!(s.swapin_nr_pages(60, 3), 1);
        // page-cluster 0 turns readahead off, and so does 32 (1 << 32 in an int, on x86-64).
        s.ra_hits = 9;
        assert_eq!(s.swapin_nr_pages(61, 0), 1);
        s.ra_hits = 9;
        assert_eq!(s.swapin_nr_pages(62, 32), 1);
    }

    #[test]
    fn the_vma_window_starts_at_eight_and_shrinks_on_random_faults() {
        let mut ra = VmaSwapRa::default();
        // A VMA's first fault: 4 hits as GET_SWAP_RA_VAL() reads an empty state, 4 + 2
        // rounds up to 8, placed around the fault (3 before it).
        assert_eq!(ra.swap_ra_info(1000, 4096, 3), Some(997..1005));
        // Far from the last fault, no hits: not below half the last window.
        assert_eq!(ra.swap_ra_info(3000, 4096, 3), Some(2999..3003));
        assert_eq!(ra.swap_ra_info(100, 4096, 3), Some(100..102));
        assert_eq!(ra.swap_ra_info(2000, 4096, 3), None);
        assert_eq!(ra.swap_ra_info(50, 4096, 3), None);
        // The next page: 2 pages from it on; the page before: 2 pages up to it.
        assert_eq!(ra.swap_ra_info(51, 4096, 3), Some(51..53));
        assert_eq!(ra.swap_ra_info(50, 4096, 3), Some(49..51));
    }

    #[test]
    fn readahead_hits_grow_the_vma_window_up_to_the_ceiling() {
        let mut ra = VmaSwapRa::default();
        assert_eq!(ra.swap_ra_info(600, 4096, 3), Some(597..605));
        // Three readahead hits and a hit on a page not read ahead; the last moves the
        // state's page, so the next fault after it reads forward.
        for i in [601, 602, 603] {
            ra.cache_hit(i, true);
        }
        ra.cache_hit(604, false);
        // 3 hits + 2 rounds up to 8, the most page-cluster 3 allows.
        assert_eq!(ra.swap_ra_info(605, 4096, 3), Some(605..613));
        // page-cluster 7 is capped at 2^5 = 32 pages: 40 hits ask for 64.
        for i in 606..646 {
            ra.cache_hit(i, true);
        }
        assert_eq!(ra.swap_ra_info(646, 4096, 7), Some(646..678));
        // Hits count up to 63.
        for i in 0..100 {
            ra.cache_hit(700 + i, true);
        }
        assert_eq!(ra.load().2, 63);
        // page-cluster 0: no readahead, and the state stays.
        let before = ra;
        assert_eq!(ra.swap_ra_info(10, 4096, 0), None);
        assert_eq!(ra, before);
    }

    #[test]
    fn the_vma_window_stays_in_the_vma_and_its_page_table() {
        let mut ra = VmaSwapRa::default();
        // The first pages of the VMA: nothing before page 0.
        assert_eq!(ra.swap_ra_info(1, 10, 3), Some(0..6));
        // The end of a 10-page VMA.
        let mut ra = VmaSwapRa::default();
        assert_eq!(ra.swap_ra_info(8, 10, 3), Some(5..10));
        // Across a PTE page's boundary (512 pages): cut at it on both sides.
        let mut ra = VmaSwapRa::default();
        assert_eq!(ra.swap_ra_info(513, 4096, 3), Some(512..518));
        let mut ra = VmaSwapRa::default();
        assert_eq!(ra.swap_ra_info(510, 4096, 3), Some(507..512));
    }

    #[test]
    fn a_slot_lives_while_its_page_or_entry_does() {
        let mut s = SwapSpace::new(4);
        let a = s.alloc().unwrap();
        assert!(s.in_use(a));
        s.add_cache(a, 7);
        assert_eq!(s.cached(a), Some(7));
        assert_eq!(s.nr_cached(), 1);
        // Unmapped to the entry: the PTE's reference keeps the slot when the page goes.
        s.pte_get(a);
        assert!(!s.del_cache(a));
        assert_eq!(s.cached(a), None);
        assert!(s.in_use(a) && s.pte_held(a));
        assert!(s.pte_put(a));
        s.free(a);
        assert!(!s.in_use(a));
        assert_eq!(s.nr_free(), 4);
        // A page faulted back under writeback: mapped, its slot held by the cache alone.
        let b = s.alloc().unwrap();
        s.add_cache(b, 9);
        s.set_mapped(9, Some(b));
        assert_eq!(s.mapped_slot(9), Some(b));
        assert!(s.del_cache(b));
        assert_eq!(s.mapped_slot(9), None);
        s.free(b);
        let c = s.alloc().unwrap();
        s.cancel(c);
        assert_eq!(s.nr_free(), 4);
    }
}
