//! The OOM killer: mm/oom_kill.c — victim selection by oom_badness() (rss + swap entries +
//! page tables, plus oom_score_adj in thousandths of the allowed memory; -1000 exempts),
//! ties to the later task of the walk; memcg OOM over the memcg's subtree with
//! mem_cgroup_get_max() as totalpages; global OOM over all tasks with RAM + swap; and
//! memory.oom.group: the highest ancestor of the victim (within the OOM domain) with
//! oom.group set is killed whole, except tasks with oom_score_adj -1000.
//!
//! The oom_reaper is immediate: a killed task's memory is freed at the kill.

use crate::machine::Machine;
use crate::memcontrol::{IterVisit, MemcgEvent, MemcgId, ROOT_MEMCG};
use crate::program::Pid;
use crate::stat::Stat;

pub const OOM_SCORE_ADJ_MIN: i32 = -1000;

impl Machine {
    /// oom_badness(): None when the task is not killable.
    pub fn oom_badness(&self, pid: Pid, totalpages: u64) -> Option<i64> {
        let t = self.task(pid);
        if t.exited() || t.killed || t.oom_score_adj == OOM_SCORE_ADJ_MIN {
            return None;
        }
        let rss = t.rss_anon + t.rss_file + t.rss_shmem;
        // Page tables: one 4 KiB table per 512 mapped pages.
        let pgtables = (rss + t.swapents).div_ceil(512);
        let mut points = (rss + t.swapents + pgtables) as i64;
        points += t.oom_score_adj as i64 * (totalpages / 1000) as i64;
        Some(points)
    }

    /// select_bad_process() over the tasks of `domain`'s subtree.
    fn select_bad_process(&self, domain: MemcgId, totalpages: u64) -> Option<Pid> {
        let mut memcgs = Vec::new();
        self.memcg_walk(domain, |_, _| IterVisit::Visit, &mut memcgs);
        let mut chosen: Option<(Pid, i64)> = None;
        for m in memcgs {
            for t in self.tasks.iter().filter(|t| t.memcg == m && !t.exited()) {
                if let Some(points) = self.oom_badness(t.pid, totalpages) {
                    if chosen.is_none_or(|(_, best)| points >= best) {
                        chosen = Some((t.pid, points));
                    }
                }
            }
        }
        chosen.map(|(p, _)| p)
    }

    /// mem_cgroup_get_oom_group(): the highest ancestor of the victim's memcg, up to the OOM
    /// domain, with memory.oom.group set (v2 only).
    fn oom_group(&self, victim_memcg: MemcgId, domain: MemcgId) -> Option<MemcgId> {
        if self.is_v1() || victim_memcg == ROOT_MEMCG {
            return None;
        }
        if !self.memcg_is_descendant(victim_memcg, domain) {
            return None;
        }
        let mut group = None;
        let mut cur = Some(victim_memcg);
        while let Some(m) = cur {
            if self.memcg(m).oom_group {
                group = Some(m);
            }
            if m == domain {
                break;
            }
            cur = self.memcg(m).parent;
        }
        group
    }

    /// oom_kill_process(): kill the victim, then its oom.group.
    fn oom_kill_process(&mut self, victim: Pid, domain: MemcgId) {
        let vm = self.task(victim).memcg;
        let group = self.oom_group(vm, domain);
        let mut to_kill = vec![victim];
        self.count_oom_kill(victim);
        if let Some(g) = group {
            self.memcg_memory_event(g, MemcgEvent::OomGroupKill);
            let mut memcgs = Vec::new();
            self.memcg_walk(g, |_, _| IterVisit::Visit, &mut memcgs);
            let members: Vec<Pid> = memcgs
                .iter()
                .flat_map(|&m| {
                    self.tasks
                        .iter()
                        .filter(move |t| t.memcg == m && !t.exited())
                        .filter(|t| t.oom_score_adj != OOM_SCORE_ADJ_MIN)
                        .map(|t| t.pid)
                })
                .collect();
            // The victim has not exited yet, so it is killed (and counted) again.
            for p in members {
                self.count_oom_kill(p);
                to_kill.push(p);
            }
        }
        for p in to_kill {
            if !self.task(p).exited() {
                self.task_mut(p).oom_domain = Some(domain);
            }
            self.kill_task(p);
        }
    }

    fn count_oom_kill(&mut self, pid: Pid) {
        let m = self.task(pid).memcg;
        self.mod_stat(ROOT_MEMCG, Stat::OomKill, 1);
        self.memcg_memory_event(m, MemcgEvent::OomKill);
    }

    /// mem_cgroup_out_of_memory(): true if memory was freed or is available.
    pub fn mem_cgroup_out_of_memory(&mut self, memcg: MemcgId, nr: u64) -> bool {
        if nr > 0 && self.mem_cgroup_margin(memcg) >= nr {
            return true;
        }
        let totalpages = self.mem_cgroup_get_max(memcg).max(1);
        match self.select_bad_process(memcg, totalpages) {
            Some(victim) => {
                self.oom_kill_process(victim, memcg);
                true
            }
            None => false,
        }
    }

    /// out_of_memory() for a global (page allocator) OOM.
    pub fn out_of_memory_global(&mut self) -> bool {
        let totalpages = self.totalram_pages + self.total_swap_pages;
        match self.select_bad_process(ROOT_MEMCG, totalpages) {
            Some(victim) => {
                self.oom_kill_process(victim, ROOT_MEMCG);
                true
            }
            None => false,
        }
    }
}
