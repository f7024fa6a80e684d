//! `tapstat bench --speed/--pps/--find-rate`: a capture replayed through the live path
//! (issue 15, item 1).

mod common;

use common::*;

/// Replayed fast with a buffer that holds it, a capture gives the records of `-r`
/// with one worker, and the summary says nothing was dropped.
#[test]
fn a_fast_replay_gives_the_records_of_the_offline_run() {
    let Some(corpus) = corpus() else { return };
    let file = corpus.join("ndpi__android.pcap");
    let d = tempdir("replay-records");
    let (rep, off) = (d.join("replay"), d.join("offline"));
    for pace in [["--speed", "1000"], ["--pps", "200000"]] {
        let mut args = vec!["bench", "-r", file.to_str().unwrap(), "-o", rep.to_str().unwrap(), "-w", "1", "-q"];
        args.extend(pace);
        args.extend(["--force", "--", "--hash-seed", "7"]);
        let o = tapstat(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        analyze(&file, &off, 1, &["--force"]);
        for log in LOGS.iter().chain(&L7_LOGS) {
            assert_eq!(record_set(&rep, log), record_set(&off, log), "{log} at {pace:?}");
        }
        let s = summary(&rep);
        assert_eq!(s["live"]["buffer_drops"], 0);
        assert_eq!(s["live"]["received_packets"], 500);
    }
    // Two workers: every frame reaches one of them, the flows are spread, and the
    // connections are those of the offline run (their names aside: a DNS answer
    // learnt by the other worker may come after the flow it names, see ARCHITECTURE.md).
    let o = tapstat(&[
        "bench",
        "-r",
        file.to_str().unwrap(),
        "--speed",
        "1000",
        "-o",
        rep.to_str().unwrap(),
        "-w",
        "2",
        "-q",
        "--force",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&rep);
    let per: Vec<u64> =
        s["live"]["per_worker_packets"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert!(per.len() == 2 && per.iter().all(|&p| p > 0) && per.iter().sum::<u64>() == 500, "{per:?}");
    for log in ["log_tcp_complete", "log_udp_complete"] {
        assert_eq!(live::flows(&rep, log), live::flows(&off, log), "{log} with 2 workers");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// At an absurd rate into the smallest buffer, a replay drops, says so, and exits 0.
#[test]
fn an_overloaded_replay_drops_and_says_so() {
    let Some(corpus) = corpus() else { return };
    let file = corpus.join("ndpi__1kxun.pcap");
    let d = tempdir("replay-drops");
    let o = tapstat(&[
        "bench",
        "-r",
        file.to_str().unwrap(),
        "--pps",
        "1e9",
        "--buffer",
        "1MiB",
        "-w",
        "1",
        "-o",
        d.to_str().unwrap(),
        "--force",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&d);
    assert!(s["live"]["buffer_drops"].as_u64().unwrap() > 0, "{}", s["live"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("buffer drops"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn find_rate_ends_with_the_sustainable_rate() {
    let Some(corpus) = corpus() else { return };
    let file = corpus.join("ndpi__android.pcap");
    let o =
        tapstat(&["bench", "-r", file.to_str().unwrap(), "--find-rate", "--runs", "1", "-w", "1", "--buffer", "1MiB"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out.lines().last().unwrap_or_default();
    let pps: f64 = last
        .strip_prefix("sustainable: ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("last line {last:?}"));
    assert!(pps > 0.0 && last.ends_with("Gbit/s)"), "{last}");
    assert!(out.lines().any(|l| l.starts_with("probe 1: ")), "{out}");
}

#[test]
fn replay_flag_errors_are_one_line() {
    for args in [
        &["bench", "-r", "x.pcap", "--speed", "0"][..],
        &["bench", "-r", "x.pcap", "--speed", "2", "--pps", "1000"],
        &["bench", "-r", "x.pcap", "--find-rate", "--pps", "1000"],
        &["bench", "-r", "x.pcap", "-o", "out"],
        &["bench", "-r", "/nonexistent.pcap", "--speed", "2"],
    ] {
        let o = tapstat(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("tapstat: error: "), "{args:?}: {err}");
    }
}
