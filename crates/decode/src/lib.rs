//! Frame decoding: bytes of one frame in, a fixed-size [`Decoded`] summary out.
//!
//! The main types are [`Decoder`] (stateful: it owns the bounded IP-fragment table and
//! the anomaly counters), [`Decoded`] (what the flow layer needs to know about a
//! packet: innermost addresses, ports, protocol, TCP header fields, tunnel, offsets)
//! and [`Anomaly`] (named problems, counted, never errors).
//!
//! ```
//! use tapstat_decode::{Decoder, DecodeConfig, L4};
//! use tapstat_capture::LinkType;
//! let mut dec = Decoder::new(DecodeConfig::default());
//! let d = dec.decode(LinkType::ETHERNET, &[0u8; 10], 0);
//! assert_eq!(d.l4, L4::None); // too short: counted as an anomaly, not an error
//! ```
//!
//! Architecture invariant: `decode` never panics and never fails on any input; every
//! problem is an [`Anomaly`] counted in [`Decoder::anomalies`].
//!
//! What is decoded:
//!
//! - link types: Ethernet, raw IP (101, 12, 14), IPv4 (228), IPv6 (229), Linux SLL and
//!   SLL2, BSD NULL and LOOP, PPP (9, 50), FDDI (10), Cisco HDLC (104), Solaris ipnet
//!   (226), NFLOG (239); another link type is counted (`link_unsupported`) and warned
//!   about at the end of a run;
//! - 802.1Q / 802.1ad / QinQ tags, Cisco VN-Tags, MPLS label stacks (with a pseudowire
//!   control word before Ethernet), PPPoE sessions, Cisco MetaData, LLC/SNAP;
//! - IPv4 with options and AH, IPv6 with hop-by-hop, routing, destination options,
//!   fragment and AH extension headers, jumbograms; IP fragments (see [`Fragment`]);
//! - TCP, UDP, ICMP, ICMPv6; other protocols as [`L4::Other`];
//! - tunnels (the innermost flow is the flow, see [`TunnelKind`]): GRE (keys,
//!   sequence numbers, checksums, RFC 1701 routing, PPTP's version 1 with PPP),
//!   ERSPAN I / II / III, Aruba's 802.11 data frames (GRE 0x8200 to 0x8370), VXLAN
//!   (UDP 4789, 8472), VXLAN-GPE (4790, either port), Geneve (6081, either port), GTP-U
//!   G-PDUs (2152),
//!   Teredo (3544, only what really is IPv6; on other ports, relayed, when an end of
//!   the IPv6 packet is a Teredo address), MPLS in UDP (6635), IP in IP (4, 41).
//!
//! [`wire`] has the zero-copy header views the decoder is built on.

// Parses bytes from the wire or from files: no unsafe code, ever.
#![forbid(unsafe_code)]

pub use tapstat_capture::LinkType;

/// What kind of transport the innermost IP packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum L4 {
    /// No IP packet found (ARP, LLDP, undecodable...).
    #[default]
    None,
    Tcp,
    Udp,
    Icmp,
    Icmpv6,
    /// Another IP protocol (`Decoded::proto` says which), or a TCP / UDP / ICMP
    /// packet whose transport header is cut short (an anomaly is counted). Ports are 0.
    Other,
}

/// Tunnel encapsulations that are decapsulated (the innermost flow is the flow).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TunnelKind {
    #[default]
    None,
    Gre,
    Erspan,
    Vxlan,
    /// VXLAN-GPE (UDP 4790): VXLAN with a next-protocol field.
    VxlanGpe,
    Geneve,
    GtpU,
    Teredo,
    /// IPv4 in IPv4 (proto 4).
    IpIp,
    /// IPv6 in IPv4 (proto 41).
    SixInFour,
    /// IPv4 in IPv6.
    FourInSix,
    /// IPv6 in IPv6.
    SixInSix,
    /// MPLS over UDP (RFC 7510, port 6635).
    MplsUdp,
}

impl TunnelKind {
    pub fn name(self) -> &'static str {
        match self {
            TunnelKind::None => "-",
            TunnelKind::Gre => "gre",
            TunnelKind::Erspan => "erspan",
            TunnelKind::Vxlan => "vxlan",
            TunnelKind::VxlanGpe => "vxlan-gpe",
            TunnelKind::Geneve => "geneve",
            TunnelKind::GtpU => "gtpu",
            TunnelKind::Teredo => "teredo",
            TunnelKind::IpIp => "ipip",
            TunnelKind::SixInFour => "6in4",
            TunnelKind::FourInSix => "4in6",
            TunnelKind::SixInSix => "6in6",
            TunnelKind::MplsUdp => "mpls-udp",
        }
    }
}

/// The innermost tunnel a packet came out of, with its id where the tunnel has one
/// (VXLAN/Geneve VNI, GTP-U TEID, GRE key, PPTP call id, ERSPAN session id), else 0.
///
/// When what a tunnel carries is not an IP packet (ARP or STP mirrored by ERSPAN, a
/// VXLAN payload that does not parse...), the packet is the flow of the last IP header
/// that parsed — the outer one — and `tunnel` is the tunnel *that* header came out of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Tunnel {
    pub kind: TunnelKind,
    pub id: u32,
}

/// Where a packet stands with respect to IP fragmentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fragment {
    /// Not a fragment.
    #[default]
    No,
    /// First fragment (offset 0, more fragments): carries the ports.
    First,
    /// A later fragment whose first fragment was seen: ports filled in from the table.
    Later,
    /// A later fragment whose first was not seen (yet): its own IP pair, `l4` after
    /// its protocol (`Tcp`, `Udp`, `Icmp`, ..., `Other`) but ports 0, default `tcp`.
    Orphan,
    /// A fragment of a TCP segment that is itself fragmented (the datagram carrying the
    /// TCP header directly), before the one that completes it, the first included: the
    /// segment is accounted once, at its completion, so `tcp` and `tcp_opts` are
    /// default and `payload_len` is 0 here (ports and addresses are the flow's).
    TcpHeld,
    /// The fragment that completes such a TCP segment: `tcp` and `tcp_opts` are the
    /// first fragment's header, `payload_len` the whole segment's payload. Its bytes are
    /// spread over the fragments; `payload_offset` points at this frame's share.
    TcpComplete,
}

/// TCP header fields the analyzers need (valid when `Decoded::l4 == L4::Tcp` and
/// `Decoded::fragment` is `No`, `First` or `TcpComplete`; all zero for later, orphan
/// and held fragments, which carry no TCP header to account).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TcpFields {
    pub seq: u32,
    pub ack: u32,
    /// Flag bits as on the wire: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10,
    /// URG 0x20, ECE 0x40, CWR 0x80.
    pub flags: u8,
    /// Raw (unscaled) window.
    pub window: u16,
    /// Header length in bytes (data offset × 4), as on the wire (may be below 20 in
    /// a bad segment; the payload is then taken to start 20 bytes in). Options are at
    /// `frame[l4_offset + 20 .. payload_offset]`.
    pub hdr_len: u8,
}

impl TcpFields {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
}

/// Everything about one frame that the engine above needs, in a fixed-size value.
///
/// Addresses are the innermost IP header's. IPv4 addresses are stored in the low 32
/// bits of the `u128` (network order read as a big-endian integer), so
/// `Ipv4Addr::from(src as u32)` gives the address back.
///
/// Offsets are into the frame given to [`Decoder::decode`] and never past its end
/// (nor past the end of the IP packet), so `&frame[payload_offset as usize..]` is
/// always valid; the captured payload is its first `payload_len` bytes at most (a
/// snaplen may have cut it).
///
/// Later fragments (`fragment == Later`) carry the flow of their first fragment
/// (addresses, protocol, ports, tunnel: the innermost flow even when the outer
/// datagram was the fragmented one), their own TTL, `l4_offset` 0 and
/// `payload_offset` at the fragment's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Decoded {
    pub l4: L4,
    /// 4 or 6 for the innermost IP header; 0 when there is none.
    pub ip_version: u8,
    /// IP protocol number of the innermost header (after IPv6 extension headers).
    pub proto: u8,
    pub src: u128,
    pub dst: u128,
    /// Ports for TCP/UDP; 0 otherwise.
    pub sport: u16,
    pub dport: u16,
    /// TTL / hop limit of the innermost IP header.
    pub ttl: u8,
    /// Length of the innermost IP packet, header included, from its header (IPv4
    /// total length, IPv6 40 + payload length; the captured length where the header
    /// says 0); for a later fragment, its own.
    pub ip_len: u32,
    pub fragment: Fragment,
    pub tunnel: Tunnel,
    pub tcp: TcpFields,
    /// Offset in the frame of the L4 header (0 when there is none; for `L4::Other`,
    /// the start of the IP payload).
    pub l4_offset: u32,
    /// Offset in the frame of the L4 payload (for `L4::Other`, of the IP payload).
    pub payload_offset: u32,
    /// L4 payload length according to the IP header (so it is right even when the
    /// capture was cut by a snaplen); for fragments, this fragment's share.
    pub payload_len: u32,
    /// The innermost packet is an ICMP error quoting another packet.
    pub icmp_error: bool,
    /// ICMP / ICMPv6 type and code (when `l4` is `Icmp` / `Icmpv6`), else 0.
    pub icmp_type: u8,
    pub icmp_code: u8,
    /// The TCP options the analyzers use (when `l4` is `Tcp` and the header was there).
    pub tcp_opts: TcpOptions,
}

/// TCP options the analyzers use: MSS (RFC 9293 §3.2, kind 2), window scale and
/// timestamps (RFC 7323, kinds 3 and 8), SACK (RFC 2018, kinds 4 and 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TcpOptions {
    /// Maximum segment size; 0 when absent.
    pub mss: u16,
    /// Window scale shift (capped at 14 as RFC 7323 §2.3 says); absent when
    /// `has_wscale` is false.
    pub wscale: u8,
    pub has_wscale: bool,
    /// SACK permitted.
    pub sack_perm: bool,
    /// SACK blocks carried by this segment.
    pub sack_blocks: u8,
    /// Timestamps option present, with its values.
    pub has_ts: bool,
    pub ts_val: u32,
    pub ts_ecr: u32,
}

impl TcpOptions {
    /// Reads the options of one segment. Never fails: a malformed option list ends
    /// the reading (what was read stands), as a receiver would stop parsing there.
    #[inline]
    pub fn parse(mut b: &[u8]) -> TcpOptions {
        let mut o = TcpOptions::default();
        while let Some(&kind) = b.first() {
            match kind {
                0 => break,
                1 => {
                    b = &b[1..];
                    continue;
                }
                _ => {}
            }
            let Some(&len) = b.get(1) else { break };
            let len = len as usize;
            let Some(body) = b.get(2..len.max(2)).filter(|_| len >= 2) else { break };
            match (kind, body.len()) {
                (2, 2) => o.mss = u16::from_be_bytes([body[0], body[1]]),
                (3, 1) => {
                    o.wscale = body[0].min(14);
                    o.has_wscale = true;
                }
                (4, 0) => o.sack_perm = true,
                (5, n) => o.sack_blocks = (n / 8) as u8,
                (8, 8) => {
                    o.has_ts = true;
                    o.ts_val = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
                    o.ts_ecr = u32::from_be_bytes([body[4], body[5], body[6], body[7]]);
                }
                _ => {}
            }
            b = &b[len..];
        }
        o
    }
}

/// Settings of the decoder.
#[derive(Clone, Copy, Debug)]
pub struct DecodeConfig {
    /// Capacity of the fragment table (datagrams whose first fragment was seen).
    pub fragment_slots: usize,
    /// Packet time after which a fragment table entry is dropped, in ns. 60 s by
    /// default: RFC 8200 §4.5 lets an IPv6 datagram's fragments arrive over 60 s, and
    /// RFC 1122 §3.3.2 recommends 60 to 120 s for IPv4.
    pub fragment_timeout_ns: u64,
    /// Most bytes the buffers of fragmented UDP and TCP datagrams whose payload is being
    /// reassembled hold together (see [`Decoder::reassembled`]). 4 MiB by default: a
    /// datagram usually completes within microseconds of its first fragment, and 4 MiB
    /// holds a thousand 4 KiB DNSSEC answers at once, or 64 datagrams of the largest size.
    pub reassembly_bytes: usize,
    /// Deepest nesting of tunnels followed.
    pub max_tunnel_depth: u8,
}

impl Default for DecodeConfig {
    fn default() -> Self {
        DecodeConfig {
            fragment_slots: 1024,
            fragment_timeout_ns: 60_000_000_000,
            reassembly_bytes: 4 << 20,
            max_tunnel_depth: 4,
        }
    }
}

mod anomaly;
mod decoder;
mod fragment;
mod turns;
pub mod wire;

pub use anomaly::{Anomalies, Anomaly};
pub use decoder::Decoder;
pub use turns::SharedFrags;

#[cfg(test)]
mod tests {
    use super::TcpOptions;

    #[test]
    fn tcp_options_of_a_syn_and_of_a_data_segment() {
        // Linux's SYN: MSS 1460, SACK permitted, timestamps, NOP, window scale 7.
        let syn = [2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7];
        let o = TcpOptions::parse(&syn);
        assert_eq!(o.mss, 1460);
        assert!(o.sack_perm && o.has_ts && o.has_wscale);
        assert_eq!((o.wscale, o.ts_val, o.ts_ecr), (7, 1, 0));
        // NOP NOP timestamps, then a SACK option with two blocks.
        let ack = [1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 8, 1, 1, 5, 18, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4];
        let o = TcpOptions::parse(&ack);
        assert_eq!((o.has_ts, o.ts_val, o.ts_ecr, o.sack_blocks), (true, 9, 8, 2));
        assert_eq!(o.mss, 0);
        assert!(!o.has_wscale);
    }

    #[test]
    fn malformed_option_lists_stop_without_panicking() {
        for b in [&[2u8][..], &[2, 1], &[2, 0, 5], &[3, 3], &[8, 10, 0], &[5, 200, 1], &[3, 3, 200]] {
            let o = TcpOptions::parse(b);
            assert!(o.wscale <= 14);
        }
        // A window scale above 14 is taken as 14 (RFC 7323 §2.3).
        assert_eq!(TcpOptions::parse(&[3, 3, 200]).wscale, 14);
    }
}
