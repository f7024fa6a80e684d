use super::*;
use crate::flow::ClientRule;
use tapstat_decode::{Decoded, TcpFields, L4};

const S: u64 = 1_000_000_000;
const C: u128 = 0x0a00_0001;
const SRV: u128 = 0x0a00_0002;

/// A TCP segment from client (`from_client`) or server, as the decoder gives it.
fn seg(from_client: bool, flags: u8, seq: u32, payload: u32) -> Decoded {
    let (src, sport, dst, dport) = if from_client { (C, 40000, SRV, 80) } else { (SRV, 80, C, 40000) };
    Decoded {
        l4: L4::Tcp,
        ip_version: 4,
        proto: 6,
        src,
        dst,
        sport,
        dport,
        payload_len: payload,
        tcp: TcpFields { seq, ack: 1, flags, window: 1000, hdr_len: 20 },
        ..Default::default()
    }
}

/// Segment `d` as the pipeline hands it to the tracker: keyed and hashed, stamped
/// `ts` with the input's clock at `now`, a 60-byte frame carrying `payload`.
fn packet<'a>(h: &tapstat_flow::FlowHasher, ts: u64, now: u64, d: &'a Decoded, payload: &'a [u8]) -> Packet<'a> {
    let (key, src_is_lo) = tapstat_flow::FlowKey::new(4, 6, d.src, d.sport, d.dst, d.dport);
    Packet {
        ts_ns: ts,
        now_ns: now,
        wire_len: 60,
        key,
        hash: h.hash(&key),
        src_is_lo,
        dec: d,
        payload,
        dns_learnt: false,
        unanalysed: false,
    }
}

/// Feeds `(time in s, segment)` through a tracker and returns the finished flows.
fn run(cfg: TrackerConfig, pkts: &[(u64, Decoded)]) -> Vec<Flow> {
    let mut t = Tracker::new(cfg);
    let mut clock = InputClock::default();
    let mut out = Vec::new();
    let h = tapstat_flow::FlowHasher::new(1);
    for (ts, d) in pkts {
        let now = clock.tick(ts * S);
        t.on_packet(&packet(&h, ts * S, now, d, &[]), &mut |f: &Flow| out.push(f.clone()));
    }
    t.finish(clock.now(), false, &mut |f: &Flow| out.push(f.clone()));
    out.sort_by_key(|f| f.first_ns);
    out
}

const SYN: u8 = TcpFields::SYN;
const SYNACK: u8 = TcpFields::SYN | TcpFields::ACK;

/// The time a record was due (`FlowSink::at`) is when its flow ended in packet
/// time, not when the collector found it: a flow timed out at its last packet plus
/// its timeout, the flows left at the end at the final clock.
#[test]
fn records_are_due_when_their_flows_ended_not_when_found() {
    struct Due(u64, Vec<(u64, u64)>);
    impl FlowSink for Due {
        fn on_flow_end(&mut self, f: &Flow) {
            self.1.push((f.first_ns, self.0));
        }
        fn at(&mut self, ns: u64) {
            self.0 = ns;
        }
    }
    let mut t = Tracker::new(TrackerConfig::default());
    let h = tapstat_flow::FlowHasher::new(1);
    let mut out = Due(0, Vec::new());
    let a = seg(true, SYN, 0, 0);
    let b = Decoded { sport: 40001, ..seg(true, SYN, 0, 0) };
    t.on_packet(&packet(&h, S, S, &a, &[]), &mut out);
    // Flow a, a single packet, timed out at 1 s + 10 s; the collector finds it at
    // 30 s, or the end does.
    t.on_packet(&packet(&h, 30 * S, 30 * S, &b, &[]), &mut out);
    t.on_packet(&packet(&h, 31 * S, 31 * S, &b, &[]), &mut out);
    t.finish(31 * S, false, &mut out);
    out.1.sort();
    assert_eq!(out.1, [(S, 11 * S + 1), (30 * S, 31 * S)]);
}
const ACK: u8 = TcpFields::ACK;
const FINACK: u8 = TcpFields::FIN | TcpFields::ACK;

fn handshake(t: u64, isn: u32) -> Vec<(u64, Decoded)> {
    vec![(t, seg(true, SYN, isn, 0)), (t, seg(false, SYNACK, 9000, 0)), (t, seg(true, ACK, isn + 1, 0))]
}

/// Flows of one packet keep only that packet (`Full::First`); the full sets' state
/// comes at the second packet or the record, with the first packet in it.
#[test]
fn a_flow_of_one_packet_waits_in_it_and_its_record_has_it() {
    let h = tapstat_flow::FlowHasher::new(1);
    let mut t = Tracker::new(TrackerConfig::default());
    let mut out = Vec::new();
    let syns: Vec<Decoded> = (0..100u16).map(|i| Decoded { sport: 1000 + i, ..seg(true, SYN, 100, 0) }).collect();
    for d in &syns {
        t.on_packet(&packet(&h, S, S, d, &[]), &mut |f: &Flow| out.push(f.clone()));
    }
    // The first flow gets its answer: SYN/ACK 2 ms after the SYN.
    let mut synack = seg(false, SYNACK, 9000, 0);
    synack.dport = 1000;
    synack.tcp.ack = 101;
    t.on_packet(&packet(&h, S + 2_000_000, S + 2_000_000, &synack, &[]), &mut |f: &Flow| out.push(f.clone()));
    let mut folded = 0;
    t.table.for_each_mut(|_, _, f| folded += f.folded() as usize);
    assert_eq!(folded, 99, "one-packet flows hold no full state");
    t.finish(10 * S, false, &mut |f: &Flow| out.push(f.clone()));
    assert_eq!(out.len(), 100);
    for f in &out {
        assert!(!f.folded());
        let answered = f.dir[1].pkts_all == 1;
        assert_eq!(f.dir[0].port == 1000, answered);
        let st = &f.full_base().expect("full sets").stats;
        assert_eq!((st.size(0).n, st.size(0).min(), st.size(1).n), (1, Some(60), answered as u64));
        assert_eq!(f.full_base().unwrap().first.sizes(), if answered { &[60, 60][..] } else { &[60][..] });
        let e = f.e2e(0);
        assert_eq!((e.win_max, e.syn_ns, e.syn_opts.is_some()), (1000, S, true));
        // The SYN's time, kept in the folded state, times the handshake.
        assert_eq!(f.rtt_3whs[0], if answered { 2_000_000 } else { 0 });
    }
}

/// A counted-only packet (TED's tail packet) counts in its flow's packets, wire
/// bytes and `pkts_unanalysed`, and in no sequence or payload counter.
#[test]
fn a_counted_only_packet_is_counted_not_analysed() {
    let h = tapstat_flow::FlowHasher::new(1);
    let mut t = Tracker::new(TrackerConfig::default());
    let mut out = Vec::new();
    for (ts, d) in handshake(1, 100) {
        t.on_packet(&packet(&h, ts * S, ts * S, &d, &[]), &mut |f: &Flow| out.push(f.clone()));
    }
    // Data the probe does not analyse: 1000 bytes each, 1514 on the wire, with a
    // sequence hole between them that analysis would count.
    for (i, seq) in [101u32, 5101].into_iter().enumerate() {
        let d = seg(true, ACK, seq, 1000);
        let mut p = packet(&h, 2 * S + i as u64, 2 * S + i as u64, &d, &[]);
        p.wire_len = 1514;
        p.unanalysed = true;
        t.on_packet(&p, &mut |f: &Flow| out.push(f.clone()));
    }
    let d = seg(false, ACK, 9001, 0);
    let mut p = packet(&h, 3 * S, 3 * S, &d, &[]);
    p.unanalysed = true;
    t.on_packet(&p, &mut |f: &Flow| out.push(f.clone()));
    t.finish(4 * S, false, &mut |f: &Flow| out.push(f.clone()));
    assert_eq!(out.len(), 1);
    let f = &out[0];
    assert_eq!((f.dir[0].pkts_all, f.dir[0].pkts_unanalysed, f.dir[0].bytes_wire), (4, 2, 60 * 2 + 1514 * 2));
    assert_eq!((f.dir[1].pkts_all, f.dir[1].pkts_unanalysed, f.dir[1].bytes_wire), (2, 1, 120));
    assert_eq!((f.dir[0].pkts_data, f.dir[0].bytes_all, f.dir[0].bytes_uniq), (0, 0, 0));
    assert_eq!((f.dir[0].pkts_ooo, f.dir[0].pkts_retx, f.dir[0].ack_cnt), (0, 0, 1));
    assert_eq!(f.dir[0].last_ns, 2 * S + 1);
    assert_eq!(f.last_ns, 3 * S);
    assert_eq!(t.stats.packets, 6);
}

/// `on_tails` (a held-tails record) counts as that many counted-only packets would,
/// with one flow lookup: the flow's and the tracker's counts and the link histograms
/// agree.
#[test]
fn tails_count_as_their_packets_would() {
    let h = tapstat_flow::FlowHasher::new(1);
    let run = |at_once: bool| {
        let mut t = Tracker::new(TrackerConfig { histo_ns: 60 * S, ..TrackerConfig::default() });
        let mut out = Vec::new();
        for (ts, d) in handshake(1, 100) {
            t.on_packet(&packet(&h, ts * S, ts * S, &d, &[]), &mut |f: &Flow| out.push(f.clone()));
        }
        let d = seg(true, ACK, 101, 1000);
        let mut p = packet(&h, 2 * S, 2 * S, &d, &[]);
        p.unanalysed = true;
        if at_once {
            p.wire_len = 3 * 1514 + 2;
            t.on_tails(&p, 3, &mut |f: &Flow| out.push(f.clone()));
            t.on_tails(&p, 0, &mut |f: &Flow| out.push(f.clone()));
        } else {
            for k in 0..3 {
                p.wire_len = 1514 + u32::from(k < 2);
                t.on_packet(&p, &mut |f: &Flow| out.push(f.clone()));
            }
        }
        t.finish(4 * S, false, &mut |f: &Flow| out.push(f.clone()));
        assert_eq!(out.len(), 1);
        let f = &out[0];
        let histo = t.take_histo().expect("histograms").rows();
        (
            f.dir[0].pkts_all,
            f.dir[0].pkts_unanalysed,
            f.dir[0].bytes_wire,
            f.dir[0].last_ns,
            f.last_ns,
            t.stats.packets,
            t.stats.wire_bytes,
            histo,
        )
    };
    let once = run(true);
    assert_eq!(once, run(false));
    assert_eq!((once.0, once.1, once.5), (5, 3, 6));
    // The link histograms count the held packets too.
    let ttl: u64 = once.7.iter().filter(|r| r.family.name() == "ttl").map(|r| r.count).sum();
    assert_eq!(ttl, 6);
}

/// A live run's histograms, taken an interval at a time as the clock passes their
/// ends, are the whole run's: the scan before each hand-over ends the flows whose
/// record is due in the intervals handed over.
#[test]
fn histograms_taken_as_the_clock_passes_are_the_whole_runs() {
    let h = tapstat_flow::FlowHasher::new(1);
    // No incremental collection: only the scan before a hand-over ends flow 0.
    let gc = tapstat_flow::GcConfig { period_ns: u64::MAX / 2, steps: 1 };
    let cfg = TrackerConfig { histo_ns: 60 * S, tcp_idle_ns: 10 * S, gc, ..TrackerConfig::default() };
    // Flow 0 at 1 s, idle past its timeout at 11 s; then one flow a minute.
    let mut pkts = handshake(1, 100);
    for k in 1..5u16 {
        for (t, d) in handshake(60 * u64::from(k) + 30, 100) {
            let port = 40000 + k;
            pkts.push((t, if d.sport == 80 { Decoded { dport: port, ..d } } else { Decoded { sport: port, ..d } }));
        }
    }
    let run = |take: bool| {
        let mut t = Tracker::new(cfg);
        let (mut out, mut rows, mut records_by_take) = (Vec::new(), Vec::new(), None);
        for (ts, d) in &pkts {
            t.on_packet(&packet(&h, ts * S, ts * S, d, &[]), &mut |f: &Flow| out.push(f.first_ns));
            if take && t.now_ns() >= 100 * S && records_by_take.is_none() {
                let got = t.take_histo_before_now(0, &mut |f: &Flow| out.push(f.first_ns)).expect("histograms");
                records_by_take = Some(out.clone());
                rows.extend(got.rows());
            }
        }
        t.finish(5 * 60 * S, false, &mut |f: &Flow| out.push(f.first_ns));
        rows.extend(t.take_histo().expect("histograms").rows());
        (rows, records_by_take.unwrap_or_default(), out.len())
    };
    let (whole, _, n) = run(false);
    let (taken, by_take, n2) = run(true);
    assert_eq!((n, n2), (5, 5));
    assert_eq!(taken, whole);
    // At 150 s, [0, 60 s) and [60 s, 120 s) were handed over: flow 0 (due at 11 s)
    // had been ended for it.
    assert!(by_take.contains(&S), "{by_take:?}");
    assert!(whole.iter().any(|r| r.time_s == 0 && r.family == crate::histo::Family::App));
}

#[test]
fn a_new_syn_after_a_close_starts_a_new_flow() {
    let mut p = handshake(1, 100);
    p.extend([(2, seg(true, FINACK, 101, 0)), (2, seg(false, FINACK, 9001, 0)), (2, seg(true, ACK, 102, 0))]);
    p.extend(handshake(3, 5000));
    let flows = run(TrackerConfig::default(), &p);
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[0].end, EndReason::Fin);
    assert_eq!(flows[0].conn_state(), "SF");
    assert_eq!(flows[1].end, EndReason::EndOfInput);
    assert_eq!(flows[1].dir[0].pkts_all, 2);
}

#[test]
fn a_retransmitted_syn_is_the_same_flow_and_a_new_isn_is_not() {
    let p = vec![(1, seg(true, SYN, 100, 0)), (2, seg(true, SYN, 100, 0))];
    let flows = run(TrackerConfig::default(), &p);
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0].dir[0].syn_cnt, 2);
    assert_eq!(flows[0].conn_state(), "S0");
    let mut p = handshake(1, 100);
    p.push((2, seg(true, SYN, 7777, 0)));
    let flows = run(TrackerConfig::default(), &p);
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[0].end, EndReason::SynReuse);
}

#[test]
fn idle_and_singleton_timeouts_split_in_packet_time() {
    let cfg = TrackerConfig::default();
    // 301 s of silence ends a TCP flow (300 s idle timeout); the next packet is
    // a new flow, whose client is its sender (no SYN).
    let mut p = handshake(1, 100);
    p.push((302, seg(false, ACK, 9001, 10)));
    let flows = run(cfg, &p);
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[0].end, EndReason::Idle);
    assert_eq!(flows[1].client_rule, ClientRule::FirstPacket);
    assert_eq!(flows[1].dir[0].port, 80);
    // A single packet is forgotten after 10 s, not 300.
    let p = vec![(1, seg(true, ACK, 1, 0)), (12, seg(true, ACK, 1, 0))];
    assert_eq!(run(cfg, &p).len(), 2);
    let p = vec![(1, seg(true, ACK, 1, 0)), (10, seg(true, ACK, 1, 0))];
    assert_eq!(run(cfg, &p).len(), 1);
}

#[test]
fn a_flow_first_seen_at_its_synack_has_the_receiver_as_client() {
    let p = vec![(1, seg(false, SYNACK, 9000, 0)), (1, seg(true, ACK, 101, 0))];
    let flows = run(TrackerConfig::default(), &p);
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0].client_rule, ClientRule::SynAck);
    assert_eq!(flows[0].dir[0].ip, C);
    assert_eq!(flows[0].conn_state(), "S1");
}

/// An LLMNR, mDNS or NBNS answer sent by unicast to the querier's port is a flow of
/// its own (the query went to the group address): its receiver, the querier, is the
/// client. A datagram between two equal ports, or from another port, keeps its
/// sender as client.
#[test]
fn a_multicast_query_answer_names_the_querier_as_client() {
    let h = tapstat_flow::FlowHasher::new(1);
    for (sport, dport, client_port, rule) in [
        (5355, 50000, 50000, ClientRule::AnswerPort),
        (5353, 50001, 50001, ClientRule::AnswerPort),
        (137, 50002, 50002, ClientRule::AnswerPort),
        (137, 137, 137, ClientRule::FirstPacket),
        (53, 50003, 53, ClientRule::FirstPacket),
        (50004, 5355, 50004, ClientRule::FirstPacket),
    ] {
        let d = Decoded { l4: L4::Udp, ip_version: 4, proto: 17, src: SRV, dst: C, sport, dport, ..Default::default() };
        let (key, src_is_lo) = tapstat_flow::FlowKey::new(4, 17, d.src, d.sport, d.dst, d.dport);
        let p = Packet {
            ts_ns: S,
            now_ns: S,
            wire_len: 60,
            key,
            hash: h.hash(&key),
            src_is_lo,
            dec: &d,
            payload: &[],
            dns_learnt: false,
            unanalysed: false,
        };
        let mut t = Tracker::new(TrackerConfig::default());
        let mut out = Vec::new();
        t.on_packet(&p, &mut |f: &Flow| out.push(f.clone()));
        t.finish(S, false, &mut |f: &Flow| out.push(f.clone()));
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].client_rule, out[0].dir[0].port), (rule, client_port), "{sport} -> {dport}");
        assert_eq!(out[0].dir[0].ip, if rule == ClientRule::AnswerPort { C } else { SRV });
        assert_eq!(
            out[0].dir[1].pkts_all,
            (rule == ClientRule::AnswerPort) as u64,
            "the answer counts for the server side"
        );
    }
}

/// A segment with an ACK number, at a time in ms.
fn ack_seg(from_client: bool, flags: u8, seq: u32, ack: u32, payload: u32) -> Decoded {
    let mut d = seg(from_client, flags, seq, payload);
    d.tcp.ack = ack;
    d
}

fn run_ms(pkts: &[(u64, Decoded)]) -> Vec<Flow> {
    let mut t = Tracker::new(TrackerConfig::default());
    let h = tapstat_flow::FlowHasher::new(1);
    let mut out = Vec::new();
    for (ms, d) in pkts {
        let ts = S + ms * 1_000_000;
        t.on_packet(&packet(&h, ts, ts, d, &[]), &mut |f: &Flow| out.push(f.clone()));
    }
    t.finish(S + 10 * S, false, &mut |f: &Flow| out.push(f.clone()));
    out
}

/// The application layer sees each direction's bytes once, in order: a
/// retransmission feeds nothing, and a segment that overlaps what was seen feeds
/// only its new tail. A request split in three segments, the second sent twice and
/// the third overlapping it, parses as one request with its host; a HTTP log row
/// comes out for it.
#[test]
fn the_application_layer_gets_the_stream_once_in_order() {
    let req = b"GET /a HTTP/1.1\r\nHost: example.org\r\nUser-Agent: t\r\n\r\n";
    let (a, b) = (20u32, 30u32); // the overlap falls inside the host name
    let segs: Vec<(u64, Decoded, std::ops::Range<usize>)> = vec![
        (0, ack_seg(true, SYN, 100, 0, 0), 0..0),
        (1, ack_seg(false, SYNACK, 9000, 101, 0), 0..0),
        (2, ack_seg(true, ACK, 101, 9001, 0), 0..0),
        (3, ack_seg(true, ACK, 101, 9001, a), 0..a as usize),
        (4, ack_seg(true, ACK, 101 + a, 9001, b - a), a as usize..b as usize),
        (5, ack_seg(true, ACK, 101 + a, 9001, b - a), a as usize..b as usize), // again
        (6, ack_seg(true, ACK, 101 + b - 5, 9001, req.len() as u32 - b + 5), b as usize - 5..req.len()),
    ];
    struct Out(Vec<Flow>, Vec<HttpRow>);
    impl FlowSink for Out {
        fn on_flow_end(&mut self, f: &Flow) {
            self.0.push(f.clone());
        }
        fn on_http(&mut self, row: &HttpRow) {
            self.1.push(HttpRow { flow: row.flow.clone(), tx: row.tx.clone() });
        }
    }
    let mut t = Tracker::new(TrackerConfig::default());
    let h = tapstat_flow::FlowHasher::new(1);
    let mut out = Out(Vec::new(), Vec::new());
    for (ms, d, r) in &segs {
        let ts = S + ms * 1_000_000;
        t.on_packet(&packet(&h, ts, ts, d, &req[r.clone()]), &mut out);
    }
    t.finish(S + 10 * S, false, &mut out);
    let f = &out.0[0];
    let http = f.l7.as_ref().and_then(|x| x.http()).expect("an HTTP flow");
    assert_eq!((http.requests, http.first_host.as_deref()), (1, Some("example.org")));
    assert_eq!(out.1.len(), 1);
    let q = out.1[0].tx.request.as_ref().expect("the request");
    assert_eq!((q.method.as_str(), q.host.as_deref()), ("GET", Some("example.org")));
}

/// A sink that keeps the records and the HTTP rows.
struct Rows(Vec<Flow>, Vec<HttpRow>);

impl FlowSink for Rows {
    fn on_flow_end(&mut self, f: &Flow) {
        self.0.push(f.clone());
    }
    fn on_http(&mut self, row: &HttpRow) {
        self.1.push(HttpRow { flow: row.flow.clone(), tx: row.tx.clone() });
    }
}

/// One HTTP connection through a tracker: the handshake, then each piece
/// `(from_client, bytes, captured)` as one segment, in sequence order, 1 ms apart.
/// A piece not captured takes its room in the sequence space and is never seen.
fn http_connection(pieces: &[(bool, &[u8], bool)]) -> Rows {
    let mut t = Tracker::new(TrackerConfig::default());
    let h = tapstat_flow::FlowHasher::new(1);
    let mut out = Rows(Vec::new(), Vec::new());
    let mut next = [101u32, 9001u32];
    let mut ms = 0;
    let mut feed = |d: Decoded, payload: &[u8], out: &mut Rows| {
        ms += 1;
        let ts = S + ms * 1_000_000;
        t.on_packet(&packet(&h, ts, ts, &d, payload), out);
    };
    feed(ack_seg(true, SYN, 100, 0, 0), &[], &mut out);
    feed(ack_seg(false, SYNACK, 9000, 101, 0), &[], &mut out);
    feed(ack_seg(true, ACK, 101, 9001, 0), &[], &mut out);
    for &(from_client, bytes, captured) in pieces {
        let i = usize::from(!from_client);
        let d = ack_seg(from_client, ACK, next[i], next[1 - i], bytes.len() as u32);
        next[i] += bytes.len() as u32;
        if captured {
            feed(d, bytes, &mut out);
        }
    }
    t.finish(S + 10 * S, false, &mut out);
    out
}

/// The TSV text of column `name` of a flow's record.
fn column(f: &Flow, name: &str) -> String {
    let log = crate::logs::LogId::of(f).log_for(TcpSets::Full, true);
    let c = log.columns.iter().find(|c| c.field.name == name).expect("the column");
    let mut v = Vec::new();
    tapstat_record::tsv::value((c.get)(f), &mut v);
    String::from_utf8(v).expect("UTF-8")
}

/// The TSV text of column `name` of an HTTP row.
fn http_column(r: &HttpRow, name: &str) -> String {
    let c = crate::l7log::HTTP.columns.iter().find(|c| c.field.name == name).expect("the column");
    let mut v = Vec::new();
    tapstat_record::tsv::value((c.get)(r), &mut v);
    String::from_utf8(v).expect("UTF-8")
}

/// A record says when the application layer hit a limit: the HTTP transaction cap
/// (64 a flow) shows in `l7_events`, and a flow that hit nothing has no value there.
#[test]
fn the_http_transaction_cap_shows_in_l7_events() {
    let reqs: Vec<String> = (0..70).map(|i| format!("GET /{i} HTTP/1.1\r\nHost: h\r\n\r\n")).collect();
    let mut pieces: Vec<(bool, &[u8], bool)> = Vec::new();
    for r in &reqs {
        pieces.push((true, r.as_bytes(), true));
        pieces.push((false, b"HTTP/1.1 204 No Content\r\n\r\n", true));
    }
    let out = http_connection(&pieces);
    assert_eq!(out.1.len(), 64);
    assert_eq!(column(&out.0[0], "l7_events"), "[http_too_many_transactions]");
    // Each row went out when its response came, before the 65th request hit the cap.
    assert_eq!(http_column(&out.1[63], "l7_events"), "");

    let out = http_connection(&pieces[..4]);
    assert_eq!(column(&out.0[0], "l7_events"), "");
}

/// A segment lost at the probe inside a response body: the engine tells the
/// application layer of the gap, and the next response, at a segment that starts with
/// its status line, is still logged and paired with its request; the record says
/// `http_gap`. Before, the bytes after the gap were read as the lost body's rest, the
/// next head was swallowed and the response never logged.
#[test]
fn a_gap_in_a_response_body_is_resynchronised() {
    let out = http_connection(&[
        (true, b"GET /big HTTP/1.1\r\nHost: h\r\n\r\n", true),
        (false, b"HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n0123456789", true),
        (false, b"0123456789", false),
        (false, b"0123456789", true),
        (true, b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n", true),
        (false, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", true),
    ]);
    let got: Vec<_> = out
        .1
        .iter()
        .map(|r| (r.tx.request.as_ref().and_then(|q| q.url.clone()), r.tx.response.as_ref().map(|s| s.status)))
        .collect();
    assert_eq!(got, [(Some("/big".to_string()), Some(200)), (Some("/next".to_string()), Some(404))]);
    assert_eq!(column(&out.0[0], "l7_events"), "[http_gap]");
    // A row carries the events its flow met by the time it was written.
    assert_eq!(http_column(&out.1[0], "l7_events"), "");
    assert_eq!(http_column(&out.1[1], "l7_events"), "[http_gap]");
}

/// `d` with the timestamps option.
fn with_ts(mut d: Decoded, val: u32, ecr: u32) -> Decoded {
    d.tcp_opts.has_ts = true;
    d.tcp_opts.ts_val = val;
    d.tcp_opts.ts_ecr = ecr;
    d
}

#[test]
fn timestamp_rtt_needs_no_karn_and_ignores_pure_acks() {
    let p = vec![
        (0, with_ts(ack_seg(true, SYN, 100, 0, 0), 1, 0)),
        (10, with_ts(ack_seg(false, SYNACK, 9000, 101, 0), 50, 1)), // echoes the SYN: 10 ms
        (12, with_ts(ack_seg(true, ACK, 101, 9001, 0), 2, 50)),     // echoes the SYN/ACK: 2 ms
        (12, with_ts(ack_seg(true, ACK, 101, 9001, 100), 3, 50)),   // data 101..201, lost
        (40, with_ts(ack_seg(true, ACK, 101, 9001, 100), 4, 50)),   // sent again, new TSval
        (50, with_ts(ack_seg(false, ACK, 9001, 201, 0), 51, 4)),    // echoes the second: 10 ms
        (60, with_ts(ack_seg(true, ACK, 201, 9001, 0), 5, 51)),     // pure ACK: not timed
        (5000, with_ts(ack_seg(false, ACK, 9001, 201, 10), 52, 5)), // echoes it much later
    ];
    let f = &run_ms(&p)[0];
    let c = &f.e2e(0).ts.rtt_us;
    assert_eq!((c.n, c.min(), c.max()), (2, Some(10_000), Some(10_000)));
    let s = &f.e2e(1).ts.rtt_us;
    assert_eq!((s.n, s.mean()), (1, Some(2_000.0)));
    // The sequence-number RTT gave up on the retransmitted segment (Karn).
    assert_eq!(f.e2e(0).rtt_cnt, 1);
}

#[test]
fn rtt_samples_follow_tcptrace_and_karn() {
    // Client ISN 100, server ISN 9000; the probe sits 10 ms from the server and
    // 2 ms from the client.
    let p = vec![
        (0, ack_seg(true, SYN, 100, 0, 0)),
        (10, ack_seg(false, SYNACK, 9000, 101, 0)),
        (12, ack_seg(true, ACK, 101, 9001, 0)),
        (12, ack_seg(true, ACK | TcpFields::PSH, 101, 9001, 100)), // data 101..201
        (22, ack_seg(false, ACK, 9001, 201, 0)),                   // RTT 10 ms
        (23, ack_seg(true, ACK, 201, 9001, 100)),                  // data 201..301
        (40, ack_seg(true, ACK, 201, 9001, 100)),                  // sent again: Karn
        (50, ack_seg(false, ACK, 9001, 301, 0)),                   // no sample
    ];
    let f = &run_ms(&p)[0];
    let c = f.e2e(0);
    // SYN → SYN/ACK (10 ms) and the first data segment (10 ms); not the one sent twice.
    assert_eq!(c.rtt_cnt, 2);
    let (avg, std, min, max) = c.rtt_ms().unwrap();
    assert_eq!((avg, std, min, max), (10.0, 0.0, 10.0, 10.0));
    // The server's SYN/ACK → the client's ACK: 2 ms.
    assert_eq!(f.e2e(1).rtt_cnt, 1);
    assert_eq!(f.e2e(1).rtt_ms().unwrap().0, 2.0);
    assert_eq!(f.rtt_3whs, [10_000_000, 2_000_000]);
    assert_eq!(c.pkts_push, 1);
    assert_eq!(f.dir[0].pkts_retx, 1);
    // In flight: 100 bytes when each segment left (the first ACK of data came in between).
    assert_eq!((c.cwin_ini, c.cwin_max), (100, 100));
}

#[test]
fn windows_are_scaled_once_both_syns_offered_scaling() {
    let mut syn = ack_seg(true, SYN, 100, 0, 0);
    syn.tcp_opts = tapstat_decode::TcpOptions { mss: 1460, wscale: 7, has_wscale: true, ..Default::default() };
    let mut synack = ack_seg(false, SYNACK, 9000, 101, 0);
    synack.tcp_opts = tapstat_decode::TcpOptions { mss: 1400, wscale: 2, has_wscale: true, ..Default::default() };
    let mut ack = ack_seg(true, ACK, 101, 9001, 0);
    ack.tcp.window = 10;
    let f = &run_ms(&[(0, syn), (1, synack), (2, ack)])[0];
    assert_eq!(f.win_scale(0), 7);
    assert_eq!(f.win_scale(1), 2);
    // The SYN's 1000 is not scaled, the ACK's 10 is: 10 << 7.
    assert_eq!((f.e2e(0).win_min, f.e2e(0).win_max), (1000, 1280));
    assert_eq!(f.e2e(1).syn_opts.unwrap().mss, 1400);
}

#[test]
fn a_full_table_evicts_the_flow_idle_longest_and_says_so() {
    let cfg = TrackerConfig { capacity: 2, ..Default::default() };
    let mut t = Tracker::new(cfg);
    let h = tapstat_flow::FlowHasher::new(1);
    let mut out: Vec<Flow> = Vec::new();
    for (i, port) in [1000u16, 1001, 1002].into_iter().enumerate() {
        let mut d = seg(true, SYN, 1, 0);
        d.sport = port;
        let ts = (i as u64 + 1) * S;
        t.on_packet(&packet(&h, ts, ts, &d, &[]), &mut |f: &Flow| out.push(f.clone()));
    }
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].end, EndReason::Evicted);
    assert_eq!(out[0].dir[0].port, 1000);
    assert_eq!(t.stats.evictions, 1);
    t.finish(3 * S, false, &mut |f: &Flow| out.push(f.clone()));
    assert_eq!(out.len(), 3, "nothing is lost: every flow is written once");
}

/// A run grouped by flow and held at its first clock ends the flows that input order
/// ends; grouped on the latest clock instead, the collector and the lookup would
/// see a later flow's time and split a flow that input order keeps.
#[test]
fn a_held_run_grouped_by_flow_keeps_the_flows_of_input_order() {
    // Idle timeouts 60 s; the collector scans the whole table at every packet.
    let cfg = TrackerConfig {
        tcp_idle_ns: 60 * S,
        singleton_ns: 60 * S,
        gc: GcConfig { period_ns: 1, steps: 1 },
        ..Default::default()
    };
    let h = tapstat_flow::FlowHasher::new(1);
    let data = |port: u16, seq: u32| Decoded { sport: port, ..seg(true, ACK, seq, 10) };
    let (a, b) = (40000, 40001);
    // Input order: A at 0 s; then a batch B 40, A 55, B 70, A 80. A is never idle
    // 60 s at its own packets. Grouped by last packets: B 40, B 70, A 55, A 80.
    let first = data(a, 1);
    let batch = [(40, data(b, 1)), (55, data(a, 11)), (70, data(b, 11)), (80, data(a, 21))];
    let grouped = [0usize, 2, 1, 3];
    let ends = |mode: u8| {
        let mut t = Tracker::new(cfg);
        let mut out: Vec<Flow> = Vec::new();
        let mut sink = |f: &Flow| out.push(f.clone());
        t.on_packet(&packet(&h, 0, 0, &first, &[]), &mut sink);
        let order: Vec<usize> = if mode == 0 { vec![0, 1, 2, 3] } else { grouped.to_vec() };
        for i in order {
            let (ts, d) = &batch[i];
            let p = packet(&h, ts * S, ts * S, d, &[]);
            match mode {
                0 | 2 => t.on_packet(&p, &mut sink),
                _ => t.on_packet_held(&p, 40 * S, &mut sink),
            }
        }
        t.advance(80 * S);
        t.finish(80 * S, false, &mut sink);
        let mut v: Vec<(u16, u64, u64, EndReason)> =
            out.iter().map(|f| (f.dir[0].port.max(f.dir[1].port), f.first_ns, f.packets(), f.end)).collect();
        v.sort_by_key(|x| (x.0, x.1));
        v
    };
    let input = ends(0);
    assert_eq!(input, vec![(a, 0, 3, EndReason::EndOfInput), (b, 40 * S, 2, EndReason::EndOfInput)]);
    assert_eq!(ends(1), input, "held at the run's first clock");
    assert_ne!(ends(2), input, "on the latest clock, A is split at 55 s");
}

#[test]
fn the_input_clock_ignores_reordering_and_survives_steps_back() {
    let mut c = InputClock::default();
    let s = 1_000_000_000u64;
    let t0 = 1_700_000_000 * s;
    assert_eq!(c.tick(t0), t0);
    assert_eq!(c.tick(t0 + s), t0 + s);
    // a packet 1 ms late: no effect
    assert_eq!(c.tick(t0 + s - 1_000_000), t0 + s);
    assert_eq!(c.tick(t0 + 2 * s), t0 + 2 * s);
    // the capture's clock is reset 5 hours back: the input clock stays, then
    // follows the packets' steps forward from there
    let back = t0 + 2 * s - 18_000 * s;
    assert_eq!(c.tick(back), t0 + 2 * s);
    assert_eq!(c.tick(back + 2 * s), t0 + 4 * s);
    // a forward jump of a day counts in full
    assert_eq!(c.tick(back + 2 * s + 86_400 * s), t0 + 4 * s + 86_400 * s);
    // forward to the end of time, back, forward again (found by the engine fuzz
    // target): the clock saturates instead of wrapping
    let mut c = InputClock::default();
    c.tick(1);
    assert_eq!(c.tick(u64::MAX), u64::MAX);
    assert_eq!(c.tick(s), u64::MAX);
    assert_eq!(c.tick(3 * s), u64::MAX);
}

/// Memory short: the flows idle the longest end first (a sixteenth of the table, at
/// least 64), written as evicted; timeouts are a tenth until memory is back.
#[test]
fn memory_short_ends_the_flows_idle_longest_and_shortens_timeouts() {
    let mut t = Tracker::new(TrackerConfig::default());
    let h = tapstat_flow::FlowHasher::new(1);
    let mut out: Vec<Flow> = Vec::new();
    for i in 0..100u16 {
        let mut d = seg(true, SYN, 1, 0);
        d.sport = 1000 + i;
        let ts = S + u64::from(i) * 1_000_000;
        t.on_packet(&packet(&h, ts, ts, &d, &[]), &mut |f: &Flow| out.push(f.clone()));
    }
    t.relieve(&mut |f: &Flow| out.push(f.clone()));
    assert_eq!(out.len(), 64);
    assert!(out.iter().all(|f| f.end == EndReason::Evicted));
    let mut ports: Vec<u16> = out.iter().map(|f| f.dir[0].port).collect();
    ports.sort_unstable();
    assert_eq!(ports, (1000..1064).collect::<Vec<_>>(), "the oldest first");
    assert_eq!((t.stats.memcap_emergencies, t.stats.memcap_evictions, t.stats.evictions), (1, 64, 64));
    assert!(t.emergency());
    assert_eq!(t.cfg.tcp_idle_ns, 30 * S);
    assert_eq!(t.cfg.singleton_ns, S);
    // still short: one emergency, more flows
    t.relieve(&mut |f: &Flow| out.push(f.clone()));
    assert_eq!((t.stats.memcap_emergencies, out.len()), (1, 100));
    t.calm();
    assert!(!t.emergency());
    assert_eq!((t.cfg.tcp_idle_ns, t.cfg.singleton_ns), (300 * S, 10 * S));
    t.finish(2 * S, false, &mut |f: &Flow| out.push(f.clone()));
    assert_eq!(out.len(), 100, "nothing is lost: every flow is written once");
}

/// Past the worker's budget of held bytes, the hole held the longest is given up.
#[test]
fn held_segments_past_the_budget_give_up_the_oldest_hole_first() {
    let cfg = TrackerConfig { held_budget: 2500, ..Default::default() };
    let mut t = Tracker::new(cfg);
    let h = tapstat_flow::FlowHasher::new(1);
    let mut out: Vec<Flow> = Vec::new();
    let head = b"GET / HTTP/1.1\r\nHost: a\r\n";
    let body = [b'x'; 1000];
    let mut ts = S;
    for port in [1000u16, 1001, 1002] {
        let mut on = |d: Decoded, payload: &[u8], t: &mut Tracker| {
            let mut d = d;
            if d.sport == 40000 {
                d.sport = port;
            } else {
                d.dport = port;
            }
            ts += 1_000_000;
            t.on_packet(&packet(&h, ts, ts, &d, payload), &mut |f: &Flow| out.push(f.clone()));
        };
        on(ack_seg(true, SYN, 1000, 0, 0), &[], &mut t);
        on(ack_seg(false, SYNACK, 5000, 1001, 0), &[], &mut t);
        on(ack_seg(true, TcpFields::ACK, 1001, 5001, 0), &[], &mut t);
        on(ack_seg(true, TcpFields::ACK | TcpFields::PSH, 1001, 5001, head.len() as u32), head, &mut t);
        // 100 bytes lost, then 1000 held for them
        on(ack_seg(true, TcpFields::ACK, 1001 + head.len() as u32 + 100, 5001, 1000), &body, &mut t);
    }
    assert_eq!(t.stats.holes_given_up, 1);
    assert_eq!(t.stats.held_bytes, 2000);
    assert_eq!(t.stats.peak_held_bytes, 3000);
    let mut held = Vec::new();
    t.table.for_each_mut(|_, _, f| held.push((f.dir[0].port, f.l7.as_ref().map_or(0, |l| l.held_bytes()))));
    held.sort_unstable();
    assert_eq!(held, vec![(1000, 0), (1001, 1000), (1002, 1000)]);
    t.finish(ts, false, &mut |f: &Flow| out.push(f.clone()));
    assert_eq!(t.stats.held_bytes, 0);
    assert_eq!(out.len(), 3);
}
