//! `--periodic`: rows of live flows per interval of packet time.

use crate::common::*;

use std::collections::HashMap;

const PERIODIC: [&str; 2] = ["log_tcp_periodic", "log_udp_periodic"];

/// On every dev capture: 1 and 3 workers write the same periodic rows, and where a
/// flow's last packet came before its last row's boundary, its rows add up to its
/// final record, packet for packet and byte for byte, with the same flow id (on the
/// captures whose clock never steps back).
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn periodic_rows_add_up_to_the_final_record_with_any_number_of_workers() {
    let Some(corpus) = corpus() else { return };
    let (mut rows, mut checked) = (0usize, 0usize);
    for cap in dev_captures(&corpus) {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let one = tempdir(&format!("periodic1-{name}"));
        let three = tempdir(&format!("periodic3-{name}"));
        analyze(&cap, &one, 1, &["--periodic", "1"]);
        analyze(&cap, &three, 3, &["--periodic", "1"]);
        for log in PERIODIC.iter().chain(LOGS.iter()) {
            assert_eq!(record_set(&one, log), record_set(&three, log), "{name} {log}: 1 vs 3 workers");
        }
        // flow id -> (c_pkts, s_pkts, c_bytes, s_bytes, end of the last row)
        let mut sums: HashMap<String, (u64, u64, u64, u64, f64)> = HashMap::new();
        for log in PERIODIC {
            for r in read_log(&one, log) {
                rows += 1;
                let e = sums.entry(r["flow_id"].clone()).or_default();
                let n = |k: &str| r[k].parse::<u64>().unwrap();
                e.0 += n("c_pkts_all");
                e.1 += n("s_pkts_all");
                e.2 += n("c_bytes_all");
                e.3 += n("s_bytes_all");
                let end: f64 = r["end"].parse().unwrap();
                assert!(end > e.4, "{name}: rows of a flow in time order");
                assert!(r["start"].parse::<f64>().unwrap() < end);
                e.4 = end;
            }
        }
        let mut finals = HashMap::new();
        for log in ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete"] {
            for r in read_log(&one, log) {
                assert!(finals.insert(r["flow_id"].clone(), r).is_none(), "{name}: flow ids are unique");
            }
        }
        // Boundaries are on the input's clock, which leaves packet time where the
        // capture's clock steps back (tapstat_analyze::InputClock): there a row's end
        // and a record's `last` cannot be compared. Such a capture shows as a boundary
        // past every packet.
        let last_packet = finals.values().map(|r| r["last"].parse::<f64>().unwrap()).fold(0.0, f64::max);
        if sums.values().any(|s| s.4 > last_packet + 1000.0) {
            continue;
        }
        for (id, (cp, sp, cb, sb, end)) in &sums {
            let f = finals.get(id).unwrap_or_else(|| panic!("{name}: periodic flow {id} has no final record"));
            let n = |k: &str| f[k].parse::<u64>().unwrap();
            assert!(*cp <= n("c_pkts_all") && *sp <= n("s_pkts_all"), "{name} {id}: rows exceed the total");
            if f["last"].parse::<f64>().unwrap() < *end {
                checked += 1;
                assert_eq!(
                    (*cp, *sp, *cb, *sb),
                    (n("c_pkts_all"), n("s_pkts_all"), n("c_bytes_all"), n("s_bytes_all")),
                    "{name} {id}: rows do not add up to the final record"
                );
            }
        }
    }
    eprintln!("{rows} periodic rows; {checked} flows whose rows must add up to the final record did");
    assert!(rows > 1000 && checked > 100, "too little to check: {rows} rows, {checked} flows");
}

/// Without `--periodic` there are no periodic files.
#[test]
fn no_periodic_files_by_default() {
    let dir = tempdir("noperiodic");
    let pcap = dir.join("s.pcap");
    let o = tapstat(&["synth", "-o", pcap.to_str().unwrap(), "--tcp-flows", "5", "--udp-flows", "5"]);
    assert!(o.status.success());
    let out = dir.join("out");
    analyze(&pcap, &out, 1, &[]);
    for log in PERIODIC {
        assert!(!out.join(log).exists(), "{log} written without --periodic");
    }
}
