//! The bytes of the frames tests feed tapstat, built by hand so a test knows what every
//! field holds: Ethernet, VLAN / QinQ, MPLS, PPPoE, IPv4 (options, fragments), IPv6
//! (extension headers, fragments), TCP, UDP, ICMP, GRE, VXLAN, Geneve, GTP-U, the
//! Internet checksum ([`checksum`]), a few application payloads ([`app`]: DNS, TLS
//! hellos, SSH KEXINIT) and classic pcap files ([`mod@pcap`]). No dependencies, so every
//! crate of the workspace can use it in its tests (the decoder's included); the testkit
//! re-exports it as `tapstat_testkit::frames`.
//!
//! Every builder works from the inside out: it takes its payload and returns header +
//! payload, so a frame reads as its layering:
//!
//! ```
//! use tapstat_frames::*;
//!
//! let f = eth(0x0800, &ipv4(6, &tcp(40000, 443, b"hello")));
//! assert_eq!(f.len(), 60); // padded to the Ethernet minimum
//! let q = eth(0x88a8, &vlan(100, 0x8100, &vlan(10, 0x86dd, &ipv6(17, &udp(1, 2, b"x")))));
//! assert_eq!(&q[12..14], &[0x88, 0xa8]);
//! ```
//!
//! The short functions ([`eth`], [`ipv4`], [`ipv6`], [`tcp`], [`udp`], [`gre`]) build a
//! header with fixed values: documentation addresses (192.0.2.1 → 198.51.100.2,
//! 2001:db8::1 → 2001:db8::2), checksums 0 (the decoder does not check them). Where a
//! test needs another value it sets the field of the header's struct ([`Eth`],
//! [`Ipv4`], [`Ipv6`], [`Tcp`], [`Udp`], [`Gre`]) and calls its `build`:
//!
//! ```
//! use tapstat_frames::*;
//!
//! let first = Ipv4 { id: 77, mf: true, ..Ipv4::new(17) }.build(&[0; 16]);
//! assert_eq!(&first[4..8], &[0, 77, 0x20, 0]);
//! ```
//!
//! The integration tests write captures that other tools (tshark) read as well: their
//! headers come from [`Eth::plain`], [`Ipv4::between`] (the header checksum filled),
//! [`Ipv6::between`] and [`Tcp::segment`].

pub mod app;
pub mod pcap;

pub use app::*;
pub use pcap::*;

/// The source MAC address of [`eth`]'s frames.
pub const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
/// The destination MAC address of [`eth`]'s frames.
pub const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
/// The source address of [`Ipv4::new`] (TEST-NET-1).
pub const IP4_A: [u8; 4] = [192, 0, 2, 1];
/// The destination address of [`Ipv4::new`] (TEST-NET-2).
pub const IP4_B: [u8; 4] = [198, 51, 100, 2];

/// The parts one after the other.
pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// 2001:db8::`last` (documentation prefix).
pub fn v6(last: u16) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    a[14..].copy_from_slice(&last.to_be_bytes());
    a
}

/// The Internet checksum (RFC 1071) of `b`: the one's complement of the one's
/// complement sum of its 16-bit words (an odd last byte padded with 0).
pub fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = b.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

// ---------------------------------------------------------------------------------
// Link layer.

/// An Ethernet II header: destination, source, and the length a frame is padded to
/// (with zeros) when shorter.
#[derive(Clone, Copy, Debug)]
pub struct Eth {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    /// Frames shorter than this are padded with zeros (60: the Ethernet minimum
    /// without FCS; 0: never).
    pub min_len: usize,
}

impl Eth {
    /// [`MAC_A`] → [`MAC_B`], padded to 60 bytes.
    pub const fn new() -> Eth {
        Eth { dst: MAC_B, src: MAC_A, min_len: 60 }
    }

    /// 02:00:00:00:00:02 → 02:00:00:00:00:01, not padded: the frames of the
    /// integration tests' captures (the golden inputs among them).
    pub const fn plain() -> Eth {
        Eth { dst: [2, 0, 0, 0, 0, 1], src: [2, 0, 0, 0, 0, 2], min_len: 0 }
    }

    /// The header announcing `ethertype`, then `payload`, then padding.
    pub fn build(&self, ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = cat(&[&self.dst, &self.src, &ethertype.to_be_bytes(), payload]);
        if v.len() < self.min_len {
            v.resize(self.min_len, 0);
        }
        v
    }
}

impl Default for Eth {
    fn default() -> Eth {
        Eth::new()
    }
}

/// An Ethernet II frame of [`Eth::new`]: [`MAC_A`] → [`MAC_B`], padded to 60 bytes.
pub fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    Eth::new().build(ethertype, payload)
}

/// A VLAN tag's TCI (priority 0, VLAN `vid`) and the `inner` EtherType, before
/// `payload`; the tag's TPID is the EtherType before it: `eth(0x8100, &vlan(5, 0x0800,
/// &ip))`, QinQ `eth(0x88a8, &vlan(100, 0x8100, &vlan(10, 0x0800, &ip)))`.
pub fn vlan(vid: u16, inner: u16, payload: &[u8]) -> Vec<u8> {
    cat(&[&(vid & 0x0fff).to_be_bytes(), &inner.to_be_bytes(), payload])
}

/// An MPLS label stack (`labels` in order, the last one bottom of stack, TC 0, TTL 64)
/// before `payload`.
pub fn mpls(labels: &[u32], payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        let bottom = u32::from(i + 1 == labels.len());
        v.extend((l << 12 | bottom << 8 | 64).to_be_bytes());
    }
    v.extend(payload);
    v
}

/// A PPPoE session header (session 0x1234) and the PPP protocol `ppp_proto` (0x0021:
/// IPv4, 0x0057: IPv6) before `payload`.
pub fn pppoe(ppp_proto: u16, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() + 2) as u16;
    cat(&[&[0x11, 0x00, 0x12, 0x34], &len.to_be_bytes(), &ppp_proto.to_be_bytes(), payload])
}

// ---------------------------------------------------------------------------------
// IPv4.

/// An IPv4 header (TOS 0).
#[derive(Clone, Debug)]
pub struct Ipv4 {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub proto: u8,
    pub ttl: u8,
    pub id: u16,
    /// The don't-fragment flag.
    pub df: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_off: u16,
    /// The more-fragments flag.
    pub mf: bool,
    /// Options (a multiple of 4 bytes).
    pub options: Vec<u8>,
    /// Total length written instead of the header's and payload's (None: theirs).
    pub total_len: Option<u16>,
    /// Whether the header checksum is computed (false: 0).
    pub checksum: bool,
}

impl Ipv4 {
    /// [`IP4_A`] → [`IP4_B`], TTL 64, id 0x1234, not fragmented, checksum 0.
    pub fn new(proto: u8) -> Ipv4 {
        Ipv4 {
            src: IP4_A,
            dst: IP4_B,
            proto,
            ttl: 64,
            id: 0x1234,
            df: false,
            frag_off: 0,
            mf: false,
            options: Vec::new(),
            total_len: None,
            checksum: false,
        }
    }

    /// `src` → `dst`, TTL 64, id 1, not fragmented, the header checksum filled: the
    /// packets of the integration tests' captures.
    pub fn between(src: [u8; 4], dst: [u8; 4], proto: u8) -> Ipv4 {
        Ipv4 { src, dst, id: 1, checksum: true, ..Ipv4::new(proto) }
    }

    /// The header, then `payload`.
    pub fn build(&self, payload: &[u8]) -> Vec<u8> {
        let hl = 20 + self.options.len();
        assert_eq!(hl & 3, 0, "IPv4 options are a multiple of 4 bytes");
        let total = self.total_len.unwrap_or((hl + payload.len()) as u16);
        let ff = (self.frag_off / 8) | if self.mf { 0x2000 } else { 0 } | if self.df { 0x4000 } else { 0 };
        let mut h = vec![0x40 | (hl / 4) as u8, 0];
        h.extend(total.to_be_bytes());
        h.extend(self.id.to_be_bytes());
        h.extend(ff.to_be_bytes());
        h.extend([self.ttl, self.proto, 0, 0]);
        h.extend(self.src);
        h.extend(self.dst);
        h.extend(&self.options);
        if self.checksum {
            let c = checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
        }
        h.extend(payload);
        h
    }
}

/// An IPv4 packet of [`Ipv4::new`]: [`IP4_A`] → [`IP4_B`], checksum 0.
pub fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    Ipv4::new(proto).build(payload)
}

// ---------------------------------------------------------------------------------
// IPv6.

/// An IPv6 header (traffic class and flow label 0).
#[derive(Clone, Copy, Debug)]
pub struct Ipv6 {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    /// The next header.
    pub nh: u8,
    pub hop_limit: u8,
    /// Payload length written instead of the payload's (None: its length).
    pub plen: Option<u16>,
}

impl Ipv6 {
    /// 2001:db8::1 → 2001:db8::2, hop limit 61.
    pub fn new(nh: u8) -> Ipv6 {
        Ipv6 { src: v6(1), dst: v6(2), nh, hop_limit: 61, plen: None }
    }

    /// `src` → `dst`, hop limit 64: the packets of the integration tests' captures.
    pub fn between(src: [u8; 16], dst: [u8; 16], nh: u8) -> Ipv6 {
        Ipv6 { src, dst, hop_limit: 64, ..Ipv6::new(nh) }
    }

    /// The header, then `payload` (extension headers included).
    pub fn build(&self, payload: &[u8]) -> Vec<u8> {
        let plen = self.plen.unwrap_or(payload.len() as u16);
        let mut h = vec![0x60, 0, 0, 0];
        h.extend(plen.to_be_bytes());
        h.extend([self.nh, self.hop_limit]);
        h.extend(self.src);
        h.extend(self.dst);
        h.extend(payload);
        h
    }
}

/// An IPv6 packet of [`Ipv6::new`]: 2001:db8::1 → 2001:db8::2.
pub fn ipv6(nh: u8, payload: &[u8]) -> Vec<u8> {
    Ipv6::new(nh).build(payload)
}

/// A generic IPv6 extension header of `units8` × 8 bytes (hop-by-hop, routing,
/// destination options), PadN-filled, announcing `nh`; its payload follows it.
pub fn ext(nh: u8, units8: u8) -> Vec<u8> {
    let len = usize::from(units8) * 8;
    let mut h = vec![nh, units8 - 1];
    h.resize(len, 0);
    if len > 2 {
        h[2] = 1; // PadN
        h[3] = (len - 4) as u8;
    }
    h
}

/// An authentication header (RFC 4302) announcing `nh`, with an ICV of `icv_words` × 4
/// bytes of 0xaa.
pub fn ah(nh: u8, icv_words: u8) -> Vec<u8> {
    let len = 12 + usize::from(icv_words) * 4;
    let mut h = vec![nh, (len / 4 - 2) as u8];
    h.resize(len, 0xaa);
    h
}

/// An IPv6 fragment header (RFC 8200 §4.5) announcing `nh`: fragment offset `offset`
/// (bytes, a multiple of 8), the M flag `more`, identification `id`. A fragment is
/// `Ipv6 { .. }.build(&cat(&[&frag6(..), share]))` with next header 44.
pub fn frag6(nh: u8, offset: u16, more: bool, id: u32) -> Vec<u8> {
    let om = (offset & 0xfff8) | u16::from(more);
    cat(&[&[nh, 0], &om.to_be_bytes(), &id.to_be_bytes()])
}

// ---------------------------------------------------------------------------------
// Transport.

/// A TCP header (urgent pointer 0, checksum 0).
#[derive(Clone, Debug)]
pub struct Tcp {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    /// Options (a multiple of 4 bytes).
    pub options: Vec<u8>,
}

impl Tcp {
    /// Sequence number 1000, acknowledgment 2000, PSH|ACK, window 8192, no options.
    pub fn new(sport: u16, dport: u16) -> Tcp {
        Tcp { sport, dport, seq: 1000, ack: 2000, flags: 0x18, window: 8192, options: Vec::new() }
    }

    /// The given numbers and flags, window 65535, no options: the segments of the
    /// integration tests' captures.
    pub fn segment(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8) -> Tcp {
        Tcp { seq, ack, flags, window: 0xffff, ..Tcp::new(sport, dport) }
    }

    /// The header, then `payload`.
    pub fn build(&self, payload: &[u8]) -> Vec<u8> {
        let hl = 20 + self.options.len();
        assert_eq!(hl & 3, 0, "TCP options are a multiple of 4 bytes");
        let mut h = Vec::new();
        h.extend(self.sport.to_be_bytes());
        h.extend(self.dport.to_be_bytes());
        h.extend(self.seq.to_be_bytes());
        h.extend(self.ack.to_be_bytes());
        h.extend([((hl / 4) as u8) << 4, self.flags]);
        h.extend(self.window.to_be_bytes());
        h.extend([0, 0, 0, 0]);
        h.extend(&self.options);
        h.extend(payload);
        h
    }
}

/// A TCP segment of [`Tcp::new`]: sequence 1000, acknowledgment 2000, PSH|ACK.
pub fn tcp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    Tcp::new(sport, dport).build(payload)
}

/// A UDP header (checksum 0).
#[derive(Clone, Copy, Debug)]
pub struct Udp {
    pub sport: u16,
    pub dport: u16,
    /// Length written instead of the header's and payload's (None: theirs).
    pub len: Option<u16>,
}

impl Udp {
    pub fn new(sport: u16, dport: u16) -> Udp {
        Udp { sport, dport, len: None }
    }

    /// The header, then `payload`.
    pub fn build(&self, payload: &[u8]) -> Vec<u8> {
        let len = self.len.unwrap_or((8 + payload.len()) as u16);
        cat(&[&self.sport.to_be_bytes(), &self.dport.to_be_bytes(), &len.to_be_bytes(), &[0, 0], payload])
    }
}

/// A UDP datagram (checksum 0).
pub fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    Udp::new(sport, dport).build(payload)
}

/// An ICMP (or ICMPv6) message of `msg_type` and `code`, identifier 1, sequence `seq`
/// (checksum 0); for an error, `payload` is the quoted packet.
pub fn icmp(msg_type: u8, code: u8, seq: u16, payload: &[u8]) -> Vec<u8> {
    cat(&[&[msg_type, code, 0, 0, 0, 1], &seq.to_be_bytes(), payload])
}

// ---------------------------------------------------------------------------------
// Tunnels.

/// A GRE header (RFC 2784 / 2890; version 1: PPTP's enhanced GRE).
#[derive(Clone, Copy, Debug)]
pub struct Gre {
    /// The protocol type (an EtherType).
    pub proto: u16,
    /// The C flag: a checksum field (written 0) and a reserved one.
    pub csum: bool,
    /// The K flag and the key (PPTP: payload length and call id).
    pub key: Option<u32>,
    /// The S flag and the sequence number.
    pub seq: Option<u32>,
    /// The version (0, or 1 for PPTP).
    pub version: u8,
}

impl Gre {
    /// Version 0, no checksum, key or sequence number.
    pub fn new(proto: u16) -> Gre {
        Gre { proto, csum: false, key: None, seq: None, version: 0 }
    }

    /// The header, then `payload`.
    pub fn build(&self, payload: &[u8]) -> Vec<u8> {
        let mut fl = u16::from(self.version & 7);
        let mut opt = Vec::new();
        if self.csum {
            fl |= 0x8000;
            opt.extend([0, 0, 0, 0]);
        }
        if let Some(k) = self.key {
            fl |= 0x2000;
            opt.extend(k.to_be_bytes());
        }
        if let Some(s) = self.seq {
            fl |= 0x1000;
            opt.extend(s.to_be_bytes());
        }
        cat(&[&fl.to_be_bytes(), &self.proto.to_be_bytes(), &opt, payload])
    }
}

/// A GRE version 0 header carrying `proto` (an EtherType), with the key `key` if given.
pub fn gre(proto: u16, key: Option<u32>, payload: &[u8]) -> Vec<u8> {
    Gre { key, ..Gre::new(proto) }.build(payload)
}

/// A VXLAN header (RFC 7348) with VNI `vni` before `payload` (an Ethernet frame).
pub fn vxlan(vni: u32, payload: &[u8]) -> Vec<u8> {
    cat(&[&[0x08, 0, 0, 0], &(vni << 8).to_be_bytes(), payload])
}

/// A Geneve header (RFC 8926) carrying `proto` (an EtherType) with VNI `vni` and the
/// option bytes `options` (a multiple of 4), before `payload`.
pub fn geneve(proto: u16, vni: u32, options: &[u8], payload: &[u8]) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0, "Geneve options are a multiple of 4 bytes");
    let words = (options.len() / 4) as u8;
    cat(&[&[words & 0x3f, 0], &proto.to_be_bytes(), &(vni << 8).to_be_bytes(), options, payload])
}

/// A GTP-U header (version 1) of `msg_type` (255: G-PDU) with TEID `teid` and, if
/// given, the sequence number `seq` (then N-PDU number and next extension type 0),
/// before `payload`.
pub fn gtpu(msg_type: u8, teid: u32, seq: Option<u16>, payload: &[u8]) -> Vec<u8> {
    let mut flags = 0x30u8;
    let mut opt = Vec::new();
    if let Some(s) = seq {
        flags |= 0x02;
        opt.extend(s.to_be_bytes());
        opt.extend([0, 0]);
    }
    let len = (opt.len() + payload.len()) as u16;
    cat(&[&[flags, msg_type], &len.to_be_bytes(), &teid.to_be_bytes(), &opt, payload])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksummed_ipv4_header_sums_to_zero() {
        let h = Ipv4::between([10, 0, 0, 1], [10, 0, 0, 2], 6).build(&[]);
        assert_eq!(checksum(&h), 0);
        let f = Ipv4 { id: 7, frag_off: 16, mf: true, ..Ipv4::between([10, 0, 0, 1], [10, 0, 0, 2], 17) }.build(&[1]);
        assert_eq!((checksum(&f[..20]), &f[4..8]), (0, &[0, 7, 0x20, 2][..]));
    }

    #[test]
    fn lengths_and_flags() {
        assert_eq!(eth(0x0800, &[]).len(), 60);
        assert_eq!(Eth::plain().build(0x0800, &[]).len(), 14);
        assert_eq!(&ipv6(17, &[0; 9])[4..8], &[0, 9, 17, 61]);
        assert_eq!(&udp(1, 2, b"abc")[4..6], &[0, 11]);
        assert_eq!(&mpls(&[16, 17], &[]), &[0, 1, 0, 64, 0, 1, 0x11, 64]);
        let g = Gre { key: Some(0x0008_0005), seq: Some(1), version: 1, ..Gre::new(0x880b) }.build(&[]);
        assert_eq!(&g[..4], &[0x30, 0x01, 0x88, 0x0b]);
        assert_eq!(&geneve(0x6558, 77, &[1, 2, 1, 0], &[])[..4], &[1, 0, 0x65, 0x58]);
        assert_eq!(&gtpu(255, 1, Some(7), &[9])[..4], &[0x32, 255, 0, 5]);
        assert_eq!(&Ipv4 { df: true, ..Ipv4::new(6) }.build(&[])[6..8], &[0x40, 0]);
    }
}
