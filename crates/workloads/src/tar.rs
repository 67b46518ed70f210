//! `tar SIZE [--files N] [--gzip] [--archive NAME] [--dest PREFIX] [--seed N]` — the
//! interactive foreground job of seed 001 (`time tar -xzf linux-2.6.36.tar.gz` next to a
//! dirtying `dd`): extract an archive of SIZE into N files.
//!
//! The archive (default name `tar.archive`) is created sparse at its size if it is missing
//! or smaller: SIZE, or with `--gzip` SIZE / [`GZIP_RATIO`] (a compressed tarball, read one
//! compressed page per [`GZIP_RATIO`] extracted pages). Extraction reads it sequentially
//! and, page for page, writes the files
//! `PREFIX.0` … `PREFIX.{N-1}` (default prefix `tar.out`, default N 1000), each truncated to
//! 0 when it is created, so reads and writes interleave as they do in tar. The file sizes sum
//! to SIZE and are log-uniformly spread (1 to 1000 relative weight, at least one page each)
//! as source trees' are, drawn from `--seed` (default: derived from the arguments). Each page
//! costs [`TAR_PAGE_NS`] of user CPU (copying in and out, header parsing), or with `--gzip`
//! [`GUNZIP_PAGE_NS`]: `tar -xz` runs gzip in a second process feeding tar through a pipe,
//! so the pipeline moves at its slower stage, gunzip, and the one modelled task carries that
//! stage's cost (a writer blocked in balance_dirty_pages() stalls gunzip too, the pipe being
//! only 64 KiB). Each file costs [`FILE_CREATE_NS`] more (open with O_CREAT, close, and
//! restoring the mode and times). If SIZE has fewer pages than N, there is one file per page.
//!
//! Calibration (a guess, docs/FIDELITY.md): with `--gzip`, `tar 400M --files 35000` alone
//! takes about 3.6 s, as the seed's `tar -xzf linux-2.6.36.tar.gz` took 3.8 s on a 2010
//! machine when no other writer competed with it for dirty memory.

use memcgsim_model::{FileId, Program, Step, TaskCtx};

use crate::args::{parse, Spec};
use crate::common::{fault_step, pages, Budget, COPY_NS, MAX_SIZE};
use crate::rand::SplitMix64;

/// User CPU per extracted page: a copy in, a copy out and a share of header handling.
pub const TAR_PAGE_NS: u64 = 2 * COPY_NS + 100;

/// User CPU of gunzip per extracted page (about 130 MB/s of output, one 2010 core).
pub const GUNZIP_PAGE_NS: u64 = 30_000;

/// Extracted bytes per archive byte with `--gzip` (a kernel source tarball's, 9:2).
pub const GZIP_RATIO: (u64, u64) = (9, 2);

/// CPU per extracted file: creating, closing and stamping it.
pub const FILE_CREATE_NS: u64 = 15_000;

pub(crate) const SPEC: Spec = Spec {
    flags: &["--gzip"],
    options: &["--files", "--archive", "--dest", "--seed"],
    positional: &["SIZE"],
    required: 1,
};

pub(crate) fn build(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("tar", args, &SPEC)?;
    let size = a.pos_size(0, "SIZE", 1, MAX_SIZE)?.expect("required");
    let files = a.count("--files", 1000, 1, 1_000_000)?;
    let archive = a
        .string("--archive")
        .unwrap_or_else(|| "tar.archive".to_string());
    let dest = a.string("--dest").unwrap_or_else(|| "tar.out".to_string());
    let seed = a.seed()?;
    let mut t = Tar::new(pages(size), files, archive, dest, seed);
    t.gzip = a.flag("--gzip");
    Ok(Box::new(t))
}

/// Split `total` pages into `n` (≤ total) sizes of at least one page, log-uniform weights.
pub(crate) fn split_sizes(total: u64, n: u64, seed: u64) -> Vec<u64> {
    let n = n.clamp(1, total.max(1));
    let mut rng = SplitMix64::new(seed);
    let weights: Vec<f64> = (0..n).map(|_| (rng.unit() * 1000f64.ln()).exp()).collect();
    let sum: f64 = weights.iter().sum();
    let spare = total - n;
    let mut sizes: Vec<u64> = weights
        .iter()
        .map(|w| 1 + (spare as f64 * w / sum).floor() as u64)
        .collect();
    let mut left = total - sizes.iter().sum::<u64>();
    // Rounding leaves fewer than n pages: one more for the first files.
    for s in sizes.iter_mut() {
        if left == 0 {
            break;
        }
        *s += 1;
        left -= 1;
    }
    sizes
}

pub struct Tar {
    pages: u64,
    /// The archive is gzip-compressed: smaller, and gunzip's CPU per page.
    gzip: bool,
    archive_name: String,
    dest: String,
    sizes: Vec<u64>,
    archive: Option<FileId>,
    /// Next extracted page (its archive page is `archive_page(pos)`).
    pos: u64,
    /// File being written, its handle and next page.
    cur: usize,
    out: Option<FileId>,
    off: u64,
    /// The archive page at `pos` has been read.
    read_done: bool,
}

impl Tar {
    pub fn new(pages: u64, files: u64, archive: String, dest: String, seed: u64) -> Tar {
        Tar {
            pages,
            gzip: false,
            archive_name: archive,
            dest,
            sizes: split_sizes(pages, files, seed),
            archive: None,
            pos: 0,
            cur: 0,
            out: None,
            off: 0,
            read_done: false,
        }
    }

    /// The archive page holding extracted page `i`.
    fn archive_page(&self, i: u64) -> u64 {
        if self.gzip {
            i * GZIP_RATIO.1 / GZIP_RATIO.0
        } else {
            i
        }
    }

    /// Pages of the archive.
    fn archive_pages(&self) -> u64 {
        self.archive_page(self.pages - 1) + 1
    }
}

impl Program for Tar {
    fn name(&self) -> &str {
        "tar"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let archive = match self.archive {
            Some(f) => f,
            None => {
                let f = cx.open(&self.archive_name);
                if cx.file_size(f) < self.archive_pages() {
                    cx.truncate(f, self.archive_pages());
                }
                self.archive = Some(f);
                f
            }
        };
        let mut budget = Budget::new();
        while self.pos < self.pages {
            let out = match self.out {
                Some(f) => f,
                None => {
                    let f = cx.open(&format!("{}.{}", self.dest, self.cur));
                    cx.truncate(f, 0);
                    cx.compute(FILE_CREATE_NS);
                    self.out = Some(f);
                    self.off = 0;
                    f
                }
            };
            // Each archive page is read once, even if a write has to be retried.
            let apage = self.archive_page(self.pos);
            let first = self.pos == 0 || self.archive_page(self.pos - 1) != apage;
            if first && !self.read_done {
                if let Err(e) = cx.read(archive, apage) {
                    return fault_step(e);
                }
                self.read_done = true;
            }
            if let Err(e) = cx.write(out, self.off) {
                return fault_step(e);
            }
            self.read_done = false;
            cx.compute(if self.gzip {
                GUNZIP_PAGE_NS
            } else {
                TAR_PAGE_NS
            });
            self.pos += 1;
            self.off += 1;
            if self.off == self.sizes[self.cur] {
                self.cur += 1;
                self.out = None;
            }
            if budget.spent(cx) && self.pos < self.pages {
                return Step::Continue;
            }
        }
        Step::Exit(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_sum_to_the_total() {
        for &(total, n) in &[
            (1000u64, 10u64),
            (1024, 1000),
            (5, 10),
            (1, 1),
            (100_000, 1000),
        ] {
            let s = split_sizes(total, n, 5);
            assert_eq!(s.len() as u64, n.min(total));
            assert_eq!(s.iter().sum::<u64>(), total);
            assert!(s.iter().all(|&x| x >= 1));
        }
        let s = split_sizes(100_000, 1000, 5);
        let (min, max) = (s.iter().min().unwrap(), s.iter().max().unwrap());
        assert!(max / min > 50, "sizes should vary: {min}..{max}");
        assert_eq!(s, split_sizes(100_000, 1000, 5));
    }
}
