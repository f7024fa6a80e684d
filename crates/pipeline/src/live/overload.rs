//! Overload control between acquisition and analysis (DNAC, §3,
//! Table 2): tail early dropping (TED) with open-loop priorities.
//!
//! A [`Controller`] lives in each acquisition thread and is asked about every frame
//! before it enters the worker's buffer. It counts each flow's packets in a small
//! direct-mapped table keyed by the symmetric hash the replay and RSS use
//! ([`tapstat_capture::live::frame_flow`]), and holds the current cut-off C: the
//! packets per flow that are analysed fully. While the buffer is calm C is unlimited
//! and every frame is analysed. Once per decision (a poll, or every
//! [`DECIDE_EVERY`] frames of a long one) [`next_cutoff`] looks at the buffer's
//! occupancy and whether it rose since the last decision: above the high-water mark
//! ([`HIGH`], half) and still filling, C falls (first to [`START`], then halving down
//! to [`FLOOR`]); above it but draining, C holds; above [`CRITICAL`] (three quarters)
//! it is the floor; below the low-water mark ([`LOW`], a quarter), while the buffer
//! does not rise, it doubles back up to unlimited. A packet of a flow beyond C
//! that is not a priority packet ([`Keep`]: SYN, FIN, RST, name services, the heads
//! of HTTP messages and TLS/QUIC handshakes, a flow's first N packets) is *counted*,
//! not analysed: the acquisition thread pushes a counted-only record (its headers and
//! its wire length, [`crate::live::buffer::Producer::push_counted`]), so its flow's record
//! keeps exact packets and wire bytes and says how many went unanalysed.
//!
//! A flow's count starts again at its SYN (a new connection on a reused 5-tuple), after
//! [`IDLE_NS`] of packet time without a packet, and when another flow takes its slot:
//! a flow may look younger than it is, never older.
//!
//! Why a counted-only record rather than a count kept on the acquisition side: the
//! flow's record is written by the analysis thread, which owns the flow table; a
//! record of 144 bytes instead of a full frame's (~1500) relieves the buffer tenfold
//! and needs no shared state between the two threads.
//!
//! Tails are *held*, not pushed one by one ([`Controller::hold`]): a counted-only
//! record still costs the analysis a decode and a flow lookup — measured, about half
//! of what a whole packet costs on mix-small — so one record per tail packet relieves
//! the analysis at most twofold. The controller adds a flow's tail packets up per
//! direction (packets, wire bytes, latest time) beside its slot, with the headers of
//! the first, and pushes one *tails* record for them ([`crate::live::buffer::Rec::Tails`])
//! after [`HOLD_MAX`] packets, [`HOLD_NS`] of packet time, before any packet of the
//! flow that goes into the buffer otherwise (so the analysis sees them in order), when
//! another flow takes the slot, once per [`HOLD_NS`] of packet time for all those
//! held longer (a flow gone silent), and at the end. A tails record is stamped with
//! the packet time of the frame that pushed it (the input's clock must not step back:
//! the analysis takes a step back of over a second for a clock reset), its trailer
//! with each direction's latest. The flow's record keeps exact packets and wire
//! bytes; a tails record that finds the buffer full loses its packets (buffer drops).

use crate::live::buffer::{Producer, Tails, COUNTED_BYTES};
use tapstat_capture::live::frame_flow;
use tapstat_capture::LinkType;

/// The cut-off when nothing is cut.
pub const UNLIMITED: u32 = u32::MAX;
/// The first cut-off when the buffer passes the high-water mark.
pub const START: u32 = 64;
/// The lowest cut-off.
pub const FLOOR: u32 = 4;
/// High-water mark: a fraction of the buffer's capacity, in 1/64ths (50%). Above it a
/// buffer that still fills is at risk; one that drains is absorbing a burst, and
/// cutting then would lose tails for nothing.
pub const HIGH: u64 = 32;
/// Low-water mark (25%).
pub const LOW: u64 = 16;
/// Above this (3/4) the buffer is about to overflow, draining or not: C falls to
/// [`FLOOR`] at once. (The headroom left must hold what arrives before the cut-off
/// takes effect, and the counted-only records of the tails after it while the
/// analysis catches up: at a sustained overload a few times the analysis's rate
/// they fill it too.)
pub const CRITICAL: u64 = 48;
/// A long poll decides again after this many frames.
pub const DECIDE_EVERY: u32 = 64;
/// A flow's count starts again after this long without a packet (packet time).
pub const IDLE_NS: u64 = 10_000_000_000;
/// Slots of the per-flow packet count table (a power of two).
const SLOTS: usize = 1 << 14;
/// The unit of a slot's last packet time: 2^20 ns (~1 ms).
const TIME_SHIFT: u32 = 20;
/// A flow's held tails go into the buffer at this many packets...
pub const HOLD_MAX: u32 = 32;
/// ...or once the first of them is this old (packet time).
pub const HOLD_NS: u64 = 1_000_000_000;

/// What to do when a worker's buffer fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overload {
    /// Tail early dropping: cut flows' tails first, keep priority packets.
    Ted,
    /// Plain buffer-full dropping (no controller).
    Drop,
}

impl Overload {
    pub fn name(self) -> &'static str {
        match self {
            Overload::Ted => "ted",
            Overload::Drop => "drop",
        }
    }
}

/// The open-loop priorities (DNAC's packet prioritization): packets never cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keep {
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    /// Name services: TCP or UDP port 53, UDP 5353 (mDNS), 5355 (LLMNR), 137 (NBNS).
    pub dns: bool,
    /// Heads: a TCP segment whose payload starts an HTTP/1 request or response or a
    /// TLS handshake record (ClientHello, ServerHello: the names), a QUIC long-header
    /// packet (its handshake).
    pub heads: bool,
    /// A flow's first this many packets (3 by default: the handshake; the messages
    /// after it are kept by `heads` where they start, which on mix-small leaves 26% of
    /// the packets analysed at the floor against 32% with first=8).
    pub first: u32,
}

impl Default for Keep {
    fn default() -> Self {
        Keep { syn: true, fin: true, rst: true, dns: true, heads: true, first: 3 }
    }
}

impl Keep {
    /// Parses `syn,fin,rst,dns,heads,first=N` (any subset; `none` for no priorities).
    pub fn parse(s: &str) -> Result<Keep, String> {
        let mut k = Keep { syn: false, fin: false, rst: false, dns: false, heads: false, first: 0 };
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "none" => {}
                "syn" => k.syn = true,
                "fin" => k.fin = true,
                "rst" => k.rst = true,
                "dns" => k.dns = true,
                "heads" => k.heads = true,
                _ => match w.strip_prefix("first=") {
                    Some(n) => k.first = n.parse().map_err(|_| format!("--keep: first={n}: not a number"))?,
                    None => {
                        return Err(format!("--keep: unknown rule {w:?} (syn, fin, rst, dns, heads, first=N, none)"))
                    }
                },
            }
        }
        Ok(k)
    }

    fn flags(&self) -> u8 {
        // RFC 9293 §3.1: FIN 0x01, SYN 0x02, RST 0x04.
        (self.fin as u8) | (self.syn as u8) << 1 | (self.rst as u8) << 2
    }
}

/// The overload policy of a live run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverloadConfig {
    pub policy: Overload,
    pub keep: Keep,
}

impl Default for OverloadConfig {
    fn default() -> Self {
        OverloadConfig { policy: Overload::Ted, keep: Keep::default() }
    }
}

/// The next cut-off after `c`, for a buffer holding `used` of `cap` bytes that held
/// `prev` at the last decision: the controller's one decision (pure, so it can be
/// tested on scripted occupancies). Above the high-water mark a buffer still filling
/// (`used >= prev`) is at risk and C falls; one draining is not, and C holds; above
/// [`CRITICAL`] C is [`FLOOR`]. Below the low-water mark, while the buffer does not
/// rise, C doubles back to unlimited; a buffer that rises again there holds C where it
/// is: under a sustained overload C settles where the analysis keeps up, instead of
/// going back to unlimited and letting whole tails fill the buffer again.
pub fn next_cutoff(c: u32, used: u64, prev: u64, cap: u64) -> u32 {
    if used * 64 > cap * CRITICAL {
        FLOOR
    } else if used * 64 > cap * HIGH {
        if used < prev {
            c
        } else if c == UNLIMITED {
            START
        } else {
            (c / 2).max(FLOOR)
        }
    } else if used * 64 < cap * LOW && c != UNLIMITED && used <= prev {
        if c >= START {
            UNLIMITED
        } else {
            c * 2
        }
    } else {
        c
    }
}

/// Whether a payload starts a message whose loss costs an event: an HTTP/1 request
/// line or status line, a TLS handshake record (content type 22, version 3.x), or
/// (over UDP) a QUIC long-header packet.
#[inline]
pub fn is_head(tcp: bool, payload: &[u8]) -> bool {
    if tcp {
        match payload {
            [0x16, 0x03, 0..=4, ..] => true,
            [a, b, c, d, ..] => matches!(
                &[*a, *b, *c, *d],
                b"GET " | b"POST" | b"HEAD" | b"PUT " | b"DELE" | b"OPTI" | b"PATC" | b"CONN" | b"TRAC" | b"HTTP"
            ),
            _ => false,
        }
    } else {
        // RFC 9000 §17.2: header form and fixed bit set, a version other than 0
        // (version negotiation).
        matches!(payload, [f, v0, v1, v2, v3, ..] if f & 0xc0 == 0xc0 && [*v0, *v1, *v2, *v3] != [0; 4])
    }
}

/// What becomes of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Into the buffer whole, analysed.
    Analyse,
    /// Analysed because it is a priority packet beyond the cut-off.
    Priority,
    /// A tail packet: a counted-only record.
    Count,
    /// A packet of a flow its worker shunted: a counted-only record.
    Shunted,
}

/// A slot of the per-flow count table.
#[derive(Clone, Copy, Default)]
struct Slot {
    /// The high half of the flow hash that owns it.
    tag: u32,
    /// The flow's packets so far.
    n: u32,
    /// Its last packet's time, in units of 2^[`TIME_SHIFT`] ns (wrapping).
    last: u32,
}

/// Most flows one acquisition thread holds as shunted; beyond it a worker's request is
/// refused (counted) and the flow goes on being analysed.
pub const MAX_SHUNTED: usize = 1 << 18;

/// The flow hash is already a mixed 64-bit hash: used as is.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, b: &[u8]) {
        for &x in b {
            self.0 = (self.0 << 8) | x as u64;
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

type Shunted = std::collections::HashMap<u64, u64, std::hash::BuildHasherDefault<IdHasher>>;

/// A flow's held tail packets (beside its count slot).
#[derive(Clone, Copy, Default)]
struct HeldTails {
    /// The high half of the flow hash of the flow they belong to.
    tag: u32,
    /// Packets, wire bytes and latest packet time per direction (`FrameFlow::fwd`).
    n: [u32; 2],
    bytes: [u32; 2],
    last: [u64; 2],
    /// The first one's time, direction, wire length and the bytes of its headers kept.
    first: u64,
    dir: u8,
    orig_len: u32,
    hlen: u8,
}

/// One acquisition thread's TED controller.
pub struct Controller {
    keep: Keep,
    flags: u8,
    table: Box<[Slot]>,
    /// HeldTails tails by slot, and the headers of the first of each.
    held: Box<[HeldTails]>,
    heads: Box<[[u8; COUNTED_BYTES]]>,
    /// Packets held now, and the slots that held some when last looked at (the
    /// sweep's list: scanning every slot once per second of packet time took a third
    /// of acquisition's time on mix-small replayed at 10x, 116 s of packet time).
    held_now: u64,
    holding: Vec<u32>,
    /// The last frame's slot, tag and direction (`usize::MAX`: a frame without a flow).
    last: (usize, u32, u8),
    /// The latest packet time seen, and that of the last sweep for old held tails.
    now_ts: u64,
    swept: u64,
    /// Packets and wire bytes of held tails lost at a full buffer.
    pub lost: (u64, u64),
    cutoff: u32,
    /// The buffer's occupancy at the last decision.
    prev: u64,
    /// Whether TED cuts tails (`--overload ted`); without it only shunting acts.
    ted: bool,
    /// Flows the worker shunted (DNAC's packet shunting): frame hash → packet time
    /// of the flow's latest packet (ns).
    shunted: Shunted,
    /// A shunted flow silent this long is forgotten (the shortest flow timeout: the
    /// worker may have ended it, and a new flow on its 5-tuple is analysed).
    shunt_idle_ns: u64,
    /// Shunt requests refused at [`MAX_SHUNTED`].
    pub shunts_refused: u64,
}

impl Controller {
    /// A TED controller with `keep`'s priorities.
    pub fn new(keep: Keep) -> Controller {
        Controller {
            keep,
            flags: keep.flags(),
            table: vec![Slot::default(); SLOTS].into_boxed_slice(),
            held: vec![HeldTails::default(); SLOTS].into_boxed_slice(),
            heads: vec![[0u8; COUNTED_BYTES]; SLOTS].into_boxed_slice(),
            held_now: 0,
            holding: Vec::new(),
            last: (usize::MAX, 0, 0),
            now_ts: 0,
            swept: 0,
            lost: (0, 0),
            cutoff: UNLIMITED,
            prev: 0,
            ted: true,
            shunted: Shunted::default(),
            shunt_idle_ns: u64::MAX,
            shunts_refused: 0,
        }
    }

    /// A controller that only shunts (`--overload drop` with `--shunt`).
    pub fn shunt_only() -> Controller {
        Controller { ted: false, ..Controller::new(Keep::default()) }
    }

    /// Forget a shunted flow after this much silence in packet time.
    pub fn shunt_idle(mut self, ns: u64) -> Controller {
        self.shunt_idle_ns = ns.max(1);
        self
    }

    /// Flows held as shunted now.
    #[cfg(test)]
    pub fn shunted_flows(&self) -> usize {
        self.shunted.len()
    }

    /// The worker asks that the flow of frame hash `hash` be only counted from now on
    /// (`now_ns`: the latest packet time acquisition has seen). False when refused:
    /// [`MAX_SHUNTED`] flows are held, none of them idle.
    pub fn shunt(&mut self, hash: u64, now_ns: u64) -> bool {
        if self.shunted.len() >= MAX_SHUNTED && !self.shunted.contains_key(&hash) {
            let idle = self.shunt_idle_ns;
            self.shunted.retain(|_, last| now_ns.saturating_sub(*last) <= idle);
            if self.shunted.len() >= MAX_SHUNTED {
                self.shunts_refused += 1;
                return false;
            }
        }
        self.shunted.insert(hash, now_ns);
        true
    }

    /// The current cut-off ([`UNLIMITED`] while nothing is cut).
    pub fn cutoff(&self) -> u32 {
        self.cutoff
    }

    /// Decides the cut-off for the next frames from the buffer's occupancy.
    #[inline]
    pub fn decide(&mut self, used: u64, cap: u64) {
        if self.ted {
            self.cutoff = next_cutoff(self.cutoff, used, self.prev, cap);
        }
        self.prev = used;
    }

    /// Counts frame `b` (packet time `ts_ns`) in its flow and says what becomes of it.
    /// Every frame is counted, cut-off or not, so a flow's position is known when
    /// overload starts (a flow that began before it is not taken for a new one). A
    /// frame without a flow key is analysed. A count starts again when another flow
    /// takes the slot (the slot keeps the high half of the hash), at a SYN without
    /// ACK, and after [`IDLE_NS`] without a packet: a flow may then look younger,
    /// never older.
    ///
    /// A shunted flow's packets are only counted, except its SYN, FIN and RST (the
    /// worker still sees it open and close); a SYN without ACK (a new connection on the
    /// 5-tuple), an RST, or a packet after [`Controller::shunt_idle`] of silence ends
    /// the shunt and is analysed.
    #[inline]
    pub fn verdict(&mut self, link: LinkType, b: &[u8], ts_ns: u64) -> Verdict {
        self.last.0 = usize::MAX;
        self.now_ts = self.now_ts.max(ts_ns);
        let Some(ff) = frame_flow(link, b) else { return Verdict::Analyse };
        self.last = (ff.hash as usize & (SLOTS - 1), (ff.hash >> 32) as u32, ff.fwd as u8);
        if !self.shunted.is_empty() {
            if let Some(last) = self.shunted.get_mut(&ff.hash) {
                let flags = ff.tcp_flags.unwrap_or(0);
                let idle = ts_ns.saturating_sub(*last) > self.shunt_idle_ns;
                // RFC 9293 §3.1: FIN 0x01, SYN 0x02, RST 0x04, ACK 0x10.
                let new_conn = flags & 0x12 == 0x02;
                if idle || new_conn || flags & 0x04 != 0 {
                    self.shunted.remove(&ff.hash);
                } else {
                    *last = (*last).max(ts_ns);
                    return if flags & 0x03 != 0 { Verdict::Analyse } else { Verdict::Shunted };
                }
            }
        }
        let slot = &mut self.table[ff.hash as usize & (SLOTS - 1)];
        let tag = (ff.hash >> 32) as u32;
        let now = (ts_ns >> TIME_SHIFT) as u32;
        let flags = ff.tcp_flags.unwrap_or(0);
        // RFC 9293 §3.1: SYN 0x02, ACK 0x10.
        let syn = flags & 0x12 == 0x02;
        if slot.tag != tag || syn || now.wrapping_sub(slot.last) as u64 > IDLE_NS >> TIME_SHIFT {
            *slot = Slot { tag, n: 0, last: now };
        }
        slot.n = slot.n.saturating_add(1);
        slot.last = now;
        let n = slot.n;
        if n <= self.cutoff {
            return Verdict::Analyse;
        }
        let head = || {
            self.keep.heads
                && ff.payload.is_some_and(|p| is_head(ff.tcp_flags.is_some(), b.get(p..).unwrap_or_default()))
        };
        if n <= self.keep.first || flags & self.flags != 0 || (self.keep.dns && ff.dns) || head() {
            Verdict::Priority
        } else {
            Verdict::Count
        }
    }

    /// Holds a tail packet (`Verdict::Count` from the last [`Controller::verdict`]):
    /// adds it to its flow's held tails, and pushes them as one tails record when they
    /// are [`HOLD_MAX`] or the first is [`HOLD_NS`] old. The packet is taken; held
    /// packets a push finds no room for are lost, counted in [`Controller::lost`].
    pub fn hold(&mut self, prod: &mut Producer, ts_ns: u64, orig_len: u32, b: &[u8]) {
        let (s, tag, dir) = self.last;
        if s == usize::MAX {
            if !prod.push_counted(ts_ns, orig_len, b) {
                self.lost.0 += 1;
                self.lost.1 += orig_len as u64;
            }
            return;
        }
        if self.held[s].n != [0, 0] && self.held[s].tag != tag {
            self.flush(prod, s);
        }
        if self.held[s].n == [0, 0] {
            if self.holding.len() >= 4 * SLOTS {
                // Slots flushed since they were listed, or listed twice.
                self.holding.sort_unstable();
                self.holding.dedup();
                let held = &self.held;
                self.holding.retain(|&s| held[s as usize].n != [0, 0]);
            }
            self.holding.push(s as u32);
            let hlen = b.len().min(COUNTED_BYTES);
            self.heads[s][..hlen].copy_from_slice(&b[..hlen]);
            self.held[s] = HeldTails { tag, first: ts_ns, dir, orig_len, hlen: hlen as u8, ..HeldTails::default() };
        }
        let h = &mut self.held[s];
        let d = dir as usize;
        h.n[d] += 1;
        h.bytes[d] = h.bytes[d].saturating_add(orig_len);
        h.last[d] = h.last[d].max(ts_ns);
        self.held_now += 1;
        if h.n[0] + h.n[1] >= HOLD_MAX || ts_ns.saturating_sub(h.first) >= HOLD_NS {
            self.flush(prod, s);
        }
        self.sweep(prod);
    }

    /// Pushes the held tails of the last frame's slot, before that frame goes into the
    /// buffer by another way (analysed, kept, shunted): the analysis then sees a
    /// flow's packets in order. HeldTails packets it finds no room for are lost.
    #[inline]
    pub fn release(&mut self, prod: &mut Producer) {
        if self.held_now == 0 {
            return;
        }
        match self.last.0 {
            usize::MAX => {}
            s if self.held[s].n == [0, 0] => {}
            s => {
                self.flush(prod, s);
            }
        }
        self.sweep(prod);
    }

    /// Pushes every held tail (at the end of the source). Where the buffer has no
    /// room, `wait` (which publishes and lets the analysis drain) is called, `tries`
    /// times at most in all; after that what does not fit is lost.
    pub fn release_all(&mut self, prod: &mut Producer, mut tries: u32, mut wait: impl FnMut(&mut Producer)) {
        self.holding.clear();
        for s in 0..SLOTS {
            if self.held[s].n == [0, 0] {
                continue;
            }
            while tries > 0 && !self.push_held(prod, s) {
                tries -= 1;
                wait(prod);
            }
            if tries > 0 {
                // Pushed above.
                self.held_now -= (self.held[s].n[0] + self.held[s].n[1]) as u64;
                self.held[s] = HeldTails::default();
            } else {
                self.flush(prod, s);
            }
        }
    }

    /// Packets held, not yet in the buffer.
    #[cfg(test)]
    pub fn held(&self) -> u64 {
        self.held_now
    }

    /// Once per [`HOLD_NS`] of packet time: pushes the held tails whose first is that
    /// old (their flow went silent since).
    #[inline]
    fn sweep(&mut self, prod: &mut Producer) {
        if self.now_ts.saturating_sub(self.swept) < HOLD_NS {
            return;
        }
        self.swept = self.now_ts;
        let mut holding = std::mem::take(&mut self.holding);
        holding.sort_unstable();
        holding.dedup();
        holding.retain(|&s| {
            let h = &self.held[s as usize];
            if h.n != [0, 0] && self.now_ts.saturating_sub(h.first) >= HOLD_NS {
                self.flush(prod, s as usize);
            }
            self.held[s as usize].n != [0, 0]
        });
        self.holding = holding;
    }

    /// Pushes slot `s`'s held tails as one record, or counts them lost; empties it.
    fn flush(&mut self, prod: &mut Producer, s: usize) -> bool {
        let ok = self.push_held(prod, s);
        let h = std::mem::take(&mut self.held[s]);
        let n = (h.n[0] + h.n[1]) as u64;
        if !ok {
            self.lost.0 += n;
            self.lost.1 += h.bytes[0] as u64 + h.bytes[1] as u64;
        }
        self.held_now -= n;
        ok
    }

    fn push_held(&self, prod: &mut Producer, s: usize) -> bool {
        let h = &self.held[s];
        if h.n == [0, 0] {
            return true;
        }
        let (same, rev) = (h.dir as usize, 1 - h.dir as usize);
        let tails =
            Tails { same: (h.n[same], h.bytes[same], h.last[same]), rev: (h.n[rev], h.bytes[rev], h.last[rev]) };
        prod.push_tails(self.now_ts, h.orig_len, &self.heads[s][..h.hlen as usize], &tails)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tapstat_frames::{Eth, Ipv4, Tcp, Udp};

    /// The link layer of the frames below: zero MAC addresses, no padding.
    const ZERO_MACS: Eth = Eth { dst: [0; 6], src: [0; 6], min_len: 0 };

    /// An IPv4 header from 10.0.0.1 to `dst` with DF set, id 0, checksum 0.
    fn ip_to(dst: [u8; 4], proto: u8) -> Ipv4 {
        Ipv4 { src: [10, 0, 0, 1], dst, id: 0, df: true, ..Ipv4::new(proto) }
    }

    /// An Ethernet/IPv4/TCP frame from 10.0.0.1:`sport` to 10.0.0.2:443 with `flags`
    /// and `payload` (sequence and acknowledgment numbers 0, window 0).
    fn seg(sport: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
        let t = Tcp { seq: 0, ack: 0, flags, window: 0, ..Tcp::new(sport, 443) };
        ZERO_MACS.build(0x0800, &ip_to([10, 0, 0, 2], 6).build(&t.build(payload)))
    }

    fn tcp(sport: u16, flags: u8) -> Vec<u8> {
        seg(sport, flags, &[])
    }

    /// An Ethernet/IPv4/UDP frame between 10.0.0.1:`sport` and 10.0.0.9:`dport`; its IP
    /// and UDP lengths count no payload.
    fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let u = Udp { len: Some(8), ..Udp::new(sport, dport) };
        ZERO_MACS.build(0x0800, &Ipv4 { total_len: Some(28), ..ip_to([10, 0, 0, 9], 17) }.build(&u.build(payload)))
    }

    const E: LinkType = LinkType::ETHERNET;

    /// The cut-offs a run of decisions gives, from unlimited and an empty buffer.
    fn run(script: &[u64], cap: u64) -> Vec<u32> {
        let (mut c, mut prev) = (UNLIMITED, 0);
        script
            .iter()
            .map(|&used| {
                c = next_cutoff(c, used, prev, cap);
                prev = used;
                c
            })
            .collect()
    }

    #[test]
    fn scripted_occupancy_moves_the_cut_off() {
        let u = UNLIMITED;
        // Calm, then over the high-water mark and still filling, staying high, in
        // between, falling.
        let script =
            [100, 400, 450, 550, 600, 650, 650, 650, 700, 800, 800, 600, 400, 200, 200, 150, 100, 0, 0, 0, 600];
        assert_eq!(run(&script, 1000), [u, u, u, 64, 32, 16, 8, 4, 4, 4, 4, 4, 4, 8, 16, 32, 64, u, u, u, 64]);
        // Past three quarters: the floor at once.
        assert_eq!(run(&[600, 800], 1000), [64, FLOOR]);
        // Exactly at a mark: no change.
        assert_eq!(next_cutoff(64, 500, 450, 1000), 64);
        assert_eq!(next_cutoff(u, 500, 450, 1000), u);
        assert_eq!(next_cutoff(64, 250, 300, 1000), 64);
        assert_eq!(next_cutoff(64, 750, 700, 1000), 32);
    }

    #[test]
    fn a_draining_buffer_is_not_cut_harder() {
        let u = UNLIMITED;
        // Over the high-water mark but draining: the cut-off holds where it is.
        let script = [600, 650, 630, 620, 640, 630, 590, 560, 540, 400, 240];
        assert_eq!(run(&script, 1000), [64, 32, 32, 32, 16, 16, 16, 16, 16, 16, 32]);
        // A buffer above the mark and draining at the first decision: nothing cut.
        assert_eq!(next_cutoff(u, 650, 700, 1000), u);
        // Above three quarters, draining or not, or full (frames dropped): the floor.
        assert_eq!(next_cutoff(u, 800, 900, 1000), FLOOR);
        assert_eq!(next_cutoff(64, 1000, 1000, 1000), FLOOR);
        assert_eq!(next_cutoff(64, 750, 760, 1000), 64);
        // Below the low-water mark: relaxed while not rising, held while rising.
        assert_eq!(next_cutoff(8, 200, 210, 1000), 16);
        assert_eq!(next_cutoff(8, 0, 0, 1000), 16);
        assert_eq!(next_cutoff(8, 200, 150, 1000), 8);
        assert_eq!(run(&[600, 800, 200, 100, 150, 200, 150, 100, 0], 1000), [64, 4, 8, 16, 16, 16, 32, 64, u]);
    }

    #[test]
    fn priority_packets_are_never_cut_and_heads_are_kept() {
        use Verdict::*;
        // first=3, below the floor of the cut-off: the cut-off decides from packet 5.
        let mut k = Controller::new(Keep { first: 3, ..Keep::default() });
        k.cutoff = FLOOR;
        let v: Vec<Verdict> = (0..8).map(|_| k.verdict(E, &tcp(1000, 0x10), 0)).collect();
        assert_eq!(v, [Analyse, Analyse, Analyse, Analyse, Count, Count, Count, Count]);
        for flags in [0x12, 0x11, 0x04, 0x14, 0x01] {
            assert_eq!(k.verdict(E, &tcp(1000, flags), 0), Priority, "flags {flags:#x}");
        }
        assert_eq!(k.verdict(E, &tcp(1000, 0x18), 0), Count);
        // DNS over TCP, beyond the cut-off.
        for _ in 0..10 {
            assert_ne!(k.verdict(E, &tcp(53, 0x18), 0), Count);
        }
        // A cut-off below first=N: the first N are still kept.
        let mut k = Controller::new(Keep { first: 6, ..Keep::default() });
        k.cutoff = FLOOR;
        let v: Vec<Verdict> = (0..8).map(|_| k.verdict(E, &tcp(2000, 0x10), 0)).collect();
        assert_eq!(v, [Analyse, Analyse, Analyse, Analyse, Priority, Priority, Count, Count]);
        // No priorities: only the cut-off.
        let mut k = Controller::new(Keep::parse("none").unwrap());
        k.cutoff = FLOOR;
        let v: Vec<Verdict> = (0..6).map(|_| k.verdict(E, &tcp(3000, 0x10), 0)).collect();
        assert_eq!(v[4..], [Count, Count]);
        // Unlimited: everything analysed, but counted, so a flow's age is known later.
        let mut k = Controller::new(Keep::default());
        for _ in 0..10 {
            assert_eq!(k.verdict(E, &tcp(4000, 0x10), 0), Analyse);
        }
        k.cutoff = FLOOR;
        assert_eq!(k.verdict(E, &tcp(4000, 0x10), 0), Count);
        // No flow key (ARP): analysed.
        let mut arp = vec![0u8; 12];
        arp.extend_from_slice(&[0x08, 0x06, 0, 0]);
        assert_eq!(k.verdict(E, &arp, 0), Analyse);
    }

    #[test]
    fn heads_of_http_and_tls_messages_and_name_services_are_kept() {
        use Verdict::*;
        let mut k = Controller::new(Keep::default());
        for _ in 0..20 {
            k.verdict(E, &tcp(5000, 0x10), 0);
        }
        k.cutoff = FLOOR;
        // Deep in a persistent connection: the next request and its response's head
        // are kept, the body is not.
        assert_eq!(k.verdict(E, &seg(5000, 0x18, b"GET /next HTTP/1.1\r\n"), 0), Priority);
        assert_eq!(k.verdict(E, &seg(5000, 0x18, b"HTTP/1.1 200 OK\r\n"), 0), Priority);
        assert_eq!(k.verdict(E, &seg(5000, 0x10, b"<html><body>"), 0), Count);
        // A TLS handshake record (a late ClientHello), not application data.
        assert_eq!(k.verdict(E, &seg(5000, 0x18, &[0x16, 0x03, 0x01, 0x02, 0x00]), 0), Priority);
        assert_eq!(k.verdict(E, &seg(5000, 0x18, &[0x17, 0x03, 0x03, 0x02, 0x00]), 0), Count);
        // Without the rule: cut.
        let mut k = Controller::new(Keep::parse("syn,first=8").unwrap());
        for _ in 0..20 {
            k.verdict(E, &tcp(5000, 0x10), 0);
        }
        k.cutoff = FLOOR;
        assert_eq!(k.verdict(E, &seg(5000, 0x18, b"GET / HTTP/1.1\r\n"), 0), Count);
        // mDNS, LLMNR, NBNS and DNS over UDP: long-lived 5-tuples, every packet kept.
        let mut k = Controller::new(Keep::default());
        k.cutoff = FLOOR;
        for port in [53, 5353, 5355, 137] {
            let v: Vec<Verdict> = (0..12).map(|_| k.verdict(E, &udp(port, port, &[0; 12]), 0)).collect();
            assert!(v[8..].iter().all(|&v| v == Priority), "port {port}: {v:?}");
        }
        let v: Vec<Verdict> = (0..12).map(|_| k.verdict(E, &udp(4000, 4001, &[0; 12]), 0)).collect();
        assert_eq!(v[8..], [Count; 4]);
        // A QUIC long header (an Initial) is a head; a short header is not.
        let mut init = vec![0xc3, 0, 0, 0, 1];
        init.extend_from_slice(&[0; 8]);
        assert_eq!(k.verdict(E, &udp(4000, 4001, &init), 0), Priority);
        assert_eq!(k.verdict(E, &udp(4000, 4001, &[0x43, 1, 2, 3, 4, 5]), 0), Count);
    }

    #[test]
    fn a_syn_or_a_pause_starts_a_flow_again() {
        use Verdict::*;
        let mut k = Controller::new(Keep { first: 2, ..Keep::parse("none").unwrap() });
        for _ in 0..10 {
            k.verdict(E, &tcp(6000, 0x10), 0);
        }
        k.cutoff = FLOOR;
        assert_eq!(k.verdict(E, &tcp(6000, 0x10), 0), Count);
        // A new connection on the same 5-tuple: counted from its SYN.
        let v: Vec<Verdict> = (0..6).map(|i| k.verdict(E, &tcp(6000, if i == 0 { 0x02 } else { 0x10 }), 0)).collect();
        assert_eq!(v, [Analyse, Analyse, Analyse, Analyse, Count, Count]);
        // A SYN/ACK does not start it again.
        assert_eq!(k.verdict(E, &tcp(6000, 0x12), 0), Count);
        // Over IDLE_NS later: a new flow; within it: the same one.
        let t = IDLE_NS + (2 << TIME_SHIFT);
        let v: Vec<Verdict> = (0..6).map(|_| k.verdict(E, &tcp(6000, 0x10), t)).collect();
        assert_eq!(v, [Analyse, Analyse, Analyse, Analyse, Count, Count]);
        assert_eq!(k.verdict(E, &tcp(6000, 0x10), t + IDLE_NS / 2), Count);
    }

    #[test]
    fn a_shunted_flow_is_counted_until_it_ends() {
        use Verdict::*;
        let eth = LinkType::ETHERNET;
        let hash = |b: &[u8]| frame_flow(eth, b).unwrap().hash;
        for mut k in [Controller::new(Keep::default()).shunt_idle(1000), Controller::shunt_only().shunt_idle(1000)] {
            assert_eq!(k.verdict(eth, &tcp(5000, 0x10), 10), Analyse);
            assert!(k.shunt(hash(&tcp(5000, 0x10)), 10));
            // Data both ways is counted; FIN is analysed; other flows are not touched.
            assert_eq!(k.verdict(eth, &tcp(5000, 0x18), 20), Shunted);
            assert_eq!(k.verdict(eth, &tcp(5001, 0x18), 20), Analyse);
            assert_eq!(k.verdict(eth, &tcp(5000, 0x11), 30), Analyse);
            assert_eq!(k.verdict(eth, &tcp(5000, 0x10), 40), Shunted);
            // A new SYN on the 5-tuple ends the shunt.
            assert_eq!(k.verdict(eth, &tcp(5000, 0x02), 50), Analyse);
            assert_eq!(k.verdict(eth, &tcp(5000, 0x10), 60), Analyse);
            // So do an RST and a silence longer than the idle time.
            assert!(k.shunt(hash(&tcp(5000, 0x10)), 60));
            assert_eq!(k.verdict(eth, &tcp(5000, 0x14), 70), Analyse);
            assert_eq!(k.verdict(eth, &tcp(5000, 0x10), 80), Analyse);
            assert!(k.shunt(hash(&tcp(5000, 0x10)), 80));
            assert_eq!(k.verdict(eth, &tcp(5000, 0x10), 1080), Shunted);
            assert_eq!(k.verdict(eth, &tcp(5000, 0x10), 2081), Analyse);
            assert_eq!(k.shunted_flows(), 0);
        }
        // Without TED the cut-off never falls.
        let mut k = Controller::shunt_only();
        k.decide(1000, 1000);
        assert_eq!(k.cutoff(), UNLIMITED);
    }

    #[test]
    fn the_shunted_set_is_bounded_and_forgets_idle_flows_first() {
        let mut k = Controller::shunt_only().shunt_idle(100);
        for h in 0..MAX_SHUNTED as u64 {
            assert!(k.shunt(h, 0));
        }
        // Full, nothing idle yet: refused and counted.
        assert!(!k.shunt(u64::MAX, 50));
        assert_eq!(k.shunts_refused, 1);
        // Later every held flow is idle: they go, the new one comes in.
        assert!(k.shunt(u64::MAX, 500));
        assert_eq!(k.shunted_flows(), 1);
    }

    /// What the acquisition loop does with a frame: verdict, then hold or push.
    fn admit(k: &mut Controller, p: &mut Producer, b: &[u8], ts: u64) -> Verdict {
        let v = k.verdict(E, b, ts);
        if v == Verdict::Count {
            k.hold(p, ts, b.len() as u32, b);
        } else {
            k.release(p);
            assert!(p.push(ts, b.len() as u32, b));
        }
        v
    }

    /// `f` the other way: addresses and ports swapped.
    fn back(mut f: Vec<u8>) -> Vec<u8> {
        let (a, b) = f[26..34].split_at_mut(4);
        a.swap_with_slice(b);
        let (a, b) = f[34..38].split_at_mut(2);
        a.swap_with_slice(b);
        f
    }

    #[test]
    fn held_tails_go_into_the_buffer_as_one_record_per_flow_in_order() {
        use crate::live::buffer::{packet_buffer, Rec};
        let (mut p, mut c) = packet_buffer(1 << 20);
        let mut k = Controller::new(Keep { first: 0, ..Keep::parse("fin").unwrap() });
        k.cutoff = FLOOR;
        let data = seg(7000, 0x10, &[0; 100]);
        let mut got = Vec::new();
        // 4 analysed, then 40 tails both ways (30 out, 10 back), then a FIN.
        for i in 0..44u64 {
            let f = if i >= 4 && i % 4 == 1 { back(data.clone()) } else { data.clone() };
            admit(&mut k, &mut p, &f, 1000 + i);
        }
        assert_eq!(k.held(), 8, "32 went in as one record, 8 are held");
        assert_eq!(admit(&mut k, &mut p, &tcp(7000, 0x11), 2000), Verdict::Priority);
        assert_eq!(k.held(), 0);
        p.publish();
        c.read(usize::MAX, E, |m, b, rec| got.push((m.ts_ns, b.len(), rec)));
        let kinds: Vec<&str> = got
            .iter()
            .map(|g| match g.2 {
                Rec::Whole => "w",
                Rec::Counted => "c",
                Rec::Tails(_) => "t",
            })
            .collect();
        assert_eq!(kinds, ["w", "w", "w", "w", "t", "t", "w"]);
        let (Rec::Tails(a), Rec::Tails(b)) = (got[4].2, got[5].2) else { unreachable!() };
        let len = data.len() as u32;
        // The first held packet went out: the record's headers are of that direction.
        assert_eq!((a.packets(), b.packets()), (32, 8));
        assert_eq!(a.same.0 + b.same.0, 30);
        assert_eq!(a.rev.0 + b.rev.0, 10);
        assert_eq!(a.bytes() + b.bytes(), 40 * len as u64);
        // Stamped with the time of the frame that pushed them (the input's clock goes
        // on), each direction's latest time in the trailer.
        assert_eq!((got[4].0, got[4].1), (1035, COUNTED_BYTES.min(data.len())));
        assert_eq!((got[5].0, b.same.2.max(b.rev.2)), (2000, 1043));
        assert_eq!(k.lost, (0, 0));
    }

    #[test]
    fn held_tails_go_in_at_the_end_after_a_second_and_when_another_flow_takes_the_slot() {
        use crate::live::buffer::{packet_buffer, Rec};
        let (mut p, mut c) = packet_buffer(1 << 20);
        let mut k = Controller::new(Keep::parse("none").unwrap());
        k.cutoff = FLOOR;
        for i in 0..10 {
            admit(&mut k, &mut p, &tcp(8000, 0x10), i);
        }
        assert_eq!(k.held(), 6);
        // The first held one is HOLD_NS old: all go in with this one.
        admit(&mut k, &mut p, &tcp(8000, 0x10), HOLD_NS + 4);
        assert_eq!(k.held(), 0);
        // Another flow on the same slot (a forged tag) pushes them out first.
        admit(&mut k, &mut p, &tcp(8000, 0x10), HOLD_NS + 5);
        let s = k.last.0;
        k.held[s].tag ^= 1;
        admit(&mut k, &mut p, &tcp(8000, 0x10), HOLD_NS + 6);
        assert_eq!(k.held(), 1);
        // The end of the source: whatever is held goes in.
        k.release_all(&mut p, 1, |_| {});
        assert_eq!(k.held(), 0);
        p.publish();
        let mut n = Vec::new();
        c.read(usize::MAX, E, |_, _, rec| {
            if let Rec::Tails(t) = rec {
                n.push(t.packets())
            }
        });
        assert_eq!(n, [7, 1, 1]);
        // A full buffer: held tails that find no room are lost, and counted.
        let (mut p, _c) = packet_buffer(1 << 16);
        while p.push(0, 1500, &[0; 1500]) {}
        while p.push(0, 1, &[0; 1]) {}
        let mut k = Controller::new(Keep::parse("none").unwrap());
        k.cutoff = FLOOR;
        for i in 0..40 {
            let v = k.verdict(E, &tcp(9000, 0x10), i);
            if v == Verdict::Count {
                k.hold(&mut p, i, 60, &tcp(9000, 0x10));
            }
        }
        assert_eq!((k.lost.0, k.held()), (32, 4));
        k.release_all(&mut p, 3, |_| {});
        assert_eq!(k.lost, (36, 36 * 60));
    }

    #[test]
    fn keep_rules_parse() {
        assert_eq!(Keep::parse("syn,fin,rst,dns,heads,first=3").unwrap(), Keep::default());
        let syn = Keep { syn: true, fin: false, rst: false, dns: false, heads: false, first: 0 };
        assert_eq!(Keep::parse("syn").unwrap(), syn);
        assert!(Keep::parse("syn,ack").is_err() && Keep::parse("first=x").is_err());
    }

    #[test]
    fn heads_are_recognised() {
        assert!(is_head(true, b"POST /x HTTP/1.1"));
        assert!(is_head(true, b"HTTP/1.0 404"));
        assert!(is_head(true, &[0x16, 0x03, 0x03, 0, 5]));
        assert!(!is_head(true, &[0x16, 0x03, 0x09]));
        assert!(!is_head(true, b"GE"));
        assert!(!is_head(true, b"get / HTTP/1.1"));
        assert!(!is_head(false, b"GET / HTTP/1.1"));
        // QUIC version negotiation (version 0) is not a handshake.
        assert!(!is_head(false, &[0xc0, 0, 0, 0, 0, 1]));
    }
}
