//! Dirty page accounting and writeback: mm/page-writeback.c (folio_account_dirtied,
//! folio_clear_dirty_for_io, folio_end_writeback) and a flusher thread as fs/fs-writeback.c
//! runs it: every dirty_writeback_interval (5 s) it writes inodes dirtied more than
//! dirty_expire_interval (30 s) ago, everything when dirty pages exceed
//! dirty_background_ratio (10%) of dirtyable memory, and everything when reclaim wakes it.
//!
//! Writes are submitted to the block device; each batch completes by an event, which clears
//! PG_writeback and rotates PG_reclaim pages to the inactive tail
//! (folio_rotate_reclaimable()). Dirty throttling (balance_dirty_pages) is a later addition;
//! the counters are kept now.

use crate::machine::Machine;
use crate::page_cgroup::{pf, Pfn};
use crate::sched::Event;
use crate::stat::Stat;

const DIRTY_WRITEBACK_INTERVAL_NS: u64 = 5_000_000_000;
const DIRTY_EXPIRE_NS: u64 = 30_000_000_000;
const DIRTY_BACKGROUND_RATIO: u64 = 10;
/// Pages per submitted writeback batch.
const WB_BATCH: usize = 256;

#[derive(Default)]
pub struct Writeback {
    /// Batches in flight, by id.
    pub inflight: Vec<Option<Vec<Pfn>>>,
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
        self.sched.push(done, Event::WritebackDone(id));
    }

    /// folio_end_writeback() for a completed batch.
    pub fn writeback_done(&mut self, id: u32) {
        let Some(pages) = self.writeback.inflight[id as usize].take() else {
            return;
        };
        self.writeback.free_ids.push(id);
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
