//! What README.md and docs/*.md show a command printing is what it prints today.
//!
//! Every fenced block of those files says what it holds, in its info string:
//!
//! * `console`: commands and their output, checked here. A line `$ COMMAND` (continued by a
//!   trailing `\`) runs COMMAND with `sh`; the lines after it, up to the next command, are
//!   what it prints on standard output and error together. `cargo run --release -- ARGS`
//!   runs the binary under test with ARGS, and so does `memcgsim ARGS`. After
//!   `$ cargo run --release -- shell` (or `memcgsim shell`), lines `memcgsim:DIR$ LINE` are
//!   typed into that shell, each followed by what it prints (the shell runs piped, with
//!   `--report`, which prints what the interactive shell prints).
//! * a block with `file=NAME` after its language (`toml file=pagetest.toml`): its text is
//!   written to NAME before the blocks after it run, so a doc can show a file and then run it.
//! * any other language (`sh`, `toml`, `python`, `text`, ...): not run. `text` is for what
//!   cannot be reproduced here (wall-clock figures of a benchmark, a real kernel's output).
//!
//! A fence without a language is refused, so an output cannot slip in unchecked.
//!
//! Figures that legitimately vary (wall-clock times) are written `[..]` inside a line; a
//! line `...` stands for any number of lines (snapbox's patterns). Commands of one file run
//! in order in one scratch folder that links the repository's top-level folders, so
//! `results/` and the files a doc writes land there, never in the repository.
//!
//! `UPDATE_DOCS=1 cargo test --release --test docs` rewrites the outputs that differ, keeping
//! the patterns that still match.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

// Shared with tests/experiment_readmes.rs; each file uses part of it.
#[allow(dead_code)]
#[path = "common/markdown.rs"]
mod markdown;

use markdown::{apply, blocks, check, indent, repo, steps, Block, Edit, Scratch};

/// The documents whose blocks are checked, from the repository's top folder.
fn documents() -> Vec<PathBuf> {
    let root = repo();
    let mut docs = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

/// At the prompt, messages carry no `FILE:LINE:` prefix; piped input gets `<stdin>:N: `.
fn strip_stdin_prefix(text: &str) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let bare = line.strip_prefix("<stdin>:").and_then(|rest| {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            (digits > 0)
                .then(|| rest[digits..].strip_prefix(": "))
                .flatten()
        });
        out.push_str(bare.unwrap_or(line));
    }
    out
}

/// A marker the harness types between the lines of a transcript to split the shell's output.
const MARK: &str = "@@docs-next-line@@";

/// Check one document; with `update`, return its text with the outputs rewritten.
fn check_document(doc: &Path, update: bool, failures: &mut String) -> Option<String> {
    let name = doc
        .strip_prefix(repo())
        .unwrap_or(doc)
        .display()
        .to_string();
    let text = std::fs::read_to_string(doc).expect("document is readable");
    let blocks = match blocks(&text) {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(failures, "{name}: {e}");
            return None;
        }
    };
    let scratch = Scratch::new();
    // Replacements: (first line, number of lines, new lines), in document order.
    let mut edits: Vec<Edit> = Vec::new();
    for block in &blocks {
        let first = block.fence + 1;
        let mut words = block.info.split_whitespace();
        let lang = words.next();
        if let Some(file) = words.find_map(|w| w.strip_prefix("file=")) {
            let path = scratch.path().join(file);
            assert!(
                !path.exists() || path.is_file() && !path.is_symlink(),
                "{name}:{first}: file={file} would replace a repository entry"
            );
            let mut body = block.lines.join("\n");
            body.push('\n');
            std::fs::write(&path, body).expect("write the doc's file");
        }
        match lang {
            None => {
                let _ = writeln!(
                    failures,
                    "{name}:{first}: a fence without a language: write `console` for output \
                     this test checks, or `sh`, `toml`, `text`, ... for what it does not run"
                );
            }
            Some("console") => {
                let steps = match steps(block) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = writeln!(failures, "{name}:{first}: {e}");
                        continue;
                    }
                };
                for step in steps {
                    let at = first + step.at + 1;
                    if step.typed.is_empty() {
                        let actual = scratch.run(&step.command, "");
                        let (from, want) = &step.expected;
                        if let Some(new) = check(&name, at, &step.command, &actual, want, failures)
                        {
                            edits.push((first + from, want.len(), indent(block, new)));
                        }
                        continue;
                    }
                    let mut input = String::new();
                    for t in &step.typed {
                        let _ = writeln!(input, "{}\necho {MARK}", t.input);
                    }
                    let out = scratch.run("memcgsim shell --report", &input);
                    let split = format!("{MARK}\n");
                    let mut parts = out.split(split.as_str());
                    for t in &step.typed {
                        let actual = strip_stdin_prefix(parts.next().unwrap_or(""));
                        let at = first + t.expected.0;
                        let what = format!("{}{}", t.prompt, t.input);
                        if let Some(new) = check(&name, at, &what, &actual, &t.expected.1, failures)
                        {
                            edits.push((
                                first + t.expected.0,
                                t.expected.1.len(),
                                indent(block, new),
                            ));
                        }
                    }
                    let rest: String = parts.collect();
                    if !rest.is_empty() {
                        let _ = writeln!(
                            failures,
                            "{name}:{at}: the shell printed after its last line:\n{rest}"
                        );
                    }
                }
            }
            Some(_) => {}
        }
    }
    if !update || edits.is_empty() {
        return None;
    }
    Some(apply(&text, edits))
}

#[test]
fn docs_show_what_the_commands_print() {
    let update = std::env::var("UPDATE_DOCS").as_deref() == Ok("1");
    let mut failures = String::new();
    for doc in documents() {
        if let Some(new) = check_document(&doc, update, &mut failures) {
            std::fs::write(&doc, new).expect("rewrite the document");
        }
    }
    assert!(
        failures.is_empty(),
        "{failures}\n(UPDATE_DOCS=1 cargo test --release --test docs rewrites the outputs)"
    );
}

#[test]
fn blocks_and_steps_are_read_as_documented() {
    let text = "x\n```console\n$ memcgsim shell\nmemcgsim:/$ mkdir A\nmemcgsim:/A$ cat f\nhello\n```\n```toml file=a.toml\nk = 1\n```\n";
    let b = blocks(text).unwrap();
    assert_eq!(b.len(), 2);
    assert_eq!((b[0].info.as_str(), b[0].fence), ("console", 1));
    let s = steps(&b[0]).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].typed.len(), 2);
    assert_eq!(s[0].typed[1].input, "cat f");
    assert_eq!(s[0].typed[1].prompt, "memcgsim:/A$ ");
    assert_eq!(s[0].typed[1].expected.1, vec!["hello".to_string()]);
    assert_eq!(b[1].info, "toml file=a.toml");
    assert!(blocks("```sh\nopen\n").is_err());
    let indented = blocks("- a\n\n  ```sh\n  x\n\n  ```\n").unwrap();
    assert_eq!(
        (indented[0].indent, indented[0].lines.clone()),
        (2, vec!["x".to_string(), String::new()])
    );
    assert!(blocks("  ```sh\nx\n  ```\n").is_err());
    let orphan = Block {
        info: "console".into(),
        fence: 0,
        indent: 0,
        lines: vec!["output first".into()],
    };
    assert!(steps(&orphan).is_err());
}

#[test]
fn a_drifted_output_is_caught_and_a_pattern_is_kept() {
    let mut failures = String::new();
    let want = vec![
        "done after [..] of wall time".to_string(),
        "x 1".to_string(),
    ];
    assert!(check(
        "d.md",
        1,
        "c",
        "done after 3ms of wall time\nx 1\n",
        &want,
        &mut failures
    )
    .is_none());
    let new = check(
        "d.md",
        1,
        "c",
        "done after 4ms of wall time\nx 2\n",
        &want,
        &mut failures,
    )
    .expect("a drift is a failure");
    assert_eq!(new, vec!["done after [..] of wall time", "x 2"]);
    assert!(failures.contains("d.md:1"), "{failures}");
    assert_eq!(
        strip_stdin_prefix("<stdin>:12: a: b\n<stdin>x\n"),
        "a: b\n<stdin>x\n"
    );
}
