//! TLS and DTLS wire parsing: record headers, the first handshake message of a stream,
//! ClientHello and ServerHello. Pure bytes → structs; knows no flows.
//!
//! References: RFC 8446 (TLS 1.3) §4.1.2 ClientHello, §4.1.3 ServerHello, §4.2 extensions,
//! §5.1 records; RFC 5246 (TLS 1.2) §7.4.1; RFC 9147 (DTLS 1.3) and RFC 6347 (DTLS 1.2)
//! §4.1 records and §4.2.2 handshake headers.

use crate::cursor::{u16s, Cursor};
use crate::event::Event;

/// A TLS record header is 5 bytes (RFC 8446 §5.1).
pub const RECORD_HEADER_LEN: usize = 5;
/// A DTLS record header is 13 bytes (RFC 6347 §4.1: type, version, epoch, sequence, length).
pub const DTLS_RECORD_HEADER_LEN: usize = 13;
/// The largest record: 2^14 bytes of plaintext plus 2048 of expansion (RFC 5246 §6.2.3;
/// RFC 8446 §5.2 allows 2^14 + 256, older versions more).
pub const MAX_RECORD_LEN: u16 = (1 << 14) + 2048;

pub const CONTENT_CHANGE_CIPHER_SPEC: u8 = 20;
pub const CONTENT_ALERT: u8 = 21;
pub const CONTENT_HANDSHAKE: u8 = 22;
pub const CONTENT_APPLICATION_DATA: u8 = 23;
pub const CONTENT_HEARTBEAT: u8 = 24;

/// The level of a warning alert (RFC 5246 §7.2).
pub const ALERT_LEVEL_WARNING: u8 = 1;

pub const HANDSHAKE_CLIENT_HELLO: u8 = 1;
pub const HANDSHAKE_SERVER_HELLO: u8 = 2;

pub const EXT_SERVER_NAME: u16 = 0;
pub const EXT_SUPPORTED_GROUPS: u16 = 10;
pub const EXT_EC_POINT_FORMATS: u16 = 11;
pub const EXT_SIGNATURE_ALGORITHMS: u16 = 13;
pub const EXT_ALPN: u16 = 16;
pub const EXT_SUPPORTED_VERSIONS: u16 = 43;
/// quic_transport_parameters (RFC 9001 §8.2).
pub const EXT_QUIC_TRANSPORT_PARAMETERS: u16 = 0x39;
/// The code point drafts of QUIC up to 32 used for the transport parameters.
pub const EXT_QUIC_TRANSPORT_PARAMETERS_DRAFT: u16 = 0xffa5;

/// GREASE values (RFC 8701 §2): 0x?A?A with both bytes equal. Fingerprints drop them.
pub fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff
}

/// The kind of one record, as the engine's timing markers need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    Handshake,
    ChangeCipherSpec,
    ApplicationData,
    Alert,
    Heartbeat,
}

impl RecordKind {
    pub fn from_content_type(t: u8) -> Option<Self> {
        match t {
            CONTENT_CHANGE_CIPHER_SPEC => Some(RecordKind::ChangeCipherSpec),
            CONTENT_ALERT => Some(RecordKind::Alert),
            CONTENT_HANDSHAKE => Some(RecordKind::Handshake),
            CONTENT_APPLICATION_DATA => Some(RecordKind::ApplicationData),
            CONTENT_HEARTBEAT => Some(RecordKind::Heartbeat),
            _ => None,
        }
    }
}

/// A TLS or DTLS record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: RecordKind,
    pub version: u16,
    pub length: u16,
}

impl RecordHeader {
    /// Parses the 5-byte TLS header: a known content type, major version 3 and a length
    /// within `MAX_RECORD_LEN`. `Err(None)` means too few bytes, `Err(Some(event))` bytes
    /// that are not a record.
    pub fn parse(b: &[u8]) -> Result<Self, Option<Event>> {
        let h = b.get(..RECORD_HEADER_LEN).ok_or(None)?;
        let kind = RecordKind::from_content_type(h[0]).ok_or(Some(Event::TlsNotHandshake))?;
        let version = u16::from_be_bytes([h[1], h[2]]);
        let length = u16::from_be_bytes([h[3], h[4]]);
        // SSL 3.0 to TLS 1.3 all put major version 3 here (RFC 8446 §5.1 freezes 0x0303).
        if version >> 8 != 3 {
            return Err(Some(Event::TlsNotHandshake));
        }
        if length > MAX_RECORD_LEN {
            return Err(Some(Event::TlsRecordTooLong));
        }
        Ok(RecordHeader { kind, version, length })
    }

    /// Parses the 13-byte DTLS header (RFC 6347 §4.1); DTLS versions are 0xfeff (1.0),
    /// 0xfefd (1.2) and 0xfefc (1.3's legacy field keeps 0xfefd, RFC 9147 §4).
    pub fn parse_dtls(b: &[u8]) -> Option<Self> {
        let h = b.get(..DTLS_RECORD_HEADER_LEN)?;
        let kind = RecordKind::from_content_type(h[0])?;
        let version = u16::from_be_bytes([h[1], h[2]]);
        let length = u16::from_be_bytes([h[11], h[12]]);
        if !matches!(version, 0xfeff | 0xfefd | 0xfefc) || length > MAX_RECORD_LEN {
            return None;
        }
        Some(RecordHeader { kind, version, length })
    }
}

/// The answer of a stream parser on the bytes seen so far (Suricata's
/// done / need-more / give-up).
#[derive(Debug, PartialEq, Eq)]
pub enum HandshakeProgress<'a> {
    /// The first handshake message: its type and body.
    Done(u8, &'a [u8]),
    /// Call again once the stream holds at least `needed` bytes.
    NeedMore { needed: usize },
    /// Not a handshake stream; stop.
    GiveUp(Event),
}

/// Finds the first handshake message at the start of a TLS byte stream (RFC 8446 §5.1:
/// a handshake message may span several records, and a record may be cut anywhere by
/// TCP). When the message lies inside the first record the body borrows `stream`; when it
/// spans records their payloads are joined in `scratch`.
pub fn first_handshake_message<'a>(stream: &'a [u8], scratch: &'a mut Vec<u8>) -> HandshakeProgress<'a> {
    let first = match RecordHeader::parse(stream) {
        Ok(h) => h,
        Err(None) => return HandshakeProgress::NeedMore { needed: RECORD_HEADER_LEN },
        Err(Some(e)) => return HandshakeProgress::GiveUp(e),
    };
    if first.kind == RecordKind::Alert && first.length == 2 {
        // A warning alert before the hello (a server's unrecognized_name, RFC 6066 §3,
        // sent ahead of its ServerHello): skip it, as nDPI and tshark read on.
        let skip = RECORD_HEADER_LEN + 2;
        return match stream.get(RECORD_HEADER_LEN) {
            None => HandshakeProgress::NeedMore { needed: skip },
            Some(&ALERT_LEVEL_WARNING) => match first_handshake_message(&stream[skip.min(stream.len())..], scratch) {
                HandshakeProgress::NeedMore { needed } => HandshakeProgress::NeedMore { needed: needed + skip },
                other => other,
            },
            Some(_) => HandshakeProgress::GiveUp(Event::TlsNotHandshake),
        };
    }
    if first.kind != RecordKind::Handshake {
        return HandshakeProgress::GiveUp(Event::TlsNotHandshake);
    }
    let rec_end = RECORD_HEADER_LEN + usize::from(first.length);
    let payload = &stream[RECORD_HEADER_LEN..rec_end.min(stream.len())];
    if payload.len() >= 4 {
        let msg_len = u32::from_be_bytes([0, payload[1], payload[2], payload[3]]) as usize;
        if let Some(body) = payload.get(4..4 + msg_len) {
            return HandshakeProgress::Done(payload[0], body);
        }
    }
    if stream.len() < rec_end {
        return HandshakeProgress::NeedMore { needed: rec_end };
    }
    // The message continues in the next records: join their payloads.
    scratch.clear();
    scratch.extend_from_slice(payload);
    let mut pos = rec_end;
    loop {
        let h = match RecordHeader::parse(&stream[pos..]) {
            Ok(h) => h,
            Err(None) => return HandshakeProgress::NeedMore { needed: pos + RECORD_HEADER_LEN },
            Err(Some(e)) => return HandshakeProgress::GiveUp(e),
        };
        if h.kind != RecordKind::Handshake {
            return HandshakeProgress::GiveUp(Event::TlsHandshakeMalformed);
        }
        if h.length == 0 {
            // RFC 8446 §5.1 forbids empty handshake records; a loop on them gains nothing.
            return HandshakeProgress::GiveUp(Event::TlsHandshakeMalformed);
        }
        let end = pos + RECORD_HEADER_LEN + usize::from(h.length);
        let avail = &stream[pos + RECORD_HEADER_LEN..end.min(stream.len())];
        scratch.extend_from_slice(avail);
        if scratch.len() >= 4 {
            let msg_len = u32::from_be_bytes([0, scratch[1], scratch[2], scratch[3]]) as usize;
            if scratch.len() >= 4 + msg_len {
                let kind = scratch[0];
                return HandshakeProgress::Done(kind, &scratch[4..4 + msg_len]);
            }
        }
        if stream.len() < end {
            return HandshakeProgress::NeedMore { needed: end };
        }
        pos = end;
    }
}

/// The first handshake message of one DTLS datagram, when it is whole in the first record
/// (RFC 6347 §4.2.2: fragment_offset 0 and fragment_length equal to length).
pub fn dtls_first_handshake_message(datagram: &[u8]) -> Result<(u8, &[u8]), Event> {
    let h = RecordHeader::parse_dtls(datagram).ok_or(Event::TlsNotHandshake)?;
    if h.kind != RecordKind::Handshake {
        return Err(Event::TlsNotHandshake);
    }
    let end = DTLS_RECORD_HEADER_LEN + usize::from(h.length);
    let payload = datagram.get(DTLS_RECORD_HEADER_LEN..end).ok_or(Event::TlsHandshakeMalformed)?;
    let mut c = Cursor::new(payload);
    let kind = c.u8().ok_or(Event::TlsHandshakeMalformed)?;
    let length = c.u24().ok_or(Event::TlsHandshakeMalformed)?;
    let _message_seq = c.u16().ok_or(Event::TlsHandshakeMalformed)?;
    let offset = c.u24().ok_or(Event::TlsHandshakeMalformed)?;
    let frag_len = c.u24().ok_or(Event::TlsHandshakeMalformed)?;
    if offset != 0 || frag_len != length {
        return Err(Event::DtlsFragmented);
    }
    let body = c.take(length as usize).ok_or(Event::DtlsFragmented)?;
    Ok((kind, body))
}

/// A ClientHello (RFC 8446 §4.1.2; DTLS adds a cookie after the session id, RFC 6347
/// §4.2.1). Lists stay raw slices; the accessors iterate them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientHello<'a> {
    pub legacy_version: u16,
    pub random: &'a [u8],
    pub session_id: &'a [u8],
    /// Raw big-endian u16 cipher suites.
    pub cipher_suites: &'a [u8],
    pub compression_methods: &'a [u8],
    /// Raw extensions block (without its length); empty when absent (SSL 3.0, RFC 5246
    /// §7.4.1.2 allows it).
    pub extensions: &'a [u8],
}

impl<'a> ClientHello<'a> {
    pub fn parse(body: &'a [u8], dtls: bool) -> Option<Self> {
        let mut c = Cursor::new(body);
        let legacy_version = c.u16()?;
        let random = c.take(32)?;
        let session_id = c.vec8()?;
        if dtls {
            let _cookie = c.vec8()?;
        }
        let cipher_suites = c.vec16()?;
        let compression_methods = c.vec8()?;
        let extensions = if c.is_empty() { &[][..] } else { c.vec16()? };
        Some(ClientHello { legacy_version, random, session_id, cipher_suites, compression_methods, extensions })
    }

    pub fn ciphers(&self) -> impl Iterator<Item = u16> + 'a {
        u16s(self.cipher_suites)
    }

    pub fn extensions(&self) -> Extensions<'a> {
        Extensions(Cursor::new(self.extensions))
    }

    pub fn extension(&self, kind: u16) -> Option<&'a [u8]> {
        self.extensions().find(|&(t, _)| t == kind).map(|(_, d)| d)
    }

    /// The first host_name of server_name (RFC 6066 §3).
    pub fn server_name(&self) -> Option<&'a [u8]> {
        first_host_name(self.extension(EXT_SERVER_NAME)?)
    }

    /// The protocol names offered in ALPN (RFC 7301 §3.1).
    pub fn alpn(&self) -> impl Iterator<Item = &'a [u8]> {
        alpn_list(self.extension(EXT_ALPN).unwrap_or_default())
    }

    /// supported_versions (RFC 8446 §4.2.1): a one-byte-length list of u16.
    pub fn supported_versions(&self) -> impl Iterator<Item = u16> + 'a {
        u16s(list8(self.extension(EXT_SUPPORTED_VERSIONS)))
    }

    pub fn supported_groups(&self) -> impl Iterator<Item = u16> + 'a {
        u16s(list16(self.extension(EXT_SUPPORTED_GROUPS)))
    }

    pub fn ec_point_formats(&self) -> &'a [u8] {
        list8(self.extension(EXT_EC_POINT_FORMATS))
    }

    pub fn signature_algorithms(&self) -> impl Iterator<Item = u16> + 'a {
        u16s(list16(self.extension(EXT_SIGNATURE_ALGORITHMS)))
    }

    /// The QUIC transport parameters (RFC 9001 §8.2, or the drafts' code point).
    pub fn quic_transport_parameters(&self) -> Option<&'a [u8]> {
        self.extension(EXT_QUIC_TRANSPORT_PARAMETERS).or_else(|| self.extension(EXT_QUIC_TRANSPORT_PARAMETERS_DRAFT))
    }

    /// The extensions the results and fingerprints read, found in one walk of the block:
    /// each field is what the accessor of the same name reads (the first extension of
    /// its type), without walking the block once per accessor.
    pub fn known_extensions(&self) -> KnownExtensions<'a> {
        let mut k = KnownExtensions::default();
        for (t, d) in self.extensions() {
            let slot = match t {
                EXT_SERVER_NAME => &mut k.server_name,
                EXT_ALPN => &mut k.alpn,
                EXT_SUPPORTED_VERSIONS => &mut k.supported_versions,
                EXT_SUPPORTED_GROUPS => &mut k.supported_groups,
                EXT_EC_POINT_FORMATS => &mut k.ec_point_formats,
                EXT_SIGNATURE_ALGORITHMS => &mut k.signature_algorithms,
                _ => continue,
            };
            slot.get_or_insert(d);
        }
        k
    }
}

/// The raw data of the first extension of each type a ClientHello's results read
/// (`ClientHello::known_extensions`); `None` when the type is absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KnownExtensions<'a> {
    pub server_name: Option<&'a [u8]>,
    pub alpn: Option<&'a [u8]>,
    pub supported_versions: Option<&'a [u8]>,
    pub supported_groups: Option<&'a [u8]>,
    pub ec_point_formats: Option<&'a [u8]>,
    pub signature_algorithms: Option<&'a [u8]>,
}

impl<'a> KnownExtensions<'a> {
    /// As `ClientHello::server_name`.
    pub fn server_name(&self) -> Option<&'a [u8]> {
        first_host_name(self.server_name?)
    }

    /// As `ClientHello::alpn`.
    pub fn alpn(&self) -> impl Iterator<Item = &'a [u8]> {
        alpn_list(self.alpn.unwrap_or_default())
    }

    /// As `ClientHello::supported_versions`.
    pub fn supported_versions(&self) -> impl Iterator<Item = u16> + 'a {
        u16s(list8(self.supported_versions))
    }

    /// As `ClientHello::supported_groups`.
    pub fn supported_groups(&self) -> impl Iterator<Item = u16> + 'a {
        u16s(list16(self.supported_groups))
    }

    /// As `ClientHello::ec_point_formats`.
    pub fn ec_point_formats(&self) -> &'a [u8] {
        list8(self.ec_point_formats)
    }

    /// As `ClientHello::signature_algorithms`.
    pub fn signature_algorithms(&self) -> impl Iterator<Item = u16> + 'a {
        u16s(list16(self.signature_algorithms))
    }
}

/// The first host_name in a server_name extension's data (RFC 6066 §3).
fn first_host_name(ext: &[u8]) -> Option<&[u8]> {
    let mut c = Cursor::new(ext);
    let mut list = Cursor::new(c.vec16()?);
    while !list.is_empty() {
        let kind = list.u8()?;
        let name = list.vec16()?;
        if kind == 0 {
            return Some(name);
        }
    }
    None
}

/// The one-byte-length list an extension's data holds; empty when the extension is
/// absent or truncated.
fn list8(ext: Option<&[u8]>) -> &[u8] {
    Cursor::new(ext.unwrap_or_default()).vec8().unwrap_or_default()
}

/// The two-byte-length list an extension's data holds; empty when the extension is
/// absent or truncated.
fn list16(ext: Option<&[u8]>) -> &[u8] {
    Cursor::new(ext.unwrap_or_default()).vec16().unwrap_or_default()
}

fn alpn_list(ext: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    let mut c = Cursor::new(Cursor::new(ext).vec16().unwrap_or_default());
    std::iter::from_fn(move || c.vec8())
}

/// Iterator over (type, data) of an extensions block; it stops at the first truncated
/// extension.
#[derive(Clone, Debug)]
pub struct Extensions<'a>(Cursor<'a>);

impl<'a> Iterator for Extensions<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let t = self.0.u16()?;
        let d = self.0.vec16()?;
        Some((t, d))
    }
}

/// A ServerHello (RFC 8446 §4.1.3; a HelloRetryRequest has the same shape).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerHello<'a> {
    pub legacy_version: u16,
    pub random: &'a [u8],
    pub session_id: &'a [u8],
    pub cipher_suite: u16,
    pub compression_method: u8,
    pub extensions: &'a [u8],
}

impl<'a> ServerHello<'a> {
    pub fn parse(body: &'a [u8], dtls: bool) -> Option<Self> {
        let mut c = Cursor::new(body);
        let legacy_version = c.u16()?;
        let random = c.take(32)?;
        let session_id = c.vec8()?;
        let _ = dtls; // DTLS ServerHello has no cookie (RFC 6347 §4.2.1).
        let cipher_suite = c.u16()?;
        let compression_method = c.u8()?;
        let extensions = if c.is_empty() { &[][..] } else { c.vec16()? };
        Some(ServerHello { legacy_version, random, session_id, cipher_suite, compression_method, extensions })
    }

    pub fn extensions(&self) -> Extensions<'a> {
        Extensions(Cursor::new(self.extensions))
    }

    /// The negotiated version: supported_versions when present (RFC 8446 §4.2.1: TLS 1.3
    /// servers keep 0x0303 in legacy_version), else legacy_version.
    pub fn selected_version(&self) -> u16 {
        self.extensions()
            .find(|&(t, _)| t == EXT_SUPPORTED_VERSIONS)
            .and_then(|(_, d)| Cursor::new(d).u16())
            .unwrap_or(self.legacy_version)
    }

    /// The protocol the server chose (RFC 7301 §3.1: a list of exactly one name). TLS 1.3
    /// moves it to EncryptedExtensions, which a passive observer cannot read.
    pub fn alpn(&self) -> Option<&'a [u8]> {
        let ext = self.extensions().find(|&(t, _)| t == EXT_ALPN)?.1;
        alpn_list(ext).next()
    }
}

/// The version's name as Tstat and tshark print it.
pub fn version_name(v: u16) -> &'static str {
    match v {
        0x0002 => "SSLv2",
        0x0300 => "SSLv3",
        0x0301 => "TLSv1",
        0x0302 => "TLSv1.1",
        0x0303 => "TLSv1.2",
        0x0304 => "TLSv1.3",
        0xfeff => "DTLSv1.0",
        0xfefd => "DTLSv1.2",
        0xfefc => "DTLSv1.3",
        _ => "unknown",
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a ClientHello handshake message (with its 4-byte header) from parts.
    pub(crate) fn client_hello(version: u16, ciphers: &[u16], extensions: &[(u16, Vec<u8>)], dtls: bool) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&version.to_be_bytes());
        body.extend_from_slice(&[0x11; 32]);
        body.push(0);
        if dtls {
            body.push(0);
        }
        body.extend_from_slice(&((ciphers.len() * 2) as u16).to_be_bytes());
        for c in ciphers {
            body.extend_from_slice(&c.to_be_bytes());
        }
        body.extend_from_slice(&[1, 0]);
        let mut ext = Vec::new();
        for (t, d) in extensions {
            ext.extend_from_slice(&t.to_be_bytes());
            ext.extend_from_slice(&(d.len() as u16).to_be_bytes());
            ext.extend_from_slice(d);
        }
        body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        body.extend_from_slice(&ext);
        let mut msg = vec![HANDSHAKE_CLIENT_HELLO];
        msg.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        msg.extend_from_slice(&body);
        msg
    }

    pub(crate) fn sni_ext(name: &str) -> (u16, Vec<u8>) {
        let mut d = Vec::new();
        d.extend_from_slice(&((name.len() + 3) as u16).to_be_bytes());
        d.push(0);
        d.extend_from_slice(&(name.len() as u16).to_be_bytes());
        d.extend_from_slice(name.as_bytes());
        (EXT_SERVER_NAME, d)
    }

    pub(crate) fn alpn_ext(names: &[&str]) -> (u16, Vec<u8>) {
        let mut l = Vec::new();
        for n in names {
            l.push(n.len() as u8);
            l.extend_from_slice(n.as_bytes());
        }
        let mut d = (l.len() as u16).to_be_bytes().to_vec();
        d.extend_from_slice(&l);
        (EXT_ALPN, d)
    }

    /// Wraps a handshake stream into records of at most `max` bytes each.
    pub(crate) fn records(msg: &[u8], max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for chunk in msg.chunks(max) {
            out.extend_from_slice(&[CONTENT_HANDSHAKE, 3, 1]);
            out.extend_from_slice(&(chunk.len() as u16).to_be_bytes());
            out.extend_from_slice(chunk);
        }
        out
    }

    #[test]
    fn client_hello_fields() {
        let msg =
            client_hello(0x0303, &[0x1301, 0x0a0a], &[sni_ext("example.com"), alpn_ext(&["h2", "http/1.1"])], false);
        let stream = records(&msg, 16384);
        let mut scratch = Vec::new();
        let HandshakeProgress::Done(kind, body) = first_handshake_message(&stream, &mut scratch) else {
            panic!("not done")
        };
        assert_eq!(kind, HANDSHAKE_CLIENT_HELLO);
        let ch = ClientHello::parse(body, false).unwrap();
        assert_eq!(ch.server_name(), Some(&b"example.com"[..]));
        assert_eq!(ch.alpn().collect::<Vec<_>>(), [&b"h2"[..], b"http/1.1"]);
        assert_eq!(ch.ciphers().collect::<Vec<_>>(), [0x1301, 0x0a0a]);
    }

    #[test]
    fn a_hello_over_many_records_and_cut_anywhere() {
        let msg = client_hello(0x0303, &[0x1301], &[sni_ext("a.example.org")], false);
        let stream = records(&msg, 7);
        let mut scratch = Vec::new();
        for cut in 0..stream.len() {
            let mut s2 = Vec::new();
            match first_handshake_message(&stream[..cut], &mut s2) {
                HandshakeProgress::NeedMore { needed } => assert!(needed > cut, "{cut}"),
                other => panic!("cut {cut}: {other:?}"),
            }
        }
        let HandshakeProgress::Done(_, body) = first_handshake_message(&stream, &mut scratch) else { panic!() };
        assert_eq!(ClientHello::parse(body, false).unwrap().server_name(), Some(&b"a.example.org"[..]));
    }

    /// ndpi__http_ipv6.pcap's servers answer a warning unrecognized_name alert, then the
    /// ServerHello, in one segment: the hello is found behind the alert, whole or cut.
    #[test]
    fn warning_alert_before_the_hello() {
        let mut stream = vec![21, 3, 3, 0, 2, 1, 112];
        stream.extend_from_slice(&records(&client_hello(0x0303, &[0x1301], &[], false), 16384));
        let mut s = Vec::new();
        assert!(matches!(first_handshake_message(&stream, &mut s), HandshakeProgress::Done(1, _)));
        for cut in 0..stream.len() {
            match first_handshake_message(&stream[..cut], &mut s) {
                HandshakeProgress::NeedMore { needed } => assert!(needed > cut && needed <= stream.len(), "{cut}"),
                other => panic!("cut {cut}: {other:?}"),
            }
        }
        stream[5] = 2;
        assert!(matches!(first_handshake_message(&stream, &mut s), HandshakeProgress::GiveUp(Event::TlsNotHandshake)));
    }

    #[test]
    fn not_tls_gives_up() {
        let mut s = Vec::new();
        assert!(matches!(first_handshake_message(b"GET / HTTP/1.1\r\n", &mut s), HandshakeProgress::GiveUp(_)));
        assert!(matches!(
            first_handshake_message(&[23, 3, 3, 0, 1, 0], &mut s),
            HandshakeProgress::GiveUp(Event::TlsNotHandshake)
        ));
        assert!(matches!(
            first_handshake_message(&[22, 3, 3, 0xff, 0xff], &mut s),
            HandshakeProgress::GiveUp(Event::TlsRecordTooLong)
        ));
    }

    #[test]
    fn server_hello_version_and_alpn() {
        // TLS 1.3 ServerHello: legacy 0x0303, supported_versions 0x0304, cipher 0x1301.
        let mut b = vec![3, 3];
        b.extend_from_slice(&[0x22; 32]);
        b.push(0);
        b.extend_from_slice(&[0x13, 0x01, 0]);
        let mut ext = vec![0, 43, 0, 2, 3, 4];
        let (_, alpn) = alpn_ext(&["h2"]);
        ext.extend_from_slice(&[0, 16]);
        ext.extend_from_slice(&(alpn.len() as u16).to_be_bytes());
        ext.extend_from_slice(&alpn);
        b.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        b.extend_from_slice(&ext);
        let sh = ServerHello::parse(&b, false).unwrap();
        assert_eq!(sh.selected_version(), 0x0304);
        assert_eq!(sh.cipher_suite, 0x1301);
        assert_eq!(sh.alpn(), Some(&b"h2"[..]));
    }

    #[test]
    fn grease() {
        assert!(is_grease(0x0a0a) && is_grease(0xfafa) && is_grease(0x3a3a));
        assert!(!is_grease(0x0a1a) && !is_grease(0x1301));
    }

    #[test]
    fn dtls_hello_in_one_datagram() {
        let msg = client_hello(0xfefd, &[0xc02b], &[sni_ext("dtls.example")], true);
        let len = msg.len() - 4;
        let mut hs = vec![msg[0]];
        hs.extend_from_slice(&msg[1..4]);
        hs.extend_from_slice(&[0, 0, 0, 0, 0]);
        hs.extend_from_slice(&msg[1..4]);
        hs.extend_from_slice(&msg[4..]);
        let mut d = vec![22, 0xfe, 0xff, 0, 0, 0, 0, 0, 0, 0, 0];
        d.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        d.extend_from_slice(&hs);
        let (kind, body) = dtls_first_handshake_message(&d).unwrap();
        assert_eq!((kind, body.len()), (1, len));
        assert_eq!(ClientHello::parse(body, true).unwrap().server_name(), Some(&b"dtls.example"[..]));
    }
}
