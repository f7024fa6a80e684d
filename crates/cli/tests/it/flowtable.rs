//! Records do not depend on the flow table: every index structure, every hash function
//! and index sizes from tiny (long chains, cuckoo displacements, growth) to the default
//! give the same records as the default table.

use crate::common::*;

const TABLES: [&str; 5] = ["lists", "trees", "swiss", "cuckoo", "chunks"];
const HASHES: [&str; 9] =
    ["foldhash", "ahash", "xxh3", "murmur3", "lookup3", "coralreef", "fnv1a", "crc32", "toeplitz"];

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn every_table_and_hash_writes_the_same_records() {
    let Some(corpus) = corpus() else { return };
    let caps = ["ndpi__gnutella.pcap", "ndpi__wechat.pcap", "ndpi__bittorrent.pcap", "ndpi__http_ipv6.pcap"];
    for cap in caps {
        let file = corpus.join(cap);
        let base = tempdir(&format!("ft-base-{cap}"));
        analyze(&file, &base, 1, &[]);
        let want: Vec<Vec<String>> = LOGS.iter().map(|l| record_set(&base, l)).collect();
        assert!(want.iter().map(|v| v.len()).sum::<usize>() > 0, "{cap}: no records to compare");
        let mut runs: Vec<Vec<String>> = Vec::new();
        for t in TABLES {
            for slots in ["0", "7", "64"] {
                runs.push(vec!["--flow-table".into(), t.into(), "--flow-slots".into(), slots.into()]);
            }
        }
        for h in HASHES {
            // The hash also picks the worker: 2 workers check that too (the last item).
            runs.push(vec!["--flow-hash".into(), h.into(), "--flow-table".into(), "lists".into(), "2".into()]);
            runs.push(vec![
                "--flow-hash".into(),
                h.into(),
                "--flow-table".into(),
                "cuckoo".into(),
                "--flow-slots".into(),
                "16".into(),
            ]);
        }
        for mut extra in runs {
            // A trailing worker count (the hash also picks the worker).
            let workers = if extra.len() % 2 == 1 { extra.pop().unwrap().parse().unwrap() } else { 1 };
            let tag = format!("{}-w{workers}", extra.join("-"));
            let d = tempdir(&format!("ft-{cap}-{tag}"));
            let args: Vec<&str> = extra.iter().map(|s| s.as_str()).collect();
            analyze(&file, &d, workers, &args);
            for (log, w) in LOGS.iter().zip(&want) {
                assert_eq!(&record_set(&d, log), w, "{cap}: {log} differs with {tag}");
            }
            let _ = std::fs::remove_dir_all(&d);
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn summary_reports_the_table_and_the_packet_times() {
    let Some(corpus) = corpus() else { return };
    let d = tempdir("ft-summary");
    analyze(
        &corpus.join("ndpi__wechat.pcap"),
        &d,
        1,
        &["--flow-table", "cuckoo", "--flow-hash", "crc32", "--time-sample", "1"],
    );
    let s = summary(&d);
    assert_eq!(s["flow_table"], "cuckoo");
    assert_eq!(s["flow_hash"], "crc32");
    let pt = &s["packet_time"];
    assert_eq!(pt["sample_every"], 1);
    assert!(pt["samples"].as_u64().unwrap() > 1000);
    assert!(pt["p50_ns"].as_u64().unwrap() <= pt["p99_ns"].as_u64().unwrap());
    assert!(pt["p99_ns"].as_u64().unwrap() <= pt["max_ns"].as_u64().unwrap());
    let d0 = tempdir("ft-summary-off");
    analyze(&corpus.join("ndpi__wechat.pcap"), &d0, 1, &["--time-sample", "0"]);
    assert_eq!(summary(&d0)["packet_time"]["samples"], 0);
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&d0);
}
