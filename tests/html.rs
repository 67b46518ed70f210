//! The HTML reports (`compare --html`, `run --html`): self-contained, the same bytes for the
//! same runs, and, opened in headless Chromium, free of script errors, with every chart
//! drawn, the tables holding exactly the numbers `compare` prints, and a screenshot.
//!
//! The browser part needs Debian's `chromium` (scripts/setup-chromium.sh; $CHROMIUM names
//! another binary). Without it, or with MEMCGSIM_FAST=1, that part is skipped with a note
//! that `cargo test` shows, unless MEMCGSIM_CHROMIUM=1 (set by `.ci/run`), which makes its absence a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

const SCENARIO: &str = "experiments/seed002/streaming/small.toml";

fn memcgsim(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_memcgsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run memcgsim");
    assert!(
        out.status.success(),
        "memcgsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The browser, or why there is none.
fn chromium() -> Result<String, String> {
    if std::env::var("MEMCGSIM_FAST").as_deref() == Ok("1") {
        return Err("MEMCGSIM_FAST=1 runs the fast tier alone".into());
    }
    let name = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into());
    match Command::new(&name).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(name),
        Ok(o) => Err(format!("{name} --version failed ({})", o.status)),
        Err(e) => Err(format!(
            "{name}: {e} (scripts/setup-chromium.sh installs it)"
        )),
    }
}

/// Say that the browser part was skipped, with the set-up command, where `cargo test` shows
/// it without --nocapture: the test harness captures print! and eprint!, not writes to the
/// stderr handle.
fn note_skip(why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "note: browser check skipped: {why}; set it up with `scripts/setup-chromium.sh`, run it with `MEMCGSIM_CHROMIUM=1 cargo test --release --test html`"
    );
}

/// Open a page headless: its DOM once loaded and its scripts have run (virtual time lets
/// them finish), and a screenshot.
fn open(browser: &str, page: &Path, shot: &Path) -> String {
    let url = format!("file://{}", page.display());
    let base = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--virtual-time-budget=20000",
    ];
    let dom = Command::new(browser)
        .args(base)
        .args(["--dump-dom", &url])
        .output()
        .expect("run chromium");
    assert!(dom.status.success(), "chromium --dump-dom {url}");
    let shot_arg = format!("--screenshot={}", shot.display());
    let s = Command::new(browser)
        .args(base)
        .args([shot_arg.as_str(), "--window-size=1280,2000", &url])
        .output()
        .expect("run chromium");
    assert!(s.status.success(), "chromium --screenshot {url}");
    String::from_utf8_lossy(&dom.stdout).into_owned()
}

/// The value of attribute `name` of the first `<tag ...>` in `html`.
fn attr(html: &str, tag: &str, name: &str) -> Option<String> {
    let start = html.find(&format!("<{tag}"))?;
    let end = start + html[start..].find('>')?;
    let open_tag = &html[start..end];
    let k = open_tag.find(&format!("{name}=\""))? + name.len() + 2;
    let v = &open_tag[k..];
    Some(v[..v.find('"')?].to_string())
}

/// The figure tables of a page: title → rows of (variant, [min, max, avg, std], runs).
fn figure_tables(dom: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let mut out = Vec::new();
    for part in dom.split("<table class=\"figure\"").skip(1) {
        let title = part
            .split("data-title=\"")
            .nth(1)
            .and_then(|t| t.split('"').next())
            .unwrap_or_default()
            .replace("&amp;", "&");
        let body = part.split("</table>").next().unwrap_or_default();
        let rows = body
            .split("<tr>")
            .skip(2)
            .map(|r| {
                r.split("<td")
                    .skip(1)
                    .map(|c| {
                        let c = &c[c.find('>').unwrap() + 1..];
                        c[..c.find("</td>").unwrap()].to_string()
                    })
                    .collect()
            })
            .collect();
        out.push((title, rows));
    }
    out
}

/// The figures of compare's text: title → rows of (variant, min, max, avg, std, runs).
fn figure_text(text: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let mut out: Vec<(String, Vec<Vec<String>>)> = Vec::new();
    for line in text.lines() {
        if let Some(t) = line.strip_suffix(':').filter(|_| !line.starts_with(' ')) {
            if !t.starts_with("outcomes") {
                out.push((t.to_string(), Vec::new()));
            }
        } else if let (Some(last), Some(rest)) = (out.last_mut(), line.strip_prefix("  ")) {
            let Some((variant, stats)) = rest.split_once(':') else {
                continue;
            };
            let mut cells = vec![variant.trim().to_string()];
            for key in ["min: ", "max: ", "avg: ", "std: ", "runs: "] {
                let v = stats.split(key).nth(1).unwrap_or_default();
                let end = ["max: ", "avg: ", "std: ", "runs: "]
                    .iter()
                    .filter_map(|k| v.find(k))
                    .min()
                    .unwrap_or(v.len());
                cells.push(v[..end].trim().to_string());
            }
            last.1.push(cells);
        }
    }
    out
}

#[test]
fn compare_page_is_self_contained_deterministic_and_renders() {
    let d = scratch("html-compare");
    let (a, cmp) = (d.join("a"), d.join("cmp"));
    let args = [
        "compare",
        SCENARIO,
        "--out",
        cmp.to_str().unwrap(),
        "--html",
        a.to_str().unwrap(),
        "--no-progress",
        "--force",
    ];
    let text = memcgsim(&args);
    let page = a.join("index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // The same command again: the same bytes.
    memcgsim(&args);
    assert!(
        html == std::fs::read_to_string(&page).unwrap(),
        "the page differs between two equal runs"
    );
    assert!(
        !html.contains("<script src="),
        "the page loads something from elsewhere"
    );
    assert!(html.contains("Plotly.newPlot(\"chart-0\""));
    assert!(html.contains(&format!("memcgsim compare {SCENARIO} --out")));

    let browser = match chromium() {
        Ok(b) => b,
        Err(why) => {
            assert!(
                std::env::var("MEMCGSIM_CHROMIUM").as_deref() != Ok("1"),
                "MEMCGSIM_CHROMIUM=1 but no browser: {why}"
            );
            note_skip(&why);
            return;
        }
    };
    let shot = d.join("compare.png");
    let dom = open(&browser, &page, &shot);
    assert_eq!(attr(&dom, "body", "data-js-errors").as_deref(), Some("0"));
    let charts = html.matches("class=\"chart\"").count();
    assert!(charts >= 10);
    assert_eq!(
        attr(&dom, "body", "data-charts"),
        Some(charts.to_string()),
        "not every chart was drawn"
    );
    // The tables hold what compare printed, figure by figure, cell by cell.
    let want = figure_text(&text);
    let got = figure_tables(&dom);
    assert!(want.len() > 20);
    assert_eq!(got, want);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.len() > 20_000 && png.starts_with(b"\x89PNG"));
}

#[test]
fn run_page_draws_the_runs_charts() {
    let d = scratch("html-run");
    memcgsim(&[
        "run",
        "experiments/pressure/oomd/small.toml",
        "--variant",
        "oomd",
        "--out",
        d.join("r").to_str().unwrap(),
        "--html",
        d.join("p").to_str().unwrap(),
        "--no-progress",
    ]);
    let page = d.join("p/index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("oomd: kill /w/runaway"));
    let browser = match chromium() {
        Ok(b) => b,
        Err(why) => {
            note_skip(&why);
            return;
        }
    };
    let dom = open(&browser, &page, &d.join("run.png"));
    assert_eq!(attr(&dom, "body", "data-js-errors").as_deref(), Some("0"));
    let charts = html.matches("class=\"chart\"").count();
    assert!(charts >= 6);
    assert_eq!(attr(&dom, "body", "data-charts"), Some(charts.to_string()));
}
