//! Helpers shared by the workloads: page arithmetic, the per-step work bound and what a
//! failed memory operation means for the program.

use memcgsim_model::zswap::PageData;
use memcgsim_model::{Fault, FileId, FileMap, Step, TaskCtx, Vma, PAGE_SIZE};

/// Pages a program handles per `step` call at most (a bound on each step's work).
pub(crate) const PAGES_PER_STEP: u64 = 4096;

/// The largest SIZE the workloads accept (1 TiB).
pub(crate) const MAX_SIZE: u64 = 1 << 40;

/// User CPU time to copy one page between a user buffer and the page cache (read/write).
pub(crate) const COPY_NS: u64 = 100;

pub(crate) fn pages(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE_SIZE)
}

/// What a program returns when a page operation fails: on `Killed` or `Blocked` it returns
/// at once (the scheduler ends a killed task, or runs a blocked one again when its sleep
/// ends; if the task was not killed, e.g. a charge failed while another task was
/// OOM-killed, the next step retries the same page), on `Segv` it dies with SIGSEGV's
/// status.
/// What a failed mmap() makes a program do: ENOMEM (the overcommit check) ends it with
/// status 1, after the reason the model recorded on the task (`TaskCtx::mmap_anon`), which
/// the script prints as the program's own error; a sleep or a kill in the charge of the
/// mapping's kernel objects retries or ends it as a fault would.
pub(crate) fn mmap_fail(f: Fault) -> Step {
    match f {
        Fault::Segv => Step::Exit(1),
        Fault::Killed | Fault::Blocked => Step::Continue,
    }
}

/// A program's work is done: it holds its memory until killed (`--hold`) or exits 0.
pub(crate) fn finished(hold: bool) -> Step {
    if hold {
        Step::Hold
    } else {
        Step::Exit(0)
    }
}

pub(crate) fn fault_step(f: Fault) -> Step {
    match f {
        Fault::Killed | Fault::Blocked => Step::Continue,
        Fault::Segv => Step::Exit(139),
    }
}

/// Counts a step's page operations against [`PAGES_PER_STEP`] and the task's quantum.
pub(crate) struct Budget(u64);

impl Budget {
    pub fn new() -> Budget {
        Budget(PAGES_PER_STEP)
    }

    /// Account one operation; true when the step must end now (return `Step::Continue`).
    #[inline]
    pub fn spent(&mut self, cx: &TaskCtx<'_>) -> bool {
        self.0 = self.0.saturating_sub(1);
        self.0 == 0 || !cx.has_time()
    }
}

/// The pages an access workload works on: a private anonymous mapping, or a named file reached
/// with read()/write() (file mmap is not modelled).
pub(crate) struct Region {
    pub pages: u64,
    file_name: Option<String>,
    vma: Option<Vma>,
    file: Option<FileId>,
    /// How the file is reached: read()/write(), or a shared read-only mapping (VM_EXEC
    /// when `Some(true)`).
    pub mmap: Option<bool>,
    /// A missing part of the file is created on disk and not cached (a file written before
    /// the caches were dropped), instead of as a hole.
    pub cold: bool,
    map: Option<FileMap>,
    /// What an anonymous region's pages hold (`--data`).
    pub data: PageData,
}

impl Region {
    pub fn new(pages: u64, file_name: Option<String>) -> Region {
        Region {
            pages,
            file_name,
            vma: None,
            file: None,
            mmap: None,
            cold: false,
            map: None,
            data: PageData::Byte,
        }
    }

    /// Map the region or open the file (extending it to the region's size, and mapping it
    /// if asked) on first use.
    pub fn setup(&mut self, cx: &mut TaskCtx<'_>) -> Result<(), Step> {
        match &self.file_name {
            Some(n) if self.file.is_none() => {
                let f = cx.open(n);
                if cx.file_size(f) < self.pages {
                    if self.cold {
                        cx.extend_on_disk(f, self.pages);
                    } else {
                        cx.truncate(f, self.pages);
                    }
                }
                self.file = Some(f);
                if let Some(exec) = self.mmap {
                    self.map = Some(cx.mmap_file(f, exec));
                }
            }
            None if self.vma.is_none() => match cx.mmap_anon(self.pages, false) {
                Ok(v) => {
                    cx.set_page_data(v, self.data);
                    self.vma = Some(v);
                }
                Err(f) => return Err(mmap_fail(f)),
            },
            _ => {}
        }
        Ok(())
    }

    /// A hint that page `idx` will be accessed soon, for a file read through read() (the
    /// only case a hint serves now); it changes nothing in the simulation.
    #[inline]
    pub fn prefetch(&self, cx: &TaskCtx<'_>, idx: u64, stage: u8) {
        if let (None, None, Some(f)) = (self.map, self.vma, self.file) {
            cx.prefetch_read(f, idx, stage);
        }
    }

    /// Access page `idx`: a touch of the mapping, or a read()/write() of the file.
    pub fn access(&self, cx: &mut TaskCtx<'_>, idx: u64, write: bool) -> Result<(), Fault> {
        if let Some(m) = self.map {
            return cx.touch_file(m, idx);
        }
        match (self.vma, self.file) {
            (Some(v), _) => cx.touch(v, idx),
            (None, Some(f)) if write => cx.write(f, idx),
            (None, Some(f)) => cx.read(f, idx),
            (None, None) => Err(Fault::Segv),
        }
    }

    /// Unmap the mapping, if any (files stay).
    pub fn release(&mut self, cx: &mut TaskCtx<'_>) {
        if let Some(v) = self.vma.take() {
            cx.munmap(v);
        }
        if let Some(m) = self.map.take() {
            cx.munmap_file(m);
        }
    }
}

/// The `--data` option of the workloads that write anonymous memory: what each write puts
/// in its page, which is what zswap compresses.
pub(crate) fn page_data(name: &str, v: Option<&str>) -> Result<PageData, String> {
    match v {
        None => Ok(PageData::Byte),
        Some(v) => PageData::parse(v).map_err(|e| format!("{name}: {e}")),
    }
}
