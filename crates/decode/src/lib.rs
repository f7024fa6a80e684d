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
    /// Another IP protocol (`Decoded::proto` says which), or a later fragment whose
    /// first fragment was never seen.
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
/// (VXLAN/Geneve VNI, GTP-U TEID, GRE key, ERSPAN session id), else 0.
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
    /// A later fragment whose first was not seen (yet): no ports, `l4` is `Other`.
    Orphan,
}

/// TCP header fields the analyzers need (valid when `Decoded::l4 == L4::Tcp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TcpFields {
    pub seq: u32,
    pub ack: u32,
    /// Flag bits as on the wire: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10,
    /// URG 0x20, ECE 0x40, CWR 0x80.
    pub flags: u8,
    /// Raw (unscaled) window.
    pub window: u16,
    /// Header length in bytes (data offset × 4).
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
    pub fragment: Fragment,
    pub tunnel: Tunnel,
    pub tcp: TcpFields,
    /// Offset in the frame of the L4 header (0 when there is none).
    pub l4_offset: u32,
    /// Offset in the frame of the L4 payload.
    pub payload_offset: u32,
    /// L4 payload length according to the IP header (so it is right even when the
    /// capture was cut by a snaplen); for fragments, this fragment's share.
    pub payload_len: u32,
    /// The innermost packet is an ICMP error quoting another packet.
    pub icmp_error: bool,
}

/// Settings of the decoder.
#[derive(Clone, Copy, Debug)]
pub struct DecodeConfig {
    /// Capacity of the fragment table (datagrams whose first fragment was seen).
    pub fragment_slots: usize,
    /// Packet time after which a fragment table entry is dropped, in ns.
    pub fragment_timeout_ns: u64,
    /// Deepest nesting of tunnels followed.
    pub max_tunnel_depth: u8,
}

impl Default for DecodeConfig {
    fn default() -> Self {
        DecodeConfig {
            fragment_slots: 1024,
            fragment_timeout_ns: 30_000_000_000,
            max_tunnel_depth: 4,
        }
    }
}

mod anomaly;
mod decoder;
mod fragment;
pub mod wire;

pub use anomaly::{Anomalies, Anomaly};
pub use decoder::Decoder;
