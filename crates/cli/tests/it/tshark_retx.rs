//! Retransmitted data segments against tshark's `tcp.analysis.retransmission`, on every
//! dev capture. Needs tshark (`apt-get install tshark`; `.ci/run` installs it): skipped
//! with a printed reason where it is missing, unless `TAPSTAT_REQUIRE_TSHARK=1`.
//!
//! tshark flags SYNs and FINs sent again too; tapstat counts those apart (`syn_retx`;
//! FINs are not data), so only flagged segments with payload are compared, summed per
//! direction of each 4-tuple (tshark's conversations do not split a 4-tuple by time).
//! docs/METRICS.md ("Retransmissions: tshark") explains the differences: tshark also
//! calls a retransmission a segment below the highest sequence seen whose original the
//! probe never saw (tapstat: out of sequence, `pkts_ooo`), and a segment that only
//! partly overlaps data seen (tapstat: new data, counted in `bytes_uniq`).

use crate::common::*;

use std::collections::HashMap;
use std::process::Command;

type Dir = (String, String, String, String);

/// tshark's flagged data segments of `cap`, per direction.
fn tshark_retx(cap: &std::path::Path) -> HashMap<Dir, u64> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(cap)
        .args(["-Y", "tcp.analysis.retransmission && tcp.len > 0", "-T", "fields"])
        .args(["-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport", "-e", "ip.dst", "-e", "ipv6.dst"])
        .args(["-e", "tcp.dstport", "-E", "separator=/t"])
        .output()
        .expect("tshark runs");
    let mut m = HashMap::new();
    // Tunnels give several values per field: the innermost header is the last.
    let last = |s: &str| s.rsplit(',').next().unwrap_or("").to_string();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let p: Vec<&str> = line.split('\t').collect();
        if p.len() < 6 {
            continue;
        }
        let src = if p[0].is_empty() { last(p[1]) } else { last(p[0]) };
        let dst = if p[3].is_empty() { last(p[4]) } else { last(p[3]) };
        *m.entry((src, last(p[2]), dst, last(p[5]))).or_default() += 1;
    }
    m
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn retransmitted_data_segments_agree_with_tshark() {
    let Some(corpus) = corpus() else { return };
    if !tshark_ready() {
        return;
    }
    let (mut theirs, mut ours, mut dirs, mut equal) = (0u64, 0u64, 0usize, 0usize);
    for cap in dev_captures(&corpus) {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let out = tempdir(&format!("tshark-retx-{name}"));
        analyze(&cap, &out, 1, &[]);
        let mut mine: HashMap<Dir, u64> = HashMap::new();
        for log in ["log_tcp_complete", "log_tcp_nocomplete"] {
            for r in read_log(&out, log) {
                let (c, s) = ((r["c_ip"].clone(), r["c_port"].clone()), (r["s_ip"].clone(), r["s_port"].clone()));
                *mine.entry((c.0.clone(), c.1.clone(), s.0.clone(), s.1.clone())).or_default() +=
                    r["c_pkts_retx"].parse::<u64>().unwrap();
                *mine.entry((s.0, s.1, c.0, c.1)).or_default() += r["s_pkts_retx"].parse::<u64>().unwrap();
            }
        }
        let ts = tshark_retx(&cap);
        let mut keys: Vec<&Dir> = ts.keys().chain(mine.iter().filter(|(_, &v)| v > 0).map(|(k, _)| k)).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let (a, b) = (mine.get(k).copied().unwrap_or(0), ts.get(k).copied().unwrap_or(0));
            dirs += 1;
            equal += (a == b) as usize;
            ours += a;
            theirs += b;
        }
    }
    eprintln!(
        "retransmitted data segments: tapstat {ours}, tshark {theirs}; {equal} of {dirs} directions with any agree exactly"
    );
    assert!(theirs > 500, "too few retransmissions to compare: {theirs}");
    assert!((ours as f64 - theirs as f64).abs() <= 0.05 * theirs as f64, "totals differ by more than 5%");
    assert!(equal as f64 >= 0.75 * dirs as f64, "only {equal} of {dirs} directions agree");
}
