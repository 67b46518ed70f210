//! Anonymous transparent huge pages: mm/huge_memory.c of 6.1 — the sysfs switches
//! `enabled` and `defrag` (transparent_hugepage_flags), hugepage_vma_check() and
//! transhuge_vma_suitable() for a fault, vma_thp_gfp_mask(), do_huge_pmd_anonymous_page()
//! (allocate an order-9 folio, charge it as one, map it with one PMD, put it on the LRU as
//! one entry of 512 pages), split_huge_page_to_list() as reclaim uses it, the freeing of a
//! PMD-mapped folio at unmap (zap_huge_pmd()), and khugepaged's
//! set_recommended_min_free_kbytes() (mm/khugepaged.c), which raises min_free_kbytes while
//! THP is enabled, with hugepage_init()'s rule that a machine under 512 MiB boots with THP
//! off.
//!
//! A huge folio is 512 frames from one order-9 buddy block. The head frame carries the
//! folio: its flags, its LRU links, its reverse map (the VMA and the index of the huge
//! range's first page). Each tail frame is marked by the LRU value [`LRU_TAIL`], holds the
//! head's memcg, and keeps its offset from the head in `map.index` under the mapping
//! [`TAIL_MAPPING`]. A folio's PTEs are those of a PMD mapping seen page by page: each page
//! of the range points at its own frame, so an access finds its frame without a lookup and
//! sets the accessed bit of the head (the PMD's one bit).
//!
//! Simplified, and said in docs/FIDELITY.md:
//! - a mapping starts on a 2 MiB boundary (as 6.7 and later place large anonymous mappings;
//!   6.1 places them at any page, so a mapping of n × 2 MiB may have one huge range fewer
//!   there);
//! - there is no huge zero page: every access is a write, as the workloads' are;
//! - a fault whose gfp allows direct reclaim compacts and reclaims as 6.1's slow path does for
//!   a costly order (page_alloc.rs, compaction.rs), but kswapd, when the gfp wakes it, is
//!   woken for order 0 and so never wakes kcompactd;
//! - reclaim splits every huge folio it swaps (THP_SWPOUT_FALLBACK, with the swap `fail`
//!   event of the empty entry), as 6.1 did every time on the oracle's swap disk; swapping a
//!   folio whole into a free swap cluster (THP_SWPOUT) is not modelled;
//! - a huge folio is mapped by one PMD or, after MADV_DONTNEED of part of its range, by the
//!   PTEs of its own range only (no mremap, no fork), so page i of the folio is page i of
//!   the range; khugepaged's collapse is khugepaged.rs.
//!
//! MADV_DONTNEED of part of a huge range (zap_pmd_range(), memory.rs): __split_huge_pmd()
//! turns the PMD into PTEs (THP_SPLIT_PMD; NR_ANON_THPS drops), the PTEs in the range go
//! (NR_ANON_MAPPED drops page by page) while their pages stay in the folio, charged, and the
//! folio joins its memcg's deferred split queue (deferred_split_folio(),
//! THP_DEFERRED_SPLIT_PAGE). The queue's shrinker (deferred_split_scan(), run by
//! shrink_slab() for the memcg) and reclaim of the folio itself (shrink_folio_list() splits
//! a partly mapped folio at once) split it: the mapped pages become pages of their own, the
//! unmapped ones are freed (THP_SPLIT_PAGE). An unmap of the rest frees the folio whole.

use crate::machine::Machine;
use crate::memcontrol::ChargeError;
use crate::page_cgroup::{pf, FrameMeta, PageMap, Pfn};
use crate::program::{Fault, Pid};
use crate::stat::Stat;

/// HPAGE_PMD_ORDER on x86-64.
pub const HPAGE_PMD_ORDER: u32 = 9;
/// HPAGE_PMD_NR: the pages of a PMD-mapped folio.
pub const HPAGE_PMD_NR: u64 = 1 << HPAGE_PMD_ORDER;

/// The LRU value of a huge folio's tail frame (the LRU lists are 0..=4, 7 is none).
pub const LRU_TAIL: u16 = 5;
/// `PageMap::mapping` of a tail frame; its `index` is its offset from the head.
pub const TAIL_MAPPING: u32 = u32::MAX - 2;

/// The flag of a huge shmem folio's first tail frame that says a PMD maps the folio whole.
/// That frame keeps, as the kernel's first tail page keeps the mapcounts, how many of the
/// folio's pages are mapped, in `pc.prev` (shmem.rs); the tail frames are on no list.
pub(crate) const TAIL_PMD_MAPPED: u16 = pf::ACTIVE;

/// The flags a split gives each page of the folio from its head (__split_huge_page_tail():
/// PG_referenced, PG_active, PG_workingset, PG_mlocked, PG_dirty, PG_swapbacked).
pub(crate) const SPLIT_COPIED_FLAGS: u16 =
    pf::REFERENCED | pf::ACTIVE | pf::WORKINGSET | pf::MLOCKED | pf::DIRTY | pf::SWAPBACKED;

/// The time to clear one 4 KiB page of a new huge folio (clear_huge_page(): about 16 GB/s).
pub(crate) const CLEAR_PAGE_NS: u64 = 250;

/// /sys/kernel/mm/transparent_hugepage/enabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpEnabled {
    Always,
    Madvise,
    Never,
}

impl ThpEnabled {
    pub const NAMES: [&'static str; 3] = ["always", "madvise", "never"];

    pub fn from_name(s: &str) -> Option<ThpEnabled> {
        Some(match s {
            "always" => ThpEnabled::Always,
            "madvise" => ThpEnabled::Madvise,
            "never" => ThpEnabled::Never,
            _ => return None,
        })
    }

    /// The word for this mode (the sysfs file's, and the kernel parameter's).
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The sysfs file's text: every value, the current one in brackets.
    pub fn show(self) -> String {
        show_choice(&Self::NAMES, self as usize)
    }
}

/// /sys/kernel/mm/transparent_hugepage/defrag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpDefrag {
    Always,
    Defer,
    DeferMadvise,
    Madvise,
    Never,
}

impl ThpDefrag {
    pub const NAMES: [&'static str; 5] = ["always", "defer", "defer+madvise", "madvise", "never"];

    pub fn from_name(s: &str) -> Option<ThpDefrag> {
        Some(match s {
            "always" => ThpDefrag::Always,
            "defer" => ThpDefrag::Defer,
            "defer+madvise" => ThpDefrag::DeferMadvise,
            "madvise" => ThpDefrag::Madvise,
            "never" => ThpDefrag::Never,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn show(self) -> String {
        show_choice(&Self::NAMES, self as usize)
    }
}

/// Huge pages for shmem (mm/shmem.c's SHMEM_HUGE_*): a tmpfs mount's `huge=` option, and
/// /sys/kernel/mm/transparent_hugepage/shmem_enabled, which sets the internal mount's
/// (MAP_SHARED anonymous memory, memfd) and adds two overrides for every mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShmemHuge {
    /// A huge page for every new page.
    Always,
    /// Only where the whole huge page lies inside the file's size.
    WithinSize,
    /// Only in mappings with MADV_HUGEPAGE.
    Advise,
    Never,
    /// shmem_enabled only: no huge pages on any mount.
    Deny,
    /// shmem_enabled only: huge pages on every mount.
    Force,
}

impl ShmemHuge {
    /// shmem_enabled's words, in the order its show function prints them.
    pub const NAMES: [&'static str; 6] =
        ["always", "within_size", "advise", "never", "deny", "force"];

    /// shmem_parse_huge(): the exact word (no trailing space is forgiven).
    pub fn from_name(s: &str) -> Option<ShmemHuge> {
        Some(match s {
            "always" => ShmemHuge::Always,
            "within_size" => ShmemHuge::WithinSize,
            "advise" => ShmemHuge::Advise,
            "never" => ShmemHuge::Never,
            "deny" => ShmemHuge::Deny,
            "force" => ShmemHuge::Force,
            _ => return None,
        })
    }

    /// A mount option's value: one of the four a mount takes.
    pub fn from_mount_option(s: &str) -> Option<ShmemHuge> {
        Self::from_name(s).filter(|h| !matches!(h, ShmemHuge::Deny | ShmemHuge::Force))
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn show(self) -> String {
        show_choice(&Self::NAMES, self as usize)
    }
}

fn show_choice(names: &[&str], cur: usize) -> String {
    let mut s = String::new();
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        if i == cur {
            s.push('[');
            s.push_str(n);
            s.push(']');
        } else {
            s.push_str(n);
        }
    }
    s.push('\n');
    s
}

/// A mapping's madvise() advice about huge pages (VM_HUGEPAGE, VM_NOHUGEPAGE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HugeAdvice {
    #[default]
    None,
    /// MADV_HUGEPAGE.
    Huge,
    /// MADV_NOHUGEPAGE.
    NoHuge,
}

/// What vma_thp_gfp_mask() lets a huge allocation do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThpGfp {
    /// __GFP_DIRECT_RECLAIM.
    pub direct_reclaim: bool,
    /// __GFP_KSWAPD_RECLAIM.
    pub kswapd: bool,
    /// __GFP_NORETRY.
    pub noretry: bool,
}

/// The vm events of THP in /proc/vmstat (vm_event_item's THP_*).
#[derive(Clone, Debug, Default)]
pub struct ThpEvents {
    pub fault_alloc: u64,
    pub fault_fallback: u64,
    pub fault_fallback_charge: u64,
    pub split_page: u64,
    pub split_pmd: u64,
    pub swpout_fallback: u64,
    /// THP_DEFERRED_SPLIT_PAGE: folios put on a deferred split queue.
    pub deferred_split_page: u64,
    /// THP_COLLAPSE_ALLOC and THP_COLLAPSE_ALLOC_FAILED: khugepaged's allocations.
    pub collapse_alloc: u64,
    pub collapse_alloc_failed: u64,
    /// THP_FILE_ALLOC, THP_FILE_FALLBACK, THP_FILE_FALLBACK_CHARGE and THP_FILE_MAPPED:
    /// shmem's huge folios (shmem.rs).
    pub file_alloc: u64,
    pub file_fallback: u64,
    pub file_fallback_charge: u64,
    pub file_mapped: u64,
}

/// The THP state of a machine: the sysfs switches and the events.
#[derive(Clone, Debug)]
pub struct Thp {
    pub enabled: ThpEnabled,
    pub defrag: ThpDefrag,
    /// shmem_enabled (the kernel's `shmem_huge`).
    pub shmem_huge: ShmemHuge,
    pub events: ThpEvents,
    /// Huge folios alive: while there are none, every folio is one page and the LRU code
    /// need not look for tails.
    pub folios: u64,
    /// The deferred split queues (memcg->deferred_split_queue): per memcg, the heads of its
    /// huge folios that a partial unmap left mapped by PTEs, oldest first.
    pub split_queue: std::collections::BTreeMap<crate::memcontrol::MemcgId, Vec<Pfn>>,
}

/// Whether the frame after `pfn` is a tail: `pfn` is then a huge folio's head.
#[inline]
pub fn is_head(meta: &[FrameMeta], pfn: Pfn) -> bool {
    let tail = |m: &FrameMeta| m.pc.flags & pf::LRU_MASK == LRU_TAIL;
    meta.get(pfn as usize + 1).is_some_and(tail) && !tail(&meta[pfn as usize])
}

/// folio_nr_pages() of the folio whose head (or only page) is `pfn`, where `huge` says
/// whether any huge folio lives (while none does, no frame need be looked at).
#[inline]
pub fn nr_pages(meta: &[FrameMeta], pfn: Pfn, huge: bool) -> u64 {
    if huge && is_head(meta, pfn) {
        HPAGE_PMD_NR
    } else {
        1
    }
}

impl Machine {
    /// folio_nr_pages() of the folio whose head (or only page) is `pfn`.
    #[inline]
    pub fn folio_nr_pages(&self, pfn: Pfn) -> u64 {
        nr_pages(&self.frames.meta, pfn, self.thp.folios > 0)
    }

    /// The head of the folio that frame `pfn` belongs to.
    #[inline]
    pub fn folio_head(&self, pfn: Pfn) -> Pfn {
        let m = &self.frames.meta[pfn as usize];
        if m.pc.flags & pf::LRU_MASK == LRU_TAIL {
            pfn - m.map.index
        } else {
            pfn
        }
    }

    /// hugepage_flags_enabled(): THP is on for some mappings (always or madvise).
    pub fn hugepage_flags_enabled(&self) -> bool {
        self.thp.enabled != ThpEnabled::Never
    }

    /// The first page of the huge range around page `idx` of `vma`, if a fault there may
    /// map a huge folio: hugepage_vma_check() for a fault (the sysfs switch, the mapping's
    /// advice) and transhuge_vma_suitable() (the aligned 2 MiB range lies inside the
    /// mapping), with pmd_none(): no page table maps the range yet.
    pub(crate) fn thp_fault_range(&self, vma: u32, idx: u32) -> Option<u32> {
        let v = &self.vmas.v[vma as usize];
        let ok = match (self.thp.enabled, v.huge) {
            (_, HugeAdvice::NoHuge) | (ThpEnabled::Never, _) => false,
            (ThpEnabled::Always, _) => true,
            (ThpEnabled::Madvise, a) => a == HugeAdvice::Huge,
        };
        if !ok {
            return None;
        }
        let start = idx & !(HPAGE_PMD_NR as u32 - 1);
        if u64::from(start) + HPAGE_PMD_NR > v.ptes.len() as u64 {
            return None;
        }
        if v.pt_region_populated(start) {
            return None;
        }
        Some(start)
    }

    /// vma_thp_gfp_mask(): what a huge allocation for a mapping with `advice` may do under
    /// the `defrag` setting.
    pub fn vma_thp_gfp(&self, advice: HugeAdvice) -> ThpGfp {
        let madvised = advice == HugeAdvice::Huge;
        let g = |direct_reclaim, kswapd, noretry| ThpGfp {
            direct_reclaim,
            kswapd,
            noretry,
        };
        match self.thp.defrag {
            ThpDefrag::Always => g(true, true, !madvised),
            ThpDefrag::Defer => g(false, true, false),
            ThpDefrag::DeferMadvise => g(madvised, !madvised, false),
            ThpDefrag::Madvise => g(madvised, false, false),
            ThpDefrag::Never => g(false, false, false),
        }
    }

    /// do_huge_pmd_anonymous_page() for the huge range starting at page `start` of `vma`:
    /// allocate an order-9 folio (THP_FAULT_FALLBACK when there is none), charge its 512
    /// pages at once with the allocation's gfp (THP_FAULT_FALLBACK_CHARGE when that fails:
    /// mem_cgroup_charge() never OOM-kills for it), clear it, map it and put it on the
    /// inactive (or unevictable) list. Ok(false): fall back to a small page.
    pub(crate) fn do_huge_pmd_anonymous_page(
        &mut self,
        pid: Pid,
        vma: u32,
        start: u32,
    ) -> Result<bool, Fault> {
        self.khugepaged_enter_vma(pid, vma);
        let advice = self.vmas.v[vma as usize].huge;
        let gfp = self.vma_thp_gfp(advice);
        let Some(head) = self.alloc_thp_folio(gfp) else {
            self.thp.events.fault_fallback += 1;
            return Ok(false);
        };
        let memcg = self.task(pid).memcg;
        let saved = (self.gfp_noretry, self.gfp_nowait);
        self.gfp_noretry = gfp.noretry;
        self.gfp_nowait = !gfp.direct_reclaim;
        let r = self.try_charge(memcg, HPAGE_PMD_NR);
        (self.gfp_noretry, self.gfp_nowait) = saved;
        if let Err(e) = r {
            self.free_thp_frames(head);
            self.thp.events.fault_fallback += 1;
            self.thp.events.fault_fallback_charge += 1;
            return match e {
                ChargeError::NoMem => Ok(false),
                e => Err(e.into()),
            };
        }
        if !self.vmas.v[vma as usize].live {
            // The task was killed and reaped while the charge reclaimed.
            self.uncharge_folio(memcg, HPAGE_PMD_NR);
            self.free_thp_frames(head);
            return Err(Fault::Killed);
        }
        // The page table deposited with the huge PMD (pte_alloc_one()): the range's PTE
        // page, as a small fault there would have allocated it.
        if let Err(e) = self.pte_alloc(pid, vma, start) {
            self.uncharge_folio(memcg, HPAGE_PMD_NR);
            self.free_thp_frames(head);
            return Err(e);
        }
        self.spend_cpu(self.cfg.costs.minor_fault_ns + (HPAGE_PMD_NR - 1) * CLEAR_PAGE_NS);
        self.mod_stat(memcg, Stat::Pgfault, 1);
        self.task_mut(pid).stats.minflt += 1;
        self.commit_charge_folio(head, memcg, HPAGE_PMD_NR);
        for i in 1..HPAGE_PMD_NR as u32 {
            self.frames.set_memcg(head + i, memcg);
        }
        self.anon_rmap(vma, start, head, HPAGE_PMD_NR);
        self.mod_stat(memcg, Stat::AnonThp, HPAGE_PMD_NR as i64);
        let v = &mut self.vmas.v[vma as usize];
        for i in 0..HPAGE_PMD_NR as u32 {
            v.ptes[(start + i) as usize] = head + i + 1;
        }
        self.task_mut(pid).rss_anon += HPAGE_PMD_NR;
        self.lru_add(head);
        self.thp.events.fault_alloc += 1;
        self.mod_stat(memcg, Stat::ThpFaultAlloc, 1);
        Ok(true)
    }

    /// The frames of an order-9 block just taken from the free lists become a huge folio:
    /// the head as prep_new_page() leaves a page, the tails marked.
    pub(crate) fn prep_thp_tails(&mut self, head: Pfn) {
        for i in 1..HPAGE_PMD_NR as u32 {
            let m = &mut self.frames.meta[(head + i) as usize];
            debug_assert_eq!(m.pc.flags & pf::ALLOCATED, 0);
            m.pc.flags = LRU_TAIL | pf::ALLOCATED;
            m.pc.prev = 0;
            m.map = PageMap {
                mapping: TAIL_MAPPING,
                index: i,
            };
        }
        self.thp.folios += 1;
    }

    /// Free the 512 frames of a huge folio that is off the LRU, out of every mapping and
    /// uncharged, as one order-9 block (free_compound_page()).
    pub(crate) fn free_thp_frames(&mut self, head: Pfn) {
        debug_assert_eq!(self.frames.lru(head), crate::page_cgroup::LRU_NONE);
        debug_assert!(self.thp.folios > 0);
        self.thp.folios -= 1;
        for i in 0..HPAGE_PMD_NR as u32 {
            let pfn = head + i;
            self.frames.set_memcg(pfn, 0);
            let m = &mut self.frames.meta[pfn as usize];
            m.pc.flags = crate::page_cgroup::LRU_NONE;
            m.pc.prev = crate::page_cgroup::NIL;
            m.pc.next = crate::page_cgroup::NIL;
            m.map = PageMap {
                mapping: crate::page_cgroup::NO_MAPPING,
                index: 0,
            };
        }
        let cpu = self.current_cpu();
        if self.kswapd.in_step {
            // kswapd's frees join the free lists at the time they happen, frame by frame
            // (they merge back into the block there).
            let t = self.now();
            for i in 0..HPAGE_PMD_NR as u32 {
                self.kswapd.freeing.push_back((t, head + i, cpu));
            }
        } else {
            let reclaim_active = self.kswapd.awake;
            self.frames
                .free_unref_page(head, HPAGE_PMD_ORDER, cpu, &self.zones, reclaim_active);
        }
    }

    /// zap_huge_pmd() of a PMD-mapped anon folio: the rmap goes (NR_ANON_MAPPED,
    /// NR_ANON_THPS, the mlock count), the folio leaves its LRU list, is uncharged on its
    /// own (its release in the gather is __folio_put_large(), outside the batch's
    /// uncharge) and freed.
    pub(crate) fn zap_huge_pmd(&mut self, head: Pfn) -> u64 {
        let memcg = self.frames.memcg(head);
        self.lru_del(head);
        if self.frames.test(head, pf::MLOCKED) {
            self.mod_stat(memcg, Stat::Mlock, -(HPAGE_PMD_NR as i64));
        }
        self.mod_stat(memcg, Stat::Anon, -(HPAGE_PMD_NR as i64));
        self.mod_stat(memcg, Stat::AnonThp, -(HPAGE_PMD_NR as i64));
        self.uncharge_folio(memcg, HPAGE_PMD_NR);
        self.free_thp_frames(head);
        HPAGE_PMD_NR
    }

    /// split_huge_page_to_list() of an isolated PMD-mapped anon folio for reclaim: the PMD
    /// becomes a page table of 512 PTEs (THP_SPLIT_PMD), each page a folio of its own with
    /// the head's flags (__split_huge_page_tail() copies PG_referenced, PG_active,
    /// PG_workingset, PG_mlocked, PG_dirty, PG_swapbacked), its memcg and its place in
    /// the mapping; 6.1 remaps the pages through migration entries, which keep no accessed
    /// bit, so every PTE is old. NR_ANON_THPS drops (THP_SPLIT_PAGE). Returns the tails,
    /// which reclaim takes next, in order.
    pub(crate) fn split_huge_page_for_reclaim(&mut self, head: Pfn) -> Vec<Pfn> {
        debug_assert!(is_head(&self.frames.meta, head));
        debug_assert_eq!(self.frames.lru(head), crate::page_cgroup::LRU_NONE);
        let memcg = self.frames.memcg(head);
        self.frames.clear(head, pf::YOUNG);
        let copied = self.frames.flags(head) & (SPLIT_COPIED_FLAGS | pf::MAPPED);
        let m = self.frames.meta[head as usize].map;
        let mut tails = Vec::with_capacity(HPAGE_PMD_NR as usize - 1);
        for i in 1..HPAGE_PMD_NR as u32 {
            let t = &mut self.frames.meta[(head + i) as usize];
            t.pc.flags = crate::page_cgroup::LRU_NONE | pf::ALLOCATED | copied;
            t.map = PageMap {
                mapping: m.mapping,
                index: m.index + i,
            };
            tails.push(head + i);
        }
        self.thp.folios -= 1;
        self.mod_stat(memcg, Stat::AnonThp, -(HPAGE_PMD_NR as i64));
        self.thp.events.split_pmd += 1;
        self.thp.events.split_page += 1;
        tails
    }

    /// Whether the huge folio of `head` is mapped by PTEs and waits on its memcg's deferred
    /// split queue.
    pub(crate) fn folio_deferred(&self, head: Pfn) -> bool {
        self.thp.folios > 0
            && self
                .thp
                .split_queue
                .get(&self.frames.memcg(head))
                .is_some_and(|q| q.contains(&head))
    }

    /// __split_huge_pmd() of a PMD-mapped folio: its PMD becomes the 512 PTEs its range
    /// already holds (THP_SPLIT_PMD), and NR_ANON_THPS, which counts PMD mappings, drops.
    /// The folio stays whole.
    pub(crate) fn split_huge_pmd(&mut self, head: Pfn) {
        let memcg = self.frames.memcg(head);
        self.mod_stat(memcg, Stat::AnonThp, -(HPAGE_PMD_NR as i64));
        self.thp.events.split_pmd += 1;
    }

    /// deferred_split_folio(): a partly mapped folio joins its memcg's queue, once.
    pub(crate) fn deferred_split_folio(&mut self, head: Pfn) {
        let memcg = self.frames.memcg(head);
        let q = self.thp.split_queue.entry(memcg).or_default();
        if !q.contains(&head) {
            q.push(head);
            self.thp.events.deferred_split_page += 1;
        }
    }

    /// Take a folio off its deferred split queue.
    fn deferred_split_remove(&mut self, head: Pfn) {
        let memcg = self.frames.memcg(head);
        if let Some(q) = self.thp.split_queue.get_mut(&memcg) {
            q.retain(|&h| h != head);
            if q.is_empty() {
                self.thp.split_queue.remove(&memcg);
            }
        }
    }

    /// The pages of a PTE-mapped folio that its range still maps.
    pub(crate) fn folio_mapped_pages(&self, head: Pfn) -> u64 {
        let m = self.frames.meta[head as usize].map;
        let v = &self.vmas.v[m.mapping as usize];
        (0..HPAGE_PMD_NR as u32)
            .filter(|&i| v.ptes.get((m.index + i) as usize) == Some(&(head + i + 1)))
            .count() as u64
    }

    /// The last page of a PTE-mapped folio was unmapped (the folio's refcount drops to 0):
    /// off its queue and its LRU list, uncharged and freed whole.
    pub(crate) fn free_unmapped_folio(&mut self, head: Pfn) {
        let memcg = self.frames.memcg(head);
        self.deferred_split_remove(head);
        self.lru_del(head);
        if self.frames.test(head, pf::MLOCKED) {
            self.mod_stat(memcg, Stat::Mlock, -(HPAGE_PMD_NR as i64));
        }
        self.uncharge_folio(memcg, HPAGE_PMD_NR);
        self.free_thp_frames(head);
    }

    /// split_huge_page() of a PTE-mapped folio (the queue's shrinker, or reclaim, which has
    /// it isolated: `on_lru` false): each page its range still maps becomes a page of its
    /// own with the head's flags (__split_huge_page_tail()), each other one is freed with
    /// its charge (the put at the end of __split_huge_page(); THP_SPLIT_PAGE). On the LRU,
    /// the pages kept go back on their lists; isolated, the kept tails are returned in order
    /// for reclaim to take next. Returns them and whether the head is mapped (an isolated
    /// unmapped head is left to the caller, which frees it).
    pub(crate) fn split_deferred_folio(&mut self, head: Pfn, on_lru: bool) -> (Vec<Pfn>, bool) {
        let memcg = self.frames.memcg(head);
        self.deferred_split_remove(head);
        if on_lru {
            self.lru_del(head);
        }
        let m = self.frames.meta[head as usize].map;
        let copied = self.frames.flags(head) & SPLIT_COPIED_FLAGS;
        let mapped = |me: &Machine, i: u32| {
            me.vmas.v[m.mapping as usize]
                .ptes
                .get((m.index + i) as usize)
                == Some(&(head + i + 1))
        };
        let mut kept = Vec::new();
        let mut freed = Vec::new();
        for i in 1..HPAGE_PMD_NR as u32 {
            let is_mapped = mapped(self, i);
            let t = &mut self.frames.meta[(head + i) as usize];
            t.pc.flags = crate::page_cgroup::LRU_NONE
                | pf::ALLOCATED
                | copied
                | if is_mapped { pf::MAPPED } else { 0 };
            t.map = PageMap {
                mapping: m.mapping,
                index: m.index + i,
            };
            if is_mapped {
                kept.push(head + i);
            } else {
                freed.push((head + i, Some(memcg)));
            }
        }
        let head_mapped = mapped(self, 0);
        if !head_mapped {
            self.frames.clear(head, pf::MAPPED | pf::YOUNG);
        }
        self.thp.folios -= 1;
        self.thp.events.split_page += 1;
        let unmapped = freed.len() as i64 + i64::from(!head_mapped);
        if copied & pf::MLOCKED != 0 {
            self.mod_stat(memcg, Stat::Mlock, -unmapped);
        }
        for &(pfn, _) in &freed {
            self.frames.clear(pfn, pf::MLOCKED);
        }
        self.free_page_list(&freed);
        if on_lru {
            if head_mapped {
                self.lru_add(head);
            } else {
                self.frames.clear(head, pf::MLOCKED);
                self.free_page_list(&[(head, Some(memcg))]);
            }
            for &t in &kept {
                self.lru_add(t);
            }
            kept.clear();
        }
        (kept, head_mapped)
    }

    /// deferred_split_scan() of `memcg`'s queue under shrink_slab() at `priority`, with the
    /// dcache shrinker's arithmetic (DEFAULT_SEEKS, SHRINK_BATCH): the oldest folios split.
    /// Returns the pages freed.
    pub(crate) fn deferred_split_scan(
        &mut self,
        memcg: crate::memcontrol::MemcgId,
        priority: i32,
    ) -> u64 {
        let freeable = self
            .thp
            .split_queue
            .get(&memcg)
            .map_or(0, |q| q.len() as u64);
        if freeable == 0 {
            return 0;
        }
        let to_scan = crate::kmem::shrinker_scan_count(freeable, priority);
        let mut freed = 0;
        for _ in 0..to_scan {
            let Some(&head) = self.thp.split_queue.get(&memcg).and_then(|q| q.first()) else {
                break;
            };
            if self.frames.lru(head) == crate::page_cgroup::LRU_NONE {
                // Isolated by a reclaimer, which will split it: try the next one.
                self.deferred_split_remove(head);
                self.thp.split_queue.entry(memcg).or_default().push(head);
                continue;
            }
            let before = self.folio_mapped_pages(head);
            self.split_deferred_folio(head, true);
            freed += HPAGE_PMD_NR - before;
        }
        freed
    }

    /// khugepaged's set_recommended_min_free_kbytes(): while THP is enabled, keep free two
    /// pageblocks per zone and, per zone, a pageblock for each pair of the three movable
    /// types (MIGRATE_PCPTYPES squared), at most 5% of the pages above the high watermarks
    /// (nr_free_buffer_pages()); min_free_kbytes rises to that and the watermarks follow.
    /// A value written by the user (`min_free_kbytes=`) stays.
    pub fn set_recommended_min_free_kbytes(&mut self) {
        if !self.hugepage_flags_enabled() || self.cfg.min_free_kbytes.is_some() {
            return;
        }
        let pageblock = 1u64 << crate::buddy::PAGEBLOCK_ORDER;
        let nr_zones = self.zones.zone.iter().filter(|z| z.managed > 0).count() as u64;
        let mut recommended = pageblock * nr_zones * 2 + pageblock * nr_zones * 3 * 3;
        let free_buffer: u64 = self
            .zones
            .zone
            .iter()
            .map(|z| z.managed.saturating_sub(z.high))
            .sum();
        recommended = recommended.min(free_buffer / 20) * (crate::PAGE_SIZE / 1024);
        if recommended > self.zones.min_free_kbytes {
            self.zones = crate::mmzone::Zones::new(
                self.cfg.ram_pages(),
                self.totalram_pages,
                Some(recommended),
                self.watermark_scale_factor_in_use(),
                self.cfg.cpus,
            );
        }
    }

    /// hugepage_init() at boot: on a machine with less than 512 MiB of RAM (MemTotal), 6.1
    /// clears every THP flag whatever the command line asked (enabled and defrag read
    /// never) and does not start khugepaged; the admin may still enable it through /sys.
    /// Otherwise khugepaged starts if THP is enabled, raising min_free_kbytes.
    pub(crate) fn hugepage_init(&mut self) {
        if self.totalram_pages < (512 << 20) / crate::PAGE_SIZE {
            self.thp.enabled = ThpEnabled::Never;
            self.thp.defrag = ThpDefrag::Never;
            return;
        }
        self.set_recommended_min_free_kbytes();
    }

    /// A write to /sys/kernel/mm/transparent_hugepage/shmem_enabled: `deny` and `force`
    /// override every mount; another value is also the internal mount's `huge`
    /// (shmem_enabled_store()).
    pub fn set_shmem_enabled(&mut self, h: ShmemHuge) {
        self.thp.shmem_huge = h;
        if !matches!(h, ShmemHuge::Deny | ShmemHuge::Force) {
            if let Some(m) = self.shmem.mounts[crate::shmem::SHM_MNT as usize].as_mut() {
                m.huge = h;
            }
        }
    }

    /// A write to /sys/kernel/mm/transparent_hugepage/enabled: khugepaged starts (and
    /// raises min_free_kbytes) when THP becomes enabled.
    pub fn set_thp_enabled(&mut self, e: ThpEnabled) {
        self.thp.enabled = e;
        self.set_recommended_min_free_kbytes();
        self.khugepaged_kick();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MachineConfig;
    use crate::memcontrol::{MemcgId, ROOT_MEMCG};
    use crate::program::Idle;
    use crate::sched::ExecCtx;

    fn machine(keys: &[(&str, &str)]) -> Machine {
        let mut cfg = MachineConfig::default();
        for (k, v) in [("memory", "1G"), ("swap", "256M")].iter().chain(keys) {
            cfg.set(k, v).unwrap();
        }
        let mut m = Machine::new(cfg).unwrap();
        m.check_invariants = true;
        m
    }

    fn task(m: &mut Machine, memcg: MemcgId) -> Pid {
        let pid = m.spawn(memcg, "idle".into(), 0, Box::new(Idle));
        m.cur = Some(ExecCtx::new(Some(pid), 0, m.sched.clock));
        pid
    }

    /// A THP `always` machine with `keys` whose group's task has written `pages` of a
    /// mapping: the machine, the group, the task, the mapping.
    fn written(keys: &[(&str, &str)], pages: u32) -> (Machine, MemcgId, Pid, u32) {
        let all: Vec<_> = [("thp", "always")].iter().chain(keys).copied().collect();
        let mut m = machine(&all);
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let pid = task(&mut m, a);
        let vma = m.mmap_anon(pid, pages, false);
        for i in 0..pages {
            m.touch_anon(pid, vma, i).unwrap();
        }
        (m, a, pid, vma)
    }

    #[test]
    fn the_sysfs_files_print_every_choice_with_the_current_one_in_brackets() {
        assert_eq!(ThpEnabled::Always.show(), "[always] madvise never\n");
        assert_eq!(ThpEnabled::Never.show(), "always madvise [never]\n");
        assert_eq!(
            ThpDefrag::Madvise.show(),
            "always defer defer+madvise [madvise] never\n"
        );
        for n in ThpDefrag::NAMES {
            assert!(ThpDefrag::from_name(n)
                .unwrap()
                .show()
                .contains(&format!("[{n}]")));
        }
        assert_eq!(ThpEnabled::from_name("sometimes"), None);
    }

    /// vma_thp_gfp_mask() of 6.1 for every defrag mode, madvised or not.
    #[test]
    fn the_gfp_of_a_huge_fault_follows_defrag_and_the_advice() {
        let mut m = machine(&[("thp", "always")]);
        let g = |d, r, n| ThpGfp {
            direct_reclaim: d,
            kswapd: r,
            noretry: n,
        };
        let cases = [
            (ThpDefrag::Always, g(true, true, true), g(true, true, false)),
            (
                ThpDefrag::Defer,
                g(false, true, false),
                g(false, true, false),
            ),
            (
                ThpDefrag::DeferMadvise,
                g(false, true, false),
                g(true, false, false),
            ),
            (
                ThpDefrag::Madvise,
                g(false, false, false),
                g(true, false, false),
            ),
            (
                ThpDefrag::Never,
                g(false, false, false),
                g(false, false, false),
            ),
        ];
        for (d, plain, madvised) in cases {
            m.thp.defrag = d;
            assert_eq!(m.vma_thp_gfp(HugeAdvice::None), plain, "{d:?}");
            assert_eq!(m.vma_thp_gfp(HugeAdvice::Huge), madvised, "{d:?}");
        }
    }

    /// With THP enabled, 6.1 raises min_free_kbytes to 11 pageblocks per populated zone
    /// (45,056 KiB for the two zones of a small machine), at most 5% of the free buffer
    /// pages; never leaves the derived value.
    #[test]
    fn khugepaged_raises_min_free_kbytes_while_thp_is_enabled() {
        let never = machine(&[("memory", "1G"), ("thp", "never")]);
        let always = machine(&[("memory", "1G"), ("thp", "always")]);
        let madvise = machine(&[("memory", "1G"), ("thp", "madvise")]);
        assert!(never.zones.min_free_kbytes < 5000);
        assert_eq!(always.zones.min_free_kbytes, 45_056);
        assert_eq!(madvise.zones.min_free_kbytes, 45_056);
        assert!(always.zones.mark(1, crate::mmzone::Wmark::Min) > 10_000);
        // 5% of a small machine's pages caps it.
        let mut small = machine(&[("memory", "600M"), ("thp", "always")]);
        assert!(small.zones.min_free_kbytes < 45_056);
        assert!(small.zones.min_free_kbytes > 20_000);
        // Below 512M of RAM 6.1 turns THP off at boot, whatever it was asked; the sysfs file
        // turns it on, and khugepaged raises min_free_kbytes then.
        let tiny = machine(&[("memory", "512M"), ("thp", "always")]);
        assert_eq!(tiny.thp.enabled, ThpEnabled::Never);
        assert_eq!(tiny.thp.defrag, ThpDefrag::Never);
        assert!(tiny.zones.min_free_kbytes < 5000);
        small = tiny;
        small.set_thp_enabled(ThpEnabled::Always);
        assert!(small.zones.min_free_kbytes > 20_000);
        // A user's value stays.
        let user = machine(&[
            ("memory", "1G"),
            ("thp", "always"),
            ("min_free_kbytes", "8000"),
        ]);
        assert_eq!(user.zones.min_free_kbytes, 8000);
        // Switching THP on at run time raises it then.
        let mut m = machine(&[("memory", "1G"), ("thp", "never")]);
        m.set_thp_enabled(ThpEnabled::Madvise);
        assert_eq!(m.zones.min_free_kbytes, 45_056);
    }

    /// A fault in a 2 MiB range maps a huge folio: one fault, 512 pages charged, one LRU
    /// entry of 512 pages, anon_thp and thp_fault_alloc counted; the range's other pages
    /// are present; munmap frees the folio as one block.
    #[test]
    fn a_huge_fault_maps_charges_and_lists_512_pages_as_one() {
        let mut m = machine(&[("thp", "always")]);
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let pid = task(&mut m, a);
        let vma = m.mmap_anon(pid, 1024 + 100, false);
        let free0 = m.nr_free_pages();
        m.touch_anon(pid, vma, 5).unwrap();
        let head = m.vmas.v[vma as usize].ptes[0] - 1;
        assert_eq!(m.folio_nr_pages(head), 512);
        assert_eq!(m.memory.get(a as usize).usage, 512);
        assert_eq!(m.stat_total(a, Stat::AnonThp), 512);
        assert_eq!(m.stat_total(a, Stat::Anon), 512);
        assert_eq!(m.stat_total(a, Stat::InactiveAnon), 512);
        assert_eq!(m.stat_total(a, Stat::ThpFaultAlloc), 1);
        assert_eq!(m.stat_total(a, Stat::Pgfault), 1);
        assert_eq!(m.memcgs[a as usize].lruvec[0].size[0], 512);
        for i in 0..512 {
            m.touch_anon(pid, vma, i).unwrap();
        }
        assert_eq!(m.stat_total(a, Stat::Pgfault), 1);
        assert_eq!(m.task(pid).rss_anon, 512);
        // The second range is huge too; the tail of 100 pages is not a whole range.
        m.touch_anon(pid, vma, 600).unwrap();
        m.touch_anon(pid, vma, 1030).unwrap();
        assert_eq!(m.stat_total(a, Stat::AnonThp), 1024);
        assert_eq!(m.stat_total(a, Stat::Anon), 1025);
        assert_eq!(m.thp.events.fault_alloc, 2);
        m.check().unwrap();
        assert!(free0 - m.nr_free_pages() >= 1025);
        m.munmap(vma);
        // What is left is the small page's charge batch, in the CPU's stock.
        assert_eq!(m.memory.get(a as usize).usage, 63);
        assert_eq!(m.stat_total(a, Stat::AnonThp), 0);
        assert_eq!(m.thp.folios, 0);
        m.check().unwrap();
        m.cur = None;
    }

    /// A group with less than 2 MiB of room: the huge charge fails without reclaim (the
    /// default defrag gives a plain mapping no direct reclaim) and the fault falls back to
    /// a small page; madvise mode leaves a plain mapping small and an advised one huge;
    /// MADV_NOHUGEPAGE keeps it small under always.
    #[test]
    fn faults_fall_back_to_small_pages_where_6_1_does() {
        let mut m = machine(&[("thp", "always")]);
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        m.memory.get_mut(a as usize).max = 300;
        let pid = task(&mut m, a);
        let vma = m.mmap_anon(pid, 1024, false);
        m.touch_anon(pid, vma, 0).unwrap();
        assert_eq!(m.thp.events.fault_fallback, 1);
        assert_eq!(m.thp.events.fault_fallback_charge, 1);
        assert_eq!(m.stat_total(a, Stat::AnonThp), 0);
        assert_eq!(m.stat_total(a, Stat::Anon), 1);
        // The range now has a page table: the next fault there does not try a huge page.
        m.touch_anon(pid, vma, 1).unwrap();
        assert_eq!(m.thp.events.fault_fallback, 1);
        m.check().unwrap();

        let mut m = machine(&[("thp", "madvise")]);
        let pid = task(&mut m, ROOT_MEMCG);
        let plain = m.mmap_anon(pid, 512, false);
        let advised = m.mmap_anon(pid, 512, false);
        m.vmas.v[advised as usize].huge = HugeAdvice::Huge;
        m.touch_anon(pid, plain, 0).unwrap();
        m.touch_anon(pid, advised, 0).unwrap();
        assert_eq!(m.thp.events.fault_alloc, 1);
        assert_eq!(m.global_stat(Stat::AnonThp), 512);

        let mut m = machine(&[("thp", "always")]);
        let pid = task(&mut m, ROOT_MEMCG);
        let no = m.mmap_anon(pid, 512, false);
        m.vmas.v[no as usize].huge = HugeAdvice::NoHuge;
        m.touch_anon(pid, no, 0).unwrap();
        assert_eq!(m.thp.events.fault_alloc, 0);
        m.cur = None;
    }

    /// Reclaim takes a huge folio as 512 pages scanned, splits it when it must swap it
    /// (THP_SWPOUT_FALLBACK, THP_SPLIT_PAGE) and swaps every page out.
    #[test]
    fn reclaim_splits_a_huge_folio_and_swaps_its_pages() {
        let (mut m, a, pid, vma) = written(&[("swap_sync", "on")], 1024);
        assert_eq!(m.thp.folios, 2);
        // The first pass finds the folios young and keeps them; later passes take them.
        let mut reclaimed = 0;
        for _ in 0..4 {
            reclaimed += m.try_to_free_mem_cgroup_pages(a, 512, true, true, None);
            m.check().unwrap();
        }
        assert!(reclaimed >= 512, "{reclaimed}");
        assert!(m.thp.events.split_page >= 1);
        assert_eq!(m.thp.events.swpout_fallback, m.thp.events.split_page);
        assert_eq!(m.stat_total(a, Stat::AnonThp), 512 * m.thp.folios);
        assert!(m.stat_total(a, Stat::Pswpout) >= 512);
        // Faults bring the pages back one by one: the range has a page table now.
        let faults = m.stat_total(a, Stat::Pgfault);
        for i in 0..1024 {
            m.touch_anon(pid, vma, i).unwrap();
        }
        assert!(m.stat_total(a, Stat::Pgfault) > faults);
        assert_eq!(m.thp.events.fault_alloc, 2);
        m.check().unwrap();
        m.munmap(vma);
        assert!(m.memory.get(a as usize).usage < 64);
        m.check().unwrap();
        m.cur = None;
    }

    /// MADV_DONTNEED of part of a huge range splits its PMD and queues the folio, still
    /// charged whole; of the rest, frees it whole; the queue's shrinker splits a queued
    /// folio, freeing its unmapped pages; munmap frees what is left.
    #[test]
    fn a_partial_unmap_defers_the_split() {
        let (mut m, a, pid, vma) = written(&[], 4 * 512);
        assert_eq!(m.stat_total(a, Stat::AnonThp), 4 * 512);
        let charged = m.memory.get(a as usize).usage;
        // Half of range 0 and half of range 1, across their boundary.
        m.madvise_dontneed(vma, 256, 768);
        m.check().unwrap();
        assert_eq!(m.stat_total(a, Stat::AnonThp), 2 * 512);
        assert_eq!(m.stat_total(a, Stat::Anon), 4 * 512 - 512);
        assert_eq!(m.task(pid).rss_anon, 4 * 512 - 512);
        assert_eq!(m.memory.get(a as usize).usage, charged);
        assert_eq!(m.thp.events.split_pmd, 2);
        assert_eq!(m.thp.events.deferred_split_page, 2);
        // The rest of range 0: its folio goes whole.
        m.madvise_dontneed(vma, 0, 256);
        m.check().unwrap();
        assert_eq!(m.memory.get(a as usize).usage, charged - 512);
        assert_eq!(m.thp.split_queue[&a].len(), 1);
        // A fault in the hole takes a small page; the shrinker then splits range 1's folio.
        m.touch_anon(pid, vma, 600).unwrap();
        let before_split = m.memory.get(a as usize).usage;
        let freed = m.deferred_split_scan(a, 0);
        assert_eq!(freed, 256);
        assert!(m.thp.split_queue.is_empty());
        assert_eq!(m.thp.events.split_page, 1);
        m.check().unwrap();
        assert_eq!(m.stat_total(a, Stat::Anon), 2 * 512 + 256 + 1);
        assert_eq!(m.memory.get(a as usize).usage, before_split - 256);
        // Another partial unmap, then munmap with the folio queued.
        m.madvise_dontneed(vma, 1024, 1030);
        assert_eq!(m.thp.split_queue[&a].len(), 1);
        m.munmap(vma);
        m.check().unwrap();
        assert!(m.thp.split_queue.is_empty());
        assert_eq!(m.thp.folios, 0);
        assert_eq!(m.stat_total(a, Stat::Anon), 0);
        m.cur = None;
    }

    /// Reclaim splits a partly mapped folio at once, freeing its unmapped pages without
    /// I/O, and swaps what stays mapped.
    #[test]
    fn reclaim_splits_a_partly_mapped_folio() {
        let (mut m, a, _pid, vma) = written(&[("swap_sync", "on")], 512);
        m.madvise_dontneed(vma, 0, 384);
        for _ in 0..20 {
            if m.stat_total(a, Stat::Anon) == 0 {
                break;
            }
            m.try_to_free_mem_cgroup_pages(a, 512, true, true, None);
        }
        m.check().unwrap();
        assert_eq!(m.thp.folios, 0);
        assert_eq!(m.stat_total(a, Stat::Anon), 0);
        // Only the 128 mapped pages went to swap.
        assert_eq!(m.stat_total(a, Stat::Pswpout), 128);
        assert_eq!(m.thp.events.swpout_fallback, 0);
        m.cur = None;
    }
}
