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

/// A chart's y axis: its unit, range, tick values and tick labels.
type YAxis = (String, Vec<f64>, Vec<f64>, Vec<String>);

/// Each chart's y axis in the page's plotly JSON.
fn y_axes(html: &str) -> Vec<YAxis> {
    let mut out = Vec::new();
    for part in html.split("\"yaxis\":").skip(1) {
        let mut depth = 0;
        let mut end = 0;
        for (i, c) in part.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let obj = &part[..end];
        // The items of a flat JSON list (numbers, or strings without commas or quotes).
        let list = |k: &str| -> Vec<String> {
            let Some(i) = obj.find(&format!("\"{k}\":[")) else {
                return Vec::new();
            };
            let rest = &obj[i + k.len() + 4..];
            let items = &rest[..rest.find(']').expect("a closed list")];
            items
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.trim_matches('"').to_string())
                .collect()
        };
        let nums = |k: &str| -> Vec<f64> {
            list(k)
                .iter()
                .map(|s| s.parse().expect("a number"))
                .collect()
        };
        let text = list("ticktext");
        let unit = obj
            .split("\"text\":\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_default()
            .to_string();
        out.push((unit, nums("range"), nums("tickvals"), text));
    }
    out
}

/// The y axes start at 0 with ticks computed by memcgsim: bytes in binary units (`512 MiB`,
/// `1 GiB`), counts without plotly's `B` (billion), nothing below 0 (an all-zero series
/// included).
fn check_y_axes(html: &str) {
    let axes = y_axes(html);
    assert!(!axes.is_empty(), "no chart axes found");
    let mut binary = 0;
    for (unit, range, vals, text) in &axes {
        assert_eq!(range.len(), 2, "{unit}: no explicit range");
        assert_eq!(range[0], 0.0, "{unit}: the axis does not start at 0");
        assert!(range[1] > 0.0, "{unit}: an empty axis");
        assert!(
            !vals.is_empty() && vals.len() == text.len(),
            "{unit}: {vals:?} {text:?}"
        );
        assert!(
            vals.iter().all(|&v| (0.0..=range[1]).contains(&v)),
            "{unit}: {vals:?}"
        );
        for label in text {
            assert!(!label.starts_with('-'), "{unit}: tick {label}");
            if unit == "bytes" {
                let ok = label == "0"
                    || ["KiB", "MiB", "GiB", "TiB", " B"]
                        .iter()
                        .any(|s| label.ends_with(s));
                assert!(ok, "a byte tick not in binary units: {label}");
                binary += usize::from(label.ends_with("iB"));
            } else {
                assert!(!label.ends_with('B'), "{unit}: tick {label}");
            }
        }
    }
    assert!(binary > 0, "no byte axis was labelled in KiB, MiB or GiB");
}

/// The summary comes first, then the table of contents, the charts and the long tables;
/// every entry of the contents leads to an anchor of the page.
fn check_order_and_contents(html: &str, long_table: &str) {
    let body = &html[html.find("<body>").expect("a body")..];
    let at = |what: &str| {
        body.find(what)
            .unwrap_or_else(|| panic!("the page has no {what}"))
    };
    let (summary, toc, charts, tables) = (
        at("<h2 id=\"summary\">"),
        at("<nav id=\"toc\">"),
        at("class=\"chart\""),
        at(long_table),
    );
    assert!(
        summary < toc && toc < charts && charts < tables,
        "page order"
    );
    let nav = &body[toc..toc + body[toc..].find("</nav>").unwrap()];
    let links: Vec<&str> = nav
        .split("href=\"#")
        .skip(1)
        .map(|l| &l[..l.find('"').unwrap()])
        .collect();
    assert!(links.len() > 5, "{nav}");
    for l in &links {
        assert!(
            body.contains(&format!("id=\"{l}\"")),
            "the contents link #{l} leads nowhere"
        );
    }
    assert!(links.contains(&"charts") && links.contains(&"summary"));
}

/// The base variant's line is drawn first and widest in every chart, as in the PNGs.
fn check_base_line_widest(html: &str) {
    for plot in html.split("Plotly.newPlot(").skip(1) {
        let widths: Vec<f64> = plot
            .split("\"line\":{\"width\":")
            .skip(1)
            .map(|w| w[..w.find([',', '}']).unwrap()].parse().unwrap())
            .collect();
        if widths.len() > 1 {
            assert!(widths[1..].iter().all(|&w| w < widths[0]), "{widths:?}");
        }
    }
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
    check_y_axes(&html);
    // This scenario has all-zero panels (no swap without pressure): their axes run from 0
    // (to 1 MiB, or 1), not around 0.
    assert!(y_axes(&html)
        .iter()
        .any(|a| a.1 == [0.0, 1.0] || a.1 == [0.0, 1048576.0]));
    check_order_and_contents(&html, "<table class=\"figure\"");
    check_base_line_widest(&html);
    // The summary holds the headline figures with their change against the base.
    let headlines = html.split("<table id=\"headlines\">").nth(1).unwrap();
    let headlines = &headlines[..headlines.find("</table>").unwrap()];
    assert!(headlines.contains("elapsed (s) of task ws"), "{headlines}");
    assert!(
        headlines.contains("peak usage (MiB) of the machine"),
        "{headlines}"
    );
    assert!(headlines.contains("%]</td>"), "{headlines}");

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
    // The axes as drawn: binary units, nothing below 0.
    let ticks: Vec<&str> = dom
        .split("class=\"ytick\"")
        .skip(1)
        .filter_map(|t| {
            let t = &t[t.find("<text")?..];
            let t = &t[t.find('>')? + 1..];
            Some(&t[..t.find('<')?])
        })
        .collect();
    assert!(ticks.iter().any(|t| t.ends_with("MiB")), "{ticks:?}");
    assert!(
        !ticks
            .iter()
            .any(|t| t.starts_with('\u{2212}') || t.starts_with('-')),
        "{ticks:?}"
    );
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
    check_y_axes(&html);
    check_order_and_contents(&html, "<pre id=\"report\">");
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

#[test]
fn an_html_folder_that_cannot_be_made_fails_before_the_run() {
    let d = scratch("html-bad-path");
    let out = d.join("r");
    let o = Command::new(env!("CARGO_BIN_EXE_memcgsim"))
        .args(["run", SCENARIO, "--no-progress", "--out"])
        .arg(&out)
        .args(["--html", "/proc/memcgsim-page"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run memcgsim");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/proc/memcgsim-page: cannot make a results folder there"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "the run ran");
    assert!(!out.exists(), "results were written");
}
