//! Every experiment's README (experiments/GROUP/NAME/README.md) shows what its commands print
//! today. Each README keeps this form, in the info strings of its fenced blocks:
//!
//! * `sh`: the commands a reader runs, one a line (a trailing `\` continues a line, `#`
//!   starts a comment). `cargo build --release` builds the binary and is not run here; a
//!   loop `for VAR in WORD...; do` ... `done` stands for its body once per word, `$VAR` or
//!   `${VAR}` replaced by the word.
//! * `console`: what commands printed. A line `$ COMMAND` is followed by what COMMAND prints
//!   on its standard output (its standard error, where `memcgsim: results in DIR` goes, is
//!   not shown; a command that exits non-zero fails the test). COMMAND is
//!   `cargo run --release -- ARGS`, `./target/release/memcgsim ARGS` or `memcgsim ARGS`: the
//!   binary under test with ARGS. A line `...` stands for any number of lines and `[..]` for
//!   any text within a line (snapbox's patterns), so a block can show an excerpt.
//! * `console measured`: what a wall-clock benchmark (`memcgsim bench`) printed on some
//!   machine; parsed and matched to its commands as the others, never compared, and only
//!   there may a `bench` command be shown.
//! * any other language (`text`, `toml`, ...): not run. A fence without a language is
//!   refused, so that an output cannot slip in unchecked.
//!
//! Every command of the `sh` blocks must have a `console` block with its `$` line (same
//! words), so a README cannot change a command and keep the old output. A console block may
//! show a command the `sh` blocks do not (a run the text names). A README that does not keep
//! this form fails `every_readme_maps_its_commands_to_printed_blocks`, which runs in the fast
//! tier and runs nothing; the message names the README and the line.
//!
//! Running the commands is the experiments tier: one trial per README, several READMEs at
//! once (libtest-mimic's threads; `compare` runs its variants on `--jobs` threads, by default
//! the host's CPUs). The commands of one README run in order, each once (a block repeating
//! a command compares the same output), in one scratch folder that links the repository's
//! top-level folders, so `results/` lands there. The tier takes minutes, so its trials show
//! as ignored unless `MEMCGSIM_EXPERIMENTS=1`; `MEMCGSIM_FAST=1` keeps them off.
//! `UPDATE_EXPERIMENTS=1` runs them too, and rewrites the outputs that differ,
//! keeping the patterns that still match; an excerpt that stops matching is rewritten with
//! the whole output from where it stopped, to be trimmed by hand.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

// Shared with tests/docs.rs; each file uses part of it.
#[allow(dead_code)]
#[path = "common/markdown.rs"]
mod markdown;

use markdown::{apply, blocks, check, indent, repo, steps, Block, Edit, Scratch};

fn main() {
    let args = Arguments::from_args();
    let mut trials = vec![
        Trial::test(
            "every_readme_maps_its_commands_to_printed_blocks",
            every_readme_maps_its_commands_to_printed_blocks,
        ),
        Trial::test(
            "readmes_are_read_as_documented",
            readmes_are_read_as_documented,
        ),
    ];
    for readme in readmes() {
        let name = readme
            .parent()
            .and_then(|d| d.strip_prefix(repo()).ok())
            .unwrap_or(&readme)
            .display()
            .to_string();
        trials.push(Trial::ignorable_test(name, move || run_readme(&readme)));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// experiments/GROUP/NAME/README.md, sorted.
fn readmes() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let top = repo().join("experiments");
    for group in std::fs::read_dir(&top).expect("experiments/ is readable") {
        let group = group.expect("experiments/ entry").path();
        if !group.is_dir() {
            continue;
        }
        for exp in std::fs::read_dir(&group).expect("an experiment group is readable") {
            let readme = exp.expect("experiment entry").path().join("README.md");
            if readme.is_file() {
                out.push(readme);
            }
        }
    }
    out.sort();
    out
}

/// A command of a `sh` block, with its line in the README (1-based).
struct Command {
    line: usize,
    words: String,
}

/// A `$` line of a console block and what the README shows it printing.
struct Shown {
    /// The line of the `$` (1-based).
    line: usize,
    command: String,
    /// The first line of the output (0-based, in the README) and its lines.
    from: usize,
    expected: Vec<String>,
    block: usize,
    measured: bool,
}

/// A README read into its commands and its printed blocks.
struct Readme {
    name: String,
    text: String,
    blocks: Vec<Block>,
    commands: Vec<Command>,
    shown: Vec<Shown>,
}

fn words(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The binary's arguments of a command the tier can run, or None.
fn memcgsim_args(command: &str) -> Option<&str> {
    let command = command.trim();
    [
        "cargo run --release -- ",
        "./target/release/memcgsim ",
        "memcgsim ",
    ]
    .iter()
    .find_map(|p| command.strip_prefix(p))
}

/// `word` in `template` for `$var` and `${var}`.
fn substitute(template: &str, var: &str, word: &str) -> String {
    let braced = format!("${{{var}}}");
    let plain = format!("${var}");
    let mut out = String::new();
    let mut rest = template.replace(&braced, word);
    while let Some(at) = rest.find(&plain) {
        let after = &rest[at + plain.len()..];
        let continues = after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        if continues {
            out.push_str(&plain);
        } else {
            out.push_str(word);
        }
        rest = after.to_string();
    }
    out.push_str(&rest);
    out
}

/// The commands of a `sh` block, loops expanded; lines are 1-based in the README.
fn sh_commands(block: &Block) -> Result<Vec<Command>, String> {
    // Logical lines: continuations joined, comments and blank lines dropped.
    let mut lines: Vec<(usize, String)> = Vec::new();
    let mut i = 0;
    while i < block.lines.len() {
        let line_no = block.fence + i + 2;
        let mut line = block.lines[i].clone();
        while line.trim_end().ends_with('\\') && i + 1 < block.lines.len() {
            line = line.trim_end().trim_end_matches('\\').to_string();
            i += 1;
            line.push(' ');
            line.push_str(block.lines[i].trim_start());
        }
        i += 1;
        let code = match line.find('#') {
            Some(at) if at == 0 || line[..at].ends_with(char::is_whitespace) => &line[..at],
            _ => &line[..],
        };
        let code = code.trim();
        if !code.is_empty() {
            lines.push((line_no, code.to_string()));
        }
    }
    let mut out = Vec::new();
    let mut it = lines.into_iter();
    while let Some((line, code)) = it.next() {
        if words(&code) == "cargo build --release" {
            continue;
        }
        if code == "done" || code.starts_with("do ") {
            return Err(format!("{line}: `{code}` outside a `for` loop"));
        }
        let Some(head) = code.strip_prefix("for ") else {
            out.push(Command {
                line,
                words: words(&code),
            });
            continue;
        };
        // for VAR in WORD...; do [BODY; done]
        let (head, inline) = match head.split_once("; do") {
            Some((h, rest)) => (h, rest.trim()),
            None => {
                return Err(format!(
                    "{line}: a loop must read `for VAR in WORD...; do` (or `...; do BODY; done`)"
                ))
            }
        };
        let mut parts = head.split_whitespace();
        let (Some(var), Some("in")) = (parts.next(), parts.next()) else {
            return Err(format!("{line}: a loop must read `for VAR in WORD...; do`"));
        };
        let values: Vec<&str> = parts.collect();
        let mut body: Vec<(usize, String)> = Vec::new();
        if inline.is_empty() {
            loop {
                match it.next() {
                    Some((_, c)) if c == "done" => break,
                    Some((l, c)) if c.starts_with("for ") => {
                        return Err(format!("{l}: a loop inside a loop is not read here"))
                    }
                    Some(b) => body.push(b),
                    None => return Err(format!("{line}: the loop has no `done`")),
                }
            }
        } else {
            let Some(cmd) = inline.strip_suffix("done") else {
                return Err(format!("{line}: a one-line loop ends with `; done`"));
            };
            body.push((line, cmd.trim().trim_end_matches(';').to_string()));
        }
        if values.is_empty() || body.is_empty() {
            return Err(format!("{line}: a loop with no words or no body"));
        }
        for v in &values {
            for (l, template) in &body {
                out.push(Command {
                    line: *l,
                    words: words(&substitute(template, var, v)),
                });
            }
        }
    }
    Ok(out)
}

/// Read a README; Err with every problem, each as `NAME:LINE: what`.
fn parse(name: &str, text: String) -> Result<Readme, Vec<String>> {
    let blocks = blocks(&text).map_err(|e| vec![format!("{name}:{e}")])?;
    let mut errors = Vec::new();
    let mut commands = Vec::new();
    let mut shown = Vec::new();
    for (n, block) in blocks.iter().enumerate() {
        let fence = block.fence + 1;
        let mut info = block.info.split_whitespace();
        let (lang, rest) = (info.next(), info.collect::<Vec<_>>());
        match (lang, rest.as_slice()) {
            (None, _) => errors.push(format!(
                "{name}:{fence}: a fence without a language: write `console` for what a command \
                 printed, `console measured` for a wall-clock measurement, or `text`, `toml`, \
                 ... for what is not run"
            )),
            (Some("sh"), _) => match sh_commands(block) {
                Ok(c) => commands.extend(c),
                Err(e) => errors.push(format!("{name}:{e}")),
            },
            (Some("console"), [] | ["measured"]) => {
                let measured = !rest.is_empty();
                let s = match steps(block) {
                    Ok(s) => s,
                    Err(e) => {
                        errors.push(format!("{name}:{fence}: {e}"));
                        continue;
                    }
                };
                if s.is_empty() {
                    errors.push(format!(
                        "{name}:{fence}: a console block without a `$ COMMAND` line: which \
                         command printed it?"
                    ));
                }
                for step in s {
                    let line = fence + step.at + 1;
                    let Some(args) = memcgsim_args(&step.command) else {
                        errors.push(format!(
                            "{name}:{line}: `{}`: only memcgsim runs here (`cargo run --release \
                             -- ARGS`, `./target/release/memcgsim ARGS` or `memcgsim ARGS`)",
                            step.command
                        ));
                        continue;
                    };
                    if !step.typed.is_empty() {
                        errors.push(format!(
                            "{name}:{line}: a shell transcript is not run here (tests/docs.rs \
                             runs those in docs/)"
                        ));
                    }
                    if !measured && args.split_whitespace().next() == Some("bench") {
                        errors.push(format!(
                            "{name}:{line}: `{}` measures wall-clock time, which no run \
                             reproduces: mark its block `console measured`",
                            step.command
                        ));
                    }
                    shown.push(Shown {
                        line,
                        command: step.command,
                        from: fence + step.expected.0,
                        expected: step.expected.1,
                        block: n,
                        measured,
                    });
                }
            }
            (Some("console"), other) => errors.push(format!(
                "{name}:{fence}: `console {}`: the only word a console block takes is `measured`",
                other.join(" ")
            )),
            (Some(_), _) => {}
        }
    }
    if commands.is_empty() && errors.is_empty() {
        errors.push(format!(
            "{name}: no ```sh block with the commands that reproduce the experiment"
        ));
    }
    for c in &commands {
        if !shown.iter().any(|s| words(&s.command) == c.words) {
            errors.push(format!(
                "{name}:{}: `{}` has no printed block: add a ```console block with the line \
                 `$ {}` (UPDATE_EXPERIMENTS=1 fills in the output), or `console measured` for a \
                 wall-clock measurement",
                c.line, c.words, c.words
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Readme {
        name: name.to_string(),
        text,
        blocks,
        commands,
        shown,
    })
}

fn read(path: &std::path::Path) -> Result<Readme, Vec<String>> {
    let name = path
        .strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string();
    let text = std::fs::read_to_string(path).map_err(|e| vec![format!("{name}: {e}")])?;
    parse(&name, text)
}

fn every_readme_maps_its_commands_to_printed_blocks() -> Result<(), Failed> {
    let all = readmes();
    assert!(all.len() >= 17, "experiment READMEs found: {all:?}");
    let mut errors = Vec::new();
    let mut measured: Vec<(String, usize)> = Vec::new();
    for path in &all {
        match read(path) {
            Ok(r) => {
                let n = r.shown.iter().filter(|s| s.measured).count();
                if n > 0 {
                    measured.push((r.name, n));
                }
            }
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n").into());
    }
    // The benchmarks' outputs, which no run reproduces: a block that loses its marker is
    // compared (and fails), one that is dropped leaves its command without a block.
    let measured: Vec<(&str, usize)> = measured.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(
        measured,
        vec![
            ("experiments/mglru/trace/README.md", 2),
            ("experiments/seed001/fault-overhead/README.md", 1),
            ("experiments/seed003/nested-build/README.md", 2),
            ("experiments/seed004/page-cgroup/README.md", 3),
        ],
        "the `console measured` blocks"
    );
    Ok(())
}

fn enabled() -> Result<(), String> {
    if std::env::var("MEMCGSIM_FAST").as_deref() == Ok("1") {
        return Err("MEMCGSIM_FAST=1 runs the fast tier alone".into());
    }
    let on = |var: &str| std::env::var(var).as_deref() == Ok("1");
    if !on("MEMCGSIM_EXPERIMENTS") && !on("UPDATE_EXPERIMENTS") {
        return Err("experiments tier (minutes of CPU) off; run it with \
             `MEMCGSIM_EXPERIMENTS=1 cargo test --release --test experiment_readmes`, \
             or with UPDATE_EXPERIMENTS=1 to rewrite the outputs that differ"
            .into());
    }
    Ok(())
}

/// Run one README's commands and compare what they print with its console blocks.
fn run_readme(path: &std::path::Path) -> Result<Completion, Failed> {
    let readme = read(path).map_err(|e| e.join("\n"))?;
    let checked: Vec<&Shown> = readme.shown.iter().filter(|s| !s.measured).collect();
    if checked.is_empty() {
        return Ok(Completion::ignored_with(
            "only wall-clock measurements (`console measured`), which no run reproduces",
        ));
    }
    if let Err(why) = enabled() {
        return Ok(Completion::ignored_with(why));
    }
    let update = std::env::var("UPDATE_EXPERIMENTS").as_deref() == Ok("1");
    let scratch = Scratch::new();
    let mut printed: Vec<(String, String)> = Vec::new();
    let mut failures = String::new();
    let mut edits: Vec<Edit> = Vec::new();
    for s in checked {
        let key = words(&s.command);
        let actual = match printed.iter().find(|(k, _)| *k == key) {
            Some((_, out)) => out.clone(),
            None => {
                let start = Instant::now();
                let out = scratch.output(&s.command, "");
                eprintln!(
                    "{}: `{}` took {:.1} s",
                    readme.name,
                    s.command,
                    start.elapsed().as_secs_f64()
                );
                let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                if !out.status.success() {
                    let _ = writeln!(
                        failures,
                        "{}:{}: `{}` failed ({}):\n{stdout}{}",
                        readme.name,
                        s.line,
                        s.command,
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    );
                    continue;
                }
                printed.push((key, stdout.clone()));
                stdout
            }
        };
        if let Some(new) = check(
            &readme.name,
            s.line,
            &s.command,
            &actual,
            &s.expected,
            &mut failures,
        ) {
            edits.push((
                s.from,
                s.expected.len(),
                indent(&readme.blocks[s.block], new),
            ));
        }
    }
    if update && !edits.is_empty() {
        std::fs::write(path, apply(&readme.text, edits)).map_err(|e| e.to_string())?;
        let _ = writeln!(failures, "(rewritten: {})", readme.name);
    } else if !failures.is_empty() {
        failures.push_str(
            "(UPDATE_EXPERIMENTS=1 cargo test --release --test \
             experiment_readmes rewrites the outputs)",
        );
    }
    if failures.is_empty() {
        Ok(Completion::Completed)
    } else {
        Err(failures.into())
    }
}

fn readmes_are_read_as_documented() -> Result<(), Failed> {
    let text = "\
# x

```sh
cargo build --release
cargo run --release -- compare a.toml   # the comparison
for s in legacy rstat; do
  ./target/release/memcgsim script --set stats=$s ${s}.mcg $sx
done
for v in a b; do memcgsim run --variant $v s.toml; done
```

```console
$ cargo run --release -- compare a.toml
...
line
$ ./target/release/memcgsim script --set stats=legacy legacy.mcg $sx
x
$ ./target/release/memcgsim   script --set stats=rstat rstat.mcg $sx
$ memcgsim run --variant a s.toml
$ memcgsim run --variant b s.toml
```

```console measured
$ memcgsim bench
1.0 s
```

```text
not run
```
";
    let r = parse("r.md", text.into()).map_err(|e| e.join("\n"))?;
    let cmds: Vec<(usize, &str)> = r.commands.iter().map(|c| (c.line, &*c.words)).collect();
    assert_eq!(
        cmds,
        vec![
            (5, "cargo run --release -- compare a.toml"),
            (
                7,
                "./target/release/memcgsim script --set stats=legacy legacy.mcg $sx"
            ),
            (
                7,
                "./target/release/memcgsim script --set stats=rstat rstat.mcg $sx"
            ),
            (9, "memcgsim run --variant a s.toml"),
            (9, "memcgsim run --variant b s.toml"),
        ]
    );
    assert_eq!(r.shown.len(), 6);
    assert_eq!((r.shown[0].line, r.shown[0].from), (13, 13));
    assert_eq!(r.shown[0].expected, vec!["...", "line"]);
    assert_eq!((r.shown[1].line, r.shown[1].expected.len()), (16, 1));
    assert!(r.shown[5].measured && !r.shown[4].measured);

    let errors = |t: &str| parse("r.md", t.into()).err().unwrap_or_default().join("\n");
    // A command without its printed block, named with its line.
    let e = errors("```sh\nmemcgsim run b.toml\n```\n```console\n$ memcgsim run a.toml\n```\n");
    assert!(
        e.contains("r.md:2: `memcgsim run b.toml` has no printed block"),
        "{e}"
    );
    // A bare fence, a benchmark outside a measured block, a command that is not memcgsim,
    // output before a command, an unknown word, a loop without `done`.
    let e = errors("```sh\nmemcgsim bench\n```\n```console\n$ memcgsim bench\n```\n```\nx\n```\n");
    assert!(e.contains("r.md:5: `memcgsim bench` measures"), "{e}");
    assert!(e.contains("r.md:7: a fence without a language"), "{e}");
    let e = errors("```sh\nls\n```\n```console\n$ ls\n```\n");
    assert!(e.contains("r.md:5: `ls`: only memcgsim runs here"), "{e}");
    let e = errors("```sh\nmemcgsim x\n```\n```console\nout\n$ memcgsim x\n```\n");
    assert!(e.contains("r.md:4: 'out': output before any"), "{e}");
    let e = errors("```sh\nmemcgsim x\n```\n```console cmd=x\n$ memcgsim x\n```\n");
    assert!(e.contains("r.md:4: `console cmd=x`"), "{e}");
    let e = errors("```sh\nfor s in a; do\nmemcgsim $s\n```\n");
    assert!(e.contains("r.md:2: the loop has no `done`"), "{e}");
    let e = errors("```console\n$ memcgsim x\n```\n");
    assert!(e.contains("r.md: no ```sh block"), "{e}");
    assert_eq!(substitute("a $s ${s}b $sx $s", "s", "v"), "a v vb $sx v");
    Ok(())
}
