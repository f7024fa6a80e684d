//! The whole engine on any bytes taken as a capture: see `tapstat_fuzz::engine_one`.
//! (The body is a function of the library so that the stable runner,
//! `examples/mutate.rs`, runs the same code.)

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tapstat_fuzz::engine_one(data));
