//! Keys and values: a scenario's `key = value` settings with their source lines, the path of
//! a cgroup's file, and the readers of the kernel's keyed files (`key value` lines) and
//! pressure lines (`some avg10=0.00 ... total=N`).

use std::collections::BTreeMap;

use serde::Serialize;

/// One `key = value` setting (a machine key or a cgroup file), with its source line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setting {
    pub key: String,
    pub value: String,
    #[serde(skip)]
    pub line: usize,
}

/// The path of `file` in `cgroup` (`/memory.stat` at the root).
pub(crate) fn file_path(cgroup: &str, file: &str) -> String {
    if cgroup == "/" {
        format!("/{file}")
    } else {
        format!("{cgroup}/{file}")
    }
}

/// `key value` lines (a trailing colon on the key is ignored) as a map.
pub(crate) fn parse_keyed(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(k), Some(v)) = (w.next(), w.next()) else {
            continue;
        };
        if let Ok(v) = v.parse::<u64>() {
            m.insert(k.trim_end_matches(':').to_string(), v);
        }
    }
    m
}

/// The keys of a keyed file, in the file's order.
pub(crate) fn keyed_order(text: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(k), Some(x)) = (w.next(), w.next()) else {
            continue;
        };
        let k = k.trim_end_matches(':');
        if x.parse::<u64>().is_ok() && !v.iter().any(|y| y == k) {
            v.push(k.to_string());
        }
    }
    v
}

/// A `FIELD=VALUE` of the pressure line starting with `line` (`some`, `full`): averages in
/// hundredths of a percent, totals in microseconds.
pub(crate) fn pressure_field(text: &str, line: &str, field: &str) -> Option<u64> {
    let l = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(line))?;
    let v = l
        .split_whitespace()
        .find_map(|w| w.strip_prefix(field)?.strip_prefix('='))?;
    match v.split_once('.') {
        Some((i, f)) => Some(i.parse::<u64>().ok()? * 100 + f.parse::<u64>().ok()?),
        None => v.parse().ok(),
    }
}
