//! Decoding the real captures of the corpus (`TAPSTAT_CORPUS`, by default
//! `shared/pcaps/dev` next to the repository): no panic on any frame, known facts about
//! the encapsulations, and per-flow agreement with tshark's tables.

mod support;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use tapstat_decode::{DecodeConfig, Decoded, Decoder, Fragment, LinkType, TunnelKind, L4};

fn decode_file(path: &Path) -> Vec<(support::Frame, Decoded)> {
    let frames = support::read(path).unwrap_or_default();
    let mut dec = Decoder::new(DecodeConfig::default());
    frames
        .into_iter()
        .map(|f| {
            let d = dec.decode(LinkType(f.link), &f.data, f.ts_ns);
            (f, d)
        })
        .collect()
}

fn open(name: &str) -> Option<Vec<(support::Frame, Decoded)>> {
    let dir = support::corpus()?;
    let p = dir.join(name);
    assert!(p.is_file(), "{} missing from the corpus", p.display());
    Some(decode_file(&p))
}

fn ip(v: u8, a: u128) -> IpAddr {
    if v == 4 {
        IpAddr::V4(Ipv4Addr::from(a as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(a))
    }
}

/// Structural promises of `Decoded`, checked on every frame.
fn check_invariants(d: &Decoded, frame: &[u8], what: &str) {
    assert!(d.payload_offset as usize <= frame.len(), "{what}: payload_offset past frame");
    assert!(d.l4_offset as usize <= frame.len(), "{what}: l4_offset past frame");
    if d.l4 != L4::None {
        assert!(matches!(d.ip_version, 4 | 6), "{what}: l4 without IP");
    }
    if d.ip_version == 4 {
        assert!(d.src >> 32 == 0 && d.dst >> 32 == 0, "{what}: IPv4 address above 32 bits");
    }
    if !matches!(d.l4, L4::Tcp | L4::Udp) || d.fragment == Fragment::Orphan {
        assert_eq!((d.sport, d.dport), (0, 0), "{what}: ports without TCP/UDP");
    }
    if d.icmp_error {
        assert!(matches!(d.l4, L4::Icmp | L4::Icmpv6), "{what}: icmp_error without ICMP");
    }
    if d.l4 == L4::Tcp && matches!(d.fragment, Fragment::No | Fragment::First) {
        assert!(d.l4_offset > 0, "{what}: TCP without l4_offset");
    }
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn every_capture_decodes() {
    let Some(dir) = support::corpus() else { return };
    let files = support::capture_files(&dir);
    assert!(!files.is_empty(), "no capture files under {}", dir.display());
    let (mut nframes, mut nflows) = (0usize, 0usize);
    let mut dec = Decoder::new(DecodeConfig::default());
    for p in &files {
        let Some(frames) = support::read(p) else {
            eprintln!("unreadable (skipped): {}", p.display());
            continue;
        };
        for (i, f) in frames.iter().enumerate() {
            let d = dec.decode(LinkType(f.link), &f.data, f.ts_ns);
            check_invariants(&d, &f.data, &format!("{} frame {}", p.display(), i + 1));
            nframes += 1;
            nflows += usize::from(matches!(d.l4, L4::Tcp | L4::Udp));
        }
    }
    eprintln!("{} files, {nframes} frames, {nflows} TCP/UDP", files.len());
    for (name, n) in dec.anomalies.iter() {
        eprintln!("  {name}: {n}");
    }
    assert!(nframes > 10_000);
}

type FlowKey = (&'static str, IpAddr, u16, IpAddr, u16);

/// Per-flow (packets, bytes) in each direction, like tshark_flows.py: innermost IP
/// and ports, canonical endpoint order, bytes = frame length on the wire.
fn our_flows(frames: &[(support::Frame, Decoded)]) -> BTreeMap<FlowKey, [u64; 4]> {
    let mut m = BTreeMap::new();
    for (f, d) in frames {
        let proto = match d.l4 {
            L4::Tcp => "tcp",
            L4::Udp => "udp",
            _ => continue,
        };
        if d.fragment == Fragment::Orphan {
            continue;
        }
        let a = (ip(d.ip_version, d.src), d.sport);
        let b = (ip(d.ip_version, d.dst), d.dport);
        let (k, fwd) = canon(proto, a, b);
        let e = m.entry(k).or_insert([0u64; 4]);
        let i = if fwd { 0 } else { 2 };
        e[i] += 1;
        e[i + 1] += u64::from(f.orig_len);
    }
    m
}

fn canon(proto: &'static str, a: (IpAddr, u16), b: (IpAddr, u16)) -> (FlowKey, bool) {
    let key = |x: &(IpAddr, u16)| match x.0 {
        IpAddr::V4(v) => (4u8, u128::from(u32::from(v)), x.1),
        IpAddr::V6(v) => (6u8, u128::from(v), x.1),
    };
    if key(&a) <= key(&b) {
        ((proto, a.0, a.1, b.0, b.1), true)
    } else {
        ((proto, b.0, b.1, a.0, a.1), false)
    }
}

fn oracle_flows(path: &Path) -> Option<BTreeMap<FlowKey, [u64; 4]>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut m = BTreeMap::new();
    for line in text.lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        if c.len() < 9 {
            continue;
        }
        let proto = if c[0] == "tcp" { "tcp" } else { "udp" };
        let a = (c[1].parse().ok()?, c[2].parse().ok()?);
        let b = (c[3].parse().ok()?, c[4].parse().ok()?);
        let (k, fwd) = canon(proto, a, b);
        let n: Vec<u64> = c[5..9].iter().map(|x| x.parse().unwrap_or(0)).collect();
        let v = if fwd { [n[0], n[1], n[2], n[3]] } else { [n[2], n[3], n[0], n[1]] };
        m.insert(k, v);
    }
    Some(m)
}

/// Captures whose per-flow table differs from tshark's, and why. Every other capture
/// with a table must agree exactly.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    // tshark -T fields runs one pass: fragments before the one that completes the
    // datagram get no `ip.reassembled_in`, so tshark_flows.py drops them; we count
    // every fragment of a datagram whose first fragment was seen
    ("ndpi__dns_fragmented.pcap", "one-pass reassembly"),
    ("ndpi__dnscrypt-v1-and-resolver-pings.pcap", "one-pass reassembly"),
    ("tcpdump__afs.pcap", "one-pass reassembly"),
    // overlapping garbage fragments whose first fragment is too short for a TCP
    // header: tshark gets ports from its reassembly, we have none
    ("ndpi__ip_fragmented_garbage.pcap", "tiny first fragments"),
    // CAPWAP data (UDP 5247) is not decapsulated
    ("ndpi__capwap_data.pcapng", "capwap"),
    // tshark dissects the packets quoted inside OpenFlow messages: not a tunnel
    ("tcpdump__of13_ericsson.pcapng", "openflow payload"),
    // damaged captures (their tables are not in the corpus; set TAPSTAT_ORACLES to a
    // folder that has them): tshark reads ports out of TCP / UDP headers cut short,
    // we do not; we take fuzzed "first fragments" (MF set) as such, tshark, which
    // never completes their reassembly, counts them nowhere; MACsec is not decoded
    ("malformed/ndpi__fuzz-2006-06-26-2594.pcap", "short headers, fuzzed MF"),
    ("malformed/ndpi__fuzz-2006-09-29-28586.pcap", "short TCP header"),
    ("malformed/ndpi__quic-fuzz-overflow.pcapng", "fuzzed MF"),
    ("malformed/tcpdump__tcp_header_heapoverflow.pcap", "short TCP header"),
    ("malformed/tcpdump__udp-length-heapoverflow.pcap", "short UDP header"),
    ("malformed/tcpdump__macsec-short-shorter.pcap", "macsec"),
    // an IPv4 packet on LINKTYPE_IPV6: we count it and decode it (as tshark does
    // the other way round, IPv6 on LINKTYPE_IPV4); tshark stops there
    ("malformed/tcpdump__LINKTYPE_IPV6_invalid.pcap", "lenient raw link"),
    // orig_len above 2^31: tshark's frame.len saturates
    ("malformed/ndpi__fuzz-2021-06-07-c6c72a0a56.pcap", "huge orig_len"),
];

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn flows_agree_with_tshark() {
    let Some(dir) = support::corpus() else { return };
    let custom = std::env::var("TAPSTAT_ORACLES").ok();
    let oracles = custom.as_ref().map_or_else(|| dir.join("oracles"), std::path::PathBuf::from);
    let (mut same, mut differ) = (Vec::new(), Vec::new());
    for p in support::capture_files(&dir) {
        let rel = p.strip_prefix(&dir).unwrap_or(&p).to_string_lossy().to_string();
        let oracle = oracles.join(format!("{rel}.tshark-flows.tsv"));
        let Some(want) = oracle_flows(&oracle) else { continue };
        let got = our_flows(&decode_file(&p));
        if got == want {
            same.push(rel);
            continue;
        }
        let missing = want.keys().filter(|k| !got.contains_key(*k)).count();
        let extra = got.keys().filter(|k| !want.contains_key(*k)).count();
        let counts = want.iter().filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v)).count();
        eprintln!(
            "DIFF {rel}: {} flows in tshark, {} ours; {missing} missing, {extra} extra, {counts} with other counts",
            want.len(),
            got.len()
        );
        for (k, v) in want.iter().filter(|(k, v)| got.get(*k) != Some(*v)).take(3) {
            eprintln!("   tshark {k:?} {v:?} ours {:?}", got.get(k));
        }
        for (k, v) in got.iter().filter(|(k, _)| !want.contains_key(*k)).take(3) {
            eprintln!("   extra  {k:?} {v:?}");
        }
        differ.push(rel);
    }
    eprintln!("{} captures agree with tshark, {} differ", same.len(), differ.len());
    let unexpected: Vec<_> = differ.iter().filter(|d| !KNOWN_DIFFERENCES.iter().any(|(k, _)| k == d)).collect();
    assert!(unexpected.is_empty(), "flows differ from tshark's for {unexpected:?}");
    let min = if custom.is_some() { 1 } else { 100 };
    assert!(same.len() >= min, "only {} captures agree", same.len());
}

fn count(frames: &[(support::Frame, Decoded)], f: impl Fn(&Decoded) -> bool) -> usize {
    frames.iter().filter(|(_, d)| f(d)).count()
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn geneve() {
    let Some(fr) = open("tcpdump__geneve.pcap") else { return };
    assert_eq!(fr.len(), 39);
    assert!(fr.iter().all(|(_, d)| d.tunnel.kind == TunnelKind::Geneve));
    assert!(fr.iter().all(|(_, d)| matches!(d.tunnel.id, 10 | 11)));
    assert_eq!(count(&fr, |d| d.l4 == L4::Tcp && (d.sport == 22 || d.dport == 22)), 33);
    assert_eq!(count(&fr, |d| d.l4 == L4::Icmp), 6);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn vxlan() {
    let Some(fr) = open("ndpi__vxlan.pcap") else { return };
    assert!(fr.iter().all(|(_, d)| d.tunnel == tapstat_decode::Tunnel { kind: TunnelKind::Vxlan, id: 1111 }));
    assert_eq!(count(&fr, |d| d.l4 == L4::Tcp && d.dport == 443 || d.sport == 443), 119);
    assert_eq!(count(&fr, |d| d.l4 == L4::Udp && (d.dport == 53 || d.sport == 53)), 8);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn erspan() {
    use tapstat_decode::wire::{ethernet, gre, ipv4};
    let Some(dir) = support::corpus() else { return };
    let p = dir.join("tcpdump__erspan-type-ii-3.pcap");
    let frames = support::read(&p).unwrap_or_default();
    assert_eq!(frames.len(), 108);
    let mut dec = Decoder::new(DecodeConfig::default());
    for f in &frames {
        // the ERSPAN II headers, through the wire views
        let eth = ethernet::Frame::new_checked(&f.data).unwrap();
        assert_eq!(eth.ethertype(), ethernet::ethertype::IPV4);
        let ip = ipv4::Packet::new_checked(&f.data[14..]).unwrap();
        assert_eq!(ip.protocol(), 47);
        let g = gre::Header::new_checked(&f.data[14 + ip.header_len()..]).unwrap();
        assert_eq!(g.protocol_type(), ethernet::ethertype::ERSPAN_II);
        assert!(g.sequence_present());
        let e = gre::Erspan2::new_checked(&f.data[14 + ip.header_len() + g.header_len()..]);
        assert_eq!(e.unwrap().version(), 1);
        // the mirrored frames are STP, CDP/NDP and ARP: no inner IP, so the GRE
        // packet itself is the flow
        let d = dec.decode(LinkType(f.link), &f.data, f.ts_ns);
        assert_eq!((d.l4, d.proto, d.tunnel.kind), (L4::Other, 47, TunnelKind::None));
    }
    use tapstat_decode::Anomaly;
    assert_eq!(dec.anomalies.get(Anomaly::EthertypeNotIp), 108);
    assert_eq!(dec.anomalies.total(), 108);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn six_in_four() {
    let Some(fr) = open("ndpi__6in4tunnel.pcap") else { return };
    assert!(fr.iter().all(|(_, d)| d.tunnel.kind == TunnelKind::SixInFour && d.ip_version == 6));
    assert_eq!(count(&fr, |d| d.l4 == L4::Tcp), 75);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn four_in_six() {
    let Some(fr) = open("ndpi__4in6tunnel.pcap") else { return };
    assert!(fr.iter().all(|(_, d)| d.tunnel.kind == TunnelKind::FourInSix && d.ip_version == 4));
    assert!(fr.iter().all(|(_, d)| d.l4 == L4::Tcp && (d.sport == 443 || d.dport == 443)));
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn teredo() {
    let Some(fr) = open("ndpi__teredo.pcap") else { return };
    assert!(fr.iter().all(|(_, d)| d.tunnel.kind == TunnelKind::Teredo && d.ip_version == 6));
    assert_eq!(count(&fr, |d| d.l4 == L4::Icmpv6), 22);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn gtp_u() {
    let Some(fr) = open("ndpi__ipv6_in_gtp.pcap") else { return };
    assert!(fr.iter().all(|(_, d)| d.tunnel.kind == TunnelKind::GtpU && d.ip_version == 6));
    assert_eq!(fr[0].1.l4, L4::Udp);
    assert_eq!((fr[1].1.l4, fr[1].1.proto), (L4::Other, 50));
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn gre_pptp_and_cisco_metadata() {
    let Some(fr) = open("ndpi__gre.pcapng") else { return };
    let d = &fr[0].1;
    assert_eq!((d.l4, d.sport, d.dport, d.tunnel.kind), (L4::Udp, 5060, 5060, TunnelKind::Gre));
    let Some(fr) = open("tcpdump__various_gre.pcap") else { return };
    // 10 ICMP frames out of GRE + Cisco MetaData, with key 40
    assert_eq!(count(&fr, |d| d.l4 == L4::Icmp && d.tunnel.kind == TunnelKind::Gre), 10);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn mpls_over_udp() {
    let Some(fr) = open("tcpdump__mpls-over-udp.pcap") else { return };
    assert!(fr.iter().all(|(_, d)| d.tunnel.kind == TunnelKind::MplsUdp && d.l4 == L4::Icmp));
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn pppoe_http() {
    let Some(fr) = open("suricata__pppoe-session-http.pcap") else { return };
    assert_eq!(fr.len(), 30);
    assert!(fr.iter().all(|(_, d)| d.l4 == L4::Tcp && (d.sport == 80 || d.dport == 80)));
    // PPPoE (6) + a compressed one-byte PPP protocol field (RFC 1661 §6.5)
    assert!(fr.iter().all(|(_, d)| d.l4_offset == 14 + 6 + 1 + 20));
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn vlan_and_mpls() {
    let Some(fr) = open("zeek__mixed-vlan-mpls.pcap") else { return };
    let by_type = |t: u16| fr.iter().filter(move |(f, _)| f.data[12..14] == t.to_be_bytes());
    assert_eq!(by_type(0x8100).count(), 14);
    assert_eq!(by_type(0x8847).count(), 11);
    assert_eq!(by_type(0x0800).count(), 22);
    // one VLAN tag or one MPLS label: 4 bytes before the IPv4 header
    for (t, off) in [(0x8100, 38), (0x8847, 38), (0x0800, 34)] {
        for (_, d) in by_type(t) {
            assert_eq!((d.l4, d.ip_version, d.l4_offset), (L4::Tcp, 4, off));
        }
    }
    assert!(by_type(0x8847).all(|(_, d)| d.sport == 23 || d.dport == 23));
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn qinq() {
    let Some(dir) = support::corpus() else { return };
    let frames = support::read(&dir.join("tcpdump__802.1ad_QinQ.pcap")).unwrap_or_default();
    assert_eq!(frames.len(), 2);
    let mut dec = Decoder::new(DecodeConfig::default());
    for f in &frames {
        assert_eq!(f.data[12..14], [0x88, 0xa8]);
        assert_eq!(f.data[16..18], [0x81, 0x00]);
        // ARP behind the two tags: reached (not truncated, not too many labels)
        let d = dec.decode(LinkType(f.link), &f.data, f.ts_ns);
        assert_eq!(d.l4, L4::None);
    }
    use tapstat_decode::Anomaly;
    assert_eq!(dec.anomalies.get(Anomaly::EthertypeNotIp), 2);
    assert_eq!(dec.anomalies.total(), 2);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn dns_fragmented() {
    let Some(fr) = open("ndpi__dns_fragmented.pcap") else { return };
    let firsts: Vec<&Decoded> = fr.iter().map(|(_, d)| d).filter(|d| d.fragment == Fragment::First).collect();
    let laters: Vec<&Decoded> = fr.iter().map(|(_, d)| d).filter(|d| d.fragment == Fragment::Later).collect();
    assert_eq!((firsts.len(), laters.len()), (7, 7));
    assert_eq!(count(&fr, |d| d.fragment == Fragment::Orphan), 0);
    for l in &laters {
        assert_eq!((l.l4, l.sport), (L4::Udp, 53));
        assert!(firsts.iter().any(|f| (f.src, f.dst, f.sport, f.dport) == (l.src, l.dst, l.sport, l.dport)));
    }
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn link_types() {
    for (name, version) in [
        ("tcpdump__LINKTYPE_IPV4.pcap", 4),
        ("tcpdump__LINKTYPE_IPV6.pcap", 6),
        ("tcpdump__LINKTYPE_RAW_ipv4.pcap", 4),
        ("tcpdump__LINKTYPE_RAW_ipv6.pcap", 6),
    ] {
        let Some(fr) = open(name) else { return };
        assert!(fr.iter().all(|(_, d)| d.ip_version == version && d.l4 != L4::None), "{name}");
    }
    for name in [
        "suricata__decode-sll2-02__input.pcap",
        "tcpdump__mptcp-v1.pcap",
        "tcpdump__quic_handshake.pcap",
        "tcpdump__nflog.pcap",
        "tcpdump__e1000g.pcap",
    ] {
        let Some(fr) = open(name) else { return };
        let n = count(&fr, |d| d.l4 != L4::None);
        assert!(n * 10 >= fr.len() * 9, "{name}: {n} of {} decoded", fr.len());
    }
}
