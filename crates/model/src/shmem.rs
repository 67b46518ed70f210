//! Shared memory: mm/shmem.c. tmpfs files, MAP_SHARED anonymous mappings and memfd are all
//! files of a tmpfs (the anonymous ones of the kernel's internal mount, shm_mnt) whose pages
//! live in the page cache (filemap.rs) but are swap-backed:
//!
//! * a page comes in only when written (shmem_write_begin(), SGP_WRITE) or faulted
//!   (shmem_fault(), SGP_CACHE); read() of a hole copies the zero page and allocates
//!   nothing (SGP_READ). The page is charged to the memcg of the task that brought it in
//!   (shmem_add_to_page_cache() with the task's mm), counted in `file` and `shmem`, and put
//!   on the inactive **anon** list (PG_swapbacked: folio_is_file_lru() is false); a written
//!   page starts with PG_referenced and is dirty, with no dirty accounting (shmem's
//!   dirty_folio is noop_dirty_folio(), and tmpfs has no writeback);
//! * reclaim treats it as anon (get_scan_count() scans it only where anon may be
//!   swapped). A clean page (faulted by a read, never written) is dropped like clean page
//!   cache, without a shadow entry (__remove_mapping() stores one only for file-LRU pages),
//!   its data being zeroes; a dirty one goes through pageout() to shmem_writepage(): with
//!   no swap, or when the slot's swap charge fails, the page is activated (redirty,
//!   AOP_WRITEPAGE_ACTIVATE); otherwise it leaves the file for the swap cache (`shmem` and
//!   `file` down, `swapcached` up), its index holds the swap entry (SWAP_MAP_SHMEM), and
//!   swap_writepage() writes it as any swap-cache page, after which __remove_mapping()
//!   frees it with a shadow entry in the swap cache;
//! * a read, write or fault at a swapped index takes the page back (shmem_swapin_folio()):
//!   from the swap cache if it is still there (waiting for its write to end if it is under
//!   writeback), else read from swap with swap_cluster_readahead() (shmem never uses VMA
//!   readahead), charged as mem_cgroup_swapin_charge_folio() charges (the memcg recorded
//!   with the entry if it is online, else the task's), a refault if its shadow says so. The
//!   page goes back into the file dirty and the slot is freed with its swap charge;
//! * pages and swap entries are freed only by truncation, unlink (of a file no one maps),
//!   umount, or the last unmap of an anonymous object (shmem_undo_range());
//! * a tmpfs mount's `size=` caps the pages its files hold, in memory or in swap
//!   (shmem_inode_acct_block(): sbinfo->max_blocks; ENOSPC beyond, SIGBUS for a fault).
//!   /dev/shm is mounted at boot with the kernel's default, half of RAM; shm_mnt has no
//!   limit.
//!
//! Simplified (docs/FIDELITY.md): open file descriptors are not counted, so unlinking a
//! file that no task maps frees it at once, and a task's writes to a file after its mount
//! is gone fail; the blocks a dropped clean page held are given back at once, where the
//! kernel's shmem_recalc_inode() notices them at the inode's next use; a page has one PTE
//! shared by all the file's mappers (as for other files, filemap.rs), whose RSS
//! (MM_SHMEMPAGES) counts for the task that mapped the file first.
//!
//! Huge shmem pages (shmem_is_huge(), shmem_alloc_hugefolio()): a mount's `huge=` (never,
//! always, within_size, advise) and shmem_enabled, which is shm_mnt's `huge` and adds `deny`
//! and `force` for every mount, decide whether a new page comes as a 2 MiB folio: where none
//! of its aligned 512 indices holds a page or a swap entry and the mount has room for 512
//! blocks, an order-9 folio (THP_FILE_FALLBACK without one) charged 512 pages at once with
//! the mapping's gfp, which reclaims but never OOM-kills for it (THP_FILE_FALLBACK_CHARGE),
//! counted in `shmem_thp` (THP_FILE_ALLOC). Its pages may lie past the file's end; the
//! folio then joins the shrinker's list, and global reclaim's shrink_slab() splits it,
//! freeing those pages (shmem_unused_huge_shrink()). A fault maps the folio whole with a PMD
//! where its range lies inside the mapping (THP_FILE_MAPPED, `ShmemPmdMapped`), else page
//! by page. Reclaim splits the folio first (6.1 splits shmem folios in shrink_folio_list()
//! even without swap); truncation frees whole folios and splits the one it cuts. The
//! kernel's multi-index xarray entry is one entry at the head's index here. Swap-in brings
//! back small pages, as 6.1 does; khugepaged does not collapse shmem.

use crate::errno::Errno;
use crate::filemap::{resident, PRESENT};
use crate::huge_memory::{HugeAdvice, ShmemHuge, HPAGE_PMD_NR, TAIL_PMD_MAPPED};
use crate::machine::Machine;
use crate::memcontrol::MemcgId;
use crate::page_cgroup::{pf, PageMap, Pfn, MAPPING_FILE_BIT};
use crate::program::{Fault, Pid};
use crate::stat::Stat;
use crate::swapfile::SwapSlot;

/// A shmem file's entry for a swapped-out page: the slot in the low 32 bits (the kernel's
/// swp_to_radix_entry() value entry). Bit 58 is free in page-cache entries.
pub(crate) const SHMEM_SWAP: u64 = 1 << 58;

/// The mount of the kernel's internal tmpfs (shm_mnt), which holds MAP_SHARED anonymous
/// mappings and memfd objects, with no size limit.
pub const SHM_MNT: u32 = 0;

/// Where /dev/shm is mounted at boot.
pub const DEV_SHM: &str = "/dev/shm";

/// A mounted tmpfs (struct shmem_sb_info).
#[derive(Clone, Debug)]
pub struct TmpfsMount {
    /// The mount point; empty for shm_mnt.
    pub dir: String,
    /// `size=` in pages (max_blocks); 0: no limit.
    pub max_blocks: u64,
    /// Pages its files hold, in memory or in swap (used_blocks).
    pub used_blocks: u64,
    /// The `huge=` option (sbinfo->huge).
    pub huge: ShmemHuge,
}

/// The tmpfs mounts. Index [`SHM_MNT`] is shm_mnt; an unmounted entry is None (its files
/// keep their mount id, and find it gone).
#[derive(Clone, Debug)]
pub struct Shmem {
    pub mounts: Vec<Option<TmpfsMount>>,
    /// The files whose last huge folio may pass their end (sbinfo->shrinklist, one list
    /// for every mount here), oldest first, each once.
    pub shrinklist: Vec<u32>,
}

/// What a lookup of a shmem page is for (enum sgp_type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sgp {
    /// read(): a hole stays a hole.
    Read,
    /// A fault: a hole gets a new page, zeroed and clean.
    Cache,
    /// write(): a hole gets a new page, with PG_referenced.
    Write,
}

/// shmem_default_max_blocks(): half of RAM, in pages.
pub fn default_max_blocks(totalram_pages: u64) -> u64 {
    totalram_pages / 2
}

impl Shmem {
    /// shm_mnt, and /dev/shm with the default size. shm_mnt's `huge` is shmem_enabled's
    /// value unless that is `deny` or `force` (shmem_init()).
    pub fn new(totalram_pages: u64, shmem_enabled: ShmemHuge) -> Shmem {
        let shm_huge = match shmem_enabled {
            ShmemHuge::Deny | ShmemHuge::Force => ShmemHuge::Never,
            h => h,
        };
        Shmem {
            mounts: vec![
                Some(TmpfsMount {
                    dir: String::new(),
                    max_blocks: 0,
                    used_blocks: 0,
                    huge: shm_huge,
                }),
                Some(TmpfsMount {
                    dir: DEV_SHM.to_string(),
                    max_blocks: default_max_blocks(totalram_pages),
                    used_blocks: 0,
                    huge: ShmemHuge::Never,
                }),
            ],
            shrinklist: Vec::new(),
        }
    }

    /// The tmpfs a file named `name` is on: the mount whose directory is the longest prefix
    /// of the name's directories.
    pub fn mount_of(&self, name: &str) -> Option<u32> {
        self.mounts
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let m = m.as_ref()?;
                let rest = name.strip_prefix(m.dir.as_str())?;
                (!m.dir.is_empty() && rest.starts_with('/') && rest.len() > 1)
                    .then_some((m.dir.len(), i as u32))
            })
            .max()
            .map(|(_, i)| i)
    }

    /// The mount at directory `dir`.
    pub fn mount_at(&self, dir: &str) -> Option<u32> {
        self.mounts
            .iter()
            .position(|m| {
                m.as_ref()
                    .is_some_and(|m| !m.dir.is_empty() && m.dir == dir)
            })
            .map(|i| i as u32)
    }
}

/// A tmpfs `size=` option: bytes (memparse()'s syntax) or a percentage of RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmpfsSize {
    Bytes(u64),
    Percent(u64),
}

impl TmpfsSize {
    /// shmem_parse_one()'s `size`: memparse(), then an optional `%`; nothing else may
    /// follow. Err: the kernel's "Bad value for 'size'" (EINVAL).
    pub fn parse(v: &str) -> Result<TmpfsSize, String> {
        let bad = || format!("bad value for 'size': '{v}'");
        if !v.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(bad());
        }
        let (n, rest) = crate::units::memparse(v);
        match rest {
            "" => Ok(TmpfsSize::Bytes(n)),
            "%" => Ok(TmpfsSize::Percent(n)),
            _ => Err(bad()),
        }
    }

    /// max_blocks: the size in pages, rounded up (0: no limit).
    pub fn pages(self, totalram_pages: u64) -> u64 {
        match self {
            TmpfsSize::Bytes(b) => b.div_ceil(crate::PAGE_SIZE),
            TmpfsSize::Percent(p) => {
                let bytes =
                    u128::from(totalram_pages) * u128::from(crate::PAGE_SIZE) * u128::from(p) / 100;
                bytes
                    .div_ceil(u128::from(crate::PAGE_SIZE))
                    .min(u128::from(u64::MAX)) as u64
            }
        }
    }
}

/// The options of `mount -o` for a tmpfs the model takes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TmpfsOptions {
    /// `size=` (the last one wins).
    pub size: Option<TmpfsSize>,
    /// `huge=never|always|within_size|advise`.
    pub huge: Option<ShmemHuge>,
    pub remount: bool,
    /// An option the kernel knows given a value it refuses (`size=x`, `huge=sometimes`), as
    /// written: the mount fails with EINVAL.
    pub bad: Option<String>,
}

impl TmpfsOptions {
    /// The mount data without `remount`: `size=` and `huge=` as `mount -o` takes them
    /// (empty for none).
    pub fn data(&self) -> String {
        let mut o: Vec<String> = Vec::new();
        match self.size {
            Some(TmpfsSize::Bytes(b)) => o.push(format!("size={b}")),
            Some(TmpfsSize::Percent(p)) => o.push(format!("size={p}%")),
            None => {}
        }
        if let Some(h) = self.huge {
            o.push(format!("huge={}", h.name()));
        }
        o.extend(self.bad.clone());
        o.join(",")
    }
}

/// Parse the options of `mount -o` for a tmpfs. A value the kernel refuses is kept in
/// `bad` (the mount is EINVAL); Err: an option the model does not take.
pub fn parse_tmpfs_options(opts: &str) -> Result<TmpfsOptions, String> {
    let mut r = TmpfsOptions::default();
    for o in opts.split(',').filter(|o| !o.is_empty()) {
        match o.split_once('=') {
            Some(("size", v)) => match TmpfsSize::parse(v) {
                Ok(s) => r.size = Some(s),
                Err(_) => r.bad = Some(o.to_string()),
            },
            Some(("huge", v)) => match ShmemHuge::from_mount_option(v) {
                Some(h) => r.huge = Some(h),
                None => r.bad = Some(o.to_string()),
            },
            None if o == "remount" => r.remount = true,
            _ => {
                return Err(format!(
                    "tmpfs option '{o}' is not modelled (only size=, huge= and remount)"
                ))
            }
        }
    }
    Ok(r)
}

/// A mount point as `mount` and `umount` take it: an absolute path, without `.` or `..`
/// components, empty components or a trailing slash.
pub fn valid_mount_dir(dir: &str) -> bool {
    dir.len() > 1
        && dir.starts_with('/')
        && dir[1..]
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

impl Machine {
    /// Is file `f` on a tmpfs (its pages swap-backed)?
    #[inline]
    pub fn file_is_shmem(&self, f: u32) -> bool {
        self.files.v[f as usize].shmem.is_some()
    }

    /// Is this frame a shmem page in its file (not in the swap cache)?
    pub(crate) fn page_in_shmem_file(&self, pfn: Pfn) -> bool {
        let m = self.frames.meta[pfn as usize].map.mapping;
        m & MAPPING_FILE_BIT != 0
            && m < crate::huge_memory::TAIL_MAPPING
            && self.frames.test(pfn, pf::SWAPBACKED)
    }

    /// mount -t tmpfs -o size=SIZE,huge=HUGE tmpfs DIR: `size` in pages, None for the
    /// default (half of RAM), Some(0) for no limit; `huge` None for `never`. EBUSY if a tmpfs
    /// is mounted there already (the model does not stack mounts); EINVAL for a path that
    /// cannot be a mount point.
    pub fn tmpfs_mount(
        &mut self,
        dir: &str,
        size: Option<u64>,
        huge: Option<ShmemHuge>,
    ) -> Result<(), Errno> {
        if !valid_mount_dir(dir) {
            return Err(Errno::EINVAL);
        }
        if self.shmem.mount_at(dir).is_some() {
            return Err(Errno::EBUSY);
        }
        let max_blocks = size.unwrap_or(default_max_blocks(self.totalram_pages));
        self.shmem.mounts.push(Some(TmpfsMount {
            dir: dir.to_string(),
            max_blocks,
            used_blocks: 0,
            huge: huge.unwrap_or(ShmemHuge::Never),
        }));
        Ok(())
    }

    /// mount -o remount[,size=SIZE][,huge=HUGE] DIR: what is given changes, the rest stays
    /// (shmem_reconfigure()). EINVAL if the mount's files hold more than the new size, for a
    /// size on a mount that had no limit ("Cannot retroactively limit size"), or if no tmpfs
    /// is mounted there.
    pub fn tmpfs_remount(
        &mut self,
        dir: &str,
        size: Option<u64>,
        huge: Option<ShmemHuge>,
    ) -> Result<(), Errno> {
        let id = self.shmem.mount_at(dir).ok_or(Errno::EINVAL)?;
        let m = self.shmem.mounts[id as usize].as_mut().expect("mounted");
        if let Some(max_blocks) = size {
            if max_blocks != 0 && (m.max_blocks == 0 || m.used_blocks > max_blocks) {
                return Err(Errno::EINVAL);
            }
            m.max_blocks = max_blocks;
        }
        if let Some(h) = huge {
            m.huge = h;
        }
        Ok(())
    }

    /// umount DIR: every file of the mount goes, with its pages and swap entries. EINVAL if
    /// no tmpfs is mounted there; EBUSY while a task maps one of its files.
    pub fn tmpfs_umount(&mut self, dir: &str) -> Result<(), Errno> {
        let id = self.shmem.mount_at(dir).ok_or(Errno::EINVAL)?;
        let files: Vec<u32> = (0..self.files.v.len() as u32)
            .filter(|&f| self.files.v[f as usize].shmem == Some(id))
            .collect();
        if files.iter().any(|&f| self.files.v[f as usize].mappers > 0) {
            return Err(Errno::EBUSY);
        }
        for f in files {
            if let Some(name) = self.files.v[f as usize].name.take() {
                self.files.by_name.remove(&name);
            }
            self.file_evict(f);
        }
        debug_assert_eq!(
            self.shmem.mounts[id as usize]
                .as_ref()
                .map(|m| m.used_blocks),
            Some(0)
        );
        self.shmem.mounts[id as usize] = None;
        Ok(())
    }

    /// unlink(): the name goes; the file's pages and inode go with it unless a task maps
    /// it, and then with the last unmap. ENOENT if no file has the name.
    pub fn unlink(&mut self, name: &str) -> Result<(), Errno> {
        let f = self.files.by_name.remove(name).ok_or(Errno::ENOENT)?;
        self.files.v[f as usize].name = None;
        if self.files.v[f as usize].mappers == 0 {
            self.file_evict(f);
        }
        Ok(())
    }

    /// evict(): a file with no name and no user left loses its pages and its inode.
    pub(crate) fn file_evict(&mut self, f: u32) {
        self.file_truncate(f, 0);
        self.shmem.shrinklist.retain(|&g| g != f);
        self.file_free_inode(f);
    }

    /// A new unnamed shmem object of `pages` (shmem_zero_setup() of a MAP_SHARED anonymous
    /// mapping, or memfd_create() and ftruncate()), its inode charged to `memcg`.
    pub fn shmem_new_object(&mut self, pages: u64, memcg: MemcgId) -> u32 {
        let f = self.file_new(None);
        self.files.v[f as usize].shmem = Some(SHM_MNT);
        self.file_alloc_inode(f, memcg);
        self.file_truncate(f, pages);
        f
    }

    /// shmem_inode_acct_block(): room for `n` more pages on the file's mount.
    fn shmem_acct_blocks(&mut self, f: u32, n: u64) -> Result<(), Errno> {
        let mnt = self.files.v[f as usize].shmem.expect("a shmem file");
        let Some(m) = self.shmem.mounts[mnt as usize].as_mut() else {
            // Its tmpfs was unmounted under it.
            return Err(Errno::ENOSPC);
        };
        if m.max_blocks != 0 && m.used_blocks + n > m.max_blocks {
            return Err(Errno::ENOSPC);
        }
        m.used_blocks += n;
        Ok(())
    }

    /// shmem_inode_unacct_blocks(): `n` pages (in memory or swap) of the file are gone.
    fn shmem_unacct_blocks(&mut self, f: u32, n: u64) {
        let mnt = self.files.v[f as usize].shmem.expect("a shmem file");
        if let Some(m) = self.shmem.mounts[mnt as usize].as_mut() {
            debug_assert!(m.used_blocks >= n);
            m.used_blocks -= n;
        }
    }

    /// A failed allocation of a tmpfs block: the task's system call fails with ENOSPC, or
    /// its fault with SIGBUS.
    fn shmem_nospace(&mut self, pid: Pid, f: u32, fault: bool) -> Fault {
        let name = self.files.v[f as usize].name.clone();
        self.task_mut(pid).error = Some(Box::new(crate::task::SyscallError::NoSpace {
            file: name,
            fault,
        }));
        Fault::Segv
    }

    /// shmem_get_folio_gfp(): the page at `idx` (a frame of a huge folio, or a page of its
    /// own), swapped in if it is in swap, or (but for SGP_READ) a new one charged to the
    /// task's memcg: a huge folio where shmem_is_huge() allows one, else a small page. None:
    /// a hole read.
    fn shmem_get_folio(
        &mut self,
        pid: Pid,
        f: u32,
        idx: u64,
        sgp: Sgp,
        fault: bool,
    ) -> Result<Option<Pfn>, Fault> {
        let e = self.files.v[f as usize].entries[idx as usize];
        if let Some(pfn) = resident(e) {
            self.spend_cpu(self.cfg.costs.read_hit_ns);
            if sgp == Sgp::Write {
                self.mark_page_accessed(self.folio_head(pfn));
            }
            return Ok(Some(pfn));
        }
        if e & SHMEM_SWAP != 0 {
            let pfn = self.shmem_swapin(pid, f, idx, (e & 0xffff_ffff) as SwapSlot, fault)?;
            if sgp == Sgp::Write {
                self.mark_page_accessed(pfn);
            }
            return Ok(Some(pfn));
        }
        if sgp == Sgp::Read {
            self.spend_cpu(self.cfg.costs.read_hit_ns);
            return Ok(None);
        }
        self.spend_cpu(self.cfg.costs.minor_fault_ns);
        let memcg = self.task(pid).memcg;
        // A fault's mapping carries the madvise() advice; write() has no mapping.
        let advice = fault.then(|| self.files.v[f as usize].huge_advice);
        if self.shmem_is_huge(f, idx, advice) {
            if let Some(head) = self.shmem_alloc_huge(f, idx, memcg, advice, sgp)? {
                return Ok(Some(head + (idx % HPAGE_PMD_NR) as Pfn));
            }
        }
        if self.shmem_acct_blocks(f, 1).is_err() {
            return Err(self.shmem_nospace(pid, f, fault));
        }
        let charged = match self.xa_prepay(f, idx, memcg) {
            Ok(()) => self.alloc_charged_page(memcg).inspect_err(|_| {
                self.kmem_settle_prepaid(crate::kmem::Prepaid::Nodes);
            }),
            Err(e) => Err(e.into()),
        };
        let pfn = match charged {
            Ok(pfn) => pfn,
            Err(e) => {
                self.shmem_unacct_blocks(f, 1);
                return Err(e);
            }
        };
        if self.task(pid).killed || self.files.v[f as usize].entries.len() <= idx as usize {
            // The allocation's OOM kill took the task, and with it the file's last mapping.
            self.memcg_uncharge_raw(memcg);
            self.free_frame(pfn);
            self.kmem_settle_prepaid(crate::kmem::Prepaid::Nodes);
            self.shmem_unacct_blocks(f, 1);
            return Err(Fault::Killed);
        }
        self.commit_charge(pfn, memcg);
        self.frames.set(pfn, pf::SWAPBACKED);
        if sgp == Sgp::Write {
            self.frames.set(pfn, pf::REFERENCED);
        }
        self.shmem_add_to_page_cache(f, idx, pfn);
        self.kmem_settle_prepaid(crate::kmem::Prepaid::Nodes);
        self.lru_add(pfn);
        Ok(Some(pfn))
    }

    /// shmem_is_huge(): whether a new page at `idx` of file `f` is to be a huge folio, for a
    /// fault through a mapping with `advice` (None: write(), which has no mapping).
    /// MADV_NOHUGEPAGE refuses; shmem_enabled's `force` and `deny` decide for every mount;
    /// else the mount's `huge=`: `within_size` when the whole huge range lies inside the
    /// file, `advise` (and `within_size` otherwise) for a MADV_HUGEPAGE mapping.
    fn shmem_is_huge(&self, f: u32, idx: u64, advice: Option<HugeAdvice>) -> bool {
        if advice == Some(HugeAdvice::NoHuge) {
            return false;
        }
        match self.thp.shmem_huge {
            ShmemHuge::Force => return true,
            ShmemHuge::Deny => return false,
            _ => {}
        }
        let file = &self.files.v[f as usize];
        let Some(m) = file
            .shmem
            .and_then(|mnt| self.shmem.mounts[mnt as usize].as_ref())
        else {
            return false;
        };
        let madvised = advice == Some(HugeAdvice::Huge);
        match m.huge {
            ShmemHuge::Always => true,
            ShmemHuge::WithinSize => {
                file.size >= (idx + 1).next_multiple_of(HPAGE_PMD_NR) || madvised
            }
            ShmemHuge::Advise => madvised,
            _ => false,
        }
    }

    /// The huge part of shmem_get_folio_gfp() for `idx`: nothing of its aligned 512 pages
    /// may be in the file yet (shmem_alloc_hugefolio()'s xa_find()); the mount must have
    /// room for all 512 (shmem_inode_acct_block()); an order-9 folio with the gfp
    /// vma_thp_gfp_mask() gives for the mapping (THP_FILE_FALLBACK without one); charged
    /// with the mapping's gfp, which may reclaim but never OOM-kills for a huge folio
    /// (THP_FILE_FALLBACK and THP_FILE_FALLBACK_CHARGE when it fails). Then cleared, put in
    /// the file as one folio (THP_FILE_ALLOC, NR_SHMEM_THPS) and on the inactive anon list;
    /// a folio that passes the file's end goes on the shrinker's list. Ok(None): fall back
    /// to a small page.
    fn shmem_alloc_huge(
        &mut self,
        f: u32,
        idx: u64,
        memcg: MemcgId,
        advice: Option<HugeAdvice>,
        sgp: Sgp,
    ) -> Result<Option<Pfn>, Fault> {
        let hindex = idx - idx % HPAGE_PMD_NR;
        let range = hindex as usize..(hindex + HPAGE_PMD_NR) as usize;
        let file = &mut self.files.v[f as usize];
        if file.entries.len() < range.end {
            file.entries.resize(range.end, 0);
        }
        if file.entries[range].iter().any(|&e| e != 0) {
            return Ok(None);
        }
        if self.shmem_acct_blocks(f, HPAGE_PMD_NR).is_err() {
            return Ok(None);
        }
        let gfp = self.vma_thp_gfp(advice.unwrap_or_default());
        let Some(head) = self.alloc_thp_folio(gfp) else {
            self.thp.events.file_fallback += 1;
            self.shmem_unacct_blocks(f, HPAGE_PMD_NR);
            return Ok(None);
        };
        let charged = match self.try_charge(memcg, HPAGE_PMD_NR) {
            Ok(()) => self.xa_prepay(f, hindex, memcg).inspect_err(|_| {
                self.uncharge_folio(memcg, HPAGE_PMD_NR);
            }),
            Err(e) => Err(e),
        };
        if let Err(e) = charged {
            self.free_thp_frames(head);
            self.shmem_unacct_blocks(f, HPAGE_PMD_NR);
            self.thp.events.file_fallback += 1;
            self.thp.events.file_fallback_charge += 1;
            return match e {
                crate::memcontrol::ChargeError::NoMem => Ok(None),
                e => Err(e.into()),
            };
        }
        self.spend_cpu((HPAGE_PMD_NR - 1) * crate::huge_memory::CLEAR_PAGE_NS);
        self.commit_charge_folio(head, memcg, HPAGE_PMD_NR);
        for i in 1..HPAGE_PMD_NR as u32 {
            self.frames.set_memcg(head + i, memcg);
        }
        self.frames.set(head, pf::SWAPBACKED);
        if sgp == Sgp::Write {
            self.frames.set(head, pf::REFERENCED);
        }
        self.frames.meta[head as usize].map = PageMap {
            mapping: f | MAPPING_FILE_BIT,
            index: hindex as u32,
        };
        self.mod_stat(memcg, Stat::File, HPAGE_PMD_NR as i64);
        self.mod_stat(memcg, Stat::Shmem, HPAGE_PMD_NR as i64);
        self.mod_stat(memcg, Stat::ShmemThp, HPAGE_PMD_NR as i64);
        let file = &mut self.files.v[f as usize];
        for i in 0..HPAGE_PMD_NR {
            file.entries[(hindex + i) as usize] = PRESENT | (u64::from(head) + i);
        }
        file.nrpages += HPAGE_PMD_NR;
        let past_end = file.size < hindex + HPAGE_PMD_NR - 1;
        // One entry of the xarray for the folio (a multi-index entry in the kernel).
        let objcg = self.memcg_objcg(memcg);
        self.xa_update(f, hindex, 1, 0, objcg);
        self.kmem_settle_prepaid(crate::kmem::Prepaid::Nodes);
        self.lru_add(head);
        self.thp.events.file_alloc += 1;
        if past_end && !self.shmem.shrinklist.contains(&f) {
            self.shmem.shrinklist.push(f);
        }
        Ok(Some(head))
    }

    /// shmem_add_to_page_cache(): a charged, swap-backed page goes in at `idx` (a hole or
    /// the swap entry it replaces).
    fn shmem_add_to_page_cache(&mut self, f: u32, idx: u64, pfn: Pfn) {
        let memcg = self.frames.memcg(pfn);
        self.frames.meta[pfn as usize].map = PageMap {
            mapping: f | MAPPING_FILE_BIT,
            index: idx as u32,
        };
        self.mod_stat(memcg, Stat::File, 1);
        self.mod_stat(memcg, Stat::Shmem, 1);
        let file = &mut self.files.v[f as usize];
        let was = file.entries[idx as usize];
        file.entries[idx as usize] = PRESENT | pfn as u64;
        file.nrpages += 1;
        if was & SHMEM_SWAP != 0 {
            file.swapped -= 1;
        } else {
            debug_assert_eq!(was, 0);
            let objcg = self.memcg_objcg(memcg);
            self.xa_update(f, idx, 1, 0, objcg);
        }
    }

    /// read() of one page of a shmem file: a hole reads zeroes and allocates nothing.
    pub(crate) fn shmem_read(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        if idx >= self.files.v[f as usize].size {
            return Ok(());
        }
        if let Some(pfn) = self.shmem_get_folio(pid, f, idx, Sgp::Read, false)? {
            self.mark_page_accessed(pfn);
        }
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }

    /// write() of one whole page of a shmem file; extends the file. ENOSPC when the mount
    /// is full.
    pub(crate) fn shmem_write(&mut self, pid: Pid, f: u32, idx: u64) -> Result<(), Fault> {
        // The size grows at shmem_write_end(): shmem_write_begin() sees the old one.
        let file = &mut self.files.v[f as usize];
        if file.entries.len() <= idx as usize {
            file.entries.resize(idx as usize + 1, 0);
        }
        let pfn = self
            .shmem_get_folio(pid, f, idx, Sgp::Write, false)?
            .expect("SGP_WRITE allocates");
        let file = &mut self.files.v[f as usize];
        file.size = file.size.max(idx + 1);
        // shmem_write_end(): folio_mark_dirty(), no dirty accounting.
        self.frames.set(self.folio_head(pfn), pf::DIRTY);
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }

    /// shmem_fault() of page `idx` through a shared mapping: a minor fault, or a major one
    /// when the page is read back from swap. Returns the page, mapped.
    fn shmem_fault_page(&mut self, pid: Pid, f: u32, idx: u64, write: bool) -> Result<Pfn, Fault> {
        let memcg = self.task(pid).memcg;
        self.mod_stat(memcg, Stat::Pgfault, 1);
        let majflt = self.task(pid).stats.majflt;
        let pfn = self
            .shmem_get_folio(pid, f, idx, Sgp::Cache, true)?
            .expect("SGP_CACHE allocates");
        if self.task(pid).stats.majflt == majflt {
            self.task_mut(pid).stats.minflt += 1;
        }
        if write {
            self.frames.set(self.folio_head(pfn), pf::DIRTY);
        }
        Ok(pfn)
    }

    /// A user access to page `idx` of a shared mapping of shmem file `f`: a mapped page
    /// sets its PTE's young bit (and, written, its dirty bit, which the kernel moves to the
    /// page when it unmaps it); otherwise shmem_fault() maps it. Past the end: SIGBUS.
    pub(crate) fn shmem_map_access(
        &mut self,
        pid: Pid,
        f: u32,
        idx: u64,
        write: bool,
    ) -> Result<(), Fault> {
        if idx >= self.files.v[f as usize].size {
            return Err(Fault::Segv);
        }
        if let Some(pfn) = resident(self.files.v[f as usize].entries[idx as usize]) {
            if self.frames.test(pfn, pf::MAPPED) {
                self.spend_cpu(self.cfg.costs.hit_ns);
                // The folio's accessed and dirty bits are its head's.
                self.frames.set(
                    self.folio_head(pfn),
                    if write {
                        pf::YOUNG | pf::DIRTY
                    } else {
                        pf::YOUNG
                    },
                );
                return Ok(());
            }
        }
        let pfn = self.shmem_fault_page(pid, f, idx, write)?;
        // do_set_pte() of the faulting page only (shmem's fault-around maps what is
        // cached, which a fault that allocates has not).
        self.shmem_map_page(f, pfn);
        if self.task(pid).nr_pages_over_high > 0 {
            self.mem_cgroup_handle_over_high(pid);
        }
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }

    /// Map a shmem page for a fault: young, `file_mapped`, and the RSS of the file's first
    /// mapper. A page of a huge folio maps the whole folio with one PMD (do_set_pmd():
    /// THP_FILE_MAPPED, NR_SHMEM_PMDMAPPED) where no page of it is mapped yet (pmd_none())
    /// and its range lies inside the mapping (the model's mappings cover their file, aligned
    /// as shmem_get_unmapped_area() aligns them); else just the page (do_set_pte()).
    fn shmem_map_page(&mut self, f: u32, pfn: Pfn) {
        if self.frames.test(pfn, pf::MAPPED) {
            return;
        }
        let head = self.folio_head(pfn);
        let memcg = self.frames.memcg(head);
        let mut nr = 1;
        if self.folio_nr_pages(head) > 1 {
            let hindex = u64::from(self.frames.meta[head as usize].map.index);
            if self.shmem_folio_mapcount(head) == 0
                && hindex + HPAGE_PMD_NR <= self.files.v[f as usize].size
            {
                nr = HPAGE_PMD_NR;
                for i in 0..HPAGE_PMD_NR as Pfn {
                    self.frames.set(head + i, pf::MAPPED);
                }
                self.frames.set(head + 1, TAIL_PMD_MAPPED);
                self.mod_stat(memcg, Stat::ShmemPmdMapped, HPAGE_PMD_NR as i64);
                self.thp.events.file_mapped += 1;
            } else {
                self.frames.set(pfn, pf::MAPPED);
            }
            self.frames.meta[head as usize + 1].pc.prev += nr as u32;
            self.frames.set(head, pf::YOUNG);
        } else {
            self.frames.set(pfn, pf::MAPPED | pf::YOUNG);
        }
        self.mod_stat(memcg, Stat::FileMapped, nr as i64);
        if let Some(owner) = self.files.v[f as usize].rss_owner {
            self.task_mut(owner).rss_shmem += nr;
        }
    }

    /// How many pages of the huge shmem folio of `head` are mapped (0 for any other folio).
    #[inline]
    pub(crate) fn shmem_folio_mapcount(&self, head: Pfn) -> u32 {
        // Reclaim asks of every folio it scans: the frame's own flag first, so that page
        // cache and small pages read no other frame.
        if self.thp.folios == 0
            || !self.frames.test(head, pf::SWAPBACKED)
            || !crate::huge_memory::is_head(&self.frames.meta, head)
            || !self.page_in_shmem_file(head)
        {
            return 0;
        }
        self.frames.meta[head as usize + 1].pc.prev
    }

    /// seed 001's one-step fault on a shmem file (filemap.rs file_fault()): map, access,
    /// unmap.
    pub(crate) fn shmem_fault(
        &mut self,
        pid: Pid,
        f: u32,
        idx: u64,
        write: bool,
    ) -> Result<(), Fault> {
        if idx >= self.files.v[f as usize].size {
            return Err(Fault::Segv);
        }
        let pfn = self.shmem_fault_page(pid, f, idx, write)?;
        self.mark_page_accessed(pfn);
        if self.task(pid).killed {
            return Err(Fault::Killed);
        }
        Ok(())
    }

    /// shmem_swapin_folio(): the page of swap entry `slot` at `idx` comes back into the
    /// file. `fault`: a page fault (a major one when the page is read from swap).
    fn shmem_swapin(
        &mut self,
        pid: Pid,
        f: u32,
        idx: u64,
        slot: SwapSlot,
        fault: bool,
    ) -> Result<Pfn, Fault> {
        let pfn = match self.swap.cached(slot) {
            Some(pfn) => {
                if self.frames.test(pfn, pf::WRITEBACK) {
                    // folio_wait_writeback(): the task sleeps until the write ends.
                    self.block_current(pid, crate::vmscan::Wait::PageWriteback(pfn));
                    return Err(Fault::Blocked);
                }
                self.spend_cpu(self.cfg.costs.minor_fault_ns);
                self.frames.clear(pfn, crate::memory::PG_READAHEAD);
                self.swapcache_del(pfn, slot);
                pfn
            }
            None => {
                self.spend_cpu(self.cfg.costs.major_fault_ns);
                let task_memcg = self.task(pid).memcg;
                let memcg = self.swapin_memcg(slot, task_memcg);
                let pfn = self.alloc_charged_page(memcg)?;
                let mut read = vec![crate::blkdev::swap_pos(slot)];
                self.swap_cluster_readahead(slot, task_memcg, &mut read);
                if self.task(pid).killed {
                    self.memcg_uncharge_raw(memcg);
                    self.free_frame(pfn);
                    return Err(Fault::Killed);
                }
                self.swapin_read(pid, slot, read);
                self.swapin_commit(pfn, memcg, slot);
                if fault {
                    self.mod_stat(task_memcg, Stat::Pgmajfault, 1);
                    self.task_mut(pid).stats.majflt += 1;
                }
                self.lru_add(pfn);
                pfn
            }
        };
        // delete_from_swap_cache() above, folio_mark_dirty() and swap_free(): the file
        // holds the page again, and the slot goes with its swap charge.
        self.frames.set(pfn, pf::DIRTY);
        self.shmem_add_to_page_cache(f, idx, pfn);
        self.swap_pte_put(slot);
        Ok(pfn)
    }

    /// Reclaim of a shmem page in its file, past its reference check (shrink_folio_list()):
    /// try_to_unmap(); a clean page is dropped (the caller frees it, charged to the memcg
    /// returned as `Err(Some)`); a dirty one goes to shmem_writepage(), which moves it to the
    /// swap cache under a new slot (returned) or gives up (`Err(None)`: activate).
    pub(crate) fn shmem_reclaim_page(
        &mut self,
        pfn: Pfn,
        may_swap: bool,
    ) -> Result<SwapSlot, Option<MemcgId>> {
        let owner = self.frames.memcg(pfn);
        let m = self.frames.meta[pfn as usize].map;
        let f = m.mapping & !MAPPING_FILE_BIT;
        self.shmem_unmap_page(pfn);
        if !self.frames.test(pfn, pf::DIRTY) {
            // __remove_mapping() of a clean page: no shadow entry for a swap-backed one.
            self.shmem_delete_from_page_cache(pfn, 0);
            self.shmem_unacct_blocks(f, 1);
            self.xa_update(f, u64::from(m.index), -1, 0, crate::kmem::ROOT_OBJCG);
            return Err(Some(owner));
        }
        // shmem_writepage(): no swap at all, or no slot or swap charge to be had: redirty
        // and activate.
        if !may_swap || self.total_swap_pages == 0 {
            return Err(None);
        }
        let Some(slot) = self.add_to_swap_cache(pfn, owner) else {
            return Err(None);
        };
        // swap_shmem_alloc() (the file's entry holds the slot) and
        // shmem_delete_from_page_cache() with the swap entry.
        self.swap.pte_get(slot);
        self.shmem_delete_from_page_cache(pfn, SHMEM_SWAP | u64::from(slot));
        self.files.v[f as usize].swapped += 1;
        self.frames.meta[pfn as usize].map = PageMap {
            mapping: crate::memory::SWAPCACHE_MAPPING,
            index: slot,
        };
        Ok(slot)
    }

    /// The page leaves its shmem file, whose entry becomes `entry` (0: a hole).
    fn shmem_delete_from_page_cache(&mut self, pfn: Pfn, entry: u64) {
        let m = self.frames.meta[pfn as usize].map;
        let memcg = self.frames.memcg(pfn);
        let file = &mut self.files.v[(m.mapping & !MAPPING_FILE_BIT) as usize];
        file.entries[m.index as usize] = entry;
        file.nrpages -= 1;
        self.mod_stat(memcg, Stat::File, -1);
        self.mod_stat(memcg, Stat::Shmem, -1);
    }

    /// try_to_unmap() or zap of a mapped shmem page; of a PMD-mapped folio's page, the
    /// whole PMD.
    pub(crate) fn shmem_unmap_page(&mut self, pfn: Pfn) {
        if !self.frames.test(pfn, pf::MAPPED) {
            return;
        }
        let head = self.folio_head(pfn);
        let memcg = self.frames.memcg(head);
        let mut nr = 1;
        if self.folio_nr_pages(head) > 1 {
            if self.frames.test(head + 1, TAIL_PMD_MAPPED) {
                nr = HPAGE_PMD_NR;
                for i in 0..HPAGE_PMD_NR as Pfn {
                    self.frames.clear(head + i, pf::MAPPED);
                }
                self.frames.clear(head + 1, TAIL_PMD_MAPPED);
                self.mod_stat(memcg, Stat::ShmemPmdMapped, -(HPAGE_PMD_NR as i64));
            } else {
                self.frames.clear(pfn, pf::MAPPED);
            }
            let count = &mut self.frames.meta[head as usize + 1].pc.prev;
            debug_assert!(*count >= nr as u32);
            *count -= nr as u32;
            if *count == 0 {
                self.frames.clear(head, pf::YOUNG);
            }
        } else {
            self.frames.clear(pfn, pf::MAPPED | pf::YOUNG);
        }
        self.mod_stat(memcg, Stat::FileMapped, -(nr as i64));
        let f = self.frames.meta[head as usize].map.mapping & !MAPPING_FILE_BIT;
        if let Some(owner) = self.files.v[f as usize].rss_owner {
            self.task_mut(owner).rss_shmem -= nr;
        }
    }

    /// Unmap every page of the huge shmem folio of `head`.
    fn shmem_unmap_folio(&mut self, head: Pfn) {
        for i in 0..HPAGE_PMD_NR as Pfn {
            if self.shmem_folio_mapcount(head) == 0 {
                break;
            }
            self.shmem_unmap_page(head + i);
        }
    }

    /// split_huge_page() of the huge shmem folio of `head`, which reclaim has isolated
    /// (`on_lru` false) or which is on its LRU list: unmap_folio() takes every mapping of a
    /// file folio (the PMD's split counted, THP_SPLIT_PMD) and none comes back; each page
    /// becomes a folio of its own in the file with the head's flags
    /// (__split_huge_page_tail()); the pages past the file's end leave the file and are
    /// freed with their blocks and charge (__split_huge_page()); NR_SHMEM_THPS drops
    /// (THP_SPLIT_PAGE). On the LRU the pages kept go back on their lists; isolated, the kept
    /// tails are returned in order for reclaim to take next.
    pub(crate) fn shmem_split_folio(&mut self, head: Pfn, on_lru: bool) -> Vec<Pfn> {
        debug_assert!(self.folio_nr_pages(head) > 1 && self.page_in_shmem_file(head));
        if self.frames.test(head + 1, TAIL_PMD_MAPPED) {
            self.thp.events.split_pmd += 1;
        }
        self.shmem_unmap_folio(head);
        if on_lru {
            self.lru_del(head);
        }
        let memcg = self.frames.memcg(head);
        let m = self.frames.meta[head as usize].map;
        let f = m.mapping & !MAPPING_FILE_BIT;
        let end = self.files.v[f as usize].size;
        let copied = self.frames.flags(head) & crate::huge_memory::SPLIT_COPIED_FLAGS;
        let objcg = self.memcg_objcg(memcg);
        let mut kept = Vec::new();
        let mut freed = Vec::new();
        for i in 1..HPAGE_PMD_NR as u32 {
            let t = &mut self.frames.meta[(head + i) as usize];
            t.pc.flags = crate::page_cgroup::LRU_NONE | pf::ALLOCATED | copied;
            t.pc.prev = crate::page_cgroup::NIL;
            t.map = PageMap {
                mapping: m.mapping,
                index: m.index + i,
            };
            let idx = u64::from(m.index + i);
            if idx < end {
                kept.push(head + i);
                self.xa_update(f, idx, 1, 0, objcg);
            } else {
                self.shmem_delete_from_page_cache(head + i, 0);
                freed.push((head + i, Some(memcg)));
            }
        }
        self.thp.folios -= 1;
        self.thp.events.split_page += 1;
        self.mod_stat(memcg, Stat::ShmemThp, -(HPAGE_PMD_NR as i64));
        self.shmem_unacct_blocks(f, freed.len() as u64);
        self.free_page_list(&freed);
        if on_lru {
            self.lru_add(head);
            for &t in &kept {
                self.lru_add(t);
            }
            kept.clear();
        }
        kept
    }

    /// Truncation of the whole huge shmem folio of `head`: unmapped, off its list, out of
    /// the file with its blocks, uncharged and freed as one order-9 block.
    fn shmem_free_folio(&mut self, head: Pfn) {
        let memcg = self.frames.memcg(head);
        let m = self.frames.meta[head as usize].map;
        let f = m.mapping & !MAPPING_FILE_BIT;
        self.shmem_unmap_folio(head);
        self.lru_del(head);
        let file = &mut self.files.v[f as usize];
        for i in 0..HPAGE_PMD_NR {
            file.entries[(u64::from(m.index) + i) as usize] = 0;
        }
        file.nrpages -= HPAGE_PMD_NR;
        for item in [Stat::File, Stat::Shmem, Stat::ShmemThp] {
            self.mod_stat(memcg, item, -(HPAGE_PMD_NR as i64));
        }
        self.xa_update(f, u64::from(m.index), -1, 0, crate::kmem::ROOT_OBJCG);
        self.shmem_unacct_blocks(f, HPAGE_PMD_NR);
        self.uncharge_folio(memcg, HPAGE_PMD_NR);
        self.free_thp_frames(head);
    }

    /// The tmpfs shrinker (shmem_unused_huge_scan() and shmem_unused_huge_shrink()), which
    /// global reclaim's shrink_slab() runs with the dcache shrinker's arithmetic over the
    /// files on the list: a file whose size is a whole number of huge pages has nothing to
    /// give and leaves the list; else a huge folio at its end is split, which frees its
    /// pages past the end; one a reclaimer holds isolated is tried again later.
    pub(crate) fn shmem_unused_huge_scan(&mut self, priority: i32) {
        let freeable = self.shmem.shrinklist.len() as u64;
        if freeable == 0 {
            return;
        }
        let to_scan = crate::kmem::shrinker_scan_count(freeable, priority);
        let mut retry = Vec::new();
        for f in self
            .shmem
            .shrinklist
            .drain(..to_scan as usize)
            .collect::<Vec<_>>()
        {
            let size = self.files.v[f as usize].size;
            if size.is_multiple_of(HPAGE_PMD_NR) {
                continue;
            }
            let Some(pfn) = self.files.v[f as usize]
                .entries
                .get((size - size % HPAGE_PMD_NR) as usize)
                .and_then(|&e| resident(e))
            else {
                continue;
            };
            let head = self.folio_head(pfn);
            if self.folio_nr_pages(head) == 1 {
                continue;
            }
            if self.frames.lru(head) == crate::page_cgroup::LRU_NONE {
                retry.push(f);
                continue;
            }
            self.shmem_split_folio(head, true);
        }
        self.shmem.shrinklist.extend(retry);
    }

    /// shmem_undo_range() from `new_size` to the end: pages are dropped a folio_batch at a
    /// time (each batch uncharged together), swap entries freed with their swap-cache pages
    /// (free_swap_and_cache()); the blocks go back to the mount.
    pub(crate) fn shmem_truncate(&mut self, f: u32, new_size: u64) {
        let old = self.files.v[f as usize].size;
        self.files.v[f as usize].size = new_size;
        if new_size >= old {
            let file = &mut self.files.v[f as usize];
            if file.entries.len() < new_size as usize {
                file.entries.resize(new_size as usize, 0);
            }
            return;
        }
        let mut batch = Vec::with_capacity(crate::filemap::PAGEVEC_SIZE);
        let mut freed = 0u64;
        // Pages of a huge folio may lie past the old size.
        let mut idx = new_size;
        while idx < self.files.v[f as usize].entries.len() as u64 {
            let e = self.files.v[f as usize].entries[idx as usize];
            idx += 1;
            if e == 0 {
                continue;
            }
            if let Some(pfn) = resident(e).filter(|_| self.thp.folios > 0) {
                let head = self.folio_head(pfn);
                if self.folio_nr_pages(head) > 1 {
                    // A whole folio goes; one the new end cuts is split
                    // (truncate_inode_partial_folio()), which drops its pages past the end.
                    let hindex = u64::from(self.frames.meta[head as usize].map.index);
                    if hindex >= new_size {
                        self.shmem_free_folio(head);
                    } else {
                        self.shmem_split_folio(head, true);
                    }
                    idx = hindex + HPAGE_PMD_NR;
                    continue;
                }
            }
            let idx = idx - 1;
            freed += 1;
            if let Some(pfn) = resident(e) {
                let memcg = self.frames.memcg(pfn);
                self.shmem_unmap_page(pfn);
                self.lru_del(pfn);
                self.shmem_delete_from_page_cache(pfn, 0);
                batch.push((pfn, Some(memcg)));
                if batch.len() == crate::filemap::PAGEVEC_SIZE {
                    self.free_page_list(&batch);
                    batch.clear();
                }
            } else {
                debug_assert!(e & SHMEM_SWAP != 0);
                self.files.v[f as usize].entries[idx as usize] = 0;
                self.files.v[f as usize].swapped -= 1;
                self.swap_pte_put_cached((e & 0xffff_ffff) as SwapSlot);
            }
            self.xa_update(f, idx, -1, 0, crate::kmem::ROOT_OBJCG);
        }
        self.free_page_list(&batch);
        self.shmem_unacct_blocks(f, freed);
        self.files.v[f as usize].entries.truncate(new_size as usize);
    }

    /// mmap(MAP_SHARED) of a shmem file by `pid`: the first mapper's RSS counts its pages.
    pub(crate) fn shmem_mmap(&mut self, pid: Pid, f: u32) {
        let file = &mut self.files.v[f as usize];
        if file.rss_owner.is_none() {
            file.rss_owner = Some(pid);
        }
    }

    /// The last mapping of a shmem file went (its pages are unmapped already): an unnamed
    /// object (shared anonymous memory, a memfd, an unlinked file) goes with it.
    pub(crate) fn shmem_last_unmap(&mut self, f: u32) {
        let file = &mut self.files.v[f as usize];
        file.rss_owner = None;
        if file.name.is_none() {
            self.file_evict(f);
        }
    }

    /// The invariants of the tmpfs mounts: each one's used blocks are the pages and swap
    /// entries of its files.
    pub(crate) fn check_shmem(&self) -> Result<(), String> {
        let mut used = vec![0u64; self.shmem.mounts.len()];
        let mut rss = std::collections::BTreeMap::<Pid, u64>::new();
        for (fi, file) in self.files.v.iter().enumerate() {
            let Some(mnt) = file.shmem else {
                continue;
            };
            let mut swapped = 0;
            for (idx, &e) in file.entries.iter().enumerate() {
                if e & SHMEM_SWAP != 0 {
                    let slot = (e & 0xffff_ffff) as SwapSlot;
                    if !self.swap.in_use(slot) || !self.swap.pte_held(slot) {
                        return Err(format!("shmem file {fi} index {idx}: slot {slot} not held"));
                    }
                    swapped += 1;
                } else if let Some(pfn) = resident(e) {
                    // A page of a huge folio is its head's index plus its offset; only such
                    // a page may lie past the file's end.
                    let head = self.folio_head(pfn);
                    if idx as u64 >= file.size && head == pfn && self.folio_nr_pages(head) == 1 {
                        return Err(format!("shmem file {fi} index {idx}: a page past its end"));
                    }
                    let fm = self.frames.get(head);
                    if fm.pc.flags & pf::SWAPBACKED == 0
                        || fm.map.mapping != fi as u32 | MAPPING_FILE_BIT
                        || (fm.map.index + (pfn - head)) as usize != idx
                    {
                        return Err(format!(
                            "shmem file {fi} index {idx}: frame {pfn} not its own"
                        ));
                    }
                } else if e != 0 {
                    return Err(format!("shmem file {fi} index {idx}: entry {e:#x}"));
                }
            }
            if swapped != file.swapped {
                return Err(format!(
                    "shmem file {fi}: {swapped} swap entries, {} counted",
                    file.swapped
                ));
            }
            if let Some(u) = used.get_mut(mnt as usize) {
                *u += file.nrpages + swapped;
            }
            if let Some(owner) = file.rss_owner {
                *rss.entry(owner).or_default() += file
                    .entries
                    .iter()
                    .filter_map(|&e| resident(e))
                    .filter(|&p| self.frames.test(p, pf::MAPPED))
                    .count() as u64;
            }
        }
        for (pid, n) in rss {
            if !self.task(pid).exited() && self.task(pid).rss_shmem != n {
                return Err(format!(
                    "task {pid}: rss_shmem {} but its shmem files map {n} pages",
                    self.task(pid).rss_shmem
                ));
            }
        }
        for (i, m) in self.shmem.mounts.iter().enumerate() {
            if let Some(m) = m {
                if m.used_blocks != used[i] {
                    return Err(format!(
                        "tmpfs {:?}: {} blocks used, its files hold {}",
                        m.dir, m.used_blocks, used[i]
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::lru;

    /// A checked machine with `keys` and one group whose idle task runs in the context.
    fn machine(keys: &[(&str, &str)]) -> (Machine, MemcgId, Pid) {
        let base = [("memory", "128M"), ("swap", "64M"), ("swap_sync", "on")];
        let all: Vec<_> = base.iter().chain(keys).copied().collect();
        crate::machine::test_machine_with_task(&all)
    }

    fn write_file(m: &mut Machine, pid: Pid, name: &str, pages: u64) -> u32 {
        let f = m.file_open(name);
        for i in 0..pages {
            m.file_write(pid, f, i).unwrap();
        }
        f
    }

    /// tmpfs pages are charged to the writer, counted in `file` and `shmem`, and live on
    /// the inactive anon list; reading a hole allocates nothing; unlink frees them.
    #[test]
    fn a_tmpfs_file_is_charged_as_shmem_on_the_anon_list() {
        let (mut m, a, pid) = machine(&[]);
        let f = write_file(&mut m, pid, "/dev/shm/x", 256);
        assert!(m.file_is_shmem(f));
        assert_eq!(m.stat_total(a, Stat::Shmem), 256);
        assert_eq!(m.stat_total(a, Stat::File), 256);
        assert_eq!(m.stat_total(a, Stat::FileDirty), 0);
        assert_eq!(m.stat_total(a, lru::stat(lru::INACTIVE_ANON)), 256);
        assert_eq!(m.stat_total(a, lru::stat(lru::INACTIVE_FILE)), 0);
        assert_eq!(m.shmem.mounts[1].as_ref().unwrap().used_blocks, 256);
        // A hole read: nothing comes in.
        m.file_truncate(f, 512);
        for i in 256..512 {
            m.file_read(pid, f, i).unwrap();
        }
        assert_eq!(m.stat_total(a, Stat::Shmem), 256);
        // A second write of a page activates it (PG_referenced from the first).
        m.file_write(pid, f, 0).unwrap();
        assert_eq!(m.stat_total(a, lru::stat(lru::ACTIVE_ANON)), 1);
        m.check().unwrap();
        m.unlink("/dev/shm/x").unwrap();
        assert_eq!(m.stat_total(a, Stat::Shmem), 0);
        assert_eq!(m.stat_total(a, Stat::File), 0);
        assert_eq!(m.shmem.mounts[1].as_ref().unwrap().used_blocks, 0);
        assert_eq!(m.unlink("/dev/shm/x"), Err(Errno::ENOENT));
        m.check().unwrap();
        m.cur = None;
    }

    /// Reclaim swaps tmpfs pages out through the swap cache (shmem and file down, swap up)
    /// and a read brings them back, freeing their slots.
    #[test]
    fn tmpfs_pages_swap_out_and_come_back() {
        let (mut m, a, pid) = machine(&[]);
        let f = write_file(&mut m, pid, "/dev/shm/y", 128);
        for _ in 0..20 {
            if m.stat_total(a, Stat::Shmem) == 0 {
                break;
            }
            m.try_to_free_mem_cgroup_pages(a, 128, true, true, None);
        }
        assert_eq!(m.stat_total(a, Stat::Shmem), 0);
        assert_eq!(m.stat_total(a, Stat::Swap), 128);
        assert_eq!(m.files.v[f as usize].swapped, 128);
        assert_eq!(m.stat_total(a, Stat::Pswpout), 128);
        // The blocks stay used while the pages are in swap.
        assert_eq!(m.shmem.mounts[1].as_ref().unwrap().used_blocks, 128);
        m.check().unwrap();
        for i in 0..128 {
            m.file_read(pid, f, i).unwrap();
        }
        assert_eq!(m.stat_total(a, Stat::Shmem), 128);
        assert_eq!(m.stat_total(a, Stat::Swap), 0);
        assert_eq!(m.stat_total(a, Stat::SwapCached), 0);
        assert_eq!(m.files.v[f as usize].swapped, 0);
        assert!(m.stat_total(a, Stat::Pswpin) >= 128);
        m.check().unwrap();
        // Swapped out again, then truncated: the slots go with their charges.
        for _ in 0..20 {
            if m.stat_total(a, Stat::Shmem) == 0 {
                break;
            }
            m.try_to_free_mem_cgroup_pages(a, 128, true, true, None);
        }
        m.file_truncate(f, 0);
        assert_eq!(m.stat_total(a, Stat::Swap), 0);
        assert_eq!(m.swap.nr_free(), m.swap.nr_slots());
        m.check().unwrap();
        m.cur = None;
    }

    /// Without swap, tmpfs pages cannot be reclaimed; a page a read fault brought in
    /// (clean zeroes) is dropped like clean cache.
    #[test]
    fn without_swap_only_clean_shmem_pages_go() {
        let (mut m, a, pid) = machine(&[("swap", "0")]);
        let f = write_file(&mut m, pid, "/dev/shm/z", 64);
        m.file_truncate(f, 128);
        m.file_mmap(pid, f, false);
        for i in 64..128 {
            m.file_map_access(pid, f, i).unwrap();
        }
        assert_eq!(m.stat_total(a, Stat::Shmem), 128);
        assert_eq!(m.stat_total(a, Stat::FileMapped), 64);
        assert_eq!(m.task(pid).rss_shmem, 64);
        m.check().unwrap();
        // Anon lists are not scanned without swap; a unified LRU would. Scan through
        // memory.reclaim's path with swap allowed: still nothing can be swapped.
        for _ in 0..5 {
            m.try_to_free_mem_cgroup_pages(a, 128, true, true, None);
        }
        assert_eq!(m.stat_total(a, Stat::Shmem), 128);
        m.check().unwrap();
        m.cur = None;
    }

    /// A mount's size caps its pages: the write past it fails with ENOSPC.
    #[test]
    fn a_full_tmpfs_refuses_the_write() {
        let (mut m, a, pid) = machine(&[]);
        assert_eq!(m.tmpfs_mount("/mnt/t", Some(16), None), Ok(()));
        assert_eq!(m.tmpfs_mount("/mnt/t", Some(16), None), Err(Errno::EBUSY));
        assert_eq!(m.tmpfs_mount("mnt", Some(16), None), Err(Errno::EINVAL));
        let f = m.file_open("/mnt/t/big");
        assert!(m.file_is_shmem(f));
        for i in 0..16 {
            m.file_write(pid, f, i).unwrap();
        }
        assert_eq!(m.file_write(pid, f, 16), Err(Fault::Segv));
        assert!(matches!(
            m.task(pid).error.as_deref(),
            Some(crate::task::SyscallError::NoSpace { fault: false, .. })
        ));
        assert_eq!(m.stat_total(a, Stat::Shmem), 16);
        assert_eq!(m.tmpfs_remount("/mnt/t", Some(8), None), Err(Errno::EINVAL));
        assert_eq!(m.tmpfs_remount("/mnt/t", Some(32), None), Ok(()));
        m.check().unwrap();
        // umount frees everything on it; a file of the same name is on disk after.
        assert_eq!(m.tmpfs_umount("/mnt/t"), Ok(()));
        assert_eq!(m.tmpfs_umount("/mnt/t"), Err(Errno::EINVAL));
        assert_eq!(m.stat_total(a, Stat::Shmem), 0);
        let disk = m.file_open("/mnt/t/big");
        assert!(!m.file_is_shmem(disk));
        m.check().unwrap();
        m.cur = None;
    }

    /// `huge=always`: every new page of the file is a huge folio, charged and counted 512
    /// pages at once, even past the file's end; the shrinker splits the last one and frees
    /// what lies past the end; truncation splits the folio it cuts and frees whole ones.
    #[test]
    fn a_huge_tmpfs_takes_whole_folios_and_gives_back_their_tails() {
        let (mut m, a, pid) = machine(&[]);
        m.tmpfs_mount("/mnt/h", Some(0), Some(ShmemHuge::Always))
            .unwrap();
        let f = write_file(&mut m, pid, "/mnt/h/f", 768);
        let nr = HPAGE_PMD_NR;
        assert_eq!(m.stat_total(a, Stat::ShmemThp), 2 * nr);
        assert_eq!(m.stat_total(a, Stat::Shmem), 2 * nr);
        assert_eq!(m.stat_total(a, Stat::File), 2 * nr);
        // The writes after a folio's first mark it accessed again: it is active.
        assert_eq!(m.stat_total(a, Stat::ActiveAnon), 2 * nr);
        assert!(m.memory.get(a as usize).usage >= 2 * nr);
        assert_eq!(m.thp.events.file_alloc, 2);
        assert_eq!(m.shmem.mounts[2].as_ref().unwrap().used_blocks, 2 * nr);
        assert_eq!(m.shmem.shrinklist, vec![f]);
        m.check().unwrap();
        // The shrinker: the second folio passes the end (768 pages).
        m.shmem_unused_huge_scan(0);
        assert_eq!(m.stat_total(a, Stat::ShmemThp), nr);
        assert_eq!(m.stat_total(a, Stat::Shmem), 768);
        assert_eq!(m.thp.events.split_page, 1);
        assert_eq!(m.shmem.mounts[2].as_ref().unwrap().used_blocks, 768);
        assert!(m.shmem.shrinklist.is_empty());
        m.check().unwrap();
        // Truncation to 100 pages splits the first folio and frees the rest.
        m.file_truncate(f, 100);
        assert_eq!(m.stat_total(a, Stat::ShmemThp), 0);
        assert_eq!(m.stat_total(a, Stat::Shmem), 100);
        assert_eq!(m.thp.folios, 0);
        m.check().unwrap();
        // A file written again from a hole takes a folio; unlink frees it whole.
        m.file_truncate(f, 0);
        let g = write_file(&mut m, pid, "/mnt/h/g", 512);
        assert_eq!(m.stat_total(a, Stat::ShmemThp), nr);
        assert!(m.shmem.shrinklist.contains(&g));
        m.unlink("/mnt/h/g").unwrap();
        assert_eq!(m.stat_total(a, Stat::Shmem), 0);
        assert!(m.shmem.shrinklist.is_empty());
        assert_eq!(m.shmem.mounts[2].as_ref().unwrap().used_blocks, 0);
        m.check().unwrap();
        m.cur = None;
    }

    /// `within_size` gives a huge folio only where the file already covers the whole huge
    /// range: not to a file written from its end, but to one truncated up first; a range
    /// that holds a page already, or a mount without room for 512 more blocks, gets small
    /// pages; `deny` and `force` override the mounts.
    #[test]
    fn within_size_deny_and_force_decide_as_6_1() {
        let (mut m, a, pid) = machine(&[]);
        m.tmpfs_mount("/mnt/w", Some(0), Some(ShmemHuge::WithinSize))
            .unwrap();
        write_file(&mut m, pid, "/mnt/w/append", 1024);
        assert_eq!(m.stat_total(a, Stat::ShmemThp), 0);
        let f = m.file_open("/mnt/w/sized");
        m.file_truncate(f, 1000);
        m.file_write(pid, f, 0).unwrap();
        m.file_write(pid, f, 600).unwrap();
        // 0..512 lies inside 1000 pages; 512..1024 does not.
        assert_eq!(m.stat_total(a, Stat::ShmemThp), HPAGE_PMD_NR);
        assert_eq!(m.thp.events.file_alloc, 1);
        // deny: nothing huge anywhere; force: /dev/shm too.
        m.set_shmem_enabled(ShmemHuge::Deny);
        let g = m.file_open("/mnt/w/denied");
        m.file_truncate(g, 1024);
        m.file_write(pid, g, 0).unwrap();
        assert_eq!(m.thp.events.file_alloc, 1);
        m.set_shmem_enabled(ShmemHuge::Force);
        write_file(&mut m, pid, "/dev/shm/forced", 1);
        assert_eq!(m.thp.events.file_alloc, 2);
        // The range of `denied` holds a page: small pages from now on.
        m.file_write(pid, g, 1).unwrap();
        assert_eq!(m.thp.events.file_alloc, 2);
        // No room for 512 blocks: a small page, without a fallback event.
        m.tmpfs_mount("/mnt/small", Some(100), None).unwrap();
        write_file(&mut m, pid, "/mnt/small/s", 3);
        assert_eq!(m.thp.events.file_alloc, 2);
        assert_eq!(m.thp.events.file_fallback, 0);
        assert_eq!(m.shmem.mounts[3].as_ref().unwrap().used_blocks, 3);
        m.check().unwrap();
        m.cur = None;
    }

    /// Shared anonymous memory under shmem_enabled `always`: a folio inside the mapping is
    /// mapped whole by a PMD; one passing the mapping's end page by page; the last unmap
    /// frees them.
    #[test]
    fn shared_memory_maps_a_huge_folio_with_one_pmd() {
        let (mut m, a, pid) = machine(&[("shmem_thp", "always")]);
        let nr = HPAGE_PMD_NR;
        let f = m.shmem_new_object(nr + 256, a);
        m.file_mmap(pid, f, false);
        m.shmem_map_access(pid, f, 3, true).unwrap();
        assert_eq!(m.stat_total(a, Stat::FileMapped), nr);
        assert_eq!(m.stat_total(a, Stat::ShmemPmdMapped), nr);
        assert_eq!(m.thp.events.file_mapped, 1);
        assert_eq!(m.task(pid).rss_shmem, nr);
        for i in 0..nr {
            m.shmem_map_access(pid, f, i, true).unwrap();
        }
        assert_eq!(m.stat_total(a, Stat::Pgfault), 1);
        // The second folio passes the end of the 768-page object: PTEs.
        m.shmem_map_access(pid, f, nr + 7, true).unwrap();
        m.shmem_map_access(pid, f, nr + 8, false).unwrap();
        assert_eq!(m.stat_total(a, Stat::ShmemThp), 2 * nr);
        assert_eq!(m.stat_total(a, Stat::FileMapped), nr + 2);
        assert_eq!(m.stat_total(a, Stat::ShmemPmdMapped), nr);
        assert_eq!(m.task(pid).rss_shmem, nr + 2);
        assert_eq!(m.shmem_map_access(pid, f, 2 * nr, false), Err(Fault::Segv));
        m.check().unwrap();
        // Reclaim splits the folios (the PMD's split counted) and swaps their pages.
        for _ in 0..40 {
            if m.stat_total(a, Stat::Shmem) == 0 {
                break;
            }
            m.try_to_free_mem_cgroup_pages(a, 1024, true, true, None);
        }
        assert_eq!(m.stat_total(a, Stat::ShmemThp), 0);
        assert_eq!(m.stat_total(a, Stat::FileMapped), 0);
        assert_eq!(m.thp.events.split_pmd, 1);
        assert_eq!(m.thp.events.split_page, 2);
        // The pages past the end went with the split; the rest is in swap.
        assert_eq!(m.stat_total(a, Stat::Swap), nr + 256);
        m.check().unwrap();
        m.file_munmap_shared(f, false);
        assert_eq!(m.stat_total(a, Stat::Swap), 0);
        assert_eq!(m.task(pid).rss_shmem, 0);
        m.check().unwrap();
        m.cur = None;
    }

    /// A group without room for 512 pages charges small pages instead
    /// (THP_FILE_FALLBACK_CHARGE), as a huge charge never OOM-kills.
    #[test]
    fn a_huge_charge_that_fails_falls_back_to_small_pages() {
        let (mut m, a, pid) = machine(&[("shmem_thp", "always")]);
        m.memory.get_mut(a as usize).max = 300;
        let f = m.shmem_new_object(HPAGE_PMD_NR, a);
        m.file_mmap(pid, f, false);
        m.shmem_map_access(pid, f, 0, true).unwrap();
        assert_eq!(m.thp.events.file_fallback, 1);
        assert_eq!(m.thp.events.file_fallback_charge, 1);
        assert_eq!(m.stat_total(a, Stat::ShmemThp), 0);
        assert_eq!(m.stat_total(a, Stat::Shmem), 1);
        m.check().unwrap();
        m.cur = None;
    }

    /// Files go to the mount with the longest matching directory.
    #[test]
    fn a_name_belongs_to_the_innermost_mount() {
        let mut s = Shmem::new(1000, ShmemHuge::Never);
        assert_eq!(s.mount_of("/dev/shm/a"), Some(1));
        assert_eq!(s.mount_of("/dev/shm"), None);
        assert_eq!(s.mount_of("/dev/shmx/a"), None);
        assert_eq!(s.mount_of("a"), None);
        s.mounts.push(Some(TmpfsMount {
            dir: "/dev/shm/in".into(),
            max_blocks: 0,
            used_blocks: 0,
            huge: ShmemHuge::Never,
        }));
        assert_eq!(s.mount_of("/dev/shm/in/a"), Some(2));
        assert_eq!(s.mount_of("/dev/shm/inx"), Some(1));
        assert_eq!(TmpfsSize::parse("1M"), Ok(TmpfsSize::Bytes(1 << 20)));
        assert_eq!(TmpfsSize::parse("10%"), Ok(TmpfsSize::Percent(10)));
        assert!(TmpfsSize::parse("1Mx").is_err() && TmpfsSize::parse("x").is_err());
        assert_eq!(TmpfsSize::Bytes(4097).pages(1000), 2);
        assert_eq!(TmpfsSize::Percent(50).pages(1001), 501);
        assert_eq!(
            parse_tmpfs_options("remount,size=2k,huge=within_size"),
            Ok(TmpfsOptions {
                size: Some(TmpfsSize::Bytes(2048)),
                huge: Some(ShmemHuge::WithinSize),
                remount: true,
                bad: None,
            })
        );
        for bad in ["huge=force", "huge=", "size=1x", "size=%"] {
            assert_eq!(parse_tmpfs_options(bad).unwrap().bad.as_deref(), Some(bad));
        }
        assert!(parse_tmpfs_options("nr_inodes=5").is_err());
        assert!(valid_mount_dir("/a/b"));
        for bad in ["/", "a", "/a/", "/a//b", "/a/../b", "/./a", ""] {
            assert!(!valid_mount_dir(bad), "{bad}");
        }
    }
}
