//! The interface between the model and the programs simulated tasks run.
//!
//! A program is a state machine: the scheduler calls [`Program::step`] repeatedly while the
//! task has CPU time left in its quantum; each step does a small, bounded amount of work
//! through the [`TaskCtx`] (touch pages, read files, map memory) and says what comes next.

use crate::task::TaskCtx;

/// A simulated process id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid(pub u32);

impl std::fmt::Display for Pid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How a task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskOutcome {
    /// exit(code).
    Exited(i32),
    /// Killed by SIGKILL (the OOM killer, or `kill`).
    Killed,
    /// Killed by SIGINT, whose default action ends the process (Ctrl-C on the foreground
    /// task in the shell).
    Interrupted,
}

impl TaskOutcome {
    /// The status a shell reports for it: the exit code, or 128 + the signal number.
    pub fn shell_status(self) -> i32 {
        match self {
            TaskOutcome::Exited(c) => c,
            TaskOutcome::Killed => 128 + 9,
            TaskOutcome::Interrupted => 128 + 2,
        }
    }
}

impl std::fmt::Display for TaskOutcome {
    /// `exit N`, `killed` or `interrupted`, as reports and comparisons print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskOutcome::Exited(c) => write!(f, "exit {c}"),
            TaskOutcome::Killed => f.write_str("killed"),
            TaskOutcome::Interrupted => f.write_str("interrupted"),
        }
    }
}

/// What a program wants after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Keep running (the scheduler calls `step` again, in this quantum if time is left).
    Continue,
    /// Sleep for this many nanoseconds of virtual time, then continue.
    Sleep(u64),
    /// The work is done; stay alive, keeping all memory, until killed.
    Hold,
    /// Exit with this status; the task's memory is freed.
    Exit(i32),
}

/// Why a memory operation did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The task has been killed (e.g. chosen by the OOM killer); return from `step` at once.
    Killed,
    /// The access was outside any mapping (a bug in the program).
    Segv,
    /// The task went to sleep inside the operation (reclaim throttling, or a wait for a
    /// page's writeback) or must give its CPU up; nothing was done, or (a swap-in whose
    /// readahead had to wait) the page is in place. Return from `step` at once: the
    /// scheduler runs the task again when the sleep ends, and the next step retries the
    /// same operation.
    Blocked,
}

/// A program run by a simulated task.
pub trait Program {
    /// The command name (`comm`), e.g. "anon".
    fn name(&self) -> &str;
    /// Do a bounded amount of work.
    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step;
}

/// A program that does nothing and holds, for tests that drive a task's context by hand.
#[cfg(test)]
pub(crate) struct Idle;

#[cfg(test)]
impl Program for Idle {
    fn name(&self) -> &str {
        "idle"
    }
    fn step(&mut self, _cx: &mut TaskCtx<'_>) -> Step {
        Step::Hold
    }
}
