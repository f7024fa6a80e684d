//! `tapstat report OUTDIR`: one self-contained HTML page of a run's output.
//!
//! Everything is computed here and drawn as inline SVG: the page holds no script and
//! loads nothing (no network, no other file), so it opens anywhere, from a mail or an
//! archive. It reads, from the output directory:
//!
//! - `summary.json` (required: a finished run): the run's span and totals, and its
//!   health — drops of a live run, anomalies, evictions, capture damage, warnings,
//!   write errors;
//! - the flow logs (TSV or JSON lines, as written or compressed by `--compress`, or
//!   Parquet in a build with the `parquet` feature; at the top and in `--rotate`'s
//!   interval directories): the traffic over time (bit/s and frames/s per application
//!   and per direction), top applications, server names and talkers, the protocol
//!   split, and the RTT and retransmission distributions of TCP flows;
//! - `histograms.tsv` (`--histo-interval`): each family as a heat map over time when
//!   there are enough intervals, else as its distribution over the run.
//!
//! The page is in the order an operator reads a flow dashboard's first screen
//! (ntopng's, a Grafana flow board's): key figures, throughput over time, what and
//! who, then TCP quality, the histograms and the run's health.
//!
//! Traffic volume is bytes on the wire (`c_bytes_wire + s_bytes_wire`: whole frames,
//! headers included, as a link counter or a flow dashboard counts them); payload
//! bytes (`*_bytes_all`) appear only in hover texts, named as payload. The charts over
//! time get their step from the run's length (see `logs::Timeline`): 120 to 300
//! columns whatever the histograms' interval.
//!
//! Every string that comes from traffic (names, addresses) is escaped for HTML, and no
//! label is cut so that two look equal (`chart::short`).

mod chart;
mod logs;

use anyhow::{bail, Context, Result};
use chart::{bytes, duration, esc, num, si, utc, utc_ms, Bar, Line, BAR, OTHER, PALETTE};
use logs::{Agg, Flows, Histos, Timeline};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tapstat_analyze::histo::{Family, LOG_EDGES};

/// The report's name in the output directory.
pub const REPORT: &str = "report.html";

/// Series of a chart over time: the top applications, then "other".
const TIME_SERIES: usize = 9;

/// Fewer histogram intervals than this: each family is drawn as its distribution over
/// the run instead of a heat map of a few columns.
const HEAT_MIN_INTERVALS: usize = 10;

/// Writes the report of output directory `dir` to `out` (default `dir/report.html`);
/// returns where.
pub fn run(dir: &Path, out: Option<&Path>, top: usize) -> Result<PathBuf> {
    let summary_path = dir.join(crate::outdir::SUMMARY);
    let text = std::fs::read_to_string(&summary_path).with_context(|| {
        format!("{}: no summary.json (the output directory of a finished run is needed)", dir.display())
    })?;
    let summary: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not valid JSON", summary_path.display()))?;
    if !summary.is_object() {
        bail!("{}: not a tapstat summary", summary_path.display());
    }
    // At the top, or with --rotate in each interval directory.
    let mut histo: Option<Histos> = None;
    for d in std::iter::once(dir.to_path_buf()).chain(crate::outdir::interval_dirs(dir)?) {
        let p = d.join(crate::outdir::HISTOGRAMS);
        if let Ok(t) = std::fs::read_to_string(&p) {
            histo.get_or_insert_with(Histos::default).add(&t).with_context(|| format!("{}", p.display()))?;
        }
    }
    // The run's span: summary.json's, else (a hand-made or older directory) the
    // records' own, from a first pass.
    let f64_of = |k: &str| summary.get(k).and_then(serde_json::Value::as_f64).filter(|v| *v > 0.0);
    let span = match (f64_of("first_packet_s"), f64_of("last_packet_s")) {
        (Some(a), Some(b)) => Some((a * 1e3, b * 1e3)),
        _ => None,
    };
    let internal = summary
        .get("options")
        .and_then(|o| o.get("internal").or_else(|| o.get("net-file")))
        .is_some_and(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()) && v.as_str() != Some(""));
    let span = match span {
        Some(s) => Some(s),
        None => Flows::read(dir, Timeline { t0_ms: 0.0, step_ms: 1.0, n: 1 }, internal)?.span,
    };
    let timeline = span.map_or(Timeline { t0_ms: 0.0, step_ms: 1000.0, n: 1 }, |(a, b)| Timeline::for_span(a, b));
    let flows = Flows::read(dir, timeline, internal)?;
    let html = render(dir, &summary, histo.as_ref(), &flows, top.max(1));
    match out {
        // In the output directory: a file tapstat creates (never through a name it did
        // not create: unlinked first).
        None => {
            crate::outdir::write_new(dir, REPORT, &html)?;
            Ok(dir.join(REPORT))
        }
        Some(path) => {
            write_named(path, &html)?;
            Ok(path.to_path_buf())
        }
    }
}

/// Writes `text` to `path`, a path the user named, as it is given: never unlinked. An
/// existing regular file is overwritten in place (its inode, mode and owner kept, as
/// `cp` does); a path that exists and is not a regular file (a device such as
/// `/dev/null`, a FIFO, a directory, a symbolic link, even to a file) is refused.
fn write_named(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = || anyhow::anyhow!("report: {} is not a regular file", path.display());
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => return Err(refuse()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("report: {}", path.display())),
    }
    // No O_TRUNC: the file is checked (on the descriptor, so a swap since the check
    // above is caught too) before anything in it changes. O_NOFOLLOW refuses a link,
    // O_NONBLOCK keeps a FIFO from blocking the open.
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENXIO | libc::EISDIR)) => return Err(refuse()),
        Err(e) => return Err(e).with_context(|| format!("report: writing {}", path.display())),
    };
    let m = f.metadata().with_context(|| format!("report: {}", path.display()))?;
    if !m.file_type().is_file() {
        return Err(refuse());
    }
    f.set_len(0)
        .and_then(|()| f.write_all(text.as_bytes()))
        .with_context(|| format!("report: writing {}", path.display()))
}

/// The bins of `family` in display order: numeric bins by value; names and ports by
/// total, the `top` largest.
fn ordered_bins(h: &Histos, family: Family, top: usize) -> Vec<(String, BTreeMap<u64, u64>)> {
    let Some(bins) = h.by.get(family.name()) else { return Vec::new() };
    let mut v: Vec<(String, BTreeMap<u64, u64>)> = bins.iter().map(|(k, m)| (k.clone(), m.clone())).collect();
    if named(family) {
        v.sort_by_key(|(k, m)| (std::cmp::Reverse(total(m.values())), k.clone()));
        v.truncate(top);
        v.reverse();
    } else {
        v.sort_by(|a, b| {
            let (x, y) = (a.0.parse::<f64>().unwrap_or(f64::MAX), b.0.parse::<f64>().unwrap_or(f64::MAX));
            x.total_cmp(&y)
        });
    }
    v
}

/// Families whose bins are names or ports (shown top N), not values in order.
fn named(f: Family) -> bool {
    matches!(f, Family::App | Family::TcpPort | Family::UdpPort)
}

fn total<'a>(it: impl IntoIterator<Item = &'a u64>) -> u64 {
    it.into_iter().fold(0u64, |a, c| a.saturating_add(*c))
}

/// The entries of `m` by bytes on the wire, largest first.
fn ranked(m: &HashMap<String, Agg>) -> Vec<(&String, &Agg)> {
    let mut v: Vec<(&String, &Agg)> = m.iter().collect();
    v.sort_by_key(|(k, a)| (std::cmp::Reverse(a.wire), std::cmp::Reverse(a.flows), (*k).clone()));
    v
}

/// Percent of `part` in `whole`, for a text.
fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "–".into();
    }
    let p = part as f64 * 100.0 / whole as f64;
    if p >= 10.0 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// The top `n` of `m` by bytes on the wire as bars; `color` gives each its colour.
fn top_bars(m: &HashMap<String, Agg>, n: usize, color: impl Fn(&str) -> &'static str) -> Vec<Bar> {
    let all: u64 = m.values().fold(0u64, |a, x| a.saturating_add(x.wire));
    ranked(m)
        .into_iter()
        .take(n)
        .map(|(k, a)| Bar {
            label: k.clone(),
            value: a.wire as f64,
            text: format!("{} · {} · {} flows", bytes(a.wire), pct(a.wire, all), num(a.flows)),
            exact: Some(a.wire),
            color: color(k),
            hover: format!(
                " ({} bytes on the wire, {} frames; payload {})",
                num(a.wire),
                num(a.pkts),
                if a.payload > 0 { bytes(a.payload) } else { "none counted".into() }
            ),
        })
        .collect()
}

/// A distribution of values on edges: bins [edge_i, edge_i+1), the last open.
fn distribution(values: &[f64], edges: &[f64], label: impl Fn(f64) -> String) -> Vec<Bar> {
    let mut counts = vec![0u64; edges.len()];
    for v in values {
        let i = edges.partition_point(|e| e <= v).saturating_sub(1);
        counts[i] += 1;
    }
    let (first, last) = match (counts.iter().position(|c| *c > 0), counts.iter().rposition(|c| *c > 0)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Vec::new(),
    };
    (first..=last)
        .map(|i| {
            let name = match edges.get(i + 1) {
                Some(hi) => format!("{} – {}", label(edges[i]), label(*hi)),
                None => format!("≥ {}", label(edges[i])),
            };
            Bar::new(name, counts[i] as f64, format!("{} flows", num(counts[i])))
        })
        .collect()
}

/// The retransmitted share of TCP flows' data packets, in bins: none, then percent.
fn retx_bins(values: &[f64]) -> Vec<Bar> {
    let edges = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5];
    let none = values.iter().filter(|v| **v <= 0.0).count() as u64;
    let some: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
    let mut v = vec![Bar::new("none", none as f64, format!("{} flows", num(none)))];
    v.extend(distribution(&some, &edges, |x| format!("{} %", x * 100.0)));
    v
}

/// The anomaly that is no anomaly: a frame that is not IP (ARP, LLDP, EAPOL, STP...),
/// counted in summary.json's `non_ip_frames` and shown as such.
const NOT_IP: &str = "ethertype_not_ip";

fn health(summary: &serde_json::Value) -> String {
    let g = |k: &str| summary.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let mut rows: Vec<(String, String, bool)> = Vec::new();
    let mut row = |k: &str, v: String, bad: bool| rows.push((k.to_string(), v, bad));
    row("frames read", num(g("packets")), false);
    row("bytes on the wire", bytes(g("bytes")), false);
    row("non-IP frames (ARP, LLDP, EAPOL, STP...: in no flow)", num(g("non_ip_frames")), false);
    row("workers", num(g("workers")), false);
    row("flow table evictions", num(g("evictions")), g("evictions") > 0);
    let anomalies: u64 = summary.get("anomalies").and_then(|a| a.as_object()).map_or(0, |m| {
        total(m.iter().filter(|(k, _)| *k != NOT_IP).filter_map(|(_, v)| v.as_u64()).collect::<Vec<_>>().iter())
    });
    row("decoding anomalies", num(anomalies), anomalies > 0);
    if let Some(c) = summary.get("capture").and_then(|c| c.as_object()) {
        for (k, v) in c {
            let n = v.as_u64().unwrap_or(0);
            row(&format!("capture: {}", k.replace('_', " ")), num(n), n > 0 && k != "filtered_out");
        }
    }
    // Live runs: every counter of `live` (drops among them).
    if let Some(l) = summary.get("live").and_then(|c| c.as_object()) {
        for (k, v) in l {
            if let Some(n) = v.as_u64() {
                row(&format!("live: {}", k.replace('_', " ")), num(n), k.contains("drop") && n > 0);
            }
        }
    }
    let interrupted = summary.get("interrupted").and_then(serde_json::Value::as_bool).unwrap_or(false);
    row("interrupted", if interrupted { "yes" } else { "no" }.into(), interrupted);
    if let Some(e) = summary.get("write_error").and_then(|e| e.as_str()) {
        row("write error", format!("{e} ({} records not written)", num(g("records_not_written"))), true);
    }
    let mut s = String::from("<table class=kv>");
    for (k, v, bad) in rows {
        let _ = write!(s, "<tr{}><th>{}</th><td>{}</td></tr>", if bad { " class=bad" } else { "" }, esc(&k), esc(&v));
    }
    s += "</table>";
    let pairs = |key: &str| -> Vec<Bar> {
        let mut v: Vec<(String, u64)> = summary
            .get(key)
            .and_then(|m| m.as_object())
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| key != "anomalies" || *k != NOT_IP)
                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                    .filter(|x| x.1 > 0)
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by_key(|x| (std::cmp::Reverse(x.1), x.0.clone()));
        v.into_iter().map(|(k, n)| Bar::new(k, n as f64, num(n))).collect()
    };
    s += "<div class=grid>";
    s += &chart::hbars("records-by-log", "Records by log", "", &pairs("records"));
    s += &chart::hbars("end-reasons", "Why flows ended (records)", "", &pairs("end_reasons"));
    let mut anom = pairs("anomalies");
    for b in &mut anom {
        b.color = "#d62728";
    }
    s += &chart::hbars(
        "anomalies",
        "Decoding anomalies (frames)",
        "Damaged or undecodable frames (docs/METRICS.md lists each). Non-IP frames are not among them.",
        &anom,
    );
    s += "</div>";
    if let Some(w) = summary.get("warnings").and_then(|w| w.as_array()).filter(|w| !w.is_empty()) {
        s += "<h3>Warnings</h3><ul>";
        for x in w {
            let _ = write!(s, "<li>{}</li>", esc(x.as_str().unwrap_or_default()));
        }
        s += "</ul>";
    }
    s
}

/// The page's style: one sheet, no external resource.
const STYLE: &str = "\
body{font:13px/1.4 system-ui,sans-serif;margin:20px;color:#222;background:#fff;max-width:1340px}\
h1{font-size:20px;margin-bottom:4px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}h3{font-size:14px}\
nav a{margin-right:14px;color:#1f5f9f}\
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(650px,1fr));gap:14px 24px;align-items:start}\
figure{margin:0}figcaption{font-weight:600;margin:6px 0 2px}p.cap{margin:0 0 4px;color:#666;font-size:12px}\
svg{display:block;max-width:100%;height:auto}\
svg text{font-size:11px;fill:#333}svg text.small{font-size:10px;fill:#555}\
.legend{display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;margin:4px 0 0 78px}\
.legend i.sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}\
.legend b{font-weight:normal;color:#666}\
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}\
.card{border:1px solid #ddd;border-radius:4px;padding:8px 14px;min-width:130px}\
.card .v{font-size:20px;font-weight:600}.card .k{color:#666;font-size:12px}\
table.kv th{text-align:left;font-weight:normal;padding-right:20px;color:#555}\
tr.bad td{color:#b00;font-weight:600}p.none,p.note{color:#777}";

fn render(dir: &Path, summary: &serde_json::Value, histo: Option<&Histos>, flows: &Flows, top: usize) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><link rel=icon href=\"data:,\"><title>tapstat report</title><style>{STYLE}</style></head><body>\n"
    );
    let _ = write!(
        s,
        "<h1>tapstat report</h1><p>Output directory <code>{}</code>, tapstat {}; inputs: {}.</p>",
        esc(&dir.display().to_string()),
        esc(summary.get("tapstat_version").and_then(|v| v.as_str()).unwrap_or("?")),
        esc(&summary
            .get("inputs")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(", "))
            .unwrap_or_default())
    );
    s += "<nav><a href=\"#time\">Traffic over time</a><a href=\"#traffic\">Applications, talkers, names</a><a href=\"#tcp\">TCP</a><a href=\"#histograms\">Histograms</a><a href=\"#health\">Run health</a></nav>";

    let tl = flows.timeline;
    // The applications of the charts over time, and their colours, shared with the
    // top list.
    let apps = ranked(&flows.apps);
    let shown: Vec<&String> = apps.iter().take(TIME_SERIES).map(|(k, _)| *k).collect();
    let color_of = |app: &str| shown.iter().position(|a| a.as_str() == app).map_or(OTHER, |i| PALETTE[i]);

    // Key figures.
    let g = |k: &str| summary.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let f = |k: &str| summary.get(k).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    let (first, last) = (f("first_packet_s"), f("last_packet_s"));
    let secs = (last - first).max(0.0);
    let wire_total: Vec<f64> = {
        let mut v = vec![0.0; tl.n];
        for t in &flows.dir_time {
            for (a, b) in v.iter_mut().zip(t.wire.values()) {
                *a += b;
            }
        }
        v
    };
    let peak = wire_total.iter().copied().fold(0.0, f64::max) * 8.0 * 1000.0 / tl.step_ms;
    let non_ip = g("non_ip_frames");
    let cards: Vec<(String, String)> = vec![
        (
            if secs > 0.0 { chart::span_words(secs) } else { "–".into() },
            format!("{} – {} UTC", utc(first as u64), utc(last as u64)),
        ),
        (num(g("packets")), "frames".into()),
        (bytes(g("bytes")), "bytes on the wire".into()),
        (if secs > 0.0 { si(g("bytes") as f64 * 8.0 / secs, "bit/s") } else { "–".into() }, "mean rate".into()),
        (si(peak, "bit/s"), format!("peak rate over {} (flow logs)", duration(tl.step_ms))),
        (num(flows.records), "flow records".into()),
        (num(flows.apps.len() as u64), "applications".into()),
        (num(non_ip), "non-IP frames (ARP, LLDP...)".into()),
    ];
    s += "<div class=cards>";
    for (v, k) in cards {
        let _ = write!(s, "<div class=card><div class=v>{}</div><div class=k>{}</div></div>", esc(&v), esc(&k));
    }
    s += "</div>";

    // Traffic over time.
    let _ = write!(
        s,
        "<h2 id=time>Traffic over time</h2><p class=note>From the flow logs: each record's frames and bytes on the wire \
(whole frames, headers included: <code>c_bytes_wire</code>, <code>s_bytes_wire</code>) spread evenly from the flow's first \
to its last packet (UDP: each side's own), as flow dashboards do; a long flow's burst is averaged over its life. \
<b>One column = {}</b> ({} columns from {} UTC; the step is chosen from the run's length). Hover a column for its values.</p><div class=grid>",
        duration(tl.step_ms),
        tl.n,
        utc_ms(tl.t0_ms, tl.step_ms),
    );
    let mut by_app: Vec<Line> = Vec::new();
    let mut by_app_pkts: Vec<Line> = Vec::new();
    let mut other = (vec![0.0; tl.n], vec![0.0; tl.n]);
    let mut has_other = false;
    for (k, _) in &apps {
        let Some(t) = flows.app_time.get(*k) else { continue };
        if shown.contains(k) {
            by_app.push(Line { name: (*k).clone(), color: color_of(k), values: t.wire.values() });
            by_app_pkts.push(Line { name: (*k).clone(), color: color_of(k), values: t.pkts.values() });
        } else {
            has_other = true;
            for (a, b) in other.0.iter_mut().zip(t.wire.values()) {
                *a += b;
            }
            for (a, b) in other.1.iter_mut().zip(t.pkts.values()) {
                *a += b;
            }
        }
    }
    if has_other {
        by_app.push(Line { name: "other".into(), color: OTHER, values: other.0 });
        by_app_pkts.push(Line { name: "other".into(), color: OTHER, values: other.1 });
    }
    let step = duration(tl.step_ms);
    let top_note = if has_other { format!("top {TIME_SERIES} + other, ") } else { String::new() };
    s += &chart::over_time(
        "throughput-app",
        &format!("Throughput by application (bit/s on the wire, {top_note}stacked)"),
        &format!("bytes on the wire × 8 per second, mean over each {step} column"),
        &tl,
        &by_app,
        "bit/s",
        8.0,
        true,
    );
    s += &chart::over_time(
        "packets-app",
        &format!("Frames per second by application ({top_note}stacked)"),
        &format!("frames (c_pkts_all + s_pkts_all) per second, mean over each {step} column"),
        &tl,
        &by_app_pkts,
        "pkt/s",
        1.0,
        true,
    );
    let labels = flows.dir_labels();
    let dirs: Vec<usize> = (0..4).filter(|d| !labels[*d].is_empty()).collect();
    let dir_note = if flows.internal {
        "by the run's internal networks (-N, --internal): in = sent to an internal address from outside, out = sent from an internal address outside"
    } else {
        "the run had no internal networks (-N): by the flow's client (the side that opened it) and server"
    };
    let dcolors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#7f7f7f"];
    let dlines = |pkts: bool| -> Vec<Line> {
        dirs.iter()
            .map(|d| Line {
                name: labels[*d].into(),
                color: dcolors[*d],
                values: if pkts { flows.dir_time[*d].pkts.values() } else { flows.dir_time[*d].wire.values() },
            })
            .filter(|l| l.values.iter().any(|v| *v > 0.0) || !flows.internal)
            .collect()
    };
    s += &chart::over_time(
        "throughput-dir",
        "Throughput by direction (bit/s on the wire)",
        dir_note,
        &tl,
        &dlines(false),
        "bit/s",
        8.0,
        false,
    );
    s += &chart::over_time(
        "packets-dir",
        "Frames per second by direction",
        dir_note,
        &tl,
        &dlines(true),
        "pkt/s",
        1.0,
        false,
    );
    s += "</div>";

    // What and who.
    s += "<h2 id=traffic>Applications, talkers and names</h2>";
    let _ = write!(
        s,
        "<p class=note>Bytes on the wire (whole frames, headers included), from {} flow record(s) in {}.",
        num(flows.records),
        if flows.read.is_empty() { "no log".into() } else { esc(&flows.read.join(", ")) }
    );
    if !flows.skipped.is_empty() {
        let _ = write!(s, " Not read: {}.", esc(&flows.skipped.join(", ")));
    }
    s += " Hover a bar for frames and payload bytes.</p><div class=grid>";
    s += &chart::hbars(
        "top-apps",
        &format!("Top {top} applications by bytes on the wire"),
        "colours as in the charts over time; grey: in \"other\" there",
        &top_bars(&flows.apps, top, color_of),
    );
    s += &chart::hbars(
        "top-talkers",
        &format!("Top {top} talkers by bytes on the wire"),
        "an address's flows as client or server, both directions",
        &top_bars(&flows.talkers, top, |_| BAR),
    );
    s += &chart::hbars(
        "top-names",
        &format!("Top {top} server names by bytes on the wire"),
        "TLS SNI, else QUIC SNI, else HTTP host, else the DNS name of the flow",
        &top_bars(&flows.names, top, |_| BAR),
    );
    // The protocol split: transports from the logs, non-IP frames from the summary
    // (its bytes less those of the IP flows it counted in `traffic`).
    let traffic = |k: &str| -> u64 {
        summary.get("traffic").and_then(|t| t.as_object()).map_or(0, |m| {
            total(m.values().filter_map(|c| c.get(k).and_then(|v| v.as_u64())).collect::<Vec<_>>().iter())
        })
    };
    let non_ip_bytes = if summary.get("traffic").is_some() { g("bytes").saturating_sub(traffic("bytes")) } else { 0 };
    let mut proto: Vec<(&str, Agg)> =
        vec![("TCP", flows.protos[0]), ("UDP", flows.protos[1]), ("other IP (ICMP, ...)", flows.protos[2])];
    proto.push(("non-IP frames (ARP, LLDP, EAPOL...)", Agg { flows: 0, wire: non_ip_bytes, payload: 0, pkts: non_ip }));
    let proto_all = proto.iter().fold(0u64, |a, p| a.saturating_add(p.1.wire));
    let bars = |v: &[(&str, Agg)], all: u64| -> Vec<Bar> {
        v.iter()
            .filter(|(_, a)| a.wire > 0 || a.pkts > 0)
            .map(|(k, a)| Bar {
                label: (*k).into(),
                value: a.wire as f64,
                text: format!("{} · {} · {} frames", bytes(a.wire), pct(a.wire, all), num(a.pkts)),
                exact: Some(a.wire),
                color: if k.starts_with("non-IP") { "#8c8c8c" } else { BAR },
                hover: String::new(),
            })
            .collect()
    };
    s += &chart::hbars(
        "protocols",
        "Protocols by bytes on the wire",
        "transport of the flows; non-IP frames are in no flow",
        &bars(&proto, proto_all),
    );
    let ver = [("IPv4", flows.versions[0]), ("IPv6", flows.versions[1])];
    s += &chart::hbars(
        "ip-versions",
        "IP versions by bytes on the wire",
        "of the flows' addresses (the innermost header)",
        &bars(&ver, flows.versions[0].wire.saturating_add(flows.versions[1].wire)),
    );
    s += "</div>";

    s += "<h2 id=tcp>RTT and retransmissions (TCP)</h2><div class=grid>";
    let rtt_edges: Vec<f64> =
        LOG_EDGES[..LOG_EDGES.partition_point(|e| *e <= 100_000_000)].iter().map(|e| *e as f64 / 1000.0).collect();
    let ms = |v: f64| format!("{v} ms");
    s += &chart::hbars(
        "rtt-c",
        "Mean RTT of the client's data (c_rtt_avg), flows",
        "",
        &chart_distribution(&flows.rtt[0], &rtt_edges, ms),
    );
    s += &chart::hbars(
        "rtt-s",
        "Mean RTT of the server's data (s_rtt_avg), flows",
        "",
        &chart_distribution(&flows.rtt[1], &rtt_edges, ms),
    );
    s += &chart::hbars("retx", "Retransmitted share of data packets, TCP flows with data", "", &retx_bins(&flows.retx));
    s += "</div>";

    s += "<h2 id=histograms>Histograms (histograms.tsv)</h2>";
    match histo {
        None => {
            s += "<p class=note>No histograms.tsv in this directory (a run with <code>--histo-interval off</code>).</p>"
        }
        Some(h) => histograms(&mut s, h, top),
    }

    s += "<h2 id=health>Run health</h2>";
    s += &health(summary);
    s += "</body></html>\n";
    s
}

fn chart_distribution(values: &[f64], edges: &[f64], label: impl Fn(f64) -> String) -> Vec<Bar> {
    distribution(values, edges, label)
}

/// The histograms: a heat map per family over the intervals, or, with fewer than
/// [`HEAT_MIN_INTERVALS`] intervals (a run shorter than a few intervals), each family's
/// distribution over the run.
fn histograms(s: &mut String, h: &Histos, top: usize) {
    let times: Vec<u64> = h.times.iter().copied().collect();
    let step = times.windows(2).map(|w| w[1] - w[0]).min();
    let heat = times.len() >= HEAT_MIN_INTERVALS;
    let _ = write!(
        s,
        "<p class=note>{} interval(s){} (<code>--histo-interval</code>). {}</p><div class=grid>",
        times.len(),
        step.map_or(String::new(), |st| format!(" of {} at most", duration(st as f64 * 1000.0))),
        if heat {
            "Heat maps: one column per interval with data, one row per bin, darker = more (log scale, see each map's scale); hover for counts."
        } else {
            "Too few intervals for a heat map: each family's distribution over the whole run (the traffic over time is above, from the flow logs)."
        }
    );
    if heat {
        let per =
            |name: &str| h.per_time(name).into_iter().map(|(t, c)| (utc(t)[11..16].to_string(), c)).collect::<Vec<_>>();
        *s += &chart::columns("", "IP packets per interval", "", &per(Family::IpLen.name()), "packets");
        *s += &chart::columns("", "Flows per interval (records due)", "", &per(Family::App.name()), "flows");
    }
    for f in Family::ALL {
        let bins = ordered_bins(h, f, top);
        let title = format!(
            "{} ({} per bin{})",
            f.name(),
            f.counts(),
            if named(f) { format!(", top {top}") } else { String::new() }
        );
        if heat {
            *s += &chart::heatmap(&title, "", &times, &bins, f.counts());
        } else if named(f) {
            let rows: Vec<Bar> = bins
                .iter()
                .rev()
                .map(|(k, m)| {
                    let n = total(m.values());
                    Bar::new(k.clone(), n as f64, num(n))
                })
                .collect();
            *s += &chart::hbars("", &title, "", &rows);
        } else {
            let rows: Vec<(String, u64)> = bins.iter().map(|(k, m)| (k.clone(), total(m.values()))).collect();
            *s += &chart::columns("", &title, "bins from the smallest value up", &rows, f.counts());
        }
    }
    *s += "</div>";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_count_every_value_once() {
        let d = distribution(&[0.0, 0.5, 1.5, 3.0, 100.0], &[0.0, 1.0, 2.0, 5.0], |v| v.to_string());
        let total: f64 = d.iter().map(|x| x.value).sum();
        assert_eq!(total, 5.0);
        assert_eq!(d.last().unwrap().label, "≥ 5");
        assert_eq!(d[0].value, 2.0);
    }
}
