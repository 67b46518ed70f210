//! memcgsim-model: a deterministic model of one Linux machine's memory controller and page
//! reclaim. The model does no I/O, reads no wall clock and prints nothing; every run is a
//! function of its configuration, its inputs and its seed. Time advances only through the
//! event queue in [`sched`].
//!
//! The modules mirror the kernel's split of mm/:
//!
//! | module | kernel |
//! |---|---|
//! | [`page_cgroup`] | mm/page_cgroup.c (2.6.28–3.18): per-frame memcg metadata in flat arrays |
//! | [`page_counter`] | mm/page_counter.c |
//! | [`memcontrol`] | mm/memcontrol.c: memcg tree, try_charge, stock, events, high, limits |
//! | [`swap`] | mm/swap.c: LRU add, folio_mark_accessed, lru_note_cost |
//! | [`vmscan`] | mm/vmscan.c: shrink_*, get_scan_count, direct reclaim, kswapd |
//! | [`workingset`] | mm/workingset.c: shadow entries and refault detection |
//! | [`swapfile`] | mm/swapfile.c + mm/swap_cgroup.c: swap slots and their memcg |
//! | [`filemap`] | mm/filemap.c: page cache of files |
//! | [`readahead`] | mm/readahead.c: ondemand_readahead() windows for file reads |
//! | [`memory`] | mm/memory.c + mm/rmap.c + mm/mlock.c: anon VMAs, faults, unmap |
//! | [`huge_memory`] | mm/huge_memory.c: anonymous THP faults, folios of 512 pages, their split |
//! | [`kmem`] | obj_cgroup charging, kernel stacks, page tables, per-CPU memory, slab and the dcache shrinker |
//! | [`page_alloc`] | mm/page_alloc.c: free frames, watermarks, the allocation slow path |
//! | [`page_io`] | mm/page_io.c: swap writes, their writeback and its end |
//! | [`page_writeback`] | mm/page-writeback.c + fs/fs-writeback.c: dirty pages, the flusher |
//! | [`xarray_marks`] | lib/xarray.c marks: the page cache's dirty and writeback tags writeback searches |
//! | [`oom_kill`] | mm/oom_kill.c |
//! | [`rstat`] | kernel/cgroup/rstat.c + memcg stat batching/flushing (6.1 rstat, 5.10 batches) |
//! | [`sched`] | the clock, the event queue, simulated CPUs, tasks |
//! | [`blkdev`] | a block device with latency and bandwidth |
//! | [`check`] | the invariant checker |
//!
//! [`units`] parses and prints sizes and durations; [`text`] cuts user tokens in messages.

pub mod blkdev;
pub mod buddy;
pub mod check;
pub mod compaction;
pub mod config;
pub mod errno;
pub mod filemap;
pub mod huge_memory;
pub mod khugepaged;
pub mod kmem;
pub mod lru_gen;
pub mod machine;
pub mod memcg_dirty;
pub mod memcontrol;
pub mod memory;
pub mod migrate;
pub mod mmzone;
pub mod oom_kill;
pub mod page_alloc;
pub mod page_cgroup;
pub mod page_cgroup_store;
pub mod page_counter;
pub mod page_io;
pub mod page_writeback;
pub mod program;
pub mod psi;
pub mod readahead;
pub mod rng;
pub mod rstat;
pub mod sched;
pub mod shmem;
pub mod soft_limit;
pub mod stat;
pub mod swap;
pub mod swapfile;
pub mod task;
pub mod text;
pub mod units;
pub mod vmscan;
pub mod workingset;
pub mod xarray_marks;
pub mod zswap;

pub use config::{
    CgroupVersion, Costs, DeviceConfig, DirtyPolicy, LruPolicy, MachineConfig, ReclaimEra,
    ShrinkLruvec, SoftLimitPolicy, PAGE_SIZE,
};
pub use errno::Errno;
pub use machine::Machine;
pub use memcontrol::{MemcgEvent, MemcgId, ROOT_MEMCG};
pub use page_counter::PAGE_COUNTER_MAX;
pub use program::{Fault, Pid, Program, Step, TaskOutcome};
pub use rstat::{StatsScheme, StatsWork};
pub use stat::Stat;
pub use task::{FileId, FileMap, SyscallError, TaskCtx, TaskState, Vma};
