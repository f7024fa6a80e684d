//! Flags that do what they say: `-f` and a trailing
//! expression filter files as `tcpdump -r FILE EXPR` does, `-c N` stops after N
//! packets, live-only flags are refused on files, and every numeric flag has a
//! range whose violation is a one-line error, never a panic.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Is tcpdump installed? `false` (with the reason printed) where it is not, unless
/// `TAPSTAT_REQUIRE_TCPDUMP=1`.
fn tcpdump_ready() -> bool {
    if Command::new("tcpdump").arg("--version").output().is_ok() {
        return true;
    }
    assert!(std::env::var("TAPSTAT_REQUIRE_TCPDUMP").as_deref() != Ok("1"), "TAPSTAT_REQUIRE_TCPDUMP=1 but no tcpdump");
    eprintln!("skipped: tcpdump is not installed");
    false
}

/// The packets tcpdump keeps of `files` with `expr`, as tapstat counts them: tcpdump
/// writes them to a file, which tapstat reads unfiltered. `None` when tcpdump
/// refuses the expression for a file's link type.
fn tcpdump_packets(files: &[&Path], expr: &str, tag: &str) -> Option<u64> {
    let mut total = 0;
    for (i, f) in files.iter().enumerate() {
        let out = tempdir(&format!("td-{tag}-{i}"));
        let kept = out.join("kept.pcap");
        let o = Command::new("tcpdump")
            .args(["-r", f.to_str().unwrap(), "-w", kept.to_str().unwrap(), expr])
            .output()
            .expect("tcpdump runs");
        if !o.status.success() {
            return None;
        }
        let d = out.join("run");
        let o = tapstat(&["-q", "-r", kept.to_str().unwrap(), "-o", d.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        total += summary(&d)["packets"].as_u64().unwrap();
        let _ = std::fs::remove_dir_all(&out);
    }
    Some(total)
}

fn cap(corpus: &Path, name: &str) -> PathBuf {
    let p = corpus.join(name);
    assert!(p.is_file(), "{} is in the corpus", p.display());
    p
}

/// Runs tapstat and returns (exit ok, summary or null, stderr).
fn run(args: &[&str], tag: &str) -> (bool, serde_json::Value, String) {
    let d = tempdir(tag);
    let mut a = vec!["-q", "-o", d.to_str().unwrap()];
    a.extend_from_slice(args);
    let o = tapstat(&a);
    let s = if o.status.success() { summary(&d) } else { serde_json::Value::Null };
    (o.status.success(), s, String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn filter_counts_match_tcpdump_on_dev_captures() {
    let Some(corpus) = corpus() else { return };
    if !tcpdump_ready() {
        return;
    }
    let caps = [
        "ndpi__1kxun.pcap",
        "ndpi__http_ipv6.pcap",
        "tcpdump__802.1ad_QinQ.pcap",
        "tcpdump__LINKTYPE_RAW_ipv4.pcap",
        "suricata__decode-sll2-01__input.pcap",
        "ndpi__http.pcapng",
    ];
    let exprs = [
        "tcp port 443",
        "udp",
        "host 192.168.1.1",
        "net 10.0.0.0/8",
        "vlan",
        "ip6",
        "tcp[tcpflags] & tcp-syn != 0",
        "not tcp and greater 100",
    ];
    let mut compared = 0;
    let mut nonzero = 0;
    for name in caps {
        let f = cap(&corpus, name);
        let (ok, all, err) = run(&["-r", f.to_str().unwrap()], "all");
        assert!(ok, "{err}");
        let total = all["packets"].as_u64().unwrap();
        for expr in exprs {
            let want = tcpdump_packets(&[&f], expr, "one");
            let (ok, s, err) = run(&["-r", f.to_str().unwrap(), "-f", expr], "f");
            let Some(want) = want else {
                assert!(!ok, "{name}: tcpdump refuses {expr:?}, tapstat accepted it");
                continue;
            };
            assert!(ok, "{name} {expr:?}: {err}");
            let got = s["packets"].as_u64().unwrap();
            assert_eq!(got, want, "{name}: {expr:?} kept {got} packets, tcpdump {want}");
            assert_eq!(s["capture"]["filtered_out"].as_u64().unwrap(), total - got, "{name}: {expr:?}");
            compared += 1;
            nonzero += usize::from(got > 0 && got < total);
        }
    }
    assert!(compared >= 30, "only {compared} comparisons");
    assert!(nonzero >= 10, "only {nonzero} filters kept some but not all packets");

    // Files of two link types in one run: each is filtered with its own program.
    let two = [cap(&corpus, "ndpi__1kxun.pcap"), cap(&corpus, "tcpdump__LINKTYPE_RAW_ipv4.pcap")];
    let want = tcpdump_packets(&[&two[0], &two[1]], "udp or tcp port 80", "two").expect("tcpdump filters both");
    let (ok, s, err) =
        run(&["-r", two[0].to_str().unwrap(), two[1].to_str().unwrap(), "-f", "udp or tcp port 80"], "two");
    assert!(ok, "{err}");
    assert_eq!(s["packets"].as_u64().unwrap(), want);
}

#[test]
fn a_trailing_expression_filters_as_f_does() {
    let Some(corpus) = corpus() else { return };
    let f = cap(&corpus, "ndpi__1kxun.pcap");
    let f = f.to_str().unwrap();
    let (ok, with_f, err) = run(&["-r", f, "-f", "tcp port 443"], "tf");
    assert!(ok, "{err}");
    let kept = with_f["packets"].as_u64().unwrap();
    assert!(kept > 0 && with_f["capture"]["filtered_out"].as_u64().unwrap() > 0);
    // After the files, as tcpdump; after `--`; before -r.
    for args in
        [vec!["-r", f, "tcp", "port", "443"], vec!["-r", f, "tcp port 443"], vec!["-r", f, "--", "tcp", "port", "443"]]
    {
        let (ok, s, err) = run(&args, "trail");
        assert!(ok, "{args:?}: {err}");
        assert_eq!(s["packets"], with_f["packets"], "{args:?}");
    }
    // An unknown flag is not taken for a filter word.
    let (ok, _, err) = run(&["-r", f, "--bogus"], "bogus");
    assert!(!ok && err.contains("unexpected argument '--bogus'"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // Given twice: refused.
    let (ok, _, err) = run(&["-r", f, "-f", "udp", "tcp"], "twice");
    assert!(!ok && err.contains("twice"), "{err}");
    // A mistyped file name is named as such.
    let (ok, _, err) = run(&["-r", "/nonexistent/x.pcap"], "missing");
    assert!(!ok && err.contains("no such capture file"), "{err}");
    let (ok, _, err) = run(&["-r", f, "/nonexistent/x.pcap"], "missing2");
    assert!(!ok && err.contains("no such capture file"), "{err}");
}

#[test]
fn an_invalid_expression_is_a_one_line_error() {
    let Some(corpus) = corpus() else { return };
    let f = cap(&corpus, "ndpi__1kxun.pcap");
    for expr in ["not bpf((", "tcp port banana"] {
        let (ok, _, err) = run(&["-r", f.to_str().unwrap(), "-f", expr], "bad");
        assert!(!ok, "{expr:?} accepted");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.starts_with("tapstat: error: filter"), "{err}");
    }
}

#[test]
fn count_stops_after_n_packets_after_the_filter() {
    let Some(corpus) = corpus() else { return };
    let f = cap(&corpus, "ndpi__1kxun.pcap");
    let f = f.to_str().unwrap();
    let (_, all, _) = run(&["-r", f], "c-all");
    let (ok, s, err) = run(&["-r", f, "-c", "5"], "c5");
    assert!(ok, "{err}");
    assert_eq!(s["packets"], 5);
    assert_eq!(s["capture"]["filtered_out"], 0);
    let (ok, s, _) = run(&["-r", f, "-c", "7", "-f", "udp"], "c7");
    assert!(ok);
    assert_eq!(s["packets"], 7);
    // More than the file holds: the whole file.
    let (_, s, _) = run(&["-r", f, "-c", "100000000"], "cbig");
    assert_eq!(s["packets"], all["packets"]);
    for bad in ["0", "-1", "x"] {
        let (ok, _, err) = run(&["-r", f, "-c", bad], "cbad");
        assert!(!ok && err.contains("-c"), "-c {bad}: {err}");
    }
}

#[test]
fn live_only_flags_are_refused_on_files() {
    let d = tempdir("live-only");
    let f = d.join("sample.pcap");
    let o = tapstat(&["synth", "-o", f.to_str().unwrap(), "--tcp-flows", "2", "--udp-flows", "1"]);
    assert!(o.status.success());
    let f = f.to_str().unwrap();
    for flag in [
        &["--user", "nobody"][..],
        &["--metrics", "127.0.0.1:9"],
        &["--buffer", "64MiB"],
        &["--kernel-ring", "8MiB"],
        &["--acquire", "poll"],
        &["--period", "1ms"],
        &["--stats-interval", "2s"],
        &["--flush", "2s"],
        &["--overload", "drop"],
        &["--keep", "none"],
        &["--shunt", "pkts>10"],
    ] {
        let mut args = vec!["-r", f];
        args.extend_from_slice(flag);
        let (ok, _, err) = run(&args, "lo");
        assert!(!ok, "{flag:?} accepted on a file");
        assert!(err.contains(flag[0]) && err.contains("live capture"), "{flag:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    // Their defaults, untyped, do not count as given.
    let (ok, _, err) = run(&["-r", f], "lo-none");
    assert!(ok, "{err}");
    // --rotate works on files too (in packet time; tests/outputs.rs).
    let (ok, _, err) = run(&["-r", f, "--rotate", "1h"], "lo-rotate");
    assert!(ok, "{err}");
}

/// A sample capture for the bounds tests, written once per test.
fn sample(tag: &str) -> (TestDir, String) {
    let d = tempdir(tag);
    let f = d.join("sample.pcap");
    let o = tapstat(&["synth", "-o", f.to_str().unwrap(), "--tcp-flows", "2", "--udp-flows", "1"]);
    assert!(o.status.success());
    let f = f.to_str().unwrap().to_string();
    (d, f)
}

/// Runs `tapstat -r SAMPLE <case>` and checks it is refused with an error naming the
/// flag or the range, not a panic.
fn refused(tag: &str, case: &[&str]) {
    let (_d, f) = sample(tag);
    let mut args = vec!["-r", f.as_str()];
    args.extend_from_slice(case);
    let (ok, _, err) = run(&args, tag);
    assert!(!ok, "{case:?} accepted");
    assert!(!err.contains("panicked"), "{case:?}: {err}");
    let flag = case[case.len() - 2];
    assert_eq!(err.trim_end().lines().count(), 1, "{case:?}: {err}");
    assert!(err.contains(flag) && err.contains("range"), "{case:?}: {err}");
}

const MAX: &str = "18446744073709551615";

/// One test per value that once panicked or was silently changed: each is a
/// clear error now, naming the flag and its range.
macro_rules! refused {
    ($($name:ident: [$($a:expr),*];)*) => {$(
        #[test]
        fn $name() {
            refused(stringify!($name), &[$($a),*]);
        }
    )*};
}

refused! {
    workers_2_64_minus_1: ["-w", MAX];
    workers_0: ["-w", "0"];
    workers_negative: ["-w", "-1"];
    workers_beyond_1024: ["-w", "1025"];
    max_flows_0: ["--max-flows", "0"];
    first_n_2_64_minus_1: ["--first-n", MAX];
    period_1e20s: ["--period", "1e20s"];
    period_100000000000000000000s: ["--period", "100000000000000000000s"];
    period_negative: ["--period", "-1ms"];
    rotate_99999999999999999999999d: ["--rotate", "99999999999999999999999d"];
    stats_interval_huge: ["--stats-interval", "1000000000000000000000000s"];
    flow_slots_2_64_minus_1_lists: ["--flow-table", "lists", "--flow-slots", MAX];
    flow_slots_2_64_minus_1_trees: ["--flow-table", "trees", "--flow-slots", MAX];
    flow_slots_2_64_minus_1_swiss: ["--flow-table", "swiss", "--flow-slots", MAX];
    flow_slots_2_64_minus_1_cuckoo: ["--flow-table", "cuckoo", "--flow-slots", MAX];
    flow_slots_2_64_minus_1_chunks: ["--flow-table", "chunks", "--flow-slots", MAX];
    flow_slots_1e9: ["--flow-slots", "1000000000"];
    gc_period_0: ["--gc-period", "0"];
    gc_steps_0: ["--gc-steps", "0"];
    periodic_nan: ["--periodic", "NaN"];
    l7_budget_negative: ["--l7-budget", "-5"];
    dns_cache_2_64_minus_1: ["--dns-cache", MAX];
    hash_seed_negative: ["--hash-seed", "-1"];
    buffer_1kib: ["--buffer", "1KiB"];
    kernel_ring_1024gib: ["--kernel-ring", "1024GiB"];
    dispatchers_1025: ["--dispatchers", "1025"];
    epoch_chunks_0: ["--schedule", "balance", "--epoch-chunks", "0"];
}

/// The file run's scheduling flags are refused where they would do nothing: a policy or
/// dispatchers on live capture, a policy with --periodic, an epoch length without a
/// policy that has epochs.
#[test]
fn scheduling_flags_are_refused_where_they_do_nothing() {
    let (_d, f) = sample("sched-sample");
    for (case, says) in [
        (&["-i", "lo", "--schedule", "balance"][..], "--schedule applies to -r files"),
        (&["-i", "lo", "--dispatchers", "2"], "--dispatchers applies to -r files"),
        (&["-r", f.as_str(), "--schedule", "bundle", "--periodic", "60"], "--periodic"),
        (&["-r", f.as_str(), "--epoch-chunks", "8"], "--epoch-chunks applies to --schedule balance|bundle"),
        (
            &["-r", f.as_str(), "-w", "1", "--flow-batches", "on"],
            "--flow-batches applies to -r files with several workers",
        ),
        (&["-i", "lo", "--flow-batches", "on"], "--flow-batches applies"),
    ] {
        let (ok, _, err) = run(case, "sched-flags");
        assert!(!ok, "{case:?} accepted");
        assert!(err.contains(says) && err.trim_end().lines().count() == 1, "{case:?}: {err}");
    }
    let (ok, s, err) = run(&["-r", f.as_str(), "-w", "3", "--schedule", "balance", "--dispatchers", "2"], "sched-ok");
    assert!(ok, "{err}");
    assert_eq!(s["scheduling"]["policy"], "balance");
    assert_eq!(s["scheduling"]["dispatchers"], 2);
}

/// NaN used to become 0 s, negatives "unexpected argument '-1'", infinities a
/// saturated time: every timeout refuses them, naming its range.
#[test]
fn timeouts_refuse_nan_negative_and_infinite() {
    for t in ["--tcp-timeout", "--udp-timeout", "--other-timeout", "--singleton-timeout", "--closed-timeout"] {
        for v in ["NaN", "-1", "inf", "-inf", "1e300"] {
            refused("timeouts", &[t, v]);
        }
    }
}

#[test]
fn bench_counts_are_checked() {
    let (_d, f) = sample("bench");
    assert!(!tapstat(&["bench", "-r", &f, "-w", "0"]).status.success());
    assert!(!tapstat(&["bench", "-r", &f, "-w", "1,2000"]).status.success());
    let o = tapstat(&["bench", "-r", &f, "--runs", MAX]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("range"));
}

/// `-w` within the parser's range but beyond what the machine can use: refused
/// before any thread starts.
#[test]
fn workers_beyond_the_machine_are_refused() {
    let d = tempdir("wbound");
    let f = d.join("sample.pcap");
    assert!(tapstat(&["synth", "-o", f.to_str().unwrap(), "--tcp-flows", "2"]).status.success());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let bound = (cores * 4).clamp(16, 1024);
    let over = (bound + 1).to_string();
    let (ok, _, err) = run(&["-r", f.to_str().unwrap(), "-w", &over], "wb");
    assert!(!ok, "-w {over} accepted");
    assert!(err.contains("-w") && err.contains("core"), "{err}");
    let (ok, s, err) = run(&["-r", f.to_str().unwrap(), "-w", "3"], "w3");
    assert!(ok, "{err}");
    assert_eq!(s["workers"], 3);
}

/// Values at the edges of the ranges are accepted and honoured.
#[test]
fn edge_values_are_accepted() {
    let d = tempdir("edges");
    let f = d.join("sample.pcap");
    assert!(tapstat(&["synth", "-o", f.to_str().unwrap(), "--tcp-flows", "2"]).status.success());
    let f = f.to_str().unwrap();
    for case in [
        &["--tcp-timeout", "0"][..],
        &["--first-n", "0"],
        &["--first-n", "1000"],
        &["--max-flows", "1"],
        &["--flow-slots", "1", "--flow-table", "cuckoo"],
        &["--time-sample", "0"],
        &["--hash-seed", "18446744073709551615"],
    ] {
        let mut args = vec!["-r", f];
        args.extend_from_slice(case);
        let (ok, _, err) = run(&args, "edge");
        assert!(ok, "{case:?}: {err}");
    }
}

/// With stderr a closed pipe, messages are lost but tapstat does not abort (it
/// used to panic in `eprint!`, exit status 101 or SIGABRT).
#[test]
fn a_closed_stderr_is_not_a_crash() {
    let dir = tempdir("closed-stderr");
    let f = dir.join("sample.pcap");
    assert!(tapstat(&["synth", "-o", f.to_str().unwrap(), "--tcp-flows", "2"]).status.success());
    for extra in [&[][..], &["-f", "not bpf(("], &["--metrics", "127.0.0.1:9"]] {
        let mut child = Command::new(bin())
            .args(["-r", f.to_str().unwrap(), "-o", dir.join("out").to_str().unwrap()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tapstat starts");
        // Close the read end at once: every write to stderr fails with EPIPE.
        drop(child.stderr.take());
        let status = child.wait().expect("tapstat ends");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), None, "{extra:?}: killed by a signal: {status:?}");
        let code = status.code().unwrap();
        assert!(code == 0 || code == 1, "{extra:?}: exit status {code}");
        assert_eq!(code == 0, extra.is_empty(), "{extra:?}: {code}");
    }
}
