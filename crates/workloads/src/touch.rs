//! Anonymous-memory touch loops.
//!
//! * `pagetest SIZE [--kind anon|mapped|shared] [--passes N]` — seed 002's pagetest ("can
//!   allocate different kinds of memory, mapped, malloc'ed or shared; allocates and touches
//!   all the memory in a loop (2 times)"), run against a 400M limit with 1000M of touches.
//!   File mmap and shared memory are not in the model, so `mapped` and `shared` are modelled
//!   as private anonymous memory too; the kind is accepted so scripts read like the original.
//!   Default: 2 passes. Exits 0 (frees the memory).
//! * `usemem SIZE [--random] [--passes N] [--nap DURATION] [--seed N] [--hold]` — vm-scalability's usemem
//!   (`--nap`: sleep between passes, leaving the working set idle):
//!   allocate SIZE and write every page, sequentially or (`--random`) in a random order that
//!   still visits every page once per pass (a fresh order each pass, from `--seed`, default
//!   derived from the arguments). Default: 1 pass. Holds with `--hold`, else frees and
//!   exits 0.
//! * `fault-bench [SIZE] [--mode read|write] [--iterations N] [--file NAME]` — seed 001's
//!   page-fault microbenchmark: open a file, truncate it to SIZE (default 4K, the seed's one
//!   page), then N times (default 10000) mmap it shared, read (`x = *p`) or write (`*p = 1`)
//!   each page and munmap it ([`TaskCtx::fault_file`]; [`MMAP_NS`] of CPU per iteration for
//!   the two system calls). Writes dirty the page (dirty accounting, balance_dirty_pages);
//!   later writes find it dirty until writeback cleans it. The seed's parallel modes are
//!   copies with a file each (`count = 16`, `--file foo.{copy}`). The file is an unnamed
//!   temporary one unless `--file` names it (then it stays after exit, as the benchmark's
//!   per-CPU files do).

use memcgsim_model::{FileId, Program, Step, TaskCtx, Vma, PAGE_SIZE};

use crate::args::{parse, Spec};
use crate::common::{fault_step, pages, Budget, MAX_SIZE};
use crate::rand::{mix64, Permutation};

pub(crate) const PAGETEST_SPEC: Spec = Spec {
    flags: &[],
    options: &["--kind", "--passes"],
    positional: &["SIZE"],
    required: 1,
};

pub(crate) const USEMEM_SPEC: Spec = Spec {
    flags: &["--random", "--hold"],
    options: &["--passes", "--seed", "--nap", "--data"],
    positional: &["SIZE"],
    required: 1,
};

pub(crate) fn build_pagetest(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("pagetest", args, &PAGETEST_SPEC)?;
    let size = a.pos_size(0, "SIZE", 1, MAX_SIZE)?.expect("required");
    a.choice("--kind", &["anon", "mapped", "shared"], "anon")?;
    let passes = a.count("--passes", 2, 1, 1_000_000)?;
    Ok(Box::new(TouchLoop::new("pagetest", pages(size), passes)))
}

pub(crate) fn build_usemem(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("usemem", args, &USEMEM_SPEC)?;
    let size = a.pos_size(0, "SIZE", 1, MAX_SIZE)?.expect("required");
    let passes = a.count("--passes", 1, 1, 1_000_000)?;
    let mut t = TouchLoop::new("usemem", pages(size), passes);
    t.hold = a.flag("--hold");
    t.nap_ns = a.duration("--nap", 0, 3_600_000_000_000)?;
    t.data = crate::common::page_data("usemem", a.value("--data"))?;
    if a.flag("--random") {
        t.random = Some(a.seed()?);
    }
    Ok(Box::new(t))
}

/// Map a region and write every page, `passes` times, in order or in a random order.
pub struct TouchLoop {
    comm: &'static str,
    pages: u64,
    passes: u64,
    hold: bool,
    /// Idle time between passes (the working set sits untouched meanwhile).
    nap_ns: u64,
    /// What each write puts in its page (`--data`).
    data: memcgsim_model::zswap::PageData,
    /// Seed of the random orders, if random.
    random: Option<u64>,
    perm: Option<Permutation>,
    vma: Option<Vma>,
    pass: u64,
    next: u64,
}

impl TouchLoop {
    pub fn new(comm: &'static str, pages: u64, passes: u64) -> TouchLoop {
        TouchLoop {
            comm,
            pages,
            passes: passes.max(1),
            hold: false,
            nap_ns: 0,
            data: Default::default(),
            random: None,
            perm: None,
            vma: None,
            pass: 0,
            next: 0,
        }
    }
}

impl Program for TouchLoop {
    fn name(&self) -> &str {
        self.comm
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let vma = match self.vma {
            Some(v) => v,
            None => match cx.mmap_anon(self.pages, false) {
                Ok(v) => {
                    cx.set_page_data(v, self.data);
                    self.vma = Some(v);
                    v
                }
                Err(f) => return crate::common::mmap_fail(f),
            },
        };
        let mut budget = Budget::new();
        while self.pass < self.passes {
            if let Some(seed) = self.random {
                if self.perm.is_none() {
                    self.perm = Some(Permutation::new(self.pages, mix64(seed ^ self.pass)));
                }
            }
            while self.next < self.pages {
                let idx = match &self.perm {
                    Some(p) => p.apply(self.next),
                    None => self.next,
                };
                if let Err(f) = cx.touch(vma, idx) {
                    return fault_step(f);
                }
                self.next += 1;
                if budget.spent(cx) {
                    return Step::Continue;
                }
            }
            self.next = 0;
            self.pass += 1;
            self.perm = None;
            if self.nap_ns > 0 && self.pass < self.passes {
                return Step::Sleep(self.nap_ns);
            }
        }
        if self.hold {
            return Step::Hold;
        }
        cx.munmap(vma);
        Step::Exit(0)
    }
}

/// CPU of one iteration's mmap() and munmap() system calls.
pub const MMAP_NS: u64 = 1000;

pub(crate) const FAULT_BENCH_SPEC: Spec = Spec {
    flags: &[],
    options: &["--mode", "--iterations", "--file"],
    positional: &["SIZE"],
    required: 0,
};

pub(crate) fn build_fault_bench(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("fault-bench", args, &FAULT_BENCH_SPEC)?;
    let size = a.pos_size(0, "SIZE", 1, MAX_SIZE)?.unwrap_or(PAGE_SIZE);
    let mode = a.choice("--mode", &["read", "write"], "write")?;
    let iterations = a.count("--iterations", 10_000, 1, 1_000_000_000)?;
    Ok(Box::new(FaultBench {
        pages: pages(size),
        write: mode == "write",
        iterations,
        file_name: a.string("--file"),
        iter: 0,
        next: 0,
        file: None,
    }))
}

pub struct FaultBench {
    pages: u64,
    write: bool,
    iterations: u64,
    file_name: Option<String>,
    iter: u64,
    next: u64,
    file: Option<FileId>,
}

impl Program for FaultBench {
    fn name(&self) -> &str {
        "fault-bench"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let f = match self.file {
            Some(f) => f,
            None => {
                let f = match &self.file_name {
                    Some(n) => cx.open(n),
                    None => cx.tmpfile(),
                };
                // truncate(f, SIZE): shrink or extend to exactly SIZE.
                cx.truncate(f, self.pages);
                self.file = Some(f);
                f
            }
        };
        let mut budget = Budget::new();
        while self.iter < self.iterations {
            if self.next == 0 {
                cx.compute(MMAP_NS);
            }
            while self.next < self.pages {
                if let Err(e) = cx.fault_file(f, self.next, self.write) {
                    return fault_step(e);
                }
                self.next += 1;
                if budget.spent(cx) {
                    return Step::Continue;
                }
            }
            self.next = 0;
            self.iter += 1;
        }
        Step::Exit(0)
    }
}
