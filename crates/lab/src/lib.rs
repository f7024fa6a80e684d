//! The lab: a deterministic traffic synthesizer (sample traces and test inputs),
//! benchmarks and emulators.
pub mod flowtable;
pub mod scaling;
pub mod synth;
