//! The `trace` part: cache-trace replay speed and miss ratio, the figure a
//! researcher replaying production traces compares against a cache simulator.
//!
//! The trace is libCacheSim's oracleGeneral format, either a FILE (`--trace`) or one
//! generated here: requests for one-page objects whose popularity follows a Zipf law
//! (exponent 0.8) over 1,000,000 objects, object k on a page of its own picked by a seeded
//! permutation. It is replayed with the `trace` workload as read()s of a sparse file in a
//! group whose memory.max holds 200,000 pages, with no swap and no charge stock, so that
//! every miss is one page read into the page cache and charged (pgpgin) and reclaim is the
//! split-LRU kernel path. `--trace-out FILE` keeps the generated trace, for another tool to
//! replay (scripts/bench-vs-libcachesim.py does so with libCacheSim's Python bindings).

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use memcgsim_cgroupfs::{SpawnOpts, System, WaitResult};
use memcgsim_model::{Stat, PAGE_SIZE};
use memcgsim_workloads::rand::{Permutation, SplitMix64, Zipf};
use memcgsim_workloads::trace::{object_id_for_page, ORACLE_GENERAL_RECORD};

use super::machine::{file_error, HOUR_NS};
use super::meter::Meter;

/// What the part's figures mean.
pub const LEGEND: &[&str] = &[
    "requests/s: requests replayed per wall-clock second, reading the trace included;",
    "  miss ratio: pages read into the page cache (pgpgin) per request",
];

/// Objects of the generated trace.
pub const OBJECTS: u64 = 1_000_000;
/// Zipf exponent of the generated trace.
pub const THETA: f64 = 0.8;
/// Requests of the generated trace per unit of `--scale`.
pub const REQUESTS_PER_SCALE: u64 = 2_000_000;
/// Pages the replaying group's memory.max holds (the cache size).
pub const CACHE_PAGES: u64 = 200_000;
/// Seed of the generated trace.
const SEED: u64 = 1;

/// Runs of the part: writing the trace (unless one is given) and replaying it.
pub fn runs(file: Option<&Path>) -> u64 {
    if file.is_some() {
        1
    } else {
        2
    }
}

/// Write the generated trace (`requests` oracleGeneral records) to `path`, which must not
/// exist yet.
pub fn write_zipf_trace(path: &Path, requests: u64) -> Result<(), String> {
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| file_error(path, &e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let zipf = Zipf::new(OBJECTS, THETA);
    let perm = Permutation::new(OBJECTS, SEED);
    let mut rng = SplitMix64::new(SEED);
    let mut rec = [0u8; ORACLE_GENERAL_RECORD];
    for t in 0..requests {
        let id = object_id_for_page(perm.apply(zipf.sample(&mut rng)));
        rec[0..4].copy_from_slice(&((t / 1000) as u32).to_le_bytes());
        rec[4..12].copy_from_slice(&id.to_le_bytes());
        rec[12..16].copy_from_slice(&(PAGE_SIZE as u32).to_le_bytes());
        rec[16..24].copy_from_slice(&(-1i64).to_le_bytes());
        w.write_all(&rec).map_err(|e| file_error(path, &e))?;
    }
    w.flush().map_err(|e| file_error(path, &e))
}

/// What one replay measured.
pub struct Replay {
    pub requests: u64,
    pub misses: u64,
    pub secs: f64,
    /// The machine after the replay.
    pub sys: System,
}

/// Replay an oracleGeneral trace as page-cache reads under a 200,000-page memory.max, on a
/// machine with these more `machine` keys.
pub fn replay(path: &Path, keys: &[(&str, &str)]) -> Result<Replay, String> {
    let len = std::fs::metadata(path)
        .map_err(|e| file_error(path, &e))?
        .len();
    let requests = len / ORACLE_GENERAL_RECORD as u64;
    let mut cfg = super::machine::default_config();
    for &(k, v) in [("memory", "4G"), ("swap", "0"), ("stock", "off")]
        .iter()
        .chain(keys)
    {
        cfg.set(k, v).map_err(|e| format!("machine {k}={v}: {e}"))?;
    }
    let mut sys = System::new(cfg).map_err(|e| format!("machine: {e}"))?;
    sys.mkdir("/trace")
        .map_err(|e| format!("mkdir /trace: {e}"))?;
    sys.write("/trace/memory.max", &(CACHE_PAGES * PAGE_SIZE).to_string())
        .map_err(|e| format!("/trace/memory.max: {e}"))?;
    let region = format!("{}K", OBJECTS * PAGE_SIZE / 1024);
    let args: Vec<String> = [
        path.to_string_lossy().as_ref(),
        "--format",
        "oraclegeneral",
        "--region",
        &region,
        "--file",
        "data",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let before = sys.machine.global_stat(Stat::Pgpgin);
    // The trace is read when the workload is built: that is part of the replay's time.
    let t = Instant::now();
    let prog = memcgsim_workloads::build("trace", &args)?;
    let pid = sys
        .spawn("/trace", SpawnOpts::default(), prog)
        .map_err(|e| format!("spawn: {e}"))?;
    let r = sys
        .wait(pid, false, HOUR_NS)
        .map_err(|e| format!("wait: {e}"))?;
    let secs = t.elapsed().as_secs_f64();
    if r != WaitResult::Ended(memcgsim_model::TaskOutcome::Exited(0)) {
        return Err(format!("the replay did not exit 0: {r:?}"));
    }
    let misses = sys.machine.global_stat(Stat::Pgpgin) - before;
    Ok(Replay {
        requests,
        misses,
        secs,
        sys,
    })
}

/// The part: generate (or take) the trace, replay it, print the figures.
pub fn run(scale: u64, file: Option<&Path>, out: Option<&Path>, m: &Meter) -> Result<(), String> {
    let tmp;
    let (path, what): (PathBuf, String) = match file {
        Some(f) => (f.to_path_buf(), f.display().to_string()),
        None => {
            let requests = REQUESTS_PER_SCALE * scale;
            let p = match out {
                Some(o) => o.to_path_buf(),
                None => {
                    tmp = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
                    tmp.path().join("zipf.oracleGeneral")
                }
            };
            m.run("writing the trace", || write_zipf_trace(&p, requests))?;
            (
                p,
                format!("{requests} requests, Zipf {THETA} over {OBJECTS} one-page objects"),
            )
        }
    };
    let r = m.run("replay", || replay(&path, &[]))?;
    m.say(format_args!(
        "trace replay ({what}; page-cache reads, memory.max {CACHE_PAGES} pages):"
    ));
    m.say(format_args!(
        "  {:.2} M requests/s, miss ratio {:.4} ({} misses of {} requests, {:.2} s)",
        r.requests as f64 / r.secs.max(1e-9) / 1e6,
        r.misses as f64 / r.requests.max(1) as f64,
        r.misses,
        r.requests,
        r.secs
    ));
    if let (Some(o), None) = (out, file) {
        m.say(format_args!("  trace kept in {}", o.display()));
    }
    Ok(())
}
