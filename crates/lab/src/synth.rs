//! Deterministic traffic synthesizer. (To be written.)
