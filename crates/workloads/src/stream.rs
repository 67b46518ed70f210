//! Streaming file I/O.
//!
//! * `dd SIZE [--file NAME] [--bs SIZE]` — the stream writer of seeds 000 and 001
//!   (`dd if=/dev/zero of=local.file bs=1024`, `dd if=/dev/zero of=big.file bs=1M`): opens the
//!   named file (default `dd.out`) with O_TRUNC, then write()s SIZE sequentially, one page
//!   at a time, and exits 0. Every page costs [`COPY_NS`] of user CPU for the copy and every
//!   `--bs` block (default 1M; dd's own default is 512 bytes) a write() system call of
//!   [`WRITE_SYSCALL_NS`]. The pages stay dirty until the flusher writes them back.
//! * `cat --file NAME [SIZE] [--cold]` (alias `readonce`) — a read-once stream, as
//!   `cat file > /dev/null` or the `dd if=tmp10G of=/dev/null` of seed 002: read()s the file from its
//!   first page to its last, [`COPY_NS`] per page. With SIZE, a smaller file is first
//!   extended to SIZE: with ftruncate (a sparse file, whose holes cost no I/O), or with
//!   `--cold` as a file whose data is on disk and not cached (written before the caches were
//!   dropped), so that the stream waits for the device through the kernel's readahead.
//!   Pages read once stay on the inactive file list.

use memcgsim_model::{Fault, FileId, Program, Step, TaskCtx, PAGE_SIZE};

use crate::args::{parse, Spec};
use crate::common::{fault_step, pages, Budget, COPY_NS, MAX_SIZE};

/// CPU time of one write() system call (entry, exit, file bookkeeping), charged per block.
pub const WRITE_SYSCALL_NS: u64 = 500;

pub(crate) const DD_SPEC: Spec = Spec {
    flags: &[],
    options: &["--file", "--bs"],
    positional: &["SIZE"],
    required: 1,
};

pub(crate) fn build_dd(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("dd", args, &DD_SPEC)?;
    let size = a.pos_size(0, "SIZE", 1, MAX_SIZE)?.expect("required");
    let bs = a.size("--bs", 1 << 20, 1, 1 << 30)?;
    let file = a.string("--file").unwrap_or_else(|| "dd.out".to_string());
    Ok(Box::new(Dd {
        size,
        pages: pages(size),
        bs,
        name: file,
        file: None,
        next: 0,
    }))
}

pub struct Dd {
    size: u64,
    pages: u64,
    bs: u64,
    name: String,
    file: Option<FileId>,
    next: u64,
}

impl Dd {
    /// write() calls whose block starts inside page `i`.
    fn syscalls_in_page(&self, i: u64) -> u64 {
        let start = i * PAGE_SIZE;
        let end = ((i + 1) * PAGE_SIZE).min(self.size);
        end.div_ceil(self.bs) - start.div_ceil(self.bs)
    }
}

impl Program for Dd {
    fn name(&self) -> &str {
        "dd"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let f = match self.file {
            Some(f) => f,
            None => {
                let f = cx.open(&self.name);
                cx.truncate(f, 0);
                self.file = Some(f);
                f
            }
        };
        let mut budget = Budget::new();
        while self.next < self.pages {
            match cx.write(f, self.next) {
                Ok(()) => {}
                // write() failed (ENOSPC on a full tmpfs): dd reports it and exits 1.
                Err(Fault::Segv) => return Step::Exit(1),
                Err(e) => return fault_step(e),
            }
            cx.compute(COPY_NS + self.syscalls_in_page(self.next) * WRITE_SYSCALL_NS);
            self.next += 1;
            if budget.spent(cx) && self.next < self.pages {
                return Step::Continue;
            }
        }
        Step::Exit(0)
    }
}

pub(crate) const CAT_SPEC: Spec = Spec {
    flags: &["--cold"],
    options: &["--file"],
    positional: &["SIZE"],
    required: 0,
};

pub(crate) fn build_cat(name: &'static str, args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse(name, args, &CAT_SPEC)?;
    let size = a.pos_size(0, "SIZE", 1, MAX_SIZE)?;
    let file = a
        .string("--file")
        .ok_or_else(|| format!("{name}: missing --file NAME"))?;
    Ok(Box::new(Cat {
        comm: name,
        cold: a.flag("--cold"),
        min_pages: size.map(pages).unwrap_or(0),
        name: file,
        file: None,
        next: 0,
        end: 0,
    }))
}

pub struct Cat {
    comm: &'static str,
    cold: bool,
    min_pages: u64,
    name: String,
    file: Option<FileId>,
    next: u64,
    end: u64,
}

impl Program for Cat {
    fn name(&self) -> &str {
        self.comm
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let f = match self.file {
            Some(f) => f,
            None => {
                let f = cx.open(&self.name);
                if cx.file_size(f) < self.min_pages {
                    if self.cold {
                        cx.extend_on_disk(f, self.min_pages);
                    } else {
                        cx.truncate(f, self.min_pages);
                    }
                }
                self.file = Some(f);
                self.end = cx.file_size(f);
                f
            }
        };
        let mut budget = Budget::new();
        while self.next < self.end {
            if let Err(e) = cx.read(f, self.next) {
                return fault_step(e);
            }
            cx.compute(COPY_NS);
            self.next += 1;
            if budget.spent(cx) && self.next < self.end {
                return Step::Continue;
            }
        }
        Step::Exit(0)
    }
}
