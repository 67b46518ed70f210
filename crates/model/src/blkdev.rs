//! A block device with a fixed access latency and a transfer rate, serving requests one at a
//! time in arrival order (a simple model of the device behind swap and the filesystem).

use crate::config::DeviceConfig;

pub struct Device {
    cfg: DeviceConfig,
    /// When the device finishes the transfers queued so far.
    busy_until: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

impl Device {
    pub fn new(cfg: DeviceConfig) -> Device {
        Device {
            cfg,
            busy_until: 0,
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
        self.bytes_written += bytes;
        now + self.io(now, bytes)
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
        });
        // 1000 bytes at 1 GB/s = 1000 ns transfer + 100 ns latency.
        assert_eq!(d.io(0, 1000), 1100);
        // A second request at t=0 queues behind the first transfer.
        assert_eq!(d.io(0, 1000), 2100);
        // Idle device later.
        assert_eq!(d.io(10_000, 1000), 1100);
    }
}
