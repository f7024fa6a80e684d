//! `--time-format`: JSON lines written with epoch seconds or ISO 8601 hold the same
//! instants as the default epoch milliseconds, in every column whose unit is an epoch
//! time, and nothing else changes.

use crate::common::{analyze, tapstat, tempdir};
use std::collections::BTreeSet;
use std::path::Path;

/// The columns whose unit is `epoch ms` (tapstat schema --format json).
fn time_columns() -> BTreeSet<String> {
    let o = tapstat(&["schema", "--format", "json"]);
    assert!(o.status.success());
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut t = BTreeSet::new();
    for log in s["logs"].as_array().unwrap() {
        for c in log["columns"].as_array().unwrap() {
            if c["unit"] == "epoch ms" {
                t.insert(c["name"].as_str().unwrap().to_string());
            }
        }
    }
    t
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`): the inverse of what tapstat writes with, to check it.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Microseconds since the epoch of `2020-02-23T10:46:10.123456Z`.
fn iso_micros(s: &str) -> i64 {
    let b = s.as_bytes();
    assert_eq!(
        (b.len(), b[4], b[7], b[10], b[13], b[16], b[19], b[26]),
        (27, b'-', b'-', b'T', b':', b':', b'.', b'Z'),
        "{s}"
    );
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
    let days = days_from_civil(n(0..4), n(5..7), n(8..10));
    ((days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19)) * 1_000_000) + n(20..26)
}

fn lines(dir: &Path, log: &str) -> Vec<serde_json::Map<String, serde_json::Value>> {
    std::fs::read_to_string(dir.join(format!("{log}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap().as_object().unwrap().clone())
        .collect()
}

#[test]
fn epoch_seconds_and_iso8601_hold_the_same_instants() {
    let d = tempdir("time-format");
    let cap = d.join("sample.pcap");
    let o = tapstat(&["synth", "--seed", "5", "--tcp-flows", "60", "--udp-flows", "40", "-o", cap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let times = time_columns();
    assert!(times.contains("first") && times.contains("last"), "{times:?}");
    let run = |tf: &str| {
        let out = d.join(tf);
        analyze(&cap, &out, 1, &["--format", "jsonl", "--time-format", tf]);
        out
    };
    let (ms, s, iso) = (run("epoch-ms"), run("epoch-s"), run("iso8601"));
    let mut checked = 0;
    for log in ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete", "log_dns_complete", "log_http_complete"] {
        let (a, b, c) = (lines(&ms, log), lines(&s, log), lines(&iso, log));
        assert_eq!((a.len(), a.len()), (b.len(), c.len()), "{log}");
        for ((ra, rb), rc) in a.iter().zip(&b).zip(&c) {
            for (k, va) in ra {
                let (vb, vc) = (&rb[k], &rc[k]);
                if !times.contains(k) || va.is_null() {
                    assert_eq!((va, va), (vb, vc), "{log}.{k}: only times change");
                    continue;
                }
                // The default's text: milliseconds with 3 decimals, i.e. µs exactly.
                let us = (va.as_f64().unwrap() * 1000.0).round() as i64;
                let secs = vb.as_f64().unwrap_or_else(|| panic!("{log}.{k}: {vb}"));
                assert!(((secs * 1e6).round() as i64 - us).abs() <= 1, "{log}.{k}: {va} ms, {vb} s");
                assert_eq!(
                    iso_micros(vc.as_str().unwrap_or_else(|| panic!("{log}.{k}: {vc}"))),
                    us,
                    "{log}.{k}: {va} ms, {vc}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 200, "{checked} times compared");
    // Where no JSON is written the flag would change nothing: refused, not ignored.
    let tsv = d.join("tsv");
    let o = tapstat(&["-r", cap.to_str().unwrap(), "-o", tsv.to_str().unwrap(), "-q", "--time-format", "iso8601"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--time-format applies to JSON lines"));
}
