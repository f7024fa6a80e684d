//! The output directory's rules: one run at a time, never a mix of runs.
//!
//! - A lock (`.tapstat.lock`, `flock`) is held for the whole run: a second run on the
//!   same directory fails at once instead of interleaving its lines with the first's.
//! - A directory that holds tapstat's output of an earlier run (a `log_*` file,
//!   `summary.json`, `stats.jsonl`, `histograms.tsv`, `report.html`, a `--rotate`
//!   interval directory) is refused unless
//!   `--force`, which removes exactly those first; files tapstat does not write are
//!   never touched. So a rerun with another format or without `--periodic` cannot
//!   leave an earlier run's logs beside the new ones, and nothing is truncated before
//!   the run is known to start.
//! - `summary.json` is written last, under a temporary name renamed into place: it
//!   exists only for a run that finished (a killed run leaves none).

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The lock on an output directory, held while the value lives.
pub struct Claim {
    _lock: File,
}

/// Whether `name` is a file or directory tapstat writes in an output directory.
fn is_ours(name: &str) -> bool {
    // YYYY_MM_DD_HH_MM.out, or YYYY_MM_DD_HH_MM_SS.out (periods under a minute).
    let interval = |n: &str| {
        let n = n.strip_prefix('.').unwrap_or(n);
        let n = n.strip_suffix(".part").unwrap_or(n);
        (n.len() == 20 || n.len() == 23) && n.ends_with(".out") && n.starts_with(|c: char| c.is_ascii_digit())
    };
    // Logs: log_tcp_complete, log_tcp_complete.jsonl, .zst and .gz (--compress).
    name.starts_with("log_")
        || [SUMMARY, "stats.jsonl", HISTOGRAMS, crate::report::REPORT].contains(&name)
        || interval(name)
}

/// Creates `dir`, locks it and clears or refuses an earlier run's output.
pub fn claim(dir: &Path, force: bool) -> Result<Claim> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock_path = dir.join(".tapstat.lock");
    let lock = tapstat_sink::open_append_nofollow(&lock_path).with_context(|| format!("{}", lock_path.display()))?;
    // SAFETY: flock on a descriptor we own; the result is checked.
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        bail!("{}: another tapstat run is writing to this directory (it holds .tapstat.lock)", dir.display());
    }
    let mut ours: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(is_ours))
        .map(|e| e.path())
        .collect();
    ours.sort();
    if !ours.is_empty() && !force {
        let names: Vec<String> =
            ours.iter().take(3).map(|p| p.file_name().unwrap_or_default().to_string_lossy().into_owned()).collect();
        bail!(
            "{} holds the output of an earlier run ({}{}); choose another -o, or add --force to replace it",
            dir.display(),
            names.join(", "),
            if ours.len() > 3 { ", ..." } else { "" }
        );
    }
    for p in ours {
        // symlink_metadata: a link is removed itself, never followed.
        let is_dir = std::fs::symlink_metadata(&p).map(|m| m.is_dir()).unwrap_or(false);
        let r = if is_dir { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        r.with_context(|| format!("--force: removing {}", p.display()))?;
    }
    Ok(Claim { _lock: lock })
}

/// The names of the run's summary and link histograms in the output directory.
pub const SUMMARY: &str = "summary.json";
pub use tapstat_pipeline::HISTOGRAMS;

/// Writes `name` in `dir`, a file tapstat creates (never through a name it did not
/// create: `create_fresh`).
pub fn write_new(dir: &Path, name: &str, text: &str) -> Result<()> {
    use std::io::Write;
    let path = dir.join(name);
    let mut f = tapstat_sink::create_fresh(&path).with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

/// A file run's link histograms with `--rotate` (period `period_ns`): in each interval
/// directory, the histogram intervals that start in it; every interval directory gets
/// the file, with its header only where nothing was counted (as a live run's).
pub fn write_rotated_histograms(dir: &Path, period_ns: u64, h: tapstat_analyze::histo::Histo) -> Result<()> {
    for (start_ns, piece) in h.split(period_ns) {
        let sub = dir.join(tapstat_pipeline::interval_name(start_ns / 1_000_000_000, period_ns));
        std::fs::create_dir_all(&sub).with_context(|| format!("creating {}", sub.display()))?;
        write_new(&sub, HISTOGRAMS, &piece.to_tsv())?;
    }
    for sub in interval_dirs(dir)? {
        if !sub.join(HISTOGRAMS).exists() {
            write_new(&sub, HISTOGRAMS, tapstat_analyze::histo::Histo::TSV_HEADER)?;
        }
    }
    Ok(())
}

/// `--rotate`'s interval directories in `dir` with their final names
/// (`YYYY_MM_DD_HH_MM[_SS].out`), in order.
pub fn interval_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| is_ours(n) && n.ends_with(".out") && !n.starts_with('.')))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    Ok(v)
}

/// Writes `summary.json` atomically: a temporary file renamed into place.
pub fn write_summary(dir: &Path, json: &str) -> Result<()> {
    use std::io::Write;
    let tmp = dir.join(".summary.json.tmp");
    let path = dir.join("summary.json");
    let mut f = tapstat_sink::create_fresh(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    // No fsync: the rename protects against a killed process, which is the case that
    // matters here; an fsync would cost tens of milliseconds on every run.
    f.write_all(json.as_bytes()).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_names() {
        for n in [
            "log_tcp_complete",
            "log_udp_complete.jsonl",
            "summary.json",
            "stats.jsonl",
            "2026_01_02_03_04.out",
            "histograms.tsv",
            "report.html",
        ] {
            assert!(is_ours(n), "{n}");
        }
        for n in ["log_tcp_complete.zst", "log_udp_complete.jsonl.gz", "2026_01_02_03_04_05.out"] {
            assert!(is_ours(n), "{n}");
        }
        assert!(is_ours(".2026_01_02_03_04.out.part"));
        assert!(is_ours(".2026_01_02_03_04_05.out.part"));
        for n in ["notes.txt", "summary.json.bak", ".tapstat.lock", "out", "x.out"] {
            assert!(!is_ours(n), "{n}");
        }
    }
}
