//! Side-by-side comparison of the model and the kernel, line by line: each `expect` judged on
//! both (by the same judge), each `cat` compared value by value, run outcomes and errnos. It
//! also collects every value both sides read into the report's [`ValueTable`] (`--values`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use memcgsim_model::{Errno, TaskOutcome};
use memcgsim_script::path::resolve;
use memcgsim_script::{judge, operands, Command, Interpreter, PollWant, Target, Value};

use crate::translate::{parse_kernel_value, Translation};
use crate::values::{cat_rows, Missing, ValueRow, ValueTable};

/// What the kernel run printed for one script line.
#[derive(Default, Debug, Clone)]
pub struct KernelLine {
    pub out: Vec<String>,
    pub vals: BTreeMap<usize, String>,
    pub errno: Option<String>,
    pub exit: Option<i32>,
    pub catfail: bool,
    /// What a `poll` returned.
    pub poll: Option<PollWant>,
}

/// Parse the console into per-line records.
pub fn parse_console(output: &str) -> BTreeMap<usize, KernelLine> {
    let mut m: BTreeMap<usize, KernelLine> = BTreeMap::new();
    for line in output.lines() {
        let Some(rest) = line.strip_prefix("@@MCG L") else {
            continue;
        };
        let mut it = rest.splitn(3, ' ');
        let (Some(n), Some(kind)) = (it.next(), it.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else { continue };
        let arg = it.next().unwrap_or("");
        let e = m.entry(n).or_default();
        match kind {
            "OUT" => e.out.push(arg.to_string()),
            "VAL" => {
                let mut p = arg.splitn(2, ' ');
                if let (Some(i), Some(v)) = (p.next(), p.next()) {
                    if let Ok(i) = i.parse() {
                        e.vals.insert(i, v.trim().to_string());
                    }
                }
            }
            "ERRNO" => e.errno = Some(arg.trim().to_string()),
            "EXIT" => e.exit = arg.trim().parse().ok(),
            "CATFAIL" => e.catfail = true,
            "POLL" => e.poll = PollWant::from_name(arg.trim()),
            _ => {}
        }
    }
    m
}

fn outcome_of_status(st: i32) -> TaskOutcome {
    // The shell reports death by SIGKILL as 128 + 9.
    if st == 128 + 9 {
        TaskOutcome::Killed
    } else {
        TaskOutcome::Exited(st)
    }
}

/// Options of the comparison.
#[derive(Clone, Debug)]
pub struct CompareOpts {
    /// Relative tolerance for values, in percent.
    pub tolerance_pct: f64,
    /// Absolute slack for values (bytes or counts): differences up to this always agree.
    pub slack: u64,
    /// Count differences in keyed files (memory.stat, ...) toward disagreement.
    pub strict: bool,
}

/// The comparison of one script.
pub struct Report {
    pub text: String,
    pub expects: usize,
    pub expect_disagreements: usize,
    pub values: usize,
    pub value_disagreements: usize,
    /// Writes and polls whose outcome (errno, poll result) differs between the two sides.
    pub outcome_disagreements: usize,
    pub model_failures: usize,
    pub kernel_failures: usize,
    /// Every value both sides read, for `--values`.
    pub table: ValueTable,
}

impl Report {
    pub fn agrees(&self) -> bool {
        self.expect_disagreements == 0
            && self.value_disagreements == 0
            && self.outcome_disagreements == 0
    }
}

/// What a compared value measures: the slack (given in bytes) applies to sizes only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    /// /proc/meminfo's kB.
    Kib,
    /// Pages and events (/proc/vmstat, memory.events, memory.stat's event keys, failcnt).
    Count,
    /// Microseconds: the stall totals of memory.pressure and /proc/pressure.
    Micros,
}

/// The unit of a file's value, or of one key of a keyed file.
pub fn unit_of(path: &str, key: Option<&str>) -> Unit {
    let file = path.rsplit('/').next().unwrap_or(path);
    if file == "meminfo" {
        return Unit::Kib;
    }
    if file == "vmstat"
        || file.starts_with("memory.events")
        || file == "memory.swap.events"
        || file.ends_with("failcnt")
        || file == "cgroup.stat"
        || file == "cgroup.events"
        || file == "memory.oom_control"
        || (path.contains("/proc/sys/") && !file.ends_with("_bytes"))
    {
        return Unit::Count;
    }
    if file.ends_with(".pressure") || path.starts_with("/proc/pressure/") {
        // `some.total` is microseconds; `some.avg10` a percentage (in hundredths).
        return match key {
            Some(k) if k.contains(".avg") => Unit::Count,
            _ => Unit::Micros,
        };
    }
    if file.ends_with("stat") {
        if let Some(k) = key {
            let k = k.strip_prefix("total_").unwrap_or(k);
            let event = ["pg", "thp_", "workingset_", "zswp", "swpin", "swpout"]
                .iter()
                .any(|p| k.starts_with(p));
            if event {
                return Unit::Count;
            }
        }
    }
    Unit::Bytes
}

/// The unit of a script VALUE; `vars` holds the units of the `let` names so far, `fds` the
/// files of the open fds.
fn unit_of_value(
    v: &Value,
    vars: &BTreeMap<String, Unit>,
    fds: &BTreeMap<String, String>,
) -> Option<Unit> {
    match v {
        Value::Int(_) => None,
        Value::File(p) => Some(unit_of(p, None)),
        Value::Key(p, k) => Some(unit_of(p, Some(k))),
        Value::Fd(name) => Some(fds.get(name).map_or(Unit::Bytes, |p| unit_of(p, None))),
        Value::Var(name) => vars.get(name).copied(),
    }
}

/// Whether two values agree: within the tolerance, or (sizes only) within the slack.
pub(crate) fn within(a: i64, b: i64, opts: &CompareOpts, unit: Unit) -> bool {
    let d = (a as i128 - b as i128).unsigned_abs();
    let m = (a.unsigned_abs().max(b.unsigned_abs())) as f64;
    let slack = match unit {
        Unit::Bytes => opts.slack,
        Unit::Kib => opts.slack / 1024,
        Unit::Count | Unit::Micros => 0,
    };
    d <= slack as u128 || d as f64 <= m * opts.tolerance_pct / 100.0 + 0.5
}

/// Count one compared single value (the model's, and the kernel's if it could be read): the
/// two as shown and the row's mark.
fn single_value(
    mv: i64,
    kv: Option<i64>,
    opts: &CompareOpts,
    unit: Unit,
    r: &mut Report,
) -> (String, String, &'static str) {
    r.values += 1;
    match kv {
        Some(kv) => {
            let ok = within(mv, kv, opts, unit);
            if !ok {
                r.value_disagreements += 1;
            }
            let mark = if ok { "" } else { "   <-- beyond tolerance" };
            (mv.to_string(), kv.to_string(), mark)
        }
        None => {
            r.value_disagreements += 1;
            (mv.to_string(), "(unreadable)".into(), "   <-- differs")
        }
    }
}

fn numbers(lines: &[String]) -> Vec<(String, Option<i64>)> {
    lines
        .iter()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [v] => (String::new(), parse_kernel_value(v).ok()),
                [k, v] => (
                    k.trim_end_matches(':').to_string(),
                    parse_kernel_value(v).ok(),
                ),
                _ => (l.clone(), None),
            }
        })
        .collect()
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        format!("{t}…")
    }
}

/// Run the model line by line and compare with the kernel's records.
pub fn compare(
    file: &str,
    tr: &Translation,
    kernel: &BTreeMap<usize, KernelLine>,
    opts: &CompareOpts,
) -> Report {
    let mut interp = Interpreter::new(file);
    // A `snapshot FILE` line writes the kernel's snapshot (ScriptResult::snapshots).
    interp.set_write_snapshots(false);
    let mut r = Report {
        text: String::new(),
        expects: 0,
        expect_disagreements: 0,
        values: 0,
        value_disagreements: 0,
        outcome_disagreements: 0,
        model_failures: 0,
        kernel_failures: 0,
        table: ValueTable::default(),
    };
    // The script's working directory, and the absolute path of each open fd, for the paths
    // of the values table.
    let mut cwd = String::from("/");
    let mut fd_abs: BTreeMap<String, String> = BTreeMap::new();
    let mut var_units: BTreeMap<String, Unit> = BTreeMap::new();
    let mut fd_files: BTreeMap<String, String> = BTreeMap::new();
    let mut k_last_fg: Option<(String, TaskOutcome)> = None;
    let mut k_last_op: Option<(&'static str, Result<(), Errno>)> = None;
    let mut k_last_poll: Option<PollWant> = None;
    let empty = KernelLine::default();
    let _ = writeln!(
        r.text,
        "{:>5}  {:<52} {:<30} kernel",
        "line", "command", "model"
    );
    for l in &tr.lines {
        let Some(cmd) = &l.cmd else { continue };
        let (n, raw) = (&l.line, &l.text);
        let k = kernel.get(&l.key).unwrap_or(&empty);
        // The model's operand values, read before the line runs (reads have no effect).
        let model_vals = match cmd {
            Command::Expect { expr, .. } => interp.operand_values(expr).ok(),
            _ => None,
        };
        if let Command::Open { name, path } = cmd {
            fd_files.insert(name.clone(), path.clone());
            fd_abs.insert(name.clone(), resolve(&cwd, path));
        }
        if let Command::Cd(p) = cmd {
            cwd = resolve(&cwd, p);
        }
        let mut out = Vec::new();
        let mut err = Vec::new();
        let res = interp.exec_line(*n, raw, &mut out, &mut err);
        let out = String::from_utf8_lossy(&out).to_string();
        let row = |model: String, kern: String, mark: &str, r: &mut Report| {
            let _ = writeln!(
                r.text,
                "{n:>5}  {:<52} {:<30} {kern}{mark}",
                short(raw.trim(), 52),
                short(&model, 30)
            );
        };
        if let Err(e) = res {
            row(
                format!("script error: {}", e.message),
                String::new(),
                "",
                &mut r,
            );
            break;
        }
        let errno_of = |s: &Option<String>| -> Option<Result<(), Errno>> {
            s.as_ref().map(|e| {
                if e == "0" {
                    Ok(())
                } else {
                    Err(Errno::from_name(e).unwrap_or(Errno::EINVAL))
                }
            })
        };
        match cmd {
            Command::Mkdir(_)
            | Command::Rmdir(_)
            | Command::Open { .. }
            | Command::Kill(_)
            | Command::Mount { .. }
            | Command::Umount(_)
            | Command::Rm(_) => {
                let what = match cmd {
                    Command::Mkdir(_) => "mkdir",
                    Command::Rmdir(_) => "rmdir",
                    Command::Open { .. } => "open",
                    Command::Mount { .. } => "mount",
                    Command::Umount(_) => "umount",
                    Command::Rm(_) => "rm",
                    _ => "kill",
                };
                if let Some(e) = errno_of(&k.errno) {
                    k_last_op = Some((what, e));
                }
            }
            Command::Echo {
                target: Some(_), ..
            } => {
                if let Some(e) = errno_of(&k.errno) {
                    k_last_op = Some(("write", e));
                }
                let m = interp.last_op().map(|(_, r)| r);
                let ks = k.errno.clone().unwrap_or_else(|| "?".into());
                let ms = match m {
                    Some(Ok(())) => "0".to_string(),
                    Some(Err(e)) => e.name().to_string(),
                    None => "?".into(),
                };
                if ms != ks {
                    row(
                        format!("write: {ms}"),
                        format!("write: {ks}"),
                        "   <-- differs",
                        &mut r,
                    );
                    r.outcome_disagreements += 1;
                }
            }
            Command::Poll { .. } => {
                k_last_poll = k.poll;
                let word = |p: Option<PollWant>| p.map_or("?", PollWant::name);
                let (ms, ks) = (word(interp.last_poll()), word(k.poll));
                let mark = if ms == ks { "" } else { "   <-- differs" };
                if ms != ks {
                    r.outcome_disagreements += 1;
                }
                row(format!("poll: {ms}"), format!("poll: {ks}"), mark, &mut r);
            }
            Command::Run(spec) => {
                if let Some(e) = errno_of(&k.errno) {
                    k_last_op = Some(("run", e));
                }
                if !spec.background {
                    let name = spec.task_name().to_string();
                    let ko = k.exit.map(outcome_of_status);
                    if let Some(o) = ko {
                        k_last_fg = Some((name, o));
                    }
                    // A task that could not start has no outcome: show the errno.
                    let ms = match interp.last_op() {
                        Some((_, Err(e))) => format!("not started: {}", e.name()),
                        _ => interp
                            .last_foreground()
                            .map(|(_, o)| o.to_string())
                            .unwrap_or_else(|| "?".into()),
                    };
                    let ks = match (ko, errno_of(&k.errno)) {
                        (_, Some(Err(e))) => format!("not started: {}", e.name()),
                        (Some(o), _) => o.to_string(),
                        (None, _) => "?".into(),
                    };
                    let mark = if ms != ks { "   <-- differs" } else { "" };
                    row(ms, ks, mark, &mut r);
                }
            }
            Command::Wait(name) => {
                if let Some(st) = k.exit {
                    k_last_fg = Some((name.clone(), outcome_of_status(st)));
                }
            }
            Command::Let { name, terms } => {
                // The remembered value on each side, compared as a single-value read, in the
                // unit of its first operand that has one (a literal alone is a count).
                let unit = terms
                    .iter()
                    .find_map(|(_, v)| unit_of_value(v, &var_units, &fd_files))
                    .unwrap_or(Unit::Count);
                var_units.insert(name.clone(), unit);
                let kv = k.out.first().and_then(|s| parse_kernel_value(s).ok());
                let mv = interp.var(name).unwrap_or(0);
                r.table.rows.push(ValueRow {
                    line: *n,
                    file: format!("${name}"),
                    key: String::new(),
                    unit,
                    model: mv,
                    kernel: kv.ok_or(Missing::Unreadable),
                });
                // A name starting with `_` keeps a value each side checks against itself
                // later (a conservation check), which timing may set apart: shown, not
                // compared.
                if name.starts_with('_') {
                    let show = |v: Option<i64>| v.map_or("(unreadable)".into(), |v| v.to_string());
                    row(mv.to_string(), show(kv), "", &mut r);
                    continue;
                }
                let (m, kern, mark) = single_value(mv, kv, opts, unit, &mut r);
                row(m, kern, mark, &mut r);
            }
            Command::Cat(_) | Command::Echo { target: None, .. } => {
                let ml: Vec<String> = out.lines().map(String::from).collect();
                let kl = k.out.clone();
                let (mn, kn) = (numbers(&ml), numbers(&kl));
                let single = ml.len() == 1 && mn[0].0.is_empty() && mn[0].1.is_some();
                if matches!(cmd, Command::Echo { .. }) {
                    continue;
                }
                let path = match cmd {
                    Command::Cat(t) => match t.as_slice() {
                        [Target::Path(p)] => p.clone(),
                        [Target::Fd(f)] => fd_files.get(f).cloned().unwrap_or_default(),
                        _ => String::new(),
                    },
                    _ => String::new(),
                };
                if let Command::Cat(targets) = cmd {
                    let files: Vec<String> = targets
                        .iter()
                        .map(|t| match t {
                            Target::Path(p) => resolve(&cwd, p),
                            Target::Fd(f) => fd_abs.get(f).cloned().unwrap_or_default(),
                        })
                        .collect();
                    // No output at all from the kernel: the line did not run there.
                    let kernel_lines = (!k.catfail && !kl.is_empty()).then_some(kl.as_slice());
                    let (rows, kernel_only) = cat_rows(*n, &files, &ml, kernel_lines);
                    r.table.rows.extend(rows);
                    r.table.kernel_only_keys += kernel_only;
                }
                if single {
                    let kv = kn.first().and_then(|x| x.1);
                    let unit = unit_of(&path, None);
                    let (m, kern, mark) =
                        single_value(mn[0].1.unwrap_or(0), kv, opts, unit, &mut r);
                    row(m, kern, mark, &mut r);
                } else {
                    // Keyed file: show the keys that differ beyond the tolerance.
                    let kmap: BTreeMap<&str, Option<i64>> =
                        kn.iter().map(|(k, v)| (k.as_str(), *v)).collect();
                    let mut diffs = Vec::new();
                    for (key, mv) in &mn {
                        let Some(mv) = mv else { continue };
                        r.values += 1;
                        match kmap.get(key.as_str()) {
                            Some(Some(kv)) if within(*mv, *kv, opts, unit_of(&path, Some(key))) => {
                            }
                            Some(Some(kv)) => diffs.push(format!("{key} {mv} vs {kv}")),
                            _ => diffs.push(format!("{key} {mv} vs (absent)")),
                        }
                    }
                    if opts.strict {
                        r.value_disagreements += diffs.len();
                    }
                    let summary = if ml.is_empty() && !err.is_empty() {
                        "(unreadable)".to_string()
                    } else {
                        format!("{} lines", ml.len())
                    };
                    let ks = if k.catfail {
                        "(unreadable)".to_string()
                    } else {
                        format!("{} lines", kl.len())
                    };
                    row(summary, ks, "", &mut r);
                    for d in diffs {
                        let _ = writeln!(r.text, "{:>5}  {:<52} {d}", "", "");
                    }
                }
            }
            Command::Expect { expr, .. } => {
                r.expects += 1;
                let mvals = model_vals.unwrap_or_default();
                let kvals: Vec<Result<i64, String>> = operands(expr)
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Value::Int(x) => Ok(*x),
                        _ => match k.vals.get(&i) {
                            Some(s) => parse_kernel_value(s),
                            None => Err("no value from the kernel".into()),
                        },
                    })
                    .collect();
                for (i, v) in operands(expr).iter().enumerate() {
                    let (file, key) = match v {
                        Value::File(p) => (resolve(&cwd, p), String::new()),
                        Value::Key(p, key) => (resolve(&cwd, p), key.clone()),
                        Value::Fd(f) => (fd_abs.get(f).cloned().unwrap_or_default(), String::new()),
                        // Literals are not read; a variable's row is its `let`'s.
                        Value::Int(_) | Value::Var(_) => continue,
                    };
                    let Some(Ok(mv)) = mvals.get(i) else { continue };
                    let unit = unit_of_value(v, &var_units, &fd_files).unwrap_or(Unit::Count);
                    let kernel = k
                        .vals
                        .get(&i)
                        .and_then(|s| parse_kernel_value(s).ok())
                        .ok_or(Missing::Unreadable);
                    r.table.rows.push(ValueRow {
                        line: *n,
                        file,
                        key,
                        unit,
                        model: *mv,
                        kernel,
                    });
                }
                let mfail = judge(
                    expr,
                    &mvals,
                    interp_last_fg(&interp),
                    interp.last_op(),
                    interp.last_poll(),
                );
                let kfail = judge(
                    expr,
                    &kvals,
                    k_last_fg.as_ref().map(|(n, o)| (n.as_str(), *o)),
                    k_last_op,
                    k_last_poll,
                );
                let show = |fail: &Option<String>, vals: &[Result<i64, String>]| {
                    let v: Vec<String> = vals
                        .iter()
                        .filter_map(|x| x.as_ref().ok())
                        .map(|x| x.to_string())
                        .collect();
                    let word = if fail.is_none() { "holds" } else { "fails" };
                    if v.is_empty() {
                        word.to_string()
                    } else {
                        format!("{word} ({})", v.join(", "))
                    }
                };
                if mfail.is_some() {
                    r.model_failures += 1;
                }
                if kfail.is_some() {
                    r.kernel_failures += 1;
                }
                let disagree = mfail.is_some() != kfail.is_some();
                if disagree {
                    r.expect_disagreements += 1;
                }
                row(
                    show(&mfail, &mvals),
                    show(&kfail, &kvals),
                    if disagree { "   <-- DISAGREE" } else { "" },
                    &mut r,
                );
            }
            _ => {}
        }
    }
    let _ = writeln!(
        r.text,
        "\nexpects: {} ({} hold on the model, {} on the kernel), {} disagree; values: {} compared, {} beyond {}% (sizes: and {} B); writes and polls: {} differ{}",
        r.expects,
        r.expects - r.model_failures,
        r.expects - r.kernel_failures,
        r.expect_disagreements,
        r.values,
        r.value_disagreements,
        opts.tolerance_pct,
        opts.slack,
        r.outcome_disagreements,
        if opts.strict { "" } else { " (keyed files shown, not counted; --strict counts them)" }
    );
    r
}

fn interp_last_fg(i: &Interpreter) -> Option<(&str, TaskOutcome)> {
    i.last_foreground()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slack_applies_to_sizes_not_to_counts() {
        assert_eq!(unit_of("/A/memory.current", None), Unit::Bytes);
        assert_eq!(unit_of("memory.swap.peak", None), Unit::Bytes);
        assert_eq!(unit_of("/A/memory.stat", Some("anon")), Unit::Bytes);
        assert_eq!(unit_of("/A/memory.stat", Some("pgmajfault")), Unit::Count);
        assert_eq!(
            unit_of("/A/memory.stat", Some("workingset_refault_anon")),
            Unit::Count
        );
        assert_eq!(unit_of("/A/memory.stat", Some("total_pgpgin")), Unit::Count);
        assert_eq!(unit_of("/A/memory.stat", Some("total_rss")), Unit::Bytes);
        assert_eq!(unit_of("/proc/vmstat", Some("pgsteal_direct")), Unit::Count);
        assert_eq!(unit_of("/proc/meminfo", Some("MemFree")), Unit::Kib);
        assert_eq!(unit_of("/A/memory.events", Some("oom_kill")), Unit::Count);
        assert_eq!(unit_of("/A/memory.failcnt", None), Unit::Count);
        assert_eq!(unit_of("/A/memory.limit_in_bytes", None), Unit::Bytes);
        assert_eq!(unit_of("/proc/sys/vm/page-cluster", None), Unit::Count);
        assert_eq!(unit_of("/proc/sys/vm/dirty_bytes", None), Unit::Bytes);
        // Stall totals are times, the averages percentages: neither takes the byte slack.
        assert_eq!(
            unit_of("/A/memory.pressure", Some("some.total")),
            Unit::Micros
        );
        assert_eq!(
            unit_of("/proc/pressure/memory", Some("full.total")),
            Unit::Micros
        );
        assert_eq!(
            unit_of("/A/memory.pressure", Some("some.avg10")),
            Unit::Count
        );

        let opts = CompareOpts {
            tolerance_pct: 10.0,
            slack: 1 << 20,
            strict: false,
        };
        // 41,882 pages against 76,119: within 1M as bytes, far apart as a count.
        assert!(within(41_882, 76_119, &opts, Unit::Bytes));
        assert!(!within(41_882, 76_119, &opts, Unit::Count));
        assert!(within(100, 105, &opts, Unit::Count));
        // kB: the slack divided by 1024.
        assert!(within(0, 1024, &opts, Unit::Kib));
        assert!(!within(0, 1025, &opts, Unit::Kib));
        assert!(!within(0, 1024, &opts, Unit::Micros));

        let vars = BTreeMap::from([("steal".to_string(), Unit::Count)]);
        let fds = BTreeMap::from([("peak".to_string(), "/A/memory.peak".to_string())]);
        let u = |v: Value| unit_of_value(&v, &vars, &fds);
        assert_eq!(u(Value::Var("steal".into())), Some(Unit::Count));
        assert_eq!(u(Value::Fd("peak".into())), Some(Unit::Bytes));
        assert_eq!(u(Value::Int(3)), None);
    }
}
