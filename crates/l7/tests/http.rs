//! HTTP through `L7Flow`, as the engine drives it: classification, the transaction cap
//! and gaps in the stream.

use tapstat_l7::{App, Dir, Event, L7Config, L7Flow, Transport};

/// The per-flow transaction cap (64 by default) is a named event, not a silent stop:
/// the 65th request and later are not logged, and the flow says why.
#[test]
fn the_transaction_cap_is_an_event() {
    let cfg = L7Config::default();
    let mut f = L7Flow::new(Transport::Tcp, 40000, 80);
    let mut logged = 0;
    for i in 0..70 {
        let req = format!("GET /{i} HTTP/1.1\r\nHost: h\r\n\r\n");
        f.on_payload(&cfg, Dir::ClientToServer, req.as_bytes(), 2 * i);
        f.on_payload(&cfg, Dir::ServerToClient, b"HTTP/1.1 204 No Content\r\n\r\n", 2 * i + 1);
        logged += f.drain_http(false).len();
    }
    logged += f.drain_http(true).len();
    assert_eq!(logged, cfg.max_http_transactions as usize);
    assert!(f.events().contains(Event::HttpTooManyTransactions), "{:?}", f.events());
}

/// RFC 9110 §9.1: a method is any token. A connection whose first request uses a method
/// outside the common set (a cache's PURGE, WebDAV's MKCOL) is HTTP from its request
/// line, and its transactions are logged.
#[test]
fn a_flow_opened_by_an_uncommon_method_is_http() {
    for m in ["PURGE", "MKCOL", "PROPFIND", "BAN"] {
        let cfg = L7Config::default();
        let mut f = L7Flow::new(Transport::Tcp, 40000, 8080);
        let req = format!("{m} /x HTTP/1.1\r\nHost: cache.example\r\n\r\n");
        f.on_payload(&cfg, Dir::ClientToServer, req.as_bytes(), 1);
        f.on_payload(&cfg, Dir::ServerToClient, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 2);
        assert_eq!(f.app(), Some(App::Http), "{m}");
        let t = f.drain_http(true);
        assert_eq!(t.len(), 1, "{m}");
        assert_eq!(t[0].request.as_ref().map(|r| r.method.as_str()), Some(m));
        assert_eq!(t[0].response.as_ref().map(|r| r.status), Some(200));
    }
}

/// A line that merely has words and no HTTP version at its end is not HTTP: the probe
/// for uncommon methods wants the whole request line.
#[test]
fn text_without_a_request_line_is_not_http() {
    let cfg = L7Config::default();
    for first in [&b"HELLO there friend\r\n"[..], b"NICK guest 0 *\r\nUSER guest\r\n", b"A001 LOGIN user pass\r\n"] {
        let mut f = L7Flow::new(Transport::Tcp, 40000, 12345);
        f.on_payload(&cfg, Dir::ClientToServer, first, 1);
        assert_ne!(f.app(), Some(App::Http), "{:?}", String::from_utf8_lossy(first));
    }
}

/// A gap in the server's stream (the engine calls `on_gap`) inside a response body: the
/// next response is still logged, found at the segment that starts with its status line.
#[test]
fn responses_after_a_gap_are_logged() {
    let cfg = L7Config::default();
    let mut f = L7Flow::new(Transport::Tcp, 40000, 80);
    f.on_payload(&cfg, Dir::ClientToServer, b"GET /big HTTP/1.1\r\nHost: h\r\n\r\n", 1);
    f.on_payload(&cfg, Dir::ServerToClient, b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nxxxx", 2);
    f.on_gap(Dir::ServerToClient);
    f.on_payload(&cfg, Dir::ServerToClient, &[b'y'; 1400], 3);
    f.on_payload(&cfg, Dir::ClientToServer, b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n", 4);
    f.on_payload(&cfg, Dir::ServerToClient, b"HTTP/1.1 304 Not Modified\r\n\r\n", 5);
    let t = f.drain_http(true);
    let got: Vec<_> = t.iter().map(|t| t.response.as_ref().map(|r| r.status)).collect();
    assert_eq!(got, [Some(200), Some(304)]);
    assert_eq!(t[1].request.as_ref().and_then(|r| r.url.as_deref()), Some("/next"));
    assert!(f.events().contains(Event::HttpGap));
    assert!(!f.events().contains(Event::HttpMalformed));
}
