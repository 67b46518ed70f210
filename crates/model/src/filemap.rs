//! The page cache: mm/filemap.c — files map a page index to a resident frame or to a shadow
//! entry (workingset.rs). read() of a missing page allocates, charges it to the reader's memcg
//! (first touch owns it), adds it to the inactive file list and marks it accessed; a second
//! read promotes it (folio_mark_accessed). write() dirties pages (page-writeback.rs cleans
//! them). Reclaim removes clean pages and leaves a shadow entry (`__remove_mapping()`).
//! Truncation (mm/truncate.c) drops pages a folio_batch of 15 at a time, each batch
//! uncharged together when released.
//!
//! The kernel memory of the cache (charged through kmem.rs): each file's xarray keeps its
//! nodes (`XaNodes`: one per 64 slots holding a page or a shadow entry, and the nodes above
//! them), allocated when an entry goes into an empty range and freed when the range empties
//! (truncation, or the shadow-node shrinker dropping a leaf's shadow entries); a page written
//! (write(), or a write fault) carries a buffer head until it leaves the cache.
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

use crate::kmem::ObjcgId;
use crate::machine::Machine;
use crate::memcontrol::MemcgId;
use crate::page_cgroup::{pf, PageMap, Pfn, MAPPING_FILE_BIT, NO_MAPPING};
use crate::program::{Fault, Pid};
use crate::stat::Stat;

/// Entry tags: a resident page (`PRESENT | pfn`), a shadow entry (bit 63 set, see
/// workingset.rs), or empty (0). `ONDISK` is kept in any state: the page's data exists on
/// disk, so bringing it back costs a read.
pub(crate) const PRESENT: u64 = 1 << 62;
const ONDISK: u64 = 1 << 61;
const SHADOW_TAG: u64 = 1 << 63;
/// A resident page with buffer heads attached (PG_private): bit 60, free in a present entry.
const BUFFERS: u64 = 1 << 60;
/// A resident page some reader's readahead window marks (PG_readahead): bit 59, free in a
/// present entry, set while `File::ra_marks` counts the index (readahead.rs).
const RA_MARK: u64 = 1 << 59;
/// PAGEVEC_SIZE: the folios of one folio_batch.
pub(crate) const PAGEVEC_SIZE: usize = 15;

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
    /// The nodes of the file's xarray (`i_pages`), charged as kernel memory.
    pub xa: XaNodes,
    /// The xarray's dirty and writeback marks, which writeback searches (xarray_marks.rs).
    pub marks: crate::xarray_marks::XaMarks,
    /// Windows of asynchronous readahead whose reads may be in flight (readahead.rs).
    pub ra_pending: Vec<crate::readahead::PendingRead>,
    /// The pages tasks' readahead windows mark (PG_readahead), with how many tasks mark
    /// each; a resident one carries `RA_MARK` in its entry.
    pub ra_marks: RaMarks,
    /// Live shared mappings of the file, and how many of them are VM_EXEC.
    pub mappers: u32,
    pub exec_mappers: u32,
    /// The tmpfs mount of a shmem file (shmem.rs); None for a file of the disk filesystem.
    pub shmem: Option<u32>,
    /// A shmem file's swapped-out pages (info->swapped).
    pub swapped: u64,
    /// The task whose RSS counts the file's mapped shmem pages: its first mapper.
    pub rss_owner: Option<Pid>,
    /// The madvise() advice about huge pages of the file's shared mappings (VM_HUGEPAGE,
    /// VM_NOHUGEPAGE), which shmem faults read (shmem.rs).
    pub huge_advice: crate::huge_memory::HugeAdvice,
}

/// The pages of a file that tasks' readahead windows mark, with how many tasks mark each,
/// in index order. Most files carry one mark or none (one reader at a time; an exiting
/// reader's marks go with its open files, readahead.rs `ra_exit()`), so one is held in place
/// and a map is allocated only for a second: a map's first node is 144 bytes.
#[derive(Clone, Debug, Default)]
pub enum RaMarks {
    #[default]
    Empty,
    One(u64, u32),
    Many(BTreeMap<u64, u32>),
}

impl RaMarks {
    #[inline]
    pub fn is_empty(&self) -> bool {
        matches!(self, RaMarks::Empty)
    }

    #[inline]
    pub fn contains_key(&self, idx: &u64) -> bool {
        self.get(idx).is_some()
    }

    pub fn get(&self, idx: &u64) -> Option<&u32> {
        match self {
            RaMarks::Empty => None,
            RaMarks::One(i, n) => (i == idx).then_some(n),
            RaMarks::Many(m) => m.get(idx),
        }
    }

    pub fn get_mut(&mut self, idx: &u64) -> Option<&mut u32> {
        match self {
            RaMarks::Empty => None,
            RaMarks::One(i, n) => (i == idx).then_some(n),
            RaMarks::Many(m) => m.get_mut(idx),
        }
    }

    /// The count of `idx`, inserted as 0 if it has none.
    pub fn count_mut(&mut self, idx: u64) -> &mut u32 {
        match self {
            RaMarks::Empty => *self = RaMarks::One(idx, 0),
            RaMarks::One(i, n) if *i != idx => {
                *self = RaMarks::Many(BTreeMap::from([(*i, *n), (idx, 0)]));
            }
            _ => {}
        }
        match self {
            RaMarks::Empty => unreachable!("a mark was just inserted"),
            RaMarks::One(_, n) => n,
            RaMarks::Many(m) => m.entry(idx).or_default(),
        }
    }

    /// Forget `idx`; a map left with one mark goes back to holding it in place.
    pub fn remove(&mut self, idx: &u64) {
        match self {
            RaMarks::Empty => {}
            RaMarks::One(i, _) => {
                if i == idx {
                    *self = RaMarks::Empty;
                }
            }
            RaMarks::Many(m) => {
                m.remove(idx);
                if m.len() <= 1 {
                    *self = match m.pop_first() {
                        Some((i, n)) => RaMarks::One(i, n),
                        None => RaMarks::Empty,
                    };
                }
            }
        }
    }

    /// Every marked index and its count, in index order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&u64, &u32)> + '_> {
        match self {
            RaMarks::Empty => Box::new(std::iter::empty()),
            RaMarks::One(i, n) => Box::new(std::iter::once((i, n))),
            RaMarks::Many(m) => Box::new(m.iter()),
        }
    }
}

/// Set or clear the PG_readahead bit of page `idx` of `file`, if it is resident.
pub(crate) fn set_ra_mark(file: &mut File, idx: u64, on: bool) {
    if let Some(e) = file.entries.get_mut(idx as usize) {
        if *e & PRESENT != 0 {
            if on {
                *e |= RA_MARK;
            } else {
                *e &= !RA_MARK;
            }
        }
    }
}

/// Whether page `idx` of `file` is resident and carries the PG_readahead bit.
impl Machine {
    /// migrate_folio() of a page-cache page: the entry of file `f` at `idx` holds `new` in
    /// place of `old`, its tags (on disk, buffers, readahead mark) kept.
    pub(crate) fn file_page_migrate(&mut self, f: usize, idx: u32, old: Pfn, new: Pfn) {
        let e = &mut self.files.v[f].entries[idx as usize];
        debug_assert_eq!(*e & (PRESENT | 0xffff_ffff), PRESENT | old as u64);
        *e = (*e & !0xffff_ffff) | new as u64;
    }

    /// Whether a page-cache page may be moved now: not while a read of its file is in
    /// flight (the kernel's page is locked until the read ends, and compaction waits for
    /// it or, asynchronous, skips it).
    pub(crate) fn file_page_settled(&self, f: usize) -> bool {
        self.files.v[f].ra_pending.is_empty()
    }
}

#[cfg(test)]
pub(crate) fn ra_marked(file: &File, idx: u64) -> bool {
    file.entries
        .get(idx as usize)
        .is_some_and(|&e| e & (PRESENT | RA_MARK) == PRESENT | RA_MARK)
}

/// The frame of a resident page-cache entry.
pub(crate) fn resident(e: u64) -> Option<Pfn> {
    (e & PRESENT != 0).then_some((e & 0xffff_ffff) as Pfn)
}

/// XA_CHUNK_SHIFT: a node of a file's xarray has 64 slots.
pub const XA_CHUNK_SHIFT: u32 = 6;
/// Levels of nodes kept: 64^6 slots, more than any file the model holds.
pub const XA_LEVELS: usize = 6;
/// `XaNodes::owner` of a node that does not exist.
pub(crate) const NO_NODE: ObjcgId = ObjcgId::MAX;
/// `XaNodes::owner` of a node that exists but could not be charged (no frame was free).
pub(crate) const UNCHARGED_NODE: ObjcgId = ObjcgId::MAX - 1;

/// The nodes of a file's page-cache xarray (lib/xarray.c): at each level, a node of 64 slots
/// for every range that holds an entry (a page or a shadow entry), up to the height the
/// largest index needs; a lone entry at index 0 lives in the root, without a node. Nodes
/// are charged as kernel memory (kmem.rs); a leaf holding only shadow entries is on its
/// memcg's shadow-node list (workingset.c's `shadow_nodes`).
#[derive(Clone, Debug, Default)]
pub struct XaNodes {
    /// Per level, per node position: slots in use (entries at level 0, child nodes above).
    used: Levels<u8>,
    /// Per level, per node position: the obj_cgroup the node is charged to, or NO_NODE.
    owner: Levels<ObjcgId>,
    /// Shadow entries of each leaf.
    shadows: Vec<u8>,
    /// Each leaf's key on its memcg's shadow-node list (0: not on it).
    pub(crate) lru: Vec<u64>,
    /// The last leaf position holding an entry.
    max_leaf: Option<u64>,
    /// Levels of nodes in the tree.
    height: u8,
    /// Nodes in the tree.
    pub nodes: u64,
}

/// Per-level arrays of an xarray's nodes, indexed by (level, node position): the leaf level
/// in a vector of its own, the levels above it in one vector, position by position (the
/// entries of position `p` of levels 1 to `XA_LEVELS - 1` side by side), all grown to as
/// many positions as level 1 needs. Every level has a node position 0, so one vector per
/// level was twelve allocations of a few bytes for every file, and six vectors in place
/// were 144 bytes of it; the levels above the leaves are a 64th of the leaf level's size.
#[derive(Clone, Debug, Default)]
pub(crate) struct Levels<T> {
    leaf: Vec<T>,
    upper: Vec<T>,
}

/// Levels in `Levels::upper`.
const UPPER_LEVELS: usize = XA_LEVELS - 1;

impl<T: Copy> Levels<T> {
    /// Node positions level `l` holds.
    #[inline]
    pub(crate) fn len(&self, l: usize) -> usize {
        if l == 0 {
            self.leaf.len()
        } else {
            self.upper.len() / UPPER_LEVELS
        }
    }

    /// The leaf level.
    #[inline]
    pub(crate) fn leaves(&self) -> &[T] {
        &self.leaf
    }

    #[inline]
    pub(crate) fn get(&self, l: usize, pos: usize) -> Option<T> {
        if l == 0 {
            self.leaf.get(pos).copied()
        } else if pos < self.len(l) {
            Some(self.upper[pos * UPPER_LEVELS + l - 1])
        } else {
            None
        }
    }

    /// Grow level `l` (and, above the leaves, every upper level) to `n` positions, `fill`
    /// in the new ones.
    pub(crate) fn grow(&mut self, l: usize, n: usize, fill: T) {
        debug_assert!(l < XA_LEVELS);
        if l == 0 {
            self.leaf.resize(n, fill);
        } else {
            self.upper.resize(n * UPPER_LEVELS, fill);
        }
    }

    /// Every position of every level, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.leaf.iter().chain(self.upper.iter()).copied()
    }
}

impl<T> std::ops::Index<(usize, usize)> for Levels<T> {
    type Output = T;
    #[inline]
    fn index(&self, (l, pos): (usize, usize)) -> &T {
        if l == 0 {
            &self.leaf[pos]
        } else {
            debug_assert!(l < XA_LEVELS);
            assert!(
                pos < self.upper.len() / UPPER_LEVELS,
                "node position {pos} of level {l}"
            );
            &self.upper[pos * UPPER_LEVELS + l - 1]
        }
    }
}

impl<T> std::ops::IndexMut<(usize, usize)> for Levels<T> {
    #[inline]
    fn index_mut(&mut self, (l, pos): (usize, usize)) -> &mut T {
        if l == 0 {
            &mut self.leaf[pos]
        } else {
            debug_assert!(l < XA_LEVELS);
            assert!(
                pos < self.upper.len() / UPPER_LEVELS,
                "node position {pos} of level {l}"
            );
            &mut self.upper[pos * UPPER_LEVELS + l - 1]
        }
    }
}

impl XaNodes {
    /// A host cache hint for the leaf node holding index `idx`, which an insertion or a
    /// removal there updates.
    #[inline]
    fn prefetch_leaf(&self, idx: u64) {
        let leaf = (idx >> XA_CHUNK_SHIFT) as usize;
        if let (Some(o), Some(l)) = (self.owner.leaves().get(leaf), self.lru.get(leaf)) {
            crate::page_cgroup::prefetch_read(o);
            crate::page_cgroup::prefetch_read(l);
        }
    }
}

/// The levels of an xarray whose last entry is in leaf position `max_leaf`, with `used0`
/// entries in leaf 0 and slot 0 in use or not: none for a lone entry at index 0 (it lives in
/// the root), else as many as the largest index needs.
fn xa_height(max_leaf: Option<u64>, used0: u8, slot0: bool) -> u8 {
    match max_leaf {
        None => 0,
        Some(0) if used0 == 1 && slot0 => 0,
        Some(0) => 1,
        Some(m) => {
            let mut h = 2;
            let mut x = m >> XA_CHUNK_SHIFT;
            while x > 0 {
                x >>= XA_CHUNK_SHIFT;
                h += 1;
            }
            h
        }
    }
}

impl XaNodes {
    /// How many nodes an entry stored in the empty slot `idx` adds (xas_create()), with
    /// slot 0 in use (`slot0`) or not: the nodes on its path that do not exist yet, and
    /// those the tree's growth puts above the entries it already has.
    pub(crate) fn insert_cost(&self, idx: u64, slot0: bool) -> u64 {
        let leaf = idx >> XA_CHUNK_SHIFT;
        let used = |l: usize, g: u64| self.used.get(l, g as usize).unwrap_or(0);
        let max_leaf = Some(self.max_leaf.map_or(leaf, |m| m.max(leaf)));
        let used0 = used(0, 0) + u8::from(leaf == 0);
        let height = usize::from(xa_height(max_leaf, used0, slot0 || idx == 0));
        let old = usize::from(self.height);
        let mut n = 0;
        for l in 0..height {
            let g = leaf >> (XA_CHUNK_SHIFT * l as u32);
            if l >= old || used(l, g) == 0 {
                n += 1;
            }
            if g != 0 && l >= old && used(l, 0) > 0 {
                n += 1;
            }
        }
        n
    }

    /// The obj_cgroup leaf `leaf` is charged to, if it exists.
    pub(crate) fn leaf_owner(&self, leaf: u64) -> Option<ObjcgId> {
        self.owner.get(0, leaf as usize).filter(|&o| o != NO_NODE)
    }

    /// Every existing node's owner (for the invariant checks and tests).
    pub fn owners(&self) -> impl Iterator<Item = ObjcgId> + '_ {
        self.owner.iter().filter(|&o| o != NO_NODE)
    }

    /// The nodes an xarray holding entries at `indices` (ascending) has: the reference the
    /// incremental count is checked against.
    pub fn nodes_for(indices: impl Iterator<Item = u64> + Clone) -> u64 {
        let Some(max) = indices.clone().last() else {
            return 0;
        };
        if max == 0 {
            return 0;
        }
        let mut height = 1;
        while max >> (XA_CHUNK_SHIFT * height) > 0 {
            height += 1;
        }
        let mut last = [u64::MAX; XA_LEVELS];
        let mut n = 0;
        for i in indices {
            for (l, seen) in last.iter_mut().enumerate().take(height as usize) {
                let g = i >> (XA_CHUNK_SHIFT * (l as u32 + 1));
                if *seen != g {
                    *seen = g;
                    n += 1;
                }
            }
        }
        n
    }
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
        self.files.v[id as usize].shmem = self.shmem.mount_of(name);
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
            xa: XaNodes::default(),
            marks: crate::xarray_marks::XaMarks::default(),
            ra_pending: Vec::new(),
            ra_marks: RaMarks::default(),
            mappers: 0,
            exec_mappers: 0,
            shmem: None,
            swapped: 0,
            rss_owner: None,
            huge_advice: Default::default(),
        });
        (self.files.v.len() - 1) as u32
    }

    /// ftruncate(): growing adds holes; shrinking drops pages past the end, a folio_batch
    /// of up to PAGEVEC_SIZE (15) at a time as truncate_inode_pages_range() does, each
    /// batch uncharged together and freed when it is released (release_pages()).
    pub fn file_truncate(&mut self, f: u32, new_size: u64) {
        if self.file_is_shmem(f) {
            return self.shmem_truncate(f, new_size);
        }
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
            } else if e & SHADOW_TAG != 0 {
                self.files.v[f as usize].entries[idx as usize] = 0;
                self.xa_update(f, idx, -1, -1, crate::kmem::ROOT_OBJCG);
            }
        }
        self.free_page_list(&batch);
        let file = &mut self.files.v[f as usize];
        file.entries.truncate(new_size as usize);
        // The pages dropped took their marks with them (folio_account_cleaned(), the end of
        // their writeback).
        file.marks.truncate(new_size);
    }

    /// Grow a file to `new_size` pages whose data is on disk and not cached, as a file written
    /// before the caches were dropped (an extracted source tree). Pages already in the file
    /// are left as they are.
    pub fn file_extend_on_disk(&mut self, f: u32, new_size: u64) {
        if self.file_is_shmem(f) {
            // tmpfs keeps nothing on disk: the new part is a hole.
            if new_size > self.files.v[f as usize].size {
                self.shmem_truncate(f, new_size);
            }
            return;
        }
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
        self.file_free_buffers(pfn);
        let file = &mut self.files.v[f];
        file.entries[m.index as usize] = 0;
        file.nrpages -= 1;
        self.xa_update(f as u32, u64::from(m.index), -1, 0, crate::kmem::ROOT_OBJCG);
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
        self.xa_prepay(f, idx, memcg)?;
        // If the task dies meanwhile the page is still inserted: it belongs to the file.
        let pfn = match self.alloc_charged_page(memcg) {
            Ok(pfn) => pfn,
            Err(e) => {
                self.kmem_settle_prepaid(crate::kmem::Prepaid::Nodes);
                return Err(e);
            }
        };
        let ondisk = self.file_insert(f, idx, pfn, memcg);
        self.kmem_settle_prepaid(crate::kmem::Prepaid::Nodes);
        Ok((pfn, ondisk))
    }

    /// Charge ahead, with the reclaim a charge may do, the xarray nodes that inserting a
    /// page of `memcg` at `idx` will add (xas_nomem() before the store): the insertion
    /// itself then changes nothing the charge's reclaim could reach.
    pub(crate) fn xa_prepay(
        &mut self,
        f: u32,
        idx: u64,
        memcg: MemcgId,
    ) -> Result<(), crate::memcontrol::ChargeError> {
        let file = &self.files.v[f as usize];
        let nodes = if file.entries.get(idx as usize).is_some_and(|&e| xa_entry(e)) {
            0
        } else {
            let slot0 = file.entries.first().is_some_and(|&e| xa_entry(e));
            file.xa.insert_cost(idx, slot0)
        };
        let objcg = self.memcg_objcg(memcg);
        self.kmem_prepay(
            crate::kmem::Prepaid::Nodes,
            objcg,
            nodes * crate::kmem::XA_NODE_BYTES,
        )
    }

    /// Charge ahead the buffer head a write of page `idx` will attach, to the memcg of the
    /// page if it is cached, else to the writer's.
    fn buffers_prepay(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        let e = self.files.v[f as usize].entries[idx as usize];
        if e & PRESENT != 0 && e & BUFFERS != 0 {
            return Ok(());
        }
        let memcg = match resident(e) {
            Some(pfn) => self.frames.memcg(pfn),
            None => self.task(pid).memcg,
        };
        let objcg = self.memcg_objcg(memcg);
        self.kmem_prepay(
            crate::kmem::Prepaid::Buffers,
            objcg,
            crate::kmem::BUFFER_HEAD_BYTES,
        )?;
        Ok(())
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
        let mark = if !file.ra_marks.is_empty() && file.ra_marks.contains_key(&idx) {
            RA_MARK
        } else {
            0
        };
        file.entries[idx as usize] = PRESENT | ondisk | mark | pfn as u64;
        file.nrpages += 1;
        let shadow = e & SHADOW_TAG != 0;
        let objcg = self.memcg_objcg(memcg);
        self.xa_update(f, idx, i32::from(!shadow), -i32::from(shadow), objcg);
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
        } else {
            // A miss: its insertion updates the leaf's node (xa_update()).
            file.xa.prefetch_leaf(idx);
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
                self.files.v[f].xa.prefetch_leaf(u64::from(m.index));
            }
        }
    }

    /// Whether page `idx` of `f` is resident.
    pub(crate) fn file_page_present(&self, f: u32, idx: u64) -> bool {
        self.files.v[f as usize].entries[idx as usize] & PRESENT != 0
    }

    /// read() of one page, with the kernel's readahead (readahead.rs). Reads past the end of
    /// the file do nothing.
    ///
    /// A resident page that no window marks (PG_readahead), of a file with no window in
    /// flight, is found with one load of its entry, as filemap_get_pages() finds an
    /// uptodate folio: what filemap_get_page_ra() would do for it reduces to the hit's cost
    /// and noting the read.
    pub fn file_read(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        let file = &self.files.v[f as usize];
        if file.shmem.is_some() {
            return self.shmem_read(pid, f, idx);
        }
        if idx >= file.size {
            return Ok(());
        }
        let e = file.entries[idx as usize];
        let pfn = if e & (PRESENT | RA_MARK) == PRESENT && file.ra_pending.is_empty() {
            self.spend_cpu(self.cfg.costs.read_hit_ns);
            self.task_mut(pid).ra.note_read(f, idx);
            (e & 0xffff_ffff) as Pfn
        } else {
            self.filemap_get_page_ra(pid, f, idx)?
        };
        self.mark_page_accessed(pfn);
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }

    /// write() of one whole page; extends the file.
    pub fn file_write(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        if self.file_is_shmem(f) {
            return self.shmem_write(pid, f, idx);
        }
        if idx >= self.files.v[f as usize].size {
            self.file_truncate(f, idx + 1);
        }
        self.buffers_prepay(pid, f, idx)?;
        let pfn = self.file_get_page(pid, f, idx, true);
        if let Ok(pfn) = pfn {
            self.file_attach_buffers(pfn);
        }
        self.kmem_settle_prepaid(crate::kmem::Prepaid::Buffers);
        let pfn = pfn?;
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
        self.in_lru_fault(|m| m.file_fault_in_fault(pid, f, idx, write))
    }

    fn file_fault_in_fault(
        &mut self,
        pid: Pid,
        f: u32,
        idx: u64,
        write: bool,
    ) -> Result<(), Fault> {
        if self.file_is_shmem(f) {
            return self.shmem_fault(pid, f, idx, write);
        }
        if idx >= self.files.v[f as usize].size {
            return Err(Fault::Segv);
        }
        if write {
            self.buffers_prepay(pid, f, idx)?;
        }
        let task_memcg = self.task(pid).memcg;
        self.mod_stat(task_memcg, Stat::Pgfault, 1);
        self.task_mut(pid).stats.minflt += 1;
        // A store of one byte: the rest of the page must be read in, as for a read.
        let pfn = self.file_get_page(pid, f, idx, false);
        if let (Ok(pfn), true) = (pfn, write) {
            self.file_attach_buffers(pfn);
        }
        self.kmem_settle_prepaid(crate::kmem::Prepaid::Buffers);
        let pfn = pfn?;
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
        self.file_free_buffers(pfn);
        let file = &mut self.files.v[f];
        let ondisk = file.entries[m.index as usize] & ONDISK;
        debug_assert!(shadow & (PRESENT | ONDISK) == 0);
        file.entries[m.index as usize] = shadow | ondisk;
        file.nrpages -= 1;
        if shadow & SHADOW_TAG != 0 {
            self.xa_update(f as u32, u64::from(m.index), 0, 1, crate::kmem::ROOT_OBJCG);
        } else {
            self.xa_update(f as u32, u64::from(m.index), -1, 0, crate::kmem::ROOT_OBJCG);
        }
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

/// An entry of the page cache's xarray: a page or a shadow entry.
fn xa_entry(e: u64) -> bool {
    e & (PRESENT | SHADOW_TAG | crate::shmem::SHMEM_SWAP) != 0
}

impl Machine {
    /// The entries of one leaf of file `f`'s xarray changed (`entries` already holds the new
    /// state): `d_used` entries more (or fewer) in the leaf of `idx`, `d_shadows` shadow
    /// entries. Nodes the tree gains are charged to `objcg` (xas_nomem() with the mapping's
    /// __GFP_ACCOUNT, charged to the inserting task's memcg); nodes it loses are uncharged
    /// (xas_delete_node(), xas_shrink()). The leaf joins or leaves its memcg's shadow-node
    /// list as it comes to hold only shadow entries or not (workingset_update_node()).
    pub(crate) fn xa_update(
        &mut self,
        f: u32,
        idx: u64,
        d_used: i32,
        d_shadows: i32,
        objcg: ObjcgId,
    ) {
        let leaf = idx >> XA_CHUNK_SHIFT;
        let file = &mut self.files.v[f as usize];
        let slot0 = file.entries.first().is_some_and(|&e| xa_entry(e));
        let xa = &mut file.xa;
        for l in 0..XA_LEVELS {
            let pos = (leaf >> (XA_CHUNK_SHIFT * l as u32)) as usize;
            if xa.used.len(l) <= pos {
                xa.used.grow(l, pos + 1, 0);
                xa.owner.grow(l, pos + 1, NO_NODE);
            }
        }
        if xa.shadows.len() <= leaf as usize {
            xa.shadows.resize(leaf as usize + 1, 0);
            xa.lru.resize(leaf as usize + 1, 0);
        }
        let sh = &mut xa.shadows[leaf as usize];
        *sh = (i32::from(*sh) + d_shadows) as u8;
        let mut flipped = false;
        if d_used != 0 {
            let mut delta = d_used;
            for l in 0..XA_LEVELS {
                if delta == 0 {
                    break;
                }
                let pos = (leaf >> (XA_CHUNK_SHIFT * l as u32)) as usize;
                let before = xa.used[(l, pos)];
                let after = i32::from(before) + delta;
                debug_assert!((0..=64).contains(&after), "xarray slot count {after}");
                xa.used[(l, pos)] = after as u8;
                delta = match (before, after) {
                    (0, a) if a > 0 => 1,
                    (b, 0) if b > 0 => -1,
                    _ => 0,
                };
                flipped |= delta != 0;
            }
            if d_used > 0 {
                xa.max_leaf = Some(xa.max_leaf.map_or(leaf, |m| m.max(leaf)));
            } else if xa.max_leaf == Some(leaf) && xa.used[(0, leaf as usize)] == 0 {
                xa.max_leaf = (0..leaf).rev().find(|&p| xa.used[(0, p as usize)] > 0);
            }
        }
        let height = xa_height(xa.max_leaf, xa.used[(0, 0)], slot0);
        let old_height = xa.height;
        xa.height = height;
        if flipped || height != old_height {
            // Only the nodes on the path of `idx`, and those of the left edge (position 0)
            // when the height moved, can appear or go.
            let mut create: Vec<(usize, usize)> = Vec::new();
            let mut free: Vec<(usize, usize)> = Vec::new();
            for l in 0..XA_LEVELS {
                let path = (leaf >> (XA_CHUNK_SHIFT * l as u32)) as usize;
                for g in [path, 0] {
                    if g == 0 && path != 0 && height == old_height {
                        continue;
                    }
                    let should = (l as u8) < height && xa.used[(l, g)] > 0;
                    let exists = xa.owner[(l, g)] != NO_NODE;
                    if should && !exists && !create.contains(&(l, g)) {
                        create.push((l, g));
                    } else if !should && exists && !free.contains(&(l, g)) {
                        free.push((l, g));
                    }
                }
            }
            for (l, g) in free {
                if l == 0 && self.files.v[f as usize].xa.lru[g] != 0 {
                    self.shadow_lru_del(f, g as u64);
                }
                let xa = &mut self.files.v[f as usize].xa;
                let owner = std::mem::replace(&mut xa.owner[(l, g)], NO_NODE);
                xa.nodes -= 1;
                self.xa_node_uncharge(owner);
            }
            for (l, g) in create {
                let owner = self.xa_node_charge(objcg);
                let xa = &mut self.files.v[f as usize].xa;
                xa.owner[(l, g)] = owner;
                xa.nodes += 1;
            }
        }
        for lf in [leaf, 0] {
            let xa = &self.files.v[f as usize].xa;
            let i = lf as usize;
            let on = xa.owner[(0, i)] != NO_NODE
                && xa.used[(0, i)] > 0
                && xa.shadows[i] == xa.used[(0, i)];
            let cur = xa.lru[i] != 0;
            if on && !cur {
                self.shadow_lru_add(f, lf);
            } else if !on && cur {
                self.shadow_lru_del(f, lf);
            }
            if leaf == 0 {
                break;
            }
        }
    }

    /// The shadow-node shrinker frees leaf `leaf` of file `f`, which holds only shadow
    /// entries and is already off its list (shadow_lru_isolate()): its entries go, then the
    /// node and the ancestors it leaves empty. Returns how many entries it held.
    pub(crate) fn xa_free_shadow_leaf(&mut self, f: u32, leaf: u64) -> u64 {
        let file = &mut self.files.v[f as usize];
        let start = (leaf << XA_CHUNK_SHIFT) as usize;
        let end = (start + (1 << XA_CHUNK_SHIFT)).min(file.entries.len());
        let mut n = 0;
        for e in &mut file.entries[start..end] {
            if *e & SHADOW_TAG != 0 {
                *e &= ONDISK;
                n += 1;
            }
        }
        debug_assert_eq!(
            u64::from(file.xa.used[(0, leaf as usize)]),
            n,
            "a shadow node holds only shadow entries"
        );
        self.xa_update(
            f,
            start as u64,
            -(n as i32),
            -(n as i32),
            crate::kmem::ROOT_OBJCG,
        );
        n
    }

    /// block_write_begin() / block_page_mkwrite() on ext4 with 4K blocks: a page written
    /// gets one buffer head if it has none, charged to the page's memcg (alloc_page_buffers()
    /// under set_active_memcg(), __GFP_ACCOUNT | __GFP_NOFAIL).
    fn file_attach_buffers(&mut self, pfn: Pfn) {
        let m = self.frames.meta[pfn as usize].map;
        let f = (m.mapping & !MAPPING_FILE_BIT) as usize;
        if self.files.v[f].entries[m.index as usize] & BUFFERS != 0 {
            return;
        }
        let memcg = self.frames.memcg(pfn);
        if self.buffers_charge(memcg) {
            self.files.v[f].entries[m.index as usize] |= BUFFERS;
        }
    }

    /// try_to_free_buffers() / block_invalidate_folio(): the page's buffer head goes as the
    /// page leaves the cache.
    fn file_free_buffers(&mut self, pfn: Pfn) {
        let m = self.frames.meta[pfn as usize].map;
        let f = (m.mapping & !MAPPING_FILE_BIT) as usize;
        let e = &mut self.files.v[f].entries[m.index as usize];
        if *e & BUFFERS != 0 {
            *e &= !BUFFERS;
            let memcg = self.frames.memcg(pfn);
            self.buffers_uncharge(memcg);
        }
    }
}

impl Machine {
    /// Invariants of the page cache's xarrays (Machine::check): each file's node count is
    /// what its entries need, every node has an owner, and the shadow-node lists hold
    /// exactly the leaves whose entries are all shadow entries, on the list of the memcg
    /// each is charged to.
    /// The file's dirty and writeback marks are its pages' PG_dirty and PG_writeback, and
    /// the search for pages to write finds exactly the dirty ones not under writeback.
    fn check_marks(&self, fi: usize, file: &File) -> Result<(), String> {
        use crate::xarray_marks::Mark;
        let marks = &file.marks;
        let mut want = Vec::new();
        for (i, &e) in file.entries.iter().enumerate() {
            let flags = resident(e).map_or(0, |pfn| self.frames.flags(pfn));
            // shmem's noop_dirty_folio() sets PG_dirty without the xarray's dirty mark.
            let dirty = flags & pf::DIRTY != 0 && file.shmem.is_none();
            let wback = flags & pf::WRITEBACK != 0;
            let i = i as u64;
            if marks.get(i, Mark::Dirty) != dirty || marks.get(i, Mark::Writeback) != wback {
                return Err(format!(
                    "file {fi} page {i}: marks dirty {} writeback {}, flags dirty {dirty} \
                     writeback {wback}",
                    marks.get(i, Mark::Dirty),
                    marks.get(i, Mark::Writeback)
                ));
            }
            if dirty && !wback {
                want.push(i);
            }
        }
        if marks.any_from(file.entries.len() as u64) {
            return Err(format!("file {fi}: marks past its last entry"));
        }
        let mut found = Vec::new();
        let mut from = 0;
        while let Some(i) = marks.next_dirty_idle(from) {
            found.push(i);
            from = i + 1;
        }
        if found != want {
            return Err(format!(
                "file {fi}: the search finds {} pages to write, the flags {}",
                found.len(),
                want.len()
            ));
        }
        Ok(())
    }

    pub(crate) fn check_page_cache_xarrays(&self) -> Result<(), String> {
        let mut listed = 0usize;
        for (fi, file) in self.files.v.iter().enumerate() {
            let xa = &file.xa;
            // A huge shmem folio is one entry, at its head's index.
            let counted = |e: u64| {
                xa_entry(e)
                    && resident(e)
                        .is_none_or(|p| self.frames.lru(p) != crate::huge_memory::LRU_TAIL)
            };
            let indices =
                (0..file.entries.len() as u64).filter(|&i| counted(file.entries[i as usize]));
            let want = XaNodes::nodes_for(indices);
            if xa.nodes != want || xa.owners().count() as u64 != want {
                return Err(format!(
                    "file {fi}: {} xarray nodes ({} owned), its entries need {want}",
                    xa.nodes,
                    xa.owners().count()
                ));
            }
            self.check_marks(fi, file)?;
            for (leaf, &key) in xa.lru.iter().enumerate() {
                let start = leaf << XA_CHUNK_SHIFT;
                let end = (start + (1 << XA_CHUNK_SHIFT)).min(file.entries.len());
                let slots = file.entries.get(start..end).unwrap_or(&[]);
                let used = slots.iter().filter(|&&e| counted(e)).count();
                let shadows = slots.iter().filter(|&&e| e & SHADOW_TAG != 0).count();
                let node = xa.leaf_owner(leaf as u64);
                let should = node.is_some() && used > 0 && shadows == used;
                if should != (key != 0) {
                    return Err(format!(
                        "file {fi} leaf {leaf}: {shadows} of {used} entries shadows, listed {}",
                        key != 0
                    ));
                }
                if let (Some(owner), true) = (node, key != 0) {
                    let m = self.xa_node_memcg(owner) as usize;
                    if self.memcgs[m].kmem.shadow_lru.get(&key) != Some(&(fi as u32, leaf as u64)) {
                        return Err(format!("file {fi} leaf {leaf}: not on memcg {m}'s list"));
                    }
                    listed += 1;
                }
            }
        }
        let total: usize = self.memcgs.iter().map(|m| m.kmem.shadow_lru.len()).sum();
        if total != listed {
            return Err(format!(
                "shadow-node lists hold {total} leaves, the files {listed}"
            ));
        }
        Ok(())
    }
}

/// fault_around_bytes: 64 KiB, in pages.
pub const FAULT_AROUND_PAGES: u64 = 16;

impl Machine {
    /// mmap() of file `f`, shared and read-only, executable if `exec`.
    pub fn file_mmap(&mut self, pid: Pid, f: u32, exec: bool) {
        if self.file_is_shmem(f) {
            self.shmem_mmap(pid, f);
        }
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
        if self.file_is_shmem(f) {
            self.shmem_last_unmap(f);
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
        let head = self.folio_head(pfn);
        if self.page_in_shmem_file(head) {
            let young = self.frames.test(head, pf::YOUNG);
            self.shmem_unmap_page(pfn);
            if zap && young {
                self.mark_page_accessed(head);
            }
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
        self.in_lru_fault(|m| m.file_map_access_in_fault(pid, f, idx))
    }

    fn file_map_access_in_fault(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        if self.file_is_shmem(f) {
            return self.shmem_map_access(pid, f, idx, false);
        }
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

    /// Writes `pages` pages of file "w" in order, then holds.
    struct Writer {
        pages: u64,
        next: u64,
    }

    impl Program for Writer {
        fn name(&self) -> &str {
            "writer"
        }
        fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
            let f = cx.open("w");
            let end = (self.next + 256).min(self.pages);
            while self.next < end {
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
    fn xarray_nodes_for_entries() {
        use super::XaNodes;
        assert_eq!(XaNodes::nodes_for([].into_iter()), 0);
        // A lone entry at index 0 lives in the root.
        assert_eq!(XaNodes::nodes_for([0].into_iter()), 0);
        assert_eq!(XaNodes::nodes_for([0, 1].into_iter()), 1);
        assert_eq!(XaNodes::nodes_for([5].into_iter()), 1);
        // A leaf for 64-127 under a root node.
        assert_eq!(XaNodes::nodes_for([64].into_iter()), 2);
        // Three levels: two leaves, two level-1 nodes, the root.
        assert_eq!(XaNodes::nodes_for([0, 262_143].into_iter()), 5);
        assert_eq!(XaNodes::nodes_for(0..262_144), 4096 + 64 + 1);
    }

    /// A writer of 256M under memory.max 16M: the group's slab is its file's inode, a buffer
    /// head per resident page and the xarray's nodes, which shadow entries keep alive until
    /// the shadow-node shrinker frees those beyond one per 8 pages of the group; a
    /// truncation frees the rest.
    #[test]
    fn page_cache_kernel_memory_follows_the_cache() {
        use crate::kmem::{BUFFER_HEAD_BYTES, FILE_SLAB_BYTES, XA_NODE_BYTES};
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "256M").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        m.write_memory_max(a, 4096);
        let pages = 65_536;
        let pid = m.spawn(a, "writer".into(), 0, Box::new(Writer { pages, next: 0 }));
        m.run_until(600_000_000_000, |m| m.task(pid).state == TaskState::Holding);
        assert_eq!(m.task(pid).state, TaskState::Holding);
        m.check().unwrap();
        let f = m.files.by_name["w"];
        let file = &m.files.v[f as usize];
        let slab = m.stat_local(a, Stat::SlabReclaimableB);
        let expect =
            FILE_SLAB_BYTES + file.nrpages * BUFFER_HEAD_BYTES + file.xa.nodes * XA_NODE_BYTES;
        assert_eq!(slab, expect);
        // 1,024 leaves were filled; the shrinker freed the shadow-only ones beyond its limit.
        let reclaimed = m.stat_local(a, Stat::WorkingsetNodereclaim);
        assert!(
            reclaimed > 0,
            "shadow nodes reclaimed: {reclaimed}, {} listed, {} in all, {} nodes",
            m.memcgs[a as usize].kmem.shadow_lru.len(),
            m.kmem.shadow_nodes_reclaimed,
            file.xa.nodes
        );
        assert_eq!(reclaimed, m.kmem.shadow_nodes_reclaimed);
        let listed = m.memcgs[a as usize].kmem.shadow_lru.len() as u64;
        let own = m.stat_local(a, Stat::InactiveFile)
            + m.stat_local(a, Stat::ActiveFile)
            + slab / crate::PAGE_SIZE;
        assert!(listed <= own / 8 + 256, "{listed} listed, {own} pages");
        assert!(file.xa.nodes < 1024 + 16 + 1);
        // The memory.max holds the kernel memory too: it is charged ahead, with reclaim.
        assert!(m.memory.get(a as usize).watermark <= 4096);
        m.file_truncate(f, 0);
        m.check().unwrap();
        assert_eq!(m.files.v[f as usize].xa.nodes, 0);
        assert_eq!(m.stat_local(a, Stat::SlabReclaimableB), FILE_SLAB_BYTES);
        assert!(m.memcgs[a as usize].kmem.shadow_lru.is_empty());
    }

    #[test]
    fn shadow_nodes_go_to_the_parent_at_offline() {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "256M").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        let p = m.memcg_create(ROOT_MEMCG).unwrap();
        let a = m.memcg_create(p).unwrap();
        m.write_memory_max(a, 2048);
        let pid = m.spawn(
            a,
            "writer".into(),
            0,
            Box::new(Writer {
                pages: 16_384,
                next: 0,
            }),
        );
        m.run_until(600_000_000_000, |m| m.task(pid).state == TaskState::Holding);
        m.exit_task(pid, crate::TaskOutcome::Exited(0));
        let listed = m.memcgs[a as usize].kmem.shadow_lru.len();
        assert!(listed > 0);
        m.memcg_offline(a).unwrap();
        m.check().unwrap();
        assert!(m.memcgs[a as usize].kmem.shadow_lru.is_empty());
        assert_eq!(m.memcgs[p as usize].kmem.shadow_lru.len(), listed);
        // The nodes now charge the parent, and go from it.
        let f = m.files.by_name["w"];
        m.file_truncate(f, 0);
        m.check().unwrap();
        assert!(m.memcgs[p as usize].kmem.shadow_lru.is_empty());
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
