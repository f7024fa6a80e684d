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

#[test]
fn conn_states() {
    let mut c = TcpConn::default();
    c.syn[0] = true;
    assert_eq!(c.conn_state(), "S0");
    c.rst[1] = true;
    assert_eq!(c.conn_state(), "REJ");
    let mut c = TcpConn { syn: [true, false], synack: [false, true], ..Default::default() };
    assert_eq!(c.conn_state(), "S1");
    c.fin = [true, true];
    assert_eq!(c.conn_state(), "SF");
    c.first_rst = Some(1);
    assert_eq!(c.conn_state(), "RSTR");
    assert_eq!(TcpConn::default().conn_state(), "OTH");
}

#[test]
fn history_letters_once_per_direction() {
    let mut h = History::default();
    h.add(0, b's');
    h.add(1, b'h');
    h.add(0, b'a');
    h.add(0, b'd');
    h.add(1, b'd');
    h.add(0, b'd');
    h.add(0, b'f');
    h.add(1, b'f');
    assert_eq!(h.as_str(), "ShADdFf");
}
