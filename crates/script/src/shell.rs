//! Shell mode: commands read one line at a time, where a script error is reported and the
//! next line runs anyway, and `exit` or `quit` leaves. Blocks (`repeat`, `if`, `every` ...
//! `end`) and `break` need a script file: each line here is refused with a message saying so. The interactive line editor lives in
//! the binary; this part is shared with it and drives piped input.

use std::io::{BufRead, Write};

use crate::interp::{Interpreter, EXIT_SCRIPT_ERROR};
use crate::lexer::tokenize;

/// Whether a line asks the shell to leave: `exit` or `quit` alone (comments allowed).
pub fn is_exit_line(line: &str) -> bool {
    match tokenize(line) {
        Ok(words) => words.len() == 1 && (words[0].is_bare("exit") || words[0].is_bare("quit")),
        Err(_) => false,
    }
}

/// Execute one line in shell mode: a script error is printed to `err` and does not stop
/// anything. Returns [`EXIT_SCRIPT_ERROR`] after a script error, else 0.
pub fn shell_line(
    interp: &mut Interpreter,
    line_no: usize,
    line: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let r = interp.exec_line(line_no, line, out, err);
    let _ = out.flush();
    match r {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "{e}");
            EXIT_SCRIPT_ERROR
        }
    }
}

/// Run lines from `input` in shell mode until its end or an `exit`/`quit` line. Bytes that
/// are not UTF-8 are replaced, never fatal. Returns 2 if any line had a script error (or the
/// input could not be read), else 1 if an `expect` failed, else 0.
pub fn run_shell_input(
    interp: &mut Interpreter,
    mut input: impl BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let mut worst = 0;
    let mut buf = Vec::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                let _ = writeln!(err, "{}:{}: cannot read: {e}", interp.file(), line_no + 1);
                worst = EXIT_SCRIPT_ERROR;
                break;
            }
        }
        line_no += 1;
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_end_matches(['\n', '\r']);
        if is_exit_line(line) {
            break;
        }
        worst = worst.max(shell_line(interp, line_no, line, out, err));
    }
    worst.max(interp.status())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(input: &[u8]) -> (i32, String, String) {
        let mut interp = Interpreter::new("<stdin>");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = run_shell_input(&mut interp, input, &mut out, &mut err);
        (
            status,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn exit_lines() {
        assert!(is_exit_line("exit"));
        assert!(is_exit_line("  quit  # bye"));
        assert!(!is_exit_line("exit 1"));
        assert!(!is_exit_line("\"exit\""));
        assert!(!is_exit_line("expect exit 0"));
        assert!(!is_exit_line(""));
    }

    #[test]
    fn script_errors_do_not_stop_the_shell() {
        let (status, out, err) = shell(b"echo a\nbogus\necho b\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        assert_eq!(out, "a\nb\n");
        assert_eq!(
            err,
            "<stdin>:2: error: unknown command 'bogus' (try 'help')\n"
        );
    }

    #[test]
    fn exit_stops_reading() {
        let (status, out, err) = shell(b"echo a\r\nexpect 1 == 2\nquit\necho never\n");
        assert_eq!(status, 1);
        assert_eq!(out, "a\n");
        assert_eq!(err, "<stdin>:2: expect failed: 1 == 2 (1 == 2)\n");
    }

    #[test]
    fn block_keywords_are_refused_line_by_line() {
        let (status, out, err) = shell(b"repeat 2\necho a\nend\nif 1 == 1\nbreak\n");
        assert_eq!(status, EXIT_SCRIPT_ERROR);
        // The lines between run on their own: the shell has no blocks.
        assert_eq!(out, "a\n");
        let why = "works only in a script file, where blocks (repeat, if, every ... end) and \
                   break are read whole before they run; the shell takes one line at a time";
        assert_eq!(
            err,
            format!(
                "<stdin>:1: error: 'repeat' {why}\n<stdin>:3: error: 'end' {why}\n\
                 <stdin>:4: error: 'if' {why}\n<stdin>:5: error: 'break' {why}\n"
            )
        );
        let (_, _, err) = shell(b"every 1s for 2s\nelse\n");
        assert!(err.contains("'every' works only in a script file"), "{err}");
        assert!(err.contains("'else' works only in a script file"), "{err}");
    }

    #[test]
    fn invalid_utf8_and_missing_final_newline() {
        let (status, out, _) = shell(b"echo \xff\xfe\necho end");
        assert_eq!(status, 0);
        assert_eq!(out, "\u{fffd}\u{fffd}\nend\n");
        let (status, out, err) = shell(b"");
        assert_eq!((status, out.as_str(), err.as_str()), (0, "", ""));
    }
}
