//! The large per-worker packet buffer between an acquisition thread and its analysis
//! thread: a lock-free single-producer/single-consumer ring of bytes (DPDKStat's
//! "large buffer", §3.2: absorb processing jitter and bursts, about a
//! second of traffic).
//!
//! Frames are stored as records: a 16-byte header (capture time in ns, original
//! length, captured length) and the captured bytes, padded to 16 bytes. A record
//! never wraps: when it does not fit before the end of the ring, a pad header
//! (captured length `u32::MAX`) fills the rest and the record starts at 0. Because
//! every record is a multiple of 16 bytes, the space left at the end is too.
//!
//! A *counted-only* record (the overload controller's tail packet)
//! is a frame's first [`COUNTED_BYTES`] bytes, enough for its headers, with the
//! [`COUNTED`] bit set in the captured length; the original length stays the wire
//! length. The consumer hands it out as [`Rec::Counted`] with the captured length
//! without the bit. Captured lengths are below 2^30 (frames are at most a few
//! hundred KB), so the bits are free; the pad marker is checked first.
//!
//! A *tails* record (bit [`TAILS`] beside [`COUNTED`]) stands for several tail
//! packets of one flow that the controller held and counted
//! ([`crate::live::overload::Controller::hold`]): one of them's headers, then a
//! [`TAILS_BYTES`]-byte trailer with the packets, wire bytes and latest time of each
//! direction ([`Tails`]). The consumer hands it out as [`Rec::Tails`].
//!
//! The producer writes records beyond `tail` and publishes them with one release
//! store per batch; the consumer reads up to `tail` and frees space with one release
//! store of `head` per batch. A full buffer drops the frame (counted by the caller).
//!
//! Queueing delay, sampled ([`packet_buffer_sampled`]): every K-th record pushed, the
//! producer notes its end position and the time (a monotonic clock shared by both
//! ends) in a small SPSC ring beside the buffer; the consumer, once its head passes
//! that position — the record's callback, its analysis, has returned — records the
//! time since. One clock read per K records on each side, none while idle, one
//! comparison per record.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tapstat_capture::{FrameMeta, LinkType};

use crate::PacketTimer;

const HDR: usize = 16;
const PAD: u32 = u32::MAX;
/// The bit of the captured length that marks a counted-only record.
pub const COUNTED: u32 = 1 << 31;
/// Bytes a counted-only record keeps of its frame: the outer headers (Ethernet, two
/// VLAN tags, IPv6 and a TCP header with options fit in 128).
pub const COUNTED_BYTES: usize = 128;
/// The bit of the captured length that marks a tails record (with [`COUNTED`]).
pub const TAILS: u32 = 1 << 30;
/// Bytes of a tails record's trailer.
pub const TAILS_BYTES: usize = 32;

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rec {
    /// A frame, to be analysed.
    Whole,
    /// A counted-only record: one packet, its headers and wire length.
    Counted,
    /// A tails record: the packets of one flow the controller held, both directions.
    Tails(Tails),
}

impl Rec {
    /// Counted-only or tails: not to be analysed.
    pub fn counted(self) -> bool {
        self != Rec::Whole
    }
}

/// The tail packets of one flow a tails record stands for: `same` in the direction of
/// the record's headers, `rev` in the other; packets, wire bytes, latest packet time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tails {
    pub same: (u32, u32, u64),
    pub rev: (u32, u32, u64),
}

impl Tails {
    fn encode(&self) -> [u8; TAILS_BYTES] {
        let mut t = [0u8; TAILS_BYTES];
        t[0..4].copy_from_slice(&self.same.0.to_le_bytes());
        t[4..8].copy_from_slice(&self.same.1.to_le_bytes());
        t[8..12].copy_from_slice(&self.rev.0.to_le_bytes());
        t[12..16].copy_from_slice(&self.rev.1.to_le_bytes());
        t[16..24].copy_from_slice(&self.same.2.to_le_bytes());
        t[24..32].copy_from_slice(&self.rev.2.to_le_bytes());
        t
    }

    fn decode(t: &[u8]) -> Tails {
        let mut b = [0u8; TAILS_BYTES];
        b[..t.len().min(TAILS_BYTES)].copy_from_slice(&t[..t.len().min(TAILS_BYTES)]);
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Tails { same: (u32_at(0), u32_at(4), u64_at(16)), rev: (u32_at(8), u32_at(12), u64_at(24)) }
    }

    /// Packets in all.
    pub fn packets(&self) -> u64 {
        self.same.0 as u64 + self.rev.0 as u64
    }

    /// Wire bytes in all.
    pub fn bytes(&self) -> u64 {
        self.same.1 as u64 + self.rev.1 as u64
    }
}

#[repr(align(128))]
struct Padded<T>(T);

struct Shared {
    /// The ring's storage: `cap` bytes, 16-byte aligned (u128 cells).
    data: Box<[UnsafeCell<u128>]>,
    cap: usize,
    /// Bytes the consumer has freed (monotonic).
    head: Padded<AtomicU64>,
    /// Bytes the producer has published (monotonic).
    tail: Padded<AtomicU64>,
    /// The producer will publish nothing more.
    closed: AtomicBool,
    /// The clock of the queueing-delay samples.
    epoch: Instant,
}

// SAFETY: the producer only writes bytes in [tail, head + cap) and the consumer only
// reads bytes in [head, tail); the release/acquire pairs on `head` and `tail` order
// those accesses, so no byte is ever accessed by both threads at once.
unsafe impl Sync for Shared {}
// SAFETY: see Sync; the storage is plain bytes owned by the Arc.
unsafe impl Send for Shared {}

impl Shared {
    fn base(&self) -> *mut u8 {
        UnsafeCell::raw_get(self.data.as_ptr()).cast()
    }
}

/// A new buffer of at least `bytes` bytes (rounded up to a power of two, at least
/// 64 KiB). The memory is zeroed lazily by the kernel, so an idle worker's buffer
/// costs address space, not RAM.
#[cfg_attr(not(test), allow(dead_code))]
pub fn packet_buffer(bytes: usize) -> (Producer, Consumer) {
    packet_buffer_sampled(bytes, 0)
}

/// [`packet_buffer`], sampling the queueing delay of 1 record in `every` (0: none):
/// the time from its push to the return of the consumer's callback for it
/// ([`Consumer::delays`]).
pub fn packet_buffer_sampled(bytes: usize, every: u32) -> (Producer, Consumer) {
    let cap = bytes.max(1 << 16).next_power_of_two();
    // vec![0; n] asks the allocator for zeroed memory (calloc: fresh pages, not
    // written here).
    let zeroed: Box<[u128]> = vec![0u128; cap / 16].into_boxed_slice();
    // SAFETY: UnsafeCell<u128> is repr(transparent) over u128, so the slice has the
    // same layout; the box's ownership passes from one type to the other.
    let data: Box<[UnsafeCell<u128>]> = unsafe { Box::from_raw(Box::into_raw(zeroed) as *mut [UnsafeCell<u128>]) };
    let s = Arc::new(Shared {
        data,
        cap,
        head: Padded(AtomicU64::new(0)),
        tail: Padded(AtomicU64::new(0)),
        closed: AtomicBool::new(false),
        epoch: Instant::now(),
    });
    // Room for the samples of a buffer full of the smallest records (a header and 16
    // bytes); a sample that finds the ring full is skipped.
    let (stamps, stamped) = if every > 0 {
        let (tx, rx) = rtrb::RingBuffer::new((cap / 32 / every as usize).clamp(64, 1 << 16));
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    (
        Producer { s: s.clone(), tail: 0, head: 0, max_used: 0, every, countdown: every, stamps },
        Consumer { s, head: 0, stamped, next_stamp: (u64::MAX, 0), delays: PacketTimer::new(every) },
    )
}

fn record_len(caplen: usize) -> usize {
    HDR + caplen.next_multiple_of(16)
}

/// The acquisition thread's end.
pub struct Producer {
    s: Arc<Shared>,
    /// Written, perhaps not yet published.
    tail: u64,
    /// The consumer's head as last read.
    head: u64,
    max_used: u64,
    /// Queueing delay: 1 record in `every` (0: none) is stamped; records until the next.
    every: u32,
    countdown: u32,
    /// (end position, ns since the epoch) of the stamped records.
    stamps: Option<rtrb::Producer<(u64, u64)>>,
}

impl Producer {
    /// Appends a frame; `false` (and nothing written) when the buffer is full.
    #[inline]
    pub fn push(&mut self, ts_ns: u64, orig_len: u32, bytes: &[u8]) -> bool {
        self.push_record(ts_ns, orig_len, bytes, 0)
    }

    /// Appends a counted-only record of a frame (its first [`COUNTED_BYTES`] bytes and
    /// its wire length): the analysis side accounts its packet and bytes, nothing
    /// more. `false` when the buffer is full.
    #[inline]
    pub fn push_counted(&mut self, ts_ns: u64, orig_len: u32, bytes: &[u8]) -> bool {
        self.push_record(ts_ns, orig_len, &bytes[..bytes.len().min(COUNTED_BYTES)], COUNTED)
    }

    /// Appends a tails record: `hdr` (a frame's first bytes, at most
    /// [`COUNTED_BYTES`]) and `tails`. `false` when the buffer is full.
    pub fn push_tails(&mut self, ts_ns: u64, orig_len: u32, hdr: &[u8], tails: &Tails) -> bool {
        let mut b = [0u8; COUNTED_BYTES + TAILS_BYTES];
        let h = hdr.len().min(COUNTED_BYTES);
        b[..h].copy_from_slice(&hdr[..h]);
        b[h..h + TAILS_BYTES].copy_from_slice(&tails.encode());
        self.push_record(ts_ns, orig_len, &b[..h + TAILS_BYTES], COUNTED | TAILS)
    }

    #[inline]
    fn push_record(&mut self, ts_ns: u64, orig_len: u32, bytes: &[u8], flag: u32) -> bool {
        let cap = self.s.cap;
        let need = record_len(bytes.len());
        if need > cap / 2 {
            return false;
        }
        let off = (self.tail as usize) & (cap - 1);
        let to_end = cap - off;
        let total = if to_end < need { to_end + need } else { need };
        if (cap as u64) - (self.tail - self.head) < total as u64 {
            self.head = self.s.head.0.load(Ordering::Acquire);
            if (cap as u64) - (self.tail - self.head) < total as u64 {
                return false;
            }
        }
        let base = self.s.base();
        let mut off = off;
        if to_end < need {
            // SAFETY: [off, cap) is free (checked above) and off is 16-aligned with at
            // least 16 bytes to the end.
            unsafe { write_hdr(base.add(off), 0, 0, PAD) };
            self.tail += to_end as u64;
            off = 0;
        }
        // SAFETY: [off, off + need) is free space inside the ring (checked above), not
        // visible to the consumer until `publish`.
        unsafe {
            write_hdr(base.add(off), ts_ns, orig_len, bytes.len() as u32 | flag);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(off + HDR), bytes.len());
        }
        self.tail += need as u64;
        let used = self.tail - self.head;
        if used > self.max_used {
            self.max_used = used;
        }
        if self.every > 0 {
            self.countdown -= 1;
            if self.countdown == 0 {
                self.stamp();
            }
        }
        true
    }

    #[cold]
    fn stamp(&mut self) {
        self.countdown = self.every;
        let t = self.s.epoch.elapsed().as_nanos() as u64;
        if let Some(tx) = self.stamps.as_mut() {
            let _ = tx.push((self.tail, t));
        }
    }

    /// Rewrites the capture times of the records written since `mark` (a value of
    /// [`Producer::mark`]) and not yet published: the n-th of k gets
    /// `from_ns + n·(to_ns − from_ns)/k`, spreading a batch that arrived between two
    /// polls over the time between them (DPDKStat, §3.2 and its reference 23).
    pub fn spread_times(&mut self, mark: u64, from_ns: u64, to_ns: u64) {
        let base = self.s.base();
        let cap = self.s.cap;
        let mut offs = Vec::new();
        let mut p = mark;
        while p < self.tail {
            let off = (p as usize) & (cap - 1);
            // SAFETY: [mark, tail) was written by this producer and is unpublished.
            let (_, _, caplen) = unsafe { read_hdr(base.add(off)) };
            if caplen == PAD {
                p += (cap - off) as u64;
                continue;
            }
            offs.push(off);
            p += record_len((caplen & !(COUNTED | TAILS)) as usize) as u64;
        }
        let k = offs.len() as u64;
        let span = to_ns.saturating_sub(from_ns);
        for (n, off) in offs.into_iter().enumerate() {
            let ts = from_ns + span * (n as u64 + 1) / k;
            // SAFETY: as above; only the time field of our own record is rewritten.
            unsafe { base.add(off).cast::<u64>().write(ts) };
        }
    }

    /// The position to pass to [`Producer::spread_times`].
    pub fn mark(&self) -> u64 {
        self.tail
    }

    /// Makes the records pushed so far visible to the consumer.
    #[inline]
    pub fn publish(&mut self) {
        self.s.tail.0.store(self.tail, Ordering::Release);
    }

    /// Bytes in the buffer now, and the most there have been.
    pub fn occupancy(&self) -> (u64, u64) {
        let head = self.s.head.0.load(Ordering::Relaxed);
        (self.tail.saturating_sub(head), self.max_used)
    }

    pub fn capacity(&self) -> u64 {
        self.s.cap as u64
    }

    /// Publishes and tells the consumer that nothing more will come.
    pub fn close(mut self) {
        self.publish();
        self.s.closed.store(true, Ordering::Release);
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        // A producer that goes away (even by a panic) ends the stream.
        self.s.tail.0.store(self.tail, Ordering::Release);
        self.s.closed.store(true, Ordering::Release);
    }
}

/// The analysis thread's end.
pub struct Consumer {
    s: Arc<Shared>,
    head: u64,
    stamped: Option<rtrb::Consumer<(u64, u64)>>,
    /// The next stamped record's end position (`u64::MAX`: none known) and time.
    next_stamp: (u64, u64),
    delays: PacketTimer,
}

impl Consumer {
    /// Hands at most `max` records to `f` in order (a frame's bytes, or a counted-only or
    /// tails record's headers, and which it is), frees their space, and returns how many
    /// there were.
    #[inline]
    pub fn read(&mut self, max: usize, link: LinkType, mut f: impl FnMut(&FrameMeta, &[u8], Rec)) -> usize {
        let tail = self.s.tail.0.load(Ordering::Acquire);
        let cap = self.s.cap;
        let base = self.s.base();
        let mut n = 0;
        // After the acquire of `tail`: the stamps of every record published are visible.
        if self.next_stamp.0 == u64::MAX && self.head < tail {
            self.next_stamp();
        }
        while self.head < tail && n < max {
            let off = (self.head as usize) & (cap - 1);
            // SAFETY: [head, tail) was published by the producer (acquire above) and
            // is not written again until `head` moves past it.
            let (ts_ns, orig_len, caplen) = unsafe { read_hdr(base.add(off)) };
            if caplen == PAD {
                self.head += (cap - off) as u64;
                continue;
            }
            let flags = caplen & (COUNTED | TAILS);
            let len = caplen & !(COUNTED | TAILS);
            // SAFETY: as above; the record's bytes follow its header inside the ring.
            let bytes = unsafe { std::slice::from_raw_parts(base.add(off + HDR), len as usize) };
            let (bytes, rec) = match flags {
                0 => (bytes, Rec::Whole),
                COUNTED => (bytes, Rec::Counted),
                _ => {
                    let (h, t) = bytes.split_at(bytes.len().saturating_sub(TAILS_BYTES));
                    (h, Rec::Tails(Tails::decode(t)))
                }
            };
            let meta = FrameMeta { ts_ns, orig_len, caplen: bytes.len() as u32, offset: 0, link };
            f(&meta, bytes, rec);
            self.head += record_len(len as usize) as u64;
            n += 1;
            if self.head >= self.next_stamp.0 {
                let t = self.s.epoch.elapsed().as_nanos() as u64;
                self.delays.record(t.saturating_sub(self.next_stamp.1));
                self.next_stamp();
            }
        }
        self.s.head.0.store(self.head, Ordering::Release);
        n
    }

    /// Takes the next stamp of a record not yet read.
    fn next_stamp(&mut self) {
        self.next_stamp = (u64::MAX, 0);
        let Some(rx) = self.stamped.as_mut() else { return };
        while let Ok(st) = rx.pop() {
            if st.0 > self.head {
                self.next_stamp = st;
                return;
            }
        }
    }

    /// The queueing delays sampled so far (push to the end of the record's callback).
    pub fn delays(&self) -> &PacketTimer {
        &self.delays
    }

    /// The producer has closed the buffer (read once more before concluding it is
    /// drained: what was published before closing is visible after this returns true).
    pub fn closed(&self) -> bool {
        self.s.closed.load(Ordering::Acquire)
    }
}

/// # Safety
/// `p` must be 16-byte aligned with 16 writable bytes.
unsafe fn write_hdr(p: *mut u8, ts_ns: u64, orig_len: u32, caplen: u32) {
    // SAFETY: the caller guarantees alignment and room.
    unsafe {
        p.cast::<u64>().write(ts_ns);
        p.add(8).cast::<u32>().write(orig_len);
        p.add(12).cast::<u32>().write(caplen);
    }
}

/// # Safety
/// `p` must be 16-byte aligned with 16 readable bytes.
unsafe fn read_hdr(p: *const u8) -> (u64, u32, u32) {
    // SAFETY: the caller guarantees alignment and room.
    unsafe { (p.cast::<u64>().read(), p.add(8).cast::<u32>().read(), p.add(12).cast::<u32>().read()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(c: &mut Consumer) -> Vec<(u64, u32, Vec<u8>)> {
        let mut v = Vec::new();
        c.read(usize::MAX, LinkType::ETHERNET, |m, b, _| v.push((m.ts_ns, m.orig_len, b.to_vec())));
        v
    }

    #[test]
    fn records_wrap_and_come_out_in_order() {
        let (mut p, mut c) = packet_buffer(1 << 16);
        let mut expect = Vec::new();
        let mut got = Vec::new();
        for i in 0..10_000u64 {
            let len = (i * 37 % 1500) as usize;
            let bytes: Vec<u8> = (0..len).map(|j| (i as usize + j) as u8).collect();
            while !p.push(i, len as u32 + 4, &bytes) {
                p.publish();
                got.extend(drain(&mut c));
            }
            expect.push((i, len as u32 + 4, bytes));
            if i % 7 == 0 {
                p.publish();
            }
        }
        p.close();
        got.extend(drain(&mut c));
        assert!(c.closed());
        assert_eq!(got.len(), expect.len());
        assert!(got == expect);
    }

    #[test]
    fn a_full_buffer_refuses_and_recovers() {
        let (mut p, mut c) = packet_buffer(1 << 16);
        let frame = [7u8; 1000];
        let mut ok = 0;
        while p.push(0, 1000, &frame) {
            ok += 1;
        }
        assert_eq!(ok, (1 << 16) / 1024);
        assert_eq!(p.occupancy().1, 1 << 16);
        p.publish();
        assert_eq!(drain(&mut c).len(), ok);
        assert!(p.push(0, 1000, &frame));
    }

    #[test]
    fn threads_agree() {
        let (mut p, mut c) = packet_buffer(1 << 16);
        let n = 200_000u64;
        let h = std::thread::spawn(move || {
            for i in 0..n {
                let b = i.to_le_bytes();
                while !p.push(i, 8, &b[..(i % 9) as usize]) {
                    p.publish();
                    std::hint::spin_loop();
                }
                if i % 64 == 0 {
                    p.publish();
                }
            }
            p.close();
        });
        let mut next = 0u64;
        loop {
            let closed = c.closed();
            let k = c.read(1000, LinkType::ETHERNET, |m, b, _| {
                assert_eq!(m.ts_ns, next);
                assert_eq!(b, &next.to_le_bytes()[..(next % 9) as usize]);
                next += 1;
            });
            if k == 0 && closed {
                break;
            }
        }
        h.join().unwrap();
        assert_eq!(next, n);
    }

    #[test]
    fn batch_times_are_spread_between_polls() {
        let (mut p, mut c) = packet_buffer(1 << 16);
        let m = p.mark();
        for _ in 0..4 {
            assert!(p.push(0, 60, &[0u8; 60]));
        }
        p.spread_times(m, 1000, 2000);
        p.publish();
        let ts: Vec<u64> = drain(&mut c).into_iter().map(|r| r.0).collect();
        assert_eq!(ts, vec![1250, 1500, 1750, 2000]);
    }

    #[test]
    fn queueing_delays_are_sampled_one_record_in_k() {
        let (mut p, mut c) = packet_buffer_sampled(1 << 16, 4);
        for i in 0..10u64 {
            assert!(p.push(i, 60, &[0u8; 60]));
        }
        p.publish();
        // Records 4 and 8 are stamped; the first read takes 5 records, past record 4.
        let mut seen = 0;
        c.read(5, LinkType::ETHERNET, |_, _, _| {
            seen += 1;
            if seen == 4 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        assert_eq!(c.delays().samples(), 1);
        assert!(c.delays().max_ns() >= 2_000_000);
        c.read(usize::MAX, LinkType::ETHERNET, |_, _, _| {});
        assert_eq!(c.delays().samples(), 2);
        // Without sampling: nothing recorded, nothing stamped.
        let (mut p, mut c) = packet_buffer(1 << 16);
        assert!(p.stamps.is_none() && p.push(0, 60, &[0u8; 60]));
        p.publish();
        drain(&mut c);
        assert_eq!(c.delays().samples(), 0);
    }

    #[test]
    fn tails_records_carry_their_counts() {
        let (mut p, mut c) = packet_buffer(1 << 16);
        let frame: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
        let t = Tails { same: (3, 4500, 77), rev: (2, 120, 99) };
        let m = p.mark();
        assert!(p.push_tails(99, 1500, &frame, &t));
        assert!(p.push_tails(5, 60, &frame[..54], &Tails { same: (1, 60, 5), rev: (0, 0, 0) }));
        assert!(p.push(6, 60, &frame[..60]));
        // Rewriting times walks past both flags.
        p.spread_times(m, 0, 300);
        p.publish();
        let mut got = Vec::new();
        c.read(usize::MAX, LinkType::ETHERNET, |m, b, rec| got.push((m.ts_ns, m.caplen, b.to_vec(), rec)));
        assert_eq!(got[0], (100, COUNTED_BYTES as u32, frame[..COUNTED_BYTES].to_vec(), Rec::Tails(t)));
        assert_eq!(got[1].2, frame[..54].to_vec());
        assert!(matches!(got[1].3, Rec::Tails(t) if t.packets() == 1 && t.bytes() == 60));
        assert_eq!((got[2].0, got[2].3), (300, Rec::Whole));
    }

    #[test]
    fn counted_only_records_keep_their_headers_and_wire_length() {
        let (mut p, mut c) = packet_buffer(1 << 16);
        let frame: Vec<u8> = (0..1500u32).map(|i| i as u8).collect();
        let m = p.mark();
        assert!(p.push(1, 1500, &frame));
        assert!(p.push_counted(2, 1514, &frame));
        assert!(p.push_counted(3, 60, &frame[..60]));
        assert!(p.push(4, 100, &frame[..100]));
        // Rewriting times walks the records by their length, flag or not.
        p.spread_times(m, 0, 400);
        p.publish();
        let mut got = Vec::new();
        c.read(usize::MAX, LinkType::ETHERNET, |m, b, rec| {
            got.push((m.ts_ns, m.orig_len, m.caplen, b.to_vec(), rec.counted()))
        });
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], (100, 1500, 1500, frame.clone(), false));
        assert_eq!(got[1], (200, 1514, COUNTED_BYTES as u32, frame[..COUNTED_BYTES].to_vec(), true));
        assert_eq!(got[2], (300, 60, 60, frame[..60].to_vec(), true));
        assert_eq!(got[3], (400, 100, 100, frame[..100].to_vec(), false));
    }
}
