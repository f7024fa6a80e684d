//! DNS parser and `L7Flow` over UDP and TCP: see `tapstat_fuzz::l7_dns_one`.
//! (The body is a function of the library so that the stable runner,
//! `examples/mutate.rs`, runs the same code.)

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tapstat_fuzz::l7_dns_one(data));
