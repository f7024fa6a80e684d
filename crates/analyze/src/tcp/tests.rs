use super::*;

#[test]
fn in_order_gap_fill_and_retransmission() {
    let mut s = SeqSpace::default();
    assert_eq!(s.on_data(1000, 100), (SegmentClass::InOrder, 100));
    assert_eq!(s.on_data(1100, 100), (SegmentClass::InOrder, 100));
    // 1200..1300 missed at the probe
    assert_eq!(s.on_data(1300, 100), (SegmentClass::AfterGap, 100));
    // the hole is filled later: out of sequence, new bytes
    assert_eq!(s.on_data(1200, 100), (SegmentClass::OutOfSequence, 100));
    // the same bytes again: a retransmission
    assert_eq!(s.on_data(1200, 100), (SegmentClass::Retransmission, 0));
    assert_eq!(s.on_data(1000, 400), (SegmentClass::Retransmission, 0));
    // overlapping old and new data: counted as new for the new part
    assert_eq!(s.on_data(1350, 100), (SegmentClass::OutOfSequence, 50));
}

#[test]
fn sequence_wraps() {
    let mut s = SeqSpace::default();
    assert_eq!(s.on_data(u32::MAX - 49, 100), (SegmentClass::InOrder, 100));
    assert_eq!(s.on_data(50, 100), (SegmentClass::InOrder, 100));
    assert_eq!(s.on_data(u32::MAX - 49, 100), (SegmentClass::Retransmission, 0));
}

#[test]
fn partial_hole_fill_keeps_the_rest() {
    let mut s = SeqSpace::default();
    s.on_data(0, 10);
    s.on_data(100, 10); // hole 10..100
    assert_eq!(s.on_data(40, 20), (SegmentClass::OutOfSequence, 20));
    assert_eq!(s.on_data(10, 30), (SegmentClass::OutOfSequence, 30));
    assert_eq!(s.on_data(60, 40), (SegmentClass::OutOfSequence, 40));
    assert_eq!(s.on_data(10, 90), (SegmentClass::Retransmission, 0));
}

/// One segment: from the client, flags, sequence and acknowledgment numbers,
/// payload length, window.
type Seg = (bool, u8, u32, u32, u32, u16);

const SYN: u8 = TcpFields::SYN;
const ACK: u8 = TcpFields::ACK;
const FIN: u8 = TcpFields::FIN;
const RST: u8 = TcpFields::RST;
const SA: u8 = SYN | ACK;
const FA: u8 = FIN | ACK;
const RA: u8 = RST | ACK;
const PA: u8 = TcpFields::PSH | ACK;

/// Runs `segs` through one flow, as `Flow::on_packet` does; returns Zeek's
/// `conn_state` and `history`.
fn zeek(segs: &[Seg]) -> (&'static str, String) {
    let d = |&(c, flags, seq, ack, len, window): &Seg| {
        let (src, sport, dst, dport) = if c { (1, 40000, 2, 80) } else { (2, 80, 1, 40000) };
        Decoded {
            l4: tapstat_decode::L4::Tcp,
            ip_version: 4,
            proto: 6,
            src,
            dst,
            sport,
            dport,
            payload_len: len,
            tcp: TcpFields { seq, ack, flags, window, hdr_len: 20 },
            ..Default::default()
        }
    };
    let mut f = Flow::new(&d(&segs[0]), segs[0].0, 0, None, false);
    let mut rings = RingPool::default();
    for (i, s) in segs.iter().enumerate() {
        let di = f.dir_of(s.0);
        on_segment(&mut f, &d(s), i as u64, di, &mut rings);
    }
    (f.conn_state(), f.history.as_str().to_string())
}

/// A client's handshake and request, and the server's answer: ISNs 100 (client)
/// and 1000 (server), 10 bytes each way.
fn opened() -> Vec<Seg> {
    vec![
        (true, SYN, 100, 0, 0, 1000),
        (false, SA, 1000, 101, 0, 1000),
        (true, ACK, 101, 1001, 0, 1000),
        (true, PA, 101, 1001, 10, 1000),
        (false, PA, 1001, 111, 10, 1000),
    ]
}

/// The usual connection: Zeek's `SF` and `ShADdFf` (main.zeek: "SF: Normal
/// establishment and termination"; `d` once per side, the FINs without `a`).
#[test]
fn zeek_normal_close() {
    let mut p = opened();
    p.extend([(true, FA, 111, 1011, 0, 1000), (false, FA, 1011, 112, 0, 1000), (true, ACK, 112, 1012, 0, 1000)]);
    assert_eq!(zeek(&p), ("SF", "ShADdFf".to_string()));
}

/// A connection seen from mid-stream, closed by a FIN each way: both endpoints are
/// `TCP_ENDPOINT_PARTIAL` until their FIN makes them `CLOSED`, and Zeek's
/// `conn_state` asks only `rs == TCP_CLOSED && os == TCP_CLOSED`: `SF`, not `OTH`.
#[test]
fn zeek_mid_stream_fin_fin_is_sf() {
    let p = [
        (true, PA, 5000, 9000, 10, 1000),
        (false, PA, 9000, 5010, 10, 1000),
        (true, FA, 5010, 9010, 0, 1000),
        (false, FA, 9010, 5011, 0, 1000),
    ];
    assert_eq!(zeek(&p), ("SF", "DdFf".to_string()));
    // Only the client's FIN: `SH` (closed, and the responder inactive or partial).
    assert_eq!(zeek(&p[..3]).0, "SH");
    // Only the server's FIN: `SHR`.
    assert_eq!(zeek(&[p[0], p[1], p[3]]).0, "SHR");
    // Neither: `OTH` ("No SYN seen, just midstream traffic").
    assert_eq!(zeek(&p[..2]).0, "OTH");
    // A RST from the server of a partial connection: `RSTRH` (o_inactive).
    assert_eq!(zeek(&[p[0], (false, RA, 9000, 5010, 0, 1000)]), ("RSTRH", "Dr".to_string()));
}

/// `S0`, `REJ`, `RSTOS0` and `SH`: a SYN with no SYN/ACK.
#[test]
fn zeek_attempts() {
    let syn = (true, SYN, 100, 0, 0, 1000);
    assert_eq!(zeek(&[syn]), ("S0", "S".to_string()));
    // The SYN sent again (same ISN): no second `S`.
    assert_eq!(zeek(&[syn, syn]), ("S0", "S".to_string()));
    // REJ: the responder resets while the originator is in SYN_SENT.
    assert_eq!(zeek(&[syn, (false, RA, 0, 101, 0, 0)]), ("REJ", "Sr".to_string()));
    // RSTOS0: `/\^?S[^HAFGIQ]*R.*/` on the history, the responder never seen.
    assert_eq!(zeek(&[syn, (true, RST, 101, 0, 0, 0)]), ("RSTOS0", "SR".to_string()));
    // SH: "Originator sent a SYN followed by a FIN".
    assert_eq!(zeek(&[syn, (true, FIN, 101, 0, 0, 1000)]), ("SH", "SF".to_string()));
}

/// A flow first seen at its SYN/ACK: Zeek flips the roles (the receiver is the
/// originator, as tapstat's `ClientRule::SynAck`) and writes `^`; the client's ACK
/// then establishes both endpoints (`UpdateInactiveState`: "No SYN packet from
/// originator but SYN/ACK from responder, and now a pure ACK"): `S1`.
#[test]
fn zeek_flip_at_syn_ack() {
    let p = [(false, SA, 1000, 101, 0, 1000), (true, ACK, 101, 1001, 0, 1000)];
    assert_eq!(zeek(&p), ("S1", "^hA".to_string()));
    // RSTRH: "Responder sent a SYN ACK followed by a RST, we never saw a SYN".
    assert_eq!(zeek(&[p[0], (false, RST, 1001, 0, 0, 0)]), ("RSTRH", "^hr".to_string()));
    // SHR: the same with a FIN.
    assert_eq!(zeek(&[p[0], (false, FA, 1001, 101, 0, 1000)]), ("SHR", "^hf".to_string()));
}

/// RSTO and RSTR after an established connection; `r` again at another sequence
/// number, not at the same one (`hist_last_RST`).
#[test]
fn zeek_resets() {
    let mut p = opened();
    p.push((true, RA, 111, 1011, 0, 0));
    assert_eq!(zeek(&p), ("RSTO", "ShADdR".to_string()));
    p.push((true, RST, 111, 0, 0, 0));
    assert_eq!(zeek(&p).1, "ShADdR");
    p.push((true, RST, 112, 0, 0, 0));
    assert_eq!(zeek(&p).1, "ShADdRR");
    let mut p = opened();
    p.push((false, RA, 1011, 111, 0, 0));
    assert_eq!(zeek(&p), ("RSTR", "ShADdr".to_string()));
}

/// `i` (FIN+RST) and `q` (SYN+FIN, SYN+RST): once per side, with no `f`, `r` or `s`.
#[test]
fn zeek_multi_flag_packets() {
    let mut p = opened();
    p.push((true, FIN | RST | ACK, 111, 1011, 0, 0));
    p.push((true, FIN | RST | ACK, 111, 1011, 0, 0));
    assert_eq!(zeek(&p).1, "ShADdI");
    let p = [(true, SYN | FIN, 100, 0, 0, 1000), (false, SYN | RST | ACK, 0, 101, 0, 0)];
    assert_eq!(zeek(&p).1, "Qq");
}

/// `t` and `g`: a hole filled later is a retransmission to Zeek (the segment ends
/// below the highest sequence number sent, `update_last_seq`); bytes the peer
/// acknowledges but the probe never saw are a content gap (`TCP_Reassembler::
/// Undelivered`), `g` for the side that sent them.
#[test]
fn zeek_retransmission_and_gap() {
    let mut p = opened();
    // The client's 111..121 is late: 121..131 first, then the hole filled.
    p.push((true, PA, 121, 1011, 10, 1000));
    p.push((true, PA, 111, 1011, 10, 1000));
    assert_eq!(zeek(&p).1, "ShADdT");
    // The server's 1011..1021 is never seen, and the client acknowledges it.
    let mut p = opened();
    p.push((false, PA, 1021, 111, 10, 1000));
    p.push((true, ACK, 111, 1031, 0, 1000));
    assert_eq!(zeek(&p).1, "ShADdg");
    // Only one `g` for the same hole acknowledged again.
    p.push((true, ACK, 111, 1031, 0, 1000));
    assert_eq!(zeek(&p).1, "ShADdg");
    // The ACK of a FIN is not a gap.
    let mut p = opened();
    p.push((false, FA, 1011, 111, 0, 1000));
    p.push((true, ACK, 111, 1012, 0, 1000));
    assert_eq!(zeek(&p).1, "ShADdf");
    // No `g` in a partial connection: its gaps may predate the capture.
    let p = [(true, PA, 5000, 9000, 10, 1000), (false, ACK, 9000, 5020, 0, 1000)];
    assert_eq!(zeek(&p).1, "Da");
}

/// `t`, `g` and `w` are written at the 1st, 10th, 100th... time per side
/// (`Connection::ScaledHistoryEntry`, base 10).
#[test]
fn zeek_scaled_letters() {
    let mut p = opened();
    for _ in 0..100 {
        p.push((true, PA, 101, 1011, 10, 1000));
    }
    assert_eq!(zeek(&p).1, "ShADdTTT");
    let mut p = opened();
    for _ in 0..10 {
        p.push((false, ACK, 1011, 111, 0, 0));
    }
    // The server's pure ACKs with a zero window: `a` once, `w` at the 1st and 10th.
    assert_eq!(zeek(&p).1, "ShADdaww");
    // After the peer's FIN, a zero window is of no interest.
    let mut p = opened();
    p.push((true, FA, 111, 1011, 0, 1000));
    p.push((false, ACK, 1011, 112, 0, 0));
    assert_eq!(zeek(&p).1, "ShADdFa");
}

#[test]
fn conn_states() {
    let mut c = TcpConn::default();
    let h = History::default();
    assert_eq!(c.conn_state(&h), "OTH");
    c.on_flags(0, SYN, 0);
    assert_eq!(c.conn_state(&h), "S0");
    c.on_flags(1, SA, 0);
    assert_eq!(c.conn_state(&h), "S1");
    c.on_flags(0, FA, 0);
    assert_eq!(c.conn_state(&h), "S2");
    c.on_flags(1, FA, 0);
    assert_eq!(c.conn_state(&h), "SF");
}

#[test]
fn history_letters_once_per_direction() {
    let mut h = History::default();
    h.check(0, SEEN_SYN, b's');
    h.check(1, SEEN_SYN, b'h');
    h.check(0, SEEN_ACK, b'a');
    h.check(0, SEEN_DATA, b'd');
    h.check(1, SEEN_DATA, b'd');
    h.check(0, SEEN_DATA, b'd');
    assert_eq!(h.as_str(), "ShADd");
}
