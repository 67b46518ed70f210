//! `shmem`: shared anonymous memory, as a program gets it from mmap(MAP_SHARED |
//! MAP_ANONYMOUS) or from memfd_create(), ftruncate() and a shared mapping of the memfd
//! (mm/shmem.c's shmem_zero_setup() and memfd; the model's shmem.rs). Every page is written
//! through the mapping, pass after pass; the object goes with the unmap at the end.
//! `--madvise hugepage|nohugepage` gives the mapping MADV_HUGEPAGE or MADV_NOHUGEPAGE,
//! which decide its huge pages under shmem_enabled's `advise` and `within_size`.

use memcgsim_model::huge_memory::HugeAdvice;
use memcgsim_model::{FileMap, Program, Step, TaskCtx};

use crate::common::{fault_step, finished, mmap_fail, pages, Budget};

pub(crate) struct Shm {
    pages: u64,
    passes: u64,
    hold: bool,
    huge: HugeAdvice,
    map: Option<FileMap>,
    pass: u64,
    next: u64,
}

impl Shm {
    pub(crate) fn new(size: u64, passes: u64, hold: bool, huge: HugeAdvice) -> Shm {
        Shm {
            pages: pages(size),
            passes,
            hold,
            huge,
            map: None,
            pass: 0,
            next: 0,
        }
    }
}

impl Program for Shm {
    fn name(&self) -> &str {
        "shmem"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        let map = match self.map {
            Some(m) => m,
            None => match cx.mmap_shared_anon(self.pages) {
                Ok(m) => {
                    if self.huge != HugeAdvice::None {
                        cx.madvise_huge_shared(m, self.huge);
                    }
                    self.map = Some(m);
                    m
                }
                Err(f) => return mmap_fail(f),
            },
        };
        let mut budget = Budget::new();
        while self.pass < self.passes {
            while self.next < self.pages {
                if let Err(e) = cx.write_shared(map, self.next) {
                    return fault_step(e);
                }
                self.next += 1;
                if budget.spent(cx) {
                    return Step::Continue;
                }
            }
            self.next = 0;
            self.pass += 1;
        }
        if !self.hold {
            cx.munmap_file(map);
        }
        finished(self.hold)
    }
}
