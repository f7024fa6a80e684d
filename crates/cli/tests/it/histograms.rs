//! Link histograms (`--histo-interval`, histograms.tsv): the same with 1 and 3 workers
//! on every dev capture, counts that add up to the records, and a file that pandas and
//! DuckDB read without options.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// histograms.tsv's rows as (time, histogram, direction, bin, count).
fn rows(dir: &Path) -> Vec<(u64, String, String, String, u64)> {
    let text = std::fs::read_to_string(dir.join("histograms.tsv")).expect("histograms.tsv");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time\thistogram\tdirection\tbin\tcount"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "{l}");
            (f[0].parse().expect("time"), f[1].into(), f[2].into(), f[3].into(), f[4].parse().expect("count"))
        })
        .collect()
}

/// Sum of the counts per histogram.
fn totals(rows: &[(u64, String, String, String, u64)]) -> BTreeMap<String, u64> {
    let mut t = BTreeMap::new();
    for r in rows {
        *t.entry(r.1.clone()).or_default() += r.4;
    }
    t
}

fn col_sum(dir: &Path, logs: &[&str], cols: &[&str]) -> u64 {
    logs.iter()
        .flat_map(|l| read_log(dir, l))
        .map(|r| cols.iter().map(|c| r.get(*c).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)).sum::<u64>())
        .sum()
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn histograms_are_the_same_with_1_and_3_workers_and_add_up_to_the_records_on_every_dev_capture() {
    let Some(corpus) = corpus() else { return };
    let caps = dev_captures(&corpus);
    assert!(caps.len() > 100, "expected the dev corpus, found {} captures", caps.len());
    let (mut intervals, mut packets) = (0usize, 0u64);
    for cap in &caps {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let d1 = tempdir(&format!("h1-{name}"));
        let d3 = tempdir(&format!("h3-{name}"));
        // 7 s: many boundaries in most captures, crossed by flows and by chunks.
        analyze(cap, &d1, 1, &["--histo-interval", "7"]);
        analyze(cap, &d3, 3, &["--histo-interval", "7", "--dispatchers", "3", "--chunk-frames", "7"]);
        let (r1, r3) = (rows(&d1), rows(&d3));
        assert_eq!(r1, r3, "{name}: histograms.tsv differs between 1 and 3 workers");
        let t = totals(&r1);
        let pkts = col_sum(&d1, &LOGS, &["c_pkts_all", "s_pkts_all"]);
        let get = |h: &str| t.get(h).copied().unwrap_or(0);
        // Every packet in a flow is counted once in each packet histogram.
        for h in ["ip_len", "ttl", "ip_proto"] {
            assert_eq!(get(h), pkts, "{name}: {h} counts {} packets, the records {pkts}", get(h));
        }
        // Every record once in `app`; TCP and UDP records once in their families.
        let s = summary(&d1);
        let rec = |l: &str| s["records"][l].as_u64().unwrap_or(0);
        let (tcp, udp) = (rec("log_tcp_complete") + rec("log_tcp_nocomplete"), rec("log_udp_complete"));
        assert_eq!(get("app"), tcp + udp + rec("log_other"), "{name}: app");
        for (h, n) in [("tcp_port", tcp), ("tcp_duration_ms", tcp), ("tcp_bytes", tcp), ("tcp_pkts", tcp)] {
            assert_eq!(get(h), n, "{name}: {h}");
        }
        for (h, n) in [("udp_port", udp), ("udp_duration_ms", udp), ("udp_bytes", udp), ("udp_pkts", udp)] {
            assert_eq!(get(h), n, "{name}: {h}");
        }
        // RTT: one count per flow direction with samples (c_rtt_avg present).
        let with_rtt = |c: &str| {
            ["log_tcp_complete", "log_tcp_nocomplete"]
                .iter()
                .flat_map(|l| read_log(&d1, l))
                .filter(|r| r.get(c).is_some_and(|v| v != "-"))
                .count() as u64
        };
        assert_eq!(get("tcp_rtt_c_ms"), with_rtt("c_rtt_avg"), "{name}: tcp_rtt_c_ms");
        assert_eq!(get("tcp_rtt_s_ms"), with_rtt("s_rtt_avg"), "{name}: tcp_rtt_s_ms");
        // Intervals are multiples of 7 s.
        assert!(r1.iter().all(|r| r.0 % 7 == 0 && r.2 == "all"), "{name}");
        intervals += r1.iter().map(|r| r.0).collect::<std::collections::BTreeSet<_>>().len();
        packets += pkts;
        let _ = std::fs::remove_dir_all(&d1);
        let _ = std::fs::remove_dir_all(&d3);
    }
    assert!(packets > 50_000, "too few packets over the corpus: {packets}");
    assert!(intervals > 2 * caps.len(), "too few intervals: {intervals}");
}

/// pandas and DuckDB read histograms.tsv without options: the columns, their types and
/// the total count are those the file says.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn pandas_and_duckdb_read_histograms() {
    let Some(corpus) = corpus() else { return };
    if !python_ready() {
        return;
    }
    let d = tempdir("h-load");
    analyze(&corpus.join("ndpi__1kxun.pcap"), &d, 1, &["--histo-interval", "60"]);
    let r = rows(&d);
    let total: u64 = r.iter().map(|x| x.4).sum();
    let ip_len: u64 = r.iter().filter(|x| x.1 == "ip_len").map(|x| x.4).sum();
    let script = r#"
import sys, pandas, duckdb
path, total, ip_len = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
df = pandas.read_csv(path, sep="\t")
assert list(df.columns) == ["time", "histogram", "direction", "bin", "count"], df.columns
assert str(df["time"].dtype) == "int64" and str(df["count"].dtype) == "int64", df.dtypes
assert int(df["count"].sum()) == total, (df["count"].sum(), total)
assert int(df[df.histogram == "ip_len"]["count"].sum()) == ip_len
rel = duckdb.read_csv(path)
types = dict(zip(rel.columns, [str(t) for t in rel.types]))
assert types["time"] == "BIGINT" and types["count"] == "BIGINT" and types["bin"] == "VARCHAR", types
(n,) = duckdb.sql(f"select sum(count) from read_csv('{path}') where histogram = 'ip_len'").fetchall()[0]
assert n == ip_len, (n, ip_len)
print("ok", len(df))
"#;
    let o = Command::new("python3")
        .args(["-c", script, d.join("histograms.tsv").to_str().unwrap(), &total.to_string(), &ip_len.to_string()])
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), format!("ok {}", r.len()));
    let _ = std::fs::remove_dir_all(&d);
}

/// `off` writes no histograms; a bad value is a one-line error; `-o -` carries them as
/// JSON lines tagged `histograms`, the same counts as the file.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn off_bad_values_and_standard_output() {
    let Some(corpus) = corpus() else { return };
    let cap = corpus.join("ndpi__1kxun.pcap");
    let d = tempdir("h-off");
    analyze(&cap, &d, 1, &["--histo-interval", "off"]);
    assert!(!d.join("histograms.tsv").exists());
    assert!(d.join("summary.json").exists());
    let d0 = tempdir("h-default");
    analyze(&cap, &d0, 1, &[]);
    let r = rows(&d0);
    assert!(r.iter().all(|x| x.0 % 300 == 0) && !r.is_empty(), "default: 5-minute intervals");
    for bad in ["1.5", "-3", "5m", "2000000000"] {
        let o = tapstat(&["-r", cap.to_str().unwrap(), "-o", d.to_str().unwrap(), "--histo-interval", bad]);
        assert!(!o.status.success(), "{bad} accepted");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--histo-interval"), "{bad}: {err}");
    }
    // With --rotate: an interval that does not divide the period is refused in one
    // line, before anything is written; the default becomes the largest dividing both
    // 300 s and the period (7 minutes: 60 s).
    let refused = tempdir("h-refused");
    let fresh = refused.join("out");
    for (rotate, given, why) in [("7m", "300", "does not divide"), ("1500ms", "", "whole number of seconds")] {
        let mut args = vec!["-r", cap.to_str().unwrap(), "-o", fresh.to_str().unwrap(), "--rotate", rotate];
        if !given.is_empty() {
            args.extend(["--histo-interval", given]);
        }
        let o = tapstat(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(why) && err.trim_end().lines().count() == 1, "{err}");
        assert!(!fresh.exists(), "{rotate}: a run started");
    }
    let d7 = tempdir("h-rotate-7m");
    analyze(&cap, &d7, 1, &["--rotate", "7m"]);
    let times: std::collections::BTreeSet<u64> = std::fs::read_dir(&*d7)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|e| rows(&e.path()).into_iter().map(|r| r.0))
        .collect();
    assert!(times.iter().all(|t| t % 60 == 0) && times.iter().any(|t| t % 300 != 0), "{times:?}");
    let o = tapstat(&["-r", cap.to_str().unwrap(), "-o", "-", "-q", "--hash-seed", "7"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let mut n = 0;
    for l in out.lines().filter(|l| l.starts_with("{\"log\":\"histograms\"")) {
        let v: serde_json::Value = serde_json::from_str(l).expect("json");
        let row = (
            v["time"].as_u64().unwrap(),
            v["histogram"].as_str().unwrap().to_string(),
            v["direction"].as_str().unwrap().to_string(),
            v["bin"].as_str().unwrap().to_string(),
            v["count"].as_u64().unwrap(),
        );
        assert_eq!(row, r[n]);
        n += 1;
    }
    assert_eq!(n, r.len());
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&d0);
}

/// With internal networks, every count goes to its traffic class: packets by their
/// source and destination, records by client and server. The classes split the
/// histograms of the run without networks, the same with 1 and 3 workers, and the
/// packet and `app` counts per class are those the records' `c_isint`/`s_isint` give.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn with_internal_networks_the_directions_split_the_histograms_as_the_records_do() {
    let Some(corpus) = corpus() else { return };
    let class = |src: &str, dst: &str| match (src, dst) {
        ("0", "1") => "in",
        ("1", "0") => "out",
        ("1", "1") => "local",
        _ => "ext",
    };
    let mut seen = std::collections::BTreeSet::new();
    for name in ["ndpi__1kxun.pcap", "ndpi__443-firefox.pcap", "ndpi__dns.pcap", "ndpi__http_ipv6.pcap"] {
        let cap = corpus.join(name);
        let (d0, d1, d3) =
            (tempdir(&format!("hn0-{name}")), tempdir(&format!("hn1-{name}")), tempdir(&format!("hn3-{name}")));
        let nets = ["--histo-interval", "7", "--internal", "192.168.0.0/16,10.0.0.0/8,2001:db8::/32,fe80::/10"];
        analyze(&cap, &d0, 1, &["--histo-interval", "7"]);
        analyze(&cap, &d1, 1, &nets);
        analyze(&cap, &d3, 3, &[&nets[..], &["--dispatchers", "3", "--chunk-frames", "7"]].concat());
        let (r0, r1) = (rows(&d0), rows(&d1));
        assert_eq!(r1, rows(&d3), "{name}: histograms.tsv differs between 1 and 3 workers");
        assert!(r1.iter().all(|r| ["in", "out", "local", "ext"].contains(&r.2.as_str())), "{name}");
        assert_eq!(totals(&r0), totals(&r1), "{name}: the classes split the histograms");
        // Expected per class, from the records.
        let (mut pkts, mut apps) = (BTreeMap::<&str, u64>::new(), BTreeMap::<&str, u64>::new());
        for log in ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete"] {
            for r in read_log(&d1, log) {
                let (c, s) = (r["c_isint"].as_str(), r["s_isint"].as_str());
                *pkts.entry(class(c, s)).or_default() += r["c_pkts_all"].parse::<u64>().unwrap();
                *pkts.entry(class(s, c)).or_default() += r["s_pkts_all"].parse::<u64>().unwrap();
                *apps.entry(class(c, s)).or_default() += 1;
            }
        }
        let other = read_log(&d1, "log_other").len();
        let per = |h: &str| {
            let mut m = BTreeMap::<&str, u64>::new();
            for r in r1.iter().filter(|r| r.1 == h) {
                *m.entry(["in", "out", "local", "ext"].into_iter().find(|x| *x == r.2).unwrap()).or_default() += r.4;
            }
            m
        };
        eprintln!("{name}: packets per class {pkts:?}, records {apps:?}, log_other {other}");
        if other == 0 {
            assert_eq!(per("ip_len"), pkts, "{name}: packets per class");
            assert_eq!(per("app"), apps, "{name}: records per class");
        }
        seen.extend(per("ip_len").keys().map(|k| k.to_string()));
        for d in [&d0, &d1, &d3] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
    eprintln!("classes seen: {seen:?}");
    assert!(seen.len() >= 2, "the captures gave only the classes {seen:?}");
}

/// A capture replayed through the live path (`tapstat bench --speed`) writes the
/// histograms of the offline run, byte for byte, with 1 and 2 workers; with 2 workers
/// and a slow replay, intervals are in histograms.tsv before the replay ends (a live
/// run writes each interval once every worker has passed its end).
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn a_replay_through_the_live_path_writes_the_offline_histograms() {
    let Some(corpus) = corpus() else { return };
    // 500 frames over 102 s of packet time.
    let file = corpus.join("ndpi__android.pcap");
    let d = tempdir("h-replay");
    let off = d.join("offline");
    analyze(&file, &off, 1, &["--histo-interval", "1"]);
    let want = std::fs::read_to_string(off.join("histograms.tsv")).expect("histograms.tsv");
    assert!(rows(&off).iter().map(|r| r.0).collect::<std::collections::BTreeSet<_>>().len() > 20);
    let bench = |w: &str, speed: &str, out: &Path| {
        let mut c = Command::new(bin());
        c.args(["bench", "-r", file.to_str().unwrap(), "--speed", speed, "-w", w, "-q", "-o"]);
        c.args([out.to_str().unwrap(), "--force", "--", "--hash-seed", "7", "--histo-interval", "1"]);
        c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
        c
    };
    let fast = d.join("fast");
    let o = bench("1", "200", &fast).output().expect("tapstat runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(fast.join("histograms.tsv")).expect("histograms.tsv"), want, "1 worker");
    // 2 workers at 20x: about 5 s; rows appear while it runs.
    let slow = d.join("slow");
    let mut child = bench("2", "20", &slow).spawn().expect("tapstat runs");
    let t0 = std::time::Instant::now();
    let mut early = String::new();
    while child.try_wait().expect("waitable").is_none() && t0.elapsed() < std::time::Duration::from_secs(120) {
        let now = std::fs::read_to_string(slow.join("histograms.tsv")).unwrap_or_default();
        if now.lines().count() > 1 && early.is_empty() {
            // Whole lines (a read may meet a write half done).
            early = now[..now.rfind('\n').map_or(0, |i| i + 1)].to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let s = child.wait().expect("waitable");
    assert!(s.success());
    let got = std::fs::read_to_string(slow.join("histograms.tsv")).expect("histograms.tsv");
    assert_eq!(got, want, "2 workers");
    assert!(early.lines().count() > 1 && early.len() < got.len(), "nothing written before the end: {early:?}");
    assert!(want.starts_with(&early));
    // With -o -, the same rows as JSON lines among the records, as the offline run's;
    // fast, so that a quiet worker follows the other by what its source has yet to
    // hand out rather than by an interval (1 s of packet time is 1 ms of wall time).
    let json = |args: &[&str]| -> Vec<String> {
        let o = Command::new(bin()).args(args).current_dir(&d).output().expect("tapstat runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with("{\"log\":\"histograms\""))
            .map(String::from)
            .collect()
    };
    let f = file.to_str().unwrap();
    let off = json(&["-r", f, "-o", "-", "-q", "--histo-interval", "1"]);
    let rep = json(&["bench", "-r", f, "--speed", "1000", "-w", "2", "-q", "-o", "-", "--", "--histo-interval", "1"]);
    assert_eq!(off.len(), want.lines().count() - 1);
    assert_eq!(rep, off, "-o -");
    // Standard output is no directory: nothing named `-` is claimed.
    assert!(!d.join("-").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// The interval directories of a `--rotate` run (YYYY_MM_DD_HH_MM[_SS].out), in order,
/// with their histograms.tsv as written.
fn rotated_histograms(dir: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("output directory")
        .flatten()
        .filter(|e| e.path().is_dir() && e.file_name().to_string_lossy().ends_with(".out"))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(e.path().join("histograms.tsv"))
                .unwrap_or_else(|_| panic!("{name} has no histograms.tsv"));
            (name, text)
        })
        .collect();
    v.sort();
    v
}

/// With `--rotate`, each interval directory holds the histogram intervals that start in
/// it: on files the same with 1 and 3 workers, and all of them together the rows of the
/// unrotated run; through the live path (a replay) the same files, and a directory with
/// its final name already holds its histograms whole.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn rotated_runs_keep_each_intervals_histograms_in_its_directory() {
    let Some(corpus) = corpus() else { return };
    // 500 frames over 102 s of packet time: 11 directories of 10 s.
    let file = corpus.join("ndpi__android.pcap");
    let d = tempdir("h-rotate");
    let (plain, one, three) = (d.join("plain"), d.join("one"), d.join("three"));
    analyze(&file, &plain, 1, &["--histo-interval", "1"]);
    analyze(&file, &one, 1, &["--histo-interval", "1", "--rotate", "10s"]);
    analyze(&file, &three, 3, &["--histo-interval", "1", "--rotate", "10s"]);
    assert!(!one.join("histograms.tsv").exists(), "with --rotate, no histograms.tsv at the top");
    let want = rotated_histograms(&one);
    assert!(want.len() >= 10, "{} interval directories", want.len());
    assert_eq!(rotated_histograms(&three), want, "1 and 3 workers");
    let header = "time\thistogram\tdirection\tbin\tcount\n";
    let mut joined = String::from(header);
    let mut last_period = None;
    for (name, text) in &want {
        let body = text.strip_prefix(header).unwrap_or_else(|| panic!("{name}: header"));
        let periods: std::collections::BTreeSet<u64> =
            body.lines().map(|l| l.split('\t').next().unwrap().parse::<u64>().unwrap() / 10).collect();
        assert!(periods.len() <= 1, "{name} holds rows of several periods: {periods:?}");
        if let Some(p) = periods.first() {
            assert!(last_period < Some(*p), "{name}: periods out of order");
            last_period = Some(*p);
        }
        joined += body;
    }
    assert_eq!(joined, std::fs::read_to_string(plain.join("histograms.tsv")).unwrap(), "together, the unrotated run");
    // `tapstat report` reads them from the interval directories: its histogram section
    // is the unrotated run's.
    let section = |dir: &Path| {
        let o = tapstat(&["report", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        let from = html.find("<h2 id=histograms>").expect("the histogram section");
        let len = html[from + 1..].find("<h2").expect("a section after it") + 1;
        html[from..from + len].to_string()
    };
    let (a, b) = (section(&one), section(&plain));
    assert!(a.contains("<svg") && !a.contains("No histograms.tsv"), "{a}");
    assert_eq!(a, b, "the report's histograms of the rotated run");

    // Through the live path at 20x (about 5 s): the same files; and while it runs, every
    // directory that has its final name already holds its histograms whole.
    let live = d.join("live");
    let mut c = Command::new(bin());
    c.args(["bench", "-r", file.to_str().unwrap(), "--speed", "20", "-w", "2", "-q", "-o"]);
    c.args([live.to_str().unwrap(), "--force", "--", "--hash-seed", "7", "--histo-interval", "1", "--rotate", "10s"]);
    let mut child = c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let (t0, mut seen_early) = (std::time::Instant::now(), 0);
    while child.try_wait().expect("waitable").is_none() && t0.elapsed() < std::time::Duration::from_secs(120) {
        for (name, text) in rotated_histograms_so_far(&live) {
            let whole =
                &want.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name}: not in the file run")).1;
            assert_eq!(&text, whole, "{name} has its final name but not all its histograms");
            seen_early += 1;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().expect("waitable");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rotated_histograms(&live), want, "the live path's directories");
    assert!(seen_early > 0, "no directory got its final name before the end");
}

/// The interval directories that have their final name now, with their histograms.tsv
/// (which such a directory must have: it is written before the rename).
fn rotated_histograms_so_far(dir: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".out") || name.starts_with('.') {
                return None;
            }
            let text = std::fs::read_to_string(e.path().join("histograms.tsv"));
            Some((name.clone(), text.unwrap_or_else(|_| panic!("{name} has its final name but no histograms.tsv"))))
        })
        .collect()
}
