//! The memcgsim script language: a small shell-like language that drives a simulated
//! machine through its virtual cgroupfs, as one would drive a real system
//! (`echo 30M > /A/memory.max`, `cat /A/memory.stat`), starts simulated tasks and checks
//! values with `expect`. `docs/SCRIPTING.md` is the user's reference.
//!
//! - [`lexer`] splits a line into words (quotes, comments);
//! - [`parser`] turns words into a [`Command`];
//! - [`value`] parses `expect` operands and implements the comparisons;
//! - [`path`] resolves paths against the working directory;
//! - [`interp`] runs commands against a [`memcgsim_cgroupfs::System`];
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
    expand_script, parse_line, Command, Expr, RunSpec, ScriptLine, Target, COMMANDS, HELP,
};
pub use shell::{is_exit_line, run_shell_input, shell_line};
pub use value::{values_close, CmpOp, Value};
