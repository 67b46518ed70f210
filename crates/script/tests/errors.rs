//! Errors that explain: a task that cannot start says why (the overcommit check and its
//! sizes), `$(( ))` refuses division by zero and overflow in words, a malformed `expect`
//! says what it expected, group names follow the kernel, /proc has no mkdir, and a long
//! token is cut in every message, which names its file and line.

use memcgsim_script::{run_script, Interpreter, EXIT_EXPECT_FAILED, EXIT_OK, EXIT_SCRIPT_ERROR};
use proptest::prelude::*;

mod common;

use common::{run, run_with};

/// The message of the script error `text` stops with (its only stderr line).
#[track_caller]
fn script_error(text: &str) -> String {
    let r = run(text);
    assert_eq!(r.status, EXIT_SCRIPT_ERROR, "{text:?}: {}", r.err);
    assert_eq!(r.err.lines().count(), 1, "{}", r.err);
    r.err.trim_end().to_string()
}

const OVERCOMMIT: &str = "cannot allocate 3.0G: more than RAM + swap";

#[test]
fn a_task_refused_by_the_overcommit_check_says_why() {
    let r = run("machine memory=1G swap=0\nrun / anon 3G\nexpect exit 1\n");
    assert_eq!(r.status, EXIT_OK, "{}", r.err);
    let line = r.err.trim_end();
    assert!(
        line.starts_with(&format!("t.mcg:2: anon: {OVERCOMMIT} (")),
        "{line}"
    );
    assert!(
        line.ends_with(" + SwapTotal 0B) under vm.overcommit_memory=0 (mmap: ENOMEM)"),
        "{line}"
    );
    assert_eq!(r.err.lines().count(), 1);

    // The expectation that fails says why too; the exit status stays 1.
    let r = run("machine memory=1G swap=512M\nrun --name big / anon 3G\nexpect exit 0\n");
    assert_eq!(r.status, EXIT_EXPECT_FAILED);
    let lines: Vec<&str> = r.err.lines().collect();
    assert_eq!(lines.len(), 2, "{}", r.err);
    assert!(
        lines[0].starts_with(&format!("t.mcg:2: big: {OVERCOMMIT} (")),
        "{}",
        r.err
    );
    assert!(lines[0].contains(" + SwapTotal 512.0M) under"), "{}", r.err);
    assert!(
        lines[1].starts_with(&format!(
            "t.mcg:3: expect failed: exit 0 (task 'big' exited with status 1: {OVERCOMMIT}"
        )),
        "{}",
        r.err
    );

    // In the background, the reason comes with wait; with reports on, before the end.
    let mut interp = Interpreter::new("t.mcg");
    interp.set_report_tasks(true);
    let r = run_with(
        interp,
        "machine memory=1G swap=0\nrun --bg / anon 3G\nsleep 1s\nwait anon\n",
    );
    let lines: Vec<&str> = r.err.lines().collect();
    assert_eq!(lines.len(), 2, "{}", r.err);
    assert!(
        lines[0].starts_with(&format!("t.mcg:4: anon: {OVERCOMMIT}")),
        "{}",
        r.err
    );
    assert!(
        lines[1].starts_with("t.mcg:4: anon: exited with status 1 after"),
        "{}",
        r.err
    );

    // Within RAM + swap, nothing is said.
    let r = run("machine memory=1G swap=2G\nrun / anon 16M\nexpect exit 0\n");
    assert_eq!((r.status, r.err.as_str()), (EXIT_OK, ""));
}

#[test]
fn division_by_zero_is_an_error_that_says_so() {
    for (line, want) in [
        ("echo $((1/0))", "division by zero in 1 / 0"),
        ("echo $(( 1 / 0 ))", "division by zero in 1 / 0"),
        ("echo $((7%0))", "division by zero in 7 % 0"),
        ("let x = $(( 5 % 0 ))", "division by zero in 5 % 0"),
        (
            "let z = 0\necho $(( 2 * 3 / $z ))",
            "division by zero in 6 / 0",
        ),
    ] {
        let e = script_error(&format!("{line}\n"));
        assert!(
            e.ends_with(&format!("error: in $(( )): {want}")),
            "{line}: {e}"
        );
        assert!(e.starts_with("t.mcg:"), "{e}");
    }
}

#[test]
fn overflow_is_an_error_that_says_so() {
    let range = "values are 64-bit, from -9223372036854775808 to 9223372036854775807";
    for (line, want) in [
        (
            "echo $(( 9223372036854775807 + 1 ))",
            "9223372036854775807 + 1 overflows",
        ),
        ("echo $(( max + 1 ))", "9223372036854775807 + 1 overflows"),
        (
            "echo $(( -9223372036854775808 - 1 ))",
            "-9223372036854775808 - 1 overflows",
        ),
        (
            "echo $(( 0 - -9223372036854775808 ))",
            "0 - -9223372036854775808 overflows",
        ),
        ("echo $(( 4G * 4G ))", "4294967296 * 4294967296 overflows"),
        (
            "echo $(( -9223372036854775808 / -1 ))",
            "-9223372036854775808 / -1 overflows",
        ),
        (
            "let m = -9223372036854775808\necho $(( $m*-1 ))",
            "-9223372036854775808 * -1 overflows",
        ),
    ] {
        let e = script_error(&format!("{line}\n"));
        assert!(
            e.ends_with(&format!("error: in $(( )): {want}: {range}")),
            "{line}: {e}"
        );
    }
    // The exact limits are reached without error, and a negative term stays exact.
    let r = run("echo $(( 9223372036854775806 + 1 ))\n\
                 echo $(( -1 - -9223372036854775808 ))\n\
                 echo $(( -9223372036854775808 % -1 ))\n\
                 echo $((2*-3)) $((7%3)) $((-7%3)) $((1+2*3-4/2))\n");
    assert_eq!(r.status, EXIT_OK, "{}", r.err);
    assert_eq!(
        r.out,
        "9223372036854775807\n9223372036854775807\n0\n-6 1 -1 5\n"
    );
}

#[test]
fn malformed_expect_says_what_it_expected() {
    let usage = "; usage: expect A OP B | close(A, B, PCT) | exit N | killed | errno NAME";
    for (line, want) in [
        (
            "expect 1<=2",
            "expect: write the comparison with spaces around the operator: expect 1 <= 2",
        ),
        (
            "expect 1 <=2",
            "expect: write the comparison with spaces around the operator: expect 1 <= 2",
        ),
        (
            "expect memory.current>=30M",
            "expect: write the comparison with spaces around the operator: \
             expect memory.current >= 30M",
        ),
        (
            "expect 1=1",
            "expect: write the comparison with spaces around the operator: expect 1 == 1",
        ),
        ("expect 1 ==", "expect 1 ==: no value after '=='"),
        ("expect == 1", "expect == 1: no value before '=='"),
        (
            "expect 1 2",
            "expect: no operator between '1' and '2' (use == != < <= > >=)",
        ),
        (
            "expect 1 == 1 == 1",
            "expect: a comparison is three words, A OP B, and this has 5",
        ),
        (
            "expect exit",
            "expect exit: which status? Write expect exit N",
        ),
        ("expect exit 1 2", "expect exit takes one status, N"),
        ("expect killed now", "expect killed takes nothing after it"),
        (
            "expect errno",
            "expect errno: which errno? Write expect errno NAME, or 0 for none",
        ),
        (
            "expect poll",
            "expect poll takes one of event, timeout or error",
        ),
        ("expect bogus", "expect: 'bogus' is no condition"),
    ] {
        let e = script_error(&format!("{line}\n"));
        assert_eq!(e, format!("t.mcg:1: error: {want}{usage}"), "{line}");
    }
    for (line, why) in [
        ("expect close", "the values go between parentheses"),
        (
            "expect close(a, b)",
            "three values separated by commas, got 2",
        ),
        (
            "expect close(a, b, 3, 4)",
            "three values separated by commas, got 4",
        ),
        ("expect close(a, , 3)", "an empty value"),
        ("expect close(a b, c, 3)", "a comma missing in 'a b'"),
    ] {
        let e = script_error(&format!("{line}\n"));
        assert_eq!(
            e,
            format!("t.mcg:1: error: usage: expect close(A, B, PCT) ({why})"),
            "{line}"
        );
    }
    // The same words after `if`, named as if.
    let e = script_error("if 1<=2\nend\n");
    assert!(
        e.starts_with(
            "t.mcg:1: error: if: write the comparison with spaces around the operator: if 1 <= 2; usage: if EXPR"
        ),
        "{e}"
    );
}

#[test]
fn group_names_follow_the_kernel() {
    // Linux 6.1's cgroupfs takes a 300-byte name (kernfs has no NAME_MAX); a path that
    // does not fit PATH_MAX is too long.
    let long = "g".repeat(5000);
    let r = run(&format!(
        "mkdir /{long}\nexpect errno ENAMETOOLONG\nmkdir /{}\nexpect errno 0\n",
        "h".repeat(300)
    ));
    assert_eq!(r.status, EXIT_OK, "{}", r.err);
    // The name is cut in the message, which keeps the kernel's text.
    assert_eq!(
        r.err,
        format!(
            "t.mcg:1: mkdir: cannot create directory '/{}... (5001 bytes)': File name too long\n",
            "g".repeat(76)
        )
    );
    // A NUL is no part of a name.
    let r = run("mkdir \"/a\0b\"\nexpect errno EINVAL\n");
    assert_eq!(r.status, EXIT_OK, "{}", r.err);
    assert!(r.err.ends_with(": Invalid argument\n"), "{}", r.err);
}

#[test]
fn proc_refuses_mkdir_as_linux_does() {
    let r = run("mkdir /proc/foo\nexpect errno ENOENT\n\
                 mkdir /proc/meminfo\nexpect errno EEXIST\n\
                 mkdir /proc/sys/vm/x\nexpect errno ENOENT\n\
                 mkdir /proc/nope/x\nexpect errno ENOENT\n");
    assert_eq!(r.status, EXIT_OK, "{}", r.err);
    assert_eq!(
        r.err,
        "t.mcg:1: mkdir: cannot create directory '/proc/foo': No such file or directory\n\
         t.mcg:3: mkdir: cannot create directory '/proc/meminfo': File exists\n\
         t.mcg:5: mkdir: cannot create directory '/proc/sys/vm/x': No such file or directory\n\
         t.mcg:7: mkdir: cannot create directory '/proc/nope/x': No such file or directory\n"
    );
}

#[test]
fn long_tokens_are_cut_in_every_message() {
    let big = "x".repeat(10 << 20);
    let cut = format!("{}... (10485760 bytes)", "x".repeat(77));
    for (line, want) in [
        (
            format!("{big}\n"),
            format!("unknown command '{cut}' (try 'help')"),
        ),
        (
            format!("cd /{big}\n"),
            format!(
                "cd: /{}... (10485761 bytes): No such file or directory",
                "x".repeat(76)
            ),
        ),
        (format!("expect {big} == 1\n"), String::new()),
        (format!("sleep {big}\n"), String::new()),
        (format!("machine {big}\n"), String::new()),
        (format!("echo $(( 1 + {big}1 ))\n"), String::new()),
        (format!("run / anon {big}\n"), String::new()),
        (format!("help {big}\n"), String::new()),
    ] {
        let r = run(&line);
        assert!(
            r.err.len() < 600,
            "{}...: {} bytes",
            &line[..20],
            r.err.len()
        );
        assert!(
            r.err.starts_with("t.mcg:1: "),
            "{}",
            &r.err[..r.err.len().min(200)]
        );
        if !want.is_empty() {
            assert_eq!(r.err, format!("t.mcg:1: error: {want}\n"));
        }
    }
    // A failed operation's message is cut too, and so is a failed expectation's.
    let r = run(&format!("cat /{big}\nexpect /{big} == 1\n"));
    assert_eq!(r.status, EXIT_EXPECT_FAILED);
    assert!(r.err.len() < 600, "{} bytes", r.err.len());
    assert!(r
        .err
        .starts_with(&format!("t.mcg:1: cat: /{}", "x".repeat(76))));
    assert!(
        r.err.contains("\nt.mcg:2: expect failed: "),
        "{}",
        &r.err[..300]
    );
}

#[test]
fn script_errors_name_file_and_line() {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = run_script("dir/s.mcg", "echo a\n\necho $((1/0))\n", &mut out, &mut err);
    assert_eq!(status, EXIT_SCRIPT_ERROR);
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "dir/s.mcg:3: error: in $(( )): division by zero in 1 / 0\n"
    );
    // In a repeat, the line of the file, not of the expansion.
    let r = run("repeat 3\necho $(( 6 / (2 - $i) ))\nend\n");
    assert!(r.err.starts_with("t.mcg:2: error:"), "{}", r.err);
    let r = run("repeat 3\nlet d = $(( 2 - $i ))\necho $(( 6 / $d ))\nend\n");
    assert_eq!(r.out, "3\n6\n");
    assert_eq!(
        r.err,
        "t.mcg:3: error: in $(( )): division by zero in 6 / 0\n"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `$(( a OP b ))` is the exact result when it is a 64-bit integer, and otherwise an error
    /// that names the operation; the glued form agrees with the spaced one.
    #[test]
    fn arithmetic_is_exact_or_an_error(a in any::<i64>(), b in any::<i64>(), op in 0usize..5) {
        let sym = ['+', '-', '*', '/', '%'][op];
        let exact = match sym {
            '+' => a.checked_add(b),
            '-' => a.checked_sub(b),
            '*' => a.checked_mul(b),
            '/' => a.checked_div(b),
            _ if b == 0 => None,
            _ => Some(a.checked_rem(b).unwrap_or(0)),
        };
        for text in [format!("echo $(( {a} {sym} {b} ))\n"), format!("echo $(({a}{sym}{b}))\n")] {
            let r = run(&text);
            match exact {
                Some(v) => {
                    prop_assert_eq!(r.status, EXIT_OK, "{}: {}", text, r.err);
                    prop_assert_eq!(&r.out, &format!("{v}\n"));
                }
                None => {
                    prop_assert_eq!(r.status, EXIT_SCRIPT_ERROR, "{}", text);
                    let why = if b == 0 && (sym == '/' || sym == '%') {
                        format!("division by zero in {a} {sym} 0")
                    } else {
                        format!("{a} {sym} {b} overflows")
                    };
                    prop_assert!(r.err.contains(&why), "{}: {}", text, r.err);
                }
            }
        }
    }

    /// No line, however malformed, panics; every error it gives names the file and line.
    #[test]
    fn any_expect_line_is_judged_or_explained(words in proptest::collection::vec("[0-9a-z<>=!:/@$ ]{0,6}", 0..5)) {
        let text = format!("expect {}\n", words.join(" "));
        let r = run(&text);
        if r.status == EXIT_SCRIPT_ERROR {
            prop_assert!(r.err.starts_with("t.mcg:1: error: "), "{}", r.err);
            prop_assert!(r.err.len() > "t.mcg:1: error: ".len() + 10, "{}", r.err);
        }
    }
}
