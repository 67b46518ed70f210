//! Kubernetes pods as the kubelet (v1.32) lays them out on a cgroup v2 node: the
//! node-allocatable cgroup, the QoS classes, the pod and container cgroups, and what the
//! kubelet and the container runtime write to each.
//!
//! Mechanisms and where the kubelet keeps them:
//! - The tree (pkg/kubelet/cm: cgroup_manager_linux.go, qos_container_manager_linux.go,
//!   pod_container_manager_linux.go; containerd's getCgroupsPath()): `kubepods`, then
//!   `burstable` and `besteffort` (Guaranteed pods sit in `kubepods` itself), then
//!   `pod<UID>`, then one cgroup per container named after its ID. The `systemd` driver
//!   names them `kubepods.slice`, `kubepods-burstable.slice`,
//!   `kubepods-burstable-pod<UID with _ for ->.slice` and `cri-containerd-<ID>.scope`.
//! - Node allocatable (node_container_manager_linux.go): with `pods` in
//!   `enforceNodeAllocatable` (the default), kubepods' memory.max is the capacity (MemTotal)
//!   less `kubeReserved` and `systemReserved`; the hard eviction threshold is not taken off
//!   the cgroup, only off the allocatable the node reports.
//! - Pods (helpers_linux.go ResourceConfigForPod): memory.max is the pod's limit for a
//!   Guaranteed pod, and for a Burstable one whose every container has a memory limit. The
//!   pod's request and limit aggregate its containers as PodRequests() does: the larger of
//!   the app containers (and sidecars) together and each init container (with the sidecars
//!   started before it), plus `spec.overhead`.
//! - Containers (kuberuntime_container_linux.go): memory.max is the container's limit;
//!   memory.swap.max is 0 under `NoSwap`, and under `LimitedSwap` the request's share of
//!   swap for Burstable containers whose request is not their limit; memory.oom.group is 1
//!   unless `singleProcessOOMKill`.
//! - MemoryQoS (the alpha feature gate, off by default): memory.min is the request at the
//!   container, the pod, the burstable class (its pods' requests) and kubepods (Guaranteed and
//!   Burstable pods' requests); a container whose request is not its limit gets memory.high
//!   = floor((request + memoryThrottlingFactor × (limit − request)) / 4096) × 4096, with
//!   the node's allocatable for a missing limit, written only above the request.
//! - oom_score_adj (pkg/kubelet/qos/policy.go): −997 for Guaranteed and node-critical pods,
//!   1000 for BestEffort, 1000 − 1000 × request / capacity for Burstable, within 3..999.
//! - QoS class (GetPodQOS): `status.qosClass` when the manifest has it, else computed from
//!   cpu and memory requests and limits, a missing request defaulting to the limit.
//!
//! Simplified: the pause container, sidecar oom_score_adj, QOSReserved, pod-level
//! resources, hugepages, and the kube/system-reserved cgroups are not modelled; pods exist
//! from the start of the run, and a container's processes are the scenario's tasks.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::{Managed, ManagedController};

/// The kubelet release whose behaviour is modelled.
pub const KUBELET_VERSION: &str = "v1.32";

/// A manifest file's bound on pods.
const MAX_PODS: usize = 10_000;

/// The page size the MemoryQoS formula rounds to.
const PAGE: u64 = 4096;

/// A Kubernetes resource quantity (apimachinery's resource.Quantity) in whole units,
/// rounded up as Value() rounds: `128Mi`, `1.5Gi`, `1G`, `129e6`, `100m`. Err: why not.
pub fn quantity(s: &str) -> Result<u64, String> {
    scaled_quantity(s, 0)
}

/// A quantity in thousandths, rounded up (MilliValue()): CPU's millicores.
pub fn milli_value(s: &str) -> Result<u64, String> {
    scaled_quantity(s, 3)
}

/// A quantity × 10^`extra`, rounded up.
fn scaled_quantity(s: &str, extra: i32) -> Result<u64, String> {
    let bad = || format!("'{s}' is not a quantity (such as 512Mi, 1.5Gi, 1G or 134217728)");
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    if t.starts_with('-') {
        return Err(format!("'{s}' is negative"));
    }
    let num_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(num_end);
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(bad());
    }
    // value = digits × 2^bin × 10^dec / 10^frac_len
    let (bin, dec): (u32, i32) = match suffix {
        "" => (0, 0),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        e if e.starts_with(['e', 'E']) => {
            let x: i32 = e[1..].parse().map_err(|_| bad())?;
            if !(-30..=30).contains(&x) {
                return Err(bad());
            }
            (0, x)
        }
        _ => return Err(bad()),
    };
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 30 {
        return Err(format!("'{s}' is too large"));
    }
    let mut v: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().map_err(|_| bad())?
    };
    v <<= bin;
    let scale = dec + extra - frac.len() as i32;
    let too_large = || format!("'{s}' is too large");
    if scale >= 0 {
        for _ in 0..scale {
            v = v.checked_mul(10).ok_or_else(too_large)?;
        }
    } else {
        let d = 10u128.pow((-scale) as u32);
        v = v.div_ceil(d);
    }
    u64::try_from(v)
        .ok()
        .filter(|&v| v <= i64::MAX as u64)
        .ok_or_else(too_large)
}

/// A pod's QoS class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qos {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl Qos {
    pub fn name(self) -> &'static str {
        match self {
            Qos::Guaranteed => "Guaranteed",
            Qos::Burstable => "Burstable",
            Qos::BestEffort => "BestEffort",
        }
    }
}

/// A container's memory and CPU resources (bytes; millicores), requests defaulted to limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    pub name: String,
    /// The runtime's ID: `status.containerStatuses[].containerID` without its scheme, or
    /// one made from the pod's UID and the name.
    pub id: String,
    pub mem_request: u64,
    pub mem_limit: u64,
    pub cpu_request: u64,
    pub cpu_limit: u64,
    /// An init container with `restartPolicy: Always`.
    pub sidecar: bool,
}

/// A pod as its manifest gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub priority: i64,
    /// Never evicted: static and mirror pods, and priority 2000000000 and above.
    pub critical: bool,
    /// `priorityClassName: system-node-critical`.
    pub node_critical: bool,
    pub grace_s: u64,
    pub overhead: u64,
    pub containers: Vec<Container>,
    pub init: Vec<Container>,
    pub qos: Qos,
}

/// The priority of the system-critical classes (SystemCriticalPriority).
const SYSTEM_CRITICAL: i64 = 2_000_000_000;

impl Pod {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// PodRequests()/PodLimits() of one resource: app containers and sidecars together, or
    /// the largest init container with the sidecars started before it; the overhead on top
    /// (of a limit only when there is one).
    fn aggregate(&self, of: impl Fn(&Container) -> u64) -> u64 {
        let apps: u64 = self.containers.iter().map(&of).sum();
        let mut sidecars = 0u64;
        let mut init_max = 0u64;
        for c in &self.init {
            if c.sidecar {
                sidecars += of(c);
            } else {
                init_max = init_max.max(of(c) + sidecars);
            }
        }
        let v = (apps + sidecars).max(init_max);
        if v == 0 {
            0
        } else {
            v + self.overhead
        }
    }

    pub fn mem_request(&self) -> u64 {
        let r = self.aggregate(|c| c.mem_request);
        if r == 0 {
            self.overhead
        } else {
            r
        }
    }

    pub fn mem_limit(&self) -> u64 {
        self.aggregate(|c| c.mem_limit)
    }

    /// Every container, init ones included, has a memory limit.
    fn all_limited(&self) -> bool {
        self.containers
            .iter()
            .chain(&self.init)
            .all(|c| c.mem_limit > 0)
    }
}

/// ComputePodQOS(): cpu and memory only.
fn compute_qos(cs: &[&Container]) -> Qos {
    let any = cs
        .iter()
        .any(|c| c.mem_request + c.mem_limit + c.cpu_request + c.cpu_limit > 0);
    if !any {
        return Qos::BestEffort;
    }
    let all_limited = cs.iter().all(|c| c.mem_limit > 0 && c.cpu_limit > 0);
    let sum = |f: fn(&Container) -> u64| cs.iter().map(|c| f(c)).sum::<u64>();
    let req_kinds = [sum(|c| c.cpu_request) > 0, sum(|c| c.mem_request) > 0];
    let lim_kinds = [sum(|c| c.cpu_limit) > 0, sum(|c| c.mem_limit) > 0];
    if all_limited
        && sum(|c| c.cpu_request) == sum(|c| c.cpu_limit)
        && sum(|c| c.mem_request) == sum(|c| c.mem_limit)
        && req_kinds == lim_kinds
    {
        Qos::Guaranteed
    } else {
        Qos::Burstable
    }
}

/// A 64-bit FNV-1a hash, for IDs made up where a manifest has none.
fn fnv(s: &str, salt: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ salt;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn made_uid(key: &str) -> String {
    let a = fnv(key, 1);
    let b = fnv(key, 2);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn made_id(uid: &str, name: &str) -> String {
    (0..4)
        .map(|i| format!("{:016x}", fnv(&format!("{uid}/{name}"), i + 10)))
        .collect()
}

/// Where in a manifest file an object sits, for errors.
struct At<'a> {
    file: &'a str,
    object: String,
}

impl At<'_> {
    fn err(&self, field: &str, msg: impl std::fmt::Display) -> String {
        format!("{}: {}: {field}: {msg}", self.file, self.object)
    }
}

fn get<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn string_at(at: &At, v: &Value, path: &[&str]) -> Result<Option<String>, String> {
    match get(v, path) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(at.err(&path.join("."), format!("expected a string, got {other}"))),
    }
}

fn int_at(at: &At, v: &Value, path: &[&str]) -> Result<Option<i64>, String> {
    match get(v, path) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
        Some(other) => Err(at.err(&path.join("."), format!("expected an integer, got {other}"))),
    }
}

/// A resource quantity at `field` of a resources map (a string, or a number as YAML may
/// give it). `milli`: in thousandths (CPU).
fn resource(
    at: &At,
    map: Option<&Value>,
    field: &str,
    name: &str,
    milli: bool,
) -> Result<u64, String> {
    let Some(v) = map.and_then(|m| m.get(name)) else {
        return Ok(0);
    };
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Null => return Ok(0),
        other => {
            return Err(at.err(
                &format!("{field}.{name}"),
                format!("expected a quantity, got {other}"),
            ))
        }
    };
    let q = if milli {
        milli_value(&text)
    } else {
        quantity(&text)
    };
    q.map_err(|e| at.err(&format!("{field}.{name}"), e))
}

fn container(
    at: &At,
    v: &Value,
    field: &str,
    uid: &str,
    statuses: &BTreeMap<String, String>,
    init: bool,
) -> Result<Container, String> {
    let name = string_at(at, v, &["name"])?
        .ok_or_else(|| at.err(&format!("{field}.name"), "a container needs a name"))?;
    let res = v.get("resources");
    let req_field = format!("{field}.resources.requests");
    let lim_field = format!("{field}.resources.limits");
    let requests = res.and_then(|r| r.get("requests"));
    let limits = res.and_then(|r| r.get("limits"));
    let mem_limit = resource(at, limits, &lim_field, "memory", false)?;
    let cpu_limit = resource(at, limits, &lim_field, "cpu", true)?;
    // SetDefaults_Pod(): a missing request is the limit.
    let has = |n: &str| requests.and_then(|r| r.get(n)).is_some();
    let mem_request = if has("memory") {
        resource(at, requests, &req_field, "memory", false)?
    } else {
        mem_limit
    };
    let cpu_request = if has("cpu") {
        resource(at, requests, &req_field, "cpu", true)?
    } else {
        cpu_limit
    };
    if mem_limit > 0 && mem_request > mem_limit {
        return Err(at.err(
            &format!("{req_field}.memory"),
            format!("the request ({mem_request}) is above the limit ({mem_limit})"),
        ));
    }
    let sidecar = init && string_at(at, v, &["restartPolicy"])?.is_some_and(|p| p == "Always");
    let id = statuses
        .get(&name)
        .cloned()
        .unwrap_or_else(|| made_id(uid, &name));
    Ok(Container {
        name,
        id,
        mem_request,
        mem_limit,
        cpu_request,
        cpu_limit,
        sidecar,
    })
}

fn pod(file: &str, v: &Value, index: usize) -> Result<Pod, String> {
    let mut at = At {
        file,
        object: format!("object {}", index + 1),
    };
    let kind = string_at(&at, v, &["kind"])?.unwrap_or_default();
    if kind != "Pod" {
        return Err(at.err(
            "kind",
            format!("expected a Pod (as `kubectl get pod -o yaml` prints it), got '{kind}'"),
        ));
    }
    let name = string_at(&at, v, &["metadata", "name"])?
        .ok_or_else(|| at.err("metadata.name", "a pod needs a name"))?;
    let namespace =
        string_at(&at, v, &["metadata", "namespace"])?.unwrap_or_else(|| "default".into());
    let ok_name = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'))
    };
    if !ok_name(&name) || !ok_name(&namespace) {
        return Err(at.err(
            "metadata",
            format!("'{namespace}/{name}' is not a valid namespace/name (lower-case letters, digits, '-' and '.')"),
        ));
    }
    at.object = format!("pod {namespace}/{name}");
    let uid = match string_at(&at, v, &["metadata", "uid"])? {
        Some(u) => {
            if u.is_empty() || !u.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                return Err(at.err("metadata.uid", format!("'{u}' is not a UID")));
            }
            u.to_ascii_lowercase()
        }
        None => made_uid(&format!("{namespace}/{name}")),
    };
    let mut statuses = BTreeMap::new();
    for list in ["containerStatuses", "initContainerStatuses"] {
        if let Some(Value::Array(a)) = get(v, &["status", list]) {
            for s in a {
                let (Some(n), Some(id)) = (
                    s.get("name").and_then(Value::as_str),
                    s.get("containerID").and_then(Value::as_str),
                ) else {
                    continue;
                };
                let hex = id.split_once("://").map_or(id, |x| x.1);
                if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_alphanumeric()) {
                    return Err(at.err(
                        &format!("status.{list}.containerID"),
                        format!("'{id}' is not a container ID"),
                    ));
                }
                statuses.insert(n.to_string(), hex.to_string());
            }
        }
    }
    let list = |field: &str, init: bool| -> Result<Vec<Container>, String> {
        match get(v, &["spec", field]) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    container(&at, c, &format!("spec.{field}[{i}]"), &uid, &statuses, init)
                })
                .collect(),
            Some(other) => Err(at.err(
                &format!("spec.{field}"),
                format!("expected a list, got {other}"),
            )),
        }
    };
    let containers = list("containers", false)?;
    let init = list("initContainers", true)?;
    if containers.is_empty() {
        return Err(at.err("spec.containers", "a pod needs at least one container"));
    }
    for (i, c) in containers.iter().chain(&init).enumerate() {
        if containers
            .iter()
            .chain(&init)
            .take(i)
            .any(|x| x.name == c.name)
        {
            return Err(at.err(
                "spec.containers",
                format!("container name '{}' is used twice", c.name),
            ));
        }
    }
    let class = string_at(&at, v, &["spec", "priorityClassName"])?.unwrap_or_default();
    let priority = match int_at(&at, v, &["spec", "priority"])? {
        Some(p) => p,
        None => match class.as_str() {
            "system-node-critical" => SYSTEM_CRITICAL + 1000,
            "system-cluster-critical" => SYSTEM_CRITICAL,
            _ => 0,
        },
    };
    let source = get(
        v,
        &["metadata", "annotations", "kubernetes.io/config.source"],
    )
    .and_then(Value::as_str)
    .unwrap_or("api");
    let mirror = get(
        v,
        &["metadata", "annotations", "kubernetes.io/config.mirror"],
    )
    .is_some();
    let grace_s = match int_at(&at, v, &["spec", "terminationGracePeriodSeconds"])? {
        Some(g) if g < 0 => {
            return Err(at.err("spec.terminationGracePeriodSeconds", "must not be negative"))
        }
        Some(g) => g as u64,
        None => 30,
    };
    let overhead = resource(
        &at,
        get(v, &["spec", "overhead"]),
        "spec.overhead",
        "memory",
        false,
    )?;
    let all: Vec<&Container> = containers.iter().chain(&init).collect();
    let qos = match string_at(&at, v, &["status", "qosClass"])? {
        None => compute_qos(&all),
        Some(q) => match q.as_str() {
            "Guaranteed" => Qos::Guaranteed,
            "Burstable" => Qos::Burstable,
            "BestEffort" => Qos::BestEffort,
            _ => {
                return Err(at.err(
                    "status.qosClass",
                    format!("'{q}' is not Guaranteed, Burstable or BestEffort"),
                ))
            }
        },
    };
    Ok(Pod {
        critical: source != "api" || mirror || priority >= SYSTEM_CRITICAL,
        node_critical: class == "system-node-critical",
        namespace,
        name,
        uid,
        priority,
        grace_s,
        overhead,
        containers,
        init,
        qos,
    })
}

/// The pods of a manifest file: YAML documents (`---`) each a Pod or a List of them, as
/// `kubectl get pod NAME -o yaml` and `kubectl get pods -o yaml` print them.
pub fn parse_pods(text: &str, file: &str) -> Result<Vec<Pod>, String> {
    let mut out: Vec<Pod> = Vec::new();
    for (d, doc) in yaml_serde::Deserializer::from_str(text).enumerate() {
        let v: Value = Value::deserialize(doc).map_err(|e| match e.location() {
            Some(l) => format!("{file}:{}:{}: {e}", l.line(), l.column()),
            None => format!("{file}: document {}: {e}", d + 1),
        })?;
        if v.is_null() {
            continue;
        }
        let items: Vec<&Value> = match v.get("kind").and_then(Value::as_str) {
            Some("List" | "PodList") => match v.get("items") {
                Some(Value::Array(a)) => a.iter().collect(),
                _ => {
                    return Err(format!(
                        "{file}: document {}: items: expected a list",
                        d + 1
                    ))
                }
            },
            _ => vec![&v],
        };
        for item in items {
            let p = pod(file, item, out.len())?;
            if out.iter().any(|x| x.key() == p.key()) {
                return Err(format!("{file}: pod {}: listed twice", p.key()));
            }
            if out.iter().any(|x| x.uid == p.uid) {
                return Err(format!(
                    "{file}: pod {}: metadata.uid: '{}' is another pod's",
                    p.key(),
                    p.uid
                ));
            }
            out.push(p);
            if out.len() > MAX_PODS {
                return Err(format!("{file}: more than {MAX_PODS} pods"));
            }
        }
    }
    Ok(out)
}

// ------------------------------------------------------------------ the kubelet's config

/// The KubeletConfiguration fields that shape memory management, with the kubelet's
/// defaults. The names are the configuration file's.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeletConfig {
    #[serde(default = "default_driver")]
    pub cgroup_driver: String,
    #[serde(default = "yes")]
    pub cgroups_per_q_o_s: bool,
    #[serde(default = "default_enforce")]
    pub enforce_node_allocatable: Vec<String>,
    #[serde(default)]
    pub kube_reserved: BTreeMap<String, String>,
    #[serde(default)]
    pub system_reserved: BTreeMap<String, String>,
    #[serde(default = "default_eviction_hard")]
    pub eviction_hard: BTreeMap<String, String>,
    #[serde(default)]
    pub eviction_soft: BTreeMap<String, String>,
    #[serde(default)]
    pub eviction_soft_grace_period: BTreeMap<String, String>,
    #[serde(default)]
    pub eviction_minimum_reclaim: BTreeMap<String, String>,
    #[serde(default)]
    pub eviction_max_pod_grace_period: i64,
    #[serde(default = "default_transition")]
    pub eviction_pressure_transition_period: String,
    #[serde(default)]
    pub feature_gates: BTreeMap<String, bool>,
    #[serde(default = "default_factor")]
    pub memory_throttling_factor: f64,
    #[serde(default = "yes")]
    pub fail_swap_on: bool,
    #[serde(default)]
    pub memory_swap: MemorySwap,
    #[serde(default)]
    pub single_process_o_o_m_kill: bool,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemorySwap {
    #[serde(default)]
    pub swap_behavior: String,
}

fn default_driver() -> String {
    "cgroupfs".into()
}
fn yes() -> bool {
    true
}
fn default_enforce() -> Vec<String> {
    vec!["pods".into()]
}
fn default_eviction_hard() -> BTreeMap<String, String> {
    [
        ("memory.available", "100Mi"),
        ("nodefs.available", "10%"),
        ("nodefs.inodesFree", "5%"),
        ("imagefs.available", "15%"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}
fn default_transition() -> String {
    "5m0s".into()
}
fn default_factor() -> f64 {
    0.9
}

/// The configuration file's keys read here (the others are kept by the kubelet for what
/// this model has not: authentication, DNS, images, disks, CPU management, ...).
pub const CONFIG_KEYS: &[&str] = &[
    "cgroupDriver",
    "cgroupsPerQOS",
    "enforceNodeAllocatable",
    "kubeReserved",
    "systemReserved",
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMinimumReclaim",
    "evictionMaxPodGracePeriod",
    "evictionPressureTransitionPeriod",
    "featureGates",
    "memoryThrottlingFactor",
    "failSwapOn",
    "memorySwap",
    "singleProcessOOMKill",
];

/// Eviction signals: those of memory are acted on; the disk ones are accepted and have no
/// effect (the model has no filesystem capacity).
const MEMORY_SIGNALS: &[&str] = &["memory.available", "allocatableMemory.available"];
const OTHER_SIGNALS: &[&str] = &[
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "containerfs.available",
    "containerfs.inodesFree",
    "pid.available",
];

/// A threshold's value: bytes, or a percentage of the signal's capacity (hundredths of a
/// percent), as the kubelet's parseThresholdStatement() takes it.
pub fn threshold_value(s: &str) -> Result<String, String> {
    if let Some(p) = s.strip_suffix('%') {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("'{s}' is not a percentage"))?;
        if !(0.0..=100.0).contains(&v) || v == 0.0 || v == 100.0 {
            return Err(format!(
                "'{s}': a percentage must be above 0% and below 100%"
            ));
        }
        return Ok(s.to_string());
    }
    let q = quantity(s)?;
    if q == 0 {
        return Err(format!("'{s}': a threshold must be above 0"));
    }
    Ok(q.to_string())
}

/// A Go duration (`30s`, `1m30s`, `5m0s`, `1h`) in nanoseconds.
pub fn go_duration(s: &str) -> Result<u64, String> {
    let bad = || format!("'{s}' is not a duration (such as 30s, 1m30s or 2h)");
    if s == "0" {
        return Ok(0);
    }
    let mut rest = s;
    let mut total: f64 = 0.0;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let n_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let n: f64 = rest[..n_end].parse().map_err(|_| bad())?;
        rest = &rest[n_end..];
        let u_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u_end] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        rest = &rest[u_end..];
        total += n * unit;
    }
    if total > 1e18 {
        return Err(bad());
    }
    Ok(total as u64)
}

impl KubeletConfig {
    /// The configuration from its fields as a JSON-like tree (a YAML file's, a scenario's
    /// table, merged). Errors name the field.
    pub fn from_value(v: Value) -> Result<KubeletConfig, String> {
        let cfg: KubeletConfig = serde_json::from_value(v).map_err(|e| e.to_string())?;
        cfg.check()?;
        Ok(cfg)
    }

    fn check(&self) -> Result<(), String> {
        if !matches!(self.cgroup_driver.as_str(), "cgroupfs" | "systemd") {
            return Err(format!(
                "cgroupDriver: '{}' is not cgroupfs or systemd",
                self.cgroup_driver
            ));
        }
        if !self.cgroups_per_q_o_s {
            return Err("cgroupsPerQOS: only true (the default) is modelled".into());
        }
        for e in &self.enforce_node_allocatable {
            if !matches!(
                e.as_str(),
                "pods" | "system-reserved" | "kube-reserved" | "none"
            ) {
                return Err(format!(
                    "enforceNodeAllocatable: '{e}' is not pods, system-reserved, kube-reserved or none"
                ));
            }
        }
        for (name, m) in [
            ("kubeReserved", &self.kube_reserved),
            ("systemReserved", &self.system_reserved),
        ] {
            for (k, v) in m {
                let r = if k == "cpu" {
                    milli_value(v)
                } else {
                    quantity(v)
                };
                r.map_err(|e| format!("{name}.{k}: {e}"))?;
            }
        }
        for (name, m) in [
            ("evictionHard", &self.eviction_hard),
            ("evictionSoft", &self.eviction_soft),
            ("evictionMinimumReclaim", &self.eviction_minimum_reclaim),
        ] {
            for (k, v) in m {
                if !MEMORY_SIGNALS.contains(&k.as_str()) && !OTHER_SIGNALS.contains(&k.as_str()) {
                    return Err(format!("{name}.{k}: not an eviction signal"));
                }
                if MEMORY_SIGNALS.contains(&k.as_str()) {
                    threshold_value(v).map_err(|e| format!("{name}.{k}: {e}"))?;
                }
            }
        }
        for k in self.eviction_soft.keys() {
            if !self.eviction_soft_grace_period.contains_key(k) {
                return Err(format!(
                    "evictionSoftGracePeriod: evictionSoft.{k} needs a grace period"
                ));
            }
        }
        for (k, v) in &self.eviction_soft_grace_period {
            go_duration(v).map_err(|e| format!("evictionSoftGracePeriod.{k}: {e}"))?;
        }
        go_duration(&self.eviction_pressure_transition_period)
            .map_err(|e| format!("evictionPressureTransitionPeriod: {e}"))?;
        if self.eviction_max_pod_grace_period < 0 {
            return Err("evictionMaxPodGracePeriod: must not be negative".into());
        }
        if !(self.memory_throttling_factor > 0.0 && self.memory_throttling_factor <= 1.0) {
            return Err(format!(
                "memoryThrottlingFactor: {} is not in (0, 1]",
                self.memory_throttling_factor
            ));
        }
        if !matches!(
            self.memory_swap.swap_behavior.as_str(),
            "" | "NoSwap" | "LimitedSwap"
        ) {
            return Err(format!(
                "memorySwap.swapBehavior: '{}' is not NoSwap or LimitedSwap",
                self.memory_swap.swap_behavior
            ));
        }
        Ok(())
    }

    fn memory_qos(&self) -> bool {
        self.feature_gates
            .get("MemoryQoS")
            .copied()
            .unwrap_or(false)
    }

    fn reserved(&self) -> u64 {
        let mem =
            |m: &BTreeMap<String, String>| m.get("memory").map_or(0, |v| quantity(v).unwrap_or(0));
        mem(&self.kube_reserved) + mem(&self.system_reserved)
    }
}

/// Lay the configuration fields of `over` over those of `base`: each field `over` gives
/// replaces `base`'s whole (a map such as `evictionHard` included, as the kubelet takes a
/// given map instead of its default).
pub fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                b.insert(k.clone(), v.clone());
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// A KubeletConfiguration file (YAML, as /var/lib/kubelet/config.yaml): the fields read
/// here, and the names of those left aside.
pub fn read_config_file(text: &str, file: &str) -> Result<(Value, Vec<String>), String> {
    let v: Value = yaml_serde::from_str(text).map_err(|e| match e.location() {
        Some(l) => format!("{file}:{}:{}: {e}", l.line(), l.column()),
        None => format!("{file}: {e}"),
    })?;
    let Value::Object(map) = v else {
        return Err(format!("{file}: expected a KubeletConfiguration mapping"));
    };
    if let Some(k) = map.get("kind").and_then(Value::as_str) {
        if k != "KubeletConfiguration" {
            return Err(format!(
                "{file}: kind: expected KubeletConfiguration, got '{k}'"
            ));
        }
    }
    let mut kept = serde_json::Map::new();
    let mut aside = Vec::new();
    for (k, v) in map {
        if CONFIG_KEYS.contains(&k.as_str()) {
            kept.insert(k, v);
        } else if k != "kind" && k != "apiVersion" {
            aside.push(k);
        }
    }
    let obj = Value::Object(kept);
    KubeletConfig::from_value(obj.clone()).map_err(|e| format!("{file}: {e}"))?;
    Ok((obj, aside))
}

// ------------------------------------------------------------------ the layout

/// Where a container runs: its cgroup and the oom_score_adj the kubelet gives its
/// processes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// `namespace/pod/container`.
    pub key: String,
    pub path: String,
    pub oom_score_adj: i32,
}

/// The node: the cgroups, the eviction manager, and where each container runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Node {
    pub managed: Managed,
    pub places: Vec<Place>,
    /// Per pod: `namespace/name` and its cgroup.
    pub pods: Vec<(String, String)>,
}

fn escape_systemd(s: &str) -> String {
    s.replace('-', "_")
}

/// The cgroup paths of the kubelet's tree under a driver.
struct Paths {
    systemd: bool,
}

impl Paths {
    fn kubepods(&self) -> String {
        if self.systemd {
            "/kubepods.slice".into()
        } else {
            "/kubepods".into()
        }
    }

    fn qos(&self, q: Qos) -> String {
        let class = match q {
            Qos::Guaranteed => return self.kubepods(),
            Qos::Burstable => "burstable",
            Qos::BestEffort => "besteffort",
        };
        if self.systemd {
            format!("{}/kubepods-{class}.slice", self.kubepods())
        } else {
            format!("{}/{class}", self.kubepods())
        }
    }

    fn pod(&self, p: &Pod) -> String {
        let parent = self.qos(p.qos);
        if !self.systemd {
            return format!("{parent}/pod{}", p.uid);
        }
        let prefix = match p.qos {
            Qos::Guaranteed => "kubepods".to_string(),
            q => format!("kubepods-{}", q.name().to_ascii_lowercase()),
        };
        format!("{parent}/{prefix}-pod{}.slice", escape_systemd(&p.uid))
    }

    fn container(&self, pod_path: &str, c: &Container) -> String {
        if self.systemd {
            format!("{pod_path}/cri-containerd-{}.scope", c.id)
        } else {
            format!("{pod_path}/{}", c.id)
        }
    }
}

/// oom_score_adj of a container (GetContainerOOMScoreAdjust()).
fn oom_score_adj(p: &Pod, c: &Container, capacity: u64) -> i32 {
    if p.node_critical || p.qos == Qos::Guaranteed {
        return -997;
    }
    if p.qos == Qos::BestEffort {
        return 1000;
    }
    let adj = 1000 - (1000u128 * c.mem_request as u128 / capacity.max(1) as u128).min(1000) as i64;
    if adj < 3 {
        3
    } else if adj == 1000 {
        999
    } else {
        adj as i32
    }
}

/// Lay the pods out as the kubelet does on a node of `capacity` bytes (MemTotal) with
/// `swap` bytes of swap.
pub fn layout(pods: &[Pod], cfg: &KubeletConfig, capacity: u64, swap: u64) -> Result<Node, String> {
    if swap > 0 && cfg.fail_swap_on {
        return Err(
            "the machine has swap and failSwapOn is true (the kubelet's default): the kubelet would not start; set failSwapOn = false".into(),
        );
    }
    let paths = Paths {
        systemd: cfg.cgroup_driver == "systemd",
    };
    let qos_on = cfg.memory_qos();
    let allocatable = capacity.saturating_sub(cfg.reserved());
    let mut m = Managed::default();
    let sc = "cgroup.subtree_control";
    m.set("/", sc, "+memory");
    let kubepods = paths.kubepods();
    m.cgroup(&kubepods, "kubepods");
    m.set(&kubepods, sc, "+memory");
    if cfg.enforce_node_allocatable.iter().any(|e| e == "pods") {
        m.set(&kubepods, "memory.max", &allocatable.to_string());
    }
    let sum = |q: Qos| -> u64 {
        pods.iter()
            .filter(|p| p.qos == q)
            .map(Pod::mem_request)
            .sum()
    };
    let (g_req, b_req) = (sum(Qos::Guaranteed), sum(Qos::Burstable));
    if qos_on && g_req + b_req > 0 {
        m.set(&kubepods, "memory.min", &(g_req + b_req).to_string());
    }
    for q in [Qos::Burstable, Qos::BestEffort] {
        let p = paths.qos(q);
        m.cgroup(&p, &format!("{} pods", q.name()));
        m.set(&p, sc, "+memory");
    }
    if qos_on && b_req > 0 {
        m.set(&paths.qos(Qos::Burstable), "memory.min", &b_req.to_string());
    }
    let mut node = Node::default();
    for p in pods {
        let pp = paths.pod(p);
        m.cgroup(&pp, &format!("pod {}", p.key()));
        m.set(&pp, sc, "+memory");
        let limit = p.mem_limit();
        if limit > 0 && (p.qos == Qos::Guaranteed || (p.qos == Qos::Burstable && p.all_limited())) {
            m.set(&pp, "memory.max", &limit.to_string());
        }
        if qos_on && p.mem_request() > 0 {
            m.set(&pp, "memory.min", &p.mem_request().to_string());
        }
        node.pods.push((p.key(), pp.clone()));
        for c in p.init.iter().chain(&p.containers) {
            let cp = paths.container(&pp, c);
            m.cgroup(&cp, &format!("container {}/{}", p.key(), c.name));
            if c.mem_limit > 0 {
                m.set(&cp, "memory.max", &c.mem_limit.to_string());
            }
            let swap_max = if cfg.memory_swap.swap_behavior == "LimitedSwap"
                && p.qos == Qos::Burstable
                && !p.critical
                && c.mem_request > 0
                && c.mem_request != c.mem_limit
            {
                (c.mem_request as u128 * swap as u128 / capacity.max(1) as u128) as u64
            } else {
                0
            };
            m.set(&cp, "memory.swap.max", &swap_max.to_string());
            if qos_on {
                if c.mem_request > 0 {
                    m.set(&cp, "memory.min", &c.mem_request.to_string());
                }
                if c.mem_request != c.mem_limit {
                    let top = if c.mem_limit > 0 {
                        c.mem_limit
                    } else {
                        allocatable
                    };
                    let f = cfg.memory_throttling_factor;
                    let raw = c.mem_request as f64 + f * (top as f64 - c.mem_request as f64);
                    let high = ((raw / PAGE as f64).floor() as u64) * PAGE;
                    if high != 0 && high > c.mem_request {
                        m.set(&cp, "memory.high", &high.to_string());
                    }
                }
            }
            if !cfg.single_process_o_o_m_kill {
                m.set(&cp, "memory.oom.group", "1");
            }
            node.places.push(Place {
                key: format!("{}/{}", p.key(), c.name),
                path: cp,
                oom_score_adj: oom_score_adj(p, c, capacity),
            });
        }
    }
    m.controllers
        .push(eviction_controller(pods, cfg, &paths, &node));
    node.managed = m;
    Ok(node)
}

/// The eviction manager's settings, for the `kubelet-eviction` controller.
fn eviction_controller(
    pods: &[Pod],
    cfg: &KubeletConfig,
    paths: &Paths,
    node: &Node,
) -> ManagedController {
    let mut s: Vec<(String, String)> = Vec::new();
    let mem = |m: &BTreeMap<String, String>, sig: &str| {
        m.get(sig).map(|v| threshold_value(v).unwrap_or_default())
    };
    for sig in MEMORY_SIGNALS {
        if let Some(v) = mem(&cfg.eviction_hard, sig) {
            s.push((format!("hard.{sig}"), v));
        }
        if let Some(v) = mem(&cfg.eviction_soft, sig) {
            s.push((format!("soft.{sig}"), v));
            let g = cfg
                .eviction_soft_grace_period
                .get(*sig)
                .cloned()
                .unwrap_or_default();
            s.push((
                format!("grace.{sig}"),
                format!("{}ns", go_duration(&g).unwrap_or(0)),
            ));
        }
        if let Some(v) = mem(&cfg.eviction_minimum_reclaim, sig) {
            s.push((format!("min_reclaim.{sig}"), v));
        }
    }
    if cfg.enforce_node_allocatable.iter().any(|e| e == "pods") {
        s.push(("allocatable".into(), paths.kubepods()));
    }
    s.push((
        "max_pod_grace_period".into(),
        format!("{}s", cfg.eviction_max_pod_grace_period),
    ));
    for (p, (_, path)) in pods.iter().zip(&node.pods) {
        s.push((
            "pod".into(),
            format!(
                "{} {} {} {} {} {}",
                p.key(),
                path,
                p.mem_request(),
                p.priority,
                u8::from(p.critical),
                p.grace_s
            ),
        ));
    }
    ManagedController {
        name: "kubelet-eviction".into(),
        kind: "kubelet-eviction".into(),
        cgroup: "/".into(),
        settings: s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_round_up_to_bytes_as_value_does() {
        for (q, want) in [
            ("134217728", 134_217_728),
            ("128Mi", 134_217_728),
            ("1.5Gi", 1_610_612_736),
            ("1G", 1_000_000_000),
            ("1k", 1000),
            ("129e6", 129_000_000),
            ("129E6", 129_000_000),
            ("100m", 1),
            ("1.1Ki", 1127),
            (".5Ki", 512),
            ("0", 0),
        ] {
            assert_eq!(quantity(q).unwrap(), want, "{q}");
        }
        for bad in ["", "Mi", "1MB", "1.2.3", "-1Gi", "1K", "8Ei", "1e99", "x"] {
            assert!(quantity(bad).is_err(), "{bad}");
        }
        assert_eq!(milli_value("250m").unwrap(), 250);
        assert_eq!(milli_value("1").unwrap(), 1000);
        assert_eq!(milli_value("0.5").unwrap(), 500);
        assert_eq!(go_duration("1m30s").unwrap(), 90_000_000_000);
        assert_eq!(go_duration("5m0s").unwrap(), 300_000_000_000);
        assert!(go_duration("30").is_err());
    }

    const PODS: &str = "\
apiVersion: v1
kind: Pod
metadata:
  name: g
  uid: aaaa-1
spec:
  containers:
  - name: c
    resources:
      limits: {cpu: '1', memory: 1Gi}
---
apiVersion: v1
kind: Pod
metadata:
  name: b
  namespace: ns
  uid: bbbb-2
spec:
  containers:
  - name: x
    resources:
      requests: {memory: 256Mi}
      limits: {memory: 512Mi}
  - name: y
    resources:
      requests: {memory: 128Mi, cpu: 100m}
  priority: 10
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: e, uid: cccc-3}
  spec:
    containers:
    - name: z
      resources: {}
";

    fn files(n: &Node, path: &str) -> Vec<String> {
        n.managed
            .cgroups
            .iter()
            .find(|c| c.path == path)
            .unwrap_or_else(|| panic!("no {path}"))
            .files
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }

    fn config(extra: serde_json::Value) -> KubeletConfig {
        let mut base = serde_json::json!({});
        merge(&mut base, &extra);
        KubeletConfig::from_value(base).unwrap()
    }

    #[test]
    fn manifests_give_pods_with_their_qos_class_requests_and_limits() {
        let pods = parse_pods(PODS, "p.yaml").unwrap();
        let got: Vec<(String, Qos, u64, u64)> = pods
            .iter()
            .map(|p| (p.key(), p.qos, p.mem_request(), p.mem_limit()))
            .collect();
        assert_eq!(
            got,
            [
                ("default/g".into(), Qos::Guaranteed, 1 << 30, 1 << 30),
                ("ns/b".into(), Qos::Burstable, 384 << 20, 512 << 20),
                ("default/e".into(), Qos::BestEffort, 0, 0),
            ]
        );
        assert_eq!(pods[1].priority, 10);
        assert_eq!(pods[0].grace_s, 30);
        // An init container larger than the app containers sets the pod's request.
        let init = "kind: Pod\nmetadata: {name: i}\nspec:\n  initContainers:\n  - name: setup\n    resources: {requests: {memory: 1Gi}}\n  containers:\n  - name: app\n    resources: {requests: {memory: 100Mi}}\n  overhead: {memory: 10Mi}\n";
        let p = &parse_pods(init, "i.yaml").unwrap()[0];
        assert_eq!(p.mem_request(), (1 << 30) + (10 << 20));
        assert_eq!(p.qos, Qos::Burstable);
    }

    #[test]
    fn bad_manifests_name_the_file_the_object_and_the_field() {
        for (text, want) in [
            ("kind: Deployment\nmetadata: {name: d}\n", "m.yaml: object 1: kind: expected a Pod"),
            ("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {memory: 1GB}}}]}\n",
             "m.yaml: pod default/p: spec.containers[0].resources.limits.memory: '1GB' is not a quantity"),
            ("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}}]}\n",
             "m.yaml: pod default/p: spec.containers[0].resources.requests.memory: the request"),
            ("kind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n", "m.yaml: pod default/p: spec.containers: a pod needs"),
            ("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\nstatus: {qosClass: Gold}\n",
             "m.yaml: pod default/p: status.qosClass: 'Gold'"),
            ("kind: Pod\nmetadata: {name: P_Q}\nspec: {containers: [{name: c}]}\n", "m.yaml: object 1: metadata:"),
            ("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n---\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
             "m.yaml: pod default/p: listed twice"),
            ("kind: Pod\nmetadata: [oops\n", "m.yaml:3:1: did not find"),
        ] {
            let e = parse_pods(text, "m.yaml").unwrap_err();
            assert!(e.starts_with(want), "{text}\n{e}");
        }
    }

    #[test]
    fn the_cgroupfs_driver_lays_out_kubepods_qos_pods_and_containers() {
        let pods = parse_pods(PODS, "p.yaml").unwrap();
        let cfg = config(serde_json::json!({
            "kubeReserved": {"memory": "512Mi"}, "systemReserved": {"memory": "512Mi"}
        }));
        let cap = 8u64 << 30;
        let n = layout(&pods, &cfg, cap, 0).unwrap();
        let alloc = (7u64 << 30).to_string();
        assert_eq!(
            files(&n, "/kubepods"),
            [
                "cgroup.subtree_control=+memory".to_string(),
                format!("memory.max={alloc}")
            ]
        );
        assert_eq!(
            files(&n, "/kubepods/burstable"),
            ["cgroup.subtree_control=+memory"]
        );
        assert_eq!(
            files(&n, "/kubepods/podaaaa-1"),
            ["cgroup.subtree_control=+memory", "memory.max=1073741824"]
        );
        // Burstable with a container without a limit: no pod limit.
        assert_eq!(
            files(&n, "/kubepods/burstable/podbbbb-2"),
            ["cgroup.subtree_control=+memory"]
        );
        let x = &n.places[1];
        assert_eq!(x.key, "ns/b/x");
        assert!(
            x.path.starts_with("/kubepods/burstable/podbbbb-2/"),
            "{}",
            x.path
        );
        assert_eq!(x.path.len(), "/kubepods/burstable/podbbbb-2/".len() + 64);
        assert_eq!(
            files(&n, &x.path),
            [
                "memory.max=536870912",
                "memory.swap.max=0",
                "memory.oom.group=1"
            ]
        );
        // oom_score_adj: Guaranteed, Burstable by request, BestEffort.
        let adj: Vec<i32> = n.places.iter().map(|p| p.oom_score_adj).collect();
        assert_eq!(
            adj,
            [
                -997,
                1000 - 1000 * 256 / 8192,
                1000 - 1000 * 128 / 8192,
                1000
            ]
        );
        assert!(n.places[3]
            .path
            .starts_with("/kubepods/besteffort/podcccc-3/"));
        // The eviction manager's settings.
        let ev = &n.managed.controllers[0];
        assert_eq!(ev.kind, "kubelet-eviction");
        let get = |k: &str| -> Vec<&str> {
            ev.settings
                .iter()
                .filter(|(x, _)| x == k)
                .map(|(_, v)| v.as_str())
                .collect()
        };
        assert_eq!(get("hard.memory.available"), ["104857600"]);
        assert_eq!(get("allocatable"), ["/kubepods"]);
        assert_eq!(
            get("pod")[1],
            "ns/b /kubepods/burstable/podbbbb-2 402653184 10 0 30"
        );
    }

    #[test]
    fn memory_qos_sets_min_and_the_throttling_formula_under_the_systemd_driver() {
        let pods = parse_pods(PODS, "p.yaml").unwrap();
        let cfg = config(serde_json::json!({
            "cgroupDriver": "systemd",
            "featureGates": {"MemoryQoS": true},
            "memoryThrottlingFactor": 0.8,
            "singleProcessOOMKill": true,
            "enforceNodeAllocatable": []
        }));
        let cap = 4u64 << 30;
        let n = layout(&pods, &cfg, cap, 0).unwrap();
        assert_eq!(
            files(&n, "/kubepods.slice"),
            ["cgroup.subtree_control=+memory", "memory.min=1476395008"]
        );
        assert_eq!(
            files(&n, "/kubepods.slice/kubepods-burstable.slice"),
            ["cgroup.subtree_control=+memory", "memory.min=402653184"]
        );
        let pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podbbbb_2.slice";
        assert_eq!(
            files(&n, pod),
            ["cgroup.subtree_control=+memory", "memory.min=402653184"]
        );
        // x: 256Mi + 0.8 × 256Mi; y (no limit): 128Mi + 0.8 × (4Gi − 128Mi), page-aligned.
        let x = &n.places[1].path;
        assert!(x.starts_with(&format!("{pod}/cri-containerd-")) && x.ends_with(".scope"));
        assert_eq!(
            files(&n, x),
            [
                "memory.max=536870912",
                "memory.swap.max=0",
                "memory.min=268435456",
                "memory.high=483180544",
            ]
        );
        assert_eq!(
            files(&n, &n.places[2].path),
            [
                "memory.swap.max=0",
                "memory.min=134217728",
                "memory.high=3462815744"
            ]
        );
        // Guaranteed: no memory.high; the pod sits in kubepods.slice.
        assert_eq!(
            files(&n, &n.places[0].path),
            [
                "memory.max=1073741824",
                "memory.swap.max=0",
                "memory.min=1073741824"
            ]
        );
        assert!(n.places[0]
            .path
            .starts_with("/kubepods.slice/kubepods-podaaaa_1.slice/"));
        assert!(!n.managed.controllers[0]
            .settings
            .iter()
            .any(|(k, _)| k == "allocatable"));
    }

    #[test]
    fn swap_needs_fail_swap_on_false_and_limited_swap_shares_it_by_request() {
        let pods = parse_pods(PODS, "p.yaml").unwrap();
        let cap = 8u64 << 30;
        let e = layout(&pods, &config(serde_json::json!({})), cap, 1 << 30).unwrap_err();
        assert!(e.contains("failSwapOn"), "{e}");
        let cfg = config(serde_json::json!({
            "failSwapOn": false, "memorySwap": {"swapBehavior": "LimitedSwap"}
        }));
        let n = layout(&pods, &cfg, cap, 1 << 30).unwrap();
        // x: 256Mi of 8Gi of 1Gi of swap; y has no limit (request != limit): its share too.
        assert!(files(&n, &n.places[1].path).contains(&format!("memory.swap.max={}", 32u64 << 20)));
        assert!(files(&n, &n.places[2].path).contains(&format!("memory.swap.max={}", 16u64 << 20)));
        assert!(files(&n, &n.places[0].path).contains(&"memory.swap.max=0".to_string()));
    }

    #[test]
    fn bad_kubelet_configurations_name_the_field() {
        for (v, want) in [
            (serde_json::json!({"cgroupDriver": "none"}), "cgroupDriver:"),
            (
                serde_json::json!({"evictonHard": {}}),
                "unknown field `evictonHard`",
            ),
            (
                serde_json::json!({"evictionHard": {"memory.available": "lots"}}),
                "evictionHard.memory.available:",
            ),
            (
                serde_json::json!({"evictionHard": {"memory.free": "1Gi"}}),
                "evictionHard.memory.free: not an eviction signal",
            ),
            (
                serde_json::json!({"evictionSoft": {"memory.available": "1Gi"}}),
                "evictionSoftGracePeriod: evictionSoft.memory.available needs",
            ),
            (
                serde_json::json!({"memoryThrottlingFactor": 1.5}),
                "memoryThrottlingFactor:",
            ),
            (
                serde_json::json!({"kubeReserved": {"memory": "1X"}}),
                "kubeReserved.memory:",
            ),
        ] {
            let e = KubeletConfig::from_value(v.clone()).unwrap_err();
            assert!(e.contains(want), "{v}: {e}");
        }
        let (kept, aside) = read_config_file(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS: [10.0.0.10]\nevictionHard: {memory.available: 5%}\n",
            "k.yaml",
        )
        .unwrap();
        assert_eq!(aside, ["clusterDNS"]);
        assert_eq!(
            kept,
            serde_json::json!({"evictionHard": {"memory.available": "5%"}})
        );
        let e = read_config_file("kind: Pod\n", "k.yaml").unwrap_err();
        assert!(e.starts_with("k.yaml: kind:"), "{e}");
    }
}
