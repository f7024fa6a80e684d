//! Named per-packet problems. Each is counted; none is an error.

macro_rules! anomalies {
    ($($(#[doc = $doc:literal])* $variant:ident => $name:literal,)*) => {
        /// A named problem met while decoding a frame.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Anomaly {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Anomaly {
            /// Every anomaly, in declaration order.
            pub const ALL: &'static [Anomaly] = &[$(Anomaly::$variant,)*];

            /// The name used in the summary (`snake_case`, subsystem first).
            pub fn name(self) -> &'static str {
                match self {
                    $(Anomaly::$variant => $name,)*
                }
            }

            /// What the anomaly means: its doc comment (docs/METRICS.md lists them).
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Anomaly::$variant => concat!($($doc),*),)*
                }
            }
        }
    };
}

anomalies! {
    /// The link type is not one tapstat decodes.
    LinkUnsupported => "link_unsupported",
    /// The frame is shorter than its link-layer header.
    LinkTruncated => "link_truncated",
    /// An EtherType (or SLL protocol, GRE protocol type, BSD loopback address family,
    /// 802.3 length field) that is not IP: ARP, LLDP, STP... (not a problem, but the
    /// frame carries no flow of its own).
    EthertypeNotIp => "ethertype_not_ip",
    /// The IPv4 header is shorter than 20 bytes or its IHL points past the capture.
    Ipv4Truncated => "ipv4_truncated",
    /// IPv4 IHL below 5.
    Ipv4HlenTooSmall => "ipv4_hlen_too_small",
    /// IPv4 total length smaller than the header.
    Ipv4TotalLenTooSmall => "ipv4_total_len_too_small",
    /// IPv4 version field is not 4 where IPv4 was expected.
    Ipv4BadVersion => "ipv4_bad_version",
    /// The IPv6 header is cut short.
    Ipv6Truncated => "ipv6_truncated",
    /// IPv6 version field is not 6 where IPv6 was expected.
    Ipv6BadVersion => "ipv6_bad_version",
    /// An IPv6 extension header runs past the capture.
    Ipv6ExtTruncated => "ipv6_ext_truncated",
    /// More IPv6 extension headers than the decoder follows.
    Ipv6TooManyExt => "ipv6_too_many_ext",
    /// The TCP header is cut short (fewer than 20 bytes): `l4` is `Other`.
    TcpTruncated => "tcp_truncated",
    /// The UDP header is cut short: `l4` is `Other`.
    UdpTruncated => "udp_truncated",
    /// The ICMP header is cut short (fewer than 4 bytes): `l4` is `Other`.
    IcmpTruncated => "icmp_truncated",
    /// Bytes captured beyond what the outermost IP header says the packet holds are
    /// ignored (Ethernet padding of short frames and a 4-byte FCS are not counted).
    IpLenExceedsCapture => "ip_len_exceeds_capture",
    /// A later fragment whose first fragment was not seen: counted under its IP pair.
    FragmentOrphan => "fragment_orphan",
    /// The fragment table was full: its oldest entry was dropped.
    FragmentTableFull => "fragment_table_full",
    /// A fragmented UDP or TCP datagram whose payload was not reassembled for the
    /// application layer because a bound was reached: the reassembly buffers' total
    /// (`DecodeConfig::reassembly_bytes`, 4 MiB) or one datagram's (65,535 bytes). The
    /// application layer does not see that payload; the datagram is accounted as usual.
    FragmentReassemblyFull => "fragment_reassembly_full",
    /// A fragmented UDP or TCP datagram whose payload could not be put together for the
    /// application layer: a fragment cut short by the snaplen, more than 8 separate
    /// ranges of bytes at once, a fragment past the datagram's end, or a TCP segment
    /// whose fragments added up (copies included) before every byte had come. The
    /// application layer does not see that payload; the datagram is accounted as usual.
    FragmentReassemblyFailed => "fragment_reassembly_failed",
    /// More VLAN tags / MPLS labels than the decoder follows.
    TooManyLabels => "too_many_labels",
    /// Tunnels nested deeper than `max_tunnel_depth`: the packet is taken at that depth.
    TunnelTooDeep => "tunnel_too_deep",
    /// A tunnel header that does not parse: the packet is taken as the outer flow.
    TunnelMalformed => "tunnel_malformed",
    /// PPPoE session frame cut short or carrying a non-IP PPP protocol.
    PppoeNotIp => "pppoe_not_ip",
    /// A PPP frame (PPP link, PPTP GRE) cut short or carrying a non-IP protocol
    /// (LCP, compressed or encrypted data...).
    PppNotIp => "ppp_not_ip",
    /// What follows an MPLS label stack is neither IPv4, IPv6 nor a pseudowire control
    /// word.
    MplsNotIp => "mpls_not_ip",
    /// An IP header whose version nibble is neither 4 nor 6 where either was possible
    /// (raw IP link types, GTP-U, ERSPAN type III).
    IpBadVersion => "ip_bad_version",
    /// TCP data offset below 5: the header is taken as 20 bytes long.
    TcpHlenTooSmall => "tcp_hlen_too_small",
    /// TCP data offset longer than the segment the IP header describes.
    TcpHlenTooLarge => "tcp_hlen_too_large",
    /// An IPv4 authentication header cut short (or a chain of them too long).
    AhTruncated => "ah_truncated",
    /// UDP length field below 8 or above the IP payload: the IP payload is used.
    UdpLenInvalid => "udp_len_invalid",
}

/// Counters of anomalies, one per [`Anomaly`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anomalies {
    counts: [u64; Anomaly::ALL.len()],
}

impl Default for Anomalies {
    fn default() -> Self {
        Anomalies { counts: [0; Anomaly::ALL.len()] }
    }
}

impl Anomalies {
    #[inline]
    pub fn add(&mut self, a: Anomaly) {
        self.counts[a as usize] += 1;
    }

    pub fn get(&self, a: Anomaly) -> u64 {
        self.counts[a as usize]
    }

    /// Non-zero counters by name.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Anomaly::ALL.iter().map(|&a| (a.name(), self.counts[a as usize])).filter(|&(_, n)| n > 0)
    }

    pub fn merge(&mut self, other: &Anomalies) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += *b;
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}
