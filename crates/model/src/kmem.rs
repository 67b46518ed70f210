//! Kernel memory: what the kernel allocates for itself on behalf of a cgroup, charged as 6.1
//! charges it.
//!
//! - obj_cgroup charging and memcg_account_kmem() (mm/memcontrol.c): objects are charged in
//!   bytes to an obj_cgroup; whole pages go to the memcg's memory counter (and v1's kmem
//!   counter) and to MEMCG_KMEM, the byte remainder stays with the obj_cgroup
//!   (nr_charged_bytes). The per-CPU object stock is not modelled: a charge is settled at
//!   once, and slab statistics are updated at once (6.1 batches them in that stock).
//! - At offline, a memcg's obj_cgroups and its dentry list_lru move to the parent
//!   (memcg_reparent_objcgs(), memcg_reparent_list_lrus()): kernel memory of a removed group
//!   is the parent's from then on, so the group itself can be freed while its objects live.
//! - Kernel stacks (kernel/fork.c account_kernel_stack): THREAD_SIZE = 16 KiB per task,
//!   charged to the memcg of the task that forks, as are task_struct and its companions.
//! - User page tables (GFP_PGTABLE_USER, __pte_alloc()/__pmd_alloc() in mm/memory.c): one PTE
//!   page per 2 MiB region an anon mapping touches, one PMD page per GiB of a task's
//!   mappings, charged to the faulting task's memcg and freed with the mapping (PMD pages at
//!   exit).
//! - Per-CPU memory of each memcg (mem_cgroup_alloc(): vmstats_percpu and
//!   lruvec_stats_percpu, pcpu_memcg_post_alloc_hook()), charged to the parent because
//!   mem_cgroup_css_alloc() allocates under set_active_memcg(parent).
//! - Slab: inode and dentry of each file created (freed when the file goes), negative
//!   dentries of failed lookups on a per-memcg list_lru, which the memcg-aware dcache
//!   shrinker (shrink_slab() in mm/vmscan.c, do_shrink_slab() with DEFAULT_SEEKS) frees in
//!   reclaim; the dentries of files are not shrunk (a simplification). Each list_lru's
//!   length is a counter (list_lru_one.nr_items), kept for all memcgs in one dense array.
//! - Slab that comes with the page cache (filemap.rs): the nodes of each file's xarray
//!   (radix_tree_node, charged to the task that inserts a page, freed when their range
//!   empties) and a buffer head per page written through ext4 (charged to the page's memcg,
//!   freed with the page by try_to_free_buffers() or truncation), both SLAB_RECLAIM_ACCOUNT.
//!   Shadow entries keep their leaves alive; leaves holding only shadow entries are on their
//!   memcg's shadow-node list, which the shadow shrinker (mm/workingset.c) trims to one node
//!   per 8 pages of the group in reclaim's shrink_slab(). ext4's extent status cache is not
//!   accounted in 6.1 and is not modelled.
//! - The memory a machine never gives to cgroups: MemTotal below RAM by the kernel's
//!   reservations (`reserved=`), and the memory the base system (init, shell, the kernel's own
//!   caches) holds outside any group (`base=`), both unreclaimable.
//!
//! Object sizes are what Linux 6.1 (Debian's 6.1.0 amd64 build) charges, measured through
//! memory.stat with `memcgsim oracle` (docs/FIDELITY.md).
//!
//! `kmem=off` is the kernel's `cgroup.memory=nokmem`: the objects exist and take memory, but
//! are charged to no group.

use std::collections::{BTreeMap, VecDeque};

use crate::machine::Machine;
use crate::memcontrol::{ChargeError, MemcgId, ROOT_MEMCG};
use crate::page_cgroup::{pf, Pfn};
use crate::page_counter::Counters;
use crate::stat::Stat;

/// THREAD_SIZE on x86-64.
pub const THREAD_STACK_BYTES: u64 = 16 * 1024;
/// Slab a new thread takes besides its stack (task_struct, pid, and the like): 6.1 charges
/// 9,096 bytes per thread of a process, of which VMA_SLAB_BYTES are the stack's mapping.
pub const THREAD_SLAB_BYTES: u64 = 9_096 - VMA_SLAB_BYTES;
/// An anonymous mapping's vm_area_struct, anon_vma and anon_vma_chain.
pub const VMA_SLAB_BYTES: u64 = 360;
/// A file's inode and dentry (ext4_inode_cache, 1,192 bytes, and dentry, 192 bytes, each with
/// its obj_cgroup pointer): 1,400 bytes per file created. What 6.1 charges per page of the
/// file comes on top (XA_NODE_BYTES, BUFFER_HEAD_BYTES).
pub const FILE_SLAB_BYTES: u64 = 1_400;
/// A node of a file's page-cache xarray (radix_tree_node: a 584-byte slab object, with the
/// obj_cgroup pointer each accounted object carries).
pub const XA_NODE_BYTES: u64 = 592;
/// A buffer head (buffer_head: 104 bytes, with its obj_cgroup pointer).
pub const BUFFER_HEAD_BYTES: u64 = 112;
/// A negative dentry with the long external name of test_kmem.c's lookups: 336 bytes.
pub const NEG_DENTRY_BYTES: u64 = 336;
/// Per-CPU memory of one memcg, per possible CPU (6.1: 7,136 bytes with 2 CPUs).
pub const MEMCG_PERCPU_BYTES: u64 = 3_568;
/// Pages an anonymous mapping covers per PTE page (2 MiB).
pub const PTE_SPAN_PAGES: u64 = 512;
/// Pages per PMD page (1 GiB).
pub const PMD_SPAN_PAGES: u64 = 512 * 512;
/// CPU time of a clone() of a thread.
pub const CLONE_NS: u64 = 15_000;
/// CPU time of a path lookup that misses (stat() of a long name).
pub const LOOKUP_NS: u64 = 1_000;
/// DEFAULT_SEEKS of a shrinker.
pub(crate) const DEFAULT_SEEKS: u64 = 2;
/// SHRINK_BATCH.
pub(crate) const SHRINK_BATCH: u64 = 128;

/// An obj_cgroup: what kernel objects point to instead of a memcg, so that a memcg can go
/// while its objects live.
#[derive(Clone, Debug)]
pub struct ObjCgroup {
    /// The memcg charged; the parent after reparenting.
    pub memcg: MemcgId,
    /// Bytes charged to the memcg beyond what objects hold (nr_charged_bytes), < PAGE_SIZE.
    pub charged_bytes: u64,
    /// Pages charged through this obj_cgroup and not yet uncharged.
    pub pages: u64,
}

/// Index into `Kmem::objcgs`; 0 is the root's, which charges no counter.
pub type ObjcgId = u32;
pub const ROOT_OBJCG: ObjcgId = 0;

/// What kind of kernel object an allocation is (its statistic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KmemKind {
    Stack,
    Pagetable,
    SlabReclaimable,
    SlabUnreclaimable,
    Percpu,
}

impl KmemKind {
    /// The statistic and the value to add for `bytes`.
    fn stat(self, bytes: u64) -> (Stat, i64) {
        match self {
            KmemKind::Stack => (Stat::KernelStackKb, (bytes / 1024) as i64),
            KmemKind::Pagetable => (Stat::Pagetables, (bytes / crate::PAGE_SIZE) as i64),
            KmemKind::SlabReclaimable => (Stat::SlabReclaimableB, bytes as i64),
            KmemKind::SlabUnreclaimable => (Stat::SlabUnreclaimableB, bytes as i64),
            KmemKind::Percpu => (Stat::PercpuB, bytes as i64),
        }
    }

    /// The migrate type of its pages: reclaimable slabs (SLAB_RECLAIM_ACCOUNT caches: dentries,
    /// inodes, xarray nodes, buffer heads) are __GFP_RECLAIMABLE, the rest unmovable.
    fn migratetype(self) -> crate::buddy::MigrateType {
        match self {
            KmemKind::SlabReclaimable => crate::buddy::MigrateType::Reclaimable,
            _ => crate::buddy::MigrateType::Unmovable,
        }
    }

    /// Page-sized allocations charge whole pages without the byte remainder.
    fn whole_pages(self) -> bool {
        matches!(self, KmemKind::Stack | KmemKind::Pagetable)
    }
}

/// The machine's kernel memory.
#[derive(Default)]
pub struct Kmem {
    pub objcgs: Vec<ObjCgroup>,
    /// Frames the kernel holds for objects (the pages charged, plus the root's).
    pub frames: Vec<Pfn>,
    /// Node statistics of all kernel memory, the root's and the base system's included
    /// (/proc/meminfo, /proc/vmstat), indexed like `NODE_ITEMS`.
    pub node: [i64; 5],
    /// v1 memory.kmem counters, indexed by memcg id.
    pub counter: Counters,
    /// Frames held by the base system outside any group.
    pub base_pages: u64,
    /// Negative dentries shrunk, over the run.
    pub dentries_shrunk: u64,
    /// The last key given to a leaf on a shadow-node list (keys grow with the time a leaf
    /// joins, so each list is in its order).
    pub shadow_seq: u64,
    /// Shadow-only xarray leaves the shadow-node shrinker freed, over the run.
    pub shadow_nodes_reclaimed: u64,
    /// Page-cache slab charged ahead of the change that allocates it (kmem_prepay()), by
    /// `Prepaid`: the obj_cgroup and the bytes not yet taken.
    pub prepaid: [Option<(ObjcgId, u64)>; 2],
    /// Per memcg id, the lengths of its two list_lrus (list_lru_count_one(), which the
    /// kernel keeps as a counter per list): in one dense array, so that reclaim's
    /// shrink_slab() of a group with empty lists reads nothing else of it.
    pub lru_len: Vec<SlabLruLen>,
}

/// The lengths of a memcg's negative-dentry and shadow-node list_lrus.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlabLruLen {
    pub dentries: u64,
    pub shadow_nodes: u64,
}

/// What page-cache slab is charged ahead: an insertion's xarray nodes, a write's buffer head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prepaid {
    Nodes = 0,
    Buffers = 1,
}

/// The node items of `Kmem::node`.
pub const NODE_ITEMS: [Stat; 5] = [
    Stat::KernelStackKb,
    Stat::Pagetables,
    Stat::SlabReclaimableB,
    Stat::SlabUnreclaimableB,
    Stat::PercpuB,
];

/// A memcg's part: its active obj_cgroup and its negative-dentry list_lru, as runs of
/// dentries of one obj_cgroup, oldest first.
#[derive(Clone, Debug, Default)]
pub struct MemcgKmem {
    pub objcg: ObjcgId,
    pub dentry_lru: VecDeque<(ObjcgId, u64)>,
    /// The obj_cgroup its per-CPU memory was charged to (the parent's at creation).
    pub percpu_objcg: Option<ObjcgId>,
    /// Its part of the shadow-node list_lru (mm/workingset.c `shadow_nodes`): xarray leaves
    /// holding only shadow entries, charged to its obj_cgroups, by key (oldest first) to
    /// (file, leaf position).
    pub shadow_lru: BTreeMap<u64, (u32, u64)>,
}

impl MemcgKmem {
    /// The dentries on the list, counted run by run (the invariant check's reference for
    /// `Kmem::lru_len`).
    pub fn nr_dentries_counted(&self) -> u64 {
        self.dentry_lru.iter().map(|r| r.1).sum()
    }
}

impl Machine {
    /// Boot: the root's obj_cgroup and the base system's frames.
    pub(crate) fn kmem_init(&mut self) {
        self.kmem.objcgs.push(ObjCgroup {
            memcg: ROOT_MEMCG,
            charged_bytes: 0,
            pages: 0,
        });
        let base = self.cfg.base_pages(self.totalram_pages);
        for _ in 0..base {
            let Some(pfn) = self.frames.pop(crate::buddy::MigrateType::Unmovable) else {
                break;
            };
            self.frames.meta[pfn as usize].pc.flags =
                crate::page_cgroup::LRU_NONE | pf::ALLOCATED | pf::KERNEL;
            self.kmem.frames.push(pfn);
            self.kmem.base_pages += 1;
        }
    }

    /// A new memcg's obj_cgroup (memcg_online_kmem()).
    pub(crate) fn kmem_memcg_online(&mut self, memcg: MemcgId) {
        let id = self.kmem.objcgs.len() as ObjcgId;
        self.kmem.objcgs.push(ObjCgroup {
            memcg,
            charged_bytes: 0,
            pages: 0,
        });
        self.memcgs[memcg as usize].kmem = MemcgKmem {
            objcg: id,
            dentry_lru: VecDeque::new(),
            percpu_objcg: None,
            shadow_lru: BTreeMap::new(),
        };
        let i = memcg as usize;
        if self.kmem.lru_len.len() <= i {
            self.kmem.lru_len.resize(i + 1, SlabLruLen::default());
        }
        self.kmem.lru_len[i] = SlabLruLen::default();
    }

    /// The lengths of `memcg`'s list_lrus (zero for an id never online).
    #[inline]
    pub fn slab_lru_len(&self, memcg: MemcgId) -> SlabLruLen {
        self.kmem
            .lru_len
            .get(memcg as usize)
            .copied()
            .unwrap_or_default()
    }

    /// Whether both of `memcg`'s list_lrus are empty.
    #[inline]
    pub fn slab_lru_empty(&self, memcg: MemcgId) -> bool {
        self.slab_lru_len(memcg) == SlabLruLen::default()
    }

    /// Negative dentries on `memcg`'s list_lru (list_lru_shrink_count()).
    pub fn nr_dentries(&self, memcg: MemcgId) -> u64 {
        self.slab_lru_len(memcg).dentries
    }

    /// The invariant check: each memcg's list_lru lengths are what its lists hold.
    pub(crate) fn check_slab_lru_len(&self) -> Result<(), String> {
        for (id, mc) in self.memcgs.iter().enumerate() {
            let want = SlabLruLen {
                dentries: mc.kmem.nr_dentries_counted(),
                shadow_nodes: mc.kmem.shadow_lru.len() as u64,
            };
            let have = self.slab_lru_len(id as MemcgId);
            if have != want {
                return Err(format!(
                    "memcg {id}: list_lru lengths {have:?} but its lists hold {want:?}"
                ));
            }
        }
        Ok(())
    }

    /// The obj_cgroup new objects of `memcg` are charged to (the root's with kmem=off).
    pub fn memcg_objcg(&self, memcg: MemcgId) -> ObjcgId {
        if !self.cfg.kmem || memcg == ROOT_MEMCG {
            return ROOT_OBJCG;
        }
        self.memcgs[memcg as usize].kmem.objcg
    }

    /// The memcg an obj_cgroup charges now.
    pub fn objcg_memcg(&self, objcg: ObjcgId) -> MemcgId {
        self.kmem.objcgs[objcg as usize].memcg
    }

    /// Charge a kernel object of `bytes` to `objcg` (obj_cgroup_charge() or
    /// __memcg_kmem_charge_page()), taking frames for the pages it needs. On failure nothing
    /// is kept. With `nofail`, the charge may pass the limits and takes frames from the
    /// reserves (__GFP_NOFAIL), and never sleeps.
    pub fn kmem_charge(
        &mut self,
        objcg: ObjcgId,
        kind: KmemKind,
        bytes: u64,
        nofail: bool,
    ) -> Result<(), ChargeError> {
        let page = crate::PAGE_SIZE;
        let o = &self.kmem.objcgs[objcg as usize];
        let memcg = o.memcg;
        let (pages, left) = if kind.whole_pages() {
            (bytes.div_ceil(page), o.charged_bytes)
        } else if o.charged_bytes >= bytes {
            (0, o.charged_bytes - bytes)
        } else {
            let need = bytes - o.charged_bytes;
            let pages = need.div_ceil(page);
            (pages, pages * page - need)
        };
        let mut taken: Vec<Pfn> = Vec::with_capacity(pages as usize);
        for _ in 0..pages {
            let got = if nofail {
                self.frames
                    .pop(kind.migratetype())
                    .ok_or(ChargeError::NoMem)
            } else {
                self.alloc_page(kind.migratetype())
            };
            match got {
                Ok(pfn) => taken.push(pfn),
                Err(e) => {
                    for pfn in taken {
                        self.free_frame(pfn);
                    }
                    return Err(e);
                }
            }
        }
        if pages > 0 && memcg != ROOT_MEMCG {
            if nofail {
                self.memory.charge(memcg as usize, pages);
                if self.is_v1() {
                    self.memsw.charge(memcg as usize, pages);
                }
            } else if let Err(e) = self.try_charge(memcg, pages) {
                for pfn in taken {
                    self.free_frame(pfn);
                }
                return Err(e);
            }
        }
        for pfn in taken {
            self.frames.meta[pfn as usize].pc.flags =
                crate::page_cgroup::LRU_NONE | pf::ALLOCATED | pf::KERNEL;
            self.kmem.frames.push(pfn);
        }
        let o = &mut self.kmem.objcgs[objcg as usize];
        o.charged_bytes = left;
        o.pages += pages;
        if memcg != ROOT_MEMCG {
            self.memcg_account_kmem(memcg, pages as i64);
        }
        self.mod_objcg_state(objcg, kind, bytes, 1);
        Ok(())
    }

    /// Free a kernel object of `bytes` charged to `objcg` (obj_cgroup_uncharge() or
    /// __memcg_kmem_uncharge_page()).
    pub fn kmem_uncharge(&mut self, objcg: ObjcgId, kind: KmemKind, bytes: u64) {
        let page = crate::PAGE_SIZE;
        self.mod_objcg_state(objcg, kind, bytes, -1);
        let o = &mut self.kmem.objcgs[objcg as usize];
        let memcg = o.memcg;
        let pages = if kind.whole_pages() {
            bytes.div_ceil(page)
        } else {
            let b = o.charged_bytes + bytes;
            o.charged_bytes = b % page;
            b / page
        };
        if pages == 0 {
            return;
        }
        o.pages -= pages;
        if memcg != ROOT_MEMCG {
            self.memcg_account_kmem(memcg, -(pages as i64));
            self.memory.uncharge(memcg as usize, pages);
            if self.is_v1() {
                self.memsw.uncharge(memcg as usize, pages);
            }
            if self.memcgs[memcg as usize].dying {
                self.memcg_try_release(memcg);
            }
        }
        for _ in 0..pages {
            let pfn = self
                .kmem
                .frames
                .pop()
                .expect("kernel frames cover the charges");
            self.frames.meta[pfn as usize].pc.flags = crate::page_cgroup::LRU_NONE | pf::ALLOCATED;
            self.free_frame(pfn);
        }
    }

    /// memcg_account_kmem(): MEMCG_KMEM, and v1's kmem counter.
    pub(crate) fn memcg_account_kmem(&mut self, memcg: MemcgId, pages: i64) {
        if pages == 0 {
            return;
        }
        self.mod_stat(memcg, Stat::Kmem, pages);
        if self.is_v1() {
            if pages > 0 {
                self.kmem.counter.charge(memcg as usize, pages as u64);
            } else {
                self.kmem.counter.uncharge(memcg as usize, (-pages) as u64);
            }
        }
    }

    /// mod_objcg_state() / mod_lruvec_page_state(): the item's statistic on the obj_cgroup's
    /// memcg (none for the root's) and on the node.
    fn mod_objcg_state(&mut self, objcg: ObjcgId, kind: KmemKind, bytes: u64, sign: i64) {
        let (item, v) = kind.stat(bytes);
        let i = NODE_ITEMS
            .iter()
            .position(|&s| s == item)
            .expect("node item");
        self.kmem.node[i] += sign * v;
        let memcg = self.objcg_memcg(objcg);
        if memcg != ROOT_MEMCG {
            self.mod_stat(memcg, item, sign * v);
        }
    }

    /// memcg_offline_kmem(): the memcg's obj_cgroups, and those reparented to it before,
    /// now charge the parent; its negative dentries join the parent's list_lru.
    pub(crate) fn kmem_memcg_offline(&mut self, memcg: MemcgId, parent: MemcgId) {
        let mut pages = 0;
        for o in self.kmem.objcgs.iter_mut() {
            if o.memcg == memcg {
                o.memcg = parent;
                pages += o.pages;
            }
        }
        // In 6.1 these pages stay on the dying group's counter, where they no longer keep it
        // alive (objects pin the obj_cgroup, not the memcg), and are uncharged from the parent
        // up when freed. The model takes them off the group's own counter only, so that it
        // is freed with its last page as the kernel frees it.
        let i = memcg as usize;
        self.memory.drop_local(i, pages);
        if self.is_v1() {
            self.memsw.drop_local(i, pages);
            self.kmem.counter.drop_local(i, pages);
        }
        let mut shadow = std::mem::take(&mut self.memcgs[memcg as usize].kmem.shadow_lru);
        self.memcgs[parent as usize]
            .kmem
            .shadow_lru
            .append(&mut shadow);
        let moved = std::mem::take(&mut self.kmem.lru_len[memcg as usize]);
        let plen = &mut self.kmem.lru_len[parent as usize];
        plen.dentries += moved.dentries;
        plen.shadow_nodes += moved.shadow_nodes;
        let lru = std::mem::take(&mut self.memcgs[memcg as usize].kmem.dentry_lru);
        let plru = &mut self.memcgs[parent as usize].kmem.dentry_lru;
        for run in lru {
            match plru.back_mut() {
                Some(last) if last.0 == run.0 => last.1 += run.1,
                _ => plru.push_back(run),
            }
        }
    }

    /// Whether the free list holds the frames a new memcg's per-CPU memory may need
    /// (`memcg_create` fails with ENOMEM otherwise).
    pub(crate) fn kmem_memcg_percpu_fits(&self) -> bool {
        let bytes = MEMCG_PERCPU_BYTES * self.cfg.cpus as u64;
        self.frames.free.len() as u64 > bytes.div_ceil(crate::PAGE_SIZE)
    }

    /// Charge the per-CPU memory of a new memcg to its parent (mem_cgroup_alloc(), under
    /// set_active_memcg(parent)). Simplified: the charge is forced past the parent's limit and
    /// takes free frames without reclaim (the kernel reclaims, and mkdir fails with ENOMEM
    /// when that fails); `memcg_create` checks the frames are there first.
    pub(crate) fn kmem_memcg_percpu(&mut self, memcg: MemcgId, parent: MemcgId) {
        let bytes = MEMCG_PERCPU_BYTES * self.cfg.cpus as u64;
        let objcg = self.memcg_objcg(parent);
        let charged = self.kmem_charge(objcg, KmemKind::Percpu, bytes, true);
        debug_assert!(charged.is_ok(), "memcg_create checked the frames");
        if charged.is_ok() {
            self.memcgs[memcg as usize].kmem.percpu_objcg = Some(objcg);
        }
    }

    /// Free a memcg's per-CPU memory (mem_cgroup_free()).
    pub(crate) fn kmem_memcg_free_percpu(&mut self, memcg: MemcgId) {
        if let Some(objcg) = self.memcgs[memcg as usize].kmem.percpu_objcg.take() {
            let bytes = MEMCG_PERCPU_BYTES * self.cfg.cpus as u64;
            self.kmem_uncharge(objcg, KmemKind::Percpu, bytes);
        }
    }

    /// Add `n` negative dentries charged to `memcg`'s obj_cgroup to its list_lru (d_alloc() of
    /// a lookup that found nothing, kept by dput()). Returns how many were allocated.
    pub fn kmem_neg_dentries(&mut self, memcg: MemcgId, n: u64) -> Result<(), ChargeError> {
        let objcg = self.memcg_objcg(memcg);
        self.kmem_charge(
            objcg,
            KmemKind::SlabReclaimable,
            n * NEG_DENTRY_BYTES,
            false,
        )?;
        let lru_memcg = self.objcg_memcg(objcg);
        let lru = &mut self.memcgs[lru_memcg as usize].kmem.dentry_lru;
        match lru.back_mut() {
            Some(last) if last.0 == objcg => last.1 += n,
            _ => lru.push_back((objcg, n)),
        }
        self.kmem.lru_len[lru_memcg as usize].dentries += n;
        Ok(())
    }

    /// shrink_slab() for one memcg: the dcache shrinker (do_shrink_slab() with DEFAULT_SEEKS,
    /// super_cache_scan()). Scans `freeable >> priority` × 4 / seeks objects in batches and
    /// frees them; returns the pages this released, which reclaim counts as reclaimed
    /// (reclaim_state->reclaimed_slab).
    pub(crate) fn shrink_slab(&mut self, memcg: MemcgId, priority: i32) -> u64 {
        // The deferred split queue's shrinker (huge_memory.rs) frees pages, not slab.
        let split = if self.thp.split_queue.is_empty() {
            0
        } else {
            self.deferred_split_scan(memcg, priority)
        };
        // The tmpfs super blocks' shrinker splits huge folios past their files' ends
        // (shmem.rs); it runs where every shrinker runs, for the root (global reclaim).
        if memcg == crate::memcontrol::ROOT_MEMCG && !self.shmem.shrinklist.is_empty() {
            self.shmem_unused_huge_scan(priority);
        }
        if self.slab_lru_empty(memcg) {
            // Both shrinkers count nothing to free (SHRINK_EMPTY).
            return split;
        }
        split + self.shrink_dcache(memcg, priority) + self.shrink_shadow_nodes(memcg)
    }

    /// The dcache shrinker's part of shrink_slab().
    fn shrink_dcache(&mut self, memcg: MemcgId, priority: i32) -> u64 {
        let freeable = self.nr_dentries(memcg);
        if freeable == 0 {
            return 0;
        }
        let mut to_scan = shrinker_scan_count(freeable, priority);
        let before = self.kmem.frames.len() as u64;
        let mut guard = 0u32;
        while to_scan > 0 {
            guard += 1;
            assert!(guard < 1_000_000, "shrink_slab loop does not terminate");
            let Some(&(objcg, n)) = self.memcgs[memcg as usize].kmem.dentry_lru.front() else {
                break;
            };
            let k = n.min(to_scan);
            if k == n {
                self.memcgs[memcg as usize].kmem.dentry_lru.pop_front();
            } else {
                self.memcgs[memcg as usize].kmem.dentry_lru[0].1 -= k;
            }
            self.kmem.lru_len[memcg as usize].dentries -= k;
            self.kmem_uncharge(objcg, KmemKind::SlabReclaimable, k * NEG_DENTRY_BYTES);
            self.kmem.dentries_shrunk += k;
            to_scan -= k;
            self.spend_cpu(k * self.cfg.costs.scan_ns);
        }
        before.saturating_sub(self.kmem.frames.len() as u64)
    }

    /// count_shadow_nodes() (mm/workingset.c): the shadow-only leaves of `memcg`'s list
    /// beyond what its memory justifies, one node per 8 pages of its own LRU pages and slab
    /// (pages >> (XA_CHUNK_SHIFT - 3)). With kmem=off the list is not per memcg and the
    /// limit is the node's pages. Simplified: the count reads the statistics as they stand
    /// (6.1 flushes them first).
    pub fn count_shadow_nodes(&self, memcg: MemcgId) -> u64 {
        let nodes = self.slab_lru_len(memcg).shadow_nodes;
        if nodes == 0 {
            return 0;
        }
        let pages = if self.cfg.kmem {
            let lru: u64 = [
                Stat::InactiveAnon,
                Stat::ActiveAnon,
                Stat::InactiveFile,
                Stat::ActiveFile,
                Stat::Unevictable,
            ]
            .iter()
            .map(|&s| self.stat_view_local(memcg, s))
            .sum();
            let slab = self.stat_view_local(memcg, Stat::SlabReclaimableB)
                + self.stat_view_local(memcg, Stat::SlabUnreclaimableB);
            lru + slab / crate::PAGE_SIZE
        } else {
            self.totalram_pages
        };
        nodes.saturating_sub(pages >> (crate::filemap::XA_CHUNK_SHIFT - 3))
    }

    /// The shadow-node shrinker (workingset.c, seeks 0: do_shrink_slab() scans half of what
    /// count_shadow_nodes() reports, SHRINK_BATCH at a time, the rest deferred and not kept):
    /// the oldest leaves of `memcg`'s list lose their shadow entries and are freed, with the
    /// ancestors they leave empty (shadow_lru_isolate(), WORKINGSET_NODERECLAIM). Returns the
    /// pages this released.
    fn shrink_shadow_nodes(&mut self, memcg: MemcgId) -> u64 {
        let freeable = self.count_shadow_nodes(memcg);
        let total_scan = freeable / 2;
        let mut to_scan = if total_scan >= freeable {
            freeable
        } else {
            total_scan - total_scan % SHRINK_BATCH
        };
        if to_scan == 0 {
            return 0;
        }
        let before = self.kmem.frames.len() as u64;
        while to_scan > 0 {
            let Some((_, (f, leaf))) = self.memcgs[memcg as usize].kmem.shadow_lru.pop_first()
            else {
                break;
            };
            self.kmem.lru_len[memcg as usize].shadow_nodes -= 1;
            let xa = &mut self.files.v[f as usize].xa;
            xa.lru[leaf as usize] = 0;
            let owner = xa.leaf_owner(leaf);
            let node_memcg = owner.map_or(ROOT_MEMCG, |o| self.xa_node_memcg(o));
            self.xa_free_shadow_leaf(f, leaf);
            self.mod_stat(node_memcg, Stat::WorkingsetNodereclaim, 1);
            self.kmem.shadow_nodes_reclaimed += 1;
            to_scan -= 1;
            self.spend_cpu(self.cfg.costs.scan_ns);
        }
        before.saturating_sub(self.kmem.frames.len() as u64)
    }

    /// The memcg whose shadow-node list a leaf charged to `owner` is on.
    pub(crate) fn xa_node_memcg(&self, owner: ObjcgId) -> MemcgId {
        if owner == crate::filemap::UNCHARGED_NODE {
            ROOT_MEMCG
        } else {
            self.objcg_memcg(owner)
        }
    }

    /// An xarray leaf of file `f` comes to hold only shadow entries: it joins the list of
    /// the memcg it is charged to, as the newest (list_lru_add()).
    pub(crate) fn shadow_lru_add(&mut self, f: u32, leaf: u64) {
        let Some(owner) = self.files.v[f as usize].xa.leaf_owner(leaf) else {
            return;
        };
        let memcg = self.xa_node_memcg(owner);
        self.kmem.shadow_seq += 1;
        let key = self.kmem.shadow_seq;
        self.memcgs[memcg as usize]
            .kmem
            .shadow_lru
            .insert(key, (f, leaf));
        self.kmem.lru_len[memcg as usize].shadow_nodes += 1;
        self.files.v[f as usize].xa.lru[leaf as usize] = key;
    }

    /// The leaf holds a page again, or goes: off its list (list_lru_del()).
    pub(crate) fn shadow_lru_del(&mut self, f: u32, leaf: u64) {
        let xa = &mut self.files.v[f as usize].xa;
        let key = std::mem::replace(&mut xa.lru[leaf as usize], 0);
        let Some(owner) = xa.leaf_owner(leaf) else {
            return;
        };
        let memcg = self.xa_node_memcg(owner);
        let gone = self.memcgs[memcg as usize].kmem.shadow_lru.remove(&key);
        debug_assert!(gone.is_some(), "a listed leaf is on its memcg's list");
        if gone.is_some() {
            self.kmem.lru_len[memcg as usize].shadow_nodes -= 1;
        }
    }

    /// Charge `bytes` of page-cache slab of `kind` to `objcg` ahead of the change that
    /// allocates the objects (obj_cgroup_charge() with reclaim, before the xarray store or
    /// the write): what the change then allocates takes from it, and
    /// kmem_settle_prepaid() gives back what it did not take.
    pub(crate) fn kmem_prepay(
        &mut self,
        kind: Prepaid,
        objcg: ObjcgId,
        bytes: u64,
    ) -> Result<(), ChargeError> {
        debug_assert!(self.kmem.prepaid[kind as usize].is_none());
        if bytes == 0 {
            return Ok(());
        }
        self.kmem_charge(objcg, KmemKind::SlabReclaimable, bytes, false)?;
        self.kmem.prepaid[kind as usize] = Some((objcg, bytes));
        Ok(())
    }

    /// Take `bytes` charged ahead to `objcg`, if they are there.
    fn take_prepaid(&mut self, kind: Prepaid, objcg: ObjcgId, bytes: u64) -> bool {
        match &mut self.kmem.prepaid[kind as usize] {
            Some((o, b)) if *o == objcg && *b >= bytes => {
                *b -= bytes;
                true
            }
            _ => false,
        }
    }

    /// Uncharge what was charged ahead and not taken.
    pub(crate) fn kmem_settle_prepaid(&mut self, kind: Prepaid) {
        if let Some((objcg, bytes)) = self.kmem.prepaid[kind as usize].take() {
            if bytes > 0 {
                self.kmem_uncharge(objcg, KmemKind::SlabReclaimable, bytes);
            }
        }
    }

    /// A new xarray node charged to `objcg`, from what was charged ahead or else at once past
    /// the limits; returns its owner (UNCHARGED_NODE when no frame is left for it: the model
    /// still counts the node).
    pub(crate) fn xa_node_charge(&mut self, objcg: ObjcgId) -> ObjcgId {
        if self.take_prepaid(Prepaid::Nodes, objcg, XA_NODE_BYTES) {
            return objcg;
        }
        match self.kmem_charge(objcg, KmemKind::SlabReclaimable, XA_NODE_BYTES, true) {
            Ok(()) => objcg,
            Err(_) => crate::filemap::UNCHARGED_NODE,
        }
    }

    /// An xarray node charged to `owner` is freed.
    pub(crate) fn xa_node_uncharge(&mut self, owner: ObjcgId) {
        if owner != crate::filemap::UNCHARGED_NODE {
            self.kmem_uncharge(owner, KmemKind::SlabReclaimable, XA_NODE_BYTES);
        }
    }

    /// A page charged to `memcg` gets its buffer head, charged to the same memcg; false
    /// when no frame is left for it (the page then goes without).
    pub(crate) fn buffers_charge(&mut self, memcg: MemcgId) -> bool {
        let objcg = self.memcg_objcg(memcg);
        if self.take_prepaid(Prepaid::Buffers, objcg, BUFFER_HEAD_BYTES) {
            return true;
        }
        self.kmem_charge(objcg, KmemKind::SlabReclaimable, BUFFER_HEAD_BYTES, true)
            .is_ok()
    }

    /// The buffer head of a page charged to `memcg` is freed.
    pub(crate) fn buffers_uncharge(&mut self, memcg: MemcgId) {
        let objcg = self.memcg_objcg(memcg);
        self.kmem_uncharge(objcg, KmemKind::SlabReclaimable, BUFFER_HEAD_BYTES);
    }

    /// A thread's kernel stack and task_struct (dup_task_struct()).
    pub(crate) fn kmem_thread_charge(
        &mut self,
        objcg: ObjcgId,
        nofail: bool,
    ) -> Result<(), ChargeError> {
        self.kmem_charge(objcg, KmemKind::Stack, THREAD_STACK_BYTES, nofail)?;
        if let Err(e) = self.kmem_charge(
            objcg,
            KmemKind::SlabUnreclaimable,
            THREAD_SLAB_BYTES,
            nofail,
        ) {
            self.kmem_uncharge(objcg, KmemKind::Stack, THREAD_STACK_BYTES);
            return Err(e);
        }
        Ok(())
    }

    pub(crate) fn kmem_thread_uncharge(&mut self, objcg: ObjcgId) {
        self.kmem_uncharge(objcg, KmemKind::SlabUnreclaimable, THREAD_SLAB_BYTES);
        self.kmem_uncharge(objcg, KmemKind::Stack, THREAD_STACK_BYTES);
    }

    /// A thread of the running task exits on `cpu`, the CPU it ran on: its stack and
    /// structures are freed there (put_task_stack() after its last switch). The model does
    /// not schedule threads; `TaskCtx::clone_thread` places a task's threads round robin on
    /// the CPUs after the task's own, as the scheduler spreads new runnable threads over idle
    /// CPUs. Which CPU matters to the per-CPU statistics (seed 003's drift, stats=legacy).
    pub(crate) fn kmem_thread_exit(&mut self, objcg: ObjcgId, cpu: u32) {
        let saved = self.cur.as_ref().map(|c| c.cpu);
        if let Some(c) = self.cur.as_mut() {
            c.cpu = cpu;
        }
        self.kmem_thread_uncharge(objcg);
        if let (Some(c), Some(s)) = (self.cur.as_mut(), saved) {
            c.cpu = s;
        }
    }

    /// A new file's inode and dentry, charged to `memcg` (cannot fail in the model).
    pub(crate) fn file_alloc_inode(&mut self, f: u32, memcg: MemcgId) {
        let objcg = self.memcg_objcg(memcg);
        if self
            .kmem_charge(objcg, KmemKind::SlabReclaimable, FILE_SLAB_BYTES, true)
            .is_ok()
        {
            self.files.v[f as usize].inode_objcg = Some(objcg);
        }
    }

    /// The file is gone: free its inode and dentry.
    pub(crate) fn file_free_inode(&mut self, f: u32) {
        if let Some(objcg) = self.files.v[f as usize].inode_objcg.take() {
            self.kmem_uncharge(objcg, KmemKind::SlabReclaimable, FILE_SLAB_BYTES);
        }
    }

    /// A kernel-memory line of /proc/meminfo in KiB: the objects' node counter plus the base
    /// system's share (its 6.1 breakdown, scaled to `base=`).
    pub fn meminfo_kernel_kb(&self, item: Stat) -> u64 {
        // KiB of a 6.1 guest's base system (34,684 KiB in use at boot) per item.
        const BASE_KB: u64 = 34_684;
        let base = match item {
            Stat::KernelStackKb => 944,
            Stat::Pagetables => 56,
            Stat::SlabReclaimableB => 9_784,
            Stat::SlabUnreclaimableB => 7_664,
            Stat::PercpuB => 520,
            _ => 0,
        };
        let base_kb = self.kmem.base_pages * (crate::PAGE_SIZE / 1024);
        let share = base * base_kb.min(BASE_KB) / BASE_KB;
        let v = self.kmem_node_stat(item);
        let objects = match item {
            Stat::KernelStackKb => v,
            Stat::Pagetables => v * (crate::PAGE_SIZE / 1024),
            _ => v / 1024,
        };
        share + objects
    }

    /// A node statistic of kernel memory (meminfo units: KiB for the stack, pages for page
    /// tables, bytes for slab and per-CPU memory).
    pub fn kmem_node_stat(&self, item: Stat) -> u64 {
        NODE_ITEMS
            .iter()
            .position(|&s| s == item)
            .map(|i| self.kmem.node[i].max(0) as u64)
            .unwrap_or(0)
    }
}

/// do_shrink_slab()'s share of a shrinker's `freeable` objects to scan at `priority` with
/// DEFAULT_SEEKS: `freeable >> priority` × 4 / seeks, at most twice what there is, in
/// batches of SHRINK_BATCH while a whole batch is left, or everything once the scan covers
/// all; work under one batch is deferred (the deferred count is not kept).
pub(crate) fn shrinker_scan_count(freeable: u64, priority: i32) -> u64 {
    let delta = (freeable >> priority.clamp(0, 63)) * 4 / DEFAULT_SEEKS;
    let total_scan = delta.min(freeable * 2);
    if total_scan >= freeable {
        freeable
    } else {
        total_scan - total_scan % SHRINK_BATCH
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MachineConfig;
    use crate::errno::Errno;

    fn machine() -> Machine {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "256M").unwrap();
        cfg.set("cpus", "2").unwrap();
        Machine::new(cfg).unwrap()
    }

    #[test]
    fn a_child_s_percpu_memory_is_charged_to_its_parent_until_it_is_freed() {
        let mut m = machine();
        let p = m.memcg_create(ROOT_MEMCG).unwrap();
        assert_eq!(m.memory.get(p as usize).usage, 0);
        let c = m.memcg_create(p).unwrap();
        // 3,568 bytes on each of 2 CPUs: two pages, 1,040 bytes left in p's obj_cgroup.
        assert_eq!(m.memory.get(p as usize).usage, 2);
        assert_eq!(m.memory.get(c as usize).usage, 0);
        let objcg = m.memcg_objcg(p);
        assert_eq!(m.kmem.objcgs[objcg as usize].charged_bytes, 2 * 4096 - 7136);
        m.memcg_offline(c).unwrap();
        m.release_dying_memcgs();
        assert_eq!(m.memory.get(p as usize).usage, 0, "freed with the child");
    }

    #[test]
    fn mkdir_fails_with_enomem_when_no_frame_is_left_for_percpu_memory() {
        let mut m = machine();
        let free = std::mem::take(&mut m.frames.free);
        assert_eq!(m.memcg_create(ROOT_MEMCG), Err(Errno::ENOMEM));
        m.frames.free = free;
        assert!(m.memcg_create(ROOT_MEMCG).is_ok());
    }

    #[test]
    fn offline_hands_objects_and_dentries_to_the_parent() {
        let mut m = machine();
        let p = m.memcg_create(ROOT_MEMCG).unwrap();
        let c = m.memcg_create(p).unwrap();
        m.kmem_neg_dentries(c, 1000).unwrap();
        let before = m.memory.get(p as usize).usage;
        assert!(m.memory.get(c as usize).usage > 0);
        let objcg = m.memcg_objcg(c);
        m.memcg_offline(c).unwrap();
        assert_eq!(
            m.objcg_memcg(objcg),
            p,
            "the child's obj_cgroup now charges p"
        );
        let dentries: u64 = m.memcgs[p as usize]
            .kmem
            .dentry_lru
            .iter()
            .map(|r| r.1)
            .sum();
        assert_eq!(dentries, 1000);
        // The charge stays on p's counter; the dying child holds nothing and is freed.
        assert_eq!(m.memory.get(p as usize).usage, before);
        // Freeing the child returns its two pages of per-CPU memory from p's obj_cgroup.
        m.release_dying_memcgs();
        assert_eq!(m.memory.get(p as usize).usage, before - 2);
    }
}
