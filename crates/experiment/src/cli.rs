//! The `memcgsim run`, `memcgsim compare` and `memcgsim sweep` subcommands: their arguments
//! (clap) and bodies. They print errors as `memcgsim: MESSAGE` and return exit status 2 on failure, 0 otherwise.
//! Output paths (`--out`, `--html`) are checked before anything runs: what is there must be
//! replaceable, and a folder must be creatable where it is to go.

use std::path::PathBuf;

use clap::Args;

use crate::compare::{compare_jobs, run_plan};
use crate::output::{check_output, write_dir_atomic, Overwrite};
use crate::results::{write_comparison, write_results};
use crate::scenario::load;

/// Exit status for a scenario that cannot be loaded or run.
pub const EXIT_ERROR: i32 = 2;

/// `memcgsim run SCENARIO [--variant NAME] [--seed N] [--out DIR] [--force] [--no-progress]`
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The scenario file (TOML, see docs/SCENARIOS.md)
    pub scenario: PathBuf,
    /// The variant to run (default: the base variant)
    #[arg(long)]
    pub variant: Option<String>,
    /// The machine seed (default: the first of the scenario's seeds); several, comma
    /// separated or repeated, run one after the other or at once (--jobs), each into its
    /// own folder
    #[arg(long, value_delimiter = ',')]
    pub seed: Vec<u64>,
    /// Output folder (default: results/NAME/VARIANT-seedN). An existing folder is replaced
    /// only if memcgsim wrote it and it holds nothing else
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into an existing folder even if it holds other files (only same-named files
    /// and files memcgsim wrote there before are replaced), or replace a file at --out
    #[arg(long)]
    pub force: bool,
    /// Do not show the progress bar
    #[arg(long)]
    pub no_progress: bool,
    /// With several seeds, runs to do at once (default: the host's CPU count); the output is
    /// the same for every value
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Also write a self-contained HTML page of the run (one seed) to DIR/index.html, with
    /// interactive charts (see docs/SCENARIOS.md)
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
}

/// `memcgsim compare SCENARIO [--ratio] [--out DIR] [--force] [--no-progress] [--jobs N]`
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The scenario file (TOML, see docs/SCENARIOS.md)
    pub scenario: PathBuf,
    /// Output folder (default: results/NAME/compare). An existing folder is replaced only if
    /// memcgsim wrote it and it holds nothing else
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into an existing folder even if it holds other files (only same-named files
    /// and files memcgsim wrote there before are replaced), or replace a file at --out
    #[arg(long)]
    pub force: bool,
    /// Show each statistic as a percentage of the base's ([100.8%]) instead of the change
    /// ([+0.8%])
    #[arg(long)]
    pub ratio: bool,
    /// Do not show the progress bars
    #[arg(long)]
    pub no_progress: bool,
    /// Runs to do at once, each on a thread of its own (default: the host's CPU count). The
    /// output is the same for every value; each run holds its own machine's memory
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Also write a self-contained HTML page of the comparison to DIR/index.html: its tables
    /// and interactive charts (see docs/SCENARIOS.md)
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
}

/// `memcgsim sweep SCENARIO [--out DIR] [--force] [--no-progress] [--jobs N] [--backend ray
/// [--address ADDR]]`
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The scenario file, with [[sweep]] axes (see docs/SCENARIOS.md)
    pub scenario: PathBuf,
    /// Output folder (default: results/NAME/sweep), for sweep.csv and sweep.json. An existing
    /// folder is replaced only if memcgsim wrote it and it holds nothing else
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into an existing folder even if it holds other files (only same-named files
    /// and files memcgsim wrote there before are replaced), or replace a file at --out
    #[arg(long)]
    pub force: bool,
    /// Do not show the progress bar
    #[arg(long)]
    pub no_progress: bool,
    /// Runs to do at once, each on a thread of its own (default: the host's CPU count). The
    /// table is the same for every value
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Where the runs go: `local` threads, or `ray` tasks through the memcgsim Python
    /// package (`python3 -m memcgsim.sweep`, which must be installed with Ray); the table
    /// is the same
    #[arg(long, value_parser = ["local", "ray"], default_value = "local")]
    pub backend: String,
    /// With `--backend ray`: the cluster's address (ray.init's); default: a local instance
    #[arg(long)]
    pub address: Option<String>,
    /// Also print these columns of the table (names as in sweep.csv, comma-separated), a
    /// line per run, aligned
    #[arg(long, value_delimiter = ',')]
    pub show: Vec<String>,
    /// Also draw column Y against column X, a line per value of column SERIES, into
    /// sweep.svg and sweep.png (a point per grid point, its seeds averaged)
    #[arg(long, value_name = "X,Y[,SERIES]", value_delimiter = ',', num_args = 1)]
    pub chart: Vec<String>,
}

/// The table of a sweep run as Ray tasks by the Python package: `python3 -m memcgsim.sweep`
/// (the interpreter in $PYTHON, else python3) writes it as JSON into a temporary file.
fn ray_table(args: &SweepArgs) -> Result<crate::sweep::Table, String> {
    let tmp = tempfile::Builder::new()
        .prefix("memcgsim-sweep-")
        .suffix(".json")
        .tempfile()
        .map_err(|e| format!("--backend ray: a temporary file: {e}"))?
        .into_temp_path();
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "memcgsim.sweep", "--backend", "ray", "--out"])
        .arg(&tmp)
        .arg(&args.scenario);
    if let Some(a) = &args.address {
        cmd.args(["--address", a]);
    }
    let status = cmd
        .status()
        .map_err(|e| format!("--backend ray runs {python} -m memcgsim.sweep: {e}"))?;
    if !status.success() {
        return Err(format!(
            "--backend ray: {python} -m memcgsim.sweep failed ({status}); it needs the memcgsim Python package and Ray (docs/PYTHON.md)"
        ));
    }
    let text =
        std::fs::read_to_string(&tmp).map_err(|e| format!("--backend ray: the table: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("--backend ray: the table: {e}"))
}

/// The default of `--jobs`: the CPUs this process may use.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn overwrite(force: bool) -> Overwrite {
    if force {
        Overwrite::Force
    } else {
        Overwrite::Safe
    }
}

/// The command line that made a page, as a shell would take it back.
fn command_line() -> String {
    let mut words = vec!["memcgsim".to_string()];
    for a in std::env::args().skip(1) {
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
        words.push(if plain {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        });
    }
    words.join(" ")
}

/// Write an HTML page as DIR/index.html (a folder memcgsim owns, as the results folders).
fn write_html(dir: &std::path::Path, page: &str, force: bool) -> Result<(), String> {
    write_dir_atomic(dir, overwrite(force), |d| {
        std::fs::write(d.join("index.html"), page).map_err(|e| e.to_string())
    })?;
    eprintln!("memcgsim: page in {}", dir.join("index.html").display());
    Ok(())
}

fn fail(msg: &str) -> i32 {
    eprintln!("memcgsim: {msg}");
    EXIT_ERROR
}

/// The body of `memcgsim run`.
pub fn run(args: &RunArgs) -> i32 {
    let sc = match load(&args.scenario) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let variant = args.variant.clone().unwrap_or_else(|| sc.base.clone());
    let seeds = if args.seed.is_empty() {
        vec![sc.run.seeds[0]]
    } else {
        args.seed.clone()
    };
    for (i, s) in seeds.iter().enumerate() {
        if seeds[..i].contains(s) {
            return fail(&format!("--seed {s} is given twice"));
        }
    }
    let several = seeds.len() > 1;
    let dirs: Vec<PathBuf> = seeds
        .iter()
        .map(|seed| {
            let leaf = format!("{variant}-seed{seed}");
            match &args.out {
                // With several seeds, --out is the folder that holds one per seed.
                Some(o) if several => o.join(leaf),
                Some(o) => o.clone(),
                None => PathBuf::from("results").join(&sc.name).join(leaf),
            }
        })
        .collect();
    // Refuse an output path before the runs, not after them.
    for dir in &dirs {
        if let Err(e) = check_output(dir, overwrite(args.force)) {
            return fail(&e);
        }
    }
    if let Some(h) = &args.html {
        if several {
            return fail("--html writes the page of one run: give one --seed");
        }
        if dirs.contains(h) {
            return fail(&format!(
                "--html {} is also the results folder: give --html a folder of its own",
                h.display()
            ));
        }
        if let Err(e) = check_output(h, overwrite(args.force)) {
            return fail(&e);
        }
    }
    let jobs = args.jobs.map_or_else(default_jobs, usize::from);
    let plan: Vec<(&str, u64)> = seeds.iter().map(|&s| (variant.as_str(), s)).collect();
    let results = match run_plan(&sc, &plan, !args.no_progress, jobs) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    for (i, (result, dir)) in results.iter().zip(&dirs).enumerate() {
        if i > 0 {
            println!();
        }
        print!("{}", result.render());
        if let Err(e) = write_results(result, dir, overwrite(args.force)) {
            return fail(&e);
        }
        eprintln!("memcgsim: results in {}", dir.display());
        if let Some(h) = &args.html {
            if let Err(e) = write_html(
                h,
                &crate::html::run_html(result, &command_line()),
                args.force,
            ) {
                return fail(&e);
            }
        }
    }
    0
}

/// The body of `memcgsim compare`.
pub fn compare_cmd(args: &CompareArgs) -> i32 {
    let sc = match load(&args.scenario) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&sc.name).join("compare"));
    if let Err(e) = check_output(&dir, overwrite(args.force)) {
        return fail(&e);
    }
    if let Some(h) = &args.html {
        if *h == dir {
            return fail(&format!(
                "--html {} is also the results folder: give --html a folder of its own",
                h.display()
            ));
        }
        if let Err(e) = check_output(h, overwrite(args.force)) {
            return fail(&e);
        }
    }
    let jobs = args.jobs.map_or_else(default_jobs, usize::from);
    let mut c = match compare_jobs(&sc, !args.no_progress, jobs) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    c.ratio = args.ratio;
    print!("{}", c.render());
    if let Err(e) = write_comparison(&c, &dir, overwrite(args.force)) {
        return fail(&e);
    }
    eprintln!("memcgsim: results in {}", dir.display());
    if let Some(h) = &args.html {
        if let Err(e) = write_html(
            h,
            &crate::html::compare_html(&c, &command_line()),
            args.force,
        ) {
            return fail(&e);
        }
    }
    0
}

/// The body of `memcgsim sweep`: every run of the sweep, one row each, into sweep.csv and
/// sweep.json (`columns`, `rows`).
pub fn sweep_cmd(args: &SweepArgs) -> i32 {
    let sc = match load(&args.scenario) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    if sc.sweep.is_empty() {
        return fail(&format!(
            "{}: the scenario has no [[sweep]] (docs/SCENARIOS.md)",
            sc.file
        ));
    }
    if args.address.is_some() && args.backend != "ray" {
        return fail("--address is for --backend ray");
    }
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&sc.name).join("sweep"));
    if let Err(e) = check_output(&dir, overwrite(args.force)) {
        return fail(&e);
    }
    let n = crate::sweep::points(&sc).len();
    let bar =
        (!args.no_progress && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
            let pb = indicatif::ProgressBar::new(n as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} runs ({elapsed})",
            ) {
                pb.set_style(style.progress_chars("=> "));
            }
            pb.set_prefix(format!("{} sweep", sc.name));
            pb
        });
    let done = |k: usize| {
        if let Some(pb) = &bar {
            pb.set_position(k as u64);
        }
    };
    let jobs = args.jobs.map_or_else(default_jobs, usize::from);
    let table = if args.backend == "ray" {
        ray_table(args)
    } else {
        crate::sweep::sweep(&sc, jobs, &done)
    };
    let table = match table {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    if let Some(pb) = &bar {
        pb.finish_and_clear();
    }
    let shown = match table.show(&args.show) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let chart = match args.chart.as_slice() {
        [] => None,
        [x, y] | [x, y, _] => {
            let series = args.chart.get(2).map(String::as_str);
            match table.xy_series(x, y, series) {
                Ok(pts) => Some((x.clone(), y.clone(), series.map(str::to_string), pts)),
                Err(e) => return fail(&e),
            }
        }
        _ => return fail("--chart takes X,Y or X,Y,SERIES (columns of the table)"),
    };
    let json = match serde_json::to_string_pretty(&table) {
        Ok(j) => j + "\n",
        Err(e) => return fail(&e.to_string()),
    };
    let csv = table.to_csv();
    let r = write_dir_atomic(&dir, overwrite(args.force), |d| {
        std::fs::write(d.join("sweep.csv"), &csv).map_err(|e| e.to_string())?;
        std::fs::write(d.join("sweep.json"), &json).map_err(|e| e.to_string())?;
        if let Some((x, y, series, pts)) = &chart {
            // Sizes in bytes get binary units on their axis.
            let bytes = |c: &str| {
                ["usage_peak", "usage_avg", "swap_peak"]
                    .iter()
                    .any(|s| c.ends_with(s))
            };
            let by = series
                .as_deref()
                .map(|s| format!(", by {s}"))
                .unwrap_or_default();
            crate::charts::render_xy_chart(
                &format!("{} sweep{by}", sc.name),
                (x, bytes(x)),
                (y, bytes(y)),
                pts.clone(),
                d,
                "sweep",
            )?;
        }
        Ok(())
    });
    if let Err(e) = r {
        return fail(&e);
    }
    let axes: Vec<String> = sc
        .sweep
        .iter()
        .map(|a| format!("{} ({} values)", a.name, a.values.len()))
        .collect();
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    println!(
        "sweep {}: {}: {} x {} x {}; {}",
        sc.name,
        count(n, "run"),
        count(sc.variants.len(), "variant"),
        axes.join(" x "),
        count(sc.run.seeds.len(), "seed"),
        count(table.columns.len(), "column")
    );
    print!("{shown}");
    eprintln!("memcgsim: results in {}", dir.display());
    0
}
