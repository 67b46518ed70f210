//! `mem_eater SIZE [--chunks N] [--nap DURATION] [--hold]` — the memory hog of seed 000's
//! soft-limit tests (TEST 2 and 3): it "consumes the memory in 100 chunks with 1s nap after
//! each mmap+populate so that both loads have chance to fight for the memory". Each chunk is
//! its own anonymous mapping whose every page is written from user space; the task sleeps
//! `--nap` between chunks (not after the last one), so the whole allocation takes at least
//! (chunks − 1) × nap. At the end it holds the memory (`--hold`) or unmaps it and exits 0.
//!
//! Defaults: 100 chunks, 1 s nap. If SIZE has fewer pages than chunks, there is one chunk
//! per page.

use memcgsim_model::{Program, Step, TaskCtx, Vma};

use crate::args::{parse, Spec};
use crate::common::{fault_step, pages, Budget, MAX_SIZE};

pub(crate) const SPEC: Spec = Spec {
    flags: &["--hold"],
    options: &["--chunks", "--nap"],
    positional: &["SIZE"],
    required: 1,
};

pub(crate) fn build(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("mem_eater", args, &SPEC)?;
    let size = a.pos_size(0, "SIZE", 1, MAX_SIZE)?.expect("required");
    let chunks = a.count("--chunks", 100, 1, 1_000_000)?;
    let nap = a.duration("--nap", 1_000_000_000, 3_600_000_000_000)?;
    Ok(Box::new(MemEater::new(size, chunks, nap, a.flag("--hold"))))
}

pub struct MemEater {
    pages: u64,
    chunks: u64,
    nap_ns: u64,
    hold: bool,
    vmas: Vec<Vma>,
    /// The chunk being filled.
    chunk: u64,
    /// Next page of it.
    next: u64,
    cur: Option<Vma>,
}

impl MemEater {
    pub fn new(size: u64, chunks: u64, nap_ns: u64, hold: bool) -> MemEater {
        let pages = pages(size);
        MemEater {
            pages,
            chunks: chunks.clamp(1, pages.max(1)),
            nap_ns,
            hold,
            vmas: Vec::new(),
            chunk: 0,
            next: 0,
            cur: None,
        }
    }

    /// Pages of chunk `c`: SIZE split as evenly as possible.
    fn chunk_len(&self, c: u64) -> u64 {
        let edge = |i: u64| (self.pages as u128 * i as u128 / self.chunks as u128) as u64;
        edge(c + 1) - edge(c)
    }
}

impl Program for MemEater {
    fn name(&self) -> &str {
        "mem_eater"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let mut budget = Budget::new();
        while self.chunk < self.chunks {
            let len = self.chunk_len(self.chunk);
            let vma = match self.cur {
                Some(v) => v,
                None => match cx.mmap_anon(len, false) {
                    Ok(v) => {
                        self.vmas.push(v);
                        self.cur = Some(v);
                        v
                    }
                    Err(f) => return crate::common::mmap_fail(f),
                },
            };
            while self.next < len {
                if let Err(f) = cx.touch(vma, self.next) {
                    return fault_step(f);
                }
                self.next += 1;
                if budget.spent(cx) && self.next < len {
                    return Step::Continue;
                }
            }
            self.cur = None;
            self.next = 0;
            self.chunk += 1;
            if self.chunk < self.chunks {
                if self.nap_ns > 0 {
                    return Step::Sleep(self.nap_ns);
                }
                return Step::Continue;
            }
        }
        if self.hold {
            return Step::Hold;
        }
        for v in self.vmas.drain(..) {
            cx.munmap(v);
        }
        Step::Exit(0)
    }
}
