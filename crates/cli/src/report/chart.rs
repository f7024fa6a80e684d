//! The report's charts, as inline SVG strings, and the formatting of their numbers.
//!
//! Labels are never cut so that two become equal: a label longer than [`LABEL_MAX`]
//! characters (longer than any IP address, IPv4-mapped IPv6 included) keeps its start
//! and end around an ellipsis, and the whole label is in the hover text.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use super::logs::Timeline;

/// The single-series colour (bars, heat maps' dark end); the screenshot test looks
/// for coloured pixels.
pub const BAR: &str = "#1f77b4";

/// Colours of the series of a chart over time (Tableau 10), then "other".
pub const PALETTE: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
pub const OTHER: &str = "#c7c7c7";

/// The steps a chart over time may have, in ms: 1-2-5 below a second, then clock
/// steps (never more than 2.5 apart, so 300 columns at most leave 120 at least).
pub const NICE_STEPS_MS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 5e3, 10e3, 20e3, 30e3, 60e3, 120e3, 300e3, 600e3,
    1_200e3, 1_800e3, 3_600e3, 7_200e3, 14_400e3, 28_800e3, 43_200e3, 86_400e3, 172_800e3, 432_000e3, 864_000e3,
];

/// The longest label shown whole.
pub const LABEL_MAX: usize = 46;

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// A label of at most [`LABEL_MAX`] characters: longer ones keep their start and end.
pub fn short(label: &str) -> String {
    let n = label.chars().count();
    if n <= LABEL_MAX {
        return label.to_string();
    }
    let half = (LABEL_MAX - 1) / 2;
    let head: String = label.chars().take(half).collect();
    let tail: String = label.chars().skip(n - (LABEL_MAX - 1 - half)).collect();
    format!("{head}…{tail}")
}

/// A whole number with thin separators.
pub fn num(n: u64) -> String {
    let s = n.to_string();
    let mut o = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
    }
    o
}

/// A byte count with an SI prefix.
pub fn bytes(n: u64) -> String {
    if n < 1000 {
        return format!("{n} B");
    }
    si(n as f64, "B")
}

/// A value with an SI prefix and `unit`: three significant digits.
pub fn si(v: f64, unit: &str) -> String {
    let units = ["", "k", "M", "G", "T", "P", "E"];
    let mut v = v;
    let mut u = 0;
    while v.abs() >= 999.5 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    // Three significant digits (a rate below 1/s keeps its first three too).
    let digits = if v == 0.0 || v.abs() >= 99.95 {
        0
    } else if v.abs() >= 9.995 {
        1
    } else if v.abs() >= 0.9995 {
        2
    } else {
        (2 - v.abs().log10().floor() as i64).clamp(2, 12) as usize
    };
    let s = format!("{v:.digits$}");
    // 2.50 → 2.5, 3.00 → 3
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    format!("{s} {}{unit}", units[u])
}

/// A duration in ms, in words: "1 s", "5 min", "200 ms", "2 h", "7 d".
pub fn duration(ms: f64) -> String {
    let units = [(86_400e3, "d"), (3_600e3, "h"), (60e3, "min"), (1e3, "s")];
    for (u, name) in units {
        if ms >= u && (ms / u).fract().abs() < 1e-9 {
            return format!("{} {name}", ms / u);
        }
    }
    if ms >= 1e3 {
        return format!("{:.1} s", ms / 1e3);
    }
    format!("{} ms", (ms * 1000.0).round() / 1000.0)
}

/// A run's length in words: "3 min 11 s", "2 h 5 min", "4 d 3 h", "0.25 s".
pub fn span_words(secs: f64) -> String {
    if secs < 60.0 {
        return if secs < 10.0 { format!("{} s", (secs * 1000.0).round() / 1000.0) } else { format!("{secs:.1} s") };
    }
    let s = secs.round() as u64;
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m} min")
    } else {
        format!("{m} min {sec} s")
    }
}

/// UTC date and time of epoch seconds.
pub fn utc(t: u64) -> String {
    let (y, m, d, hh, mm, ss) = tapstat_record::civil(t);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}")
}

/// UTC time of epoch ms, as precise as `step_ms` needs.
pub fn utc_ms(t_ms: f64, step_ms: f64) -> String {
    let secs = (t_ms / 1000.0).floor();
    let full = utc(secs.max(0.0) as u64);
    let frac = t_ms - secs * 1000.0;
    if step_ms < 1000.0 {
        format!("{full}.{:03}", frac.round().min(999.0) as u64)
    } else {
        full
    }
}

/// A tick label at `t_ms`: the time of day, with the date when ticks are days apart.
fn tick_label(t_ms: f64, tick_ms: f64) -> String {
    let s = utc_ms(t_ms, tick_ms);
    if tick_ms >= 86_400e3 {
        s[..10].to_string()
    } else if tick_ms >= 3_600e3 {
        s[5..16].to_string()
    } else if tick_ms >= 60e3 {
        s[11..16].to_string()
    } else {
        s[11..].to_string()
    }
}

/// Upper bound and step of a value axis with about 4 ticks (1-2-5 steps).
fn nice_axis(max: f64) -> (f64, f64) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, 0.25);
    }
    let raw = max / 4.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

/// Width in pixels of an 11 px label.
fn text_w(s: &str) -> f64 {
    s.chars().count() as f64 * 6.4
}

/// One bar of [`hbars`]: label, value, text written after the bar, exact value for
/// `data-value` (none: not written), colour.
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub text: String,
    pub exact: Option<u64>,
    pub color: &'static str,
    pub hover: String,
}

impl Bar {
    pub fn new(label: impl Into<String>, value: f64, text: impl Into<String>) -> Bar {
        Bar { label: label.into(), value, text: text.into(), exact: None, color: BAR, hover: String::new() }
    }
}

/// Horizontal bars: one per row, with its text after it. `id`: the figure's.
pub fn hbars(id: &str, title: &str, note: &str, rows: &[Bar]) -> String {
    let mut s = figure_open(id, title, note);
    if rows.is_empty() {
        s += "<p class=none>nothing to show</p></figure>";
        return s;
    }
    let lw = rows.iter().map(|r| text_w(&short(&r.label))).fold(40.0, f64::max) + 10.0;
    let tw = rows.iter().map(|r| text_w(&r.text)).fold(0.0, f64::max) + 8.0;
    let row_h = 18.0;
    let w = (lw + 240.0 + tw).max(420.0);
    let h = row_h * rows.len() as f64 + 4.0;
    let max = rows.iter().map(|r| r.value).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let _ = write!(s, "<svg width=\"{w:.0}\" height=\"{h}\" viewBox=\"0 0 {w:.0} {h}\" role=img>");
    for (i, r) in rows.iter().enumerate() {
        let y = i as f64 * row_h + 2.0;
        let bw = ((w - lw - tw) * r.value / max).max(if r.value > 0.0 { 1.0 } else { 0.0 });
        let data = r.exact.map_or(String::new(), |v| format!(" data-value=\"{v}\""));
        let _ = write!(
            s,
            "<text x=\"{x:.1}\" y=\"{ty}\" text-anchor=end>{l}</text><rect x=\"{lw:.1}\" y=\"{y}\" width=\"{bw:.1}\" height=\"{bh}\" fill=\"{c}\"{data}><title>{full}: {t}{hv}</title></rect><text x=\"{tx:.1}\" y=\"{ty}\">{t}</text>",
            x = lw - 6.0,
            ty = y + 12.5,
            l = esc(&short(&r.label)),
            bh = row_h - 4.0,
            c = r.color,
            full = esc(&r.label),
            t = esc(&r.text),
            hv = esc(&r.hover),
            tx = lw + bw + 4.0,
        );
    }
    s += "</svg></figure>";
    s
}

fn figure_open(id: &str, title: &str, note: &str) -> String {
    let mut s = if id.is_empty() { "<figure>".to_string() } else { format!("<figure id=\"{}\" class=fig>", esc(id)) };
    let _ = write!(s, "<figcaption>{}</figcaption>", esc(title));
    if !note.is_empty() {
        let _ = write!(s, "<p class=cap>{note}</p>");
    }
    s
}

/// Vertical columns, one per (label, count): a histogram over bins or intervals.
pub fn columns(id: &str, title: &str, note: &str, series: &[(String, u64)], unit: &str) -> String {
    let mut s = figure_open(id, title, note);
    if series.iter().all(|x| x.1 == 0) {
        s += "<p class=none>nothing to show</p></figure>";
        return s;
    }
    let (w, h, left, bottom) = (620.0, 170.0, 60.0, 34.0);
    let (top, tick) = nice_axis(series.iter().map(|x| x.1).max().unwrap_or(0) as f64);
    let cw = (w - left - 4.0) / series.len() as f64;
    let ph = h - bottom - 8.0;
    let _ = write!(s, "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=img>");
    y_axis(&mut s, left, w - 4.0, 8.0, ph, top, tick, |v| si(v, ""));
    let every = ((series.iter().map(|x| text_w(&x.0)).fold(0.0, f64::max) + 8.0) / cw).ceil().max(1.0) as usize;
    for (i, (label, v)) in series.iter().enumerate() {
        let bh = ph * *v as f64 / top;
        let x = left + i as f64 * cw;
        let _ = write!(
            s,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{bw:.2}\" height=\"{bh:.2}\" fill=\"{BAR}\"><title>{l}: {n} {unit}</title></rect>",
            y = 8.0 + ph - bh,
            bw = (cw - 1.0).max(0.5),
            l = esc(label),
            n = num(*v),
        );
        if i % every == 0 {
            let _ = write!(
                s,
                "<text x=\"{tx:.1}\" y=\"{ty}\" text-anchor=middle class=small>{l}</text>",
                tx = x + cw / 2.0,
                ty = 8.0 + ph + 12.0,
                l = esc(&short(label)),
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"{x}\" y=\"{y}\" text-anchor=middle class=small>{u}</text>",
        x = left + (w - left) / 2.0,
        y = h - 3.0,
        u = esc(unit)
    );
    s += "</svg></figure>";
    s
}

/// Grid lines and labels of a value axis from 0 to `top` every `tick`.
#[allow(clippy::too_many_arguments)]
fn y_axis(s: &mut String, left: f64, right: f64, y0: f64, ph: f64, top: f64, tick: f64, label: impl Fn(f64) -> String) {
    let mut v = 0.0;
    while v <= top * (1.0 + 1e-9) {
        let y = y0 + ph - ph * v / top;
        let _ = write!(
            s,
            "<line x1=\"{left}\" x2=\"{right}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/><text x=\"{lx}\" y=\"{ty:.1}\" text-anchor=end class=small>{l}</text>",
            lx = left - 4.0,
            ty = y + 3.5,
            l = esc(&label(v)),
        );
        v += tick;
    }
}

/// A series of a chart over time: its name, colour and amount per column.
pub struct Line {
    pub name: String,
    pub color: &'static str,
    pub values: Vec<f64>,
}

/// A chart over `tl`: rates (amount per column × `scale` / the column's seconds, in
/// `unit`), stacked areas or lines, a legend, and a hover text per column.
#[allow(clippy::too_many_arguments)]
pub fn over_time(
    id: &str,
    title: &str,
    note: &str,
    tl: &Timeline,
    lines: &[Line],
    unit: &str,
    scale: f64,
    stacked: bool,
) -> String {
    let mut s = figure_open(id, title, note);
    let n = tl.n;
    if lines.is_empty() || lines.iter().all(|l| l.values.iter().all(|v| *v <= 0.0)) {
        s += "<p class=none>nothing to show</p></figure>";
        return s;
    }
    let per_s = scale * 1000.0 / tl.step_ms;
    let rates: Vec<Vec<f64>> = lines.iter().map(|l| l.values.iter().map(|v| v * per_s).collect()).collect();
    // Stacked: each series' top, cumulative.
    let mut tops = rates.clone();
    if stacked {
        for k in 1..tops.len() {
            let (below, this) = tops.split_at_mut(k);
            for (t, b) in this[0].iter_mut().zip(&below[k - 1]) {
                *t += b;
            }
        }
    }
    let max = if stacked {
        tops.last().map_or(0.0, |t| t.iter().copied().fold(0.0, f64::max))
    } else {
        tops.iter().flatten().copied().fold(0.0, f64::max)
    };
    let (top, tick) = nice_axis(max);
    let (w, h, left, right, y0, bottom) = (640.0, 230.0, 78.0, 8.0, 8.0, 22.0);
    let ph = h - y0 - bottom;
    let cw = (w - left - right) / n as f64;
    let y = |v: f64| y0 + ph - ph * (v / top).min(1.0);
    let _ = write!(
        s,
        "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=img data-columns=\"{n}\" data-step-ms=\"{st}\" data-unit=\"{u}\">",
        st = tl.step_ms,
        u = esc(unit),
    );
    y_axis(&mut s, left, w - right, y0, ph, top, tick, |v| if v == 0.0 { "0".into() } else { si(v, unit) });
    // Time ticks: the smallest clock step giving at most 7 labels, on its multiples.
    let span = tl.step_ms * n as f64;
    let tick_ms = NICE_STEPS_MS
        .iter()
        .copied()
        .find(|t| span / t <= 7.0)
        .unwrap_or_else(|| (span / 7.0 / 604_800e3).ceil() * 604_800e3);
    let mut t = (tl.t0_ms / tick_ms).ceil() * tick_ms;
    while t <= tl.at(n) {
        let x = left + (t - tl.t0_ms) / tl.step_ms * cw;
        let l = tick_label(t, tick_ms);
        // A label that would pass the right edge ends at its tick.
        let anchor = if x + text_w(&l) * 0.45 > w { "end" } else { "middle" };
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{yb}\" stroke=\"#e4e4e4\"/><text x=\"{x:.1}\" y=\"{ty}\" text-anchor={anchor} class=small>{l}</text>",
            yb = y0 + ph + 3.0,
            ty = h - 8.0,
        );
        t += tick_ms;
    }
    let step_path = |vals: &[f64], back: Option<&[f64]>| {
        let mut p = String::new();
        for (i, v) in vals.iter().enumerate() {
            let (xa, xb, yy) = (left + i as f64 * cw, left + (i + 1) as f64 * cw, y(*v));
            let _ = write!(p, "{}{xa:.1} {yy:.1}L{xb:.1} {yy:.1}", if i == 0 { "M" } else { "L" });
        }
        if let Some(b) = back {
            for (i, v) in b.iter().enumerate().rev() {
                let (xa, xb, yy) = (left + i as f64 * cw, left + (i + 1) as f64 * cw, y(*v));
                let _ = write!(p, "L{xb:.1} {yy:.1}L{xa:.1} {yy:.1}");
            }
            p.push('Z');
        }
        p
    };
    let zero = vec![0.0; n];
    for (k, line) in lines.iter().enumerate() {
        if stacked {
            let below = if k == 0 { &zero } else { &tops[k - 1] };
            let _ =
                write!(s, "<path d=\"{}\" fill=\"{}\" stroke=\"none\"/>", step_path(&tops[k], Some(below)), line.color);
        } else {
            let _ = write!(
                s,
                "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\"/>",
                step_path(&tops[k], None),
                line.color
            );
        }
    }
    // Hover: one transparent column per column with traffic, saying what it holds.
    for i in 0..n {
        let total: f64 = rates.iter().map(|r| r[i]).sum();
        if total <= 0.0 {
            continue;
        }
        let mut t = format!("{} (+{}): ", utc_ms(tl.at(i), tl.step_ms), duration(tl.step_ms));
        if stacked {
            let _ = write!(t, "total {}", si(total, unit));
        }
        for (k, line) in lines.iter().enumerate() {
            if rates[k][i] > 0.0 {
                let _ = write!(t, "; {} {}", line.name, si(rates[k][i], unit));
            }
        }
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{y0}\" width=\"{cw:.2}\" height=\"{ph}\" fill=\"#000\" fill-opacity=\"0\"><title>{t}</title></rect>",
            x = left + i as f64 * cw,
            t = esc(&t),
        );
    }
    s += "</svg>";
    s += &legend(
        &lines.iter().map(|l| (l.name.clone(), l.color, l.values.iter().sum::<f64>())).collect::<Vec<_>>(),
        |v| {
            if unit.ends_with("bit/s") {
                bytes(v.round() as u64)
            } else {
                format!("{} frames", num(v.round() as u64))
            }
        },
    );
    s += "</figure>";
    s
}

/// A legend: a swatch, the name and the total of each series.
pub fn legend(items: &[(String, &str, f64)], total: impl Fn(f64) -> String) -> String {
    let mut s = String::from("<div class=legend>");
    for (name, color, v) in items {
        let _ = write!(
            s,
            "<span><i class=sw style=\"background:{color}\"></i>{} <b>{}</b></span>",
            esc(name),
            esc(&total(*v))
        );
    }
    s += "</div>";
    s
}

/// The ramp of the heat maps: white to dark blue, on a log scale of the count.
pub fn ramp(v: u64, max: u64) -> String {
    let f = ((v as f64).ln_1p() / (max as f64).ln_1p()).clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * f) as u8;
    format!("#{:02x}{:02x}{:02x}", lerp(222.0, 8.0), lerp(235.0, 48.0), lerp(247.0, 107.0))
}

/// The heat maps' colour scale from 1 to `max`, log.
fn ramp_legend(max: u64, what: &str) -> String {
    let mut s = String::from("<svg width=\"330\" height=\"22\" viewBox=\"0 0 330 22\" role=img>");
    let steps = 12;
    for k in 0..steps {
        let v = ((max as f64).ln_1p() * k as f64 / (steps - 1) as f64).exp_m1().round() as u64;
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"2\" width=\"14\" height=\"10\" fill=\"{c}\"/>",
            x = 20 + k * 14,
            c = ramp(v.max(1), max)
        );
    }
    let _ = write!(
        s,
        "<text x=\"16\" y=\"11\" text-anchor=end class=small>1</text><text x=\"{x}\" y=\"11\" class=small>{m} {w} (log scale; white: none)</text></svg>",
        x = 20 + steps * 14 + 4,
        m = num(max),
        w = esc(what),
    );
    s
}

/// A family over time: a heat map (x: intervals, y: bins in order) with its bins and
/// its colour scale.
pub fn heatmap(title: &str, note: &str, times: &[u64], bins: &[(String, BTreeMap<u64, u64>)], what: &str) -> String {
    let mut s = figure_open("", title, note);
    if bins.is_empty() || times.is_empty() {
        s += "<p class=none>nothing to show</p></figure>";
        return s;
    }
    let left = bins.iter().map(|b| text_w(&short(&b.0)) * 0.82).fold(30.0, f64::max) + 8.0;
    let w = 620.0;
    let bottom = 20.0;
    let cell_h = (220.0 / bins.len() as f64).clamp(3.0, 14.0);
    let h = cell_h * bins.len() as f64 + bottom + 4.0;
    let cw = (w - left) / times.len() as f64;
    let col: HashMap<u64, usize> = times.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    let max = bins.iter().flat_map(|b| b.1.values()).copied().max().unwrap_or(1).max(1);
    let _ = write!(s, "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=img>");
    let every = (9.0 / cell_h).ceil().max(1.0) as usize;
    // Bins from the bottom up.
    for (j, (bin, cells)) in bins.iter().enumerate() {
        let y = h - bottom - (j as f64 + 1.0) * cell_h;
        if j % every == 0 {
            let _ = write!(
                s,
                "<text x=\"{x:.1}\" y=\"{ty:.1}\" text-anchor=end class=small>{b}</text>",
                x = left - 4.0,
                ty = y + cell_h.min(9.0),
                b = esc(&short(bin))
            );
        }
        for (t, c) in cells {
            let Some(i) = col.get(t) else { continue };
            let _ = write!(
                s,
                "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{cw:.2}\" height=\"{cell_h:.2}\" fill=\"{f}\"><title>{when}, {b}: {n}</title></rect>",
                x = left + *i as f64 * cw,
                f = ramp(*c, max),
                when = utc(*t),
                b = esc(bin),
                n = num(*c),
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"{left:.1}\" y=\"{ly}\" class=small>{a}</text><text x=\"{w}\" y=\"{ly}\" text-anchor=end class=small>{b}</text></svg>",
        ly = h - 5.0,
        a = utc(times[0]),
        b = utc(times[times.len() - 1])
    );
    s += &ramp_legend(max, what);
    s += "</figure>";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_labels() {
        assert_eq!(esc("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
        assert_eq!(num(1234567), "1,234,567");
        assert_eq!(num(12), "12");
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_470_104_340), "2016-08-02 02:19:00");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500_000), "1.5 MB");
        assert_eq!(bytes(44_912_345), "44.9 MB");
        assert_eq!(si(2_500_000.0, "bit/s"), "2.5 Mbit/s");
        assert_eq!(si(999.0, "pkt/s"), "999 pkt/s");
        assert_eq!(si(0.25, "pkt/s"), "0.25 pkt/s");
        assert_eq!(si(0.000462, "pkt/s"), "0.000462 pkt/s");
        assert_eq!(si(0.0005, "pkt/s"), "0.0005 pkt/s");
        assert_eq!(duration(1000.0), "1 s");
        assert_eq!(duration(300e3), "5 min");
        assert_eq!(duration(20.0), "20 ms");
        assert_eq!(span_words(191.2), "3 min 11 s");
        assert_eq!(span_words(1007.7), "16 min 48 s");
        assert_eq!(span_words(0.25), "0.25 s");
        assert_eq!(utc_ms(1_470_104_340_250.0, 10.0), "2016-08-02 02:19:00.250");
        // Addresses are never shortened; longer labels keep both ends and stay apart.
        let a = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255";
        assert_eq!(short(a), a);
        let (x, y) = ("a".repeat(60) + "1", "a".repeat(60) + "2");
        assert!(short(&x) != short(&y) && short(&x).chars().count() == LABEL_MAX);
    }

    #[test]
    fn axes_are_round() {
        assert_eq!(nice_axis(9.3e6), (1e7, 2.5e6));
        assert_eq!(nice_axis(380.0), (400.0, 100.0));
        assert_eq!(nice_axis(0.0), (1.0, 0.25));
    }
}
