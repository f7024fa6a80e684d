//! Where the records go: compressed logs (`--compress`), every
//! log as JSON lines on stdout (`-o -`), and output directories by interval of packet
//! time on file runs (`--rotate`). Real runs of the binary on the dev captures; the
//! compressed files are read back with the zstd and flate2 crates (and the `zstdcat`
//! and `zcat` tools where installed).

mod common;

use common::live::{have, live_ready, tcpreplay, wait_timeout, Netns};
use common::{analyze, bin, corpus, summary, tapstat, tempdir, L7_LOGS, LOGS};
use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Dev captures of every kind of log: TCP (complete or not) with HTTP, UDP with DNS,
/// ICMP, IPv6, tunnels, fragments, pcapng.
const CAPTURES: [&str; 6] = [
    "ndpi__1kxun.pcap",
    "ndpi__alexa-app.pcapng",
    "ndpi__dns_fragmented.pcap",
    "ndpi__icmp-tunnel.pcap",
    "ndpi__http_ipv6.pcap",
    "ndpi__6in4tunnel.pcap",
];

/// The bytes of a log file, decompressed by its name (`.zst`, `.gz`, or as it is).
fn unpack(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    match path.extension().and_then(|e| e.to_str()) {
        Some("zst") => {
            zstd::stream::read::Decoder::new(&bytes[..]).unwrap().read_to_end(&mut out).unwrap();
        }
        // Several members (a live run's flushes, an appended interval) are one stream.
        Some("gz") => {
            flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut out).unwrap();
        }
        _ => out = bytes,
    }
    out
}

/// The names of the files in `dir` (not hidden), sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    v.sort();
    v
}

/// The log files of a run (its `log_*` names).
fn log_names(dir: &Path) -> Vec<String> {
    names(dir).into_iter().filter(|n| n.starts_with("log_")).collect()
}

/// The records of each log of an output directory, sorted (a set per log), by file
/// name with any compression suffix taken off.
fn record_sets(dir: &Path) -> BTreeMap<String, Vec<String>> {
    log_names(dir)
        .into_iter()
        .map(|n| {
            let text = String::from_utf8(unpack(&dir.join(&n))).unwrap();
            let tsv = !n.contains(".jsonl");
            let mut v: Vec<String> = text.lines().skip(tsv as usize).map(str::to_string).collect();
            v.sort();
            (n.trim_end_matches(".zst").trim_end_matches(".gz").to_string(), v)
        })
        .collect()
}

/// `--compress zstd|gzip`: every log is named with its suffix and decompresses to
/// exactly the bytes of the uncompressed run, TSV and JSON lines alike; with several
/// workers, to the same records.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn compressed_logs_decompress_to_the_uncompressed_bytes() {
    let Some(c) = corpus() else { return };
    let d = tempdir("compress");
    for (k, cap) in CAPTURES.iter().enumerate() {
        let f = c.join(cap);
        for format in ["tsv", "jsonl"] {
            let plain = d.join(format!("{k}-{format}"));
            analyze(&f, &plain, 1, &["--format", format, "--periodic", "30"]);
            let logs = log_names(&plain);
            assert!(logs.len() >= 8, "{cap}: {logs:?}");
            for (algo, suffix) in [("zstd", ".zst"), ("gzip", ".gz")] {
                let out = d.join(format!("{k}-{format}-{algo}"));
                analyze(&f, &out, 1, &["--format", format, "--periodic", "30", "--compress", algo]);
                let want: Vec<String> = logs.iter().map(|l| format!("{l}{suffix}")).collect();
                assert_eq!(log_names(&out), want, "{cap} {format} {algo}");
                for l in &logs {
                    let got = unpack(&out.join(format!("{l}{suffix}")));
                    assert!(got == std::fs::read(plain.join(l)).unwrap(), "{cap} {format} {algo}: {l} differs");
                }
                // The records counted are those in the files.
                let s = summary(&out);
                let n: u64 = s["records"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
                let lines: usize = record_sets(&out).values().map(Vec::len).sum();
                assert_eq!(n as usize, lines, "{cap} {format} {algo}");
                if k == 0 && format == "tsv" {
                    let many = d.join(format!("{k}-{algo}-w3"));
                    analyze(&f, &many, 3, &["--periodic", "30", "--compress", algo]);
                    assert_eq!(record_sets(&many), record_sets(&plain), "{cap} {algo}: 3 workers");
                    // The tools users have read them too.
                    let tool = if algo == "zstd" { "zstdcat" } else { "zcat" };
                    if have(tool) {
                        let path = out.join(format!("log_tcp_complete{suffix}"));
                        let o = Command::new(tool).arg(&path).output().unwrap();
                        assert!(o.status.success(), "{tool}: {}", String::from_utf8_lossy(&o.stderr));
                        assert_eq!(o.stdout, std::fs::read(plain.join("log_tcp_complete")).unwrap(), "{tool}");
                    } else {
                        eprintln!("note: {tool} is not installed; read with the crate only");
                    }
                }
            }
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// The lines of `-o -` grouped by their log, `"log"` key taken off.
fn by_log(stdout: &[u8]) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in std::str::from_utf8(stdout).unwrap().lines() {
        let rest = line.strip_prefix("{\"log\":\"").unwrap_or_else(|| panic!("no log key first: {line}"));
        let (log, rest) = rest.split_once("\",").unwrap();
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(v["log"], log);
        m.entry(log.to_string()).or_default().push(format!("{{{rest}"));
    }
    m
}

/// `-o -`: every log in one stream of JSON lines on stdout, each line with its log's
/// name first; grouped by that key, the lines are those of the JSONL files of a
/// directory run (in the same order, with one worker); nothing else on stdout, no
/// directory named `-`, no summary.json anywhere.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn stdout_lines_grouped_by_log_are_the_jsonl_files() {
    let Some(c) = corpus() else { return };
    let d = tempdir("stdout");
    for (k, cap) in CAPTURES.iter().enumerate() {
        let f = c.join(cap);
        let dir = d.join(format!("{k}-dir"));
        analyze(&f, &dir, 1, &["--format", "jsonl", "--periodic", "30"]);
        for (extra, what) in
            [(&[][..], "default"), (&["--format", "jsonl"][..], "jsonl"), (&["--compress", "gzip"], "gzip")]
        {
            let cwd = d.join(format!("{k}-{what}"));
            std::fs::create_dir_all(&cwd).unwrap();
            let o = Command::new(bin())
                .args(["-r", f.to_str().unwrap(), "-o", "-", "-w", "1", "--hash-seed", "7", "--periodic", "30"])
                .args(extra)
                .current_dir(&cwd)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{cap} {what}: {err}");
            // The human summary goes to stderr, as for a directory.
            assert!(err.contains("standard output") && err.contains("packets"), "{err}");
            assert!(std::fs::read_dir(&cwd).unwrap().next().is_none(), "{cap} {what}: wrote files beside stdout");
            let stream = match what {
                "gzip" => {
                    let mut v = Vec::new();
                    flate2::read::MultiGzDecoder::new(&o.stdout[..]).read_to_end(&mut v).unwrap();
                    v
                }
                _ => o.stdout,
            };
            let got = by_log(&stream);
            for log in LOGS.iter().chain(&L7_LOGS).chain(&["log_tcp_periodic", "log_udp_periodic"]) {
                let file = String::from_utf8(std::fs::read(dir.join(format!("{log}.jsonl"))).unwrap()).unwrap();
                let want: Vec<String> = file.lines().map(str::to_string).collect();
                assert_eq!(got.get(*log).cloned().unwrap_or_default(), want, "{cap} {what}: {log}");
            }
            // Then the link histograms, as the directory's histograms.tsv has them.
            let hist = std::fs::read_to_string(dir.join("histograms.tsv")).unwrap();
            assert_eq!(got.get("histograms").map_or(0, Vec::len), hist.lines().count() - 1, "{cap} {what}");
            assert!(got.keys().all(|l| l.starts_with("log_") || l == "histograms"), "{:?}", got.keys());
        }
    }
    // TSV has no place in the stream, nor interval directories, nor --force.
    let f = c.join(CAPTURES[0]);
    for (extra, says) in
        [(&["--format", "tsv"][..], "--format tsv"), (&["--rotate", "1h"], "--rotate"), (&["--force"], "--force")]
    {
        let mut args = vec!["-r", f.to_str().unwrap(), "-o", "-"];
        args.extend_from_slice(extra);
        let o = tapstat(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains(says) && err.contains("-o -"), "{extra:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(o.stdout.is_empty());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// A reader that leaves (`tapstat -o - | head -1`) ends the run: exit status 0, no
/// panic, no error; the summary on stderr says the run stopped there.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn a_closed_stdout_ends_the_run_cleanly() {
    let Some(c) = corpus() else { return };
    let f = c.join(CAPTURES[0]);
    let f = f.to_str().unwrap();
    // The capture 40 times over: far more records than a pipe holds.
    let many: Vec<&str> = std::iter::repeat_n(f, 40).collect();
    for (workers, extra) in [("1", &[][..]), ("3", &["--compress", "zstd"][..])] {
        let mut child = Command::new(bin())
            .arg("-r")
            .args(&many)
            .args(["-o", "-", "-w", workers])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `head -1`: one line (or, compressed, a few bytes), then close the pipe.
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = Vec::new();
        out.read_until(b'\n', &mut first).unwrap();
        assert!(!first.is_empty());
        drop(out);
        let status = wait_timeout(&mut child, Duration::from_secs(120), "tapstat with a closed stdout");
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), None, "-w {workers}: {status:?}: {err}");
        assert_eq!(status.code(), Some(0), "-w {workers}: {err}");
        assert!(!err.contains("panicked") && !err.contains("error"), "-w {workers}: {err}");
        assert!(err.contains("closed by its reader"), "-w {workers}: {err}");
    }
    // Through a shell's pipe, as users type it.
    if have("head") {
        let cmd = format!("set -o pipefail; {} -r {f} {f} {f} {f} {f} {f} {f} {f} -o - -q | head -1", bin());
        let o = Command::new("bash").args(["-c", &cmd]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.stdout.iter().filter(|&&b| b == b'\n').count(), 1);
        assert!(o.stdout.starts_with(b"{\"log\":\"log_"));
    }
}

/// The interval directories of a rotated run, by name: their record sets per log.
fn intervals(out: &Path) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(out).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(!name.starts_with('.'), "an interval left unfinished: {name}");
            m.insert(name, record_sets(&p));
        }
    }
    m
}

/// `--rotate` on files, in packet time: an interval directory per period named as
/// live rotation names them, every record in exactly one, the same records in total
/// as an unrotated run, and the same directories holding the same records with 1 and
/// with 3 workers (several dispatchers, small chunks). Compressed intervals (whose
/// late records are appended as new frames) hold the same.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn rotation_on_files_splits_the_records_by_interval_the_same_with_1_and_3_workers() {
    let Some(c) = corpus() else { return };
    let d = tempdir("rotate");
    // Minutes to an hour of packet time (MANIFEST.tsv; summary.json's first and last
    // packet times): a minute's rotation gives intervals by the dozen, 10 s names with
    // seconds.
    for (cap, period, extra, min_dirs) in [
        ("ndpi__gnutella.pcap", "1m", &[][..], 10),
        ("ndpi__wechat.pcap", "1m", &["--periodic", "120"][..], 10),
        ("ndpi__dnscrypt-v1-and-resolver-pings.pcap", "5m", &["--format", "jsonl"][..], 5),
        ("ndpi__alexa-app.pcapng", "10s", &[][..], 10),
    ] {
        let f = c.join(cap);
        let whole = d.join(format!("{cap}-whole"));
        analyze(&f, &whole, 1, extra);
        let mut rotated = Vec::new();
        for (w, more) in
            [(1, &[][..]), (3, &["--chunk-frames", "16", "--dispatchers", "2"][..]), (1, &["--compress", "zstd"])]
        {
            let out = d.join(format!("{cap}-{w}-{}", more.len()));
            let mut args = vec!["--rotate", period];
            args.extend_from_slice(extra);
            args.extend_from_slice(more);
            analyze(&f, &out, w, &args);
            // summary.json stays at the top, for the whole run.
            assert_eq!(summary(&out)["records"], summary(&whole)["records"], "{cap}");
            assert!(log_names(&out).is_empty(), "{cap}: logs outside the intervals");
            rotated.push(intervals(&out));
        }
        let one = &rotated[0];
        assert!(one.len() >= min_dirs, "{cap}: {} intervals", one.len());
        let (len, under_a_minute) = if period == "10s" { (23, true) } else { (20, false) };
        for (name, logs) in one {
            assert!(name.len() == len && name.ends_with(".out"), "{cap}: {name}");
            assert!(name[..4].parse::<u32>().is_ok(), "{name}");
            assert_eq!(name.matches('_').count(), if under_a_minute { 5 } else { 4 }, "{name}");
            assert_eq!(
                logs.keys().cloned().collect::<Vec<_>>(),
                record_sets(&whole).keys().cloned().collect::<Vec<_>>()
            );
        }
        // Not all in one interval.
        assert!(one.values().filter(|l| l.values().any(|r| !r.is_empty())).count() > 1, "{cap}");
        assert_eq!(&rotated[1], one, "{cap}: 3 workers differ from 1");
        assert_eq!(&rotated[2], one, "{cap}: compressed differ");
        for (log, all) in record_sets(&whole) {
            let mut split: Vec<String> = one.values().flat_map(|l| l[&log].clone()).collect();
            split.sort();
            assert_eq!(split, all, "{cap}: {log} split by interval is not the whole");
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// The output directory's rule knows the new names: compressed logs and intervals
/// with seconds are an earlier run's output, refused without `--force`, removed with
/// it (and only they).
#[test]
fn force_knows_compressed_logs_and_interval_directories() {
    let d = tempdir("force-names");
    let f = d.join("flood.pcap");
    // 300 SYNs over 30 s of packet time.
    let o = tapstat(&["synth", "-o", f.to_str().unwrap(), "--flood", "300", "--flood-pps", "10"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = d.join("out");
    analyze(&f, &out, 1, &["--compress", "gzip", "--rotate", "10s"]);
    let dirs: Vec<String> = names(&out).into_iter().filter(|n| n.ends_with(".out")).collect();
    assert!(dirs.len() >= 3, "{dirs:?}");
    let syns: usize = dirs.iter().map(|n| read_gz_lines(&out.join(n).join("log_tcp_nocomplete.gz")) - 1).sum();
    assert_eq!(syns, 300);
    std::fs::write(out.join("notes.txt"), "mine\n").unwrap();
    let o = tapstat(&["-r", f.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "--compress", "zstd"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    analyze(&f, &out, 1, &["--compress", "zstd", "--force"]);
    let mut want: Vec<String> = LOGS
        .iter()
        .chain(&L7_LOGS)
        .map(|l| format!("{l}.zst"))
        .chain(["histograms.tsv".into(), "notes.txt".into(), "summary.json".into()])
        .collect();
    want.sort();
    assert_eq!(names(&out), want);
    std::fs::remove_dir_all(&d).unwrap();
}

fn read_gz_lines(p: &Path) -> usize {
    String::from_utf8(unpack(p)).unwrap().lines().count()
}

/// Serializes this binary's live tests (two replays at once starve a 2-core machine).
static LIVE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Zero timeouts: every flow ends at the next packet after its last, so records come
/// all through a replay, not only at its end.
const ZERO_TIMEOUTS: [&str; 10] = [
    "--tcp-timeout",
    "0",
    "--udp-timeout",
    "0",
    "--other-timeout",
    "0",
    "--singleton-timeout",
    "0",
    "--closed-timeout",
    "0",
];

/// A live run with `--compress zstd|gzip` ends a frame at least every `--flush`: while
/// it still runs, its logs decompress whole (no unfinished frame) and hold records;
/// at the end, every record counted.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn live_compressed_logs_are_readable_while_the_run_goes_on() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let file = c.join(CAPTURES[0]);
    for (algo, suffix) in [("zstd", ".zst"), ("gzip", ".gz")] {
        let ns = Netns::new(&format!("cmp{algo}"));
        let out = tempdir(&format!("live-compress-{algo}"));
        let mut args = vec![bin(), "-i", "vb", "-o", out.to_str().unwrap(), "-q", "-w", "1", "--compress", algo];
        args.extend_from_slice(&["--flush", "200ms", "--buffer", "16MiB", "--kernel-ring", "64MiB"]);
        args.extend_from_slice(&ZERO_TIMEOUTS);
        let mut tap = ns.cmd(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let t0 = Instant::now();
        while !out.join("stats.jsonl").exists() {
            assert!(tap.try_wait().unwrap().is_none(), "tapstat -i exited early");
            assert!(t0.elapsed() < Duration::from_secs(30), "tapstat -i did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        tcpreplay(&ns, &file, 2000);
        // Two --flush periods: the worker's buffer, then the writer's frame.
        std::thread::sleep(Duration::from_millis(800));
        assert!(tap.try_wait().unwrap().is_none(), "tapstat -i ended by itself");
        let mut during = 0;
        for l in LOGS.iter().chain(&L7_LOGS) {
            // Decodes to its end: no frame is left open between two flushes.
            during += read_log_text(&out.join(format!("{l}{suffix}"))).lines().count() - 1;
        }
        assert!(during > 0, "{algo}: no record readable while the run goes on");
        common::live::run(Command::new("kill").args(["-TERM", &tap.id().to_string()]));
        let s = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat -i after SIGTERM");
        let mut err = String::new();
        tap.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(s.success(), "{err}");
        let sum = summary(&out);
        let counted: u64 = sum["records"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
        let mut lines = 0;
        for l in LOGS.iter().chain(&L7_LOGS) {
            lines += read_log_text(&out.join(format!("{l}{suffix}"))).lines().count() - 1;
        }
        assert_eq!(lines as u64, counted, "{algo}");
        assert!(counted as usize >= during);
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// The text of a (compressed) log; panics on an unfinished or corrupt stream.
fn read_log_text(p: &Path) -> String {
    String::from_utf8(unpack(p)).unwrap()
}

/// A live run with `-o -`: records reach stdout as JSON lines while the capture goes
/// on (every `--flush`), and a reader that leaves ends the run with status 0.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn live_stdout_streams_and_ends_when_its_reader_leaves() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let file: PathBuf = c.join(CAPTURES[0]);
    let ns = Netns::new("stdout");
    let cwd = tempdir("live-stdout");
    let mut args = vec![bin(), "-i", "vb", "-o", "-", "-w", "1", "--flush", "100ms", "--stats-interval", "1d"];
    args.extend_from_slice(&["--buffer", "16MiB", "--kernel-ring", "64MiB"]);
    args.extend_from_slice(&ZERO_TIMEOUTS);
    let mut tap =
        ns.cmd(&args).current_dir(&cwd).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("tapstat starts");
    // The sockets are open once it says it captures.
    let mut err = std::io::BufReader::new(tap.stderr.take().unwrap());
    let mut said = String::new();
    err.read_line(&mut said).unwrap();
    assert!(said.contains("capturing on vb"), "{said}");
    let errs = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        rest
    });
    let stdout = tap.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut first = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut first);
        // The reader leaves here: the pipe closes.
        let _ = tx.send(first);
    });
    // Slow enough that the capture goes on after the first line.
    let ns_name = ns.name.clone();
    let replayer = std::thread::spawn(move || {
        let mut r = Command::new("ip")
            .args(["netns", "exec", &ns_name, "tcpreplay", "-q", "-i", "va", "--pps", "500", file.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_timeout(&mut r, Duration::from_secs(120), "tcpreplay")
    });
    let first = rx.recv_timeout(Duration::from_secs(30)).expect("a record on stdout while the capture goes on");
    let v: serde_json::Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first}"));
    assert!(first.starts_with("{\"log\":\"log_") && v["c_ip"].is_string(), "{first}");
    assert!(replayer.join().unwrap().success());
    // The run ends by itself at its next write; at the latest, SIGTERM's (the flows
    // left are written then).
    let t0 = Instant::now();
    while tap.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if tap.try_wait().unwrap().is_none() {
        common::live::run(Command::new("kill").args(["-TERM", &tap.id().to_string()]));
    }
    let s = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat -i -o - after its reader left");
    let rest = errs.join().unwrap();
    assert!(s.success(), "{s:?}: {rest}");
    assert!(!rest.contains("panicked") && !rest.contains("error"), "{rest}");
    assert!(rest.contains("closed by its reader"), "{rest}");
    assert!(std::fs::read_dir(&cwd).unwrap().next().is_none(), "wrote files beside stdout");
    let _ = std::fs::remove_dir_all(&cwd);
}
