//! Where a frame's owning memcg lives: the three designs of seed 004's thread, chosen by the
//! `page_cgroup` machine key so the simulator can measure what each costs.
//!
//! * [`PcStore::Flat`] — one entry per frame in the flat array preallocated at boot
//!   ([`crate::page_cgroup::PageCgroup::memcg`]): what mm/page_cgroup.c did for FLATMEM from
//!   2.6.28 on, an O(1) lookup with no allocation after boot. The default.
//! * [`PcStore::Radix`] — a radix tree keyed by frame number (lib/radix-tree.c with
//!   RADIX_TREE_MAP_SHIFT 6: 64 slots a node, one level per 6 bits of the key), filled at
//!   charge and emptied at uncharge, its nodes allocated and freed as entries come and go:
//!   the "memcg_move_to_radix_tree" patch that started the thread. A lookup walks one node
//!   per level.
//! * [`PcStore::Section`] — one array per memory section (SECTION_SIZE_BITS 27 on x86-64:
//!   32,768 frames), allocated when a frame of the section is first charged: what the kernel
//!   settled on for SPARSEMEM (page_cgroup in struct mem_section). A lookup is two loads.
//!
//! All three hold the same value for every frame, so a run's output does not depend on the
//! design; only the host's time and memory do. With `Radix` and `Section` the flat array's
//! memcg field stays 0. Simplified: the tree has no tags, no RCU and no lock (the simulator
//! has one thread), and it does not shrink its height when high keys go; a node's slots are
//! 4 bytes (a child's index, or a memcg id in a leaf) where the kernel's are 8-byte pointers
//! to page_cgroup records.

use crate::page_cgroup::Pfn;

/// The `page_cgroup` machine key's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcDesign {
    Flat,
    Radix,
    Section,
}

impl PcDesign {
    pub const ALL: [PcDesign; 3] = [PcDesign::Flat, PcDesign::Radix, PcDesign::Section];

    pub fn name(self) -> &'static str {
        match self {
            PcDesign::Flat => "flat",
            PcDesign::Radix => "radix",
            PcDesign::Section => "section",
        }
    }

    pub fn from_name(name: &str) -> Option<PcDesign> {
        PcDesign::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// RADIX_TREE_MAP_SHIFT.
const MAP_SHIFT: u32 = 6;
const MAP_SIZE: usize = 1 << MAP_SHIFT;
const MAP_MASK: u32 = MAP_SIZE as u32 - 1;
/// No node.
const NO_NODE: u32 = u32::MAX;

/// One node: in a leaf, the memcg id of each of 64 frames (0: none); above, the index of each
/// of 64 children ([`NO_NODE`]: none).
#[derive(Clone)]
struct RadixNode {
    slots: [u32; MAP_SIZE],
    /// Slots in use.
    count: u32,
}

/// A radix tree from frame number to memcg id.
pub struct RadixTree {
    /// Levels below the root, the root included: keys below 64^height fit.
    height: u32,
    root: u32,
    nodes: Vec<RadixNode>,
    /// Freed nodes, reused before the arena grows.
    free: Vec<u32>,
    live: usize,
    /// The most nodes ever live at once.
    peak: usize,
}

impl Default for RadixTree {
    fn default() -> RadixTree {
        RadixTree {
            height: 0,
            root: NO_NODE,
            nodes: Vec::new(),
            free: Vec::new(),
            live: 0,
            peak: 0,
        }
    }
}

impl RadixTree {
    /// Bytes of one node.
    pub const NODE_BYTES: usize = std::mem::size_of::<RadixNode>();

    fn empty_slot(leaf: bool) -> u32 {
        if leaf {
            0
        } else {
            NO_NODE
        }
    }

    fn alloc(&mut self, leaf: bool) -> u32 {
        let node = RadixNode {
            slots: [Self::empty_slot(leaf); MAP_SIZE],
            count: 0,
        };
        self.live += 1;
        self.peak = self.peak.max(self.live);
        match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, i: u32) {
        self.live -= 1;
        self.free.push(i);
    }

    /// Does key `pfn` fit under a root of this height?
    fn fits(height: u32, pfn: Pfn) -> bool {
        height * MAP_SHIFT >= 32 || (pfn as u64) < (1u64 << (height * MAP_SHIFT))
    }

    /// radix_tree_lookup().
    #[inline]
    pub fn get(&self, pfn: Pfn) -> u16 {
        if self.root == NO_NODE || !Self::fits(self.height, pfn) {
            return 0;
        }
        let mut node = self.root;
        for level in (1..self.height).rev() {
            let child =
                self.nodes[node as usize].slots[((pfn >> (level * MAP_SHIFT)) & MAP_MASK) as usize];
            if child == NO_NODE {
                return 0;
            }
            node = child;
        }
        self.nodes[node as usize].slots[(pfn & MAP_MASK) as usize] as u16
    }

    /// radix_tree_insert() (or an update of the entry), growing the tree as needed.
    pub fn insert(&mut self, pfn: Pfn, memcg: u16) {
        debug_assert!(memcg != 0);
        if self.root == NO_NODE {
            self.height = 1;
            self.root = self.alloc(true);
        }
        while !Self::fits(self.height, pfn) {
            // radix_tree_extend(): a new root above the old one.
            let old = self.root;
            let new = self.alloc(false);
            self.nodes[new as usize].slots[0] = old;
            self.nodes[new as usize].count = 1;
            self.root = new;
            self.height += 1;
        }
        let mut node = self.root;
        for level in (1..self.height).rev() {
            let idx = ((pfn >> (level * MAP_SHIFT)) & MAP_MASK) as usize;
            let mut child = self.nodes[node as usize].slots[idx];
            if child == NO_NODE {
                child = self.alloc(level == 1);
                let n = &mut self.nodes[node as usize];
                n.slots[idx] = child;
                n.count += 1;
            }
            node = child;
        }
        let leaf = &mut self.nodes[node as usize];
        let slot = &mut leaf.slots[(pfn & MAP_MASK) as usize];
        if *slot == 0 {
            leaf.count += 1;
        }
        *slot = memcg as u32;
    }

    /// radix_tree_delete(): the entry goes, and every node it leaves empty.
    pub fn delete(&mut self, pfn: Pfn) {
        if self.root == NO_NODE || !Self::fits(self.height, pfn) {
            return;
        }
        // The path from the root: (node, slot index in it), at most 6 levels for 32 bits.
        let mut path = [(NO_NODE, 0usize); 6];
        let mut node = self.root;
        for (depth, level) in (1..self.height).rev().enumerate() {
            let idx = ((pfn >> (level * MAP_SHIFT)) & MAP_MASK) as usize;
            path[depth] = (node, idx);
            let child = self.nodes[node as usize].slots[idx];
            if child == NO_NODE {
                return;
            }
            node = child;
        }
        let leaf = &mut self.nodes[node as usize];
        let slot = &mut leaf.slots[(pfn & MAP_MASK) as usize];
        if *slot == 0 {
            return;
        }
        *slot = 0;
        leaf.count -= 1;
        if leaf.count > 0 {
            return;
        }
        // Free the emptied leaf and every ancestor it empties in turn.
        let mut empty = node;
        for depth in (0..(self.height - 1) as usize).rev() {
            self.release(empty);
            let (parent, idx) = path[depth];
            let p = &mut self.nodes[parent as usize];
            p.slots[idx] = NO_NODE;
            p.count -= 1;
            if p.count > 0 {
                return;
            }
            empty = parent;
        }
        // The root itself is empty.
        self.release(empty);
        self.root = NO_NODE;
        self.height = 0;
    }

    /// Nodes live now.
    pub fn live_nodes(&self) -> usize {
        self.live
    }

    /// The most nodes live at once so far.
    pub fn peak_nodes(&self) -> usize {
        self.peak
    }
}

/// Frames per memory section (SECTION_SIZE_BITS 27 less PAGE_SHIFT 12).
pub const SECTION_FRAMES: usize = 1 << 15;

/// Per-section arrays of memcg ids, each allocated when its section is first charged.
pub struct SectionMap {
    sections: Vec<Option<Box<[u16]>>>,
    allocated: usize,
}

impl SectionMap {
    pub fn new(nr_frames: u32) -> SectionMap {
        let n = (nr_frames as usize).div_ceil(SECTION_FRAMES);
        SectionMap {
            sections: (0..n).map(|_| None).collect(),
            allocated: 0,
        }
    }

    #[inline]
    pub fn get(&self, pfn: Pfn) -> u16 {
        let p = pfn as usize;
        match &self.sections[p / SECTION_FRAMES] {
            Some(s) => s[p % SECTION_FRAMES],
            None => 0,
        }
    }

    #[inline]
    pub fn set(&mut self, pfn: Pfn, memcg: u16) {
        let p = pfn as usize;
        let sec = &mut self.sections[p / SECTION_FRAMES];
        if sec.is_none() {
            if memcg == 0 {
                return;
            }
            *sec = Some(vec![0u16; SECTION_FRAMES].into_boxed_slice());
            self.allocated += 1;
        }
        if let Some(s) = sec {
            s[p % SECTION_FRAMES] = memcg;
        }
    }

    /// Sections with an array.
    pub fn allocated_sections(&self) -> usize {
        self.allocated
    }

    /// Bytes of the section table (one pointer per section) and of the arrays allocated.
    pub fn bytes(&self) -> usize {
        self.sections.len() * std::mem::size_of::<Option<Box<[u16]>>>()
            + self.allocated * SECTION_FRAMES * std::mem::size_of::<u16>()
    }
}

/// The memcg store of the machine's frames, in the design the machine was booted with.
pub enum PcStore {
    /// In the flat per-frame array itself.
    Flat,
    Radix(RadixTree),
    Section(SectionMap),
}

impl PcStore {
    pub fn new(design: PcDesign, nr_frames: u32) -> PcStore {
        match design {
            PcDesign::Flat => PcStore::Flat,
            PcDesign::Radix => PcStore::Radix(RadixTree::default()),
            PcDesign::Section => PcStore::Section(SectionMap::new(nr_frames)),
        }
    }

    pub fn design(&self) -> PcDesign {
        match self {
            PcStore::Flat => PcDesign::Flat,
            PcStore::Radix(_) => PcDesign::Radix,
            PcStore::Section(_) => PcDesign::Section,
        }
    }

    /// Host bytes the design spends on the memcg lookup for `nr_frames` frames: the flat
    /// array's memcg field for every frame, the tree's nodes at their peak, or the section
    /// table and the arrays allocated.
    pub fn bytes(&self, nr_frames: u32) -> usize {
        match self {
            PcStore::Flat => nr_frames as usize * std::mem::size_of::<u16>(),
            PcStore::Radix(t) => t.peak_nodes() * RadixTree::NODE_BYTES,
            PcStore::Section(s) => s.bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_tree_grows_and_frees_its_nodes() {
        let mut t = RadixTree::default();
        assert_eq!(t.get(5), 0);
        t.insert(5, 3);
        assert_eq!((t.get(5), t.height, t.live_nodes()), (3, 1, 1));
        // A key of 2^20 needs 4 levels (64^3 = 2^18 < 2^20 < 2^24): three roots stacked
        // over the old one, and two interior nodes and a leaf on the new key's path.
        t.insert(1 << 20, 7);
        assert_eq!(t.height, 4);
        assert_eq!(t.get(1 << 20), 7);
        assert_eq!(t.get(5), 3);
        assert_eq!(t.live_nodes(), 1 + 3 + 3);
        t.delete(1 << 20);
        assert_eq!(t.get(1 << 20), 0);
        assert_eq!(t.live_nodes(), 4, "the old root's path stays");
        t.delete(5);
        assert_eq!(t.live_nodes(), 0);
        assert_eq!(t.peak_nodes(), 7);
        // Keys up to the top of u32.
        t.insert(u32::MAX - 1, 9);
        assert_eq!(t.get(u32::MAX - 1), 9);
        assert_eq!(t.get(u32::MAX - 2), 0);
    }

    #[test]
    fn sections_are_allocated_on_first_charge() {
        let mut s = SectionMap::new(100_000);
        assert_eq!(s.get(70_000), 0);
        s.set(70_000, 0);
        assert_eq!(s.allocated_sections(), 0, "clearing allocates nothing");
        s.set(70_000, 4);
        assert_eq!((s.get(70_000), s.get(70_001)), (4, 0));
        assert_eq!(s.allocated_sections(), 1);
    }

    proptest! {
        /// Every design answers what a plain map of the same writes answers.
        #[test]
        fn designs_agree_with_a_map(ops in proptest::collection::vec((0u32..300_000, 0u16..4), 1..400)) {
            let mut reference = std::collections::BTreeMap::new();
            let mut t = RadixTree::default();
            let mut s = SectionMap::new(300_000);
            for (pfn, memcg) in ops {
                if memcg == 0 {
                    reference.remove(&pfn);
                    t.delete(pfn);
                } else {
                    reference.insert(pfn, memcg);
                    t.insert(pfn, memcg);
                }
                s.set(pfn, memcg);
                let want = reference.get(&pfn).copied().unwrap_or(0);
                prop_assert_eq!(t.get(pfn), want);
                prop_assert_eq!(s.get(pfn), want);
            }
            for (&pfn, &memcg) in &reference {
                prop_assert_eq!(t.get(pfn), memcg);
                prop_assert_eq!(s.get(pfn), memcg);
            }
            // Every node left holds an entry below it.
            if reference.is_empty() {
                prop_assert_eq!(t.live_nodes(), 0);
            }
        }
    }
}
