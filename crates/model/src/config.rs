//! Machine configuration: RAM, swap, CPUs, cgroup version, sysctls (vm.swappiness,
//! min_free_kbytes, watermark_scale_factor), mount options (memory_recursiveprot,
//! memory_localevents), the LRU, soft-limit, dirty and statistics designs, the storage device and the cost of each simulated operation.
//!
//! Every field has a documented default; `MachineConfig::set` takes the `key=value` words of a
//! script's `machine` line.

use crate::units::{parse_duration_ns, parse_size};

pub const PAGE_SIZE: u64 = 4096;
pub const PAGE_SHIFT: u32 = 12;

/// cgroup v1 (legacy memory hierarchy) or v2 (unified hierarchy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

/// The page replacement design.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LruPolicy {
    /// Split LRU (2.6.28+): separate anon and file lists, balanced by swappiness and cost.
    Split,
    /// One LRU pair holding anon and file pages together, the design split LRU replaced
    /// (2.6.27 and before; see docs/FIDELITY.md for what the model keeps of it).
    Unified,
    /// The multi-generational LRU of 6.1 (CONFIG_LRU_GEN, lru_gen.rs), switched on at boot
    /// as `echo y > /sys/kernel/mm/lru_gen/enabled` would (Debian's 6.1 builds it in, off).
    Mglru,
}

/// The soft-limit reclaim design (cgroup v1 memory.soft_limit_in_bytes; seed 000).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftLimitPolicy {
    /// Mainline: a per-node tree of memcgs ordered by excess, refreshed every 1024 page
    /// events, from which kswapd and direct global reclaim take the largest offender and
    /// reclaim it at priority 0 (mm/memcontrol-v1.c).
    Tree,
    /// The 2013 rework, all eight patches: a soft pass over the eligible groups at the
    /// current priority before the reclaim-all pass, for limit reclaim too, with an
    /// iterator that skips subtrees without children in excess.
    Rework,
    /// The rework without the children-in-excess counters (patches 1-4): every soft pass
    /// walks the whole hierarchy and asks the predicate of every group.
    ReworkWalk,
}

/// shrink_lruvec()'s proportional scanning once the pages asked for are reclaimed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShrinkLruvec {
    /// 3.16 and later (6.1): direct global reclaim at DEF_PRIORITY scans its whole targets;
    /// otherwise the smaller of anon and file stops and the larger is cut in proportion, and
    /// reclaim ends when either is empty.
    V6_1,
    /// 3.11 to 3.15 (the kernel of seed 000): global direct reclaim stops once it has what it
    /// asked for; kswapd and memcg reclaim go on proportionally, and when one type is empty
    /// they scan all of the other's target, which for a memcg at priority 0 is its whole
    /// list (fixed by "mm: vmscan: use proportional scanning during direct reclaim and full
    /// scan at DEF_PRIORITY", 3.16).
    V3_11,
}

/// The era of page reclaim's heuristics (the `reclaim` key): which kernel's rules decide
/// what reclaim scans and what it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimEra {
    /// Linux 6.1 (default): get_scan_count() from the anon/file reclaim cost at the
    /// reclaim root, deactivation decided once per shrink_node(), new anon pages inactive,
    /// dirty and writeback file pages moved to the active list, kswapd balanced when one
    /// zone is.
    V6_1,
    /// Linux 3.11 (the kernel of seed 000): get_scan_count() per lruvec (SCAN_ANON when the
    /// lruvec's file pages and the free pages are below the high watermark, SCAN_FILE while
    /// its inactive file list is not low, else the recent rotated/scanned ratios), the file
    /// lists kept 1:1, new anon pages active, dirty and writeback file pages kept on the
    /// inactive list, watermarks min + min/4 and min + min/2, and kswapd that balances every
    /// zone and skips a zone soft-limit reclaim balanced (vmscan.rs, FIDELITY.md).
    V3_11,
}

/// The dirty-memory design: how balance_dirty_pages() limits a cgroup's dirty pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirtyPolicy {
    /// Mainline: the global domain, and on cgroup v2 each memcg's own wb_domain (cgroup
    /// writeback, 4.2+).
    Mainline,
    /// Before seed 001 (2.6.36 with memcg, cgroup v1): dirty and writeback pages are counted
    /// machine-wide only, no memcg counts them or limits them; 2.6.36's
    /// balance_dirty_pages(). The baseline of the seed's fault benchmark ("mmotm w/ memcg").
    Global,
    /// Seed 001's per-memcg dirty limits (2010, cgroup v1, never merged): memory.dirty_ratio
    /// and friends, checked beside the system's; disabled in a group with use_hierarchy.
    Seed001,
    /// Seed 001 with the fix its thread sketches: the ancestor closest to its limit counts,
    /// for the foreground and the background limit, use_hierarchy or not.
    Seed001Hier,
}

/// A storage device: an access latency, a sequential transfer rate and, on a rotational
/// disk, a seek for each request that does not start where the one before it ended;
/// requests are served one at a time, each in the first idle gap at or after its submission
/// (blkdev.rs). The profiles and where their figures
/// come from are in docs/FIDELITY.md ("Storage").
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceConfig {
    /// Time from the end of a request's transfer to its completion, ns (command overhead
    /// and interrupt). ssd: 100 µs.
    pub latency_ns: u64,
    /// Sequential transfer rate in bytes per second. ssd: 500 MB/s.
    pub bandwidth_bps: u64,
    /// Seek plus rotational latency a request pays when it does not start where the last
    /// ended, ns; 0 on solid-state devices.
    pub seek_ns: u64,
    /// Asynchronous requests in flight before a writer sleeps: the lower of the device's
    /// tags and writeback throttling's depth (RWB_DEF_DEPTH, 16).
    pub queue_depth: u32,
    /// SWP_SYNCHRONOUS_IO (zram, pmem): a swap write ends before pageout() returns, so
    /// reclaim frees the page in the same pass.
    pub synchronous_io: bool,
    /// A rotational disk (queue/rotational).
    pub rotational: bool,
}

impl DeviceConfig {
    /// The named storage profiles: `hdd`, `ssd`, `nvme`, and (for swap) `zram`.
    pub const PROFILES: &'static [&'static str] = &["hdd", "ssd", "nvme", "zram"];

    /// A named profile (docs/FIDELITY.md, "Storage", gives the figures' sources).
    pub fn profile(name: &str) -> Option<DeviceConfig> {
        let d = match name {
            // A 7200 rpm SATA disk of 2013: 130 MB/s sequential; a non-sequential request
            // pays a short-stroke seek (about 4 ms) and half a rotation (4.2 ms).
            "hdd" => DeviceConfig {
                latency_ns: 100_000,
                bandwidth_bps: 130_000_000,
                seek_ns: 8_000_000,
                queue_depth: 16,
                synchronous_io: false,
                rotational: true,
            },
            // A SATA SSD: 100 µs per command, 500 MB/s (the SATA 3 link).
            "ssd" => DeviceConfig {
                latency_ns: 100_000,
                bandwidth_bps: 500_000_000,
                seek_ns: 0,
                queue_depth: 16,
                synchronous_io: false,
                rotational: false,
            },
            // A PCIe 3 NVMe drive: 20 µs per command, 2 GB/s writes.
            "nvme" => DeviceConfig {
                latency_ns: 20_000,
                bandwidth_bps: 2_000_000_000,
                seek_ns: 0,
                queue_depth: 16,
                synchronous_io: false,
                rotational: false,
            },
            // zram: compression in the writer's context (lzo-rle, about 1 GB/s per CPU),
            // SWP_SYNCHRONOUS_IO.
            "zram" => DeviceConfig {
                latency_ns: 0,
                bandwidth_bps: 1_000_000_000,
                seek_ns: 0,
                queue_depth: 16,
                synchronous_io: true,
                rotational: false,
            },
            _ => return None,
        };
        Some(d)
    }
}

/// The CPU cost of each simulated operation, in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Costs {
    /// A memory access that hits a resident, mapped page. Default 20 ns.
    pub hit_ns: u64,
    /// A minor fault: allocate, zero, charge and map a page. Default 1000 ns.
    pub minor_fault_ns: u64,
    /// CPU part of a major fault (the device time comes on top). Default 2000 ns.
    pub major_fault_ns: u64,
    /// read() of one resident page-cache page. Default 200 ns.
    pub read_hit_ns: u64,
    /// One page looked at by reclaim (isolate, check references, put back). Default 100 ns.
    pub scan_ns: u64,
    /// One page freed by reclaim (unmap, remove from mapping, uncharge). Default 300 ns.
    pub reclaim_ns: u64,
    /// One anon page written out by reclaim: add_to_swap(), try_to_unmap() with its TLB
    /// flush, and swap_writepage()'s bio. Default 1000 ns.
    pub pageout_ns: u64,
    /// One page-cache page written back by the flusher (write_cache_pages(): clearing the
    /// dirty bit for I/O, setting writeback, the file system's bio), charged to the flusher
    /// thread's CPU. Default 1000 ns.
    pub writepage_ns: u64,
    /// zswap: lzo compressing one page at its store, and decompressing it at a load; the
    /// other compressors take these times in proportion to their published speeds
    /// (zswap.rs). Defaults 10,396 and 7,434 ns: a 4 KiB page at lzbench's 394 and 551 MB/s
    /// for lzo1x -1 (docs/FIDELITY.md).
    pub zswap_compress_ns: u64,
    pub zswap_decompress_ns: u64,
    /// Scheduling quantum: how long a task runs before the next event is looked at. 1 ms.
    pub quantum_ns: u64,
    /// One memcg looked at by a reclaim walk (mem_cgroup_iter's step, the reference it
    /// takes, the soft-limit predicate or the protection check). Default 100 ns.
    pub memcg_iter_ns: u64,
    /// A TLB-flush IPI's round trip: the time reclaim waits in arch_tlbbatch_flush() for the
    /// other CPUs running the mm of a page it unmapped (flush_tlb_multi()). Not multiplied
    /// by `cpu_scale`: it is the other CPU's latency in taking the interrupt. Default 2000 ns.
    pub ipi_ns: u64,
}

/// Everything that defines a simulated machine.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineConfig {
    /// RAM in bytes (rounded down to pages). Default 1 GiB.
    pub memory_bytes: u64,
    /// Swap space in bytes (0 = no swap). Default 0.
    pub swap_bytes: u64,
    /// Number of CPUs. Default 2.
    pub cpus: u32,
    /// cgroup version. Default v2.
    pub cgroup: CgroupVersion,
    /// Seed of the machine's random number generator. Default 1.
    pub seed: u64,
    /// vm.swappiness (0..=200). Default 60.
    pub swappiness: u32,
    /// vm.min_free_kbytes; None derives it as the kernel does (sqrt(lowmem_kb * 16)).
    pub min_free_kbytes: Option<u64>,
    /// vm.watermark_scale_factor in 1/10000 of memory. Default 10.
    pub watermark_scale_factor: u64,
    /// cgroup2 mount option memory_recursiveprot. Default off.
    pub recursive_prot: bool,
    /// cgroup2 mount option memory_localevents. Default off.
    pub local_events: bool,
    /// Per-CPU charge stock of MEMCG_CHARGE_BATCH pages. Default on, as in the kernel.
    pub charge_stock: bool,
    /// Enable the memory controller in the root's cgroup.subtree_control at boot, as systemd
    /// does on every distribution (v2 only). Default on.
    pub root_memory_enabled: bool,
    /// Number of NUMA nodes. Only 1 is supported now; per-node lruvecs exist in the data.
    pub nodes: u32,
    /// Split LRU (default), a single unified LRU, or the multi-generational LRU.
    pub lru: LruPolicy,
    /// /sys/kernel/mm/lru_gen/min_ttl_ms at boot (lru_gen.rs). Default 0, as in 6.1.
    pub lru_gen_min_ttl_ms: u32,
    /// Soft-limit reclaim design. Default the mainline tree.
    pub softlimit: SoftLimitPolicy,
    /// Dirty-memory design. Default mainline.
    pub dirty: DirtyPolicy,
    /// shrink_lruvec()'s proportional scanning: 6.1's (default) or 3.11's.
    pub shrink_lruvec: ShrinkLruvec,
    /// Reclaim's heuristics: 6.1's (default) or 3.11's.
    pub reclaim: ReclaimEra,
    /// How memcg statistics reach their readers (rstat.rs). Default rstat, as in 6.1.
    pub stats: crate::rstat::StatsScheme,
    /// Where each frame's memcg is kept (seed 004; page_cgroup_store.rs). Default flat.
    pub page_cgroup: crate::page_cgroup_store::PcDesign,
    /// Kernel memory charged to cgroups (kmem.rs); off is the kernel's cgroup.memory=nokmem.
    /// Default on.
    pub kmem: bool,
    /// RAM the kernel reserves at boot (struct page for every frame, the image, early
    /// allocations): MemTotal is RAM minus this. None: as Linux 6.1 on x86-64,
    /// 49,192 KiB plus 70 bytes per 4 KiB of RAM (with `base`, at most a quarter of RAM).
    pub reserved_bytes: Option<u64>,
    /// Memory the base system holds outside any cgroup (init and shell, the kernel's own
    /// caches and stacks), unreclaimable. None: as a minimal Linux 6.1 system,
    /// 32,960 KiB plus 13.5 bytes per 4 KiB of RAM (with `reserved`, at most a quarter of RAM).
    pub base_bytes: Option<u64>,
    /// The storage device of the filesystem (and of swap unless `swap_device` is set).
    /// Default the `ssd` profile.
    pub device: DeviceConfig,
    /// A separate swap device; None puts swap on `device`.
    pub swap_device: Option<DeviceConfig>,
    /// /sys/kernel/mm/swap/vma_ra_enabled: swap readahead follows the faulting VMA
    /// (swap_vma_readahead()) when the swap device is not rotational. Default on.
    pub swap_vma_ra: bool,
    /// zswap's module parameters at boot (zswap.enabled=, zswap.compressor= ...): `enabled`
    /// off, as Debian's 6.1 builds it without CONFIG_ZSWAP_DEFAULT_ON; lzo on zbud, 20 % of
    /// RAM, accepting again below 90 % of that (zswap.rs).
    pub zswap: crate::zswap::ZswapParams,
    /// /sys/kernel/mm/transparent_hugepage/enabled at boot (huge_memory.rs). Default never
    /// for now, so that every result from before huge pages stays as it was; Debian's 6.1
    /// boots with always.
    pub thp: crate::huge_memory::ThpEnabled,
    /// /sys/kernel/mm/transparent_hugepage/defrag at boot. Default madvise, as 6.1's.
    pub thp_defrag: crate::huge_memory::ThpDefrag,
    /// /sys/kernel/mm/transparent_hugepage/shmem_enabled at boot (shmem.rs). Default never,
    /// as 6.1's.
    pub shmem_thp: crate::huge_memory::ShmemHuge,
    /// /proc/sys/vm/compaction_proactiveness at boot (0..=100; 0: kcompactd does no
    /// proactive compaction). Default 20, as 6.1's.
    pub compaction_proactiveness: u32,
    /// /proc/sys/vm/extfrag_threshold at boot (0..=1000). Default 500.
    pub extfrag_threshold: u32,
    /// The file device's queue/read_ahead_kb: the largest file readahead window. Default
    /// 128 (VM_READAHEAD_PAGES).
    pub read_ahead_kb: u64,
    pub costs: Costs,
    /// Every CPU cost multiplied by this, in thousandths (`cpu_scale=24`: a CPU 24 times
    /// slower than the costs say, as a guest under software emulation). Default 1000.
    pub cpu_scale_milli: u64,
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            memory_bytes: 1 << 30,
            swap_bytes: 0,
            cpus: 2,
            cgroup: CgroupVersion::V2,
            seed: 1,
            swappiness: 60,
            min_free_kbytes: None,
            watermark_scale_factor: 10,
            recursive_prot: false,
            local_events: false,
            charge_stock: true,
            root_memory_enabled: true,
            nodes: 1,
            lru: LruPolicy::Split,
            lru_gen_min_ttl_ms: 0,
            softlimit: SoftLimitPolicy::Tree,
            dirty: DirtyPolicy::Mainline,
            shrink_lruvec: ShrinkLruvec::V6_1,
            reclaim: ReclaimEra::V6_1,
            stats: crate::rstat::StatsScheme::Rstat,
            page_cgroup: crate::page_cgroup_store::PcDesign::Flat,
            kmem: true,
            reserved_bytes: None,
            base_bytes: None,
            device: DeviceConfig::profile("ssd").expect("a profile"),
            swap_device: None,
            swap_vma_ra: true,
            zswap: Default::default(),
            thp: crate::huge_memory::ThpEnabled::Always,
            thp_defrag: crate::huge_memory::ThpDefrag::Madvise,
            shmem_thp: crate::huge_memory::ShmemHuge::Never,
            compaction_proactiveness: crate::compaction::DEFAULT_PROACTIVENESS,
            extfrag_threshold: crate::compaction::DEFAULT_EXTFRAG_THRESHOLD,
            read_ahead_kb: 128,
            costs: Costs {
                hit_ns: 20,
                minor_fault_ns: 1_000,
                major_fault_ns: 2_000,
                read_hit_ns: 200,
                scan_ns: 100,
                reclaim_ns: 300,
                pageout_ns: 1_000,
                writepage_ns: 1_000,
                zswap_compress_ns: 10_396,
                zswap_decompress_ns: 7_434,
                quantum_ns: 1_000_000,
                memcg_iter_ns: 100,
                ipi_ns: 2000,
            },
            cpu_scale_milli: 1000,
        }
    }
}

impl Costs {
    /// The CPU costs multiplied by `milli` / 1000 (the quantum is not a cost and stays).
    pub fn scaled(&self, milli: u64) -> Costs {
        let f = |ns: u64| (ns as u128 * milli as u128 / 1000) as u64;
        Costs {
            hit_ns: f(self.hit_ns),
            minor_fault_ns: f(self.minor_fault_ns),
            major_fault_ns: f(self.major_fault_ns),
            read_hit_ns: f(self.read_hit_ns),
            scan_ns: f(self.scan_ns),
            reclaim_ns: f(self.reclaim_ns),
            pageout_ns: f(self.pageout_ns),
            writepage_ns: f(self.writepage_ns),
            zswap_compress_ns: f(self.zswap_compress_ns),
            zswap_decompress_ns: f(self.zswap_decompress_ns),
            quantum_ns: self.quantum_ns,
            memcg_iter_ns: f(self.memcg_iter_ns),
            ipi_ns: self.ipi_ns,
        }
    }
}

/// A positive factor with up to three decimals (`24`, `0.5`), in thousandths; 0.001 to 1000.
fn parse_scale_milli(v: &str) -> Result<u64, String> {
    let err = || format!("expected a factor from 0.001 to 1000 such as 24 or 0.5, got '{v}'");
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if int.is_empty() && frac.is_empty()
        || frac.len() > 3
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(err());
    }
    let int: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| err())?
    };
    let frac_milli: u64 = format!("{frac:0<3}").parse().map_err(|_| err())?;
    let milli = int
        .checked_mul(1000)
        .and_then(|m| m.checked_add(frac_milli))
        .ok_or_else(err)?;
    if !(1..=1_000_000).contains(&milli) {
        return Err(err());
    }
    Ok(milli)
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v {
        "1" | "on" | "yes" | "true" => Ok(true),
        "0" | "off" | "no" | "false" => Ok(false),
        _ => Err(format!("expected on/off or 1/0, got '{v}'")),
    }
}

/// A queue depth: 1 to 4096 requests.
fn want_depth(v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(d) if (1..=4096).contains(&d) => Ok(d),
        _ => Err(format!(
            "expected a number of requests from 1 to 4096, got '{v}'"
        )),
    }
}

/// A size setting: its errors say that a size is wanted, whatever was given.
fn want_size(v: &str) -> Result<u64, String> {
    parse_size(v).map_err(|e| {
        // parse_size's message quotes the value again; keep only its reason.
        let why = e
            .strip_prefix(&format!("bad size '{}'", v.trim()))
            .map(|r| r.trim_start_matches(": "))
            .filter(|r| !r.is_empty())
            .unwrap_or(&e);
        format!("wants a size such as 512M or 2G, got '{v}' ({why})")
    })
}

/// A whole number from `lo` to `hi`; the error names the range.
fn parse_in(v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number from {lo} to {hi}, got '{}'",
            crate::text::clip(v)
        )),
    }
}

impl MachineConfig {
    /// Pages of RAM.
    pub fn ram_pages(&self) -> u64 {
        self.memory_bytes / PAGE_SIZE
    }

    /// The default reservations (reserved, base) in bytes: Linux 6.1's, scaled down together
    /// to a quarter of RAM on machines too small for them (under about 370M).
    fn default_reservations(&self) -> (u64, u64) {
        let ram = self.ram_pages();
        let reserved = 49_192 * 1024 + 70 * ram;
        let base = 32_960 * 1024 + 27 * ram / 2;
        let cap = self.memory_bytes / 4;
        if reserved + base <= cap {
            (reserved, base)
        } else {
            let r = (reserved as u128 * cap as u128 / (reserved + base) as u128) as u64;
            (r, cap - r)
        }
    }

    /// Pages the kernel reserves at boot.
    pub fn reserved_pages(&self) -> u64 {
        let bytes = self
            .reserved_bytes
            .unwrap_or_else(|| self.default_reservations().0);
        bytes.div_ceil(PAGE_SIZE).min(self.ram_pages())
    }

    /// MemTotal in pages: the frames the page allocator manages.
    pub fn managed_pages(&self) -> u64 {
        self.ram_pages() - self.reserved_pages()
    }

    /// Pages the base system holds at boot, out of `managed`.
    pub fn base_pages(&self, managed: u64) -> u64 {
        let bytes = self
            .base_bytes
            .unwrap_or_else(|| self.default_reservations().1);
        bytes.div_ceil(PAGE_SIZE).min(managed)
    }

    /// The keys `set` accepts, for help and error texts.
    pub const KEYS: &'static [&'static str] = &[
        "memory",
        "swap",
        "cpus",
        "cgroup",
        "seed",
        "swappiness",
        "min_free_kbytes",
        "watermark_scale_factor",
        "recursiveprot",
        "localevents",
        "stock",
        "root_memory",
        "lru",
        "lru_gen_min_ttl_ms",
        "softlimit",
        "dirty",
        "shrink_lruvec",
        "reclaim",
        "stats",
        "page_cgroup",
        "kmem",
        "reserved",
        "base",
        "disk",
        "disk_latency",
        "disk_bandwidth",
        "disk_seek",
        "disk_queue_depth",
        "read_ahead_kb",
        "swap_disk",
        "swap_latency",
        "swap_bandwidth",
        "swap_seek",
        "swap_queue_depth",
        "swap_sync",
        "swap_vma_ra",
        "zswap",
        "zswap_compressor",
        "zswap_zpool",
        "zswap_max_pool_percent",
        "zswap_accept_threshold_percent",
        "thp",
        "thp_defrag",
        "shmem_thp",
        "compaction_proactiveness",
        "extfrag_threshold",
        "hit_cost",
        "fault_cost",
        "majfault_cost",
        "scan_cost",
        "pageout_cost",
        "writepage_cost",
        "quantum",
        "iter_cost",
        "ipi_cost",
        "cpu_scale",
    ];

    /// Whether `key` takes on/off (a boolean in scenario files).
    pub fn key_is_switch(key: &str) -> bool {
        matches!(
            key,
            "recursiveprot"
                | "localevents"
                | "stock"
                | "root_memory"
                | "kmem"
                | "swap_sync"
                | "swap_vma_ra"
                | "zswap"
        )
    }

    /// The swap device's configuration to change: a separate one, made from the file
    /// device's when there was none.
    fn swap_device_mut(&mut self) -> &mut DeviceConfig {
        self.swap_device.get_or_insert_with(|| self.device.clone())
    }

    /// The configuration of the device swap is on.
    pub fn swap_device_config(&self) -> &DeviceConfig {
        self.swap_device.as_ref().unwrap_or(&self.device)
    }

    /// Apply one `key=value` setting of a `machine` line.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let r: Result<(), String> = (|| {
            match key {
                "memory" => self.memory_bytes = want_size(value)?,
                "swap" => self.swap_bytes = want_size(value)?,
                "cpus" => self.cpus = parse_in(value, 1, 1024)? as u32,
                "cgroup" => {
                    self.cgroup = match value {
                        "v1" | "1" => CgroupVersion::V1,
                        "v2" | "2" => CgroupVersion::V2,
                        _ => return Err(format!("expected v1 or v2, got '{value}'")),
                    }
                }
                "seed" => self.seed = parse_in(value, 0, u64::MAX)?,
                "swappiness" => self.swappiness = parse_in(value, 0, 200)? as u32,
                "min_free_kbytes" => self.min_free_kbytes = Some(parse_in(value, 0, u64::MAX)?),
                "watermark_scale_factor" => self.watermark_scale_factor = parse_in(value, 1, 3000)?,
                "recursiveprot" => self.recursive_prot = parse_bool(value)?,
                "localevents" => self.local_events = parse_bool(value)?,
                "stock" => self.charge_stock = parse_bool(value)?,
                "root_memory" => self.root_memory_enabled = parse_bool(value)?,
                "lru" => {
                    self.lru = match value {
                        "split" => LruPolicy::Split,
                        "unified" => LruPolicy::Unified,
                        "mglru" => LruPolicy::Mglru,
                        _ => {
                            return Err(format!("expected split, unified or mglru, got '{value}'"))
                        }
                    }
                }
                "lru_gen_min_ttl_ms" => {
                    self.lru_gen_min_ttl_ms = parse_in(value, 0, u64::from(u32::MAX))? as u32
                }
                "softlimit" => {
                    self.softlimit = match value {
                        "tree" => SoftLimitPolicy::Tree,
                        "rework" => SoftLimitPolicy::Rework,
                        "rework-walk" => SoftLimitPolicy::ReworkWalk,
                        _ => {
                            return Err(format!(
                                "expected tree, rework or rework-walk, got '{value}'"
                            ))
                        }
                    }
                }
                "dirty" => {
                    self.dirty = match value {
                        "mainline" => DirtyPolicy::Mainline,
                        "global" => DirtyPolicy::Global,
                        "seed001" => DirtyPolicy::Seed001,
                        "seed001-hier" => DirtyPolicy::Seed001Hier,
                        _ => {
                            return Err(format!(
                                "expected mainline, global, seed001 or seed001-hier, got '{value}'"
                            ))
                        }
                    }
                }
                "shrink_lruvec" => {
                    self.shrink_lruvec = match value {
                        "6.1" => ShrinkLruvec::V6_1,
                        "3.11" => ShrinkLruvec::V3_11,
                        _ => return Err(format!("expected 6.1 or 3.11, got '{value}'")),
                    }
                }
                "reclaim" => {
                    self.reclaim = match value {
                        "6.1" => ReclaimEra::V6_1,
                        "3.11" => ReclaimEra::V3_11,
                        _ => return Err(format!("expected 6.1 or 3.11, got '{value}'")),
                    }
                }
                "stats" => {
                    self.stats = crate::rstat::StatsScheme::from_name(value)
                        .ok_or_else(|| format!("expected rstat, legacy or exact, got '{value}'"))?
                }
                "page_cgroup" => {
                    self.page_cgroup = crate::page_cgroup_store::PcDesign::from_name(value)
                        .ok_or_else(|| format!("expected flat, radix or section, got '{value}'"))?
                }
                "kmem" => self.kmem = parse_bool(value)?,
                "reserved" => self.reserved_bytes = Some(want_size(value)?),
                "base" => self.base_bytes = Some(want_size(value)?),
                "disk" => {
                    let d = DeviceConfig::profile(value)
                        .filter(|d| !d.synchronous_io)
                        .ok_or_else(|| format!("expected hdd, ssd or nvme, got '{value}'"))?;
                    self.device = d;
                }
                "disk_latency" => self.device.latency_ns = parse_duration_ns(value)?,
                "disk_bandwidth" => self.device.bandwidth_bps = want_size(value)?,
                "disk_seek" => {
                    self.device.seek_ns = parse_duration_ns(value)?;
                    self.device.rotational = self.device.seek_ns > 0;
                }
                "disk_queue_depth" => self.device.queue_depth = want_depth(value)?,
                "read_ahead_kb" => {
                    self.read_ahead_kb = match value.parse::<u64>() {
                        Ok(kb) if kb <= 1 << 20 => kb,
                        _ => return Err(format!("expected KiB from 0 to 1048576, got '{value}'")),
                    }
                }
                "swap_disk" => {
                    self.swap_device = match value {
                        "disk" => None,
                        _ => Some(DeviceConfig::profile(value).ok_or_else(|| {
                            format!("expected disk, hdd, ssd, nvme or zram, got '{value}'")
                        })?),
                    }
                }
                "swap_latency" => self.swap_device_mut().latency_ns = parse_duration_ns(value)?,
                "swap_bandwidth" => self.swap_device_mut().bandwidth_bps = want_size(value)?,
                "swap_seek" => {
                    let d = self.swap_device_mut();
                    d.seek_ns = parse_duration_ns(value)?;
                    d.rotational = d.seek_ns > 0;
                }
                "swap_queue_depth" => self.swap_device_mut().queue_depth = want_depth(value)?,
                "swap_sync" => {
                    let sync = parse_bool(value)?;
                    match self.swap_device.as_mut() {
                        Some(d) => d.synchronous_io = sync,
                        None => self.device.synchronous_io = sync,
                    }
                }
                "swap_vma_ra" => self.swap_vma_ra = parse_bool(value)?,
                "zswap" => self.zswap.enabled = parse_bool(value)?,
                "zswap_compressor" | "zswap_zpool" => {
                    let param = &key["zswap_".len()..];
                    self.zswap.write(param, value).map_err(|_| {
                        let known = if param == "zpool" {
                            crate::zswap::ZPOOLS
                        } else {
                            crate::zswap::COMPRESSORS
                        };
                        format!("expected one of {}, got '{value}'", known.join(", "))
                    })?
                }
                "zswap_max_pool_percent" | "zswap_accept_threshold_percent" => self
                    .zswap
                    .write(&key["zswap_".len()..], value)
                    .map_err(|_| format!("expected a percentage, got '{value}'"))?,
                "thp" => {
                    self.thp =
                        crate::huge_memory::ThpEnabled::from_name(value).ok_or_else(|| {
                            format!("expected always, madvise or never, got '{value}'")
                        })?
                }
                "thp_defrag" => {
                    self.thp_defrag =
                        crate::huge_memory::ThpDefrag::from_name(value).ok_or_else(|| {
                            "expected always, defer, defer+madvise, madvise or never, got '"
                                .to_string()
                                + value
                                + "'"
                        })?
                }
                "shmem_thp" => {
                    self.shmem_thp =
                        crate::huge_memory::ShmemHuge::from_name(value).ok_or_else(|| {
                            "expected always, within_size, advise, never, deny or force, got '"
                                .to_string()
                                + value
                                + "'"
                        })?
                }
                "compaction_proactiveness" => {
                    self.compaction_proactiveness = parse_in(value, 0, 100)? as u32
                }
                "extfrag_threshold" => self.extfrag_threshold = parse_in(value, 0, 1000)? as u32,
                "hit_cost" => self.costs.hit_ns = parse_duration_ns(value)?,
                "fault_cost" => self.costs.minor_fault_ns = parse_duration_ns(value)?,
                "majfault_cost" => self.costs.major_fault_ns = parse_duration_ns(value)?,
                "scan_cost" => self.costs.scan_ns = parse_duration_ns(value)?,
                "pageout_cost" => self.costs.pageout_ns = parse_duration_ns(value)?,
                "writepage_cost" => self.costs.writepage_ns = parse_duration_ns(value)?,
                "quantum" => self.costs.quantum_ns = parse_duration_ns(value)?,
                "iter_cost" => self.costs.memcg_iter_ns = parse_duration_ns(value)?,
                "ipi_cost" => self.costs.ipi_ns = parse_duration_ns(value)?,
                "cpu_scale" => self.cpu_scale_milli = parse_scale_milli(value)?,
                _ => {
                    return Err(format!(
                        "unknown machine option '{key}' (known: {})",
                        Self::KEYS.join(", ")
                    ))
                }
            }
            Ok(())
        })();
        r.map_err(|e| {
            if e.starts_with("unknown machine option") {
                e
            } else {
                format!("machine option {key}: {e}")
            }
        })
    }

    /// Check the whole configuration; the error names the offending setting.
    pub fn validate(&self) -> Result<(), String> {
        let pages = self.memory_bytes / PAGE_SIZE;
        if pages < 4096 {
            return Err("memory must be at least 16M".into());
        }
        if pages > u32::MAX as u64 / 2 {
            return Err("memory must be below 8T (frame numbers are 31-bit)".into());
        }
        let managed = self.managed_pages();
        if managed.saturating_sub(self.base_pages(managed)) < 4096 {
            return Err("memory less reserved and base must leave at least 16M".into());
        }
        if self.swap_bytes / PAGE_SIZE > u32::MAX as u64 / 2 {
            return Err("swap must be below 8T".into());
        }
        if self.cpus == 0 || self.cpus > 1024 {
            return Err("cpus must be between 1 and 1024".into());
        }
        if self.swappiness > 200 {
            return Err("swappiness must be between 0 and 200".into());
        }
        if self.watermark_scale_factor == 0 || self.watermark_scale_factor > 3000 {
            return Err("watermark_scale_factor must be between 1 and 3000".into());
        }
        if self.nodes != 1 {
            return Err("only one NUMA node is modelled".into());
        }
        if self.device.bandwidth_bps == 0 {
            return Err("disk_bandwidth must be positive".into());
        }
        if self
            .swap_device
            .as_ref()
            .is_some_and(|d| d.bandwidth_bps == 0)
        {
            return Err("swap_bandwidth must be positive".into());
        }
        if self.dirty != DirtyPolicy::Mainline && self.cgroup != CgroupVersion::V1 {
            return Err(
                "dirty=global, seed001 and seed001-hier are cgroup v1 designs: \
                        set cgroup=v1"
                    .into(),
            );
        }
        if self.costs.quantum_ns == 0 {
            return Err("quantum must be positive".into());
        }
        if self.lru == LruPolicy::Mglru && self.reclaim == ReclaimEra::V3_11 {
            return Err("lru=mglru is 6.1's: 3.11 had no multi-generational LRU".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_scale_multiplies_every_cpu_cost_but_the_quantum() {
        let mut c = MachineConfig::default();
        c.set("cpu_scale", "24").unwrap();
        assert_eq!(c.cpu_scale_milli, 24_000);
        let s = c.costs.scaled(c.cpu_scale_milli);
        assert_eq!(s.minor_fault_ns, 24_000);
        assert_eq!(s.reclaim_ns, 7_200);
        assert_eq!(s.quantum_ns, c.costs.quantum_ns);
        c.set("cpu_scale", "0.5").unwrap();
        assert_eq!(c.costs.scaled(c.cpu_scale_milli).scan_ns, 50);
        for bad in ["0", "-1", "x", "1.2345", "1001", "", ".", "1e3"] {
            let e = c.set("cpu_scale", bad).unwrap_err();
            assert!(e.contains("cpu_scale"), "{bad}: {e}");
        }
        let m = crate::Machine::new(c.clone()).unwrap();
        assert_eq!(m.cfg.costs.scan_ns, 50);
    }

    #[test]
    fn storage_profiles_and_their_keys() {
        let mut c = MachineConfig::default();
        assert_eq!(c.device, DeviceConfig::profile("ssd").unwrap());
        assert!(c.swap_device.is_none());
        c.set("disk", "hdd").unwrap();
        assert!(c.device.rotational && c.device.seek_ns > 0);
        // Swap stays on the disk until told otherwise; a swap figure makes a device of its
        // own from the disk's.
        assert!(c.swap_device_config().rotational);
        c.set("swap_latency", "1ms").unwrap();
        let s = c.swap_device.clone().unwrap();
        assert_eq!((s.latency_ns, s.seek_ns), (1_000_000, c.device.seek_ns));
        c.set("swap_disk", "zram").unwrap();
        assert!(c.swap_device_config().synchronous_io);
        c.set("swap_disk", "disk").unwrap();
        assert!(c.swap_device.is_none());
        c.set("swap_sync", "on").unwrap();
        assert!(c.device.synchronous_io);
        c.set("disk_seek", "0").unwrap();
        assert!(!c.device.rotational);
        c.set("disk_queue_depth", "64").unwrap();
        assert_eq!(c.device.queue_depth, 64);
        // Bad values name the key and what it takes.
        let e = c.set("disk", "floppy").unwrap_err();
        assert!(e.contains("disk") && e.contains("hdd, ssd or nvme"), "{e}");
        assert!(c.set("disk", "zram").is_err());
        assert!(c.set("swap_disk", "tape").unwrap_err().contains("zram"));
        for bad in ["0", "4097", "-1", "x"] {
            let e = c.set("disk_queue_depth", bad).unwrap_err();
            assert!(e.contains("1 to 4096"), "{e}");
        }
        assert!(c.set("swap_bandwidth", "0").is_ok());
        assert!(c.validate().unwrap_err().contains("swap_bandwidth"));
    }

    #[test]
    fn vma_readahead_is_a_switch_on_by_default() {
        let mut c = MachineConfig::default();
        assert!(c.swap_vma_ra);
        assert!(MachineConfig::key_is_switch("swap_vma_ra"));
        c.set("swap_vma_ra", "off").unwrap();
        assert!(!c.swap_vma_ra);
        c.set("swap_vma_ra", "on").unwrap();
        assert!(c.swap_vma_ra);
        assert!(c
            .set("swap_vma_ra", "maybe")
            .unwrap_err()
            .contains("swap_vma_ra"));
    }
}
