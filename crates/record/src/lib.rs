//! The schema: every metric tapstat writes is declared once, as a [`Column`] of a
//! [`Log`] — a [`Field`] (name, type, unit, meaning, group) and the function that reads
//! its [`Value`] from a record. TSV headers, JSON keys and docs/METRICS.md are all
//! derived from these declarations.
//!
//! ```
//! use tapstat_record::{Column, Field, Log, Type, Value};
//! struct Rec { pkts: u64 }
//! let columns = vec![Column {
//!     field: Field { name: "pkts", ty: Type::U64, unit: "packets", meaning: "packets seen", group: "core" },
//!     get: |r: &Rec| Value::U64(r.pkts),
//! }];
//! let LOG = Log { name: "log_demo", meaning: "a demo", columns, runs: Vec::new() };
//! assert_eq!(LOG.columns[0].field.name, "pkts");
//! assert_eq!((LOG.columns[0].get)(&Rec { pkts: 3 }), Value::U64(3));
//! ```
//!
//! Architecture invariant: record knows no packets, flows or files; analyzers declare
//! their logs with it, sinks format them with it.
//!
//! # Cheap rows
//!
//! Writing records is a fifth of a run's work on ordinary traffic (a TCP record has
//! some 200 columns), so the row path is kept free of what costs most per value:
//! - Columns are declared in runs ([`run!`]), which generate one straight-line TSV
//!   writer and one JSON writer per run, resolved when the log is built: the getters
//!   are called directly and inlined with the [`Value`] they return, and a run whose
//!   columns are all kept tests no mask per column. A run's text for a record blank in
//!   it ([`Blank`]: a side that sent nothing) is copied whole.
//! - Numbers, times and addresses are written without `core::fmt`, by hand
//!   ([`tsv`]): integers from a two-digit table, and eight digits at a time with
//!   multiplications on a word's lanes; times as integer µs; reals through integers,
//!   rounded half away from zero to three decimals; IPv4 from a table of octets; IPv6
//!   compressed as RFC 5952 says, as `Ipv6Addr`'s `Display` does. A value and the tab
//!   after it go in one store. By hand rather than the `itoa` and `ryu` crates: `itoa`
//!   writes into its own buffer, which is then copied with a `memcpy` call of variable
//!   length, where ours appends a fixed-size block and cuts it, and fuses the tab;
//!   `ryu` writes the shortest text that reads back to the same double, not three
//!   fixed decimals, so its bytes differ. Tests hold each writer to `Display` or to
//!   the formatting it replaced, on edge cases and on many random values.
//! - Strings are scanned for escapes a word at a time and copied whole when there is
//!   nothing to escape; text tapstat made itself from safe characters (state names,
//!   hex ids, history letters) is a [`Value::Token`], copied without a scan. Bytes
//!   written are never validated again as UTF-8; no row allocates.

// Escapes and writes text that came from the wire: no unsafe code.
#![forbid(unsafe_code)]

use std::net::IpAddr;

/// The UTC civil time of `secs` after the epoch: (year, month 1-12, day 1-31, hour,
/// minute, second). Howard Hinnant's `civil_from_days`: what directory names of
/// intervals and the report's dates are made of, without a date crate.
pub fn civil(secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let (days, rem) = ((secs / 86_400) as i64, (secs % 86_400) as u32);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

pub mod json;
pub mod targets;
pub mod tsv;

/// The version of the schema's layout as programs see it (`tapstat schema --format
/// json`, and the `tapstat.schema_version` of Parquet files), not of the columns, which
/// the tapstat version dates: raised when a key changes meaning or goes away.
pub const SCHEMA_VERSION: u64 = 1;

/// The version of the logs' columns: raised by one whenever any log's columns change —
/// a column added, removed, renamed, reordered or given another type — so that a
/// program reading the logs can tell which columns to expect without comparing
/// headers. (Not [`SCHEMA_VERSION`], which versions the layout of the schema's
/// description.) A test in tapstat-analyze (`logs::tests`) pins it to a fingerprint of
/// every log's (name, column, type): a change of columns fails it until this is raised,
/// CHANGELOG.md says what changed, and the fingerprint is updated.
pub const COLUMNS_VERSION: u32 = 1;

/// The type of a field's values, as written. A type says everything the stores need
/// to know (what a list holds, whether a real is an instant): [`targets`] maps each to
/// ClickHouse, DuckDB and the columnar files without looking at the field's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// Unsigned integer.
    U64,
    /// Real number; durations in ms are written with 3 decimals (µs precision).
    F64,
    /// An absolute time (unit [`EPOCH_MS`]): milliseconds since the epoch (UTC) with 3
    /// decimals, written as an `F64`.
    Time,
    /// Text (empty in TSV, `null` in JSON when absent).
    Str,
    /// An IPv4 or IPv6 address.
    Ip,
    /// 0 or 1.
    Bool,
    /// A list of unsigned integers (counts, sizes in bytes): comma-separated in brackets
    /// in TSV (`[60,1514]`, as in JSON), an array in JSON; empty in TSV and `[]` in JSON
    /// when absent (for a list, absent and empty are the same: ClickHouse has no
    /// nullable array).
    Counts,
    /// A list of durations in ms with 3 decimals (unit `ms`), written as [`Type::Counts`]
    /// is.
    Durations,
    /// A list of texts: comma-separated in brackets in TSV (`[a.example,192.0.2.1]`, each
    /// escaped as a string, in single quotes where it needs them: [`tsv`]), an array of
    /// strings in JSON; absent as for `Counts`.
    Strs,
}

/// The unit of the absolute times ([`Type::Time`]): epoch milliseconds.
pub const EPOCH_MS: &str = "epoch ms";

impl Type {
    /// Every type, in declaration order.
    pub const ALL: [Type; 9] =
        [Type::U64, Type::F64, Type::Time, Type::Str, Type::Ip, Type::Bool, Type::Counts, Type::Durations, Type::Strs];

    /// The name the schema gives the type (`tapstat schema`, its JSON's `type`, the
    /// Kafka schema, docs/METRICS.md): how its values are written, so a time is an
    /// `f64` and both lists of numbers are a `list`.
    pub fn name(self) -> &'static str {
        match self {
            Type::U64 => "u64",
            Type::F64 | Type::Time => "f64",
            Type::Str => "string",
            Type::Ip => "ip",
            Type::Bool => "bool",
            Type::Counts | Type::Durations => "list",
            Type::Strs => "strings",
        }
    }

    /// Whether the values are lists (`[]` when absent in JSON, never `null`).
    pub fn is_list(self) -> bool {
        matches!(self, Type::Counts | Type::Durations | Type::Strs)
    }
}

/// The declaration of one field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Column name (Tstat's where Tstat has the metric); TSV header and JSON key.
    pub name: &'static str,
    pub ty: Type,
    /// Unit, e.g. `packets`, `bytes`, `ms`, `epoch ms`; empty when none.
    pub unit: &'static str,
    /// One sentence: what the value means.
    pub meaning: &'static str,
    /// The set the field belongs to (`endpoints`, `core`, `time`, `state`...).
    pub group: &'static str,
}

/// One value of a record, borrowed from the record where it is a string.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    U64(u64),
    /// A real number written with 3 decimals (times in ms: µs precision).
    F64(f64),
    Str(&'a str),
    /// Text tapstat made from characters that are never escaped (names from a fixed
    /// set, hex digits, flag letters: printable ASCII other than `\\` and `"`), written
    /// as it is (`Type::Str`, as [`Value::Str`]): no scan for escapes. Debug builds check
    /// it; text from the wire is always a [`Value::Str`].
    Token(&'a str),
    /// A time or duration in microseconds, written as milliseconds with 3 decimals
    /// (integer arithmetic only: times are most of a record's formatting cost).
    Micros(u64),
    Ip(IpAddr),
    Bool(bool),
    /// No value (an event that did not happen): an empty field in TSV, `null` in JSON.
    None,
    /// Integers (`Type::Counts`).
    U32s(&'a [u32]),
    /// Durations in µs written as ms with 3 decimals (`Type::Durations`).
    MicrosU32s(&'a [u32]),
    /// Texts (`Type::Strs`), one string with the items separated by NUL (which no
    /// name or address holds: names from the wire have it escaped), so that a row
    /// keeps one allocation for them.
    Strs(&'a str),
    /// Texts (`Type::Strs`) named by a bit set: `names[k]` for each bit `k` set in
    /// `bits`, in bit order. Flags print as a list without a string built per record.
    Names {
        bits: u64,
        names: &'static [&'static str],
    },
    /// A short text held in the value itself (`Type::Str`), for a string a column computes
    /// when the record is written rather than one the record keeps (the Community ID).
    Inline(InlineStr),
}

/// Up to 30 bytes of UTF-8 held inline (a `Value` stays 32 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineStr {
    len: u8,
    bytes: [u8; 30],
}

impl InlineStr {
    /// `s` held inline, or `None` when it is longer than 30 bytes.
    pub fn new(s: &str) -> Option<InlineStr> {
        let mut bytes = [0u8; 30];
        bytes.get_mut(..s.len())?.copy_from_slice(s.as_bytes());
        Some(InlineStr { len: s.len() as u8, bytes })
    }

    pub fn as_str(&self) -> &str {
        // Built from a `&str` in `new`, cut at its end: valid UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

/// A field and how to read it from a record of type `T`.
pub struct Column<T: 'static> {
    pub field: Field,
    pub get: for<'a> fn(&'a T) -> Value<'a>,
}

// By hand: a derive would ask `T: Clone`, which a field and a fn pointer do not need.
impl<T> Clone for Column<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Column<T> {}

/// A log: a named file of records of type `T`, with its columns in order.
pub struct Log<T: 'static> {
    /// File stem in the output directory (`log_tcp_complete`).
    pub name: &'static str,
    /// One sentence: which records go here.
    pub meaning: &'static str,
    pub columns: Vec<Column<T>>,
    /// The same columns as runs, each with a TSV writer generated from the columns'
    /// own getters ([`run!`](crate::run)), so that a record is written without a
    /// function call and a [`Value`] per column. Empty: the columns are written one
    /// by one. When not empty, the kept columns of the runs, in order, are `columns`.
    pub runs: Vec<Run<T>>,
}

/// A run of columns declared together, with the function that writes their values
/// in TSV: [`run!`](crate::run) generates it from the same declarations (the getters
/// are called directly, so the compiler inlines them and the [`Value`] they return).
pub struct Run<T: 'static> {
    pub columns: &'static [Column<T>],
    /// Appends the TSV values of the columns whose bit is set in `keep` (bit k:
    /// `columns[k]`), each followed by a tab.
    pub write: fn(&T, u64, &mut Vec<u8>),
    /// Appends the same columns as JSON members (`"name":value`), each followed by a
    /// comma.
    pub write_json: fn(&T, u64, &mut Vec<u8>),
    /// The columns of the run that the log writes.
    pub keep: u64,
    /// The run's text when the record is blank in it, if the run can be.
    pub blank: Option<Blank<T>>,
}

/// What a run writes for the records that have nothing in it: a side of a flow that
/// sent no packet has the same few dozen values in every record (`-` and `0`), and
/// most TCP records have such a side (scans, backscatter, unanswered SYNs). Writing
/// the run's text at once saves formatting them one by one.
pub struct Blank<T: 'static> {
    /// Whether `rec` is blank in the run: its values there are `template`'s.
    pub when: fn(&T) -> bool,
    /// A record blank in the run, to write the text from.
    pub template: fn() -> T,
    /// The run's TSV text for `template` (the kept columns, each with its tab).
    pub text: std::sync::Arc<[u8]>,
    /// The run's JSON members for `template` (each with its comma).
    pub json: std::sync::Arc<[u8]>,
}

impl<T> Clone for Blank<T> {
    fn clone(&self) -> Self {
        Blank { when: self.when, template: self.template, text: self.text.clone(), json: self.json.clone() }
    }
}

impl<T> Clone for Run<T> {
    fn clone(&self) -> Self {
        Run {
            columns: self.columns,
            write: self.write,
            write_json: self.write_json,
            keep: self.keep,
            blank: self.blank.clone(),
        }
    }
}

impl<T> Run<T> {
    /// A run writing every one of `columns` (at most 64), in TSV with `write` and in
    /// JSON with `write_json`.
    pub const fn new(
        columns: &'static [Column<T>],
        write: fn(&T, u64, &mut Vec<u8>),
        write_json: fn(&T, u64, &mut Vec<u8>),
    ) -> Run<T> {
        assert!(!columns.is_empty() && columns.len() <= 64, "a run has 1 to 64 columns");
        Run { columns, write, write_json, keep: u64::MAX >> (64 - columns.len()), blank: None }
    }

    /// The same run, written as `template` is for the records for which `when` holds.
    /// `when` must imply that every column of the run has `template`'s value: debug
    /// builds check each such record against its writer (the tests run over every
    /// capture of the corpus so).
    pub fn blank_when(self, when: fn(&T) -> bool, template: fn() -> T) -> Run<T> {
        let text = Self::text(self.write, self.keep, template);
        let json = Self::text(self.write_json, self.keep, template);
        Run { blank: Some(Blank { when, template, text, json }), ..self }
    }

    fn text(write: fn(&T, u64, &mut Vec<u8>), keep: u64, template: fn() -> T) -> std::sync::Arc<[u8]> {
        let mut v = Vec::new();
        write(&template(), keep, &mut v);
        v.into()
    }

    /// Appends the TSV values of the kept columns of `rec`, each followed by a tab.
    #[inline]
    pub fn write_tsv(&self, rec: &T, out: &mut Vec<u8>) {
        match &self.blank {
            Some(b) if (b.when)(rec) => {
                out.extend_from_slice(&b.text);
                #[cfg(debug_assertions)]
                {
                    let mut v = Vec::new();
                    (self.write)(rec, self.keep, &mut v);
                    debug_assert_eq!(
                        String::from_utf8_lossy(&v),
                        String::from_utf8_lossy(&b.text),
                        "a record blank in a run writes what its template does"
                    );
                }
            }
            _ => (self.write)(rec, self.keep, out),
        }
    }

    /// Appends the JSON members of the kept columns of `rec`, each followed by a comma.
    #[inline]
    pub fn write_json(&self, rec: &T, out: &mut Vec<u8>) {
        match &self.blank {
            // The blank text was written with the default time format.
            Some(b) if (b.when)(rec) && crate::json::time_format() == crate::json::TimeFormat::EpochMs => {
                out.extend_from_slice(&b.json)
            }
            _ => (self.write_json)(rec, self.keep, out),
        }
    }
}

/// Declares a [`Run`] of columns of records of type `$t`: the columns (const
/// expressions of type [`Column<$t>`]) and their TSV writer.
///
/// ```
/// use tapstat_record::{run, Column, Field, Log, Type, Value};
/// struct R { a: u64, b: &'static str }
/// const fn f(name: &'static str) -> Field { Field { name, ty: Type::U64, unit: "", meaning: "", group: "" } }
/// let log = Log::from_runs("log_r", "", vec![run!(R;
///     Column { field: f("a"), get: |r: &R| Value::U64(r.a) },
///     Column { field: f("b"), get: |r: &R| Value::Str(r.b) },
/// )]);
/// let mut out = Vec::new();
/// (log.runs[0].write)(&R { a: 7, b: "" }, log.runs[0].keep, &mut out);
/// assert_eq!(out, b"7\t\t");
/// ```
#[macro_export]
macro_rules! run {
    ($t:ty; $($c:expr),+ $(,)?) => {{
        const COLUMNS: &[$crate::Column<$t>] = &[$($c),+];
        fn write(r: &$t, keep: u64, out: &mut ::std::vec::Vec<u8>) {
            // Every column kept (the default sets): one straight line, no test per
            // column.
            if keep == u64::MAX >> (64 - COLUMNS.len()) {
                let mut k = 0usize;
                $(
                    let _ = stringify!($c);
                    $crate::tsv::value_tab((COLUMNS[k].get)(r), out);
                    k += 1;
                )+
                let _ = k;
                return;
            }
            let mut k = 0usize;
            $(
                // One block per column (`$c` names the repetition; `k` is a constant
                // at each, so the getter is known and inlined).
                let _ = stringify!($c);
                if keep & (1u64 << k) != 0 {
                    $crate::tsv::value_tab((COLUMNS[k].get)(r), out);
                }
                k += 1;
            )+
            let _ = k;
        }
        fn write_json(r: &$t, keep: u64, out: &mut ::std::vec::Vec<u8>) {
            let mut k = 0usize;
            $(
                let _ = stringify!($c);
                if keep & (1u64 << k) != 0 {
                    // The name is a constant here: a copy of known size.
                    let name = COLUMNS[k].field.name.as_bytes();
                    out.reserve(name.len() + 3);
                    out.push(b'"');
                    out.extend_from_slice(name);
                    out.extend_from_slice(b"\":");
                    $crate::json::column_value(COLUMNS[k].field.ty, (COLUMNS[k].get)(r), out);
                    out.push(b',');
                }
                k += 1;
            )+
            let _ = k;
        }
        $crate::Run::new(COLUMNS, write, write_json)
    }};
}

impl<T> Log<T> {
    pub fn fields(&self) -> impl Iterator<Item = &Field> + '_ {
        self.columns.iter().map(|c| &c.field)
    }

    /// A log of `runs` (its columns are theirs, in order).
    pub fn from_runs(name: &'static str, meaning: &'static str, runs: Vec<Run<T>>) -> Log<T> {
        let columns = runs
            .iter()
            .flat_map(|r| r.columns.iter().enumerate().filter(|(k, _)| r.keep & (1 << k) != 0).map(|(_, c)| *c))
            .collect();
        Log { name, meaning, columns, runs }
    }

    /// The same log with only the columns for which `keep` holds.
    pub fn filter(&self, keep: impl Fn(&Column<T>) -> bool) -> Log<T> {
        let runs = self
            .runs
            .iter()
            .map(|r| {
                let mask = r.columns.iter().enumerate().filter(|(_, c)| keep(c)).fold(0u64, |m, (k, _)| m | 1 << k);
                let keep = r.keep & mask;
                let blank = r.blank.as_ref().map(|b| Blank {
                    text: Run::text(r.write, keep, b.template),
                    json: Run::text(r.write_json, keep, b.template),
                    ..b.clone()
                });
                Run { keep, blank, ..r.clone() }
            })
            .filter(|r| r.keep != 0)
            .collect();
        let columns = self.columns.iter().filter(|c| keep(c)).copied().collect();
        Log { name: self.name, meaning: self.meaning, columns, runs }
    }
}

/// A log's description without its record type: what docs and headers need.
pub struct LogDoc {
    pub name: &'static str,
    pub meaning: &'static str,
    pub fields: Vec<Field>,
}

impl<T> From<&Log<T>> for LogDoc {
    fn from(l: &Log<T>) -> Self {
        LogDoc { name: l.name, meaning: l.meaning, fields: l.fields().copied().collect() }
    }
}

/// Renders the Markdown reference of `logs` (docs/METRICS.md is this, plus a preamble).
pub fn render_markdown(logs: &[LogDoc]) -> String {
    let mut s = String::new();
    for log in logs {
        s.push_str(&format!("## `{}`\n\n{}\n\n", log.name, log.meaning));
        s.push_str("| # | column | type | unit | group | meaning |\n|---|---|---|---|---|---|\n");
        for (i, f) in log.fields.iter().enumerate() {
            s.push_str(&format!(
                "| {} | `{}` | {} | {} | {} | {} |\n",
                i + 1,
                f.name,
                f.ty.name(),
                if f.unit.is_empty() { "-" } else { f.unit },
                f.group,
                f.meaning
            ));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil(1_470_104_340), (2016, 8, 2, 2, 19, 0));
        assert_eq!(civil(951_782_400 + 86_399), (2000, 2, 29, 23, 59, 59));
        assert_eq!(civil(4_102_444_800), (2100, 1, 1, 0, 0, 0));
    }

    struct R {
        n: u64,
    }
    fn log() -> Log<R> {
        let columns = vec![Column {
            field: Field { name: "n", ty: Type::U64, unit: "packets", meaning: "count", group: "g" },
            get: |r: &R| Value::U64(r.n),
        }];
        Log { name: "log_x", meaning: "m", columns, runs: Vec::new() }
    }

    #[test]
    fn markdown_lists_every_field() {
        let md = render_markdown(&[LogDoc::from(&log())]);
        assert!(md.contains("## `log_x`"));
        assert!(md.contains("| 1 | `n` | u64 | packets | g | count |"));
    }
}
