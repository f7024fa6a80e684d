//! `Decoder::decode` on any bytes, under any supported link type.
//!
//! Input: a selector byte ([`link_of`](crate::link_of)), then one or more frames separated
//! by [`FRAME_SEP`](crate::FRAME_SEP) (no separator: the rest is one frame). The frames are
//! decoded in order, four rounds over, at increasing packet times (a later round can
//! find the first fragments of an earlier one in the fragment table, or find them
//! expired), by two decoders: one with the default configuration and one with a
//! 2-slot fragment table, a 1 µs fragment timeout, 2 KiB of reassembly buffers and a
//! tunnel depth of 1 (table full, expiry, reassembly and depth limits reached quickly).
//!
//! Asserted for every result: only what `tapstat_decode`'s documentation promises
//! (see `check`). A panic anywhere is a crash too (the architecture invariant:
//! decode never fails and never panics).

use crate::{link_of, split_frames};
use tapstat_decode::{DecodeConfig, Decoded, Decoder, Fragment, TcpFields, TcpOptions, TunnelKind, L4};

/// Packet time at the start of each round, ns: the same second, then 20 s later (the
/// default 30 s fragment timeout not reached), then 100 s later (reached).
const ROUNDS: [u64; 4] = [1_000_000_000, 1_000_100_000, 21_000_000_000, 101_000_000_000];

/// One input of the `decode` target.
pub fn decode_one(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else { return };
    let link = link_of(sel);
    let frames = split_frames(body);
    let small =
        DecodeConfig { fragment_slots: 2, fragment_timeout_ns: 1_000, reassembly_bytes: 2_048, max_tunnel_depth: 1 };
    for cfg in [DecodeConfig::default(), small] {
        let mut dec = Decoder::new(cfg);
        for base in ROUNDS {
            for (i, frame) in frames.iter().enumerate() {
                let d = dec.decode(link, frame, base + i as u64);
                check(frame, &d);
            }
        }
    }
}

/// The documented contract of `Decoded` (crates/decode/src/lib.rs).
fn check(frame: &[u8], d: &Decoded) {
    let ctx = || format!("{d:?} for a {}-byte frame", frame.len());
    // "Offsets are into the frame ... and never past its end, so
    // `&frame[payload_offset as usize..]` is always valid"
    assert!(d.payload_offset as usize <= frame.len(), "payload_offset past the frame: {}", ctx());
    assert!(d.l4_offset as usize <= frame.len(), "l4_offset past the frame: {}", ctx());
    // "ip_version: 4 or 6 for the innermost IP header; 0 when there is none";
    // `L4::None`: "No IP packet found"
    assert!(matches!(d.ip_version, 0 | 4 | 6), "ip_version not 0/4/6: {}", ctx());
    assert_eq!(d.l4 == L4::None, d.ip_version == 0, "l4 None iff no IP header: {}", ctx());
    if d.l4 == L4::None {
        // no IP packet: not a fragment, no ports, no offsets into a transport
        assert_eq!(d.fragment, Fragment::No, "{}", ctx());
    } else {
        // the L4 header (or, for Other, the IP payload) comes before the L4 payload
        assert!(d.l4_offset <= d.payload_offset, "l4_offset after payload_offset: {}", ctx());
    }
    // "IPv4 addresses are stored in the low 32 bits of the u128"
    if d.ip_version == 4 {
        assert_eq!(d.src >> 32, 0, "IPv4 src beyond 32 bits: {}", ctx());
        assert_eq!(d.dst >> 32, 0, "IPv4 dst beyond 32 bits: {}", ctx());
    }
    // "Ports for TCP/UDP; 0 otherwise"
    if !matches!(d.l4, L4::Tcp | L4::Udp) {
        assert_eq!((d.sport, d.dport), (0, 0), "ports on a non-TCP/UDP packet: {}", ctx());
    }
    // "ICMP / ICMPv6 type and code (when l4 is Icmp / Icmpv6), else 0"
    if !matches!(d.l4, L4::Icmp | L4::Icmpv6) {
        assert_eq!((d.icmp_type, d.icmp_code), (0, 0), "ICMP type/code on a non-ICMP packet: {}", ctx());
    }
    // Tunnel: "with its id where the tunnel has one ..., else 0"
    if d.tunnel.kind == TunnelKind::None {
        assert_eq!(d.tunnel.id, 0, "tunnel id without a tunnel: {}", ctx());
    }
    match d.fragment {
        // "Later: ... l4_offset 0 and payload_offset at the fragment's data";
        // TcpFields "all zero for later / orphan fragments"
        Fragment::Later => {
            assert_eq!(d.l4_offset, 0, "later fragment with an l4_offset: {}", ctx());
            assert_eq!(d.tcp, TcpFields::default(), "TCP fields on a later fragment: {}", ctx());
        }
        // "Orphan: its own IP pair, l4 after its protocol but ports 0, default tcp"
        Fragment::Orphan => {
            assert_eq!((d.sport, d.dport), (0, 0), "ports on an orphan fragment: {}", ctx());
            assert_eq!(d.tcp, TcpFields::default(), "TCP fields on an orphan fragment: {}", ctx());
        }
        // "TcpHeld: ... `tcp` and `tcp_opts` are default and `payload_len` is 0 here"
        Fragment::TcpHeld => {
            assert_eq!(d.tcp, TcpFields::default(), "TCP fields on a held TCP fragment: {}", ctx());
            assert_eq!(d.tcp_opts, TcpOptions::default(), "TCP options on a held TCP fragment: {}", ctx());
            assert_eq!(d.payload_len, 0, "payload on a held TCP fragment: {}", ctx());
        }
        // "TcpComplete: `tcp` and `tcp_opts` are the first fragment's header": its
        // options are not in this frame, so there is no offset to check.
        Fragment::TcpComplete => {}
        Fragment::No | Fragment::First => {
            // TCP options "are at frame[l4_offset + 20 .. payload_offset]" (a header
            // cut short is L4::Other, not Tcp)
            if d.l4 == L4::Tcp {
                assert!(d.l4_offset + 20 <= d.payload_offset, "TCP payload inside the fixed header: {}", ctx());
            }
        }
    }
}
