//! tapstat's application layer: what a flow carries and what its first bytes say.
//!
//! The engine owns one `L7Flow` per flow and feeds it the payload of each packet
//! (`L7Flow::on_payload`: in-order TCP bytes, or one UDP datagram) with the packet's time.
//! The flow classifies itself (`App`, `AppSource`) from payload signatures of the first
//! packets of each direction, then hands the bytes to the parser of its protocol:
//!
//! - `tls`: ClientHello (SNI, ALPN, versions, cipher suites, extensions, JA3, JA4) and
//!   ServerHello (version, cipher, ALPN) over TCP with bounded reassembly, DTLS over UDP,
//!   and the record tracking behind Tstat's TLS timing markers (`TlsTimes`);
//! - `quic`: Initial packets of v1, v2 and draft-29 decrypted with the RFC 9001 §5.2 keys,
//!   CRYPTO frames reassembled by offset, the hellos, the user agent, the 0-RTT count;
//! - `http`: HTTP/1.x requests and responses paired in order (`HttpTransaction`);
//! - `dns`: DNS over UDP and TCP, queries paired with responses (`DnsTransaction`);
//! - `ssh`: each side's identification string and the HASSH of its KEXINIT.
//!
//! Each protocol folder has a `parser` (pure bytes → structs, knows no flows) and a
//! `state` (what one flow remembers). Nothing here knows the engine's flow table or the
//! other tapstat crates; the engine maps `L7Flow`'s results onto its records.
//!
//! Work is bounded per flow: a byte budget per direction (`L7Config::budget`) on what the
//! parsers inspect, caps on reassembly and on transactions, and once a flow is decided and
//! its parser done, `on_payload` returns at its first branch.
//!
//! ```
//! use tapstat_l7::{Dir, L7Config, L7Flow, Transport};
//!
//! let cfg = L7Config::default();
//! let mut flow = L7Flow::new(Transport::Tcp, 51000, 80);
//! flow.on_payload(&cfg, Dir::ClientToServer, b"GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n", 1_000);
//! flow.on_payload(&cfg, Dir::ServerToClient, b"HTTP/1.1 204 No Content\r\n\r\n", 2_000);
//! assert_eq!(flow.app().map(|a| a.name()), Some("http"));
//! let tx = flow.drain_http(true);
//! assert_eq!(tx[0].request.as_ref().unwrap().host.as_deref(), Some("example.com"));
//! assert_eq!(tx[0].response.as_ref().unwrap().status, 204);
//! ```

// Parses bytes from the wire or from files: no unsafe code, ever.
#![forbid(unsafe_code)]

pub mod classify;
mod cursor;
pub mod dns;
mod event;
mod flow;
pub mod http;
pub mod quic;
pub mod reorder;
pub mod ssh;
pub mod tls;

pub use classify::{App, AppSource};

/// What [`L7Flow::texts_mut`] and the transactions' `texts_mut` hand each string a
/// record can write to: `--anonymize` rewrites the addresses in it.
pub type TextVisitor<'a> = dyn FnMut(&mut String) + 'a;

/// Hands `s` to `f` when there is one.
#[inline]
pub(crate) fn visit(s: &mut Option<String>, f: &mut TextVisitor<'_>) {
    if let Some(s) = s {
        f(s);
    }
}
pub use event::{Event, Events};
pub use flow::L7Flow;
pub use tls::parser::RecordKind;

/// Which way a payload goes. The engine decides who the client is (the SYN's sender,
/// or a UDP flow's first sender).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Dir {
    ClientToServer = 0,
    ServerToClient = 1,
}

/// The transport under the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Transport {
    Tcp,
    Udp,
}

/// How much of an HTTP request target a record keeps (privacy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UrlPrivacy {
    /// The target as sent, query included.
    #[default]
    Full,
    /// The path without the query string.
    PathOnly,
    /// Nothing.
    None,
}

/// The application layer's knobs; one per engine, passed to every call.
#[derive(Clone, Copy, Debug)]
pub struct L7Config {
    /// Bytes per direction the parsers may inspect (buffer or parse). Bytes skipped by
    /// length without being looked at (TLS record bodies, HTTP bodies) do not count.
    /// DNS is bounded by `max_dns_transactions` instead: its messages are small and
    /// parsed whole, and a resolver's long-lived 5-tuple is logged up to that limit.
    /// 0 inspects nothing past the signatures: `app` is still decided, but no parser
    /// runs (no hellos, TLS times, HTTP or DNS transactions, QUIC results).
    pub budget: u32,
    /// The largest hello reassembled (TLS over TCP, QUIC's CRYPTO stream).
    pub reassembly_cap: usize,
    /// Payload packets per direction that the signatures look at before the flow is left
    /// to the port table.
    pub probe_packets: u8,
    pub url_privacy: UrlPrivacy,
    /// Read the server certificate of TLS ≤ 1.2 over TCP (the `tls_subject_cn`,
    /// `tls_issuer_cn`, `tls_sans` and validity columns): the server's flight is
    /// reassembled up to it and parsed once per distinct certificate.
    pub tls_certs: bool,
    pub max_http_transactions: u32,
    pub max_dns_transactions: u32,
}

impl Default for L7Config {
    fn default() -> Self {
        L7Config {
            budget: 16 * 1024,
            reassembly_cap: 16 * 1024,
            probe_packets: 8,
            url_privacy: UrlPrivacy::Full,
            tls_certs: true,
            max_http_transactions: 64,
            max_dns_transactions: 1024,
        }
    }
}

/// The TLS record kinds that start in one payload (a set of `RecordKind`, one byte):
/// what the engine needs for Tstat's handshake and application-data times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Records(u8);

impl Records {
    fn bit(k: RecordKind) -> u8 {
        match k {
            RecordKind::Handshake => 1,
            RecordKind::ChangeCipherSpec => 2,
            RecordKind::ApplicationData => 4,
            RecordKind::Alert => 8,
            RecordKind::Heartbeat => 16,
        }
    }

    pub fn insert(&mut self, k: RecordKind) {
        self.0 |= Self::bit(k);
    }

    pub fn contains(self, k: RecordKind) -> bool {
        self.0 & Self::bit(k) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}
