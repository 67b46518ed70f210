//! Charts of time series, drawn with plotters as SVG and PNG.
//!
//! A run ([`render_charts`]) gets three charts: `usage` (memory and swap usage), `faults`
//! (page faults and major faults per second) and `reclaim` (pages scanned and reclaimed per
//! second). Each panel has a line per cgroup and the machine-wide line; the machine's thin
//! black line is drawn first, so the cgroups' lines lie on top of it.
//!
//! A comparison ([`render_compare_charts`]) gets one overlay chart per figure (`memory`,
//! `swap`, `pgfault`, `pgmajfault`, `pgscan`, `pgsteal`): a panel per cgroup and one for the
//! machine, each with a line per variant, drawn from the variant's run with the first seed.
//! The base variant's line is the widest and is drawn first, so equal lines stay visible.
//!
//! Each panel keeps a column on its right for its legend, which therefore never covers a
//! line. Memory is plotted in bytes with binary suffixes on the ticks (`512M`, `1.5G`), rates
//! and time with SI suffixes (`12k`, `1.2M`); the tick positions are chosen here (multiples of
//! a power of two for bytes, of 1, 2 or 5 times a power of ten otherwise) and printed without
//! trailing zeros. Text in the PNGs is drawn with a font compiled into the binary (Hack, from
//! the `epaint_default_fonts` crate), so no system font library is needed.
//!
//! Everything here is a pure function of the time series: equal runs give byte-identical
//! files.

use std::path::Path;
use std::sync::Once;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::compare::Comparison;
use crate::runner::{RunResult, TimeSeries, MACHINE_ROW};

/// Width of a chart without its legend column.
const PLOT_WIDTH: u32 = 900;
const PANEL_HEIGHT: u32 = 330;
/// Room for the chart's title above the panels.
const TITLE_HEIGHT: u32 = 40;
const FONT: &str = "sans-serif";
const LEGEND_FONT_SIZE: u32 = 12;
/// Longest legend label, in characters; longer ones keep their end (`...c/d/e`).
const LEGEND_LABEL_MAX: usize = 32;
/// Space between the legend column's edges and the legend box.
const LEGEND_PAD: i32 = 8;
/// Length of the line sample in a legend entry.
const LEGEND_SWATCH: i32 = 24;
/// Height of one legend entry.
const LEGEND_ROW: i32 = 16;
/// About how many ticks an axis gets.
const Y_TICKS: f64 = 8.0;
const X_TICKS: f64 = 10.0;

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

// ------------------------------------------------------------------ figures

/// What a panel's y axis counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum YUnit {
    Bytes,
    Faults,
    Pages,
    Percent,
}

impl YUnit {
    fn desc(self) -> &'static str {
        match self {
            YUnit::Bytes => "bytes",
            YUnit::Faults => "faults/s",
            YUnit::Pages => "pages/s",
            YUnit::Percent => "% of time",
        }
    }

    fn binary(self) -> bool {
        self == YUnit::Bytes
    }
}

/// How a figure's values come from the time series.
#[derive(Clone, Copy)]
enum Quantity {
    /// A level: the first of these keys the row has.
    Level(&'static [&'static str]),
    /// The per-second rate of a counter (`memory.stat:KEY`, `memory.stat:total_KEY` or
    /// `vmstat:KEY`).
    Rate(&'static str),
    /// A pressure average sampled in hundredths of a percent: the first of these keys.
    Percent(&'static [&'static str]),
}

/// One figure: a panel of a run's chart, a chart of a comparison.
struct FigureSpec {
    stem: &'static str,
    title: &'static str,
    unit: YUnit,
    quantity: Quantity,
}

const FIGURES: [FigureSpec; 8] = [
    FigureSpec {
        stem: "memory",
        title: "memory usage",
        unit: YUnit::Bytes,
        quantity: Quantity::Level(&["memory.current", "memory.usage_in_bytes", "used"]),
    },
    FigureSpec {
        stem: "swap",
        title: "swap usage",
        unit: YUnit::Bytes,
        quantity: Quantity::Level(&["memory.swap.current", "memory.stat:total_swap", "swap_used"]),
    },
    FigureSpec {
        stem: "pgfault",
        title: "page faults",
        unit: YUnit::Faults,
        quantity: Quantity::Rate("pgfault"),
    },
    FigureSpec {
        stem: "pgmajfault",
        title: "major faults",
        unit: YUnit::Faults,
        quantity: Quantity::Rate("pgmajfault"),
    },
    FigureSpec {
        stem: "pgscan",
        title: "pages scanned",
        unit: YUnit::Pages,
        quantity: Quantity::Rate("pgscan"),
    },
    FigureSpec {
        stem: "pgsteal",
        title: "pages reclaimed",
        unit: YUnit::Pages,
        quantity: Quantity::Rate("pgsteal"),
    },
    FigureSpec {
        stem: "pressure_some",
        title: "memory pressure, some avg10",
        unit: YUnit::Percent,
        quantity: Quantity::Percent(&["memory.pressure:some.avg10", "pressure:memory.some.avg10"]),
    },
    FigureSpec {
        stem: "pressure_full",
        title: "memory pressure, full avg10",
        unit: YUnit::Percent,
        quantity: Quantity::Percent(&["memory.pressure:full.avg10", "pressure:memory.full.avg10"]),
    },
];

/// The charts of a run: file stem, title, and the figures it stacks (indexes into FIGURES).
const RUN_CHARTS: [(&str, &str, [usize; 2]); 4] = [
    ("usage", "memory", [0, 1]),
    ("faults", "page faults", [2, 3]),
    ("reclaim", "reclaim", [4, 5]),
    ("pressure", "memory pressure and controller actions", [6, 7]),
];

/// The file stems of a comparison's overlay charts, one per figure, in drawing order.
pub const COMPARE_CHARTS: [&str; 6] = [
    FIGURES[0].stem,
    FIGURES[1].stem,
    FIGURES[2].stem,
    FIGURES[3].stem,
    FIGURES[4].stem,
    FIGURES[5].stem,
];

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The per-second rate of a counter between consecutive samples, plotted at the later one.
fn rate_points(pts: &[(u64, u64)]) -> Vec<(f64, f64)> {
    let Some(first) = pts.first() else {
        return Vec::new();
    };
    let mut out = vec![(secs(first.0), 0.0)];
    for w in pts.windows(2) {
        let (t0, v0) = w[0];
        let (t1, v1) = w[1];
        if t1 <= t0 {
            continue;
        }
        out.push((secs(t1), v1.saturating_sub(v0) as f64 / secs(t1 - t0)));
    }
    out
}

/// The points of a figure for a row (a cgroup or the machine); `None` when the row has no
/// such series.
fn figure_points(ts: &TimeSeries, row: &str, f: &FigureSpec) -> Option<Vec<(f64, f64)>> {
    let found = |keys: &[String]| keys.iter().find(|k| ts.index(row, k).is_some()).cloned();
    let pts = match f.quantity {
        Quantity::Level(keys) | Quantity::Percent(keys) => {
            let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            let k = found(&keys)?;
            let scale = match f.quantity {
                Quantity::Percent(_) => 0.01,
                _ => 1.0,
            };
            ts.points(row, &k)
                .iter()
                .map(|&(t, v)| (secs(t), v as f64 * scale))
                .collect()
        }
        Quantity::Rate(stat) => {
            let keys = [
                format!("memory.stat:{stat}"),
                format!("memory.stat:total_{stat}"),
                format!("vmstat:{stat}"),
            ];
            let k = found(&keys)?;
            rate_points(&ts.points(row, &k))
        }
    };
    (!pts.is_empty()).then_some(pts)
}

// ------------------------------------------------------------------ charts

/// One line of a panel.
struct Line {
    label: String,
    color: RGBColor,
    width: u32,
    /// Drawn dashed (a limit rather than a measured value).
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// One panel: a title, the unit of its y axis and its lines, in drawing order (the legend
/// lists them in the same order).
struct Panel {
    title: String,
    unit: YUnit,
    lines: Vec<Line>,
    /// Vertical marks (controller actions): the time, and the index of the legend entry in
    /// `lines` whose colour they take (an entry without points).
    marks: Vec<(f64, usize)>,
    /// The y axis's name where it is not the unit's (a sweep column).
    y_desc: Option<String>,
}

/// A chart: a title and panels stacked vertically, sharing the x axis: time, or the values
/// of a sweep's column (its name, and whether it counts bytes).
struct Chart {
    title: String,
    panels: Vec<Panel>,
    x_values: Option<(String, bool)>,
}

/// The cgroups of a run (in scenario order), then the machine.
fn rows(r: &RunResult) -> Vec<String> {
    let mut v: Vec<String> = r.setup.cgroups.iter().map(|c| c.path.clone()).collect();
    v.push(MACHINE_ROW.to_string());
    v
}

/// A panel of a run: the machine's line first, then a line per cgroup. A cgroup's colour
/// depends on its place in the scenario only, so it is the same in every panel.
fn run_panel(r: &RunResult, f: &FigureSpec) -> Panel {
    let mut lines = Vec::new();
    if let Some(points) = figure_points(&r.series, MACHINE_ROW, f) {
        lines.push(Line {
            label: MACHINE_ROW.to_string(),
            color: BLACK,
            width: 1,
            dashed: false,
            points,
        });
    }
    for (i, c) in r.setup.cgroups.iter().enumerate() {
        if let Some(points) = figure_points(&r.series, &c.path, f) {
            lines.push(Line {
                label: r.cgroup_name(&c.path),
                color: PALETTE[i % PALETTE.len()],
                width: 2,
                dashed: false,
                points,
            });
        }
    }
    if f.stem == "memory" {
        // A cgroup's memory.high, where it is not `max`, as a thin line in its colour: the
        // limit a controller such as Senpai moves.
        for (i, c) in r.setup.cgroups.iter().enumerate() {
            let points: Vec<(f64, f64)> = r
                .series
                .points(&c.path, "memory.high")
                .iter()
                .filter(|p| p.1 < HIGH_MAX)
                .map(|&(t, v)| (secs(t), v as f64))
                .collect();
            if !points.is_empty() {
                let label = format!("{} memory.high", r.cgroup_name(&c.path));
                let RGBColor(red, green, blue) = PALETTE[i % PALETTE.len()];
                lines.push(Line {
                    label,
                    color: RGBColor(red / 2, green / 2, blue / 2),
                    width: 2,
                    dashed: true,
                    points,
                });
            }
        }
    }
    let mut marks = Vec::new();
    if f.unit == YUnit::Percent {
        // Each controller action kind gets a legend entry and a vertical mark at each action.
        for a in &r.actions {
            let label = format!("{}: {}", a.controller, a.action);
            let i = match lines
                .iter()
                .position(|l| l.label == label && l.points.is_empty())
            {
                Some(i) => i,
                None => {
                    let n = lines.iter().filter(|l| l.points.is_empty()).count();
                    lines.push(Line {
                        label,
                        color: MARK_COLORS[n % MARK_COLORS.len()],
                        width: 1,
                        dashed: false,
                        points: Vec::new(),
                    });
                    lines.len() - 1
                }
            };
            marks.push((secs(a.time_ns), i));
        }
    }
    Panel {
        title: format!("{}{}", f.title, per_second(f)),
        unit: f.unit,
        lines,
        marks,
        y_desc: None,
    }
}

/// memory.high samples from here up are `max` (no limit), not drawn.
const HIGH_MAX: u64 = 1 << 62;

/// A panel with more action marks than this draws them as ticks along its top edge.
const MAX_FULL_MARKS: usize = 20;

/// Colours of the controller actions' marks.
const MARK_COLORS: &[RGBColor] = &[
    RGBColor(200, 0, 0),
    RGBColor(0, 0, 200),
    RGBColor(0, 140, 0),
    RGBColor(160, 0, 160),
];

fn per_second(f: &FigureSpec) -> &'static str {
    match f.quantity {
        Quantity::Level(_) | Quantity::Percent(_) => "",
        Quantity::Rate(_) => " per second",
    }
}

/// The overlay chart of one figure over the variants of a comparison: a panel per cgroup
/// (every variant's, first seen first) and one for the machine, a line per variant.
fn compare_chart(c: &Comparison, f: &FigureSpec) -> Chart {
    let runs = &c.first_seed_runs;
    let mut row_names: Vec<String> = Vec::new();
    for r in runs {
        for row in rows(r) {
            if row != MACHINE_ROW && !row_names.contains(&row) {
                row_names.push(row);
            }
        }
    }
    row_names.push(MACHINE_ROW.to_string());
    let panels = row_names
        .iter()
        .map(|row| {
            let lines = runs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    let points = figure_points(&r.series, row, f)?;
                    Some(Line {
                        label: r.variant.clone(),
                        color: PALETTE[i % PALETTE.len()],
                        width: if i == 0 { 4 } else { 2 },
                        dashed: false,
                        points,
                    })
                })
                .collect();
            Panel {
                title: if row == MACHINE_ROW {
                    "machine".to_string()
                } else {
                    format!("cgroup {row}")
                },
                unit: f.unit,
                lines,
                marks: Vec::new(),
                y_desc: None,
            }
        })
        .collect();
    let seed = runs
        .first()
        .map(|r| format!(", seed {}", r.seed))
        .unwrap_or_default();
    Chart {
        title: format!("{}: {}{}{seed}", c.scenario, f.title, per_second(f)),
        panels,
        x_values: None,
    }
}

// ------------------------------------------------------------------ axes

/// The ticks of an axis: its start (0 but for a sweep chart's x axis) and end, the labelled
/// ticks and the light ones.
#[derive(Clone, Debug, PartialEq)]
struct Ticks {
    start: f64,
    end: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

/// The step between ticks: at least `raw`, a power of two when `binary` (but at least 1), else
/// 1, 2 or 5 times a power of ten; and how many light ticks divide it.
fn tick_step(raw: f64, binary: bool) -> (f64, usize) {
    if binary {
        let step = 2f64.powi(raw.max(1.0).log2().ceil() as i32);
        return (step, 4);
    }
    let mag = 10f64.powi(raw.log10().floor() as i32);
    let m = raw / mag;
    if m <= 1.0 {
        (mag, 5)
    } else if m <= 2.0 {
        (2.0 * mag, 4)
    } else if m <= 5.0 {
        (5.0 * mag, 5)
    } else {
        (10.0 * mag, 5)
    }
}

/// Ticks for values up to `max` on a value axis: about [`Y_TICKS`] of them, the axis ending at
/// the first tick at least 4% above `max` (at 1 MiB or 1 when there is nothing to show).
fn value_ticks(max: f64, binary: bool) -> Ticks {
    let top = if max.is_finite() && max > 0.0 {
        max * 1.04
    } else if binary {
        1024.0 * 1024.0
    } else {
        1.0
    };
    let (step, sub) = tick_step(top / Y_TICKS, binary);
    let n = ((top / step) - 1e-9).ceil().max(1.0) as usize;
    ticks_of(step, sub, n, n as f64 * step)
}

/// Ticks for the time axis, which ends at `end` (seconds): about [`X_TICKS`] of them.
fn time_ticks(end: f64) -> Ticks {
    let end = if end.is_finite() && end > 0.0 {
        end
    } else {
        1.0
    };
    let (step, sub) = tick_step(end / X_TICKS, false);
    let n = ((end / step) + 1e-9).floor() as usize;
    ticks_of(step, sub, n, end)
}

/// An axis from 0 to `end` with these ticks.
impl Ranged for Ticks {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.start..self.end).map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.start..self.end
    }
}

fn ticks_of(step: f64, sub: usize, n: usize, end: f64) -> Ticks {
    ticks_from(0.0, step, sub, n, end)
}

/// `n` steps from `start`, the axis ending at `end`.
fn ticks_from(start: f64, step: f64, sub: usize, n: usize, end: f64) -> Ticks {
    let bold = (0..=n).map(|i| start + i as f64 * step).collect();
    let light = (0..=(n + 1) * sub)
        .map(|i| start + i as f64 * step / sub as f64)
        .filter(|&v| v <= end)
        .collect();
    Ticks {
        start,
        end,
        bold,
        light,
    }
}

/// Ticks over the values from `min` to `max` (a sweep's results, far from 0): about
/// [`X_TICKS`] of them, the axis starting at the last tick at or below `min` and ending at
/// the first at least 2% of the span above `max`.
fn span_ticks(min: f64, max: f64, binary: bool) -> Ticks {
    if !(min.is_finite() && max.is_finite() && max > min) {
        return value_ticks(max, binary);
    }
    let (step, sub) = tick_step((max - min) * 1.04 / X_TICKS, binary);
    let start = (min / step).floor() * step;
    let n = (((max + (max - min) * 0.02 - start) / step) - 1e-9)
        .ceil()
        .max(1.0) as usize;
    ticks_from(start, step, sub, n, start + n as f64 * step)
}

/// A tick label: the value with a suffix (K, M, G, T for powers of 1024 when `binary`, else
/// k, M, G, T for powers of 1000), without trailing zeros: `0`, `0.5`, `10`, `512M`, `1.5G`,
/// `12k`, `1.2M`.
fn tick_label(v: f64, binary: bool) -> String {
    let (base, suffixes): (f64, [&str; 4]) = if binary {
        (1024.0, ["K", "M", "G", "T"])
    } else {
        (1000.0, ["k", "M", "G", "T"])
    };
    let mut x = v;
    let mut suffix = "";
    for s in suffixes {
        if x.abs() < base {
            break;
        }
        x /= base;
        suffix = s;
    }
    // Rounded to nine decimals, f64's Display prints the shortest form: `3`, not `3.0`.
    let x = (x * 1e9).round() / 1e9;
    let x = if x == 0.0 { 0.0 } else { x };
    format!("{x}{suffix}")
}

// ------------------------------------------------------------------ drawing

fn legend_font() -> FontDesc<'static> {
    (FONT, LEGEND_FONT_SIZE).into_font()
}

/// A legend label no longer than [`LEGEND_LABEL_MAX`] characters.
fn legend_label(label: &str) -> String {
    let n = label.chars().count();
    if n <= LEGEND_LABEL_MAX {
        return label.to_string();
    }
    let tail: String = label.chars().skip(n - (LEGEND_LABEL_MAX - 3)).collect();
    format!("...{tail}")
}

/// The width of the legend column: room for the longest label of any panel.
fn legend_width(chart: &Chart) -> u32 {
    let font = legend_font();
    let text = chart
        .panels
        .iter()
        .flat_map(|p| p.lines.iter())
        .map(|l| font.box_size(&legend_label(&l.label)).map_or(0, |s| s.0))
        .chain(font.box_size("+9999 more").map(|s| s.0))
        .max()
        .unwrap_or(0) as i32;
    (2 * LEGEND_PAD + 8 + LEGEND_SWATCH + 8 + text + 8).max(120) as u32
}

/// Draw a panel's legend in its column, its box's top at `top` (in the column's
/// coordinates) and no taller than `height`: an entry per line, or as many as fit and a
/// last one saying how many more there are.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    top: i32,
    height: i32,
    lines: &[Line],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    if lines.is_empty() {
        return Ok(());
    }
    let fit = ((height - 8) / LEGEND_ROW).max(1) as usize;
    let (shown, more) = if lines.len() > fit {
        (fit - 1, lines.len() - (fit - 1))
    } else {
        (lines.len(), 0)
    };
    let rows = shown + usize::from(more > 0);
    let x0 = LEGEND_PAD;
    let x1 = area.dim_in_pixel().0 as i32 - LEGEND_PAD;
    let y1 = top + 8 + rows as i32 * LEGEND_ROW;
    area.draw(&Rectangle::new(
        [(x0, top), (x1, y1)],
        BLACK.stroke_width(1),
    ))?;
    let style = TextStyle::from(legend_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let text_x = x0 + 8 + LEGEND_SWATCH + 8;
    let row_y = |i: usize| top + 4 + i as i32 * LEGEND_ROW + LEGEND_ROW / 2;
    for (i, l) in lines.iter().take(shown).enumerate() {
        let y = row_y(i);
        let swatch = vec![(x0 + 8, y), (x0 + 8 + LEGEND_SWATCH, y)];
        let pen = l.color.stroke_width(l.width);
        if l.dashed {
            area.draw(&DashedPathElement::new(swatch, 6, 4, pen))?;
        } else {
            area.draw(&PathElement::new(swatch, pen))?;
        }
        area.draw(&Text::new(legend_label(&l.label), (text_x, y), &style))?;
    }
    if more > 0 {
        area.draw(&Text::new(
            format!("+{more} more"),
            (text_x, row_y(shown)),
            &style,
        ))?;
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    chart: &Chart,
    legend_w: u32,
) -> Result<(), String> {
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
    let (xt, x_desc, x_binary) = match &chart.x_values {
        None => (time_ticks(xmax), "time (s)", false),
        Some((name, binary)) => {
            let xmin = chart
                .panels
                .iter()
                .flat_map(|p| p.lines.iter())
                .flat_map(|l| l.points.iter().map(|p| p.0))
                .fold(f64::INFINITY, f64::min);
            (span_ticks(xmin, xmax, *binary), name.as_str(), *binary)
        }
    };
    for (area, panel) in areas.iter().zip(&chart.panels) {
        let (plot_area, legend_area) =
            area.split_horizontally(area.dim_in_pixel().0.saturating_sub(legend_w));
        let mut ymax = panel
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        if panel.unit == YUnit::Percent {
            ymax = ymax.max(1.0);
        }
        let binary = panel.unit.binary();
        let yt = value_ticks(ymax, binary);
        let mut cc = ChartBuilder::on(&plot_area)
            .caption(&panel.title, (FONT, 16).into_font())
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(xt.clone(), yt)
            .map_err(e)?;
        let xfmt = |v: &f64| tick_label(*v, x_binary);
        let yfmt = |v: &f64| tick_label(*v, binary);
        cc.configure_mesh()
            .x_desc(x_desc)
            .y_desc(panel.y_desc.as_deref().unwrap_or(panel.unit.desc()))
            .x_label_formatter(&xfmt)
            .y_label_formatter(&yfmt)
            .label_style((FONT, 12).into_font())
            .axis_desc_style((FONT, 13).into_font())
            .draw()
            .map_err(e)?;
        for line in &panel.lines {
            let pts = line
                .points
                .iter()
                .copied()
                .filter(|p| p.0.is_finite() && p.1.is_finite());
            let style = line.color.stroke_width(line.width);
            if line.dashed {
                cc.draw_series(DashedLineSeries::new(pts, 6, 4, style))
                    .map_err(e)?;
            } else {
                cc.draw_series(LineSeries::new(pts, style)).map_err(e)?;
            }
        }
        // A few actions are marked across the panel; many (a Senpai run's hundreds of steps)
        // only as ticks along its top edge, so that they do not hide the lines.
        let ytop = cc.plotting_area().get_y_range().end;
        let ybottom = if panel.marks.len() > MAX_FULL_MARKS {
            ytop * 0.95
        } else {
            0.0
        };
        for &(x, i) in &panel.marks {
            let color = panel.lines[i].color;
            cc.draw_series(std::iter::once(PathElement::new(
                vec![(x, ybottom), (x, ytop)],
                color.stroke_width(1),
            )))
            .map_err(e)?;
        }
        let (_, yr) = cc.plotting_area().get_pixel_range();
        let top = yr.start - legend_area.get_base_pixel().1;
        draw_legend(&legend_area, top, yr.end - yr.start, &panel.lines).map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

fn write_chart(chart: &Chart, dir: &Path, stem: &str) -> Result<(), String> {
    let legend_w = legend_width(chart);
    let size = (
        PLOT_WIDTH + legend_w,
        PANEL_HEIGHT * chart.panels.len().max(1) as u32 + TITLE_HEIGHT,
    );
    let svg = dir.join(format!("{stem}.svg"));
    draw(
        SVGBackend::new(&svg, size).into_drawing_area(),
        chart,
        legend_w,
    )
    .map_err(|e| format!("{}: {e}", svg.display()))?;
    let png = dir.join(format!("{stem}.png"));
    draw(
        BitMapBackend::new(&png, size).into_drawing_area(),
        chart,
        legend_w,
    )
    .map_err(|e| format!("{}: {e}", png.display()))?;
    Ok(())
}

/// A line of a panel as data: label, points, dashed or not, width and colour as the SVG and
/// PNG charts draw it.
pub(crate) struct LineData {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    /// The stroke width in pixels (the base variant's line is the widest).
    pub width: u32,
    /// `#rrggbb`.
    pub color: String,
}

/// A panel's data without its drawing: for the HTML report's interactive charts.
pub(crate) struct PanelData {
    /// `chart title: panel title`.
    pub title: String,
    /// The y axis's unit, as the SVG charts say it.
    pub unit: &'static str,
    /// One per line with points, in drawing order.
    pub lines: Vec<LineData>,
    /// (time, label) per controller action marked on the panel.
    pub marks: Vec<(f64, String)>,
    /// The y axis: from 0 to `y_end`, labelled at these values with these labels (the PNG
    /// charts' ticks; bytes in binary units: `512 MiB`, `1 GiB`).
    pub y_end: f64,
    pub y_ticks: Vec<(f64, String)>,
}

/// A tick label of the HTML charts: bytes in binary units with their names (`0`, `512 KiB`,
/// `1.5 GiB`), other values as the PNG charts print them (`12k`, `1.2M`).
pub(crate) fn html_tick_label(v: f64, binary: bool) -> String {
    if !binary {
        return tick_label(v, false);
    }
    let short = tick_label(v, true);
    match short.chars().last() {
        Some(s @ ('K' | 'M' | 'G' | 'T')) => format!("{} {s}iB", &short[..short.len() - 1]),
        _ if v == 0.0 => short,
        _ => format!("{short} B"),
    }
}

fn panel_data(chart_title: &str, p: Panel) -> PanelData {
    let marks = p
        .marks
        .iter()
        .map(|&(t, i)| (t, p.lines[i].label.clone()))
        .collect();
    let max = p
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|q| q.1))
        .fold(0.0, f64::max);
    let binary = p.unit.binary();
    let ticks = value_ticks(max, binary);
    PanelData {
        title: format!("{chart_title}: {}", p.title),
        unit: p.unit.desc(),
        lines: p
            .lines
            .into_iter()
            .filter(|l| !l.points.is_empty())
            .map(|l| {
                let RGBColor(r, g, b) = l.color;
                LineData {
                    label: l.label,
                    points: l.points,
                    dashed: l.dashed,
                    width: l.width,
                    color: format!("#{r:02x}{g:02x}{b:02x}"),
                }
            })
            .collect(),
        marks,
        y_end: ticks.end,
        y_ticks: ticks
            .bold
            .iter()
            .map(|&v| (v, html_tick_label(v, binary)))
            .collect(),
    }
}

/// The panels of a run's charts (those [`render_charts`] draws), as data.
pub(crate) fn run_panels(r: &RunResult) -> Vec<PanelData> {
    let mut out = Vec::new();
    for (_, title, figures) in RUN_CHARTS {
        for &i in &figures {
            let p = run_panel(r, &FIGURES[i]);
            if p.lines.iter().any(|l| !l.points.is_empty()) {
                out.push(panel_data(title, p));
            }
        }
    }
    out
}

/// The panels of a comparison's overlay charts, every figure (pressure included), as data.
pub(crate) fn compare_panels(c: &Comparison) -> Vec<PanelData> {
    let mut out = Vec::new();
    for f in &FIGURES {
        let chart = compare_chart(c, f);
        let title = format!("{}{}", f.title, per_second(f));
        for p in chart.panels {
            if p.lines.iter().any(|l| !l.points.is_empty()) {
                out.push(panel_data(&title, p));
            }
        }
    }
    out
}

/// Draw `usage`, `faults` and `reclaim` charts of a run into `dir`, each as SVG and PNG.
pub fn render_charts(r: &RunResult, dir: &Path) -> Result<(), String> {
    register_font();
    for (stem, title, figures) in RUN_CHARTS {
        let has_any = figures.iter().any(|&i| {
            rows(r)
                .iter()
                .any(|row| figure_points(&r.series, row, &FIGURES[i]).is_some())
        });
        if stem == "pressure" && !has_any {
            // cgroup v1 has no pressure files.
            continue;
        }
        let chart = Chart {
            title: format!("{} / {} / seed {}: {title}", r.scenario, r.variant, r.seed),
            panels: figures.iter().map(|&i| run_panel(r, &FIGURES[i])).collect(),
            x_values: None,
        };
        write_chart(&chart, dir, stem)?;
    }
    Ok(())
}

/// Draw a comparison's overlay charts into `dir`, each as SVG and PNG: one per figure (see
/// [`COMPARE_CHARTS`]), with a line per variant. Nothing is drawn without runs to draw.
pub fn render_compare_charts(c: &Comparison, dir: &Path) -> Result<(), String> {
    if c.first_seed_runs.is_empty() {
        return Ok(());
    }
    register_font();
    for f in FIGURES.iter().take(COMPARE_CHARTS.len()) {
        write_chart(&compare_chart(c, f), dir, f.stem)?;
    }
    Ok(())
}

/// Draw a sweep's chart into `dir` as `STEM.svg` and `STEM.png`: column `y` against column
/// `x` (each named, and whether it counts bytes), a line per series, its points in x order.
pub fn render_xy_chart(
    title: &str,
    x: (&str, bool),
    y: (&str, bool),
    series: Vec<(String, Vec<(f64, f64)>)>,
    dir: &Path,
    stem: &str,
) -> Result<(), String> {
    register_font();
    let lines = series
        .into_iter()
        .enumerate()
        .map(|(i, (label, mut points))| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Line {
                label,
                color: PALETTE[i % PALETTE.len()],
                width: 2,
                dashed: false,
                points,
            }
        })
        .collect();
    let chart = Chart {
        title: title.to_string(),
        panels: vec![Panel {
            title: format!("{} against {}", y.0, x.0),
            unit: if y.1 { YUnit::Bytes } else { YUnit::Pages },
            lines,
            marks: Vec::new(),
            y_desc: Some(y.0.to_string()),
        }],
        x_values: Some((x.0.to_string(), x.1)),
    };
    write_chart(&chart, dir, stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_tick_labels_name_binary_units() {
        let mib = 1024.0 * 1024.0;
        assert_eq!(html_tick_label(0.0, true), "0");
        assert_eq!(html_tick_label(512.0, true), "512 B");
        assert_eq!(html_tick_label(512.0 * mib, true), "512 MiB");
        assert_eq!(html_tick_label(1024.0 * mib, true), "1 GiB");
        assert_eq!(html_tick_label(1.5 * 1024.0 * mib, true), "1.5 GiB");
        assert_eq!(html_tick_label(4096.0, true), "4 KiB");
        assert_eq!(html_tick_label(2e9, false), "2G");
        assert_eq!(html_tick_label(12_000.0, false), "12k");
        let z = value_ticks(0.0, true);
        assert!(z.bold.iter().all(|&v| v >= 0.0) && z.end > 0.0);
    }

    #[test]
    fn tick_labels_have_suffixes_and_no_trailing_zeros() {
        const M: f64 = 1024.0 * 1024.0;
        assert_eq!(tick_label(0.0, true), "0");
        assert_eq!(tick_label(512.0 * M, true), "512M");
        assert_eq!(tick_label(1536.0 * M, true), "1.5G");
        assert_eq!(tick_label(1280.0 * M, true), "1.25G");
        assert_eq!(tick_label(64.0 * 1024.0, true), "64K");
        assert_eq!(tick_label(1000.0, true), "1000");
        assert_eq!(tick_label(12_000.0, false), "12k");
        assert_eq!(tick_label(1_200_000.0, false), "1.2M");
        assert_eq!(tick_label(10.0, false), "10");
        assert_eq!(tick_label(0.1 * 3.0, false), "0.3");
        assert_eq!(tick_label(999.0, false), "999");
        assert_eq!(tick_label(2.5e9, false), "2.5G");
    }

    #[test]
    fn value_ticks_are_round_and_cover_the_values() {
        const M: f64 = 1024.0 * 1024.0;
        let t = value_ticks(190.0 * M, true);
        assert_eq!(t.bold.len(), 8, "{t:?}");
        assert_eq!(t.bold[1], 32.0 * M);
        assert_eq!(t.end, 224.0 * M);
        let labels: Vec<String> = t.bold.iter().map(|&v| tick_label(v, true)).collect();
        assert_eq!(
            labels,
            ["0", "32M", "64M", "96M", "128M", "160M", "192M", "224M"]
        );
        let t = value_ticks(1.4e9, true);
        assert!(t.end >= 1.4e9 * 1.04 && t.bold.len() <= 9, "{t:?}");
        let t = value_ticks(123_456.0, false);
        assert_eq!(t.bold[1], 20_000.0);
        assert_eq!(t.end, 140_000.0);
        assert_eq!(value_ticks(0.0, false).end, 1.0);
        assert_eq!(value_ticks(0.0, true).end, M);
        assert_eq!(value_ticks(3.0, true).bold, [0.0, 1.0, 2.0, 3.0, 4.0]);
        assert!(t.light.len() > t.bold.len() && t.light.iter().all(|&v| v <= t.end));
    }

    #[test]
    fn time_ticks_end_at_the_last_sample() {
        let t = time_ticks(5.02);
        assert_eq!(t.end, 5.02);
        assert_eq!(t.bold, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let t = time_ticks(1.7);
        assert_eq!(
            t.bold
                .iter()
                .map(|&v| tick_label(v, false))
                .collect::<Vec<_>>(),
            ["0", "0.2", "0.4", "0.6", "0.8", "1", "1.2", "1.4", "1.6"]
        );
        let t = time_ticks(3600.0);
        assert_eq!(
            t.bold
                .iter()
                .map(|&v| tick_label(v, false))
                .collect::<Vec<_>>(),
            ["0", "500", "1k", "1.5k", "2k", "2.5k", "3k", "3.5k"]
        );
    }

    #[test]
    fn long_legend_labels_keep_their_end() {
        assert_eq!(legend_label("/a"), "/a");
        let long = format!("/{}", "x".repeat(40));
        let l = legend_label(&long);
        assert_eq!(l.chars().count(), LEGEND_LABEL_MAX);
        assert!(l.starts_with("...x"));
    }
}
