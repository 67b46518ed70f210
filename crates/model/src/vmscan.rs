//! Page reclaim: mm/vmscan.c, classic two-list LRU (MGLRU off), as in Linux 6.1. With the
//! multi-generational LRU on, shrink_lruvec()'s loop, kswapd's aging and shrink_folio_list()'s
//! reference checks hand over to lru_gen.rs, and prepare_scan_count() and
//! snapshot_refaults() do nothing, as in 6.1; the rest (the memcg walk, protection, the
//! priority loop, kswapd's steps, shrink_folio_batch()) is shared.
//!
//! * [`ScanControl`] (struct scan_control);
//! * `do_try_to_free_pages()`: the priority loop from DEF_PRIORITY (12) down to 0, then the
//!   retries with force_deactivate and with the memory.low override (memcg_low_reclaim);
//! * `shrink_node()` with the scan-control preparation at the reclaim root (anon/file cost
//!   balance, may_deactivate from refaults and inactive_is_low, cache_trim_mode,
//!   file_is_tiny);
//! * `shrink_node_memcgs()`: the pre-order memcg walk with effective min/low protection, and
//!   the soft-limit rework's two passes (seed 000; the predicate is in soft_limit.rs); a
//!   group whose protection check, shrink_lruvec() and shrink_slab() would change nothing
//!   (no min/low ever set, no page ever on its LRU, no active anon, empty list_lrus) is
//!   skipped when its turn comes, as the kernel's work on it has no effect;
//! * the calls into mainline soft-limit reclaim from direct reclaim and kswapd;
//! * `shrink_lruvec()` with `get_scan_count()` (all five scan balances, proportional
//!   protection scaling) and the proportional rebalance once the goal is met;
//! * `shrink_active_list()`, `shrink_inactive_list()` + `shrink_folio_list()` decisions and
//!   `folio_check_references()`; the pages a batch frees are uncharged together
//!   (mem_cgroup_uncharge_list()) and freed at its end, before the rest go back;
//! * memcg limit reclaim (`try_to_free_mem_cgroup_pages()`), global direct reclaim
//!   (`try_to_free_pages()`), and kswapd's `balance_pgdat()`, resumable between batches.
//!
//! * reclaim_throttle(): the dirty and writeback bookkeeping of shrink_folio_list()
//!   (nr.dirty, unqueued_dirty, congested, writeback, immediate), PGDAT_WRITEBACK and
//!   LRUVEC_CONGESTED, and the sleeps they cause: VMSCAN_THROTTLE_WRITEBACK (HZ/10, woken
//!   once SWAP_CLUSTER_MAX pages per sleeper finished writeback; kswapd cycling through
//!   pages marked for immediate reclaim, and cgroup v1 limit reclaim finding only unqueued
//!   dirty pages), VMSCAN_THROTTLE_CONGESTED (a jiffy; direct reclaim of a congested
//!   lruvec), VMSCAN_THROTTLE_NOPROGRESS (a jiffy; global direct reclaim that freed nothing
//!   at priority 1, woken by reclaim above 12 % efficiency; both skipped as
//!   skip_throttle_noprogress() says), VMSCAN_THROTTLE_ISOLATED (HZ/50; too_many_isolated(),
//!   with a batch's pages isolated over the CPU time the batch takes), and cgroup v1's
//!   folio_wait_writeback() on a page met twice under writeback.
//!
//! A task's reclaim is atomic in virtual time, so a sleep cannot happen in the middle of it:
//! when reclaim would sleep, it stops there, the allocation fails with `Fault::Blocked`
//! and the task sleeps (sched.rs); when it wakes, the allocation goes on from where its
//! retry loop was (the retry counters travel with the task) and reclaims afresh from
//! DEF_PRIORITY. Reclaim from a control-file write or memory.high's return-to-user path does
//! not sleep. A task's global direct reclaim that has used its time slice gives the CPU up
//! between priorities (cond_resched(), `Wait::Resched`): its scan_control stays in the task
//! and the same pass goes on at the next priority when it runs again; memcg limit reclaim
//! runs its descent in one go.
//!
//! kswapd is a thread on the simulated CPUs (sched.rs). Its priority step is resumable: the
//! scan_control, the memcg walk, the soft pass's phase and the lruvec's nr[] stay in
//! [`KswapdScan`] between runs, and each run does batches of the step until it has used a
//! quantum of CPU (cond_resched() once the tick sets need_resched). The frames it frees join
//! the free lists when the clock reaches the CPU time at which it freed them.
//!
//! A batch that unmapped an anon page of a task running on another CPU at that moment ends
//! with the TLB flush's IPI to that CPU (try_to_unmap() with TTU_BATCH_FLUSH, then
//! arch_tlbbatch_flush()): the reclaimer spins for `ipi_cost`. A task's own pages, and those
//! of tasks not on a CPU (lazy TLB), flush without a wait. Mapped file pages, whose mappers
//! the model does not track, never wait.
//!
//! With `reclaim=3.11` (seed 000's kernel), 3.11's reclaim instead. Its lruvecs are per
//! (memcg, zone) (swap.rs, LRUVEC_SLOTS) and every reclaim goes zone by zone, the zone in
//! `ScanControl::slot`: direct reclaim's shrink_zones() down the zonelist (soft-limit
//! reclaim, then shrink_zone(), per zone), kswapd's balance_pgdat() up to the highest zone
//! below its high watermark (soft-limit reclaim, then kswapd_shrink_zone(), which leaves a
//! zone balanced with the gap and its lowmem reserve alone; `ZoneStep`). get_scan_count()
//! decides per lruvec (SCAN_ANON when the lruvec's file pages and its zone's free pages are
//! below the zone's high watermark, SCAN_FILE while its inactive file list is not low, else
//! zone_reclaim_stat's recent rotated/scanned ratios), shrink_list() ages an active list
//! only while its inactive list is low, referenced anon pages are activated, dirty and
//! writeback file pages kept on the inactive list, memcg reclaim has no v1 throttle on
//! unqueued dirty pages, ZONE_WRITEBACK is kept per zone (set by any reclaim batch that
//! finds enough of its pages under writeback for its priority, cleared by
//! kswapd_shrink_zone(); kswapd skips a marked page under writeback while it is set), and a
//! reclaimer that sleeps on a page's writeback in soft-limit reclaim, kswapd or a task, goes
//! on after the sleep where it stood.
//!
//! Simplifications (docs/FIDELITY.md): swap writes are asynchronous (page_io.rs) except on a
//! SWP_SYNCHRONOUS_IO device, and a batch's writes go to the device once its loop is done
//! with its pages (no block plug held across batches); those that end before the batch's
//! putback find their pages isolated and do not rotate them; dirty file pages are never written from reclaim (the flusher
//! cleans them, as in the newest kernels); too_many_isolated() is not modelled; no slab
//! shrinkers.

use crate::config::SoftLimitPolicy;
use crate::machine::Machine;
use crate::memcontrol::{IterVisit, MemcgEvent, MemcgId, ROOT_MEMCG};
use crate::mmzone::NR_ZONES;
use crate::page_cgroup::{pf, Pfn, MAPPING_FILE_BIT, NIL};
use crate::stat::{lru, NodeEvent, Stat};
use crate::swap::NID0;

pub const SWAP_CLUSTER_MAX: u64 = 32;
pub const DEF_PRIORITY: i32 = 12;
const DEACTIVATE_ANON: u8 = 1;
const DEACTIVATE_FILE: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScanBalance {
    Equal,
    Fract,
    Anon,
    File,
}

/// How long kswapd's event waits for a page's writeback before looking again (the wakeup at
/// writeback end comes first; this only bounds the event).
const KSWAPD_PAGE_WAIT_BOUND_NS: u64 = 10_000_000_000;

/// KSWAPD_ZONE_BALANCE_GAP_RATIO (3.11): the balance gap is at most 1% of a zone.
const KSWAPD_ZONE_BALANCE_GAP_RATIO: u64 = 100;

/// struct scan_control.
#[derive(Clone, Debug)]
pub struct ScanControl {
    pub nr_to_reclaim: u64,
    /// The reclaim root: the limited memcg, or the root memcg for global reclaim.
    pub target: MemcgId,
    /// cgroup_reclaim(sc): limit or proactive reclaim of a memcg (not global).
    pub cgroup_reclaim: bool,
    pub kswapd: bool,
    pub priority: i32,
    pub may_writepage: bool,
    pub may_unmap: bool,
    pub may_swap: bool,
    pub proactive: bool,
    pub proactive_swappiness: Option<u32>,
    pub memcg_low_reclaim: bool,
    pub memcg_low_skipped: bool,
    pub may_deactivate: u8,
    pub force_deactivate: bool,
    pub skipped_deactivate: bool,
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
    pub anon_cost: u64,
    pub file_cost: u64,
    pub nr_scanned: u64,
    pub nr_reclaimed: u64,
    /// nr_reclaimed when kswapd's lru_gen_age_node() ran (sc->last_reclaimed).
    pub last_reclaimed: u64,
    pub nr_dirty: u64,
    pub nr_unqueued_dirty: u64,
    pub nr_congested: u64,
    pub nr_writeback: u64,
    pub nr_immediate: u64,
    pub nr_taken: u64,
    pub nr_file_taken: u64,
    /// FOLIOREF_KEEP verdicts: young pages spared for another trip (nr_ref_keep).
    pub nr_ref_keep: u64,
    /// Pages pageout() gave to zswap (PAGE_SUCCESS without I/O: nr_pageout counts them).
    pub nr_zswap_stored: u64,
    /// The reclaimer is a task's allocation that can sleep (reclaim_throttle()); reclaim
    /// from elsewhere never sleeps.
    pub may_block: bool,
    /// The sleep reclaim asked for; reclaim stops at once when it is set.
    pub throttle: Option<Wait>,
    /// The batch's deferred TLB flush (tlbflush_unmap_batch) must reach another CPU: a page
    /// it unmapped belongs to a task running there.
    pub tlb_flush_remote: bool,
    /// The lruvec slot reclaim shrinks (swap.rs, LRUVEC_SLOTS): the node's, or under
    /// `reclaim=3.11` the zone shrink_zone() works on.
    pub slot: usize,
    /// 3.11 direct reclaim asleep on a page's writeback in a zone's soft-limit reclaim: the
    /// zone, and the soft-limit rounds to go on with after the sleep.
    pub resume_zone: Option<usize>,
    pub soft_resume: Option<crate::soft_limit::SoftReclaimState>,
}

/// Why a reclaimer sleeps: enum vmscan_throttle_state, and folio_wait_writeback().
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// VMSCAN_THROTTLE_WRITEBACK.
    Writeback,
    /// VMSCAN_THROTTLE_CONGESTED.
    Congested,
    /// VMSCAN_THROTTLE_NOPROGRESS.
    NoProgress,
    /// folio_wait_writeback() on this page.
    PageWriteback(Pfn),
    /// VMSCAN_THROTTLE_ISOLATED: too many pages isolated by other reclaimers.
    Isolated,
    /// Not a sleep: cond_resched() in a direct reclaim whose time slice is used gives the
    /// CPU to the threads waiting for one (kswapd among them), and the reclaim goes on at
    /// its next priority when the task runs again.
    Resched,
}

impl Wait {
    /// The sleep's timeout in ns (reclaim_throttle()'s), or None to sleep until woken.
    pub fn timeout_ns(self) -> Option<u64> {
        let jiffy = 1_000_000_000 / crate::memcontrol::HZ;
        match self {
            Wait::Writeback => Some(crate::memcontrol::HZ / 10 * jiffy),
            Wait::Congested | Wait::NoProgress => Some(jiffy),
            Wait::Isolated => Some(crate::memcontrol::HZ / 50 * jiffy),
            Wait::PageWriteback(_) => None,
            Wait::Resched => Some(0),
        }
    }
}

/// The reclaim wait queues of the node (pgdat->reclaim_wait[], nr_writeback_throttled,
/// nr_reclaim_start and NR_THROTTLED_WRITTEN).
#[derive(Clone, Debug, Default)]
pub struct ReclaimWait {
    /// The tasks asleep in reclaim.
    pub sleepers: Vec<crate::program::Pid>,
    /// Sleepers on VMSCAN_THROTTLE_WRITEBACK, kswapd included.
    pub nr_writeback_throttled: u64,
    /// NR_THROTTLED_WRITTEN when the first of them went to sleep.
    pub nr_reclaim_start: u64,
    /// NR_THROTTLED_WRITTEN: pages that finished writeback while someone was throttled.
    pub throttled_written: u64,
    /// PGDAT_WRITEBACK: kswapd found every page it isolated under writeback.
    pub pgdat_writeback: bool,
    /// 3.11's ZONE_WRITEBACK per zone (`reclaim=3.11`): a batch of any reclaim in the zone
    /// found enough of its pages under writeback for its priority; kswapd then skips the
    /// pages it marked that are still under writeback instead of waiting on them, until
    /// its next kswapd_shrink_zone() of the zone clears the flag.
    pub zone_writeback: [bool; NR_ZONES],
    /// NR_ISOLATED_ANON/FILE over time: per CPU, each batch a reclaimer on it took off an
    /// LRU, as (start, end, pages, file) in virtual time. A reclaimer's batch is atomic in
    /// the model, but its pages are off the LRU for the CPU time the batch takes, and a
    /// reclaimer on another CPU that runs inside that time sees them isolated. A CPU runs
    /// one thread at a time, so its windows are in order of start and, but for a
    /// control-file write from outside (CPU 0, beside the thread), disjoint; a query looks at
    /// the last window to start. Those that end before the clock are dropped (no context's
    /// time is earlier than the clock).
    pub isolated: Vec<std::collections::VecDeque<(u64, u64, u32, bool)>>,
    /// Sleeps in VMSCAN_THROTTLE_ISOLATED, and shrink_inactive_list() calls that gave up
    /// after one (/proc/memcgsim/reclaim).
    pub isolated_throttles: u64,
    pub isolated_skips: u64,
    /// Reclaim batches whose TLB flush waited for another CPU (/proc/memcgsim/reclaim).
    pub tlb_flush_ipis: u64,
}

impl ScanControl {
    pub fn new(target: MemcgId, nr_to_reclaim: u64, cgroup_reclaim: bool) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            target,
            cgroup_reclaim,
            kswapd: false,
            priority: DEF_PRIORITY,
            may_writepage: true,
            may_unmap: true,
            may_swap: true,
            proactive: false,
            proactive_swappiness: None,
            memcg_low_reclaim: false,
            memcg_low_skipped: false,
            may_deactivate: 0,
            force_deactivate: false,
            skipped_deactivate: false,
            cache_trim_mode: false,
            file_is_tiny: false,
            anon_cost: 0,
            file_cost: 0,
            nr_scanned: 0,
            nr_reclaimed: 0,
            last_reclaimed: 0,
            nr_dirty: 0,
            nr_unqueued_dirty: 0,
            nr_congested: 0,
            nr_writeback: 0,
            nr_immediate: 0,
            nr_taken: 0,
            nr_file_taken: 0,
            nr_ref_keep: 0,
            nr_zswap_stored: 0,
            may_block: false,
            throttle: None,
            tlb_flush_remote: false,
            slot: NID0,
            resume_zone: None,
            soft_resume: None,
        }
    }
}

/// What shrink_inactive_list() did, per kind of reclaimer and priority: the model's side of
/// the kernel's mm_vmscan_lru_shrink_inactive tracepoint, printed in /proc/memcgsim/vmscan
/// and read on a kernel with `memcgsim oracle --trace`.
#[derive(Clone, Debug, Default)]
pub struct ShrinkInactiveHist {
    /// [kswapd, direct (global), memcg (limit, high, memory.reclaim, soft limit)][priority]
    pub rows: [[ShrinkInactiveRow; DEF_PRIORITY as usize + 1]; 3],
}

/// One row of [`ShrinkInactiveHist`]: the tracepoint's fields summed over calls.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShrinkInactiveRow {
    pub calls: u64,
    pub scanned: u64,
    pub reclaimed: u64,
    pub ref_keep: u64,
    pub activate: u64,
    pub writeback: u64,
}

impl ShrinkInactiveHist {
    pub const KINDS: [&'static str; 3] = ["kswapd", "direct", "memcg"];
}

/// kswapd's state between its events.
#[derive(Clone, Debug)]
pub struct Kswapd {
    pub awake: bool,
    pub priority: i32,
    /// Pages reclaimed in the current balance_pgdat() run.
    pub nr_reclaimed: u64,
    /// kswapd_failures: balance runs that reclaimed nothing.
    pub failures: u32,
    /// Total CPU time kswapd used.
    pub cpu_ns: u64,
    /// Asleep in reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK).
    pub throttled: bool,
    /// Asleep in folio_wait_writeback() on this page (soft-limit reclaim on cgroup v1).
    pub page_wait: Option<Pfn>,
    /// 3.11: the soft-limit reclaim that sleeps on `page_wait`, to go on with after it.
    pub soft_resume: Option<crate::soft_limit::SoftReclaimState>,
    /// 3.11: the balance_pgdat() priority step going through the zones.
    pub zone_step: Option<ZoneStep>,
    /// Generation of kswapd's pending event (a wakeup supersedes the timeout's event).
    pub gen: u64,
    /// Its virtual runtime in the run queue (sched.rs) and the CPU it last ran on.
    pub vruntime: u64,
    pub cpu: u32,
    /// kswapd is running a step: the frames it frees go to `freeing`.
    pub in_step: bool,
    /// Frames kswapd has freed, each with the virtual time at which it freed it, oldest
    /// first, with the CPU whose list it goes to. A run of kswapd is atomic in virtual time,
    /// but in the kernel kswapd frees batch by batch over that CPU time while allocators
    /// run beside it; a frame joins the free lists when the clock reaches its time
    /// (kswapd_release_freed()).
    pub freeing: std::collections::VecDeque<(u64, Pfn, usize)>,
    /// The priority step in progress, between kswapd's batches.
    pub scan: Option<Box<KswapdScan>>,
    /// sc->memcgs_need_aging of the balance_pgdat() run (lru_gen.rs): false at its start,
    /// so that its first lru_gen_age_node() only sets it.
    pub lru_gen_need_aging: bool,
    /// Its pressure state: a kernel thread of the root group (psi.rs).
    pub psi: crate::psi::PsiTask,
}

/// Which pass of shrink_node() kswapd is in: the rework's soft pass (the first, or its
/// repeat when the first found no eligible group), or the pass over every group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodePass {
    Soft { first: bool },
    All,
}

/// kswapd's priority step in progress: its scan_control, where its shrink_node() stands
/// (the pass, the memcgs of the walk and the next one, the lruvec being scanned), and the
/// sleep soft-limit reclaim asked for.
#[derive(Clone, Debug)]
pub struct KswapdScan {
    sc: ScanControl,
    before: u64,
    soft_wait: Option<Wait>,
    pass: NodePass,
    /// Pages scanned before the soft passes (the fallback's test), the current soft pass's
    /// start (scanned, reclaimed), the memcgs its own walk looked at, the groups that walk
    /// returned and the time its runs took.
    soft_scanned_before: u64,
    soft_mark: (u64, u64),
    soft_walked: u64,
    soft_groups: usize,
    soft_ns: u64,
    list: Vec<MemcgId>,
    pos: usize,
    lruvec: Option<LruvecScan>,
}

impl Default for Kswapd {
    fn default() -> Self {
        Kswapd {
            awake: false,
            priority: DEF_PRIORITY,
            nr_reclaimed: 0,
            failures: 0,
            cpu_ns: 0,
            throttled: false,
            page_wait: None,
            soft_resume: None,
            zone_step: None,
            gen: 0,
            vruntime: 0,
            cpu: 0,
            in_step: false,
            freeing: std::collections::VecDeque::new(),
            scan: None,
            lru_gen_need_aging: false,
            psi: crate::psi::PsiTask::new(crate::psi::KTHREAD, crate::psi::PSI_SYSTEM, 0, 0),
        }
    }
}

/// A priority step of 3.11's balance_pgdat() (`reclaim=3.11`), which goes through the zones
/// from the lowest up to `end_zone`, the highest one it found below its high watermark: for
/// each, the soft-limit tree's reclaim, then kswapd_shrink_zone(), which shrinks the zone
/// unless it is balanced with the gap. `zone` is the next zone to work on; `soft_done` says
/// that its soft-limit reclaim is over (a sleep on a page's writeback interrupts it).
#[derive(Clone, Copy, Debug)]
pub struct ZoneStep {
    end_zone: usize,
    zone: usize,
    soft_done: bool,
    /// No zone scanned its share (kswapd_shrink_zone() returned false for every zone).
    raise_priority: bool,
    nr_reclaimed: u64,
}

/// shrink_lruvec()'s loop state: what is left to scan of each list, the targets, and what
/// the loop reclaimed. kswapd keeps it between its batches.
#[derive(Clone, Debug)]
pub struct LruvecScan {
    memcg: MemcgId,
    nr: [u64; 4],
    targets: [u64; 4],
    nr_to_reclaim: u64,
    scan_adjusted: bool,
    reclaimed: u64,
    /// lru_gen_shrink_lruvec()'s loop instead, with the multi-generational LRU.
    gen: Option<crate::lru_gen::GenScan>,
}

/// shrink_folio_list()'s free_folios: each freed frame with the memcg whose memory charge
/// it still holds (None once mem_cgroup_swapout() has moved the charge to the swap entry).
type FreeFolios = Vec<(Pfn, Option<MemcgId>)>;

/// What shrink_folio_batch() did with a batch.
pub(crate) struct BatchOut {
    pub reclaimed: u64,
    /// The pages kept, in order, to go back to the LRU.
    pub putback: Vec<Pfn>,
    /// Pages it activated (PG_active set: PGACTIVATE).
    pub nr_activate: i64,
    /// stat.nr_pageout: the pages pageout() wrote, zswap's stores among them.
    pub nr_pageout: u64,
}

/// What shrink_folio_list decided for one page.
enum Verdict {
    Activate,
    Keep,
    Freed,
}

/// int_sqrt() of lib/math/int_sqrt.c: the floor of the square root.
pub fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

impl Machine {
    // ---------------------------------------------------------------- entry points

    /// try_to_free_mem_cgroup_pages(): limit (or proactive) reclaim of `memcg`'s subtree.
    pub fn try_to_free_mem_cgroup_pages(
        &mut self,
        memcg: MemcgId,
        nr_pages: u64,
        may_swap: bool,
        proactive: bool,
        swappiness: Option<u32>,
    ) -> u64 {
        let mut sc = ScanControl::new(memcg, nr_pages.max(SWAP_CLUSTER_MAX), true);
        sc.may_swap = may_swap;
        sc.proactive = proactive;
        sc.proactive_swappiness = swappiness;
        self.do_try_to_free_pages(&mut sc)
    }

    /// try_to_free_mem_cgroup_pages() from try_charge_memcg(): the charging task may sleep
    /// in reclaim_throttle(); the sleep it asked for comes back with what it reclaimed.
    pub fn charge_reclaim(
        &mut self,
        memcg: MemcgId,
        nr_pages: u64,
        may_swap: bool,
    ) -> (u64, Option<Wait>) {
        let mut sc = ScanControl::new(memcg, nr_pages.max(SWAP_CLUSTER_MAX), true);
        sc.may_swap = may_swap;
        sc.may_block = self.current_pid().is_some() && !self.gfp_noretry;
        let reclaimed = self.do_try_to_free_pages(&mut sc);
        (reclaimed, sc.throttle)
    }

    /// try_to_free_pages(): global direct reclaim of SWAP_CLUSTER_MAX pages, with the
    /// sleep it asked for.
    /// A reclaim that gave its CPU up between priorities (`Wait::Resched`) is kept in the
    /// task and goes on from there when the task calls again.
    pub fn try_to_free_pages(&mut self) -> (u64, Option<Wait>) {
        let pid = self.current_pid();
        let saved = pid.and_then(|p| self.task_mut(p).reclaim_resume.take());
        let resumed = saved.is_some();
        let mut sc = match saved {
            Some(sc) => *sc,
            None => {
                let mut sc = ScanControl::new(ROOT_MEMCG, SWAP_CLUSTER_MAX, false);
                sc.may_block = pid.is_some() && !self.gfp_noretry;
                sc
            }
        };
        sc.throttle = None;
        let reclaimed = self.reclaim_timed(&mut sc, resumed);
        let throttle = sc.throttle;
        let kept = match throttle {
            Some(Wait::Resched) => true,
            // 3.11: asleep in a zone's soft-limit reclaim, which goes on after the sleep.
            Some(Wait::PageWriteback(_)) => sc.resume_zone.is_some(),
            _ => false,
        };
        if let (true, Some(pid)) = (kept, pid) {
            self.task_mut(pid).reclaim_resume = Some(Box::new(sc));
        }
        (reclaimed, throttle)
    }

    /// do_try_to_free_pages(), charging the time it takes to the task that entered it (its
    /// direct-reclaim stall).
    pub fn do_try_to_free_pages(&mut self, sc: &mut ScanControl) -> u64 {
        self.reclaim_timed(sc, false)
    }

    /// do_try_to_free_pages() from its start, or `resumed` at the priority where it gave
    /// its CPU up.
    fn reclaim_timed(&mut self, sc: &mut ScanControl, resumed: bool) -> u64 {
        let start = self.now();
        // A task's direct reclaim (__perform_reclaim(), try_charge_memcg(), reclaim_high())
        // is a memstall; a write from outside the machine has no task to stall.
        let memstall = self
            .current_pid()
            .is_some()
            .then(|| self.psi_memstall_enter());
        let reclaimed = self.in_memalloc(|m| m.do_try_to_free_pages_inner(sc, resumed));
        if let Some(was) = memstall {
            self.psi_memstall_leave(was);
        }
        if let Some(pid) = self.cur.as_ref().and_then(|c| c.pid) {
            let spent = self.now() - start;
            let task = self.task_mut(pid);
            task.stats.reclaim_ns += spent;
            // The reclaim after a sleep on isolated pages went on past them; the next one
            // may sleep again.
            if sc.throttle != Some(Wait::Isolated) {
                task.isolated_stalled = false;
            }
        }
        reclaimed
    }

    fn do_try_to_free_pages_inner(&mut self, sc: &mut ScanControl, resumed: bool) -> u64 {
        // Only global direct reclaim, which starts at DEF_PRIORITY, is resumed.
        debug_assert!(!resumed || (!sc.cgroup_reclaim && !sc.kswapd));
        let initial_priority = if resumed { DEF_PRIORITY } else { sc.priority };
        let mut new_pass = !resumed;
        for _retry in 0..4 {
            // ALLOCSTALL counts each pass of global reclaim (the `retry:` label), so a
            // reclaim that retries with force_deactivate or memcg_low_reclaim counts again.
            if !sc.cgroup_reclaim && new_pass {
                self.mod_stat(ROOT_MEMCG, Stat::Allocstall, 1);
            }
            new_pass = true;
            loop {
                sc.nr_scanned = 0;
                let mut soft_wait = false;
                if self.reclaim_3_11() {
                    // 3.11's shrink_zones(): the zonelist, highest zone first, each zone's
                    // soft-limit reclaim and shrink_zone(); after a sleep in a zone's
                    // soft-limit reclaim, from that zone on.
                    let from = sc.resume_zone.take().unwrap_or(NR_ZONES - 1);
                    for z in (0..=from).rev() {
                        if self.zones.zone[z].managed == 0 {
                            continue;
                        }
                        sc.slot = z;
                        soft_wait = self.direct_soft_limit_reclaim(sc);
                        if soft_wait {
                            if sc.soft_resume.is_some() {
                                sc.resume_zone = Some(z);
                            }
                            break;
                        }
                        self.shrink_node(sc);
                        if sc.throttle.is_some() {
                            break;
                        }
                    }
                    sc.slot = NID0;
                } else {
                    soft_wait = self.direct_soft_limit_reclaim(sc);
                    if !soft_wait {
                        self.shrink_node(sc);
                    }
                }
                if soft_wait {
                    // Asleep on a page's writeback: this reclaim ends here.
                    break;
                }
                if !sc.kswapd {
                    self.consider_reclaim_throttle(sc);
                }
                if sc.nr_reclaimed >= sc.nr_to_reclaim || sc.throttle.is_some() {
                    break;
                }
                if sc.priority < DEF_PRIORITY - 2 {
                    sc.may_writepage = true;
                }
                sc.priority -= 1;
                if sc.priority < 0 {
                    break;
                }
                if self.direct_reclaim_need_resched(sc) {
                    sc.throttle = Some(Wait::Resched);
                    return sc.nr_reclaimed;
                }
            }
            self.snapshot_refaults(sc.target);
            if sc.cgroup_reclaim {
                self.memcg_mut(sc.target).lruvec[NID0].congested = false;
            }
            if sc.nr_reclaimed > 0 || sc.throttle.is_some() {
                return sc.nr_reclaimed;
            }
            if sc.skipped_deactivate {
                sc.priority = initial_priority;
                sc.force_deactivate = true;
                sc.skipped_deactivate = false;
                continue;
            }
            if sc.memcg_low_skipped {
                sc.priority = initial_priority;
                sc.force_deactivate = false;
                sc.memcg_low_reclaim = true;
                sc.memcg_low_skipped = false;
                continue;
            }
            return 0;
        }
        sc.nr_reclaimed
    }

    /// shrink_zones()' soft-limit reclaim in global reclaim (mainline's tree), for the zone
    /// or node `sc.slot` names. Returns whether it asked for a sleep, which ends the
    /// reclaim. Under 6.1 a direct reclaimer does not sleep here: the kernel's waits on a
    /// page's writeback and goes on to the normal pass, which the model's 6.1 reclaim,
    /// atomic in virtual time, does not resume after a sleep; going on without the wait
    /// keeps the normal pass (docs/FIDELITY.md). Under 3.11 it sleeps, and the reclaim goes
    /// on after the sleep with the same rounds, then that zone's shrink_zone().
    fn direct_soft_limit_reclaim(&mut self, sc: &mut ScanControl) -> bool {
        if sc.cgroup_reclaim || self.cfg.softlimit != SoftLimitPolicy::Tree {
            return false;
        }
        let v3_11 = self.reclaim_3_11();
        let resumed = match sc.soft_resume.take() {
            Some(st) => self.soft_limit_resume(st, false),
            None => None,
        };
        let (reclaimed, scanned, wait) = match resumed {
            Some((reclaimed, wait)) => (reclaimed, 0, wait),
            None => {
                let may_block = v3_11 && sc.may_block;
                self.mem_cgroup_soft_limit_reclaim(false, may_block, sc.slot)
            }
        };
        sc.soft_resume = self.soft_interrupted.take();
        sc.nr_reclaimed += reclaimed;
        sc.nr_scanned += scanned;
        if wait.is_some() {
            sc.throttle = wait;
            return true;
        }
        false
    }

    /// cond_resched() in a task's global direct reclaim, between priorities: the task has
    /// used its time slice (the tick has set need_resched), so it gives the CPU up. Memcg
    /// limit reclaim still runs its descent in one go (docs/FIDELITY.md).
    fn direct_reclaim_need_resched(&self, sc: &ScanControl) -> bool {
        if !sc.may_block || sc.cgroup_reclaim || sc.kswapd {
            return false;
        }
        self.cur
            .as_ref()
            .is_some_and(|c| c.pid.is_some() && c.cpu_ns + c.wait_ns >= self.cfg.costs.quantum_ns)
    }

    fn snapshot_refaults(&mut self, target: MemcgId) {
        if self.lru_gen_enabled() {
            return;
        }
        let a = self.stat_view(target, Stat::WorkingsetActivateAnon);
        let f = self.stat_view(target, Stat::WorkingsetActivateFile);
        self.memcg_mut(target).lruvec[NID0].refaults = [a, f];
    }

    /// inactive_is_low(), on hierarchical LRU sizes (lruvec_page_state()).
    pub fn inactive_is_low(&self, memcg: MemcgId, file: bool) -> bool {
        let (ia, aa) = if file {
            (Stat::InactiveFile, Stat::ActiveFile)
        } else {
            (Stat::InactiveAnon, Stat::ActiveAnon)
        };
        let inactive = self.stat_view(memcg, ia);
        let active = self.stat_view(memcg, aa);
        let gb = (inactive + active) >> (30 - crate::config::PAGE_SHIFT);
        let ratio = if gb > 0 { int_sqrt(10 * gb) } else { 1 };
        inactive * ratio < active
    }

    /// prepare_scan_count() of 6.1 (done once per shrink_node at the reclaim root).
    fn prepare_scan_control(&mut self, sc: &mut ScanControl) {
        if self.lru_gen_enabled() {
            return;
        }
        // 6.1 flushes so that the heuristics below read accurate lruvec stats.
        self.mem_cgroup_flush_stats();
        let t = sc.target;
        sc.anon_cost = self.memcg(t).lruvec[NID0].anon_cost;
        sc.file_cost = self.memcg(t).lruvec[NID0].file_cost;
        if sc.force_deactivate {
            sc.may_deactivate = DEACTIVATE_ANON | DEACTIVATE_FILE;
        } else {
            let refaults = self.memcg(t).lruvec[NID0].refaults;
            let mut d = 0;
            if self.stat_view(t, Stat::WorkingsetActivateAnon) != refaults[0]
                || self.inactive_is_low(t, false)
            {
                d |= DEACTIVATE_ANON;
            }
            if self.stat_view(t, Stat::WorkingsetActivateFile) != refaults[1]
                || self.inactive_is_low(t, true)
            {
                d |= DEACTIVATE_FILE;
            }
            sc.may_deactivate = d;
        }
        let inactive_file = self.stat_view(t, Stat::InactiveFile);
        sc.cache_trim_mode =
            (inactive_file >> sc.priority) > 0 && sc.may_deactivate & DEACTIVATE_FILE == 0;
        if !sc.cgroup_reclaim {
            let free = self.nr_free_pages();
            let file = self.global_stat(Stat::ActiveFile) + self.global_stat(Stat::InactiveFile);
            let anon = self.global_stat(Stat::InactiveAnon);
            // The free pages of every zone, those no user allocation may take included,
            // against the sum of the zones' high watermarks.
            sc.file_is_tiny = file + free <= self.zones.total(crate::mmzone::Wmark::High)
                && sc.may_deactivate & DEACTIVATE_ANON == 0
                && (anon >> sc.priority) > 0;
        } else {
            sc.file_is_tiny = false;
        }
    }

    /// shrink_node(). With the soft-limit rework (seed 000), two passes at the same
    /// priority: the soft pass visits only the groups mem_cgroup_soft_reclaim_eligible()
    /// lets through, repeated once if it visited none (rework patch 8), and the reclaim-all
    /// pass follows only if the soft pass scanned nothing.
    pub fn shrink_node(&mut self, sc: &mut ScanControl) {
        let before = self.shrink_node_begin(sc);
        if self.should_soft_reclaim(sc) {
            let scanned_before = sc.nr_scanned;
            let groups = self.soft_pass(sc);
            if groups == 0 && self.cfg.softlimit == SoftLimitPolicy::Rework {
                self.soft_pass(sc);
            }
            if sc.nr_scanned == scanned_before {
                self.soft_stats.fallbacks += 1;
                self.shrink_node_memcgs(sc, false);
            }
        } else {
            self.shrink_node_memcgs(sc, false);
        }
        self.shrink_node_end(sc, before);
    }

    /// The start of shrink_node(): the per-node counters, prepare_scan_count(). Returns what
    /// was reclaimed before it.
    fn shrink_node_begin(&mut self, sc: &mut ScanControl) -> u64 {
        // Swap writes that ended while this reclaimer ran (page_io.rs).
        self.swap_io_poll();
        sc.nr_dirty = 0;
        sc.nr_unqueued_dirty = 0;
        sc.nr_congested = 0;
        sc.nr_writeback = 0;
        sc.nr_immediate = 0;
        sc.nr_taken = 0;
        sc.nr_file_taken = 0;
        let before = sc.nr_reclaimed;
        self.prepare_scan_control(sc);
        before
    }

    /// The end of shrink_node(): progress resets kswapd's failures; the writeback verdicts.
    fn shrink_node_end(&mut self, sc: &mut ScanControl, before: u64) {
        if sc.nr_reclaimed > before && !sc.cgroup_reclaim {
            // Any progress makes the node reclaimable again.
            self.kswapd.failures = 0;
        }
        self.shrink_node_throttle(sc);
    }

    /// The end of shrink_node(): what the pages reclaim met under writeback say about the
    /// node and the target lruvec, and the sleeps that follow.
    fn shrink_node_throttle(&mut self, sc: &mut ScanControl) {
        if sc.kswapd {
            if !self.reclaim_3_11() && sc.nr_writeback > 0 && sc.nr_writeback == sc.nr_taken {
                self.reclaim_wait.pgdat_writeback = true;
            }
            // Pages marked for immediate reclaim came round again still under writeback:
            // they cycle faster than they are written.
            if sc.nr_immediate > 0 {
                self.reclaim_throttle(sc, Wait::Writeback);
            }
        }
        // Every dirty page met was already queued for writeback and marked for immediate
        // reclaim: the lruvec is congested. Legacy (v1) limit reclaim stalls on the pages
        // instead.
        let sane = self.writeback_throttling_sane(sc);
        if (sc.kswapd || (sc.cgroup_reclaim && sane))
            && sc.nr_dirty > 0
            && sc.nr_dirty == sc.nr_congested
        {
            self.memcg_mut(sc.target).lruvec[NID0].congested = true;
        }
        if !sc.kswapd && self.memcg(sc.target).lruvec[NID0].congested {
            self.reclaim_throttle(sc, Wait::Congested);
        }
    }

    /// writeback_throttling_sane(): global reclaim, or limit reclaim on cgroup v2, where
    /// balance_dirty_pages() keeps the dirty pages in check.
    fn writeback_throttling_sane(&self, sc: &ScanControl) -> bool {
        !sc.cgroup_reclaim || !self.is_v1()
    }

    /// consider_reclaim_throttle(), after each shrink_node() of direct reclaim.
    fn consider_reclaim_throttle(&mut self, sc: &mut ScanControl) {
        if sc.nr_reclaimed > sc.nr_scanned >> 3 {
            self.wake_throttled(|w| w == Wait::NoProgress);
            return;
        }
        if sc.cgroup_reclaim {
            return;
        }
        if sc.priority == 1 && sc.nr_reclaimed == 0 {
            self.reclaim_throttle(sc, Wait::NoProgress);
        }
    }

    /// skip_throttle_noprogress(): no point sleeping when kswapd gave up (the node is near
    /// OOM), or when at most half the reclaimable pages wait for writeback (throttling
    /// happens when they come round the LRU again).
    fn skip_throttle_noprogress(&self) -> bool {
        if self.kswapd.failures >= crate::memcontrol::MAX_RECLAIM_RETRIES {
            return true;
        }
        let mut reclaimable =
            self.global_stat(Stat::ActiveFile) + self.global_stat(Stat::InactiveFile);
        if self.swap.nr_free() > 0 {
            reclaimable +=
                self.global_stat(Stat::ActiveAnon) + self.global_stat(Stat::InactiveAnon);
        }
        let write_pending = self.global_stat(Stat::FileDirty) + self.global_stat(Stat::Writeback);
        2 * write_pending <= reclaimable
    }

    /// reclaim_throttle(): ask for a sleep. kswapd sleeps between its events; a task's
    /// reclaim stops and the task sleeps (the first sleep asked for counts); reclaim that
    /// cannot sleep goes on.
    fn reclaim_throttle(&mut self, sc: &mut ScanControl, w: Wait) {
        if matches!(w, Wait::Congested | Wait::NoProgress) && self.skip_throttle_noprogress() {
            return;
        }
        if sc.kswapd {
            if matches!(w, Wait::Writeback | Wait::PageWriteback(_)) && sc.throttle.is_none() {
                sc.throttle = Some(w);
            }
            return;
        }
        if sc.may_block && sc.throttle.is_none() {
            sc.throttle = Some(w);
        }
    }

    /// wake_up() on the reclaim wait queues: every sleeper whose wait `pred` accepts.
    pub(crate) fn wake_throttled(&mut self, pred: impl Fn(Wait) -> bool) {
        if pred(Wait::Writeback) && self.kswapd.throttled {
            self.kswapd.throttled = false;
            self.reclaim_wait.nr_writeback_throttled -= 1;
            self.kswapd.gen += 1;
            let now = self.now();
            self.sched
                .push(now, crate::sched::Event::Kswapd(self.kswapd.gen));
        }
        if self.reclaim_wait.sleepers.is_empty() {
            return;
        }
        let sleepers = self.reclaim_wait.sleepers.clone();
        for pid in sleepers {
            let Some(b) = self.task(pid).block else {
                continue;
            };
            if pred(b.wait) {
                self.wake_blocked(pid);
            }
        }
    }

    /// acct_reclaim_writeback() and the wakeup of folio_wait_writeback(): a page finished
    /// writeback.
    pub(crate) fn acct_reclaim_writeback(&mut self, pfn: Pfn) {
        let rw = &mut self.reclaim_wait;
        if rw.nr_writeback_throttled > 0 {
            rw.throttled_written += 1;
            let written = rw.throttled_written - rw.nr_reclaim_start;
            if written > SWAP_CLUSTER_MAX * rw.nr_writeback_throttled {
                self.wake_throttled(|w| w == Wait::Writeback);
            }
        }
        if self.kswapd.page_wait == Some(pfn) {
            self.kswapd.page_wait = None;
            self.kswapd.gen += 1;
            let now = self.now();
            self.sched
                .push(now, crate::sched::Event::Kswapd(self.kswapd.gen));
        }
        if !self.reclaim_wait.sleepers.is_empty() {
            self.wake_throttled(|w| w == Wait::PageWriteback(pfn));
        }
    }

    /// Count a new sleeper on VMSCAN_THROTTLE_WRITEBACK.
    pub(crate) fn writeback_throttled_inc(&mut self) {
        let rw = &mut self.reclaim_wait;
        rw.nr_writeback_throttled += 1;
        if rw.nr_writeback_throttled == 1 {
            rw.nr_reclaim_start = rw.throttled_written;
        }
    }

    /// One soft pass of the rework, with its statistics. Returns the groups it visited.
    fn soft_pass(&mut self, sc: &mut ScanControl) -> usize {
        let (start, steps) = (self.now(), self.soft_stats.walk_steps);
        let mark = (sc.nr_scanned, sc.nr_reclaimed);
        let groups = self.shrink_node_memcgs(sc, true);
        let spent = self.now() - start;
        let walked = self.soft_stats.walk_steps - steps;
        self.soft_pass_account(mark, walked, sc, groups, spent);
        groups
    }

    /// A soft pass's statistics: the memcgs its walk looked at, the groups it shrank, what it
    /// scanned and reclaimed since `mark` (scanned, reclaimed), and the time it took.
    fn soft_pass_account(
        &mut self,
        mark: (u64, u64),
        walked: u64,
        sc: &ScanControl,
        groups: usize,
        spent: u64,
    ) {
        let (scanned, reclaimed) = mark;
        let st = &mut self.soft_stats;
        st.calls += 1;
        st.walked += walked;
        st.shrunk += groups as u64;
        st.scanned += sc.nr_scanned - scanned;
        st.reclaimed += sc.nr_reclaimed - reclaimed;
        st.ns += spent;
    }

    /// !mem_cgroup_supports_protection(): only the root is never protected. 6.1's
    /// mem_cgroup_below_min() and mem_cgroup_below_low() test the reclaim target too, with
    /// the effective protection an earlier reclaim from an ancestor left it
    /// (mem_cgroup_calculate_protection() does not update the target's): a proactive or
    /// limit reclaim of a group that an ancestor's reclaim found protected skips it and
    /// reclaims nothing. 6.2 ("mm: memcg: fix stale protection of reclaim target memcg")
    /// made the target unprotected; get_scan_count()'s mem_cgroup_protection() already
    /// ignored it in 6.1.
    fn memcg_unprotected(memcg: MemcgId) -> bool {
        memcg == ROOT_MEMCG
    }

    /// shrink_node_memcgs(): a pre-order walk of the target's subtree, every group or (the
    /// rework's soft pass) the soft-limit eligible ones. Returns how many groups the walk
    /// returned.
    fn shrink_node_memcgs(&mut self, sc: &mut ScanControl, soft: bool) -> usize {
        let list = self.shrink_node_walk(sc, soft);
        let groups = list.len();
        for memcg in list {
            if self.memcg_reclaim_noop(memcg) || !self.memcg_reclaim_check(memcg, sc) {
                continue;
            }
            self.shrink_lruvec(memcg, sc);
            self.memcg_shrink_slab(memcg, sc);
            if sc.throttle.is_some() {
                break;
            }
            if sc.cgroup_reclaim && self.reclaim_3_11() && sc.nr_reclaimed >= sc.nr_to_reclaim {
                // 3.11's shrink_zone(): limit reclaim stops its walk once it has enough.
                break;
            }
        }
        groups
    }

    /// The walk of shrink_node_memcgs() (all groups, or the soft pass's eligible ones), with
    /// its CPU cost.
    fn shrink_node_walk(&mut self, sc: &ScanControl, soft: bool) -> Vec<MemcgId> {
        let mut list = Vec::new();
        let root = sc.target;
        let looked = if soft {
            self.soft_eligible_walk(root, &mut list)
        } else {
            self.memcg_subtree_preorder(root, &mut list)
        };
        self.charge_walk(looked);
        list
    }

    /// Whether shrink_node_memcgs()' work on `memcg` (the protection check, shrink_lruvec(),
    /// shrink_slab()) would change nothing: no memory.min or memory.low was ever set (every
    /// effective protection is 0, which calculate_protection() writes again), no page ever
    /// joined its LRU lists (get_scan_count() finds nothing to scan), no active-anon update
    /// reached it (its anon list is never low on inactive pages: no ageing) and its list_lrus
    /// are empty (the shrinkers count nothing). The kernel visits such a group and does that
    /// work; the model tests it at the time the work would be done, from dense arrays, and
    /// skips it.
    #[inline]
    fn memcg_reclaim_noop(&self, memcg: MemcgId) -> bool {
        !self.memory.ever_protected()
            && !self.memcg_topo.lru_seen(memcg)
            && !self.memcg_topo.anon_seen(memcg)
            && self.slab_lru_empty(memcg)
    }

    /// shrink_node_memcgs()' protection checks for one memcg: may reclaim touch it?
    fn memcg_reclaim_check(&mut self, memcg: MemcgId, sc: &mut ScanControl) -> bool {
        let recursive = self.cfg.recursive_prot;
        self.memory
            .calculate_protection(sc.target as usize, memcg as usize, recursive);
        if !Self::memcg_unprotected(memcg) {
            let c = self.memory.get(memcg as usize);
            if c.emin >= c.usage {
                return false;
            }
            if c.elow >= c.usage {
                if !sc.memcg_low_reclaim {
                    sc.memcg_low_skipped = true;
                    return false;
                }
                self.memcg_memory_event(memcg, MemcgEvent::Low);
            }
        }
        true
    }

    /// shrink_slab() for the memcg; what it frees counts as reclaimed
    /// (reclaim_state->reclaimed_slab).
    fn memcg_shrink_slab(&mut self, memcg: MemcgId, sc: &mut ScanControl) {
        sc.nr_reclaimed += self.shrink_slab(memcg, sc.priority);
    }

    /// The CPU cost of a reclaim walk that looked at `looked` memcgs.
    pub(crate) fn charge_walk(&mut self, looked: usize) {
        self.soft_stats.walk_steps += looked as u64;
        self.spend_cpu(looked as u64 * self.cfg.costs.memcg_iter_ns);
    }

    /// can_reclaim_anon_pages().
    fn can_reclaim_anon_pages(&self, memcg: MemcgId) -> bool {
        // No free swap: the memcg's share is 0 without climbing its ancestors' counters.
        self.swap.nr_free() > 0 && self.mem_cgroup_get_nr_swap_pages(memcg) > 0
    }

    /// get_scan_count(): how many pages of each evictable list to scan.
    fn get_scan_count(&mut self, memcg: MemcgId, sc: &mut ScanControl) -> [u64; 4] {
        if !self.memcg_topo.lru_seen(memcg) && self.scan_count_unprotected(memcg, sc) {
            // An empty lruvec without protection: every target is 0 whatever the balance.
            return [0; 4];
        }
        let (balance, fraction, denominator, force_scan) = if self.reclaim_3_11() {
            self.scan_balance_3_11(memcg, sc)
        } else {
            let (b, f, d) = self.scan_balance(memcg, sc);
            (b, f, d, false)
        };
        let (emin, elow) = if memcg == sc.target {
            (0, 0)
        } else {
            let c = self.memory.get(memcg as usize);
            (c.emin, c.elow)
        };
        let usage = self.memory.get(memcg as usize).usage;
        let mut nr = [0u64; 4];
        for (l, slot) in nr.iter_mut().enumerate() {
            let file = lru::is_file(l);
            let size = self.memcg(memcg).lruvec[sc.slot].size[l];
            let mut scan = if emin > 0 || elow > 0 {
                let protection = if !sc.memcg_low_reclaim && elow > emin {
                    sc.memcg_low_skipped = true;
                    elow
                } else {
                    emin
                };
                let cgroup_size = usage.max(protection);
                let s =
                    size - (size as u128 * protection as u128 / (cgroup_size as u128 + 1)) as u64;
                s.max(SWAP_CLUSTER_MAX)
            } else {
                size
            };
            scan >>= sc.priority;
            if scan == 0 && force_scan {
                // 3.11: a small lruvec is scanned a little even at a high priority.
                scan = size.min(SWAP_CLUSTER_MAX);
            }
            *slot = match balance {
                ScanBalance::Equal => scan,
                ScanBalance::Fract => {
                    (scan as u128 * fraction[file as usize] as u128 / denominator as u128) as u64
                }
                ScanBalance::File => {
                    if file {
                        scan
                    } else {
                        0
                    }
                }
                ScanBalance::Anon => {
                    if file {
                        0
                    } else {
                        scan
                    }
                }
            };
        }
        nr
    }

    /// get_scan_count()'s choice of balance in 6.1: (balance, fraction, denominator).
    fn scan_balance(&self, memcg: MemcgId, sc: &ScanControl) -> (ScanBalance, [u64; 2], u64) {
        let swappiness = sc
            .proactive_swappiness
            .unwrap_or_else(|| self.memcg_swappiness(memcg)) as u64;
        let mut fraction = [0u64; 2];
        let mut denominator = 1u64;
        // Rule 1: no swap for this memcg; rule 2: cgroup reclaim with swappiness 0.
        let no_anon = !sc.may_swap || !self.can_reclaim_anon_pages(memcg);
        let balance = if self.unified_lru {
            // One list pair for both types: nothing to balance; every page on it is scanned,
            // including anon pages that cannot be swapped (they are activated again).
            ScanBalance::Equal
        } else if no_anon || (sc.cgroup_reclaim && swappiness == 0) {
            ScanBalance::File
        } else if sc.priority == 0 && swappiness > 0 {
            ScanBalance::Equal
        } else if sc.file_is_tiny {
            ScanBalance::Anon
        } else if sc.cache_trim_mode {
            ScanBalance::File
        } else {
            let total_cost = sc.anon_cost + sc.file_cost;
            let anon_cost = total_cost + sc.anon_cost;
            let file_cost = total_cost + sc.file_cost;
            let total = anon_cost + file_cost;
            let ap = swappiness * (total + 1) / (anon_cost + 1);
            let fp = (200 - swappiness) * (total + 1) / (file_cost + 1);
            fraction = [ap, fp];
            denominator = ap + fp;
            ScanBalance::Fract
        };
        (balance, fraction, denominator)
    }

    /// get_scan_count()'s choice of balance in 3.11, from the lruvec's own lists: (balance,
    /// fraction, denominator, force_scan). The swappiness is the reclaim target's
    /// (vmscan_swappiness()); the recent ratios are halved as a floating average.
    fn scan_balance_3_11(
        &mut self,
        memcg: MemcgId,
        sc: &ScanControl,
    ) -> (ScanBalance, [u64; 2], u64, bool) {
        let global = !sc.cgroup_reclaim;
        // force_scan: memcg reclaim scans a small lruvec a little at every priority (kswapd
        // on a zone it found unreclaimable too, which the model's node does not track).
        let force_scan = !global;
        let swappiness = sc
            .proactive_swappiness
            .unwrap_or_else(|| self.memcg_swappiness(sc.target)) as u64;
        let none = [0u64; 2];
        if self.unified_lru {
            return (ScanBalance::Equal, none, 1, force_scan);
        }
        if !sc.may_swap || !self.can_reclaim_anon_pages(memcg) {
            return (ScanBalance::File, none, 1, force_scan);
        }
        if !global && swappiness == 0 {
            return (ScanBalance::File, none, 1, force_scan);
        }
        if sc.priority == 0 && swappiness > 0 {
            return (ScanBalance::Equal, none, 1, force_scan);
        }
        let z = sc.slot;
        let size = self.memcg(memcg).lruvec[z].size;
        let anon = size[lru::INACTIVE_ANON] + size[lru::ACTIVE_ANON];
        let file = size[lru::INACTIVE_FILE] + size[lru::ACTIVE_FILE];
        // The zone's free pages and high watermark: this lruvec's file pages will not bring
        // it back, so swap.
        if global && file + self.frames.free.zone_len(z) <= self.zones.zone[z].high {
            return (ScanBalance::Anon, none, 1, force_scan);
        }
        // Enough inactive page cache: leave the anon working set alone.
        if !self.inactive_list_is_low(memcg, z, true) {
            return (ScanBalance::File, none, 1, force_scan);
        }
        let lv = &mut self.memcgs[memcg as usize].lruvec[z];
        for (t, total) in [(0, anon), (1, file)] {
            if lv.recent_scanned[t] > total / 4 {
                lv.recent_scanned[t] /= 2;
                lv.recent_rotated[t] /= 2;
            }
        }
        let ap = swappiness * (lv.recent_scanned[0] + 1) / (lv.recent_rotated[0] + 1);
        let fp = (200 - swappiness) * (lv.recent_scanned[1] + 1) / (lv.recent_rotated[1] + 1);
        (ScanBalance::Fract, [ap, fp], ap + fp + 1, force_scan)
    }

    /// Whether reclaim runs 3.11's heuristics (`reclaim=3.11`).
    #[inline]
    pub(crate) fn reclaim_3_11(&self) -> bool {
        self.cfg.reclaim == crate::config::ReclaimEra::V3_11
    }

    /// inactive_list_is_low() for shrink_list(), the anon ageing and 3.11's scan balance:
    /// 6.1's inactive_is_low() on hierarchical sizes, or 3.11's on the lruvec's own lists
    /// (file: more active than inactive pages; anon: the ratio by size, none without swap)
    /// of lruvec `slot`.
    pub fn inactive_list_is_low(&self, memcg: MemcgId, slot: usize, file: bool) -> bool {
        if !self.reclaim_3_11() {
            return self.inactive_is_low(memcg, file);
        }
        let size = self.memcg(memcg).lruvec[slot].size;
        if file {
            return size[lru::ACTIVE_FILE] > size[lru::INACTIVE_FILE];
        }
        if self.total_swap_pages == 0 {
            return false;
        }
        let (inactive, active) = (size[lru::INACTIVE_ANON], size[lru::ACTIVE_ANON]);
        let gb = (inactive + active) >> (30 - crate::config::PAGE_SHIFT);
        let ratio = if gb > 0 { int_sqrt(10 * gb) } else { 1 };
        inactive * ratio < active
    }

    /// Whether get_scan_count() scales no list of `memcg` by protection (the target's own
    /// protection is ignored). A protected list is scanned for at least SWAP_CLUSTER_MAX >>
    /// priority pages even when it is empty, and may note that memory.low was skipped.
    #[inline]
    fn scan_count_unprotected(&self, memcg: MemcgId, sc: &ScanControl) -> bool {
        if memcg == sc.target {
            return true;
        }
        let c = self.memory.get(memcg as usize);
        c.emin == 0 && c.elow == 0
    }

    /// shrink_lruvec().
    pub fn shrink_lruvec(&mut self, memcg: MemcgId, sc: &mut ScanControl) {
        let mut s = self.lruvec_scan_begin(memcg, sc);
        // Each batch scans at least one page or ends the loop; the targets bound it.
        for _ in 0..1u64 << 40 {
            if self.lruvec_scan_batch(&mut s, sc) != Some(false) {
                return self.lruvec_scan_end(s, sc);
            }
        }
        unreachable!("shrink_lruvec does not terminate");
    }

    /// shrink_lruvec() up to its loop: get_scan_count()'s targets.
    fn lruvec_scan_begin(&mut self, memcg: MemcgId, sc: &mut ScanControl) -> LruvecScan {
        if self.lru_gen_enabled() {
            return LruvecScan {
                memcg,
                nr: [0; 4],
                targets: [0; 4],
                nr_to_reclaim: sc.nr_to_reclaim,
                scan_adjusted: false,
                reclaimed: 0,
                gen: Some(self.lru_gen_scan_begin(memcg, sc)),
            };
        }
        let nr = self.get_scan_count(memcg, sc);
        let v3_11 = self.cfg.shrink_lruvec == crate::config::ShrinkLruvec::V3_11;
        LruvecScan {
            memcg,
            nr,
            targets: nr,
            nr_to_reclaim: sc.nr_to_reclaim,
            scan_adjusted: !v3_11
                && !sc.cgroup_reclaim
                && !sc.kswapd
                && sc.priority == DEF_PRIORITY,
            reclaimed: 0,
            gen: None,
        }
    }

    /// One pass of shrink_lruvec()'s loop: up to SWAP_CLUSTER_MAX pages of each evictable
    /// list, then the proportional adjustment once enough is reclaimed. Returns whether the
    /// loop is over after this pass, or None when it had ended already (nothing scanned).
    fn lruvec_scan_batch(&mut self, s: &mut LruvecScan, sc: &mut ScanControl) -> Option<bool> {
        if let Some(g) = s.gen.as_mut() {
            return self.lru_gen_scan_batch(s.memcg, g, sc);
        }
        let nr = &mut s.nr;
        if nr[lru::INACTIVE_ANON] == 0 && nr[lru::ACTIVE_FILE] == 0 && nr[lru::INACTIVE_FILE] == 0 {
            return None;
        }
        let v3_11 = self.cfg.shrink_lruvec == crate::config::ShrinkLruvec::V3_11;
        // for_each_evictable_lru: inactive anon, active anon, inactive file, active file.
        #[allow(clippy::needless_range_loop)]
        for l in 0..4 {
            if nr[l] > 0 {
                let n = nr[l].min(SWAP_CLUSTER_MAX);
                nr[l] -= n;
                s.reclaimed += self.shrink_list(l, n, s.memcg, sc);
            }
        }
        let nr = &mut s.nr;
        if sc.throttle.is_some() {
            return Some(true);
        }
        if s.reclaimed < s.nr_to_reclaim || s.scan_adjusted {
            return Some(false);
        }
        if v3_11 && !sc.cgroup_reclaim && !sc.kswapd {
            // 3.11: global direct reclaim takes only what it asked for.
            return Some(true);
        }
        let nr_file = nr[lru::INACTIVE_FILE] + nr[lru::ACTIVE_FILE];
        let nr_anon = nr[lru::INACTIVE_ANON] + nr[lru::ACTIVE_ANON];
        if !v3_11 && (nr_file == 0 || nr_anon == 0) {
            // 3.16+: no attack on the larger list once the smaller is empty. 3.11 goes
            // on with all of it (at priority 0, a memcg's whole list).
            return Some(true);
        }
        let targets = s.targets;
        let (stop, percentage) = if nr_file > nr_anon {
            let t = targets[lru::INACTIVE_ANON] + targets[lru::ACTIVE_ANON] + 1;
            (lru::INACTIVE_ANON, nr_anon * 100 / t)
        } else {
            let t = targets[lru::INACTIVE_FILE] + targets[lru::ACTIVE_FILE] + 1;
            (lru::INACTIVE_FILE, nr_file * 100 / t)
        };
        nr[stop] = 0;
        nr[stop + lru::LRU_ACTIVE] = 0;
        let other = if stop == lru::INACTIVE_FILE {
            lru::INACTIVE_ANON
        } else {
            lru::INACTIVE_FILE
        };
        for l in [other, other + lru::LRU_ACTIVE] {
            let scanned = targets[l] - nr[l];
            let v = targets[l] * (100 - percentage) / 100;
            nr[l] = v - v.min(scanned);
        }
        s.scan_adjusted = true;
        Some(false)
    }

    /// The end of shrink_lruvec(): what it reclaimed, and the anon list's ageing.
    fn lruvec_scan_end(&mut self, s: LruvecScan, sc: &mut ScanControl) {
        if let Some(g) = s.gen {
            return self.lru_gen_scan_end(g, sc);
        }
        sc.nr_reclaimed += s.reclaimed;
        // A group no active-anon page ever reached is never low (no view to load).
        if self.total_swap_pages > 0
            && self.memcg_topo.anon_seen(s.memcg)
            && self.inactive_list_is_low(s.memcg, sc.slot, false)
        {
            self.shrink_active_list(SWAP_CLUSTER_MAX, s.memcg, sc, lru::ACTIVE_ANON);
        }
    }

    fn shrink_list(&mut self, l: usize, n: u64, memcg: MemcgId, sc: &mut ScanControl) -> u64 {
        if lru::is_active(l) && self.reclaim_3_11() {
            // 3.11: an active list is aged only while its inactive list is low.
            if self.inactive_list_is_low(memcg, sc.slot, lru::is_file(l)) {
                self.shrink_active_list(n, memcg, sc, l);
            }
            return 0;
        }
        if lru::is_active(l) {
            let bit = if lru::is_file(l) {
                DEACTIVATE_FILE
            } else {
                DEACTIVATE_ANON
            };
            if sc.may_deactivate & bit != 0 {
                self.shrink_active_list(n, memcg, sc, l);
            } else {
                sc.skipped_deactivate = true;
            }
            return 0;
        }
        self.shrink_inactive_list(n, memcg, sc, l)
    }

    /// isolate_lru_folios(): take folios from the tail of a list until `n` pages are taken,
    /// and update the list's size statistic once for the batch (update_lru_sizes()).
    /// Returns the pages taken.
    fn isolate(
        &mut self,
        memcg: MemcgId,
        slot: usize,
        l: usize,
        n: u64,
        out: &mut Vec<Pfn>,
    ) -> u64 {
        out.clear();
        let taken = self.lru_unlink_tail(memcg, slot, l, n, out);
        self.mod_stat_units(memcg, lru::stat(l), -1, taken);
        taken
    }

    /// folio_referenced() for our single-mapping pages: test and clear the PTE young bit.
    #[inline]
    fn page_referenced(&mut self, pfn: Pfn) -> bool {
        self.folio_mapped(pfn) && self.frames.test_clear(pfn, pf::YOUNG)
    }

    /// folio_mapped(): some page of the folio is mapped (a huge shmem folio's head may not
    /// be where its other pages are; its accessed bit is the head's).
    #[inline]
    pub(crate) fn folio_mapped(&self, pfn: Pfn) -> bool {
        self.frames.test(pfn, pf::MAPPED) || self.shmem_folio_mapcount(pfn) > 0
    }

    /// shrink_active_list().
    pub fn shrink_active_list(&mut self, n: u64, memcg: MemcgId, sc: &mut ScanControl, l: usize) {
        let mut pages = Vec::with_capacity(n as usize);
        let taken = self.isolate(memcg, sc.slot, l, n, &mut pages);
        if taken == 0 {
            return;
        }
        // PGREFILL: the node counts it for global reclaim only, the memcg always.
        if !sc.cgroup_reclaim {
            self.node_events.count(NodeEvent::Pgrefill, taken);
        }
        self.mod_stat(memcg, Stat::Pgrefill, taken as i64);
        self.spend_cpu(pages.len() as u64 * self.cfg.costs.scan_ns);
        let mut nr_deactivate = 0i64;
        let mut nr_rotated = 0u64;
        for &pfn in &pages {
            if self.frames.test(pfn, pf::MLOCKED) {
                continue;
            }
            let nr = self.folio_nr_pages(pfn);
            // Referenced executable file pages get another trip round the active list; anon
            // VM_EXEC pages are not modelled (anon mappings are never executable here).
            if self.page_referenced(pfn) {
                nr_rotated += nr;
                if lru::is_file(l) && self.page_vm_exec(pfn) {
                    continue;
                }
            }
            self.frames.clear(pfn, pf::ACTIVE);
            self.frames.set(pfn, pf::WORKINGSET);
            nr_deactivate += nr as i64;
        }
        if self.reclaim_3_11() {
            // 3.11's reclaim_stat: every page taken was scanned, and every referenced one
            // counts as rotated, kept active or not.
            self.note_lruvec_reclaim_stat(memcg, sc.slot, lru::is_file(l), taken, nr_rotated);
        }
        // Every page goes back, in the order taken, to the list its flags now select.
        self.lru_add_batch(memcg, &pages);
        self.mod_stat(memcg, Stat::Pgdeactivate, nr_deactivate);
    }

    /// shrink_inactive_list()'s PGSCAN_* (pages taken) or PGSTEAL_* (pages reclaimed)
    /// events: the kswapd/direct items in the memcg for every reclaim, in the node (what
    /// /proc/vmstat shows) for global reclaim only; the node's anon/file items for every
    /// reclaim.
    pub(crate) fn count_reclaim_events(
        &mut self,
        sc: &ScanControl,
        memcg: MemcgId,
        file: bool,
        n: u64,
        steal: bool,
    ) {
        let (item, node_item) = match (steal, sc.kswapd) {
            (false, true) => (Stat::PgscanKswapd, NodeEvent::PgscanKswapd),
            (false, false) => (Stat::PgscanDirect, NodeEvent::PgscanDirect),
            (true, true) => (Stat::PgstealKswapd, NodeEvent::PgstealKswapd),
            (true, false) => (Stat::PgstealDirect, NodeEvent::PgstealDirect),
        };
        let split = match (steal, file) {
            (false, false) => NodeEvent::PgscanAnon,
            (false, true) => NodeEvent::PgscanFile,
            (true, false) => NodeEvent::PgstealAnon,
            (true, true) => NodeEvent::PgstealFile,
        };
        if !sc.cgroup_reclaim {
            self.node_events.count(node_item, n);
        }
        self.mod_stat(memcg, item, n as i64);
        self.node_events.count(split, n);
    }

    /// shrink_inactive_list() with shrink_folio_list()'s per-page decisions.
    pub(crate) fn shrink_inactive_list(
        &mut self,
        n: u64,
        memcg: MemcgId,
        sc: &mut ScanControl,
        l: usize,
    ) -> u64 {
        // Swap writes that ended while this reclaimer ran (page_io.rs).
        self.swap_io_poll();
        let file = lru::is_file(l);
        if self.too_many_isolated(file, sc) {
            // The first time, wait a bit for the other reclaimers (the sleep ends this
            // reclaim; the task's next one goes on); after a sleep, give up on this list.
            let pid = self.current_pid();
            let stalled = pid.is_none_or(|p| self.task(p).isolated_stalled) || !sc.may_block;
            if stalled {
                self.reclaim_wait.isolated_skips += 1;
                return 0;
            }
            if let Some(p) = pid {
                self.task_mut(p).isolated_stalled = true;
            }
            self.reclaim_wait.isolated_throttles += 1;
            self.reclaim_throttle(sc, Wait::Isolated);
            return 0;
        }
        let mut pages = Vec::with_capacity(n as usize);
        let taken = self.isolate(memcg, sc.slot, l, n, &mut pages);
        if taken == 0 {
            return 0;
        }
        // Host cache hints for the batch's pages' page-cache slots, all at once, so that
        // freeing them does not wait for one miss after another (no effect on the model).
        if file {
            for &pfn in &pages {
                self.prefetch_mapping_slot(pfn);
            }
        }
        let isolated_at = self.now();
        sc.nr_taken += taken;
        if file {
            sc.nr_file_taken += taken;
        }
        self.count_reclaim_events(sc, memcg, file, taken, false);
        sc.nr_scanned += taken;
        self.spend_cpu(pages.len() as u64 * self.cfg.costs.scan_ns);
        let (keep_before, writeback_before) = (sc.nr_ref_keep, sc.nr_writeback);
        let unqueued_before = sc.nr_unqueued_dirty;
        let BatchOut {
            reclaimed: nr_reclaimed,
            putback,
            nr_activate,
            nr_pageout,
        } = self.shrink_folio_batch(pages, memcg, sc);
        if self.reclaim_3_11() {
            // 3.11's reclaim_stat: the batch was scanned; putback_inactive_pages() counts
            // the pages it activates as rotated.
            self.note_lruvec_reclaim_stat(memcg, sc.slot, file, taken, nr_activate as u64);
        }
        self.lru_add_batch(memcg, &putback);
        if nr_activate > 0 {
            self.mod_stat(memcg, Stat::Pgactivate, nr_activate);
        }
        self.count_reclaim_events(sc, memcg, file, nr_reclaimed, true);
        self.lru_note_cost(memcg, file, nr_pageout, 0);
        let kind = if sc.kswapd {
            0
        } else if sc.cgroup_reclaim {
            2
        } else {
            1
        };
        let row =
            &mut self.shrink_inactive_hist.rows[kind][sc.priority.clamp(0, DEF_PRIORITY) as usize];
        row.calls += 1;
        row.scanned += taken;
        row.reclaimed += nr_reclaimed;
        row.ref_keep += sc.nr_ref_keep - keep_before;
        row.activate += nr_activate as u64;
        let wb = sc.nr_writeback - writeback_before;
        row.writeback += wb;
        if self.reclaim_3_11() {
            // 3.11 flags the zone ZONE_WRITEBACK from any reclaim's batch, soft-limit and
            // memcg reclaim included, when its pages under writeback reach the share its
            // priority allows (all of them at DEF_PRIORITY, any at priority 6 and below).
            if wb > 0 && wb >= taken >> (DEF_PRIORITY - sc.priority.clamp(0, DEF_PRIORITY)) {
                self.reclaim_wait.zone_writeback[sc.slot] = true;
            }
        }
        self.note_isolated(isolated_at, taken, file);
        // Every page taken was dirty and not queued for writeback: the flushers are behind.
        // Legacy memcg has no dirty throttling of its own; its reclaim sleeps here.
        if sc.nr_unqueued_dirty - unqueued_before == taken {
            self.wakeup_flusher();
            if self.reclaim_3_11() {
                // 3.11: only global reclaim stalls here (congestion_wait(), HZ/10); memcg
                // reclaim stalls on the pages themselves.
                if !sc.cgroup_reclaim {
                    self.reclaim_throttle(sc, Wait::Writeback);
                }
            } else if !self.writeback_throttling_sane(sc) {
                self.reclaim_throttle(sc, Wait::Writeback);
            }
        }
        nr_reclaimed
    }

    /// shrink_folio_list() of an isolated batch: each page's decision (shrink_folio()), the
    /// activations, the TLB flush, the batch's swap writes and the frees. Returns what was
    /// reclaimed and the pages to put back, in order.
    pub(crate) fn shrink_folio_batch(
        &mut self,
        mut pages: Vec<Pfn>,
        memcg: MemcgId,
        sc: &mut ScanControl,
    ) -> BatchOut {
        let mut nr_reclaimed = 0u64;
        let mut pageout = Vec::new();
        let mut nr_activate = 0i64;
        let stored_before = sc.nr_zswap_stored;
        // The pages that stay go back after the batch, in order (move_folios_to_lru()).
        let mut putback = Vec::with_capacity(pages.len());
        // The pages freed, uncharged and given back to the allocator after the batch.
        let mut free_folios = Vec::with_capacity(pages.len());
        // A huge folio split on the way puts its tails next in line (split_folio_to_list()
        // adds them where shrink_folio_list() takes its next folio).
        let mut split = Vec::new();
        let mut i = 0;
        while i < pages.len() {
            let pfn = pages[i];
            i += 1;
            if sc.throttle.is_some() {
                // The task sleeps on a page's writeback: the rest go back untouched.
                putback.push(pfn);
                continue;
            }
            let v = self.shrink_folio(pfn, memcg, sc, &mut pageout, &mut free_folios, &mut split);
            if !split.is_empty() {
                pages.splice(i..i, split.drain(..));
            }
            match v {
                Verdict::Freed => nr_reclaimed += 1,
                Verdict::Activate => {
                    self.activate_free_swap(pfn);
                    if !self.frames.test(pfn, pf::MLOCKED) {
                        let nr = self.folio_nr_pages(pfn);
                        self.frames.set(pfn, pf::ACTIVE);
                        nr_activate += nr as i64;
                        self.workingset_age_nonresident(memcg, nr);
                    }
                    putback.push(pfn);
                }
                Verdict::Keep => putback.push(pfn),
            }
        }
        if std::mem::take(&mut sc.tlb_flush_remote) {
            // try_to_unmap_flush_dirty() before the writes, or try_to_unmap_flush() at the
            // batch's end: arch_tlbbatch_flush() interrupts the CPUs that run the pages'
            // mm and waits for them (the local CPU and lazy ones flush without a wait).
            self.spend_cpu(self.cfg.costs.ipi_ns);
            self.reclaim_wait.tlb_flush_ipis += 1;
        }
        // stat.nr_pageout: the pages pageout() wrote, zswap's stores among them.
        let nr_pageout = pageout.len() as u64 + (sc.nr_zswap_stored - stored_before);
        self.spend_cpu(nr_pageout * self.cfg.costs.pageout_ns);
        if !pageout.is_empty() {
            if self.swap_synchronous_io() {
                // The writes ended inside pageout(): the reclaimer's CPU did the copy.
                let runs = crate::blkdev::page_runs(
                    pageout
                        .iter()
                        .map(|&(_, s)| crate::blkdev::swap_pos(s))
                        .collect(),
                );
                let ns = self.swap_dev().cpu_copy(&runs, true);
                self.spend_cpu(ns);
            } else {
                // The bios of the batch wait in the reclaimer's plug (blk_start_plug() in
                // shrink_lruvec()), merged, until the loop is done with its pages.
                self.swap_submit(pageout);
            }
        }
        self.spend_cpu(nr_reclaimed * self.cfg.costs.reclaim_ns);
        // The end of shrink_folio_list(): mem_cgroup_uncharge_list(), then
        // free_unref_page_list(), before move_folios_to_lru() puts the rest back. The
        // batch's pages stay isolated over its CPU time: a swap write that ends before the
        // putback finds its page off the LRU, and folio_end_writeback() clears PG_reclaim
        // without rotating it (folio_rotate_reclaimable() needs the LRU flag): the page goes
        // back to the head of the inactive list, clean, in the swap cache.
        self.free_page_list(&free_folios);
        self.swap_io_poll();
        BatchOut {
            reclaimed: nr_reclaimed,
            putback,
            nr_activate,
            nr_pageout,
        }
    }

    /// Pages a batch kept off the LRU from `start` to now (NR_ISOLATED_*).
    fn note_isolated(&mut self, start: u64, pages: u64, file: bool) {
        let end = self.now();
        if end > start && pages > 0 {
            let clock = self.sched.clock;
            let cpu = self.current_cpu();
            let all = &mut self.reclaim_wait.isolated;
            if all.len() <= cpu {
                all.resize_with(cpu + 1, Default::default);
            }
            let iso = &mut all[cpu];
            while iso.front().is_some_and(|&(_, e, _, _)| e <= clock) {
                iso.pop_front();
            }
            // Bound: what survives ends after the clock, within the CPU time one context
            // can run ahead of it.
            debug_assert!(iso.len() < 1 << 20, "isolation windows pile up");
            let w = (start, end, pages as u32, file);
            if iso.back().is_none_or(|&(s, _, _, _)| s <= start) {
                iso.push_back(w);
            } else {
                // A control-file write from outside runs on CPU 0 beside the CPU's thread,
                // at the clock, behind the thread's windows: kept in order of start.
                let i = iso.partition_point(|&(s, _, _, _)| s <= start);
                iso.insert(i, w);
            }
        }
    }

    /// NR_ISOLATED_FILE or NR_ISOLATED_ANON at the current context's time.
    pub fn nr_isolated(&self, file: bool) -> u64 {
        let now = self.now();
        let mut n = 0;
        for iso in &self.reclaim_wait.isolated {
            // The one window of this CPU that may cover `now`: the last to start by then.
            let i = iso.partition_point(|&(s, _, _, _)| s <= now);
            if let Some(&(_, e, pages, f)) = i.checked_sub(1).and_then(|i| iso.get(i)) {
                if f == file && now < e {
                    n += u64::from(pages);
                }
            }
        }
        n
    }

    /// too_many_isolated(): more pages of this kind isolated by reclaimers than an eighth of
    /// the node's inactive list (the callers are all __GFP_IO | __GFP_FS). kswapd and cgroup
    /// v1 limit reclaim never wait here; a check that finds few isolated wakes those that
    /// wait.
    fn too_many_isolated(&mut self, file: bool, sc: &ScanControl) -> bool {
        if sc.kswapd || !self.writeback_throttling_sane(sc) {
            return false;
        }
        if self.reclaim_wait.isolated.iter().all(|w| w.is_empty()) {
            return false;
        }
        let inactive = self.global_stat(if file {
            Stat::InactiveFile
        } else {
            Stat::InactiveAnon
        }) >> 3;
        let too_many = self.nr_isolated(file) > inactive;
        if !too_many {
            self.wake_throttled(|w| w == Wait::Isolated);
        }
        too_many
    }

    /// folio_check_references() + the rest of shrink_folio_list() for one isolated page. A
    /// page it frees goes on `free_folios` with the memcg whose charge it still holds.
    fn shrink_folio(
        &mut self,
        pfn: Pfn,
        memcg: MemcgId,
        sc: &mut ScanControl,
        pageout: &mut Vec<(Pfn, crate::swapfile::SwapSlot)>,
        free_folios: &mut FreeFolios,
        split: &mut Vec<Pfn>,
    ) -> Verdict {
        let flags = self.frames.flags(pfn);
        if flags & pf::MLOCKED != 0 {
            // Not evictable: culled to the unevictable list.
            return Verdict::Activate;
        }
        let anon = flags & pf::SWAPBACKED != 0;
        if !sc.may_unmap && self.folio_mapped(pfn) {
            return Verdict::Keep;
        }
        // folio_update_gen() tried to promote this page while it was isolated?
        if self.lru_gen_enabled() && flags & pf::REFERENCED != 0 && self.folio_mapped(pfn) {
            return Verdict::Keep;
        }
        // folio_check_dirty_writeback(): file pages only; reclaim writes anon pages itself and
        // does not stall on them.
        let dirty = !anon && flags & pf::DIRTY != 0;
        let under_writeback = flags & pf::WRITEBACK != 0;
        let writeback = !anon && under_writeback;
        let marked = flags & pf::RECLAIM != 0;
        if dirty || writeback {
            sc.nr_dirty += 1;
        }
        if dirty && !writeback {
            sc.nr_unqueued_dirty += 1;
        }
        // Marked for immediate reclaim and met again still under writeback: the pages
        // cycle through the LRU faster than they are written.
        if writeback && marked {
            sc.nr_congested += 1;
        }
        // 6.1 moves a page it cannot reclaim until its write ends to the active list, out of
        // the way (4.11's "move dirty pages out of the way until they're flushed"); 3.11
        // keeps it at the head of the inactive list.
        let busy = if self.reclaim_3_11() {
            Verdict::Keep
        } else {
            Verdict::Activate
        };
        if under_writeback {
            let flagged = if self.reclaim_3_11() {
                self.reclaim_wait.zone_writeback[sc.slot]
            } else {
                self.reclaim_wait.pgdat_writeback
            };
            if sc.kswapd && marked && flagged {
                // Case 1: kswapd sees pages cycling under writeback.
                sc.nr_immediate += 1;
                return busy;
            }
            if self.writeback_throttling_sane(sc) || !marked || !sc.may_block {
                // Case 2: mark it, let it finish, and reclaim it when it comes round.
                self.frames.set(pfn, pf::RECLAIM);
                sc.nr_writeback += 1;
                return busy;
            }
            // Case 3: legacy memcg limit reclaim waits for this page's writeback, then
            // retries it (the model retries the allocation; the page went back at the head
            // and its end of writeback rotates it to the tail).
            self.reclaim_throttle(sc, Wait::PageWriteback(pfn));
            return Verdict::Keep;
        }
        // folio_check_references()
        let referenced_ptes = if self.lru_gen_enabled() {
            let can_swap = sc.may_swap && self.total_swap_pages > 0;
            self.lru_gen_page_referenced(pfn, can_swap)
        } else {
            self.page_referenced(pfn)
        };
        let referenced_folio = self.frames.test_clear(pfn, pf::REFERENCED);
        let mut reclaim_clean = false;
        if referenced_ptes {
            if anon && self.reclaim_3_11() {
                // 3.11's page_check_references(): a referenced anon page stays active.
                return Verdict::Activate;
            }
            self.frames.set(pfn, pf::REFERENCED);
            if referenced_folio {
                return Verdict::Activate;
            }
            // Executable file pages are activated after their first use.
            if !anon && self.page_vm_exec(pfn) {
                return Verdict::Activate;
            }
            sc.nr_ref_keep += self.folio_nr_pages(pfn);
            return Verdict::Keep;
        }
        if referenced_folio && !anon {
            reclaim_clean = true;
        }
        if anon {
            return self.shrink_anon_folio(pfn, flags, sc, pageout, free_folios, split);
        }
        // File page: try_to_unmap() takes it out of the mappings first.
        if flags & pf::MAPPED != 0 {
            self.file_unmap_page(pfn, false);
        }
        if flags & pf::DIRTY != 0 {
            if reclaim_clean {
                return Verdict::Keep;
            }
            // Reclaim does not write file pages (not even kswapd, here); mark the page for
            // immediate reclaim once the flusher has written it (NR_VMSCAN_IMMEDIATE).
            self.frames.set(pfn, pf::RECLAIM);
            return busy;
        }
        let _ = memcg;
        let shadow = self.workingset_eviction(pfn, sc.target);
        let owner = self.remove_mapping_file(pfn, shadow);
        free_folios.push((pfn, Some(owner)));
        Verdict::Freed
    }

    /// shrink_folio_list() for an anon page past its reference check: add_to_swap() (a slot,
    /// its swap charge, the swap cache), try_to_unmap() (the PTE takes the swap entry),
    /// pageout() of a dirty page (swap_writepage(): the write starts and the page is kept
    /// until it ends, or on a synchronous device ends at once) and __remove_mapping() of the
    /// clean swap-cache page left: its charge goes (mem_cgroup_swapout()), its slot stays
    /// with the PTE's swap entry.
    fn shrink_anon_folio(
        &mut self,
        pfn: Pfn,
        flags: u16,
        sc: &mut ScanControl,
        pageout: &mut Vec<(Pfn, crate::swapfile::SwapSlot)>,
        free_folios: &mut FreeFolios,
        split: &mut Vec<Pfn>,
    ) -> Verdict {
        let owner = self.frames.memcg(pfn);
        // What the page holds, for zswap: a tmpfs page no one maps was written by write(),
        // which the workloads do with zeros (dd); other pages hold what their mapping's
        // workload writes (`--data`).
        let in_shmem_file = self.page_in_shmem_file(pfn);
        let data = match (in_shmem_file, flags & pf::MAPPED != 0) {
            (true, false) => crate::zswap::PageData::Zero,
            (false, true) => {
                let vma = self.frames.meta[pfn as usize].map.mapping;
                self.vmas.v[vma as usize].data
            }
            _ => crate::zswap::PageData::Byte,
        };
        let slot = match self.swapcache_slot(pfn) {
            Some(slot) => slot,
            None if in_shmem_file => {
                // A huge shmem folio is split first (6.1 splits it even without swap), its
                // tails taken next; then the page is unmapped, dropped if clean, or moved to
                // the swap cache by shmem_writepage() (shmem.rs).
                if self.folio_nr_pages(pfn) > 1 {
                    *split = self.shmem_split_folio(pfn, false);
                }
                match self.shmem_reclaim_page(pfn, sc.may_swap) {
                    Ok(slot) => slot,
                    Err(Some(memcg)) => {
                        free_folios.push((pfn, Some(memcg)));
                        return Verdict::Freed;
                    }
                    Err(None) => return Verdict::Activate,
                }
            }
            None => {
                if !sc.may_swap {
                    // Only reachable with a unified LRU, where anon pages are scanned
                    // regardless.
                    return Verdict::Activate;
                }
                if self.folio_deferred(pfn) {
                    // A partly mapped folio is split at once: its unmapped pages are freed
                    // without I/O; an unmapped head goes with them.
                    let (tails, head_mapped) = self.split_deferred_folio(pfn, false);
                    *split = tails;
                    if !head_mapped {
                        free_folios.push((pfn, Some(owner)));
                        return Verdict::Freed;
                    }
                } else if self.folio_nr_pages(pfn) > 1 {
                    // add_to_swap() of the whole folio gets no swap cluster (whole
                    // swap-out is not modelled; 6.1 on the oracle's swap disk never got
                    // one either): __mem_cgroup_try_charge_swap() of the empty entry counts
                    // a swap `fail` event; the folio is split and its pages swapped
                    // (THP_SWPOUT_FALLBACK).
                    if !self.is_v1() {
                        self.memcg_memory_event(owner, crate::memcontrol::MemcgEvent::SwapFail);
                    }
                    *split = self.split_huge_page_for_reclaim(pfn);
                    self.thp.events.swpout_fallback += 1;
                }
                let Some(slot) = self.add_to_swap_cache(pfn, owner) else {
                    return Verdict::Activate;
                };
                if flags & pf::MAPPED != 0 {
                    self.swap.set_mapped(pfn, Some(slot));
                }
                slot
            }
        };
        if self.frames.test(pfn, pf::MAPPED) {
            // try_to_unmap() with TTU_BATCH_FLUSH: the TLB flush waits for the batch's end,
            // and reaches the CPUs in the mm's cpumask.
            let task = self.vmas.v[self.frames.meta[pfn as usize].map.mapping as usize].owner;
            if !sc.tlb_flush_remote && self.task_running_elsewhere(task) {
                sc.tlb_flush_remote = true;
            }
            self.unmap_anon_to_swap(pfn, slot);
        }
        if self.frames.test(pfn, pf::DIRTY) && self.zswap_store(slot, owner, data) {
            // swap_writepage(): frontswap_store() took the page; its writeback starts and
            // ends at once, with no I/O, and pageout() counts it written.
            self.frames.clear(pfn, pf::DIRTY);
            sc.nr_zswap_stored += 1;
        }
        if self.frames.test(pfn, pf::DIRTY) {
            // pageout(): swap_writepage() cleans the page and starts its write, with
            // PG_reclaim so that its end rotates the page to the tail.
            self.frames.clear(pfn, pf::DIRTY);
            self.mod_stat(owner, Stat::Pswpout, 1);
            self.swap.set_written(slot, true);
            pageout.push((pfn, slot));
            self.swap_start_writeback(pfn);
            if !self.swap_synchronous_io() {
                self.frames.set(pfn, pf::RECLAIM);
                return Verdict::Keep;
            }
            self.swap_end_writeback(pfn);
        }
        // __remove_mapping() of a clean swap-cache page: its data is in its slot.
        let shadow = self.workingset_eviction(pfn, sc.target);
        self.swap.set_shadow(slot, shadow);
        if self.is_v1() && self.swap.owner(slot) == 0 {
            // mem_cgroup_swapout() on v1: the entry is recorded for the page's memcg, and
            // the page's memsw charge stays with it.
            let charged = self.mem_cgroup_try_charge_swap(owner);
            debug_assert!(charged, "v1 swap charges cannot fail");
            self.swap.set_owner(slot, owner);
        }
        self.mem_cgroup_swapout(owner);
        self.swapcache_del(pfn, slot);
        free_folios.push((pfn, None));
        Verdict::Freed
    }

    // ---------------------------------------------------------------- kswapd

    /// wakeup_kswapd(): schedule kswapd unless it is awake or the node is hopeless.
    pub fn wakeup_kswapd(&mut self) {
        if self.kswapd.awake || self.kswapd.failures >= crate::memcontrol::MAX_RECLAIM_RETRIES {
            return;
        }
        self.kswapd.awake = true;
        self.kswapd.priority = DEF_PRIORITY;
        self.kswapd.nr_reclaimed = 0;
        self.kswapd.lru_gen_need_aging = false;
        self.kswapd.gen += 1;
        let now = self.now();
        self.sched
            .push(now, crate::sched::Event::Kswapd(self.kswapd.gen));
    }

    /// pgdat_balanced() for order 0: any one zone above its high watermark plus its lowmem
    /// reserve balances the node.
    fn pgdat_balanced(&self) -> bool {
        if self.reclaim_3_11() {
            // 3.11's pgdat_balanced() for order 0: every zone above its high watermark (each
            // zone its own classzone, so without a lowmem reserve).
            return (0..NR_ZONES).all(|z| self.zone_balanced_3_11(z, false, z));
        }
        self.zones.zone.iter().enumerate().any(|(z, zone)| {
            zone.managed > 0 && self.frames.free.zone_len(z) > zone.high + zone.lowmem_reserve
        })
    }

    /// 3.11's zone_balanced(zone, 0, gap, classzone) (an empty zone is balanced): free
    /// pages above the high watermark, plus, with `gap`, kswapd_shrink_zone()'s balance gap
    /// (the low watermark or 1% of the zone, whichever is smaller), plus the zone's lowmem
    /// reserve against allocations whose highest zone is `classzone`.
    fn zone_balanced_3_11(&self, z: usize, gap: bool, classzone: usize) -> bool {
        let zone = &self.zones.zone[z];
        if zone.managed == 0 {
            return true;
        }
        let g = if gap {
            zone.low
                .min(zone.managed.div_ceil(KSWAPD_ZONE_BALANCE_GAP_RATIO))
        } else {
            0
        };
        let reserve = if classzone > z {
            self.zones.protection(z)[classzone]
        } else {
            0
        };
        self.frames.free.zone_len(z) > zone.high + g + reserve
    }

    /// clear_pgdat_congested(): the node is balanced again.
    fn clear_pgdat_congested(&mut self) {
        self.memcg_mut(ROOT_MEMCG).lruvec[NID0].congested = false;
        self.reclaim_wait.pgdat_writeback = false;
    }

    /// One run of kswapd: one batch of its current balance_pgdat() priority step (a pass of
    /// shrink_lruvec()'s loop, SWAP_CLUSTER_MAX pages of each list, after which the kernel's
    /// kswapd may be rescheduled in cond_resched()), or the start of a step. Returns how long
    /// kswapd sleeps before its next run (0 between batches; reclaim_throttle() at the end of
    /// a step), or None when it goes back to sleep.
    pub fn kswapd_step(&mut self) -> Option<u64> {
        let mut st = match self.kswapd.scan.take() {
            Some(st) => st,
            None => match self.kswapd_step_begin() {
                Ok(st) => st,
                Err(sleep) => return sleep,
            },
        };
        // Where this run's share of the current soft pass's time starts.
        let mut seg_start = self.now();
        // Each round does at most one scanning batch, or moves to the next memcg or pass;
        // the walk's groups and the three passes bound the rounds.
        for _ in 0..3 * (st.list.len() + self.memcgs.len()) + 8 {
            if let Some(mut lv) = st.lruvec.take() {
                if !self.memcg_alive(lv.memcg) {
                    // The group went while kswapd was away from it.
                    continue;
                }
                let batch = self.lruvec_scan_batch(&mut lv, &mut st.sc);
                let (done, scanned) = (batch != Some(false), batch.is_some());
                if done {
                    let memcg = lv.memcg;
                    self.lruvec_scan_end(lv, &mut st.sc);
                    self.memcg_shrink_slab(memcg, &mut st.sc);
                    if st.sc.throttle.is_some() {
                        st.pos = st.list.len();
                    }
                } else {
                    st.lruvec = Some(lv);
                }
                if scanned {
                    // cond_resched(): back in the run queue.
                    if matches!(st.pass, NodePass::Soft { .. }) {
                        st.soft_ns += self.now() - seg_start;
                    }
                    self.kswapd.scan = Some(st);
                    return Some(0);
                }
                continue;
            }
            if st.pos < st.list.len() {
                let memcg = st.list[st.pos];
                st.pos += 1;
                if !self.memcg_reclaim_noop(memcg)
                    && self.memcg_alive(memcg)
                    && self.memcg_reclaim_check(memcg, &mut st.sc)
                {
                    st.lruvec = Some(self.lruvec_scan_begin(memcg, &mut st.sc));
                }
                continue;
            }
            // The pass's walk is done.
            if let NodePass::Soft { first } = st.pass {
                st.soft_ns += self.now() - seg_start;
                // Other reclaimers walked while kswapd was off its CPU: the pass counts its
                // own walk.
                let (mark, walked) = (st.soft_mark, st.soft_walked);
                let (groups, ns) = (st.soft_groups, st.soft_ns);
                self.soft_pass_account(mark, walked, &st.sc, groups, ns);
                if first && st.soft_groups == 0 && self.cfg.softlimit == SoftLimitPolicy::Rework {
                    self.kswapd_pass_start(&mut st, NodePass::Soft { first: false });
                    seg_start = self.now();
                    continue;
                }
                if st.sc.nr_scanned == st.soft_scanned_before {
                    self.soft_stats.fallbacks += 1;
                    self.kswapd_pass_start(&mut st, NodePass::All);
                    seg_start = self.now();
                    continue;
                }
            }
            if self.reclaim_3_11() {
                return self.kswapd_zone_end_3_11(*st);
            }
            return self.kswapd_step_end(*st);
        }
        unreachable!("kswapd's shrink_node does not end");
    }

    /// Start a pass of kswapd's shrink_node(): walk the groups it visits.
    fn kswapd_pass_start(&mut self, st: &mut KswapdScan, pass: NodePass) {
        st.pass = pass;
        let soft = matches!(pass, NodePass::Soft { .. });
        let (steps, start) = (self.soft_stats.walk_steps, self.now());
        st.list = self.shrink_node_walk(&st.sc, soft);
        if soft {
            // The pass's time starts with its walk's.
            st.soft_mark = (st.sc.nr_scanned, st.sc.nr_reclaimed);
            st.soft_walked = self.soft_stats.walk_steps - steps;
            st.soft_ns = self.now() - start;
        }
        st.soft_groups = st.list.len();
        st.pos = 0;
        st.lruvec = None;
    }

    /// The start of a balance_pgdat() priority step: the node's balance, ageing, soft-limit
    /// tree reclaim, and shrink_node()'s start (under 3.11's rules, the next zone's, in
    /// kswapd_zones_3_11()). Err(None) when the node is balanced; Err(Some(ns)) when the
    /// step, or under 3.11's rules a zone's part of it, ends without a pass to run and
    /// kswapd sleeps for ns.
    fn kswapd_step_begin(&mut self) -> Result<Box<KswapdScan>, Option<u64>> {
        if self.reclaim_3_11() {
            return self.kswapd_zones_3_11();
        }
        if self.pgdat_balanced() {
            self.clear_pgdat_congested();
            self.kswapd.awake = false;
            return Err(None);
        }
        let mut sc = ScanControl::new(ROOT_MEMCG, 0, false);
        sc.kswapd = true;
        sc.priority = self.kswapd.priority;
        // kswapd_age_node()
        if self.lru_gen_enabled() {
            sc.last_reclaimed = sc.nr_reclaimed;
            self.lru_gen_age_node(&sc);
        } else if self.total_swap_pages > 0 {
            let groups = self.anon_ageing_groups();
            self.age_active_anon(&groups, &mut sc);
        }
        // kswapd_shrink_node(): each zone's high watermark, at least a batch per zone.
        sc.nr_to_reclaim = self
            .zones
            .zone
            .iter()
            .filter(|z| z.managed > 0)
            .map(|z| z.high.max(SWAP_CLUSTER_MAX))
            .sum();
        sc.nr_scanned = 0;
        let mut soft_wait = None;
        if self.cfg.softlimit == SoftLimitPolicy::Tree {
            // balance_pgdat(): soft-limit reclaim before kswapd_shrink_node(); what it
            // scanned does not count toward raising the priority. It runs whole, in the
            // step's first run.
            // A sleep it asks for (reclaim_throttle(), or folio_wait_writeback() on a page
            // it met again) comes after kswapd_shrink_node(): the kernel sleeps first and
            // then goes on; the model's kswapd step does the same work, then sleeps.
            let (reclaimed, _, wait) = self.mem_cgroup_soft_limit_reclaim(true, true, NID0);
            sc.nr_reclaimed += reclaimed;
            soft_wait = wait;
        }
        Ok(self.kswapd_shrink_begin(sc, soft_wait))
    }

    /// shrink_node()'s start for kswapd (3.11: shrink_zone()'s, for zone `sc.slot`): the
    /// pass it begins with and that pass's walk. `soft_wait` is the sleep soft-limit reclaim
    /// asked for, taken at the step's end.
    fn kswapd_shrink_begin(
        &mut self,
        mut sc: ScanControl,
        soft_wait: Option<Wait>,
    ) -> Box<KswapdScan> {
        let before = self.shrink_node_begin(&mut sc);
        let pass = if self.should_soft_reclaim(&sc) {
            NodePass::Soft { first: true }
        } else {
            NodePass::All
        };
        let mut st = Box::new(KswapdScan {
            soft_scanned_before: sc.nr_scanned,
            sc,
            before,
            soft_wait,
            pass,
            soft_mark: (0, 0),
            soft_walked: 0,
            soft_groups: 0,
            soft_ns: 0,
            list: Vec::new(),
            pos: 0,
            lruvec: None,
        });
        self.kswapd_pass_start(&mut st, pass);
        st
    }

    /// The end of a priority step: shrink_node()'s end, the priority, and the sleep.
    fn kswapd_step_end(&mut self, st: KswapdScan) -> Option<u64> {
        let mut sc = st.sc;
        self.shrink_node_end(&mut sc, st.before);
        if sc.throttle.is_none() {
            sc.throttle = st.soft_wait;
        }
        let raise_priority = sc.nr_scanned < sc.nr_to_reclaim;
        self.kswapd.nr_reclaimed += sc.nr_reclaimed;
        if raise_priority || sc.nr_reclaimed == 0 {
            self.kswapd.priority -= 1;
        }
        self.snapshot_refaults(ROOT_MEMCG);
        let sleep = self.kswapd_sleep_for(sc.throttle);
        // balance_pgdat() ends without balancing the node when the priority runs out.
        if !self.kswapd_priority_check() {
            return None;
        }
        Some(sleep)
    }

    /// The start or the continuation of a 3.11 balance_pgdat() priority step: the next
    /// zone's soft-limit reclaim and, unless kswapd_shrink_zone() finds the zone balanced,
    /// the start of its shrink_zone() pass. Err as for kswapd_step_begin().
    fn kswapd_zones_3_11(&mut self) -> Result<Box<KswapdScan>, Option<u64>> {
        let mut step = match self.kswapd.zone_step.take() {
            Some(step) => step,
            None => {
                if self.pgdat_balanced() {
                    self.clear_pgdat_congested();
                    self.kswapd.awake = false;
                    return Err(None);
                }
                match self.kswapd_age_zones_3_11() {
                    Some(end_zone) => ZoneStep {
                        end_zone,
                        zone: 0,
                        soft_done: false,
                        raise_priority: true,
                        nr_reclaimed: 0,
                    },
                    None => {
                        self.clear_pgdat_congested();
                        self.kswapd.awake = false;
                        return Err(None);
                    }
                }
            }
        };
        while step.zone <= step.end_zone {
            let z = step.zone;
            if self.zones.zone[z].managed == 0 {
                step.zone += 1;
                continue;
            }
            if !step.soft_done && self.cfg.softlimit == SoftLimitPolicy::Tree {
                // Soft-limit reclaim of this zone; after a sleep on a page's writeback, the
                // same rounds go on.
                let resumed = match self.kswapd.soft_resume.take() {
                    Some(st) => self.soft_limit_resume(st, true),
                    None => None,
                };
                let (reclaimed, wait) = match resumed {
                    Some(r) => r,
                    None => {
                        let (reclaimed, _, wait) =
                            self.mem_cgroup_soft_limit_reclaim(true, true, z);
                        (reclaimed, wait)
                    }
                };
                self.kswapd.soft_resume = self.soft_interrupted.take();
                step.nr_reclaimed += reclaimed;
                if wait.is_some() {
                    self.kswapd.zone_step = Some(step);
                    return Err(Some(self.kswapd_sleep_for(wait)));
                }
            }
            step.soft_done = false;
            step.zone += 1;
            // kswapd_shrink_zone(): a zone balanced with the gap, against allocations
            // whose highest zone is end_zone, is left alone and keeps the priority.
            if self.zone_balanced_3_11(z, true, step.end_zone) {
                step.raise_priority = false;
                continue;
            }
            let mut sc = ScanControl::new(
                ROOT_MEMCG,
                self.zones.zone[z].high.max(SWAP_CLUSTER_MAX),
                false,
            );
            sc.kswapd = true;
            sc.priority = self.kswapd.priority;
            sc.slot = z;
            self.kswapd.zone_step = Some(step);
            return Ok(self.kswapd_shrink_begin(sc, None));
        }
        // The step is over: a lower priority unless some zone scanned its share and
        // something came back.
        self.kswapd.nr_reclaimed += step.nr_reclaimed;
        self.snapshot_refaults(ROOT_MEMCG);
        if step.raise_priority || step.nr_reclaimed == 0 {
            self.kswapd.priority -= 1;
        }
        if !self.kswapd_priority_check() {
            return Err(None);
        }
        Err(Some(0))
    }

    /// 3.11's balance_pgdat() search for the highest zone below its high watermark, from the
    /// top, with age_active_anon() of each zone it passes. None: every zone is balanced.
    fn kswapd_age_zones_3_11(&mut self) -> Option<usize> {
        let mut sc = ScanControl::new(ROOT_MEMCG, 0, false);
        sc.kswapd = true;
        sc.priority = self.kswapd.priority;
        // Ageing changes no group's mark, so one walk serves every zone.
        let groups = if self.total_swap_pages > 0 {
            self.anon_ageing_groups()
        } else {
            Vec::new()
        };
        for z in (0..NR_ZONES).rev() {
            if self.zones.zone[z].managed == 0 {
                continue;
            }
            if self.total_swap_pages > 0 {
                sc.slot = z;
                self.age_active_anon(&groups, &mut sc);
            }
            if !self.zone_balanced_3_11(z, false, 0) {
                return Some(z);
            }
        }
        None
    }

    /// The groups kswapd's anon ageing visits. The kernel's walk visits every group; one no
    /// active-anon update ever reached is never low (no view to load), nor is any group
    /// below it (an update marks the ancestors too), so the model skips those subtrees (and
    /// age_active_anon() charges the walk of all of them). Ageing changes no group's mark
    /// (it ages only marked groups, whose ancestors are marked).
    fn anon_ageing_groups(&self) -> Vec<MemcgId> {
        let mut groups = Vec::new();
        self.memcg_walk(
            ROOT_MEMCG,
            |m, x| {
                if m.memcg_topo.anon_seen(x) {
                    IterVisit::Visit
                } else {
                    IterVisit::SkipTree
                }
            },
            &mut groups,
        );
        groups
    }

    /// age_active_anon() (kswapd_age_node() in 6.1) for lruvec `sc.slot` of `groups`: a
    /// batch of each active anon list whose inactive list is low, after the walk's cost.
    fn age_active_anon(&mut self, groups: &[MemcgId], sc: &mut ScanControl) {
        self.charge_walk(self.memcg(ROOT_MEMCG).subtree_groups as usize);
        for &m in groups {
            if self.inactive_list_is_low(m, sc.slot, false) {
                self.shrink_active_list(SWAP_CLUSTER_MAX, m, sc, lru::ACTIVE_ANON);
            }
        }
    }

    /// The end of a zone's shrink_zone() pass in 3.11's kswapd_shrink_zone(): whether the
    /// zone scanned its share, what came back, and the sleep it asked for. The step goes on
    /// with the next zone in kswapd's next run.
    fn kswapd_zone_end_3_11(&mut self, st: KswapdScan) -> Option<u64> {
        let mut sc = st.sc;
        self.shrink_node_end(&mut sc, st.before);
        let mut step = self
            .kswapd
            .zone_step
            .take()
            .expect("a 3.11 zone pass belongs to a step");
        if sc.nr_scanned >= sc.nr_to_reclaim {
            step.raise_priority = false;
        }
        self.reclaim_wait.zone_writeback[sc.slot] = false;
        step.nr_reclaimed += sc.nr_reclaimed;
        self.kswapd.zone_step = Some(step);
        Some(self.kswapd_sleep_for(sc.throttle))
    }

    /// The end of balance_pgdat() when the priority has run out: a run that reclaimed
    /// nothing is a failure, and after MAX_RECLAIM_RETRIES of them kswapd stops (false).
    fn kswapd_priority_check(&mut self) -> bool {
        if self.kswapd.priority >= 1 {
            return true;
        }
        if self.kswapd.nr_reclaimed == 0 {
            self.kswapd.failures += 1;
        }
        self.kswapd.priority = DEF_PRIORITY;
        self.kswapd.nr_reclaimed = 0;
        self.kswapd.lru_gen_need_aging = false;
        if self.kswapd.failures >= crate::memcontrol::MAX_RECLAIM_RETRIES {
            self.kswapd_end_throttle();
            self.kswapd.awake = false;
            return false;
        }
        true
    }

    /// How long kswapd sleeps for the wait its step asked for (0: none).
    fn kswapd_sleep_for(&mut self, throttle: Option<Wait>) -> u64 {
        match throttle {
            Some(Wait::PageWriteback(pfn)) if !self.frames.test(pfn, pf::WRITEBACK) => {
                // folio_wait_writeback() tests PG_writeback before it sleeps: the write
                // ended while the page was still isolated in the batch.
                0
            }
            Some(Wait::PageWriteback(pfn)) => {
                // folio_wait_writeback() in soft-limit reclaim: asleep until that page's
                // writeback ends (acct_reclaim_writeback() wakes it); the timeout only bounds
                // the model's queue.
                self.kswapd.page_wait = Some(pfn);
                KSWAPD_PAGE_WAIT_BOUND_NS
            }
            Some(w) => {
                self.kswapd.throttled = true;
                self.writeback_throttled_inc();
                w.timeout_ns().expect("kswapd sleeps with a timeout")
            }
            None => 0,
        }
    }

    /// kswapd's throttle sleep is over (timeout, or it stops).
    pub(crate) fn kswapd_end_throttle(&mut self) {
        self.kswapd.page_wait = None;
        if self.kswapd.throttled {
            self.kswapd.throttled = false;
            self.reclaim_wait.nr_writeback_throttled -= 1;
        }
    }

    /// Free a frame that is off the LRU and out of every mapping.
    pub fn free_frame(&mut self, pfn: Pfn) {
        debug_assert_eq!(self.frames.lru(pfn), crate::page_cgroup::LRU_NONE);
        self.frames.set_memcg(pfn, 0);
        let pc = &mut self.frames.meta[pfn as usize].pc;
        pc.flags = crate::page_cgroup::LRU_NONE;
        pc.prev = NIL;
        pc.next = NIL;
        self.frames.meta[pfn as usize].map = crate::page_cgroup::PageMap {
            mapping: crate::page_cgroup::NO_MAPPING,
            index: 0,
        };
        let cpu = self.current_cpu();
        if self.kswapd.in_step {
            let t = self.now();
            self.kswapd.freeing.push_back((t, pfn, cpu));
        } else {
            let reclaim_active = self.kswapd.awake;
            self.frames
                .free_unref_page(pfn, 0, cpu, &self.zones, reclaim_active);
        }
    }

    /// The frames kswapd freed up to `now` join the free lists (its CPU's list first, as
    /// free_unref_page() puts them).
    pub(crate) fn kswapd_release_freed(&mut self, now: u64) {
        while let Some(&(t, pfn, cpu)) = self.kswapd.freeing.front() {
            if t > now {
                break;
            }
            self.kswapd.freeing.pop_front();
            let reclaim_active = self.kswapd.awake;
            self.frames
                .free_unref_page(pfn, 0, cpu, &self.zones, reclaim_active);
        }
    }

    /// Is this frame's mapping a file?
    pub fn frame_is_file(&self, pfn: Pfn) -> bool {
        self.frames.meta[pfn as usize].map.mapping & MAPPING_FILE_BIT != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MachineConfig;
    use crate::program::Idle;
    use crate::sched::ExecCtx;

    /// A task's global direct reclaim gives its CPU up between priorities once its time
    /// slice is used (cond_resched()), and goes on from the next priority, in the same
    /// pass, when the task calls again.
    #[test]
    fn direct_reclaim_yields_between_priorities_and_resumes() {
        let mut m = Machine::new(MachineConfig::default()).unwrap();
        m.check_invariants = true;
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let pid = m.spawn(a, "idle".into(), 0, Box::new(Idle));
        let quantum = m.cfg.costs.quantum_ns;
        let ctx = |m: &Machine, used: u64| ExecCtx {
            cpu_ns: used,
            ..ExecCtx::new(Some(pid), 0, m.sched.clock)
        };
        let stalls = |m: &Machine| m.global_stat(Stat::Allocstall);
        // The slice is used: priority 12 runs, then the CPU goes.
        m.cur = Some(ctx(&m, quantum));
        assert_eq!(m.try_to_free_pages(), (0, Some(Wait::Resched)));
        let saved = m.task(pid).reclaim_resume.as_ref().expect("kept");
        assert_eq!(saved.priority, DEF_PRIORITY - 1);
        assert_eq!(stalls(&m), 1);
        assert!(m.reclaim_wait.sleepers.is_empty(), "not a sleep");
        m.check().unwrap();
        // A fresh slice: the same pass goes on down to priority 0 (nothing to reclaim on
        // an empty machine) without counting another stall.
        m.cur = Some(ctx(&m, 0));
        assert_eq!(m.try_to_free_pages(), (0, None));
        assert!(m.task(pid).reclaim_resume.is_none());
        assert_eq!(stalls(&m), 1);
        // The next call starts a reclaim of its own.
        assert_eq!(m.try_to_free_pages(), (0, None));
        assert_eq!(stalls(&m), 2);
        // The checker refuses a kept reclaim that is not a global one part-way down.
        let mut bad = ScanControl::new(a, 32, true);
        bad.priority = 5;
        m.task_mut(pid).reclaim_resume = Some(Box::new(bad));
        assert!(m
            .check()
            .unwrap_err()
            .contains("not a global direct reclaim"));
        m.task_mut(pid).reclaim_resume = None;
        // Reclaim that cannot sleep (a write from outside a task) never yields.
        m.cur = Some(ExecCtx {
            pid: None,
            ..ctx(&m, quantum)
        });
        assert_eq!(m.try_to_free_pages(), (0, None));
        m.cur = None;
    }

    /// Reclaim skips a group's work only where it would change nothing: a new group with
    /// usage but nothing reclaimable is skipped; a page that joined its LRU (even once gone
    /// again), a negative dentry on its list or a memory.low set anywhere makes reclaim do
    /// the work. An empty unprotected lruvec gets no scan targets.
    #[test]
    fn reclaim_skips_only_groups_whose_work_changes_nothing() {
        let mut m = Machine::new(MachineConfig::default()).unwrap();
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let b = m.memcg_create(ROOT_MEMCG).unwrap();
        let c = m.memcg_create(ROOT_MEMCG).unwrap();
        // Usage that is not on an LRU list.
        m.memory.try_charge(a as usize, 5).unwrap();
        assert!(m.memcg_reclaim_noop(a) && m.memcg_reclaim_noop(b));
        let mut sc = ScanControl::new(ROOT_MEMCG, 32, false);
        assert_eq!(m.get_scan_count(a, &mut sc), [0; 4]);
        // A page on b's inactive file list, then off it again: b stays worked on.
        m.mod_stat(b, Stat::InactiveFile, 1);
        assert!(!m.memcg_reclaim_noop(b));
        m.mod_stat(b, Stat::InactiveFile, -1);
        assert!(!m.memcg_reclaim_noop(b));
        // Negative dentries on c's list_lru, counted without walking it.
        m.kmem_neg_dentries(c, 7).unwrap();
        assert_eq!(m.nr_dentries(c), 7);
        assert!(!m.memcg_reclaim_noop(c));
        m.check_slab_lru_len().unwrap();
        // memory.low anywhere: every group's protection is recomputed.
        m.memory.set_low(b as usize, 1);
        assert!(!m.memcg_reclaim_noop(a));
        // A protected empty lruvec is scanned for SWAP_CLUSTER_MAX >> priority pages.
        m.memory.set_low(a as usize, 100);
        m.memcg_reclaim_check(a, &mut sc);
        sc.priority = 0;
        sc.memcg_low_reclaim = true;
        let nr = m.get_scan_count(a, &mut sc);
        assert!(nr.iter().any(|&n| n > 0), "{nr:?}");
    }

    /// `reclaim=3.11`: 3.11's watermarks (no watermark_scale_factor: low is min + min/4,
    /// high min + min/2), its file lists kept 1:1 and its anon ratio on the lruvec's own
    /// lists; any other value of the key is refused.
    #[test]
    fn reclaim_3_11_has_its_watermarks_and_list_ratios() {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "16G").unwrap();
        cfg.set("swap", "1G").unwrap();
        // Without khugepaged's raised min_free_kbytes: the watermarks below are 6.1's
        // defaults.
        cfg.set("thp", "never").unwrap();
        assert!(cfg
            .set("reclaim", "4.0")
            .unwrap_err()
            .contains("expected 6.1 or 3.11"));
        let v6 = Machine::new(cfg.clone()).unwrap();
        cfg.set("reclaim", "3.11").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        for (z, zone) in m.zones.zone.iter().enumerate() {
            let min = zone.min;
            assert_eq!(min, v6.zones.zone[z].min, "the same min in zone {z}");
            assert_eq!(
                (zone.low, zone.high),
                (min + min / 4, min + min / 2),
                "zone {z}"
            );
        }
        assert!(
            m.zones.total(crate::mmzone::Wmark::High) < v6.zones.total(crate::mmzone::Wmark::High)
        );
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let size = |m: &mut Machine, l: usize, n: u64| {
            m.memcgs[a as usize].lruvec[NID0].size[l] = n;
        };
        // File: low as soon as more pages are active than inactive.
        size(&mut m, lru::INACTIVE_FILE, 100);
        size(&mut m, lru::ACTIVE_FILE, 100);
        assert!(!m.inactive_list_is_low(a, NID0, true));
        size(&mut m, lru::ACTIVE_FILE, 101);
        assert!(m.inactive_list_is_low(a, NID0, true));
        // Anon: 4G of it wants an inactive list of a sixth (int_sqrt(10 * 4) = 6).
        let gb = 1 << (30 - crate::config::PAGE_SHIFT);
        size(&mut m, lru::ACTIVE_ANON, 4 * gb - 100_000);
        size(&mut m, lru::INACTIVE_ANON, 100_000);
        assert!(m.inactive_list_is_low(a, NID0, false));
        size(&mut m, lru::ACTIVE_ANON, 4 * gb - 200_000);
        size(&mut m, lru::INACTIVE_ANON, 200_000);
        assert!(!m.inactive_list_is_low(a, NID0, false));
        for l in 0..4 {
            size(&mut m, l, 0);
        }
    }

    /// 3.11's kswapd_shrink_zone() tests a zone against allocations whose highest zone is
    /// end_zone: below it, the zone's lowmem reserve counts. ZONE_DMA's reserve against
    /// Normal is larger than the zone, so kswapd shrinks it at every step; pgdat_balanced()
    /// tests each zone as its own classzone, without a reserve. Pages go to the lruvec of
    /// their zone.
    #[test]
    fn reclaim_3_11_balances_zones_against_the_highest_zone_with_its_reserve() {
        use crate::mmzone::{ZONE_DMA, ZONE_DMA32, ZONE_NORMAL};
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "16G").unwrap();
        cfg.set("reclaim", "3.11").unwrap();
        let m = Machine::new(cfg).unwrap();
        let free = |z: usize| m.frames.free.zone_len(z);
        let dma = &m.zones.zone[ZONE_DMA];
        assert!(m.zones.protection(ZONE_DMA)[ZONE_NORMAL] > dma.managed);
        assert!(free(ZONE_DMA) > dma.high + dma.low);
        assert!(m.zone_balanced_3_11(ZONE_DMA, true, ZONE_DMA));
        assert!(!m.zone_balanced_3_11(ZONE_DMA, true, ZONE_NORMAL));
        // A free DMA32 of the high watermark, the gap and a little more is balanced on its
        // own and not against Normal, whose reserve is 1/256 of Normal.
        let d32 = &m.zones.zone[ZONE_DMA32];
        let reserve = m.zones.protection(ZONE_DMA32)[ZONE_NORMAL];
        assert_eq!(reserve, m.zones.zone[ZONE_NORMAL].managed / 256);
        assert!(free(ZONE_DMA32) > d32.high + d32.low + reserve);
        assert!(m.zone_balanced_3_11(ZONE_DMA32, true, ZONE_NORMAL));
        assert!(m.pgdat_balanced());
        // Pages of each zone on the lruvec of that zone.
        for (z, zone) in m.zones.zone.iter().enumerate() {
            assert_eq!(m.lru_slot(zone.start), z);
        }
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "16G").unwrap();
        let v6 = Machine::new(cfg).unwrap();
        let normal = v6.zones.zone[ZONE_NORMAL].start;
        assert_eq!(v6.lru_slot(normal), NID0);
    }
}
