//! The parser: turns the words of one line into a [`Command`]. It knows the syntax of every
//! command but nothing about the simulated system, so it can be tested on its own.

use memcgsim_model::{units, Errno};

use crate::lexer::{tokenize, Word};
use crate::value::{is_var_name, parse_arith, parse_int, parse_value, CmpOp, Segment, Value};

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

/// The condition of an `expect` command.
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
}

/// Every command name, for completion in the shell.
pub const COMMANDS: &[&str] = &[
    "cat", "cd", "clear", "close", "echo", "expect", "help", "kill", "let", "ls", "machine",
    "mkdir", "open", "pwd", "rmdir", "run", "sleep", "wait",
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
  expect A OP B                compare values; OP is == != < <= > >=
  expect close(A, B, PCT)      A and B within PCT percent (kernel values_close)
  expect exit N | killed       how the last foreground task ended
  expect errno NAME | 0        how the last write/mkdir/rmdir/open/close/run ended
  let NAME = VALUE | $(( ... ))  remember a value now, as $NAME
  repeat N ... end             the lines between, N times, $i counting from 0 (scripts only)
  help [WORKLOAD]              this text, or what a workload does and its arguments
  clear                        clear the terminal (interactive shell only)
Values: 4096, 30M, -1, max, FILE, FILE:KEY, @NAME, $NAME
";

fn arity(cmd: &str, args: &[Word], min: usize, max: usize, usage: &str) -> Result<(), String> {
    if args.len() < min || args.len() > max {
        Err(format!("usage: {cmd} {usage}"))
    } else {
        Ok(())
    }
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
        "repeat" | "end" => {
            return Err(format!(
                "'{cmd}' works only in a script file, where repeat N ... end is expanded before it runs"
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

/// The largest count of a `repeat`, and of lines a script may expand to.
pub const MAX_REPEAT: u64 = 100_000;
pub const MAX_EXPANDED_LINES: usize = 1_000_000;

/// One line of a script after `repeat` blocks are expanded: its text, with `$i` replaced by
/// the iteration inside a block, and the line of the file it came from (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptLine {
    pub line: usize,
    pub text: String,
}

/// The first word of a line if it is unquoted `repeat` or `end`, with the remaining words.
fn block_word(line: &str) -> Option<(String, Vec<Word>)> {
    let words = tokenize(line).ok()?;
    let (first, rest) = words.split_first()?;
    if first.quoted || (first.text != "repeat" && first.text != "end") {
        return None;
    }
    Some((first.text.clone(), rest.to_vec()))
}

/// Replace `$i` (not followed by a letter, digit or `_`) with `n`.
fn substitute_i(text: &str, n: u64) -> String {
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

/// Expand the `repeat N` ... `end` blocks of a script: the lines between run N times, `$i`
/// standing for 0, 1, ..., N-1. Blocks do not nest. Err: (line, message).
pub fn expand_script(text: &str) -> Result<Vec<ScriptLine>, (usize, String)> {
    let mut out = Vec::new();
    let mut block: Option<(usize, u64, Vec<ScriptLine>)> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        match (block_word(raw), &mut block) {
            (Some((w, args)), None) if w == "repeat" => {
                let [count] = args.as_slice() else {
                    return Err((
                        n,
                        "usage: repeat N (then the lines to repeat, then end)".into(),
                    ));
                };
                let count = parse_int(&count.text)
                    .ok()
                    .and_then(|c| u64::try_from(c).ok())
                    .filter(|&c| c <= MAX_REPEAT)
                    .ok_or_else(|| {
                        (
                            n,
                            format!(
                                "repeat: '{}' is not a count from 0 to {MAX_REPEAT}",
                                count.text
                            ),
                        )
                    })?;
                block = Some((n, count, Vec::new()));
            }
            (Some((w, _)), Some(_)) if w == "repeat" => {
                return Err((n, "repeat: blocks do not nest".into()));
            }
            (Some((w, args)), Some(_)) if w == "end" => {
                if !args.is_empty() {
                    return Err((n, "usage: end".into()));
                }
                let (_, count, body) = block.take().expect("inside a block");
                for k in 0..count {
                    if out.len() + body.len() > MAX_EXPANDED_LINES {
                        return Err((
                            n,
                            format!("repeat: the script expands to more than {MAX_EXPANDED_LINES} lines"),
                        ));
                    }
                    out.extend(body.iter().map(|l| ScriptLine {
                        line: l.line,
                        text: substitute_i(&l.text, k),
                    }));
                }
            }
            (Some((w, _)), None) if w == "end" => {
                return Err((n, "end without repeat".into()));
            }
            (_, Some((_, _, body))) => body.push(ScriptLine {
                line: n,
                text: raw.to_string(),
            }),
            (_, None) => out.push(ScriptLine {
                line: n,
                text: raw.to_string(),
            }),
        }
    }
    if let Some((start, _, _)) = block {
        return Err((start, "repeat without end".into()));
    }
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
    const USAGE: &str = "usage: expect A OP B | close(A, B, PCT) | exit N | killed | errno NAME";
    let text = words.join(" ");
    let Some(&first) = words.first() else {
        return Err(USAGE.into());
    };
    if first == "close" || first.starts_with("close(") {
        return Ok((parse_close(&text)?, text));
    }
    let expr = match (first, words.len()) {
        ("killed", 1) => Expr::Killed,
        ("exit", 2) => {
            let n: i32 = words[1]
                .parse()
                .map_err(|_| format!("expect exit: bad status '{}'", words[1]))?;
            Expr::Exit(n)
        }
        ("errno", 2) => {
            if words[1] == "0" {
                Expr::Errno(None)
            } else {
                let e = Errno::from_name(words[1])
                    .ok_or_else(|| format!("expect errno: unknown errno '{}'", words[1]))?;
                Expr::Errno(Some(e))
            }
        }
        (_, 3) => {
            let op = CmpOp::parse(words[1]).ok_or_else(|| {
                format!(
                    "expect: unknown operator '{}' (use == != < <= > >=)",
                    words[1]
                )
            })?;
            Expr::Cmp(parse_value(words[0])?, op, parse_value(words[2])?)
        }
        _ => return Err(USAGE.into()),
    };
    Ok((expr, text))
}

/// Parse `close(A, B, PCT)`, spaces allowed anywhere around the punctuation.
fn parse_close(text: &str) -> Result<Expr, String> {
    const USAGE: &str = "usage: expect close(A, B, PCT)";
    let rest = text.strip_prefix("close").ok_or(USAGE)?.trim_start();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.trim_end().strip_suffix(')'))
        .ok_or(USAGE)?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.len() != 3
        || parts
            .iter()
            .any(|p| p.is_empty() || p.contains(char::is_whitespace))
    {
        return Err(USAGE.into());
    }
    let a = parse_value(parts[0])?;
    let b = parse_value(parts[1])?;
    let pct =
        parse_int(parts[2]).map_err(|_| format!("expect close: bad percentage '{}'", parts[2]))?;
    if pct < 0 {
        return Err(format!("expect close: negative percentage '{}'", parts[2]));
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
