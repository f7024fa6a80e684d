//! The synthesizer knows exactly what it wrote: every record of the sample trace must
//! equal its truth (packets, wire and payload bytes, retransmissions, out-of-sequence
//! fills, handshake, how it closed), with 1 worker and with 2.

use crate::common::*;
use std::collections::BTreeMap;
use tapstat_lab::synth::{write_pcap, Close, FlowKind, SynthConfig};

fn key(ip: &str, port: &str, sip: &str, sport: &str) -> String {
    format!("{ip}:{port}>{sip}:{sport}")
}

#[test]
fn records_equal_the_synthesizers_truth() {
    let dir = tempdir("sample");
    let pcap = dir.join("sample.pcap");
    let cfg = SynthConfig { seed: 7, ..Default::default() };
    let truth = write_pcap(&pcap, &cfg).expect("sample written");
    for workers in [1, 2] {
        let out = dir.join(format!("out{workers}"));
        analyze(&pcap, &out, workers, &[]);
        let mut recs: BTreeMap<String, (String, BTreeMap<String, String>)> = BTreeMap::new();
        for log in LOGS {
            for r in read_log(&out, log) {
                let k =
                    key(&r["c_ip"], r.get("c_port").map_or("0", |s| s), &r["s_ip"], r.get("s_port").map_or("0", |s| s));
                assert!(
                    recs.insert(k.clone(), (log.to_string(), r)).is_none(),
                    "{k}: two records for one synthetic flow"
                );
            }
        }
        assert_eq!(recs.len(), truth.len(), "one record per synthetic flow");
        let (mut retx, mut ooo) = (0, 0);
        for t in &truth {
            let k =
                key(&t.client.0.to_string(), &t.client.1.to_string(), &t.server.0.to_string(), &t.server.1.to_string());
            let (log, r) = recs.get(&k).unwrap_or_else(|| panic!("no record for {k} ({:?})", t.kind));
            let n = |c: &str| r[c].parse::<u64>().unwrap_or_else(|_| panic!("{k}: {c} = {}", r[c]));
            assert_eq!(n("c_pkts_all"), t.c_pkts, "{k} c_pkts_all");
            assert_eq!(n("s_pkts_all"), t.s_pkts, "{k} s_pkts_all");
            assert_eq!(n("c_bytes_wire"), t.c_wire_bytes, "{k} c_bytes_wire");
            assert_eq!(n("s_bytes_wire"), t.s_wire_bytes, "{k} s_bytes_wire");
            assert_eq!(n("c_bytes_all"), t.c_payload_bytes, "{k} c_bytes_all");
            assert_eq!(n("s_bytes_all"), t.s_payload_bytes, "{k} s_bytes_all");
            let first_ms = t.first_ns as f64 / 1e6;
            assert!((r["first"].parse::<f64>().unwrap() - first_ms).abs() < 0.002, "{k} first");
            if t.proto == 6 {
                assert_eq!(n("c_pkts_retx"), t.c_retx_pkts, "{k} c_pkts_retx");
                assert_eq!(n("s_pkts_retx"), t.s_retx_pkts, "{k} s_pkts_retx");
                assert_eq!(n("c_bytes_retx"), t.c_retx_bytes, "{k} c_bytes_retx");
                assert_eq!(n("s_bytes_retx"), t.s_retx_bytes, "{k} s_bytes_retx");
                assert_eq!(n("c_pkts_ooo"), t.c_ooo_pkts, "{k} c_pkts_ooo");
                assert_eq!(n("s_pkts_ooo"), t.s_ooo_pkts, "{k} s_pkts_ooo");
                // Unique bytes: everything sent once, whatever was retransmitted.
                assert_eq!(n("c_bytes_uniq"), t.c_payload_bytes - t.c_retx_bytes, "{k} c_bytes_uniq");
                assert_eq!(n("s_bytes_uniq"), t.s_payload_bytes - t.s_retx_bytes, "{k} s_bytes_uniq");
                retx += t.c_retx_pkts + t.s_retx_pkts;
                ooo += t.c_ooo_pkts + t.s_ooo_pkts;
                let want_log = if t.handshake_complete { "log_tcp_complete" } else { "log_tcp_nocomplete" };
                assert_eq!(log, want_log, "{k}");
                let state = r["conn_state"].as_str();
                match (t.kind, t.closed_by) {
                    (FlowKind::TcpRejected, _) => assert_eq!(state, "REJ", "{k}"),
                    (FlowKind::TcpUnanswered, _) => assert_eq!(state, "S0", "{k}"),
                    (_, Close::Fin) => {
                        assert_eq!(state, "SF", "{k}");
                        assert_eq!(r["end_reason"], "fin", "{k}");
                    }
                    (_, Close::Rst) => {
                        assert!(state == "RSTO" || state == "RSTR", "{k}: {state}");
                        assert_eq!(r["end_reason"], "rst", "{k}");
                    }
                    (_, Close::None) => assert_eq!(state, "S1", "{k}"),
                }
                assert_eq!(r["client_rule"], "syn", "{k}");
            } else {
                assert_eq!(log, "log_udp_complete", "{k}");
            }
        }
        assert!(retx > 0 && ooo > 0, "the sample has retransmissions ({retx}) and out-of-sequence fills ({ooo})");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
