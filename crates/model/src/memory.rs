//! Anonymous memory: mm/memory.c (do_anonymous_page, do_swap_page), mm/swap_state.c (swap
//! readahead into the swap cache: swapin_readahead() with swap_vma_readahead() on
//! non-rotational swap, swap_cluster_readahead() on rotational; vm_swap_full() and
//! mem_cgroup_swap_full() for the swap cache reclaim gives up), mm/rmap.c (unmapping a page
//! to a swap entry), mm/mlock.c (VM_LOCKED mappings put their pages on the unevictable
//! list), mm/mmu_gather.c (munmap and exit free their pages in the gather's batches, each
//! uncharged together by release_pages()) and mm/madvise.c (MADV_DONTNEED, whose zap of
//! part of a huge range leaves its folio to the deferred split, huge_memory.rs).
//!
//! An anon VMA is an array of page-table entries, one `u32` per virtual page: 0 = not
//! present, `pfn + 1` = present, `SWAP_PTE | slot` = swapped out. Each VMA belongs to one
//! task; pages are never shared (no fork), so a page has exactly one PTE.

use crate::machine::Machine;
use crate::memcontrol::{ChargeError, MemcgId};
use crate::page_cgroup::{pf, PageMap, Pfn};
use crate::program::{Fault, Pid};
use crate::stat::Stat;
use crate::swapfile::SwapSlot;

pub const SWAP_PTE: u32 = 1 << 31;

/// `PageMap::mapping` of a page in the swap cache and in no PTE (read ahead, or written out
/// by reclaim); its `index` is the slot it holds. A swap-cache page that a PTE maps keeps
/// its VMA rmap, and its slot is in `SwapSpace::mapped_slot()`.
pub const SWAPCACHE_MAPPING: u32 = u32::MAX - 1;

/// PG_readahead of a swap-cache page read ahead and not yet faulted on. The kernel's
/// PG_readahead is PG_reclaim's bit, and so is the model's: a swap-cache page carries
/// PG_reclaim only under writeback, after pageout(), and a fault that finds such a page
/// takes the mark for a readahead hit as 6.1 does.
pub(crate) const PG_READAHEAD: u16 = pf::RECLAIM;

/// MMU_GATHER_BUNDLE: the pages of the mmu_gather's on-stack batch.
const MMU_GATHER_BUNDLE: usize = 8;
/// MAX_GATHER_BATCH: the pages of each batch the gather allocates after it, (PAGE_SIZE less
/// the batch header) / sizeof(void *) on 64-bit.
const MAX_GATHER_BATCH: usize = 510;
/// The pages a gather holds before it must be flushed: the bundle and MAX_GATHER_BATCH_COUNT
/// (10000 / MAX_GATHER_BATCH = 19) batches.
const MMU_GATHER_PAGES: usize = MMU_GATHER_BUNDLE + 19 * MAX_GATHER_BATCH;

pub struct VmaData {
    pub owner: Pid,
    pub ptes: Vec<u32>,
    /// VM_LOCKED.
    pub locked: bool,
    pub live: bool,
    /// The obj_cgroup its vm_area_struct and page tables are charged to (kmem.rs).
    pub objcg: crate::kmem::ObjcgId,
    /// One bit per 2 MiB region that has a PTE page.
    pub pt: Vec<u64>,
    /// PTE pages allocated.
    pub pt_pages: u64,
    /// swap_readahead_info: swap_vma_readahead()'s state.
    pub swap_ra: crate::swapfile::VmaSwapRa,
    /// madvise(MADV_HUGEPAGE / MADV_NOHUGEPAGE) on the mapping (huge_memory.rs).
    pub huge: crate::huge_memory::HugeAdvice,
    /// What the task writes into its pages (zswap.rs).
    pub data: crate::zswap::PageData,
}

impl VmaData {
    /// Whether the 2 MiB region holding page `idx` has a page table (pmd_none() is false
    /// for it: a small fault or a huge folio's deposited table made one).
    pub fn pt_region_populated(&self, idx: u32) -> bool {
        let region = u64::from(idx) / crate::kmem::PTE_SPAN_PAGES;
        self.pt[(region / 64) as usize] & (1u64 << (region % 64)) != 0
    }
}

#[derive(Default)]
pub struct Vmas {
    pub v: Vec<VmaData>,
    free_ids: Vec<u32>,
}

impl Vmas {
    fn alloc(&mut self, d: VmaData) -> u32 {
        if let Some(id) = self.free_ids.pop() {
            self.v[id as usize] = d;
            id
        } else {
            self.v.push(d);
            (self.v.len() - 1) as u32
        }
    }
}

impl From<ChargeError> for Fault {
    fn from(e: ChargeError) -> Fault {
        match e {
            ChargeError::Blocked => Fault::Blocked,
            ChargeError::NoMem | ChargeError::Killed => Fault::Killed,
        }
    }
}

impl Machine {
    /// mmap(MAP_ANONYMOUS) of `npages`; `locked` = MAP_LOCKED / mlock.
    pub fn mmap_anon(&mut self, pid: Pid, npages: u32, locked: bool) -> u32 {
        let id = self.vmas.alloc(VmaData {
            owner: pid,
            ptes: vec![0; npages as usize],
            locked,
            live: true,
            objcg: crate::kmem::ROOT_OBJCG,
            pt: vec![0; (npages as u64).div_ceil(crate::kmem::PTE_SPAN_PAGES * 64) as usize],
            pt_pages: 0,
            swap_ra: Default::default(),
            huge: Default::default(),
            data: Default::default(),
        });
        let t = self.task_mut(pid);
        t.vmas.push(id);
        t.total_vm += npages as u64;
        id
    }

    /// A user access to page `idx` of `vma`. The fast path (page present) only sets the PTE
    /// young bit.
    #[inline]
    pub fn touch_anon(&mut self, pid: Pid, vma: u32, idx: u32) -> Result<(), Fault> {
        let Some(v) = self.vmas.v.get(vma as usize) else {
            return Err(Fault::Segv);
        };
        if !v.live || v.owner != pid {
            return Err(Fault::Segv);
        }
        let Some(&pte) = v.ptes.get(idx as usize) else {
            return Err(Fault::Segv);
        };
        if pte != 0 && pte & SWAP_PTE == 0 {
            let mut pfn = pte - 1;
            let m = &self.frames.meta[pfn as usize];
            if m.pc.flags & pf::LRU_MASK == crate::huge_memory::LRU_TAIL {
                // A page of a PMD-mapped folio: the PMD's accessed bit is the head's.
                pfn -= m.map.index;
            }
            self.frames.meta[pfn as usize].pc.flags |= pf::YOUNG;
            self.spend_cpu(self.cfg.costs.hit_ns);
            self.task_mut(pid).stats.user_ns += self.cfg.costs.hit_ns;
            return Ok(());
        }
        self.in_lru_fault(|m| m.handle_mm_fault(pid, vma, idx))?;
        // Return to user space: memory.high throttling queued by the charge.
        if self.task(pid).nr_pages_over_high > 0 {
            self.mem_cgroup_handle_over_high(pid);
        }
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Self::fault_done(self.task(pid))
    }

    /// A fault that completed while a readahead allocation in it had to wait (yield or
    /// sleep): the page is mapped, and the task waits before its program goes on, which
    /// then finds the page present.
    fn fault_done(t: &crate::task::Task) -> Result<(), Fault> {
        match t.block {
            Some(_) => Err(Fault::Blocked),
            None => Ok(()),
        }
    }

    /// A fault taken inside the kernel (mlock/MAP_POPULATE): no return to user space between
    /// pages, so only the synchronous memory.high path of try_charge throttles.
    pub fn populate_anon(&mut self, pid: Pid, vma: u32, idx: u32) -> Result<(), Fault> {
        let Some(v) = self.vmas.v.get(vma as usize) else {
            return Err(Fault::Segv);
        };
        let Some(&pte) = v.ptes.get(idx as usize) else {
            return Err(Fault::Segv);
        };
        if pte != 0 && pte & SWAP_PTE == 0 {
            return Ok(());
        }
        self.in_lru_fault(|m| m.handle_mm_fault(pid, vma, idx))?;
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Self::fault_done(self.task(pid))
    }

    /// Run a page fault's handling with current->in_lru_fault set (lru_gen_enter_fault()).
    pub(crate) fn in_lru_fault<R>(&mut self, f: impl FnOnce(&mut Machine) -> R) -> R {
        let was = std::mem::replace(&mut self.lru_fault, true);
        let r = f(self);
        self.lru_fault = was;
        r
    }

    /// Run reclaim or compaction for an allocation with PF_MEMALLOC set
    /// (memalloc_noreclaim_save() ... memalloc_noreclaim_restore()).
    pub(crate) fn in_memalloc<R>(&mut self, f: impl FnOnce(&mut Machine) -> R) -> R {
        let was = std::mem::replace(&mut self.memalloc, true);
        let r = f(self);
        self.memalloc = was;
        r
    }

    fn handle_mm_fault(&mut self, pid: Pid, vma: u32, idx: u32) -> Result<(), Fault> {
        let pte = self.vmas.v[vma as usize].ptes[idx as usize];
        if pte & SWAP_PTE != 0 {
            self.do_swap_page(pid, vma, idx, pte & !SWAP_PTE)
        } else {
            self.do_anonymous_page(pid, vma, idx)
        }
    }

    fn map_new_anon(&mut self, pid: Pid, vma: u32, idx: u32, pfn: Pfn) {
        self.map_anon(pid, vma, idx, pfn);
        if self.reclaim_3_11() {
            // 3.11's page_add_new_anon_rmap(): a new anon page starts on the active list
            // (6.1 starts it inactive, since 5.9's "mm/vmscan: protect the workingset on
            // anonymous LRU").
            self.frames.set(pfn, pf::ACTIVE);
        }
        self.lru_add(pfn);
    }

    /// page_add_anon_rmap() of a written anon folio of `nr` pages whose first page is page
    /// `idx` of `vma` (not on an LRU list yet): its reverse map and flags, NR_ANON_MAPPED
    /// and, in a locked mapping, PG_mlocked and NR_MLOCK. Returns its memcg.
    pub(crate) fn anon_rmap(&mut self, vma: u32, idx: u32, pfn: Pfn, nr: u64) -> MemcgId {
        let locked = self.vmas.v[vma as usize].locked;
        let memcg = self.frames.memcg(pfn);
        self.frames.meta[pfn as usize].map = PageMap {
            mapping: vma,
            index: idx,
        };
        self.frames
            .set(pfn, pf::SWAPBACKED | pf::MAPPED | pf::YOUNG | pf::DIRTY);
        if locked {
            self.frames.set(pfn, pf::MLOCKED);
            self.mod_stat(memcg, Stat::Mlock, nr as i64);
        }
        self.mod_stat(memcg, Stat::Anon, nr as i64);
        memcg
    }

    /// page_add_anon_rmap() and the PTE of a written anon page (not on an LRU list yet).
    fn map_anon(&mut self, pid: Pid, vma: u32, idx: u32, pfn: Pfn) {
        self.anon_rmap(vma, idx, pfn, 1);
        self.vmas.v[vma as usize].ptes[idx as usize] = pfn + 1;
        self.task_mut(pid).rss_anon += 1;
    }

    /// Take `pfn` out of the swap cache, where it held `slot`; the slot is released with its
    /// charge if no PTE holds it (put_swap_folio()).
    pub(crate) fn swapcache_del(&mut self, pfn: Pfn, slot: SwapSlot) {
        debug_assert_eq!(self.swap.cached(slot), Some(pfn));
        debug_assert!(!self.frames.test(pfn, pf::WRITEBACK));
        let unused = self.swap.del_cache(slot);
        self.frames.clear(pfn, pf::ONDISK);
        let memcg = self.frames.memcg(pfn);
        self.mod_stat(memcg, Stat::SwapCached, -1);
        if unused {
            self.swap_slot_release(slot);
        }
    }

    /// The slot a swap-cache page holds (PG_swapcache: `pf::ONDISK` on an anon page).
    pub fn swapcache_slot(&self, pfn: Pfn) -> Option<SwapSlot> {
        if !self.frames.test(pfn, pf::ONDISK) {
            return None;
        }
        let m = self.frames.meta[pfn as usize].map;
        if m.mapping == SWAPCACHE_MAPPING {
            Some(m.index)
        } else {
            self.swap.mapped_slot(pfn)
        }
    }

    /// A PTE lets go of a swap entry (swap_free()); the slot is released with its charge if
    /// no page holds it either.
    pub(crate) fn swap_pte_put(&mut self, slot: SwapSlot) {
        if self.swap.pte_put(slot) {
            self.swap_slot_release(slot);
        }
    }

    /// Free a swap slot no PTE and no page holds any more, with its swap charge
    /// (swap_free() of the last reference; mem_cgroup_uncharge_swap()).
    fn swap_slot_release(&mut self, slot: SwapSlot) {
        let owner = self.swap.owner(slot);
        if owner != 0 {
            self.mem_cgroup_uncharge_swap(owner);
        }
        // swap_range_free(): frontswap_invalidate_page().
        self.zswap_invalidate(slot);
        self.swap.free(slot);
    }

    /// A fault on a swap entry whose page is in the swap cache (swap_cache_get_folio() found
    /// it: a minor fault). A page read ahead is a readahead hit: its PG_readahead mark goes,
    /// and the hit counts for the VMA's next window (VMA readahead) or the next
    /// swapin_nr_pages() (cluster readahead); with VMA readahead any hit moves the VMA's last
    /// fault to this page. The write frees the swap cache
    /// (should_try_to_free_swap() with FAULT_FLAG_WRITE): slot and swap charge go, the page
    /// is mapped and dirty. A page whose write to the slot is still in flight cannot leave
    /// the swap cache (folio_free_swap() refuses it): it is mapped and keeps the slot.
    fn swapcache_fault(&mut self, pid: Pid, vma: u32, idx: u32, slot: SwapSlot, pfn: Pfn) {
        self.spend_cpu(self.cfg.costs.minor_fault_ns);
        let task_memcg = self.task(pid).memcg;
        self.mod_stat(task_memcg, Stat::Pgfault, 1);
        self.task_mut(pid).stats.minflt += 1;
        let readahead = self.frames.test_clear(pfn, PG_READAHEAD);
        if self.swap_use_vma_readahead() {
            self.vmas.v[vma as usize].swap_ra.cache_hit(idx, readahead);
        } else if readahead {
            self.swap.ra_hits += 1;
        }
        let unused = self.swap.pte_put(slot);
        debug_assert!(!unused, "the swap cache holds the slot");
        self.task_mut(pid).swapents -= 1;
        let locked = self.vmas.v[vma as usize].locked;
        if locked {
            // The page moves to the unevictable list.
            self.lru_del(pfn);
        }
        if self.frames.test(pfn, pf::WRITEBACK) {
            self.map_anon(pid, vma, idx, pfn);
            self.swap.set_mapped(pfn, Some(slot));
        } else {
            self.swapcache_del(pfn, slot);
            self.map_anon(pid, vma, idx, pfn);
        }
        if locked {
            self.lru_add(pfn);
        }
    }

    /// mem_cgroup_swapin_charge_folio()'s memcg: the one recorded with the entry if it is
    /// online, else `fallback` (the faulting task's).
    pub(crate) fn swapin_memcg(&self, slot: SwapSlot, fallback: MemcgId) -> MemcgId {
        let owner = self.swap.owner(slot);
        if owner != 0 && self.memcg(owner).online {
            owner
        } else {
            fallback
        }
    }

    /// __read_swap_cache_async() for a readahead page: allocate a page for `slot`, charge it
    /// to the memcg recorded with the entry (or `fallback`, the faulting task's, when that is
    /// gone), put it in the swap cache and on the inactive anon list. The allocation is the
    /// faulting task's (GFP_HIGHUSER_MOVABLE, as 6.1's swap_cluster_readahead() passes it
    /// on): its direct reclaim gives the CPU up between priorities and sleeps where the
    /// kernel's would. Where the kernel's task would wait and then go on with the readahead,
    /// the model's readahead stops at that page, the fault completes with the pages it has,
    /// and the task then waits (touch_anon() returns `Fault::Blocked`); a reclaim descent it
    /// left goes on at its next allocation. Returns whether a page was read ahead; false
    /// stops the readahead.
    fn swapin_readahead_page(&mut self, slot: SwapSlot, fallback: MemcgId) -> bool {
        let memcg = self.swapin_memcg(slot, fallback);
        let Ok(pfn) = self.alloc_charged_page(memcg) else {
            return false;
        };
        self.add_swap_cache_page(pfn, memcg, slot);
        // SetPageReadahead(): a fault that finds it counts a readahead hit.
        self.frames.set(pfn, PG_READAHEAD);
        // swap_readpage(): frontswap_load() first; a page zswap holds needs no I/O.
        if self.count_swapin(slot, memcg) {
            self.spend_cpu(self.zswap_decompress_cost(slot));
        }
        true
    }

    /// The rest of __read_swap_cache_async() for the new page `pfn` of `slot`, charged to
    /// `memcg` (swapin_memcg()): committed, in the swap cache, a refault if the slot's
    /// shadow says so, on the inactive anon list; the caller fills it.
    pub(crate) fn add_swap_cache_page(&mut self, pfn: Pfn, memcg: MemcgId, slot: SwapSlot) {
        let owner = self.swap.owner(slot);
        self.commit_charge(pfn, memcg);
        self.frames.meta[pfn as usize].map = PageMap {
            mapping: SWAPCACHE_MAPPING,
            index: slot,
        };
        self.frames.set(pfn, pf::SWAPBACKED | pf::ONDISK);
        let shadow = self.swap.shadow(slot);
        if shadow != 0 {
            self.workingset_refault(pfn, shadow);
        }
        self.swap.add_cache(slot, pfn);
        self.mod_stat(memcg, Stat::SwapCached, 1);
        // mem_cgroup_swapin_uncharge_swap(): on v1 the page's memsw charge replaces the
        // entry's; on v2 the slot keeps its swap charge while the page lives.
        if self.is_v1() && owner != 0 {
            self.mem_cgroup_uncharge_swap(owner);
            self.swap.set_owner(slot, 0);
        }
        self.lru_add(pfn);
    }

    /// Allocate a frame and charge it to `memcg` (not yet committed to the frame). On failure
    /// nothing is kept.
    pub fn alloc_charged_page(&mut self, memcg: crate::memcontrol::MemcgId) -> Result<Pfn, Fault> {
        let pfn = self.alloc_page(crate::buddy::MigrateType::Movable)?;
        if let Err(e) = self.try_charge(memcg, 1) {
            self.free_frame(pfn);
            return Err(e.into());
        }
        Ok(pfn)
    }

    /// alloc_charged_page() for an anon fault, which also fails if the task was killed and
    /// its memory reaped while the charge reclaimed.
    fn anon_fault_page(
        &mut self,
        memcg: crate::memcontrol::MemcgId,
        vma: u32,
    ) -> Result<Pfn, Fault> {
        let pfn = self.alloc_charged_page(memcg)?;
        if !self.vmas.v[vma as usize].live {
            self.memcg_uncharge_raw(memcg);
            self.free_frame(pfn);
            return Err(Fault::Killed);
        }
        Ok(pfn)
    }

    /// __pmd_alloc() and __pte_alloc() before a fault maps a page: the task's PMD pages (one
    /// per GiB of its mappings) and the PTE page of the page's 2 MiB region, charged to the
    /// obj_cgroup of the mapping (the group the task was in when it mapped it). On failure
    /// the pages allocated so far stay, as the kernel keeps a populated page table.
    pub(crate) fn pte_alloc(&mut self, pid: Pid, vma: u32, idx: u32) -> Result<(), Fault> {
        use crate::kmem::{KmemKind, PTE_SPAN_PAGES};
        self.pmd_alloc(pid, vma)?;
        let objcg = self.vmas.v[vma as usize].objcg;
        let region = idx as u64 / PTE_SPAN_PAGES;
        let (w, bit) = ((region / 64) as usize, 1u64 << (region % 64));
        if self.vmas.v[vma as usize].pt[w] & bit == 0 {
            self.kmem_charge(objcg, KmemKind::Pagetable, crate::PAGE_SIZE, false)?;
            let v = &mut self.vmas.v[vma as usize];
            v.pt[w] |= bit;
            v.pt_pages += 1;
        }
        Ok(())
    }

    /// __pmd_alloc(): the task's PMD pages, one per GiB of its mappings, charged to the
    /// obj_cgroup of the mapping that first needed one.
    fn pmd_alloc(&mut self, pid: Pid, vma: u32) -> Result<(), Fault> {
        use crate::kmem::{KmemKind, PMD_SPAN_PAGES};
        let objcg = self.vmas.v[vma as usize].objcg;
        let t = self.task(pid);
        let want = t.total_vm.div_ceil(PMD_SPAN_PAGES);
        let mut have = t.pmd_pages;
        while have < want {
            if have == 0 {
                self.task_mut(pid).pmd_objcg = objcg;
            }
            let pmd_objcg = self.task(pid).pmd_objcg;
            self.kmem_charge(pmd_objcg, KmemKind::Pagetable, crate::PAGE_SIZE, false)?;
            have += 1;
            self.task_mut(pid).pmd_pages = have;
        }
        Ok(())
    }

    /// do_anonymous_page(): allocate, charge, map.
    fn do_anonymous_page(&mut self, pid: Pid, vma: u32, idx: u32) -> Result<(), Fault> {
        // __handle_mm_fault(): a range no page table maps yet may take a huge folio
        // (create_huge_pmd()); the PMD page comes first (__pmd_alloc()).
        if let Some(start) = self.thp_fault_range(vma, idx) {
            self.pmd_alloc(pid, vma)?;
            if self.do_huge_pmd_anonymous_page(pid, vma, start)? {
                return Ok(());
            }
        }
        self.pte_alloc(pid, vma, idx)?;
        self.spend_cpu(self.cfg.costs.minor_fault_ns);
        let memcg = self.task(pid).memcg;
        self.mod_stat(memcg, Stat::Pgfault, 1);
        self.task_mut(pid).stats.minflt += 1;
        let pfn = self.anon_fault_page(memcg, vma)?;
        self.commit_charge(pfn, memcg);
        self.map_new_anon(pid, vma, idx, pfn);
        Ok(())
    }

    /// swap_cluster_readahead() beside a fault on `slot`: the in-use slots not in the swap
    /// cache of the window of swapin_nr_pages() slots aligned around it are read ahead, their
    /// device positions added to `read`. The kernel's offset 0 is the swap header: slot s is
    /// offset s + 1.
    pub(crate) fn swap_cluster_readahead(
        &mut self,
        slot: SwapSlot,
        task_memcg: MemcgId,
        read: &mut Vec<u64>,
    ) {
        let window = self.swap.swapin_nr_pages(slot + 1, self.page_cluster);
        if window <= 1 {
            return;
        }
        let mask = window - 1;
        let offset = slot + 1;
        let start = (offset & !mask).max(1);
        let end = (offset | mask).min(self.swap.nr_slots());
        for off in (start - 1)..end {
            if off == slot || !self.swap.in_use(off) || self.swap.cached(off).is_some() {
                continue;
            }
            if !self.swapin_readahead_page(off, task_memcg) {
                break;
            }
            if self.zswap.entry(off).is_none() {
                read.push(crate::blkdev::swap_pos(off));
            }
        }
    }

    /// swap_vma_readahead() beside a fault on page `idx` of `vma`: the pages of the VMA's
    /// window (swap_ra_info()) whose PTEs hold swap entries not in the swap cache are read
    /// ahead, their device positions added to `read`.
    fn swap_vma_readahead(&mut self, vma: u32, idx: u32, task_memcg: MemcgId, read: &mut Vec<u64>) {
        let page_cluster = self.page_cluster;
        let v = &mut self.vmas.v[vma as usize];
        let len = v.ptes.len() as u32;
        let Some(window) = v.swap_ra.swap_ra_info(idx, len, page_cluster) else {
            return;
        };
        for i in window {
            if i == idx {
                continue;
            }
            let pte = self.vmas.v[vma as usize].ptes[i as usize];
            if pte & SWAP_PTE == 0 {
                continue;
            }
            let off = pte & !SWAP_PTE;
            if self.swap.cached(off).is_some() {
                continue;
            }
            if !self.swapin_readahead_page(off, task_memcg) {
                break;
            }
            if self.zswap.entry(off).is_none() {
                read.push(crate::blkdev::swap_pos(off));
            }
        }
    }

    /// vm_swap_full(): more than half the swap space is in use.
    pub fn vm_swap_full(&self) -> bool {
        u64::from(self.swap.nr_free()) * 2 < self.total_swap_pages
    }

    /// mem_cgroup_swap_full(): swap is considered full for a page of `memcg` when
    /// vm_swap_full() says so or, on cgroup v2, when the group or an ancestor below the root
    /// has used half its memory.swap.high or memory.swap.max.
    pub fn mem_cgroup_swap_full(&self, memcg: MemcgId) -> bool {
        if self.vm_swap_full() {
            return true;
        }
        if self.is_v1() {
            return false;
        }
        let mut at = Some(memcg);
        while let Some(id) = at.filter(|&id| id != crate::memcontrol::ROOT_MEMCG) {
            let c = self.swap_counter.get(id as usize);
            if c.usage * 2 >= c.high || c.usage * 2 >= c.max {
                return true;
            }
            at = self.memcg(id).parent;
        }
        false
    }

    /// shrink_folio_list()'s activate_locked for a swap-cache page: when swap is considered
    /// full for its group (mem_cgroup_swap_full()) or the page is mlocked, folio_free_swap()
    /// gives its slot up, unless the page is under writeback: a mapped page becomes a dirty
    /// anon page without swap, whose slot and swap charge go.
    pub(crate) fn activate_free_swap(&mut self, pfn: Pfn) {
        let Some(slot) = self.swapcache_slot(pfn) else {
            return;
        };
        let flags = self.frames.flags(pfn);
        // A page in no PTE (read ahead, written out, or left by munmap during its write)
        // stays for reclaim to free with its slot.
        if flags & pf::WRITEBACK != 0 || flags & pf::MAPPED == 0 || self.swap.pte_held(slot) {
            return;
        }
        if flags & pf::MLOCKED == 0 && !self.mem_cgroup_swap_full(self.frames.memcg(pfn)) {
            return;
        }
        self.swapcache_del(pfn, slot);
        self.frames.set(pfn, pf::DIRTY);
    }

    /// swap_use_vma_readahead(): swap readahead follows the faulting VMA's pages unless it is
    /// switched off (`swap_vma_ra=off`, /sys/kernel/mm/swap/vma_ra_enabled) or the swap
    /// device is rotational (swapon counts it in nr_rotate_swap), where it reads the swap
    /// device's cluster around the entry.
    pub fn swap_use_vma_readahead(&self) -> bool {
        self.cfg.swap_vma_ra && !self.cfg.swap_device_config().rotational
    }

    /// do_swap_page(): a fault on a swap entry. A page found in the swap cache is mapped
    /// (a minor fault); otherwise swapin_readahead() reads the page and, in the same
    /// request, the other pages of its readahead window into the swap cache (a major
    /// fault): swap_vma_readahead()'s pages of the VMA around the fault whose PTEs hold swap
    /// entries, or swap_cluster_readahead()'s in-use slots of the aligned cluster of
    /// swapin_nr_pages() slots around the entry.
    fn do_swap_page(&mut self, pid: Pid, vma: u32, idx: u32, slot: SwapSlot) -> Result<(), Fault> {
        if let Some(pfn) = self.swap.cached(slot) {
            self.swapcache_fault(pid, vma, idx, slot, pfn);
            return Ok(());
        }
        self.spend_cpu(self.cfg.costs.major_fault_ns);
        let task_memcg = self.task(pid).memcg;
        self.mod_stat(task_memcg, Stat::Pgfault, 1);
        self.mod_stat(task_memcg, Stat::Pgmajfault, 1);
        self.task_mut(pid).stats.majflt += 1;
        let memcg = self.swapin_memcg(slot, task_memcg);
        let pfn = self.anon_fault_page(memcg, vma)?;
        let mut read = vec![crate::blkdev::swap_pos(slot)];
        if self.swap_use_vma_readahead() {
            self.swap_vma_readahead(vma, idx, task_memcg, &mut read);
        } else {
            self.swap_cluster_readahead(slot, task_memcg, &mut read);
        }
        if self.task(pid).killed || !self.vmas.v[vma as usize].live {
            // The readahead's charge OOM-killed the faulting task.
            self.memcg_uncharge_raw(memcg);
            self.free_frame(pfn);
            return Err(Fault::Killed);
        }
        self.swapin_read(pid, slot, read);
        self.swapin_commit(pfn, memcg, slot);
        // A write fault: the page does not stay in the swap cache, the entry is freed.
        self.swap_pte_put(slot);
        self.task_mut(pid).swapents -= 1;
        self.map_new_anon(pid, vma, idx, pfn);
        Ok(())
    }

    /// The page read from `slot` is committed to `memcg` (its charge made before the read),
    /// swap-backed, a refault if the slot's shadow entry says so, and counted in PSWPIN.
    pub(crate) fn swapin_commit(&mut self, pfn: Pfn, memcg: MemcgId, slot: SwapSlot) {
        self.commit_charge(pfn, memcg);
        self.frames.set(pfn, pf::SWAPBACKED);
        let shadow = self.swap.shadow(slot);
        if shadow != 0 {
            self.workingset_refault(pfn, shadow);
        }
        self.count_swapin(slot, memcg);
    }

    /// The event of a page of `memcg` read from `slot`: ZSWPIN when zswap held it (true),
    /// else PSWPIN.
    fn count_swapin(&mut self, slot: SwapSlot, memcg: MemcgId) -> bool {
        let from_zswap = self.zswap.entry(slot).is_some();
        if from_zswap {
            self.zswap_count_load(slot, memcg);
        } else {
            self.mod_stat(memcg, Stat::Pswpin, 1);
        }
        from_zswap
    }

    /// add_to_swap() and add_to_swap_cache() for a page of `owner` that reclaim writes out:
    /// a slot, charged to the memcg on cgroup v2 (v1 records the entry when the page leaves:
    /// mem_cgroup_swapout()), with the page in its swap cache. None when no slot, or no
    /// swap charge, is to be had.
    pub(crate) fn add_to_swap_cache(&mut self, pfn: Pfn, owner: MemcgId) -> Option<SwapSlot> {
        let slot = self.swap.alloc()?;
        if !self.is_v1() {
            if !self.mem_cgroup_try_charge_swap(owner) {
                self.swap.cancel(slot);
                return None;
            }
            self.swap.set_owner(slot, owner);
        }
        self.swap.add_cache(slot, pfn);
        self.frames.set(pfn, pf::ONDISK);
        self.mod_stat(owner, Stat::SwapCached, 1);
        Some(slot)
    }

    /// swap_readpage() of the page of `slot` and the readahead pages beside it (the device
    /// positions `read`), in one request the faulting task waits for; zram's decompression
    /// is the task's CPU time. A workingset refault waits inside psi_memstall_enter().
    pub(crate) fn swapin_read(&mut self, pid: Pid, slot: SwapSlot, mut read: Vec<u64>) {
        // frontswap_load(): the faulting page, if zswap holds it, is decompressed inside the
        // stall; the read-ahead pages zswap held were loaded as they were added.
        let from_zswap = self.zswap.entry(slot).is_some();
        if from_zswap {
            let pos = crate::blkdev::swap_pos(slot);
            read.retain(|&p| p != pos);
        }
        let runs = crate::blkdev::page_runs(read);
        let shadow = self.swap.shadow(slot);
        let workingset = shadow != 0 && crate::workingset::unpack_shadow(shadow).2;
        let memstall = workingset.then(|| self.psi_memstall_enter());
        if from_zswap {
            self.spend_cpu(self.zswap_decompress_cost(slot));
        }
        if runs.is_empty() {
            // Nothing for the device.
        } else if self.swap_synchronous_io() {
            // swap_readpage() on zram: the faulting CPU decompresses.
            let ns = self.swap_dev().cpu_copy(&runs, false);
            self.spend_cpu(ns);
        } else {
            let now = self.now();
            let wait = self.swap_dev().read(now, &runs);
            self.spend_wait(wait, crate::psi::Stall::Io);
            self.task_mut(pid).stats.io_wait_ns += wait;
        }
        if let Some(was) = memstall {
            self.psi_memstall_leave(was);
        }
    }

    /// free_swap_and_cache() for a swap PTE going away: the PTE's reference drops, and the
    /// slot's swap-cache page goes too unless its write is in flight.
    pub(crate) fn swap_pte_put_cached(&mut self, slot: SwapSlot) {
        let unused = self.swap.pte_put(slot);
        if let Some(pfn) = self.swap.cached(slot) {
            debug_assert!(!unused);
            if !self.frames.test(pfn, pf::WRITEBACK) {
                let memcg = self.frames.memcg(pfn);
                self.lru_del(pfn);
                self.swapcache_del(pfn, slot);
                self.uncharge_page(memcg);
                self.free_frame(pfn);
            }
        } else if unused {
            self.swap_slot_release(slot);
        }
    }

    /// Undo a charge that was never committed to a page.
    pub(crate) fn memcg_uncharge_raw(&mut self, memcg: crate::memcontrol::MemcgId) {
        if memcg != crate::memcontrol::ROOT_MEMCG {
            self.memory.uncharge(memcg as usize, 1);
            if self.is_v1() {
                self.memsw.uncharge(memcg as usize, 1);
            }
        }
    }

    /// try_to_unmap() of a swap-cache page: its PTE becomes the swap entry of its slot, and
    /// the page is left in the swap cache alone.
    pub fn unmap_anon_to_swap(&mut self, pfn: Pfn, slot: SwapSlot) {
        let m = self.frames.meta[pfn as usize].map;
        let v = &mut self.vmas.v[m.mapping as usize];
        debug_assert_eq!(v.ptes[m.index as usize], pfn + 1);
        v.ptes[m.index as usize] = SWAP_PTE | slot;
        let owner = v.owner;
        let t = self.task_mut(owner);
        t.rss_anon -= 1;
        t.swapents += 1;
        self.swap.pte_get(slot);
        self.swapcache_unmapped(pfn, slot);
    }

    /// page_remove_rmap() of a swap-cache page that stays in the swap cache.
    pub(crate) fn swapcache_unmapped(&mut self, pfn: Pfn, slot: SwapSlot) {
        let memcg = self.frames.memcg(pfn);
        self.mod_stat(memcg, Stat::Anon, -1);
        self.frames.clear(pfn, pf::MAPPED | pf::YOUNG);
        self.swap.set_mapped(pfn, None);
        self.frames.meta[pfn as usize].map = PageMap {
            mapping: SWAPCACHE_MAPPING,
            index: slot,
        };
    }

    /// A page zap_pte_range() unmapped goes into the mmu_gather; a full gather is flushed.
    fn tlb_remove_page(
        &mut self,
        gather: &mut Vec<(Pfn, Option<MemcgId>)>,
        pfn: Pfn,
        memcg: MemcgId,
    ) {
        gather.push((pfn, Some(memcg)));
        if gather.len() == MMU_GATHER_PAGES {
            self.tlb_flush_mmu(gather);
        }
    }

    /// tlb_batch_pages_flush(): release_pages() over each batch of the gather in turn, the
    /// on-stack bundle first, each uncharging its pages together.
    fn tlb_flush_mmu(&mut self, gather: &mut Vec<(Pfn, Option<MemcgId>)>) {
        for r in gather_batches(gather.len()) {
            self.free_page_list(&gather[r]);
        }
        gather.clear();
    }

    /// zap_pte_range() for one PTE other than a huge PMD's, of a mapping of task `owner`
    /// (`locked`: VM_LOCKED): a swap entry is freed with its swap-cache page, a page goes
    /// into the gather. A page of a PTE-mapped huge folio only loses its mapping (its folio
    /// stays whole, on the deferred split queue): its head is returned for the caller to
    /// free or queue.
    fn zap_pte(
        &mut self,
        owner: Pid,
        locked: bool,
        pte: u32,
        gather: &mut Vec<(Pfn, Option<MemcgId>)>,
    ) -> Option<Pfn> {
        if pte & SWAP_PTE == 0 && self.thp.folios > 0 {
            let head = self.folio_head(pte - 1);
            if self.folio_nr_pages(head) > 1 {
                let memcg = self.frames.memcg(head);
                self.mod_stat(memcg, Stat::Anon, -1);
                self.task_mut(owner).rss_anon -= 1;
                return Some(head);
            }
        }
        if pte & SWAP_PTE != 0 {
            let slot = pte & !SWAP_PTE;
            // free_swap_and_cache(): the entry's swap-cache page goes with it, unless
            // its write is in flight (folio_free_swap() refuses it; reclaim frees it
            // later with its slot).
            self.swap_pte_put_cached(slot);
            self.task_mut(owner).swapents -= 1;
        } else {
            let pfn = pte - 1;
            let memcg = self.frames.memcg(pfn);
            if let Some(slot) = self.swapcache_slot(pfn) {
                // A swap-cache page faulted back while its write was in flight:
                // free_swap_cache() frees the swap with it unless the write still is.
                self.task_mut(owner).rss_anon -= 1;
                let mlocked = self.frames.test(pfn, pf::MLOCKED);
                if mlocked {
                    self.mod_stat(memcg, Stat::Mlock, -1);
                    self.frames.clear(pfn, pf::MLOCKED);
                }
                if self.frames.test(pfn, pf::WRITEBACK) {
                    self.swapcache_unmapped(pfn, slot);
                    if mlocked {
                        // Off the unevictable list (munlock).
                        self.lru_putback(pfn);
                    }
                    return None;
                }
                self.swapcache_unmapped(pfn, slot);
                self.lru_del(pfn);
                self.swapcache_del(pfn, slot);
                self.tlb_remove_page(gather, pfn, memcg);
                return None;
            }
            self.lru_del(pfn);
            if locked || self.frames.test(pfn, pf::MLOCKED) {
                self.mod_stat(memcg, Stat::Mlock, -1);
            }
            self.mod_stat(memcg, Stat::Anon, -1);
            self.tlb_remove_page(gather, pfn, memcg);
            self.task_mut(owner).rss_anon -= 1;
        }
        None
    }

    /// madvise(MADV_DONTNEED) of pages `start..end` of `vma` (zap_page_range()): their
    /// PTEs go, as munmap's do, and the mapping stays (a later access faults a new zeroed
    /// page). A huge range wholly inside goes with its PMD (zap_huge_pmd()); a huge range
    /// partly inside has its PMD split first, and its folio, partly mapped, waits on its
    /// memcg's deferred split queue (huge_memory.rs), or goes whole once nothing maps it.
    pub fn madvise_dontneed(&mut self, vma: u32, start: u32, end: u32) {
        let v = &self.vmas.v[vma as usize];
        if !v.live {
            return;
        }
        let (owner, locked) = (v.owner, v.locked);
        let end = end.min(v.ptes.len() as u32);
        let nr = crate::huge_memory::HPAGE_PMD_NR as u32;
        let mut gather = Vec::new();
        let mut touched: Vec<Pfn> = Vec::new();
        let mut i = start;
        // Bound: each round moves i forward by at least one page.
        while i < end {
            let pte = self.vmas.v[vma as usize].ptes[i as usize];
            let head = (pte != 0 && pte & SWAP_PTE == 0 && self.thp.folios > 0)
                .then(|| self.folio_head(pte - 1))
                .filter(|&h| {
                    crate::huge_memory::is_head(&self.frames.meta, h) && !self.folio_deferred(h)
                });
            if let Some(head) = head {
                // A PMD-mapped folio.
                let rs = i - (pte - 1 - head);
                if start <= rs && rs + nr <= end {
                    // zap_huge_pmd(): the range's PMD goes with its folio.
                    let n = self.zap_huge_pmd(head);
                    self.task_mut(owner).rss_anon -= n;
                    let v = &mut self.vmas.v[vma as usize];
                    v.ptes[rs as usize..(rs + nr) as usize].fill(0);
                    i = rs + nr;
                    continue;
                }
                // Mapped by PTEs from now on, and queued for the deferred split.
                self.split_huge_pmd(head);
                self.deferred_split_folio(head);
            }
            if pte != 0 {
                self.vmas.v[vma as usize].ptes[i as usize] = 0;
                if let Some(head) = self.zap_pte(owner, locked, pte, &mut gather) {
                    if !touched.contains(&head) {
                        touched.push(head);
                    }
                }
            }
            i += 1;
        }
        self.tlb_flush_mmu(&mut gather);
        // A folio with none of its pages left mapped goes whole; the others wait on their
        // queue, where the PMD split put them.
        for head in touched {
            if self.folio_mapped_pages(head) == 0 {
                self.free_unmapped_folio(head);
            }
        }
    }

    /// munmap(): free every page and swap entry of a VMA. The pages go through an
    /// mmu_gather as in zap_pte_range(): each batch of it is released (uncharged together,
    /// then freed) when the gather fills or the unmap ends; a swap entry's swap-cache page
    /// is freed at once (free_swap_and_cache()).
    pub fn munmap(&mut self, vma: u32) {
        let v = &mut self.vmas.v[vma as usize];
        if !v.live {
            return;
        }
        v.live = false;
        let owner = v.owner;
        let locked = v.locked;
        let ptes = std::mem::take(&mut v.ptes);
        let mut gather = Vec::new();
        // The PTEs up to this index belong to a huge folio already freed.
        let mut huge_end = 0usize;
        let mut pte_mapped: Vec<Pfn> = Vec::new();
        for (i, &pte) in ptes.iter().enumerate() {
            if pte == 0 || i < huge_end {
                continue;
            }
            if pte & SWAP_PTE == 0
                && self.thp.folios > 0
                && crate::huge_memory::is_head(&self.frames.meta, pte - 1)
                && !self.folio_deferred(pte - 1)
            {
                // zap_huge_pmd(): the range's PMD maps the folio whole.
                let n = self.zap_huge_pmd(pte - 1);
                self.task_mut(owner).rss_anon -= n;
                huge_end = i + n as usize;
                continue;
            }
            if let Some(head) = self.zap_pte(owner, locked, pte, &mut gather) {
                if !pte_mapped.contains(&head) {
                    pte_mapped.push(head);
                }
            }
        }
        // The PTE-mapped huge folios whose pages the mapping held go whole.
        for head in pte_mapped {
            self.free_unmapped_folio(head);
        }
        self.tlb_flush_mmu(&mut gather);
        // free_pgtables(): the mapping's PTE pages, and its vm_area_struct.
        let v = &mut self.vmas.v[vma as usize];
        let (objcg, pt_pages) = (v.objcg, v.pt_pages);
        v.pt = Vec::new();
        v.pt_pages = 0;
        for _ in 0..pt_pages {
            self.kmem_uncharge(objcg, crate::kmem::KmemKind::Pagetable, crate::PAGE_SIZE);
        }
        self.kmem_uncharge(
            objcg,
            crate::kmem::KmemKind::SlabUnreclaimable,
            crate::kmem::VMA_SLAB_BYTES,
        );
        self.vmas.free_ids.push(vma);
        let t = self.task_mut(owner);
        t.vmas.retain(|&x| x != vma);
        t.total_vm -= ptes.len() as u64;
    }
}

/// The batches of a gather of `len` pages, in the order tlb_batch_pages_flush() releases
/// them: the on-stack bundle, then MAX_GATHER_BATCH at a time.
fn gather_batches(len: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let mut start = 0;
    let mut size = MMU_GATHER_BUNDLE;
    std::iter::from_fn(move || {
        if start >= len {
            return None;
        }
        let end = (start + size).min(len);
        let r = start..end;
        start = end;
        size = MAX_GATHER_BATCH;
        Some(r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MachineConfig;
    use crate::memcontrol::ROOT_MEMCG;
    use crate::mmzone::Wmark;
    use crate::program::Idle;
    use crate::sched::ExecCtx;
    use crate::vmscan::Wait;

    /// A swap readahead page is allocated as the faulting task's page (6.1's
    /// swap_cluster_readahead() passes GFP_HIGHUSER_MOVABLE on): when its direct reclaim
    /// must give the CPU up, the readahead stops there, the fault completes, and the task
    /// yields with its reclaim kept for its next allocation.
    #[test]
    fn a_readahead_allocation_that_must_yield_ends_the_readahead() {
        let mut cfg = MachineConfig::default();
        for (k, v) in [("memory", "64M"), ("swap", "64M"), ("swap_disk", "zram")] {
            cfg.set(k, v).unwrap();
        }
        let mut m = Machine::new(cfg).unwrap();
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let pid = m.spawn(a, "idle".into(), 0, Box::new(Idle));
        m.cur = Some(ExecCtx::new(Some(pid), 0, m.sched.clock));
        let vma = m.mmap_anon(pid, 16, false);
        for i in 0..16 {
            m.touch_anon(pid, vma, i).unwrap();
        }
        // Swap the group out (zram: each write ends in its pass, the page is freed).
        let swapped = |m: &Machine| {
            m.vmas.v[vma as usize]
                .ptes
                .iter()
                .all(|&p| p & SWAP_PTE != 0)
        };
        for _ in 0..20 {
            if swapped(&m) {
                break;
            }
            m.try_to_free_mem_cgroup_pages(a, 16, true, true, None);
        }
        assert!(swapped(&m));
        assert_eq!(m.global_stat(Stat::SwapCached), 0);
        let slot = |m: &Machine, i: usize| m.vmas.v[vma as usize].ptes[i] & !SWAP_PTE;
        // Hold free pages until only the top zone has one page above its min watermark
        // plus reserve: the faulting page gets it, the first readahead page must reclaim.
        let mut held = Vec::new();
        for z in 0..crate::mmzone::NR_ZONES {
            let zone = &m.zones.zone[z];
            if zone.managed == 0 {
                continue;
            }
            let keep = m.zones.mark(z, Wmark::Min) + zone.lowmem_reserve;
            for _ in 0..zone.managed {
                m.frames.drain_all_pages();
                if m.frames.free.zone_len(z) <= keep {
                    break;
                }
                held.push(
                    m.frames
                        .rmqueue(z, 0, crate::buddy::MigrateType::Movable, 0, &m.zones, false)
                        .unwrap(),
                );
            }
        }
        let top = (0..crate::mmzone::NR_ZONES)
            .rev()
            .find(|&z| m.zones.zone[z].managed > 0)
            .unwrap();
        m.free_frame(held.pop().unwrap());
        m.frames.drain_all_pages();
        let keep = m.zones.mark(top, Wmark::Min) + m.zones.zone[top].lowmem_reserve;
        assert_eq!(m.frames.free.zone_len(top), keep + 1);
        // A window of 8 pages (page-cluster 3): the VMA's first swap fault has one (zram is
        // not rotational: VMA readahead), and so would cluster readahead after these hits.
        m.swap.ra_hits = 6;
        // The task's slice is used: its reclaim gives the CPU up after priority 12.
        let quantum = m.cfg.costs.quantum_ns;
        m.cur.as_mut().unwrap().cpu_ns = quantum;
        let stalls = m.global_stat(Stat::Allocstall);
        assert_eq!(m.touch_anon(pid, vma, 0), Err(Fault::Blocked));
        let t = m.task(pid);
        assert_eq!(t.stats.majflt, 1);
        assert!(matches!(t.block, Some(ref b) if b.wait == Wait::Resched));
        let kept = t.reclaim_resume.as_ref().expect("the reclaim is kept");
        assert_eq!(kept.priority, crate::vmscan::DEF_PRIORITY - 1);
        assert_eq!(m.global_stat(Stat::Allocstall), stalls + 1);
        // The faulting page is mapped; no neighbour was read ahead.
        assert_eq!(m.vmas.v[vma as usize].ptes[0] & SWAP_PTE, 0);
        assert!((1..16).all(|i| m.swap.cached(slot(&m, i)).is_none()));
        assert_eq!(m.global_stat(Stat::SwapCached), 0);
        // Back on a CPU, the program's retry finds the page present.
        m.task_mut(pid).block = None;
        m.cur = Some(ExecCtx::new(Some(pid), 0, m.sched.clock));
        assert_eq!(m.touch_anon(pid, vma, 0), Ok(()));
        assert_eq!(m.task(pid).stats.majflt, 1);
        assert!(
            m.task(pid).reclaim_resume.is_some(),
            "for the next allocation"
        );
        m.cur = None;
    }

    /// A machine with `keys` whose one group's task maps `pages` of anon memory, writes
    /// them and has them all swapped out; returns the machine, the task and its VMA.
    fn swapped_out(keys: &[(&str, &str)], pages: u32) -> (Machine, Pid, u32) {
        let base = [("memory", "64M"), ("swap", "64M")];
        let all: Vec<_> = base.iter().chain(keys).copied().collect();
        let (mut m, a, pid) = crate::machine::test_machine_with_task(&all);
        let vma = m.mmap_anon(pid, pages, false);
        for i in 0..pages {
            m.touch_anon(pid, vma, i).unwrap();
        }
        for _ in 0..50 {
            if m.vmas.v[vma as usize]
                .ptes
                .iter()
                .all(|&p| p & SWAP_PTE != 0)
            {
                break;
            }
            m.try_to_free_mem_cgroup_pages(a, pages as u64, true, true, None);
        }
        assert!(m.vmas.v[vma as usize]
            .ptes
            .iter()
            .all(|&p| p & SWAP_PTE != 0));
        assert_eq!(m.global_stat(Stat::SwapCached), 0);
        (m, pid, vma)
    }

    /// The pages of `vma` in the swap cache.
    fn cached_pages(m: &Machine, vma: u32) -> Vec<u32> {
        let v = &m.vmas.v[vma as usize];
        (0..v.ptes.len() as u32)
            .filter(|&i| {
                let p = v.ptes[i as usize];
                p & SWAP_PTE != 0 && m.swap.cached(p & !SWAP_PTE).is_some()
            })
            .collect()
    }

    /// 6.1 reads ahead by VMA unless vma_ra_enabled is off or a swap device is rotational.
    #[test]
    fn swap_readahead_follows_the_vma_on_non_rotational_swap() {
        let vma_ra = |keys: &[(&str, &str)]| {
            let mut cfg = MachineConfig::default();
            for (k, v) in keys {
                cfg.set(k, v).unwrap();
            }
            Machine::new(cfg).unwrap().swap_use_vma_readahead()
        };
        assert!(vma_ra(&[]));
        assert!(vma_ra(&[("swap_disk", "zram")]));
        assert!(!vma_ra(&[("swap_disk", "hdd")]));
        assert!(!vma_ra(&[("disk", "hdd")]));
        assert!(vma_ra(&[("disk", "hdd"), ("swap_disk", "nvme")]));
        assert!(!vma_ra(&[("swap_seek", "5ms")]));
        assert!(!vma_ra(&[("swap_vma_ra", "off")]));

        let (mut m, pid, vma) = swapped_out(&[("swap_sync", "on")], 64);
        // The VMA's first swap fault reads 8 pages around it: 3 before, 4 after.
        let in0 = m.global_stat(Stat::Pswpin);
        m.touch_anon(pid, vma, 10).unwrap();
        assert_eq!(m.global_stat(Stat::Pswpin) - in0, 8);
        assert_eq!(cached_pages(&m, vma), vec![7, 8, 9, 11, 12, 13, 14]);
        assert_eq!(m.global_stat(Stat::SwapCached), 7);
        // A fault on a page read ahead: minor, a hit, and the write frees its swap cache.
        m.touch_anon(pid, vma, 11).unwrap();
        assert_eq!(m.task(pid).stats.majflt, 1);
        assert_eq!(m.task(pid).stats.minflt, 64 + 1);
        assert_eq!(m.global_stat(Stat::SwapCached), 6);
        // One hit: a window of 4 around the next fault, far away.
        m.touch_anon(pid, vma, 40).unwrap();
        assert_eq!(cached_pages(&m, vma), vec![7, 8, 9, 12, 13, 14, 39, 41, 42]);
        // No hit since: half the last window, then one page.
        m.touch_anon(pid, vma, 50).unwrap();
        assert_eq!(cached_pages(&m, vma).len(), 10);
        m.touch_anon(pid, vma, 60).unwrap();
        assert_eq!(cached_pages(&m, vma).len(), 10);
        assert_eq!(m.task(pid).stats.majflt, 4);
        m.check().unwrap();
        m.cur = None;
    }

    /// On rotational swap the window is the swap device's aligned cluster of slots, which
    /// need not be the VMA's neighbours.
    #[test]
    fn rotational_swap_reads_the_cluster_of_slots() {
        let (mut m, pid, vma) = swapped_out(&[("swap_disk", "hdd"), ("swap_sync", "on")], 64);
        let slot = |m: &Machine, i: usize| m.vmas.v[vma as usize].ptes[i] & !SWAP_PTE;
        let s = slot(&m, 10);
        m.touch_anon(pid, vma, 10).unwrap();
        // The first fault: 8 slots aligned around offset s + 1 (offset 0 is the header).
        let lo = ((s + 1) & !7).max(1) - 1;
        let read: Vec<u32> = cached_pages(&m, vma)
            .iter()
            .map(|&i| slot(&m, i as usize))
            .collect();
        assert!(!read.is_empty());
        assert!(
            read.iter().all(|&r| r >= lo && r < lo + 8 && r != s),
            "{read:?} around {s}"
        );
        m.check().unwrap();
        m.cur = None;
    }

    #[test]
    fn a_gather_is_released_in_the_kernels_batches() {
        let b = |len| gather_batches(len).collect::<Vec<_>>();
        assert_eq!(b(0), vec![]);
        assert_eq!(b(5), vec![0..5]);
        assert_eq!(b(1000), vec![0..8, 8..518, 518..1000]);
        // A full gather: the bundle and 19 whole batches.
        let full = b(MMU_GATHER_PAGES);
        assert_eq!(full.len(), 20);
        assert!(full[1..].iter().all(|r| r.len() == MAX_GATHER_BATCH));
    }
}
