//! The engine: two front ends and one back end.
//!
//! ```text
//! files: reader ──► dispatchers: decode, key, hash ──rings──► workers ─┐
//! live:  acquisition ──► buffer (overload control) ──► workers ───────┤
//!                                                                      └─► record output ─► writer + exporters
//! ```
//!
//! - The file front end ([`run`], `file.rs`): a reader thread (`reader.rs`) hands chunks
//!   to dispatcher threads (`dispatch.rs`), which decode, hash and batch every packet for
//!   the worker that owns its flow; a single worker on a file reads and decodes itself.
//! - The live front end ([`run_live`], `live/`): per worker, an acquisition thread
//!   (`live/acquire.rs`) fills a lock-free byte buffer (`live/buffer.rs`) under overload
//!   control (`live/overload.rs`), and an analysis thread (`live/analysis.rs`) drains it.
//! - The back end, shared by both: a worker (`worker.rs`: its [`Tracker`] and its
//!   record output, `record_out.rs`) formats records into per-log blocks for the writer
//!   thread (`writer.rs`) and hands ended flows to the exporters (`export/`: IPFIX,
//!   Kafka); `backend.rs` starts them and merges what the workers hand back.
//!
//! Architecture invariant: a flow belongs to exactly one worker, chosen by the
//! symmetric flow hash; workers share no flow state and take no locks on the packet
//! path. Everything a worker decides, it decides from packet time, so the records of 1
//! worker and of N workers are the same set.
//!
//! [`Tracker`]: tapstat_analyze::Tracker

mod backend;
pub use backend::OUTPUT_BYTES_PER_WORKER;
mod dispatch;
mod export;
mod file;
mod flow_groups;
mod live;
pub mod memory;
mod migrate;
mod reader;
mod record_out;
mod ring;
mod schedule;
mod summary;
mod timing;
mod worker;
mod writer;

pub use export::ipfix::{IpfixConfig, IpfixSummary, Transport as IpfixTransport};
pub use export::kafka::{KafkaConfig, KafkaSummary, NO_KAFKA};
pub use file::run;
pub use live::acquire::Acquire;
pub use live::overload::{Keep, Overload, OverloadConfig};
pub use live::telemetry::{Gauges, WorkerStats};
pub use live::{run_live, LiveConfig, LiveSummary, OnReady, QueueDelay};
pub use ring::{ring, Receiver, Sender};
pub use schedule::Schedule;
pub use summary::{cpu_seconds, unkeyed_hash_warning, MemorySummary, SchedulingSummary, Summary, SUMMARY_KEYS};
pub use timing::{PacketTimeSummary, PacketTimer};
pub use writer::{interval_dir_name, interval_name, HISTOGRAMS};

use std::sync::atomic::AtomicU64;

use tapstat_analyze::TrackerConfig;
use tapstat_capture::CaptureError;
use tapstat_decode::DecodeConfig;
use tapstat_flow::HashKind;
use tapstat_sink::{Compress, Format, SinkError};

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
    /// Dispatcher threads with several workers on the offline path (0: one per four
    /// workers, see [`EngineConfig::dispatchers_for`]).
    pub dispatchers: usize,
    /// Which worker a flow's packets go to with several workers on the offline path.
    pub schedule: Schedule,
    /// Chunks per scheduling epoch (`balance`, `bundle`: bins move between epochs).
    pub epoch_chunks: u64,
    /// Flow-affinity batches: workers fed by dispatchers account each batch's packets
    /// grouped by flow, with the records of input order (see `flow_groups.rs`).
    pub flow_batches: bool,
    /// Export every ended flow to an IPFIX collector too (`--ipfix`).
    pub ipfix: Option<IpfixConfig>,
    /// Export every record to Kafka too (`--kafka`).
    pub kafka: Option<KafkaConfig>,
    /// The heap the process may use (`--memcap`), in bytes; 0 for no ceiling. Past it
    /// the workers shed state ([`memory`], `Tracker::relieve`).
    pub memcap: u64,
}

impl EngineConfig {
    /// The dispatcher threads for `workers` workers: as given, or one per four workers,
    /// never more than the workers. A dispatcher spends about a fifth of a worker's
    /// instructions on a packet (decoding, hashing, batching: ~700 of ~3,700 on a real
    /// traffic mix); one per four keeps the busiest thread a worker at 16 workers
    /// (docs/BENCHMARKS.md, "Scaling on real traffic").
    pub fn dispatchers_for(&self, workers: usize) -> usize {
        let d = if self.dispatchers > 0 { self.dispatchers } else { workers.div_ceil(4) };
        d.clamp(1, workers.max(1))
    }

    /// The workers of a file run on `cores` cores when `-w` is not given: the most
    /// whose threads doing the work — the workers and their default dispatchers —
    /// leave a core to the reader and the writer together (each takes about 1% of the
    /// instructions), so that the run starts no more busy threads than cores: 1 worker
    /// (reading and decoding inline) up to 3 cores, 2 + 1 dispatcher on 4, 5 + 2 on 8,
    /// 12 + 3 on 16.
    pub fn default_workers(cores: usize) -> usize {
        let fits = |w: usize| w + w.div_ceil(4) < cores;
        let mut w = 1;
        while w < 1024 && fits(w + 1) {
            w += 1;
        }
        w
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
            memcap: 0,
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

pub(crate) fn random_seed() -> u64 {
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

    /// By default a file run starts no more busy threads (workers and dispatchers)
    /// than cores, less one for the reader and the writer.
    #[test]
    fn default_workers_fit_the_cores() {
        let cfg = EngineConfig::default();
        for (cores, w) in [(1, 1), (2, 1), (3, 1), (4, 2), (8, 5), (16, 12), (64, 50)] {
            assert_eq!(EngineConfig::default_workers(cores), w, "{cores} cores");
        }
        for cores in 4..=256 {
            let w = EngineConfig::default_workers(cores);
            assert!(w + cfg.dispatchers_for(w) < cores, "{cores} cores: {w} workers");
        }
        assert_eq!((cfg.dispatchers_for(1), cfg.dispatchers_for(15), cfg.dispatchers_for(16)), (1, 4, 4));
    }
}
