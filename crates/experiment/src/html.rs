//! Self-contained HTML reports (`compare --html DIR`, `run --html DIR`): one page with, in
//! this order, a summary (a comparison's headline figures, each variant's average and its
//! change against the base; a run's outcomes and peaks), a table of contents, interactive
//! time-series charts (plotly.js, embedded in the page: no network needed), then the long
//! tables (a comparison's min/max/avg/std and changes against the base, exactly as `compare`
//! prints them; a run's summary as `run` prints it), the simulated machine's settings and
//! the command that made the page.
//!
//! The charts draw what the PNG charts draw: the same lines, colours and widths (the base
//! variant's line widest and first, so a variant that coincides with it stays visible), and
//! the same y ticks from 0, labelled here in binary units for bytes (`512 MiB`, `1 GiB`) and
//! with SI suffixes for rates (`12k`); the ticks are computed here, not by plotly.js, whose
//! own would say `2B` (billion) of bytes and go below 0 for a series that is all 0.
//!
//! The page records its own health for tests and readers: `data-js-errors` on `<body>` counts
//! the script errors seen, and `data-charts` the charts plotly.js drew, once the page has
//! loaded.
//! Everything here is a function of the results and the command line: equal runs give
//! byte-identical pages.

use std::fmt::Write as _;

use plotly::common::{DashType, ExponentFormat, Line, Mode, Title};
use plotly::layout::{Axis, HoverMode, Layout, Shape, ShapeLine, ShapeType, TicksDirection};
use plotly::{Plot, Scatter};

use crate::charts::{compare_panels, run_panels, PanelData};
use crate::compare::{Comparison, Figure};
use crate::runner::RunResult;
use crate::scenario::Setting;
use crate::units;

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
.chart{height:340px;margin-bottom:1em}nav ol.charts{columns:2;font-size:90%}pre{background:#f6f6f6;padding:0.5em}";

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

/// An interactive chart of a panel: a line per series as the PNG chart draws it (colour,
/// width, dashed), a dotted vertical line per controller action, the y axis named by its
/// unit, from 0 with the PNG chart's ticks.
fn chart(id: &str, p: &PanelData) -> String {
    let mut plot = Plot::new();
    for l in &p.lines {
        let x: Vec<f64> = l.points.iter().map(|q| q.0).collect();
        let y: Vec<f64> = l.points.iter().map(|q| q.1).collect();
        let mut line = Line::new().width(f64::from(l.width)).color(l.color.clone());
        if l.dashed {
            line = line.dash(DashType::Dash);
        }
        plot.add_trace(
            Scatter::new(x, y)
                .name(l.label.as_str())
                .mode(Mode::Lines)
                .line(line),
        );
    }
    let bytes = p.unit == "bytes";
    let (vals, text): (Vec<f64>, Vec<String>) = p.y_ticks.iter().cloned().unzip();
    let y = Axis::new()
        .title(Title::with_text(p.unit))
        .range(vec![0.0, p.y_end])
        .tick_values(vals)
        .tick_text(text)
        .ticks(TicksDirection::Outside)
        // Hover values exact: whole bytes, other values with up to two decimals.
        .hover_format(if bytes { ",.0f" } else { ",.2~f" });
    let mut layout = Layout::new()
        .title(Title::with_text(p.title.as_str()))
        .hover_mode(HoverMode::XUnified)
        .x_axis(
            Axis::new()
                .title(Title::with_text("time (s)"))
                .exponent_format(ExponentFormat::None),
        )
        .y_axis(y);
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
        "<div class=\"chart\" id=\"{id}-box\">{}</div>\n",
        plot.to_inline_html(Some(id))
    )
}

/// The charts of a page with a heading each chart can be reached by, and their entries
/// in the table of contents.
fn charts_section(heading: &str, panels: &[PanelData], toc: &mut Toc, b: &mut String) {
    toc.section("charts", heading, b);
    let mut entries = Vec::new();
    for (i, p) in panels.iter().enumerate() {
        let id = format!("chart-{i}");
        entries.push((format!("{id}-box"), p.title.clone()));
        b.push_str(&chart(&id, p));
    }
    toc.sub(entries);
}

/// An entry of the table of contents: the anchor and the text of a link.
type Link = (String, String);

/// The table of contents: the sections in page order, with the charts under theirs.
#[derive(Default)]
struct Toc {
    entries: Vec<(Link, Vec<Link>)>,
}

impl Toc {
    /// Start a section: its heading, an anchor, and its entry.
    fn section(&mut self, id: &str, heading: &str, b: &mut String) {
        let _ = writeln!(b, "<h2 id=\"{id}\">{}</h2>", esc(heading));
        self.entries
            .push(((id.to_string(), heading.to_string()), Vec::new()));
    }

    fn sub(&mut self, subs: Vec<Link>) {
        if let Some(last) = self.entries.last_mut() {
            last.1 = subs;
        }
    }

    fn html(&self) -> String {
        let mut s = String::from("<nav id=\"toc\"><h2>Contents</h2><ol>");
        for ((id, heading), subs) in &self.entries {
            let _ = write!(s, "<li><a href=\"#{id}\">{}</a>", esc(heading));
            if !subs.is_empty() {
                s.push_str("<ol class=\"charts\">");
                for (sid, title) in subs {
                    let _ = write!(s, "<li><a href=\"#{sid}\">{}</a></li>", esc(title));
                }
                s.push_str("</ol>");
            }
            s.push_str("</li>");
        }
        s.push_str("</ol></nav>\n");
        s
    }
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

fn footer(command: &str, toc: &mut Toc, b: &mut String) {
    toc.section("made", "How this page was made", b);
    let _ = writeln!(
        b,
        "<pre id=\"command\">{}</pre><p>memcgsim {}</p>",
        esc(command),
        env!("CARGO_PKG_VERSION")
    );
}

/// The figures a comparison's summary shows, by the start of their titles: what a reader
/// looks at first (time taken, memory and swap at their peak, major faults, OOM kills,
/// memory stalls).
const HEADLINES: &[&str] = &[
    "elapsed ",
    "peak usage ",
    "swap peak ",
    "pgmajfault ",
    "majflt ",
    "oom_kill ",
    "memory stall some ",
];

fn is_headline(f: &Figure) -> bool {
    HEADLINES.iter().any(|h| f.title.starts_with(h))
}

/// The page of a comparison (`compare --html`).
pub fn compare_html(c: &Comparison, command: &str) -> String {
    let mut head = String::new();
    let _ = write!(head, "<h1>{}</h1>", esc(&c.scenario));
    if !c.description.is_empty() {
        let _ = write!(head, "<p id=\"description\">{}</p>", esc(&c.description));
    }
    let seeds: Vec<String> = c.seeds.iter().map(|x| x.to_string()).collect();
    let _ = writeln!(
        head,
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
    let mut toc = Toc::default();
    let mut b = String::new();

    // The summary: each headline figure's average per variant, with its bracket.
    toc.section("summary", "Summary", &mut b);
    b.push_str("<table id=\"headlines\"><tr><th class=\"l\">figure (average)</th>");
    for v in &c.variants {
        let _ = write!(b, "<th>{}</th>", esc(v));
    }
    b.push_str("</tr>");
    for f in c.figures.iter().filter(|f| is_headline(f)) {
        let _ = write!(b, "<tr><td class=\"l\">{}</td>", esc(&f.title));
        for v in &c.variants {
            match f.rows.iter().find(|r| &r.variant == v) {
                Some(r) => {
                    let [_, _, avg, _] = c.stat_cells(f, r);
                    let _ = write!(b, "<td>{}</td>", esc(&avg));
                }
                None => b.push_str("<td>-</td>"),
            }
        }
        b.push_str("</tr>");
    }
    b.push_str("</table>\n");
    if !c.outcomes.is_empty() {
        b.push_str("<table id=\"outcomes\"><tr><th class=\"l\">task</th><th class=\"l\">variant</th><th class=\"l\">outcomes (task runs)</th></tr>");
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

    charts_section(
        "Time series (each variant's run with the first seed)",
        &compare_panels(c),
        &mut toc,
        &mut b,
    );

    toc.section("figures", "Figures", &mut b);
    for f in &c.figures {
        let _ = write!(
            b,
            "<table class=\"figure\" data-title=\"{0}\"><tr><th class=\"l\">{0}</th><th>min</th><th>max</th><th>avg</th><th>std</th><th>runs</th></tr>",
            esc(&f.title)
        );
        for r in &f.rows {
            let cells = c.stat_cells(f, r);
            let _ = write!(b, "<tr><td class=\"l\">{}</td>", esc(&r.variant));
            for cell in &cells {
                let _ = write!(b, "<td>{}</td>", esc(cell));
            }
            let _ = write!(b, "<td>{}</td></tr>", r.stats.runs);
        }
        b.push_str("</table>\n");
    }
    toc.section("machines", "Machines", &mut b);
    for r in &c.first_seed_runs {
        let _ = write!(b, "<h3>{}</h3>", esc(&r.variant));
        b.push_str(&settings_table(&r.setup.machine));
    }
    footer(command, &mut toc, &mut b);
    head.push_str(&toc_after_summary(&b, &toc));
    page(&format!("{}: comparison", c.scenario), &head)
}

/// The body with the table of contents put right after the summary section.
fn toc_after_summary(body: &str, toc: &Toc) -> String {
    let split = body.find("<h2 id=\"charts\">").unwrap_or(0);
    format!("{}{}{}", &body[..split], toc.html(), &body[split..])
}

/// The page of one run (`run --html`).
pub fn run_html(r: &RunResult, command: &str) -> String {
    let mut head = String::new();
    let _ = write!(
        head,
        "<h1>{} / {} / seed {}</h1>",
        esc(&r.scenario),
        esc(&r.variant),
        r.seed
    );
    let mut toc = Toc::default();
    let mut b = String::new();
    toc.section("summary", "Summary", &mut b);
    let _ = write!(
        b,
        "<p>ran {} of virtual time (cgroup {})</p>",
        esc(&units::fmt_ns(r.end_ns)),
        esc(&r.cgroup_version)
    );
    if !r.description.is_empty() {
        let _ = write!(b, "<p id=\"description\">{}</p>", esc(&r.description));
    }
    b.push_str("<table id=\"headlines\"><tr><th class=\"l\">task</th><th class=\"l\">outcome</th><th>elapsed</th><th>majflt</th></tr>");
    for t in &r.tasks {
        let started = t.start_ns.is_some();
        let shown = |s: String| if started { s } else { "-".to_string() };
        let _ = write!(
            b,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.name),
            esc(&t.outcome),
            esc(&shown(units::fmt_ns(t.elapsed_ns))),
            esc(&shown(t.majflt.to_string()))
        );
    }
    b.push_str("</table>\n<table id=\"peaks\"><tr><th class=\"l\">cgroup</th><th>peak</th><th>swap peak</th><th>oom_kill</th></tr>");
    for c in &r.cgroups {
        let size = |v: Option<u64>| v.map_or_else(|| "-".to_string(), units::fmt_size);
        let _ = write!(
            b,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.cgroup_name(&c.cgroup)),
            esc(&size(c.usage_peak)),
            esc(&size(c.swap_peak)),
            c.oom_kill
                .map_or_else(|| "-".to_string(), |v| v.to_string())
        );
    }
    b.push_str("</table>\n");
    charts_section("Time series", &run_panels(r), &mut toc, &mut b);
    toc.section("report", "Report (as memcgsim run prints it)", &mut b);
    let _ = writeln!(b, "<pre id=\"report\">{}</pre>", esc(&r.render()));
    toc.section("machine", "Machine", &mut b);
    b.push_str(&settings_table(&r.setup.machine));
    footer(command, &mut toc, &mut b);
    head.push_str(&toc_after_summary(&b, &toc));
    page(&format!("{} / {}", r.scenario, r.variant), &head)
}
