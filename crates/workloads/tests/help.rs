//! The workloads' help texts, their copy in docs/SCRIPTING.md, and the usage line at the end
//! of every argument error.
//!
//! After changing a help text, `UPDATE_DOCS=1 cargo test -p memcgsim-workloads --test help`
//! rewrites the workload entries of docs/SCRIPTING.md (the section's introduction is left
//! alone).

use std::path::PathBuf;

use memcgsim_workloads::{build, describe, help, usage, WORKLOADS};

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn build_err(name: &str, a: &[&str]) -> String {
    match build(name, &args(a)) {
        Ok(_) => panic!("{name} {a:?} should fail"),
        Err(e) => e,
    }
}

#[test]
fn every_workload_has_help_starting_with_its_usage() {
    for &w in WORKLOADS {
        let h = help(w).unwrap_or_else(|| panic!("{w} has no help"));
        let u = usage(w).unwrap_or_else(|| panic!("{w} has no usage line"));
        let first = h.lines().next().unwrap();
        assert!(first.starts_with(w), "{w}: {first}");
        assert_eq!(first, u, "{w}");
        assert!(
            describe(w).unwrap().starts_with(&format!("{u}: ")),
            "{w}: describe() and usage() differ"
        );
        // Several lines, no stray whitespace at the end of any.
        assert!(h.lines().count() > 5, "{w}: {h}");
        assert_eq!(h.trim_end(), h, "{w}");
        for l in h.lines() {
            assert_eq!(l.trim_end(), l, "{w}: trailing blank in '{l}'");
        }
        // Every option of the usage line is explained in the body, with its default.
        let body = &h[first.len()..];
        for opt in u.split([' ', '[', ']', '|']) {
            if opt.starts_with("--") {
                assert!(
                    body.contains(&format!("\n  {opt}")),
                    "{w}: {opt} undocumented"
                );
            }
        }
        assert!(body.contains("Used by: "), "{w}: which experiments use it?");
    }
    for w in ["nosuch", "", "Anon"] {
        assert!(help(w).is_none() && usage(w).is_none() && describe(w).is_none());
    }
}

#[test]
fn help_states_the_defaults_the_code_uses() {
    // Spot checks of the defaults in the help texts; tests/run.rs checks that they are what
    // the workloads do.
    let cases: &[(&str, &[&str])] = &[
        (
            "anon",
            &["--passes N  times the region is written, 1 to 1000000 (default 1)"],
        ),
        (
            "mem_eater",
            &[
                "(default 100)",
                "0 to 1h, e.g. 500ms, 2s, 1m (default 1s; 0: none)",
            ],
        ),
        ("dd", &["(default dd.out)", "1 byte to 1G (default 1M"]),
        (
            "tar",
            &[
                "(default 1000;",
                "(default tar.archive)",
                "(default tar.out)",
            ],
        ),
        (
            "kbuild",
            &[
                "1 to 1024 (default 4)",
                "1 to 1000000 (default 3000)",
                "(default 1G)",
                "0 to 64G (default 40M)",
                "0 to 64G (default 200K)",
                "0 to 1h (default 300ms)",
                "(default kbuild.src)",
            ],
        ),
        ("pagetest", &["(default anon)", "1 to 1000000 (default 2)"]),
        (
            "fault-bench",
            &["(default write)", "1 to 1000000000 (default 10000)"],
        ),
        (
            "hackbench",
            &[
                "(default 10)",
                "(default 40,",
                "(default 100)",
                "default 64K)",
            ],
        ),
        ("usemem", &["(default 1)", "(default 0: none)"]),
        (
            "access",
            &[
                "(default random)",
                "(default 0.99,",
                "(default 10 x the pages of SIZE)",
            ],
        ),
        ("trace", &["4K to 1T (K, M, G or T suffix; default 1G)"]),
    ];
    for (w, wants) in cases {
        let h = help(w).unwrap();
        for want in *wants {
            assert!(h.contains(want), "{w}: no '{want}' in\n{h}");
        }
    }
}

fn scripting_md() -> (PathBuf, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/SCRIPTING.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, text)
}

/// The workload entries of the `## Workloads` section, as they must read.
fn expected_entries() -> String {
    let mut s = String::new();
    for &w in WORKLOADS {
        s += &format!("### `{w}`\n\n```text\n{}\n```\n\n", help(w).unwrap());
    }
    s
}

/// The byte range of the workload entries in the document: from the section's first
/// `### ` heading to the end of the section.
fn entries_range(doc: &str) -> std::ops::Range<usize> {
    let start = doc
        .find("\n## Workloads\n")
        .expect("docs/SCRIPTING.md has a '## Workloads' section")
        + 1;
    let end = doc[start + 1..]
        .find("\n## ")
        .map(|i| start + 1 + i + 1)
        .unwrap_or(doc.len());
    let first = doc[start..end]
        .find("\n### ")
        .map(|i| start + i + 1)
        .expect("the Workloads section has entries");
    first..end
}

#[test]
fn scripting_md_has_every_help_text() {
    let (path, doc) = scripting_md();
    let range = entries_range(&doc);
    let want = expected_entries();
    if std::env::var_os("UPDATE_DOCS").is_some() && doc[range.clone()] != want {
        let mut new = doc.clone();
        new.replace_range(range.clone(), &want);
        std::fs::write(&path, new).unwrap();
        return;
    }
    // Each text verbatim, under its own heading.
    for &w in WORKLOADS {
        let h = help(w).unwrap();
        let block = format!("### `{w}`\n\n```text\n{h}\n```\n");
        assert!(
            doc[range.clone()].contains(&block),
            "docs/SCRIPTING.md lacks the help text of {w} (UPDATE_DOCS=1 rewrites it):\n{block}"
        );
    }
    // Nothing else: no workload missing, stale or out of order.
    assert!(
        doc[range.clone()] == want,
        "the workload entries of docs/SCRIPTING.md differ from help() \
         (UPDATE_DOCS=1 rewrites them)"
    );
    // The run command points at the section.
    let run = doc.find("### `run ").expect("a run section");
    let next = doc[run + 1..].find("\n### ").unwrap() + run;
    assert!(
        doc[run..next].contains("(#workloads)"),
        "run does not link to Workloads"
    );
}

#[test]
fn argument_errors_end_with_the_usage_line() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("usemem", &[], "usemem: missing SIZE"),
        (
            "usemem",
            &["1M", "--fast"],
            "usemem: unknown option '--fast'",
        ),
        (
            "usemem",
            &["1M", "--passes", "x"],
            "usemem: --passes: bad count 'x'",
        ),
        ("usemem", &["1M", "2M"], "usemem: unexpected argument '2M'"),
        ("anon", &[], "anon: missing SIZE"),
        ("anon", &["1M", "--bs", "4K"], "anon: unknown option '--bs'"),
        ("anon", &["lots"], "anon: bad size 'lots'"),
        (
            "mlock",
            &["1M", "--passes", "3"],
            "mlock: --passes is not supported",
        ),
        (
            "pagecache",
            &["1M", "--file"],
            "pagecache: --file needs a name",
        ),
        (
            "mem_eater",
            &["1M", "--nap", "soon"],
            "mem_eater: --nap: bad duration 'soon'",
        ),
        (
            "dd",
            &["1M", "--bs", "2G"],
            "dd: --bs '2G' is out of range (1..=1G)",
        ),
        ("cat", &["1M"], "cat: missing --file NAME"),
        ("readonce", &["--file"], "readonce: --file needs a value"),
        (
            "tar",
            &["1M", "--files", "1", "--files", "2"],
            "tar: --files given twice",
        ),
        (
            "kbuild",
            &["--shard", "2/1"],
            "kbuild: --shard: bad shard '2/1'",
        ),
        ("kbuild", &["--cold=yes"], "kbuild: --cold takes no value"),
        (
            "pagetest",
            &["1M", "--kind", "file"],
            "pagetest: --kind: bad value 'file'",
        ),
        (
            "hackbench",
            &["--groups", "0"],
            "hackbench: --groups: bad count '0'",
        ),
        (
            "access",
            &["1M", "--read-only"],
            "access: --read-only needs --file",
        ),
        (
            "access",
            &["1M", "--theta", "2"],
            "access: --theta needs --pattern zipf",
        ),
        ("trace", &[], "trace: missing FILE"),
        (
            "trace",
            &["t.bin", "--speed", "0"],
            "trace: --speed: bad number '0'",
        ),
        (
            "trace",
            &["/nonexistent/t.bin"],
            "trace: /nonexistent/t.bin: cannot open",
        ),
    ];
    for &(w, a, want) in cases {
        let e = build_err(w, a);
        assert!(
            e.starts_with(want),
            "{w} {a:?}: got '{e}', want '{want}...'"
        );
        let tail = format!(" (usage: {})", usage(w).unwrap());
        assert!(
            e.ends_with(&tail),
            "{w} {a:?}: '{e}' does not end with '{tail}'"
        );
        assert!(!e.contains('\n'), "{e}");
    }
    // The exact form.
    assert_eq!(
        build_err("usemem", &[]),
        "usemem: missing SIZE (usage: usemem SIZE [--random] [--passes N] [--nap DURATION] \
         [--seed N] [--data KIND] [--hold])"
    );
    // Whatever the workload, an unknown option or a stray word gets the usage line once.
    for &w in WORKLOADS {
        let tail = format!(" (usage: {})", usage(w).unwrap());
        for a in [
            &["--no-such-option"][..],
            &["1M", "2M", "3M", "--file", "f"][..],
        ] {
            let e = build_err(w, a);
            assert!(e.starts_with(&format!("{w}: ")), "{e}");
            assert!(e.ends_with(&tail), "{e}");
            assert_eq!(e.matches("(usage: ").count(), 1, "{e}");
        }
    }
}

#[test]
fn unknown_workloads_list_the_known_ones() {
    let e = build_err("frobnicate", &["1M"]);
    assert_eq!(
        e,
        format!(
            "unknown workload 'frobnicate' (known: {})",
            WORKLOADS.join(", ")
        )
    );
    assert!(!e.contains("usage"));
}
