//! Per-memcg dirty limits as seed 001 proposed them (2010, "memcg: per cgroup dirty page
//! accounting" v4; never merged), on cgroup v1, with `machine dirty=seed001` or
//! `dirty=seed001-hier`.
//!
//! * memory.dirty_ratio, memory.dirty_limit_in_bytes, memory.dirty_background_ratio and
//!   memory.dirty_background_limit_in_bytes (struct vm_dirty_param per memcg): a new group
//!   copies its parent's values, a top-level group the system's (/proc/sys/vm/dirty_*);
//!   a ratio and its bytes twin exclude each other, as the sysctls do.
//! * mem_cgroup_dirty_info(): the group's dirtyable memory (its file pages, its anon pages
//!   when it can swap, and the headroom under its limit, at most the system's dirtyable
//!   memory), its thresholds from its parameters, its dirty and writeback pages.
//! * balance_dirty_pages() of 2.6.36 with the series' memcg check: below the midpoint of
//!   background and dirty threshold in both the system and the memcg the writer runs free;
//!   over a dirty threshold (the bdi's share of the system's, the system's, or the memcg's)
//!   it writes a chunk of the bdi's dirty inodes itself if the bdi is over its share, else
//!   sleeps, the pause doubling from one jiffy to HZ/10 while the excess lasts; background
//!   writeback starts when the system or the memcg passes its background threshold.
//! * The series' shortcomings, as it had them: writeback triggered by a memcg's limit writes
//!   the bdi's inodes of any cgroup (on v1 every inode is on the root wb); and under
//!   `dirty=seed001` a group with memory.use_hierarchy set has no dirty limits of its own
//!   (its files show and accept only the system's behaviour). `dirty=seed001-hier` applies
//!   the fix the thread sketches: mem_cgroup_dirty_info() walks up from the writer's group
//!   and takes the group closest to its foreground limit for the foreground check and the
//!   one closest to its background limit for the background check, counting each group's
//!   subtree when it has use_hierarchy.
//!
//! * 2.6.36's task_dirty_limit(): a task's threshold is the bdi's less up to an eighth of
//!   it, in proportion to the task's share of recent dirtying (lib/proportions.c's
//!   prop_local_single over vm_dirties, whose period halves every task's count), so a light
//!   writer such as tar keeps some headroom above a heavy one such as dd.
//!
//! Simplified (docs/FIDELITY.md): the kernel loops in balance_dirty_pages() until the excess
//! is gone; here each pass sleeps once and the writer comes back after its next page, so the
//! loop runs across the writer's steps; the bdi's share of the system threshold is the whole
//! of it (one device); the proportions' period follows the system threshold of the moment
//! (the kernel sets it from vm.dirty_ratio at boot and on sysctl writes).

use crate::config::{DirtyPolicy, PAGE_SIZE};
use crate::machine::Machine;
use crate::memcontrol::{MemcgId, HZ, ROOT_MEMCG};
use crate::program::Pid;
use crate::stat::Stat;

/// struct vm_dirty_param: a ratio (percent of dirtyable memory) or a byte count, for the
/// foreground and the background limit; the one of each pair in use is nonzero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirtyParam {
    pub ratio: u64,
    pub bytes: u64,
    pub background_ratio: u64,
    pub background_bytes: u64,
}

impl DirtyParam {
    /// Set the foreground or `background` limit as a ratio or (`bytes`) a byte count; the
    /// other form of the same limit becomes 0, as the series' write handlers do.
    pub fn set(&mut self, background: bool, bytes: bool, v: u64) {
        let (ratio_slot, bytes_slot) = if background {
            (&mut self.background_ratio, &mut self.background_bytes)
        } else {
            (&mut self.ratio, &mut self.bytes)
        };
        if bytes {
            (*bytes_slot, *ratio_slot) = (v, 0);
        } else {
            (*ratio_slot, *bytes_slot) = (v, 0);
        }
    }
}

/// struct dirty_info: thresholds and counts of one domain, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyInfo {
    pub thresh: u64,
    pub bg_thresh: u64,
    pub dirty: u64,
    pub writeback: u64,
}

impl DirtyInfo {
    fn over_freerun(&self) -> bool {
        self.dirty + self.writeback > (self.bg_thresh + self.thresh) / 2
    }
    fn exceeded(&self) -> bool {
        self.dirty + self.writeback > self.thresh
    }
}

/// task_dirty_limit() takes at most 1/TASK_LIMIT_FRACTION of the bdi's threshold away.
const TASK_LIMIT_FRACTION: u64 = 8;

/// The longest pause of 2.6.36's loop (HZ/10), in jiffies.
const MAX_PAUSE: u64 = HZ / 10;

/// (thresh, bg_thresh) for `avail` dirtyable pages under `p`; a background threshold at or
/// above the foreground one is halved, as global_dirty_limits() does.
fn thresholds(p: &DirtyParam, avail: u64) -> (u64, u64) {
    let thresh = if p.bytes > 0 {
        p.bytes.div_ceil(PAGE_SIZE)
    } else {
        p.ratio * avail / 100
    };
    let mut bg = if p.background_bytes > 0 {
        p.background_bytes.div_ceil(PAGE_SIZE)
    } else {
        p.background_ratio * avail / 100
    };
    if bg >= thresh {
        bg = thresh / 2;
    }
    (thresh, bg)
}

impl Machine {
    /// The system's dirty parameters (/proc/sys/vm/dirty_*).
    pub fn system_dirty_param(&self) -> DirtyParam {
        let s = self.writeback.sysctl;
        DirtyParam {
            ratio: s.ratio,
            bytes: s.bytes,
            background_ratio: s.background_ratio,
            background_bytes: s.background_bytes,
        }
    }

    /// A new memcg copies its parent's dirty parameters (a top-level one the system's) and,
    /// as in 2.6.36, its use_hierarchy.
    pub(crate) fn memcg_dirty_init(&mut self, id: MemcgId, parent: MemcgId) {
        let param = if parent == ROOT_MEMCG {
            self.system_dirty_param()
        } else {
            self.memcg(parent).dirty_param
        };
        let use_hierarchy = self.memcg(parent).use_hierarchy;
        let m = self.memcg_mut(id);
        m.dirty_param = param;
        m.use_hierarchy = use_hierarchy;
    }

    /// mem_cgroup_has_dirty_limit(): the group has limits of its own.
    pub fn memcg_has_dirty_limit(&self, memcg: MemcgId) -> bool {
        match self.cfg.dirty {
            DirtyPolicy::Mainline | DirtyPolicy::Global => false,
            DirtyPolicy::Seed001 => memcg != ROOT_MEMCG && !self.memcg(memcg).use_hierarchy,
            DirtyPolicy::Seed001Hier => memcg != ROOT_MEMCG,
        }
    }

    /// The dirty parameters memory.dirty_* show for `memcg`: its own, or the system's where
    /// it has none.
    pub fn memcg_dirty_param(&self, memcg: MemcgId) -> DirtyParam {
        if self.memcg_has_dirty_limit(memcg) {
            self.memcg(memcg).dirty_param
        } else {
            self.system_dirty_param()
        }
    }

    /// The system's dirty info (global_dirty_info()).
    fn system_dirty_info(&self) -> DirtyInfo {
        let avail = self.global_dirtyable_memory();
        let (thresh, bg_thresh) = thresholds(&self.system_dirty_param(), avail);
        DirtyInfo {
            thresh,
            bg_thresh,
            dirty: self.global_stat(Stat::FileDirty),
            writeback: self.global_stat(Stat::Writeback),
        }
    }

    /// mem_cgroup_dirty_info() of one group: its subtree's pages when it has
    /// use_hierarchy, its own otherwise.
    fn one_memcg_dirty_info(&self, memcg: MemcgId, sys_avail: u64) -> DirtyInfo {
        let hier = self.memcg(memcg).use_hierarchy;
        let stat = |s: Stat| {
            if hier {
                self.stat_total(memcg, s)
            } else {
                self.stat_local(memcg, s)
            }
        };
        let mut avail = stat(Stat::ActiveFile) + stat(Stat::InactiveFile);
        if self.mem_cgroup_get_nr_swap_pages(memcg) > 0 {
            avail += stat(Stat::ActiveAnon) + stat(Stat::InactiveAnon);
        }
        let c = self.memory.get(memcg as usize);
        avail += c.max.saturating_sub(c.usage);
        let avail = avail.min(sys_avail);
        let (thresh, bg_thresh) = thresholds(&self.memcg(memcg).dirty_param, avail);
        DirtyInfo {
            thresh,
            bg_thresh,
            dirty: stat(Stat::FileDirty),
            writeback: stat(Stat::Writeback),
        }
    }

    /// The memcg side of the check for a writer in `memcg`: (foreground, background) info,
    /// or None when no group limits it. Under seed001-hier each is the group of the chain
    /// closest to (or furthest over) that limit.
    pub fn memcg_dirty_info(&self, memcg: MemcgId) -> Option<(DirtyInfo, DirtyInfo)> {
        let sys_avail = self.global_dirtyable_memory();
        match self.cfg.dirty {
            DirtyPolicy::Mainline | DirtyPolicy::Global => None,
            DirtyPolicy::Seed001 => self.memcg_has_dirty_limit(memcg).then(|| {
                let i = self.one_memcg_dirty_info(memcg, sys_avail);
                (i, i)
            }),
            DirtyPolicy::Seed001Hier => {
                let mut best: Option<(DirtyInfo, DirtyInfo)> = None;
                let mut cur = Some(memcg);
                while let Some(m) = cur {
                    if m == ROOT_MEMCG {
                        break;
                    }
                    let i = self.one_memcg_dirty_info(m, sys_avail);
                    let fg_room = |d: &DirtyInfo| d.thresh as i64 - (d.dirty + d.writeback) as i64;
                    let bg_room = |d: &DirtyInfo| d.bg_thresh as i64 - d.dirty as i64;
                    best = Some(match best {
                        None => (i, i),
                        Some((f, b)) => (
                            if fg_room(&i) < fg_room(&f) { i } else { f },
                            if bg_room(&i) < bg_room(&b) { i } else { b },
                        ),
                    });
                    cur = self.memcg(m).parent;
                }
                best
            }
        }
    }

    /// Is any group with dirty limits over its background threshold? (Background writeback
    /// goes on while one is, writing inodes of any cgroup.)
    pub(crate) fn seed001_over_bground_thresh(&self) -> bool {
        let sys_avail = self.global_dirtyable_memory();
        let mut all = Vec::new();
        self.memcg_walk(
            ROOT_MEMCG,
            |_, _| crate::memcontrol::IterVisit::Visit,
            &mut all,
        );
        all.into_iter().any(|m| {
            self.memcg_has_dirty_limit(m) && {
                let i = self.one_memcg_dirty_info(m, sys_avail);
                i.dirty > i.bg_thresh
            }
        })
    }

    /// Half the period of vm_dirties, in pages dirtied: calc_period_shift() is
    /// 2 + ilog2(dirty threshold - 1), and a task's count halves every 2^(shift-1) events.
    fn dirties_half_period(&self) -> u64 {
        let thresh = self.system_dirty_info().thresh.max(2);
        let shift = 2 + (thresh - 1).ilog2();
        1 << (shift - 1)
    }

    /// prop_norm_single(): age the task's count by the half periods that have passed.
    fn task_dirties_norm(&mut self, pid: Pid) {
        let half = self.dirties_half_period();
        let global_period = self.writeback.nr_dirtied & !(half - 1);
        let d = &mut self.task_mut(pid).dirty;
        if d.dirties_period != global_period {
            let missed = global_period.saturating_sub(d.dirties_period) / half;
            d.dirties = if missed < 64 { d.dirties >> missed } else { 0 };
            d.dirties_period = global_period;
        }
    }

    /// task_dirty_inc(): the task dirtied one more page (the global count is nr_dirtied,
    /// already raised by account_page_dirtied()).
    pub(crate) fn task_dirty_inc(&mut self, pid: Pid) {
        self.task_dirties_norm(pid);
        self.task_mut(pid).dirty.dirties += 1;
    }

    /// task_dirty_limit(): `bdi_thresh` less the task's share of an eighth of it, never
    /// below half of it.
    fn task_dirty_limit(&mut self, pid: Pid, bdi_thresh: u64) -> u64 {
        self.task_dirties_norm(pid);
        let half = self.dirties_half_period();
        let num = self.task(pid).dirty.dirties;
        let den = half + (self.writeback.nr_dirtied & (half - 1));
        let cut = (bdi_thresh / TASK_LIMIT_FRACTION) as u128 * num as u128 / den as u128;
        bdi_thresh
            .saturating_sub(cut.min(u64::MAX as u128) as u64)
            .max(bdi_thresh / 2)
    }

    /// balance_dirty_pages() of the series (2.6.36 with the memcg check), one pass.
    pub(crate) fn seed001_balance_dirty_pages(&mut self, pid: Pid, wb: MemcgId) {
        let memcg = self.task(pid).memcg;
        let sys = self.system_dirty_info();
        let mc = self.memcg_dirty_info(memcg);
        let (mfg, mbg) = mc.unwrap_or((sys, sys));
        let ratelimit = self.seed001_ratelimit_pages();
        let dirtied = self.task(pid).dirty.nr_dirtied;
        let write_chunk = dirtied.max(ratelimit) * 3 / 2;
        if !sys.over_freerun() && !mfg.over_freerun() {
            self.seed001_done(pid, wb, ratelimit, false, &sys, &mbg);
            return;
        }
        // One bdi: its share of the system threshold is the whole of it, less the task's
        // cut.
        let task_thresh = self.task_dirty_limit(pid, sys.thresh);
        let bdi_exceeded = sys.dirty + sys.writeback > task_thresh;
        if !bdi_exceeded && !sys.exceeded() && !mfg.exceeded() {
            self.seed001_done(pid, wb, ratelimit, false, &sys, &mbg);
            return;
        }
        if sys.dirty > task_thresh {
            // writeback_inodes_wb(): the writer writes a chunk of the bdi's dirty inodes,
            // oldest first, whatever cgroup dirtied them.
            let written = self.writeback_inodes_wb(wb, write_chunk);
            if written >= write_chunk {
                self.seed001_done(pid, wb, ratelimit, true, &sys, &mbg);
                return;
            }
        }
        // io_schedule_timeout(pause), the pause doubling while the excess lasts; the writer
        // comes back after its next page, as the kernel's loop would check again.
        let d = &mut self.task_mut(pid).dirty;
        let pause = d.seed_pause.clamp(1, MAX_PAUSE);
        d.seed_pause = (pause * 2).min(MAX_PAUSE);
        d.nr_dirtied = 0;
        d.nr_dirtied_pause = 1;
        let ns = pause * 1_000_000_000 / HZ;
        self.spend_wait(ns, crate::psi::Stall::Io);
        self.task_mut(pid).stats.io_wait_ns += ns;
        self.writeback.wb_mut(wb).dirty_exceeded = true;
        self.seed001_background(wb, &sys, &mbg);
    }

    /// The loop is left: reset the pause and the ratelimit, start background writeback if
    /// the system or the memcg is over its background threshold.
    fn seed001_done(
        &mut self,
        pid: Pid,
        wb: MemcgId,
        ratelimit: u64,
        exceeded: bool,
        sys: &DirtyInfo,
        mbg: &DirtyInfo,
    ) {
        let d = &mut self.task_mut(pid).dirty;
        d.seed_pause = 1;
        d.nr_dirtied = 0;
        d.nr_dirtied_pause = if exceeded { 8 } else { ratelimit };
        self.writeback.wb_mut(wb).dirty_exceeded = exceeded;
        self.seed001_background(wb, sys, mbg);
    }

    fn seed001_background(&mut self, wb: MemcgId, sys: &DirtyInfo, mbg: &DirtyInfo) {
        if sys.dirty > sys.bg_thresh || mbg.dirty > mbg.bg_thresh {
            self.wb_start_background_writeback(wb);
        }
    }

    /// ratelimit_pages of 2.6.36: a 32nd of memory per CPU, between 16 pages and 4 MiB.
    fn seed001_ratelimit_pages(&self) -> u64 {
        let per_cpu = self.totalram_pages / (self.cfg.cpus as u64 * 32);
        per_cpu.clamp(16, (4 << 20) / PAGE_SIZE)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::MachineConfig;
    use crate::page_writeback::tests::Writer;
    use crate::stat::Stat;
    use crate::{Machine, MemcgId, ROOT_MEMCG};

    fn machine(dirty: &str) -> Machine {
        let mut cfg = MachineConfig::default();
        cfg.set("memory", "2G").unwrap();
        cfg.set("cgroup", "v1").unwrap();
        cfg.set("dirty", dirty).unwrap();
        cfg.set("disk_bandwidth", "50M").unwrap();
        let mut m = Machine::new(cfg).unwrap();
        m.check_invariants = true;
        m
    }

    /// Run a 400M writer in `memcg` for 4 s; the most dirty + writeback pages `watch` had.
    fn peak_dirty(m: &mut Machine, memcg: MemcgId, watch: MemcgId) -> u64 {
        let w = Writer::exiting(102_400);
        m.spawn(memcg, "writer".into(), 0, Box::new(w));
        let mut peak = 0;
        for i in 1..=40u64 {
            m.run_until(i * 100_000_000, |_| false);
            peak = peak
                .max(m.stat_total(watch, Stat::FileDirty) + m.stat_total(watch, Stat::Writeback));
        }
        peak
    }

    const LIMIT: u64 = 32 << 8; // 32M in pages
    /// A chunk the writer writes itself and a pause's worth of pages may pass the limit.
    const SLACK: u64 = 8 << 8;

    #[test]
    fn a_group_dirty_limit_holds_its_writer() {
        let mut m = machine("seed001");
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        m.memcg_mut(a).dirty_param.set(false, true, LIMIT * 4096);
        let peak = peak_dirty(&mut m, a, a);
        assert!(peak <= LIMIT + SLACK, "peak {peak}");
        assert!(
            peak >= LIMIT / 2,
            "peak {peak}: the writer never reached its limit"
        );
        // Without the group limit, the system's (20 % of about 2G) holds it much higher.
        let mut m = machine("seed001");
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let peak = peak_dirty(&mut m, a, a);
        assert!(peak > 4 * LIMIT, "peak {peak}");
    }

    #[test]
    fn use_hierarchy_disables_the_limits_under_seed001_but_not_with_the_fix() {
        for (dirty, held) in [("seed001", false), ("seed001-hier", true)] {
            let mut m = machine(dirty);
            let p = m.memcg_create(ROOT_MEMCG).unwrap();
            m.memcg_mut(p).use_hierarchy = true;
            m.memcg_mut(p).dirty_param.set(false, true, LIMIT * 4096);
            // The child inherits use_hierarchy and the parent's limit, then loosens its own.
            let c = m.memcg_create(p).unwrap();
            assert!(m.memcg(c).use_hierarchy);
            m.memcg_mut(c)
                .dirty_param
                .set(false, true, 16 * LIMIT * 4096);
            assert_eq!(m.memcg_has_dirty_limit(c), held, "{dirty}");
            let peak = peak_dirty(&mut m, c, p);
            if held {
                assert!(peak <= LIMIT + SLACK, "{dirty}: the subtree reached {peak}");
            } else {
                assert!(peak > 4 * LIMIT, "{dirty}: the subtree only reached {peak}");
            }
        }
    }
}
