//! Charts of a run's time series, drawn with plotters as SVG and PNG: `usage` (memory and
//! swap per cgroup), `faults` (minor and major fault rates) and `reclaim` (pages scanned and
//! reclaimed per second). Text in the PNGs is drawn with a font compiled into the binary
//! (Hack, from the `epaint_default_fonts` crate), so no system font library is needed.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::runner::{RunResult, TimeSeries, MACHINE_ROW};

const WIDTH: u32 = 1000;
const PANEL_HEIGHT: u32 = 330;
const FONT: &str = "sans-serif";

const PALETTE: &[RGBColor] = &[
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

static FONT_INIT: Once = Once::new();

fn register_font() {
    FONT_INIT.call_once(|| {
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::HACK_REGULAR,
        );
    });
}

/// One line of a panel.
struct Line {
    label: String,
    points: Vec<(f64, f64)>,
}

/// One panel of a chart: a title, a y-axis description and its lines.
struct Panel {
    title: String,
    y_desc: String,
    lines: Vec<Line>,
}

/// A chart: a title and panels stacked vertically.
struct Chart {
    title: String,
    panels: Vec<Panel>,
}

const MIB: f64 = 1024.0 * 1024.0;

fn level_line(ts: &TimeSeries, cgroup: &str, key: &str, scale: f64) -> Option<Line> {
    let pts = ts.points(cgroup, key);
    if pts.is_empty() {
        return None;
    }
    Some(Line {
        label: cgroup.to_string(),
        points: pts
            .iter()
            .map(|&(t, v)| (t as f64 / 1e9, v as f64 / scale))
            .collect(),
    })
}

/// The per-second rate of a counter between consecutive samples, plotted at the later one.
fn rate_line(ts: &TimeSeries, cgroup: &str, key: &str) -> Option<Line> {
    let pts = ts.points(cgroup, key);
    if pts.is_empty() {
        return None;
    }
    let mut out = vec![(pts[0].0 as f64 / 1e9, 0.0)];
    for w in pts.windows(2) {
        let (t0, v0) = w[0];
        let (t1, v1) = w[1];
        if t1 <= t0 {
            continue;
        }
        let rate = v1.saturating_sub(v0) as f64 / ((t1 - t0) as f64 / 1e9);
        out.push((t1 as f64 / 1e9, rate));
    }
    Some(Line {
        label: cgroup.to_string(),
        points: out,
    })
}

/// The cgroups of a run and the machine row.
fn rows(r: &RunResult) -> Vec<String> {
    let mut v: Vec<String> = r.setup.cgroups.iter().map(|c| c.path.clone()).collect();
    v.push(MACHINE_ROW.to_string());
    v
}

/// The key of a figure in a row: tries each candidate key.
fn first_key<'a>(ts: &TimeSeries, row: &str, keys: &[&'a str]) -> Option<&'a str> {
    keys.iter().copied().find(|k| ts.index(row, k).is_some())
}

fn usage_chart(r: &RunResult) -> Chart {
    let ts = &r.series;
    let mut mem = Vec::new();
    let mut swap = Vec::new();
    for row in rows(r) {
        let mk = first_key(
            ts,
            &row,
            &["memory.current", "memory.usage_in_bytes", "used"],
        );
        if let Some(l) = mk.and_then(|k| level_line(ts, &row, k, MIB)) {
            mem.push(l);
        }
        let sk = first_key(
            ts,
            &row,
            &["memory.swap.current", "memory.stat:total_swap", "swap_used"],
        );
        if let Some(l) = sk.and_then(|k| level_line(ts, &row, k, MIB)) {
            swap.push(l);
        }
    }
    Chart {
        title: format!("{} / {} / seed {}: memory", r.scenario, r.variant, r.seed),
        panels: vec![
            Panel {
                title: "memory usage".into(),
                y_desc: "MiB".into(),
                lines: mem,
            },
            Panel {
                title: "swap usage".into(),
                y_desc: "MiB".into(),
                lines: swap,
            },
        ],
    }
}

fn rate_chart(r: &RunResult, title: &str, figures: &[(&str, &str)]) -> Chart {
    let ts = &r.series;
    let mut panels = Vec::new();
    for (stat, panel_title) in figures {
        let mut lines = Vec::new();
        for row in rows(r) {
            let keys = [
                format!("memory.stat:{stat}"),
                format!("memory.stat:total_{stat}"),
                format!("vmstat:{stat}"),
            ];
            let refs: Vec<&str> = keys.iter().map(|s| s.as_str()).collect();
            if let Some(l) = first_key(ts, &row, &refs).and_then(|k| rate_line(ts, &row, k)) {
                lines.push(l);
            }
        }
        panels.push(Panel {
            title: panel_title.to_string(),
            y_desc: "per second".into(),
            lines,
        });
    }
    Chart {
        title: format!("{} / {} / seed {}: {title}", r.scenario, r.variant, r.seed),
        panels,
    }
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let body = root
        .titled(&chart.title, (FONT, 20).into_font())
        .map_err(e)?;
    let areas = body.split_evenly((chart.panels.len().max(1), 1));
    let xmax = chart
        .panels
        .iter()
        .flat_map(|p| p.lines.iter())
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(0.0f64, f64::max);
    let xmax = if xmax > 0.0 { xmax } else { 1.0 };
    for (area, panel) in areas.iter().zip(&chart.panels) {
        let ymax = panel
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let ymax = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
        let mut cc = ChartBuilder::on(area)
            .caption(&panel.title, (FONT, 16).into_font())
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(e)?;
        cc.configure_mesh()
            .x_desc("time (s)")
            .y_desc(panel.y_desc.as_str())
            .label_style((FONT, 12).into_font())
            .axis_desc_style((FONT, 13).into_font())
            .draw()
            .map_err(e)?;
        let mut next_color = 0;
        for line in &panel.lines {
            // The machine-wide line is thin and black, so cgroup lines stay visible under it.
            let style = if line.label == MACHINE_ROW {
                BLACK.stroke_width(1)
            } else {
                next_color += 1;
                PALETTE[(next_color - 1) % PALETTE.len()].stroke_width(2)
            };
            cc.draw_series(LineSeries::new(line.points.iter().copied(), style))
                .map_err(e)?
                .label(line.label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
        if !panel.lines.is_empty() {
            cc.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font((FONT, 12).into_font())
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(e)?;
        }
    }
    root.present().map_err(e)?;
    Ok(())
}

fn write_chart(chart: &Chart, dir: &Path, stem: &str) -> Result<(), String> {
    let h = PANEL_HEIGHT * chart.panels.len().max(1) as u32 + 40;
    let svg = dir.join(format!("{stem}.svg"));
    draw(SVGBackend::new(&svg, (WIDTH, h)).into_drawing_area(), chart)
        .map_err(|e| format!("{}: {e}", svg.display()))?;
    let png = dir.join(format!("{stem}.png"));
    draw(
        BitMapBackend::new(&png, (WIDTH, h)).into_drawing_area(),
        chart,
    )
    .map_err(|e| format!("{}: {e}", png.display()))?;
    Ok(())
}

/// Draw `usage`, `faults` and `reclaim` charts of a run into `dir`, each as SVG and PNG.
pub fn render_charts(r: &RunResult, dir: &Path) -> Result<(), String> {
    register_font();
    write_chart(&usage_chart(r), dir, "usage")?;
    write_chart(
        &rate_chart(
            r,
            "page faults",
            &[
                ("pgfault", "page faults per second"),
                ("pgmajfault", "major faults per second"),
            ],
        ),
        dir,
        "faults",
    )?;
    write_chart(
        &rate_chart(
            r,
            "reclaim",
            &[
                ("pgscan", "pages scanned per second"),
                ("pgsteal", "pages reclaimed per second"),
            ],
        ),
        dir,
        "reclaim",
    )?;
    Ok(())
}
