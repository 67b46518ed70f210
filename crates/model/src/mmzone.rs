//! Memory zones of one node (include/linux/mmzone.h) as x86_64 lays them out, with the
//! per-zone watermarks of __setup_per_zone_wmarks(), the lowmem reserves of
//! setup_per_zone_lowmem_reserve() and the sizes of the per-CPU page lists (zone_batchsize(),
//! zone_highsize()) in mm/page_alloc.c. The free lists and the per-CPU lists themselves are
//! buddy.rs.
//!
//! Pages on a per-CPU list are free but not in the zone's NR_FREE_PAGES: the watermark checks
//! and MemFree do not see them, up to `pcp_high` pages per CPU and zone (a quarter of that
//! while kswapd reclaims the node, ZONE_RECLAIM_ACTIVE), so allocators wake kswapd and enter
//! direct reclaim while such pages sit on other CPUs' lists. No vmstat drain of remote pages
//! (one node).
//!
//! Why zones matter to memcg and reclaim: the page allocator takes a user page from the highest
//! zone above its watermark and falls back to lower zones only above their watermark plus a
//! lowmem reserve, so ZONE_DMA keeps hundreds of free pages that user allocations cannot reach;
//! kswapd stops when any one zone is above its high watermark (pgdat_balanced()); and the
//! "file is tiny" test of prepare_scan_count() compares the free pages of all zones, stranded
//! ones included, with the sum of the high watermarks. On a 512M machine the DMA zone's
//! stranded pages are what keeps 6.1's reclaim in proportional (SCAN_FRACT) scanning.
//!
//! Layout (x86_64): ZONE_DMA is the first 16 MiB, of which the first MiB is always reserved
//! (3840 managed pages), present on machines of 64M and more; ZONE_DMA32 runs up to 4 GiB;
//! ZONE_NORMAL holds the rest. Simplified: no PCI hole below 4 GiB (a real machine, and QEMU
//! above 3.5G of RAM, move part of DMA32 above 4 GiB); the kernel's boot reservations beyond
//! the first MiB are taken from the top zone down (memblock allocates top-down); ZONE_MOVABLE
//! and ZONE_DEVICE are empty; one node. Within a zone the reserved pages sit above its managed
//! ones, except those that would leave the managed range ending off a max-order boundary:
//! those sit below it (the first MiB of ZONE_DMA is such a hole), so a zone's partial buddy
//! blocks are at its bottom, where the first allocations reach anyway.

use crate::page_cgroup::Pfn;

/// Zones in the kernel's order (lowest first).
pub const ZONE_DMA: usize = 0;
pub const ZONE_DMA32: usize = 1;
pub const ZONE_NORMAL: usize = 2;
pub const NR_ZONES: usize = 3;
pub const ZONE_NAMES: [&str; NR_ZONES] = ["DMA", "DMA32", "Normal"];

/// Pages of the first 16 MiB (ZONE_DMA's span) and of its always-reserved first MiB.
const DMA_SPAN_PAGES: u64 = 4096;
const FIRST_MIB_PAGES: u64 = 256;
/// Pages below 4 GiB.
const BELOW_4G_PAGES: u64 = 1 << 20;
/// sysctl_lowmem_reserve_ratio of DMA, DMA32 and Normal.
pub const LOWMEM_RESERVE_RATIO: [u64; NR_ZONES] = [256, 256, 32];

/// One zone: its frames, watermarks and reserve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Its first frame number; its frames are start..start + managed.
    pub start: Pfn,
    /// The physical frame number of `start` (buddy blocks align on physical numbers).
    pub phys_start: u64,
    /// Pages of RAM the zone spans and the ones the page allocator manages.
    pub spanned: u64,
    pub managed: u64,
    pub min: u64,
    pub low: u64,
    pub high: u64,
    /// lowmem_reserve[] for allocations that may use every zone (user pages, GFP_KERNEL):
    /// pages of this zone kept from them unless it is the highest zone they may use.
    pub lowmem_reserve: u64,
    /// Each CPU's list: its high mark (zone_highsize()) and batch (zone_batchsize()).
    pub pcp_high: u64,
    pub pcp_batch: u64,
}

/// The node's zones and the watermark inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zones {
    pub min_free_kbytes: u64,
    pub zone: [Zone; NR_ZONES],
}

/// A watermark, as ALLOC_WMARK_* choose one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wmark {
    Min,
    Low,
    High,
}

impl Zones {
    /// The zones of a machine with `ram_pages` of RAM, `managed_pages` of them managed, and
    /// their watermarks (`min_free_kbytes` None: calculate_min_free_kbytes();
    /// `watermark_scale_factor` 0, which 6.1's sysctl refuses: 3.11's watermarks, low at
    /// min + min/4 and high at min + min/2).
    pub fn new(
        ram_pages: u64,
        managed_pages: u64,
        min_free_kbytes: Option<u64>,
        watermark_scale_factor: u64,
        cpus: u32,
    ) -> Zones {
        let mut spanned = [0u64; NR_ZONES];
        if ram_pages >= 4 * DMA_SPAN_PAGES && managed_pages > 4 * DMA_SPAN_PAGES {
            spanned[ZONE_DMA] = DMA_SPAN_PAGES;
        }
        spanned[ZONE_DMA32] = ram_pages.min(BELOW_4G_PAGES) - spanned[ZONE_DMA];
        spanned[ZONE_NORMAL] = ram_pages.saturating_sub(BELOW_4G_PAGES);
        // Reservations: the first MiB (in DMA when there is one), the rest top-down.
        let mut managed = spanned;
        let mut reserved = ram_pages - managed_pages;
        if spanned[ZONE_DMA] > 0 {
            let r = FIRST_MIB_PAGES.min(reserved);
            managed[ZONE_DMA] -= r;
            reserved -= r;
        }
        for z in (0..NR_ZONES).rev() {
            let r = reserved.min(managed[z]);
            managed[z] -= r;
            reserved -= r;
        }
        debug_assert_eq!(managed.iter().sum::<u64>(), managed_pages);
        let min_free_kbytes = min_free_kbytes
            .unwrap_or_else(|| crate::vmscan::int_sqrt(managed_pages * 4 * 16).clamp(128, 262_144));
        // __setup_per_zone_wmarks(): min_free_kbytes shared out by managed pages.
        let pages_min = min_free_kbytes >> 2;
        let lowmem = managed_pages.max(1);
        let mut start = 0u64;
        let mut span_start = 0u64;
        let zone = std::array::from_fn(|z| {
            let m = managed[z];
            // The managed frames end on a max-order boundary where the span allows.
            let lo = span_start + if z == ZONE_DMA { FIRST_MIB_PAGES } else { 0 };
            let top = 1u64 << crate::buddy::TOP_ORDER;
            let end = (lo + m).div_ceil(top) * top;
            let phys_start = end.min(span_start + spanned[z]) - m;
            span_start += spanned[z];
            let min = pages_min * m / lowmem;
            let tmp = (min / 4).max(m * watermark_scale_factor / 10_000);
            // setup_per_zone_lowmem_reserve(): the managed pages of the zones above, by ratio.
            let above: u64 = managed[z + 1..].iter().sum();
            let lowmem_reserve = if m == 0 {
                0
            } else {
                above / LOWMEM_RESERVE_RATIO[z]
            };
            // zone_batchsize(): a quarter of managed/1024, at most 64, then
            // rounddown_pow_of_two(1.5 × batch) − 1.
            let b = ((m >> 10).min(256) / 4).max(1);
            let pcp_batch = (rounddown_pow_of_two(b + b / 2) - 1).max(1);
            // zone_highsize(): the low watermark shared by the node's CPUs, at least 4
            // batches.
            let pcp_high = ((min + tmp) / u64::from(cpus.max(1))).max(pcp_batch << 2);
            let zone = Zone {
                start: start as Pfn,
                phys_start,
                spanned: spanned[z],
                managed: m,
                min,
                low: min + tmp,
                // A factor of 0 is 3.11's __setup_per_zone_wmarks(): high is min + min/2.
                high: if watermark_scale_factor == 0 {
                    min + min / 2
                } else {
                    min + 2 * tmp
                },
                lowmem_reserve,
                pcp_high,
                pcp_batch,
            };
            start += m;
            zone
        });
        Zones {
            min_free_kbytes,
            zone,
        }
    }

    /// The zone a frame belongs to.
    #[inline]
    pub fn zone_of(&self, pfn: Pfn) -> usize {
        if pfn < self.zone[ZONE_DMA32].start {
            ZONE_DMA
        } else if pfn < self.zone[ZONE_NORMAL].start {
            ZONE_DMA32
        } else {
            ZONE_NORMAL
        }
    }

    pub fn mark(&self, z: usize, w: Wmark) -> u64 {
        let zone = &self.zone[z];
        match w {
            Wmark::Min => zone.min,
            Wmark::Low => zone.low,
            Wmark::High => zone.high,
        }
    }

    /// A watermark summed over the zones (as total_high_wmark and si_mem_available() sum
    /// them).
    pub fn total(&self, w: Wmark) -> u64 {
        (0..NR_ZONES).map(|z| self.mark(z, w)).sum()
    }

    /// A zone's lowmem_reserve[] over the kernel's five zones (DMA, DMA32, Normal, Movable,
    /// Device) as /proc/zoneinfo prints it ("protection"): for each higher zone the managed
    /// pages of the zones up to it, over this zone's ratio; 0 for an empty zone and for
    /// Movable and Device (ratio 0).
    pub fn protection(&self, z: usize) -> [u64; 5] {
        let mut p = [0u64; 5];
        if z >= NR_ZONES || self.zone[z].managed == 0 {
            return p;
        }
        let mut above = 0;
        for (j, slot) in p.iter_mut().enumerate().skip(z + 1) {
            above += self.zone.get(j).map_or(0, |zone| zone.managed);
            *slot = above / LOWMEM_RESERVE_RATIO[z];
        }
        p
    }

    /// The first frame number of each zone as /proc/zoneinfo's start_pfn: the model's frames
    /// are the managed pages, numbered from 0, so a zone starts after the spans below it.
    pub fn start_pfn(&self, z: usize) -> u64 {
        self.zone[..z].iter().map(|zone| zone.spanned).sum()
    }

    /// calculate_normal_threshold(): the per-CPU vmstat threshold of a zone (its managed
    /// pages in 128 MiB units and the online CPUs, at most 125).
    pub fn stat_threshold(&self, z: usize, cpus: u32) -> u64 {
        let fls = |x: u64| 64 - u64::from(x.leading_zeros());
        let mem = self.zone[z].managed >> (27 - 12);
        (2 * fls(u64::from(cpus)) * (1 + fls(mem))).min(125)
    }

    /// calculate_totalreserve_pages(): per zone its largest lowmem reserve plus its high
    /// watermark, at most its managed pages.
    pub fn totalreserve_pages(&self) -> u64 {
        self.zone
            .iter()
            .map(|z| (z.lowmem_reserve + z.high).min(z.managed))
            .sum()
    }
}

fn rounddown_pow_of_two(x: u64) -> u64 {
    debug_assert!(x > 0);
    1 << (63 - x.leading_zeros())
}

/// A zone's page counts as /proc/zoneinfo shows them (the zone's share of NR_ZONE_LRU_*,
/// NR_ZONE_WRITE_PENDING and NR_MLOCK), counted from the frames when read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZonePages {
    /// Pages on each LRU list (inactive anon, active anon, inactive file, active file,
    /// unevictable).
    pub lru: [u64; 5],
    pub write_pending: u64,
    pub mlock: u64,
}

impl crate::Machine {
    /// Count a zone's pages by LRU list, dirty or under writeback, and mlocked. O(frames of
    /// the zone): for reads of /proc/zoneinfo, not for the model's own decisions.
    pub fn zone_pages(&self, z: usize) -> ZonePages {
        use crate::page_cgroup::{pf, LRU_NONE};
        let mut out = ZonePages::default();
        let zone = &self.zones.zone[z];
        let start = zone.start as usize;
        let end = (start + zone.managed as usize).min(self.frames.meta.len());
        for pc in self.frames.meta[start.min(end)..end].iter().map(|m| &m.pc) {
            let l = pc.flags & pf::LRU_MASK;
            if l != LRU_NONE {
                out.lru[l as usize] += 1;
            }
            // Dirty page cache (accounted dirtying is file-only) and any page under
            // writeback, swap writes included.
            let dirty_file = pc.flags & (pf::DIRTY | pf::SWAPBACKED) == pf::DIRTY;
            if pc.flags & pf::ALLOCATED != 0 && (dirty_file || pc.flags & pf::WRITEBACK != 0) {
                out.write_pending += 1;
            }
            if pc.flags & pf::MLOCKED != 0 {
                out.mlock += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_512m_machine_has_the_zones_of_the_6_1_guest() {
        // Linux 6.1 on 512M (x86_64, 2 CPUs), /proc/zoneinfo: DMA managed 3840, min 22,
        // low 27, high 32; DMA32 managed 112691, min 649, low 811, high 973; DMA's
        // protection 426. The model derives min_free_kbytes from MemTotal (2730 KiB; the
        // kernel's 2684 comes from the free pages at boot), so DMA32's marks are 1.5% higher.
        let z = Zones::new(131_072, 116_534, None, 10, 2);
        let dma = &z.zone[ZONE_DMA];
        assert_eq!(
            (dma.managed, dma.min, dma.low, dma.high),
            (3840, 22, 27, 32)
        );
        assert_eq!(dma.lowmem_reserve, 112_694 / 256);
        let d32 = &z.zone[ZONE_DMA32];
        assert_eq!(d32.managed, 112_694);
        assert_eq!((d32.min, d32.low, d32.high), (659, 823, 987));
        assert_eq!(d32.lowmem_reserve, 0);
        assert_eq!(z.zone[ZONE_NORMAL].managed, 0);
        assert_eq!(z.zone_of(3839), ZONE_DMA);
        assert_eq!(z.zone_of(3840), ZONE_DMA32);
        assert_eq!(z.totalreserve_pages(), 440 + 32 + 987);
    }

    #[test]
    fn big_machines_have_a_normal_zone_and_reserve_dma32_for_it() {
        // 8 GiB with 100,000 pages reserved: DMA32 up to 4 GiB, Normal the rest less the
        // reservations (top-down).
        let ram = 2_097_152;
        let z = Zones::new(ram, ram - 100_000, None, 10, 2);
        assert_eq!(z.zone[ZONE_DMA].managed, 3840);
        assert_eq!(z.zone[ZONE_DMA32].managed, (1 << 20) - 4096);
        assert_eq!(
            z.zone[ZONE_NORMAL].managed,
            ram - (1 << 20) - (100_000 - 256)
        );
        assert_eq!(
            z.zone[ZONE_DMA32].lowmem_reserve,
            z.zone[ZONE_NORMAL].managed / 256
        );
        assert_eq!(z.zone[ZONE_NORMAL].lowmem_reserve, 0);
        // The watermarks add up to the single-zone figures within rounding.
        assert_eq!(
            z.min_free_kbytes,
            crate::vmscan::int_sqrt((ram - 100_000) * 64)
        );
        let sum_min: u64 = z.zone.iter().map(|z| z.min).sum();
        assert!((z.min_free_kbytes / 4).abs_diff(sum_min) <= 3);
    }

    #[test]
    fn tiny_machines_have_one_zone() {
        let z = Zones::new(8192, 6000, None, 10, 2);
        assert_eq!(z.zone[ZONE_DMA].managed, 0);
        assert_eq!(z.zone[ZONE_DMA].lowmem_reserve, 0);
        assert_eq!(z.zone[ZONE_DMA32].managed, 6000);
    }

    #[test]
    fn per_cpu_lists_as_6_1_sizes_them() {
        // 6.1 on 512M with 2 CPUs: DMA32 batch 31, high 811/2 = 405; DMA batch 1, high 13.
        let z = Zones::new(131_072, 116_534, None, 10, 2);
        assert_eq!(
            (z.zone[ZONE_DMA32].pcp_batch, z.zone[ZONE_DMA32].pcp_high),
            (31, 411)
        );
        assert_eq!(
            (z.zone[ZONE_DMA].pcp_batch, z.zone[ZONE_DMA].pcp_high),
            (1, 13)
        );
        // 8 GiB, 4 CPUs: batch 63 (the most), high a quarter of the low watermark.
        let z = Zones::new(2_097_152, 2_000_000, None, 10, 4);
        let n = &z.zone[ZONE_NORMAL];
        assert_eq!(n.pcp_batch, 63);
        assert_eq!(n.pcp_high, n.low / 4);
    }
}
