//! The Python package (python/memcgsim over crates/python), tested from Python: a virtual
//! environment under the test's scratch directory gets maturin, pytest, pandas, Ray and
//! matplotlib, `pip install .` builds the package from this tree as a user would, and pytest
//! runs python/tests (the Ray backend against a local Ray instance, and the examples).
//!
//! It needs python3 with venv and pip, and the network for the packages. When they are
//! missing, or MEMCGSIM_FAST=1 asks for the fast tier alone, the test shows as ignored, with
//! the reason and the set-up command, unless MEMCGSIM_PYTHON=1 (set by `.ci/run`), which makes their absence a failure. The file is its
//! own test harness (libtest-mimic), since whether the test is skipped is known only when it
//! runs. It prints how long each step took.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let trials = vec![Trial::ignorable_test(
        "python_package_passes_its_tests",
        python_package_passes_its_tests,
    )];
    libtest_mimic::run(&args, trials).exit();
}

/// What pytest needs beside the package: the builder, pyproject.toml's `test` extra, Ray for
/// the Ray backend's test and matplotlib for the example's chart.
const PACKAGES: &[&str] = &[
    "maturin>=1.5,<2",
    "pytest>=7",
    "pandas>=1.5",
    "ray>=2.9",
    "matplotlib>=3.5",
];

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Run a command in the repository; Err with its output when it fails or cannot start.
fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// The virtual environment, with the packages installed.
fn venv() -> Result<PathBuf, String> {
    if std::env::var("MEMCGSIM_FAST").as_deref() == Ok("1") {
        return Err("MEMCGSIM_FAST=1 runs the fast tier alone".into());
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-venv");
    let pip = dir.join("bin/pip");
    if !pip.is_file() {
        run(
            Command::new(python()).args(["-m", "venv"]).arg(&dir),
            "python3 -m venv",
        )?;
    }
    run(
        Command::new(&pip)
            // No .pyc files at install (Ray alone has thousands of modules); Python writes
            // them for the modules it imports.
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-compile",
            ])
            .args(PACKAGES),
        "pip install maturin pytest pandas ray matplotlib",
    )?;
    Ok(dir)
}

fn python_package_passes_its_tests() -> Result<Completion, Failed> {
    let required = std::env::var("MEMCGSIM_PYTHON").as_deref() == Ok("1");
    let t = Instant::now();
    let dir = match venv() {
        Ok(d) => d,
        Err(why) => {
            if required {
                return Err(format!("MEMCGSIM_PYTHON=1 but no Python environment: {why}").into());
            }
            let first = why.lines().next().unwrap_or_default();
            return Ok(Completion::ignored_with(format!(
                "Python tier skipped: {first}; set it up with `python/setup.sh`, run it with `MEMCGSIM_PYTHON=1 cargo test --release --test python`"
            )));
        }
    };
    eprintln!(
        "python tier: virtual environment and packages ready in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    // `pip install .`, as the README says, with the venv's maturin (no isolated build
    // environment to download again), its own target directory (this test's cargo holds
    // the workspace's) and the `pytest` profile (Cargo.toml), which compiles in about half
    // the time of release: the build is most of this test's time (182 s of 225 s on two
    // busy cores, with the virtual environment already made).
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-target");
    let path = std::env::join_paths(
        std::iter::once(dir.join("bin")).chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths),
        ),
    )
    .expect("PATH");
    let t = Instant::now();
    run(
        Command::new(dir.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-build-isolation",
                "--force-reinstall",
                "--no-deps",
                ".",
            ])
            .env("CARGO_TARGET_DIR", &target)
            .env("MATURIN_PEP517_ARGS", "--profile pytest")
            .env("PATH", &path),
        "pip install .",
    )?;
    eprintln!(
        "python tier: `pip install .` built the package in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    run(
        Command::new(dir.join("bin/python"))
            .args(["-m", "pytest", "-q", "python/tests"])
            .env("MEMCGSIM_BIN", env!("CARGO_BIN_EXE_memcgsim")),
        "pytest python/tests",
    )?;
    eprintln!(
        "python tier: pytest passed in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    Ok(Completion::Completed)
}
