//! Sinks: records to bytes ([`Format`]: TSV or JSON lines) and bytes to files
//! ([`OutputDir`]).
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
//! Formatting happens in the workers (in parallel, into per-worker buffers); only
//! [`OutputDir`] touches files, from one writer thread.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tapstat_record::{Log, Value};

pub mod broker;
pub mod ipfix;
#[cfg(feature = "kafka")]
pub mod kafka;
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
}

impl Format {
    /// The file name of log `name` in this format.
    pub fn file_name(self, name: &str) -> String {
        match self {
            Format::Tsv => name.to_string(),
            Format::Jsonl => format!("{name}.jsonl"),
        }
    }

    /// The header of a log's file (nothing for JSON lines, whose keys name themselves).
    pub fn header<T>(self, log: &Log<T>, out: &mut Vec<u8>) {
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
                for (i, c) in log.columns.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.push(b'"');
                    out.extend_from_slice(c.field.name.as_bytes());
                    out.extend_from_slice(b"\":");
                    json_value((c.get)(rec), out);
                }
                out.push(b'}');
            }
        }
        out.push(b'\n');
    }
}

use tapstat_record::tsv::{f64_value, ip_value, list_value, micros_value, push_u64, value as tsv_value};

fn json_value(v: Value<'_>, out: &mut Vec<u8>) {
    match v {
        Value::U64(n) => push_u64(out, n),
        Value::Micros(us) => micros_value(us, out),
        Value::F64(x) => {
            if !f64_value(x, out) {
                out.extend_from_slice(b"null");
            }
        }
        Value::Str("") => out.extend_from_slice(b"null"),
        Value::Str(s) => {
            let _ = serde_json::to_writer(&mut *out, s);
        }
        Value::Ip(ip) => {
            out.push(b'"');
            ip_value(ip, out);
            out.push(b'"');
        }
        Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        Value::None => out.extend_from_slice(b"null"),
        Value::U32s(xs) => {
            out.push(b'[');
            list_value(xs, out, |x, out| push_u64(out, x as u64));
            out.push(b']');
        }
        Value::MicrosU32s(xs) => {
            out.push(b'[');
            list_value(xs, out, |x, out| micros_value(x as u64, out));
            out.push(b']');
        }
        Value::Strs(s) => {
            out.push(b'[');
            for (i, item) in tapstat_record::tsv::strs(s).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, item);
            }
            out.push(b']');
        }
        Value::Names { bits, names } => {
            out.push(b'[');
            for (i, item) in tapstat_record::tsv::named(bits, names).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, item);
            }
            out.push(b']');
        }
    }
}

/// Creates `path` afresh: whatever entry has that name is unlinked first (a symbolic
/// link or a hard link is removed, its target untouched), and the file is created
/// with `O_EXCL`, which refuses to follow a symbolic link planted in between. The
/// output directory may belong to another user (`--user`): a root process must never
/// truncate or write through a name that user can point elsewhere (issue 13).
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

/// The output directory: one file per log, written in the order blocks arrive.
///
/// Blocks are large (the workers fill 256 KiB before handing one over), so they go
/// to the files as they are, without a `BufWriter` copying them once more.
pub struct OutputDir {
    dir: PathBuf,
    files: Vec<(PathBuf, File)>,
}

impl OutputDir {
    /// Creates `dir` (and parents) and one file per log, each starting with `headers[i]`.
    pub fn create(dir: &Path, names: &[String], headers: &[Vec<u8>]) -> Result<OutputDir, SinkError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SinkError { path, source }
        };
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        let mut files = Vec::new();
        for (name, header) in names.iter().zip(headers) {
            let path = dir.join(name);
            let mut f = create_fresh(&path).map_err(err(&path))?;
            f.write_all(header).map_err(err(&path))?;
            files.push((path, f));
        }
        Ok(OutputDir { dir: dir.to_path_buf(), files })
    }

    /// An output directory over files opened elsewhere (tests inject failing ones,
    /// such as `/dev/full`).
    #[doc(hidden)]
    pub fn from_files(dir: &Path, files: Vec<(PathBuf, File)>) -> OutputDir {
        OutputDir { dir: dir.to_path_buf(), files }
    }

    /// The open files, for `fchown` after a privilege drop: changing the owner of
    /// what tapstat opened, never of what a path names now.
    pub fn files(&self) -> impl Iterator<Item = &File> {
        self.files.iter().map(|(_, f)| f)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends a block of formatted records to log file `i`.
    pub fn append(&mut self, i: usize, block: &[u8]) -> Result<(), SinkError> {
        let (path, w) = &mut self.files[i];
        w.write_all(block).map_err(|source| SinkError { path: path.clone(), source })
    }

    /// Flushes every file.
    pub fn finish(mut self) -> Result<(), SinkError> {
        for (path, w) in &mut self.files {
            w.flush().map_err(|source| SinkError { path: path.clone(), source })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    /// A link named like a log, planted to point outside (issue 13): the log replaces
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
