//! The whole engine on any bytes taken as a capture: `tapstat_pipeline::run`, twice.
//!
//! - run A: the bytes as a stream (`open_reader`, so a reader thread), 2 workers fed
//!   by the dispatcher thread, chunks of 8 frames and rings of 4 slots (so rings fill
//!   and wrap on small inputs);
//! - run B: the bytes as a memory-mapped file (`open_files`), 1 worker that reads,
//!   decodes and analyzes inline.
//!
//! Neither may panic (in any thread: libFuzzer's panic hook aborts the process, the
//! stable runner's records it).
//! `Err(Capture(NotACapture))` is fine, and then both runs must say so. Otherwise,
//! asserted (docs/ARCHITECTURE.md):
//! - "writes one record per flow when the flow ends", and at the end of input every
//!   flow ends: records written to the flow logs (`log_tcp_complete`,
//!   `log_tcp_nocomplete`, `log_udp_complete`, `log_other`; not the application
//!   layer's, one row per transaction) = flows started = flows ended (all reasons);
//! - "records of 1 worker and of N workers are the same set": when neither run evicted
//!   a flow (eviction is the one documented exception), the two runs wrote the same
//!   record lines to every log, and count the same packets, records and anomalies.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use tapstat_analyze::logs::LogId;
use tapstat_analyze::TrackerConfig;
use tapstat_capture::{open_files, open_reader, CaptureError, PacketSource};
use tapstat_pipeline::{run, EngineConfig, EngineError, Progress, Summary};

fn work_dir() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| std::env::temp_dir().join(format!("tapstat-fuzz-engine-{}", std::process::id())))
}

fn engine(how: &str, source: Box<dyn PacketSource>, workers: usize, out_dir: PathBuf) -> Option<Summary> {
    let cfg = EngineConfig {
        workers,
        out_dir,
        hash_seed: Some(1),
        chunk_frames: 8,
        ring_slots: 4,
        // Small, so a run allocates little; no fuzz input holds this many flows.
        tracker: TrackerConfig { capacity: 4096, ..TrackerConfig::default() },
        ..EngineConfig::default()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(Progress::default());
    match run(source, &cfg, stop, progress) {
        Ok(s) => {
            let _ = s.human();
            Some(s)
        }
        Err(EngineError::Capture(CaptureError::NotACapture { .. })) => None,
        Err(e) => panic!("{how}: the engine failed: {e}"),
    }
}

/// Record lines of every log in `dir`, sorted (header lines left out).
fn record_sets(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let mut logs = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("output dir") {
        let path = entry.expect("dir entry").path();
        let text = std::fs::read_to_string(&path).expect("a log file in UTF-8");
        let mut v: Vec<String> = text.lines().filter(|l| !l.starts_with('#')).map(str::to_string).collect();
        v.sort();
        logs.insert(path.file_name().unwrap().to_string_lossy().into_owned(), v);
    }
    logs
}

fn check_one(how: &str, s: &Summary) {
    assert!(!s.interrupted, "{how}: interrupted without a stop");
    let flows: u64 = s.flows.values().sum();
    let ended: u64 = s.end_reasons.values().sum();
    assert_eq!(ended, flows, "{how}: flows ended != flows started: {s:?}");
    // One record per flow in the log of its kind; the application layer's logs
    // (`log_http_complete`, `log_dns_complete`) hold transactions, not flows.
    let flow_logs = [LogId::TcpComplete, LogId::TcpNocomplete, LogId::Udp, LogId::Other].map(LogId::name);
    let flow_records: u64 = flow_logs.iter().filter_map(|l| s.records.get(*l)).sum();
    assert_eq!(flow_records, flows, "{how}: flow records != flows: {s:?}");
    assert!(s.non_ip_frames <= s.packets, "{how}: {s:?}");
}

/// One input of the `engine` target.
pub fn engine_one(data: &[u8]) {
    let dir = work_dir();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("work dir");
    let file = dir.join("input.cap");
    std::fs::write(&file, data).expect("writing the input file");
    let a = open_reader("fuzz", Cursor::new(data.to_vec()))
        .map_err(EngineError::from)
        .map(|src| engine("stream, 2 workers", Box::new(src), 2, dir.join("a")));
    let b = open_files(std::slice::from_ref(&file))
        .map_err(EngineError::from)
        .map(|src| engine("file, 1 worker", Box::new(src), 1, dir.join("b")));
    let (a, b) = match (a, b) {
        (Ok(Some(a)), Ok(Some(b))) => (a, b),
        (
            Err(EngineError::Capture(CaptureError::NotACapture { .. })),
            Err(EngineError::Capture(CaptureError::NotACapture { .. })),
        ) => return,
        (a, b) => panic!("stream and file runs disagree: {a:?} / {b:?}"),
    };
    check_one("stream, 2 workers", &a);
    check_one("file, 1 worker", &b);
    assert_eq!(a.packets, b.packets, "packets differ between the runs");
    assert_eq!(a.bytes, b.bytes, "bytes differ between the runs");
    assert_eq!(a.non_ip_frames, b.non_ip_frames, "non-IP frames differ between the runs");
    assert_eq!(a.anomalies, b.anomalies, "anomalies differ between the runs");
    if a.evictions == 0 && b.evictions == 0 {
        assert_eq!(a.records, b.records, "records differ between 2 workers and 1");
        assert_eq!(a.flows, b.flows, "flows differ between 2 workers and 1");
        let (ra, rb) = (record_sets(&dir.join("a")), record_sets(&dir.join("b")));
        for (log, la) in &ra {
            let lb = rb.get(log).map(Vec::as_slice).unwrap_or(&[]);
            if la.as_slice() != lb {
                let only_a: Vec<&String> = la.iter().filter(|r| !lb.contains(r)).take(3).collect();
                let only_b: Vec<&String> = lb.iter().filter(|r| !la.contains(r)).take(3).collect();
                panic!("{log} differs between 2 workers (stream) and 1 (file): {} vs {} records\nonly with 2: {only_a:#?}\nonly with 1: {only_b:#?}", la.len(), lb.len());
            }
        }
    }
}
