//! The native half of the `memcgsim` Python package (python/memcgsim, which wraps it with
//! type hints and docstrings): a simulated machine driven as the script language drives it,
//! and runs of scenario files.
//!
//! A front end, like the binary: it calls the script interpreter, cgroupfs and the experiment
//! runner and adds no model code. Errors become Python exceptions (OSError with the kernel's
//! errno for a file operation of the machine, OSError with the host's errno for a scenario,
//! trace or output file that cannot be read or written, ValueError for bad input); a panic
//! becomes PanicException rather than ending the interpreter.

use std::io::Write;

use memcgsim_cgroupfs::{Errno, TaskOutcome};
use memcgsim_experiment::{load, run_variant};
use memcgsim_model::text::{clip_words, strerror};
use memcgsim_model::units::parse_duration_ns;
use memcgsim_script::{Command, Interpreter, RunSpec};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The OSError a failed file operation raises: Linux's errno number, strerror's text and the
/// path, so that Python picks the subclass (FileNotFoundError for ENOENT, ...).
fn os_error(e: Errno, path: &str) -> PyErr {
    PyOSError::new_err((e.code(), e.message(), path.to_string()))
}

/// The OSError for a file of the host that cannot be read: its errno, strerror's text and
/// its path, as Python's own open() raises it.
fn host_error(e: &std::io::Error, path: &str) -> PyErr {
    match e.raw_os_error() {
        Some(code) => PyOSError::new_err((code, strerror(e), path.to_string())),
        None => PyOSError::new_err(format!("{path}: {e}")),
    }
}

/// The error of a scenario's load or run: OSError with the errno when a file of the host
/// could not be read or written (a trace, an output folder: the message carries the
/// system's `(os error N)`, which Python's subclass follows), else ValueError; the message
/// names the file and line and what is wrong.
fn run_error(message: String) -> PyErr {
    let message = clip_words(&message).into_owned();
    let Some(at) = message.find(" (os error ") else {
        return PyValueError::new_err(message);
    };
    let rest = &message[at + " (os error ".len()..];
    let Some((code, tail)) = rest.split_once(')') else {
        return PyValueError::new_err(message);
    };
    match code.parse::<i32>() {
        Ok(code) => PyOSError::new_err((code, format!("{}{tail}", &message[..at]))),
        Err(_) => PyValueError::new_err(message),
    }
}

/// Check that a scenario file can be read before it is loaded, so that a missing or
/// unreadable one raises the OSError subclass of its errno with its path.
fn readable(path: &str) -> PyResult<()> {
    let f = std::fs::File::open(path).map_err(|e| host_error(&e, path))?;
    match f.metadata() {
        Ok(m) if m.is_dir() => Err(host_error(
            &std::io::Error::from_raw_os_error(Errno::EISDIR.code()),
            path,
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(host_error(&e, path)),
    }
}

/// How a task ended: (name, shell status (128 + 9 when killed), killed, the cgroup whose OOM
/// killed it ("" for a machine-wide OOM, None when not an OOM kill), elapsed ns, the failed
/// system call it reported before it exited); the status is None for a task that holds its
/// memory.
type TaskEndTuple = (
    String,
    Option<i32>,
    bool,
    Option<String>,
    u64,
    Option<String>,
);

/// A machine of the model with its cgroup filesystem (one script interpreter's machine).
#[pyclass(unsendable, module = "memcgsim._memcgsim", name = "Machine")]
struct Machine {
    interp: Interpreter,
    line: usize,
}

impl Machine {
    /// Run one parsed command; its regular output is dropped, its error text (bash-style
    /// complaints) returned.
    fn exec(&mut self, cmd: &Command) -> PyResult<String> {
        self.line += 1;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        self.interp
            .exec(self.line, cmd, &mut out, &mut err)
            .map_err(|e| PyValueError::new_err(clip_words(&e.message).into_owned()))?;
        Ok(String::from_utf8_lossy(&err).trim_end().to_string())
    }

    fn end_of(&mut self, name: &str) -> PyResult<TaskEndTuple> {
        let pid = self
            .interp
            .task_pid(name)
            .ok_or_else(|| PyValueError::new_err(format!("no task named '{name}'")))?;
        let sys = self.sys()?;
        match sys.task_end(pid) {
            Some(end) => {
                let killed = matches!(end.outcome, TaskOutcome::Killed);
                let oom = end.oom.map(|cg| cg.unwrap_or_default());
                Ok((
                    name.to_string(),
                    Some(end.outcome.shell_status()),
                    killed,
                    oom,
                    end.elapsed_ns,
                    end.error.map(|e| e.to_string()),
                ))
            }
            None => Ok((name.to_string(), None, false, None, 0, None)),
        }
    }

    fn sys(&mut self) -> PyResult<&mut memcgsim_cgroupfs::System> {
        self.interp
            .boot()
            .map_err(|e| PyRuntimeError::new_err(format!("machine: {e}")))
    }
}

#[pymethods]
impl Machine {
    /// Boot a machine with these `KEY=VALUE` settings (the script `machine` line's keys).
    #[new]
    fn new(settings: Vec<(String, String)>) -> PyResult<Self> {
        let mut interp = Interpreter::new("<python>");
        interp.set_machine_overrides(settings);
        interp
            .boot()
            .map_err(|e| PyValueError::new_err(format!("machine: {}", clip_words(&e))))?;
        Ok(Machine { interp, line: 0 })
    }

    fn mkdir(&mut self, path: &str) -> PyResult<()> {
        self.sys()?.mkdir(path).map_err(|e| os_error(e, path))
    }

    fn rmdir(&mut self, path: &str) -> PyResult<()> {
        self.sys()?.rmdir(path).map_err(|e| os_error(e, path))
    }

    fn write(&mut self, path: &str, value: &str) -> PyResult<()> {
        self.sys()?
            .write(path, value)
            .map_err(|e| os_error(e, path))
    }

    fn read(&mut self, path: &str) -> PyResult<String> {
        self.sys()?.read(path).map_err(|e| os_error(e, path))
    }

    fn listdir(&mut self, path: &str) -> PyResult<Vec<String>> {
        self.sys()?.list(path).map_err(|e| os_error(e, path))
    }

    /// Start a workload in a cgroup: in the background (returns None), or in the foreground,
    /// returning how it ended (or that it holds its memory).
    #[pyo3(signature = (cgroup, workload, args, background, name, oom_score_adj))]
    fn run(
        &mut self,
        cgroup: String,
        workload: String,
        args: Vec<String>,
        background: bool,
        name: Option<String>,
        oom_score_adj: i32,
    ) -> PyResult<Option<TaskEndTuple>> {
        if !(-1000..=1000).contains(&oom_score_adj) {
            return Err(PyValueError::new_err(format!(
                "oom_score_adj {oom_score_adj} is outside -1000..=1000"
            )));
        }
        let spec = RunSpec {
            background,
            name,
            oom_score_adj,
            cgroup: cgroup.clone(),
            workload,
            args,
        };
        let task = spec.task_name().to_string();
        let complaint = self.exec(&Command::Run(spec))?;
        if let Some(("run", Err(e))) = self.interp.last_op() {
            return Err(os_error(e, &cgroup));
        }
        if background {
            return Ok(None);
        }
        if !complaint.is_empty() && self.interp.last_foreground().is_none() {
            // The wait stopped before the task ended or held (the run's wait limit).
            return Err(PyRuntimeError::new_err(complaint));
        }
        self.end_of(&task).map(Some)
    }

    /// Advance virtual time by `ns` nanoseconds.
    fn sleep_ns(&mut self, ns: u64) -> PyResult<()> {
        self.exec(&Command::Sleep(ns)).map(|_| ())
    }

    /// Wait for a background task to end (or to hold its memory).
    fn wait(&mut self, name: String) -> PyResult<TaskEndTuple> {
        let complaint = self.exec(&Command::Wait(name.clone()))?;
        let end = self.end_of(&name)?;
        if end.1.is_none() && !complaint.is_empty() && !complaint.contains("holding") {
            return Err(PyRuntimeError::new_err(complaint));
        }
        Ok(end)
    }

    /// SIGKILL a task.
    fn kill(&mut self, name: String) -> PyResult<()> {
        let pid = self
            .interp
            .task_pid(&name)
            .ok_or_else(|| PyValueError::new_err(format!("no task named '{name}'")))?;
        let sys = self.sys()?;
        let r = sys.kill(pid);
        sys.advance(0);
        r.map_err(|e| os_error(e, &name))
    }

    /// Run script text on this machine: (exit status, output, error output, failed expects).
    fn script(&mut self, text: &str) -> (i32, String, String, u64) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let before = self.interp.expect_failures();
        let status = self.interp.run(text, &mut out, &mut err);
        let _ = out.flush();
        (
            status,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
            self.interp.expect_failures() - before,
        )
    }

    /// Virtual time since boot, in nanoseconds.
    fn now_ns(&mut self) -> PyResult<u64> {
        Ok(self.sys()?.now_ns())
    }
}

/// A duration as the script language writes it ("1s", "250ms", "2m") in nanoseconds.
#[pyfunction]
fn duration_ns(text: &str) -> PyResult<u64> {
    parse_duration_ns(text).map_err(|e| PyValueError::new_err(clip_words(&e).into_owned()))
}

/// One run's summary (summary.json's text) and its time series in long format, as columns.
type RunColumns = (String, Vec<f64>, Vec<String>, Vec<String>, Vec<u64>);

/// Run one variant of a scenario file with one seed (defaults: the base variant, the first
/// of the scenario's seeds), with the interpreter's lock released meanwhile.
#[pyfunction]
#[pyo3(signature = (path, variant=None, seed=None))]
fn run_scenario(
    py: Python<'_>,
    path: String,
    variant: Option<String>,
    seed: Option<u64>,
) -> PyResult<RunColumns> {
    readable(&path)?;
    py.detach(move || {
        let sc = load(&path)?;
        let variant = variant.unwrap_or_else(|| sc.base.clone());
        let seed = match seed {
            Some(s) => s,
            None => *sc.run.seeds.first().ok_or("the scenario has no seeds")?,
        };
        let r = run_variant(&sc, &variant, seed, false)?;
        let summary = r.summary_json()?;
        let (mut t, mut cg, mut key, mut val) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (time, k, v) in r.series.samples() {
            t.push(time as f64 / 1e9);
            cg.push(k.cgroup.clone());
            key.push(k.key.clone());
            val.push(v);
        }
        Ok::<_, String>((summary, t, cg, key, val))
    })
    .map_err(run_error)
}

/// A whole sweep on `jobs` local threads (the interpreter's lock released): the table as
/// JSON, `{"columns": [...], "rows": [[...], ...]}`.
#[pyfunction]
fn sweep_table(py: Python<'_>, path: String, jobs: usize) -> PyResult<String> {
    readable(&path)?;
    py.detach(move || {
        let sc = load(&path)?;
        let t = memcgsim_experiment::sweep::sweep(&sc, jobs.max(1), &|_| {})?;
        serde_json::to_string(&t).map_err(|e| e.to_string())
    })
    .map_err(run_error)
}

/// The points of the sweep of a scenario given as text (`name` names it in errors): a
/// (variant, values, seed) tuple per run, in table order.
#[pyfunction]
fn sweep_points(text: &str, name: &str) -> PyResult<Vec<(String, Vec<String>, u64)>> {
    let sc = memcgsim_experiment::parse(text, name).map_err(run_error)?;
    Ok(memcgsim_experiment::sweep::points(&sc)
        .into_iter()
        .map(|p| (p.variant, p.values, p.seed))
        .collect())
}

/// Run point `index` of the sweep of a scenario given as text, and return its row as JSON
/// `[[column, value], ...]`: what a remote worker (a Ray task) runs, needing only the text.
#[pyfunction]
fn sweep_row(py: Python<'_>, text: String, name: String, index: usize) -> PyResult<String> {
    py.detach(move || {
        let sc = memcgsim_experiment::parse(&text, &name)?;
        let pts = memcgsim_experiment::sweep::points(&sc);
        let p = pts.get(index).ok_or_else(|| {
            format!(
                "{name}: the sweep has {} points, not {}",
                pts.len(),
                index + 1
            )
        })?;
        let r = memcgsim_experiment::sweep::run_point(&sc, p)?;
        let row = memcgsim_experiment::sweep::row(&sc, p, &r);
        serde_json::to_string(&row).map_err(|e| e.to_string())
    })
    .map_err(run_error)
}

/// Put rows made by `sweep_row` (JSON each, in point order) into a table as the local
/// backend makes it (JSON), so that both give the same table.
#[pyfunction]
fn sweep_assemble(rows: Vec<String>) -> PyResult<String> {
    let mut parsed = Vec::with_capacity(rows.len());
    for r in rows {
        let row: Vec<(String, serde_json::Value)> =
            serde_json::from_str(&r).map_err(|e| PyValueError::new_err(e.to_string()))?;
        parsed.push(row);
    }
    let t = memcgsim_experiment::sweep::Table::from_rows(parsed);
    serde_json::to_string(&t).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymodule]
fn _memcgsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Machine>()?;
    m.add_function(wrap_pyfunction!(duration_ns, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_table, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_points, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_row, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_assemble, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
