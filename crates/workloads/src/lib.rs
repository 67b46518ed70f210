//! Programs that simulated tasks run, each a small state machine over [`TaskCtx`], modelled on
//! the helpers of the kernel's memcg selftests:
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

use memcgsim_model::units::parse_size;
use memcgsim_model::{Fault, FileId, Program, Step, TaskCtx, Vma, PAGE_SIZE};

/// Names of the workloads `build` knows, for help texts.
pub const WORKLOADS: &[&str] = &["anon", "pagecache", "mlock"];

/// Pages a program handles per `step` call at most (a bound on each step's work).
const PAGES_PER_STEP: u64 = 4096;

struct Args {
    size: u64,
    hold: bool,
    file: Option<String>,
    passes: u64,
}

fn parse_args(name: &str, args: &[String], allow_file: bool) -> Result<Args, String> {
    let mut size = None;
    let mut hold = false;
    let mut file = None;
    let mut passes = 1u64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--hold" => hold = true,
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
    })
}

/// Build a workload from its command-line form, e.g. `("anon", ["50M", "--hold"])`.
pub fn build(name: &str, args: &[String]) -> Result<Box<dyn Program>, String> {
    match name {
        "anon" => {
            let a = parse_args(name, args, false)?;
            Ok(Box::new(
                Anon::new(a.size, a.hold, false).with_passes(a.passes),
            ))
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
        _ => Err(format!(
            "unknown workload '{name}' (known: {})",
            WORKLOADS.join(", ")
        )),
    }
}

/// Does this argument list make the workload hold its memory at the end?
pub fn holds(args: &[String]) -> bool {
    args.iter().any(|a| a == "--hold")
}

fn pages(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE_SIZE)
}

/// anon / mlock.
pub struct Anon {
    pages: u64,
    hold: bool,
    mlock: bool,
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
                    self.vma = Some(v);
                    v
                }
                Err(_) => return Step::Exit(1),
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
                Err(Fault::Killed) => return Step::Continue,
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
                Err(Fault::Killed) => return Step::Continue,
                Err(Fault::Segv) => return Step::Exit(1),
            }
            if !cx.has_time() {
                break;
            }
        }
        if self.next < self.end {
            return Step::Continue;
        }
        if self.hold {
            Step::Hold
        } else {
            Step::Exit(0)
        }
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
        assert!(err("dd", &["1M"]).contains("unknown workload"));
    }
}
