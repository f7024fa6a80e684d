//! Live capture against the real thing: a network namespace of its own per test, a
//! veth pair in it, `tcpreplay --pps N` into one end and `tapstat -i` on the other.
//! The records must be those of `tapstat -r` on the same file (packets and bytes per
//! flow; times differ), so no flow was split across workers, and nothing was dropped.
//!
//! These tests need root (network namespaces, AF_PACKET), `ip` and `tcpreplay`. They
//! skip with a reason when something is missing, and fail instead when
//! `TAPSTAT_REQUIRE_LIVE=1` (as `.ci/run` sets after installing tcpreplay).

mod common;

use common::live::{capture, flows, have, live_ready, reference, run, tcpreplay, wait_started, wait_timeout, Netns};
use common::{bin, corpus, read_log, summary, tempdir, LOGS};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The dev captures replayed by these tests: Ethernet, no frame beyond the veth's
/// largest MTU (some captures hold 64 KiB GRO frames), no truncated frames (tcpreplay sends what was captured), a mix of TCP, UDP,
/// IPv4 and IPv6.
const FILES: [&str; 2] = ["ndpi__1kxun.pcap", "ndpi__443-firefox.pcap"];

fn check_same_records(tag: &str, workers: usize, pps: u32, extra: &[&str]) {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let mut spread = vec![0u64; workers];
    for (i, f) in FILES.iter().enumerate() {
        let file = c.join(f);
        let t = format!("{tag}{i}");
        let live = capture(&t, &file, pps, workers, extra);
        let file_out = reference(&file, &t, &[]);
        // Losses first: they explain differing records.
        let s = summary(&live);
        let l = &s["live"];
        assert_eq!(l["kernel_drops"], 0, "{f}: {l}");
        assert_eq!(l["buffer_drops"], 0, "{f}: {l}");
        assert_eq!(s["packets"], summary(&file_out)["packets"], "{f}: every frame of the file was captured ({l})");
        for log in LOGS {
            let (a, b) = (flows(&live, log), flows(&file_out, log));
            let only_live: Vec<_> = a.iter().filter(|(k, n)| b.get(*k) != Some(n)).take(5).collect();
            let only_file: Vec<_> = b.iter().filter(|(k, n)| a.get(*k) != Some(n)).take(5).collect();
            assert!(
                only_live.is_empty() && only_file.is_empty(),
                "{f} {log}, {workers} worker(s) {extra:?}: live-only {only_live:?} file-only {only_file:?}"
            );
        }
        let per_worker = l["per_worker_packets"].as_array().unwrap();
        assert_eq!(per_worker.len(), workers);
        for (t, n) in spread.iter_mut().zip(per_worker) {
            *t += n.as_u64().unwrap();
        }
        // stats.jsonl has a line per worker per interval.
        let stats = std::fs::read_to_string(live.join("stats.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> = stats.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(lines.len() >= workers, "{stats}");
        let rx: u64 = lines.iter().map(|v| v["rx_packets"].as_u64().unwrap()).sum();
        assert_eq!(rx, l["received_packets"].as_u64().unwrap());
        let _ = std::fs::remove_dir_all(&live);
        let _ = std::fs::remove_dir_all(&file_out);
    }
    // The fanout spread the flows: every worker had some (else "no flow was split"
    // would prove nothing). ndpi__1kxun.pcap has about 200 flows; a file of one
    // flow lands on one worker, so this is checked over all files.
    assert!(spread.iter().all(|n| *n > 0), "packets per worker: {spread:?}");
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn one_worker_periodic_equals_the_file() {
    check_same_records("p1", 1, 2000, &["--acquire", "periodic"]);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn two_workers_periodic_equal_the_file_and_split_no_flow() {
    // A flow split across workers would show up as two partial records.
    check_same_records("p2", 2, 2000, &["--acquire", "periodic"]);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn two_workers_polling_equal_the_file() {
    check_same_records("q2", 2, 2000, &["--acquire", "poll"]);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn a_filter_keeps_only_what_it_matches() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let file = c.join(FILES[0]);
    let live = capture("f2", &file, 2000, 2, &["-f", "udp", "--acquire", "block"]);
    let file_out = reference(&file, "f2", &[]);
    assert_eq!(flows(&live, "log_udp_complete"), flows(&file_out, "log_udp_complete"));
    assert!(!flows(&file_out, "log_tcp_complete").is_empty());
    for log in ["log_tcp_complete", "log_tcp_nocomplete"] {
        assert!(flows(&live, log).is_empty(), "{log} has records through a 'udp' filter");
    }
    let _ = std::fs::remove_dir_all(&live);
    let _ = std::fs::remove_dir_all(&file_out);
}

#[test]
fn missing_interface_and_missing_dpdk_are_clear_errors() {
    let out = tempdir("live-errors");
    let o = Command::new(bin()).args(["-i", "tapstat-nope0", "-o", out.to_str().unwrap(), "-q"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no network interface named \"tapstat-nope0\""), "{err}");
    let o =
        Command::new(bin()).args(["--dpdk=--no-pci --no-huge", "-o", out.to_str().unwrap(), "-q"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("without DPDK") || err.contains("EAL"), "{err}");
    let o =
        Command::new(bin()).args(["-i", "lo", "-f", "tcp port banana", "-o", out.to_str().unwrap()]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("banana") || err.contains("libpcap"), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Operations in one run: the Prometheus endpoint answers while capturing, SIGHUP
/// reopens the files (appending), `--rotate` writes Tstat-named interval directories
/// closed by a rename, `--user nobody` drops root after the sockets are open, and
/// SIGTERM ends the run writing every flow.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn metrics_sighup_rotation_and_user() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let file = c.join(FILES[1]);
    let ns = Netns::new("ops");
    ns.exec(&["ip", "link", "set", "lo", "up"]);
    let out = tempdir("live-ops");
    // The user's own directory (`--user` needs one it can write; the temp dir above it
    // is world-traversable).
    std::os::unix::fs::chown(&out, Some(65534), Some(65534)).unwrap();
    let args = [
        bin(),
        "-i",
        "vb",
        "-o",
        out.to_str().unwrap(),
        "-q",
        "-w",
        "2",
        "--buffer",
        "4MiB",
        "--kernel-ring",
        "4MiB",
        "--stats-interval",
        "100ms",
        "--metrics",
        "127.0.0.1:9464",
        "--rotate",
        "1m",
        "--user",
        "nobody",
    ];
    let mut tap = ns.cmd(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("tapstat starts");
    wait_started(&mut tap, &out);
    tcpreplay(&ns, &file, 2000);
    std::thread::sleep(Duration::from_millis(400));
    // A loaded machine may leave the exporter a moment to answer: a few tries.
    let scrape = || {
        let o = ns
            .cmd(&[
                "bash",
                "-c",
                "exec 3<>/dev/tcp/127.0.0.1/9464 && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3",
            ])
            .output()
            .unwrap();
        (String::from_utf8_lossy(&o.stdout).to_string(), String::from_utf8_lossy(&o.stderr).to_string())
    };
    let mut tries = 0;
    let text = loop {
        let (text, err) = scrape();
        tries += 1;
        if text.starts_with("HTTP/1.1 200 OK") {
            break text;
        }
        assert!(tries < 10, "no answer from --metrics after {tries} tries: {text}{err}");
        std::thread::sleep(Duration::from_millis(500));
    };
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_string();
    let rx: u64 = body
        .lines()
        .filter(|l| l.starts_with("tapstat_received_packets_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(rx > 0, "{body}");
    if have("promtool") {
        let mut p = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(p.stdin.as_mut().unwrap(), body.as_bytes()).unwrap();
        let o = p.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    } else {
        eprintln!("note: promtool not installed; the format is checked by the unit test in telemetry.rs");
    }
    // The process runs as nobody now.
    let status = std::fs::read_to_string(format!("/proc/{}/status", tap.id())).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap().to_string();
    assert!(uid.split_whitespace().skip(1).all(|u| u == "65534"), "{uid}");
    // SIGHUP: the files are reopened, not truncated, and the run goes on. As
    // logrotate does, stats.jsonl is moved away first: the reopened one is new.
    std::fs::rename(out.join("stats.jsonl"), out.join("stats.jsonl.1")).unwrap();
    run(Command::new("kill").args(["-HUP", &tap.id().to_string()]));
    std::thread::sleep(Duration::from_millis(400));
    assert!(tap.try_wait().unwrap().is_none(), "SIGHUP stopped the run");
    let fresh = std::fs::read_to_string(out.join("stats.jsonl")).unwrap_or_default();
    assert!(fresh.lines().count() >= 2, "stats.jsonl was not reopened after SIGHUP: {fresh:?}");
    run(Command::new("kill").args(["-TERM", &tap.id().to_string()]));
    let s = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat -i after SIGTERM");
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(tap.stderr.as_mut().unwrap(), &mut err);
    assert!(s.success(), "{err}");
    // One or two interval directories (the replay may cross a minute), closed.
    let dirs: Vec<PathBuf> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    assert!(!dirs.is_empty() && dirs.len() <= 2, "{dirs:?}");
    let mut records = 0;
    for d in &dirs {
        let name = d.file_name().unwrap().to_str().unwrap();
        assert!(name.len() == 20 && name.ends_with(".out") && !name.starts_with('.'), "{name}");
        for log in LOGS {
            let text = std::fs::read_to_string(d.join(log)).unwrap();
            let header = text.lines().next().unwrap_or_default();
            assert!(header.starts_with("c_ip\t"), "{name}/{log}: a header first");
            assert_eq!(text.lines().filter(|l| *l == header).count(), 1, "{name}/{log}: one header");
            records += text.lines().count() - 1;
        }
    }
    let s = summary(&out);
    assert_eq!(records as u64, s["records"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum::<u64>());
    assert!(records > 0);
    assert_eq!(s["interrupted"], true);
    // The link histograms (written by the run's writer) are nobody's too, one file in
    // each interval directory (none at the top), and count the packets.
    assert!(!out.join("histograms.tsv").exists(), "with --rotate, no histograms.tsv at the top");
    let mut ip_len = 0;
    for d in &dirs {
        let h = d.join("histograms.tsv");
        assert_eq!(std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&h).unwrap()), 65534);
        let text = std::fs::read_to_string(&h).unwrap();
        assert!(text.starts_with("time\thistogram\tdirection\tbin\tcount\n"));
        ip_len += text.lines().filter(|l| l.split('\t').nth(1) == Some("ip_len")).count();
    }
    assert!(ip_len > 0, "no packet histograms in {dirs:?}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Records reach the disk within `--flush` of wall time while the capture runs, so the
/// logs can be followed and a SIGKILL loses at most that much (before, records stayed
/// in 256 KiB buffers until the end: a capture of this size left nothing on disk).
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn records_reach_the_disk_while_the_capture_runs() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let file = c.join(FILES[0]);
    let ns = Netns::new("flush");
    let out = tempdir("live-flush");
    // Short timeouts, so flows end (and are written) while later packets come.
    let args = [
        bin(),
        "-i",
        "vb",
        "-o",
        out.to_str().unwrap(),
        "-q",
        "-w",
        "1",
        "--buffer",
        "4MiB",
        "--kernel-ring",
        "4MiB",
        "--flush",
        "300ms",
        "--tcp-timeout",
        "0.2",
        "--udp-timeout",
        "0.2",
        "--other-timeout",
        "0.2",
        "--singleton-timeout",
        "0.2",
        "--closed-timeout",
        "0.05",
    ];
    let mut tap = ns.cmd(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("tapstat starts");
    let t0 = Instant::now();
    while !out.join("stats.jsonl").exists() {
        assert!(tap.try_wait().unwrap().is_none(), "tapstat -i exited early");
        assert!(t0.elapsed() < Duration::from_secs(30), "tapstat -i did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    tcpreplay(&ns, &file, 1000);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(tap.try_wait().unwrap().is_none(), "tapstat -i is still capturing");
    let lines = |log: &str| std::fs::read_to_string(out.join(log)).map_or(0, |t| t.lines().count().saturating_sub(1));
    let written: usize = LOGS.iter().map(|l| lines(l)).sum();
    // SIGKILL: no chance to write anything more.
    let _ = tap.kill();
    let _ = tap.wait();
    assert!(written > 100, "only {written} records on disk while the capture ran");
    assert_eq!(LOGS.iter().map(|l| lines(l)).sum::<usize>(), written);
    let _ = std::fs::remove_dir_all(&out);
}

/// The link histograms of a live capture reach histograms.tsv interval by interval
/// while the capture runs, with two workers (before, they were written only when the
/// run stopped): rows of the early intervals are on disk before the capture is
/// stopped, and the final file begins with them and counts every packet once.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn histograms_reach_the_disk_while_the_capture_runs() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let file = c.join(FILES[0]);
    let ns = Netns::new("histo");
    let out = tempdir("live-histo");
    let mut args = vec![bin(), "-i", "vb", "-o", out.to_str().unwrap(), "-q", "-w", "2", "--hash-seed", "7"];
    args.extend(["--buffer", "4MiB", "--flush", "300ms", "--histo-interval", "1"]);
    let mut tap = ns.cmd(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("tapstat starts");
    wait_started(&mut tap, &out);
    // 1723 frames at 500 pps: about 3.5 s, so several whole 1 s intervals.
    tcpreplay(&ns, &file, 500);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(tap.try_wait().unwrap().is_none(), "tapstat -i is still capturing");
    let read = || std::fs::read_to_string(out.join("histograms.tsv")).unwrap_or_default();
    let early = read();
    // Whole lines (a read may meet a write half done).
    let early = early[..early.rfind('\n').map_or(0, |i| i + 1)].to_string();
    run(Command::new("kill").args(["-INT", &tap.id().to_string()]));
    let s = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat -i after SIGINT");
    assert!(s.success(), "tapstat -i failed");
    let fin = read();
    let intervals = |t: &str| {
        t.lines()
            .skip(1)
            .map(|l| l.split('\t').next().unwrap_or("").to_string())
            .collect::<std::collections::BTreeSet<_>>()
    };
    let packets = |t: &str| -> u64 {
        t.lines()
            .filter(|l| l.split('\t').nth(1) == Some("ip_len"))
            .map(|l| l.rsplit('\t').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert!(early.starts_with("time\thistogram\tdirection\tbin\tcount\n"), "{early:?}");
    assert!(intervals(&early).len() >= 2, "intervals written while the capture ran: {:?}", intervals(&early));
    assert!(packets(&early) > 0);
    // Written once: the final file goes on from what was there, adding later intervals.
    assert!(fin.starts_with(&early) && fin.len() > early.len(), "early:\n{early}\nfinal:\n{fin}");
    assert!(intervals(&fin)
        .iter()
        .all(|t| !intervals(&early).contains(t) || fin[early.len()..].lines().all(|l| !l.starts_with(t.as_str()))));
    let sm = summary(&out);
    assert_eq!(packets(&fin), sm["packets"].as_u64().unwrap() - sm["non_ip"].as_u64().unwrap_or(0), "{}", sm["live"]);
    // The packet histograms, summed over time (the capture's clock is not the file's),
    // are the offline run's of the same file, bin by bin.
    assert_eq!(sm["live"]["kernel_drops"], 0, "{}", sm["live"]);
    assert_eq!(sm["live"]["buffer_drops"], 0, "{}", sm["live"]);
    let by_bin = |t: &str| {
        let mut m = std::collections::BTreeMap::<(String, String), u64>::new();
        for l in t.lines().skip(1) {
            let f: Vec<&str> = l.split('\t').collect();
            if ["ip_len", "ttl", "ip_proto"].contains(&f[1]) {
                *m.entry((f[1].to_string(), f[3].to_string())).or_default() += f[4].parse::<u64>().unwrap();
            }
        }
        m
    };
    let off = reference(&file, "histo", &["--histo-interval", "1"]);
    let want = std::fs::read_to_string(off.join("histograms.tsv")).unwrap();
    assert!(by_bin(&want).len() > 20);
    assert_eq!(by_bin(&fin), by_bin(&want));
    let _ = std::fs::remove_dir_all(&off);
    let _ = std::fs::remove_dir_all(&out);
}

/// DN-Hunter across live workers: a DNS answer reaches only the
/// worker the kernel gave its flow to, yet the connections it names land on every
/// worker. The answers a worker learns are handed to the others and flows are named by
/// packet time, so `fqdn` of every flow equals that of `-r` with one worker.
/// ndpi__android.pcap resolves before each of its connections, often with the SYN the
/// very next frame (0.5 ms later at 2000 pps, well inside the kernel ring's 10 ms block
/// timeout: sharing alone, without naming by time, still missed 2 or 3 flows a run).
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn two_workers_name_flows_from_each_others_dns_answers() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let file = c.join("ndpi__android.pcap");
    let live = capture("dn2", &file, 2000, 2, &["--acquire", "periodic"]);
    let file_out = reference(&file, "dn2", &[]);
    let names = |dir: &std::path::Path| {
        let mut m = std::collections::BTreeMap::new();
        for log in ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete"] {
            for r in read_log(dir, log) {
                let k = format!("{log} {} {} {} {}", r["c_ip"], r["c_port"], r["s_ip"], r["s_port"]);
                m.insert(k, r["fqdn"].clone());
            }
        }
        m
    };
    let (a, b) = (names(&live), names(&file_out));
    let named_tcp = b.iter().filter(|(k, v)| k.starts_with("log_tcp") && *v != "-").count();
    assert!(named_tcp >= 20, "the reference names {named_tcp} TCP flows: the capture proves nothing");
    assert_eq!(a.len(), b.len(), "the same flows");
    let wrong: Vec<_> = b.iter().filter(|(k, v)| a.get(*k) != Some(v)).map(|(k, v)| (k, v, a.get(k))).collect();
    let s = summary(&live);
    let l = &s["live"];
    assert!(
        wrong.is_empty(),
        "{} of {} flows named differently live (file, live): {wrong:?}\n{l}",
        wrong.len(),
        b.len()
    );
    let per_worker = l["per_worker_packets"].as_array().unwrap();
    assert!(per_worker.iter().all(|n| n.as_u64().unwrap() > 0), "both workers had packets: {l}");
    assert!(l["dns_answers_shared"].as_u64().unwrap() > 0, "{l}");
    assert_eq!(l["dns_answers_dropped"], 0, "{l}");
    let _ = std::fs::remove_dir_all(&live);
    let _ = std::fs::remove_dir_all(&file_out);
}

/// Why a `--user` test cannot run here: it captures on `lo` (AF_PACKET) and hands
/// files to `nobody`, both root's to do.
fn user_test_ready() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(std::env::var("TAPSTAT_REQUIRE_LIVE").as_deref() != Ok("1"), "TAPSTAT_REQUIRE_LIVE=1 but not root");
    eprintln!("skipped: not root (AF_PACKET and chown to nobody need it)");
    false
}

/// Captures on `lo` into `out` as `--user nobody` until stats.jsonl appears, then
/// stops the run with SIGINT; returns its exit status and stderr.
fn capture_lo_as_nobody(out: &std::path::Path) -> (std::process::ExitStatus, String) {
    let mut tap = Command::new(bin())
        .args(["-i", "lo", "-o", out.to_str().unwrap(), "-q", "-w", "1", "--user", "nobody"])
        .args(["--buffer", "4MiB", "--kernel-ring", "4MiB", "--stats-interval", "100ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tapstat starts");
    wait_started(&mut tap, out);
    run(Command::new("kill").args(["-INT", &tap.id().to_string()]));
    let s = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat -i lo after SIGINT");
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(tap.stderr.as_mut().unwrap(), &mut err);
    (s, err)
}

/// `--user` gives the user what tapstat created (its logs, stats.jsonl; summary.json
/// is written as the user), never what was in the output directory before: a root-only
/// key file kept there stays root's.
#[test]
fn user_gets_only_what_tapstat_created() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !user_test_ready() {
        return;
    }
    let out = tempdir("live-user-own");
    // The user's own directory (the temp dir above it is world-traversable).
    std::os::unix::fs::chown(&out, Some(65534), Some(65534)).unwrap();
    let key = out.join("secret.key");
    std::fs::write(&key, "k").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (s, err) = capture_lo_as_nobody(&out);
    assert!(s.success(), "{err}");
    let m = std::fs::metadata(&key).unwrap();
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (0, 0, 0o600), "the key was given away");
    for f in ["log_tcp_complete", "stats.jsonl", "summary.json"] {
        assert_eq!(std::fs::metadata(out.join(f)).unwrap().uid(), 65534, "{f}");
    }
}

/// An output directory the user cannot write is refused at once, in one line, before
/// the capture starts (tapstat used to give it to the user); one tapstat creates is
/// given to the user.
#[test]
fn user_needs_an_output_directory_it_can_write() {
    use std::os::unix::fs::MetadataExt;
    if !user_test_ready() {
        return;
    }
    let d = tempdir("live-user-dir");
    let o = common::tapstat_within(&["-i", "lo", "-o", d.to_str().unwrap(), "-q", "--user", "nobody"], 30);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--user nobody") && err.contains("cannot write"), "{err}");
    assert_eq!(std::fs::metadata(&*d).unwrap().uid(), 0, "the directory was given away");
    assert!(!d.join("log_tcp_complete").exists() && !d.join("stats.jsonl").exists());
    // A directory tapstat creates is the user's.
    let sub = d.join("sub");
    let (s, err) = capture_lo_as_nobody(&sub);
    assert!(s.success(), "{err}");
    assert_eq!(std::fs::metadata(&sub).unwrap().uid(), 65534);
    assert_eq!(std::fs::metadata(&*d).unwrap().uid(), 0);
}

/// A quiet link still ends its flows: once the traffic stops, every flow's record
/// reaches the disk within its timeout, a pass of the collector (about a second),
/// the kernel's block timeout and `--flush`, with no packet after it and the capture
/// still running. Before, the live clock was packet time alone: finished flows waited
/// for the next packet (on a quiet link, for minutes) or for the end of the run.
#[test]
fn a_quiet_link_still_writes_its_flows() {
    if !live_ready() {
        return;
    }
    let dir = tempdir("live-quiet-trace");
    let trace = dir.join("quiet.pcap");
    run(Command::new(bin()).args(["synth", "--seed", "3", "--tcp-flows", "40", "--udp-flows", "40", "-o"]).arg(&trace));
    let ns = Netns::new("quiet");
    ns.exec(&["ip", "link", "set", "lo", "up"]);
    let out = tempdir("live-quiet");
    let o = out.to_str().unwrap();
    #[rustfmt::skip]
    let args = [
        bin(), "-i", "vb", "-o", o, "-q", "-w", "1", "--flush", "300ms",
        "--tcp-timeout", "1", "--udp-timeout", "1", "--other-timeout", "1",
        "--singleton-timeout", "1", "--closed-timeout", "0.5", "--metrics", "127.0.0.1:9465",
        "--stats-interval", "200ms",
    ];
    let mut tap = ns.cmd(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("tapstat starts");
    wait_started(&mut tap, &out);
    tcpreplay(&ns, &trace, 2000);
    let rows = || -> usize {
        LOGS.iter()
            .map(|l| std::fs::read_to_string(out.join(l)).map_or(0, |t| t.lines().count().saturating_sub(1)))
            .sum()
    };
    // The bound: 1 s of timeout, ~1 s for the collector to pass every slot, 0.11 s in
    // the kernel, 0.3 s of --flush; 5 s leaves room for a loaded machine.
    std::thread::sleep(Duration::from_secs(5));
    let quiet = rows();
    assert!(tap.try_wait().unwrap().is_none(), "tapstat -i is still capturing");
    // The metrics endpoint counts the records made, per log: those on disk.
    let scrape = "exec 3<>/dev/tcp/127.0.0.1/9465 && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3";
    let mut metrics = String::new();
    for _ in 0..10 {
        let o = ns.cmd(&["bash", "-c", scrape]).output().unwrap();
        metrics = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        if metrics.starts_with("HTTP/1.1 200 OK") {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    for log in LOGS {
        let made: u64 = metrics
            .lines()
            .filter(|l| l.starts_with("tapstat_records_total{") && l.contains(&format!("log=\"{log}\"")))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        let on_disk = std::fs::read_to_string(out.join(log)).map_or(0, |t| t.lines().count().saturating_sub(1));
        assert_eq!(made, on_disk as u64, "{log}: tapstat_records_total against the rows on disk\n{metrics}");
    }
    run(Command::new("kill").args(["-INT", &tap.id().to_string()]));
    let s = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat -i after SIGINT");
    assert!(s.success(), "tapstat -i failed");
    let all = rows();
    assert!(all >= 80, "the 80 flows of the trace were written: {all}");
    assert_eq!(quiet, all, "records on disk 5 s into the silence, and after the run");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&dir);
}
