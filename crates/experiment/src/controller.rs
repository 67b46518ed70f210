//! Userspace memory controllers run inside the simulation, in virtual time: they read and
//! write cgroup files through the simulated cgroupfs exactly as the real agents do, and
//! every action they take is logged with its virtual time.
//!
//! - `oomd`: systemd-oomd's memory-pressure killer (src/oom/oomd-manager.c and oomd-util.c
//!   in systemd). Every `tick` (1 s) it reads the monitored cgroup's `memory.pressure`; once
//!   `full avg10` has stayed above `limit` (60%) on every tick for `duration` (30 s), it
//!   kills, through `cgroup.kill`, the candidate cgroup below it (a leaf, or a group with
//!   `memory.oom.group`) whose pgscan grew most since the last tick (ties: the larger
//!   `memory.current`), provided the monitored cgroup reclaimed within `reclaim_window`
//!   (30 s) and the last kill is more than `post_action_delay` (15 s) old. One kill a tick.
//!   Not modelled: ManagedOOMPreference (xattrs), pre-kill hooks, the swap-based killer.
//! - `senpai`: Senpai's proactive reclaimer (senpai.py in facebookincubator/senpai). Every
//!   `tick` (1 s) it adds the growth of `memory.pressure`'s `some total` to an integral.
//!   Above `pressure` (10 ms) it backs off at once: memory.high grows by
//!   min((integral/pressure/coeff_backoff)² · max_backoff, max_backoff). Otherwise, every
//!   `interval` ticks (6), it probes: memory.high shrinks by
//!   min((pressure/integral/coeff_probe)² · max_probe, max_probe). The limit starts at
//!   `memory.current`, stays in [min_size, max_size], is rounded down to 4 KiB, and is reset
//!   to `memory.current` when memory.high was changed behind its back. With `mode =
//!   "reclaim"` it writes the probe's share of memory.current to `memory.reclaim` instead
//!   (stateless, as TMO's later agents do) and a backoff only resets the integral.
//! - `kubelet-eviction`: the kubelet's eviction manager for memory (eviction.rs), which a
//!   scenario's `[kubernetes]` section sets up.
//!
//! A controller's CPU time and its reads are free: the simulated machine does not see the
//! agent as a task.

use memcgsim_cgroupfs::System;
use serde::Serialize;

use crate::keyed::{file_path, parse_keyed, pressure_field, Setting};
use crate::units::{fmt_ns, fmt_size};

/// The controller kinds a scenario may name.
pub const KINDS: &[&str] = &["oomd", "senpai", "kubelet-eviction"];

/// A bound on the cgroups an oomd walk looks at.
const MAX_CANDIDATES: usize = 100_000;

/// One thing a controller did, at a virtual time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Action {
    pub time_ns: u64,
    /// The controller's name in the scenario.
    pub controller: String,
    /// The cgroup acted on.
    pub cgroup: String,
    /// `kill`, `high` or `reclaim`.
    pub action: String,
    /// The value written (the new memory.high, the bytes asked of memory.reclaim), if any.
    pub value: Option<u64>,
    /// Why, in words.
    pub detail: String,
}

/// systemd-oomd's settings (its defaults in parentheses in the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct OomdParams {
    /// ManagedOOMMemoryPressureLimit, in hundredths of a percent.
    pub limit: u64,
    pub duration_ns: u64,
    pub post_action_delay_ns: u64,
    pub reclaim_window_ns: u64,
}

/// Senpai's settings (senpai.py's command-line options).
#[derive(Clone, Debug, PartialEq)]
pub struct SenpaiParams {
    /// Ticks between probes.
    pub interval: u32,
    /// The target stall per interval, in microseconds.
    pub pressure_us: u64,
    pub max_probe: f64,
    pub max_backoff: f64,
    pub coeff_probe: f64,
    pub coeff_backoff: f64,
    pub min_size: u64,
    pub max_size: u64,
    /// Write memory.reclaim instead of memory.high.
    pub reclaim: bool,
}

/// A controller's kind and settings.
#[derive(Clone, Debug, PartialEq)]
pub enum Params {
    Oomd(OomdParams),
    Senpai(SenpaiParams),
    Eviction(crate::eviction::EvictionParams),
}

/// A controller's settings, checked: when it starts, how often it ticks, and its kind's.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub start_ns: u64,
    pub tick_ns: u64,
    pub params: Params,
}

/// A setting that is wrong: its line, key and what is wrong.
pub type SettingError = (usize, String, String);

fn bad(s: &Setting, msg: impl Into<String>) -> SettingError {
    (s.line, s.key.clone(), msg.into())
}

fn duration_of(s: &Setting) -> Result<u64, SettingError> {
    memcgsim_model::units::parse_duration_ns(&s.value).map_err(|e| bad(s, e))
}

fn size_of(s: &Setting) -> Result<u64, SettingError> {
    memcgsim_model::units::parse_size(&s.value).map_err(|e| bad(s, e))
}

fn float_of(s: &Setting, lo: f64, hi: f64) -> Result<f64, SettingError> {
    match s.value.parse::<f64>() {
        Ok(v) if v.is_finite() && (lo..=hi).contains(&v) => Ok(v),
        _ => Err(bad(s, format!("expected a number from {lo} to {hi}"))),
    }
}

/// `60%`, `60` or `12.5%` in hundredths of a percent (0 to 100%).
fn percent_of(s: &Setting) -> Result<u64, SettingError> {
    let t = s.value.strip_suffix('%').unwrap_or(&s.value);
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let ok = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.len() <= 2
        && frac.bytes().all(|b| b.is_ascii_digit());
    let v = ok
        .then(|| {
            let i: u64 = int.parse().ok()?;
            let f: u64 = format!("{frac:0<2}").parse().ok()?;
            i.checked_mul(100)?.checked_add(f)
        })
        .flatten();
    match v {
        Some(v) if v <= 10_000 => Ok(v),
        _ => Err(bad(
            s,
            format!(
                "expected a percentage such as \"60%\" (0 to 100, two decimals at most), got '{}'",
                s.value
            ),
        )),
    }
}

/// Check a controller's settings (every key but name, kind, cgroup and enabled).
pub fn config(kind: &str, settings: &[Setting]) -> Result<Config, SettingError> {
    let mut start_ns = 0;
    let mut tick_ns = 1_000_000_000;
    let mut oomd = OomdParams {
        limit: 6_000,
        duration_ns: 30_000_000_000,
        post_action_delay_ns: 15_000_000_000,
        reclaim_window_ns: 30_000_000_000,
    };
    let mut senpai = SenpaiParams {
        interval: 6,
        pressure_us: 10_000,
        max_probe: 0.01,
        max_backoff: 1.0,
        coeff_probe: 10.0,
        coeff_backoff: 20.0,
        min_size: 100 << 20,
        max_size: 100 << 30,
        reclaim: false,
    };
    for s in settings {
        match (kind, s.key.as_str()) {
            ("kubelet-eviction", k) if k != "start" && k != "tick" => {}
            (_, "start") => start_ns = duration_of(s)?,
            (_, "tick") => {
                tick_ns = duration_of(s)?;
                if tick_ns < 1_000_000 {
                    return Err(bad(s, "the tick must be at least 1ms"));
                }
            }
            ("oomd", "limit") => oomd.limit = percent_of(s)?,
            ("oomd", "duration") => oomd.duration_ns = duration_of(s)?,
            ("oomd", "post_action_delay") => oomd.post_action_delay_ns = duration_of(s)?,
            ("oomd", "reclaim_window") => oomd.reclaim_window_ns = duration_of(s)?,
            ("senpai", "interval") => {
                senpai.interval = match s.value.parse::<u32>() {
                    Ok(v) if (1..=10_000).contains(&v) => v,
                    _ => return Err(bad(s, "expected a number of ticks from 1 to 10000")),
                }
            }
            ("senpai", "pressure") => {
                let ns = duration_of(s)?;
                if ns < 1_000 {
                    return Err(bad(s, "the target pressure must be at least 1us"));
                }
                senpai.pressure_us = ns / 1_000;
            }
            ("senpai", "max_probe") => senpai.max_probe = float_of(s, 0.0, 1.0)?,
            ("senpai", "max_backoff") => senpai.max_backoff = float_of(s, 0.0, 10.0)?,
            ("senpai", "coeff_probe") => senpai.coeff_probe = float_of(s, 0.001, 1e6)?,
            ("senpai", "coeff_backoff") => senpai.coeff_backoff = float_of(s, 0.001, 1e6)?,
            ("senpai", "min_size") => senpai.min_size = size_of(s)?,
            ("senpai", "max_size") => senpai.max_size = size_of(s)?,
            ("senpai", "mode") => {
                senpai.reclaim = match s.value.as_str() {
                    "high" => false,
                    "reclaim" => true,
                    v => {
                        return Err(bad(
                            s,
                            format!("expected \"high\" or \"reclaim\", got '{v}'"),
                        ))
                    }
                }
            }
            _ => {
                let keys = match kind {
                    "oomd" => "start, tick, limit, duration, post_action_delay, reclaim_window",
                    _ => "start, tick, interval, pressure, max_probe, max_backoff, coeff_probe, coeff_backoff, min_size, max_size, mode",
                };
                return Err(bad(
                    s,
                    format!("not a setting of a {kind} controller (its settings: {keys})"),
                ));
            }
        }
    }
    if senpai.min_size > senpai.max_size {
        let s = settings
            .iter()
            .find(|s| s.key == "min_size" || s.key == "max_size")
            .expect("a size was set");
        return Err(bad(s, "min_size is larger than max_size"));
    }
    let params = match kind {
        "oomd" => Params::Oomd(oomd),
        "kubelet-eviction" => Params::Eviction(crate::eviction::config(settings)?),
        _ => Params::Senpai(senpai),
    };
    Ok(Config {
        start_ns,
        tick_ns,
        params,
    })
}

// ------------------------------------------------------------------ running

fn read_number(sys: &mut System, path: &str) -> Option<u64> {
    let t = sys.read(path).ok()?;
    match t.split_whitespace().next()? {
        "max" => Some(u64::MAX),
        w => w.parse().ok(),
    }
}

/// A key of the cgroup's memory.stat.
fn read_stat(sys: &mut System, cgroup: &str, key: &str) -> Option<u64> {
    let t = sys.read(&file_path(cgroup, "memory.stat")).ok()?;
    parse_keyed(&t).get(key).copied()
}

/// `12.34%` from hundredths.
fn pct(h: u64) -> String {
    format!("{}.{:02}%", h / 100, h % 100)
}

fn secs(ns: u64) -> String {
    fmt_ns(ns)
}

/// An oomd candidate's figures at the last tick.
#[derive(Clone, Debug)]
struct Candidate {
    path: String,
    pgscan: u64,
    /// pgscan growth since the previous tick's snapshot (all of it without one).
    rate: u64,
    current: u64,
}

#[derive(Clone, Debug, Default)]
struct OomdState {
    hit_start: Option<u64>,
    last_pgscan: Option<u64>,
    last_had_reclaim: Option<u64>,
    post_action_start: Option<u64>,
    /// The candidates' pgscan at the last refresh, by path.
    snapshot: Vec<(String, u64)>,
}

#[derive(Clone, Debug, Default)]
struct SenpaiState {
    started: bool,
    limit: Option<u64>,
    last_total: u64,
    integral: u64,
    grace_ticks: u32,
}

/// A controller at run time.
pub struct Controller {
    pub name: String,
    pub cgroup: String,
    config: Config,
    next_tick: u64,
    oomd: OomdState,
    senpai: SenpaiState,
    eviction: crate::eviction::EvictionState,
    /// Ticks that found the cgroup's files unreadable (it was removed).
    pub missed_ticks: u64,
}

impl Controller {
    pub fn new(name: &str, cgroup: &str, config: Config) -> Controller {
        Controller {
            name: name.to_string(),
            cgroup: cgroup.to_string(),
            next_tick: config.start_ns,
            config,
            oomd: OomdState::default(),
            senpai: SenpaiState::default(),
            eviction: Default::default(),
            missed_ticks: 0,
        }
    }

    /// Why no task may start in `cgroup` any more (a pod the kubelet evicted), if so.
    pub fn refuses(&self, cgroup: &str) -> Option<String> {
        match &self.config.params {
            Params::Eviction(p) => p
                .evicted_pod(&self.eviction, cgroup)
                .map(|pod| format!("pod {pod} evicted")),
            _ => None,
        }
    }

    /// When the controller next reads its files.
    pub fn next_tick(&self) -> u64 {
        self.next_tick
    }

    /// The number of ticks up to `end_ns`, for the run's step bound.
    pub fn ticks_until(&self, end_ns: u64) -> u64 {
        end_ns.saturating_sub(self.config.start_ns) / self.config.tick_ns + 1
    }

    /// Run the tick due at `now` (the caller runs the machine to it), logging actions.
    pub fn tick(&mut self, sys: &mut System, now: u64, log: &mut Vec<Action>) {
        debug_assert!(now >= self.next_tick);
        let ok = match self.config.params.clone() {
            Params::Oomd(p) => self.oomd_tick(&p, sys, now, log),
            Params::Senpai(p) => self.senpai_tick(&p, sys, now, log),
            Params::Eviction(p) => {
                let mut steps = Vec::new();
                let r = crate::eviction::tick(&p, &mut self.eviction, sys, now, &mut steps);
                for s in steps {
                    log.push(self.action(now, &s.cgroup, s.action, s.value, s.detail));
                }
                r
            }
        };
        if ok.is_none() {
            self.missed_ticks += 1;
        }
        // The next tick on the schedule, skipping any the run stepped over.
        let tick = self.config.tick_ns;
        let missed = (now - self.next_tick) / tick;
        self.next_tick += (missed + 1) * tick;
    }

    fn action(
        &self,
        now: u64,
        cgroup: &str,
        action: &str,
        value: Option<u64>,
        detail: String,
    ) -> Action {
        Action {
            time_ns: now,
            controller: self.name.clone(),
            cgroup: cgroup.to_string(),
            action: action.to_string(),
            value,
            detail,
        }
    }

    /// The candidates below the monitored cgroup: leaves, and groups with memory.oom.group
    /// (not descended into); the monitored cgroup itself when it has no children.
    fn candidates(&self, sys: &mut System) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.cgroup.clone()];
        while let Some(cg) = stack.pop() {
            if out.len() >= MAX_CANDIDATES {
                break;
            }
            let children: Vec<String> = sys
                .list(&cg)
                .unwrap_or_default()
                .into_iter()
                .map(|e| file_path(&cg, &e))
                .filter(|p| sys.is_dir(p))
                .collect();
            let group = cg != self.cgroup
                && read_number(sys, &file_path(&cg, "memory.oom.group")) == Some(1);
            if children.is_empty() || group {
                out.push(cg);
            } else {
                // Reversed, so the walk visits children in directory order.
                stack.extend(children.into_iter().rev());
            }
        }
        out
    }

    fn oomd_tick(
        &mut self,
        p: &OomdParams,
        sys: &mut System,
        now: u64,
        log: &mut Vec<Action>,
    ) -> Option<()> {
        let text = sys.read(&file_path(&self.cgroup, "memory.pressure")).ok()?;
        let avg10 = pressure_field(&text, "full", "avg10")?;
        let pgscan = read_stat(sys, &self.cgroup, "pgscan")?;
        let st = &mut self.oomd;
        if st.last_pgscan.is_some_and(|l| pgscan > l) {
            st.last_had_reclaim = Some(now);
        }
        st.last_pgscan = Some(pgscan);
        // oomd_pressure_above(): the limit must be exceeded on every tick of the duration.
        let over = avg10 > p.limit;
        if over {
            st.hit_start.get_or_insert(now);
        } else {
            st.hit_start = None;
        }
        // The candidates are refreshed on every tick with pressure above the limit, and
        // forgotten on the others.
        let mut cands: Vec<Candidate> = Vec::new();
        if over {
            let prev = std::mem::take(&mut self.oomd.snapshot);
            for path in self.candidates(sys) {
                let (Some(pgscan), Some(current)) = (
                    read_stat(sys, &path, "pgscan"),
                    read_number(sys, &file_path(&path, "memory.current")),
                ) else {
                    continue;
                };
                let last = prev
                    .iter()
                    .find(|(x, _)| *x == path)
                    .map(|x| x.1)
                    .filter(|&l| l <= pgscan)
                    .unwrap_or(0);
                cands.push(Candidate {
                    path,
                    pgscan,
                    rate: pgscan - last,
                    current,
                });
            }
            self.oomd.snapshot = cands.iter().map(|c| (c.path.clone(), c.pgscan)).collect();
        } else {
            self.oomd.snapshot.clear();
        }
        let st = &mut self.oomd;
        if let Some(start) = st.post_action_start {
            if now < start + p.post_action_delay_ns {
                return Some(());
            }
            st.post_action_start = None;
        }
        let Some(hit) = st.hit_start.filter(|&h| now - h >= p.duration_ns) else {
            return Some(());
        };
        if st
            .last_had_reclaim
            .is_none_or(|t| now - t > p.reclaim_window_ns)
        {
            return Some(());
        }
        // compare_pgscan_rate_and_memory_usage(): the most reclaim activity first, then the
        // largest usage; candidates with nothing scanned and nothing charged are skipped.
        cands.sort_by(|a, b| b.rate.cmp(&a.rate).then(b.current.cmp(&a.current)));
        for c in cands {
            if c.pgscan == 0 && c.current == 0 {
                continue;
            }
            let procs = sys
                .read(&file_path(&c.path, "cgroup.procs"))
                .unwrap_or_default();
            if procs.trim().is_empty() {
                continue;
            }
            if sys.write(&file_path(&c.path, "cgroup.kill"), "1").is_err() {
                continue;
            }
            let detail = format!(
                "full avg10 {} > {} for {} in {}; pgscan +{} (memory.current {})",
                pct(avg10),
                pct(p.limit),
                secs(now - hit),
                self.cgroup,
                c.rate,
                fmt_size(c.current),
            );
            log.push(self.action(now, &c.path, "kill", None, detail));
            self.oomd.post_action_start = Some(now);
            break;
        }
        Some(())
    }

    fn senpai_tick(
        &mut self,
        p: &SenpaiParams,
        sys: &mut System,
        now: u64,
        log: &mut Vec<Action>,
    ) -> Option<()> {
        let text = sys.read(&file_path(&self.cgroup, "memory.pressure")).ok()?;
        let total = pressure_field(&text, "some", "total")?;
        if !self.senpai.started {
            // Senpai's start: the limit is set to memory.current, the clock starts.
            self.senpai.started = true;
            self.senpai.last_total = total;
            self.senpai.grace_ticks = p.interval;
            if !p.reclaim {
                let current = read_number(sys, &file_path(&self.cgroup, "memory.current"))?;
                self.set_limit(p, sys, now, current, "start".into(), log)?;
            }
            return Some(());
        }
        let st = &mut self.senpai;
        st.integral += total.saturating_sub(st.last_total);
        st.last_total = total;
        let target = p.pressure_us as f64;
        if st.integral > p.pressure_us {
            let err = st.integral as f64 / target;
            let adj = ((err / p.coeff_backoff).powi(2) * p.max_backoff).min(p.max_backoff);
            let why = format!(
                "backoff: some stall {}us > {}us",
                st.integral, p.pressure_us
            );
            st.grace_ticks = p.interval - 1;
            st.integral = 0;
            if !p.reclaim {
                self.scale_limit(p, sys, now, adj, why, log)?;
            }
            return Some(());
        }
        if st.grace_ticks > 0 {
            st.grace_ticks -= 1;
            return Some(());
        }
        let err = target / st.integral.max(1) as f64;
        let adj = ((err / p.coeff_probe).powi(2) * p.max_probe).min(p.max_probe);
        let why = format!("probe: some stall {}us <= {}us", st.integral, p.pressure_us);
        st.grace_ticks = p.interval - 1;
        st.integral = 0;
        if p.reclaim {
            let current = read_number(sys, &file_path(&self.cgroup, "memory.current"))?;
            let bytes = ((current as f64 * adj) as u64) & !4095;
            if bytes > 0 {
                let path = file_path(&self.cgroup, "memory.reclaim");
                // memory.reclaim fails with EAGAIN when it reclaims less than asked; the
                // agent goes on either way.
                let r = sys.write(&path, &bytes.to_string());
                let outcome = match r {
                    Ok(()) => String::new(),
                    Err(e) => format!(" ({e})"),
                };
                let detail = format!(
                    "{why}; {:.2}% of {}{outcome}",
                    adj * 100.0,
                    fmt_size(current)
                );
                log.push(self.action(now, &self.cgroup, "reclaim", Some(bytes), detail));
            }
        } else {
            self.scale_limit(p, sys, now, -adj, why, log)?;
        }
        Some(())
    }

    /// scale_limit(): memory.high as read, times 1 + factor.
    fn scale_limit(
        &mut self,
        p: &SenpaiParams,
        sys: &mut System,
        now: u64,
        factor: f64,
        why: String,
        log: &mut Vec<Action>,
    ) -> Option<()> {
        let x = read_number(sys, &file_path(&self.cgroup, "memory.high"))?;
        let x = if x == u64::MAX {
            x
        } else {
            (x as f64 + x as f64 * factor) as u64
        };
        self.set_limit(p, sys, now, x, why, log)
    }

    /// set_limit() and import_limit(): reset to memory.current when memory.high is not what
    /// the controller last wrote; clamp, round down to a page, write.
    fn set_limit(
        &mut self,
        p: &SenpaiParams,
        sys: &mut System,
        now: u64,
        limit: u64,
        why: String,
        log: &mut Vec<Action>,
    ) -> Option<()> {
        let high = file_path(&self.cgroup, "memory.high");
        let mut limit = limit;
        let mut why = why;
        if read_number(sys, &high) != self.senpai.limit {
            limit = read_number(sys, &file_path(&self.cgroup, "memory.current"))?;
            if self.senpai.limit.is_some() {
                why = format!("{why}; memory.high was changed: reset to memory.current");
            }
        }
        let limit = limit.clamp(p.min_size, p.max_size) & !4095;
        self.senpai.limit = Some(limit);
        sys.write(&high, &limit.to_string()).ok()?;
        log.push(self.action(now, &self.cgroup, "high", Some(limit), why));
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(key: &str, value: &str) -> Setting {
        Setting {
            key: key.into(),
            value: value.into(),
            line: 7,
        }
    }

    #[test]
    fn settings_are_checked_with_their_line() {
        let c = config(
            "oomd",
            &[setting("limit", "50%"), setting("duration", "20s")],
        )
        .unwrap();
        let Params::Oomd(o) = c.params else { panic!() };
        assert_eq!((o.limit, o.duration_ns), (5_000, 20_000_000_000));
        assert_eq!(percent_of(&setting("limit", "12.5%")), Ok(1_250));
        assert_eq!(percent_of(&setting("limit", "60")), Ok(6_000));
        for bad in ["101%", "x", "1.234%", "-1%", ""] {
            assert!(percent_of(&setting("limit", bad)).is_err(), "{bad}");
        }
        let e = config("senpai", &[setting("limit", "50%")]).unwrap_err();
        assert_eq!(e.0, 7);
        assert!(
            e.2.contains("not a setting of a senpai controller"),
            "{}",
            e.2
        );
        let e = config(
            "senpai",
            &[setting("min_size", "2G"), setting("max_size", "1G")],
        );
        assert!(e.unwrap_err().2.contains("larger than max_size"));
        assert!(config("senpai", &[setting("mode", "both")]).is_err());
        assert!(config("oomd", &[setting("tick", "10us")]).is_err());
    }

    #[test]
    fn pressure_fields_read_as_hundredths_and_microseconds() {
        let t = "some avg10=12.34 avg60=0.50 avg300=0.00 total=123456\nfull avg10=1.05 avg60=0.00 avg300=0.00 total=99\n";
        assert_eq!(pressure_field(t, "some", "avg10"), Some(1_234));
        assert_eq!(pressure_field(t, "full", "avg10"), Some(105));
        assert_eq!(pressure_field(t, "some", "total"), Some(123_456));
        assert_eq!(pressure_field(t, "full", "avg600"), None);
    }
    const OOMD: &str = r#"
name = "oomd-test"
[machine]
memory = "512M"
swap = "512M"
cpus = 2
[[cgroup]]
path = "/w"
files = { "cgroup.subtree_control" = "+memory" }
[[cgroup]]
path = "/w/hog"
files = { "memory.high" = "8M" }
[[cgroup]]
path = "/w/idle"
[[task]]
name = "hog"
cgroup = "/w/hog"
workload = "anon"
args = ["256M", "--passes", "100"]
[[task]]
name = "idle"
cgroup = "/w/idle"
workload = "anon"
args = ["4M", "--hold"]
[[controller]]
kind = "oomd"
cgroup = "/w"
limit = "3%"
duration = "5s"
[run]
duration = "40s"
[[variant]]
name = "kernel"
controller.oomd.enabled = false
[[variant]]
name = "oomd"
"#;

    /// A task thrashing under memory.high in /w/hog: its reclaim and workingset refaults
    /// keep /w's full avg10 near 5% from 3 s on (most of its wait is plain I/O, not a
    /// memstall). The kernel never kills it; oomd with a 3% limit sees it above at the tick of
    /// 3 s, and kills /w/hog at the tick 5 s later.
    #[test]
    fn oomd_kills_the_stalled_group_once_pressure_lasts() {
        let sc = crate::scenario::parse(OOMD, "oomd.toml").unwrap();
        let k = crate::run_variant(&sc, "kernel", 1, false).unwrap();
        assert!(k.actions.is_empty());
        let hog = |r: &crate::RunResult| r.tasks.iter().find(|t| t.task == "hog").unwrap().clone();
        assert_eq!(hog(&k).outcome, "running", "the kernel lets it thrash");
        let avg = k.series.points("/w", "memory.pressure:full.avg10");
        assert!(
            avg.iter().any(|&(t, v)| t == 3_000_000_000 && v > 300),
            "{avg:?}"
        );
        let o = crate::run_variant(&sc, "oomd", 1, false).unwrap();
        assert_eq!(o.actions.len(), 1, "{:?}", o.actions);
        let a = &o.actions[0];
        assert_eq!((a.action.as_str(), a.cgroup.as_str()), ("kill", "/w/hog"));
        assert_eq!(a.time_ns, 8_000_000_000, "{a:?}");
        assert_eq!(hog(&o).outcome, "killed");
        assert_eq!(hog(&o).end_ns, Some(a.time_ns));
        let idle = o.tasks.iter().find(|t| t.task == "idle").unwrap();
        assert_eq!(
            idle.outcome, "holding",
            "the idle group is not a candidate's victim"
        );
        assert!(o.render().contains("oomd: kill /w/hog"), "{}", o.render());
        // Deterministic.
        assert_eq!(o, crate::run_variant(&sc, "oomd", 1, false).unwrap());
    }

    const SENPAI: &str = r#"
name = "senpai-test"
[machine]
memory = "512M"
swap = "512M"
cpus = 2
[[cgroup]]
path = "/s"
[[task]]
name = "cold"
cgroup = "/s"
workload = "anon"
args = ["96M", "--hold"]
[[controller]]
kind = "senpai"
cgroup = "/s"
start = "2s"
min_size = "8M"
max_probe = 0.2
interval = 2
[run]
duration = "30s"
until = "duration"
"#;

    /// With no pressure, senpai probes down by max_probe every interval ticks from
    /// memory.current, and the cold memory goes to swap.
    #[test]
    fn senpai_probes_down_while_nothing_stalls() {
        let sc = crate::scenario::parse(SENPAI, "senpai.toml").unwrap();
        let r = crate::run_variant(&sc, "base", 1, false).unwrap();
        let highs: Vec<(u64, u64)> = r
            .actions
            .iter()
            .filter(|a| a.action == "high")
            .map(|a| (a.time_ns, a.value.unwrap()))
            .collect();
        assert!(highs.len() >= 10, "{highs:?}");
        // Started at 2 s from memory.current (96M and a little).
        assert_eq!(highs[0].0, 2_000_000_000);
        assert!(
            highs[0].1 >= 96 << 20 && highs[0].1 < 100 << 20,
            "{highs:?}"
        );
        // The first probe after `interval` ticks of grace, then one every `interval` ticks.
        assert_eq!(highs[1].0, 5_000_000_000);
        assert_eq!(highs[2].0, 7_000_000_000);
        // Nothing stalls (the memory is never touched again): each probe is the full 20%.
        for w in highs.windows(2).skip(1) {
            let want = ((w[0].1 as f64 * 0.8) as u64 & !4095).max(8 << 20);
            assert_eq!(w[1].1, want, "{highs:?}");
        }
        let swap = r
            .cgroups
            .iter()
            .find(|c| c.cgroup == "/s")
            .unwrap()
            .swap_end
            .unwrap();
        assert!(swap > 60 << 20, "the cold memory went to swap: {swap}");
    }
}
