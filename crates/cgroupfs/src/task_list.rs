//! A cgroup's task list: the tasks attached to it, in attach order, as the kernel keeps them
//! on its css_set's `tasks` list (a linked list: a task is added at the tail on fork or
//! migration and unlinked in O(1) by cgroup_exit() or the next migration).
//!
//! Here the list is keyed by an attach sequence number, so a task leaves it in O(log n)
//! whatever its place, and the order read back is the attach order.

use std::collections::BTreeMap;

use memcgsim_model::program::Pid;

#[derive(Clone, Debug, Default)]
pub(crate) struct TaskList {
    /// Attach sequence number -> task, in attach order.
    order: BTreeMap<u64, Pid>,
    /// Task -> its attach sequence number.
    seq_of: BTreeMap<Pid, u64>,
    next_seq: u64,
}

impl TaskList {
    /// Attach `pid` at the tail (it must not be on the list).
    pub fn push(&mut self, pid: Pid) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, pid);
        let old = self.seq_of.insert(pid, seq);
        debug_assert!(old.is_none(), "task {pid} attached twice");
    }

    /// Unlink `pid`, if it is on the list.
    pub fn remove(&mut self, pid: Pid) {
        if let Some(seq) = self.seq_of.remove(&pid) {
            self.order.remove(&seq);
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
        for p in [105, 101, 103, 102] {
            l.push(Pid(p));
        }
        l.remove(Pid(101));
        l.remove(Pid(999));
        l.push(Pid(101));
        l.remove(Pid(103));
        assert_eq!(l.to_vec(), vec![Pid(105), Pid(102), Pid(101)]);
        assert_eq!(l.iter().count(), 3);
        for p in [105, 102, 101] {
            l.remove(Pid(p));
        }
        assert!(l.is_empty());
    }
}
