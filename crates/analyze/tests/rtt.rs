//! RTT samples from data segments and the ACKs that cover exactly their end, with more
//! segments in flight than the per-direction bound remembers.

use tapstat_testkit::Conversation;

#[test]
fn a_bulk_transfer_with_more_in_flight_than_remembered_keeps_sampling() {
    // Steady state of a bulk transfer: a 1000-byte segment every ms, each acknowledged
    // 64 ms later (64 segments in flight, twice the 32 remembered). Every sample is
    // 64 ms. Forgetting the oldest segment when full kept only the 32 newest, which
    // the next ACK never names: no sample at all once the flight passed 32, so that the
    // samples left came from the ramp-up (few in flight, short queues) and the RTT was
    // biased low.
    let mut c = Conversation::new();
    c.handshake(64.0);
    let start = c.now_ms() + 1.0;
    let mut ends = Vec::new();
    for k in 0..400 {
        let t = start + k as f64;
        c.at(t);
        ends.push(c.client_data(1000).end);
        if k >= 64 {
            c.server_ack(ends[k - 64]);
        }
    }
    let f = c.flow();
    let d = f.e2e(0);
    let (avg, _, min, max) = d.rtt_ms().expect("samples");
    assert!(d.rtt_cnt >= 150, "only {} samples of 336 acknowledged segments", d.rtt_cnt);
    assert!((min, max) == (64.0, 64.0) && (avg - 64.0).abs() < 1e-9, "{avg} {min} {max}");
    assert!(d.rtt_dropped > 0);
}
