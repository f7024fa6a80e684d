//! TLS over TCP and DTLS over UDP: `parser` (records, hellos), `fingerprint` (JA3,
//! JA4), `state` (per-flow reassembly, results and timing markers).

pub mod fingerprint;
pub mod parser;
pub mod state;

pub use fingerprint::Ja4Transport;
pub use state::{ClientHelloInfo, DtlsState, ServerHelloInfo, TlsInfo, TlsState, TlsTimes};
