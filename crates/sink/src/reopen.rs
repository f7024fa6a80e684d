//! Opening an output directory for appending: what a live run does when it is told
//! (SIGHUP) to reopen its files, e.g. after logrotate moved them away.

use crate::{OutputDir, SinkError};
use std::io::Write;
use std::path::Path;

impl OutputDir {
    /// Like [`OutputDir::create`], but files that exist are appended to (their
    /// header is not written again); missing ones are created with their header.
    pub fn open_append(dir: &Path, names: &[String], headers: &[Vec<u8>]) -> Result<OutputDir, SinkError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SinkError { path, source }
        };
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        let mut files = Vec::new();
        for (name, header) in names.iter().zip(headers) {
            let path = dir.join(name);
            let mut f = crate::open_append_nofollow(&path).map_err(err(&path))?;
            if f.metadata().map_err(err(&path))?.len() == 0 {
                f.write_all(header).map_err(err(&path))?;
            }
            files.push((path, f));
        }
        Ok(OutputDir { dir: dir.to_path_buf(), files })
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
