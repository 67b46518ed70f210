//! The page allocator: mm/page_alloc.c — get_page_from_freelist() over the zonelist (highest
//! zone first, each zone above its watermark plus its lowmem reserve; the zones and their
//! watermarks are mmzone.rs, the free lists buddy.rs; a first pass under ALLOC_NOFRAGMENT when
//! the preferred zone is Normal and DMA32 is populated, alloc_flags_nofragment()), the fast
//! path at the low watermark, the slow path that wakes
//! kswapd when no zone is above low, takes a page above min, enters direct reclaim when no
//! zone is above min and the global OOM killer after MAX_RECLAIM_RETRIES rounds without
//! progress. A task can sleep in its direct reclaim (reclaim_throttle(), vmscan.rs); the
//! allocation then fails with `ChargeError::Blocked` and resumes its loop when it wakes.

use crate::buddy::MigrateType;
use crate::machine::Machine;
use crate::memcontrol::{ChargeError, MAX_RECLAIM_RETRIES};
use crate::mmzone::{Wmark, NR_ZONES, ZONE_DMA32, ZONE_NORMAL};
use crate::page_cgroup::{pf, Pfn};
use crate::task::AllocRetry;

impl Machine {
    /// Allocate one page frame of migrate type `mt` for the current context (alloc_pages,
    /// order 0: GFP_HIGHUSER_MOVABLE for user pages, GFP_KERNEL with __GFP_RECLAIMABLE or not
    /// for the kernel's). The frame comes back with only the ALLOCATED flag.
    pub fn alloc_page(&mut self, mt: MigrateType) -> Result<Pfn, ChargeError> {
        if !self.kswapd.freeing.is_empty() {
            self.kswapd_release_freed(self.now());
        }
        let pid = self.current_pid();
        // A task whose direct reclaim gave its CPU up is still inside it.
        let in_reclaim = pid.is_some_and(|p| self.task(p).reclaim_resume.is_some());
        if !in_reclaim {
            if let Some(pfn) = self.get_page_from_freelist(Wmark::Low, 0, mt) {
                return Ok(pfn);
            }
            // __alloc_pages_slowpath(): wake kswapd, then try again at the min watermark.
            self.wakeup_kswapd();
            if let Some(pfn) = self.get_page_from_freelist(Wmark::Min, 0, mt) {
                return Ok(pfn);
            }
        }
        // __alloc_pages_slowpath(); a task that slept in its reclaim goes on where its
        // retry loop stood, and one that gave its CPU up in it goes on with that reclaim.
        let mut no_progress = 0u32;
        let mut resumed = None;
        if let Some(pid) = pid {
            if let Some(AllocRetry::Page {
                no_progress: n,
                reclaimed,
            }) = self.task(pid).alloc_retry
            {
                self.task_mut(pid).alloc_retry = None;
                no_progress = n;
                if !in_reclaim {
                    resumed = Some(reclaimed);
                }
            }
        }
        for _ in 0..10_000u32 {
            if self.current_is_dying() {
                // OOM victims may dip into the reserves.
                if !self.frames.free.is_empty() {
                    return Ok(self.take_free_frame(mt));
                }
                return Err(ChargeError::Killed);
            }
            let reclaimed = match resumed.take() {
                Some(r) => r,
                None => {
                    let (r, throttle) = self.try_to_free_pages();
                    if let (Some(w), Some(pid)) = (throttle, pid) {
                        self.task_mut(pid).alloc_retry = Some(AllocRetry::Page {
                            no_progress,
                            reclaimed: r,
                        });
                        self.block_current(pid, w);
                        return Err(ChargeError::Blocked);
                    }
                    r
                }
            };
            if let Some(pfn) = self.get_page_from_freelist(Wmark::Min, 0, mt) {
                return Ok(pfn);
            }
            // __alloc_pages_direct_reclaim(): pages may be pinned on the CPUs' lists;
            // drain them and try once more.
            self.frames.drain_all_pages();
            if let Some(pfn) = self.get_page_from_freelist(Wmark::Min, 0, mt) {
                return Ok(pfn);
            }
            if self.gfp_noretry {
                // __GFP_NORETRY: one round of direct reclaim, no retries, no OOM.
                return Err(ChargeError::NoMem);
            }
            if reclaimed > 0 {
                no_progress = 0;
                continue;
            }
            no_progress += 1;
            if no_progress <= MAX_RECLAIM_RETRIES {
                continue;
            }
            no_progress = 0;
            if !self.out_of_memory_global() {
                // Nothing left to kill: the kernel would panic; fail this allocation.
                if !self.frames.free.is_empty() {
                    return Ok(self.take_free_frame(mt));
                }
                return Err(ChargeError::NoMem);
            }
        }
        Err(ChargeError::NoMem)
    }

    /// An order-9 folio for a THP fault (alloc_pages() with the gfp of vma_thp_gfp_mask()):
    /// the fast path at the low watermark; the slow path wakes kswapd if the gfp says so and
    /// tries again at min. A gfp that allows direct reclaim then gets what 6.1's slow path
    /// gives a costly order: asynchronous direct compaction; unless that was skipped and the
    /// gfp is __GFP_NORETRY, one round of direct reclaim (its sleeps skipped), a look at min
    /// after draining the per-CPU lists, and compaction once more; no retries (a costly order
    /// without __GFP_RETRY_MAYFAIL). The tails come marked (huge_memory.rs).
    pub(crate) fn alloc_thp_folio(&mut self, gfp: crate::huge_memory::ThpGfp) -> Option<Pfn> {
        use crate::huge_memory::HPAGE_PMD_ORDER as O;
        if !self.kswapd.freeing.is_empty() {
            self.kswapd_release_freed(self.now());
        }
        let mt = MigrateType::Movable;
        let mut got = self.get_page_from_freelist(Wmark::Low, O, mt);
        if got.is_none() {
            if gfp.kswapd {
                self.wakeup_kswapd();
            }
            got = self.get_page_from_freelist(Wmark::Min, O, mt);
        }
        if got.is_none() && gfp.direct_reclaim && !self.current_is_dying() {
            use crate::compaction::CompactResult;
            let (page, result) = self.alloc_pages_direct_compact(O);
            got = page;
            let give_up =
                gfp.noretry && matches!(result, CompactResult::Skipped | CompactResult::Deferred);
            if got.is_none() && !give_up {
                let _ = self.try_to_free_pages();
                got = self.get_page_from_freelist(Wmark::Min, O, mt);
                if got.is_none() {
                    self.frames.drain_all_pages();
                    got = self.get_page_from_freelist(Wmark::Min, O, mt);
                }
                if got.is_none() {
                    got = self.alloc_pages_direct_compact(O).0;
                }
            }
        }
        let head = got?;
        self.prep_thp_tails(head);
        Some(head)
    }

    /// get_page_from_freelist() for a block of `order` that may come from any zone: the
    /// zonelist runs from the highest zone down, and a zone gives a block while its free
    /// pages are above the watermark plus its lowmem reserve and it has a free block of that
    /// order or above (zone_watermark_fast(), buddy.rs's __zone_watermark_ok()). With a
    /// Normal zone over a populated DMA32 the first pass runs under ALLOC_NOFRAGMENT (no
    /// stealing of blocks under pageblock order), the second without.
    pub(crate) fn get_page_from_freelist(
        &mut self,
        w: Wmark,
        order: u32,
        mt: MigrateType,
    ) -> Option<Pfn> {
        let nofragment =
            self.zones.zone[ZONE_NORMAL].managed > 0 && self.zones.zone[ZONE_DMA32].managed > 0;
        for pass_nofragment in [true, false] {
            if pass_nofragment && !nofragment {
                continue;
            }
            for z in (0..NR_ZONES).rev() {
                let zone = &self.zones.zone[z];
                let mark = self.zones.mark(z, w);
                if zone.managed == 0
                    || !self
                        .frames
                        .free
                        .zone(z)
                        .watermark_ok(order, mark, zone.lowmem_reserve)
                {
                    continue;
                }
                let cpu = self.current_cpu();
                if let Some(pfn) =
                    self.frames
                        .rmqueue(z, order, mt, cpu, &self.zones, pass_nofragment)
                {
                    return Some(self.prep_new_page(pfn));
                }
            }
        }
        None
    }

    /// A page from any zone regardless of watermarks (OOM victims, and the last resort when
    /// nothing is left to kill).
    fn take_free_frame(&mut self, mt: MigrateType) -> Pfn {
        let pfn = self.frames.pop(mt).expect("free list is not empty");
        self.prep_new_page(pfn)
    }

    fn prep_new_page(&mut self, pfn: Pfn) -> Pfn {
        debug_assert_eq!(self.frames.flags(pfn) & pf::ALLOCATED, 0);
        let m = &mut self.frames.meta[pfn as usize];
        debug_assert_eq!(
            m.map.index, 0,
            "a free block's tag left on an allocated frame"
        );
        m.pc.flags = crate::page_cgroup::LRU_NONE | pf::ALLOCATED;
        pfn
    }
}
