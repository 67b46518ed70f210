//! `kbuild [--jobs N] [--units N] [--tree SIZE] [--anon SIZE] [--obj SIZE] [--cpu DURATION]
//! [--exec SIZE] [--cc NAME] [--src NAME] [--seed N] [--shard K/N] [--cold]` — a kernel build, the workload of seeds 000 (parallel builds of a
//! distribution config under soft limits; a build squeezed next to mem_eater) and 003 (two
//! `make -j16` defconfig builds while memory.stat is polled).
//!
//! `make -jN` of `--units` compile jobs, modelled inside one task as N interleaved job state
//! machines (so the build's memory footprint is about N × `--anon` plus page cache; its CPU
//! time is serial on the task's one CPU, so elapsed time is at least units × cpu; run
//! several kbuild tasks for parallel CPUs). Each compile unit:
//!
//! 1. maps `--anon` of private anonymous memory (the compiler's heap);
//! 2. reads its share of the source tree — the file `--src` (default `kbuild.src`, created
//!    sparse at `--tree` if missing or smaller; with `--cold`, created on disk and not cached,
//!    as a freshly extracted tree after the caches were dropped, so that reading it and
//!    re-reading what reclaim evicted costs disk reads) — interleaved with the first writes of its
//!    heap. The tree's first quarter stands for the headers, the rest for the .c files:
//!    each unit reads its own 1/units slice of the .c part sequentially (read once), plus
//!    (headers / units) header pages drawn from a Zipf law (theta 0.99, first header pages
//!    most popular), so popular headers are read again and again and get activated;
//! 3. walks its whole heap a second time (optimisation passes);
//! 4. writes `--obj` to its own object file `kbuild.PID.UNIT.o` (truncated first);
//! 5. unmaps its heap.
//!
//! With `--exec SIZE`, each unit also maps the compiler, the file `--cc` (default
//! `kbuild.cc`, created at SIZE on disk and not cached if missing or smaller: an installed
//! compiler and its libraries), shared and executable, for the unit's lifetime, and every
//! page operation first reads one of its pages, drawn from a Zipf law (theta 0.99) as a
//! compiler's hot text is; under pressure, reclaim takes text that the next units fault back
//! from disk.
//!
//! With `--shard K/N` the task compiles only units K−1, K−1+N, K−1+2N, ... of the build, so
//! N tasks with shards 1/N to N/N on the same `--src` do exactly the work of one build
//! between them, on N CPUs (a `make -jN` whose jobs are separate processes).
//!
//! `--cpu` of user CPU per unit is spread evenly over the unit's page operations. Random
//! choices come from `--seed` (default: derived from the arguments).
//!
//! The defaults are close to an x86-64 defconfig build: 3000 units (object files compiled),
//! 4 jobs, a 1G tree (about 1G of sources read in all, 3/4 of it read once), 40M of heap per
//! compiler, 200K per object file (600M of objects), 300 ms of CPU per unit (15 CPU minutes
//! in all). A default build takes 900 s of virtual time and a few seconds of wall time.

use memcgsim_model::{FileId, FileMap, Program, Step, TaskCtx, Vma};

use crate::args::{parse, Spec};
use crate::common::{fault_step, pages, Budget, MAX_SIZE};
use crate::rand::{mix64, SplitMix64, Zipf};

/// Zipf exponent of header popularity.
const HEADER_THETA: f64 = 0.99;
/// Page operations a job does before the next job gets its turn.
const SLICE: u32 = 16;

pub(crate) const SPEC: Spec = Spec {
    flags: &["--cold"],
    options: &[
        "--jobs", "--units", "--tree", "--anon", "--obj", "--cpu", "--src", "--seed", "--shard",
        "--exec", "--cc",
    ],
    positional: &[],
    required: 0,
};

pub(crate) fn build(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("kbuild", args, &SPEC)?;
    let jobs = a.count("--jobs", 4, 1, 1024)?;
    let units = a.count("--units", 3000, 1, 1_000_000)?;
    let tree = a.size("--tree", 1 << 30, 1, MAX_SIZE)?;
    let anon = a.size("--anon", 40 << 20, 0, 64 << 30)?;
    let obj = a.size("--obj", 200 << 10, 0, 64 << 30)?;
    let cpu = a.duration("--cpu", 300_000_000, 3_600_000_000_000)?;
    let exec = a.size("--exec", 0, 0, 64 << 30)?;
    let cc = a.string("--cc").unwrap_or_else(|| "kbuild.cc".to_string());
    if a.value("--cc").is_some() && exec == 0 {
        return Err("kbuild: --cc needs --exec SIZE".into());
    }
    let src = a
        .string("--src")
        .unwrap_or_else(|| "kbuild.src".to_string());
    let seed = a.seed()?;
    let (shard, shards) = match a.value("--shard") {
        None => (1, 1),
        Some(v) => parse_shard(v)?,
    };
    let tree_pages = pages(tree);
    let header_pages = (tree_pages / 4).max(1);
    Ok(Box::new(Kbuild {
        sh: Shared {
            units,
            tree_pages,
            header_pages,
            source_pages: tree_pages - header_pages,
            header_reads: (header_pages / units).max(1),
            zipf: Zipf::new(header_pages, HEADER_THETA),
            anon_pages: pages(anon),
            obj_pages: pages(obj),
            cpu_ns: cpu,
            src,
            seed,
            cold: a.flag("--cold"),
            tree: None,
            exec_pages: pages(exec),
            exec_zipf: (exec > 0).then(|| Zipf::new(pages(exec), HEADER_THETA)),
            cc,
            cc_file: None,
        },
        slots: (0..jobs).map(|_| None).collect(),
        next_unit: shard - 1,
        stride: shards,
        cur: 0,
        slice_used: 0,
    }))
}

/// `K/N` with 1 <= K <= N <= 1024.
fn parse_shard(v: &str) -> Result<(u64, u64), String> {
    let bad =
        || format!("kbuild: --shard: bad shard '{v}' (expected K/N with 1 <= K <= N <= 1024)");
    let (k, n) = v.split_once('/').ok_or_else(bad)?;
    let k: u64 = k.parse().map_err(|_| bad())?;
    let n: u64 = n.parse().map_err(|_| bad())?;
    if k == 0 || k > n || n > 1024 {
        return Err(bad());
    }
    Ok((k, n))
}

/// What all jobs share.
struct Shared {
    units: u64,
    tree_pages: u64,
    header_pages: u64,
    source_pages: u64,
    /// Header pages each unit reads.
    header_reads: u64,
    zipf: Zipf,
    anon_pages: u64,
    obj_pages: u64,
    cpu_ns: u64,
    src: String,
    seed: u64,
    cold: bool,
    tree: Option<FileId>,
    /// The compiler's text (`--exec`), its popularity law, name and file.
    exec_pages: u64,
    exec_zipf: Option<Zipf>,
    cc: String,
    cc_file: Option<FileId>,
}

/// One compile job in flight.
struct Job {
    unit: u64,
    rng: SplitMix64,
    own_start: u64,
    own_len: u64,
    reads_total: u64,
    reads_done: u64,
    /// A header page drawn whose read must be retried.
    pending: Option<u64>,
    vma: Option<Vma>,
    touched: u64,
    retouched: u64,
    obj: Option<FileId>,
    written: u64,
    ops_left: u64,
    cpu_left: u64,
    /// The compiler's mapping, and a text page drawn whose read must be retried.
    text: Option<FileMap>,
    text_pending: Option<u64>,
}

pub struct Kbuild {
    sh: Shared,
    slots: Vec<Option<Job>>,
    next_unit: u64,
    /// Units between two of this task's units (the shard count).
    stride: u64,
    /// The slot whose turn it is, and the operations it has done in this turn.
    cur: usize,
    slice_used: u32,
}

impl Shared {
    fn start(&self, unit: u64, cx: &mut TaskCtx<'_>) -> Result<Job, Step> {
        let edge = |u: u64| (self.source_pages as u128 * u as u128 / self.units as u128) as u64;
        let own_len = edge(unit + 1) - edge(unit);
        let reads_total = own_len + self.header_reads;
        let vma = if self.anon_pages > 0 {
            Some(
                cx.mmap_anon(self.anon_pages, false)
                    .map_err(crate::common::mmap_fail)?,
            )
        } else {
            None
        };
        let text = self.cc_file.map(|f| cx.mmap_file(f, true));
        Ok(Job {
            text,
            text_pending: None,
            unit,
            rng: SplitMix64::new(mix64(self.seed ^ mix64(unit))),
            own_start: self.header_pages + edge(unit),
            own_len,
            reads_total,
            reads_done: 0,
            pending: None,
            vma,
            touched: 0,
            retouched: 0,
            obj: None,
            written: 0,
            ops_left: reads_total + 2 * self.anon_pages + self.obj_pages + 1,
            cpu_left: self.cpu_ns,
        })
    }

    /// One page operation of `job`; Ok(true) when the unit is done.
    fn op(&self, job: &mut Job, cx: &mut TaskCtx<'_>) -> Result<bool, Step> {
        let anon = self.anon_pages;
        let tree = self.tree.expect("tree opened");
        let mut finished = false;
        if let (Some(map), Some(z)) = (job.text, &self.exec_zipf) {
            // The compiler runs: one page of its text.
            let p = *job
                .text_pending
                .get_or_insert_with(|| z.sample(&mut job.rng));
            cx.touch_file(map, p).map_err(fault_step)?;
            job.text_pending = None;
        }
        if job.reads_done < job.reads_total || job.touched < anon {
            // Interleave the reads evenly with the heap's first writes.
            let read = job.reads_done < job.reads_total
                && (job.touched >= anon || job.reads_done * anon <= job.touched * job.reads_total);
            if read {
                let page = if job.reads_done < job.own_len {
                    job.own_start + job.reads_done
                } else {
                    let p = match job.pending.take() {
                        Some(p) => p,
                        None => self.zipf.sample(&mut job.rng),
                    };
                    job.pending = Some(p);
                    p
                };
                cx.read(tree, page).map_err(fault_step)?;
                job.pending = None;
                job.reads_done += 1;
            } else {
                let v = job.vma.expect("heap mapped");
                cx.touch(v, job.touched).map_err(fault_step)?;
                job.touched += 1;
            }
        } else if job.retouched < anon {
            let v = job.vma.expect("heap mapped");
            cx.touch(v, job.retouched).map_err(fault_step)?;
            job.retouched += 1;
        } else if job.written < self.obj_pages {
            let f = match job.obj {
                Some(f) => f,
                None => {
                    let f = cx.open(&format!("kbuild.{}.{}.o", cx.pid(), job.unit));
                    cx.truncate(f, 0);
                    job.obj = Some(f);
                    f
                }
            };
            cx.write(f, job.written).map_err(fault_step)?;
            job.written += 1;
        } else {
            if let Some(v) = job.vma.take() {
                cx.munmap(v);
            }
            if let Some(m) = job.text.take() {
                cx.munmap_file(m);
            }
            finished = true;
        }
        let share = job.cpu_left / job.ops_left.max(1);
        cx.compute(share);
        job.cpu_left -= share;
        job.ops_left = job.ops_left.saturating_sub(1);
        Ok(finished)
    }
}

impl Program for Kbuild {
    fn name(&self) -> &str {
        "kbuild"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        if self.sh.tree.is_none() {
            let f = cx.open(&self.sh.src);
            if cx.file_size(f) < self.sh.tree_pages {
                if self.sh.cold {
                    cx.extend_on_disk(f, self.sh.tree_pages);
                } else {
                    cx.truncate(f, self.sh.tree_pages);
                }
            }
            self.sh.tree = Some(f);
            if self.sh.exec_pages > 0 {
                let cc = cx.open(&self.sh.cc);
                if cx.file_size(cc) < self.sh.exec_pages {
                    cx.extend_on_disk(cc, self.sh.exec_pages);
                }
                self.sh.cc_file = Some(cc);
            }
        }
        let mut budget = Budget::new();
        loop {
            let s = self.cur;
            if self.slots[s].is_none() {
                if self.next_unit < self.sh.units {
                    match self.sh.start(self.next_unit, cx) {
                        Ok(j) => self.slots[s] = Some(j),
                        Err(step) => return step,
                    }
                    self.next_unit += self.stride;
                } else if self.slots.iter().all(Option::is_none) {
                    return Step::Exit(0);
                } else {
                    self.cur = (s + 1) % self.slots.len();
                    self.slice_used = 0;
                    continue;
                }
            }
            let job = self.slots[s].as_mut().expect("a job");
            while self.slice_used < SLICE {
                let done = match self.sh.op(job, cx) {
                    Ok(done) => done,
                    Err(step) => return step,
                };
                self.slice_used += 1;
                let stop = budget.spent(cx);
                if done {
                    self.slots[s] = None;
                    if stop {
                        return Step::Continue;
                    }
                    break;
                }
                if stop {
                    return Step::Continue;
                }
            }
            self.cur = (s + 1) % self.slots.len();
            self.slice_used = 0;
        }
    }
}
