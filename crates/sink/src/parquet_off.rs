//! Without the `parquet` feature: no Parquet writer, and a log in the columnar
//! format is an error that says how to build one.

use crate::columnar::LogSchema;
use std::fs::File;
use std::io;

/// What the output directory is told when asked for a Parquet file.
pub const NOT_BUILT: &str =
    "this tapstat was built without Parquet support: build it with `cargo build --release --features parquet`";

pub(crate) enum ParquetLog {}

impl ParquetLog {
    pub(crate) fn create(_: File, _: &str, _: &LogSchema) -> io::Result<ParquetLog> {
        Err(io::Error::other(NOT_BUILT))
    }

    pub(crate) fn append(&mut self, _: &[u8]) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn finish(self) -> io::Result<()> {
        match self {}
    }
}

/// Without the `parquet` feature a Parquet log cannot be read: [`NOT_BUILT`].
pub fn for_each_row(_: &std::path::Path, _: &[&str], _: impl FnMut(&[Option<String>])) -> io::Result<()> {
    Err(io::Error::other(NOT_BUILT))
}
