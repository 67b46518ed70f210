//! A block device with a fixed access latency and a transfer rate, serving requests one at a
//! time in arrival order (a simple model of the device behind swap and the filesystem), and
//! the block layer's bound on asynchronous requests in flight: a writer that finds
//! `queue_depth` of its requests queued sleeps until the oldest completes (blk-mq's tag
//! wait), which is what paces reclaim that writes faster than the device.

use std::collections::VecDeque;

use crate::config::DeviceConfig;

pub struct Device {
    cfg: DeviceConfig,
    /// When the device finishes the transfers queued so far.
    busy_until: u64,
    /// Completion times of the asynchronous requests in flight, oldest first (the device
    /// serves in order, so they are sorted).
    inflight: VecDeque<u64>,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

impl Device {
    pub fn new(cfg: DeviceConfig) -> Device {
        Device {
            cfg,
            busy_until: 0,
            inflight: VecDeque::new(),
            bytes_read: 0,
            bytes_written: 0,
        }
    }

    /// The transfer rate in bytes per second.
    pub fn bandwidth_bps(&self) -> u64 {
        self.cfg.bandwidth_bps
    }

    fn transfer_ns(&self, bytes: u64) -> u64 {
        (bytes as u128 * 1_000_000_000u128 / self.cfg.bandwidth_bps as u128) as u64
    }

    /// Submit a request of `bytes` at time `now`; returns how long the submitter waits for
    /// its completion.
    pub fn io(&mut self, now: u64, bytes: u64) -> u64 {
        let start = now.max(self.busy_until);
        self.busy_until = start + self.transfer_ns(bytes);
        self.busy_until + self.cfg.latency_ns - now
    }

    pub fn read(&mut self, now: u64, bytes: u64) -> u64 {
        self.bytes_read += bytes;
        self.io(now, bytes)
    }

    /// Asynchronous submission: returns the completion time.
    pub fn submit(&mut self, now: u64, bytes: u64) -> u64 {
        self.submit_waiting(now, bytes).0
    }

    /// Asynchronous submission by a writer that sleeps while the queue is full: returns the
    /// completion time and how long the writer slept before its request was queued.
    pub fn submit_waiting(&mut self, now: u64, bytes: u64) -> (u64, u64) {
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
        self.bytes_written += bytes;
        let done = at + self.io(at, bytes);
        self.inflight.push_back(done);
        (done, at - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn queues_in_order() {
        let mut d = Device::new(DeviceConfig {
            latency_ns: 100,
            bandwidth_bps: 1_000_000_000,
            synchronous_io: false,
            queue_depth: 2,
        });
        // 1000 bytes at 1 GB/s = 1000 ns transfer + 100 ns latency.
        assert_eq!(d.io(0, 1000), 1100);
        // A second request at t=0 queues behind the first transfer.
        assert_eq!(d.io(0, 1000), 2100);
        // Idle device later.
        assert_eq!(d.io(10_000, 1000), 1100);
    }

    #[test]
    fn a_full_queue_makes_the_writer_wait_for_the_oldest() {
        let mut d = Device::new(DeviceConfig {
            latency_ns: 100,
            bandwidth_bps: 1_000_000_000,
            synchronous_io: false,
            queue_depth: 2,
        });
        assert_eq!(d.submit_waiting(0, 1000), (1100, 0));
        assert_eq!(d.submit_waiting(0, 1000), (2100, 0));
        // Two in flight: the third waits for the first to complete.
        assert_eq!(d.submit_waiting(0, 1000), (3100, 1100));
        // Later, with the queue drained, no wait.
        assert_eq!(d.submit_waiting(10_000, 1000), (11_100, 0));
    }
}
