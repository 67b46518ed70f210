//! Closed pipes: every command, with its standard output or its standard error a pipe that
//! nobody reads any more (`memcgsim ... | head`), ends quietly, killed by SIGPIPE (status 141
//! in the shell) as other Unix tools are, and never panics. Each command is run with the
//! read end of the pipe closed before it starts, so its first write to that stream is the one
//! that fails.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

/// The stream whose reader is gone.
#[derive(Clone, Copy, Debug)]
enum Closed {
    Stdout,
    Stderr,
}

/// Run memcgsim from the repository's top folder with `closed` a pipe whose read end is
/// closed, `stdin` as its standard input; returns its status and what it wrote on the other
/// stream.
fn with_closed(closed: Closed, args: &[&str], stdin: &str) -> (ExitStatus, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memcgsim"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .stdin(Stdio::piped());
    match closed {
        Closed::Stdout => cmd.stdout(writer).stderr(Stdio::piped()),
        Closed::Stderr => cmd.stdout(Stdio::piped()).stderr(writer),
    };
    let mut child = cmd.spawn().expect("memcgsim starts");
    // The child may be gone before it reads: a failed write here is no error.
    let mut input = child.stdin.take().expect("stdin");
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    let out = child.wait_with_output().expect("memcgsim ends");
    // Drop the command (and its copy of the writer) only now.
    drop(cmd);
    let other = match closed {
        Closed::Stdout => out.stderr,
        Closed::Stderr => out.stdout,
    };
    (out.status, String::from_utf8_lossy(&other).into_owned())
}

/// `args` writes to the `closed` stream: it must end by SIGPIPE, without a panic.
fn assert_sigpipe(closed: Closed, args: &[&str], stdin: &str) {
    let (status, other) = with_closed(closed, args, stdin);
    assert!(
        !other.contains("panicked"),
        "memcgsim {args:?} with {closed:?} closed panicked: {other}"
    );
    assert_eq!(
        status.signal(),
        Some(libc::SIGPIPE),
        "memcgsim {args:?} with {closed:?} closed ended with {status}, not by SIGPIPE; it wrote:\n{other}"
    );
}

/// A scenario small enough to run in milliseconds, with two variants and a sweep axis.
fn tiny_scenario(dir: &Path) -> String {
    let path = dir.join("tiny.toml");
    std::fs::write(
        &path,
        r#"name = "tiny"
description = "one small task"

[machine]
memory = "64M"
swap = "0"

[[cgroup]]
path = "/A"
files = { "memory.max" = "32M" }

[[task]]
name = "t"
cgroup = "/A"
workload = "anon"
args = ["8M"]

[run]
duration = "1s"
seeds = [1]

[[variant]]
name = "base"

[[variant]]
name = "tight"
cgroup = { "/A" = { "memory.max" = "16M" } }

[[sweep]]
name = "max"
cgroup = "/A"
file = "memory.max"
values = ["12M", "24M"]
"#,
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn help_version_and_usage_errors() {
    for args in [
        &["--help"][..],
        &["--version"],
        &["help"],
        &["script", "--help"],
        &["shell", "--help"],
        &["run", "--help"],
        &["compare", "--help"],
        &["sweep", "--help"],
        &["bench", "--help"],
        &["oracle", "--help"],
    ] {
        assert_sigpipe(Closed::Stdout, args, "");
    }
    assert_sigpipe(Closed::Stderr, &["frobnicate"], "");
    assert_sigpipe(Closed::Stderr, &["bench", "--scale", "x"], "");
}

#[test]
fn script() {
    assert_sigpipe(
        Closed::Stdout,
        &["script", "tests/fixtures/determinism.mcg"],
        "",
    );
    assert_sigpipe(
        Closed::Stderr,
        &["script", "tests/fixtures/unknown_command.mcg"],
        "",
    );
    assert_sigpipe(Closed::Stderr, &["script", "no/such/file.mcg"], "");
}

#[test]
fn shell_reading_a_pipe() {
    assert_sigpipe(Closed::Stdout, &["shell"], "echo hi\nmkdir A\nls\n");
    assert_sigpipe(Closed::Stderr, &["shell"], "frobnicate\n");
    assert_sigpipe(Closed::Stderr, &["shell", "--report"], "run / anon 1M\n");
}

#[test]
fn run() {
    let d = tempfile::tempdir().unwrap();
    let sc = tiny_scenario(d.path());
    for (closed, out) in [(Closed::Stdout, "o1"), (Closed::Stderr, "o2")] {
        let out = d.path().join(out);
        assert_sigpipe(closed, &["run", &sc, "--out", out.to_str().unwrap()], "");
    }
    assert_sigpipe(Closed::Stderr, &["run", "no/such/scenario.toml"], "");
}

#[test]
fn compare() {
    let d = tempfile::tempdir().unwrap();
    let sc = tiny_scenario(d.path());
    for (closed, out) in [(Closed::Stdout, "c1"), (Closed::Stderr, "c2")] {
        let out = d.path().join(out);
        assert_sigpipe(
            closed,
            &["compare", &sc, "--out", out.to_str().unwrap()],
            "",
        );
    }
}

#[test]
fn sweep() {
    let d = tempfile::tempdir().unwrap();
    let sc = tiny_scenario(d.path());
    for (closed, out) in [(Closed::Stdout, "s1"), (Closed::Stderr, "s2")] {
        let out = d.path().join(out);
        assert_sigpipe(closed, &["sweep", &sc, "--out", out.to_str().unwrap()], "");
    }
}

#[test]
fn bench() {
    // A trace of three requests: the trace part is over in milliseconds.
    let d = tempfile::tempdir().unwrap();
    let trace = d.path().join("t.oracleGeneral");
    let mut b = Vec::new();
    for (t, id) in [(0u32, 1u64), (1, 2), (2, 1)] {
        b.extend_from_slice(&t.to_le_bytes());
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&4096u32.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
    }
    std::fs::write(&trace, b).unwrap();
    let t = trace.to_str().unwrap();
    assert_sigpipe(
        Closed::Stdout,
        &["bench", "--only", "trace", "--trace", t],
        "",
    );
    // Its progress line goes to standard error.
    assert_sigpipe(
        Closed::Stderr,
        &["bench", "--only", "trace", "--trace", t],
        "",
    );
    assert_sigpipe(
        Closed::Stderr,
        &["bench", "--only", "trace", "--trace", "no/such/trace"],
        "",
    );
}

#[test]
fn oracle() {
    assert_sigpipe(
        Closed::Stderr,
        &[
            "oracle",
            "--kernel",
            "no/such/kernel",
            "tests/fixtures/determinism.mcg",
        ],
        "",
    );
}

/// `memcgsim run ... 2>&1 | head -1`: the reader takes the first line and goes; memcgsim
/// ends then, by SIGPIPE, or with status 0 if it had written everything before.
#[test]
fn both_streams_into_a_reader_that_leaves_early() {
    let d = tempfile::tempdir().unwrap();
    let sc = tiny_scenario(d.path());
    let out = d.path().join("o");
    let (reader, writer) = std::io::pipe().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memcgsim"));
    cmd.args(["run", &sc, "--out", out.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer);
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let mut first = String::new();
    BufReader::new(reader).read_line(&mut first).unwrap();
    assert!(first.starts_with("scenario tiny"), "{first}");
    let status = child.wait().unwrap();
    assert!(
        status.signal() == Some(libc::SIGPIPE) || status.success(),
        "{status}"
    );
}

/// `memcgsim ... >&-` and `2>&-`: with a descriptor closed outright (not a pipe), the output
/// goes nowhere, the command runs to its end with its own status, and no file it writes
/// takes the closed descriptor's place.
#[test]
fn closed_descriptors_are_not_an_error() {
    use std::os::unix::process::CommandExt;
    let d = tempfile::tempdir().unwrap();
    let sc = tiny_scenario(d.path());
    for fd in [1, 2] {
        let out = d.path().join(format!("out{fd}"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memcgsim"));
        cmd.args(["run", &sc, "--out", out.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: close(2) is async-signal-safe, as pre_exec requires.
        unsafe {
            cmd.pre_exec(move || {
                libc::close(fd);
                Ok(())
            });
        }
        let status = cmd.status().unwrap();
        assert!(status.success(), "fd {fd} closed: {status}");
        let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
        assert!(summary.starts_with('{'), "{summary}");
    }
}
