//! Hierarchical page counters: mm/page_counter.c.
//!
//! One arena holds a counter per memcg id; each counter's parent is the same kind of counter
//! of the parent memcg. Implements try_charge (check max at every level, back out on failure,
//! count failcnt at the failing level), charge (no limit check), uncharge/cancel, the
//! watermark and the per-reader local watermark, propagate_protected_usage(), and effective
//! protection exactly as page_counter_calculate_protection()/effective_protection() compute
//! it (memory_recursiveprot optional).

/// PAGE_COUNTER_MAX on 64-bit with 4 KiB pages: LONG_MAX / PAGE_SIZE.
pub const PAGE_COUNTER_MAX: u64 = (i64::MAX as u64) / 4096;

#[derive(Clone, Debug)]
pub struct PageCounter {
    pub usage: u64,
    pub max: u64,
    pub high: u64,
    pub low: u64,
    pub min: u64,
    pub emin: u64,
    pub elow: u64,
    pub min_usage: u64,
    pub low_usage: u64,
    pub children_min_usage: u64,
    pub children_low_usage: u64,
    pub watermark: u64,
    pub local_watermark: u64,
    pub failcnt: u64,
    pub parent: Option<usize>,
    /// Only the memory counter propagates protected usage (protection_support).
    pub protection_support: bool,
}

impl PageCounter {
    pub fn new(parent: Option<usize>, protection_support: bool) -> PageCounter {
        PageCounter {
            usage: 0,
            max: PAGE_COUNTER_MAX,
            high: PAGE_COUNTER_MAX,
            low: 0,
            min: 0,
            emin: 0,
            elow: 0,
            min_usage: 0,
            low_usage: 0,
            children_min_usage: 0,
            children_low_usage: 0,
            watermark: 0,
            local_watermark: 0,
            failcnt: 0,
            parent,
            protection_support,
        }
    }
}

/// An arena of counters indexed by memcg id.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub c: Vec<PageCounter>,
    /// Some counter's min or low was set above 0 (sticky). Until then every effective
    /// protection is 0, and page_counter_calculate_protection() computes 0 again.
    ever_protected: bool,
}

impl Counters {
    pub fn ensure(&mut self, idx: usize, parent: Option<usize>, protection_support: bool) {
        while self.c.len() <= idx {
            self.c.push(PageCounter::new(None, protection_support));
        }
        self.c[idx] = PageCounter::new(parent, protection_support);
    }

    #[inline]
    pub fn get(&self, idx: usize) -> &PageCounter {
        &self.c[idx]
    }

    #[inline]
    pub fn get_mut(&mut self, idx: usize) -> &mut PageCounter {
        &mut self.c[idx]
    }

    fn propagate_protected_usage(&mut self, idx: usize, usage: u64) {
        let (parent, min, low, prot) = {
            let c = &self.c[idx];
            (c.parent, c.min, c.low, c.protection_support)
        };
        let Some(p) = parent else { return };
        if !prot {
            return;
        }
        let protected = usage.min(min);
        let old = self.c[idx].min_usage;
        if protected != old {
            self.c[idx].min_usage = protected;
            let pc = &mut self.c[p];
            pc.children_min_usage = pc.children_min_usage + protected - old;
        }
        let protected = usage.min(low);
        let old = self.c[idx].low_usage;
        if protected != old {
            self.c[idx].low_usage = protected;
            let pc = &mut self.c[p];
            pc.children_low_usage = pc.children_low_usage + protected - old;
        }
    }

    fn note_usage(&mut self, idx: usize, new: u64) {
        self.propagate_protected_usage(idx, new);
        let c = &mut self.c[idx];
        if new > c.local_watermark {
            c.local_watermark = new;
            if new > c.watermark {
                c.watermark = new;
            }
        }
    }

    /// page_counter_cancel(): subtract at one level.
    fn cancel(&mut self, idx: usize, nr: u64) {
        let c = &mut self.c[idx];
        debug_assert!(c.usage >= nr, "page_counter underflow");
        let new = c.usage.saturating_sub(nr);
        c.usage = new;
        self.propagate_protected_usage(idx, new);
    }

    /// page_counter_charge(): add at every level without a limit check.
    pub fn charge(&mut self, idx: usize, nr: u64) {
        let mut cur = Some(idx);
        while let Some(i) = cur {
            let new = self.c[i].usage + nr;
            self.c[i].usage = new;
            self.note_usage(i, new);
            cur = self.c[i].parent;
        }
    }

    /// page_counter_try_charge(): Ok, or Err(the level whose max would be exceeded).
    pub fn try_charge(&mut self, idx: usize, nr: u64) -> Result<(), usize> {
        let mut cur = Some(idx);
        while let Some(i) = cur {
            let new = self.c[i].usage + nr;
            if new > self.c[i].max {
                self.c[i].failcnt += 1;
                // Back out the levels already charged.
                let mut j = Some(idx);
                while let Some(k) = j {
                    if k == i {
                        break;
                    }
                    self.cancel(k, nr);
                    j = self.c[k].parent;
                }
                return Err(i);
            }
            self.c[i].usage = new;
            self.note_usage(i, new);
            cur = self.c[i].parent;
        }
        Ok(())
    }

    /// Take `nr` pages off one counter without touching its ancestors, whose charge stays:
    /// charges that move to the parent when a group goes offline.
    pub fn drop_local(&mut self, idx: usize, nr: u64) {
        if nr > 0 {
            self.cancel(idx, nr);
        }
    }

    /// page_counter_uncharge(): subtract at every level.
    pub fn uncharge(&mut self, idx: usize, nr: u64) {
        let mut cur = Some(idx);
        while let Some(i) = cur {
            self.cancel(i, nr);
            cur = self.c[i].parent;
        }
    }

    /// page_counter_set_max() as the v1 limit write uses it: EBUSY if usage is above.
    pub fn set_max_checked(&mut self, idx: usize, nr: u64) -> bool {
        if self.c[idx].usage > nr {
            return false;
        }
        self.c[idx].max = nr;
        true
    }

    /// Whether a min or low above 0 was ever set. If not, every counter's emin and elow are 0
    /// and calculate_protection() leaves them so.
    #[inline]
    pub fn ever_protected(&self) -> bool {
        self.ever_protected
    }

    pub fn set_min(&mut self, idx: usize, nr: u64) {
        self.ever_protected |= nr > 0;
        self.c[idx].min = nr;
        let mut cur = Some(idx);
        while let Some(i) = cur {
            let u = self.c[i].usage;
            self.propagate_protected_usage(i, u);
            cur = self.c[i].parent;
        }
    }

    pub fn set_low(&mut self, idx: usize, nr: u64) {
        self.ever_protected |= nr > 0;
        self.c[idx].low = nr;
        let mut cur = Some(idx);
        while let Some(i) = cur {
            let u = self.c[i].usage;
            self.propagate_protected_usage(i, u);
            cur = self.c[i].parent;
        }
    }

    /// page_counter_reset_watermark() (v1 max_usage_in_bytes write): both marks to usage.
    pub fn reset_watermark(&mut self, idx: usize) {
        let c = &mut self.c[idx];
        c.local_watermark = c.usage;
        c.watermark = c.usage;
    }

    /// Reset the local watermark to the current usage (a write to memory.peak).
    pub fn reset_local_watermark(&mut self, idx: usize) {
        let c = &mut self.c[idx];
        c.local_watermark = c.usage;
    }

    /// page_counter_calculate_protection() for one counter below `root`. Callers must visit
    /// parents before children (pre-order), as shrink_node_memcgs() does.
    pub fn calculate_protection(&mut self, root: usize, idx: usize, recursive: bool) {
        if idx == root {
            return;
        }
        let usage = self.c[idx].usage;
        if usage == 0 {
            return;
        }
        let Some(parent) = self.c[idx].parent else {
            return;
        };
        if parent == root {
            let c = &mut self.c[idx];
            c.emin = c.min;
            c.elow = c.low;
            return;
        }
        let p = &self.c[parent];
        let (pusage, pemin, pelow, cmin, clow) = (
            p.usage,
            p.emin,
            p.elow,
            p.children_min_usage,
            p.children_low_usage,
        );
        let (min, low) = (self.c[idx].min, self.c[idx].low);
        let emin = effective_protection(usage, pusage, min, pemin, cmin, recursive);
        let elow = effective_protection(usage, pusage, low, pelow, clow, recursive);
        let c = &mut self.c[idx];
        c.emin = emin;
        c.elow = elow;
    }
}

/// effective_protection() of mm/page_counter.c, in pages.
pub fn effective_protection(
    usage: u64,
    parent_usage: u64,
    setting: u64,
    parent_effective: u64,
    siblings_protected: u64,
    recursive: bool,
) -> u64 {
    let protected = usage.min(setting);
    if siblings_protected > parent_effective {
        return (protected as u128 * parent_effective as u128 / siblings_protected as u128) as u64;
    }
    let mut ep = protected;
    if recursive
        && parent_effective > siblings_protected
        && parent_usage > siblings_protected
        && usage > protected
    {
        let unclaimed = parent_effective - siblings_protected;
        let add = unclaimed as u128 * (usage - protected) as u128
            / (parent_usage - siblings_protected) as u128;
        ep += add as u64;
    }
    ep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Counters {
        // 0 = root, 1 = A (child of root), 2 = B (child of A)
        let mut c = Counters::default();
        c.ensure(0, None, true);
        c.ensure(1, Some(0), true);
        c.ensure(2, Some(1), true);
        c
    }

    #[test]
    fn try_charge_backs_out_and_counts_failcnt() {
        let mut c = tree();
        c.get_mut(1).max = 10;
        assert!(c.try_charge(2, 8).is_ok());
        assert_eq!(c.try_charge(2, 3), Err(1));
        assert_eq!(c.get(2).usage, 8);
        assert_eq!(c.get(1).usage, 8);
        assert_eq!(c.get(0).usage, 8);
        assert_eq!(c.get(1).failcnt, 1);
        assert_eq!(c.get(2).failcnt, 0);
        // Reaching max exactly is allowed.
        assert!(c.try_charge(2, 2).is_ok());
        assert_eq!(c.get(1).usage, 10);
        // As in the kernel, the lower level's watermark saw the optimistic 11 before the
        // parent refused the charge.
        assert_eq!(c.get(2).watermark, 11);
        assert_eq!(c.get(1).watermark, 10);
        c.uncharge(2, 10);
        assert_eq!(c.get(0).usage, 0);
        assert_eq!(c.get(0).watermark, 10);
    }

    #[test]
    fn protected_usage_propagates() {
        let mut c = tree();
        c.set_low(2, 5);
        c.charge(2, 8);
        assert_eq!(c.get(2).low_usage, 5);
        assert_eq!(c.get(1).children_low_usage, 5);
        c.uncharge(2, 6);
        assert_eq!(c.get(1).children_low_usage, 2);
        c.set_low(2, 0);
        assert_eq!(c.get(1).children_low_usage, 0);
    }

    #[test]
    fn effective_protection_overcommit_and_recursive() {
        // Selftest numbers: parent effective 50, children 50/50/50 with low 75/25/0.
        let sib = 50 + 25;
        assert_eq!(effective_protection(50, 150, 75, 50, sib, false), 33);
        assert_eq!(effective_protection(50, 150, 25, 50, sib, false), 16);
        assert_eq!(effective_protection(50, 150, 0, 50, sib, false), 0);
        // Recursive: parent 10G protected, child unprotected gets it all.
        assert_eq!(effective_protection(8, 8, 0, 10, 0, true), 10);
        assert_eq!(effective_protection(8, 8, 0, 10, 0, false), 0);
    }
}
