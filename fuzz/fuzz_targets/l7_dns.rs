//! DNS: the message parser on the whole input, and `L7Flow` over UDP and TCP port 53 on
//! its segments (TCP framing split anywhere).
//!
//! Input: segments separated by `#FRM`, each led by a direction byte. Asserted: no panic,
//! `run_l7`'s checks, and that a parsed message keeps at most `MAX_ANSWERS` answers.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tapstat_fuzz::{l7_segments, run_l7};
use tapstat_l7::dns::parser::{Message, MAX_ANSWERS};
use tapstat_l7::Transport;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Message::parse(data) {
        assert!(m.answers.len() <= MAX_ANSWERS);
    }
    let segs = l7_segments(data);
    run_l7(Transport::Udp, 53, &segs);
    run_l7(Transport::Tcp, 53, &segs);
});
