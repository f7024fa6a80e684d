//! The output directory's rules: one run at a time, never a mix of runs.
//!
//! - A lock (`.tapstat.lock`, `flock`) is held for the whole run: a second run on the
//!   same directory fails at once instead of interleaving its lines with the first's.
//! - A directory that holds tapstat's output of an earlier run (a log file, by its
//!   exact name in any format and compression, `summary.json`, `stats.jsonl`,
//!   `histograms.tsv`, `report.html`, a `--rotate` interval directory named exactly
//!   `YYYY_MM_DD_HH_MM[_SS].out`, or its hidden `.NAME.part`) is refused unless
//!   `--force`, which removes exactly those first; names tapstat does not write
//!   (`log_book.txt`, `1999_backup_data.out/`) are never touched, and a directory is
//!   removed only when it holds nothing but files tapstat writes: otherwise `--force`
//!   refuses, naming the entry, before removing anything. So a rerun with another format or without `--periodic` cannot
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
    /// This run created the directory (it did not exist).
    pub created: bool,
}

/// The lock file of an output directory.
const LOCK: &str = ".tapstat.lock";

/// Whether `name` is one of `--rotate`'s interval directories, exactly as
/// [`tapstat_pipeline::interval_name`] spells them: `YYYY_MM_DD_HH_MM.out`, or
/// `YYYY_MM_DD_HH_MM_SS.out` (periods under a minute), digits where digits belong;
/// with `part`, the hidden `.NAME.part` of an interval still open.
fn is_interval(name: &str, part: bool) -> bool {
    let n = if part {
        match name.strip_prefix('.').and_then(|n| n.strip_suffix(".part")) {
            Some(n) => n,
            None => return false,
        }
    } else {
        name
    };
    let Some(stamp) = n.strip_suffix(".out") else { return false };
    let fields: Vec<&str> = stamp.split('_').collect();
    matches!(fields.len(), 5 | 6)
        && fields
            .iter()
            .enumerate()
            .all(|(i, f)| f.len() == if i == 0 { 4 } else { 2 } && f.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `name` is a log file tapstat writes: every log ([`LogId::ALL`]) in every
/// format and compression, and the further parts of a reopened Parquet log
/// (`log_x.1.parquet`).
///
/// [`LogId::ALL`]: tapstat_analyze::logs::LogId::ALL
fn is_log(name: &str) -> bool {
    use tapstat_sink::{Compress, Format};
    tapstat_analyze::logs::LogId::ALL.iter().any(|id| {
        [Format::Tsv, Format::Jsonl, Format::Parquet].into_iter().any(|f| {
            [Compress::None, Compress::Zstd, Compress::Gzip].into_iter().any(|c| {
                let full = f.file_name(id.name()) + c.suffix();
                if name == full {
                    return true;
                }
                // A Parquet log reopened goes on in `stem.N.ext` (tapstat_sink's free_part).
                let Some((stem, ext)) = full.rsplit_once('.') else { return false };
                f == Format::Parquet
                    && name
                        .strip_prefix(stem)
                        .and_then(|r| r.strip_prefix('.'))
                        .and_then(|r| r.strip_suffix(ext))
                        .and_then(|r| r.strip_suffix('.'))
                        .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
            })
        })
    })
}

/// Whether `name` is a file tapstat writes in an output directory or in one of its
/// interval directories (the lock included).
fn is_our_file(name: &str) -> bool {
    is_log(name) || [SUMMARY, "stats.jsonl", HISTOGRAMS, crate::report::REPORT, LOCK].contains(&name)
}

/// Whether `name` is an earlier run's output in an output directory: a file tapstat
/// writes (not the lock, which stays), or an interval directory, open or closed.
fn is_ours(name: &str) -> bool {
    (is_our_file(name) && name != LOCK) || is_interval(name, false) || is_interval(name, true)
}

/// Why `--force` may not remove `p`, an entry named as tapstat's: it is a directory
/// where tapstat writes a file, or an interval directory holding anything that is not
/// a file tapstat writes (a subdirectory, another name), named.
fn foreign_inside(p: &Path) -> Result<Option<String>> {
    let m = std::fs::symlink_metadata(p).with_context(|| format!("{}", p.display()))?;
    if !m.is_dir() {
        return Ok(None);
    }
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if !is_interval(name, false) && !is_interval(name, true) {
        return Ok(Some("it is a directory, where tapstat writes a file".to_string()));
    }
    let mut entries: Vec<std::fs::DirEntry> =
        std::fs::read_dir(p).with_context(|| format!("reading {}", p.display()))?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(true);
        if is_dir || !e.file_name().to_str().is_some_and(is_our_file) {
            return Ok(Some(format!("it holds {}, which tapstat did not write", e.path().display())));
        }
    }
    Ok(None)
}

/// What a file of type `t` is, in words (for a refusal).
fn kind_of(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    match t {
        t if t.is_dir() => "a directory",
        t if t.is_symlink() => "a symbolic link",
        t if t.is_fifo() => "a FIFO",
        t if t.is_socket() => "a socket",
        t if t.is_block_device() || t.is_char_device() => "a device",
        _ => "not a regular file",
    }
}

/// Refuses `-o DIR` whose last component is a symbolic link owned by another user
/// than root or the one running tapstat: planted in a shared directory, it would
/// send the output (and `--force`'s removals) wherever its owner chose. A link of
/// root's or of the user's own is followed, as any path on the command line.
fn check_link_owner(dir: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::symlink_metadata(dir) else { return Ok(()) };
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    if m.file_type().is_symlink() && m.uid() != 0 && m.uid() != me {
        bail!(
            "-o {}: is a symbolic link owned by another user (uid {}); refusing to follow it: give the directory it points to, if it is the one meant",
            dir.display(),
            m.uid()
        );
    }
    Ok(())
}

/// Opens (creating it) the lock file at `path` without following a link and without
/// blocking, and refuses anything but a regular file with one name, in one line
/// saying what is there instead (a FIFO opened for writing would fail with "No such
/// device or address", a directory with "Is a directory").
fn open_lock(path: &Path) -> Result<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let refuse = |what: &str| {
        anyhow::anyhow!("{}: is {what}, not tapstat's lock file; remove it (or choose another -o)", path.display())
    };
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.is_file() {
            return Err(refuse(kind_of(m.file_type())));
        }
    }
    // Read and write: a FIFO put there in between opens at once (O_NONBLOCK), to be
    // refused by the check on the descriptor.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("a symbolic link"),
            Some(libc::EISDIR) => refuse("a directory"),
            _ => anyhow::Error::new(e).context(path.display().to_string()),
        })?;
    let m = f.metadata().with_context(|| path.display().to_string())?;
    if !m.is_file() {
        return Err(refuse(kind_of(m.file_type())));
    }
    if m.nlink() != 1 {
        return Err(refuse("a file with several names (a hard link)"));
    }
    Ok(f)
}

/// Refuses a directory at `.summary.json.tmp`, the name summary.json is written
/// through at the end: found now rather than after all the work. (Anything else
/// there, a killed run's file or a link, is removed when the summary is written.)
fn check_summary_tmp(dir: &Path) -> Result<()> {
    let tmp = dir.join(SUMMARY_TMP);
    match std::fs::symlink_metadata(&tmp) {
        Ok(m) if m.is_dir() => bail!(
            "{}: is a directory, where tapstat writes summary.json at the end of the run; remove it (or choose another -o)",
            tmp.display()
        ),
        _ => Ok(()),
    }
}

/// Creates `dir`, locks it and clears or refuses an earlier run's output. Everything
/// that would fail the run later in the directory is checked here, before any input
/// is read: a link planted as `-o`, a file named by `-o`, a lock that is not a regular
/// file, a directory at summary.json's temporary name.
pub fn claim(dir: &Path, force: bool) -> Result<Claim> {
    check_link_owner(dir)?;
    let created = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => false,
        Ok(_) => bail!("-o {}: exists and is not a directory", dir.display()),
        Err(_) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            true
        }
    };
    let lock_path = dir.join(LOCK);
    let lock = open_lock(&lock_path)?;
    // SAFETY: flock on a descriptor we own; the result is checked.
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        bail!("{}: another tapstat run is writing to this directory (it holds .tapstat.lock)", dir.display());
    }
    check_summary_tmp(dir)?;
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
    // Everything is checked before anything is removed: a refusal leaves the directory
    // as it was.
    for p in &ours {
        if let Some(why) = foreign_inside(p)? {
            bail!("--force: not removing {}: {why}; move that away or choose another -o", p.display());
        }
    }
    for p in ours {
        // symlink_metadata: a link is removed itself, never followed. A directory here
        // holds only files tapstat writes (foreign_inside).
        let is_dir = std::fs::symlink_metadata(&p).map(|m| m.is_dir()).unwrap_or(false);
        let r = if is_dir { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        r.with_context(|| format!("--force: removing {}", p.display()))?;
    }
    Ok(Claim { _lock: lock, created })
}

/// The names of the run's summary and link histograms in the output directory.
pub const SUMMARY: &str = "summary.json";
/// The temporary name summary.json is written through.
const SUMMARY_TMP: &str = ".summary.json.tmp";
pub use tapstat_pipeline::HISTOGRAMS;

/// Writes `name` in `dir`, a file tapstat creates (never through a name it did not
/// create: `create_fresh`).
pub fn write_new(dir: &Path, name: &str, text: &str) -> Result<()> {
    use std::io::Write;
    let path = dir.join(name);
    let mut f = tapstat_sink::create_fresh(&path).with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes()).map_err(|e| {
        // What could not be written whole is not left behind (empty, or cut short, on
        // a full disk): the file is this run's, created just now.
        let _ = std::fs::remove_file(&path);
        anyhow::Error::new(e).context(format!("writing {}", path.display()))
    })
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
        .filter(|e| e.file_name().to_str().is_some_and(|n| is_interval(n, false)))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    Ok(v)
}

/// Writes `summary.json` atomically: a temporary file renamed into place.
pub fn write_summary(dir: &Path, json: &str) -> Result<()> {
    use std::io::Write;
    let tmp = dir.join(SUMMARY_TMP);
    let path = dir.join("summary.json");
    let mut f = tapstat_sink::create_fresh(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    // No fsync: the rename protects against a killed process, which is the case that
    // matters here; an fsync would cost tens of milliseconds on every run.
    let r = f.write_all(json.as_bytes()).with_context(|| format!("writing {}", tmp.display())).and_then(|()| {
        std::fs::rename(&tmp, &path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
    });
    if r.is_err() {
        // No empty or partial temporary file is left behind (a full disk).
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_names() {
        for n in [
            "log_tcp_complete",
            "log_udp_complete.jsonl",
            "log_http_complete.parquet",
            "log_tcp_periodic.1.parquet",
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
        for n in [
            "notes.txt",
            "summary.json.bak",
            ".tapstat.lock",
            "out",
            "x.out",
            "log_book.txt",
            "log_archive",
            "log_tcp_complete.txt",
            "log_tcp_complete.jsonl.bz2",
            "log_tcp_complete.x.parquet",
            "log_tcp_complete.1",
            "1999_backup_data.out",
            "2026_01_02_03_04_05_06.out",
            "2026_01_02_03_4.out",
            "2026-01-02_03_04.out",
            "2026_01_02_03_0a.out",
            ".2026_01_02_03_04.out",
            "2026_01_02_03_04.out.part",
        ] {
            assert!(!is_ours(n), "{n}");
        }
        for id in tapstat_analyze::logs::LogId::ALL {
            assert!(is_ours(&(tapstat_sink::Format::Jsonl.file_name(id.name()) + ".zst")), "{}", id.name());
        }
        assert!(is_our_file(".tapstat.lock"));
    }

    #[test]
    fn interval_names_are_those_of_the_pipeline() {
        for (secs, period) in [(1_767_322_440, 60_000_000_000), (1_767_322_445, 10_000_000_000)] {
            let n = tapstat_pipeline::interval_name(secs, period);
            assert!(is_interval(&n, false) && is_interval(&format!(".{n}.part"), true), "{n}");
        }
    }
}
