//! The marks of a mapping's page-cache xarray (lib/xarray.c: xa_set_mark(), xa_clear_mark(),
//! xas_find_marked()) that writeback uses to find pages without scanning the cache:
//! PAGECACHE_TAG_DIRTY, set when a page is dirtied (__folio_mark_dirty()) and cleared when
//! it is cleaned for I/O (folio_clear_dirty_for_io()) or truncated
//! (folio_account_cleaned()), and PAGECACHE_TAG_WRITEBACK, set by __folio_start_writeback()
//! and cleared by __folio_end_writeback() (truncation ends a page's writeback in the model).
//!
//! The kernel keeps a mark bit per slot in each node and, in every node above, a bit per
//! child saying whether anything below carries the mark, so that a search from an index
//! skips whole unmarked subtrees. [`XaMarks`] has the same shape, in flat arrays: one word
//! of each mark per 64 indices (a leaf node), and above them summary levels of 64 bits a
//! word. The flusher (write_cache_pages() in WB_SYNC_NONE mode) looks for dirty pages that
//! are not under writeback, which it skips; the summary bits are kept for that search
//! directly (a leaf's bit is set while it holds such a page), so a search from any index
//! costs O(log64 n) and never revisits pages it skips.
//!
//! PAGECACHE_TAG_TOWRITE is not kept: it serves data-integrity writeback (sync, fsync:
//! tag_pages_for_writeback()), which the model does not have.

/// A mark of a page-cache entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// PAGECACHE_TAG_DIRTY.
    Dirty = 0,
    /// PAGECACHE_TAG_WRITEBACK.
    Writeback = 1,
}

/// Bits per word, and its shift.
const SHIFT: u32 = 6;
const BITS: u64 = 1 << SHIFT;

/// The dirty and writeback marks of one mapping, with summary levels for the search of dirty
/// pages not under writeback. Storage grows with the largest index ever marked and is given
/// back by [`XaMarks::truncate`].
#[derive(Clone, Debug, Default)]
pub struct XaMarks {
    /// Per 64 indices: the Dirty and Writeback words.
    leaf: Vec<[u64; 2]>,
    /// Summary levels, bottom first: bit j of `sum[0]` is set iff leaf word j holds an index
    /// marked Dirty and not Writeback; bit j of `sum[k]` iff word j of `sum[k - 1]` is not 0.
    /// The top level has at most one word.
    sum: Vec<Vec<u64>>,
}

/// The leaf word of `idx` and its bit.
#[inline]
fn split(idx: u64) -> (usize, u64) {
    ((idx >> SHIFT) as usize, 1 << (idx & (BITS - 1)))
}

impl XaMarks {
    /// Is `idx` marked?
    pub fn get(&self, idx: u64, mark: Mark) -> bool {
        let (w, bit) = split(idx);
        self.leaf
            .get(w)
            .is_some_and(|l| l[mark as usize] & bit != 0)
    }

    /// xa_set_mark().
    #[inline]
    pub fn set(&mut self, idx: u64, mark: Mark) {
        let (w, bit) = split(idx);
        if w >= self.leaf.len() {
            self.grow(w + 1);
        }
        let l = &mut self.leaf[w];
        let before = l[0] & !l[1] != 0;
        l[mark as usize] |= bit;
        let after = l[0] & !l[1] != 0;
        if before != after {
            self.summarise(w, after);
        }
    }

    /// xa_clear_mark().
    #[inline]
    pub fn clear(&mut self, idx: u64, mark: Mark) {
        let (w, bit) = split(idx);
        let Some(l) = self.leaf.get_mut(w) else {
            return;
        };
        let before = l[0] & !l[1] != 0;
        l[mark as usize] &= !bit;
        let after = l[0] & !l[1] != 0;
        if before != after {
            self.summarise(w, after);
        }
    }

    /// The first index at or after `from` marked Dirty and not Writeback: the next page
    /// write_cache_pages() submits.
    pub fn next_dirty_idle(&self, from: u64) -> Option<u64> {
        let (w, _) = split(from);
        let l = self.leaf.get(w)?;
        let bits = l[0] & !l[1] & (!0u64 << (from & (BITS - 1)));
        if bits != 0 {
            return Some(((w as u64) << SHIFT) | u64::from(bits.trailing_zeros()));
        }
        // Up the summaries until a word has a set bit past the position, then down its
        // first set bits.
        let mut pos = w + 1;
        let mut level = 0;
        loop {
            let words = self.sum.get(level)?;
            let wi = pos >> SHIFT;
            let bits = words.get(wi)? & (!0u64 << (pos as u64 & (BITS - 1)));
            if bits != 0 {
                pos = (wi << SHIFT) | bits.trailing_zeros() as usize;
                break;
            }
            pos = wi + 1;
            level += 1;
        }
        while level > 0 {
            level -= 1;
            pos = (pos << SHIFT) | self.sum[level][pos].trailing_zeros() as usize;
        }
        let l = self.leaf[pos];
        let bits = l[0] & !l[1];
        debug_assert!(bits != 0, "a summary bit without a marked page");
        Some(((pos as u64) << SHIFT) | u64::from(bits.trailing_zeros()))
    }

    /// Does any index carry `mark`?
    pub fn any(&self, mark: Mark) -> bool {
        self.leaf.iter().any(|l| l[mark as usize] != 0)
    }

    /// Does any index at or past `from` carry a mark?
    pub fn any_from(&self, from: u64) -> bool {
        let (w, _) = split(from);
        let Some(l) = self.leaf.get(w) else {
            return false;
        };
        let mask = !0u64 << (from & (BITS - 1));
        (l[0] | l[1]) & mask != 0 || self.leaf[w + 1..].iter().any(|l| l[0] | l[1] != 0)
    }

    /// Drop the storage of indices at and past `len`, which must carry no mark (truncation
    /// has cleared them).
    pub fn truncate(&mut self, len: u64) {
        let words = len.div_ceil(BITS) as usize;
        if words >= self.leaf.len() {
            return;
        }
        debug_assert!(
            self.leaf[words..].iter().all(|l| l[0] | l[1] == 0),
            "marks past the end of the file"
        );
        self.leaf.truncate(words);
        self.leaf.shrink_to_fit();
        let mut n = words;
        for s in &mut self.sum {
            n = n.div_ceil(BITS as usize);
            s.truncate(n);
            s.shrink_to_fit();
        }
        while self.sum.len() > 1 && self.sum[self.sum.len() - 1].len() <= 1 {
            if self.sum[self.sum.len() - 2].len() > 1 {
                break;
            }
            self.sum.pop();
        }
    }

    /// Make room for `words` leaf words, with summary levels up to a single top word.
    fn grow(&mut self, words: usize) {
        let words = words.next_power_of_two().max(self.leaf.len());
        self.leaf.resize(words, [0, 0]);
        let mut n = words;
        let mut level = 0;
        loop {
            n = n.div_ceil(BITS as usize);
            if self.sum.len() == level {
                // A new top level: its one word summarises the old top.
                let below_nonzero = match level {
                    0 => false,
                    _ => self.sum[level - 1].iter().any(|&x| x != 0),
                };
                self.sum.push(vec![u64::from(below_nonzero)]);
            }
            if self.sum[level].len() < n {
                self.sum[level].resize(n, 0);
            }
            if n <= 1 {
                break;
            }
            level += 1;
        }
    }

    /// Leaf word `w` came to hold a page to write (`on`) or stopped holding one: carry it up
    /// the summaries.
    fn summarise(&mut self, w: usize, on: bool) {
        let mut pos = w;
        for s in &mut self.sum {
            let word = &mut s[pos >> SHIFT];
            let bit = 1u64 << (pos as u64 & (BITS - 1));
            let was = *word != 0;
            if on {
                *word |= bit;
            } else {
                *word &= !bit;
            }
            if (*word != 0) == was {
                return;
            }
            pos >>= SHIFT;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Mark, XaMarks};
    use proptest::prelude::*;

    /// The reference: a mark per index in a plain array, searched one index at a time.
    #[derive(Default)]
    struct Naive {
        dirty: Vec<bool>,
        writeback: Vec<bool>,
    }

    impl Naive {
        fn v(&mut self, mark: Mark) -> &mut Vec<bool> {
            match mark {
                Mark::Dirty => &mut self.dirty,
                Mark::Writeback => &mut self.writeback,
            }
        }
        fn set(&mut self, idx: u64, mark: Mark, on: bool) {
            let v = self.v(mark);
            if v.len() <= idx as usize {
                v.resize(idx as usize + 1, false);
            }
            v[idx as usize] = on;
        }
        fn get(&self, idx: u64, mark: Mark) -> bool {
            let v = match mark {
                Mark::Dirty => &self.dirty,
                Mark::Writeback => &self.writeback,
            };
            v.get(idx as usize).copied().unwrap_or(false)
        }
        fn next_dirty_idle(&self, from: u64) -> Option<u64> {
            (from..self.dirty.len() as u64)
                .find(|&i| self.get(i, Mark::Dirty) && !self.get(i, Mark::Writeback))
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Set(u64, Mark),
        Clear(u64, Mark),
        Next(u64),
        Truncate(u64),
    }

    fn mark() -> impl Strategy<Value = Mark> {
        prop_oneof![Just(Mark::Dirty), Just(Mark::Writeback)]
    }

    /// Indices clustered in a few ranges (so that words fill up and empty) and spread up to
    /// past 64^3 (so that several summary levels exist).
    fn index() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..200, 4000u64..4200, 262_000u64..262_300, 0u64..400_000]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (index(), mark()).prop_map(|(i, m)| Op::Set(i, m)),
            3 => (index(), mark()).prop_map(|(i, m)| Op::Clear(i, m)),
            3 => index().prop_map(Op::Next),
            1 => index().prop_map(Op::Truncate),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Every search finds what a scan of every index finds, after any sequence of
        /// marks set and cleared and truncations (which clear what lies past the end first,
        /// as truncation of the cache does).
        #[test]
        fn marks_agree_with_a_scan(ops in proptest::collection::vec(op(), 1..300)) {
            let mut x = XaMarks::default();
            let mut n = Naive::default();
            for op in ops {
                match op {
                    Op::Set(i, m) => {
                        x.set(i, m);
                        n.set(i, m, true);
                    }
                    Op::Clear(i, m) => {
                        x.clear(i, m);
                        n.set(i, m, false);
                    }
                    Op::Next(from) => {
                        prop_assert_eq!(x.next_dirty_idle(from), n.next_dirty_idle(from));
                    }
                    Op::Truncate(len) => {
                        for m in [Mark::Dirty, Mark::Writeback] {
                            let end = n.v(m).len() as u64;
                            for i in len..end {
                                x.clear(i, m);
                                n.set(i, m, false);
                            }
                        }
                        x.truncate(len);
                    }
                }
                prop_assert_eq!(x.next_dirty_idle(0), n.next_dirty_idle(0));
            }
            // Every index, and the whole walk.
            let end = n.dirty.len().max(n.writeback.len()) as u64 + 70;
            for i in 0..end {
                for m in [Mark::Dirty, Mark::Writeback] {
                    prop_assert_eq!(x.get(i, m), n.get(i, m), "index {} {:?}", i, m);
                }
            }
            let mut from = 0;
            while let Some(i) = n.next_dirty_idle(from) {
                prop_assert_eq!(x.next_dirty_idle(from), Some(i));
                from = i + 1;
            }
            prop_assert_eq!(x.next_dirty_idle(from), None);
        }
    }

    #[test]
    fn the_search_skips_pages_under_writeback_and_crosses_levels() {
        let mut x = XaMarks::default();
        assert_eq!(x.next_dirty_idle(0), None);
        x.set(5, Mark::Dirty);
        x.set(5, Mark::Writeback);
        assert_eq!(x.next_dirty_idle(0), None, "dirty again under writeback");
        x.set(300_000, Mark::Dirty);
        assert_eq!(x.next_dirty_idle(0), Some(300_000));
        assert_eq!(x.next_dirty_idle(300_001), None);
        x.clear(5, Mark::Writeback);
        assert_eq!(x.next_dirty_idle(0), Some(5));
        assert_eq!(x.next_dirty_idle(6), Some(300_000));
        x.clear(5, Mark::Dirty);
        x.clear(300_000, Mark::Dirty);
        assert!(!x.any(Mark::Dirty));
        x.truncate(0);
        assert_eq!(x.next_dirty_idle(0), None);
        x.set(64 * 64 * 64 * 2, Mark::Dirty);
        assert_eq!(x.next_dirty_idle(1), Some(64 * 64 * 64 * 2));
    }
}
