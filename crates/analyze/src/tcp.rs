//! TCP: sequence-space accounting (unique bytes, retransmissions, out-of-sequence
//! segments), the connection's state, and Zeek's `history` letters; the end-to-end and
//! options sets of each direction are in `e2e`.

use crate::flow::Flow;
use tapstat_decode::{Decoded, TcpFields};

mod e2e;

pub(crate) use e2e::on_segment_e2e;
pub use e2e::{Offset, RingPool, SynOptions, TcpDir, TsEcho};

/// Holes (ranges of sequence space not seen yet below the highest byte seen) tracked
/// per direction. Bounded: when full, the oldest hole is forgotten, so a segment that
/// fills it later is taken for a retransmission (counted in `seq_holes_dropped`).
const MAX_HOLES: usize = 4;

/// The sequence space of one direction, in 64-bit offsets from the first sequence
/// number (ISN + 1 when the SYN was seen), so wrap-around is handled once here. It
/// also holds the direction's part of Zeek's `history` bookkeeping (see [`History`]),
/// in what would otherwise be padding: a hole is kept as a start and a 32-bit length
/// (a hole is shorter than 2^31, the farthest `offset` reaches).
#[derive(Clone, Debug, Default)]
pub struct SeqSpace {
    /// One past the highest payload byte seen.
    next: u64,
    hole_at: [u64; MAX_HOLES],
    /// The peer's highest acknowledgment seen, as an offset: bytes below it that were
    /// never seen are Zeek's content gaps, reported once.
    acked_to: u64,
    hole_len: [u32; MAX_HOLES],
    base: u32,
    /// The ISN of the SYN this direction sent, if it sent one.
    pub syn_seq: Option<u32>,
    pub holes_dropped: u32,
    /// Zeek's `hist_last_FIN` and `hist_last_RST`: the sequence number after the
    /// payload of the last FIN, and that of the last RST, this direction sent.
    last_fin: u32,
    last_rst: u32,
    /// Zeek's counts of retransmissions, gaps and zero windows (`t`, `g`, `w`).
    counts: [u16; 3],
    started: bool,
    nholes: u8,
}

/// What a data segment was, in the sequence space of its direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentClass {
    /// New data in order.
    InOrder,
    /// New data beyond a gap: some sequence space was skipped.
    AfterGap,
    /// Data that fills (part of) a gap: it arrived after later data.
    OutOfSequence,
    /// Data entirely seen before.
    Retransmission,
}

impl SeqSpace {
    fn start(&mut self, base: u32) {
        self.started = true;
        self.base = base;
        self.next = 0;
        self.nholes = 0;
    }

    /// The 64-bit offset of `seq` (a sequence or acknowledgment number), once the
    /// space has started.
    #[inline]
    pub fn offset_of(&self, seq: u32) -> Option<u64> {
        if self.started {
            self.offset(seq)
        } else {
            None
        }
    }

    /// One past the highest payload byte seen, as an offset.
    #[inline]
    pub fn next(&self) -> u64 {
        self.next
    }

    fn hole(&self, i: usize) -> (u64, u64) {
        (self.hole_at[i], self.hole_at[i] + self.hole_len[i] as u64)
    }

    /// Bytes below `ack` never seen: the holes the other side acknowledged, and the
    /// bytes it acknowledged beyond the highest one seen (like Zeek's `missed_bytes`).
    /// Bounded by the hole list: holes forgotten when it overflowed are not counted.
    pub fn missed_below(&self, ack: u64) -> u64 {
        let holes: u64 = (0..self.nholes as usize)
            .map(|i| {
                let (s, e) = self.hole(i);
                e.min(ack).saturating_sub(s)
            })
            .sum();
        holes + ack.saturating_sub(self.next)
    }

    /// Zeek's content gaps (`TCP_Reassembler::Undelivered`) an acknowledgment up to
    /// `ack` reveals: one per stretch of never-seen bytes between the previous highest
    /// acknowledgment and `ack`.
    fn gaps_acked(&mut self, ack: u64) -> u16 {
        if ack <= self.acked_to {
            return 0;
        }
        let from = self.acked_to;
        self.acked_to = ack;
        let mut n = (ack > self.next.max(from)) as u16;
        for i in 0..self.nholes as usize {
            let (s, e) = self.hole(i);
            n += (s < ack && e > from) as u16;
        }
        n
    }

    /// The 64-bit offset of `seq`: the one within 2^31 of the highest byte seen.
    /// `None` for a sequence number before the start of the space.
    #[inline]
    fn offset(&self, seq: u32) -> Option<u64> {
        let next32 = self.base.wrapping_add(self.next as u32);
        let diff = seq.wrapping_sub(next32) as i32 as i64;
        let r = self.next as i64 + diff;
        (r >= 0).then_some(r as u64)
    }

    /// Accounts `len` payload bytes starting at `seq`; returns the class and the number
    /// of bytes new to the sequence space.
    pub fn on_data(&mut self, seq: u32, len: u32) -> (SegmentClass, u64) {
        if !self.started {
            self.start(seq);
        }
        let Some(s) = self.offset(seq) else {
            return (SegmentClass::Retransmission, 0);
        };
        let e = s + len as u64;
        if s >= self.next {
            let class = if s > self.next {
                self.add_hole(self.next, s);
                SegmentClass::AfterGap
            } else {
                SegmentClass::InOrder
            };
            self.next = e;
            return (class, len as u64);
        }
        // Below the highest byte seen: count what it fills in the holes.
        let mut filled = 0u64;
        let mut i = 0;
        while i < self.nholes as usize {
            let (hs, he) = self.hole(i);
            let (os, oe) = (s.max(hs), e.min(he));
            if os < oe {
                filled += oe - os;
                // Keep what is left of the hole on each side.
                let left = (hs < os).then_some((hs, os));
                let right = (oe < he).then_some((oe, he));
                self.remove_hole(i);
                if let Some(h) = left {
                    self.add_hole(h.0, h.1);
                }
                if let Some(h) = right {
                    self.add_hole(h.0, h.1);
                }
                continue;
            }
            i += 1;
        }
        if e > self.next {
            filled += e - self.next;
            self.next = e;
        }
        if filled > 0 {
            (SegmentClass::OutOfSequence, filled)
        } else {
            (SegmentClass::Retransmission, 0)
        }
    }

    fn add_hole(&mut self, s: u64, e: u64) {
        if self.nholes as usize == MAX_HOLES {
            self.remove_hole(0);
            self.holes_dropped += 1;
        }
        self.hole_at[self.nholes as usize] = s;
        // `offset` places every byte within 2^31 of the highest seen.
        self.hole_len[self.nholes as usize] = (e - s).min(u32::MAX as u64) as u32;
        self.nholes += 1;
    }

    fn remove_hole(&mut self, i: usize) {
        let n = self.nholes as usize;
        self.hole_at.copy_within(i + 1..n, i);
        self.hole_len.copy_within(i + 1..n, i);
        self.nholes -= 1;
    }
}

/// Zeek's endpoint states (`TCP_ENDPOINT_*`), the input of its `conn_state`.
mod state {
    pub const INACTIVE: u8 = 0;
    pub const SYN_SENT: u8 = 1;
    pub const SYN_ACK_SENT: u8 = 2;
    pub const PARTIAL: u8 = 3;
    pub const ESTABLISHED: u8 = 4;
    pub const CLOSED: u8 = 5;
    pub const RESET: u8 = 6;
}

/// In `TcpConn::ep`: the state (bits 0-2), the previous state (bits 3-5), and whether
/// the side sent payload (bit 6, for Zeek's `REJ`, which wants both sizes zero).
const EP_STATE: u8 = 0x07;
const EP_DATA: u8 = 0x40;

/// Connection-level TCP state, with index 0 the client and 1 the server.
#[derive(Clone, Debug, Default)]
pub struct TcpConn {
    /// A SYN without ACK was sent by this side.
    pub syn: [bool; 2],
    /// A SYN/ACK was sent by this side.
    pub synack: [bool; 2],
    pub fin: [bool; 2],
    pub rst: [bool; 2],
    /// SYN, SYN/ACK and the client's ACK were seen: the three-way handshake.
    pub complete: bool,
    /// Each side's Zeek endpoint state, previous state and payload bit (`EP_*`).
    ep: [u8; 2],
}

impl TcpConn {
    /// Both sides sent FIN, or a side sent RST.
    pub fn closed(&self) -> bool {
        (self.fin[0] && self.fin[1]) || self.rst[0] || self.rst[1]
    }

    #[inline]
    fn state(&self, di: usize) -> u8 {
        self.ep[di] & EP_STATE
    }

    fn prev(&self, di: usize) -> u8 {
        (self.ep[di] >> 3) & EP_STATE
    }

    /// Zeek's `TCP_Endpoint::SetState`: the previous state changes only with the state.
    fn set(&mut self, di: usize, s: u8) {
        let cur = self.state(di);
        if s != cur {
            self.ep[di] = (self.ep[di] & EP_DATA) | (cur << 3) | s;
        }
    }

    /// Whether side `di` is established or closed from established: Zeek reports
    /// content gaps only then (`established_or_cleanly_closing` in
    /// TCP_Reassembler.cc); a partial connection's gaps may be bytes before the
    /// capture began.
    fn clean(&self, di: usize) -> bool {
        let s = self.state(di);
        s == state::ESTABLISHED || (s == state::CLOSED && self.prev(di) == state::ESTABLISHED)
    }

    /// Zeek's `TCPSessionAdapter::UpdateStateMachine` for a segment of side `di`
    /// with `flags` and `len` payload bytes. Only segments with SYN, FIN or RST, or
    /// from a side not seen yet, can change a state.
    #[cold]
    fn on_flags(&mut self, di: usize, flags: u8, len: u32) {
        use state::*;
        let (syn, ack) = (flags & TcpFields::SYN != 0, flags & TcpFields::ACK != 0);
        let (fin, rst) = (flags & TcpFields::FIN != 0, flags & TcpFields::RST != 0);
        let peer = 1 - di;
        match self.state(di) {
            INACTIVE => {
                if syn {
                    if di == 0 {
                        self.set(di, if ack { SYN_ACK_SENT } else { SYN_SENT });
                    } else {
                        if self.state(peer) == SYN_SENT {
                            self.set(peer, ESTABLISHED);
                        }
                        self.set(di, ESTABLISHED);
                    }
                }
                if fin {
                    self.set(di, CLOSED);
                }
                if rst {
                    self.set(di, RESET);
                }
                if self.state(di) == INACTIVE {
                    // An ACK of the SYN before the SYN/ACK (some stacks) does not
                    // make the connection partial; an ACK after a SYN/ACK whose SYN
                    // was missed establishes it.
                    if di == 1 && len == 0 && self.state(0) == SYN_SENT {
                    } else if ack && self.state(peer) == ESTABLISHED {
                        self.set(di, ESTABLISHED);
                    } else {
                        self.set(di, PARTIAL);
                    }
                }
            }
            SYN_SENT | SYN_ACK_SENT => {
                if fin {
                    self.set(di, CLOSED);
                }
                if rst {
                    self.set(di, RESET);
                }
            }
            ESTABLISHED | PARTIAL => {
                if syn && !ack && self.state(di) == PARTIAL && self.state(peer) == INACTIVE {
                    self.set(di, SYN_SENT);
                }
                if fin && !rst {
                    self.set(di, CLOSED);
                    // A FIN and then a RST from the peer, then this FIN: a normal close.
                    if self.state(peer) == RESET && self.prev(peer) == CLOSED {
                        self.set(peer, CLOSED);
                    }
                }
                if rst {
                    self.set(di, RESET);
                }
            }
            // After both FINs a RST changes nothing.
            CLOSED if rst && self.state(peer) != CLOSED => self.set(di, RESET),
            _ => {}
        }
    }

    /// Zeek's `conn_state` (base/protocols/conn/main.zeek, function `conn_state`),
    /// from the two endpoint states; `history` decides `RSTOS0` against `OTH`.
    pub fn conn_state(&self, history: &History) -> &'static str {
        use state::*;
        let (os, rs) = (self.state(0), self.state(1));
        let o_inactive = os == INACTIVE || os == PARTIAL;
        let r_inactive = rs == INACTIVE || rs == PARTIAL;
        if rs == RESET {
            let no_data = (self.ep[0] | self.ep[1]) & EP_DATA == 0;
            if os == SYN_SENT || os == SYN_ACK_SENT || (os == RESET && no_data) {
                "REJ"
            } else if o_inactive {
                "RSTRH"
            } else {
                "RSTR"
            }
        } else if os == RESET {
            if !r_inactive {
                "RSTO"
            } else if history.syn_then_rst() {
                "RSTOS0"
            } else {
                "OTH"
            }
        } else if rs == CLOSED && os == CLOSED {
            "SF"
        } else if os == CLOSED {
            if r_inactive {
                "SH"
            } else {
                "S2"
            }
        } else if rs == CLOSED {
            if o_inactive {
                "SHR"
            } else {
                "S3"
            }
        } else if os == SYN_SENT && rs == INACTIVE {
            "S0"
        } else if os == ESTABLISHED && rs == ESTABLISHED {
            "S1"
        } else {
            "OTH"
        }
    }
}

impl Flow {
    /// Zeek's `conn_state` of this (TCP) flow.
    pub fn conn_state(&self) -> &'static str {
        self.tcp.conn_state(&self.history)
    }
}

/// Zeek's `history` (base/protocols/conn/main.zeek, field `history`; written by
/// `update_history` and `TCP_Endpoint` in Zeek's TCP analyzer): upper case for the
/// client (Zeek's originator), lower case for the server.
///
/// - `s` SYN, `h` SYN/ACK, `f` FIN, `r` RST: again when the sequence number differs
///   from the last such packet's (a SYN's is its own ISN only after the side closed
///   or reset: Zeek restarts the sequence space at every other SYN).
/// - `a` pure ACK, `d` payload without SYN, FIN or RST, `i` FIN+RST, `q` another
///   multi-flag packet (SYN+FIN, SYN+RST): once per side.
/// - `t` retransmission (payload ending at or below the highest sequence number sent:
///   holes filled late included), `g` content gap (bytes the peer acknowledged and the
///   probe never saw, once both sides are established), `w` zero window: at the 1st,
///   10th, 100th, 1,000th and 10,000th time per side.
/// - `^` first: the first packet was a SYN/ACK, whose receiver is the client (Zeek's
///   role flip).
///
/// Not written: `c` (bad checksum: tapstat does not verify checksums) and `x`.
/// Bounded at 30 letters.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Zeek's `hist_seen` masks, per side (`SEEN_*`).
    seen: [u8; 2],
    len: u8,
    buf: [u8; 30],
}

const SEEN_SYN: u8 = 1;
const SEEN_FIN: u8 = 2;
const SEEN_RST: u8 = 4;
const SEEN_FIN_RST: u8 = 8;
const SEEN_DATA: u8 = 16;
const SEEN_ACK: u8 = 32;
const SEEN_MULTI: u8 = 64;

/// The letters counted on a log scale, by index in `SeqSpace::counts`.
const SCALED: [u8; 3] = [b't', b'g', b'w'];

impl History {
    /// Appends `letter` (lower case) for side `di`.
    #[inline]
    fn push(&mut self, di: usize, letter: u8) {
        if (self.len as usize) < self.buf.len() {
            self.buf[self.len as usize] = letter - 32 * (di == 0) as u8;
            self.len += 1;
        }
    }

    /// Zeek's `CheckHistory`: appends `letter` the first time `mask` is seen for
    /// side `di`; whether it was seen before.
    #[inline]
    fn check(&mut self, di: usize, mask: u8, letter: u8) -> bool {
        if self.seen[di] & mask != 0 {
            return true;
        }
        self.seen[di] |= mask;
        self.push(di, letter);
        false
    }

    /// Zeek's `ScaledHistoryEntry`: the `k`-th scaled letter of side `di` at counts 1,
    /// 10, 100, 1,000 and 10,000.
    #[cold]
    fn scaled(&mut self, di: usize, seq: &mut SeqSpace, k: usize) {
        let n = seq.counts[k].saturating_add(1);
        seq.counts[k] = n;
        if matches!(n, 1 | 10 | 100 | 1000 | 10000) {
            self.push(di, SCALED[k]);
        }
    }

    /// Zeek's test for `RSTOS0`, `/\^?S[^HAFGIQ]*R.*/`: the client's SYN first,
    /// then its RST before any H, A, F, G, I or Q of its own.
    fn syn_then_rst(&self) -> bool {
        let h = self.as_str().as_bytes();
        let h = h.strip_prefix(b"^").unwrap_or(h);
        let Some(rest) = h.strip_prefix(b"S") else { return false };
        for &l in rest {
            match l {
                b'R' => return true,
                b'H' | b'A' | b'F' | b'G' | b'I' | b'Q' => return false,
                _ => {}
            }
        }
        false
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len as usize]).unwrap_or("")
    }
}

/// Whether `d` carries a TCP header to account (not a later or held fragment).
#[inline]
fn has_header(d: &Decoded) -> bool {
    !matches!(d.fragment, tapstat_decode::Fragment::Later | tapstat_decode::Fragment::TcpHeld)
}

/// Where a payload's bytes new to its direction's stream begin, for the application
/// layer, and the segment's place in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fresh {
    /// Offset in the payload of the first byte not seen before (its length: none).
    pub off: u32,
    /// The segment's first byte, as an offset in the direction's stream (TCP).
    pub seg_at: u64,
    /// One past the highest byte of the direction seen before the segment.
    pub next: u64,
}

impl Fresh {
    /// A payload that continues the stream from `off`.
    pub const fn at(off: u32) -> Fresh {
        Fresh { off, seg_at: 0, next: 0 }
    }

    /// Bytes before the segment were never seen (`SegmentClass::AfterGap`: lost at the
    /// probe, or still to come out of order): the stream the application layer gets has
    /// a hole there, and it must be told so rather than take the bytes as following on.
    #[inline]
    pub fn after_gap(&self) -> bool {
        self.seg_at > self.next
    }
}

/// Zeek's view of a segment of side `di` (`TCPSessionAdapter::Process`, in its
/// order): the flag letters, a zero window, a retransmission, the endpoint states,
/// then the content gaps the segment's ACK reveals in the other side's stream.
/// `f.tcp.fin` does not include this segment yet.
#[inline]
fn zeek_segment(f: &mut Flow, t: &TcpFields, di: usize, len: u32, retx: bool) {
    let flags = t.flags;
    let ack = flags & TcpFields::ACK != 0;
    let rst = flags & TcpFields::RST != 0;
    let peer = 1 - di;
    let (h, c) = (&mut f.history, &mut f.tcp);
    if c.ep[0] & EP_STATE == 0 && c.ep[1] & EP_STATE == 0 && di == 1 {
        // The first packet came from the server: Zeek flips the roles and says so.
        h.push(1, b'^');
    }
    let ctl = flags & (TcpFields::SYN | TcpFields::FIN | TcpFields::RST);
    if ctl == 0 {
        if len > 0 {
            h.check(di, SEEN_DATA, b'd');
        } else if ack {
            h.check(di, SEEN_ACK, b'a');
        }
    } else {
        zeek_control(f, t, di, len);
    }
    let (h, c) = (&mut f.history, &mut f.tcp);
    let x = &mut f.dir[di].seq;
    // Zero windows are of no interest with or after a RST, or after the peer's FIN.
    if t.window == 0 && !rst && c.state(peer) != state::CLOSED && c.state(di) != state::RESET {
        h.scaled(di, x, 2);
    }
    if retx {
        h.scaled(di, x, 0);
    }
    if ctl != 0 || c.state(di) == state::INACTIVE {
        c.on_flags(di, flags, len);
    }
    if ack {
        let p = &mut f.dir[peer].seq;
        if let Some(mut a) = p.offset_of(t.ack) {
            // Zeek's `AckReceived`: the ACK of a FIN stops at the FIN.
            if c.fin[peer] {
                a = a.min(p.offset_of(p.last_fin).unwrap_or(a));
            }
            let n = p.gaps_acked(a);
            if n > 0 && c.clean(di) && c.clean(peer) {
                for _ in 0..n {
                    h.scaled(peer, p, 1);
                }
            }
        }
    }
}

/// Zeek's letters for a segment with SYN, FIN or RST (`update_history`).
#[cold]
fn zeek_control(f: &mut Flow, t: &TcpFields, di: usize, len: u32) {
    let flags = t.flags;
    let (syn, ack) = (flags & TcpFields::SYN != 0, flags & TcpFields::ACK != 0);
    let (fin, rst) = (flags & TcpFields::FIN != 0, flags & TcpFields::RST != 0);
    let (h, c, x) = (&mut f.history, &f.tcp, &mut f.dir[di].seq);
    match (syn, fin, rst) {
        (_, true, true) => {
            h.check(di, SEEN_FIN_RST, b'i');
        }
        (true, true, _) | (true, _, true) => {
            h.check(di, SEEN_MULTI, b'q');
        }
        (true, ..) => {
            let letter = if ack { b'h' } else { b's' };
            // Zeek numbers a SYN from itself (0) unless the side had closed or reset
            // (from a state other than inactive): a SYN is written again only then,
            // with another ISN than the first.
            let s = c.state(di);
            let again = s == state::CLOSED || (s == state::RESET && c.prev(di) != state::INACTIVE);
            if h.check(di, SEEN_SYN, letter) && again && x.syn_seq != Some(t.seq) {
                h.push(di, letter);
            }
        }
        (_, true, _) => {
            let end = t.seq.wrapping_add(len);
            if h.check(di, SEEN_FIN, b'f') && end != x.last_fin {
                h.push(di, b'f');
            }
            x.last_fin = end;
        }
        _ => {
            if h.check(di, SEEN_RST, b'r') && t.seq != x.last_rst {
                h.push(di, b'r');
            }
            x.last_rst = t.seq;
        }
    }
}

/// Accounts a TCP segment of flow `f` in direction `di`. Returns, for the application
/// layer, where in its payload the bytes new to the direction's stream begin (its
/// length when it brings none: a retransmission, or one that fills a gap after later
/// bytes were seen), whether a gap comes before them, and its place in the stream;
/// none for a segment without payload or before the stream's start.
#[inline]
pub(crate) fn on_segment(f: &mut Flow, d: &Decoded, ts: u64, di: usize, rings: &mut RingPool) -> Option<Fresh> {
    let t = &d.tcp;
    let flags = t.flags;
    let syn = flags & TcpFields::SYN != 0;
    let ack = flags & TcpFields::ACK != 0;
    let fin = flags & TcpFields::FIN != 0;
    let rst = flags & TcpFields::RST != 0;
    let len = d.payload_len;
    let x = &mut f.dir[di];
    x.tcp_flags |= flags;
    if syn {
        x.syn_cnt += 1;
    }
    if fin {
        x.fin_cnt += 1;
    }
    if rst {
        x.rst_cnt += 1;
    }
    if ack {
        x.ack_cnt += 1;
        if !syn && x.first_ack_ns == 0 {
            x.first_ack_ns = ts;
        }
        if len == 0 && !syn && !fin && !rst {
            x.ack_cnt_p += 1;
        }
    }
    // A later IP fragment has no TCP header: its bytes count, its sequence does not.
    // A fragmented segment is accounted once, whole, at the fragment that completes
    // it (`TcpComplete`); its other fragments (`TcpHeld`) count as packets only.
    let has_header = has_header(d);
    let mut data_seq = t.seq;
    if syn && has_header {
        data_seq = t.seq.wrapping_add(1);
        if x.seq.syn_seq.is_none() {
            x.seq.syn_seq = Some(t.seq);
            x.seq.start(data_seq);
        }
    }
    let mut class = None;
    let mut in_order = None;
    // Zeek's retransmission (`update_last_seq`, letter `t`): payload ending at or
    // below the highest sequence number this side sent (a FIN's included), not from a
    // side already reset. Holes filled late are retransmissions to Zeek.
    let mut zeek_retx = false;
    if len > 0 && has_header {
        let (next, started, start) = (x.seq.next(), x.seq.started, x.seq.offset_of(data_seq));
        let (c, new) = x.seq.on_data(data_seq, len);
        let last = next + f.tcp.fin[di] as u64;
        zeek_retx = f.tcp.state(di) != state::RESET
            && match start {
                // A RST's payload is not in the sequence space; Zeek distrusts a
                // RST more than 2^20 away.
                Some(s) if rst => s <= last && last - s <= 1 << 20,
                Some(s) => s + len as u64 + fin as u64 <= last,
                None => started,
            };
        if !rst {
            f.tcp.ep[di] |= EP_DATA;
        }
        // Bytes from the stream's end on: the whole segment in order, the new tail of
        // one that overlaps what was seen, or the whole of one beyond a gap.
        in_order = match start {
            // The stream starts at this segment: offset 0.
            None if !started => Some(Fresh::at(0)),
            None => None,
            Some(s) if s <= next && next < s + len as u64 => Some(Fresh { off: (next - s) as u32, seg_at: s, next }),
            Some(s) if s > next => Some(Fresh { off: 0, seg_at: s, next }),
            Some(s) => Some(Fresh { off: len, seg_at: s, next }),
        };
        x.bytes_uniq += new;
        match c {
            SegmentClass::Retransmission => {
                x.pkts_retx += 1;
                x.bytes_retx += len as u64;
            }
            SegmentClass::OutOfSequence => x.pkts_ooo += 1,
            _ => {}
        }
        class = Some(c);
    }

    let c = &mut f.tcp;
    if syn && !ack {
        c.syn[di] = true;
    }
    if syn && ack {
        c.synack[di] = true;
    }
    if di == 0 && ack && !syn && c.syn[0] && c.synack[1] {
        c.complete = true;
    }
    if has_header {
        zeek_segment(f, t, di, len, zeek_retx);
    }
    let c = &mut f.tcp;
    if fin {
        c.fin[di] = true;
    }
    if rst {
        c.rst[di] = true;
    }
    if f.full.is_some() {
        on_segment_e2e(f, d, ts, di, class, rings);
    }
    in_order
}

#[cfg(test)]
mod tests;
