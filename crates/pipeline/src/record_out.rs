//! A worker's record output: records formatted into one buffer per log, handed to
//! the writer in blocks, and to the exporters.

use crate::EngineConfig;
use std::collections::BTreeMap;

use tapstat_analyze::l7log::{self, DnsRow, HttpRow};
use tapstat_analyze::logs::{LogId, LogVisitor};
use tapstat_analyze::periodic::{self, PeriodicRow};
use tapstat_analyze::{Flow, FlowSink, Kind, TcpSets};
use tapstat_sink::Format;

/// How many logs there are: the length of the per-log tables, indexed by
/// `LogId as usize`.
pub(crate) const NLOGS: usize = LogId::COUNT;

/// What a worker sends the writer.
#[derive(Debug)]
pub(crate) enum ToWriter {
    /// Formatted records of output file `file` (its place in [`LogFiles`]).
    Records { file: usize, bytes: Vec<u8> },
    /// With `--rotate`: the records that follow go to the interval starting at
    /// `start_s` (epoch seconds), until the next such message.
    Interval { start_s: u64 },
}

/// A log's buffer goes to the writer once it holds this many bytes.
pub(crate) const BLOCK_BYTES: usize = 256 * 1024;

/// What a buffer is allocated with: a block and room for the record that crosses
/// [`BLOCK_BYTES`], so that record does not make the vector grow. A vector grows by
/// copying itself into a new one twice its size (mimalloc moves large blocks by copy),
/// and an exact-size buffer did that once per block: about 1% of the full sets'
/// instructions on mix-small, plus the page faults of the new block.
pub(crate) const BLOCK_CAPACITY: usize = BLOCK_BYTES + 64 * 1024;

/// A worker's record formatter: one buffer per log, handed to the writer when full.
/// The writer sends emptied buffers back (`free`), so blocks are not allocated,
/// faulted in and unmapped again for every 256 KiB of records.
pub(crate) struct RecordOut {
    pub(crate) format: Format,
    pub(crate) sets: TcpSets,
    pub(crate) l7: bool,
    /// The output file of each log (the files of logs that are off are not created).
    pub(crate) file: [usize; NLOGS],
    pub(crate) bufs: [Vec<u8>; NLOGS],
    pub(crate) records: [u64; NLOGS],
    pub(crate) tx: crossbeam_channel::Sender<ToWriter>,
    pub(crate) free: crossbeam_channel::Receiver<Vec<u8>>,
    /// Ended flows as IPFIX records too (`--ipfix`).
    pub(crate) ipfix: Option<crate::export::ipfix::IpfixOut>,
    /// Every record to Kafka too (`--kafka`).
    pub(crate) kafka: Option<crate::export::kafka::KafkaOut>,
    /// Where records go in time, with `--rotate`.
    pub(crate) rotation: Option<Box<Rotation>>,
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
pub(crate) struct Rotation {
    pub(crate) period_ns: u64,
    /// Start (ns) of the interval of the worker's clock.
    pub(crate) cur: Option<u64>,
    /// Records go to the interval they were due in (file runs), not to `cur`.
    pub(crate) by_due: bool,
    /// The earlier interval the records being written now belong to.
    pub(crate) target: Option<u64>,
    pub(crate) late: BTreeMap<u64, [Vec<u8>; NLOGS]>,
}

impl RecordOut {
    /// Hands every non-empty buffer to the writer (and the IPFIX records to the
    /// exporter).
    pub(crate) fn flush_all(&mut self) {
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
    pub(crate) fn follow(&mut self, now_ns: u64) {
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
    pub(crate) fn enter(&mut self, now_ns: u64) {
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
    pub(crate) fn announce(&mut self, start_ns: u64) {
        // The writer only goes away on an I/O error, which it reports itself.
        let _ = self.tx.send(ToWriter::Interval { start_s: start_ns / 1_000_000_000 });
    }

    /// Hands the writer the waiting records of earlier interval `only`, or of every
    /// one, each under its interval, then puts the worker back in its own.
    pub(crate) fn send_late(&mut self, only: Option<u64>) {
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
                    let _ = self.tx.send(ToWriter::Records { file: self.file[i], bytes: b });
                }
            }
        }
        if let Some(c) = cur {
            self.announce(c);
        }
    }

    pub(crate) fn flush(&mut self, i: usize) {
        if !self.bufs[i].is_empty() {
            let fresh = self.free.try_recv().unwrap_or_else(|_| Vec::with_capacity(BLOCK_CAPACITY));
            let b = std::mem::replace(&mut self.bufs[i], fresh);
            // The writer only goes away on an I/O error, which it reports itself.
            let _ = self.tx.send(ToWriter::Records { file: self.file[i], bytes: b });
        }
    }

    pub(crate) fn new(
        cfg: &EngineConfig,
        files: &LogFiles,
        tx: crossbeam_channel::Sender<ToWriter>,
        free: crossbeam_channel::Receiver<Vec<u8>>,
    ) -> RecordOut {
        RecordOut {
            format: cfg.format,
            sets: cfg.tracker.tcp_sets,
            l7: cfg.tracker.l7.is_some(),
            file: files.file_of_log(),
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
    pub(crate) fn by_due(mut self) -> Self {
        if let Some(r) = self.rotation.as_mut() {
            r.by_due = true;
        }
        self
    }

    /// The same, with the records exported to Kafka's `exporter` too.
    pub(crate) fn with_kafka(mut self, exporter: Option<&crate::export::kafka::Exporter>) -> RecordOut {
        self.kafka = exporter.and_then(crate::export::kafka::Exporter::out);
        self
    }

    /// The same, with the flows exported to `exporter` too.
    pub(crate) fn with_ipfix(mut self, exporter: Option<&crate::export::ipfix::Exporter>) -> RecordOut {
        self.ipfix = exporter.and_then(crate::export::ipfix::Exporter::out);
        self
    }
}

impl RecordOut {
    /// The buffer of log `i`, allocated whole at its first record (a log that gets no
    /// record costs no memory).
    #[inline]
    pub(crate) fn buf(&mut self, i: usize) -> &mut Vec<u8> {
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
    pub(crate) fn put<T>(&mut self, i: usize, name: &str, log: &tapstat_record::Log<T>, rec: &T, key: &str) {
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
                Format::Jsonl => crate::export::kafka::Line::Json(&b[start..]),
                Format::Tsv => crate::export::kafka::Line::Tsv(&b[start..]),
                Format::Parquet => crate::export::kafka::Line::Other,
            };
            k.record(name, log, key, rec, line);
        }
        self.wrote(i);
    }

    pub(crate) fn wrote(&mut self, i: usize) {
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
    pub(crate) fn late_target(&self) -> Option<u64> {
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
        self.put(LogId::Http as usize, l7log::HTTP.name, &l7log::HTTP, row, row.flow.flow_id.as_str());
    }

    fn on_dns(&mut self, row: &DnsRow) {
        self.put(LogId::Dns as usize, l7log::DNS.name, &l7log::DNS, row, row.flow.flow_id.as_str());
    }

    fn on_periodic(&mut self, row: &PeriodicRow) {
        let (i, log) = match row.kind {
            Kind::Tcp => (LogId::TcpPeriodic as usize, &*periodic::TCP_PERIODIC),
            _ => (LogId::UdpPeriodic as usize, &*periodic::UDP_PERIODIC),
        };
        self.put(i, log.name, log, row, row.flow_id.as_str());
    }
}

/// The logs a run writes, in the order of their files, and each file's name and header.
/// The periodic logs come with `--periodic`, the HTTP and DNS logs with the application
/// layer.
pub(crate) struct LogFiles {
    pub(crate) logs: Vec<LogId>,
    pub(crate) names: Vec<String>,
    pub(crate) headers: Vec<Vec<u8>>,
}

impl LogFiles {
    pub(crate) fn of(cfg: &EngineConfig) -> LogFiles {
        let (periodic, l7) = (cfg.tracker.periodic_ns > 0, cfg.tracker.l7.is_some());
        let logs: Vec<LogId> = LogId::ALL.into_iter().filter(|l| l.written(periodic, l7)).collect();
        let names = logs.iter().map(|l| cfg.format.file_name(l.name()) + cfg.compress.suffix()).collect();
        let headers = logs.iter().map(|l| l.visit(cfg.tracker.tcp_sets, l7, Header(cfg.format))).collect();
        LogFiles { logs, names, headers }
    }

    /// The output file of each log (`usize::MAX` for a log that is off).
    pub(crate) fn file_of_log(&self) -> [usize; NLOGS] {
        let mut file = [usize::MAX; NLOGS];
        for (pos, l) in self.logs.iter().enumerate() {
            file[*l as usize] = pos;
        }
        file
    }

    /// Records written per log, by file stem, for the summary.
    pub(crate) fn records_by_log(&self, records: &[u64; NLOGS]) -> Vec<(&'static str, u64)> {
        self.logs.iter().map(|l| (l.name(), records[*l as usize])).collect()
    }
}

/// A log's header line(s) in a format.
struct Header(Format);

impl LogVisitor for Header {
    type Out = Vec<u8>;
    fn visit<T>(self, log: &tapstat_record::Log<T>) -> Vec<u8> {
        let mut h = Vec::new();
        self.0.header(log, &mut h);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `--rotate` on files, a record goes to the interval it was due in: one due
    /// in an interval the worker has left waits, and goes out under that interval when
    /// the worker enters the next one; the worker's own records go to its own.
    #[test]
    fn rotation_sends_late_records_under_their_interval() {
        const S: u64 = 1_000_000_000;
        let cfg = EngineConfig { rotate: Some(std::time::Duration::from_secs(60)), ..EngineConfig::default() };
        let (tx, rx) = crossbeam_channel::unbounded::<ToWriter>();
        let (_free_tx, free_rx) = crossbeam_channel::bounded::<Vec<u8>>(1);
        let mut r = RecordOut::new(&cfg, &LogFiles::of(&cfg), tx, free_rx).by_due();
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
            .map(|m| match m {
                ToWriter::Interval { start_s } => format!("@{start_s}"),
                ToWriter::Records { bytes, .. } => String::from_utf8(bytes).unwrap(),
            })
            .collect();
        assert_eq!(got, ["@0", "a\n", "@60", "b\n", "@0", "late\n", "@60", "@120"]);
    }
}
