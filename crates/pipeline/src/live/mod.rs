//! The engine for live capture: one source per worker, no dispatcher.
//!
//! ```text
//! socket 0 ──► acquisition 0 ──► buffer 0 (--buffer bytes) ──► analysis 0: decode + Tracker ──┐
//! socket 1 ──► acquisition 1 ──► buffer 1                  ──► analysis 1: decode + Tracker ──┼─► writer ─► OutputDir(s)
//!  ...   (the kernel's fanout hash spreads flows)                                             ┘
//! ```
//!
//! The kernel (AF_PACKET fanout) or the NIC (RSS) has already put both directions of
//! every flow on the same queue, so each worker decodes its own packets, as a single
//! worker does for files (`run_inline`). Per worker, an acquisition thread moves frames
//! from its queue into a large byte buffer and an analysis thread drains it
//! (DPDKStat, §3.2): a slow packet, a burst or a pause of the analysis thread
//! fills the buffer instead of overflowing the kernel's ring.
//!
//! Time is still packet time. Each worker's clock follows its own packets; at the end
//! every worker expires its flows against the latest clock of all workers. With
//! `--rotate`, a worker that crosses an interval boundary in packet time flushes its
//! record buffers and tells the writer, which closes an interval's directory (a
//! rename from a hidden name) once every worker has moved past it.
//!
//! DN-Hunter's answers (`fqdn`): a DNS response reaches one worker, the flows it names
//! any worker. A worker hands every answer it learns from its own packets to each other
//! worker over a ring of its own for that pair, without ever waiting (a full ring
//! drops the answer, counted); each worker takes in what the others sent before each
//! burst of its own packets.

use crate::backend::{Backend, Started};
use crate::dispatch::{Dispatch, DispatchResult};
use crate::worker::Worker;
use crate::writer::{HistoReport, HistoWriter, NEVER};
pub(crate) mod acquire;
pub(crate) mod analysis;
pub(crate) mod buffer;
pub(crate) mod overload;
pub(crate) mod telemetry;

use crate::live::acquire::acquire_loop;
use crate::live::analysis::*;
use crate::live::buffer::packet_buffer_sampled;
use crate::live::overload::{Controller, Overload, OverloadConfig};
use crate::live::telemetry::{serve_metrics, spawn_reporter, Gauges, ReportTo};
use crate::{random_seed, Acquire, EngineConfig, EngineError, PacketTimeSummary, PacketTimer, Progress, Summary};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;
use tapstat_analyze::dnhunter::DnsAnswer;
use tapstat_analyze::Tracker;
use tapstat_capture::live::LiveSource;
use tapstat_capture::CaptureStats;
use tapstat_decode::Anomalies;
use tapstat_flow::FlowHasher;
use tapstat_sink::SinkError;

/// How a live run acquires, buffers, reports and writes.
pub struct LiveConfig {
    /// Bytes of each worker's buffer.
    pub buffer_bytes: usize,
    pub acquire: Acquire,
    pub stats_interval: Duration,
    /// Print a line per worker on stderr every interval.
    pub stats_stderr: bool,
    /// Serve Prometheus text here.
    pub metrics: Option<std::net::SocketAddr>,
    /// Each worker hands its buffered records to the writer at least this often (wall
    /// time) when it has some, so the logs can be followed (`tail -f`) and a crash
    /// loses at most this much.
    pub flush: Duration,
    /// Set (by a SIGHUP handler) to make the writer reopen its files.
    pub reopen: &'static AtomicBool,
    /// Called once the sources are open and the acquisition threads have their
    /// scheduling, before any frame is read (to drop privileges, say), with the files
    /// the run has created in the output directory so far (the logs, stats.jsonl): a
    /// second descriptor of each, for `fchown`, so what changes owner is what tapstat
    /// opened, never what a path names.
    pub on_ready: Option<OnReady>,
    /// What to do when a worker's buffer fills (TED or plain dropping).
    pub overload: OverloadConfig,
}

/// [`LiveConfig::on_ready`]: called with the files the run created.
pub type OnReady = Box<dyn FnOnce(&[std::fs::File]) -> Result<(), String> + Send>;

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            buffer_bytes: 256 << 20,
            acquire: Acquire::Periodic { period: Duration::from_micros(500) },
            stats_interval: Duration::from_secs(1),
            stats_stderr: true,
            metrics: None,
            flush: Duration::from_secs(1),
            reopen: &NEVER,
            on_ready: None,
            overload: OverloadConfig::default(),
        }
    }
}

/// What a live run adds to summary.json.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LiveSummary {
    pub sources: Vec<String>,
    pub acquire: &'static str,
    /// What paced each acquisition thread (`SCHED_DEADLINE`, `timerfd`, `poll`, `block`).
    pub pacing: Vec<&'static str>,
    pub received_packets: u64,
    pub kernel_drops: u64,
    /// Frames the source delivered shorter than they were on the wire (a driver's
    /// buffer or frame size below the frame): counted with their wire length, but
    /// the bytes past the cut were not analysed.
    pub truncated_frames: u64,
    pub ring_freezes: u64,
    pub buffer_drops: u64,
    pub buffer_capacity_bytes: u64,
    /// The fullest any worker's buffer has been, in bytes.
    pub buffer_max_bytes: u64,
    /// Frames each worker received: how evenly the kernel spread the flows.
    pub per_worker_packets: Vec<u64>,
    /// CPU seconds of each acquisition thread.
    pub acquisition_cpu_s: Vec<f64>,
    /// CPU seconds of each analysis thread.
    pub analysis_cpu_s: Vec<f64>,
    /// DNS answers (client, address → name) a worker learnt from its own packets and
    /// handed to another worker, once per receiving worker (DN-Hunter across workers).
    pub dns_answers_shared: u64,
    /// Such answers not handed over because the receiving worker's ring was full.
    pub dns_answers_dropped: u64,
    /// The overload policy: `ted` (tail early dropping) or `drop` (buffer-full
    /// dropping).
    pub overload: &'static str,
    /// Frames the sources delivered (into the buffers or dropped at a full one).
    pub offered_packets: u64,
    /// Frames put into the buffers whole, to be analysed.
    pub analysed_packets: u64,
    /// Tail packets beyond the cut-off put into the buffers as counted-only records:
    /// their flows count their packets and bytes, nothing else (`c_pkts_unanalysed`,
    /// `s_pkts_unanalysed`).
    pub unanalysed_packets: u64,
    /// Packets beyond the cut-off analysed because a priority rule (`--keep`) kept them.
    pub prioritised_packets: u64,
    /// The lowest cut-off (packets per flow analysed fully) any worker's controller
    /// reached; none when nothing was ever cut.
    pub min_cutoff: Option<u32>,
    /// Flows a `--shunt` rule matched (their records say `shunted` 1).
    pub shunted_flows: u64,
    /// Packets of shunted flows put into the buffers as counted-only records (in
    /// `c_pkts_unanalysed`/`s_pkts_unanalysed` beside TED's tails).
    pub shunted_packets: u64,
    /// Shunt requests acquisition never acted on (its table full of live flows, or the
    /// ring from the worker full): those flows went on being analysed.
    pub shunts_lost: u64,
    /// The rate the sources delivered: `offered_packets` over the wall time from the
    /// first poll that brought frames to the last (a replay that kept its pace: the
    /// asked rate).
    pub offered_pps: f64,
    /// Queueing delay: wall time from a frame's entry into its worker's buffer to the
    /// end of its analysis, 1 frame in `--time-sample`.
    pub queue_delay: QueueDelay,
}

/// Sampled queueing delays of a live run, all workers together (ns).
#[derive(Clone, Debug, Default, Serialize)]
pub struct QueueDelay {
    /// 1 frame in `sample_every` was timed (0: none).
    pub sample_every: u32,
    pub samples: u64,
    pub mean_ns: f64,
    /// Quantiles: the lower bound of the histogram cell (within 19% below the value).
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl QueueDelay {
    pub(crate) fn of(samplers: &[PacketTimer]) -> QueueDelay {
        let s = PacketTimeSummary::of(samplers);
        QueueDelay {
            sample_every: s.sample_every,
            samples: s.samples,
            mean_ns: s.mean_ns,
            p50_ns: s.p50_ns,
            p99_ns: s.p99_ns,
            max_ns: s.max_ns,
        }
    }
}

/// Answers each worker can hold from each other worker before it takes them in.
/// Workers take them in before every burst of at most 256 frames, and a DNS response
/// carries a few answers; the ring fills only while its reader is stalled.
pub(crate) const DNS_RING: usize = 1024;

/// Shunt requests a worker can queue for its acquisition thread.
pub(crate) const SHUNT_RING: usize = 4096;

pub(crate) fn wall_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}

/// CPU time of the calling thread.
pub(crate) fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is valid for writing.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Runs the engine over live `sources` (one per worker) until `stop` is set; every
/// live flow is written before returning.
pub fn run_live(
    sources: Vec<Box<dyn LiveSource>>,
    cfg: &EngineConfig,
    mut live: LiveConfig,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
) -> Result<Summary, EngineError> {
    let started = Started::now();
    let n = sources.len().max(1);
    let seed = cfg.hash_seed.unwrap_or_else(random_seed);
    let hasher = FlowHasher::with_kind(cfg.flow_hash, seed);
    let source_names: Vec<String> = sources.iter().map(|s| s.name()).collect();

    // The IPFIX collector, the output directory, the stats file and the metrics port
    // first: a mistake in any of them is an error before the capture starts. With
    // `-o -` there is no directory: the logs go to standard output, the figures to
    // stderr only.
    let reopen_stats = Arc::new(AtomicBool::new(false));
    // Link histograms: each worker hands the intervals it has closed to the writer,
    // which writes an interval once every worker has passed its end.
    let histo_ns = cfg.tracker.histo_ns;
    let (histo_tx, histo_rx) = match histo_ns {
        0 => (None, None),
        _ => {
            let (tx, rx) = crossbeam_channel::unbounded::<HistoReport>();
            (Some(tx), Some(rx))
        }
    };
    let mut created: std::io::Result<Vec<std::fs::File>> = Ok(Vec::new());
    let mut backend = Backend::start(cfg, n, &stop, Some(live.flush), |w| {
        if let Some(o) = &w.single {
            created = o.files().map(std::fs::File::try_clone).collect();
        }
        w.reopen = live.reopen;
        w.reopen_stats = reopen_stats.clone();
        w.histo = histo_rx.map(|rx| HistoWriter::new(rx, n, cfg));
    })?;
    let jsonl_path = cfg.out_dir.join("stats.jsonl");
    let jsonl = match cfg.stdout {
        true => None,
        false => Some(
            tapstat_sink::open_append_nofollow(&jsonl_path)
                .map_err(|source| SinkError { path: jsonl_path.clone(), source })?,
        ),
    };
    let mut created = created.map_err(|source| SinkError { path: cfg.out_dir.clone(), source })?;
    if let Some(f) = &jsonl {
        created.push(f.try_clone().map_err(|source| SinkError { path: jsonl_path.clone(), source })?);
    }
    let prom = match live.metrics {
        Some(addr) => {
            let l = std::net::TcpListener::bind(addr)
                .map_err(|source| SinkError { path: PathBuf::from(format!("metrics endpoint {addr}")), source })?;
            let text = Arc::new(Mutex::new(String::new()));
            serve_metrics(l, text.clone());
            Some(text)
        }
        None => None,
    };

    let gauges: Vec<Arc<Gauges>> = (0..n).map(|_| Arc::new(Gauges::default())).collect();
    let ready = Arc::new(Barrier::new(n + 1));
    let global_clock = Arc::new(AtomicU64::new(0));
    let final_clock = Arc::new(AtomicU64::new(0));
    let end_barrier = Arc::new(Barrier::new(n));
    // A ring for every ordered pair of workers, for the DNS answers each learns (only
    // with the application layer on and several workers).
    let share_dns = n > 1 && cfg.tracker.l7.is_some();
    let mut dns_out: Vec<Vec<rtrb::Producer<DnsAnswer>>> = (0..n).map(|_| Vec::new()).collect();
    let mut dns_in: Vec<Vec<rtrb::Consumer<DnsAnswer>>> = (0..n).map(|_| Vec::new()).collect();
    if share_dns {
        for (w, out) in dns_out.iter_mut().enumerate() {
            for (_, rx) in dns_in.iter_mut().enumerate().filter(|(v, _)| *v != w) {
                let (p, c) = rtrb::RingBuffer::new(DNS_RING);
                out.push(p);
                rx.push(c);
            }
        }
    }
    let mut acq_threads = Vec::with_capacity(n);
    let mut ana_threads = Vec::with_capacity(n);
    for ((w, src), (dns_out, dns_in)) in sources.into_iter().enumerate().zip(dns_out.into_iter().zip(dns_in)) {
        let link = src.link();
        // What the source has yet to hand out starts no earlier than this (where the
        // source knows; else `u64::MAX`).
        let pending = Arc::new(AtomicU64::new(src.pending_from_ns().unwrap_or(u64::MAX)));
        let (prod, cons) = packet_buffer_sampled(live.buffer_bytes, cfg.time_sample);
        gauges[w].buffer_cap.store(prod.capacity(), Ordering::Relaxed);
        let (g, stop2, ready2, progress2, policy, pending2) =
            (gauges[w].clone(), stop.clone(), ready.clone(), progress.clone(), live.acquire, pending.clone());
        let shunting = !cfg.tracker.shunt.is_empty();
        let shunt_idle = cfg.tracker.tcp_idle_ns.min(cfg.tracker.udp_idle_ns);
        let ctl = match live.overload.policy {
            Overload::Ted => Some(Controller::new(live.overload.keep).shunt_idle(shunt_idle)),
            Overload::Drop if shunting => Some(Controller::shunt_only().shunt_idle(shunt_idle)),
            Overload::Drop => None,
        };
        // Shunted flows: the worker names them to its acquisition thread.
        let (shunt_out, shunt_in) = match shunting {
            true => {
                let (p, c) = rtrb::RingBuffer::new(SHUNT_RING);
                (Some(p), Some(c))
            }
            false => (None, None),
        };
        acq_threads.push(
            std::thread::Builder::new()
                .name(format!("tapstat-a{w}"))
                .spawn(move || {
                    acquire_loop(src, prod, ctl, shunt_in, policy, &g, &stop2, &ready2, &progress2, &pending2)
                })
                .expect("spawning a thread succeeds"),
        );
        let mut tracker = Tracker::new(cfg.tracker);
        if share_dns {
            tracker.share_dns_answers();
        }
        // The live loop times every packet for the telemetry (`ProcTimes`, all of the
        // packet's work); summary.json's `packet_time` samples the tracker's share, as
        // for files.
        let work = Worker::new(cfg, tracker, backend.record_out(cfg, w));
        let a = Analysis {
            dispatch: Dispatch::new(cfg.decode, hasher.clone(), 1),
            work,
            cons,
            link,
            gauges: gauges[w].clone(),
            poll: live.acquire == Acquire::Poll,
            global_clock: global_clock.clone(),
            final_clock: final_clock.clone(),
            end_barrier: end_barrier.clone(),
            stop: stop.clone(),
            flush: live.flush,
            dns_out,
            dns_in,
            dns: DnsShare::default(),
            shunt_out,
            histo: histo_tx.as_ref().map(|tx| HistoFeed {
                tx: tx.clone(),
                worker: w,
                interval_ns: histo_ns,
                next_ns: 0,
                slack_ns: (live.flush.as_nanos() as u64).max(histo_ns),
            }),
            pending,
        };
        ana_threads.push(
            std::thread::Builder::new()
                .name(format!("tapstat-w{w}"))
                .spawn(move || a.run())
                .expect("spawning a thread succeeds"),
        );
    }
    drop(histo_tx);
    ready.wait();
    let mut ready_err = None;
    if let Some(f) = live.on_ready.take() {
        if let Err(e) = f(&created) {
            ready_err = Some(e);
            stop.store(true, Ordering::SeqCst);
        }
    }
    // Second descriptors, for on_ready only.
    drop(created);
    let done = Arc::new(AtomicBool::new(false));
    let reporter = spawn_reporter(
        gauges.clone(),
        ReportTo {
            interval: live.stats_interval.max(Duration::from_millis(10)),
            stderr: live.stats_stderr,
            jsonl,
            reopen_jsonl: (!cfg.stdout).then_some((jsonl_path, reopen_stats)),
            prometheus: prom,
        },
        done.clone(),
    );

    let mut acq = Vec::with_capacity(n);
    for h in acq_threads {
        acq.push(h.join().map_err(|_| EngineError::Thread("acquisition"))?);
    }
    let mut disp = DispatchResult {
        anomalies: Anomalies::default(),
        non_ip: 0,
        frames: 0,
        wire_bytes: 0,
        first_ns: 0,
        last_ns: 0,
    };
    let mut results = Vec::with_capacity(n);
    let mut ana_cpu = Vec::with_capacity(n);
    let mut dns = DnsShare::default();
    let mut delays = Vec::with_capacity(n);
    for h in ana_threads {
        let (d, r, cpu, sh, delay) = h.join().map_err(|_| EngineError::Thread("analysis"))?;
        results.push(r);
        delays.push(delay);
        dns.shared += sh.shared;
        dns.dropped += sh.dropped;
        dns.shunts_lost += sh.shunts_lost;
        disp.anomalies.merge(&d.anomalies);
        disp.non_ip += d.non_ip;
        disp.frames += d.frames;
        disp.wire_bytes += d.wire_bytes;
        if d.first_ns != 0 && (disp.first_ns == 0 || d.first_ns < disp.first_ns) {
            disp.first_ns = d.first_ns;
        }
        disp.last_ns = disp.last_ns.max(d.last_ns);
        ana_cpu.push(cpu);
    }
    let mut ended = backend.finish(results)?;
    // A write error (a full disk) stopped the writer: the summary says so and what was
    // lost, as a file run's does, and the caller fails the run after writing it.
    let write_error = ended.written.error.take().map(|e| format!("{e}: {}", e.source));
    let mut warnings = std::mem::take(&mut ended.warnings);
    done.store(true, Ordering::SeqCst);
    let _ = reporter.join();
    if let Some(e) = ready_err {
        return Err(EngineError::Live(e));
    }
    for a in &acq {
        if let Some(w) = &a.warning {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
    }
    if let Some(e) = acq.iter_mut().find_map(|a| a.err.take()) {
        return Err(EngineError::Live(e.to_string()));
    }
    let ld = |f: fn(&Gauges) -> &AtomicU64| gauges.iter().map(|g| f(g).load(Ordering::Relaxed)).collect::<Vec<u64>>();
    let per_worker_packets = ld(|g| &g.rx_packets);
    let ls = LiveSummary {
        sources: source_names,
        acquire: live.acquire.name(),
        pacing: acq.iter().map(|a| a.pacing).collect(),
        received_packets: per_worker_packets.iter().sum(),
        kernel_drops: ld(|g| &g.kernel_drops).iter().sum(),
        truncated_frames: ld(|g| &g.truncated).iter().sum(),
        ring_freezes: ld(|g| &g.freezes).iter().sum(),
        buffer_drops: ld(|g| &g.buffer_drops).iter().sum(),
        buffer_capacity_bytes: gauges[0].buffer_cap.load(Ordering::Relaxed),
        buffer_max_bytes: ld(|g| &g.buffer_max).into_iter().max().unwrap_or(0),
        per_worker_packets,
        acquisition_cpu_s: acq.iter().map(|a| a.cpu_s).collect(),
        analysis_cpu_s: ana_cpu,
        dns_answers_shared: dns.shared,
        dns_answers_dropped: dns.dropped,
        overload: live.overload.policy.name(),
        offered_packets: 0,
        analysed_packets: 0,
        unanalysed_packets: ld(|g| &g.unanalysed).iter().sum(),
        prioritised_packets: ld(|g| &g.prioritised).iter().sum(),
        min_cutoff: ld(|g| &g.min_cutoff).into_iter().filter(|&c| c > 0).min().map(|c| c as u32),
        shunted_flows: ended.stats.shunted,
        shunted_packets: ld(|g| &g.shunted).iter().sum(),
        shunts_lost: dns.shunts_lost + acq.iter().map(|a| a.shunts_refused).sum::<u64>(),
        offered_pps: 0.0,
        queue_delay: QueueDelay::of(&delays),
    };
    let mut ls = ls;
    ls.offered_packets = ls.received_packets + ls.buffer_drops;
    let first = acq.iter().filter_map(|a| a.offered_ns).map(|s| s.0).min();
    let last = acq.iter().filter_map(|a| a.offered_ns).map(|s| s.1).max();
    if let (Some(a), Some(b)) = (first, last) {
        // One poll's frames over at least a microsecond.
        ls.offered_pps = (ls.offered_packets as f64 / ((b - a).max(1000) as f64 * 1e-9)).round();
    }
    ls.analysed_packets = ls.received_packets - ls.unanalysed_packets - ls.shunted_packets;
    if ls.truncated_frames > 0 {
        // Silent truncation would read as smaller payloads and lost headers.
        warnings.push(format!(
            "{} frame(s) arrived shorter than they were on the wire (the source's frame or \
             buffer size: with DPDK's net_af_packet, raise its framesz); their bytes are \
             counted, what was cut off is not analysed",
            ls.truncated_frames
        ));
    }
    let cap = CaptureStats { frames: disp.frames, wire_bytes: disp.wire_bytes, ..CaptureStats::default() };
    let mut s = ended.summary(cfg, &disp, cap, warnings, stop.load(Ordering::Relaxed), started);
    s.live = Some(ls);
    s.output_closed = ended.written.closed;
    s.records_not_written = ended.written.lost;
    s.write_error = write_error;
    ended.fill(&mut s);
    Ok(s)
}
