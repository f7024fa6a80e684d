//! Records as typed rows, for the columnar format ([`Format::Parquet`](crate::Format)).
//!
//! The workers format records as they do for TSV, into the per-log blocks the writer
//! thread appends to files; for Parquet a record is a *row*: the [`Value`] of each
//! column in a compact binary encoding (a tag byte, then the value's bytes), exact
//! where TSV rounds (reals, lists of strings holding commas). The writer thread turns
//! the rows of each block into Arrow columns and writes them with parquet's
//! `ArrowWriter` (`crate::parquet`, with the `parquet` feature): encoding and
//! compression happen off the packet path.
//!
//! A Parquet log's *header* (what [`Format::header`](crate::Format::header) gives the
//! output directory for the start of each file) is its schema: [`LogSchema`], the
//! log's columns with their [`ColumnType`]s and units, from which the output
//! directory builds the file's Arrow schema. Each column's type is derived from its
//! field's type ([`ColumnType::of`], in `tapstat_record::targets`); no column is
//! declared twice.

pub use tapstat_record::targets::ColumnType;
pub use tapstat_record::EPOCH_MS;
use tapstat_record::{Log, Value};

/// One column of a [`LogSchema`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnDesc {
    pub name: String,
    pub ty: ColumnType,
    pub unit: String,
}

/// A log's columns as the columnar writer needs them: what a Parquet log's header
/// carries from the workers' side (the schema) to the output directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSchema {
    pub columns: Vec<ColumnDesc>,
}

/// What a Parquet log's header starts with (no TSV header can: a column name has no
/// NUL).
const MAGIC: &[u8] = b"\0tapstat columnar schema\0";

/// Appends the header of `log` in the columnar format: [`MAGIC`] and the schema as
/// JSON. (The log's name is the file's: `log_tcp_nocomplete` has the columns of
/// `log_tcp_complete`.)
pub(crate) fn header<T>(log: &Log<T>, out: &mut Vec<u8>) {
    let columns: Vec<serde_json::Value> = log
        .fields()
        .map(|f| {
            serde_json::json!({
                "name": f.name,
                "type": ColumnType::of(f).name(),
                "unit": f.unit,
            })
        })
        .collect();
    out.extend_from_slice(MAGIC);
    let _ = serde_json::to_writer(&mut *out, &serde_json::json!({ "columns": columns }));
}

impl LogSchema {
    /// Whether `header` is a columnar log's (its schema), without reading the schema.
    pub fn is_schema(header: &[u8]) -> bool {
        header.starts_with(MAGIC)
    }

    /// The schema a columnar log's header carries; `None` for any other header (TSV's
    /// column names, JSON lines' nothing).
    pub fn of_header(header: &[u8]) -> Option<LogSchema> {
        let json = header.strip_prefix(MAGIC)?;
        let v: serde_json::Value = serde_json::from_slice(json).ok()?;
        let text = |v: &serde_json::Value, k: &str| v[k].as_str().map(str::to_string);
        let columns = v["columns"]
            .as_array()?
            .iter()
            .map(|c| {
                Some(ColumnDesc {
                    name: text(c, "name")?,
                    ty: ColumnType::from_name(c["type"].as_str()?)?,
                    unit: text(c, "unit")?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(LogSchema { columns })
    }
}

// The tags of encoded values.
pub(crate) const NULL: u8 = 0;
pub(crate) const U64: u8 = 1;
pub(crate) const F64: u8 = 2;
pub(crate) const MICROS: u8 = 3;
pub(crate) const STR: u8 = 4;
pub(crate) const IP4: u8 = 5;
pub(crate) const IP6: u8 = 6;
pub(crate) const FALSE: u8 = 7;
pub(crate) const TRUE: u8 = 8;
pub(crate) const U32S: u8 = 9;
pub(crate) const MICROS_U32S: u8 = 10;
/// Texts separated by NUL, as [`Value::Strs`] holds them.
pub(crate) const STRS: u8 = 11;

/// Appends one record of `log` as a row: its length in bytes (u32, little-endian),
/// then each column's value, in the log's order.
#[inline]
pub(crate) fn record<T>(log: &Log<T>, rec: &T, out: &mut Vec<u8>) {
    out.reserve(16 * log.columns.len());
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    for c in &log.columns {
        value((c.get)(rec), out);
    }
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// Appends `b` with its length (u32; a text of tapstat's is far shorter than 4 GiB,
/// and a longer one would be cut at a character boundary).
#[inline]
fn bytes(tag: u8, s: &str, out: &mut Vec<u8>) {
    let mut end = s.len().min(u32::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.push(tag);
    out.extend_from_slice(&(end as u32).to_le_bytes());
    out.extend_from_slice(&s.as_bytes()[..end]);
}

#[inline]
fn u32s(tag: u8, xs: &[u32], out: &mut Vec<u8>) {
    let xs = &xs[..xs.len().min(u32::MAX as usize)];
    out.push(tag);
    out.extend_from_slice(&(xs.len() as u32).to_le_bytes());
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Appends a tag and its 8 bytes, in one copy.
#[inline(always)]
fn tagged(tag: u8, x: u64, out: &mut Vec<u8>) {
    let mut b = [tag; 9];
    b[1..].copy_from_slice(&x.to_le_bytes());
    out.extend_from_slice(&b);
}

/// Appends one value. No value, an empty string and a real that is not finite are
/// null, as in JSON lines (and empty in TSV).
#[inline]
fn value(v: Value<'_>, out: &mut Vec<u8>) {
    match v {
        Value::None | Value::Str("") | Value::Token("") => out.push(NULL),
        Value::U64(n) => tagged(U64, n, out),
        Value::F64(x) if x.is_finite() => tagged(F64, x.to_bits(), out),
        Value::F64(_) => out.push(NULL),
        Value::Micros(us) => tagged(MICROS, us, out),
        Value::Str(s) | Value::Token(s) => bytes(STR, s, out),
        Value::Inline(s) => bytes(STR, s.as_str(), out),
        Value::Ip(std::net::IpAddr::V4(a)) => {
            out.push(IP4);
            out.extend_from_slice(&a.octets());
        }
        Value::Ip(std::net::IpAddr::V6(a)) => {
            out.push(IP6);
            out.extend_from_slice(&a.octets());
        }
        Value::Bool(b) => out.push(if b { TRUE } else { FALSE }),
        Value::U32s(xs) => u32s(U32S, xs, out),
        Value::MicrosU32s(xs) => u32s(MICROS_U32S, xs, out),
        Value::Strs(s) => bytes(STRS, s, out),
        Value::Names { bits, names } => {
            // The names of the bits set, joined by NUL as `Value::Strs` is.
            out.push(STRS);
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            for (i, n) in tapstat_record::tsv::named(bits, names).enumerate() {
                if i > 0 {
                    out.push(0);
                }
                out.extend_from_slice(n.as_bytes());
            }
            let len = (out.len() - at - 4) as u32;
            out[at..at + 4].copy_from_slice(&len.to_le_bytes());
        }
    }
}

/// A decoded value: what `value` wrote.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell<'a> {
    Null,
    U64(u64),
    F64(f64),
    Micros(u64),
    Str(&'a str),
    Ip(std::net::IpAddr),
    Bool(bool),
    /// Little-endian u32s.
    U32s(&'a [u8]),
    MicrosU32s(&'a [u8]),
    /// Texts separated by NUL (none when empty).
    Strs(&'a str),
}

impl<'a> Cell<'a> {
    /// The numbers of a [`Cell::U32s`] or [`Cell::MicrosU32s`].
    pub fn u32s(raw: &'a [u8]) -> impl Iterator<Item = u32> + 'a {
        raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
    }

    /// The texts of a [`Cell::Strs`].
    pub fn strs(s: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        tapstat_record::tsv::strs(s)
    }
}

/// A block that is not rows as `record` writes them (a bug: blocks never leave the
/// process).
#[derive(Debug, thiserror::Error)]
#[error("a block of records is damaged at byte {0}")]
pub struct Damaged(pub usize);

/// The rows of a block, each as the bytes of its values.
pub fn rows(block: &[u8]) -> impl Iterator<Item = Result<&[u8], Damaged>> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= block.len() {
            return None;
        }
        let Some(len) = block.get(pos..pos + 4) else {
            pos = block.len();
            return Some(Err(Damaged(pos)));
        };
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let start = pos + 4;
        match block.get(start..start + len) {
            Some(row) => {
                pos = start + len;
                Some(Ok(row))
            }
            None => {
                pos = block.len();
                Some(Err(Damaged(start)))
            }
        }
    })
}

/// The number of rows in a block (what a write error loses).
pub fn rows_in(block: &[u8]) -> u64 {
    rows(block).count() as u64
}

/// The values of one row, in order: [`Cells::next`] decodes any; the columnar
/// writer reads each column's expected tags directly (`Cells::tag` and the readers of
/// payloads).
pub struct Cells<'a> {
    row: &'a [u8],
    pos: usize,
}

impl<'a> Cells<'a> {
    pub fn new(row: &'a [u8]) -> Cells<'a> {
        Cells { row, pos: 0 }
    }

    /// Whether every value was read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.row.len()
    }

    #[inline]
    fn take<const N: usize>(&mut self) -> Result<[u8; N], Damaged> {
        let b = self.row.get(self.pos..self.pos + N).ok_or(Damaged(self.pos))?;
        self.pos += N;
        Ok(b.try_into().expect("N bytes"))
    }

    #[inline]
    fn slice(&mut self, n: usize) -> Result<&'a [u8], Damaged> {
        let b = self.row.get(self.pos..self.pos + n).ok_or(Damaged(self.pos))?;
        self.pos += n;
        Ok(b)
    }

    /// The next value's tag (a row that ends here is damaged).
    #[inline]
    pub(crate) fn tag(&mut self) -> Result<u8, Damaged> {
        Ok(self.take::<1>()?[0])
    }

    /// The payload of `U64`, `F64` (its bits) and `MICROS`.
    #[inline]
    pub(crate) fn u64(&mut self) -> Result<u64, Damaged> {
        Ok(u64::from_le_bytes(self.take()?))
    }

    /// The payload of `STR` and `STRS`.
    #[inline]
    pub(crate) fn text(&mut self) -> Result<&'a str, Damaged> {
        let at = self.pos;
        let n = u32::from_le_bytes(self.take()?) as usize;
        std::str::from_utf8(self.slice(n)?).map_err(|_| Damaged(at))
    }

    /// The payload of `U32S` and `MICROS_U32S`: the numbers' bytes.
    #[inline]
    pub(crate) fn u32s(&mut self) -> Result<&'a [u8], Damaged> {
        let at = self.pos;
        let n = u32::from_le_bytes(self.take()?) as usize;
        self.slice(n.checked_mul(4).ok_or(Damaged(at))?)
    }

    /// The value of tag `tag`, read after it.
    pub(crate) fn value(&mut self, tag: u8) -> Result<Cell<'a>, Damaged> {
        let at = self.pos;
        Ok(match tag {
            NULL => Cell::Null,
            U64 => Cell::U64(self.u64()?),
            F64 => Cell::F64(f64::from_bits(self.u64()?)),
            MICROS => Cell::Micros(self.u64()?),
            STR => Cell::Str(self.text()?),
            IP4 => Cell::Ip(std::net::Ipv4Addr::from(self.take::<4>()?).into()),
            IP6 => Cell::Ip(std::net::Ipv6Addr::from(self.take::<16>()?).into()),
            FALSE => Cell::Bool(false),
            TRUE => Cell::Bool(true),
            U32S => Cell::U32s(self.u32s()?),
            MICROS_U32S => Cell::MicrosU32s(self.u32s()?),
            STRS => Cell::Strs(self.text()?),
            _ => return Err(Damaged(at)),
        })
    }

    /// The next value; `Ok(None)` at the end of the row.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Cell<'a>>, Damaged> {
        if self.is_empty() {
            return Ok(None);
        }
        let tag = self.tag()?;
        self.value(tag).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tapstat_record::{Column, Field, Type};

    struct R {
        v: Vec<Value<'static>>,
    }

    const NAMES: &[&str] = &["a", "b,c", "d"];

    fn log(n: usize) -> Log<R> {
        const fn f(name: &'static str, ty: Type, unit: &'static str) -> Field {
            Field { name, ty, unit, meaning: "m", group: "" }
        }
        // One getter per position (getters are plain functions).
        let gets: [for<'a> fn(&'a R) -> Value<'a>; 4] = [|r| r.v[0], |r| r.v[1], |r| r.v[2], |r| r.v[3]];
        let fields = [
            f("a", Type::U64, ""),
            f("first", Type::Time, EPOCH_MS),
            f("l", Type::Durations, "ms"),
            f("s", Type::Strs, ""),
        ];
        Log {
            name: "log_t",
            meaning: "",
            runs: Vec::new(),
            columns: (0..n).map(|i| Column { field: fields[i], get: gets[i] }).collect(),
        }
    }

    #[test]
    fn rows_read_back_as_written() {
        let vals: Vec<Vec<Value<'static>>> = vec![
            vec![Value::U64(u64::MAX), Value::F64(1.5), Value::U32s(&[1, 2]), Value::Strs("x,y\0z")],
            vec![Value::None, Value::Micros(1_767_225_600_002_561), Value::MicrosU32s(&[]), Value::Strs("")],
            vec![Value::Str(""), Value::F64(f64::NAN), Value::Ip("2001:db8::1".parse().unwrap()), Value::Bool(true)],
            vec![
                Value::Str("é\t\""),
                Value::Ip("10.0.0.1".parse().unwrap()),
                Value::Bool(false),
                Value::Names { bits: 0b111, names: NAMES },
            ],
        ];
        let l = log(4);
        let mut block = Vec::new();
        for v in &vals {
            record(&l, &R { v: v.clone() }, &mut block);
        }
        assert_eq!(rows_in(&block), 4);
        let got: Vec<Vec<Cell>> = rows(&block)
            .map(|r| {
                let mut c = Cells::new(r.unwrap());
                std::iter::from_fn(|| c.next().unwrap()).collect()
            })
            .collect();
        assert_eq!(
            got[0],
            [Cell::U64(u64::MAX), Cell::F64(1.5), Cell::U32s(&[1, 0, 0, 0, 2, 0, 0, 0]), Cell::Strs("x,y\0z")]
        );
        assert_eq!(got[1], [Cell::Null, Cell::Micros(1_767_225_600_002_561), Cell::MicrosU32s(&[]), Cell::Strs("")]);
        assert_eq!(got[2], [Cell::Null, Cell::Null, Cell::Ip("2001:db8::1".parse().unwrap()), Cell::Bool(true)]);
        assert_eq!(
            got[3],
            [Cell::Str("é\t\""), Cell::Ip("10.0.0.1".parse().unwrap()), Cell::Bool(false), Cell::Strs("a\0b,c\0d")]
        );
        assert_eq!(Cell::u32s(&[1, 0, 0, 0, 2, 0, 0, 0]).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(Cell::strs("a\0b,c").collect::<Vec<_>>(), ["a", "b,c"]);
        assert_eq!(Cell::strs("").count(), 0);
        // A cut block is damaged, never read past.
        assert!(rows(&block[..block.len() - 1]).any(|r| r.is_err()));
        assert!(Cells::new(&[STR, 9, 0, 0, 0, b'a']).next().is_err());
    }

    #[test]
    fn the_header_carries_the_schema() {
        let mut h = Vec::new();
        header(&log(4), &mut h);
        let s = LogSchema::of_header(&h).unwrap();
        let types: Vec<ColumnType> = s.columns.iter().map(|c| c.ty).collect();
        assert_eq!(types, [ColumnType::Int64, ColumnType::Timestamp, ColumnType::ListFloat64, ColumnType::ListUtf8]);
        assert_eq!(s.columns[1].unit, EPOCH_MS);
        assert!(LogSchema::of_header(b"a\tb\n").is_none());
        assert!(LogSchema::of_header(b"").is_none());
        for t in ColumnType::ALL {
            assert_eq!(ColumnType::from_name(t.name()), Some(t));
        }
    }
}
