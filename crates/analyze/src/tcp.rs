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
/// number (ISN + 1 when the SYN was seen), so wrap-around is handled once here.
#[derive(Clone, Debug, Default)]
pub struct SeqSpace {
    started: bool,
    base: u32,
    /// One past the highest payload byte seen.
    next: u64,
    holes: [(u64, u64); MAX_HOLES],
    nholes: u8,
    /// The ISN of the SYN this direction sent, if it sent one.
    pub syn_seq: Option<u32>,
    pub holes_dropped: u32,
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

    /// Bytes below `ack` never seen: the holes the other side acknowledged, and the
    /// bytes it acknowledged beyond the highest one seen (like Zeek's `missed_bytes`).
    /// Bounded by the hole list: holes forgotten when it overflowed are not counted.
    pub fn missed_below(&self, ack: u64) -> u64 {
        let holes: u64 = self.holes[..self.nholes as usize].iter().map(|&(s, e)| e.min(ack).saturating_sub(s)).sum();
        holes + ack.saturating_sub(self.next)
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
            let (hs, he) = self.holes[i];
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
        self.holes[self.nholes as usize] = (s, e);
        self.nholes += 1;
    }

    fn remove_hole(&mut self, i: usize) {
        let n = self.nholes as usize;
        self.holes.copy_within(i + 1..n, i);
        self.nholes -= 1;
    }
}

/// Connection-level TCP state, with index 0 the client and 1 the server.
#[derive(Clone, Debug, Default)]
pub struct TcpConn {
    /// A SYN without ACK was sent by this side.
    pub syn: [bool; 2],
    /// A SYN/ACK was sent by this side.
    pub synack: [bool; 2],
    pub fin: [bool; 2],
    pub rst: [bool; 2],
    /// The side whose RST came first.
    pub first_rst: Option<u8>,
    /// SYN, SYN/ACK and the client's ACK were seen: the three-way handshake.
    pub complete: bool,
}

impl TcpConn {
    /// Both sides sent FIN, or a side sent RST.
    pub fn closed(&self) -> bool {
        (self.fin[0] && self.fin[1]) || self.rst[0] || self.rst[1]
    }

    /// Zeek's `conn_state` (base/protocols/conn/main.zeek).
    pub fn conn_state(&self) -> &'static str {
        let orig_syn = self.syn[0];
        let resp_synack = self.synack[1];
        match (orig_syn, resp_synack) {
            (true, true) => match self.first_rst {
                Some(0) => "RSTO",
                Some(_) => "RSTR",
                None => match (self.fin[0], self.fin[1]) {
                    (true, true) => "SF",
                    (true, false) => "S2",
                    (false, true) => "S3",
                    (false, false) => "S1",
                },
            },
            (true, false) => {
                if self.rst[1] {
                    "REJ"
                } else if self.rst[0] {
                    "RSTOS0"
                } else if self.fin[0] {
                    "SH"
                } else {
                    "S0"
                }
            }
            (false, true) => {
                if self.rst[1] {
                    "RSTRH"
                } else if self.fin[1] {
                    "SHR"
                } else {
                    "OTH"
                }
            }
            (false, false) => "OTH",
        }
    }
}

/// Zeek's `history`: one letter per kind of event the first time it happens in a
/// direction, upper case for the client (originator), lower case for the server.
#[derive(Clone, Debug, Default)]
pub struct History {
    seen: [u16; 2],
    len: u8,
    buf: [u8; 24],
}

/// The letters, in the bit order of `History::seen`.
const LETTERS: &[u8] = b"shadfrtgw";

impl History {
    #[inline]
    fn add(&mut self, di: usize, letter: u8) {
        let bit = LETTERS.iter().position(|&l| l == letter).unwrap_or(0);
        if self.seen[di] & (1 << bit) == 0 && (self.len as usize) < self.buf.len() {
            self.seen[di] |= 1 << bit;
            self.buf[self.len as usize] = if di == 0 { letter.to_ascii_uppercase() } else { letter };
            self.len += 1;
        }
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
    if len > 0 && has_header {
        let (next, started, start) = (x.seq.next(), x.seq.started, x.seq.offset_of(data_seq));
        let (c, new) = x.seq.on_data(data_seq, len);
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
    if fin {
        c.fin[di] = true;
    }
    if rst {
        c.rst[di] = true;
        c.first_rst.get_or_insert(di as u8);
    }

    let h = &mut f.history;
    match (syn, ack) {
        (true, false) => h.add(di, b's'),
        (true, true) => h.add(di, b'h'),
        _ => {}
    }
    if ack && len == 0 && !syn && !fin && !rst {
        h.add(di, b'a');
    }
    if len > 0 {
        h.add(di, b'd');
    }
    if fin {
        h.add(di, b'f');
    }
    if rst {
        h.add(di, b'r');
    }
    match class {
        Some(SegmentClass::Retransmission) => h.add(di, b't'),
        Some(SegmentClass::AfterGap) => h.add(di, b'g'),
        _ => {}
    }
    if t.window == 0 && !rst && has_header {
        h.add(di, b'w');
    }
    if f.full.is_some() {
        on_segment_e2e(f, d, ts, di, class, rings);
    }
    in_order
}

#[cfg(test)]
mod tests;
