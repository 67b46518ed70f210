//! Reports of one run: the summary table printed by `memcgsim run`, `summary.json`,
//! `timeseries.csv` and `actions.csv` (crate::results writes them with the charts into a
//! results folder).
//!
//! The summary shows only what the run used: a column that is `-` in every row (a file the
//! cgroup version lacks) is left out, and the reclaim line speaks of soft-limit reclaim only
//! when the set-up writes a soft limit or soft-limit reclaim ran. Counts are integers; the
//! machine's peaks are the true ones (see crate::runner).
//!
//! Everything here is a pure function of the [`RunResult`]: integers are printed as they are,
//! floats with fixed precision, in a fixed order, so equal runs give byte-identical files.

use std::fmt::Write as _;

use crate::controller::Action;
use crate::runner::{CgroupSummary, RunResult, TaskRecord};
use crate::units::{fmt_ns, fmt_size, fmt_time_s};

/// The columns of a table that say something: a column that is `-` in every row (a file
/// the cgroup version does not have) is left out.
fn used_columns<'a>(header: &[&'a str], rows: &[Vec<String>]) -> (Vec<&'a str>, Vec<Vec<String>>) {
    let used: Vec<bool> = (0..header.len())
        .map(|i| {
            i == 0 || rows.is_empty() || rows.iter().any(|r| r.get(i).is_some_and(|c| c != "-"))
        })
        .collect();
    let pick = |cells: Vec<String>| -> Vec<String> {
        cells
            .into_iter()
            .zip(&used)
            .filter_map(|(c, &u)| u.then_some(c))
            .collect()
    };
    let h = header
        .iter()
        .zip(&used)
        .filter_map(|(c, &u)| u.then_some(*c))
        .collect();
    (h, rows.iter().cloned().map(pick).collect())
}

/// A table with left-aligned first column and right-aligned others.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let n = header.len();
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut s = String::new();
    let line = |cells: Vec<&str>, s: &mut String| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 0 {
                let _ = write!(l, "{c:<width$}", width = w[0]);
            } else {
                let _ = write!(l, "  {c:>width$}", width = w[i]);
            }
        }
        s.push_str(l.trim_end());
        s.push('\n');
    };
    line(header.to_vec(), &mut s);
    let total: usize = w.iter().sum::<usize>() + 2 * (n.saturating_sub(1));
    s.push_str(&"-".repeat(total));
    s.push('\n');
    for r in rows {
        line(r.iter().map(|c| c.as_str()).collect(), &mut s);
    }
    s
}

fn opt(v: Option<u64>, f: fn(u64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

fn count(v: u64) -> String {
    v.to_string()
}

fn cgroup_row(c: &CgroupSummary, name: String) -> Vec<String> {
    vec![
        name,
        opt(c.usage_end, fmt_size),
        opt(c.usage_peak, fmt_size),
        opt(c.swap_peak, fmt_size),
        opt(c.pgfault, count),
        opt(c.pgmajfault, count),
        opt(c.pswpin, count),
        opt(c.pswpout, count),
        opt(c.pgscan, count),
        opt(c.pgsteal, count),
        opt(c.oom_kill, count),
        opt(c.high, count),
        opt(c.max, count),
    ]
}

/// The counters of /proc/memcgsim/reclaim that only soft-limit reclaim moves.
const SOFT_RECLAIM_WORK: &[&str] = &[
    "soft_reclaim_calls",
    "soft_groups_walked",
    "soft_groups_shrunk",
    "soft_scanned",
    "soft_reclaimed",
];

/// The controller actions `render` lists before pointing at actions.csv.
const MAX_ACTIONS_SHOWN: usize = 20;

/// `  12.003s oomd: kill /A/b (why)`, `  6.000s senpai: high /A = 1.2G (why)`.
fn action_line(a: &Action, cgroup: String) -> String {
    let value = a
        .value
        .map(|v| format!(" = {}", fmt_size(v)))
        .unwrap_or_default();
    format!(
        "  {:>10} {}: {} {}{value} ({})\n",
        fmt_ns(a.time_ns),
        a.controller,
        a.action,
        cgroup,
        a.detail
    )
}

fn task_row(t: &TaskRecord, cgroup: String) -> Vec<String> {
    let started = t.start_ns.is_some();
    let d = |v: u64| if started { fmt_ns(v) } else { "-".into() };
    let c = |v: u64| if started { v.to_string() } else { "-".into() };
    vec![
        t.name.clone(),
        cgroup,
        t.outcome.clone(),
        t.start_ns.map(fmt_ns).unwrap_or_else(|| "-".into()),
        d(t.elapsed_ns),
        d(t.user_ns),
        d(t.system_ns),
        c(t.minflt),
        c(t.majflt),
        d(t.io_wait_ns),
        d(t.throttled_ns),
        d(t.reclaim_ns),
    ]
}

impl RunResult {
    /// How the report names a cgroup: by its owner when systemd or the kubelet made it
    /// (`web.service`, `pod shop/web-0`), else by its path.
    pub fn cgroup_name(&self, path: &str) -> String {
        self.setup
            .owners
            .iter()
            .find(|(p, _)| p == path)
            .map_or_else(|| path.to_string(), |(_, o)| o.clone())
    }

    /// The summary table `memcgsim run` prints.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let generated = match self.setup.generated_cgroups {
            0 => String::new(),
            n => format!(", {n} generated idle cgroups"),
        };
        let _ = writeln!(
            s,
            "scenario {}, variant {}, seed {}: ran {} of virtual time (cgroup {}{generated})",
            self.scenario,
            self.variant,
            self.seed,
            fmt_ns(self.end_ns),
            self.cgroup_version
        );
        if !self.description.is_empty() {
            let _ = writeln!(s, "{}", self.description);
        }
        s.push('\n');
        let rows: Vec<Vec<String>> = self
            .cgroups
            .iter()
            .map(|c| cgroup_row(c, self.cgroup_name(&c.cgroup)))
            .collect();
        let (header, rows) = used_columns(
            &[
                "cgroup",
                "usage",
                "peak",
                "swap peak",
                "pgfault",
                "pgmajfault",
                "pswpin",
                "pswpout",
                "pgscan",
                "pgsteal",
                "oom_kill",
                "high",
                "max",
            ],
            &rows,
        );
        s.push_str(&table(&header, &rows));
        if let Some(line) = self.reclaim_line() {
            s.push_str(&line);
            s.push('\n');
        }
        s.push('\n');
        let rows: Vec<Vec<String>> = self
            .tasks
            .iter()
            .map(|t| task_row(t, self.cgroup_name(&t.cgroup)))
            .collect();
        s.push_str(&table(
            &[
                "task",
                "cgroup",
                "outcome",
                "start",
                "elapsed",
                "user",
                "system",
                "minflt",
                "majflt",
                "io wait",
                "throttled",
                "reclaim",
            ],
            &rows,
        ));
        for t in &self.tasks {
            if let Some(e) = &t.error {
                let _ = writeln!(s, "{}: {e}", t.name);
            }
        }
        if !self.writes.is_empty() {
            s.push('\n');
            let _ = writeln!(s, "timed writes:");
            for w in &self.writes {
                let _ = writeln!(
                    s,
                    "  {:>10} {} > {}: {}",
                    fmt_ns(w.time_ns),
                    w.value,
                    w.path,
                    w.result
                );
            }
        }
        if !self.actions.is_empty() {
            s.push('\n');
            let shown = self.actions.len().min(MAX_ACTIONS_SHOWN);
            let _ = writeln!(s, "controller actions:");
            for a in &self.actions[..shown] {
                s.push_str(&action_line(a, self.cgroup_name(&a.cgroup)));
            }
            if self.actions.len() > shown {
                let _ = writeln!(
                    s,
                    "... and {} more controller actions (all in actions.csv)",
                    self.actions.len() - shown
                );
            }
        }
        if !self.setup.owners.is_empty() {
            s.push('\n');
            let _ = writeln!(s, "cgroups of systemd units and Kubernetes pods:");
            for (path, owner) in &self.setup.owners {
                let _ = writeln!(s, "  {owner}: {path}");
            }
        }
        s
    }

    /// `actions.csv`: every controller action, `time_s,controller,action,cgroup,value,why`.
    pub fn actions_csv(&self) -> String {
        let mut s = String::from("time_s,controller,action,cgroup,value,why\n");
        for a in &self.actions {
            let value = a.value.map(|v| v.to_string()).unwrap_or_default();
            let _ = writeln!(
                s,
                "{},{},{},{},{value},\"{}\"",
                fmt_time_s(a.time_ns),
                a.controller,
                a.action,
                a.cgroup,
                a.detail.replace('"', "\"\"")
            );
        }
        s
    }

    /// Did the run use soft limits: does its set-up write a soft limit, or did soft-limit
    /// reclaim run?
    fn used_soft_limits(&self) -> bool {
        let written = self.setup.cgroups.iter().any(|c| {
            c.files
                .iter()
                .any(|f| f.key == "memory.soft_limit_in_bytes")
        });
        let g = |k: &str| self.reclaim.get(k).unwrap_or(0);
        written || SOFT_RECLAIM_WORK.iter().any(|k| g(k) != 0)
    }

    /// The one-line account of reclaim printed after the cgroup table: of soft-limit
    /// reclaim and reclaim walks when the run used soft limits, else of the reclaim walks
    /// alone; none when every counter of /proc/memcgsim/reclaim it would show is 0.
    pub fn reclaim_line(&self) -> Option<String> {
        let g = |k: &str| self.reclaim.get(k).unwrap_or(0);
        if self.used_soft_limits() {
            return Some(format!(
                "soft-limit reclaim: {} calls, {}, {} groups walked, {} shrunk, {} scanned, {} reclaimed, {} soft limit updates; {} reclaim-all fallbacks; {} memcg walk steps",
                g("soft_reclaim_calls"),
                fmt_ns(g("soft_reclaim_ns")),
                g("soft_groups_walked"),
                g("soft_groups_shrunk"),
                g("soft_scanned"),
                g("soft_reclaimed"),
                g("soft_limit_updates"),
                g("reclaim_all_fallbacks"),
                g("memcg_walk_steps"),
            ));
        }
        let (walks, fallbacks) = (g("memcg_walk_steps"), g("reclaim_all_fallbacks"));
        if walks == 0 && fallbacks == 0 {
            return None;
        }
        Some(format!(
            "reclaim walks: {walks} memcg walk steps; {fallbacks} reclaim-all fallbacks"
        ))
    }

    /// `summary.json`: the scenario echo (effective set-up of the variant), the per-cgroup
    /// and per-task figures.
    pub fn summary_json(&self) -> Result<String, String> {
        let mut s = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        s.push('\n');
        Ok(s)
    }

    /// `timeseries.csv` in long format: `time_s,cgroup,key,value`, one line per sampled value.
    pub fn timeseries_csv(&self) -> String {
        let mut s = String::from("time_s,cgroup,key,value\n");
        for (t, k, v) in self.series.samples() {
            let _ = writeln!(s, "{},{},{},{v}", fmt_time_s(t), k.cgroup, k.key);
        }
        s
    }
}
