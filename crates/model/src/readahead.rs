//! File readahead: mm/readahead.c's ondemand_readahead() as 6.1 runs it from filemap_read().
//!
//! A read that misses the page cache starts a synchronous window: at the start of a file or
//! right after the last page read, get_init_ra_size() pages (4 for a one-page read), the last
//! `async_size` of them marked PG_readahead; a random read reads only its page. Reading the
//! marked page starts the next window asynchronously, get_next_ra_size() pages (4x, then 2x,
//! up to read_ahead_kb), so a sequential reader keeps a window in flight ahead of it. The
//! pages of a window are allocated with __GFP_NORETRY, charged to the reader's memcg
//! (filemap_add_folio()), and go to the device as one submission of the runs of pages whose
//! data is on disk (holes need no I/O). A reader reaching a page whose asynchronous read is
//! still in flight waits for it (folio_lock() on a page not yet uptodate).
//!
//! The state is the reading task's for the file (each task opens the file once: its
//! file_ra_state). Simplified: a task sees only its own PG_readahead marks; a marked page met
//! out of order starts a fresh window after it (the kernel works the window out from the
//! cache's contents); the mmap fault path (do_sync_mmap_readahead) is not modelled.
//!
//! The PG_readahead flag itself is kept where the kernel's filemap_get_pages() finds it, in
//! the page: a resident page-cache entry carries a mark bit while some task's window marks
//! it (`File::ra_marks` counts the tasks, so a page read in again gets its bit back). A read
//! of a resident page without the bit, with no window of the file in flight, is then a hit
//! that needs neither the task's state nor the pending windows (filemap.rs's fast path); the
//! task's last page read (prev_pos) is noted without a lookup and written to its file's
//! state when that state is next used.

use crate::machine::Machine;
use crate::page_cgroup::Pfn;
use crate::program::{Fault, Pid};

/// Asynchronous windows whose reads may be in flight, per file (the oldest is dropped first,
/// its pages then read as if complete).
const MAX_PENDING: usize = 16;

/// struct file_ra_state, with the PG_readahead mark.
#[derive(Clone, Debug, Default)]
pub struct RaState {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    /// The page marked PG_readahead.
    pub marker: Option<u64>,
    /// The last page read (prev_pos).
    pub prev: Option<u64>,
}

/// The readahead state of each file a task reads, with the last page read kept apart until
/// the state is next used (so a page-cache hit notes prev_pos without a map lookup).
#[derive(Clone, Debug, Default)]
pub struct RaStates {
    map: std::collections::BTreeMap<u32, RaState>,
    /// The last page read, (file, index), not yet written to its file's `prev`.
    last: Option<(u32, u64)>,
}

impl RaStates {
    /// The state for file `f` (created empty on first use), with every read noted.
    pub fn get(&mut self, f: u32) -> &mut RaState {
        match self.last.take() {
            Some((g, i)) if g == f => {
                let ra = self.map.entry(f).or_default();
                ra.prev = Some(i);
                ra
            }
            last => {
                if let Some((g, i)) = last {
                    self.map.entry(g).or_default().prev = Some(i);
                }
                self.map.entry(f).or_default()
            }
        }
    }

    /// Note a read of page `idx` of `f` (prev_pos).
    #[inline]
    pub fn note_read(&mut self, f: u32, idx: u64) {
        if let Some((g, i)) = self.last {
            if g != f {
                self.map.entry(g).or_default().prev = Some(i);
            }
        }
        self.last = Some((f, idx));
    }
}

/// A window read asynchronously: pages [from, to) whose read completes at `until`.
pub type PendingRead = (u64, u64, u64);

/// get_init_ra_size(): the first window for a read of `size` pages.
pub fn init_ra_size(size: u64, max: u64) -> u64 {
    let new = size.max(1).next_power_of_two();
    if new <= max / 32 {
        new * 4
    } else if new <= max / 4 {
        new * 2
    } else {
        max
    }
}

/// get_next_ra_size(): the window after one of `cur` pages.
pub fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl Machine {
    /// filemap_get_pages() for a read of page `idx`: the resident page (waiting for its read
    /// if an asynchronous window still carries it, and starting the next window at a
    /// PG_readahead mark), or a synchronous readahead bringing it in.
    pub(crate) fn filemap_get_page_ra(&mut self, pid: Pid, f: u32, idx: u64) -> Result<Pfn, Fault> {
        let pfn = if self.file_page_present(f, idx) {
            let (pfn, _) = self.file_find_or_add(pid, f, idx)?;
            self.wait_pending_read(pid, f, idx);
            if self.task_mut(pid).ra.get(f).marker == Some(idx) {
                self.ra_set_marker(pid, f, None);
                self.ondemand_readahead(pid, f, idx, true)?;
            }
            pfn
        } else {
            self.ondemand_readahead(pid, f, idx, false)?;
            match crate::filemap::resident(self.files.v[f as usize].entries[idx as usize]) {
                Some(pfn) => pfn,
                // The window's own page could not be added (readahead allocations fail
                // quietly): filemap_create_folio() with the normal allocation.
                None => self.file_get_page_read(pid, f, idx)?,
            }
        };
        self.task_mut(pid).ra.note_read(f, idx);
        Ok(pfn)
    }

    /// The task's open files go away (exit): their readahead state with them, and the
    /// marks it held leave the files' counts (and the entries' bits when no task holds
    /// them any more).
    pub(crate) fn ra_exit(&mut self, pid: Pid) {
        let marked: Vec<u32> = self
            .task(pid)
            .ra
            .map
            .iter()
            .filter(|(_, r)| r.marker.is_some())
            .map(|(&f, _)| f)
            .collect();
        for f in marked {
            self.ra_set_marker(pid, f, None);
        }
        drop(std::mem::take(&mut self.task_mut(pid).ra));
    }

    /// Move the task's PG_readahead mark on file `f` to `mark`, keeping the file's count of
    /// marks and the mark bit of the resident entries they name.
    fn ra_set_marker(&mut self, pid: Pid, f: u32, mark: Option<u64>) {
        let old = std::mem::replace(&mut self.task_mut(pid).ra.get(f).marker, mark);
        if old == mark {
            return;
        }
        let file = &mut self.files.v[f as usize];
        if let Some(o) = old {
            let n = file.ra_marks.get_mut(&o).expect("a mark is counted");
            *n -= 1;
            if *n == 0 {
                file.ra_marks.remove(&o);
                crate::filemap::set_ra_mark(file, o, false);
            }
        }
        if let Some(m) = mark {
            *file.ra_marks.count_mut(m) += 1;
            crate::filemap::set_ra_mark(file, m, true);
        }
    }

    fn file_get_page_read(&mut self, pid: Pid, f: u32, idx: u64) -> Result<Pfn, Fault> {
        let (pfn, needs_read) = self.file_find_or_add(pid, f, idx)?;
        if needs_read {
            let pos = crate::blkdev::file_pos(f as usize, idx);
            let ws = self.frames.test(pfn, crate::page_cgroup::pf::WORKINGSET);
            self.file_read_wait(pid, &[(pos, crate::PAGE_SIZE)], ws);
        }
        Ok(pfn)
    }

    /// folio_lock() on a page an asynchronous window is still reading.
    pub(crate) fn wait_pending_read(&mut self, pid: Pid, f: u32, idx: u64) {
        let now = self.now();
        let pending = &mut self.files.v[f as usize].ra_pending;
        pending.retain(|&(_, _, until)| until > now);
        let Some(until) = pending
            .iter()
            .filter(|&&(a, b, _)| a <= idx && idx < b)
            .map(|&(_, _, u)| u)
            .max()
        else {
            return;
        };
        let wait = until - now;
        let ws = self.file_page_workingset(f, idx);
        self.spend_wait(wait, crate::psi::Stall::io(ws));
        self.task_mut(pid).stats.io_wait_ns += wait;
    }

    /// ondemand_readahead() for a one-page read of `idx`: a synchronous window on a miss
    /// (`hit_marker` false), the next asynchronous window at a PG_readahead mark.
    fn ondemand_readahead(
        &mut self,
        pid: Pid,
        f: u32,
        idx: u64,
        hit_marker: bool,
    ) -> Result<(), Fault> {
        let max = self.ra_pages;
        let file_size = self.files.v[f as usize].size;
        let ra = self.task_mut(pid).ra.get(f);
        if max == 0 {
            // read_ahead_kb 0: the page alone.
            return self.file_get_page_read(pid, f, idx).map(|_| ());
        }
        if hit_marker {
            if idx == ra.start + ra.size - ra.async_size {
                ra.start += ra.size;
                ra.size = next_ra_size(ra.size, max);
            } else {
                // A mark met out of order: a fresh window after it.
                ra.start = idx + 1;
                ra.size = next_ra_size(1, max);
            }
            ra.async_size = ra.size;
        } else {
            let sequential = idx == 0 || ra.prev.is_some_and(|p| idx == p || idx == p + 1);
            if !sequential {
                // A random read: do_page_cache_ra() of the page alone.
                return self.file_get_page_read(pid, f, idx).map(|_| ());
            }
            ra.start = idx;
            ra.size = init_ra_size(1, max);
            ra.async_size = if ra.size > 1 { ra.size - 1 } else { ra.size };
            if ra.size == ra.async_size {
                let add = next_ra_size(ra.size, max);
                if ra.size + add <= max {
                    ra.async_size = add;
                    ra.size += add;
                } else {
                    ra.size = max;
                    ra.async_size = max / 2;
                }
            }
        }
        let (start, size, async_size) = (ra.start, ra.size, ra.async_size);
        let end = (start + size).min(file_size);
        let mark = start + size - async_size;
        let reads = self.ra_add_window(pid, f, start, end, Some(mark));
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        if reads.is_empty() {
            return Ok(());
        }
        let runs = crate::blkdev::page_runs(reads);
        if hit_marker {
            let now = self.now();
            let until = now + self.device.read(now, &runs);
            let pending = &mut self.files.v[f as usize].ra_pending;
            pending.retain(|&(_, _, u)| u > now);
            if pending.len() >= MAX_PENDING {
                pending.remove(0);
            }
            pending.push((start, end, until));
        } else {
            let ws = self.file_page_workingset(f, idx);
            self.file_read_wait(pid, &runs, ws);
        }
        Ok(())
    }

    /// do_sync_mmap_readahead() for a fault on missing page `idx` of a mapping: read-around,
    /// a window of read_ahead_kb centred on the page, read synchronously (the faulting task
    /// waits). The window's PG_readahead mark and mmap_miss are not kept.
    pub(crate) fn mmap_read_around(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        let max = self.ra_pages.max(1);
        let file_size = self.files.v[f as usize].size;
        let start = idx.saturating_sub(max / 2);
        let end = (start + max).min(file_size);
        let reads = self.ra_add_window(pid, f, start, end, None);
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        if !reads.is_empty() {
            let runs = crate::blkdev::page_runs(reads);
            let ws = self.file_page_workingset(f, idx);
            self.file_read_wait(pid, &runs, ws);
        }
        Ok(())
    }

    /// The missing pages of a window `start..end`, added to the cache for the reader's group:
    /// the device positions to read. A failed readahead allocation ends the window; the page
    /// the reader needs is then allocated normally. The page at `mark`, if added, becomes the
    /// task's PG_readahead mark.
    fn ra_add_window(
        &mut self,
        pid: Pid,
        f: u32,
        start: u64,
        end: u64,
        mark: Option<u64>,
    ) -> Vec<u64> {
        let memcg = self.task(pid).memcg;
        let mut reads = Vec::new();
        for i in start..end {
            if self.file_page_present(f, i) {
                continue;
            }
            let Some(ondisk) = self.ra_add_page(f, i, memcg) else {
                break;
            };
            if ondisk {
                reads.push(crate::blkdev::file_pos(f as usize, i));
            }
            if mark == Some(i) {
                self.ra_set_marker(pid, f, Some(i));
            }
        }
        reads
    }

    /// A readahead page: allocated and charged with __GFP_NORETRY (its reclaim does not
    /// sleep, and a charge over memory.high is the reader's to pay back on its return to user
    /// space), and inserted. None when the allocation fails, which ends the window.
    /// Some(true) when its data must be read.
    fn ra_add_page(&mut self, f: u32, idx: u64, memcg: crate::MemcgId) -> Option<bool> {
        // The allocation, charge and page-cache insertion a miss costs, paid here ahead.
        self.spend_cpu(self.cfg.costs.minor_fault_ns);
        self.gfp_noretry = true;
        let got = self
            .xa_prepay(f, idx, memcg)
            .map_err(crate::program::Fault::from)
            .and_then(|()| self.alloc_charged_page(memcg));
        self.gfp_noretry = false;
        let ondisk = got.map(|pfn| self.file_insert(f, idx, pfn, memcg));
        self.kmem_settle_prepaid(crate::kmem::Prepaid::Nodes);
        ondisk.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_grow_as_the_kernel_sizes_them() {
        // read_ahead_kb 128: 32 pages.
        assert_eq!(init_ra_size(1, 32), 4);
        assert_eq!(init_ra_size(8, 32), 16);
        assert_eq!(init_ra_size(16, 32), 32);
        assert_eq!(next_ra_size(4, 32), 8);
        assert_eq!(next_ra_size(8, 32), 16);
        assert_eq!(next_ra_size(16, 32), 32);
        assert_eq!(next_ra_size(32, 32), 32);
        assert_eq!(next_ra_size(1, 32), 4);
    }

    use crate::config::MachineConfig;
    use crate::memcontrol::ROOT_MEMCG;
    use crate::program::{Program, Step};
    use crate::task::{TaskCtx, TaskState};
    use crate::Machine;

    /// Reads `pages` of a cold file of that size, sequentially or with a stride, then holds
    /// (its open file, and so its readahead state, stays until it is killed).
    struct Reader {
        pages: u64,
        stride: u64,
        next: u64,
    }

    impl Program for Reader {
        fn name(&self) -> &str {
            "reader"
        }
        fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
            let f = cx.open("data");
            if self.next == 0 {
                cx.extend_on_disk(f, self.pages * self.stride);
            }
            while self.next < self.pages && cx.has_time() {
                if cx.read(f, self.next * self.stride).is_err() {
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

    fn read(stride: u64, pages: u64) -> Machine {
        let mut m = Machine::new(MachineConfig::default()).unwrap();
        m.check_invariants = true;
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let r = Reader {
            pages,
            stride,
            next: 0,
        };
        let pid = m.spawn(a, "reader".into(), 0, Box::new(r));
        m.run_until(100_000_000_000, |m| {
            m.task(pid).state != TaskState::Runnable
        });
        assert_eq!(m.task(pid).state, TaskState::Holding);
        m
    }

    /// Kill every task: their readahead marks go with their open files.
    fn kill_all(m: &mut Machine) {
        for t in 0..m.tasks.len() {
            let pid = m.tasks[t].pid;
            m.kill_task(pid);
        }
        m.run_until(m.now() + 1_000_000_000, |m| {
            m.tasks
                .iter()
                .all(|t| matches!(t.state, TaskState::Exited(_)))
        });
    }

    /// The PG_readahead bits of the resident pages are the marks of the tasks' windows.
    fn assert_marks_are_the_windows(m: &mut Machine) {
        let mut want: std::collections::BTreeMap<(u32, u64), u32> = Default::default();
        for t in 0..m.tasks.len() {
            let pid = m.tasks[t].pid;
            for f in 0..m.files.v.len() as u32 {
                if let Some(i) = m.task_mut(pid).ra.get(f).marker {
                    *want.entry((f, i)).or_default() += 1;
                }
            }
        }
        let mut got: std::collections::BTreeMap<(u32, u64), u32> = Default::default();
        for (f, file) in m.files.v.iter().enumerate() {
            for (&i, &n) in file.ra_marks.iter() {
                got.insert((f as u32, i), n);
            }
            for i in 0..file.entries.len() as u64 {
                let present = crate::filemap::resident(file.entries[i as usize]).is_some();
                assert_eq!(
                    crate::filemap::ra_marked(file, i),
                    present && file.ra_marks.contains_key(&i),
                    "file {f} page {i}"
                );
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn readahead_marks_are_kept_in_the_pages() {
        let mut m = read(1, 4096);
        assert_marks_are_the_windows(&mut m);
        // The window of the read at index 0 marks page 1, which this reader never reads.
        let mut m = read(7, 512);
        assert_eq!(m.files.v[0].ra_marks.get(&1), Some(&1));
        assert!(crate::filemap::ra_marked(&m.files.v[0], 1));
        assert_marks_are_the_windows(&mut m);
        // Its exit takes the mark off the page.
        kill_all(&mut m);
        assert!(m.files.v[0].ra_marks.is_empty());
        assert!(!crate::filemap::ra_marked(&m.files.v[0], 1));
        assert_marks_are_the_windows(&mut m);
        let mut m = read(3, 2048);
        assert_marks_are_the_windows(&mut m);
    }

    #[test]
    fn a_sequential_reader_reads_in_growing_windows() {
        let m = read(1, 4096);
        // Everything read once, ahead of the reader: 4 + 8 + 16 pages, then 32 a time.
        assert_eq!(m.device.bytes_read, 4096 * crate::PAGE_SIZE);
        assert_eq!(m.global_stat(crate::Stat::File), 4096);
        assert_eq!(m.device.nr_reads, 3 + (4096 - 28_u64).div_ceil(32));
    }

    #[test]
    fn a_random_reader_reads_its_pages_alone() {
        let m = read(7, 512);
        // A read at index 0 counts as sequential: its window of 4 brings 3 more pages.
        assert_eq!(m.device.bytes_read, (512 + 3) * crate::PAGE_SIZE);
        assert_eq!(m.global_stat(crate::Stat::File), 512 + 3);
        assert_eq!(m.device.nr_reads, 512);
    }

    #[test]
    fn readahead_saves_the_sequential_reader_latency() {
        // 4096 sequential pages at 100 us + 8 us each would wait 0.44 s page by page; in
        // windows of 32 the latency is paid once a window and the next window is read
        // while the reader copies.
        let m = read(1, 4096);
        let pid = m.tasks[0].pid;
        let wait = m.task(pid).stats.io_wait_ns;
        assert!(wait < 100_000_000, "waited {wait} ns");
        let m = read(7, 512);
        let wait = m.task(m.tasks[0].pid).stats.io_wait_ns;
        assert!(wait >= 512 * 100_000, "waited {wait} ns");
    }
}
