//! Memory compaction: mm/compaction.c (6.1) as /proc/sys/vm/compact_memory runs it —
//! compact_nodes() and compact_node() over every populated zone, each a compact_zone() of
//! the whole zone (order -1: only the scanners' meeting ends it, no pageblock skip hints):
//! the migrate scanner goes up from the zone's start a pageblock at a time
//! (isolate_migratepages(), isolate_migratepages_block(): a free block is stepped over
//! whole, pages that may move are isolated COMPACT_CLUSTER_MAX at a time, the rest of the
//! block waits for the next pass), the free scanner goes down from the zone's end
//! (isolate_freepages(): pageblocks of a movable type that do not start with a free block of
//! pageblock order; isolate_freepages_block() takes whole free blocks with
//! __isolate_free_page()'s watermark, min + 2^order, until it has as many pages as there are
//! to move), and migrate_pages() (migrate.rs) moves each isolated page to a free one; pages
//! left over go back to the free lists (release_freepages()). /proc/vmstat counts
//! compact_migrate_scanned, compact_free_scanned, compact_isolated, pgmigrate_success and
//! pgmigrate_fail.
//!
//! Direct compaction for a huge page (try_to_compact_pages(), compact_zone_order() at
//! COMPACT_PRIO_ASYNC, as every THP fault's gfp gets in 6.1): compaction_suitable() (the
//! order-0 watermark with compact_gap(), and the fragmentation index against
//! /proc/sys/vm/extfrag_threshold), the scanners resuming from the zone's cached positions
//! (compact_cached_migrate_pfn, compact_cached_free_pfn, reset when they meet), only
//! pageblocks of a movable type as the source, a pageblock given up at the first page that
//! cannot move (skip_on_failure), and __compact_finished()'s look for a free block of the
//! order at each pageblock boundary; COMPACTSTALL, COMPACTSUCCESS and COMPACTFAIL as
//! __alloc_pages_direct_compact() counts them.
//!
//! kcompactd's proactive compaction (kcompactd(), should_proactive_compact_node(),
//! proactive_compact_node()): every HPAGE_FRAG_CHECK_INTERVAL_MSEC (500 ms), unless kswapd
//! is running, a node whose fragmentation score (extfrag_for_order() at order 9 per zone,
//! weighted by the zones' pages) is above the high mark of
//! /proc/sys/vm/compaction_proactiveness (100 − proactiveness + 10) has each zone compacted
//! whole until its score falls to the low mark; a pass that does not lower the node's score
//! makes the next check wait 64 intervals.
//!
//! Simplified: compaction takes no time (the kernel's compactor spends CPU on it); no
//! pageblock skip hints (the cached positions alone carry one attempt's progress to the
//! next), no fast_find_migrateblock() or fast_isolate_freepages(), no capture of the freed
//! block (the allocation takes it from the free lists right after); no deferral (6.1 defers
//! only after synchronous compaction, which no THP fault of its asks for); kswapd does not
//! wake kcompactd (it does so in 6.1 only after a high-order wakeup, and the model's
//! wakeups are order 0); pages the kernel would wait for (under writeback, reads in flight)
//! are left where they are (migrate.rs).

use crate::buddy::{MigrateType, PAGEBLOCK_NR_PAGES, PAGE_ALLOC_COSTLY_ORDER, TOP_ORDER};
use crate::machine::Machine;
use crate::mmzone::{Wmark, NR_ZONES};
use crate::page_cgroup::Pfn;

/// COMPACT_CLUSTER_MAX (SWAP_CLUSTER_MAX): pages isolated per migration batch.
pub const COMPACT_CLUSTER_MAX: usize = 32;

/// /proc/sys/vm/compaction_proactiveness's default.
pub const DEFAULT_PROACTIVENESS: u32 = 20;
/// /proc/sys/vm/extfrag_threshold's default.
pub const DEFAULT_EXTFRAG_THRESHOLD: u32 = 500;
/// HPAGE_FRAG_CHECK_INTERVAL_MSEC: kcompactd's proactive check interval.
pub const FRAG_CHECK_INTERVAL_NS: u64 = 500_000_000;
/// COMPACT_MAX_DEFER_SHIFT: a proactive pass without progress puts the next check off by
/// 2^6 intervals.
const COMPACT_MAX_DEFER_SHIFT: u32 = 6;
/// COMPACTION_HPAGE_ORDER: the order the fragmentation score is about.
const COMPACTION_HPAGE_ORDER: u32 = crate::buddy::PAGEBLOCK_ORDER;

/// enum compact_result, in the kernel's order (try_to_compact_pages() keeps the largest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompactResult {
    NotSuitableZone,
    Skipped,
    Deferred,
    NoSuitablePage,
    Continue,
    Complete,
    PartialSkipped,
    Contended,
    Success,
}

/// What a compact_zone() is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CompactMode {
    /// compact_memory: the whole zone, order -1.
    Whole,
    /// kcompactd's proactive pass: the whole zone until its score is low enough.
    Proactive,
    /// Direct compaction for a block of this order, asynchronous.
    Direct(u32),
}

/// The compaction state of the node: the sysctls, the zones' cached scanner positions and
/// kcompactd's proactive timer.
#[derive(Clone, Debug)]
pub struct Compaction {
    /// /proc/sys/vm/compaction_proactiveness (0..=100).
    pub proactiveness: u32,
    /// /proc/sys/vm/extfrag_threshold (0..=1000).
    pub extfrag_threshold: u32,
    /// compact_cached_migrate_pfn (asynchronous) and compact_cached_free_pfn per zone; None
    /// until first used (the zone's start and its last pageblock).
    cached_migrate: [Option<Pfn>; NR_ZONES],
    cached_free: [Option<Pfn>; NR_ZONES],
    /// When kcompactd next checks the node's fragmentation (None: it sleeps until
    /// proactiveness is set).
    pub kcompactd_next: Option<u64>,
}

impl Compaction {
    /// The state at boot with these sysctls.
    pub fn new(proactiveness: u32, extfrag_threshold: u32) -> Compaction {
        Compaction {
            proactiveness,
            extfrag_threshold,
            ..Default::default()
        }
    }
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            proactiveness: DEFAULT_PROACTIVENESS,
            extfrag_threshold: DEFAULT_EXTFRAG_THRESHOLD,
            cached_migrate: [None; NR_ZONES],
            cached_free: [None; NR_ZONES],
            kcompactd_next: None,
        }
    }
}

/// fill_contig_page_info() of a zone for `order`: free pages, free blocks, and how many
/// blocks of `order` the free blocks of at least that order make.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContigPageInfo {
    pub free_pages: u64,
    pub free_blocks_total: u64,
    pub free_blocks_suitable: u64,
}

/// Compaction's vm events (/proc/vmstat).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactEvents {
    /// COMPACTMIGRATE_SCANNED: frames the migrate scanner looked at.
    pub migrate_scanned: u64,
    /// COMPACTFREE_SCANNED: frames the free scanner looked at.
    pub free_scanned: u64,
    /// COMPACTISOLATED: pages isolated to move and free pages isolated to move them to.
    pub isolated: u64,
    /// PGMIGRATE_SUCCESS and PGMIGRATE_FAIL.
    pub migrate_success: u64,
    pub migrate_fail: u64,
    /// COMPACTSTALL, COMPACTFAIL, COMPACTSUCCESS: direct compactions run, and whether the
    /// allocation then got its block.
    pub stall: u64,
    pub fail: u64,
    pub success: u64,
}

/// struct compact_control for one zone.
struct CompactControl {
    zone: usize,
    /// The migrate scanner's next frame, and the free scanner's pageblock.
    migrate_pfn: Pfn,
    free_pfn: Pfn,
    /// Isolated pages to move, oldest first, and free order-0 frames to move them to.
    migratepages: Vec<Pfn>,
    freepages: std::collections::VecDeque<Pfn>,
    unevictable: bool,
    mode: CompactMode,
}

impl CompactControl {
    /// compact_scanners_met(): the free scanner's pageblock is at or below the migrate
    /// scanner's.
    fn scanners_met(&self, m: &Machine) -> bool {
        let zb = m.frames.free.zone(self.zone);
        zb.pageblock_start(self.free_pfn) <= zb.pageblock_start(self.migrate_pfn)
            || self.free_pfn <= self.migrate_pfn
    }
}

impl Machine {
    /// compact_nodes(): compact every populated zone whole (a write to
    /// /proc/sys/vm/compact_memory).
    pub fn compact_nodes(&mut self) {
        // drain_all_pages() is not part of it; what the per-CPU lists hold stays there.
        for z in 0..NR_ZONES {
            if self.zones.zone[z].managed > 0 {
                self.compact_zone(z, CompactMode::Whole);
            }
        }
    }

    /// fill_contig_page_info() of zone `z` for `order` (the buddy lists' blocks; pages on
    /// the per-CPU lists are not free pages to it).
    pub fn contig_page_info(&self, z: usize, order: u32) -> ContigPageInfo {
        let zb = self.frames.free.zone(z);
        let mut info = ContigPageInfo::default();
        for o in 0..=TOP_ORDER {
            let blocks = zb.nr_free_order(o);
            info.free_blocks_total += blocks;
            info.free_pages += blocks << o;
            if o >= order {
                info.free_blocks_suitable += blocks << (o - order);
            }
        }
        info
    }

    /// fragmentation_index() of zone `z` for `order`, in thousandths: -1000 when a block of
    /// the order is free; else towards 0 when an allocation would fail for want of memory,
    /// towards 1000 when for fragmentation.
    pub fn fragmentation_index(&self, z: usize, order: u32) -> i64 {
        let info = self.contig_page_info(z, order);
        if info.free_blocks_total == 0 {
            return 0;
        }
        if info.free_blocks_suitable > 0 {
            return -1000;
        }
        let requested = 1u64 << order;
        1000 - ((1000 + info.free_pages * 1000 / requested) / info.free_blocks_total) as i64
    }

    /// fragmentation_score_zone(): extfrag_for_order() at order 9, the percentage of the
    /// zone's free pages outside free blocks of that order.
    pub fn fragmentation_score_zone(&self, z: usize) -> u64 {
        let info = self.contig_page_info(z, COMPACTION_HPAGE_ORDER);
        if info.free_pages == 0 {
            return 0;
        }
        (info.free_pages - (info.free_blocks_suitable << COMPACTION_HPAGE_ORDER)) * 100
            / info.free_pages
    }

    /// fragmentation_score_node(): the zones' scores weighted by their pages.
    pub fn fragmentation_score_node(&self) -> u64 {
        let present: u64 = self.zones.zone.iter().map(|z| z.spanned).sum();
        if present == 0 {
            return 0;
        }
        (0..NR_ZONES)
            .filter(|&z| self.zones.zone[z].managed > 0)
            .map(|z| self.zones.zone[z].spanned * self.fragmentation_score_zone(z) / present)
            .sum()
    }

    /// fragmentation_score_wmark(): the low mark (100 − proactiveness, at least 5) or the
    /// high one (10 above it, at most 100).
    fn fragmentation_score_wmark(&self, low: bool) -> u64 {
        let low_mark = 100u64
            .saturating_sub(u64::from(self.compaction.proactiveness))
            .max(5);
        if low {
            low_mark
        } else {
            (low_mark + 10).min(100)
        }
    }

    /// compaction_suitable() of zone `z` for a block of `order` (> 0) at the min watermark:
    /// Success if the block could be had already, Skipped when the zone is below its order-0
    /// watermark plus compact_gap() (twice the block) or when its fragmentation index is at
    /// most extfrag_threshold (a failure for want of memory: reclaim, not compaction).
    fn compaction_suitable(&self, z: usize, order: u32) -> CompactResult {
        let zone = &self.zones.zone[z];
        let zb = self.frames.free.zone(z);
        if zb.watermark_ok(order, zone.min, zone.lowmem_reserve) {
            return CompactResult::Success;
        }
        let mark = if order > PAGE_ALLOC_COSTLY_ORDER {
            zone.low
        } else {
            zone.min
        } + (2u64 << order);
        if !zb.watermark_ok(0, mark, zone.lowmem_reserve) {
            return CompactResult::Skipped;
        }
        if order > PAGE_ALLOC_COSTLY_ORDER {
            let fi = self.fragmentation_index(z, order);
            if fi >= 0 && fi <= i64::from(self.compaction.extfrag_threshold) {
                return CompactResult::Skipped;
            }
        }
        CompactResult::Continue
    }

    /// try_to_compact_pages() at COMPACT_PRIO_ASYNC for a block of `order`: each zone of the
    /// zonelist, highest first, until one says the allocation should succeed. Returns the
    /// largest result.
    pub(crate) fn try_to_compact_pages(&mut self, order: u32) -> CompactResult {
        let mut rc = CompactResult::NotSuitableZone;
        for z in (0..NR_ZONES).rev() {
            if self.zones.zone[z].managed == 0 {
                continue;
            }
            let status = match self.compaction_suitable(z, order) {
                CompactResult::Continue => self.compact_zone(z, CompactMode::Direct(order)),
                r => r,
            };
            rc = rc.max(status);
            if status == CompactResult::Success {
                break;
            }
        }
        rc
    }

    /// __alloc_pages_direct_compact(): compact, then take a block of `order` from the free
    /// lists at the min watermark; COMPACTSTALL unless every zone was skipped, then
    /// COMPACTSUCCESS or COMPACTFAIL.
    pub(crate) fn alloc_pages_direct_compact(
        &mut self,
        order: u32,
    ) -> (Option<Pfn>, CompactResult) {
        let was = self.psi_memstall_enter();
        let result = self.in_memalloc(|m| m.try_to_compact_pages(order));
        self.psi_memstall_leave(was);
        if result == CompactResult::Skipped {
            return (None, result);
        }
        self.compact_events.stall += 1;
        let page = self.get_page_from_freelist(Wmark::Min, order, MigrateType::Movable);
        if page.is_some() {
            self.compact_events.success += 1;
        } else {
            self.compact_events.fail += 1;
        }
        (page, result)
    }

    /// kcompactd's proactive check, due every FRAG_CHECK_INTERVAL_NS while proactiveness is
    /// set: compact the node's zones when its score is above the high mark and kswapd is
    /// not running; a pass that does not lower the score puts the next check off 64 times
    /// as long. Returns when the next check is due.
    pub fn kcompactd_proactive(&mut self, now: u64) -> Option<u64> {
        if self.compaction.proactiveness == 0 {
            self.compaction.kcompactd_next = None;
            return None;
        }
        let mut wait = FRAG_CHECK_INTERVAL_NS;
        if !self.kswapd.awake
            && self.fragmentation_score_node() > self.fragmentation_score_wmark(false)
        {
            let prev = self.fragmentation_score_node();
            for z in 0..NR_ZONES {
                if self.zones.zone[z].managed > 0 {
                    // 6.1 counts the scans in compact_*_scanned, not in kcompactd's
                    // compact_daemon_*_scanned, which only its kswapd-woken work counts.
                    self.compact_zone(z, CompactMode::Proactive);
                }
            }
            if self.fragmentation_score_node() >= prev {
                wait <<= COMPACT_MAX_DEFER_SHIFT;
            }
        }
        let next = now + wait;
        self.compaction.kcompactd_next = Some(next);
        Some(next)
    }

    /// kcompactd's proactive check at `at`, while proactiveness is set: at boot one interval
    /// on, and at once when proactiveness is written (proactive_compact_trigger). A check
    /// already due is superseded.
    pub fn kcompactd_schedule(&mut self, at: u64) {
        if self.compaction.proactiveness == 0 {
            return;
        }
        self.compaction.kcompactd_next = Some(at);
        self.sched.push(at, crate::sched::Event::Kcompactd);
    }

    /// The kcompactd event at `t`: a stale one (superseded by a trigger, or after
    /// proactiveness went to 0) does nothing.
    pub(crate) fn kcompactd_event(&mut self, t: u64) {
        if self.compaction.kcompactd_next != Some(t) {
            return;
        }
        if let Some(next) = self.kcompactd_proactive(t) {
            self.sched.push(next, crate::sched::Event::Kcompactd);
        }
    }

    /// __compact_finished() for the modes that stop before the scanners meet.
    fn compact_finished(&self, cc: &CompactControl) -> Option<CompactResult> {
        match cc.mode {
            CompactMode::Whole => None,
            CompactMode::Proactive => {
                if self.kswapd.awake {
                    Some(CompactResult::PartialSkipped)
                } else if self.fragmentation_score_zone(cc.zone)
                    <= self.fragmentation_score_wmark(true)
                {
                    Some(CompactResult::Success)
                } else {
                    None
                }
            }
            CompactMode::Direct(order) => {
                // Always finish a pageblock; then look for a free block of the order.
                let zb = self.frames.free.zone(cc.zone);
                if zb.pageblock_start(cc.migrate_pfn) != cc.migrate_pfn {
                    return None;
                }
                (order..=TOP_ORDER)
                    .any(|o| zb.nr_free_order(o) > 0)
                    .then_some(CompactResult::Success)
            }
        }
    }

    /// compact_zone() of zone `z`: the whole zone for compact_memory and kcompactd's
    /// proactive pass (from the zone's ends), or from the cached positions for direct
    /// compaction, until the scanners meet or the mode's goal is reached.
    fn compact_zone(&mut self, z: usize, mode: CompactMode) -> CompactResult {
        let (start, end) = self.frames.free.zone(z).span();
        if end <= start {
            return CompactResult::Skipped;
        }
        let last_block = self.frames.free.zone(z).pageblock_start(end - 1);
        let (migrate_pfn, free_pfn) = match mode {
            CompactMode::Direct(_) => {
                let c = &self.compaction;
                let m = c.cached_migrate[z].filter(|&p| p >= start && p < end);
                let f = c.cached_free[z].filter(|&p| p >= start && p < end);
                (m.unwrap_or(start), f.unwrap_or(last_block))
            }
            _ => (start, last_block),
        };
        let mut cc = CompactControl {
            zone: z,
            migrate_pfn,
            free_pfn,
            migratepages: Vec::with_capacity(COMPACT_CLUSTER_MAX),
            freepages: Default::default(),
            unevictable: self.compact_unevictable_allowed,
            mode,
        };
        let mut result = CompactResult::Complete;
        // Every pass isolates from at least one frame or moves the migrate scanner on by at
        // least one; a zone's frames bound the passes.
        for _ in 0..=u64::from(end - start) {
            if cc.scanners_met(self) {
                result = CompactResult::Complete;
                if let CompactMode::Direct(_) = mode {
                    // reset_cached_positions(): the next compaction starts anew.
                    self.compaction.cached_migrate[z] = Some(start);
                    self.compaction.cached_free[z] = Some(last_block);
                }
                break;
            }
            if let Some(r) = self.compact_finished(&cc) {
                result = r;
                break;
            }
            if !self.isolate_migratepages(&mut cc) {
                continue;
            }
            if !self.migrate_pages(&mut cc) {
                // -ENOMEM: no free page left to move to before the scanners met.
                result = CompactResult::Contended;
                break;
            }
        }
        // Isolated pages that did not move go back to their lists; free ones to the zone.
        for p in std::mem::take(&mut cc.migratepages) {
            self.lru_add(p);
        }
        let cpu = self.current_cpu();
        let mut high = None;
        for p in std::mem::take(&mut cc.freepages) {
            high = high.max(Some(p));
            self.frames
                .free_unref_page(p, 0, cpu, &self.zones, self.kswapd.awake);
        }
        if let CompactMode::Direct(_) = mode {
            if result != CompactResult::Complete {
                self.compaction.cached_migrate[z] = Some(cc.migrate_pfn);
                // The free scanner's position only goes back (up) to the released pages.
                let mut f = cc.free_pfn;
                if let Some(h) = high {
                    f = f.max(self.frames.free.zone(z).pageblock_start(h));
                }
                self.compaction.cached_free[z] = Some(f);
            }
        }
        result
    }

    /// isolate_migratepages(): from the migrate scanner's frame to the end of its pageblock
    /// (isolate_migratepages_block()), stepping over free blocks, isolating up to
    /// COMPACT_CLUSTER_MAX pages; returns whether any was isolated. The scanner stops after
    /// the last page it isolated, or at the pageblock's end.
    fn isolate_migratepages(&mut self, cc: &mut CompactControl) -> bool {
        let zb = self.frames.free.zone(cc.zone);
        let block_end = zb.pageblock_end(cc.migrate_pfn);
        let direct = matches!(cc.mode, CompactMode::Direct(_));
        if direct && zb.pageblock_mt(cc.migrate_pfn) != MigrateType::Movable {
            // suitable_migration_source(): asynchronous direct compaction for a movable
            // allocation moves pages out of movable pageblocks only.
            cc.migrate_pfn = block_end;
            return false;
        }
        let mut pfn = cc.migrate_pfn;
        let mut scanned = 0u64;
        while pfn < block_end {
            scanned += 1;
            if let Some((order, _)) = self
                .frames
                .free
                .zone(cc.zone)
                .free_block_at(&self.frames.meta, pfn)
            {
                // A free block: skip it whole (buddy_order_unsafe()).
                pfn += 1 << order;
                continue;
            }
            if self.migrate_isolatable(pfn, cc.unevictable) {
                self.lru_del(pfn);
                cc.migratepages.push(pfn);
                if cc.migratepages.len() >= COMPACT_CLUSTER_MAX {
                    pfn += 1;
                    break;
                }
            } else if direct {
                // skip_on_failure: a page that cannot move (a kernel page, a huge folio, a
                // page on a per-CPU list or under writeback) keeps the block from becoming
                // free; what was isolated from it goes back and the scanner moves on.
                for p in std::mem::take(&mut cc.migratepages) {
                    self.lru_add(p);
                }
                pfn = block_end;
                break;
            }
            pfn += 1;
        }
        cc.migrate_pfn = pfn.max(cc.migrate_pfn + 1);
        self.compact_events.migrate_scanned += scanned;
        self.compact_events.isolated += cc.migratepages.len() as u64;
        !cc.migratepages.is_empty()
    }

    /// migrate_pages() of the isolated pages, newest first as the kernel's list has them,
    /// each to a free page compaction_alloc() takes (isolating more when it has none).
    /// Returns false when no free page was left for one (the rest stay isolated).
    fn migrate_pages(&mut self, cc: &mut CompactControl) -> bool {
        while let Some(&old) = cc.migratepages.last() {
            if cc.freepages.is_empty() {
                self.isolate_freepages(cc);
            }
            let Some(new) = cc.freepages.pop_front() else {
                self.compact_events.migrate_fail += cc.migratepages.len() as u64;
                return false;
            };
            cc.migratepages.pop();
            self.migrate_page(old, new);
            self.compact_events.migrate_success += 1;
        }
        true
    }

    /// isolate_freepages(): from the free scanner's frame, pageblock by pageblock down to the
    /// one above the migrate scanner's, in pageblocks of a movable type that do not start
    /// with a free block of pageblock order, whole free blocks split into order-0 frames,
    /// until there are as many as pages to move. The scanner resumes where it stopped.
    fn isolate_freepages(&mut self, cc: &mut CompactControl) {
        let z = cc.zone;
        let min = self.zones.zone[z].min;
        let (start, _) = self.frames.free.zone(z).span();
        let low = self.frames.free.zone(z).pageblock_end(cc.migrate_pfn);
        let want = cc.migratepages.len();
        let mut scanned = 0u64;
        let mut isolated = 0u64;
        let mut p = cc.free_pfn;
        // Pageblocks down to the migrate scanner's bound the walk.
        for _ in 0..=self.zones.zone[z].managed / PAGEBLOCK_NR_PAGES + 1 {
            let zb = self.frames.free.zone(z);
            let block = zb.pageblock_start(p);
            if block < low {
                break;
            }
            let block_end = zb.pageblock_end(block);
            // suitable_migration_target()
            let head = zb.free_block_at(&self.frames.meta, block);
            let suitable = head.is_none_or(|(o, _)| o < crate::buddy::PAGEBLOCK_ORDER)
                && zb.pageblock_mt(block) == crate::buddy::MigrateType::Movable;
            let mut failed = false;
            if suitable {
                while p < block_end && cc.freepages.len() < want {
                    scanned += 1;
                    let f = &mut self.frames;
                    let Some((order, _)) = f.free.zone(z).free_block_at(&f.meta, p) else {
                        p += 1;
                        continue;
                    };
                    if !f
                        .free
                        .zone_mut(z)
                        .isolate_free_block(&mut f.meta, p, order, min)
                    {
                        failed = true;
                        break;
                    }
                    let n = 1u32 << order;
                    debug_assert!(p + n <= f.meta.len() as Pfn, "a listed block is written");
                    cc.freepages.extend(p..p + n);
                    isolated += u64::from(n);
                    p += n;
                }
            } else {
                p = block_end;
            }
            if cc.freepages.len() >= want || failed {
                // Enough, or isolation failed early (the watermark): stop here, or at the
                // pageblock below when this one is done.
                if p >= block_end && block > start {
                    p = self.frames.free.zone(z).pageblock_start(block - 1);
                }
                break;
            }
            // The next pageblock down.
            if block <= start {
                p = start;
                break;
            }
            p = self.frames.free.zone(z).pageblock_start(block - 1);
        }
        cc.free_pfn = p.max(start);
        self.compact_events.free_scanned += scanned;
        self.compact_events.isolated += isolated;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MachineConfig;
    use crate::mmzone::ZONE_DMA32;

    fn machine(keys: &[(&str, &str)]) -> Machine {
        let mut cfg = MachineConfig::default();
        for (k, v) in [("memory", "256M")].iter().chain(keys) {
            cfg.set(k, v).unwrap();
        }
        Machine::new(cfg).unwrap()
    }

    /// Take every free frame of DMA32 off the free lists, then give back every other one:
    /// the zone's free memory is all single pages.
    fn checkerboard(m: &mut Machine) {
        let mut held = Vec::new();
        loop {
            m.frames.drain_all_pages();
            let Some(p) = m
                .frames
                .rmqueue(ZONE_DMA32, 0, MigrateType::Movable, 0, &m.zones, false)
            else {
                break;
            };
            held.push(p);
        }
        held.sort_unstable();
        for p in held.into_iter().step_by(2) {
            m.free_frame(p);
        }
        m.frames.drain_all_pages();
    }

    /// fragmentation_index() and fragmentation_score_zone() as mm/vmstat.c and
    /// mm/compaction.c compute them: -1000 while a block of the order is free; towards 1000
    /// when free memory is all in small blocks; the score is the share of free pages outside
    /// blocks of order 9.
    #[test]
    fn fragmentation_index_and_score_follow_the_free_blocks() {
        let mut m = machine(&[]);
        assert_eq!(m.fragmentation_index(ZONE_DMA32, 9), -1000);
        assert!(m.fragmentation_score_zone(ZONE_DMA32) < 5);
        checkerboard(&mut m);
        let info = m.contig_page_info(ZONE_DMA32, 9);
        assert_eq!(info.free_blocks_suitable, 0);
        assert_eq!(info.free_pages, info.free_blocks_total);
        // 1000 - (1000 + n * 1000 / 512) / n, for n single pages.
        let n = info.free_pages as i64;
        assert_eq!(
            m.fragmentation_index(ZONE_DMA32, 9),
            1000 - (1000 + n * 1000 / 512) / n
        );
        assert!(m.fragmentation_index(ZONE_DMA32, 9) > 990);
        assert_eq!(m.fragmentation_score_zone(ZONE_DMA32), 100);
        // A block of the order is free: -1000 again.
        assert_eq!(m.fragmentation_index(ZONE_DMA32, 0), -1000);
    }

    /// Direct compaction skips a zone whose fragmentation index is at most extfrag_threshold
    /// or that is under its order-0 watermark plus twice the block, and reports success
    /// without compacting when the block is already free.
    #[test]
    fn compaction_suitable_checks_the_watermark_and_the_index() {
        let mut m = machine(&[]);
        assert_eq!(m.compaction_suitable(ZONE_DMA32, 9), CompactResult::Success);
        checkerboard(&mut m);
        assert_eq!(
            m.compaction_suitable(ZONE_DMA32, 9),
            CompactResult::Continue
        );
        m.compaction.extfrag_threshold = 1000;
        assert_eq!(m.compaction_suitable(ZONE_DMA32, 9), CompactResult::Skipped);
        // Nothing on an LRU list to move: DMA32's compaction runs to the scanners' meeting
        // without making a block; the zonelist's next zone, DMA, has one free, and the
        // allocation takes it there (a compaction stall that succeeds).
        m.compaction.extfrag_threshold = 500;
        assert_eq!(
            m.compact_zone(ZONE_DMA32, CompactMode::Direct(9)),
            CompactResult::Complete
        );
        assert_eq!(m.compact_events.migrate_success, 0);
        let (page, result) = m.alloc_pages_direct_compact(9);
        assert_eq!(result, CompactResult::Success);
        assert_eq!(m.zones.zone_of(page.unwrap()), crate::mmzone::ZONE_DMA);
        assert_eq!((m.compact_events.stall, m.compact_events.success), (1, 1));
    }

    /// kcompactd wakes every 500 ms while proactiveness is set; a fragmented node it cannot
    /// improve makes it wait 64 intervals; proactiveness 0 stops it.
    #[test]
    fn kcompactd_checks_every_interval_and_backs_off() {
        let mut m = machine(&[]);
        assert_eq!(m.compaction.kcompactd_next, Some(FRAG_CHECK_INTERVAL_NS));
        let t = FRAG_CHECK_INTERVAL_NS;
        assert_eq!(m.kcompactd_proactive(t), Some(t + FRAG_CHECK_INTERVAL_NS));
        checkerboard(&mut m);
        assert!(m.fragmentation_score_node() > 90);
        // Free single pages between frames nothing can move: no progress, a long wait.
        assert_eq!(
            m.kcompactd_proactive(t),
            Some(t + (FRAG_CHECK_INTERVAL_NS << COMPACT_MAX_DEFER_SHIFT))
        );
        m.compaction.proactiveness = 0;
        assert_eq!(m.kcompactd_proactive(t), None);
        assert_eq!(m.compaction.kcompactd_next, None);
        let off = machine(&[("compaction_proactiveness", "0")]);
        assert_eq!(off.compaction.kcompactd_next, None);
    }
}
