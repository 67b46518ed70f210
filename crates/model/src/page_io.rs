//! Swap I/O: mm/page_io.c, the write side. swap_writepage() starts a page's writeback and
//! submits it to the swap device; end_swap_bio_write() ends it (folio_end_writeback(), whose
//! PG_reclaim rotation puts the page at the tail of the inactive list). The read side is the
//! device read of do_swap_page() and its readahead in memory.rs.
//!
//! While its write is in flight a page stays in the swap cache, charged to its memcg, with its
//! slot charged to swap, PG_writeback set (NR_WRITEBACK: memory.stat `writeback`, /proc/meminfo
//! Writeback) and, from pageout(), PG_reclaim. The swap cache's address space keeps no
//! writeback tags and no bdi_writeback counts (mapping_set_no_writeback_tags()), so no wb sees
//! these pages. On a device with SWP_SYNCHRONOUS_IO (zram) the write ends before pageout()
//! returns and reclaim frees the page in the same pass.
//!
//! Completions are interrupts: they land while a reclaimer works, not only between the
//! model's events. Reclaim polls for the writes its own time has passed (swap_io_poll())
//! before each pass over a node, so that a charge retrying reclaim sees its earlier writes
//! end as it would on a kernel, where a retry takes real time, and before a batch's putback,
//! so that a write ending while its page is isolated in the batch ends without the rotation
//! (folio_rotate_reclaimable() moves only a page on the LRU): that page goes back to the
//! head of the inactive list, clean, and stays in the swap cache until reclaim comes round.
//!
//! Simplification: the writes of one shrink_folio_list() batch go to the device as one
//! request, as the block layer merges the bios of adjacent slots of a swap cluster.

use crate::machine::Machine;
use crate::page_cgroup::{pf, Pfn};
use crate::sched::Event;
use crate::stat::Stat;
use crate::swapfile::SwapSlot;

/// Swap writes in flight: batches by completion id, and the pages they carry.
#[derive(Default)]
pub struct SwapIo {
    /// Batches by id; a batch completed by a poll stays (empty) until its event frees the id.
    inflight: Vec<Option<Vec<(Pfn, SwapSlot)>>>,
    free_ids: Vec<u32>,
    /// Batches not yet completed, by completion time (and id): a request submitted later
    /// can complete earlier, in an idle gap of the device (blkdev.rs).
    pending: std::collections::BTreeSet<(u64, u32)>,
    /// Anon pages under writeback.
    pub nr_writeback: u64,
    /// Batches submitted and not yet completed.
    pub inflight_batches: u64,
}

impl SwapIo {
    /// The pages of every batch in flight (for the invariant checker).
    pub fn inflight_pages(&self) -> impl Iterator<Item = (Pfn, SwapSlot)> + '_ {
        self.inflight.iter().flatten().flatten().copied()
    }
}

impl Machine {
    /// The swap device ends its writes inside swap_writepage() (SWP_SYNCHRONOUS_IO).
    pub fn swap_synchronous_io(&self) -> bool {
        self.cfg.swap_device_config().synchronous_io
    }

    /// folio_start_writeback() of a swap-cache page, from swap_writepage().
    pub(crate) fn swap_start_writeback(&mut self, pfn: Pfn) {
        debug_assert!(!self.frames.test(pfn, pf::WRITEBACK));
        self.frames.set(pfn, pf::WRITEBACK);
        let memcg = self.dirty_stat_memcg(self.frames.memcg(pfn));
        self.mod_stat(memcg, Stat::Writeback, 1);
        self.swap_io.nr_writeback += 1;
    }

    /// The writeback flag goes away: at I/O completion, or when the page is freed before
    /// (munmap of a page under writeback; the model ends its writeback at once).
    pub(crate) fn swap_end_writeback(&mut self, pfn: Pfn) {
        debug_assert!(self.frames.test(pfn, pf::WRITEBACK));
        self.frames.clear(pfn, pf::WRITEBACK);
        let memcg = self.dirty_stat_memcg(self.frames.memcg(pfn));
        self.mod_stat(memcg, Stat::Writeback, -1);
        self.swap_io.nr_writeback -= 1;
        // __folio_end_writeback(): NR_WRITTEN counts swap writes as well as file writes.
        self.writeback.nr_written += 1;
        self.acct_reclaim_writeback(pfn);
    }

    /// Submit the writes of a reclaim batch, each page already under writeback, as one
    /// request; the batch completes in an event.
    pub(crate) fn swap_submit(&mut self, pages: Vec<(Pfn, SwapSlot)>) {
        debug_assert!(!pages.is_empty());
        let now = self.now();
        let runs = crate::blkdev::page_runs(
            pages
                .iter()
                .map(|&(_, s)| crate::blkdev::swap_pos(s))
                .collect(),
        );
        let (done, slept) = self.swap_dev().submit_waiting(now, &runs);
        if slept > 0 {
            // The reclaimer slept for a request tag (io_schedule()).
            self.spend_wait(slept, crate::psi::Stall::Io);
            if let Some(pid) = self.cur.as_ref().and_then(|c| c.pid) {
                self.task_mut(pid).stats.io_wait_ns += slept;
            }
        }
        let io = &mut self.swap_io;
        let id = match io.free_ids.pop() {
            Some(id) => {
                io.inflight[id as usize] = Some(pages);
                id
            }
            None => {
                io.inflight.push(Some(pages));
                (io.inflight.len() - 1) as u32
            }
        };
        io.inflight_batches += 1;
        let fresh = io.pending.insert((done, id));
        debug_assert!(fresh, "a batch id in flight twice");
        self.sched.push(done, Event::SwapWritebackDone(id));
    }

    /// The swap writes that completed by now, ended ahead of their events (interrupts that
    /// arrived while a reclaimer ran).
    pub(crate) fn swap_io_poll(&mut self) {
        let now = self.now();
        while let Some(&(done, id)) = self.swap_io.pending.first() {
            if done > now {
                break;
            }
            self.swap_io.pending.pop_first();
            self.swap_batch_end(id);
        }
    }

    /// end_swap_bio_write() for a completed batch: each page still under writeback for the
    /// slot it was written to ends its writeback, and a page reclaim marked loses PG_reclaim
    /// and, if it is on its list, moves to the tail of its inactive list
    /// (folio_rotate_reclaimable()), where the next pass frees it.
    pub fn swap_writeback_done(&mut self, id: u32) {
        // The event fires at the batch's completion time; a poll may have ended it already.
        let now = self.sched.clock;
        if self.swap_io.pending.remove(&(now, id)) {
            self.swap_batch_end(id);
        }
        if self
            .swap_io
            .inflight
            .get_mut(id as usize)
            .and_then(|b| b.take())
            .is_some()
        {
            self.swap_io.free_ids.push(id);
        }
    }

    fn swap_batch_end(&mut self, id: u32) {
        let Some(pages) = self
            .swap_io
            .inflight
            .get_mut(id as usize)
            .and_then(|b| b.replace(Vec::new()))
        else {
            return;
        };
        self.swap_io.inflight_batches -= 1;
        for (pfn, slot) in pages {
            // The page may have been freed (munmap) meanwhile, and the frame reused.
            if !self.frames.test(pfn, pf::WRITEBACK) || self.swap.cached(slot) != Some(pfn) {
                continue;
            }
            self.swap_end_writeback(pfn);
            if self.frames.test_clear(pfn, pf::RECLAIM) {
                self.lru_rotate_to_tail(pfn);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::config::MachineConfig;
    use crate::memcontrol::{MemcgId, ROOT_MEMCG};
    use crate::program::{Program, Step};
    use crate::stat::Stat;
    use crate::task::{TaskCtx, TaskState, Vma};
    use crate::{Machine, Pid};

    /// Maps `pages` of anon memory, writes each once, then holds it (or exits).
    pub(crate) struct Toucher {
        pub(crate) pages: u64,
        pub(crate) next: u64,
        pub(crate) vma: Option<Vma>,
        pub(crate) exit: bool,
    }

    impl Program for Toucher {
        fn name(&self) -> &str {
            "toucher"
        }
        fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
            let vma = match self.vma {
                Some(v) => v,
                None => match cx.mmap_anon(self.pages, false) {
                    Ok(v) => *self.vma.insert(v),
                    Err(_) => return Step::Continue,
                },
            };
            while self.next < self.pages && cx.has_time() {
                if cx.touch(vma, self.next).is_err() {
                    return Step::Continue;
                }
                self.next += 1;
            }
            match (self.next < self.pages, self.exit) {
                (true, _) => Step::Continue,
                (false, false) => Step::Hold,
                (false, true) => Step::Exit(0),
            }
        }
    }

    /// A machine with swap on a slow device (10 ms, 10 MB/s) and one group holding `pages`
    /// of anon memory.
    fn setup(sync: bool, pages: u64) -> (Machine, MemcgId, Pid) {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "256M").unwrap();
        cfg.set("swap", "256M").unwrap();
        cfg.set("disk_latency", "10ms").unwrap();
        cfg.set("disk_bandwidth", "10M").unwrap();
        cfg.set("swap_sync", if sync { "on" } else { "off" })
            .unwrap();
        holding_group(cfg, pages)
    }

    /// A machine of `cfg`, checking its invariants, with one group whose task has written
    /// `pages` of anon memory and holds it.
    pub(crate) fn holding_group(cfg: MachineConfig, pages: u64) -> (Machine, MemcgId, Pid) {
        let mut m = Machine::new(cfg).unwrap();
        m.check_invariants = true;
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let t = Toucher {
            pages,
            next: 0,
            vma: None,
            exit: false,
        };
        let pid = m.spawn(a, "toucher".into(), 0, Box::new(t));
        m.run_until(1_000_000_000, |m| m.task(pid).state != TaskState::Runnable);
        assert_eq!(m.task(pid).state, TaskState::Holding);
        (m, a, pid)
    }

    /// Reclaim `nr` pages of `a` from outside (as memory.reclaim does, without its retries).
    pub(crate) fn reclaim(m: &mut Machine, a: MemcgId, nr: u64) -> u64 {
        let began = m.begin_external_write();
        let r = m.try_to_free_mem_cgroup_pages(a, nr, true, true, None);
        m.end_external_write(began);
        r
    }

    #[test]
    fn a_written_page_stays_in_the_swap_cache_until_its_write_ends() {
        let (mut m, a, _) = setup(false, 4096);
        let before = m.memory.get(a as usize).usage;
        // The first pass starts writes; it frees only what the device finished while the
        // reclaimer slept for a request tag. The rest waits for the device.
        let freed = reclaim(&mut m, a, 32);
        let wb = m.stat_total(a, Stat::Writeback);
        assert!(wb >= 32, "{wb} under writeback");
        assert_eq!(m.stat_total(a, Stat::SwapCached), wb);
        assert_eq!(m.stat_total(a, Stat::Pswpout), wb + freed);
        assert_eq!(m.swap_counter.get(a as usize).usage, wb + freed);
        assert_eq!(m.memory.get(a as usize).usage, before - freed);
        // The device ends the writes; the pages rotate to the inactive tail, clean.
        m.run_until(m.sched.clock + 2_000_000_000, |_| false);
        assert_eq!(m.stat_total(a, Stat::Writeback), 0);
        assert_eq!(m.stat_total(a, Stat::SwapCached), wb);
        assert!(m.stat_total(crate::ROOT_MEMCG, Stat::Pgrotated) >= wb);
        // The next pass frees them first, without another write.
        let out = m.stat_total(a, Stat::Pswpout);
        assert!(reclaim(&mut m, a, 32) >= 32);
        assert_eq!(m.stat_total(a, Stat::Pswpout), out);
    }

    /// folio_end_writeback() of a page a reclaimer holds isolated: PG_reclaim goes, the page
    /// is not rotated (folio_rotate_reclaimable() wants it on the LRU) and pgrotated does not
    /// count it; put back, it sits at the head of the inactive list, clean, in the swap cache.
    #[test]
    fn a_write_that_ends_while_its_page_is_isolated_does_not_rotate_it() {
        let (mut m, a, _) = setup(false, 4096);
        reclaim(&mut m, a, 32);
        let wb = m.stat_total(a, Stat::Writeback);
        assert!(wb >= 2, "{wb} under writeback");
        let pfn = m.swap_io.inflight_pages().next().unwrap().0;
        assert!(m.frames.test(pfn, crate::page_cgroup::pf::RECLAIM));
        let rotated = m.stat_total(ROOT_MEMCG, Stat::Pgrotated);
        // Isolated (as in a reclaim batch) while the device ends the writes.
        m.check_invariants = false;
        m.lru_del(pfn);
        m.run_until(m.sched.clock + 2_000_000_000, |_| false);
        assert_eq!(m.stat_total(a, Stat::Writeback), 0);
        let f = m.frames.flags(pfn);
        assert_eq!(
            f & (crate::page_cgroup::pf::RECLAIM | crate::page_cgroup::pf::WRITEBACK),
            0
        );
        assert_eq!(m.frames.lru(pfn), crate::page_cgroup::LRU_NONE);
        assert_eq!(m.stat_total(ROOT_MEMCG, Stat::Pgrotated) - rotated, wb - 1);
        // move_folios_to_lru(): back at the head, still in the swap cache.
        m.lru_add(pfn);
        m.check_invariants = true;
        m.check().unwrap();
        assert_eq!(m.stat_total(a, Stat::SwapCached), wb);
        let l = m.frames.lru(pfn) as usize;
        assert_eq!(m.memcgs[a as usize].lruvec[0].head[l], pfn);
        assert_ne!(m.memcgs[a as usize].lruvec[0].tail[l], pfn);
    }

    #[test]
    fn a_synchronous_device_frees_in_the_same_pass() {
        let (mut m, a, _) = setup(true, 4096);
        let written = m.writeback.nr_written;
        assert!(reclaim(&mut m, a, 32) >= 32);
        assert_eq!(m.stat_total(a, Stat::Writeback), 0);
        assert_eq!(m.stat_total(a, Stat::SwapCached), 0);
        // NR_WRITTEN counts each page once, at the end of its write.
        let out = m.stat_total(a, Stat::Pswpout);
        assert_eq!(m.writeback.nr_written - written, out);
    }

    #[test]
    fn a_fault_during_the_write_maps_the_page_and_keeps_its_slot() {
        let (mut m, a, pid) = setup(false, 4096);
        let freed = reclaim(&mut m, a, 32);
        let wb = m.stat_total(a, Stat::Writeback);
        assert!(wb > 0);
        // Touch everything again while the writes are in flight: minor faults, but for the
        // pages already freed.
        let vma = m.task(pid).vmas[0];
        let minflt = m.task(pid).stats.minflt;
        m.cur = Some(crate::sched::ExecCtx::new(Some(pid), 0, m.sched.clock));
        for idx in 0..4096 {
            m.touch_anon(pid, vma, idx).unwrap();
        }
        m.cur = None;
        let majflt = m.task(pid).stats.majflt;
        assert!(majflt <= freed);
        assert_eq!(m.task(pid).stats.minflt - minflt, wb + freed - majflt);
        // Mapped again, still in the swap cache with its slot, still being written.
        assert_eq!(m.swap.nr_mapped() as u64, wb);
        assert_eq!(m.stat_total(a, Stat::SwapCached), wb);
        assert_eq!(m.stat_total(a, Stat::Anon), 4096);
        m.check().unwrap();
        // The write ends; reclaim unmaps the page again and writes it to the same slot.
        m.run_until(m.sched.clock + 2_000_000_000, |_| false);
        assert_eq!(m.stat_total(a, Stat::Writeback), 0);
        assert_eq!(m.swap.nr_mapped() as u64, wb);
        let out = m.stat_total(a, Stat::Pswpout);
        while m.swap.nr_mapped() > 0 && reclaim(&mut m, a, 1024) > 0 {}
        assert!(m.stat_total(a, Stat::Pswpout) > out);
    }

    /// activate_locked's folio_free_swap(): a mapped swap-cache page that reclaim activates
    /// keeps its slot while swap has room, and gives it up once its group has used half of
    /// memory.swap.max (mem_cgroup_swap_full()); never while its write is in flight.
    #[test]
    fn an_activated_swap_cache_page_gives_its_slot_up_when_swap_is_full() {
        let (mut m, a, pid) = setup(false, 4096);
        reclaim(&mut m, a, 32);
        let wb = m.stat_total(a, Stat::Writeback);
        assert!(wb > 0);
        // Fault everything back while the writes are in flight: the pages written are mapped
        // again and keep their slots.
        let vma = m.task(pid).vmas[0];
        m.cur = Some(crate::sched::ExecCtx::new(Some(pid), 0, m.sched.clock));
        for idx in 0..4096 {
            m.touch_anon(pid, vma, idx).unwrap();
        }
        m.cur = None;
        let mapped: Vec<_> = (0..m.frames.meta.len() as u32)
            .filter(|&p| m.swap.mapped_slot(p).is_some())
            .collect();
        assert_eq!(mapped.len() as u64, wb);
        // Under writeback: kept, swap full or not.
        let used = m.swap_counter.get(a as usize).usage;
        assert!(m.swap_counter.set_max_checked(a as usize, used));
        assert!(m.mem_cgroup_swap_full(a));
        m.activate_free_swap(mapped[0]);
        assert!(m.swap.mapped_slot(mapped[0]).is_some());
        // The writes end. Swap has room: the slots stay.
        m.run_until(m.sched.clock + 2_000_000_000, |_| false);
        assert_eq!(m.stat_total(a, Stat::Writeback), 0);
        assert!(m.swap_counter.set_max_checked(a as usize, 2 * used + 1));
        assert!(!m.vm_swap_full() && !m.mem_cgroup_swap_full(a));
        m.activate_free_swap(mapped[0]);
        assert_eq!(m.stat_total(a, Stat::SwapCached), wb);
        // Half of swap.max used: the page leaves the swap cache, dirty, with its slot's
        // charge; the others keep theirs.
        assert!(m.swap_counter.set_max_checked(a as usize, 2 * used));
        assert!(m.mem_cgroup_swap_full(a));
        m.activate_free_swap(mapped[0]);
        assert!(m.swap.mapped_slot(mapped[0]).is_none());
        assert!(m.frames.test(mapped[0], crate::page_cgroup::pf::DIRTY));
        assert_eq!(m.stat_total(a, Stat::SwapCached), wb - 1);
        assert_eq!(m.swap_counter.get(a as usize).usage, used - 1);
        m.check().unwrap();
    }

    #[test]
    fn pages_of_an_exiting_task_under_writeback_stay_until_reclaimed() {
        let (mut m, a, pid) = setup(false, 4096);
        reclaim(&mut m, a, 32);
        let wb = m.stat_total(a, Stat::Writeback);
        assert!(wb > 0);
        m.kill_task(pid);
        m.run_until(m.sched.clock + 1_000, |_| false);
        // folio_free_swap() refuses a page under writeback: it stays in the swap cache,
        // charged, with its slot, after its task is gone.
        assert_eq!(m.stat_total(a, Stat::Anon), 0);
        assert_eq!(m.stat_total(a, Stat::SwapCached), wb);
        assert!(m.memory.get(a as usize).usage >= wb);
        assert_eq!(m.swap_counter.get(a as usize).usage, wb);
        m.run_until(m.sched.clock + 2_000_000_000, |_| false);
        assert_eq!(m.stat_total(a, Stat::Writeback), 0);
        // Reclaim frees it and its slot.
        while reclaim(&mut m, a, 32) > 0 {}
        assert_eq!(m.stat_total(a, Stat::SwapCached), 0);
        assert_eq!(m.swap_counter.get(a as usize).usage, 0);
    }

    /// cgroup v1 limit reclaim meets its own writes again and waits for them (case 3 of
    /// shrink_folio_list(): folio_wait_writeback() on a page marked for reclaim), so a task
    /// swapping in a small group on a slow device sleeps instead of running out of retries.
    #[test]
    fn v1_limit_reclaim_waits_on_its_writes_instead_of_oom() {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "256M").unwrap();
        cfg.set("swap", "256M").unwrap();
        cfg.set("cgroup", "v1").unwrap();
        cfg.set("disk_latency", "10ms").unwrap();
        cfg.set("disk_bandwidth", "10M").unwrap();
        // A deep queue: the writer is never held back by the block layer, only by reclaim.
        cfg.set("disk_queue_depth", "4096").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        m.check_invariants = true;
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        m.resize_max_v1(a, 2048, false).unwrap();
        let t = Toucher {
            pages: 8192,
            next: 0,
            vma: None,
            exit: false,
        };
        let pid = m.spawn(a, "toucher".into(), 0, Box::new(t));
        let mut page_waits = 0;
        let mut t = 0;
        while m.task(pid).state == TaskState::Runnable && t < 100_000_000_000 {
            t += 1_000_000;
            m.run_until(t, |_| false);
            if let Some(b) = m.task(pid).block {
                page_waits += matches!(b.wait, crate::vmscan::Wait::PageWriteback(_)) as u32;
            }
        }
        assert_eq!(m.task(pid).state, TaskState::Holding);
        assert_eq!(
            m.memcg(a).events_local[crate::memcontrol::MemcgEvent::OomKill as usize],
            0
        );
        assert!(page_waits > 0, "never waited on a page's writeback");
        assert!(m.stat_total(a, Stat::Pswpout) >= 8192 - 2048);
    }
}
