//! A block device and the block layer in front of it: requests are served one at a time, each
//! costing the device's access latency and its transfer at the device's sequential bandwidth;
//! on a rotational disk a request that does not start where the one before it ended also
//! pays a seek (seek time plus rotational latency). Asynchronous writes are bounded in
//! flight: a writer that finds `queue_depth` of its requests queued sleeps until the oldest
//! completes (blk-mq's tag wait, and writeback throttling's depth limit), which is what
//! paces reclaim that writes faster than the device.
//!
//! The device keeps its schedule as busy intervals in virtual time. The simulated CPUs' quanta
//! are run one after another and may be up to a quantum (plus its waits) apart in virtual
//! time, so a request can reach the device at a virtual time earlier than requests already
//! scheduled: it takes the first idle gap at or after its submission that is long enough, as
//! a device serving in submission-time order would have found the device idle then.
//! On a disk, a request placed in a gap leaves room in it for the head to seek back to where
//! the request after the gap starts, if that one was timed without a seek. Simplified: a
//! request already scheduled is never moved, so an earlier-submitted request that finds no
//! gap waits behind later-submitted ones. Intervals that end by the scheduler's clock are
//! dropped (`retire()`): no request can be submitted before it.
//!
//! Positions are byte addresses on the device: a swap slot's (swap_pos()) and a file page's
//! (file_pos()); they matter only for what is adjacent. Several runs of adjacent pages go to
//! the device as one submission, sorted (the plug and the I/O scheduler's sort), each run a
//! request of its own.

use std::collections::VecDeque;

use crate::config::{DeviceConfig, PAGE_SIZE};

/// Where the swap area starts on a device it shares with the filesystem.
const SWAP_AREA: u64 = 1 << 56;
/// The span of device addresses each file's pages take.
const FILE_SPAN_SHIFT: u32 = 40;

/// The device address of a swap slot (offset 0 is the swap header; slot s is offset s + 1).
pub fn swap_pos(slot: u32) -> u64 {
    SWAP_AREA + (slot as u64 + 1) * PAGE_SIZE
}

/// The device address of page `idx` of file `f`: each file's pages are contiguous.
pub fn file_pos(f: usize, idx: u64) -> u64 {
    ((f as u64 + 1) << FILE_SPAN_SHIFT) + idx * PAGE_SIZE
}

/// Runs of adjacent pages, (start, bytes), from page addresses: sorted and merged.
pub fn page_runs(mut positions: Vec<u64>) -> Vec<(u64, u64)> {
    positions.sort_unstable();
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for p in positions {
        match runs.last_mut() {
            Some((start, len)) if *start + *len == p => *len += PAGE_SIZE,
            _ => runs.push((p, PAGE_SIZE)),
        }
    }
    runs
}

/// A span of virtual time in which the device transfers, and where its head is at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Busy {
    start: u64,
    end: u64,
    /// Where the first request starts and the last ends.
    start_pos: u64,
    end_pos: u64,
    /// The first request was timed without a seek: it needs the head at `start_pos`.
    needs_head: bool,
}

/// Upper bound on the busy intervals a device keeps: every one ends after the clock, and each
/// belongs to a request some thread waits for or to a bounded asynchronous queue.
const MAX_BUSY: usize = 1 << 20;

pub struct Device {
    cfg: DeviceConfig,
    /// The schedule: disjoint busy intervals in time order, none touching the next.
    busy: VecDeque<Busy>,
    /// Where the head was left by the last interval dropped from `busy`.
    head: u64,
    /// Completion times of the asynchronous requests in flight, sorted.
    inflight: VecDeque<u64>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Requests that paid a seek.
    pub seeks: u64,
    /// Read submissions.
    pub nr_reads: u64,
}

impl Device {
    pub fn new(cfg: DeviceConfig) -> Device {
        Device {
            cfg,
            busy: VecDeque::new(),
            head: 0,
            inflight: VecDeque::new(),
            bytes_read: 0,
            bytes_written: 0,
            seeks: 0,
            nr_reads: 0,
        }
    }

    pub fn config(&self) -> &DeviceConfig {
        &self.cfg
    }

    /// The transfer rate in bytes per second.
    pub fn bandwidth_bps(&self) -> u64 {
        self.cfg.bandwidth_bps
    }

    fn transfer_ns(&self, bytes: u64) -> u64 {
        (bytes as u128 * 1_000_000_000u128 / self.cfg.bandwidth_bps as u128) as u64
    }

    /// How long `runs` keep the device busy with the head starting at `head`, and the seeks
    /// they pay.
    fn duration(&self, mut head: u64, runs: &[(u64, u64)]) -> (u64, u64) {
        let (mut ns, mut seeks) = (0, 0);
        for &(pos, bytes) in runs {
            if self.cfg.seek_ns > 0 && pos != head {
                ns += self.cfg.seek_ns;
                seeks += 1;
            }
            ns += self.transfer_ns(bytes);
            head = pos + bytes;
        }
        (ns, seeks)
    }

    /// Drop the intervals that ended by `clock`: every later request is submitted at or after
    /// it, so they can no longer delay one.
    pub fn retire(&mut self, clock: u64) {
        while let Some(b) = self.busy.front().copied().filter(|b| b.end <= clock) {
            self.head = b.end_pos;
            self.busy.pop_front();
        }
    }

    /// Queue `runs` at `at` in the first idle gap that holds them: returns when the last
    /// completes.
    fn serve(&mut self, at: u64, runs: &[(u64, u64)]) -> u64 {
        let Some(&(last_pos, last_bytes)) = runs.last() else {
            return at + self.cfg.latency_ns;
        };
        let (start_pos, end_pos) = (runs[0].0, last_pos + last_bytes);
        // The first interval that ends after `at`: the gaps before it are all in the past.
        let mut i = self.busy.partition_point(|b| b.end <= at);
        let (start, ns, seeks, prev_pos) = loop {
            let (prev_end, prev_pos) = match i.checked_sub(1) {
                Some(p) => (self.busy[p].end, self.busy[p].end_pos),
                None => (0, self.head),
            };
            let start = at.max(prev_end);
            let (ns, seeks) = self.duration(prev_pos, runs);
            let Some(next) = self.busy.get(i) else {
                break (start, ns, seeks, prev_pos);
            };
            // On a disk the head must also get back to where the next request starts, if
            // that request counted on finding it there.
            let back = next.needs_head && next.start_pos != end_pos;
            let room = ns + if back { self.cfg.seek_ns } else { 0 };
            if start + room <= next.start {
                break (start, ns, seeks + back as u64, prev_pos);
            }
            i += 1;
        };
        self.seeks += seeks;
        let end = start + ns;
        // Timed without a seek: a request placed before it later must leave the head here.
        let needs_head = self.cfg.seek_ns > 0 && start_pos == prev_pos;
        // Insert at `i`, merging with the neighbours it touches.
        let joins_prev = i > 0 && self.busy[i - 1].end == start;
        let joins_next = self.busy.get(i).is_some_and(|n| n.start == end);
        match (joins_prev, joins_next) {
            (true, true) => {
                let next = self.busy.remove(i).expect("next interval");
                self.busy[i - 1].end = next.end;
                self.busy[i - 1].end_pos = next.end_pos;
            }
            (true, false) => {
                self.busy[i - 1].end = end;
                self.busy[i - 1].end_pos = end_pos;
            }
            (false, true) => {
                self.busy[i].start = start;
                self.busy[i].start_pos = start_pos;
                self.busy[i].needs_head = needs_head;
            }
            (false, false) => self.busy.insert(
                i,
                Busy {
                    start,
                    end,
                    start_pos,
                    end_pos,
                    needs_head,
                },
            ),
        }
        assert!(self.busy.len() <= MAX_BUSY, "device schedule unbounded");
        end + self.cfg.latency_ns
    }

    /// A read the caller waits for: returns how long it waits.
    pub fn read(&mut self, now: u64, runs: &[(u64, u64)]) -> u64 {
        self.bytes_read += runs.iter().map(|r| r.1).sum::<u64>();
        self.nr_reads += 1;
        self.serve(now, runs) - now
    }

    /// I/O on a memory-backed SWP_SYNCHRONOUS_IO device (zram, brd, pmem): the copy (and
    /// compression) runs on the caller's CPU, every CPU at once, with no request queue.
    /// Returns the CPU time it costs.
    pub fn cpu_copy(&mut self, runs: &[(u64, u64)], write: bool) -> u64 {
        let bytes = runs.iter().map(|r| r.1).sum::<u64>();
        if write {
            self.bytes_written += bytes;
        } else {
            self.bytes_read += bytes;
            self.nr_reads += 1;
        }
        runs.len() as u64 * self.cfg.latency_ns + self.transfer_ns(bytes)
    }

    /// Asynchronous submission: returns the completion time.
    pub fn submit(&mut self, now: u64, runs: &[(u64, u64)]) -> u64 {
        self.submit_waiting(now, runs).0
    }

    /// Asynchronous submission by a writer that sleeps while the queue is full: returns the
    /// completion time and how long the writer slept before its request was queued.
    pub fn submit_waiting(&mut self, now: u64, runs: &[(u64, u64)]) -> (u64, u64) {
        while self.inflight.front().is_some_and(|&t| t <= now) {
            self.inflight.pop_front();
        }
        let depth = self.cfg.queue_depth.max(1) as usize;
        let mut at = now;
        if self.inflight.len() >= depth {
            at = self.inflight[self.inflight.len() - depth];
            while self.inflight.front().is_some_and(|&t| t <= at) {
                self.inflight.pop_front();
            }
        }
        self.bytes_written += runs.iter().map(|r| r.1).sum::<u64>();
        let done = self.serve(at, runs);
        let k = self.inflight.partition_point(|&t| t <= done);
        self.inflight.insert(k, done);
        (done, at - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(seek_ns: u64) -> DeviceConfig {
        DeviceConfig {
            latency_ns: 100,
            bandwidth_bps: 1_000_000_000,
            seek_ns,
            queue_depth: 2,
            synchronous_io: false,
            rotational: seek_ns > 0,
        }
    }

    #[test]
    fn queues_in_order() {
        let mut d = Device::new(cfg(0));
        // 1000 bytes at 1 GB/s = 1000 ns transfer + 100 ns latency.
        assert_eq!(d.read(0, &[(0, 1000)]), 1100);
        // A second request at t=0 queues behind the first transfer.
        assert_eq!(d.read(0, &[(5000, 1000)]), 2100);
        // Idle device later.
        assert_eq!(d.read(10_000, &[(0, 1000)]), 1100);
    }

    #[test]
    fn a_request_submitted_earlier_takes_an_idle_gap() {
        let mut d = Device::new(cfg(0));
        // Simulated first, but at a later virtual time.
        assert_eq!(d.read(10_000, &[(0, 1000)]), 1100);
        // Submitted before it: the device is idle then, so it does not wait behind it.
        assert_eq!(d.read(0, &[(5000, 1000)]), 1100);
        // A gap too short for the transfer: served after the request that closes it.
        assert_eq!(d.read(8000, &[(9000, 3000)]), 3000 + 3000 + 100);
        // Overlapping a busy interval: served when it ends.
        assert_eq!(d.read(500, &[(0, 1000)]), 1500 + 100);
        assert_eq!(d.busy.len(), 2);
        // Nothing can be submitted before the clock: what ended by then is dropped.
        d.retire(11_000);
        assert_eq!(d.busy.len(), 1);
        d.retire(14_000);
        assert!(d.busy.is_empty());
        assert_eq!(d.read(14_000, &[(0, 1000)]), 1100);
    }

    #[test]
    fn a_request_in_a_gap_on_a_disk_leaves_room_to_seek_back() {
        let mut d = Device::new(cfg(5000));
        assert_eq!(d.read(0, &[(0, 1000)]), 1100);
        // Sequential after the first: no seek.
        assert_eq!(d.read(100_000, &[(1000, 1000)]), 1100);
        assert_eq!(d.seeks, 0);
        // Elsewhere, in the gap between them: a seek there and one back before the second.
        assert_eq!(d.read(2000, &[(50_000, 1000)]), 6100);
        assert_eq!(d.seeks, 2);
        // A gap that holds the transfer and one seek but not the seek back is not taken:
        // [7000, 100_000) is free, but only 6000 ns of it are left before 100_000 from 94_000.
        assert_eq!(
            d.read(94_000, &[(70_000, 1000)]),
            101_000 + 6000 + 100 - 94_000
        );
        assert_eq!(d.seeks, 3);
    }

    #[test]
    fn a_disk_seeks_for_what_is_not_next() {
        let mut d = Device::new(cfg(5000));
        // The head starts at 0: a request there is sequential.
        assert_eq!(d.read(0, &[(0, 1000)]), 1100);
        // Right after it: sequential again.
        assert_eq!(d.read(10_000, &[(1000, 1000)]), 1100);
        // Elsewhere: a seek first; two runs in one submission seek twice.
        assert_eq!(d.read(20_000, &[(9000, 1000)]), 6100);
        assert_eq!(d.read(30_000, &[(0, 1000), (5000, 1000)]), 12_100);
        assert_eq!(d.seeks, 3);
    }

    #[test]
    fn pages_merge_into_runs() {
        let p = PAGE_SIZE;
        assert_eq!(
            page_runs(vec![3 * p, p, 2 * p, 7 * p]),
            vec![(p, 3 * p), (7 * p, p)]
        );
        assert!(page_runs(Vec::new()).is_empty());
        assert!(swap_pos(0) > file_pos(1 << 15, 1 << 27));
    }

    #[test]
    fn a_full_queue_makes_the_writer_wait_for_the_oldest() {
        let mut d = Device::new(cfg(0));
        assert_eq!(d.submit_waiting(0, &[(0, 1000)]), (1100, 0));
        assert_eq!(d.submit_waiting(0, &[(1000, 1000)]), (2100, 0));
        // Two in flight: the third waits for the first to complete.
        assert_eq!(d.submit_waiting(0, &[(2000, 1000)]), (3100, 1100));
        // Later, with the queue drained, no wait.
        assert_eq!(d.submit_waiting(10_000, &[(3000, 1000)]), (11_100, 0));
    }
}
