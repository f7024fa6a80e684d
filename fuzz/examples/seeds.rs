//! Writes the committed seed corpora, fuzz/corpus/{decode,capture,engine}/seed-*.
//!
//!     cargo run --manifest-path fuzz/Cargo.toml --example seeds
//!
//! Every seed is generated here: frames built with the tests' frame builder
//! (`tapstat_frames`: each link type, VLAN / MPLS / PPPoE, IPv4 options and AH, IPv6
//! extension headers, fragments, every tunnel kind) and a few packets from tapstat's own
//! synthesizer (`tapstat_lab::synth`), wrapped in pcap / pcapng files of every flavour
//! the reader knows, some of them damaged. No file is copied from anywhere.
//! Deterministic: the same files on every run.

use std::path::{Path, PathBuf};

use tapstat_capture::LinkType;
use tapstat_frames::*;
use tapstat_fuzz::decode_input;
use tapstat_lab::synth::{Synth, SynthConfig};

const HTTP: &[u8] = b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";
const DNS: &[u8] = &[
    0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm',
    0, 0, 1, 0, 1,
];

/// TCP SYN options: MSS, SACK permitted, timestamps, window scale.
const SYN_OPTS: &[u8] = &[2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7];

/// Ethernet frames: one per interesting layering. Each is (name, frames).
fn ether_cases() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let inner_v4 = ipv4(17, &udp(5353, 53, DNS));
    let inner_eth = eth(0x0800, &ipv4(6, &tcp(40000, 80, HTTP)));
    let v4_tcp = ipv4(6, &tcp(40000, 443, b"hello"));
    let v6_tcp = ipv6(6, &tcp(40000, 443, b"hello"));
    let mut cases = vec![
        (
            "eth-ipv4-tcp-syn",
            vec![eth(
                0x0800,
                &ipv4(6, &Tcp { flags: 0x02, options: SYN_OPTS.to_vec(), ..Tcp::new(40000, 443) }.build(&[])),
            )],
        ),
        ("eth-ipv4-tcp-http", vec![eth(0x0800, &ipv4(6, &tcp(40000, 80, HTTP)))]),
        (
            "eth-ipv4-tcp-badoff",
            vec![eth(0x0800, &ipv4(6, &Tcp { flags: 0x10, ..Tcp::new(1, 2) }.build(&[])))[..50].to_vec()],
        ),
        ("eth-ipv6-tcp", vec![eth(0x86dd, &v6_tcp)]),
        ("eth-ipv4-udp-dns", vec![eth(0x0800, &inner_v4)]),
        ("eth-ipv4-icmp-echo", vec![eth(0x0800, &ipv4(1, &icmp(8, 0, 1, b"ping")))]),
        ("eth-ipv4-icmp-error", vec![eth(0x0800, &ipv4(1, &icmp(3, 3, 1, &inner_v4)))]),
        ("eth-ipv6-icmpv6", vec![eth(0x86dd, &ipv6(58, &icmp(128, 0, 1, b"ping")))]),
        ("eth-ipv6-icmpv6-error", vec![eth(0x86dd, &ipv6(58, &icmp(1, 4, 1, &ipv6(17, &udp(1, 2, b"x")))))]),
        ("eth-arp", vec![eth(0x0806, &[0, 1, 8, 0, 6, 4, 0, 1])]),
        ("eth-vlan", vec![eth(0x8100, &vlan(10, 0x0800, &v4_tcp))]),
        ("eth-qinq", vec![eth(0x88a8, &vlan(100, 0x8100, &vlan(10, 0x86dd, &v6_tcp)))]),
        ("eth-mpls", vec![eth(0x8847, &mpls(&[16, 17], &v4_tcp))]),
        ("eth-mpls-pw", vec![eth(0x8847, &mpls(&[18], &cat(&[&[0, 0, 0, 0], &inner_eth])))]),
        ("eth-pppoe-v4", vec![eth(0x8864, &pppoe(0x0021, &v4_tcp))]),
        ("eth-pppoe-v6", vec![eth(0x8864, &pppoe(0x0057, &v6_tcp))]),
        (
            "eth-ipv4-options",
            vec![eth(
                0x0800,
                &Ipv4 { options: vec![0x94, 4, 0, 0, 1, 1, 1, 0], ..Ipv4::new(6) }.build(&tcp(1, 2, b"o")),
            )],
        ),
        ("eth-ipv4-ah", vec![eth(0x0800, &ipv4(51, &cat(&[&ah(6, 3), &tcp(1, 2, b"ah")])))]),
        (
            "eth-ipv6-ext",
            vec![eth(
                0x86dd,
                &ipv6(0, &cat(&[&ext(43, 1), &ext(60, 2), &ext(51, 1), &ah(17, 3), &udp(1000, 2000, b"ext")])),
            )],
        ),
        ("eth-gre", vec![eth(0x0800, &ipv4(47, &gre(0x0800, None, &inner_v4)))]),
        (
            "eth-gre-csum-key-seq",
            vec![eth(
                0x0800,
                &ipv4(47, &Gre { csum: true, key: Some(42), seq: Some(1), ..Gre::new(0x86dd) }.build(&v6_tcp)),
            )],
        ),
        ("eth-gre-eth", vec![eth(0x0800, &ipv4(47, &gre(0x6558, Some(7), &inner_eth)))]),
        (
            "eth-pptp",
            vec![eth(
                0x0800,
                &ipv4(
                    47,
                    &Gre { key: Some(0x0008_0005), seq: Some(1), version: 1, ..Gre::new(0x880b) }
                        .build(&cat(&[&[0, 0x21], &v4_tcp])),
                ),
            )],
        ),
        ("eth-erspan1", vec![eth(0x0800, &ipv4(47, &gre(0x88be, None, &inner_eth)))]),
        (
            "eth-erspan2",
            vec![eth(
                0x0800,
                &ipv4(
                    47,
                    &Gre { seq: Some(7), ..Gre::new(0x88be) }
                        .build(&cat(&[&[0x10, 1, 0, 101, 0, 0, 0, 0], &inner_eth])),
                ),
            )],
        ),
        (
            "eth-erspan3",
            vec![eth(
                0x0800,
                &ipv4(
                    47,
                    &Gre { seq: Some(1), ..Gre::new(0x22eb) }
                        .build(&cat(&[&[0x20, 0, 1, 44, 0, 0, 0, 0, 0, 0, 0, 0], &inner_eth])),
                ),
            )],
        ),
        ("eth-vxlan", vec![eth(0x0800, &ipv4(17, &udp(50000, 4789, &vxlan(5001, &inner_eth))))]),
        ("eth-vxlan-8472", vec![eth(0x0800, &ipv4(17, &udp(50000, 8472, &vxlan(7, &inner_eth))))]),
        ("eth-geneve", vec![eth(0x0800, &ipv4(17, &udp(50000, 6081, &geneve(0x6558, 77, &[1, 2, 1, 0], &inner_eth))))]),
        ("eth-geneve-ip", vec![eth(0x86dd, &ipv6(17, &udp(50000, 6081, &geneve(0x0800, 78, &[1, 2, 1, 0], &v4_tcp))))]),
        ("eth-gtpu", vec![eth(0x0800, &ipv4(17, &udp(2152, 2152, &gtpu(255, 0xdead, Some(7), &v4_tcp))))]),
        ("eth-teredo", vec![eth(0x0800, &ipv4(17, &udp(3544, 50000, &v6_tcp)))]),
        ("eth-mpls-udp", vec![eth(0x0800, &ipv4(17, &udp(50000, 6635, &mpls(&[20], &v4_tcp))))]),
        ("eth-ipip", vec![eth(0x0800, &ipv4(4, &v4_tcp))]),
        ("eth-6in4", vec![eth(0x0800, &ipv4(41, &v6_tcp))]),
        ("eth-4in6", vec![eth(0x86dd, &ipv6(4, &v4_tcp))]),
        ("eth-6in6", vec![eth(0x86dd, &ipv6(41, &v6_tcp))]),
        (
            "eth-nested",
            vec![eth(
                0x0800,
                &ipv4(47, &gre(0x0800, None, &ipv4(17, &udp(1, 4789, &vxlan(9, &eth(0x0800, &ipv4(4, &v4_tcp))))))),
            )],
        ),
    ];
    // IPv4 fragments: a UDP datagram in three pieces; then a later fragment alone.
    let dgram = udp(7000, 7001, &[0x55; 40]);
    let f4 = |off: usize, len: usize, mf: bool| {
        let end = (off + len).min(dgram.len());
        eth(0x0800, &Ipv4 { id: 77, frag_off: off as u16, mf, ..Ipv4::new(17) }.build(&dgram[off..end]))
    };
    cases.push(("eth-ipv4-frags", vec![f4(0, 16, true), f4(16, 16, true), f4(32, 16, false)]));
    cases.push(("eth-ipv4-frags-reordered", vec![f4(32, 16, false), f4(16, 16, true), f4(0, 16, true)]));
    cases.push(("eth-ipv4-orphan", vec![f4(16, 16, true)]));
    // IPv6 fragments of a TCP segment.
    let seg = tcp(5000, 80, &[0x66; 40]);
    let f6 = |off: usize, len: usize, more: bool| {
        let end = (off + len).min(seg.len());
        eth(0x86dd, &ipv6(44, &cat(&[&frag6(6, off as u16, more, 0xabcd), &seg[off..end]])))
    };
    cases.push(("eth-ipv6-frags", vec![f6(0, 24, true), f6(24, 24, true), f6(48, 16, false)]));
    // A fragmented outer packet carrying a tunnel.
    let tun = udp(1, 4789, &vxlan(3, &inner_eth));
    let outer = |off: usize, len: usize, mf: bool| {
        let end = (off + len).min(tun.len());
        eth(0x0800, &Ipv4 { id: 99, frag_off: off as u16, mf, ..Ipv4::new(17) }.build(&tun[off..end]))
    };
    cases.push(("eth-tunnel-frags", vec![outer(0, 72, true), outer(72, 200, false)]));
    cases
}

/// The same IP packets under every other link type: (name, link, frames).
fn link_cases() -> Vec<(&'static str, LinkType, Vec<u8>)> {
    let v4 = ipv4(6, &tcp(40000, 443, b"hello"));
    let v6 = ipv6(17, &udp(40000, 53, DNS));
    let sll = |proto: u16, p: &[u8]| cat(&[&[0, 0, 0, 1, 0, 6], &MAC_A, &[0, 0], &proto.to_be_bytes(), p]);
    let sll2 = |proto: u16, p: &[u8]| cat(&[&proto.to_be_bytes(), &[0, 0, 0, 0, 0, 2, 0, 1, 0, 6], &MAC_A, &[0, 0], p]);
    let mut ipnet = vec![1u8, 2];
    ipnet.resize(24, 0);
    let mut ipnet6 = vec![1u8, 26];
    ipnet6.resize(24, 0);
    let nflog = |family: u8, p: &[u8]| {
        let mut v = vec![family, 0, 0, 1];
        // NFULA_PREFIX "x\0" (type 10), then NFULA_PAYLOAD (type 9), little-endian
        v.extend([6, 0, 10, 0, b'x', 0, 0, 0]);
        v.extend(((p.len() + 4) as u16).to_le_bytes());
        v.extend(9u16.to_le_bytes());
        v.extend(p);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    };
    vec![
        ("raw-v4", LinkType::RAW, v4.clone()),
        ("raw-v6", LinkType::RAW, v6.clone()),
        ("raw12", LinkType::RAW_BSD12, v4.clone()),
        ("raw14", LinkType::RAW_BSD14, v6.clone()),
        ("ipv4", LinkType::IPV4, v4.clone()),
        ("ipv4-holding-v6", LinkType::IPV4, v6.clone()),
        ("ipv6", LinkType::IPV6, v6.clone()),
        ("ipv6-holding-v4", LinkType::IPV6, v4.clone()),
        ("sll", LinkType::LINUX_SLL, sll(0x0800, &v4)),
        ("sll-vlan", LinkType::LINUX_SLL, sll(0x8100, &vlan(5, 0x86dd, &v6))),
        ("sll2", LinkType::LINUX_SLL2, sll2(0x86dd, &v6)),
        ("null-le", LinkType::NULL, cat(&[&[2, 0, 0, 0], &v4])),
        ("null-be-v6", LinkType::NULL, cat(&[&[0, 0, 0, 30], &v6])),
        ("loop", LinkType::LOOP, cat(&[&[0, 0, 0, 2], &v4])),
        ("ppp", LinkType(9), cat(&[&[0xff, 0x03, 0x00, 0x21], &v4])),
        ("ppp-nohdlc", LinkType(9), cat(&[&[0x00, 0x57], &v6])),
        ("ppp-hdlc", LinkType(50), cat(&[&[0xff, 0x03, 0x00, 0x57], &v6])),
        ("chdlc", LinkType(104), cat(&[&[0x0f, 0x00, 0x08, 0x00], &v4])),
        ("ipnet", LinkType(226), cat(&[&ipnet, &v4])),
        ("ipnet6", LinkType(226), cat(&[&ipnet6, &v6])),
        ("nflog", LinkType(239), nflog(2, &v4)),
        ("nflog6", LinkType(239), nflog(10, &v6)),
        ("unsupported", LinkType(147), v4.clone()),
    ]
}

// ---------------------------------------------------------------------------------
// Capture files.

fn put16(v: &mut Vec<u8>, x: u16, be: bool) {
    v.extend(if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

fn put32(v: &mut Vec<u8>, x: u32, be: bool) {
    v.extend(if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

/// A pcapng writer, block by block.
struct Ng {
    v: Vec<u8>,
    be: bool,
}

impl Ng {
    fn new() -> Ng {
        Ng { v: Vec::new(), be: false }
    }

    fn block(&mut self, btype: u32, body: &[u8]) -> &mut Ng {
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let len = (body.len() + 12) as u32;
        let be = self.be;
        put32(&mut self.v, btype, be);
        put32(&mut self.v, len, be);
        self.v.extend(body);
        put32(&mut self.v, len, be);
        self
    }

    fn shb(&mut self, be: bool) -> &mut Ng {
        self.be = be;
        let mut b = Vec::new();
        put32(&mut b, 0x1a2b_3c4d, be);
        put16(&mut b, 1, be);
        put16(&mut b, 0, be);
        // section length: unknown
        b.extend([0xff; 8]);
        // shb_userappl option, then opt_endofopt
        put16(&mut b, 4, be);
        put16(&mut b, 7, be);
        b.extend(b"tapstat\0");
        put32(&mut b, 0, be);
        self.block(0x0a0d_0d0a, &b)
    }

    /// An interface: link type, snaplen, and optional if_tsresol / if_tsoffset.
    fn idb(&mut self, link: LinkType, snaplen: u32, tsresol: Option<u8>, tsoffset: Option<i64>) -> &mut Ng {
        let be = self.be;
        let mut b = Vec::new();
        put16(&mut b, link.0, be);
        put16(&mut b, 0, be);
        put32(&mut b, snaplen, be);
        if let Some(r) = tsresol {
            put16(&mut b, 9, be);
            put16(&mut b, 1, be);
            b.extend([r, 0, 0, 0]);
        }
        if let Some(o) = tsoffset {
            put16(&mut b, 14, be);
            put16(&mut b, 8, be);
            b.extend(if be { o.to_be_bytes() } else { o.to_le_bytes() });
        }
        put32(&mut b, 0, be);
        self.block(1, &b)
    }

    /// An enhanced (or, with `obsolete`, an obsolete type-2) packet block; `raw` is
    /// the timestamp in the interface's units.
    fn epb(&mut self, iface: u32, raw: u64, data: &[u8], orig: u32, obsolete: bool) -> &mut Ng {
        let be = self.be;
        let mut b = Vec::new();
        if obsolete {
            put16(&mut b, iface as u16, be);
            put16(&mut b, 0, be); // drops count
        } else {
            put32(&mut b, iface, be);
        }
        put32(&mut b, (raw >> 32) as u32, be);
        put32(&mut b, raw as u32, be);
        put32(&mut b, data.len() as u32, be);
        put32(&mut b, orig, be);
        b.extend(data);
        self.block(if obsolete { 2 } else { 6 }, &b)
    }

    fn spb(&mut self, data: &[u8]) -> &mut Ng {
        let be = self.be;
        let mut b = Vec::new();
        put32(&mut b, data.len() as u32, be);
        b.extend(data);
        self.block(3, &b)
    }

    fn bytes(&self) -> Vec<u8> {
        self.v.clone()
    }
}

/// The first `n` packets of a small synthesized trace (TCP handshakes with options,
/// TLS / HTTP / SSH payloads, DNS), cut to `snap` bytes each.
fn synth_records(seed: u64, n: usize, snap: usize) -> Vec<Record> {
    let cfg = SynthConfig {
        seed,
        tcp_flows: 4,
        udp_dns_flows: 3,
        loss_rate: 0.2,
        duration_ns: 2_000_000_000,
        ipv6_fraction: 0.3,
        max_response_bytes: 3000,
        bulk_flows: 0,
        clients: 3,
        servers: 2,
        ..SynthConfig::default()
    };
    let s = Synth::new(&cfg);
    s.frames().take(n).map(|(ts, f)| (ts, f[..f.len().min(snap)].to_vec(), f.len() as u32)).collect()
}

/// Records at 1 ms steps from a start time.
fn timed(frames: &[Vec<u8>]) -> Vec<Record> {
    frames
        .iter()
        .enumerate()
        .map(|(i, f)| (1_767_225_600_000_000_000 + i as u64 * 1_000_000, f.clone(), f.len() as u32))
        .collect()
}

fn capture_seeds() -> Vec<(String, Vec<u8>)> {
    let syn = synth_records(7, 24, 96);
    let eth = LinkType::ETHERNET;
    let mut out = vec![
        ("synth.pcap".to_string(), pcap(PcapFormat::Micro, false, u32::from(eth.0), 96, &syn)),
        ("synth-ns-be.pcap".to_string(), pcap(PcapFormat::Nano, true, u32::from(eth.0), 65535, &syn[..8])),
        ("synth-modified.pcap".to_string(), pcap(PcapFormat::Modified, false, u32::from(eth.0), 65535, &syn[..6])),
    ];
    // Damaged pcaps: the last record cut short; a record with an impossible caplen.
    let mut cut = pcap(PcapFormat::Micro, false, u32::from(eth.0), 65535, &syn[..5]);
    cut.truncate(cut.len() - 30);
    out.push(("truncated.pcap".into(), cut));
    let mut huge = pcap(PcapFormat::Micro, false, u32::from(eth.0), 65535, &syn[..3]);
    let at = huge.len();
    huge.extend(pcap(PcapFormat::Micro, false, u32::from(eth.0), 65535, &syn[3..4])[24..].iter());
    huge[at + 8..at + 12].copy_from_slice(&0x0100_0000u32.to_le_bytes());
    out.push(("corrupt-caplen.pcap".into(), huge));
    // caplen > orig_len and > snaplen: kept (the engine decides what to trust)
    let odd: Vec<Record> = syn[..3].iter().map(|(t, d, _)| (*t, d.clone(), 20)).collect();
    out.push(("caplen-over-orig.pcap".into(), pcap(PcapFormat::Micro, true, u32::from(eth.0), 40, &odd)));

    // pcapng: two interfaces (Ethernet µs; raw IP in ns, with an offset), EPB, SPB,
    // OPB, a block of an unknown type, then a second, big-endian section.
    let raw_ip = ipv4(17, &udp(1, 53, DNS));
    let mut ng = Ng::new();
    ng.shb(false)
        .idb(eth, 0, None, None)
        .idb(LinkType::RAW, 128, Some(9), Some(-5))
        .epb(0, 1_767_225_600_000_000, &syn[0].1, syn[0].2, false)
        .epb(1, 1_767_225_600_000_000_123, &raw_ip, raw_ip.len() as u32, false)
        .spb(&syn[1].1)
        .epb(0, 1_767_225_600_000_100, &syn[2].1, syn[2].2, true)
        .block(0x0000_0bad, b"custom block body")
        .block(5, &[0u8; 16]) // interface statistics
        .shb(true)
        .idb(LinkType::LINUX_SLL, 0, Some(0x80 | 20), None)
        .epb(0, 1_767_225_600 << 20, &cat(&[&[0, 0, 0, 1, 0, 6], &MAC_A, &[0, 0, 0x08, 0x00], &raw_ip]), 80, false);
    out.push(("two-sections.pcapng".into(), ng.bytes()));
    // pcapng damage: a packet for an interface never described, a block whose
    // trailing length differs, a truncated last block.
    let mut ng = Ng::new();
    ng.shb(false)
        .idb(eth, 65535, Some(6), None)
        .epb(3, 1, &syn[0].1, syn[0].2, false)
        .epb(0, 2, &syn[1].1, syn[1].2, false);
    let good = ng.bytes();
    out.push(("bad-iface.pcapng".into(), good.clone()));
    let mut trailer = good.clone();
    let n = trailer.len();
    trailer[n - 4] ^= 0x10;
    out.push(("bad-trailer.pcapng".into(), trailer));
    let mut short = good;
    short.truncate(short.len() - 9);
    out.push(("truncated.pcapng".into(), short));
    out.into_iter().map(|(n, b)| (format!("seed-{n}"), b)).collect()
}

/// Engine seeds: small captures of many flows: synthesized traffic, and every
/// hand-built case as a pcap of its link type.
fn engine_seeds() -> Vec<(String, Vec<u8>)> {
    let eth = LinkType::ETHERNET;
    let mut out = vec![
        ("synth-a.pcap".to_string(), pcap(PcapFormat::Micro, false, u32::from(eth.0), 128, &synth_records(7, 60, 128))),
        ("synth-b.pcap".to_string(), pcap(PcapFormat::Nano, false, u32::from(eth.0), 128, &synth_records(11, 60, 128))),
    ];
    // All Ethernet cases in one capture, and the fragment cases on their own.
    let all: Vec<Vec<u8>> = ether_cases().into_iter().flat_map(|(_, f)| f).collect();
    out.push(("eth-all.pcap".into(), pcap(PcapFormat::Micro, false, u32::from(eth.0), 65535, &timed(&all))));
    for (name, frames) in ether_cases().into_iter().filter(|(n, _)| n.contains("frag")) {
        out.push((format!("{name}.pcap"), pcap(PcapFormat::Micro, false, u32::from(eth.0), 65535, &timed(&frames))));
    }
    // The other link types, one interface each, in one pcapng.
    let mut ng = Ng::new();
    ng.shb(false);
    let links = link_cases();
    for (_, link, _) in &links {
        ng.idb(*link, 0, Some(9), None);
    }
    for (i, (_, _, frame)) in links.iter().enumerate() {
        ng.epb(i as u32, 1_767_225_600_000_000_000 + i as u64 * 1000, frame, frame.len() as u32, false);
    }
    out.push(("links.pcapng".into(), ng.bytes()));
    // A TCP connection whose packets come back after the idle timeout (a new flow),
    // and a clock that steps back.
    let syn = synth_records(5, 12, 96);
    let mut late = syn.clone();
    for (i, r) in late.iter_mut().enumerate() {
        if i >= 6 {
            r.0 += 400_000_000_000;
        }
        if i == 9 {
            r.0 -= 500_000_000_000;
        }
    }
    out.push(("late-and-back.pcap".into(), pcap(PcapFormat::Micro, false, u32::from(eth.0), 96, &late)));
    out.into_iter().map(|(n, b)| (format!("seed-{n}"), b)).collect()
}

fn decode_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, frames) in ether_cases() {
        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        out.push((format!("seed-{name}"), decode_input(LinkType::ETHERNET, &refs)));
    }
    for (name, link, frame) in link_cases() {
        out.push((format!("seed-link-{name}"), decode_input(link, &[&frame])));
    }
    let syn = synth_records(3, 12, 1500);
    let refs: Vec<&[u8]> = syn.iter().map(|(_, f, _)| f.as_slice()).collect();
    out.push(("seed-synth".into(), decode_input(LinkType::ETHERNET, &refs)));
    out
}

fn write_dir(dir: &Path, seeds: &[(String, Vec<u8>)]) {
    std::fs::create_dir_all(dir).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("seed-") {
            std::fs::remove_file(&p).unwrap();
        }
    }
    let mut total = 0;
    for (name, bytes) in seeds {
        std::fs::write(dir.join(name), bytes).unwrap();
        total += bytes.len();
    }
    println!("{}: {} seeds, {} bytes", dir.display(), seeds.len(), total);
}

fn main() {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus"));
    write_dir(&root.join("decode"), &decode_seeds());
    write_dir(&root.join("capture"), &capture_seeds());
    write_dir(&root.join("engine"), &engine_seeds());
}
