//! Helpers shared by the workloads: page arithmetic, the per-step work bound and what a
//! failed memory operation means for the program.

use memcgsim_model::{Fault, Step, TaskCtx, PAGE_SIZE};

/// Pages a program handles per `step` call at most (a bound on each step's work).
pub(crate) const PAGES_PER_STEP: u64 = 4096;

/// The largest SIZE the workloads accept (1 TiB).
pub(crate) const MAX_SIZE: u64 = 1 << 40;

/// User CPU time to copy one page between a user buffer and the page cache (read/write).
pub(crate) const COPY_NS: u64 = 100;

pub(crate) fn pages(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE_SIZE)
}

/// What a program returns when a page operation fails: on `Killed` it returns at once (the
/// scheduler ends the task; if the task was not killed, e.g. a charge failed while another
/// task was OOM-killed, the next step retries the same page), on `Segv` it dies with
/// SIGSEGV's status.
pub(crate) fn fault_step(f: Fault) -> Step {
    match f {
        Fault::Killed => Step::Continue,
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
