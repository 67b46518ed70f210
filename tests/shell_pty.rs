//! The interactive shell driven through a pseudo-terminal, as a user at a terminal drives
//! it: Ctrl-C during a foreground run, pastes with and without bracketed paste, task
//! reports, completion, history kept across sessions (and a file that is not a history left
//! alone), and the exit status of Ctrl-D.

use std::process::Command;

use rexpect::reader::Options;
use rexpect::session::{spawn_with_options, PtySession};

/// Seconds any one expectation may wait: generous, for a loaded two-core machine.
const TIMEOUT_MS: u64 = 60_000;

const PROMPT: &str = "memcgsim:/$ ";

struct Shell {
    s: PtySession,
    _dir: tempfile::TempDir,
    history: std::path::PathBuf,
    /// What the shell printed before its banner's 'type help'.
    preamble: String,
}

fn shell(extra: &[&str]) -> Shell {
    shell_with_history(extra, None)
}

/// A shell whose history file (MEMCGSIM_HISTORY) holds `history` before it starts, if given.
fn shell_with_history(extra: &[&str], history_text: Option<&[u8]>) -> Shell {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history");
    if let Some(text) = history_text {
        std::fs::write(&history, text).unwrap();
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memcgsim"));
    cmd.arg("shell").args(extra);
    cmd.env("MEMCGSIM_HISTORY", &history);
    cmd.env("TERM", "xterm");
    // Raw output: the texts looked for are contiguous in it, escape sequences aside.
    let opts = Options::default().timeout_ms(Some(TIMEOUT_MS));
    let mut s = spawn_with_options(cmd, opts).expect("spawn the shell on a pty");
    let preamble = s.exp_string("type 'help'").unwrap();
    s.exp_string(PROMPT).unwrap();
    Shell {
        s,
        _dir: dir,
        history,
        preamble,
    }
}

impl Shell {
    /// Type a line and wait for the prompt after it.
    fn line(&mut self, text: &str) -> String {
        self.s.send_line(text).unwrap();
        self.s.exp_string(PROMPT).unwrap()
    }

    /// Send keys as they are typed (no Enter added).
    fn keys(&mut self, text: &str) {
        self.s.send(text).unwrap();
        self.s.flush().unwrap();
    }

    /// Ctrl-D at the prompt; the shell's exit status.
    fn eof(&mut self) -> i32 {
        self.s.send_control('d').unwrap();
        self.s.exp_eof().unwrap();
        match self.s.process_mut().wait().unwrap() {
            rexpect::process::wait::WaitStatus::Exited(_, code) => code,
            other => panic!("the shell did not exit normally: {other:?}"),
        }
    }
}

#[test]
fn ctrl_c_stops_the_foreground_task_and_keeps_the_session() {
    let mut sh = shell(&[]);
    sh.line("mkdir A");
    // Billions of page touches: far longer than the test waits.
    sh.s.send_line("run A anon 10M --passes 1000000").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    sh.s.send_control('c').unwrap();
    sh.s.exp_string("anon: interrupted (SIGINT, status 130) after")
        .unwrap();
    sh.s.exp_string(PROMPT).unwrap();
    // The machine is still there: the cgroup, and the task's memory freed at its death
    // (memory.current keeps only what the per-CPU charge stock holds, under one batch).
    let out = sh.line("cat A/memory.stat");
    assert!(out.contains("\r\nanon 0\r\n"), "{out:?}");
    assert!(out.contains("\r\nkernel 0\r\n"), "{out:?}");
    let out = sh.line("cat A/memory.current");
    let current: u64 = out
        .split("\r\n")
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no number in {out:?}"));
    assert!(current < 64 * 4096, "{out:?}");
    sh.line("expect exit 130");
    let out = sh.line("echo still here");
    assert!(out.contains("still here"), "{out:?}");
    // Ctrl-C during `wait` stops waiting; the task runs on.
    sh.line("run --bg --name bg A anon 10M --passes 1000000");
    sh.s.send_line("wait bg").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    sh.s.send_control('c').unwrap();
    sh.s.exp_string("wait: interrupted; task 'bg' is still running")
        .unwrap();
    sh.s.exp_string(PROMPT).unwrap();
    let out = sh.line("cat A/cgroup.procs");
    assert!(out.contains("\r\n101\r\n"), "{out:?}");
    sh.line("kill bg");
    assert_eq!(sh.eof(), 0);
}

#[test]
fn pasted_lines_all_run_in_order() {
    let mut sh = shell(&[]);
    // Without bracketed paste: the lines arrive at once, as typed very fast.
    sh.keys("mkdir P\necho 20M > P/memory.max\ncat P/memory.max\n");
    sh.s.exp_string("20971520").unwrap();
    sh.s.exp_string(PROMPT).unwrap();
    // With bracketed paste: one paste of three lines, then Enter.
    sh.keys("\x1b[200~mkdir Q\necho 30M > Q/memory.max\ncat Q/memory.max\x1b[201~");
    sh.keys("\r");
    sh.s.exp_string("31457280").unwrap();
    sh.s.exp_string(PROMPT).unwrap();
    let out = sh.line("ls");
    assert!(out.contains("P/") && out.contains("Q/"), "{out:?}");
    assert_eq!(sh.eof(), 0);
}

#[test]
fn an_oom_kill_is_reported() {
    let mut sh = shell(&[]);
    sh.line("mkdir A");
    sh.line("echo 30M > A/memory.max");
    sh.line("echo 0 > A/memory.swap.max");
    let out = sh.line("run A anon 100M");
    assert!(
        out.contains("anon: killed by the OOM killer (out of memory in /A) after"),
        "{out:?}"
    );
    assert!(out.contains("of virtual time"), "{out:?}");
    let out = sh.line("run A anon 10M");
    assert!(out.contains("anon: exited with status 0 after"), "{out:?}");
    // Messages at the prompt carry no file and line.
    let out = sh.line("echo +memory > /A/cgroup.subtree_control");
    assert!(!out.contains("<stdin>"), "{out:?}");
    let out = sh.line("frobnicate");
    assert!(
        out.contains("error: unknown command 'frobnicate'") && !out.contains("<stdin>"),
        "{out:?}"
    );
    // A script error does not change Ctrl-D's status without --strict.
    assert_eq!(sh.eof(), 0);
}

#[test]
fn strict_mode_keeps_the_status() {
    let mut sh = shell(&["--strict"]);
    sh.line("expect 1 == 2");
    assert_eq!(sh.eof(), 1);
}

#[test]
fn completion_and_history() {
    let mut sh = shell(&[]);
    // A unique workload completes in place.
    sh.keys("help pagec\t\r");
    sh.s.exp_string("pagecache SIZE").unwrap();
    sh.s.exp_string(PROMPT).unwrap();
    sh.keys("machine memory=2G sw\t\t");
    sh.s.exp_string("swappiness=").unwrap();
    sh.s.send_control('u').unwrap();
    sh.keys("\r");
    sh.s.exp_string(PROMPT).unwrap();
    sh.line("mkdir Hist");
    let history = sh.history.clone();
    assert_eq!(sh.eof(), 0);
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(kept.contains("mkdir Hist"), "{kept}");
    assert!(kept.contains("help pagecache"), "{kept}");
}

#[test]
fn an_existing_history_is_read_and_extended() {
    let mut sh = shell_with_history(&[], Some(b"#V2\nmkdir Old\n"));
    assert!(!sh.preamble.contains("memcgsim:"), "{:?}", sh.preamble);
    // Up recalls the last session's line.
    sh.keys("\x1b[A");
    sh.s.exp_string("mkdir Old").unwrap();
    sh.keys("\r");
    sh.s.exp_string(PROMPT).unwrap();
    let out = sh.line("ls");
    assert!(out.contains("Old/"), "{out:?}");
    let history = sh.history.clone();
    assert_eq!(sh.eof(), 0);
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(kept.starts_with("#V2\n"), "{kept}");
    assert!(
        kept.contains("mkdir Old\n") && kept.contains("ls\n"),
        "{kept}"
    );
}

#[test]
fn a_file_that_is_not_a_history_is_never_overwritten() {
    let notes = b"my notes, not a history\nsecond line\n";
    let mut sh = shell_with_history(&[], Some(notes));
    assert!(
        sh.preamble.contains("is not a memcgsim history")
            && sh.preamble.contains("kept in memory only"),
        "{:?}",
        sh.preamble
    );
    // Nothing of the file was loaded, and the session's lines are still recalled.
    sh.line("mkdir Mine");
    sh.keys("\x1b[A");
    sh.s.exp_string("mkdir Mine").unwrap();
    sh.s.send_control('u').unwrap();
    sh.keys("\r");
    sh.s.exp_string(PROMPT).unwrap();
    let out = sh.line("echo done");
    assert!(!out.contains("memcgsim:"), "warned again: {out:?}");
    let history = sh.history.clone();
    assert_eq!(sh.eof(), 0);
    assert_eq!(std::fs::read(&history).unwrap(), notes);
}

/// `memcgsim shell | head` at a terminal, the reader gone: the first write to standard output
/// ends the shell by SIGPIPE (status 141), quietly.
#[test]
fn a_closed_standard_output_ends_the_shell_quietly() {
    use rexpect::process::{Signal, WaitStatus};
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memcgsim"));
    cmd.arg("shell")
        .env("MEMCGSIM_HISTORY", "")
        .env("TERM", "xterm")
        .stdout(writer);
    let opts = Options::default().timeout_ms(Some(TIMEOUT_MS));
    let mut s = spawn_with_options(cmd, opts).expect("spawn the shell on a pty");
    // Standard input and error are the terminal.
    let said = s.exp_eof().unwrap();
    assert!(!said.contains("panicked"), "{said:?}");
    match s.process_mut().wait().unwrap() {
        WaitStatus::Signaled(_, Signal::SIGPIPE, _) => {}
        other => panic!("the shell ended with {other:?}, said {said:?}"),
    }
}
