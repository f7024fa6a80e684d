//! Per-flow TLS state: the hellos' bounded reassembly, the results (`TlsInfo`) and the
//! record tracker behind the timing markers (`TlsTimes`).

use super::cert::{CertInfo, CertProgress, CertReassembly, DtlsCertReassembly};
use super::fingerprint::{fingerprints, server_fingerprints, Ja4Transport};
use super::parser::{
    dtls_first_handshake_message, first_handshake_message, is_grease, ClientHello, HandshakeProgress, RecordHeader,
    RecordKind, ServerHello, DTLS_RECORD_HEADER_LEN, HANDSHAKE_CLIENT_HELLO, HANDSHAKE_SERVER_HELLO, RECORD_HEADER_LEN,
};
use crate::cursor::lossy_string;
use crate::event::{Event, Events};
use crate::{Dir, Records};

/// What the ClientHello offered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientHelloInfo {
    /// server_name, lossily made UTF-8 (RFC 6066 §3 says ASCII).
    pub sni: Option<String>,
    /// The ALPN protocols offered, in order.
    pub alpn: Vec<String>,
    pub legacy_version: u16,
    /// supported_versions without GREASE, in the client's order; empty when absent.
    pub supported_versions: Vec<u16>,
    /// Cipher suites in the client's order, GREASE kept (the fingerprints drop it).
    pub cipher_suites: Vec<u16>,
    /// Extension types in the client's order, GREASE kept.
    pub extensions: Vec<u16>,
    pub ja3: String,
    /// Lowercase hex MD5 of `ja3`.
    pub ja3_md5: String,
    pub ja4: String,
}

impl TlsInfo {
    /// The strings a record writes that the peers chose (see `L7Flow::texts_mut`).
    pub fn texts_mut(&mut self, f: &mut crate::TextVisitor<'_>) {
        let TlsInfo { client, server, cert } = self;
        if let Some(c) = client {
            // The fingerprints are digits and hex this crate writes.
            let ClientHelloInfo {
                sni,
                alpn,
                legacy_version: _,
                supported_versions: _,
                cipher_suites: _,
                extensions: _,
                ja3: _,
                ja3_md5: _,
                ja4: _,
            } = c;
            crate::visit(sni, f);
            alpn.iter_mut().for_each(&mut *f);
        }
        if let Some(s) = server {
            let ServerHelloInfo { version: _, cipher_suite: _, alpn, ja3s_md5: _, ja4s: _ } = s;
            crate::visit(alpn, f);
        }
        if let Some(c) = cert {
            let CertInfo { subject_cn, issuer_cn, issuer, sans, not_before: _, not_after: _ } = &mut **c;
            crate::visit(subject_cn, f);
            crate::visit(issuer_cn, f);
            f(issuer);
            f(sans);
        }
    }
}

impl ClientHelloInfo {
    pub fn from_hello(ch: &ClientHello<'_>, transport: Ja4Transport) -> Self {
        let known = ch.known_extensions();
        let fp = fingerprints(ch, &known, transport);
        ClientHelloInfo {
            sni: known.server_name().map(lossy_string),
            alpn: known.alpn().map(lossy_string).collect(),
            legacy_version: ch.legacy_version,
            supported_versions: known.supported_versions().filter(|&v| !is_grease(v)).collect(),
            cipher_suites: ch.ciphers().collect(),
            extensions: {
                // Each extension takes at least 4 bytes: one allocation holds them all.
                let mut v = Vec::with_capacity(ch.extensions.len() / 4);
                v.extend(ch.extensions().map(|(t, _)| t));
                v
            },
            ja3: fp.ja3,
            ja3_md5: fp.ja3_md5,
            ja4: fp.ja4,
        }
    }

    /// The highest version offered: supported_versions when present, else legacy_version.
    pub fn max_version(&self) -> u16 {
        // For DTLS lower numbers are higher versions; TLS versions are all below 0xfe00.
        let rank = |v: u16| if v >= 0xfe00 { 0xffff - v } else { v };
        self.supported_versions.iter().copied().max_by_key(|&v| rank(v)).unwrap_or(self.legacy_version)
    }
}

/// What the ServerHello chose.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerHelloInfo {
    /// supported_versions when present, else legacy_version.
    pub version: u16,
    pub cipher_suite: u16,
    /// ALPN in the ServerHello (TLS ≤ 1.2; TLS 1.3 hides it in EncryptedExtensions).
    pub alpn: Option<String>,
    /// Lowercase hex MD5 of the JA3S string (`fingerprint::ServerFingerprints`).
    pub ja3s_md5: String,
    pub ja4s: String,
}

impl ServerHelloInfo {
    pub fn from_hello(sh: &ServerHello<'_>, transport: Ja4Transport) -> Self {
        let fp = server_fingerprints(sh, transport);
        ServerHelloInfo {
            version: sh.selected_version(),
            cipher_suite: sh.cipher_suite,
            alpn: sh.alpn().map(lossy_string),
            ja3s_md5: fp.ja3s_md5,
            ja4s: fp.ja4s,
        }
    }
}

/// Both hellos of a flow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsInfo {
    pub client: Option<ClientHelloInfo>,
    pub server: Option<ServerHelloInfo>,
    /// The server's certificate (TLS ≤ 1.2 over TCP).
    pub cert: Option<Box<CertInfo>>,
}

/// Tstat's TLS timing markers, per direction (index `Dir as usize`), in the packet time
/// the caller passed: the last payload carrying bytes of a handshake or ChangeCipherSpec
/// record before that direction's first Application Data, and the first Application Data.
/// In TLS 1.3 the encrypted end of the handshake counts as handshake (`TlsState::track`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlsTimes {
    pub last_handshake_ns: [Option<u64>; 2],
    pub first_appdata_ns: [Option<u64>; 2],
    /// Stream offset (bytes of this direction's payload before it) of the first
    /// Application Data record. Tstat's `c_appdataB` / `s_appdataB` print the relative
    /// sequence number instead: this offset + 1.
    pub first_appdata_offset: [Option<u64>; 2],
}

/// Bounded reassembly of the first bytes of one direction until its first handshake
/// message is whole. The buffer is allocated only when a hello spans segments.
#[derive(Clone, Debug, Default)]
pub(crate) struct HelloReassembly {
    buf: Vec<u8>,
    needed: usize,
}

impl HelloReassembly {
    /// Feeds in-order bytes. `Ok(Some(r))`: the message was whole and `f` ran on it;
    /// `Ok(None)`: need more; `Err`: give up.
    pub(crate) fn on_data<R>(
        &mut self,
        data: &[u8],
        cap: usize,
        f: impl FnOnce(u8, &[u8]) -> R,
    ) -> Result<Option<R>, Event> {
        let mut scratch = Vec::new();
        if self.buf.is_empty() {
            // Zero-copy path: the whole hello is in this segment.
            return match first_handshake_message(data, &mut scratch) {
                HandshakeProgress::Done(k, b) => Ok(Some(f(k, b))),
                HandshakeProgress::GiveUp(e) => Err(e),
                HandshakeProgress::NeedMore { needed } if needed > cap => Err(Event::TlsReassemblyLimit),
                HandshakeProgress::NeedMore { needed } => {
                    self.buf.reserve_exact(needed.max(data.len()).min(cap));
                    self.buf.extend_from_slice(&data[..data.len().min(cap)]);
                    self.needed = needed;
                    Ok(None)
                }
            };
        }
        let room = cap.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&data[..data.len().min(room)]);
        if self.buf.len() < self.needed {
            return if self.buf.len() >= cap { Err(Event::TlsReassemblyLimit) } else { Ok(None) };
        }
        let out = match first_handshake_message(&self.buf, &mut scratch) {
            HandshakeProgress::Done(k, b) => Ok(Some(f(k, b))),
            HandshakeProgress::GiveUp(e) => Err(e),
            HandshakeProgress::NeedMore { needed } if needed > cap => Err(Event::TlsReassemblyLimit),
            HandshakeProgress::NeedMore { needed } => {
                self.needed = needed;
                return Ok(None);
            }
        };
        self.buf = Vec::new();
        out
    }

    pub(crate) fn release(&mut self) {
        self.buf = Vec::new();
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }
}

/// Follows record boundaries through one direction's stream without buffering: it keeps
/// a partial header (at most 5 bytes) and how much of the current record is left.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RecordTracker {
    header: [u8; RECORD_HEADER_LEN],
    header_len: u8,
    /// Bytes of the current record's body still to skip.
    skip: u32,
    records: u16,
    /// Stream offset of the next byte.
    offset: u64,
    pub(crate) stopped: bool,
}

/// The tracker stops after this many records without Application Data: enough for any
/// handshake (Certificate chains come in a few large records), bounded for anything else.
const MAX_TRACKED_RECORDS: u16 = 64;

impl RecordTracker {
    /// Walks the record headers in `data` and calls `on_record(Some(kind), offset)` for
    /// each record that starts in it, in order, after `on_record(None, _)` when `data`
    /// begins inside a record's body (a continuation).
    pub(crate) fn on_data(
        &mut self,
        mut data: &[u8],
        mut on_record: impl FnMut(Option<RecordKind>, u64),
    ) -> Result<(), Event> {
        if self.skip > 0 && !data.is_empty() {
            on_record(None, self.offset);
        }
        while !data.is_empty() && !self.stopped {
            if self.skip > 0 {
                let n = (self.skip as usize).min(data.len());
                self.skip -= n as u32;
                self.offset += n as u64;
                data = &data[n..];
                continue;
            }
            let need = RECORD_HEADER_LEN - usize::from(self.header_len);
            let n = need.min(data.len());
            let start = self.offset - u64::from(self.header_len);
            self.header[usize::from(self.header_len)..usize::from(self.header_len) + n].copy_from_slice(&data[..n]);
            self.header_len += n as u8;
            self.offset += n as u64;
            data = &data[n..];
            if usize::from(self.header_len) < RECORD_HEADER_LEN {
                break;
            }
            self.header_len = 0;
            let h = RecordHeader::parse(&self.header).map_err(|e| e.unwrap_or(Event::TlsNotHandshake))?;
            self.skip = u32::from(h.length);
            self.records += 1;
            if self.records > MAX_TRACKED_RECORDS {
                return Err(Event::TlsRecordTrackingStopped);
            }
            on_record(Some(h.kind), start);
        }
        Ok(())
    }
}

/// TLS over TCP, one flow.
#[derive(Clone, Debug, Default)]
pub struct TlsState {
    pub info: TlsInfo,
    pub times: TlsTimes,
    hello: [HelloReassembly; 2],
    hello_done: [bool; 2],
    /// The server's flight up to its first certificate.
    cert: CertReassembly,
    cert_done: bool,
    tracker: [RecordTracker; 2],
    /// The client's first Application Data record of a TLS 1.3 connection was seen: its
    /// Finished (see `track`).
    client_finished: bool,
    /// The kind each direction's current record counts as (after the TLS 1.3 rule).
    current: [Option<RecordKind>; 2],
    pub(crate) events: Events,
    /// Its TCP streams put back in order from their first hole on (`reorder`).
    pub(crate) reorder: Option<Box<crate::reorder::Reorder>>,
}

impl TlsState {
    /// A TLS state whose server certificate is read (`certs`) or never sought
    /// (`--tls-certs off`: no reassembly of the server's flight, no X.509 parsing).
    pub fn new(certs: bool) -> TlsState {
        TlsState { cert_done: !certs, ..TlsState::default() }
    }

    /// Feeds in-order payload of one direction; returns the record kinds that start in it.
    pub fn on_data(&mut self, dir: Dir, data: &[u8], ts_ns: u64, cap: usize) -> Records {
        let d = dir as usize;
        if !self.hello_done[d] {
            let info = &mut self.info;
            let r = self.hello[d].on_data(data, cap, |kind, body| match (dir, kind) {
                (Dir::ClientToServer, HANDSHAKE_CLIENT_HELLO) => ClientHello::parse(body, false)
                    .map(|ch| info.client = Some(ClientHelloInfo::from_hello(&ch, Ja4Transport::Tcp))),
                (Dir::ServerToClient, HANDSHAKE_SERVER_HELLO) => ServerHello::parse(body, false)
                    .map(|sh| info.server = Some(ServerHelloInfo::from_hello(&sh, Ja4Transport::Tcp))),
                _ => None,
            });
            match r {
                Ok(None) => {}
                Ok(Some(Some(()))) => self.hello_done[d] = true,
                Ok(Some(None)) => {
                    self.hello_done[d] = true;
                    self.events.insert(Event::TlsHandshakeMalformed);
                }
                Err(e) => {
                    self.hello_done[d] = true;
                    self.hello[d].release();
                    self.events.insert(e);
                }
            }
        }
        if dir == Dir::ServerToClient && !self.cert_done {
            self.on_cert_data(data, cap);
        }
        self.track(dir, data, ts_ns)
    }

    /// Feeds the server's bytes to the certificate's reassembly, until the certificate
    /// is read or cannot be: TLS 1.3 (or a ServerHello that did not parse) has none in
    /// clear, so it stops as soon as the ServerHello says so.
    fn on_cert_data(&mut self, data: &[u8], cap: usize) {
        let clear = self.info.server.as_ref().map(|s| s.version <= 0x0303);
        let progress = match clear {
            Some(false) => CertProgress::NoCertificate,
            None if self.hello_done[Dir::ServerToClient as usize] => CertProgress::NoCertificate,
            _ => self.cert.on_data(data, cap),
        };
        match progress {
            CertProgress::NeedMore => return,
            CertProgress::NoCertificate => {}
            CertProgress::Done(c) => self.info.cert = Some(Box::new(c)),
            CertProgress::GiveUp(e) => self.events.insert(e),
        }
        self.cert_done = true;
        self.cert = CertReassembly::default();
    }

    /// Follows the records for the timing markers. TLS 1.3 (RFC 8446 §5: encrypted
    /// records all say application_data) hides the end of the handshake; Tstat's rule,
    /// followed here, is that the client's first such record is its Finished (§4.4.4)
    /// and the server's such records before it are its encrypted flight (§2: EncryptedExtensions
    /// to Finished), both handshake. The returned kinds are the records' own types.
    fn track(&mut self, dir: Dir, data: &[u8], ts_ns: u64) -> Records {
        let d = dir as usize;
        let mut seen = Records::default();
        if self.tracker[d].stopped {
            return seen;
        }
        let tls13 = self.info.server.as_ref().is_some_and(|s| s.version == 0x0304);
        let (times, client_finished, current) = (&mut self.times, &mut self.client_finished, &mut self.current[d]);
        let mut appdata_at = None;
        let mut handshake = false;
        let r = self.tracker[d].on_data(data, |kind, offset| {
            // Tstat's times are of the last packet that carries handshake bytes: a
            // record's continuation counts as its start does.
            let Some(kind) = kind else {
                handshake |= matches!(current, Some(RecordKind::Handshake | RecordKind::ChangeCipherSpec));
                return;
            };
            seen.insert(kind);
            let kind = match (kind, tls13, dir) {
                (RecordKind::ApplicationData, true, Dir::ClientToServer) if !*client_finished => {
                    *client_finished = true;
                    RecordKind::Handshake
                }
                (RecordKind::ApplicationData, true, Dir::ServerToClient) if !*client_finished => RecordKind::Handshake,
                (k, _, _) => k,
            };
            *current = Some(kind);
            match kind {
                RecordKind::Handshake | RecordKind::ChangeCipherSpec => handshake = true,
                RecordKind::ApplicationData => {
                    appdata_at.get_or_insert(offset);
                }
                _ => {}
            }
        });
        if handshake && times.first_appdata_ns[d].is_none() {
            times.last_handshake_ns[d] = Some(ts_ns);
        }
        if let Some(at) = appdata_at {
            times.first_appdata_ns[d] = Some(ts_ns);
            times.first_appdata_offset[d] = Some(at);
            // Nothing left to learn in this direction.
            self.tracker[d].stopped = true;
        }
        if let Err(e) = r {
            self.tracker[d].stopped = true;
            self.events.insert(e);
        }
        seen
    }

    /// Bytes of `dir` were lost: the server's certificate, if still sought, cannot be
    /// reassembled (the engine does not wait for the hole to fill).
    pub fn on_gap(&mut self, dir: Dir) {
        if dir == Dir::ServerToClient && !self.cert_done {
            self.cert_done = true;
            self.cert = CertReassembly::default();
        }
    }

    /// True when neither direction has anything left to parse or track.
    pub fn is_done(&self) -> bool {
        self.hello_done.iter().all(|&h| h) && self.cert_done && self.tracker.iter().all(|t| t.stopped)
    }

    /// True once this direction's hello is parsed (or given up) and its tracker stopped.
    pub fn dir_done(&self, dir: Dir) -> bool {
        self.hello_done[dir as usize]
            && self.tracker[dir as usize].stopped
            && (dir == Dir::ClientToServer || self.cert_done)
    }

    /// Stops one direction (its budget is spent) and frees its buffer.
    pub(crate) fn stop(&mut self, dir: Dir) {
        let d = dir as usize;
        self.hello_done[d] = true;
        self.hello[d].release();
        self.tracker[d].stopped = true;
        if dir == Dir::ServerToClient {
            self.cert_done = true;
            self.cert = CertReassembly::default();
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.hello.iter().map(HelloReassembly::heap_bytes).sum::<usize>()
            + self.cert.heap_bytes()
            + self.info.cert.as_ref().map_or(0, |c| c.heap_bytes())
    }
}

/// DTLS over UDP, one flow: each datagram is parsed alone (RFC 6347 §4.1.1: records do
/// not span datagrams), the first handshake message of each direction gives the hello.
#[derive(Clone, Debug, Default)]
pub struct DtlsState {
    pub info: TlsInfo,
    pub times: TlsTimes,
    hello_done: [bool; 2],
    datagrams: [u8; 2],
    appdata: [bool; 2],
    /// The server's Certificate message, while sought.
    cert: DtlsCertReassembly,
    cert_done: bool,
    pub(crate) events: Events,
}

/// A server may answer HelloVerifyRequest first (RFC 6347 §4.2.1); look a few datagrams
/// further for the ServerHello.
const DTLS_HELLO_DATAGRAMS: u8 = 4;

/// Datagrams per direction walked for record kinds before the first Application Data.
const DTLS_TRACKED_DATAGRAMS: u8 = 64;

impl DtlsState {
    /// A DTLS state whose server certificate is read (`certs`, DTLS ≤ 1.2 sends it in
    /// the clear) or never sought (`--tls-certs off`).
    pub fn new(certs: bool) -> DtlsState {
        DtlsState { cert_done: !certs, ..DtlsState::default() }
    }

    pub fn on_datagram(&mut self, dir: Dir, dgram: &[u8], ts_ns: u64) -> Records {
        let d = dir as usize;
        self.datagrams[d] = self.datagrams[d].saturating_add(1);
        if !self.hello_done[d] {
            match dtls_first_handshake_message(dgram) {
                Ok((HANDSHAKE_CLIENT_HELLO, body)) if dir == Dir::ClientToServer => {
                    self.hello_done[d] = true;
                    match ClientHello::parse(body, true) {
                        Some(ch) => self.info.client = Some(ClientHelloInfo::from_hello(&ch, Ja4Transport::Dtls)),
                        None => self.events.insert(Event::TlsHandshakeMalformed),
                    }
                }
                Ok((HANDSHAKE_SERVER_HELLO, body)) if dir == Dir::ServerToClient => {
                    self.hello_done[d] = true;
                    match ServerHello::parse(body, true) {
                        Some(sh) => self.info.server = Some(ServerHelloInfo::from_hello(&sh, Ja4Transport::Dtls)),
                        None => self.events.insert(Event::TlsHandshakeMalformed),
                    }
                }
                Err(Event::DtlsFragmented) => {
                    self.hello_done[d] = true;
                    self.events.insert(Event::DtlsFragmented);
                }
                _ => {}
            }
            if self.datagrams[d] >= DTLS_HELLO_DATAGRAMS {
                self.hello_done[d] = true;
            }
        }
        // Walk the records of the datagram (RFC 6347 §4.1: several may share one).
        let mut seen = Records::default();
        if !self.appdata[d] {
            let mut rest = dgram;
            while let Some(h) = RecordHeader::parse_dtls(rest) {
                seen.insert(h.kind);
                let end = DTLS_RECORD_HEADER_LEN + usize::from(h.length);
                if dir == Dir::ServerToClient && !self.cert_done {
                    // Epoch 0: the plaintext handshake; from the ChangeCipherSpec on,
                    // nothing is readable, and a flight without a certificate ends there.
                    let epoch = u16::from_be_bytes([rest[3], rest[4]]);
                    let progress = match (h.kind, rest.get(DTLS_RECORD_HEADER_LEN..end)) {
                        (RecordKind::Handshake, Some(p)) if epoch == 0 => self.cert.on_record(p, DTLS_CERT_CAP),
                        (RecordKind::Handshake | RecordKind::Alert, _) if epoch == 0 => CertProgress::NeedMore,
                        _ => CertProgress::NoCertificate,
                    };
                    self.on_cert_progress(progress);
                }
                match rest.get(end..) {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            if seen.contains(RecordKind::Handshake) || seen.contains(RecordKind::ChangeCipherSpec) {
                self.times.last_handshake_ns[d] = Some(ts_ns);
            }
            if seen.contains(RecordKind::ApplicationData) {
                self.times.first_appdata_ns[d] = Some(ts_ns);
                self.appdata[d] = true;
            }
            if self.datagrams[d] >= DTLS_TRACKED_DATAGRAMS {
                self.appdata[d] = true;
                if dir == Dir::ServerToClient {
                    self.on_cert_progress(CertProgress::NoCertificate);
                }
            }
        }
        seen
    }

    fn on_cert_progress(&mut self, progress: CertProgress) {
        match progress {
            CertProgress::NeedMore => return,
            CertProgress::Done(c) => self.info.cert = Some(Box::new(c)),
            CertProgress::GiveUp(e) => self.events.insert(e),
            CertProgress::NoCertificate => {}
        }
        self.cert_done = true;
        self.cert = DtlsCertReassembly::default();
    }

    pub fn is_done(&self) -> bool {
        self.hello_done.iter().all(|&h| h) && self.appdata.iter().all(|&a| a) && self.cert_done
    }

    pub(crate) fn stop(&mut self, dir: Dir) {
        self.hello_done[dir as usize] = true;
        self.appdata[dir as usize] = true;
        if dir == Dir::ServerToClient {
            self.on_cert_progress(CertProgress::NoCertificate);
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.cert.heap_bytes() + self.info.cert.as_ref().map_or(0, |c| c.heap_bytes())
    }
}

/// The largest DTLS Certificate message put together (the TCP flight's cap is the
/// caller's `--l7-budget`-bound cap; a datagram flight is smaller).
const DTLS_CERT_CAP: usize = 16 * 1024;

#[cfg(test)]
mod tests {
    use super::super::parser::tests::{alpn_ext, client_hello, records, sni_ext};
    use super::*;

    fn hello_stream(max_record: usize) -> Vec<u8> {
        let msg = client_hello(0x0303, &[0x1301, 0xc02f], &[sni_ext("split.example"), alpn_ext(&["h2"])], false);
        records(&msg, max_record)
    }

    #[test]
    fn hello_split_into_segments_and_records() {
        for max_record in [16384, 50, 9] {
            let stream = hello_stream(max_record);
            for seg in [1, 3, 17, 100, stream.len()] {
                let mut st = TlsState::default();
                for (i, chunk) in stream.chunks(seg).enumerate() {
                    st.on_data(Dir::ClientToServer, chunk, i as u64, 16384);
                }
                let c = st.info.client.as_ref().unwrap_or_else(|| panic!("record {max_record} seg {seg}"));
                assert_eq!(c.sni.as_deref(), Some("split.example"));
                assert_eq!(c.alpn, ["h2"]);
                assert_eq!(st.heap_bytes(), 0, "the buffer is freed once the hello parsed");
            }
        }
    }

    proptest::proptest! {
        /// A hello in records of any size, cut into segments anywhere, parses as whole.
        #[test]
        fn split_anywhere_equals_whole(
            name in "[a-z]{1,40}\\.example",
            ciphers in proptest::collection::vec(proptest::prelude::any::<u16>(), 1..40),
            record in 1usize..300,
            cuts in proptest::collection::vec(1usize..200, 0..30),
        ) {
            let msg = client_hello(0x0303, &ciphers, &[sni_ext(&name), alpn_ext(&["h2"])], false);
            let stream = records(&msg, record);
            let mut whole = TlsState::default();
            whole.on_data(Dir::ClientToServer, &stream, 0, 16384);
            let mut split = TlsState::default();
            let mut rest = &stream[..];
            for c in cuts {
                let n = c.min(rest.len());
                split.on_data(Dir::ClientToServer, &rest[..n], 0, 16384);
                rest = &rest[n..];
            }
            split.on_data(Dir::ClientToServer, rest, 0, 16384);
            proptest::prop_assert_eq!(whole.info.client.as_ref().and_then(|c| c.sni.as_deref()), Some(name.as_str()));
            proptest::prop_assert_eq!(&whole.info, &split.info);
        }
    }

    /// The server's TLS 1.2 flight, cut into segments, gives the certificate and frees
    /// its buffer; a TLS 1.3 ServerHello stops the search at once, buffering nothing.
    /// One DTLS 1.2 record of `kind` (epoch `epoch`) holding `payload`.
    fn dtls_record(kind: u8, epoch: u16, payload: &[u8]) -> Vec<u8> {
        let mut r = vec![kind, 0xfe, 0xfd];
        r.extend_from_slice(&epoch.to_be_bytes());
        r.extend_from_slice(&[0, 0, 0, 0, 0, 1]);
        r.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        r.extend_from_slice(payload);
        r
    }

    /// A DTLS handshake fragment: message `kind` of `body.len()` bytes, seq `seq`,
    /// `body[from..to]`.
    fn dtls_fragment(kind: u8, seq: u16, body: &[u8], from: usize, to: usize) -> Vec<u8> {
        let u24 = |n: usize| [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        let mut f = vec![kind];
        f.extend_from_slice(&u24(body.len()));
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&u24(from));
        f.extend_from_slice(&u24(to - from));
        f.extend_from_slice(&body[from..to]);
        f
    }

    /// The server's DTLS Certificate message, whole or cut into fragments over records
    /// and datagrams (a retransmitted fragment among them), gives the certificate; a
    /// fragment after a gap, a ServerHelloDone before any certificate or `--tls-certs
    /// off` give none.
    #[test]
    fn dtls_server_certificate_from_fragments() {
        use super::super::cert::tests::CERT_DER;
        let u24 = |n: usize| [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        let mut body = u24(CERT_DER.len() + 3).to_vec();
        body.extend_from_slice(&u24(CERT_DER.len()));
        body.extend_from_slice(CERT_DER);
        let hello = dtls_record(22, 0, &dtls_fragment(2, 1, &[0xfe, 0xfd, 0, 0], 0, 4));
        let n = body.len();
        let cuts: [&[(usize, usize)]; 4] =
            [&[(0, n)], &[(0, 100), (100, n)], &[(0, 7), (0, 300), (250, 401), (401, n)], &[(0, 1), (1, 2), (2, n)]];
        for frags in cuts {
            let mut st = DtlsState::new(true);
            st.on_datagram(Dir::ServerToClient, &hello, 0);
            for (i, &(a, b)) in frags.iter().enumerate() {
                // Each fragment in a datagram of its own, after the ServerHello.
                let dgram = dtls_record(22, 0, &dtls_fragment(11, 2, &body, a, b));
                st.on_datagram(Dir::ServerToClient, &dgram, i as u64 + 1);
            }
            let c = st.info.cert.as_ref().unwrap_or_else(|| panic!("a certificate from {frags:?}"));
            assert_eq!(c.subject_cn.as_deref(), Some("server.example"));
            assert!(st.cert_done && st.cert.heap_bytes() == 0, "{frags:?}: the buffer is freed");
        }
        // A gap: the second half never comes whole from its start.
        let mut st = DtlsState::new(true);
        st.on_datagram(Dir::ServerToClient, &dtls_record(22, 0, &dtls_fragment(11, 2, &body, 0, 100)), 1);
        st.on_datagram(Dir::ServerToClient, &dtls_record(22, 0, &dtls_fragment(11, 2, &body, 200, n)), 2);
        assert!(st.info.cert.is_none() && !st.cert_done);
        // No certificate in the flight (a PSK key exchange): ServerHelloDone ends it.
        let mut st = DtlsState::new(true);
        st.on_datagram(Dir::ServerToClient, &dtls_record(22, 0, &dtls_fragment(14, 2, &[], 0, 0)), 1);
        assert!(st.info.cert.is_none() && st.cert_done);
        // Not sought.
        let mut st = DtlsState::new(false);
        st.on_datagram(Dir::ServerToClient, &dtls_record(22, 0, &dtls_fragment(11, 2, &body, 0, n)), 1);
        assert!(st.info.cert.is_none());
    }

    #[test]
    fn server_certificate_through_the_state() {
        use super::super::cert::tests::{flight, CERT_DER};
        let stream = records(&flight(&[CERT_DER]), 700);
        let mut st = TlsState::default();
        for c in stream.chunks(100) {
            st.on_data(Dir::ServerToClient, c, 0, 16384);
        }
        assert_eq!(st.info.server.as_ref().map(|s| s.cipher_suite), Some(0xc02f));
        let cert = st.info.cert.as_ref().expect("a certificate");
        assert_eq!(cert.subject_cn.as_deref(), Some("server.example"));
        assert!(st.cert_done && st.cert.heap_bytes() == 0);
        assert!(st.dir_done(Dir::ServerToClient) == st.tracker[1].stopped);
        // A hole in the server's stream before the certificate is whole: no certificate,
        // and nothing read from the bytes after it.
        let mut st = TlsState::default();
        st.on_data(Dir::ServerToClient, &stream[..300], 0, 16384);
        st.on_gap(Dir::ServerToClient);
        st.on_data(Dir::ServerToClient, &stream[400..], 0, 16384);
        assert!(st.cert_done && st.info.cert.is_none() && st.cert.heap_bytes() == 0);
        assert!(!st.events.contains(Event::TlsHandshakeMalformed));
        // TLS 1.3: supported_versions says 0x0304.
        let mut sh = vec![2, 0, 0, 46, 3, 3];
        sh.extend_from_slice(&[0x22; 32]);
        sh.extend_from_slice(&[0, 0x13, 0x01, 0, 0, 6, 0, 43, 0, 2, 3, 4]);
        let mut st = TlsState::default();
        st.on_data(Dir::ServerToClient, &records(&sh, 16384), 0, 16384);
        assert!(st.cert_done && st.cert.heap_bytes() == 0 && st.info.cert.is_none());
        assert_eq!(st.info.server.as_ref().map(|s| s.version), Some(0x0304));
    }

    proptest::proptest! {
        /// A TLS 1.2 server flight in records of any size, cut into segments anywhere,
        /// gives the same hello and certificate as whole, and frees its buffer.
        #[test]
        fn server_flight_split_anywhere_equals_whole(
            record in 1usize..2000,
            cuts in proptest::collection::vec(1usize..600, 0..30),
        ) {
            use super::super::cert::tests::{flight, CERT_DER};
            let stream = records(&flight(&[CERT_DER]), record);
            let mut whole = TlsState::default();
            whole.on_data(Dir::ServerToClient, &stream, 0, 16384);
            let mut split = TlsState::default();
            let mut rest = &stream[..];
            for c in cuts {
                let n = c.min(rest.len());
                split.on_data(Dir::ServerToClient, &rest[..n], 0, 16384);
                rest = &rest[n..];
            }
            split.on_data(Dir::ServerToClient, rest, 0, 16384);
            proptest::prop_assert!(whole.info.cert.is_some());
            proptest::prop_assert_eq!(&whole.info, &split.info);
            proptest::prop_assert_eq!(split.cert.heap_bytes(), 0);
        }
    }

    #[test]
    fn cap_gives_up() {
        let stream = hello_stream(16384);
        let mut st = TlsState::default();
        st.on_data(Dir::ClientToServer, &stream[..10], 0, 32);
        st.on_data(Dir::ClientToServer, &stream[10..], 0, 32);
        assert!(st.info.client.is_none());
        assert!(st.events.contains(Event::TlsReassemblyLimit));
    }

    #[test]
    fn timing_markers() {
        let mut st = TlsState::default();
        let mut c = hello_stream(16384);
        st.on_data(Dir::ClientToServer, &c, 1, 16384);
        // Client: ChangeCipherSpec and a Handshake (Finished) record, then app data cut
        // in the middle of its header.
        c.clear();
        c.extend_from_slice(&[20, 3, 3, 0, 1, 1, 22, 3, 3, 0, 2, 0, 0, 23, 3]);
        let r = st.on_data(Dir::ClientToServer, &c, 2, 16384);
        assert!(r.contains(RecordKind::ChangeCipherSpec) && r.contains(RecordKind::Handshake));
        assert_eq!(st.times.first_appdata_ns[0], None);
        let r = st.on_data(Dir::ClientToServer, &[3, 0, 1, 0xaa], 3, 16384);
        assert!(r.contains(RecordKind::ApplicationData));
        let hello_len = hello_stream(16384).len() as u64;
        assert_eq!(st.times.last_handshake_ns[0], Some(2));
        assert_eq!(st.times.first_appdata_ns[0], Some(3));
        assert_eq!(st.times.first_appdata_offset[0], Some(hello_len + 13));
        assert!(st.tracker[0].stopped);
    }
}
