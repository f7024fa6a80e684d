//! QUIC v1 (RFC 9000/9001), v2 (RFC 9369) and draft-29: `parser` (long headers,
//! frames, transport parameters), `crypto` (Initial keys, header protection, AEAD) and
//! `state` (per-flow CRYPTO reassembly and results).

pub mod crypto;
pub mod parser;
pub mod state;

pub use state::{QuicInfo, QuicState};
