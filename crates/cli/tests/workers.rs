//! The records of 1 worker and of N workers are the same set, on every dev capture
//! and on the sample trace.

mod common;
use common::*;

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn one_and_three_workers_with_three_dispatchers_write_the_same_records_on_every_dev_capture() {
    let Some(corpus) = corpus() else { return };
    let caps = dev_captures(&corpus);
    assert!(caps.len() > 100, "expected the dev corpus, found {} captures", caps.len());
    let mut total = 0;
    let mut named = 0;
    for cap in &caps {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let d1 = tempdir(&format!("w1-{name}"));
        let d3 = tempdir(&format!("w3-{name}"));
        analyze(cap, &d1, 1, &[]);
        // Three dispatchers over chunks of 7 frames: every capture is cut in many
        // chunks decoded in parallel, so fragments, DNS answers and the clock cross
        // chunk and dispatcher boundaries everywhere.
        analyze(cap, &d3, 3, &["--dispatchers", "3", "--chunk-frames", "7"]);
        for log in LOGS.iter().chain(L7_LOGS.iter()) {
            let a = record_set(&d1, log);
            let b = record_set(&d3, log);
            if a != b {
                let only1: Vec<&String> = a.iter().filter(|r| !b.contains(r)).take(3).collect();
                let only3: Vec<&String> = b.iter().filter(|r| !a.contains(r)).take(3).collect();
                panic!("{name}: {log} differs between 1 and 3 workers ({} vs {} records)\nonly with 1: {only1:#?}\nonly with 3: {only3:#?}", a.len(), b.len());
            }
            total += a.len();
        }
        // The DNS answers reach every worker (DN-Hunter's broadcast): names found with
        // 3 workers are the ones found with 1 (checked above), and there are some.
        for log in ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete"] {
            named += read_log(&d3, log).iter().filter(|r| r.get("fqdn").is_some_and(|v| v != "-")).count();
        }
        let (s1, s3) = (summary(&d1), summary(&d3));
        assert_eq!(s1["packets"], s3["packets"], "{name}");
        assert_eq!(s1["records"], s3["records"], "{name}");
        assert_eq!(s1["anomalies"], s3["anomalies"], "{name}");
        let _ = std::fs::remove_dir_all(&d1);
        let _ = std::fs::remove_dir_all(&d3);
    }
    assert!(total > 5000, "suspiciously few records over the corpus: {total}");
    eprintln!("{named} flows named by DNS answers (fqdn) with 3 workers");
    assert!(named > 100, "too few flows with a DNS name: {named}");
}

/// The records are the same under every scheduling policy: `balance` and `bundle` move
/// bins of flows, state and all, between workers at every epoch (here one chunk of 16
/// frames, so flows move all the time), and must lose or change nothing.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn every_scheduling_policy_writes_the_records_of_one_worker() {
    let Some(corpus) = corpus() else { return };
    let caps = dev_captures(&corpus);
    let mut moved = 0;
    for cap in &caps {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let d1 = tempdir(&format!("s1-{name}"));
        analyze(cap, &d1, 1, &[]);
        for policy in ["balance", "bundle"] {
            let d4 = tempdir(&format!("s4-{policy}-{name}"));
            let flags = ["--schedule", policy, "--dispatchers", "2", "--chunk-frames", "16", "--epoch-chunks", "1"];
            analyze(cap, &d4, 4, &flags);
            for log in LOGS.iter().chain(L7_LOGS.iter()) {
                assert!(
                    record_set(&d1, log) == record_set(&d4, log),
                    "{name}: {log} differs between 1 worker and 4 with --schedule {policy}"
                );
            }
            let s = summary(&d4);
            assert_eq!(s["packets"], summary(&d1)["packets"], "{name}");
            assert_eq!(s["scheduling"]["policy"], policy);
            moved += s["scheduling"]["flows_moved"].as_u64().unwrap();
            let _ = std::fs::remove_dir_all(&d4);
        }
        let _ = std::fs::remove_dir_all(&d1);
    }
    eprintln!("{moved} flows moved between workers over the corpus");
    assert!(moved > 1000, "the policies moved too few flows to test anything: {moved}");
}
