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
            mapped: Default::default(),
            free: (0..nr).rev().collect(),
            nr_cached: 0,
            ra_hits: 0,
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
        self.map[slot as usize] = SWAP_FREE;
        self.free.push(slot);
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

    /// swapin_nr_pages(): the readahead window, in pages, for a fault on `offset` with
    /// 2^`page_cluster` pages at most: hits + 2 rounded up to a power of two (at least 4)
    /// after hits; without hits 2 for a fault next to the last one, else 1; never below half
    /// the last window.
    pub fn swapin_nr_pages(&mut self, offset: SwapSlot, page_cluster: u32) -> u32 {
        // 6.1 takes any page-cluster; `1 << page_cluster` is an int shift, whose count
        // x86-64 takes modulo 32.
        let max_pages = 1u32 << (page_cluster % 32);
        if max_pages <= 1 {
            return 1;
        }
        let hits = std::mem::take(&mut self.ra_hits);
        let mut pages = hits.saturating_add(2);
        if pages == 2 {
            let prev = self.ra_prev_offset;
            if offset != prev.wrapping_add(1) && offset != prev.wrapping_sub(1) {
                pages = 1;
            }
        } else {
            let mut roundup = 4u32;
            while roundup < pages {
                roundup <<= 1;
            }
            pages = roundup;
        }
        pages = pages.min(max_pages);
        pages = pages.max(self.ra_last_pages / 2);
        if hits == 0 {
            self.ra_prev_offset = offset;
        }
        self.ra_last_pages = pages;
        pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_grows_with_hits_and_shrinks_by_halves() {
        let mut s = SwapSpace::new(64);
        // No hits, not adjacent to the last fault (0): one page.
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
