//! Command-line parsing shared by the workloads added after `anon`/`pagecache`/`mlock`:
//! positional words and `--option VALUE` (or `--option=VALUE`) pairs, checked against what
//! each workload accepts. Every error is one line that starts with the workload's name and
//! names the bad argument, e.g. `dd: --bs: bad size 'x'`.

use memcgsim_model::units::{parse_duration_ns, parse_size};

use crate::rand::fnv1a;

/// What a workload accepts.
pub(crate) struct Spec {
    /// Options without a value, e.g. `--hold`.
    pub flags: &'static [&'static str],
    /// Options taking a value, e.g. `--chunks`.
    pub options: &'static [&'static str],
    /// Names of the positional arguments, in order (for error texts), e.g. `["SIZE"]`.
    pub positional: &'static [&'static str],
    /// How many of the positional arguments are required.
    pub required: usize,
}

/// A parsed command line.
pub(crate) struct Parsed {
    pub name: &'static str,
    pos: Vec<String>,
    vals: Vec<(&'static str, String)>,
    flags: Vec<&'static str>,
    /// Seed derived from the whole command line, used when `--seed` is not given.
    derived_seed: u64,
}

/// Render a byte count in the largest binary unit that divides it ("4K", "1T", "1000").
pub(crate) fn fmt_size(b: u64) -> String {
    for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if b >= 1 << shift && b.is_multiple_of(1u64 << shift) {
            return format!("{}{suffix}", b >> shift);
        }
    }
    b.to_string()
}

pub(crate) fn parse(name: &'static str, args: &[String], spec: &Spec) -> Result<Parsed, String> {
    let mut p = Parsed {
        name,
        pos: Vec::new(),
        vals: Vec::new(),
        flags: Vec::new(),
        derived_seed: {
            let mut h = fnv1a(0, name.as_bytes());
            for a in args {
                h = fnv1a(h, a.as_bytes());
                h = fnv1a(h, &[0]);
            }
            h
        },
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a.len() > 2 && a.starts_with("--") {
            let (key, inline) = match a.find('=') {
                Some(i) => (&a[..i], Some(&a[i + 1..])),
                None => (a.as_str(), None),
            };
            if let Some(&f) = spec.flags.iter().find(|&&f| f == key) {
                if inline.is_some() {
                    return Err(format!("{name}: {f} takes no value"));
                }
                if p.flags.contains(&f) {
                    return Err(format!("{name}: {f} given twice"));
                }
                p.flags.push(f);
            } else if let Some(&o) = spec.options.iter().find(|&&o| o == key) {
                let v = match inline {
                    Some(v) => v,
                    None => match it.next() {
                        Some(v) if !(v.len() > 2 && v.starts_with("--")) => v.as_str(),
                        _ => return Err(format!("{name}: {o} needs a value")),
                    },
                };
                if v.is_empty() {
                    return Err(format!("{name}: {o} needs a value"));
                }
                if p.vals.iter().any(|(k, _)| *k == o) {
                    return Err(format!("{name}: {o} given twice"));
                }
                p.vals.push((o, v.to_string()));
            } else {
                return Err(format!("{name}: unknown option '{a}'"));
            }
        } else {
            if p.pos.len() == spec.positional.len() {
                return Err(format!("{name}: unexpected argument '{a}'"));
            }
            p.pos.push(a.clone());
        }
    }
    if p.pos.len() < spec.required {
        return Err(format!("{name}: missing {}", spec.positional[p.pos.len()]));
    }
    Ok(p)
}

impl Parsed {
    pub fn flag(&self, f: &str) -> bool {
        self.flags.contains(&f)
    }

    /// The raw value of an option.
    pub fn value(&self, opt: &str) -> Option<&str> {
        self.vals
            .iter()
            .find(|(k, _)| *k == opt)
            .map(|(_, v)| v.as_str())
    }

    /// The positional argument at `i`, if given.
    pub fn positional(&self, i: usize) -> Option<&str> {
        self.pos.get(i).map(|s| s.as_str())
    }

    fn check_size(&self, what: &str, v: &str, min: u64, max: u64) -> Result<u64, String> {
        let name = self.name;
        let b = parse_size(v).map_err(|e| format!("{name}: {what}: {e}"))?;
        if b < min || b > max {
            return Err(format!(
                "{name}: {what} '{v}' is out of range ({}..={})",
                fmt_size(min),
                fmt_size(max)
            ));
        }
        Ok(b)
    }

    /// The size given as positional argument `i` (named by the spec, e.g. SIZE), in bytes.
    pub fn pos_size(
        &self,
        i: usize,
        what: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, String> {
        match self.positional(i) {
            Some(v) => self.check_size(what, v, min, max).map(Some),
            None => Ok(None),
        }
    }

    /// A size option in bytes.
    pub fn size(&self, opt: &str, default: u64, min: u64, max: u64) -> Result<u64, String> {
        match self.value(opt) {
            Some(v) => self.check_size(opt, v, min, max),
            None => Ok(default),
        }
    }

    /// An integer option.
    pub fn count(&self, opt: &str, default: u64, min: u64, max: u64) -> Result<u64, String> {
        let Some(v) = self.value(opt) else {
            return Ok(default);
        };
        v.parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                format!(
                    "{}: {opt}: bad count '{v}' (expected an integer in {min}..={max})",
                    self.name
                )
            })
    }

    /// A duration option in nanoseconds.
    pub fn duration(&self, opt: &str, default: u64, max: u64) -> Result<u64, String> {
        let Some(v) = self.value(opt) else {
            return Ok(default);
        };
        let ns = parse_duration_ns(v).map_err(|e| format!("{}: {opt}: {e}", self.name))?;
        if ns > max {
            return Err(format!(
                "{}: {opt} '{v}' is too long (at most {} s)",
                self.name,
                max / 1_000_000_000
            ));
        }
        Ok(ns)
    }

    /// A real-number option within `min..=max` (`min_open`: the minimum itself is excluded).
    pub fn float(
        &self,
        opt: &str,
        default: f64,
        min: f64,
        min_open: bool,
        max: f64,
    ) -> Result<f64, String> {
        let Some(v) = self.value(opt) else {
            return Ok(default);
        };
        let ok = |f: &f64| f.is_finite() && *f <= max && (*f > min || (!min_open && *f == min));
        v.parse::<f64>().ok().filter(ok).ok_or_else(|| {
            let lo = if min_open { "(" } else { "[" };
            format!(
                "{}: {opt}: bad number '{v}' (expected a value in {lo}{min}, {max}])",
                self.name
            )
        })
    }

    /// One of a fixed set of words.
    pub fn choice(
        &self,
        opt: &str,
        choices: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, String> {
        let Some(v) = self.value(opt) else {
            return Ok(default);
        };
        choices.iter().copied().find(|&c| c == v).ok_or_else(|| {
            format!(
                "{}: {opt}: bad value '{v}' (expected {})",
                self.name,
                choices.join(" or ")
            )
        })
    }

    /// A file name option.
    pub fn string(&self, opt: &str) -> Option<String> {
        self.value(opt).map(str::to_string)
    }

    /// `--seed N`, or a seed derived from the whole command line.
    pub fn seed(&self) -> Result<u64, String> {
        match self.value("--seed") {
            Some(v) => v.parse::<u64>().map_err(|_| {
                format!(
                    "{}: --seed: bad seed '{v}' (expected an unsigned integer)",
                    self.name
                )
            }),
            None => Ok(self.derived_seed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec {
        flags: &["--hold"],
        options: &["--n", "--bs", "--f", "--nap", "--seed", "--x"],
        positional: &["SIZE"],
        required: 1,
    };

    fn p(v: &[&str]) -> Result<Parsed, String> {
        let a: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        parse("w", &a, &SPEC)
    }

    #[test]
    fn parses_options_flags_and_positionals() {
        let a = p(&["1M", "--n", "3", "--bs=4K", "--hold"]).unwrap();
        assert!(a.flag("--hold"));
        assert_eq!(a.pos_size(0, "SIZE", 1, 1 << 40).unwrap(), Some(1 << 20));
        assert_eq!(a.count("--n", 1, 1, 10).unwrap(), 3);
        assert_eq!(a.size("--bs", 0, 1, 1 << 30).unwrap(), 4096);
        assert_eq!(a.duration("--nap", 7, 10).unwrap(), 7);
        assert_eq!(a.choice("--x", &["a", "b"], "a").unwrap(), "a");
    }

    #[test]
    fn errors_name_the_workload_and_argument() {
        let e = |v: &[&str]| p(v).err().expect("an error");
        assert_eq!(e(&[]), "w: missing SIZE");
        assert_eq!(e(&["1M", "2M"]), "w: unexpected argument '2M'");
        assert_eq!(e(&["1M", "--zz"]), "w: unknown option '--zz'");
        assert_eq!(e(&["1M", "--n"]), "w: --n needs a value");
        assert_eq!(e(&["1M", "--n", "--hold"]), "w: --n needs a value");
        assert_eq!(e(&["1M", "--n="]), "w: --n needs a value");
        assert_eq!(e(&["1M", "--hold=1"]), "w: --hold takes no value");
        assert_eq!(e(&["1M", "--n", "1", "--n", "2"]), "w: --n given twice");
        let a = p(&["x", "--n", "0", "--bs", "0", "--nap", "2h", "--x", "c"]).unwrap();
        assert!(a
            .pos_size(0, "SIZE", 1, 10)
            .unwrap_err()
            .contains("w: SIZE: bad size 'x'"));
        assert!(a
            .count("--n", 1, 1, 5)
            .unwrap_err()
            .contains("w: --n: bad count '0'"));
        assert!(a
            .size("--bs", 1, 1, 1 << 30)
            .unwrap_err()
            .contains("w: --bs '0' is out of range (1..=1G)"));
        assert!(a
            .duration("--nap", 0, 3_600_000_000_000)
            .unwrap_err()
            .contains("w: --nap '2h' is too long"));
        assert!(a
            .choice("--x", &["a", "b"], "a")
            .unwrap_err()
            .contains("w: --x: bad value 'c' (expected a or b)"));
        let a = p(&["1M", "--seed", "-1", "--f", "nan"]).unwrap();
        assert!(a.seed().unwrap_err().contains("w: --seed: bad seed '-1'"));
        assert!(a
            .float("--f", 1.0, 0.0, true, 10.0)
            .unwrap_err()
            .contains("w: --f: bad number 'nan'"));
    }

    #[test]
    fn derived_seed_depends_on_the_arguments() {
        let s1 = p(&["1M"]).unwrap().seed().unwrap();
        let s2 = p(&["1M"]).unwrap().seed().unwrap();
        let s3 = p(&["2M"]).unwrap().seed().unwrap();
        assert_eq!(s1, s2);
        assert_ne!(s1, s3);
        assert_eq!(p(&["1M", "--seed", "42"]).unwrap().seed().unwrap(), 42);
    }

    #[test]
    fn sizes_render_in_binary_units() {
        assert_eq!(fmt_size(4096), "4K");
        assert_eq!(fmt_size(1 << 40), "1T");
        assert_eq!(fmt_size(3 << 20), "3M");
        assert_eq!(fmt_size(1000), "1000");
        assert_eq!(fmt_size(0), "0");
    }
}
