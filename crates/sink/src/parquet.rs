//! The Parquet writer (the `parquet` feature): the rows of [`crate::columnar`] into
//! Arrow columns, written by parquet's `ArrowWriter` with zstd, in the writer thread.
//!
//! Types: [`ColumnType`] says each column's; absent values are nulls. Units go into
//! each Arrow field's metadata (`unit`: pyarrow shows it; the meanings, which would
//! double the footer of a small file, are `tapstat schema`'s), and the file's
//! key-value metadata names the log (`tapstat.log`), the
//! version of tapstat that wrote it (`tapstat.version`) and the version of the schema
//! layout (`tapstat.schema_version`, that of `tapstat schema --format json`).
//!
//! Memory is bounded: rows are gathered into Arrow arrays [`BATCH_ROWS`] at a time,
//! and a row group is written out when it holds [`ROW_GROUP_ROWS`] rows or about
//! [`ROW_GROUP_BYTES`] of encoded data, whichever comes first (or when the writer's
//! buffers pass [`ROW_GROUP_MEMORY`]). A file is readable once closed: its footer,
//! which locates the row groups, is written last.

use crate::columnar::{self, Cell, Cells, ColumnType, Damaged, LogSchema};
use arrow_array::builder::ArrayBuilder;
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, ListBuilder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::sync::Arc;

/// Rows gathered into Arrow arrays before they go to the writer.
pub const BATCH_ROWS: usize = 8192;
/// Rows of a row group at most.
pub const ROW_GROUP_ROWS: usize = 128 * 1024;
/// Encoded bytes of a row group, about, at most (parquet's estimate).
pub const ROW_GROUP_BYTES: usize = 32 << 20;
/// The writer's buffers of a row group in progress at most (pages not yet
/// compressed included): past it, the row group is written out.
pub const ROW_GROUP_MEMORY: usize = 64 << 20;
/// zstd level 1 and no dictionary encoding: the writer thread encodes every worker's
/// records, and on mix-small these take a fifth fewer of its instructions than level 3
/// with dictionaries, for 7% more bytes (docs/BENCHMARKS.md, "Parquet").
const ZSTD_LEVEL: i32 = 1;

/// A Parquet log file being written.
pub(crate) struct ParquetLog {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    cols: Vec<Col>,
    types: Vec<ColumnType>,
    rows: usize,
    /// A value's text (addresses).
    scratch: Vec<u8>,
}

/// The Arrow type of a column type.
fn data_type(t: ColumnType) -> DataType {
    let list = |t| DataType::List(Arc::new(Field::new_list_field(t, true)));
    match t {
        ColumnType::Int64 => DataType::Int64,
        ColumnType::Float64 => DataType::Float64,
        ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        ColumnType::Utf8 => DataType::Utf8,
        ColumnType::Bool => DataType::Boolean,
        ColumnType::ListInt64 => list(DataType::Int64),
        ColumnType::ListFloat64 => list(DataType::Float64),
        ColumnType::ListUtf8 => list(DataType::Utf8),
    }
}

/// The Arrow schema of a log.
pub fn arrow_schema(s: &LogSchema) -> Schema {
    let fields: Vec<Field> = s
        .columns
        .iter()
        .map(|c| {
            let mut meta = HashMap::new();
            if !c.unit.is_empty() {
                meta.insert("unit".to_string(), c.unit.clone());
            }
            Field::new(c.name.clone(), data_type(c.ty), true).with_metadata(meta)
        })
        .collect();
    Schema::new(fields)
}

fn other(e: impl std::error::Error + Send + Sync + 'static) -> io::Error {
    io::Error::other(e)
}

impl ParquetLog {
    /// Starts a Parquet file of log `log` with `schema` on `file` (freshly created,
    /// empty).
    pub(crate) fn create(file: File, log: &str, schema: &LogSchema) -> io::Result<ParquetLog> {
        let arrow = Arc::new(arrow_schema(schema));
        let kv = |k: &str, v: String| KeyValue::new(k.to_string(), v);
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL).map_err(other)?))
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .set_key_value_metadata(Some(vec![
                kv("tapstat.log", log.to_string()),
                kv("tapstat.version", env!("CARGO_PKG_VERSION").to_string()),
                kv("tapstat.schema_version", tapstat_record::SCHEMA_VERSION.to_string()),
            ]))
            .build();
        let writer = ArrowWriter::try_new(file, arrow.clone(), Some(props)).map_err(other)?;
        let types: Vec<ColumnType> = schema.columns.iter().map(|c| c.ty).collect();
        let cols = types.iter().map(|&t| Col::new(t, 0, 0, 0)).collect();
        Ok(ParquetLog { writer, schema: arrow, cols, types, rows: 0, scratch: Vec::new() })
    }

    /// Appends the rows of a block; every [`BATCH_ROWS`] rows go to the writer.
    pub(crate) fn append(&mut self, block: &[u8]) -> io::Result<()> {
        for row in crate::columnar::rows(block) {
            let row = row.map_err(other)?;
            let mut cells = Cells::new(row);
            for col in &mut self.cols {
                col.read(&mut cells, &mut self.scratch).map_err(other)?;
            }
            if !cells.is_empty() {
                return Err(other(Damaged(row.len())));
            }
            self.rows += 1;
            if self.rows >= BATCH_ROWS {
                self.write_batch()?;
            }
        }
        Ok(())
    }

    fn write_batch(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.cols.iter_mut().zip(&self.types).map(|(c, &t)| c.finish(t)).collect();
        self.rows = 0;
        let batch = RecordBatch::try_new(self.schema.clone(), arrays).map_err(other)?;
        self.writer.write(&batch).map_err(other)?;
        if self.writer.memory_size() > ROW_GROUP_MEMORY {
            self.writer.flush().map_err(other)?;
        }
        Ok(())
    }

    /// Writes the rows left, the last row group and the footer.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.write_batch()?;
        self.writer.into_inner().map_err(other)?;
        Ok(())
    }
}

/// The values of one column, as Arrow builds them.
enum Col {
    Int(Int64Builder),
    Float(Float64Builder),
    Time(TimestampMicrosecondBuilder),
    Str(StringBuilder),
    Bool(BooleanBuilder),
    Ints(ListBuilder<Int64Builder>),
    Floats(ListBuilder<Float64Builder>),
    Strs(ListBuilder<StringBuilder>),
}

impl Col {
    /// An empty column of type `t`, with room for `rows` rows (and `bytes` bytes of
    /// text or `items` list items).
    fn new(t: ColumnType, rows: usize, items: usize, bytes: usize) -> Col {
        match t {
            ColumnType::Int64 => Col::Int(Int64Builder::with_capacity(rows)),
            ColumnType::Float64 => Col::Float(Float64Builder::with_capacity(rows)),
            ColumnType::Timestamp => Col::Time(TimestampMicrosecondBuilder::with_capacity(rows).with_timezone("UTC")),
            ColumnType::Utf8 => Col::Str(StringBuilder::with_capacity(rows, bytes)),
            ColumnType::Bool => Col::Bool(BooleanBuilder::with_capacity(rows)),
            ColumnType::ListInt64 => Col::Ints(ListBuilder::with_capacity(Int64Builder::with_capacity(items), rows)),
            ColumnType::ListFloat64 => {
                Col::Floats(ListBuilder::with_capacity(Float64Builder::with_capacity(items), rows))
            }
            ColumnType::ListUtf8 => {
                Col::Strs(ListBuilder::with_capacity(StringBuilder::with_capacity(items, bytes), rows))
            }
        }
    }

    /// Reads the column's next value from `cells` and appends it. The tags each
    /// column's getter returns are read first; a value that does not fit its column
    /// (a schema bug, which debug builds stop at) is written as null.
    #[inline]
    fn read(&mut self, cells: &mut Cells<'_>, scratch: &mut Vec<u8>) -> Result<(), Damaged> {
        let tag = cells.tag()?;
        match (&mut *self, tag) {
            // No tapstat value comes near 2^63 (counters, ports, codes); one past it is
            // no value rather than a negative one.
            (Col::Int(b), columnar::U64) => b.append_option(i64::try_from(cells.u64()?).ok()),
            (Col::Float(b), columnar::F64) => b.append_value(f64::from_bits(cells.u64()?)),
            (Col::Float(b), columnar::MICROS) => b.append_value(cells.u64()? as f64 / 1000.0),
            (Col::Time(b), columnar::MICROS) => b.append_option(i64::try_from(cells.u64()?).ok()),
            (Col::Str(b), columnar::STR) => b.append_value(cells.text()?),
            (Col::Bool(b), columnar::FALSE | columnar::TRUE) => b.append_value(tag == columnar::TRUE),
            (Col::Ints(b), columnar::U32S) => {
                let v = b.values();
                Cell::u32s(cells.u32s()?).for_each(|x| v.append_value(i64::from(x)));
                b.append(true);
            }
            (Col::Floats(b), columnar::MICROS_U32S) => {
                let v = b.values();
                Cell::u32s(cells.u32s()?).for_each(|us| v.append_value(f64::from(us) / 1000.0));
                b.append(true);
            }
            (Col::Strs(b), columnar::STRS) => {
                let v = b.values();
                Cell::strs(cells.text()?).for_each(|item| v.append_value(item));
                b.append(true);
            }
            (_, columnar::NULL) => self.append_null(),
            _ => {
                let cell = cells.value(tag)?;
                self.convert(cell, scratch);
            }
        }
        Ok(())
    }

    /// The values that need converting (addresses into text), and those that do not
    /// fit.
    #[cold]
    fn convert(&mut self, cell: Cell<'_>, scratch: &mut Vec<u8>) {
        match (&mut *self, cell) {
            (Col::Str(b), Cell::Ip(ip)) => {
                scratch.clear();
                tapstat_record::tsv::ip_value(ip, scratch);
                b.append_value(std::str::from_utf8(scratch).unwrap_or_default());
            }
            (Col::Int(b), Cell::Bool(x)) => b.append_value(i64::from(x)),
            (Col::Float(b), Cell::U64(n)) => b.append_value(n as f64),
            (Col::Time(b), Cell::F64(ms)) => b.append_value((ms * 1000.0).round() as i64),
            (Col::Floats(b), Cell::U32s(raw)) => {
                let v = b.values();
                Cell::u32s(raw).for_each(|x| v.append_value(f64::from(x)));
                b.append(true);
            }
            (_, cell) => {
                debug_assert!(false, "a value of the wrong type for its column: {cell:?}");
                self.append_null();
            }
        }
    }

    fn append_null(&mut self) {
        match self {
            Col::Int(b) => b.append_null(),
            Col::Float(b) => b.append_null(),
            Col::Time(b) => b.append_null(),
            Col::Str(b) => b.append_null(),
            Col::Bool(b) => b.append_null(),
            Col::Ints(b) => b.append_null(),
            Col::Floats(b) => b.append_null(),
            Col::Strs(b) => b.append_null(),
        }
    }

    /// The column's array; the builder starts again with room for as many rows, items
    /// and bytes (its buffers would otherwise grow from nothing for every batch).
    fn finish(&mut self, t: ColumnType) -> ArrayRef {
        let (rows, items, bytes) = match self {
            Col::Int(b) => (b.len(), 0, 0),
            Col::Float(b) => (b.len(), 0, 0),
            Col::Time(b) => (b.len(), 0, 0),
            Col::Str(b) => (b.len(), 0, b.values_slice().len()),
            Col::Bool(b) => (b.len(), 0, 0),
            Col::Ints(b) => (b.len(), b.values_ref().len(), 0),
            Col::Floats(b) => (b.len(), b.values_ref().len(), 0),
            Col::Strs(b) => (b.len(), b.values_ref().len(), b.values_ref().values_slice().len()),
        };
        match std::mem::replace(self, Col::new(t, rows, items, bytes)) {
            Col::Int(mut b) => Arc::new(b.finish()),
            Col::Float(mut b) => Arc::new(b.finish()),
            Col::Time(mut b) => Arc::new(b.finish()),
            Col::Str(mut b) => Arc::new(b.finish()),
            Col::Bool(mut b) => Arc::new(b.finish()),
            Col::Ints(mut b) => Arc::new(b.finish()),
            Col::Floats(mut b) => Arc::new(b.finish()),
            Col::Strs(mut b) => Arc::new(b.finish()),
        }
    }
}

/// Reads the `columns` of a Parquet log (those it has; the others are `None` in every
/// row) and calls `row` with each record's values as text, in `columns` order: integers
/// and floats as Rust prints them, booleans `true`/`false`, timestamps in epoch
/// microseconds, lists not read (`None`). A reader of what this writer writes, for
/// `tapstat report`.
pub fn for_each_row(
    path: &std::path::Path,
    columns: &[&str],
    mut row: impl FnMut(&[Option<String>]),
) -> io::Result<()> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type, TimestampMicrosecondType};
    use arrow_array::Array;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?).map_err(other)?;
    // Leaf index of each wanted column (every column of a tapstat log is one leaf but
    // the lists, which are not wanted).
    let leaves: Vec<usize> = builder
        .parquet_schema()
        .columns()
        .iter()
        .map(|c| c.path().parts()[0].clone())
        .enumerate()
        .filter(|(_, name)| columns.contains(&name.as_str()))
        .map(|(i, _)| i)
        .collect();
    let mask = ProjectionMask::leaves(builder.parquet_schema(), leaves);
    let reader = builder.with_projection(mask).build().map_err(other)?;
    let mut values: Vec<Option<String>> = vec![None; columns.len()];
    for batch in reader {
        let batch = batch.map_err(other)?;
        let schema = batch.schema();
        let at: Vec<Option<&ArrayRef>> =
            columns.iter().map(|c| schema.index_of(c).ok().map(|i| batch.column(i))).collect();
        for r in 0..batch.num_rows() {
            for (v, a) in values.iter_mut().zip(&at) {
                *v = a.filter(|a| a.is_valid(r)).and_then(|a| match a.data_type() {
                    DataType::Int64 => Some(a.as_primitive::<Int64Type>().value(r).to_string()),
                    DataType::Float64 => Some(a.as_primitive::<Float64Type>().value(r).to_string()),
                    DataType::Utf8 => Some(a.as_string::<i32>().value(r).to_string()),
                    DataType::Boolean => Some(a.as_boolean().value(r).to_string()),
                    DataType::Timestamp(TimeUnit::Microsecond, _) => {
                        Some(a.as_primitive::<TimestampMicrosecondType>().value(r).to_string())
                    }
                    _ => None,
                });
            }
            row(&values);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Format, OutputDir};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type, TimestampMicrosecondType};
    use arrow_array::Array;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use tapstat_record::{Column, Field, Log, Type, Value};

    struct R {
        n: u64,
        us: u64,
        ms: f64,
        s: String,
        ps: Vec<u32>,
    }

    fn log() -> Log<R> {
        const fn f(name: &'static str, ty: Type, unit: &'static str) -> Field {
            Field { name, ty, unit, meaning: "", group: "" }
        }
        Log {
            name: "log_t",
            meaning: "",
            runs: Vec::new(),
            columns: vec![
                Column { field: f("n", Type::U64, "packets"), get: |r: &R| Value::U64(r.n) },
                Column {
                    field: f("first", Type::Time, crate::columnar::EPOCH_MS),
                    get: |r: &R| if r.us == 0 { Value::None } else { Value::Micros(r.us) },
                },
                Column { field: f("durat", Type::F64, "ms"), get: |r: &R| Value::F64(r.ms) },
                Column { field: f("s", Type::Str, ""), get: |r: &R| Value::Str(&r.s) },
                Column { field: f("ps", Type::Counts, "bytes"), get: |r: &R| Value::U32s(&r.ps) },
            ],
        }
    }

    fn rec(i: u64) -> R {
        R {
            n: i,
            us: i * 1000 + 1,
            ms: i as f64 / 3.0,
            s: if i.is_multiple_of(3) { String::new() } else { format!("s{i}") },
            ps: vec![i as u32; (i % 4) as usize],
        }
    }

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tapstat-parquet-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Writes `rows` records from `from` as the pipeline does: in blocks of about
    /// 256 KiB.
    fn write(out: &mut OutputDir, from: u64, rows: u64) {
        let (l, mut block) = (log(), Vec::new());
        for i in from..from + rows {
            Format::Parquet.record(&l, &rec(i), &mut block);
            if block.len() >= 256 * 1024 {
                out.append(0, &block).unwrap();
                block.clear();
            }
        }
        out.append(0, &block).unwrap();
    }

    fn read(path: &std::path::Path) -> (parquet::file::metadata::ParquetMetaData, Vec<RecordBatch>) {
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
        let meta = b.metadata().as_ref().clone();
        (meta, b.build().unwrap().map(Result::unwrap).collect())
    }

    #[test]
    fn rows_read_back_typed_in_bounded_row_groups_with_the_metadata() {
        let d = scratch("rows");
        let mut h = Vec::new();
        Format::Parquet.header(&log(), &mut h);
        let mut out = OutputDir::create(&d, &["log_t.parquet".to_string()], &[h]).unwrap();
        let n = 2 * ROW_GROUP_ROWS as u64 + 1000;
        write(&mut out, 0, n);
        out.finish().unwrap();

        let (meta, batches) = read(&d.join("log_t.parquet"));
        let fm = meta.file_metadata();
        assert_eq!(fm.num_rows() as u64, n);
        assert!(meta.num_row_groups() >= 3);
        assert!(meta.row_groups().iter().all(|g| g.num_rows() as usize <= ROW_GROUP_ROWS));
        let kv: HashMap<&str, &str> = fm
            .key_value_metadata()
            .unwrap()
            .iter()
            .map(|k| (k.key.as_str(), k.value.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(kv["tapstat.log"], "log_t");
        assert_eq!(kv["tapstat.version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(kv["tapstat.schema_version"], tapstat_record::SCHEMA_VERSION.to_string());
        let schema = batches[0].schema();
        let types: Vec<String> = schema.fields().iter().map(|f| f.data_type().to_string()).collect();
        assert_eq!(types[..4], ["Int64", "Timestamp(µs, \"UTC\")", "Float64", "Utf8"]);
        assert!(matches!(schema.field(4).data_type(), DataType::List(f) if f.data_type() == &DataType::Int64));
        assert_eq!(schema.field(1).metadata()["unit"], "epoch ms");
        let mut i = 0u64;
        for b in &batches {
            let (ns, ts, ms, ss) = (
                b.column(0).as_primitive::<Int64Type>(),
                b.column(1).as_primitive::<TimestampMicrosecondType>(),
                b.column(2).as_primitive::<Float64Type>(),
                b.column(3).as_string::<i32>(),
            );
            let ps = b.column(4).as_list::<i32>();
            for k in 0..b.num_rows() {
                let r = rec(i);
                assert_eq!(ns.value(k) as u64, r.n);
                assert_eq!(ts.value(k) as u64, r.us);
                assert_eq!(ms.value(k), r.ms);
                assert_eq!(ss.is_null(k), r.s.is_empty());
                if !r.s.is_empty() {
                    assert_eq!(ss.value(k), r.s);
                }
                let p = ps.value(k);
                let p: Vec<u32> = p.as_primitive::<Int64Type>().values().iter().map(|&x| x as u32).collect();
                assert_eq!(p, r.ps);
                i += 1;
            }
        }
        assert_eq!(i, n);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Reopening (SIGHUP, a late live worker) leaves a closed file whole and goes on
    /// in a new part.
    #[test]
    fn reopening_goes_on_in_a_new_readable_part() {
        let d = scratch("reopen");
        let mut h = Vec::new();
        Format::Parquet.header(&log(), &mut h);
        let names = ["log_t.parquet".to_string()];
        let mut out = OutputDir::create(&d, &names, std::slice::from_ref(&h)).unwrap();
        write(&mut out, 0, 10);
        out.finish().unwrap();
        let mut out = OutputDir::open_append(&d, &names, std::slice::from_ref(&h)).unwrap();
        assert_eq!(
            out.records_in(0, &{
                let mut b = Vec::new();
                Format::Parquet.record(&log(), &rec(1), &mut b);
                Format::Parquet.record(&log(), &rec(2), &mut b);
                b
            }),
            2
        );
        write(&mut out, 10, 5);
        out.finish().unwrap();
        assert_eq!(read(&d.join("log_t.parquet")).0.file_metadata().num_rows(), 10);
        let (meta, _) = read(&d.join("log_t.1.parquet"));
        assert_eq!(meta.file_metadata().num_rows(), 5);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
