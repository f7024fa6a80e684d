//! QUIC parsers, Initial decryption and `L7Flow`: see `tapstat_fuzz::l7_quic_one`.
//! (The body is a function of the library so that the stable runner,
//! `examples/mutate.rs`, runs the same code.)

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tapstat_fuzz::l7_quic_one(data));
