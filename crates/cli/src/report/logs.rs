//! What the report reads: histograms.tsv, and the flow logs aggregated in one pass.
//!
//! The flow logs give the traffic over time. A record says how many frames and bytes
//! on the wire each side sent between the flow's first and last packet (UDP: between
//! each side's own first and last packet), not when in between: the report spreads
//! them evenly over that span, as flow-based dashboards (nfdump/NfSen, ntopng's flow
//! charts, Grafana over flow tables) do. Each flow costs O(1) whatever its length: a
//! column series keeps the amounts of partly covered columns and a difference array of
//! the rate over the columns a flow covers whole. Nothing per flow is kept, so a day
//! of logs is read in the memory of its distinct applications, names and addresses.

use super::chart::NICE_STEPS_MS;
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// The flow logs the report reads, with the protocol each holds.
const FLOW_LOGS: [(&str, Proto); 4] = [
    ("log_tcp_complete", Proto::Tcp),
    ("log_tcp_nocomplete", Proto::Tcp),
    ("log_udp_complete", Proto::Udp),
    ("log_other", Proto::Other),
];

/// The transport of a log's flows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Proto {
    Tcp,
    Udp,
    Other,
}

/// The columns the report uses, and their index in a record.
pub const COLS: [&str; 23] = [
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
    "quic_SNI",
    "http_hostname",
    "fqdn",
    "c_bytes_wire",
    "s_bytes_wire",
    "first",
    "last",
    "c_first_abs",
    "c_durat",
];
// Columns past COLS's first 23 that a side's span needs: read with their own names.
const S_FIRST_ABS: &str = "s_first_abs";
const S_DURAT: &str = "s_durat";
const C_ISINT: &str = "c_isint";
const S_ISINT: &str = "s_isint";

/// Every column read: [`COLS`] then the others, in this order.
fn all_cols() -> Vec<&'static str> {
    let mut v = COLS.to_vec();
    v.extend([S_FIRST_ABS, S_DURAT, C_ISINT, S_ISINT]);
    v
}

mod col {
    pub const C_IP: usize = 0;
    pub const S_IP: usize = 1;
    pub const C_BYTES: usize = 2;
    pub const S_BYTES: usize = 3;
    pub const C_PKTS: usize = 4;
    pub const S_PKTS: usize = 5;
    pub const C_DATA: usize = 6;
    pub const S_DATA: usize = 7;
    pub const C_RETX: usize = 8;
    pub const S_RETX: usize = 9;
    pub const C_RTT: usize = 10;
    pub const S_RTT: usize = 11;
    pub const APP: usize = 12;
    pub const TLS_SNI: usize = 13;
    pub const QUIC_SNI: usize = 14;
    pub const HTTP_HOST: usize = 15;
    pub const FQDN: usize = 16;
    pub const C_WIRE: usize = 17;
    pub const S_WIRE: usize = 18;
    pub const FIRST: usize = 19;
    pub const LAST: usize = 20;
    pub const C_FIRST_ABS: usize = 21;
    pub const C_DURAT: usize = 22;
    pub const S_FIRST_ABS: usize = 23;
    pub const S_DURAT: usize = 24;
    pub const C_ISINT: usize = 25;
    pub const S_ISINT: usize = 26;
}

/// histograms.tsv: count per (interval, histogram, bin), directions summed.
#[derive(Default)]
pub struct Histos {
    pub times: BTreeSet<u64>,
    /// histogram -> bin -> time -> count
    pub by: BTreeMap<String, BTreeMap<String, BTreeMap<u64, u64>>>,
}

impl Histos {
    /// Adds the rows of one histograms file.
    pub fn add(&mut self, text: &str) -> Result<()> {
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
    pub fn per_time(&self, name: &str) -> Vec<(u64, u64)> {
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

/// The time axis of the charts over time: `n` columns of `step_ms` from `t0_ms`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timeline {
    pub t0_ms: f64,
    pub step_ms: f64,
    pub n: usize,
}

/// The most columns a chart over time has; the step is the smallest of
/// [`NICE_STEPS_MS`] that keeps to it, so a run gets 120 to 300 columns (the steps grow
/// by 2.5 at most) unless it is shorter than 120 ms.
pub const MAX_COLUMNS: usize = 300;

impl Timeline {
    /// The timeline of a run from `first_ms` to `last_ms` (epoch ms), its start on a
    /// multiple of the step.
    pub fn for_span(first_ms: f64, last_ms: f64) -> Timeline {
        let last_ms = last_ms.max(first_ms);
        let fit = |step: f64| {
            let t0 = (first_ms / step).floor() * step;
            (t0, ((last_ms - t0) / step).floor() as usize + 1)
        };
        for &step in NICE_STEPS_MS {
            let (t0, n) = fit(step);
            if n <= MAX_COLUMNS {
                return Timeline { t0_ms: t0, step_ms: step, n };
            }
        }
        // Longer than the list's last step allows: whole weeks.
        let weeks = ((last_ms - first_ms) / (MAX_COLUMNS as f64 - 1.0) / 604_800_000.0).ceil().max(1.0);
        let step = weeks * 604_800_000.0;
        let (t0, n) = fit(step);
        Timeline { t0_ms: t0, step_ms: step, n: n.min(MAX_COLUMNS) }
    }

    /// Where `t_ms` falls, in columns (clamped to the timeline).
    fn pos(&self, t_ms: f64) -> f64 {
        ((t_ms - self.t0_ms) / self.step_ms).clamp(0.0, self.n as f64 - 1e-9)
    }

    /// The start of column `i`, epoch ms.
    pub fn at(&self, i: usize) -> f64 {
        self.t0_ms + i as f64 * self.step_ms
    }
}

/// An amount per column of a [`Timeline`], added span by span in O(1).
#[derive(Clone)]
pub struct Series {
    /// Amounts added to one column.
    direct: Vec<f64>,
    /// Difference array of a rate per whole column.
    slope: Vec<f64>,
}

impl Series {
    pub fn new(n: usize) -> Series {
        Series { direct: vec![0.0; n], slope: vec![0.0; n + 1] }
    }

    /// Spreads `amount` evenly over `a_ms..=b_ms`.
    pub fn spread(&mut self, tl: &Timeline, a_ms: f64, b_ms: f64, amount: f64) {
        if amount <= 0.0 || !amount.is_finite() {
            return;
        }
        let (x, y) = (tl.pos(a_ms.min(b_ms)), tl.pos(b_ms.max(a_ms)));
        let (ca, cb) = (x as usize, y as usize);
        if ca == cb {
            self.direct[ca] += amount;
            return;
        }
        let r = amount / (y - x);
        self.direct[ca] += r * ((ca + 1) as f64 - x);
        self.direct[cb] += r * (y - cb as f64);
        self.slope[ca + 1] += r;
        self.slope[cb] -= r;
    }

    /// The amount per column.
    pub fn values(&self) -> Vec<f64> {
        let mut rate = 0.0;
        self.direct
            .iter()
            .zip(&self.slope)
            .map(|(d, s)| {
                rate += s;
                d + rate
            })
            .collect()
    }
}

/// Bytes on the wire and frames per column.
#[derive(Clone)]
pub struct Traffic {
    pub wire: Series,
    pub pkts: Series,
}

impl Traffic {
    fn new(n: usize) -> Traffic {
        Traffic { wire: Series::new(n), pkts: Series::new(n) }
    }
}

/// Totals of one application, name or address.
#[derive(Default, Clone, Copy, Debug)]
pub struct Agg {
    pub flows: u64,
    /// Frame bytes on the wire (`*_bytes_wire`), both directions.
    pub wire: u64,
    /// Transport payload bytes (`*_bytes_all`, TCP and UDP only).
    pub payload: u64,
    pub pkts: u64,
}

/// What the flow logs say, aggregated.
pub struct Flows {
    pub read: Vec<String>,
    pub skipped: Vec<String>,
    pub records: u64,
    pub apps: HashMap<String, Agg>,
    pub names: HashMap<String, Agg>,
    pub talkers: HashMap<String, Agg>,
    /// Per transport (TCP, UDP, other IP) and per IP version (4, 6).
    pub protos: [Agg; 3],
    pub versions: [Agg; 2],
    /// RTT samples (ms), client and server side.
    pub rtt: [Vec<f64>; 2],
    /// Per TCP flow with data: retransmitted / data packets.
    pub retx: Vec<f64>,
    pub timeline: Timeline,
    /// Traffic over time per application.
    pub app_time: HashMap<String, Traffic>,
    /// Traffic over time per direction: with internal networks in, out, local, ext
    /// (sender → receiver); else client → server, server → client.
    pub dir_time: [Traffic; 4],
    /// Whether the run had internal networks (-N, --internal).
    pub internal: bool,
    /// The earliest and latest time of the records (epoch ms).
    pub span: Option<(f64, f64)>,
    /// Times of Parquet logs are timestamps in µs, those of TSV and JSON epoch ms.
    time_scale: f64,
}

impl Flows {
    /// Reads the logs of `dir` (and its `--rotate` interval directories) onto
    /// `timeline`; `internal`: whether the run had internal networks.
    pub fn read(dir: &Path, timeline: Timeline, internal: bool) -> Result<Flows> {
        let n = timeline.n;
        let mut f = Flows {
            read: Vec::new(),
            skipped: Vec::new(),
            records: 0,
            apps: HashMap::new(),
            names: HashMap::new(),
            talkers: HashMap::new(),
            protos: [Agg::default(); 3],
            versions: [Agg::default(); 2],
            rtt: [Vec::new(), Vec::new()],
            retx: Vec::new(),
            timeline,
            app_time: HashMap::new(),
            dir_time: std::array::from_fn(|_| Traffic::new(n)),
            internal,
            span: None,
            time_scale: 1.0,
        };
        let cols = all_cols();
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(crate::outdir::interval_dirs(dir)?);
        for d in &dirs {
            for (log, proto) in FLOW_LOGS {
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
                        f.time_scale = 1.0;
                        f.add_log(lines, jsonl, &cols, proto);
                        f.read.push(p.strip_prefix(dir).unwrap_or(&p).display().to_string());
                    }
                }
                let p = d.join(format!("{log}.parquet"));
                if p.is_file() {
                    let name = p.strip_prefix(dir).unwrap_or(&p).display().to_string();
                    // A build without the `parquet` feature cannot read it: listed as
                    // not read, with why. Its times are timestamps in µs.
                    f.time_scale = 1e-3;
                    match tapstat_sink::parquet::for_each_row(&p, &cols, |r| f.add(r, proto)) {
                        Ok(()) => f.read.push(name),
                        Err(e) => f.skipped.push(format!("{name} ({e})")),
                    }
                }
            }
        }
        Ok(f)
    }

    fn add_log(&mut self, mut lines: impl Iterator<Item = String>, jsonl: bool, cols: &[&str], proto: Proto) {
        if jsonl {
            for l in lines {
                let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(&l) else { continue };
                let get = |c: &str| match m.get(c) {
                    Some(serde_json::Value::String(s)) => Some(s.clone()),
                    Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                    _ => None,
                };
                let rec: Vec<Option<String>> = cols.iter().map(|c| get(c)).collect();
                self.add(&rec, proto);
            }
            return;
        }
        let Some(header) = lines.next() else { return };
        let idx: Vec<Option<usize>> = cols.iter().map(|c| header.split('\t').position(|h| h == *c)).collect();
        for l in lines {
            let f: Vec<&str> = l.split('\t').collect();
            let rec: Vec<Option<String>> = idx
                .iter()
                .map(|i| i.and_then(|i| f.get(i)).filter(|v| !v.is_empty()).map(|v| tapstat_record::tsv::unescape(v)))
                .collect();
            self.add(&rec, proto);
        }
    }

    /// One record, its values in `all_cols()` order.
    fn add(&mut self, r: &[Option<String>], proto: Proto) {
        use col::*;
        let num = |i: usize| r[i].as_deref().and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite());
        let int = |i: usize| num(i).unwrap_or(0.0).max(0.0) as u64;
        self.records += 1;
        let wire = [int(C_WIRE), int(S_WIRE)];
        let pkts = [int(C_PKTS), int(S_PKTS)];
        let one = Agg {
            flows: 1,
            wire: wire[0].saturating_add(wire[1]),
            payload: int(C_BYTES).saturating_add(int(S_BYTES)),
            pkts: pkts[0].saturating_add(pkts[1]),
        };
        let bump = |m: &mut HashMap<String, Agg>, k: &str| {
            let e = match m.get_mut(k) {
                Some(e) => e,
                None => m.entry(k.to_string()).or_default(),
            };
            add_agg(e, &one);
        };
        let app = r[APP].as_deref().unwrap_or("unknown");
        bump(&mut self.apps, app);
        let name = [TLS_SNI, QUIC_SNI, HTTP_HOST, FQDN].into_iter().find_map(|i| r[i].as_deref().filter(|v| *v != "-"));
        if let Some(n) = name {
            bump(&mut self.names, n);
        }
        for ip in [&r[C_IP], &r[S_IP]].into_iter().flatten() {
            bump(&mut self.talkers, ip);
        }
        let p = match proto {
            Proto::Tcp => 0,
            Proto::Udp => 1,
            Proto::Other => 2,
        };
        add_agg(&mut self.protos[p], &one);
        let v6 = r[C_IP].as_deref().or(r[S_IP].as_deref()).is_some_and(|ip| ip.contains(':'));
        add_agg(&mut self.versions[usize::from(v6)], &one);
        for (k, i) in [(0, C_RTT), (1, S_RTT)] {
            if let Some(v) = num(i) {
                self.rtt[k].push(v);
            }
        }
        // TCP records (the only ones with pkts_retx) with data.
        let data = int(C_DATA).saturating_add(int(S_DATA));
        if data > 0 && (r[C_RETX].is_some() || r[S_RETX].is_some()) {
            self.retx.push(int(C_RETX).saturating_add(int(S_RETX)) as f64 / data as f64);
        }

        // Over time: each side over its span (UDP logs give one per side), else the
        // flow's.
        // Times to whole µs (Parquet's unit, the TSV's precision), so that the same
        // records give the same sums in every format.
        let ts = self.time_scale;
        let us = |v: f64| (v * ts * 1000.0).round() / 1000.0;
        let (Some(first), last) = (num(FIRST).map(us), num(LAST).map(us)) else { return };
        let last = last.unwrap_or(first).max(first);
        self.span = Some(self.span.map_or((first, last), |(a, b)| (a.min(first), b.max(last))));
        let tl = self.timeline;
        let n = tl.n;
        let at = match self.app_time.get_mut(app) {
            Some(t) => t,
            None => self.app_time.entry(app.to_string()).or_insert_with(|| Traffic::new(n)),
        };
        // 1 in TSV and JSON, true in Parquet.
        let flag = |i: usize| matches!(r[i].as_deref(), Some("1" | "true"));
        let isint = [flag(C_ISINT), flag(S_ISINT)];
        for (side, (fa, du)) in [(0, (C_FIRST_ABS, C_DURAT)), (1, (S_FIRST_ABS, S_DURAT))] {
            let (a, b) = match (num(fa), num(du)) {
                (Some(a), Some(d)) if a > 0.0 => (us(a), us(a) + (d * 1000.0).round() / 1000.0),
                _ => (first, last),
            };
            let (w, k) = (wire[side] as f64, pkts[side] as f64);
            at.wire.spread(&tl, a, b, w);
            at.pkts.spread(&tl, a, b, k);
            let d = if self.internal {
                // Sender → receiver: in, out, local, ext.
                match (isint[side], isint[1 - side]) {
                    (false, true) => 0,
                    (true, false) => 1,
                    (true, true) => 2,
                    (false, false) => 3,
                }
            } else {
                side
            };
            self.dir_time[d].wire.spread(&tl, a, b, w);
            self.dir_time[d].pkts.spread(&tl, a, b, k);
        }
    }

    /// The labels of [`Flows::dir_time`]'s series.
    pub fn dir_labels(&self) -> [&'static str; 4] {
        if self.internal {
            ["in (to internal)", "out (from internal)", "local (internal ↔ internal)", "ext (external ↔ external)"]
        } else {
            ["client → server", "server → client", "", ""]
        }
    }
}

fn add_agg(e: &mut Agg, one: &Agg) {
    e.flows = e.flows.saturating_add(one.flows);
    e.wire = e.wire.saturating_add(one.wire);
    e.payload = e.payload.saturating_add(one.payload);
    e.pkts = e.pkts.saturating_add(one.pkts);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_gets_at_least_120_columns() {
        for (first, last) in [(0.0, 191_200.0), (1e12, 1e12 + 1_007_678.0), (5.0, 130.0), (0.0, 86_400_000.0 * 2200.0)]
        {
            let tl = Timeline::for_span(first, last);
            assert!(tl.n >= 120 && tl.n <= MAX_COLUMNS, "{first}..{last}: {tl:?}");
            assert!(tl.t0_ms <= first && tl.at(tl.n) > last, "{first}..{last}: {tl:?}");
        }
        assert_eq!(Timeline::for_span(0.0, 191_200.0).step_ms, 1000.0);
        // One packet: one column.
        assert_eq!(Timeline::for_span(7.0, 7.0).n, 1);
    }

    #[test]
    fn spreading_keeps_the_amount() {
        let tl = Timeline { t0_ms: 0.0, step_ms: 10.0, n: 10 };
        let mut s = Series::new(tl.n);
        s.spread(&tl, 5.0, 45.0, 40.0); // 5 in col 0, 10 in 1..=3, 5 in col 4
        s.spread(&tl, 91.0, 92.0, 3.0);
        s.spread(&tl, -100.0, 1000.0, 0.0);
        s.spread(&tl, 500.0, 600.0, 1.0); // past the end: the last column
        let v = s.values();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(v[0], 5.0) && close(v[1], 10.0) && close(v[3], 10.0) && close(v[4], 5.0), "{v:?}");
        assert!(close(v[5], 0.0) && close(v[9], 4.0), "{v:?}");
        assert!(close(v.iter().sum::<f64>(), 44.0));
    }
}
