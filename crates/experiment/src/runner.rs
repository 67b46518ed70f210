//! Running one variant of a scenario with one seed: boot the machine, create the cgroups,
//! start the tasks on time (copies in parallel, repetitions one after the other), sample the
//! cgroup files at a fixed virtual-time interval, and summarise.
//!
//! The loop advances virtual time to the next sample, the next task start or the end of the
//! run, whichever comes first, and stops early when a task ends or starts holding its memory
//! so that the next repetition starts at that very moment. Every iteration reaches one of
//! those points, so the number of iterations is bounded by samples + starts + ends.
//!
//! A run ends at its duration, or with `until = "tasks"` as soon as every task has ended or
//! holds its memory and none is waiting to start. Its progress on standard error follows
//! that: a bar over the duration when only the duration can end the run, else a spinner with
//! the virtual time and the tasks still running or waiting; it ends with a line saying why
//! the run ended (`all tasks done at 3.614s`, `duration 3600s reached; still 1 task running`).
//!
//! Besides the samples, the machine's used memory and swap are looked at before every event
//! of the model, so that its peaks in the summary are the true ones (a sample can miss a
//! peak, and then fall below a group's own peak file).

use std::collections::{BTreeMap, VecDeque};
use std::io::IsTerminal;

use memcgsim_cgroupfs::{Pid, SpawnOpts, System};
use memcgsim_model::{CgroupVersion, Machine, TaskState, PAGE_SIZE};
use serde::Serialize;

use crate::controller::{Action, Controller};
use crate::keyed::{file_path, keyed_order, parse_keyed, pressure_field};
use crate::scenario::{machine_config, RunSpec, Scenario, Setup, Subtree, Until};

/// Stats always sampled (besides `[run] stats`), because the summary reports them.
pub const SUMMARY_STATS: &[&str] = &[
    "pgfault",
    "pgmajfault",
    "pgscan",
    "pgsteal",
    "pswpin",
    "pswpout",
];

/// The fields of memory.pressure sampled for each cgroup (v2) and the machine: the 10 s
/// averages (hundredths of a percent) and the totals (microseconds).
pub const PRESSURE_FIELDS: [(&str, &str); 4] = [
    ("some", "avg10"),
    ("full", "avg10"),
    ("some", "total"),
    ("full", "total"),
];

/// The name of the machine-wide row (from /proc/meminfo and /proc/vmstat).
pub const MACHINE_ROW: &str = "machine";

/// The simulator's reclaim counters (soft-limit reclaim and reclaim walks), sampled on the
/// machine row as `reclaim:KEY` when the model has the file.
pub const RECLAIM_FILE: &str = "/proc/memcgsim/reclaim";

/// One sampled series: a cgroup (or [`MACHINE_ROW`]) and a key such as `memory.current` or
/// `memory.stat:pgscan`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SeriesKey {
    pub cgroup: String,
    pub key: String,
}

/// Samples over virtual time: `values[i][j]` is series `j` at `times_ns[i]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TimeSeries {
    pub times_ns: Vec<u64>,
    pub series: Vec<SeriesKey>,
    pub values: Vec<Vec<Option<u64>>>,
}

impl TimeSeries {
    /// Index of a series.
    pub fn index(&self, cgroup: &str, key: &str) -> Option<usize> {
        self.series
            .iter()
            .position(|s| s.cgroup == cgroup && s.key == key)
    }

    /// The (time, value) points of a series.
    pub fn points(&self, cgroup: &str, key: &str) -> Vec<(u64, u64)> {
        let Some(j) = self.index(cgroup, key) else {
            return Vec::new();
        };
        self.times_ns
            .iter()
            .zip(&self.values)
            .filter_map(|(&t, row)| row.get(j).copied().flatten().map(|v| (t, v)))
            .collect()
    }

    /// Every sampled value in long format, in time order and series order within a time:
    /// (time in ns, series, value); a series absent at a time gives nothing.
    pub fn samples(&self) -> impl Iterator<Item = (u64, &SeriesKey, u64)> + '_ {
        self.times_ns
            .iter()
            .zip(&self.values)
            .flat_map(move |(&t, row)| {
                self.series
                    .iter()
                    .zip(row)
                    .filter_map(move |(k, v)| v.map(|v| (t, k, v)))
            })
    }

    /// The last value of a series.
    pub fn last(&self, cgroup: &str, key: &str) -> Option<u64> {
        self.points(cgroup, key).last().map(|p| p.1)
    }

    /// The largest value of a series.
    pub fn max(&self, cgroup: &str, key: &str) -> Option<u64> {
        self.points(cgroup, key).iter().map(|p| p.1).max()
    }

    /// The mean of a series' samples (their sum over their number, rounded).
    pub fn avg(&self, cgroup: &str, key: &str) -> Option<u64> {
        let pts = self.points(cgroup, key);
        let n = pts.len() as u128;
        let sum: u128 = pts.iter().map(|p| u128::from(p.1)).sum();
        (n > 0).then(|| ((sum + n / 2) / n) as u64)
    }
}

/// Per-cgroup figures of a run (absent where the file or key does not exist).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CgroupSummary {
    pub cgroup: String,
    pub usage_end: Option<u64>,
    pub usage_peak: Option<u64>,
    /// The sampled usage averaged over the run's samples.
    pub usage_avg: Option<u64>,
    pub swap_end: Option<u64>,
    pub swap_peak: Option<u64>,
    pub pgfault: Option<u64>,
    pub pgmajfault: Option<u64>,
    pub pswpin: Option<u64>,
    pub pswpout: Option<u64>,
    pub pgscan: Option<u64>,
    pub pgsteal: Option<u64>,
    pub oom_kill: Option<u64>,
    pub high: Option<u64>,
    pub max: Option<u64>,
    /// Time some (and all) of the group's non-idle tasks were stalled on memory over the
    /// run, in ns: memory.pressure's `some` and `full` totals at the last sample (cgroup v2;
    /// the machine's from /proc/pressure/memory).
    pub memory_some_ns: Option<u64>,
    pub memory_full_ns: Option<u64>,
    /// Transparent huge pages, when the scenario samples them (`[run] stats` naming
    /// `anon_thp`, `thp_fault_alloc`, `thp_fault_fallback`, `thp_collapse_alloc`,
    /// `compact_stall`): the group's largest `anon_thp`, and the events at the end (the
    /// machine's from /proc/vmstat; `thp_fault_fallback` and `compact_stall` are the
    /// machine's only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anon_thp_peak: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thp_fault_alloc: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thp_fault_fallback: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thp_collapse_alloc: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compact_stall: Option<u64>,
    /// zswap and refaults, when the scenario samples them (`[run] stats` naming `zswap`,
    /// `zswpin`, `zswpout`, `workingset_refault_anon`): the group's largest compressed
    /// size (the machine's: /proc/meminfo's Zswap is not sampled), and the events at the end
    /// (the machine's from /proc/vmstat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zswap_peak: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zswpin: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zswpout: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workingset_refault_anon: Option<u64>,
}

/// One started task (one copy, one repetition), or a task that never started.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TaskRecord {
    /// The `[[task]]` name.
    pub task: String,
    /// This instance: the task name, `.COPY` when count > 1, `#RUN` when repeat > 1.
    pub name: String,
    pub cgroup: String,
    pub workload: String,
    pub copy: u32,
    pub run: u32,
    pub pid: Option<u32>,
    /// `exit N`, `killed`, `holding` (done, keeping its memory to the end of the run),
    /// `running` (still working when the run ended) or `not started`. A task killed after it
    /// began holding shows how it ended, with its figures taken at its death.
    pub outcome: String,
    pub start_ns: Option<u64>,
    /// When it ended or started holding; the end of the run for one still running.
    pub end_ns: Option<u64>,
    pub elapsed_ns: u64,
    pub user_ns: u64,
    pub system_ns: u64,
    pub minflt: u64,
    pub majflt: u64,
    pub io_wait_ns: u64,
    pub throttled_ns: u64,
    /// Time spent in direct reclaim (limit, high and global).
    pub reclaim_ns: u64,
    /// Why the program gave up, as it says on its standard error (a mapping refused by the
    /// overcommit check, ...); absent when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Everything one run produced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    pub scenario: String,
    pub description: String,
    pub variant: String,
    pub seed: u64,
    /// "v1" or "v2".
    pub cgroup_version: String,
    pub setup: Setup,
    pub run: RunSpec,
    /// Virtual time at the end of the run.
    pub end_ns: u64,
    pub cgroups: Vec<CgroupSummary>,
    pub tasks: Vec<TaskRecord>,
    /// The counters of [`RECLAIM_FILE`] at the end of the run, in the file's order (empty
    /// when the model has no such file).
    pub reclaim: KeyValues,
    /// What the controllers did, in time order.
    pub actions: Vec<Action>,
    /// The timed writes made (`[[write]]`), in time order, with what each returned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<WriteRecord>,
    #[serde(skip)]
    pub series: TimeSeries,
}

/// A timed write as it was made.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WriteRecord {
    pub time_ns: u64,
    /// The file's path (`/A/memory.reclaim`).
    pub path: String,
    pub value: String,
    /// `ok`, or the errno's name.
    pub result: String,
}

/// `key value` pairs in a fixed order, serialized as a JSON object in that order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyValues(pub Vec<(String, u64)>);

impl KeyValues {
    /// The value of a key.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

impl Serialize for KeyValues {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

// ------------------------------------------------------------------ sampling

/// Where a sampled value comes from.
#[derive(Clone, Debug)]
enum Source {
    /// A file holding one number.
    Single(String),
    /// A key of a keyed file.
    Keyed(String, String),
    /// The sum of keys of a keyed file.
    Sum(String, Vec<String>),
    /// (first - second) kB of /proc/meminfo, in bytes.
    MeminfoDiff(&'static str, &'static str),
    /// A pressure file's `FIELD=VALUE` on the line starting with LINE: averages in
    /// hundredths of a percent, totals in microseconds.
    Pressure(String, &'static str, &'static str),
}

#[derive(Clone, Debug)]
struct Probe {
    key: SeriesKey,
    source: Source,
}

/// Reads files once per sample.
struct Reader<'a> {
    sys: &'a mut System,
    cache: BTreeMap<String, Option<String>>,
}

impl Reader<'_> {
    fn text(&mut self, path: &str) -> Option<String> {
        if let Some(t) = self.cache.get(path) {
            return t.clone();
        }
        let t = self.sys.read(path).ok();
        self.cache.insert(path.to_string(), t.clone());
        t
    }

    fn keyed(&mut self, path: &str) -> Option<BTreeMap<String, u64>> {
        self.text(path).map(|t| parse_keyed(&t))
    }

    fn value(&mut self, src: &Source) -> Option<u64> {
        match src {
            Source::Single(p) => {
                let t = self.text(p)?;
                let w = t.split_whitespace().next()?;
                if w == "max" {
                    return Some(u64::MAX);
                }
                w.parse().ok()
            }
            Source::Keyed(p, k) => self.keyed(p)?.get(k).copied(),
            Source::Sum(p, ks) => {
                let m = self.keyed(p)?;
                let mut s = 0u64;
                for k in ks {
                    s = s.saturating_add(*m.get(k)?);
                }
                Some(s)
            }
            Source::MeminfoDiff(a, b) => {
                let m = self.keyed("/proc/meminfo")?;
                Some(m.get(*a)?.saturating_sub(*m.get(*b)?).saturating_mul(1024))
            }
            Source::Pressure(p, line, field) => pressure_field(&self.text(p)?, line, field),
        }
    }
}

/// The keys of each figure of the summary, for one cgroup version.
struct Roles {
    usage: &'static str,
    swap: &'static str,
    high: Option<&'static str>,
    max: &'static str,
    oom_kill: &'static str,
    peak_file: &'static str,
    swap_peak_file: Option<&'static str>,
}

fn roles(v: CgroupVersion) -> Roles {
    match v {
        CgroupVersion::V2 => Roles {
            usage: "memory.current",
            swap: "memory.swap.current",
            high: Some("memory.events:high"),
            max: "memory.events:max",
            oom_kill: "memory.events:oom_kill",
            peak_file: "memory.peak",
            swap_peak_file: Some("memory.swap.peak"),
        },
        CgroupVersion::V1 => Roles {
            usage: "memory.usage_in_bytes",
            swap: "memory.stat:total_swap",
            high: None,
            max: "memory.failcnt",
            oom_kill: "memory.oom_control:oom_kill",
            peak_file: "memory.max_usage_in_bytes",
            swap_peak_file: None,
        },
    }
}

fn stat_keys(run: &RunSpec) -> Vec<String> {
    let mut keys = run.stats.clone();
    for k in SUMMARY_STATS {
        if !keys.iter().any(|x| x == k) {
            keys.push(k.to_string());
        }
    }
    keys
}

/// The series of a run: every candidate that can be read now.
fn discover(sys: &mut System, setup: &Setup, run: &RunSpec) -> Vec<Probe> {
    let v = if sys.is_v1() {
        CgroupVersion::V1
    } else {
        CgroupVersion::V2
    };
    let stats = stat_keys(run);
    let mut cands: Vec<Probe> = Vec::new();
    let probe = |cg: &str, key: String, source: Source| Probe {
        key: SeriesKey {
            cgroup: cg.to_string(),
            key,
        },
        source,
    };
    for c in &setup.cgroups {
        let cg = c.path.as_str();
        let single = |f: &str| probe(cg, f.to_string(), Source::Single(file_path(cg, f)));
        let keyed = |file: &str, k: &str| {
            probe(
                cg,
                format!("{file}:{k}"),
                Source::Keyed(file_path(cg, file), k.to_string()),
            )
        };
        match v {
            CgroupVersion::V2 => {
                cands.push(single("memory.current"));
                cands.push(single("memory.swap.current"));
                cands.push(single("memory.high"));
                for (line, field) in PRESSURE_FIELDS {
                    cands.push(probe(
                        cg,
                        format!("memory.pressure:{line}.{field}"),
                        Source::Pressure(file_path(cg, "memory.pressure"), line, field),
                    ));
                }
                for e in ["high", "max", "oom_kill"] {
                    cands.push(keyed("memory.events", e));
                }
                for k in &stats {
                    cands.push(keyed("memory.stat", k));
                }
            }
            CgroupVersion::V1 => {
                cands.push(single("memory.usage_in_bytes"));
                cands.push(keyed("memory.stat", "total_swap"));
                cands.push(single("memory.failcnt"));
                cands.push(keyed("memory.oom_control", "oom_kill"));
                let present = sys
                    .read(&file_path(cg, "memory.stat"))
                    .map(|t| parse_keyed(&t))
                    .unwrap_or_default();
                for k in &stats {
                    let total = format!("total_{k}");
                    if present.contains_key(&total) {
                        cands.push(keyed("memory.stat", &total));
                    } else {
                        cands.push(keyed("memory.stat", k));
                    }
                }
            }
        }
    }
    let m = MACHINE_ROW;
    cands.push(probe(
        m,
        "used".into(),
        Source::MeminfoDiff("MemTotal", "MemFree"),
    ));
    cands.push(probe(
        m,
        "swap_used".into(),
        Source::MeminfoDiff("SwapTotal", "SwapFree"),
    ));
    for (line, field) in PRESSURE_FIELDS {
        cands.push(probe(
            m,
            format!("pressure:memory.{line}.{field}"),
            Source::Pressure("/proc/pressure/memory".into(), line, field),
        ));
    }
    let mut vm_keys = stats.clone();
    vm_keys.push("oom_kill".into());
    for k in &vm_keys {
        let src = match k.as_str() {
            "pgscan" | "pgsteal" => Source::Sum(
                "/proc/vmstat".into(),
                vec![format!("{k}_kswapd"), format!("{k}_direct")],
            ),
            _ => Source::Keyed("/proc/vmstat".into(), k.clone()),
        };
        cands.push(probe(m, format!("vmstat:{k}"), src));
    }
    if let Ok(text) = sys.read(RECLAIM_FILE) {
        for k in keyed_order(&text) {
            cands.push(probe(
                m,
                format!("reclaim:{k}"),
                Source::Keyed(RECLAIM_FILE.into(), k),
            ));
        }
    }
    let mut reader = Reader {
        sys,
        cache: BTreeMap::new(),
    };
    let mut out: Vec<Probe> = Vec::new();
    for p in cands {
        if out.iter().any(|o| o.key == p.key) {
            continue;
        }
        if reader.value(&p.source).is_some() {
            out.push(p);
        }
    }
    out
}

/// The machine's used memory and used swap at their largest, in bytes, as /proc/meminfo
/// would show them (MemTotal - MemFree, SwapTotal - SwapFree), looked at before every event
/// of the model and after every step of the run loop, not only at the samples. Looking
/// changes nothing in the machine.
#[derive(Clone, Copy, Debug, Default)]
struct MachinePeak {
    used: u64,
    swap: u64,
}

impl MachinePeak {
    fn see(&mut self, m: &Machine) {
        let used = m.totalram_pages.saturating_sub(m.nr_free_pages());
        let swap = m
            .total_swap_pages
            .saturating_sub(u64::from(m.swap.nr_free()));
        self.used = self.used.max(used.saturating_mul(PAGE_SIZE));
        self.swap = self.swap.max(swap.saturating_mul(PAGE_SIZE));
    }
}

/// Create the idle cgroups of a generated subtree below `base`, breadth first. On cgroup v2
/// each cgroup (the base too) enables the memory controller for its children before the
/// first of them is made.
fn make_subtree(sys: &mut System, base: &str, st: Subtree) -> Result<(), String> {
    let v2 = !sys.is_v1();
    let fanout = st.fanout as u64;
    // The paths of the cgroups whose children are still to be made, oldest first: number
    // `first` is at the front. Breadth-first order makes the parents come in turn.
    let mut pending: VecDeque<String> = VecDeque::new();
    pending.push_back(if base == "/" {
        String::new()
    } else {
        base.to_string()
    });
    let mut first = 0u64;
    for i in 1..=st.groups as u64 {
        let parent = (i - 1) / fanout;
        while first < parent {
            pending.pop_front();
            first += 1;
        }
        let ppath = pending.front().expect("the parent's path is pending");
        if v2 && i == parent * fanout + 1 {
            let p = format!("{ppath}/cgroup.subtree_control");
            sys.write(&p, "+memory")
                .map_err(|e| format!("writing '+memory' to {p}: {e}"))?;
        }
        let path = format!("{ppath}/g{i}");
        sys.mkdir(&path)
            .map_err(|e| format!("mkdir {path} (generated cgroup {i} of {}): {e}", st.groups))?;
        // Only cgroups that get children need their path later.
        if i * fanout < st.groups as u64 {
            pending.push_back(path);
        }
    }
    Ok(())
}

fn take_sample(sys: &mut System, probes: &[Probe]) -> Vec<Option<u64>> {
    let mut reader = Reader {
        sys,
        cache: BTreeMap::new(),
    };
    probes.iter().map(|p| reader.value(&p.source)).collect()
}

// ------------------------------------------------------------------ the run

/// One copy of a task: its repetitions run one after the other.
struct Chain {
    spec: usize,
    copy: u32,
    runs_started: u32,
    next_start: Option<u64>,
    /// The running repetition: its pid and record index.
    current: Option<(Pid, usize)>,
}

fn fill_stats(rec: &mut TaskRecord, m: &Machine, pid: Pid, end_ns: u64) {
    let t = m.task(pid);
    let s = &t.stats;
    rec.user_ns = s.user_ns;
    rec.system_ns = s.cpu_ns.saturating_sub(s.user_ns);
    rec.minflt = s.minflt;
    rec.majflt = s.majflt;
    rec.io_wait_ns = s.io_wait_ns;
    rec.throttled_ns = s.throttled_ns;
    rec.reclaim_ns = s.reclaim_ns;
    rec.error = t.error.as_ref().map(|e| e.to_string());
    rec.end_ns = Some(end_ns);
    rec.elapsed_ns = end_ns.saturating_sub(rec.start_ns.unwrap_or(end_ns));
}

// ------------------------------------------------------------------ progress

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunEnd {
    /// `until = "tasks"` and every task has ended or holds its memory, with none left to
    /// start.
    TasksDone,
    /// The scenario's duration has passed.
    Duration,
}

/// Whether the run ends now, and why: with `until = "tasks"` once every task is done
/// (`all_done`), and in any case at the duration.
fn run_end(until: Until, all_done: bool, now_ns: u64, duration_ns: u64) -> Option<RunEnd> {
    if until == Until::Tasks && all_done {
        Some(RunEnd::TasksDone)
    } else if now_ns >= duration_ns {
        Some(RunEnd::Duration)
    } else {
        None
    }
}

/// The length of the progress bar, in virtual milliseconds: the duration when only the
/// duration can end the run (`until = "duration"`); `None` when the tasks decide the end,
/// which is not known beforehand, so a spinner is shown instead of a bar.
fn progress_length(until: Until, duration_ns: u64) -> Option<u64> {
    (until == Until::Duration).then_some(duration_ns / 1_000_000)
}

/// Virtual seconds, short: `0s`, `0.05s`, `3.614s`, `3600s`.
fn short_secs(ns: u64) -> String {
    let ms = (ns + 500_000) / 1_000_000;
    let s = format!("{}.{:03}", ms / 1000, ms % 1000);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}s")
}

/// `N task(s) running, M waiting to start` (the parts that are not 0), or `no task running`.
fn task_counts(running: usize, waiting: usize) -> String {
    let plural = |n: usize| if n == 1 { "task" } else { "tasks" };
    match (running, waiting) {
        (0, 0) => "no task running".to_string(),
        (r, 0) => format!("{r} {} running", plural(r)),
        (0, w) => format!("{w} {} waiting to start", plural(w)),
        (r, w) => format!("{r} {} running, {w} waiting to start", plural(r)),
    }
}

/// The progress message while a run goes on: the virtual time, against the duration when it
/// alone ends the run, and the tasks still running or waiting to start.
fn progress_message(
    until: Until,
    now_ns: u64,
    duration_ns: u64,
    running: usize,
    waiting: usize,
) -> String {
    let tasks = task_counts(running, waiting);
    match until {
        Until::Duration => format!(
            "{} / {} virtual, {tasks}",
            short_secs(now_ns),
            short_secs(duration_ns)
        ),
        Until::Tasks => format!(
            "{} virtual, {tasks}; ends when all are done, by {}",
            short_secs(now_ns),
            short_secs(duration_ns)
        ),
    }
}

/// The message a run's progress line ends with: why it ended, and when.
fn end_message(
    end: RunEnd,
    end_ns: u64,
    duration_ns: u64,
    running: usize,
    waiting: usize,
    all_done_ns: Option<u64>,
) -> String {
    match end {
        RunEnd::TasksDone => format!("all tasks done at {}", short_secs(end_ns)),
        RunEnd::Duration => {
            let rest = match all_done_ns {
                Some(t) if running == 0 && waiting == 0 => {
                    format!("all tasks done since {}", short_secs(t))
                }
                _ => format!("still {}", task_counts(running, waiting)),
            };
            format!("duration {} reached; {rest}", short_secs(duration_ns))
        }
    }
}

/// Where a run shows its progress.
#[derive(Clone, Copy)]
pub enum Progress<'a> {
    /// Nowhere.
    Off,
    /// On standard error, when it is a terminal.
    Stderr,
    /// As one line of a display shared with runs going on beside it (`compare --jobs`).
    Shared(&'a indicatif::MultiProgress),
}

/// The progress display of a run on standard error, when enabled and standard error is a
/// terminal: a bar over the duration when only the duration ends the run, else a spinner with
/// the virtual time and the number of tasks left.
fn progress_bar(
    target: Progress,
    until: Until,
    duration_ns: u64,
    tasks: usize,
    label: &str,
) -> Option<indicatif::ProgressBar> {
    if matches!(target, Progress::Off) || !std::io::stderr().is_terminal() {
        return None;
    }
    // Set up out of sight, so that the first frame drawn is complete.
    let hidden = indicatif::ProgressDrawTarget::hidden();
    let (pb, template) = match progress_length(until, duration_ns) {
        Some(len) => (
            indicatif::ProgressBar::with_draw_target(Some(len), hidden),
            "{prefix} ({elapsed} wall) [{bar:30.cyan/blue}] {wide_msg}",
        ),
        None => (
            indicatif::ProgressBar::with_draw_target(None, hidden),
            "{spinner} {prefix} ({elapsed} wall): {wide_msg}",
        ),
    };
    pb.set_message(progress_message(until, 0, duration_ns, 0, tasks));
    let style = indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ");
    pb.set_style(style);
    pb.set_prefix(label.to_string());
    let pb = match target {
        Progress::Shared(multi) => multi.add(pb),
        _ => {
            pb.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            pb
        }
    };
    if until == Until::Tasks {
        pb.enable_steady_tick(std::time::Duration::from_millis(100));
    }
    Some(pb)
}

/// Replace the progress display with a line saying how the run ended.
fn finish_progress(pb: &indicatif::ProgressBar, msg: String) {
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{prefix} ({elapsed} wall): {wide_msg}")
    {
        pb.set_style(style);
    }
    pb.finish_with_message(msg);
}

/// Run one variant with one seed. `progress` shows the run's progress in virtual time on
/// standard error when it is a terminal (a bar over the duration when only the duration ends
/// the run, else a spinner with the tasks left), and then a line saying why the
/// run ended.
pub fn run_variant(
    sc: &Scenario,
    variant: &str,
    seed: u64,
    progress: bool,
) -> Result<RunResult, String> {
    let target = if progress {
        Progress::Stderr
    } else {
        Progress::Off
    };
    run_variant_with(sc, variant, seed, target)
}

/// [`run_variant`] with its progress shown on `progress`.
pub fn run_variant_with(
    sc: &Scenario,
    variant: &str,
    seed: u64,
    progress: Progress,
) -> Result<RunResult, String> {
    run_setup(sc, &sc.setup(variant)?, seed, progress)
}

/// Run an effective set-up (a variant's, or a sweep point's: see crate::sweep) with one
/// seed; `setup.variant` names it in the result and in error messages.
pub fn run_setup(
    sc: &Scenario,
    setup: &Setup,
    seed: u64,
    progress: Progress,
) -> Result<RunResult, String> {
    let f = &sc.file;
    let variant = setup.variant.as_str();
    let mut cfg = machine_config(f, &setup.machine)?;
    cfg.seed = seed;
    let version = cfg.cgroup;
    let mut sys = System::new(cfg).map_err(|e| format!("{f}: machine: {e}"))?;

    for c in &setup.cgroups {
        if c.path != "/" {
            sys.mkdir(&c.path).map_err(|e| {
                format!(
                    "{f}:{}: cgroup.path: mkdir {}: {e} (variant {variant})",
                    c.line, c.path
                )
            })?;
        }
        for s in &c.files {
            let p = file_path(&c.path, &s.key);
            sys.write(&p, &s.value).map_err(|e| {
                format!(
                    "{f}:{}: cgroup.files.{}: writing '{}' to {p}: {e} (variant {variant})",
                    s.line, s.key, s.value
                )
            })?;
        }
        if let Some(st) = c.subtree {
            make_subtree(&mut sys, &c.path, st)
                .map_err(|e| format!("{f}:{}: cgroup.subtree: {e} (variant {variant})", st.line))?;
        }
    }

    let probes = discover(&mut sys, setup, &sc.run);
    let mut series = TimeSeries {
        times_ns: Vec::new(),
        series: probes.iter().map(|p| p.key.clone()).collect(),
        values: Vec::new(),
    };

    let mut chains: Vec<Chain> = Vec::new();
    let mut instances = 0u64;
    for (i, t) in setup.tasks.iter().enumerate() {
        for copy in 1..=t.count {
            chains.push(Chain {
                spec: i,
                copy,
                runs_started: 0,
                next_start: Some(t.start_ns),
                current: None,
            });
        }
        instances += t.count as u64 * t.repeat as u64;
    }
    let mut records: Vec<TaskRecord> = Vec::new();
    // The timed writes: the next one due, and those made.
    let mut next_write = 0usize;
    let mut made: Vec<WriteRecord> = Vec::new();

    let run = &sc.run;
    let dur = run.duration_ns;
    let sample = run.sample_ns;
    let mut controllers: Vec<Controller> = Vec::new();
    for c in setup.controllers.iter().filter(|c| c.enabled) {
        let config = crate::controller::config(&c.kind, &c.settings)
            .map_err(|(l, k, m)| format!("{f}:{l}: controller.{k}: {m} (variant {variant})"))?;
        controllers.push(Controller::new(&c.name, &c.cgroup, config));
    }
    let mut actions: Vec<Action> = Vec::new();
    let ticks: u64 = controllers.iter().map(|c| c.ticks_until(dur)).sum();
    let bound = dur / sample + 2 * instances + ticks + setup.writes.len() as u64 + 16;
    let pb = progress_bar(
        progress,
        run.until,
        dur,
        chains.len(),
        &format!("{} {variant} seed {seed}", sc.name),
    );
    let mut next_sample = 0u64;
    let mut ended: Option<RunEnd> = None;
    // When every task was first done (ended or holding, none waiting to start).
    let mut all_done_ns: Option<u64> = None;
    let counts = |chains: &[Chain]| {
        (
            chains.iter().filter(|c| c.current.is_some()).count(),
            chains.iter().filter(|c| c.next_start.is_some()).count(),
        )
    };
    let mut peak = MachinePeak::default();
    for _ in 0..bound {
        peak.see(&sys.machine);
        let now = sys.now_ns();
        // Start the repetitions that are due.
        for ch in chains.iter_mut() {
            let t = &setup.tasks[ch.spec];
            let Some(at) = ch.next_start else { continue };
            if at > now || ch.current.is_some() {
                continue;
            }
            ch.runs_started += 1;
            ch.next_start = None;
            let mut name = t.name.clone();
            if t.count > 1 {
                name.push_str(&format!(".{}", ch.copy));
            }
            if t.repeat > 1 {
                name.push_str(&format!("#{}", ch.runs_started));
            }
            let record = TaskRecord {
                task: t.name.clone(),
                name: name.clone(),
                cgroup: t.cgroup.clone(),
                workload: t.workload.clone(),
                copy: ch.copy,
                run: ch.runs_started,
                ..TaskRecord::default()
            };
            // A manager that removed the task's place (an evicted pod) starts nothing there.
            if let Some(why) = controllers.iter().find_map(|c| c.refuses(&t.cgroup)) {
                records.push(TaskRecord {
                    outcome: format!("not started: {why}"),
                    ..record
                });
                continue;
            }
            let args = crate::scenario::expand_args(&t.args, ch.copy, t.count, seed);
            let program = memcgsim_workloads::build(&t.workload, &args)
                .map_err(|e| format!("{f}:{}: task.args: {e}", t.args_line))?;
            let pid = sys
                .spawn(
                    &t.cgroup,
                    SpawnOpts {
                        name: Some(name.clone()),
                        oom_score_adj: t.oom_score_adj,
                    },
                    program,
                )
                .map_err(|e| {
                    format!(
                        "{f}:{}: task.cgroup: cannot start task '{}' in '{}': {e} (variant {variant})",
                        t.line, t.name, t.cgroup
                    )
                })?;
            records.push(TaskRecord {
                pid: Some(pid.0),
                outcome: "running".into(),
                start_ns: Some(now),
                ..record
            });
            ch.current = Some((pid, records.len() - 1));
        }
        // The timed writes that are due, in time order. One the kernel refuses is recorded
        // with its errno and the run goes on (memory.reclaim's EAGAIN is an answer).
        while let Some(w) = setup.writes.get(next_write).filter(|w| w.at_ns <= now) {
            let path = file_path(&w.cgroup, &w.file);
            let r = sys.write(&path, &w.value);
            made.push(WriteRecord {
                time_ns: now,
                path,
                value: w.value.clone(),
                result: match r {
                    Ok(()) => "ok".into(),
                    Err(e) => e.name().to_string(),
                },
            });
            next_write += 1;
        }
        // The controllers' ticks that are due, in scenario order.
        for c in controllers.iter_mut() {
            if c.next_tick() <= now {
                c.tick(&mut sys, now, &mut actions);
            }
        }
        peak.see(&sys.machine);
        if now >= next_sample {
            series.times_ns.push(now);
            series.values.push(take_sample(&mut sys, &probes));
            next_sample = (now / sample + 1).saturating_mul(sample);
        }
        let (running, waiting) = counts(&chains);
        if let Some(pb) = &pb {
            pb.set_position(now / 1_000_000);
            pb.set_message(progress_message(run.until, now, dur, running, waiting));
        }
        let all_done = running == 0 && waiting == 0 && next_write == setup.writes.len();
        if all_done && all_done_ns.is_none() {
            // A task's own clock may run ahead of the event clock (see end_ns below).
            let last = records.iter().filter_map(|r| r.end_ns).fold(now, u64::max);
            all_done_ns = Some(last);
        }
        if let Some(end) = run_end(run.until, all_done, now, dur) {
            ended = Some(end);
            break;
        }
        let mut target = next_sample.min(dur);
        for c in &controllers {
            target = target.min(c.next_tick().max(now));
        }
        if let Some(w) = setup.writes.get(next_write) {
            target = target.min(w.at_ns.max(now));
        }
        for c in &chains {
            if let (Some(at), None) = (c.next_start, c.current) {
                target = target.min(at.max(now));
            }
        }
        let watch: Vec<Pid> = chains
            .iter()
            .filter_map(|c| c.current.map(|x| x.0))
            .collect();
        sys.machine.run_until(target, |m: &Machine| {
            peak.see(m);
            watch.iter().any(|&p| {
                let t = m.task(p);
                t.exited() || t.state == TaskState::Holding
            })
        });
        sys.advance(0);
        peak.see(&sys.machine);
        let now = sys.now_ns();
        for ch in chains.iter_mut() {
            let Some((pid, idx)) = ch.current else {
                continue;
            };
            let t = sys.machine.task(pid);
            let (outcome, end) = match t.state {
                TaskState::Exited(o) => (o.to_string(), t.stats.end_ns),
                TaskState::Holding => ("holding".to_string(), now),
                TaskState::Runnable => continue,
            };
            records[idx].outcome = outcome;
            fill_stats(&mut records[idx], &sys.machine, pid, end);
            ch.current = None;
            if ch.runs_started < setup.tasks[ch.spec].repeat {
                ch.next_start = Some(now.max(end));
            }
        }
    }
    let Some(end) = ended else {
        if let Some(pb) = &pb {
            pb.abandon_with_message("stopped: the step bound was reached");
        }
        return Err(format!(
            "{f}: variant {variant} seed {seed}: the run did not finish within its step bound"
        ));
    };
    let clock = sys.now_ns();
    if series.times_ns.last() != Some(&clock) {
        series.times_ns.push(clock);
        series.values.push(take_sample(&mut sys, &probes));
    }
    // A task's own clock runs ahead of the event clock by the time it consumed in its last
    // step, so the run ends at the later of the two.
    let end_ns = records
        .iter()
        .filter_map(|r| r.end_ns)
        .fold(clock, u64::max);
    if let Some(pb) = &pb {
        let (running, waiting) = counts(&chains);
        let msg = end_message(end, end_ns, dur, running, waiting, all_done_ns);
        finish_progress(pb, msg);
    }

    // Tasks still working at the end, and tasks that never started.
    for ch in &chains {
        if let Some((pid, idx)) = ch.current {
            fill_stats(&mut records[idx], &sys.machine, pid, end_ns);
        }
    }
    // A task that began holding its memory may have been killed later (the OOM killer, a
    // group kill): it no longer holds anything, so its record says how and when it ended.
    for rec in records.iter_mut().filter(|r| r.outcome == "holding") {
        let Some(pid) = rec.pid.map(Pid) else {
            continue;
        };
        let t = sys.machine.task(pid);
        if let TaskState::Exited(o) = t.state {
            rec.outcome = o.to_string();
            let end = t.stats.end_ns;
            fill_stats(rec, &sys.machine, pid, end);
        }
    }
    for (i, t) in setup.tasks.iter().enumerate() {
        for ch in chains.iter().filter(|c| c.spec == i && c.runs_started == 0) {
            let mut name = t.name.clone();
            if t.count > 1 {
                name.push_str(&format!(".{}", ch.copy));
            }
            records.push(TaskRecord {
                task: t.name.clone(),
                name,
                cgroup: t.cgroup.clone(),
                workload: t.workload.clone(),
                copy: ch.copy,
                run: 0,
                outcome: "not started".into(),
                ..TaskRecord::default()
            });
        }
    }
    // Report tasks in scenario order, then copy, then repetition.
    let order = |r: &TaskRecord| {
        (
            setup
                .tasks
                .iter()
                .position(|t| t.name == r.task)
                .unwrap_or(usize::MAX),
            r.copy,
            r.run,
        )
    };
    records.sort_by_key(order);

    peak.see(&sys.machine);
    let cgroups = summarise(&mut sys, setup, &series, version, peak);
    let reclaim = KeyValues(
        series
            .series
            .iter()
            .filter(|k| k.cgroup == MACHINE_ROW)
            .filter_map(|k| {
                let name = k.key.strip_prefix("reclaim:")?;
                Some((name.to_string(), series.last(MACHINE_ROW, &k.key)?))
            })
            .collect(),
    );
    Ok(RunResult {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        variant: variant.to_string(),
        seed,
        cgroup_version: match version {
            CgroupVersion::V1 => "v1".into(),
            CgroupVersion::V2 => "v2".into(),
        },
        setup: setup.clone(),
        run: sc.run.clone(),
        end_ns,
        cgroups,
        tasks: records,
        reclaim,
        actions,
        writes: made,
        series,
    })
}

fn read_single(sys: &mut System, path: &str) -> Option<u64> {
    sys.read(path).ok()?.split_whitespace().next()?.parse().ok()
}

fn summarise(
    sys: &mut System,
    setup: &Setup,
    ts: &TimeSeries,
    version: CgroupVersion,
    peak: MachinePeak,
) -> Vec<CgroupSummary> {
    let r = roles(version);
    let stat = |cg: &str, k: &str| {
        let v1 = format!("memory.stat:total_{k}");
        let v2 = format!("memory.stat:{k}");
        ts.last(cg, &v1).or_else(|| ts.last(cg, &v2))
    };
    let mut out = Vec::new();
    for c in &setup.cgroups {
        let cg = c.path.as_str();
        let peak_file = read_single(sys, &file_path(cg, r.peak_file));
        let swap_peak_file = r
            .swap_peak_file
            .and_then(|f| read_single(sys, &file_path(cg, f)));
        let max_opt = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, None) => x,
            (None, y) => y,
        };
        out.push(CgroupSummary {
            cgroup: cg.to_string(),
            usage_end: ts.last(cg, r.usage),
            usage_peak: max_opt(peak_file, ts.max(cg, r.usage)),
            usage_avg: ts.avg(cg, r.usage),
            swap_end: ts.last(cg, r.swap),
            swap_peak: max_opt(swap_peak_file, ts.max(cg, r.swap)),
            pgfault: stat(cg, "pgfault"),
            pgmajfault: stat(cg, "pgmajfault"),
            pswpin: stat(cg, "pswpin"),
            pswpout: stat(cg, "pswpout"),
            pgscan: stat(cg, "pgscan"),
            pgsteal: stat(cg, "pgsteal"),
            oom_kill: ts.last(cg, r.oom_kill),
            high: r.high.and_then(|k| ts.last(cg, k)),
            max: ts.last(cg, r.max),
            memory_some_ns: us_to_ns(ts.last(cg, "memory.pressure:some.total")),
            memory_full_ns: us_to_ns(ts.last(cg, "memory.pressure:full.total")),
            anon_thp_peak: ts.max(cg, "memory.stat:anon_thp"),
            thp_fault_alloc: ts.last(cg, "memory.stat:thp_fault_alloc"),
            thp_fault_fallback: None,
            thp_collapse_alloc: ts.last(cg, "memory.stat:thp_collapse_alloc"),
            compact_stall: None,
            zswap_peak: ts.max(cg, "memory.stat:zswap"),
            zswpin: ts.last(cg, "memory.stat:zswpin"),
            zswpout: ts.last(cg, "memory.stat:zswpout"),
            workingset_refault_anon: ts.last(cg, "memory.stat:workingset_refault_anon"),
        });
    }
    let m = MACHINE_ROW;
    let vm = |k: &str| ts.last(m, &format!("vmstat:{k}"));
    // The machine's peaks: the largest seen at any event, which no sample and no group's
    // peak can exceed (a group's pages and swap entries are the machine's too; a group's
    // peak file may have seen an instant inside an event).
    let highest = |tracked: u64, sampled: Option<u64>, group: fn(&CgroupSummary) -> Option<u64>| {
        let groups = out.iter().filter_map(group).max();
        sampled.map(|s| s.max(tracked).max(groups.unwrap_or(0)))
    };
    let usage_peak = highest(peak.used, ts.max(m, "used"), |c| c.usage_peak);
    let swap_peak = highest(peak.swap, ts.max(m, "swap_used"), |c| c.swap_peak);
    out.push(CgroupSummary {
        cgroup: m.to_string(),
        usage_end: ts.last(m, "used"),
        usage_peak,
        usage_avg: ts.avg(m, "used"),
        swap_end: ts.last(m, "swap_used"),
        swap_peak,
        pgfault: vm("pgfault"),
        pgmajfault: vm("pgmajfault"),
        pswpin: vm("pswpin"),
        pswpout: vm("pswpout"),
        pgscan: vm("pgscan"),
        pgsteal: vm("pgsteal"),
        oom_kill: vm("oom_kill"),
        high: None,
        max: None,
        memory_some_ns: us_to_ns(ts.last(m, "pressure:memory.some.total")),
        memory_full_ns: us_to_ns(ts.last(m, "pressure:memory.full.total")),
        anon_thp_peak: None,
        thp_fault_alloc: vm("thp_fault_alloc"),
        thp_fault_fallback: vm("thp_fault_fallback"),
        thp_collapse_alloc: vm("thp_collapse_alloc"),
        compact_stall: vm("compact_stall"),
        zswap_peak: None,
        zswpin: vm("zswpin"),
        zswpout: vm("zswpout"),
        workingset_refault_anon: vm("workingset_refault_anon"),
    });
    out
}

fn us_to_ns(us: Option<u64>) -> Option<u64> {
    us.map(|v| v.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use memcgsim_cgroupfs::MachineConfig;

    fn system(version: CgroupVersion) -> System {
        let cfg = MachineConfig {
            cgroup: version,
            ..MachineConfig::default()
        };
        System::new(cfg).unwrap()
    }

    #[test]
    fn generated_subtree_v2_enables_memory_before_children() {
        let mut sys = system(CgroupVersion::V2);
        sys.write("/cgroup.subtree_control", "+memory").unwrap();
        sys.mkdir("/idle").unwrap();
        let st = Subtree {
            groups: 5,
            fanout: 2,
            line: 1,
        };
        make_subtree(&mut sys, "/idle", st).unwrap();
        for i in 1..=5 {
            let p = st.path_of("/idle", i);
            assert!(sys.read(&format!("{p}/memory.current")).is_ok(), "{p}");
        }
        assert!(sys.read("/idle/g2/g5/memory.current").is_ok());
        for (p, on) in [
            ("/idle", true),
            ("/idle/g1", true),
            ("/idle/g2", true),
            ("/idle/g1/g3", false),
            ("/idle/g2/g5", false),
        ] {
            let t = sys.read(&format!("{p}/cgroup.subtree_control")).unwrap();
            assert_eq!(t.trim() == "memory", on, "{p}: {t:?}");
        }
        assert!(sys.read("/idle/g6").is_err());
        assert!(sys.read("/idle/g2/g6").is_err());
    }

    #[test]
    fn generated_subtree_v1_and_at_the_root() {
        let mut sys = system(CgroupVersion::V1);
        let st = Subtree {
            groups: 7,
            fanout: 3,
            line: 1,
        };
        make_subtree(&mut sys, "/", st).unwrap();
        for p in ["/g1", "/g2", "/g3", "/g1/g4", "/g1/g5", "/g1/g6", "/g2/g7"] {
            assert!(
                sys.read(&format!("{p}/memory.usage_in_bytes")).is_ok(),
                "{p}"
            );
        }
    }

    #[test]
    fn generated_subtree_needs_the_controller_above_it_on_v2() {
        let mut sys = system(CgroupVersion::V2);
        sys.mkdir("/a").unwrap();
        sys.mkdir("/a/idle").unwrap();
        let st = Subtree {
            groups: 2,
            fanout: 2,
            line: 1,
        };
        let e = make_subtree(&mut sys, "/a/idle", st).unwrap_err();
        assert!(
            e.starts_with("writing '+memory' to /a/idle/cgroup.subtree_control: "),
            "{e}"
        );
    }

    #[test]
    fn ten_thousand_groups_are_quick() {
        for version in [CgroupVersion::V2, CgroupVersion::V1] {
            let mut sys = system(version);
            sys.mkdir("/idle").unwrap();
            let st = Subtree {
                groups: 10_000,
                fanout: 2,
                line: 1,
            };
            let t0 = std::time::Instant::now();
            make_subtree(&mut sys, "/idle", st).unwrap();
            let took = t0.elapsed();
            assert!(took.as_secs_f64() < 1.0, "{version:?}: {took:?}");
            let last = st.path_of("/idle", 10_000);
            assert!(sys.read(&format!("{last}/cgroup.procs")).is_ok(), "{last}");
        }
    }

    #[test]
    fn what_ends_a_run_decides_the_progress_display() {
        let h = 3_600_000_000_000;
        // With until = "tasks", the tasks end the run, so there is no bar length to fill.
        assert_eq!(progress_length(Until::Tasks, h), None);
        assert_eq!(progress_length(Until::Duration, h), Some(3_600_000));
        assert_eq!(run_end(Until::Tasks, true, 5, h), Some(RunEnd::TasksDone));
        assert_eq!(run_end(Until::Tasks, false, 5, h), None);
        assert_eq!(run_end(Until::Tasks, false, h, h), Some(RunEnd::Duration));
        assert_eq!(run_end(Until::Tasks, true, h, h), Some(RunEnd::TasksDone));
        assert_eq!(run_end(Until::Duration, true, 5, h), None);
        assert_eq!(run_end(Until::Duration, true, h, h), Some(RunEnd::Duration));
    }

    #[test]
    fn progress_messages_say_what_is_left_and_why_the_run_ended() {
        let h = 3_600_000_000_000;
        assert_eq!(short_secs(0), "0s");
        assert_eq!(short_secs(50_000_000), "0.05s");
        assert_eq!(short_secs(3_614_200_000), "3.614s");
        assert_eq!(short_secs(h), "3600s");
        assert_eq!(
            progress_message(Until::Tasks, 12_300_000_000, h, 2, 1),
            "12.3s virtual, 2 tasks running, 1 waiting to start; ends when all are done, by 3600s"
        );
        assert_eq!(
            progress_message(Until::Duration, 2_000_000_000, 20_000_000_000, 1, 0),
            "2s / 20s virtual, 1 task running"
        );
        assert_eq!(
            progress_message(Until::Duration, 0, 1_000_000_000, 0, 0),
            "0s / 1s virtual, no task running"
        );
        assert_eq!(
            end_message(
                RunEnd::TasksDone,
                3_614_000_000,
                h,
                0,
                0,
                Some(3_614_000_000)
            ),
            "all tasks done at 3.614s"
        );
        assert_eq!(
            end_message(RunEnd::Duration, h, h, 1, 2, None),
            "duration 3600s reached; still 1 task running, 2 waiting to start"
        );
        assert_eq!(
            end_message(RunEnd::Duration, h, h, 0, 0, Some(1_500_000_000)),
            "duration 3600s reached; all tasks done since 1.5s"
        );
    }

    #[test]
    fn keyed_order_keeps_the_file_order() {
        let t = "b 1\na 2\nc x\nb 3\nd: 4\n";
        assert_eq!(keyed_order(t), ["b", "a", "d"]);
    }
}
