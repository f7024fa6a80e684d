//! The TCP conversation model: endpoints, path, handshake, slow-start transfers with
//! losses and delayed ACKs, and the close.

use std::net::IpAddr;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::payloads::host_name;
use super::pcap::{frame, L3};
use super::{log_uniform, Class, Emitter, FlowTruth, Host, ACK, C, FIN, MS, PROTO_TCP, PSH, RST, S, SYN, US};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum App {
    Http,
    Tls,
    Ssh,
}

/// One TCP endpoint's state.
pub(super) struct Side {
    ip: IpAddr,
    port: u16,
    mac: [u8; 6],
    pub(super) isn: u32,
    snd_nxt: u32,
    rcv_nxt: u32,
    ts_base: u32,
    ts_recent: u32,
    ip_id: u16,
    ttl: u8,
    syn_win: u16,
    win: u16,
    wscale: u8,
    mss: u16,
    flow_label: u32,
}

/// Linux's minimum delayed-ACK timeout.
const DELACK: u64 = 40 * MS;

/// A message fully received.
#[derive(Clone, Copy)]
pub(super) struct Done {
    /// Capture time of the segment that completed it.
    pub(super) t: u64,
    /// Its last segment still waits for an ACK.
    pub(super) owed: bool,
}

/// What one TCP segment carries.
struct Seg<'a> {
    flags: u8,
    seq: u32,
    payload: &'a [u8],
    class: Class,
    /// One SACK block (left, right edge).
    sack: Option<(u32, u32)>,
}

/// Whether a data segment survives its flight.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Ok,
    LostAfterProbe,
    LostBeforeProbe,
}

pub(super) struct TcpGen {
    pub(super) rng: ChaCha8Rng,
    pub(super) em: Emitter,
    pub(super) sides: [Side; 2],
    /// One-way delay probe↔client (`d[C]`) and probe↔server (`d[S]`).
    pub(super) d: [u64; 2],
    pub(super) ts: bool,
    established: bool,
    /// Payload bytes per full segment (MSS less the timestamp option).
    pub(super) mss_eff: usize,
    /// Sender link speed: serialization time per byte.
    pub(super) ns_per_byte: u64,
    pub(super) max_cwnd: u32,
    cwnd: [u32; 2],
    loss: f64,
    pub(super) app: App,
    pub(super) host: String,
    pub(super) msgs: [u32; 2],
}

/// How a connection ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shut {
    /// FIN both ways, the second one ACKed.
    Fin,
    /// An RST from the closer.
    Rst,
    /// Left open: only the owed ACK, if any, is ever sent.
    Open,
}

/// When and by whom a connection is closed: see [`TcpGen::closing`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Closing {
    closer: usize,
    pub(super) t_close: u64,
    /// When the client would next send (its FIN or its ACK of the server's), which
    /// carries the ACK it owes for the last response.
    pub(super) t_client_next: u64,
    how: Shut,
}

impl TcpGen {
    /// The state of a connection between `ends` (client then server: host, address,
    /// port), with a random path (RTT 1–200 ms, log-uniform; the probe near the client,
    /// with 2–20% of the RTT, at least 20 µs each way, on the client side), options
    /// (timestamps, MSS), windows, link speed and application (from the server port).
    pub(super) fn new(mut rng: ChaCha8Rng, em: Emitter, ends: [(&Host, IpAddr, u16); 2], loss: f64) -> TcpGen {
        let [(client, cip, cport), (server, sip, sport)] = ends;
        let app = match sport {
            80 | 8080 => App::Http,
            22 => App::Ssh,
            _ => App::Tls,
        };
        let rtt = log_uniform(&mut rng, MS, 200 * MS);
        let d_c = (rtt * rng.gen_range(2..=20u64) / 200).max(20 * US);
        let d_s = (rtt / 2).saturating_sub(d_c).max(20 * US);
        let ts = !client.windows && rng.gen_bool(0.95);
        let v4mss: u16 = if cip.is_ipv6() { 1440 } else { 1460 };
        let c_mss = if rng.gen_bool(0.1) { v4mss - 80 } else { v4mss };
        let s_mss = if rng.gen_bool(0.15) { v4mss - 100 } else { v4mss };
        let mss = c_mss.min(s_mss);
        let side = |host: &Host, ip: IpAddr, port: u16, mss: u16, rng: &mut ChaCha8Rng| Side {
            ip,
            port,
            mac: host.mac,
            isn: rng.gen(),
            snd_nxt: 0,
            rcv_nxt: 0,
            ts_base: rng.gen(),
            ts_recent: 0,
            ip_id: rng.gen(),
            ttl: host.ttl,
            syn_win: if host.windows { 64240 } else { 65535 - rng.gen_range(0..4u16) * 0x1000 },
            win: rng.gen_range(250..=2048),
            wscale: if host.windows { 8 } else { rng.gen_range(7..=10) },
            mss,
            flow_label: rng.gen_range(0..0x10_0000),
        };
        let cs = side(client, cip, cport, c_mss, &mut rng);
        let ss = side(server, sip, sport, s_mss, &mut rng);
        let ns_per_byte = [8, 16, 80, 160, 800][rng.gen_range(0..5)];
        let mut g = TcpGen {
            rng,
            em,
            sides: [cs, ss],
            d: [d_c, d_s],
            ts,
            established: false,
            mss_eff: mss as usize - if ts { 12 } else { 0 },
            ns_per_byte,
            max_cwnd: 0,
            cwnd: [10, 10],
            loss,
            app,
            host: String::new(),
            msgs: [0, 0],
        };
        g.max_cwnd = g.rng.gen_range(16..=128);
        g.host = host_name(&mut g.rng);
        g
    }

    /// Sets the path's round trip, `client_pct` percent of it on the client side of the
    /// probe (at least 20 µs each way on either side).
    pub(super) fn set_rtt(&mut self, rtt: u64, client_pct: u64) {
        self.d[C] = (rtt * client_pct / 200).max(20 * US);
        self.d[S] = (rtt / 2).saturating_sub(self.d[C]).max(20 * US);
    }

    /// Writes the path's round trips into `truth`.
    pub(super) fn path_truth(&self, truth: &mut FlowTruth) {
        truth.rtt_ns = self.rtt();
        truth.rtt_probe_client_ns = 2 * self.d[C];
        truth.rtt_probe_server_ns = 2 * self.d[S];
    }

    /// The negotiated MSS.
    pub(super) fn mss(&self) -> u16 {
        self.sides[C].mss.min(self.sides[S].mss)
    }

    /// The client's SYN at (about) `t0`; returns its capture time.
    pub(super) fn syn(&mut self, t0: u64) -> u64 {
        let isn_c = self.sides[C].isn;
        let t = self.ctl(C, t0, SYN, isn_c);
        self.sides[C].snd_nxt = isn_c.wrapping_add(1);
        self.sides[S].rcv_nxt = isn_c.wrapping_add(1);
        t
    }

    /// The rest of the handshake after the SYN captured at `t`: the server's SYN/ACK
    /// and the client's ACK. Returns the ACK's capture time.
    pub(super) fn accept(&mut self, t: u64) -> u64 {
        let isn_s = self.sides[S].isn;
        let t_synack = t + 2 * self.d[S] + self.rng.gen_range(10 * US..200 * US);
        let t = self.ctl(S, t_synack, SYN | ACK, isn_s);
        self.sides[S].snd_nxt = isn_s.wrapping_add(1);
        self.sides[C].rcv_nxt = isn_s.wrapping_add(1);
        self.established = true;
        let t_ack = t + 2 * self.d[C] + self.rng.gen_range(5 * US..50 * US);
        self.ack(C, t_ack, None)
    }

    /// One exchange: a request of about `req` bytes leaves the client at `t_next` (the
    /// ACK it still owes for `prev`, the previous response, goes first if the
    /// delayed-ACK timer fires before), then the response of about `resp` bytes after
    /// the server's think time. Returns how the response was received.
    pub(super) fn exchange(&mut self, req: usize, resp: usize, t_next: u64, prev: Option<Done>) -> Done {
        let req = self.message(C, req);
        if let Some(prev) = prev {
            self.settle(C, prev, t_next);
        }
        let done = self.transfer(C, &req, t_next);
        let server_think = match self.app {
            App::Ssh => self.rng.gen_range(50 * US..2 * MS),
            _ => log_uniform(&mut self.rng, 100 * US, 100 * MS),
        };
        let t_resp = done.t + 2 * self.d[S] + server_think;
        self.settle(S, done, t_resp);
        let resp = self.message(S, resp);
        self.transfer(S, &resp, t_resp)
    }

    /// The close of a connection whose last response was received as `last`: by
    /// `closer`, `idle` after it. Decides times only; [`TcpGen::close`] emits.
    pub(super) fn closing(&self, last: Done, closer: usize, idle: u64, how: Shut) -> Closing {
        let t_close = if closer == C { last.t + 2 * self.d[C] + idle } else { last.t + idle };
        let t_client_next = if closer == C { t_close } else { t_close + 2 * self.d[C] };
        Closing { closer, t_close, t_client_next, how }
    }

    /// Emits the close planned by `c`. The client's owed ACK of the last response
    /// rides on its next packet when that comes soon enough.
    pub(super) fn close(&mut self, last: Done, c: &Closing) {
        let (closer, other) = (c.closer, 1 - c.closer);
        match c.how {
            Shut::Fin => {
                self.settle(C, last, c.t_client_next);
                let seq = self.sides[closer].snd_nxt;
                let t = self.ctl(closer, c.t_close, FIN | ACK, seq);
                self.sides[closer].snd_nxt = seq.wrapping_add(1);
                self.sides[other].rcv_nxt = seq.wrapping_add(1);
                let t_reply = t + 2 * self.d[other] + self.rng.gen_range(10 * US..200 * US);
                let t_fin = if self.rng.gen_bool(0.5) {
                    t_reply // FIN piggybacked on the ACK
                } else {
                    let t = self.ack(other, t_reply, None);
                    t + log_uniform(&mut self.rng, 50 * US, 20 * MS)
                };
                let seq = self.sides[other].snd_nxt;
                let t = self.ctl(other, t_fin, FIN | ACK, seq);
                self.sides[other].snd_nxt = seq.wrapping_add(1);
                self.sides[closer].rcv_nxt = seq.wrapping_add(1);
                let t_last_ack = t + 2 * self.d[closer] + self.rng.gen_range(10 * US..100 * US);
                self.ack(closer, t_last_ack, None);
            }
            Shut::Rst => {
                self.settle(C, last, c.t_client_next);
                let seq = self.sides[closer].snd_nxt;
                self.ctl(closer, c.t_close, RST | ACK, seq);
            }
            Shut::Open => self.settle(C, last, u64::MAX),
        }
    }

    fn rtt(&self) -> u64 {
        2 * (self.d[C] + self.d[S])
    }

    /// Emits a segment without payload (SYN, FIN, RST, ...) from `dir` at (about) `t`;
    /// returns its capture time.
    pub(super) fn ctl(&mut self, dir: usize, t: u64, flags: u8, seq: u32) -> u64 {
        let s = Seg { flags, seq, payload: &[], class: Class::Normal, sack: None };
        self.seg(dir, t, s)
    }

    /// Emits one TCP segment from `dir` at (about) `t`; returns its capture time.
    fn seg(&mut self, dir: usize, t: u64, s: Seg<'_>) -> u64 {
        let Seg { flags, seq, payload, class, sack } = s;
        let t = self.em.at(dir, t);
        let peer = 1 - dir;
        let me = &self.sides[dir];
        let tsval = me.ts_base.wrapping_add((t / MS) as u32);
        let mut opts: Vec<u8> = Vec::with_capacity(40);
        let reject = flags & RST != 0 && !self.established;
        if flags & SYN != 0 {
            let m = me.mss.to_be_bytes();
            if self.ts {
                // Linux order: MSS, SACK_PERM, TS, NOP, WS.
                opts.extend_from_slice(&[2, 4, m[0], m[1], 4, 2, 8, 10]);
                opts.extend_from_slice(&tsval.to_be_bytes());
                opts.extend_from_slice(&me.ts_recent.to_be_bytes());
                opts.extend_from_slice(&[1, 3, 3, me.wscale]);
            } else {
                // Windows order: MSS, NOP, WS, NOP, NOP, SACK_PERM.
                opts.extend_from_slice(&[2, 4, m[0], m[1], 1, 3, 3, me.wscale, 1, 1, 4, 2]);
            }
        } else if !reject {
            if self.ts {
                opts.extend_from_slice(&[1, 1, 8, 10]);
                opts.extend_from_slice(&tsval.to_be_bytes());
                opts.extend_from_slice(&me.ts_recent.to_be_bytes());
            }
            if let Some((l, r)) = sack {
                opts.extend_from_slice(&[1, 1, 5, 10]);
                opts.extend_from_slice(&l.to_be_bytes());
                opts.extend_from_slice(&r.to_be_bytes());
            }
        }
        let window = if flags & SYN != 0 {
            me.syn_win
        } else if flags & RST != 0 {
            0
        } else {
            me.win
        };
        let ack = if flags & ACK != 0 { me.rcv_nxt } else { 0 };
        let hl = 20 + opts.len();
        let mut l4 = Vec::with_capacity(hl + payload.len());
        l4.extend_from_slice(&me.port.to_be_bytes());
        l4.extend_from_slice(&self.sides[peer].port.to_be_bytes());
        l4.extend_from_slice(&seq.to_be_bytes());
        l4.extend_from_slice(&ack.to_be_bytes());
        l4.push(((hl / 4) as u8) << 4);
        l4.push(flags);
        l4.extend_from_slice(&window.to_be_bytes());
        l4.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        l4.extend_from_slice(&opts);
        l4.extend_from_slice(payload);
        let l3 = L3 {
            src_mac: me.mac,
            dst_mac: self.sides[peer].mac,
            src: me.ip,
            dst: self.sides[peer].ip,
            ttl: me.ttl,
            ip_id: me.ip_id,
            df: true,
            flow_label: me.flow_label,
        };
        let f = frame(&l3, PROTO_TCP, l4, 16);
        self.sides[dir].ip_id = self.sides[dir].ip_id.wrapping_add(1);
        if self.ts && flags & RST == 0 {
            self.sides[peer].ts_recent = tsval;
        }
        self.em.push(dir, t, class, flags, payload.len(), f);
        t
    }

    /// An ACK from `dir` at `t`, optionally with one SACK block.
    fn ack(&mut self, dir: usize, t: u64, sack: Option<(u32, u32)>) -> u64 {
        let seq = self.sides[dir].snd_nxt;
        self.seg(dir, t, Seg { flags: ACK, seq, payload: &[], class: Class::Normal, sack })
    }

    /// Serialization time of a segment with `len` payload bytes on the sender's link
    /// (headers, preamble and inter-frame gap included).
    fn gap(&self, len: usize) -> u64 {
        (len as u64 + 90) * self.ns_per_byte
    }

    /// Sends `msg` from `from`, starting at probe time `t0`, with slow start, delayed
    /// ACKs every two segments, losses and retransmissions. The ACK of a message's odd
    /// last segment is left owed (see [`TcpGen::settle`]), as a delayed ACK that the
    /// receiver's next packet may carry.
    fn transfer(&mut self, from: usize, msg: &[u8], t0: u64) -> Done {
        let to = 1 - from;
        let rtt = self.rtt();
        let d_rcv = self.d[to];
        let mss = self.mss_eff;
        let n = msg.len().div_ceil(mss);
        let base = self.sides[from].snd_nxt;
        let seq_of = |i: usize| base.wrapping_add((i * mss) as u32);
        let end_of = |i: usize| base.wrapping_add(((i + 1) * mss).min(msg.len()) as u32);

        let mut received = vec![false; n];
        let mut rcv_next = 0usize; // receiver: first segment not yet in order
        let mut next_new = 0usize;
        let mut retx: Vec<(usize, bool)> = Vec::new(); // (segment, original captured)
        let mut t_flight = t0;
        let mut cwnd = self.cwnd[from].max(1);
        let mut complete_t = t0;
        let mut owed = false;

        while next_new < n || !retx.is_empty() {
            let mut flight: Vec<(usize, Option<bool>)> = retx.drain(..).map(|(i, c)| (i, Some(c))).collect();
            while flight.len() < cwnd as usize && next_new < n {
                flight.push((next_new, None));
                next_new += 1;
            }
            // Decide losses back to front: a segment lost before the probe needs a
            // later captured one, or its retransmission would not fill a hole there.
            let mut fate = vec![Fate::Ok; flight.len()];
            let mut later_captured = false;
            for k in (0..flight.len()).rev() {
                if flight[k].1.is_none() && self.rng.gen_bool(self.loss) {
                    fate[k] = if later_captured && self.rng.gen_bool(0.3) {
                        Fate::LostBeforeProbe
                    } else {
                        Fate::LostAfterProbe
                    };
                }
                if fate[k] != Fate::LostBeforeProbe {
                    later_captured = true;
                }
            }

            let mut t = t_flight;
            let mut pending = 0u32; // in-order segments not yet ACKed
            let mut last_in_order = t;
            let mut lost: Vec<(usize, bool)> = Vec::new();
            let mut dupacks = 0u32;
            for (k, &(i, rtx)) in flight.iter().enumerate() {
                let off = i * mss;
                let len = mss.min(msg.len() - off);
                let flags = if off + len == msg.len() { ACK | PSH } else { ACK };
                let class = match rtx {
                    None => Class::Normal,
                    Some(true) => Class::Retx,
                    Some(false) => Class::Ooo,
                };
                let tp = if fate[k] == Fate::LostBeforeProbe {
                    t
                } else {
                    let payload = &msg[off..off + len];
                    self.seg(from, t, Seg { flags, seq: seq_of(i), payload, class, sack: None })
                };
                t = tp + self.gap(len);
                match fate[k] {
                    Fate::LostAfterProbe => lost.push((i, true)),
                    Fate::LostBeforeProbe => lost.push((i, false)),
                    Fate::Ok => {
                        received[i] = true;
                        let t_ack = tp + 2 * d_rcv + self.rng.gen_range(0..30 * US);
                        if i == rcv_next {
                            let filled_hole = i + 1 < n && received[i + 1];
                            while rcv_next < n && received[rcv_next] {
                                rcv_next += 1;
                            }
                            self.sides[to].rcv_nxt = if rcv_next == n { end_of(n - 1) } else { seq_of(rcv_next) };
                            if rcv_next == n {
                                complete_t = tp;
                            }
                            pending += 1;
                            last_in_order = tp;
                            // ACK every second segment, and at once when a hole
                            // closes; the odd last one of the message waits.
                            if pending >= 2 || filled_hole {
                                self.ack(to, t_ack, None);
                                pending = 0;
                            } else if rcv_next == n {
                                owed = true;
                                pending = 0;
                            }
                        } else if i > rcv_next {
                            // Out of order at the receiver: immediate duplicate ACK.
                            let (mut l, mut r) = (i, i);
                            while l > rcv_next && received[l - 1] {
                                l -= 1;
                            }
                            while r + 1 < n && received[r + 1] {
                                r += 1;
                            }
                            self.ack(to, t_ack, Some((seq_of(l), end_of(r))));
                            if !lost.is_empty() {
                                dupacks += 1;
                            }
                        }
                    }
                }
            }
            if pending > 0 {
                // The flight's odd segment: a quick delayed ACK.
                let t_ack = last_in_order + 2 * d_rcv + self.rng.gen_range(100 * US..500 * US);
                self.ack(to, t_ack, None);
            }
            // The sender is ACK-clocked: the next flight leaves about one RTT after this
            // one, but never before the link is free.
            let next = (t_flight + rtt + self.gap(mss)).max(t);
            if lost.is_empty() {
                cwnd = (cwnd * 2).min(self.max_cwnd);
                t_flight = next;
            } else if dupacks >= 3 {
                cwnd = (cwnd / 2).max(2); // fast retransmit, fast recovery
                t_flight = next;
            } else {
                cwnd = 1; // retransmission timeout
                t_flight = t + 200 * MS + rtt;
            }
            retx = lost;
        }
        self.cwnd[from] = cwnd;
        self.sides[from].snd_nxt = base.wrapping_add(msg.len() as u32);
        self.sides[to].rcv_nxt = self.sides[from].snd_nxt;
        Done { t: complete_t, owed }
    }

    /// Pays the ACK owed by the receiver of `done`: a pure ACK when the delayed-ACK
    /// timer (40 ms) fires before the receiver's next packet at `next_t`, which
    /// otherwise carries it.
    fn settle(&mut self, rcv: usize, done: Done, next_t: u64) {
        if let Some(t) = self.settle_at(rcv, done, next_t) {
            self.ack(rcv, t, None);
        }
    }

    /// When [`TcpGen::settle`] sends its pure ACK, if it does.
    pub(super) fn settle_at(&self, rcv: usize, done: Done, next_t: u64) -> Option<u64> {
        let t_delack = done.t + 2 * self.d[rcv] + DELACK;
        (done.owed && t_delack < next_t).then_some(t_delack)
    }
}
