//! Bottom layer of the benchmark: how a part shows its progress and prints, and the check
//! that repeated runs of one figure agree.
//!
//! A part counts its runs through a [`Meter`]: on a terminal, standard error shows a bar of
//! the runs done (indicatif, as `compare` does); elsewhere (a log) the part prints one plain
//! line on standard error as it starts. Its table goes to standard output, around the bar.
//! The runs a part repeats to keep the best of them are kept in [`Samples`]; when two runs
//! of one figure differ by more than [`NOISE_LIMIT`], the part ends with a warning on
//! standard error that names the figure: the host's load moved it, and its ratios with it.

use std::fmt::Display;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// How far apart (largest over smallest, minus one) repeated runs of one figure may be
/// before the part warns.
pub const NOISE_LIMIT: f64 = 0.10;

/// The measurements of one figure over the runs that repeat it.
#[derive(Clone, Debug, Default)]
pub struct Samples(Vec<f64>);

impl Samples {
    pub fn push(&mut self, x: f64) {
        self.0.push(x);
    }

    /// The largest measurement (the best rate), 0 if none.
    pub fn max(&self) -> f64 {
        self.0.iter().copied().fold(0.0, f64::max)
    }

    /// The smallest measurement (the best time), 0 if none.
    pub fn min(&self) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// How far apart the runs are: the largest over the smallest, minus one (0.25 when the
    /// fastest run measured 25 % more than the slowest); 0 with fewer than two runs.
    pub fn spread(&self) -> f64 {
        if self.0.len() < 2 {
            return 0.0;
        }
        let (lo, hi) = (self.min(), self.max());
        if lo > 0.0 {
            hi / lo - 1.0
        } else if hi > 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    }

    /// Whether two of the runs differ by more than [`NOISE_LIMIT`].
    pub fn noisy(&self) -> bool {
        self.spread() > NOISE_LIMIT
    }

    /// How many runs were measured.
    pub fn runs(&self) -> usize {
        self.0.len()
    }
}

/// One part's progress, output and noise warnings.
pub struct Meter {
    name: &'static str,
    bar: Option<ProgressBar>,
    noisy: Vec<String>,
}

impl Meter {
    /// Start part `index` of `parts`, named `name`, which does `runs` runs. On a terminal
    /// standard error shows a bar; elsewhere one line says the part has started.
    pub fn start(name: &'static str, index: usize, parts: usize, runs: u64) -> Meter {
        let bar = if std::io::stderr().is_terminal() {
            let pb = ProgressBar::new(runs);
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} runs ({elapsed}) {wide_msg}",
            ) {
                pb.set_style(style.progress_chars("=> "));
            }
            pb.set_prefix(format!("bench {index}/{parts} {name}"));
            pb.enable_steady_tick(Duration::from_secs(1));
            Some(pb)
        } else {
            let s = if runs == 1 { "" } else { "s" };
            eprintln!("memcgsim bench: part {index} of {parts}, {name}: {runs} run{s}");
            None
        };
        Meter {
            name,
            bar,
            noisy: Vec::new(),
        }
    }

    /// Do one run, named `what` on the bar while it lasts.
    pub fn run<T>(&self, what: &str, f: impl FnOnce() -> T) -> T {
        if let Some(pb) = &self.bar {
            pb.set_message(what.to_string());
        }
        let r = f();
        if let Some(pb) = &self.bar {
            pb.inc(1);
        }
        r
    }

    /// Print a line of the part's output on standard output, the bar set aside meanwhile.
    pub fn say(&self, line: impl Display) {
        match &self.bar {
            Some(pb) => pb.suspend(|| println!("{line}")),
            None => println!("{line}"),
        }
    }

    /// Print a warning on standard error, prefixed as the bench's own, the bar set aside
    /// meanwhile.
    pub fn warn(&self, line: impl Display) {
        let line = format!("memcgsim bench: warning: {line}");
        match &self.bar {
            Some(pb) => pb.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// Print a part's legend, what its labels mean, indented under its figures.
    pub fn legend(&self, lines: &[&str]) {
        for l in lines {
            self.say(format_args!("  {l}"));
        }
    }

    /// Note the runs of the figure `what` (in `unit`) for the warning at the end of the
    /// part, if two of them differ by more than [`NOISE_LIMIT`].
    pub fn check(&mut self, what: impl Display, unit: &str, s: &Samples) {
        if s.noisy() {
            self.noisy.push(format!(
                "{what}: {} runs from {:.2} to {:.2} {unit} ({:.0}% apart)",
                s.runs(),
                s.min(),
                s.max(),
                100.0 * s.spread()
            ));
        }
    }

    /// The figures [`check`](Self::check) found noisy so far.
    #[cfg(test)]
    pub fn noisy(&self) -> &[String] {
        &self.noisy
    }

    /// End the part: clear the bar, warn about the figures whose runs disagree.
    pub fn finish(self) {
        if let Some(pb) = &self.bar {
            pb.finish_and_clear();
        }
        if self.noisy.is_empty() {
            return;
        }
        eprintln!(
            "memcgsim bench: warning: {}: repeated runs differ by more than {:.0}%; the host's \
             load moved these figures (each is the best of its runs) and the ratios built on \
             them:",
            self.name,
            100.0 * NOISE_LIMIT
        );
        for n in &self.noisy {
            eprintln!("  {n}");
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        if let Some(pb) = &self.bar {
            if !pb.is_finished() {
                pb.finish_and_clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(xs: &[f64]) -> Samples {
        let mut s = Samples::default();
        for &x in xs {
            s.push(x);
        }
        s
    }

    #[test]
    fn spread_is_the_largest_over_the_smallest() {
        let s = samples(&[1.0, 1.25, 1.1]);
        assert_eq!((s.min(), s.max()), (1.0, 1.25));
        assert!((s.spread() - 0.25).abs() < 1e-12);
        assert!(s.noisy());
        assert!(!samples(&[1.0, 1.09, 1.05]).noisy());
        // One run, or none, is never noisy.
        assert!(!samples(&[3.0]).noisy());
        assert!(!samples(&[]).noisy());
        assert_eq!(samples(&[]).min(), 0.0);
        assert!(samples(&[0.0, 1.0]).noisy());
        assert!(!samples(&[0.0, 0.0]).noisy());
    }

    #[test]
    fn check_keeps_only_noisy_figures() {
        let mut m = Meter {
            name: "test",
            bar: None,
            noisy: Vec::new(),
        };
        m.check("quiet", "M/s", &samples(&[2.0, 2.1, 2.05]));
        m.check("root s_read off", "M/s", &samples(&[1.2, 1.48, 1.3]));
        assert_eq!(
            m.noisy(),
            ["root s_read off: 3 runs from 1.20 to 1.48 M/s (23% apart)"]
        );
    }
}
