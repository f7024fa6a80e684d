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

mod reopen;

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
            let mut f = File::create(&path).map_err(err(&path))?;
            f.write_all(header).map_err(err(&path))?;
            files.push((path, f));
        }
        Ok(OutputDir { dir: dir.to_path_buf(), files })
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
        assert_eq!(String::from_utf8(j).unwrap(), r#"[0.001,2.000][]["a,b","\"c"][]"#);
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
