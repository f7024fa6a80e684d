//! Opening an output directory for appending: what a live run does when it is told
//! (SIGHUP) to reopen its files, e.g. after logrotate moved them away.

use crate::{err, Compress, Dest, Out, OutputDir, SinkError};
use std::path::Path;

impl OutputDir {
    /// Like [`OutputDir::create`], but files that exist are appended to (their
    /// header is not written again); missing ones are created with their header.
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
        let mut files = Vec::new();
        for (name, header) in names.iter().zip(headers) {
            let path = dir.join(name);
            let f = crate::open_append_nofollow(&path).map_err(err(&path))?;
            let empty = f.metadata().map_err(err(&path))?.len() == 0;
            let mut out = Out::new(Dest::File(f), compress).map_err(err(&path))?;
            if empty {
                out.write_all(header).map_err(err(&path))?;
            }
            files.push((path, out, empty));
        }
        let empty: Vec<bool> = files.iter().map(|f| f.2).collect();
        let mut o = OutputDir::over(dir, files.into_iter().map(|(p, out, _)| (p, out)).collect());
        // A file created here ends its first frame at the first flush, as in `create`.
        o.dirty = empty;
        Ok(o)
    }
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
}
