//! A block device and the block layer in front of it: requests are served one at a time in
//! arrival order, each costing the device's access latency and its transfer at the device's
//! sequential bandwidth; on a rotational disk a request that does not start where the last
//! one ended also pays a seek (seek time plus rotational latency). Asynchronous writes are
//! bounded in flight: a writer that finds `queue_depth` of its requests queued sleeps until
//! the oldest completes (blk-mq's tag wait, and writeback throttling's depth limit), which is
//! what paces reclaim that writes faster than the device.
//!
//! Simplified: requests are served in the order the simulation submits them. The CPUs'
//! quanta are simulated one after another, up to a quantum apart in virtual time, so a
//! request submitted at a virtual time earlier than requests already queued waits behind
//! them (docs/FIDELITY.md, the kswapd split).
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

pub struct Device {
    cfg: DeviceConfig,
    /// When the device finishes the transfers queued so far.
    busy_until: u64,
    /// Where the last request ended (the head's position on a disk).
    head: u64,
    /// Completion times of the asynchronous requests in flight, oldest first (the device
    /// serves in order, so they are sorted).
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
            busy_until: 0,
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

    /// Queue `runs` at `at`: returns when the last completes.
    fn serve(&mut self, at: u64, runs: &[(u64, u64)]) -> u64 {
        let mut t = at.max(self.busy_until);
        for &(pos, bytes) in runs {
            if self.cfg.seek_ns > 0 && pos != self.head {
                t += self.cfg.seek_ns;
                self.seeks += 1;
            }
            t += self.transfer_ns(bytes);
            self.head = pos + bytes;
        }
        self.busy_until = t;
        t + self.cfg.latency_ns
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
        self.inflight.push_back(done);
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
