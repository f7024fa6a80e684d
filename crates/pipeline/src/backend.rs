//! The back end both front ends share: the exporters, the writer thread and each
//! worker's record output at the start; at the end, what the workers, the writer and
//! the exporters hand back, merged into the summary's figures.
//!
//! ```text
//! worker 0: RecordOut ──ToWriter──┐                ┌─► OutputDir / stdout / interval dirs
//! worker 1: RecordOut ──ToWriter──┼─► writer thread┘
//!   ...        └── ended flows, records ──► exporters (IPFIX, Kafka), each its own thread
//! ```
//!
//! A front end starts the back end ([`Backend::start`]) before any packet is read, so
//! that an unreachable collector or an unwritable directory is an error before any
//! work; takes one [`RecordOut`] per worker ([`Backend::record_out`]); and once its
//! workers have ended, hands their results to [`Backend::finish`].

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tapstat_analyze::histo::Histo;
use tapstat_analyze::TrackerStats;

use crate::dispatch::DispatchResult;
use crate::export::{ipfix, kafka};
use crate::record_out::{LogFiles, RecordOut, ToWriter, NLOGS};
use crate::worker::WorkerResult;
use crate::writer::{open_output, Writer, WriterResult, Written};
use crate::{
    cpu_seconds, EngineConfig, EngineError, IpfixSummary, KafkaSummary, PacketTimeSummary, PacketTimer, Summary,
};
use tapstat_capture::CaptureStats;

/// Blocks each worker may have on their way to the writer.
const IN_FLIGHT: usize = 64;
/// Emptied blocks kept for reuse, per worker.
const FREE_PER_WORKER: usize = 16;

/// The most heap a worker's records take on their way to the writer: a block per log
/// being filled, the blocks in flight and the emptied ones kept (about 28 MiB), which
/// `--memcap` sets aside from each worker's share.
pub const OUTPUT_BYTES_PER_WORKER: usize =
    (IN_FLIGHT + FREE_PER_WORKER + crate::record_out::NLOGS) * crate::record_out::BLOCK_CAPACITY;

/// The running back end of an engine with `n` workers.
pub(crate) struct Backend {
    files: LogFiles,
    ipfix: Option<ipfix::Exporter>,
    kafka: Option<kafka::Exporter>,
    /// Each worker's channel to the writer, until its record output takes it.
    to_writer: Vec<Option<crossbeam_channel::Sender<ToWriter>>>,
    /// Emptied blocks back from the writer.
    free: crossbeam_channel::Receiver<Vec<u8>>,
    writer: std::thread::JoinHandle<WriterResult>,
}

/// What the back end hands back at the end of a run.
pub(crate) struct Ended {
    pub(crate) stats: TrackerStats,
    /// Records written per log, by file stem.
    pub(crate) records: Vec<(&'static str, u64)>,
    pub(crate) timers: Vec<PacketTimer>,
    pub(crate) histo: Option<Histo>,
    /// Flows the workers received from others (moved bins).
    pub(crate) moved_in: u64,
    /// Packets each worker accounted.
    pub(crate) per_worker_packets: Vec<u64>,
    pub(crate) written: Written,
    pub(crate) warnings: Vec<String>,
    pub(crate) ipfix: Option<IpfixSummary>,
    pub(crate) kafka: Option<KafkaSummary>,
}

impl Backend {
    /// Starts the exporters, opens the output (one directory or standard output; with
    /// `--rotate`, the directory the intervals' directories go in) and starts the writer
    /// thread for `n` workers. `flush`: live runs make what was written readable at
    /// least this often. `setup` adds to the writer before it starts (live runs: the
    /// reopen flags and the link histograms' feed).
    pub(crate) fn start(
        cfg: &EngineConfig,
        n: usize,
        stop: &Arc<AtomicBool>,
        flush: Option<Duration>,
        setup: impl FnOnce(&mut Writer),
    ) -> Result<Backend, EngineError> {
        // The collectors first, then the files: a collector that refuses the
        // connection is an error before the files exist.
        let ipfix = cfg.ipfix.as_ref().map(ipfix::Exporter::start).transpose()?;
        let kafka = cfg.kafka.as_ref().map(|k| kafka::Exporter::start(k, cfg)).transpose()?;
        let files = LogFiles::of(cfg);
        let single = match cfg.rotate {
            None => Some(open_output(cfg, &files)?),
            Some(_) if cfg.stdout => None,
            Some(_) => {
                // An unwritable directory is an error before any work.
                std::fs::create_dir_all(&cfg.out_dir)
                    .map_err(|source| tapstat_sink::SinkError { path: cfg.out_dir.clone(), source })?;
                None
            }
        };
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| crossbeam_channel::bounded::<ToWriter>(IN_FLIGHT)).unzip();
        let (free_tx, free) = crossbeam_channel::bounded::<Vec<u8>>(FREE_PER_WORKER * n);
        // A write error (a full disk) ends the run at once: analyzing traffic whose
        // records can no longer be written helps nobody. The writer sets `stop`.
        let mut w = Writer::new(cfg, &files, single, stop.clone(), flush);
        setup(&mut w);
        let writer = std::thread::Builder::new()
            .name("tapstat-writer".into())
            .spawn(move || w.run(rxs, free_tx))
            .expect("spawning a thread succeeds");
        Ok(Backend { files, ipfix, kafka, to_writer: txs.into_iter().map(Some).collect(), free, writer })
    }

    /// The record output of worker `w` (once per worker), to the writer and the
    /// exporters.
    pub(crate) fn record_out(&mut self, cfg: &EngineConfig, w: usize) -> RecordOut {
        let tx = self.to_writer[w].take().expect("one record output per worker");
        RecordOut::new(cfg, &self.files, tx, self.free.clone())
            .with_ipfix(self.ipfix.as_ref())
            .with_kafka(self.kafka.as_ref())
    }

    /// Merges the workers' `results` (in worker order), waits for the writer to write
    /// what they sent, and for the exporters to send what they were given.
    pub(crate) fn finish(self, results: Vec<WorkerResult>) -> Result<Ended, EngineError> {
        let Backend { files, ipfix, kafka, to_writer, free, writer } = self;
        drop(to_writer);
        drop(free);
        let mut stats = TrackerStats::default();
        let mut records = [0u64; NLOGS];
        let mut timers = Vec::with_capacity(results.len());
        let mut histo: Option<Histo> = None;
        let (mut moved_in, mut per_worker_packets) = (0, Vec::with_capacity(results.len()));
        for r in results {
            moved_in += r.moved_in;
            // A sum of counts: the same in any order.
            if let Some(h) = r.histo.as_deref() {
                match &mut histo {
                    Some(m) => m.merge(h),
                    None => histo = Some(h.clone()),
                }
            }
            per_worker_packets.push(r.stats.packets);
            stats.merge(&r.stats);
            timers.push(r.timer);
            for (total, n) in records.iter_mut().zip(r.records) {
                *total += n;
            }
        }
        let (written, warnings) = writer.join().map_err(|_| EngineError::Thread("writer"))?;
        let ipfix = ipfix.map(ipfix::Exporter::finish).transpose()?;
        let kafka = kafka.map(kafka::Exporter::finish).transpose()?;
        Ok(Ended {
            stats,
            records: files.records_by_log(&records),
            timers,
            histo,
            moved_in,
            per_worker_packets,
            written,
            warnings,
            ipfix,
            kafka,
        })
    }
}

/// When a run started, in wall-clock and process CPU time.
#[derive(Clone, Copy)]
pub(crate) struct Started {
    at: Instant,
    cpu_s: f64,
}

impl Started {
    pub(crate) fn now() -> Started {
        Started { at: Instant::now(), cpu_s: cpu_seconds() }
    }
}

impl Ended {
    /// The run's summary: what the front end counted before the workers (`disp`: frames,
    /// bytes, anomalies; `capture`: the source's figures, `warnings`), what the workers
    /// and the writer did, and the time since `started`. The front ends add their own.
    pub(crate) fn summary(
        &self,
        cfg: &EngineConfig,
        disp: &DispatchResult,
        capture: CaptureStats,
        warnings: Vec<String>,
        interrupted: bool,
        started: Started,
    ) -> Summary {
        Summary::new(
            cfg,
            self.per_worker_packets.len().max(1),
            &disp.anomalies,
            disp.non_ip,
            disp.frames,
            disp.wire_bytes,
            disp.first_ns,
            disp.last_ns,
            &self.stats,
            &self.records,
            capture,
            warnings,
            interrupted,
            started.at.elapsed().as_secs_f64(),
            cpu_seconds() - started.cpu_s,
        )
    }

    /// Puts what the back end knows into `s`: the timings of the packets, the link
    /// histograms and the exporters' figures.
    pub(crate) fn fill(self, s: &mut Summary) {
        s.packet_time = PacketTimeSummary::of(&self.timers);
        s.histograms = self.histo;
        s.set_ipfix(self.ipfix);
        s.set_kafka(self.kafka);
    }
}
