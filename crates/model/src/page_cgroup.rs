//! Per-frame metadata in flat arrays preallocated at boot: the page_cgroup design that seed 004
//! converged on (mm/page_cgroup.c, 2.6.28–3.18), split the way the kernel split it:
//!
//! * [`PageCgroup`] — the memcg part: owning memcg id, LRU links (as frame numbers) and the
//!   page flags reclaim needs. 12 bytes per frame.
//! * [`PageMap`] — the `struct page` part reclaim needs for the reverse map: which mapping
//!   (an anon VMA or a file) holds the frame and at which index. 8 bytes per frame.
//!
//! The two parts of a frame sit side by side in one array of [`FrameMeta`] (20 bytes): the
//! kernel's two arrays map to one here because reclaim and the fault paths read both parts
//! of the same frame, and one host cache line then serves both.
//!
//! Frames are dense `u32` numbers; there is no per-page heap allocation and no pointer.
//! A free frame has memcg 0, is on no LRU, and has mapping [`NO_MAPPING`].

/// A page frame number.
pub type Pfn = u32;

/// A host prefetch hint for the cache line holding `*p`; no effect on any value.
#[inline(always)]
pub fn prefetch_read<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: _mm_prefetch only hints the cache; it reads nothing and cannot fault, and the
    // pointer comes from a live reference.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            (p as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The "no frame" link value.
pub const NIL: Pfn = u32::MAX;

/// Mapping value of a frame that is not in any mapping.
pub const NO_MAPPING: u32 = u32::MAX;
/// Mappings with this bit set are files (page cache); others are anon VMAs.
pub const MAPPING_FILE_BIT: u32 = 1 << 31;

/// Page flags kept in [`PageCgroup::flags`]. The low 3 bits hold the LRU list the frame is
/// on (0..=4, or [`LRU_NONE`]).
pub mod pf {
    pub const LRU_MASK: u16 = 0b111;
    /// PG_active.
    pub const ACTIVE: u16 = 1 << 3;
    /// PG_referenced: the software second-chance bit set by folio_mark_accessed().
    pub const REFERENCED: u16 = 1 << 4;
    /// The hardware accessed bit of the (single) PTE mapping the page.
    pub const YOUNG: u16 = 1 << 5;
    /// PG_dirty.
    pub const DIRTY: u16 = 1 << 6;
    /// PG_writeback.
    pub const WRITEBACK: u16 = 1 << 7;
    /// PG_swapbacked: anon (lives on the anon LRUs).
    pub const SWAPBACKED: u16 = 1 << 8;
    /// PG_mlocked.
    pub const MLOCKED: u16 = 1 << 9;
    /// PG_workingset: the page was active before it was deactivated.
    pub const WORKINGSET: u16 = 1 << 10;
    /// PG_reclaim: rotate to the inactive tail when writeback ends.
    pub const RECLAIM: u16 = 1 << 11;
    /// The page is mapped by a page table (anon pages always are; page-cache pages read
    /// through read() are not).
    pub const MAPPED: u16 = 1 << 12;
    /// The frame is allocated (not on the free list).
    pub const ALLOCATED: u16 = 1 << 13;
    /// The page's data exists on disk: a file page's in its file (re-reading it after
    /// eviction is a real read); an anon page's in the swap slot it holds (PG_swapcache).
    pub const ONDISK: u16 = 1 << 14;
    /// A frame the kernel holds for its own objects (kmem.rs): on no LRU, owned by no memcg.
    pub const KERNEL: u16 = 1 << 15;
}

/// LRU value meaning "on no list".
pub const LRU_NONE: u16 = 7;

/// The memcg part of a frame's metadata (the kernel's page_cgroup).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct PageCgroup {
    /// Owning memcg id (0 = not charged / free).
    pub memcg: u16,
    /// [`pf`] flags and the LRU list number.
    pub flags: u16,
    /// Toward the LRU head (newer).
    pub prev: Pfn,
    /// Toward the LRU tail (older); for a free frame on its zone's stack, the frame below it
    /// (mmzone.rs).
    pub next: Pfn,
}

/// The reverse-map part of a frame's metadata (page->mapping, page->index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct PageMap {
    pub mapping: u32,
    pub index: u32,
}

/// One frame's metadata: the memcg part and the reverse-map part side by side, so that the
/// reclaim and fault paths, which read both, load one cache line of the host where two
/// separate arrays would cost two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct FrameMeta {
    pub pc: PageCgroup,
    pub map: PageMap,
}

/// A frame's metadata from boot until it is first handed out: free, owned by no memcg, on no
/// list, in no mapping.
pub const FRAME_AT_BOOT: FrameMeta = FrameMeta {
    pc: PageCgroup {
        memcg: 0,
        flags: LRU_NONE,
        prev: NIL,
        next: NIL,
    },
    map: PageMap {
        mapping: NO_MAPPING,
        index: 0,
    },
};

/// All frames of the machine.
///
/// `meta` holds the frames below the highest one the allocator has written; every frame above
/// it is still [`FRAME_AT_BOOT`]. The array's room for every frame is reserved at boot but
/// written (and so made resident by the host) only as the buddy allocator first splits a
/// max-order block never used since boot (buddy.rs), which it does in ascending order within
/// each zone: a big machine costs the host what a run uses.
pub struct Frames {
    pub meta: Vec<FrameMeta>,
    /// Free frames, per zone (the page allocator's free lists) and per CPU.
    pub free: crate::buddy::FreeArea,
    nr: u32,
    /// Where each frame's memcg lives (seed 004's designs; page_cgroup_store.rs). Read and
    /// written only through [`Frames::memcg`] and [`Frames::set_memcg`].
    store: crate::page_cgroup_store::PcStore,
}

impl Frames {
    pub fn new(
        zones: &crate::mmzone::Zones,
        cpus: u32,
        design: crate::page_cgroup_store::PcDesign,
    ) -> Frames {
        let nr: u32 = zones.zone.iter().map(|z| z.managed as u32).sum();
        let mut meta = Vec::with_capacity(nr as usize);
        let free = crate::buddy::FreeArea::new(zones, cpus, &mut meta);
        Frames {
            meta,
            free,
            nr,
            store: crate::page_cgroup_store::PcStore::new(design, nr),
        }
    }

    /// The memcg store's design and the host bytes it spends on the lookup.
    pub fn memcg_store(&self) -> (crate::page_cgroup_store::PcDesign, usize) {
        (self.store.design(), self.store.bytes(self.nr))
    }

    pub fn nr_frames(&self) -> u32 {
        self.nr
    }

    /// rmqueue() of the free area: a block of `order` and type `mt` from zone `z`.
    pub fn rmqueue(
        &mut self,
        z: usize,
        order: u32,
        mt: crate::buddy::MigrateType,
        cpu: usize,
        zones: &crate::mmzone::Zones,
        nofragment: bool,
    ) -> Option<Pfn> {
        self.free
            .rmqueue(z, order, mt, cpu, zones, nofragment, &mut self.meta)
    }

    /// pop() of the free area (any zone, no watermark), for a frame the caller will use.
    pub fn pop(&mut self, mt: crate::buddy::MigrateType) -> Option<Pfn> {
        self.free.pop(mt, &mut self.meta)
    }

    /// Ask the host to load a frame's metadata ahead of its use (a hint only).
    #[inline]
    pub fn prefetch(&self, pfn: Pfn) {
        if let Some(m) = self.meta.get(pfn as usize) {
            prefetch_read(m);
        }
    }

    /// free_unref_page() of the free area for a block of `order` the caller has reset.
    pub fn free_unref_page(
        &mut self,
        pfn: Pfn,
        order: u32,
        cpu: usize,
        zones: &crate::mmzone::Zones,
        reclaim_active: bool,
    ) {
        self.free
            .free_unref_page(pfn, order, cpu, zones, reclaim_active, &mut self.meta);
    }

    /// drain_all_pages() of the free area.
    pub fn drain_all_pages(&mut self) {
        self.free.drain_all_pages(&mut self.meta);
    }

    /// The free frames of zone `z` (the checker's view).
    pub fn zone_free_iter(&self, z: usize) -> impl Iterator<Item = Pfn> + '_ {
        self.free.zone_iter(z, &self.meta)
    }

    /// A frame's metadata, whether or not it was ever handed out (for the checker and the
    /// /proc readers, which look at every frame).
    #[inline]
    pub fn get(&self, pfn: Pfn) -> FrameMeta {
        let mut m = self
            .meta
            .get(pfn as usize)
            .copied()
            .unwrap_or(FRAME_AT_BOOT);
        m.pc.memcg = self.memcg(pfn);
        m
    }

    /// Bytes of per-frame metadata (page_cgroup + rmap part), for the memory report.
    pub const BYTES_PER_FRAME: usize = std::mem::size_of::<FrameMeta>();

    #[inline]
    pub fn flags(&self, pfn: Pfn) -> u16 {
        self.meta[pfn as usize].pc.flags
    }
    #[inline]
    pub fn test(&self, pfn: Pfn, f: u16) -> bool {
        self.meta[pfn as usize].pc.flags & f != 0
    }
    #[inline]
    pub fn set(&mut self, pfn: Pfn, f: u16) {
        self.meta[pfn as usize].pc.flags |= f;
    }
    #[inline]
    pub fn clear(&mut self, pfn: Pfn, f: u16) {
        self.meta[pfn as usize].pc.flags &= !f;
    }
    /// Test and clear a flag.
    #[inline]
    pub fn test_clear(&mut self, pfn: Pfn, f: u16) -> bool {
        let p = &mut self.meta[pfn as usize].pc.flags;
        let was = *p & f != 0;
        *p &= !f;
        was
    }
    #[inline]
    pub fn lru(&self, pfn: Pfn) -> u16 {
        self.meta[pfn as usize].pc.flags & pf::LRU_MASK
    }
    /// The memcg that owns the frame (0: none): lookup_page_cgroup() in the machine's
    /// design.
    #[inline]
    pub fn memcg(&self, pfn: Pfn) -> u16 {
        use crate::page_cgroup_store::PcStore;
        match &self.store {
            PcStore::Flat => self.meta.get(pfn as usize).map_or(0, |m| m.pc.memcg),
            PcStore::Radix(t) => t.get(pfn),
            PcStore::Section(s) => s.get(pfn),
        }
    }

    /// Record the frame's owner (0: none) in the machine's design.
    #[inline]
    pub fn set_memcg(&mut self, pfn: Pfn, memcg: u16) {
        use crate::page_cgroup_store::PcStore;
        match &mut self.store {
            PcStore::Flat => self.meta[pfn as usize].pc.memcg = memcg,
            PcStore::Radix(t) if memcg == 0 => t.delete(pfn),
            PcStore::Radix(t) => t.insert(pfn, memcg),
            PcStore::Section(s) => s.set(pfn, memcg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn metadata_is_small() {
        // The page_cgroup part must stay at 12 bytes, the whole record at 20.
        assert_eq!(std::mem::size_of::<PageCgroup>(), 12);
        assert_eq!(std::mem::size_of::<PageMap>(), 8);
        assert_eq!(Frames::BYTES_PER_FRAME, 20);
    }
}
