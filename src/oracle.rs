//! `memcgsim oracle`: the front end of the real-kernel comparison (crates/oracle).

use std::time::Duration;

use memcgsim_oracle::{CompareOpts, GuestSetup, OracleOpts};

use crate::OracleArgs;

/// Run every script on the model and on the kernel (several per boot where they cannot see
/// each other); exit 0 if all agree, 1 if any disagrees, 2 if a script or the guest could
/// not be run. With `--values`, each report is followed by its table of values (which does
/// not change the exit status).
pub fn run(args: &OracleArgs) -> i32 {
    let opts = OracleOpts {
        kernel: args.kernel.clone(),
        modules: args.modules.clone(),
        kvm: args.kvm,
        timeout: Duration::from_secs(args.timeout),
        compare: CompareOpts {
            tolerance_pct: args.tolerance,
            slack: args.slack,
            strict: args.strict,
        },
        verbose: args.verbose,
        traces: args.traces.clone(),
    };
    let setup = match GuestSetup::locate(
        opts.kernel.clone(),
        opts.modules.clone(),
        opts.kvm,
        opts.timeout,
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("memcgsim oracle: {e}");
            return 2;
        }
    };
    let mut worst = 0;
    let mut summary = Vec::new();
    let mut scripts = Vec::new();
    for file in &args.files {
        let name = file.display().to_string();
        match std::fs::read_to_string(file) {
            Ok(text) => scripts.push((name, text)),
            Err(e) => {
                eprintln!("memcgsim: {name}: {e}");
                worst = 2;
            }
        }
    }
    let mut log = std::io::stderr();
    let results = memcgsim_oracle::run_scripts(&setup, &scripts, &opts, &mut log);
    for ((name, _), result) in scripts.into_iter().zip(results) {
        match result {
            Ok(r) => {
                println!(
                    "== {name}: model vs Linux {} ({}, {:.1} s)",
                    r.kernel_release,
                    if opts.kvm { "KVM" } else { "TCG" },
                    r.guest_seconds
                );
                print!("{}", r.report.text);
                if args.values {
                    // The table never changes the exit status: --strict decides whether keyed
                    // files count, as without it.
                    print!("\n{}", r.report.table.render(&opts.compare));
                }
                for (event, table) in &r.traces {
                    println!("-- trace {event} (Linux)\n{table}");
                }
                for (file, json) in &r.snapshots {
                    if !write_kernel_snapshot(file, json.as_deref()) {
                        worst = 2;
                    }
                }
                let agrees = r.report.agrees();
                if !agrees {
                    worst = worst.max(1);
                }
                summary.push((
                    name,
                    r.report.expects - r.report.model_failures,
                    r.report.expects - r.report.kernel_failures,
                    r.report.expects,
                    agrees,
                ));
            }
            Err(e) => {
                eprintln!("memcgsim oracle: {name}: {e}");
                worst = 2;
            }
        }
    }
    if summary.len() > 1 {
        println!("\n| script | model | kernel | agrees |\n|---|---|---|---|");
        for (n, m, k, t, a) in summary {
            println!(
                "| {n} | {m}/{t} expects hold | {k}/{t} expects hold | {} |",
                if a { "yes" } else { "no" }
            );
        }
    }
    worst
}

/// Write the kernel's snapshot of a `snapshot FILE` line to FILE, a new file. False (and a
/// message) if it could not be taken or written.
fn write_kernel_snapshot(file: &str, json: Option<&str>) -> bool {
    let Some(json) = json else {
        eprintln!("memcgsim oracle: snapshot {file}: the guest could not take it");
        return false;
    };
    match memcgsim_node::write_new(std::path::Path::new(file), json) {
        Ok(()) => {
            println!("-- snapshot of Linux written to {file}");
            true
        }
        Err(e) => {
            eprintln!("memcgsim oracle: snapshot {file}: {e}");
            false
        }
    }
}
