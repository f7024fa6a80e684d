//! The engine: a reader thread, a dispatcher thread, N shared-nothing worker threads
//! and a record writer thread, joined by bounded rings.
//!
//! ```text
//! source ──► reader ──ring──► dispatcher: decode, key, hash ──ring──► worker 0: Tracker ──┐
//!                                                          └─ring──► worker 1: Tracker ──┼─► writer ─► OutputDir
//!                                                          └─ ...                        ┘
//! ```
//!
//! The main entry is [`run`], which takes a [`PacketSource`] and an [`EngineConfig`]
//! and returns a [`Summary`].
//!
//! Architecture invariant: a flow belongs to exactly one worker, chosen by the
//! symmetric flow hash; workers share no flow state and take no locks on the packet
//! path. Everything a worker decides, it decides from packet time, so the records of 1
//! worker and of N workers are the same set.

mod acquire;
mod blocks;
mod buffer;
mod ipfix;
mod kafka;
mod live;
mod overload;
mod ring;
mod schedule;
mod summary;
mod telemetry;
mod timing;

pub use acquire::Acquire;
pub use ipfix::{IpfixConfig, IpfixSummary, Transport as IpfixTransport};
pub use kafka::{KafkaConfig, KafkaSummary, NO_KAFKA};
pub use live::{interval_dir_name, interval_name, run_live, LiveConfig, LiveSummary, QueueDelay, HISTOGRAMS};
pub use overload::{Keep, Overload, OverloadConfig};
pub use ring::{ring, Receiver, Sender};
pub use schedule::Schedule;
use schedule::{Scheduler, Table, BINS};
pub use summary::{cpu_seconds, unkeyed_hash_warning, SchedulingSummary, Summary, SUMMARY_KEYS};
pub use telemetry::{Gauges, WorkerStats};
pub use timing::{PacketTimeSummary, PacketTimer};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tapstat_analyze::dnhunter;
use tapstat_analyze::l7log::{self, DnsRow, HttpRow};
use tapstat_analyze::logs::LogId;
use tapstat_analyze::periodic::{self, PeriodicRow};
use tapstat_analyze::Kind;
use tapstat_analyze::{Flow, FlowSink, InputClock, Packet, TcpSets, Tracker, TrackerConfig, TrackerStats};
use tapstat_capture::{Backing, CaptureError, CaptureStats, Chunk, FrameMeta, PacketSource};
use tapstat_decode::{Anomalies, DecodeConfig, Decoded, Decoder, Fragment, SharedFrags, L4};
use tapstat_flow::{FlowHasher, FlowKey, HashKind};
use tapstat_sink::{Compress, Format, OutputDir, SinkError};

/// Everything the engine needs to know.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub workers: usize,
    pub format: Format,
    pub out_dir: std::path::PathBuf,
    /// Compression of the logs (`--compress`), done by the writer thread.
    pub compress: Compress,
    /// Write every log to standard output instead of `out_dir` (`-o -`): one stream of
    /// JSON lines, each with its log's name as its first key.
    pub stdout: bool,
    /// Start a new output directory every this long of packet time (`--rotate`),
    /// named by its start (see [`interval_name`]).
    pub rotate: Option<std::time::Duration>,
    pub tracker: TrackerConfig,
    pub decode: DecodeConfig,
    /// Seed of the flow hash; `None` draws one at start-up.
    pub hash_seed: Option<u64>,
    /// Frames per chunk read from the source.
    pub chunk_frames: usize,
    /// Slots of each ring.
    pub ring_slots: usize,
    /// The flow hash function (computed once per packet, by the dispatcher).
    pub flow_hash: HashKind,
    /// Time 1 packet in this many in the workers (0: none).
    pub time_sample: u32,
    /// Dispatcher threads with several workers on the offline path (0: one per three
    /// workers, see [`EngineConfig::dispatchers_for`]).
    pub dispatchers: usize,
    /// Which worker a flow's packets go to with several workers on the offline path.
    pub schedule: Schedule,
    /// Chunks per scheduling epoch (`balance`, `bundle`: bins move between epochs).
    pub epoch_chunks: u64,
    /// Flow-affinity batches: workers fed by dispatchers account each batch's packets
    /// grouped by flow, with the records of input order (see [`FlowGroups`]).
    pub flow_batches: bool,
    /// Export every ended flow to an IPFIX collector too (`--ipfix`).
    pub ipfix: Option<IpfixConfig>,
    /// Export every record to Kafka too (`--kafka`).
    pub kafka: Option<KafkaConfig>,
}

impl EngineConfig {
    /// The dispatcher threads for `workers` workers: as given, or one per three workers,
    /// never more than the workers. A dispatcher spends about a quarter of a worker's
    /// instructions on a packet (decoding, hashing, batching); one per three keeps the
    /// busiest thread a worker (docs/BENCHMARKS.md, "Many-core engine").
    pub fn dispatchers_for(&self, workers: usize) -> usize {
        let d = if self.dispatchers > 0 { self.dispatchers } else { workers.div_ceil(3) };
        d.clamp(1, workers.max(1))
    }

    /// The rotation period in ns, if the output rotates ([`rotate_period_ns`]).
    pub fn rotate_ns(&self) -> Option<u64> {
        self.rotate.map(rotate_period_ns)
    }
}

/// A `--rotate` period in ns: at least 1 s.
pub fn rotate_period_ns(d: std::time::Duration) -> u64 {
    (d.as_nanos().min(u64::MAX as u128) as u64).max(1_000_000_000)
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            workers: 1,
            format: Format::Tsv,
            out_dir: "out".into(),
            compress: Compress::None,
            stdout: false,
            rotate: None,
            tracker: TrackerConfig::default(),
            decode: DecodeConfig::default(),
            hash_seed: None,
            chunk_frames: 1024,
            ring_slots: 64,
            flow_hash: HashKind::default(),
            time_sample: 64,
            dispatchers: 0,
            schedule: Schedule::Hash,
            epoch_chunks: 64,
            flow_batches: false,
            ipfix: None,
            kafka: None,
        }
    }
}

/// Live counters, for a progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_read: AtomicU64,
    pub bytes_total: AtomicU64,
    pub packets: AtomicU64,
}

/// Errors that stop the engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error(transparent)]
    Sink(#[from] SinkError),
    #[error("a {0} thread panicked")]
    Thread(&'static str),
    #[error("{0}")]
    Live(String),
}

/// One packet on its way to a worker: decoded, keyed and hashed once, by the
/// dispatcher.
#[derive(Clone, Copy)]
struct Pkt {
    ts_ns: u64,
    /// The input's clock: the latest packet time so far (see `Packet::now_ns`).
    now_ns: u64,
    wire_len: u32,
    /// Where the frame's bytes are in the batch's backing buffer.
    caplen: u32,
    offset: u64,
    /// The flow hash; the key itself is rebuilt by the worker from `dec` (a few
    /// comparisons), which is cheaper than moving 48 more bytes per packet between
    /// cores.
    hash: u64,
    /// A copy of a DNS response for a worker other than its own, to learn its answers
    /// from (DN-Hunter) without accounting it: see `tapstat_analyze::dnhunter`.
    learn_only: bool,
    /// DNS answers the dispatcher parsed for every worker: `None` when it did not look
    /// (the worker parses a DNS response itself), `Some(0)` when the response teaches
    /// nothing, `Some(i)` for the batch's `answers[i - 1]`.
    learnt: Option<u32>,
    dec: Decoded,
}

/// Packets for one worker that share one backing buffer (the bytes stay where the
/// source put them: for a file, in the block read).
struct Batch {
    backing: Arc<dyn Backing>,
    pkts: Vec<Pkt>,
    /// For each packet that is an IP fragment (`dec.fragment` is not `No`), in order:
    /// the whole payload of the datagram it completes, if the decoder reassembled one
    /// ([`Decoder::reassembled`]). Those bytes are in no frame, so they travel beside
    /// the packets. Empty, and unallocated, in almost every batch.
    wholes: Vec<Option<Vec<u8>>>,
    /// The DNS answers the batch's packets point to (`Pkt::learnt`), parsed once for
    /// every worker: one list per chunk, shared by the chunk's batches.
    answers: Option<Arc<Vec<dnhunter::Answers>>>,
    /// The input's clock after the last frame of the batch's chunk.
    end_now: u64,
    /// At the first chunk of a scheduling epoch whose table moved bins: the table.
    /// Before the chunk's packets, each worker hands the flows of the bins it gives
    /// away to their new workers and takes those it receives.
    moves: Option<Arc<Table>>,
}

/// Flows of moved bins from one worker to another: (epoch, giving worker, flows).
type Mail = (u64, usize, Vec<tapstat_analyze::MovedFlow>);

/// A chunk on its way to a dispatcher: its place in the input (`seq`, counting from 0)
/// and the input's clock at each of its frames and after the last. The reader keeps
/// the clock, since it alone sees every frame in order: a few instructions per frame,
/// against the hundreds of decoding, which the dispatchers do in parallel.
struct Clocked {
    seq: u64,
    chunk: Chunk,
    now: Vec<u64>,
    end_now: u64,
}

enum Msg {
    Batch(Batch),
    /// The input ended: the input's clock at its end, and whether the run was stopped
    /// before the end of the input.
    End(u64, bool),
}

/// Output files: the four logs of finished flows ([`LogId`] order), then the periodic
/// logs of TCP and UDP (created only with `--periodic`).
const NLOGS: usize = 8;
const TCP_PERIODIC: usize = 4;
const UDP_PERIODIC: usize = 5;
/// The application layer's logs (created only when it is on).
const HTTP: usize = 6;
const DNS: usize = 7;

/// Formatted records on their way to the writer: (log index, bytes).
type Block = (usize, Vec<u8>);

/// Index of a writer message that is not a block of records (`--rotate`): the worker's
/// records go to the interval whose start (epoch seconds) the 8 bytes hold, until the
/// next such message.
const ROTATE: usize = usize::MAX;

/// A log's buffer goes to the writer once it holds this many bytes.
const BLOCK_BYTES: usize = 256 * 1024;
/// What a buffer is allocated with: a block and room for the record that crosses
/// [`BLOCK_BYTES`], so that record does not make the vector grow. A vector grows by
/// copying itself into a new one twice its size (mimalloc moves large blocks by copy),
/// and an exact-size buffer did that once per block: about 1% of the full sets'
/// instructions on mix-small, plus the page faults of the new block.
const BLOCK_CAPACITY: usize = BLOCK_BYTES + 64 * 1024;

/// A worker's record formatter: one buffer per log, handed to the writer when full.
/// The writer sends emptied buffers back (`free`), so blocks are not allocated,
/// faulted in and unmapped again for every 256 KiB of records.
struct RecordOut {
    format: Format,
    sets: TcpSets,
    l7: bool,
    /// The output file of each log (the files of logs that are off are not created).
    file: [usize; NLOGS],
    bufs: [Vec<u8>; NLOGS],
    records: [u64; NLOGS],
    tx: crossbeam_channel::Sender<Block>,
    free: crossbeam_channel::Receiver<Vec<u8>>,
    /// Ended flows as IPFIX records too (`--ipfix`).
    ipfix: Option<ipfix::IpfixOut>,
    /// Every record to Kafka too (`--kafka`).
    kafka: Option<kafka::KafkaOut>,
    /// Where records go in time, with `--rotate`.
    rotation: Option<Box<Rotation>>,
}

/// A worker's place in the output intervals (`--rotate`).
///
/// The worker follows its clock: on entering a new interval it hands over its
/// buffered records (they belong to the interval it was in) and tells the writer the
/// interval its records go to from now on. Live runs stop there: a record goes to the
/// interval of the worker's clock when it is written.
///
/// File runs place each record by the time it was due ([`FlowSink::at`]) instead,
/// which does not depend on when the collector happened to pass, and so not on the
/// number of workers. A record due in an interval the worker has left (a flow whose
/// timeout passed just before the boundary, found just after) waits in `late`, by
/// interval, and goes out when the worker enters the next interval, when its buffer
/// fills, and at the end; the writer reopens a closed interval for it.
struct Rotation {
    period_ns: u64,
    /// Start (ns) of the interval of the worker's clock.
    cur: Option<u64>,
    /// Records go to the interval they were due in (file runs), not to `cur`.
    by_due: bool,
    /// The earlier interval the records being written now belong to.
    target: Option<u64>,
    late: BTreeMap<u64, [Vec<u8>; NLOGS]>,
}

impl RecordOut {
    /// Hands every non-empty buffer to the writer (and the IPFIX records to the
    /// exporter).
    fn flush_all(&mut self) {
        for i in 0..self.bufs.len() {
            self.flush(i);
        }
        if let Some(x) = &mut self.ipfix {
            x.flush();
        }
        if let Some(x) = &mut self.kafka {
            x.flush();
        }
    }

    /// Follows the worker's clock into the output interval of `now_ns` (`--rotate`;
    /// nothing without it).
    #[inline]
    fn follow(&mut self, now_ns: u64) {
        if let Some(r) = &self.rotation {
            if !matches!(r.cur, Some(c) if now_ns >= c && now_ns - c < r.period_ns) {
                self.enter(now_ns);
            }
        }
    }

    /// Hands over the records of the interval the worker leaves (and those of earlier
    /// intervals waiting in `late`), then moves it to the interval of `now_ns`. Never
    /// back: a clock does not go back.
    #[cold]
    fn enter(&mut self, now_ns: u64) {
        let Some(r) = self.rotation.as_mut() else { return };
        let start = now_ns / r.period_ns * r.period_ns;
        if r.cur.is_some_and(|c| start <= c) {
            return;
        }
        r.target = None;
        self.flush_all();
        self.send_late(None);
        let r = self.rotation.as_mut().expect("checked above");
        r.cur = Some(start);
        self.announce(start);
    }

    /// Tells the writer that the records that follow go to the interval starting at
    /// `start_ns`.
    fn announce(&mut self, start_ns: u64) {
        // The writer only goes away on an I/O error, which it reports itself.
        let _ = self.tx.send((ROTATE, (start_ns / 1_000_000_000).to_le_bytes().to_vec()));
    }

    /// Hands the writer the waiting records of earlier interval `only`, or of every
    /// one, each under its interval, then puts the worker back in its own.
    fn send_late(&mut self, only: Option<u64>) {
        let Some(r) = self.rotation.as_mut() else { return };
        let late = match only {
            Some(t) => r.late.remove(&t).map(|b| vec![(t, b)]).unwrap_or_default(),
            None => std::mem::take(&mut r.late).into_iter().collect(),
        };
        if late.is_empty() {
            return;
        }
        let cur = r.cur;
        for (start, bufs) in late {
            self.announce(start);
            for (i, b) in bufs.into_iter().enumerate() {
                if !b.is_empty() {
                    let _ = self.tx.send((self.file[i], b));
                }
            }
        }
        if let Some(c) = cur {
            self.announce(c);
        }
    }

    fn flush(&mut self, i: usize) {
        if !self.bufs[i].is_empty() {
            let fresh = self.free.try_recv().unwrap_or_else(|_| Vec::with_capacity(BLOCK_CAPACITY));
            let b = std::mem::replace(&mut self.bufs[i], fresh);
            // The writer only goes away on an I/O error, which it reports itself.
            let _ = self.tx.send((self.file[i], b));
        }
    }

    fn new(
        cfg: &EngineConfig,
        tx: crossbeam_channel::Sender<Block>,
        free: crossbeam_channel::Receiver<Vec<u8>>,
    ) -> RecordOut {
        RecordOut {
            format: cfg.format,
            sets: cfg.tracker.tcp_sets,
            l7: cfg.tracker.l7.is_some(),
            file: file_of_log(cfg),
            bufs: Default::default(),
            records: [0; NLOGS],
            tx,
            free,
            ipfix: None,
            kafka: None,
            rotation: cfg.rotate_ns().map(|period_ns| {
                Box::new(Rotation { period_ns, cur: None, by_due: false, target: None, late: BTreeMap::new() })
            }),
        }
    }

    /// Places each record by the time it was due (file runs; see [`Rotation`]).
    fn by_due(mut self) -> Self {
        if let Some(r) = self.rotation.as_mut() {
            r.by_due = true;
        }
        self
    }

    /// The same, with the records exported to Kafka's `exporter` too.
    fn with_kafka(mut self, exporter: Option<&kafka::Exporter>) -> RecordOut {
        self.kafka = exporter.and_then(kafka::Exporter::out);
        self
    }

    /// The same, with the flows exported to `exporter` too.
    fn with_ipfix(mut self, exporter: Option<&ipfix::Exporter>) -> RecordOut {
        self.ipfix = exporter.and_then(ipfix::Exporter::out);
        self
    }
}

impl RecordOut {
    /// The buffer of log `i`, allocated whole at its first record (a log that gets no
    /// record costs no memory).
    #[inline]
    fn buf(&mut self, i: usize) -> &mut Vec<u8> {
        if let Some(t) = self.late_target() {
            return &mut self.rotation.as_mut().expect("a target comes with rotation").late.entry(t).or_default()[i];
        }
        let b = &mut self.bufs[i];
        if b.capacity() == 0 {
            b.reserve_exact(BLOCK_CAPACITY);
        }
        b
    }

    /// Formats record `rec` of `log` into log `i`'s buffer (and for Kafka, to the topic
    /// of log file `name`, keyed by `key`), then counts it.
    #[inline]
    fn put<T>(&mut self, i: usize, name: &str, log: &tapstat_record::Log<T>, rec: &T, key: &str) {
        // The buffer `buf(i)` picks (a late interval's, with rotation), borrowed by
        // field so that Kafka's exporter can read the line just written.
        self.buf(i);
        let late = self.late_target();
        let b = match late {
            Some(t) => &mut self.rotation.as_mut().expect("a target comes with rotation").late.entry(t).or_default()[i],
            None => &mut self.bufs[i],
        };
        let start = b.len();
        self.format.record(log, rec, b);
        if let Some(k) = &mut self.kafka {
            let line = match self.format {
                Format::Jsonl => kafka::Line::Json(&b[start..]),
                Format::Tsv => kafka::Line::Tsv(&b[start..]),
                Format::Parquet => kafka::Line::Other,
            };
            k.record(name, log, key, rec, line);
        }
        self.wrote(i);
    }

    fn wrote(&mut self, i: usize) {
        self.records[i] += 1;
        if let Some(t) = self.late_target() {
            let r = self.rotation.as_ref().expect("a target comes with rotation");
            if r.late.get(&t).is_some_and(|b| b[i].len() >= BLOCK_BYTES) {
                self.send_late(Some(t));
            }
            return;
        }
        if self.bufs[i].len() >= BLOCK_BYTES {
            self.flush(i);
        }
    }

    /// The earlier interval the records written now go to, if not the worker's own.
    #[inline]
    fn late_target(&self) -> Option<u64> {
        self.rotation.as_ref().and_then(|r| r.target)
    }
}

impl FlowSink for RecordOut {
    #[inline]
    fn at(&mut self, due_ns: u64) {
        let Some(r) = self.rotation.as_mut() else { return };
        if r.by_due {
            let start = due_ns / r.period_ns * r.period_ns;
            r.target = r.cur.filter(|&c| start < c).map(|_| start);
        }
    }

    fn on_flow_end(&mut self, f: &Flow) {
        let id = LogId::of(f);
        let i = id as usize;
        let log = id.log_for(self.sets, self.l7);
        self.put(i, id.name(), log, f, f.flow_id.as_str());
        if let Some(x) = &mut self.ipfix {
            x.flow(f);
        }
    }

    fn on_http(&mut self, row: &HttpRow) {
        self.put(HTTP, l7log::HTTP.name, &l7log::HTTP, row, row.flow.flow_id.as_str());
    }

    fn on_dns(&mut self, row: &DnsRow) {
        self.put(DNS, l7log::DNS.name, &l7log::DNS, row, row.flow.flow_id.as_str());
    }

    fn on_periodic(&mut self, row: &PeriodicRow) {
        let (i, log) = match row.kind {
            Kind::Tcp => (TCP_PERIODIC, &*periodic::TCP_PERIODIC),
            _ => (UDP_PERIODIC, &*periodic::UDP_PERIODIC),
        };
        self.put(i, log.name, log, row, row.flow_id.as_str());
    }
}

struct ReaderResult {
    err: Option<CaptureError>,
    stats: CaptureStats,
    warnings: Vec<String>,
}

struct WorkerResult {
    stats: TrackerStats,
    records: [u64; NLOGS],
    timer: PacketTimer,
    /// Flows this worker received from others (moved bins).
    moved_in: u64,
    /// The worker's link histograms (`--histo-interval`).
    histo: Option<Box<tapstat_analyze::histo::Histo>>,
}

#[derive(Default)]
struct DispatchResult {
    anomalies: Anomalies,
    non_ip: u64,
    frames: u64,
    wire_bytes: u64,
    first_ns: u64,
    last_ns: u64,
}

impl DispatchResult {
    /// Counts frame `f` (none of this depends on the order of frames, so dispatchers
    /// working on different chunks count their own and the totals are merged).
    #[inline]
    fn count(&mut self, f: &FrameMeta) {
        self.frames += 1;
        self.wire_bytes += f.orig_len as u64;
        // The earliest, not the first in file order: captures merged from several
        // interfaces, or written by a reordering tool, start with a later packet.
        if self.frames == 1 || f.ts_ns < self.first_ns {
            self.first_ns = f.ts_ns;
        }
        self.last_ns = self.last_ns.max(f.ts_ns);
    }

    fn merge(&mut self, o: &DispatchResult) {
        self.anomalies.merge(&o.anomalies);
        self.non_ip += o.non_ip;
        if o.frames > 0 && (self.frames == 0 || o.first_ns < self.first_ns) {
            self.first_ns = o.first_ns;
        }
        self.frames += o.frames;
        self.wire_bytes += o.wire_bytes;
        self.last_ns = self.last_ns.max(o.last_ns);
    }
}

/// The logs this run writes, in the order of their files: (log index, file stem). The
/// periodic logs come with `--periodic`, the HTTP and DNS logs with the application
/// layer.
fn logs_on(cfg: &EngineConfig) -> Vec<(usize, &'static str)> {
    let mut v: Vec<(usize, &'static str)> = LogId::ALL.iter().map(|l| (*l as usize, l.name())).collect();
    if cfg.tracker.periodic_ns > 0 {
        v.extend([(TCP_PERIODIC, periodic::TCP_PERIODIC.name), (UDP_PERIODIC, periodic::UDP_PERIODIC.name)]);
    }
    if cfg.tracker.l7.is_some() {
        v.extend([(HTTP, l7log::HTTP.name), (DNS, l7log::DNS.name)]);
    }
    v
}

/// The header line(s) of log index `i`.
fn header_of(cfg: &EngineConfig, i: usize) -> Vec<u8> {
    let mut h = Vec::new();
    let f = cfg.format;
    match i {
        TCP_PERIODIC => f.header(&periodic::TCP_PERIODIC, &mut h),
        UDP_PERIODIC => f.header(&periodic::UDP_PERIODIC, &mut h),
        HTTP => f.header(&l7log::HTTP, &mut h),
        DNS => f.header(&l7log::DNS, &mut h),
        _ => f.header(LogId::ALL[i].log_for(cfg.tracker.tcp_sets, cfg.tracker.l7.is_some()), &mut h),
    }
    h
}

/// The output files' names and headers, in the order of [`logs_on`].
fn log_files(cfg: &EngineConfig) -> (Vec<String>, Vec<Vec<u8>>) {
    logs_on(cfg)
        .into_iter()
        .map(|(i, name)| (cfg.format.file_name(name) + cfg.compress.suffix(), header_of(cfg, i)))
        .unzip()
}

/// The logs' files in the output directory, or standard output (`-o -`).
fn open_output(cfg: &EngineConfig, names: &[String], headers: &[Vec<u8>]) -> Result<OutputDir, SinkError> {
    if !cfg.stdout {
        return OutputDir::create_compressed(&cfg.out_dir, names, headers, cfg.compress);
    }
    if cfg.format != Format::Jsonl {
        let source = std::io::Error::other("standard output takes JSON lines only (--format jsonl)");
        return Err(SinkError { path: "-".into(), source });
    }
    let logs: Vec<&str> = logs_on(cfg).into_iter().map(|(_, name)| name).collect();
    OutputDir::stdout(&logs, cfg.compress)
}

/// What the writer thread hands back: how writing went, and its warnings.
type WriterResult = (Written, Vec<String>);

/// Starts the writer thread of a file run; gives each of the `n` workers its sender.
/// One channel for all of them into the output directory (or standard output); with
/// `--rotate`, one per worker into the live engine's [`live::Writer`], which keeps
/// each worker's interval.
fn spawn_writer(
    cfg: &EngineConfig,
    n: usize,
    free: crossbeam_channel::Sender<Vec<u8>>,
    stop: &Arc<AtomicBool>,
) -> Result<(Vec<crossbeam_channel::Sender<Block>>, std::thread::JoinHandle<WriterResult>), EngineError> {
    let (names, headers) = log_files(cfg);
    let spawn = |f: Box<dyn FnOnce() -> WriterResult + Send>| {
        std::thread::Builder::new().name("tapstat-writer".into()).spawn(f).expect("spawning a thread succeeds")
    };
    if cfg.rotate.is_some() {
        // An unwritable directory is an error before any work.
        std::fs::create_dir_all(&cfg.out_dir).map_err(|source| SinkError { path: cfg.out_dir.clone(), source })?;
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| crossbeam_channel::bounded::<Block>(64)).unzip();
        let w = live::Writer::new(cfg, names, headers, None, stop.clone(), None);
        return Ok((txs, spawn(Box::new(move || w.run(rxs, free)))));
    }
    let out = open_output(cfg, &names, &headers)?;
    let (tx, rx) = crossbeam_channel::bounded::<Block>(64);
    let stop = stop.clone();
    Ok((vec![tx; n], spawn(Box::new(move || (write_blocks(out, rx, free, &stop), Vec::new())))))
}

/// The output file of each log index (`usize::MAX` for a log that is off).
fn file_of_log(cfg: &EngineConfig) -> [usize; NLOGS] {
    let mut file = [usize::MAX; NLOGS];
    for (pos, (i, _)) in logs_on(cfg).into_iter().enumerate() {
        file[i] = pos;
    }
    file
}

/// Records written per log, by file stem, for the summary.
fn records_by_log(cfg: &EngineConfig, records: &[u64; NLOGS]) -> Vec<(&'static str, u64)> {
    logs_on(cfg).into_iter().map(|(i, name)| (name, records[i])).collect()
}

/// Runs the engine over `source` until it ends or `stop` is set; every live flow is
/// written before returning.
pub fn run(
    source: Box<dyn PacketSource>,
    cfg: &EngineConfig,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
) -> Result<Summary, EngineError> {
    let started = Instant::now();
    let cpu0 = cpu_seconds();
    let n = cfg.workers.max(1);
    let seed = cfg.hash_seed.unwrap_or_else(random_seed);
    let hasher = FlowHasher::with_kind(cfg.flow_hash, seed);

    // The IPFIX collector and the output files first: a collector that refuses the
    // connection or an unwritable directory is an error before any work (and before
    // the files exist).
    let exporter = cfg.ipfix.as_ref().map(ipfix::Exporter::start).transpose()?;
    let kafka = cfg.kafka.as_ref().map(|k| kafka::Exporter::start(k, cfg)).transpose()?;
    let (free_tx, free_rx) = crossbeam_channel::bounded::<Vec<u8>>(16);
    let (mut block_txs, writer) = spawn_writer(cfg, n, free_tx, &stop)?;
    let mut block_tx = move || block_txs.pop().expect("a sender per worker");

    let p0 = source.progress();
    progress.bytes_total.store(p0.bytes_total.unwrap_or(0), Ordering::Relaxed);
    let mut reader =
        Reader { source, stop: stop.clone(), progress: progress.clone(), chunk_frames: cfg.chunk_frames, err: None };
    let (reader_done_tx, reader_done_rx) = crossbeam_channel::bounded::<ReaderResult>(1);
    let mut dispatch = Dispatch::new(cfg.decode, hasher.clone(), n);
    dispatch.dns_broadcast = n > 1 && cfg.tracker.l7.is_some();
    // Each of n workers holds about 1/n of the flows: its index starts that much
    // smaller (it grows as any other), instead of n times one worker's start-up.
    let tracker_cfg = TrackerConfig { start_flows: (cfg.tracker.start_flows / n).max(4096), ..cfg.tracker };
    let new_work = |tx: crossbeam_channel::Sender<Block>| Work {
        timer: PacketTimer::new(cfg.time_sample),
        tracker: Tracker::new(tracker_cfg),
        rout: RecordOut::new(cfg, tx, free_rx.clone())
            .by_due()
            .with_ipfix(exporter.as_ref())
            .with_kafka(kafka.as_ref()),
    };
    let (dispatchers, workers) = if n == 1 && !reader.source.may_block() {
        // One worker reading regular files: it reads, decodes and analyzes in
        // one pass, so each packet's bytes are brought into the cache once. (A
        // separate reader thread would take that miss, and the worker a second one.)
        let work = new_work(block_tx());
        let h = std::thread::Builder::new()
            .name("tapstat-w0".into())
            .spawn(move || {
                let stop = reader.stop.clone();
                let r = run_inline(dispatch, work, &stop, || reader.next());
                let _ = reader_done_tx.send(reader.finish());
                r
            })
            .expect("spawning a thread succeeds");
        (vec![h], Vec::new())
    } else if n == 1 {
        // One worker on a stream: it decodes its packets itself. A dispatcher thread
        // would only copy every decoded packet from one core to another. The reader
        // thread owns the source and watches the stop flag between chunks; a read can
        // block (a quiet pipe on stdin), so the worker watches the flag too, and on
        // Ctrl-C the engine finishes without waiting for the reader.
        let (mut chunk_tx, mut chunk_rx) = ring::<Chunk>(cfg.ring_slots);
        std::thread::Builder::new()
            .name("tapstat-reader".into())
            .spawn(move || {
                while let Some(chunk) = reader.next() {
                    if chunk_tx.send(chunk).is_err() {
                        break;
                    }
                }
                drop(chunk_tx);
                let _ = reader_done_tx.send(reader.finish());
            })
            .expect("spawning a thread succeeds");
        let work = new_work(block_tx());
        let stop = stop.clone();
        let h = std::thread::Builder::new()
            .name("tapstat-w0".into())
            .spawn(move || run_inline(dispatch, work, &stop, || chunk_rx.recv_unless(&stop)))
            .expect("spawning a thread succeeds");
        (vec![h], Vec::new())
    } else {
        // Several workers: the reader hands chunk `seq` to dispatcher `seq % D` with
        // the input's clock; the D dispatchers decode and hash in parallel, each
        // sending every worker one batch per chunk (empty or not); each worker takes
        // its batches chunk by chunk, in input order, from the dispatchers in turn.
        // So a worker sees its packets in input order with the clock of the whole
        // input, as with one dispatcher, and the fragment table, shared by the
        // decoders in turns, sees the fragments in input order.
        let nd = cfg.dispatchers_for(n);
        let (decoders, frags) = Decoder::shared(cfg.decode, nd);
        let sched = (cfg.schedule != Schedule::Hash).then(|| Scheduler::new(cfg.schedule, n, cfg.epoch_chunks));
        let mut disp_tx = Vec::with_capacity(nd);
        let mut disp_rx = Vec::with_capacity(nd);
        for _ in 0..nd {
            let (tx, rx) = ring::<Clocked>(cfg.ring_slots.div_ceil(nd).max(4));
            disp_tx.push(tx);
            disp_rx.push(rx);
        }
        std::thread::Builder::new()
            .name("tapstat-reader".into())
            .spawn(move || {
                let mut clock = InputClock::default();
                let mut seq = 0u64;
                while let Some(chunk) = reader.next() {
                    let now: Vec<u64> = chunk.frames.iter().map(|f| clock.tick(f.ts_ns)).collect();
                    let c = Clocked { seq, chunk, now, end_now: clock.now() };
                    if disp_tx[(seq % nd as u64) as usize].send(c).is_err() {
                        break;
                    }
                    seq += 1;
                }
                drop(disp_tx);
                let _ = reader_done_tx.send(reader.finish());
            })
            .expect("spawning a thread succeeds");
        // rings[d][w]: dispatcher d → worker w; recycle[d][w]: emptied batch vectors
        // back. A batch is too big for the allocator's free lists, and a fresh one per
        // chunk would cost an mmap, page faults and an munmap each time.
        let mut to_worker: Vec<Vec<Receiver<Msg>>> = (0..n).map(|_| Vec::with_capacity(nd)).collect();
        let mut recycle_tx: Vec<Vec<Sender<Vec<Pkt>>>> = (0..n).map(|_| Vec::with_capacity(nd)).collect();
        let mut dispatchers = Vec::with_capacity(nd);
        for (d, (dec, chunks)) in decoders.into_iter().zip(disp_rx).enumerate() {
            let mut worker_tx = Vec::with_capacity(n);
            let mut recycled_rx = Vec::with_capacity(n);
            for w in 0..n {
                let (tx, rx) = ring::<Msg>(cfg.ring_slots);
                worker_tx.push(tx);
                to_worker[w].push(rx);
                let (rtx, rrx) = ring::<Vec<Pkt>>(cfg.ring_slots + 2);
                recycle_tx[w].push(rtx);
                recycled_rx.push(rrx);
            }
            let mut dispatch = Dispatch::with_decoder(dec, hasher.clone(), n);
            dispatch.dns_broadcast = cfg.tracker.l7.is_some();
            let (stop, frags, sched) = (stop.clone(), frags.clone(), sched.clone());
            dispatchers.push(
                std::thread::Builder::new()
                    .name(format!("tapstat-d{d}"))
                    .spawn(move || {
                        let ends = Ends { frags: &frags, sched: sched.as_deref(), stop: &stop };
                        run_dispatcher(dispatch, chunks, worker_tx, recycled_rx, ends)
                    })
                    .expect("spawning a thread succeeds"),
            );
        }
        // Mailboxes for the flows of moved bins (`balance`, `bundle`): unbounded, so a
        // worker that gives flows away never waits for the one that takes them.
        let (mail_tx, mail_rx): (Vec<_>, Vec<_>) = (0..n).map(|_| crossbeam_channel::unbounded::<Mail>()).unzip();
        let mut workers = Vec::with_capacity(n);
        for (w, ((rx, recycle), inbox)) in to_worker.into_iter().zip(recycle_tx).zip(mail_rx).enumerate() {
            let work = new_work(block_tx());
            let post = Post { me: w, inbox, outboxes: mail_tx.clone(), early: Vec::new(), moved_in: 0 };
            let groups = cfg.flow_batches.then(|| FlowGroups::new(cfg.tracker.periodic_ns));
            workers.push(
                std::thread::Builder::new()
                    .name(format!("tapstat-w{w}"))
                    .spawn(move || run_worker(work, groups, rx, recycle, post))
                    .expect("spawning a thread succeeds"),
            );
        }
        drop(mail_tx);
        drop(dispatch);
        (dispatchers, workers)
    };
    drop(block_tx);

    let mut disp = DispatchResult::default();
    let mut inline_work = None;
    for h in dispatchers {
        let (r, w) = h.join().map_err(|_| EngineError::Thread("dispatcher"))?;
        disp.merge(&r);
        inline_work = inline_work.or(w);
    }
    let mut stats = TrackerStats::default();
    let mut records = [0u64; NLOGS];
    let mut timers = Vec::new();
    let mut histo = HistoMerge::default();
    let worker_results = workers.into_iter().map(|h| h.join().map_err(|_| EngineError::Thread("worker")));
    let mut sched = SchedulingSummary {
        policy: cfg.schedule.name(),
        dispatchers: if n > 1 { cfg.dispatchers_for(n) } else { 0 },
        ..SchedulingSummary::default()
    };
    for r in inline_work.into_iter().map(Ok).chain(worker_results) {
        let r = r?;
        sched.flows_moved += r.moved_in;
        histo.add(r.histo.as_deref());
        sched.per_worker_packets.push(r.stats.packets);
        stats.merge(&r.stats);
        timers.push(r.timer);
        for (total, n) in records.iter_mut().zip(r.records) {
            *total += n;
        }
    }
    let (written, writer_warnings) = writer.join().map_err(|_| EngineError::Thread("writer"))?;
    let exported = exporter.map(ipfix::Exporter::finish).transpose()?;
    let kafka = kafka.map(kafka::Exporter::finish).transpose()?;
    // A closed standard output (`| head`) stops the run too, but nobody interrupted it.
    let interrupted = stop.load(Ordering::Relaxed) && written.error.is_none() && !written.closed;
    // After a normal end the reader has finished; after Ctrl-C it may be blocked in
    // a read that will never return, and is left behind.
    let wait = if interrupted { std::time::Duration::from_millis(200) } else { std::time::Duration::from_secs(3600) };
    let reader = reader_done_rx.recv_timeout(wait).unwrap_or_else(|_| ReaderResult {
        err: None,
        stats: CaptureStats::default(),
        warnings: vec!["the input was still blocked in a read when the run was interrupted".into()],
    });
    if let Some(e) = reader.err {
        // The flows seen so far were written; the error still stops the run.
        return Err(e.into());
    }
    let mut warnings = reader.warnings;
    warnings.extend(writer_warnings);
    let mut summary = Summary::new(
        cfg,
        n,
        &disp.anomalies,
        disp.non_ip,
        disp.frames,
        disp.wire_bytes,
        disp.first_ns,
        disp.last_ns,
        &stats,
        &records_by_log(cfg, &records),
        reader.stats,
        warnings,
        interrupted,
        started.elapsed().as_secs_f64(),
        cpu_seconds() - cpu0,
    );
    if let Some(e) = written.error {
        summary.write_error = Some(format!("{e}: {}", e.source));
        summary.records_not_written = written.lost;
    }
    if written.closed {
        summary.output_closed = true;
        summary.records_not_written = written.lost;
    }
    summary.flow_table = cfg.tracker.index.name();
    summary.flow_hash = cfg.flow_hash.name();
    summary.packet_time = PacketTimeSummary::of(&timers);
    summary.scheduling = (n > 1).then_some(sched);
    summary.histograms = histo.0;
    summary.set_ipfix(exported);
    summary.set_kafka(kafka);
    Ok(summary)
}

/// The run's link histograms: the sum of every worker's ([`Histo::merge`]), in any
/// order (a sum of counts).
///
/// [`Histo::merge`]: tapstat_analyze::histo::Histo::merge
#[derive(Default)]
struct HistoMerge(Option<tapstat_analyze::histo::Histo>);

impl HistoMerge {
    fn add(&mut self, h: Option<&tapstat_analyze::histo::Histo>) {
        if let Some(h) = h {
            match &mut self.0 {
                Some(m) => m.merge(h),
                None => self.0 = Some(h.clone()),
            }
        }
    }
}

/// What the writer thread did: the first write error, and the records it could not
/// write (those of the block that failed, and of every block after it).
#[derive(Debug, Default)]
struct Written {
    error: Option<SinkError>,
    /// Standard output's reader left (`| head`): the run stops, without an error.
    closed: bool,
    lost: u64,
}

impl Written {
    /// Whether writing has stopped (an error, or a reader that left).
    fn stopped(&self) -> bool {
        self.error.is_some() || self.closed
    }

    /// Takes the first failure: sets `stop`, which the reader and the dispatchers (or
    /// the acquisition threads) watch, so the run ends promptly instead of analyzing
    /// the rest of the input for nothing.
    fn fail(&mut self, e: SinkError, stop: &AtomicBool) {
        stop.store(true, Ordering::SeqCst);
        if self.stopped() {
            return;
        }
        if e.reader_left() {
            self.closed = true;
        } else {
            self.error = Some(e);
        }
    }

    /// Counts the records of a block that was not written.
    fn lose(&mut self, records: u64) {
        self.lost += records;
    }
}

/// The writer thread: blocks to files. At the first error (a full disk) it stops the
/// run ([`Written::fail`]); it then drains what the workers still send, counting the
/// records lost, so that the summary can say.
fn write_blocks(
    mut out: OutputDir,
    blocks: crossbeam_channel::Receiver<Block>,
    free: crossbeam_channel::Sender<Vec<u8>>,
    stop: &AtomicBool,
) -> Written {
    let mut w = Written::default();
    for (i, mut b) in blocks {
        if !w.stopped() {
            if let Err(e) = out.append(i, &b) {
                w.fail(e, stop);
            }
        }
        if w.stopped() {
            w.lose(out.records_in(i, &b));
        }
        b.clear();
        let _ = free.try_send(b);
    }
    if let Err(e) = out.finish() {
        w.fail(e, stop);
    }
    w
}

/// The dispatcher's work on a frame: decode it once, key it, hash it, and pick the
/// worker that owns its flow.
struct Dispatch {
    clock: InputClock,
    dec: Decoder,
    hasher: FlowHasher,
    workers: usize,
    /// Hand DNS responses to every worker (the application layer is on and there are
    /// several workers).
    dns_broadcast: bool,
    r: DispatchResult,
    /// The scheduler's table for the current chunk (`balance`, `bundle`), and the
    /// chunk's packets per bin.
    table: Option<Arc<Table>>,
    per_bin: Vec<u32>,
}

impl Dispatch {
    fn new(cfg: DecodeConfig, hasher: FlowHasher, workers: usize) -> Self {
        Dispatch::with_decoder(Decoder::new(cfg), hasher, workers)
    }

    fn with_decoder(dec: Decoder, hasher: FlowHasher, workers: usize) -> Self {
        Dispatch {
            clock: InputClock::default(),
            dec,
            hasher,
            workers,
            dns_broadcast: false,
            r: DispatchResult::default(),
            table: None,
            per_bin: Vec::new(),
        }
    }

    /// The worker and the packet for frame `f`, or `None` for a frame without IP; the
    /// input's clock is this dispatcher's, which sees every frame in order.
    #[inline]
    fn frame(&mut self, f: &FrameMeta, bytes: &[u8]) -> Option<(usize, Pkt)> {
        self.r.count(f);
        let now_ns = self.clock.tick(f.ts_ns);
        self.frame_at(f, bytes, now_ns)
    }

    /// [`Dispatch::frame`] with the input's clock at this frame given (by the reader,
    /// when several dispatchers share the input); counts nothing but frames without IP.
    #[inline]
    fn frame_at(&mut self, f: &FrameMeta, bytes: &[u8], now_ns: u64) -> Option<(usize, Pkt)> {
        let d = self.dec.decode(f.link, bytes, f.ts_ns);
        if d.l4 == L4::None {
            self.r.non_ip += 1;
            return None;
        }
        let (key, _) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        let hash = self.hasher.hash(&key);
        let w = match &self.table {
            None => FlowHasher::worker_of(hash, self.workers),
            Some(t) => {
                let b = FlowHasher::bin_of(hash, BINS);
                self.per_bin[b] += 1;
                t.bins[b] as usize
            }
        };
        let pkt = Pkt {
            ts_ns: f.ts_ns,
            now_ns,
            wire_len: f.orig_len,
            caplen: f.caplen,
            offset: f.offset,
            hash,
            learn_only: false,
            learnt: None,
            dec: d,
        };
        Some((w, pkt))
    }

    /// [`Dispatch::frame_at`] for a dispatcher thread: the packet goes straight to the
    /// end of its worker's batch (no decoded packet returned and moved again: ~100
    /// instructions a packet of copies); returns the worker.
    #[inline]
    fn frame_to(&mut self, f: &FrameMeta, bytes: &[u8], now_ns: u64, batches: &mut [Vec<Pkt>]) -> Option<usize> {
        let d = self.dec.decode(f.link, bytes, f.ts_ns);
        if d.l4 == L4::None {
            self.r.non_ip += 1;
            return None;
        }
        let (key, _) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        let hash = self.hasher.hash(&key);
        let w = match &self.table {
            None => FlowHasher::worker_of(hash, self.workers),
            Some(t) => {
                let b = FlowHasher::bin_of(hash, BINS);
                self.per_bin[b] += 1;
                t.bins[b] as usize
            }
        };
        batches[w].push(Pkt {
            ts_ns: f.ts_ns,
            now_ns,
            wire_len: f.orig_len,
            caplen: f.caplen,
            offset: f.offset,
            hash,
            learn_only: false,
            learnt: None,
            dec: d,
        });
        Some(w)
    }

    /// The counters, and the input's clock at the end.
    fn finish(mut self) -> (DispatchResult, u64) {
        self.r.anomalies = self.dec.anomalies.clone();
        (self.r, self.clock.now())
    }
}

/// A worker's state: its flows and its record formatter.
struct Work {
    timer: PacketTimer,
    tracker: Tracker,
    rout: RecordOut,
}

impl Work {
    #[inline]
    /// Accounts packet `p`, whose captured bytes are `frame`. `whole` is called once for
    /// a packet that is an IP fragment, never for another: it gives the reassembled
    /// payload of the datagram the fragment completes, if any. `answers` are the
    /// batch's parsed DNS answers.
    fn packet<'a>(
        &mut self,
        p: &Pkt,
        frame: &'a [u8],
        whole: impl FnOnce() -> Option<&'a [u8]>,
        answers: &[dnhunter::Answers],
    ) {
        self.packet_at(p, frame, whole, answers, None);
    }

    /// [`Work::packet`], in a run of packets grouped by flow whose garbage collection
    /// and periodic boundaries are held at clock `held` ([`Tracker::on_packet_held`]),
    /// or in input order (`None`).
    #[inline]
    fn packet_at<'a>(
        &mut self,
        p: &Pkt,
        frame: &'a [u8],
        whole: impl FnOnce() -> Option<&'a [u8]>,
        answers: &[dnhunter::Answers],
        held: Option<u64>,
    ) {
        self.rout.follow(p.now_ns);
        let d = &p.dec;
        let payload = if d.fragment == Fragment::No {
            payload_of(d, frame)
        } else {
            // The application layer sees whole datagrams: a fragment's share is not
            // one, and the fragment that completes a datagram brings all of it.
            whole().unwrap_or_default()
        };
        if let Some(i) = p.learnt {
            if let Some(a) = (i as usize).checked_sub(1).and_then(|i| answers.get(i)) {
                self.tracker.learn_answers(a, p.ts_ns);
            }
        }
        if p.learn_only {
            if p.learnt.is_none() {
                self.tracker.learn_dns(d, payload);
            }
            return;
        }
        let (key, src_is_lo) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        let pkt = Packet {
            ts_ns: p.ts_ns,
            now_ns: p.now_ns,
            wire_len: p.wire_len,
            key,
            hash: p.hash,
            src_is_lo,
            dec: d,
            payload,
            dns_learnt: p.learnt.is_some(),
            unanalysed: false,
        };
        let timed = self.timer.due().then(std::time::Instant::now);
        match held {
            None => self.tracker.on_packet(&pkt, &mut self.rout),
            Some(h) => self.tracker.on_packet_held(&pkt, h, &mut self.rout),
        }
        if let Some(t0) = timed {
            self.timer.record(t0.elapsed().as_nanos() as u64);
        }
    }

    /// Accounts packet `p` of a counted-only record (the overload controller's tail
    /// packet): its flow counts its packet and wire bytes, nothing is analysed.
    #[inline]
    fn counted(&mut self, p: &Pkt) {
        self.rout.follow(p.now_ns);
        let d = &p.dec;
        let (key, src_is_lo) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        let pkt = Packet {
            ts_ns: p.ts_ns,
            now_ns: p.now_ns,
            wire_len: p.wire_len,
            key,
            hash: p.hash,
            src_is_lo,
            dec: d,
            payload: &[],
            dns_learnt: true,
            unanalysed: true,
        };
        self.tracker.on_packet(&pkt, &mut self.rout);
    }

    /// Accounts the tail packets `t` of the flow of `p`, a tails record (the overload
    /// controller held them): per direction, its packets with their wire bytes spread
    /// over them (the sum exact) at the direction's latest time; nothing is analysed.
    fn tails(&mut self, p: &Pkt, t: &buffer::Tails) {
        self.rout.follow(p.now_ns);
        let d = &p.dec;
        let (key, src_is_lo) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        for ((n, bytes, last), lo) in [(t.same, src_is_lo), (t.rev, !src_is_lo)] {
            let pkt = Packet {
                ts_ns: last,
                now_ns: p.now_ns,
                wire_len: bytes,
                key,
                hash: p.hash,
                src_is_lo: lo,
                dec: d,
                payload: &[],
                dns_learnt: true,
                unanalysed: true,
            };
            self.tracker.on_tails(&pkt, n, &mut self.rout);
        }
    }

    fn finish(mut self, final_ns: u64, interrupted: bool) -> WorkerResult {
        if final_ns > 0 {
            self.rout.follow(final_ns);
        }
        self.tracker.finish(final_ns, interrupted, &mut self.rout);
        self.rout.flush_all();
        self.rout.send_late(None);
        WorkerResult {
            stats: self.tracker.stats.clone(),
            records: self.rout.records,
            timer: self.timer,
            moved_in: 0,
            histo: self.tracker.take_histo(),
        }
    }
}

/// The captured L4 payload of a decoded frame: a snaplen may have cut it short of
/// `payload_len`.
#[inline]
fn payload_of<'a>(d: &Decoded, frame: &'a [u8]) -> &'a [u8] {
    let payload = frame.get(d.payload_offset as usize..).unwrap_or(&[]);
    &payload[..payload.len().min(d.payload_len as usize)]
}

/// The source, read chunk by chunk until it ends, fails, or the run is stopped.
struct Reader {
    source: Box<dyn PacketSource>,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
    chunk_frames: usize,
    err: Option<CaptureError>,
}

impl Reader {
    fn next(&mut self) -> Option<Chunk> {
        if self.stop.load(Ordering::Relaxed) || self.err.is_some() {
            return None;
        }
        match self.source.next_chunk(self.chunk_frames) {
            Ok(Some(chunk)) => {
                self.progress.packets.fetch_add(chunk.frames.len() as u64, Ordering::Relaxed);
                self.progress.bytes_read.store(self.source.progress().bytes_read, Ordering::Relaxed);
                Some(chunk)
            }
            Ok(None) => None,
            Err(e) => {
                self.err = Some(e);
                None
            }
        }
    }

    fn finish(mut self) -> ReaderResult {
        ReaderResult { err: self.err, stats: self.source.stats(), warnings: self.source.take_warnings() }
    }
}

/// The thread of a single worker that dispatches its own packets.
fn run_inline(
    mut dispatch: Dispatch,
    mut work: Work,
    stop: &AtomicBool,
    mut next_chunk: impl FnMut() -> Option<Chunk>,
) -> (DispatchResult, Option<WorkerResult>) {
    while let Some(chunk) = next_chunk() {
        for f in &chunk.frames {
            let frame = chunk.data(f);
            if let Some((_, p)) = dispatch.frame(f, frame) {
                work.packet(&p, frame, || dispatch.dec.reassembled(), &[]);
            }
        }
    }
    let (r, end) = dispatch.finish();
    (r, Some(work.finish(end, stop.load(Ordering::Relaxed))))
}

/// A dispatcher thread: chunks in (every D-th of the input), one batch per chunk out
/// to every worker.
fn run_dispatcher(
    mut dispatch: Dispatch,
    mut chunks: Receiver<Clocked>,
    mut worker_tx: Vec<Sender<Msg>>,
    mut recycled: Vec<Receiver<Vec<Pkt>>>,
    ends: Ends<'_>,
) -> (DispatchResult, Option<WorkerResult>) {
    let Ends { frags, sched, stop } = ends;
    let n = worker_tx.len();
    let mut batches: Vec<Vec<Pkt>> = (0..n).map(|_| Vec::new()).collect();
    let mut wholes: Vec<Vec<Option<Vec<u8>>>> = (0..n).map(|_| Vec::new()).collect();
    let mut answers: Vec<dnhunter::Answers> = Vec::new();
    let mut last_now = 0;
    'chunks: while let Some(c) = chunks.recv_unless(stop) {
        let chunk = &c.chunk;
        dispatch.dec.begin_turn(c.seq);
        let mut moves = None;
        if let Some(sc) = sched {
            let t = sc.table_for(c.seq);
            if sc.starts_epoch(c.seq) && !t.moves.is_empty() {
                moves = Some(t.clone());
            }
            dispatch.table = Some(t);
            dispatch.per_bin.resize(BINS, 0);
        }
        for (f, &now) in chunk.frames.iter().zip(&c.now) {
            dispatch.r.count(f);
            let frame = chunk.data(f);
            if let Some(w) = dispatch.frame_to(f, frame, now, &mut batches) {
                let dec = &batches[w].last().expect("frame_to pushed the packet").dec;
                let frag = dec.fragment != Fragment::No;
                let whole = if frag { dispatch.dec.take_reassembled() } else { None };
                if dispatch.dns_broadcast && dnhunter::is_dns_response(dec) {
                    // Parsed once here for every worker, not once per worker.
                    let payload = if frag { whole.as_deref().unwrap_or_default() } else { payload_of(dec, frame) };
                    let i = dnhunter::Answers::parse(dec.dst, payload).map_or(0, |a| {
                        answers.push(a);
                        answers.len() as u32
                    });
                    let p = batches[w].last_mut().expect("frame_to pushed the packet");
                    p.learnt = Some(i);
                    let p = *p;
                    for (v, b) in batches.iter_mut().enumerate() {
                        if v != w {
                            b.push(Pkt { learn_only: true, ..p });
                            if frag {
                                wholes[v].push(whole.clone());
                            }
                        }
                    }
                }
                if frag {
                    wholes[w].push(whole);
                }
            }
        }
        dispatch.dec.end_turn();
        if let Some(sc) = sched {
            sc.count(c.seq, &dispatch.per_bin);
            dispatch.per_bin.fill(0);
        }
        last_now = c.end_now;
        // Every worker gets a batch for every chunk, empty or not: it takes the
        // chunks in input order, and an empty batch says this one had nothing for it.
        let shared = (!answers.is_empty()).then(|| Arc::new(std::mem::take(&mut answers)));
        for (w, b) in batches.iter_mut().enumerate() {
            let pkts = if b.is_empty() {
                Vec::new()
            } else {
                let fresh = recycled[w].try_recv().unwrap_or_else(|| Vec::with_capacity(b.capacity()));
                std::mem::replace(b, fresh)
            };
            let batch = Batch {
                backing: chunk.backing.clone(),
                pkts,
                wholes: std::mem::take(&mut wholes[w]),
                answers: shared.clone(),
                end_now: c.end_now,
                moves: moves.clone(),
            };
            if worker_tx[w].send(Msg::Batch(batch)).is_err() {
                break 'chunks;
            }
        }
    }
    let stopped = stop.load(Ordering::Relaxed);
    if stopped {
        // Chunks left in the rings will never be decoded: the decoders waiting for
        // their turns, and the scheduler waiting for their counts, must not wait.
        frags.abandon();
        if let Some(sc) = sched {
            sc.abandon();
        }
    }
    for tx in &mut worker_tx {
        let _ = tx.send(Msg::End(last_now, stopped));
    }
    (dispatch.finish().0, None)
}

/// A worker thread fed by the dispatchers: chunk `seq`'s batch comes from dispatcher
/// `seq % D`, so taking them in turn keeps the input's order. With `groups`
/// (`--flow-batches on`), each batch is accounted grouped by flow.
fn run_worker(
    mut work: Work,
    mut groups: Option<FlowGroups>,
    mut rx: Vec<Receiver<Msg>>,
    mut recycle: Vec<Sender<Vec<Pkt>>>,
    mut post: Post,
) -> WorkerResult {
    let (mut final_ns, mut interrupted) = (0, false);
    for d in (0..rx.len()).cycle() {
        match rx[d].recv() {
            Some(Msg::Batch(b)) => {
                if let Some(t) = &b.moves {
                    post.exchange(&mut work, t);
                }
                if let Some(g) = groups.as_mut() {
                    account_grouped(&mut work, &b, g);
                } else {
                    let mut wholes = b.wholes.iter();
                    let answers = b.answers.as_deref().map_or(&[][..], Vec::as_slice);
                    for p in &b.pkts {
                        let frame = tapstat_capture::bytes_at(&*b.backing, p.offset, p.caplen);
                        work.packet(p, frame, || wholes.next().and_then(Option::as_deref), answers);
                    }
                }
                final_ns = b.end_now;
                // A worker with no packets in a chunk still follows the input's clock
                // into the next output interval, so the writer can close the last one.
                work.rout.follow(final_ns);
                let mut v = b.pkts;
                if v.capacity() > 0 {
                    v.clear();
                    let _ = recycle[d].try_send(v);
                }
            }
            // The input ended (or the run stopped) before the next chunk.
            Some(Msg::End(t, i)) => {
                (final_ns, interrupted) = (final_ns.max(t), i);
                break;
            }
            None => break,
        }
    }
    let mut r = work.finish(final_ns, interrupted);
    r.moved_in = post.moved_in;
    r
}

/// What ends or releases a dispatcher's waits: the shared fragment table's turns, the
/// scheduler's epochs, the stop flag.
struct Ends<'a> {
    frags: &'a SharedFrags,
    sched: Option<&'a Scheduler>,
    stop: &'a AtomicBool,
}

/// A worker's mailboxes for the flows of moved bins.
struct Post {
    me: usize,
    inbox: crossbeam_channel::Receiver<Mail>,
    outboxes: Vec<crossbeam_channel::Sender<Mail>>,
    /// Mail of a later epoch that came before this worker got there.
    early: Vec<Mail>,
    /// Flows received.
    moved_in: u64,
}

impl Post {
    /// Between two chunks, at the start of an epoch whose table `t` moved bins: sends
    /// the flows of the bins this worker gives away to their new workers (one message
    /// to each taker, empty or not), then takes the flows of the bins it receives. A
    /// worker sends before it waits, and sending never blocks, so no worker waits for
    /// one that waits for it.
    fn exchange(&mut self, work: &mut Work, t: &Table) {
        let me = self.me as u16;
        let takers: std::collections::BTreeSet<u16> = t.moves.iter().filter(|m| m.1 == me).map(|m| m.2).collect();
        if !takers.is_empty() {
            let mut giving = vec![false; BINS];
            for &(bin, from, _) in &t.moves {
                giving[bin as usize] = from == me;
            }
            let flows = work.tracker.take_flows(|h| giving[FlowHasher::bin_of(h, BINS)]);
            let mut by_taker: BTreeMap<u16, Vec<tapstat_analyze::MovedFlow>> =
                takers.iter().map(|&to| (to, Vec::new())).collect();
            for f in flows {
                if let Some(v) = by_taker.get_mut(&(t.worker_of(f.hash()) as u16)) {
                    v.push(f);
                }
            }
            for (to, v) in by_taker {
                // A taker gone (it stopped) takes nothing; the flows are dropped with
                // the run.
                let _ = self.outboxes[to as usize].send((t.epoch, self.me, v));
            }
        }
        let mut givers: std::collections::BTreeSet<usize> =
            t.moves.iter().filter(|m| m.2 == me).map(|m| m.1 as usize).collect();
        let mut i = 0;
        while i < self.early.len() {
            if self.early[i].0 == t.epoch && givers.remove(&self.early[i].1) {
                let (_, _, v) = self.early.swap_remove(i);
                self.moved_in += v.len() as u64;
                work.tracker.put_flows(v, &mut work.rout);
            } else {
                i += 1;
            }
        }
        while !givers.is_empty() {
            let Ok(m) = self.inbox.recv() else { break };
            if m.0 == t.epoch && givers.remove(&m.1) {
                self.moved_in += m.2.len() as u64;
                work.tracker.put_flows(m.2, &mut work.rout);
            } else {
                self.early.push(m);
            }
        }
    }
}

/// Accounts batch `b` grouped by flow: the runs that `groups` plans, each held run with
/// its clock held at its first packet's and moved to its last packet's after it.
fn account_grouped(work: &mut Work, b: &Batch, groups: &mut FlowGroups) {
    groups.plan(&b.pkts, !b.wholes.is_empty());
    let g = &*groups;
    let mut from = 0;
    for run in &g.runs {
        for &i in &g.order[from..run.end as usize] {
            let p = &b.pkts[i as usize];
            let frame = tapstat_capture::bytes_at(&*b.backing, p.offset, p.caplen);
            let whole =
                || g.whole_of.get(i as usize).and_then(|&w| b.wholes.get(w as usize)).and_then(Option::as_deref);
            work.packet_at(
                p,
                frame,
                whole,
                b.answers.as_deref().map_or(&[][..], Vec::as_slice),
                run.held.map(|(first, _)| first),
            );
        }
        if let Some((_, last)) = run.held {
            work.tracker.advance(last);
        }
        from = run.end as usize;
    }
}

/// A stretch of [`FlowGroups::order`]: up to `end`, in input order (`held: None`) or
/// grouped by flow with the clocks of its first and last packets in input order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    end: u32,
    held: Option<(u64, u64)>,
}

/// Flow-affinity batches (issue 14; DPDKStat, seeds/000 §7, "Sorting packets"): the order in
/// which a worker accounts a batch's packets, grouped by flow so that a flow's state
/// and its table lines are brought into the cache once per batch rather than once per
/// packet. Off by default: on the captures measured, the planning pass costs more than
/// the grouping saves (docs/BENCHMARKS.md, "Flow-affinity batches (issue 14)").
///
/// A batch is cut into segments; a segment's packets are grouped by flow hash, each
/// group in input order (a flow's packets keep their order), the groups in the order of
/// their flows' *last* packets in the segment, so the flow table's LRU list ends the
/// segment in the order input order leaves it. The cuts make the records those of
/// input order (the proof is at [`Tracker::on_packet_held`] and in
/// docs/ARCHITECTURE.md, "Flow-affinity batches"):
/// - every packet that teaches DNS answers (a DNS response, a `learn_only` copy, a
///   packet with `learnt` answers) is a run of its own, in its place: the answers a
///   flow's first packet finds (`fqdn`) are those of input order;
/// - with `--periodic`, a segment never spans a periodic boundary;
/// - a grouped segment is a held run: the tracker collects garbage and passes
///   periodic boundaries on the clock of the segment's first packet, and judges each
///   packet's flow on the packet's own clock.
///
/// A segment whose packets are all of different flows keeps input order and is not
/// held (grouping would change nothing).
struct FlowGroups {
    /// `--periodic`'s interval (0: off).
    periodic_ns: u64,
    /// The batch's packet indexes in the order to account them, and its runs.
    order: Vec<u32>,
    runs: Vec<Run>,
    /// Each packet's index in the batch's `wholes` (for IP fragments), filled only for
    /// a batch that has some.
    whole_of: Vec<u32>,
    /// The next packet of the same group (indexed by packet), and each group's first.
    next: Vec<u32>,
    heads: Vec<u32>,
    /// Open addressing, flow hash → group: (hash, group, stamp); an entry is live only
    /// when its stamp is the segment's, so the map is never cleared.
    map: Vec<(u64, u32, u32)>,
    stamp: u32,
}

/// No packet: the end of a group's list.
const NIL: u32 = u32::MAX;

impl FlowGroups {
    fn new(periodic_ns: u64) -> Self {
        FlowGroups {
            periodic_ns,
            order: Vec::new(),
            runs: Vec::new(),
            whole_of: Vec::new(),
            next: Vec::new(),
            heads: Vec::new(),
            map: Vec::new(),
            stamp: 0,
        }
    }

    /// A packet that must keep its place: it teaches DNS answers (see
    /// [`tapstat_analyze::dnhunter`]).
    #[inline]
    fn keeps_place(p: &Pkt) -> bool {
        p.learn_only || p.learnt.is_some() || dnhunter::is_dns_response(&p.dec)
    }

    /// Plans the order of `pkts` (`order`, `runs`); `fragments`: the batch carries
    /// reassembled payloads (`whole_of` is then filled).
    fn plan(&mut self, pkts: &[Pkt], fragments: bool) {
        self.order.clear();
        self.runs.clear();
        self.next.clear();
        self.next.resize(pkts.len(), NIL);
        if fragments {
            self.whole_of.clear();
            let mut w = 0;
            for p in pkts {
                self.whole_of.push(w);
                w += (p.dec.fragment != Fragment::No) as u32;
            }
        }
        let mut i = 0;
        while i < pkts.len() {
            if Self::keeps_place(&pkts[i]) {
                self.order.push(i as u32);
                self.runs.push(Run { end: self.order.len() as u32, held: None });
                i += 1;
                continue;
            }
            let start = i;
            let period = self.period_of(&pkts[i]);
            i += 1;
            while i < pkts.len() && !Self::keeps_place(&pkts[i]) && self.period_of(&pkts[i]) == period {
                i += 1;
            }
            self.group(pkts, start, i);
        }
    }

    /// The periodic interval packet `p` falls in (0 without `--periodic`).
    #[inline]
    fn period_of(&self, p: &Pkt) -> u64 {
        p.now_ns.checked_div(self.periodic_ns).unwrap_or(0)
    }

    /// Appends segment `pkts[start..end]`, grouped, to `order` as one run.
    fn group(&mut self, pkts: &[Pkt], start: usize, end: usize) {
        let len = end - start;
        let cap = (2 * len).next_power_of_two().max(16);
        if self.map.len() < cap {
            self.map = vec![(0, 0, 0); cap];
            self.stamp = 0;
        }
        if self.stamp == u32::MAX {
            self.map.fill((0, 0, 0));
            self.stamp = 0;
        }
        self.stamp += 1;
        let (stamp, mask, shift) = (self.stamp, cap - 1, 64 - cap.trailing_zeros());
        self.heads.clear();
        let (mut first_ns, mut last_ns) = (u64::MAX, 0);
        // Backwards: a group is made at its flow's last packet, so the groups come in
        // reverse order of their last packets, and each list, built by pushing at its
        // head, in input order.
        for i in (start..end).rev() {
            let p = &pkts[i];
            first_ns = first_ns.min(p.now_ns);
            last_ns = last_ns.max(p.now_ns);
            // The top bits of a multiply: the flow hash's low bits may be weak (CRC,
            // CoralReef), and the worker choice used other bits already.
            let mut k = (p.hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
            let g = loop {
                let e = &mut self.map[k];
                if e.2 != stamp {
                    *e = (p.hash, self.heads.len() as u32, stamp);
                    self.heads.push(NIL);
                    break self.heads.len() - 1;
                }
                if e.0 == p.hash {
                    break e.1 as usize;
                }
                k = (k + 1) & mask;
            };
            self.next[i] = self.heads[g];
            self.heads[g] = i as u32;
        }
        for &h in self.heads.iter().rev() {
            let mut i = h;
            while i != NIL {
                self.order.push(i);
                i = self.next[i as usize];
            }
        }
        // All of different flows: the order is input order, accounted as such.
        let held = (self.heads.len() < len).then_some((first_ns, last_ns));
        self.runs.push(Run { end: self.order.len() as u32, held });
    }
}

fn random_seed() -> u64 {
    let mut b = [0u8; 8];
    if getrandom::getrandom(&mut b).is_err() {
        // No entropy source: fall back to the clock, still not predictable from the
        // traffic.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        return t.as_nanos() as u64 ^ 0x5DEE_CE66_D1CE_5EED;
    }
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP packet of the flow with hash `hash`, at the input's clock `now`.
    fn pkt(hash: u64, now: u64) -> Pkt {
        let dec = Decoded { l4: L4::Tcp, sport: 40000, dport: 80, ..Default::default() };
        Pkt { ts_ns: now, now_ns: now, wire_len: 60, caplen: 60, offset: 0, hash, learn_only: false, learnt: None, dec }
    }

    /// A DNS response (UDP from port 53, with a payload) of flow `hash`.
    fn dns(hash: u64, now: u64) -> Pkt {
        let dec = Decoded { l4: L4::Udp, sport: 53, dport: 5353, payload_len: 40, ..Default::default() };
        Pkt { dec, ..pkt(hash, now) }
    }

    /// A planned run: its packet indexes and held clocks.
    type Planned = (Vec<u32>, Option<(u64, u64)>);

    /// The planned runs.
    fn runs(g: &FlowGroups) -> Vec<Planned> {
        let mut from = 0;
        g.runs
            .iter()
            .map(|r| {
                let v = g.order[from..r.end as usize].to_vec();
                from = r.end as usize;
                (v, r.held)
            })
            .collect()
    }

    /// Grouping is stable (a flow's packets keep their order) and the groups come in
    /// the order of their flows' last packets; the run is held at its first and last
    /// clocks.
    #[test]
    fn a_batch_is_grouped_by_flow_stably_in_the_order_of_last_packets() {
        let (a, b, c) = (11, 22, 33);
        let pkts: Vec<Pkt> = [a, b, a, c, b, a].iter().enumerate().map(|(i, &h)| pkt(h, 100 + i as u64)).collect();
        let mut g = FlowGroups::new(0);
        g.plan(&pkts, false);
        assert_eq!(runs(&g), vec![(vec![3, 1, 4, 0, 2, 5], Some((100, 105)))]);
    }

    /// Every packet that teaches DNS answers keeps its place, alone: a DNS response,
    /// a `learn_only` copy, a packet with answers parsed by the dispatcher.
    #[test]
    fn dns_answers_cut_a_batch_into_segments_grouped_apart() {
        let (a, b) = (11, 22);
        let mut copy = pkt(99, 0);
        copy.learn_only = true;
        let mut parsed = pkt(98, 0);
        parsed.learnt = Some(0);
        let mut pkts = vec![pkt(a, 0), pkt(b, 1), pkt(a, 2), dns(77, 3), pkt(b, 4), pkt(a, 5), pkt(b, 6)];
        pkts.extend([copy, pkt(a, 8), pkt(a, 9), parsed, pkt(b, 11)]);
        for (i, p) in pkts.iter_mut().enumerate() {
            p.now_ns = i as u64;
        }
        let mut g = FlowGroups::new(0);
        g.plan(&pkts, false);
        assert_eq!(
            runs(&g),
            vec![
                (vec![1, 0, 2], Some((0, 2))),
                (vec![3], None),
                (vec![5, 4, 6], Some((4, 6))),
                (vec![7], None),
                (vec![8, 9], Some((8, 9))),
                (vec![10], None),
                (vec![11], None),
            ]
        );
    }

    /// Packets all of different flows stay in input order, not held; with
    /// `--periodic`, no segment spans a boundary.
    #[test]
    fn distinct_flows_keep_input_order_and_segments_stop_at_periodic_boundaries() {
        let pkts: Vec<Pkt> = (0..5).map(|i| pkt(i, i)).collect();
        let mut g = FlowGroups::new(0);
        g.plan(&pkts, false);
        assert_eq!(runs(&g), vec![(vec![0, 1, 2, 3, 4], None)]);

        let (a, b) = (11, 22);
        let pkts = vec![pkt(a, 1), pkt(b, 5), pkt(a, 9), pkt(b, 10), pkt(a, 12), pkt(b, 19), pkt(a, 20)];
        let mut g = FlowGroups::new(10);
        g.plan(&pkts, false);
        assert_eq!(runs(&g), vec![(vec![1, 0, 2], Some((1, 9))), (vec![4, 3, 5], Some((10, 19))), (vec![6], None)]);
    }

    /// Reassembled payloads travel in the order of the fragments: each fragment finds
    /// its own wherever grouping puts it.
    #[test]
    fn fragments_find_their_reassembled_payloads_out_of_order() {
        let (a, b) = (11, 22);
        let mut pkts = vec![pkt(a, 0), pkt(b, 1), pkt(a, 2), pkt(b, 3)];
        pkts[1].dec.fragment = Fragment::First;
        pkts[3].dec.fragment = Fragment::First;
        let mut g = FlowGroups::new(0);
        g.plan(&pkts, true);
        assert_eq!(runs(&g), vec![(vec![0, 2, 1, 3], Some((0, 3)))]);
        assert_eq!((g.whole_of[1], g.whole_of[3]), (0, 1));
    }

    /// Over many random batches (few flows, some DNS, growing and shrinking segments
    /// that reuse the map): every packet once, each flow's packets in input order.
    #[test]
    fn grouping_is_a_stable_permutation_of_every_batch() {
        let mut g = FlowGroups::new(0);
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for round in 0..500u64 {
            let n = rnd(600) as usize;
            let flows = 1 + rnd(if round % 2 == 0 { 8 } else { 400 });
            let pkts: Vec<Pkt> = (0..n as u64)
                .map(|i| if rnd(50) == 0 { dns(1000, i) } else { pkt(rnd(flows).wrapping_mul(0x1234_5678_9ABC), i) })
                .collect();
            g.plan(&pkts, false);
            let mut seen = g.order.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..n as u32).collect::<Vec<_>>());
            let mut last: std::collections::HashMap<u64, u32> = Default::default();
            for &i in &g.order {
                let h = pkts[i as usize].hash;
                if let Some(&j) = last.get(&h) {
                    assert!(j < i, "flow {h:x}: packet {i} after {j}");
                }
                last.insert(h, i);
            }
            assert_eq!(g.runs.last().map_or(0, |r| r.end) as usize, n);
        }
    }

    /// With `--rotate` on files, a record goes to the interval it was due in: one due
    /// in an interval the worker has left waits, and goes out under that interval when
    /// the worker enters the next one; the worker's own records go to its own.
    #[test]
    fn rotation_sends_late_records_under_their_interval() {
        const S: u64 = 1_000_000_000;
        let cfg = EngineConfig { rotate: Some(std::time::Duration::from_secs(60)), ..EngineConfig::default() };
        let (tx, rx) = crossbeam_channel::unbounded::<Block>();
        let (_free_tx, free_rx) = crossbeam_channel::bounded::<Vec<u8>>(1);
        let mut r = RecordOut::new(&cfg, tx, free_rx).by_due();
        let write = |r: &mut RecordOut, due: u64, text: &[u8]| {
            r.at(due * S);
            r.buf(0).extend_from_slice(text);
            r.wrote(0);
        };
        r.follow(10 * S);
        write(&mut r, 10, b"a\n");
        r.follow(70 * S);
        write(&mut r, 30, b"late\n");
        write(&mut r, 65, b"b\n");
        r.follow(130 * S);
        drop(r);
        let got: Vec<String> = rx
            .iter()
            .map(|(i, b)| match i {
                ROTATE => format!("@{}", u64::from_le_bytes(b[..8].try_into().unwrap())),
                _ => String::from_utf8(b).unwrap(),
            })
            .collect();
        assert_eq!(got, ["@0", "a\n", "@60", "b\n", "@0", "late\n", "@60", "@120"]);
    }

    /// A full disk (`/dev/full` fails every write with ENOSPC): the writer sets the stop
    /// flag at the first failure, so the reader and the dispatcher end the run, and
    /// counts every record it could not write, the failed block's and the later ones.
    #[test]
    fn a_write_error_stops_the_run_and_counts_what_was_lost() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full exists");
        let out = OutputDir::from_files(std::path::Path::new("/dev"), vec![("/dev/full".into(), full)]);
        let (tx, rx) = crossbeam_channel::bounded::<Block>(8);
        let (free_tx, _free_rx) = crossbeam_channel::bounded::<Vec<u8>>(8);
        for b in [&b"a\nb\n"[..], b"c\nd\ne\n", b"f\ng\nh\ni\n"] {
            tx.send((0, b.to_vec())).unwrap();
        }
        drop(tx);
        let stop = AtomicBool::new(false);
        let w = write_blocks(out, rx, free_tx, &stop);
        assert!(stop.load(Ordering::SeqCst), "a write error must stop the run");
        let e = w.error.expect("the error is kept");
        assert_eq!(e.source.raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(w.lost, 9);
    }
}
