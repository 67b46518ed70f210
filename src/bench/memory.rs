//! The `memory` part: the process's resident bytes per simulated frame once every frame of a
//! 16 GiB machine has been used, and what a 1 TiB machine costs to boot and run a 1G task on
//! (frames never handed out cost nothing).

use std::time::Instant;

use super::machine::{boot, rss_bytes, run_anon};
use super::meter::Meter;

/// What the `memory` part's figures mean.
pub const LEGEND: &[&str] = &[
    "resident memory: the process's growth per simulated frame once all the frames of a 16 GiB",
    "  machine have been used (a task held 15G of anon, then exited); metadata: the model's",
    "  frame metadata per frame; at boot: the growth per frame before any task ran",
    "1 TiB machine: wall-clock seconds to boot a memory=1T machine, and with a 1G task run on",
    "  it too; the process's growth",
];

/// Runs of the part.
pub const RUNS: u64 = 2;

/// (a) Resident bytes per simulated frame once a 16 GiB machine has used all its frames: a
/// task holds 15G of anon, then exits. (b) A 1 TiB machine running a 1G task.
pub fn run(m: &Meter) {
    let Some(before) = rss_bytes() else {
        m.say("resident memory    unavailable (no /proc/self/statm)");
        return;
    };
    let (booted, used, frames) = m.run("16 GiB machine, 15G task", || {
        let mut sys = boot("16G", "0");
        let booted = rss_bytes().unwrap_or(before);
        run_anon(&mut sys, "/", &["15G"]);
        let used = rss_bytes().unwrap_or(before);
        (booted, used, sys.machine.totalram_pages)
    });
    m.say(format_args!(
        "resident memory    {:>12.1} bytes per simulated frame once all are used ({} frames; metadata {} B/frame; at boot {:.1})",
        used.saturating_sub(before) as f64 / frames as f64,
        frames,
        memcgsim_model::page_cgroup::Frames::BYTES_PER_FRAME,
        booted.saturating_sub(before) as f64 / frames as f64,
    ));
    let before = rss_bytes().unwrap_or(0);
    let (boot_secs, secs, grown) = m.run("1 TiB machine, 1G task", || {
        let t = Instant::now();
        let mut sys = boot("1T", "0");
        let boot_secs = t.elapsed().as_secs_f64();
        run_anon(&mut sys, "/", &["1G"]);
        let secs = t.elapsed().as_secs_f64();
        let grown = rss_bytes().unwrap_or(0).saturating_sub(before);
        (boot_secs, secs, grown)
    });
    m.say(format_args!(
        "1 TiB machine      {:>12.2} s to boot, {:.2} s with a 1G task; {:.0} MiB resident",
        boot_secs,
        secs,
        grown as f64 / (1 << 20) as f64
    ));
}
