//! systemd units and slices as cgroups (systemd.resource-control(5), systemd.slice(5),
//! systemd.service(5)): a unit file's resource-control properties mapped to the cgroup files
//! systemd writes, and the unit's place in the slice tree.
//!
//! - A slice's name is its path: `a-b.slice` is the child of `a.slice`, `-.slice` the root. A
//!   service or scope goes in its `Slice=`, `system.slice` when it names none.
//! - `MemoryMin=`, `MemoryLow=`, `MemoryHigh=`, `MemoryMax=`, `MemorySwapMax=` and
//!   `MemoryZSwapMax=` take bytes with an optional K, M, G, T, P or E suffix (base 1024,
//!   decimals allowed), a percentage of the machine's physical memory, or `infinity`;
//!   an empty assignment resets the property to its default. They become `memory.min`,
//!   `memory.low`, `memory.high`, `memory.max`, `memory.swap.max` and `memory.zswap.max`.
//! - `OOMPolicy=kill` sets `memory.oom.group` to 1 (`stop` and `continue` leave it 0).
//! - `ManagedOOMMemoryPressure=kill` puts systemd-oomd's pressure killer on the unit's
//!   cgroup, at `ManagedOOMMemoryPressureLimit=` (oomd.conf's default, 60 %, without it).
//!
//! Simplified: drop-ins, templates, `DefaultMemoryMin=`/`DefaultMemoryLow=` and the unit's
//! other sections are not read; a percentage is of the machine's RAM as the model gives
//! MemTotal, rounded down to a page as physical_memory_scale() rounds it. A scenario's
//! `[systemd] units` list is turned into cgroups by [`layout`].

use std::collections::BTreeMap;

use crate::{Managed, ManagedController};

/// A unit's memory settings, as systemd writes them to its cgroup.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unit {
    /// The unit's name, `db.service`, `batch.slice`.
    pub name: String,
    /// Its cgroup path, `/system.slice/db.service`.
    pub path: String,
    /// The cgroup files and their values, in systemd's order.
    pub files: Vec<(String, String)>,
    /// `ManagedOOMMemoryPressure=kill`: the pressure limit, as oomd's `limit` ("60%").
    pub oomd_limit: Option<String>,
}

/// oomd.conf's DefaultMemoryPressureLimit=.
pub const OOMD_DEFAULT_LIMIT: &str = "60%";

/// The properties mapped to cgroup files, in the order the files are written.
const MEMORY_PROPERTIES: [(&str, &str); 6] = [
    ("MemoryMin", "memory.min"),
    ("MemoryLow", "memory.low"),
    ("MemoryHigh", "memory.high"),
    ("MemoryMax", "memory.max"),
    ("MemorySwapMax", "memory.swap.max"),
    ("MemoryZSwapMax", "memory.zswap.max"),
];

/// The cgroup path of a unit: a slice's from its name, a service's or scope's from the slice
/// it names (`system.slice` by default). Err: a name systemd would refuse.
pub fn unit_path(name: &str, slice: Option<&str>) -> Result<String, String> {
    let slice_path = |s: &str| -> Result<String, String> {
        let stem = s
            .strip_suffix(".slice")
            .ok_or_else(|| format!("'{s}' is not a slice (a name ending in .slice)"))?;
        if stem == "-" {
            return Ok(String::new());
        }
        if stem.is_empty()
            || stem.starts_with('-')
            || stem.ends_with('-')
            || stem.contains("--")
            || stem.contains('/')
        {
            return Err(format!("'{s}' is not a valid slice name"));
        }
        let mut path = String::new();
        let parts: Vec<&str> = stem.split('-').collect();
        for i in 1..=parts.len() {
            path.push('/');
            path.push_str(&parts[..i].join("-"));
            path.push_str(".slice");
        }
        Ok(path)
    };
    if name.ends_with(".slice") {
        if slice.is_some() {
            return Err(format!("{name}: a slice takes no Slice="));
        }
        let p = slice_path(name)?;
        return Ok(if p.is_empty() { "/".into() } else { p });
    }
    let kind_ok = [".service", ".scope", ".socket", ".mount", ".swap"]
        .iter()
        .any(|k| name.ends_with(k) && name.len() > k.len());
    if !kind_ok || name.contains('/') {
        return Err(format!(
            "'{name}' is not a unit name systemd puts in a cgroup"
        ));
    }
    let parent = slice_path(slice.unwrap_or("system.slice"))?;
    Ok(format!("{parent}/{name}"))
}

/// parse_size() with base 1024, or a percentage of `ram` bytes, or `infinity`: the value
/// systemd writes to the cgroup file ("max" for infinity).
pub fn memory_value(v: &str, ram: u64) -> Result<String, String> {
    let v = v.trim();
    if v == "infinity" {
        return Ok("max".into());
    }
    if let Some(p) = v.strip_suffix('%') {
        let pct: f64 = p
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && (0.0..=100.0).contains(x))
            .ok_or_else(|| format!("'{v}' is not a percentage from 0% to 100%"))?;
        // parse_permyriad(): hundredths of a percent; physical_memory_scale(): of the
        // pages, rounded down to a whole page.
        let permyriad = (pct * 100.0).round() as u128;
        let page = u128::from(memcgsim_model::PAGE_SIZE);
        let pages = u128::from(ram) / page * permyriad / 10_000;
        return Ok((pages * page).to_string());
    }
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, suffix) = v.split_at(split);
    let mult: u64 = match suffix {
        "" | "B" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        "P" => 1 << 50,
        "E" => 1 << 60,
        _ => {
            return Err(format!(
                "'{v}' is not a size (bytes with K, M, G, T, P or E)"
            ))
        }
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() {
        return Err(format!("'{v}' is not a size"));
    }
    let int: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| format!("'{v}' is not a size"))?
    };
    let mut bytes = int * u128::from(mult);
    if !frac.is_empty() {
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("'{v}' is not a size"));
        }
        let den = 10u128.pow(frac.len().min(18) as u32);
        let f: u128 = frac[..frac.len().min(18)].parse().unwrap_or(0);
        bytes += f * u128::from(mult) / den;
    }
    u64::try_from(bytes)
        .map(|b| b.to_string())
        .map_err(|_| format!("'{v}' is too large"))
}

/// Read a unit file (`name` as systemd would know it, `text` its contents; `file` names it
/// in errors) into its memory settings, for a machine of `ram` bytes.
pub fn parse_unit(name: &str, text: &str, file: &str, ram: u64) -> Result<Unit, String> {
    // The assignments of the sections that carry resource control, last one wins; an
    // empty value resets.
    let mut props: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut section = String::new();
    let mut pending = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if pending.is_empty() {
            start = i + 1;
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
        }
        if let Some(cont) = line.strip_suffix('\\') {
            pending.push_str(cont);
            pending.push(' ');
            continue;
        }
        let full = std::mem::take(&mut pending) + line;
        if let Some(s) = full.strip_prefix('[') {
            section = s
                .strip_suffix(']')
                .ok_or_else(|| format!("{file}:{start}: '{full}' is not a section header"))?
                .to_string();
            continue;
        }
        let (k, v) = full
            .split_once('=')
            .ok_or_else(|| format!("{file}:{start}: '{full}' is not KEY=VALUE"))?;
        if matches!(
            section.as_str(),
            "Service" | "Slice" | "Scope" | "Socket" | "Mount"
        ) {
            props.insert(k.trim().to_string(), (start, v.trim().to_string()));
        }
    }
    let slice = props
        .get("Slice")
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty());
    let path = unit_path(name, slice).map_err(|e| format!("{file}: {e}"))?;
    let mut files = Vec::new();
    for (prop, cgfile) in MEMORY_PROPERTIES {
        if let Some((line, v)) = props.get(prop).filter(|(_, v)| !v.is_empty()) {
            let value = memory_value(v, ram).map_err(|e| format!("{file}:{line}: {prop}=: {e}"))?;
            files.push((cgfile.to_string(), value));
        }
    }
    if let Some((line, v)) = props.get("OOMPolicy").filter(|(_, v)| !v.is_empty()) {
        match v.as_str() {
            "kill" => files.push(("memory.oom.group".into(), "1".into())),
            "stop" | "continue" => {}
            _ => {
                return Err(format!(
                    "{file}:{line}: OOMPolicy=: '{v}' is not continue, stop or kill"
                ))
            }
        }
    }
    let oomd_limit = match props.get("ManagedOOMMemoryPressure") {
        Some((_, v)) if v == "kill" => Some(match props.get("ManagedOOMMemoryPressureLimit") {
            Some((line, l)) if !l.is_empty() => {
                // parse_permyriad(): at most two decimals.
                let ok = l.strip_suffix('%').is_some_and(|p| {
                    let frac = p.split_once('.').map_or("", |x| x.1);
                    frac.len() <= 2 && p.parse::<f64>().is_ok_and(|p| (0.0..=100.0).contains(&p))
                });
                if !ok {
                    return Err(format!(
                        "{file}:{line}: ManagedOOMMemoryPressureLimit=: '{l}' is not a percentage"
                    ));
                }
                l.clone()
            }
            _ => OOMD_DEFAULT_LIMIT.to_string(),
        }),
        Some((_, v)) if v.is_empty() || v == "auto" => None,
        Some((line, v)) => {
            return Err(format!(
                "{file}:{line}: ManagedOOMMemoryPressure=: '{v}' is not auto or kill"
            ))
        }
        None => None,
    };
    Ok(Unit {
        name: name.to_string(),
        path,
        files,
        oomd_limit,
    })
}

/// The cgroups systemd sets up for `units` (parsed, in the order given): the slices above
/// each unit with the memory controller enabled for their children, as systemd enables it
/// along the path of every unit with memory accounting (the default since systemd 238), the
/// units' own files, and an oomd controller per `ManagedOOMMemoryPressure=kill` unit.
pub fn layout(units: &[Unit]) -> Result<Managed, String> {
    let mut m = Managed::default();
    m.set("/", "cgroup.subtree_control", "+memory");
    for (i, u) in units.iter().enumerate() {
        if units[..i].iter().any(|x| x.name == u.name) {
            return Err(format!("unit {} is listed twice", u.name));
        }
        for a in Managed::ancestors(&u.path) {
            let slice = a.rsplit('/').next().unwrap_or_default().to_string();
            m.cgroup(&a, &slice);
            m.set(&a, "cgroup.subtree_control", "+memory");
        }
        if u.path != "/" {
            m.cgroup(&u.path, &u.name).owner = u.name.clone();
        }
        if u.name.ends_with(".slice") {
            m.set(&u.path, "cgroup.subtree_control", "+memory");
        }
        for (k, v) in &u.files {
            m.set(&u.path, k, v);
        }
        if let Some(limit) = &u.oomd_limit {
            m.controllers.push(ManagedController {
                name: format!("oomd-{}", u.name),
                kind: "oomd".into(),
                cgroup: u.path.clone(),
                settings: vec![("limit".into(), limit.clone())],
            });
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_nest_by_their_dashes_and_services_go_in_system_slice() {
        assert_eq!(unit_path("-.slice", None).unwrap(), "/");
        assert_eq!(unit_path("user.slice", None).unwrap(), "/user.slice");
        assert_eq!(
            unit_path("user-1000.slice", None).unwrap(),
            "/user.slice/user-1000.slice"
        );
        assert_eq!(
            unit_path("db.service", None).unwrap(),
            "/system.slice/db.service"
        );
        assert_eq!(
            unit_path("job.service", Some("batch-low.slice")).unwrap(),
            "/batch.slice/batch-low.slice/job.service"
        );
        assert_eq!(
            unit_path("x.service", Some("-.slice")).unwrap(),
            "/x.service"
        );
        for bad in [
            "a--b.slice",
            "-a.slice",
            ".service",
            "a/b.service",
            "a.timer",
        ] {
            assert!(unit_path(bad, None).is_err(), "{bad}");
        }
        assert!(unit_path("a.slice", Some("b.slice")).is_err());
    }

    #[test]
    fn memory_values_are_parsed_as_systemd_parses_them() {
        let ram = 8 << 30;
        for (v, want) in [
            ("infinity", "max"),
            ("512M", "536870912"),
            ("1.5G", "1610612736"),
            ("4096", "4096"),
            ("25%", "2147483648"),
            ("12.5%", "1073741824"),
            // A whole number of pages, rounded down.
            ("33.33%", "2863022080"),
        ] {
            assert_eq!(memory_value(v, ram).unwrap(), want, "{v}");
        }
        for bad in ["1X", "M", "-1", "101%", "1.5.5G", ""] {
            assert!(memory_value(bad, ram).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_unit_file_becomes_its_cgroup_files() {
        let text = "\
[Unit]
Description=db
MemoryMax=1G

[Service]
ExecStart=/usr/bin/db
Slice=data.slice
MemoryLow=256M
MemoryHigh=900M
# the last assignment wins; an empty one resets
MemorySwapMax=1G
MemorySwapMax=
MemoryMax=\\
  50%
OOMPolicy=kill
ManagedOOMMemoryPressure=kill
ManagedOOMMemoryPressureLimit=40%
";
        let u = parse_unit("db.service", text, "db.service", 4 << 30).unwrap();
        assert_eq!(u.path, "/data.slice/db.service");
        let files: Vec<(&str, &str)> = u
            .files
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            files,
            [
                ("memory.low", "268435456"),
                ("memory.high", "943718400"),
                ("memory.max", "2147483648"),
                ("memory.oom.group", "1"),
            ]
        );
        assert_eq!(u.oomd_limit.as_deref(), Some("40%"));
        let plain = parse_unit(
            "web.service",
            "[Service]\nManagedOOMMemoryPressure=kill\n",
            "w",
            1 << 30,
        )
        .unwrap();
        assert_eq!(plain.path, "/system.slice/web.service");
        assert_eq!(plain.oomd_limit.as_deref(), Some(OOMD_DEFAULT_LIMIT));
        for (bad, want) in [
            ("[Service]\nMemoryMax=lots\n", "u:2: MemoryMax=:"),
            ("[Service]\nOOMPolicy=panic\n", "u:2: OOMPolicy=:"),
            ("[Service\n", "u:1: "),
            ("[Service]\nnonsense\n", "u:2: 'nonsense' is not KEY=VALUE"),
        ] {
            let e = parse_unit("x.service", bad, "u", 1 << 30).unwrap_err();
            assert!(e.starts_with(want), "{bad}: {e}");
        }
    }

    #[test]
    fn a_layout_creates_the_slices_above_each_unit_parents_first() {
        let ram = 4 << 30;
        let units = [
            parse_unit(
                "job.service",
                "[Service]\nSlice=batch-low.slice\nMemoryHigh=1G\n",
                "a",
                ram,
            )
            .unwrap(),
            parse_unit(
                "batch.slice",
                "[Slice]\nMemoryMax=2G\nManagedOOMMemoryPressure=kill\n",
                "b",
                ram,
            )
            .unwrap(),
            parse_unit("web.service", "[Service]\nOOMPolicy=kill\n", "c", ram).unwrap(),
        ];
        let m = layout(&units).unwrap();
        let got: Vec<(&str, &str, Vec<String>)> = m
            .cgroups
            .iter()
            .map(|c| {
                (
                    c.path.as_str(),
                    c.owner.as_str(),
                    c.files.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                )
            })
            .collect();
        let sc = "cgroup.subtree_control=+memory".to_string();
        assert_eq!(
            got,
            [
                ("/", "", vec![sc.clone()]),
                (
                    "/batch.slice",
                    "batch.slice",
                    vec![sc.clone(), "memory.max=2147483648".into()]
                ),
                (
                    "/batch.slice/batch-low.slice",
                    "batch-low.slice",
                    vec![sc.clone()]
                ),
                (
                    "/batch.slice/batch-low.slice/job.service",
                    "job.service",
                    vec!["memory.high=1073741824".into()]
                ),
                ("/system.slice", "system.slice", vec![sc]),
                (
                    "/system.slice/web.service",
                    "web.service",
                    vec!["memory.oom.group=1".into()]
                ),
            ]
        );
        assert_eq!(m.controllers.len(), 1);
        assert_eq!(m.controllers[0].name, "oomd-batch.slice");
        assert_eq!(m.controllers[0].cgroup, "/batch.slice");
        assert_eq!(m.controllers[0].settings, [("limit".into(), "60%".into())]);
        let twice = [units[2].clone(), units[2].clone()];
        assert!(layout(&twice).unwrap_err().contains("listed twice"));
        for bad in ["12.345%", "101%", "x%"] {
            let t = format!(
                "[Service]\nManagedOOMMemoryPressure=kill\nManagedOOMMemoryPressureLimit={bad}\n"
            );
            assert!(parse_unit("x.service", &t, "u", ram).is_err(), "{bad}");
        }
    }
}
