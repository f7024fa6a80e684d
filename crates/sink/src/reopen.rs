//! Opening an output directory for appending: what a live run does when it is told
//! (SIGHUP) to reopen its files, e.g. after logrotate moved them away.

use crate::{columnar, err, Compress, OutputDir, SinkError};
use std::path::{Path, PathBuf};

impl OutputDir {
    /// Like [`OutputDir::create`], but files that exist are appended to (their
    /// header is not written again); missing ones are created with their header. A
    /// Parquet file cannot be appended to (its footer, written when it is closed, comes
    /// last): one that exists is left as it is, and the log goes on in a new file,
    /// `log_x.1.parquet`, `log_x.2.parquet`... (the first free name).
    pub fn open_append(dir: &Path, names: &[String], headers: &[Vec<u8>]) -> Result<OutputDir, SinkError> {
        OutputDir::open_append_compressed(dir, names, headers, Compress::None)
    }

    /// [`OutputDir::open_append`] through `compress`: what is appended to a
    /// compressed file is a new zstd frame or gzip member, which `zstdcat` and `zcat`
    /// read on from the earlier ones.
    pub fn open_append_compressed(
        dir: &Path,
        names: &[String],
        headers: &[Vec<u8>],
        compress: Compress,
    ) -> Result<OutputDir, SinkError> {
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        let mut o = OutputDir::over(dir, Vec::new());
        // A file created here ends its first frame at the first flush, as in `create`.
        let mut empty = Vec::new();
        for (name, header) in names.iter().zip(headers) {
            if columnar::LogSchema::of_header(header).is_some() {
                let path = free_part(dir, name);
                let f = crate::create_fresh(&path).map_err(err(&path))?;
                o.start(name, path, f, header, true, compress)?;
                empty.push(false);
                continue;
            }
            let path = dir.join(name);
            let f = crate::open_append_nofollow(&path).map_err(err(&path))?;
            let fresh = f.metadata().map_err(err(&path))?.len() == 0;
            o.start(name, path, f, header, fresh, compress)?;
            empty.push(fresh);
        }
        o.dirty = empty;
        Ok(o)
    }
}

/// `dir/name` if nothing has that name, else the first free `dir/stem.N.ext`.
fn free_part(dir: &Path, name: &str) -> PathBuf {
    let taken = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    let path = dir.join(name);
    if !taken(&path) {
        return path;
    }
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    (1u64..).map(|k| dir.join(format!("{stem}.{k}.{ext}"))).find(|p| !taken(p)).expect("a free name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_without_a_second_header() {
        let d = std::env::temp_dir().join(format!("tapstat-reopen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let names = vec!["a".to_string()];
        let headers = vec![b"#h\n".to_vec()];
        let mut o = OutputDir::open_append(&d, &names, &headers).unwrap();
        o.append(0, b"1\n").unwrap();
        o.finish().unwrap();
        let mut o = OutputDir::open_append(&d, &names, &headers).unwrap();
        o.append(0, b"2\n").unwrap();
        o.finish().unwrap();
        assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "#h\n1\n2\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_parquet_log_goes_on_in_a_new_part() {
        let d = std::env::temp_dir().join(format!("tapstat-reopen-parts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(free_part(&d, "log_x.parquet"), d.join("log_x.parquet"));
        std::fs::write(d.join("log_x.parquet"), "PAR1").unwrap();
        assert_eq!(free_part(&d, "log_x.parquet"), d.join("log_x.1.parquet"));
        std::os::unix::fs::symlink("nowhere", d.join("log_x.1.parquet")).unwrap();
        assert_eq!(free_part(&d, "log_x.parquet"), d.join("log_x.2.parquet"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
