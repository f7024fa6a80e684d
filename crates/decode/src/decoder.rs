//! The frame decoder: link layer → VLAN / MPLS / PPPoE → IP → transport, through
//! tunnels, to the innermost flow.
//!
//! [`Decoder::decode`] is straight-line parsing over the frame's bytes with bounds
//! checks; it never allocates, never fails and never panics. Its walk:
//!
//! 1. the link layer gives a first [`Layer`] (Ethernet, an EtherType, PPP, or IP);
//! 2. `walk_to_ip` follows VLAN tags, MPLS labels, PPPoE and Cisco MetaData to an IP header;
//! 3. `ipv4` / `ipv6` read the IP header (and IPv6 extension headers), handle
//!    fragments, then `transport` reads TCP / UDP / ICMP, or finds a tunnel;
//! 4. a tunnel gives the next [`Layer`], and the walk starts again at step 2 inside
//!    it, up to `max_tunnel_depth` times. Each IP layer that parses replaces the
//!    result; when what a tunnel holds is not an IP packet (ARP mirrored by ERSPAN, a
//!    junk VXLAN payload...), the last IP layer that parsed — the outer packet — is the
//!    flow, as in tshark's attribution (the innermost IP header is the flow's).
//!
//! Every problem met is counted in [`Decoder::anomalies`].
//!
//! Fragments: see [`crate::fragment`]. A first fragment is decoded as usual (the
//! transport header is in it) and the flow it resolves to is remembered; a later
//! fragment gets that flow back (addresses, protocol, ports, tunnel), `fragment:
//! Later`, its own TTL, default [`TcpFields`] (a later fragment has no TCP header),
//! `l4_offset` 0, `payload_offset` at the fragment's data and `payload_len` this
//! fragment's share. A later fragment whose first was not seen is an `Orphan`: its
//! own IP addresses, `l4` after the protocol (TCP, UDP, ICMP...) but ports 0.
//!
//! A TCP segment whose own datagram is fragmented is held: all its fragments, the
//! first included, are `TcpHeld` (no TCP fields, `payload_len` 0), except the one after
//! which every byte of the datagram has come, `TcpComplete`, which carries the first
//! fragment's TCP header and options and the whole segment's payload length.
//!
//! The payload of a datagram that carries its flow's own UDP or TCP header is also
//! reassembled, within the table's bounds: after the fragment that completes it (a
//! `Later` one for UDP, `TcpComplete` for TCP), [`Decoder::reassembled`] holds the whole
//! transport payload, which no single frame has.

use crate::fragment::{FragKey, FragTable, Share};
use crate::turns::SharedFrags;
use crate::wire::ethernet::{self, ethertype};
use crate::wire::{
    geneve, gre, gtpu, icmp, ieee80211, ipv4, ipv6, llc, mpls, null, pppoe, sll, tcp, teredo, udp, vxlan, Error,
};
use crate::{
    Anomalies, Anomaly, DecodeConfig, Decoded, Fragment, LinkType, TcpFields, TcpOptions, Tunnel, TunnelKind, L4,
};
use std::sync::Arc;

/// Most VLAN tags plus MPLS labels followed in one link layer.
const MAX_LABELS: u32 = 8;
/// Most IPv6 extension headers followed.
const MAX_IPV6_EXT: u32 = 8;

/// IP protocol numbers (IANA "Assigned Internet Protocol Numbers").
mod proto {
    pub const ICMP: u8 = 1;
    pub const IPIP: u8 = 4;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    pub const IPV6: u8 = 41;
    pub const GRE: u8 = 47;
    pub const ICMPV6: u8 = 58;
}

/// Link types decoded beyond those named in [`LinkType`].
mod link {
    /// LINKTYPE_PPP: PPP, optionally with HDLC-like address and control bytes.
    pub const PPP: u16 = 9;
    /// LINKTYPE_FDDI: FDDI MAC header, then LLC.
    pub const FDDI: u16 = 10;
    /// LINKTYPE_PPP_HDLC: PPP in HDLC-like framing.
    pub const PPP_HDLC: u16 = 50;
    /// LINKTYPE_C_HDLC: Cisco HDLC (address, control, EtherType).
    pub const C_HDLC: u16 = 104;
    /// LINKTYPE_IPNET: Solaris ipnet (24-byte header, family at byte 1).
    pub const IPNET: u16 = 226;
    /// LINKTYPE_NFLOG: Linux netfilter log (TLVs, one of which holds the IP packet).
    pub const NFLOG: u16 = 239;
}

/// What the next header is and where it starts in the frame.
#[derive(Clone, Copy, Debug)]
enum Layer {
    /// An Ethernet II header.
    Ether(usize),
    /// What an EtherType (or GRE / SLL / Geneve protocol type) announces.
    EtherType(u16, usize),
    /// A Cisco MetaData header in GRE's layout (the EtherType first).
    CiscoMetaGre(usize),
    /// An MPLS label stack.
    Mpls(usize),
    /// An IEEE 802.11 frame without FCS (Aruba's GRE).
    Wlan(usize),
    /// An IEEE 802.2 LLC header, SNAP for IP (802.11, FDDI).
    Llc(usize),
    /// A PPP protocol field; `true` when it came out of PPPoE.
    Ppp(usize, bool),
    /// An IP header whose version nibble says which.
    IpNibble(usize),
    Ipv4(usize),
    Ipv6(usize),
}

/// A tunnel found in a packet: what it is, and where its payload starts and ends.
struct Encap {
    kind: TunnelKind,
    id: u32,
    inner: Layer,
    /// End of the tunnel payload in the frame (the outer packet's end).
    end: usize,
}

/// Per-layer context.
#[derive(Clone, Copy)]
struct Ctx {
    ts_ns: u64,
    /// The outermost IP layer (where trailing bytes are checked).
    outer: bool,
}

/// The frame decoder. One per thread: it owns the fragment table and its counters.
pub struct Decoder {
    /// Anomalies met so far.
    pub anomalies: Anomalies,
    cfg: DecodeConfig,
    frags: FragTable,
    /// First fragments met in the frame being decoded (outer and inner datagrams may
    /// both be): the first `nfirsts` entries. Kept here, not on the stack, so a frame
    /// without fragments costs one store instead of clearing two keys.
    firsts: [FragKey; 2],
    /// Bytes of each first fragment's fragmentable part.
    firsts_len: [u32; 2],
    nfirsts: u8,
    /// The payload the last fragment decoded completed (see [`Decoder::reassembled`]).
    /// Set or cleared by every fragment, in `later_fragment` and `insert_firsts` (both
    /// outside the common path), so a frame that is no fragment costs nothing here.
    done: Option<Vec<u8>>,
    /// The fragment table shared with other decoders of the same input, handed over in
    /// turns (see [`crate::turns`]); `frags` is the table only while `holding`.
    shared: Option<Arc<SharedFrags>>,
    turn: u64,
    holding: bool,
}

impl Decoder {
    /// Decoders that decode the chunks of one input in parallel, sharing one fragment
    /// table in input order: each chunk is a turn ([`Decoder::begin_turn`],
    /// [`Decoder::end_turn`]). Returns the decoders and the shared table (to
    /// [`SharedFrags::abandon`] the order when the run stops).
    pub fn shared(cfg: DecodeConfig, n: usize) -> (Vec<Decoder>, Arc<SharedFrags>) {
        let shared = Arc::new(SharedFrags::new(FragTable::new(
            cfg.fragment_slots,
            cfg.fragment_timeout_ns,
            cfg.reassembly_bytes,
        )));
        let decoders = (0..n)
            .map(|_| {
                let mut d = Decoder::new_with(cfg, FragTable::new(0, cfg.fragment_timeout_ns, 0));
                d.shared = Some(shared.clone());
                d
            })
            .collect();
        (decoders, shared)
    }

    /// Starts turn `turn` (the sequence number of the chunk this decoder decodes next).
    pub fn begin_turn(&mut self, turn: u64) {
        self.turn = turn;
    }

    /// Ends the current turn: the shared fragment table goes back if this turn took it.
    pub fn end_turn(&mut self) {
        if let Some(s) = &self.shared {
            let table = self
                .holding
                .then(|| std::mem::replace(&mut self.frags, FragTable::new(0, self.cfg.fragment_timeout_ns, 0)));
            self.holding = false;
            s.end(self.turn, table);
        }
    }

    /// Takes the shared fragment table for this turn, once every earlier turn has
    /// ended (a no-op for a decoder with a table of its own).
    #[cold]
    fn take_frags(&mut self) {
        if let Some(s) = &self.shared {
            if !self.holding {
                self.frags = s.take(self.turn);
                self.holding = true;
            }
        }
    }

    fn new_with(cfg: DecodeConfig, frags: FragTable) -> Self {
        Decoder {
            anomalies: Anomalies::default(),
            frags,
            cfg,
            firsts: [FragKey::default(); 2],
            firsts_len: [0; 2],
            nfirsts: 0,
            done: None,
            shared: None,
            turn: 0,
            holding: false,
        }
    }

    /// A decoder; allocates the fragment table (the only allocation it makes).
    pub fn new(cfg: DecodeConfig) -> Self {
        Decoder::new_with(cfg, FragTable::new(cfg.fragment_slots, cfg.fragment_timeout_ns, cfg.reassembly_bytes))
    }

    /// The whole transport payload of the fragmented UDP datagram or TCP segment that
    /// the frame decoded last completed, when it was reassembled: valid after a frame
    /// whose [`Decoded::fragment`] is not `No` (it is then `Later` or `TcpComplete`),
    /// until the next frame. No frame holds these bytes: a UDP datagram's
    /// `payload_len` stays that fragment's share, a TCP segment's is the length of this.
    #[inline]
    pub fn reassembled(&self) -> Option<&[u8]> {
        self.done.as_deref()
    }

    /// [`Decoder::reassembled`], taken (for a packet that leaves the decoder's thread).
    #[inline]
    pub fn take_reassembled(&mut self) -> Option<Vec<u8>> {
        self.done.take()
    }

    /// The settings this decoder was made with.
    pub fn config(&self) -> &DecodeConfig {
        &self.cfg
    }

    #[inline]
    fn bad(&mut self, a: Anomaly) {
        self.anomalies.add(a);
    }

    /// Decodes one frame of link type `link` captured at `ts_ns` (packet time, used to
    /// expire fragment table entries). Never fails: problems are counted in
    /// [`Decoder::anomalies`] and the result says as much as could be decoded
    /// (`l4 == L4::None` when no IP packet was found).
    pub fn decode(&mut self, link: LinkType, frame: &[u8], ts_ns: u64) -> Decoded {
        let mut out = Decoded::default();
        self.decode_into(link, frame, ts_ns, &mut out);
        out
    }

    /// [`Decoder::decode`] into `out`, which is overwritten: where the caller keeps the
    /// result (the dispatcher's packet), the 160 bytes of a `Decoded` are not copied
    /// there afterwards.
    #[inline]
    pub fn decode_into(&mut self, link: LinkType, frame: &[u8], ts_ns: u64, out: &mut Decoded) {
        *out = Decoded::default();
        let Some(first) = self.link_layer(link, frame) else {
            return;
        };
        self.decode_layers(first, frame, ts_ns, out);
    }

    fn decode_layers(&mut self, first: Layer, frame: &[u8], ts_ns: u64, out: &mut Decoded) {
        // Each layer is decoded straight into `out`; only inside a tunnel is the outer
        // packet kept aside (in case no IP packet follows), so a plain packet's
        // `Decoded` is written once and never copied here.
        let mut outer: Option<Decoded> = None;
        let mut layer = first;
        let mut buf = frame;
        let mut depth = 0u8;
        self.nfirsts = 0;
        loop {
            let cx = Ctx { ts_ns, outer: depth == 0 };
            let next = match self.walk_to_ip(buf, layer) {
                Some(Layer::Ipv4(off)) => self.ipv4(buf, off, cx, out),
                Some(Layer::Ipv6(off)) => self.ipv6(buf, off, cx, out),
                _ => None,
            };
            if out.ip_version == 0 {
                // no IP packet here: what we had (the outer packet, if any) stands
                *out = outer.unwrap_or_default();
                break;
            }
            let Some(enc) = next else { break };
            if depth >= self.cfg.max_tunnel_depth {
                self.bad(Anomaly::TunnelTooDeep);
                break;
            }
            depth += 1;
            let tunnel = Tunnel { kind: enc.kind, id: enc.id };
            outer = Some(std::mem::replace(out, Decoded { tunnel, ..Decoded::default() }));
            layer = enc.inner;
            buf = buf.get(..enc.end).unwrap_or(buf);
        }
        if self.nfirsts > 0 {
            self.insert_firsts(out, frame, ts_ns);
        }
    }

    /// Remembers the flow of the first fragments met in this frame. A TCP segment
    /// whose own datagram is fragmented is held: it is accounted once, when the
    /// fragment that completes it comes (see [`Fragment::TcpHeld`]), so that sequence
    /// analysis sees the segment the receiver reassembles, not its first share. The
    /// payload of a datagram carrying its flow's own UDP or TCP header is reassembled
    /// (`frame` holds this fragment's share).
    #[cold]
    fn insert_firsts(&mut self, out: &mut Decoded, frame: &[u8], ts_ns: u64) {
        // a first fragment completes nothing (where the frame's flow is a later
        // fragment inside it, `later_fragment` has already said what that completes)
        if matches!(out.fragment, Fragment::No | Fragment::First) {
            self.done = None;
        }
        if out.fragment == Fragment::No {
            out.fragment = Fragment::First;
        }
        let mut held = false;
        self.take_frags();
        for i in 0..self.nfirsts as usize {
            let key = self.firsts[i];
            let own = matches!((out.l4, key.proto), (L4::Tcp, proto::TCP) | (L4::Udp, proto::UDP))
                && (key.src, key.dst, key.version) == (out.src, out.dst, out.ip_version);
            let hold = own && out.l4 == L4::Tcp;
            held |= hold;
            let share = own.then(|| Share {
                len: self.firsts_len[i],
                hold,
                payload: frame.get(out.payload_offset as usize..).unwrap_or_default(),
            });
            if self.frags.insert(key, out, share, ts_ns, &mut self.anomalies) {
                self.bad(Anomaly::FragmentTableFull);
            }
        }
        if held {
            out.fragment = Fragment::TcpHeld;
            out.tcp = TcpFields::default();
            out.tcp_opts = TcpOptions::default();
            out.payload_len = 0;
        }
    }

    /// The first layer after the link-layer header.
    #[inline]
    fn link_layer(&mut self, link: LinkType, f: &[u8]) -> Option<Layer> {
        let layer = match link.0 {
            1 => Layer::Ether(0),
            // DLT_RAW and its BSD numbers: the version nibble decides
            12 | 14 | 101 => Layer::IpNibble(0),
            // LINKTYPE_IPV4 / IPV6 holding the other version: counted, then decoded as
            // the version nibble says (as tshark does)
            228 => match f.first().map(|b| b >> 4) {
                Some(6) => {
                    self.bad(Anomaly::Ipv4BadVersion);
                    Layer::Ipv6(0)
                }
                _ => Layer::Ipv4(0),
            },
            229 => match f.first().map(|b| b >> 4) {
                Some(4) => {
                    self.bad(Anomaly::Ipv6BadVersion);
                    Layer::Ipv4(0)
                }
                _ => Layer::Ipv6(0),
            },
            113 => match sll::Header::new_checked(f) {
                Ok(h) => Layer::EtherType(h.protocol(), sll::HEADER_LEN),
                Err(_) => return self.link_short(),
            },
            276 => match sll::Header2::new_checked(f) {
                Ok(h) => Layer::EtherType(h.protocol(), sll::HEADER2_LEN),
                Err(_) => return self.link_short(),
            },
            0 | 108 => {
                let fam = if link.0 == 0 { null::null_family(f) } else { null::loop_family(f) };
                match fam {
                    Ok(null::Family::Ipv4) => Layer::Ipv4(null::HEADER_LEN),
                    Ok(null::Family::Ipv6) => Layer::Ipv6(null::HEADER_LEN),
                    Ok(null::Family::Other(_)) => {
                        self.bad(Anomaly::EthertypeNotIp);
                        return None;
                    }
                    Err(_) => return self.link_short(),
                }
            }
            link::PPP | link::PPP_HDLC => Layer::Ppp(0, false),
            // ANSI X3.139 frame control: format bits 01 are LLC frames (async or
            // sync); the others (SMT, MAC, tokens) carry no IP
            link::FDDI => match f.first() {
                Some(fc) if fc & 0x30 == 0x10 => Layer::Llc(llc::FDDI_HEADER_LEN),
                Some(_) => {
                    self.bad(Anomaly::EthertypeNotIp);
                    return None;
                }
                None => return self.link_short(),
            },
            link::C_HDLC => match f.get(2..4) {
                Some(t) => Layer::EtherType(u16::from_be_bytes([t[0], t[1]]), 4),
                None => return self.link_short(),
            },
            link::IPNET => match f.get(1) {
                // DL_IPNETINFO: version, family (AF_INET 2, Solaris AF_INET6 26), ...
                Some(2) if f.len() >= 24 => Layer::Ipv4(24),
                Some(26) if f.len() >= 24 => Layer::Ipv6(24),
                Some(_) if f.len() >= 24 => {
                    self.bad(Anomaly::EthertypeNotIp);
                    return None;
                }
                _ => return self.link_short(),
            },
            link::NFLOG => return self.nflog(f),
            _ => {
                self.bad(Anomaly::LinkUnsupported);
                return None;
            }
        };
        Some(layer)
    }

    #[cold]
    fn link_short(&mut self) -> Option<Layer> {
        self.bad(Anomaly::LinkTruncated);
        None
    }

    /// A link-level header that is cut short (`Truncated`), or that holds no IP
    /// (`Malformed`: an 802.11 management frame, an LLC that is not SNAP...).
    #[cold]
    fn not_ip_link(&mut self, e: Error) -> Option<Layer> {
        self.bad(match e {
            Error::Truncated => Anomaly::LinkTruncated,
            Error::Malformed => Anomaly::EthertypeNotIp,
        });
        None
    }

    /// LINKTYPE_NFLOG: family (1), version (1), resource id (2), then TLVs whose length
    /// and type are in the capturing host's byte order (little-endian in practice;
    /// big-endian is tried when that does not walk); the packet is TLV type 9
    /// (NFULA_PAYLOAD). Each TLV is padded to 4 bytes.
    fn nflog(&mut self, f: &[u8]) -> Option<Layer> {
        let Some(&family) = f.first() else { return self.link_short() };
        for big_endian in [false, true] {
            let mut off = 4;
            while let Some(h) = f.get(off..off + 4) {
                let (len, typ) = if big_endian {
                    (u16::from_be_bytes([h[0], h[1]]), u16::from_be_bytes([h[2], h[3]]))
                } else {
                    (u16::from_le_bytes([h[0], h[1]]), u16::from_le_bytes([h[2], h[3]]))
                };
                let len = usize::from(len);
                if len < 4 || off + len > f.len() {
                    break;
                }
                if typ & 0x7fff == 9 {
                    let at = off + 4;
                    return match family {
                        2 => Some(Layer::Ipv4(at)),
                        10 => Some(Layer::Ipv6(at)),
                        _ => Some(Layer::IpNibble(at)),
                    };
                }
                off += (len + 3) & !3;
            }
        }
        self.bad(Anomaly::EthertypeNotIp);
        None
    }

    /// Follows link-level headers (Ethernet, VLAN tags, MPLS, PPPoE / PPP, Cisco
    /// MetaData) from `layer` to an IP header: returns `Layer::Ipv4` or `Layer::Ipv6`.
    fn walk_to_ip(&mut self, f: &[u8], mut layer: Layer) -> Option<Layer> {
        let mut labels = 0u32;
        loop {
            layer = match layer {
                Layer::Ipv4(_) | Layer::Ipv6(_) => return Some(layer),
                Layer::IpNibble(off) => match f.get(off).map(|b| b >> 4) {
                    Some(4) => Layer::Ipv4(off),
                    Some(6) => Layer::Ipv6(off),
                    Some(_) => {
                        self.bad(Anomaly::IpBadVersion);
                        return None;
                    }
                    None => {
                        self.bad(Anomaly::LinkTruncated);
                        return None;
                    }
                },
                Layer::Ether(off) => match ethernet::Frame::new_checked(f.get(off..).unwrap_or_default()) {
                    Ok(e) => Layer::EtherType(e.ethertype(), off + ethernet::HEADER_LEN),
                    Err(_) => {
                        self.bad(Anomaly::LinkTruncated);
                        return None;
                    }
                },
                Layer::EtherType(t, off) => match t {
                    ethertype::IPV4 => Layer::Ipv4(off),
                    ethertype::IPV6 => Layer::Ipv6(off),
                    ethertype::VLAN | ethertype::QINQ | ethertype::QINQ_9100 | ethertype::QINQ_9200 => {
                        // IEEE 802.1Q §9.5 / 802.1ad: TCI then the next EtherType
                        labels += 1;
                        if labels > MAX_LABELS {
                            self.bad(Anomaly::TooManyLabels);
                            return None;
                        }
                        match ethernet::VlanTag::new_checked(f.get(off..).unwrap_or_default()) {
                            Ok(tag) => Layer::EtherType(tag.ethertype(), off + ethernet::VLAN_TAG_LEN),
                            Err(_) => {
                                self.bad(Anomaly::LinkTruncated);
                                return None;
                            }
                        }
                    }
                    ethertype::MPLS_UC | ethertype::MPLS_MC => Layer::Mpls(off),
                    ethertype::VNTAG => {
                        labels += 1;
                        if labels > MAX_LABELS {
                            self.bad(Anomaly::TooManyLabels);
                            return None;
                        }
                        match ethernet::vntag_ethertype(f.get(off..).unwrap_or_default()) {
                            Ok(t) => Layer::EtherType(t, off + ethernet::VNTAG_LEN),
                            Err(_) => {
                                self.bad(Anomaly::LinkTruncated);
                                return None;
                            }
                        }
                    }
                    ethertype::PPPOE_SESSION => {
                        // RFC 2516 §5.4: session stage, code 0, then a PPP frame
                        match pppoe::Header::new_checked(f.get(off..).unwrap_or_default()) {
                            Ok(h) if h.code() == 0 => Layer::Ppp(off + pppoe::HEADER_LEN, true),
                            _ => {
                                self.bad(Anomaly::PppoeNotIp);
                                return None;
                            }
                        }
                    }
                    ethertype::TEB => Layer::Ether(off),
                    ethertype::CISCO_METADATA => {
                        let b = f.get(off..).unwrap_or_default();
                        match ethernet::cisco_metadata_ethertype(b, false) {
                            Ok(t) => Layer::EtherType(t, off + ethernet::CISCO_METADATA_LEN),
                            Err(_) => {
                                self.bad(Anomaly::LinkTruncated);
                                return None;
                            }
                        }
                    }
                    _ => {
                        self.bad(Anomaly::EthertypeNotIp);
                        return None;
                    }
                },
                Layer::CiscoMetaGre(off) => {
                    let b = f.get(off..).unwrap_or_default();
                    match ethernet::cisco_metadata_ethertype(b, true) {
                        Ok(t) => Layer::EtherType(t, off + ethernet::CISCO_METADATA_LEN),
                        Err(_) => {
                            self.bad(Anomaly::TunnelMalformed);
                            return None;
                        }
                    }
                }
                Layer::Mpls(mut off) => {
                    // RFC 3032 §2.1: entries until the bottom-of-stack bit
                    loop {
                        labels += 1;
                        if labels > MAX_LABELS {
                            self.bad(Anomaly::TooManyLabels);
                            return None;
                        }
                        let Ok(e) = mpls::Entry::new_checked(f.get(off..).unwrap_or_default()) else {
                            self.bad(Anomaly::LinkTruncated);
                            return None;
                        };
                        off += mpls::ENTRY_LEN;
                        if e.bottom_of_stack() {
                            break;
                        }
                    }
                    // no protocol field: guess from the first nibble (RFC 4928 §1); 0 is
                    // a pseudowire control word (RFC 4385 §3) before an Ethernet frame
                    match f.get(off).map(|b| b >> 4) {
                        Some(4) => Layer::Ipv4(off),
                        Some(6) => Layer::Ipv6(off),
                        Some(0) => Layer::Ether(off + mpls::CONTROL_WORD_LEN),
                        _ => {
                            self.bad(Anomaly::MplsNotIp);
                            return None;
                        }
                    }
                }
                Layer::Wlan(off) => match ieee80211::data_body_offset(f.get(off..).unwrap_or_default()) {
                    Ok(n) => Layer::Llc(off + n),
                    Err(e) => return self.not_ip_link(e),
                },
                Layer::Llc(off) => match llc::snap_ethertype(f.get(off..).unwrap_or_default()) {
                    Ok(t) => Layer::EtherType(t, off + llc::SNAP_LEN),
                    Err(e) => return self.not_ip_link(e),
                },
                Layer::Ppp(off, from_pppoe) => match pppoe::ppp_protocol(f.get(off..).unwrap_or_default()) {
                    Ok((pppoe::protocol::IPV4, n)) => Layer::Ipv4(off + n),
                    Ok((pppoe::protocol::IPV6, n)) => Layer::Ipv6(off + n),
                    Ok((pppoe::protocol::MPLS_UC | pppoe::protocol::MPLS_MC, n)) => Layer::Mpls(off + n),
                    _ => {
                        self.bad(if from_pppoe { Anomaly::PppoeNotIp } else { Anomaly::PppNotIp });
                        return None;
                    }
                },
            };
        }
    }

    /// Bytes captured past the end of the outermost IP packet: Ethernet pads frames
    /// to 60 bytes (IEEE 802.3 §4.2.3.3: an IP packet shorter than 46 bytes is
    /// followed by padding, whatever link header the capture shows) and may keep its
    /// 4-byte FCS; more than that is counted.
    #[inline]
    fn check_trailer(&mut self, cx: Ctx, captured: usize, ip_len: usize) {
        const MIN_PAYLOAD: usize = ethernet::MIN_FRAME_LEN - ethernet::HEADER_LEN;
        if cx.outer && captured > ip_len + 4 {
            let padded = ip_len < MIN_PAYLOAD && captured <= MIN_PAYLOAD + 4;
            if !padded {
                self.bad(Anomaly::IpLenExceedsCapture);
            }
        }
    }

    /// Reads the IPv4 header at `off` into `d`, then what it carries.
    fn ipv4(&mut self, f: &[u8], off: usize, cx: Ctx, d: &mut Decoded) -> Option<Encap> {
        let b = f.get(off..).unwrap_or_default();
        if b.first().is_some_and(|v| v >> 4 != 4) {
            self.bad(Anomaly::Ipv4BadVersion);
            return None;
        }
        let ip = match ipv4::Packet::new_checked(b) {
            Ok(ip) => ip,
            Err(Error::Malformed) => {
                self.bad(Anomaly::Ipv4HlenTooSmall);
                return None;
            }
            Err(Error::Truncated) => {
                self.bad(Anomaly::Ipv4Truncated);
                return None;
            }
        };
        let hl = ip.header_len();
        let total = match usize::from(ip.total_length()) {
            // segmentation offload (TSO / BIG TCP) captures: the length is what we have
            0 => b.len(),
            t if t < hl => {
                self.bad(Anomaly::Ipv4TotalLenTooSmall);
                return None;
            }
            t => t,
        };
        self.check_trailer(cx, b.len(), total);
        let end = off + total.min(b.len());
        let f = f.get(..end).unwrap_or(f);

        let src = u128::from(u32::from_be_bytes(ip.source()));
        let dst = u128::from(u32::from_be_bytes(ip.destination()));
        let p = ip.protocol();
        d.ip_version = 4;
        d.src = src;
        d.dst = dst;
        d.ttl = ip.ttl();
        d.ip_len = total as u32;
        d.proto = p;
        let l4 = off + hl;
        let len = total - hl;

        // RFC 791 §3.2: offset > 0 is a later fragment; offset 0 with MF the first
        let mut first = false;
        if ip.more_fragments() || ip.fragment_offset() > 0 {
            let key = FragKey { src, dst, id: u32::from(ip.identification()), proto: p, version: 4 };
            if ip.fragment_offset() > 0 {
                self.later_fragment(key, f, l4, len, (ip.fragment_offset(), ip.more_fragments()), cx, d);
                return None;
            }
            self.note_first(key, len);
            d.fragment = Fragment::First;
            first = true;
        }
        // IPsec AH (RFC 4302 §3.1) sits between IPv4 and the transport header
        let (mut p, mut l4, mut len) = (p, l4, len);
        let mut n = 0;
        while p == ipv6::next_header::AH {
            n += 1;
            match ipv6::ExtHeader::new_checked(f.get(l4..).unwrap_or_default(), p) {
                Ok(ah) if n <= MAX_IPV6_EXT => {
                    p = ah.next_header();
                    l4 += ah.header_len();
                    len = len.saturating_sub(ah.header_len());
                }
                _ => {
                    self.bad(Anomaly::AhTruncated);
                    other(d, p, l4, len, f.len());
                    return None;
                }
            }
        }
        self.transport(f, p, l4, len, false, first, d)
    }

    /// Reads the IPv6 header at `off` and its extension headers into `d`, then what
    /// they carry.
    fn ipv6(&mut self, f: &[u8], off: usize, cx: Ctx, d: &mut Decoded) -> Option<Encap> {
        let b = f.get(off..).unwrap_or_default();
        if b.first().is_some_and(|v| v >> 4 != 6) {
            self.bad(Anomaly::Ipv6BadVersion);
            return None;
        }
        let Ok(ip) = ipv6::Packet::new_checked(b) else {
            self.bad(Anomaly::Ipv6Truncated);
            return None;
        };
        let src = u128::from_be_bytes(ip.source());
        let dst = u128::from_be_bytes(ip.destination());
        d.ip_version = 6;
        d.src = src;
        d.dst = dst;
        d.ttl = ip.hop_limit();
        let mut nh = ip.next_header();
        let mut p = off + ipv6::HEADER_LEN;
        let captured = b.len() - ipv6::HEADER_LEN;
        let mut plen = usize::from(ip.payload_length());
        if plen == 0 {
            // RFC 2675 §2: a jumbogram's length is in the hop-by-hop jumbo option;
            // otherwise (offload captures) take what was captured
            plen = captured;
            if nh == ipv6::next_header::HOP_BY_HOP {
                let hbh = f.get(p..).unwrap_or_default();
                if let Some(j) = ipv6::ExtHeader::new_checked(hbh, nh).ok().and_then(|e| e.jumbo_payload_length()) {
                    plen = j as usize;
                }
            }
        }
        self.check_trailer(cx, captured, plen);
        d.ip_len = (plen as u32).saturating_add(ipv6::HEADER_LEN as u32);
        let end = p.saturating_add(plen).min(f.len());
        let f = f.get(..end).unwrap_or(f);

        // RFC 8200 §4.1: walk the extension headers to the upper-layer header
        let mut len = plen;
        let mut first = false;
        let mut n = 0u32;
        loop {
            use ipv6::next_header as nx;
            match nh {
                nx::HOP_BY_HOP | nx::ROUTING | nx::DEST_OPTS | nx::AH | nx::FRAGMENT => {}
                _ => break,
            }
            n += 1;
            if n > MAX_IPV6_EXT {
                self.bad(Anomaly::Ipv6TooManyExt);
                other(d, nh, p, len, f.len());
                return None;
            }
            let rest = f.get(p..).unwrap_or_default();
            if nh == nx::FRAGMENT {
                let Ok(fh) = ipv6::FragHeader::new_checked(rest) else {
                    self.bad(Anomaly::Ipv6ExtTruncated);
                    other(d, nh, p, len, f.len());
                    return None;
                };
                p += ipv6::FRAG_HEADER_LEN;
                len = len.saturating_sub(ipv6::FRAG_HEADER_LEN);
                nh = fh.next_header();
                let key = FragKey { src, dst, id: fh.identification(), proto: nh, version: 6 };
                if fh.fragment_offset() > 0 {
                    d.proto = nh;
                    self.later_fragment(key, f, p, len, (fh.fragment_offset(), fh.more_fragments()), cx, d);
                    return None;
                }
                if fh.more_fragments() {
                    self.note_first(key, len);
                    d.fragment = Fragment::First;
                    first = true;
                }
                // offset 0 without M: an atomic fragment (RFC 6946), a whole packet
                continue;
            }
            let Ok(e) = ipv6::ExtHeader::new_checked(rest, nh) else {
                self.bad(Anomaly::Ipv6ExtTruncated);
                other(d, nh, p, len, f.len());
                return None;
            };
            nh = e.next_header();
            p += e.header_len();
            len = len.saturating_sub(e.header_len());
        }
        self.transport(f, nh, p, len, true, first, d)
    }

    /// A later fragment: the flow of its first fragment if that was seen, else an
    /// orphan under its own IP pair. `off` is where the fragment's data starts, `len`
    /// its length according to the IP header, `at` its offset in the datagram and
    /// whether more fragments follow.
    #[allow(clippy::too_many_arguments)]
    fn later_fragment(
        &mut self,
        key: FragKey,
        f: &[u8],
        off: usize,
        len: usize,
        at: (u32, bool),
        cx: Ctx,
        d: &mut Decoded,
    ) {
        let (ttl, ip_len) = (d.ttl, d.ip_len);
        let data = f.get(off..).map_or(&[][..], |b| &b[..b.len().min(len)]);
        let off = off.min(f.len()) as u32;
        self.done = None;
        if self.shared.is_some() {
            self.take_frags();
        }
        if let Some(later) = self.frags.later(&key, cx.ts_ns, at.0, len as u32, at.1, data, &mut self.anomalies) {
            self.done = later.whole;
            *d = *later.flow;
            d.ttl = ttl;
            d.ip_len = ip_len;
            d.l4_offset = 0;
            d.payload_offset = off;
            match later.completes {
                // the held segment, whole: the first fragment's header, every byte
                Some(n) => {
                    d.fragment = Fragment::TcpComplete;
                    d.payload_len = n;
                }
                None => {
                    d.tcp = TcpFields::default();
                    d.tcp_opts = TcpOptions::default();
                    (d.fragment, d.payload_len) =
                        if later.held { (Fragment::TcpHeld, 0) } else { (Fragment::Later, len as u32) };
                }
            }
        } else {
            self.bad(Anomaly::FragmentOrphan);
            d.l4 = match (key.proto, key.version) {
                (proto::TCP, _) => L4::Tcp,
                (proto::UDP, _) => L4::Udp,
                (proto::ICMP, 4) => L4::Icmp,
                (proto::ICMPV6, 6) => L4::Icmpv6,
                _ => L4::Other,
            };
            d.proto = key.proto;
            d.sport = 0;
            d.dport = 0;
            d.l4_offset = 0;
            d.fragment = Fragment::Orphan;
            d.payload_offset = off;
            d.payload_len = len as u32;
        }
    }

    /// Reads the transport header of protocol `p` at `off`; `len` is the transport
    /// length according to the IP header(s). Returns a tunnel when the packet carries
    /// one (`d` then holds the outer flow, which stands if the inside does not parse).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn transport(
        &mut self,
        f: &[u8],
        p: u8,
        off: usize,
        len: usize,
        v6: bool,
        first_frag: bool,
        d: &mut Decoded,
    ) -> Option<Encap> {
        d.proto = p;
        let b = f.get(off..).unwrap_or_default();
        match p {
            proto::TCP => {
                self.tcp(b, off, len, f.len(), first_frag, d);
                None
            }
            proto::UDP => self.udp(f, off, len, v6, first_frag, d),
            proto::ICMP if !v6 => {
                self.icmp(b, off, len, f.len(), false, d);
                None
            }
            proto::ICMPV6 if v6 => {
                self.icmp(b, off, len, f.len(), true, d);
                None
            }
            proto::GRE => {
                other(d, p, off, len, f.len());
                self.gre(f, off, d)
            }
            proto::IPIP | proto::IPV6 => {
                // RFC 2003 (IPv4 in IPv4), RFC 4213 §3.5 (IPv6 in IPv4), RFC 2473
                // (generic IPv6 tunnels)
                other(d, p, off, len, f.len());
                let (kind, inner) = match (p, v6) {
                    (proto::IPIP, false) => (TunnelKind::IpIp, Layer::Ipv4(off)),
                    (proto::IPIP, true) => (TunnelKind::FourInSix, Layer::Ipv4(off)),
                    (_, false) => (TunnelKind::SixInFour, Layer::Ipv6(off)),
                    (_, true) => (TunnelKind::SixInSix, Layer::Ipv6(off)),
                };
                Some(Encap { kind, id: 0, inner, end: f.len() })
            }
            _ => {
                other(d, p, off, len, f.len());
                None
            }
        }
    }

    /// TCP (RFC 9293 §3.1). `b` starts at the header, at frame offset `off`; `end` is
    /// the end of the IP packet in the frame.
    #[inline]
    fn tcp(&mut self, b: &[u8], off: usize, len: usize, end: usize, first: bool, d: &mut Decoded) {
        let Ok(t) = tcp::Packet::new_checked(b) else {
            self.bad(Anomaly::TcpTruncated);
            other(d, proto::TCP, off, len, end);
            return;
        };
        let hl = t.header_len();
        let used = if hl < tcp::MIN_HEADER_LEN {
            self.bad(Anomaly::TcpHlenTooSmall);
            tcp::MIN_HEADER_LEN
        } else {
            hl
        };
        if used > len && !first {
            self.bad(Anomaly::TcpHlenTooLarge);
        }
        d.l4 = L4::Tcp;
        d.sport = t.source_port();
        d.dport = t.destination_port();
        d.tcp = TcpFields {
            seq: t.sequence_number(),
            ack: t.acknowledgment_number(),
            flags: t.flags(),
            window: t.window(),
            hdr_len: hl as u8,
        };
        d.l4_offset = off as u32;
        d.payload_offset = (off + used).min(end) as u32;
        d.payload_len = len.saturating_sub(used) as u32;
        if hl > tcp::MIN_HEADER_LEN {
            d.tcp_opts = TcpOptions::parse(t.options());
        }
    }

    /// ICMP (RFC 792) / ICMPv6 (RFC 4443). Errors belong to ICMP, not to the flow of
    /// the packet they quote.
    #[inline]
    fn icmp(&mut self, b: &[u8], off: usize, len: usize, end: usize, v6: bool, d: &mut Decoded) {
        let Ok(m) = icmp::Packet::new_checked(b) else {
            self.bad(Anomaly::IcmpTruncated);
            other(d, d.proto, off, len, end);
            return;
        };
        let t = m.msg_type();
        d.l4 = if v6 { L4::Icmpv6 } else { L4::Icmp };
        d.icmp_type = t;
        d.icmp_code = m.msg_code();
        d.icmp_error = if v6 { icmp::is_v6_error(t) } else { icmp::is_v4_error(t) };
        d.l4_offset = off as u32;
        d.payload_offset = (off + icmp::HEADER_LEN).min(end) as u32;
        d.payload_len = len.saturating_sub(icmp::HEADER_LEN) as u32;
    }

    /// UDP (RFC 768), and the tunnels found by UDP port.
    fn udp(&mut self, f: &[u8], off: usize, len: usize, v6: bool, first: bool, d: &mut Decoded) -> Option<Encap> {
        let Ok(u) = udp::Packet::new_checked(f.get(off..).unwrap_or_default()) else {
            self.bad(Anomaly::UdpTruncated);
            other(d, proto::UDP, off, len, f.len());
            return None;
        };
        let ulen = usize::from(u.length());
        // the UDP length when it agrees with IP's (a first fragment's UDP length is
        // the whole datagram's, so there only IP's is this packet's)
        let plen = if !first && (udp::HEADER_LEN..=len).contains(&ulen) {
            ulen - udp::HEADER_LEN
        } else {
            // length 0 is a jumbogram's (RFC 2675 §4)
            let jumbo = v6 && ulen == 0 && len > 0xffff;
            if !first && !jumbo {
                self.bad(Anomaly::UdpLenInvalid);
            }
            len.saturating_sub(udp::HEADER_LEN)
        };
        let (sp, dp) = (u.source_port(), u.destination_port());
        let pay = off + udp::HEADER_LEN;
        d.l4 = L4::Udp;
        d.sport = sp;
        d.dport = dp;
        d.l4_offset = off as u32;
        d.payload_offset = pay.min(f.len()) as u32;
        d.payload_len = plen as u32;

        let end = pay.saturating_add(plen).min(f.len());
        let payload = f.get(pay..end).unwrap_or_default();
        let encap = |kind, id, inner| Some(Encap { kind, id, inner, end });
        if dp == udp::port::VXLAN || dp == udp::port::VXLAN_LINUX {
            return match vxlan::Header::new_checked(payload) {
                Ok(h) => encap(TunnelKind::Vxlan, h.vni(), Layer::Ether(pay + vxlan::HEADER_LEN)),
                Err(_) => self.malformed(),
            };
        }
        if dp == udp::port::VXLAN_GPE || sp == udp::port::VXLAN_GPE {
            use vxlan::gpe_protocol as gp;
            return match vxlan::GpeHeader::new_checked(payload) {
                Ok(h) => {
                    let at = pay + vxlan::HEADER_LEN;
                    let inner = match h.next_protocol() {
                        gp::IPV4 => Layer::Ipv4(at),
                        gp::IPV6 => Layer::Ipv6(at),
                        gp::ETHERNET => Layer::Ether(at),
                        gp::MPLS => Layer::Mpls(at),
                        // NSH and unassigned values: the UDP flow stands
                        _ => return None,
                    };
                    encap(TunnelKind::VxlanGpe, h.vni(), inner)
                }
                Err(_) => self.malformed(),
            };
        }
        // answers from a Geneve endpoint come from its port (tshark decodes either)
        if dp == udp::port::GENEVE || sp == udp::port::GENEVE {
            return match geneve::Header::new_checked(payload) {
                Ok(h) => encap(TunnelKind::Geneve, h.vni(), Layer::EtherType(h.protocol_type(), pay + h.header_len())),
                Err(_) => self.malformed(),
            };
        }
        if dp == udp::port::GTP_U || sp == udp::port::GTP_U {
            return match gtpu::Header::new_checked(payload) {
                // only G-PDUs carry user packets (TS 29.281 §6.1); the rest is
                // signalling of the UDP flow itself
                Ok(h) if h.message_type() == gtpu::MSG_G_PDU => {
                    encap(TunnelKind::GtpU, h.teid(), Layer::IpNibble(pay + h.header_len()))
                }
                Ok(_) => None,
                Err(_) => self.malformed(),
            };
        }
        if dp == udp::port::TEREDO || sp == udp::port::TEREDO {
            // no magic number: only what really is an IPv6 packet is decapsulated
            return match teredo::ipv6_offset(payload, plen) {
                Ok(o) => encap(TunnelKind::Teredo, 0, Layer::Ipv6(pay + o)),
                Err(_) => None,
            };
        }
        if dp == udp::port::MPLS_UDP {
            return encap(TunnelKind::MplsUdp, 0, Layer::Mpls(pay));
        }
        // A Teredo relay talks to a client's mapped port from a port of its own,
        // neither of them 3544 (RFC 4380 §5.4): such a datagram is Teredo when it
        // holds an IPv6 packet (as above) to or from a Teredo address (2001::/32), as
        // Zeek's protocol detection decides; anything else stays the UDP flow.
        if let Ok(o) = teredo::ipv6_offset(payload, plen) {
            if teredo::has_teredo_address(&payload[o..]) {
                return encap(TunnelKind::Teredo, 0, Layer::Ipv6(pay + o));
            }
        }
        None
    }

    /// GRE (RFC 2784 / 2890, PPTP RFC 2637) and ERSPAN in it. `d` already holds the
    /// outer packet as an `Other` flow.
    fn gre(&mut self, f: &[u8], off: usize, d: &Decoded) -> Option<Encap> {
        let end = off.saturating_add(d.payload_len as usize).min(f.len());
        let Ok(h) = gre::Header::new_checked(f.get(off..end).unwrap_or_default()) else {
            return self.malformed();
        };
        let p = off + h.header_len();
        if p >= end {
            // nothing inside (a PPTP acknowledgment, a keepalive cut short)
            return None;
        }
        let key = h.key().unwrap_or(0);
        let encap = |kind, id, inner| Some(Encap { kind, id, inner, end });
        let rest = f.get(p..end).unwrap_or_default();
        match h.protocol_type() {
            ethertype::ERSPAN_II if !h.sequence_present() => {
                // type I: no ERSPAN header, the mirrored frame follows
                encap(TunnelKind::Erspan, 0, Layer::Ether(p))
            }
            ethertype::ERSPAN_II => match gre::Erspan2::new_checked(rest) {
                Ok(e) => encap(TunnelKind::Erspan, u32::from(e.session_id()), Layer::Ether(p + gre::ERSPAN2_LEN)),
                Err(_) => self.malformed(),
            },
            ethertype::ERSPAN_III => match gre::Erspan3::new_checked(rest) {
                Ok(e) => {
                    let at = p + e.header_len();
                    let inner = match e.frame_type() {
                        0 => Layer::Ether(at),
                        2 => Layer::IpNibble(at),
                        _ => return None,
                    };
                    encap(TunnelKind::Erspan, u32::from(e.session_id()), inner)
                }
                Err(_) => self.malformed(),
            },
            ethertype::CISCO_METADATA => encap(TunnelKind::Gre, key, Layer::CiscoMetaGre(p)),
            // Aruba access points tunnel 802.11 frames to their controller
            t if (ethertype::ARUBA_FIRST..=ethertype::ARUBA_LAST).contains(&t) && t & 0xf == 0 => {
                encap(TunnelKind::Gre, key, Layer::Wlan(p))
            }
            ethertype::PPP => {
                let id = if h.version() == 1 { h.call_id().map_or(0, u32::from) } else { key };
                encap(TunnelKind::Gre, id, Layer::Ppp(p, false))
            }
            t => encap(TunnelKind::Gre, key, Layer::EtherType(t, p)),
        }
    }

    /// Remembers a first fragment's key (outermost and innermost kept).
    #[inline]
    fn note_first(&mut self, key: FragKey, len: usize) {
        let i = (self.nfirsts as usize).min(1);
        self.firsts[i] = key;
        self.firsts_len[i] = len as u32;
        self.nfirsts = (i + 1) as u8;
    }

    #[cold]
    fn malformed(&mut self) -> Option<Encap> {
        self.bad(Anomaly::TunnelMalformed);
        None
    }
}

/// Fills `d` for an IP payload of protocol `p` whose transport header is not read:
/// no ports, offsets at the start of the IP payload, clamped to the packet's end.
#[inline]
fn other(d: &mut Decoded, p: u8, off: usize, len: usize, end: usize) {
    d.l4 = L4::Other;
    d.proto = p;
    d.sport = 0;
    d.dport = 0;
    d.l4_offset = off.min(end) as u32;
    d.payload_offset = off.min(end) as u32;
    d.payload_len = len as u32;
}

#[cfg(test)]
mod tests;
