//! Sinks: records to bytes ([`Format`]: TSV, JSON lines, or rows for Parquet) and
//! bytes to files ([`OutputDir`]).
//!
//! ```
//! use tapstat_record::{Column, Field, Log, Type, Value};
//! use tapstat_sink::Format;
//! struct R { n: u64 }
//! let log = Log { name: "log_x", meaning: "", columns: vec![Column {
//!     field: Field { name: "n", ty: Type::U64, unit: "", meaning: "", group: "" },
//!     get: |r: &R| Value::U64(r.n) }], runs: Vec::new() };
//! let mut out = Vec::new();
//! Format::Tsv.header(&log, &mut out);
//! Format::Tsv.record(&log, &R { n: 7 }, &mut out);
//! assert_eq!(out, b"n\n7\n");
//! ```
//!
//! A record of a log declared in runs (all of tapstat's logs but the periodic ones)
//! is written by the runs' generated writers ([`tapstat_record::Run`]), TSV or JSON,
//! after one capacity reservation for the row; the last tab (or comma) becomes the line
//! end (or closing brace). Logs declared column by column are written through each
//! column's getter and [`tapstat_record::tsv::value`] or
//! [`tapstat_record::json::value`], the same encoders: see `tapstat_record`, "Cheap
//! rows", for what keeps them cheap.
//!
//! Formatting happens in the workers (in parallel, into per-worker buffers); only
//! [`OutputDir`] touches files, from one writer thread, which also compresses them
//! ([`Compress`]) or streams every log to standard output ([`OutputDir::stdout`]).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tapstat_record::{Log, Type, Value};

pub mod broker;
pub mod columnar;
pub mod ipfix;
#[cfg(feature = "kafka")]
pub mod kafka;
#[cfg_attr(not(feature = "parquet"), path = "parquet_off.rs")]
pub mod parquet;
mod reopen;
pub mod spool;

/// How records are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Tab-separated values with a header line of column names, an empty field for no
    /// value, strings escaped ([`tapstat_record::tsv::str_value`]): what
    /// `pandas.read_csv(f, sep="\t")` and DuckDB's `read_csv(f)` read without options.
    #[default]
    Tsv,
    /// One JSON object per line, keys = column names (`null` for no value, and for an
    /// empty string): each key has one JSON type in every record.
    Jsonl,
    /// Parquet (built with the `parquet` feature): typed columns, nulls for no value,
    /// zstd. The workers write each record as a row of typed values ([`columnar`]);
    /// the output directory, in the writer thread, makes the file of them.
    Parquet,
}

impl Format {
    /// The format's name (`--format`, summary.json).
    pub fn name(self) -> &'static str {
        match self {
            Format::Tsv => "tsv",
            Format::Jsonl => "jsonl",
            Format::Parquet => "parquet",
        }
    }

    /// The file name of log `name` in this format.
    pub fn file_name(self, name: &str) -> String {
        match self {
            Format::Tsv => name.to_string(),
            Format::Jsonl => format!("{name}.jsonl"),
            Format::Parquet => format!("{name}.parquet"),
        }
    }

    /// The header of a log's file (nothing for JSON lines, whose keys name themselves;
    /// for Parquet, the log's schema, which [`OutputDir`] makes the file of).
    pub fn header<T>(self, log: &Log<T>, out: &mut Vec<u8>) {
        if self == Format::Parquet {
            columnar::header(log, out);
        }
        if self == Format::Tsv {
            for (i, f) in log.fields().enumerate() {
                if i > 0 {
                    out.push(b'\t');
                }
                out.extend_from_slice(f.name.as_bytes());
            }
            out.push(b'\n');
        }
    }

    /// Appends one record of `log` to `out`.
    pub fn record<T>(self, log: &Log<T>, rec: &T, out: &mut Vec<u8>) {
        match self {
            Format::Tsv => {
                // One capacity check per record rather than per value.
                out.reserve(64 * log.columns.len());
                if !log.runs.is_empty() {
                    // The writers generated with the columns: each value and a tab; the
                    // last tab becomes the line end.
                    let start = out.len();
                    for r in &log.runs {
                        r.write_tsv(rec, out);
                    }
                    if out.len() > start {
                        out.pop();
                    }
                    out.push(b'\n');
                    return;
                }
                for (i, c) in log.columns.iter().enumerate() {
                    if i > 0 {
                        out.push(b'\t');
                    }
                    tsv_value((c.get)(rec), out);
                }
            }
            Format::Jsonl => {
                out.push(b'{');
                if !log.runs.is_empty() {
                    // The writers generated with the columns: each member and a comma;
                    // the last comma becomes the closing brace.
                    out.reserve(64 * log.columns.len());
                    for r in &log.runs {
                        r.write_json(rec, out);
                    }
                    if out.last() == Some(&b',') {
                        out.pop();
                    }
                    out.extend_from_slice(b"}\n");
                    return;
                }
                for (i, c) in log.columns.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.push(b'"');
                    out.extend_from_slice(c.field.name.as_bytes());
                    out.extend_from_slice(b"\":");
                    // A list without items is `[]`, never `null`: for lists, absent and
                    // empty are the same (docs/DEPLOYMENT.md, "Lists"); times as
                    // `--time-format` says.
                    tapstat_record::json::column_value(c.field.ty, (c.get)(rec), out);
                }
                out.push(b'}');
            }
            Format::Parquet => return columnar::record(log, rec, out),
        }
        out.push(b'\n');
    }
}

use tapstat_record::json::{json_str, value as json_value};
use tapstat_record::tsv::value as tsv_value;
#[cfg(test)]
use tapstat_record::tsv::{f64_value, ip_value, micros_value, push_u64};

/// For the Kafka export of a TSV run, whose JSON the exporter thread makes from the TSV
/// line instead of the worker ([`json_from_tsv`]): appends what the line cannot give
/// back without parsing it, the JSON of each `strings` column (TSV escapes and may
/// quote its items), each after a line feed (which neither TSV nor JSON holds raw).
pub fn json_side<T>(log: &Log<T>, rec: &T, out: &mut Vec<u8>) {
    for c in &log.columns {
        if c.field.ty == Type::Strs {
            out.push(b'\n');
            match (c.get)(rec) {
                Value::None => out.extend_from_slice(b"[]"),
                v => json_value(v, out),
            }
        }
    }
}

/// The JSON object [`Format::Jsonl`] writes for a record of a log of `fields` (without
/// the line end), rebuilt from its TSV line followed by its [`json_side`]: the same
/// bytes, made off the packet path. `None` when `tsv` does not have the fields' shape.
pub fn json_from_tsv(fields: &[tapstat_record::Field], tsv: &[u8], out: &mut Vec<u8>) -> Option<()> {
    json_from_tsv_in(fields, tsv, tapstat_record::json::time_format(), out)
}

/// [`json_from_tsv`] with times as `times` says.
fn json_from_tsv_in(
    fields: &[tapstat_record::Field],
    tsv: &[u8],
    times: tapstat_record::json::TimeFormat,
    out: &mut Vec<u8>,
) -> Option<()> {
    let mut parts = tsv.split(|&b| b == b'\n');
    let mut values = parts.next()?.split(|&b| b == b'\t');
    out.push(b'{');
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(f.name.as_bytes());
        out.extend_from_slice(b"\":");
        let v = values.next()?;
        match f.ty {
            Type::Strs => out.extend_from_slice(parts.next()?),
            Type::Counts | Type::Durations if v.is_empty() => out.extend_from_slice(b"[]"),
            _ if v.is_empty() => out.extend_from_slice(b"null"),
            Type::Time if times != tapstat_record::json::TimeFormat::EpochMs => {
                tapstat_record::json::time_value(micros_of_ms(v)?, times, out)
            }
            Type::U64 | Type::F64 | Type::Time | Type::Counts | Type::Durations => out.extend_from_slice(v),
            Type::Ip => {
                out.push(b'"');
                out.extend_from_slice(v);
                out.push(b'"');
            }
            Type::Bool => out.extend_from_slice(match v {
                b"1" => b"true",
                b"0" => b"false",
                _ => return None,
            }),
            Type::Str => json_str(&tapstat_record::tsv::unescape(std::str::from_utf8(v).ok()?), out),
        }
    }
    if values.next().is_some() || parts.next().is_some() {
        return None;
    }
    out.push(b'}');
    Some(())
}

/// The microseconds of a time TSV writes in milliseconds with 3 decimals
/// (`1582454770123.456`).
fn micros_of_ms(v: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?;
    let (ms, frac) = s.split_once('.')?;
    if frac.len() != 3 {
        return None;
    }
    ms.parse::<u64>().ok()?.checked_mul(1000)?.checked_add(frac.parse::<u64>().ok()?)
}

/// Creates `path` afresh: whatever entry has that name is unlinked first (a symbolic
/// link or a hard link is removed, its target untouched), and the file is created
/// with `O_EXCL`, which refuses to follow a symbolic link planted in between. The
/// output directory may belong to another user (`--user`): a root process must never
/// truncate or write through a name that user can point elsewhere.
pub fn create_fresh(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| explain_link(path, e))
}

/// Opens `path` for appending, creating it if missing, without following a symbolic
/// link (`O_NOFOLLOW`) and refusing anything but a regular file with one name (a hard
/// link to another file would be written through).
pub fn open_append_nofollow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| explain_link(path, e))?;
    let m = f.metadata()?;
    if !m.is_file() || m.nlink() != 1 {
        return Err(io::Error::other("not a regular file with a single name; refusing to write to it"));
    }
    Ok(f)
}

/// ELOOP from `O_NOFOLLOW` (or EEXIST from `O_EXCL` racing a new link) says little
/// to a user; name the cause.
fn explain_link(path: &Path, e: io::Error) -> io::Error {
    let is_link = std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink()).unwrap_or(false);
    if e.raw_os_error() == Some(libc::ELOOP) || is_link {
        io::Error::other(format!("is a symbolic link; refusing to follow it ({e})"))
    } else {
        e
    }
}

/// Errors of the output directory.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}")]
pub struct SinkError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl SinkError {
    /// The reader of the stream left (`tapstat -o - | head`): EPIPE, which only a pipe
    /// or a socket gives, never a log file tapstat created. Not a failure: nobody
    /// wants the rest.
    pub fn reader_left(&self) -> bool {
        self.source.kind() == io::ErrorKind::BrokenPipe
    }
}

/// How log files are compressed (`--compress`), by the writer thread, through a
/// streaming encoder: the workers' buffers are never copied for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Compress {
    #[default]
    None,
    /// Zstandard, level 3 (`.zst`; `zstdcat`).
    Zstd,
    /// gzip (deflate), level 6 (`.gz`; `zcat`).
    Gzip,
}

/// zstd's default level: about as fast as the writer gets blocks, a third of the size.
const ZSTD_LEVEL: i32 = 3;

impl Compress {
    /// What the file names end with.
    pub fn suffix(self) -> &'static str {
        match self {
            Compress::None => "",
            Compress::Zstd => ".zst",
            Compress::Gzip => ".gz",
        }
    }
}

/// Writes `b` to `w` as one whole zstd frame or gzip member (`c`), or as it is: a
/// stream that already holds frames stays one stream (the link histograms after the
/// records of `-o - --compress`).
pub fn write_compressed<W: Write>(w: W, c: Compress, b: &[u8]) -> io::Result<W> {
    match c {
        Compress::None => {
            let mut w = w;
            w.write_all(b)?;
            Ok(w)
        }
        Compress::Zstd => {
            let mut e = zstd::stream::write::Encoder::new(w, ZSTD_LEVEL)?;
            e.write_all(b)?;
            e.finish()
        }
        Compress::Gzip => {
            let mut e = flate2::write::GzEncoder::new(w, flate2::Compression::default());
            e.write_all(b)?;
            e.finish()
        }
    }
}

/// Where a log's bytes go: its file, or standard output.
enum Dest {
    File(File),
    Stdout(io::Stdout),
}

impl Write for Dest {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Dest::File(f) => f.write(b),
            Dest::Stdout(o) => o.write(b),
        }
    }

    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Dest::File(f) => f.write_all(b),
            Dest::Stdout(o) => o.write_all(b),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Dest::File(f) => f.flush(),
            Dest::Stdout(o) => o.flush(),
        }
    }
}

/// A log's writer: plain, or through a compressor.
enum Out {
    Plain(Dest),
    Zstd(zstd::stream::write::Encoder<'static, Dest>),
    Gzip(flate2::write::GzEncoder<Dest>),
    /// A frame could not be ended: nothing more goes to this log (the error that
    /// caused it stops the run).
    Broken,
}

impl Out {
    fn new(d: Dest, c: Compress) -> io::Result<Out> {
        Ok(match c {
            Compress::None => Out::Plain(d),
            Compress::Zstd => Out::Zstd(zstd::stream::write::Encoder::new(d, ZSTD_LEVEL)?),
            Compress::Gzip => Out::Gzip(flate2::write::GzEncoder::new(d, flate2::Compression::default())),
        })
    }

    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Out::Plain(d) => d.write_all(b),
            Out::Zstd(e) => e.write_all(b),
            Out::Gzip(e) => e.write_all(b),
            Out::Broken => Err(io::Error::other("an earlier write failed")),
        }
    }

    /// [`Out::write_all`], and for a plain file, all or nothing: a write that fails
    /// part way (a full disk) is cut back off, so the file ends with the last whole
    /// block, never within a record. (A compressed file's stream cannot be cut back:
    /// it ends where the failure left it.)
    fn write_whole(&mut self, b: &[u8]) -> io::Result<()> {
        let Out::Plain(Dest::File(f)) = self else { return self.write_all(b) };
        let len = f.metadata()?.len();
        f.write_all(b).inspect_err(|_| {
            use std::io::Seek;
            // Best effort: the write's own error is the one to report.
            let _ = f.set_len(len).and_then(|()| f.seek(io::SeekFrom::Start(len)));
        })
    }

    fn dest(&self) -> Option<&Dest> {
        match self {
            Out::Plain(d) => Some(d),
            Out::Zstd(e) => Some(e.get_ref()),
            Out::Gzip(e) => Some(e.get_ref()),
            Out::Broken => None,
        }
    }

    /// Makes everything written so far readable while the file stays open: a
    /// compressed log ends its zstd frame or gzip member, and the next write starts a
    /// new one (a file of several frames or members is one stream to `zstdcat` and
    /// `zcat`); standard output is flushed. Plain files are written unbuffered.
    fn end_frame(&mut self) -> io::Result<()> {
        let c = match self {
            Out::Plain(d) => return d.flush(),
            Out::Zstd(_) => Compress::Zstd,
            Out::Gzip(_) => Compress::Gzip,
            Out::Broken => return Ok(()),
        };
        let mut d = std::mem::replace(self, Out::Broken).finish()?;
        d.flush()?;
        *self = Out::new(d, c)?;
        Ok(())
    }

    /// Ends the stream (the last frame or member) and gives the destination back.
    fn finish(self) -> io::Result<Dest> {
        match self {
            Out::Plain(d) => Ok(d),
            Out::Zstd(e) => e.finish(),
            Out::Gzip(e) => e.finish(),
            Out::Broken => Err(io::Error::other("an earlier write failed")),
        }
    }
}

/// The output directory: one file per log, written in the order blocks arrive. Or,
/// for `-o -`, standard output: every log's JSON lines in one stream, each line with
/// its log's name as its first key (`{"log":"log_tcp_complete",...}`).
///
/// Blocks are large (the workers fill 256 KiB before handing one over), so they go
/// to the files as they are, without a `BufWriter` copying them once more.
pub struct OutputDir {
    dir: PathBuf,
    files: Vec<(PathBuf, Out)>,
    /// Whether each file was written since its frame last ended ([`OutputDir::flush`]).
    dirty: Vec<bool>,
    /// Standard output: the start of each log's lines (`{"log":"NAME",`), by log; every
    /// log goes to `files[0]`. Empty for a directory.
    tags: Vec<Vec<u8>>,
    /// Where a block's lines get their tags.
    scratch: Vec<u8>,
    /// The Parquet writer of each file that is one, by index (shorter when the last
    /// files are not).
    columnar: Vec<Option<parquet::ParquetLog>>,
}

impl OutputDir {
    /// Creates `dir` (and parents) and one file per log, each starting with `headers[i]`.
    pub fn create(dir: &Path, names: &[String], headers: &[Vec<u8>]) -> Result<OutputDir, SinkError> {
        OutputDir::create_compressed(dir, names, headers, Compress::None)
    }

    /// [`OutputDir::create`], each file written through `compress` (the names are
    /// the caller's, suffix included). A Parquet log is compressed by its own format
    /// whatever `compress` says.
    pub fn create_compressed(
        dir: &Path,
        names: &[String],
        headers: &[Vec<u8>],
        compress: Compress,
    ) -> Result<OutputDir, SinkError> {
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        let mut o = OutputDir::over(dir, Vec::new());
        let mut created = Vec::new();
        for (name, header) in names.iter().zip(headers) {
            let path = dir.join(name);
            let r = create_fresh(&path).map_err(err(&path)).and_then(|f| {
                created.push(path.clone());
                o.start(name, path, f, header, true, compress)
            });
            if let Err(e) = r {
                // A set of logs that could not all be started (a full disk) is not left
                // behind, empty or holding a header: these files are this call's.
                for p in &created {
                    let _ = std::fs::remove_file(p);
                }
                return Err(e);
            }
        }
        // A new file's first frame is ended at the first flush even without records,
        // so every compressed log is a whole stream (empty or not) from then on.
        o.dirty = vec![true; o.files.len()];
        Ok(o)
    }

    /// Adds file `f` of log file `name` at `path`, starting it with `header` if
    /// `fresh`: a Parquet log when `header` is a columnar schema (a
    /// [`parquet::ParquetLog`] writes the file, through a second descriptor of it),
    /// else one written through `compress`.
    fn start(
        &mut self,
        name: &str,
        path: PathBuf,
        f: File,
        header: &[u8],
        fresh: bool,
        compress: Compress,
    ) -> Result<(), SinkError> {
        let err = |source| SinkError { path: path.clone(), source };
        let out = if let Some(schema) = columnar::LogSchema::of_header(header) {
            let log = name.strip_suffix(".parquet").unwrap_or(name);
            let w = f.try_clone().and_then(|g| parquet::ParquetLog::create(g, log, &schema)).map_err(err)?;
            self.columnar.resize_with(self.files.len(), || None);
            self.columnar.push(Some(w));
            Out::Plain(Dest::File(f))
        } else {
            let mut out = Out::new(Dest::File(f), compress).map_err(err)?;
            if fresh {
                out.write_all(header).map_err(err)?;
            }
            out
        };
        self.files.push((path, out));
        self.dirty.push(false);
        Ok(())
    }

    fn over(dir: &Path, files: Vec<(PathBuf, Out)>) -> OutputDir {
        OutputDir {
            dir: dir.to_path_buf(),
            dirty: vec![false; files.len()],
            files,
            tags: Vec::new(),
            scratch: Vec::new(),
            columnar: Vec::new(),
        }
    }

    /// Standard output, for the JSON lines of the logs named `logs` (file stems, in
    /// the order of the indices [`OutputDir::append`] takes), each line tagged with its
    /// log's name; through `compress` if any.
    pub fn stdout(logs: &[&str], compress: Compress) -> Result<OutputDir, SinkError> {
        let path = PathBuf::from("standard output");
        let out = Out::new(Dest::Stdout(io::stdout()), compress).map_err(err(&path))?;
        let mut o = OutputDir::over(Path::new("-"), vec![(path, out)]);
        o.tags = logs
            .iter()
            .map(|name| {
                let mut t = b"{\"log\":".to_vec();
                let _ = serde_json::to_writer(&mut t, name);
                t.push(b',');
                t
            })
            .collect();
        Ok(o)
    }

    /// Whether this is standard output rather than a directory.
    pub fn is_stdout(&self) -> bool {
        !self.tags.is_empty()
    }

    /// An output directory over files opened elsewhere (tests inject failing ones,
    /// such as `/dev/full`).
    #[doc(hidden)]
    pub fn from_files(dir: &Path, files: Vec<(PathBuf, File)>) -> OutputDir {
        OutputDir::over(dir, files.into_iter().map(|(p, f)| (p, Out::Plain(Dest::File(f)))).collect())
    }

    /// The open files, for `fchown` after a privilege drop: changing the owner of
    /// what tapstat opened, never of what a path names now.
    pub fn files(&self) -> impl Iterator<Item = &File> {
        self.files.iter().filter_map(|(_, o)| match o.dest() {
            Some(Dest::File(f)) => Some(f),
            _ => None,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends a block of formatted records (whole lines, or rows for Parquet) to log
    /// file `i`.
    pub fn append(&mut self, i: usize, block: &[u8]) -> Result<(), SinkError> {
        if self.is_stdout() {
            self.scratch.clear();
            tag_lines(&self.tags[i], block, &mut self.scratch);
            let (path, w) = &mut self.files[0];
            self.dirty[0] = true;
            return w.write_all(&self.scratch).map_err(|source| SinkError { path: path.clone(), source });
        }
        let (path, w) = &mut self.files[i];
        self.dirty[i] = true;
        let r = match self.columnar.get_mut(i) {
            Some(Some(p)) => p.append(block),
            _ => w.write_whole(block),
        };
        r.map_err(|source| SinkError { path: path.clone(), source })
    }

    /// Writes `lines`, whole JSON lines that carry their own `log` tag, to standard
    /// output as they are (a live run's link histograms with `-o -`); nothing for a
    /// directory.
    pub fn append_tagged(&mut self, lines: &[u8]) -> Result<(), SinkError> {
        if !self.is_stdout() {
            return Ok(());
        }
        let (path, w) = &mut self.files[0];
        self.dirty[0] = true;
        w.write_all(lines).map_err(|source| SinkError { path: path.clone(), source })
    }

    /// The records in a block of log file `i` (lines, or rows for Parquet).
    pub fn records_in(&self, i: usize, block: &[u8]) -> u64 {
        match self.columnar.get(i) {
            Some(Some(_)) => columnar::rows_in(block),
            _ => lines_in(block),
        }
    }

    /// Makes every record written so far readable while the files stay open (live
    /// runs, every `--flush`): each compressed file written to since the last time
    /// ends its zstd frame or gzip member, and standard output is flushed. Plain files
    /// are written unbuffered and need nothing; a Parquet file is readable only once
    /// closed ([`OutputDir::finish`]).
    pub fn flush(&mut self) -> Result<(), SinkError> {
        for ((path, w), dirty) in self.files.iter_mut().zip(&mut self.dirty) {
            if std::mem::take(dirty) && !matches!(w, Out::Plain(Dest::File(_))) {
                w.end_frame().map_err(|source| SinkError { path: path.clone(), source })?;
            }
        }
        Ok(())
    }

    /// Ends every file (the last compressed frame; a Parquet file's last row group
    /// and footer) and flushes it.
    pub fn finish(mut self) -> Result<(), SinkError> {
        let mut columnar = std::mem::take(&mut self.columnar).into_iter();
        for (path, w) in self.files {
            let e = |source| SinkError { path: path.clone(), source };
            if let Some(p) = columnar.next().flatten() {
                p.finish().map_err(e)?;
            }
            w.finish().map_err(e)?.flush().map_err(e)?;
        }
        Ok(())
    }
}

/// The records in a block of a log whose header is `header`: rows for a Parquet log
/// (a columnar schema), else lines.
pub fn records_in(header: &[u8], block: &[u8]) -> u64 {
    if columnar::LogSchema::is_schema(header) {
        columnar::rows_in(block)
    } else {
        lines_in(block)
    }
}

fn lines_in(block: &[u8]) -> u64 {
    block.iter().filter(|&&c| c == b'\n').count() as u64
}

/// Appends the JSON lines of `block` to `out`, each with `tag` (`{"log":"NAME",`) in
/// place of its opening brace: the log's name becomes the line's first key.
fn tag_lines(tag: &[u8], block: &[u8], out: &mut Vec<u8>) {
    out.reserve(block.len() + block.len() / 64 * tag.len());
    for line in block.split_inclusive(|&c| c == b'\n') {
        match line.strip_prefix(b"{") {
            Some(rest) => {
                out.extend_from_slice(tag);
                out.extend_from_slice(rest);
            }
            None => out.extend_from_slice(line),
        }
    }
}

fn err(path: &Path) -> impl FnOnce(io::Error) -> SinkError {
    let path = path.to_path_buf();
    move |source| SinkError { path, source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tapstat_record::json::TimeFormat;
    use tapstat_record::{Column, Field, Type};

    struct R {
        ip: std::net::IpAddr,
        t: f64,
        s: &'static str,
        n: Option<u64>,
    }

    fn log() -> Log<R> {
        let f = |name| Field { name, ty: Type::U64, unit: "", meaning: "", group: "" };
        Log {
            name: "log_t",
            meaning: "",
            runs: Vec::new(),
            columns: vec![
                Column { field: f("ip"), get: |r: &R| Value::Ip(r.ip) },
                Column { field: f("t"), get: |r: &R| Value::F64(r.t) },
                Column { field: f("s"), get: |r: &R| Value::Str(r.s) },
                Column { field: f("n"), get: |r: &R| r.n.map_or(Value::None, Value::U64) },
            ],
        }
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tapstat-sink-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A link named like a log, planted to point outside: the log replaces
    /// the link, and the file it pointed to is neither truncated nor written.
    #[test]
    fn create_replaces_a_planted_link_and_leaves_its_target_alone() {
        let d = scratch("link");
        let target = d.join("precious");
        std::fs::write(&target, "secret\n").unwrap();
        let out = d.join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::os::unix::fs::symlink(&target, out.join("log_a")).unwrap();
        std::fs::hard_link(&target, out.join("log_b")).unwrap();
        let names = vec!["log_a".to_string(), "log_b".to_string()];
        let mut o = OutputDir::create(&out, &names, &[b"#a\n".to_vec(), b"#b\n".to_vec()]).unwrap();
        o.append(0, b"1\n").unwrap();
        o.append(1, b"2\n").unwrap();
        o.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret\n");
        assert!(std::fs::symlink_metadata(out.join("log_a")).unwrap().file_type().is_file());
        assert_eq!(std::fs::read_to_string(out.join("log_a")).unwrap(), "#a\n1\n");
        assert_eq!(std::fs::read_to_string(out.join("log_b")).unwrap(), "#b\n2\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Appending (SIGHUP, stats.jsonl) refuses a link rather than writing through it.
    #[test]
    fn append_refuses_links() {
        let d = scratch("append");
        let target = d.join("precious");
        std::fs::write(&target, "secret\n").unwrap();
        std::os::unix::fs::symlink(&target, d.join("soft")).unwrap();
        std::fs::hard_link(&target, d.join("hard")).unwrap();
        let e = open_append_nofollow(&d.join("soft")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = open_append_nofollow(&d.join("hard")).unwrap_err();
        assert!(e.to_string().contains("single name"), "{e}");
        let names = vec!["soft".to_string()];
        assert!(OutputDir::open_append(&d, &names, &[b"#h\n".to_vec()]).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn unzstd(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        std::io::copy(&mut zstd::stream::read::Decoder::new(b).unwrap(), &mut out).unwrap();
        out
    }

    fn ungzip(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(b), &mut out).unwrap();
        out
    }

    /// Compressed logs hold what plain ones do, also when a live run ended frames
    /// on the way (`flush`) and appended to them after a reopen (SIGHUP); a frame
    /// ended is readable while the file is still open.
    #[test]
    fn compressed_files_read_back_whole_across_flushes_and_reopens() {
        let d = scratch("compress");
        for (c, name, unpack) in
            [(Compress::Zstd, "log_a.zst", unzstd as fn(&[u8]) -> Vec<u8>), (Compress::Gzip, "log_a.gz", ungzip)]
        {
            let names = vec![name.to_string()];
            let headers = vec![b"h\n".to_vec()];
            let mut o = OutputDir::create_compressed(&d, &names, &headers, c).unwrap();
            o.append(0, b"1\n").unwrap();
            o.flush().unwrap();
            // Readable now, with the file still open.
            assert_eq!(unpack(&std::fs::read(d.join(name)).unwrap()), b"h\n1\n", "{c:?}");
            o.flush().unwrap();
            o.append(0, b"2\n").unwrap();
            o.finish().unwrap();
            let mut o = OutputDir::open_append_compressed(&d, &names, &headers, c).unwrap();
            o.append(0, b"3\n").unwrap();
            o.finish().unwrap();
            assert_eq!(unpack(&std::fs::read(d.join(name)).unwrap()), b"h\n1\n2\n3\n", "{c:?}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn stdout_lines_get_their_log_name_first() {
        let mut out = Vec::new();
        tag_lines(br#"{"log":"log_x","#, b"{\"a\":1}\n{\"a\":2}\n", &mut out);
        assert_eq!(out, b"{\"log\":\"log_x\",\"a\":1}\n{\"log\":\"log_x\",\"a\":2}\n");
    }

    /// A JSON text as [`json_value`] writes it.
    fn json(v: Value<'_>) -> String {
        let mut out = Vec::new();
        json_value(v, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_strings_hold_no_raw_control_character() {
        // ESC, NUL, BEL, VT, FF, FS GS RS, DEL, NEL and the other C1 controls, the line
        // and paragraph separators (JSON allows them raw; a terminal, `splitlines()` and
        // JavaScript before ES2019 act on them).
        let hostile = "\u{1b}[31m\0\u{7}\u{b}\u{c}\u{1c}\u{1d}\u{1e}\u{7f}\u{85}\u{80}\u{9f}\u{2028}\u{2029}\t\"\\";
        let j = json(Value::Str(hostile));
        assert_eq!(
            j,
            r#""\u001b[31m\u0000\u0007\u000b\f\u001c\u001d\u001e\u007f\u0085\u0080\u009f\u2028\u2029\t\"\\""#
        );
        assert_eq!(serde_json::from_str::<String>(&j).unwrap(), hostile);
        let j = json(Value::Strs("a\u{85}b\0\u{2029}"));
        assert_eq!(j, r#"["a\u0085b","\u2029"]"#);
        // Every other character as serde_json writes it, and every one read back.
        for c in (0..0x3000u32).chain([0xfeff, 0x10ffff]).filter_map(char::from_u32) {
            let s = format!("ab{c}é{c}");
            let j = json(Value::Str(&s));
            assert!(!j.chars().any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')), "{j:?}");
            assert_eq!(serde_json::from_str::<String>(&j).unwrap(), s);
            if !matches!(c, '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}') {
                assert_eq!(j, serde_json::to_string(&s).unwrap());
            }
        }
    }

    #[test]
    fn lists_are_comma_separated_in_tsv_and_arrays_in_json() {
        let (mut t, mut j) = (Vec::new(), Vec::new());
        tsv_value(Value::U32s(&[60, 1514]), &mut t);
        t.push(b' ');
        tsv_value(Value::MicrosU32s(&[0, 12_345]), &mut t);
        t.push(b' ');
        tsv_value(Value::U32s(&[]), &mut t);
        assert_eq!(String::from_utf8(t).unwrap(), "[60,1514] [0.000,12.345] []");
        json_value(Value::MicrosU32s(&[1, 2_000]), &mut j);
        json_value(Value::U32s(&[]), &mut j);
        json_value(Value::Strs("a,b\0\"c"), &mut j);
        json_value(Value::Strs(""), &mut j);
        json_value(Value::Names { bits: 0b110, names: &["a", "b\"", "c"] }, &mut j);
        assert_eq!(String::from_utf8(j).unwrap(), r#"[0.001,2.000][]["a,b","\"c"][]["b\"","c"]"#);
    }

    #[test]
    fn json_from_the_tsv_line_is_the_json_line() {
        struct X {
            s: &'static str,
            n: Option<u64>,
            t: f64,
            b: Option<bool>,
            ps: Option<&'static [u32]>,
            names: &'static str,
        }
        let f = |name, ty| Field { name, ty, unit: "", meaning: "", group: "" };
        let log = Log {
            name: "log_x",
            meaning: "",
            runs: Vec::new(),
            columns: vec![
                Column { field: f("ip", Type::Ip), get: |_: &X| Value::Ip("2001:db8::1".parse().unwrap()) },
                Column { field: f("s", Type::Str), get: |r: &X| Value::Str(r.s) },
                Column { field: f("n", Type::U64), get: |r: &X| r.n.map_or(Value::None, Value::U64) },
                Column { field: f("t", Type::F64), get: |r: &X| Value::F64(r.t) },
                Column { field: f("b", Type::Bool), get: |r: &X| r.b.map_or(Value::None, Value::Bool) },
                Column { field: f("ps", Type::Counts), get: |r: &X| r.ps.map_or(Value::None, Value::U32s) },
                Column { field: f("ms", Type::Durations), get: |_: &X| Value::MicrosU32s(&[0, 1_500]) },
                Column { field: f("names", Type::Strs), get: |r: &X| Value::Strs(r.names) },
                Column {
                    field: f("ev", Type::Strs),
                    get: |r: &X| {
                        if r.n.is_some() {
                            Value::Names { bits: 0b11, names: &["a,b", "c"] }
                        } else {
                            Value::None
                        }
                    },
                },
            ],
        };
        let fields: Vec<Field> = log.fields().copied().collect();
        for x in [
            X { s: "a\tb\"c\\d\ne\u{1}é", n: Some(7), t: 1.5, b: Some(true), ps: Some(&[60, 1514]), names: "x,y\0z" },
            X { s: "", n: None, t: f64::NAN, b: None, ps: None, names: "" },
            X { s: "plain", n: Some(0), t: -0.0004, b: Some(false), ps: Some(&[]), names: "\"q\"" },
        ] {
            let (mut tsv, mut json, mut rebuilt) = (Vec::new(), Vec::new(), Vec::new());
            Format::Tsv.record(&log, &x, &mut tsv);
            assert_eq!(tsv.pop(), Some(b'\n'));
            json_side(&log, &x, &mut tsv);
            Format::Jsonl.record(&log, &x, &mut json);
            json.pop();
            assert_eq!(json_from_tsv(&fields, &tsv, &mut rebuilt), Some(()));
            assert_eq!(String::from_utf8(rebuilt).unwrap(), String::from_utf8(json).unwrap());
        }
        // Times as --time-format says (the Kafka export of a TSV run).
        let tf = [f("ts", Type::Time), f("d", Type::F64)];
        for (times, want) in [
            (TimeFormat::EpochMs, r#"{"ts":1582454770123.456,"d":1.500}"#),
            (TimeFormat::EpochS, r#"{"ts":1582454770.123456,"d":1.500}"#),
            (TimeFormat::Iso8601, r#"{"ts":"2020-02-23T10:46:10.123456Z","d":1.500}"#),
        ] {
            let mut out = Vec::new();
            assert_eq!(json_from_tsv_in(&tf, b"1582454770123.456\t1.500", times, &mut out), Some(()));
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
        let mut out = Vec::new();
        assert_eq!(json_from_tsv_in(&tf, b"15824547701\t1.500", TimeFormat::EpochS, &mut out), None, "not ms.µµµ");
        // A line of another shape is refused, not guessed at.
        let mut out = Vec::new();
        assert_eq!(json_from_tsv(&fields, b"1\t2", &mut out), None);
        assert_eq!(json_from_tsv(&fields[..1], b"::1\tx", &mut out), None);
    }

    #[test]
    fn an_absent_list_is_empty_in_json_never_null() {
        struct L(Option<&'static [u32]>);
        let f = |name, ty| Field { name, ty, unit: "", meaning: "", group: "" };
        let log = Log {
            name: "log_l",
            meaning: "",
            runs: Vec::new(),
            columns: vec![
                Column { field: f("ps", Type::Counts), get: |r: &L| r.0.map_or(Value::None, Value::U32s) },
                Column { field: f("ev", Type::Strs), get: |r: &L| r.0.map_or(Value::None, |_| Value::Strs("a")) },
                Column {
                    field: f("n", Type::U64),
                    get: |r: &L| r.0.map_or(Value::None, |x| Value::U64(x.len() as u64)),
                },
            ],
        };
        let line = |r: &L, fmt: Format| {
            let mut out = Vec::new();
            fmt.record(&log, r, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(line(&L(None), Format::Jsonl), "{\"ps\":[],\"ev\":[],\"n\":null}\n");
        assert_eq!(line(&L(Some(&[])), Format::Jsonl), "{\"ps\":[],\"ev\":[\"a\"],\"n\":0}\n");
        assert_eq!(line(&L(Some(&[7])), Format::Jsonl), "{\"ps\":[7],\"ev\":[\"a\"],\"n\":1}\n");
        // TSV keeps its empty field (no bytes for the common case).
        assert_eq!(line(&L(None), Format::Tsv), "\t\t\n");
    }

    #[test]
    fn three_decimals_by_hand_match_format() {
        for v in [0.0, 0.0004, 0.0005, 1.2345, 999.9995, 1767225600002.561, 123456.789, -2.5, -0.0001, 1e20] {
            let mut out = Vec::new();
            assert!(f64_value(v, &mut out));
            let want = format!("{v:.3}").replace("-0.000", "0.000");
            // Rounding of exact halves may differ between the two (round half away from
            // zero vs. the shortest-repr rule); compare the parsed values.
            let got: f64 = String::from_utf8(out).unwrap().parse().unwrap();
            assert!((got - want.parse::<f64>().unwrap()).abs() <= 0.001 + v.abs() * 1e-15, "{v}: {got} vs {want}");
        }
        let mut out = Vec::new();
        f64_value(1767225600002.561, &mut out);
        assert_eq!(out, b"1767225600002.561");
        out.clear();
        micros_value(1767225600002561, &mut out);
        assert_eq!(out, b"1767225600002.561");
        out.clear();
        micros_value(5, &mut out);
        assert_eq!(out, b"0.005");
    }

    #[test]
    fn numbers_and_addresses_are_written_exactly() {
        let mut out = Vec::new();
        for n in [0, 9, 10, 99, 100, 12345, u64::MAX] {
            out.clear();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
        for ip in ["0.0.0.0", "255.255.255.255", "10.0.100.9", "192.168.2.100", "2001:db8::1", "::ffff:1.2.3.4"] {
            out.clear();
            ip_value(ip.parse().unwrap(), &mut out);
            assert_eq!(String::from_utf8(out.clone()).unwrap(), ip);
        }
    }

    #[test]
    fn tsv_and_json_agree_on_values() {
        let r = R { ip: "2001:db8::1".parse().unwrap(), t: 1234.5678, s: "a\tb\"", n: None };
        let mut tsv = Vec::new();
        Format::Tsv.header(&log(), &mut tsv);
        Format::Tsv.record(&log(), &r, &mut tsv);
        assert_eq!(String::from_utf8(tsv).unwrap(), "ip\tt\ts\tn\n2001:db8::1\t1234.568\ta\\tb\\\"\t\n");
        let mut js = Vec::new();
        Format::Jsonl.record(&log(), &r, &mut js);
        let v: serde_json::Value = serde_json::from_slice(&js).unwrap();
        assert_eq!(v["ip"], "2001:db8::1");
        assert_eq!(v["t"], 1234.568);
        assert_eq!(v["s"], "a\tb\"");
        assert!(v["n"].is_null());
        // An empty string is no value: empty in TSV, null in JSON (one JSON type per key).
        let r = R { s: "", ..r };
        let (mut tsv, mut js) = (Vec::new(), Vec::new());
        Format::Tsv.record(&log(), &r, &mut tsv);
        Format::Jsonl.record(&log(), &r, &mut js);
        assert_eq!(String::from_utf8(tsv).unwrap(), "2001:db8::1\t1234.568\t\t\n");
        let v: serde_json::Value = serde_json::from_slice(&js).unwrap();
        assert!(v["s"].is_null(), "{v}");
    }
}
