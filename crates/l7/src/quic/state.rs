//! Per-flow QUIC state: Initial keys, CRYPTO stream reassembly by offset, the hellos,
//! the user agent and the 0-RTT count.

use super::crypto::{InitialKeys, Side};
use super::parser::{gquic_chlo, parse_initial_frames, user_agent, HeaderError, LongHeader, PacketType, Version};
use crate::cursor::{lossy_string, Cursor};
use crate::event::{Event, Events};
use crate::tls::fingerprint::Ja4Transport;
use crate::tls::parser::{ClientHello, ServerHello, HANDSHAKE_CLIENT_HELLO, HANDSHAKE_SERVER_HELLO};
use crate::tls::{ClientHelloInfo, ServerHelloInfo, TlsInfo};
use crate::Dir;

/// What the Initial packets told.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuicInfo {
    /// The version on the client's first long header, and the server's.
    pub client_version: Option<u32>,
    pub server_version: Option<u32>,
    /// Both hellos (the ClientHello's JA4 starts with `q`).
    pub tls: TlsInfo,
    /// google_user_agent transport parameter.
    pub user_agent: Option<String>,
    /// 0-RTT long-header packets from the client (RFC 9000 §17.2.3).
    pub zero_rtt_packets: u32,
    /// Initial packets decrypted, per direction.
    pub initial_packets: [u32; 2],
}

/// The CRYPTO stream of one direction at the Initial level, rebuilt by offset (RFC 9000
/// §19.6: frames may come in any order, repeated or overlapping) up to a cap.
#[derive(Clone, Debug, Default)]
pub(crate) struct CryptoStream {
    buf: Vec<u8>,
    /// Received ranges, sorted and merged; at most `MAX_RANGES`.
    ranges: Vec<(usize, usize)>,
}

const MAX_RANGES: usize = 16;

impl CryptoStream {
    /// Adds the bytes at `offset`; what lies beyond `cap` is dropped and reported.
    pub(crate) fn insert(&mut self, offset: u64, data: &[u8], cap: usize) -> Result<(), Event> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        if start >= cap {
            return Err(Event::QuicCryptoLimit);
        }
        let end = start.saturating_add(data.len()).min(cap);
        if end > self.buf.len() {
            self.buf.resize(end, 0);
        }
        self.buf[start..end].copy_from_slice(&data[..end - start]);
        self.ranges.push((start, end));
        self.ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(self.ranges.len());
        for &(s, e) in &self.ranges {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.ranges = merged;
        if self.ranges.len() > MAX_RANGES || end - start < data.len() {
            return Err(Event::QuicCryptoLimit);
        }
        Ok(())
    }

    /// The bytes received without a hole from offset 0.
    pub(crate) fn contiguous(&self) -> &[u8] {
        match self.ranges.first() {
            Some(&(0, e)) => &self.buf[..e],
            _ => &[],
        }
    }

    pub(crate) fn release(&mut self) {
        *self = CryptoStream::default();
    }
}

/// The first handshake message of a CRYPTO stream (RFC 9001 §4: handshake messages
/// without records): `Some((type, body))` once whole.
fn first_message(stream: &[u8]) -> Option<(u8, &[u8])> {
    let mut c = Cursor::new(stream);
    let kind = c.u8()?;
    let len = c.u24()?;
    Some((kind, c.take(len as usize)?))
}

/// QUIC, one flow.
#[derive(Clone, Debug, Default)]
pub struct QuicState {
    pub info: QuicInfo,
    /// The Destination Connection ID of the client's first Initial: both sides' Initial
    /// keys come from it (RFC 9001 §5.2).
    dcid: Vec<u8>,
    keys: [Option<Box<InitialKeys>>; 2],
    crypto: [CryptoStream; 2],
    hello_done: [bool; 2],
    /// A client short header means 1-RTT keys are in use: no more 0-RTT can follow.
    client_short_seen: bool,
    datagrams: [u16; 2],
    scratch: Vec<u8>,
    pub(crate) events: Events,
}

/// After this many datagrams of a direction without its hello, give up on it; the 0-RTT
/// count also stops there.
const MAX_DATAGRAMS: u16 = 32;

impl QuicInfo {
    /// The strings a record writes that the client chose (its hello's, its user agent),
    /// each handed to `f` (see `L7Flow::texts_mut`).
    pub fn texts_mut(&mut self, f: &mut crate::TextVisitor<'_>) {
        let QuicInfo { client_version: _, server_version: _, tls, user_agent, zero_rtt_packets: _, initial_packets: _ } =
            self;
        tls.texts_mut(f);
        crate::visit(user_agent, f);
    }
}

impl QuicState {
    pub fn on_datagram(&mut self, dir: Dir, dgram: &[u8], cap: usize) {
        let d = dir as usize;
        self.datagrams[d] = self.datagrams[d].saturating_add(1);
        let mut rest = dgram;
        while !rest.is_empty() {
            let hdr = match LongHeader::parse(rest) {
                Ok(h) => h,
                Err(HeaderError::ShortHeader) => {
                    // gQUIC's public header (≤ Q043) has the top bit clear too.
                    if self.datagrams[d] == 1 && self.on_gquic(dir, rest) {
                        break;
                    }
                    if dir == Dir::ClientToServer {
                        self.client_short_seen = true;
                    }
                    break;
                }
                Err(HeaderError::UnknownVersion(_)) => {
                    self.on_gquic(dir, rest);
                    break;
                }
                Err(HeaderError::Malformed) => {
                    // Padding after coalesced packets is zeros (RFC 9000 §12.2 allows
                    // junk there), not a malformed header worth an event.
                    if rest[0] != 0 {
                        self.events.insert(Event::QuicHeaderMalformed);
                    }
                    break;
                }
            };
            match dir {
                Dir::ClientToServer => {
                    self.info.client_version.get_or_insert(hdr.wire_version);
                }
                Dir::ServerToClient => {
                    self.info.server_version.get_or_insert(hdr.wire_version);
                }
            }
            match hdr.packet_type {
                PacketType::ZeroRtt if dir == Dir::ClientToServer => self.info.zero_rtt_packets += 1,
                PacketType::Initial if !self.hello_done[d] => {
                    self.on_initial(dir, &hdr, &rest[..hdr.packet_len], cap);
                }
                PacketType::Retry => {
                    // RFC 9001 §5.2: after a Retry the client derives new Initial keys
                    // from the Retry's Source Connection ID.
                    self.dcid.clear();
                    self.keys = [None, None];
                    self.crypto[0].release();
                }
                _ => {}
            }
            if hdr.packet_type == PacketType::Retry {
                break;
            }
            rest = &rest[hdr.packet_len..];
        }
        if self.datagrams[d] >= MAX_DATAGRAMS && !self.hello_done[d] {
            self.finish(dir);
        }
    }

    /// Google QUIC before the IETF handshake: the client's CHLO is in plaintext.
    fn on_gquic(&mut self, dir: Dir, dgram: &[u8]) -> bool {
        if dir != Dir::ClientToServer || self.hello_done[0] {
            return false;
        }
        let Some(h) = gquic_chlo(dgram) else { return false };
        let lossy = lossy_string;
        self.info.client_version = self.info.client_version.or(h.version);
        self.info.user_agent = h.user_agent.map(lossy);
        self.info.tls.client = Some(ClientHelloInfo { sni: h.sni.map(lossy), ..ClientHelloInfo::default() });
        self.finish(dir);
        true
    }

    fn on_initial(&mut self, dir: Dir, hdr: &LongHeader<'_>, packet: &[u8], cap: usize) {
        let d = dir as usize;
        if dir == Dir::ClientToServer && self.dcid.is_empty() {
            self.dcid.extend_from_slice(hdr.dcid);
        }
        if self.dcid.is_empty() {
            // A server Initial before any client Initial: no keys to try.
            return;
        }
        let side = if dir == Dir::ClientToServer { Side::Client } else { Side::Server };
        let keys = self.keys[d].get_or_insert_with(|| Box::new(InitialKeys::new(hdr.version, &self.dcid, side)));
        self.scratch.clear();
        self.scratch.extend_from_slice(packet);
        if keys.decrypt(hdr, &mut self.scratch).is_none() {
            let reserved = hdr.wire_version & 0x0f0f_0f0f == 0x0a0a_0a0a;
            if !reserved {
                self.events.insert(Event::QuicDecryptFailed);
                return;
            }
            // A reserved version protected with v1 keys (see `Version::from_wire`).
            **keys = InitialKeys::new(Version::V1, &self.dcid, side);
            self.scratch.clear();
            self.scratch.extend_from_slice(packet);
            if keys.decrypt(hdr, &mut self.scratch).is_none() {
                self.events.insert(Event::QuicDecryptFailed);
                return;
            }
        }
        // Decrypted in place: the payload sits between the header and the tag.
        let pn_len = usize::from(self.scratch[0] & 0x03) + 1;
        let payload = &self.scratch[hdr.pn_offset + pn_len..self.scratch.len() - 16];
        self.info.initial_packets[d] += 1;
        let crypto = &mut self.crypto[d];
        let mut limit = None;
        let ok = parse_initial_frames(payload, |off, data| {
            if let Err(e) = crypto.insert(off, data, cap) {
                limit = Some(e);
            }
        });
        if !ok {
            self.events.insert(Event::QuicFrameMalformed);
        }
        if let Some(e) = limit {
            self.events.insert(e);
        }
        let Some((kind, body)) = first_message(self.crypto[d].contiguous()) else {
            if limit.is_some() {
                self.finish(dir);
            }
            return;
        };
        match (dir, kind) {
            (Dir::ClientToServer, HANDSHAKE_CLIENT_HELLO) => match ClientHello::parse(body, false) {
                Some(ch) => {
                    self.info.user_agent = ch.quic_transport_parameters().and_then(user_agent).map(lossy_string);
                    self.info.tls.client = Some(ClientHelloInfo::from_hello(&ch, Ja4Transport::Quic));
                }
                None => self.events.insert(Event::TlsHandshakeMalformed),
            },
            (Dir::ServerToClient, HANDSHAKE_SERVER_HELLO) => match ServerHello::parse(body, false) {
                Some(sh) => self.info.tls.server = Some(ServerHelloInfo::from_hello(&sh, Ja4Transport::Quic)),
                None => self.events.insert(Event::TlsHandshakeMalformed),
            },
            _ => self.events.insert(Event::TlsHandshakeMalformed),
        }
        self.finish(dir);
    }

    /// This direction's hello is done: free what parsing needed.
    fn finish(&mut self, dir: Dir) {
        let d = dir as usize;
        self.hello_done[d] = true;
        self.crypto[d].release();
        self.keys[d] = None;
        // The other direction's next Initial allocates it again if it needs it.
        self.scratch = Vec::new();
    }

    /// True when nothing is left to learn: both hellos are done and the client can send
    /// no more 0-RTT (it sent a short header, or enough datagrams passed).
    pub fn is_done(&self) -> bool {
        self.hello_done.iter().all(|&h| h)
            && (self.client_short_seen || self.datagrams[Dir::ClientToServer as usize] >= MAX_DATAGRAMS)
    }

    pub(crate) fn stop(&mut self, dir: Dir) {
        self.finish(dir);
        if dir == Dir::ClientToServer {
            self.client_short_seen = true;
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.scratch.capacity()
            + self.dcid.capacity()
            + self.crypto.iter().map(|c| c.buf.capacity() + c.ranges.capacity() * 16).sum::<usize>()
            + self.keys.iter().flatten().count() * std::mem::size_of::<InitialKeys>()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::quic::crypto::tests::unhex;

    /// RFC 9001 Appendix A.2: the client Initial, protected (1200 bytes), typed from the
    /// RFC; the keys of A.1 are checked in `crypto.rs`, and AEAD authentication of the
    /// whole packet checks every byte here.
    pub(crate) const RFC9001_A2_PACKET: &str = include_str!("testdata/rfc9001_a2_client_initial.hex");

    /// RFC 9001 Appendix A.2's unprotected CRYPTO frame (the ClientHello for
    /// example.com), the same payload RFC 9369 Appendix A.2 protects for v2.
    pub(crate) const RFC9001_A2_CRYPTO_FRAME: &str = include_str!("testdata/rfc9001_a2_crypto_frame.hex");

    /// RFC 9369 Appendix A.2: the v2 client Initial. The first 193 bytes were typed from
    /// the RFC; the rest is the same protection applied by an independent implementation
    /// (Python `cryptography`) to A.2's payload with the A.1 keys, which the RFC's keys
    /// (checked in `crypto.rs`) and prefix match byte for byte.
    pub(crate) fn rfc9369_packet() -> Vec<u8> {
        unhex(include_str!("testdata/rfc9369_a2_client_initial.hex"))
    }

    #[test]
    fn rfc9001_a2_client_initial() {
        let p = unhex(RFC9001_A2_PACKET);
        assert_eq!(p.len(), 1200);
        let hdr = LongHeader::parse(&p).unwrap();
        assert_eq!(hdr.packet_len, 1200);
        let keys = InitialKeys::new(hdr.version, hdr.dcid, Side::Client);
        let mut buf = p.clone();
        let (pn, payload) = keys.decrypt(&hdr, &mut buf).unwrap();
        assert_eq!(pn, 2);
        let frame = unhex(RFC9001_A2_CRYPTO_FRAME);
        assert_eq!(&payload[..frame.len()], &frame[..]);
        assert!(payload[frame.len()..].iter().all(|&b| b == 0), "the rest is PADDING");

        let mut st = QuicState::default();
        st.on_datagram(Dir::ClientToServer, &p, 16384);
        let ch = st.info.tls.client.as_ref().unwrap();
        assert_eq!(ch.sni.as_deref(), Some("example.com"));
        assert_eq!(ch.alpn, ["alpn"]);
        assert_eq!(ch.supported_versions, [0x0304]);
        assert_eq!(st.info.client_version, Some(1));
        // Hashes checked with Python's hashlib on the lists JA4.md builds: "1301,1302" and
        // "0005,000a,000d,001c,002b,002d,0033,0039,ff01_0403,0503,0603,0203,0804,0805,0806".
        assert_eq!(ch.ja4, "q13d0211an_62ed6f6ca7ad_4d634acda6c0");
        assert!(st.events.is_empty(), "{:?}", st.events);
    }

    #[test]
    fn rfc9369_a2_client_initial() {
        let p = rfc9369_packet();
        assert_eq!(p.len(), 1200);
        let mut st = QuicState::default();
        st.on_datagram(Dir::ClientToServer, &p, 16384);
        assert_eq!(st.info.client_version, Some(0x6b3343cf));
        assert_eq!(st.info.tls.client.as_ref().unwrap().sni.as_deref(), Some("example.com"));
    }

    /// A v1 client Initial carrying `frames`, padded to 1200 bytes.
    fn initial(dcid: &[u8], pn: u32, frames: &[u8]) -> Vec<u8> {
        let payload_len = 1200 - (7 + dcid.len() + 1 + 2 + 4) - 16;
        let mut payload = frames.to_vec();
        payload.resize(payload_len, 0);
        let mut header = vec![0xc3, 0, 0, 0, 1, dcid.len() as u8];
        header.extend_from_slice(dcid);
        header.extend_from_slice(&[0, 0]);
        header.extend_from_slice(&(0x4000u16 | (payload_len + 4 + 16) as u16).to_be_bytes());
        header.extend_from_slice(&pn.to_be_bytes());
        let keys = InitialKeys::new(crate::quic::parser::Version::V1, dcid, Side::Client);
        crate::quic::crypto::tests::protect(&keys, &header, pn, &payload)
    }

    fn crypto_frame(offset: usize, data: &[u8]) -> Vec<u8> {
        let mut f =
            vec![0x06, 0x40 | (offset >> 8) as u8, offset as u8, 0x40 | (data.len() >> 8) as u8, data.len() as u8];
        f.extend_from_slice(data);
        f
    }

    #[test]
    fn a_client_hello_over_two_initials_in_any_order() {
        // The RFC's ClientHello (241 bytes of CRYPTO data) cut in three pieces over two
        // packets, the later piece first, as Chrome's "chaos protection" does.
        let frame = unhex(RFC9001_A2_CRYPTO_FRAME);
        let hello = &frame[4..];
        let dcid = [7u8; 8];
        let first = [crypto_frame(150, &hello[150..]), vec![1, 0, 0], crypto_frame(0, &hello[..60])].concat();
        let second = crypto_frame(60, &hello[60..150]);
        for order in [[0, 1], [1, 0]] {
            let pkts = [initial(&dcid, 0, &first), initial(&dcid, 1, &second)];
            let mut st = QuicState::default();
            st.on_datagram(Dir::ClientToServer, &pkts[order[0]], 16384);
            assert!(st.info.tls.client.is_none(), "half a hello is not a hello");
            st.on_datagram(Dir::ClientToServer, &pkts[order[1]], 16384);
            assert_eq!(st.info.tls.client.as_ref().and_then(|c| c.sni.as_deref()), Some("example.com"));
            assert_eq!(st.info.initial_packets[0], 2);
            assert!(st.events.is_empty(), "{:?}", st.events);
            assert_eq!(st.heap_bytes(), st.dcid.capacity(), "reassembly and keys are freed");
        }
    }

    #[test]
    fn zero_rtt_packets_are_counted() {
        // RFC 9001 A.2's Initial coalesced with a 0-RTT packet (type 01, RFC 9000
        // §17.2.3) of 30 bytes, then a datagram of 0-RTT alone, then a short header.
        let mut d = unhex(RFC9001_A2_PACKET);
        let zero_rtt = [0xd1, 0, 0, 0, 1, 0, 0, 0x40, 22];
        d.extend_from_slice(&zero_rtt);
        d.extend_from_slice(&[0xaa; 22]);
        let mut st = QuicState::default();
        st.on_datagram(Dir::ClientToServer, &d, 16384);
        st.on_datagram(Dir::ClientToServer, &d[1200..], 16384);
        assert_eq!(st.info.zero_rtt_packets, 2);
        assert!(!st.is_done(), "0-RTT may still come");
        st.on_datagram(Dir::ClientToServer, &[0x41, 1, 2, 3], 16384);
        st.on_datagram(Dir::ServerToClient, &[0x41, 1, 2, 3], 16384);
        assert_eq!(st.info.zero_rtt_packets, 2);
    }

    #[test]
    fn a_flipped_byte_fails_authentication() {
        let mut p = unhex(RFC9001_A2_PACKET);
        p[600] ^= 1;
        let mut st = QuicState::default();
        st.on_datagram(Dir::ClientToServer, &p, 16384);
        assert!(st.info.tls.client.is_none());
        assert!(st.events.contains(Event::QuicDecryptFailed));
    }

    proptest::proptest! {
        /// CRYPTO frames in any order, overlapping, give the same stream.
        #[test]
        fn crypto_frames_in_any_order(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..2000),
            pieces in proptest::collection::vec((0usize..2000, 1usize..400), 1..40),
        ) {
            let mut s = CryptoStream::default();
            let mut covered = vec![false; data.len()];
            for (at, len) in pieces {
                let at = at % data.len();
                let end = (at + len).min(data.len());
                let _ = s.insert(at as u64, &data[at..end], 16384);
                covered[at..end].iter_mut().for_each(|c| *c = true);
            }
            let prefix = covered.iter().take_while(|&&c| c).count();
            // Beyond MAX_RANGES holes the stream stops tracking; it never lies.
            proptest::prop_assert!(s.contiguous().len() <= prefix);
            proptest::prop_assert_eq!(s.contiguous(), &data[..s.contiguous().len()]);
            let _ = s.insert(0, &data, 16384);
            proptest::prop_assert_eq!(s.contiguous(), &data[..]);
        }
    }

    #[test]
    fn crypto_stream_out_of_order() {
        let mut s = CryptoStream::default();
        s.insert(4, b"efgh", 64).unwrap();
        assert_eq!(s.contiguous(), b"");
        s.insert(0, b"abcd", 64).unwrap();
        s.insert(2, b"cdef", 64).unwrap();
        assert_eq!(s.contiguous(), b"abcdefgh");
        assert_eq!(s.insert(100, b"x", 64), Err(Event::QuicCryptoLimit));
    }
}
