//! The server's certificate of TLS ≤ 1.2, where the Certificate message travels in clear
//! (RFC 5246 §7.4.2; TLS 1.3 encrypts it, RFC 8446 §4.4.2): the first certificate of the
//! chain (the server's own, §7.4.2: "the sender's certificate MUST come first"), its
//! subject and issuer common names, DNS subject alternative names and validity.
//!
//! `CertReassembly` joins the server's handshake records from the start of its stream
//! until the first certificate is whole; `x509-parser` reads the DER.

use x509_parser::certificate::X509CertificateParser;
use x509_parser::extensions::SubjectAlternativeName;
use x509_parser::nom::Parser as _;
use x509_parser::oid_registry::OID_X509_EXT_SUBJECT_ALT_NAME;
use x509_parser::prelude::{FromDer, GeneralName, X509Name};

use super::parser::{RecordHeader, RecordKind, RECORD_HEADER_LEN};
use crate::cursor::lossy_string;
use crate::event::Event;

/// Handshake type of Certificate (RFC 5246 §7.4).
pub const HANDSHAKE_CERTIFICATE: u8 = 11;
/// Handshake types that may come before the Certificate in a server's flight:
/// hello_request (0), server_hello (2) and hello_verify_request (3).
const BEFORE_CERTIFICATE: [u8; 3] = [0, 2, 3];

/// What the server's certificate says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertInfo {
    /// The subject's first commonName (Tstat's `s_tls_SCN`).
    pub subject_cn: Option<String>,
    /// The issuer's first commonName.
    pub issuer_cn: Option<String>,
    /// The issuer's whole name as RFC 4514 writes it (`CN=R3,O=Let's Encrypt,C=US`:
    /// last RDN first), what `openssl x509 -issuer -nameopt RFC2253,-esc_msb` prints.
    pub issuer: String,
    /// The dNSName entries of subjectAltName, in order, separated by NUL (one string
    /// per record, as `Value::Strs` prints them); empty when none.
    pub sans: String,
    /// notBefore and notAfter, in seconds since the Unix epoch (negative before 1970).
    pub not_before: i64,
    pub not_after: i64,
}

impl CertInfo {
    /// Heap bytes of a boxed `CertInfo`: the box and its strings.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<CertInfo>()
            + self.sans.capacity()
            + self.subject_cn.as_ref().map_or(0, String::capacity)
            + self.issuer_cn.as_ref().map_or(0, String::capacity)
            + self.issuer.capacity()
    }
}

/// A name's text with NUL (the list separator of `sans`) replaced.
fn text(b: &[u8]) -> String {
    let s = lossy_string(b);
    if s.contains('\0') {
        s.replace('\0', "\u{fffd}")
    } else {
        s
    }
}

fn first_cn(name: &X509Name<'_>) -> Option<String> {
    let a = name.iter_common_name().next()?;
    // UTF8String, PrintableString and IA5String read as text; others (BMPString) lossily.
    Some(match a.as_str() {
        Ok(s) => text(s.as_bytes()),
        Err(_) => text(a.as_slice()),
    })
}

/// OpenSSL's short names of the attribute types of names (RFC 4514 §3 and those
/// OpenSSL adds), by OID; others are written as their dotted OID.
const ATTRIBUTE_NAMES: [(&str, &str); 24] = [
    ("2.5.4.3", "CN"),
    ("2.5.4.4", "SN"),
    ("2.5.4.5", "serialNumber"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.9", "street"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.12", "title"),
    ("2.5.4.15", "businessCategory"),
    ("2.5.4.17", "postalCode"),
    ("2.5.4.42", "GN"),
    ("2.5.4.43", "initials"),
    ("2.5.4.44", "generationQualifier"),
    ("2.5.4.46", "dnQualifier"),
    ("2.5.4.65", "pseudonym"),
    ("2.5.4.97", "organizationIdentifier"),
    ("0.9.2342.19200300.100.1.1", "UID"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("1.2.840.113549.1.9.1", "emailAddress"),
    ("1.3.6.1.4.1.311.60.2.1.1", "jurisdictionL"),
    ("1.3.6.1.4.1.311.60.2.1.2", "jurisdictionST"),
    ("1.3.6.1.4.1.311.60.2.1.3", "jurisdictionC"),
];

/// A name as RFC 4514 writes it: RDNs last first, separated by `,`, the attributes of
/// a multi-valued RDN by `+`; `type=value`, the value's `,+"\<>;` (and a leading `#` or
/// space, a trailing space) escaped with `\`, control characters as `\XX`; a value
/// that is no string type as `#` and the hex of its DER.
fn rfc4514(name: &X509Name<'_>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (i, rdn) in name.iter_rdn().collect::<Vec<_>>().into_iter().rev().enumerate() {
        for (j, a) in rdn.iter().enumerate() {
            out.push_str(match (i, j) {
                (0, 0) => "",
                (_, 0) => ",",
                _ => "+",
            });
            let oid = a.attr_type().to_id_string();
            match ATTRIBUTE_NAMES.iter().find(|(o, _)| *o == oid) {
                Some((_, n)) => out.push_str(n),
                None => out.push_str(&oid),
            }
            out.push('=');
            let Some(v) = attribute_text(a.attr_value()) else {
                out.push('#');
                let any = a.attr_value();
                let mut der = Vec::new();
                use x509_parser::der_parser::asn1_rs::ToDer as _;
                if any.write_der(&mut der).is_ok() {
                    for b in der {
                        let _ = write!(out, "{b:02X}");
                    }
                }
                continue;
            };
            let n = v.chars().count();
            for (k, c) in v.chars().enumerate() {
                match c {
                    ',' | '+' | '"' | '\\' | '<' | '>' | ';' => {
                        out.push('\\');
                        out.push(c);
                    }
                    '#' if k == 0 => out.push_str("\\#"),
                    ' ' if k == 0 || k + 1 == n => out.push_str("\\ "),
                    c if (c as u32) < 0x20 || c == '\u{7f}' => {
                        let _ = write!(out, "\\{:02X}", c as u32);
                    }
                    c => out.push(c),
                }
            }
        }
    }
    out
}

/// The text of an attribute value of a string type (UTF-8, printable, IA5, numeric,
/// visible; teletex as Latin-1; BMP as UTF-16), as OpenSSL converts it; `None` for others.
fn attribute_text(v: &x509_parser::der_parser::asn1_rs::Any<'_>) -> Option<String> {
    use x509_parser::der_parser::asn1_rs::Tag;
    let d = v.data;
    Some(match v.tag() {
        Tag::Utf8String | Tag::PrintableString | Tag::Ia5String | Tag::NumericString | Tag::VisibleString => {
            String::from_utf8_lossy(d).into_owned()
        }
        Tag::T61String => d.iter().map(|&b| char::from(b)).collect(),
        Tag::BmpString => {
            let units: Vec<u16> = d.chunks_exact(2).map(|p| u16::from_be_bytes([p[0], p[1]])).collect();
            String::from_utf16_lossy(&units)
        }
        _ => return None,
    })
}

/// Slots of the per-worker memo of parsed certificates (direct-mapped).
const MEMO_SLOTS: usize = 128;
/// Certificates longer than this are parsed every time (a server certificate is 1 to
/// 2 KiB; the memo holds at most `MEMO_SLOTS` × this).
const MEMO_MAX_DER: usize = 4096;

struct MemoSlot {
    hash: u64,
    der: Box<[u8]>,
    info: Option<CertInfo>,
}

thread_local! {
    /// Recently parsed certificates, keyed by their whole DER: a network's servers send
    /// a few certificates again and again (in mix-small, 193 TLS 1.2 certificates, 40
    /// distinct), and x509-parser's full parse costs some 40,000 instructions. A hit is
    /// checked against the whole DER, so it gives what parsing would. One memo per
    /// thread keeps workers shared-nothing.
    static MEMO: std::cell::RefCell<Vec<Option<MemoSlot>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `parse_certificate`, answered from the worker's memo when the same DER was parsed
/// lately.
pub fn parse_certificate_memo(der: &[u8]) -> Option<CertInfo> {
    if der.len() > MEMO_MAX_DER {
        return parse_certificate(der);
    }
    let hash = super::fingerprint::hash_bytes(der);
    MEMO.with(|m| {
        let Ok(mut m) = m.try_borrow_mut() else { return parse_certificate(der) };
        if m.is_empty() {
            m.resize_with(MEMO_SLOTS, || None);
        }
        let slot = &mut m[(hash >> (64 - MEMO_SLOTS.trailing_zeros())) as usize];
        if let Some(s) = slot {
            if s.hash == hash && *s.der == *der {
                return s.info.clone();
            }
        }
        let info = parse_certificate(der);
        *slot = Some(MemoSlot { hash, der: der.into(), info: info.clone() });
        info
    })
}

/// Parses one DER certificate; `None` when it is not one.
///
/// Cost: the extensions are read as an envelope (OID, criticality, value), not each into
/// its structure (x509-parser's deep parse, about half of a whole parse: policies, CRL
/// points, SCT lists), and subjectAltName alone is parsed. The answer is the deep
/// parse's: a deep parse never fails the certificate (an extension that does not parse
/// becomes `ParseError`), and `X509Certificate::subject_alternative_name` gives nothing
/// for a duplicated or malformed subjectAltName, as `subject_alt_names` does here.
pub fn parse_certificate(der: &[u8]) -> Option<CertInfo> {
    let (_, cert) = X509CertificateParser::new().with_deep_parse_extensions(false).parse(der).ok()?;
    let mut sans = String::new();
    if let Some(ext) = subject_alt_names(cert.extensions()) {
        for g in &ext.general_names {
            if let GeneralName::DNSName(n) = g {
                if !sans.is_empty() {
                    sans.push('\0');
                }
                sans.push_str(&text(n.as_bytes()));
            }
        }
    }
    let v = cert.validity();
    Some(CertInfo {
        subject_cn: first_cn(cert.subject()),
        issuer_cn: first_cn(cert.issuer()),
        issuer: rfc4514(cert.issuer()),
        sans,
        not_before: v.not_before.timestamp(),
        not_after: v.not_after.timestamp(),
    })
}

/// The subjectAltName among the (envelope-parsed) extensions, parsed; none when absent,
/// present twice or malformed, as `X509Certificate::subject_alternative_name` answers.
fn subject_alt_names<'a>(exts: &[x509_parser::extensions::X509Extension<'a>]) -> Option<SubjectAlternativeName<'a>> {
    let mut found = None;
    for e in exts.iter().filter(|e| e.oid == OID_X509_EXT_SUBJECT_ALT_NAME) {
        if found.is_some() {
            return None;
        }
        found = Some(e.value);
    }
    SubjectAlternativeName::from_der(found?).ok().map(|(_, s)| s)
}

/// A 3-byte big-endian length (TLS handshake headers and certificate lists).
fn u24(b: &[u8]) -> usize {
    u32::from_be_bytes([0, b[0], b[1], b[2]]) as usize
}

/// The first certificate of a Certificate message's body (RFC 5246 §7.4.2: a 3-byte
/// length of the list, then each certificate with a 3-byte length), parsed: `Done`, or
/// `GiveUp` when the message or the certificate cannot be read; `None` when the bytes
/// so far do not hold it whole yet.
fn first_certificate(body: &[u8], msg_len: usize) -> Option<CertProgress> {
    let head = body.get(..6)?;
    let (list, len) = (u24(&head[..3]), u24(&head[3..]));
    if len == 0 || 3 + list > msg_len || 3 + len > list {
        return Some(CertProgress::GiveUp(Event::TlsHandshakeMalformed));
    }
    let der = body.get(6..6 + len)?;
    Some(parse_certificate_memo(der).map_or(CertProgress::GiveUp(Event::TlsHandshakeMalformed), CertProgress::Done))
}

/// The answer of `CertReassembly::on_data`.
#[derive(Debug, PartialEq, Eq)]
pub enum CertProgress {
    /// Call again with the next bytes.
    NeedMore,
    /// The flight has no certificate (a resumed session's ChangeCipherSpec, an anonymous
    /// or PSK key exchange): nothing to find.
    NoCertificate,
    /// The first certificate, parsed.
    Done(CertInfo),
    /// Give up, with what went wrong.
    GiveUp(Event),
}

/// The server's handshake bytes (record payloads, headers removed) from the start of its
/// stream until its first certificate is whole, within the reassembly cap.
#[derive(Clone, Debug, Default)]
pub struct CertReassembly {
    buf: Vec<u8>,
    header: [u8; RECORD_HEADER_LEN],
    header_len: u8,
    /// Bytes of the current record's body still to come.
    left: u32,
    /// Start of the first handshake message in `buf` not yet skipped.
    pos: usize,
    /// The current record is an alert to skip, not handshake bytes.
    discard: bool,
}

impl CertReassembly {
    /// Feeds in-order bytes of the server's stream.
    pub fn on_data(&mut self, mut data: &[u8], cap: usize) -> CertProgress {
        while !data.is_empty() {
            if self.left > 0 {
                let n = (self.left as usize).min(data.len());
                if self.discard {
                    self.left -= n as u32;
                    data = &data[n..];
                    continue;
                }
                if self.buf.len() + n > cap {
                    return CertProgress::GiveUp(Event::TlsReassemblyLimit);
                }
                self.buf.extend_from_slice(&data[..n]);
                self.left -= n as u32;
                data = &data[n..];
                continue;
            }
            let at = usize::from(self.header_len);
            let n = (RECORD_HEADER_LEN - at).min(data.len());
            self.header[at..at + n].copy_from_slice(&data[..n]);
            self.header_len += n as u8;
            data = &data[n..];
            if usize::from(self.header_len) < RECORD_HEADER_LEN {
                break;
            }
            self.header_len = 0;
            match RecordHeader::parse(&self.header) {
                Ok(h) if h.kind == RecordKind::Handshake => {
                    self.left = u32::from(h.length);
                    self.discard = false;
                }
                // A warning alert ahead of the ServerHello (see `first_handshake_message`).
                Ok(h) if h.kind == RecordKind::Alert && h.length == 2 && self.buf.is_empty() => {
                    self.left = 2;
                    self.discard = true;
                }
                // ChangeCipherSpec (a resumed session) or an alert before any certificate.
                Ok(_) => return self.scan().unwrap_or(CertProgress::NoCertificate),
                Err(e) => return CertProgress::GiveUp(e.unwrap_or(Event::TlsNotHandshake)),
            }
        }
        self.scan().unwrap_or(CertProgress::NeedMore)
    }

    /// Walks the whole messages in `buf`; `None` when it needs more bytes.
    fn scan(&mut self) -> Option<CertProgress> {
        loop {
            let m = self.buf.get(self.pos..)?;
            let h = m.get(..4)?;
            let len = u24(&h[1..]);
            match h[0] {
                HANDSHAKE_CERTIFICATE => return first_certificate(&m[4..], len),
                t if BEFORE_CERTIFICATE.contains(&t) => {
                    m.get(..4 + len)?;
                    self.pos += 4 + len;
                }
                _ => return Some(CertProgress::NoCertificate),
            }
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }
}

/// The server's DTLS Certificate message (RFC 6347 §4.2.3: a handshake message carries
/// its message_seq, fragment_offset and fragment_length, and may be cut over records and
/// datagrams), put together from in-order fragments within the cap; a fragment after a
/// gap is left (a retransmission may bring the missing bytes).
#[derive(Clone, Debug, Default)]
pub struct DtlsCertReassembly {
    buf: Vec<u8>,
    seq: Option<u16>,
}

/// Bytes of a DTLS handshake message header: type, length, message_seq,
/// fragment_offset, fragment_length.
const DTLS_HANDSHAKE_HEADER_LEN: usize = 12;

impl DtlsCertReassembly {
    /// Feeds the payload of one plaintext handshake record of the server.
    pub fn on_record(&mut self, mut payload: &[u8], cap: usize) -> CertProgress {
        while !payload.is_empty() {
            let Some(h) = payload.get(..DTLS_HANDSHAKE_HEADER_LEN) else {
                return CertProgress::GiveUp(Event::TlsHandshakeMalformed);
            };
            let (kind, len, seq, offset, frag_len) =
                (h[0], u24(&h[1..4]), u16::from_be_bytes([h[4], h[5]]), u24(&h[6..9]), u24(&h[9..12]));
            let Some(frag) = payload.get(DTLS_HANDSHAKE_HEADER_LEN..DTLS_HANDSHAKE_HEADER_LEN + frag_len) else {
                return CertProgress::GiveUp(Event::TlsHandshakeMalformed);
            };
            payload = &payload[DTLS_HANDSHAKE_HEADER_LEN + frag_len..];
            match kind {
                HANDSHAKE_CERTIFICATE => {
                    if len > cap {
                        return CertProgress::GiveUp(Event::TlsReassemblyLimit);
                    }
                    if offset + frag_len > len {
                        return CertProgress::GiveUp(Event::TlsHandshakeMalformed);
                    }
                    if self.seq != Some(seq) {
                        self.seq = Some(seq);
                        self.buf.clear();
                    }
                    let have = self.buf.len();
                    if offset <= have && offset + frag_len > have {
                        self.buf.extend_from_slice(&frag[have - offset..]);
                    }
                    if self.buf.len() == len {
                        // The whole message: a certificate it does not hold whole is malformed.
                        return first_certificate(&self.buf, len)
                            .unwrap_or(CertProgress::GiveUp(Event::TlsHandshakeMalformed));
                    }
                }
                // ServerHello, HelloVerifyRequest (3) and their retransmissions.
                t if BEFORE_CERTIFICATE.contains(&t) => {}
                // A ServerKeyExchange, ServerHelloDone...: a flight without a certificate.
                _ => return CertProgress::NoCertificate,
            }
        }
        CertProgress::NeedMore
    }

    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A self-signed certificate made with `openssl req -x509 -newkey ec
    /// -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/O=Tapstat Test/CN=server.example"
    /// -addext "subjectAltName=DNS:server.example,DNS:*.server.example,IP:192.0.2.1"
    /// -days 30 -outform der` (the IP entry is not a DNS name: not in `sans`).
    pub(crate) const CERT_DER: &[u8] = include_bytes!("testdata/server.der");

    /// `openssl x509 -inform der -noout -dates -in testdata/server.der`, as Unix times.
    pub(crate) const NOT_BEFORE: i64 = include!("testdata/server.not_before");
    pub(crate) const NOT_AFTER: i64 = include!("testdata/server.not_after");

    /// A server flight: ServerHello, Certificate (the given chain), ServerHelloDone, as
    /// handshake messages.
    pub(crate) fn flight(chain: &[&[u8]]) -> Vec<u8> {
        let mut sh = vec![3, 3];
        sh.extend_from_slice(&[0x22; 32]);
        sh.extend_from_slice(&[0, 0xc0, 0x2f, 0, 0, 0]);
        let mut list = Vec::new();
        for c in chain {
            list.extend_from_slice(&(c.len() as u32).to_be_bytes()[1..]);
            list.extend_from_slice(c);
        }
        let mut cert = (list.len() as u32).to_be_bytes()[1..].to_vec();
        cert.extend_from_slice(&list);
        let mut out = Vec::new();
        for (t, body) in [(2u8, sh), (HANDSHAKE_CERTIFICATE, cert), (14, Vec::new())] {
            out.push(t);
            out.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
            out.extend_from_slice(&body);
        }
        out
    }

    fn expected() -> CertInfo {
        CertInfo {
            subject_cn: Some("server.example".into()),
            issuer_cn: Some("server.example".into()),
            // `openssl x509 -inform der -noout -issuer -nameopt RFC2253,-esc_msb`.
            issuer: "CN=server.example,O=Tapstat Test".into(),
            sans: "server.example\0*.server.example".into(),
            not_before: NOT_BEFORE,
            not_after: NOT_AFTER,
        }
    }

    #[test]
    fn parses_the_test_certificate() {
        assert_eq!(parse_certificate(CERT_DER), Some(expected()));
        // From the memo, asked twice (a miss, then a hit), and a different DER of the
        // same hash slot or not is not mistaken for it.
        assert_eq!(parse_certificate_memo(CERT_DER), Some(expected()));
        assert_eq!(parse_certificate_memo(CERT_DER), Some(expected()));
        let mut other = CERT_DER.to_vec();
        *other.last_mut().unwrap() ^= 1;
        assert_eq!(parse_certificate_memo(&other), parse_certificate(&other));
        other.truncate(100);
        assert_eq!(parse_certificate_memo(&other), None);
        assert_eq!(parse_certificate_memo(CERT_DER), Some(expected()));
        assert_eq!(NOT_AFTER - NOT_BEFORE, 30 * 86400);
    }

    #[test]
    fn flight_in_records_and_segments() {
        let msgs = flight(&[CERT_DER, b"not a certificate at all"]);
        for max_record in [16384, 300, 7] {
            let stream = super::super::parser::tests::records(&msgs, max_record);
            for seg in [1, 13, 500, stream.len()] {
                let mut r = CertReassembly::default();
                let mut got = CertProgress::NeedMore;
                for chunk in stream.chunks(seg) {
                    got = r.on_data(chunk, 16384);
                    if got != CertProgress::NeedMore {
                        break;
                    }
                }
                assert_eq!(got, CertProgress::Done(expected()), "record {max_record} segment {seg}");
            }
        }
    }

    #[test]
    fn warning_alert_before_the_flight() {
        let mut stream = vec![21, 3, 3, 0, 2, 1, 112];
        stream.extend_from_slice(&super::super::parser::tests::records(&flight(&[CERT_DER]), 1000));
        for seg in [1, 6, stream.len()] {
            let mut r = CertReassembly::default();
            let got = stream.chunks(seg).map(|c| r.on_data(c, 16384)).find(|p| *p != CertProgress::NeedMore);
            assert_eq!(got, Some(CertProgress::Done(expected())), "segment {seg}");
        }
    }

    #[test]
    fn no_certificate_limits_and_garbage() {
        // A resumed session: ServerHello, then ChangeCipherSpec.
        let mut stream = super::super::parser::tests::records(&flight(&[])[..44], 16384);
        stream.extend_from_slice(&[20, 3, 3, 0, 1, 1]);
        assert_eq!(CertReassembly::default().on_data(&stream, 16384), CertProgress::NoCertificate);
        // ServerHelloDone right after the ServerHello (anonymous key exchange).
        let mut m = flight(&[])[..44].to_vec();
        m.extend_from_slice(&[14, 0, 0, 0]);
        let stream = super::super::parser::tests::records(&m, 16384);
        assert_eq!(CertReassembly::default().on_data(&stream, 16384), CertProgress::NoCertificate);
        // A chain above the cap.
        let stream = super::super::parser::tests::records(&flight(&[CERT_DER]), 16384);
        assert_eq!(CertReassembly::default().on_data(&stream, 100), CertProgress::GiveUp(Event::TlsReassemblyLimit));
        // A certificate whose DER is cut or flipped.
        let mut bad = CERT_DER.to_vec();
        bad[1] ^= 0x40;
        let stream = super::super::parser::tests::records(&flight(&[&bad]), 16384);
        assert_eq!(
            CertReassembly::default().on_data(&stream, 16384),
            CertProgress::GiveUp(Event::TlsHandshakeMalformed)
        );
        // An empty first certificate.
        let stream = super::super::parser::tests::records(&flight(&[b""]), 16384);
        assert_eq!(
            CertReassembly::default().on_data(&stream, 16384),
            CertProgress::GiveUp(Event::TlsHandshakeMalformed)
        );
    }

    proptest::proptest! {
        /// Any bytes, in any segments, never panic, and the buffer stays within the cap.
        #[test]
        fn garbage_never_panics(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000),
            cuts in proptest::collection::vec(1usize..400, 0..20),
            cap in 0usize..4000,
        ) {
            let mut r = CertReassembly::default();
            let mut rest = &data[..];
            for c in cuts {
                let n = c.min(rest.len());
                if r.on_data(&rest[..n], cap) != CertProgress::NeedMore {
                    break;
                }
                rest = &rest[n..];
            }
            proptest::prop_assert!(r.buf.len() <= cap);
        }

        /// A real flight with bytes of the certificate changed at random and cut: a
        /// result or a give-up, never a panic nor a request for more.
        #[test]
        fn mutated_certificate_never_panics(
            flips in proptest::collection::vec((0usize..2000, proptest::prelude::any::<u8>()), 1..20),
            cut in 0usize..2000,
        ) {
            let mut der = CERT_DER.to_vec();
            for (at, b) in flips {
                let n = der.len();
                der[at % n] ^= b;
            }
            der.truncate(cut.max(1).min(der.len()));
            let _ = parse_certificate(&der);
            let stream = super::super::parser::tests::records(&flight(&[&der]), 1000);
            let got = CertReassembly::default().on_data(&stream, 16384);
            proptest::prop_assert!(got != CertProgress::NeedMore, "a whole flight gets an answer");
        }
    }
}
