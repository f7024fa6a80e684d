//! `--format parquet`: what the flags must say for it (the writer is
//! `tapstat_sink::parquet`; see docs/ARCHITECTURE.md, "Parquet").

use crate::args::{FormatArg, RunArgs};
use anyhow::{bail, Result};

/// Refuses `--format parquet` where it cannot work, in one line before anything runs:
/// in a build without the `parquet` feature, to standard output, with `--compress`
/// (which would only rename the files), and on live capture without `--rotate`
/// (a Parquet file is readable only once closed, and a live run without rotation
/// closes its files only when it stops; with `--rotate` each interval's files are
/// closed at its end).
pub fn check(a: &RunArgs) -> Result<()> {
    if a.format != FormatArg::Parquet {
        return Ok(());
    }
    if !cfg!(feature = "parquet") {
        bail!("--format parquet needs a tapstat built with Parquet support: cargo build --release --features parquet");
    }
    if a.to_stdout() {
        bail!("-o - streams JSON lines; a Parquet file needs a directory: give an output directory");
    }
    if a.compress.is_some() {
        bail!("--compress does not apply to --format parquet: Parquet compresses its columns itself (zstd)");
    }
    if a.live.is_live() && a.live.rotate.is_none() {
        bail!(
            "--format parquet on live capture needs --rotate: a Parquet file is readable only once closed, which each interval's files are at its end"
        );
    }
    Ok(())
}
