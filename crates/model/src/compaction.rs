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
//! Simplified: compaction from the sysctl write takes no time (the kernel's writer waits for
//! it); no kcompactd, proactive compaction (compaction_proactiveness) or direct compaction
//! yet: the model's allocations are all order 0 until transparent huge pages come, and
//! those are what wake kcompactd and compact directly; pages the kernel would wait for (under
//! writeback, reads in flight) are left where they are (migrate.rs).

use crate::buddy::PAGEBLOCK_NR_PAGES;
use crate::machine::Machine;
use crate::mmzone::NR_ZONES;
use crate::page_cgroup::Pfn;

/// COMPACT_CLUSTER_MAX (SWAP_CLUSTER_MAX): pages isolated per migration batch.
pub const COMPACT_CLUSTER_MAX: usize = 32;

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
                self.compact_zone(z);
            }
        }
    }

    /// compact_zone() of zone `z`, whole, for order -1 (compact_node()).
    fn compact_zone(&mut self, z: usize) {
        let (start, end) = self.frames.free.zone(z).span();
        if end <= start {
            return;
        }
        let free_pfn = self.frames.free.zone(z).pageblock_start(end - 1);
        let mut cc = CompactControl {
            zone: z,
            migrate_pfn: start,
            free_pfn,
            migratepages: Vec::with_capacity(COMPACT_CLUSTER_MAX),
            freepages: Default::default(),
            unevictable: self.compact_unevictable_allowed,
        };
        // Every pass isolates from at least one frame or moves the migrate scanner on by at
        // least one; a zone's frames bound the passes.
        for _ in 0..=u64::from(end - start) {
            if cc.scanners_met(self) {
                break;
            }
            if !self.isolate_migratepages(&mut cc) {
                continue;
            }
            if !self.migrate_pages(&mut cc) {
                // -ENOMEM: no free page left to move to before the scanners met.
                break;
            }
        }
        // Isolated pages that did not move go back to their lists; free ones to the zone.
        for p in std::mem::take(&mut cc.migratepages) {
            self.lru_add(p);
        }
        let cpu = self.current_cpu();
        for p in std::mem::take(&mut cc.freepages) {
            self.frames
                .free_unref_page(p, 0, cpu, &self.zones, self.kswapd.awake);
        }
    }

    /// isolate_migratepages(): from the migrate scanner's frame to the end of its pageblock
    /// (isolate_migratepages_block()), stepping over free blocks, isolating up to
    /// COMPACT_CLUSTER_MAX pages; returns whether any was isolated. The scanner stops after
    /// the last page it isolated, or at the pageblock's end.
    fn isolate_migratepages(&mut self, cc: &mut CompactControl) -> bool {
        let zb = self.frames.free.zone(cc.zone);
        let block_end = zb.pageblock_end(cc.migrate_pfn);
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
