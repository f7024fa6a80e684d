//! The pcap / pcapng reader on any bytes, as a file and as a stream: see `tapstat_fuzz::capture_one`.
//! (The body is a function of the library so that the stable runner,
//! `examples/mutate.rs`, runs the same code.)

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tapstat_fuzz::capture_one(data));
