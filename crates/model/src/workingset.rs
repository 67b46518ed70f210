//! Workingset refault detection: mm/workingset.c (5.9+ semantics, anon and file).
//!
//! Each lruvec has an eviction clock, `nonresident_age`, aged on evictions and activations at
//! the lruvec and every ancestor. An evicted page leaves a shadow entry (in the file's page
//! slot, or in the swap slot for anon) recording the reclaim target's memcg, the clock and the
//! PG_workingset bit. On refault the distance `clock now − clock at eviction` is compared with
//! the workingset size of the eviction memcg; a page that would have stayed resident with that
//! much more memory is activated at once.

use crate::machine::Machine;
use crate::memcontrol::MemcgId;
use crate::page_cgroup::{pf, Pfn};
use crate::stat::Stat;
use crate::swap::NID0;

/// Shadow entries: bit 0 = workingset, bits 1..17 = memcg id, bits 17..61 = eviction clock,
/// bit 63 = tag (bits 61 and 62 stay free for the page cache's own use).
/// The value 0 never is a shadow (eviction clocks start at 0 but the tag bit 63 is set).
const SHADOW_TAG: u64 = 1 << 63;
pub const EVICTION_MASK: u64 = (1 << 44) - 1;

pub fn pack_shadow(memcg: MemcgId, eviction: u64, workingset: bool) -> u64 {
    SHADOW_TAG | ((eviction & EVICTION_MASK) << 17) | ((memcg as u64) << 1) | workingset as u64
}

pub fn unpack_shadow(s: u64) -> (MemcgId, u64, bool) {
    debug_assert!(s & SHADOW_TAG != 0);
    (
        ((s >> 1) & 0xffff) as MemcgId,
        (s >> 17) & EVICTION_MASK,
        s & 1 != 0,
    )
}

impl Machine {
    /// workingset_age_nonresident(): age the clock of a lruvec and all its ancestors.
    pub fn workingset_age_nonresident(&mut self, memcg: MemcgId, nr: u64) {
        let mut cur = Some(memcg);
        while let Some(m) = cur {
            let mc = &mut self.memcgs[m as usize];
            mc.lruvec[NID0].nonresident_age += nr;
            cur = mc.parent;
        }
    }

    /// workingset_eviction(): the shadow entry for a page reclaimed on behalf of `target`.
    pub fn workingset_eviction(&mut self, pfn: Pfn, target: MemcgId) -> u64 {
        if self.lru_gen_enabled() {
            return self.lru_gen_eviction(pfn);
        }
        let eviction = self.memcg(target).lruvec[NID0].nonresident_age;
        self.workingset_age_nonresident(target, 1);
        pack_shadow(target, eviction, self.frames.test(pfn, pf::WORKINGSET))
    }

    /// workingset_refault(): a page is brought back where a shadow entry was found. The page
    /// is already charged to its new memcg and not yet on an LRU.
    pub fn workingset_refault(&mut self, pfn: Pfn, shadow: u64) {
        if self.lru_gen_enabled() {
            return self.lru_gen_refault(pfn, shadow);
        }
        let file = !self.frames.test(pfn, pf::SWAPBACKED);
        let (evict_memcg, eviction, workingset) = unpack_shadow(shadow);
        let em = evict_memcg as usize;
        if em >= self.memcgs.len() || !self.memcgs[em].online {
            return;
        }
        let refault = self.memcg(evict_memcg).lruvec[NID0].nonresident_age;
        let distance = refault.wrapping_sub(eviction) & EVICTION_MASK;
        let memcg = self.frames.memcg(pfn);
        self.mod_stat(
            memcg,
            if file {
                Stat::WorkingsetRefaultFile
            } else {
                Stat::WorkingsetRefaultAnon
            },
            1,
        );
        self.mem_cgroup_flush_stats_delayed();
        let mut ws = self.stat_view(evict_memcg, Stat::ActiveFile);
        if !file {
            ws += self.stat_view(evict_memcg, Stat::InactiveFile);
        }
        if self.mem_cgroup_get_nr_swap_pages(evict_memcg) > 0 {
            ws += self.stat_view(evict_memcg, Stat::ActiveAnon);
            if file {
                ws += self.stat_view(evict_memcg, Stat::InactiveAnon);
            }
        }
        if distance > ws {
            return;
        }
        self.frames.set(pfn, pf::ACTIVE);
        self.workingset_age_nonresident(memcg, 1);
        self.mod_stat(
            memcg,
            if file {
                Stat::WorkingsetActivateFile
            } else {
                Stat::WorkingsetActivateAnon
            },
            1,
        );
        if workingset {
            self.frames.set(pfn, pf::WORKINGSET);
            self.lru_note_cost(memcg, file, 1, 0);
            self.mod_stat(
                memcg,
                if file {
                    Stat::WorkingsetRestoreFile
                } else {
                    Stat::WorkingsetRestoreAnon
                },
                1,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn shadow_roundtrip() {
        let s = pack_shadow(77, 123_456_789, true);
        assert_eq!(unpack_shadow(s), (77, 123_456_789, true));
        let s = pack_shadow(1, 0, false);
        assert_ne!(s, 0);
        assert_eq!(unpack_shadow(s), (1, 0, false));
    }
}
