//! What the script crate's integration tests share: running a script on a fresh machine
//! with the invariant checker on, and what it printed.

use memcgsim_script::Interpreter;

pub struct Run {
    pub status: i32,
    pub out: String,
    pub err: String,
}

pub fn run_with(mut interp: Interpreter, text: &str) -> Run {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = interp.run(text, &mut out, &mut err);
    Run {
        status,
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
    }
}

/// Run `text` as the script `t.mcg`, checking the model's invariants after every step.
pub fn run(text: &str) -> Run {
    let mut interp = Interpreter::new("t.mcg");
    interp.set_check_invariants(true);
    run_with(interp, text)
}
