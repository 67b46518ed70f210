//! zswap as Linux 6.1 has it: mm/zswap.c as a frontswap backend, with the zbud allocator
//! (mm/zbud.c) and zsmalloc's size classes (mm/zsmalloc.c).
//!
//! - The module parameters (/sys/module/zswap/parameters): `enabled` (off, as Debian's 6.1
//!   builds it without CONFIG_ZSWAP_DEFAULT_ON), `compressor` (lzo), `zpool` (zbud),
//!   `max_pool_percent` (20), `accept_threshold_percent` (90), `same_filled_pages_enabled`
//!   and `non_same_filled_pages_enabled` (both on), parsed as the kernel's param_set_*()
//!   handlers parse them: an unknown compressor or zpool is ENOENT; switching either makes a
//!   new current pool, the old one living on until its last entry goes.
//! - zswap_frontswap_store(), its checks in order: disabled; the memcg's memory.zswap.max
//!   (obj_cgroup_may_zswap(), decided by the caller; 6.1.y refuses without shrinking); the
//!   pool limit (zswap_is_full(): pool pages above max_pool_percent of RAM; counts
//!   pool_limit_hit and queues the shrink work); after a full pool, no store until it is
//!   below accept_threshold_percent of the limit (zswap_can_accept()); a same-filled page is
//!   an entry of length 0; a compression whose output would pass a page fails, counted
//!   nowhere; the compressed page's allocation, which zbud refuses above 3968 bytes with
//!   its 8-byte header (reject_compress_poor). A store over an existing entry drops that
//!   entry first (__frontswap_store() invalidates it, so duplicate_entry stays 0).
//! - Loads keep the entry (exclusive loads came with 6.5); it goes when its swap slot is freed
//!   (zswap_frontswap_invalidate_page()).
//! - The shrink work (shrink_worker(), zbud_reclaim_page()), queued by a store that finds
//!   the pool full, takes the zbud page at the tail of the oldest pool's LRU and writes its
//!   one or two entries back to the swap device (zswap_writeback_entry(): a new swap-cache
//!   page, decompressed into, written with PG_reclaim), up to eight pages tried; zsmalloc
//!   has no reclaim in 6.1 (reject_reclaim_fail). One run frees at most one zbud page, and
//!   a pool just below its limit refuses stores by the accept threshold without queueing
//!   the work again: 6.1's pool limit writes back little.
//!
//! `Zswap` keeps the pools, entries and counters and does no I/O. The machine's side (the
//! `impl Machine` below) is the frontswap calls of mm/page_io.c and mm/swapfile.c: a store
//! from reclaim's swap_writepage(), loads from swap_readpage() before any device read,
//! invalidation when a slot is freed; the compressed length charged to the page's group
//! (obj_cgroup_charge_zswap(), forced: memory.current as kernel memory in whole pages,
//! `zswap` and `zswapped`), ZSWPOUT and ZSWPIN, and the frames the pool's pages take.
//!
//! What a page compresses to is its mapping's `--data` ([`PageData`]), written by the
//! workloads as the oracle's guest helper writes it, at the length Linux 6.1 compressed the
//! helper's pages to, per compressor; a tmpfs page written by write() (dd) holds zeros, a
//! same-filled page. A compression costs the compressor's published speed
//! (docs/FIDELITY.md).
//!
//! Simplified: a page's compressed length is its kind's, whatever else it holds; the CPU
//! time does not depend on the content; the shrink work runs once per queueing, at once,
//! beside the reclaimer whose store queued it, on no simulated CPU, and its swap-cache
//! pages are taken and charged without reclaim (6.1's kworker runs on another CPU, can be
//! queued again while it runs, and allocates with GFP_KERNEL); the compressed bytes are
//! rounded to pages per group apart from the obj_cgroup's slab remainder; zsmalloc's pages
//! are counted as if every class were compacted (whole zspages for its live objects).

use crate::errno::Errno;
use crate::memcontrol::MemcgId;
use crate::page_cgroup::pf;
use crate::stat::Stat;
use crate::swapfile::SwapSlot;

const PAGE: u64 = 4096;
/// zbud: 64 chunks of 64 bytes a page, the first the header's.
const CHUNK: u32 = 64;
const NCHUNKS: u32 = 63;
/// The largest zbud allocation: a page less the header chunk and one chunk.
const ZBUD_MAX: u32 = PAGE as u32 - 2 * CHUNK;
/// zswap's header before each zbud object (the swap entry, for writeback).
const ZSWAP_HEADER: u32 = 8;
/// zbud_reclaim_page()'s retries.
const ZBUD_RECLAIM_RETRIES: u32 = 8;
/// zsmalloc: the smallest class, the step between classes, the handle stored with an object.
const ZS_MIN: u32 = 32;
const ZS_DELTA: u32 = 16;
const ZS_HANDLE: u32 = 8;
const ZS_CLASSES: usize = 255;
const ZS_MAX_PAGES_PER_ZSPAGE: u32 = 4;

/// The compressors Debian's 6.1 can load (crypto_has_acomp(); it builds no 842).
pub const COMPRESSORS: &[&str] = &["lzo", "lzo-rle", "lz4", "lz4hc", "zstd", "deflate"];
/// The zpools Debian's 6.1 builds (zbud built in, zsmalloc a module; no z3fold).
pub const ZPOOLS: &[&str] = &["zbud", "zsmalloc"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZpoolKind {
    Zbud,
    Zsmalloc,
}

/// The module parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZswapParams {
    pub enabled: bool,
    pub compressor: String,
    pub zpool: String,
    pub max_pool_percent: u32,
    pub accept_threshold_percent: u32,
    pub same_filled_pages_enabled: bool,
    pub non_same_filled_pages_enabled: bool,
}

impl Default for ZswapParams {
    fn default() -> Self {
        ZswapParams {
            enabled: false,
            compressor: "lzo".into(),
            zpool: "zbud".into(),
            max_pool_percent: 20,
            accept_threshold_percent: 90,
            same_filled_pages_enabled: true,
            non_same_filled_pages_enabled: true,
        }
    }
}

/// The parameter files, in /sys/module/zswap/parameters.
pub const PARAMS: &[&str] = &[
    "enabled",
    "compressor",
    "zpool",
    "max_pool_percent",
    "accept_threshold_percent",
    "same_filled_pages_enabled",
    "non_same_filled_pages_enabled",
];

/// kstrtobool(): y, Y, 1, on / n, N, 0, off.
fn kstrtobool(s: &str) -> Result<bool, Errno> {
    let b = s.as_bytes();
    match b.first() {
        Some(b'y' | b'Y' | b'1') => Ok(true),
        Some(b'n' | b'N' | b'0') => Ok(false),
        Some(b'o' | b'O') => match b.get(1) {
            Some(b'n' | b'N') => Ok(true),
            Some(b'f' | b'F') => Ok(false),
            _ => Err(Errno::EINVAL),
        },
        _ => Err(Errno::EINVAL),
    }
}

/// kstrtouint() with base 0: decimal, 0x hexadecimal or 0 octal, a trailing newline allowed.
fn kstrtouint(s: &str) -> Result<u32, Errno> {
    let t = s.strip_suffix('\n').unwrap_or(s);
    let t = t.strip_prefix('+').unwrap_or(t);
    let (digits, radix) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        (&t[1..], 8)
    } else {
        (t, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(Errno::EINVAL);
    }
    u64::from_str_radix(digits, radix)
        .ok()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(Errno::ERANGE)
}

impl ZswapParams {
    /// A parameter's file as the kernel prints it.
    pub fn read(&self, name: &str) -> Option<String> {
        let yn = |b: bool| if b { "Y" } else { "N" }.to_string();
        Some(
            match name {
                "enabled" => yn(self.enabled),
                "compressor" => self.compressor.clone(),
                "zpool" => self.zpool.clone(),
                "max_pool_percent" => self.max_pool_percent.to_string(),
                "accept_threshold_percent" => self.accept_threshold_percent.to_string(),
                "same_filled_pages_enabled" => yn(self.same_filled_pages_enabled),
                "non_same_filled_pages_enabled" => yn(self.non_same_filled_pages_enabled),
                _ => return None,
            } + "\n",
        )
    }

    /// Write a parameter as its param_set handler takes it.
    pub fn write(&mut self, name: &str, value: &str) -> Result<(), Errno> {
        match name {
            "enabled" => self.enabled = kstrtobool(value)?,
            "same_filled_pages_enabled" => self.same_filled_pages_enabled = kstrtobool(value)?,
            "non_same_filled_pages_enabled" => {
                self.non_same_filled_pages_enabled = kstrtobool(value)?
            }
            "max_pool_percent" => self.max_pool_percent = kstrtouint(value)?,
            "accept_threshold_percent" => self.accept_threshold_percent = kstrtouint(value)?,
            "compressor" | "zpool" => {
                // __zswap_param_set(): the value stripped; an unknown one is ENOENT.
                let v = value.trim();
                let known = if name == "compressor" {
                    COMPRESSORS
                } else {
                    ZPOOLS
                };
                if !known.contains(&v) {
                    return Err(Errno::ENOENT);
                }
                if name == "compressor" {
                    self.compressor = v.to_string();
                } else {
                    self.zpool = v.to_string();
                }
            }
            _ => return Err(Errno::ENOENT),
        }
        Ok(())
    }
}

/// Why a store was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// zswap is off, or the page is huge.
    Disabled,
    /// The memcg (or an ancestor) is at its memory.zswap.max.
    Memcg,
    /// The pool is full, or not yet below the accept threshold since it was.
    PoolFull,
    /// Only same-filled pages are taken.
    NotSameFilled,
    /// The compression failed: its output would pass a page (6.1 counts nothing).
    CompressFail,
    /// The compressed page does not fit the allocator.
    CompressPoor,
    AllocFail,
}

/// The debugfs counters (/sys/kernel/debug/zswap).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZswapStats {
    pub pool_limit_hit: u64,
    pub reject_reclaim_fail: u64,
    pub reject_alloc_fail: u64,
    pub reject_kmemcache_fail: u64,
    pub reject_compress_poor: u64,
    pub written_back_pages: u64,
    pub duplicate_entry: u64,
    pub same_filled_pages: u64,
    pub stored_pages: u64,
    /// ZSWPOUT and ZSWPIN events.
    pub zswpout: u64,
    pub zswpin: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct ZbudPage {
    /// Chunks of the first and last buddy, 0 when free.
    first: u32,
    last: u32,
    /// Slots stored in them.
    first_slot: SwapSlot,
    last_slot: SwapSlot,
    live: bool,
    /// LRU position: larger is more recent.
    stamp: u64,
}

/// mm/zbud.c: two buddies a page, first fit by free chunks, pages on an LRU.
#[derive(Clone, Debug, Default)]
struct Zbud {
    pages: Vec<ZbudPage>,
    free_ids: Vec<u32>,
    /// Per number of free chunks, the pages with one buddy free (head last).
    unbuddied: Vec<Vec<u32>>,
    /// The LRU: stamp → page.
    lru: std::collections::BTreeMap<u64, u32>,
    clock: u64,
    pages_nr: u64,
}

impl Zbud {
    fn new() -> Zbud {
        Zbud {
            unbuddied: vec![Vec::new(); NCHUNKS as usize + 1],
            ..Zbud::default()
        }
    }

    fn free_chunks(p: &ZbudPage) -> u32 {
        NCHUNKS - p.first - p.last
    }

    fn touch(&mut self, id: u32) {
        let p = &mut self.pages[id as usize];
        if p.stamp != 0 {
            self.lru.remove(&p.stamp);
        }
        self.clock += 1;
        p.stamp = self.clock;
        self.lru.insert(self.clock, id);
    }

    fn unlist(&mut self, id: u32) {
        let free = Self::free_chunks(&self.pages[id as usize]) as usize;
        if let Some(i) = self.unbuddied[free].iter().position(|&x| x == id) {
            self.unbuddied[free].remove(i);
        }
    }

    fn relist(&mut self, id: u32) {
        let p = self.pages[id as usize];
        if p.first == 0 || p.last == 0 {
            self.unbuddied[Self::free_chunks(&p) as usize].push(id);
        }
    }

    /// zbud_alloc(): a handle (page, is-last) for `size` bytes, or ENOSPC.
    fn alloc(&mut self, size: u32, slot: SwapSlot) -> Result<(u32, bool), Errno> {
        if size == 0 || size > ZBUD_MAX {
            return Err(Errno::ENOSPC);
        }
        let chunks = size.div_ceil(CHUNK);
        let found =
            (chunks as usize..=NCHUNKS as usize).find_map(|i| self.unbuddied[i].last().copied());
        let id = match found {
            Some(id) => {
                self.unlist(id);
                id
            }
            None => {
                let p = ZbudPage {
                    live: true,
                    ..ZbudPage::default()
                };
                self.pages_nr += 1;
                match self.free_ids.pop() {
                    Some(id) => {
                        self.pages[id as usize] = p;
                        id
                    }
                    None => {
                        self.pages.push(p);
                        self.pages.len() as u32 - 1
                    }
                }
            }
        };
        let p = &mut self.pages[id as usize];
        let last = p.first != 0;
        if last {
            p.last = chunks;
            p.last_slot = slot;
        } else {
            p.first = chunks;
            p.first_slot = slot;
        }
        self.relist(id);
        self.touch(id);
        Ok((id, last))
    }

    /// zbud_free(): a buddy freed; the page with it once both are.
    fn free(&mut self, id: u32, last: bool) {
        self.unlist(id);
        let p = &mut self.pages[id as usize];
        if last {
            p.last = 0;
        } else {
            p.first = 0;
        }
        if p.first == 0 && p.last == 0 {
            let stamp = p.stamp;
            *p = ZbudPage::default();
            self.lru.remove(&stamp);
            self.free_ids.push(id);
            self.pages_nr -= 1;
        } else {
            self.relist(id);
        }
    }
}

/// One class of zsmalloc: its size, pages per zspage, objects per zspage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZsClass {
    pub size: u32,
    pub pages: u32,
    pub objs: u32,
}

/// get_pages_per_zspage(): the zspage length (1 to 4 pages) that wastes least.
fn pages_per_zspage(size: u32) -> u32 {
    let mut best = (0u64, 1u32);
    for k in 1..=ZS_MAX_PAGES_PER_ZSPAGE {
        let len = k as u64 * PAGE;
        let used = (len - len % size as u64) * 100 / len;
        if used > best.0 {
            best = (used, k);
        }
    }
    best.1
}

/// The size class table: per class index, the class an object of that index lands in
/// (classes with the same zspage shape as a larger one merged into it).
pub fn zs_classes() -> Vec<ZsClass> {
    let mut out = vec![
        ZsClass {
            size: 0,
            pages: 0,
            objs: 0
        };
        ZS_CLASSES
    ];
    let mut prev: Option<ZsClass> = None;
    for i in (0..ZS_CLASSES).rev() {
        let size = (ZS_MIN + ZS_DELTA * i as u32).min(PAGE as u32);
        let pages = pages_per_zspage(size);
        let objs = pages * PAGE as u32 / size;
        let c = match prev {
            Some(p) if p.pages == pages && p.objs == objs => p,
            _ => ZsClass { size, pages, objs },
        };
        out[i] = c;
        prev = Some(c);
    }
    out
}

fn zs_index(size: u32) -> usize {
    if size <= ZS_MIN {
        0
    } else {
        (((size - ZS_MIN).div_ceil(ZS_DELTA)) as usize).min(ZS_CLASSES - 1)
    }
}

/// mm/zsmalloc.c, counted: live objects per class.
#[derive(Clone, Debug)]
struct Zsmalloc {
    classes: Vec<ZsClass>,
    live: Vec<u64>,
}

impl Zsmalloc {
    fn new() -> Zsmalloc {
        Zsmalloc {
            classes: zs_classes(),
            live: vec![0; ZS_CLASSES],
        }
    }

    /// zs_malloc(): the class index, or EINVAL above a page.
    fn alloc(&mut self, size: u32) -> Result<usize, Errno> {
        if size == 0 || size as u64 > PAGE {
            return Err(Errno::EINVAL);
        }
        // Merged classes share the largest member's index for counting.
        let c = self.classes[zs_index(size + ZS_HANDLE)];
        let idx = zs_index(c.size);
        self.live[idx] += 1;
        Ok(idx)
    }

    fn free(&mut self, idx: usize) {
        self.live[idx] -= 1;
    }

    fn pages(&self) -> u64 {
        self.live
            .iter()
            .zip(&self.classes)
            .map(|(&n, c)| n.div_ceil(c.objs as u64) * c.pages as u64)
            .sum()
    }
}

#[derive(Clone, Debug)]
enum Alloc {
    Zbud(Zbud),
    Zsmalloc(Zsmalloc),
}

/// A pool: its zpool and compressor, and whether entries still use it.
#[derive(Clone, Debug)]
struct Pool {
    zpool: String,
    compressor: String,
    alloc: Alloc,
    entries: u64,
    /// When it went to the head of zswap_pools (made, or made current again): the pool
    /// listed longest ago is the one zswap_pool_last_get() gives the shrink work.
    listed: u64,
}

impl Pool {
    fn pages(&self) -> u64 {
        match &self.alloc {
            Alloc::Zbud(z) => z.pages_nr,
            Alloc::Zsmalloc(z) => z.pages(),
        }
    }
}

/// A stored page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub memcg: MemcgId,
    /// Compressed length; 0 for a same-filled page.
    pub length: u32,
    pool: u32,
    /// zbud: page and is-last; zsmalloc: class index in `page`.
    page: u32,
    last: bool,
}

/// A zbud page (its id) and the slots of its first and last buddies.
type ZbudTail = (u32, [Option<SwapSlot>; 2]);

/// zswap: its parameters, pools, entries by swap slot and counters.
#[derive(Clone, Debug)]
pub struct Zswap {
    pub params: ZswapParams,
    pools: Vec<Option<Pool>>,
    /// The current pool (zswap_pool_current()).
    current: Option<u32>,
    entries: std::collections::HashMap<SwapSlot, Entry>,
    reached_full: bool,
    /// The shrink work queued and not yet run.
    pub shrink_pending: bool,
    /// Pools listed so far (for their `listed` order).
    listings: u64,
    pub stats: ZswapStats,
}

impl Default for Zswap {
    fn default() -> Self {
        Zswap::new(ZswapParams::default())
    }
}

impl Zswap {
    pub fn new(params: ZswapParams) -> Zswap {
        Zswap {
            params,
            pools: Vec::new(),
            current: None,
            entries: Default::default(),
            reached_full: false,
            shrink_pending: false,
            listings: 0,
            stats: ZswapStats::default(),
        }
    }

    /// Write a parameter; a new compressor or zpool makes (or reuses) the current pool.
    pub fn write_param(&mut self, name: &str, value: &str) -> Result<(), Errno> {
        self.params.write(name, value)
    }

    /// The current pool for the parameters, created on first use.
    fn current_pool(&mut self) -> u32 {
        let (zp, comp) = (self.params.zpool.clone(), self.params.compressor.clone());
        if let Some(c) = self.current {
            if let Some(p) = &self.pools[c as usize] {
                if p.zpool == zp && p.compressor == comp {
                    return c;
                }
            }
        }
        // zswap_pool_find_get(): an existing pool of that kind is reused, and goes to the
        // head of the list again.
        self.listings += 1;
        let listed = self.listings;
        let found = self.pools.iter().position(|p| {
            p.as_ref()
                .is_some_and(|p| p.zpool == zp && p.compressor == comp)
        });
        let id = match found {
            Some(i) => {
                if let Some(p) = self.pools[i].as_mut() {
                    p.listed = listed;
                }
                i as u32
            }
            None => {
                let pool = Pool {
                    alloc: if zp == "zbud" {
                        Alloc::Zbud(Zbud::new())
                    } else {
                        Alloc::Zsmalloc(Zsmalloc::new())
                    },
                    zpool: zp,
                    compressor: comp,
                    entries: 0,
                    listed,
                };
                match self.pools.iter().position(Option::is_none) {
                    Some(i) => {
                        self.pools[i] = Some(pool);
                        i as u32
                    }
                    None => {
                        self.pools.push(Some(pool));
                        self.pools.len() as u32 - 1
                    }
                }
            }
        };
        let old = self.current.replace(id);
        if let Some(o) = old.filter(|&o| o != id) {
            self.drop_if_empty(o);
        }
        id
    }

    fn drop_if_empty(&mut self, id: u32) {
        if self.current != Some(id)
            && self.pools[id as usize]
                .as_ref()
                .is_some_and(|p| p.entries == 0)
        {
            self.pools[id as usize] = None;
        }
    }

    /// The zpool kind of the current parameters.
    pub fn zpool_kind(&self) -> ZpoolKind {
        if self.params.zpool == "zbud" {
            ZpoolKind::Zbud
        } else {
            ZpoolKind::Zsmalloc
        }
    }

    /// zswap_pool_total_size in pages: every pool's.
    pub fn pool_pages(&self) -> u64 {
        self.pools.iter().flatten().map(Pool::pages).sum()
    }

    /// Pages stored (zswap_stored_pages), same-filled ones included.
    pub fn stored_pages(&self) -> u64 {
        self.entries.len() as u64
    }

    fn is_full(&self, totalram: u64) -> bool {
        totalram * self.params.max_pool_percent as u64 / 100 < self.pool_pages()
    }

    fn can_accept(&self, totalram: u64) -> bool {
        totalram * self.params.accept_threshold_percent as u64 / 100
            * self.params.max_pool_percent as u64
            / 100
            > self.pool_pages()
    }

    /// zswap_frontswap_store() for the page going to `slot`: `dlen` its compressed length
    /// (None: same-filled), `may_zswap` the memcg's verdict. Ok: the entry's length, which
    /// the caller charges to `memcg`; any entry the slot had is dropped and returned for
    /// uncharging.
    pub fn store(
        &mut self,
        slot: SwapSlot,
        memcg: MemcgId,
        may_zswap: bool,
        dlen: Option<u32>,
        totalram: u64,
    ) -> (Result<u32, Reject>, Option<Entry>) {
        // __frontswap_store(): a stale entry of the slot goes first.
        let dropped = self.invalidate(slot);
        if !self.params.enabled {
            return (Err(Reject::Disabled), dropped);
        }
        if !may_zswap {
            return (Err(Reject::Memcg), dropped);
        }
        if self.is_full(totalram) {
            self.stats.pool_limit_hit += 1;
            self.reached_full = true;
            self.shrink_pending = true;
            return (Err(Reject::PoolFull), dropped);
        }
        if self.reached_full {
            if !self.can_accept(totalram) {
                return (Err(Reject::PoolFull), dropped);
            }
            self.reached_full = false;
        }
        let pool = self.current_pool();
        let mut entry = Entry {
            memcg,
            length: 0,
            pool,
            page: 0,
            last: false,
        };
        match dlen {
            None if self.params.same_filled_pages_enabled => {
                self.stats.same_filled_pages += 1;
            }
            _ if !self.params.non_same_filled_pages_enabled => {
                return (Err(Reject::NotSameFilled), dropped);
            }
            d => {
                // A same-filled page with same_filled_pages_enabled off is compressed as any.
                let dlen = d.unwrap_or(ZS_MIN).max(1);
                if dlen > PAGE as u32 {
                    return (Err(Reject::CompressFail), dropped);
                }
                let p = self.pools[pool as usize].as_mut().expect("current pool");
                let r = match &mut p.alloc {
                    Alloc::Zbud(z) => z.alloc(dlen + ZSWAP_HEADER, slot).map(|(id, last)| {
                        entry.page = id;
                        entry.last = last;
                    }),
                    Alloc::Zsmalloc(z) => z.alloc(dlen).map(|idx| entry.page = idx as u32),
                };
                match r {
                    Ok(()) => entry.length = dlen,
                    Err(Errno::ENOSPC) => {
                        self.stats.reject_compress_poor += 1;
                        return (Err(Reject::CompressPoor), dropped);
                    }
                    Err(_) => {
                        self.stats.reject_alloc_fail += 1;
                        return (Err(Reject::AllocFail), dropped);
                    }
                }
            }
        }
        if let Some(p) = self.pools[pool as usize].as_mut() {
            p.entries += 1;
        }
        self.entries.insert(slot, entry);
        self.stats.zswpout += 1;
        (Ok(entry.length), dropped)
    }

    /// zswap_frontswap_load(): whether the slot's page is in zswap (the entry stays).
    pub fn load(&mut self, slot: SwapSlot) -> Option<Entry> {
        let e = self.entries.get(&slot).copied()?;
        self.stats.zswpin += 1;
        Some(e)
    }

    /// The slot's entry, if any (nothing to look up while zswap holds nothing: the swap
    /// paths ask on every swap-in and slot release).
    pub fn entry(&self, slot: SwapSlot) -> Option<Entry> {
        if self.entries.is_empty() {
            return None;
        }
        self.entries.get(&slot).copied()
    }

    /// zswap_frontswap_invalidate_page(): the slot is freed; its entry goes, and is
    /// returned for the caller to uncharge.
    pub fn invalidate(&mut self, slot: SwapSlot) -> Option<Entry> {
        if self.entries.is_empty() {
            return None;
        }
        let e = self.entries.remove(&slot)?;
        if e.length == 0 {
            self.stats.same_filled_pages -= 1;
        }
        let p = self.pools[e.pool as usize].as_mut().expect("entry's pool");
        if e.length > 0 {
            match &mut p.alloc {
                Alloc::Zbud(z) => z.free(e.page, e.last),
                Alloc::Zsmalloc(z) => z.free(e.page as usize),
            }
        }
        p.entries -= 1;
        self.drop_if_empty(e.pool);
        Some(e)
    }

    /// The compressor of pool `pool` (an entry's).
    fn pool_compressor(&self, pool: u32) -> &str {
        self.pools[pool as usize]
            .as_ref()
            .map_or("lzo", |p| p.compressor.as_str())
    }

    /// zswap_pool_last_get(): the pool listed longest ago.
    fn oldest_pool(&self) -> Option<usize> {
        (0..self.pools.len())
            .filter(|&i| self.pools[i].is_some())
            .min_by_key(|&i| self.pools[i].as_ref().map_or(u64::MAX, |p| p.listed))
    }

    /// The zbud page at the tail of `pool`'s LRU and the slots of its buddies; Err when
    /// the pool is not zbud's (zsmalloc has no reclaim in 6.1).
    fn zbud_lru_tail(&self, pool: usize) -> Result<Option<ZbudTail>, ()> {
        let Some(Pool {
            alloc: Alloc::Zbud(z),
            ..
        }) = &self.pools[pool]
        else {
            return Err(());
        };
        Ok(z.lru.values().next().map(|&id| {
            let p = z.pages[id as usize];
            let slot = |chunks: u32, slot| (chunks != 0).then_some(slot);
            (id, [slot(p.first, p.first_slot), slot(p.last, p.last_slot)])
        }))
    }

    /// A zbud page that reclaim could not empty goes back to its LRU's head.
    fn zbud_lru_putback(&mut self, pool: usize, id: u32) {
        if let Some(Pool {
            alloc: Alloc::Zbud(z),
            ..
        }) = &mut self.pools[pool]
        {
            if z.pages[id as usize].live {
                z.touch(id);
            }
        }
    }

    /// The slot's entry now belongs to `memcg` (a reparented obj_cgroup).
    pub fn set_memcg(&mut self, slot: SwapSlot, memcg: MemcgId) {
        if let Some(e) = self.entries.get_mut(&slot) {
            e.memcg = memcg;
        }
    }

    /// Every entry, by slot (for the invariant checker).
    pub fn entries(&self) -> impl Iterator<Item = (SwapSlot, Entry)> + '_ {
        self.entries.iter().map(|(&s, &e)| (s, e))
    }
}

/// shrink_worker(): zbud_reclaim_page() on the oldest pool, which takes the zbud page at
/// its LRU's tail and writes each of its entries back to the swap device, trying up to
/// eight pages. `cx` holds zswap (`zs` reaches it) and does the writing: `writeback` is
/// zswap_writeback_entry()'s page, false when the slot's page is in the swap cache already
/// (EEXIST) or no memory was to be had (ENOMEM). Each entry written back is freed and
/// returned for the caller to uncharge. Err: nothing freed (reject_reclaim_fail counted).
pub fn shrink_worker<C>(
    cx: &mut C,
    zs: fn(&mut C) -> &mut Zswap,
    mut writeback: impl FnMut(&mut C, SwapSlot) -> bool,
) -> Result<Vec<Entry>, Errno> {
    zs(cx).shrink_pending = false;
    let Some(pool) = zs(cx).oldest_pool() else {
        zs(cx).stats.reject_reclaim_fail += 1;
        return Err(Errno::EINVAL);
    };
    let mut freed = Vec::new();
    for _ in 0..ZBUD_RECLAIM_RETRIES {
        let (id, slots) = match zs(cx).zbud_lru_tail(pool) {
            Err(()) => {
                zs(cx).stats.reject_reclaim_fail += 1;
                return Err(Errno::EINVAL);
            }
            Ok(None) => break,
            Ok(Some(tail)) => tail,
        };
        let mut done = true;
        for slot in slots.into_iter().flatten() {
            if !writeback(cx, slot) {
                done = false;
                continue;
            }
            // An entry invalidated meanwhile (its slot freed) counts as written.
            let z = zs(cx);
            if let Some(e) = z.invalidate(slot) {
                z.stats.written_back_pages += 1;
                freed.push(e);
            }
        }
        if done {
            return Ok(freed);
        }
        zs(cx).zbud_lru_putback(pool, id);
    }
    zs(cx).stats.reject_reclaim_fail += 1;
    if freed.is_empty() {
        Err(Errno::EAGAIN)
    } else {
        Ok(freed)
    }
}

// ------------------------------------------------------------------ the machine's side

/// What a page holds, as zswap's compressor sees it: the workloads' `--data`, written as
/// the oracle's guest helper writes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PageData {
    /// One byte (the pass number) at the page's start, the rest zeros: what every workload
    /// writes unless told otherwise.
    #[default]
    Byte,
    /// Zeros: a same-filled page, stored without compression.
    Zero,
    /// Words of a 32-word vocabulary and spaces, a line break now and then.
    Text,
    /// Random bytes: nothing to compress.
    Random,
    /// `ratio=R`: random bytes over the page's first 4096/R bytes (rounded up), zeros after.
    Ratio { random: u16 },
}

impl PageData {
    /// The forms of `--data`.
    pub const USAGE: &'static str = "byte|zero|text|random|ratio=R";

    /// Parse a `--data` value: `byte`, `zero`, `text`, `random`, or `ratio=R` for a ratio
    /// R from 1 to 4096.
    pub fn parse(s: &str) -> Result<PageData, String> {
        Ok(match s {
            "byte" => PageData::Byte,
            "zero" => PageData::Zero,
            "text" => PageData::Text,
            "random" => PageData::Random,
            _ => {
                let r = s
                    .strip_prefix("ratio=")
                    .and_then(|r| r.parse::<f64>().ok())
                    .filter(|r| (1.0..=4096.0).contains(r))
                    .ok_or_else(|| {
                        format!("bad --data '{s}' ({}; R from 1 to 4096)", Self::USAGE)
                    })?;
                PageData::Ratio {
                    random: (PAGE as f64 / r).ceil() as u16,
                }
            }
        })
    }
}

/// The compressed length of a page of `data` with `compressor`, as Linux 6.1's crypto
/// compressors give it for the guest helper's pages (memory.stat `zswap` per stored page);
/// None for a same-filled page. A length above a page is a compression that failed: 6.1
/// asks for at most a page of output (acomp_request_set_params()'s dlen) and rejects the
/// page without counting it.
pub fn page_dlen(data: PageData, compressor: &str) -> Option<u32> {
    let c = compressor_index(compressor);
    let random = |n: u32| (n * RANDOM_PER_KIB[c]).div_ceil(1024) + RANDOM_BASE[c];
    match data {
        PageData::Zero => None,
        PageData::Byte => Some(BYTE_DLEN[c]),
        PageData::Text => Some(TEXT_DLEN[c]),
        PageData::Random => Some(random(PAGE as u32)),
        PageData::Ratio { random: n } => Some(random(n as u32)),
    }
}

/// The compressors' rows of the tables below, in [`COMPRESSORS`]' order.
fn compressor_index(compressor: &str) -> usize {
    COMPRESSORS
        .iter()
        .position(|&c| c == compressor)
        .unwrap_or(0)
}

// Measured on Linux 6.1 (tests/swap/zswap_data.mcg: memory.stat `zswap` over `zswpout`, a
// thousand pages each), for lzo, lzo-rle, lz4, lz4hc, zstd and deflate.
/// A `--data byte` page's compressed length.
const BYTE_DLEN: [u32; 6] = [44, 41, 27, 27, 19, 21];
/// A `--data text` page's, on average.
const TEXT_DLEN: [u32; 6] = [1878, 1881, 2371, 1953, 1372, 1294];
/// `n` random bytes and zeros after them (`--data ratio=R`) compress to about
/// n × RANDOM_PER_KIB / 1024 + RANDOM_BASE bytes (the least-squares line through n = 512,
/// 1024 and 2048, within 12 bytes of each).
const RANDOM_PER_KIB: [u32; 6] = [1095, 1066, 1026, 1023, 1027, 1027];
const RANDOM_BASE: [u32; 6] = [18, 12, 28, 26, 18, 58];
/// The compressors' published speeds (lzbench 1.7.1, one core of a Core i5-4300U, the
/// Silesia corpus; MB/s), compressing and decompressing: lzo1x 2.09 -1 (lzo-rle taken as
/// lzo), lz4 1.7.5, lz4hc 1.7.5 -9 (the kernel's default level), zstd 1.1.4 -2 (the
/// published level nearest the kernel's 3), zlib 1.2.11 -6 (the kernel's deflate level).
const SPEED_MBPS: [(u64, u64); 6] = [
    (394, 551),
    (394, 551),
    (452, 2244),
    (23, 2253),
    (185, 587),
    (20, 267),
];

impl crate::machine::Machine {
    /// obj_cgroup_may_zswap(): no group from the page's up to the root (excluded) is at its
    /// memory.zswap.max (0 refuses; its pages are its zswap bytes rounded down). Always
    /// true on cgroup v1.
    fn obj_cgroup_may_zswap(&self, memcg: MemcgId) -> bool {
        if self.is_v1() {
            return true;
        }
        let mut cur = Some(memcg);
        while let Some(m) = cur.filter(|&m| m != crate::memcontrol::ROOT_MEMCG) {
            let mc = self.memcg(m);
            let max = mc.zswap_max;
            if max == 0 {
                return false;
            }
            if max != crate::page_counter::PAGE_COUNTER_MAX {
                let pages = self.stat_total(m, Stat::ZswapB) / crate::PAGE_SIZE;
                if pages >= max {
                    return false;
                }
            }
            cur = mc.parent;
        }
        true
    }

    /// obj_cgroup_charge_zswap() (`n` = 1) and obj_cgroup_uncharge_zswap() (`n` = -1):
    /// the compressed bytes, forced onto memory.current as kernel memory in whole pages, and
    /// MEMCG_ZSWAP_B and MEMCG_ZSWAPPED. The root group is not charged.
    fn zswap_charge(&mut self, memcg: MemcgId, bytes: u64, n: i64) {
        if memcg == crate::memcontrol::ROOT_MEMCG {
            return;
        }
        self.mod_stat(memcg, Stat::ZswapB, n * bytes as i64);
        self.mod_stat(memcg, Stat::Zswapped, n);
        let local = self.memcg(memcg).stats.local[Stat::ZswapB as usize].max(0) as u64;
        let want = local.div_ceil(crate::PAGE_SIZE);
        let had = self.memcg(memcg).zswap_pages;
        if want > had {
            self.memory.charge(memcg as usize, want - had);
            if self.is_v1() {
                self.memsw.charge(memcg as usize, want - had);
            }
        } else if had > want {
            self.memory.uncharge(memcg as usize, had - want);
            if self.is_v1() {
                self.memsw.uncharge(memcg as usize, had - want);
            }
        }
        self.memcg_mut(memcg).zswap_pages = want;
        self.memcg_account_kmem(memcg, want as i64 - had as i64);
    }

    /// Give the pool the frames its pages need now (from the free lists above the min
    /// watermark, without reclaim, as zbud's allocation in reclaim) or back those it no
    /// longer needs. False: no frame was to be had.
    fn zswap_fit_frames(&mut self) -> bool {
        let want = self.zswap.pool_pages() as usize;
        while self.zswap_frames.len() > want {
            let pfn = self.zswap_frames.pop().expect("a pool frame");
            self.free_frame(pfn);
        }
        while self.zswap_frames.len() < want {
            // zpool_malloc()'s __GFP_NORETRY | __GFP_KSWAPD_RECLAIM: the free lists down to
            // the min watermark, no direct reclaim.
            let got = self.get_page_from_freelist(
                crate::mmzone::Wmark::Min,
                0,
                crate::buddy::MigrateType::Unmovable,
            );
            match got {
                Some(pfn) => {
                    self.frames.meta[pfn as usize].pc.flags |= crate::page_cgroup::pf::KERNEL;
                    self.zswap_frames.push(pfn);
                }
                None => return false,
            }
        }
        true
    }

    /// swap_writepage()'s frontswap_store() of a page of `memcg` holding `data`, going to
    /// `slot`: true when zswap took it (the write then starts and ends at once, with no I/O
    /// and no PSWPOUT), after the compressor's CPU time.
    pub(crate) fn zswap_store(&mut self, slot: SwapSlot, memcg: MemcgId, data: PageData) -> bool {
        if !self.zswap.params.enabled {
            return false;
        }
        let may = self.obj_cgroup_may_zswap(memcg);
        // zswap_is_page_same_filled() for a zero page; else the compressor's length.
        let dlen = page_dlen(data, &self.zswap.params.compressor);
        let totalram = self.totalram_pages;
        let (r, dropped) = self.zswap.store(slot, memcg, may, dlen, totalram);
        if self.zswap.shrink_pending {
            // queue_work(shrink_wq): a kworker on another CPU runs it at once.
            self.zswap_shrink_work();
        }
        if let Some(e) = dropped {
            self.zswap_charge(e.memcg, e.length as u64, -1);
        }
        let compressed = match r {
            Ok(_) => dlen.is_some(),
            Err(e) => matches!(
                e,
                Reject::CompressFail | Reject::CompressPoor | Reject::AllocFail
            ),
        };
        if compressed {
            let c = compressor_index(&self.zswap.params.compressor);
            self.spend_cpu(self.cfg.costs.zswap_compress_ns * SPEED_MBPS[0].0 / SPEED_MBPS[c].0);
        }
        let Ok(len) = r else {
            return false;
        };
        if !self.zswap_fit_frames() {
            // zpool_malloc() found no page: reject_alloc_fail.
            self.zswap.invalidate(slot);
            self.zswap.stats.zswpout -= 1;
            self.zswap.stats.reject_alloc_fail += 1;
            self.zswap_fit_frames();
            return false;
        }
        self.zswap_charge(memcg, len as u64, 1);
        self.mod_stat(memcg, Stat::Zswpout, 1);
        // The device's copy, if any, is stale now.
        self.swap.set_written(slot, false);
        true
    }

    /// shrink_worker() on its kworker: the oldest pool's zbud_reclaim_page(), run as soon
    /// as a store queues it, beside the reclaimer (in a context of its own, whose time is
    /// not counted, and with allocations that do not reclaim).
    fn zswap_shrink_work(&mut self) {
        let worker = crate::sched::ExecCtx::new(None, self.current_cpu() as u32, self.sched.clock);
        let reclaimer = self.cur.replace(worker);
        let r = shrink_worker(self, |m| &mut m.zswap, Self::zswap_writeback_entry);
        if let Ok(freed) = r {
            for e in freed {
                self.zswap_charge(e.memcg, e.length as u64, -1);
            }
            self.zswap_fit_frames();
        }
        self.cur = reclaimer;
    }

    /// zswap_writeback_entry() of `slot`'s entry: a new swap-cache page for it
    /// (__read_swap_cache_async(), charged to the entry's group and a refault if the slot's
    /// shadow says so), filled by decompression, and written to the swap device by
    /// __swap_writepage() with PG_reclaim, so that the write's end puts it at the tail of
    /// its inactive list. False: the slot's page is in the swap cache already (EEXIST), or
    /// no page or charge was to be had without reclaim (ENOMEM). True too when the entry
    /// went meanwhile.
    fn zswap_writeback_entry(&mut self, slot: SwapSlot) -> bool {
        if self.zswap.entry(slot).is_none() {
            return true;
        }
        if self.swap.cached(slot).is_some() {
            return false;
        }
        let memcg = self.swapin_memcg(slot, crate::memcontrol::ROOT_MEMCG);
        let Some(pfn) = self.get_page_from_freelist(
            crate::mmzone::Wmark::Min,
            0,
            crate::buddy::MigrateType::Movable,
        ) else {
            return false;
        };
        if !self.charge_without_reclaim(memcg) {
            self.free_frame(pfn);
            return false;
        }
        self.add_swap_cache_page(pfn, memcg, slot);
        self.spend_cpu(self.zswap_decompress_cost(slot));
        self.frames.set(pfn, pf::RECLAIM);
        self.swap_start_writeback(pfn);
        self.mod_stat(memcg, Stat::Pswpout, 1);
        self.swap.set_written(slot, true);
        if self.swap_synchronous_io() {
            let pos = crate::blkdev::swap_pos(slot);
            let ns = self
                .swap_dev()
                .cpu_copy(&crate::blkdev::page_runs(vec![pos]), true);
            self.spend_cpu(ns);
            self.swap_end_writeback(pfn);
            self.frames.clear(pfn, pf::RECLAIM);
            self.lru_rotate_to_tail(pfn);
        } else {
            self.swap_submit(vec![(pfn, slot)]);
        }
        true
    }

    /// A page's charge to `memcg` within its limits, without reclaim (the model's stand-in
    /// for the kworker's GFP_KERNEL charge, which could reclaim).
    fn charge_without_reclaim(&mut self, memcg: MemcgId) -> bool {
        if memcg == crate::memcontrol::ROOT_MEMCG {
            return true;
        }
        if self.is_v1() && self.memsw.try_charge(memcg as usize, 1).is_err() {
            return false;
        }
        if self.memory.try_charge(memcg as usize, 1).is_err() {
            if self.is_v1() {
                self.memsw.uncharge(memcg as usize, 1);
            }
            return false;
        }
        true
    }

    /// The CPU time of decompressing the page zswap holds for `slot` with its pool's
    /// compressor (none for a same-filled page, which is a memset).
    pub(crate) fn zswap_decompress_cost(&self, slot: SwapSlot) -> u64 {
        match self.zswap.entry(slot) {
            Some(e) if e.length > 0 => {
                let c = compressor_index(self.zswap.pool_compressor(e.pool));
                self.cfg.costs.zswap_decompress_ns * SPEED_MBPS[0].1 / SPEED_MBPS[c].1
            }
            _ => 0,
        }
    }

    /// frontswap_load() of a slot zswap holds, for a page of `memcg`: ZSWPIN (the entry
    /// stays; the caller spends the decompression).
    pub(crate) fn zswap_count_load(&mut self, slot: SwapSlot, memcg: MemcgId) {
        if self.zswap.load(slot).is_some() {
            self.mod_stat(memcg, Stat::Zswpin, 1);
        }
    }

    /// zswap_frontswap_invalidate_page() when a slot is freed: its entry goes, uncharged.
    pub(crate) fn zswap_invalidate(&mut self, slot: SwapSlot) {
        if let Some(e) = self.zswap.invalidate(slot) {
            self.zswap_charge(e.memcg, e.length as u64, -1);
            self.zswap_fit_frames();
        }
    }

    /// At a group's offline its obj_cgroup moves to the parent (memcg_reparent_objcgs()):
    /// so do its zswap entries, their bytes and their charge.
    pub(crate) fn zswap_memcg_offline(&mut self, memcg: MemcgId, parent: MemcgId) {
        let moved: Vec<(SwapSlot, u32)> = self
            .zswap
            .entries()
            .filter(|(_, e)| e.memcg == memcg)
            .map(|(s, e)| (s, e.length))
            .collect();
        for (slot, len) in moved {
            self.zswap_charge(memcg, len as u64, -1);
            self.zswap.set_memcg(slot, parent);
            self.zswap_charge(parent, len as u64, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_cgroup::Pfn;

    const RAM: u64 = 262_144; // 1 GiB

    fn on() -> Zswap {
        let mut z = Zswap::default();
        z.write_param("enabled", "1\n").unwrap();
        z
    }

    #[test]
    fn parameters_parse_as_the_kernels_handlers_do() {
        let mut p = ZswapParams::default();
        assert_eq!(p.read("enabled").unwrap(), "N\n");
        assert_eq!(p.read("compressor").unwrap(), "lzo\n");
        assert_eq!(p.read("zpool").unwrap(), "zbud\n");
        for (v, want) in [("Y", true), ("off", false), ("on\n", true), ("0", false)] {
            p.write("enabled", v).unwrap();
            assert_eq!(p.enabled, want, "{v}");
        }
        assert_eq!(p.write("enabled", "maybe"), Err(Errno::EINVAL));
        assert_eq!(p.write("compressor", "zstd\n"), Ok(()));
        assert_eq!(p.read("compressor").unwrap(), "zstd\n");
        assert_eq!(p.write("compressor", "brotli"), Err(Errno::ENOENT));
        assert_eq!(p.write("zpool", "z3fold"), Err(Errno::ENOENT));
        assert_eq!(p.write("max_pool_percent", "0x20"), Ok(()));
        assert_eq!(p.max_pool_percent, 32);
        assert_eq!(p.write("max_pool_percent", "-1"), Err(Errno::EINVAL));
        assert_eq!(
            p.write("max_pool_percent", "4294967296"),
            Err(Errno::ERANGE)
        );
        // No range check: 6.1 takes any unsigned value.
        assert_eq!(p.write("accept_threshold_percent", "150"), Ok(()));
    }

    #[test]
    fn zbud_pairs_two_objects_a_page_and_refuses_poor_compression() {
        let mut z = on();
        // 2000 + 8 bytes: 32 chunks; two fit a page (63 chunks)? 32 + 32 > 63: no.
        for s in 0..2 {
            assert_eq!(z.store(s, 1, true, Some(2000), RAM).0, Ok(2000));
        }
        assert_eq!(z.pool_pages(), 2);
        // 1500 + 8: 24 chunks, fits beside a 32-chunk buddy (31 free).
        assert_eq!(z.store(2, 1, true, Some(1500), RAM).0, Ok(1500));
        assert_eq!(z.pool_pages(), 2);
        assert_eq!(
            z.store(3, 1, true, Some(3961), RAM).0,
            Err(Reject::CompressPoor)
        );
        assert_eq!(z.stats.reject_compress_poor, 1);
        assert_eq!(z.store(3, 1, true, Some(3960), RAM).0, Ok(3960));
        assert_eq!(z.pool_pages(), 3);
        // A same-filled page takes no pool space.
        assert_eq!(z.store(4, 1, true, None, RAM).0, Ok(0));
        assert_eq!(z.stats.same_filled_pages, 1);
        assert_eq!((z.stored_pages(), z.pool_pages()), (5, 3));
        assert!(z.load(2).is_some());
        assert_eq!(z.stored_pages(), 5, "a load keeps the entry");
        for s in 0..5 {
            assert!(z.invalidate(s).is_some());
        }
        assert_eq!((z.stored_pages(), z.pool_pages()), (0, 0));
        assert_eq!(z.stats.same_filled_pages, 0);
    }

    #[test]
    fn a_full_pool_refuses_until_below_the_accept_threshold() {
        let mut z = on();
        // 1000 pages of RAM: the limit is 200 pool pages; accept again below 180.
        let ram = 1000;
        let mut slot = 0;
        while z.store(slot, 1, true, Some(3000), ram).0.is_ok() {
            slot += 1;
        }
        assert_eq!(z.pool_pages(), 201);
        assert_eq!(z.stats.pool_limit_hit, 1);
        assert!(z.shrink_pending);
        for s in 0..10 {
            z.invalidate(s);
        }
        assert_eq!(z.pool_pages(), 191);
        assert_eq!(
            z.store(1000, 1, true, Some(100), ram).0,
            Err(Reject::PoolFull)
        );
        assert_eq!(
            z.stats.pool_limit_hit, 1,
            "no hit counted between the marks"
        );
        for s in 10..22 {
            z.invalidate(s);
        }
        assert_eq!(z.store(1000, 1, true, Some(100), ram).0, Ok(100));
        assert_eq!(
            z.store(1001, 1, false, Some(100), ram).0,
            Err(Reject::Memcg)
        );
    }

    #[test]
    fn the_shrink_writes_back_the_oldest_zbud_page() {
        let mut z = on();
        for s in 0..4 {
            z.store(s, 1, true, Some(1800), RAM);
        }
        assert_eq!(z.pool_pages(), 2);
        let freed = shrink_worker(&mut z, |z| z, |_, _| true).unwrap();
        let slots: Vec<u32> = freed.iter().map(|e| e.length).collect();
        assert_eq!(slots, [1800, 1800]);
        assert!(z.entry(0).is_none() && z.entry(1).is_none() && z.entry(2).is_some());
        assert_eq!((z.pool_pages(), z.stats.written_back_pages), (1, 2));
        // A page whose entry cannot be written back stays; eight tries, then EAGAIN.
        assert_eq!(
            shrink_worker(&mut z, |z| z, |_, _| false),
            Err(Errno::EAGAIN)
        );
        assert_eq!(z.stats.reject_reclaim_fail, 1);
    }

    /// A machine with zswap on at `max_pool_percent` 1 (655 pool pages of 256M) and swap on
    /// a slow disk, one group holding `pages` of anon memory.
    fn machine(pages: u64) -> (crate::Machine, MemcgId) {
        let mut cfg = crate::config::MachineConfig::default();
        for (k, v) in [
            ("memory", "256M"),
            ("swap", "256M"),
            ("disk_latency", "10ms"),
            ("zswap", "on"),
            ("zswap_max_pool_percent", "1"),
        ] {
            cfg.set(k, v).unwrap();
        }
        let (m, a, _) = crate::page_io::tests::holding_group(cfg, pages);
        (m, a)
    }

    fn reclaim(m: &mut crate::Machine, a: MemcgId, nr: u64) -> u64 {
        let began = m.begin_external_write();
        let r = m.try_to_free_mem_cgroup_pages(a, nr, true, true, None);
        m.end_external_write(began);
        r
    }

    #[test]
    fn the_work_writes_the_oldest_zbud_page_back_through_the_swap_cache() {
        let (mut m, a) = machine(8000);
        let limit = m.totalram_pages / 100;
        reclaim(&mut m, a, 2 * limit - 64);
        let stored = m.stat_total(a, Stat::Zswpout);
        assert_eq!(
            (m.zswap.stats.pool_limit_hit, m.stat_total(a, Stat::Pswpout)),
            (0, 0)
        );
        // The zbud page at the LRU's tail is the one allocated longest ago.
        let pool = m.zswap.oldest_pool().unwrap();
        let (_, tail) = m.zswap.zbud_lru_tail(pool).unwrap().unwrap();
        let tail: Vec<SwapSlot> = tail.into_iter().flatten().collect();
        assert_eq!(tail.len(), 2);
        m.zswap.shrink_pending = true;
        m.zswap_shrink_work();
        assert!(!m.zswap.shrink_pending);
        assert_eq!(m.zswap.stats.written_back_pages, 2);
        assert_eq!(m.stat_total(a, Stat::Zswapped), stored - 2);
        assert_eq!(m.zswap.pool_pages(), stored.div_ceil(2) - 1);
        // Each back in the swap cache, charged to the group, under writeback with
        // PG_reclaim, counted in PSWPOUT.
        let pages: Vec<Pfn> = tail.iter().map(|&s| m.swap.cached(s).unwrap()).collect();
        for (&slot, &pfn) in tail.iter().zip(&pages) {
            assert!(m.zswap.entry(slot).is_none());
            assert_eq!(m.frames.memcg(pfn), a);
            assert!(m.frames.test(pfn, pf::WRITEBACK) && m.frames.test(pfn, pf::RECLAIM));
        }
        assert_eq!(m.stat_total(a, Stat::Pswpout), 2);
        // The writes end (PG_reclaim: to the inactive tail); the next reclaim takes those
        // pages first, clean, without writing them again.
        let now = m.now();
        m.run_until(now + 1_000_000_000, |_| false);
        for &pfn in &pages {
            assert!(!m.frames.test(pfn, pf::WRITEBACK));
        }
        reclaim(&mut m, a, 2);
        for &slot in &tail {
            assert_eq!(m.swap.cached(slot), None);
            assert!(m.swap.in_use(slot) && m.swap.shadow(slot) != 0);
        }
        assert_eq!(m.stat_total(a, Stat::Pswpout), 2);
        // Each swapped-out page is in one place: the checker finds one in none, or in two.
        m.check().unwrap();
        m.swap.set_written(tail[0], false);
        assert!(m.check().unwrap_err().contains("nowhere"));
        m.swap.set_written(tail[0], true);
        let (stored, _) = m.zswap.entries().next().unwrap();
        m.swap.set_written(stored, true);
        assert!(m
            .check()
            .unwrap_err()
            .contains("in zswap and on the device"));
        m.swap.set_written(stored, false);
        m.check().unwrap();
    }

    #[test]
    fn a_store_that_finds_the_pool_full_runs_the_work_at_once() {
        let (mut m, a) = machine(8000);
        let limit = m.totalram_pages / 100;
        reclaim(&mut m, a, 2 * limit - 64);
        reclaim(&mut m, a, 96);
        let z = &m.zswap.stats;
        // Full past 1 % of RAM at one store, whose queued work wrote one zbud page back at
        // once, leaving the pool at its limit: the later pages went to the device, refused
        // by the accept threshold without another pool_limit_hit.
        assert_eq!(m.zswap.pool_pages(), limit, "{z:?}");
        assert_eq!((z.pool_limit_hit, z.written_back_pages), (1, 2), "{z:?}");
        let stored = m.stat_total(a, Stat::Zswpout);
        assert_eq!(m.zswap.stored_pages(), stored - 2);
        assert!(m.stat_total(a, Stat::Pswpout) > 2);
    }

    #[test]
    fn a_store_is_a_pageout_in_reclaim_s_cost_accounting() {
        // pageout() returns PAGE_SUCCESS for a page zswap took: stat.nr_pageout counts it,
        // and lru_note_cost() adds it to the anon cost that get_scan_count() reads.
        let (mut m, a) = machine(4000);
        let cost = |m: &crate::Machine| m.memcg(a).lruvec[crate::swap::NID0].anon_cost;
        assert_eq!(cost(&m), 0);
        reclaim(&mut m, a, 64);
        assert!(m.stat_total(a, Stat::Zswpout) >= 64);
        assert_eq!(m.stat_total(a, Stat::Pswpout), 0);
        assert!(cost(&m) >= 64, "{}", cost(&m));
    }

    #[test]
    fn a_slot_whose_page_is_in_the_swap_cache_is_not_written_back() {
        let (mut m, a) = machine(4000);
        reclaim(&mut m, a, 1000);
        m.zswap.shrink_pending = true;
        // EEXIST for every slot zswap holds: eight tries, nothing freed.
        // (A stand-in frame in the swap cache for each, taken out again after.)
        let slots: Vec<SwapSlot> = m.zswap.entries().map(|(s, _)| s).collect();
        for &slot in &slots {
            m.swap.add_cache(slot, 0);
        }
        let (before, stored) = (m.zswap.stats.reject_reclaim_fail, m.zswap.stored_pages());
        let r = shrink_worker(
            &mut m,
            |m| &mut m.zswap,
            crate::Machine::zswap_writeback_entry,
        );
        assert_eq!(r, Err(Errno::EAGAIN));
        assert_eq!(m.zswap.stats.reject_reclaim_fail, before + 1);
        assert_eq!(m.zswap.stored_pages(), stored);
        for &slot in &slots {
            m.swap.del_cache(slot);
        }
    }

    #[test]
    fn zsmalloc_classes_merge_and_have_no_reclaim_in_6_1() {
        let classes = zs_classes();
        let mut distinct: Vec<ZsClass> = classes.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 69);
        // From 3257 bytes (3265 with its handle), an object takes a whole page (huge_class_size).
        assert_eq!(classes[zs_index(3256 + 8)].size, 3264);
        assert_eq!(classes[zs_index(3257 + 8)].size, 4096);
        let mut z = on();
        z.write_param("zpool", "zsmalloc").unwrap();
        for s in 0..5 {
            assert_eq!(z.store(s, 1, true, Some(1000), RAM).0, Ok(1000));
        }
        let c = classes[zs_index(1008)];
        assert_eq!(
            z.pool_pages(),
            5u64.div_ceil(c.objs as u64) * c.pages as u64
        );
        // A whole page fits zsmalloc; more is a compression that failed, counted nowhere.
        assert_eq!(z.store(8, 1, true, Some(4096), RAM).0, Ok(4096));
        assert_eq!(
            z.store(9, 1, true, Some(4097), RAM).0,
            Err(Reject::CompressFail)
        );
        assert_eq!(
            (z.stats.reject_alloc_fail, z.stats.reject_compress_poor),
            (0, 0)
        );
        assert_eq!(
            shrink_worker(&mut z, |z| z, |_, _| true),
            Err(Errno::EINVAL)
        );
        assert_eq!(z.stats.reject_reclaim_fail, 1);
    }

    #[test]
    fn a_new_zpool_becomes_current_and_the_old_lives_until_empty() {
        let mut z = on();
        z.store(0, 1, true, Some(2000), RAM);
        z.write_param("zpool", "zsmalloc").unwrap();
        z.store(1, 1, true, Some(2000), RAM);
        assert_eq!(z.pools.iter().flatten().count(), 2);
        z.invalidate(0);
        assert_eq!(z.pools.iter().flatten().count(), 1);
        // A store over a slot's entry drops the old one.
        let (r, old) = z.store(1, 1, true, Some(500), RAM);
        assert_eq!((r, old.map(|e| e.length)), (Ok(500), Some(2000)));
    }
}
