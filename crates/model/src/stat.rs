//! Per-memcg statistics: the page-state counters and VM event counters that memory.stat,
//! /proc/meminfo and /proc/vmstat report (memcg_vmstats in mm/memcontrol.c, vm_stat and
//! vm_event in mm/vmstat.c).
//!
//! These are the exact counters: every update is applied at once to the memcg's local counter
//! and to the hierarchical counter of the memcg and each ancestor. What readers see goes
//! through the statistics scheme (rstat.rs).
//!
//! The node keeps reclaim's scan, steal and refill events apart ([`NodeEvents`]): 6.1 counts
//! them in /proc/vmstat for global reclaim only, while the memcgs' counters have every
//! reclaim.

/// A page-state item (in pages) or an event counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Stat {
    // LRU sizes; the order matches enum lru_list.
    InactiveAnon = 0,
    ActiveAnon,
    InactiveFile,
    ActiveFile,
    Unevictable,
    /// NR_ANON_MAPPED.
    Anon,
    /// NR_FILE_PAGES.
    File,
    Shmem,
    FileMapped,
    FileDirty,
    Writeback,
    SwapCached,
    /// NR_MLOCK.
    Mlock,
    /// NR_ANON_THPS (in pages, as 6.1 counts it).
    AnonThp,
    /// NR_SHMEM_THPS: pages in huge shmem folios (shmem.rs).
    ShmemThp,
    /// NR_SHMEM_PMDMAPPED: pages of huge shmem folios that a PMD maps.
    ShmemPmdMapped,
    /// Swap slots charged to this memcg (v1 "swap" in memory.stat).
    Swap,
    WorkingsetRefaultAnon,
    WorkingsetRefaultFile,
    WorkingsetActivateAnon,
    WorkingsetActivateFile,
    WorkingsetRestoreAnon,
    WorkingsetRestoreFile,
    WorkingsetNodereclaim,
    // Kernel memory (kmem.rs).
    /// MEMCG_KMEM: pages charged for kernel memory of every kind.
    Kmem,
    /// NR_KERNEL_STACK_KB (in KiB, as the kernel keeps it).
    KernelStackKb,
    /// NR_PAGETABLE (pages).
    Pagetables,
    /// NR_SLAB_RECLAIMABLE_B (bytes).
    SlabReclaimableB,
    /// NR_SLAB_UNRECLAIMABLE_B (bytes).
    SlabUnreclaimableB,
    /// MEMCG_PERCPU_B (bytes).
    PercpuB,
    /// MEMCG_ZSWAP_B: compressed bytes of the group's pages in zswap (zswap.rs).
    ZswapB,
    /// MEMCG_ZSWAPPED: the group's pages in zswap.
    Zswapped,
    // VM events.
    Pgpgin,
    Pgpgout,
    Pswpin,
    Pswpout,
    PgscanKswapd,
    PgscanDirect,
    PgstealKswapd,
    PgstealDirect,
    Pgfault,
    Pgmajfault,
    Pgrefill,
    Pgactivate,
    Pgdeactivate,
    Pglazyfree,
    Pglazyfreed,
    /// ZSWPIN and ZSWPOUT: pages loaded from and stored in zswap.
    Zswpin,
    Zswpout,
    /// Pages rotated to the inactive tail at writeback end (PGROTATED, global only).
    Pgrotated,
    /// Direct reclaim entries (ALLOCSTALL, global only).
    Allocstall,
    /// OOM kills (OOM_KILL vm event).
    OomKill,
    /// THP_FAULT_ALLOC: huge folios a fault mapped.
    ThpFaultAlloc,
    /// THP_COLLAPSE_ALLOC: huge folios khugepaged allocated to collapse a range into.
    ThpCollapseAlloc,
}

pub const NR_STATS: usize = Stat::ThpCollapseAlloc as usize + 1;

impl Stat {
    /// Items kept in bytes (vmstat_item_in_bytes() and MEMCG_PERCPU_B): their per-CPU
    /// batches are scaled by the page size.
    #[inline]
    pub fn in_bytes(self) -> bool {
        matches!(
            self,
            Stat::SlabReclaimableB | Stat::SlabUnreclaimableB | Stat::PercpuB | Stat::ZswapB
        )
    }
}

/// Local and hierarchical counters of one memcg.
#[derive(Clone, Debug)]
pub struct MemcgStats {
    pub local: [i64; NR_STATS],
    pub total: [i64; NR_STATS],
}

impl Default for MemcgStats {
    fn default() -> Self {
        MemcgStats {
            local: [0; NR_STATS],
            total: [0; NR_STATS],
        }
    }
}

/// The LRU list numbers (enum lru_list).
pub mod lru {
    pub const INACTIVE_ANON: usize = 0;
    pub const ACTIVE_ANON: usize = 1;
    pub const INACTIVE_FILE: usize = 2;
    pub const ACTIVE_FILE: usize = 3;
    pub const UNEVICTABLE: usize = 4;
    pub const NR_LRU_LISTS: usize = 5;
    pub const LRU_ACTIVE: usize = 1;
    pub const LRU_FILE: usize = 2;
    pub fn is_file(l: usize) -> bool {
        l == INACTIVE_FILE || l == ACTIVE_FILE
    }
    pub fn is_active(l: usize) -> bool {
        l == ACTIVE_ANON || l == ACTIVE_FILE
    }
    pub fn stat(l: usize) -> super::Stat {
        match l {
            0 => super::Stat::InactiveAnon,
            1 => super::Stat::ActiveAnon,
            2 => super::Stat::InactiveFile,
            3 => super::Stat::ActiveFile,
            _ => super::Stat::Unevictable,
        }
    }
}

/// The reclaim events the node's own counters (vm_event_states, /proc/vmstat) keep apart
/// from the memcg's: 6.1 counts the first five only for global reclaim (`if
/// (!cgroup_reclaim(sc)) __count_vm_events(...)` in shrink_inactive_list() and
/// shrink_active_list()), while the memcg's memory.stat counts every reclaim of the group;
/// the anon/file split exists only here (no memcg item), for every reclaim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum NodeEvent {
    PgscanKswapd = 0,
    PgscanDirect,
    PgstealKswapd,
    PgstealDirect,
    Pgrefill,
    PgscanAnon,
    PgscanFile,
    PgstealAnon,
    PgstealFile,
}

pub const NR_NODE_EVENTS: usize = NodeEvent::PgstealFile as usize + 1;

/// The node's counts of the [`NodeEvent`]s since boot.
#[derive(Clone, Debug, Default)]
pub struct NodeEvents {
    pub ev: [u64; NR_NODE_EVENTS],
}

impl NodeEvents {
    #[inline]
    pub fn count(&mut self, item: NodeEvent, n: u64) {
        self.ev[item as usize] += n;
    }

    #[inline]
    pub fn get(&self, item: NodeEvent) -> u64 {
        self.ev[item as usize]
    }
}
