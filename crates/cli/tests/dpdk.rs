//! DPDK live capture (`--features dpdk`) without hugepages or NICs, on this
//! machine's two virtual devices:
//!
//! - `net_pcap` reads a dev capture through DPDK and ends with it: with 1 worker (and
//!   without `-w`, which gives one per queue) the records must be
//!   exactly those of `tapstat -r` on the file, times included (the PMD stamps
//!   every frame with the file's time, in µs; frames beyond one mbuf arrive chained).
//! - `net_af_packet` on a veth pair in a network namespace of its own, with
//!   `qpairs=2` and 2 workers while tcpreplay replays a capture into the other end:
//!   packets and bytes per flow as with `-r` (so no flow was split across workers),
//!   no drop, both workers used. This PMD gives no timestamps: the batch timestamp
//!   correction stamps its frames.
//!
//! Every run stops by itself (timeouts) and removes its namespace and directories.
//! Needs root; skips with a reason otherwise, or fails under `TAPSTAT_REQUIRE_LIVE=1`.
#![cfg(feature = "dpdk")]

mod common;

use common::live::{capture_from, flows, live_ready, received, reference, wait_timeout};
use common::{bin, corpus, record_set, summary, tempdir, TestDir, LOGS};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// EAL arguments for a machine without hugepages or NICs. No telemetry socket, so
/// that tests running side by side do not compete for its path.
const EAL: &str = "--no-huge --no-pci --no-shconf -m 512 --no-telemetry --log-level=warning";

/// `tapstat --dpdk '<EAL> --vdev=net_pcap0,rx_pcap=FILE'` with 1 worker, which ends
/// by itself at the end of the file; returns the output directory.
fn through_net_pcap(file: &Path, tag: &str, packets: u64) -> TestDir {
    let out = tempdir(&format!("dpdk-{tag}"));
    let eal = format!("{EAL} --vdev=net_pcap0,rx_pcap={}", file.display());
    let mut args = vec!["--dpdk", &eal, "-o", out.to_str().unwrap(), "-q", "-w", "1", "--hash-seed", "7"];
    args.extend_from_slice(&["--stats-interval", "50ms", "--buffer", "64MiB"]);
    args.extend_from_slice(&common::live::NO_TIMEOUTS);
    let mut tap = Command::new(bin()).args(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let s = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat --dpdk at the end of its file");
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(tap.stderr.as_mut().unwrap(), &mut err);
    assert!(s.success(), "tapstat --dpdk failed: {err}");
    assert_eq!(received(&out), packets, "{}: every packet of the file went through net_pcap", file.display());
    out
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn net_pcap_gives_the_records_of_the_file() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    // 1kxun has GRO frames of up to 37 KB (chained mbufs); 443-firefox plain ones.
    for (i, f) in ["ndpi__1kxun.pcap", "ndpi__443-firefox.pcap"].iter().enumerate() {
        let file = c.join(f);
        let tag = format!("pcap{i}");
        let file_out = reference(&file, &tag, &[]);
        let want = summary(&file_out);
        let dpdk = through_net_pcap(&file, &tag, want["packets"].as_u64().unwrap());
        let got = summary(&dpdk);
        for log in LOGS {
            assert_eq!(flows(&dpdk, log), flows(&file_out, log), "{f} {log}: packets and bytes per flow");
            // The PMD's stamps are the file's: whole records are equal, times too.
            assert_eq!(record_set(&dpdk, log), record_set(&file_out, log), "{f} {log}: records");
        }
        for k in ["packets", "bytes", "first_packet_s", "last_packet_s"] {
            assert_eq!(got[k], want[k], "{f}: {k}");
        }
        let l = &got["live"];
        assert_eq!(l["kernel_drops"], 0, "{f}: {l}");
        assert_eq!(l["buffer_drops"], 0, "{f}: {l}");
        assert_eq!(l["sources"][0], "net_pcap0#0", "{l}");
        let _ = std::fs::remove_dir_all(&dpdk);
        let _ = std::fs::remove_dir_all(&file_out);
    }
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn net_af_packet_with_two_queues_splits_no_flow() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    // Frames up to 1514 bytes: 1kxun's GRO frames (up to 37 KB) are longer than the
    // 16 KiB ring frames tapstat gives net_af_packet (see the jumbo test below).
    let mut spread = [0u64; 2];
    for (i, f) in ["ndpi__443-firefox.pcap", "ndpi__teams.pcap"].iter().enumerate() {
        let file = c.join(f);
        let tag = format!("afp{i}");
        let eal = format!("{EAL} --vdev=net_af_packet0,iface=vb,qpairs=2");
        let live = capture_from(&tag, &file, 2000, &["--dpdk", &eal], 2, &["--acquire", "periodic"]);
        let file_out = reference(&file, &tag, &[]);
        for log in LOGS {
            // A flow split across the workers would show up as two partial records.
            assert_eq!(flows(&live, log), flows(&file_out, log), "{f} {log}: packets and bytes per flow");
        }
        let s = summary(&live);
        let l = &s["live"];
        assert_eq!(s["packets"], summary(&file_out)["packets"], "{f}: every frame was captured");
        assert_eq!(l["kernel_drops"], 0, "{f}: {l}");
        assert_eq!(l["buffer_drops"], 0, "{f}: {l}");
        assert_eq!(l["sources"], serde_json::json!(["net_af_packet0#0", "net_af_packet0#1"]), "{l}");
        // Batch-stamped: the times are the capture's, not the file's.
        let first = |v: &serde_json::Value| v["first_packet_s"].as_f64().unwrap();
        assert!(first(&s) > first(&summary(&file_out)) + 86400.0, "{s}");
        for (t, n) in spread.iter_mut().zip(l["per_worker_packets"].as_array().unwrap()) {
            *t += n.as_u64().unwrap();
        }
        let _ = std::fs::remove_dir_all(&live);
        let _ = std::fs::remove_dir_all(&file_out);
    }
    // The kernel's fanout behind the PMD's queues spread the flows over both workers.
    assert!(spread.iter().all(|n| *n > 0), "packets per worker: {spread:?}");
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn more_workers_than_queues_is_a_clear_error() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let out = tempdir("dpdk-queues");
    let eal = format!("{EAL} --vdev=net_pcap0,rx_pcap={}", c.join("ndpi__443-firefox.pcap").display());
    let o = Command::new(bin()).args(["--dpdk", &eal, "-o", out.to_str().unwrap(), "-q", "-w", "2"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("has 1 RX queue(s)") && err.contains("use -w 1"), "{err}");
    let o = Command::new(bin()).args(["--dpdk", "--no-huge --bogus-eal-option", "-o", out.to_str().unwrap()]).output();
    let err = String::from_utf8_lossy(&o.unwrap().stderr).to_string();
    assert!(err.contains("EAL did not start"), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Without `-w`, tapstat takes as many workers as the ports have RX queues (one for a
/// net_pcap vdev with one file; the cores of this machine would be more, which the
/// vdev refused), and a file-backed net_pcap run ends by itself at the end of the
/// file, as `tapstat -r` does: exit 0, not interrupted, the records of the file.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn net_pcap_picks_its_workers_and_ends_with_its_file() {
    if !live_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let file = c.join("ndpi__443-firefox.pcap");
    let out = tempdir("dpdk-eof");
    let eal = format!("{EAL} --vdev=net_pcap0,rx_pcap={}", file.display());
    let mut args = vec!["--dpdk", &eal, "-o", out.to_str().unwrap(), "-q", "--hash-seed", "7"];
    args.extend_from_slice(&common::live::NO_TIMEOUTS);
    let mut tap = Command::new(bin()).args(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let s = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat --dpdk at the end of its file");
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(tap.stderr.as_mut().unwrap(), &mut err);
    assert!(s.success(), "tapstat --dpdk failed: {err}");
    let sum = summary(&out);
    assert_eq!(sum["workers"], 1, "{sum}");
    assert_eq!(sum["interrupted"], false);
    let file_out = reference(&file, "dpdk-eof", &[]);
    assert_eq!(sum["packets"], summary(&file_out)["packets"]);
    for log in LOGS {
        assert_eq!(flows(&out, log), flows(&file_out, log), "{log}");
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&file_out);
}

/// net_af_packet cuts a frame at its ring frame's size and does not say so. tapstat
/// gives the vdev frames (and mbufs) of 16 KiB unless `framesz` is set, so jumbo
/// frames and larger arrive whole; where the user's `framesz` is smaller, the cut
/// frames keep their wire length (from the IP header), are counted in
/// `live.truncated_frames` and a warning names the cause.
#[test]
fn net_af_packet_takes_jumbo_frames_and_counts_cut_ones() {
    if !live_ready() {
        return;
    }
    use tapstat_testkit::frames::{udp, write_pcap, Eth, Ipv4};
    let d = tempdir("dpdk-jumbo");
    let file = d.join("jumbo.pcap");
    let sizes = [200usize, 1400, 3000, 9000, 15000];
    let mut frames = Vec::new();
    for (i, n) in sizes.iter().enumerate() {
        let payload = vec![0x5a; *n];
        let dg = udp(40000 + i as u16, 9000, &payload);
        for k in 0..3u32 {
            frames
                .push((1 + k, Eth::plain().build(0x0800, &Ipv4::between([10, 0, 0, 1], [10, 0, 0, 2], 17).build(&dg))));
        }
    }
    write_pcap(&file, 1, &frames);
    let file_out = reference(&file, "jumbo", &[]);
    let big = sizes.iter().filter(|n| **n + 42 > 2000).count() as u64 * 3;
    for (tag, vdev, cut) in [
        ("jumbo-default", "--vdev=net_af_packet0,iface=vb", 0),
        ("jumbo-2k", "--vdev=net_af_packet0,iface=vb,framesz=2048,blocksz=4096", big),
    ] {
        let eal = format!("{EAL} {vdev}");
        let live = capture_from(tag, &file, 200, &["--dpdk", &eal], 1, &["--acquire", "periodic"]);
        let s = summary(&live);
        assert_eq!(s["packets"], frames.len(), "{tag}: {s}");
        assert_eq!(s["bytes"], summary(&file_out)["bytes"], "{tag}: wire bytes");
        // Packets and bytes per flow as -r, cut frames included (their IP length).
        assert_eq!(flows(&live, "log_udp_complete"), flows(&file_out, "log_udp_complete"), "{tag}");
        assert_eq!(s["live"]["truncated_frames"], cut, "{tag}: {}", s["live"]);
        let warned = s["warnings"].to_string().contains("arrived shorter than they were on the wire");
        assert_eq!(warned, cut > 0, "{tag}: {}", s["warnings"]);
        let _ = std::fs::remove_dir_all(&live);
    }
    let _ = std::fs::remove_dir_all(&file_out);
    let _ = std::fs::remove_dir_all(&d);
}
