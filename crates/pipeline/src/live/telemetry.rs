//! Self-telemetry of a live run: per-worker counters written by the acquisition and
//! analysis threads (relaxed atomics, once per batch), read once per interval by a
//! reporter thread that prints a compact line per worker on stderr (as DPDKStat
//! does), appends JSON lines to `stats.jsonl`, and keeps the Prometheus text that
//! the `--metrics` endpoint serves.

use serde::Serialize;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Buckets of the processing-time histogram: exact below 16 ns, then 8 per power of two.
const BUCKETS: usize = 16 + 8 * 44;

fn bucket(ns: u64) -> usize {
    if ns < 16 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros() as usize; // >= 4
    (16 + (e - 4) * 8 + ((ns >> (e - 3)) & 7) as usize).min(BUCKETS - 1)
}

/// The smallest value of bucket `b`'s successor, an upper bound for its values.
fn bucket_top(b: usize) -> u64 {
    if b < 16 {
        return b as u64 + 1;
    }
    let e = (b - 16) / 8 + 4;
    let m = ((b - 16) % 8) as u64;
    (8 + m + 1) << (e - 3)
}

/// Counters of one worker, shared between its threads and the reporter.
pub struct Gauges {
    pub rx_packets: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub kernel_drops: AtomicU64,
    /// Frames captured shorter than they were on the wire (`caplen < orig_len`).
    pub truncated: AtomicU64,
    pub freezes: AtomicU64,
    pub buffer_drops: AtomicU64,
    pub buffer_bytes: AtomicU64,
    pub buffer_max: AtomicU64,
    pub buffer_cap: AtomicU64,
    /// Tail packets put into the buffer as counted-only records (TED).
    pub unanalysed: AtomicU64,
    /// Packets beyond the cut-off analysed because a priority rule kept them.
    pub prioritised: AtomicU64,
    /// Packets of shunted flows put into the buffer as counted-only records.
    pub shunted: AtomicU64,
    /// The controller's cut-off now (`u32::MAX`: nothing cut; 0: no controller).
    pub cutoff: AtomicU64,
    /// The lowest cut-off of the run (0: nothing was ever cut).
    pub min_cutoff: AtomicU64,
    pub processed: AtomicU64,
    pub flows: AtomicU64,
    pub evictions: AtomicU64,
    pub held_bytes: AtomicU64,
    pub memcap_evictions: AtomicU64,
    /// Records the worker made so far, per log (`LogId as usize`).
    pub records: [AtomicU64; crate::record_out::NLOGS],
    pub proc_sum_ns: AtomicU64,
    /// Most ns spent on one packet since the reporter last looked (it swaps in 0).
    pub proc_max_ns: AtomicU64,
    /// f64 bits: exponentially weighted mean of the per-packet time (α = 1/1024).
    pub proc_ewma_ns: AtomicU64,
    hist: Box<[AtomicU64]>,
}

impl Default for Gauges {
    fn default() -> Self {
        Gauges {
            rx_packets: AtomicU64::new(0),
            rx_bytes: AtomicU64::new(0),
            kernel_drops: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            freezes: AtomicU64::new(0),
            buffer_drops: AtomicU64::new(0),
            buffer_bytes: AtomicU64::new(0),
            buffer_max: AtomicU64::new(0),
            buffer_cap: AtomicU64::new(0),
            unanalysed: AtomicU64::new(0),
            prioritised: AtomicU64::new(0),
            shunted: AtomicU64::new(0),
            cutoff: AtomicU64::new(0),
            min_cutoff: AtomicU64::new(0),
            processed: AtomicU64::new(0),
            flows: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            held_bytes: AtomicU64::new(0),
            memcap_evictions: AtomicU64::new(0),
            records: std::array::from_fn(|_| AtomicU64::new(0)),
            proc_sum_ns: AtomicU64::new(0),
            proc_max_ns: AtomicU64::new(0),
            proc_ewma_ns: AtomicU64::new(0),
            hist: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// An analysis thread's processing times, kept locally and added to its [`Gauges`]
/// once per batch.
pub(crate) struct ProcTimes {
    hist: Vec<u32>,
    touched: Vec<u16>,
    n: u64,
    sum: u64,
    max: u64,
    ewma: f64,
}

impl ProcTimes {
    pub(crate) fn new() -> Self {
        ProcTimes { hist: vec![0; BUCKETS], touched: Vec::new(), n: 0, sum: 0, max: 0, ewma: 0.0 }
    }

    #[inline]
    pub(crate) fn add(&mut self, ns: u64) {
        let b = bucket(ns);
        if self.hist[b] == 0 {
            self.touched.push(b as u16);
        }
        self.hist[b] += 1;
        self.n += 1;
        self.sum += ns;
        self.max = self.max.max(ns);
        self.ewma += (ns as f64 - self.ewma) / 1024.0;
    }

    pub(crate) fn publish(&mut self, g: &Gauges) {
        if self.n == 0 {
            return;
        }
        for &b in &self.touched {
            g.hist[b as usize].fetch_add(self.hist[b as usize] as u64, Ordering::Relaxed);
            self.hist[b as usize] = 0;
        }
        self.touched.clear();
        g.processed.fetch_add(self.n, Ordering::Relaxed);
        g.proc_sum_ns.fetch_add(self.sum, Ordering::Relaxed);
        g.proc_max_ns.fetch_max(self.max, Ordering::Relaxed);
        g.proc_ewma_ns.store(self.ewma.to_bits(), Ordering::Relaxed);
        self.n = 0;
        self.sum = 0;
        self.max = 0;
    }
}

/// One worker's figures over one interval (rates) and now (gauges): a line of
/// `stats.jsonl`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WorkerStats {
    /// Wall-clock time of the report, epoch seconds.
    pub time_s: f64,
    pub worker: usize,
    pub interval_s: f64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub kernel_drops: u64,
    pub freezes: u64,
    pub buffer_drops: u64,
    /// Frames the source delivered: into the buffer or dropped at a full one.
    pub offered: u64,
    /// Frames put into the buffer whole (analysed).
    pub analysed: u64,
    /// Tail packets put into the buffer as counted-only records (TED).
    pub unanalysed: u64,
    /// Packets beyond the cut-off kept by a priority rule.
    pub prioritised: u64,
    /// Packets of shunted flows put into the buffer as counted-only records.
    pub shunted: u64,
    /// The TED cut-off now: packets per flow analysed fully (none: nothing cut, or
    /// `--overload drop`).
    pub cutoff: Option<u64>,
    pub processed: u64,
    pub buffer_bytes: u64,
    pub buffer_max_bytes: u64,
    pub buffer_capacity: u64,
    pub flows: u64,
    pub evictions: u64,
    /// Payload bytes held back for holes now, and flows ended early for `--memcap`.
    pub held_bytes: u64,
    pub memcap_evictions: u64,
    /// Records made since the start, per log that has any (`log_tcp_complete`...).
    pub records: std::collections::BTreeMap<&'static str, u64>,
    pub proc_mean_ns: f64,
    pub proc_p99_ns: u64,
    pub proc_max_ns: u64,
    pub proc_ewma_ns: f64,
    /// Totals since the start (for counters on the metrics endpoint).
    #[serde(skip)]
    pub totals: [u64; 10],
}

/// The reporter's memory of the last interval, per worker.
#[derive(Clone, Default)]
struct Last {
    c: [u64; 10],
    hist: Vec<u64>,
}

fn counters(g: &Gauges) -> [u64; 10] {
    [
        g.rx_packets.load(Ordering::Relaxed),
        g.rx_bytes.load(Ordering::Relaxed),
        g.kernel_drops.load(Ordering::Relaxed),
        g.freezes.load(Ordering::Relaxed),
        g.buffer_drops.load(Ordering::Relaxed),
        g.processed.load(Ordering::Relaxed),
        g.proc_sum_ns.load(Ordering::Relaxed),
        g.unanalysed.load(Ordering::Relaxed),
        g.prioritised.load(Ordering::Relaxed),
        g.shunted.load(Ordering::Relaxed),
    ]
}

fn snapshot(w: usize, g: &Gauges, last: &mut Last, dt: f64) -> WorkerStats {
    let c = counters(g);
    let d: Vec<u64> = c.iter().zip(last.c).map(|(a, b)| a.saturating_sub(b)).collect();
    let hist: Vec<u64> = g.hist.iter().map(|h| h.load(Ordering::Relaxed)).collect();
    if last.hist.is_empty() {
        last.hist = vec![0; BUCKETS];
    }
    let dh: Vec<u64> = hist.iter().zip(&last.hist).map(|(a, b)| a.saturating_sub(*b)).collect();
    let n: u64 = dh.iter().sum();
    let mut p99 = 0;
    if n > 0 {
        let rank = (n * 99).div_ceil(100);
        let mut acc = 0;
        for (b, k) in dh.iter().enumerate() {
            acc += k;
            if acc >= rank {
                p99 = bucket_top(b);
                break;
            }
        }
    }
    last.c = c;
    last.hist = hist;
    WorkerStats {
        time_s: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64(),
        worker: w,
        interval_s: dt,
        rx_packets: d[0],
        rx_bytes: d[1],
        kernel_drops: d[2],
        freezes: d[3],
        buffer_drops: d[4],
        offered: d[0] + d[4],
        analysed: d[0].saturating_sub(d[7] + d[9]),
        unanalysed: d[7],
        prioritised: d[8],
        shunted: d[9],
        cutoff: match g.cutoff.load(Ordering::Relaxed) {
            0 | 0xffff_ffff => None,
            c => Some(c),
        },
        processed: d[5],
        buffer_bytes: g.buffer_bytes.load(Ordering::Relaxed),
        buffer_max_bytes: g.buffer_max.load(Ordering::Relaxed),
        buffer_capacity: g.buffer_cap.load(Ordering::Relaxed),
        flows: g.flows.load(Ordering::Relaxed),
        evictions: g.evictions.load(Ordering::Relaxed),
        held_bytes: g.held_bytes.load(Ordering::Relaxed),
        memcap_evictions: g.memcap_evictions.load(Ordering::Relaxed),
        records: tapstat_analyze::logs::LogId::ALL
            .iter()
            .map(|l| (l.name(), g.records[*l as usize].load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect(),
        proc_mean_ns: if d[5] > 0 { d[6] as f64 / d[5] as f64 } else { 0.0 },
        proc_p99_ns: p99,
        proc_max_ns: g.proc_max_ns.swap(0, Ordering::Relaxed),
        proc_ewma_ns: f64::from_bits(g.proc_ewma_ns.load(Ordering::Relaxed)),
        totals: c,
    }
}

fn si(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn dur(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.1}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}us", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// The compact stderr line of one worker.
pub fn line(s: &WorkerStats) -> String {
    let dt = s.interval_s.max(1e-9);
    let occ = |b: u64| 100.0 * b as f64 / s.buffer_capacity.max(1) as f64;
    format!(
        "w{} rx {}pps {}bps | drop nic {} buf {} | buf {:.1}% max {:.1}% | flows {} evict {} | proc mean {} p99 {} max {} ewma {}",
        s.worker,
        si(s.rx_packets as f64 / dt),
        si(s.rx_bytes as f64 * 8.0 / dt),
        s.kernel_drops,
        s.buffer_drops,
        occ(s.buffer_bytes),
        occ(s.buffer_max_bytes),
        s.flows,
        s.evictions,
        dur(s.proc_mean_ns),
        dur(s.proc_p99_ns as f64),
        dur(s.proc_max_ns as f64),
        dur(s.proc_ewma_ns),
    ) + &overload_part(s)
}

/// The overload controller's part of a stderr line, when it did anything.
fn overload_part(s: &WorkerStats) -> String {
    let mut t = String::new();
    if s.cutoff.is_some() || s.unanalysed + s.prioritised > 0 {
        let cut = s.cutoff.map_or("none".to_string(), |c| c.to_string());
        t += &format!(" | ted cut-off {cut} tails {} prio {}", s.unanalysed, s.prioritised);
    }
    if s.shunted > 0 {
        t += &format!(" | shunted {}", s.shunted);
    }
    t
}

/// The Prometheus text exposition (format 0.0.4) of every worker's figures.
pub fn prometheus(stats: &[WorkerStats]) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, v: &dyn Fn(&WorkerStats) -> String| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for s in stats {
            let _ = writeln!(out, "{name}{{worker=\"{}\"}} {}", s.worker, v(s));
        }
    };
    family("tapstat_received_packets_total", "counter", "Frames the worker's acquisition thread received.", &|s| {
        s.totals[0].to_string()
    });
    family("tapstat_received_bytes_total", "counter", "Wire bytes of the frames received.", &|s| {
        s.totals[1].to_string()
    });
    family("tapstat_kernel_drops_total", "counter", "Frames the kernel or NIC dropped (ring full).", &|s| {
        s.totals[2].to_string()
    });
    family("tapstat_ring_freezes_total", "counter", "Times the kernel froze the capture ring.", &|s| {
        s.totals[3].to_string()
    });
    family("tapstat_buffer_drops_total", "counter", "Frames dropped because the worker's buffer was full.", &|s| {
        s.totals[4].to_string()
    });
    family("tapstat_processed_packets_total", "counter", "Frames the analysis thread processed.", &|s| {
        s.totals[5].to_string()
    });
    // Overload control (TED): offered = received + dropped at a full buffer; of the
    // received, analysed whole or counted only.
    family("tapstat_offered_packets_total", "counter", "Frames the source offered the worker's buffer.", &|s| {
        (s.totals[0] + s.totals[4]).to_string()
    });
    family("tapstat_analysed_packets_total", "counter", "Frames put into the buffer whole, to be analysed.", &|s| {
        s.totals[0].saturating_sub(s.totals[7] + s.totals[9]).to_string()
    });
    family(
        "tapstat_unanalysed_packets_total",
        "counter",
        "Tail packets TED counted without analysis (counted-only records).",
        &|s| s.totals[7].to_string(),
    );
    family(
        "tapstat_prioritised_packets_total",
        "counter",
        "Packets beyond the TED cut-off kept by a priority rule (--keep).",
        &|s| s.totals[8].to_string(),
    );
    family(
        "tapstat_shunted_packets_total",
        "counter",
        "Packets of flows a worker shunted (--shunt), counted without analysis.",
        &|s| s.totals[9].to_string(),
    );
    family(
        "tapstat_ted_cutoff_packets",
        "gauge",
        "Packets per flow TED analyses fully now (+Inf: nothing cut).",
        &|s| s.cutoff.map_or("+Inf".to_string(), |c| c.to_string()),
    );
    family("tapstat_buffer_bytes", "gauge", "Bytes waiting in the worker's buffer.", &|s| s.buffer_bytes.to_string());
    family("tapstat_buffer_max_bytes", "gauge", "Most bytes ever waiting in the worker's buffer.", &|s| {
        s.buffer_max_bytes.to_string()
    });
    family("tapstat_buffer_capacity_bytes", "gauge", "Size of the worker's buffer.", &|s| {
        s.buffer_capacity.to_string()
    });
    family("tapstat_flows", "gauge", "Flows in the worker's table.", &|s| s.flows.to_string());
    family("tapstat_evictions_total", "counter", "Flows evicted from a full table.", &|s| s.evictions.to_string());
    let secs = |ns: f64| format!("{:e}", ns / 1e9);
    family("tapstat_packet_seconds_mean", "gauge", "Mean processing time per packet over the last interval.", &|s| {
        secs(s.proc_mean_ns)
    });
    family(
        "tapstat_packet_seconds_p99",
        "gauge",
        "99th percentile of the per-packet processing time (last interval).",
        &|s| secs(s.proc_p99_ns as f64),
    );
    family(
        "tapstat_packet_seconds_max",
        "gauge",
        "Longest processing time of one packet in the last interval.",
        &|s| secs(s.proc_max_ns as f64),
    );
    family(
        "tapstat_packet_seconds_ewma",
        "gauge",
        "Exponentially weighted mean per-packet time (alpha 1/1024).",
        &|s| secs(s.proc_ewma_ns),
    );
    family(
        "tapstat_held_bytes",
        "gauge",
        "Payload bytes the worker's flows hold back for holes in TCP streams.",
        &|s| s.held_bytes.to_string(),
    );
    family(
        "tapstat_memcap_evictions_total",
        "counter",
        "Flows the worker ended early because the heap passed --memcap.",
        &|s| s.memcap_evictions.to_string(),
    );
    let _ = writeln!(
        out,
        "# HELP tapstat_records_total Records the worker made, per log (handed to the writer and the exporters).\n# TYPE tapstat_records_total counter"
    );
    for s in stats {
        for (log, n) in &s.records {
            let _ = writeln!(out, "tapstat_records_total{{worker=\"{}\",log=\"{log}\"}} {n}", s.worker);
        }
    }
    // The process's own figures, without a worker label.
    let mut process = |name: &str, kind: &str, help: &str, v: u64| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
    };
    process(
        "tapstat_heap_bytes",
        "gauge",
        "Heap allocated by the process (counted by its allocator).",
        crate::memory::heap_bytes(),
    );
    process(
        "tapstat_export_dropped_records_total",
        "counter",
        "Records dropped before an exporter whose queue stayed full (a collector not reading).",
        crate::export::blocks::EXPORT_RECORDS_DROPPED.load(Ordering::Relaxed),
    );
    out
}

/// Serves `text` over HTTP to every connection on `listener` (any path), for as long
/// as the process lives.
pub fn serve_metrics(listener: std::net::TcpListener, text: Arc<Mutex<String>>) {
    std::thread::Builder::new()
        .name("tapstat-metrics".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut c) = conn else { continue };
                let _ = c.set_read_timeout(Some(Duration::from_millis(500)));
                let mut req = [0u8; 2048];
                let _ = c.read(&mut req);
                let body = text.lock().map(|t| t.clone()).unwrap_or_default();
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = c.write_all(head.as_bytes()).and_then(|_| c.write_all(body.as_bytes()));
            }
        })
        .expect("spawning a thread succeeds");
}

/// Where the reporter sends its figures.
pub struct ReportTo {
    pub interval: Duration,
    pub stderr: bool,
    pub jsonl: Option<std::fs::File>,
    /// Where `jsonl` lives, and a flag set (by the writer, on SIGHUP) when it must be
    /// reopened: after logrotate moved it, the old descriptor writes to the old file.
    pub reopen_jsonl: Option<(std::path::PathBuf, Arc<AtomicBool>)>,
    pub prometheus: Option<Arc<Mutex<String>>>,
}

/// Starts the reporter thread; it reports once more when `done` is set, then ends.
pub fn spawn_reporter(
    gauges: Vec<Arc<Gauges>>,
    mut to: ReportTo,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("tapstat-stats".into())
        .spawn(move || {
            let mut last = vec![Last::default(); gauges.len()];
            let mut t = Instant::now();
            let report = |last: &mut Vec<Last>, t: &mut Instant, to: &mut ReportTo| {
                let dt = t.elapsed().as_secs_f64();
                *t = Instant::now();
                let stats: Vec<WorkerStats> =
                    gauges.iter().enumerate().map(|(w, g)| snapshot(w, g, &mut last[w], dt)).collect();
                if to.stderr {
                    let mut s = String::new();
                    for w in &stats {
                        let _ = writeln!(s, "tapstat: {}", line(w));
                    }
                    // A closed stderr loses the figures; it does not stop the capture.
                    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), s.as_bytes());
                }
                if let Some((path, flag)) = &to.reopen_jsonl {
                    if flag.swap(false, Ordering::SeqCst) {
                        // Keep the old file when the new one cannot be opened: the
                        // figures still go somewhere.
                        if let Ok(f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
                            to.jsonl = Some(f);
                        }
                    }
                }
                if let Some(f) = &mut to.jsonl {
                    let mut s = String::new();
                    for w in &stats {
                        s += &serde_json::to_string(w).unwrap_or_default();
                        s.push('\n');
                    }
                    let _ = f.write_all(s.as_bytes());
                }
                if let Some(p) = &to.prometheus {
                    if let Ok(mut p) = p.lock() {
                        *p = prometheus(&stats);
                    }
                }
            };
            while !done.load(Ordering::Relaxed) {
                let step = Duration::from_millis(20);
                if t.elapsed() + step >= to.interval {
                    std::thread::sleep(to.interval.saturating_sub(t.elapsed()));
                    report(&mut last, &mut t, &mut to);
                } else {
                    std::thread::sleep(step);
                }
            }
            report(&mut last, &mut t, &mut to);
        })
        .expect("spawning a thread succeeds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_their_values() {
        for ns in [0u64, 1, 15, 16, 17, 100, 999, 1000, 12345, 1 << 30, u64::MAX / 2] {
            let b = bucket(ns);
            assert!(bucket_top(b) > ns || b == BUCKETS - 1, "{ns} in {b} tops at {}", bucket_top(b));
            if b > 0 && b < BUCKETS - 1 {
                assert!(bucket_top(b - 1) <= ns, "{ns}: bucket {b} below starts at {}", bucket_top(b - 1));
            }
        }
    }

    #[test]
    fn p99_and_mean_of_an_interval() {
        let g = Gauges::default();
        let mut t = ProcTimes::new();
        for _ in 0..990 {
            t.add(100);
        }
        for _ in 0..10 {
            t.add(100_000);
        }
        t.publish(&g);
        let mut last = Last::default();
        let s = snapshot(0, &g, &mut last, 1.0);
        assert_eq!(s.processed, 1000);
        assert!((s.proc_mean_ns - 1099.0).abs() < 1e-9);
        assert!(s.proc_p99_ns >= 100 && s.proc_p99_ns <= 112, "{}", s.proc_p99_ns);
        assert_eq!(s.proc_max_ns, 100_000);
        // The next interval starts from zero.
        let s = snapshot(0, &g, &mut last, 1.0);
        assert_eq!((s.processed, s.proc_p99_ns, s.proc_max_ns), (0, 0, 0));
    }

    /// The exposition format, checked line by line (what `promtool check metrics`
    /// checks: HELP and TYPE before the samples of a family, names and labels well
    /// formed, values that parse as floats, counters named `_total`).
    #[test]
    fn prometheus_text_is_well_formed() {
        let records = [("log_tcp_complete", 3), ("log_dns_complete", 5)].into_iter().collect();
        let s = vec![
            WorkerStats { worker: 0, ..Default::default() },
            WorkerStats { worker: 1, records, ..Default::default() },
        ];
        let text = prometheus(&s);
        let mut typed = std::collections::HashMap::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(typed.insert(name.to_string(), kind.to_string()).is_none(), "{name} typed twice");
                if kind == "counter" {
                    assert!(name.ends_with("_total"), "counter {name}");
                }
                continue;
            }
            if l.starts_with("# HELP ") {
                continue;
            }
            let (series, value) = l.rsplit_once(' ').unwrap();
            value.parse::<f64>().unwrap_or_else(|_| panic!("value of {l}"));
            let name = series.split('{').next().unwrap();
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'), "{name}");
            assert!(typed.contains_key(name), "{name} has no TYPE before it");
            if name == "tapstat_heap_bytes" || name == "tapstat_export_dropped_records_total" {
                assert_eq!(series, name, "the process's own figures have no worker");
            } else {
                assert!(series.ends_with("\"}") && series.contains("{worker=\""), "{series}");
            }
        }
        assert_eq!(typed.len(), 26);
        for family in [
            "tapstat_offered_packets_total",
            "tapstat_analysed_packets_total",
            "tapstat_unanalysed_packets_total",
            "tapstat_prioritised_packets_total",
            "tapstat_shunted_packets_total",
            "tapstat_ted_cutoff_packets",
            "tapstat_held_bytes",
            "tapstat_memcap_evictions_total",
            "tapstat_heap_bytes",
            "tapstat_export_dropped_records_total",
        ] {
            assert!(typed.contains_key(family), "{family}");
        }
        assert!(text.contains("tapstat_ted_cutoff_packets{worker=\"0\"} +Inf"), "{text}");
        // Records per worker and log: a series for each log with records, none for the
        // worker without.
        assert!(text.contains("tapstat_records_total{worker=\"1\",log=\"log_dns_complete\"} 5\n"), "{text}");
        assert!(text.contains("tapstat_records_total{worker=\"1\",log=\"log_tcp_complete\"} 3\n"), "{text}");
        assert!(!text.contains("tapstat_records_total{worker=\"0\""), "{text}");
    }
}
