//! The charts' SVG, read back element by element: the machine's line beneath the cgroups',
//! legends beside the plotting areas, tick labels and axis units, and the overlay charts of
//! `compare`.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::{scenario, scratch};
use memcgsim_experiment::{
    compare, render_charts, run_variant, write_comparison, Overwrite, COMPARE_CHARTS, MACHINE_ROW,
    MARKER,
};

/// Two cgroups under pressure: memory in the tens of MiB, fault and scan rates in the
/// thousands per second and more.
const TWO_GROUPS: &str = r#"name = "two"

[machine]
memory = "64M"
swap = "32M"

[[cgroup]]
path = "/grp"
files = { "memory.max" = "32M" }

[[cgroup]]
path = "/tight"
files = { "memory.max" = "6M" }

[[task]]
name = "eater"
cgroup = "/grp"
workload = "anon"
args = ["20M"]

[[task]]
name = "squeezed"
cgroup = "/tight"
workload = "anon"
args = ["10M", "--passes", "2"]
start = "5ms"

[run]
duration = "30s"
sample = "2ms"
seeds = [7, 8]

[[variant]]
name = "roomy"

[[variant]]
name = "tight"
cgroup = { "/grp" = { "memory.max" = "12M" } }
"#;

// ------------------------------------------------------------------ reading SVG

/// One SVG element: its name, attributes and, for `<text>`, its content.
#[derive(Debug)]
struct El {
    name: String,
    attrs: BTreeMap<String, String>,
    text: String,
}

impl El {
    fn attr(&self, k: &str) -> &str {
        self.attrs.get(k).map(|s| s.as_str()).unwrap_or("")
    }

    fn num(&self, k: &str) -> f64 {
        self.attr(k)
            .parse()
            .unwrap_or_else(|_| panic!("{k} of {self:?}"))
    }

    fn points(&self) -> Vec<(f64, f64)> {
        self.attr("points")
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    /// A line's style: stroke colour and width.
    fn style(&self) -> (String, String) {
        (
            self.attr("stroke").to_string(),
            self.attr("stroke-width").to_string(),
        )
    }
}

/// The elements of an SVG in document order (plotters writes one tag per line, and a text's
/// content on the line after its opening tag).
fn elements(svg: &str) -> Vec<El> {
    let mut out: Vec<El> = Vec::new();
    let mut lines = svg.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix('<') else {
            continue;
        };
        if rest.starts_with('/') || rest.starts_with('?') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let mut attrs = BTreeMap::new();
        let mut s = &rest[name.len()..];
        while let Some(eq) = s.find("=\"") {
            let key = s[..eq].trim().to_string();
            let after = &s[eq + 2..];
            let end = after.find('"').unwrap();
            attrs.insert(key, after[..end].to_string());
            s = &after[end + 1..];
        }
        let text = if name == "text" {
            lines.next().unwrap_or("").trim().to_string()
        } else {
            String::new()
        };
        out.push(El { name, attrs, text });
    }
    out
}

/// A box in pixels: x0 <= x1, y0 <= y1.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Box2 {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Box2 {
    fn overlaps(&self, o: &Box2) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn contains(&self, (x, y): (f64, f64)) -> bool {
        // Lines are drawn up to the edges; allow a pixel of rounding.
        x >= self.x0 - 1.0 && x <= self.x1 + 1.0 && y >= self.y0 - 1.0 && y <= self.y1 + 1.0
    }
}

/// The plotting areas, top to bottom, from the mesh lines, which span them: vertical lines
/// give a panel's top and bottom, horizontal ones its left and right.
fn plot_boxes(els: &[El]) -> Vec<Box2> {
    let mut ys: Vec<(f64, f64)> = Vec::new();
    let mut xs: Vec<(f64, f64)> = Vec::new();
    for e in els.iter().filter(|e| e.name == "line") {
        let (x1, y1, x2, y2) = (e.num("x1"), e.num("y1"), e.num("x2"), e.num("y2"));
        if x1 == x2 {
            let r = (y1.min(y2), y1.max(y2));
            if !ys.contains(&r) {
                ys.push(r);
            }
        } else if y1 == y2 {
            let r = (x1.min(x2), x1.max(x2));
            if !xs.contains(&r) {
                xs.push(r);
            }
        }
    }
    assert_eq!(xs.len(), 1, "every panel spans the same width: {xs:?}");
    ys.sort_by(|a, b| a.0.total_cmp(&b.0));
    ys.iter()
        .map(|&(y0, y1)| Box2 {
            x0: xs[0].0,
            y0,
            x1: xs[0].1,
            y1,
        })
        .collect()
}

/// A legend: its box and its entries (label and line style), in order.
#[derive(Debug)]
struct Legend {
    frame: Box2,
    entries: Vec<(String, (String, String))>,
}

/// The legends: each is a frame (`<rect fill="none">`) followed by a line sample and a
/// label per entry.
fn legends(els: &[El]) -> Vec<Legend> {
    let mut out: Vec<Legend> = Vec::new();
    let mut i = 0;
    while i < els.len() {
        let e = &els[i];
        i += 1;
        if e.name != "rect" || e.attr("fill") != "none" {
            continue;
        }
        let (x, y) = (e.num("x"), e.num("y"));
        let frame = Box2 {
            x0: x,
            y0: y,
            x1: x + e.num("width"),
            y1: y + e.num("height"),
        };
        let mut entries = Vec::new();
        while i + 1 < els.len()
            && els[i].name == "polyline"
            && els[i + 1].name == "text"
            && els[i].points().iter().all(|&p| frame.contains(p))
        {
            entries.push((els[i + 1].text.clone(), els[i].style()));
            i += 2;
        }
        out.push(Legend { frame, entries });
    }
    out
}

/// The data lines of a plotting area, in document order: polylines of three points or more
/// (axes and ticks have two) lying in it.
fn data_lines<'a>(els: &'a [El], plot: &Box2) -> Vec<&'a El> {
    els.iter()
        .filter(|e| e.name == "polyline")
        .filter(|e| {
            let p = e.points();
            p.len() >= 3 && p.iter().all(|&q| plot.contains(q))
        })
        .collect()
}

/// Tick labels: texts that are a number with an optional suffix.
fn tick_labels(els: &[El]) -> Vec<&El> {
    els.iter()
        .filter(|e| e.name == "text")
        .filter(|e| {
            let t = e.text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            !t.is_empty() && t.parse::<f64>().is_ok()
        })
        .collect()
}

/// The y-axis descriptions: the rotated texts.
fn y_descs(els: &[El]) -> Vec<&str> {
    els.iter()
        .filter(|e| e.name == "text" && e.attr("transform").starts_with("rotate"))
        .map(|e| e.text.as_str())
        .collect()
}

/// The y tick labels of each panel (right-aligned texts, by the panel they are beside).
fn y_ticks_by_panel<'a>(els: &'a [El], plots: &[Box2]) -> Vec<Vec<&'a str>> {
    let mut out = vec![Vec::new(); plots.len()];
    for e in tick_labels(els) {
        if e.attr("text-anchor") != "end" {
            continue;
        }
        let y = e.num("y");
        if let Some(i) = plots
            .iter()
            .position(|b| y >= b.y0 - 1.0 && y <= b.y1 + 1.0)
        {
            out[i].push(e.text.as_str());
        }
    }
    out
}

fn read_svg(dir: &Path, stem: &str) -> Vec<El> {
    let p = dir.join(format!("{stem}.svg"));
    elements(&fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
}

// ------------------------------------------------------------------ tests

#[test]
fn svg_reader_finds_boxes_legends_and_lines() {
    // The reader itself, on a hand-written document, so the chart tests cannot pass
    // vacuously.
    let svg = r##"<svg width="300" height="200" xmlns="http://www.w3.org/2000/svg">
<line opacity="0.1" stroke="#000000" stroke-width="1" x1="10" y1="100" x2="10" y2="20"/>
<line opacity="0.1" stroke="#000000" stroke-width="1" x1="10" y1="50" x2="200" y2="50"/>
<polyline fill="none" opacity="1" stroke="#000000" stroke-width="1" points="10,100 10,20 "/>
<text x="8" y="60" dy="0.5ex" text-anchor="end" font-family="sans-serif" font-size="9" opacity="1" fill="#000000">
1.5M
</text>
<polyline fill="none" opacity="1" stroke="#000000" stroke-width="1" points="10,100 50,60 200,30 "/>
<polyline fill="none" opacity="1" stroke="#1F77B4" stroke-width="2" points="10,100 50,90 200,80 "/>
<rect x="210" y="20" width="80" height="40" opacity="1" fill="none" stroke="#000000"/>
<polyline fill="none" opacity="1" stroke="#000000" stroke-width="1" points="218,30 242,30 "/>
<text x="250" y="30" dy="0.5ex" text-anchor="start" font-family="sans-serif" font-size="9" opacity="1" fill="#000000">
machine
</text>
<polyline fill="none" opacity="1" stroke="#1F77B4" stroke-width="2" points="218,46 242,46 "/>
<text x="250" y="46" dy="0.5ex" text-anchor="start" font-family="sans-serif" font-size="9" opacity="1" fill="#000000">
/a
</text>
<text x="5" y="60" text-anchor="middle" transform="rotate(270, 5, 60)">
bytes
</text>
</svg>
"##;
    let els = elements(svg);
    let plots = plot_boxes(&els);
    assert_eq!(
        plots,
        [Box2 {
            x0: 10.0,
            y0: 20.0,
            x1: 200.0,
            y1: 100.0
        }]
    );
    let l = legends(&els);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].entries.len(), 2);
    assert_eq!(l[0].entries[1].0, "/a");
    assert!(!l[0].frame.overlaps(&plots[0]));
    let lines = data_lines(&els, &plots[0]);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].style(), l[0].entries[0].1);
    assert_eq!(y_ticks_by_panel(&els, &plots), [vec!["1.5M"]]);
    assert_eq!(y_descs(&els), ["bytes"]);
}

#[test]
fn run_charts_draw_the_machine_first_and_keep_legends_off_the_data() {
    let sc = scenario(TWO_GROUPS);
    let r = run_variant(&sc, "roomy", 7, false).unwrap();
    let tmp = scratch();
    let d = tmp.path();
    render_charts(&r, d).unwrap();
    for (stem, unit) in [
        ("usage", "bytes"),
        ("faults", "faults/s"),
        ("reclaim", "pages/s"),
    ] {
        let els = read_svg(d, stem);
        let plots = plot_boxes(&els);
        assert_eq!(plots.len(), 2, "{stem}: two panels");
        let legends = legends(&els);
        assert_eq!(legends.len(), 2, "{stem}: a legend per panel");
        for (plot, legend) in plots.iter().zip(&legends) {
            // The legend sits beside its panel, clear of every plotting area.
            for p in &plots {
                assert!(
                    !legend.frame.overlaps(p),
                    "{stem}: legend {:?} overlaps the plotting area {p:?}",
                    legend.frame
                );
            }
            assert!(
                legend.frame.x0 > plot.x1,
                "{stem}: legend right of the plot"
            );
            let labels: Vec<&str> = legend.entries.iter().map(|e| e.0.as_str()).collect();
            assert_eq!(labels, [MACHINE_ROW, "/grp", "/tight"], "{stem}");
            let styles: Vec<_> = legend.entries.iter().map(|e| e.1.clone()).collect();
            for (i, s) in styles.iter().enumerate() {
                assert!(!styles[..i].contains(s), "{stem}: styles are distinct");
            }
            // One line per legend entry, the machine's first in document order, so the
            // cgroups' lines are drawn over it.
            let lines = data_lines(&els, plot);
            let order: Vec<&str> = lines
                .iter()
                .map(|l| {
                    let st = l.style();
                    legend
                        .entries
                        .iter()
                        .find(|e| e.1 == st)
                        .map(|e| e.0.as_str())
                        .unwrap_or_else(|| panic!("{stem}: a line of no legend entry: {l:?}"))
                })
                .collect();
            assert_eq!(order, [MACHINE_ROW, "/grp", "/tight"], "{stem}");
        }

        // Tick labels: no trailing zeros after the point; large values with a suffix.
        let ticks = tick_labels(&els);
        assert!(ticks.len() > 20, "{stem}: {} tick labels", ticks.len());
        for t in &ticks {
            let num = t.text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            assert!(
                !(num.contains('.') && num.ends_with('0')),
                "{stem}: tick label {:?} has a trailing zero",
                t.text
            );
            if num.len() == t.text.len() {
                assert!(
                    num.parse::<f64>().unwrap() < 1000.0,
                    "{stem}: a large tick label without a suffix: {:?}",
                    t.text
                );
            }
        }
        let time_labels: Vec<&str> = ticks
            .iter()
            .filter(|t| t.attr("text-anchor") == "middle")
            .map(|t| t.text.as_str())
            .collect();
        assert!(time_labels.contains(&"0"), "{stem}: {time_labels:?}");

        // Units on the axes.
        assert_eq!(y_descs(&els), [unit, unit], "{stem}");
        let x_descs = els
            .iter()
            .filter(|e| e.name == "text" && e.text == "time (s)")
            .count();
        assert_eq!(x_descs, 2, "{stem}");
    }

    // Memory in bytes with binary suffixes; fault rates in the thousands with SI ones.
    let els = read_svg(d, "usage");
    let y = y_ticks_by_panel(&els, &plot_boxes(&els));
    assert!(y[0].iter().any(|t| t.ends_with('M')), "{:?}", y[0]);
    assert!(y[0].iter().all(|t| *t == "0" || t.ends_with(['K', 'M'])));
    let els = read_svg(d, "faults");
    let y = y_ticks_by_panel(&els, &plot_boxes(&els));
    assert!(y[0].iter().any(|t| t.ends_with(['k', 'M'])), "{:?}", y[0]);
}

#[test]
fn compare_draws_an_overlay_chart_per_figure_with_a_line_per_variant() {
    let sc = scenario(TWO_GROUPS);
    let c = compare(&sc, false).unwrap();
    assert_eq!(c.first_seed_runs.len(), 2);
    assert!(c.first_seed_runs.iter().all(|r| r.seed == 7));
    let tmp = scratch();
    let d = tmp.path();
    let out = d.join("compare");
    write_comparison(&c, &out, Overwrite::Safe).unwrap();

    let mut names: Vec<String> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = vec![MARKER.into(), "compare.json".into(), "compare.txt".into()];
    for stem in COMPARE_CHARTS {
        want.push(format!("{stem}.png"));
        want.push(format!("{stem}.svg"));
    }
    want.sort();
    assert_eq!(names, want);
    assert_eq!(
        COMPARE_CHARTS,
        [
            "memory",
            "swap",
            "pgfault",
            "pgmajfault",
            "pgscan",
            "pgsteal"
        ]
    );

    for stem in COMPARE_CHARTS {
        let png = fs::read(out.join(format!("{stem}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}.png");
        let els = read_svg(&out, stem);
        let plots = plot_boxes(&els);
        assert_eq!(plots.len(), 3, "{stem}: /grp, /tight and the machine");
        let titles: Vec<&str> = els
            .iter()
            .filter(|e| e.name == "text")
            .map(|e| e.text.as_str())
            .filter(|t| t.starts_with("cgroup ") || *t == "machine")
            .collect();
        assert_eq!(
            titles,
            ["cgroup /grp", "cgroup /tight", "machine"],
            "{stem}"
        );
        let legends = legends(&els);
        assert_eq!(legends.len(), 3, "{stem}");
        for (plot, legend) in plots.iter().zip(&legends) {
            for p in &plots {
                assert!(!legend.frame.overlaps(p), "{stem}: legend on a plot");
            }
            let labels: Vec<&str> = legend.entries.iter().map(|e| e.0.as_str()).collect();
            assert_eq!(labels, ["roomy", "tight"], "{stem}");
            assert_ne!(legend.entries[0].1, legend.entries[1].1, "{stem}: styles");
            let lines = data_lines(&els, plot);
            let styles: Vec<_> = lines.iter().map(|l| l.style()).collect();
            let want: Vec<_> = legend.entries.iter().map(|e| e.1.clone()).collect();
            assert_eq!(styles, want, "{stem}: a line per variant, base first");
        }
    }

    // The time series stay out of compare.json.
    let json = fs::read_to_string(out.join("compare.json")).unwrap();
    assert!(!json.contains("times_ns") && !json.contains("first_seed_runs"));
    assert!(
        json.len() < 64 * 1024,
        "compare.json has {} bytes",
        json.len()
    );

    // Byte-identical when done again.
    let again = d.join("again");
    write_comparison(&compare(&sc, false).unwrap(), &again, Overwrite::Safe).unwrap();
    for name in &names {
        assert!(
            fs::read(out.join(name)).unwrap() == fs::read(again.join(name)).unwrap(),
            "{name} differs between two equal comparisons"
        );
    }
}
