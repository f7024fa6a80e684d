//! Kafka export (`--kafka BROKERS --kafka-topic-prefix P`): every record of every log
//! to topic `P.<log>` too, as a JSON object keyed by its flow id, and nothing lost
//! while the broker is away.
//!
//! ```text
//! worker 0: RecordOut ─ KafkaOut (frames: log, flow id, JSON, in blocks) ──┐
//! worker 1: RecordOut ─ KafkaOut ──────────────────────────────────────────┼─► exporter thread ─► client's queue ─► broker
//!  ...                                                                     ┘         │    ▲
//!                                                                                    ▼    │ (when the queue has room, oldest first)
//!                                                                               spool (segment files on disk, bounded)
//! ```
//!
//! The workers copy each record as they have just written it into blocks of frames: the
//! JSON line with `--format jsonl`; with TSV the TSV line (and the JSON of its `strings`
//! columns, which TSV cannot give back exactly), which the exporter thread makes the
//! same JSON of ([`tapstat_sink::json_from_tsv`]), off the packet path; with Parquet the
//! worker formats the JSON. The exporter thread hands them
//! to the client ([`Broker`]: librdkafka's idempotent producer, whose queued records never
//! time out) and reads its delivery reports. When the client's queue is full — the broker
//! is down or slower than the records come — a record goes to the spool
//! ([`tapstat_sink::spool`]), and so does every record after it while the spool holds
//! any: so the spool's records are always newer than the queue's, and the spool is
//! emptied into the queue, oldest first, whenever the queue has room. Per topic (and
//! partition) the broker gets the records in the order the workers handed them over.
//!
//! Past the spool's bound a record is dropped and counted (`dropped`). At the end the
//! exporter waits up to `--kafka-linger` for the queue and the spool to empty; what is
//! left is taken back from the client (the records still in its queue go to the front of
//! the spool, before the ones spooled, in the order they were sent) and stays on disk
//! for the next run that uses the spool's directory, which sends it first.
//!
//! Accounting (summary.json `kafka`): `spool_at_start + records = delivered + errors +
//! dropped + left_in_spool`.

use crate::export::blocks::{Backpressure, BlockOut, Blocks};
use crate::EngineError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tapstat_analyze::logs::LogVisitor;
use tapstat_record::{Field, Log};
use tapstat_sink::broker::{Broker, Outcome, Report, Sent};
use tapstat_sink::spool::Spool;

/// Where and how to export (`--kafka`, `--kafka-topic-prefix`, `--kafka-spool`,
/// `--kafka-spool-dir`, `--kafka-linger`, `--kafka-option`, `--kafka-config`). Its
/// `Debug` (summary.json's `options`) hides the values of secret settings.
#[derive(Clone, PartialEq, Eq)]
pub struct KafkaConfig {
    /// librdkafka's `bootstrap.servers`: HOST:PORT[,HOST:PORT...].
    pub brokers: String,
    /// Topics are `PREFIX.<log>`, and `PREFIX.schema` for the schema.
    pub topic_prefix: String,
    /// The spool's directory (`None`: `kafka-spool` in the output directory).
    pub spool_dir: Option<PathBuf>,
    /// The most bytes the spool holds on disk.
    pub spool_bytes: u64,
    /// How long the end of a run waits for the records still queued or spooled.
    pub linger: Duration,
    /// librdkafka settings, after tapstat's own.
    pub options: Vec<(String, String)>,
    /// `--probe-id`: carried by every message, in its header `probe_id`.
    pub probe_id: Option<String>,
}

/// Whether librdkafka setting `key` holds a secret (a password, a key, SASL's
/// settings): its value is not shown.
pub fn is_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["password", "secret", "pem", "sasl.", "oauth", "ssl.key", "keystore", "token"].iter().any(|w| k.contains(w))
}

impl std::fmt::Debug for KafkaConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let options: Vec<String> = self
            .options
            .iter()
            .map(|(k, v)| if is_secret(k) { format!("{k}=(hidden)") } else { format!("{k}={v}") })
            .collect();
        f.debug_struct("KafkaConfig")
            .field("brokers", &self.brokers)
            .field("topic_prefix", &self.topic_prefix)
            .field("spool_dir", &self.spool_dir)
            .field("spool_bytes", &self.spool_bytes)
            .field("linger", &self.linger)
            .field("options", &options)
            .field("probe_id", &self.probe_id)
            .finish()
    }
}

impl KafkaConfig {
    /// The spool's directory for output directory `out`.
    pub fn spool_dir_for(&self, out: &Path) -> PathBuf {
        self.spool_dir.clone().unwrap_or_else(|| out.join("kafka-spool"))
    }
}

/// summary.json's `kafka`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KafkaSummary {
    pub brokers: String,
    /// The topics written: one per log, and the schema's.
    pub topics: Vec<String>,
    pub spool_dir: String,
    /// Records this run handed to the export (the schema's messages included).
    pub records: u64,
    /// Of which the schema's messages (one per log, to `PREFIX.schema`).
    pub schema_messages: u64,
    /// Records found in the spool at the start (left by earlier runs).
    pub spool_at_start: u64,
    /// Records handed to the client (each time: a record resent counts again).
    pub produced: u64,
    /// Records the broker acknowledged.
    pub delivered: u64,
    /// Records written to the spool (the client's queue was full, or they were given back
    /// undelivered).
    pub spooled: u64,
    /// Records read back from the spool and handed to the client.
    pub resent: u64,
    /// Records lost because the spool was full (or could not be written).
    pub dropped: u64,
    /// Records the client gave up on for good (or refused): lost.
    pub errors: u64,
    /// Records on disk at the end, for a later run.
    pub left_in_spool: u64,
    /// Of those, records taken back while on their way to the broker: it may have them
    /// already, and the later run sends them again (at least once, not exactly once).
    pub maybe_delivered: u64,
    /// Seconds the end of the run waited for deliveries.
    pub linger_s: f64,
    /// Why the topics could not be created at the start, if they could not (they are then
    /// created by the broker when first written, if it allows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topics_error: Option<String>,
    /// The latest error (of the client, a delivery, the spool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A worker hands its frames to the exporter once it holds this many bytes (and at every
/// flush of its logs: the end of a file run, and every second live).
const BLOCK_BYTES: usize = 64 * 1024;
/// How long the exporter sleeps between looks at the client and the spool when no block
/// comes.
const TICK: Duration = Duration::from_millis(50);
/// How long one try at creating the topics may take; and the pause between tries.
const CREATE_WAIT: Duration = Duration::from_secs(10);
const CREATE_PAUSE: Duration = Duration::from_secs(2);
/// How long the client may take to give back its records at the end.
const PURGE_WAIT: Duration = Duration::from_secs(5);

/// The exporter thread, and the channel the workers' [`KafkaOut`]s feed.
pub(crate) struct Exporter(Blocks<KafkaSummary>);

/// The logs' topics of run `cfg`: (log name, the log's columns).
pub(crate) fn logs_of(cfg: &crate::EngineConfig) -> Vec<(&'static str, Vec<Field>)> {
    struct Fields;
    impl LogVisitor for Fields {
        type Out = Vec<Field>;
        fn visit<T>(self, l: &Log<T>) -> Vec<Field> {
            l.fields().copied().collect()
        }
    }
    crate::record_out::LogFiles::of(cfg)
        .logs
        .into_iter()
        .map(|l| (l.name(), l.visit(cfg.tracker.tcp_sets, cfg.tracker.l7.is_some(), Fields)))
        .collect()
}

/// The schema's message of log `name` (the value; the key is the log's name): the
/// columns this run writes, for consumers.
pub(crate) fn schema_value(prefix: &str, name: &str, cols: &[Field]) -> Vec<u8> {
    let columns: Vec<serde_json::Value> = cols
        .iter()
        .map(|f| serde_json::json!({ "name": f.name, "type": f.ty.name(), "unit": f.unit, "meaning": f.meaning }))
        .collect();
    let doc = serde_json::json!({
        "log": name,
        "topic": format!("{prefix}.{name}"),
        "tapstat_version": env!("CARGO_PKG_VERSION"),
        "key": "the record's flow_id (16 hex digits)",
        "value": "one JSON object per record, as `tapstat --format jsonl` writes a line: keys = column names, null for no value",
        "columns": columns,
    });
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// Creates the topics (tried again until it succeeds: the broker may be away).
type Creator = Box<dyn Fn(Duration) -> Result<(), String> + Send>;

/// The client, from the configuration, and what creates its topics.
#[cfg(feature = "kafka")]
fn client(cfg: &KafkaConfig, logs: &[&str]) -> Result<(Box<dyn Broker>, Option<Creator>), EngineError> {
    let p = tapstat_sink::kafka::Producer::new(&cfg.brokers, &cfg.topic_prefix, &cfg.options, cfg.probe_id.as_deref())
        .map_err(EngineError::Live)?;
    let c = p.topic_creator(logs, &["schema"]);
    Ok((Box::new(p), Some(Box::new(move |wait| c.create(wait)))))
}

#[cfg(not(feature = "kafka"))]
fn client(_: &KafkaConfig, _: &[&str]) -> Result<(Box<dyn Broker>, Option<Creator>), EngineError> {
    Err(EngineError::Live(NO_KAFKA.into()))
}

/// The error of `--kafka` in a build without the feature.
pub const NO_KAFKA: &str =
    "this tapstat was built without Kafka: build it with `cargo build --release --features kafka` (librdkafka is built from source: needs make and a C compiler)";

impl Exporter {
    /// Opens the spool, makes the client and starts the exporter thread, and a thread
    /// that creates the topics (nothing waits for a broker). The schema's messages go
    /// once the topics exist (its topic is compacted: were it created by its first
    /// message, it would not be), or at the end.
    pub(crate) fn start(cfg: &KafkaConfig, run: &crate::EngineConfig) -> Result<Exporter, EngineError> {
        let logs = logs_of(run);
        let names: Vec<&str> = logs.iter().map(|(n, _)| *n).collect();
        let dir = cfg.spool_dir_for(&run.out_dir);
        let spool = Spool::open(&dir, cfg.spool_bytes)
            .map_err(|e| EngineError::Live(format!("cannot open the Kafka spool {}: {e}", dir.display())))?;
        let (broker, creator) = client(cfg, &names)?;
        let schema: Vec<Vec<u8>> = logs
            .iter()
            .map(|(name, cols)| {
                let mut f = Vec::new();
                let v = schema_value(&cfg.topic_prefix, name, cols);
                tapstat_sink::spool::push_frame(&mut f, "schema", name.as_bytes(), &v);
                f
            })
            .collect();
        let s = KafkaSummary {
            brokers: cfg.brokers.clone(),
            topics: names.iter().chain(&["schema"]).map(|n| format!("{}.{n}", cfg.topic_prefix)).collect(),
            spool_dir: dir.display().to_string(),
            ..Default::default()
        };
        let tsv = (run.format == tapstat_sink::Format::Tsv).then(|| logs.clone());
        Ok(Exporter::with(broker, creator, spool, s, schema, cfg.linger, tsv))
    }

    /// The exporter over `broker` and `spool` (tests give a stand-in broker and no
    /// creator); `schema`: the schema's messages, sent once `creator` has created the
    /// topics (at once without one).
    fn with(
        broker: Box<dyn Broker>,
        creator: Option<Creator>,
        spool: Spool,
        s: KafkaSummary,
        schema: Vec<Vec<u8>>,
        linger: Duration,
        tsv: Option<Vec<(&'static str, Vec<Field>)>>,
    ) -> Exporter {
        let (created_tx, created) = crossbeam_channel::unbounded::<Result<(), String>>();
        let done = Arc::new(AtomicBool::new(false));
        match creator {
            Some(create) => {
                let done = done.clone();
                // Tries until the topics exist or the export ends; not joined (a try
                // takes CREATE_WAIT at most).
                std::thread::Builder::new()
                    .name("tapstat-kafka-topics".into())
                    .spawn(move || loop {
                        let r = create(CREATE_WAIT);
                        let ok = r.is_ok();
                        if created_tx.send(r).is_err() || ok {
                            return;
                        }
                        let t = Instant::now();
                        while t.elapsed() < CREATE_PAUSE {
                            if done.load(Ordering::Relaxed) {
                                return;
                            }
                            std::thread::sleep(TICK);
                        }
                    })
                    .expect("spawning a thread succeeds");
            }
            None => {
                let _ = created_tx.send(Ok(()));
            }
        }
        Exporter(Blocks::spawn(
            "tapstat-kafka",
            "Kafka exporter",
            BLOCK_BYTES,
            16 * 1024,
            Backpressure::Wait,
            move |rx, free_tx, _| {
                let mut x = Export::new(broker, spool, s);
                x.schema = Some(schema);
                x.created = Some(created);
                x.tsv = tsv;
                x.run(rx, free_tx);
                done.store(true, Ordering::Relaxed);
                x.finish(linger)
            },
        ))
    }

    /// A worker's end of the channel.
    pub(crate) fn out(&self) -> Option<KafkaOut> {
        self.0.out().map(KafkaOut)
    }

    /// Waits for the exporter to deliver (or spool) what the workers handed over (call
    /// once every worker has ended, so every [`KafkaOut`] is gone).
    pub(crate) fn finish(self) -> Result<KafkaSummary, EngineError> {
        self.0.finish()
    }
}

/// A record as the run's format wrote it, for [`KafkaOut::record`].
pub(crate) enum Line<'a> {
    Json(&'a [u8]),
    /// A TSV line: the exporter thread makes the JSON (when the run's format is TSV).
    Tsv(&'a [u8]),
    /// Neither (Parquet's rows): the worker formats the JSON.
    Other,
}

/// A worker's Kafka records on their way to the exporter: frames
/// ([`tapstat_sink::spool::push_frame`]) in blocks.
pub(crate) struct KafkaOut(BlockOut);

impl KafkaOut {
    /// Adds record `rec` of `log` for the topic of log file `name` (the TCP logs share
    /// their columns), keyed by `key`; `line` is the record as the run's format has
    /// just written it: a JSON line is copied, a TSV line too (with the `strings`
    /// columns' JSON, [`tapstat_sink::json_side`]) and the exporter thread makes the
    /// JSON of it; anything else is formatted as JSON here.
    #[inline]
    pub(crate) fn record<T>(&mut self, name: &str, log: &Log<T>, key: &str, rec: &T, line: Line<'_>) {
        let b = self.0.buf();
        b.push(name.len() as u8);
        b.extend_from_slice(name.as_bytes());
        b.push(key.len() as u8);
        b.extend_from_slice(key.as_bytes());
        let at = b.len();
        b.extend_from_slice(&[0; 4]);
        match line {
            Line::Json(l) => b.extend_from_slice(l),
            Line::Tsv(l) => {
                b.extend_from_slice(l.strip_suffix(b"\n").unwrap_or(l));
                tapstat_sink::json_side(log, rec, b);
            }
            Line::Other => tapstat_sink::Format::Jsonl.record(log, rec, b),
        }
        // The line's end is no part of the value.
        if b.last() == Some(&b'\n') {
            b.pop();
        }
        let len = (b.len() - at - 4) as u32;
        b[at..at + 4].copy_from_slice(&len.to_le_bytes());
        self.0.wrote();
    }

    /// Hands the records added so far to the exporter.
    pub(crate) fn flush(&mut self) {
        self.0.flush();
    }
}

/// What a run's export warns about: records lost, records left for a later run.
pub(crate) fn warnings(x: &KafkaSummary) -> Vec<String> {
    let mut w = Vec::new();
    let last = x.last_error.as_deref().map(|e| format!(" (last error: {e})")).unwrap_or_default();
    if x.dropped + x.errors > 0 {
        w.push(format!(
            "Kafka: {} record(s) lost: {} dropped at the spool's bound, {} failed{last}",
            x.dropped + x.errors,
            x.dropped,
            x.errors
        ));
    }
    if x.left_in_spool > 0 {
        w.push(format!(
            "Kafka: {} record(s) not delivered to {} are left in {}; a later run with this spool sends them first{}",
            x.left_in_spool,
            x.brokers,
            x.spool_dir,
            if x.dropped + x.errors > 0 { String::new() } else { last }
        ));
    }
    if let Some(e) = &x.topics_error {
        w.push(format!("Kafka: the topics were not created at the start ({e}); the broker creates them when first written, if it allows"));
    }
    w
}

/// The exporter thread's state.
struct Export {
    broker: Box<dyn Broker>,
    spool: Spool,
    s: KafkaSummary,
    /// The sequence number of the next record queued.
    seq: u64,
    reports: Vec<Report>,
    /// At the end, after the purge: the records given back, with their numbers.
    given_back: Option<Vec<(u64, Vec<u8>)>>,
    /// The schema's messages, until the topics exist; and the topic creator's answers.
    schema: Option<Vec<Vec<u8>>>,
    created: Option<crossbeam_channel::Receiver<Result<(), String>>>,
    /// In a TSV run, the columns of each log: the workers' frames hold TSV lines
    /// ([`Line::Tsv`]), made JSON here.
    tsv: Option<Vec<(&'static str, Vec<Field>)>>,
    /// The JSON value and the frame being made of a TSV line.
    json: Vec<u8>,
    frame: Vec<u8>,
}

impl Export {
    fn new(broker: Box<dyn Broker>, spool: Spool, mut s: KafkaSummary) -> Export {
        s.spool_at_start = spool.records();
        Export {
            broker,
            spool,
            s,
            seq: 0,
            reports: Vec::new(),
            given_back: None,
            schema: None,
            created: None,
            tsv: None,
            json: Vec::new(),
            frame: Vec::new(),
        }
    }

    /// Sends the schema's messages once the topics exist (`end`: now, whether they do
    /// or not).
    fn schema(&mut self, end: bool) {
        while let Some(r) = self.created.as_ref().and_then(|c| c.try_recv().ok()) {
            match r {
                Ok(()) => {
                    self.s.topics_error = None;
                    self.created = None;
                }
                Err(e) => self.s.topics_error = Some(e),
            }
        }
        if self.created.is_none() || end {
            for f in self.schema.take().unwrap_or_default() {
                self.s.schema_messages += 1;
                self.offer(&f);
            }
        }
    }

    /// Blocks in until every worker's channel end is gone.
    fn run(&mut self, blocks: crossbeam_channel::Receiver<Vec<u8>>, free: crossbeam_channel::Sender<Vec<u8>>) {
        loop {
            if self.schema.is_some() {
                self.schema(false);
            }
            match blocks.recv_timeout(TICK) {
                Ok(mut b) => {
                    for f in tapstat_sink::spool::frames(&b) {
                        if self.tsv.is_some() {
                            self.offer_tsv(f);
                        } else {
                            self.offer(f);
                        }
                    }
                    b.clear();
                    let _ = free.try_send(b);
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            }
            self.resend();
            self.poll(Duration::ZERO);
        }
    }

    /// A worker's frame holding a TSV line: offered as the JSON of it (a frame that is
    /// not one of the logs' lines is counted as an error, never sent as it is).
    fn offer_tsv(&mut self, f: &[u8]) {
        let (mut json, mut frame) = (std::mem::take(&mut self.json), std::mem::take(&mut self.frame));
        json.clear();
        frame.clear();
        let made = tapstat_sink::spool::parse_frame(f).and_then(|(fr, _)| {
            let fields = &self.tsv.as_ref()?.iter().find(|(n, _)| *n == fr.name)?.1;
            tapstat_sink::json_from_tsv(fields, fr.value, &mut json)?;
            tapstat_sink::spool::push_frame(&mut frame, fr.name, fr.key, &json);
            Some(())
        });
        match made {
            Some(()) => self.offer(&frame),
            None => {
                self.s.records += 1;
                self.s.errors += 1;
                self.s.last_error = Some("a TSV record without its log's columns (a bug: please report it)".into());
            }
        }
        (self.json, self.frame) = (json, frame);
    }

    /// A new record: to the client when nothing waits in the spool and the client takes
    /// it, else to the spool's end.
    fn offer(&mut self, frame: &[u8]) {
        self.s.records += 1;
        if self.spool.is_empty() {
            match self.broker.send(frame, self.seq) {
                Sent::Queued => {
                    self.seq += 1;
                    self.s.produced += 1;
                    return;
                }
                Sent::Full => {}
                Sent::Refused(e) => {
                    self.s.errors += 1;
                    self.s.last_error = Some(e);
                    return;
                }
            }
        }
        self.spool_it(frame);
    }

    fn spool_it(&mut self, frame: &[u8]) {
        match self.spool.push(frame) {
            Ok(true) => self.s.spooled += 1,
            Ok(false) => self.s.dropped += 1,
            Err(e) => {
                self.s.dropped += 1;
                self.s.last_error = Some(format!("writing the spool: {e}"));
            }
        }
    }

    /// Hands the spool's records to the client, oldest first, while it takes them.
    fn resend(&mut self) {
        loop {
            let frame = match self.spool.front() {
                Ok(Some(f)) => f,
                Ok(None) => return,
                Err(e) => {
                    self.s.last_error = Some(format!("reading the spool: {e}"));
                    return;
                }
            };
            match self.broker.send(frame, self.seq) {
                Sent::Queued => {
                    self.seq += 1;
                    self.s.produced += 1;
                    self.s.resent += 1;
                }
                Sent::Full => return,
                Sent::Refused(e) => {
                    self.s.errors += 1;
                    self.s.last_error = Some(e);
                }
            }
            self.spool.pop();
        }
    }

    /// Takes the delivery reports that came (waiting up to `wait` for them).
    fn poll(&mut self, wait: Duration) {
        self.broker.poll(wait, &mut self.reports);
        let mut reports = std::mem::take(&mut self.reports);
        for r in reports.drain(..) {
            match r.outcome {
                Outcome::Delivered => self.s.delivered += 1,
                Outcome::Failed(e) => {
                    self.s.errors += 1;
                    self.s.last_error = Some(e);
                }
                Outcome::Undelivered { frame, error, in_flight } => match &mut self.given_back {
                    Some(v) => {
                        self.s.maybe_delivered += in_flight as u64;
                        v.push((r.seq, frame));
                    }
                    None => {
                        // Timed out during the run (a `message.timeout.ms` of the
                        // user's): sent again, after what waits.
                        self.s.last_error = Some(error);
                        self.spool_it(&frame);
                    }
                },
            }
        }
        self.reports = reports;
        if let Some(e) = self.broker.take_error() {
            self.s.last_error = Some(e);
        }
    }

    /// The end: waits up to `linger` for the queue and the spool to empty, takes back
    /// what is left and closes the spool.
    fn finish(mut self, linger: Duration) -> KafkaSummary {
        self.schema(true);
        let t0 = Instant::now();
        loop {
            self.resend();
            self.poll(Duration::ZERO);
            if self.spool.is_empty() && self.broker.in_flight() == 0 {
                break;
            }
            let left = linger.saturating_sub(t0.elapsed());
            if left.is_zero() {
                break;
            }
            self.poll(left.min(TICK));
        }
        self.s.linger_s = t0.elapsed().as_secs_f64();
        if self.broker.in_flight() > 0 {
            self.given_back = Some(Vec::new());
            self.broker.purge();
            let t1 = Instant::now();
            while self.broker.in_flight() > 0 && t1.elapsed() < PURGE_WAIT {
                self.poll(TICK);
            }
            self.poll(Duration::ZERO);
            let stuck = self.broker.in_flight();
            if stuck > 0 {
                self.s.errors += stuck;
                self.s.last_error = Some(format!("{stuck} record(s) still in the Kafka client after it was purged"));
            }
        }
        let mut back = self.given_back.take().unwrap_or_default();
        back.sort_by_key(|(seq, _)| *seq);
        let head: Vec<Vec<u8>> = back.into_iter().map(|(_, f)| f).collect();
        self.s.left_in_spool = self.spool.records() + head.len() as u64;
        if let Err(e) = self.spool.close_with_head(&head) {
            self.s.last_error = Some(format!("closing the spool: {e}"));
        }
        self.s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tapstat_sink::spool::parse_frame;

    /// A broker that holds at most `room` records, delivers them in order while `up`,
    /// and keeps what it got.
    #[derive(Default)]
    struct Net {
        up: bool,
        room: usize,
        queue: Vec<(u64, Vec<u8>)>,
        got: Vec<Vec<u8>>,
        purged: bool,
    }

    struct Fake(Arc<Mutex<Net>>);

    impl Broker for Fake {
        fn send(&mut self, frame: &[u8], seq: u64) -> Sent {
            let mut n = self.0.lock().unwrap();
            if n.queue.len() >= n.room {
                return Sent::Full;
            }
            n.queue.push((seq, frame.to_vec()));
            Sent::Queued
        }
        fn poll(&mut self, wait: Duration, out: &mut Vec<Report>) {
            let mut n = self.0.lock().unwrap();
            if n.purged {
                for (seq, frame) in std::mem::take(&mut n.queue) {
                    out.push(Report {
                        seq,
                        outcome: Outcome::Undelivered { frame, error: "purged".into(), in_flight: seq % 2 == 0 },
                    });
                }
            } else if n.up {
                for (seq, frame) in std::mem::take(&mut n.queue) {
                    n.got.push(frame);
                    out.push(Report { seq, outcome: Outcome::Delivered });
                }
            }
            drop(n);
            std::thread::sleep(wait.min(Duration::from_millis(2)));
        }
        fn in_flight(&self) -> u64 {
            self.0.lock().unwrap().queue.len() as u64
        }
        fn purge(&mut self) {
            self.0.lock().unwrap().purged = true;
        }
        fn take_error(&mut self) -> Option<String> {
            None
        }
    }

    fn n_of(f: &[u8]) -> u64 {
        let (p, _) = parse_frame(f).unwrap();
        let v: serde_json::Value = serde_json::from_slice(p.value).unwrap();
        v["n"].as_u64().unwrap()
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tapstat-kafka-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Runs `n` records through an exporter over `net`, the broker going down after
    /// `down_at` records and up again after `up_at`; returns the summary.
    fn run(
        net: &Arc<Mutex<Net>>,
        spool: &Path,
        bound: u64,
        n: u64,
        down_at: u64,
        up_at: u64,
        linger: Duration,
    ) -> KafkaSummary {
        let e = Exporter::with(
            Box::new(Fake(net.clone())),
            None,
            Spool::open(spool, bound).unwrap(),
            KafkaSummary::default(),
            Vec::new(),
            linger,
            None,
        );
        let mut out = e.out().unwrap();
        for i in 0..n {
            if i == down_at {
                out.flush();
                std::thread::sleep(Duration::from_millis(20));
                net.lock().unwrap().up = false;
            }
            if i == up_at {
                out.flush();
                std::thread::sleep(Duration::from_millis(20));
                net.lock().unwrap().up = true;
            }
            let log: Log<()> = Log { name: "log_udp_complete", meaning: "", columns: Vec::new(), runs: Vec::new() };
            out.record(
                "log_udp_complete",
                &log,
                &format!("{i:016x}"),
                &(),
                Line::Json(format!("{{\"n\":{i}}}\n").as_bytes()),
            );
            if i % 100 == 99 {
                out.flush();
            }
        }
        out.flush();
        drop(out);
        e.finish().unwrap()
    }

    #[test]
    fn secrets_are_not_shown() {
        let c = KafkaConfig {
            brokers: "k:9092".into(),
            topic_prefix: "t".into(),
            spool_dir: None,
            spool_bytes: 1,
            linger: Duration::from_secs(1),
            options: vec![
                ("sasl.password".into(), "hunter2".into()),
                ("ssl.key.pem".into(), "-----BEGIN".into()),
                ("acks".into(), "all".into()),
            ],
            probe_id: None,
        };
        let d = format!("{c:?}");
        assert!(!d.contains("hunter2") && !d.contains("BEGIN") && d.contains("acks=all"), "{d}");
    }

    fn balanced(s: &KafkaSummary) -> bool {
        s.spool_at_start + s.records == s.delivered + s.errors + s.dropped + s.left_in_spool
    }

    /// The broker goes away and comes back: every record arrives once, in order; those
    /// that came while it was away went through the spool.
    #[test]
    fn an_outage_loses_nothing_and_keeps_the_order() {
        let d = scratch("outage");
        let net = Arc::new(Mutex::new(Net { up: true, room: 50, ..Default::default() }));
        let s = run(&net, &d, 1 << 30, 5000, 1000, 3000, Duration::from_secs(10));
        let got: Vec<u64> = net.lock().unwrap().got.iter().map(|f| n_of(f)).collect();
        assert_eq!(got, (0..5000).collect::<Vec<_>>());
        assert!(s.spooled >= 1900 && s.resent == s.spooled, "{s:?}");
        assert_eq!((s.delivered, s.dropped, s.errors, s.left_in_spool), (5000, 0, 0, 0));
        assert!(balanced(&s), "{s:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Past the bound records are dropped and counted; the others arrive in order.
    #[test]
    fn past_the_bound_records_are_dropped_and_counted() {
        let d = scratch("bound");
        let net = Arc::new(Mutex::new(Net { up: true, room: 10, ..Default::default() }));
        let s = run(&net, &d, 64 << 10, 10_000, 100, 9000, Duration::from_secs(10));
        let got: Vec<u64> = net.lock().unwrap().got.iter().map(|f| n_of(f)).collect();
        assert!(s.dropped > 0, "{s:?}");
        assert_eq!(got.len() as u64 + s.dropped, 10_000);
        assert!(got.windows(2).all(|w| w[0] < w[1]));
        assert!(balanced(&s), "{s:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A run that ends with the broker away leaves its records on disk, those the
    /// client held first; the next run sends them before its own.
    #[test]
    fn what_a_run_leaves_the_next_sends_first() {
        let d = scratch("next");
        let net = Arc::new(Mutex::new(Net { up: true, room: 30, ..Default::default() }));
        let s = run(&net, &d, 1 << 30, 1000, 400, u64::MAX, Duration::from_millis(100));
        assert!(balanced(&s), "{s:?}");
        assert_eq!(s.delivered + s.left_in_spool, 1000);
        assert!(s.left_in_spool >= 600 && s.maybe_delivered > 0, "{s:?}");
        // The next run: the broker is back.
        let delivered = s.delivered;
        {
            let mut n = net.lock().unwrap();
            n.up = true;
            n.purged = false;
        }
        let e = Exporter::with(
            Box::new(Fake(net.clone())),
            None,
            Spool::open(&d, 1 << 30).unwrap(),
            KafkaSummary::default(),
            Vec::new(),
            Duration::from_secs(10),
            None,
        );
        let s2 = e.finish().unwrap();
        assert_eq!(s2.spool_at_start, 1000 - delivered);
        assert_eq!((s2.delivered, s2.left_in_spool), (1000 - delivered, 0));
        assert!(balanced(&s2), "{s2:?}");
        let got: Vec<u64> = net.lock().unwrap().got.iter().map(|f| n_of(f)).collect();
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
