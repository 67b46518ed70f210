//! Workloads that make the kernel allocate memory for themselves, as the kernel's
//! test_kmem.c does: `dcache` (alloc_dcache(): lookups of names that do not exist, each
//! leaving a negative dentry) and `threads` (pthread_create() of N threads, each with a
//! kernel stack, a task_struct and an 8 MiB user stack of which one page is touched).
//!
//! The user stacks are glibc's (nptl/allocate_stack.c): a joined thread's stack goes into
//! the process's stack cache rather than back to the kernel, and the next pthread_create()
//! takes the most recently cached stack, whose touched page is still mapped; the cache keeps
//! at most 40 MiB of stacks (stack_cache_maxsize) and unmaps the oldest beyond that.

use memcgsim_model::{Fault, Program, Step, TaskCtx, Vma};

use crate::args::{parse, Spec};
use crate::common::{fault_step, finished, mmap_fail};

pub(crate) const DCACHE_SPEC: Spec = Spec {
    flags: &["--hold"],
    options: &[],
    positional: &["N"],
    required: 1,
};
pub(crate) const THREADS_SPEC: Spec = Spec {
    flags: &["--hold"],
    options: &[],
    positional: &["N"],
    required: 1,
};

/// Lookups per step.
const LOOKUPS_PER_STEP: u64 = 1024;
/// A thread's user stack: glibc's default 8 MiB plus the guard page.
const THREAD_STACK_PAGES: u64 = 8 * 256 + 1;
/// glibc's stack_cache_maxsize: 40 MiB of cached stacks, guard pages included.
const STACK_CACHE_MAX_PAGES: u64 = 40 * 256;

fn count(
    name: &'static str,
    args: &[String],
    spec: &Spec,
    max: u64,
) -> Result<(u64, bool), String> {
    let p = parse(name, args, spec)?;
    let v = p.positional(0).unwrap_or("");
    let n: u64 = v
        .parse()
        .map_err(|_| format!("{name}: N: expected a number, got '{v}'"))?;
    if n == 0 || n > max {
        return Err(format!("{name}: N '{v}' is out of range (1..={max})"));
    }
    Ok((n, p.flag("--hold")))
}

pub(crate) fn build_dcache(args: &[String]) -> Result<Box<dyn Program>, String> {
    let (n, hold) = count("dcache", args, &DCACHE_SPEC, 100_000_000)?;
    Ok(Box::new(Dcache { n, done: 0, hold }))
}

pub(crate) fn build_threads(args: &[String]) -> Result<Box<dyn Program>, String> {
    let (n, hold) = count("threads", args, &THREADS_SPEC, 100_000)?;
    Ok(Box::new(Threads {
        n,
        done: 0,
        hold,
        stack: None,
        cache: Vec::new(),
    }))
}

pub struct Dcache {
    n: u64,
    done: u64,
    hold: bool,
}

impl Program for Dcache {
    fn name(&self) -> &str {
        "dcache"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        while self.done < self.n {
            let k = (self.n - self.done).min(LOOKUPS_PER_STEP);
            if let Err(f) = cx.lookup_negative(k) {
                return fault_step(f);
            }
            self.done += k;
            if !cx.has_time() {
                return Step::Continue;
            }
        }
        finished(self.hold)
    }
}

pub struct Threads {
    n: u64,
    done: u64,
    hold: bool,
    /// The user stack of the thread being created.
    stack: Option<Vma>,
    /// glibc's stack cache: stacks of joined threads, oldest first.
    cache: Vec<Vma>,
}

impl Threads {
    /// get_cached_stack(): the most recently cached stack (they all have the default size),
    /// or a new mapping.
    fn allocate_stack(&mut self, cx: &mut TaskCtx<'_>) -> Result<Vma, Fault> {
        if let Some(v) = self.cache.pop() {
            return Ok(v);
        }
        cx.mmap_anon(THREAD_STACK_PAGES, false)
    }

    /// queue_stack(): a joined thread's stack joins the cache; beyond stack_cache_maxsize
    /// the oldest cached stacks are unmapped (free_stacks()).
    fn release_stack(&mut self, cx: &mut TaskCtx<'_>, vma: Vma) {
        self.cache.push(vma);
        while self.cache.len() as u64 * THREAD_STACK_PAGES > STACK_CACHE_MAX_PAGES {
            let old = self.cache.remove(0);
            cx.munmap(old);
        }
    }
}

impl Program for Threads {
    fn name(&self) -> &str {
        "threads"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        while self.done < self.n {
            let vma = match self.stack {
                Some(v) => v,
                None => match self.allocate_stack(cx) {
                    Ok(v) => {
                        self.stack = Some(v);
                        v
                    }
                    Err(f) => return mmap_fail(f),
                },
            };
            // The new thread's first stack page (its descriptor and TLS sit at the top): a
            // fault for a new stack, a hit for a cached one.
            if let Err(f) = cx.touch(vma, THREAD_STACK_PAGES - 1) {
                return fault_step(f);
            }
            match cx.clone_thread() {
                Ok(()) => {}
                // pthread_create() fails: the program reports it and exits 1.
                Err(Fault::Segv) => return Step::Exit(1),
                Err(f) => return fault_step(f),
            }
            self.stack = None;
            self.done += 1;
            if !self.hold {
                // The thread exits at once and is joined; its stack goes to the cache.
                cx.exit_thread();
                self.release_stack(cx, vma);
            }
            if !cx.has_time() {
                return Step::Continue;
            }
        }
        finished(self.hold)
    }
}
