//! TCP segments carried in IP fragments: the sequence analysis must see the segments
//! the receiver reassembles, not their first shares. The capture is
//! written here; where tshark is installed its two-pass reading (`tshark -2`, which
//! reassembles IP) must count the same data segments and bytes.

use crate::common::*;
use tapstat_testkit::frames::*;

use std::process::Command;

const C: [u8; 4] = [192, 0, 2, 1];
const S: [u8; 4] = [198, 51, 100, 2];

/// A handshake, three 3000-byte segments from the client each in three IPv4 fragments
/// (the last one's fragments out of order), the server's ACKs, FINs both ways.
fn capture() -> Vec<(u32, Vec<u8>)> {
    let (cisn, sisn) = (1000u32, 5000u32);
    let mut fr = Vec::new();
    let mut t = 100u32;
    let mut push = |f: Vec<u8>| {
        t += 1;
        fr.push((t, f));
    };
    let c = |seg: Vec<u8>| Eth::plain().build(0x0800, &Ipv4::between(C, S, 6).build(&seg));
    let s = |seg: Vec<u8>| Eth::plain().build(0x0800, &Ipv4::between(S, C, 6).build(&seg));
    push(c(Tcp::segment(40000, 80, cisn, 0, 0x02).build(&[])));
    push(s(Tcp::segment(80, 40000, sisn, cisn + 1, 0x12).build(&[])));
    push(c(Tcp::segment(40000, 80, cisn + 1, sisn + 1, 0x10).build(&[])));
    let mut seq = cisn + 1;
    for k in 0..3u16 {
        let seg = Tcp::segment(40000, 80, seq, sisn + 1, 0x18).build(&[b'a' + k as u8; 3000]);
        let parts = [(0, 1480, true), (1480, 2960, true), (2960, seg.len(), false)];
        let order: &[usize] = if k == 2 { &[0, 2, 1] } else { &[0, 1, 2] };
        for &i in order {
            let (a, b, more) = parts[i];
            push(Eth::plain().build(
                0x0800,
                &Ipv4 { id: 100 + k, frag_off: a as u16, mf: more, ..Ipv4::between(C, S, 6) }.build(&seg[a..b]),
            ));
        }
        seq += 3000;
        push(s(Tcp::segment(80, 40000, sisn + 1, seq, 0x10).build(&[])));
    }
    push(c(Tcp::segment(40000, 80, seq, sisn + 1, 0x11).build(&[])));
    push(s(Tcp::segment(80, 40000, sisn + 1, seq + 1, 0x11).build(&[])));
    push(c(Tcp::segment(40000, 80, seq + 1, sisn + 2, 0x10).build(&[])));
    fr
}

#[test]
fn tcp_segments_in_ip_fragments_are_accounted_whole() {
    let dir = tempdir("tcpfrag");
    let cap = dir.join("tcpfrag.pcap");
    write_pcap(&cap, 1, &capture());
    let out = dir.join("out");
    analyze(&cap, &out, 1, &[]);
    let recs = read_log(&out, "log_tcp_complete");
    assert_eq!(recs.len(), 1, "{recs:?}");
    let r = &recs[0];
    let col = |c: &str| r[c].parse::<u64>().unwrap_or_else(|_| panic!("{c} = {}", r[c]));
    // every frame counts as a packet; the three segments count as three data segments
    // of 3000 bytes, in order, none missed
    assert_eq!(col("c_pkts_all"), 4 + 9);
    assert_eq!((col("c_pkts_data"), col("c_bytes_all"), col("c_bytes_uniq")), (3, 9000, 9000));
    assert_eq!((col("c_mss_max"), col("c_mss_min")), (3000, 3000));
    assert_eq!((col("c_pkts_ooo"), col("c_pkts_retx"), col("c_bytes_missed")), (0, 0, 0));
    assert!(col("c_bytes_all") <= col("c_bytes_wire"));
    // each ACK names a whole segment's end: three RTT samples, and the SYN's and FIN's
    assert_eq!(col("c_rtt_cnt"), 5);
    assert!(read_log(&out, "log_other").is_empty());
    if tshark_ready() {
        let o = Command::new("tshark")
            .arg("-2")
            .arg("-r")
            .arg(&cap)
            .args(["-Y", "tcp.srcport == 40000 && tcp.len > 0", "-T", "fields", "-e", "tcp.len"])
            .output()
            .expect("tshark runs");
        let lens: Vec<u64> = String::from_utf8_lossy(&o.stdout).lines().map(|l| l.trim().parse().unwrap()).collect();
        assert_eq!(lens, vec![3000, 3000, 3000], "tshark -2's data segments");
    }
}
