use super::pcap::{fold, ip_bytes, sum16};
use super::profiles::Schedule;
use super::*;
use std::collections::BTreeMap;

/// What the test walker reads back from one frame.
#[derive(Debug)]
struct Parsed {
    ts_ns: u64,
    wire: u64,
    proto: u8,
    src: (IpAddr, u16),
    dst: (IpAddr, u16),
    payload: u64,
    tcp_flags: u8,
}

fn u16be(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// A minimal pcap reader that checks every header and checksum on the way.
fn walk(pcap: &[u8]) -> Vec<Parsed> {
    assert_eq!(&pcap[0..4], &0xa1b2_c3d4u32.to_le_bytes());
    assert_eq!(u32::from_le_bytes(pcap[20..24].try_into().unwrap()), 1, "Ethernet");
    let mut out = Vec::new();
    let mut at = 24;
    while at < pcap.len() {
        let r = |o: usize| u32::from_le_bytes(pcap[at + o..at + o + 4].try_into().unwrap());
        let (sec, usec, incl, orig) = (r(0), r(4), r(8) as usize, r(12) as u64);
        assert!(usec < 1_000_000);
        assert_eq!(incl as u64, orig, "never truncated");
        assert!(incl >= 60, "padded to the Ethernet minimum");
        let f = &pcap[at + 16..at + 16 + incl];
        at += 16 + incl;
        let (proto, src, dst, l4) = match u16be(f, 12) {
            0x0800 => {
                let ip = &f[14..34];
                assert_eq!(ip[0], 0x45);
                assert_eq!(fold(sum16(ip)), 0, "IPv4 header checksum");
                let total = u16be(ip, 2) as usize;
                assert!(14 + total <= f.len());
                assert!(f[14 + total..].iter().all(|&b| b == 0), "padding is zeros");
                let src = IpAddr::from(<[u8; 4]>::try_from(&ip[12..16]).unwrap());
                let dst = IpAddr::from(<[u8; 4]>::try_from(&ip[16..20]).unwrap());
                (ip[9], src, dst, &f[34..14 + total])
            }
            0x86dd => {
                let ip = &f[14..54];
                assert_eq!(ip[0] >> 4, 6);
                let len = u16be(ip, 4) as usize;
                assert_eq!(54 + len, f.len().max(54 + len));
                let src = IpAddr::from(<[u8; 16]>::try_from(&ip[8..24]).unwrap());
                let dst = IpAddr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap());
                (ip[6], src, dst, &f[54..54 + len])
            }
            other => panic!("ethertype {other:#x}"),
        };
        let (sb, db) = (ip_bytes(src), ip_bytes(dst));
        let pseudo = sum16(&sb) + sum16(&db) + proto as u64 + l4.len() as u64;
        assert_eq!(fold(pseudo + sum16(l4)), 0, "L4 checksum of {proto} {src}->{dst}");
        let (payload, flags) = match proto {
            PROTO_TCP => {
                let hl = (l4[12] >> 4) as usize * 4;
                assert!((20..=60).contains(&hl));
                (l4.len() - hl, l4[13])
            }
            PROTO_UDP => {
                assert_eq!(u16be(l4, 4) as usize, l4.len());
                (l4.len() - 8, 0)
            }
            other => panic!("proto {other}"),
        };
        out.push(Parsed {
            ts_ns: sec as u64 * SEC + usec as u64 * US,
            wire: orig,
            proto,
            src: (src, u16be(l4, 0)),
            dst: (dst, u16be(l4, 2)),
            payload: payload as u64,
            tcp_flags: flags,
        });
    }
    assert_eq!(at, pcap.len());
    out
}

fn small() -> SynthConfig {
    SynthConfig {
        tcp_flows: 300,
        udp_dns_flows: 100,
        bulk_flows: 1,
        bulk_bytes: 200_000,
        loss_rate: 0.03,
        ..SynthConfig::default()
    }
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let (a, ta) = synthesize(&small());
    let (b, tb) = synthesize(&small());
    assert_eq!(a, b);
    assert_eq!(ta, tb);
    let (c, _) = synthesize(&SynthConfig { seed: 43, ..small() });
    assert_ne!(a, c);
}

#[test]
fn default_capture_matches_its_truth() {
    let cfg = SynthConfig::default();
    let synth = Synth::new(&cfg);
    let pcap = synth.to_pcap_bytes();
    assert_eq!(pcap.len(), synth.pcap_len());
    let truth = synth.truth();
    let pkts = walk(&pcap);
    assert_eq!(pkts.len(), synth.packet_count());

    // A few thousand flows in a few MB over a few minutes.
    assert_eq!(truth.len(), cfg.tcp_flows + cfg.udp_dns_flows);
    assert!(truth.len() >= 2000);
    assert!(pcap.len() < 8_000_000, "pcap is {} bytes", pcap.len());
    assert!(pcap.len() > 1_000_000, "pcap is {} bytes", pcap.len());
    let span = pkts.last().unwrap().ts_ns - pkts[0].ts_ns;
    assert!((120 * SEC..600 * SEC).contains(&span), "span {span}");
    assert!(pkts[0].ts_ns >= cfg.start_ns);

    // Time order.
    assert!(pkts.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));

    // Totals.
    let total_pkts: u64 = truth.iter().map(FlowTruth::pkts).sum();
    let total_wire: u64 = truth.iter().map(FlowTruth::wire_bytes).sum();
    let total_payload: u64 = truth.iter().map(|f| f.c_payload_bytes + f.s_payload_bytes).sum();
    assert_eq!(total_pkts, pkts.len() as u64);
    assert_eq!(total_wire, pkts.iter().map(|p| p.wire).sum::<u64>());
    assert_eq!(total_payload, pkts.iter().map(|p| p.payload).sum::<u64>());

    // Per flow, matched by 5-tuple (which never repeats within the capture).
    type Key = (u8, (IpAddr, u16), (IpAddr, u16));
    let mut by_key: BTreeMap<Key, usize> = BTreeMap::new();
    for (i, f) in truth.iter().enumerate() {
        assert!(by_key.insert((f.proto, f.client, f.server), i).is_none(), "5-tuple reused");
    }
    let mut seen = vec![(0u64, 0u64, 0u64, 0u64, u64::MAX, 0u64); truth.len()];
    let mut first3: Vec<Vec<(u64, bool, u8)>> = vec![Vec::new(); truth.len()];
    for p in &pkts {
        let (i, c2s) = match by_key.get(&(p.proto, p.src, p.dst)) {
            Some(&i) => (i, true),
            None => (by_key[&(p.proto, p.dst, p.src)], false),
        };
        let s = &mut seen[i];
        if c2s {
            s.0 += 1;
            s.1 += p.wire;
        } else {
            s.2 += 1;
            s.3 += p.wire;
        }
        s.4 = s.4.min(p.ts_ns);
        s.5 = s.5.max(p.ts_ns);
        if first3[i].len() < 3 {
            first3[i].push((p.ts_ns, c2s, p.tcp_flags));
        }
        if p.proto == PROTO_TCP && c2s && p.tcp_flags & (SYN | ACK) == SYN {
            assert!(p.payload == 0);
        }
    }
    // The handshake shows the truth's round trips at the probe: SYN to SYN/ACK is
    // the server side (plus up to 200 µs of server time), SYN/ACK to ACK the
    // client side (plus up to 50 µs), to the microsecond.
    for (f, h) in truth.iter().zip(&first3).filter(|(f, _)| f.handshake_complete) {
        assert_eq!((h[0].1, h[0].2, h[1].1, h[1].2, h[2].1, h[2].2), (true, SYN, false, SYN | ACK, true, ACK));
        let server_side = h[1].0 - h[0].0;
        let client_side = h[2].0 - h[1].0;
        assert!((f.rtt_probe_server_ns..=f.rtt_probe_server_ns + 201 * US).contains(&server_side), "{f:?}");
        assert!((f.rtt_probe_client_ns..=f.rtt_probe_client_ns + 51 * US).contains(&client_side), "{f:?}");
        assert_eq!(f.rtt_ns, f.rtt_probe_client_ns + f.rtt_probe_server_ns);
        assert!((MS..=201 * MS).contains(&f.rtt_ns));
    }
    for (f, s) in truth.iter().zip(&seen) {
        assert_eq!((f.c_pkts, f.c_wire_bytes, f.s_pkts, f.s_wire_bytes), (s.0, s.1, s.2, s.3), "{f:?}");
        assert_eq!((f.first_ns, f.last_ns), (s.4, s.5));
        assert!(f.c_retx_bytes <= f.c_payload_bytes && f.s_retx_bytes <= f.s_payload_bytes);
    }

    // The interesting cases are there.
    let count = |k: FlowKind| truth.iter().filter(|f| f.kind == k).count();
    assert!(count(FlowKind::TcpRejected) > 0);
    assert!(count(FlowKind::TcpUnanswered) > 0);
    assert!(count(FlowKind::DnsUnanswered) > 0);
    assert!(count(FlowKind::Dns) > 0);
    for f in truth {
        match f.kind {
            FlowKind::Tcp => assert!(f.handshake_complete),
            FlowKind::TcpRejected => {
                assert!(!f.handshake_complete);
                assert_eq!((f.c_pkts, f.s_pkts, f.closed_by), (1, 1, Close::Rst));
            }
            FlowKind::TcpUnanswered => {
                assert_eq!((f.c_pkts, f.s_pkts, f.closed_by), (2, 0, Close::None));
                assert_eq!(f.last_ns - f.first_ns, SEC);
            }
            FlowKind::Dns => assert_eq!((f.c_pkts, f.s_pkts), (1, 1)),
            FlowKind::DnsUnanswered => assert_eq!((f.c_pkts, f.s_pkts), (1, 0)),
        }
    }
    let tcp = || truth.iter().filter(|f| f.kind == FlowKind::Tcp);
    assert!(tcp().filter(|f| f.closed_by == Close::Fin).count() > tcp().count() * 8 / 10);
    assert!(tcp().any(|f| f.closed_by == Close::Rst));
    assert!(tcp().any(|f| f.closed_by == Close::None));
    assert!(truth.iter().any(|f| f.client.0.is_ipv6()));
    let retx: u64 = truth.iter().map(|f| f.c_retx_pkts + f.s_retx_pkts).sum();
    let ooo: u64 = truth.iter().map(|f| f.c_ooo_pkts + f.s_ooo_pkts).sum();
    assert!(retx > 0 && ooo > 0, "retx {retx} ooo {ooo}");
    assert!(truth.iter().any(|f| f.s_payload_bytes >= cfg.bulk_bytes as u64 / 2), "a bulk download");
}

#[test]
fn tcp_sequence_space_is_consistent() {
    // Every captured byte of each direction lies in one contiguous range, which a
    // direction covers fully (lost-before-probe holes are filled later).
    let synth = Synth::new(&small());
    let pcap = synth.to_pcap_bytes();
    type Dir = (IpAddr, u16, IpAddr, u16);
    let mut ranges: BTreeMap<Dir, Vec<(u32, u32)>> = BTreeMap::new();
    let mut at = 24;
    while at < pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let f = &pcap[at + 16..at + 16 + incl];
        at += 16 + incl;
        let (l4, src, dst) = match u16be(f, 12) {
            0x0800 if f[23] == PROTO_TCP => {
                let total = u16be(f, 16) as usize;
                let s = IpAddr::from(<[u8; 4]>::try_from(&f[26..30]).unwrap());
                let d = IpAddr::from(<[u8; 4]>::try_from(&f[30..34]).unwrap());
                (&f[34..14 + total], s, d)
            }
            0x86dd if f[20] == PROTO_TCP => {
                let s = IpAddr::from(<[u8; 16]>::try_from(&f[22..38]).unwrap());
                let d = IpAddr::from(<[u8; 16]>::try_from(&f[38..54]).unwrap());
                (&f[54..], s, d)
            }
            _ => continue,
        };
        let hl = (l4[12] >> 4) as usize * 4;
        let len = (l4.len() - hl) as u32;
        if len > 0 {
            let seq = u32::from_be_bytes(l4[4..8].try_into().unwrap());
            ranges.entry((src, u16be(l4, 0), dst, u16be(l4, 2))).or_default().push((seq, len));
        }
    }
    assert!(!ranges.is_empty());
    for segs in ranges.values() {
        let first = segs.iter().map(|s| s.0).min_by_key(|&s| s.wrapping_sub(segs[0].0) as i32).unwrap();
        let mut covered: Vec<(u32, u32)> = segs.iter().map(|&(s, l)| (s.wrapping_sub(first), l)).collect();
        covered.sort();
        let mut end = 0u32;
        for (s, l) in covered {
            assert!(s <= end, "hole in the sequence space");
            end = end.max(s + l);
        }
    }
}

#[test]
fn small_configs_work() {
    for (tcp, dns) in [(0, 0), (1, 0), (0, 1), (3, 2)] {
        let cfg = SynthConfig { tcp_flows: tcp, udp_dns_flows: dns, bulk_flows: 0, ..SynthConfig::default() };
        let (pcap, truth) = synthesize(&cfg);
        assert_eq!(truth.len(), tcp + dns);
        let n = walk(&pcap).len() as u64;
        assert_eq!(n, truth.iter().map(FlowTruth::pkts).sum::<u64>());
    }
}

#[test]
fn write_pcap_writes_the_same_bytes() {
    let cfg = SynthConfig { tcp_flows: 30, udp_dns_flows: 10, ..small() };
    let path = std::env::temp_dir().join(format!("tapstat-lab-synth-{}.pcap", std::process::id()));
    let truth = write_pcap(&path, &cfg).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let (expect, expect_truth) = synthesize(&cfg);
    assert_eq!(bytes, expect);
    assert_eq!(truth, expect_truth);
}

#[test]
fn flood_is_one_syn_per_new_flow_at_the_rate() {
    let path = std::env::temp_dir().join(format!("tapstat-lab-flood-{}.pcap", std::process::id()));
    assert_eq!(write_flood(&path, 2000, 1000, 3).unwrap(), 2000);
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let pkts = walk(&bytes);
    assert_eq!(pkts.len(), 2000);
    assert!(pkts.iter().all(|p| p.proto == PROTO_TCP && p.tcp_flags == SYN && p.payload == 0));
    let flows: std::collections::HashSet<_> = pkts.iter().map(|p| (p.src, p.dst)).collect();
    assert_eq!(flows.len(), 2000, "every packet a new flow");
    assert_eq!(pkts[1999].ts_ns - pkts[0].ts_ns, 1999 * MS, "1000 packets per second");
}

/// Frames tshark must not find: malformed, a bad checksum, or an error. Errors on
/// segments it calls retransmitted or out-of-order are left out: Wireshark's
/// reassembly reports "new fragment overlaps old data" for a retransmitted segment
/// of an already reassembled PDU (as on real captures).
const TSHARK_BAD: &str = "ip.checksum.status == 0 || tcp.checksum.status == 0 || udp.checksum.status == 0 \
    || ((_ws.malformed || _ws.expert.severity >= error) \
        && !(tcp.analysis.retransmission || tcp.analysis.out_of_order))";

/// The frames of the capture at `path` that tshark flags (see [`TSHARK_BAD`]), or
/// `None` when tshark is not installed.
fn tshark_flags(path: &std::path::Path) -> Option<String> {
    let Ok(out) = std::process::Command::new("tshark").arg("-v").output() else {
        eprintln!("tshark not installed; skipped");
        return None;
    };
    assert!(out.status.success());
    let out = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(path)
        .args(["-o", "tcp.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"])
        .args(["-Y", TSHARK_BAD, "-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark failed: {stderr}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Optional: when tshark is installed, it must read the capture without errors or
/// malformed packets.
#[test]
fn tshark_reads_it_if_installed() {
    let path = std::env::temp_dir().join(format!("tapstat-lab-tshark-{}.pcap", std::process::id()));
    write_pcap(&path, &small()).unwrap();
    let bad = tshark_flags(&path);
    let _ = std::fs::remove_file(&path);
    if let Some(bad) = bad {
        assert!(bad.trim().is_empty(), "tshark flags frames: {bad}");
    }
}

#[test]
fn tshark_reads_the_profiles_if_installed() {
    for p in Profile::ALL {
        let path = std::env::temp_dir().join(format!("tapstat-lab-tshark-{p}-{}.pcap", std::process::id()));
        write_profile(&path, p, 5000, 9).unwrap();
        let bad = tshark_flags(&path);
        let _ = std::fs::remove_file(&path);
        match bad {
            Some(bad) => assert!(bad.trim().is_empty(), "{p}: tshark flags frames: {bad}"),
            None => return,
        }
    }
}

fn profile(p: Profile, packets: u64, seed: u64) -> (Vec<u8>, ProfileTruth) {
    let mut v = Vec::new();
    let t = profile_to(&mut v, p, packets, seed).unwrap();
    (v, t)
}

type Endpoint = (IpAddr, u16);

/// Per connection (by 5-tuple, client first): packets, and the SYN, SYN/ACK, FIN
/// and RST counts, from a walk of the capture.
fn connections(pkts: &[Parsed]) -> BTreeMap<(Endpoint, Endpoint), [u64; 5]> {
    let mut conns: BTreeMap<_, [u64; 5]> = BTreeMap::new();
    for p in pkts {
        assert_eq!(p.proto, PROTO_TCP, "profiles are TCP only");
        if p.tcp_flags & (SYN | ACK) == SYN {
            assert!(conns.insert((p.src, p.dst), [0; 5]).is_none(), "a 5-tuple is reused");
        }
        let c = match conns.get_mut(&(p.src, p.dst)) {
            Some(c) => c,
            None => conns.get_mut(&(p.dst, p.src)).expect("every packet belongs to a connection opened by a SYN"),
        };
        c[0] += 1;
        c[1] += (p.tcp_flags & (SYN | ACK) == SYN) as u64;
        c[2] += (p.tcp_flags & (SYN | ACK) == SYN | ACK) as u64;
        c[3] += (p.tcp_flags & FIN != 0) as u64;
        c[4] += (p.tcp_flags & RST != 0) as u64;
    }
    conns
}

#[test]
fn profiles_are_complete_connections_in_time_order_as_counted() {
    for p in Profile::ALL {
        let (pcap, truth) = profile(p, 8000, 5);
        let pkts = walk(&pcap);
        assert_eq!(pkts.len() as u64, truth.packets, "{p}");
        assert_eq!(pcap.len() as u64, truth.pcap_bytes, "{p}");
        assert!(pkts.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns), "{p}: time order");
        assert_eq!((pkts[0].ts_ns, pkts[pkts.len() - 1].ts_ns), (truth.first_ns, truth.last_ns));
        assert!((7000..=9000).contains(&truth.packets), "{p}: about the packets asked for: {}", truth.packets);
        let conns = connections(&pkts);
        assert_eq!(conns.len(), truth.flows(), "{p}");
        for c in conns.values() {
            assert_eq!(c[1..], [1, 1, 2, 0], "{p}: handshake, a FIN each way, no RST");
        }
        let mut seen: Vec<u64> = conns.values().map(|c| c[0]).collect();
        let mut told = truth.flow_pkts.clone();
        seen.sort_unstable();
        told.sort_unstable();
        assert_eq!(seen, told, "{p}: packets per connection");
        // Packets with a payload: every connection carries data both ways.
        assert!(pkts.iter().any(|p| p.payload > 1000));
    }
}

#[test]
fn profiles_have_their_shapes() {
    let (_, d) = profile(Profile::Dominant, 20_000, 42);
    assert!(d.largest() * 100 >= d.packets * 80, "dominant: {} of {}", d.largest(), d.packets);
    assert!(d.flows() > 50, "dominant: a background ({} connections)", d.flows());

    let (_, m) = profile(Profile::Many, 20_000, 42);
    assert_eq!(m.flows(), 2000);
    assert!(m.flow_pkts.iter().all(|&n| (8..=16).contains(&n)), "many: about 10 packets each");
    assert!(m.peak_open * 10 >= m.flows() as u64 * 9, "many: nearly all open at once ({})", m.peak_open);

    let (_, b) = profile(Profile::Balanced, 20_000, 42);
    assert_eq!(b.flows(), 64);
    let min = b.flow_pkts.iter().copied().min().unwrap();
    assert!(b.largest() * 10 <= min * 12, "balanced: {min}..{}", b.largest());
    assert_eq!(b.peak_open, 64, "balanced: all open at once");
    for (packets, conns) in [(100, 64), (1_000_000, 250), (2_000_000, 256)] {
        assert_eq!(Schedule::new(Profile::Balanced, packets, 42).left, conns, "one per 4000 packets, 64..=256");
    }
}

#[test]
fn profiles_are_deterministic() {
    for p in Profile::ALL {
        let (a, ta) = profile(p, 3000, 1);
        let (b, tb) = profile(p, 3000, 1);
        assert!(a == b && ta == tb, "{p}: same seed, same bytes");
        let (c, _) = profile(p, 3000, 2);
        assert_ne!(a, c, "{p}: another seed, other bytes");
    }
}

#[test]
fn tiny_profiles_work() {
    for p in Profile::ALL {
        for n in [1, 10, 100] {
            let (pcap, t) = profile(p, n, 3);
            assert_eq!(walk(&pcap).len() as u64, t.packets);
            assert!(t.flows() >= 1);
        }
    }
    assert_eq!("many".parse::<Profile>(), Ok(Profile::Many));
    assert!("most".parse::<Profile>().is_err());
}
