//! Packet-size and inter-arrival statistics against NFStream, on every dev capture.
//!
//! `oracles/<capture>.nfstream.csv` is NFStream 6 with `statistical_analysis=True`:
//! per flow, the min / mean / standard deviation / max of the packet sizes (`*_ps`) and
//! of the gaps between packets (`*_piat_ms`), per direction (`src2dst`, `dst2src`) and
//! for both (`bidirectional`). NFStream's flows end on other timeouts than tapstat's
//! (120 s idle, 1800 s active), so only flows that both tools saw whole are compared:
//! the same 5-tuple, the same first packet (to the ms) and the same packet count.
//!
//! Tolerances: sizes are exact integers in both, so min and max must be equal and mean
//! and standard deviation equal to the printed precision. NFStream takes packet times in
//! whole milliseconds before it subtracts them, tapstat in microseconds: each gap
//! differs by less than 1 ms, so the min, max and mean of the gaps must agree within
//! 1 ms; the standard deviation is not compared (a sum of rounded squares).

use crate::common::*;

use std::collections::HashMap;

/// Splits one CSV line (RFC 4180 quoting; NFStream quotes names with commas).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// tapstat's records by 5-tuple (client first) and packet count.
type ByTuple = HashMap<(String, String, String, String, u64), Vec<HashMap<String, String>>>;

/// `|a - b| <= tol`, false when either is not a number.
fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

fn f(r: &HashMap<String, String>, k: &str) -> f64 {
    r.get(k).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn packet_size_and_gap_statistics_match_nfstream() {
    let Some(corpus) = corpus() else { return };
    let (mut compared, mut agreed, mut theirs) = (0usize, 0usize, 0usize);
    let mut bad = Vec::new();
    for cap in dev_captures(&corpus) {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let Ok(text) = std::fs::read_to_string(corpus.join("oracles").join(format!("{name}.nfstream.csv"))) else {
            continue;
        };
        let mut lines = text.lines();
        let Some(header) = lines.next() else { continue };
        let cols = csv_fields(header);
        let nf: Vec<HashMap<String, String>> =
            lines.map(|l| cols.iter().cloned().zip(csv_fields(l)).collect::<HashMap<_, _>>()).collect();
        if nf.is_empty() {
            continue;
        }
        let out = tempdir(&format!("nfstream-{name}"));
        analyze(&cap, &out, 1, &[]);
        let mut ours = ByTuple::new();
        for log in ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete"] {
            for r in read_log(&out, log) {
                let pkts: u64 = r["c_pkts_all"].parse::<u64>().unwrap() + r["s_pkts_all"].parse::<u64>().unwrap();
                let k = (r["c_ip"].clone(), r["c_port"].clone(), r["s_ip"].clone(), r["s_port"].clone(), pkts);
                ours.entry(k).or_default().push(r.into_iter().collect());
            }
        }
        for n in &nf {
            if n["protocol"] != "6" && n["protocol"] != "17" {
                continue;
            }
            theirs += 1;
            let pkts: u64 = n["bidirectional_packets"].parse().unwrap_or(0);
            let first_ms = f(n, "bidirectional_first_seen_ms");
            // NFStream's src is the first packet's sender; tapstat's client may be the
            // other side (a capture that starts with the SYN/ACK).
            let (si, sp, di, dp) = (&n["src_ip"], &n["src_port"], &n["dst_ip"], &n["dst_port"]);
            let (fwd, rec) = if let Some(v) = ours.get(&(si.clone(), sp.clone(), di.clone(), dp.clone(), pkts)) {
                (true, v)
            } else if let Some(v) = ours.get(&(di.clone(), dp.clone(), si.clone(), sp.clone(), pkts)) {
                (false, v)
            } else {
                continue;
            };
            let Some(r) = rec.iter().find(|r| (f(r, "first") - first_ms).abs() < 1.5) else { continue };
            compared += 1;
            let (c, s) = if fwd { ("src2dst", "dst2src") } else { ("dst2src", "src2dst") };
            let mut why = Vec::new();
            for (ours_p, theirs_p) in [("c_", c), ("s_", s), ("", "bidirectional")] {
                let n_pkts = f(n, &format!("{theirs_p}_packets"));
                for stat in ["min", "max", "mean", "stddev"] {
                    let (a, b) = (f(r, &format!("{ours_p}{stat}_ps")), f(n, &format!("{theirs_p}_{stat}_ps")));
                    let tol = if stat == "mean" || stat == "stddev" { 1e-3 * b.abs().max(1.0) } else { 0.0 };
                    if n_pkts > 0.0 && !close(a, b, tol) {
                        why.push(format!("{ours_p}{stat}_ps {a} vs {b}"));
                    }
                }
                // A direction of one packet has no gap: NFStream writes 0, tapstat none.
                if n_pkts > 1.0 {
                    for stat in ["min", "max", "mean"] {
                        let a = f(r, &format!("{ours_p}{stat}_piat"));
                        let b = f(n, &format!("{theirs_p}_{stat}_piat_ms"));
                        if !close(a, b, 0.999_999) {
                            why.push(format!("{ours_p}{stat}_piat {a} vs {b}"));
                        }
                    }
                }
            }
            if why.is_empty() {
                agreed += 1;
            } else {
                bad.push(format!("{name} {si}:{sp}-{di}:{dp}: {}", why.join(", ")));
            }
        }
    }
    eprintln!(
        "nfstream: {compared} of {theirs} NFStream TCP/UDP flows matched whole; {agreed} agree on every statistic"
    );
    for b in bad.iter().take(20) {
        eprintln!("  {b}");
    }
    assert!(compared >= theirs / 2, "too few flows matched: {compared} of {theirs}");
    assert!(agreed as f64 >= 0.99 * compared as f64, "{} of {compared} flows disagree", compared - agreed);
}
