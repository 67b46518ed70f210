//! Dirty page accounting and writeback: mm/page-writeback.c (folio_account_dirtied,
//! folio_clear_dirty_for_io, folio_end_writeback) and a flusher thread as fs/fs-writeback.c
//! runs it: every dirty_writeback_interval (5 s) it writes inodes dirtied more than
//! dirty_expire_interval (30 s) ago, everything when dirty pages exceed
//! dirty_background_ratio (10%) of dirtyable memory, and everything when reclaim wakes it.
//!
//! Writes are submitted to the block device; each batch completes by an event, which clears
//! PG_writeback and rotates PG_reclaim pages to the inactive tail
//! (folio_rotate_reclaimable()).
//!
//! Dirty throttling: `balance_dirty_pages()` of the global domain (the IO-less throttling of
//! 3.2+): below the freerun ceiling ((dirty_thresh + background_thresh) / 2 of dirtyable
//! memory, vm.dirty_ratio 20 and dirty_background_ratio 10) a writer runs free and polls
//! again after about sqrt(thresh − dirty) pages; above it, it kicks background writeback and
//! sleeps so that it dirties at `write bandwidth × pos_ratio`, the cubic control line that is
//! 1 at the setpoint halfway between freerun and the limit, 2 at freerun and 0 at the limit,
//! each sleep at most wb_max_pause (about 1/8 s of the device's work, ≤ 200 ms), with credit
//! for the time since the last pause. Simplified (docs/FIDELITY.md): the write bandwidth and
//! the dirty ratelimit are the device's configured bandwidth, not estimates; no per-wb share
//! (one device); no memcg domain (cgroup writeback is v2 and the per-memcg dirty limits of
//! seed 001 come later); the dirty limit does not decay (limit = thresh).

use crate::machine::Machine;
use crate::page_cgroup::{pf, Pfn};
use crate::sched::Event;
use crate::stat::Stat;

const DIRTY_WRITEBACK_INTERVAL_NS: u64 = 5_000_000_000;
const DIRTY_EXPIRE_NS: u64 = 30_000_000_000;
const DIRTY_BACKGROUND_RATIO: u64 = 10;
/// vm.dirty_ratio.
const VM_DIRTY_RATIO: u64 = 20;
/// MAX_PAUSE: the longest dirty-throttling sleep (HZ / 5).
const MAX_PAUSE_NS: u64 = 200_000_000;
/// DIRTY_POLL_THRESH in pages (128K): the least a writer dirties between two pauses.
const DIRTY_POLL_THRESH: u64 = 32;
/// RATELIMIT_CALC_SHIFT: fixed point of pos_ratio.
const RATELIMIT_CALC_SHIFT: u32 = 10;
const NS_PER_SEC: u64 = 1_000_000_000;

/// A task's dirty-throttling state.
#[derive(Clone, Copy, Debug)]
pub struct TaskDirty {
    /// Pages dirtied since the last balance.
    pub nr_dirtied: u64,
    /// Pages to dirty before the next balance.
    pub nr_dirtied_pause: u64,
    /// When the last pause ended (the clock that credits think time).
    pub paused_when: u64,
}

impl TaskDirty {
    pub fn new(now: u64) -> TaskDirty {
        TaskDirty {
            nr_dirtied: 0,
            nr_dirtied_pause: DIRTY_POLL_THRESH,
            paused_when: now,
        }
    }
}

/// dirty_poll_interval(): about sqrt(thresh − dirty) pages.
fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() >> 1)
    } else {
        1
    }
}

/// pos_ratio_polynom() of the global domain: 1.0 (1024) at the setpoint, 2.0 at freerun
/// and below, 0 at the limit and above.
pub fn pos_ratio(setpoint: u64, dirty: u64, limit: u64) -> u64 {
    if dirty >= limit {
        return 0;
    }
    let one = 1i128 << RATELIMIT_CALC_SHIFT;
    let x = ((setpoint as i128 - dirty as i128) << RATELIMIT_CALC_SHIFT)
        / ((limit as i128 - setpoint as i128) | 1);
    let cube = (((x * x) >> RATELIMIT_CALC_SHIFT) * x) >> RATELIMIT_CALC_SHIFT;
    (one + cube).clamp(0, 2 * one) as u64
}
/// Pages per submitted writeback batch.
const WB_BATCH: usize = 256;

#[derive(Default)]
pub struct Writeback {
    /// Batches in flight, by id.
    pub inflight: Vec<Option<Vec<Pfn>>>,
    /// How many of them (writeback_in_progress()).
    pub inflight_batches: usize,
    pub free_ids: Vec<u32>,
    /// The flusher has been asked to write everything.
    pub kicked: bool,
}

impl Machine {
    pub(crate) fn writeback_init(&mut self) {
        self.sched.push(DIRTY_WRITEBACK_INTERVAL_NS, Event::Flusher);
    }

    /// folio_account_dirtied().
    pub fn account_dirty(&mut self, pfn: Pfn) {
        self.frames.set(pfn, pf::DIRTY);
        let memcg = self.frames.memcg(pfn);
        self.mod_stat(memcg, Stat::FileDirty, 1);
        let m = self.frames.map[pfn as usize];
        let f = (m.mapping & !crate::page_cgroup::MAPPING_FILE_BIT) as usize;
        let now = self.now();
        let file = &mut self.files.v[f];
        file.nr_dirty += 1;
        if file.dirtied_when.is_none() {
            file.dirtied_when = Some(now);
        }
    }

    /// The dirty bit goes away without writeback (truncation) or for IO.
    pub fn account_clean(&mut self, pfn: Pfn) {
        self.frames.clear(pfn, pf::DIRTY);
        let memcg = self.frames.memcg(pfn);
        self.mod_stat(memcg, Stat::FileDirty, -1);
        let m = self.frames.map[pfn as usize];
        let f = (m.mapping & !crate::page_cgroup::MAPPING_FILE_BIT) as usize;
        let file = &mut self.files.v[f];
        file.nr_dirty -= 1;
        if file.nr_dirty == 0 {
            file.dirtied_when = None;
        }
    }

    /// global_dirtyable_memory(): free pages above the reserve plus the file LRUs.
    pub fn global_dirtyable_memory(&self) -> u64 {
        self.nr_free_pages().saturating_sub(self.wmark.high)
            + self.global_stat(Stat::ActiveFile)
            + self.global_stat(Stat::InactiveFile)
            + 1
    }

    /// domain_dirty_limits() of the global domain: (thresh, bg_thresh) in pages.
    pub fn global_dirty_limits(&self) -> (u64, u64) {
        let avail = self.global_dirtyable_memory();
        let page = crate::config::PAGE_SIZE;
        let ratio = VM_DIRTY_RATIO * page / 100;
        let bg_ratio = DIRTY_BACKGROUND_RATIO * page / 100;
        let thresh = ratio * avail / page;
        let mut bg = bg_ratio * avail / page;
        if bg >= thresh {
            bg = thresh / 2;
        }
        (thresh, bg)
    }

    /// balance_dirty_pages_ratelimited(): called after `pid` dirtied a page.
    pub fn balance_dirty_pages_ratelimited(&mut self, pid: crate::program::Pid) {
        let d = &mut self.task_mut(pid).dirty;
        d.nr_dirtied += 1;
        if d.nr_dirtied >= d.nr_dirtied_pause {
            self.balance_dirty_pages(pid);
        }
    }

    /// balance_dirty_pages() of the global domain: sleep the writer in virtual time. The
    /// kernel loops while the writer is past the limit; here one pass sleeps at most
    /// max_pause and the writer comes back after its next page (writeback completes only
    /// between the writer's steps).
    fn balance_dirty_pages(&mut self, pid: crate::program::Pid) {
        let bw = (self.device.bandwidth_bps() / crate::config::PAGE_SIZE).max(1);
        let nr_dirty = self.global_stat(Stat::FileDirty);
        let dirty = nr_dirty + self.global_stat(Stat::Writeback);
        let (thresh, bg_thresh) = self.global_dirty_limits();
        let writeback_idle = self.writeback.inflight_batches == 0;
        if nr_dirty > bg_thresh && writeback_idle {
            self.wakeup_flusher();
        }
        let freerun = (thresh + bg_thresh) / 2;
        let now = self.now();
        if dirty <= freerun {
            let d = &mut self.task_mut(pid).dirty;
            d.nr_dirtied_pause = dirty_poll_interval(dirty, thresh);
            d.paused_when = now;
            d.nr_dirtied = 0;
            return;
        }
        if writeback_idle {
            self.wakeup_flusher();
        }
        let limit = thresh.max(freerun + 1);
        let setpoint = (freerun + limit) / 2;
        let pos = pos_ratio(setpoint, dirty, limit);
        let task_ratelimit = (bw * pos) >> RATELIMIT_CALC_SHIFT;
        // wb_max_pause(): about 1/8 s worth of the device's work, at most MAX_PAUSE.
        let jiffy = NS_PER_SEC / crate::memcontrol::HZ;
        let max_pause = ((dirty / (1 + bw / 128) + 1) * jiffy).min(MAX_PAUSE_NS);
        let next_pause = if task_ratelimit == 0 {
            1
        } else {
            (task_ratelimit / 100).max(DIRTY_POLL_THRESH)
        };
        let d = self.task(pid).dirty;
        let pause = if let Some(period) = (d.nr_dirtied * NS_PER_SEC).checked_div(task_ratelimit) {
            let since = now.saturating_sub(d.paused_when);
            if period <= since {
                // Thinking (or waiting elsewhere) paid for it: no sleep.
                let d = &mut self.task_mut(pid).dirty;
                if since - period > NS_PER_SEC {
                    d.paused_when = now;
                } else {
                    d.paused_when += period;
                }
                d.nr_dirtied = 0;
                d.nr_dirtied_pause = next_pause;
                return;
            }
            (period - since).min(max_pause)
        } else {
            max_pause
        };
        self.spend_wait(pause);
        let t = self.task_mut(pid);
        t.stats.io_wait_ns += pause;
        t.dirty.paused_when = now + pause;
        t.dirty.nr_dirtied = 0;
        t.dirty.nr_dirtied_pause = next_pause;
    }

    /// Ask the flusher to write back everything now (wakeup_flusher_threads()).
    pub fn wakeup_flusher(&mut self) {
        if !self.writeback.kicked {
            self.writeback.kicked = true;
            let now = self.now();
            self.sched.push(now, Event::FlusherKick);
        }
    }

    /// The flusher's work: write back expired inodes, or all when over the background
    /// threshold or kicked.
    pub fn flusher_run(&mut self, periodic: bool) {
        let now = self.sched.clock;
        if periodic {
            self.sched
                .push(now + DIRTY_WRITEBACK_INTERVAL_NS, Event::Flusher);
        }
        let dirty = self.global_stat(Stat::FileDirty);
        if dirty == 0 {
            self.writeback.kicked = false;
            return;
        }
        let dirtyable = self.nr_free_pages()
            + self.global_stat(Stat::InactiveFile)
            + self.global_stat(Stat::ActiveFile);
        let all = self.writeback.kicked || dirty * 100 > dirtyable * DIRTY_BACKGROUND_RATIO;
        self.writeback.kicked = false;
        let mut batch: Vec<Pfn> = Vec::new();
        for f in 0..self.files.v.len() {
            let file = &self.files.v[f];
            let Some(when) = file.dirtied_when else {
                continue;
            };
            if !all && now < when + DIRTY_EXPIRE_NS {
                continue;
            }
            for idx in 0..self.files.v[f].entries.len() {
                let e = self.files.v[f].entries[idx];
                if e & (1 << 62) == 0 {
                    continue;
                }
                let pfn = (e & 0xffff_ffff) as Pfn;
                if !self.frames.test(pfn, pf::DIRTY) || self.frames.test(pfn, pf::WRITEBACK) {
                    continue;
                }
                // folio_clear_dirty_for_io() + folio_start_writeback()
                self.account_clean(pfn);
                self.frames.set(pfn, pf::WRITEBACK);
                let memcg = self.frames.memcg(pfn);
                self.mod_stat(memcg, Stat::Writeback, 1);
                batch.push(pfn);
                if batch.len() >= WB_BATCH {
                    self.submit_writeback(std::mem::take(&mut batch));
                }
            }
        }
        if !batch.is_empty() {
            self.submit_writeback(batch);
        }
    }

    fn submit_writeback(&mut self, pages: Vec<Pfn>) {
        let now = self.sched.clock;
        let done = self
            .device
            .submit(now, pages.len() as u64 * crate::config::PAGE_SIZE);
        let id = match self.writeback.free_ids.pop() {
            Some(id) => {
                self.writeback.inflight[id as usize] = Some(pages);
                id
            }
            None => {
                self.writeback.inflight.push(Some(pages));
                (self.writeback.inflight.len() - 1) as u32
            }
        };
        self.writeback.inflight_batches += 1;
        self.sched.push(done, Event::WritebackDone(id));
    }

    /// folio_end_writeback() for a completed batch.
    pub fn writeback_done(&mut self, id: u32) {
        let Some(pages) = self.writeback.inflight[id as usize].take() else {
            return;
        };
        self.writeback.free_ids.push(id);
        self.writeback.inflight_batches -= 1;
        for pfn in pages {
            // The page may have been truncated (freed) meanwhile.
            if !self.frames.test(pfn, pf::WRITEBACK) {
                continue;
            }
            self.frames.clear(pfn, pf::WRITEBACK);
            let memcg = self.frames.memcg(pfn);
            self.mod_stat(memcg, Stat::Writeback, -1);
            self.file_mark_ondisk(pfn);
            if self.frames.test_clear(pfn, pf::RECLAIM) {
                self.lru_rotate_to_tail(pfn);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::MachineConfig;
    use crate::program::{Program, Step};
    use crate::stat::Stat;
    use crate::task::{FileId, TaskCtx};
    use crate::{Machine, ROOT_MEMCG};

    #[test]
    fn the_control_line_is_cubic_around_the_setpoint() {
        use super::pos_ratio;
        // freerun 1000, limit 2000, setpoint 1500; the divisor is (limit - setpoint) | 1
        // as in the kernel, so the end points fall just inside 2.0 and 0.
        assert_eq!(pos_ratio(1500, 1500, 2000), 1024);
        assert_eq!(pos_ratio(1500, 1000, 2000), 2039);
        assert_eq!(pos_ratio(1500, 500, 2000), 2048, "clamped at 2.0");
        assert_eq!(pos_ratio(1500, 2000, 2000), 0);
        // Halfway to the limit: about 1 - 0.5^3.
        assert_eq!(pos_ratio(1500, 1750, 2000), 897);
    }

    /// Writes `pages` pages of a named file, then holds.
    struct Writer {
        pages: u64,
        next: u64,
        file: Option<FileId>,
    }

    impl Program for Writer {
        fn name(&self) -> &str {
            "writer"
        }
        fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
            let f = *self.file.get_or_insert_with(|| cx.open("data"));
            while self.next < self.pages && cx.has_time() {
                if cx.write(f, self.next).is_err() {
                    return Step::Continue;
                }
                self.next += 1;
            }
            if self.next < self.pages {
                Step::Continue
            } else {
                Step::Hold
            }
        }
    }

    #[test]
    fn a_writer_is_paced_to_the_device_below_the_dirty_limit() {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "256M").unwrap();
        cfg.set("disk_bandwidth", "50M").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        // 512M written: twice the RAM.
        let w = Writer {
            pages: 131_072,
            next: 0,
            file: None,
        };
        let pid = m.spawn(a, "writer".into(), 0, Box::new(w));
        let mut peak = 0;
        let mut t = 0;
        while m.task(pid).state == crate::task::TaskState::Runnable && t < 100_000_000_000 {
            t += 100_000_000;
            m.run_until(t, |_| false);
            let dirty = m.global_stat(Stat::FileDirty) + m.global_stat(Stat::Writeback);
            let (thresh, _) = m.global_dirty_limits();
            assert!(
                dirty <= thresh + 64,
                "dirty {dirty} over the limit {thresh}"
            );
            peak = peak.max(dirty);
        }
        assert!(m.task(pid).state != crate::task::TaskState::Runnable);
        // Paced to the device: 512M at 50M/s takes about 10 s, less the dirty pages that
        // were still being written at the end.
        let secs = t as f64 / 1e9;
        assert!((7.0..12.0).contains(&secs), "took {secs} s");
        assert!(m.task(pid).stats.io_wait_ns > 5_000_000_000);
        // The writer ran past freerun: dirty pages reached well above the background ratio.
        let (thresh, bg) = m.global_dirty_limits();
        assert!(
            peak > bg && peak <= thresh + 64,
            "peak {peak}, bg {bg}, thresh {thresh}"
        );
    }

    #[test]
    fn dirty_pages_are_written_back_and_become_reclaimable() {
        let mut m = Machine::new(MachineConfig::default()).unwrap();
        m.check_invariants = true;
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let w = Writer {
            pages: 1000,
            next: 0,
            file: None,
        };
        m.spawn(a, "writer".into(), 0, Box::new(w));
        m.run_until(1_000_000_000, |_| false);
        // Written, dirty, not yet old enough for the flusher (30 s) nor over 10%.
        assert_eq!(m.stat_total(a, Stat::FileDirty), 1000);
        assert_eq!(m.stat_total(a, Stat::File), 1000);
        // Dirty pages cannot be reclaimed: reclaim skips them and marks them for rotation.
        assert_eq!(m.try_to_free_mem_cgroup_pages(a, 100, true, false, None), 0);
        // After the expiry interval the flusher writes them; the device completes them.
        m.run_until(40_000_000_000, |_| false);
        assert_eq!(m.stat_total(a, Stat::FileDirty), 0);
        assert_eq!(m.stat_total(a, Stat::Writeback), 0);
        assert!(m.device.bytes_written >= 1000 * 4096);
        // Now clean, they can be reclaimed.
        let freed = m.try_to_free_mem_cgroup_pages(a, 1000, true, false, None);
        assert!(freed >= 900, "freed {freed}");
    }
}
