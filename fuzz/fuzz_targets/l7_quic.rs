//! QUIC: long headers, Initial frames, gQUIC CHLO and transport parameters on the whole
//! input, Initial decryption with the keys of its own DCID, and `L7Flow` over UDP port
//! 443 on its datagrams.
//!
//! Input: datagrams separated by `#FRM`, each led by a direction byte. Asserted: no panic,
//! and `run_l7`'s checks. (AEAD authentication stops random packets before the frames;
//! the frame parser is fuzzed directly on the input.)

#![no_main]

use libfuzzer_sys::fuzz_target;
use tapstat_fuzz::{l7_segments, run_l7};
use tapstat_l7::quic::crypto::{InitialKeys, Side};
use tapstat_l7::quic::parser::{gquic_chlo, parse_initial_frames, user_agent, LongHeader};
use tapstat_l7::Transport;

fuzz_target!(|data: &[u8]| {
    let _ = parse_initial_frames(data, |_, _| {});
    let _ = gquic_chlo(data);
    let _ = user_agent(data);
    if let Ok(h) = LongHeader::parse(data) {
        assert!(h.pn_offset <= h.packet_len && h.packet_len <= data.len(), "header within the datagram");
        let keys = InitialKeys::new(h.version, h.dcid, Side::Client);
        let mut p = data[..h.packet_len].to_vec();
        let _ = keys.decrypt(&h, &mut p);
    }
    run_l7(Transport::Udp, 443, &l7_segments(data));
});
