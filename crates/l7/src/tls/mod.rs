//! TLS over TCP and DTLS over UDP: `parser` (records, hellos), `fingerprint` (JA3,
//! JA4, JA3S, JA4S), `cert` (the server's certificate of TLS ≤ 1.2), `state` (per-flow reassembly, results and timing markers).

pub mod cert;
pub mod fingerprint;
pub mod parser;
pub mod state;

pub use fingerprint::Ja4Transport;
pub use state::{ClientHelloInfo, DtlsState, ServerHelloInfo, TlsInfo, TlsState, TlsTimes};
