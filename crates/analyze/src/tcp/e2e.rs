//! The end-to-end and options sets of a TCP direction (Tstat's names in the logs): RTT
//! samples from ACKs and from timestamps, the segments in flight, windows and options,
//! and the classification of segments that are not plain new data.

use super::{has_header, SegmentClass};
use crate::flow::Flow;
use tapstat_decode::{Decoded, TcpFields};

/// A FIFO of at most `N` entries, oldest first, whose only entry while it holds one
/// is kept inline: the ring for more is boxed and taken from a [`RingPool`] only when a
/// second entry comes while one is held. Most TCP directions never have two segments
/// awaiting their ACK (13,690 of mix-small's 18,340 TCP flows have 1–3 packets), so
/// they never touch a ring, and [`TcpDir`] stays small. Entries beyond `len` are
/// never read, so a ring comes back from the pool as it was left.
#[derive(Clone, Debug, Default)]
struct Fifo<T, const N: usize> {
    one: T,
    ring: Option<Box<[T; N]>>,
    head: u8,
    len: u8,
}

impl<T: Copy + Default, const N: usize> Fifo<T, N> {
    #[inline]
    fn len(&self) -> usize {
        self.len as usize
    }

    /// The `k`-th oldest entry (`k < len`).
    #[inline]
    fn get(&self, k: usize) -> T {
        match &self.ring {
            Some(r) => r[(self.head as usize + k) % N],
            None => self.one,
        }
    }

    #[inline]
    fn get_mut(&mut self, k: usize) -> &mut T {
        match &mut self.ring {
            Some(r) => &mut r[(self.head as usize + k) % N],
            None => &mut self.one,
        }
    }

    /// Forgets the `n` oldest entries (`n <= len`).
    #[inline]
    fn pop_front(&mut self, n: usize) {
        self.head = ((self.head as usize + n) % N) as u8;
        self.len -= n as u8;
    }

    /// Appends `x`, forgetting the oldest entry when full; true if one was forgotten.
    #[inline]
    fn push(&mut self, x: T, pool: &mut Vec<Box<[T; N]>>) -> bool {
        match &mut self.ring {
            Some(r) => {
                let full = self.len as usize == N;
                if full {
                    self.head = ((self.head as usize + 1) % N) as u8;
                } else {
                    self.len += 1;
                }
                r[(self.head as usize + self.len as usize - 1) % N] = x;
                full
            }
            None if self.len == 0 => {
                self.one = x;
                self.len = 1;
                false
            }
            None => {
                self.spill(x, pool);
                false
            }
        }
    }

    /// A second entry while one is held inline: both go to a ring from `pool`.
    #[inline(never)]
    fn spill(&mut self, x: T, pool: &mut Vec<Box<[T; N]>>) {
        let mut r = pool.pop().unwrap_or_else(|| Box::new([T::default(); N]));
        r[self.head as usize % N] = self.one;
        r[(self.head as usize + 1) % N] = x;
        self.len = 2;
        self.ring = Some(r);
    }

    /// Empty, keeping the ring if it has one.
    #[inline]
    fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// Empty, its ring (if any) back to `pool`.
    #[inline]
    fn release(&mut self, pool: &mut Vec<Box<[T; N]>>) {
        self.clear();
        if let Some(r) = self.ring.take() {
            pool.push(r);
        }
    }
}

/// The rings of `Fifo`s of ended flows, for the next flows that need one: kept per
/// worker by the tracker, next to its pool of full states.
#[derive(Default)]
#[allow(clippy::vec_box)]
pub struct RingPool {
    inflight: Vec<Box<[InFlight; MAX_INFLIGHT]>>,
    ts: Vec<Box<[TsPending; TS_PENDING]>>,
}

/// What a side's SYN offered, as the options set reports it: a SYN's
/// [`TcpOptions`](tapstat_decode::TcpOptions) less its SACK blocks and timestamp
/// values (6 bytes instead of 16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynOptions {
    /// Maximum segment size; 0 when absent.
    pub mss: u16,
    /// Window scale shift (at most 14); meaningful when `has_wscale`.
    pub wscale: u8,
    pub has_wscale: bool,
    pub sack_perm: bool,
    pub has_ts: bool,
}

impl SynOptions {
    #[inline]
    pub fn of(o: &tapstat_decode::TcpOptions) -> SynOptions {
        SynOptions { mss: o.mss, wscale: o.wscale, has_wscale: o.has_wscale, sack_perm: o.sack_perm, has_ts: o.has_ts }
    }
}

/// An offset in a direction's sequence space, or none: an `Option<u64>` in 8 bytes
/// instead of 16 (offsets count bytes from the ISN and never reach `u64::MAX`), so
/// that [`TcpDir`] stays small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset(u64);

impl Offset {
    pub const NONE: Offset = Offset(u64::MAX);

    #[inline]
    pub fn some(x: u64) -> Offset {
        debug_assert!(x != u64::MAX);
        Offset(x)
    }

    #[inline]
    pub fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }
}

/// Segments in flight remembered per direction for RTT samples. Bounded: when full,
/// a new segment is not remembered (its ACK then gives no sample; counted in
/// `rtt_dropped`) until ACKs make room.
const MAX_INFLIGHT: usize = 32;

/// A data segment waiting for its ACK, in 12 bytes: the low 32 bits of its end
/// offset (compared with wrapping arithmetic: a window is far below 2^31), its
/// length with bit 31 set once it was retransmitted (Karn's rule: no sample), and
/// when it was sent, in µs from the flow's first packet.
#[derive(Clone, Copy, Debug, Default)]
struct InFlight {
    end: u32,
    len_retx: u32,
    sent_us: u32,
}

const RETX: u32 = 1 << 31;

/// TSvals awaiting their echo, per direction.
const TS_PENDING: usize = 8;

/// A TSval awaiting its echo, and when the probe first saw it.
#[derive(Clone, Copy, Debug, Default)]
struct TsPending {
    val: u32,
    ns: u64,
}

/// RTT from TCP timestamps (RFC 7323 §4.1): the time from the first segment that
/// carried a TSval to the first segment of the other side that echoes it in TSecr.
///
/// Only segments that the other side must acknowledge (data, SYN, FIN) enter: a pure
/// ACK's TSval is echoed whenever the other side next has something to send, which may
/// be minutes later. Unlike the sequence-number RTT this needs no Karn rule: a
/// retransmission carries a new TSval, so every echo names the transmission it answers.
#[derive(Clone, Debug, Default)]
pub struct TsEcho {
    /// (TSval, first time seen at the probe), oldest first.
    pending: Fifo<TsPending, TS_PENDING>,
    /// Samples in µs.
    pub rtt_us: crate::stats::Moments,
}

impl TsEcho {
    /// Back to no TSval pending and no sample, in place (keeping the ring, if any).
    #[inline]
    fn reset(&mut self) {
        self.pending.clear();
        self.rtt_us = Default::default();
    }

    /// A segment that must be acknowledged carried `tsval` at `now_ns`.
    #[inline]
    fn on_sent(&mut self, tsval: u32, now_ns: u64, pool: &mut RingPool) {
        let n = self.pending.len();
        // The same clock tick as the previous segment: its first sight stands.
        if n > 0 && self.pending.get(n - 1).val == tsval {
            return;
        }
        self.pending.push(TsPending { val: tsval, ns: now_ns }, &mut pool.ts);
    }

    /// The other side echoed `tsecr` at `now_ns`: a sample when it names a pending
    /// TSval; that one and every older one are done.
    #[inline]
    fn on_echo(&mut self, tsecr: u32, now_ns: u64) {
        for k in 0..self.pending.len() {
            let p = self.pending.get(k);
            if p.val == tsecr {
                self.rtt_us.add(now_ns.saturating_sub(p.ns).saturating_add(500) / 1000);
                self.pending.pop_front(k + 1);
                return;
            }
        }
    }
}

/// The end-to-end and options sets of one direction (Tstat's names in the logs).
#[derive(Clone, Debug)]
pub struct TcpDir {
    /// RTT samples: data segment of this direction → the ACK that covers exactly its
    /// end, both seen at the probe; sum and sum of squares in µs for mean and std.
    pub rtt_cnt: u64,
    pub rtt_sum_us: f64,
    pub rtt_sq_us: f64,
    pub rtt_min_us: u32,
    pub rtt_max_us: u32,
    pub rtt_dropped: u32,
    pub ttl_min: u8,
    pub ttl_max: u8,
    /// The window scale shift in effect for this side's windows: its SYN's once both
    /// SYNs offered scaling (RFC 7323 §2.2), 0 otherwise; set at each SYN so that a
    /// segment does not read both SYNs' options.
    pub scale: u8,
    /// Options this side put in its SYN (or SYN/ACK).
    pub syn_opts: Option<SynOptions>,
    /// Segments carrying SACK blocks.
    pub sack_cnt: u64,
    /// Smallest and largest payload of a data segment.
    pub seg_min: u32,
    pub seg_max: u32,
    /// Advertised receive window, scaled once both sides agreed on scaling (at most
    /// 65,535 << 14: a u32 holds it).
    pub win_min: u32,
    pub win_max: u32,
    pub win_0: u64,
    /// Bytes in flight (highest byte sent minus the other side's highest ACK), at
    /// each segment of new data (as Tstat: a retransmission or a keep-alive says
    /// nothing of the window); `cwin_ini` is the largest before the first ACK of data.
    /// Held at 4 GiB, `u32::MAX` (more can only be counted where the probe saw no ACK
    /// of a long flow; TCP itself never has 2 GiB in flight).
    pub cwin_min: u32,
    pub cwin_max: u32,
    pub cwin_ini: u32,
    pub first_data_acked: bool,
    /// Segments with payload and PSH, retransmissions left out.
    pub pkts_push: u64,
    /// The highest ACK (as an offset in this direction's sequence space) received
    /// from the other side.
    pub acked: Offset,
    /// Time of the SYN (or SYN/ACK) this side sent last, for the handshake RTTs.
    pub syn_ns: u64,
    /// Where this side's FIN ends (its offset + 1), once sent.
    pub fin_end: Offset,
    /// Out-of-sequence and repeated segments by cause (Tstat's classes, after Mellia et
    /// al., "Identification of out-of-sequence TCP segments"): retransmission after a
    /// timeout, fast retransmission (after 3 duplicate ACKs), network reordering,
    /// network duplicate, flow-control window probe, unnecessary retransmission after a
    /// timeout / a fast retransmit (the data had been acknowledged), unknown.
    pub pkts_rto: u64,
    pub pkts_fs: u64,
    pub pkts_reor: u64,
    pub pkts_dup: u64,
    pub pkts_fc: u64,
    pub pkts_unrto: u64,
    pub pkts_unfs: u64,
    pub pkts_unk: u64,
    /// SYNs sent again (same ISN).
    pub syn_retx: u64,
    /// Duplicate ACKs received in a row for this side's data, and how many there had
    /// been when the ACK last advanced.
    pub dup_acks: u32,
    pub prev_dup_acks: u32,
    /// The receive window this side advertised last (scaled).
    pub last_win: u32,
    /// Time of this side's previous data segment, and of its latest new data.
    pub last_tx_ns: u64,
    pub last_new_ns: u64,
    /// RTT from this side's TSvals echoed by the other side.
    pub ts: TsEcho,
    /// Segments in flight (data, SYN, FIN), oldest first.
    inflight: Fifo<InFlight, MAX_INFLIGHT>,
    inflight_base_ns: u64,
}

impl Default for TcpDir {
    fn default() -> Self {
        TcpDir {
            rtt_cnt: 0,
            rtt_sum_us: 0.0,
            rtt_sq_us: 0.0,
            rtt_min_us: u32::MAX,
            rtt_max_us: 0,
            rtt_dropped: 0,
            ttl_min: u8::MAX,
            ttl_max: 0,
            scale: 0,
            syn_opts: None,
            sack_cnt: 0,
            seg_min: u32::MAX,
            seg_max: 0,
            win_min: u32::MAX,
            win_max: 0,
            win_0: 0,
            cwin_min: u32::MAX,
            cwin_max: 0,
            cwin_ini: 0,
            first_data_acked: false,
            pkts_push: 0,
            acked: Offset::NONE,
            syn_ns: 0,
            fin_end: Offset::NONE,
            pkts_rto: 0,
            pkts_fs: 0,
            pkts_reor: 0,
            pkts_dup: 0,
            pkts_fc: 0,
            pkts_unrto: 0,
            pkts_unfs: 0,
            pkts_unk: 0,
            syn_retx: 0,
            dup_acks: 0,
            prev_dup_acks: 0,
            last_win: u32::MAX,
            last_tx_ns: 0,
            last_new_ns: 0,
            ts: TsEcho::default(),
            inflight: Fifo::default(),
            inflight_base_ns: 0,
        }
    }
}

impl TcpDir {
    /// Back to [`TcpDir::default`], in place, keeping the rings (if any): only their
    /// first `len` entries are ever read.
    pub fn reset(&mut self) {
        // Every field by name (no `..`): a field added later must be reset here too.
        let TcpDir {
            rtt_cnt,
            rtt_sum_us,
            rtt_sq_us,
            rtt_min_us,
            rtt_max_us,
            rtt_dropped,
            ttl_min,
            ttl_max,
            scale,
            syn_opts,
            sack_cnt,
            seg_min,
            seg_max,
            win_min,
            win_max,
            win_0,
            cwin_min,
            cwin_max,
            cwin_ini,
            first_data_acked,
            pkts_push,
            acked,
            syn_ns,
            fin_end,
            pkts_rto,
            pkts_fs,
            pkts_reor,
            pkts_dup,
            pkts_fc,
            pkts_unrto,
            pkts_unfs,
            pkts_unk,
            syn_retx,
            dup_acks,
            prev_dup_acks,
            last_win,
            last_tx_ns,
            last_new_ns,
            ts,
            inflight,
            inflight_base_ns,
        } = self;
        *rtt_cnt = 0;
        *rtt_sum_us = 0.0;
        *rtt_sq_us = 0.0;
        *rtt_min_us = u32::MAX;
        *rtt_max_us = 0;
        *rtt_dropped = 0;
        *ttl_min = u8::MAX;
        *ttl_max = 0;
        *scale = 0;
        *syn_opts = None;
        *sack_cnt = 0;
        *seg_min = u32::MAX;
        *seg_max = 0;
        *win_min = u32::MAX;
        *win_max = 0;
        *win_0 = 0;
        *cwin_min = u32::MAX;
        *cwin_max = 0;
        *cwin_ini = 0;
        *first_data_acked = false;
        *pkts_push = 0;
        *acked = Offset::NONE;
        *syn_ns = 0;
        *fin_end = Offset::NONE;
        *pkts_rto = 0;
        *pkts_fs = 0;
        *pkts_reor = 0;
        *pkts_dup = 0;
        *pkts_fc = 0;
        *pkts_unrto = 0;
        *pkts_unfs = 0;
        *pkts_unk = 0;
        *syn_retx = 0;
        *dup_acks = 0;
        *prev_dup_acks = 0;
        *last_win = u32::MAX;
        *last_tx_ns = 0;
        *last_new_ns = 0;
        ts.reset();
        inflight.clear();
        *inflight_base_ns = 0;
    }

    /// Empty, its rings back to `pool` (when its flow ends).
    pub(crate) fn release_rings(&mut self, pool: &mut RingPool) {
        self.inflight.release(&mut pool.inflight);
        self.ts.pending.release(&mut pool.ts);
    }

    /// Mean, standard deviation, min and max RTT in ms; `None` without samples.
    pub fn rtt_ms(&self) -> Option<(f64, f64, f64, f64)> {
        if self.rtt_cnt == 0 {
            return None;
        }
        let n = self.rtt_cnt as f64;
        let mean = self.rtt_sum_us / n;
        let var = (self.rtt_sq_us / n - mean * mean).max(0.0);
        Some((mean / 1e3, var.sqrt() / 1e3, self.rtt_min_us as f64 / 1e3, self.rtt_max_us as f64 / 1e3))
    }

    /// The standard deviation of the RTT samples in ms as Tstat writes `rtt_std` (its
    /// and tcptrace's `Stdev`): the sample one, n − 1 in the denominator, and 0 for
    /// fewer than three samples; `None` without samples. (The RTO estimate keeps the
    /// population deviation of [`TcpDir::rtt_ms`].)
    pub fn rtt_std_ms(&self) -> Option<f64> {
        match self.rtt_cnt {
            0 => None,
            1 | 2 => Some(0.0),
            n => {
                let n = n as f64;
                let var = ((self.rtt_sq_us - self.rtt_sum_us * self.rtt_sum_us / n) / (n - 1.0)).max(0.0);
                Some(var.sqrt() / 1e3)
            }
        }
    }

    /// RTT min and RTO in ns from the samples so far; RFC 6298's 1 s before the first,
    /// and no RTO below 200 ms (Linux's floor). Only segments out of sequence or sent
    /// again need them.
    fn rtt_min_rto(&self) -> (u64, u64) {
        match self.rtt_ms() {
            Some((avg, std, min, _)) => ((min * 1e6) as u64, (((avg + 4.0 * std) * 1e6) as u64).max(200_000_000)),
            None => (0, 1_000_000_000),
        }
    }

    /// Remembers a segment sent at `now_ns`. Send times are kept in µs from
    /// `inflight_base_ns`, which moves to the present whenever nothing is in flight;
    /// a segment unacknowledged for 71 minutes (2^32 µs) gives no sample anyway.
    fn remember(&mut self, end: u64, len: u32, now_ns: u64, pool: &mut RingPool) {
        if self.inflight.len() == 0 {
            self.inflight_base_ns = now_ns;
        }
        let rel = now_ns.saturating_sub(self.inflight_base_ns) / 1000;
        let Ok(sent_us) = u32::try_from(rel) else {
            self.rtt_dropped += self.inflight.len() as u32;
            self.inflight.clear();
            self.inflight_base_ns = now_ns;
            return self.remember(end, len, now_ns, pool);
        };
        // Full: the new segment is not remembered, the old ones are kept. Forgetting
        // the oldest instead would keep only segments sent while few were in flight,
        // before queues build up, and bias the RTT low on bulk transfers; keeping the
        // oldest samples every flight evenly (and keeps the segments most likely to be
        // sent again, whose first sending the retransmission classes need).
        if self.inflight.len() == MAX_INFLIGHT {
            self.rtt_dropped += 1;
            return;
        }
        let seg = InFlight { end: end as u32, len_retx: len.min(RETX - 1), sent_us };
        self.inflight.push(seg, &mut pool.inflight);
    }

    /// Karn's rule, as tcptrace applies it: after a retransmission no segment then in
    /// flight gives a sample.
    fn void_all(&mut self) {
        for k in 0..self.inflight.len() {
            self.inflight.get_mut(k).len_retx |= RETX;
        }
    }

    /// When the remembered segment ending at `end` was last sent.
    fn sent_ns(&self, end: u64) -> Option<u64> {
        (0..self.inflight.len())
            .map(|k| self.inflight.get(k))
            .find(|s| s.end == end as u32)
            .map(|s| self.inflight_base_ns + s.sent_us as u64 * 1000)
    }

    /// The segment ending at `end` was sent again at `now_ns`: remember when (its
    /// sample stays void).
    fn resent(&mut self, end: u64, now_ns: u64) {
        let rel = now_ns.saturating_sub(self.inflight_base_ns) / 1000;
        for k in 0..self.inflight.len() {
            let s = self.inflight.get_mut(k);
            if s.end == end as u32 {
                s.sent_us = rel.min(u32::MAX as u64) as u32;
            }
        }
    }

    /// A SYN or FIN (one sequence number, ending at `end`) was sent again: its
    /// sample is void (Karn).
    fn void(&mut self, end: u64) {
        for k in 0..self.inflight.len() {
            let seg = self.inflight.get_mut(k);
            if seg.end == end as u32 && seg.len_retx & !RETX == 1 {
                seg.len_retx |= RETX;
            }
        }
    }

    /// An ACK up to offset `ack` arrived at `now_us`: takes the sample of the segment
    /// whose end it is (if sent once) and forgets every segment it covers.
    fn acknowledged(&mut self, ack: u64, now_ns: u64) {
        let now_us = now_ns.saturating_sub(self.inflight_base_ns) / 1000;
        let a = ack as u32;
        while self.inflight.len() > 0 {
            let seg = self.inflight.get(0);
            if (a.wrapping_sub(seg.end) as i32) < 0 {
                break;
            }
            if seg.end == a && seg.len_retx & RETX == 0 {
                let rtt = now_us.saturating_sub(seg.sent_us as u64).min(u32::MAX as u64) as u32;
                self.rtt_cnt += 1;
                self.rtt_sum_us += rtt as f64;
                self.rtt_sq_us += (rtt as f64) * (rtt as f64);
                self.rtt_min_us = self.rtt_min_us.min(rtt);
                self.rtt_max_us = self.rtt_max_us.max(rtt);
            }
            self.inflight.pop_front(1);
        }
    }
}

/// Whether an ACK from side `di` of offset `a`, beyond `seen` (one past the highest byte
/// the probe saw from the other side), can acknowledge data the probe missed. Not when
/// the other side has sent its SYN and this side no SYN: the other side is in SYN-SENT,
/// where an ACK of anything but its SYN is unacceptable (RFC 9293 §3.10.7.3: a stale
/// ACK, answered by a RST); nor beyond the largest window this side offered (RFC 9293
/// §3.8.6: a sender stays within the receiver's window), taken at the largest scale
/// (14) while the scale is unknown. A stale ACK taken as missed data would count up to
/// 2 GiB in `bytes_missed`.
#[cold]
fn ack_plausible(full: &crate::flow::TcpFullState, di: usize, t: &TcpFields, a: u64, seen: u64) -> bool {
    let (me, peer) = (&full.tcp[di], &full.tcp[1 - di]);
    let syn = t.flags & TcpFields::SYN != 0;
    if peer.syn_opts.is_some() && me.syn_opts.is_none() && !syn {
        return false;
    }
    let known = me.syn_opts.is_some() && peer.syn_opts.is_some();
    let win = u64::from(me.win_max.max(u32::from(t.window) << me.scale));
    let bound = if known { win } else { win << 14 };
    let base = peer.acked.get().map_or(seen, |x| x.max(seen));
    // + 1: the ACK of a FIN is one past the data
    a <= base + bound + 1
}

/// The end-to-end and options analysis of a segment sent by side `di` of `f`.
#[inline]
pub(crate) fn on_segment_e2e(
    f: &mut Flow,
    d: &Decoded,
    ts: u64,
    di: usize,
    class: Option<SegmentClass>,
    rings: &mut RingPool,
) {
    let t = &d.tcp;
    let flags = t.flags;
    let syn = flags & TcpFields::SYN != 0;
    let ack = flags & TcpFields::ACK != 0;
    let len = d.payload_len;
    let has_header = has_header(d);
    let full = match f.full.as_mut() {
        Some(crate::flow::Full::Tcp(full)) => full,
        // The flow's first packet: the rest waits for `Flow::unfold`.
        Some(crate::flow::Full::First(first)) => {
            if let Some(pk) = first.as_mut() {
                pk.class = class;
            }
            return;
        }
        _ => return,
    };
    // Both sides offered window scaling in their SYNs (RFC 7323 §2.2): later windows
    // are scaled; the SYN's own window never is.
    let scale = full.win_scale(di);
    let peer = 1 - di;

    // The ACK this segment carries, for the other side's data.
    if ack && has_header {
        let seen = f.dir[peer].seq.next();
        if let Some(a) = f.dir[peer].seq.offset_of(t.ack).filter(|&a| a <= seen || ack_plausible(full, di, t, a, seen))
        {
            let p = &mut full.tcp[peer];
            let pure = len == 0 && flags & (TcpFields::SYN | TcpFields::FIN | TcpFields::RST) == 0;
            if p.acked.get().is_none_or(|old| a > old) {
                // Kept: a fast retransmission the probe sees after the ACK that made it
                // unnecessary was still triggered by these duplicates.
                p.prev_dup_acks = p.dup_acks;
                p.dup_acks = 0;
                p.acked = Offset::some(a);
                if a > 0 && !p.first_data_acked && f.dir[peer].bytes_all > 0 {
                    p.first_data_acked = true;
                }
                p.acknowledged(a, ts);
            } else if p.acked.get() == Some(a) && pure {
                p.dup_acks += 1;
            }
        }
        // Handshake RTTs: SYN → SYN/ACK (the server side of the probe), SYN/ACK →
        // the client's ACK (the client side).
        if syn && di == 1 && full.tcp[0].syn_ns != 0 && f.rtt_3whs[0] == 0 {
            f.rtt_3whs[0] = ts.saturating_sub(full.tcp[0].syn_ns).max(1);
        }
        if !syn && di == 0 && full.tcp[1].syn_ns != 0 && f.rtt_3whs[1] == 0 && f.tcp.syn[0] {
            f.rtt_3whs[1] = ts.saturating_sub(full.tcp[1].syn_ns).max(1);
        }
    }

    let o = &d.tcp_opts;
    if o.has_ts && has_header {
        if ack {
            full.tcp[peer].ts.on_echo(o.ts_ecr, ts);
        }
        if len > 0 || flags & (TcpFields::SYN | TcpFields::FIN) != 0 {
            full.tcp[di].ts.on_sent(o.ts_val, ts, rings);
        }
    }
    let peer_win = full.tcp[peer].last_win;
    let x = &mut f.dir[di];
    let e = &mut full.tcp[di];
    e.ttl_min = e.ttl_min.min(d.ttl);
    e.ttl_max = e.ttl_max.max(d.ttl);
    if !has_header {
        return;
    }
    // PSH on segments with payload, not counted again on a retransmission, as Tstat
    // counts it: ndpi__1kxun's 192.168.115.8:49597 sends its one request twice with
    // PSH (1), tcpdump__dns_tcp's server a FIN with PSH and no payload (not counted).
    if flags & TcpFields::PSH != 0 && len > 0 && class != Some(SegmentClass::Retransmission) {
        e.pkts_push += 1;
    }
    if syn {
        // The SYN takes one sequence number and is acknowledged like data: an RTT
        // sample as tcptrace and Tstat take it, void if the SYN was sent again.
        if e.syn_opts.is_some() {
            // A SYN seen again within half a millisecond was duplicated on the way
            // (or by the capture), as Tstat counts it; later, it was sent again.
            if ts.saturating_sub(e.syn_ns) < 500_000 {
                e.pkts_dup += 1;
            } else {
                e.syn_retx += 1;
            }
            e.void(0);
        } else if x.seq.syn_seq == Some(t.seq) {
            e.remember(0, 1, ts, rings);
        }
        e.syn_opts = Some(SynOptions::of(o));
        e.syn_ns = ts;
    }
    if o.sack_blocks > 0 {
        e.sack_cnt += 1;
    }
    if flags & TcpFields::RST == 0 {
        // At most 65,535 << 14 (the shift is capped at 14 when parsed).
        let win = if syn { t.window as u32 } else { (t.window as u32) << scale };
        e.last_win = win;
        e.win_min = e.win_min.min(win);
        e.win_max = e.win_max.max(win);
        if win == 0 {
            e.win_0 += 1;
        }
    }
    // Payload (and a FIN after it) start one past the SYN's sequence number.
    let data_seq = if syn { t.seq.wrapping_add(1) } else { t.seq };
    if len > 0 {
        e.seg_min = e.seg_min.min(len);
        e.seg_max = e.seg_max.max(len);
        if let Some(start) = x.seq.offset_of(data_seq) {
            let end = start + len as u64;
            classify(e, class, end, len, ts, peer_win);
            match class {
                Some(SegmentClass::InOrder | SegmentClass::AfterGap) => e.remember(end, len, ts, rings),
                // A retransmission (or a segment filling a gap) voids every sample
                // in flight, not only the segments it overlaps: an ACK that then
                // covers a later segment's end would time the whole recovery
                // (tcptrace's and Tstat's rule too).
                Some(_) => e.void_all(),
                None => {}
            }
            if matches!(class, Some(SegmentClass::InOrder | SegmentClass::AfterGap)) {
                let in_flight = x.seq.next().saturating_sub(e.acked.get().unwrap_or(0)).min(u32::MAX as u64) as u32;
                e.cwin_min = e.cwin_min.min(in_flight);
                e.cwin_max = e.cwin_max.max(in_flight);
                if !e.first_data_acked {
                    e.cwin_ini = e.cwin_ini.max(in_flight);
                }
            }
        }
    }
    // The FIN takes one sequence number after the data, and its ACK is a sample too
    // (as tcptrace and Tstat take it), void if the FIN was sent again.
    if flags & TcpFields::FIN != 0 {
        if let Some(start) = x.seq.offset_of(data_seq) {
            let end = start + len as u64 + 1;
            if e.fin_end.get().is_some() {
                e.void(end);
            } else {
                e.fin_end = Offset::some(end);
                e.remember(end, 1, ts, rings);
            }
        }
    }
    if syn {
        full.agree_scale();
    }
}

/// Classifies a data segment of side `e` that is not plain new data, or that was sent
/// into a closed window, as Tstat does (Mellia et al.): by whether its bytes had been
/// acknowledged, the duplicate ACKs received, its distance in time from the previous
/// segment and from the latest new data, and the RTO estimate of RFC 6298.
fn classify(e: &mut TcpDir, class: Option<SegmentClass>, end: u64, len: u32, ts: u64, peer_win: u32) {
    let gap = ts.saturating_sub(e.last_tx_ns);
    let since_new = ts.saturating_sub(e.last_new_ns);
    match class {
        // A probe into a zero window (RFC 9293 §3.8.6.1) is flow control, new or not.
        _ if peer_win == 0 && len <= 1 => e.pkts_fc += 1,
        Some(SegmentClass::InOrder | SegmentClass::AfterGap) | None => {}
        Some(SegmentClass::Retransmission) => {
            let (rtt_min, rto) = e.rtt_min_rto();
            // When these very bytes were last sent, if they are still remembered in flight.
            let sent = e.sent_ns(end);
            let since_sent = sent.map_or(since_new, |t0| ts.saturating_sub(t0));
            if end <= e.acked.get().unwrap_or(0) {
                if e.dup_acks.max(e.prev_dup_acks) >= 3 {
                    e.pkts_unfs += 1;
                } else {
                    e.pkts_unrto += 1;
                }
            } else if sent.is_some() && since_sent < rtt_min.max(1_000_000) / 2 {
                // The same bytes again, much sooner than any ACK could have come
                // back: the network (or the capture) duplicated them.
                e.pkts_dup += 1;
            } else if e.dup_acks >= 3 && since_sent < rto {
                e.pkts_fs += 1;
            } else if since_sent >= rto || gap >= rto {
                e.pkts_rto += 1;
            } else {
                e.pkts_unk += 1;
            }
            e.resent(end, ts);
        }
        Some(SegmentClass::OutOfSequence) => {
            let (rtt_min, rto) = e.rtt_min_rto();
            if since_new < rtt_min.max(1) {
                // It fills a gap opened less than an RTT ago: overtaken in the network.
                e.pkts_reor += 1;
            } else if e.dup_acks >= 3 {
                e.pkts_fs += 1;
            } else if since_new >= rto || gap >= rto {
                e.pkts_rto += 1;
            } else {
                e.pkts_unk += 1;
            }
        }
    }
    e.last_tx_ns = ts;
    if matches!(class, Some(SegmentClass::InOrder | SegmentClass::AfterGap)) {
        e.last_new_ns = ts;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_in_place_is_default() {
        let mut pool = RingPool::default();
        let mut d = TcpDir::default();
        d.remember(100, 100, 1_000_000, &mut pool);
        d.remember(200, 100, 2_000_000, &mut pool);
        d.acknowledged(100, 5_000_000);
        d.ts.on_sent(7, 1_000, &mut pool);
        d.pkts_rto = 3;
        d.acked = Offset::some(100);
        d.syn_opts = Some(Default::default());
        d.reset();
        // The rings and inline entries keep their old contents (never read beyond
        // their length).
        let mut want = TcpDir { inflight: d.inflight.clone(), ..Default::default() };
        want.inflight.clear();
        want.ts.pending = d.ts.pending.clone();
        want.ts.pending.clear();
        assert_eq!(format!("{d:?}"), format!("{want:?}"));
        // Back to the pool, the ring of segments in flight (two were remembered) is
        // handed to the next direction that needs one.
        assert!(d.inflight.ring.is_some() && d.ts.pending.ring.is_none());
        d.release_rings(&mut pool);
        assert!(d.inflight.ring.is_none() && pool.inflight.len() == 1);
        let mut e = TcpDir::default();
        e.remember(10, 10, 1_000, &mut pool);
        assert!(e.inflight.ring.is_none(), "one segment in flight needs no ring");
        e.remember(20, 10, 2_000, &mut pool);
        assert!(e.inflight.ring.is_some() && pool.inflight.is_empty());
        assert_eq!(e.sent_ns(10), Some(1_000));
        e.acknowledged(20, 9_000);
        assert_eq!((e.rtt_cnt, e.rtt_min_us), (1, 7));
    }
}
