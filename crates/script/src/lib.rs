//! The memcgsim script language: a small shell-like language that drives a simulated
//! machine through its virtual cgroupfs, as one would drive a real system
//! (`echo 30M > /A/memory.max`, `cat /A/memory.stat`), starts simulated tasks and checks
//! values with `expect`. `docs/SCRIPTING.md` is the user's reference.
//!
//! - [`lexer`] splits a line into words (quotes, comments);
//! - [`parser`] turns words into a [`Command`], and a script file into a tree of [`Stmt`]s
//!   (plain lines and the blocks `repeat`, `if`/`else`, `every` ... `end`, and `break`);
//! - [`value`] parses `expect` operands and implements the comparisons;
//! - [`path`] resolves paths against the working directory;
//! - [`interp`] runs commands and blocks against a [`memcgsim_cgroupfs::System`];
//! - [`shell`] runs lines one at a time, going on after script errors.

pub mod interp;
pub mod lexer;
pub mod parser;
pub mod path;
pub mod shell;
pub mod value;

pub use interp::{
    judge, operands, run_script, Interpreter, ScriptError, DEFAULT_WAIT_LIMIT_NS,
    EXIT_EXPECT_FAILED, EXIT_OK, EXIT_SCRIPT_ERROR,
};
pub use parser::{
    expand_script, parse_line, parse_script, Command, Cond, Every, EveryEnd, Expr, PollWant,
    RunSpec, ScriptLine, Stmt, Target, COMMANDS, HELP,
};
pub use shell::{is_exit_line, run_shell_input, shell_line};
pub use value::{values_close, CmpOp, Value, NOW};
