//! TLS and DTLS: the record and hello parsers, the server fingerprints and the
//! certificate's reassembly and parser on the whole input, and `L7Flow` over TCP
//! port 443 and UDP (DTLS) on its segments.
//!
//! Input: segments separated by `#FRM`, each led by a direction byte
//! (`tapstat_fuzz::l7_segments`). Asserted: no panic, and `run_l7`'s checks.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tapstat_fuzz::{l7_segments, run_l7};
use tapstat_l7::tls::cert::{parse_certificate, CertReassembly};
use tapstat_l7::tls::fingerprint::{compute_server, ja3_string, ja4, Ja4Transport};
use tapstat_l7::tls::parser::{dtls_first_handshake_message, first_handshake_message, ClientHello, ServerHello};
use tapstat_l7::Transport;

fuzz_target!(|data: &[u8]| {
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
});
