//! Out-of-sequence and repeated TCP segments, by cause: Tstat's classes (Mellia, Meo,
//! Muscariello, Rossi, "Passive analysis of TCP anomalies", Computer Networks 2008;
//! Tstat's rexmit.c). Each test scripts one realistic conversation, as a probe next to
//! the client sees it (server leg of the RTT 10 ms, client leg 0.5 ms), and checks
//! every class counter of the direction, so a segment is counted once, in its class.
//!
//! Tstat's thresholds, for the timings below: RTT min and mean of both legs (10.5 ms
//! here), RTO = mean + 4 std dev, at least 100 ms (tapstat's floor may be higher: the
//! scripts keep clear of 100..1000 ms where it matters).

use tapstat_analyze::tcp::TcpDir;
use tapstat_analyze::Flow;
use tapstat_testkit::Conversation;

/// The class counters of a direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Classes {
    rto: u64,
    fs: u64,
    reor: u64,
    dup: u64,
    fc: u64,
    unrto: u64,
    unfs: u64,
    unk: u64,
}

const NONE: Classes = Classes { rto: 0, fs: 0, reor: 0, dup: 0, fc: 0, unrto: 0, unfs: 0, unk: 0 };

fn classes(t: &TcpDir) -> Classes {
    Classes {
        rto: t.pkts_rto,
        fs: t.pkts_fs,
        reor: t.pkts_reor,
        dup: t.pkts_dup,
        fc: t.pkts_fc,
        unrto: t.pkts_unrto,
        unfs: t.pkts_unfs,
        unk: t.pkts_unk,
    }
}

const MSS: u32 = 1000;

/// A connection open at 10.5 ms (RTT 10 ms at the server leg), with one exchange of
/// data acknowledged, so both legs have RTT samples; the time is 20.5 ms.
fn opened() -> Conversation {
    let mut c = Conversation::new();
    c.handshake(10.0);
    c.at(10.5).client_data(MSS);
    c.at(20.5).server_ack_next();
    c
}

/// Ends the conversation cleanly from `ms` (everything acknowledged, FINs both
/// ways) and returns the flow.
fn close(mut c: Conversation, ms: f64) -> Flow {
    c.at(ms).server_ack_next();
    c.client_fin();
    c.after(10.0).server_ack_next().server_fin();
    c.after(0.5).client_ack_next();
    let f = c.flow();
    assert_eq!(f.conn_state(), "SF");
    f
}

fn assert_server_clean(f: &Flow) {
    assert_eq!(classes(f.e2e(1)), NONE, "nothing out of sequence from the server");
    assert_eq!(f.e2e(1).syn_retx, 0);
}

#[test]
fn a_clean_transfer_has_no_anomalies() {
    let mut c = opened();
    // Ten round trips of two segments each, every one acknowledged; the server answers.
    for i in 0..10 {
        let t = 30.0 + 20.0 * i as f64;
        c.at(t).client_data(MSS);
        c.at(t + 0.1).client_data(MSS);
        c.at(t + 10.1).server_ack_next();
        c.server_data(500);
        c.at(t + 10.6).client_ack_next();
    }
    let f = close(c, 300.0);
    assert_eq!(classes(f.e2e(0)), NONE);
    assert_server_clean(&f);
    assert_eq!((f.dir[0].pkts_retx, f.dir[0].pkts_ooo), (0, 0));
    assert_eq!(f.e2e(0).syn_retx, 0);
    assert_eq!((f.bytes_missed(0), f.bytes_missed(1)), (0, 0));
    assert_eq!(f.dir[0].bytes_uniq, 21 * MSS as u64);
}

#[test]
fn retransmission_after_a_timeout_is_rto() {
    let mut c = opened();
    // Lost after the probe; no ACK for a second (RTT 10 ms): the timer fires.
    let s = c.at(30.0).client_data(MSS);
    c.at(1030.0).client_resend(s.start, MSS);
    let f = close(c, 1040.0);
    assert_eq!(classes(f.e2e(0)), Classes { rto: 1, ..NONE });
    assert_eq!(f.dir[0].pkts_retx, 1);
    assert_eq!(f.dir[0].pkts_ooo, 0);
    assert_server_clean(&f);
}

#[test]
fn every_segment_resent_in_the_recovery_after_a_timeout_is_rto() {
    let mut c = opened();
    // A flight of three lost after the probe; after the timeout the sender resends the
    // first, and the others as the ACKs come back (go-back-N in slow start).
    let s1 = c.at(30.0).client_data(MSS);
    let s2 = c.at(30.1).client_data(MSS);
    let s3 = c.at(30.2).client_data(MSS);
    c.at(1030.0).client_resend(s1.start, MSS);
    c.at(1040.0).server_ack(s1.end);
    c.at(1040.5).client_resend(s2.start, MSS);
    c.at(1040.6).client_resend(s3.start, MSS);
    let f = close(c, 1050.6);
    assert_eq!(classes(f.e2e(0)), Classes { rto: 3, ..NONE });
    assert_eq!(f.dir[0].pkts_retx, 3);
    assert_server_clean(&f);
}

#[test]
fn retransmission_after_three_duplicate_acks_is_fast_retransmit() {
    let mut c = opened();
    // Five segments; the second is lost after the probe. The server acknowledges the
    // first, then each of 3, 4 and 5 with a duplicate ACK for the start of the second;
    // the client resends it at once, well within the RTO.
    let seg: Vec<_> = (0..5).map(|i| c.at(30.0 + 0.1 * i as f64).client_data(MSS)).collect();
    c.at(40.0).server_ack(seg[1].start);
    c.at(40.1).server_dup_ack(1);
    c.at(40.2).server_dup_ack(1);
    c.at(40.3).server_dup_ack(1);
    c.at(40.8).client_resend(seg[1].start, MSS);
    let f = close(c, 50.8);
    assert_eq!(classes(f.e2e(0)), Classes { fs: 1, ..NONE });
    assert_eq!(f.dir[0].pkts_retx, 1);
    assert_server_clean(&f);
}

#[test]
fn fast_retransmit_of_a_segment_lost_before_the_probe_is_fast_retransmit() {
    let mut c = opened();
    // As above, but the second segment was lost between the client and the probe:
    // the probe sees it once, after the duplicate ACKs, filling a hole.
    c.at(30.0).client_data(MSS);
    let lost = c.skip_client(MSS);
    for i in 0..3 {
        c.at(30.1 + 0.1 * i as f64).client_data(MSS);
    }
    c.at(40.0).server_ack(lost.start);
    c.at(40.1).server_dup_ack(1);
    c.at(40.2).server_dup_ack(1);
    c.at(40.3).server_dup_ack(1);
    c.at(40.8).client_resend(lost.start, MSS);
    let f = close(c, 50.8);
    assert_eq!(classes(f.e2e(0)), Classes { fs: 1, ..NONE });
    // New bytes to the probe: out of sequence, not a retransmission it could see.
    assert_eq!((f.dir[0].pkts_retx, f.dir[0].pkts_ooo), (0, 1));
    assert_eq!(f.bytes_missed(0), 0);
    assert_server_clean(&f);
}

#[test]
fn a_segment_overtaken_in_the_network_is_reordering() {
    let mut c = opened();
    // The client sends 1, 2, 3; the network swaps 2 and 3 before the probe, which sees
    // 2 one millisecond after 3 (far less than the RTT), never before.
    c.at(30.0).client_data(MSS);
    let second = c.skip_client(MSS);
    c.at(30.1).client_data(MSS);
    c.at(31.1).client_resend(second.start, MSS);
    let f = close(c, 40.1);
    assert_eq!(classes(f.e2e(0)), Classes { reor: 1, ..NONE });
    assert_eq!((f.dir[0].pkts_retx, f.dir[0].pkts_ooo), (0, 1));
    assert_eq!(f.bytes_missed(0), 0);
    assert_server_clean(&f);
}

#[test]
fn the_same_segment_twice_in_a_tenth_of_a_millisecond_is_a_network_duplicate() {
    let mut c = opened();
    // No sender can retransmit 0.1 ms after sending with an RTT of 10 ms and no
    // duplicate ACKs: the network (or the capture) duplicated the segment.
    let s = c.at(30.0).client_data(MSS);
    c.at(30.1).client_resend(s.start, MSS);
    let f = close(c, 40.1);
    assert_eq!(classes(f.e2e(0)), Classes { dup: 1, ..NONE });
    // The bytes are repeated at the probe all the same (Tstat's rexmit counters too).
    assert_eq!(f.dir[0].pkts_retx, 1);
    assert_eq!(f.dir[0].bytes_uniq, 2 * MSS as u64);
    assert_server_clean(&f);
}

#[test]
fn a_network_duplicate_need_not_follow_its_original_directly() {
    let mut c = opened();
    // The copy of the first segment arrives after the second one (Tstat tells the copy
    // by its IP id; the time, 0.1 ms after the original with an RTT of 10 ms and no
    // duplicate ACKs, says the same).
    let s = c.at(30.0).client_data(MSS);
    c.at(30.05).client_data(MSS);
    c.at(30.1).client_resend(s.start, MSS);
    let f = close(c, 40.1);
    assert_eq!(classes(f.e2e(0)), Classes { dup: 1, ..NONE });
    assert_eq!(f.dir[0].pkts_retx, 1);
    assert_server_clean(&f);
}

#[test]
fn probes_into_a_zero_window_are_flow_control() {
    let mut c = opened();
    // The server acknowledges the data and closes its window (its application stopped
    // reading). The client probes with one new byte after 200 ms, which the server does
    // not accept, and with the same byte again 400 ms later (longer than any RTO: still
    // a window probe, not a retransmission after a timeout); the server's application
    // reads meanwhile, so it takes the byte and opens the window.
    c.at(30.0).client_data(MSS);
    c.at(40.0).set_server_window(0).server_ack_next();
    let probe = c.at(240.0).client_data(1);
    c.at(250.0).server_ack(probe.start);
    c.at(650.0).client_resend(probe.start, 1);
    c.at(660.0).set_server_window(65535).server_ack(probe.end);
    c.at(660.5).client_data(MSS);
    let f = close(c, 670.5);
    assert_eq!(classes(f.e2e(0)), Classes { fc: 2, ..NONE });
    assert_eq!(f.e2e(1).win_0, 2);
    assert_eq!(f.dir[0].bytes_uniq, 3 * MSS as u64 + 1);
    assert_server_clean(&f);
}

#[test]
fn a_retransmission_of_acknowledged_data_after_a_timeout_is_unnecessary_rto() {
    let mut c = opened();
    // The server's ACK passes the probe but is lost on the way to the client, whose
    // timer fires: the data it resends had been acknowledged.
    let s = c.at(30.0).client_data(MSS);
    c.at(40.0).server_ack_next();
    c.at(1030.0).client_resend(s.start, MSS);
    let f = close(c, 1040.0);
    assert_eq!(classes(f.e2e(0)), Classes { unrto: 1, ..NONE });
    assert_eq!(f.dir[0].pkts_retx, 1);
    assert_server_clean(&f);
}

#[test]
fn a_fast_retransmission_of_acknowledged_data_is_unnecessary_fast_retransmit() {
    let mut c = opened();
    // Five segments; the second is delayed after the probe and reaches the server after
    // the others: three duplicate ACKs for it, then the ACK of all five. The client
    // answers the third duplicate ACK with a fast retransmission, which the probe sees
    // after the ACK of everything passed: an unnecessary fast retransmission.
    let seg: Vec<_> = (0..5).map(|i| c.at(30.0 + 0.1 * i as f64).client_data(MSS)).collect();
    c.at(40.0).server_ack(seg[1].start);
    c.at(40.1).server_dup_ack(1);
    c.at(40.2).server_dup_ack(1);
    c.at(40.3).server_dup_ack(1);
    c.at(40.4).server_ack(seg[4].end);
    c.at(40.8).client_resend(seg[1].start, MSS);
    let f = close(c, 50.8);
    assert_eq!(classes(f.e2e(0)), Classes { unfs: 1, ..NONE });
    assert_eq!(f.dir[0].pkts_retx, 1);
    assert_server_clean(&f);
}

#[test]
fn a_retransmission_sooner_than_the_rto_without_duplicate_acks_is_unknown() {
    let mut c = opened();
    // Resent 50 ms after it was sent: longer than the RTT (not the network), shorter
    // than any RTO, and no duplicate ACKs (not a fast retransmit). Tstat's
    // "duplicate with recovery time between RTT and RTO, not after 3 dup ACKs", counted
    // as unknown.
    let s = c.at(30.0).client_data(MSS);
    c.at(80.0).client_resend(s.start, MSS);
    let f = close(c, 90.0);
    assert_eq!(classes(f.e2e(0)), Classes { unk: 1, ..NONE });
    assert_eq!(f.dir[0].pkts_retx, 1);
    assert_server_clean(&f);
}

#[test]
fn a_syn_sent_again_with_the_same_isn_is_a_syn_retransmission() {
    let mut c = Conversation::new();
    // No SYN/ACK for a second (the initial RTO): the SYN again, same ISN.
    c.at(0.0).client_syn();
    c.at(1000.0).client_syn();
    c.at(1010.0).server_synack();
    c.at(1010.5).client_ack_next();
    c.at(1011.0).client_data(MSS);
    let f = close(c, 1021.0);
    assert_eq!(f.dir[0].syn_cnt, 2);
    assert_eq!(f.e2e(0).syn_retx, 1);
    assert!(f.tcp.complete);
    // A SYN is not data: no data retransmission, no class.
    assert_eq!(f.dir[0].pkts_retx, 0);
    assert_eq!(classes(f.e2e(0)), NONE);
    assert_server_clean(&f);
}

#[test]
fn a_synack_sent_again_is_a_syn_retransmission_of_the_server() {
    let mut c = Conversation::new();
    // The client's ACK of the SYN/ACK is lost after the probe; the server resends the
    // SYN/ACK after its timeout, and the client ACKs again.
    c.at(0.0).client_syn();
    c.at(10.0).server_synack();
    c.at(10.5).client_ack_next();
    c.at(1010.0).server_synack();
    c.at(1010.5).client_ack_next();
    let f = close(c, 1020.0);
    assert_eq!(f.dir[1].syn_cnt, 2);
    assert_eq!((f.e2e(0).syn_retx, f.e2e(1).syn_retx), (0, 1));
    assert_eq!((classes(f.e2e(0)), classes(f.e2e(1))), (NONE, NONE));
}

#[test]
fn data_acknowledged_but_never_seen_is_missed_not_retransmitted() {
    let mut c = opened();
    // The probe drops the middle segment (the server gets it: it acknowledges all three).
    c.at(30.0).client_data(MSS);
    c.skip_client(700);
    c.at(30.2).client_data(MSS);
    c.at(40.2).server_ack_next();
    let f = close(c, 50.0);
    assert_eq!(f.bytes_missed(0), 700);
    assert_eq!((f.dir[0].pkts_retx, f.dir[0].pkts_ooo), (0, 0));
    assert_eq!(classes(f.e2e(0)), NONE);
    assert_eq!(f.dir[0].bytes_uniq, 3 * MSS as u64);
    assert_server_clean(&f);
}

#[test]
fn a_lost_tail_acknowledged_by_the_server_is_missed() {
    let mut c = opened();
    // The last 300 bytes before the FIN are not seen; the server acknowledges them.
    c.at(30.0).client_data(MSS);
    c.skip_client(300);
    let f = close(c, 40.0);
    assert_eq!(f.bytes_missed(0), 300);
    assert_eq!(f.dir[0].pkts_retx, 0);
    assert_eq!(classes(f.e2e(0)), NONE);
}

#[test]
fn classes_are_counted_in_the_direction_that_sent_the_segment() {
    let mut c = opened();
    // The server's response is lost after the probe (on the client's short leg) and
    // resent after its timeout.
    let s = c.at(30.0).server_data(MSS);
    c.at(1030.0).server_resend(s.start, MSS);
    c.at(1030.5).client_ack_next();
    let f = close(c, 1040.0);
    assert_eq!(classes(f.e2e(1)), Classes { rto: 1, ..NONE });
    assert_eq!(classes(f.e2e(0)), NONE);
    assert_eq!((f.dir[0].pkts_retx, f.dir[1].pkts_retx), (0, 1));
}

#[test]
fn a_lost_fast_retransmission_sent_again_after_a_timeout_is_rto() {
    let mut c = opened();
    // As in the fast retransmit above, but the fast retransmission is lost after the
    // probe too; nothing more comes back, and a second later the timer fires. The
    // duplicate ACKs are old news by then: Tstat's fast-retransmit rule needs the
    // recovery time below the RTO.
    let seg: Vec<_> = (0..5).map(|i| c.at(30.0 + 0.1 * i as f64).client_data(MSS)).collect();
    c.at(40.0).server_ack(seg[1].start);
    c.at(40.1).server_dup_ack(1);
    c.at(40.2).server_dup_ack(1);
    c.at(40.3).server_dup_ack(1);
    c.at(40.8).client_resend(seg[1].start, MSS);
    c.at(1040.8).client_resend(seg[1].start, MSS);
    let f = close(c, 1050.8);
    assert_eq!(classes(f.e2e(0)), Classes { fs: 1, rto: 1, ..NONE });
    assert_eq!(f.dir[0].pkts_retx, 2);
    assert_server_clean(&f);
}

#[test]
fn a_timeout_is_recognised_without_rtt_samples() {
    let mut c = Conversation::new();
    // Seen from the middle (no handshake, no RTT sample yet): a segment sent again 3 s
    // later is a retransmission after a timeout whatever the initial RTO (Tstat 0.5 s,
    // RFC 6298 1 s).
    let s = c.at(0.0).client_data(MSS);
    c.at(3000.0).client_resend(s.start, MSS);
    c.at(3010.0).server_ack_next();
    let f = c.flow();
    assert_eq!(classes(f.e2e(0)), Classes { rto: 1, ..NONE });
    assert_eq!(f.dir[0].pkts_retx, 1);
}

/// PSH counts on segments with payload, once (Tstat's count): not on a retransmission
/// of the same bytes, not on a segment without payload (a pure ACK, a FIN).
#[test]
fn push_is_counted_on_new_payload_only() {
    use tapstat_testkit::{Side, ACK, FIN, PSH};
    let mut c = opened();
    let (seq, ack, server_seq) = (c.next_seq(Side::Client), c.acked(Side::Client), c.next_seq(Side::Server));
    c.at(30.0).send(Side::Client, ACK | PSH, seq, ack, MSS);
    // The same bytes again after an RTO: a retransmission, its PSH not counted again.
    c.at(1500.0).send(Side::Client, ACK | PSH, seq, ack, MSS);
    c.at(1510.0).send(Side::Server, ACK, server_seq, seq.wrapping_add(MSS), 0);
    c.at(1520.0).send(Side::Client, ACK | PSH, seq.wrapping_add(MSS), ack, 0);
    c.at(1530.0).send(Side::Client, FIN | ACK | PSH, seq.wrapping_add(MSS), ack, 0);
    let f = c.flow();
    assert_eq!(f.e2e(0).pkts_rto, 1, "the second copy is a retransmission");
    assert_eq!(f.e2e(0).pkts_push, 1);
    assert_eq!(f.e2e(1).pkts_push, 0);
}

/// Bytes in flight are measured at segments of new data only: a keep-alive (one byte
/// already acknowledged) finds nothing in flight, which says nothing of the window.
#[test]
fn cwin_is_measured_at_new_data_only() {
    use tapstat_testkit::Side;
    let mut c = opened();
    c.at(30.0).client_data(MSS);
    c.at(40.0).server_ack_next();
    let next = c.next_seq(Side::Client);
    c.at(100.0).client_resend(next.wrapping_sub(1), 1);
    let f = c.flow();
    let e = f.e2e(0);
    assert_eq!(e.pkts_unrto + e.pkts_unfs + e.pkts_unk + e.pkts_rto, 1, "the keep-alive is a repeated segment");
    assert_eq!((e.cwin_min, e.cwin_max), (MSS, MSS));
}

#[test]
fn a_stale_ack_to_a_syn_is_not_missed_data() {
    use tapstat_testkit::{Side, ACK, RST};
    // The server answers a SYN with an ACK of an old connection (RFC 5961 §4's
    // challenge ACK, 2e9 bytes off); the client resets (RFC 9293 §3.10.7.3).
    let mut c = Conversation::new();
    c.at(0.0).client_syn();
    let stale = c.next_seq(Side::Client).wrapping_add(2_000_000_000);
    c.at(10.0).send(Side::Server, ACK, 777, stale, 0);
    c.at(10.5).send(Side::Client, RST, stale, 0, 0);
    let f = c.flow();
    assert_eq!((f.bytes_missed(0), f.bytes_missed(1)), (0, 0));
}

#[test]
fn an_ack_beyond_the_receivers_window_is_not_missed_data() {
    let mut c = opened();
    c.at(30.0).client_data(MSS);
    // A misplaced ACK 100 MB ahead, beyond the 65,535-byte window (no scaling):
    // the client cannot have sent that much unseen.
    let far = c.next_seq(tapstat_testkit::Side::Client).wrapping_add(100_000_000);
    c.at(40.0).server_ack(far);
    c.at(41.0).server_ack_next();
    let f = close(c, 50.0);
    assert_eq!(f.bytes_missed(0), 0);
    assert_eq!(f.dir[0].bytes_uniq, 2 * MSS as u64);
}
