//! Golden cases: small captures the tests write themselves (with `tapstat_testkit::frames`)
//! and the logs tapstat writes for them, committed under `tests/golden/<case>/`
//! (`input.pcap`, `expected/log_*`), so that a clone without the shared corpus still
//! runs the decoder, the flow tracker, the application layer and the logs end to end.
//!
//! For each case the test checks that the committed `input.pcap` is the capture the code
//! below builds now (the inputs cannot drift from the code), runs `tapstat -w 1` on it
//! and compares every log byte for byte with `expected/` (a log not there must have no
//! records), then runs it with 3 workers and compares the records as sets.
//!
//! Regenerate every input and expected log (after a change of a case, or of tapstat's
//! output that is meant) with the one command
//!
//! ```text
//! TAPSTAT_BLESS=1 cargo test -p tapstat --test it golden
//! ```
//!
//! and review the diff. `tests/golden/README.md` lists the cases.

use crate::common::*;
use tapstat_testkit::frames::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folder of the cases.
fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"))
}

fn bless() -> bool {
    std::env::var("TAPSTAT_BLESS").as_deref() == Ok("1")
}

/// The first frame's time, µs: 2023-11-14 22:13:20 UTC.
pub(crate) const T0: u64 = 1_700_000_000_000_000;

/// A capture being written: frames with their times, `dt` µs after the one before.
pub(crate) struct Cap {
    t: u64,
    pub(crate) frames: Vec<(u64, Vec<u8>)>,
}

impl Cap {
    pub(crate) fn new() -> Cap {
        Cap { t: T0, frames: Vec::new() }
    }

    pub(crate) fn push(&mut self, dt: u64, frame: Vec<u8>) {
        self.t += dt;
        self.frames.push((self.t, frame));
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Ip {
    V4([u8; 4]),
    V6([u8; 16]),
}

fn v6(last: u8) -> Ip {
    Ip::V6([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last])
}

/// An IP packet of `proto` from `src` to `dst`.
fn ip(src: Ip, dst: Ip, proto: u8, payload: &[u8]) -> Vec<u8> {
    match (src, dst) {
        (Ip::V4(s), Ip::V4(d)) => Ipv4::between(s, d, proto).build(payload),
        (Ip::V6(s), Ip::V6(d)) => Ipv6::between(s, d, proto).build(payload),
        _ => unreachable!("one version per packet"),
    }
}

/// An Ethernet frame holding an IP packet.
pub(crate) fn ether(src: Ip, dst: Ip, proto: u8, payload: &[u8]) -> Vec<u8> {
    let ty = if matches!(src, Ip::V4(_)) { 0x0800 } else { 0x86dd };
    Eth::plain().build(ty, &ip(src, dst, proto, payload))
}

const C: Ip = Ip::V4([192, 0, 2, 10]);
const S: Ip = Ip::V4([198, 51, 100, 20]);

const SYN: u8 = 0x02;
const SYN_ACK: u8 = 0x12;
pub(crate) const ACK: u8 = 0x10;
pub(crate) const PSH_ACK: u8 = 0x18;
const FIN_ACK: u8 = 0x11;
const RST: u8 = 0x04;
const RST_ACK: u8 = 0x14;

/// One TCP connection over Ethernet: who is who, and the next sequence number of each
/// side.
pub(crate) struct Conn {
    c: Ip,
    s: Ip,
    cp: u16,
    sp: u16,
    cseq: u32,
    sseq: u32,
    /// The window each side advertises.
    cwin: u16,
    swin: u16,
}

impl Conn {
    pub(crate) fn new(c: Ip, s: Ip, cp: u16, sp: u16) -> Conn {
        Conn { c, s, cp, sp, cseq: 1_000_000, sseq: 5_000_000, cwin: 64_240, swin: 65_160 }
    }

    /// A segment of the client at sequence `seq` (the next one's is not moved).
    fn c_at(&self, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        let ack = if flags & ACK != 0 { self.sseq } else { 0 };
        ether(
            self.c,
            self.s,
            6,
            &Tcp { window: self.cwin, ..Tcp::segment(self.cp, self.sp, seq, ack, flags) }.build(payload),
        )
    }

    fn s_at(&self, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        let ack = if flags & ACK != 0 { self.cseq } else { 0 };
        ether(
            self.s,
            self.c,
            6,
            &Tcp { window: self.swin, ..Tcp::segment(self.sp, self.cp, seq, ack, flags) }.build(payload),
        )
    }

    /// A segment of the client without payload acknowledging `ack`.
    fn c_ack(&self, seq: u32, ack: u32, flags: u8) -> Vec<u8> {
        ether(
            self.c,
            self.s,
            6,
            &Tcp { window: self.cwin, ..Tcp::segment(self.cp, self.sp, seq, ack, flags) }.build(&[]),
        )
    }

    pub(crate) fn next(seq: &mut u32, flags: u8, payload: &[u8]) -> u32 {
        let at = *seq;
        *seq = at.wrapping_add(payload.len() as u32 + u32::from(flags & (SYN | 0x01) != 0));
        at
    }

    /// The client's next segment.
    pub(crate) fn c(&mut self, flags: u8, payload: &[u8]) -> Vec<u8> {
        let seq = Conn::next(&mut self.cseq, flags, payload);
        self.c_at(seq, flags, payload)
    }

    pub(crate) fn s(&mut self, flags: u8, payload: &[u8]) -> Vec<u8> {
        let seq = Conn::next(&mut self.sseq, flags, payload);
        self.s_at(seq, flags, payload)
    }

    /// The three-way handshake, a round trip of 20 ms.
    pub(crate) fn open(&mut self, cap: &mut Cap) {
        cap.push(1_000, self.c(SYN, &[]));
        cap.push(20_000, self.s(SYN_ACK, &[]));
        cap.push(150, self.c(ACK, &[]));
    }

    /// FIN from the client, FIN from the server, the last ACK.
    pub(crate) fn close(&mut self, cap: &mut Cap) {
        cap.push(5_000, self.c(FIN_ACK, &[]));
        cap.push(20_000, self.s(FIN_ACK, &[]));
        cap.push(150, self.c(ACK, &[]));
    }

    /// A request of the client and the server's answer, each acknowledged.
    pub(crate) fn exchange(&mut self, cap: &mut Cap, req: &[u8], resp: &[u8]) {
        cap.push(300, self.c(PSH_ACK, req));
        cap.push(20_000, self.s(PSH_ACK, resp));
        cap.push(200, self.c(ACK, &[]));
    }
}

/// What puts an IP packet into a frame (a link layer, a tunnel).
pub(crate) type Wrap = dyn Fn(Vec<u8>) -> Vec<u8>;

/// Byte ranges of a datagram, one per fragment, in the order sent.
type Pieces = &'static [(usize, usize)];

/// A UDP request and its answer between `c`:`cp` and `s`:`sp`, each frame made by
/// `wrap` from the IP packet.
pub(crate) fn udp_pair(cap: &mut Cap, wrap: &Wrap, (c, cp): (Ip, u16), (s, sp): (Ip, u16), req: &[u8], resp: &[u8]) {
    cap.push(1_000, wrap(ip(c, s, 17, &udp(cp, sp, req))));
    cap.push(10_000, wrap(ip(s, c, 17, &udp(sp, cp, resp))));
}

/// The Ethernet frame of an IP packet (its version read from the packet).
pub(crate) fn eth_ip(pkt: Vec<u8>) -> Vec<u8> {
    Eth::plain().build(if pkt[0] >> 4 == 4 { 0x0800 } else { 0x86dd }, &pkt)
}

/// One UDP exchange per link-layer framing: Ethernet, 802.1Q, QinQ (802.1ad over
/// 802.1Q), two MPLS labels, PPPoE; each on its own client port.
fn encap_l2() -> Cap {
    let mut cap = Cap::new();
    let ipv4_ty = 0x0800u16;
    let wraps: Vec<Box<Wrap>> = vec![
        Box::new(eth_ip),
        Box::new(move |p| Eth::plain().build(0x8100, &vlan(10, ipv4_ty, &p))),
        Box::new(move |p| Eth::plain().build(0x88a8, &vlan(100, 0x8100, &vlan(20, ipv4_ty, &p)))),
        Box::new(|p| Eth::plain().build(0x8847, &mpls(&[16, 17], &p))),
        Box::new(|p| Eth::plain().build(0x8864, &pppoe(0x0021, &p))),
    ];
    for (k, w) in wraps.iter().enumerate() {
        let port = 41_000 + k as u16;
        udp_pair(&mut cap, w, (C, port), (S, 7000), format!("ping {k}").as_bytes(), format!("pong {k}").as_bytes());
    }
    cap
}

/// One UDP exchange per tunnel, the inner flow between 10.0.0.1 and 10.0.0.2: GRE
/// (with a key), VXLAN (VNI 42, an inner Ethernet frame), IP in IP, IPv6 in IPv4.
fn encap_tunnels() -> Cap {
    let mut cap = Cap::new();
    let (a, b) = (Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]));
    let (a6, b6) = (v6(1), v6(2));
    let (o1, o2) = ([203, 0, 113, 1], [203, 0, 113, 2]);
    // the outer header goes the way the inner packet goes
    let outer = move |p: &[u8], proto: u8, payload: &[u8]| {
        let down = p[0] >> 4 == 4 && p[12..16] == [10, 0, 0, 2] || p[0] >> 4 == 6 && p[39] == 1;
        let (s, d) = if down { (o2, o1) } else { (o1, o2) };
        Eth::plain().build(0x0800, &Ipv4::between(s, d, proto).build(payload))
    };
    let gre_w = move |p: Vec<u8>| outer(&p, 47, &gre(0x0800, Some(7), &p));
    let vxlan_w = move |p: Vec<u8>| outer(&p, 17, &udp(49_152, 4789, &vxlan(42, &eth_ip(p.clone()))));
    let ipip_w = move |p: Vec<u8>| outer(&p, 4, &p);
    let six_w = move |p: Vec<u8>| outer(&p, 41, &p);
    udp_pair(&mut cap, &gre_w, (a, 42_001), (b, 7000), b"in gre", b"out of gre");
    udp_pair(&mut cap, &vxlan_w, (a, 42_002), (b, 7000), b"in vxlan", b"out of vxlan");
    udp_pair(&mut cap, &ipip_w, (a, 42_003), (b, 7000), b"in ipip", b"out of ipip");
    udp_pair(&mut cap, &six_w, (a6, 42_004), (b6, 7000), b"in 6in4", b"out of 6in4");
    cap
}

/// DNS queries carried in fragments, answered in one datagram: in order, out of order
/// (the last fragment first), overlapping (the middle fragment repeats 8 bytes of
/// each neighbour), and one whose first fragment never comes. `over_v6` picks IPv6.
fn fragments(over_v6: bool) -> Cap {
    let (c, r) = if over_v6 { (v6(0x10), v6(0x53)) } else { (Ip::V4([192, 0, 2, 10]), Ip::V4([198, 51, 100, 53])) };
    let frag = |src: Ip, dst: Ip, id: u16, off: usize, more: bool, part: &[u8]| match (src, dst) {
        (Ip::V4(s), Ip::V4(d)) => Eth::plain()
            .build(0x0800, &Ipv4 { id, frag_off: off as u16, mf: more, ..Ipv4::between(s, d, 17) }.build(part)),
        (Ip::V6(s), Ip::V6(d)) => Eth::plain()
            .build(0x86dd, &Ipv6::between(s, d, 44).build(&cat(&[&frag6(17, off as u16, more, u32::from(id)), part]))),
        _ => unreachable!(),
    };
    let mut cap = Cap::new();
    // (client port, name, pieces as (from, to) in the order sent)
    let cases: [(u16, &str, Pieces); 4] = [
        (43_001, "in-order.fragments.example.com", &[(0, 24), (24, 48), (48, usize::MAX)]),
        (43_002, "out-of-order.fragments.example.com", &[(48, usize::MAX), (0, 24), (24, 48)]),
        (43_003, "overlapping.fragments.example.com", &[(0, 24), (16, 56), (48, usize::MAX)]),
        (43_004, "first-missing.fragments.example.com", &[(24, 48), (48, usize::MAX)]),
    ];
    for (k, (port, name, pieces)) in cases.into_iter().enumerate() {
        let id = 0x4000 + k as u16;
        let dgram = udp(port, 53, &dns_question(id, name, 1));
        for &(a, b) in pieces {
            let b = b.min(dgram.len());
            cap.push(300, frag(c, r, id, a, b < dgram.len(), &dgram[a..b]));
        }
        let addr = [203, 0, 113, 50 + k as u8];
        cap.push(15_000, ether(r, c, 17, &udp(53, port, &dns_reply(id, name, 1, 0, &[&addr]))));
    }
    cap
}

/// A connection with a handshake, one exchange each way, and FINs both ways.
fn tcp_complete() -> Cap {
    let mut cap = Cap::new();
    let mut k = Conn::new(C, S, 44_001, 9000);
    k.open(&mut cap);
    k.exchange(&mut cap, &[b'q'; 100], &[b'r'; 1000]);
    k.close(&mut cap);
    // the same over IPv6
    let mut k = Conn::new(v6(0x10), v6(0x20), 44_002, 9000);
    k.open(&mut cap);
    k.exchange(&mut cap, &[b'q'; 60], &[b'r'; 600]);
    k.close(&mut cap);
    cap
}

/// A server's segment lost after the probe and sent again 200 ms later (a timeout),
/// and a client's segment sent twice in a row (a duplicate the probe saw both of).
fn tcp_retransmission() -> Cap {
    let mut cap = Cap::new();
    let mut k = Conn::new(C, S, 44_101, 9000);
    k.open(&mut cap);
    cap.push(300, k.c(PSH_ACK, &[b'a'; 200]));
    let seq = k.sseq;
    cap.push(20_000, k.s(PSH_ACK, &[b'b'; 1000]));
    // the client acknowledges only what came before: the server's segment was lost
    cap.push(200, k.c_ack(k.cseq, seq, ACK));
    cap.push(200_000, k.s_at(seq, PSH_ACK, &[b'b'; 1000]));
    cap.push(200, k.c(ACK, &[]));
    let seq = k.cseq;
    cap.push(1_000, k.c(PSH_ACK, &[b'c'; 300]));
    cap.push(1_000, k.c_at(seq, PSH_ACK, &[b'c'; 300]));
    cap.push(20_000, k.s(ACK, &[]));
    k.close(&mut cap);
    cap
}

/// The server's answer in three segments, the second one arriving last.
fn tcp_out_of_order() -> Cap {
    let mut cap = Cap::new();
    let mut k = Conn::new(C, S, 44_201, 9000);
    k.open(&mut cap);
    cap.push(300, k.c(PSH_ACK, &[b'g'; 50]));
    let s1 = k.sseq;
    let (s2, s3) = (s1 + 500, s1 + 1000);
    k.sseq = s1 + 1500;
    cap.push(20_000, k.s_at(s1, ACK, &[b'1'; 500]));
    cap.push(100, k.s_at(s3, PSH_ACK, &[b'3'; 500]));
    cap.push(2_000, k.s_at(s2, ACK, &[b'2'; 500]));
    cap.push(200, k.c(ACK, &[]));
    k.close(&mut cap);
    cap
}

/// A connection reset by the client after an exchange, a SYN refused with RST+ACK.
fn tcp_reset() -> Cap {
    let mut cap = Cap::new();
    let mut k = Conn::new(C, S, 44_301, 9000);
    k.open(&mut cap);
    k.exchange(&mut cap, b"hello", b"world");
    cap.push(1_000, k.c(RST, &[]));
    let mut k = Conn::new(C, S, 44_302, 9001);
    cap.push(1_000, k.c(SYN, &[]));
    cap.push(20_000, k.s(RST_ACK, &[]));
    cap
}

/// Flows without a complete handshake: data of a connection begun before the capture,
/// a SYN never answered (and sent again), a SYN and a SYN-ACK with no ACK.
fn tcp_nocomplete() -> Cap {
    let mut cap = Cap::new();
    let mut k = Conn::new(C, S, 44_401, 9000);
    k.exchange(&mut cap, &[b'm'; 400], &[b'n'; 800]);
    k.exchange(&mut cap, &[b'm'; 100], &[b'n'; 200]);
    let k = Conn::new(C, S, 44_402, 9002);
    cap.push(1_000, k.c_at(k.cseq, SYN, &[]));
    cap.push(1_000_000, k.c_at(k.cseq, SYN, &[]));
    let mut k = Conn::new(C, S, 44_403, 9003);
    cap.push(1_000, k.c(SYN, &[]));
    cap.push(20_000, k.s(SYN_ACK, &[]));
    cap
}

/// A client that closes its window after 2000 bytes (zero window), probed by the server,
/// then opens it again (a window update).
fn tcp_zero_window() -> Cap {
    let mut cap = Cap::new();
    let mut k = Conn::new(C, S, 44_501, 9000);
    k.cwin = 2_000;
    k.open(&mut cap);
    cap.push(300, k.c(PSH_ACK, b"send"));
    cap.push(20_000, k.s(ACK, &[b'z'; 1000]));
    cap.push(100, k.s(PSH_ACK, &[b'z'; 1000]));
    k.cwin = 0;
    cap.push(200, k.c(ACK, &[]));
    // a window probe of one byte, answered still with a zero window
    cap.push(200_000, k.s_at(k.sseq, ACK, b"z"));
    cap.push(200, k.c(ACK, &[]));
    k.cwin = 8_000;
    cap.push(300_000, k.c(ACK, &[]));
    cap.push(20_000, k.s(PSH_ACK, &[b'z'; 1000]));
    cap.push(200, k.c(ACK, &[]));
    k.close(&mut cap);
    cap
}

/// Two HTTP/1.1 transactions on one connection (a GET answered 200 with a body, a POST
/// answered 404), and one GET answered 301 on another.
fn http() -> Cap {
    let mut cap = Cap::new();
    let mut k = Conn::new(C, S, 45_001, 80);
    k.open(&mut cap);
    k.exchange(
        &mut cap,
        b"GET /index.html?lang=en HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: golden/1.0\r\nAccept: */*\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nServer: golden\r\n\r\n<p>hello</p>\n",
    );
    k.exchange(
        &mut cap,
        b"POST /api/v1/items HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: golden/1.0\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"id\": 42}\n",
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    );
    k.close(&mut cap);
    let mut k = Conn::new(C, Ip::V4([198, 51, 100, 21]), 45_002, 8080);
    k.open(&mut cap);
    k.exchange(
        &mut cap,
        b"GET / HTTP/1.1\r\nHost: old.example.net:8080\r\nReferer: http://www.example.com/\r\n\r\n",
        b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://new.example.net/\r\nContent-Length: 0\r\n\r\n",
    );
    k.close(&mut cap);
    cap
}

/// The client's `i`th request and the server's answer to it, on a keep-alive connection.
pub(crate) fn keep_alive_request(i: usize) -> Vec<u8> {
    format!("GET /item/{i} HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: golden/1.0\r\n\r\n").into_bytes()
}

pub(crate) fn keep_alive_response(i: usize) -> Vec<u8> {
    let body = format!("item {i}\n");
    format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// A keep-alive connection of `n` requests, each answered in turn, but the responses
/// of `lost` are not in the capture (their bytes are in the server's sequence space, and
/// the client acknowledges them: lost at the probe).
pub(crate) fn keep_alive(cap: &mut Cap, port: u16, n: usize, lost: &[usize]) {
    let mut k = Conn::new(C, S, port, 80);
    k.open(cap);
    for i in 0..n {
        cap.push(300, k.c(PSH_ACK, &keep_alive_request(i)));
        let resp = keep_alive_response(i);
        if lost.contains(&i) {
            Conn::next(&mut k.sseq, PSH_ACK, &resp);
        } else {
            cap.push(20_000, k.s(PSH_ACK, &resp));
        }
        cap.push(200, k.c(ACK, &[]));
    }
    k.close(cap);
}

/// HTTP pairing: a keep-alive connection of 70 requests (past the 64 rows a flow
/// writes) whose 41st response is lost; five requests pipelined in one segment,
/// answered in two; HEAD answered with a Content-Length and no body; a POST answered
/// 100 Continue, then 201; 204 and 304 without a body.
fn http_pairing() -> Cap {
    let mut cap = Cap::new();
    keep_alive(&mut cap, 45_101, 70, &[40]);
    let mut k = Conn::new(C, S, 45_102, 80);
    k.open(&mut cap);
    let pipelined: Vec<u8> = (100..105).flat_map(keep_alive_request).collect();
    cap.push(300, k.c(PSH_ACK, &pipelined));
    cap.push(20_000, k.s(PSH_ACK, &(100..103).flat_map(keep_alive_response).collect::<Vec<_>>()));
    cap.push(100, k.s(PSH_ACK, &(103..105).flat_map(keep_alive_response).collect::<Vec<_>>()));
    cap.push(200, k.c(ACK, &[]));
    k.exchange(
        &mut cap,
        b"HEAD /big.iso HTTP/1.1\r\nHost: www.example.com\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 734003200\r\n\r\n",
    );
    cap.push(
        300,
        k.c(
            PSH_ACK,
            b"POST /upload HTTP/1.1\r\nHost: www.example.com\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n",
        ),
    );
    cap.push(20_000, k.s(PSH_ACK, b"HTTP/1.1 100 Continue\r\n\r\n"));
    cap.push(300, k.c(PSH_ACK, b"0123456789"));
    cap.push(20_000, k.s(PSH_ACK, b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"));
    cap.push(200, k.c(ACK, &[]));
    k.exchange(&mut cap, b"GET /ping HTTP/1.1\r\nHost: www.example.com\r\n\r\n", b"HTTP/1.1 204 No Content\r\n\r\n");
    k.exchange(
        &mut cap,
        b"GET /logo.png HTTP/1.1\r\nHost: www.example.com\r\nIf-None-Match: \"v1\"\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 4096\r\n\r\n",
    );
    k.exchange(&mut cap, &keep_alive_request(200), &keep_alive_response(200));
    k.close(&mut cap);
    cap
}

/// DNS over UDP: an A query with two answers, an AAAA query over IPv6, a name that does
/// not exist (NXDOMAIN), a query never answered.
fn dns() -> Cap {
    let mut cap = Cap::new();
    let r = Ip::V4([198, 51, 100, 53]);
    let q = dns_question(0x0101, "www.example.com", 1);
    let a = dns_reply(0x0101, "www.example.com", 1, 0, &[&[203, 0, 113, 10], &[203, 0, 113, 11]]);
    udp_pair(&mut cap, &eth_ip, (C, 46_001), (r, 53), &q, &a);
    let aaaa = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80];
    let q = dns_question(0x0202, "www.example.com", 28);
    let a = dns_reply(0x0202, "www.example.com", 28, 0, &[&aaaa]);
    udp_pair(&mut cap, &eth_ip, (v6(0x10), 46_002), (v6(0x53), 53), &q, &a);
    let q = dns_question(0x0303, "nothing.example.org", 1);
    let a = dns_reply(0x0303, "nothing.example.org", 1, 3, &[]);
    udp_pair(&mut cap, &eth_ip, (C, 46_003), (r, 53), &q, &a);
    cap.push(1_000, ether(C, r, 17, &udp(46_004, 53, &dns_question(0x0404, "lost.example.org", 1))));
    cap
}

/// A TLS 1.3 handshake's clear part over TCP 443: a ClientHello with the server name
/// and ALPN h2, http/1.1, the ServerHello choosing h2, then application data records.
fn tls() -> Cap {
    let mut cap = Cap::new();
    let mut k = Conn::new(C, S, 47_001, 443);
    k.open(&mut cap);
    let mut sh = tls_server_hello(Some("h2"));
    sh.extend([0x14, 0x03, 0x03, 0x00, 0x01, 0x01]); // ChangeCipherSpec
    sh.extend([0x17, 0x03, 0x03, 0x00, 0x40]);
    sh.extend([0xee; 0x40]);
    k.exchange(&mut cap, &tls_client_hello("www.example.com", &["h2", "http/1.1"]), &sh);
    let mut app = vec![0x17, 0x03, 0x03, 0x00, 0x80];
    app.extend([0xdd; 0x80]);
    k.exchange(&mut cap, &app, &app);
    k.close(&mut cap);
    cap
}

/// A QUIC v1 client Initial (RFC 9001 §A.2: a ClientHello for example.com) to UDP 443,
/// and a datagram of the server.
fn quic() -> Cap {
    let hex =
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../l7/src/quic/testdata/rfc9001_a2_client_initial.hex"));
    let hex: Vec<u8> = hex.bytes().filter(u8::is_ascii_hexdigit).collect();
    let initial: Vec<u8> =
        hex.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect();
    let mut cap = Cap::new();
    let mut short = vec![0x40];
    short.extend([0x77; 60]);
    udp_pair(&mut cap, &eth_ip, (C, 48_001), (S, 443), &initial, &short);
    cap
}

/// SSH: both identification strings and both KEXINITs over TCP 22.
fn ssh() -> Cap {
    let mut cap = Cap::new();
    let mut k = Conn::new(C, S, 49_001, 22);
    k.open(&mut cap);
    cap.push(5_000, k.s(PSH_ACK, b"SSH-2.0-OpenSSH_9.6p1 Debian-3\r\n"));
    cap.push(200, k.c(PSH_ACK, b"SSH-2.0-OpenSSH_9.2\r\n"));
    let lists = |kex: &'static str| {
        [
            kex,
            "ssh-ed25519,rsa-sha2-512",
            "chacha20-poly1305@openssh.com,aes128-ctr",
            "chacha20-poly1305@openssh.com,aes128-ctr",
            "hmac-sha2-256-etm@openssh.com,hmac-sha2-256",
            "hmac-sha2-256-etm@openssh.com,hmac-sha2-256",
            "none,zlib@openssh.com",
            "none,zlib@openssh.com",
            "",
            "",
        ]
    };
    cap.push(1_000, k.c(PSH_ACK, &ssh_kexinit(lists("curve25519-sha256,ext-info-c"))));
    cap.push(20_000, k.s(PSH_ACK, &ssh_kexinit(lists("curve25519-sha256,kex-strict-s-v00@openssh.com"))));
    cap.push(200, k.c(ACK, &[]));
    k.close(&mut cap);
    cap
}

/// UDP both ways and one way, ICMP echo and its reply, ICMPv6 echo, a port unreachable
/// about a UDP datagram, and protocols with no ports (SCTP, OSPF).
fn udp_icmp_other() -> Cap {
    let mut cap = Cap::new();
    udp_pair(&mut cap, &eth_ip, (C, 50_001), (S, 5004), &[0x11; 160], &[0x22; 160]);
    cap.push(20_000, ether(C, S, 17, &udp(50_001, 5004, &[0x11; 160])));
    cap.push(1_000, ether(C, S, 17, &udp(50_002, 9999, b"one way")));
    cap.push(1_000, ether(C, S, 1, &icmp(8, 0, 1, &[0x61; 32])));
    cap.push(20_000, ether(S, C, 1, &icmp(0, 0, 1, &[0x61; 32])));
    cap.push(1_000, ether(v6(0x10), v6(0x20), 58, &icmp(128, 0, 1, &[0x62; 16])));
    cap.push(20_000, ether(v6(0x20), v6(0x10), 58, &icmp(129, 0, 1, &[0x62; 16])));
    let quoted = ip(C, S, 17, &udp(50_003, 33_434, b"probe"));
    cap.push(1_000, ether(C, S, 17, &udp(50_003, 33_434, b"probe")));
    cap.push(20_000, ether(S, C, 1, &icmp(3, 3, 0, &quoted)));
    cap.push(1_000, ether(C, S, 132, &[0x0b, 0xb8, 0x0b, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0]));
    cap.push(1_000, ether(Ip::V4([192, 0, 2, 1]), Ip::V4([224, 0, 0, 5]), 89, &[2, 1, 0, 44, 192, 0, 2, 1]));
    cap
}

/// The cases: the folder name and the capture (Ethernet). `tests/golden/README.md` says what each holds.
fn cases() -> Vec<(&'static str, Cap)> {
    vec![
        ("encap_l2", encap_l2()),
        ("encap_tunnels", encap_tunnels()),
        ("ipv4_fragments", fragments(false)),
        ("ipv6_fragments", fragments(true)),
        ("tcp_complete", tcp_complete()),
        ("tcp_retransmission", tcp_retransmission()),
        ("tcp_out_of_order", tcp_out_of_order()),
        ("tcp_reset", tcp_reset()),
        ("tcp_nocomplete", tcp_nocomplete()),
        ("tcp_zero_window", tcp_zero_window()),
        ("http", http()),
        ("http_pairing", http_pairing()),
        ("dns", dns()),
        ("tls", tls()),
        ("quic", quic()),
        ("ssh", ssh()),
        ("udp_icmp_other", udp_icmp_other()),
    ]
}

/// The logs of an output directory with at least one record: name → its text.
fn logs_with_records(out: &Path) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(out).expect("output dir") {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if !name.starts_with("log_") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        if text.lines().count() > 1 {
            m.insert(name, text);
        }
    }
    m
}

/// The logs of `dir`'s `expected/` folder.
fn expected(dir: &Path) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(dir.join("expected")) {
        for e in rd {
            let p = e.unwrap().path();
            m.insert(p.file_name().unwrap().to_str().unwrap().to_string(), std::fs::read_to_string(&p).unwrap());
        }
    }
    m
}

/// A log's header and its records as a sorted set.
fn as_set(text: &str) -> (String, Vec<String>) {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default().to_string();
    let mut v: Vec<String> = lines.map(str::to_string).collect();
    v.sort();
    (header, v)
}

/// The first line where `want` and `got` differ, column by column where both are TSV.
fn first_difference(want: &str, got: &str) -> String {
    let header: Vec<&str> = want.lines().next().unwrap_or_default().split('\t').collect();
    for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        if w != g {
            let cols: Vec<String> = header
                .iter()
                .zip(w.split('\t').zip(g.split('\t')))
                .filter(|(_, (a, b))| a != b)
                .map(|(c, (a, b))| format!("{c}: expected {a:?}, got {b:?}"))
                .collect();
            return format!("line {}: {}", i + 1, cols.join("; "));
        }
    }
    format!("{} lines expected, {} got", want.lines().count(), got.lines().count())
}

#[test]
fn golden_cases() {
    let tmp = tempdir("golden");
    let bless = bless();
    let cases = cases();
    let mut failures = Vec::new();
    for (name, cap) in &cases {
        let dir = root().join(name);
        let records: Vec<Record> = cap.frames.iter().map(|(us, f)| (us * 1000, f.clone(), f.len() as u32)).collect();
        let pcap = pcap(PcapFormat::Micro, false, 1, 65535, &records);
        let input = dir.join("input.pcap");
        if bless {
            let _ = std::fs::remove_dir_all(dir.join("expected"));
            std::fs::create_dir_all(dir.join("expected")).unwrap();
            std::fs::write(&input, &pcap).unwrap();
        } else if std::fs::read(&input).ok().as_ref() != Some(&pcap) {
            failures.push(format!(
                "{name}: input.pcap is missing or differs from what the code builds (regenerate: TAPSTAT_BLESS=1 cargo test -p tapstat --test it golden)"
            ));
            continue;
        }
        let out = tmp.join(name);
        analyze(&input, &out, 1, &[]);
        let got = logs_with_records(&out);
        if bless {
            assert!(!got.is_empty(), "{name}: no log has records");
            for (log, text) in &got {
                std::fs::write(dir.join("expected").join(log), text).unwrap();
            }
        } else {
            let want = expected(&dir);
            for log in want.keys().chain(got.keys()).collect::<std::collections::BTreeSet<_>>() {
                match (want.get(log), got.get(log)) {
                    (Some(w), Some(g)) if w == g => {}
                    (Some(w), Some(g)) => failures.push(format!("{name}/{log}: {}", first_difference(w, g))),
                    (Some(_), None) => failures.push(format!("{name}/{log}: expected records, tapstat wrote none")),
                    (None, Some(g)) => failures.push(format!("{name}/{log}: unexpected records:\n{g}")),
                    (None, None) => unreachable!(),
                }
            }
        }
        // 1 worker == 3 workers, as record sets
        let out3 = tmp.join(format!("{name}-w3"));
        analyze(&input, &out3, 3, &[]);
        let got3 = logs_with_records(&out3);
        let one: BTreeMap<_, _> = got.iter().map(|(l, t)| (l, as_set(t))).collect();
        let three: BTreeMap<_, _> = got3.iter().map(|(l, t)| (l, as_set(t))).collect();
        if one != three {
            failures.push(format!("{name}: 3 workers wrote other records than 1:\n{got3:#?}"));
        }
    }
    if !bless {
        // every folder is a case
        for e in std::fs::read_dir(root()).unwrap() {
            let p = e.unwrap().path();
            let n = p.file_name().unwrap().to_str().unwrap().to_string();
            if p.is_dir() && !cases.iter().any(|(c, _)| *c == n) {
                failures.push(format!("{n}: a folder of no case (remove it)"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}
