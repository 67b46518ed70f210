//! Swap space: mm/swapfile.c (slot allocation) and mm/swap_cgroup.c (the memcg id recorded
//! per swap entry), plus the shadow entry an evicted anon page leaves (the kernel keeps it in
//! the swap cache's xarray).
//!
//! Simplification: there is no swap cache. A swapped-in page frees its slot at once (as the
//! kernel does when swap is considered full), so `swapcached` is always 0.

use crate::memcontrol::MemcgId;

pub type SwapSlot = u32;

pub struct SwapSpace {
    /// memcg id owning each slot (0 = free).
    owner: Vec<MemcgId>,
    /// Workingset shadow entry of the page in each slot.
    shadow: Vec<u64>,
    free: Vec<SwapSlot>,
}

impl SwapSpace {
    pub fn new(nr: u32) -> SwapSpace {
        SwapSpace {
            owner: vec![0; nr as usize],
            shadow: vec![0; nr as usize],
            free: (0..nr).rev().collect(),
        }
    }
    pub fn nr_slots(&self) -> u32 {
        self.owner.len() as u32
    }
    pub fn nr_free(&self) -> u32 {
        self.free.len() as u32
    }
    pub fn alloc(&mut self) -> Option<SwapSlot> {
        self.free.pop()
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
    pub fn free(&mut self, slot: SwapSlot) {
        debug_assert!((slot as usize) < self.owner.len());
        self.owner[slot as usize] = 0;
        self.shadow[slot as usize] = 0;
        self.free.push(slot);
    }
    /// Slots in use per owner (for the invariant checker).
    pub fn used_by(&self) -> impl Iterator<Item = MemcgId> + '_ {
        self.owner.iter().copied().filter(|&m| m != 0)
    }
}
