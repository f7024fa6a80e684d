//! What each column [`Type`] is in the stores tapstat's records are loaded into: the
//! one place that maps a type to ClickHouse (`tapstat schema --clickhouse`), DuckDB
//! (`tapstat schema --format json`'s `duckdb_type`) and the columnar files
//! ([`ColumnType`]: Parquet's Arrow schema, `parquet_type`). Every mapping is a match
//! on the type alone: what a list holds and whether a real is an instant are in the
//! type ([`Type::Counts`], [`Type::Durations`], [`Type::Time`]), never guessed from
//! the field's unit. A new type cannot compile without its mappings, and the test
//! below pins each one.

use crate::{Field, Type};

impl Type {
    /// The ClickHouse type of a column: every scalar is `Nullable` (the JSON lines
    /// write `null` for no value); a list is an `Array`, which ClickHouse cannot make
    /// nullable (an absent list is `[]`). Times stay `Float64` epoch ms as the logs
    /// write them (ClickHouse 18.16 has no `DateTime64`).
    pub fn clickhouse(self) -> &'static str {
        match self {
            Type::U64 => "Nullable(UInt64)",
            Type::F64 | Type::Time => "Nullable(Float64)",
            Type::Str | Type::Ip => "Nullable(String)",
            Type::Bool => "Nullable(UInt8)",
            Type::Counts => "Array(UInt64)",
            // Durations are written in ms with 3 decimals.
            Type::Durations => "Array(Float64)",
            Type::Strs => "Array(String)",
        }
    }

    /// The DuckDB type a column's values load as from TSV, for `read_csv(f,
    /// dtype=...)`: what DuckDB's sniffer finds from the values, given even where a
    /// file has none (lists and addresses are text to it).
    pub fn duckdb(self) -> &'static str {
        match self {
            Type::U64 => "UBIGINT",
            Type::F64 | Type::Time => "DOUBLE",
            Type::Bool => "BOOLEAN",
            Type::Str | Type::Ip | Type::Counts | Type::Durations | Type::Strs => "VARCHAR",
        }
    }

    /// The type of a column in a columnar file.
    pub fn columnar(self) -> ColumnType {
        match self {
            Type::U64 => ColumnType::Int64,
            Type::F64 => ColumnType::Float64,
            Type::Time => ColumnType::Timestamp,
            Type::Str | Type::Ip => ColumnType::Utf8,
            Type::Bool => ColumnType::Bool,
            Type::Counts => ColumnType::ListInt64,
            Type::Durations => ColumnType::ListFloat64,
            Type::Strs => ColumnType::ListUtf8,
        }
    }
}

/// A column's type in a columnar file (Parquet, through Arrow), from its field's
/// [`Type`] ([`Type::columnar`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// [`Type::U64`]: a signed 64-bit integer (no tapstat value comes near 2^63; engines
    /// without unsigned types — Spark, Trino, Java's readers — read it as it is, and
    /// DuckDB's `BIGINT` subtracts without overflowing below 0, where `UBIGINT` fails).
    Int64,
    /// [`Type::F64`]: a double (durations and other reals; the unit is the field's).
    Float64,
    /// [`Type::Time`]: an instant, microseconds since the epoch in UTC.
    Timestamp,
    /// [`Type::Str`] and [`Type::Ip`]: UTF-8 text.
    Utf8,
    /// [`Type::Bool`].
    Bool,
    /// [`Type::Counts`].
    ListInt64,
    /// [`Type::Durations`]: durations in ms as doubles.
    ListFloat64,
    /// [`Type::Strs`].
    ListUtf8,
}

impl ColumnType {
    pub const ALL: [ColumnType; 8] = [
        ColumnType::Int64,
        ColumnType::Float64,
        ColumnType::Timestamp,
        ColumnType::Utf8,
        ColumnType::Bool,
        ColumnType::ListInt64,
        ColumnType::ListFloat64,
        ColumnType::ListUtf8,
    ];

    /// The type of `f`'s column.
    pub fn of(f: &Field) -> ColumnType {
        f.ty.columnar()
    }

    /// The type's name as pyarrow prints it (`tapstat schema --format json`'s
    /// `parquet_type`).
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Int64 => "int64",
            ColumnType::Float64 => "double",
            ColumnType::Timestamp => "timestamp[us, tz=UTC]",
            ColumnType::Utf8 => "string",
            ColumnType::Bool => "bool",
            ColumnType::ListInt64 => "list<int64>",
            ColumnType::ListFloat64 => "list<double>",
            ColumnType::ListUtf8 => "list<string>",
        }
    }

    pub fn from_name(s: &str) -> Option<ColumnType> {
        ColumnType::ALL.into_iter().find(|t| t.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each type's schema name, ClickHouse, DuckDB and columnar (pyarrow) type. The
    /// match is exhaustive: a new type has no row until one is written here.
    fn row(t: Type) -> (&'static str, &'static str, &'static str, &'static str) {
        match t {
            Type::U64 => ("u64", "Nullable(UInt64)", "UBIGINT", "int64"),
            Type::F64 => ("f64", "Nullable(Float64)", "DOUBLE", "double"),
            Type::Time => ("f64", "Nullable(Float64)", "DOUBLE", "timestamp[us, tz=UTC]"),
            Type::Str => ("string", "Nullable(String)", "VARCHAR", "string"),
            Type::Ip => ("ip", "Nullable(String)", "VARCHAR", "string"),
            Type::Bool => ("bool", "Nullable(UInt8)", "BOOLEAN", "bool"),
            Type::Counts => ("list", "Array(UInt64)", "VARCHAR", "list<int64>"),
            Type::Durations => ("list", "Array(Float64)", "VARCHAR", "list<double>"),
            Type::Strs => ("strings", "Array(String)", "VARCHAR", "list<string>"),
        }
    }

    #[test]
    fn every_type_maps_to_every_target() {
        for t in Type::ALL {
            let got = (t.name(), t.clickhouse(), t.duckdb(), t.columnar().name());
            assert_eq!(got, row(t), "{t:?}");
            assert_eq!(t.is_list(), t.clickhouse().starts_with("Array("), "{t:?}");
            assert_eq!(t.is_list(), t.columnar().name().starts_with("list<"), "{t:?}");
        }
        // ALL holds each type once.
        for (i, t) in Type::ALL.iter().enumerate() {
            assert!(!Type::ALL[..i].contains(t), "{t:?} twice");
        }
        // Every columnar type is some type's, and reads back from its name.
        for c in ColumnType::ALL {
            assert!(Type::ALL.iter().any(|t| t.columnar() == c), "{c:?}");
            assert_eq!(ColumnType::from_name(c.name()), Some(c));
        }
    }
}
