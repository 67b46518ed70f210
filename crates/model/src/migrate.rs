//! Page migration: mm/migrate.c (6.1) for compaction's pages — migrate_pages() of pages
//! isolated from their LRU lists to free frames the caller supplies: the new frame takes the
//! old one's flags, owner (mem_cgroup_migrate(): the charge moves, nothing is charged twice)
//! and reverse map; the PTE, the page-cache entry or the swap-cache slot that pointed at the
//! old frame points at the new one (remove_migration_ptes(), folio_migrate_mapping()); the
//! new page goes to the head of its LRU list (putback_lru_page()) and the old frame is freed.
//!
//! What may be isolated (isolate_migratepages_block()): user pages on an LRU list,
//! unevictable ones only while /proc/sys/vm/compact_unevictable_allowed is 1; not the
//! frames of a huge folio (compaction skips compound pages). Simplified: a
//! page under writeback, or a page-cache page of a file with a read in flight, is not
//! isolated (the kernel's MIGRATE_SYNC waits for the writeback and the page lock; its async
//! modes skip such pages); the copy costs no time.

use crate::machine::Machine;
use crate::memory::SWAPCACHE_MAPPING;
use crate::page_cgroup::{pf, Pfn, LRU_NONE, MAPPING_FILE_BIT, NIL, NO_MAPPING};
use crate::stat::lru;

impl Machine {
    /// Whether compaction's migrate scanner may isolate the frame `pfn` (a user page on an
    /// LRU list, not under writeback, whose mapping can be repointed now).
    pub(crate) fn migrate_isolatable(&self, pfn: Pfn, unevictable: bool) -> bool {
        let Some(m) = self.frames.meta.get(pfn as usize) else {
            return false;
        };
        let f = m.pc.flags;
        let l = f & pf::LRU_MASK;
        if l == LRU_NONE || f & (pf::KERNEL | pf::WRITEBACK) != 0 || f & pf::ALLOCATED == 0 {
            return false;
        }
        // A huge folio's frames: isolate_migratepages_block() skips compound pages.
        if l == crate::huge_memory::LRU_TAIL || crate::huge_memory::is_head(&self.frames.meta, pfn)
        {
            return false;
        }
        if l as usize == lru::UNEVICTABLE && !unevictable {
            return false;
        }
        let mapping = m.map.mapping;
        if mapping != NO_MAPPING && mapping != SWAPCACHE_MAPPING && mapping & MAPPING_FILE_BIT != 0
        {
            return self.file_page_settled((mapping & !MAPPING_FILE_BIT) as usize);
        }
        true
    }

    /// Move the isolated page `old` (off its LRU list) to the free frame `new` (off the free
    /// lists, not yet handed out): unmap_and_move() of one page.
    pub(crate) fn migrate_page(&mut self, old: Pfn, new: Pfn) {
        debug_assert_eq!(
            self.frames.lru(old),
            LRU_NONE,
            "migrating a page still on a list"
        );
        let memcg = self.frames.memcg(old);
        let mut m = self.frames.meta[old as usize];
        debug_assert_eq!(self.frames.meta[new as usize].pc.flags & pf::ALLOCATED, 0);
        debug_assert_eq!(self.frames.meta[new as usize].map.index, 0);
        m.pc.prev = NIL;
        m.pc.next = NIL;
        self.frames.meta[new as usize] = m;
        self.frames.set_memcg(new, memcg);
        let map = m.map;
        if map.mapping == SWAPCACHE_MAPPING {
            self.swap.migrate_cache(map.index, old, new);
        } else if map.mapping & MAPPING_FILE_BIT != 0 {
            let f = (map.mapping & !MAPPING_FILE_BIT) as usize;
            self.file_page_migrate(f, map.index, old, new);
        } else if map.mapping != NO_MAPPING {
            if m.pc.flags & pf::ONDISK != 0 {
                if let Some(slot) = self.swap.mapped_slot(old) {
                    self.swap.migrate_cache(slot, old, new);
                }
            }
            let pte = &mut self.vmas.v[map.mapping as usize].ptes[map.index as usize];
            debug_assert_eq!(*pte, old + 1, "an anon page's PTE maps it");
            *pte = new + 1;
        }
        // The old frame leaves every mapping and its owner; free_frame() clears the rest.
        self.frames.meta[old as usize].map.mapping = NO_MAPPING;
        self.free_frame(old);
        self.lru_add(new);
    }
}
