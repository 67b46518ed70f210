//! The invariant checker: walks every structure and panics with a description on the first
//! inconsistency. Runs after every event and control-file write when enabled (the tests
//! enable it).
//!
//! Invariants:
//! * every allocated frame is owned by a memcg and is on exactly one LRU list of that memcg's
//!   lruvec, the list its flags select; free frames are on no list and owned by nobody;
//! * list lengths equal the lruvec sizes and the memcg's local LRU statistics;
//! * the local anon / file / mlock / swap / dirty / writeback statistics equal what they
//!   count;
//! * each bdi_writeback's WB_RECLAIMABLE and WB_WRITEBACK equal the dirty and writeback
//!   pages of the inodes attached to it, its dirty-inode list holds exactly those of its
//!   inodes with dirty pages, under their dirtied_when, and each inode's dirty count equals
//!   its dirty pages;
//! * each memcg's memory page_counter equals the pages owned in its subtree plus the pages
//!   held for its subtree in per-CPU stocks (v1 memsw adds swap entries; v2 swap counter
//!   equals swap entries); a parent's usage is at least the sum of its children's;
//! * children_min_usage / children_low_usage equal the sums over the children;
//! * every resident file page is found at its index in its file, and every present PTE points
//!   at a frame mapped back to it;
//! * the soft-limit tree holds exactly the online memcgs marked on it, under the key and
//!   sequence they record, each with a positive key; each memcg's children_in_excess equals
//!   the number of its contributing descendants, and only the rework keeps any;
//! * the packed memcg tree (`MemcgTopo`) holds the same parent, first child, next sibling,
//!   online and dying state as every memcg struct, and a walk of it from the root reaches
//!   each live memcg exactly once, after its parent; a group whose packed entry says no
//!   active-anon update reached it counts none, and its parent's says one did if its own does.

use crate::machine::Machine;
use crate::memcontrol::{MemcgId, ROOT_MEMCG};
use crate::page_cgroup::{pf, LRU_NONE, MAPPING_FILE_BIT, NIL};
use crate::stat::{lru, Stat, NR_STATS};

impl Machine {
    /// Run the full check if enabled and this step is the `check_every`-th since the last.
    pub fn after_step_check(&mut self) {
        if !self.check_invariants {
            return;
        }
        self.check_countdown = self.check_countdown.saturating_sub(1);
        if self.check_countdown == 0 {
            self.check_now();
        }
    }

    /// Run the full check now if enabled, whatever the interval.
    pub fn check_now(&mut self) {
        if !self.check_invariants {
            return;
        }
        self.check_countdown = self.check_every.max(1);
        if let Err(e) = self.check().and_then(|()| self.psi_check()) {
            panic!("invariant violated at t={}ns: {e}", self.sched.clock);
        }
    }

    /// Tasks inside an allocation: a reclaim kept across a yield is a global direct
    /// reclaim part-way down its priorities, held by a live task; a task that yielded is
    /// not on the reclaim wait queues.
    fn check_tasks(&self) -> Result<(), String> {
        for t in &self.tasks {
            if let Some(sc) = &t.reclaim_resume {
                if t.exited() {
                    return Err(format!("exited task {} keeps a direct reclaim", t.pid));
                }
                // A 3.11 reclaim asleep in a zone's soft-limit reclaim may be at any priority.
                let top = crate::vmscan::DEF_PRIORITY + sc.resume_zone.is_some() as i32;
                if sc.cgroup_reclaim || sc.kswapd || !(0..top).contains(&sc.priority) {
                    return Err(format!(
                        "task {} keeps a reclaim that is not a global direct reclaim part-way \
                         down (priority {})",
                        t.pid, sc.priority
                    ));
                }
            }
            let yielded = t
                .block
                .is_some_and(|b| b.wait == crate::vmscan::Wait::Resched);
            if yielded && self.reclaim_wait.sleepers.contains(&t.pid) {
                return Err(format!(
                    "task {} gave its CPU up but waits as a sleeper",
                    t.pid
                ));
            }
        }
        Ok(())
    }

    /// The soft-limit tree and the rework's children-in-excess counters.
    fn check_soft_limit(&self) -> Result<(), String> {
        let mut on_tree = 0usize;
        let mut contributed_below = vec![0u32; self.memcgs.len()];
        for (id, mc) in self.memcgs.iter().enumerate() {
            if id == 0 || !mc.online {
                if mc.soft.on_tree || mc.soft.contributed {
                    return Err(format!("offline memcg {id} still in the soft-limit state"));
                }
                continue;
            }
            let s = mc.soft;
            if s.on_tree {
                on_tree += 1;
                if s.usage_in_excess == 0 {
                    return Err(format!("memcg {id} on the soft-limit tree with key 0"));
                }
                if !self
                    .soft_tree
                    .set
                    .contains(&(s.usage_in_excess, s.seq, id as MemcgId))
                {
                    return Err(format!("memcg {id} marked on the tree but not in it"));
                }
            }
            if s.contributed {
                if self.cfg.softlimit != crate::config::SoftLimitPolicy::Rework {
                    return Err(format!("memcg {id} contributes without the rework"));
                }
                let mut cur = mc.parent;
                while let Some(p) = cur {
                    contributed_below[p as usize] += 1;
                    cur = self.memcg(p).parent;
                }
            }
        }
        if on_tree != self.soft_tree.set.len() {
            return Err(format!(
                "soft-limit tree has {} nodes but {on_tree} memcgs are marked on it",
                self.soft_tree.set.len()
            ));
        }
        for (id, mc) in self.memcgs.iter().enumerate() {
            let cie = self.memcg_topo.children_in_excess(id as MemcgId);
            if id != 0 && mc.online && cie != contributed_below[id] {
                return Err(format!(
                    "memcg {id}: children_in_excess {cie} but {} contributing descendants",
                    contributed_below[id]
                ));
            }
        }
        Ok(())
    }

    /// The packed memcg tree (`MemcgTopo`) equals the tree in the memcg structs, and a walk
    /// of it from the root reaches every live memcg once, parents before children.
    pub(crate) fn check_memcg_topology(&self) -> Result<(), String> {
        for (id, mc) in self.memcgs.iter().enumerate().skip(1) {
            let m = id as MemcgId;
            self.memcg_topo.matches(m, mc)?;
            if !(mc.online || mc.dying) {
                continue;
            }
            // The sibling list is doubly linked; the parent knows its ends.
            let back = match mc.prev_sibling {
                Some(p) => self.memcg(p).next_sibling,
                None => mc.parent.and_then(|p| self.memcg(p).first_child),
            };
            let fwd = match mc.next_sibling {
                Some(n) => self.memcg(n).prev_sibling,
                None => mc.parent.and_then(|p| self.memcg(p).last_child),
            };
            if mc.parent.is_some() && (back != Some(m) || fwd != Some(m)) {
                return Err(format!(
                    "memcg {id}: sibling links do not match its neighbours'"
                ));
            }
        }
        let mut order = Vec::new();
        self.memcg_walk(
            ROOT_MEMCG,
            |_, _| crate::memcontrol::IterVisit::Visit,
            &mut order,
        );
        let mut seen = vec![false; self.memcgs.len()];
        for &m in &order {
            let i = m as usize;
            if seen[i] {
                return Err(format!("the memcg walk reaches memcg {m} twice"));
            }
            seen[i] = true;
            if let Some(p) = self.memcg(m).parent {
                if !seen[p as usize] {
                    return Err(format!(
                        "the memcg walk reaches memcg {m} before its parent"
                    ));
                }
            }
        }
        for (id, mc) in self.memcgs.iter().enumerate().skip(1) {
            let m = id as MemcgId;
            if (mc.online || mc.dying) && !self.memcg_topo.anon_seen(m) {
                if mc.stats.total[Stat::ActiveAnon as usize] != 0
                    || self.stat_view(m, Stat::ActiveAnon) != 0
                {
                    return Err(format!(
                        "memcg {id} counts active anon pages but no update reached it"
                    ));
                }
            } else if let Some(p) = mc.parent.filter(|_| mc.online || mc.dying) {
                if !self.memcg_topo.anon_seen(p) {
                    return Err(format!(
                        "memcg {id} was reached by an active-anon update but its parent {p} not"
                    ));
                }
            }
            if (mc.online || mc.dying)
                && mc
                    .parent
                    .is_some_and(|p| self.memcg_topo.soft_seen(m) && !self.memcg_topo.soft_seen(p))
            {
                return Err(format!(
                    "memcg {id} is marked for a soft limit but its parent is not"
                ));
            }
            if (mc.online || mc.dying)
                && self.memcg_soft_limit(m) < crate::page_counter::PAGE_COUNTER_MAX
                && !self.memcg_topo.soft_seen(m)
            {
                return Err(format!(
                    "memcg {id} has a soft limit but is not marked for one"
                ));
            }
            if (mc.online || mc.dying)
                && !self.memcg_topo.lru_seen(m)
                && mc.lruvec.iter().any(|lv| lv.evictable_size() != 0)
            {
                return Err(format!(
                    "memcg {id} has pages on its LRU lists but no LRU update reached it"
                ));
            }
            if (mc.online || mc.dying) != seen[id] {
                return Err(format!(
                    "memcg {id} (online {}, dying {}) {} by the walk from the root",
                    mc.online,
                    mc.dying,
                    if seen[id] { "reached" } else { "not reached" }
                ));
            }
        }
        Ok(())
    }

    /// The wbs against the pages counted by the frame walk: `file_dirty[f]` dirty pages of
    /// each file, `wb_pages[wb]` = [dirty, writeback] pages of each wb's inodes.
    /// Every update is somewhere (rstat.rs): the exact counters equal what a reader sees
    /// plus what is still on its way. rstat: a group's hierarchical value plus the pending
    /// and per-CPU deltas of its subtree; legacy: plus the per-CPU residues of its subtree
    /// and the residues stranded in removed descendants. Local values: plus the group's own
    /// per-CPU deltas.
    fn check_stats_scheme(&self) -> Result<(), String> {
        use crate::rstat::StatsScheme;
        let scheme = self.rstat.scheme;
        if scheme == StatsScheme::Exact {
            return Ok(());
        }
        let n = self.memcgs.len();
        if let Some(i) = (1..n).find(|&i| !self.memcgs[i].vm.dirty_masks_cover()) {
            return Err(format!(
                "memcg {i}: a pending or per-CPU statistics delta is not marked for the flush"
            ));
        }
        let mut order: Vec<usize> = (1..n)
            .filter(|&i| self.memcgs[i].online || self.memcgs[i].dying)
            .collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.memcgs[i].depth));
        // On the way to a group's hierarchical counter: its subtree's per-CPU deltas, plus
        // (rstat) the subtree's pending deltas, or (legacy) its own stranded residues.
        let mut unfolded = vec![[0i64; NR_STATS]; n];
        for &i in &order {
            let vm = &self.memcgs[i].vm;
            for (k, u) in unfolded[i].iter_mut().enumerate() {
                *u += vm.percpu_sum(k) + vm.pending[k];
            }
            let own = unfolded[i];
            if scheme == StatsScheme::Rstat {
                if let Some(p) = self.memcgs[i].parent {
                    for k in 0..NR_STATS {
                        unfolded[p as usize][k] += own[k];
                    }
                }
            } else if let Some(p) = self.memcgs[i].parent {
                // Legacy pending is already kept in every ancestor; pass up the per-CPU
                // residues only.
                for k in 0..NR_STATS {
                    unfolded[p as usize][k] += own[k] - vm.pending[k];
                }
            }
            let mc = &self.memcgs[i];
            for (k, &u) in unfolded[i].iter().enumerate() {
                if mc.stats.total[k] != mc.vm.state[k] + u {
                    return Err(format!(
                        "memcg {i}: stat {k} exact {} but view {} + unfolded {u}",
                        mc.stats.total[k], mc.vm.state[k]
                    ));
                }
                let cpu = mc.vm.percpu_sum(k);
                if mc.stats.local[k] != mc.vm.local[k] + cpu {
                    return Err(format!(
                        "memcg {i}: local stat {k} exact {} but view {} + per-CPU {cpu}",
                        mc.stats.local[k], mc.vm.local[k]
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_writeback(&self, file_dirty: &[u64], wb_pages: &[[u64; 2]]) -> Result<(), String> {
        for (fi, f) in self.files.v.iter().enumerate() {
            if f.nr_dirty != file_dirty[fi] {
                return Err(format!(
                    "file {fi}: nr_dirty {} but {} dirty pages",
                    f.nr_dirty, file_dirty[fi]
                ));
            }
            if f.dirtied_when.is_some() != (f.nr_dirty > 0) {
                return Err(format!(
                    "file {fi}: dirtied_when does not match its dirty pages"
                ));
            }
            if let Some(when) = f.dirtied_when {
                let on = self
                    .writeback
                    .wb(f.wb)
                    .is_some_and(|w| w.b_dirty.contains(&(when, fi as u32)));
                if !on {
                    return Err(format!("dirty file {fi} is not on its wb's dirty list"));
                }
            }
        }
        for (i, w) in self.writeback.wbs.iter().enumerate() {
            let Some(w) = w else { continue };
            if w.memcg as usize != i || !self.memcgs[i].online {
                return Err(format!(
                    "wb {i} belongs to memcg {} (online: {})",
                    w.memcg, self.memcgs[i].online
                ));
            }
            if [w.reclaimable, w.writeback] != wb_pages[i] {
                return Err(format!(
                    "wb {i}: reclaimable {} writeback {} but its inodes have {:?}",
                    w.reclaimable, w.writeback, wb_pages[i]
                ));
            }
            for &(when, fi) in &w.b_dirty {
                let f = &self.files.v[fi as usize];
                if f.wb as usize != i || f.dirtied_when != Some(when) {
                    return Err(format!("wb {i}: stale dirty inode {fi}"));
                }
            }
        }
        Ok(())
    }

    /// Check every invariant; Err describes the first violation.
    /// zswap: its pool has the frames its pages need; every entry's slot is in use; each
    /// group's `zswap` and `zswapped` are the lengths and the number of its entries, and
    /// its charge their bytes rounded up to pages.
    fn check_zswap(&self) -> Result<(), String> {
        if self.zswap_frames.len() as u64 != self.zswap.pool_pages() {
            return Err(format!(
                "zswap: {} frames for {} pool pages",
                self.zswap_frames.len(),
                self.zswap.pool_pages()
            ));
        }
        // Every swapped-out page is somewhere: a slot no page holds has its data in zswap or
        // on the swap device, not both (both only while the shrink work writes an entry
        // back, which ends within its step).
        for slot in 0..self.swap.nr_slots() {
            if !self.swap.in_use(slot) || self.swap.cached(slot).is_some() {
                continue;
            }
            let stored = self.zswap.entry(slot).is_some();
            if stored == self.swap.written(slot) {
                return Err(format!(
                    "swap slot {slot}: {} (in zswap: {stored})",
                    if stored {
                        "in zswap and on the device"
                    } else {
                        "its page is nowhere"
                    }
                ));
            }
        }
        let n = self.memcgs.len();
        let mut bytes = vec![0i64; n];
        let mut count = vec![0i64; n];
        for (slot, e) in self.zswap.entries() {
            if !self.swap.in_use(slot) {
                return Err(format!("zswap: entry of free slot {slot}"));
            }
            if e.memcg != crate::memcontrol::ROOT_MEMCG {
                bytes[e.memcg as usize] += e.length as i64;
                count[e.memcg as usize] += 1;
            }
        }
        for (id, mc) in self.memcgs.iter().enumerate().skip(1) {
            let local = &mc.stats.local;
            if local[Stat::ZswapB as usize] != bytes[id]
                || local[Stat::Zswapped as usize] != count[id]
            {
                return Err(format!(
                    "zswap: memcg {id} counts {} bytes in {} entries, holds {} in {}",
                    local[Stat::ZswapB as usize],
                    local[Stat::Zswapped as usize],
                    bytes[id],
                    count[id]
                ));
            }
            if mc.zswap_pages != (bytes[id].max(0) as u64).div_ceil(crate::PAGE_SIZE) {
                return Err(format!(
                    "zswap: memcg {id} charged {} pages for {} bytes",
                    mc.zswap_pages, bytes[id]
                ));
            }
        }
        Ok(())
    }

    pub fn check(&self) -> Result<(), String> {
        self.check_memcg_topology()?;
        self.check_slab_lru_len()?;
        self.check_soft_limit()?;
        self.check_stats_scheme()?;
        self.check_tasks()?;
        self.check_page_cache_xarrays()?;
        let n = self.memcgs.len();
        let nr_frames = self.frames.nr_frames() as usize;
        let mut seen = vec![false; nr_frames];
        // LRU lists.
        for (id, mc) in self.memcgs.iter().enumerate() {
            if id == 0 || !(mc.online || mc.dying) {
                continue;
            }
            let gen_pages = self.check_lru_gen(id as MemcgId, &mut seen)?;
            for l in 0..lru::NR_LRU_LISTS {
                let mut total = gen_pages.get(l).copied().unwrap_or(0);
                for (slot, lv) in mc.lruvec.iter().enumerate() {
                    let mut count = 0u64;
                    let mut prev = NIL;
                    let mut cur = lv.head[l];
                    while cur != NIL {
                        let c = cur as usize;
                        if c >= self.frames.meta.len() {
                            return Err(format!("memcg {id} list {l}: bad frame {cur}"));
                        }
                        if seen[c] {
                            return Err(format!("frame {cur} on two lists (or a cycle)"));
                        }
                        seen[c] = true;
                        let pc = self.frames.get(cur).pc;
                        if pc.memcg as usize != id {
                            return Err(format!(
                                "frame {cur} on memcg {id}'s list {l} but owned by {}",
                                pc.memcg
                            ));
                        }
                        if (pc.flags & pf::LRU_MASK) as usize != l {
                            return Err(format!(
                                "frame {cur} on list {l} but flags say {}",
                                pc.flags & pf::LRU_MASK
                            ));
                        }
                        if self.page_lru_list(cur) != l {
                            return Err(format!(
                                "frame {cur} on list {l} but belongs on {}",
                                self.page_lru_list(cur)
                            ));
                        }
                        if pc.prev != prev {
                            return Err(format!("frame {cur}: broken prev link"));
                        }
                        if self.lru_slot(cur) != slot {
                            return Err(format!(
                                "frame {cur} on memcg {id}'s lruvec {slot} but belongs on {}",
                                self.lru_slot(cur)
                            ));
                        }
                        prev = cur;
                        cur = pc.next;
                        count += self.folio_nr_pages(prev);
                    }
                    if lv.tail[l] != prev {
                        return Err(format!("memcg {id} lruvec {slot} list {l}: tail mismatch"));
                    }
                    if count != lv.size[l] {
                        return Err(format!(
                            "memcg {id} lruvec {slot} list {l}: {count} pages but size {}",
                            lv.size[l]
                        ));
                    }
                    total += count;
                }
                let st = mc.stats.local[lru::stat(l) as usize];
                if st != total as i64 {
                    return Err(format!("memcg {id} list {l}: {total} pages but stat {st}"));
                }
            }
        }
        // Frames vs free list, ownership counts.
        // anon (mapped), file, mlock, total, dirty, writeback, swap cache, file mapped,
        // anon THP, shmem, shmem THP, shmem PMD-mapped
        let mut owned = vec![[0i64; 12]; n];
        let mut huge_heads = 0u64;
        let mut anon_writeback = 0u64;
        let mut file_dirty = vec![0u64; self.files.v.len()];
        let mut wb_pages = vec![[0u64; 2]; self.writeback.wbs.len()];
        let mut free_seen = vec![false; nr_frames];
        self.frames.free.check(&self.frames.meta)?;
        for z in 0..crate::mmzone::NR_ZONES {
            for f in self.frames.zone_free_iter(z) {
                if self.zones.zone_of(f) != z {
                    return Err(format!("frame {f} on the free list of the wrong zone"));
                }
                let f = f as usize;
                if free_seen[f] {
                    return Err(format!("frame {f} twice on the free list"));
                }
                free_seen[f] = true;
            }
        }
        // Frames kswapd freed that the clock has not reached yet are free too.
        for &(_, f, _) in &self.kswapd.freeing {
            let f = f as usize;
            if free_seen[f] {
                return Err(format!("frame {f} twice among the free frames"));
            }
            free_seen[f] = true;
        }
        let mut kernel_frames = 0u64;
        let flat_design = self.frames.memcg_store().0 == crate::page_cgroup_store::PcDesign::Flat;
        for pfn in 0..nr_frames {
            let fm = self.frames.get(pfn as crate::page_cgroup::Pfn);
            let pc = &fm.pc;
            if !flat_design && self.frames.meta.get(pfn).is_some_and(|m| m.pc.memcg != 0) {
                return Err(format!(
                    "frame {pfn}: memcg in the flat array outside the flat design"
                ));
            }
            let allocated = pc.flags & pf::ALLOCATED != 0;
            if allocated == free_seen[pfn] {
                return Err(format!(
                    "frame {pfn}: allocated={allocated} but free-list={}",
                    free_seen[pfn]
                ));
            }
            if !allocated {
                if pc.memcg != 0 || pc.flags & pf::LRU_MASK != LRU_NONE {
                    return Err(format!("free frame {pfn} is owned or on a list"));
                }
                continue;
            }
            if pc.flags & pf::KERNEL != 0 {
                if pc.memcg != 0 || pc.flags & pf::LRU_MASK != LRU_NONE || seen[pfn] {
                    return Err(format!("kernel frame {pfn} is owned or on a list"));
                }
                kernel_frames += 1;
                continue;
            }
            if pc.memcg == 0 {
                return Err(format!("allocated frame {pfn} has no memcg"));
            }
            if pc.flags & pf::LRU_MASK == crate::huge_memory::LRU_TAIL {
                // A huge folio's tail: charged with its head, which carries the rest.
                let off = fm.map.index;
                let head = pfn.checked_sub(off as usize);
                let ok = fm.map.mapping == crate::huge_memory::TAIL_MAPPING
                    && (1..crate::huge_memory::HPAGE_PMD_NR as u32).contains(&off)
                    && head.is_some_and(|h| {
                        crate::huge_memory::is_head(&self.frames.meta, h as u32)
                            && self.frames.get(h as u32).pc.memcg == pc.memcg
                    });
                if !ok {
                    return Err(format!("tail frame {pfn} does not belong to its head"));
                }
                owned[pc.memcg as usize][3] += 1;
                continue;
            }
            if !seen[pfn] {
                return Err(format!("allocated frame {pfn} is on no LRU list"));
            }
            let m = pc.memcg as usize;
            let map = fm.map;
            let nr = self.folio_nr_pages(pfn as u32) as i64;
            if nr > 1 && self.page_in_shmem_file(pfn as u32) {
                // A huge shmem folio: 512 pages of `file` and `shmem` (and `shmem_thp`), its
                // mapped pages counted in its first tail, all of them under a PMD.
                huge_heads += 1;
                let head = pfn as u32;
                let mapped = (0..nr as u32)
                    .filter(|&i| self.frames.test(head + i, pf::MAPPED))
                    .count() as i64;
                let pmd = self
                    .frames
                    .test(head + 1, crate::huge_memory::TAIL_PMD_MAPPED);
                if i64::from(self.frames.get(head + 1).pc.prev) != mapped
                    || (pmd && mapped != nr)
                    || !map.index.is_multiple_of(nr as u32)
                {
                    return Err(format!(
                        "huge shmem folio {pfn}: {mapped} pages mapped, {} counted, PMD {pmd}",
                        self.frames.get(head + 1).pc.prev
                    ));
                }
                owned[m][1] += nr;
                owned[m][9] += nr;
                owned[m][7] += mapped;
                owned[m][10] += nr;
                if pmd {
                    owned[m][11] += nr;
                }
                owned[m][3] += 1;
                continue;
            }
            if nr > 1 {
                huge_heads += 1;
                let v = &self.vmas.v[map.mapping as usize];
                let maps =
                    |i: u32| v.ptes.get((map.index + i) as usize) == Some(&(pfn as u32 + i + 1));
                let flags_ok = pc.flags & (pf::SWAPBACKED | pf::MAPPED | pf::ONDISK)
                    == pf::SWAPBACKED | pf::MAPPED
                    && map.index.is_multiple_of(nr as u32)
                    && v.live;
                if self.folio_deferred(pfn as u32) {
                    // PTE-mapped after a partial unmap, on its deferred split queue: some
                    // pages of its range still point at their frames.
                    let mapped = (0..nr as u32).filter(|&i| maps(i)).count() as i64;
                    if !flags_ok || mapped == 0 {
                        return Err(format!("deferred huge folio {pfn}: not partly mapped"));
                    }
                    owned[m][0] += mapped;
                } else {
                    // A PMD-mapped anon folio: every page of its range points at its frame.
                    if !flags_ok || !(0..nr as u32).all(maps) {
                        return Err(format!("huge folio {pfn}: not mapped whole by its range"));
                    }
                    owned[m][8] += nr;
                    owned[m][0] += nr;
                }
                if pc.flags & pf::MLOCKED != 0 {
                    owned[m][2] += nr;
                }
                owned[m][3] += 1;
                continue;
            }
            if pc.flags & pf::SWAPBACKED != 0 && pc.flags & pf::ONDISK != 0 {
                // In the swap cache: in no PTE, its rmap names the slot it holds; or mapped
                // (faulted back while its write was in flight), its slot in the table.
                owned[m][6] += 1;
                let mapped = pc.flags & pf::MAPPED != 0;
                let slot = if mapped {
                    owned[m][0] += 1;
                    let v = &self.vmas.v[map.mapping as usize];
                    if !v.live || v.ptes.get(map.index as usize) != Some(&(pfn as u32 + 1)) {
                        return Err(format!(
                            "swap-cache frame {pfn}: rmap does not match its PTE"
                        ));
                    }
                    self.swap.mapped_slot(pfn as u32)
                } else {
                    (map.mapping == crate::memory::SWAPCACHE_MAPPING).then_some(map.index)
                };
                match slot {
                    Some(s) if self.swap.cached(s) == Some(pfn as u32) && self.swap.in_use(s) => {}
                    _ => {
                        return Err(format!(
                            "swap-cache frame {pfn} (mapped {mapped}): not held by its slot"
                        ))
                    }
                }
                if pc.flags & pf::WRITEBACK != 0 {
                    anon_writeback += 1;
                    owned[self.dirty_stat_memcg(m as MemcgId) as usize][5] += 1;
                }
            } else if pc.flags & pf::SWAPBACKED != 0 && self.page_in_shmem_file(pfn as u32) {
                // A shmem page in its file: `file` and `shmem`, on the anon lists.
                owned[m][1] += 1;
                owned[m][9] += 1;
                let f = &self.files.v[(map.mapping & !MAPPING_FILE_BIT) as usize];
                let e = f.entries.get(map.index as usize).copied().unwrap_or(0);
                if crate::filemap::resident(e) != Some(pfn as u32) || f.shmem.is_none() {
                    return Err(format!("shmem frame {pfn}: not found at its index"));
                }
                if pc.flags & pf::WRITEBACK != 0 {
                    return Err(format!("shmem frame {pfn} under writeback in its file"));
                }
                if pc.flags & pf::MAPPED != 0 {
                    if f.mappers == 0 {
                        return Err(format!("shmem frame {pfn} mapped, its file in no mapping"));
                    }
                    owned[m][7] += 1;
                }
            } else if pc.flags & pf::SWAPBACKED != 0 {
                if pc.flags & pf::WRITEBACK != 0 {
                    return Err(format!(
                        "anon frame {pfn} under writeback outside the swap cache"
                    ));
                }
                owned[m][0] += 1;
                let v = &self.vmas.v[map.mapping as usize];
                if !v.live || v.ptes.get(map.index as usize) != Some(&(pfn as u32 + 1)) {
                    return Err(format!("anon frame {pfn}: rmap does not match its PTE"));
                }
            } else {
                owned[m][1] += 1;
                if map.mapping & MAPPING_FILE_BIT == 0 {
                    return Err(format!("file frame {pfn} without a file mapping"));
                }
                let f = &self.files.v[(map.mapping & !MAPPING_FILE_BIT) as usize];
                let e = f.entries.get(map.index as usize).copied().unwrap_or(0);
                if e & (1 << 62) == 0 || (e & 0xffff_ffff) as usize != pfn {
                    return Err(format!("file frame {pfn}: not found at its index"));
                }
                let fi = (map.mapping & !MAPPING_FILE_BIT) as usize;
                if pc.flags & pf::MAPPED != 0 {
                    if f.mappers == 0 {
                        return Err(format!("file frame {pfn} mapped, its file in no mapping"));
                    }
                    owned[m][7] += 1;
                } else if pc.flags & pf::YOUNG != 0 {
                    return Err(format!("file frame {pfn} young without a mapping"));
                }
                let dirty = pc.flags & pf::DIRTY != 0;
                let wback = pc.flags & pf::WRITEBACK != 0;
                if dirty || wback {
                    let Some(w) = wb_pages.get_mut(f.wb as usize).filter(|_| f.wb != 0) else {
                        return Err(format!("dirty file frame {pfn}: its inode has no wb"));
                    };
                    w[0] += dirty as u64;
                    w[1] += wback as u64;
                }
                file_dirty[fi] += dirty as u64;
                let dm = self.dirty_stat_memcg(m as MemcgId) as usize;
                owned[dm][4] += dirty as i64;
                owned[dm][5] += wback as i64;
            }
            if pc.flags & pf::MLOCKED != 0 {
                owned[m][2] += 1;
            }
            owned[m][3] += 1;
        }
        // Kernel memory: frames = the base system's + every obj_cgroup's pages.
        let mut sub_kmem = vec![0u64; n];
        let mut objcg_pages = 0u64;
        for o in &self.kmem.objcgs {
            objcg_pages += o.pages;
            if o.memcg != ROOT_MEMCG && o.pages > 0 {
                if !(self.memcgs[o.memcg as usize].online || self.memcgs[o.memcg as usize].dying) {
                    return Err(format!("an obj_cgroup charges freed memcg {}", o.memcg));
                }
                sub_kmem[o.memcg as usize] += o.pages;
            }
            if o.charged_bytes >= crate::PAGE_SIZE {
                return Err("an obj_cgroup holds a whole page of charged bytes".into());
            }
        }
        for (&memcg, q) in &self.thp.split_queue {
            for &head in q {
                if !crate::huge_memory::is_head(&self.frames.meta, head)
                    || self.frames.memcg(head) != memcg
                {
                    return Err(format!(
                        "memcg {memcg}'s deferred split queue holds {head}, no huge folio of its"
                    ));
                }
            }
        }
        if huge_heads != self.thp.folios {
            return Err(format!(
                "{huge_heads} huge folios found, {} counted",
                self.thp.folios
            ));
        }
        let zswap_frames = self.zswap_frames.len() as u64;
        if kernel_frames != self.kmem.frames.len() as u64 + zswap_frames
            || kernel_frames != self.kmem.base_pages + objcg_pages + zswap_frames
        {
            return Err(format!(
                "{kernel_frames} kernel frames, {} held, base {} + obj_cgroups {objcg_pages} + zswap {zswap_frames}",
                self.kmem.frames.len(),
                self.kmem.base_pages
            ));
        }
        self.check_zswap()?;
        let mut swap_owned = vec![0i64; n];
        for o in self.swap.used_by() {
            swap_owned[o as usize] += 1;
        }
        // Every slot a page holds names that page; there are as many as the count says.
        let mut cached = 0u64;
        for (slot, pfn) in self.swap.cached_slots() {
            cached += 1;
            let pc = &self.frames.meta[pfn as usize].pc;
            if pc.flags & pf::ONDISK == 0 || self.swapcache_slot(pfn) != Some(slot) {
                return Err(format!(
                    "slot {slot}'s swap-cache page {pfn} does not hold it"
                ));
            }
        }
        if self.swap.nr_mapped() as u64 > cached {
            return Err(format!(
                "{} mapped swap-cache pages, {cached} in the cache",
                self.swap.nr_mapped()
            ));
        }
        // Every swap PTE holds its slot's count, and nothing else does.
        let mut swap_ptes = 0u64;
        for v in self.vmas.v.iter().filter(|v| v.live) {
            for &pte in &v.ptes {
                if pte & crate::memory::SWAP_PTE != 0 {
                    swap_ptes += 1;
                    if !self.swap.pte_held(pte & !crate::memory::SWAP_PTE) {
                        return Err(format!(
                            "a swap PTE's slot {} is not held",
                            pte & !crate::memory::SWAP_PTE
                        ));
                    }
                }
            }
        }
        // A shmem file's swap entries hold their slots too (SWAP_MAP_SHMEM).
        swap_ptes += self.files.v.iter().map(|f| f.swapped).sum::<u64>();
        self.check_shmem()?;
        let held = (0..self.swap.nr_slots())
            .filter(|&s| self.swap.pte_held(s))
            .count() as u64;
        if held != swap_ptes {
            return Err(format!("{held} slots held by PTEs, {swap_ptes} swap PTEs"));
        }
        // Anon pages under writeback are those of the swap writes in flight.
        if anon_writeback != self.swap_io.nr_writeback {
            return Err(format!(
                "{anon_writeback} anon pages under writeback, counted {}",
                self.swap_io.nr_writeback
            ));
        }
        let mut inflight = 0u64;
        for (pfn, slot) in self.swap_io.inflight_pages() {
            if self.frames.meta[pfn as usize].pc.flags & pf::WRITEBACK != 0
                && self.swap.cached(slot) == Some(pfn)
            {
                inflight += 1;
            }
        }
        if inflight != anon_writeback {
            return Err(format!(
                "{anon_writeback} anon pages under writeback, {inflight} in swap writes in flight"
            ));
        }
        if cached != self.swap.nr_cached() {
            return Err(format!(
                "{cached} swap-cache pages, counted {}",
                self.swap.nr_cached()
            ));
        }
        for (id, mc) in self.memcgs.iter().enumerate() {
            if id == 0 || !(mc.online || mc.dying) {
                if id != 0 && owned[id][3] != 0 {
                    return Err(format!("freed memcg {id} still owns pages"));
                }
                continue;
            }
            let l = &mc.stats.local;
            for (item, v) in [
                (Stat::Anon, owned[id][0]),
                (Stat::File, owned[id][1]),
                (Stat::Mlock, owned[id][2]),
                (Stat::Swap, swap_owned[id]),
                (Stat::FileDirty, owned[id][4]),
                (Stat::Writeback, owned[id][5]),
                (Stat::SwapCached, owned[id][6]),
                (Stat::FileMapped, owned[id][7]),
                (Stat::AnonThp, owned[id][8]),
                (Stat::Shmem, owned[id][9]),
                (Stat::ShmemThp, owned[id][10]),
                (Stat::ShmemPmdMapped, owned[id][11]),
            ] {
                if l[item as usize] != v {
                    return Err(format!(
                        "memcg {id}: stat {item:?} = {} but counts {v}",
                        l[item as usize]
                    ));
                }
            }
        }
        self.check_writeback(&file_dirty, &wb_pages)?;
        // Subtree sums, children before parents.
        let mut order: Vec<usize> = (1..n)
            .filter(|&i| self.memcgs[i].online || self.memcgs[i].dying)
            .collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.memcgs[i].depth));
        let mut sub_pages = vec![0u64; n];
        let mut sub_swap = vec![0u64; n];
        let mut sub_stock = vec![0u64; n];
        for s in &self.stock {
            if s.memcg != 0 {
                sub_stock[s.memcg as usize] += s.nr_pages;
            }
        }
        let mut sub_kmem_tree = sub_kmem.clone();
        let mut sub_groups = vec![1u64; n];
        let mut child_usage = vec![0u64; n];
        let mut child_min = vec![0u64; n];
        let mut child_low = vec![0u64; n];
        for &i in &order {
            // zswap's compressed bytes are charged too, in whole pages, as kernel memory
            // (zswap.rs).
            sub_pages[i] += owned[i][3] as u64 + sub_kmem[i] + self.memcgs[i].zswap_pages;
            sub_kmem_tree[i] += self.memcgs[i].zswap_pages;
            sub_swap[i] += swap_owned[i] as u64;
            let c = self.memory.get(i);
            if i != ROOT_MEMCG as usize {
                let expect = sub_pages[i] + sub_stock[i];
                if c.usage != expect {
                    return Err(format!(
                        "memcg {i}: memory usage {} but owns {} pages (kernel memory too) + {} stock",
                        c.usage, sub_pages[i], sub_stock[i]
                    ));
                }
                if self.is_v1() {
                    let k = self.kmem.counter.get(i).usage;
                    if k != sub_kmem_tree[i] {
                        return Err(format!(
                            "memcg {i}: kmem usage {k} but its subtree's obj_cgroups hold {}",
                            sub_kmem_tree[i]
                        ));
                    }
                    let s = self.memsw.get(i);
                    if s.usage != expect + sub_swap[i] {
                        return Err(format!(
                            "memcg {i}: memsw usage {} but expected {}",
                            s.usage,
                            expect + sub_swap[i]
                        ));
                    }
                } else if self.swap_counter.get(i).usage != sub_swap[i] {
                    return Err(format!(
                        "memcg {i}: swap usage {} but owns {} swap entries",
                        self.swap_counter.get(i).usage,
                        sub_swap[i]
                    ));
                }
            }
            if c.usage < child_usage[i] {
                return Err(format!(
                    "memcg {i}: usage {} below its children's sum {}",
                    c.usage, child_usage[i]
                ));
            }
            if c.children_min_usage != child_min[i] || c.children_low_usage != child_low[i] {
                return Err(format!(
                    "memcg {i}: children protected usage sums are stale"
                ));
            }
            if self.memcgs[i].subtree_groups != sub_groups[i] {
                return Err(format!(
                    "memcg {i}: subtree_groups {} but its subtree has {}",
                    self.memcgs[i].subtree_groups, sub_groups[i]
                ));
            }
            if let Some(p) = self.memcgs[i].parent {
                let p = p as usize;
                sub_groups[p] += sub_groups[i];
                sub_pages[p] += sub_pages[i];
                sub_swap[p] += sub_swap[i];
                sub_stock[p] += sub_stock[i];
                sub_kmem_tree[p] += sub_kmem_tree[i];
                child_usage[p] += c.usage;
                child_min[p] += c.min_usage;
                child_low[p] += c.low_usage;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::MachineConfig;
    use crate::Machine;

    #[test]
    fn a_check_interval_checks_every_nth_step() {
        let mut m = Machine::new(MachineConfig::default()).unwrap();
        m.check_invariants = true;
        m.check_every = 3;
        m.check_now();
        assert_eq!(m.check_countdown, 3);
        m.after_step_check();
        m.after_step_check();
        assert_eq!(m.check_countdown, 1);
        // The third step checks and starts the count again.
        m.after_step_check();
        assert_eq!(m.check_countdown, 3);
        // Without checks nothing counts.
        m.check_invariants = false;
        m.after_step_check();
        assert_eq!(m.check_countdown, 3);
    }
}
