//! The application-layer targets: each protocol's parsers on the whole input, then
//! [`run_l7`] over its segments.
//!
//! Input of each: segments separated by `#FRM`, each led by a direction byte
//! ([`l7_segments`]). Asserted: no panic, and `run_l7`'s checks, and what each says.

use tapstat_l7::dns::parser::{Message, MAX_ANSWERS};
use tapstat_l7::http::parser::{chunk_size, head_end, Request, Response};
use tapstat_l7::quic::crypto::{InitialKeys, Side};
use tapstat_l7::quic::parser::{gquic_chlo, parse_initial_frames, user_agent, LongHeader};
use tapstat_l7::tls::cert::{parse_certificate, CertReassembly};
use tapstat_l7::tls::fingerprint::{compute_server, ja3_string, ja4, Ja4Transport};
use tapstat_l7::tls::parser::{dtls_first_handshake_message, first_handshake_message, ClientHello, ServerHello};
use tapstat_l7::Transport;

use crate::{l7_segments, run_l7};

/// TLS and DTLS: the record and hello parsers, the server fingerprints and the
/// certificate's reassembly and parser on the whole input, and `L7Flow` over TCP
/// port 443 and UDP (DTLS) on its segments.
pub fn l7_tls_one(data: &[u8]) {
    let mut scratch = Vec::new();
    let _ = first_handshake_message(data, &mut scratch);
    let _ = dtls_first_handshake_message(data);
    for dtls in [false, true] {
        if let Some(ch) = ClientHello::parse(data, dtls) {
            let _ = (ja3_string(&ch), ja4(&ch, Ja4Transport::Dtls), ch.server_name(), ch.alpn().count());
        }
        if let Some(sh) = ServerHello::parse(data, dtls) {
            let _ = (sh.selected_version(), sh.alpn(), compute_server(&sh, Ja4Transport::Tcp));
        }
    }
    let _ = parse_certificate(data);
    let _ = CertReassembly::default().on_data(data, 16 * 1024);
    let segs = l7_segments(data);
    run_l7(Transport::Tcp, 443, &segs);
    run_l7(Transport::Udp, 4433, &segs);
}

/// QUIC: long headers, Initial frames, gQUIC CHLO and transport parameters on the whole
/// input, Initial decryption with the keys of its own DCID, and `L7Flow` over UDP port
/// 443 on its datagrams. Asserted too: a long header's packet lies within the datagram.
/// (AEAD authentication stops random packets before the frames; the frame parser is
/// fuzzed directly on the input.)
pub fn l7_quic_one(data: &[u8]) {
    let _ = parse_initial_frames(data, |_, _| {});
    let _ = gquic_chlo(data);
    let _ = user_agent(data);
    if let Ok(h) = LongHeader::parse(data) {
        assert!(h.pn_offset <= h.packet_len && h.packet_len <= data.len(), "header within the datagram");
        let keys = InitialKeys::new(h.version, h.dcid, Side::Client);
        let mut p = data[..h.packet_len].to_vec();
        let _ = keys.decrypt(&h, &mut p);
    }
    run_l7(Transport::Udp, 443, &l7_segments(data));
}

/// HTTP/1.x: head, request and response parsers on the whole input, and `L7Flow` over
/// TCP port 80 on its segments (pipelining, chunked bodies, heads split anywhere).
/// Asserted too: the head ends within the input.
pub fn l7_http_one(data: &[u8]) {
    if let Some(n) = head_end(data) {
        assert!(n <= data.len(), "the head ends within the input");
    }
    let _ = (chunk_size(data), Request::parse(data).map(|r| r.body()), Response::parse(data).map(|r| r.body(None)));
    run_l7(Transport::Tcp, 80, &l7_segments(data));
}

/// DNS: the message parser on the whole input, and `L7Flow` over UDP and TCP port 53 on
/// its segments (TCP framing split anywhere). Asserted too: a parsed message keeps at
/// most `MAX_ANSWERS` answers.
pub fn l7_dns_one(data: &[u8]) {
    if let Ok(m) = Message::parse(data) {
        assert!(m.answers.len() <= MAX_ANSWERS);
    }
    let segs = l7_segments(data);
    run_l7(Transport::Udp, 53, &segs);
    run_l7(Transport::Tcp, 53, &segs);
}
