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
//! * `fault-bench SIZE [--mode read|write] [--iterations N] [--file NAME]` — seed 001's page
//!   fault microbenchmark (mmap, `*p = 1` or `x = *p`, munmap, in a loop). Write mode (the
//!   default) maps SIZE of anonymous memory, writes every page and unmaps it, N times
//!   (default 10): every iteration takes SIZE of fresh faults, charges and uncharges. Read
//!   mode reads every page of a file of SIZE with read() N times, since file mmap is not in
//!   the model: the first iteration brings the pages into the page cache, later ones hit.
//!   The file is an unnamed temporary one unless `--file` names it (then it stays after
//!   exit, as the benchmark's per-CPU files do).

use memcgsim_model::{FileId, Program, Step, TaskCtx, Vma};

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
    options: &["--passes", "--seed", "--nap"],
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
                    self.vma = Some(v);
                    v
                }
                Err(_) => return Step::Exit(1),
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

pub(crate) const FAULT_BENCH_SPEC: Spec = Spec {
    flags: &[],
    options: &["--mode", "--iterations", "--file"],
    positional: &["SIZE"],
    required: 1,
};

pub(crate) fn build_fault_bench(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("fault-bench", args, &FAULT_BENCH_SPEC)?;
    let size = a.pos_size(0, "SIZE", 1, MAX_SIZE)?.expect("required");
    let mode = a.choice("--mode", &["read", "write"], "write")?;
    let iterations = a.count("--iterations", 10, 1, 100_000_000)?;
    let file = a.string("--file");
    if file.is_some() && mode == "write" {
        return Err("fault-bench: --file needs --mode read".into());
    }
    Ok(Box::new(FaultBench {
        pages: pages(size),
        write: mode == "write",
        iterations,
        file_name: file,
        iter: 0,
        next: 0,
        vma: None,
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
    vma: Option<Vma>,
    file: Option<FileId>,
}

impl FaultBench {
    fn step_write(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let mut budget = Budget::new();
        while self.iter < self.iterations {
            let vma = match self.vma {
                Some(v) => v,
                None => match cx.mmap_anon(self.pages, false) {
                    Ok(v) => {
                        self.vma = Some(v);
                        v
                    }
                    Err(_) => return Step::Exit(1),
                },
            };
            while self.next < self.pages {
                if let Err(f) = cx.touch(vma, self.next) {
                    return fault_step(f);
                }
                self.next += 1;
                if budget.spent(cx) {
                    return Step::Continue;
                }
            }
            cx.munmap(vma);
            self.vma = None;
            self.next = 0;
            self.iter += 1;
        }
        Step::Exit(0)
    }

    fn step_read(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let f = match self.file {
            Some(f) => f,
            None => {
                let f = match &self.file_name {
                    Some(n) => cx.open(n),
                    None => cx.tmpfile(),
                };
                if cx.file_size(f) < self.pages {
                    cx.truncate(f, self.pages);
                }
                self.file = Some(f);
                f
            }
        };
        let mut budget = Budget::new();
        while self.iter < self.iterations {
            while self.next < self.pages {
                if let Err(e) = cx.read(f, self.next) {
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

impl Program for FaultBench {
    fn name(&self) -> &str {
        "fault-bench"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        if self.write {
            self.step_write(cx)
        } else {
            self.step_read(cx)
        }
    }
}
