//! `hackbench [--groups N] [--procs N] [--loops N] [--size SIZE]` — the anon churn of seed
//! 002's `hackbench 150 process 1000` (groups of senders and receivers exchanging small
//! messages), reduced to its memory behaviour inside one task: `groups × procs` short-lived
//! "processes" per round, each mapping a small anonymous buffer (`--size`, default 64K),
//! writing every page of it and spending [`MSG_NS`] of CPU per message it exchanges
//! (procs / 2 per round, as every sender talks to every receiver of its group). All the
//! round's processes are alive together, so a round's footprint is
//! groups × procs × size; then they all exit (unmap) and the next round starts.
//!
//! Defaults: 10 groups of 40 processes (hackbench's 20 senders and 20 receivers), 100
//! rounds, 64K each — 640,000 page faults, a fraction of a second of wall time. Exits 0.

use memcgsim_model::{Program, Step, TaskCtx, Vma};

use crate::args::{parse, Spec};
use crate::common::{fault_step, pages, Budget};

/// CPU time of one message exchange (a write() and a read() on a socket pair).
pub const MSG_NS: u64 = 2_000;

pub(crate) const SPEC: Spec = Spec {
    flags: &[],
    options: &["--groups", "--procs", "--loops", "--size"],
    positional: &[],
    required: 0,
};

pub(crate) fn build(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("hackbench", args, &SPEC)?;
    let groups = a.count("--groups", 10, 1, 10_000)?;
    let procs = a.count("--procs", 40, 1, 10_000)?;
    let loops = a.count("--loops", 100, 1, 1_000_000)?;
    let size = a.size("--size", 64 << 10, 1, 1 << 30)?;
    if groups * procs > 100_000 {
        return Err(format!(
            "hackbench: --groups × --procs is {} (at most 100000 processes)",
            groups * procs
        ));
    }
    Ok(Box::new(Hackbench {
        nprocs: groups * procs,
        loops,
        pages: pages(size),
        cpu_ns: MSG_NS * (procs / 2).max(1),
        round: 0,
        vmas: Vec::new(),
        next: 0,
    }))
}

pub struct Hackbench {
    nprocs: u64,
    loops: u64,
    pages: u64,
    /// CPU per process per round.
    cpu_ns: u64,
    round: u64,
    /// Buffers of this round's processes; the last one is being written.
    vmas: Vec<Vma>,
    /// Next page of the last buffer.
    next: u64,
}

impl Program for Hackbench {
    fn name(&self) -> &str {
        "hackbench"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let mut budget = Budget::new();
        while self.round < self.loops {
            // A process starts: its buffer is mapped.
            if self.vmas.is_empty() || self.next == self.pages {
                if self.vmas.len() as u64 == self.nprocs {
                    // The round is over: every process exits.
                    for v in self.vmas.drain(..) {
                        cx.munmap(v);
                    }
                    self.round += 1;
                    self.next = 0;
                    continue;
                }
                match cx.mmap_anon(self.pages, false) {
                    Ok(v) => self.vmas.push(v),
                    Err(f) => return crate::common::mmap_fail(f),
                }
                self.next = 0;
            }
            let vma = *self.vmas.last().expect("a buffer");
            if let Err(f) = cx.touch(vma, self.next) {
                return fault_step(f);
            }
            self.next += 1;
            if self.next == self.pages {
                cx.compute(self.cpu_ns);
            }
            if budget.spent(cx) {
                return Step::Continue;
            }
        }
        Step::Exit(0)
    }
}
