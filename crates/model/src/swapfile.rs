//! Swap space: mm/swapfile.c (slot allocation) and mm/swap_cgroup.c (the memcg id recorded
//! per swap entry), the swap cache of mm/swap_state.c (a page holding a slot's data while
//! the slot lives) and the shadow entry an evicted anon page leaves (the kernel keeps it in
//! the swap cache's xarray).
//!
//! A slot is in use while a PTE refers to it or a page of the swap cache holds it (the
//! kernel's swap_map count and SWAP_HAS_CACHE). Swap readahead (swapin_readahead() and
//! swap_cluster_readahead()) is in memory.rs; its window heuristic, swapin_nr_pages(), is
//! here. Simplification: the model's anon accesses are writes, and a write fault frees the
//! swap cache of the page it maps (6.1's should_try_to_free_swap()), so the swap cache holds
//! readahead pages not yet faulted in, which are never mapped.

use crate::memcontrol::MemcgId;
use crate::page_cgroup::Pfn;

pub type SwapSlot = u32;

/// No page of the swap cache holds the slot.
const NO_PAGE: Pfn = u32::MAX;

pub struct SwapSpace {
    /// memcg id the slot's swap charge is recorded for (0 = none: a free slot, or on cgroup
    /// v1 a slot whose swap-cache page carries the charge).
    owner: Vec<MemcgId>,
    /// Workingset shadow entry of the page in each slot.
    shadow: Vec<u64>,
    /// The swap-cache page holding each slot, or NO_PAGE.
    cache: Vec<Pfn>,
    /// Whether each slot is in use (not on the free list).
    used: Vec<bool>,
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
            used: vec![false; nr as usize],
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
    pub fn alloc(&mut self) -> Option<SwapSlot> {
        let s = self.free.pop()?;
        self.used[s as usize] = true;
        Some(s)
    }
    pub fn in_use(&self, slot: SwapSlot) -> bool {
        self.used[slot as usize]
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
        debug_assert!(self.used[slot as usize] && self.cache[slot as usize] == NO_PAGE);
        self.cache[slot as usize] = pfn;
        self.nr_cached += 1;
    }
    /// __delete_from_swap_cache(): the slot's page goes.
    pub fn del_cache(&mut self, slot: SwapSlot) {
        debug_assert!(self.cache[slot as usize] != NO_PAGE);
        self.cache[slot as usize] = NO_PAGE;
        self.nr_cached -= 1;
    }
    /// Pages in the swap cache.
    pub fn nr_cached(&self) -> u64 {
        self.nr_cached
    }
    pub fn free(&mut self, slot: SwapSlot) {
        debug_assert!((slot as usize) < self.owner.len());
        debug_assert!(self.used[slot as usize], "slot {slot} freed twice");
        debug_assert!(
            self.cache[slot as usize] == NO_PAGE,
            "slot {slot} freed with its page"
        );
        self.owner[slot as usize] = 0;
        self.shadow[slot as usize] = 0;
        self.used[slot as usize] = false;
        self.free.push(slot);
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
        s.del_cache(a);
        assert_eq!(s.cached(a), None);
        s.free(a);
        assert!(!s.in_use(a));
        assert_eq!(s.nr_free(), 4);
    }
}
