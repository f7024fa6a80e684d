//! Test support for tapstat: scripted TCP conversations, as a probe would see them,
//! fed through a [`Tracker`].
//!
//! A [`Conversation`] is one TCP connection between a client (10.0.0.1:40000, ISN
//! 1000) and a server (10.0.0.2:80, ISN 9000), written as the list of segments the
//! probe captures, in capture order. Each side keeps its next sequence number, the
//! acknowledgment number it sends and its advertised window, so a script says only
//! what happens: "the client sends 1000 bytes", "the server acknowledges all of it",
//! "the client sends that segment again". Time is in milliseconds from the start of
//! the conversation (packet time 1 s): [`Conversation::at`] sets it, and every
//! segment is stamped with it.
//!
//! The usual picture is a probe next to the client: in [`Conversation::handshake`]
//! the server leg (probe → server → probe) takes `rtt` ms and the client leg
//! ([`Conversation::client_leg_ms`], 0.5 ms by default) almost nothing.
//!
//! ```
//! use tapstat_analyze::TrackerConfig;
//! use tapstat_testkit::Conversation;
//!
//! let mut c = Conversation::new();
//! c.handshake(10.0); // SYN at 0 ms, SYN/ACK at 10 ms, ACK at 10.5 ms
//! let first = c.at(20.0).client_data(1000);
//! assert_eq!(first, 1001..2001);
//! c.at(30.0).server_ack_next();
//! // The segment is lost after the probe and sent again after a timeout.
//! let again = c.at(40.0).client_data(1000);
//! c.at(1040.0).client_resend(again.start, 1000);
//! c.at(1050.0).server_ack_next();
//!
//! let flows = c.run(TrackerConfig::default());
//! assert_eq!(flows.len(), 1);
//! let client = &flows[0].dir[0];
//! assert_eq!(client.pkts_data, 3);
//! assert_eq!(client.pkts_retx, 1);
//! assert_eq!(client.bytes_uniq, 2000);
//! ```
//!
//! [`frames`] builds the bytes of frames and captures (Ethernet to tunnels, pcap files):
//! the crate `tapstat-frames`, re-exported here for the tests of the crates above the
//! decoder (the decoder's and the capture crate's own tests use `tapstat-frames`
//! directly: this crate depends on them).

use std::ops::Range;

pub use tapstat_frames as frames;

use tapstat_analyze::{Flow, InputClock, Packet, Tracker, TrackerConfig};
use tapstat_decode::{Decoded, TcpFields, L4};
use tapstat_flow::{FlowHasher, FlowKey};

/// 10.0.0.1, as an IPv4 address is held in a `u128` (low 32 bits).
pub const CLIENT_IP: u128 = 0x0a00_0001;
/// 10.0.0.2.
pub const SERVER_IP: u128 = 0x0a00_0002;
pub const CLIENT_PORT: u16 = 40000;
pub const SERVER_PORT: u16 = 80;
pub const CLIENT_ISN: u32 = 1000;
pub const SERVER_ISN: u32 = 9000;
/// Packet time of the conversation's 0 ms.
pub const T0_NS: u64 = 1_000_000_000;
/// The window each side advertises unless told otherwise (no window scaling).
pub const DEFAULT_WINDOW: u16 = 65535;

pub const SYN: u8 = TcpFields::SYN;
pub const ACK: u8 = TcpFields::ACK;
pub const FIN: u8 = TcpFields::FIN;
pub const RST: u8 = TcpFields::RST;
pub const PSH: u8 = TcpFields::PSH;

/// A side of the conversation: the client (index 0 of [`Flow::dir`]) or the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

impl Side {
    /// The other side.
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }

    /// The index of this side's direction in [`Flow::dir`].
    pub fn index(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Server => 1,
        }
    }
}

/// One endpoint's state: what it has sent and what it acknowledges.
#[derive(Clone, Copy, Debug)]
struct End {
    ip: u128,
    port: u16,
    isn: u32,
    /// Sequence number of its next new byte.
    next: u32,
    /// The acknowledgment number it sends (0 until it has seen the other SYN).
    acked: u32,
    window: u16,
    ttl: u8,
}

/// A scripted TCP conversation: the segments a probe captures, in capture order.
#[derive(Clone, Debug)]
pub struct Conversation {
    ends: [End; 2],
    now_ms: f64,
    last_ns: u64,
    client_leg_ms: f64,
    pkts: Vec<(u64, Decoded)>,
}

impl Default for Conversation {
    fn default() -> Self {
        Conversation::new()
    }
}

impl Conversation {
    /// Client 10.0.0.1:40000 (ISN 1000), server 10.0.0.2:80 (ISN 9000), at 0 ms
    /// (packet time 1 s), windows 65535, TTL 64, client leg 0.5 ms.
    pub fn new() -> Conversation {
        let end = |ip, port, isn| End { ip, port, isn, next: isn, acked: 0, window: DEFAULT_WINDOW, ttl: 64 };
        Conversation {
            ends: [end(CLIENT_IP, CLIENT_PORT, CLIENT_ISN), end(SERVER_IP, SERVER_PORT, SERVER_ISN)],
            now_ms: 0.0,
            last_ns: 0,
            client_leg_ms: 0.5,
            pkts: Vec::new(),
        }
    }

    /// Other initial sequence numbers (before anything is sent).
    pub fn with_isns(mut self, client: u32, server: u32) -> Conversation {
        for (e, isn) in self.ends.iter_mut().zip([client, server]) {
            e.isn = isn;
            e.next = isn;
        }
        self
    }

    /// The time the client takes to answer the server, as seen at the probe (the
    /// client leg of the RTT, in ms) in [`Conversation::handshake`].
    pub fn client_leg_ms(mut self, ms: f64) -> Conversation {
        self.client_leg_ms = ms;
        self
    }

    fn end(&self, side: Side) -> &End {
        &self.ends[side.index()]
    }

    fn end_mut(&mut self, side: Side) -> &mut End {
        &mut self.ends[side.index()]
    }

    // --- time ------------------------------------------------------------------

    /// Sets the time of the next segments, in ms from the start. Capture time does
    /// not go back: a time before the last segment's panics.
    pub fn at(&mut self, ms: f64) -> &mut Self {
        assert!(ms >= 0.0, "time {ms} ms is before the start of the conversation");
        assert!(
            Self::ns(ms) >= self.last_ns,
            "time {ms} ms is before the last segment ({} ms): the capture is in time order",
            (self.last_ns - T0_NS) as f64 / 1e6
        );
        self.now_ms = ms;
        self
    }

    /// Moves the time on by `ms`.
    pub fn after(&mut self, ms: f64) -> &mut Self {
        let t = self.now_ms + ms;
        self.at(t)
    }

    /// The current time, in ms from the start.
    pub fn now_ms(&self) -> f64 {
        self.now_ms
    }

    fn ns(ms: f64) -> u64 {
        T0_NS + (ms * 1e6).round() as u64
    }

    // --- raw segments --------------------------------------------------------------

    /// Sends a segment from `side` with exactly these fields (the side's window and
    /// TTL); nothing of the side's state changes. Every other method ends here.
    pub fn send(&mut self, side: Side, flags: u8, seq: u32, ack: u32, len: u32) -> &mut Self {
        let from = *self.end(side);
        let to = *self.end(side.peer());
        let d = Decoded {
            l4: L4::Tcp,
            ip_version: 4,
            proto: 6,
            src: from.ip,
            dst: to.ip,
            sport: from.port,
            dport: to.port,
            ttl: from.ttl,
            payload_len: len,
            tcp: TcpFields { seq, ack, flags, window: from.window, hdr_len: 20 },
            ..Default::default()
        };
        let ts = Self::ns(self.now_ms);
        self.last_ns = ts;
        self.pkts.push((ts, d));
        self
    }

    /// Sets the window `side` advertises from now on (no segment is sent).
    pub fn set_window(&mut self, side: Side, window: u16) -> &mut Self {
        self.end_mut(side).window = window;
        self
    }

    /// Sets the TTL of `side`'s later segments.
    pub fn set_ttl(&mut self, side: Side, ttl: u8) -> &mut Self {
        self.end_mut(side).ttl = ttl;
        self
    }

    // --- generic, by side ----------------------------------------------------------

    /// A SYN (from the client) or SYN/ACK (from the server) with the side's ISN; sent
    /// again, it is a retransmission (same ISN).
    pub fn syn(&mut self, side: Side) -> &mut Self {
        let isn = self.end(side).isn;
        let e = self.end_mut(side);
        if e.next == isn {
            e.next = isn.wrapping_add(1);
        }
        match side {
            Side::Client => self.send(side, SYN, isn, 0, 0),
            Side::Server => {
                let ack = self.end(Side::Client).isn.wrapping_add(1);
                self.end_mut(side).acked = ack;
                self.send(side, SYN | ACK, isn, ack, 0)
            }
        }
    }

    /// The next `len` bytes of `side`, in order; returns their sequence range.
    pub fn data(&mut self, side: Side, len: u32) -> Range<u32> {
        let e = *self.end(side);
        self.end_mut(side).next = e.next.wrapping_add(len);
        self.send(side, ACK, e.next, e.acked, len);
        e.next..e.next.wrapping_add(len)
    }

    /// `len` bytes of `side` from `seq` (bytes sent before: a retransmission or a
    /// copy; or bytes skipped with [`Conversation::skip`]: reordering). The side's
    /// next sequence number moves on if they go beyond it.
    pub fn resend(&mut self, side: Side, seq: u32, len: u32) -> Range<u32> {
        let e = *self.end(side);
        let end = seq.wrapping_add(len);
        if (end.wrapping_sub(e.next) as i32) > 0 {
            self.end_mut(side).next = end;
        }
        self.send(side, ACK, seq, e.acked, len);
        seq..end
    }

    /// Advances `side`'s sequence number by `len` bytes sent but not seen at the probe
    /// (lost before it, or still on their way); returns their range.
    pub fn skip(&mut self, side: Side, len: u32) -> Range<u32> {
        let e = self.end_mut(side);
        let start = e.next;
        e.next = start.wrapping_add(len);
        start..e.next
    }

    /// A pure ACK from `side` acknowledging up to `ack`.
    pub fn ack(&mut self, side: Side, ack: u32) -> &mut Self {
        self.end_mut(side).acked = ack;
        let seq = self.end(side).next;
        self.send(side, ACK, seq, ack, 0)
    }

    /// A pure ACK from `side` of everything the other side has sent (seen or not).
    pub fn ack_next(&mut self, side: Side) -> &mut Self {
        let ack = self.end(side.peer()).next;
        self.ack(side, ack)
    }

    /// `n` pure ACKs from `side` repeating its last acknowledgment number.
    pub fn dup_ack(&mut self, side: Side, n: usize) -> &mut Self {
        let ack = self.end(side).acked;
        for _ in 0..n {
            self.ack(side, ack);
        }
        self
    }

    /// Advertises `window` from now on, with a pure ACK repeating the side's last
    /// acknowledgment number (a window update; `0`: a zero window).
    pub fn window(&mut self, side: Side, window: u16) -> &mut Self {
        self.set_window(side, window);
        let ack = self.end(side).acked;
        self.ack(side, ack)
    }

    /// A FIN/ACK from `side` after its data (the FIN takes one sequence number).
    pub fn fin(&mut self, side: Side) -> &mut Self {
        let e = *self.end(side);
        self.end_mut(side).next = e.next.wrapping_add(1);
        self.send(side, FIN | ACK, e.next, e.acked, 0)
    }

    /// A RST/ACK from `side`.
    pub fn rst(&mut self, side: Side) -> &mut Self {
        let e = *self.end(side);
        self.send(side, RST | ACK, e.next, e.acked, 0)
    }

    /// The sequence number of `side`'s next new byte.
    pub fn next_seq(&self, side: Side) -> u32 {
        self.end(side).next
    }

    /// The acknowledgment number `side` sends.
    pub fn acked(&self, side: Side) -> u32 {
        self.end(side).acked
    }

    // --- the handshake -------------------------------------------------------------

    /// The three-way handshake from now: the client's SYN, the server's SYN/ACK `rtt`
    /// ms later, and the client's ACK [`Conversation::client_leg_ms`] after that; the
    /// time is then that of the ACK.
    pub fn handshake(&mut self, rtt: f64) -> &mut Self {
        let t = self.now_ms;
        self.client_syn();
        self.at(t + rtt).server_synack();
        self.after(self.client_leg_ms).client_ack_next()
    }

    /// The client's SYN (again, with the same ISN, if sent before).
    pub fn client_syn(&mut self) -> &mut Self {
        self.syn(Side::Client)
    }

    /// The server's SYN/ACK (again, with the same ISN, if sent before).
    pub fn server_synack(&mut self) -> &mut Self {
        self.syn(Side::Server)
    }

    // --- the client ----------------------------------------------------------------

    /// The client's next `len` bytes, in order; returns their sequence range.
    pub fn client_data(&mut self, len: u32) -> Range<u32> {
        self.data(Side::Client, len)
    }

    /// `len` client bytes from `seq`: a retransmission, a copy, or bytes skipped before.
    pub fn client_resend(&mut self, seq: u32, len: u32) -> Range<u32> {
        self.resend(Side::Client, seq, len)
    }

    /// Advances the client's sequence number by `len` bytes the probe does not see.
    pub fn skip_client(&mut self, len: u32) -> Range<u32> {
        self.skip(Side::Client, len)
    }

    pub fn client_ack(&mut self, ack: u32) -> &mut Self {
        self.ack(Side::Client, ack)
    }

    pub fn client_ack_next(&mut self) -> &mut Self {
        self.ack_next(Side::Client)
    }

    pub fn client_dup_ack(&mut self, n: usize) -> &mut Self {
        self.dup_ack(Side::Client, n)
    }

    pub fn client_window(&mut self, window: u16) -> &mut Self {
        self.window(Side::Client, window)
    }

    pub fn set_client_window(&mut self, window: u16) -> &mut Self {
        self.set_window(Side::Client, window)
    }

    pub fn client_fin(&mut self) -> &mut Self {
        self.fin(Side::Client)
    }

    pub fn client_rst(&mut self) -> &mut Self {
        self.rst(Side::Client)
    }

    // --- the server ----------------------------------------------------------------

    /// The server's next `len` bytes, in order; returns their sequence range.
    pub fn server_data(&mut self, len: u32) -> Range<u32> {
        self.data(Side::Server, len)
    }

    /// `len` server bytes from `seq`: a retransmission, a copy, or bytes skipped before.
    pub fn server_resend(&mut self, seq: u32, len: u32) -> Range<u32> {
        self.resend(Side::Server, seq, len)
    }

    /// Advances the server's sequence number by `len` bytes the probe does not see.
    pub fn skip_server(&mut self, len: u32) -> Range<u32> {
        self.skip(Side::Server, len)
    }

    /// A pure ACK from the server up to `ack`.
    pub fn server_ack(&mut self, ack: u32) -> &mut Self {
        self.ack(Side::Server, ack)
    }

    /// A pure ACK from the server of everything the client has sent (seen or not).
    pub fn server_ack_next(&mut self) -> &mut Self {
        self.ack_next(Side::Server)
    }

    /// `n` pure ACKs from the server repeating its last acknowledgment number.
    pub fn server_dup_ack(&mut self, n: usize) -> &mut Self {
        self.dup_ack(Side::Server, n)
    }

    /// The server advertises `window` (a pure ACK repeating its last acknowledgment).
    pub fn server_window(&mut self, window: u16) -> &mut Self {
        self.window(Side::Server, window)
    }

    /// Sets the server's window for its later segments, sending nothing.
    pub fn set_server_window(&mut self, window: u16) -> &mut Self {
        self.set_window(Side::Server, window)
    }

    pub fn server_fin(&mut self) -> &mut Self {
        self.fin(Side::Server)
    }

    pub fn server_rst(&mut self) -> &mut Self {
        self.rst(Side::Server)
    }

    // --- running -----------------------------------------------------------------

    /// The segments so far, with their packet times in ns, in capture order.
    pub fn packets(&self) -> &[(u64, Decoded)] {
        &self.pkts
    }

    /// Feeds the segments through a [`Tracker`] (the input's clock as the dispatcher
    /// keeps it, flow hash seed 1), ends it at the last packet's time, and returns the
    /// finished flows in order of their first packet.
    pub fn run(&self, cfg: TrackerConfig) -> Vec<Flow> {
        run_packets(cfg, &self.pkts)
    }

    /// [`Conversation::run`] with the default configuration, for a script that makes
    /// one flow; panics if it made another number.
    pub fn flow(&self) -> Flow {
        let mut flows = self.run(TrackerConfig::default());
        assert_eq!(flows.len(), 1, "the conversation made {} flows", flows.len());
        flows.pop().unwrap()
    }
}

/// Feeds `(packet time in ns, segment)` pairs through a [`Tracker`] as the pipeline
/// would (keys, hash with seed 1, the input's clock, a frame of 54 bytes plus the
/// payload), ends it at the input's last time, and returns the finished flows in
/// order of their first packet.
pub fn run_packets(cfg: TrackerConfig, pkts: &[(u64, Decoded)]) -> Vec<Flow> {
    let mut t = Tracker::new(cfg);
    let mut clock = InputClock::default();
    let h = FlowHasher::new(1);
    let mut out = Vec::new();
    for (ts, d) in pkts {
        let (key, src_is_lo) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        let now = clock.tick(*ts);
        let p = Packet {
            ts_ns: *ts,
            now_ns: now,
            wire_len: 54 + d.payload_len,
            key,
            hash: h.hash(&key),
            src_is_lo,
            dec: d,
            payload: &[],
            dns_learnt: false,
            unanalysed: false,
        };
        t.on_packet(&p, &mut |f: &Flow| out.push(f.clone()));
    }
    t.finish(clock.now(), false, &mut |f: &Flow| out.push(f.clone()));
    out.sort_by_key(|f| f.first_ns);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_follow_the_script() {
        let mut c = Conversation::new();
        c.handshake(10.0);
        assert_eq!(c.now_ms(), 10.5);
        assert_eq!(c.next_seq(Side::Client), CLIENT_ISN + 1);
        assert_eq!(c.acked(Side::Client), SERVER_ISN + 1);
        assert_eq!(c.acked(Side::Server), CLIENT_ISN + 1);
        let a = c.at(20.0).client_data(100);
        let gap = c.skip_client(50);
        let b = c.client_data(10);
        assert_eq!((a, gap, b.clone()), (1001..1101, 1101..1151, 1151..1161));
        c.client_resend(1101, 50);
        assert_eq!(c.next_seq(Side::Client), 1161);
        c.at(30.0).server_ack_next().server_dup_ack(2).server_window(0);
        let p = c.packets();
        assert_eq!(p.len(), 3 + 3 + 4);
        let acks: Vec<(u32, u16)> = p[6..].iter().map(|(_, d)| (d.tcp.ack, d.tcp.window)).collect();
        assert_eq!(acks, [(1161, 65535), (1161, 65535), (1161, 65535), (1161, 0)]);
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(p[0].0, T0_NS);
        assert_eq!(p[3].0, T0_NS + 20_000_000);
    }

    #[test]
    fn a_conversation_is_one_flow_with_both_directions() {
        let mut c = Conversation::new().with_isns(u32::MAX - 10, 5);
        c.handshake(10.0);
        c.at(20.0).client_data(100);
        c.at(30.0).server_ack_next();
        c.server_data(300);
        c.at(30.5).client_ack_next();
        c.at(40.0).client_fin();
        c.at(50.0).server_fin();
        c.at(50.5).client_ack_next();
        let f = c.flow();
        assert_eq!(f.conn_state(), "SF");
        assert_eq!((f.dir[0].bytes_uniq, f.dir[1].bytes_uniq), (100, 300));
        assert_eq!((f.dir[0].pkts_all, f.dir[1].pkts_all), (6, 4));
        assert_eq!(f.dir[0].port, CLIENT_PORT);
        assert_eq!(f.rtt_3whs, [10_000_000, 500_000]);
    }

    #[test]
    #[should_panic(expected = "time order")]
    fn time_does_not_go_back() {
        let mut c = Conversation::new();
        c.at(5.0).client_syn();
        c.at(4.0);
    }
}
