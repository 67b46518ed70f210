//! Bottom layer of the benchmark: the machines it boots, tasks run to their exit under the
//! wall clock, and the process's resident memory. Wall-clock figures are measured here, in
//! the front end; the model itself never reads a clock.

use std::path::Path;
use std::time::Instant;

use memcgsim_cgroupfs::{SpawnOpts, System, WaitResult};
use memcgsim_model::text::strerror;
use memcgsim_model::Stat;

/// The THP mode of every machine the benchmark boots (`--thp`): `never` unless asked, so
/// that its figures compare with those measured before huge pages were modelled.
static THP: std::sync::OnceLock<memcgsim_model::huge_memory::ThpEnabled> =
    std::sync::OnceLock::new();

/// Set the THP mode of the machines booted from now on (once, before any).
pub fn set_thp(mode: memcgsim_model::huge_memory::ThpEnabled) {
    let _ = THP.set(mode);
}

/// The page-replacement design of every machine the benchmark boots (`--lru`): the
/// two-list LRU unless asked.
static LRU: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Set the `lru` machine key of the machines booted from now on (once, before any).
pub fn set_lru(lru: &str) {
    let _ = LRU.set(lru.to_string());
}

/// The configuration every benchmark machine starts from: the model's defaults with the
/// benchmark's THP mode and LRU design.
pub fn default_config() -> memcgsim_model::MachineConfig {
    let mut cfg = memcgsim_model::MachineConfig {
        thp: *THP.get_or_init(|| memcgsim_model::huge_memory::ThpEnabled::Never),
        ..Default::default()
    };
    cfg.set("lru", LRU.get_or_init(|| "split".to_string()))
        .expect("clap checked the design");
    cfg
}

/// How long a measured task may run in virtual time.
pub const HOUR_NS: u64 = 3_600_000_000_000;

/// A machine of `memory` and `swap`, with more `machine` keys (a design to measure).
pub fn boot_with(memory: &str, swap: &str, keys: &[(&str, &str)]) -> System {
    let mut cfg = default_config();
    cfg.set("memory", memory).expect("valid size");
    cfg.set("swap", swap).expect("valid size");
    for (k, v) in keys {
        cfg.set(k, v).expect("valid machine key");
    }
    System::new(cfg).expect("valid machine")
}

/// A machine of `memory` and `swap` and nothing else set.
pub fn boot(memory: &str, swap: &str) -> System {
    boot_with(memory, swap, &[])
}

/// Page events so far: faults and pages scanned by direct and kswapd reclaim.
fn page_events(sys: &System) -> u64 {
    let m = &sys.machine;
    m.global_stat(Stat::Pgfault)
        + m.global_stat(Stat::PgscanDirect)
        + m.global_stat(Stat::PgscanKswapd)
}

/// Run one anon task to completion in `cgroup`; returns (wall seconds, page events).
pub fn run_anon(sys: &mut System, cgroup: &str, args: &[&str]) -> (f64, u64) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let prog = memcgsim_workloads::build("anon", &args).expect("valid workload");
    let before = page_events(sys);
    let t = Instant::now();
    let pid = sys
        .spawn(cgroup, SpawnOpts::default(), prog)
        .expect("spawn");
    let r = sys.wait(pid, false, HOUR_NS).expect("task finishes");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(r, WaitResult::Ended(memcgsim_model::TaskOutcome::Exited(0)));
    (secs, page_events(sys) - before)
}

/// The process's resident bytes, from /proc/self/statm.
pub fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// `PATH: REASON` for a failed file operation, the reason as C's strerror gives it (without
/// Rust's " (os error N)").
pub fn file_error(path: &Path, e: &std::io::Error) -> String {
    format!("{}: {}", path.display(), strerror(e))
}
