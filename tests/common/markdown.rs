//! What the tests that check a document's commands against their output share
//! (tests/docs.rs for README.md and docs/, tests/experiment_readmes.rs for experiments/):
//! reading a Markdown file's fenced blocks and a `console` block's `$` commands, a scratch
//! folder to run them in with the binary under test, the comparison of an output with what
//! the document shows (snapbox's `...` and `[..]` patterns), and the rewrite of the outputs
//! that differ.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use snapbox::{Assert, Data};

/// The repository's top folder.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One fenced block: the info string, the line of its opening fence (0-based), its
/// indentation (a block in a list item is indented) and its lines without it.
pub struct Block {
    pub info: String,
    pub fence: usize,
    pub indent: usize,
    pub lines: Vec<String>,
}

/// The fenced blocks of a Markdown text (fences of three backticks).
pub fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let fence = line.trim_start_matches(' ').strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_string(),
                    fence: i,
                    indent,
                    lines: Vec::new(),
                })
            }
            (Some(b), Some(rest)) if rest.trim().is_empty() => {
                if indent != b.indent {
                    return Err(format!(
                        "line {}: the closing fence is not indented as the opening one",
                        i + 1
                    ));
                }
                out.push(open.take().expect("open block"))
            }
            (Some(b), _) => {
                let body = line.get(b.indent..).unwrap_or("");
                if !line[..line.len().min(b.indent)].trim().is_empty() {
                    return Err(format!("line {}: less indented than its fence", i + 1));
                }
                b.lines.push(body.to_string())
            }
            (None, None) => {}
        }
    }
    match open {
        Some(b) => Err(format!("line {}: fence never closed", b.fence + 1)),
        None => Ok(out),
    }
}

/// One command of a console block and what the doc says it prints. For a shell transcript,
/// `typed` holds the lines typed at its prompt, each with its own expected output.
pub struct Step {
    /// Index in the block's lines of the `$` line.
    pub at: usize,
    pub command: String,
    /// Expected output: (first line index, lines) right after the command.
    pub expected: (usize, Vec<String>),
    pub typed: Vec<Typed>,
}

pub struct Typed {
    pub prompt: String,
    pub input: String,
    pub expected: (usize, Vec<String>),
}

fn shell_prompt(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("memcgsim:")?;
    let end = rest
        .find("$ ")
        .or_else(|| rest.ends_with('$').then_some(rest.len() - 1))?;
    let prompt = format!("memcgsim:{}$ ", &rest[..end]);
    Some((prompt, rest.get(end + 2..).unwrap_or("").to_string()))
}

fn is_shell(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    matches!(
        words.as_slice(),
        ["cargo", "run", "--release", "--", "shell", ..] | ["memcgsim", "shell", ..]
    )
}

/// The commands of a console block: a line `$ COMMAND` (continued by a trailing `\`), the
/// lines after it up to the next command being what it prints; after a shell command,
/// `memcgsim:DIR$ LINE` lines are typed at its prompt.
pub fn steps(block: &Block) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut i = 0;
    while i < block.lines.len() {
        let line = &block.lines[i];
        if let Some(cmd) = line.strip_prefix("$ ") {
            let at = i;
            let mut command = cmd.to_string();
            while command.ends_with('\\') && i + 1 < block.lines.len() {
                command.pop();
                i += 1;
                command.push_str(block.lines[i].trim_start());
            }
            steps.push(Step {
                at,
                command,
                expected: (i + 1, Vec::new()),
                typed: Vec::new(),
            });
        } else if let Some((prompt, input)) = shell_prompt(line) {
            let step = steps
                .last_mut()
                .filter(|s| is_shell(&s.command))
                .ok_or_else(|| {
                    format!("'{line}': a shell prompt line must follow a shell command")
                })?;
            step.typed.push(Typed {
                prompt,
                input,
                expected: (i + 1, Vec::new()),
            });
        } else {
            let step = steps
                .last_mut()
                .ok_or_else(|| format!("'{line}': output before any `$ ` command"))?;
            match step.typed.last_mut() {
                Some(t) => t.expected.1.push(line.clone()),
                None => step.expected.1.push(line.clone()),
            }
        }
        i += 1;
    }
    Ok(steps)
}

/// A scratch folder for one document: links to the repository's top-level entries, the
/// binary under test as `memcgsim` on the PATH and as `target/release/memcgsim`, and room for
/// the files and results the doc's commands write.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("scratch folder");
        for entry in std::fs::read_dir(repo()).expect("repository is readable") {
            let entry = entry.expect("repository entry");
            let name = entry.file_name();
            if name == "target" || name == "results" || name.to_string_lossy().starts_with('.') {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), dir.path().join(&name))
                .expect("link into the scratch folder");
        }
        for bin in [".bin", "target/release"] {
            let bin = dir.path().join(bin);
            std::fs::create_dir_all(&bin).expect("scratch bin/");
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_memcgsim"), bin.join("memcgsim"))
                .expect("link memcgsim");
        }
        Scratch { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Run `command` with sh in the scratch folder, `stdin` on its standard input.
    /// `cargo run --release -- ARGS` and `memcgsim ARGS` run the binary under test.
    pub fn output(&self, command: &str, stdin: &str) -> Output {
        let prelude = "cargo() { if [ \"$1 $2 $3\" = 'run --release --' ]; then shift 3; \
                       memcgsim \"$@\"; else echo \"docs: only 'cargo run --release --' \
                       runs here\" >&2; return 2; fi; }\n";
        let path = format!(
            "{}:{}",
            self.path().join(".bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("{prelude}{command}\n"))
            .current_dir(self.path())
            .env("PATH", path)
            .env("MEMCGSIM_HISTORY", "")
            .env_remove("MEMCGSIM_CHECK")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sh runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("feed stdin");
        child.wait_with_output().expect("sh ends")
    }

    /// Run `command` as [`Scratch::output`] does; stdout and stderr together.
    pub fn run(&self, command: &str, stdin: &str) -> String {
        let out = self.output(&format!("{{ {command}\n}} 2>&1"), stdin);
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        text
    }
}

/// Compare `actual` with the `expected` lines; on a mismatch, record it and return the lines
/// to write back (the normalised actual output, which keeps the patterns that still match).
pub fn check(
    doc: &str,
    line: usize,
    what: &str,
    actual: &str,
    expected: &[String],
    failures: &mut String,
) -> Option<Vec<String>> {
    let mut want = expected.join("\n");
    if !expected.is_empty() {
        want.push('\n');
    }
    let assert = Assert::new().normalize_paths(false);
    let (norm, exp) = assert.normalize(Data::text(actual), Data::text(want.clone()));
    let (norm, exp) = (
        norm.render().unwrap_or_default(),
        exp.render().unwrap_or_default(),
    );
    if norm == exp {
        return None;
    }
    let _ = writeln!(
        failures,
        "{doc}:{line}: `{what}` prints something else than the doc shows\n--- doc\n{want}--- printed\n{actual}---"
    );
    Some(norm.lines().map(str::to_string).collect())
}

/// A replacement of a document's lines: (first line, 0-based; number of lines; new lines).
pub type Edit = (usize, usize, Vec<String>);

/// `lines` indented as `block`'s body (empty lines stay empty).
pub fn indent(block: &Block, lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| {
            if l.is_empty() {
                l
            } else {
                format!("{}{l}", " ".repeat(block.indent))
            }
        })
        .collect()
}

/// `text` with `edits` (in document order, not overlapping) applied.
pub fn apply(text: &str, edits: Vec<Edit>) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for (from, len, new) in edits.into_iter().rev() {
        lines.splice(from..from + len, new);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}
