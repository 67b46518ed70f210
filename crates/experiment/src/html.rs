//! Self-contained HTML reports (`compare --html DIR`, `run --html DIR`): one page with the
//! scenario, the tables the text report prints (a comparison's min/max/avg/std and changes
//! against the base, exactly as `compare` prints them; a run's cgroup and task tables),
//! interactive time-series charts (plotly.js, embedded in the page: no network needed), the
//! simulated machine's settings and the command that made the page.
//!
//! The page records its own health for tests and readers: `data-js-errors` on `<body>` counts
//! the script errors seen, and `data-charts` the charts plotly.js drew, once the page has
//! loaded.
//! Everything here is a function of the results and the command line: equal runs give
//! byte-identical pages.

use std::fmt::Write as _;

use plotly::common::{DashType, Line, Mode, Title};
use plotly::layout::{Axis, HoverMode, Layout, Shape, ShapeLine, ShapeType};
use plotly::{Plot, Scatter};

use crate::charts::{compare_panels, run_panels, PanelData};
use crate::compare::Comparison;
use crate::runner::RunResult;
use crate::scenario::Setting;

/// Text for an HTML text node or attribute.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The plotly.js library, once per page (the crate's bundle, without the MathJax it also
/// carries, which these charts do not use).
fn plotly_js() -> String {
    let all = Plot::offline_js_sources();
    let end = all
        .find("</script>")
        .map_or(all.len(), |i| i + "</script>".len());
    all[..end].to_string()
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1200px}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}\
td,th{border:1px solid #bbb;padding:3px 8px;text-align:right;font-variant-numeric:tabular-nums}\
th{background:#eee}td.l,th.l{text-align:left}h2{margin-top:1.5em}\
.chart{height:340px;margin-bottom:1em}pre{background:#f6f6f6;padding:0.5em}";

/// Counts script errors from the start, and marks the page once loaded.
const HEALTH_HEAD: &str = "<script>window.__mcgErrors=0;\
window.addEventListener('error',function(){window.__mcgErrors++;});</script>";
const HEALTH_TAIL: &str = "<script>window.addEventListener('load',function(){\
document.body.setAttribute('data-js-errors',String(window.__mcgErrors));\
document.body.setAttribute('data-charts',String(document.querySelectorAll('.chart .js-plotly-plot').length));});</script>";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>{STYLE}</style>{HEALTH_HEAD}{}</head><body>\n{body}\n{HEALTH_TAIL}</body></html>\n",
        esc(title),
        plotly_js()
    )
}

/// An interactive chart of a panel: a line per series (dashed where the SVG chart dashes
/// it), a dotted vertical line per controller action, the y axis named by its unit.
fn chart(id: &str, p: &PanelData) -> String {
    let mut plot = Plot::new();
    for (label, pts, dashed) in &p.lines {
        let x: Vec<f64> = pts.iter().map(|q| q.0).collect();
        let y: Vec<f64> = pts.iter().map(|q| q.1).collect();
        let mut line = Line::new();
        if *dashed {
            line = line.dash(DashType::Dash);
        }
        plot.add_trace(
            Scatter::new(x, y)
                .name(label.as_str())
                .mode(Mode::Lines)
                .line(line),
        );
    }
    let mut layout = Layout::new()
        .title(Title::with_text(p.title.as_str()))
        .hover_mode(HoverMode::XUnified)
        .x_axis(Axis::new().title(Title::with_text("time (s)")))
        .y_axis(Axis::new().title(Title::with_text(p.unit)));
    for (t, label) in &p.marks {
        layout.add_shape(
            Shape::new()
                .shape_type(ShapeType::Line)
                .x_ref("x")
                .y_ref("paper")
                .x0(*t)
                .x1(*t)
                .y0(0)
                .y1(1)
                .name(label.as_str())
                .line(ShapeLine::new().dash(DashType::Dot)),
        );
    }
    plot.set_layout(layout);
    format!(
        "<div class=\"chart\">{}</div>\n",
        plot.to_inline_html(Some(id))
    )
}

fn settings_table(machine: &[Setting]) -> String {
    let mut s = String::from("<table><tr><th class=\"l\">key</th><th class=\"l\">value</th></tr>");
    for m in machine {
        let _ = write!(
            s,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&m.key),
            esc(&m.value)
        );
    }
    s.push_str("</table>\n");
    s
}

fn footer(command: &str) -> String {
    format!(
        "<h2>How this page was made</h2><pre id=\"command\">{}</pre><p>memcgsim {}</p>\n",
        esc(command),
        env!("CARGO_PKG_VERSION")
    )
}

/// The page of a comparison (`compare --html`).
pub fn compare_html(c: &Comparison, command: &str) -> String {
    let mut b = String::new();
    let _ = write!(b, "<h1>{}</h1>", esc(&c.scenario));
    if !c.description.is_empty() {
        let _ = write!(b, "<p id=\"description\">{}</p>", esc(&c.description));
    }
    let seeds: Vec<String> = c.seeds.iter().map(|x| x.to_string()).collect();
    let _ = writeln!(
        b,
        "<p>variants: {} (base: {}); seeds: {}; [%] is {}</p>",
        esc(&c.variants.join(", ")),
        esc(&c.base),
        seeds.join(", "),
        if c.ratio {
            "the statistic as a percentage of the base's same statistic"
        } else {
            "the change against the base's same statistic"
        }
    );
    if !c.outcomes.is_empty() {
        b.push_str("<h2>Outcomes (task runs)</h2><table id=\"outcomes\"><tr><th class=\"l\">task</th><th class=\"l\">variant</th><th class=\"l\">outcomes</th></tr>");
        for o in &c.outcomes {
            for (vn, m) in &o.by_variant {
                let parts: Vec<String> = m.iter().map(|(k, n)| format!("{k} x{n}")).collect();
                let _ = write!(
                    b,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                    esc(&o.task),
                    esc(vn),
                    esc(&parts.join(", "))
                );
            }
        }
        b.push_str("</table>\n");
    }
    b.push_str("<h2>Figures</h2>\n");
    for f in &c.figures {
        let _ = write!(
            b,
            "<table class=\"figure\" data-title=\"{0}\"><tr><th class=\"l\">{0}</th><th>min</th><th>max</th><th>avg</th><th>std</th><th>runs</th></tr>",
            esc(&f.title)
        );
        for r in &f.rows {
            let cells = c.stat_cells(r);
            let _ = write!(b, "<tr><td class=\"l\">{}</td>", esc(&r.variant));
            for cell in &cells {
                let _ = write!(b, "<td>{}</td>", esc(cell));
            }
            let _ = write!(b, "<td>{}</td></tr>", r.stats.runs);
        }
        b.push_str("</table>\n");
    }
    b.push_str("<h2>Time series (each variant's run with the first seed)</h2>\n");
    for (i, p) in compare_panels(c).iter().enumerate() {
        b.push_str(&chart(&format!("chart-{i}"), p));
    }
    b.push_str("<h2>Machines</h2>\n");
    for r in &c.first_seed_runs {
        let _ = write!(b, "<h3>{}</h3>", esc(&r.variant));
        b.push_str(&settings_table(&r.setup.machine));
    }
    b.push_str(&footer(command));
    page(&format!("{}: comparison", c.scenario), &b)
}

/// The page of one run (`run --html`).
pub fn run_html(r: &RunResult, command: &str) -> String {
    let mut b = String::new();
    let _ = write!(
        b,
        "<h1>{} / {} / seed {}</h1>",
        esc(&r.scenario),
        esc(&r.variant),
        r.seed
    );
    let _ = writeln!(b, "<pre id=\"summary\">{}</pre>", esc(&r.render()));
    b.push_str("<h2>Time series</h2>\n");
    for (i, p) in run_panels(r).iter().enumerate() {
        b.push_str(&chart(&format!("chart-{i}"), p));
    }
    b.push_str("<h2>Machine</h2>\n");
    b.push_str(&settings_table(&r.setup.machine));
    b.push_str(&footer(command));
    page(&format!("{} / {}", r.scenario, r.variant), &b)
}
