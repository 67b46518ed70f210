//! The page allocator: mm/page_alloc.c — zone watermarks derived as
//! calculate_min_free_kbytes() and __setup_per_zone_wmarks() derive them (one zone), the fast
//! path that wakes kswapd below the low watermark, and the slow path that enters direct
//! reclaim below min and the global OOM killer after MAX_RECLAIM_RETRIES rounds without
//! progress. A task can sleep in its direct reclaim (reclaim_throttle(), vmscan.rs); the
//! allocation then fails with `ChargeError::Blocked` and resumes its loop when it wakes.

use crate::config::MachineConfig;
use crate::machine::Machine;
use crate::memcontrol::{ChargeError, MAX_RECLAIM_RETRIES};
use crate::page_cgroup::{pf, Pfn};
use crate::task::AllocRetry;

/// Zone watermarks in pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watermarks {
    pub min_free_kbytes: u64,
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

impl Watermarks {
    pub fn compute(cfg: &MachineConfig, managed_pages: u64) -> Watermarks {
        let lowmem_kbytes = managed_pages * 4;
        let min_free_kbytes = cfg
            .min_free_kbytes
            .unwrap_or_else(|| crate::vmscan::int_sqrt(lowmem_kbytes * 16).clamp(128, 262_144));
        let min = min_free_kbytes >> 2; // pages
        let tmp = (min / 4).max(managed_pages * cfg.watermark_scale_factor / 10_000);
        Watermarks {
            min_free_kbytes,
            min,
            low: min + tmp,
            high: min + 2 * tmp,
        }
    }
}

impl Machine {
    /// Allocate one page frame for the current context (alloc_pages, order 0, GFP_KERNEL-like
    /// user allocation). The frame comes back with only the ALLOCATED flag.
    pub fn alloc_page(&mut self) -> Result<Pfn, ChargeError> {
        if self.nr_free_pages() <= self.wmark.low {
            self.wakeup_kswapd();
        }
        if self.nr_free_pages() > self.wmark.min {
            return Ok(self.take_free_frame());
        }
        // __alloc_pages_slowpath(); a task that slept in its reclaim goes on where its
        // retry loop stood.
        let mut no_progress = 0u32;
        let mut resumed = None;
        let pid = self.current_pid();
        if let Some(pid) = pid {
            if let Some(AllocRetry::Page {
                no_progress: n,
                reclaimed,
            }) = self.task(pid).alloc_retry
            {
                self.task_mut(pid).alloc_retry = None;
                no_progress = n;
                resumed = Some(reclaimed);
            }
        }
        for _ in 0..10_000u32 {
            if self.current_is_dying() {
                // OOM victims may dip into the reserves.
                if !self.frames.free.is_empty() {
                    return Ok(self.take_free_frame());
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
            if self.nr_free_pages() > self.wmark.min {
                return Ok(self.take_free_frame());
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
                    return Ok(self.take_free_frame());
                }
                return Err(ChargeError::NoMem);
            }
        }
        Err(ChargeError::NoMem)
    }

    fn take_free_frame(&mut self) -> Pfn {
        let pfn = self.frames.free.pop().expect("free list is not empty");
        debug_assert_eq!(self.frames.flags(pfn) & pf::ALLOCATED, 0);
        self.frames.pc[pfn as usize].flags = crate::page_cgroup::LRU_NONE | pf::ALLOCATED;
        pfn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn watermarks_like_the_kernel() {
        // 8 GiB: min_free_kbytes = sqrt(8G/1K*16) = 11585 KiB; min = 2896 pages;
        // tmp = max(724, 2097152*10/10000 = 2097) -> low = 4993, high = 7090.
        let cfg = MachineConfig::default();
        let w = Watermarks::compute(&cfg, 2_097_152);
        assert_eq!(w.min_free_kbytes, 11585);
        assert_eq!(w.min, 2896);
        assert_eq!(w.low, 2896 + 2097);
        assert_eq!(w.high, 2896 + 2 * 2097);
    }
}
