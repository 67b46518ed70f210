//! The kubelet's eviction manager for memory (pkg/kubelet/eviction of Kubernetes v1.32:
//! eviction_manager.go synchronize(), helpers.go), as the `kubelet-eviction` controller.
//!
//! - Every `period` (10 s, evictionMonitoringPeriod) it observes the signals:
//!   `memory.available` = MemFree + the root's inactive_file (cAdvisor's working set of `/`
//!   taken from MemTotal, with runc's root usage MemTotal − MemFree), of capacity MemTotal;
//!   and, with node allocatable enforced, `allocatableMemory.available` = kubepods'
//!   memory.max − (its memory.current − inactive_file), with the hard memory thresholds.
//! - A threshold (bytes, or a percentage of the signal's capacity) is met when the signal is
//!   below it. One met at the previous sync stays met until the signal is above threshold +
//!   evictionMinimumReclaim. A soft one acts once met continuously for its grace period.
//! - Then it evicts at most one pod: ranked by rankMemoryPressure() (pods whose working set,
//!   memory.current − inactive_file of the pod's cgroup, exceeds their request first; then
//!   lower priority; then the larger working set above the request), skipping critical pods.
//!   A hard threshold's eviction gives the pod the runtime's minimum of 2 s; a soft one's
//!   evictionMaxPodGracePeriod, or the pod's terminationGracePeriodSeconds when that is 0.
//! - It then waits (waitForPodsCleanup(), polling every second for up to 30 s) for the pod's
//!   processes to be gone before it observes again.
//!
//! Simplified: the model's workloads do not handle SIGTERM, so an evicted pod's processes
//! are killed (cgroup.kill) when its grace period ends; the pod's cgroups stay, empty, and
//! its containers do not start again; node conditions (MemoryPressure) and admission are
//! not modelled, and neither are disk signals.

use memcgsim_cgroupfs::System;

use crate::keyed::{file_path, parse_keyed, Setting};
use crate::units::{fmt_ns, fmt_size};

/// A setting that is wrong: its line, key and what is wrong.
type SettingError = (usize, String, String);

fn bad(s: &Setting, msg: impl Into<String>) -> SettingError {
    (s.line, s.key.clone(), msg.into())
}

fn duration_of(s: &Setting) -> Result<u64, SettingError> {
    memcgsim_model::units::parse_duration_ns(&s.value).map_err(|e| bad(s, e))
}

/// What the eviction manager did to a cgroup: `evict` (with the pod's working set) or
/// `kill`, and why.
pub struct Step {
    pub cgroup: String,
    pub action: &'static str,
    pub value: Option<u64>,
    pub detail: String,
}

/// The runtime's minimum grace period (minimumGracePeriodInSeconds).
const MIN_GRACE_NS: u64 = 2_000_000_000;
/// waitForPodsCleanup()'s timeout.
const CLEANUP_TIMEOUT_NS: u64 = 30_000_000_000;
/// The most pods a node holds here.
const MAX_PODS: usize = 10_000;

/// A signal's threshold: bytes, or hundredths of a percent of the signal's capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Quantity {
    Bytes(u64),
    Percent(f64),
}

impl Quantity {
    fn parse(s: &Setting) -> Result<Quantity, SettingError> {
        if let Some(p) = s.value.strip_suffix('%') {
            return match p.trim().parse::<f64>() {
                Ok(v) if v > 0.0 && v < 100.0 => Ok(Quantity::Percent(v)),
                _ => Err(bad(s, "expected a percentage above 0% and below 100%")),
            };
        }
        match s.value.parse::<u64>() {
            Ok(b) if b > 0 => Ok(Quantity::Bytes(b)),
            _ => Err(bad(s, "expected a number of bytes above 0 or a percentage")),
        }
    }

    fn bytes(self, capacity: u64) -> u64 {
        match self {
            Quantity::Bytes(b) => b,
            Quantity::Percent(p) => (capacity as f64 * p / 100.0) as u64,
        }
    }

    fn show(self) -> String {
        match self {
            Quantity::Bytes(b) => fmt_size(b),
            Quantity::Percent(p) => format!("{p}%"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    MemoryAvailable,
    AllocatableAvailable,
}

impl Signal {
    fn name(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::AllocatableAvailable => "allocatableMemory.available",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    pub signal: Signal,
    pub value: Quantity,
    /// 0 for a hard threshold.
    pub grace_ns: u64,
    pub hard: bool,
    pub min_reclaim: Option<Quantity>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EvictPod {
    pub key: String,
    pub path: String,
    pub request: u64,
    pub priority: i64,
    pub critical: bool,
    pub grace_ns: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EvictionParams {
    pub period_ns: u64,
    pub thresholds: Vec<Threshold>,
    /// kubepods, when node allocatable is enforced.
    pub allocatable: Option<String>,
    pub max_pod_grace_ns: u64,
    pub pods: Vec<EvictPod>,
}

/// Read the controller's settings (made by the scenario from the kubelet's configuration).
pub fn config(settings: &[Setting]) -> Result<EvictionParams, SettingError> {
    let mut p = EvictionParams {
        period_ns: 10_000_000_000,
        thresholds: Vec::new(),
        allocatable: None,
        max_pod_grace_ns: 0,
        pods: Vec::new(),
    };
    let signal = |s: &Setting, name: &str| match name {
        "memory.available" => Ok(Signal::MemoryAvailable),
        "allocatableMemory.available" => Ok(Signal::AllocatableAvailable),
        _ => Err(bad(s, format!("'{name}' is not a memory eviction signal"))),
    };
    let mut grace: Vec<(Signal, u64)> = Vec::new();
    let mut min_reclaim: Vec<(Signal, Quantity)> = Vec::new();
    for s in settings {
        let (head, rest) = s.key.split_once('.').unwrap_or((s.key.as_str(), ""));
        match (head, rest) {
            ("start" | "tick", "") => {}
            ("period", "") => {
                p.period_ns = duration_of(s)?;
                if p.period_ns < 1_000_000_000 {
                    return Err(bad(s, "the period must be at least 1s"));
                }
            }
            ("hard" | "soft", sig) => p.thresholds.push(Threshold {
                signal: signal(s, sig)?,
                value: Quantity::parse(s)?,
                grace_ns: 0,
                hard: head == "hard",
                min_reclaim: None,
            }),
            ("grace", sig) => grace.push((signal(s, sig)?, duration_of(s)?)),
            ("min_reclaim", sig) => min_reclaim.push((signal(s, sig)?, Quantity::parse(s)?)),
            ("allocatable", "") => p.allocatable = Some(s.value.clone()),
            ("max_pod_grace_period", "") => p.max_pod_grace_ns = duration_of(s)?,
            ("pod", "") => {
                let w: Vec<&str> = s.value.split_whitespace().collect();
                let parsed = (w.len() == 6)
                    .then(|| {
                        Some(EvictPod {
                            key: w[0].to_string(),
                            path: w[1].to_string(),
                            request: w[2].parse().ok()?,
                            priority: w[3].parse().ok()?,
                            critical: w[4] == "1",
                            grace_ns: w[5].parse::<u64>().ok()?.checked_mul(1_000_000_000)?,
                        })
                    })
                    .flatten();
                let Some(pod) = parsed else {
                    return Err(bad(
                        s,
                        "expected NAMESPACE/NAME PATH REQUEST PRIORITY CRITICAL GRACE_SECONDS",
                    ));
                };
                if p.pods.len() >= MAX_PODS {
                    return Err(bad(s, format!("at most {MAX_PODS} pods")));
                }
                p.pods.push(pod);
            }
            _ => {
                return Err(bad(
                    s,
                    "not a setting of a kubelet-eviction controller (its settings: start, tick, period, hard.SIGNAL, soft.SIGNAL, grace.SIGNAL, min_reclaim.SIGNAL, allocatable, max_pod_grace_period, pod)",
                ))
            }
        }
    }
    // addAllocatableThresholds(): the hard memory.available thresholds apply to allocatable.
    if p.allocatable.is_some() {
        let copies: Vec<Threshold> = p
            .thresholds
            .iter()
            .filter(|t| t.hard && t.signal == Signal::MemoryAvailable)
            .map(|t| Threshold {
                signal: Signal::AllocatableAvailable,
                ..t.clone()
            })
            .collect();
        for c in copies {
            if !p
                .thresholds
                .iter()
                .any(|t| t.hard && t.signal == Signal::AllocatableAvailable)
            {
                p.thresholds.push(c);
            }
        }
    }
    for t in &mut p.thresholds {
        if !t.hard {
            match grace.iter().find(|(s, _)| *s == t.signal) {
                Some((_, g)) => t.grace_ns = *g,
                None => {
                    let s = settings
                        .iter()
                        .find(|s| s.key == format!("soft.{}", t.signal.name()))
                        .expect("the soft threshold's setting");
                    return Err(bad(s, "a soft threshold needs its grace.SIGNAL"));
                }
            }
        }
        t.min_reclaim = min_reclaim
            .iter()
            .find(|(s, _)| *s == t.signal)
            .map(|x| x.1);
    }
    // byEvictionPriority: hard thresholds first.
    p.thresholds.sort_by_key(|t| !t.hard);
    Ok(p)
}

/// The eviction manager's state between ticks.
#[derive(Clone, Debug, Default)]
pub struct EvictionState {
    next_sync: u64,
    /// Per threshold (index in the params), when it was first seen met, while it stays so.
    first_observed: Vec<Option<u64>>,
    /// The thresholds met (past their grace) at the last sync.
    met: Vec<usize>,
    /// Evicted pods (index in the params) and when their processes are killed.
    pub evicted: Vec<(usize, Option<u64>)>,
    /// The pod waited for since a time.
    waiting: Option<(usize, u64)>,
}

fn meminfo_kb(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.split(':').next() == Some(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn number(sys: &mut System, path: &str) -> Option<u64> {
    let t = sys.read(path).ok()?;
    t.split_whitespace().next()?.parse().ok()
}

fn inactive_file(sys: &mut System, cgroup: &str) -> Option<u64> {
    let t = sys.read(&file_path(cgroup, "memory.stat")).ok()?;
    parse_keyed(&t).get("inactive_file").copied()
}

/// A cgroup's working set as cAdvisor counts it: memory.current − inactive_file.
fn working_set(sys: &mut System, cgroup: &str) -> Option<u64> {
    let cur = number(sys, &file_path(cgroup, "memory.current"))?;
    Some(cur.saturating_sub(inactive_file(sys, cgroup).unwrap_or(0)))
}

/// A signal's value and capacity now; None when it cannot be observed.
fn observe(sys: &mut System, p: &EvictionParams, sig: Signal) -> Option<(i64, u64)> {
    match sig {
        Signal::MemoryAvailable => {
            let mi = sys.read("/proc/meminfo").ok()?;
            let total = meminfo_kb(&mi, "MemTotal")? * 1024;
            let free = meminfo_kb(&mi, "MemFree")? * 1024;
            let inactive = inactive_file(sys, "/")
                .or_else(|| meminfo_kb(&mi, "Inactive(file)").map(|k| k * 1024))?;
            Some(((free + inactive) as i64, total))
        }
        Signal::AllocatableAvailable => {
            let kp = p.allocatable.clone()?;
            let cap = number(sys, &file_path(&kp, "memory.max"))?;
            let ws = working_set(sys, &kp)?;
            Some((cap as i64 - ws as i64, cap))
        }
    }
}

/// One tick (every `tick`, 1 s): the kills due, the wait for the last evicted pod, and a
/// sync when one is due.
pub fn tick(
    p: &EvictionParams,
    st: &mut EvictionState,
    sys: &mut System,
    now: u64,
    log: &mut Vec<Step>,
) -> Option<()> {
    if st.first_observed.len() != p.thresholds.len() {
        st.first_observed = vec![None; p.thresholds.len()];
    }
    let act = |cgroup: &str, action: &'static str, value: Option<u64>, detail: String| Step {
        cgroup: cgroup.to_string(),
        action,
        value,
        detail,
    };
    // The grace periods that ended: the pod's processes are killed.
    for (i, kill_at) in st.evicted.iter_mut() {
        if kill_at.is_some_and(|k| k <= now) {
            *kill_at = None;
            let pod = &p.pods[*i];
            if sys.write(&file_path(&pod.path, "cgroup.kill"), "1").is_ok() {
                log.push(act(
                    &pod.path,
                    "kill",
                    None,
                    format!("pod {}: grace period over", pod.key),
                ));
            }
        }
    }
    if let Some((i, since)) = st.waiting {
        let events = sys
            .read(&file_path(&p.pods[i].path, "cgroup.events"))
            .unwrap_or_default();
        let gone = !events.contains("populated 1");
        if gone || now - since >= CLEANUP_TIMEOUT_NS {
            st.waiting = None;
        } else {
            return Some(());
        }
    } else if now < st.next_sync {
        return Some(());
    }
    st.next_sync = now + p.period_ns;

    // The signals and the thresholds met.
    let mut seen: Vec<Option<(i64, u64)>> = Vec::new();
    for sig in [Signal::MemoryAvailable, Signal::AllocatableAvailable] {
        seen.push(observe(sys, p, sig));
    }
    let value_of = |sig: Signal| seen[sig as usize];
    let mut met: Vec<usize> = Vec::new();
    for (i, t) in p.thresholds.iter().enumerate() {
        let Some((avail, cap)) = value_of(t.signal) else {
            continue;
        };
        let mut q = t.value.bytes(cap) as i64;
        let now_met = avail < q;
        // A threshold met last time is resolved only above threshold + minimum reclaim.
        if !now_met && st.met.contains(&i) {
            q += t.min_reclaim.map_or(0, |m| m.bytes(cap)) as i64;
        }
        if avail < q {
            met.push(i);
        }
    }
    for (i, first) in st.first_observed.iter_mut().enumerate() {
        if met.contains(&i) {
            first.get_or_insert(now);
        } else {
            *first = None;
        }
    }
    met.retain(|&i| st.first_observed[i].is_some_and(|f| now - f >= p.thresholds[i].grace_ns));
    st.met = met.clone();
    let Some(&ti) = met.first() else {
        return Some(());
    };
    let t = &p.thresholds[ti];
    let (avail, cap) = value_of(t.signal)?;

    // rankMemoryPressure() over the pods not evicted yet.
    let mut ranked: Vec<(usize, Option<u64>)> = Vec::new();
    for (i, pod) in p.pods.iter().enumerate() {
        if st.evicted.iter().any(|(j, _)| *j == i) {
            continue;
        }
        ranked.push((i, working_set(sys, &pod.path)));
    }
    ranked.sort_by(|&(a, ua), &(b, ub)| {
        let (pa, pb) = (&p.pods[a], &p.pods[b]);
        let exceeds = |u: Option<u64>, pod: &EvictPod| u.is_none_or(|u| u > pod.request);
        let over = |u: Option<u64>, pod: &EvictPod| u.unwrap_or(0) as i128 - pod.request as i128;
        exceeds(ub, pb)
            .cmp(&exceeds(ua, pa))
            .then(pa.priority.cmp(&pb.priority))
            .then(over(ub, pb).cmp(&over(ua, pa)))
    });
    let Some(&(victim, usage)) = ranked.iter().find(|(i, _)| !p.pods[*i].critical) else {
        return Some(());
    };
    let pod = &p.pods[victim];
    let grace = if t.hard {
        MIN_GRACE_NS
    } else if p.max_pod_grace_ns > 0 {
        p.max_pod_grace_ns.max(MIN_GRACE_NS)
    } else {
        pod.grace_ns.max(MIN_GRACE_NS)
    };
    log.push(act(
        &pod.path,
        "evict",
        usage,
        format!(
            "pod {}: {} {} < {} ({}); working set {} against a request of {}, priority {}; grace {}",
            pod.key,
            t.signal.name(),
            if avail < 0 {
                format!("-{}", fmt_size(avail.unsigned_abs()))
            } else {
                fmt_size(avail as u64)
            },
            fmt_size(t.value.bytes(cap)),
            if t.hard {
                "hard".to_string()
            } else {
                format!("soft {}", t.value.show())
            },
            fmt_size(usage.unwrap_or(0)),
            fmt_size(pod.request),
            pod.priority,
            fmt_ns(grace),
        ),
    ));
    st.evicted.push((victim, Some(now + grace)));
    st.waiting = Some((victim, now));
    Some(())
}

impl EvictionParams {
    /// The evicted pod whose cgroup holds `cgroup`, if any: the kubelet starts no container
    /// of a pod it evicted.
    pub fn evicted_pod(&self, st: &EvictionState, cgroup: &str) -> Option<&str> {
        st.evicted
            .iter()
            .map(|(i, _)| &self.pods[*i])
            .find_map(|pod| {
                (cgroup == pod.path || cgroup.starts_with(&format!("{}/", pod.path)))
                    .then_some(pod.key.as_str())
            })
    }
}
