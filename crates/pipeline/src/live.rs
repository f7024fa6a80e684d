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
//! (DPDKStat, seeds/000 §3.2): a slow packet, a burst or a pause of the analysis thread
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

use crate::acquire::{Acquire, Pacer};
use crate::buffer::{packet_buffer_sampled, Consumer, Producer, Rec};
use crate::overload::{Controller, Overload, OverloadConfig, Verdict, DECIDE_EVERY, UNLIMITED};
use crate::telemetry::{serve_metrics, spawn_reporter, Gauges, ProcTimes, ReportTo};
use crate::{
    cpu_seconds, random_seed, Block, Dispatch, DispatchResult, EngineConfig, EngineError, PacketTimeSummary,
    PacketTimer, Progress, RecordOut, Summary, Work, WorkerResult, Written, ROTATE,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};
use tapstat_analyze::dnhunter::{is_dns_response, DnsAnswer};
use tapstat_analyze::{Tracker, TrackerStats};
use tapstat_capture::live::{frame_flow, LiveError, LiveSource};
use tapstat_capture::{CaptureStats, LinkType};
use tapstat_decode::Anomalies;
use tapstat_flow::FlowHasher;
use tapstat_sink::{Compress, OutputDir, SinkError};

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
    /// scheduling, before any frame is read (to drop privileges, say).
    pub on_ready: Option<Box<dyn FnOnce() -> Result<(), String> + Send>>,
    /// What to do when a worker's buffer fills (issue 15: TED or plain dropping).
    pub overload: OverloadConfig,
}

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

static NEVER: AtomicBool = AtomicBool::new(false);

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
    fn of(samplers: &[PacketTimer]) -> QueueDelay {
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
const DNS_RING: usize = 1024;

/// Shunt requests a worker can queue for its acquisition thread.
const SHUNT_RING: usize = 4096;

struct AcqResult {
    /// Shunt requests the controller refused (its table full).
    shunts_refused: u64,
    err: Option<LiveError>,
    warning: Option<String>,
    pacing: &'static str,
    cpu_s: f64,
    /// Wall time (ns) of the first and the last poll that brought frames.
    offered_ns: Option<(u64, u64)>,
}

fn wall_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos() as u64
}

/// CPU time of the calling thread.
fn thread_cpu_s() -> f64 {
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
    let started = Instant::now();
    let cpu0 = cpu_seconds();
    let n = sources.len().max(1);
    let seed = cfg.hash_seed.unwrap_or_else(random_seed);
    let hasher = FlowHasher::with_kind(cfg.flow_hash, seed);
    let (names, headers) = super::log_files(cfg);
    let source_names: Vec<String> = sources.iter().map(|s| s.name()).collect();

    // The IPFIX collector, the output directory, the stats file and the metrics port
    // first: a mistake in any of them is an error before the capture starts. With
    // `-o -` there is no directory: the logs go to standard output, the figures to
    // stderr only.
    let exporter = cfg.ipfix.as_ref().map(super::ipfix::Exporter::start).transpose()?;
    let kafka = cfg.kafka.as_ref().map(|k| super::kafka::Exporter::start(k, cfg)).transpose()?;
    if !cfg.stdout {
        std::fs::create_dir_all(&cfg.out_dir).map_err(|source| SinkError { path: cfg.out_dir.clone(), source })?;
    }
    let out = match cfg.rotate {
        None => Some(super::open_output(cfg, &names, &headers)?),
        Some(_) => None,
    };
    let reopen_stats = Arc::new(AtomicBool::new(false));
    let jsonl_path = cfg.out_dir.join("stats.jsonl");
    let jsonl = match cfg.stdout {
        true => None,
        false => Some(
            tapstat_sink::open_append_nofollow(&jsonl_path)
                .map_err(|source| SinkError { path: jsonl_path.clone(), source })?,
        ),
    };
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
    let mut txs = Vec::with_capacity(n);
    let mut rxs = Vec::with_capacity(n);
    for _ in 0..n {
        let (tx, rx) = crossbeam_channel::bounded::<Block>(64);
        txs.push(tx);
        rxs.push(rx);
    }
    let (free_tx, free_rx) = crossbeam_channel::bounded::<Vec<u8>>(16 * n);
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
    let writer = {
        // A write error (a full disk) ends the capture at once: analyzing traffic
        // whose records can no longer be written helps nobody. The writer sets `stop`.
        let mut w = Writer::new(cfg, names.clone(), headers.clone(), out, stop.clone(), Some(live.flush));
        w.reopen = live.reopen;
        w.reopen_stats = reopen_stats.clone();
        w.histo = histo_rx.map(|rx| HistoWriter::new(rx, n, cfg));
        std::thread::Builder::new()
            .name("tapstat-writer".into())
            .spawn(move || w.run(rxs, free_tx))
            .expect("spawning a thread succeeds")
    };

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
        // What the source has yet to hand out starts no earlier than this (a replay
        // knows; a network source does not: `u64::MAX`).
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
        let work = Work {
            // The live loop times every packet for the telemetry (`ProcTimes`, all of
            // the packet's work); summary.json's `packet_time` samples the tracker's
            // share, as for files.
            timer: PacketTimer::new(cfg.time_sample),
            tracker,
            rout: RecordOut::new(cfg, txs[w].clone(), free_rx.clone())
                .with_ipfix(exporter.as_ref())
                .with_kafka(kafka.as_ref()),
        };
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
                pending,
            }),
        };
        ana_threads.push(
            std::thread::Builder::new()
                .name(format!("tapstat-w{w}"))
                .spawn(move || a.run())
                .expect("spawning a thread succeeds"),
        );
    }
    drop(txs);
    drop(histo_tx);
    ready.wait();
    let mut ready_err = None;
    if let Some(f) = live.on_ready.take() {
        if let Err(e) = f() {
            ready_err = Some(e);
            stop.store(true, Ordering::SeqCst);
        }
    }
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
    let mut stats = TrackerStats::default();
    let mut histo = super::HistoMerge::default();
    let mut records = [0u64; super::NLOGS];
    let mut ana_cpu = Vec::with_capacity(n);
    let mut dns = DnsShare::default();
    let (mut timers, mut delays) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for h in ana_threads {
        let (d, r, cpu, sh, delay) = h.join().map_err(|_| EngineError::Thread("analysis"))?;
        timers.push(r.timer);
        histo.add(r.histo.as_deref());
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
        stats.merge(&r.stats);
        for (total, k) in records.iter_mut().zip(r.records) {
            *total += k;
        }
        ana_cpu.push(cpu);
    }
    let (written, mut warnings) = writer.join().map_err(|_| EngineError::Thread("writer"))?;
    if let Some(e) = written.error {
        return Err(e.into());
    }
    let exported = exporter.map(super::ipfix::Exporter::finish).transpose()?;
    let kafka = kafka.map(super::kafka::Exporter::finish).transpose()?;
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
        shunted_flows: stats.shunted,
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
    let mut s = Summary::new(
        cfg,
        n,
        &disp.anomalies,
        disp.non_ip,
        disp.frames,
        disp.wire_bytes,
        disp.first_ns,
        disp.last_ns,
        &stats,
        &super::records_by_log(cfg, &records),
        cap,
        warnings,
        stop.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
        cpu_seconds() - cpu0,
    );
    s.live = Some(ls);
    s.output_closed = written.closed;
    s.records_not_written = written.lost;
    s.packet_time = PacketTimeSummary::of(&timers);
    s.histograms = histo.0;
    s.set_ipfix(exported);
    s.set_kafka(kafka);
    Ok(s)
}

/// An acquisition thread: frames from `src` into `prod` at the pace of `policy`,
/// until `stop`.
#[allow(clippy::too_many_arguments)]
fn acquire_loop(
    mut src: Box<dyn LiveSource>,
    mut prod: Producer,
    mut ctl: Option<Controller>,
    mut shunt_in: Option<rtrb::Consumer<u64>>,
    policy: Acquire,
    g: &Gauges,
    stop: &AtomicBool,
    ready: &Barrier,
    progress: &Progress,
    pending: &AtomicU64,
) -> AcqResult {
    let knows_pending = src.pending_from_ns().is_some();
    let mut warning = None;
    let mut pacer = Pacer::new(policy, &mut warning);
    ready.wait();
    let stamps = src.stamps_frames();
    let mut last_poll_ns = wall_ns();
    let mut last_stats = Instant::now();
    let (mut rx, mut bytes, mut drops, mut truncated) = (0u64, 0u64, 0u64, 0u64);
    let (mut unanalysed, mut prioritised, mut min_cutoff) = (0u64, 0u64, UNLIMITED);
    let (mut shunted, mut last_ts) = (0u64, 0u64);
    let (link, cap) = (src.link(), prod.capacity());
    let mut err = None;
    let mut offered_ns = None;
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let mark = prod.mark();
        // TED decides once per poll, and every DECIDE_EVERY frames of a long one; a
        // stamping source's records are then published too, so that the analysis
        // thread can drain them while the poll goes on.
        let mut since = 0u32;
        if let Some(c) = ctl.as_mut() {
            c.decide(prod.occupancy().0, cap);
            min_cutoff = min_cutoff.min(c.cutoff());
            // The flows the worker shunted since the last poll.
            if let Some(rx) = shunt_in.as_mut() {
                while let Ok(h) = rx.pop() {
                    c.shunt(h, last_ts);
                }
            }
        }
        let r = src.poll(&mut |m, b| {
            truncated += (b.len() < m.orig_len as usize) as u64;
            let v = match ctl.as_mut() {
                None => Verdict::Analyse,
                Some(c) => {
                    since += 1;
                    if since == DECIDE_EVERY {
                        since = 0;
                        if stamps {
                            prod.publish();
                        }
                        c.decide(prod.occupancy().0, cap);
                        min_cutoff = min_cutoff.min(c.cutoff());
                    }
                    last_ts = last_ts.max(m.ts_ns);
                    c.verdict(link, b, m.ts_ns)
                }
            };
            let pushed = match (v, ctl.as_mut()) {
                // A tail is held and counted with its flow's others (losses: `lost`).
                (Verdict::Count, Some(c)) => {
                    c.hold(&mut prod, m.ts_ns, m.orig_len, b);
                    true
                }
                (v, c) => {
                    // The flow's held tails go first.
                    if let Some(c) = c {
                        c.release(&mut prod);
                    }
                    match v {
                        Verdict::Count | Verdict::Shunted => prod.push_counted(m.ts_ns, m.orig_len, b),
                        _ => prod.push(m.ts_ns, m.orig_len, b),
                    }
                }
            };
            if pushed {
                rx += 1;
                bytes += m.orig_len as u64;
                unanalysed += (v == Verdict::Count) as u64;
                prioritised += (v == Verdict::Priority) as u64;
                shunted += (v == Verdict::Shunted) as u64;
            } else {
                drops += 1;
            }
        });
        let k = match r {
            Ok(k) => k,
            Err(e) => {
                err = Some(e);
                break;
            }
        };
        if !stamps {
            // A batch-stamped source: the frames arrived between the last poll and
            // this one; spread them over that time (seeds/000 §3.2, ref. [23]).
            let now = wall_ns();
            if k > 0 {
                prod.spread_times(mark, last_poll_ns, now);
            }
            last_poll_ns = now;
        }
        prod.publish();
        if knows_pending {
            // After the frames are published: an analysis thread that reads this, then
            // finds its buffer empty, has had every frame before it.
            pending.store(src.pending_from_ns().unwrap_or(u64::MAX), Ordering::Release);
        }
        if k > 0 {
            let now = wall_ns();
            offered_ns = Some((offered_ns.map_or(now, |(a, _)| a), now));
            // Held tails a full buffer had no room for are drops, not received.
            let lost = ctl.as_ref().map_or((0, 0), |c| c.lost);
            g.rx_packets.store(rx - lost.0, Ordering::Relaxed);
            g.rx_bytes.store(bytes - lost.1, Ordering::Relaxed);
            g.unanalysed.store(unanalysed - lost.0, Ordering::Relaxed);
            g.prioritised.store(prioritised, Ordering::Relaxed);
            g.shunted.store(shunted, Ordering::Relaxed);
            g.cutoff.store(ctl.as_ref().map_or(0, |c| c.cutoff() as u64), Ordering::Relaxed);
            g.buffer_drops.store(drops + lost.0, Ordering::Relaxed);
            g.truncated.store(truncated, Ordering::Relaxed);
            let (cur, max) = prod.occupancy();
            g.buffer_bytes.store(cur, Ordering::Relaxed);
            g.buffer_max.store(max, Ordering::Relaxed);
            progress.packets.fetch_add(k as u64, Ordering::Relaxed);
        }
        if stopping || (k == 0 && src.ended()) {
            break;
        }
        if last_stats.elapsed() >= Duration::from_millis(100) {
            let s = src.stats();
            g.kernel_drops.store(s.kernel_drops, Ordering::Relaxed);
            g.freezes.store(s.freezes, Ordering::Relaxed);
            g.buffer_bytes.store(prod.occupancy().0, Ordering::Relaxed);
            last_stats = Instant::now();
        }
        pacer.wait(k == 0, &mut *src);
    }
    // The tails still held go in now, waiting (up to a second in all) for the analysis
    // to make room.
    if let Some(c) = ctl.as_mut() {
        c.release_all(&mut prod, 10_000, |p| {
            p.publish();
            std::thread::sleep(Duration::from_micros(100));
        });
    }
    let lost = ctl.as_ref().map_or((0, 0), |c| c.lost);
    let s = src.stats();
    g.kernel_drops.store(s.kernel_drops, Ordering::Relaxed);
    g.freezes.store(s.freezes, Ordering::Relaxed);
    g.rx_packets.store(rx - lost.0, Ordering::Relaxed);
    g.rx_bytes.store(bytes - lost.1, Ordering::Relaxed);
    g.buffer_drops.store(drops + lost.0, Ordering::Relaxed);
    g.truncated.store(truncated, Ordering::Relaxed);
    g.unanalysed.store(unanalysed - lost.0, Ordering::Relaxed);
    g.prioritised.store(prioritised, Ordering::Relaxed);
    g.shunted.store(shunted, Ordering::Relaxed);
    if min_cutoff != UNLIMITED {
        g.min_cutoff.store(min_cutoff as u64, Ordering::Relaxed);
    }
    prod.close();
    let shunts_refused = ctl.as_ref().map_or(0, |c| c.shunts_refused);
    AcqResult { shunts_refused, err, warning, pacing: pacer.kind(), cpu_s: thread_cpu_s(), offered_ns }
}

/// An analysis thread: drains its buffer into its tracker.
struct Analysis {
    dispatch: Dispatch,
    work: Work,
    cons: Consumer,
    link: LinkType,
    gauges: Arc<Gauges>,
    poll: bool,
    global_clock: Arc<AtomicU64>,
    final_clock: Arc<AtomicU64>,
    end_barrier: Arc<Barrier>,
    /// Set when the run was stopped (a signal), as opposed to a source that ended.
    stop: Arc<AtomicBool>,
    flush: Duration,
    /// Rings to every other worker for the DNS answers this one learns, and from them.
    dns_out: Vec<rtrb::Producer<DnsAnswer>>,
    dns_in: Vec<rtrb::Consumer<DnsAnswer>>,
    dns: DnsShare,
    /// Where the flows this worker shunts go: its acquisition thread (`--shunt`).
    shunt_out: Option<rtrb::Producer<u64>>,
    /// Where the intervals of the link histograms this worker has closed go
    /// (`--histo-interval`).
    histo: Option<HistoFeed>,
}

/// A worker's link histograms on their way to the writer, an interval at a time.
struct HistoFeed {
    tx: crossbeam_channel::Sender<HistoReport>,
    worker: usize,
    interval_ns: u64,
    /// The worker reports again once its clock reaches this (the end of the interval
    /// of its last report).
    next_ns: u64,
    /// A worker without packets follows the others' clock this far behind (one
    /// interval, or the `--flush` period if longer): the packets it has yet to receive
    /// are not older (its queue is empty; workers' clocks differ by what their queues
    /// and their sources' rings hold).
    slack_ns: u64,
    /// And no further than the time of the next frame its source has yet to hand out,
    /// where the source knows it (a replay: whatever the speed-up and however late
    /// its acquisition thread runs).
    pending: Arc<AtomicU64>,
}

/// What a worker tells the writer about the link histograms.
pub(crate) struct HistoReport {
    worker: usize,
    /// The worker's clock: nothing more will be due before it (`u64::MAX`: the
    /// worker has ended, and `closed` holds all it had left).
    mark_ns: u64,
    /// The intervals the worker has closed, ended by `mark_ns`.
    closed: tapstat_analyze::histo::Histo,
}

/// DNS answers handed to other workers, and those dropped at a full ring.
#[derive(Clone, Copy, Debug, Default)]
struct DnsShare {
    shared: u64,
    dropped: u64,
    /// Shunt requests lost at a full ring to acquisition.
    shunts_lost: u64,
}

impl Analysis {
    fn run(mut self) -> (DispatchResult, WorkerResult, f64, DnsShare, PacketTimer) {
        let mut times = ProcTimes::new();
        let mut idle = 0u32;
        let mut flushed = Instant::now();
        loop {
            // Records wait in 256 KiB blocks; on a quiet link a block would take
            // minutes to fill. One clock read per burst of up to 256 frames.
            if flushed.elapsed() >= self.flush {
                self.work.rout.flush_all();
                flushed = Instant::now();
            }
            let closed = self.cons.closed();
            // Before the read: if it finds nothing, every frame before this was read.
            let pending = self.histo.as_ref().map_or(u64::MAX, |h| h.pending.load(Ordering::Acquire));
            // The answers the other workers learnt so far, before this worker's next
            // packets: a client's connection follows the answer by at least the time
            // the answer takes to reach it and the SYN to come back, while the two
            // wait in different workers' queues.
            for rx in &mut self.dns_in {
                while let Ok(a) = rx.pop() {
                    self.work.tracker.learn_dns_answer(a);
                }
            }
            let (dispatch, work) = (&mut self.dispatch, &mut self.work);
            let (dns_out, dns) = (&mut self.dns_out, &mut self.dns);
            let (shunt_out, link) = (&mut self.shunt_out, self.link);
            let k = self.cons.read(256, self.link, |f, bytes, rec| {
                let t0 = Instant::now();
                if let Some((_, p)) = dispatch.frame(f, bytes) {
                    // (`Work` follows the packet's clock into its output interval.)
                    if let Rec::Tails(t) = rec {
                        // Tail packets the controller held: their flow counts them,
                        // nothing more; so does the run.
                        work.tails(&p, &t);
                        dispatch.r.frames += t.packets().saturating_sub(1);
                        dispatch.r.wire_bytes += t.bytes().saturating_sub(f.orig_len as u64);
                    } else if rec.counted() {
                        // A tail packet the controller did not let through whole: its
                        // flow counts it, nothing more.
                        work.counted(&p);
                    } else {
                        work.packet(&p, bytes, || dispatch.dec.reassembled(), &[]);
                        if !dns_out.is_empty() && is_dns_response(&p.dec) {
                            share(work.tracker.take_dns_answers(), dns_out, dns);
                        }
                        if let Some(tx) = shunt_out.as_mut() {
                            if work.tracker.take_shunt() {
                                // Acquisition knows the flow by its frame's hash.
                                if let Some(ff) = frame_flow(link, bytes) {
                                    dns.shunts_lost += tx.push(ff.hash).is_err() as u64;
                                }
                            }
                        }
                    }
                }
                times.add(t0.elapsed().as_nanos() as u64);
            });
            if k > 0 {
                idle = 0;
                times.publish(&self.gauges);
                self.gauges.flows.store(self.work.tracker.live_flows() as u64, Ordering::Relaxed);
                self.gauges.evictions.store(self.work.tracker.stats.evictions, Ordering::Relaxed);
                self.global_clock.fetch_max(self.dispatch.clock.now(), Ordering::Relaxed);
                // Past the end of an interval of the link histograms: hand over the
                // intervals that ended (one comparison a burst, the work once an
                // interval).
                if self.histo.as_ref().is_some_and(|h| self.work.tracker.now_ns() >= h.next_ns) {
                    self.report_histo(0);
                }
                continue;
            }
            if closed {
                break;
            }
            // An idle worker still follows the others into a new output interval, so
            // the writer can close the old one.
            let g = self.global_clock.load(Ordering::Relaxed);
            if g > 0 {
                self.work.rout.follow(g);
                // Nor does it hold back the link histograms: it follows the others'
                // clock, an interval behind, and ends the flows expired by then.
                if let Some(h) = &self.histo {
                    let at = g.saturating_sub(h.slack_ns).min(pending);
                    if at >= h.next_ns {
                        self.report_histo(at);
                    }
                }
            }
            idle += 1;
            if self.poll && idle < 1000 {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        let (r, end) = self.dispatch.finish();
        // Every worker expires its flows against the latest clock of all of them.
        self.final_clock.fetch_max(end, Ordering::SeqCst);
        self.end_barrier.wait();
        let mut wr = self.work.finish(self.final_clock.load(Ordering::SeqCst), self.stop.load(Ordering::SeqCst));
        if let (Some(h), Some(rest)) = (&self.histo, wr.histo.take()) {
            // The writer only goes away on an I/O error, which it reports itself.
            let _ = h.tx.send(HistoReport { worker: h.worker, mark_ns: u64::MAX, closed: *rest });
        }
        (r, wr, thread_cpu_s(), self.dns, self.cons.delays().clone())
    }

    /// Hands the writer the intervals of the link histograms that ended by the
    /// worker's clock, moved to `at` first if later (a worker without packets).
    #[cold]
    fn report_histo(&mut self, at: u64) {
        let Some(h) = self.histo.as_mut() else { return };
        let Some(closed) = self.work.tracker.take_histo_before_now(at, &mut self.work.rout) else { return };
        let mark_ns = self.work.tracker.now_ns();
        h.next_ns = (mark_ns / h.interval_ns).saturating_add(1).saturating_mul(h.interval_ns);
        // The writer only goes away on an I/O error, which it reports itself.
        let _ = h.tx.send(HistoReport { worker: h.worker, mark_ns, closed });
    }
}

/// Hands `answers` to every other worker; a full ring drops the answer for that worker
/// (counted) rather than make the packet path wait.
fn share(answers: impl Iterator<Item = DnsAnswer>, out: &mut [rtrb::Producer<DnsAnswer>], n: &mut DnsShare) {
    for a in answers {
        for tx in out.iter_mut() {
            match tx.push(a.clone()) {
                Ok(()) => n.shared += 1,
                Err(_) => n.dropped += 1,
            }
        }
    }
}

/// The directory name of an output interval starting at `secs` (UTC) of a rotation
/// every `period_ns`: Tstat's `YYYY_MM_DD_HH_MM.out`, or with the seconds,
/// `YYYY_MM_DD_HH_MM_SS.out`, for periods under a minute (whose intervals would
/// otherwise share a minute's name).
pub fn interval_name(secs: u64, period_ns: u64) -> String {
    let name = interval_dir_name(secs);
    if period_ns >= 60_000_000_000 {
        return name;
    }
    format!("{}_{:02}.out", name.trim_end_matches(".out"), secs % 60)
}

/// Tstat's directory name of an interval starting at `secs` (UTC): `YYYY_MM_DD_HH_MM.out`.
pub fn interval_dir_name(secs: u64) -> String {
    let (y, m, d, hh, mm, _) = tapstat_record::civil(secs);
    format!("{y:04}_{m:02}_{d:02}_{hh:02}_{mm:02}.out")
}

/// The writer thread of a live run (and of a file run with `--rotate`): blocks from
/// every worker into the output directory (or standard output), or into the
/// directory of each worker's interval.
pub(crate) struct Writer {
    out_dir: PathBuf,
    names: Vec<String>,
    headers: Vec<Vec<u8>>,
    compress: Compress,
    /// The rotation period (for the intervals' names).
    period_ns: u64,
    /// Without rotation: the one output directory.
    single: Option<OutputDir>,
    /// With rotation: open intervals by start (epoch s), written under a hidden name.
    intervals: BTreeMap<u64, OutputDir>,
    /// Intervals before this one are closed.
    closed_below: u64,
    /// The interval each worker writes to.
    cur: Vec<Option<u64>>,
    reopen: &'static AtomicBool,
    /// Set when the files were reopened, for the reporter to reopen stats.jsonl.
    reopen_stats: Arc<AtomicBool>,
    warnings: Vec<String>,
    /// Set at the first failure, to end the run.
    stop: Arc<AtomicBool>,
    /// Live runs: what was written is made readable at least this often, and whenever
    /// no block came for a while (compressed files end a frame, standard output is
    /// flushed; see [`OutputDir::flush`]).
    flush: Option<Duration>,
    /// Live runs with link histograms: the intervals every worker has closed.
    histo: Option<HistoWriter>,
}

/// The writer's side of a live run's link histograms: what the workers closed, merged,
/// written an interval at a time (histograms.tsv, or JSON lines with `-o -`; with
/// `--rotate`, the histograms.tsv of each interval's directory) once every worker has
/// reported a clock past the interval's end. Intervals go out in order, each once and
/// whole, so the files end as a file run's would.
pub(crate) struct HistoWriter {
    rx: crossbeam_channel::Receiver<HistoReport>,
    interval_ns: u64,
    /// Each worker's last clock (0: none yet; `u64::MAX`: ended).
    marks: Vec<u64>,
    /// Intervals closed by some workers, not yet written.
    acc: Option<tapstat_analyze::histo::Histo>,
    path: PathBuf,
    stdout: bool,
    /// histograms.tsv at the top (without `--rotate`), created at the first write
    /// (after any privilege drop, as the logs' owner would).
    file: Option<std::fs::File>,
}

impl HistoWriter {
    pub(crate) fn new(rx: crossbeam_channel::Receiver<HistoReport>, workers: usize, cfg: &EngineConfig) -> Self {
        HistoWriter {
            rx,
            interval_ns: cfg.tracker.histo_ns.max(1),
            marks: vec![0; workers],
            acc: None,
            path: cfg.out_dir.join(HISTOGRAMS),
            stdout: cfg.stdout,
            file: None,
        }
    }

    /// Takes in a worker's report; answers the intervals every worker has now closed.
    fn add(&mut self, r: HistoReport) -> Option<tapstat_analyze::histo::Histo> {
        if let Some(m) = self.marks.get_mut(r.worker) {
            *m = (*m).max(r.mark_ns);
        }
        match &mut self.acc {
            Some(a) => a.merge(&r.closed),
            None => self.acc = Some(r.closed),
        }
        self.take(self.written_upto())
    }

    /// The clock every worker has passed: each interval that ended by it is written.
    fn written_upto(&self) -> u64 {
        self.marks.iter().copied().min().unwrap_or(0)
    }

    /// The intervals that ended by `upto`, none when there are none.
    fn take(&mut self, upto: u64) -> Option<tapstat_analyze::histo::Histo> {
        let done = match &mut self.acc {
            Some(a) if upto > 0 => a.take_before(upto),
            _ => return None,
        };
        (!done.is_empty()).then_some(done)
    }

    /// Whether every histogram interval that starts before `end_ns` was written: the
    /// last of them ends at the first multiple of the interval at or after `end_ns`.
    fn written_before(&self, end_ns: u64) -> bool {
        self.written_upto() >= end_ns.div_ceil(self.interval_ns).saturating_mul(self.interval_ns)
    }

    /// Appends rows to histograms.tsv at the top of the output directory.
    fn append_top(&mut self, rows: &str) -> Result<(), SinkError> {
        use std::io::Write;
        let e = |source| SinkError { path: self.path.clone(), source };
        if self.file.is_none() {
            let mut f = tapstat_sink::create_fresh(&self.path).map_err(e)?;
            f.write_all(tapstat_analyze::histo::Histo::TSV_HEADER.as_bytes()).map_err(e)?;
            self.file = Some(f);
        }
        self.file.as_mut().expect("opened above").write_all(rows.as_bytes()).map_err(e)
    }
}

/// The link histograms' file name, at the top of the output directory or, with
/// `--rotate`, in each interval's directory.
pub const HISTOGRAMS: &str = "histograms.tsv";

/// Appends `rows` to the histograms file at `path`, created with its header line when
/// it is not there (an interval's directory: written a histogram interval at a time,
/// reopened for each; never through a link, as every file tapstat writes).
pub(crate) fn append_histograms(path: &Path, rows: &str) -> Result<(), SinkError> {
    use std::io::Write;
    let e = |source| SinkError { path: path.to_path_buf(), source };
    let mut f = tapstat_sink::open_append_nofollow(path).map_err(e)?;
    if f.metadata().map_err(e)?.len() == 0 {
        f.write_all(tapstat_analyze::histo::Histo::TSV_HEADER.as_bytes()).map_err(e)?;
    }
    f.write_all(rows.as_bytes()).map_err(e)
}

impl Writer {
    /// A writer of `cfg`'s logs (file `names`, `headers`): into `single` when given,
    /// else into an interval directory per `--rotate` period.
    pub(crate) fn new(
        cfg: &EngineConfig,
        names: Vec<String>,
        headers: Vec<Vec<u8>>,
        single: Option<OutputDir>,
        stop: Arc<AtomicBool>,
        flush: Option<Duration>,
    ) -> Writer {
        Writer {
            out_dir: cfg.out_dir.clone(),
            names,
            headers,
            compress: cfg.compress,
            period_ns: cfg.rotate_ns().unwrap_or(0),
            single,
            intervals: BTreeMap::new(),
            closed_below: 0,
            cur: Vec::new(),
            reopen: &NEVER,
            reopen_stats: Arc::new(AtomicBool::new(false)),
            warnings: Vec::new(),
            stop,
            flush,
            histo: None,
        }
    }

    fn part_path(&self, start: u64) -> PathBuf {
        self.out_dir.join(format!(".{}.part", interval_name(start, self.period_ns)))
    }

    fn final_path(&self, start: u64) -> PathBuf {
        self.out_dir.join(interval_name(start, self.period_ns))
    }

    /// Writes what the workers send until every one has gone. At the first failure
    /// it stops the run and counts the records it could not write from then on.
    pub(crate) fn run(
        mut self,
        rxs: Vec<crossbeam_channel::Receiver<Block>>,
        free: crossbeam_channel::Sender<Vec<u8>>,
    ) -> (Written, Vec<String>) {
        let mut out = Written::default();
        self.cur = vec![None; rxs.len()];
        let mut live: Vec<bool> = vec![true; rxs.len()];
        let tick = self.flush.map_or(Duration::from_millis(200), |f| f.min(Duration::from_millis(200)));
        let mut flushed = Instant::now();
        let histo_rx = self.histo.as_ref().map(|h| h.rx.clone());
        let mut histo_live = histo_rx.is_some();
        while live.iter().any(|l| *l) || histo_live {
            if self.reopen.swap(false, Ordering::SeqCst) && !out.stopped() {
                if let Err(e) = self.reopen_all() {
                    out.fail(e, &self.stop);
                }
            }
            let mut sel = crossbeam_channel::Select::new();
            let mut idx = Vec::new();
            for (w, rx) in rxs.iter().enumerate() {
                if live[w] {
                    sel.recv(rx);
                    idx.push(w);
                }
            }
            if let (Some(rx), true) = (&histo_rx, histo_live) {
                sel.recv(rx);
                idx.push(usize::MAX);
            }
            let got = sel.select_timeout(tick);
            let quiet = got.is_err();
            match got {
                Ok(op) if idx[op.index()] == usize::MAX => {
                    let rx = histo_rx.as_ref().expect("selected above");
                    match op.recv(rx) {
                        Ok(r) if !out.stopped() => {
                            let done = self.histo.as_mut().expect("with its receiver").add(r);
                            if let Err(e) = self.write_histo(done).and_then(|()| self.close_passed()) {
                                out.fail(e, &self.stop);
                            }
                        }
                        Ok(_) => {}
                        Err(_) => histo_live = false,
                    }
                }
                Ok(op) => {
                    let w = idx[op.index()];
                    let r = match op.recv(&rxs[w]) {
                        // After a failure, what comes is counted, not written.
                        Ok((i, b)) if out.stopped() => {
                            if i != ROTATE {
                                out.lose(tapstat_sink::records_in(&self.headers[i], &b));
                            }
                            Ok(())
                        }
                        Ok((ROTATE, b)) => {
                            let mut s = [0u8; 8];
                            s.copy_from_slice(&b[..8]);
                            self.enter(w, u64::from_le_bytes(s))
                        }
                        Ok((i, mut b)) => {
                            let r = self.append(w, i, &b);
                            if r.is_err() {
                                out.lose(tapstat_sink::records_in(&self.headers[i], &b));
                            }
                            b.clear();
                            let _ = free.try_send(b);
                            r
                        }
                        Err(_) => {
                            live[w] = false;
                            Ok(())
                        }
                    };
                    if let Err(e) = r {
                        out.fail(e, &self.stop);
                    }
                }
                Err(_) => {}
            }
            // Quiet, or a --flush since the last time: make what was written readable.
            if self.flush.is_some_and(|f| quiet || flushed.elapsed() >= f) && !out.stopped() {
                if let Err(e) = self.flush_all() {
                    out.fail(e, &self.stop);
                }
                flushed = Instant::now();
            }
        }
        if let (Some(h), false) = (self.histo.as_mut(), out.stopped()) {
            // Everything left; the top file even without rows (an interval's
            // directory gets its own when it is closed).
            let rest = h.take(u64::MAX);
            let top = !h.stdout && self.period_ns == 0;
            let r = self.write_histo(rest).and_then(|()| match self.histo.as_mut() {
                Some(h) if top && h.file.is_none() => h.append_top(""),
                _ => Ok(()),
            });
            if let Err(e) = r {
                out.fail(e, &self.stop);
            }
        }
        if !out.stopped() {
            let mut r = self.single.take().map_or(Ok(()), OutputDir::finish);
            let starts: Vec<u64> = self.intervals.keys().copied().collect();
            for s in starts {
                r = r.and_then(|()| self.close(s));
            }
            if let Err(e) = r {
                out.fail(e, &self.stop);
            }
        }
        (out, self.warnings)
    }

    fn flush_all(&mut self) -> Result<(), SinkError> {
        if let Some(o) = &mut self.single {
            o.flush()?;
        }
        for o in self.intervals.values_mut() {
            o.flush()?;
        }
        Ok(())
    }

    fn dir_for(&mut self, start: u64) -> Result<&mut OutputDir, SinkError> {
        if !self.intervals.contains_key(&start) {
            let o = if start < self.closed_below {
                // A late worker: its interval was closed already; add to it.
                OutputDir::open_append_compressed(&self.final_path(start), &self.names, &self.headers, self.compress)?
            } else {
                OutputDir::create_compressed(&self.part_path(start), &self.names, &self.headers, self.compress)?
            };
            self.intervals.insert(start, o);
        }
        Ok(self.intervals.get_mut(&start).expect("inserted above"))
    }

    fn append(&mut self, w: usize, i: usize, b: &[u8]) -> Result<(), SinkError> {
        if let Some(o) = &mut self.single {
            return o.append(i, b);
        }
        // A worker announces its interval before its first record.
        let start = self.cur[w].unwrap_or(self.closed_below);
        self.dir_for(start)?.append(i, b)
    }

    fn enter(&mut self, w: usize, start: u64) -> Result<(), SinkError> {
        self.cur[w] = Some(start);
        self.dir_for(start)?;
        self.close_passed()
    }

    /// Closes every interval no worker writes to any more and, with link histograms,
    /// whose histogram intervals have all been written, so that a directory with its
    /// final name is complete.
    fn close_passed(&mut self) -> Result<(), SinkError> {
        let Some(oldest) = self.cur.iter().flatten().copied().min() else { return Ok(()) };
        let period_ns = self.period_ns;
        let histo = self.histo.as_ref().filter(|h| !h.stdout);
        let done: Vec<u64> = self
            .intervals
            .range(..oldest)
            .map(|(s, _)| *s)
            .filter(|s| histo.is_none_or(|h| h.written_before((s * 1_000_000_000).saturating_add(period_ns))))
            .collect();
        for s in done {
            self.close(s)?;
        }
        self.closed_below = self.closed_below.max(oldest);
        Ok(())
    }

    /// Writes histogram intervals every worker has closed: as JSON lines among the
    /// records (`-o -`), to histograms.tsv at the top, or with `--rotate` to the
    /// histograms.tsv of the directory of the interval each starts in.
    fn write_histo(&mut self, done: Option<tapstat_analyze::histo::Histo>) -> Result<(), SinkError> {
        let (Some(done), Some(h)) = (done, self.histo.as_mut()) else { return Ok(()) };
        if h.stdout {
            return self.single.as_mut().map_or(Ok(()), |o| o.append_tagged(done.to_jsonl().as_bytes()));
        }
        if self.period_ns == 0 {
            return h.append_top(&done.tsv_rows());
        }
        for (start_ns, piece) in done.split(self.period_ns) {
            let dir = self.dir_for(start_ns / 1_000_000_000)?.dir().to_path_buf();
            append_histograms(&dir.join(HISTOGRAMS), &piece.tsv_rows())?;
        }
        Ok(())
    }

    /// Flushes an interval's files and gives its directory its final name.
    fn close(&mut self, start: u64) -> Result<(), SinkError> {
        let Some(o) = self.intervals.remove(&start) else { return Ok(()) };
        let dir = o.dir().to_path_buf();
        o.finish()?;
        if self.histo.as_ref().is_some_and(|h| !h.stdout) {
            // Every interval's directory has its histograms file, rows or not.
            append_histograms(&dir.join(HISTOGRAMS), "")?;
        }
        let fin = self.final_path(start);
        if dir != fin {
            if let Err(e) = std::fs::rename(&dir, &fin) {
                self.warnings.push(format!("cannot rename {} to {}: {e}", dir.display(), fin.display()));
            }
        }
        Ok(())
    }

    fn reopen_all(&mut self) -> Result<(), SinkError> {
        self.reopen_stats.store(true, Ordering::SeqCst);
        if let Some(o) = self.single.take() {
            if o.is_stdout() {
                // Standard output has nothing to reopen.
                self.single = Some(o);
            } else {
                let d = o.dir().to_path_buf();
                o.finish()?;
                self.single = Some(OutputDir::open_append_compressed(&d, &self.names, &self.headers, self.compress)?);
            }
        }
        let starts: Vec<u64> = self.intervals.keys().copied().collect();
        for s in starts {
            let o = self.intervals.remove(&s).expect("listed above");
            let d = o.dir().to_path_buf();
            o.finish()?;
            self.intervals.insert(s, OutputDir::open_append_compressed(&d, &self.names, &self.headers, self.compress)?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tstat_directory_names() {
        assert_eq!(interval_dir_name(0), "1970_01_01_00_00.out");
        // 2024-02-29 13:37:00 UTC
        assert_eq!(interval_dir_name(1_709_213_820), "2024_02_29_13_37.out");
        assert_eq!(interval_name(1_709_213_820, 3_600_000_000_000), "2024_02_29_13_37.out");
        // Under a minute, the seconds tell the intervals apart.
        assert_eq!(interval_name(1_709_213_845, 15_000_000_000), "2024_02_29_13_37_25.out");
    }
}
