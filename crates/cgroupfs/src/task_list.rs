//! A cgroup's task list: the tasks attached to it, in attach order, as the kernel keeps them
//! on its css_set's `tasks` list (a linked list: a task is added at the tail on fork or
//! migration and unlinked in O(1) by cgroup_exit() or the next migration).
//!
//! Here the list is keyed by an attach sequence number (increasing over all attaches; the
//! caller hands it out and keeps it beside the task's cgroup), so a task leaves the list in
//! O(log n) whatever its place and the order read back is the attach order. An emptied list
//! frees its nodes, and the list is no bigger than a vector.

use std::collections::BTreeMap;

use memcgsim_model::program::Pid;

#[derive(Clone, Debug, Default)]
pub(crate) struct TaskList {
    /// Attach sequence number -> task, in attach order.
    order: BTreeMap<u64, Pid>,
}

impl TaskList {
    /// Attach `pid` at the tail as `seq`, greater than every sequence number attached
    /// before (what unlinks it).
    pub fn push(&mut self, seq: u64, pid: Pid) {
        debug_assert!(self.order.last_key_value().is_none_or(|(&s, _)| s < seq));
        self.order.insert(seq, pid);
    }

    /// Unlink the task attached as `seq`, if it is still on the list.
    pub fn remove(&mut self, seq: u64) {
        self.order.remove(&seq);
        if self.order.is_empty() {
            // An empty map keeps its root node; a group most of whose life has no task
            // should not.
            self.order = BTreeMap::new();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The tasks in attach order.
    pub fn iter(&self) -> impl Iterator<Item = &Pid> + '_ {
        self.order.values()
    }

    /// The tasks in attach order, as a vector to act on while the list may change.
    pub fn to_vec(&self) -> Vec<Pid> {
        self.order.values().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_attach_order_through_removals() {
        let mut l = TaskList::default();
        assert!(l.is_empty());
        for (seq, p) in [(0, 105), (1, 101), (2, 103), (3, 102)] {
            l.push(seq, Pid(p));
        }
        l.remove(1);
        l.remove(99);
        l.push(4, Pid(101));
        l.remove(2);
        assert_eq!(l.to_vec(), vec![Pid(105), Pid(102), Pid(101)]);
        assert_eq!(l.iter().count(), 3);
        for s in [0, 3, 4] {
            l.remove(s);
        }
        assert!(l.is_empty());
        // Later attaches still come last.
        l.push(7, Pid(107));
        l.push(8, Pid(106));
        assert_eq!(l.to_vec(), vec![Pid(107), Pid(106)]);
    }
}
