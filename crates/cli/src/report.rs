//! `tapstat report OUTDIR`: one self-contained HTML page of a run's output.
//!
//! Everything is computed here and drawn as inline SVG: the page holds no script and
//! loads nothing (no network, no other file), so it opens anywhere, from a mail or an
//! archive. It reads, from the output directory:
//!
//! - `summary.json` (required: a finished run): the run's health — packets, drops of a
//!   live run, anomalies, evictions, capture damage, warnings, write errors;
//! - `histograms.tsv` (`--histo-interval`): packets and flows per interval, and each
//!   family as a heat map over time (interval × bin, darker = more) beside its total
//!   over the run;
//! - the flow logs (TSV or JSON lines, as written or compressed by `--compress`, or
//!   Parquet in a build with the `parquet` feature; at the top and in `--rotate`'s
//!   interval directories): top applications, server names (TLS SNI, else HTTP host,
//!   else the DNS name) and talkers by bytes, and the RTT and retransmission
//!   distributions of TCP flows.
//!
//! Every string that comes from traffic (names, addresses) is escaped for HTML.

use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tapstat_analyze::histo::{Family, LOG_EDGES};

/// The report's name in the output directory.
pub const REPORT: &str = "report.html";

/// The bars' colour; the screenshot test looks for it.
const BAR: &str = "#1f77b4";

/// The flow logs the report reads.
const FLOW_LOGS: [&str; 4] = ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete", "log_other"];

/// The columns the report uses.
const COLS: [&str; 16] = [
    "c_ip",
    "s_ip",
    "c_bytes_all",
    "s_bytes_all",
    "c_pkts_all",
    "s_pkts_all",
    "c_pkts_data",
    "s_pkts_data",
    "c_pkts_retx",
    "s_pkts_retx",
    "c_rtt_avg",
    "s_rtt_avg",
    "app",
    "c_tls_SNI",
    "http_hostname",
    "fqdn",
];

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
    let flows = Flows::read(dir)?;
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

/// histograms.tsv: count per (interval, histogram, bin), directions summed.
#[derive(Default)]
struct Histos {
    times: BTreeSet<u64>,
    /// histogram -> bin -> time -> count
    by: BTreeMap<String, BTreeMap<String, BTreeMap<u64, u64>>>,
}

impl Histos {
    /// Adds the rows of one histograms file.
    fn add(&mut self, text: &str) -> Result<()> {
        let mut lines = text.lines();
        if lines.next() != Some("time\thistogram\tdirection\tbin\tcount") {
            bail!("not a histograms file (header)");
        }
        let h = self;
        for (i, l) in lines.enumerate() {
            let f: Vec<&str> = l.split('\t').collect();
            let (Some(t), Some(c)) =
                (f.first().and_then(|t| t.parse().ok()), f.get(4).and_then(|c| c.parse::<u64>().ok()))
            else {
                bail!("line {}: not time, histogram, direction, bin, count", i + 2);
            };
            h.times.insert(t);
            // Counts from a file anyone may have written: added saturating, never
            // wrapped (nor a panic in a build with overflow checks).
            let e =
                h.by.entry(f[1].to_string()).or_default().entry(f[3].to_string()).or_default().entry(t).or_default();
            *e = e.saturating_add(c);
        }
        Ok(())
    }

    /// Total per interval of histogram `name`.
    fn per_time(&self, name: &str) -> Vec<(u64, u64)> {
        let mut m: BTreeMap<u64, u64> = self.times.iter().map(|t| (*t, 0)).collect();
        for bins in self.by.get(name).into_iter().flat_map(|b| b.values()) {
            for (t, c) in bins {
                let e = m.entry(*t).or_default();
                *e = e.saturating_add(*c);
            }
        }
        m.into_iter().collect()
    }
}

/// What the flow logs say, aggregated.
#[derive(Default)]
struct Flows {
    read: Vec<String>,
    skipped: Vec<String>,
    records: u64,
    apps: HashMap<String, (u64, u64)>,
    names: HashMap<String, (u64, u64)>,
    talkers: HashMap<String, (u64, u64)>,
    /// RTT samples (ms), client and server side.
    rtt: [Vec<f64>; 2],
    /// Per TCP flow with data: retransmitted / data packets.
    retx: Vec<f64>,
}

impl Flows {
    fn read(dir: &Path) -> Result<Flows> {
        let mut f = Flows::default();
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(crate::outdir::interval_dirs(dir)?);
        for d in &dirs {
            for log in FLOW_LOGS {
                for (ext, jsonl) in [("", false), (".jsonl", true)] {
                    // As written, or through --compress's zstd or gzip (a live run's
                    // files hold a frame or member per flush: both decoders read on).
                    for comp in ["", ".zst", ".gz"] {
                        let p = d.join(format!("{log}{ext}{comp}"));
                        if !p.is_file() {
                            continue;
                        }
                        let file = std::fs::File::open(&p).with_context(|| format!("reading {}", p.display()))?;
                        let reader: Box<dyn std::io::Read> = match comp {
                            ".zst" => Box::new(
                                zstd::stream::read::Decoder::new(file)
                                    .with_context(|| format!("reading {}", p.display()))?,
                            ),
                            ".gz" => Box::new(flate2::read::MultiGzDecoder::new(file)),
                            _ => Box::new(file),
                        };
                        // Line by line: a day's logs need not fit in memory.
                        let lines = std::io::BufRead::lines(std::io::BufReader::new(reader)).map_while(Result::ok);
                        f.add_log(lines, jsonl);
                        f.read.push(p.strip_prefix(dir).unwrap_or(&p).display().to_string());
                    }
                }
                let p = d.join(format!("{log}.parquet"));
                if p.is_file() {
                    let name = p.strip_prefix(dir).unwrap_or(&p).display().to_string();
                    // A build without the `parquet` feature cannot read it: listed as
                    // not read, with why.
                    match tapstat_sink::parquet::for_each_row(&p, &COLS, |r| f.add(r)) {
                        Ok(()) => f.read.push(name),
                        Err(e) => f.skipped.push(format!("{name} ({e})")),
                    }
                }
            }
        }
        Ok(f)
    }

    fn add_log(&mut self, mut lines: impl Iterator<Item = String>, jsonl: bool) {
        if jsonl {
            for l in lines {
                let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(&l) else { continue };
                let get = |c: &str| match m.get(c) {
                    Some(serde_json::Value::String(s)) => Some(s.clone()),
                    Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                    _ => None,
                };
                let rec: Vec<Option<String>> = COLS.iter().map(|c| get(c)).collect();
                self.add(&rec);
            }
            return;
        }
        let Some(header) = lines.next() else { return };
        let idx: Vec<Option<usize>> = COLS.iter().map(|c| header.split('\t').position(|h| h == *c)).collect();
        for l in lines {
            let f: Vec<&str> = l.split('\t').collect();
            let rec: Vec<Option<String>> = idx
                .iter()
                .map(|i| i.and_then(|i| f.get(i)).filter(|v| !v.is_empty()).map(|v| tapstat_record::tsv::unescape(v)))
                .collect();
            self.add(&rec);
        }
    }

    /// One record, its values in [`COLS`] order.
    fn add(&mut self, r: &[Option<String>]) {
        let num = |i: usize| r[i].as_deref().and_then(|v| v.parse::<f64>().ok());
        let int = |i: usize| num(i).unwrap_or(0.0) as u64;
        self.records += 1;
        let bytes = int(2).saturating_add(int(3));
        let bump = |m: &mut HashMap<String, (u64, u64)>, k: &str| {
            let e = m.entry(k.to_string()).or_default();
            e.0 = e.0.saturating_add(1);
            e.1 = e.1.saturating_add(bytes);
        };
        bump(&mut self.apps, r[12].as_deref().unwrap_or("unknown"));
        if let Some(n) = r[13].as_deref().or(r[14].as_deref()).or(r[15].as_deref()) {
            bump(&mut self.names, n);
        }
        for ip in [&r[0], &r[1]].into_iter().flatten() {
            bump(&mut self.talkers, ip);
        }
        for (k, i) in [(0, 10), (1, 11)] {
            if let Some(v) = num(i) {
                self.rtt[k].push(v);
            }
        }
        // TCP records (the only ones with pkts_retx) with data.
        let data = int(6) + int(7);
        if data > 0 && (r[8].is_some() || r[9].is_some()) {
            self.retx.push((int(8) + int(9)) as f64 / data as f64);
        }
    }
}

/// Escapes text for HTML.
fn esc(s: &str) -> String {
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

/// A whole number with thin separators.
fn num(n: u64) -> String {
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

fn bytes(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

fn utc(t: u64) -> String {
    let (y, m, d, hh, mm, ss) = tapstat_record::civil(t);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}")
}

/// Horizontal bars: one per (label, value), with `value_text` written after each.
fn hbars(title: &str, rows: &[(String, f64, String)]) -> String {
    let mut s = format!("<figure><figcaption>{}</figcaption>", esc(title));
    if rows.is_empty() {
        s += "<p class=none>nothing to show</p></figure>";
        return s;
    }
    let (w, lw, row_h) = (520.0, 190.0, 18.0);
    let h = row_h * rows.len() as f64 + 4.0;
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let _ = write!(s, "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=img>");
    for (i, (label, v, text)) in rows.iter().enumerate() {
        let y = i as f64 * row_h + 2.0;
        let bw = ((w - lw - 110.0) * v / max).max(if *v > 0.0 { 1.0 } else { 0.0 });
        let short: String = label.chars().take(30).collect();
        let _ = write!(
            s,
            "<text x=\"{x}\" y=\"{ty}\" text-anchor=end>{l}</text><rect x=\"{lw}\" y=\"{y}\" width=\"{bw:.1}\" height=\"{bh}\" fill=\"{BAR}\"><title>{full}: {t}</title></rect><text x=\"{tx:.1}\" y=\"{ty}\">{t}</text>",
            x = lw - 6.0,
            ty = y + 12.5,
            l = esc(&short),
            bh = row_h - 4.0,
            full = esc(label),
            t = esc(text),
            tx = lw + bw + 4.0,
        );
    }
    s += "</svg></figure>";
    s
}

/// Vertical columns over the intervals.
fn columns(title: &str, series: &[(u64, u64)], unit: &str) -> String {
    let mut s = format!("<figure><figcaption>{}</figcaption>", esc(title));
    if series.is_empty() {
        s += "<p class=none>nothing to show</p></figure>";
        return s;
    }
    let (w, h, left, bottom) = (520.0, 170.0, 60.0, 22.0);
    let max = series.iter().map(|x| x.1).max().unwrap_or(0).max(1) as f64;
    let cw = (w - left) / series.len() as f64;
    let _ = write!(s, "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=img>");
    let _ = write!(
        s,
        "<text x=\"{x}\" y=\"12\" text-anchor=end>{m}</text><text x=\"{x}\" y=\"{y0}\" text-anchor=end>0</text>",
        x = left - 4.0,
        m = num(max as u64),
        y0 = h - bottom
    );
    for (i, (t, v)) in series.iter().enumerate() {
        let bh = (h - bottom - 6.0) * *v as f64 / max;
        let _ = write!(
            s,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{bw:.2}\" height=\"{bh:.2}\" fill=\"{BAR}\"><title>{when}: {n} {unit}</title></rect>",
            x = left + i as f64 * cw,
            y = h - bottom - bh,
            bw = (cw - 1.0).max(0.5),
            when = utc(*t),
            n = num(*v),
        );
    }
    let _ = write!(
        s,
        "<text x=\"{left}\" y=\"{ly}\">{a}</text><text x=\"{w}\" y=\"{ly}\" text-anchor=end>{b}</text></svg></figure>",
        ly = h - 6.0,
        a = utc(series[0].0),
        b = utc(series[series.len() - 1].0)
    );
    s
}

/// The ramp of the heat maps: white to dark blue, on a log scale of the count.
fn ramp(v: u64, max: u64) -> String {
    let f = ((v as f64).ln_1p() / (max as f64).ln_1p()).clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * f) as u8;
    format!("#{:02x}{:02x}{:02x}", lerp(222.0, 8.0), lerp(235.0, 48.0), lerp(247.0, 107.0))
}

/// A family over time: a heat map (x: intervals, y: bins in order) with its bins.
fn heatmap(title: &str, times: &[u64], bins: &[(String, BTreeMap<u64, u64>)]) -> String {
    let mut s = format!("<figure><figcaption>{}</figcaption>", esc(title));
    if bins.is_empty() || times.is_empty() {
        s += "<p class=none>nothing to show</p></figure>";
        return s;
    }
    let (w, left, bottom) = (520.0, 70.0, 20.0);
    let cell_h = (220.0 / bins.len() as f64).clamp(3.0, 14.0);
    let h = cell_h * bins.len() as f64 + bottom + 4.0;
    let cw = (w - left) / times.len() as f64;
    let col: HashMap<u64, usize> = times.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    let max = bins.iter().flat_map(|b| b.1.values()).copied().max().unwrap_or(1).max(1);
    let _ = write!(s, "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=img>");
    let every = (bins.len() as f64 * 11.0 / (cell_h * bins.len() as f64)).ceil().max(1.0) as usize;
    // Bins from the bottom up.
    for (j, (bin, cells)) in bins.iter().enumerate() {
        let y = h - bottom - (j as f64 + 1.0) * cell_h;
        if j % every == 0 {
            let _ = write!(
                s,
                "<text x=\"{x}\" y=\"{ty:.1}\" text-anchor=end class=small>{b}</text>",
                x = left - 4.0,
                ty = y + cell_h.min(11.0),
                b = esc(&bin.chars().take(12).collect::<String>())
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
        "<text x=\"{left}\" y=\"{ly}\" class=small>{a}</text><text x=\"{w}\" y=\"{ly}\" text-anchor=end class=small>{b}</text></svg></figure>",
        ly = h - 5.0,
        a = utc(times[0]),
        b = utc(times[times.len() - 1])
    );
    s
}

/// The bins of `family` in display order: numeric bins by value; names and ports by
/// total, the `top` largest.
fn ordered_bins(h: &Histos, family: Family, top: usize) -> Vec<(String, BTreeMap<u64, u64>)> {
    let Some(bins) = h.by.get(family.name()) else { return Vec::new() };
    let mut v: Vec<(String, BTreeMap<u64, u64>)> = bins.iter().map(|(k, m)| (k.clone(), m.clone())).collect();
    match family {
        Family::App | Family::TcpPort | Family::UdpPort => {
            v.sort_by_key(|(k, m)| (std::cmp::Reverse(m.values().fold(0u64, |a, c| a.saturating_add(*c))), k.clone()));
            v.truncate(top);
            v.reverse();
        }
        _ => v.sort_by(|a, b| {
            let (x, y) = (a.0.parse::<f64>().unwrap_or(f64::MAX), b.0.parse::<f64>().unwrap_or(f64::MAX));
            x.total_cmp(&y)
        }),
    }
    v
}

/// The top `n` of `m` by bytes: (label, value, text).
fn top_by_bytes(m: &HashMap<String, (u64, u64)>, n: usize) -> Vec<(String, f64, String)> {
    let mut v: Vec<(&String, &(u64, u64))> = m.iter().collect();
    v.sort_by_key(|(k, (f, b))| (std::cmp::Reverse(*b), std::cmp::Reverse(*f), (*k).clone()));
    v.into_iter()
        .take(n)
        .map(|(k, (f, b))| (k.clone(), *b as f64, format!("{} · {} flows", bytes(*b), num(*f))))
        .collect()
}

/// A distribution of values on edges: bins [edge_i, edge_i+1), the last open.
fn distribution(values: &[f64], edges: &[f64], label: impl Fn(f64) -> String) -> Vec<(String, f64, String)> {
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
            (name, counts[i] as f64, num(counts[i]))
        })
        .collect()
}

/// The retransmitted share of TCP flows' data packets, in bins: none, then percent.
fn retx_bins(values: &[f64]) -> Vec<(String, f64, String)> {
    let edges = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5];
    let none = values.iter().filter(|v| **v <= 0.0).count() as u64;
    let some: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
    let mut v = vec![("none".to_string(), none as f64, num(none))];
    v.extend(distribution(&some, &edges, |x| format!("{} %", x * 100.0)));
    v
}

fn health(summary: &serde_json::Value) -> String {
    let g = |k: &str| summary.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let mut rows: Vec<(String, String, bool)> = Vec::new();
    let mut row = |k: &str, v: String, bad: bool| rows.push((k.to_string(), v, bad));
    row("frames read", num(g("packets")), false);
    row("bytes", bytes(g("bytes")), false);
    row("frames without IP", num(g("non_ip_frames")), false);
    let first = summary.get("first_packet_s").and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    let last = summary.get("last_packet_s").and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    row("packet time", format!("{} – {} UTC", utc(first as u64), utc(last as u64)), false);
    row("workers", num(g("workers")), false);
    row("flow table evictions", num(g("evictions")), g("evictions") > 0);
    let anomalies: u64 = summary
        .get("anomalies")
        .and_then(|a| a.as_object())
        .map_or(0, |m| m.values().filter_map(|v| v.as_u64()).fold(0u64, |a, c| a.saturating_add(c)));
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
    let pairs = |key: &str| -> Vec<(String, f64, String)> {
        let mut v: Vec<(String, u64)> = summary
            .get(key)
            .and_then(|m| m.as_object())
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0))).filter(|x| x.1 > 0).collect())
            .unwrap_or_default();
        v.sort_by_key(|x| (std::cmp::Reverse(x.1), x.0.clone()));
        v.into_iter().map(|(k, n)| (k, n as f64, num(n))).collect()
    };
    s += "<div class=grid>";
    s += &hbars("Records by log", &pairs("records"));
    s += &hbars("Why flows ended", &pairs("end_reasons"));
    s += &hbars("Decoding anomalies", &pairs("anomalies"));
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

fn render(dir: &Path, summary: &serde_json::Value, histo: Option<&Histos>, flows: &Flows, top: usize) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><link rel=icon href=\"data:,\"><title>tapstat report</title><style>\
body{font:13px/1.4 system-ui,sans-serif;margin:20px;color:#222;background:#fff}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}h3{font-size:14px}\
.grid{display:grid;grid-template-columns:repeat(auto-fill,540px);gap:10px 20px}\
figure{margin:0}figcaption{font-weight:600;margin:6px 0}\
svg text{font-size:11px;fill:#333}svg text.small{font-size:9px}\
table.kv th{text-align:left;font-weight:normal;padding-right:20px;color:#555}\
tr.bad td{color:#b00;font-weight:600}p.none,p.note{color:#777}\
</style></head><body>\n",
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

    s += "<h2 id=histograms>Link histograms over time</h2>";
    match histo {
        None => {
            s += "<p class=note>No histograms.tsv in this directory (a run with <code>--histo-interval off</code>).</p>"
        }
        Some(h) => {
            let times: Vec<u64> = h.times.iter().copied().collect();
            let step = times.windows(2).map(|w| w[1] - w[0]).min();
            let _ = write!(
                s,
                "<p class=note>{} interval(s){}; heat maps: one column per interval with data, one row per bin, darker = more (log scale); hover for counts.</p><div class=grid>",
                times.len(),
                step.map_or(String::new(), |st| format!(" of {st} s at most"))
            );
            s += &columns("IP packets per interval", &h.per_time(Family::IpLen.name()), "packets");
            s += &columns("Flows per interval (records due)", &h.per_time(Family::App.name()), "flows");
            for f in Family::ALL {
                let bins = ordered_bins(h, f, top);
                let title = format!(
                    "{} ({} per bin{})",
                    f.name(),
                    f.counts(),
                    if matches!(f, Family::App | Family::TcpPort | Family::UdpPort) {
                        format!(", top {top}")
                    } else {
                        String::new()
                    }
                );
                s += &heatmap(&title, &times, &bins);
            }
            s += "</div>";
        }
    }

    s += "<h2 id=traffic>Applications, server names and talkers</h2>";
    let _ = write!(
        s,
        "<p class=note>From {} flow record(s) in {}.",
        num(flows.records),
        if flows.read.is_empty() { "no log".into() } else { esc(&flows.read.join(", ")) }
    );
    if !flows.skipped.is_empty() {
        let _ = write!(s, " Not read: {}.", esc(&flows.skipped.join(", ")));
    }
    s += "</p><div class=grid>";
    s += &hbars(&format!("Top {top} applications by bytes"), &top_by_bytes(&flows.apps, top));
    s +=
        &hbars(&format!("Top {top} server names by bytes (TLS SNI, HTTP host, DNS)"), &top_by_bytes(&flows.names, top));
    s += &hbars(&format!("Top {top} talkers by bytes (client or server)"), &top_by_bytes(&flows.talkers, top));
    s += "</div>";

    s += "<h2 id=tcp>RTT and retransmissions (TCP)</h2><div class=grid>";
    let rtt_edges: Vec<f64> =
        LOG_EDGES[..LOG_EDGES.partition_point(|e| *e <= 100_000_000)].iter().map(|e| *e as f64 / 1000.0).collect();
    let ms = |v: f64| format!("{v} ms");
    s += &hbars("Mean RTT of the client's data (c_rtt_avg), flows", &distribution(&flows.rtt[0], &rtt_edges, ms));
    s += &hbars("Mean RTT of the server's data (s_rtt_avg), flows", &distribution(&flows.rtt[1], &rtt_edges, ms));
    let retx = retx_bins(&flows.retx);
    s += &hbars("Retransmitted share of data packets, TCP flows with data", &retx);
    s += "</div>";

    s += "<h2 id=health>Run health</h2>";
    s += &health(summary);
    s += "</body></html>\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_formats() {
        assert_eq!(esc("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
        assert_eq!(num(1234567), "1,234,567");
        assert_eq!(num(12), "12");
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_470_104_340), "2016-08-02 02:19:00");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500_000), "1.5 MB");
    }

    #[test]
    fn distributions_count_every_value_once() {
        let d = distribution(&[0.0, 0.5, 1.5, 3.0, 100.0], &[0.0, 1.0, 2.0, 5.0], |v| v.to_string());
        let total: f64 = d.iter().map(|x| x.1).sum();
        assert_eq!(total, 5.0);
        assert_eq!(d.last().unwrap().0, "≥ 5");
        assert_eq!(d[0].1, 2.0);
    }
}
