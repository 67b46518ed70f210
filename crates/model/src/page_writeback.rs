//! Dirty page accounting, dirty throttling and writeback: mm/page-writeback.c and the
//! flusher of fs/fs-writeback.c, with cgroup writeback (4.2+) as Linux 6.1 has it on cgroup
//! v2.
//!
//! * Accounting (folio_account_dirtied, folio_clear_dirty_for_io, folio_start_writeback,
//!   __folio_end_writeback): a dirty page counts in its memcg's NR_FILE_DIRTY and in the
//!   WB_RECLAIMABLE of its inode's bdi_writeback; a page under writeback in NR_WRITEBACK and
//!   WB_WRITEBACK; /proc/vmstat's nr_dirtied and nr_written count every page dirtied and
//!   written.
//! * bdi_writeback per memcg (cgroup v2; one device): an inode is attached to the wb of the
//!   memcg of the first page dirtied in it (inode_attach_wb) and stays there; on cgroup v1
//!   every inode belongs to the root wb. A memcg's wb carries its wb_domain
//!   (memcg->cgwb_domain).
//! * balance_dirty_pages() with the global domain and, for a non-root wb, the memcg domain:
//!   dirtyable memory from mem_cgroup_wb_stats() (headroom under min(max, high) of the memcg
//!   and its ancestors, plus its file pages; mdtc_calc_avail), both domains' thresholds from
//!   vm.dirty_ratio/dirty_bytes and the background pair (domain_dirty_limits), the decaying
//!   dirty_limit (update_dirty_limit), each domain's wb_position_ratio (the cubic global part
//!   and the linear per-wb part over the wb's share of recent writeback completions, the
//!   floating proportions of lib/flex_proportions.c), and the lower of the two; freerun
//!   below both ceilings; wb_max_pause and wb_min_pause bound each pause, with think-time
//!   credit.
//! * Per-wb bandwidth estimation every BANDWIDTH_INTERVAL: wb_update_write_bandwidth from
//!   the pages written, wb_update_dirty_ratelimit from the pages dirtied, as in the kernel.
//! * The flusher per wb: every dirty_writeback_interval it writes inodes dirtied longer than
//!   dirty_expire_interval ago (kupdate); background writeback of a wb runs while
//!   wb_over_bg_thresh() (global or memcg dirty above its background threshold, or the wb's
//!   dirty pages above its share), in chunks of writeback_chunk_size(), oldest inode first,
//!   round robin; reclaim's wakeup_flusher_threads() writes everything.
//! * Writing an inode (write_cache_pages() in WB_SYNC_NONE mode) takes its dirty pages not
//!   under writeback in index order, from the first, found through the mapping's xarray
//!   marks (xarray_marks.rs: PAGECACHE_TAG_DIRTY, PAGECACHE_TAG_WRITEBACK), which
//!   folio_account_dirtied(), folio_clear_dirty_for_io(), __folio_start_writeback(),
//!   __folio_end_writeback() and truncation keep; a pass costs the pages it writes, not the
//!   size of the file.
//! * The flusher is a thread (wb_workfn() on a kworker): each work item (the periodic run,
//!   a wakeup, one wb's background writeback) waits for a CPU in the run queue (sched.rs)
//!   and pays `writepage_cost` per page it submits, so a batch reaches the device after the
//!   CPU time of the pages before it.
//!
//! Writes are submitted to the block device in batches; each batch completes by an event,
//! which clears PG_writeback and rotates PG_reclaim pages to the inactive tail
//! (folio_rotate_reclaimable()).
//!
//! Simplified (docs/FIDELITY.md): inodes never switch wbs and foreign dirtying is not
//! flushed (mem_cgroup_flush_foreign); every pass over an inode starts at its first page
//! (the kernel's range_cyclic writeback_index is not kept); a flusher work item runs to its
//! end once it has a CPU (the kernel's cond_resched() between inodes is not modelled), so
//! the device queue, not the flusher, bounds the I/O in flight; the per-CPU ratelimit
//! (bdp_ratelimits) and the rt-task boost are not modelled; the statistics read by the
//! throttling are exact.

use std::collections::BTreeSet;
use std::ops::Bound;

use crate::config::PAGE_SIZE;
use crate::machine::Machine;
use crate::memcontrol::{MemcgId, HZ, ROOT_MEMCG};
use crate::page_cgroup::{pf, Pfn, MAPPING_FILE_BIT};
use crate::program::Pid;
use crate::sched::Event;
use crate::stat::Stat;
use crate::xarray_marks::Mark;

/// MAX_PAUSE: the longest dirty-throttling sleep (HZ / 5), in jiffies.
const MAX_PAUSE: u64 = HZ / 5;
/// DIRTY_POLL_THRESH in pages (128K): the least a writer dirties between two pauses.
const DIRTY_POLL_THRESH: u64 = 32;
/// RATELIMIT_CALC_SHIFT: fixed point of pos_ratio.
const RATELIMIT_CALC_SHIFT: u32 = 10;
/// BANDWIDTH_INTERVAL: how often the bandwidth and ratelimit estimates move (200 ms).
const BANDWIDTH_INTERVAL: u64 = HZ / 5;
/// INIT_BW: the initial write bandwidth and dirty ratelimit, 100 MiB/s in pages.
const INIT_BW: u64 = (100 << 20) / PAGE_SIZE;
/// VM_COMPLETIONS_PERIOD_LEN: the half-life of the writeback-completion proportions.
const VM_COMPLETIONS_PERIOD_LEN: u64 = 3 * HZ;
/// MIN_WRITEBACK_PAGES (4 MiB): writeback chunks are multiples of it.
const MIN_WRITEBACK_PAGES: u64 = 1024;
/// DIRTY_SCOPE: a background chunk is at most 1/8 of the dirty limit.
const DIRTY_SCOPE: u64 = 8;
/// Pages per submitted writeback batch (one request).
const WB_BATCH: usize = 256;
const NS_PER_JIFFY: u64 = 1_000_000_000 / HZ;

/// The dirty sysctls (vm.dirty_*), as /proc/sys/vm shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtySysctl {
    /// vm.dirty_ratio, percent (0 when dirty_bytes is set).
    pub ratio: u64,
    /// vm.dirty_bytes (0 when dirty_ratio is in use).
    pub bytes: u64,
    pub background_ratio: u64,
    pub background_bytes: u64,
    /// vm.dirty_expire_centisecs.
    pub expire_cs: u64,
    /// vm.dirty_writeback_centisecs (0: no periodic writeback).
    pub writeback_cs: u64,
}

impl Default for DirtySysctl {
    fn default() -> Self {
        DirtySysctl {
            ratio: 20,
            bytes: 0,
            background_ratio: 10,
            background_bytes: 0,
            expire_cs: 3000,
            writeback_cs: 500,
        }
    }
}

/// A task's dirty-throttling state (task_struct's nr_dirtied, nr_dirtied_pause,
/// dirty_paused_when).
#[derive(Clone, Copy, Debug)]
pub struct TaskDirty {
    /// Pages dirtied since the last balance.
    pub nr_dirtied: u64,
    /// Pages to dirty before the next balance.
    pub nr_dirtied_pause: u64,
    /// When the last pause ended, in jiffies (0: never paused).
    pub paused_when: u64,
    /// dirty=seed001*: the next pause of 2.6.36's loop, in jiffies (doubles to HZ/10).
    pub seed_pause: u64,
    /// dirty=seed001*: the task's share of recent dirtying (tsk->dirties, 2.6.36's
    /// prop_local_single): its events and the global period they were last aged to.
    pub dirties: u64,
    pub dirties_period: u64,
}

impl TaskDirty {
    pub fn new(_now: u64) -> TaskDirty {
        TaskDirty {
            nr_dirtied: 0,
            nr_dirtied_pause: DIRTY_POLL_THRESH,
            paused_when: 0,
            seed_pause: 1,
            dirties: 0,
            dirties_period: 0,
        }
    }
}

/// Global side of a floating proportion (struct fprop_global): events that halve every
/// period.
#[derive(Clone, Debug, Default)]
pub struct FpropGlobal {
    pub events: u64,
    pub period: u64,
}

/// One participant's side (struct fprop_local_percpu).
#[derive(Clone, Debug, Default)]
pub struct FpropLocal {
    pub events: u64,
    pub period: u64,
}

impl FpropGlobal {
    /// fprop_new_period(): age the events by `periods` halvings; false if there was nothing
    /// to age.
    fn new_period(&mut self, periods: u64) -> bool {
        if self.events <= 1 {
            return false;
        }
        self.events = if periods < 64 {
            self.events >> periods
        } else {
            0
        };
        self.period += periods;
        true
    }

    /// fprop_reflect_period_percpu(): bring a local count up to the current period.
    fn reflect(&self, pl: &mut FpropLocal) {
        if pl.period < self.period {
            let d = self.period - pl.period;
            pl.events = if d < 64 { pl.events >> d } else { 0 };
            pl.period = self.period;
        }
    }

    fn add(&mut self, pl: &mut FpropLocal, nr: u64) {
        self.reflect(pl);
        pl.events += nr;
        self.events += nr;
    }

    /// fprop_fraction_percpu(): (numerator, denominator), never 0/0.
    fn fraction(&self, pl: &FpropLocal) -> (u64, u64) {
        let mut pl = pl.clone();
        self.reflect(&mut pl);
        let (num, den) = (pl.events, self.events);
        if den <= num {
            if num > 0 {
                (num, num)
            } else {
                (0, 1)
            }
        } else {
            (num, den)
        }
    }
}

/// struct wb_domain: the global one, or a memcg's (memcg->cgwb_domain).
#[derive(Clone, Debug, Default)]
pub struct WbDomain {
    pub completions: FpropGlobal,
    /// When the next completion period starts, in jiffies (0: the timer is off).
    pub period_time: u64,
    /// The decaying hard limit (dom->dirty_limit) and when it last moved.
    pub dirty_limit: u64,
    pub dirty_limit_tstamp: u64,
}

impl WbDomain {
    fn new(now_j: u64) -> WbDomain {
        WbDomain {
            dirty_limit_tstamp: now_j,
            ..Default::default()
        }
    }

    /// writeout_period(), run lazily: age the completions for the periods that have passed.
    fn catch_up(&mut self, now_j: u64) {
        if self.period_time == 0 || now_j < self.period_time {
            return;
        }
        let miss = (now_j - self.period_time) / VM_COMPLETIONS_PERIOD_LEN;
        if self.completions.new_period(miss + 1) {
            self.period_time += (miss + 1) * VM_COMPLETIONS_PERIOD_LEN;
        } else {
            self.period_time = 0;
        }
    }

    /// wb_domain_writeout_add(): count completions, starting the period timer if needed.
    fn writeout_add(&mut self, pl: &mut FpropLocal, nr: u64, now_j: u64) {
        self.catch_up(now_j);
        self.completions.add(pl, nr);
        if self.period_time == 0 {
            self.period_time = (now_j + VM_COMPLETIONS_PERIOD_LEN) | 1;
        }
    }

    fn fraction(&mut self, pl: &FpropLocal, now_j: u64) -> (u64, u64) {
        self.catch_up(now_j);
        self.completions.fraction(pl)
    }
}

/// struct bdi_writeback of the one device, for one memcg (the root's is the bdi's own wb).
#[derive(Clone, Debug)]
pub struct Wb {
    pub memcg: MemcgId,
    /// WB_RECLAIMABLE, WB_WRITEBACK, WB_DIRTIED, WB_WRITTEN.
    pub reclaimable: u64,
    pub writeback: u64,
    pub dirtied: u64,
    pub written: u64,
    /// Pages per second.
    pub write_bandwidth: u64,
    pub avg_write_bandwidth: u64,
    pub dirty_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
    /// Jiffies of the last bandwidth update, and the counters then.
    pub bw_time_stamp: u64,
    pub dirtied_stamp: u64,
    pub written_stamp: u64,
    pub dirty_exceeded: bool,
    /// This wb's writeback completions in the global domain and in its memcg's domain.
    pub completions: FpropLocal,
    pub memcg_completions: FpropLocal,
    /// The memcg's wb_domain (unused for the root wb).
    pub dom: WbDomain,
    /// Dirty inodes by (dirtied_when, file): b_dirty, oldest first.
    pub b_dirty: BTreeSet<(u64, u32)>,
    /// Background writeback queued and not yet run.
    pub bg_queued: bool,
}

impl Wb {
    fn new(memcg: MemcgId, now_j: u64) -> Wb {
        Wb {
            memcg,
            reclaimable: 0,
            writeback: 0,
            dirtied: 0,
            written: 0,
            write_bandwidth: INIT_BW,
            avg_write_bandwidth: INIT_BW,
            dirty_ratelimit: INIT_BW,
            balanced_dirty_ratelimit: INIT_BW,
            bw_time_stamp: now_j,
            dirtied_stamp: 0,
            written_stamp: 0,
            dirty_exceeded: false,
            completions: FpropLocal::default(),
            memcg_completions: FpropLocal::default(),
            dom: WbDomain::new(now_j),
            b_dirty: BTreeSet::new(),
            bg_queued: false,
        }
    }
}

/// struct dirty_throttle_control: one domain's view for one wb.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dtc {
    /// Dirtyable pages, dirty (+ writeback) pages, thresholds.
    pub avail: u64,
    pub dirty: u64,
    pub thresh: u64,
    pub bg_thresh: u64,
    pub wb_dirty: u64,
    pub wb_thresh: u64,
    pub wb_bg_thresh: u64,
    pub pos_ratio: u64,
    /// A memcg domain (else the global one).
    pub memcg: bool,
}

/// dirty_poll_interval(): about sqrt(thresh − dirty) pages.
fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() >> 1)
    } else {
        1
    }
}

fn dirty_freerun_ceiling(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

/// pos_ratio_polynom(): 1.0 (1024) at the setpoint, 2.0 at freerun and below, 0 at the
/// limit and above.
pub fn pos_ratio(setpoint: u64, dirty: u64, limit: u64) -> u64 {
    if dirty >= limit {
        return 0;
    }
    let one = 1i128 << RATELIMIT_CALC_SHIFT;
    let x = ((setpoint as i128 - dirty as i128) << RATELIMIT_CALC_SHIFT)
        / ((limit as i128 - setpoint as i128) | 1);
    let cube = (((x * x) >> RATELIMIT_CALC_SHIFT) * x) >> RATELIMIT_CALC_SHIFT;
    (one + cube).clamp(0, 2 * one) as u64
}

/// Batches in flight and the flusher's state.
pub struct Writeback {
    /// Batches in flight, by id.
    pub inflight: Vec<Option<Vec<Pfn>>>,
    /// How many of them.
    pub inflight_batches: usize,
    pub free_ids: Vec<u32>,
    /// Reclaim asked the flusher to write back everything (wakeup_flusher_threads()).
    pub kicked: bool,
    /// The wbs, by memcg id (created when the memcg first dirties an inode).
    pub wbs: Vec<Option<Box<Wb>>>,
    /// global_wb_domain.
    pub dom: WbDomain,
    pub sysctl: DirtySysctl,
    /// /proc/vmstat nr_dirtied and nr_written.
    pub nr_dirtied: u64,
    pub nr_written: u64,
    /// A periodic flusher wakeup is queued.
    pub periodic_armed: bool,
    /// The flusher thread (the wb's kworker) in the run queue: its virtual runtime, the CPU
    /// it last ran on, and the CPU time it used.
    pub flusher_vruntime: u64,
    pub flusher_cpu: u32,
    pub flusher_cpu_ns: u64,
}

impl Default for Writeback {
    fn default() -> Self {
        Writeback {
            inflight: Vec::new(),
            inflight_batches: 0,
            free_ids: Vec::new(),
            kicked: false,
            wbs: Vec::new(),
            dom: WbDomain::new(0),
            sysctl: DirtySysctl::default(),
            nr_dirtied: 0,
            nr_written: 0,
            periodic_armed: false,
            flusher_vruntime: 0,
            flusher_cpu: 0,
            flusher_cpu_ns: 0,
        }
    }
}

impl Writeback {
    pub fn wb(&self, memcg: MemcgId) -> Option<&Wb> {
        self.wbs.get(memcg as usize).and_then(|w| w.as_deref())
    }

    pub(crate) fn wb_mut(&mut self, memcg: MemcgId) -> &mut Wb {
        self.wbs[memcg as usize]
            .as_deref_mut()
            .expect("the wb exists")
    }
}

fn file_of(m: &Machine, pfn: Pfn) -> usize {
    (m.frames.meta[pfn as usize].map.mapping & !MAPPING_FILE_BIT) as usize
}

impl Machine {
    /// The index of a page-cache page in its file.
    #[inline]
    fn page_index(&self, pfn: Pfn) -> u64 {
        u64::from(self.frames.meta[pfn as usize].map.index)
    }

    pub(crate) fn writeback_init(&mut self) {
        self.writeback.wbs = Vec::new();
        self.wb_get_create(ROOT_MEMCG);
        self.schedule_periodic_flush(self.sched.clock);
    }

    fn schedule_periodic_flush(&mut self, now: u64) {
        let cs = self.writeback.sysctl.writeback_cs;
        if cs > 0 && !self.writeback.periodic_armed {
            self.writeback.periodic_armed = true;
            self.sched.push(now + cs * 10_000_000, Event::Flusher);
        }
    }

    /// A write of vm.dirty_writeback_centisecs: a new non-zero interval wakes the flusher
    /// at once (dirty_writeback_centisecs_handler) and restarts the periodic wakeups if they
    /// had stopped.
    pub fn set_dirty_writeback_cs(&mut self, cs: u64) {
        let old = self.writeback.sysctl.writeback_cs;
        self.writeback.sysctl.writeback_cs = cs;
        if cs != 0 && cs != old {
            self.wakeup_flusher();
            if old == 0 {
                self.schedule_periodic_flush(self.now());
            }
        }
    }

    /// jiffies.
    pub fn jiffies(&self) -> u64 {
        self.now() / NS_PER_JIFFY
    }

    /// wb_get_create(): the wb of `memcg`.
    fn wb_get_create(&mut self, memcg: MemcgId) -> MemcgId {
        let i = memcg as usize;
        if self.writeback.wbs.len() <= i {
            self.writeback.wbs.resize(i + 1, None);
        }
        if self.writeback.wbs[i].is_none() {
            let now_j = self.jiffies();
            self.writeback.wbs[i] = Some(Box::new(Wb::new(memcg, now_j)));
        }
        memcg
    }

    /// The wb an inode is attached to, attaching it to the wb of `memcg` (the memcg of the
    /// page being dirtied) if it has none (inode_attach_wb()). On cgroup v1 every inode
    /// belongs to the root wb.
    fn inode_attach_wb(&mut self, f: usize, memcg: MemcgId) -> MemcgId {
        let cur = self.files.v[f].wb;
        if cur != 0 {
            return cur;
        }
        let owner = if self.is_v1() { ROOT_MEMCG } else { memcg };
        let wb = self.wb_get_create(owner);
        self.files.v[f].wb = wb;
        wb
    }

    /// folio_account_dirtied().
    pub fn account_dirty(&mut self, pfn: Pfn) {
        self.frames.set(pfn, pf::DIRTY);
        let memcg = self.frames.memcg(pfn);
        self.mod_stat(self.dirty_stat_memcg(memcg), Stat::FileDirty, 1);
        let f = file_of(self, pfn);
        let wb = self.inode_attach_wb(f, memcg);
        let now = self.now();
        let idx = self.page_index(pfn);
        let file = &mut self.files.v[f];
        file.marks.set(idx, Mark::Dirty);
        file.nr_dirty += 1;
        let first = file.dirtied_when.is_none();
        if first {
            file.dirtied_when = Some(now);
        }
        let w = self.writeback.wb_mut(wb);
        w.reclaimable += 1;
        w.dirtied += 1;
        if first {
            w.b_dirty.insert((now, f as u32));
        }
        self.writeback.nr_dirtied += 1;
    }

    /// The memcg whose file_dirty and file_writeback count a page of `memcg`: itself, or
    /// under `dirty=global` (no per-memcg dirty accounting) the root, whose hierarchical
    /// counts are the machine's.
    #[inline]
    pub fn dirty_stat_memcg(&self, memcg: MemcgId) -> MemcgId {
        if self.cfg.dirty == crate::config::DirtyPolicy::Global {
            ROOT_MEMCG
        } else {
            memcg
        }
    }

    /// The dirty bit goes away, for I/O (folio_clear_dirty_for_io) or without writeback
    /// (truncation: folio_account_cleaned).
    pub fn account_clean(&mut self, pfn: Pfn) {
        self.frames.clear(pfn, pf::DIRTY);
        let memcg = self.dirty_stat_memcg(self.frames.memcg(pfn));
        self.mod_stat(memcg, Stat::FileDirty, -1);
        let f = file_of(self, pfn);
        let idx = self.page_index(pfn);
        let file = &mut self.files.v[f];
        file.marks.clear(idx, Mark::Dirty);
        let wb = file.wb;
        file.nr_dirty -= 1;
        let cleaned = (file.nr_dirty == 0)
            .then(|| file.dirtied_when.take())
            .flatten();
        let w = self.writeback.wb_mut(wb);
        w.reclaimable -= 1;
        if let Some(when) = cleaned {
            w.b_dirty.remove(&(when, f as u32));
        }
    }

    /// folio_start_writeback() after folio_clear_dirty_for_io().
    fn start_page_writeback(&mut self, pfn: Pfn) {
        self.account_clean(pfn);
        self.frames.set(pfn, pf::WRITEBACK);
        let memcg = self.dirty_stat_memcg(self.frames.memcg(pfn));
        self.mod_stat(memcg, Stat::Writeback, 1);
        let idx = self.page_index(pfn);
        let f = file_of(self, pfn);
        let file = &mut self.files.v[f];
        file.marks.set(idx, Mark::Writeback);
        let wb = file.wb;
        self.writeback.wb_mut(wb).writeback += 1;
    }

    /// The writeback flag goes away: at I/O completion (`written`), or when the page is
    /// truncated (the model ends its writeback at once).
    pub fn end_page_writeback(&mut self, pfn: Pfn, written: bool) {
        self.frames.clear(pfn, pf::WRITEBACK);
        self.acct_reclaim_writeback(pfn);
        let memcg = self.dirty_stat_memcg(self.frames.memcg(pfn));
        self.mod_stat(memcg, Stat::Writeback, -1);
        let idx = self.page_index(pfn);
        let f = file_of(self, pfn);
        let file = &mut self.files.v[f];
        file.marks.clear(idx, Mark::Writeback);
        let wb = file.wb;
        let now_j = self.jiffies();
        let wbk = &mut self.writeback;
        let w = wbk.wbs[wb as usize].as_deref_mut().expect("the wb exists");
        w.writeback -= 1;
        if written {
            // __wb_writeout_add(): WB_WRITTEN and the completion proportions.
            w.written += 1;
            wbk.nr_written += 1;
            wbk.dom.writeout_add(&mut w.completions, 1, now_j);
            if w.memcg != ROOT_MEMCG {
                let mut pl = std::mem::take(&mut w.memcg_completions);
                w.dom.writeout_add(&mut pl, 1, now_j);
                w.memcg_completions = pl;
            }
        }
    }

    /// A memcg goes away: its wb's inodes and counts move to the parent's wb (the kernel
    /// switches the inodes of an offline cgwb to its nearest live ancestor's).
    pub(crate) fn wb_memcg_offline(&mut self, id: MemcgId, parent: MemcgId) {
        let Some(old) = self
            .writeback
            .wbs
            .get_mut(id as usize)
            .and_then(|w| w.take())
        else {
            return;
        };
        let to = self.wb_get_create(parent);
        for f in self.files.v.iter_mut() {
            if f.wb == id {
                f.wb = to;
            }
        }
        let w = self.writeback.wb_mut(to);
        w.reclaimable += old.reclaimable;
        w.writeback += old.writeback;
        w.b_dirty.extend(old.b_dirty.iter().copied());
    }

    /// memcg_wb_domain_size_changed(): a limit of `memcg` changed.
    pub fn memcg_wb_domain_size_changed(&mut self, memcg: MemcgId) {
        let now_j = self.jiffies();
        if let Some(Some(w)) = self.writeback.wbs.get_mut(memcg as usize) {
            w.dom.dirty_limit = 0;
            w.dom.dirty_limit_tstamp = now_j;
        }
    }

    /// global_dirtyable_memory(): free pages above the reserve (totalreserve_pages) plus the
    /// file LRUs. Under `reclaim=3.11` the anon LRUs count too while swap has a free slot
    /// (global_reclaimable_pages(), until "mm: page-writeback: do not count anon pages as
    /// dirtyable memory", 3.14): a machine full of anon lets its little page cache be
    /// almost all dirty.
    pub fn global_dirtyable_memory(&self) -> u64 {
        let mut reclaimable =
            self.global_stat(Stat::ActiveFile) + self.global_stat(Stat::InactiveFile);
        if self.reclaim_3_11() && self.swap.nr_free() > 0 {
            reclaimable +=
                self.global_stat(Stat::ActiveAnon) + self.global_stat(Stat::InactiveAnon);
        }
        self.nr_free_pages()
            .saturating_sub(self.zones.totalreserve_pages())
            + reclaimable
            + 1
    }

    /// domain_dirty_limits(): (thresh, bg_thresh) in pages for `avail` dirtyable pages; a
    /// memcg domain converts the bytes knobs to ratios of the global domain's `global_avail`.
    fn domain_dirty_limits(&self, avail: u64, memcg_global_avail: Option<u64>) -> (u64, u64) {
        let sc = self.writeback.sysctl;
        let mut bytes = sc.bytes;
        let mut bg_bytes = sc.background_bytes;
        let mut ratio = sc.ratio * PAGE_SIZE / 100;
        let mut bg_ratio = sc.background_ratio * PAGE_SIZE / 100;
        if let Some(global_avail) = memcg_global_avail {
            let g = global_avail.max(1);
            if bytes > 0 {
                ratio = bytes.div_ceil(g).min(PAGE_SIZE);
            }
            if bg_bytes > 0 {
                bg_ratio = bg_bytes.div_ceil(g).min(PAGE_SIZE);
            }
            bytes = 0;
            bg_bytes = 0;
        }
        let thresh = if bytes > 0 {
            bytes.div_ceil(PAGE_SIZE)
        } else {
            ratio * avail / PAGE_SIZE
        };
        let mut bg = if bg_bytes > 0 {
            bg_bytes.div_ceil(PAGE_SIZE)
        } else {
            bg_ratio * avail / PAGE_SIZE
        };
        if bg >= thresh {
            bg = thresh / 2;
        }
        (thresh.min(u32::MAX as u64), bg.min(u32::MAX as u64))
    }

    /// The global domain's (thresh, bg_thresh) now (global_dirty_limits()).
    pub fn global_dirty_limits(&self) -> (u64, u64) {
        self.domain_dirty_limits(self.global_dirtyable_memory(), None)
    }

    /// The global domain's control (gdtc) for `wb`; with `with_writeback`, dirty counts
    /// pages under writeback too (balance_dirty_pages), else only dirty ones
    /// (wb_over_bg_thresh).
    fn gdtc(&self, with_writeback: bool) -> Dtc {
        let avail = self.global_dirtyable_memory();
        let mut dirty = self.global_stat(Stat::FileDirty);
        if with_writeback {
            dirty += self.global_stat(Stat::Writeback);
        }
        let (thresh, bg_thresh) = self.domain_dirty_limits(avail, None);
        Dtc {
            avail,
            dirty,
            thresh,
            bg_thresh,
            ..Default::default()
        }
    }

    /// mem_cgroup_wb_stats(): (file pages, headroom, dirty, writeback) of a memcg.
    pub fn mem_cgroup_wb_stats(&self, memcg: MemcgId) -> (u64, u64, u64, u64) {
        let file =
            self.stat_view(memcg, Stat::ActiveFile) + self.stat_view(memcg, Stat::InactiveFile);
        let mut headroom = u64::MAX;
        let mut m = memcg;
        while let Some(p) = self.memcg(m).parent {
            let c = self.memory.get(m as usize);
            let ceiling = c.max.min(c.high);
            headroom = headroom.min(ceiling - ceiling.min(c.usage));
            m = p;
        }
        (
            file,
            headroom,
            self.stat_view(memcg, Stat::FileDirty),
            self.stat_view(memcg, Stat::Writeback),
        )
    }

    /// The memcg domain's control (mdtc) for the wb of `memcg`, given the global one.
    fn mdtc(&self, memcg: MemcgId, gdtc: &Dtc, with_writeback: bool) -> Dtc {
        let (filepages, headroom, dirty, writeback) = self.mem_cgroup_wb_stats(memcg);
        let dirty = if with_writeback {
            dirty + writeback
        } else {
            dirty
        };
        // mdtc_calc_avail()
        let clean = filepages - filepages.min(dirty);
        let global_clean = gdtc.avail - gdtc.avail.min(gdtc.dirty);
        let other_clean = global_clean - global_clean.min(clean);
        let avail = filepages + headroom.min(other_clean);
        let (thresh, bg_thresh) = self.domain_dirty_limits(avail, Some(gdtc.avail));
        Dtc {
            avail,
            dirty,
            thresh,
            bg_thresh,
            memcg: true,
            ..Default::default()
        }
    }

    /// __wb_calc_thresh(): the wb's share of a domain's threshold, by its share of recent
    /// writeback completions.
    fn wb_calc_thresh(&mut self, wb: MemcgId, memcg_dom: bool, thresh: u64) -> u64 {
        let now_j = self.jiffies();
        let wbk = &mut self.writeback;
        let w = wbk.wbs[wb as usize].as_deref_mut().expect("the wb exists");
        let (num, den) = if memcg_dom {
            let pl = w.memcg_completions.clone();
            w.dom.fraction(&pl, now_j)
        } else {
            wbk.dom.fraction(&w.completions, now_j)
        };
        ((thresh as u128 * num as u128) / den as u128) as u64
    }

    /// wb_dirty_limits(): the wb's threshold and dirty pages in a domain.
    fn wb_dirty_limits(&mut self, wb: MemcgId, dtc: &mut Dtc) {
        dtc.wb_thresh = self.wb_calc_thresh(wb, dtc.memcg, dtc.thresh);
        dtc.wb_bg_thresh = (dtc.wb_thresh * dtc.bg_thresh)
            .checked_div(dtc.thresh)
            .unwrap_or(0);
        let w = self.writeback.wb(wb).expect("the wb exists");
        dtc.wb_dirty = w.reclaimable + w.writeback;
    }

    /// hard_dirty_limit() of a domain.
    fn hard_dirty_limit(&self, wb: MemcgId, dtc: &Dtc) -> u64 {
        let dom = if dtc.memcg {
            &self.writeback.wb(wb).expect("the wb exists").dom
        } else {
            &self.writeback.dom
        };
        dtc.thresh.max(dom.dirty_limit)
    }

    /// wb_position_ratio(): the domain's cubic control line, scaled by the wb's linear one.
    fn wb_position_ratio(&self, wb: MemcgId, dtc: &mut Dtc) {
        let w = self.writeback.wb(wb).expect("the wb exists");
        let write_bw = w.avg_write_bandwidth;
        let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
        let limit = self.hard_dirty_limit(wb, dtc);
        let setpoint = (freerun + limit) / 2;
        dtc.pos_ratio = 0;
        if dtc.dirty >= limit {
            return;
        }
        let mut pos = pos_ratio(setpoint, dtc.dirty, limit) as u128;
        let mut wb_thresh = dtc.wb_thresh.min(dtc.thresh);
        wb_thresh = wb_thresh.max((limit - dtc.dirty) / 8);
        let x = ((wb_thresh as u128) << 16) / (dtc.thresh as u128 | 1);
        let wb_setpoint = (setpoint as u128 * x) >> 16;
        let span =
            ((dtc.thresh as u128 - wb_thresh.min(dtc.thresh) as u128 + 8 * write_bw as u128) * x)
                >> 16;
        let x_intercept = wb_setpoint + span;
        let wb_dirty = dtc.wb_dirty as u128;
        if wb_dirty < x_intercept - span / 4 {
            pos = pos * (x_intercept - wb_dirty) / ((x_intercept - wb_setpoint) | 1);
        } else {
            pos /= 4;
        }
        // The wb's reserve area, keeping the device busy.
        let x_intercept = wb_thresh as u128 / 2;
        if wb_dirty < x_intercept {
            if wb_dirty > x_intercept / 8 {
                pos = pos * x_intercept / wb_dirty;
            } else {
                pos *= 8;
            }
        }
        dtc.pos_ratio = pos.min(u64::MAX as u128) as u64;
    }

    /// update_dirty_limit() of the domain, every BANDWIDTH_INTERVAL.
    fn domain_update_dirty_limit(&mut self, wb: MemcgId, dtc: &Dtc, now_j: u64) {
        let dom = if dtc.memcg {
            &mut self.writeback.wb_mut(wb).dom
        } else {
            &mut self.writeback.dom
        };
        if now_j < dom.dirty_limit_tstamp + BANDWIDTH_INTERVAL {
            return;
        }
        let thresh = dtc.thresh;
        if dom.dirty_limit < thresh {
            dom.dirty_limit = thresh;
        } else {
            let target = thresh.max(dtc.dirty);
            if dom.dirty_limit > target {
                dom.dirty_limit -= (dom.dirty_limit - target) >> 5;
            }
        }
        dom.dirty_limit_tstamp = now_j;
    }

    /// wb_update_dirty_ratelimit(): move the wb's dirty ratelimit toward the rate that
    /// balances dirtying with writeback.
    fn wb_update_dirty_ratelimit(&mut self, wb: MemcgId, dtc: &Dtc, dirtied: u64, elapsed: u64) {
        let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
        let limit = self.hard_dirty_limit(wb, dtc);
        let setpoint = (freerun + limit) / 2;
        let w = self.writeback.wb_mut(wb);
        let write_bw = w.avg_write_bandwidth;
        let dirty_ratelimit = w.dirty_ratelimit;
        let dirty_rate = (dirtied - w.dirtied_stamp) * HZ / elapsed;
        let task_ratelimit =
            ((dirty_ratelimit as u128 * dtc.pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64 + 1;
        let balanced = ((task_ratelimit as u128 * write_bw as u128) / (dirty_rate as u128 | 1))
            .min(write_bw as u128) as u64;
        let mut step = 0;
        if dtc.dirty < setpoint {
            let x = w.balanced_dirty_ratelimit.min(balanced).min(task_ratelimit);
            if dirty_ratelimit < x {
                step = x - dirty_ratelimit;
            }
        } else {
            let x = w.balanced_dirty_ratelimit.max(balanced).max(task_ratelimit);
            if dirty_ratelimit > x {
                step = dirty_ratelimit - x;
            }
        }
        let shift = dirty_ratelimit / (2 * step + 1);
        step = if shift < 64 {
            (step >> shift).div_ceil(8)
        } else {
            0
        };
        let new = if dirty_ratelimit < balanced {
            dirty_ratelimit + step
        } else {
            dirty_ratelimit.saturating_sub(step)
        };
        w.dirty_ratelimit = new.max(1);
        w.balanced_dirty_ratelimit = balanced;
    }

    /// wb_update_write_bandwidth(): a smoothed estimate of the pages written per second.
    fn wb_update_write_bandwidth(&mut self, wb: MemcgId, elapsed: u64, written: u64) {
        let period = (3 * HZ).next_power_of_two();
        let w = self.writeback.wb_mut(wb);
        let mut avg = w.avg_write_bandwidth;
        let old = w.write_bandwidth;
        let mut bw = (written - written.min(w.written_stamp)) * HZ;
        if elapsed > period {
            bw /= elapsed;
            avg = bw;
        } else {
            bw += w.write_bandwidth * (period - elapsed);
            bw >>= period.ilog2();
            if avg > old && old >= bw {
                avg -= (avg - old) >> 3;
            }
            if avg < old && old <= bw {
                avg += (old - avg) >> 3;
            }
        }
        w.write_bandwidth = bw;
        w.avg_write_bandwidth = avg.max(1);
    }

    /// __wb_update_bandwidth().
    fn wb_update_bandwidth(&mut self, wb: MemcgId, dtcs: Option<(&Dtc, Option<&Dtc>)>) {
        let now_j = self.jiffies();
        let w = self.writeback.wb(wb).expect("the wb exists");
        let elapsed = now_j.saturating_sub(w.bw_time_stamp).max(1);
        let (dirtied, written) = (w.dirtied, w.written);
        if let Some((g, m)) = dtcs {
            self.domain_update_dirty_limit(wb, g, now_j);
            self.wb_update_dirty_ratelimit(wb, g, dirtied, elapsed);
            if let Some(m) = m {
                self.domain_update_dirty_limit(wb, m, now_j);
                self.wb_update_dirty_ratelimit(wb, m, dirtied, elapsed);
            }
        }
        self.wb_update_write_bandwidth(wb, elapsed, written);
        let w = self.writeback.wb_mut(wb);
        w.dirtied_stamp = dirtied;
        w.written_stamp = written;
        w.bw_time_stamp = now_j;
    }

    /// wb_max_pause(): about 1/8 s worth of the wb's writeback, at most MAX_PAUSE (jiffies).
    fn wb_max_pause(&self, wb: MemcgId, wb_dirty: u64) -> u64 {
        let bw = self
            .writeback
            .wb(wb)
            .expect("the wb exists")
            .avg_write_bandwidth;
        let t = wb_dirty / (1 + bw / (1 + HZ / 8).next_power_of_two()) + 1;
        t.min(MAX_PAUSE)
    }

    /// wb_min_pause(): (the least pause worth sleeping, the next nr_dirtied_pause).
    fn wb_min_pause(
        &self,
        wb: MemcgId,
        max_pause: u64,
        task_ratelimit: u64,
        dirty_ratelimit: u64,
    ) -> (u64, u64) {
        let w = self.writeback.wb(wb).expect("the wb exists");
        let hi = w.avg_write_bandwidth.max(1).ilog2() as u64;
        let lo = w.dirty_ratelimit.max(1).ilog2() as u64;
        let hz_pow2 = HZ.next_power_of_two();
        let mut t = (HZ / 100).max(1);
        if hi > lo {
            t += (hi - lo) * (10 * HZ) / 1024;
        }
        t = t.min(1 + max_pause / 2);
        let mut pages = dirty_ratelimit * t / hz_pow2;
        if pages < DIRTY_POLL_THRESH {
            t = max_pause;
            pages = dirty_ratelimit * t / hz_pow2;
            if pages > DIRTY_POLL_THRESH {
                pages = DIRTY_POLL_THRESH;
                t = HZ * DIRTY_POLL_THRESH / dirty_ratelimit.max(1);
            }
        }
        let pause = HZ * pages / (task_ratelimit + 1);
        if pause > max_pause {
            t = max_pause;
            pages = task_ratelimit * t / hz_pow2;
        }
        let min_pause = if pages >= DIRTY_POLL_THRESH {
            1 + t / 2
        } else {
            t
        };
        (min_pause, pages)
    }

    /// balance_dirty_pages_ratelimited(): called after `pid` dirtied a page of `f`.
    pub fn balance_dirty_pages_ratelimited(&mut self, pid: Pid, f: u32) {
        let wb = self.files.v[f as usize].wb;
        let exceeded = self.writeback.wb(wb).is_some_and(|w| w.dirty_exceeded);
        let d = &mut self.task_mut(pid).dirty;
        d.nr_dirtied += 1;
        let mut ratelimit = d.nr_dirtied_pause;
        if exceeded {
            ratelimit = ratelimit.min(DIRTY_POLL_THRESH >> 2);
        }
        let due = d.nr_dirtied >= ratelimit;
        if self.cfg.dirty == crate::config::DirtyPolicy::Mainline {
            if due {
                self.balance_dirty_pages(pid, wb);
            }
        } else {
            self.task_dirty_inc(pid);
            if due {
                self.seed001_balance_dirty_pages(pid, wb);
            }
        }
    }

    /// writeback_inodes_wb(): write up to `max` dirty pages of the wb's inodes, oldest
    /// dirtied first, from the calling context; returns how many.
    pub(crate) fn writeback_inodes_wb(&mut self, wb: MemcgId, max: u64) -> u64 {
        let mut batch = Vec::new();
        let mut n = 0;
        let mut at = None;
        while n < max {
            let Some(inode) = self.next_dirty_inode(wb, at) else {
                break;
            };
            at = Some(inode);
            n += self.writeback_inode(inode.1 as usize, max - n, &mut batch);
        }
        if !batch.is_empty() {
            self.submit_writeback(batch);
        }
        n
    }

    /// The wb's dirty inode after `after` on its b_dirty list (the first with None), as
    /// (dirtied_when, file). A pass over the list walks it with this cursor: writing an
    /// inode can only take that inode off the list, so the walk sees the inodes the list
    /// held when the pass began, oldest first, at a cost of the inodes it visits.
    fn next_dirty_inode(&self, wb: MemcgId, after: Option<(u64, u32)>) -> Option<(u64, u32)> {
        let w = self.writeback.wb(wb)?;
        match after {
            None => w.b_dirty.first().copied(),
            Some(k) => w
                .b_dirty
                .range((Bound::Excluded(k), Bound::Unbounded))
                .next()
                .copied(),
        }
    }

    /// wb_start_background_writeback().
    pub(crate) fn wb_start_background_writeback(&mut self, wb: MemcgId) {
        let w = self.writeback.wb_mut(wb);
        if !w.bg_queued {
            w.bg_queued = true;
            let now = self.now();
            self.sched.push(now, Event::FlusherWb(wb));
        }
    }

    /// writeback_in_progress(): the wb's flusher has work queued or I/O in flight.
    fn writeback_in_progress(&self, wb: MemcgId) -> bool {
        let w = self.writeback.wb(wb).expect("the wb exists");
        w.bg_queued || w.writeback > 0
    }

    /// balance_dirty_pages(): throttle a writer of the wb `wb` by the stricter of the global
    /// and its memcg's domain, sleeping in virtual time. The kernel loops while the writer
    /// has a zero ratelimit; here one pass sleeps at most max_pause and the writer comes
    /// back after its next page (writeback completes only between the writer's steps).
    fn balance_dirty_pages(&mut self, pid: Pid, wb: MemcgId) {
        let now_j = self.jiffies();
        let pages_dirtied = self.task(pid).dirty.nr_dirtied;
        let mut g = self.gdtc(true);
        let nr_reclaimable = self.global_stat(Stat::FileDirty);
        if wb != ROOT_MEMCG {
            // mem_cgroup_wb_stats() flushes first.
            self.mem_cgroup_flush_stats();
        }
        let mut m = (wb != ROOT_MEMCG).then(|| self.mdtc(wb, &g, true));
        let g_free = g.dirty <= dirty_freerun_ceiling(g.thresh, g.bg_thresh);
        let m_free = m.is_none_or(|m| m.dirty <= dirty_freerun_ceiling(m.thresh, m.bg_thresh));
        if g_free && m_free {
            let intv = dirty_poll_interval(g.dirty, g.thresh);
            let m_intv = m.map_or(u64::MAX, |m| dirty_poll_interval(m.dirty, m.thresh));
            let d = &mut self.task_mut(pid).dirty;
            d.paused_when = now_j;
            d.nr_dirtied = 0;
            d.nr_dirtied_pause = intv.min(m_intv);
            if nr_reclaimable > g.bg_thresh && !self.writeback_in_progress(wb) {
                self.wb_start_background_writeback(wb);
            }
            return;
        }
        if !self.writeback_in_progress(wb) {
            self.wb_start_background_writeback(wb);
        }
        self.wb_dirty_limits(wb, &mut g);
        let mut exceeded = g.wb_dirty > g.wb_thresh && g.dirty > g.thresh;
        self.wb_position_ratio(wb, &mut g);
        let mut sdtc = g;
        if let Some(m) = m.as_mut() {
            self.wb_dirty_limits(wb, m);
            exceeded |= m.wb_dirty > m.wb_thresh && m.dirty > m.thresh;
            self.wb_position_ratio(wb, m);
            if m.pos_ratio < g.pos_ratio {
                sdtc = *m;
            }
        }
        if exceeded {
            self.writeback.wb_mut(wb).dirty_exceeded = true;
        }
        let bw_stamp = self.writeback.wb(wb).expect("the wb exists").bw_time_stamp;
        if now_j >= bw_stamp + BANDWIDTH_INTERVAL {
            self.wb_update_bandwidth(wb, Some((&g, m.as_ref())));
        }
        let dirty_ratelimit = self
            .writeback
            .wb(wb)
            .expect("the wb exists")
            .dirty_ratelimit;
        let task_ratelimit =
            ((dirty_ratelimit as u128 * sdtc.pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64;
        let max_pause = self.wb_max_pause(wb, sdtc.wb_dirty);
        let (min_pause, mut nr_dirtied_pause) =
            self.wb_min_pause(wb, max_pause, task_ratelimit, dirty_ratelimit);
        if task_ratelimit == 0 {
            // The kernel loops in here, pausing, until the ratelimit is positive again; the
            // writer comes back after its next page.
            nr_dirtied_pause = 1;
        }
        let pause = if let Some(period) = (HZ * pages_dirtied).checked_div(task_ratelimit) {
            let d = self.task(pid).dirty;
            let mut pause = period as i64;
            if d.paused_when != 0 {
                pause -= now_j as i64 - d.paused_when as i64;
            }
            if pause < min_pause as i64 {
                let d = &mut self.task_mut(pid).dirty;
                if pause < -(HZ as i64) {
                    d.paused_when = now_j;
                    d.nr_dirtied = 0;
                } else if period > 0 {
                    d.paused_when += period;
                    d.nr_dirtied = 0;
                } else if d.nr_dirtied_pause <= pages_dirtied {
                    d.nr_dirtied_pause += pages_dirtied;
                }
                return;
            }
            (pause as u64).min(max_pause)
        } else {
            max_pause
        };
        let ns = pause * NS_PER_JIFFY;
        self.spend_wait(ns, crate::psi::Stall::Io);
        let t = self.task_mut(pid);
        t.stats.io_wait_ns += ns;
        t.dirty.paused_when = now_j + pause;
        t.dirty.nr_dirtied = 0;
        t.dirty.nr_dirtied_pause = nr_dirtied_pause;
    }

    /// wb_over_bg_thresh(): should background writeback of `wb` go on? Like
    /// balance_dirty_pages, but without the pages already under writeback.
    pub fn wb_over_bg_thresh(&mut self, wb: MemcgId) -> bool {
        let g = self.gdtc(false);
        if g.dirty > g.bg_thresh {
            return true;
        }
        if self.cfg.dirty != crate::config::DirtyPolicy::Mainline {
            // Seed 001: the flusher goes on while any group is over its background limit.
            return self.seed001_over_bground_thresh();
        }
        let reclaimable = self.writeback.wb(wb).expect("the wb exists").reclaimable;
        if reclaimable > self.wb_calc_thresh(wb, false, g.bg_thresh) {
            return true;
        }
        if wb != ROOT_MEMCG {
            self.mem_cgroup_flush_stats();
            let m = self.mdtc(wb, &g, false);
            if m.dirty > m.bg_thresh {
                return true;
            }
            if reclaimable > self.wb_calc_thresh(wb, false, m.bg_thresh) {
                return true;
            }
        }
        false
    }

    /// Ask the flusher to write back everything now (wakeup_flusher_threads()).
    pub fn wakeup_flusher(&mut self) {
        if !self.writeback.kicked {
            self.writeback.kicked = true;
            let now = self.now();
            self.sched.push(now, Event::FlusherKick);
        }
    }

    /// writeback_chunk_size() of background writeback.
    fn background_chunk(&self, wb: MemcgId) -> u64 {
        let w = self.writeback.wb(wb).expect("the wb exists");
        let pages = (w.avg_write_bandwidth / 2).min(self.writeback.dom.dirty_limit / DIRTY_SCOPE);
        (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES
    }

    /// Write back up to `max` dirty pages of file `f`, from its first page, skipping those
    /// already under writeback (write_cache_pages() in WB_SYNC_NONE mode); returns how many.
    /// The pages are found through the mapping's marks, PAGECACHE_TAG_DIRTY less
    /// PAGECACHE_TAG_WRITEBACK (xarray_marks.rs), in index order.
    fn writeback_inode(&mut self, f: usize, max: u64, batch: &mut Vec<Pfn>) -> u64 {
        let mut n = 0;
        let mut from = 0;
        while n < max {
            let file = &self.files.v[f];
            let Some(idx) = file.marks.next_dirty_idle(from) else {
                break;
            };
            from = idx + 1;
            let pfn = crate::filemap::resident(file.entries[idx as usize])
                .expect("a page marked dirty is in the cache");
            debug_assert!(
                self.frames.test(pfn, pf::DIRTY) && !self.frames.test(pfn, pf::WRITEBACK),
                "the marks of page {idx} of file {f} disagree with its flags"
            );
            self.start_page_writeback(pfn);
            batch.push(pfn);
            n += 1;
            if batch.len() >= WB_BATCH {
                self.submit_writeback(std::mem::take(batch));
            }
        }
        n
    }

    /// The flusher's work for one wb: `All` writes every dirty page, `Kupdate` the inodes
    /// dirtied longer than dirty_expire ago, `Background` chunks while wb_over_bg_thresh().
    fn wb_writeback(&mut self, wb: MemcgId, work: WbWork) {
        let now = self.sched.clock;
        let expire_ns = self.writeback.sysctl.expire_cs * 10_000_000;
        let mut batch = Vec::new();
        // Bound: every pass writes at least one page of the wb's dirty pages.
        let mut guard = self.writeback.wb(wb).map_or(0, |w| w.reclaimable) + 1;
        loop {
            guard -= 1;
            if guard == 0 {
                break;
            }
            // Kupdate takes the inodes dirtied longer than dirty_expire ago, the oldest
            // ones of the list.
            let due = |&(when, _): &(u64, u32)| work != WbWork::Kupdate || when + expire_ns <= now;
            let Some(first) = self.next_dirty_inode(wb, None).filter(due) else {
                break;
            };
            let mut wrote = 0;
            let mut inode = Some(first);
            while let Some(at) = inode {
                let max = match work {
                    WbWork::Background => {
                        if !self.wb_over_bg_thresh(wb) {
                            break;
                        }
                        self.background_chunk(wb)
                    }
                    _ => u64::MAX,
                };
                wrote += self.writeback_inode(at.1 as usize, max, &mut batch);
                inode = self.next_dirty_inode(wb, Some(at)).filter(due);
            }
            if wrote == 0 || work != WbWork::Background || !self.wb_over_bg_thresh(wb) {
                break;
            }
        }
        if !batch.is_empty() {
            self.submit_writeback(batch);
        }
        // do_writepages(): under constant writeback the bandwidth estimate still moves.
        if let Some(w) = self.writeback.wb(wb) {
            if self.jiffies() >= w.bw_time_stamp + BANDWIDTH_INTERVAL {
                self.wb_update_bandwidth(wb, None);
            }
        }
    }

    /// The periodic flusher (wb_workfn on its timer): kupdate-style writeback of expired
    /// inodes for every wb, then background writeback where a wb is over its threshold.
    pub fn flusher_run(&mut self) {
        let now = self.sched.clock;
        self.writeback.periodic_armed = false;
        self.schedule_periodic_flush(now);
        for wb in self.dirty_wbs() {
            self.wb_writeback(wb, WbWork::Kupdate);
            if self.wb_over_bg_thresh(wb) {
                self.wb_writeback(wb, WbWork::Background);
            }
        }
    }

    /// wakeup_flusher_threads(): every wb writes everything.
    pub fn flusher_kick(&mut self) {
        self.writeback.kicked = false;
        for wb in self.dirty_wbs() {
            self.wb_writeback(wb, WbWork::All);
        }
    }

    /// Queued background writeback of one wb.
    pub fn flusher_wb(&mut self, wb: MemcgId) {
        let Some(w) = self
            .writeback
            .wbs
            .get_mut(wb as usize)
            .and_then(|w| w.as_deref_mut())
        else {
            return;
        };
        w.bg_queued = false;
        if self.wb_over_bg_thresh(wb) {
            self.wb_writeback(wb, WbWork::Background);
        }
    }

    fn dirty_wbs(&self) -> Vec<MemcgId> {
        self.writeback
            .wbs
            .iter()
            .flatten()
            .filter(|w| !w.b_dirty.is_empty())
            .map(|w| w.memcg)
            .collect()
    }

    fn submit_writeback(&mut self, pages: Vec<Pfn>) {
        // The writer (the flusher thread, or a task writing its own pages) spends the CPU
        // of write_cache_pages() and the bio before the batch reaches the device.
        self.spend_cpu(self.cfg.costs.writepage_ns * pages.len() as u64);
        let now = self.now();
        let runs = crate::blkdev::page_runs(
            pages
                .iter()
                .map(|&p| {
                    let m = self.frames.meta[p as usize].map;
                    crate::blkdev::file_pos(file_of(self, p), m.index as u64)
                })
                .collect(),
        );
        let done = self.device.submit(now, &runs);
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
        self.writeback.inflight_batches += 1;
        self.sched.push(done, Event::WritebackDone(id));
    }

    /// folio_end_writeback() for a completed batch; the wbs that finished their I/O update
    /// their bandwidth and go on with background writeback while over the threshold.
    pub fn writeback_done(&mut self, id: u32) {
        let Some(pages) = self.writeback.inflight[id as usize].take() else {
            return;
        };
        self.writeback.free_ids.push(id);
        self.writeback.inflight_batches -= 1;
        let mut wbs: Vec<MemcgId> = Vec::new();
        for pfn in pages {
            // The page may have been truncated (freed) meanwhile.
            if !self.frames.test(pfn, pf::WRITEBACK) {
                continue;
            }
            let wb = self.files.v[file_of(self, pfn)].wb;
            if !wbs.contains(&wb) {
                wbs.push(wb);
            }
            self.end_page_writeback(pfn, true);
            self.file_mark_ondisk(pfn);
            if self.frames.test_clear(pfn, pf::RECLAIM) {
                self.lru_rotate_to_tail(pfn);
            }
        }
        let now_j = self.jiffies();
        for wb in wbs {
            let Some(w) = self.writeback.wb(wb) else {
                continue;
            };
            if w.writeback > 0 {
                continue;
            }
            // wb_inode_writeback_end(): the wb's writeback went idle; its bandwidth estimate
            // catches up (the kernel batches this in a work item BANDWIDTH_INTERVAL later).
            // While writeback goes on, the estimates move from balance_dirty_pages() and
            // from the flusher's submissions (do_writepages()).
            if now_j >= w.bw_time_stamp + BANDWIDTH_INTERVAL {
                self.wb_update_bandwidth(wb, None);
            }
            let w = self.writeback.wb(wb).expect("the wb exists");
            if !w.bg_queued && self.wb_over_bg_thresh(wb) {
                self.wb_start_background_writeback(wb);
            }
        }
    }
}

/// What a flusher pass writes (struct wb_writeback_work's reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WbWork {
    All,
    Kupdate,
    Background,
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::config::MachineConfig;
    use crate::program::{Program, Step};
    use crate::stat::Stat;
    use crate::task::{FileId, TaskCtx};
    use crate::{Machine, ROOT_MEMCG};

    #[test]
    fn the_control_line_is_cubic_around_the_setpoint() {
        use super::pos_ratio;
        // freerun 1000, limit 2000, setpoint 1500; the divisor is (limit - setpoint) | 1
        // as in the kernel, so the end points fall just inside 2.0 and 0.
        assert_eq!(pos_ratio(1500, 1500, 2000), 1024);
        assert_eq!(pos_ratio(1500, 1000, 2000), 2039);
        assert_eq!(pos_ratio(1500, 500, 2000), 2048, "clamped at 2.0");
        assert_eq!(pos_ratio(1500, 2000, 2000), 0);
        // Halfway to the limit: about 1 - 0.5^3.
        assert_eq!(pos_ratio(1500, 1750, 2000), 897);
    }

    /// Writes `pages` pages of a file, then holds (the file "data") or exits (a file of
    /// its own).
    pub(crate) struct Writer {
        pages: u64,
        next: u64,
        file: Option<FileId>,
        exit: bool,
    }

    impl Writer {
        /// Writes the file "data", then holds its memory.
        pub(crate) fn new(pages: u64) -> Writer {
            Writer {
                pages,
                next: 0,
                file: None,
                exit: false,
            }
        }

        /// Writes a file named after its pid, then exits.
        pub(crate) fn exiting(pages: u64) -> Writer {
            Writer {
                exit: true,
                ..Writer::new(pages)
            }
        }
    }

    impl Program for Writer {
        fn name(&self) -> &str {
            "writer"
        }
        fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
            let f = match self.file {
                Some(f) => f,
                None => {
                    let name = if self.exit {
                        format!("w{}", cx.pid())
                    } else {
                        "data".to_string()
                    };
                    *self.file.insert(cx.open(&name))
                }
            };
            while self.next < self.pages && cx.has_time() {
                if cx.write(f, self.next).is_err() {
                    return Step::Continue;
                }
                self.next += 1;
            }
            if self.next < self.pages {
                Step::Continue
            } else if self.exit {
                Step::Exit(0)
            } else {
                Step::Hold
            }
        }
    }

    #[test]
    fn a_writer_is_paced_to_the_device_below_the_dirty_limit() {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "256M").unwrap();
        cfg.set("disk_bandwidth", "50M").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        // 512M written: twice the RAM.
        let w = Writer::new(131_072);
        let pid = m.spawn(a, "writer".into(), 0, Box::new(w));
        let mut peak = 0;
        let mut t = 0;
        while m.task(pid).state == crate::task::TaskState::Runnable && t < 100_000_000_000 {
            t += 100_000_000;
            m.run_until(t, |_| false);
            let dirty = m.global_stat(Stat::FileDirty) + m.global_stat(Stat::Writeback);
            let (thresh, _) = m.global_dirty_limits();
            assert!(
                dirty <= thresh + 64,
                "dirty {dirty} over the limit {thresh}"
            );
            peak = peak.max(dirty);
        }
        assert!(m.task(pid).state != crate::task::TaskState::Runnable);
        // Paced to the device: 512M at 50M/s takes about 10 s, less the dirty pages that
        // were still being written at the end.
        let secs = t as f64 / 1e9;
        assert!((7.0..12.0).contains(&secs), "took {secs} s");
        assert!(m.task(pid).stats.io_wait_ns > 5_000_000_000);
        // The writer ran past freerun: dirty pages reached well above the background ratio.
        let (thresh, bg) = m.global_dirty_limits();
        assert!(
            peak > bg && peak <= thresh + 64,
            "peak {peak}, bg {bg}, thresh {thresh}"
        );
    }

    /// Busy for ever, on the CPU (in quanta of 1.001 ms).
    struct Spinner;

    impl Program for Spinner {
        fn name(&self) -> &str {
            "spinner"
        }
        fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
            while cx.has_time() {
                cx.compute(7_000);
            }
            Step::Continue
        }
    }

    /// The flusher is a thread: it pays writepage_cost per page it writes back, on a CPU of
    /// the machine, and waits for one in the run queue when the CPUs are busy.
    #[test]
    fn the_flusher_takes_cpu_time_for_what_it_writes() {
        let run = |spinners: usize| {
            let mut cfg = MachineConfig::default();
            cfg.set("cpus", "1").unwrap();
            cfg.set("writepage_cost", "2us").unwrap();
            let mut m = Machine::new(cfg).unwrap();
            let a = m.memcg_create(ROOT_MEMCG).unwrap();
            m.spawn(a, "writer".into(), 0, Box::new(Writer::new(2000)));
            for _ in 0..spinners {
                m.spawn(a, "spinner".into(), 0, Box::new(Spinner));
            }
            // The periodic flusher's first run, at 5 s, writes all 2000 pages: a wb with no
            // completed writeout yet has no share of the background threshold
            // (wb_over_bg_thresh()'s WB_RECLAIMABLE test).
            m.run_until(36_000_000_000, |m| m.writeback.flusher_cpu_ns > 0);
            let started = m.sched.clock;
            m.run_until(36_000_000_000, |_| false);
            assert_eq!(m.stat_total(a, Stat::FileDirty), 0);
            assert_eq!(m.writeback.nr_written, 2000);
            (m.writeback.flusher_cpu_ns, started)
        };
        let (cpu, idle_start) = run(0);
        assert_eq!(cpu, 2000 * 2000);
        // Beside a task that never sleeps, the flusher waits for the end of the task's
        // quantum (1 ms at most), then does all of the work.
        let (cpu, busy_start) = run(1);
        assert_eq!(cpu, 2000 * 2000);
        assert!(
            busy_start > idle_start && busy_start <= idle_start + 1_000_000,
            "{idle_start} {busy_start}"
        );
    }

    /// 3.11 flags a zone ZONE_WRITEBACK from any reclaim's batch that finds its pages under
    /// writeback, memcg reclaim included; 6.1 has no such zone flag (only kswapd's
    /// PGDAT_WRITEBACK).
    #[test]
    fn memcg_reclaim_flags_zone_writeback_only_under_3_11() {
        let flagged = |era: &str| {
            let mut cfg = MachineConfig::default();
            cfg.set("memory", "256M").unwrap();
            cfg.set("cgroup", "v1").unwrap();
            cfg.set("reclaim", era).unwrap();
            let mut m = Machine::new(cfg).unwrap();
            let a = m.memcg_create(ROOT_MEMCG).unwrap();
            m.spawn(a, "writer".into(), 0, Box::new(Writer::new(1000)));
            m.run_until(1_000_000_000, |_| false);
            // Every dirty page goes under writeback; the writes end later in virtual time.
            m.flusher_kick();
            assert_eq!(m.stat_total(a, Stat::Writeback), 1000);
            assert_eq!(m.try_to_free_mem_cgroup_pages(a, 32, true, false, None), 0);
            m.reclaim_wait.zone_writeback
        };
        assert!(flagged("3.11").iter().any(|&f| f));
        assert!(flagged("6.1").iter().all(|&f| !f));
    }

    /// 3.11 counted anon pages as dirtyable memory while swap had a free slot; 3.14 and 6.1
    /// count free and file pages only.
    #[test]
    fn anon_pages_are_dirtyable_only_under_3_11_with_free_swap() {
        let dirtyable = |era: &str, swap: &str| {
            let mut cfg = MachineConfig::default();
            cfg.set("memory", "256M").unwrap();
            cfg.set("swap", swap).unwrap();
            cfg.set("reclaim", era).unwrap();
            let mut m = Machine::new(cfg).unwrap();
            let a = m.memcg_create(ROOT_MEMCG).unwrap();
            let t = crate::page_io::tests::Toucher {
                pages: 16_384,
                next: 0,
                vma: None,
                exit: false,
            };
            m.spawn(a, "toucher".into(), 0, Box::new(t));
            m.run_until(2_000_000_000, |_| false);
            let anon = m.global_stat(Stat::ActiveAnon) + m.global_stat(Stat::InactiveAnon);
            assert!(anon >= 16_384, "{era}: {anon} anon pages");
            let free = m.nr_free_pages() - m.zones.totalreserve_pages();
            let file = m.global_stat(Stat::ActiveFile) + m.global_stat(Stat::InactiveFile);
            (m.global_dirtyable_memory(), free + file + 1, anon)
        };
        let (d, base, _) = dirtyable("6.1", "256M");
        assert_eq!(d, base);
        let (d, base, anon) = dirtyable("3.11", "256M");
        assert_eq!(d, base + anon);
        let (d, base, _) = dirtyable("3.11", "0");
        assert_eq!(d, base);
    }

    #[test]
    fn dirty_pages_are_written_back_and_become_reclaimable() {
        let mut m = Machine::new(MachineConfig::default()).unwrap();
        m.check_invariants = true;
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let w = Writer::new(1000);
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

    /// A writer in a cgroup v1 group much smaller than the global dirty limit: v1 has no
    /// memcg dirty domain, so the group fills with dirty pages; its limit reclaim kicks the
    /// flusher, sleeps in reclaim_throttle() and waits on pages under writeback
    /// (shrink_folio_list()'s case 3) instead of OOM-killing the writer.
    #[test]
    fn a_writer_in_a_small_v1_group_sleeps_in_reclaim_instead_of_oom() {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "1G").unwrap();
        cfg.set("cgroup", "v1").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        m.check_invariants = true;
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        m.write_memory_max(a, 64 << 8);
        let w = Writer::new(65_536);
        let pid = m.spawn(a, "writer".into(), 0, Box::new(w));
        let mut slept = false;
        run_watching(&mut m, pid, 60_000_000_000, |m| {
            slept |= m.task(pid).block.is_some();
            assert!(m.memory.get(a as usize).usage <= 64 << 8);
        });
        assert_eq!(m.task(pid).state, crate::task::TaskState::Holding);
        assert_eq!(
            m.memcg(a).events_local[crate::memcontrol::MemcgEvent::OomKill as usize],
            0
        );
        assert!(slept, "the writer never slept in reclaim");
        assert!(m.task(pid).stats.reclaim_ns > 0);
        // Nobody is left on the wait queues.
        assert!(m.reclaim_wait.sleepers.is_empty());
        assert!(m.task(pid).block.is_none() && m.task(pid).alloc_retry.is_none());
    }

    /// Run until `pid` is no longer runnable (or `limit_ns`), calling `each` every 100 ms.
    fn run_watching(
        m: &mut Machine,
        pid: crate::program::Pid,
        limit_ns: u64,
        mut each: impl FnMut(&Machine),
    ) -> u64 {
        let mut t = 0;
        while m.task(pid).state == crate::task::TaskState::Runnable && t < limit_ns {
            t += 100_000_000;
            m.run_until(t, |_| false);
            each(m);
        }
        t
    }

    #[test]
    fn a_writer_in_a_small_group_is_held_by_its_memcg_domain() {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "1G").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        m.check_invariants = true;
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        m.write_memory_max(a, 256 << 8); // 256M in pages
                                         // 1G written through a 256M group.
        let w = Writer::new(262_144);
        let pid = m.spawn(a, "writer".into(), 0, Box::new(w));
        let mut worst = 0u64;
        run_watching(&mut m, pid, 60_000_000_000, |m| {
            let dirty = m.stat_total(a, Stat::FileDirty) + m.stat_total(a, Stat::Writeback);
            let (g, _) = m.global_dirty_limits();
            let gd = m.gdtc(true);
            let md = m.mdtc(a, &gd, true);
            let limit = md.thresh.max(m.writeback.wb(a).unwrap().dom.dirty_limit);
            worst = worst.max(dirty.saturating_sub(limit));
            assert!(
                md.thresh < g,
                "the memcg domain is the stricter: {} vs {g}",
                md.thresh
            );
        });
        // It completes, without an OOM kill, its dirty pages held near the memcg domain's
        // limit (a pause's worth over it at most), far below the global one.
        assert_eq!(
            m.task(pid).state,
            crate::task::TaskState::Holding,
            "the writer must finish"
        );
        assert_eq!(
            m.memcg(a).events_local[crate::memcontrol::MemcgEvent::OomKill as usize],
            0
        );
        assert!(
            worst <= 2048,
            "dirty went {worst} pages over the memcg limit"
        );
        assert!(m.writeback.wb(a).is_some());
        assert!(m.writeback.nr_written > 0 && m.writeback.nr_dirtied >= 262_144);
    }

    #[test]
    fn a_writer_elsewhere_is_not_throttled_by_a_full_memcg_domain() {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "1G").unwrap();
        cfg.set("disk_bandwidth", "50M").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let b = m.memcg_create(ROOT_MEMCG).unwrap();
        m.write_memory_max(a, 128 << 8);
        // A streams 1G at a 50M/s disk: it lives at its memcg domain's limit.
        let wa = Writer::new(262_144);
        let pa = m.spawn(a, "writer".into(), 0, Box::new(wa));
        m.run_until(3_000_000_000, |_| false);
        assert!(
            m.task(pa).stats.io_wait_ns > 1_000_000_000,
            "A is throttled"
        );
        // B writes 8M into another file: well below both of its limits, it runs free.
        struct Small(u64, Option<FileId>);
        impl Program for Small {
            fn name(&self) -> &str {
                "small"
            }
            fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
                let f = *self.1.get_or_insert_with(|| cx.open("other"));
                while self.0 < 2048 && cx.has_time() {
                    if cx.write(f, self.0).is_err() {
                        return Step::Continue;
                    }
                    self.0 += 1;
                }
                if self.0 < 2048 {
                    Step::Continue
                } else {
                    Step::Exit(0)
                }
            }
        }
        let pb = m.spawn(b, "small".into(), 0, Box::new(Small(0, None)));
        m.run_until(4_000_000_000, |_| false);
        assert!(m.task(pb).state != crate::task::TaskState::Runnable);
        assert_eq!(m.task(pb).stats.io_wait_ns, 0, "B never paused");
        assert_eq!(m.files.v[m.files.by_name["other"] as usize].wb, b);
    }
}
