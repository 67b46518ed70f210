//! The machine: every piece of model state in one struct, and boot.
//!
//! Mechanisms are `impl Machine` blocks in the module named after the kernel file that holds
//! them (vmscan.rs has shrink_lruvec, memcontrol.rs has try_charge, ...), so that a kernel
//! developer finds each mechanism where they expect it.

use crate::blkdev::Device;
use crate::config::{MachineConfig, PAGE_SIZE};
use crate::filemap::Files;
use crate::memcontrol::{Memcg, Stock, ROOT_MEMCG};
use crate::memory::Vmas;
use crate::page_cgroup::Frames;
use crate::page_counter::Counters;
use crate::page_writeback::Writeback;
use crate::rng::Rng;
use crate::sched::{ExecCtx, Sched};
use crate::swapfile::SwapSpace;
use crate::task::Task;
use crate::vmscan::Kswapd;

pub struct Machine {
    pub cfg: MachineConfig,
    pub frames: Frames,
    /// Memcgs by id; index 0 is a placeholder (id 0 means "no memcg").
    pub memcgs: Vec<Memcg>,
    /// The memcg tree packed for walks, indexed by memcg id (memcontrol.rs).
    pub memcg_topo: crate::memcontrol::MemcgTopo,
    /// The ids of freed memcgs, lowest first: a new memcg takes the lowest, as 6.1's
    /// idr_alloc() does.
    pub free_memcg_ids: std::collections::BinaryHeap<std::cmp::Reverse<u16>>,
    /// memory, swap (v2) and memsw (v1) page counters, indexed by memcg id.
    pub memory: Counters,
    pub swap_counter: Counters,
    pub memsw: Counters,
    /// Per-CPU charge stock.
    pub stock: Vec<Stock>,
    /// The node's zones and their watermarks (mmzone.rs).
    pub zones: crate::mmzone::Zones,
    pub swap: SwapSpace,
    pub files: Files,
    pub vmas: Vmas,
    pub tasks: Vec<Task>,
    /// Tasks that exited since the last [`Machine::take_exited`], in the order they exited:
    /// what the cgroup layer drops from its task lists (cgroup_exit() unlinks an exiting task
    /// from its css_set's list at once) without looking at every task.
    pub exited_pids: Vec<crate::program::Pid>,
    pub sched: Sched,
    /// The context currently executing (a task's quantum, kswapd, or none for a control-file
    /// write from outside), to which CPU and wait time are charged.
    pub cur: Option<ExecCtx>,
    pub kswapd: Kswapd,
    /// The reclaim wait queues (reclaim_throttle()).
    pub reclaim_wait: crate::vmscan::ReclaimWait,
    pub writeback: Writeback,
    /// Swap writes in flight (page_io.rs).
    pub swap_io: crate::page_io::SwapIo,
    /// The filesystem's device, and swap's unless `swap_device` is set.
    pub device: Device,
    /// A separate swap device (`swap_disk=`, `swap_*` machine keys).
    pub swap_device: Option<Device>,
    pub rng: Rng,
    /// Run the full invariant check after steps (every `check_every`-th one).
    pub check_invariants: bool,
    /// Check after every this many steps (at least 1; 1: after each).
    pub check_every: u32,
    /// Steps left before the next check.
    pub(crate) check_countdown: u32,
    /// vm.swappiness (the root's; v1 children may differ).
    pub vm_swappiness: u32,
    /// vm.page-cluster: swap readahead reads up to 2^page_cluster pages (mm/swap.c: 3).
    pub page_cluster: u32,
    /// The file device's read_ahead_kb, in pages (VM_READAHEAD_PAGES: 32).
    pub ra_pages: u64,
    /// The allocation being made is __GFP_NORETRY (readahead): it fails rather than retry
    /// reclaim or OOM-kill.
    pub gfp_noretry: bool,
    /// The allocation being made may not enter direct reclaim (a THP fault's
    /// GFP_TRANSHUGE_LIGHT): its charge fails rather than reclaim.
    pub gfp_nowait: bool,
    /// Transparent huge pages: the sysfs switches, the live folios, the events
    /// (huge_memory.rs).
    pub thp: crate::huge_memory::Thp,
    /// zswap's pools and entries (zswap.rs), and the frames its pool pages take.
    pub zswap: crate::zswap::Zswap,
    pub zswap_frames: Vec<crate::page_cgroup::Pfn>,
    /// khugepaged's tunables and thread (khugepaged.rs).
    pub khugepaged: crate::khugepaged::Khugepaged,
    /// The tmpfs mounts (shmem.rs).
    pub shmem: crate::shmem::Shmem,
    /// Compaction's vm events (compaction.rs).
    pub compact_events: crate::compaction::CompactEvents,
    /// /proc/sys/vm/compact_unevictable_allowed: compaction may move mlocked pages.
    pub compact_unevictable_allowed: bool,
    /// The compaction sysctls, cached scanner positions and kcompactd (compaction.rs).
    pub compaction: crate::compaction::Compaction,
    /// cfg.lru == Unified, read on every LRU placement.
    pub unified_lru: bool,
    /// The multi-generational LRU's switches and per-frame generations (lru_gen.rs).
    pub lru_gen: crate::lru_gen::LruGenCtl,
    /// A page fault is being handled (current->in_lru_fault): pages it adds to the LRU
    /// are hot, and its refaults restore their refs (lru_gen.rs).
    pub lru_fault: bool,
    /// The running task reclaims or compacts for an allocation (current->flags &
    /// PF_MEMALLOC, memalloc_noreclaim_save()): folio_add_lru() does not count the pages it
    /// adds then as faulted, though a fault is being handled.
    pub memalloc: bool,
    /// OOM kills lru_gen_age_node() invoked because min_ttl protected every group.
    pub lru_gen_oom_kills: u64,
    /// Total RAM pages and swap pages.
    pub totalram_pages: u64,
    pub total_swap_pages: u64,
    /// The per-node soft-limit tree (one node) and what soft-limit reclaim did.
    pub soft_tree: crate::soft_limit::SoftLimitTree,
    pub soft_stats: crate::soft_limit::SoftStats,
    /// 3.11: the soft-limit reclaim a sleep on a page's writeback just interrupted, for its
    /// caller to keep and go on with after the sleep.
    pub soft_interrupted: Option<crate::soft_limit::SoftReclaimState>,
    pub shrink_inactive_hist: crate::vmscan::ShrinkInactiveHist,
    /// The statistics scheme's machine-wide state (rstat.rs).
    pub rstat: crate::rstat::Rstat,
    /// The node's reclaim event counters that /proc/vmstat shows apart from the memcgs'.
    pub node_events: crate::stat::NodeEvents,
    /// Dying memcgs with nothing left, to be freed between events.
    pub dying_release: Vec<crate::memcontrol::MemcgId>,
    /// Kernel memory: obj_cgroups, kernel frames, node counters (kmem.rs).
    pub kmem: crate::kmem::Kmem,
    /// Pressure stall information (psi.rs).
    pub psi: crate::psi::Psi,
}

impl Machine {
    /// Boot a machine. The configuration must be valid (`MachineConfig::validate`).
    pub fn new(mut cfg: MachineConfig) -> Result<Machine, String> {
        cfg.validate()?;
        // The machine keeps its costs as the CPU pays them.
        cfg.costs = cfg.costs.scaled(cfg.cpu_scale_milli);
        cfg.cpu_scale_milli = 1000;
        // The page allocator manages RAM less the kernel's boot reservations (MemTotal).
        let nr_frames = cfg.managed_pages() as u32;
        let zones = crate::mmzone::Zones::new(
            cfg.ram_pages(),
            nr_frames as u64,
            cfg.min_free_kbytes,
            Self::watermark_scale_factor_of(&cfg),
            cfg.cpus,
        );
        let nr_swap = cfg.swap_bytes / PAGE_SIZE;
        let mut m = Machine {
            frames: Frames::new(&zones, cfg.cpus, cfg.page_cgroup),
            memcgs: Vec::new(),
            memcg_topo: Default::default(),
            free_memcg_ids: Default::default(),
            memory: Counters::default(),
            swap_counter: Counters::default(),
            memsw: Counters::default(),
            stock: (0..cfg.cpus).map(|_| Stock::default()).collect(),
            zones,
            swap: SwapSpace::new(nr_swap as u32),
            files: Files::default(),
            vmas: Vmas::default(),
            tasks: Vec::new(),
            exited_pids: Vec::new(),
            sched: Sched::new(cfg.cpus),
            cur: None,
            kswapd: Kswapd::default(),
            reclaim_wait: Default::default(),
            writeback: Writeback::default(),
            swap_io: Default::default(),
            device: Device::new(cfg.device.clone()),
            swap_device: cfg.swap_device.clone().map(Device::new),
            rng: Rng::new(cfg.seed),
            check_invariants: false,
            check_every: 1,
            check_countdown: 1,
            vm_swappiness: cfg.swappiness,
            page_cluster: 3,
            ra_pages: cfg.read_ahead_kb / 4,
            gfp_noretry: false,
            gfp_nowait: false,
            thp: crate::huge_memory::Thp {
                enabled: cfg.thp,
                defrag: cfg.thp_defrag,
                shmem_huge: cfg.shmem_thp,
                events: Default::default(),
                folios: 0,
                split_queue: Default::default(),
            },
            shmem: crate::shmem::Shmem::new(nr_frames as u64, cfg.shmem_thp),
            zswap: crate::zswap::Zswap::new(cfg.zswap.clone()),
            zswap_frames: Vec::new(),
            khugepaged: Default::default(),
            compact_events: Default::default(),
            compact_unevictable_allowed: true,
            compaction: crate::compaction::Compaction::new(
                cfg.compaction_proactiveness,
                cfg.extfrag_threshold,
            ),
            totalram_pages: nr_frames as u64,
            total_swap_pages: nr_swap,
            unified_lru: cfg.lru == crate::config::LruPolicy::Unified,
            lru_gen: crate::lru_gen::LruGenCtl::new(
                cfg.lru == crate::config::LruPolicy::Mglru,
                cfg.lru_gen_min_ttl_ms,
            ),
            lru_fault: false,
            memalloc: false,
            lru_gen_oom_kills: 0,
            soft_tree: Default::default(),
            soft_stats: Default::default(),
            soft_interrupted: None,
            shrink_inactive_hist: Default::default(),
            rstat: crate::rstat::Rstat::new(cfg.stats, cfg.cpus as usize),
            node_events: Default::default(),
            dying_release: Vec::new(),
            kmem: Default::default(),
            psi: crate::psi::Psi::new(cfg.cpus, 0),
            cfg,
        };
        m.hugepage_init();
        m.kmem_init();
        m.memcgs.push(Memcg::new(0, None, 0)); // placeholder for id 0
        let root = m.memcg_create_raw(None);
        debug_assert_eq!(root, ROOT_MEMCG);
        m.writeback_init();
        m.kcompactd_schedule(crate::compaction::FRAG_CHECK_INTERVAL_NS);
        Ok(m)
    }

    /// The watermark_scale_factor the zones are set up with. 3.11's
    /// __setup_per_zone_wmarks() had none: low is min plus a quarter of it, high min plus
    /// half, as a factor of 0 gives.
    fn watermark_scale_factor_of(cfg: &MachineConfig) -> u64 {
        if cfg.reclaim == crate::config::ReclaimEra::V3_11 {
            0
        } else {
            cfg.watermark_scale_factor
        }
    }

    pub(crate) fn watermark_scale_factor_in_use(&self) -> u64 {
        Self::watermark_scale_factor_of(&self.cfg)
    }

    /// Current virtual time in ns: the event being processed plus the time the running
    /// context has consumed so far.
    #[inline]
    pub fn now(&self) -> u64 {
        match &self.cur {
            Some(c) => c.start + c.cpu_ns + c.wait_ns,
            None => self.sched.clock,
        }
    }

    /// Charge CPU time to the running context.
    #[inline]
    pub fn spend_cpu(&mut self, ns: u64) {
        if let Some(c) = &mut self.cur {
            c.cpu_ns += ns;
        }
    }

    /// A write to a control file from outside the machine (the shell of a script) runs as a
    /// context of its own, so that the reclaim it does takes time and sees the I/O it started
    /// complete (page_io.rs). It runs on CPU 0 without taking a simulated CPU, and never
    /// sleeps (no task). Returns whether a context was installed, for `end_external_write`.
    pub fn begin_external_write(&mut self) -> bool {
        if self.cur.is_some() {
            return false;
        }
        self.cur = Some(crate::sched::ExecCtx::new(None, 0, self.sched.clock));
        true
    }

    /// End the context of `begin_external_write`: the machine runs on while the write took
    /// time, as it would while the writer's system call ran.
    pub fn end_external_write(&mut self, began: bool) {
        if !began {
            return;
        }
        let Some(c) = self.cur.take() else {
            return;
        };
        let end = c.start + c.cpu_ns + c.wait_ns;
        if end > self.sched.clock {
            self.run_until(end, |_| false);
        }
    }

    /// The device swap is on.
    pub fn swap_dev(&mut self) -> &mut Device {
        match &mut self.swap_device {
            Some(d) => d,
            None => &mut self.device,
        }
    }

    /// /proc/vmstat pgpgin and pgpgout: KiB read from and written to the block devices
    /// (submit_bio() counts sectors, vmstat shows them halved).
    pub fn pgpg_kb(&self) -> (u64, u64) {
        let mut r = self.device.bytes_read;
        let mut w = self.device.bytes_written;
        if let Some(d) = &self.swap_device {
            r += d.bytes_read;
            w += d.bytes_written;
        }
        (r >> 10, w >> 10)
    }

    /// Charge waiting time (I/O, throttling sleep) to the running context, as the kind of
    /// sleep `stall` is (an I/O wait inside a memstall section is a memstall too).
    #[inline]
    pub fn spend_wait(&mut self, ns: u64, stall: crate::psi::Stall) {
        if let Some(c) = &mut self.cur {
            c.wait_ns += ns;
            let stall = if c.in_memstall {
                stall.in_memstall()
            } else {
                stall
            };
            c.waits[stall.index()] += ns;
        }
    }

    pub fn nr_free_pages(&self) -> u64 {
        self.frames.free.nr_free_pages()
    }
}

/// For unit tests: a checked machine of the model's defaults and `keys`, with one group under
/// the root whose idle task runs in the machine's context (as in a step of its own).
#[cfg(test)]
pub(crate) fn test_machine_with_task(
    keys: &[(&str, &str)],
) -> (Machine, crate::memcontrol::MemcgId, crate::program::Pid) {
    let mut cfg = crate::config::MachineConfig::default();
    for (k, v) in keys {
        cfg.set(k, v).unwrap();
    }
    let mut m = Machine::new(cfg).unwrap();
    m.check_invariants = true;
    let a = m.memcg_create(crate::memcontrol::ROOT_MEMCG).unwrap();
    let pid = m.spawn(a, "idle".into(), 0, Box::new(crate::program::Idle));
    m.cur = Some(crate::sched::ExecCtx::new(Some(pid), 0, m.sched.clock));
    (m, a, pid)
}
