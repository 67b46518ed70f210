//! `access SIZE [--pattern random|zipf|seq] [--theta F] [--count N] [--rate N] [--file NAME]
//! [--seed N] [--read-only] [--mmap] [--exec] [--cold] [--hold]` — synthetic page-access streams for
//! studying reclaim against a known popularity distribution: `--count` accesses (default
//! 10 × the pages of SIZE) to pages of SIZE chosen uniformly (`random`, the default) or by a
//! Zipf law of exponent `--theta` (default 0.99, YCSB's) where page 0 is the most popular,
//! page 1 the next, and so on, or taken in order (`seq`: 0, 1, 2, ..., wrapping to 0 after
//! the last page, for checking readahead and fault arithmetic). Random pages are drawn with a
//! generator seeded by `--seed` (default: derived from the arguments).
//!
//! By default the pages are those of an anonymous mapping of SIZE, written from user space.
//! With `--file NAME` they are pages of that file, extended sparse to SIZE if smaller (with
//! `--cold`, extended with data on disk that is not cached, so reading it costs disk reads),
//! accessed with write() (or read() with `--read-only`, which only makes sense with a file).
//! With `--mmap` the file is mapped shared and read-only and the pages are read through the
//! mapping (page faults, PTE young bits); `--exec` maps it executable as well (VM_EXEC, as
//! the text of a program or library).
//! `--rate N` paces the accesses at N per second from the task's first step, as a server
//! answering requests at a steady rate: when ahead of that schedule the task sleeps until the
//! next access is due, but at least [`PACE_NS`], and then makes every access due by then, so
//! it wakes at most once a millisecond; when it falls behind (stalled in reclaim or on a
//! refault) it catches up as fast as it can. Its elapsed time beyond COUNT / N is the time
//! the stalls cost it.
//! At the end the task holds its memory (`--hold`) or unmaps it and exits 0.

use memcgsim_model::{Program, Step, TaskCtx};

use crate::args::{parse, Spec};
use crate::common::{fault_step, pages, Budget, Region, MAX_SIZE};
use crate::rand::{SplitMix64, Zipf};

/// The shortest sleep of a paced (`--rate`) task: it wakes at most once per this many ns.
pub const PACE_NS: u64 = 1_000_000;

pub(crate) const SPEC: Spec = Spec {
    flags: &["--read-only", "--hold", "--mmap", "--exec", "--cold"],
    options: &[
        "--pattern",
        "--theta",
        "--count",
        "--rate",
        "--file",
        "--seed",
        "--data",
    ],
    positional: &["SIZE"],
    required: 1,
};

pub(crate) fn build(args: &[String]) -> Result<Box<dyn Program>, String> {
    Ok(Box::new(parse_access(args)?))
}

/// The first `n` pages `access` with these arguments visits, in order: the same parsing,
/// seed and generators as the workload, without a machine. Other implementations of the
/// workload (the oracle's guest helper) are checked against it.
pub fn draws(args: &[String], n: usize) -> Result<Vec<u64>, String> {
    let mut a = parse_access(args)?;
    Ok((0..n).map(|_| a.draw()).collect())
}

fn parse_access(args: &[String]) -> Result<Access, String> {
    let a = parse("access", args, &SPEC)?;
    let size = a.pos_size(0, "SIZE", 1, MAX_SIZE)?.expect("required");
    let npages = pages(size);
    let pattern = a.choice("--pattern", &["random", "zipf", "seq"], "random")?;
    let theta = a.float("--theta", 0.99, 0.0, false, 10.0)?;
    if a.value("--theta").is_some() && pattern != "zipf" {
        return Err("access: --theta needs --pattern zipf".into());
    }
    let count = a.count("--count", 10 * npages, 1, 1_000_000_000_000)?;
    let rate = match a.value("--rate") {
        Some(_) => Some(a.count("--rate", 0, 1, 1_000_000_000)?),
        None => None,
    };
    let file = a.string("--file");
    let read_only = a.flag("--read-only");
    if read_only && file.is_none() {
        return Err("access: --read-only needs --file (anonymous pages are written)".into());
    }
    let exec = a.flag("--exec");
    let mmap = a.flag("--mmap") || exec;
    let cold = a.flag("--cold");
    if (mmap || cold) && file.is_none() {
        return Err("access: --mmap, --exec and --cold need --file".into());
    }
    if a.value("--data").is_some() && file.is_some() {
        return Err("access: --data is for anonymous memory (no --file)".into());
    }
    let data = crate::common::page_data("access", a.value("--data"))?;
    let mut region = Region::new(npages, file);
    region.mmap = mmap.then_some(exec);
    region.cold = cold;
    region.data = data;
    Ok(Access {
        pages: npages,
        zipf: (pattern == "zipf").then(|| Zipf::new(npages, theta)),
        seq: pattern == "seq",
        next: 0,
        count,
        rate,
        start_ns: None,
        region,
        write: !read_only,
        hold: a.flag("--hold"),
        rng: SplitMix64::new(a.seed()?),
        done: 0,
        pending: None,
    })
}

pub struct Access {
    pages: u64,
    zipf: Option<Zipf>,
    /// `--pattern seq`: pages in order from `next`, wrapping.
    seq: bool,
    next: u64,
    count: u64,
    /// `--rate`: accesses per second; None: as fast as the task runs.
    rate: Option<u64>,
    /// When the paced schedule began (the first step).
    start_ns: Option<u64>,
    region: Region,
    write: bool,
    hold: bool,
    rng: SplitMix64,
    done: u64,
    /// A drawn page whose access must be retried.
    pending: Option<u64>,
}

impl Access {
    fn draw(&mut self) -> u64 {
        if self.seq {
            let i = self.next;
            self.next = if i + 1 == self.pages { 0 } else { i + 1 };
            return i;
        }
        match &self.zipf {
            Some(z) => z.sample(&mut self.rng),
            None => self.rng.below(self.pages),
        }
    }
}

/// When access number `done` is due, in ns after the start, at `rate` accesses per second.
fn due_offset(done: u64, rate: u64) -> u64 {
    let ns = u128::from(done) * 1_000_000_000 / u128::from(rate);
    u64::try_from(ns).unwrap_or(u64::MAX)
}

impl Program for Access {
    fn name(&self) -> &str {
        "access"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        if let Err(s) = self.region.setup(cx) {
            return s;
        }
        let start = *self.start_ns.get_or_insert(cx.now());
        let mut budget = Budget::new();
        while self.done < self.count {
            if let (Some(rate), None) = (self.rate, self.pending) {
                let due = start + due_offset(self.done, rate);
                let now = cx.now();
                if now < due {
                    return Step::Sleep((due - now).max(PACE_NS));
                }
            }
            let idx = match self.pending.take() {
                Some(i) => i,
                None => self.draw(),
            };
            if let Err(e) = self.region.access(cx, idx, self.write) {
                self.pending = Some(idx);
                return fault_step(e);
            }
            self.done += 1;
            if budget.spent(cx) && self.done < self.count {
                return Step::Continue;
            }
        }
        if self.hold {
            return Step::Hold;
        }
        self.region.release(cx);
        Step::Exit(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn seq_visits_pages_in_order_and_wraps() {
        let d = draws(&args("5 --pattern seq --count 3"), 6).unwrap();
        assert_eq!(d, [0, 0, 0, 0, 0, 0]);
        let d = draws(&args("12K --pattern seq"), 7).unwrap();
        assert_eq!(d, [0, 1, 2, 0, 1, 2, 0]);
        assert!(draws(&args("12K --pattern seq --theta 1"), 1).is_err());
    }

    #[test]
    fn draws_follow_the_seed() {
        let a = draws(&args("1M --seed 3"), 100).unwrap();
        let mut g = SplitMix64::new(3);
        let b: Vec<u64> = (0..100).map(|_| g.below(256)).collect();
        assert_eq!(a, b);
        let z = draws(&args("1M --seed 3 --pattern zipf --theta 1.2"), 100).unwrap();
        let zipf = Zipf::new(256, 1.2);
        let mut g = SplitMix64::new(3);
        let w: Vec<u64> = (0..100).map(|_| zipf.sample(&mut g)).collect();
        assert_eq!(z, w);
    }
}
