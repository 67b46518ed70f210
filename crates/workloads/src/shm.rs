//! `shmem`: shared anonymous memory, as a program gets it from mmap(MAP_SHARED |
//! MAP_ANONYMOUS) or from memfd_create(), ftruncate() and a shared mapping of the memfd
//! (mm/shmem.c's shmem_zero_setup() and memfd; the model's shmem.rs). Every page is written
//! through the mapping, pass after pass; the object goes with the unmap at the end.

use memcgsim_model::{FileMap, Program, Step, TaskCtx};

use crate::common::{fault_step, finished, mmap_fail, pages, Budget};

pub(crate) struct Shm {
    pages: u64,
    passes: u64,
    hold: bool,
    map: Option<FileMap>,
    pass: u64,
    next: u64,
}

pub(crate) fn build(args: &[String]) -> Result<Box<dyn Program>, String> {
    let mut size = None;
    let mut passes = 1u64;
    let mut hold = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--hold" => hold = true,
            // A memfd mapped shared is the same shmem object to the kernel's memory
            // controller as an anonymous shared mapping.
            "--memfd" => {}
            "--passes" => {
                let n = it.next().ok_or("shmem: --passes needs a count")?;
                passes = n
                    .parse::<u64>()
                    .ok()
                    .filter(|&p| (1..=1_000_000).contains(&p))
                    .ok_or_else(|| format!("shmem: bad pass count '{n}' (1..=1000000)"))?;
            }
            s if s.starts_with("--") => return Err(format!("shmem: unknown option '{s}'")),
            s => {
                if size.is_some() {
                    return Err(format!("shmem: unexpected argument '{s}'"));
                }
                let b = memcgsim_model::units::parse_size(s).map_err(|e| format!("shmem: {e}"))?;
                size = Some(b);
            }
        }
    }
    let size = size.ok_or("shmem: missing SIZE")?;
    Ok(Box::new(Shm {
        pages: pages(size),
        passes,
        hold,
        map: None,
        pass: 0,
        next: 0,
    }))
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
