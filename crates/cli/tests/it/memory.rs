//! Memory has a ceiling: the TCP segments held back for holes have a budget per
//! worker, and `--memcap` bounds the heap of the whole process, against captures made
//! to take as much memory as they can.

use crate::common::{bin, tempdir};
use std::path::Path;
use std::process::Command;
use tapstat_testkit::frames::{eth, pcap, Ipv4, PcapFormat, Record, Tcp};

/// `n` HTTP clients, each opening a connection, sending the start of a request head
/// that never ends, then `segments` segments of `seg` bytes; with `hole`, a kilobyte
/// of the stream is missing after the head (never retransmitted), so every later
/// segment is held back for the application layer until its flow ends.
fn clients(path: &Path, n: u32, segments: u32, seg: usize, hole: bool) {
    let mut recs: Vec<Record> = Vec::new();
    let mut t = 1_600_000_000_000_000_000u64;
    let mut push = |t: &mut u64, frame: Vec<u8>| {
        *t += 10_000;
        let len = frame.len() as u32;
        recs.push((*t, frame, len));
    };
    let head = b"GET /x HTTP/1.1\r\nHost: example\r\nX-Long: ";
    let body = vec![b'a'; seg];
    for i in 0..n {
        let c = [10, (i >> 16) as u8, (i >> 8) as u8, i as u8];
        let s = [192, 0, 2, 1];
        let sp = 1024 + (i % 60_000) as u16;
        let up = |tcp: Tcp, payload: &[u8]| eth(0x0800, &Ipv4::between(c, s, 6).build(&tcp.build(payload)));
        let down = |tcp: Tcp| eth(0x0800, &Ipv4::between(s, c, 6).build(&tcp.build(&[])));
        push(&mut t, up(Tcp::segment(sp, 80, 1000, 0, 0x02), &[]));
        push(&mut t, down(Tcp::segment(80, sp, 5000, 1001, 0x12)));
        push(&mut t, up(Tcp::segment(sp, 80, 1001, 5001, 0x10), &[]));
        push(&mut t, up(Tcp::segment(sp, 80, 1001, 5001, 0x18), head));
        let mut seq = 1001 + head.len() as u32 + if hole { 1000 } else { 0 };
        for _ in 0..segments {
            push(&mut t, up(Tcp::segment(sp, 80, seq, 5001, 0x10), &body));
            seq += seg as u32;
        }
    }
    std::fs::write(path, pcap(PcapFormat::Micro, false, 1, 65535, &recs)).unwrap();
}

/// Runs tapstat with `args` and gives its summary.json and its peak resident set
/// size in bytes, as tapstat read it from the kernel (`memory.peak_rss_bytes`, Linux's
/// VmHWM). Not the child's `ru_maxrss` from `wait4`: a child started by `posix_spawn`
/// inherits there the resident set of this test process at that moment, hundreds of
/// MiB while other tests run beside it.
fn run_measured(args: &[&str], out: &Path) -> (serde_json::Value, u64) {
    let o = Command::new(bin()).args(args).arg("-o").arg(out).output().expect("tapstat runs");
    assert!(o.status.success(), "tapstat {args:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let rss = summary["memory"]["peak_rss_bytes"].as_u64().expect("memory.peak_rss_bytes");
    assert!(rss > 1 << 20, "a peak resident set of {rss} bytes: VmHWM not read");
    (summary, rss)
}

fn total_records(s: &serde_json::Value) -> u64 {
    s["records"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum()
}

#[test]
fn held_segments_have_a_budget_per_worker() {
    // 400 flows each holding 16 segments of 4,000 bytes behind a hole: 25.6 MB held
    // until their ends without a budget, at most 16 MiB (and one segment) with it
    let d = tempdir("memory-held");
    let cap = d.join("holes.pcap");
    clients(&cap, 400, 16, 4000, true);
    let (s, _) = run_measured(&["-r", cap.to_str().unwrap(), "-w", "1"], &d.join("out"));
    let m = &s["memory"];
    let budget = m["held_budget"].as_u64().unwrap();
    assert_eq!(budget, 16 << 20);
    let peak = m["peak_held_bytes"].as_u64().unwrap();
    assert!(peak <= budget + 4000, "held {peak} bytes, budget {budget}");
    assert!(peak > budget - 64_000, "held {peak} bytes: the budget was never reached");
    // each flow holds 64,000 bytes: those past the budget gave up their holes
    let given_up = m["holes_given_up"].as_u64().unwrap();
    assert!(given_up >= 400 - budget / 64_000, "{given_up} holes given up");
    assert_eq!(total_records(&s), 400, "every flow is written");
}

/// The constant the resident set may exceed `--memcap` by: the binary's pages, thread
/// stacks, the allocator's pages not yet returned, the heap added between two checks.
const RSS_OVER_MEMCAP: u64 = 64 << 20;

/// `n` TCP handshakes from as many clients, 10 µs apart, none ever closed.
fn handshakes(path: &Path, n: u32) {
    let mut recs: Vec<Record> = Vec::new();
    let mut t = 1_600_000_000_000_000_000u64;
    for i in 0..n {
        let c = [10, (i >> 16) as u8, (i >> 8) as u8, i as u8];
        let s = [192, 0, 2, 1];
        let sp = 1024 + (i % 60_000) as u16;
        for (up, tcp) in [
            (true, Tcp::segment(sp, 443, 1000, 0, 0x02)),
            (false, Tcp::segment(443, sp, 5000, 1001, 0x12)),
            (true, Tcp::segment(sp, 443, 1001, 5001, 0x10)),
        ] {
            let ip = if up { Ipv4::between(c, s, 6) } else { Ipv4::between(s, c, 6) };
            let frame = eth(0x0800, &ip.build(&tcp.build(&[])));
            t += 3_000;
            let len = frame.len() as u32;
            recs.push((t, frame, len));
        }
    }
    std::fs::write(path, pcap(PcapFormat::Micro, false, 1, 65535, &recs)).unwrap();
}

#[test]
fn a_flood_of_flows_stays_under_the_memcap() {
    // 100,000 connections that never close, within a second: without a budget each
    // stays in the table with its state (some 2 KB) until its idle timeout, about
    // 200 MB of resident set for a 21 MB capture
    let d = tempdir("memory-memcap");
    let cap = d.join("flood.pcap");
    handshakes(&cap, 100_000);
    let memcap: u64 = 80 << 20;
    let (s, rss) = run_measured(&["-r", cap.to_str().unwrap(), "-w", "1", "--memcap", "80MiB"], &d.join("out"));
    let m = &s["memory"];
    assert_eq!(m["memcap"].as_u64(), Some(memcap));
    assert!(rss <= memcap + RSS_OVER_MEMCAP, "resident set {} MiB under --memcap 80MiB", rss >> 20);
    let peak = m["peak_heap_bytes"].as_u64().unwrap();
    assert!(peak <= memcap, "heap peaked at {} MiB under --memcap 80MiB", peak >> 20);
    // the table was sized to the budget: the flows idle the longest were written
    // early, and none was lost for it
    assert!(s["evictions"].as_u64().unwrap() > 90_000, "{s}");
    assert_eq!(total_records(&s), 100_000, "every flow is written");
}

#[test]
fn memcap_below_the_least_budget_is_refused() {
    let d = tempdir("memory-small");
    let out = Command::new(bin()).args(["-r", "-", "--memcap", "10MiB", "-o"]).arg(d.join("out")).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--memcap") && err.contains("80MiB"), "{err}");
    assert!(!d.join("out").exists());
}
