//! Programs that simulated tasks run, each a small state machine over [`TaskCtx`] doing a
//! bounded amount of work per step. Randomness comes from each workload's own generator,
//! seeded by `--seed N` or from its arguments, so every run is deterministic.
//!
//! The helpers of the kernel's memcg selftests:
//!
//! * `anon SIZE [--passes N] [--hold]` — alloc_anon(): malloc SIZE, write one byte per page,
//!   free, exit 0. `--passes N` touches the whole region N times (seed 002's pagetest loop;
//!   later passes hit resident pages or fault swapped ones back). With `--hold` it keeps the
//!   memory until killed (alloc_anon_noexit).
//! * `pagecache SIZE [--file NAME] [--hold]` — alloc_pagecache(): grow a file by SIZE with
//!   ftruncate and read the new part page by page, charging the page cache to the reader.
//!   Without `--file`, an unnamed temporary file (O_TMPFILE); tasks naming the same file each
//!   add and read their own SIZE, as the selftests' shared fd does.
//! * `mlock SIZE [--hold]` — alloc_anon_mlock(): mmap SIZE and mlock it, one in-kernel
//!   fault-in of every page onto the unevictable list, then munmap and exit.
//! * `shmem SIZE [--passes N] [--memfd] [--madvise hugepage|nohugepage] [--hold]` — shared
//!   anonymous memory (or a memfd): write every page through a shared mapping N times, then
//!   unmap it, which frees it.
//!
//! The programs of the experiments the model reproduces (each module says which):
//!
//! * `mem_eater` (seed 000), `dd` (seeds 000 and 001), `cat`/`readonce` (seed 002), `tar`
//!   (seed 001), `kbuild` (seeds 000 and 003), `pagetest` and `hackbench` (seed 002),
//!   `fault-bench` (seed 001), `usemem` (vm-scalability; seed 002's idle working set),
//!   `access` (random, Zipf and sequential page accesses) and `trace` (replay of libCacheSim
//!   oracleGeneral or CSV cache traces).
//!
//! [`usage`] gives each workload's argument syntax, [`describe`] a one-line description and
//! [`help`] the full help text (docs/SCRIPTING.md shows them all). Every argument error of
//! [`build`] ends with the usage line.

mod access;
mod args;
mod common;
mod hackbench;
mod help;
mod kbuild;
mod kernel;
mod mem_eater;
pub mod rand;
mod shm;
mod stream;
mod tar;
mod touch;
pub mod trace;

use memcgsim_model::huge_memory::HugeAdvice;
use memcgsim_model::units::parse_size;
use memcgsim_model::{Fault, FileId, Program, Step, TaskCtx, Vma};

use common::{finished, pages, PAGES_PER_STEP};

/// Names of the workloads `build` knows, for help texts (`readonce` is another name for
/// `cat`).
pub const WORKLOADS: &[&str] = &[
    "anon",
    "pagecache",
    "mlock",
    "mem_eater",
    "dd",
    "cat",
    "readonce",
    "tar",
    "kbuild",
    "pagetest",
    "fault-bench",
    "hackbench",
    "usemem",
    "access",
    "trace",
    "dcache",
    "threads",
    "shmem",
];

/// The argument syntax of a workload, e.g. `usemem SIZE [--random] [--passes N] ...`: the
/// first line of its [`help`] text and of its [`describe`] line.
pub fn usage(name: &str) -> Option<&'static str> {
    help::doc(name).map(|d| d.usage)
}

/// A one-line description of a workload, with its argument syntax, for help texts.
pub fn describe(name: &str) -> Option<&'static str> {
    help::doc(name).map(|d| d.describe)
}

/// The help text of a workload, several lines without a trailing newline: the [`usage`]
/// line, what the workload models and how it behaves in the model, every argument with its
/// default and range, and the seed experiments that use it.
pub fn help(name: &str) -> Option<&'static str> {
    help::doc(name).map(|d| d.help)
}

/// The first `n` pages the `access` workload with these arguments visits, in order (the
/// same parsing, default seed and generators as [`build`]), for checking other
/// implementations of it bit for bit.
pub fn access_pages(args: &[String], n: usize) -> Result<Vec<u64>, String> {
    access::draws(args, n)
}

struct Args {
    size: u64,
    hold: bool,
    file: Option<String>,
    passes: u64,
    huge: HugeAdvice,
    /// anon --dontneed: pages freed at the end of every 2 MiB after the last pass.
    dontneed: u64,
    /// anon --data: what each write puts in its page.
    data: memcgsim_model::zswap::PageData,
}

fn parse_args(name: &str, args: &[String], allow_file: bool) -> Result<Args, String> {
    let mut size = None;
    let mut hold = false;
    let mut file = None;
    let mut passes = 1u64;
    let mut huge = HugeAdvice::None;
    let mut dontneed = 0u64;
    let mut data = memcgsim_model::zswap::PageData::Byte;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--hold" => hold = true,
            // shmem: a memfd mapped shared is the same shmem object to the kernel's memory
            // controller as an anonymous shared mapping.
            "--memfd" if name == "shmem" => {}
            "--file" if allow_file => {
                let f = it
                    .next()
                    .ok_or_else(|| format!("{name}: --file needs a name"))?;
                file = Some(f.clone());
            }
            "--passes" if !allow_file => {
                let n = it
                    .next()
                    .ok_or_else(|| format!("{name}: --passes needs a count"))?;
                passes = n
                    .parse::<u64>()
                    .ok()
                    .filter(|&p| (1..=1_000_000).contains(&p))
                    .ok_or_else(|| format!("{name}: bad pass count '{n}' (1..=1000000)"))?;
            }
            "--dontneed" if name == "anon" => {
                let v = it
                    .next()
                    .ok_or_else(|| format!("{name}: --dontneed needs a size"))?;
                let b = parse_size(v).map_err(|e| format!("{name}: --dontneed: {e}"))?;
                dontneed = pages(b);
                if !(1..=512).contains(&dontneed) {
                    return Err(format!(
                        "{name}: bad --dontneed '{v}' (4K to 2M, the part of each 2 MiB freed)"
                    ));
                }
            }
            "--data" if name == "anon" => {
                let v = it.next().map(String::as_str);
                if v.is_none() {
                    return Err(format!("{name}: --data needs a value"));
                }
                data = common::page_data(name, v)?;
            }
            "--madvise" if name == "anon" || name == "shmem" => {
                let v = it
                    .next()
                    .ok_or_else(|| format!("{name}: --madvise needs hugepage or nohugepage"))?;
                huge = match v.as_str() {
                    "hugepage" => HugeAdvice::Huge,
                    "nohugepage" => HugeAdvice::NoHuge,
                    _ => {
                        return Err(format!(
                            "{name}: bad --madvise '{v}' (hugepage or nohugepage)"
                        ))
                    }
                };
            }
            s if s.starts_with("--") => return Err(format!("{name}: unknown option '{s}'")),
            s => {
                if size.is_some() {
                    return Err(format!("{name}: unexpected argument '{s}'"));
                }
                size = Some(parse_size(s).map_err(|e| format!("{name}: {e}"))?);
            }
        }
    }
    let size = size.ok_or_else(|| format!("{name}: missing SIZE"))?;
    Ok(Args {
        size,
        hold,
        file,
        passes,
        huge,
        dontneed,
        data,
    })
}

/// Build a workload from its command-line form, e.g. `("anon", ["50M", "--hold"])`.
///
/// An error is one line. For a known workload it ends with the workload's usage line, e.g.
/// `usemem: missing SIZE (usage: usemem SIZE [--random] ...)`; an unknown workload's error
/// lists the known ones.
pub fn build(name: &str, args: &[String]) -> Result<Box<dyn Program>, String> {
    let Some(usage) = usage(name) else {
        return Err(format!(
            "unknown workload '{name}' (known: {})",
            WORKLOADS.join(", ")
        ));
    };
    build_known(name, args).map_err(|e| format!("{e} (usage: {usage})"))
}

fn build_known(name: &str, args: &[String]) -> Result<Box<dyn Program>, String> {
    match name {
        "anon" => {
            let a = parse_args(name, args, false)?;
            let mut w = Anon::new(a.size, a.hold, false).with_passes(a.passes);
            w.huge = a.huge;
            w.dontneed = a.dontneed;
            w.data = a.data;
            Ok(Box::new(w))
        }
        "mlock" => {
            let a = parse_args(name, args, false)?;
            if a.passes != 1 {
                return Err("mlock: --passes is not supported".into());
            }
            Ok(Box::new(Anon::new(a.size, a.hold, true)))
        }
        "pagecache" => {
            let a = parse_args(name, args, true)?;
            Ok(Box::new(PageCache::new(a.size, a.file, a.hold)))
        }
        "mem_eater" => mem_eater::build(args),
        "dd" => stream::build_dd(args),
        "cat" => stream::build_cat("cat", args),
        "readonce" => stream::build_cat("readonce", args),
        "tar" => tar::build(args),
        "kbuild" => kbuild::build(args),
        "pagetest" => touch::build_pagetest(args),
        "fault-bench" => touch::build_fault_bench(args),
        "hackbench" => hackbench::build(args),
        "usemem" => touch::build_usemem(args),
        "access" => access::build(args),
        "trace" => trace::build(args),
        "dcache" => kernel::build_dcache(args),
        "threads" => kernel::build_threads(args),
        "shmem" => {
            let a = parse_args(name, args, false)?;
            Ok(Box::new(shm::Shm::new(a.size, a.passes, a.hold, a.huge)))
        }
        _ => Err(format!("{name}: documented but not built")),
    }
}

/// Does this argument list make the workload hold its memory at the end?
pub fn holds(args: &[String]) -> bool {
    args.iter().any(|a| a == "--hold")
}

/// anon / mlock.
pub struct Anon {
    pages: u64,
    hold: bool,
    mlock: bool,
    /// madvise() advice given to the mapping right after it is made.
    huge: HugeAdvice,
    /// Pages at the end of every 2 MiB freed with MADV_DONTNEED after the last pass.
    dontneed: u64,
    /// What each write puts in its page (`--data`).
    data: memcgsim_model::zswap::PageData,
    vma: Option<Vma>,
    next: u64,
    passes: u64,
    pass: u64,
}

impl Anon {
    pub fn new(size: u64, hold: bool, mlock: bool) -> Anon {
        Anon {
            pages: pages(size),
            hold,
            mlock,
            huge: HugeAdvice::None,
            dontneed: 0,
            data: Default::default(),
            vma: None,
            next: 0,
            passes: 1,
            pass: 0,
        }
    }

    /// Touch the region `n` times.
    pub fn with_passes(mut self, n: u64) -> Anon {
        self.passes = n.max(1);
        self
    }
}

impl Program for Anon {
    fn name(&self) -> &str {
        if self.mlock {
            "mlock"
        } else {
            "anon"
        }
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let vma = match self.vma {
            Some(v) => v,
            None => match cx.mmap_anon(self.pages, self.mlock) {
                Ok(v) => {
                    if self.huge != HugeAdvice::None {
                        cx.madvise_huge(v, self.huge);
                    }
                    cx.set_page_data(v, self.data);
                    self.vma = Some(v);
                    v
                }
                Err(f) => return crate::common::mmap_fail(f),
            },
        };
        let end = (self.next + PAGES_PER_STEP).min(self.pages);
        while self.next < end {
            let r = if self.mlock {
                cx.populate(vma, self.next)
            } else {
                cx.touch(vma, self.next)
            };
            match r {
                Ok(()) => self.next += 1,
                Err(Fault::Killed | Fault::Blocked) => return Step::Continue,
                Err(Fault::Segv) => return Step::Exit(139),
            }
            if !cx.has_time() {
                break;
            }
        }
        if self.next < self.pages {
            return Step::Continue;
        }
        self.pass += 1;
        if self.pass < self.passes {
            self.next = 0;
            return Step::Continue;
        }
        if self.mlock && cx.return_to_user().is_err() {
            return Step::Continue;
        }
        if self.dontneed > 0 {
            // MADV_DONTNEED of the end of every whole 2 MiB, as an allocator returns the
            // memory it no longer uses.
            const HPAGE: u64 = 512;
            for r in 0..self.pages / HPAGE {
                let end = (r + 1) * HPAGE;
                cx.madvise_dontneed(vma, end - self.dontneed, end);
            }
            self.dontneed = 0;
        }
        if self.hold {
            return Step::Hold;
        }
        cx.munmap(vma);
        Step::Exit(0)
    }
}

/// pagecache.
pub struct PageCache {
    size_pages: u64,
    name: Option<String>,
    hold: bool,
    file: Option<FileId>,
    next: u64,
    end: u64,
}

impl PageCache {
    pub fn new(size: u64, name: Option<String>, hold: bool) -> PageCache {
        PageCache {
            size_pages: pages(size),
            name,
            hold,
            file: None,
            next: 0,
            end: 0,
        }
    }
}

impl Program for PageCache {
    fn name(&self) -> &str {
        "pagecache"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let f = match self.file {
            Some(f) => f,
            None => {
                let f = match &self.name {
                    Some(n) => cx.open(n),
                    None => cx.tmpfile(),
                };
                let old = cx.file_size(f);
                cx.truncate(f, old + self.size_pages);
                self.file = Some(f);
                self.next = old;
                self.end = old + self.size_pages;
                f
            }
        };
        let stop = (self.next + PAGES_PER_STEP).min(self.end);
        while self.next < stop {
            match cx.read(f, self.next) {
                Ok(()) => self.next += 1,
                Err(Fault::Killed | Fault::Blocked) => return Step::Continue,
                Err(Fault::Segv) => return Step::Exit(1),
            }
            // Each read() of a page returns to user space, where memory.high work that its
            // charges queued runs (mem_cgroup_handle_over_high()).
            if cx.return_to_user().is_err() {
                return Step::Continue;
            }
            if !cx.has_time() {
                break;
            }
        }
        if self.next < self.end {
            return Step::Continue;
        }
        finished(self.hold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn builds_known_workloads() {
        assert_eq!(build("anon", &args(&["50M"])).unwrap().name(), "anon");
        assert_eq!(
            build("anon", &args(&["1G", "--passes", "2", "--hold"]))
                .unwrap()
                .name(),
            "anon"
        );
        assert_eq!(build("mlock", &args(&["200M"])).unwrap().name(), "mlock");
        assert_eq!(
            build("pagecache", &args(&["50M", "--file", "f", "--hold"]))
                .unwrap()
                .name(),
            "pagecache"
        );
        assert!(holds(&args(&["1M", "--hold"])));
        assert!(!holds(&args(&["1M"])));
    }

    #[test]
    fn rejects_bad_arguments_with_a_message() {
        let err = |n: &str, a: &[&str]| build(n, &args(a)).err().expect("an error");
        assert!(err("anon", &[]).contains("missing SIZE"));
        assert!(err("anon", &["x"]).contains("bad size"));
        assert!(err("anon", &["1M", "2M"]).contains("unexpected argument"));
        assert!(err("anon", &["1M", "--passes", "0"]).contains("bad pass count"));
        assert!(err("anon", &["1M", "--file", "f"]).contains("unknown option"));
        assert!(err("pagecache", &["1M", "--file"]).contains("--file needs a name"));
        assert!(err("mlock", &["1M", "--passes", "2"]).contains("not supported"));
        assert!(err("nosuch", &["1M"]).contains("unknown workload"));
        assert!(!err("nosuch", &["1M"]).contains("usage"));
        for (w, a) in [
            ("anon", &[][..]),
            ("anon", &["x"][..]),
            ("anon", &["1M", "--passes=2"][..]),
            ("pagecache", &["1M", "--file"][..]),
            ("mlock", &["1M", "--passes", "2"][..]),
        ] {
            let e = err(w, a);
            assert!(
                e.ends_with(&format!(" (usage: {})", usage(w).unwrap())),
                "{e}"
            );
        }
    }

    /// What a workload's parser accepts: flags, options taking a value, positionals.
    fn accepted(name: &str) -> (&[&str], &[&str], &[&str]) {
        let spec = match name {
            "anon" => {
                return (
                    &["--hold"],
                    &["--passes", "--madvise", "--dontneed", "--data"],
                    &["SIZE"],
                )
            }
            "pagecache" => return (&["--hold"], &["--file"], &["SIZE"]),
            "mlock" => return (&["--hold"], &[], &["SIZE"]),
            "shmem" => {
                return (
                    &["--hold", "--memfd"],
                    &["--passes", "--madvise"],
                    &["SIZE"],
                )
            }
            "mem_eater" => &mem_eater::SPEC,
            "dd" => &stream::DD_SPEC,
            "cat" | "readonce" => &stream::CAT_SPEC,
            "tar" => &tar::SPEC,
            "kbuild" => &kbuild::SPEC,
            "pagetest" => &touch::PAGETEST_SPEC,
            "fault-bench" => &touch::FAULT_BENCH_SPEC,
            "hackbench" => &hackbench::SPEC,
            "usemem" => &touch::USEMEM_SPEC,
            "access" => &access::SPEC,
            "trace" => &trace::SPEC,
            "dcache" => &kernel::DCACHE_SPEC,
            "threads" => &kernel::THREADS_SPEC,
            _ => panic!("{name}: no parser"),
        };
        (spec.flags, spec.options, spec.positional)
    }

    #[test]
    fn usage_lines_match_the_parsers() {
        assert_eq!(
            help::DOCS.iter().map(|d| d.name).collect::<Vec<_>>(),
            WORKLOADS
        );
        for &w in WORKLOADS {
            let u = usage(w).unwrap();
            assert_eq!(describe(w).unwrap().split_once(": ").unwrap().0, u);
            assert_eq!(help(w).unwrap().lines().next(), Some(u));
            let (flags, options, positional) = accepted(w);
            let words: Vec<&str> = u
                .split_whitespace()
                .map(|s| s.trim_matches(|c| c == '[' || c == ']'))
                .collect();
            assert_eq!(words[0], w);
            let (mut f, mut o, mut p) = (Vec::new(), Vec::new(), Vec::new());
            let mut i = 1;
            while i < words.len() {
                let word = words[i];
                if options.contains(&word) {
                    // An option and the name of its value.
                    let value = words.get(i + 1).copied().unwrap_or("");
                    assert!(!value.is_empty() && !value.starts_with("--"), "{u}");
                    o.push(word);
                    i += 1;
                } else if word.starts_with("--") {
                    f.push(word);
                } else {
                    p.push(word);
                }
                i += 1;
            }
            let sorted = |v: &[&'static str]| {
                let mut v = v.to_vec();
                v.sort();
                v
            };
            assert_eq!(sorted(&f), sorted(flags), "{u}");
            assert_eq!(sorted(&o), sorted(options), "{u}");
            assert_eq!(p, positional, "{u}");
        }
    }

    #[test]
    fn every_workload_is_described_and_builds() {
        for &w in WORKLOADS {
            let d = describe(w).unwrap_or_else(|| panic!("{w} has no description"));
            assert!(d.starts_with(w), "{d}");
            assert!(!d.contains('\n'));
        }
        assert!(describe("nosuch").is_none());
        let good: &[(&str, &[&str], &str)] = &[
            ("mem_eater", &["100M"], "mem_eater"),
            (
                "mem_eater",
                &["1G", "--chunks", "10", "--nap", "500ms", "--hold"],
                "mem_eater",
            ),
            ("mem_eater", &["4K", "--chunks=100", "--nap=0"], "mem_eater"),
            ("dd", &["2G"], "dd"),
            ("dd", &["1M", "--file", "big.file", "--bs", "1024"], "dd"),
            ("cat", &["--file", "tmp10G"], "cat"),
            ("cat", &["--file", "f", "10G"], "cat"),
            ("readonce", &["1G", "--file", "f"], "readonce"),
            ("tar", &["400M"], "tar"),
            ("tar", &["400M", "--files", "35000", "--gzip"], "tar"),
            (
                "tar",
                &[
                    "1M",
                    "--files",
                    "10",
                    "--archive",
                    "a.tgz",
                    "--dest",
                    "x",
                    "--seed",
                    "3",
                ],
                "tar",
            ),
            ("kbuild", &[], "kbuild"),
            ("kbuild", &["--shard", "3/8", "--cold"], "kbuild"),
            (
                "kbuild",
                &[
                    "--jobs", "16", "--units", "10", "--tree", "4M", "--anon", "0", "--obj", "0",
                    "--cpu", "0", "--src", "s", "--seed", "9",
                ],
                "kbuild",
            ),
            ("pagetest", &["1000M"], "pagetest"),
            (
                "pagetest",
                &["1M", "--kind", "shared", "--passes", "3"],
                "pagetest",
            ),
            ("fault-bench", &["4K"], "fault-bench"),
            ("fault-bench", &[], "fault-bench"),
            (
                "fault-bench",
                &[
                    "1M",
                    "--mode",
                    "read",
                    "--iterations",
                    "3",
                    "--file",
                    "foo.0",
                ],
                "fault-bench",
            ),
            ("hackbench", &[], "hackbench"),
            (
                "hackbench",
                &[
                    "--groups", "2", "--procs", "4", "--loops", "3", "--size", "8K",
                ],
                "hackbench",
            ),
            ("usemem", &["1G"], "usemem"),
            (
                "usemem",
                &["1M", "--random", "--passes", "2", "--seed", "0", "--hold"],
                "usemem",
            ),
            ("access", &["1M"], "access"),
            (
                "access",
                &["1M", "--pattern", "zipf", "--theta", "1.2", "--count", "5"],
                "access",
            ),
            (
                "access",
                &["1M", "--file", "f", "--read-only", "--seed", "1", "--hold"],
                "access",
            ),
        ];
        for &(w, a, comm) in good {
            match build(w, &args(a)) {
                Ok(p) => assert_eq!(p.name(), comm),
                Err(e) => panic!("{w} {a:?}: {e}"),
            }
        }
    }

    #[test]
    fn new_workloads_reject_bad_arguments() {
        let bad: &[(&str, &[&str], &str)] = &[
            ("mem_eater", &[], "mem_eater: missing SIZE"),
            ("mem_eater", &["0"], "mem_eater: SIZE '0' is out of range"),
            (
                "mem_eater",
                &["2T"],
                "mem_eater: SIZE '2T' is out of range (1..=1T)",
            ),
            (
                "mem_eater",
                &["1M", "--chunks", "0"],
                "mem_eater: --chunks: bad count '0'",
            ),
            (
                "mem_eater",
                &["1M", "--nap", "1y"],
                "mem_eater: --nap: bad duration '1y'",
            ),
            (
                "mem_eater",
                &["1M", "--nap"],
                "mem_eater: --nap needs a value",
            ),
            (
                "mem_eater",
                &["1M", "--passes", "2"],
                "mem_eater: unknown option '--passes'",
            ),
            ("dd", &["1M", "--bs", "0"], "dd: --bs '0' is out of range"),
            ("dd", &["1M", "--bs", "x"], "dd: --bs: bad size 'x'"),
            ("dd", &["1M", "2M"], "dd: unexpected argument '2M'"),
            ("dd", &["1M", "--file"], "dd: --file needs a value"),
            ("cat", &["1M"], "cat: missing --file NAME"),
            (
                "readonce",
                &["--file", "f", "1Q"],
                "readonce: SIZE: bad size '1Q'",
            ),
            (
                "tar",
                &["1M", "--files", "-1"],
                "tar: --files: bad count '-1'",
            ),
            ("tar", &["1M", "--seed", "x"], "tar: --seed: bad seed 'x'"),
            ("tar", &["--files", "3"], "tar: missing SIZE"),
            ("kbuild", &["1G"], "kbuild: unexpected argument '1G'"),
            (
                "kbuild",
                &["--shard", "9/8"],
                "kbuild: --shard: bad shard '9/8' (expected K/N with 1 <= K <= N <= 1024)",
            ),
            (
                "kbuild",
                &["--shard", "0/8"],
                "kbuild: --shard: bad shard '0/8'",
            ),
            (
                "kbuild",
                &["--shard", "3"],
                "kbuild: --shard: bad shard '3'",
            ),
            ("kbuild", &["--jobs", "0"], "kbuild: --jobs: bad count '0'"),
            (
                "kbuild",
                &["--tree", "0"],
                "kbuild: --tree '0' is out of range",
            ),
            (
                "kbuild",
                &["--anon", "128G"],
                "kbuild: --anon '128G' is out of range (0..=64G)",
            ),
            ("kbuild", &["--cpu", "2h"], "kbuild: --cpu '2h' is too long"),
            (
                "kbuild",
                &["--units", "1", "--units", "2"],
                "kbuild: --units given twice",
            ),
            (
                "pagetest",
                &["1M", "--kind", "file"],
                "pagetest: --kind: bad value 'file' (expected anon or mapped or shared)",
            ),
            (
                "pagetest",
                &["1M", "--passes", "0"],
                "pagetest: --passes: bad count '0'",
            ),
            (
                "fault-bench",
                &["1M", "--mode", "rw"],
                "fault-bench: --mode: bad value 'rw'",
            ),
            (
                "fault-bench",
                &["1M", "--iterations", "0"],
                "fault-bench: --iterations: bad count '0'",
            ),
            (
                "hackbench",
                &["--size", "2G"],
                "hackbench: --size '2G' is out of range",
            ),
            (
                "hackbench",
                &["--groups", "1000", "--procs", "1000"],
                "hackbench: --groups × --procs is 1000000",
            ),
            ("hackbench", &["10"], "hackbench: unexpected argument '10'"),
            (
                "usemem",
                &["1M", "--random=1"],
                "usemem: --random takes no value",
            ),
            (
                "usemem",
                &["1M", "--passes", "x"],
                "usemem: --passes: bad count 'x'",
            ),
            (
                "access",
                &["1M", "--pattern", "hot"],
                "access: --pattern: bad value 'hot'",
            ),
            (
                "access",
                &["1M", "--pattern", "zipf", "--theta", "-1"],
                "access: --theta: bad number '-1'",
            ),
            (
                "access",
                &["1M", "--theta", "1"],
                "access: --theta needs --pattern zipf",
            ),
            (
                "access",
                &["1M", "--count", "0"],
                "access: --count: bad count '0'",
            ),
            (
                "access",
                &["1M", "--read-only"],
                "access: --read-only needs --file",
            ),
            (
                "access",
                &["1M", "--exec"],
                "access: --mmap, --exec and --cold need --file",
            ),
            (
                "access",
                &["1M", "--cold"],
                "access: --mmap, --exec and --cold need --file",
            ),
            ("kbuild", &["--cc", "gcc"], "kbuild: --cc needs --exec SIZE"),
            ("kbuild", &["--exec", "65G"], "kbuild: --exec"),
            ("trace", &[], "trace: missing FILE"),
            (
                "trace",
                &["/nonexistent/t.bin"],
                "trace: /nonexistent/t.bin: cannot open",
            ),
            (
                "trace",
                &["t.bin", "--format", "json"],
                "trace: --format: bad value 'json'",
            ),
            (
                "trace",
                &["t.bin", "--region", "1K"],
                "trace: --region '1K' is out of range (4K..=1T)",
            ),
            (
                "trace",
                &["t.bin", "--limit", "0"],
                "trace: --limit: bad count '0'",
            ),
            (
                "trace",
                &["t.bin", "--speed", "0"],
                "trace: --speed: bad number '0'",
            ),
        ];
        for &(w, a, want) in bad {
            match build(w, &args(a)) {
                Ok(_) => panic!("{w} {a:?} should fail"),
                Err(e) => {
                    assert!(e.starts_with(&format!("{w}: ")), "{e}");
                    assert!(e.contains(want), "{w} {a:?}: got '{e}', want '{want}'");
                    assert!(!e.contains('\n'), "{e}");
                    let tail = format!(" (usage: {})", usage(w).unwrap());
                    assert!(e.ends_with(&tail), "{e}");
                    assert_eq!(e.matches("(usage: ").count(), 1, "{e}");
                }
            }
        }
    }
}
