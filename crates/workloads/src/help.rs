//! What each workload is and how it is called, kept in one table: the usage line (the
//! argument syntax), the one-line summary [`crate::describe`] appends to it and the long
//! help text of `help/NAME.txt`, which [`crate::help`] returns after the usage line.
//! docs/SCRIPTING.md carries every help text verbatim (a test checks it).

/// The texts of one workload.
pub(crate) struct Doc {
    pub name: &'static str,
    /// `NAME ARGS...`: the first line of the help text and of the description, and the end
    /// of every argument error.
    pub usage: &'static str,
    /// `usage: summary`, one line.
    pub describe: &'static str,
    /// The usage line, then the body; no trailing newline.
    pub help: &'static str,
}

/// `doc!(name, usage, summary)` takes the body from `help/NAME.txt`; a fourth argument
/// gives the body's parts instead.
macro_rules! doc {
    ($name:literal, $usage:literal, $summary:literal) => {
        doc!(
            $name,
            $usage,
            $summary,
            include_str!(concat!("help/", $name, ".txt"))
        )
    };
    ($name:literal, $usage:literal, $summary:literal, $($body:tt)+) => {
        Doc {
            name: $name,
            usage: $usage,
            describe: concat!($usage, ": ", $summary),
            help: concat!($usage, "\n", $($body)+).trim_ascii_end(),
        }
    };
}

/// Every workload, in the order of [`crate::WORKLOADS`].
pub(crate) const DOCS: &[Doc] = &[
    doc!(
        "anon",
        "anon SIZE [--passes N] [--madvise hugepage|nohugepage] [--dontneed SIZE] [--data KIND] [--hold]",
        "write every page of SIZE of anonymous memory N times (default 1), then free it"
    ),
    doc!(
        "pagecache",
        "pagecache SIZE [--file NAME] [--hold]",
        "grow a file (default: a temporary one) by SIZE and read the new pages"
    ),
    doc!(
        "mlock",
        "mlock SIZE [--hold]",
        "map SIZE locked, faulting every page in onto the unevictable list, then unmap"
    ),
    doc!(
        "mem_eater",
        "mem_eater SIZE [--chunks N] [--nap DURATION] [--hold]",
        "allocate SIZE of anonymous memory in N chunks (default 100), napping between chunks (default 1s)"
    ),
    doc!(
        "dd",
        "dd SIZE [--file NAME] [--bs SIZE]",
        "write SIZE sequentially to a truncated file (default dd.out) in --bs blocks (default 1M), leaving dirty page cache"
    ),
    doc!(
        "cat",
        "cat --file NAME [SIZE] [--cold]",
        "read a file once from start to end (extended to SIZE first if smaller: sparse, or on disk with --cold)"
    ),
    doc!(
        "readonce",
        "readonce --file NAME [SIZE] [--cold]",
        "the same as cat: a read-once stream through a file",
        "Another name for cat: the same program, whose task is named readonce.\n",
        include_str!("help/cat.txt")
    ),
    doc!(
        "tar",
        "tar SIZE [--files N] [--gzip] [--archive NAME] [--dest PREFIX] [--seed N]",
        "extract an archive of SIZE into N files (default 1000), reads interleaved with writes; --gzip: a compressed archive, gunzip's CPU"
    ),
    doc!(
        "kbuild",
        "kbuild [--jobs N] [--units N] [--tree SIZE] [--anon SIZE] [--obj SIZE] [--cpu DURATION] [--exec SIZE] [--cc NAME] [--src NAME] [--seed N] [--shard K/N] [--cold]",
        "a make -jN kernel build, or shard K of N of one; --cold: the tree is on disk, not cached (defaults: 4 jobs, 3000 units, 1G tree, 40M heap, 200K objects, 300ms CPU per unit)"
    ),
    doc!(
        "pagetest",
        "pagetest SIZE [--kind anon|mapped|shared] [--passes N]",
        "allocate SIZE and write every page N times (default 2); every kind is anonymous memory in the model"
    ),
    doc!(
        "fault-bench",
        "fault-bench [SIZE] [--mode read|write] [--iterations N] [--file NAME]",
        "N times (default 10000) mmap a file of SIZE (default 4K) shared, write or read each page, munmap"
    ),
    doc!(
        "hackbench",
        "hackbench [--groups N] [--procs N] [--loops N] [--size SIZE]",
        "rounds (default 100) of groups x procs (default 10 x 40) short-lived processes each writing a small buffer (default 64K)"
    ),
    doc!(
        "usemem",
        "usemem SIZE [--random] [--passes N] [--nap DURATION] [--seed N] [--data KIND] [--hold]",
        "write every page of SIZE, in order or in a random order, N times (default 1), sleeping --nap between passes"
    ),
    doc!(
        "access",
        "access SIZE [--pattern random|zipf|seq] [--theta F] [--count N] [--rate N] [--file NAME] [--seed N] [--data KIND] [--read-only] [--mmap] [--exec] [--cold] [--hold]",
        "N random or Zipf page accesses (default 10 x pages) to anonymous memory, a file, or a file mapping"
    ),
    doc!(
        "trace",
        "trace FILE [--format oraclegeneral|csv] [--region SIZE] [--file NAME] [--limit N] [--speed X] [--hold]",
        "replay a cache trace's accesses as page accesses in a region (default 1G)"
    ),
    doc!(
        "dcache",
        "dcache N [--hold]",
        "N lookups of names that do not exist, each leaving a negative dentry (kernel memory, reclaimable slab)"
    ),
    doc!(
        "threads",
        "threads N [--hold]",
        "create N threads, each with a kernel stack, a task_struct and a user stack page; they exit at once unless --hold"
    ),
    doc!(
        "shmem",
        "shmem SIZE [--passes N] [--memfd] [--madvise hugepage|nohugepage] [--hold]",
        "write every page of SIZE of shared anonymous memory (or a memfd) N times, then unmap it"
    ),
];

/// The texts of workload `name`.
pub(crate) fn doc(name: &str) -> Option<&'static Doc> {
    DOCS.iter().find(|d| d.name == name)
}
