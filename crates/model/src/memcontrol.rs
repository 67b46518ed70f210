//! The memory controller: mm/memcontrol.c (and mm/memcontrol-v1.c for the legacy files).
//!
//! * the memcg tree (parent / first child / next sibling, so an iterator can skip a subtree)
//!   and `mem_cgroup_iter()` with a predicate returning Visit / Skip / SkipTree. The links
//!   a walk follows are kept twice: in each `Memcg` (the kernel's cgroup sibling and child
//!   lists, struct cgroup_subsys_state's sibling/children) and packed in `MemcgTopo`, a
//!   dense array indexed by memcg id with the state a walk tests (online, dying, the soft
//!   limit, the rework's children_in_excess, whether anon pages ever reached the group), so
//!   a walk over thousands of groups reads a few bytes a group instead of a large struct
//!   each; the invariant check compares the two;
//! * statistics and memory events (`memcg_memory_event()`, hierarchical and local);
//! * the per-CPU charge stock (consume_stock / refill_stock / drain_all_stock,
//!   MEMCG_CHARGE_BATCH = 64);
//! * `try_charge_memcg()`: limit reclaim with MAX_RECLAIM_RETRIES, the stock drain retry, the
//!   memcg OOM killer, and the memory.high check that queues throttling;
//! * `mem_cgroup_handle_over_high()`: reclaim_high() and the penalty delay of
//!   calculate_high_delay(), slept in virtual time;
//! * swap charging (v2 swap counter, v1 memsw) and `mem_cgroup_get_nr_swap_pages()`;
//! * the control-file write paths: memory.max, memory.high, memory.min/low, memory.reclaim,
//!   v1 limit_in_bytes / memsw.limit_in_bytes (mem_cgroup_resize_max) and force_empty.

use crate::config::CgroupVersion;
use crate::errno::Errno;
use crate::machine::Machine;
use crate::page_cgroup::Pfn;
use crate::page_counter::PAGE_COUNTER_MAX;
use crate::program::Pid;
use crate::stat::{MemcgStats, Stat};

/// A memcg id (the kernel's mem_cgroup_id(), 16 bits).
pub type MemcgId = u16;
/// The root memcg's id.
pub const ROOT_MEMCG: MemcgId = 1;
/// MEMCG_CHARGE_BATCH (6.1+).
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// MAX_RECLAIM_RETRIES.
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// PAGE_ALLOC_COSTLY_ORDER in pages.
const COSTLY_PAGES: u64 = 1 << 3;
/// HZ of the modelled kernel (jiffies per second).
pub const HZ: u64 = 1000;
const NS_PER_JIFFY: u64 = 1_000_000_000 / HZ;
const MEMCG_MAX_HIGH_DELAY_JIFFIES: u64 = 2 * HZ;
const MEMCG_DELAY_PRECISION_SHIFT: u32 = 20;
const MEMCG_DELAY_SCALING_SHIFT: u32 = 14;

/// memory.events and memory.swap.events counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum MemcgEvent {
    Low = 0,
    High,
    Max,
    Oom,
    OomKill,
    OomGroupKill,
    SwapHigh,
    SwapMax,
    SwapFail,
}
pub const NR_MEMCG_EVENTS: usize = 9;

/// A group's memory.events counters (one per [`MemcgEvent`]), allocated at its first event:
/// most groups never have one, and two inline arrays were 144 bytes of every group. Reads
/// of a group without any see zeros; a write allocates.
#[derive(Clone, Debug, Default)]
pub struct EventCounts(Option<Box<[u64; NR_MEMCG_EVENTS]>>);

/// What a group without events reads.
static NO_EVENTS: [u64; NR_MEMCG_EVENTS] = [0; NR_MEMCG_EVENTS];

impl std::ops::Deref for EventCounts {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        self.0.as_deref().unwrap_or(&NO_EVENTS)
    }
}

impl std::ops::DerefMut for EventCounts {
    fn deref_mut(&mut self) -> &mut [u64] {
        &mut self.0.get_or_insert_with(|| Box::new([0; NR_MEMCG_EVENTS]))[..]
    }
}

/// One memory cgroup.
#[derive(Clone, Debug)]
pub struct Memcg {
    /// Seed 001's dirty limits (dirty=seed001*; memcg_dirty.rs).
    pub dirty_param: crate::memcg_dirty::DirtyParam,
    /// v1 memory.use_hierarchy as 2.6.36 kept it (dirty=seed001*; charging is always
    /// hierarchical in the model).
    pub use_hierarchy: bool,
    pub id: MemcgId,
    /// css online: created and not yet removed.
    pub online: bool,
    /// Removed (offline) but not freed: pages or swap entries are still charged to it, or a
    /// dying child is left.
    pub dying: bool,
    /// On `Machine::dying_release`.
    pub release_queued: bool,
    pub parent: Option<MemcgId>,
    pub first_child: Option<MemcgId>,
    pub last_child: Option<MemcgId>,
    pub next_sibling: Option<MemcgId>,
    /// The sibling list is doubly linked (the kernel's list_head), so a group leaves it
    /// without a scan of its siblings.
    pub prev_sibling: Option<MemcgId>,
    pub depth: u32,
    /// Live memcgs in its subtree, itself and dying ones included (kept at create and free,
    /// for the read-side-sum figure of /proc/memcgsim/stats).
    pub subtree_groups: u64,
    /// Its lruvecs by slot (mem_cgroup_per_node; mem_cgroup_per_zone under `reclaim=3.11`):
    /// see `Lruvecs` in swap.rs. The node's is in the struct, not behind a pointer.
    pub lruvec: crate::swap::Lruvecs,
    /// Exact counters: what every update changed, at once.
    pub stats: MemcgStats,
    /// The counters as readers see them under the statistics scheme (rstat.rs).
    pub vm: crate::rstat::MemcgVmstats,
    /// memory.events.local and memory.events (allocated at the group's first event).
    pub events_local: EventCounts,
    pub events: EventCounts,
    pub oom_group: bool,
    /// memory.zswap.max, in pages (PAGE_COUNTER_MAX: no limit).
    pub zswap_max: u64,
    /// Pages of memory.current its zswap bytes take (their bytes rounded up).
    pub zswap_pages: u64,
    /// v1 memory.swappiness (v2 uses vm.swappiness).
    pub swappiness: u32,
    pub oom_kill_disable: bool,
    pub under_oom: bool,
    /// Tasks attached directly to this memcg.
    pub nr_tasks: u32,
    /// Soft-limit tree node and the rework's counters (soft_limit.rs).
    pub soft: crate::soft_limit::SoftNode,
    /// Per-CPU page events and their ratelimit targets (one per CPU, never resized).
    pub page_events: Box<[crate::soft_limit::PageEvents]>,
    /// Its obj_cgroup and dentry list_lru (kmem.rs).
    pub kmem: crate::kmem::MemcgKmem,
}

impl Memcg {
    pub fn new(id: MemcgId, parent: Option<MemcgId>, depth: u32) -> Memcg {
        Memcg {
            id,
            online: true,
            dying: false,
            release_queued: false,
            parent,
            first_child: None,
            last_child: None,
            next_sibling: None,
            prev_sibling: None,
            depth,
            subtree_groups: 1,
            lruvec: crate::swap::Lruvecs::default(),
            stats: MemcgStats::default(),
            vm: Default::default(),
            events_local: EventCounts::default(),
            events: EventCounts::default(),
            oom_group: false,
            zswap_max: crate::page_counter::PAGE_COUNTER_MAX,
            zswap_pages: 0,
            swappiness: 60,
            oom_kill_disable: false,
            under_oom: false,
            nr_tasks: 0,
            soft: Default::default(),
            page_events: Box::default(),
            kmem: Default::default(),
            dirty_param: Default::default(),
            use_hierarchy: false,
        }
    }
}

/// "No memcg" in a `MemcgTopo` link (memcg ids start at 1).
pub(crate) const NO_MEMCG: MemcgId = 0;
/// `TopoLinks::flags`: css online.
const TOPO_ONLINE: u16 = 1;
/// `TopoLinks::flags`: offline but not yet freed.
const TOPO_DYING: u16 = 2;
/// `TopoLinks::flags`: an active-anon statistic update has reached this group (from it or a
/// descendant) since it was created. Without it every reader's view of the group's
/// hierarchical active-anon count is 0, so inactive_is_low() of its anon list is false.
/// Sticky; whenever a group has it every ancestor has it, so marking stops at the first
/// group already marked.
const TOPO_ANON_SEEN: u16 = 4;
/// `TopoLinks::flags`: an update of one of the group's own evictable LRU sizes has come since
/// it was created. Without it the group's lruvec is empty (a page joins a list only with its
/// statistic's update), so get_scan_count() of it finds nothing to scan. Sticky.
const TOPO_LRU_SEEN: u16 = 8;
/// `TopoLinks::flags`: a soft limit below PAGE_COUNTER_MAX was set on this group or a
/// descendant since it was created. Without it no group of its subtree is in excess of a
/// soft limit. Sticky; marking stops at the first ancestor already marked.
const TOPO_SOFT_SEEN: u16 = 16;
/// The flags that say what has happened to a group and stay until it is freed.
const TOPO_STICKY: u16 = TOPO_ANON_SEEN | TOPO_LRU_SEEN | TOPO_SOFT_SEEN;

/// One memcg's entry in `MemcgTopo`: its links (0 for none) and the flags a walk tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct TopoLinks {
    pub parent: MemcgId,
    pub first_child: MemcgId,
    pub next_sibling: MemcgId,
    flags: u16,
}

/// The memcg tree packed for walks: per memcg id, the links `mem_cgroup_iter()` follows
/// (the css parent, its children list's head and the next sibling) with the online and
/// dying flags, and beside them v1 memory.soft_limit_in_bytes and the rework's
/// children_in_excess, which the soft-limit walk tests at each group, and sticky flags:
/// whether an active-anon update ever reached the group (kswapd's ageing walk), whether a
/// page ever joined its LRU lists (reclaim's per-group work) and whether a soft limit was
/// ever set on it or below it (the soft-limit walk). It also keeps the last full pre-order
/// list (css_next_descendant_pre() from one root), valid until a group joins or leaves. The links
/// and the online / dying flags mirror the `Memcg` fields (kept in step at create, offline
/// and free; `check_memcg_topology` compares them); the soft limit, children_in_excess and
/// the anon flag live only here. Measured against one 24-byte struct per group holding all
/// of it and against one array per field, this layout (8 bytes of links and flags per
/// group, the soft-limit fields in arrays of their own) walked fastest.
#[derive(Clone, Debug, Default)]
pub struct MemcgTopo {
    links: Vec<TopoLinks>,
    /// v1 memory.soft_limit_in_bytes, in pages.
    soft_limit: Vec<u64>,
    /// The rework's children_in_excess: contributing descendants (soft_limit.rs).
    children_in_excess: Vec<u32>,
    /// How many entries of `soft_limit` are below PAGE_COUNTER_MAX.
    soft_limited: u32,
    /// Bumped whenever a group joins or leaves the tree.
    generation: u64,
    /// The last full pre-order walk (`memcg_subtree_preorder`): the generation it was made
    /// at, its root and the groups.
    preorder: Option<(u64, MemcgId, Vec<MemcgId>)>,
}

#[inline]
fn link(id: MemcgId) -> Option<MemcgId> {
    (id != NO_MEMCG).then_some(id)
}

impl MemcgTopo {
    /// A fresh entry for `id` under `parent`: no children, online, no soft limit.
    fn create(&mut self, id: MemcgId, parent: Option<MemcgId>) {
        let i = id as usize;
        self.generation += 1;
        if self.links.len() <= i {
            self.links.resize(i + 1, TopoLinks::default());
            self.soft_limit.resize(i + 1, PAGE_COUNTER_MAX);
            self.children_in_excess.resize(i + 1, 0);
        }
        self.links[i] = TopoLinks {
            parent: parent.unwrap_or(NO_MEMCG),
            first_child: NO_MEMCG,
            next_sibling: NO_MEMCG,
            flags: TOPO_ONLINE,
        };
        self.set_soft_limit(id, PAGE_COUNTER_MAX);
        self.children_in_excess[i] = 0;
    }

    /// Set `id`'s soft limit, keeping the count of groups that have one.
    fn set_soft_limit(&mut self, id: MemcgId, pages: u64) {
        let old = std::mem::replace(&mut self.soft_limit[id as usize], pages);
        if pages < PAGE_COUNTER_MAX {
            let mut cur = id;
            while cur != NO_MEMCG && self.links[cur as usize].flags & TOPO_SOFT_SEEN == 0 {
                self.links[cur as usize].flags |= TOPO_SOFT_SEEN;
                cur = self.links[cur as usize].parent;
            }
        }
        self.soft_limited = self.soft_limited + u32::from(pages < PAGE_COUNTER_MAX)
            - u32::from(old < PAGE_COUNTER_MAX);
    }

    /// Whether a soft limit was ever set on `id` or a group below it (if not, none of its
    /// subtree is in excess).
    #[inline]
    pub fn soft_seen(&self, id: MemcgId) -> bool {
        self.links[id as usize].flags & TOPO_SOFT_SEEN != 0
    }

    /// How many memcg ids hold a soft limit (a freed group's counts until its id is reused):
    /// with none, no group is in excess of its soft limit.
    #[inline]
    pub fn nr_soft_limited(&self) -> u32 {
        self.soft_limited
    }

    #[inline]
    pub fn links(&self, id: MemcgId) -> TopoLinks {
        self.links[id as usize]
    }

    #[inline]
    pub fn parent(&self, id: MemcgId) -> Option<MemcgId> {
        link(self.links[id as usize].parent)
    }

    #[inline]
    pub fn first_child(&self, id: MemcgId) -> Option<MemcgId> {
        link(self.links[id as usize].first_child)
    }

    #[inline]
    pub fn next_sibling(&self, id: MemcgId) -> Option<MemcgId> {
        link(self.links[id as usize].next_sibling)
    }

    #[inline]
    pub fn online(&self, id: MemcgId) -> bool {
        self.links[id as usize].flags & TOPO_ONLINE != 0
    }

    /// Online, or dying but not yet freed.
    #[inline]
    pub fn alive(&self, id: MemcgId) -> bool {
        self.links[id as usize].flags & (TOPO_ONLINE | TOPO_DYING) != 0
    }

    /// Whether an active-anon update has ever reached `id`'s hierarchical count (if not, its
    /// anon list is never low on inactive pages).
    #[inline]
    pub fn anon_seen(&self, id: MemcgId) -> bool {
        self.links[id as usize].flags & TOPO_ANON_SEEN != 0
    }

    /// Whether a page may be on one of `id`'s evictable LRU lists (if not, every list of its
    /// lruvec is empty).
    #[inline]
    pub fn lru_seen(&self, id: MemcgId) -> bool {
        self.links[id as usize].flags & TOPO_LRU_SEEN != 0
    }

    /// Mark `id` as having had an evictable LRU size update.
    #[cold]
    fn note_lru(&mut self, id: MemcgId) {
        self.links[id as usize].flags |= TOPO_LRU_SEEN;
    }

    /// Mark `id` and its ancestors as reached by an active-anon update.
    #[cold]
    fn note_anon(&mut self, id: MemcgId) {
        let mut cur = id;
        while cur != NO_MEMCG && self.links[cur as usize].flags & TOPO_ANON_SEEN == 0 {
            self.links[cur as usize].flags |= TOPO_ANON_SEEN;
            cur = self.links[cur as usize].parent;
        }
    }

    #[inline]
    pub fn soft_limit(&self, id: MemcgId) -> u64 {
        self.soft_limit[id as usize]
    }

    #[inline]
    pub fn children_in_excess(&self, id: MemcgId) -> u32 {
        self.children_in_excess[id as usize]
    }

    #[inline]
    pub(crate) fn children_in_excess_mut(&mut self, id: MemcgId) -> &mut u32 {
        &mut self.children_in_excess[id as usize]
    }

    /// Whether `id`'s entry equals what its `Memcg` says (the invariant check).
    pub(crate) fn matches(&self, id: MemcgId, mc: &Memcg) -> Result<(), String> {
        let Some(&l) = self.links.get(id as usize) else {
            return Err(format!("memcg {id} has no topology entry"));
        };
        let flags = if mc.online { TOPO_ONLINE } else { 0 } | if mc.dying { TOPO_DYING } else { 0 };
        let want = TopoLinks {
            parent: mc.parent.unwrap_or(NO_MEMCG),
            first_child: mc.first_child.unwrap_or(NO_MEMCG),
            next_sibling: mc.next_sibling.unwrap_or(NO_MEMCG),
            flags,
        };
        let l = TopoLinks {
            flags: l.flags & !TOPO_STICKY,
            ..l
        };
        if l != want {
            return Err(format!(
                "memcg {id}: packed topology {l:?} but the memcg says {want:?}"
            ));
        }
        Ok(())
    }
}

/// A per-CPU charge stock (struct memcg_stock_pcp).
#[derive(Clone, Debug, Default)]
pub struct Stock {
    pub memcg: MemcgId,
    pub nr_pages: u64,
}

/// What the memcg iterator predicate decides for a group (seed 000's iterator).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterVisit {
    Visit,
    /// Do not visit this group, but do visit its children.
    Skip,
    /// Skip this group and its whole subtree.
    SkipTree,
}

/// try_charge_memcg()'s retry loop state.
struct ChargeLoop {
    /// The memcg being charged.
    memcg: MemcgId,
    nr_retries: u32,
    drained: bool,
    passed_oom: bool,
    /// MEMCG_RECLAIM_MAY_SWAP of reclaim_options: cleared by a failure over memory+swap
    /// and kept off for the rest of the charge (not kept across a sleep in reclaim).
    may_swap: bool,
    /// The last failed charge failed on the memory+swap counter (v1), not on memory.
    over_memsw: bool,
    /// Resuming after a sleep in reclaim: what that reclaim reclaimed.
    resumed: Option<u64>,
}

/// Why a charge failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChargeError {
    /// -ENOMEM: the OOM killer found nothing to kill.
    NoMem,
    /// The charging task itself was killed.
    Killed,
    /// The charging task went to sleep in reclaim; it retries when it wakes.
    Blocked,
}

impl Machine {
    // ---------------------------------------------------------------- tree

    #[inline]
    pub fn memcg(&self, id: MemcgId) -> &Memcg {
        &self.memcgs[id as usize]
    }

    #[inline]
    pub fn memcg_mut(&mut self, id: MemcgId) -> &mut Memcg {
        &mut self.memcgs[id as usize]
    }

    pub fn is_v1(&self) -> bool {
        self.cfg.cgroup == CgroupVersion::V1
    }

    /// Allocate a memcg under `parent` (css_alloc + css_online).
    pub(crate) fn memcg_create_raw(&mut self, parent: Option<MemcgId>) -> MemcgId {
        // idr_alloc() from 1: the lowest id free.
        let id = match self.free_memcg_ids.pop() {
            Some(std::cmp::Reverse(id)) => id,
            None => {
                self.memcgs.push(Memcg::new(0, None, 0));
                (self.memcgs.len() - 1) as MemcgId
            }
        };
        let depth = parent.map(|p| self.memcg(p).depth + 1).unwrap_or(0);
        let mut mc = Memcg::new(id, parent, depth);
        mc.page_events = vec![Default::default(); self.cfg.cpus as usize].into_boxed_slice();
        mc.swappiness = match parent {
            Some(p) => self.memcg(p).swappiness,
            None => self.vm_swappiness,
        };
        self.memcgs[id as usize] = mc;
        self.memcg_topo.create(id, parent);
        let pidx = parent.map(|p| p as usize);
        self.memory.ensure(id as usize, pidx, true);
        self.swap_counter.ensure(id as usize, pidx, false);
        self.memsw.ensure(id as usize, pidx, false);
        self.kmem.counter.ensure(id as usize, pidx, false);
        self.kmem_memcg_online(id);
        if let Some(p) = parent {
            match self.memcg(p).last_child {
                Some(last) => {
                    self.memcg_mut(last).next_sibling = Some(id);
                    self.memcg_topo.links[last as usize].next_sibling = id;
                    self.memcg_mut(id).prev_sibling = Some(last);
                }
                None => {
                    self.memcg_mut(p).first_child = Some(id);
                    self.memcg_topo.links[p as usize].first_child = id;
                }
            }
            self.memcg_mut(p).last_child = Some(id);
        }
        self.add_subtree_groups(parent, 1);
        if self.lru_gen_enabled() {
            // lru_gen_init_memcg(): the group's generations are born with it.
            self.lrugen_mut(id);
        }
        id
    }

    /// Add `d` to the subtree sizes of `from` and its ancestors.
    fn add_subtree_groups(&mut self, from: Option<MemcgId>, d: i64) {
        let mut cur = from;
        while let Some(m) = cur {
            let mc = self.memcg_mut(m);
            mc.subtree_groups = mc
                .subtree_groups
                .checked_add_signed(d)
                .expect("subtree size");
            cur = mc.parent;
        }
    }

    /// Create a child memcg. ENOSPC when the 16-bit id space is exhausted; ENOMEM when no
    /// free frame is left for its per-CPU memory (`kmem_memcg_percpu`).
    pub fn memcg_create(&mut self, parent: MemcgId) -> Result<MemcgId, Errno> {
        if self.free_memcg_ids.is_empty() && self.memcgs.len() > u16::MAX as usize {
            return Err(Errno::ENOSPC);
        }
        if !self.kmem_memcg_percpu_fits() {
            return Err(Errno::ENOMEM);
        }
        let id = self.memcg_create_raw(Some(parent));
        self.memcg_dirty_init(id, parent);
        self.kmem_memcg_percpu(id, parent);
        Ok(id)
    }

    /// rmdir (css_offline): offline a memcg with no online children and no tasks. As in 6.1
    /// its pages and swap entries stay charged to it (LRU pages are not reparented); it drains
    /// its stock, leaves the soft-limit tree, hands its wb's dirty inodes to the parent and
    /// loses its protection. It stays in the tree as a dying group, where reclaim still
    /// reaches it, until nothing is charged to it and its children are gone
    /// (`memcg_try_release`).
    pub fn memcg_offline(&mut self, id: MemcgId) -> Result<(), Errno> {
        let mc = self.memcg(id);
        if id == ROOT_MEMCG || !mc.online || mc.nr_tasks > 0 {
            return Err(Errno::EBUSY);
        }
        let mut c = mc.first_child;
        while let Some(x) = c {
            if self.memcg(x).online {
                return Err(Errno::EBUSY);
            }
            c = self.memcg(x).next_sibling;
        }
        let parent = mc.parent.expect("non-root memcg has a parent");
        self.soft_limit_offline(id);
        self.drain_all_stock(id);
        self.kmem_memcg_offline(id, parent);
        self.zswap_memcg_offline(id, parent);
        self.wb_memcg_offline(id, parent);
        // Clear protection so the parent's children_*_usage sums lose this child's share.
        self.memory.set_min(id as usize, 0);
        self.memory.set_low(id as usize, 0);
        let mc = self.memcg_mut(id);
        mc.online = false;
        mc.dying = true;
        let l = &mut self.memcg_topo.links[id as usize];
        l.flags = (l.flags & TOPO_STICKY) | TOPO_DYING;
        self.memcg_try_release(id);
        Ok(())
    }

    /// Queue a dying memcg for freeing once nothing holds it: no pages or swap entries
    /// charged, no child left (css_release after the last css_put).
    pub(crate) fn memcg_try_release(&mut self, id: MemcgId) {
        let mc = self.memcg(id);
        if !mc.dying || mc.release_queued || mc.first_child.is_some() {
            return;
        }
        let i = id as usize;
        let swap = if self.is_v1() {
            self.memsw.get(i).usage
        } else {
            self.swap_counter.get(i).usage
        };
        if self.memory.get(i).usage == 0 && swap == 0 {
            self.memcg_mut(id).release_queued = true;
            self.dying_release.push(id);
        }
    }

    /// Free the dying memcgs queued for release (the css_free work, run between events so
    /// no walk sees a group vanish under it). Freeing a child may release its dying parent.
    pub fn release_dying_memcgs(&mut self) {
        let mut guard = 0usize;
        while let Some(id) = self.dying_release.pop() {
            guard += 1;
            assert!(
                guard <= self.memcgs.len(),
                "release loop does not terminate"
            );
            self.memcg_free(id);
        }
    }

    fn memcg_free(&mut self, id: MemcgId) {
        let parent = self.memcg(id).parent.expect("non-root memcg has a parent");
        debug_assert!(self.memcg(id).dying && self.memcg(id).first_child.is_none());
        self.kmem_memcg_free_percpu(id);
        self.stats_memcg_free(id);
        // Unlink from the sibling list (list_del).
        let (prev, next) = (self.memcg(id).prev_sibling, self.memcg(id).next_sibling);
        let next_link = next.unwrap_or(NO_MEMCG);
        match prev {
            Some(x) => {
                self.memcg_mut(x).next_sibling = next;
                self.memcg_topo.links[x as usize].next_sibling = next_link;
            }
            None => {
                debug_assert_eq!(self.memcg(parent).first_child, Some(id));
                self.memcg_mut(parent).first_child = next;
                self.memcg_topo.links[parent as usize].first_child = next_link;
            }
        }
        match next {
            Some(x) => self.memcg_mut(x).prev_sibling = prev,
            None => {
                debug_assert_eq!(self.memcg(parent).last_child, Some(id));
                self.memcg_mut(parent).last_child = prev;
            }
        }
        self.add_subtree_groups(Some(parent), -1);
        let mc = self.memcg_mut(id);
        mc.dying = false;
        mc.release_queued = false;
        mc.parent = None;
        mc.next_sibling = None;
        mc.prev_sibling = None;
        self.memcg_topo.links[id as usize] = TopoLinks::default();
        self.memcg_topo.generation += 1;
        self.free_memcg_ids.push(std::cmp::Reverse(id));
        self.memcg_try_release(parent);
    }

    /// A live memcg: online, or dying but not yet freed.
    #[inline]
    pub fn memcg_alive(&self, id: MemcgId) -> bool {
        self.memcg_topo.alive(id)
    }

    /// v1 memory.soft_limit_in_bytes of `id`, in pages (PAGE_COUNTER_MAX: none).
    #[inline]
    pub fn memcg_soft_limit(&self, id: MemcgId) -> u64 {
        self.memcg_topo.soft_limit(id)
    }

    /// Set v1 memory.soft_limit_in_bytes of `id`, in pages. As in the kernel the soft-limit
    /// tree and the rework's counters catch up at the group's next ratelimited update.
    pub fn set_memcg_soft_limit(&mut self, id: MemcgId, pages: u64) {
        self.memcg_topo.set_soft_limit(id, pages);
    }

    /// Dying memcgs below `id` (cgroup.stat nr_dying_descendants).
    pub fn nr_dying_descendants(&self, id: MemcgId) -> usize {
        let mut out = Vec::new();
        self.memcg_walk(
            id,
            |m, x| {
                if m.memcg(x).dying {
                    IterVisit::Visit
                } else {
                    IterVisit::Skip
                }
            },
            &mut out,
        );
        out.len()
    }

    /// Is `id` `root` or a descendant of it?
    pub fn memcg_is_descendant(&self, mut id: MemcgId, root: MemcgId) -> bool {
        loop {
            if id == root {
                return true;
            }
            match self.memcg_topo.parent(id) {
                Some(p) => id = p,
                None => return false,
            }
        }
    }

    /// The next memcg after `cur` in a pre-order walk of `root`'s subtree;
    /// `skip_children` jumps over `cur`'s subtree. It reads the packed links.
    #[inline]
    pub fn memcg_iter_next(
        &self,
        root: MemcgId,
        cur: MemcgId,
        skip_children: bool,
    ) -> Option<MemcgId> {
        let t = &self.memcg_topo;
        if !skip_children {
            if let Some(c) = t.first_child(cur) {
                return Some(c);
            }
        }
        let mut x = cur;
        loop {
            if x == root {
                return None;
            }
            let l = t.links(x);
            if l.next_sibling != NO_MEMCG {
                return Some(l.next_sibling);
            }
            x = link(l.parent)?;
        }
    }

    /// mem_cgroup_iter() with a predicate: the groups of `root`'s subtree (root included) in
    /// pre-order that the predicate visits. A SkipTree answer skips the whole subtree without
    /// looking at it. Returns the groups and how many the walk looked at.
    pub fn memcg_walk(
        &self,
        root: MemcgId,
        mut pred: impl FnMut(&Machine, MemcgId) -> IterVisit,
        out: &mut Vec<MemcgId>,
    ) -> usize {
        out.clear();
        let mut looked = 0usize;
        let mut cur = root;
        loop {
            looked += 1;
            assert!(looked <= self.memcgs.len(), "memcg walk does not terminate");
            let v = pred(self, cur);
            if v == IterVisit::Visit {
                out.push(cur);
            }
            match self.memcg_iter_next(root, cur, v == IterVisit::SkipTree) {
                Some(next) => cur = next,
                None => return looked,
            }
        }
    }

    /// `memcg_walk(root, |_, _| IterVisit::Visit, out)`: every group of `root`'s subtree in
    /// pre-order; returns how many the walk looked at (all of them). Reclaim's walks repeat
    /// this with the tree unchanged: the list is kept and copied until a group joins or
    /// leaves the tree.
    pub fn memcg_subtree_preorder(&mut self, root: MemcgId, out: &mut Vec<MemcgId>) -> usize {
        let generation = self.memcg_topo.generation;
        if let Some((g, r, list)) = &self.memcg_topo.preorder {
            if *g == generation && *r == root {
                out.clear();
                out.extend_from_slice(list);
                return list.len();
            }
        }
        let looked = self.memcg_walk(root, |_, _| IterVisit::Visit, out);
        debug_assert_eq!(looked, out.len());
        let mut list = match self.memcg_topo.preorder.take() {
            Some((_, _, v)) => v,
            None => Vec::new(),
        };
        list.clone_from(out);
        self.memcg_topo.preorder = Some((generation, root, list));
        looked
    }

    // ---------------------------------------------------------------- stats & events

    /// Add `delta` to a statistic of `memcg` (local) and of it and every ancestor (total),
    /// and pass it to the statistics scheme, through which readers see it (rstat.rs).
    #[inline]
    pub fn mod_stat(&mut self, memcg: MemcgId, item: Stat, delta: i64) {
        self.stat_add_exact(memcg, item as usize, delta);
        self.stats_update(memcg, item, delta);
    }

    /// The exact counters of an update: local on `memcg`, total on it and every ancestor.
    #[inline]
    fn stat_add_exact(&mut self, memcg: MemcgId, i: usize, delta: i64) {
        if i <= Stat::ActiveFile as usize {
            if !self.memcg_topo.lru_seen(memcg) {
                self.memcg_topo.note_lru(memcg);
            }
            if i == Stat::ActiveAnon as usize && !self.memcg_topo.anon_seen(memcg) {
                self.memcg_topo.note_anon(memcg);
            }
        }
        self.memcgs[memcg as usize].stats.local[i] += delta;
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            let mc = &mut self.memcgs[m as usize];
            mc.stats.total[i] += delta;
            cur = mc.parent;
        }
    }

    /// `n` updates of `unit` (+1 or -1) to one statistic of `memcg`, with no time passing
    /// between them: what `n` calls of `mod_stat(memcg, item, unit)` would do, the schemes'
    /// per-CPU batching included, in one walk of the ancestors. Used where the kernel moves a
    /// batch of pages at once (update_lru_sizes() after isolate_lru_folios()).
    pub fn mod_stat_units(&mut self, memcg: MemcgId, item: Stat, unit: i64, n: u64) {
        debug_assert!(unit == 1 || unit == -1);
        if n == 0 {
            return;
        }
        self.stat_add_exact(memcg, item as usize, unit * n as i64);
        self.stats_update_units(memcg, item, unit, n);
    }

    /// Hierarchical value of a statistic (pages or events).
    #[inline]
    pub fn stat_total(&self, memcg: MemcgId, item: Stat) -> u64 {
        self.memcg(memcg).stats.total[item as usize].max(0) as u64
    }

    #[inline]
    pub fn stat_local(&self, memcg: MemcgId, item: Stat) -> u64 {
        self.memcg(memcg).stats.local[item as usize].max(0) as u64
    }

    /// Global (node) value of a statistic: the root's hierarchical total.
    pub fn global_stat(&self, item: Stat) -> u64 {
        self.stat_total(ROOT_MEMCG, item)
    }

    /// memcg_memory_event(): count locally, and hierarchically on the memcg and its ancestors
    /// below the root.
    pub fn memcg_memory_event(&mut self, memcg: MemcgId, ev: MemcgEvent) {
        let i = ev as usize;
        self.memcgs[memcg as usize].events_local[i] += 1;
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            if m == ROOT_MEMCG {
                break;
            }
            self.memcgs[m as usize].events[i] += 1;
            cur = self.memcg(m).parent;
        }
    }

    // ---------------------------------------------------------------- stock

    fn consume_stock(&mut self, cpu: usize, memcg: MemcgId, nr: u64) -> bool {
        if nr > MEMCG_CHARGE_BATCH {
            return false;
        }
        let s = &mut self.stock[cpu];
        if s.memcg == memcg && s.nr_pages >= nr {
            s.nr_pages -= nr;
            return true;
        }
        false
    }

    fn drain_stock(&mut self, cpu: usize) {
        let (m, nr) = (self.stock[cpu].memcg, self.stock[cpu].nr_pages);
        if m != 0 && nr > 0 {
            self.memory.uncharge(m as usize, nr);
            if self.is_v1() {
                self.memsw.uncharge(m as usize, nr);
            }
        }
        self.stock[cpu] = Stock::default();
    }

    fn refill_stock(&mut self, cpu: usize, memcg: MemcgId, nr: u64) {
        if self.stock[cpu].memcg != memcg {
            self.drain_stock(cpu);
            self.stock[cpu].memcg = memcg;
        }
        self.stock[cpu].nr_pages += nr;
        if self.stock[cpu].nr_pages > MEMCG_CHARGE_BATCH {
            self.drain_stock(cpu);
        }
    }

    /// drain_all_stock(): drain every CPU's stock that caches `root` or a descendant.
    pub fn drain_all_stock(&mut self, root: MemcgId) {
        for cpu in 0..self.stock.len() {
            let m = self.stock[cpu].memcg;
            if m != 0 && self.stock[cpu].nr_pages > 0 && self.memcg_is_descendant(m, root) {
                self.drain_stock(cpu);
            }
        }
    }

    /// Pages held in per-CPU stocks for exactly this memcg.
    pub fn stock_pages(&self, memcg: MemcgId) -> u64 {
        self.stock
            .iter()
            .filter(|s| s.memcg == memcg)
            .map(|s| s.nr_pages)
            .sum()
    }

    // ---------------------------------------------------------------- charge

    /// mem_cgroup_margin().
    pub fn mem_cgroup_margin(&self, memcg: MemcgId) -> u64 {
        let c = self.memory.get(memcg as usize);
        let mut margin = c.max.saturating_sub(c.usage);
        if self.is_v1() {
            let s = self.memsw.get(memcg as usize);
            margin = margin.min(s.max.saturating_sub(s.usage));
        }
        margin
    }

    pub(crate) fn current_cpu(&self) -> usize {
        self.cur.as_ref().map(|c| c.cpu as usize).unwrap_or(0)
    }

    /// The task whose context is running, if any (not kswapd, not a control-file write).
    pub(crate) fn current_pid(&self) -> Option<Pid> {
        self.cur.as_ref().and_then(|c| c.pid)
    }

    /// try_charge_memcg(): charge `nr` pages to `memcg`, reclaiming and OOM-killing as the
    /// kernel does.
    pub fn try_charge(&mut self, memcg: MemcgId, nr: u64) -> Result<(), ChargeError> {
        if memcg == ROOT_MEMCG {
            return Ok(());
        }
        let cpu = self.current_cpu();
        let use_stock = self.cfg.charge_stock;
        let mut batch = if use_stock {
            nr.max(MEMCG_CHARGE_BATCH)
        } else {
            nr
        };
        // A task that slept in this charge's reclaim goes on where its retry loop stood.
        let mut lp = ChargeLoop {
            memcg,
            nr_retries: MAX_RECLAIM_RETRIES,
            drained: false,
            passed_oom: false,
            may_swap: true,
            over_memsw: false,
            resumed: None,
        };
        if let Some(pid) = self.current_pid() {
            if let Some(crate::task::AllocRetry::Charge {
                memcg: m,
                nr_retries,
                drained,
                passed_oom,
                reclaimed,
            }) = self.task(pid).alloc_retry
            {
                self.task_mut(pid).alloc_retry = None;
                if m == memcg {
                    lp.nr_retries = nr_retries;
                    lp.drained = drained;
                    lp.passed_oom = passed_oom;
                    lp.resumed = Some(reclaimed);
                }
            }
        }
        let v1 = self.is_v1();
        // Bound: each pass either consumes a retry, an OOM kill, or makes reclaim progress.
        for _pass in 0..100_000u32 {
            if use_stock && self.consume_stock(cpu, memcg, nr) {
                return Ok(());
            }
            lp.over_memsw = false;
            let over: MemcgId = if v1 {
                match self.memsw.try_charge(memcg as usize, batch) {
                    Ok(()) => match self.memory.try_charge(memcg as usize, batch) {
                        Ok(()) => {
                            self.done_restock(memcg, nr, batch, cpu);
                            return Ok(());
                        }
                        Err(f) => {
                            self.memsw.uncharge(memcg as usize, batch);
                            f as MemcgId
                        }
                    },
                    Err(f) => {
                        // Over the memory+swap limit: swapping would not help. The flag
                        // stays off for the rest of this charge (6.1 clears
                        // MEMCG_RECLAIM_MAY_SWAP in reclaim_options, which no retry sets
                        // again): after a failed batch over memsw, the retry of the single
                        // page that fails on memory reclaims without swap, and its OOM
                        // comes at once.
                        lp.may_swap = false;
                        lp.over_memsw = true;
                        f as MemcgId
                    }
                }
            } else {
                match self.memory.try_charge(memcg as usize, batch) {
                    Ok(()) => {
                        self.done_restock(memcg, nr, batch, cpu);
                        return Ok(());
                    }
                    Err(f) => f as MemcgId,
                }
            };
            if batch > nr {
                batch = nr;
                continue;
            }
            if let Some(r) = self.charge_slowpath(over, nr, lp.may_swap, &mut lp) {
                return r;
            }
        }
        Err(ChargeError::NoMem)
    }

    /// The part of try_charge_memcg() after a failed counter charge. Returns Some(result) to
    /// finish, None to retry.
    fn charge_slowpath(
        &mut self,
        over: MemcgId,
        nr: u64,
        may_swap: bool,
        lp: &mut ChargeLoop,
    ) -> Option<Result<(), ChargeError>> {
        if self.current_is_dying() {
            // A killed task has exited at its kill (the model's oom_reaper and exit are
            // immediate): it does not reclaim; the fault fails and the task exits.
            return Some(Err(ChargeError::Killed));
        }
        if self.gfp_nowait {
            // !gfpflags_allow_blocking(): no reclaim, no `max` event.
            return Some(Err(ChargeError::NoMem));
        }
        let reclaimed = match lp.resumed.take() {
            // The reclaim before the sleep already ran; the loop goes on after it.
            Some(reclaimed) => reclaimed,
            None => {
                self.memcg_memory_event(over, MemcgEvent::Max);
                let (reclaimed, throttle) = self.charge_reclaim(over, nr, may_swap);
                if let (Some(w), Some(pid)) = (throttle, self.current_pid()) {
                    self.task_mut(pid).alloc_retry = Some(crate::task::AllocRetry::Charge {
                        memcg: lp.memcg,
                        nr_retries: lp.nr_retries,
                        drained: lp.drained,
                        passed_oom: lp.passed_oom,
                        reclaimed,
                    });
                    self.block_current(pid, w);
                    return Some(Err(ChargeError::Blocked));
                }
                reclaimed
            }
        };
        if self.mem_cgroup_margin(over) >= nr {
            return None;
        }
        if !lp.drained {
            self.drain_all_stock(over);
            lp.drained = true;
            return None;
        }
        if self.gfp_noretry {
            // __GFP_NORETRY (readahead): no further reclaim and no OOM.
            return Some(Err(ChargeError::NoMem));
        }
        if reclaimed > 0 && nr <= COSTLY_PAGES {
            return None;
        }
        if lp.nr_retries > 0 {
            lp.nr_retries -= 1;
            return None;
        }
        if lp.passed_oom && self.current_is_dying() {
            return Some(Err(ChargeError::Killed));
        }
        // mem_cgroup_oom(): a charge above PAGE_ALLOC_COSTLY_ORDER (a huge folio's) fails
        // without an OOM.
        if nr > COSTLY_PAGES {
            return Some(Err(ChargeError::NoMem));
        }
        self.memcg_memory_event(over, MemcgEvent::Oom);
        if self.is_v1() && self.memcg(over).oom_kill_disable {
            // v1 oom_kill_disable: the task would sleep until the limit is raised; the model
            // fails the charge instead (see docs/FIDELITY.md).
            self.memcg_mut(over).under_oom = true;
            return Some(Err(ChargeError::NoMem));
        }
        if self.mem_cgroup_out_of_memory(over, nr) {
            if self.current_is_dying() {
                self.victim_retries(over, lp.over_memsw);
                return Some(Err(ChargeError::Killed));
            }
            lp.passed_oom = true;
            lp.nr_retries = MAX_RECLAIM_RETRIES;
            return None;
        }
        Some(Err(ChargeError::NoMem))
    }

    /// The OOM victim's own charge after its kill. In 6.1 the loop goes on (passed_oom,
    /// MAX_RECLAIM_RETRIES again) until `passed_oom && task_is_dying()` ends it: 1 + 16 more
    /// passes, each a failed page_counter_try_charge() at the level over its limit (its
    /// failcnt), a `max` event and a reclaim. The victim's pages are still charged then:
    /// the oom_reaper cannot take them while the faulting victim holds its mmap_lock, and
    /// the reclaims find nothing, as the 17 before the kill did. The model's victim has
    /// exited at the kill (its reaper is immediate), so what those passes leave is counted
    /// here: the failures on the counter that failed (`memsw`: the memory+swap one) and
    /// the events.
    fn victim_retries(&mut self, over: MemcgId, memsw: bool) {
        let passes = 1 + MAX_RECLAIM_RETRIES as u64;
        let counter = if memsw {
            &mut self.memsw
        } else {
            &mut self.memory
        };
        counter.get_mut(over as usize).failcnt += passes;
        for _ in 0..passes {
            self.memcg_memory_event(over, MemcgEvent::Max);
        }
    }

    fn done_restock(&mut self, memcg: MemcgId, nr: u64, batch: u64, cpu: usize) {
        if batch > nr {
            self.refill_stock(cpu, memcg, batch - nr);
        }
        // memory.high check: queue throttling on the current task.
        let Some(pid) = self.current_pid() else {
            return;
        };
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            let mem_high = {
                let c = self.memory.get(m as usize);
                c.usage > c.high
            };
            let swap_high = {
                let c = self.swap_counter.get(m as usize);
                c.usage > c.high
            };
            if mem_high || swap_high {
                self.task_mut(pid).nr_pages_over_high += batch;
                break;
            }
            cur = self.memcg(m).parent;
        }
        if self.task(pid).nr_pages_over_high > MEMCG_CHARGE_BATCH && !self.gfp_nowait {
            self.mem_cgroup_handle_over_high(pid);
        }
    }

    /// commit_charge() + mem_cgroup_charge_statistics().
    pub fn commit_charge(&mut self, pfn: Pfn, memcg: MemcgId) {
        self.frames.set_memcg(pfn, memcg);
        self.mod_stat(memcg, Stat::Pgpgin, 1);
        self.memcg_check_events(memcg, 1);
    }

    /// commit_charge() of a folio of `nr` pages: mem_cgroup_charge_statistics() counts a
    /// PGPGIN for the folio ("pagein of a big page is an event") and `nr` page events.
    pub fn commit_charge_folio(&mut self, pfn: Pfn, memcg: MemcgId, nr: u64) {
        self.frames.set_memcg(pfn, memcg);
        self.mod_stat(memcg, Stat::Pgpgin, 1);
        self.memcg_check_events(memcg, nr);
    }

    /// Uncharge one page owned by `memcg` (the folio is being freed).
    pub fn uncharge_page(&mut self, memcg: MemcgId) {
        self.uncharge_batch(memcg, 1);
    }

    /// __mem_cgroup_uncharge() of one folio of `nr` pages: its own uncharge_batch(), one
    /// PGPGOUT and `nr` page events.
    pub fn uncharge_folio(&mut self, memcg: MemcgId, nr: u64) {
        self.uncharge_batch_folios(memcg, nr, 1);
    }

    /// uncharge_batch(): `nr` pages of `memcg` freed together leave its counters in one
    /// step, count as `nr` PGPGOUT and page events, and check the event targets once.
    fn uncharge_batch(&mut self, memcg: MemcgId, nr: u64) {
        self.uncharge_batch_folios(memcg, nr, nr);
    }

    /// uncharge_batch() of `nr` pages in `folios` folios (a PGPGOUT per folio).
    fn uncharge_batch_folios(&mut self, memcg: MemcgId, nr: u64, folios: u64) {
        if memcg != ROOT_MEMCG {
            self.memory.uncharge(memcg as usize, nr);
            if self.is_v1() {
                self.memsw.uncharge(memcg as usize, nr);
            }
            if self.memcgs[memcg as usize].dying {
                self.memcg_try_release(memcg);
            }
        }
        self.mod_stat(memcg, Stat::Pgpgout, folios as i64);
        self.memcg_check_events(memcg, nr);
    }

    /// __mem_cgroup_uncharge_list(): uncharge a list of freed pages, one uncharge_batch()
    /// per run of pages of the same memcg. `None` is a page with no memory charge left (a
    /// swapped-out page, whose charge mem_cgroup_swapout() already moved).
    pub fn mem_cgroup_uncharge_list(&mut self, owners: impl IntoIterator<Item = Option<MemcgId>>) {
        let mut run: Option<(MemcgId, u64)> = None;
        for memcg in owners.into_iter().flatten() {
            match &mut run {
                Some((m, nr)) if *m == memcg => *nr += 1,
                _ => {
                    if let Some((m, nr)) = run.replace((memcg, 1)) {
                        self.uncharge_batch(m, nr);
                    }
                }
            }
        }
        if let Some((m, nr)) = run {
            self.uncharge_batch(m, nr);
        }
    }

    /// The end of release_pages() and of shrink_folio_list(): uncharge a list of freed
    /// pages (mem_cgroup_uncharge_list()), then free their frames in order
    /// (free_unref_page_list()).
    pub fn free_page_list(&mut self, pages: &[(crate::page_cgroup::Pfn, Option<MemcgId>)]) {
        self.mem_cgroup_uncharge_list(pages.iter().map(|&(_, m)| m));
        for &(pfn, _) in pages {
            self.free_frame(pfn);
        }
    }

    // ---------------------------------------------------------------- swap charge

    /// __mem_cgroup_try_charge_swap(): charge a swap slot to `memcg` (v2 swap counter).
    pub fn mem_cgroup_try_charge_swap(&mut self, memcg: MemcgId) -> bool {
        if !self.is_v1() && memcg != ROOT_MEMCG {
            if let Err(f) = self.swap_counter.try_charge(memcg as usize, 1) {
                let f = f as MemcgId;
                self.memcg_memory_event(f, MemcgEvent::SwapMax);
                self.memcg_memory_event(f, MemcgEvent::SwapFail);
                return false;
            }
        }
        self.mod_stat(memcg, Stat::Swap, 1);
        true
    }

    /// mem_cgroup_swapout(): the page's memory charge goes away; in v1 the memsw charge
    /// stays with the swap entry.
    pub fn mem_cgroup_swapout(&mut self, memcg: MemcgId) {
        if memcg != ROOT_MEMCG {
            self.memory.uncharge(memcg as usize, 1);
        }
        self.mod_stat(memcg, Stat::Pgpgout, 1);
        self.memcg_check_events(memcg, 1);
    }

    /// mem_cgroup_uncharge_swap(): a swap entry is freed.
    pub fn mem_cgroup_uncharge_swap(&mut self, memcg: MemcgId) {
        if memcg != ROOT_MEMCG {
            if self.is_v1() {
                self.memsw.uncharge(memcg as usize, 1);
            } else {
                self.swap_counter.uncharge(memcg as usize, 1);
            }
            if self.memcgs[memcg as usize].dying {
                self.memcg_try_release(memcg);
            }
        }
        self.mod_stat(memcg, Stat::Swap, -1);
    }

    /// mem_cgroup_get_nr_swap_pages(): swap space this memcg may still use.
    pub fn mem_cgroup_get_nr_swap_pages(&self, memcg: MemcgId) -> u64 {
        let mut nr = self.swap.nr_free() as u64;
        if self.is_v1() {
            return nr;
        }
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            if m == ROOT_MEMCG {
                break;
            }
            let c = self.swap_counter.get(m as usize);
            nr = nr.min(c.max.saturating_sub(c.usage));
            cur = self.memcg(m).parent;
        }
        nr
    }

    /// mem_cgroup_get_max(): the OOM "totalpages" of a memcg.
    pub fn mem_cgroup_get_max(&self, memcg: MemcgId) -> u64 {
        let max = self.memory.get(memcg as usize).max;
        if self.is_v1() {
            let memsw = self.memsw.get(memcg as usize).max;
            return max.max(memsw).min(PAGE_COUNTER_MAX);
        }
        if self.memcg_swappiness(memcg) > 0 {
            let swap_max = self
                .swap_counter
                .get(memcg as usize)
                .max
                .min(self.total_swap_pages);
            return max.saturating_add(swap_max).min(PAGE_COUNTER_MAX);
        }
        max
    }

    /// mem_cgroup_swappiness(): v2 uses vm.swappiness everywhere; v1 the group's own value.
    pub fn memcg_swappiness(&self, memcg: MemcgId) -> u32 {
        if !self.is_v1() || memcg == ROOT_MEMCG {
            return self.vm_swappiness;
        }
        self.memcg(memcg).swappiness
    }

    // ---------------------------------------------------------------- memory.high

    fn calculate_overage(usage: u64, high: u64) -> u64 {
        if usage <= high {
            return 0;
        }
        let high = high.max(1);
        (((usage - high) as u128) << MEMCG_DELAY_PRECISION_SHIFT) as u64 / high
    }

    fn max_overage(&self, memcg: MemcgId, swap: bool) -> u64 {
        let mut best = 0;
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            if m == ROOT_MEMCG {
                break;
            }
            let c = if swap {
                self.swap_counter.get(m as usize)
            } else {
                self.memory.get(m as usize)
            };
            best = best.max(Self::calculate_overage(c.usage, c.high));
            cur = self.memcg(m).parent;
        }
        best
    }

    /// calculate_high_delay(), in jiffies.
    pub fn calculate_high_delay(nr_pages: u64, max_overage: u64) -> u64 {
        if max_overage == 0 {
            return 0;
        }
        let p = (max_overage as u128 * max_overage as u128 * HZ as u128)
            >> (MEMCG_DELAY_PRECISION_SHIFT + MEMCG_DELAY_SCALING_SHIFT);
        (p * nr_pages as u128 / MEMCG_CHARGE_BATCH as u128) as u64
    }

    /// reclaim_high(): reclaim from every ancestor (below root) that is over its high.
    fn reclaim_high(&mut self, memcg: MemcgId, nr: u64) -> u64 {
        let mut reclaimed = 0;
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            if m == ROOT_MEMCG {
                break;
            }
            let c = self.memory.get(m as usize);
            if c.usage > c.high {
                self.memcg_memory_event(m, MemcgEvent::High);
                reclaimed += self.try_to_free_mem_cgroup_pages(m, nr, true, false, None);
            }
            let s = self.swap_counter.get(m as usize);
            if s.usage > s.high {
                self.memcg_memory_event(m, MemcgEvent::SwapHigh);
            }
            cur = self.memcg(m).parent;
        }
        reclaimed
    }

    /// mem_cgroup_handle_over_high(): reclaim, then sleep the penalty in virtual time.
    pub fn mem_cgroup_handle_over_high(&mut self, pid: Pid) {
        let nr_pages = std::mem::take(&mut self.task_mut(pid).nr_pages_over_high);
        if nr_pages == 0 {
            return;
        }
        let memcg = self.task(pid).memcg;
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        let mut in_retry = false;
        for _ in 0..1000 {
            if self.task(pid).killed {
                return;
            }
            let nr = if in_retry {
                crate::vmscan::SWAP_CLUSTER_MAX
            } else {
                nr_pages
            };
            let reclaimed = self.reclaim_high(memcg, nr);
            let mut penalty = Self::calculate_high_delay(nr_pages, self.max_overage(memcg, false));
            penalty += Self::calculate_high_delay(nr_pages, self.max_overage(memcg, true));
            penalty = penalty.min(MEMCG_MAX_HIGH_DELAY_JIFFIES);
            if penalty <= HZ / 100 {
                return;
            }
            if reclaimed > 0 || nr_retries > 0 {
                if reclaimed == 0 {
                    nr_retries -= 1;
                }
                in_retry = true;
                continue;
            }
            let ns = penalty * NS_PER_JIFFY;
            self.task_mut(pid).stats.throttled_ns += ns;
            // mem_cgroup_handle_over_high() sleeps inside psi_memstall_enter().
            self.spend_wait(ns, crate::psi::Stall::Memstall);
            return;
        }
    }

    // ---------------------------------------------------------------- control files

    /// memory.max write (v2): set the limit, reclaim down to it, then OOM-kill until it fits.
    pub fn write_memory_max(&mut self, memcg: MemcgId, max: u64) {
        self.memory.get_mut(memcg as usize).max = max;
        self.memcg_wb_domain_size_changed(memcg);
        let mut nr_reclaims = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        for _ in 0..100_000u32 {
            let usage = self.memory.get(memcg as usize).usage;
            if usage <= max {
                break;
            }
            if !drained {
                self.drain_all_stock(memcg);
                drained = true;
                continue;
            }
            if nr_reclaims > 0 {
                if self.try_to_free_mem_cgroup_pages(memcg, usage - max, true, false, None) == 0 {
                    nr_reclaims -= 1;
                }
                continue;
            }
            self.memcg_memory_event(memcg, MemcgEvent::Oom);
            if !self.mem_cgroup_out_of_memory(memcg, 0) {
                break;
            }
        }
        self.after_step_check();
    }

    /// memory.high write: set, then reclaim down to it (no OOM).
    pub fn write_memory_high(&mut self, memcg: MemcgId, high: u64) {
        self.memory.get_mut(memcg as usize).high = high;
        self.memcg_wb_domain_size_changed(memcg);
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        for _ in 0..100_000u32 {
            let usage = self.memory.get(memcg as usize).usage;
            if usage <= high {
                break;
            }
            if !drained {
                self.drain_all_stock(memcg);
                drained = true;
                continue;
            }
            let reclaimed =
                self.try_to_free_mem_cgroup_pages(memcg, usage - high, true, false, None);
            if reclaimed == 0 {
                if nr_retries == 0 {
                    break;
                }
                nr_retries -= 1;
            }
        }
        self.after_step_check();
    }

    /// memory.reclaim write: reclaim `nr` pages or fail with EAGAIN.
    pub fn write_memory_reclaim(
        &mut self,
        memcg: MemcgId,
        nr: u64,
        swappiness: Option<u32>,
    ) -> Result<(), Errno> {
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        let mut reclaimed_total = 0u64;
        let mut result = Ok(());
        for _ in 0..1_000_000u32 {
            if reclaimed_total >= nr {
                break;
            }
            let r = self.try_to_free_mem_cgroup_pages(
                memcg,
                nr - reclaimed_total,
                true,
                true,
                swappiness,
            );
            if r == 0 {
                if nr_retries == 0 {
                    result = Err(Errno::EAGAIN);
                    break;
                }
                nr_retries -= 1;
            }
            reclaimed_total += r;
        }
        self.after_step_check();
        result
    }

    /// mem_cgroup_resize_max() (v1 limit_in_bytes and memsw.limit_in_bytes).
    pub fn resize_max_v1(&mut self, memcg: MemcgId, max: u64, memsw: bool) -> Result<(), Errno> {
        let mut drained = false;
        let mut result = Err(Errno::EBUSY);
        for _ in 0..1_000_000u32 {
            let invariant = if memsw {
                max >= self.memory.get(memcg as usize).max
            } else {
                max <= self.memsw.get(memcg as usize).max
            };
            if !invariant {
                result = Err(Errno::EINVAL);
                break;
            }
            let ok = if memsw {
                self.memsw.set_max_checked(memcg as usize, max)
            } else {
                self.memory.set_max_checked(memcg as usize, max)
            };
            if ok {
                result = Ok(());
                break;
            }
            if !drained {
                self.drain_all_stock(memcg);
                drained = true;
                continue;
            }
            if self.try_to_free_mem_cgroup_pages(memcg, 1, !memsw, false, None) == 0 {
                result = Err(Errno::EBUSY);
                break;
            }
        }
        self.after_step_check();
        result
    }

    /// memory.force_empty (v1): reclaim as much as possible.
    pub fn force_empty(&mut self, memcg: MemcgId) {
        self.drain_all_stock(memcg);
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        for _ in 0..10_000_000u32 {
            if nr_retries == 0 || self.memory.get(memcg as usize).usage == 0 {
                break;
            }
            if self.try_to_free_mem_cgroup_pages(memcg, 1, true, false, None) == 0 {
                nr_retries -= 1;
            }
        }
        self.after_step_check();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MachineConfig;

    fn machine() -> Machine {
        let mut m = Machine::new(MachineConfig::default()).unwrap();
        m.check_invariants = true;
        m
    }

    #[test]
    fn iterator_visits_preorder_and_skips_subtrees() {
        let mut m = machine();
        // root(1) -> a -> {a1, a2}, b -> {b1}
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let b = m.memcg_create(ROOT_MEMCG).unwrap();
        let a1 = m.memcg_create(a).unwrap();
        let a2 = m.memcg_create(a).unwrap();
        let b1 = m.memcg_create(b).unwrap();
        let mut out = Vec::new();
        let looked = m.memcg_walk(ROOT_MEMCG, |_, _| IterVisit::Visit, &mut out);
        assert_eq!(out, vec![ROOT_MEMCG, a, a1, a2, b, b1]);
        assert_eq!(looked, 6);
        // SkipTree on `a` never looks at a1/a2; Skip on `b` still visits b1.
        let looked = m.memcg_walk(
            ROOT_MEMCG,
            |_, id| {
                if id == a {
                    IterVisit::SkipTree
                } else if id == b {
                    IterVisit::Skip
                } else {
                    IterVisit::Visit
                }
            },
            &mut out,
        );
        assert_eq!(out, vec![ROOT_MEMCG, b1]);
        assert_eq!(looked, 4);
        // A walk rooted below the top stays in its subtree.
        m.memcg_walk(a, |_, _| IterVisit::Visit, &mut out);
        assert_eq!(out, vec![a, a1, a2]);
    }

    #[test]
    fn a_new_memcg_takes_the_lowest_free_id() {
        let mut m = machine();
        let ids: Vec<MemcgId> = (0..4)
            .map(|_| m.memcg_create(ROOT_MEMCG).unwrap())
            .collect();
        // Freed in the order 2, 0, 3: idr_alloc() hands out the lowest again, not the
        // last freed.
        for i in [2, 0, 3] {
            m.memcg_offline(ids[i]).unwrap();
            m.release_dying_memcgs();
            assert!(!m.memcg_topo.alive(ids[i]));
        }
        assert_eq!(m.memcg_create(ROOT_MEMCG).unwrap(), ids[0]);
        assert_eq!(m.memcg_create(ROOT_MEMCG).unwrap(), ids[2]);
        assert_eq!(m.memcg_create(ROOT_MEMCG).unwrap(), ids[3]);
        assert_eq!(m.memcg_create(ROOT_MEMCG).unwrap(), ids[3] + 1);
    }

    #[test]
    fn charge_uses_the_stock_and_drains_it() {
        let mut m = machine();
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        m.try_charge(a, 1).unwrap();
        // One page charged, 63 cached in CPU 0's stock.
        assert_eq!(m.memory.get(a as usize).usage, MEMCG_CHARGE_BATCH);
        assert_eq!(m.stock_pages(a), MEMCG_CHARGE_BATCH - 1);
        m.try_charge(a, 1).unwrap();
        assert_eq!(m.memory.get(a as usize).usage, MEMCG_CHARGE_BATCH);
        m.drain_all_stock(ROOT_MEMCG);
        assert_eq!(m.memory.get(a as usize).usage, 2);
        assert_eq!(m.memory.get(ROOT_MEMCG as usize).usage, 2);
    }

    #[test]
    fn uncharge_list_batches_each_run_of_one_memcg() {
        let mut m = machine();
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let b = m.memcg_create(ROOT_MEMCG).unwrap();
        m.try_charge(a, 10).unwrap();
        m.try_charge(b, 10).unwrap();
        m.drain_all_stock(ROOT_MEMCG);
        let events = |m: &Machine, id: MemcgId| m.memcgs[id as usize].page_events[0].nr;
        let (ea, eb) = (events(&m, a), events(&m, b));
        // Two runs of a (a swapped-out page between them holds no charge), then one of b.
        let owners = [
            Some(a),
            Some(a),
            Some(a),
            None,
            Some(a),
            Some(a),
            Some(b),
            Some(b),
            Some(b),
            Some(b),
            None,
        ];
        m.mem_cgroup_uncharge_list(owners);
        assert_eq!(m.memory.get(a as usize).usage, 5);
        assert_eq!(m.memory.get(b as usize).usage, 6);
        assert_eq!(m.memory.get(ROOT_MEMCG as usize).usage, 11);
        m.stats_flush_all();
        assert_eq!(m.stat_view(a, Stat::Pgpgout), 5);
        assert_eq!(m.stat_view(b, Stat::Pgpgout), 4);
        assert_eq!(events(&m, a) - ea, 5);
        assert_eq!(events(&m, b) - eb, 4);
        // Nothing charged: nothing changes.
        m.mem_cgroup_uncharge_list([None, None]);
        assert_eq!(m.memory.get(a as usize).usage, 5);
    }

    #[test]
    fn high_delay_matches_the_kernel_table() {
        // high = 100M, 64 pages over: 101M -> 6 jiffies, 105M -> ~160, 110M -> ~640, clamp 2 s.
        let high = 25600u64;
        let d = |mb: u64| {
            let usage = mb * 256;
            let ov = Machine::calculate_overage(usage, high);
            Machine::calculate_high_delay(MEMCG_CHARGE_BATCH, ov)
        };
        assert_eq!(d(101), 6);
        assert!((155..=165).contains(&d(105)), "{}", d(105));
        assert!((630..=645).contains(&d(110)), "{}", d(110));
        assert!(d(118) >= 2000);
        assert_eq!(d(100), 0);
    }

    /// A removed group keeps its pages as a dying group, and is freed with its last page; a
    /// dying parent goes after its last dying child.
    #[test]
    fn dying_group_is_freed_with_its_last_page() {
        let mut m = machine();
        m.check_invariants = false; // pages are charged without frames here
        let p = m.memcg_create(ROOT_MEMCG).unwrap();
        let a = m.memcg_create(p).unwrap();
        m.memory.try_charge(a as usize, 3).unwrap();
        m.memcg_offline(a).unwrap();
        m.release_dying_memcgs();
        assert!(m.memcg(a).dying && !m.memcg(a).online);
        assert_eq!(m.nr_dying_descendants(p), 1);
        assert_eq!(m.nr_dying_descendants(ROOT_MEMCG), 1);
        // The parent can go while its child is dying, and waits for it.
        m.memcg_offline(p).unwrap();
        m.release_dying_memcgs();
        assert_eq!(m.nr_dying_descendants(ROOT_MEMCG), 2);
        for left in [2u64, 1, 0] {
            m.uncharge_page(a);
            m.release_dying_memcgs();
            assert_eq!(m.memcg_alive(a), left > 0);
        }
        assert!(!m.memcg_alive(p));
        assert_eq!(m.nr_dying_descendants(ROOT_MEMCG), 0);
        // An online child keeps its parent from going.
        let q = m.memcg_create(ROOT_MEMCG).unwrap();
        m.memcg_create(q).unwrap();
        assert_eq!(m.memcg_offline(q), Err(Errno::EBUSY));
    }

    /// The packed tree follows every mkdir, rmdir and free, and the invariant check notices
    /// when it and the memcg structs part.
    #[test]
    fn packed_topology_follows_the_tree_and_the_check_sees_a_mismatch() {
        let mut m = machine();
        m.check_invariants = false; // pages are charged without frames here
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let b = m.memcg_create(ROOT_MEMCG).unwrap();
        let a1 = m.memcg_create(a).unwrap();
        let a2 = m.memcg_create(a).unwrap();
        let t = &m.memcg_topo;
        assert_eq!(t.first_child(ROOT_MEMCG), Some(a));
        assert_eq!(t.next_sibling(a), Some(b));
        assert_eq!((t.first_child(a), t.next_sibling(a1)), (Some(a1), Some(a2)));
        assert_eq!((t.parent(a2), t.next_sibling(a2)), (Some(a), None));
        m.check_memcg_topology().unwrap();
        // a1 goes dying (a page is left), then is freed with its page.
        m.memory.try_charge(a1 as usize, 1).unwrap();
        m.memcg_offline(a1).unwrap();
        m.release_dying_memcgs();
        assert!(m.memcg_alive(a1) && !m.memcg_topo.online(a1));
        m.check_memcg_topology().unwrap();
        m.uncharge_page(a1);
        m.release_dying_memcgs();
        assert!(!m.memcg_alive(a1));
        assert_eq!(m.memcg_topo.first_child(a), Some(a2));
        m.check_memcg_topology().unwrap();
        // The freed id comes back as a new last child of b.
        let b1 = m.memcg_create(b).unwrap();
        assert_eq!(b1, a1);
        assert_eq!(m.memcg_topo.parent(b1), Some(b));
        m.check_memcg_topology().unwrap();
        let mut out = Vec::new();
        m.memcg_walk(ROOT_MEMCG, |_, _| IterVisit::Visit, &mut out);
        assert_eq!(out, vec![ROOT_MEMCG, a, a2, b, b1]);
        // A middle and then a last sibling leave the doubly linked list; a new group goes
        // after the new last one.
        let b2 = m.memcg_create(b).unwrap();
        let b3 = m.memcg_create(b).unwrap();
        let b4 = m.memcg_create(b).unwrap();
        for x in [b3, b4] {
            m.memcg_offline(x).unwrap();
            m.release_dying_memcgs();
            m.check_memcg_topology().unwrap();
        }
        assert_eq!(m.memcg(b).last_child, Some(b2));
        assert_eq!(m.memcg(b2).prev_sibling, Some(b1));
        let b5 = m.memcg_create(b).unwrap();
        m.memcg_walk(b, |_, _| IterVisit::Visit, &mut out);
        assert_eq!(out, vec![b, b1, b2, b5]);
        m.memcg_offline(b1).unwrap();
        m.release_dying_memcgs();
        assert_eq!(m.memcg_topo.first_child(b), Some(b2));
        assert_eq!(m.memcg(b2).prev_sibling, None);
        m.check_memcg_topology().unwrap();
        // A link changed in the struct alone is caught.
        m.memcg_mut(a2).next_sibling = Some(b);
        let e = m.check_memcg_topology().unwrap_err();
        assert!(e.contains(&format!("memcg {a2}: packed topology")), "{e}");
    }

    /// The anon flag is set in a group and its ancestors by the first active-anon update,
    /// and the age walk may skip a group without it: its anon list is never low.
    #[test]
    fn anon_flag_marks_the_updated_group_and_its_ancestors() {
        let mut m = machine();
        let a = m.memcg_create(ROOT_MEMCG).unwrap();
        let a1 = m.memcg_create(a).unwrap();
        let b = m.memcg_create(ROOT_MEMCG).unwrap();
        assert!(!m.memcg_topo.anon_seen(a1) && !m.memcg_topo.anon_seen(ROOT_MEMCG));
        m.mod_stat(a1, Stat::InactiveAnon, 1);
        assert!(
            !m.memcg_topo.anon_seen(a1),
            "only active anon makes a list low"
        );
        m.mod_stat(a1, Stat::ActiveAnon, 1);
        for x in [a1, a, ROOT_MEMCG] {
            assert!(m.memcg_topo.anon_seen(x));
        }
        assert!(!m.memcg_topo.anon_seen(b));
        assert!(!m.inactive_is_low(b, false));
        m.mod_stat(a1, Stat::ActiveAnon, -1);
        m.mod_stat(a1, Stat::InactiveAnon, -1);
        assert!(m.memcg_topo.anon_seen(a1), "the flag stays");
    }
}
