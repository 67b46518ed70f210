//! The `memcgsim` command: runs script files and an interactive shell over the simulated
//! machine, and the benchmark. Each subcommand is one variant of [`Cmd`] and one arm of the match in `main`.

use std::cell::RefCell;
use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod bench;
mod oracle;

use clap::{Args, Parser, Subcommand};
use memcgsim_model::text::strerror;
use memcgsim_script::{
    is_exit_line, parse_line, run_shell_input, shell_line, Command, Interpreter, EXIT_SCRIPT_ERROR,
};

/// A deterministic userspace simulator of the Linux memory cgroup controller and page
/// reclaim, driven through a virtual cgroupfs.
#[derive(Parser)]
#[command(name = "memcgsim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run script files, each on a fresh machine (see docs/SCRIPTING.md)
    Script(ScriptArgs),
    /// Type script commands interactively (or pipe them in on standard input)
    Shell(ShellArgs),
    /// Measure simulated page events per second and resident bytes per simulated frame
    #[command(after_help = bench::help())]
    Bench(BenchArgs),
    /// Run scripts on a real Linux kernel under QEMU and compare with the model, line by line
    Oracle(OracleArgs),
    /// Run one variant of a scenario file with one seed; write a report, time series and charts
    Run(memcgsim_experiment::cli::RunArgs),
    /// Run every variant of a scenario over every seed and compare them (see docs/SCENARIOS.md)
    Compare(memcgsim_experiment::cli::CompareArgs),
    /// Run a scenario's [[sweep]] grid (every variant at every point, every seed) into one table
    Sweep(memcgsim_experiment::cli::SweepArgs),
    /// Turn a host's snapshot (scripts/memcgsim-snapshot) into a scenario (see docs/NODES.md)
    Import(ImportArgs),
}

#[derive(Args)]
struct ImportArgs {
    /// The snapshot, a JSON file written by scripts/memcgsim-snapshot
    snapshot: PathBuf,
    /// Where the scenario goes (a file that exists is not overwritten); default: standard
    /// output
    #[arg(long)]
    out: Option<PathBuf>,
    /// The scenario's name (default: the snapshot's file name without its extension)
    #[arg(long)]
    name: Option<String>,
}

fn parse_slack(s: &str) -> Result<u64, String> {
    memcgsim_model::units::parse_size(s)
}

#[derive(Args)]
struct OracleArgs {
    /// Script files to run on both
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The kernel image (default: the one oracle/setup.sh unpacked)
    #[arg(long)]
    kernel: Option<PathBuf>,
    /// The kernel's module directory, lib/modules/VERSION (default: beside the kernel)
    #[arg(long)]
    modules: Option<PathBuf>,
    /// Use KVM instead of software emulation (TCG)
    #[arg(long)]
    kvm: bool,
    /// Relative tolerance for compared values, in percent
    #[arg(long, default_value_t = 10.0)]
    tolerance: f64,
    /// Absolute slack for compared values (bytes or counts); smaller differences agree
    #[arg(long, default_value = "1M", value_parser = parse_slack)]
    slack: u64,
    /// Count differences in keyed files (memory.stat, memory.events, ...) as disagreements
    #[arg(long)]
    strict: bool,
    /// After each script's report, print a table of every value both sides read (single
    /// values, each key of keyed files, `let`s, `expect` operands): model, kernel, the ratio
    /// kernel/model, and a flag where they differ beyond --tolerance (and --slack for sizes)
    #[arg(long)]
    values: bool,
    /// Seconds each script may take on the guest (the first script of a boot counts the boot)
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// Print the translated guest scripts and the guest console
    #[arg(long)]
    verbose: bool,
    /// Set a histogram trigger on a kernel tracepoint in the guest and print its table after
    /// the script, e.g. 'vmscan/mm_vmscan_direct_reclaim_end:hist:keys=nr_reclaimed'
    /// (EVENT:TRIGGER; repeatable)
    #[arg(long = "trace", value_name = "EVENT:TRIGGER")]
    traces: Vec<memcgsim_oracle::TraceHist>,
}

#[derive(Args)]
struct BenchArgs {
    /// Multiply the amount of work, 1 or more (1 gives the figures in docs/PERFORMANCE.md)
    #[arg(long, default_value_t = 1, value_parser = parse_scale)]
    scale: u64,
    /// Run one part only
    #[arg(long, value_enum)]
    only: Option<bench::Part>,
    /// The transparent huge page mode of every machine the benchmark boots (`never` keeps
    /// its figures comparable with those measured before huge pages; the model's own
    /// default is `always`)
    #[arg(long, default_value = "never", value_parser = ["never", "madvise", "always"])]
    thp: String,
    /// The page-replacement design of every machine the benchmark boots: the two-list LRU
    /// (`split`) or the multi-generational LRU (`mglru`)
    #[arg(long, default_value = "split", value_parser = ["split", "mglru"])]
    lru: String,
    /// The trace part replays this libCacheSim oracleGeneral trace instead of generating one
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Keep the trace part's generated trace in FILE (which must not exist), for another
    /// cache simulator to replay
    #[arg(long, value_name = "FILE", conflicts_with = "trace")]
    trace_out: Option<PathBuf>,
}

/// `bench --scale`: a whole number, 1 or more.
fn parse_scale(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("the scale multiplies the work: it must be 1 or more".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("expected a whole number of at least 1: {e}")),
    }
}

/// Options shared by the subcommands that boot a machine.
#[derive(Args)]
struct CheckArg {
    /// Check the model's invariants after every simulation step (slow); also turned on by
    /// the environment variable MEMCGSIM_CHECK=1
    #[arg(long)]
    check: bool,
    /// Check the invariants after every N-th step only, and at the end (implies --check):
    /// a violation that persists is still caught, later than the step that caused it
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    check_every: Option<u32>,
}

impl CheckArg {
    fn enabled(&self) -> bool {
        self.check
            || self.check_every.is_some()
            || std::env::var("MEMCGSIM_CHECK").is_ok_and(|v| v == "1")
    }

    /// Steps between two checks (1: after each).
    fn interval(&self) -> u32 {
        self.check_every.unwrap_or(1)
    }
}

#[derive(Args)]
struct ScriptArgs {
    #[command(flatten)]
    check: CheckArg,
    /// Report on standard error how each foreground task ended (exit status, killed by the
    /// OOM killer or by kill) and the virtual time it ran, as the interactive shell does
    #[arg(long)]
    report: bool,
    /// Set a machine option on top of each script's `machine` line, e.g. --set stats=legacy
    /// to run the same script under another design (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_machine_setting)]
    set: Vec<(String, String)>,
    /// Script files, run in order
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// A `KEY=VALUE` machine setting, checked against the machine's options.
fn parse_machine_setting(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got '{s}'"))?;
    memcgsim_model::MachineConfig::default().set(k, v)?;
    Ok((k.to_string(), v.to_string()))
}

#[derive(Args)]
struct ShellArgs {
    #[command(flatten)]
    check: CheckArg,
    /// Exit with the scripts' status (2 after a script error, 1 after a failed expect)
    /// instead of 0 when the interactive shell ends
    #[arg(long)]
    strict: bool,
    /// Report how each foreground task ended when commands are piped in (the interactive
    /// shell always does)
    #[arg(long)]
    report: bool,
}

/// Give SIGPIPE back its default action, which Rust's runtime sets to "ignore" before `main`:
/// a write to a pipe nobody reads any more (`memcgsim ... | head`) then ends the process
/// quietly with that signal (status 141 in the shell), as it ends other Unix tools, instead of
/// failing the write and panicking in `println!`. Children spawned later (QEMU, Python) get
/// the default action in any case.
fn restore_sigpipe() {
    // SAFETY: called first thing in `main`, before any other thread exists; SIG_DFL is a
    // valid disposition for SIGPIPE and no Rust handler is replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
    let status = match cli.command {
        Cmd::Script(args) => cmd_script(&args),
        Cmd::Shell(args) => cmd_shell(&args),
        Cmd::Bench(args) => bench::run(
            args.scale,
            args.only,
            memcgsim_model::huge_memory::ThpEnabled::from_name(&args.thp)
                .expect("clap checked the mode"),
            &args.lru,
            args.trace.as_deref(),
            args.trace_out.as_deref(),
        ),
        Cmd::Oracle(args) => oracle::run(&args),
        Cmd::Run(args) => memcgsim_experiment::cli::run(&args),
        Cmd::Compare(args) => memcgsim_experiment::cli::compare_cmd(&args),
        Cmd::Sweep(args) => memcgsim_experiment::cli::sweep_cmd(&args),
        Cmd::Import(args) => cmd_import(&args),
    };
    ExitCode::from(status.clamp(0, 255) as u8)
}

/// `memcgsim import`: the scenario to a new file or standard output, the notes on standard
/// error.
fn cmd_import(args: &ImportArgs) -> i32 {
    let file = args.snapshot.display().to_string();
    let text = match std::fs::read_to_string(&args.snapshot) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("memcgsim: {file}: {e}");
            return 1;
        }
    };
    let name = args.name.clone().unwrap_or_else(|| {
        args.snapshot
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "imported".into())
    });
    let imported = memcgsim_node::Snapshot::parse(&text, &file).and_then(|snap| {
        memcgsim_node::import(
            &snap,
            &memcgsim_node::ImportOpts {
                name,
                file: file.clone(),
            },
        )
    });
    // The scenario must load as written (a bug of the import otherwise).
    let imported = imported.and_then(|i| {
        memcgsim_experiment::parse(&i.scenario, &format!("{file} (imported)"))
            .map(|_| i)
            .map_err(|e| format!("the imported scenario does not load: {e}"))
    });
    let imported = match imported {
        Ok(i) => i,
        Err(e) => {
            eprintln!("memcgsim: {e}");
            return 1;
        }
    };
    for n in &imported.notes {
        eprintln!("memcgsim import: note: {n}");
    }
    match &args.out {
        None => {
            print!("{}", imported.scenario);
            0
        }
        Some(out) => match memcgsim_node::write_new(out, &imported.scenario) {
            Ok(()) => {
                eprintln!(
                    "memcgsim import: {} groups into {}",
                    imported.groups.len(),
                    out.display()
                );
                0
            }
            Err(e) => {
                eprintln!("memcgsim: {}: {e}", out.display());
                1
            }
        },
    }
}

fn cmd_script(args: &ScriptArgs) -> i32 {
    let check = args.check.enabled();
    let mut worst = 0;
    for file in &args.files {
        let name = file.display().to_string();
        let text = match std::fs::read(file) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                eprintln!("memcgsim: {name}: {}", strerror(&e));
                worst = worst.max(EXIT_SCRIPT_ERROR);
                continue;
            }
        };
        let mut interp = Interpreter::new(&name);
        interp.set_check_interval(args.check.interval());
        interp.set_check_invariants(check);
        interp.set_report_tasks(args.report);
        interp.set_machine_overrides(args.set.clone());
        let status = interp.run(&text, &mut io::stdout(), &mut io::stderr());
        worst = worst.max(status);
    }
    worst
}

fn cmd_shell(args: &ShellArgs) -> i32 {
    if io::stdin().is_terminal() {
        // Messages carry no `FILE:LINE:` prefix at the prompt.
        let mut interp = Interpreter::new("");
        interp.set_check_interval(args.check.interval());
        interp.set_check_invariants(args.check.enabled());
        interp.set_report_tasks(true);
        shell_interactive(interp, args.strict)
    } else {
        let mut interp = Interpreter::new("<stdin>");
        interp.set_check_interval(args.check.interval());
        interp.set_check_invariants(args.check.enabled());
        interp.set_report_tasks(args.report);
        shell_piped(&mut interp)
    }
}

/// Read commands from a non-terminal standard input, without a prompt.
fn shell_piped(interp: &mut Interpreter) -> i32 {
    run_shell_input(
        interp,
        io::stdin().lock(),
        &mut io::stdout(),
        &mut io::stderr(),
    )
}

mod editor {
    //! Line-editor glue for the interactive shell: completion of command names and paths.

    use std::cell::RefCell;
    use std::rc::Rc;

    use memcgsim_script::Interpreter;
    use rustyline::completion::{Completer, Pair};
    use rustyline::highlight::Highlighter;
    use rustyline::hint::Hinter;
    use rustyline::validate::Validator;
    use rustyline::{Context, Helper};

    /// Completes from the interpreter's machine; the interpreter is only borrowed while a
    /// line is being edited, never while one runs.
    pub struct ShellHelper(pub Rc<RefCell<Interpreter>>);

    impl Completer for ShellHelper {
        type Candidate = Pair;

        fn complete(
            &self,
            line: &str,
            pos: usize,
            _ctx: &Context<'_>,
        ) -> rustyline::Result<(usize, Vec<Pair>)> {
            let Ok(interp) = self.0.try_borrow() else {
                return Ok((pos, Vec::new()));
            };
            let (start, names) = interp.complete_line(line, pos);
            let pairs = names
                .into_iter()
                .map(|n| {
                    let display = match n.trim_end_matches('/').rfind('/') {
                        Some(i) => n[i + 1..].to_string(),
                        None => n.clone(),
                    };
                    Pair {
                        display,
                        replacement: n,
                    }
                })
                .collect();
            Ok((start, pairs))
        }
    }

    impl Hinter for ShellHelper {
        type Hint = String;
    }
    impl Highlighter for ShellHelper {}
    impl Validator for ShellHelper {}
    impl Helper for ShellHelper {}
}

/// Where the interactive shell keeps its history: `$MEMCGSIM_HISTORY` if set (empty: no
/// history file), else `memcgsim/history` in the user's data directory.
fn history_path() -> Option<PathBuf> {
    match std::env::var_os("MEMCGSIM_HISTORY") {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(PathBuf::from(p)),
        None => dirs::data_dir().map(|d| d.join("memcgsim").join("history")),
    }
}

/// The first line of every history file the shell writes (rustyline's file format).
const HISTORY_HEADER: &[u8] = b"#V2";

/// Whether the shell may read and rewrite `path` as its history: when no file is there yet,
/// or the file is empty or starts with the [`HISTORY_HEADER`] line, as the shell writes it.
/// Anything else (another program's file, a folder, a file it cannot read) is someone
/// else's and is never overwritten; the error says why.
fn check_history_file(path: &std::path::Path) -> Result<(), String> {
    use std::io::{BufRead, Read};
    // Not opened before it is known to be a plain file: opening a FIFO would block.
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(strerror(&e)),
        Ok(m) if !m.is_file() => return Err("not a regular file".into()),
        Ok(_) => {}
    }
    let f = std::fs::File::open(path).map_err(|e| strerror(&e))?;
    let mut first = Vec::new();
    io::BufReader::new(f)
        .take(HISTORY_HEADER.len() as u64 + 2)
        .read_until(b'\n', &mut first)
        .map_err(|e| strerror(&e))?;
    let line = first
        .strip_suffix(b"\n")
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .unwrap_or(&first);
    if first.is_empty() || line == HISTORY_HEADER {
        Ok(())
    } else {
        Err("it is not a memcgsim history (its first line is not #V2)".into())
    }
}

/// The history file the shell may use: [`history_path`] unless that is someone else's file
/// ([`check_history_file`]), in which case it says so once and keeps the history in memory.
fn usable_history_path() -> Option<PathBuf> {
    let p = history_path()?;
    match check_history_file(&p) {
        Ok(()) => Some(p),
        Err(why) => {
            eprintln!(
                "memcgsim: {}: {why}; left alone, this session's history is kept in memory \
                 only (set MEMCGSIM_HISTORY to another file, or to nothing for no history file)",
                p.display()
            );
            None
        }
    }
}

/// The interactive shell: a prompt with the working directory, line editing, history kept
/// across sessions (in a file that is the shell's own, never in another one), completion
/// that lists candidates.
///
/// Ctrl-C stops the command that runs the machine and returns to the prompt: a foreground
/// `run` ends its task as SIGINT would, `wait` and `sleep` stop early; the machine is as it
/// was at that moment. Several lines pasted at once (with or without bracketed paste) run one
/// by one, in order; Ctrl-C drops the rest of a paste. Ctrl-D, `exit` and `quit` leave with
/// status 0, or with the scripts' status under `--strict`.
fn shell_interactive(interp: Interpreter, strict: bool) -> i32 {
    use rustyline::config::{CompletionType, Config};
    use rustyline::error::ReadlineError;
    use rustyline::history::{DefaultHistory, History};
    use rustyline::Editor;

    let interrupted = Arc::new(AtomicBool::new(false));
    if let Err(e) =
        signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))
    {
        eprintln!("memcgsim: Ctrl-C will end the shell: cannot catch SIGINT: {e}");
    }
    let interp = Rc::new(RefCell::new(interp));
    interp.borrow_mut().set_interrupt(Arc::clone(&interrupted));
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .max_history_size(10_000)
        .and_then(|b| b.history_ignore_dups(true))
        .map(|b| b.build());
    let mut rl: Editor<editor::ShellHelper, DefaultHistory> =
        match config.and_then(Editor::with_config) {
            Ok(rl) => rl,
            Err(e) => {
                eprintln!("memcgsim: cannot start the line editor: {e}");
                return EXIT_SCRIPT_ERROR;
            }
        };
    rl.set_helper(Some(editor::ShellHelper(Rc::clone(&interp))));
    let history = usable_history_path();
    if let Some(p) = &history {
        if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = rl.load_history(p);
    }
    println!("memcgsim shell: type 'help' for the commands, 'exit' or Ctrl-D to leave.");
    let mut worst = 0;
    let mut line_no = 0;
    let mut history_warned = false;
    'session: loop {
        let prompt = format!("memcgsim:{}$ ", interp.borrow().cwd());
        let text = match rl.readline(&prompt) {
            Ok(text) => text,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("memcgsim: {e}");
                worst = worst.max(EXIT_SCRIPT_ERROR);
                break;
            }
        };
        // A bracketed paste of several lines comes as one text.
        for line in text.split('\n') {
            let line = line.trim_end_matches('\r');
            line_no += 1;
            if !line.trim().is_empty() {
                let _ = rl.add_history_entry(line);
            }
            if is_exit_line(line) {
                break 'session;
            }
            if matches!(parse_line(line), Ok(Some(Command::Clear))) {
                let _ = rl.clear_screen();
                continue;
            }
            interrupted.store(false, Ordering::Relaxed);
            let status = shell_line(
                &mut interp.borrow_mut(),
                line_no,
                line,
                &mut io::stdout(),
                &mut io::stderr(),
            );
            worst = worst.max(status);
            if interrupted.swap(false, Ordering::Relaxed) {
                break;
            }
        }
        if let Some(p) = &history {
            if let Err(e) = rl.history_mut().save(p) {
                if !history_warned {
                    eprintln!("memcgsim: cannot keep the history in {}: {e}", p.display());
                    history_warned = true;
                }
            }
        }
    }
    if strict {
        worst.max(interp.borrow().status())
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::check_history_file;

    #[test]
    fn only_a_missing_empty_or_v2_file_is_the_shells_history() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("h");
        assert_eq!(check_history_file(&p), Ok(()));
        for ours in [
            &b""[..],
            b"#V2\n",
            b"#V2\nmkdir A\nls\n",
            b"#V2\r\nls\n",
            b"#V2",
        ] {
            std::fs::write(&p, ours).unwrap();
            assert_eq!(check_history_file(&p), Ok(()), "{ours:?}");
        }
        for theirs in [
            &b"important notes\n"[..],
            b"#V2 and more\n",
            b"#V1\n",
            b"#V",
            b"\n#V2\n",
            b"\xff\xfe",
        ] {
            std::fs::write(&p, theirs).unwrap();
            let e = check_history_file(&p).unwrap_err();
            assert!(e.contains("not a memcgsim history"), "{theirs:?}: {e}");
        }
        assert_eq!(
            check_history_file(d.path()),
            Err("not a regular file".to_string())
        );
    }
}
