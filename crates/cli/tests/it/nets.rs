//! Internal networks (`-N`, `--internal`) on dev captures: `c_isint`/`s_isint` of every
//! record are the networks' verdict on its addresses, summary.json's traffic classes
//! add up to the records, and the records (anonymized too) are the same with 1 and 3
//! workers.

use crate::common::{analyze, corpus, read_log, record_set, summary, tempdir, L7_LOGS, LOGS};
use std::net::IpAddr;
use tapstat_analyze::nets::{Class, Nets};

const NETS: &str = "# the capture's LAN and a v6 prefix, both of Tstat's IPv4 forms\n192.168.0.0/16\n10.0.0.0\n255.0.0.0\n2001:470::/32 # tunnel broker\n";

const CAPTURES: &[&str] =
    &["ndpi__1kxun.pcap", "ndpi__6in4tunnel.pcap", "ndpi__alexa-app.pcapng", "ndpi__http_ipv6.pcap"];

#[test]
fn isint_and_traffic_classes_follow_the_networks() {
    let Some(corpus) = corpus() else { return };
    let work = tempdir("nets");
    let file = work.join("nets");
    std::fs::write(&file, NETS).unwrap();
    let nets = Nets::parse(NETS).unwrap();
    let mut met = [0usize; 4];
    for name in CAPTURES {
        let out = work.join(name);
        analyze(&corpus.join(name), &out, 1, &["-N", file.to_str().unwrap()]);
        // Per class, from the records: flows, packets, wire bytes.
        let mut want = [[0u64; 3]; 4];
        for log in LOGS {
            for r in read_log(&out, log) {
                let c: IpAddr = r["c_ip"].parse().unwrap();
                let s: IpAddr = r["s_ip"].parse().unwrap();
                if log != "log_other" {
                    assert_eq!(r["c_isint"], (nets.contains(c) as u8).to_string(), "{name} {log} {c}");
                    assert_eq!(r["s_isint"], (nets.contains(s) as u8).to_string(), "{name} {log} {s}");
                    assert_eq!((r["c_iscrypto"].as_str(), r["s_iscrypto"].as_str()), ("0", "0"));
                }
                let class = nets.class(c, s);
                met[class.index()] += 1;
                let n = |k: &str| r[k].parse::<u64>().unwrap();
                let w = &mut want[class.index()];
                w[0] += 1;
                w[1] += n("c_pkts_all") + n("s_pkts_all");
                w[2] += n("c_bytes_wire") + n("s_bytes_wire");
            }
        }
        let sum = summary(&out);
        for c in Class::ALL {
            let t = &sum["traffic"][c.name()];
            let got = [&t["flows"], &t["packets"], &t["bytes"]].map(|v| v.as_u64().unwrap());
            assert_eq!(got, want[c.index()], "{name}: traffic.{}", c.name());
        }
    }
    // Every class was met somewhere (the check above could not fail for a class never seen).
    assert!(met.iter().all(|&n| n > 0), "classes met: {met:?}");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn without_networks_everything_is_internal_as_in_tstat() {
    let Some(corpus) = corpus() else { return };
    let out = tempdir("nets-none");
    analyze(&corpus.join("ndpi__1kxun.pcap"), &out, 1, &[]);
    let n = read_log(&out, "log_tcp_complete").len() + read_log(&out, "log_udp_complete").len();
    assert!(n > 50);
    for log in ["log_tcp_complete", "log_udp_complete"] {
        for r in read_log(&out, log) {
            assert_eq!((r["c_isint"].as_str(), r["s_isint"].as_str()), ("1", "1"));
        }
    }
    let t = &summary(&out)["traffic"];
    assert_eq!(t["in"]["flows"].as_u64(), Some(0));
    assert_eq!(t["out"]["flows"].as_u64(), Some(0));
    assert_eq!(t["ext"]["flows"].as_u64(), Some(0));
    assert!(t["local"]["flows"].as_u64().unwrap() as usize >= n);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn same_records_with_one_and_three_workers() {
    let Some(corpus) = corpus() else { return };
    let work = tempdir("nets-workers");
    let key = work.join("key");
    std::fs::write(&key, [5u8; 32]).unwrap();
    for name in ["ndpi__1kxun.pcap", "ndpi__netflix.pcap"] {
        let args = [
            "--internal",
            "192.168.0.0/16,10.0.0.0/8",
            "--anonymize",
            key.to_str().unwrap(),
            "--anonymize-only",
            "internal",
        ];
        let (one, three) = (work.join(format!("{name}.1")), work.join(format!("{name}.3")));
        analyze(&corpus.join(name), &one, 1, &args);
        analyze(&corpus.join(name), &three, 3, &args);
        for log in LOGS.iter().chain(L7_LOGS.iter()) {
            assert_eq!(record_set(&one, log), record_set(&three, log), "{name} {log}");
        }
        assert_eq!(summary(&one)["traffic"], summary(&three)["traffic"], "{name}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn bad_networks_are_refused_naming_the_line() {
    let work = tempdir("nets-bad");
    let file = work.join("nets");
    std::fs::write(&file, "10.0.0.0/8\n\n192.168.0.0/33\n").unwrap();
    let o = crate::common::tapstat(&[
        "-r",
        "/dev/null",
        "-o",
        work.join("o").to_str().unwrap(),
        "-N",
        file.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 3") && err.contains("prefix length"), "{err}");
    let o = crate::common::tapstat(&[
        "-r",
        "/dev/null",
        "-o",
        work.join("o").to_str().unwrap(),
        "--internal",
        "10.0.0.0/8,bogus",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("bogus"));
    let _ = std::fs::remove_dir_all(&work);
}

/// `-N FILE` with `extra` flags after it, within 10 s.
fn net_file(work: &std::path::Path, file: &std::path::Path) -> std::process::Output {
    crate::common::tapstat_within(
        &["-r", "/dev/null", "-o", work.join("o").to_str().unwrap(), "-N", file.to_str().unwrap()],
        10,
    )
}

/// A refusal of one short line (the tool's message, clap's usage lines after it).
fn refused_briefly(o: &std::process::Output, what: &str) -> String {
    assert!(!o.status.success(), "{what}: accepted");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.len() < 1024, "{what}: {} bytes of stderr: {}", err.len(), &err[..err.len().min(300)]);
    assert!(err.lines().next().is_some_and(|l| l.contains("error:")), "{what}: {err}");
    err
}

#[test]
fn a_device_as_net_file_is_refused_at_once() {
    let work = tempdir("nets-devzero");
    let err = refused_briefly(&net_file(&work, std::path::Path::new("/dev/zero")), "-N /dev/zero");
    assert!(err.contains("-N") && err.contains("/dev/zero") && err.contains("not a regular file"), "{err}");
}

#[test]
fn a_fifo_as_net_file_is_refused_at_once() {
    let work = tempdir("nets-fifo");
    let fifo = work.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let err = refused_briefly(&net_file(&work, &fifo), "-N FIFO");
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_long_bad_line_of_a_net_file_is_not_echoed() {
    let work = tempdir("nets-longline");
    let file = work.join("nets");
    // One line of 2 MB: over the bound, refused as such before any line is parsed.
    std::fs::write(&file, format!("{}\n", "x".repeat(2 << 20))).unwrap();
    let err = refused_briefly(&net_file(&work, &file), "-N with a 2 MB line");
    assert!(err.contains("larger than"), "{err}");
    // A bad line of 900 kB (under the bound) is named by its number, and at most 64
    // characters of it shown.
    std::fs::write(&file, format!("10.0.0.0/8\n{}\n", "x".repeat(900_000))).unwrap();
    let err = refused_briefly(&net_file(&work, &file), "-N with a 900 kB line");
    assert!(err.contains("line 2") && err.contains(&"x".repeat(64)) && !err.contains(&"x".repeat(65)), "{err}");
}
