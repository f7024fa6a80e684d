//! QUIC wire parsing: versions, long headers, Initial frames, transport parameters.
//! Pure bytes → structs; knows no flows and no keys (those are in `crypto`).
//!
//! References: RFC 8999 (version-independent properties), RFC 9000 §17.2 long headers
//! and §19 frames, §18 transport parameters; RFC 9369 (QUIC v2) §3.2 packet types.

use crate::cursor::Cursor;

/// A QUIC version whose Initial packets this crate can decrypt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// RFC 9000.
    V1,
    /// RFC 9369.
    V2,
    /// draft-ietf-quic-transport-29 to -32 (the drafts that share draft-29's salt).
    Draft29,
    /// draft-ietf-quic-transport-23 to -28 (the drafts that share draft-23's salt).
    Draft23,
}

impl Version {
    pub fn from_wire(v: u32) -> Option<Self> {
        match v {
            0x0000_0001 => Some(Version::V1),
            0x6b33_43cf => Some(Version::V2),
            0xff00_001d..=0xff00_0020 => Some(Version::Draft29),
            0xff00_0017..=0xff00_001c => Some(Version::Draft23),
            // Reserved versions (RFC 9000 §15) that clients send to provoke version
            // negotiation: Wireshark protects them as draft-29 (the interop era's
            // version); `QuicState` falls back to v1 keys when those fail.
            v if v & 0x0f0f_0f0f == 0x0a0a_0a0a => Some(Version::Draft29),
            _ => None,
        }
    }

    /// The long-header packet type of the two type bits (RFC 9369 §3.2 swaps them in v2).
    pub fn packet_type(self, type_bits: u8) -> PacketType {
        match (self, type_bits & 3) {
            (Version::V2, 0) => PacketType::Retry,
            (Version::V2, 1) => PacketType::Initial,
            (Version::V2, 2) => PacketType::ZeroRtt,
            (Version::V2, _) => PacketType::Handshake,
            (_, 0) => PacketType::Initial,
            (_, 1) => PacketType::ZeroRtt,
            (_, 2) => PacketType::Handshake,
            (_, _) => PacketType::Retry,
        }
    }
}

/// Is this a version worth classifying a datagram as QUIC for: the known ones, version
/// negotiation (0), the drafts (0xff0000xx), reserved greasing versions (0x?a?a?a?a, RFC
/// 9000 §15) and Google's Q0xx/T0xx.
pub fn is_plausible_version(v: u32) -> bool {
    Version::from_wire(v).is_some()
        || v == 0
        // IETF drafts 1 to 34 (0xff0000NN); a wider range took a broadcast (ndpi__1kxun.pcap
        // frame 489, `ff ff0000a0`) for QUIC.
        || v >> 8 == 0x00ff_0000 && (1..=34).contains(&(v & 0xff))
        || v & 0x0f0f_0f0f == 0x0a0a_0a0a
        || matches!(v >> 24, 0x51 | 0x54) && (v >> 16) & 0xff == 0x30
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketType {
    Initial,
    ZeroRtt,
    Handshake,
    Retry,
}

/// A long header (RFC 9000 §17.2) of a version this crate knows, up to the protected
/// packet number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongHeader<'a> {
    pub first: u8,
    pub version: Version,
    pub wire_version: u32,
    pub packet_type: PacketType,
    pub dcid: &'a [u8],
    pub scid: &'a [u8],
    /// Initial only (RFC 9000 §17.2.2).
    pub token: &'a [u8],
    /// Offset of the (protected) packet number from the start of the packet.
    pub pn_offset: usize,
    /// Length of the whole packet (header and payload) within the datagram; the rest of
    /// the datagram holds further coalesced packets (RFC 9000 §12.2).
    pub packet_len: usize,
}

/// Why a datagram's first bytes are not a long header of a known version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// A short header (1-RTT packet, RFC 9000 §17.3).
    ShortHeader,
    /// A long header of a version we do not decrypt (or version negotiation).
    UnknownVersion(u32),
    Malformed,
}

impl<'a> LongHeader<'a> {
    pub fn parse(b: &'a [u8]) -> Result<Self, HeaderError> {
        let mut c = Cursor::new(b);
        let first = c.u8().ok_or(HeaderError::Malformed)?;
        if first & 0x80 == 0 {
            return Err(HeaderError::ShortHeader);
        }
        let wire_version = c.u32().ok_or(HeaderError::Malformed)?;
        let version = Version::from_wire(wire_version).ok_or(HeaderError::UnknownVersion(wire_version))?;
        // RFC 9000 §17.2: the fixed bit is 1 for every version we know.
        if first & 0x40 == 0 {
            return Err(HeaderError::Malformed);
        }
        let packet_type = version.packet_type(first >> 4);
        let dcid = c.vec8().ok_or(HeaderError::Malformed)?;
        let scid = c.vec8().ok_or(HeaderError::Malformed)?;
        // RFC 9000 §17.2: connection ids of version 1 are at most 20 bytes.
        if dcid.len() > 20 || scid.len() > 20 {
            return Err(HeaderError::Malformed);
        }
        let token = if packet_type == PacketType::Initial {
            let n = c.varint().ok_or(HeaderError::Malformed)?;
            c.take(usize::try_from(n).map_err(|_| HeaderError::Malformed)?).ok_or(HeaderError::Malformed)?
        } else {
            &[]
        };
        if packet_type == PacketType::Retry {
            return Ok(LongHeader {
                first,
                version,
                wire_version,
                packet_type,
                dcid,
                scid,
                token,
                pn_offset: c.pos(),
                packet_len: b.len(),
            });
        }
        let length = c.varint().ok_or(HeaderError::Malformed)?;
        let pn_offset = c.pos();
        let packet_len = usize::try_from(length)
            .ok()
            .and_then(|l| pn_offset.checked_add(l))
            .filter(|&l| l <= b.len())
            .ok_or(HeaderError::Malformed)?;
        Ok(LongHeader { first, version, wire_version, packet_type, dcid, scid, token, pn_offset, packet_len })
    }
}

/// Frame types allowed in Initial packets (RFC 9000 §12.4, Table 3).
pub const FRAME_PADDING: u64 = 0x00;
pub const FRAME_PING: u64 = 0x01;
pub const FRAME_ACK: u64 = 0x02;
pub const FRAME_ACK_ECN: u64 = 0x03;
pub const FRAME_CRYPTO: u64 = 0x06;
pub const FRAME_CONNECTION_CLOSE: u64 = 0x1c;

/// Walks the frames of a decrypted Initial payload and hands each CRYPTO frame's offset
/// and data to `on_crypto`. `false` when a frame does not parse or is not allowed in an
/// Initial (then the frames before it were still handed over).
pub fn parse_initial_frames<'a>(payload: &'a [u8], mut on_crypto: impl FnMut(u64, &'a [u8])) -> bool {
    let mut c = Cursor::new(payload);
    while !c.is_empty() {
        let Some(t) = c.varint() else { return false };
        let ok = match t {
            FRAME_PADDING | FRAME_PING => Some(()),
            FRAME_ACK | FRAME_ACK_ECN => skip_ack(&mut c, t == FRAME_ACK_ECN),
            FRAME_CRYPTO => (|| {
                let off = c.varint()?;
                let len = usize::try_from(c.varint()?).ok()?;
                on_crypto(off, c.take(len)?);
                Some(())
            })(),
            FRAME_CONNECTION_CLOSE => (|| {
                c.varint()?;
                c.varint()?;
                let n = usize::try_from(c.varint()?).ok()?;
                c.skip(n)
            })(),
            _ => None,
        };
        if ok.is_none() {
            return false;
        }
    }
    true
}

/// ACK frame (RFC 9000 §19.3): largest, delay, range count, first range, ranges, ECN.
fn skip_ack(c: &mut Cursor<'_>, ecn: bool) -> Option<()> {
    c.varint()?;
    c.varint()?;
    let ranges = c.varint()?;
    c.varint()?;
    for _ in 0..ranges {
        c.varint()?;
        c.varint()?;
    }
    if ecn {
        for _ in 0..3 {
            c.varint()?;
        }
    }
    Some(())
}

/// google_user_agent (Chromium's `kGoogleUserAgentId`).
pub const TP_GOOGLE_USER_AGENT: u64 = 0x3129;

/// The user agent string in QUIC transport parameters (RFC 9000 §18: id, length, value).
pub fn user_agent(params: &[u8]) -> Option<&[u8]> {
    let mut c = Cursor::new(params);
    while !c.is_empty() {
        let id = c.varint()?;
        let len = usize::try_from(c.varint()?).ok()?;
        let v = c.take(len)?;
        if id == TP_GOOGLE_USER_AGENT {
            return Some(v);
        }
    }
    None
}

/// The plaintext CHLO of Google QUIC up to Q046 ("QUIC Crypto", the gQUIC handshake):
/// tag `CHLO`, a little-endian u16 tag count, 2 bytes of padding, then (tag, u32
/// little-endian end offset) pairs and the values they delimit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GquicHello<'a> {
    /// The version from the public header (`Q024`, `Q046`, …), when present.
    pub version: Option<u32>,
    pub sni: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
}

/// Finds and parses the CHLO in the first bytes of a gQUIC client packet.
pub fn gquic_chlo(dgram: &[u8]) -> Option<GquicHello<'_>> {
    let head = &dgram[..dgram.len().min(128)];
    let at = head.windows(4).position(|w| w == b"CHLO")?;
    let mut c = Cursor::new(&dgram[at + 4..]);
    let n = u16::from_le_bytes([c.u8()?, c.u8()?]);
    c.skip(2)?;
    let table = c.take(usize::from(n) * 8)?;
    let values = &dgram[at + 8 + table.len()..];
    let version = match dgram {
        // Public header with the version flag and an 8-byte connection id (≤ Q043).
        [f, _, _, _, _, _, _, _, _, b'Q', v @ ..] if f & 0x09 == 0x09 && v.len() >= 3 => {
            Some(u32::from_be_bytes([b'Q', v[0], v[1], v[2]]))
        }
        // IETF-style long header (Q046).
        [f, b'Q', a, b, d, ..] if f & 0x80 != 0 => Some(u32::from_be_bytes([b'Q', *a, *b, *d])),
        _ => None,
    };
    let mut hello = GquicHello { version, ..GquicHello::default() };
    let mut start = 0usize;
    for e in table.chunks_exact(8) {
        let end = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
        // A CHLO may continue in the next packet: keep the values this one holds.
        let Some(v) = values.get(start..end) else { break };
        match &e[..4] {
            b"SNI\0" => hello.sni = Some(v),
            b"UAID" => hello.user_agent = Some(v),
            _ => {}
        }
        start = end;
    }
    Some(hello)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(Version::from_wire(1), Some(Version::V1));
        assert_eq!(Version::from_wire(0x6b3343cf), Some(Version::V2));
        assert_eq!(Version::from_wire(0xff00001d), Some(Version::Draft29));
        assert_eq!(Version::V2.packet_type(1), PacketType::Initial);
        assert_eq!(Version::V1.packet_type(0), PacketType::Initial);
        assert_eq!(Version::V1.packet_type(1), PacketType::ZeroRtt);
        assert!(is_plausible_version(0x1a2a3a4a) && is_plausible_version(0x51303530));
        assert!(!is_plausible_version(0x12345678));
    }

    #[test]
    fn frames() {
        // PADDING, PING, ACK(largest 5, delay 0, 1 extra range), CRYPTO(off 3, "abc").
        let p = [0, 0, 1, 2, 5, 0, 1, 0, 1, 1, 6, 3, 3, b'a', b'b', b'c', 0, 0];
        let mut got = Vec::new();
        assert!(parse_initial_frames(&p, |o, d| got.push((o, d.to_vec()))));
        assert_eq!(got, [(3, b"abc".to_vec())]);
        assert!(!parse_initial_frames(&[0x08, 0], |_, _| {}), "STREAM is not allowed in Initial");
        assert!(!parse_initial_frames(&[6, 0, 9, 1], |_, _| {}), "truncated CRYPTO");
    }

    #[test]
    fn gquic_hello() {
        let mut p = vec![0x0d, 1, 2, 3, 4, 5, 6, 7, 8, b'Q', b'0', b'2', b'5', 1];
        p.extend_from_slice(&[0; 12]);
        p.extend_from_slice(&[0xa0, 1, 0, 0]);
        p.extend_from_slice(b"CHLO\x02\x00\x00\x00SNI\x00\x0b\x00\x00\x00UAID\x0f\x00\x00\x00");
        p.extend_from_slice(b"example.comabcd");
        let h = gquic_chlo(&p).unwrap();
        assert_eq!(h.sni, Some(&b"example.com"[..]));
        assert_eq!(h.user_agent, Some(&b"abcd"[..]));
        assert_eq!(h.version, Some(u32::from_be_bytes(*b"Q025")));
        let cut = gquic_chlo(&p[..p.len() - 1]).unwrap();
        assert_eq!((cut.sni, cut.user_agent), (Some(&b"example.com"[..]), None));
    }

    #[test]
    fn user_agent_param() {
        let p = [0x01, 0x02, 0x40, 0x64, 0x71, 0x29, 0x03, b'C', b'h', b'r'];
        assert_eq!(user_agent(&p), Some(&b"Chr"[..]));
        assert_eq!(user_agent(&p[..4]), None);
    }
}
