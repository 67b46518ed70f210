//! Scenario files: the TOML format, its parsing with line-accurate errors, semantic checks,
//! and the resolution of a variant into the effective set-up of one run.
//!
//! Parsing goes in two steps. serde and `toml` turn the text into raw structures whose
//! values keep their byte spans; then every value is checked (sizes, durations, names,
//! references, workload arguments, machine keys) and turned into a [`Scenario`]. Every error
//! reads `FILE:LINE: KEY: MESSAGE`.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use memcgsim_cgroupfs::{page_counter_memparse, MachineConfig};
use memcgsim_model::units::parse_duration_ns;
use memcgsim_model::CgroupVersion;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use toml::{Spanned, Value};

pub use crate::keyed::Setting;

/// Stats sampled when `[run] stats` is not given.
pub const DEFAULT_STATS: &[&str] = &[
    "anon",
    "file",
    "pgscan",
    "pgsteal",
    "pswpin",
    "pswpout",
    "workingset_refault_file",
];

/// Limits that keep every run bounded.
const MAX_SAMPLES: u64 = 1_000_000;
const MAX_REPEAT: u32 = 10_000;
const MAX_COUNT: u32 = 1_000;
const MAX_INSTANCES: u64 = 100_000;
const MAX_STATS: usize = 64;
/// Limits of a generated idle subtree.
pub const MAX_SUBTREE_GROUPS: u32 = 60_000;
pub const MAX_SUBTREE_FANOUT: u32 = 1_000;
const DEFAULT_SUBTREE_FANOUT: u32 = 2;
/// The longest cgroup path (PATH_MAX less the terminating NUL).
const MAX_PATH: usize = 4095;

// ------------------------------------------------------------------ raw (serde) form

/// A TOML table whose entries keep their order and their keys' spans.
#[derive(Debug, Clone)]
struct OrderedMap<V>(Vec<(Spanned<String>, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        OrderedMap(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Vis<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Vis<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = a.next_key::<Spanned<String>>()? {
                    let val = a.next_value()?;
                    v.push((k, val));
                }
                Ok(OrderedMap(v))
            }
        }
        d.deserialize_map(Vis(PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    machine: OrderedMap<Spanned<Value>>,
    #[serde(default)]
    cgroup: Vec<RawCgroup>,
    #[serde(default)]
    task: Vec<RawTask>,
    #[serde(default)]
    controller: Vec<OrderedMap<Spanned<Value>>>,
    #[serde(default)]
    write: Vec<RawWrite>,
    systemd: Option<RawSystemd>,
    kubernetes: Option<RawKubernetes>,
    run: RawRun,
    #[serde(default)]
    variant: Vec<RawVariant>,
    #[serde(default)]
    sweep: Vec<RawSweep>,
}

/// A `[[sweep]]` axis: a name, its values, and the one thing each value sets.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    name: Spanned<String>,
    values: Spanned<Vec<Spanned<Value>>>,
    machine: Option<Spanned<String>>,
    cgroup: Option<Spanned<String>>,
    file: Option<Spanned<String>>,
    task: Option<Spanned<String>>,
    arg: Option<Spanned<i64>>,
    controller: Option<Spanned<String>>,
    key: Option<Spanned<String>>,
}

/// `[systemd]`: unit files, relative to the scenario's directory.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSystemd {
    units: Vec<Spanned<String>>,
}

/// `[kubernetes]`: pod manifests and the kubelet's configuration (a file, and fields over it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKubernetes {
    pods: Vec<Spanned<String>>,
    kubelet_config: Option<Spanned<String>>,
    kubelet: Option<Spanned<Value>>,
}

/// A `[[write]]`: a cgroup file written at a virtual time.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWrite {
    at: Spanned<Value>,
    cgroup: Spanned<String>,
    file: Spanned<String>,
    value: Spanned<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCgroup {
    path: Spanned<String>,
    #[serde(default)]
    files: OrderedMap<Spanned<Value>>,
    subtree: Option<Spanned<RawSubtree>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a table such as { groups = 1000, fanout = 2 }")]
struct RawSubtree {
    groups: Spanned<i64>,
    fanout: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: Spanned<String>,
    cgroup: Option<Spanned<String>>,
    unit: Option<Spanned<String>>,
    container: Option<Spanned<String>>,
    workload: Spanned<String>,
    #[serde(default)]
    args: Option<Spanned<Vec<String>>>,
    start: Option<Spanned<Value>>,
    repeat: Option<Spanned<i64>>,
    count: Option<Spanned<i64>>,
    oom_score_adj: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTaskOverride {
    cgroup: Option<Spanned<String>>,
    workload: Option<Spanned<String>>,
    args: Option<Spanned<Vec<String>>>,
    start: Option<Spanned<Value>>,
    repeat: Option<Spanned<i64>>,
    count: Option<Spanned<i64>>,
    oom_score_adj: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    duration: Spanned<Value>,
    sample: Option<Spanned<Value>>,
    seeds: Option<Spanned<Vec<Spanned<i64>>>>,
    stats: Option<Spanned<Vec<Spanned<String>>>>,
    until: Option<Spanned<String>>,
    base: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    machine: OrderedMap<Spanned<Value>>,
    #[serde(default)]
    cgroup: OrderedMap<OrderedMap<Spanned<Value>>>,
    #[serde(default)]
    task: OrderedMap<RawTaskOverride>,
    #[serde(default)]
    subtree: OrderedMap<Spanned<RawSubtree>>,
    #[serde(default)]
    controller: OrderedMap<OrderedMap<Spanned<Value>>>,
    kubelet: Option<Spanned<Value>>,
}

// ------------------------------------------------------------------ checked form

/// A cgroup to create (unless it is `/`) and the files to write in it, in order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CgroupSpec {
    pub path: String,
    pub files: Vec<Setting>,
    /// Empty cgroups generated below this one after its files are written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtree: Option<Subtree>,
    #[serde(skip)]
    pub line: usize,
}

/// A generated tree of idle cgroups below a `[[cgroup]]`: `groups` empty cgroups forming a
/// complete `fanout`-ary tree, created breadth first and named `g1`, `g2`, ...; cgroup `gi`'s
/// children are `g(i*fanout+1)` to `g(i*fanout+fanout)` (the `[[cgroup]]` itself is number 0).
/// They are not sampled or reported; only their number is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Subtree {
    pub groups: u32,
    pub fanout: u32,
    /// Source line of the `subtree` key (or of the variant's override).
    #[serde(skip)]
    pub line: usize,
}

impl Subtree {
    /// The parent of generated cgroup `i` (1-based); 0 is the `[[cgroup]]` itself.
    pub fn parent_of(&self, i: u32) -> u32 {
        (i - 1) / self.fanout
    }

    /// The path of generated cgroup `i` (1-based) below `base`.
    pub fn path_of(&self, base: &str, i: u32) -> String {
        let mut chain = Vec::new();
        let mut x = i;
        while x > 0 {
            chain.push(x);
            x = self.parent_of(x);
        }
        let mut p = if base == "/" {
            String::new()
        } else {
            base.to_string()
        };
        for x in chain.iter().rev() {
            p.push_str(&format!("/g{x}"));
        }
        p
    }

    /// The length in bytes of the longest generated path below `base`.
    pub fn longest_path(&self, base: &str) -> usize {
        let base_len = if base == "/" { 0 } else { base.len() };
        // len[i]: the length of cgroup i's path; "/g" and the digits of i below its parent.
        let mut len: Vec<usize> = Vec::with_capacity(self.groups as usize + 1);
        len.push(base_len);
        for i in 1..=self.groups {
            let own = 2 + i.to_string().len();
            len.push(len[self.parent_of(i) as usize] + own);
        }
        len.into_iter().max().unwrap_or(base_len)
    }

    /// How many levels the generated tree has below the `[[cgroup]]`.
    pub fn depth(&self) -> u32 {
        let mut d = 0;
        let mut x = self.groups;
        while x > 0 {
            d += 1;
            x = self.parent_of(x);
        }
        d
    }
}

/// A task of the scenario: `count` parallel copies, each started `repeat` times in a row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskSpec {
    pub name: String,
    pub cgroup: String,
    pub workload: String,
    pub args: Vec<String>,
    pub start_ns: u64,
    pub repeat: u32,
    pub count: u32,
    pub oom_score_adj: i32,
    /// `namespace/pod/container` of a task that runs in a Kubernetes container: its cgroup
    /// and (unless `oom_score_adj` is given) its oom_score_adj are the kubelet's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    #[serde(skip)]
    pub adj_given: bool,
    /// Source line of the `[[task]]` (or of the variant's override).
    #[serde(skip)]
    pub line: usize,
    /// Source lines of `workload` and `args` (or of the variant's override).
    #[serde(skip)]
    pub workload_line: usize,
    #[serde(skip)]
    pub args_line: usize,
}

/// A userspace controller run beside the tasks (controller.rs): its kind, the cgroup it
/// watches, and its settings as written.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ControllerSpec {
    pub name: String,
    pub kind: String,
    pub cgroup: String,
    pub enabled: bool,
    pub settings: Vec<Setting>,
    #[serde(skip)]
    pub line: usize,
}

/// Changes a variant makes to one controller.
#[derive(Clone, Debug, PartialEq)]
pub struct ControllerOverride {
    pub controller: String,
    pub line: usize,
    pub cgroup: Option<String>,
    pub enabled: Option<bool>,
    pub settings: Vec<Setting>,
}

/// A cgroup file written during the run, at `at_ns` of virtual time (`[[write]]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WriteSpec {
    pub at_ns: u64,
    pub cgroup: String,
    pub file: String,
    pub value: String,
    #[serde(skip)]
    pub line: usize,
}

/// When a run stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Until {
    /// When every task has ended (or holds its memory), or at `duration` at the latest.
    Tasks,
    /// Always at `duration`.
    Duration,
}

/// The `[run]` table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSpec {
    pub duration_ns: u64,
    pub sample_ns: u64,
    pub seeds: Vec<u64>,
    pub stats: Vec<String>,
    pub until: Until,
}

/// Changes a variant makes to one task.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskOverride {
    pub task: String,
    pub line: usize,
    pub cgroup: Option<String>,
    pub workload: Option<String>,
    pub args: Option<Vec<String>>,
    pub start_ns: Option<u64>,
    pub repeat: Option<u32>,
    pub count: Option<u32>,
    pub oom_score_adj: Option<i32>,
}

/// A named variant: overrides of machine keys, cgroup files and task fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub name: String,
    pub description: String,
    pub line: usize,
    pub machine: Vec<Setting>,
    pub cgroups: Vec<CgroupSpec>,
    pub tasks: Vec<TaskOverride>,
    /// Per cgroup path, a replacement of its generated subtree.
    pub subtrees: Vec<(String, Subtree)>,
    pub controllers: Vec<ControllerOverride>,
    /// KubeletConfiguration fields over the scenario's.
    pub kubelet: Option<serde_json::Value>,
}

/// A parsed and checked scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The file name used in error messages.
    pub file: String,
    pub name: String,
    pub description: String,
    pub machine: Vec<Setting>,
    pub cgroups: Vec<CgroupSpec>,
    pub tasks: Vec<TaskSpec>,
    pub controllers: Vec<ControllerSpec>,
    /// The timed writes, in time order (file order among equal times).
    pub writes: Vec<WriteSpec>,
    pub run: RunSpec,
    /// At least one; an implicit "base" when the file has no `[[variant]]`.
    pub variants: Vec<Variant>,
    /// The variant others are compared against.
    pub base: String,
    /// `[[sweep]]` axes, in file order (none: no sweep).
    pub sweep: Vec<SweepAxis>,
    /// `[systemd] units`: the unit files, read; their cgroups are made per variant, since
    /// a percentage is of that variant's MemTotal.
    pub units: Vec<UnitFile>,
    /// `[kubernetes]`: the pods and the kubelet's configuration.
    pub kube: Option<Kube>,
}

/// A scenario's Kubernetes node.
#[derive(Clone, Debug, PartialEq)]
pub struct Kube {
    pub pods: Vec<memcgsim_node::kubernetes::Pod>,
    /// The configuration file's fields with the scenario's over them.
    pub config: serde_json::Value,
    /// The configuration file's fields this model does not read.
    pub aside: Vec<String>,
    pub line: usize,
}

/// A systemd unit file named by `[systemd] units`.
#[derive(Clone, Debug, PartialEq)]
pub struct UnitFile {
    /// The unit's name: the file's name.
    pub name: String,
    /// The file as the scenario names it, for errors.
    pub file: String,
    pub text: String,
    /// The scenario line naming it.
    pub line: usize,
}

/// What a sweep axis's values set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum SweepTarget {
    /// A `[machine]` key.
    Machine(String),
    /// A control file of a `[[cgroup]]`, written after the scenario's own files.
    File { cgroup: String, file: String },
    /// The workload argument at this index (0-based) of a `[[task]]`.
    Arg { task: String, index: usize },
    /// A setting of a `[[controller]]` (`pressure`, `min_size`, ...; not `kind` or `name`).
    Controller { controller: String, key: String },
}

/// One axis of a sweep: each of its values is set in turn (see crate::sweep).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepAxis {
    pub name: String,
    pub line: usize,
    pub values: Vec<String>,
    pub target: SweepTarget,
}

/// The effective set-up of one variant: the base scenario with the variant's overrides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setup {
    pub variant: String,
    pub machine: Vec<Setting>,
    pub cgroups: Vec<CgroupSpec>,
    pub tasks: Vec<TaskSpec>,
    /// The controllers, enabled or not.
    pub controllers: Vec<ControllerSpec>,
    /// The timed writes, in time order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<WriteSpec>,
    /// The number of idle cgroups generated by `subtree` (all entries together).
    pub generated_cgroups: u64,
    /// The cgroups systemd and the kubelet made, with whose they are (`web.service`, `pod
    /// default/web-0`, `container default/web-0/app`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<(String, String)>,
}

// ------------------------------------------------------------------ errors and positions

/// The text being parsed, for turning byte spans into `FILE:LINE: KEY:` prefixes.
struct Src<'a> {
    file: &'a str,
    text: &'a str,
}

impl Src<'_> {
    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        let end = (0..=end)
            .rev()
            .find(|&i| self.text.is_char_boundary(i))
            .unwrap_or(0);
        self.text[..end].bytes().filter(|&b| b == b'\n').count() + 1
    }

    fn err(&self, span: Range<usize>, key: &str, msg: impl fmt::Display) -> String {
        format!("{}:{}: {key}: {msg}", self.file, self.line(span.start))
    }

    fn err_line(&self, line: usize, key: &str, msg: impl fmt::Display) -> String {
        format!("{}:{line}: {key}: {msg}", self.file)
    }
}

/// The dotted key at a byte offset of TOML text, found from the text itself: the nearest
/// table header above and the keys of the (inline) tables open on the offset's line.
fn key_at(text: &str, span: Range<usize>) -> String {
    let offset = span.start;
    let on_key = span.end > span.start && !text.get(span.clone()).unwrap_or("\n").contains('\n');
    let offset = (0..=offset.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let line_start = text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line_end = text[offset..]
        .find('\n')
        .map(|i| offset + i)
        .unwrap_or(text.len());
    let line = &text[line_start..line_end];
    let header_of = |l: &str| -> Option<String> {
        let t = l.trim();
        if !t.starts_with('[') {
            return None;
        }
        let inner = t.trim_start_matches('[');
        let end = inner.find(']')?;
        Some(inner[..end].trim().to_string())
    };
    if let Some(h) = header_of(line) {
        if line.trim_start().starts_with("[[") {
            return format!("[[{h}]]");
        }
        return format!("[{h}]");
    }
    let header = text[..line_start]
        .lines()
        .rev()
        .find_map(header_of)
        .unwrap_or_default();
    // Keys on this line before the offset, with the nesting depth each was defined at.
    let prefix = &line[..offset - line_start];
    let mut keys: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in prefix.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '#' => break,
            '=' => {
                let k = prefix[start..i]
                    .trim()
                    .trim_matches(['"', '\''])
                    .to_string();
                keys.retain(|(d, _)| *d < depth);
                keys.push((depth, k));
            }
            '{' | '[' => {
                depth += 1;
                start = i + 1;
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                keys.retain(|(d, _)| *d <= depth);
            }
            ',' => {
                keys.retain(|(d, _)| *d < depth);
                start = i + 1;
            }
            _ => {}
        }
    }
    // A span on a key itself (an unknown field): the word under the offset.
    if on_key && (keys.is_empty() || !prefix.contains('=')) {
        let rest = &line[offset - line_start..];
        let word: String = rest
            .trim_start_matches(['"', '\''])
            .chars()
            .take_while(|c| !matches!(c, '=' | ' ' | '\t' | '"' | '\'' | ',' | '}'))
            .collect();
        if !word.is_empty() {
            keys.push((depth, word));
        }
    }
    let mut parts: Vec<String> = Vec::new();
    if !header.is_empty() {
        parts.push(header);
    }
    parts.extend(keys.into_iter().map(|(_, k)| k));
    parts.join(".")
}

fn toml_error(src: &Src, e: &toml::de::Error) -> String {
    let msg = e.message().trim().to_string();
    match e.span() {
        Some(span) => {
            let key = key_at(src.text, span.clone());
            if key.is_empty() {
                format!("{}:{}: {msg}", src.file, src.line(span.start))
            } else {
                src.err(span, &key, msg)
            }
        }
        None => format!("{}: {msg}", src.file),
    }
}

// ------------------------------------------------------------------ value checks

/// A TOML scalar as the text a file write or a `machine` key takes.
fn scalar(v: &Spanned<Value>, bool_words: (&str, &str)) -> Result<String, String> {
    match v.get_ref() {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        Value::Boolean(b) => Ok(if *b { bool_words.0 } else { bool_words.1 }.to_string()),
        other => Err(format!(
            "expected a string or a number, got {}",
            other.type_str()
        )),
    }
}

/// A duration: a string with a unit ("500ms", "2s", "10m") or a number of seconds.
fn duration(src: &Src, v: &Spanned<Value>, key: &str) -> Result<u64, String> {
    let r = match v.get_ref() {
        Value::String(s) => parse_duration_ns(s),
        Value::Integer(i) if *i >= 0 => parse_duration_ns(&i.to_string()),
        Value::Float(f) if *f >= 0.0 => parse_duration_ns(&f.to_string()),
        Value::Integer(_) | Value::Float(_) => Err("a duration cannot be negative".to_string()),
        other => Err(format!(
            "expected a duration such as \"10s\", got {}",
            other.type_str()
        )),
    };
    r.map_err(|e| src.err(v.span(), key, e))
}

fn ranged<T: TryFrom<i64>>(
    src: &Src,
    v: &Spanned<i64>,
    key: &str,
    lo: i64,
    hi: i64,
) -> Result<T, String> {
    let x = *v.get_ref();
    if x < lo || x > hi {
        return Err(src.err(v.span(), key, format!("{x} is out of range ({lo} to {hi})")));
    }
    T::try_from(x).map_err(|_| src.err(v.span(), key, format!("{x} is out of range")))
}

/// Names used in file paths and figure titles: letters, digits, `.`, `_`, `-`, `:`.
fn check_name(src: &Src, v: &Spanned<String>, key: &str) -> Result<String, String> {
    let s = v.get_ref();
    let ok = !s.is_empty()
        && s.len() <= 100
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'));
    if !ok {
        return Err(src.err(
            v.span(),
            key,
            format!(
                "bad name '{s}' (use letters, digits, '.', '_', '-' and ':', not starting with '.')"
            ),
        ));
    }
    Ok(s.clone())
}

fn check_cgroup_path(src: &Src, v: &Spanned<String>, key: &str) -> Result<String, String> {
    let s = v.get_ref();
    cgroup_path(s).map_err(|why| src.err(v.span(), key, format!("bad cgroup path '{s}': {why}")))
}

/// A cgroup path as written, without trailing slashes, or why it is not one.
fn cgroup_path(s: &str) -> Result<String, &'static str> {
    if s == "/" {
        return Ok(s.to_string());
    }
    if !s.starts_with('/') {
        return Err("it must be absolute, like /A/B");
    }
    let trimmed = s.trim_end_matches('/');
    if trimmed.is_empty() {
        // "//": the root, as "/".
        return Ok("/".to_string());
    }
    for part in trimmed[1..].split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err("empty, '.' or '..' component");
        }
        if part == "proc" && trimmed.matches('/').count() == 1 {
            return Err("/proc is not a cgroup");
        }
        if !part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '@' | '+'))
        {
            return Err("use letters, digits, '.', '_', '-', ':', '@' and '+'");
        }
    }
    Ok(trimmed.to_string())
}

/// Files whose value is a memory size; checked at parse time so that a bad size is reported
/// with its line before anything runs.
fn size_file_token(file: &str, version: CgroupVersion) -> Option<&'static str> {
    match (version, file) {
        (
            CgroupVersion::V2,
            "memory.min" | "memory.low" | "memory.high" | "memory.max" | "memory.swap.high"
            | "memory.swap.max",
        ) => Some("max"),
        (
            CgroupVersion::V1,
            "memory.limit_in_bytes" | "memory.memsw.limit_in_bytes" | "memory.soft_limit_in_bytes",
        ) => Some("-1"),
        _ => None,
    }
}

fn settings(
    src: &Src,
    map: &OrderedMap<Spanned<Value>>,
    table: &str,
    bool_words: (&str, &str),
) -> Result<Vec<Setting>, String> {
    let mut out = Vec::new();
    for (k, v) in &map.0 {
        let key = format!("{table}.{}", k.get_ref());
        if table.ends_with("machine")
            && matches!(v.get_ref(), Value::Boolean(_))
            && !MachineConfig::key_is_switch(k.get_ref())
            && MachineConfig::KEYS.contains(&k.get_ref().as_str())
        {
            return Err(src.err(
                v.span(),
                &key,
                format!(
                    "{} takes a value such as \"{}\", not true or false",
                    k.get_ref(),
                    machine_example(k.get_ref())
                ),
            ));
        }
        let value = scalar(v, bool_words).map_err(|e| src.err(v.span(), &key, e))?;
        if k.get_ref().is_empty() || k.get_ref().contains(['/', ' ', '\t']) {
            return Err(src.err(k.span(), &key, "bad key"));
        }
        out.push(Setting {
            key: k.get_ref().clone(),
            value,
            line: src.line(v.span().start),
        });
    }
    Ok(out)
}

/// A `[[controller]]` table (the `index`-th): name, kind, cgroup and enabled, and the
/// kind's settings.
fn controller(
    src: &Src,
    map: &OrderedMap<Spanned<Value>>,
    index: usize,
) -> Result<ControllerSpec, String> {
    let all = settings(src, map, "controller", ("true", "false"))?;
    let line = all.first().map(|s| s.line).unwrap_or(1);
    let (mut name, mut kind, mut cgroup, mut enabled) = (None, None, None, true);
    let mut rest = Vec::new();
    for s in all {
        match s.key.as_str() {
            "name" => {
                if s.value.is_empty()
                    || !s
                        .value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                {
                    return Err(src.err_line(
                        s.line,
                        "controller.name",
                        format!("bad name '{}' (letters, digits, '_', '-' and '.')", s.value),
                    ));
                }
                name = Some(s.value);
            }
            "kind" => {
                if !crate::controller::KINDS.contains(&s.value.as_str()) {
                    return Err(src.err_line(
                        s.line,
                        "controller.kind",
                        format!(
                            "unknown controller '{}' (known: {})",
                            s.value,
                            crate::controller::KINDS.join(", ")
                        ),
                    ));
                }
                kind = Some(s.value);
            }
            "cgroup" => cgroup = Some(controller_cgroup(src, &s, "controller")?),
            "enabled" => enabled = enabled_flag(src, &s, "controller")?,
            _ => rest.push(s),
        }
    }
    let Some(kind) = kind else {
        return Err(src.err_line(
            line,
            "controller.kind",
            format!(
                "controller number {} needs a kind ({})",
                index + 1,
                crate::controller::KINDS.join(", ")
            ),
        ));
    };
    let Some(cgroup) = cgroup else {
        return Err(src.err_line(
            line,
            "controller.cgroup",
            "a controller needs the cgroup it watches",
        ));
    };
    if let Err((l, k, m)) = crate::controller::config(&kind, &rest) {
        return Err(src.err_line(l, &format!("controller.{k}"), m));
    }
    Ok(ControllerSpec {
        name: name.unwrap_or_else(|| kind.clone()),
        kind,
        cgroup,
        enabled,
        settings: rest,
        line,
    })
}

fn controller_cgroup(src: &Src, s: &Setting, table: &str) -> Result<String, String> {
    cgroup_path(&s.value).map_err(|why| {
        src.err_line(
            s.line,
            &format!("{table}.cgroup"),
            format!("bad cgroup path '{}': {why}", s.value),
        )
    })
}

fn enabled_flag(src: &Src, s: &Setting, table: &str) -> Result<bool, String> {
    match s.value.as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        v => Err(src.err_line(
            s.line,
            &format!("{table}.enabled"),
            format!("expected true or false, got '{v}'"),
        )),
    }
}

/// An example value of a machine key, for messages.
fn machine_example(key: &str) -> &'static str {
    match key {
        "memory" | "swap" => "2G",
        "disk_bandwidth" | "swap_bandwidth" => "500M",
        "disk" | "swap_disk" => "hdd",
        "disk_queue_depth" | "swap_queue_depth" => "16",
        "disk_seek" | "swap_seek" | "swap_latency" => "8ms",
        "cgroup" => "v2",
        "lru" => "mglru",
        "shrink_lruvec" | "reclaim" => "3.11",
        "softlimit" => "tree",
        "dirty" => "seed001",
        "stats" => "rstat",
        "thp" => "always",
        "thp_defrag" => "madvise",
        "shmem_thp" => "within_size",
        "page_cgroup" => "radix",
        "zswap_compressor" => "zstd",
        "zswap_zpool" => "zsmalloc",
        "reserved" | "base" => "64M",
        "cpu_scale" => "24",
        "disk_latency" | "hit_cost" | "fault_cost" | "majfault_cost" | "scan_cost"
        | "pageout_cost" | "writepage_cost" | "quantum" | "iter_cost" | "ipi_cost" => "100us",
        _ => "4",
    }
}

/// A `subtree = { groups = N, fanout = F }` table.
fn subtree(src: &Src, v: &Spanned<RawSubtree>, key: &str) -> Result<Subtree, String> {
    let r = v.get_ref();
    let groups = ranged(
        src,
        &r.groups,
        &format!("{key}.groups"),
        0,
        MAX_SUBTREE_GROUPS as i64,
    )?;
    let fanout = match &r.fanout {
        Some(f) => ranged(
            src,
            f,
            &format!("{key}.fanout"),
            1,
            MAX_SUBTREE_FANOUT as i64,
        )?,
        None => DEFAULT_SUBTREE_FANOUT,
    };
    Ok(Subtree {
        groups,
        fanout,
        line: src.line(v.span().start),
    })
}

/// Replace settings with the same key in place, append new ones.
fn merge_settings(base: &mut Vec<Setting>, over: &[Setting]) {
    for s in over {
        match base.iter_mut().find(|b| b.key == s.key) {
            Some(b) => *b = s.clone(),
            None => base.push(s.clone()),
        }
    }
}

/// Build the machine configuration of a set of `machine` settings (without the seed).
pub fn machine_config(file: &str, settings: &[Setting]) -> Result<MachineConfig, String> {
    let mut cfg = MachineConfig::default();
    for s in settings {
        cfg.set(&s.key, &s.value).map_err(|e| {
            // The TOML key is named already; drop the script-style prefix.
            let prefix = format!("machine option {}: ", s.key);
            let e = e.strip_prefix(&prefix).unwrap_or(&e);
            format!("{file}:{}: machine.{}: {e}", s.line, s.key)
        })?;
    }
    cfg.validate().map_err(|e| {
        let line = settings.first().map(|s| s.line).unwrap_or(1);
        format!("{file}:{line}: [machine]: {e}")
    })?;
    Ok(cfg)
}

// ------------------------------------------------------------------ parse

/// Load and parse a scenario file.
pub fn load(path: impl AsRef<std::path::Path>) -> Result<Scenario, String> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{name}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8 text"))?;
    parse(&text, &name)
}

/// Does the text start like a script (docs/SCRIPTING.md) rather than a TOML scenario: its
/// first line that is not blank or a comment begins with a script command?
fn looks_like_script(text: &str) -> bool {
    const COMMANDS: &[&str] = &[
        "machine", "mkdir", "rmdir", "echo", "cat", "run", "expect", "let", "open", "wait",
        "sleep", "kill", "repeat", "cd",
    ];
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .and_then(|l| l.split_whitespace().next())
        .is_some_and(|w| COMMANDS.contains(&w))
}

/// Parse scenario text; `file_name` is used in error messages.
pub fn parse(text: &str, file_name: &str) -> Result<Scenario, String> {
    let src = Src {
        file: file_name,
        text,
    };
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let msg = toml_error(&src, &e);
        if looks_like_script(text) {
            format!(
                "{msg}\n{file_name} looks like a script, not a scenario: run it with `memcgsim script {file_name}`"
            )
        } else {
            msg
        }
    })?;
    let name = check_name(&src, &raw.name, "name")?;

    // [machine]
    let machine = settings(&src, &raw.machine, "machine", ("on", "off"))?;
    for s in &machine {
        if s.key == "seed" {
            return Err(src.err_line(
                s.line,
                "machine.seed",
                "set the seeds in [run] seeds = [...]; each run sets the machine seed",
            ));
        }
    }
    let base_cfg = machine_config(file_name, &machine)?;

    // [systemd]: the units' cgroups are made per variant; here their paths and controllers.
    let units = match &raw.systemd {
        Some(sd) => read_units(&src, sd)?,
        None => Vec::new(),
    };
    let kube = match &raw.kubernetes {
        Some(k) => Some(read_kube(&src, k)?),
        None => None,
    };
    let node = node_setup(file_name, &units, kube.as_ref(), None, &base_cfg)?;
    let managed = &node.managed;

    // [[cgroup]]
    let mut cgroups: Vec<CgroupSpec> = Vec::new();
    for c in &raw.cgroup {
        let path = check_cgroup_path(&src, &c.path, "cgroup.path")?;
        if cgroups.iter().any(|x| x.path == path) {
            return Err(src.err(
                c.path.span(),
                "cgroup.path",
                format!("cgroup '{path}' is listed twice"),
            ));
        }
        let files = settings(&src, &c.files, "cgroup.files", ("1", "0"))?;
        let sub = match &c.subtree {
            Some(t) => Some(subtree(&src, t, "cgroup.subtree")?),
            None => None,
        };
        cgroups.push(CgroupSpec {
            path,
            files,
            subtree: sub,
            line: src.line(c.path.span().start),
        });
    }

    // [[task]]
    let mut tasks: Vec<TaskSpec> = Vec::new();
    for t in &raw.task {
        let name = check_name(&src, &t.name, "task.name")?;
        if tasks.iter().any(|x| x.name == name) {
            return Err(src.err(
                t.name.span(),
                "task.name",
                format!("task name '{name}' is used twice"),
            ));
        }
        let mut container = None;
        let mut adj = 0;
        let cgroup = match (&t.cgroup, &t.unit, &t.container) {
            (Some(c), None, None) => check_cgroup_path(&src, c, "task.cgroup")?,
            (None, None, Some(k)) => {
                let key = if k.get_ref().matches('/').count() == 1 {
                    format!("default/{}", k.get_ref())
                } else {
                    k.get_ref().clone()
                };
                let Some(place) = node.places.iter().find(|p| p.key == key) else {
                    return Err(src.err(
                        k.span(),
                        "task.container",
                        format!(
                            "no container '{key}' in the [kubernetes] pods (name it NAMESPACE/POD/CONTAINER, or POD/CONTAINER in namespace default)"
                        ),
                    ));
                };
                container = Some(key);
                adj = place.oom_score_adj;
                place.path.clone()
            }
            (None, Some(u), None) => match managed.cgroups.iter().find(|c| &c.owner == u.get_ref())
            {
                Some(c) => c.path.clone(),
                None => {
                    return Err(src.err(
                        u.span(),
                        "task.unit",
                        format!("no unit named '{}' in [systemd] units", u.get_ref()),
                    ))
                }
            },
            _ => {
                return Err(src.err(
                    t.name.span(),
                    "task",
                    format!("task '{name}' needs one of `cgroup`, `unit` and `container`"),
                ))
            }
        };
        let spec = TaskSpec {
            name,
            cgroup,
            workload: t.workload.get_ref().clone(),
            args: t
                .args
                .as_ref()
                .map(|a| a.get_ref().clone())
                .unwrap_or_default(),
            start_ns: match &t.start {
                Some(v) => duration(&src, v, "task.start")?,
                None => 0,
            },
            repeat: match &t.repeat {
                Some(v) => ranged(&src, v, "task.repeat", 1, MAX_REPEAT as i64)?,
                None => 1,
            },
            count: match &t.count {
                Some(v) => ranged(&src, v, "task.count", 1, MAX_COUNT as i64)?,
                None => 1,
            },
            oom_score_adj: match &t.oom_score_adj {
                Some(v) => ranged(&src, v, "task.oom_score_adj", -1000, 1000)?,
                None => adj,
            },
            container,
            adj_given: t.oom_score_adj.is_some(),
            line: src.line(t.name.span().start),
            workload_line: src.line(t.workload.span().start),
            args_line: src.line(
                t.args
                    .as_ref()
                    .map(|a| a.span().start)
                    .unwrap_or(t.name.span().start),
            ),
        };
        tasks.push(spec);
    }

    // [[controller]], after those the units ask for.
    let mut controllers: Vec<ControllerSpec> = Vec::new();
    for m in &managed.controllers {
        let line = units
            .iter()
            .find(|u| m.cgroup.ends_with(&format!("/{}", u.name)))
            .map(|u| u.line)
            .or(kube.as_ref().map(|k| k.line))
            .unwrap_or(1);
        controllers.push(ControllerSpec {
            name: m.name.clone(),
            kind: m.kind.clone(),
            cgroup: m.cgroup.clone(),
            enabled: true,
            settings: m
                .settings
                .iter()
                .map(|(k, v)| Setting {
                    key: k.clone(),
                    value: v.clone(),
                    line,
                })
                .collect(),
            line,
        });
    }
    for (i, map) in raw.controller.iter().enumerate() {
        let c = controller(&src, map, i)?;
        if controllers.iter().any(|x| x.name == c.name) {
            return Err(src.err_line(
                c.line,
                "controller.name",
                format!("controller name '{}' is used twice", c.name),
            ));
        }
        controllers.push(c);
    }

    // [[write]]
    let mut writes: Vec<WriteSpec> = Vec::new();
    for w in &raw.write {
        let cgroup = check_cgroup_path(&src, &w.cgroup, "write.cgroup")?;
        if cgroup != "/"
            && !cgroups.iter().any(|c| c.path == cgroup)
            && !managed.cgroups.iter().any(|c| c.path == cgroup)
        {
            return Err(src.err(
                w.cgroup.span(),
                "write.cgroup",
                format!("'{cgroup}' is not a [[cgroup]] of the scenario"),
            ));
        }
        let file = w.file.get_ref();
        if file.is_empty() || file.contains(['/', ' ', '\t']) {
            return Err(src.err(
                w.file.span(),
                "write.file",
                format!("'{file}' is not the name of a cgroup file"),
            ));
        }
        writes.push(WriteSpec {
            at_ns: duration(&src, &w.at, "write.at")?,
            cgroup,
            file: file.clone(),
            value: scalar(&w.value, ("1", "0"))
                .map_err(|e| src.err(w.value.span(), "write.value", e))?,
            line: src.line(w.at.span().start),
        });
    }
    writes.sort_by_key(|w| w.at_ns);

    // [run]
    let r = &raw.run;
    let duration_ns = duration(&src, &r.duration, "run.duration")?;
    if duration_ns == 0 {
        return Err(src.err(r.duration.span(), "run.duration", "must be positive"));
    }
    let sample_ns = match &r.sample {
        Some(v) => duration(&src, v, "run.sample")?,
        None => 1_000_000_000,
    };
    if sample_ns == 0 {
        let span = r.sample.as_ref().map(|s| s.span()).unwrap_or(0..0);
        return Err(src.err(span, "run.sample", "must be positive"));
    }
    if duration_ns / sample_ns > MAX_SAMPLES {
        let span = r
            .sample
            .as_ref()
            .map(|s| s.span())
            .unwrap_or(r.duration.span());
        return Err(src.err(
            span,
            "run.sample",
            format!("too many samples (duration / sample must be at most {MAX_SAMPLES})"),
        ));
    }
    let seeds = match &r.seeds {
        Some(list) => {
            if list.get_ref().is_empty() {
                return Err(src.err(list.span(), "run.seeds", "needs at least one seed"));
            }
            let mut v: Vec<u64> = Vec::new();
            for s in list.get_ref() {
                let x: u64 = ranged(&src, s, "run.seeds", 0, i64::MAX)?;
                if v.contains(&x) {
                    return Err(src.err(
                        s.span(),
                        "run.seeds",
                        format!("seed {x} is listed twice"),
                    ));
                }
                v.push(x);
            }
            v
        }
        None => vec![1],
    };
    let stats = match &r.stats {
        Some(list) => {
            if list.get_ref().len() > MAX_STATS {
                return Err(src.err(
                    list.span(),
                    "run.stats",
                    format!("at most {MAX_STATS} keys"),
                ));
            }
            let mut v: Vec<String> = Vec::new();
            for s in list.get_ref() {
                let k = s.get_ref();
                if k.is_empty()
                    || !k
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
                {
                    return Err(src.err(s.span(), "run.stats", format!("bad stat key '{k}'")));
                }
                if !v.contains(k) {
                    v.push(k.clone());
                }
            }
            v
        }
        None => DEFAULT_STATS.iter().map(|s| s.to_string()).collect(),
    };
    let until = match &r.until {
        None => Until::Tasks,
        Some(u) => match u.get_ref().as_str() {
            "tasks" => Until::Tasks,
            "duration" => Until::Duration,
            other => {
                return Err(src.err(
                    u.span(),
                    "run.until",
                    format!("expected \"tasks\" or \"duration\", got '{other}'"),
                ))
            }
        },
    };
    let run = RunSpec {
        duration_ns,
        sample_ns,
        seeds,
        stats,
        until,
    };

    // [[variant]]
    let mut variants: Vec<Variant> = Vec::new();
    for v in &raw.variant {
        let vname = check_name(&src, &v.name, "variant.name")?;
        if variants.iter().any(|x| x.name == vname) {
            return Err(src.err(
                v.name.span(),
                "variant.name",
                format!("variant name '{vname}' is used twice"),
            ));
        }
        let vmachine = settings(&src, &v.machine, "variant.machine", ("on", "off"))?;
        if let Some(s) = vmachine.iter().find(|s| s.key == "seed") {
            return Err(src.err_line(
                s.line,
                "variant.machine.seed",
                "seeds are set in [run] seeds = [...]",
            ));
        }
        let mut vcg = Vec::new();
        for (path, files) in &v.cgroup.0 {
            let p = check_cgroup_path(&src, path, "variant.cgroup")?;
            let files = settings(&src, files, &format!("variant.cgroup.{p}"), ("1", "0"))?;
            vcg.push(CgroupSpec {
                path: p,
                files,
                subtree: None,
                line: src.line(path.span().start),
            });
        }
        let mut vsub: Vec<(String, Subtree)> = Vec::new();
        for (path, t) in &v.subtree.0 {
            let p = check_cgroup_path(&src, path, "variant.subtree")?;
            if !cgroups.iter().any(|c| c.path == p) {
                return Err(src.err(
                    path.span(),
                    "variant.subtree",
                    format!("no [[cgroup]] has path '{p}'"),
                ));
            }
            let st = subtree(&src, t, &format!("variant.subtree.{p}"))?;
            vsub.retain(|(x, _)| *x != p);
            vsub.push((p, st));
        }
        let mut vtasks = Vec::new();
        for (tname, o) in &v.task.0 {
            if !tasks.iter().any(|t| &t.name == tname.get_ref()) {
                return Err(src.err(
                    tname.span(),
                    "variant.task",
                    format!("no task named '{}'", tname.get_ref()),
                ));
            }
            let key = format!("variant.task.{}", tname.get_ref());
            vtasks.push(TaskOverride {
                task: tname.get_ref().clone(),
                line: src.line(tname.span().start),
                cgroup: match &o.cgroup {
                    Some(c) => Some(check_cgroup_path(&src, c, &format!("{key}.cgroup"))?),
                    None => None,
                },
                workload: o.workload.as_ref().map(|w| w.get_ref().clone()),
                args: o.args.as_ref().map(|a| a.get_ref().clone()),
                start_ns: match &o.start {
                    Some(s) => Some(duration(&src, s, &format!("{key}.start"))?),
                    None => None,
                },
                repeat: match &o.repeat {
                    Some(x) => Some(ranged(
                        &src,
                        x,
                        &format!("{key}.repeat"),
                        1,
                        MAX_REPEAT as i64,
                    )?),
                    None => None,
                },
                count: match &o.count {
                    Some(x) => Some(ranged(
                        &src,
                        x,
                        &format!("{key}.count"),
                        1,
                        MAX_COUNT as i64,
                    )?),
                    None => None,
                },
                oom_score_adj: match &o.oom_score_adj {
                    Some(x) => Some(ranged(
                        &src,
                        x,
                        &format!("{key}.oom_score_adj"),
                        -1000,
                        1000,
                    )?),
                    None => None,
                },
            });
        }
        let mut vctl = Vec::new();
        for (cname, map) in &v.controller.0 {
            if !controllers.iter().any(|c| &c.name == cname.get_ref()) {
                return Err(src.err(
                    cname.span(),
                    "variant.controller",
                    format!("no controller named '{}'", cname.get_ref()),
                ));
            }
            let key = format!("variant.controller.{}", cname.get_ref());
            let all = settings(&src, map, &key, ("true", "false"))?;
            let mut o = ControllerOverride {
                controller: cname.get_ref().clone(),
                line: src.line(cname.span().start),
                cgroup: None,
                enabled: None,
                settings: Vec::new(),
            };
            for s in all {
                match s.key.as_str() {
                    "name" | "kind" => {
                        return Err(src.err_line(
                            s.line,
                            &format!("{key}.{}", s.key),
                            "a variant cannot change a controller's name or kind",
                        ))
                    }
                    "cgroup" => {
                        o.cgroup = Some(controller_cgroup(&src, &s, &key)?);
                    }
                    "enabled" => o.enabled = Some(enabled_flag(&src, &s, &key)?),
                    _ => o.settings.push(s),
                }
            }
            vctl.push(o);
        }
        variants.push(Variant {
            name: vname,
            description: v.description.clone(),
            line: src.line(v.name.span().start),
            machine: vmachine,
            cgroups: vcg,
            tasks: vtasks,
            subtrees: vsub,
            controllers: vctl,
            kubelet: match &v.kubelet {
                None => None,
                Some(k) if raw.kubernetes.is_none() => {
                    return Err(src.err(
                        k.span(),
                        "variant.kubelet",
                        "the scenario has no [kubernetes] section",
                    ))
                }
                Some(k) => Some(kubelet_table(&src, k, "variant.kubelet")?),
            },
        });
    }
    if variants.is_empty() {
        variants.push(Variant {
            name: "base".into(),
            description: String::new(),
            line: 1,
            machine: Vec::new(),
            cgroups: Vec::new(),
            tasks: Vec::new(),
            subtrees: Vec::new(),
            controllers: Vec::new(),
            kubelet: None,
        });
    }
    let base = match &r.base {
        Some(b) => {
            if !variants.iter().any(|v| &v.name == b.get_ref()) {
                return Err(src.err(
                    b.span(),
                    "run.base",
                    format!("no variant named '{}'", b.get_ref()),
                ));
            }
            b.get_ref().clone()
        }
        None => variants[0].name.clone(),
    };

    let sweep = sweep_axes(&src, &raw.sweep)?;
    let sc = Scenario {
        file: file_name.to_string(),
        name,
        description: raw.description.clone(),
        machine,
        cgroups,
        tasks,
        controllers,
        writes,
        run,
        variants,
        base,
        sweep,
        units,
        kube,
    };
    for v in &sc.variants {
        sc.check_variant(&v.name)?;
    }
    check_sweep(&sc)?;
    Ok(sc)
}

/// The unit files `[systemd] units` names, read relative to the scenario's directory and
/// checked (with the base machine's MemTotal for percentages).
fn read_units(src: &Src, raw: &RawSystemd) -> Result<Vec<UnitFile>, String> {
    let mut out: Vec<UnitFile> = Vec::new();
    for u in &raw.units {
        let (shown, text) = read_beside(src, u, "systemd.units")?;
        let name = std::path::Path::new(&shown)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if out.iter().any(|x| x.name == name) {
            return Err(src.err(
                u.span(),
                "systemd.units",
                format!("unit {name} is listed twice"),
            ));
        }
        out.push(UnitFile {
            name,
            file: shown,
            text,
            line: src.line(u.span().start),
        });
    }
    Ok(out)
}

/// A file a scenario names, relative to the scenario's folder: its name as shown in errors,
/// and its text.
fn read_beside(src: &Src, rel: &Spanned<String>, key: &str) -> Result<(String, String), String> {
    let dir = std::path::Path::new(src.file)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let path = dir.join(rel.get_ref());
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| src.err(rel.span(), key, format!("cannot read '{shown}': {e}")))?;
    Ok((shown, text))
}

/// What the node's managers (systemd, the kubelet) set up for one variant.
struct NodeSetup {
    managed: memcgsim_node::Managed,
    places: Vec<memcgsim_node::kubernetes::Place>,
}

/// The cgroups and controllers of the units and pods on a machine: percentages and the
/// kubelet's node allocatable are of its MemTotal; `over` is a variant's kubelet fields.
fn node_setup(
    file: &str,
    units: &[UnitFile],
    kube: Option<&Kube>,
    over: Option<&serde_json::Value>,
    cfg: &MachineConfig,
) -> Result<NodeSetup, String> {
    use memcgsim_node::{kubernetes, systemd};
    let ram = cfg.managed_pages() * memcgsim_model::PAGE_SIZE;
    let mut managed = if units.is_empty() {
        memcgsim_node::Managed::default()
    } else {
        let parsed = units
            .iter()
            .map(|u| systemd::parse_unit(&u.name, &u.text, &u.file, ram))
            .collect::<Result<Vec<_>, _>>()?;
        systemd::layout(&parsed)?
    };
    let mut places = Vec::new();
    if let Some(k) = kube {
        let mut config = k.config.clone();
        if let Some(o) = over {
            kubernetes::merge(&mut config, o);
        }
        let kc = kubernetes::KubeletConfig::from_value(config)
            .map_err(|e| format!("{file}:{}: kubernetes.kubelet: {e}", k.line))?;
        let node = kubernetes::layout(&k.pods, &kc, ram, cfg.swap_bytes)
            .map_err(|e| format!("{file}:{}: [kubernetes]: {e}", k.line))?;
        for c in node.managed.cgroups {
            let owner = managed.cgroup(&c.path, &c.owner).owner.clone();
            if owner.is_empty() {
                managed.cgroup(&c.path, "").owner = c.owner.clone();
            }
            for (f, v) in &c.files {
                managed.set(&c.path, f, v);
            }
        }
        managed.controllers.extend(node.managed.controllers);
        places = node.places;
    }
    Ok(NodeSetup { managed, places })
}

/// A TOML table of KubeletConfiguration fields, as JSON, checked.
fn kubelet_table(src: &Src, v: &Spanned<Value>, key: &str) -> Result<serde_json::Value, String> {
    if !v.get_ref().is_table() {
        return Err(src.err(
            v.span(),
            key,
            "expected a table of KubeletConfiguration fields",
        ));
    }
    let j = serde_json::to_value(v.get_ref()).map_err(|e| src.err(v.span(), key, e))?;
    if let Some(m) = j.as_object() {
        for k in m.keys() {
            if !memcgsim_node::kubernetes::CONFIG_KEYS.contains(&k.as_str()) {
                return Err(src.err(
                    v.span(),
                    key,
                    format!(
                        "'{k}' is not a KubeletConfiguration field this model reads ({})",
                        memcgsim_node::kubernetes::CONFIG_KEYS.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(j)
}

/// `[kubernetes]`: the manifests and the kubelet's configuration, read relative to the
/// scenario's directory and checked.
fn read_kube(src: &Src, raw: &RawKubernetes) -> Result<Kube, String> {
    use memcgsim_node::kubernetes;
    let read = |f: &Spanned<String>, key: &str| read_beside(src, f, key);
    let mut pods: Vec<kubernetes::Pod> = Vec::new();
    for f in &raw.pods {
        let (shown, text) = read(f, "kubernetes.pods")?;
        for p in kubernetes::parse_pods(&text, &shown)? {
            if pods.iter().any(|x| x.key() == p.key() || x.uid == p.uid) {
                return Err(format!(
                    "{shown}: pod {}: is in another manifest too",
                    p.key()
                ));
            }
            pods.push(p);
        }
    }
    let (mut config, aside) = match &raw.kubelet_config {
        Some(f) => {
            let (shown, text) = read(f, "kubernetes.kubelet_config")?;
            kubernetes::read_config_file(&text, &shown)?
        }
        None => (serde_json::json!({}), Vec::new()),
    };
    if let Some(k) = &raw.kubelet {
        kubernetes::merge(&mut config, &kubelet_table(src, k, "kubernetes.kubelet")?);
    }
    let line = src.line(raw.pods.first().map_or(0, |p| p.span().start));
    kubernetes::KubeletConfig::from_value(config.clone())
        .map_err(|e| src.err_line(line, "kubernetes.kubelet", e))?;
    Ok(Kube {
        pods,
        config,
        aside,
        line,
    })
}

/// The `[[sweep]]` axes, each with one target: `machine = KEY`, `cgroup` with `file`, or
/// `task` with `arg`. Names are unique; values are scalars, at least one each.
fn sweep_axes(src: &Src, raw: &[RawSweep]) -> Result<Vec<SweepAxis>, String> {
    let mut out: Vec<SweepAxis> = Vec::new();
    for r in raw {
        let name = check_name(src, &r.name, "sweep.name")?;
        let line = src.line(r.name.span().start);
        if out.iter().any(|a| a.name == name) {
            return Err(src.err(
                r.name.span(),
                "sweep.name",
                format!("'{name}' is used twice"),
            ));
        }
        let vals = r.values.get_ref();
        if vals.is_empty() || vals.len() > MAX_VALUES {
            return Err(src.err(
                r.values.span(),
                "sweep.values",
                format!("an axis takes 1 to {} values", MAX_VALUES),
            ));
        }
        let mut values = Vec::with_capacity(vals.len());
        for v in vals {
            values.push(
                scalar(v, ("true", "false")).map_err(|e| src.err(v.span(), "sweep.values", e))?,
            );
        }
        let target = match (
            (&r.machine, &r.cgroup, &r.file),
            (&r.task, &r.arg),
            (&r.controller, &r.key),
        ) {
            ((Some(k), None, None), (None, None), (None, None)) => {
                SweepTarget::Machine(k.get_ref().clone())
            }
            ((None, Some(c), Some(f)), (None, None), (None, None)) => SweepTarget::File {
                cgroup: check_cgroup_path(src, c, "sweep.cgroup")?,
                file: f.get_ref().clone(),
            },
            ((None, None, None), (Some(t), Some(i)), (None, None)) => SweepTarget::Arg {
                task: t.get_ref().clone(),
                index: ranged(src, i, "sweep.arg", 0, 1000)?,
            },
            ((None, None, None), (None, None), (Some(c), Some(k))) => {
                if matches!(k.get_ref().as_str(), "kind" | "name") {
                    return Err(src.err(
                        k.span(),
                        "sweep.key",
                        format!("a controller's {} is not swept", k.get_ref()),
                    ));
                }
                SweepTarget::Controller {
                    controller: c.get_ref().clone(),
                    key: k.get_ref().clone(),
                }
            }
            _ => {
                return Err(src.err_line(
                    line,
                    "sweep",
                    format!(
                        "axis '{name}' must set one thing: `machine = KEY`, `cgroup = PATH` with `file = NAME`, `task = NAME` with `arg = INDEX`, or `controller = NAME` with `key = SETTING`"
                    ),
                ))
            }
        };
        out.push(SweepAxis {
            name,
            line,
            values,
            target,
        });
    }
    Ok(out)
}

impl Scenario {
    /// The variant names, in file order.
    pub fn variant_names(&self) -> Vec<String> {
        self.variants.iter().map(|v| v.name.clone()).collect()
    }

    /// The effective set-up of a variant.
    pub fn setup(&self, variant: &str) -> Result<Setup, String> {
        let v = self
            .variants
            .iter()
            .find(|v| v.name == variant)
            .ok_or_else(|| {
                format!(
                    "{}: no variant named '{variant}' (variants: {})",
                    self.file,
                    self.variant_names().join(", ")
                )
            })?;
        let mut machine = self.machine.clone();
        merge_settings(&mut machine, &v.machine);
        // The managers' cgroups first, then the scenario's: a [[cgroup]] at the same path
        // adds its files to (or overrides) the manager's.
        let cfg = machine_config(&self.file, &machine)?;
        let node = node_setup(
            &self.file,
            &self.units,
            self.kube.as_ref(),
            v.kubelet.as_ref(),
            &cfg,
        )?;
        let mut owners: Vec<(String, String)> = Vec::new();
        let mut cgroups: Vec<CgroupSpec> = Vec::new();
        for m in node.managed.cgroups {
            let line = self
                .units
                .iter()
                .find(|u| u.name == m.owner)
                .map(|u| u.line)
                .or(self.kube.as_ref().map(|k| k.line))
                .or(self.units.first().map(|u| u.line))
                .unwrap_or(1);
            if !m.owner.is_empty() {
                owners.push((m.path.clone(), m.owner.clone()));
            }
            cgroups.push(CgroupSpec {
                path: m.path,
                files: m
                    .files
                    .into_iter()
                    .map(|(key, value)| Setting { key, value, line })
                    .collect(),
                subtree: None,
                line,
            });
        }
        for c in self.cgroups.iter().chain(&v.cgroups) {
            match cgroups.iter_mut().find(|x| x.path == c.path) {
                Some(x) => {
                    merge_settings(&mut x.files, &c.files);
                    x.subtree = c.subtree.or(x.subtree);
                }
                None => cgroups.push(c.clone()),
            }
        }
        for (path, st) in &v.subtrees {
            if let Some(c) = cgroups.iter_mut().find(|c| &c.path == path) {
                c.subtree = Some(*st);
            }
        }
        let mut tasks = self.tasks.clone();
        for t in tasks.iter_mut() {
            let Some(key) = &t.container else { continue };
            let Some(place) = node.places.iter().find(|p| &p.key == key) else {
                continue;
            };
            t.cgroup = place.path.clone();
            if !t.adj_given {
                t.oom_score_adj = place.oom_score_adj;
            }
        }
        for o in &v.tasks {
            let Some(t) = tasks.iter_mut().find(|t| t.name == o.task) else {
                continue;
            };
            if let Some(x) = &o.cgroup {
                t.cgroup = x.clone();
                t.container = None;
            }
            if let Some(x) = &o.workload {
                t.workload = x.clone();
                t.workload_line = o.line;
            }
            if let Some(x) = &o.args {
                t.args = x.clone();
                t.args_line = o.line;
            }
            if let Some(x) = o.start_ns {
                t.start_ns = x;
            }
            if let Some(x) = o.repeat {
                t.repeat = x;
            }
            if let Some(x) = o.count {
                t.count = x;
            }
            if let Some(x) = o.oom_score_adj {
                t.oom_score_adj = x;
                t.adj_given = true;
            }
            t.line = o.line;
        }
        let mut controllers = self.controllers.clone();
        // The managers' controllers as this variant's configuration makes them.
        for m in &node.managed.controllers {
            if let Some(c) = controllers.iter_mut().find(|c| c.name == m.name) {
                let line = c.line;
                c.settings = m
                    .settings
                    .iter()
                    .map(|(k, v)| Setting {
                        key: k.clone(),
                        value: v.clone(),
                        line,
                    })
                    .collect();
            }
        }
        for o in &v.controllers {
            let Some(c) = controllers.iter_mut().find(|c| c.name == o.controller) else {
                continue;
            };
            if let Some(x) = &o.cgroup {
                c.cgroup = x.clone();
            }
            if let Some(x) = o.enabled {
                c.enabled = x;
            }
            merge_settings(&mut c.settings, &o.settings);
        }
        let generated_cgroups = cgroups
            .iter()
            .filter_map(|c| c.subtree)
            .map(|t| t.groups as u64)
            .sum();
        Ok(Setup {
            variant: v.name.clone(),
            machine,
            cgroups,
            tasks,
            controllers,
            writes: self.writes.clone(),
            generated_cgroups,
            owners,
        })
    }

    /// Check what only the effective set-up of a variant shows: the machine, cgroup file
    /// sizes, task cgroups and workload arguments.
    fn check_variant(&self, variant: &str) -> Result<(), String> {
        let f = &self.file;
        let setup = self.setup(variant)?;
        let cfg = machine_config(f, &setup.machine)?;
        for c in &setup.controllers {
            if let Err((line, key, msg)) = crate::controller::config(&c.kind, &c.settings) {
                return Err(format!(
                    "{f}:{line}: controller.{key}: {msg} (controller {}, variant {variant})",
                    c.name
                ));
            }
            if c.enabled && cfg.cgroup == CgroupVersion::V1 {
                return Err(format!(
                    "{f}:{}: controller: the {} controller reads memory.pressure, which needs cgroup v2 (variant {variant})",
                    c.line, c.kind
                ));
            }
            if c.cgroup != "/" && !setup.cgroups.iter().any(|x| x.path == c.cgroup) {
                return Err(format!(
                    "{f}:{}: controller.cgroup: no [[cgroup]] has path '{}' (controller {}, variant {variant})",
                    c.line, c.cgroup, c.name
                ));
            }
        }
        for c in &setup.cgroups {
            for s in &c.files {
                if let Some(tok) = size_file_token(&s.key, cfg.cgroup) {
                    if page_counter_memparse(&s.value, tok).is_err() {
                        return Err(format!(
                            "{f}:{}: cgroup.files.{}: bad size '{}' for {} (a number with an optional K, M, G or T suffix, or '{tok}')",
                            s.line, s.key, s.value, c.path
                        ));
                    }
                }
            }
        }
        for c in &setup.cgroups {
            let Some(st) = c.subtree else { continue };
            let longest = st.longest_path(&c.path);
            if longest > MAX_PATH {
                return Err(format!(
                    "{f}:{}: cgroup.subtree: {} groups with fanout {} below {} make paths {} bytes long, longer than PATH_MAX allows ({MAX_PATH}); use a larger fanout (variant {variant})",
                    st.line,
                    st.groups,
                    st.fanout,
                    c.path,
                    longest
                ));
            }
            let top = st.groups.min(st.fanout) as u64;
            let prefix = if c.path == "/" { "" } else { c.path.as_str() };
            for o in &setup.cgroups {
                let Some(rest) = o
                    .path
                    .strip_prefix(prefix)
                    .and_then(|r| r.strip_prefix('/'))
                else {
                    continue;
                };
                let first = rest.split('/').next().unwrap_or("");
                let num = first
                    .strip_prefix('g')
                    .filter(|n| !n.starts_with('0'))
                    .and_then(|n| n.parse::<u64>().ok());
                if num.is_some_and(|k| k >= 1 && k <= top) {
                    return Err(format!(
                        "{f}:{}: cgroup.path: '{}' is inside the subtree generated below {} (line {}), whose cgroups are named g1, g2, ... (variant {variant})",
                        o.line, o.path, c.path, st.line
                    ));
                }
            }
        }
        let mut instances = 0u64;
        for t in &setup.tasks {
            if t.cgroup != "/" && !setup.cgroups.iter().any(|c| c.path == t.cgroup) {
                return Err(format!(
                    "{f}:{}: task.cgroup: task '{}' names cgroup '{}', which no [[cgroup]] creates",
                    t.line, t.name, t.cgroup
                ));
            }
            let gets_children = setup.cgroups.iter().any(|c| {
                c.path == t.cgroup
                    && (c.subtree.is_some_and(|s| s.groups > 0)
                        || c.files.iter().any(|f| {
                            f.key == "cgroup.subtree_control" && f.value.contains("+memory")
                        }))
            });
            if gets_children && cfg.cgroup == CgroupVersion::V2 && t.cgroup != "/" {
                return Err(format!(
                    "{f}:{}: task.cgroup: task '{}' runs in '{}', which enables the memory controller for its children; on cgroup v2 such a cgroup cannot hold tasks (variant {variant})",
                    t.line, t.name, t.cgroup
                ));
            }
            // Every copy's arguments must build (their `{copy}` differs).
            let check = |copy: u32| {
                memcgsim_workloads::build(&t.workload, &expand_args(&t.args, copy, t.count, 1))
            };
            check(1)
                .and_then(|_| (2..=t.count).try_for_each(|c| check(c).map(|_| ())))
                .map_err(|e| {
                    let (line, key) = if e.starts_with("unknown workload") {
                        (t.workload_line, "task.workload")
                    } else {
                        (t.args_line, "task.args")
                    };
                    format!(
                        "{f}:{line}: {key}: task '{}' (variant {variant}): {e}",
                        t.name
                    )
                })?;
            instances += t.repeat as u64 * t.count as u64;
        }
        if instances > MAX_INSTANCES {
            return Err(format!(
                "{f}: variant {variant}: {instances} task runs (count x repeat); at most {MAX_INSTANCES}"
            ));
        }
        Ok(())
    }
}

// ------------------------------------------------------------------ sweep grid

/// The most values one axis takes.
pub const MAX_VALUES: usize = 10_000;
/// The most runs one sweep makes (variants × grid points × seeds).
pub const MAX_RUNS: usize = 1_000_000;

/// One run of a sweep: a variant, a value per axis (in axis order), a seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub variant: String,
    pub values: Vec<String>,
    pub seed: u64,
}

impl Point {
    /// How the point names itself in results and errors: `VARIANT[AXIS=VALUE,...]`.
    pub fn label(&self, sc: &Scenario) -> String {
        let parts: Vec<String> = sc
            .sweep
            .iter()
            .zip(&self.values)
            .map(|(a, v)| format!("{}={v}", a.name))
            .collect();
        format!("{}[{}]", self.variant, parts.join(","))
    }
}

/// The number of runs of a sweep, or None past [`MAX_RUNS`].
fn run_count(sc: &Scenario) -> Option<usize> {
    let mut n = sc.variants.len().checked_mul(sc.run.seeds.len())?;
    for a in &sc.sweep {
        n = n.checked_mul(a.values.len())?;
    }
    (n <= MAX_RUNS).then_some(n)
}

/// Every run of the sweep, in table order: variants in file order, then the grid with the
/// first axis outermost, then the seeds. Empty when the scenario has no `[[sweep]]`.
pub fn points(sc: &Scenario) -> Vec<Point> {
    if sc.sweep.is_empty() {
        return Vec::new();
    }
    let n = run_count(sc).expect("checked when the scenario was loaded");
    let mut out = Vec::with_capacity(n);
    let sizes: Vec<usize> = sc.sweep.iter().map(|a| a.values.len()).collect();
    let grid: usize = sizes.iter().product();
    for v in &sc.variants {
        for mut k in 0..grid {
            // Mixed-radix digits of k, the last axis fastest.
            let mut idx = vec![0; sizes.len()];
            for (i, &size) in sizes.iter().enumerate().rev() {
                idx[i] = k % size;
                k /= size;
            }
            let values: Vec<String> = sc
                .sweep
                .iter()
                .zip(&idx)
                .map(|(a, &i)| a.values[i].clone())
                .collect();
            for &seed in &sc.run.seeds {
                out.push(Point {
                    variant: v.name.clone(),
                    values: values.clone(),
                    seed,
                });
            }
        }
    }
    out
}

/// Set one axis's value in a set-up.
fn apply(sc: &Scenario, setup: &mut Setup, axis: &SweepAxis, value: &str) -> Result<(), String> {
    let f = &sc.file;
    let set = |key: &str| Setting {
        key: key.to_string(),
        value: value.to_string(),
        line: axis.line,
    };
    match &axis.target {
        SweepTarget::Machine(key) => match setup.machine.iter_mut().find(|s| &s.key == key) {
            Some(s) => *s = set(key),
            None => setup.machine.push(set(key)),
        },
        SweepTarget::File { cgroup, file } => {
            let c = setup
                .cgroups
                .iter_mut()
                .find(|c| &c.path == cgroup)
                .ok_or_else(|| {
                    format!(
                        "{f}:{}: sweep.cgroup: no [[cgroup]] {cgroup} (variant {}, axis {})",
                        axis.line, setup.variant, axis.name
                    )
                })?;
            match c.files.iter_mut().find(|s| &s.key == file) {
                Some(s) => *s = set(file),
                None => c.files.push(set(file)),
            }
        }
        SweepTarget::Arg { task, index } => {
            let t = setup
                .tasks
                .iter_mut()
                .find(|t| &t.name == task)
                .ok_or_else(|| {
                    format!(
                        "{f}:{}: sweep.task: no [[task]] named '{task}' (variant {}, axis {})",
                        axis.line, setup.variant, axis.name
                    )
                })?;
            let n = t.args.len();
            let a = t.args.get_mut(*index).ok_or_else(|| {
                format!(
                    "{f}:{}: sweep.arg: task '{task}' has {n} arguments, no argument {index} (variant {}, axis {})",
                    axis.line, setup.variant, axis.name
                )
            })?;
            *a = value.to_string();
        }
        SweepTarget::Controller { controller, key } => {
            let c = setup
                .controllers
                .iter_mut()
                .find(|c| &c.name == controller)
                .ok_or_else(|| {
                    format!(
                        "{f}:{}: sweep.controller: no [[controller]] named '{controller}' (variant {}, axis {})",
                        axis.line, setup.variant, axis.name
                    )
                })?;
            if key == "enabled" {
                c.enabled = matches!(value, "true" | "on");
            } else if key == "cgroup" {
                c.cgroup = value.to_string();
            } else {
                match c.settings.iter_mut().find(|s| &s.key == key) {
                    Some(s) => *s = set(key),
                    None => c.settings.push(set(key)),
                }
            }
        }
    }
    Ok(())
}

/// The set-up of a point: its variant's, with every axis's value set, named by its label.
pub fn point_setup(sc: &Scenario, p: &Point) -> Result<Setup, String> {
    let mut setup = sc.setup(&p.variant)?;
    if p.values.len() != sc.sweep.len() {
        return Err(format!(
            "{}: a sweep point has {} values for {} axes",
            sc.file,
            p.values.len(),
            sc.sweep.len()
        ));
    }
    for (a, v) in sc.sweep.iter().zip(&p.values) {
        apply(sc, &mut setup, a, v)?;
    }
    setup.variant = p.label(sc);
    Ok(setup)
}

/// Checks made when a scenario is loaded: the sweep's size, and for every variant that each
/// axis finds its cgroup, task and argument, and that each machine value is a valid one.
fn check_sweep(sc: &Scenario) -> Result<(), String> {
    if sc.sweep.is_empty() {
        return Ok(());
    }
    if run_count(sc).is_none() {
        return Err(format!(
            "{}:{}: sweep: more than {MAX_RUNS} runs (variants x values of every axis x seeds)",
            sc.file, sc.sweep[0].line
        ));
    }
    for v in &sc.variants {
        let base = sc.setup(&v.name)?;
        for a in &sc.sweep {
            let values: &[String] = match a.target {
                SweepTarget::Machine(_) | SweepTarget::Controller { .. } => &a.values,
                _ => &a.values[..1],
            };
            for value in values {
                let mut setup = base.clone();
                apply(sc, &mut setup, a, value)?;
                match &a.target {
                    SweepTarget::Machine(_) => {
                        machine_config(&sc.file, &setup.machine).map_err(|e| {
                            format!("{e} (sweep axis {}, variant {})", a.name, v.name)
                        })?;
                    }
                    SweepTarget::Controller { controller, key } => {
                        let c = setup
                            .controllers
                            .iter()
                            .find(|c| &c.name == controller)
                            .expect("found by apply()");
                        if key == "enabled" && !matches!(value.as_str(), "true" | "false") {
                            return Err(format!(
                                "{}:{}: sweep.values: enabled takes true or false, not '{value}' (axis {})",
                                sc.file, a.line, a.name
                            ));
                        }
                        if let Err((_, k, m)) = crate::controller::config(&c.kind, &c.settings) {
                            return Err(format!(
                                "{}:{}: sweep.values: controller.{k}: {m} (controller {controller}, axis {}, variant {})",
                                sc.file, a.line, a.name, v.name
                            ));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_machine_key_has_an_example_the_machine_takes() {
        for key in MachineConfig::KEYS {
            if MachineConfig::key_is_switch(key) {
                continue;
            }
            let example = machine_example(key);
            let mut cfg = MachineConfig::default();
            assert!(
                cfg.set(key, example).is_ok(),
                "{key}: the example \"{example}\" is refused"
            );
        }
    }

    #[test]
    fn a_script_given_as_a_scenario_is_named_as_such() {
        let script = "# two groups\n\nmachine memory=512M swap=1G cpus=2\nmkdir /A\n";
        let e = parse(script, "s.mcg").unwrap_err();
        assert!(e.contains("s.mcg:3"), "{e}");
        assert!(e.contains("run it with `memcgsim script s.mcg`"), "{e}");
        let e = parse("name = \"x\"\n[machine\n", "x.toml").unwrap_err();
        assert!(!e.contains("script"), "{e}");
    }

    #[test]
    fn timed_writes_are_checked_and_kept_in_time_order() {
        let base = "name = \"w\"\n[[cgroup]]\npath = \"/a\"\n[run]\nduration = \"10s\"\n";
        let with = |w: &str| format!("{base}{w}");
        let sc = parse(
            &with(
                "[[write]]\nat = \"5s\"\ncgroup = \"/a\"\nfile = \"memory.high\"\nvalue = \"10M\"\n\
                 [[write]]\nat = 1\ncgroup = \"/\"\nfile = \"memory.reclaim\"\nvalue = 4096\n",
            ),
            "w.toml",
        )
        .unwrap();
        let got: Vec<_> = sc
            .writes
            .iter()
            .map(|w| {
                (
                    w.at_ns,
                    w.cgroup.as_str(),
                    w.file.as_str(),
                    w.value.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (1_000_000_000, "/", "memory.reclaim", "4096"),
                (5_000_000_000, "/a", "memory.high", "10M")
            ]
        );
        assert_eq!(sc.setup("base").unwrap().writes.len(), 2);
        for (w, key) in [
            (
                "at = \"5x\"\ncgroup = \"/a\"\nfile = \"f\"\nvalue = 1",
                "write.at",
            ),
            (
                "at = 1\ncgroup = \"/b\"\nfile = \"f\"\nvalue = 1",
                "write.cgroup",
            ),
            (
                "at = 1\ncgroup = \"/a\"\nfile = \"x/y\"\nvalue = 1",
                "write.file",
            ),
            ("at = 1\ncgroup = \"/a\"\nfile = \"f\"", "[[write]]"),
        ] {
            let e = parse(&with(&format!("[[write]]\n{w}\n")), "w.toml").unwrap_err();
            assert!(e.contains(key), "{w}: {e}");
        }
    }

    #[test]
    fn key_at_finds_nested_keys() {
        let t = "name = \"x\"\n[[task]]\nstart = \"5x\"\nfiles = { \"memory.max\" = 5, b = 6 }\n";
        // The span of the first `len` bytes of `s`.
        let at_n = |s: &str, len: usize| {
            let i = t.find(s).unwrap();
            key_at(t, i..i + len)
        };
        let at = |s: &str| at_n(s, s.len());
        assert_eq!(at("\"5x\""), "task.start");
        assert_eq!(at_n("5,", 1), "task.files.memory.max");
        assert_eq!(at_n("6 }", 1), "task.files.b");
        assert_eq!(at("[[task]]"), "[[task]]");
        assert_eq!(at("files"), "task.files");
        assert_eq!(key_at(t, 0..0), "");
    }

    #[test]
    fn subtree_numbering_is_breadth_first() {
        let st = Subtree {
            groups: 5,
            fanout: 2,
            line: 1,
        };
        let paths: Vec<String> = (1..=5).map(|i| st.path_of("/idle", i)).collect();
        assert_eq!(
            paths,
            [
                "/idle/g1",
                "/idle/g2",
                "/idle/g1/g3",
                "/idle/g1/g4",
                "/idle/g2/g5"
            ]
        );
        assert_eq!(st.depth(), 2);
        assert_eq!(st.path_of("/", 3), "/g1/g3");
        let chain = Subtree {
            groups: 4,
            fanout: 1,
            line: 1,
        };
        assert_eq!(chain.path_of("/c", 4), "/c/g1/g2/g3/g4");
        assert_eq!(chain.depth(), 4);
        let wide = Subtree {
            groups: 1000,
            fanout: 1000,
            line: 1,
        };
        assert_eq!(wide.depth(), 1);
        assert_eq!(wide.path_of("/w", 1000), "/w/g1000");
        for (st, base) in [(st, "/idle"), (chain, "/c"), (wide, "/w"), (wide, "/")] {
            let longest = (1..=st.groups)
                .map(|i| st.path_of(base, i).len())
                .max()
                .unwrap();
            assert_eq!(st.longest_path(base), longest);
        }
    }
}

/// A task's arguments for one copy and one run: `{copy}` becomes the copy number (1 to
/// count), `{count}` the number of copies, `{seed}` the run's seed.
pub(crate) fn expand_args(args: &[String], copy: u32, count: u32, seed: u64) -> Vec<String> {
    args.iter()
        .map(|a| {
            if a.contains('{') {
                a.replace("{copy}", &copy.to_string())
                    .replace("{count}", &count.to_string())
                    .replace("{seed}", &seed.to_string())
            } else {
                a.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod expand_tests {
    use super::expand_args;

    #[test]
    fn copy_count_and_seed_are_substituted() {
        let args: Vec<String> = ["--shard", "{copy}/{count}", "--seed", "{seed}", "1M"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            expand_args(&args, 3, 8, 42),
            ["--shard", "3/8", "--seed", "42", "1M"]
        );
    }
}
