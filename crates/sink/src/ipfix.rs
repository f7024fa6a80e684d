//! IPFIX export (RFC 7011) of bidirectional flows (RFC 5103): the byte layout of
//! templates, data records and messages, and the transport to a collector.
//!
//! A flow is one data record. The client (tapstat's `c_` side, the initiator) is the
//! source; the server's direction is carried by RFC 5103's reverse information
//! elements (enterprise number 29305 for IANA's elements, the same enterprise number
//! with bit 0x4000 of the element id for tapstat's own). Four fixed templates cover
//! every flow: TCP and UDP over IPv4 and over IPv6 ([`TEMPLATE_V4`], [`TEMPLATE_V6`]),
//! and the other IP protocols, which have no ports ([`TEMPLATE_OTHER_V4`],
//! [`TEMPLATE_OTHER_V6`]).
//!
//! Layers: [`FlowRecord`] is a flow as plain numbers and strings (the engine fills it
//! from its own flow state); [`encode`] writes it as a data record of its template;
//! [`Framer`] puts records into messages (header, sets, sequence numbers) of at most a
//! given size; [`Collector`] sends a message over UDP or TCP.
//!
//! ```
//! use tapstat_sink::ipfix::{encode, FlowRecord, Framer, TEMPLATE_V4};
//! let r = FlowRecord { src: 0xc000_0201, dst: 0xc000_0202, ports: Some((40000, 443)), proto: 6, ..Default::default() };
//! let mut rec = Vec::new();
//! assert_eq!(encode(&r, &mut rec), TEMPLATE_V4.id);
//! let mut f = Framer::new(1, 1400);
//! assert!(f.push(TEMPLATE_V4.id, &rec, 0).is_none());
//! let m = f.flush(1_700_000_000).expect("one record waits");
//! assert_eq!((m.records, &m.bytes[..2]), (1, &[0, 10][..]));
//! ```

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

/// IPFIX's version number, the first field of every message header.
pub const VERSION: u16 = 10;
/// Bytes of a message header.
pub const HEADER_LEN: usize = 16;
/// Bytes of a set header.
pub const SET_HEADER_LEN: usize = 4;
/// Set id of a template set.
pub const TEMPLATE_SET_ID: u16 = 2;
/// RFC 5103's private enterprise number for the reverse of IANA's elements.
pub const REVERSE_PEN: u32 = 29305;
/// The private enterprise number of tapstat's own elements. A placeholder: 32473 is
/// the number IANA keeps for documentation (RFC 5612); a deployment that needs a
/// globally unique one registers its own and changes this constant.
pub const TAPSTAT_PEN: u32 = 32473;
/// RFC 5103 §6.1: the reverse of an enterprise-specific element has the same
/// enterprise number and this bit set in its element id.
pub const REVERSE_BIT: u16 = 0x4000;
/// Field length of a variable-length element in a template (RFC 7011 §7).
pub const VARLEN: u16 = 0xffff;
/// The largest message over UDP: under a 1,500-byte Ethernet MTU with IPv4 or IPv6 and
/// UDP headers, so no message is fragmented on the way (RFC 7011 §10.3.3).
pub const UDP_MESSAGE_MAX: usize = 1400;
/// The largest message over TCP: below the 65,535 bytes of the length field, and below
/// the 65,507 of a UDP datagram, so a relay can pass a message on as one datagram.
pub const TCP_MESSAGE_MAX: usize = 65_000;
/// Strings longer than this many bytes are cut (at a character boundary), so a record
/// always fits a UDP message.
pub const STRING_MAX: usize = 255;

/// Which of a flow's directions a per-direction value is taken from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Client to server (the source's packets).
    Forward,
    /// Server to client (RFC 5103's reverse direction).
    Reverse,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::Forward => 0,
            Side::Reverse => 1,
        }
    }
}

/// What an information element carries, from a [`FlowRecord`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    SrcV4,
    DstV4,
    SrcV6,
    DstV6,
    SrcPort,
    DstPort,
    Proto,
    TcpFlags(Side),
    Start,
    End,
    Octets(Side),
    Packets(Side),
    EndReason,
    BiflowDirection,
    FlowId,
    Retx(Side),
    RttMean(Side),
    App,
    ServerName,
    ResolvedName,
}

/// An information element as a template names it: id, enterprise number (0: IANA),
/// field length, and what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ie {
    pub name: &'static str,
    pub id: u16,
    pub pen: u32,
    /// Field length in bytes; [`VARLEN`] for a variable-length element.
    pub len: u16,
    /// The abstract data type (RFC 7012 §3.1).
    pub ty: &'static str,
    pub what: What,
    pub meaning: &'static str,
}

impl Ie {
    const fn iana(name: &'static str, id: u16, len: u16, ty: &'static str, what: What, meaning: &'static str) -> Ie {
        Ie { name, id, pen: 0, len, ty, what, meaning }
    }

    const fn tapstat(name: &'static str, id: u16, len: u16, ty: &'static str, what: What, meaning: &'static str) -> Ie {
        Ie { name, id, pen: TAPSTAT_PEN, len, ty, what, meaning }
    }

    /// The reverse element of `self` (RFC 5103 §6.1): enterprise 29305 with the same
    /// id for an IANA element, the same enterprise with [`REVERSE_BIT`] for another.
    const fn reverse(self, name: &'static str, what: What, meaning: &'static str) -> Ie {
        let (id, pen) = if self.pen == 0 { (self.id, REVERSE_PEN) } else { (self.id | REVERSE_BIT, self.pen) };
        Ie { name, id, pen, len: self.len, ty: self.ty, what, meaning }
    }

    /// The element's field specifier in a template (RFC 7011 §3.2): the enterprise bit
    /// and number for an enterprise-specific element.
    pub fn write_spec(&self, out: &mut Vec<u8>) {
        if self.pen == 0 {
            out.extend_from_slice(&self.id.to_be_bytes());
            out.extend_from_slice(&self.len.to_be_bytes());
        } else {
            out.extend_from_slice(&(self.id | 0x8000).to_be_bytes());
            out.extend_from_slice(&self.len.to_be_bytes());
            out.extend_from_slice(&self.pen.to_be_bytes());
        }
    }

    /// Bytes of the specifier.
    pub fn spec_len(&self) -> usize {
        if self.pen == 0 {
            4
        } else {
            8
        }
    }
}

/// The information elements tapstat exports, by name.
pub mod ie {
    use super::{Ie, Side, What};

    pub const SOURCE_IPV4_ADDRESS: Ie =
        Ie::iana("sourceIPv4Address", 8, 4, "ipv4Address", What::SrcV4, "the client's address (the initiator)");
    pub const DESTINATION_IPV4_ADDRESS: Ie =
        Ie::iana("destinationIPv4Address", 12, 4, "ipv4Address", What::DstV4, "the server's address");
    pub const SOURCE_IPV6_ADDRESS: Ie =
        Ie::iana("sourceIPv6Address", 27, 16, "ipv6Address", What::SrcV6, "the client's address (the initiator)");
    pub const DESTINATION_IPV6_ADDRESS: Ie =
        Ie::iana("destinationIPv6Address", 28, 16, "ipv6Address", What::DstV6, "the server's address");
    pub const SOURCE_TRANSPORT_PORT: Ie =
        Ie::iana("sourceTransportPort", 7, 2, "unsigned16", What::SrcPort, "the client's port (`c_port`)");
    pub const DESTINATION_TRANSPORT_PORT: Ie =
        Ie::iana("destinationTransportPort", 11, 2, "unsigned16", What::DstPort, "the server's port (`s_port`)");
    pub const PROTOCOL_IDENTIFIER: Ie = Ie::iana(
        "protocolIdentifier",
        4,
        1,
        "unsigned8",
        What::Proto,
        "IP protocol number (6 TCP, 17 UDP, 1 ICMP, ...)",
    );
    pub const TCP_CONTROL_BITS: Ie = Ie::iana(
        "tcpControlBits",
        6,
        2,
        "unsigned16",
        What::TcpFlags(Side::Forward),
        "OR of the TCP flags of the client's segments (0 for UDP)",
    );
    pub const REVERSE_TCP_CONTROL_BITS: Ie = TCP_CONTROL_BITS.reverse(
        "reverseTcpControlBits",
        What::TcpFlags(Side::Reverse),
        "OR of the TCP flags of the server's segments",
    );
    pub const FLOW_START_MILLISECONDS: Ie = Ie::iana(
        "flowStartMilliseconds",
        152,
        8,
        "dateTimeMilliseconds",
        What::Start,
        "time of the flow's first packet (the logs' `first`, cut to the millisecond)",
    );
    pub const FLOW_END_MILLISECONDS: Ie = Ie::iana(
        "flowEndMilliseconds",
        153,
        8,
        "dateTimeMilliseconds",
        What::End,
        "time of the flow's last packet (the logs' `last`, cut to the millisecond)",
    );
    pub const OCTET_DELTA_COUNT: Ie = Ie::iana(
        "octetDeltaCount",
        1,
        8,
        "unsigned64",
        What::Octets(Side::Forward),
        "bytes of the client's frames as on the wire (`c_bytes_wire`: the link-layer header included)",
    );
    pub const REVERSE_OCTET_DELTA_COUNT: Ie = OCTET_DELTA_COUNT.reverse(
        "reverseOctetDeltaCount",
        What::Octets(Side::Reverse),
        "bytes of the server's frames as on the wire (`s_bytes_wire`)",
    );
    pub const PACKET_DELTA_COUNT: Ie = Ie::iana(
        "packetDeltaCount",
        2,
        8,
        "unsigned64",
        What::Packets(Side::Forward),
        "the client's packets (`c_pkts_all`)",
    );
    pub const REVERSE_PACKET_DELTA_COUNT: Ie = PACKET_DELTA_COUNT.reverse(
        "reversePacketDeltaCount",
        What::Packets(Side::Reverse),
        "the server's packets (`s_pkts_all`)",
    );
    pub const FLOW_END_REASON: Ie = Ie::iana(
        "flowEndReason",
        136,
        1,
        "unsigned8",
        What::EndReason,
        "`end_reason`: 1 idle timeout (idle), 3 end of flow detected (fin, rst, syn_reuse), 4 forced end (end_of_input, interrupted), 5 lack of resources (evicted)",
    );
    pub const BIFLOW_DIRECTION: Ie = Ie::iana(
        "biflowDirection",
        239,
        1,
        "unsigned8",
        What::BiflowDirection,
        "1 (initiator: the source opened the flow), or 0 (arbitrary) for a TCP flow whose opening was not seen",
    );
    pub const FLOW_ID: Ie = Ie::tapstat(
        "tapstatFlowId",
        1,
        8,
        "unsigned64",
        What::FlowId,
        "the flow's `flow_id` (its 16 hex digits as a number): the key to the flow's record in the logs",
    );
    pub const RETRANSMITTED_PACKETS: Ie = Ie::tapstat(
        "tapstatRetransmittedPackets",
        2,
        8,
        "unsigned64",
        What::Retx(Side::Forward),
        "the client's retransmitted segments (`c_pkts_retx`; 0 for UDP)",
    );
    pub const REVERSE_RETRANSMITTED_PACKETS: Ie = RETRANSMITTED_PACKETS.reverse(
        "reverseTapstatRetransmittedPackets",
        What::Retx(Side::Reverse),
        "the server's retransmitted segments (`s_pkts_retx`)",
    );
    pub const RTT_MEAN: Ie = Ie::tapstat(
        "tapstatRttMeanMicroseconds",
        3,
        4,
        "unsigned32",
        What::RttMean(Side::Forward),
        "mean RTT of the client's data in µs (`c_rtt_avg`, full sets); 0: no sample",
    );
    pub const REVERSE_RTT_MEAN: Ie = RTT_MEAN.reverse(
        "reverseTapstatRttMeanMicroseconds",
        What::RttMean(Side::Reverse),
        "mean RTT of the server's data in µs (`s_rtt_avg`); 0: no sample",
    );
    pub const APPLICATION_NAME: Ie = Ie::tapstat(
        "tapstatApplicationName",
        4,
        super::VARLEN,
        "string",
        What::App,
        "`app` (application layer); empty when none",
    );
    pub const SERVER_NAME: Ie = Ie::tapstat(
        "tapstatServerName",
        5,
        super::VARLEN,
        "string",
        What::ServerName,
        "server name of the TLS, QUIC or DTLS ClientHello (`c_tls_SNI`, `quic_SNI`, `dtls_SNI`); empty when none",
    );
    pub const RESOLVED_NAME: Ie = Ie::tapstat(
        "tapstatResolvedName",
        6,
        super::VARLEN,
        "string",
        What::ResolvedName,
        "the name the client resolved for the server (`fqdn`, DN-Hunter); empty when none",
    );
}

/// A template: its id and its fields, in the order of the data records.
#[derive(Clone, Copy, Debug)]
pub struct Template {
    pub id: u16,
    pub name: &'static str,
    pub fields: &'static [Ie],
}

use ie::*;

/// TCP and UDP flows over IPv4.
pub const TEMPLATE_V4: Template = Template {
    id: 256,
    name: "TCP and UDP over IPv4",
    fields: &[
        SOURCE_IPV4_ADDRESS,
        DESTINATION_IPV4_ADDRESS,
        SOURCE_TRANSPORT_PORT,
        DESTINATION_TRANSPORT_PORT,
        PROTOCOL_IDENTIFIER,
        // The reverse flags before the forward ones: nfdump 1.7 reads a reverse element
        // it has no reverse counterpart for as the forward element, so the field that
        // comes last is the one it keeps.
        REVERSE_TCP_CONTROL_BITS,
        TCP_CONTROL_BITS,
        FLOW_START_MILLISECONDS,
        FLOW_END_MILLISECONDS,
        OCTET_DELTA_COUNT,
        PACKET_DELTA_COUNT,
        REVERSE_OCTET_DELTA_COUNT,
        REVERSE_PACKET_DELTA_COUNT,
        FLOW_END_REASON,
        BIFLOW_DIRECTION,
        FLOW_ID,
        RETRANSMITTED_PACKETS,
        REVERSE_RETRANSMITTED_PACKETS,
        RTT_MEAN,
        REVERSE_RTT_MEAN,
        APPLICATION_NAME,
        SERVER_NAME,
        RESOLVED_NAME,
    ],
};

/// TCP and UDP flows over IPv6.
pub const TEMPLATE_V6: Template = Template {
    id: 257,
    name: "TCP and UDP over IPv6",
    fields: &[
        SOURCE_IPV6_ADDRESS,
        DESTINATION_IPV6_ADDRESS,
        SOURCE_TRANSPORT_PORT,
        DESTINATION_TRANSPORT_PORT,
        PROTOCOL_IDENTIFIER,
        // The reverse flags before the forward ones: nfdump 1.7 reads a reverse element
        // it has no reverse counterpart for as the forward element, so the field that
        // comes last is the one it keeps.
        REVERSE_TCP_CONTROL_BITS,
        TCP_CONTROL_BITS,
        FLOW_START_MILLISECONDS,
        FLOW_END_MILLISECONDS,
        OCTET_DELTA_COUNT,
        PACKET_DELTA_COUNT,
        REVERSE_OCTET_DELTA_COUNT,
        REVERSE_PACKET_DELTA_COUNT,
        FLOW_END_REASON,
        BIFLOW_DIRECTION,
        FLOW_ID,
        RETRANSMITTED_PACKETS,
        REVERSE_RETRANSMITTED_PACKETS,
        RTT_MEAN,
        REVERSE_RTT_MEAN,
        APPLICATION_NAME,
        SERVER_NAME,
        RESOLVED_NAME,
    ],
};

/// Other IP protocols (ICMP, ...) over IPv4: no ports, no TCP or application fields.
pub const TEMPLATE_OTHER_V4: Template = Template {
    id: 258,
    name: "other IP protocols over IPv4",
    fields: &[
        SOURCE_IPV4_ADDRESS,
        DESTINATION_IPV4_ADDRESS,
        PROTOCOL_IDENTIFIER,
        FLOW_START_MILLISECONDS,
        FLOW_END_MILLISECONDS,
        OCTET_DELTA_COUNT,
        PACKET_DELTA_COUNT,
        REVERSE_OCTET_DELTA_COUNT,
        REVERSE_PACKET_DELTA_COUNT,
        FLOW_END_REASON,
        BIFLOW_DIRECTION,
        FLOW_ID,
    ],
};

/// Other IP protocols over IPv6.
pub const TEMPLATE_OTHER_V6: Template = Template {
    id: 259,
    name: "other IP protocols over IPv6",
    fields: &[
        SOURCE_IPV6_ADDRESS,
        DESTINATION_IPV6_ADDRESS,
        PROTOCOL_IDENTIFIER,
        FLOW_START_MILLISECONDS,
        FLOW_END_MILLISECONDS,
        OCTET_DELTA_COUNT,
        PACKET_DELTA_COUNT,
        REVERSE_OCTET_DELTA_COUNT,
        REVERSE_PACKET_DELTA_COUNT,
        FLOW_END_REASON,
        BIFLOW_DIRECTION,
        FLOW_ID,
    ],
};

/// Every template, in the order of their ids.
pub const TEMPLATES: [Template; 4] = [TEMPLATE_V4, TEMPLATE_V6, TEMPLATE_OTHER_V4, TEMPLATE_OTHER_V6];

/// The template of id `id`.
pub fn template(id: u16) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.id == id)
}

/// Every element of the templates once, in order of first use (for the documentation).
pub fn elements() -> Vec<Ie> {
    let mut v: Vec<Ie> = Vec::new();
    for t in &TEMPLATES {
        for f in t.fields {
            if !v.contains(f) {
                v.push(*f);
            }
        }
    }
    v
}

/// Writes a template set holding `templates` (RFC 7011 §3.4.1).
pub fn write_template_set(templates: &[Template], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&TEMPLATE_SET_ID.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    for t in templates {
        out.extend_from_slice(&t.id.to_be_bytes());
        out.extend_from_slice(&(t.fields.len() as u16).to_be_bytes());
        for f in t.fields {
            f.write_spec(out);
        }
    }
    let len = (out.len() - start) as u16;
    out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// One direction's counters of a [`FlowRecord`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirCounts {
    pub octets: u64,
    pub packets: u64,
    /// OR of the TCP flags seen (0 for other protocols).
    pub tcp_flags: u8,
    pub retx_packets: u64,
    /// Mean RTT of this direction's data in µs (0: no sample).
    pub rtt_mean_us: u32,
}

/// A flow as IPFIX exports it: the client (initiator) is the source, index 0 of
/// `dirs` its direction and index 1 the reverse one.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowRecord<'a> {
    pub ipv6: bool,
    /// Addresses: an IPv4 address in the low 32 bits.
    pub src: u128,
    pub dst: u128,
    /// Source and destination ports of a TCP or UDP flow; `None` for other protocols.
    pub ports: Option<(u16, u16)>,
    pub proto: u8,
    /// Epoch milliseconds of the first and last packets.
    pub start_ms: u64,
    pub end_ms: u64,
    /// flowEndReason's value.
    pub end_reason: u8,
    /// biflowDirection's value.
    pub biflow_direction: u8,
    pub flow_id: u64,
    pub dirs: [DirCounts; 2],
    pub app: &'a str,
    pub server_name: &'a str,
    pub resolved_name: &'a str,
}

/// flowEndReason's values (IANA's registry).
pub mod end_reason {
    pub const IDLE_TIMEOUT: u8 = 1;
    pub const ACTIVE_TIMEOUT: u8 = 2;
    pub const END_OF_FLOW: u8 = 3;
    pub const FORCED_END: u8 = 4;
    pub const LACK_OF_RESOURCES: u8 = 5;
}

/// The template a record is encoded with.
pub fn template_of(r: &FlowRecord) -> &'static Template {
    match (r.ports.is_some(), r.ipv6) {
        (true, false) => &TEMPLATE_V4,
        (true, true) => &TEMPLATE_V6,
        (false, false) => &TEMPLATE_OTHER_V4,
        (false, true) => &TEMPLATE_OTHER_V6,
    }
}

/// Appends `r` as a data record of its template ([`template_of`]) to `out` (no set
/// header); returns the template's id. The fields follow the template's list, so the
/// layout cannot drift from the template sent.
pub fn encode(r: &FlowRecord, out: &mut Vec<u8>) -> u16 {
    let t = template_of(r);
    for f in t.fields {
        put(f, r, out);
    }
    t.id
}

/// Appends field `f` of record `r`.
#[inline]
fn put(f: &Ie, r: &FlowRecord, out: &mut Vec<u8>) {
    let (sport, dport) = r.ports.unwrap_or_default();
    match f.what {
        What::SrcV4 => out.extend_from_slice(&(r.src as u32).to_be_bytes()),
        What::DstV4 => out.extend_from_slice(&(r.dst as u32).to_be_bytes()),
        What::SrcV6 => out.extend_from_slice(&r.src.to_be_bytes()),
        What::DstV6 => out.extend_from_slice(&r.dst.to_be_bytes()),
        What::SrcPort => out.extend_from_slice(&sport.to_be_bytes()),
        What::DstPort => out.extend_from_slice(&dport.to_be_bytes()),
        What::Proto => out.push(r.proto),
        What::TcpFlags(s) => out.extend_from_slice(&(r.dirs[s.index()].tcp_flags as u16).to_be_bytes()),
        What::Start => out.extend_from_slice(&r.start_ms.to_be_bytes()),
        What::End => out.extend_from_slice(&r.end_ms.to_be_bytes()),
        What::Octets(s) => out.extend_from_slice(&r.dirs[s.index()].octets.to_be_bytes()),
        What::Packets(s) => out.extend_from_slice(&r.dirs[s.index()].packets.to_be_bytes()),
        What::EndReason => out.push(r.end_reason),
        What::BiflowDirection => out.push(r.biflow_direction),
        What::FlowId => out.extend_from_slice(&r.flow_id.to_be_bytes()),
        What::Retx(s) => out.extend_from_slice(&r.dirs[s.index()].retx_packets.to_be_bytes()),
        What::RttMean(s) => out.extend_from_slice(&r.dirs[s.index()].rtt_mean_us.to_be_bytes()),
        What::App => put_str(r.app, out),
        What::ServerName => put_str(r.server_name, out),
        What::ResolvedName => put_str(r.resolved_name, out),
    }
}

/// Appends a variable-length string (RFC 7011 §7): one length byte below 255, else 255
/// and two length bytes; cut to [`STRING_MAX`] bytes at a character boundary.
pub fn put_str(s: &str, out: &mut Vec<u8>) {
    let mut n = s.len().min(STRING_MAX);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    put_varlen(&s.as_bytes()[..n], out);
}

/// Appends `b` as a variable-length field (RFC 7011 §7).
pub fn put_varlen(b: &[u8], out: &mut Vec<u8>) {
    if b.len() < 255 {
        out.push(b.len() as u8);
    } else {
        out.push(255);
        out.extend_from_slice(&(b.len().min(u16::MAX as usize) as u16).to_be_bytes());
    }
    out.extend_from_slice(&b[..b.len().min(u16::MAX as usize)]);
}

/// The largest record any template can take (its strings at [`STRING_MAX`]).
pub fn max_record_len() -> usize {
    TEMPLATES
        .iter()
        .map(|t| t.fields.iter().map(|f| if f.len == VARLEN { 3 + STRING_MAX } else { f.len as usize }).sum())
        .max()
        .unwrap_or(0)
}

/// A finished message and the data records in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub bytes: Vec<u8>,
    pub records: u32,
    /// Its header's sequence number: the data records of the stream before it.
    pub seq: u32,
}

/// Puts data records into messages of at most `max` bytes (RFC 7011 §3.1): a header,
/// then a data set per run of records of one template. The header's sequence number
/// counts the data records of the stream before the message (mod 2^32).
#[derive(Debug)]
pub struct Framer {
    domain: u32,
    max: usize,
    seq: u32,
    msg: Vec<u8>,
    /// Where the open data set starts in `msg`, and its template.
    set: Option<(usize, u16)>,
    records: u32,
}

impl Framer {
    /// A framer for observation domain `domain` and messages of at most `max` bytes.
    pub fn new(domain: u32, max: usize) -> Framer {
        Framer {
            domain,
            max: max.clamp(HEADER_LEN + 64, u16::MAX as usize),
            seq: 0,
            msg: Vec::new(),
            set: None,
            records: 0,
        }
    }

    /// The sequence number of the next message: data records finished so far.
    pub fn sequence(&self) -> u32 {
        self.seq
    }

    /// A message of the template set alone, with sequence number `seq` (that of the
    /// data message it goes before: templates are not data records and do not move it).
    pub fn templates_message(&self, export_s: u32, seq: u32) -> Vec<u8> {
        let mut m = Vec::with_capacity(1024);
        m.extend_from_slice(&[0; HEADER_LEN]);
        write_template_set(&TEMPLATES, &mut m);
        self.write_header(&mut m, export_s, seq);
        m
    }

    /// Appends record `rec` of template `tid`. When it does not fit the message being
    /// built, that message is finished (with export time `export_s`) and returned, and
    /// the record starts the next one.
    pub fn push(&mut self, tid: u16, rec: &[u8], export_s: u32) -> Option<Message> {
        let new_set = self.set.map(|(_, t)| t) != Some(tid);
        let need = rec.len() + if new_set { SET_HEADER_LEN } else { 0 };
        let done = if !self.msg.is_empty() && self.msg.len() + need > self.max { self.flush(export_s) } else { None };
        if self.msg.is_empty() {
            self.msg.reserve(self.max);
            self.msg.extend_from_slice(&[0; HEADER_LEN]);
        }
        if self.set.map(|(_, t)| t) != Some(tid) {
            self.close_set();
            self.set = Some((self.msg.len(), tid));
            self.msg.extend_from_slice(&tid.to_be_bytes());
            self.msg.extend_from_slice(&[0, 0]);
        }
        self.msg.extend_from_slice(rec);
        self.records += 1;
        done
    }

    /// Finishes the message being built, if it holds a record.
    pub fn flush(&mut self, export_s: u32) -> Option<Message> {
        if self.records == 0 {
            return None;
        }
        self.close_set();
        let mut bytes = std::mem::take(&mut self.msg);
        self.write_header(&mut bytes, export_s, self.seq);
        let records = std::mem::take(&mut self.records);
        let seq = self.seq;
        self.seq = seq.wrapping_add(records);
        Some(Message { bytes, records, seq })
    }

    /// Gives a sent message's buffer back, for the next message.
    pub fn recycle(&mut self, mut v: Vec<u8>) {
        if self.msg.is_empty() && v.capacity() >= self.max {
            v.clear();
            self.msg = v;
        }
    }

    fn close_set(&mut self) {
        if let Some((start, _)) = self.set.take() {
            let len = (self.msg.len() - start) as u16;
            self.msg[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
        }
    }

    fn write_header(&self, m: &mut [u8], export_s: u32, seq: u32) {
        m[0..2].copy_from_slice(&VERSION.to_be_bytes());
        let len = m.len() as u16;
        m[2..4].copy_from_slice(&len.to_be_bytes());
        m[4..8].copy_from_slice(&export_s.to_be_bytes());
        m[8..12].copy_from_slice(&seq.to_be_bytes());
        m[12..16].copy_from_slice(&self.domain.to_be_bytes());
    }
}

/// The transport to the collector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        }
    }

    /// The largest message on this transport.
    pub fn message_max(self) -> usize {
        match self {
            Transport::Udp => UDP_MESSAGE_MAX,
            Transport::Tcp => TCP_MESSAGE_MAX,
        }
    }
}

/// How long a TCP connection may take to open, and a message to be written.
const TCP_TIMEOUT: Duration = Duration::from_secs(10);

/// Writes all of `msg` to `s` within `limit` in all. The socket's write timeout holds
/// for one `write` call, and a collector that takes a few bytes now and then (a
/// receive window that opens by a segment at each probe) would make `write_all` wait
/// `limit` for every one of them: a message that cannot go out in `limit` is a failed
/// send (the connection is then dropped, so a message cut short is never followed).
fn write_within(s: &mut TcpStream, msg: &[u8], limit: Duration) -> io::Result<()> {
    let deadline = std::time::Instant::now() + limit;
    let mut rest = msg;
    while !rest.is_empty() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the collector took no more in time"));
        }
        s.set_write_timeout(Some(left))?;
        match s.write(rest) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "the collector's connection took nothing")),
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A collector: a connected UDP socket, or a TCP connection (none after a failure, until
/// [`Collector::reconnect`]).
#[derive(Debug)]
pub struct Collector {
    pub addr: SocketAddr,
    pub transport: Transport,
    udp: Option<UdpSocket>,
    tcp: Option<TcpStream>,
}

impl Collector {
    /// Opens the transport to `addr`: for TCP, the connection (an error when no
    /// collector accepts it); for UDP, a socket connected to it (nothing is sent).
    pub fn connect(addr: SocketAddr, transport: Transport) -> io::Result<Collector> {
        let mut c = Collector { addr, transport, udp: None, tcp: None };
        match transport {
            Transport::Udp => {
                let local: SocketAddr = if addr.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
                let s = UdpSocket::bind(local)?;
                s.connect(addr)?;
                c.udp = Some(s);
            }
            Transport::Tcp => c.reconnect()?,
        }
        Ok(c)
    }

    /// Whether a message can be sent now (a TCP connection is open).
    pub fn is_open(&self) -> bool {
        self.udp.is_some() || self.tcp.is_some()
    }

    /// Opens a new TCP connection (nothing for UDP).
    pub fn reconnect(&mut self) -> io::Result<()> {
        if self.transport == Transport::Tcp {
            self.tcp = None;
            let s = TcpStream::connect_timeout(&self.addr, TCP_TIMEOUT)?;
            s.set_nodelay(true)?;
            s.set_write_timeout(Some(TCP_TIMEOUT))?;
            self.tcp = Some(s);
        }
        Ok(())
    }

    /// Sends one message. A TCP connection that fails is closed (the caller reconnects
    /// and sends the templates again).
    pub fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        if let Some(s) = &self.udp {
            let n = s.send(msg)?;
            if n != msg.len() {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "datagram cut short"));
            }
            return Ok(());
        }
        let Some(s) = self.tcp.as_mut() else {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "no connection to the collector"));
        };
        let r = write_within(s, msg, TCP_TIMEOUT);
        if r.is_err() {
            self.tcp = None;
        }
        r
    }

    /// Ends a TCP connection in order (the collector reads every message before the
    /// end of the stream).
    pub fn close(&mut self) {
        if let Some(s) = self.tcp.take() {
            let _ = s.shutdown(std::net::Shutdown::Write);
            // Wait (briefly) for the collector to close its side: the messages are then
            // read, and a reset cannot discard them.
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 256];
            let mut s = s;
            while let Ok(n) = io::Read::read(&mut s, &mut buf) {
                if n == 0 {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be16(b: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([b[at], b[at + 1]])
    }

    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// RFC 7011 Appendix A.2's template set (IANA elements only) and A.3's data set,
    /// byte for byte: the template and record layout of the encoder.
    #[test]
    fn rfc7011_appendix_a_template_and_data_sets() {
        const NEXT_HOP: Ie = Ie::iana("ipNextHopIPv4Address", 15, 4, "ipv4Address", What::SrcV4, "");
        let fields = [
            Ie { len: 4, ..SOURCE_IPV4_ADDRESS },
            Ie { len: 4, ..DESTINATION_IPV4_ADDRESS },
            NEXT_HOP,
            Ie { len: 4, ..PACKET_DELTA_COUNT },
            Ie { len: 4, ..OCTET_DELTA_COUNT },
        ];
        let t = Template { id: 256, name: "", fields: Box::leak(Box::new(fields)) };
        let mut out = Vec::new();
        write_template_set(&[t], &mut out);
        #[rustfmt::skip]
        let expected: [u8; 28] = [
            0, 2, 0, 28,     // Set ID 2, length 28
            1, 0, 0, 5,      // Template ID 256, 5 fields
            0, 8, 0, 4,      // sourceIPv4Address, 4
            0, 12, 0, 4,     // destinationIPv4Address, 4
            0, 15, 0, 4,     // ipNextHopIPv4Address, 4
            0, 2, 0, 4,      // packetDeltaCount, 4
            0, 1, 0, 4,      // octetDeltaCount, 4
        ];
        assert_eq!(out, expected);

        // The three records of A.3, framed as one data set of template 256.
        let recs = [
            ([192u8, 0, 2, 12], [192u8, 0, 2, 254], [192u8, 0, 2, 1], 5009u32, 5_344_385u32),
            ([192, 0, 2, 27], [192, 0, 2, 23], [192, 0, 2, 2], 748, 388_934),
            ([192, 0, 2, 56], [192, 0, 2, 65], [192, 0, 2, 3], 5, 6534),
        ];
        let mut f = Framer::new(0, 1400);
        for (s, d, h, p, o) in recs {
            let mut r = Vec::new();
            for x in [&s[..], &d, &h, &p.to_be_bytes(), &o.to_be_bytes()] {
                r.extend_from_slice(x);
            }
            assert!(f.push(256, &r, 0).is_none());
        }
        let m = f.flush(0).unwrap();
        let set = &m.bytes[HEADER_LEN..];
        assert_eq!((be16(set, 0), be16(set, 2)), (256, 64));
        assert_eq!(&set[4..8], &[192, 0, 2, 12]);
        assert_eq!((be32(set, 16), be32(set, 20)), (5009, 5_344_385));
        assert_eq!(&set[44..48], &[192, 0, 2, 56]);
        assert_eq!((be32(set, 56), be32(set, 60)), (5, 6534));
    }

    /// The message header (RFC 7011 §3.1): version 10, length, export time, sequence
    /// number counting the data records of earlier messages, observation domain.
    #[test]
    fn message_header_counts_records_before_the_message() {
        let mut f = Framer::new(0x0102_0304, 1400);
        for _ in 0..3 {
            f.push(256, &[0; 10], 0);
        }
        let m = f.flush(0x6000_0000).unwrap();
        assert_eq!(m.records, 3);
        let b = &m.bytes;
        assert_eq!((be16(b, 0), be16(b, 2) as usize), (10, b.len()));
        assert_eq!((be32(b, 4), be32(b, 8), be32(b, 12)), (0x6000_0000, 0, 0x0102_0304));
        assert_eq!(b.len(), HEADER_LEN + SET_HEADER_LEN + 30);
        f.push(256, &[0; 10], 0);
        let m = f.flush(1).unwrap();
        assert_eq!(be32(&m.bytes, 8), 3);
        // Templates do not move the sequence number.
        let t = f.templates_message(1, f.sequence());
        assert_eq!((be32(&t, 8), be16(&t, 16), be16(&t, 2) as usize), (4, TEMPLATE_SET_ID, t.len()));
        assert!(f.flush(2).is_none());
    }

    /// A record that would pass the limit starts the next message; sets change with the
    /// template; no message is ever longer than the limit.
    #[test]
    fn messages_stay_under_the_limit_and_sets_follow_templates() {
        let mut f = Framer::new(1, 100);
        let mut msgs = Vec::new();
        for i in 0..20u8 {
            let tid = if i % 5 < 3 { 256 } else { 258 };
            if let Some(m) = f.push(tid, &[i; 20], 0) {
                msgs.push(m);
            }
        }
        msgs.extend(f.flush(0));
        assert_eq!(msgs.iter().map(|m| m.records).sum::<u32>(), 20);
        let mut seq = 0;
        let mut seen = Vec::new();
        for m in &msgs {
            let b = &m.bytes;
            assert!(b.len() <= 100, "{} bytes", b.len());
            assert_eq!(be32(b, 8), seq);
            seq += m.records;
            let mut at = HEADER_LEN;
            while at < b.len() {
                let (id, len) = (be16(b, at), be16(b, at + 2) as usize);
                assert!(len > SET_HEADER_LEN && (len - SET_HEADER_LEN).is_multiple_of(20));
                for r in b[at + 4..at + len].chunks(20) {
                    let want = if r[0] % 5 < 3 { 256 } else { 258 };
                    assert_eq!(id, want);
                    seen.push(r[0]);
                }
                at += len;
            }
        }
        assert_eq!(seen, (0..20).collect::<Vec<u8>>());
    }

    /// Enterprise-specific specifiers (RFC 7011 §3.2) and RFC 5103's reverse elements:
    /// 29305 for IANA's, the reverse bit for tapstat's own.
    #[test]
    fn enterprise_and_reverse_specifiers() {
        let mut b = Vec::new();
        REVERSE_OCTET_DELTA_COUNT.write_spec(&mut b);
        assert_eq!(b, [0x80, 1, 0, 8, 0, 0, 0x72, 0x79]);
        b.clear();
        REVERSE_RETRANSMITTED_PACKETS.write_spec(&mut b);
        assert_eq!(b, [0xc0, 2, 0, 8, 0, 0, 0x7e, 0xd9]);
        b.clear();
        APPLICATION_NAME.write_spec(&mut b);
        assert_eq!(b, [0x80, 4, 0xff, 0xff, 0, 0, 0x7e, 0xd9]);
        b.clear();
        OCTET_DELTA_COUNT.write_spec(&mut b);
        assert_eq!(b, [0, 1, 0, 8]);
        // The template set's length covers every specifier.
        let mut s = Vec::new();
        write_template_set(&TEMPLATES, &mut s);
        let want: usize = SET_HEADER_LEN
            + TEMPLATES.iter().map(|t| 4 + t.fields.iter().map(Ie::spec_len).sum::<usize>()).sum::<usize>();
        assert_eq!((s.len(), be16(&s, 2) as usize), (want, want));
    }

    /// Variable-length encoding (RFC 7011 §7): one length byte below 255, three from 255.
    #[test]
    fn variable_length_fields() {
        let mut b = Vec::new();
        put_varlen(b"abc", &mut b);
        assert_eq!(b, b"\x03abc");
        b.clear();
        put_varlen(&[7; 300], &mut b);
        assert_eq!(&b[..3], &[255, 1, 44]);
        assert_eq!(b.len(), 303);
        b.clear();
        // Strings are cut at STRING_MAX bytes, on a character boundary.
        let s = "é".repeat(200);
        put_str(&s, &mut b);
        assert_eq!(b[0] as usize, 254);
        assert!(std::str::from_utf8(&b[1..]).is_ok());
    }

    /// A record's bytes follow its template's field lengths, and the largest record
    /// fits a UDP message with its header and set header.
    #[test]
    fn records_follow_their_templates() {
        let r = FlowRecord {
            ipv6: true,
            src: 1,
            dst: 2,
            ports: Some((1, 2)),
            proto: 17,
            app: "dns",
            server_name: "",
            resolved_name: "example.org",
            ..Default::default()
        };
        let mut b = Vec::new();
        assert_eq!(encode(&r, &mut b), TEMPLATE_V6.id);
        let fixed: usize = TEMPLATE_V6.fields.iter().filter(|f| f.len != VARLEN).map(|f| f.len as usize).sum();
        assert_eq!(b.len(), fixed + (1 + 3) + 1 + (1 + 11));
        assert_eq!(&b[..16], &1u128.to_be_bytes());
        b.clear();
        let o = FlowRecord { proto: 1, ..Default::default() };
        assert_eq!(encode(&o, &mut b), TEMPLATE_OTHER_V4.id);
        assert_eq!(b.len(), TEMPLATE_OTHER_V4.fields.iter().map(|f| f.len as usize).sum::<usize>());
        assert!(HEADER_LEN + SET_HEADER_LEN + max_record_len() <= UDP_MESSAGE_MAX, "{}", max_record_len());
    }
}
