//! `tapstat synth --profile`: the three traffic shapes of DPI-Sched (for comparing
//! scheduling policies), read back by tapstat. The records must show the shape, every
//! connection complete, no decoding anomaly, and the same records with 1 worker and 3.

use crate::common::*;
use std::collections::BTreeMap;

fn packets(r: &BTreeMap<String, String>) -> u64 {
    r["c_pkts_all"].parse::<u64>().expect("c_pkts_all") + r["s_pkts_all"].parse::<u64>().expect("s_pkts_all")
}

#[test]
fn profiles_show_their_shapes_in_the_records() {
    let dir = tempdir("profiles");
    for profile in ["dominant", "many", "balanced"] {
        let pcap = dir.join(format!("{profile}.pcap"));
        let o = tapstat(&["synth", "--profile", profile, "--packets", "20000", "-o", pcap.to_str().unwrap()]);
        assert!(o.status.success(), "{profile}: {}", String::from_utf8_lossy(&o.stderr));
        let (one, three) = (dir.join(format!("{profile}-w1")), dir.join(format!("{profile}-w3")));
        analyze(&pcap, &one, 1, &[]);
        analyze(&pcap, &three, 3, &[]);
        for log in LOGS.iter().chain(&L7_LOGS) {
            assert_eq!(record_set(&one, log), record_set(&three, log), "{profile}: {log} with -w 1 and -w 3");
        }
        let s = summary(&one);
        assert_eq!(s["anomalies"], serde_json::json!({}), "{profile}: anomalies");

        // Complete TCP connections only.
        let recs = read_log(&one, "log_tcp_complete");
        for log in ["log_tcp_nocomplete", "log_udp_complete", "log_other"] {
            assert!(read_log(&one, log).is_empty(), "{profile}: records in {log}");
        }
        assert!(recs.iter().all(|r| r["conn_state"] == "SF"), "{profile}: every connection closed by FIN");
        let pkts: Vec<u64> = recs.iter().map(packets).collect();
        let total: u64 = pkts.iter().sum();
        assert_eq!(total, s["packets"].as_u64().expect("packets"), "{profile}: every packet in a connection");
        assert!((18_000..=22_000).contains(&total), "{profile}: about the packets asked for: {total}");
        let (max, min) = (*pkts.iter().max().unwrap(), *pkts.iter().min().unwrap());
        match profile {
            "dominant" => {
                assert!(max * 100 >= total * 80, "the largest flow has {max} of {total} packets");
                assert!(recs.len() > 20, "a background of small flows: {}", recs.len());
            }
            "many" => {
                let n = recs.len() as u64;
                assert!(n * 10 >= total * 9 / 10 && n * 10 <= total * 11 / 10, "{n} flows in {total} packets");
                assert!(max <= 20, "short flows, the longest {max} packets");
            }
            _ => {
                assert!((64..=256).contains(&recs.len()), "{} flows", recs.len());
                assert!(max * 10 <= min * 12, "equal shares: {min}..={max} packets per flow");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn profile_flags_are_checked() {
    let dir = tempdir("profile-flags");
    let f = dir.join("x.pcap");
    let f = f.to_str().unwrap();
    let o = tapstat(&["synth", "--profile", "most", "-o", f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("'most' for '--profile"), "one-line error");
    let help =
        String::from_utf8_lossy(&tapstat(&["synth", "--help"]).stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("[possible values: dominant, many, balanced]"), "{help}");
    for bad in [["--packets", "0"], ["--packets", "-5"]] {
        let o = tapstat(&["synth", "--profile", "many", bad[0], bad[1], "-o", f]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }
    let o = tapstat(&["synth", "--packets", "100", "-o", f]);
    assert_eq!(o.status.code(), Some(2), "--packets without --profile");
    let o = tapstat(&["synth", "--profile", "many", "--flood", "10", "-o", f]);
    assert_eq!(o.status.code(), Some(2), "--profile with --flood");
    let o = tapstat(&["synth", "--profile", "balanced", "--packets", "100", "-o", f]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}
