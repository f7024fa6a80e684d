//! Every file of the corpus's malformed/ folder is processed without a crash: exit 0
//! with anomalies counted, or a clear one-line error for a file that is not a capture.

use crate::common::*;

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn every_malformed_capture_is_handled() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("malformed");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    assert!(files.len() >= 80, "expected the malformed corpus, found {}", files.len());
    let (mut ok, mut refused) = (0, 0);
    for f in &files {
        let out = tempdir("malformed");
        let o = tapstat(&["-r", f.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "-w", "2"]);
        let err = String::from_utf8_lossy(&o.stderr);
        match o.status.code() {
            Some(0) => {
                ok += 1;
                let s = summary(&out);
                assert!(s["packets"].is_u64(), "{}: summary without packets", f.display());
            }
            Some(1) => {
                refused += 1;
                assert!(err.contains("not a pcap or pcapng"), "{}: unexpected error: {err}", f.display());
                assert_eq!(err.lines().count(), 1, "{}: {err}", f.display());
            }
            other => panic!("{}: exit {other:?} (crash?): {err}", f.display()),
        }
    }
    eprintln!("malformed: {ok} processed, {refused} refused as not captures");
    assert!(ok > refused, "most malformed files are captures with damage inside");
}
