//! Independent jobs on a few threads, results in job order: the engine of `compare --jobs`
//! and of local sweeps.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Run `n` jobs, job `i` being `f(i)`, on up to `jobs` threads, results in job order. After a
/// failure no new job starts; the first failure in job order is returned.
pub(crate) fn run_parallel<T: Send>(
    n: usize,
    jobs: usize,
    f: impl Fn(usize) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    let jobs = jobs.clamp(1, n.max(1));
    if jobs == 1 {
        return (0..n).map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Vec<Mutex<Option<Result<T, String>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                // Jobs are taken in order, and none after a failure: every job before the
                // first failing one has been started, so the first error in job order is the
                // one a sequential run reports.
                if failed.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    break;
                }
                let r = f(i);
                if r.is_err() {
                    failed.store(true, Ordering::SeqCst);
                }
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    let mut out = Vec::with_capacity(n);
    for slot in slots {
        match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(r)) => out.push(r),
            Some(Err(e)) => return Err(e),
            None => unreachable!("a job after the first failure was reported first"),
        }
    }
    Ok(out)
}
