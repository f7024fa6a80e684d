//! The writer thread: blocks of records from every worker into the output directory,
//! standard output, or (`--rotate`) a directory per interval; and the link histograms
//! of live runs.

use crate::record_out::{LogFiles, ToWriter};
use crate::EngineConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tapstat_sink::{Compress, Format, OutputDir, SinkError};

/// The logs' files in the output directory, or standard output (`-o -`).
pub(crate) fn open_output(cfg: &EngineConfig, files: &LogFiles) -> Result<OutputDir, SinkError> {
    if !cfg.stdout {
        return OutputDir::create_compressed(&cfg.out_dir, &files.names, &files.headers, cfg.compress);
    }
    if cfg.format != Format::Jsonl {
        let source = std::io::Error::other("standard output takes JSON lines only (--format jsonl)");
        return Err(SinkError { path: "-".into(), source });
    }
    let logs: Vec<&str> = files.logs.iter().map(|l| l.name()).collect();
    OutputDir::stdout(&logs, cfg.compress)
}

/// What the writer thread hands back: how writing went, and its warnings.
pub(crate) type WriterResult = (Written, Vec<String>);

/// What the writer thread did: the first write error, and the records it could not
/// write (those of the block that failed, and of every block after it).
#[derive(Debug, Default)]
pub(crate) struct Written {
    pub(crate) error: Option<SinkError>,
    /// Standard output's reader left (`| head`): the run stops, without an error.
    pub(crate) closed: bool,
    pub(crate) lost: u64,
}

impl Written {
    /// Whether writing has stopped (an error, or a reader that left).
    pub(crate) fn stopped(&self) -> bool {
        self.error.is_some() || self.closed
    }

    /// Takes the first failure: sets `stop`, which the reader and the dispatchers (or
    /// the acquisition threads) watch, so the run ends promptly instead of analyzing
    /// the rest of the input for nothing.
    pub(crate) fn fail(&mut self, e: SinkError, stop: &AtomicBool) {
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
    pub(crate) fn lose(&mut self, records: u64) {
        self.lost += records;
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
    pub(crate) out_dir: PathBuf,
    pub(crate) names: Vec<String>,
    pub(crate) headers: Vec<Vec<u8>>,
    pub(crate) compress: Compress,
    /// The rotation period (for the intervals' names).
    pub(crate) period_ns: u64,
    /// Without rotation: the one output directory.
    pub(crate) single: Option<OutputDir>,
    /// With rotation: open intervals by start (epoch s), written under a hidden name.
    pub(crate) intervals: BTreeMap<u64, OutputDir>,
    /// Intervals before this one are closed.
    pub(crate) closed_below: u64,
    /// The interval each worker writes to.
    pub(crate) cur: Vec<Option<u64>>,
    pub(crate) reopen: &'static AtomicBool,
    /// Set when the files were reopened, for the reporter to reopen stats.jsonl.
    pub(crate) reopen_stats: Arc<AtomicBool>,
    pub(crate) warnings: Vec<String>,
    /// Set at the first failure, to end the run.
    pub(crate) stop: Arc<AtomicBool>,
    /// Live runs: what was written is made readable at least this often, and whenever
    /// no block came for a while (compressed files end a frame, standard output is
    /// flushed; see [`OutputDir::flush`]).
    pub(crate) flush: Option<Duration>,
    /// Live runs with link histograms: the intervals every worker has closed.
    pub(crate) histo: Option<HistoWriter>,
}

/// The writer's side of a live run's link histograms: what the workers closed, merged,
/// written an interval at a time (histograms.tsv, or JSON lines with `-o -`; with
/// `--rotate`, the histograms.tsv of each interval's directory) once every worker has
/// reported a clock past the interval's end. Intervals go out in order, each once and
/// whole, so the files end as a file run's would.
pub(crate) struct HistoWriter {
    pub(crate) rx: crossbeam_channel::Receiver<HistoReport>,
    pub(crate) interval_ns: u64,
    /// Each worker's last clock (0: none yet; `u64::MAX`: ended).
    pub(crate) marks: Vec<u64>,
    /// Intervals closed by some workers, not yet written.
    pub(crate) acc: Option<tapstat_analyze::histo::Histo>,
    pub(crate) path: PathBuf,
    pub(crate) stdout: bool,
    /// histograms.tsv at the top (without `--rotate`), created at the first write
    /// (after any privilege drop, as the logs' owner would).
    pub(crate) file: Option<std::fs::File>,
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
    pub(crate) fn add(&mut self, r: HistoReport) -> Option<tapstat_analyze::histo::Histo> {
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
    pub(crate) fn written_upto(&self) -> u64 {
        self.marks.iter().copied().min().unwrap_or(0)
    }

    /// The intervals that ended by `upto`, none when there are none.
    pub(crate) fn take(&mut self, upto: u64) -> Option<tapstat_analyze::histo::Histo> {
        let done = match &mut self.acc {
            Some(a) if upto > 0 => a.take_before(upto),
            _ => return None,
        };
        (!done.is_empty()).then_some(done)
    }

    /// Whether every histogram interval that starts before `end_ns` was written: the
    /// last of them ends at the first multiple of the interval at or after `end_ns`.
    pub(crate) fn written_before(&self, end_ns: u64) -> bool {
        self.written_upto() >= end_ns.div_ceil(self.interval_ns).saturating_mul(self.interval_ns)
    }

    /// Appends rows to histograms.tsv at the top of the output directory.
    pub(crate) fn append_top(&mut self, rows: &str) -> Result<(), SinkError> {
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

/// What a worker tells the writer about the link histograms.
pub(crate) struct HistoReport {
    pub(crate) worker: usize,
    /// The worker's clock: nothing more will be due before it (`u64::MAX`: the
    /// worker has ended, and `closed` holds all it had left).
    pub(crate) mark_ns: u64,
    /// The intervals the worker has closed, ended by `mark_ns`.
    pub(crate) closed: tapstat_analyze::histo::Histo,
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
        files: &LogFiles,
        single: Option<OutputDir>,
        stop: Arc<AtomicBool>,
        flush: Option<Duration>,
    ) -> Writer {
        Writer {
            out_dir: cfg.out_dir.clone(),
            names: files.names.clone(),
            headers: files.headers.clone(),
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

    pub(crate) fn part_path(&self, start: u64) -> PathBuf {
        self.out_dir.join(format!(".{}.part", interval_name(start, self.period_ns)))
    }

    pub(crate) fn final_path(&self, start: u64) -> PathBuf {
        self.out_dir.join(interval_name(start, self.period_ns))
    }

    /// Writes what the workers send until every one has gone. At the first failure
    /// it stops the run and counts the records it could not write from then on.
    pub(crate) fn run(
        mut self,
        rxs: Vec<crossbeam_channel::Receiver<ToWriter>>,
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
                        Ok(ToWriter::Records { file, bytes }) if out.stopped() => {
                            out.lose(tapstat_sink::records_in(&self.headers[file], &bytes));
                            Ok(())
                        }
                        Ok(ToWriter::Interval { .. }) if out.stopped() => Ok(()),
                        Ok(ToWriter::Interval { start_s }) => self.enter(w, start_s),
                        Ok(ToWriter::Records { file: i, bytes: mut b }) => {
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

    pub(crate) fn flush_all(&mut self) -> Result<(), SinkError> {
        if let Some(o) = &mut self.single {
            o.flush()?;
        }
        for o in self.intervals.values_mut() {
            o.flush()?;
        }
        Ok(())
    }

    pub(crate) fn dir_for(&mut self, start: u64) -> Result<&mut OutputDir, SinkError> {
        if !self.intervals.contains_key(&start) {
            let o = if start < self.closed_below && self.final_path(start).exists() {
                // A late worker: its interval was closed already; add to it. (An
                // interval below that never had a directory, e.g. one with histogram
                // rows but no records yet, gets its part name like any other, so that
                // no directory has its final name before its histograms.)
                OutputDir::open_append_compressed(&self.final_path(start), &self.names, &self.headers, self.compress)?
            } else {
                OutputDir::create_compressed(&self.part_path(start), &self.names, &self.headers, self.compress)?
            };
            self.intervals.insert(start, o);
        }
        Ok(self.intervals.get_mut(&start).expect("inserted above"))
    }

    pub(crate) fn append(&mut self, w: usize, i: usize, b: &[u8]) -> Result<(), SinkError> {
        if let Some(o) = &mut self.single {
            return o.append(i, b);
        }
        // A worker announces its interval before its first record.
        let start = self.cur[w].unwrap_or(self.closed_below);
        self.dir_for(start)?.append(i, b)
    }

    pub(crate) fn enter(&mut self, w: usize, start: u64) -> Result<(), SinkError> {
        self.cur[w] = Some(start);
        self.dir_for(start)?;
        self.close_passed()
    }

    /// Closes every interval no worker writes to any more and, with link histograms,
    /// whose histogram intervals have all been written, so that a directory with its
    /// final name is complete.
    pub(crate) fn close_passed(&mut self) -> Result<(), SinkError> {
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
    pub(crate) fn write_histo(&mut self, done: Option<tapstat_analyze::histo::Histo>) -> Result<(), SinkError> {
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
    pub(crate) fn close(&mut self, start: u64) -> Result<(), SinkError> {
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

    pub(crate) fn reopen_all(&mut self) -> Result<(), SinkError> {
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

pub(crate) static NEVER: AtomicBool = AtomicBool::new(false);

#[cfg(test)]
mod tests {
    use super::*;

    /// A full disk (`/dev/full` fails every write with ENOSPC): the writer sets the stop
    /// flag at the first failure, so the reader and the dispatcher end the run, and
    /// counts every record it could not write, the failed block's and the later ones.
    #[test]
    fn a_write_error_stops_the_run_and_counts_what_was_lost() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full exists");
        let out = OutputDir::from_files(std::path::Path::new("/dev"), vec![("/dev/full".into(), full)]);
        let (tx, rx) = crossbeam_channel::bounded::<ToWriter>(8);
        let (free_tx, _free_rx) = crossbeam_channel::bounded::<Vec<u8>>(8);
        for b in [&b"a\nb\n"[..], b"c\nd\ne\n", b"f\ng\nh\ni\n"] {
            tx.send(ToWriter::Records { file: 0, bytes: b.to_vec() }).unwrap();
        }
        drop(tx);
        let stop = Arc::new(AtomicBool::new(false));
        let files = LogFiles {
            logs: vec![tapstat_analyze::logs::LogId::TcpComplete],
            names: vec!["full".into()],
            headers: vec![Vec::new()],
        };
        let writer = Writer::new(&EngineConfig::default(), &files, Some(out), stop.clone(), None);
        let (w, _) = writer.run(vec![rx], free_tx);
        assert!(stop.load(Ordering::SeqCst), "a write error must stop the run");
        let e = w.error.expect("the error is kept");
        assert_eq!(e.source.raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(w.lost, 9);
    }

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
