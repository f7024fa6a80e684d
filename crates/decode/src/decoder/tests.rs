use super::*;
use tapstat_frames::*;

const ETH: LinkType = LinkType::ETHERNET;

fn dec() -> Decoder {
    Decoder::new(DecodeConfig::default())
}

/// Decodes one frame with a fresh decoder; asserts no anomaly was counted.
fn clean(link: LinkType, f: &[u8]) -> Decoded {
    let mut x = dec();
    let d = x.decode(link, f, 0);
    let a: Vec<_> = x.anomalies.iter().collect();
    assert!(a.is_empty(), "unexpected anomalies {a:?} for {d:?}");
    d
}

/// Decodes one frame with a fresh decoder; returns the anomalies too.
fn with_anomalies(link: LinkType, f: &[u8]) -> (Decoded, Vec<(&'static str, u64)>) {
    let mut x = dec();
    let d = x.decode(link, f, 0);
    (d, x.anomalies.iter().collect())
}

fn v4addr(a: [u8; 4]) -> u128 {
    u128::from(u32::from_be_bytes(a))
}

fn v6addr(a: [u8; 16]) -> u128 {
    u128::from_be_bytes(a)
}

fn tcp_v4_frame(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    eth(0x0800, &ipv4(6, &tcp(sport, dport, payload)))
}

#[test]
fn ethernet_ipv4_tcp_all_fields() {
    let f = tcp_v4_frame(40000, 443, b"hello");
    let d = clean(ETH, &f);
    assert_eq!(
        d,
        Decoded {
            l4: L4::Tcp,
            ip_version: 4,
            proto: 6,
            src: v4addr([192, 0, 2, 1]),
            dst: v4addr([198, 51, 100, 2]),
            sport: 40000,
            dport: 443,
            ttl: 64,
            ip_len: 20 + 20 + 5,
            fragment: Fragment::No,
            tunnel: Tunnel::default(),
            tcp: TcpFields { seq: 1000, ack: 2000, flags: 0x18, window: 8192, hdr_len: 20 },
            l4_offset: 34,
            payload_offset: 54,
            payload_len: 5,
            icmp_error: false,
            icmp_type: 0,
            icmp_code: 0,
            tcp_opts: TcpOptions::default(),
        }
    );
    assert_eq!(std::net::Ipv4Addr::from(d.src as u32), std::net::Ipv4Addr::new(192, 0, 2, 1));
    assert_eq!(&f[d.payload_offset as usize..][..5], b"hello");
    // Ethernet padding (60-byte minimum) is not an anomaly: checked by `clean`
    assert_eq!(f.len(), 60);
}

#[test]
fn ipv4_options_and_tcp_options() {
    let t = Tcp { options: vec![2, 4, 5, 0xb4, 1, 1, 1, 0, 1, 1, 1, 0], ..Tcp::new(1, 2) };
    let ip = Ipv4 { options: vec![1, 1, 1, 0], ..Ipv4::new(6) }.build(&t.build(&[7; 100]));
    let d = clean(ETH, &eth(0x0800, &ip));
    assert_eq!((d.l4_offset, d.tcp.hdr_len, d.payload_offset, d.payload_len), (38, 32, 70, 100));
}

#[test]
fn ethernet_ipv6_udp() {
    let f = eth(0x86dd, &ipv6(17, &udp(5353, 53, &[1; 12])));
    let d = clean(ETH, &f);
    assert_eq!((d.l4, d.ip_version, d.proto), (L4::Udp, 6, 17));
    assert_eq!((d.src, d.dst), (v6addr(v6(1)), v6addr(v6(2))));
    assert_eq!((d.sport, d.dport, d.ttl, d.ip_len), (5353, 53, 61, 40 + 8 + 12));
    assert_eq!((d.l4_offset, d.payload_offset, d.payload_len), (54, 62, 12));
}

#[test]
fn vlan_stacks() {
    let ip = ipv4(6, &tcp(1, 80, b""));
    // 802.1Q
    let d = clean(ETH, &eth(0x8100, &vlan(10, 0x0800, &ip)));
    assert_eq!((d.l4, d.dport, d.l4_offset), (L4::Tcp, 80, 38));
    // 802.1ad QinQ, and the pre-standard 0x9100
    for outer in [0x88a8, 0x9100, 0x9200] {
        let inner = vlan(20, 0x8100, &vlan(10, 0x86dd, &ipv6(6, &tcp(1, 80, b""))));
        let d = clean(ETH, &eth(outer, &inner));
        assert_eq!((d.l4, d.ip_version, d.dport, d.l4_offset), (L4::Tcp, 6, 80, 62));
    }
    // more tags than followed
    let mut many = Vec::new();
    for _ in 0..9 {
        many.extend(vlan(1, 0x8100, &[]));
    }
    many.extend(ip);
    let (d, a) = with_anomalies(ETH, &eth(0x8100, &many));
    assert_eq!(d.l4, L4::None);
    assert_eq!(a, vec![("too_many_labels", 1)]);
}

#[test]
fn mpls_stack() {
    let ip4 = ipv4(17, &udp(1, 2, b"x"));
    let f = eth(0x8847, &mpls(&[100, 200], &ip4));
    let d = clean(ETH, &f);
    assert_eq!((d.l4, d.sport, d.l4_offset), (L4::Udp, 1, 42));
    let f = eth(0x8848, &mpls(&[100], &ipv6(17, &udp(1, 2, b"x"))));
    assert_eq!(clean(ETH, &f).ip_version, 6);
    // pseudowire control word, then an Ethernet frame
    let inner = eth(0x0800, &ip4);
    let f = eth(0x8847, &mpls(&[16], &cat(&[&[0, 0, 0, 0], &inner])));
    let d = clean(ETH, &f);
    assert_eq!((d.l4, d.sport, d.l4_offset), (L4::Udp, 1, 14 + 4 + 4 + 14 + 20));
    // something else after the stack
    let f = eth(0x8847, &mpls(&[16], &[0x99; 30]));
    assert_eq!(with_anomalies(ETH, &f).1, vec![("mpls_not_ip", 1)]);
    // a stack that never ends
    let f = eth(0x8847, &[0u8; 46]);
    assert_eq!(with_anomalies(ETH, &f).1, vec![("too_many_labels", 1)]);
}

#[test]
fn pppoe_session() {
    let f = eth(0x8864, &pppoe(0x0021, &ipv4(6, &tcp(50000, 80, b"GET /"))));
    let d = clean(ETH, &f);
    assert_eq!((d.l4, d.dport, d.payload_len, d.l4_offset), (L4::Tcp, 80, 5, 42));
    let f = eth(0x8864, &pppoe(0x0057, &ipv6(17, &udp(546, 547, b""))));
    assert_eq!(clean(ETH, &f).dport, 547);
    let f = eth(0x8864, &pppoe(0xc021, &[1, 2, 3, 4]));
    assert_eq!(with_anomalies(ETH, &f).1, vec![("pppoe_not_ip", 1)]);
    let f = eth(0x8863, &[0x11, 0x09, 0, 0, 0, 0]);
    assert_eq!(with_anomalies(ETH, &f).1, vec![("ethertype_not_ip", 1)]);
}

#[test]
fn link_types() {
    let ip4 = ipv4(17, &udp(7, 9, b"abc"));
    let ip6 = ipv6(17, &udp(7, 9, b"abc"));
    for link in [LinkType::RAW, LinkType::RAW_BSD12, LinkType::RAW_BSD14] {
        let d = clean(link, &ip4);
        assert_eq!((d.ip_version, d.l4_offset, d.payload_len), (4, 20, 3));
        assert_eq!(clean(link, &ip6).ip_version, 6);
    }
    assert_eq!(clean(LinkType::IPV4, &ip4).sport, 7);
    assert_eq!(clean(LinkType::IPV6, &ip6).sport, 7);
    // IPv6 where IPv4 is promised: counted, decoded as what it is
    let (d, a) = with_anomalies(LinkType::IPV4, &ip6);
    assert_eq!((d.ip_version, d.sport, a), (6, 7, vec![("ipv4_bad_version", 1)]));
    let (d, a) = with_anomalies(LinkType::IPV6, &ip4);
    assert_eq!((d.ip_version, d.sport, a), (4, 7, vec![("ipv6_bad_version", 1)]));
    let (d, a) = with_anomalies(LinkType::IPV6, &[0x50; 40]);
    assert_eq!((d.l4, a), (L4::None, vec![("ipv6_bad_version", 1)]));
    assert_eq!(with_anomalies(LinkType::RAW, &[0x50; 30]).1, vec![("ip_bad_version", 1)]);

    // Linux cooked v1 and v2
    let mut sll = vec![0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x86, 0xdd];
    sll.extend(&ip6);
    let d = clean(LinkType::LINUX_SLL, &sll);
    assert_eq!((d.ip_version, d.l4_offset), (6, 56));
    let mut sll2 = vec![0x08, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0];
    sll2.extend(&ip4);
    let d = clean(LinkType::LINUX_SLL2, &sll2);
    assert_eq!((d.ip_version, d.l4_offset), (4, 40));
    assert_eq!(with_anomalies(LinkType::LINUX_SLL2, &sll2[..19]).1, vec![("link_truncated", 1)]);

    // BSD loopback: host order (either) for NULL, network order for LOOP
    for (link, af) in [(LinkType::NULL, [2u8, 0, 0, 0]), (LinkType::NULL, [0, 0, 0, 2]), (LinkType::LOOP, [0, 0, 0, 2])]
    {
        let d = clean(link, &cat(&[&af, &ip4]));
        assert_eq!((d.ip_version, d.l4_offset), (4, 24));
    }
    for af in [10u8, 24, 28, 30] {
        let d = clean(LinkType::NULL, &cat(&[&[af, 0, 0, 0], &ip6]));
        assert_eq!(d.ip_version, 6);
        let d = clean(LinkType::LOOP, &cat(&[&[0, 0, 0, af], &ip6]));
        assert_eq!(d.ip_version, 6);
    }
    let (d, a) = with_anomalies(LinkType::NULL, &cat(&[&[7, 0, 0, 0], &ip4]));
    assert_eq!((d.l4, a), (L4::None, vec![("ethertype_not_ip", 1)]));

    // PPP with and without HDLC-like framing, Cisco HDLC
    assert_eq!(clean(LinkType(9), &cat(&[&[0xff, 0x03, 0x00, 0x21], &ip4])).l4_offset, 24);
    assert_eq!(clean(LinkType(9), &cat(&[&[0x00, 0x57], &ip6])).ip_version, 6);
    assert_eq!(clean(LinkType(104), &cat(&[&[0x0f, 0x00, 0x08, 0x00], &ip4])).sport, 7);

    // unsupported
    let (d, a) = with_anomalies(LinkType(147), &ip4);
    assert_eq!((d, a), (Decoded::default(), vec![("link_unsupported", 1)]));
}

#[test]
fn ipv4_fragments_first_later_orphan() {
    let mut x = dec();
    // a UDP datagram of 8 + 2000 bytes in three fragments (1480 + 528)
    let payload = udp(5000, 53, &[0x55; 2000]);
    let (a, b) = payload.split_at(1480);
    let first = eth(0x0800, &Ipv4 { id: 77, mf: true, ..Ipv4::new(17) }.build(a));
    let later = eth(0x0800, &Ipv4 { id: 77, frag_off: 1480, ttl: 60, ..Ipv4::new(17) }.build(b));
    let d1 = x.decode(ETH, &first, 1_000);
    assert_eq!((d1.l4, d1.fragment, d1.sport, d1.dport), (L4::Udp, Fragment::First, 5000, 53));
    assert_eq!((d1.l4_offset, d1.payload_offset, d1.payload_len), (34, 42, 1472));
    let d2 = x.decode(ETH, &later, 2_000);
    assert_eq!((d2.l4, d2.fragment, d2.sport, d2.dport), (L4::Udp, Fragment::Later, 5000, 53));
    assert_eq!((d2.src, d2.dst, d2.proto), (d1.src, d1.dst, 17));
    assert_eq!((d2.l4_offset, d2.payload_offset, d2.payload_len, d2.ttl), (0, 34, 528, 60));
    // Each fragment's own IP length, not its first fragment's.
    assert_eq!((d1.ip_len, d2.ip_len), (20 + 1480, 20 + 528));
    assert_eq!(d1.payload_len + d2.payload_len, 2000);
    assert_eq!(x.anomalies.total(), 0);

    // another datagram id: orphan, counted
    let orphan = eth(0x0800, &Ipv4 { id: 78, frag_off: 1480, ..Ipv4::new(17) }.build(b));
    let d3 = x.decode(ETH, &orphan, 3_000);
    assert_eq!((d3.l4, d3.fragment, d3.sport, d3.dport), (L4::Udp, Fragment::Orphan, 0, 0));
    assert_eq!((d3.src, d3.dst, d3.payload_offset, d3.payload_len), (d1.src, d1.dst, 34, 528));
    assert_eq!(x.anomalies.get(Anomaly::FragmentOrphan), 1);

    // a fragmented TCP segment is held, then given whole by the fragment that
    // completes it
    let seg = tcp(1234, 80, &[1; 100]);
    let f1 = eth(0x0800, &Ipv4 { id: 9, mf: true, ..Ipv4::new(6) }.build(&seg[..64]));
    let f2 = eth(0x0800, &Ipv4 { id: 9, frag_off: 64, ..Ipv4::new(6) }.build(&seg[64..]));
    let d1 = x.decode(ETH, &f1, 4_000);
    assert_eq!((d1.l4, d1.fragment, d1.sport, d1.dport), (L4::Tcp, Fragment::TcpHeld, 1234, 80));
    assert_eq!((d1.tcp, d1.payload_len), (TcpFields::default(), 0));
    let d2 = x.decode(ETH, &f2, 4_000);
    assert_eq!((d2.l4, d2.fragment, d2.sport, d2.dport), (L4::Tcp, Fragment::TcpComplete, 1234, 80));
    assert_eq!((d2.tcp.seq, d2.tcp.flags, d2.payload_len), (1000, 0x18, 100));
    assert_eq!(x.anomalies.get(Anomaly::TcpHlenTooLarge), 0);
}

#[test]
fn a_tcp_segment_in_three_fragments_out_of_order_is_given_whole_once() {
    let mut x = dec();
    let seg = Tcp { options: vec![1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 6], ..Tcp::new(40000, 443) }.build(&[2; 3000]);
    let part = |off: usize, end: usize, mf: bool| {
        eth(0x0800, &Ipv4 { id: 5, frag_off: off as u16, mf, ..Ipv4::new(6) }.build(&seg[off..end]))
    };
    let d = x.decode(ETH, &part(0, 1480, true), 0);
    assert_eq!((d.fragment, d.payload_len, d.tcp_opts.has_ts), (Fragment::TcpHeld, 0, false));
    // the last fragment before the middle one
    let d = x.decode(ETH, &part(2960, seg.len(), false), 1);
    assert_eq!((d.fragment, d.payload_len, d.sport), (Fragment::TcpHeld, 0, 40000));
    let d = x.decode(ETH, &part(1480, 2960, true), 2);
    assert_eq!((d.fragment, d.payload_len), (Fragment::TcpComplete, 3000));
    assert_eq!((d.tcp.hdr_len, d.tcp_opts.has_ts, d.tcp_opts.ts_val), (32, true, 7));
    // a copy of the middle fragment afterwards: a fragment without a header
    let d = x.decode(ETH, &part(1480, 2960, true), 3);
    assert_eq!((d.fragment, d.payload_len), (Fragment::Later, 1480));
    assert_eq!(x.anomalies.total(), 0);

    // IPv6: the same segment in two fragments
    let f1 = eth(0x86dd, &ipv6(44, &cat(&[&frag6(6, 0, true, 3), &seg[..1448]])));
    let f2 = eth(0x86dd, &ipv6(44, &cat(&[&frag6(6, 1448, false, 3), &seg[1448..]])));
    assert_eq!(x.decode(ETH, &f1, 4).fragment, Fragment::TcpHeld);
    let d = x.decode(ETH, &f2, 5);
    assert_eq!((d.ip_version, d.fragment, d.payload_len, d.dport), (6, Fragment::TcpComplete, 3000, 443));
}

/// A UDP datagram of 8 + `n` bytes (byte i of the payload is `i % 251`) cut into
/// IPv4 fragments at `cuts` (offsets into the datagram, multiples of 8).
fn udp_v4_fragments(id: u16, n: usize, cuts: &[usize]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let payload: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    let dgram = udp(5000, 53, &payload);
    let mut ends = cuts.to_vec();
    ends.push(dgram.len());
    let mut start = 0;
    let frames = ends
        .iter()
        .map(|&end| {
            let mf = end < dgram.len();
            let f = eth(0x0800, &Ipv4 { id, frag_off: start as u16, mf, ..Ipv4::new(17) }.build(&dgram[start..end]));
            start = end;
            f
        })
        .collect();
    (payload, frames)
}

#[test]
fn a_fragmented_udp_datagram_is_reassembled_in_order_and_out_of_order() {
    for order in [[0, 1, 2], [0, 2, 1], [0, 1, 2]] {
        let mut x = dec();
        let (payload, fr) = udp_v4_fragments(40, 3000, &[1480, 2960]);
        for (k, &i) in order.iter().enumerate() {
            let d = x.decode(ETH, &fr[i], k as u64);
            // accounting is unchanged: each fragment counts its own share
            let share = [1472, 1480, 48][i];
            assert_eq!((d.l4, d.sport, d.payload_len), (L4::Udp, 5000, share));
            if k < 2 {
                assert_eq!(x.reassembled(), None, "fragment {i} of {order:?}");
            } else {
                assert_eq!(d.fragment, Fragment::Later);
                assert_eq!(x.reassembled(), Some(&payload[..]), "{order:?}");
            }
        }
        // the buffer left with the payload
        assert_eq!(x.frags.held_bytes(), 0);
        assert_eq!(x.anomalies.total(), 0);
        // a copy of a fragment afterwards completes nothing
        x.decode(ETH, &fr[1], 3);
        assert_eq!(x.reassembled(), None);
        // nor does a frame that is no fragment leave the last payload there
        x.decode(ETH, &fr[2], 4);
        x.decode(ETH, &eth(0x0800, &ipv4(17, &udp(1, 2, b"x"))), 5);
        assert_eq!(x.take_reassembled(), None);
    }
    // copies and overlaps before the end: the bytes that came, once
    let mut x = dec();
    let (payload, fr) = udp_v4_fragments(41, 3000, &[1480, 2960]);
    let dgram = udp(5000, 53, &payload);
    let overlap = eth(0x0800, &Ipv4 { id: 41, frag_off: 1000, mf: true, ..Ipv4::new(17) }.build(&dgram[1000..2000]));
    for f in [&fr[0], &overlap, &fr[1], &overlap, &fr[2]] {
        x.decode(ETH, f, 1);
    }
    assert_eq!(x.take_reassembled(), Some(payload));
    assert_eq!(x.anomalies.total(), 0);
}

/// Decoders sharing one fragment table in turns: the fragments of a datagram split
/// over three chunks (turns 0, 1, 2) decoded by three decoders are resolved and
/// reassembled as by one decoder, whatever order the threads run in; a turn without
/// fragments never waits.
#[test]
fn decoders_in_turns_share_the_fragment_table_in_input_order() {
    let (payload, fr) = udp_v4_fragments(42, 3000, &[1480, 2960]);
    let (decoders, _shared) = Decoder::shared(DecodeConfig::default(), 4);
    let mut hs = Vec::new();
    // Started in reverse order: the later turns must wait for the earlier ones.
    for (turn, mut x) in decoders.into_iter().enumerate().rev() {
        let f = fr.get(turn).cloned();
        hs.push(std::thread::spawn(move || {
            x.begin_turn(turn as u64);
            // turn 3: a frame that is no fragment, decoded at once
            let frame = f.unwrap_or_else(|| eth(0x0800, &ipv4(17, &udp(1, 2, b"x"))));
            let d = x.decode(ETH, &frame, turn as u64);
            let whole = x.take_reassembled();
            x.end_turn();
            (turn, d, whole)
        }));
    }
    for h in hs {
        let (turn, d, whole) = h.join().unwrap();
        match turn {
            0 | 1 => assert_eq!((d.sport, whole), (5000, None), "turn {turn}"),
            2 => assert_eq!((d.sport, d.fragment, whole), (5000, Fragment::Later, Some(payload.clone()))),
            _ => assert_eq!((d.sport, d.fragment), (1, Fragment::No)),
        }
    }
}

#[test]
fn a_fragmented_ipv6_udp_datagram_and_tcp_segment_are_reassembled() {
    let mut x = dec();
    let payload: Vec<u8> = (0..2000).map(|i| (i % 7) as u8).collect();
    let dgram = udp(4000, 53, &payload);
    let f1 = eth(0x86dd, &ipv6(44, &cat(&[&frag6(17, 0, true, 9), &dgram[..1448]])));
    let f2 = eth(0x86dd, &ipv6(44, &cat(&[&frag6(17, 1448, false, 9), &dgram[1448..]])));
    assert_eq!(x.decode(ETH, &f1, 0).fragment, Fragment::First);
    assert_eq!(x.reassembled(), None);
    let d = x.decode(ETH, &f2, 1);
    assert_eq!((d.fragment, d.sport, d.payload_len), (Fragment::Later, 4000, 560));
    assert_eq!(x.reassembled(), Some(&payload[..]));

    // TCP: the segment's payload comes with `TcpComplete`, the header left out
    let data: Vec<u8> = (0..3000).map(|i| (i % 13) as u8).collect();
    let seg = Tcp { options: vec![1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 6], ..Tcp::new(40000, 80) }.build(&data);
    let part = |off: usize, end: usize, mf: bool| {
        eth(0x0800, &Ipv4 { id: 6, frag_off: off as u16, mf, ..Ipv4::new(6) }.build(&seg[off..end]))
    };
    assert_eq!(x.decode(ETH, &part(0, 1480, true), 2).fragment, Fragment::TcpHeld);
    assert_eq!(x.decode(ETH, &part(2960, seg.len(), false), 3).fragment, Fragment::TcpHeld);
    assert_eq!(x.reassembled(), None);
    let d = x.decode(ETH, &part(1480, 2960, true), 4);
    assert_eq!((d.fragment, d.payload_len), (Fragment::TcpComplete, 3000));
    assert_eq!(x.reassembled(), Some(&data[..]));
    assert_eq!(x.anomalies.total(), 0);
}

#[test]
fn reassembly_is_bounded_and_gives_up_what_it_cannot_finish() {
    // 2 KiB in all: the first datagram fits, the second does not fit beside it
    let cfg = DecodeConfig { reassembly_bytes: 2048, ..Default::default() };
    let mut x = Decoder::new(cfg);
    let (p1, f1) = udp_v4_fragments(1, 1800, &[1480]);
    let (_, f2) = udp_v4_fragments(2, 1800, &[1480]);
    x.decode(ETH, &f1[0], 0);
    x.decode(ETH, &f2[0], 0);
    assert_eq!(x.anomalies.get(Anomaly::FragmentReassemblyFull), 1);
    assert_eq!(x.decode(ETH, &f2[1], 1).payload_len, 328);
    assert_eq!(x.reassembled(), None);
    x.decode(ETH, &f1[1], 1);
    assert_eq!(x.reassembled(), Some(&p1[..]));
    assert_eq!(x.frags.held_bytes(), 0);

    // growing past the bound gives up too, and frees what was held
    let (_, f3) = udp_v4_fragments(3, 4000, &[1480, 2960]);
    x.decode(ETH, &f3[0], 2);
    assert!(x.frags.held_bytes() > 0);
    x.decode(ETH, &f3[1], 2);
    x.decode(ETH, &f3[2], 2);
    assert_eq!(x.reassembled(), None);
    assert_eq!(x.anomalies.get(Anomaly::FragmentReassemblyFull), 2);
    assert_eq!(x.frags.held_bytes(), 0);

    // a fragment cut by the snaplen can never be whole
    let mut x = dec();
    let (_, f4) = udp_v4_fragments(4, 3000, &[1480]);
    x.decode(ETH, &f4[0], 0);
    x.decode(ETH, &f4[1][..200], 1);
    assert_eq!(x.reassembled(), None);
    assert_eq!(x.anomalies.get(Anomaly::FragmentReassemblyFailed), 1);
    assert_eq!(x.frags.held_bytes(), 0);

    // an entry that leaves the table (timeout) frees its buffer
    let cfg = DecodeConfig { fragment_timeout_ns: 10, ..Default::default() };
    let mut x = Decoder::new(cfg);
    x.decode(ETH, &f4[0], 0);
    assert!(x.frags.held_bytes() > 0);
    x.decode(ETH, &f1[0], 100);
    assert_eq!(x.frags.held_bytes(), 1472);
}

#[test]
fn fragment_table_timeout_and_capacity() {
    let cfg = DecodeConfig { fragment_slots: 2, fragment_timeout_ns: 1_000, ..Default::default() };
    let mut x = Decoder::new(cfg);
    let frag = |id: u16, off: u16| {
        let mf = off == 0;
        eth(0x0800, &Ipv4 { id, frag_off: off, mf, ..Ipv4::new(17) }.build(&udp(id, 1, &[0; 16])))
    };
    x.decode(ETH, &frag(1, 0), 0);
    assert_eq!(x.decode(ETH, &frag(1, 8), 1_000).sport, 1);
    // expired
    assert_eq!(x.decode(ETH, &frag(1, 16), 1_001).fragment, Fragment::Orphan);
    // capacity 2: the third first fragment drops the oldest
    x.decode(ETH, &frag(2, 0), 2_000);
    x.decode(ETH, &frag(3, 0), 2_000);
    x.decode(ETH, &frag(4, 0), 2_000);
    assert_eq!(x.anomalies.get(Anomaly::FragmentTableFull), 1);
    assert_eq!(x.decode(ETH, &frag(2, 8), 2_000).fragment, Fragment::Orphan);
    assert_eq!(x.decode(ETH, &frag(3, 8), 2_000).sport, 3);
    assert_eq!(x.decode(ETH, &frag(4, 8), 2_000).sport, 4);
}

#[test]
fn fragments_last_the_60_s_rfc_8200_allows() {
    // the rest of a datagram 59 s after its first fragment is still its flow
    // (RFC 8200 §4.5), at 61 s an orphan
    let mut x = dec();
    let seg = udp(7000, 53, &[0x44; 100]);
    let (a, b) = seg.split_at(56);
    let first = eth(0x86dd, &ipv6(44, &cat(&[&frag6(17, 0, true, 5), a])));
    let later = eth(0x86dd, &ipv6(44, &cat(&[&frag6(17, 56, false, 5), b])));
    const S: u64 = 1_000_000_000;
    assert_eq!(x.decode(ETH, &first, S).fragment, Fragment::First);
    let d = x.decode(ETH, &later, 60 * S);
    assert_eq!((d.fragment, d.sport, d.dport), (Fragment::Later, 7000, 53));
    assert_eq!(x.decode(ETH, &later, 62 * S).fragment, Fragment::Orphan);
}

#[test]
fn ipv6_fragments() {
    let mut x = dec();
    let payload = udp(4000, 53, &[9; 100]);
    let f1 = eth(0x86dd, &ipv6(44, &cat(&[&frag6(17, 0, true, 0xdead_beef), &payload[..56]])));
    let f2 = eth(0x86dd, &ipv6(44, &cat(&[&frag6(17, 56, false, 0xdead_beef), &payload[56..]])));
    let d1 = x.decode(ETH, &f1, 0);
    assert_eq!((d1.fragment, d1.sport, d1.payload_len, d1.l4_offset), (Fragment::First, 4000, 48, 62));
    let d2 = x.decode(ETH, &f2, 0);
    assert_eq!((d2.l4, d2.fragment, d2.sport, d2.dport), (L4::Udp, Fragment::Later, 4000, 53));
    assert_eq!((d2.payload_offset, d2.payload_len), (62, 52));
    // a 32-bit id that differs only in its high bits is another datagram
    let f3 = eth(0x86dd, &ipv6(44, &cat(&[&frag6(17, 56, false, 0x0ead_beef), &payload[56..]])));
    let d3 = x.decode(ETH, &f3, 0);
    assert_eq!((d3.l4, d3.fragment, d3.sport), (L4::Udp, Fragment::Orphan, 0));
    // an atomic fragment is a whole packet
    let f4 = eth(0x86dd, &ipv6(44, &cat(&[&frag6(17, 0, false, 5), &payload])));
    let d4 = x.decode(ETH, &f4, 0);
    assert_eq!((d4.fragment, d4.sport, d4.payload_len), (Fragment::No, 4000, 100));
    assert_eq!(x.anomalies.get(Anomaly::FragmentOrphan), 1);
    assert_eq!(x.anomalies.total(), 1);
}

#[test]
fn ipv6_extension_chain_and_ah() {
    // hop-by-hop (8) → routing (24) → destination options (16) → AH (24) → TCP
    let seg = tcp(1, 2, &[0; 10]);
    let chain = cat(&[&ext(43, 1), &ext(60, 3), &ext(51, 2), &ah(6, 3), &seg]);
    let d = clean(ETH, &eth(0x86dd, &ipv6(0, &chain)));
    assert_eq!((d.l4, d.proto, d.sport, d.dport), (L4::Tcp, 6, 1, 2));
    assert_eq!((d.l4_offset, d.payload_len), (14 + 40 + 8 + 24 + 16 + 24, 10));
    // AH in IPv4
    let d = clean(ETH, &eth(0x0800, &ipv4(51, &cat(&[&ah(17, 3), &udp(3, 4, b"zz")]))));
    assert_eq!((d.l4, d.proto, d.sport, d.l4_offset, d.payload_len), (L4::Udp, 17, 3, 58, 2));
    // truncated chain: the IP pair with the extension header as protocol
    let (d, a) = with_anomalies(ETH, &eth(0x86dd, &Ipv6 { plen: Some(64), ..Ipv6::new(60) }.build(&[6, 7])));
    assert_eq!((d.l4, d.proto, d.ip_version), (L4::Other, 60, 6));
    assert_eq!(a, vec![("ipv6_ext_truncated", 1)]);
    // too many
    let mut many = Vec::new();
    for _ in 0..9 {
        many.extend(ext(60, 1));
    }
    many.extend(udp(1, 2, b""));
    let (d, a) = with_anomalies(ETH, &eth(0x86dd, &ipv6(60, &many)));
    assert_eq!((d.l4, a), (L4::Other, vec![("ipv6_too_many_ext", 1)]));
    // ESP: no further
    let d = clean(ETH, &eth(0x86dd, &ipv6(50, &[0; 40])));
    assert_eq!((d.l4, d.proto, d.sport, d.l4_offset, d.payload_len), (L4::Other, 50, 0, 54, 40));
}

#[test]
fn lengths_from_ip_header() {
    // snaplen: the IP header says 1500, 80 bytes were captured
    let full = eth(0x0800, &ipv4(6, &tcp(1, 2, &[0; 1460])));
    let d = clean(ETH, &full[..80]);
    assert_eq!((d.l4, d.payload_len, d.payload_offset), (L4::Tcp, 1460, 54));
    // IPv4 total length 0 (TSO capture): the captured length
    let ip = Ipv4 { total_len: Some(0), ..Ipv4::new(6) }.build(&tcp(1, 2, &[0; 3000]));
    let d = clean(ETH, &eth(0x0800, &ip));
    assert_eq!(d.payload_len, 3000);
    // jumbogram: payload length 0, hop-by-hop jumbo option (RFC 2675)
    let seg = tcp(1, 2, &[0; 70_000]);
    let jumbo = (8 + seg.len()) as u32;
    let hbh = cat(&[&[6, 0, 0xc2, 4], &jumbo.to_be_bytes()]);
    let f = eth(0x86dd, &Ipv6 { plen: Some(0), ..Ipv6::new(0) }.build(&cat(&[&hbh, &seg])));
    let d = clean(ETH, &f);
    assert_eq!((d.l4, d.payload_len, d.l4_offset), (L4::Tcp, 70_000, 62));
    // trailing bytes after a long packet are counted, Ethernet padding is not
    let mut f = eth(0x0800, &ipv4(17, &udp(1, 2, &[0; 100])));
    f.extend([0xee; 20]);
    let (d, a) = with_anomalies(ETH, &f);
    assert_eq!((d.payload_len, a), (100, vec![("ip_len_exceeds_capture", 1)]));
    // UDP length: used when consistent, else the IP payload
    let mut u = udp(1, 2, &[0; 50]);
    u[4..6].copy_from_slice(&30u16.to_be_bytes());
    assert_eq!(clean(ETH, &eth(0x0800, &ipv4(17, &u))).payload_len, 22);
    u[4..6].copy_from_slice(&300u16.to_be_bytes());
    let (d, a) = with_anomalies(ETH, &eth(0x0800, &ipv4(17, &u)));
    assert_eq!((d.payload_len, a), (50, vec![("udp_len_invalid", 1)]));
}

#[test]
fn broken_headers() {
    let ip = ipv4(6, &tcp(1, 2, b""));
    let mut bad = ip.clone();
    bad[0] = 0x44;
    let (d, a) = with_anomalies(ETH, &eth(0x0800, &bad));
    assert_eq!((d.l4, a), (L4::None, vec![("ipv4_hlen_too_small", 1)]));
    let (d, a) = with_anomalies(LinkType::RAW, &ip[..19]);
    assert_eq!((d.l4, a), (L4::None, vec![("ipv4_truncated", 1)]));
    let mut bad = ip.clone();
    bad[2..4].copy_from_slice(&10u16.to_be_bytes());
    assert_eq!(with_anomalies(LinkType::RAW, &bad).1, vec![("ipv4_total_len_too_small", 1)]);
    let (d, a) = with_anomalies(LinkType::RAW, &ipv6(6, &[])[..39]);
    assert_eq!((d.l4, a), (L4::None, vec![("ipv6_truncated", 1)]));
    let mut v5 = ip.clone();
    v5[0] = 0x55;
    let (d, a) = with_anomalies(ETH, &eth(0x86dd, &v5));
    assert_eq!((d.l4, a), (L4::None, vec![("ipv6_bad_version", 1)]));
    // transport headers cut short: the IP pair, l4 Other
    let ip = Ipv4 { total_len: Some(40), ..Ipv4::new(6) }.build(&[0; 10]);
    let (d, a) = with_anomalies(LinkType::RAW, &ip);
    assert_eq!((d.l4, d.proto, d.payload_len, a), (L4::Other, 6, 20, vec![("tcp_truncated", 1)]));
    let (d, a) = with_anomalies(LinkType::RAW, &ipv4(17, &[0; 4]));
    assert_eq!((d.l4, a), (L4::Other, vec![("udp_truncated", 1)]));
    let (d, a) = with_anomalies(LinkType::RAW, &ipv4(1, &[8, 0]));
    assert_eq!((d.l4, a), (L4::Other, vec![("icmp_truncated", 1)]));
    // TCP data offset below 5 or beyond the segment
    let mut t = tcp(1, 2, &[0; 8]);
    t[12] = 0x40;
    let (d, a) = with_anomalies(LinkType::RAW, &ipv4(6, &t));
    assert_eq!((d.l4, d.tcp.hdr_len, d.payload_len), (L4::Tcp, 16, 8));
    assert_eq!(a, vec![("tcp_hlen_too_small", 1)]);
    t[12] = 0xf0;
    let (d, a) = with_anomalies(LinkType::RAW, &ipv4(6, &t));
    assert_eq!((d.l4, d.payload_len, d.payload_offset), (L4::Tcp, 0, 48));
    assert_eq!(a, vec![("tcp_hlen_too_large", 1)]);
    // empty and tiny frames
    for n in 0..14 {
        let (d, a) = with_anomalies(ETH, &[0u8; 14][..n]);
        assert_eq!((d, a), (Decoded::default(), vec![("link_truncated", 1)]));
    }
}

#[test]
fn icmp_messages() {
    let d = clean(LinkType::RAW, &ipv4(1, &icmp(8, 0, 1, &[0; 56])));
    assert_eq!((d.l4, d.icmp_error, d.icmp_type, d.payload_len), (L4::Icmp, false, 8, 56));
    // an error quoting a UDP packet belongs to ICMP
    let quoted = ipv4(17, &udp(1111, 53, b""));
    for t in [3, 4, 5, 11, 12] {
        let d = clean(LinkType::RAW, &ipv4(1, &icmp(t, 1, 1, &quoted)));
        assert_eq!((d.l4, d.icmp_error, d.sport, d.dport), (L4::Icmp, true, 0, 0));
        assert_eq!((d.icmp_type, d.icmp_code), (t, 1));
    }
    for (t, err) in [(1, true), (2, true), (3, true), (4, true), (128, false), (135, false)] {
        let d = clean(LinkType::RAW, &ipv6(58, &icmp(t, 0, 1, &[0; 8])));
        assert_eq!((d.l4, d.icmp_error), (L4::Icmpv6, err));
    }
    // ICMP number in IPv6 / ICMPv6 number in IPv4: other protocols there
    assert_eq!(clean(LinkType::RAW, &ipv4(58, &[0; 8])).l4, L4::Other);
    assert_eq!(clean(LinkType::RAW, &ipv6(1, &[0; 8])).l4, L4::Other);
}

fn inner_v4_tcp() -> Vec<u8> {
    Ipv4 { src: [10, 0, 0, 1], dst: [10, 0, 0, 2], ..Ipv4::new(6) }.build(&tcp(33000, 22, b"ssh"))
}

/// Checks that `d` is the inner TCP flow of [`inner_v4_tcp`] out of `kind`/`id`.
fn assert_inner(d: &Decoded, kind: TunnelKind, id: u32) {
    assert_eq!((d.l4, d.ip_version), (L4::Tcp, 4), "{d:?}");
    assert_eq!((d.src, d.dst), (v4addr([10, 0, 0, 1]), v4addr([10, 0, 0, 2])));
    assert_eq!((d.sport, d.dport, d.payload_len), (33000, 22, 3));
    assert_eq!(d.tunnel, Tunnel { kind, id });
}

#[test]
fn tunnel_gre() {
    let inner = inner_v4_tcp();
    let d = clean(ETH, &eth(0x0800, &ipv4(47, &gre(0x0800, Some(0x77), &inner))));
    assert_inner(&d, TunnelKind::Gre, 0x77);
    assert_eq!(d.l4_offset, 14 + 20 + 8 + 20);
    let d = clean(
        ETH,
        &eth(0x0800, &ipv4(47, &Gre { csum: true, key: Some(5), seq: Some(9), ..Gre::new(0x0800) }.build(&inner))),
    );
    assert_inner(&d, TunnelKind::Gre, 5);
    let d = clean(ETH, &eth(0x86dd, &ipv6(47, &gre(0x0800, None, &inner))));
    assert_inner(&d, TunnelKind::Gre, 0);
    // transparent Ethernet bridging, with a VLAN tag inside
    let teb = eth(0x8100, &vlan(3, 0x0800, &inner));
    let d = clean(ETH, &eth(0x0800, &ipv4(47, &gre(0x6558, Some(1), &teb))));
    assert_inner(&d, TunnelKind::Gre, 1);
    // Cisco MetaData in GRE (EtherType first), and on Ethernet (EtherType last)
    let cmd = cat(&[&[0x08, 0x00, 1, 1, 0, 1, 0, 0], &inner]);
    let d = clean(ETH, &eth(0x0800, &ipv4(47, &gre(0x8909, Some(40), &cmd))));
    assert_inner(&d, TunnelKind::Gre, 40);
    let d = clean(ETH, &eth(0x8909, &cat(&[&[1, 1, 0, 1, 0, 0, 0x08, 0x00], &inner])));
    assert_eq!((d.l4, d.dport, d.l4_offset), (L4::Tcp, 22, 42));
    // GRE carrying something that is not IP: the outer packet is the flow
    let arp = eth(0x0806, &[0; 28]);
    let (d, a) = with_anomalies(ETH, &eth(0x0800, &ipv4(47, &gre(0x6558, None, &arp))));
    assert_eq!((d.l4, d.proto, d.tunnel.kind), (L4::Other, 47, TunnelKind::None));
    assert_eq!(a, vec![("ethertype_not_ip", 1)]);
    // a GRE header that does not parse
    let (d, a) = with_anomalies(ETH, &eth(0x0800, &ipv4(47, &[0x00, 0x03, 8, 0, 1, 2])));
    assert_eq!((d.l4, d.proto, a), (L4::Other, 47, vec![("tunnel_malformed", 1)]));
}

#[test]
fn pptp_gre_v1() {
    let ppp = cat(&[&[0xff, 0x03, 0x00, 0x21], &inner_v4_tcp()]);
    let len = (ppp.len() as u16).to_be_bytes();
    let hdr = [0x30, 0x81, 0x88, 0x0b, len[0], len[1], 0x98, 0x50, 0, 0, 0, 1, 0, 0, 0, 0];
    let d = clean(ETH, &eth(0x0800, &ipv4(47, &cat(&[&hdr, &ppp]))));
    assert_inner(&d, TunnelKind::Gre, 0x9850);
    // acknowledgment only: the GRE packet itself
    let ack = [0x20, 0x81, 0x88, 0x0b, 0, 0, 0x98, 0x50, 0, 0, 0, 1];
    let d = clean(ETH, &eth(0x0800, &ipv4(47, &ack)));
    assert_eq!((d.l4, d.proto, d.tunnel.kind), (L4::Other, 47, TunnelKind::None));
    // compressed / encrypted PPP payload
    let ccp = cat(&[&hdr[..12], &[0xff, 0x03, 0x00, 0xfd, 1, 2, 3]]);
    assert_eq!(with_anomalies(ETH, &eth(0x0800, &ipv4(47, &ccp))).1, vec![("ppp_not_ip", 1)]);
}

#[test]
fn tunnel_erspan() {
    let mirrored = eth(0x0800, &inner_v4_tcp());
    // type II: GRE with S set, 8-byte header, session id 101
    let e2 = cat(&[&[0x10, 0x01, 0x10, 0x65, 0, 0, 0xab, 0xc5], &mirrored]);
    let f = eth(0x0800, &ipv4(47, &Gre { seq: Some(7), ..Gre::new(0x88be) }.build(&e2)));
    assert_inner(&clean(ETH, &f), TunnelKind::Erspan, 101);
    // type I: no sequence number, no ERSPAN header
    let f = eth(0x0800, &ipv4(47, &gre(0x88be, None, &mirrored)));
    assert_inner(&clean(ETH, &f), TunnelKind::Erspan, 0);
    // type III with the optional subheader (O bit), session 300
    let mut e3 = vec![0x20, 0x01, 0x01, 0x2c, 0, 0, 0, 1, 0, 0, 0x00, 0x01];
    e3.extend([0; 8]);
    e3.extend(&mirrored);
    let f = eth(0x0800, &ipv4(47, &Gre { seq: Some(1), ..Gre::new(0x22eb) }.build(&e3)));
    assert_inner(&clean(ETH, &f), TunnelKind::Erspan, 300);
    // type II header with the wrong version
    let bad = cat(&[&[0x70, 0x01, 0x10, 0x65, 0, 0, 0, 0], &mirrored]);
    let f = eth(0x0800, &ipv4(47, &Gre { seq: Some(7), ..Gre::new(0x88be) }.build(&bad)));
    let (d, a) = with_anomalies(ETH, &f);
    assert_eq!((d.l4, d.proto, a), (L4::Other, 47, vec![("tunnel_malformed", 1)]));
}

fn outer_udp(dport: u16, payload: &[u8]) -> Vec<u8> {
    eth(0x0800, &ipv4(17, &udp(49999, dport, payload)))
}

#[test]
fn tunnel_vxlan() {
    let inner = eth(0x0800, &inner_v4_tcp());
    assert_inner(&clean(ETH, &outer_udp(4789, &vxlan(1111, &inner))), TunnelKind::Vxlan, 1111);
    assert_inner(&clean(ETH, &outer_udp(8472, &vxlan(42, &inner))), TunnelKind::Vxlan, 42);
    // junk to port 4789: the UDP flow itself
    let (d, a) = with_anomalies(ETH, &outer_udp(4789, &[0u8; 30]));
    assert_eq!((d.l4, d.dport, d.tunnel.kind), (L4::Udp, 4789, TunnelKind::None));
    assert_eq!(d.payload_len, 30);
    assert_eq!(a, vec![("tunnel_malformed", 1)]);
    // ARP inside: the UDP flow
    let arp = eth(0x0806, &[0; 28]);
    let (d, a) = with_anomalies(ETH, &outer_udp(4789, &vxlan(5, &arp)));
    assert_eq!((d.l4, d.dport, a), (L4::Udp, 4789, vec![("ethertype_not_ip", 1)]));
    // only the destination port selects VXLAN
    let f = eth(0x0800, &ipv4(17, &udp(4789, 5000, &vxlan(1, &inner))));
    assert_eq!((clean(ETH, &f).l4, clean(ETH, &f).sport), (L4::Udp, 4789));
}

#[test]
fn tunnel_geneve() {
    let inner = eth(0x0800, &inner_v4_tcp());
    let f = outer_udp(6081, &geneve(0x6558, 10, &[0x11; 8], &inner));
    assert_inner(&clean(ETH, &f), TunnelKind::Geneve, 10);
    let f = outer_udp(6081, &geneve(0x0800, 11, &[], &inner_v4_tcp()));
    assert_inner(&clean(ETH, &f), TunnelKind::Geneve, 11);
    let mut bad = geneve(0x6558, 10, &[], &inner);
    bad[0] = 0x80; // version 2
    assert_eq!(with_anomalies(ETH, &outer_udp(6081, &bad)).1, vec![("tunnel_malformed", 1)]);
}

#[test]
fn tunnel_geneve_answered_from_its_port() {
    // an endpoint's answer comes from 6081 to the sender's port (tshark decodes it)
    let f = eth(0x0800, &ipv4(17, &udp(6081, 49999, &geneve(0x0800, 12, &[], &inner_v4_tcp()))));
    assert_inner(&clean(ETH, &f), TunnelKind::Geneve, 12);
}

#[test]
fn tunnel_vxlan_gpe() {
    // P flag set, next protocol 1 (IPv4), 2 (IPv6), 3 (Ethernet)
    let gpe = |np: u8, vni: u32, inner: &[u8]| cat(&[&[0x0c, 0, 0, np], &(vni << 8).to_be_bytes(), inner]);
    assert_inner(&clean(ETH, &outer_udp(4790, &gpe(1, 7, &inner_v4_tcp()))), TunnelKind::VxlanGpe, 7);
    let d = clean(ETH, &outer_udp(4790, &gpe(2, 8, &ipv6(17, &udp(1, 2, b"q")))));
    assert_eq!((d.ip_version, d.dport, d.tunnel), (6, 2, Tunnel { kind: TunnelKind::VxlanGpe, id: 8 }));
    let inner_eth = eth(0x0800, &inner_v4_tcp());
    assert_inner(&clean(ETH, &outer_udp(4790, &gpe(3, 9, &inner_eth))), TunnelKind::VxlanGpe, 9);
    // from the GPE port too
    let f = eth(0x0800, &ipv4(17, &udp(4790, 50000, &gpe(1, 10, &inner_v4_tcp()))));
    assert_inner(&clean(ETH, &f), TunnelKind::VxlanGpe, 10);
    // NSH inside: the UDP flow, not an anomaly
    let d = clean(ETH, &outer_udp(4790, &gpe(4, 1, &[0; 40])));
    assert_eq!((d.l4, d.dport, d.tunnel.kind), (L4::Udp, 4790, TunnelKind::None));
    // an unknown version
    let (d, a) = with_anomalies(ETH, &outer_udp(4790, &cat(&[&[0x4c, 0, 0, 1, 0, 0, 0, 0], &inner_v4_tcp()])));
    assert_eq!((d.l4, d.dport, a), (L4::Udp, 4790, vec![("tunnel_malformed", 1)]));
}

/// An 802.11 data frame header (no FCS): QoS data from the DS when `qos`.
fn wlan_data(qos: bool, body: &[u8]) -> Vec<u8> {
    let mut h = vec![if qos { 0x88 } else { 0x08 }, 0x02];
    h.resize(24, 0x11);
    if qos {
        h.extend([0, 0]);
    }
    cat(&[&h, body])
}

fn snap(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    cat(&[&[0xaa, 0xaa, 0x03, 0, 0, 0], &ethertype.to_be_bytes(), payload])
}

#[test]
fn tunnel_aruba_wlan_gre() {
    let body = snap(0x0800, &inner_v4_tcp());
    for (proto, qos) in [(0x8200, false), (0x8210, true), (0x8370, true)] {
        let f = eth(0x0800, &ipv4(47, &gre(proto, Some(3), &wlan_data(qos, &body))));
        let d = clean(ETH, &f);
        assert_inner(&d, TunnelKind::Gre, 3);
        assert_eq!(d.l4_offset as usize, 14 + 20 + 8 + 24 + if qos { 2 } else { 0 } + 8 + 20);
    }
    // an 802.11 management frame, a protected data frame: not IP, the GRE flow
    let mut mgmt = wlan_data(false, &body);
    mgmt[0] = 0x80;
    let mut prot = wlan_data(false, &body);
    prot[1] |= 0x40;
    for w in [mgmt, prot] {
        let (d, a) = with_anomalies(ETH, &eth(0x0800, &ipv4(47, &gre(0x8200, None, &w))));
        assert_eq!((d.l4, d.proto, a), (L4::Other, 47, vec![("ethertype_not_ip", 1)]));
    }
    // 0x8201 is not Aruba's
    let f = eth(0x0800, &ipv4(47, &gre(0x8201, None, &wlan_data(false, &body))));
    assert_eq!(with_anomalies(ETH, &f).0.l4, L4::Other);
}

#[test]
fn vntag() {
    // VN-Tag, then an 802.1Q tag, then IPv4
    let f = eth(0x8926, &cat(&[&[0x80, 0x01, 0x00, 0x02, 0x81, 0x00], &vlan(5, 0x0800, &inner_v4_tcp())]));
    let d = clean(ETH, &f);
    assert_eq!((d.l4, d.dport, d.l4_offset), (L4::Tcp, 22, 14 + 6 + 4 + 20));
    let f = eth(0x8926, &cat(&[&[0, 0, 0, 0, 0x86, 0xdd], &ipv6(17, &udp(1, 2, b"q"))]));
    assert_eq!(clean(ETH, &f).ip_version, 6);
    assert_eq!(with_anomalies(ETH, &eth(0x8926, &[])).1.len(), 1);
}

#[test]
fn fddi_link() {
    let fddi = LinkType(10);
    let hdr = |fc: u8| cat(&[&[fc], &[0x22; 12]]);
    let d = clean(fddi, &cat(&[&hdr(0x50), &snap(0x0800, &inner_v4_tcp())]));
    assert_eq!((d.l4, d.dport, d.l4_offset), (L4::Tcp, 22, 13 + 8 + 20));
    let d = clean(fddi, &cat(&[&hdr(0x57), &snap(0x86dd, &ipv6(17, &udp(1, 2, b"q")))]));
    assert_eq!((d.ip_version, d.dport), (6, 2));
    // SMT frame; an LLC that is not SNAP (STP); cut short
    let (d, a) = with_anomalies(fddi, &cat(&[&hdr(0x41), &[0; 40]]));
    assert_eq!((d.l4, a), (L4::None, vec![("ethertype_not_ip", 1)]));
    let (d, a) = with_anomalies(fddi, &cat(&[&hdr(0x50), &[0x42, 0x42, 3, 0, 0, 0, 0, 0], &[0; 30]]));
    assert_eq!((d.l4, a), (L4::None, vec![("ethertype_not_ip", 1)]));
    assert_eq!(with_anomalies(fddi, &hdr(0x50)).1, vec![("link_truncated", 1)]);
}

#[test]
fn tunnel_gtpu() {
    let f = outer_udp(2152, &gtpu(255, 0xabcdef, None, &inner_v4_tcp()));
    assert_inner(&clean(ETH, &f), TunnelKind::GtpU, 0xabcdef);
    let inner6 = ipv6(17, &udp(1, 2, b"q"));
    let f = outer_udp(2152, &gtpu(255, 7, Some(3), &inner6));
    let d = clean(ETH, &f);
    assert_eq!((d.ip_version, d.sport, d.tunnel.kind, d.tunnel.id), (6, 1, TunnelKind::GtpU, 7));
    // E flag with a PDU session container extension header
    let mut g = vec![0x34, 255, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0x85, 1, 0x10, 0x01, 0x00];
    let n = (g.len() - 8 + inner6.len()) as u16;
    g[2..4].copy_from_slice(&n.to_be_bytes());
    g.extend(&inner6);
    let d = clean(ETH, &outer_udp(2152, &g));
    assert_eq!((d.ip_version, d.tunnel.id), (6, 9));
    // echo request: GTP signalling, the UDP flow
    let d = clean(ETH, &outer_udp(2152, &gtpu(1, 0, Some(1), &[])));
    assert_eq!((d.l4, d.dport, d.tunnel.kind), (L4::Udp, 2152, TunnelKind::None));
    // GTP version 2 on the GTP-U port
    let (d, a) = with_anomalies(ETH, &outer_udp(2152, &[0x48, 255, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]));
    assert_eq!((d.l4, a), (L4::Udp, vec![("tunnel_malformed", 1)]));
}

#[test]
fn tunnel_teredo() {
    let inner = ipv6(17, &udp(1, 2, b"teredo"));
    let d = clean(ETH, &outer_udp(3544, &inner));
    assert_eq!((d.ip_version, d.sport, d.tunnel.kind), (6, 1, TunnelKind::Teredo));
    // origin indication, then authentication + origin, from the server port
    let origin = [0u8, 0, 0xf2, 0x27, 0x3f, 0x57, 0xfe, 0xfe];
    let f = eth(0x0800, &ipv4(17, &udp(3544, 40000, &cat(&[&origin, &inner]))));
    assert_eq!(clean(ETH, &f).tunnel.kind, TunnelKind::Teredo);
    let auth = [0u8, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0];
    let f = outer_udp(3544, &cat(&[&auth, &origin, &inner]));
    let d = clean(ETH, &f);
    assert_eq!((d.sport, d.l4_offset), (1, 42 + 13 + 8 + 40));
    // not really IPv6 (payload length disagrees): the UDP flow, no anomaly
    let mut fake = inner.clone();
    fake[5] += 1;
    let d = clean(ETH, &outer_udp(3544, &fake));
    assert_eq!((d.l4, d.dport, d.tunnel.kind), (L4::Udp, 3544, TunnelKind::None));
    // Relayed: a relay's port to the client's mapped port, neither 3544. Opened when
    // an end is a Teredo address (2001:0::/32); the same bytes between two other
    // addresses stay the UDP flow.
    let client =
        Ipv6 { src: 0x2001_0000_c288_1c4c_20f3_359b_46f9_3f46_u128.to_be_bytes(), dst: v6(9), ..Ipv6::new(17) };
    let relayed = client.build(&udp(80, 50000, b"relayed"));
    let f = eth(0x0800, &ipv4(17, &udp(41234, 51812, &relayed)));
    let d = clean(ETH, &f);
    assert_eq!((d.ip_version, d.sport, d.dport, d.tunnel.kind), (6, 80, 50000, TunnelKind::Teredo));
    let f = eth(0x0800, &ipv4(17, &udp(41234, 51812, &inner)));
    let d = clean(ETH, &f);
    assert_eq!((d.l4, d.ip_version, d.dport, d.tunnel.kind), (L4::Udp, 4, 51812, TunnelKind::None));
}

#[test]
fn ip_in_ip() {
    let in4 = inner_v4_tcp();
    let in6 = Ipv6 { src: v6(7), dst: v6(8), ..Ipv6::new(6) }.build(&tcp(33000, 22, b"ssh"));
    let d = clean(ETH, &eth(0x0800, &ipv4(4, &in4)));
    assert_inner(&d, TunnelKind::IpIp, 0);
    let d = clean(ETH, &eth(0x86dd, &ipv6(4, &in4)));
    assert_inner(&d, TunnelKind::FourInSix, 0);
    let d = clean(ETH, &eth(0x0800, &ipv4(41, &in6)));
    assert_eq!((d.ip_version, d.src, d.tunnel.kind), (6, v6addr(v6(7)), TunnelKind::SixInFour));
    let d = clean(ETH, &eth(0x86dd, &ipv6(41, &in6)));
    assert_eq!((d.ip_version, d.dport, d.tunnel.kind), (6, 22, TunnelKind::SixInSix));
    // proto 41 with an IPv4 packet inside: the outer packet
    let (d, a) = with_anomalies(ETH, &eth(0x0800, &ipv4(41, &in4)));
    assert_eq!((d.l4, d.proto, a), (L4::Other, 41, vec![("ipv6_bad_version", 1)]));
}

#[test]
fn mpls_over_udp() {
    let p = mpls(&[1000], &inner_v4_tcp());
    assert_inner(&clean(ETH, &outer_udp(6635, &p)), TunnelKind::MplsUdp, 0);
}

#[test]
fn nesting_and_depth() {
    // Ethernet / IPv4 / GRE key 3 / IPv4 / UDP / VXLAN 9 / Ethernet / IPv4 / TCP
    let vx = Ipv4 { src: [172, 16, 0, 1], dst: [172, 16, 0, 2], ..Ipv4::new(17) }.build(&udp(
        1,
        4789,
        &vxlan(9, &eth(0x0800, &inner_v4_tcp())),
    ));
    let f = eth(0x0800, &ipv4(47, &gre(0x0800, Some(3), &vx)));
    assert_inner(&clean(ETH, &f), TunnelKind::Vxlan, 9);
    // depth 1: taken at the first tunnel's inside
    let cfg = DecodeConfig { max_tunnel_depth: 1, ..Default::default() };
    let mut x = Decoder::new(cfg);
    let d = x.decode(ETH, &f, 0);
    assert_eq!((d.l4, d.dport, d.tunnel), (L4::Udp, 4789, Tunnel { kind: TunnelKind::Gre, id: 3 }));
    assert_eq!(x.anomalies.get(Anomaly::TunnelTooDeep), 1);
    // depth 0: no decapsulation at all
    let mut x = Decoder::new(DecodeConfig { max_tunnel_depth: 0, ..Default::default() });
    assert_eq!(x.decode(ETH, &f, 0).proto, 47);
    // IPv4-in-IPv4 nested beyond the default depth
    let mut p = inner_v4_tcp();
    for _ in 0..6 {
        p = ipv4(4, &p);
    }
    let mut x = dec();
    let d = x.decode(LinkType::RAW, &p, 0);
    assert_eq!((d.l4, d.proto, d.tunnel.kind), (L4::Other, 4, TunnelKind::IpIp));
    assert_eq!(x.anomalies.get(Anomaly::TunnelTooDeep), 1);
}

#[test]
fn fragmented_tunnel_attributes_later_fragments_to_the_inner_flow() {
    let mut x = dec();
    let vx = udp(
        1,
        4789,
        &vxlan(
            77,
            &eth(
                0x0800,
                &Ipv4 { src: [10, 0, 0, 1], dst: [10, 0, 0, 2], ..Ipv4::new(6) }.build(&tcp(33000, 22, &[0; 200])),
            ),
        ),
    );
    let first = eth(0x0800, &Ipv4 { id: 5, mf: true, ..Ipv4::new(17) }.build(&vx[..96]));
    let later = eth(0x0800, &Ipv4 { id: 5, frag_off: 96, ..Ipv4::new(17) }.build(&vx[96..]));
    let d1 = x.decode(ETH, &first, 0);
    assert_eq!((d1.dport, d1.fragment, d1.tunnel.kind), (22, Fragment::First, TunnelKind::Vxlan));
    let d2 = x.decode(ETH, &later, 0);
    assert_eq!((d2.src, d2.dport, d2.fragment), (v4addr([10, 0, 0, 1]), 22, Fragment::Later));
    assert_eq!((d2.tunnel.id, d2.payload_len), (77, vx.len() as u32 - 96));
    assert_eq!(x.anomalies.total(), 0);
}

/// Structural promises of `Decoded` (shared with the property tests).
pub(crate) fn check_invariants(d: &Decoded, frame: &[u8]) {
    assert!(d.payload_offset as usize <= frame.len());
    assert!(d.l4_offset as usize <= frame.len());
    if d.l4 != L4::None {
        assert!(matches!(d.ip_version, 4 | 6));
    }
    if d.ip_version == 4 {
        assert!(d.src >> 32 == 0 && d.dst >> 32 == 0);
    }
    if !matches!(d.l4, L4::Tcp | L4::Udp) {
        assert_eq!((d.sport, d.dport), (0, 0));
    }
    if d.icmp_error {
        assert!(matches!(d.l4, L4::Icmp | L4::Icmpv6));
    }
}

/// One valid frame of each encapsulation, for mutation.
pub(crate) fn sample_frames() -> Vec<(LinkType, Vec<u8>)> {
    let inner = inner_v4_tcp();
    let inner_eth = eth(0x0800, &inner);
    let seg = tcp(1, 2, &[3; 40]);
    vec![
        (ETH, tcp_v4_frame(1, 2, b"x")),
        (ETH, eth(0x8100, &vlan(5, 0x86dd, &ipv6(17, &udp(1, 2, b"x"))))),
        (ETH, eth(0x8847, &mpls(&[1, 2], &inner))),
        (ETH, eth(0x8864, &pppoe(0x21, &inner))),
        (
            ETH,
            eth(
                0x0800,
                &ipv4(47, &Gre { csum: true, key: Some(1), seq: Some(2), ..Gre::new(0x6558) }.build(&inner_eth)),
            ),
        ),
        (
            ETH,
            eth(
                0x0800,
                &ipv4(
                    47,
                    &Gre { seq: Some(2), ..Gre::new(0x88be) }.build(&cat(&[&[0x10, 1, 0, 5, 0, 0, 0, 0], &inner_eth])),
                ),
            ),
        ),
        (ETH, outer_udp(4789, &vxlan(1, &inner_eth))),
        (ETH, outer_udp(6081, &geneve(0x6558, 1, &[0x11; 4], &inner_eth))),
        (ETH, outer_udp(2152, &gtpu(255, 1, Some(1), &inner))),
        (ETH, outer_udp(3544, &ipv6(59, &[]))),
        (ETH, outer_udp(6635, &mpls(&[1], &inner))),
        (ETH, eth(0x86dd, &ipv6(0, &cat(&[&ext(44, 1), &frag6(6, 0, true, 1), &seg])))),
        (ETH, eth(0x0800, &Ipv4 { mf: true, ..Ipv4::new(6) }.build(&seg))),
        (ETH, eth(0x0800, &Ipv4 { frag_off: 8, ..Ipv4::new(6) }.build(&seg))),
        (ETH, eth(0x86dd, &ipv6(41, &ipv6(4, &inner)))),
        (LinkType::LINUX_SLL, cat(&[&[0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 8, 0], &inner])),
        (LinkType::NULL, cat(&[&[2, 0, 0, 0], &inner])),
        (LinkType::RAW, ipv4(1, &icmp(3, 3, 1, &inner))),
    ]
}

#[test]
fn samples_decode_cleanly() {
    for (link, f) in sample_frames() {
        let (d, a) = with_anomalies(link, &f);
        let orphan = d.fragment == Fragment::Orphan;
        assert!(a.is_empty() || (orphan && a == vec![("fragment_orphan", 1)]), "{a:?}");
        check_invariants(&d, &f);
        assert_ne!(d.l4, L4::None);
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const LINKS: &[u16] = &[0, 1, 9, 10, 12, 14, 50, 101, 104, 108, 113, 226, 228, 229, 239, 276, 147];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        #[test]
        fn never_panics_on_arbitrary_bytes(
            li in 0..LINKS.len(),
            bytes in proptest::collection::vec(any::<u8>(), 0..256),
            ts in any::<u64>(),
        ) {
            let mut x = dec();
            let link = LinkType(LINKS[li]);
            let d = x.decode(link, &bytes, ts);
            check_invariants(&d, &bytes);
        }

        #[test]
        fn never_panics_on_mutated_frames(
            which in any::<proptest::sample::Index>(),
            flips in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..8),
            cut in any::<proptest::sample::Index>(),
            do_cut in any::<bool>(),
        ) {
            let samples = sample_frames();
            let (link, mut f) = samples[which.index(samples.len())].clone();
            for (at, v) in flips {
                let i = at.index(f.len());
                f[i] = v;
            }
            if do_cut {
                f.truncate(cut.index(f.len() + 1));
            }
            let mut x = Decoder::new(DecodeConfig { fragment_slots: 4, ..Default::default() });
            for ts in 0..3 {
                let d = x.decode(link, &f, ts);
                check_invariants(&d, &f);
            }
        }
    }
}
