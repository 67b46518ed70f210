//! The bodies of memcgsim's fuzz targets, one function per target taking the fuzzer's bytes.
//! The binaries in `fuzz_targets/` hand each input to one of them under libFuzzer
//! (`cargo +nightly fuzz run TARGET`); the main package's `tests/fuzz_corpus.rs` replays the
//! checked-in corpus (`fuzz/corpus/TARGET/`) through the same functions on stable. Every
//! body must return for any input; a panic is a bug in the crate it reached.
//!
//! - [`script_parse`]: the script lexer and parser on arbitrary text;
//! - [`script_run`]: the script interpreter on arbitrary scripts, invariant checks on;
//! - [`cgroupfs_ops`]: mkdir/rmdir/write/read/open/poll and tasks on a small machine, the
//!   operations decoded from the bytes with `arbitrary`, invariant checks on;
//! - [`scenario_toml`]: scenario files, and the set-up of each variant and sweep point;
//! - [`trace_read`]: the trace readers (oracleGeneral and CSV).
//!
//! docs/TESTING.md says how to run them.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use memcgsim_cgroupfs::{Fd, MachineConfig, Pid, SpawnOpts, System};
use memcgsim_script::{Interpreter, Stmt};
use memcgsim_workloads::trace::{read_trace_from, TraceFormat};

/// A target's body: it takes one input and returns, whatever the bytes.
pub type Body = fn(&[u8]);

/// The targets by name, as `fuzz/corpus/` names their folders.
pub const TARGETS: &[(&str, Body)] = &[
    ("script_parse", script_parse),
    ("script_run", script_run),
    ("cgroupfs_ops", cgroupfs_ops),
    ("scenario_toml", scenario_toml),
    ("trace_read", trace_read),
];

// ------------------------------------------------------------------ script_parse

/// The most lines [`script_parse`] lets `expand_script` make.
const PARSE_MAX_EXPANDED: u64 = 10_000;

/// The script lexer and parser: the block structure of a whole file ([`parse_script`],
/// [`expand_script`]) and every line as a command ([`parse_line`]), with `$i` replaced as a
/// repeat would.
///
/// [`parse_script`]: memcgsim_script::parse_script
/// [`expand_script`]: memcgsim_script::expand_script
/// [`parse_line`]: memcgsim_script::parse_line
pub fn script_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    // Expanding repeats allocates every line they make (up to a million): only for scripts
    // that expand to a few thousand lines, to keep inputs quick.
    if let Ok(stmts) = memcgsim_script::parse_script(&text) {
        if steps(&stmts) <= PARSE_MAX_EXPANDED {
            let _ = memcgsim_script::expand_script(&text);
        }
    }
    for line in text.lines() {
        let _ = memcgsim_script::parse_line(line);
        if memcgsim_script::parser::mentions_i(line) {
            let _ =
                memcgsim_script::parse_line(&memcgsim_script::parser::substitute_i(line, u64::MAX));
        }
        let _ = memcgsim_script::is_exit_line(line);
    }
}

// ------------------------------------------------------------------ script_run

/// The largest script [`script_run`] runs, in bytes.
const SCRIPT_MAX_BYTES: usize = 16 * 1024;
/// The most lines a script may execute (repeats and `every` ticks multiplied out).
const SCRIPT_MAX_STEPS: u64 = 2_000;
/// Virtual time a foreground `run`, a `wait` or an `every ... until` may take.
const SCRIPT_WAIT_LIMIT_NS: u64 = 1_000_000_000;
/// Wall-clock time after which the interpreter's interrupt flag stops what runs the
/// machine (`run`, `wait`, `sleep`, `every`), as Ctrl-C would.
const SCRIPT_DEADLINE: Duration = Duration::from_millis(10);

/// The script interpreter on an arbitrary script, as `memcgsim script --check` runs it
/// (bytes that are not UTF-8 replaced), with its output thrown away. The work is bounded so
/// that an input runs in milliseconds: the machine's memory is forced to 32M whatever the
/// script's `machine` line says; scripts that would execute more than [`SCRIPT_MAX_STEPS`]
/// lines, or that are longer than [`SCRIPT_MAX_BYTES`], are skipped; a task may run
/// [`SCRIPT_WAIT_LIMIT_NS`] of virtual time; and a watchdog raises the interrupt flag after
/// [`SCRIPT_DEADLINE`] of wall-clock time. Scripts that mention the `trace` workload are
/// skipped (it reads files of the host; [`trace_read`] covers its readers).
pub fn script_run(data: &[u8]) {
    if data.len() > SCRIPT_MAX_BYTES {
        return;
    }
    let text = String::from_utf8_lossy(data);
    if text.contains("trace") {
        return;
    }
    if let Ok(stmts) = memcgsim_script::parse_script(&text) {
        if steps(&stmts) > SCRIPT_MAX_STEPS {
            return;
        }
    }
    let mut interp = Interpreter::new("fuzz.mcg");
    interp.set_check_invariants(true);
    interp.set_machine_overrides(vec![("memory".to_string(), "32M".to_string())]);
    interp.set_wait_limit_ns(SCRIPT_WAIT_LIMIT_NS);
    let flag = Watchdog::arm(SCRIPT_DEADLINE);
    interp.set_interrupt(Arc::clone(&flag));
    let status = interp.run(&text, &mut io::sink(), &mut io::sink());
    Watchdog::disarm();
    assert!(
        (0..=2).contains(&status),
        "the interpreter returned status {status}"
    );
}

/// How many lines the statements execute at most, saturating: each repeat's body its count
/// times, an `every` loop's body once per tick (an `until` loop's ticks bounded by the wait
/// limit).
fn steps(stmts: &[Stmt]) -> u64 {
    stmts.iter().fold(0u64, |acc, s| {
        let n = match s {
            Stmt::Line(_) | Stmt::Break { .. } => 1,
            Stmt::Repeat { count, body, .. } => count.saturating_mul(steps(body)),
            Stmt::If {
                then, otherwise, ..
            } => 1u64.saturating_add(steps(then).max(steps(otherwise))),
            Stmt::Every { every, body, .. } => {
                let span = match every.end {
                    memcgsim_script::EveryEnd::For(d) => d,
                    memcgsim_script::EveryEnd::Until(_) => SCRIPT_WAIT_LIMIT_NS,
                };
                let ticks = span / every.interval_ns.max(1) + 1;
                ticks.saturating_mul(steps(body).saturating_add(1))
            }
        };
        acc.saturating_add(n)
    })
}

/// One thread for the whole process that raises the armed flag once its deadline passes.
struct Watchdog {
    flag: Arc<AtomicBool>,
    /// Nanoseconds since `start` at which to raise the flag; 0 when disarmed.
    deadline: AtomicU64,
    start: Instant,
}

impl Watchdog {
    fn get() -> &'static Watchdog {
        static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();
        WATCHDOG.get_or_init(|| {
            std::thread::spawn(|| loop {
                std::thread::sleep(Duration::from_millis(1));
                let w = Watchdog::get();
                let d = w.deadline.load(Ordering::Acquire);
                if d != 0 && w.start.elapsed().as_nanos() as u64 >= d {
                    w.flag.store(true, Ordering::Release);
                }
            });
            Watchdog {
                flag: Arc::new(AtomicBool::new(false)),
                deadline: AtomicU64::new(0),
                start: Instant::now(),
            }
        })
    }

    /// Clear the flag and raise it after `after`; returns the flag.
    fn arm(after: Duration) -> Arc<AtomicBool> {
        let w = Watchdog::get();
        w.flag.store(false, Ordering::Release);
        let d = (w.start.elapsed() + after).as_nanos() as u64;
        w.deadline.store(d.max(1), Ordering::Release);
        Arc::clone(&w.flag)
    }

    fn disarm() {
        let w = Watchdog::get();
        w.deadline.store(0, Ordering::Release);
        w.flag.store(false, Ordering::Release);
    }
}

// ------------------------------------------------------------------ cgroupfs_ops

/// The most operations [`cgroupfs_ops`] applies per input.
const CGROUPFS_MAX_OPS: usize = 64;

/// Directories the operations name: a few cgroups at several depths, /proc and its
/// folders, and paths the kernel refuses.
const DIRS: &[&str] = &[
    "/",
    "/A",
    "/A/B",
    "/A/B/C",
    "/B",
    "/A/C",
    "/proc",
    "/proc/sys/vm",
    "/proc/pressure",
    "/A/../B",
    "//A/./B/",
    "/A/memory.max",
];

/// Values written to files, beside numbers and free text.
const WORDS: &[&str] = &[
    "max",
    "+memory",
    "-memory",
    "+memory -memory",
    "threaded",
    "domain",
    "1",
    "0",
    "-1",
    "some 150000 1000000",
    "full 1 2000000",
    "0 0",
    "1M",
    "4k",
    "0x10G",
    "030M",
    "",
    "\n",
    "max\n",
    "9223372036854775807",
    "18446744073709551616",
    "-9223372036854775808",
];

#[derive(Arbitrary, Debug)]
enum Op {
    Mkdir(Dir),
    Rmdir(Dir),
    Write {
        dir: Dir,
        file: u8,
        value: Val,
    },
    Read {
        dir: Dir,
        file: u8,
    },
    Open {
        dir: Dir,
        file: u8,
    },
    WriteFd {
        fd: u8,
        value: Val,
    },
    ReadFd(u8),
    Close(u8),
    Poll {
        fd: u8,
        ms: u8,
    },
    Spawn {
        dir: Dir,
        work: Work,
        oom_score_adj: i16,
    },
    Advance(u8),
    Wait {
        task: u8,
        ms: u8,
    },
    Kill(u8),
    Interrupt(u8),
}

#[derive(Arbitrary, Debug)]
enum Dir {
    Known(u8),
    Other(String),
}

impl Dir {
    fn path(&self) -> String {
        match self {
            Dir::Known(i) => DIRS[*i as usize % DIRS.len()].to_string(),
            Dir::Other(s) => s.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Val {
    Word(u8),
    Num(i64),
    /// MiB with a suffix.
    Mib(u16),
    /// A task's pid (cgroup.procs, cgroup.threads).
    Task(u8),
    Text(String),
}

#[derive(Arbitrary, Debug)]
enum Work {
    Anon { mib: u8, hold: bool },
    Mlock { mib: u8 },
    PageCache { mib: u8, file: bool },
    Dd { mib: u8 },
}

impl Work {
    fn build(&self) -> Option<Box<dyn memcgsim_model::Program>> {
        let size = |mib: &u8| format!("{}M", mib % 48 + 1);
        let (name, mut args) = match self {
            Work::Anon { mib, .. } => ("anon", vec![size(mib)]),
            Work::Mlock { mib } => ("mlock", vec![size(mib)]),
            Work::PageCache { mib, .. } => ("pagecache", vec![size(mib)]),
            Work::Dd { mib } => ("dd", vec![size(mib), "--file".into(), "d".into()]),
        };
        match self {
            Work::Anon { hold: true, .. } => args.push("--hold".into()),
            Work::PageCache { file: true, .. } => args.extend(["--file".into(), "p".into()]),
            _ => {}
        }
        memcgsim_workloads::build(name, &args).ok()
    }
}

/// Whether `MEMCGSIM_FUZZ_TRACE=1` asks [`cgroupfs_ops`] to print each operation it decodes
/// on standard error (to read what a crashing input does).
fn trace_ops() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("MEMCGSIM_FUZZ_TRACE").is_ok_and(|v| v == "1"))
}

/// A sequence of cgroupfs operations on a small machine (32M of memory, 16M of swap;
/// v1 or v2 by the first byte), decoded from the bytes with `arbitrary`: mkdir, rmdir,
/// writes and reads of the files a directory lists (chosen by index), open file
/// descriptions and PSI polls, tasks started, waited for and killed, time advanced by a
/// few milliseconds. The model's invariants are checked after every step, and the machine
/// must stay consistent: every directory it lists can be listed and every file read.
pub fn cgroupfs_ops(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(v1) = u.arbitrary::<bool>() else {
        return;
    };
    let mut cfg = MachineConfig::default();
    for (k, v) in [
        ("memory", "32M"),
        ("swap", "16M"),
        ("cgroup", if v1 { "v1" } else { "v2" }),
    ] {
        cfg.set(k, v).expect("a valid machine option");
    }
    let mut sys = System::new(cfg).expect("the small machine boots");
    sys.set_check_invariants(true);
    let mut fds: Vec<Fd> = Vec::new();
    let mut pids: Vec<Pid> = Vec::new();
    let pick = |v: &[Pid], i: u8| v.get(i as usize % v.len().max(1)).copied();
    let trace = trace_ops();
    for _ in 0..CGROUPFS_MAX_OPS {
        let Ok(op) = u.arbitrary::<Op>() else {
            break;
        };
        if trace {
            eprintln!("{op:?}");
        }
        let value = |v: &Val, pids: &[Pid]| match v {
            Val::Word(i) => WORDS[*i as usize % WORDS.len()].to_string(),
            Val::Num(n) => n.to_string(),
            Val::Mib(m) => format!("{m}M"),
            Val::Task(i) => pick(pids, *i).map_or("1".to_string(), |p| p.to_string()),
            Val::Text(s) => s.clone(),
        };
        let file_of = |sys: &System, dir: &Dir, i: u8| {
            let dir = dir.path();
            match sys.list(&dir) {
                Ok(names) if !names.is_empty() => {
                    let name = &names[i as usize % names.len()];
                    format!("{}/{name}", dir.trim_end_matches('/'))
                }
                _ => format!("{dir}/memory.max"),
            }
        };
        match op {
            Op::Mkdir(d) => {
                let _ = sys.mkdir(&d.path());
            }
            Op::Rmdir(d) => {
                let _ = sys.rmdir(&d.path());
            }
            Op::Write {
                dir,
                file,
                value: v,
            } => {
                let path = file_of(&sys, &dir, file);
                let _ = sys.write(&path, &value(&v, &pids));
            }
            Op::Read { dir, file } => {
                let path = file_of(&sys, &dir, file);
                let _ = sys.read(&path);
            }
            Op::Open { dir, file } => {
                let path = file_of(&sys, &dir, file);
                if let Ok(fd) = sys.open(&path) {
                    fds.push(fd);
                }
            }
            Op::WriteFd { fd, value: v } => {
                if let Some(&fd) = fds.get(fd as usize % fds.len().max(1)) {
                    let _ = sys.write_fd(fd, &value(&v, &pids));
                }
            }
            Op::ReadFd(fd) => {
                if let Some(&fd) = fds.get(fd as usize % fds.len().max(1)) {
                    let _ = sys.read_fd(fd);
                }
            }
            Op::Close(fd) => {
                if !fds.is_empty() {
                    let fd = fds.remove(fd as usize % fds.len());
                    let _ = sys.close(fd);
                }
            }
            Op::Poll { fd, ms } => {
                if let Some(&fd) = fds.get(fd as usize % fds.len().max(1)) {
                    let _ = sys.poll(fd, ms as u64 * 1_000_000);
                }
            }
            Op::Spawn {
                dir,
                work,
                oom_score_adj,
            } => {
                if let Some(program) = work.build() {
                    let opts = SpawnOpts {
                        name: None,
                        oom_score_adj: oom_score_adj as i32 % 1100,
                    };
                    if let Ok(pid) = sys.spawn(&dir.path(), opts, program) {
                        pids.push(pid);
                    }
                }
            }
            Op::Advance(ms) => {
                sys.advance((ms % 50) as u64 * 1_000_000);
            }
            Op::Wait { task, ms } => {
                if let Some(pid) = pick(&pids, task) {
                    let _ = sys.wait(pid, true, (ms % 50) as u64 * 1_000_000);
                }
            }
            Op::Kill(task) => {
                if let Some(pid) = pick(&pids, task) {
                    let _ = sys.kill(pid);
                }
            }
            Op::Interrupt(task) => {
                if let Some(pid) = pick(&pids, task) {
                    let _ = sys.interrupt_task(pid);
                }
            }
        }
    }
    // Whatever happened, the tree can be walked and each of its files read.
    let mut dirs = vec!["/".to_string()];
    while let Some(dir) = dirs.pop() {
        let names = sys.list(&dir).unwrap_or_else(|e| panic!("ls {dir}: {e:?}"));
        for name in names {
            let path = format!("{}/{name}", dir.trim_end_matches('/'));
            if path == "/proc" {
                continue;
            }
            if sys.is_dir(&path) {
                dirs.push(path);
            } else {
                let _ = sys.read(&path);
            }
        }
    }
    for fd in fds {
        let _ = sys.close(fd);
    }
}

// ------------------------------------------------------------------ scenario_toml

/// The most sweep points [`scenario_toml`] sets up.
const SCENARIO_MAX_POINTS: usize = 64;

/// A scenario file: parsed as `memcgsim run` reads it; when it parses, the set-up and
/// machine configuration of every variant and of the first sweep points are built. Nothing
/// runs (runs take seconds).
pub fn scenario_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(sc) = memcgsim_experiment::parse(text, "fuzz.toml") else {
        return;
    };
    for name in sc.variant_names() {
        if let Ok(setup) = sc.setup(&name) {
            let _ = memcgsim_experiment::machine_config(&sc.file, &setup.machine);
        }
    }
    let grid = sc
        .sweep
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .unwrap_or(usize::MAX);
    if !sc.sweep.is_empty() && grid <= SCENARIO_MAX_POINTS * 4 {
        for p in memcgsim_experiment::sweep::points(&sc)
            .iter()
            .take(SCENARIO_MAX_POINTS)
        {
            if let Ok(setup) = memcgsim_experiment::sweep::point_setup(&sc, p) {
                let _ = memcgsim_experiment::machine_config(&sc.file, &setup.machine);
            }
        }
    }
}

// ------------------------------------------------------------------ trace_read

/// The trace readers: the first byte picks the format (even: oracleGeneral, odd: CSV) and,
/// when its bit 1 is set, a record limit (the second byte); the rest is the trace. Records
/// must come out as the format says: CSV times finite and not negative.
pub fn trace_read(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let format = if head & 1 == 0 {
        TraceFormat::OracleGeneral
    } else {
        TraceFormat::Csv
    };
    let (limit, body) = match (head & 2 != 0, rest.split_first()) {
        (true, Some((&n, body))) => (Some(n as u64), body),
        _ => (None, rest),
    };
    let mut seen = 0u64;
    let r = read_trace_from("fuzz.trace", body, format, limit, |rec| {
        seen += 1;
        assert!(rec.time.is_finite() && rec.time >= 0.0, "time {}", rec.time);
    });
    if let Ok(n) = r {
        assert_eq!(n, seen, "records counted and visited");
        if let Some(l) = limit {
            assert!(n <= l, "{n} records past the limit {l}");
        }
        if format == TraceFormat::OracleGeneral {
            assert!(n as usize * 24 <= body.len());
        }
    }
}
