//! Property tests: no parser panics on any input, truncated or arbitrary, and neither
//! does `L7Flow` whatever payloads, directions and ports it is fed; and `L7Flow` learns
//! the same from a stream cut anywhere, its first bytes (the probes') included.

use proptest::prelude::*;
use tapstat_l7::dns::parser::Message;
use tapstat_l7::http::parser::{chunk_size, head_end, Request, Response};
use tapstat_l7::quic::parser::{gquic_chlo, parse_initial_frames, user_agent, LongHeader};
use tapstat_l7::tls::fingerprint::{ja3_string, ja4, Ja4Transport};
use tapstat_l7::tls::parser::{dtls_first_handshake_message, first_handshake_message, ClientHello, ServerHello};
use tapstat_l7::{Dir, L7Config, L7Flow, Transport};

/// Bytes that often start like the protocols, so the fuzzing gets past the first checks.
fn seeded_bytes() -> impl Strategy<Value = Vec<u8>> {
    let prefixes: Vec<Vec<u8>> = vec![
        vec![],
        vec![22, 3, 1],
        vec![22, 3, 3, 0, 200, 1, 0, 0, 196, 3, 3],
        vec![22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0],
        vec![0xc3, 0, 0, 0, 1, 8],
        vec![0xc3, 0x6b, 0x33, 0x43, 0xcf],
        b"GET / HTTP/1.1\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
        vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0],
        b"CHLO".to_vec(),
    ];
    (proptest::sample::select(prefixes), proptest::collection::vec(any::<u8>(), 0..600)).prop_map(|(mut p, r)| {
        p.extend_from_slice(&r);
        p
    })
}

/// RFC 8448 §3's ClientHello record.
fn rfc8448_client_hello() -> Vec<u8> {
    let hex: String =
        include_str!("testdata/rfc8448_client_hello.hex").chars().filter(|c| !c.is_whitespace()).collect();
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect()
}

const HTTP_REQ: &[u8] = b"GET /a?b=c HTTP/1.1\r\nHost: www.example.org\r\nUser-Agent: t/1\r\n\r\n\
    POST /form HTTP/1.1\r\nHost: www.example.org\r\nContent-Length: 5\r\n\r\nhello";
const HTTP_RESP: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc\
    HTTP/1.1 303 See Other\r\nLocation: /\r\nContent-Length: 0\r\n\r\n";

/// Feeds `data` to `f` as `dir`'s stream, cut at `cuts`.
fn feed_cut(f: &mut L7Flow, cfg: &L7Config, dir: Dir, data: &[u8], cuts: &[usize]) {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(data.len())).collect();
    cuts.push(0);
    cuts.push(data.len());
    cuts.sort_unstable();
    for w in cuts.windows(2) {
        f.on_payload(cfg, dir, &data[w[0]..w[1]], 0);
    }
}

fn all_parsers(b: &[u8]) {
    let mut scratch = Vec::new();
    let _ = first_handshake_message(b, &mut scratch);
    let _ = dtls_first_handshake_message(b);
    for dtls in [false, true] {
        if let Some(ch) = ClientHello::parse(b, dtls) {
            let _ = (ch.server_name(), ch.alpn().count(), ch.supported_versions().count());
            let _ = (ja3_string(&ch), ja4(&ch, Ja4Transport::Tcp), ch.quic_transport_parameters());
        }
        if let Some(sh) = ServerHello::parse(b, dtls) {
            let _ = (sh.selected_version(), sh.alpn());
        }
    }
    let _ = LongHeader::parse(b);
    let _ = parse_initial_frames(b, |_, _| {});
    let _ = gquic_chlo(b);
    let _ = user_agent(b);
    let _ = (head_end(b), chunk_size(b), Request::parse(b), Response::parse(b));
    let _ = Message::parse(b);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic(b in seeded_bytes()) {
        all_parsers(&b);
        for cut in [0, 1, 5, 13, b.len() / 2] {
            all_parsers(&b[..cut.min(b.len())]);
        }
    }

    #[test]
    fn flows_never_panic(
        segs in proptest::collection::vec((any::<bool>(), seeded_bytes()), 1..8),
        tcp in any::<bool>(),
        port in proptest::sample::select(vec![0u16, 53, 80, 443, 3478, 5060]),
    ) {
        let cfg = L7Config { budget: 2048, reassembly_cap: 1024, ..L7Config::default() };
        let mut f = L7Flow::new(if tcp { Transport::Tcp } else { Transport::Udp }, 40000, port);
        for (i, (to_server, p)) in segs.iter().enumerate() {
            let dir = if *to_server { Dir::ClientToServer } else { Dir::ServerToClient };
            f.on_payload(&cfg, dir, p, i as u64);
        }
        let _ = (f.app(), f.app_source(), f.sni(), f.ja4(), f.quic(), f.tls_times(), f.events());
        let _ = (f.drain_http(true), f.drain_dns(true), f.heap_bytes());
    }

    /// A ClientHello cut anywhere, in its first bytes too (where the probes are still
    /// deciding), gives the SNI, JA3 and JA4 of the whole one.
    #[test]
    fn flow_split_anywhere_tls(cuts in proptest::collection::vec(0usize..201, 0..8), first in 1usize..12) {
        let cfg = L7Config::default();
        let ch = rfc8448_client_hello();
        let mut whole = L7Flow::new(Transport::Tcp, 40000, 443);
        whole.on_payload(&cfg, Dir::ClientToServer, &ch, 0);
        prop_assert_eq!(whole.sni(), Some("server"));
        let mut f = L7Flow::new(Transport::Tcp, 40000, 443);
        let mut cuts = cuts;
        cuts.push(first);
        feed_cut(&mut f, &cfg, Dir::ClientToServer, &ch, &cuts);
        prop_assert_eq!((f.app(), f.sni(), f.ja3(), f.ja4()), (whole.app(), whole.sni(), whole.ja3(), whole.ja4()));
    }

    /// HTTP requests and responses cut anywhere, first bytes included, give the
    /// transactions of the whole streams.
    #[test]
    fn flow_split_anywhere_http(
        req_cuts in proptest::collection::vec(0usize..HTTP_REQ.len(), 0..8),
        resp_cuts in proptest::collection::vec(0usize..HTTP_RESP.len(), 0..8),
        first in 1usize..10,
    ) {
        let cfg = L7Config::default();
        let mut whole = L7Flow::new(Transport::Tcp, 40000, 8000);
        whole.on_payload(&cfg, Dir::ClientToServer, HTTP_REQ, 0);
        whole.on_payload(&cfg, Dir::ServerToClient, HTTP_RESP, 0);
        let want = whole.drain_http(true);
        prop_assert_eq!(want.len(), 2);
        let mut f = L7Flow::new(Transport::Tcp, 40000, 8000);
        let (mut req_cuts, mut resp_cuts) = (req_cuts, resp_cuts);
        req_cuts.push(first);
        resp_cuts.push(first);
        feed_cut(&mut f, &cfg, Dir::ClientToServer, HTTP_REQ, &req_cuts);
        feed_cut(&mut f, &cfg, Dir::ServerToClient, HTTP_RESP, &resp_cuts);
        prop_assert_eq!(f.drain_http(true), want);
    }
}

proptest! {
    /// A TCP direction's segments in any order, any of them retransmitted, come out of
    /// `reorder::Stream` as the stream in order, once (within its bounds; what a hole
    /// still holds goes out at the end).
    #[test]
    fn reordered_segments_come_out_as_the_stream(
        text in proptest::collection::vec(any::<u8>(), 1..3000),
        cuts in proptest::collection::vec(1usize..400, 1..12),
        order in proptest::collection::vec(any::<u16>(), 12),
        again in proptest::collection::vec(any::<bool>(), 12),
    ) {
        use tapstat_l7::reorder::{Step, Stream};
        // Segments: consecutive pieces of the text (the last takes the rest).
        let mut segs = Vec::new();
        let mut at = 0;
        for c in &cuts {
            if at >= text.len() {
                break;
            }
            let end = (at + c).min(text.len());
            segs.push((at, end));
            at = end;
        }
        if at < text.len() {
            segs.push((at, text.len()));
        }
        // The first in place (the stream starts there), the rest shuffled, some twice.
        let mut rest: Vec<usize> = (1..segs.len()).collect();
        rest.sort_by_key(|i| order[*i % order.len()] ^ (*i as u16).wrapping_mul(40503));
        let mut seq = vec![0];
        for i in rest {
            seq.push(i);
            if again[i % again.len()] {
                seq.push(i);
            }
        }
        let mut s = Stream::new(0);
        let mut out = Vec::new();
        let mut gaps = 0;
        let mut feed = |st: Step<'_>| match st {
            Step::Gap => gaps += 1,
            Step::Bytes(b, _) => out.extend_from_slice(b),
        };
        for i in seq {
            let (a, e) = segs[i];
            s.push(a as u64, (e - a) as u64, Some(&text[a..e]), 0, &mut feed);
        }
        s.flush(&mut feed);
        prop_assert_eq!(gaps, 0);
        prop_assert_eq!(out, text);
    }
}
