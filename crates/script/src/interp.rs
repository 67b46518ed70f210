//! The interpreter: executes parsed commands against a [`System`], keeping the script's state
//! (working directory, open fds, named tasks, the outcome of the last foreground task and
//! the status of the last recorded file operation). A script file runs as the tree of
//! statements [`parse_script`] reads: plain lines one at a time, `repeat`, `if` and
//! `every` blocks around them, and `break`; `$now` reads the machine's clock.
//!
//! Three kinds of trouble are told apart:
//! - a failed file operation (a write the kernel would refuse, say) prints a bash-style error
//!   and the script goes on;
//! - a failed `expect` prints `FILE:LINE: expect failed: ...`, the script goes on and its exit
//!   status becomes 1;
//! - a script error (bad syntax, unknown task, a wait that never ends) is returned as a
//!   [`ScriptError`]; `run` prints it and stops with exit status 2.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use memcgsim_cgroupfs::{Fd, PollResult, SpawnOpts, System, TaskEnd, WaitResult};
use memcgsim_model::text::{clip, clip_words};
use memcgsim_model::units::fmt_ns;
use memcgsim_model::{Errno, MachineConfig, Pid, TaskOutcome};

use crate::parser::{
    mentions_i, parse_every_line, parse_if_line, parse_line, parse_script, substitute_i, Command,
    Cond, Every, EveryEnd, Expr, PollWant, RunSpec, Stmt, Target, COMMANDS, HELP,
};
use crate::path::{join, resolve};
use crate::value::{
    arith, keyed_value, parse_arith, show, single_value, split_vars, values_close, Segment, Value,
    NOW,
};

/// Exit status of a script whose expectations all held.
pub const EXIT_OK: i32 = 0;
/// Exit status of a script in which at least one `expect` failed.
pub const EXIT_EXPECT_FAILED: i32 = 1;
/// Exit status of a script stopped by a script error.
pub const EXIT_SCRIPT_ERROR: i32 = 2;
/// How much virtual time a foreground `run` or a `wait` may take before it is a script error:
/// one hour.
pub const DEFAULT_WAIT_LIMIT_NS: u64 = 3600 * 1_000_000_000;

/// An error that stops a script: bad syntax, an unknown command, task or fd name, an unknown
/// workload, a machine that cannot boot, a wait that does not finish in time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    /// The script's name, as given to [`Interpreter::new`].
    pub file: String,
    /// The 1-based line number.
    pub line: usize,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for ScriptError {
    /// `FILE:LINE: error: MESSAGE`, or `error: MESSAGE` when there is no file (the
    /// interactive shell); long tokens in MESSAGE are cut ([`clip_words`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = clip_words(&self.message);
        if self.file.is_empty() {
            write!(f, "error: {message}")
        } else {
            write!(f, "{}:{}: error: {message}", clip(&self.file), self.line)
        }
    }
}

impl std::error::Error for ScriptError {}

/// A task started by `run`, by name.
#[derive(Clone, Copy, Debug)]
struct Task {
    pid: Pid,
    /// Started with `--hold`: `wait` stops when it holds.
    holds: bool,
}

/// The recorded status of the last write, mkdir, rmdir, open, close or run.
#[derive(Clone, Debug)]
struct OpStatus {
    /// The command, for failure messages ("mkdir", "echo").
    what: &'static str,
    result: Result<(), Errno>,
}

/// How a run of statements ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    /// It ran to its end.
    Next,
    /// A `break` ended it: the innermost `repeat` or `every` around it ends.
    Break,
}

/// Why an `expect` operand has no value.
enum EvalError {
    /// The expectation fails, with this explanation (unreadable file, missing key).
    Fail(String),
    /// The script is wrong (unknown fd name, the machine cannot boot).
    Script(String),
}

/// Runs script commands one at a time against a lazily booted [`System`].
pub struct Interpreter {
    file: String,
    line: usize,
    sys: Option<System>,
    /// Some command other than `machine` or `help` has run: `machine` is no longer allowed.
    started: bool,
    check_invariants: bool,
    check_every: u32,
    /// `KEY=VALUE` settings applied after the script's `machine` line (or to the default
    /// machine), so one script runs under several designs.
    machine_overrides: Vec<(String, String)>,
    wait_limit_ns: u64,
    cwd: String,
    fds: BTreeMap<String, Fd>,
    /// Variables set by `let`.
    vars: BTreeMap<String, i64>,
    tasks: BTreeMap<String, Task>,
    last_fg: Option<(String, TaskOutcome)>,
    last_op: Option<OpStatus>,
    /// What the last `poll` returned.
    last_poll: Option<PollWant>,
    expect_failures: u64,
    /// Report how each foreground task ended (and where `wait` stopped) on `err`.
    report_tasks: bool,
    /// Raised by Ctrl-C in the shell: stops a foreground run, a wait or a sleep.
    interrupt: Option<Arc<AtomicBool>>,
    /// `snapshot FILE` writes FILE (the oracle's model side leaves the file to the kernel's).
    write_snapshots: bool,
}

impl Interpreter {
    /// A fresh interpreter; `file` names the script in messages (`FILE:LINE: ...`). The
    /// machine boots with the first command that needs it, or with `machine`.
    pub fn new(file: &str) -> Interpreter {
        Interpreter {
            file: file.to_string(),
            line: 0,
            sys: None,
            started: false,
            check_invariants: false,
            check_every: 1,
            machine_overrides: Vec::new(),
            wait_limit_ns: DEFAULT_WAIT_LIMIT_NS,
            cwd: "/".to_string(),
            fds: BTreeMap::new(),
            vars: BTreeMap::new(),
            tasks: BTreeMap::new(),
            last_fg: None,
            last_op: None,
            last_poll: None,
            expect_failures: 0,
            report_tasks: false,
            interrupt: None,
            write_snapshots: true,
        }
    }

    /// Whether `snapshot FILE` writes its file (on by default).
    pub fn set_write_snapshots(&mut self, on: bool) {
        self.write_snapshots = on;
    }

    /// Report on `err` how each foreground task ended, with the virtual time it ran
    /// (`anon: killed by the OOM killer (out of memory in /A) after 1.2s`), and where a
    /// `wait` stopped. Off by default, so scripts' output stays as it is.
    pub fn set_report_tasks(&mut self, on: bool) {
        self.report_tasks = on;
    }

    /// Let `flag` (raised by a SIGINT handler) interrupt the command that runs the machine:
    /// a foreground `run` ends its task as SIGINT would (status 130), `wait` stops waiting
    /// and leaves the task running, `sleep` stops early. The caller clears the flag.
    pub fn set_interrupt(&mut self, flag: Arc<AtomicBool>) {
        if let Some(sys) = self.sys.as_mut() {
            sys.set_interrupt(Some(Arc::clone(&flag)));
        }
        self.interrupt = Some(flag);
    }

    /// Check the model's invariants after every simulation step (slow; for tests). Applies
    /// to the machine booted later, and to the current one if it is already up.
    pub fn set_check_invariants(&mut self, on: bool) {
        self.check_invariants = on;
        if let Some(sys) = self.sys.as_mut() {
            sys.set_check_invariants(on);
        }
    }

    /// With checks on, check after every `every`-th step only (at least 1), and once more
    /// when the script ends. Applies to machines booted later and to the current one.
    pub fn set_check_interval(&mut self, every: u32) {
        self.check_every = every.max(1);
        if let Some(sys) = self.sys.as_mut() {
            sys.set_check_interval(self.check_every);
        }
    }

    /// Settings applied on top of the script's `machine` line (`memcgsim script --set`).
    pub fn set_machine_overrides(&mut self, kv: Vec<(String, String)>) {
        self.machine_overrides = kv;
    }

    /// Change how much virtual time a foreground `run` or a `wait` may take
    /// ([`DEFAULT_WAIT_LIMIT_NS`] by default).
    pub fn set_wait_limit_ns(&mut self, ns: u64) {
        self.wait_limit_ns = ns;
    }

    /// The working directory, e.g. `/A`.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The script's name as given to [`Interpreter::new`].
    pub fn file(&self) -> &str {
        &self.file
    }

    /// How many `expect` commands have failed so far.
    pub fn expect_failures(&self) -> u64 {
        self.expect_failures
    }

    /// The exit status so far, not counting script errors: [`EXIT_EXPECT_FAILED`] if an
    /// `expect` failed, else [`EXIT_OK`].
    pub fn status(&self) -> i32 {
        if self.expect_failures > 0 {
            EXIT_EXPECT_FAILED
        } else {
            EXIT_OK
        }
    }

    /// The machine, if it has booted.
    pub fn system(&self) -> Option<&System> {
        self.sys.as_ref()
    }

    /// The machine, if it has booted.
    pub fn system_mut(&mut self) -> Option<&mut System> {
        self.sys.as_mut()
    }

    /// The machine, which has booted (the machine never goes away once it has).
    fn booted(&mut self) -> &mut System {
        self.sys.as_mut().expect("the machine has booted")
    }

    /// The machine, booting the default one if none has booted yet.
    pub fn boot(&mut self) -> Result<&mut System, String> {
        if self.sys.is_none() {
            let mut cfg = MachineConfig::default();
            for (k, v) in self.machine_overrides.clone() {
                cfg.set(&k, &v)?;
            }
            self.boot_with(cfg)?;
        }
        self.sys
            .as_mut()
            .ok_or_else(|| "the machine did not boot".to_string())
    }

    /// How the last foreground task ended (its name and outcome), if one has.
    pub fn last_foreground(&self) -> Option<(&str, TaskOutcome)> {
        self.last_fg.as_ref().map(|(n, o)| (n.as_str(), *o))
    }

    /// The pid of the task called `name`, running or ended.
    pub fn task_pid(&self, name: &str) -> Option<Pid> {
        self.tasks.get(name).map(|t| t.pid)
    }

    /// Entries of the directory `dir` (absolute or relative) whose names start with
    /// `prefix`, directories with a trailing `/`; for completion in the shell. Empty if the
    /// machine has not booted or `dir` is not a directory.
    pub fn complete(&self, dir: &str, prefix: &str) -> Vec<String> {
        let Some(sys) = self.sys.as_ref() else {
            return Vec::new();
        };
        let dir = resolve(&self.cwd, dir);
        let Ok(entries) = sys.list(&dir) else {
            return Vec::new();
        };
        entries
            .into_iter()
            .filter(|e| e.starts_with(prefix))
            .map(|e| {
                if sys.is_dir(&join(&dir, &e)) {
                    format!("{e}/")
                } else {
                    e
                }
            })
            .collect()
    }

    /// Completion candidates for the word that ends at byte `pos` of `line`: command names
    /// for the first word, else entries of the directory the partial path names. Returns the
    /// byte offset where the word starts and the full replacements for it.
    pub fn complete_line(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let pos = pos.min(line.len());
        if !line.is_char_boundary(pos) {
            return (pos, Vec::new());
        }
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map(|(i, c)| i + c.len_utf8())
            .unwrap_or(0);
        let word = &before[start..];
        let prior: Vec<&str> = before[..start].split_whitespace().collect();
        let from = |list: &[&str], suffix: &str| -> Vec<String> {
            list.iter()
                .filter(|c| c.starts_with(word))
                .map(|c| format!("{c}{suffix}"))
                .collect()
        };
        match prior.as_slice() {
            [] => return (start, from(COMMANDS, "")),
            ["help"] => return (start, from(memcgsim_workloads::WORKLOADS, "")),
            ["machine", ..] => return (start, from(MachineConfig::KEYS, "=")),
            ["run", opts @ ..] if run_word_is_workload(opts) => {
                return (start, from(memcgsim_workloads::WORKLOADS, ""));
            }
            _ => {}
        }
        // A redirection glued to the path (`>memory.max`) completes the path after it.
        let (start, word) = match word.rfind('>') {
            Some(i) => (start + i + 1, &word[i + 1..]),
            None => (start, word),
        };
        if word.starts_with('@') || word.starts_with('"') || word.starts_with('\'') {
            return (start, Vec::new());
        }
        let (dir, prefix) = match word.rfind('/') {
            Some(i) => (&word[..=i], &word[i + 1..]),
            None => ("", word),
        };
        let listed = if dir.is_empty() { "." } else { dir };
        let names = self
            .complete(listed, prefix)
            .into_iter()
            .map(|e| format!("{dir}{e}"))
            .collect();
        (start, names)
    }

    /// Run a whole script: its blocks are read first ([`parse_script`]: a block error stops
    /// the script before anything runs), then every statement in order until the end or the
    /// first script error, which is printed to `err`. Returns the exit status:
    /// [`EXIT_SCRIPT_ERROR`] after a script error, else [`EXIT_EXPECT_FAILED`] if an `expect`
    /// failed, else [`EXIT_OK`].
    pub fn run(&mut self, text: &str, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
        let script = match parse_script(text) {
            Ok(script) => script,
            Err((line, message)) => {
                self.line = line;
                let _ = writeln!(err, "{}", self.error(message));
                return EXIT_SCRIPT_ERROR;
            }
        };
        let r = self.exec_stmts(&script, None, out, err);
        // With a check interval, what the last steps did is checked too.
        if let Some(sys) = self.sys.as_mut() {
            sys.check_now();
        }
        let _ = out.flush();
        if let Err(e) = r {
            let _ = writeln!(err, "{e}");
            return EXIT_SCRIPT_ERROR;
        }
        self.status()
    }

    /// Run statements in order. `i` is the iteration of the innermost `repeat` around them,
    /// which replaces `$i` in their lines. Returns [`Flow::Break`] when a `break` ends them.
    fn exec_stmts(
        &mut self,
        stmts: &[Stmt],
        i: Option<u64>,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<Flow, ScriptError> {
        for s in stmts {
            let flow = match s {
                Stmt::Line(l) => {
                    match i {
                        Some(k) => self.exec_line(l.line, &substitute_i(&l.text, k), out, err)?,
                        None => self.exec_line(l.line, &l.text, out, err)?,
                    }
                    Flow::Next
                }
                Stmt::Repeat { count, body, .. } => {
                    for k in 0..*count {
                        if self.exec_stmts(body, Some(k), out, err)? == Flow::Break {
                            break;
                        }
                    }
                    Flow::Next
                }
                Stmt::If {
                    line,
                    header,
                    cond,
                    then,
                    otherwise,
                } => {
                    self.line = *line;
                    let holds = self
                        .if_holds(header, cond, i)
                        .map_err(|m| self.error_at(*line, m))?;
                    let branch = if holds { then } else { otherwise };
                    self.exec_stmts(branch, i, out, err)?
                }
                Stmt::Every {
                    line,
                    header,
                    every,
                    body,
                } => {
                    self.line = *line;
                    let reparsed;
                    let every = match i {
                        Some(k) if mentions_i(header) => {
                            reparsed = parse_every_line(&substitute_i(header, k))
                                .map_err(|m| self.error_at(*line, m))?;
                            &reparsed
                        }
                        _ => every,
                    };
                    self.started = true;
                    self.every(*line, every, body, i, out, err)?;
                    Flow::Next
                }
                Stmt::Break { line } => {
                    self.line = *line;
                    Flow::Break
                }
            };
            if flow == Flow::Break {
                return Ok(Flow::Break);
            }
        }
        Ok(Flow::Next)
    }

    /// Whether the condition of an `if` holds, judged as `expect` judges it; `$i` in the
    /// `if` line is replaced first. An operand that cannot be read is an error: a script
    /// must not take a branch on a value it does not have.
    fn if_holds(&mut self, header: &str, cond: &Cond, i: Option<u64>) -> Result<bool, String> {
        let reparsed;
        let cond = match i {
            Some(k) if mentions_i(header) => {
                reparsed = parse_if_line(&substitute_i(header, k))?;
                &reparsed
            }
            _ => cond,
        };
        self.started = true;
        let values = self.operand_values(&cond.expr)?;
        if let Some(Err(m)) = values.iter().find(|v| v.is_err()) {
            return Err(format!("if {}: {m}", cond.text));
        }
        let last_op = self.last_op.as_ref().map(|o| (o.what, o.result));
        let last_fg = self.last_fg.as_ref().map(|(n, o)| (n.as_str(), *o));
        Ok(judge(&cond.expr, &values, last_fg, last_op, self.last_poll).is_none())
    }

    /// Whether the interrupt flag ([`Interpreter::set_interrupt`]) is raised.
    fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Run an `every` loop that starts now, at T0: its body at the ticks T0 + k x INTERVAL
    /// (k = 1, 2, ...) until DURATION has passed (then time goes on to T0 + DURATION) or the
    /// task NAME ends (the loop ends at that moment). Ticks that the body's own time went
    /// past are skipped; a tick the body reached exactly runs at once.
    fn every(
        &mut self,
        line: usize,
        every: &Every,
        body: &[Stmt],
        i: Option<u64>,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<(), ScriptError> {
        let interval = every.interval_ns;
        let until = match &every.end {
            EveryEnd::For(_) => None,
            EveryEnd::Until(name) => Some((
                name.as_str(),
                self.task(name).map_err(|m| self.error_at(line, m))?,
            )),
        };
        if let Err(m) = self.boot() {
            return Err(self.error_at(line, m));
        }
        let t0 = self.booted().now_ns();
        let end = match every.end {
            EveryEnd::For(d) => t0.saturating_add(d),
            EveryEnd::Until(_) => t0.saturating_add(self.wait_limit_ns),
        };
        let tick_at = |k: u64| t0.saturating_add(k.saturating_mul(interval));
        let mut k = 1u64;
        loop {
            let tick = tick_at(k);
            let sys = self.booted();
            let now = sys.now_ns();
            match until {
                None => {
                    if tick > end {
                        break;
                    }
                    if !sys.advance(tick - now) {
                        self.report_every_interrupted(line, t0, err);
                        return Ok(());
                    }
                }
                Some((name, task)) => {
                    // Run until the task ends, or to the tick (or the time limit), whichever
                    // comes first. The task exists, so wait fails only when time runs out,
                    // and then the clock stands exactly where it was asked to stop.
                    let stop = tick.min(end).max(now);
                    match sys.wait(task.pid, task.holds, stop - now) {
                        Ok(WaitResult::Interrupted) => {
                            self.report_every_interrupted(line, t0, err);
                            return Ok(());
                        }
                        Ok(_) => return Ok(()),
                        Err(e) if sys.now_ns() < stop => {
                            return Err(self.error_at(line, format!("every: {e}")))
                        }
                        Err(_) => {}
                    }
                    if sys.now_ns() >= end {
                        let frozen = if sys.machine.task(task.pid).frozen {
                            " (it is frozen: see cgroup.freeze)"
                        } else {
                            ""
                        };
                        return Err(self.error_at(
                            line,
                            format!(
                                "every: task '{name}' did not end within {} s of virtual time{frozen}",
                                self.wait_limit_ns / 1_000_000_000
                            ),
                        ));
                    }
                }
            }
            if self.exec_stmts(body, i, out, err)? == Flow::Break {
                return Ok(());
            }
            self.line = line;
            if self.interrupted() {
                self.report_every_interrupted(line, t0, err);
                return Ok(());
            }
            // The next tick: the first one not yet past.
            let now = self.booted().now_ns();
            let due = (now - t0).div_ceil(interval);
            k = due.max(k.saturating_add(1));
        }
        // `for DURATION`: the rest of the duration passes.
        let sys = self.booted();
        let now = sys.now_ns();
        if now < end && !sys.advance(end - now) {
            self.report_every_interrupted(line, t0, err);
        }
        Ok(())
    }

    /// With task reports on, as for `sleep`: where an interrupted `every` loop stopped.
    fn report_every_interrupted(&mut self, line: usize, t0: u64, err: &mut dyn Write) {
        self.line = line;
        if !self.report_tasks {
            return;
        }
        let Some(now) = self.sys.as_ref().map(System::now_ns) else {
            return;
        };
        let t = fmt_ns(now.saturating_sub(t0));
        self.complain(err, &format!("every: interrupted after {t}"));
    }

    /// Parse and execute one line (`line_no` is 1-based, for messages). Blank and comment
    /// lines do nothing. Regular output goes to `out`; bash-style errors and expect failures
    /// go to `err`; a script error is returned, not printed.
    pub fn exec_line(
        &mut self,
        line_no: usize,
        text: &str,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<(), ScriptError> {
        self.line = line_no;
        match parse_line(text) {
            Ok(None) => Ok(()),
            Ok(Some(cmd)) => self.exec(line_no, &cmd, out, err),
            Err(message) => Err(self.error(message)),
        }
    }

    /// Execute one parsed command, as [`Interpreter::exec_line`] does.
    pub fn exec(
        &mut self,
        line_no: usize,
        cmd: &Command,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<(), ScriptError> {
        self.line = line_no;
        self.exec_inner(cmd, out, err).map_err(|m| self.error(m))
    }

    fn error(&self, message: String) -> ScriptError {
        ScriptError {
            file: self.file.clone(),
            line: self.line,
            message,
        }
    }

    /// A script error on line `line` (a block's own line, after its body ran others).
    fn error_at(&mut self, line: usize, message: String) -> ScriptError {
        self.line = line;
        self.error(message)
    }

    /// Print a bash-style error (`FILE:LINE: MESSAGE`; `MESSAGE` alone when the
    /// interpreter has no file name, as in the interactive shell), long tokens cut.
    fn complain(&self, err: &mut dyn Write, message: &str) {
        let message = clip_words(message);
        if self.file.is_empty() {
            let _ = writeln!(err, "{message}");
        } else {
            let _ = writeln!(err, "{}:{}: {message}", clip(&self.file), self.line);
        }
    }

    fn record(&mut self, what: &'static str, result: Result<(), Errno>) {
        self.last_op = Some(OpStatus { what, result });
    }

    fn boot_with(&mut self, cfg: MachineConfig) -> Result<(), String> {
        cfg.validate()?;
        let mut sys = System::new(cfg).map_err(|e| format!("machine: {e}"))?;
        if self.check_invariants {
            sys.set_check_interval(self.check_every);
            sys.set_check_invariants(true);
        }
        sys.set_interrupt(self.interrupt.clone());
        self.sys = Some(sys);
        Ok(())
    }

    fn path(&self, p: &str) -> String {
        resolve(&self.cwd, p)
    }

    fn fd(&self, name: &str) -> Result<Fd, String> {
        self.fds
            .get(name)
            .copied()
            .ok_or_else(|| format!("no open fd named '{name}'"))
    }

    fn task(&self, name: &str) -> Result<Task, String> {
        self.tasks
            .get(name)
            .copied()
            .ok_or_else(|| format!("no task named '{name}'"))
    }

    fn exec_inner(
        &mut self,
        cmd: &Command,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<(), String> {
        match cmd {
            Command::Help(None) => {
                let _ = out.write_all(HELP.as_bytes());
                let _ = writeln!(
                    out,
                    "Workloads: {} (help WORKLOAD tells more)",
                    memcgsim_workloads::WORKLOADS.join(", ")
                );
                return Ok(());
            }
            Command::Help(Some(name)) => {
                let Some(text) = memcgsim_workloads::help(name) else {
                    return Err(format!(
                        "help: no workload named '{name}' (known: {})",
                        memcgsim_workloads::WORKLOADS.join(", ")
                    ));
                };
                let _ = out.write_all(text.as_bytes());
                if !text.ends_with('\n') {
                    let _ = writeln!(out);
                }
                return Ok(());
            }
            Command::Clear => return Ok(()),
            Command::Machine(words) => return self.machine(words),
            _ => {}
        }
        self.started = true;
        match cmd {
            Command::Help(_) | Command::Clear | Command::Machine(_) => Ok(()),
            Command::Let { name, terms } => {
                let v = self.arith_value(terms)?;
                self.vars.insert(name.clone(), v);
                Ok(())
            }
            Command::Pwd => {
                let _ = writeln!(out, "{}", self.cwd);
                Ok(())
            }
            Command::Cd(p) => {
                let path = self.path(p);
                let sys = self.boot()?;
                if sys.is_dir(&path) {
                    self.cwd = path;
                    Ok(())
                } else if sys.read(&path).is_ok() || sys.list(&path) == Err(Errno::ENOTDIR) {
                    Err(format!("cd: {p}: {}", Errno::ENOTDIR))
                } else {
                    Err(format!("cd: {p}: {}", Errno::ENOENT))
                }
            }
            Command::Ls(p) => {
                let shown = p.as_deref().unwrap_or(".");
                let path = self.path(shown);
                let sys = self.boot()?;
                match sys.list(&path) {
                    Ok(entries) => {
                        for e in entries {
                            if sys.is_dir(&join(&path, &e)) {
                                let _ = writeln!(out, "{e}/");
                            } else {
                                let _ = writeln!(out, "{e}");
                            }
                        }
                    }
                    Err(Errno::ENOTDIR) => {
                        let _ = writeln!(out, "{shown}");
                    }
                    Err(e) => {
                        self.complain(err, &format!("ls: cannot access '{shown}': {e}"));
                    }
                }
                Ok(())
            }
            Command::Mkdir(p) => {
                let path = self.path(p);
                let r = self.boot()?.mkdir(&path);
                if let Err(e) = r {
                    self.complain(err, &format!("mkdir: cannot create directory '{p}': {e}"));
                }
                self.record("mkdir", r);
                Ok(())
            }
            Command::Mount { dir, opts } => {
                let r = self.boot()?.mount_tmpfs(dir, opts);
                if let Err(e) = r {
                    self.complain(err, &format!("mount: {dir}: {e}"));
                }
                self.record("mount", r);
                Ok(())
            }
            Command::Umount(dir) => {
                let r = self.boot()?.umount(dir);
                if let Err(e) = r {
                    self.complain(err, &format!("umount: {dir}: {e}"));
                }
                self.record("umount", r);
                Ok(())
            }
            Command::Snapshot(file) => {
                let json = memcgsim_node::snapshot::take(self.boot()?);
                if !self.write_snapshots {
                    return Ok(());
                }
                let r = memcgsim_node::write_new(std::path::Path::new(file), &json);
                if let Err(e) = r {
                    self.complain(err, &format!("snapshot: {file}: {e}"));
                }
                Ok(())
            }
            Command::Rm(name) => {
                let r = self.boot()?.unlink(name);
                if let Err(e) = r {
                    self.complain(err, &format!("rm: cannot remove '{name}': {e}"));
                }
                self.record("rm", r);
                Ok(())
            }
            Command::Rmdir(p) => {
                let path = self.path(p);
                let r = self.boot()?.rmdir(&path);
                if let Err(e) = r {
                    self.complain(err, &format!("rmdir: failed to remove '{p}': {e}"));
                }
                self.record("rmdir", r);
                Ok(())
            }
            Command::Echo { text, target: None } => {
                let text = self.expand_arith(text)?;
                let _ = writeln!(out, "{text}");
                Ok(())
            }
            Command::Echo {
                text,
                target: Some(target),
            } => {
                let text = &self.expand_arith(text)?;
                let r = match target {
                    Target::Path(p) => {
                        let path = self.path(p);
                        let sys = self.boot()?;
                        // As bash does it: open (whose errors name the file), write (whose
                        // errors are echo's), close.
                        match sys.open(&path) {
                            Err(e) => {
                                self.complain(err, &format!("{p}: {e}"));
                                Err(e)
                            }
                            Ok(fd) => {
                                let r = sys.write_fd(fd, text);
                                let _ = sys.close(fd);
                                if let Err(e) = r {
                                    self.complain(err, &format!("echo: write error: {e}"));
                                }
                                r
                            }
                        }
                    }
                    Target::Fd(name) => {
                        let fd = self.fd(name)?;
                        let r = self.boot()?.write_fd(fd, text);
                        if let Err(e) = r {
                            self.complain(err, &format!("echo: write error: {e}"));
                        }
                        r
                    }
                };
                self.record("echo", r);
                Ok(())
            }
            Command::Cat(targets) => {
                for target in targets {
                    let (shown, r) = match target {
                        Target::Path(p) => {
                            let path = self.path(p);
                            (p.clone(), self.boot()?.read(&path))
                        }
                        Target::Fd(name) => {
                            let fd = self.fd(name)?;
                            (format!("@{name}"), self.boot()?.read_fd(fd))
                        }
                    };
                    match r {
                        Ok(s) => {
                            let _ = out.write_all(s.as_bytes());
                        }
                        Err(e) => self.complain(err, &format!("cat: {shown}: {e}")),
                    }
                }
                Ok(())
            }
            Command::Open { name, path } => {
                if self.fds.contains_key(name) {
                    return Err(format!("open: an fd named '{name}' is already open"));
                }
                let abs = self.path(path);
                let r = self.boot()?.open(&abs);
                let r = match r {
                    Ok(fd) => {
                        self.fds.insert(name.clone(), fd);
                        Ok(())
                    }
                    Err(e) => {
                        self.complain(err, &format!("open: {path}: {e}"));
                        Err(e)
                    }
                };
                self.record("open", r);
                Ok(())
            }
            Command::Close(name) => {
                let fd = self.fd(name)?;
                self.fds.remove(name);
                let r = self.boot()?.close(fd);
                if let Err(e) = r {
                    self.complain(err, &format!("close: {name}: {e}"));
                }
                self.record("close", r);
                Ok(())
            }
            Command::Run(spec) => self.run_task(spec, err),
            Command::Sleep(ns) => {
                let sys = self.boot()?;
                let start = sys.now_ns();
                let whole = sys.advance(*ns);
                let slept = fmt_ns(sys.now_ns() - start);
                if !whole && self.report_tasks {
                    self.complain(err, &format!("sleep: interrupted after {slept}"));
                }
                Ok(())
            }
            Command::Kill(name) => {
                let task = self.task(name)?;
                let sys = self.boot()?;
                let r = sys.kill(task.pid);
                sys.advance(0);
                if let Err(e) = r {
                    self.complain(err, &format!("kill: {name}: {e}"));
                }
                Ok(())
            }
            Command::Wait(name) => self.wait_task(name, err),
            Command::Poll { name, timeout_ns } => {
                let fd = self.fd(name)?;
                let r = self.boot()?.poll(fd, *timeout_ns);
                self.last_poll = Some(match r {
                    Ok(PollResult::Event) => PollWant::Event,
                    Ok(PollResult::Timeout) => PollWant::Timeout,
                    Ok(PollResult::Error) => PollWant::Error,
                    Ok(PollResult::Interrupted) => {
                        self.complain(err, "poll: interrupted");
                        PollWant::Timeout
                    }
                    Err(_) => {
                        return Err(format!(
                            "poll: @{name} is not a pressure file (only PSI triggers can be polled)"
                        ))
                    }
                });
                Ok(())
            }
            Command::Expect { expr, text } => {
                if let Some(detail) = self.check(expr)? {
                    self.expect_failures += 1;
                    self.complain(err, &format!("expect failed: {text} ({detail})"));
                }
                Ok(())
            }
        }
    }

    fn machine(&mut self, words: &[(String, String)]) -> Result<(), String> {
        if self.started || self.sys.is_some() {
            return Err("machine must be the first command of a script".into());
        }
        let mut cfg = MachineConfig::default();
        for (k, v) in words.iter().chain(self.machine_overrides.iter()) {
            cfg.set(k, v)?;
        }
        self.boot_with(cfg)
    }

    fn run_task(&mut self, spec: &RunSpec, err: &mut dyn Write) -> Result<(), String> {
        let name = spec.task_name().to_string();
        let cgroup = self.path(&spec.cgroup);
        self.boot()?;
        if let Some(old) = self.tasks.get(&name) {
            let ended = self.sys.as_ref().and_then(|s| s.outcome(old.pid)).is_some();
            if !ended {
                return Err(format!("run: a task named '{name}' is still running"));
            }
        }
        let program = memcgsim_workloads::build(&spec.workload, &spec.args)?;
        if !spec.background {
            self.last_fg = None;
        }
        let opts = SpawnOpts {
            name: Some(name.clone()),
            oom_score_adj: spec.oom_score_adj,
        };
        let pid = match self.boot()?.spawn(&cgroup, opts, program) {
            Ok(pid) => pid,
            Err(e) => {
                self.complain(
                    err,
                    &format!("run: cannot start '{name}' in '{}': {e}", spec.cgroup),
                );
                self.record("run", Err(e));
                return Ok(());
            }
        };
        self.record("run", Ok(()));
        self.tasks.insert(
            name.clone(),
            Task {
                pid,
                holds: spec.holds(),
            },
        );
        if spec.background {
            return Ok(());
        }
        let limit = self.wait_limit_ns;
        let start = self.boot()?.now_ns();
        match self.boot()?.wait(pid, false, limit) {
            Ok(WaitResult::Ended(o)) => {
                self.report_error(err, &name, pid);
                self.report_end(err, &name, pid);
                self.last_fg = Some((name, o));
                Ok(())
            }
            Ok(WaitResult::Holding) => {
                self.report_holding(err, &name, start);
                Ok(())
            }
            Ok(WaitResult::Interrupted) => {
                // Ctrl-C: the foreground task gets SIGINT, whose default action ends it.
                let _ = self.boot()?.interrupt_task(pid);
                self.report_end(err, &name, pid);
                self.last_fg = Some((name, TaskOutcome::Interrupted));
                Ok(())
            }
            Err(e) => {
                let hint = if spec.holds() {
                    " (it holds its memory: start it with --bg and use wait)"
                } else {
                    ""
                };
                Err(format!("run {name}: {e}{hint}"))
            }
        }
    }

    fn wait_task(&mut self, name: &str, err: &mut dyn Write) -> Result<(), String> {
        let task = self.task(name)?;
        if let Some(o) = self.boot()?.outcome(task.pid) {
            self.report_error(err, name, task.pid);
            self.report_end(err, name, task.pid);
            self.last_fg = Some((name.to_string(), o));
            return Ok(());
        }
        let limit = self.wait_limit_ns;
        let start = self.boot()?.now_ns();
        match self.boot()?.wait(task.pid, task.holds, limit) {
            Ok(WaitResult::Ended(o)) => {
                self.report_error(err, name, task.pid);
                self.report_end(err, name, task.pid);
                self.last_fg = Some((name.to_string(), o));
                Ok(())
            }
            Ok(WaitResult::Holding) => {
                self.report_holding(err, name, start);
                Ok(())
            }
            Ok(WaitResult::Interrupted) => {
                // As bash's wait builtin: the wait ends, the task goes on.
                self.complain(
                    err,
                    &format!("wait: interrupted; task '{name}' is still running"),
                );
                Ok(())
            }
            Err(e) => Err(format!("wait {name}: {e}")),
        }
    }

    /// The failed system call a task that exited reported, as the program prints it on its
    /// standard error (`anon: cannot allocate 3.0G: ...`), with or without task reports.
    fn report_error(&mut self, err: &mut dyn Write, name: &str, pid: Pid) {
        if let Some(e) = self.task_error(pid) {
            self.complain(err, &format!("{}: {e}", clip(name)));
        }
    }

    /// What a task that exited after a failed system call reported, if it did.
    fn task_error(&self, pid: Pid) -> Option<String> {
        let end = self.sys.as_ref()?.task_end(pid)?;
        end.error.map(|e| e.to_string())
    }

    /// With task reports on: how the task `pid` ended, and how long it ran.
    fn report_end(&mut self, err: &mut dyn Write, name: &str, pid: Pid) {
        if !self.report_tasks {
            return;
        }
        let Some(end) = self.sys.as_ref().and_then(|s| s.task_end(pid)) else {
            return;
        };
        self.complain(err, &describe_end(name, &end));
    }

    fn report_holding(&mut self, err: &mut dyn Write, name: &str, since: u64) {
        if !self.report_tasks {
            return;
        }
        let Some(sys) = self.sys.as_ref() else {
            return;
        };
        let t = fmt_ns(sys.now_ns().saturating_sub(since));
        self.complain(
            err,
            &format!(
                "{name}: done after {t} of virtual time, holding its memory (kill {name} frees it)"
            ),
        );
    }

    /// Expand every `$(( VALUE [OP VALUE]... ))` in an echo text to the integer it names,
    /// as bash arithmetic expansion does: `*` and `/` (integer division, toward zero) bind
    /// tighter than `+` and `-`. VALUEs are the `expect` forms (numbers with suffixes,
    /// files, FILE:KEY, @fd); operators are separated by spaces.
    fn expand_arith(&mut self, text: &str) -> Result<String, String> {
        let mut out = String::new();
        for seg in parse_arith(text)? {
            match seg {
                Segment::Text(t) => {
                    for piece in split_vars(&t) {
                        match piece {
                            Ok(lit) => out.push_str(&lit),
                            Err(name) => out.push_str(&self.var_value(&name)?.to_string()),
                        }
                    }
                }
                Segment::Arith(terms) => out.push_str(&self.arith_value(&terms)?.to_string()),
            }
        }
        Ok(out)
    }

    /// The value of the terms of one `$(( ))` (or of a `let`), as [`arith`] computes it: an
    /// operand that cannot be read, a division by zero or an overflow is an error.
    fn arith_value(&mut self, terms: &[(char, Value)]) -> Result<i64, String> {
        let mut values = Vec::with_capacity(terms.len());
        for (op, v) in terms {
            match self.eval(v) {
                Ok(n) => values.push((*op, n)),
                Err(EvalError::Fail(m)) | Err(EvalError::Script(m)) => {
                    return Err(format!("in $(( )): {m}"))
                }
            }
        }
        arith(&values)
    }

    /// The value of a variable set by `let`, or of `now` (the virtual time in nanoseconds)
    /// once the machine has booted.
    pub fn var(&self, name: &str) -> Option<i64> {
        if name == NOW {
            return self.sys.as_ref().map(|s| ns_value(s.now_ns()));
        }
        self.vars.get(name).copied()
    }

    /// The value of `$name`: a variable set by `let`, or `$now`, the virtual time in
    /// nanoseconds (which boots the machine if it has not booted yet).
    fn var_value(&mut self, name: &str) -> Result<i64, String> {
        if name == NOW {
            return Ok(ns_value(self.boot()?.now_ns()));
        }
        self.vars
            .get(name)
            .copied()
            .ok_or_else(|| format!("no variable ${name} (set it with let {name} = ...)"))
    }

    fn eval(&mut self, v: &Value) -> Result<i64, EvalError> {
        let read = |this: &mut Self, p: &str| -> Result<String, EvalError> {
            let path = this.path(p);
            let sys = this.boot().map_err(EvalError::Script)?;
            sys.read(&path)
                .map_err(|e| EvalError::Fail(format!("cannot read {p}: {e}")))
        };
        match v {
            Value::Int(n) => Ok(*n),
            Value::File(p) => {
                let s = read(self, p)?;
                single_value(&s).map_err(|e| EvalError::Fail(format!("{p}: {e}")))
            }
            Value::Key(p, key) => {
                let s = read(self, p)?;
                keyed_value(&s, key).map_err(|e| EvalError::Fail(format!("{p}: {e}")))
            }
            Value::Var(name) => self.var_value(name).map_err(EvalError::Script),
            Value::Fd(name) => {
                let fd = self.fd(name).map_err(EvalError::Script)?;
                let sys = self.boot().map_err(EvalError::Script)?;
                let s = sys
                    .read_fd(fd)
                    .map_err(|e| EvalError::Fail(format!("cannot read @{name}: {e}")))?;
                single_value(&s).map_err(|e| EvalError::Fail(format!("@{name}: {e}")))
            }
        }
    }

    /// Evaluate an expectation: `Ok(None)` if it holds, `Ok(Some(detail))` if it fails.
    fn check(&mut self, expr: &Expr) -> Result<Option<String>, String> {
        let values = self.operand_values(expr)?;
        let last_op = self.last_op.as_ref().map(|o| (o.what, o.result));
        let last_fg = self.last_fg.as_ref().map(|(n, o)| (n.as_str(), *o));
        let detail = judge(expr, &values, last_fg, last_op, self.last_poll);
        // `expect exit 0` after a task that could not start: why it exited.
        let why = match (expr, &self.last_fg) {
            (Expr::Exit(_) | Expr::Killed, Some((name, _))) => {
                self.tasks.get(name).and_then(|t| self.task_error(t.pid))
            }
            _ => None,
        };
        Ok(match (detail, why) {
            (Some(d), Some(why)) => Some(format!("{d}: {why}")),
            (d, _) => d,
        })
    }

    /// What the last `poll` returned, if one was done.
    pub fn last_poll(&self) -> Option<PollWant> {
        self.last_poll
    }

    /// The values of an expectation's operands, in order (see [`operands`]): each a number,
    /// or why it could not be read. Err for a script error (unknown fd, no machine).
    pub fn operand_values(&mut self, expr: &Expr) -> Result<Vec<Result<i64, String>>, String> {
        let mut out = Vec::new();
        for v in operands(expr) {
            out.push(match self.eval(v) {
                Ok(n) => Ok(n),
                Err(EvalError::Fail(m)) => Err(m),
                Err(EvalError::Script(m)) => return Err(m),
            });
        }
        Ok(out)
    }

    /// How the last write, mkdir, rmdir, open, close or run ended, if any was done.
    pub fn last_op(&self) -> Option<(&'static str, Result<(), Errno>)> {
        self.last_op.as_ref().map(|o| (o.what, o.result))
    }
}

/// Whether the word after `run`'s words `prior` is the workload name: the options
/// (`--bg`, `--name NAME`, `--oom-score-adj N`, `--opt=value`) are followed by exactly one
/// word, the cgroup.
fn run_word_is_workload(prior: &[&str]) -> bool {
    let mut i = 0;
    while i < prior.len() && prior[i].starts_with("--") {
        if !prior[i].contains('=') && prior[i] != "--bg" {
            i += 1;
        }
        i += 1;
    }
    prior.len() == i + 1
}

/// A time in nanoseconds as a script value (saturating; no run nears 292 years).
fn ns_value(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

/// The operands an expectation reads, in order.
pub fn operands(expr: &Expr) -> Vec<&Value> {
    match expr {
        Expr::Cmp(a, _, b) | Expr::Close(a, b, _) => vec![a, b],
        Expr::Exit(_) | Expr::Killed | Expr::Errno(_) | Expr::Poll(_) => Vec::new(),
    }
}

/// Judge an expectation on observed facts: the operand values (as [`operands`] lists them),
/// the last foreground task's name and outcome, the last file operation and what the last
/// poll returned. Returns None when
/// it holds, or why it does not. The model and a real kernel run are judged by this same code.
pub fn judge(
    expr: &Expr,
    values: &[Result<i64, String>],
    last_fg: Option<(&str, TaskOutcome)>,
    last_op: Option<(&str, Result<(), Errno>)>,
    last_poll: Option<PollWant>,
) -> Option<String> {
    let two = || -> Result<(i64, i64), String> {
        match (values.first(), values.get(1)) {
            (Some(Ok(a)), Some(Ok(b))) => Ok((*a, *b)),
            (Some(Err(m)), _) | (_, Some(Err(m))) => Err(m.clone()),
            _ => Err("missing operand".into()),
        }
    };
    match expr {
        Expr::Cmp(_, op, _) => match two() {
            Err(m) => Some(m),
            Ok((va, vb)) if op.eval(va, vb) => None,
            Ok((va, vb)) => Some(format!("{} {op} {}", show(va), show(vb))),
        },
        Expr::Close(_, _, pct) => match two() {
            Err(m) => Some(m),
            Ok((va, vb)) if values_close(va, vb, *pct) => None,
            Ok((va, vb)) => Some(format!("a={va}, b={vb}, pct={pct}")),
        },
        // The status as a shell's $? shows it: 128 + the signal for a killed task.
        Expr::Exit(n) => match last_fg {
            Some((_, o)) if o.shell_status() == *n => None,
            Some((name, o)) => Some(describe(name, o)),
            None => Some("no foreground task has ended".into()),
        },
        Expr::Killed => match last_fg {
            Some((_, TaskOutcome::Killed)) => None,
            Some((name, o)) => Some(describe(name, o)),
            None => Some("no foreground task has ended".into()),
        },
        Expr::Errno(want) => match last_op {
            Some((_, r)) if r.err() == *want => None,
            Some((what, Ok(()))) => Some(format!("the last {what} succeeded")),
            Some((what, Err(e))) => Some(format!("the last {what} failed with {}", e.name())),
            None => Some("no write, mkdir, rmdir, open, close or run has been done".into()),
        },
        Expr::Poll(want) => match last_poll {
            Some(got) if got == *want => None,
            Some(got) => Some(format!("the last poll returned {}", got.name())),
            None => Some("no poll has been done".into()),
        },
    }
}

/// One line on how a task ended, for task reports: `NAME: exited with status 0 after 1.2s
/// of virtual time`, `NAME: killed by the OOM killer (out of memory in /A) after ...`.
pub fn describe_end(name: &str, end: &TaskEnd) -> String {
    let how = match (end.outcome, &end.oom) {
        (TaskOutcome::Exited(c), _) => format!("exited with status {c}"),
        (TaskOutcome::Killed, Some(Some(cg))) => {
            format!("killed by the OOM killer (out of memory in {cg})")
        }
        (TaskOutcome::Killed, Some(None)) => {
            "killed by the OOM killer (the machine ran out of memory)".to_string()
        }
        (TaskOutcome::Killed, None) => "killed (SIGKILL)".to_string(),
        (TaskOutcome::Interrupted, _) => "interrupted (SIGINT, status 130)".to_string(),
    };
    format!(
        "{name}: {how} after {} of virtual time",
        fmt_ns(end.elapsed_ns)
    )
}

fn describe(name: &str, o: TaskOutcome) -> String {
    match o {
        TaskOutcome::Exited(c) => format!("task '{name}' exited with status {c}"),
        TaskOutcome::Killed => format!("task '{name}' was killed"),
        TaskOutcome::Interrupted => format!("task '{name}' was interrupted (SIGINT)"),
    }
}

/// Run a script on a fresh default-configured interpreter; see [`Interpreter::run`].
pub fn run_script(name: &str, text: &str, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    Interpreter::new(name).run(text, out, err)
}

#[cfg(test)]
mod tests {
    //! Interpreter tests that never boot a machine: the commands used here (echo to stdout,
    //! pwd, help, literal-only expects, syntax errors) do not need one.

    use super::*;

    fn run(text: &str) -> (i32, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = run_script("t.mcg", text, &mut out, &mut err);
        (
            status,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn echo_pwd_help() {
        let (status, out, err) = run("echo hello   \"big  world\" # hi\npwd\n\n# c\n");
        assert_eq!(status, EXIT_OK);
        assert_eq!(out, "hello big  world\n/\n");
        assert_eq!(err, "");
        let (status, out, _) = run("help\n");
        assert_eq!(status, EXIT_OK);
        assert!(out.starts_with(HELP));
        assert!(out.ends_with(&format!(
            "Workloads: {} (help WORKLOAD tells more)\n",
            memcgsim_workloads::WORKLOADS.join(", ")
        )));
    }

    #[test]
    fn literal_expectations() {
        let (status, _, err) = run("expect 1K == 1024\nexpect -1 < 0\nexpect max > 1T\n");
        assert_eq!(status, EXIT_OK, "{err}");
        let (status, out, err) = run(
            "expect 30M <= 1M\necho still running\nexpect close( 101 , 99 , 1 )\n\
             expect close(102, 97, 1)\nexpect close(5, 0, 1)\nexpect close(0, 0, 1)\n",
        );
        assert_eq!(status, EXIT_EXPECT_FAILED);
        assert_eq!(out, "still running\n");
        assert_eq!(
            err,
            "t.mcg:1: expect failed: 30M <= 1M (31457280 <= 1048576)\n\
             t.mcg:4: expect failed: close(102, 97, 1) (a=102, b=97, pct=1)\n\
             t.mcg:5: expect failed: close(5, 0, 1) (a=5, b=0, pct=1)\n"
        );
    }

    #[test]
    fn outcome_expectations_without_tasks() {
        let (status, _, err) = run("expect exit 0\nexpect killed\nexpect errno 0\n");
        assert_eq!(status, EXIT_EXPECT_FAILED);
        assert_eq!(
            err,
            "t.mcg:1: expect failed: exit 0 (no foreground task has ended)\n\
             t.mcg:2: expect failed: killed (no foreground task has ended)\n\
             t.mcg:3: expect failed: errno 0 (no write, mkdir, rmdir, open, close or run \
             has been done)\n"
        );
    }

    #[test]
    fn script_errors_stop_the_script() {
        let (status, out, err) = run("echo one\nfrobnicate now\necho two\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert_eq!(out, "one\n");
        assert_eq!(
            err,
            "t.mcg:2: error: unknown command 'frobnicate' (try 'help')\n"
        );

        let (status, _, err) = run("expect 1 == 2\nexpect 30MB == 1\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert!(
            err.ends_with("t.mcg:2: error: bad number '30MB'\n"),
            "{err}"
        );

        let (status, _, err) = run("echo x\nmachine memory=1G\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert_eq!(
            err,
            "t.mcg:2: error: machine must be the first command of a script\n"
        );

        let (status, _, err) = run("echo \"unterminated\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert_eq!(err, "t.mcg:1: error: unterminated double quote\n");
    }

    #[test]
    fn bad_machine_lines_are_script_errors() {
        let (status, _, err) = run("machine memory=1M\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert_eq!(err, "t.mcg:1: error: memory must be at least 16M\n");
        let (status, _, err) = run("machine warp=9\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert!(err.contains("unknown machine option 'warp'"), "{err}");
        let (status, _, err) = run("machine cgroup=v3\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert!(err.contains("machine option cgroup"), "{err}");
    }

    #[test]
    fn exec_line_reports_without_printing() {
        let mut interp = Interpreter::new("<stdin>");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let e = interp.exec_line(7, "kill", &mut out, &mut err).unwrap_err();
        assert_eq!(e.to_string(), "<stdin>:7: error: usage: kill NAME");
        assert!(out.is_empty() && err.is_empty());
        // The interpreter goes on after a script error, as the shell needs.
        interp
            .exec_line(8, "expect 1 != 2", &mut out, &mut err)
            .unwrap();
        assert_eq!(interp.status(), EXIT_OK);
        interp
            .exec_line(9, "expect 1 == 2", &mut out, &mut err)
            .unwrap();
        assert_eq!(interp.status(), EXIT_EXPECT_FAILED);
        assert_eq!(interp.expect_failures(), 1);
        assert_eq!(interp.cwd(), "/");
        assert!(interp.system().is_none());
    }

    #[test]
    fn completes_command_names() {
        let interp = Interpreter::new("x");
        let (start, names) = interp.complete_line("c", 1);
        assert_eq!(start, 0);
        assert_eq!(names, vec!["cat", "cd", "clear", "close"]);
        let (start, names) = interp.complete_line("  e", 3);
        assert_eq!(start, 2);
        assert_eq!(names, vec!["echo", "expect"]);
        // No machine yet: no paths to offer, and odd cursor positions are harmless.
        assert!(interp.complete_line("cat /A/mem", 10).1.is_empty());
        assert!(interp.complete_line("cat é", 5).1.is_empty());
        assert!(interp.complete_line("cat é", 99).1.is_empty());
    }

    #[test]
    fn completes_workloads_and_machine_keys() {
        let interp = Interpreter::new("x");
        assert_eq!(
            interp.complete_line("help me", 7),
            (5, vec!["mem_eater".into()])
        );
        assert_eq!(
            interp.complete_line("run A us", 8),
            (6, vec!["usemem".into()])
        );
        assert_eq!(
            interp.complete_line("run --bg --name x --oom-score-adj=5 /A pa", 41),
            (39, vec!["pagecache".into(), "pagetest".into()])
        );
        // The cgroup position completes paths (none without a machine), not workloads.
        assert!(interp.complete_line("run --name us", 13).1.is_empty());
        assert!(interp.complete_line("run A anon 5", 12).1.is_empty());
        assert_eq!(
            interp.complete_line("machine memory=1G swapp", 23),
            (18, vec!["swappiness=".into()])
        );
        assert_eq!(
            interp.complete_line("machine memory=1G swap_s", 24),
            (18, vec!["swap_seek=".into(), "swap_sync=".into()])
        );
    }

    #[test]
    fn let_remembers_a_value_and_repeat_expands_blocks() {
        let text = "machine memory=256M\n\
                    let base = 3\n\
                    repeat 4\n\
                    mkdir /c$i\n\
                    echo $(( $i * 10 + $base ))\n\
                    end\n\
                    let n = $(( 7 / 2 - 1 ))\n\
                    expect $n == 2\n\
                    expect $base > $n\n\
                    echo n=$n, $ base$base\n";
        let (status, out, err) = run(text);
        assert_eq!(out, "3\n13\n23\n33\nn=2, $ base3\n", "{err}");
        assert_eq!(status, EXIT_OK, "{err}");
        let (status, out, _) = run("repeat 3\nmkdir /g$i\nend\nls /\n");
        assert_eq!(status, EXIT_OK);
        for g in ["g0/", "g1/", "g2/"] {
            assert!(out.contains(g), "{out}");
        }
        // $i only where no name goes on after it; a second `$i` on the line too.
        assert_eq!(
            run("let index = 7\nrepeat 2\necho $i$i $index\nend\n").1,
            "00 7\n11 7\n"
        );
    }

    #[test]
    fn let_and_repeat_errors_name_their_line() {
        for (text, want) in [
            (
                "echo 1\nrepeat 2\necho x\n",
                "t.mcg:2: error: repeat without end",
            ),
            ("end\n", "t.mcg:1: error: end without block"),
            (
                "repeat -1\nend\n",
                "t.mcg:1: error: repeat: '-1' is not a count",
            ),
            (
                "repeat 100001\nend\n",
                "t.mcg:1: error: repeat: '100001' is not a count",
            ),
            ("repeat\nend\n", "t.mcg:1: error: usage: repeat N"),
            ("\nexpect $nope == 1\n", "t.mcg:2: error: no variable $nope"),
            ("let x = 1 2\n", "t.mcg:1: error: usage: let NAME"),
            (
                "let 1x = 1\n",
                "t.mcg:1: error: let: '1x' is not a variable name",
            ),
            (
                "let x = $(( 1 / 0 ))\n",
                "t.mcg:1: error: in $(( )): division by zero",
            ),
            ("let x 1\n", "t.mcg:1: error: usage: let NAME"),
            (
                "let x = $(n)\n",
                "t.mcg:1: error: '$(n)': a variable is $NAME",
            ),
            ("echo $nope\n", "t.mcg:1: error: no variable $nope"),
        ] {
            let (status, _, err) = run(text);
            assert_eq!(status, EXIT_SCRIPT_ERROR, "{text:?}: {err}");
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
        // A repeat that would expand past the bound is refused before anything runs.
        let (status, _, err) = run("repeat 100000\necho 1\necho 2\necho 3\necho 4\necho 5\necho 6\necho 7\necho 8\necho 9\necho 10\necho 11\nend\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert_eq!(
            err,
            "t.mcg:1: error: repeat: the script expands to more than 1000000 lines\n"
        );
    }

    #[test]
    fn garbage_never_panics() {
        let text = "\u{0}\n>\n>>>\necho >\nexpect close(\nrun --\nwait\nkill\nopen\n\
                    close x\ncat @nofd\nexpect @nofd == 1\n";
        for line in text.lines() {
            let (status, _, _) = run(line);
            assert!(status == EXIT_SCRIPT_ERROR || status == EXIT_OK, "{line:?}");
        }
    }
}

#[cfg(test)]
mod block_tests {
    //! Blocks (`if`, `every`, `break`, nested `repeat`) and `$now`, most of them on a small
    //! machine whose clock starts at 0.

    use super::*;

    fn run_on(mut interp: Interpreter, text: &str) -> (i32, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = interp.run(text, &mut out, &mut err);
        (
            status,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    fn run(text: &str) -> (i32, String, String) {
        run_on(Interpreter::new("t.mcg"), text)
    }

    /// Run a script that must succeed; its standard output.
    fn ok(text: &str) -> String {
        let (status, out, err) = run(text);
        assert_eq!(status, EXIT_OK, "{text}\n{err}");
        assert_eq!(err, "", "{text}");
        out
    }

    /// Run a script that must stop with a script error; the message.
    fn script_error(text: &str) -> String {
        let (status, _, err) = run(text);
        assert_eq!(status, EXIT_SCRIPT_ERROR, "{text}\n{err}");
        err
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn if_takes_a_branch_and_never_counts_as_a_failed_expect() {
        let text = "if 1 < 2\necho then\nelse\necho else\nend\n\
                    if 2 < 1\necho then\nelse\necho else\nend\n\
                    if 2 < 1\necho never\nend\n\
                    if close(100, 101, 5)\necho close\nend\n\
                    if killed\necho never\nelse\necho no task\nend\n\
                    if errno 0\necho never\nend\n";
        assert_eq!(ok(text), "then\nelse\nclose\nno task\n");
    }

    #[test]
    fn if_judges_tasks_and_errnos_as_expect_does() {
        let text = "machine memory=256M\nmkdir /A\n\
                    if errno 0\necho made\nend\n\
                    mkdir /A\n\
                    if errno EEXIST\necho exists\nend\n\
                    if errno 0\necho never\nend\n\
                    run /A anon 1M\n\
                    if exit 0\necho exited\nend\n\
                    if killed\necho never\nend\n\
                    echo 100M > /A/memory.max\n\
                    if /A/memory.max == 100M\necho limited\nend\n\
                    if memory.stat:anon == 0\necho no anon left\nend\n";
        let (status, out, err) = run(text);
        assert_eq!(status, EXIT_OK, "{err}");
        assert_eq!(out, "made\nexists\nexited\nlimited\nno anon left\n");
        // Only mkdir's own complaint: the ifs print nothing.
        assert_eq!(
            err,
            "t.mcg:6: mkdir: cannot create directory '/A': File exists\n"
        );
    }

    #[test]
    fn if_on_a_value_that_cannot_be_read_is_a_script_error() {
        let (status, out, err) = run(
            "machine memory=256M\necho before\nif /B/memory.current > 0\necho x\nelse\necho y\nend\n",
        );
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert_eq!(out, "before\n");
        assert_eq!(
            err,
            "t.mcg:3: error: if /B/memory.current > 0: cannot read /B/memory.current: \
             No such file or directory\n"
        );
        assert_eq!(
            script_error(
                "machine memory=256M\nrepeat 2\nif close(memory.stat:anonx, 0, 1)\nend\nend\n"
            ),
            "t.mcg:3: error: if close(memory.stat:anonx, 0, 1): memory.stat: no key 'anonx'\n"
        );
        assert_eq!(
            script_error("if $x == 1\nend\n"),
            "t.mcg:1: error: no variable $x (set it with let x = ...)\n"
        );
    }

    #[test]
    fn block_errors_stop_the_script_before_anything_runs() {
        let (status, out, err) = run("echo ran\nrepeat 2\nelse\nend\n");
        assert_eq!((status, out.as_str()), (EXIT_SCRIPT_ERROR, ""));
        assert_eq!(err, "t.mcg:3: error: else without if\n");
        let (status, out, err) = run("echo ran\nif 1 == 1\necho x\n");
        assert_eq!((status, out.as_str()), (EXIT_SCRIPT_ERROR, ""));
        assert_eq!(err, "t.mcg:2: error: if without end\n");
        // A bad plain line inside a block is found when it runs, as before.
        let (status, out, err) = run("echo ran\nif 1 == 1\nfrobnicate\nend\n");
        assert_eq!((status, out.as_str()), (EXIT_SCRIPT_ERROR, "ran\n"));
        assert_eq!(
            err,
            "t.mcg:3: error: unknown command 'frobnicate' (try 'help')\n"
        );
    }

    #[test]
    fn nested_repeats_and_break() {
        // The innermost repeat's $i wins; the outer one's is back after the inner block.
        assert_eq!(
            ok("repeat 2\nrepeat 2\necho in $i\nend\necho out $i\nend\n"),
            "in 0\nin 1\nout 0\nin 0\nin 1\nout 1\n"
        );
        // break ends the innermost loop at once, through the if around it.
        assert_eq!(
            ok("repeat 5\nif $i == 3\nbreak\nend\necho $i\nend\necho done\n"),
            "0\n1\n2\ndone\n"
        );
        assert_eq!(
            ok("repeat 2\nrepeat 9\nif $i >= 2\nbreak\necho never\nend\necho $i\nend\necho next\nend\n"),
            "0\n1\nnext\n0\n1\nnext\n"
        );
        // An if's header is read again with each $i; so is a nested repeat's body.
        assert_eq!(
            ok("repeat 4\nif 1$i >= 12\necho big $i\nelse\necho small $i\nend\nend\n"),
            "small 0\nsmall 1\nbig 2\nbig 3\n"
        );
        // Expect failures inside blocks count and name their line.
        let (status, _, err) = run("repeat 2\nif 1 == 1\nexpect $i == 1\nend\nend\n");
        assert_eq!(status, EXIT_EXPECT_FAILED);
        assert_eq!(err, "t.mcg:3: expect failed: 0 == 1 (0 == 1)\n");
    }

    #[test]
    fn now_is_the_virtual_time() {
        let out = ok(
            "machine memory=256M\necho $now\nsleep 1500ms\nlet t = $now\n\
                      expect $now == 1500000000\necho $(( $now / 1000000 ))ms $t\n",
        );
        assert_eq!(out, "0\n1500ms 1500000000\n");
        assert_eq!(
            script_error("let now = 5\n"),
            "t.mcg:1: error: now is read-only: $now is the virtual time in nanoseconds\n"
        );
        let mut interp = Interpreter::new("x");
        assert_eq!(interp.var("now"), None);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        interp
            .exec_line(1, "sleep 2ms", &mut out, &mut err)
            .unwrap();
        assert_eq!(interp.var("now"), Some(2_000_000));
    }

    #[test]
    fn every_for_ticks_at_each_interval_then_waits_out_the_duration() {
        // Ticks at T0 + 100ms, 200ms, 300ms (300ms <= 350ms), then time goes on to T0 + 350ms.
        let out = ok("machine memory=256M\nsleep 5ms\nevery 100ms for 350ms\necho $now\nend\necho end $now\n");
        assert_eq!(out, "105000000\n205000000\n305000000\nend 355000000\n");
        // A tick at exactly T0 + DURATION runs; DURATION 0 has no tick.
        let out = ok(
            "machine memory=256M\nevery 100ms for 300ms\necho $now\nend\n\
                      every 1s for 0\necho never\nend\necho end $now\n",
        );
        assert_eq!(out, "100000000\n200000000\n300000000\nend 300000000\n");
    }

    #[test]
    fn every_skips_the_ticks_its_body_went_past() {
        // The body sleeps 250ms: after the tick at 100ms it is 350ms, so 200ms and 300ms are
        // skipped and the next tick is 400ms; the body ends past T0 + DURATION.
        let out = ok(
            "machine memory=256M\nevery 100ms for 1s\necho $now\nsleep 250ms\nend\necho end $now\n",
        );
        assert_eq!(
            out,
            "100000000\n400000000\n700000000\n1000000000\nend 1250000000\n"
        );
        // A body that ends exactly on the next tick misses nothing.
        let out = ok("machine memory=256M\nevery 100ms for 300ms\necho $now\nsleep 100ms\nend\necho end $now\n");
        assert_eq!(out, "100000000\n200000000\n300000000\nend 400000000\n");
    }

    #[test]
    fn break_ends_an_every_loop_at_once() {
        let out = ok(
            "machine memory=256M\nlet n = 0\nevery 10ms for 1s\nlet n = $(( $n + 1 ))\n\
                      if $now >= 30000000\nbreak\nend\nend\necho $n $now\n",
        );
        assert_eq!(out, "3 30000000\n");
        // In a repeat inside an every, break ends the repeat only.
        let out = ok(
            "machine memory=256M\nevery 10ms for 20ms\nrepeat 5\nif $i == 1\nbreak\nend\n\
                      echo $now $i\nend\nend\necho $now\n",
        );
        assert_eq!(out, "10000000 0\n20000000 0\n20000000\n");
    }

    #[test]
    fn every_until_stops_when_the_task_ends() {
        let text = "machine memory=256M\nmkdir /A\n\
                    run --bg --name a /A usemem 20M --passes 4 --nap 25ms\n\
                    let n = 0\nlet last = 0\n\
                    every 10ms until a\nlet n = $(( $n + 1 ))\nlet last = $now\nend\n\
                    let t = $now\n\
                    echo $n $last $t\n\
                    wait a\nexpect exit 0\nexpect $now == $t\n\
                    let want = $(( $n * 10000000 ))\nexpect $last == $want\n\
                    let next = $(( $last + 10000000 ))\nexpect $t > $last\nexpect $t < $next\n\
                    every 10ms until a\necho never\nend\nexpect $now == $t\n";
        let (status, out, err) = run(text);
        assert_eq!(status, EXIT_OK, "{err}");
        // usemem's three naps alone take 75ms: the task ends between the ticks at 80ms and
        // 90ms, and the loop with it, before the next tick.
        let words: Vec<u64> = out.split_whitespace().map(|w| w.parse().unwrap()).collect();
        let [n, last, t] = words[..] else {
            panic!("{out}")
        };
        assert_eq!((n, last), (8, 80 * MS), "{out}");
        assert!(t > 80 * MS && t < 90 * MS, "{out}");
    }

    #[test]
    fn every_until_a_holding_task_stops_when_it_holds() {
        let text = "machine memory=256M\nmkdir /A\n\
                    run --bg --name h /A mem_eater 4M --chunks 4 --nap 10ms --hold\n\
                    let n = 0\n\
                    every 1ms until h\nlet n = $(( $n + 1 ))\nend\n\
                    let t = $now\nexpect /A/memory.current >= 4M\nwait h\nexpect $now == $t\n\
                    echo $n $t\n";
        let out = ok(text);
        // Three naps of 10ms: the task holds its 4M just after 30ms, alive, and the loop
        // ends there (wait h returns at once), after the ticks at 1ms to 30ms.
        let words: Vec<u64> = out.split_whitespace().map(|w| w.parse().unwrap()).collect();
        let [n, t] = words[..] else { panic!("{out}") };
        assert_eq!(n, 30, "{out}");
        assert!(t > 30 * MS && t < 31 * MS, "{out}");
    }

    #[test]
    fn every_until_errors() {
        assert_eq!(
            script_error("machine memory=256M\necho x\nevery 1ms until nobody\necho y\nend\n"),
            "t.mcg:3: error: no task named 'nobody'\n"
        );
        // The wait limit bounds the loop from its start, ticks included.
        let mut interp = Interpreter::new("t.mcg");
        interp.set_wait_limit_ns(1_000_000_000);
        let (status, out, err) = run_on(
            interp,
            "machine memory=256M\nmkdir /A\nrun --bg --name u /A usemem 1M --passes 100 --nap 100ms\n\
             let n = 0\nevery 300ms until u\nlet n = $(( $n + 1 ))\necho $n $now\nend\n",
        );
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert_eq!(out, "1 300000000\n2 600000000\n3 900000000\n");
        assert_eq!(
            err,
            "t.mcg:5: error: every: task 'u' did not end within 1 s of virtual time\n"
        );
    }

    #[test]
    fn every_headers_take_i_inside_a_repeat() {
        let text = "machine memory=256M\nmkdir /A\nrepeat 2\n\
                    run --bg --name t$i /A usemem 1M --passes 2 --nap 15ms\n\
                    let n$i = 0\n\
                    every 5ms until t$i\nlet n = 1\nend\n\
                    expect $now > 15000000\nwait t$i\nexpect exit 0\n\
                    end\necho done\n";
        assert_eq!(ok(text), "done\n");
    }

    #[test]
    fn interrupt_stops_an_every_loop() {
        let mut interp = Interpreter::new("t.mcg");
        interp.set_interrupt(Arc::new(AtomicBool::new(true)));
        interp.set_report_tasks(true);
        let (status, out, err) = run_on(
            interp,
            "machine memory=256M\nevery 10ms for 1s\necho tick\nend\necho $now\n",
        );
        assert_eq!(status, EXIT_OK);
        assert_eq!(out, "0\n");
        assert_eq!(err, "t.mcg:2: every: interrupted after 0\n");
    }

    #[test]
    fn if_and_every_are_commands_for_machine() {
        assert_eq!(
            script_error("if 1 == 1\nmachine memory=256M\nend\n"),
            "t.mcg:2: error: machine must be the first command of a script\n"
        );
        // A repeat is no command: its first line may be the machine.
        assert_eq!(ok("repeat 1\nmachine memory=256M\nend\necho $now\n"), "0\n");
    }
}
