//! The records of 1 worker and of N workers are the same set, on every dev capture
//! and on the sample trace.

use crate::common::*;

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
            // The link histograms (on by default) too: flows moved between workers are
            // counted once, where they end.
            for log in LOGS.iter().chain(L7_LOGS.iter()).chain(["histograms.tsv"].iter()) {
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

/// Flow-affinity batches (`--flow-batches on`): workers account each batch
/// grouped by flow, and the records are those of input order. Chunks of 64 frames put
/// many batch and segment boundaries in every capture; DNS answers cut segments (the
/// `fqdn` of every flow is compared); with `--periodic`, segments stop at boundaries
/// and the periodic rows are compared too.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn flow_affinity_batches_write_the_records_of_input_order_on_every_dev_capture() {
    let Some(corpus) = corpus() else { return };
    let caps = dev_captures(&corpus);
    assert!(caps.len() > 100, "expected the dev corpus, found {} captures", caps.len());
    let periodic_logs = ["log_tcp_periodic", "log_udp_periodic"];
    let mut total = 0;
    for cap in &caps {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let runs: [(&str, usize, &[&str]); 4] = [
            ("w1", 1, &[]),
            ("w3g", 3, &["--flow-batches", "on", "--chunk-frames", "64"]),
            ("w3p", 3, &["--periodic", "1", "--chunk-frames", "64"]),
            ("w3gp", 3, &["--periodic", "1", "--flow-batches", "on", "--chunk-frames", "64"]),
        ];
        let dirs: Vec<TestDir> = runs
            .iter()
            .map(|(tag, w, extra)| {
                let d = tempdir(&format!("fb-{tag}-{name}"));
                analyze(cap, &d, *w, extra);
                d
            })
            .collect();
        let hist = ["histograms.tsv"];
        let pairs =
            [(0, 1, &LOGS[..]), (0, 1, &L7_LOGS[..]), (0, 1, &hist[..]), (2, 3, &LOGS[..]), (2, 3, &periodic_logs[..])];
        for (x, y, logs) in pairs {
            for log in logs {
                let (a, b) = (record_set(&dirs[x], log), record_set(&dirs[y], log));
                if a != b {
                    let only_a: Vec<&String> = a.iter().filter(|r| !b.contains(r)).take(3).collect();
                    let only_b: Vec<&String> = b.iter().filter(|r| !a.contains(r)).take(3).collect();
                    panic!(
                        "{name}: {log} differs between {} and {} ({} vs {} records)\nonly in the first: {only_a:#?}\nonly in the second: {only_b:#?}",
                        runs[x].0,
                        runs[y].0,
                        a.len(),
                        b.len()
                    );
                }
                total += a.len();
            }
        }
        let (s1, s3) = (summary(&dirs[0]), summary(&dirs[1]));
        assert_eq!(s1["packets"], s3["packets"], "{name}");
        assert_eq!(s1["records"], s3["records"], "{name}");
        for d in dirs {
            let _ = std::fs::remove_dir_all(&d);
        }
    }
    assert!(total > 10000, "suspiciously few records over the corpus: {total}");
}
