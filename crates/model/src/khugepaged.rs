//! khugepaged: mm/khugepaged.c of 6.1 for anonymous memory. A task whose mapping may hold
//! huge pages (hugepage_vma_check() for khugepaged: THP `always`, or `madvise` and
//! MADV_HUGEPAGE, and room for an aligned 2 MiB range) is registered (__khugepaged_enter():
//! at mmap, at madvise(MADV_HUGEPAGE) and at a huge fault). The khugepaged thread wakes at
//! once when the first task registers, then every `scan_sleep_millisecs` (10 s) while any
//! is registered, and each wake scans `pages_to_scan` (4096) pages' worth of ranges
//! (khugepaged_do_scan(), khugepaged_scan_mm_slot(): a range counts 512, a mapping it
//! cannot use 1), round robin over the registered tasks, their mappings in order.
//!
//! A range mapped by small pages is collapsed (hpage_collapse_scan_pmd(),
//! collapse_huge_page()) when at most `max_ptes_none` (511) of its PTEs are empty, at most
//! `max_ptes_swap` (64) hold swap entries, every present page is on an LRU list and not
//! under writeback, and at least one is referenced (young, or PG_referenced; 256 when some
//! are in swap). The collapse allocates an order-9 folio (GFP_TRANSHUGE with `defrag` 1:
//! direct compaction and reclaim; THP_COLLAPSE_ALLOC or THP_COLLAPSE_ALLOC_FAILED, after
//! which khugepaged sleeps `alloc_sleep_millisecs`, 60 s), charges it to the task's memcg
//! (with reclaim, never an OOM kill), reads the swapped pages back, frees the small pages,
//! and maps the folio whole: the empty PTEs become zeroed pages, which is the RSS a sparse
//! mapping gains. memory.stat `thp_collapse_alloc` counts the charged collapses.
//!
//! Simplified (docs/FIDELITY.md): khugepaged's work takes no simulated time (its swap reads
//! and reclaim are done in a context of its own whose time is not charged to a CPU, and the
//! next wake comes that much later); a swapped page is read straight into the huge page
//! (6.1 swaps it in as a small page first, then copies it); pages are never shared
//! (max_ptes_shared has nothing to count); file and shmem ranges are not collapsed.

use crate::huge_memory::{is_head, HugeAdvice, ThpEnabled, ThpGfp, HPAGE_PMD_NR};
use crate::machine::Machine;
use crate::memory::SWAP_PTE;
use crate::page_cgroup::{pf, Pfn, LRU_NONE};
use crate::program::Pid;
use crate::stat::Stat;

/// HPAGE_PMD_NR as a page index.
const NR: u32 = HPAGE_PMD_NR as u32;

/// The tunables of /sys/kernel/mm/transparent_hugepage/khugepaged/ and the thread's state.
#[derive(Clone, Debug)]
pub struct Khugepaged {
    pub pages_to_scan: u32,
    pub scan_sleep_ms: u32,
    pub alloc_sleep_ms: u32,
    pub max_ptes_none: u32,
    pub max_ptes_swap: u32,
    pub max_ptes_shared: u32,
    /// `defrag`: the collapse allocation may reclaim and compact directly.
    pub defrag: bool,
    /// Ranges collapsed (`pages_collapsed`, in huge pages as 6.1 counts it).
    pub pages_collapsed: u64,
    /// Passes over every registered task (`full_scans`).
    pub full_scans: u64,
    /// The registered tasks (mm_slots), in order.
    slots: Vec<Pid>,
    /// Where the scan stands: the task, the position of the mapping in its list, the page
    /// index in the mapping.
    cursor: Option<(Pid, usize, u32)>,
    /// When the thread wakes next; None while it waits for a task to register (or THP is
    /// off).
    next: Option<u64>,
}

impl Default for Khugepaged {
    fn default() -> Self {
        Khugepaged {
            pages_to_scan: (HPAGE_PMD_NR * 8) as u32,
            scan_sleep_ms: 10_000,
            alloc_sleep_ms: 60_000,
            max_ptes_none: NR - 1,
            max_ptes_swap: NR / 8,
            max_ptes_shared: NR / 2,
            defrag: true,
            pages_collapsed: 0,
            full_scans: 0,
            slots: Vec::new(),
            cursor: None,
            next: None,
        }
    }
}

/// What hpage_collapse_scan_pmd() found in a range (enum scan_result, the cases the model
/// has).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scan {
    /// Collapse it: its empty and swapped PTEs.
    Collapse { none: u32, swap: u32 },
    /// Mapped by a huge folio already, or nothing to collapse (no page table, too many
    /// empty or swapped PTEs, an unsuitable page, not referenced).
    Skip,
}

/// How a collapse ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Collapse {
    Done,
    AllocFailed,
    Failed,
}

impl Machine {
    /// hugepage_vma_check() as khugepaged asks it for mapping `vma`: THP on for it, and an
    /// aligned 2 MiB range inside it.
    fn khugepaged_vma_ok(&self, vma: u32) -> bool {
        let v = &self.vmas.v[vma as usize];
        let on = match (self.thp.enabled, v.huge) {
            (_, HugeAdvice::NoHuge) | (ThpEnabled::Never, _) => false,
            (ThpEnabled::Always, _) => true,
            (ThpEnabled::Madvise, a) => a == HugeAdvice::Huge,
        };
        on && v.live && v.ptes.len() as u64 >= HPAGE_PMD_NR
    }

    /// khugepaged_enter_vma(): register the task of mapping `vma` if khugepaged may work on
    /// the mapping; the first registration wakes the idle thread.
    pub(crate) fn khugepaged_enter_vma(&mut self, pid: Pid, vma: u32) {
        if self.task(pid).khugepaged || !self.khugepaged_vma_ok(vma) {
            return;
        }
        self.task_mut(pid).khugepaged = true;
        let k = &mut self.khugepaged;
        k.slots.push(pid);
        if k.next.is_none() {
            let now = self.now();
            self.khugepaged_wake_at(now);
        }
    }

    /// Schedule khugepaged's next scan at `at` (superseding one already due).
    fn khugepaged_wake_at(&mut self, at: u64) {
        self.khugepaged.next = Some(at);
        self.sched.push(at, crate::sched::Event::Khugepaged);
    }

    /// start_stop_khugepaged() after `enabled` changed, and the wakeup of a write to
    /// scan_sleep_millisecs or alloc_sleep_millisecs (khugepaged_sleep_expire = 0): a
    /// thread with work scans now; with THP off it stops.
    pub fn khugepaged_kick(&mut self) {
        if !self.hugepage_flags_enabled() {
            self.khugepaged.next = None;
            return;
        }
        if !self.khugepaged.slots.is_empty() {
            let now = self.now();
            self.khugepaged_wake_at(now);
        }
    }

    /// The khugepaged event at `t`: a stale one does nothing.
    pub(crate) fn khugepaged_event(&mut self, t: u64) {
        if self.khugepaged.next != Some(t) {
            return;
        }
        self.khugepaged.next = None;
        if !self.hugepage_flags_enabled() {
            return;
        }
        // Its own context, as a control-file write's: the reclaim and reads it does take
        // time there, which delays its next wake.
        let had = self.cur.take();
        self.cur = Some(crate::sched::ExecCtx::new(None, 0, t));
        let alloc_failed = self.khugepaged_do_scan();
        let c = self.cur.take().expect("khugepaged's context");
        self.cur = had;
        let busy = c.cpu_ns + c.wait_ns;
        if self.khugepaged.slots.is_empty() {
            return;
        }
        let k = &self.khugepaged;
        let sleep = if alloc_failed {
            k.alloc_sleep_ms
        } else {
            k.scan_sleep_ms
        };
        self.khugepaged_wake_at(t + busy + u64::from(sleep) * 1_000_000);
    }

    /// khugepaged_do_scan(): scan `pages_to_scan` pages' worth; true if a huge page could
    /// not be allocated (the scan stops there).
    fn khugepaged_do_scan(&mut self) -> bool {
        let pages = u64::from(self.khugepaged.pages_to_scan);
        let mut progress = 0u64;
        let mut pass_through_head = 0;
        // Bound: each round scans at least one mapping or range, or passes the list head.
        for _ in 0..pages + 2 * self.khugepaged.slots.len() as u64 + 4 {
            if progress >= pages || self.khugepaged.slots.is_empty() {
                break;
            }
            if self.khugepaged.cursor.is_none() {
                pass_through_head += 1;
                if pass_through_head >= 2 {
                    break;
                }
            }
            match self.khugepaged_scan_mm_slot(pages - progress) {
                (p, false) => progress += p,
                (_, true) => return true,
            }
        }
        false
    }

    /// khugepaged_scan_mm_slot(): scan the cursor's task from where it stands, for at most
    /// `budget` pages' worth. Returns the progress and whether an allocation failed.
    fn khugepaged_scan_mm_slot(&mut self, budget: u64) -> (u64, bool) {
        let (pid, mut pos, mut addr) = match self.khugepaged.cursor {
            Some(c) => c,
            None => (self.khugepaged.slots[0], 0, 0),
        };
        let mut progress = 0u64;
        let alive = !self.task(pid).exited();
        let nvmas = if alive { self.task(pid).vmas.len() } else { 0 };
        while pos < nvmas {
            let vma = self.task(pid).vmas[pos];
            if !self.khugepaged_vma_ok(vma) {
                progress += 1;
                pos += 1;
                addr = 0;
                if progress >= budget {
                    self.khugepaged.cursor = Some((pid, pos, 0));
                    return (progress, false);
                }
                continue;
            }
            let hend = self.vmas.v[vma as usize].ptes.len() as u32 / NR * NR;
            while addr < hend {
                if let Scan::Collapse { none, swap } = self.khugepaged_scan_pmd(vma, addr) {
                    match self.collapse_huge_page(pid, vma, addr, none, swap) {
                        Collapse::Done => self.khugepaged.pages_collapsed += 1,
                        Collapse::AllocFailed => {
                            self.khugepaged.cursor = Some((pid, pos, addr + NR));
                            return (progress + HPAGE_PMD_NR, true);
                        }
                        Collapse::Failed => {}
                    }
                }
                addr += NR;
                progress += HPAGE_PMD_NR;
                if self.task(pid).exited() {
                    break;
                }
                if progress >= budget {
                    self.khugepaged.cursor = Some((pid, pos, addr));
                    return (progress, false);
                }
            }
            if self.task(pid).exited() {
                break;
            }
            pos += 1;
            addr = 0;
        }
        // The task is scanned through (or gone): on to the next; a task that exited leaves
        // the list (collect_mm_slot()).
        let exited = self.task(pid).exited();
        let k = &mut self.khugepaged;
        let next = match k.slots.iter().position(|&p| p == pid) {
            Some(i) if exited => {
                k.slots.remove(i);
                i
            }
            Some(i) => i + 1,
            None => 0,
        };
        if next >= k.slots.len() {
            k.full_scans += 1;
            k.cursor = None;
        } else {
            k.cursor = Some((k.slots[next], 0, 0));
        }
        (progress.max(1), false)
    }

    /// hpage_collapse_scan_pmd() of the range at page `start` of `vma`.
    fn khugepaged_scan_pmd(&self, vma: u32, start: u32) -> Scan {
        let v = &self.vmas.v[vma as usize];
        if !v.pt_region_populated(start) {
            return Scan::Skip;
        }
        let k = &self.khugepaged;
        let (mut none, mut swap, mut referenced) = (0u32, 0u32, 0u32);
        for &pte in &v.ptes[start as usize..(start + NR) as usize] {
            if pte == 0 {
                none += 1;
                if none > k.max_ptes_none {
                    return Scan::Skip;
                }
                continue;
            }
            if pte & SWAP_PTE != 0 {
                swap += 1;
                if swap > k.max_ptes_swap {
                    return Scan::Skip;
                }
                continue;
            }
            let pfn: Pfn = pte - 1;
            if self.thp.folios > 0
                && (is_head(&self.frames.meta, pfn)
                    || self.frames.lru(pfn) == crate::huge_memory::LRU_TAIL)
            {
                // SCAN_PMD_MAPPED.
                return Scan::Skip;
            }
            let f = self.frames.flags(pfn);
            if f & pf::LRU_MASK == LRU_NONE || f & pf::WRITEBACK != 0 {
                return Scan::Skip;
            }
            if f & (pf::YOUNG | pf::REFERENCED) != 0 {
                referenced += 1;
            }
        }
        if referenced == 0 || (swap > 0 && referenced < NR / 2) {
            return Scan::Skip;
        }
        Scan::Collapse { none, swap }
    }

    /// collapse_huge_page() of the range at page `start` of `vma`, which the scan found
    /// with `none` empty and `swap` swapped PTEs.
    fn collapse_huge_page(
        &mut self,
        pid: Pid,
        vma: u32,
        start: u32,
        none: u32,
        swap: u32,
    ) -> Collapse {
        let gfp = ThpGfp {
            direct_reclaim: self.khugepaged.defrag,
            kswapd: false,
            noretry: false,
        };
        let Some(head) = self.alloc_thp_folio(gfp) else {
            self.thp.events.collapse_alloc_failed += 1;
            return Collapse::AllocFailed;
        };
        self.thp.events.collapse_alloc += 1;
        let memcg = self.task(pid).memcg;
        let saved = (self.gfp_noretry, self.gfp_nowait);
        self.gfp_noretry = false;
        self.gfp_nowait = !gfp.direct_reclaim;
        let charged = self.try_charge(memcg, HPAGE_PMD_NR).is_ok();
        (self.gfp_noretry, self.gfp_nowait) = saved;
        if !charged {
            // SCAN_CGROUP_CHARGE_FAIL.
            self.free_thp_frames(head);
            return Collapse::Failed;
        }
        // The charge's reclaim may have changed the range, or ended the task: look again
        // (hugepage_vma_revalidate(), __collapse_huge_page_isolate()'s checks).
        let same = self.khugepaged_vma_ok(vma)
            && !self.task(pid).exited()
            && self.khugepaged_scan_pmd(vma, start) == Scan::Collapse { none, swap };
        if !same {
            self.uncharge_folio(memcg, HPAGE_PMD_NR);
            self.free_thp_frames(head);
            return Collapse::Failed;
        }
        self.mod_stat(memcg, Stat::ThpCollapseAlloc, 1);
        // __collapse_huge_page_swapin(): the swapped pages are read (major faults of the
        // task), their slots freed.
        let mut read = Vec::new();
        let mut first_slot = None;
        for i in start..start + NR {
            let pte = self.vmas.v[vma as usize].ptes[i as usize];
            if pte & SWAP_PTE == 0 {
                continue;
            }
            let slot = pte & !SWAP_PTE;
            if self.swap.cached(slot).is_none() {
                read.push(crate::blkdev::swap_pos(slot));
                first_slot.get_or_insert(slot);
                let owner = self.swapin_memcg(slot, memcg);
                self.mod_stat(owner, Stat::Pswpin, 1);
                self.mod_stat(memcg, Stat::Pgmajfault, 1);
                self.task_mut(pid).stats.majflt += 1;
            }
            self.mod_stat(memcg, Stat::Pgfault, 1);
            self.vmas.v[vma as usize].ptes[i as usize] = 0;
            self.swap_pte_put_cached(slot);
            self.task_mut(pid).swapents -= 1;
        }
        if let Some(slot) = first_slot {
            self.swapin_read(pid, slot, read);
        }
        // __collapse_huge_page_isolate() and the copy: the small pages leave their LRU
        // lists and mappings and are freed, each uncharged from its own memcg.
        let mut freed = Vec::new();
        for i in start..start + NR {
            let pte = self.vmas.v[vma as usize].ptes[i as usize];
            if pte == 0 {
                continue;
            }
            let pfn = pte - 1;
            let owner = self.frames.memcg(pfn);
            self.lru_del(pfn);
            if self.frames.test_clear(pfn, pf::MLOCKED) {
                self.mod_stat(owner, Stat::Mlock, -1);
            }
            if let Some(slot) = self.swapcache_slot(pfn) {
                self.swapcache_unmapped(pfn, slot);
                self.swapcache_del(pfn, slot);
            } else {
                self.mod_stat(owner, Stat::Anon, -1);
            }
            self.vmas.v[vma as usize].ptes[i as usize] = 0;
            freed.push((pfn, Some(owner)));
        }
        let present = freed.len() as u64;
        self.free_page_list(&freed);
        // The folio mapped whole by the range's PMD, not young, on the inactive list.
        self.commit_charge_folio(head, memcg, HPAGE_PMD_NR);
        for i in 1..NR {
            self.frames.set_memcg(head + i, memcg);
        }
        self.anon_rmap(vma, start, head, HPAGE_PMD_NR);
        self.frames.clear(head, pf::YOUNG);
        self.mod_stat(memcg, Stat::AnonThp, HPAGE_PMD_NR as i64);
        let v = &mut self.vmas.v[vma as usize];
        for i in 0..NR {
            v.ptes[(start + i) as usize] = head + i + 1;
        }
        let t = self.task_mut(pid);
        t.rss_anon = t.rss_anon - present + HPAGE_PMD_NR;
        self.lru_add(head);
        Collapse::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A THP machine whose group's task maps `pages` and writes every `stride`-th page with
    /// THP off (small pages), then turns THP on: returns the machine, the task's group, the
    /// task and its mapping.
    fn sparse(keys: &[(&str, &str)], pages: u32, stride: u32) -> (Machine, u16, Pid, u32) {
        let base = [("memory", "1G"), ("swap", "256M"), ("thp", "never")];
        let all: Vec<_> = base.iter().chain(keys).copied().collect();
        let (mut m, a, pid) = crate::machine::test_machine_with_task(&all);
        let vma = m.mmap_anon(pid, pages, false);
        for i in (0..pages).step_by(stride as usize) {
            m.touch_anon(pid, vma, i).unwrap();
        }
        m.cur = None;
        m.set_thp_enabled(ThpEnabled::Always);
        m.khugepaged_enter_vma(pid, vma);
        (m, a, pid, vma)
    }

    /// A sparse mapping's ranges collapse at khugepaged's first scan: every empty PTE
    /// becomes a zeroed page of the folio, charged to the task's group.
    #[test]
    fn a_sparse_range_collapses_and_gains_its_empty_pages() {
        let (mut m, a, pid, vma) = sparse(&[], 4 * NR, 64);
        assert_eq!(m.stat_total(a, Stat::Anon), 32);
        m.run_until(m.now() + 1, |_| false);
        assert_eq!(m.khugepaged.pages_collapsed, 4);
        assert_eq!(m.stat_total(a, Stat::AnonThp), 4 * HPAGE_PMD_NR);
        assert_eq!(m.stat_total(a, Stat::Anon), 4 * HPAGE_PMD_NR);
        assert_eq!(m.stat_total(a, Stat::ThpCollapseAlloc), 4);
        assert_eq!(m.thp.events.collapse_alloc, 4);
        assert_eq!(m.task(pid).rss_anon, 4 * HPAGE_PMD_NR);
        assert!(is_head(&m.frames.meta, m.vmas.v[vma as usize].ptes[0] - 1));
        m.check().unwrap();
        // The next wake finds nothing left to do; the scans go on every 10 s.
        let full = m.khugepaged.full_scans;
        m.run_until(m.now() + 20_000_000_000, |_| false);
        assert_eq!(m.khugepaged.pages_collapsed, 4);
        assert!(m.khugepaged.full_scans > full);
    }

    /// max_ptes_none: a range with more empty PTEs stays small; no referenced page, no
    /// collapse either.
    #[test]
    fn max_ptes_none_and_references_decide() {
        let (mut m, a, _pid, vma) = sparse(&[], 2 * NR, 64);
        m.khugepaged.max_ptes_none = NR - 8 - 1;
        m.run_until(m.now() + 1, |_| false);
        assert_eq!(m.khugepaged.pages_collapsed, 0);
        assert_eq!(m.stat_total(a, Stat::AnonThp), 0);
        m.khugepaged.max_ptes_none = NR - 8;
        for i in 0..2 * NR {
            let pte = m.vmas.v[vma as usize].ptes[i as usize];
            if pte != 0 {
                m.frames.clear(pte - 1, pf::YOUNG | pf::REFERENCED);
            }
        }
        m.khugepaged_kick();
        m.run_until(m.now() + 1, |_| false);
        assert_eq!(m.khugepaged.pages_collapsed, 0);
        m.check().unwrap();
    }

    /// pages_to_scan bounds a wake: 512 pages are one range a wake.
    #[test]
    fn pages_to_scan_bounds_each_wake() {
        let (mut m, _a, _pid, _vma) = sparse(&[], 4 * NR, 1);
        m.khugepaged.pages_to_scan = NR;
        m.run_until(m.now() + 1, |_| false);
        assert_eq!(m.khugepaged.pages_collapsed, 1);
        m.run_until(m.now() + 10_000_000_001, |_| false);
        assert_eq!(m.khugepaged.pages_collapsed, 2);
        m.check().unwrap();
    }
}
