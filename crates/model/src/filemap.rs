//! The page cache: mm/filemap.c — files map a page index to a resident frame or to a shadow
//! entry (workingset.rs). read() of a missing page allocates, charges it to the reader's memcg
//! (first touch owns it), adds it to the inactive file list and marks it accessed; a second
//! read promotes it (folio_mark_accessed). write() dirties pages (page-writeback.rs cleans
//! them). Reclaim removes clean pages and leaves a shadow entry (`__remove_mapping()`).
//! Truncation (mm/truncate.c) drops pages a folio_batch of 15 at a time, each batch
//! uncharged together when released.
//!
//! Shared read-only file mappings (executables and libraries; mm/filemap.c filemap_fault()
//! and filemap_map_pages(), mm/memory.c): a fault on a missing page reads around it
//! (do_sync_mmap_readahead(): a window of read_ahead_kb centred on the page) and is a major
//! fault; a fault on a cached page is a minor one; both map the resident pages of the 64 KiB
//! around the faulting one (fault_around_bytes), young, as x86 creates PTEs. Accesses through
//! the mapping set the page's young bit, which reclaim harvests (folio_referenced()); pages
//! of a file mapped with VM_EXEC are activated after their first use and kept on the active
//! list while referenced (vmscan.rs).
//!
//! Simplified (docs/FIDELITY.md): a page has one PTE shared by all the file's mappers, so a
//! second process that maps a file already mapped finds its pages mapped (no minor faults of
//! its own) and `referenced_ptes` is never more than 1; when the last mapping of the file
//! goes, every page is unmapped (zap_pte_range(): a young PTE marks its page accessed). The
//! mappings charge no page tables or vm_area_struct; mmap_miss is not kept, so read-around
//! never turns off.

use std::collections::BTreeMap;

use crate::machine::Machine;
use crate::memcontrol::MemcgId;
use crate::page_cgroup::{pf, PageMap, Pfn, MAPPING_FILE_BIT, NO_MAPPING};
use crate::program::{Fault, Pid};
use crate::stat::Stat;

/// Entry tags: a resident page (`PRESENT | pfn`), a shadow entry (bit 63 set, see
/// workingset.rs), or empty (0). `ONDISK` is kept in any state: the page's data exists on
/// disk, so bringing it back costs a read.
const PRESENT: u64 = 1 << 62;
const ONDISK: u64 = 1 << 61;
const SHADOW_TAG: u64 = 1 << 63;
/// PAGEVEC_SIZE: the folios of one folio_batch.
const PAGEVEC_SIZE: usize = 15;

#[derive(Clone, Debug)]
pub struct File {
    pub name: Option<String>,
    pub entries: Vec<u64>,
    /// File size in pages.
    pub size: u64,
    /// Resident pages.
    pub nrpages: u64,
    /// Dirty pages.
    pub nr_dirty: u64,
    /// When the inode was first dirtied (dirtied_when), for the flusher's expiry.
    pub dirtied_when: Option<u64>,
    /// The memcg whose bdi_writeback the inode is attached to (inode->i_wb); 0 until the
    /// inode is first dirtied.
    pub wb: crate::memcontrol::MemcgId,
    /// The obj_cgroup its inode and dentry are charged to (kmem.rs).
    pub inode_objcg: Option<crate::kmem::ObjcgId>,
    /// Windows of asynchronous readahead whose reads may be in flight (readahead.rs).
    pub ra_pending: Vec<crate::readahead::PendingRead>,
    /// Live shared mappings of the file, and how many of them are VM_EXEC.
    pub mappers: u32,
    pub exec_mappers: u32,
}

/// The frame of a resident page-cache entry.
pub(crate) fn resident(e: u64) -> Option<Pfn> {
    (e & PRESENT != 0).then_some((e & 0xffff_ffff) as Pfn)
}

#[derive(Default)]
pub struct Files {
    pub v: Vec<File>,
    pub by_name: BTreeMap<String, u32>,
}

impl Machine {
    /// Open (creating if needed) a named file.
    pub fn file_open(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.files.by_name.get(name) {
            return id;
        }
        let id = self.file_new(Some(name.to_string()));
        self.files.by_name.insert(name.to_string(), id);
        id
    }

    /// Create an unnamed file (O_TMPFILE).
    pub fn file_new(&mut self, name: Option<String>) -> u32 {
        self.files.v.push(File {
            name,
            entries: Vec::new(),
            size: 0,
            nrpages: 0,
            nr_dirty: 0,
            dirtied_when: None,
            wb: 0,
            inode_objcg: None,
            ra_pending: Vec::new(),
            mappers: 0,
            exec_mappers: 0,
        });
        (self.files.v.len() - 1) as u32
    }

    /// ftruncate(): growing adds holes; shrinking drops pages past the end, a folio_batch
    /// of up to PAGEVEC_SIZE (15) at a time as truncate_inode_pages_range() does, each
    /// batch uncharged together and freed when it is released (release_pages()).
    pub fn file_truncate(&mut self, f: u32, new_size: u64) {
        let file = &mut self.files.v[f as usize];
        if new_size >= file.size {
            file.size = new_size;
            if file.entries.len() < new_size as usize {
                file.entries.resize(new_size as usize, 0);
            }
            return;
        }
        let old = file.size;
        file.size = new_size;
        let mut batch = Vec::with_capacity(PAGEVEC_SIZE);
        for idx in new_size..old {
            let e = self.files.v[f as usize].entries[idx as usize];
            if e & PRESENT != 0 {
                let pfn = (e & 0xffff_ffff) as Pfn;
                let memcg = self.file_drop_page(pfn);
                batch.push((pfn, Some(memcg)));
                if batch.len() == PAGEVEC_SIZE {
                    self.free_page_list(&batch);
                    batch.clear();
                }
            }
        }
        self.free_page_list(&batch);
        self.files.v[f as usize].entries.truncate(new_size as usize);
    }

    /// Grow a file to `new_size` pages whose data is on disk and not cached, as a file written
    /// before the caches were dropped (an extracted source tree). Pages already in the file
    /// are left as they are.
    pub fn file_extend_on_disk(&mut self, f: u32, new_size: u64) {
        let old = self.files.v[f as usize].size;
        if new_size <= old {
            return;
        }
        self.file_truncate(f, new_size);
        for e in &mut self.files.v[f as usize].entries[old as usize..new_size as usize] {
            *e = ONDISK;
        }
    }

    /// Drop a resident page from the cache (truncation): no shadow entry. The page is left
    /// for the caller to release, with the memcg it is charged to.
    fn file_drop_page(&mut self, pfn: Pfn) -> MemcgId {
        let m = self.frames.meta[pfn as usize].map;
        let f = (m.mapping & !MAPPING_FILE_BIT) as usize;
        let memcg = self.frames.memcg(pfn);
        // unmap_mapping_range() before the page leaves the cache.
        self.file_unmap_page(pfn, false);
        self.lru_del(pfn);
        if self.frames.test(pfn, pf::DIRTY) {
            self.account_clean(pfn);
        }
        if self.frames.test(pfn, pf::WRITEBACK) {
            // Truncation waits for writeback; the model ends it at once.
            self.end_page_writeback(pfn, false);
        }
        let file = &mut self.files.v[f];
        file.entries[m.index as usize] = 0;
        file.nrpages -= 1;
        self.mod_stat(memcg, Stat::File, -1);
        memcg
    }

    pub fn file_size(&self, f: u32) -> u64 {
        self.files.v[f as usize].size
    }

    /// Get the page at `idx`, bringing it into the cache if needed. `for_write` skips the
    /// read from disk (a whole-page write).
    fn file_get_page(&mut self, pid: Pid, f: u32, idx: u64, for_write: bool) -> Result<Pfn, Fault> {
        let (pfn, needs_read) = self.file_find_or_add(pid, f, idx)?;
        if needs_read && !for_write {
            let pos = crate::blkdev::file_pos(f as usize, idx);
            let ws = self.frames.test(pfn, pf::WORKINGSET);
            self.file_read_wait(pid, &[(pos, crate::config::PAGE_SIZE)], ws);
        }
        Ok(pfn)
    }

    /// The reader waits for a read of `runs` from the file device; `workingset` if the page
    /// it waits for is a refault of the workingset (folio_wait_bit_common()'s memstall).
    pub(crate) fn file_read_wait(&mut self, pid: Pid, runs: &[(u64, u64)], workingset: bool) {
        let now = self.now();
        let wait = self.device.read(now, runs);
        self.spend_wait(wait, crate::psi::Stall::io(workingset));
        self.task_mut(pid).stats.io_wait_ns += wait;
    }

    /// Is page `idx` of the file resident and a refault of the workingset (PG_workingset)?
    pub(crate) fn file_page_workingset(&self, f: u32, idx: u64) -> bool {
        self.files.v[f as usize]
            .entries
            .get(idx as usize)
            .and_then(|&e| resident(e))
            .is_some_and(|pfn| self.frames.test(pfn, pf::WORKINGSET))
    }

    /// The resident page at `idx`, or a new one allocated, charged to the task's memcg and
    /// inserted; the flag says whether its data must be read from disk (a new page of data
    /// on disk).
    pub(crate) fn file_find_or_add(
        &mut self,
        pid: Pid,
        f: u32,
        idx: u64,
    ) -> Result<(Pfn, bool), Fault> {
        let e = self.files.v[f as usize].entries[idx as usize];
        if e & PRESENT != 0 {
            self.spend_cpu(self.cfg.costs.read_hit_ns);
            return Ok(((e & 0xffff_ffff) as Pfn, false));
        }
        self.spend_cpu(self.cfg.costs.minor_fault_ns);
        let memcg = self.task(pid).memcg;
        // If the task dies meanwhile the page is still inserted: it belongs to the file.
        let pfn = self.alloc_charged_page(memcg)?;
        Ok((pfn, self.file_insert(f, idx, pfn, memcg)))
    }

    /// filemap_add_folio(): a new page charged to `memcg` goes in at `idx`, on the inactive
    /// file list. Returns whether its data is on disk (to be read).
    pub(crate) fn file_insert(&mut self, f: u32, idx: u64, pfn: Pfn, memcg: MemcgId) -> bool {
        let e = self.files.v[f as usize].entries[idx as usize];
        debug_assert!(e & PRESENT == 0);
        self.commit_charge(pfn, memcg);
        self.frames.meta[pfn as usize].map = PageMap {
            mapping: f | MAPPING_FILE_BIT,
            index: idx as u32,
        };
        let ondisk = e & ONDISK;
        if ondisk != 0 {
            self.frames.set(pfn, pf::ONDISK);
        }
        if e & SHADOW_TAG != 0 {
            self.workingset_refault(pfn, e & !ONDISK);
        }
        self.mod_stat(memcg, Stat::File, 1);
        self.lru_add(pfn);
        let file = &mut self.files.v[f as usize];
        file.entries[idx as usize] = PRESENT | ondisk | pfn as u64;
        file.nrpages += 1;
        ondisk != 0
    }

    /// A host cache hint for a coming access to page `idx` of file `f`, which changes
    /// nothing in the model. Stage 0 (far ahead) loads the page-cache slot; stage 1 reads the
    /// slot and loads a resident page's frame metadata. A replay that knows its next accesses
    /// (a trace) so hides the two dependent misses of each.
    pub fn prefetch_file_page(&self, f: u32, idx: u64, stage: u8) {
        let Some(file) = self.files.v.get(f as usize) else {
            return;
        };
        let Some(e) = file.entries.get(idx as usize) else {
            return;
        };
        if stage == 0 {
            crate::page_cgroup::prefetch_read(e);
        } else if *e & PRESENT != 0 {
            self.frames.prefetch((*e & 0xffff_ffff) as Pfn);
        }
    }

    /// A host cache hint for the page-cache slot of a file page about to be reclaimed.
    #[inline]
    pub(crate) fn prefetch_mapping_slot(&self, pfn: Pfn) {
        let m = self.frames.get(pfn).map;
        if m.mapping != NO_MAPPING && m.mapping & MAPPING_FILE_BIT != 0 {
            let f = (m.mapping & !MAPPING_FILE_BIT) as usize;
            if let Some(e) = self
                .files
                .v
                .get(f)
                .and_then(|file| file.entries.get(m.index as usize))
            {
                crate::page_cgroup::prefetch_read(e);
            }
        }
    }

    /// Whether page `idx` of `f` is resident.
    pub(crate) fn file_page_present(&self, f: u32, idx: u64) -> bool {
        self.files.v[f as usize].entries[idx as usize] & PRESENT != 0
    }

    /// read() of one page, with the kernel's readahead (readahead.rs). Reads past the end of
    /// the file do nothing.
    pub fn file_read(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        if idx >= self.files.v[f as usize].size {
            return Ok(());
        }
        let pfn = self.filemap_get_page_ra(pid, f, idx)?;
        self.mark_page_accessed(pfn);
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }

    /// write() of one whole page; extends the file.
    pub fn file_write(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        if idx >= self.files.v[f as usize].size {
            self.file_truncate(f, idx + 1);
        }
        let pfn = self.file_get_page(pid, f, idx, true)?;
        self.mark_page_accessed(pfn);
        if !self.frames.test(pfn, pf::DIRTY) {
            self.account_dirty(pfn);
            self.balance_dirty_pages_ratelimited(pid, f);
        }
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }

    /// A shared file mapping of page `idx`, one access to it and its unmapping, as one step
    /// (seed 001's fault benchmark: mmap, `*p = 1` or `x = *p`, munmap). The fault finds or
    /// reads in the page (filemap_fault()), maps it (file_mapped goes up, as
    /// page_add_file_rmap() counts it) and, for a write, dirties it (a shared write fault's
    /// folio_mark_dirty() and balance_dirty_pages_ratelimited()); the munmap drops
    /// file_mapped again. The page is mapped only for that instant, so reclaim never sees
    /// it mapped. A fault past the end of the file is SIGBUS (Fault::Segv).
    pub fn file_fault(&mut self, pid: Pid, f: u32, idx: u64, write: bool) -> Result<(), Fault> {
        if idx >= self.files.v[f as usize].size {
            return Err(Fault::Segv);
        }
        let task_memcg = self.task(pid).memcg;
        self.mod_stat(task_memcg, Stat::Pgfault, 1);
        self.task_mut(pid).stats.minflt += 1;
        // A store of one byte: the rest of the page must be read in, as for a read.
        let pfn = self.file_get_page(pid, f, idx, false)?;
        self.mark_page_accessed(pfn);
        let memcg = self.frames.memcg(pfn);
        self.mod_stat(memcg, Stat::FileMapped, 1);
        if write && !self.frames.test(pfn, pf::DIRTY) {
            self.account_dirty(pfn);
            self.balance_dirty_pages_ratelimited(pid, f);
        }
        // munmap(), in the same step: nothing can move the page meanwhile.
        self.mod_stat(memcg, Stat::FileMapped, -1);
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }

    /// __remove_mapping() for a clean page-cache page: leave a shadow entry. The page keeps
    /// its charge, to the memcg returned; the caller uncharges and frees it
    /// (shrink_folio_list() does both for its whole batch at the end).
    pub fn remove_mapping_file(&mut self, pfn: Pfn, shadow: u64) -> MemcgId {
        let m = self.frames.meta[pfn as usize].map;
        let f = (m.mapping & !MAPPING_FILE_BIT) as usize;
        let memcg = self.frames.memcg(pfn);
        let file = &mut self.files.v[f];
        let ondisk = file.entries[m.index as usize] & ONDISK;
        debug_assert!(shadow & (PRESENT | ONDISK) == 0);
        file.entries[m.index as usize] = shadow | ondisk;
        file.nrpages -= 1;
        self.mod_stat(memcg, Stat::File, -1);
        memcg
    }

    /// Mark a file page's data as present on disk (writeback completed).
    pub fn file_mark_ondisk(&mut self, pfn: Pfn) {
        let m = self.frames.meta[pfn as usize].map;
        let f = (m.mapping & !MAPPING_FILE_BIT) as usize;
        self.files.v[f].entries[m.index as usize] |= ONDISK;
        self.frames.set(pfn, pf::ONDISK);
    }
}

/// fault_around_bytes: 64 KiB, in pages.
pub const FAULT_AROUND_PAGES: u64 = 16;

impl Machine {
    /// mmap() of file `f`, shared and read-only, executable if `exec`.
    pub fn file_mmap(&mut self, pid: Pid, f: u32, exec: bool) {
        let file = &mut self.files.v[f as usize];
        file.mappers += 1;
        file.exec_mappers += exec as u32;
        self.task_mut(pid).file_maps.push((f, exec));
    }

    /// One mapping of `f` goes (munmap() or exit). With the last one, every page of the file
    /// loses its PTE.
    pub(crate) fn file_munmap_shared(&mut self, f: u32, exec: bool) {
        let file = &mut self.files.v[f as usize];
        debug_assert!(file.mappers > 0 && (!exec || file.exec_mappers > 0));
        file.mappers -= 1;
        file.exec_mappers -= exec as u32;
        if file.mappers > 0 {
            return;
        }
        let n = self.files.v[f as usize].entries.len();
        for idx in 0..n {
            if let Some(pfn) = resident(self.files.v[f as usize].entries[idx]) {
                self.file_unmap_page(pfn, true);
            }
        }
    }

    /// Is this page in a VM_EXEC mapping (the vm_flags folio_referenced() returns)?
    pub(crate) fn page_vm_exec(&self, pfn: Pfn) -> bool {
        let m = self.frames.meta[pfn as usize].map.mapping;
        m & MAPPING_FILE_BIT != 0 && self.files.v[(m & !MAPPING_FILE_BIT) as usize].exec_mappers > 0
    }

    /// Map a resident file page (do_set_pte()): young, file_mapped counts it.
    fn file_map_page(&mut self, pfn: Pfn) {
        debug_assert!(!self.frames.test(pfn, pf::MAPPED));
        self.frames.set(pfn, pf::MAPPED | pf::YOUNG);
        let memcg = self.frames.memcg(pfn);
        self.mod_stat(memcg, Stat::FileMapped, 1);
    }

    /// Take a file page out of its mapping (try_to_unmap(), zap_pte_range()). A zap of a
    /// young PTE marks the page accessed; reclaim's unmap has harvested the bit already.
    pub(crate) fn file_unmap_page(&mut self, pfn: Pfn, zap: bool) {
        if !self.frames.test(pfn, pf::MAPPED) {
            return;
        }
        let young = self.frames.test_clear(pfn, pf::YOUNG);
        self.frames.clear(pfn, pf::MAPPED);
        let memcg = self.frames.memcg(pfn);
        self.mod_stat(memcg, Stat::FileMapped, -1);
        if zap && young {
            self.mark_page_accessed(pfn);
        }
    }

    /// A read of page `idx` through a shared mapping of `f`: a hit sets the PTE's young
    /// bit; otherwise a page fault (filemap_fault()), major if the page had to be read.
    pub fn file_map_access(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        if idx >= self.files.v[f as usize].size {
            // Past the end of the file: SIGBUS.
            return Err(Fault::Segv);
        }
        if let Some(pfn) = resident(self.files.v[f as usize].entries[idx as usize]) {
            if self.frames.test(pfn, pf::MAPPED) {
                self.spend_cpu(self.cfg.costs.hit_ns);
                self.frames.set(pfn, pf::YOUNG);
                return Ok(());
            }
        }
        let memcg = self.task(pid).memcg;
        self.mod_stat(memcg, Stat::Pgfault, 1);
        let major = !self.file_page_present(f, idx);
        if major {
            // do_sync_mmap_readahead(): read around the page.
            self.mmap_read_around(pid, f, idx)?;
            self.mod_stat(memcg, Stat::Pgmajfault, 1);
            self.task_mut(pid).stats.majflt += 1;
        } else {
            self.task_mut(pid).stats.minflt += 1;
        }
        let pfn = match resident(self.files.v[f as usize].entries[idx as usize]) {
            Some(pfn) => {
                self.spend_cpu(self.cfg.costs.read_hit_ns);
                self.wait_pending_read(pid, f, idx);
                pfn
            }
            // The read-around could not add it (its allocations fail quietly).
            None => self.file_get_page(pid, f, idx, false)?,
        };
        // filemap_map_pages(): the cached pages of the aligned 64 KiB around it.
        let start = idx - idx % FAULT_AROUND_PAGES;
        let end = (start + FAULT_AROUND_PAGES).min(self.files.v[f as usize].size);
        for i in start..end {
            if let Some(p) = resident(self.files.v[f as usize].entries[i as usize]) {
                if !self.frames.test(p, pf::MAPPED) {
                    self.file_map_page(p);
                }
            }
        }
        debug_assert!(self.frames.test(pfn, pf::MAPPED));
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::MachineConfig;
    use crate::memcontrol::{MemcgId, ROOT_MEMCG};
    use crate::program::{Pid, Program, Step};
    use crate::stat::{lru, Stat};
    use crate::task::{TaskCtx, TaskState};
    use crate::vmscan::ScanControl;
    use crate::Machine;

    /// Maps a file of `pages` on disk, reads each page once through the mapping, holds.
    struct Mapper {
        pages: u64,
        exec: bool,
        next: u64,
    }

    impl Program for Mapper {
        fn name(&self) -> &str {
            "mapper"
        }
        fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
            let f = cx.open("text");
            if self.next == 0 {
                cx.extend_on_disk(f, self.pages);
                cx.mmap_file(f, self.exec);
            }
            let map = crate::task::FileMap {
                file: f.0,
                exec: self.exec,
            };
            while self.next < self.pages {
                if cx.touch_file(map, self.next).is_err() {
                    return Step::Continue;
                }
                self.next += 1;
            }
            Step::Hold
        }
    }

    fn mapped(exec: bool) -> (Machine, MemcgId, Pid) {
        let mut m = Machine::new(MachineConfig::default()).unwrap();
        m.check_invariants = true;
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let p = Mapper {
            pages: 64,
            exec,
            next: 0,
        };
        let pid = m.spawn(a, "mapper".into(), 0, Box::new(p));
        m.run_until(10_000_000_000, |m| m.task(pid).state == TaskState::Holding);
        assert_eq!(m.task(pid).state, TaskState::Holding);
        (m, a, pid)
    }

    #[test]
    fn faults_read_around_and_map_around() {
        let (m, a, pid) = mapped(true);
        // Page 0: a major fault reads pages 0-31 (read-around of 128K centred on it, clipped
        // at the start) and maps 0-15 (fault-around of 64K). Page 16: cached, a minor fault
        // mapping 16-31. Pages 32 and 48: major faults reading 32-47 and 48-63.
        assert_eq!(m.task(pid).stats.majflt, 3);
        assert_eq!(m.task(pid).stats.minflt, 1);
        assert_eq!(m.stat_total(a, Stat::FileMapped), 64);
        assert_eq!(m.stat_total(a, Stat::Pgmajfault), 3);
    }

    #[test]
    fn referenced_executable_pages_are_activated_and_kept_active() {
        for exec in [true, false] {
            let (mut m, a, pid) = mapped(exec);
            assert_eq!(m.stat_total(a, Stat::InactiveFile), 64);
            // One pass over the inactive list: every PTE is young. An executable page is
            // activated at once; another mapped page is only marked referenced.
            let taken = m.stat_total(a, Stat::InactiveFile);
            let mut sc = ScanControl::new(a, 1 << 20, true);
            let mut left = taken;
            while left > 0 {
                let n = left.min(32);
                m.shrink_inactive_list(n, a, &mut sc, lru::INACTIVE_FILE);
                left -= n;
            }
            let active = m.stat_total(a, Stat::ActiveFile);
            assert_eq!(active, if exec { 64 } else { 0 }, "exec {exec}");
            assert_eq!(m.stat_total(a, Stat::FileMapped), 64, "nothing reclaimed");
            if !exec {
                continue;
            }
            // Used again: shrink_active_list() gives them another trip round the list.
            let f = m.files.by_name["text"];
            for i in 0..64 {
                m.file_map_access(pid, f, i).unwrap();
            }
            m.shrink_active_list(64, a, &mut sc, lru::ACTIVE_FILE);
            assert_eq!(m.stat_total(a, Stat::ActiveFile), 64);
            // Not used since: deactivated.
            m.shrink_active_list(64, a, &mut sc, lru::ACTIVE_FILE);
            assert_eq!(m.stat_total(a, Stat::ActiveFile), 0);
            assert_eq!(m.stat_total(a, Stat::InactiveFile), 64);
        }
    }

    #[test]
    fn the_last_unmap_zaps_every_pte() {
        let (mut m, a, pid) = mapped(false);
        m.exit_task(pid, crate::TaskOutcome::Exited(0));
        assert_eq!(m.stat_total(a, Stat::FileMapped), 0);
        // zap_pte_range() marked the young pages accessed: still cached, unmapped.
        assert_eq!(m.stat_total(a, Stat::File), 64);
        m.check().unwrap();
    }
}
