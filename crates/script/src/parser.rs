//! The parser: turns the words of one line into a [`Command`]. It knows the syntax of every
//! command but nothing about the simulated system, so it can be tested on its own.

use memcgsim_model::text::clip;
use memcgsim_model::{units, Errno};

use crate::lexer::{tokenize, Word};
use crate::value::{
    is_var_name, parse_arith, parse_int, parse_value, split_vars, CmpOp, Segment, Value, NOW,
};

/// Where `echo` writes or `cat` reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A file path, as written (absolute or relative to the working directory).
    Path(String),
    /// An fd opened with `open NAME FILE`, written `@NAME`.
    Fd(String),
}

impl Target {
    fn parse(word: &str) -> Result<Target, String> {
        match word.strip_prefix('@') {
            Some("") => Err("'@' needs an fd name".into()),
            Some(name) => Ok(Target::Fd(name.to_string())),
            None if word.is_empty() => Err("empty file name".into()),
            None => Ok(Target::Path(word.to_string())),
        }
    }
}

/// The condition of an `expect` command or of an `if` block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// `A OP B`.
    Cmp(Value, CmpOp, Value),
    /// `close(A, B, PCT)`: the selftests' values_close.
    Close(Value, Value, i64),
    /// `exit N`: the last foreground task exited with status N.
    Exit(i32),
    /// `killed`: the last foreground task was killed.
    Killed,
    /// `errno NAME` (Some) or `errno 0` (None): how the last recorded file operation ended.
    Errno(Option<Errno>),
    /// `poll event|timeout|error`: what the last `poll` returned.
    Poll(PollWant),
}

/// What a `poll` returned, as `expect poll ...` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollWant {
    /// POLLPRI: the trigger fired.
    Event,
    /// The timeout passed first.
    Timeout,
    /// POLLERR: no trigger on the fd, or its cgroup was removed.
    Error,
}

impl PollWant {
    /// The word `expect poll` takes.
    pub fn name(self) -> &'static str {
        match self {
            PollWant::Event => "event",
            PollWant::Timeout => "timeout",
            PollWant::Error => "error",
        }
    }

    /// The outcome a word names (the inverse of [`PollWant::name`]).
    pub fn from_name(word: &str) -> Option<PollWant> {
        [PollWant::Event, PollWant::Timeout, PollWant::Error]
            .into_iter()
            .find(|w| w.name() == word)
    }
}

/// Options and operands of `run`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSpec {
    /// `--bg`: do not wait for the task.
    pub background: bool,
    /// `--name NAME`; defaults to the workload name.
    pub name: Option<String>,
    /// `--oom-score-adj N`, -1000..=1000.
    pub oom_score_adj: i32,
    /// The cgroup path, as written.
    pub cgroup: String,
    /// The workload name.
    pub workload: String,
    /// The workload's arguments.
    pub args: Vec<String>,
}

impl RunSpec {
    /// The task name: `--name`, or else the workload name.
    pub fn task_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.workload)
    }

    /// Whether the workload holds its memory when done (`--hold` among its arguments), which
    /// is where `wait` stops.
    pub fn holds(&self) -> bool {
        self.args.iter().any(|a| a == "--hold")
    }
}

/// One parsed command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `machine KEY=VALUE ...`
    Machine(Vec<(String, String)>),
    /// `mkdir PATH`
    Mkdir(String),
    /// `rmdir PATH`
    Rmdir(String),
    /// `cd [PATH]` (no path: the root)
    Cd(String),
    /// `ls [PATH]`
    Ls(Option<String>),
    /// `pwd`
    Pwd,
    /// `echo WORDS...` to stdout, or `echo WORDS... > TARGET` into a file or fd.
    Echo {
        text: String,
        target: Option<Target>,
    },
    /// `cat FILE|@NAME...`: each in turn, as cat(1) concatenates them
    Cat(Vec<Target>),
    /// `open NAME FILE`
    Open { name: String, path: String },
    /// `close NAME`
    Close(String),
    /// `run [--bg] [--name NAME] [--oom-score-adj N] CGROUP WORKLOAD ARGS...`
    Run(RunSpec),
    /// `sleep DURATION`, in nanoseconds.
    Sleep(u64),
    /// `kill NAME`
    Kill(String),
    /// `wait NAME`
    Wait(String),
    /// `poll @NAME TIMEOUT`: wait, at most TIMEOUT (ns), for the PSI trigger of an fd.
    Poll { name: String, timeout_ns: u64 },
    /// `expect EXPR`; `text` is the expression as written, for failure messages.
    Expect { expr: Expr, text: String },
    /// `help` (the commands), or `help WORKLOAD` (one workload's documentation)
    Help(Option<String>),
    /// `clear`: clear the terminal in the interactive shell; nothing elsewhere
    Clear,
    /// `let NAME = VALUE` or `let NAME = $(( ... ))`: the terms with their operators, as in
    /// an echo's arithmetic.
    Let {
        name: String,
        terms: Vec<(char, Value)>,
    },
    /// `mount -t tmpfs [-o size=SIZE,huge=HUGE] SOURCE DIR`, or
    /// `mount -o remount[,size=SIZE][,huge=HUGE] DIR`.
    Mount {
        dir: String,
        opts: memcgsim_model::shmem::TmpfsOptions,
    },
    /// `umount DIR`
    Umount(String),
    /// `rm FILE`: unlink a file of the simulated machine's filesystems.
    Rm(String),
    /// `snapshot FILE`: the machine's cgroup tree and memory state as
    /// scripts/memcgsim-snapshot writes a host's, into a new file of the host.
    Snapshot(String),
}

/// Every command name, for completion in the shell.
pub const COMMANDS: &[&str] = &[
    "cat", "cd", "clear", "close", "echo", "expect", "help", "kill", "let", "ls", "machine",
    "mkdir", "mount", "open", "poll", "pwd", "rm", "rmdir", "run", "sleep", "umount", "wait",
];

/// The one-line summary of every command, printed by `help`.
pub const HELP: &str = "\
Commands:
  machine KEY=VALUE ...        configure the machine (first command only)
  mkdir PATH                   create a cgroup
  rmdir PATH                   remove a cgroup
  cd [PATH]                    change the working directory (default /)
  ls [PATH]                    list a directory (directories end in /)
  pwd                          print the working directory
  echo TEXT...                 print TEXT
  echo VALUE > FILE|@NAME      write VALUE to a file or an open fd (>> is the same)
  cat FILE|@NAME...            print files
  open NAME FILE               open FILE and call the fd NAME
  close NAME                   close the fd NAME
  run [--bg] [--name NAME] [--oom-score-adj N] CGROUP WORKLOAD ARGS...
                               start a task (waits for it to end unless --bg)
  sleep DURATION               let time pass (2, 500ms, 2s, 100us)
  kill NAME                    SIGKILL a task
  wait NAME                    run until a task ends, or holds if it has --hold
  poll @NAME TIMEOUT           run until the PSI trigger written to fd NAME fires
  expect A OP B                compare values; OP is == != < <= > >=
  expect close(A, B, PCT)      A and B within PCT percent (kernel values_close)
  expect exit N | killed       how the last foreground task ended
  expect errno NAME | 0        how the last write, mkdir, rmdir, open, close, run,
                               mount, umount or rm ended
  expect poll event|timeout|error  what the last poll returned
  let NAME = VALUE | $(( ... ))  remember a value now, as $NAME
  mount -t tmpfs [-o size=SIZE,huge=HUGE] tmpfs DIR
                               mount a tmpfs (size: bytes or N% of RAM; default 50%)
  mount -o remount,size=SIZE DIR  resize a tmpfs
  umount DIR                   unmount a tmpfs, freeing its files
  rm FILE                      unlink a file (tmpfs or disk) of the simulated machine
  snapshot FILE                the cgroup tree and memory state into a new JSON file
                               of the host, for `memcgsim import` (docs/NODES.md)
  help [WORKLOAD]              this text, or what a workload does and its arguments
  clear                        clear the terminal (interactive shell only)
Blocks (scripts only; they nest, each closed by its own end):
  repeat N ... end             the lines between, N times, $i counting from 0
  if EXPR ... [else ...] end   the lines if EXPR holds (any expect form), else the others
  every INTERVAL for DURATION ... end
                               the lines every INTERVAL of virtual time, for DURATION
  every INTERVAL until NAME ... end
                               the lines every INTERVAL, until the task NAME ends
  break                        leave the innermost repeat or every at once
Values: 4096, 30M, -1, max, FILE, FILE:KEY, @NAME, $NAME, $now (virtual time, ns)
";

fn arity(cmd: &str, args: &[Word], min: usize, max: usize, usage: &str) -> Result<(), String> {
    if args.len() < min || args.len() > max {
        Err(format!("usage: {cmd} {usage}"))
    } else {
        Ok(())
    }
}

/// `mount -t tmpfs [-o OPTIONS] SOURCE DIR` or `mount -o remount[,OPTIONS] [SOURCE] DIR`.
fn parse_mount(args: &[Word]) -> Result<Command, String> {
    const USAGE: &str =
        "usage: mount -t tmpfs [-o size=SIZE] tmpfs DIR | mount -o remount,size=SIZE DIR";
    let mut fstype = None;
    let mut opts = String::new();
    let mut pos = Vec::new();
    let mut it = args.iter().map(|w| w.text.as_str());
    while let Some(a) = it.next() {
        match a {
            "-t" => fstype = Some(it.next().ok_or(USAGE)?),
            "-o" => {
                let o = it.next().ok_or(USAGE)?;
                if !opts.is_empty() {
                    opts.push(',');
                }
                opts.push_str(o);
            }
            _ if a.starts_with('-') => return Err(format!("mount: option '{a}' is not modelled")),
            _ => pos.push(a),
        }
    }
    let parsed =
        memcgsim_model::shmem::parse_tmpfs_options(&opts).map_err(|e| format!("mount: {e}"))?;
    let remount = parsed.remount;
    if let Some(t) = fstype.filter(|&t| t != "tmpfs") {
        return Err(format!("mount: only tmpfs can be mounted, not '{t}'"));
    }
    let dir = match (remount, fstype, pos.as_slice()) {
        (true, _, [dir]) | (true, _, [_, dir]) | (false, Some(_), [_, dir]) => dir.to_string(),
        _ => return Err(USAGE.into()),
    };
    if !memcgsim_model::shmem::valid_mount_dir(&dir) {
        return Err(format!(
            "mount: '{dir}' is not an absolute path without '.', '..' or a trailing '/'"
        ));
    }
    Ok(Command::Mount { dir, opts: parsed })
}

/// Parse a line of text. `Ok(None)` for a blank or comment-only line.
pub fn parse_line(line: &str) -> Result<Option<Command>, String> {
    let words = tokenize(line).map_err(|e| e.0)?;
    parse_words(&words)
}

/// Parse the words of a line. `Ok(None)` for no words.
pub fn parse_words(words: &[Word]) -> Result<Option<Command>, String> {
    let Some((head, args)) = words.split_first() else {
        return Ok(None);
    };
    let cmd = head.text.as_str();
    let text = |i: usize| args[i].text.clone();
    let c = match cmd {
        "machine" => {
            let mut kv = Vec::with_capacity(args.len());
            for w in args {
                match w.text.split_once('=') {
                    Some((k, v)) if !k.is_empty() => kv.push((k.to_string(), v.to_string())),
                    _ => return Err(format!("machine: expected KEY=VALUE, got '{}'", w.text)),
                }
            }
            Command::Machine(kv)
        }
        "mkdir" => {
            arity(cmd, args, 1, 1, "PATH")?;
            Command::Mkdir(text(0))
        }
        "rmdir" => {
            arity(cmd, args, 1, 1, "PATH")?;
            Command::Rmdir(text(0))
        }
        "cd" => {
            arity(cmd, args, 0, 1, "[PATH]")?;
            Command::Cd(if args.is_empty() { "/".into() } else { text(0) })
        }
        "ls" => {
            arity(cmd, args, 0, 1, "[PATH]")?;
            Command::Ls(args.first().map(|w| w.text.clone()))
        }
        "pwd" => {
            arity(cmd, args, 0, 0, "")?;
            Command::Pwd
        }
        "help" => {
            arity(cmd, args, 0, 1, "[WORKLOAD]")?;
            Command::Help(args.first().map(|w| w.text.clone()))
        }
        "clear" => {
            arity(cmd, args, 0, 0, "")?;
            Command::Clear
        }
        "echo" => parse_echo(args)?,
        "cat" => {
            arity(cmd, args, 1, usize::MAX, "FILE|@NAME...")?;
            let targets = args
                .iter()
                .map(|w| Target::parse(&w.text))
                .collect::<Result<Vec<_>, _>>()?;
            Command::Cat(targets)
        }
        "open" => {
            arity(cmd, args, 2, 2, "NAME FILE")?;
            let name = args[0].text.trim_start_matches('@').to_string();
            if name.is_empty() {
                return Err("open: empty fd name".into());
            }
            Command::Open {
                name,
                path: text(1),
            }
        }
        "close" => {
            arity(cmd, args, 1, 1, "NAME")?;
            let name = args[0].text.trim_start_matches('@').to_string();
            if name.is_empty() {
                return Err("close: empty fd name".into());
            }
            Command::Close(name)
        }
        "run" => Command::Run(parse_run(args)?),
        "poll" => {
            arity(cmd, args, 2, 2, "@NAME TIMEOUT")?;
            let name = args[0].text.trim_start_matches('@').to_string();
            if name.is_empty() {
                return Err("poll: empty fd name".into());
            }
            Command::Poll {
                name,
                timeout_ns: units::parse_duration_ns(&args[1].text)?,
            }
        }
        "sleep" => {
            arity(cmd, args, 1, 1, "DURATION")?;
            Command::Sleep(units::parse_duration_ns(&args[0].text)?)
        }
        "kill" => {
            arity(cmd, args, 1, 1, "NAME")?;
            Command::Kill(text(0))
        }
        "wait" => {
            arity(cmd, args, 1, 1, "NAME")?;
            Command::Wait(text(0))
        }
        "expect" => {
            let parts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
            let (expr, text) = parse_expect(&parts)?;
            Command::Expect { expr, text }
        }
        "let" => parse_let(args)?,
        "mount" => parse_mount(args)?,
        "umount" => {
            arity(cmd, args, 1, 1, "DIR")?;
            let dir = text(0);
            if !memcgsim_model::shmem::valid_mount_dir(&dir) {
                return Err(format!("umount: '{dir}' is not an absolute path"));
            }
            Command::Umount(dir)
        }
        "rm" => {
            arity(cmd, args, 1, 1, "FILE")?;
            Command::Rm(text(0))
        }
        "snapshot" => {
            arity(cmd, args, 1, 1, "FILE")?;
            Command::Snapshot(text(0))
        }
        "repeat" | "end" | "if" | "else" | "every" | "break" => {
            return Err(format!(
                "'{cmd}' works only in a script file, where blocks (repeat, if, every ... end) \
                 and break are read whole before they run; the shell takes one line at a time"
            ))
        }
        _ => return Err(format!("unknown command '{cmd}' (try 'help')")),
    };
    Ok(Some(c))
}

/// `echo` words, with at most one redirection (`>`/`>>` standing alone, or glued to the
/// words around it as in `echo 30M>memory.max`). Quoted `>` is text.
fn parse_echo(args: &[Word]) -> Result<Command, String> {
    let mut text_words: Vec<String> = Vec::new();
    let mut target: Option<Target> = None;
    let mut redirected = false;
    let mut want_target = false;
    for w in args {
        let pos = if w.quoted { None } else { w.text.find('>') };
        if want_target {
            if pos.is_some() {
                return Err("echo: syntax error near '>'".into());
            }
            target = Some(Target::parse(&w.text)?);
            want_target = false;
            continue;
        }
        let Some(pos) = pos else {
            text_words.push(w.text.clone());
            continue;
        };
        if redirected {
            return Err("echo: only one redirection is allowed".into());
        }
        redirected = true;
        let (before, rest) = w.text.split_at(pos);
        if !before.is_empty() {
            text_words.push(before.to_string());
        }
        // `rest` starts with the ASCII '>', so slicing one byte off is safe.
        let rest = rest.strip_prefix(">>").unwrap_or(&rest[1..]);
        if rest.contains('>') {
            return Err("echo: syntax error near '>'".into());
        }
        if rest.is_empty() {
            want_target = true;
        } else {
            target = Some(Target::parse(rest)?);
        }
    }
    if want_target {
        return Err("echo: missing file after '>'".into());
    }
    Ok(Command::Echo {
        text: text_words.join(" "),
        target,
    })
}

/// `let NAME = VALUE` or `let NAME = $(( VALUE OP VALUE ... ))`.
fn parse_let(args: &[Word]) -> Result<Command, String> {
    const USAGE: &str = "usage: let NAME = VALUE | $(( ... ))";
    if args.len() < 3 || args[1].text != "=" {
        return Err(USAGE.into());
    }
    let name = args[0].text.clone();
    if name == NOW {
        return Err("now is read-only: $now is the virtual time in nanoseconds".into());
    }
    if !is_var_name(&name) {
        return Err(format!(
            "let: '{name}' is not a variable name (letters, digits and _, not starting with a digit)"
        ));
    }
    let rest: Vec<&str> = args[2..].iter().map(|w| w.text.as_str()).collect();
    let rest = rest.join(" ");
    let terms = if rest.starts_with("$((") {
        match parse_arith(&rest)?.as_slice() {
            [Segment::Arith(terms)] => terms.clone(),
            _ => return Err(format!("let: expected one $(( ... )), got '{rest}'")),
        }
    } else if args.len() == 3 {
        vec![('+', parse_value(&rest)?)]
    } else {
        return Err(USAGE.into());
    };
    Ok(Command::Let { name, terms })
}

/// The largest count of a `repeat`.
pub const MAX_REPEAT: u64 = 100_000;
/// The most lines a script's `repeat` blocks may make it run: each plain line and each `if`,
/// `every` and `break` counts once, times the counts of the repeats around it, summed.
pub const MAX_EXPANDED_LINES: usize = 1_000_000;
/// How deep blocks may nest: a block inside 16 others is a script error.
pub const MAX_DEPTH: usize = 16;
/// The most ticks an `every INTERVAL for DURATION` may have (DURATION / INTERVAL).
pub const MAX_TICKS: u64 = 1_000_000;

/// The words that open, divide or close blocks when they start a line unquoted.
pub const BLOCK_WORDS: &[&str] = &["repeat", "if", "else", "every", "break", "end"];

/// One plain line of a script file: its text and the line of the file it came from
/// (1-based). [`expand_script`] gives them with `$i` already replaced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptLine {
    /// The line of the file, 1-based.
    pub line: usize,
    /// The text of the line.
    pub text: String,
}

/// The condition of an `if`: an `expect` expression and its text as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond {
    /// The expression, parsed as `expect` parses it.
    pub expr: Expr,
    /// The expression as written (words joined by one space).
    pub text: String,
}

/// When an `every` loop ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EveryEnd {
    /// `for DURATION`, in nanoseconds: at the loop's start plus DURATION.
    For(u64),
    /// `until NAME`: when the task NAME ends (or holds, if it was started with `--hold`).
    Until(String),
}

/// The header of an `every` loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Every {
    /// INTERVAL, in nanoseconds (more than 0).
    pub interval_ns: u64,
    /// `for DURATION` or `until NAME`.
    pub end: EveryEnd,
}

/// A statement of a script file: a plain line, or a block holding statements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stmt {
    /// A plain line (a command, a blank line or a comment), parsed when it runs, after `$i`
    /// is replaced by the iteration of the innermost `repeat` around it.
    Line(ScriptLine),
    /// `repeat N` ... `end`: the body N times, `$i` counting from 0.
    Repeat {
        /// The line of `repeat`.
        line: usize,
        /// N, 0 to [`MAX_REPEAT`].
        count: u64,
        /// The statements between `repeat` and `end`.
        body: Vec<Stmt>,
    },
    /// `if EXPR` ... [`else` ...] `end`.
    If {
        /// The line of `if`.
        line: usize,
        /// The whole `if` line as written, parsed again after `$i` is replaced inside a
        /// `repeat`.
        header: String,
        /// The condition, as parsed before the script runs (with `$i` as 0 inside a repeat).
        cond: Cond,
        /// The statements run when the condition holds.
        then: Vec<Stmt>,
        /// The statements after `else`, run when it does not (empty without `else`).
        otherwise: Vec<Stmt>,
    },
    /// `every INTERVAL for DURATION` or `every INTERVAL until NAME` ... `end`.
    Every {
        /// The line of `every`.
        line: usize,
        /// The whole `every` line as written, parsed again after `$i` is replaced inside a
        /// `repeat`.
        header: String,
        /// The loop's interval and end, as parsed before the script runs (with `$i` as 0
        /// inside a repeat).
        every: Every,
        /// The statements run at each tick.
        body: Vec<Stmt>,
    },
    /// `break`: ends the innermost `repeat` or `every` around it.
    Break {
        /// The line of `break`.
        line: usize,
    },
}

/// The first word of a line if it is an unquoted block word ([`BLOCK_WORDS`]), with the
/// remaining words. A line that cannot be tokenized is no block line (it fails when it runs).
fn block_word(line: &str) -> Option<(&'static str, Vec<Word>)> {
    let words = tokenize(line).ok()?;
    let (first, rest) = words.split_first()?;
    if first.quoted {
        return None;
    }
    let w = BLOCK_WORDS.iter().find(|w| first.text == **w)?;
    Some((w, rest.to_vec()))
}

/// Replace `$i` (not followed by a letter, digit or `_`) with `n`.
pub fn substitute_i(text: &str, n: u64) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(pos) = rest.find("$i") {
        let after = &rest[pos + 2..];
        let ident = after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..pos]);
        if ident {
            out.push_str("$i");
        } else {
            out.push_str(&n.to_string());
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Whether `text` holds a `$i` that [`substitute_i`] replaces.
pub fn mentions_i(text: &str) -> bool {
    text.contains("$i") && substitute_i(text, 0) != text
}

/// `repeat N`: the count.
fn parse_repeat(args: &[Word]) -> Result<u64, String> {
    let [count] = args else {
        return Err("usage: repeat N (then the lines to repeat, then end)".into());
    };
    parse_int(&count.text)
        .ok()
        .and_then(|c| u64::try_from(c).ok())
        .filter(|&c| c <= MAX_REPEAT)
        .ok_or_else(|| {
            format!(
                "repeat: '{}' is not a count from 0 to {MAX_REPEAT}",
                count.text
            )
        })
}

/// The words after `if`: any form `expect` takes.
fn parse_if(args: &[Word]) -> Result<Cond, String> {
    let parts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let (expr, text) = parse_condition("if", &parts)?;
    Ok(Cond { expr, text })
}

/// The words after `every`: `INTERVAL for DURATION` or `INTERVAL until NAME`.
fn parse_every(args: &[Word]) -> Result<Every, String> {
    const USAGE: &str = "usage: every INTERVAL for DURATION | every INTERVAL until NAME";
    let [interval, kind, last] = args else {
        return Err(USAGE.into());
    };
    let interval_ns =
        units::parse_duration_ns(&interval.text).map_err(|e| format!("every: INTERVAL: {e}"))?;
    if interval_ns == 0 {
        return Err(format!(
            "every: INTERVAL must be more than 0, got '{}'",
            interval.text
        ));
    }
    let end = match kind.text.as_str() {
        "for" if !kind.quoted => {
            let d = units::parse_duration_ns(&last.text)
                .map_err(|e| format!("every: DURATION: {e}"))?;
            if d / interval_ns > MAX_TICKS {
                return Err(format!(
                    "every: {} for {} is {} ticks, more than {MAX_TICKS}",
                    interval.text,
                    last.text,
                    d / interval_ns
                ));
            }
            EveryEnd::For(d)
        }
        "until" if !kind.quoted => {
            if last.text.is_empty() {
                return Err("every: empty task name".into());
            }
            EveryEnd::Until(last.text.clone())
        }
        _ => return Err(USAGE.into()),
    };
    Ok(Every { interval_ns, end })
}

/// Parse a whole `if EXPR` line (as [`Stmt::If`] keeps it in `header`), for instance after
/// `$i` was replaced in it.
pub fn parse_if_line(text: &str) -> Result<Cond, String> {
    match block_word(text) {
        Some(("if", args)) => parse_if(&args),
        _ => Err("usage: if EXPR".into()),
    }
}

/// Parse a whole `every ...` line (as [`Stmt::Every`] keeps it in `header`), for instance
/// after `$i` was replaced in it.
pub fn parse_every_line(text: &str) -> Result<Every, String> {
    match block_word(text) {
        Some(("every", args)) => parse_every(&args),
        _ => Err("usage: every INTERVAL for DURATION | every INTERVAL until NAME".into()),
    }
}

/// A block being read: its kind and header, where it started, the statements read so far.
struct OpenBlock {
    kind: OpenKind,
    line: usize,
    body: Vec<Stmt>,
}

enum OpenKind {
    Repeat(u64),
    If {
        header: String,
        cond: Cond,
        /// The then-branch and the line of `else`, once `else` has been read.
        then: Option<(Vec<Stmt>, usize)>,
    },
    Every {
        header: String,
        every: Every,
    },
}

impl OpenKind {
    fn name(&self) -> &'static str {
        match self {
            OpenKind::Repeat(_) => "repeat",
            OpenKind::If { .. } => "if",
            OpenKind::Every { .. } => "every",
        }
    }

    fn is_loop(&self) -> bool {
        !matches!(self, OpenKind::If { .. })
    }
}

/// Parse a script file into statements: plain lines and the blocks `repeat N`, `if EXPR`
/// (with `else`), `every INTERVAL for DURATION` and `every INTERVAL until NAME`, each closed by
/// `end`, nesting up to [`MAX_DEPTH`] deep, and `break`. Block syntax, the headers of `if`
/// and `every`, and the [`MAX_EXPANDED_LINES`] bound of repeats are checked here, before
/// anything runs; plain lines are parsed when they run. Err: (line, message).
pub fn parse_script(text: &str) -> Result<Vec<Stmt>, (usize, String)> {
    let mut top: Vec<Stmt> = Vec::new();
    let mut open: Vec<OpenBlock> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let Some((word, args)) = block_word(raw) else {
            let line = Stmt::Line(ScriptLine {
                line: n,
                text: raw.to_string(),
            });
            open.last_mut().map_or(&mut top, |b| &mut b.body).push(line);
            continue;
        };
        // Inside a repeat, a header is checked as the first iteration will read it.
        let in_repeat = open.iter().any(|b| matches!(b.kind, OpenKind::Repeat(_)));
        let header_text = if in_repeat {
            substitute_i(raw, 0)
        } else {
            raw.to_string()
        };
        let checked_args = || -> Vec<Word> {
            if in_repeat {
                block_word(&header_text).map(|(_, a)| a).unwrap_or_default()
            } else {
                args.clone()
            }
        };
        let kind = match word {
            "repeat" => OpenKind::Repeat(parse_repeat(&args).map_err(|e| (n, e))?),
            "if" => OpenKind::If {
                header: raw.to_string(),
                cond: parse_if(&checked_args()).map_err(|e| (n, e))?,
                then: None,
            },
            "every" => OpenKind::Every {
                header: raw.to_string(),
                every: parse_every(&checked_args()).map_err(|e| (n, e))?,
            },
            "else" => {
                if !args.is_empty() {
                    return Err((
                        n,
                        "usage: else (for an else-if, put an if inside the else)".into(),
                    ));
                }
                match open.last_mut() {
                    Some(OpenBlock {
                        kind:
                            OpenKind::If {
                                then: then @ None, ..
                            },
                        body,
                        ..
                    }) => *then = Some((std::mem::take(body), n)),
                    Some(OpenBlock {
                        kind:
                            OpenKind::If {
                                then: Some((_, at)),
                                ..
                            },
                        line,
                        ..
                    }) => {
                        return Err((
                            n,
                            format!(
                                "else without if: the if of line {line} has its else on line {at}"
                            ),
                        ))
                    }
                    _ => return Err((n, "else without if".into())),
                }
                continue;
            }
            "break" => {
                if !args.is_empty() {
                    return Err((n, "usage: break".into()));
                }
                if !open.iter().any(|b| b.kind.is_loop()) {
                    return Err((
                        n,
                        "break outside a loop (it ends the innermost repeat or every)".into(),
                    ));
                }
                let b = open.last_mut().expect("inside a loop");
                b.body.push(Stmt::Break { line: n });
                continue;
            }
            _ => {
                // "end"
                if !args.is_empty() {
                    return Err((n, "usage: end".into()));
                }
                let Some(b) = open.pop() else {
                    return Err((n, "end without block".into()));
                };
                let stmt = match b.kind {
                    OpenKind::Repeat(count) => Stmt::Repeat {
                        line: b.line,
                        count,
                        body: b.body,
                    },
                    OpenKind::If { header, cond, then } => {
                        let (then, otherwise) = match then {
                            Some((then, _)) => (then, b.body),
                            None => (b.body, Vec::new()),
                        };
                        Stmt::If {
                            line: b.line,
                            header,
                            cond,
                            then,
                            otherwise,
                        }
                    }
                    OpenKind::Every { header, every } => Stmt::Every {
                        line: b.line,
                        header,
                        every,
                        body: b.body,
                    },
                };
                open.last_mut().map_or(&mut top, |b| &mut b.body).push(stmt);
                continue;
            }
        };
        if open.len() >= MAX_DEPTH {
            return Err((
                n,
                format!("{}: blocks nest at most {MAX_DEPTH} deep", kind.name()),
            ));
        }
        open.push(OpenBlock {
            kind,
            line: n,
            body: Vec::new(),
        });
    }
    if let Some(b) = open.last() {
        return Err((b.line, format!("{} without end", b.kind.name())));
    }
    let mut total = 0;
    check_expansion(&top, &mut total)?;
    Ok(top)
}

/// How many lines `stmts` run at most, counting each plain line and each `if`, `every` and
/// `break` once (both branches of an `if`, one tick of an `every`) times the counts of the
/// repeats around it. Saturates.
fn expanded_len(stmts: &[Stmt]) -> u64 {
    stmts
        .iter()
        .map(|s| match s {
            Stmt::Line(_) | Stmt::Break { .. } => 1,
            Stmt::Repeat { count, body, .. } => count.saturating_mul(expanded_len(body)),
            Stmt::If {
                then, otherwise, ..
            } => 1u64
                .saturating_add(expanded_len(then))
                .saturating_add(expanded_len(otherwise)),
            Stmt::Every { body, .. } => 1u64.saturating_add(expanded_len(body)),
        })
        .fold(0u64, u64::saturating_add)
}

/// Add up [`expanded_len`] in the order of the file, and fail on the first outermost repeat
/// that takes the total past [`MAX_EXPANDED_LINES`].
fn check_expansion(stmts: &[Stmt], total: &mut u64) -> Result<(), (usize, String)> {
    for s in stmts {
        match s {
            Stmt::Line(_) | Stmt::Break { .. } => *total = total.saturating_add(1),
            Stmt::Repeat { line, .. } => {
                *total = total.saturating_add(expanded_len(std::slice::from_ref(s)));
                if *total > MAX_EXPANDED_LINES as u64 {
                    return Err((
                        *line,
                        format!(
                            "repeat: the script expands to more than {MAX_EXPANDED_LINES} lines"
                        ),
                    ));
                }
            }
            Stmt::If {
                then, otherwise, ..
            } => {
                *total = total.saturating_add(1);
                check_expansion(then, total)?;
                check_expansion(otherwise, total)?;
            }
            Stmt::Every { body, .. } => {
                *total = total.saturating_add(1);
                check_expansion(body, total)?;
            }
        }
    }
    Ok(())
}

/// Whether a line uses `$now` (which the oracle's translation does not know).
fn mentions_now(text: &str) -> bool {
    tokenize(text).is_ok_and(|words| {
        words.iter().any(|w| {
            split_vars(&w.text)
                .iter()
                .any(|p| matches!(p, Err(n) if n == NOW))
        })
    })
}

/// The first statement the oracle cannot translate: `if`, `every`, `break`, or a line
/// using `$now`.
fn untranslatable(stmts: &[Stmt]) -> Option<(usize, String)> {
    stmts.iter().find_map(|s| match s {
        Stmt::Line(l) => mentions_now(&l.text).then(|| {
            (
                l.line,
                "$now is not translated for the oracle yet".to_string(),
            )
        }),
        Stmt::Repeat { body, .. } => untranslatable(body),
        Stmt::If { line, .. } | Stmt::Every { line, .. } => Some((
            *line,
            "if/every blocks are not translated for the oracle yet".to_string(),
        )),
        Stmt::Break { line } => Some((
            *line,
            "break is not translated for the oracle yet".to_string(),
        )),
    })
}

fn expand_into(stmts: &[Stmt], i: Option<u64>, out: &mut Vec<ScriptLine>) {
    for s in stmts {
        match s {
            Stmt::Line(l) => out.push(ScriptLine {
                line: l.line,
                text: match i {
                    Some(k) => substitute_i(&l.text, k),
                    None => l.text.clone(),
                },
            }),
            Stmt::Repeat { count, body, .. } => {
                for k in 0..*count {
                    expand_into(body, Some(k), out);
                }
            }
            // Refused by `untranslatable` first.
            Stmt::If { .. } | Stmt::Every { .. } | Stmt::Break { .. } => {}
        }
    }
}

/// The plain lines a script runs when it has only `repeat` blocks (nested or not): each
/// repeat's lines N times, with `$i` replaced by the innermost repeat's iteration, 0 to
/// N-1. This is what the oracle translates for a real kernel: `if`, `every`, `break` and
/// `$now` depend on the run and are refused (`if/every blocks are not translated for the
/// oracle yet`), as are the script errors of [`parse_script`]. Err: (line, message).
pub fn expand_script(text: &str) -> Result<Vec<ScriptLine>, (usize, String)> {
    let script = parse_script(text)?;
    if let Some(e) = untranslatable(&script) {
        return Err(e);
    }
    let mut out = Vec::new();
    expand_into(&script, None, &mut out);
    Ok(out)
}

fn parse_run(args: &[Word]) -> Result<RunSpec, String> {
    const USAGE: &str =
        "usage: run [--bg] [--name NAME] [--oom-score-adj N] CGROUP WORKLOAD ARGS...";
    let mut background = false;
    let mut name = None;
    let mut oom_score_adj = 0i32;
    let mut seen = std::collections::BTreeSet::new();
    let mut i = 0;
    while i < args.len() && args[i].text.starts_with("--") && !args[i].quoted {
        let opt = args[i].text.as_str();
        let (key, inline) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (opt, None),
        };
        let value = |i: &mut usize| -> Result<String, String> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            *i += 1;
            args.get(*i)
                .map(|w| w.text.clone())
                .ok_or_else(|| format!("run: {key} needs a value"))
        };
        if !seen.insert(key) {
            return Err(format!("run: {key} given twice; {USAGE}"));
        }
        match key {
            "--bg" if inline.is_none() => background = true,
            "--name" => {
                let v = value(&mut i)?;
                if v.is_empty() {
                    return Err("run: empty task name".into());
                }
                name = Some(v);
            }
            "--oom-score-adj" => {
                let v = value(&mut i)?;
                let n: i32 = v
                    .parse()
                    .map_err(|_| format!("run: bad --oom-score-adj '{v}'"))?;
                if !(-1000..=1000).contains(&n) {
                    return Err(format!(
                        "run: --oom-score-adj must be between -1000 and 1000, got {n}"
                    ));
                }
                oom_score_adj = n;
            }
            _ => return Err(format!("run: unknown option '{opt}'; {USAGE}")),
        }
        i += 1;
    }
    let rest = &args[i.min(args.len())..];
    if rest.len() < 2 {
        return Err(USAGE.into());
    }
    Ok(RunSpec {
        background,
        name,
        oom_score_adj,
        cgroup: rest[0].text.clone(),
        workload: rest[1].text.clone(),
        args: rest[2..].iter().map(|w| w.text.clone()).collect(),
    })
}

/// Parse the words after `expect`. Returns the expression and its text as written (words
/// joined by one space) for failure messages.
pub fn parse_expect(words: &[&str]) -> Result<(Expr, String), String> {
    parse_condition("expect", words)
}

/// Parse the words of a condition after `cmd` (`expect` or `if`, which take the same forms
/// and name themselves in messages). Returns the expression and its text as written (words
/// joined by one space).
pub fn parse_condition(cmd: &str, words: &[&str]) -> Result<(Expr, String), String> {
    let usage = || {
        if cmd == "expect" {
            "usage: expect A OP B | close(A, B, PCT) | exit N | killed | errno NAME".to_string()
        } else {
            format!(
                "usage: {cmd} EXPR, where EXPR is as in expect: A OP B | close(A, B, PCT) | \
                 exit N | killed | errno NAME"
            )
        }
    };
    let text = words.join(" ");
    let Some(&first) = words.first() else {
        return Err(usage());
    };
    if first == "close" || first.starts_with("close(") {
        return Ok((parse_close(cmd, &text)?, text));
    }
    let expr = match (first, words.len()) {
        ("killed", 1) => Expr::Killed,
        ("poll", 2) => Expr::Poll(PollWant::from_name(words[1]).ok_or_else(|| {
            format!(
                "{cmd} poll: expected event, timeout or error, got '{}'",
                words[1]
            )
        })?),
        ("exit", 2) => {
            let n: i32 = words[1]
                .parse()
                .map_err(|_| format!("{cmd} exit: bad status '{}'", words[1]))?;
            Expr::Exit(n)
        }
        ("errno", 2) => {
            if words[1] == "0" {
                Expr::Errno(None)
            } else {
                let e = Errno::from_name(words[1])
                    .ok_or_else(|| format!("{cmd} errno: unknown errno '{}'", words[1]))?;
                Expr::Errno(Some(e))
            }
        }
        // `exit 1 2` is a malformed exit, not a comparison with the operator `1`.
        (_, 3) if CmpOp::parse(words[1]).is_some() || !CONDITION_WORDS.contains(&first) => {
            let op = CmpOp::parse(words[1]).ok_or_else(|| {
                format!(
                    "{cmd}: unknown operator '{}' (use == != < <= > >=)",
                    words[1]
                )
            })?;
            Expr::Cmp(parse_value(words[0])?, op, parse_value(words[2])?)
        }
        _ => return Err(format!("{}; {}", malformed(cmd, words), usage())),
    };
    Ok((expr, text))
}

/// The words that start the conditions other than comparisons.
const CONDITION_WORDS: [&str; 4] = ["exit", "errno", "killed", "poll"];

/// The comparison operators, two-character ones first (so that `<=` is not read as `<`).
const CMP_OPS: [&str; 7] = ["==", "!=", "<=", ">=", "<", ">", "="];

/// What is wrong with the words of a condition that has none of its forms (at least one
/// word): what it lacks, or how to write what it seems to mean.
fn malformed(cmd: &str, words: &[&str]) -> String {
    let is_op = |w: &str| CmpOp::parse(w).is_some();
    let text = words.join(" ");
    // An operator glued to an operand: `1<=2`, `1 <=2`, `a==b`.
    if !words.iter().any(|w| is_op(w)) {
        let at = CMP_OPS
            .iter()
            .filter_map(|op| text.find(op).map(|i| (i, *op)))
            .min_by_key(|&(i, op)| (i, std::cmp::Reverse(op.len())));
        if let Some((i, op)) = at {
            let (left, right) = (text[..i].trim(), text[i + op.len()..].trim());
            if !left.is_empty() && !right.is_empty() {
                let op = if op == "=" { "==" } else { op };
                return format!(
                    "{cmd}: write the comparison with spaces around the operator: \
                     {cmd} {} {op} {}",
                    clip(left),
                    clip(right)
                );
            }
        }
    }
    match words {
        ["exit"] => format!("{cmd} exit: which status? Write {cmd} exit N"),
        ["exit", ..] => format!("{cmd} exit takes one status, N"),
        ["killed", ..] => format!("{cmd} killed takes nothing after it"),
        ["errno"] => format!("{cmd} errno: which errno? Write {cmd} errno NAME, or 0 for none"),
        ["errno", ..] => format!("{cmd} errno takes one errno NAME, or 0"),
        ["poll", ..] => format!("{cmd} poll takes one of event, timeout or error"),
        [a, op] if is_op(op) => format!("{cmd} {} {op}: no value after '{op}'", clip(a)),
        [op, b] if is_op(op) => format!("{cmd} {op} {}: no value before '{op}'", clip(b)),
        [op] if is_op(op) => format!("{cmd} {op}: no values around '{op}'"),
        [a, b] => format!(
            "{cmd}: no operator between '{}' and '{}' (use == != < <= > >=)",
            clip(a),
            clip(b)
        ),
        [_, op, _, ..] if is_op(op) => format!(
            "{cmd}: a comparison is three words, A OP B, and this has {}",
            words.len()
        ),
        _ => format!("{cmd}: '{}' is no condition", clip(&text)),
    }
}

/// Parse `close(A, B, PCT)`, spaces allowed anywhere around the punctuation.
fn parse_close(cmd: &str, text: &str) -> Result<Expr, String> {
    let usage = |why: &str| format!("usage: {cmd} close(A, B, PCT) ({why})");
    let rest = text
        .strip_prefix("close")
        .ok_or_else(|| usage("no close"))?
        .trim_start();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.trim_end().strip_suffix(')'))
        .ok_or_else(|| usage("the values go between parentheses"))?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.len() != 3 {
        return Err(usage(&format!(
            "three values separated by commas, got {}",
            parts.len()
        )));
    }
    if parts.iter().any(|p| p.is_empty()) {
        return Err(usage("an empty value"));
    }
    if let Some(p) = parts.iter().find(|p| p.contains(char::is_whitespace)) {
        return Err(usage(&format!("a comma missing in '{}'", clip(p))));
    }
    let a = parse_value(parts[0])?;
    let b = parse_value(parts[1])?;
    let pct =
        parse_int(parts[2]).map_err(|_| format!("{cmd} close: bad percentage '{}'", parts[2]))?;
    if pct < 0 {
        return Err(format!("{cmd} close: negative percentage '{}'", parts[2]));
    }
    Ok(Expr::Close(a, b, pct))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Command {
        parse_line(line).unwrap().unwrap()
    }

    fn err(line: &str) -> String {
        parse_line(line).unwrap_err()
    }

    fn expr(line: &str) -> Expr {
        match p(line) {
            Command::Expect { expr, .. } => expr,
            c => panic!("not an expect: {c:?}"),
        }
    }

    #[test]
    fn blank_and_comment_lines() {
        assert_eq!(parse_line("").unwrap(), None);
        assert_eq!(parse_line("   ").unwrap(), None);
        assert_eq!(parse_line("# comment").unwrap(), None);
    }

    #[test]
    fn simple_commands() {
        assert_eq!(p("mkdir /A"), Command::Mkdir("/A".into()));
        assert_eq!(p("rmdir A/B # gone"), Command::Rmdir("A/B".into()));
        assert_eq!(p("cd"), Command::Cd("/".into()));
        assert_eq!(p("cd .."), Command::Cd("..".into()));
        assert_eq!(p("ls"), Command::Ls(None));
        assert_eq!(p("ls /proc"), Command::Ls(Some("/proc".into())));
        assert_eq!(p("pwd"), Command::Pwd);
        assert_eq!(p("help"), Command::Help(None));
        assert_eq!(p("help usemem"), Command::Help(Some("usemem".into())));
        assert!(err("help a b").contains("usage: help [WORKLOAD]"));
        assert_eq!(p("clear"), Command::Clear);
        assert_eq!(p("sleep 500ms"), Command::Sleep(500_000_000));
        assert_eq!(p("sleep 2"), Command::Sleep(2_000_000_000));
        assert_eq!(p("kill hog"), Command::Kill("hog".into()));
        assert_eq!(p("wait hog"), Command::Wait("hog".into()));
        assert_eq!(
            p("open peak /A/memory.peak"),
            Command::Open {
                name: "peak".into(),
                path: "/A/memory.peak".into()
            }
        );
        assert_eq!(p("close peak"), Command::Close("peak".into()));
        assert_eq!(
            p("cat memory.current"),
            Command::Cat(vec![Target::Path("memory.current".into())])
        );
        assert_eq!(
            p("cat @peak"),
            Command::Cat(vec![Target::Fd("peak".into())])
        );
        assert_eq!(
            p("cat memory.max @peak"),
            Command::Cat(vec![
                Target::Path("memory.max".into()),
                Target::Fd("peak".into())
            ])
        );
        assert!(err("cat").contains("usage: cat FILE|@NAME..."));
    }

    #[test]
    fn syntax_errors() {
        assert!(err("frobnicate").contains("unknown command"));
        assert!(err("mkdir").contains("usage"));
        assert!(err("mkdir a b").contains("usage"));
        assert!(err("pwd x").contains("usage"));
        assert!(err("sleep").contains("usage"));
        assert!(err("sleep 2x").contains("bad duration"));
        assert!(err("cat").contains("usage"));
        assert!(err("cat @").contains("fd name"));
        assert!(err("echo \"open").contains("unterminated"));
        assert!(err("open x").contains("usage"));
        assert!(err("machine memory").contains("KEY=VALUE"));
        assert!(err("machine =1").contains("KEY=VALUE"));
    }

    #[test]
    fn machine_words() {
        assert_eq!(
            p("machine memory=2G swap=0 cgroup=v1"),
            Command::Machine(vec![
                ("memory".into(), "2G".into()),
                ("swap".into(), "0".into()),
                ("cgroup".into(), "v1".into()),
            ])
        );
        assert_eq!(p("machine"), Command::Machine(vec![]));
    }

    #[test]
    fn echo_forms() {
        let echo = |t: &str, target: Option<Target>| Command::Echo {
            text: t.into(),
            target,
        };
        let path = |s: &str| Some(Target::Path(s.into()));
        assert_eq!(p("echo hello  world"), echo("hello world", None));
        assert_eq!(p("echo"), echo("", None));
        assert_eq!(
            p("echo 30M > /A/memory.max"),
            echo("30M", path("/A/memory.max"))
        );
        assert_eq!(p("echo 30M >> memory.max"), echo("30M", path("memory.max")));
        assert_eq!(p("echo 30M >memory.max"), echo("30M", path("memory.max")));
        assert_eq!(p("echo 30M>memory.max"), echo("30M", path("memory.max")));
        assert_eq!(p("echo 30M>>memory.max"), echo("30M", path("memory.max")));
        assert_eq!(p("echo 30M> memory.max"), echo("30M", path("memory.max")));
        assert_eq!(p("echo > f 1 2"), echo("1 2", path("f")));
        assert_eq!(p("echo \"1 2\" > f"), echo("1 2", path("f")));
        assert_eq!(
            p("echo \"+memory -io\" > f"),
            echo("+memory -io", path("f"))
        );
        assert_eq!(p("echo > f"), echo("", path("f")));
        assert_eq!(
            p("echo 0 > @peak"),
            echo("0", Some(Target::Fd("peak".into())))
        );
        assert_eq!(p("echo \">\" x"), echo("> x", None));
        assert_eq!(p("echo 'a>b'"), echo("a>b", None));
        assert!(err("echo 1 >").contains("missing file"));
        assert!(err("echo 1 > a > b").contains("one redirection"));
        assert!(err("echo 1 > a >> b").contains("one redirection"));
        assert!(err("echo 1 >>> a").contains("syntax"));
        assert!(err("echo 1 > @").contains("fd name"));
        assert!(err("echo 1 > > f").contains("syntax"));
        assert!(err("echo 1 >a>b").contains("syntax"));
    }

    #[test]
    fn run_forms() {
        let r = match p("run /A anon 50M --hold") {
            Command::Run(r) => r,
            c => panic!("{c:?}"),
        };
        assert!(!r.background);
        assert_eq!(r.task_name(), "anon");
        assert_eq!(r.cgroup, "/A");
        assert_eq!(r.args, vec!["50M", "--hold"]);
        assert!(r.holds());
        assert_eq!(r.oom_score_adj, 0);

        let r = match p("run --bg --name hog --oom-score-adj -1000 A/B pagecache 10M") {
            Command::Run(r) => r,
            c => panic!("{c:?}"),
        };
        assert!(r.background);
        assert_eq!(r.task_name(), "hog");
        assert_eq!(r.oom_score_adj, -1000);
        assert_eq!(r.cgroup, "A/B");
        assert_eq!(r.workload, "pagecache");
        assert!(!r.holds());

        let r = match p("run --name=x --oom-score-adj=500 /A anon 1M") {
            Command::Run(r) => r,
            c => panic!("{c:?}"),
        };
        assert_eq!(r.task_name(), "x");
        assert_eq!(r.oom_score_adj, 500);

        assert!(err("run").contains("usage"));
        assert!(err("run /A").contains("usage"));
        assert!(err("run --bg /A").contains("usage"));
        assert!(err("run --name").contains("needs a value"));
        assert!(err("run --fast /A anon").contains("unknown option"));
        assert!(err("run --oom-score-adj 1001 /A anon").contains("between"));
        assert!(err("run --name x --name x /A anon 1M").contains("--name given twice"));
        assert!(err("run --bg --bg /A anon 1M").contains("--bg given twice"));
        assert!(err("run --name=x --name y /A anon 1M").contains("--name given twice"));
        assert!(err("run --oom-score-adj x /A anon").contains("bad"));
        assert!(err("run --bg=1 /A anon").contains("unknown option"));
    }

    #[test]
    fn expect_comparisons() {
        assert_eq!(
            expr("expect /A/memory.current <= 30M"),
            Expr::Cmp(
                Value::File("/A/memory.current".into()),
                CmpOp::Le,
                Value::Int(30 << 20)
            )
        );
        assert_eq!(
            expr("expect memory.events:oom_kill == 0"),
            Expr::Cmp(
                Value::Key("memory.events".into(), "oom_kill".into()),
                CmpOp::Eq,
                Value::Int(0)
            )
        );
        assert_eq!(
            expr("expect @peak >= -1"),
            Expr::Cmp(Value::Fd("peak".into()), CmpOp::Ge, Value::Int(-1))
        );
        match p("expect /A/memory.current   <=  30M # c") {
            Command::Expect { text, .. } => assert_eq!(text, "/A/memory.current <= 30M"),
            c => panic!("{c:?}"),
        }
        assert!(err("expect").contains("usage"));
        assert!(err("expect 1 ==").contains("usage"));
        assert!(err("expect 1 = 1").contains("operator"));
        assert!(err("expect 1 == 1 == 1").contains("usage"));
        assert!(err("expect 30MB == 1").contains("bad number"));
    }

    #[test]
    fn expect_close_spans_words() {
        let want = Expr::Close(
            Value::File("/A/memory.current".into()),
            Value::Int(50 << 20),
            3,
        );
        for line in [
            "expect close(/A/memory.current,50M,3)",
            "expect close(/A/memory.current, 50M, 3)",
            "expect close( /A/memory.current , 50M , 3 )",
            "expect close (/A/memory.current, 50M, 3)",
            "expect close ( /A/memory.current ,50M, 3)",
            "expect close(/A/memory.current, 50M, 3 ) # comment",
        ] {
            assert_eq!(expr(line), want, "{line}");
        }
        assert_eq!(
            expr("expect close(memory.stat:anon, @peak, 10)"),
            Expr::Close(
                Value::Key("memory.stat".into(), "anon".into()),
                Value::Fd("peak".into()),
                10
            )
        );
        for bad in [
            "expect close",
            "expect close(",
            "expect close()",
            "expect close(a, b)",
            "expect close(a, b, 3, 4)",
            "expect close(a, b, 3",
            "expect close a, b, 3)",
            "expect close(a b, c, 3)",
            "expect close(a, , 3)",
            "expect close(a, b, x)",
            "expect close(a, b, -1)",
            "expect close(a, b, 3) extra",
        ] {
            assert!(parse_line(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn expect_outcomes() {
        assert_eq!(expr("expect exit 0"), Expr::Exit(0));
        assert_eq!(expr("expect exit -1"), Expr::Exit(-1));
        assert_eq!(expr("expect killed"), Expr::Killed);
        assert_eq!(expr("expect errno EBUSY"), Expr::Errno(Some(Errno::EBUSY)));
        assert_eq!(expr("expect errno 0"), Expr::Errno(None));
        assert!(err("expect errno EFOO").contains("unknown errno"));
        assert!(err("expect exit x").contains("bad status"));
        assert!(err("expect killed now").contains("usage"));
        assert!(err("expect exit").contains("usage"));
    }

    fn script_err(text: &str) -> (usize, String) {
        parse_script(text).unwrap_err()
    }

    fn line(n: usize, text: &str) -> Stmt {
        Stmt::Line(ScriptLine {
            line: n,
            text: text.into(),
        })
    }

    #[test]
    fn scripts_parse_into_nested_blocks() {
        let text = "repeat 2\n\
                    if /A/memory.current > 10M\n\
                    every 100ms for 2s\n\
                    break\n\
                    end\n\
                    else\n\
                    echo low\n\
                    end\n\
                    end\n\
                    every 1ms until a # comment\n\
                    \n\
                    end\n";
        let script = parse_script(text).unwrap();
        let cond = Cond {
            expr: Expr::Cmp(
                Value::File("/A/memory.current".into()),
                CmpOp::Gt,
                Value::Int(10 << 20),
            ),
            text: "/A/memory.current > 10M".into(),
        };
        assert_eq!(
            script,
            vec![
                Stmt::Repeat {
                    line: 1,
                    count: 2,
                    body: vec![Stmt::If {
                        line: 2,
                        header: "if /A/memory.current > 10M".into(),
                        cond,
                        then: vec![Stmt::Every {
                            line: 3,
                            header: "every 100ms for 2s".into(),
                            every: Every {
                                interval_ns: 100_000_000,
                                end: EveryEnd::For(2_000_000_000),
                            },
                            body: vec![Stmt::Break { line: 4 }],
                        }],
                        otherwise: vec![line(7, "echo low")],
                    }],
                },
                Stmt::Every {
                    line: 10,
                    header: "every 1ms until a # comment".into(),
                    every: Every {
                        interval_ns: 1_000_000,
                        end: EveryEnd::Until("a".into()),
                    },
                    body: vec![line(11, "")],
                },
            ]
        );
        // A quoted keyword is no block word: the line is left for the command parser.
        assert_eq!(parse_script("\"end\"\n").unwrap(), vec![line(1, "\"end\"")]);
    }

    #[test]
    fn if_takes_every_expect_form() {
        let cond = |text: &str| match &parse_script(&format!("if {text}\nend\n")).unwrap()[0] {
            Stmt::If { cond, .. } => cond.expr.clone(),
            s => panic!("{s:?}"),
        };
        assert_eq!(cond("exit 0"), Expr::Exit(0));
        assert_eq!(cond("killed"), Expr::Killed);
        assert_eq!(cond("errno EBUSY"), Expr::Errno(Some(Errno::EBUSY)));
        assert_eq!(cond("errno 0"), Expr::Errno(None));
        assert_eq!(
            cond("close( @peak , 50M , 3 )"),
            Expr::Close(Value::Fd("peak".into()), Value::Int(50 << 20), 3)
        );
        assert_eq!(
            cond("$now >= $t0"),
            Expr::Cmp(Value::Var("now".into()), CmpOp::Ge, Value::Var("t0".into()))
        );
        // Inside a repeat the header is checked with $i as 0; outside, `1$i` is no number.
        assert!(parse_script("repeat 2\nif 1$i == 10\nend\nend\n").is_ok());
        assert_eq!(
            script_err("if 1$i == 10\nend\n"),
            (1, "bad number '1$i'".into())
        );
    }

    #[test]
    fn block_errors_name_their_line() {
        for (text, n, want) in [
            ("echo\nend\n", 2, "end without block"),
            ("repeat 1\nend x\n", 2, "usage: end"),
            ("else\n", 1, "else without if"),
            ("repeat 2\nelse\nend\n", 2, "else without if"),
            (
                "if 1 == 1\nrepeat 2\nelse\nend\nend\n",
                3,
                "else without if",
            ),
            (
                "if 1 == 1\nelse\nelse\nend\n",
                3,
                "else without if: the if of line 1 has its else on line 2",
            ),
            ("if 1 == 1\nelse if 2 == 2\nend\n", 2, "usage: else"),
            ("echo\nif 1 == 1\necho\n", 2, "if without end"),
            ("repeat 2\n", 1, "repeat without end"),
            ("every 1s for 2s\n", 1, "every without end"),
            // The innermost open block is the one missing its end.
            ("repeat 2\nif 1 == 1\necho\n", 2, "if without end"),
            ("every 1s for 2s\nif 1 == 1\nend\n", 1, "every without end"),
            ("break\n", 1, "break outside a loop"),
            ("if 1 == 1\nbreak\nend\n", 2, "break outside a loop"),
            ("repeat 1\nbreak now\nend\n", 2, "usage: break"),
            ("if\nend\n", 1, "usage: if EXPR"),
            (
                "if 1 ==\nend\n",
                1,
                "if 1 ==: no value after '=='; usage: if EXPR",
            ),
            ("if 1 = 1\nend\n", 1, "if: unknown operator '='"),
            ("if exit x\nend\n", 1, "if exit: bad status 'x'"),
            ("if errno EFOO\nend\n", 1, "if errno: unknown errno 'EFOO'"),
            ("if close(1, 2)\nend\n", 1, "usage: if close(A, B, PCT)"),
            (
                "every 1s\nend\n",
                1,
                "usage: every INTERVAL for DURATION | every INTERVAL until NAME",
            ),
            (
                "every 1s during 2s\nend\n",
                1,
                "usage: every INTERVAL for DURATION | every INTERVAL until NAME",
            ),
            ("every 1s \"for\" 2s\nend\n", 1, "usage: every INTERVAL"),
            (
                "every 0 for 2s\nend\n",
                1,
                "every: INTERVAL must be more than 0",
            ),
            ("every 1x for 2s\nend\n", 1, "every: INTERVAL: bad duration"),
            ("every 1s for 2x\nend\n", 1, "every: DURATION: bad duration"),
            (
                "every 1us for 1001ms\nend\n",
                1,
                "every: 1us for 1001ms is 1001000 ticks, more than 1000000",
            ),
            (
                "repeat 2\nrepeat x\nend\nend\n",
                2,
                "repeat: 'x' is not a count",
            ),
            // Counts are fixed before the script runs: no $i there.
            (
                "repeat 2\nrepeat $i\nend\nend\n",
                2,
                "repeat: '$i' is not a count",
            ),
        ] {
            let (line, message) = script_err(text);
            assert_eq!(line, n, "{text:?}: {message}");
            assert!(message.starts_with(want), "{text:?}: {message}");
        }
        // Exactly a million ticks is allowed.
        assert!(parse_script("every 1us for 1s\nend\n").is_ok());
    }

    #[test]
    fn blocks_nest_sixteen_deep() {
        let nest = |depth: usize| {
            let kinds = ["repeat 1\n", "if 1 == 1\n", "every 1s for 1s\n"];
            let mut text = String::new();
            for d in 0..depth {
                text.push_str(kinds[d % 3]);
            }
            text.push_str("echo deep\n");
            text.push_str(&"end\n".repeat(depth));
            text
        };
        let script = parse_script(&nest(MAX_DEPTH)).unwrap();
        assert_eq!(script.len(), 1);
        assert_eq!(
            script_err(&nest(MAX_DEPTH + 1)),
            (17, "if: blocks nest at most 16 deep".into())
        );
    }

    #[test]
    fn nested_repeats_are_bounded_before_anything_runs() {
        let many = |n: usize| "echo\n".repeat(n);
        let over = "more than 1000000 lines";
        // 1000 x 1000 x 1 line: exactly the bound.
        assert!(parse_script("repeat 1000\nrepeat 1000\necho\nend\nend\n").is_ok());
        // One line more, before or after, is too many; the outer repeat is blamed.
        let (n, m) = script_err("echo\nrepeat 1000\nrepeat 1000\necho\nend\nend\n");
        assert_eq!(n, 2);
        assert!(m.contains(over), "{m}");
        // An if counts as a line, inside the repeats too: 1000 x (1 + 1000) lines.
        let (n, m) = script_err("echo\nrepeat 1000\nif 1 == 1\nrepeat 1000\necho\nend\nend\nend\n");
        assert_eq!(n, 2, "{m}");
        assert!(parse_script("repeat 999\nif 1 == 1\nrepeat 1000\necho\nend\nend\nend\n").is_ok());
        // Inside an if or every, the outermost repeat there is blamed.
        let text = format!(
            "if 1 == 1\nrepeat 2\n{}repeat 100000\n{}end\nend\nend\n",
            many(1),
            many(5)
        );
        let (n, m) = script_err(&text);
        assert_eq!(n, 2);
        assert!(m.contains(over), "{m}");
        // Counts multiply without overflowing.
        let (n, _) = script_err("repeat 100000\nrepeat 100000\nrepeat 100000\nrepeat 100000\necho\nend\nend\nend\nend\n");
        assert_eq!(n, 1);
        // A repeat 0 costs nothing.
        assert!(
            parse_script("repeat 0\nrepeat 100000\nrepeat 100000\necho\nend\nend\nend\n").is_ok()
        );
    }

    #[test]
    fn expand_script_nests_repeats_and_refuses_the_rest() {
        let lines = expand_script(
            "echo a\nrepeat 2\nmkdir /g$i\nrepeat 2\necho $i$i\nend\necho x$i\nend\n",
        )
        .unwrap();
        let got: Vec<(usize, &str)> = lines.iter().map(|l| (l.line, l.text.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (1, "echo a"),
                (3, "mkdir /g0"),
                (5, "echo 00"),
                (5, "echo 11"),
                (7, "echo x0"),
                (3, "mkdir /g1"),
                (5, "echo 00"),
                (5, "echo 11"),
                (7, "echo x1"),
            ]
        );
        assert_eq!(
            expand_script("echo\nrepeat 0\nif 1 == 1\nend\nend\n").unwrap_err(),
            (
                3,
                "if/every blocks are not translated for the oracle yet".into()
            )
        );
        assert_eq!(
            expand_script("every 1s for 2s\nend\n").unwrap_err(),
            (
                1,
                "if/every blocks are not translated for the oracle yet".into()
            )
        );
        assert_eq!(
            expand_script("repeat 2\nbreak\nend\n").unwrap_err(),
            (2, "break is not translated for the oracle yet".into())
        );
        assert_eq!(
            expand_script("repeat 2\necho $(( $now / 2 ))\nend\n").unwrap_err(),
            (2, "$now is not translated for the oracle yet".into())
        );
        // $nowhere is another variable, and a comment is no use of $now.
        assert!(expand_script("let nowhere = 1\necho $nowhere # $now\n").is_ok());
        assert_eq!(
            expand_script("end\n").unwrap_err(),
            (1, "end without block".into())
        );
    }

    #[test]
    fn now_is_read_only_and_blocks_are_for_files() {
        assert!(err("let now = 1").starts_with("now is read-only"));
        assert_eq!(
            p("let nowt = 1"),
            Command::Let {
                name: "nowt".into(),
                terms: vec![('+', Value::Int(1))]
            }
        );
        for word in BLOCK_WORDS {
            let e = err(&format!("{word} 1"));
            assert!(
                e.starts_with(&format!("'{word}' works only in a script file")),
                "{e}"
            );
        }
    }

    #[test]
    fn garbage_never_panics() {
        for line in [
            "\u{0}",
            "echo >",
            ">",
            ">>",
            "echo >>",
            "expect (",
            "expect close)",
            "run --",
            "run --name= /A anon",
            "expect close(,,)",
            "expect @ == 1",
            "cat \"\"",
            "echo 1 > \"\"",
            "expect :: == 1",
            "open @ x",
            "close @",
            "ls a b",
            "expect close(é,ü,1)",
            "echo é>ü",
        ] {
            let _ = parse_line(line);
        }
    }
}
