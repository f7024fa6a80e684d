//! `tapstat report OUTDIR`: one self-contained HTML page of a run's output.

/// The report's name in the output directory.
pub const REPORT: &str = "report.html";
