//! `memcgsim bench`: how fast the simulator runs and how much memory it takes, measured in
//! wall-clock time by the front end (the model itself never reads a clock).
//!
//! The files are layered, each using only those below it:
//! - top: this driver, which runs the parts (`--only`) in order, each under a [`Meter`], and
//!   prints each part's legend after its figures;
//! - `stats.rs` (seed 003: the statistics schemes) and `page_cgroup.rs` (seed 004: the
//!   per-frame memcg lookup's designs), which measure the rates below again under each design;
//! - the parts: `rates.rs` (hit-dominated and fault+reclaim churn rates), `memory.rs`
//!   (resident bytes per simulated frame, a 1 TiB machine), `fault_overhead.rs` (seed 001:
//!   what per-memcg dirty accounting costs), `groups.rs` (costs per group up to 60,000
//!   groups), `trace.rs` (cache-trace replay speed and miss ratio) and `growth.rs` (the cost
//!   per unit of work of each dimension of a run at three sizes, flagged where it grows);
//! - bottom: `machine.rs` (machines booted, tasks run under the clock, resident memory) and
//!   `meter.rs` (progress on standard error, output, the check that repeated runs agree).

mod fault_overhead;
mod groups;
mod growth;
mod machine;
mod memory;
mod meter;
mod page_cgroup;
mod rates;
mod stats;
mod trace;

use std::path::Path;

use meter::Meter;

/// The parts of the benchmark (`--only`), in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// Page hits per second of a task touching memory it already has.
    Hits,
    /// Faults and scanned pages per second of seed 002's pagetest.
    Churn,
    /// Resident bytes per simulated frame; a 1 TiB machine.
    Memory,
    /// Seed 001: what per-memcg dirty accounting costs its fault benchmark.
    FaultOverhead,
    /// Seed 003: the hit and churn figures under each statistics scheme.
    Stats,
    /// Costs per group with 1,000 to 60,000 groups.
    Groups,
    /// Seed 004: the page_cgroup designs (flat, radix, section) on the hit, churn and trace
    /// workloads, with bytes per frame.
    PageCgroup,
    /// Cache-trace replay: requests per second and miss ratio.
    Trace,
    /// The cost per unit of work of file size, groups, tasks, mapped pages and machine size
    /// at three sizes a factor of 10 apart; GROWS where it grows more than 1.5x a step.
    Growth,
}

impl Part {
    const ALL: [Part; 9] = [
        Part::Hits,
        Part::Churn,
        Part::Memory,
        Part::FaultOverhead,
        Part::Stats,
        Part::Groups,
        Part::PageCgroup,
        Part::Trace,
        Part::Growth,
    ];

    /// The part's name, as `--only` takes it.
    fn name(self) -> &'static str {
        match self {
            Part::Hits => "hits",
            Part::Churn => "churn",
            Part::Memory => "memory",
            Part::FaultOverhead => "fault-overhead",
            Part::Stats => "stats",
            Part::Groups => "groups",
            Part::PageCgroup => "page-cgroup",
            Part::Trace => "trace",
            Part::Growth => "growth",
        }
    }

    /// What the part's labels and columns mean.
    fn legend(self) -> &'static [&'static str] {
        match self {
            Part::Hits => rates::HITS_LEGEND,
            Part::Churn => rates::CHURN_LEGEND,
            Part::Memory => memory::LEGEND,
            Part::FaultOverhead => fault_overhead::LEGEND,
            Part::Stats => stats::LEGEND,
            Part::Groups => groups::LEGEND,
            Part::PageCgroup => page_cgroup::LEGEND,
            Part::Trace => trace::LEGEND,
            Part::Growth => growth::LEGEND,
        }
    }
}

/// The text `bench --help` ends with: each part's labels and columns, as its output explains
/// them.
pub fn help() -> String {
    let mut s = String::from(
        "Each part prints its figures on standard output, then what its labels mean; its \
         progress goes to standard error (a bar on a terminal, else a line as it starts), with \
         a warning when repeated runs of one figure differ by more than 10%. The labels:\n",
    );
    for p in Part::ALL {
        s.push_str(&format!("\n{}:\n", p.name()));
        for l in p.legend() {
            s.push_str(&format!("  {l}\n"));
        }
    }
    s
}

/// Print the benchmark figures. `scale` (1 or more) multiplies the work (1 = the documented
/// figures); `trace` is a file for the trace part to replay instead of generating one,
/// `trace_out` where to keep the one it generates. Returns the exit status.
pub fn run(
    scale: u64,
    only: Option<Part>,
    thp: memcgsim_model::huge_memory::ThpEnabled,
    lru: &str,
    trace: Option<&Path>,
    trace_out: Option<&Path>,
) -> i32 {
    machine::set_thp(thp);
    machine::set_lru(lru);
    let mut settings = String::new();
    if thp != memcgsim_model::huge_memory::ThpEnabled::Never {
        settings.push_str(&format!(", thp {}", thp.name()));
    }
    if lru != "split" {
        settings.push_str(&format!(", lru {lru}"));
    }
    println!("memcgsim bench (scale {scale}{settings})");
    let parts: Vec<Part> = Part::ALL
        .into_iter()
        .filter(|p| only.is_none_or(|o| o == *p))
        .collect();
    for (i, &part) in parts.iter().enumerate() {
        let runs = match part {
            Part::Hits => rates::hits_runs(scale),
            Part::Churn => rates::churn_runs(scale),
            Part::Memory => memory::RUNS,
            Part::FaultOverhead => fault_overhead::runs(scale),
            Part::Stats => stats::runs(scale),
            Part::Groups => groups::runs(scale),
            Part::PageCgroup => page_cgroup::runs(scale),
            Part::Trace => trace::runs(trace),
            Part::Growth => growth::runs(scale),
        };
        let mut m = Meter::start(part.name(), i + 1, parts.len(), runs);
        let done = match part {
            Part::Hits => {
                rates::hits(scale, &m);
                Ok(())
            }
            Part::Churn => {
                rates::churn(scale, &mut m);
                Ok(())
            }
            Part::Memory => {
                memory::run(&m);
                Ok(())
            }
            Part::FaultOverhead => {
                fault_overhead::run(scale, &mut m);
                Ok(())
            }
            Part::Stats => {
                stats::run(scale, &mut m);
                Ok(())
            }
            Part::Groups => groups::run(&m),
            Part::PageCgroup => page_cgroup::run(scale, &mut m),
            Part::Trace => trace::run(scale, trace, trace_out, &m),
            Part::Growth => growth::run(scale, &m),
        };
        if done.is_ok() {
            m.legend(part.legend());
        }
        m.finish();
        if let Err(e) = done {
            eprintln!("memcgsim: bench: {e}");
            return 2;
        }
    }
    0
}
