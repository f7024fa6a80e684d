//! HTTP counts and pairing on a long keep-alive connection that lost a response at the
//! probe: every message counted (`http_req_cnt`, `http_res_cnt`), as tshark counts them,
//! the rows capped at 64 and the cap flagged, and the one request whose response was
//! lost the only one unanswered. The capture is built here (`golden::keep_alive`); the
//! smaller case with pipelining, HEAD, 100 Continue, 204 and 304 is the golden case
//! `http_pairing`.

use crate::common::*;
use crate::golden::{keep_alive, Cap};
use tapstat_testkit::frames::*;

use std::path::Path;
use std::process::Command;

fn write(cap: &Cap, path: &Path) {
    let records: Vec<Record> = cap.frames.iter().map(|(us, f)| (us * 1000, f.clone(), f.len() as u32)).collect();
    std::fs::write(path, pcap(PcapFormat::Micro, false, 1, 65535, &records)).unwrap();
}

/// tshark's request and response messages in `path` (`-E occurrence=a`: a frame with
/// several messages lists them all).
fn tshark_counts(path: &Path) -> (usize, usize) {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-Y", "http", "-T", "fields", "-e", "http.request.method", "-e", "http.response.code"])
        .args(["-E", "occurrence=a", "-E", "separator=/t"])
        .output()
        .expect("tshark runs");
    let count = |v: &str| if v.is_empty() { 0 } else { v.split(',').count() };
    String::from_utf8_lossy(&out.stdout).lines().fold((0, 0), |(q, s), l| {
        let mut p = l.split('\t');
        (q + count(p.next().unwrap_or("")), s + count(p.next().unwrap_or("")))
    })
}

#[test]
fn a_thousand_requests_and_one_lost_response() {
    let dir = tempdir("http-pairing");
    let mut cap = Cap::new();
    keep_alive(&mut cap, 45_201, 1000, &[40]);
    let input = dir.join("keep_alive.pcap");
    write(&cap, &input);
    let out = dir.join("out");
    analyze(&input, &out, 1, &[]);
    let tcp = read_log(&out, "log_tcp_complete");
    assert_eq!(tcp.len(), 1);
    let counts = (tcp[0]["http_req_cnt"].as_str(), tcp[0]["http_res_cnt"].as_str());
    assert_eq!(counts, ("1000", "999"));
    assert!(tcp[0]["l7_events"].contains("http_too_many_transactions"), "{}", tcp[0]["l7_events"]);
    let http = read_log(&out, "log_http_complete");
    assert_eq!(http.len(), 64, "the row cap");
    let alone: Vec<_> =
        http.iter().filter(|r| r["method"] == "-" || r["response"] == "-").map(|r| r["path"].clone()).collect();
    assert_eq!(alone, ["/item/40"], "only the request whose response was lost is unanswered");
    for r in &http {
        if r["response"] != "-" {
            let (q, s): (f64, f64) = (r["req_time"].parse().unwrap(), r["res_time"].parse().unwrap());
            assert!((s - q - 20.0).abs() < 0.01, "each request paired with its own response: {r:?}");
        }
    }
    if tshark_ready() {
        assert_eq!(tshark_counts(&input), (1000, 999));
        let golden = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/http_pairing"));
        // 70 + 10 requests; 69 + 11 responses (100 Continue is one), as the golden
        // case's http_req_cnt and http_res_cnt.
        assert_eq!(tshark_counts(&golden.join("input.pcap")), (80, 80));
    }
}
