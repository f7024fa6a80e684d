//! Per-payload cost of `L7Flow::on_payload`, without a benchmark framework: each case
//! runs a fixed number of fresh flows and prints the mean time per flow and per payload.
//!
//!     cargo bench -p tapstat-l7
//!
//! Cases: a decided flow (what every packet of an elephant flow costs once the layer is
//! done), an unknown flow (probes giving up), a TLS ClientHello + ServerHello with
//! fingerprints, a QUIC client Initial (RFC 9001 A.2: key derivation, header protection,
//! AEAD, CRYPTO reassembly, hello), an HTTP request and response, a DNS query and
//! response.

use std::hint::black_box;
use std::time::Instant;

use tapstat_l7::{Dir, L7Config, L7Flow, Transport};

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits")).collect()
}

fn tls_client_hello() -> Vec<u8> {
    // The RFC 9001 A.2 ClientHello (a CRYPTO frame's data) in a TLS record.
    let frame = unhex(include_str!("../src/quic/testdata/rfc9001_a2_crypto_frame.hex"));
    let hello = &frame[4..];
    let mut r = vec![22, 3, 1];
    r.extend_from_slice(&(hello.len() as u16).to_be_bytes());
    r.extend_from_slice(hello);
    r
}

fn case(name: &str, flows: u32, transport: Transport, port: u16, payloads: &[(Dir, Vec<u8>)]) {
    let cfg = L7Config::default();
    let start = Instant::now();
    for _ in 0..flows {
        let mut f = L7Flow::new(transport, 40000, port);
        for (i, (d, p)) in payloads.iter().enumerate() {
            black_box(f.on_payload(&cfg, *d, p, i as u64));
        }
        black_box(f.sni());
        black_box(f.drain_http(true));
        black_box(f.drain_dns(true));
    }
    let ns = start.elapsed().as_nanos() as f64 / f64::from(flows);
    println!("{name:28} {ns:10.0} ns/flow {:8.0} ns/payload", ns / payloads.len() as f64);
}

fn main() {
    let c2s = Dir::ClientToServer;
    let s2c = Dir::ServerToClient;
    let mut sh = vec![22, 3, 3, 0, 46, 2, 0, 0, 42, 3, 3];
    sh.extend_from_slice(&[0; 32]);
    sh.extend_from_slice(&[0, 0x13, 0x01, 0, 0, 2, 0, 0]);
    let appdata = {
        let mut a = vec![23, 3, 3, 0x05, 0x00];
        a.resize(1285, 0xaa);
        a
    };
    // After the hellos both directions see Application Data: the flow is done, and the
    // next 1000 payloads measure what a decided flow costs.
    let mut tls = vec![(c2s, tls_client_hello()), (s2c, sh.clone()), (c2s, appdata.clone()), (s2c, appdata.clone())];
    case("tls hellos + first appdata", 20_000, Transport::Tcp, 443, &tls);
    tls.extend((0..1000).map(|_| (s2c, vec![0xaa; 1448])));
    case("tls then 1000 payloads", 2_000, Transport::Tcp, 443, &tls);
    let junk: Vec<(Dir, Vec<u8>)> = (0..1000).map(|i| (if i % 2 == 0 { c2s } else { s2c }, vec![0x5a; 1448])).collect();
    case("unknown tcp, 1000 payloads", 2_000, Transport::Tcp, 5555, &junk);
    case("unknown udp, 1000 datagrams", 2_000, Transport::Udp, 5555, &junk);
    let quic = unhex(include_str!("../src/quic/testdata/rfc9001_a2_client_initial.hex"));
    case("quic client initial", 5_000, Transport::Udp, 443, &[(c2s, quic)]);
    let http = vec![
        (
            c2s,
            b"GET /index.html?q=1 HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: bench/1.0\r\nAccept: */*\r\n\r\n"
                .to_vec(),
        ),
        (s2c, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n".to_vec()),
        (s2c, vec![b'x'; 1000]),
    ];
    case("http request + response", 50_000, Transport::Tcp, 80, &http);
    let q = unhex("12340100000100000000000003777777076578616d706c6503636f6d0000010001");
    let r = unhex("12348180000100020000000003777777076578616d706c6503636f6d0000010001c00c0005000100000e100002c010c010000100010000003c00045db8d822");
    case("dns query + response", 50_000, Transport::Udp, 53, &[(c2s, q), (s2c, r)]);
}
