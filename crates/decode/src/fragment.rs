//! Bounded table of IP datagrams whose first fragment was seen.
//!
//! Only the first fragment of a datagram (offset 0, more-fragments set: RFC 791 §3.2,
//! RFC 8200 §4.5) carries the transport header. When it is decoded, the innermost flow
//! it belongs to (addresses, protocol, ports, tunnel...) is remembered here under the
//! datagram's reassembly key (source, destination, protocol, identification); later
//! fragments of the same datagram look it up and are attributed to the same flow.
//!
//! The table is allocated once: a ring of `capacity` entries in insertion order (the
//! oldest at the head), indexed by an open-addressing hash table (keyed at random per
//! table, so a sender cannot craft keys that share a chain) with linear probing
//! and backward-shift deletion. Entries leave when they are older than the timeout in
//! packet time, or, when the table is full, oldest first (the caller counts that).
//!
//! Payload bytes. A datagram whose first fragment carries its flow's own UDP or TCP
//! header (not the outer datagram of a tunnel) also has its transport payload
//! reassembled, so that the fragment that completes it can hand the application layer
//! the whole payload ([`Later::whole`]). Each such datagram gets a buffer of its own,
//! which grows as its fragments come, to [`MAX_PAYLOAD`] bytes at most, and the buffers
//! of all datagrams together hold at most the table's byte bound
//! (`DecodeConfig::reassembly_bytes`). Which bytes came is kept as a short sorted list of
//! ranges (RFC 815's hole list, turned around), so duplicates and overlaps are told
//! apart from new bytes; where copies overlap, the later copy's bytes stand. A datagram
//! that would pass a bound is given up (`fragment_reassembly_full`), and so is one that
//! cannot be put together (`fragment_reassembly_failed`: a fragment cut by the snaplen,
//! more than [`MAX_PIECES`] separate ranges, a fragment past the datagram's end, a held
//! TCP segment whose fragments added up before every byte came): its buffer is freed
//! and the application layer never sees its payload; its accounting is unaffected.
//!
//! Nothing is allocated per packet but those buffers: one per reassembled datagram,
//! handed over whole when it completes and freed when its entry leaves.

use crate::{Anomalies, Anomaly, Decoded};

/// Most payload bytes reassembled for one datagram: an IPv4 datagram's whole length
/// (RFC 791 §3.1, a 16-bit field), so no IPv4 transport payload is cut. (An IPv6
/// fragment offset reaches as far; a jumbogram is never fragmented, RFC 2675 §3.)
pub(crate) const MAX_PAYLOAD: u32 = 65_535;

/// Most separate ranges of bytes one datagram's reassembly keeps apart at once.
/// Fragments in order merge into one range; out of order, each gap between what came
/// is one more.
pub(crate) const MAX_PIECES: usize = 8;

/// The reassembly key of a fragmented datagram (RFC 791 §3.2: source, destination,
/// protocol, identification; RFC 8200 §4.5: source, destination, identification, and
/// the next header of the fragment header, which every fragment repeats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct FragKey {
    pub src: u128,
    pub dst: u128,
    pub id: u32,
    pub proto: u8,
    pub version: u8,
}

#[derive(Clone, Copy, Default)]
struct Entry {
    key: FragKey,
    hash: u64,
    ts_ns: u64,
    flow: Decoded,
    /// A TCP segment held until its datagram is complete (`Fragment::TcpHeld`); false
    /// for every other datagram, and once completed.
    held: bool,
    /// Its payload is being reassembled (in `FragTable::asm`, at the same position).
    asm: bool,
    /// For a held or reassembled datagram: bytes of its fragmentable part seen so far
    /// (copies included), its length once the last fragment told it (0 before), and
    /// the bytes of it before the transport payload (extension headers, transport
    /// header).
    got: u32,
    total: u32,
    hdr: u32,
}

/// The payload bytes of one datagram under reassembly.
#[derive(Default)]
struct Assembly {
    /// The transport payload so far, from its first byte (what has not come is zeros).
    buf: Vec<u8>,
    /// The ranges of `buf` that came, `[start, end)`: sorted, apart, not touching.
    pieces: [(u32, u32); MAX_PIECES],
    n: usize,
}

impl Assembly {
    /// Records that `[a, b)` came; false when that would make more than
    /// [`MAX_PIECES`] ranges.
    fn add(&mut self, a: u32, b: u32) -> bool {
        if a >= b {
            return true;
        }
        // the ranges that end before `a` stay; those from `i` to `j` touch [a, b)
        let i = self.pieces[..self.n].iter().position(|&(_, e)| e >= a).unwrap_or(self.n);
        let (mut lo, mut hi, mut j) = (a, b, i);
        while let Some(&(s, e)) = self.pieces[..self.n].get(j).filter(|&&(s, _)| s <= b) {
            (lo, hi, j) = (lo.min(s), hi.max(e), j + 1);
        }
        if j == i {
            if self.n == MAX_PIECES {
                return false;
            }
            self.pieces.copy_within(i..self.n, i + 1);
            self.n += 1;
        } else {
            self.pieces.copy_within(j..self.n, i + 1);
            self.n -= j - i - 1;
        }
        self.pieces[i] = (lo, hi);
        true
    }

    /// Every byte of `[0, len)` came, and none after it.
    fn covers(&self, len: u32) -> bool {
        match self.pieces[..self.n] {
            [] => len == 0,
            [(0, e)] => e == len,
            _ => false,
        }
    }

    /// The end of the furthest range that came.
    fn end(&self) -> u32 {
        self.n.checked_sub(1).map_or(0, |i| self.pieces[i].1)
    }
}

/// The first fragment of a datagram that carries its flow's own TCP or UDP header.
pub(crate) struct Share<'a> {
    /// Bytes of the datagram's fragmentable part in this fragment.
    pub len: u32,
    /// The TCP segment's accounting waits for the datagram to be complete.
    pub hold: bool,
    /// The transport payload captured in this fragment: the flow's `payload_len` bytes
    /// when captured whole.
    pub payload: &'a [u8],
}

/// What a later fragment learns from the table.
pub(crate) struct Later<'a> {
    /// The flow of the datagram's first fragment.
    pub flow: &'a Decoded,
    /// When this fragment completes a held TCP segment: the segment's payload length.
    pub completes: Option<u32>,
    /// The datagram is a held TCP segment still incomplete after this fragment.
    pub held: bool,
    /// When this fragment completes a datagram whose payload was reassembled: the whole
    /// transport payload.
    pub whole: Option<Vec<u8>>,
}

const EMPTY: u32 = u32::MAX;

/// The table. See the module documentation.
pub(crate) struct FragTable {
    ring: Vec<Entry>,
    head: usize,
    len: usize,
    index: Vec<u32>,
    mask: usize,
    timeout_ns: u64,
    /// The reassembly of each entry's payload, by ring position.
    asm: Vec<Assembly>,
    /// Bytes the reassembly buffers hold (their capacity), and the most they may.
    bytes: usize,
    max_bytes: usize,
    /// The index's hash, keyed at random for each table: the reassembly key is the
    /// sender's to choose (identification, addresses), and with a hash known in advance
    /// fragments crafted to share one probe chain turn each lookup into a walk of the
    /// whole table. SipHash (the standard library's `RandomState`) costs more than a
    /// multiply-xorshift mix, on fragments only.
    keys: std::hash::RandomState,
}

impl FragTable {
    /// A table of `capacity` entries (0 disables it: every later fragment is then an
    /// orphan) whose reassembly buffers hold `max_bytes` bytes at most.
    pub fn new(capacity: usize, timeout_ns: u64, max_bytes: usize) -> Self {
        let capacity = capacity.min(EMPTY as usize - 1);
        let slots = if capacity == 0 { 0 } else { (capacity * 2).next_power_of_two() };
        FragTable {
            ring: vec![Entry::default(); capacity],
            head: 0,
            len: 0,
            index: vec![EMPTY; slots],
            mask: slots.wrapping_sub(1),
            timeout_ns,
            asm: (0..capacity).map(|_| Assembly::default()).collect(),
            bytes: 0,
            max_bytes,
            keys: std::hash::RandomState::new(),
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes the reassembly buffers hold now.
    #[cfg(test)]
    pub fn held_bytes(&self) -> usize {
        self.bytes
    }

    /// The index's hash of `key`.
    #[inline]
    fn hash(&self, key: &FragKey) -> u64 {
        use std::hash::BuildHasher;
        self.keys.hash_one((key.src, key.dst, key.id, key.proto, key.version))
    }

    /// Index slot holding `key`, if present.
    #[inline]
    fn find(&self, key: &FragKey, hash: u64) -> Option<usize> {
        if self.index.is_empty() {
            return None;
        }
        let mut i = hash as usize & self.mask;
        loop {
            let s = *self.index.get(i)?;
            if s == EMPTY {
                return None;
            }
            if self.ring.get(s as usize).is_some_and(|e| e.key == *key) {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Removes the ring's oldest entry.
    fn pop_head(&mut self) {
        if self.len == 0 {
            return;
        }
        let (key, hash, asm) = match self.ring.get(self.head) {
            Some(e) => (e.key, e.hash, e.asm),
            None => return,
        };
        if let Some(slot) = self.find(&key, hash) {
            self.delete_slot(slot);
        }
        if asm {
            self.release(self.head);
        }
        self.head = (self.head + 1) % self.ring.len();
        self.len -= 1;
    }

    /// Backward-shift deletion: empties index slot `i` and moves up the entries of the
    /// probe run after it that may move, so that no lookup is cut short.
    fn delete_slot(&mut self, mut i: usize) {
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let s = match self.index.get(j) {
                Some(&s) if s != EMPTY => s,
                _ => break,
            };
            let home = match self.ring.get(s as usize) {
                Some(e) => e.hash as usize & self.mask,
                None => break,
            };
            // the entry at j stays if its home lies cyclically in (i, j]
            let stays = if i <= j { i < home && home <= j } else { i < home || home <= j };
            if !stays {
                self.index[i] = s;
                i = j;
            }
        }
        if let Some(x) = self.index.get_mut(i) {
            *x = EMPTY;
        }
    }

    /// Drops the entries older than the timeout at packet time `now`.
    #[inline]
    fn expire(&mut self, now: u64) {
        while self.len > 0 {
            let ts = self.ring.get(self.head).map_or(0, |e| e.ts_ns);
            if ts.saturating_add(self.timeout_ns) >= now {
                break;
            }
            self.pop_head();
        }
    }

    /// Remembers the flow of a first fragment; `share` is given for a datagram that
    /// carries its flow's own TCP or UDP header, whose payload is then reassembled
    /// (and whose accounting waits for the datagram to be complete where
    /// `Share::hold`). Returns true when the table was full and its oldest entry was
    /// dropped to make room. Reassembly that cannot start is counted in `an`.
    pub fn insert(
        &mut self,
        key: FragKey,
        flow: &Decoded,
        share: Option<Share<'_>>,
        now: u64,
        an: &mut Anomalies,
    ) -> bool {
        if self.ring.is_empty() {
            return false;
        }
        self.expire(now);
        let hash = self.hash(&key);
        if let Some(slot) = self.find(&key, hash) {
            // the first fragment again (a retransmission): keep its age, renew the flow
            let s = self.index[slot] as usize;
            if let Some(e) = self.ring.get_mut(s) {
                e.flow = *flow;
            }
            return false;
        }
        let mut evicted = false;
        if self.len == self.ring.len() {
            self.pop_head();
            evicted = true;
        }
        let pos = (self.head + self.len) % self.ring.len();
        let (got, hdr, held) = match &share {
            Some(s) => (s.len, s.len.saturating_sub(flow.payload_len), s.hold),
            None => (0, 0, false),
        };
        self.ring[pos] = Entry { key, hash, ts_ns: now, flow: *flow, held, asm: false, got, total: 0, hdr };
        if let Some(s) = share {
            self.start(pos, s.payload, flow.payload_len, an);
        }
        self.len += 1;
        let mut i = hash as usize & self.mask;
        while self.index[i] != EMPTY {
            i = (i + 1) & self.mask;
        }
        self.index[i] = pos as u32;
        evicted
    }

    /// Starts reassembling the payload of the datagram at ring position `s` with the
    /// `len` bytes of it that its first fragment holds, captured as `payload`.
    fn start(&mut self, s: usize, payload: &[u8], len: u32, an: &mut Anomalies) {
        let Some(first) = payload.get(..len as usize) else {
            // cut short by the snaplen: the payload can never be whole
            an.add(Anomaly::FragmentReassemblyFailed);
            return;
        };
        if len > MAX_PAYLOAD || self.bytes + first.len() > self.max_bytes {
            an.add(Anomaly::FragmentReassemblyFull);
            return;
        }
        let (Some(a), Some(e)) = (self.asm.get_mut(s), self.ring.get_mut(s)) else { return };
        a.buf = first.to_vec();
        a.n = 0;
        a.add(0, len);
        self.bytes += a.buf.capacity();
        e.asm = true;
    }

    /// Frees the reassembly buffer of ring position `s`.
    fn release(&mut self, s: usize) {
        if let Some(e) = self.ring.get_mut(s) {
            e.asm = false;
        }
        if let Some(a) = self.asm.get_mut(s) {
            self.bytes -= a.buf.capacity();
            a.buf = Vec::new();
            a.n = 0;
        }
    }

    /// Gives up the reassembly at ring position `s`, counting why.
    #[cold]
    fn give_up(&mut self, s: usize, why: Anomaly, an: &mut Anomalies) -> Option<Vec<u8>> {
        an.add(why);
        self.release(s);
        None
    }

    /// The flow of the datagram `key`, if its first fragment was seen and has not
    /// expired at packet time `now`.
    #[cfg(test)]
    pub fn lookup(&mut self, key: &FragKey, now: u64) -> Option<&Decoded> {
        self.later(key, now, 0, 0, true, &[], &mut Anomalies::default()).map(|l| l.flow)
    }

    /// A later fragment of datagram `key` at packet time `now`, holding `len` bytes at
    /// `offset` of the fragmentable part, captured as `data`, the last one when
    /// `!more`: the flow of its first fragment if that was seen and has not expired,
    /// whether it completes a held TCP segment (every byte up to the end the last
    /// fragment gave has come; duplicates and overlaps are not told apart there, as a
    /// probe cannot know which copy the receiver kept) and, where the datagram's payload
    /// was reassembled and this fragment completes it, the whole payload. Reassembly
    /// given up is counted in `an`.
    #[allow(clippy::too_many_arguments)]
    pub fn later(
        &mut self,
        key: &FragKey,
        now: u64,
        offset: u32,
        len: u32,
        more: bool,
        data: &[u8],
        an: &mut Anomalies,
    ) -> Option<Later<'_>> {
        self.expire(now);
        let slot = self.find(key, self.hash(key))?;
        let s = *self.index.get(slot)? as usize;
        let e = self.ring.get_mut(s)?;
        let mut completes = None;
        if e.held || e.asm {
            e.got = e.got.saturating_add(len);
            if !more {
                e.total = offset.saturating_add(len);
            }
        }
        if e.held && e.total > 0 && e.got >= e.total {
            e.held = false;
            completes = Some(e.total.saturating_sub(e.hdr));
        }
        let whole = if e.asm { self.assemble(s, offset, len, more, data, completes.is_some(), an) } else { None };
        let e = self.ring.get(s)?;
        Some(Later { flow: &e.flow, completes, held: e.held, whole })
    }

    /// Copies a later fragment's bytes into the reassembly at ring position `s` (see
    /// [`FragTable::later`]); `tcp_done` when the fragment completes a held TCP
    /// segment. Returns the whole payload when the datagram is complete.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        &mut self,
        s: usize,
        offset: u32,
        len: u32,
        more: bool,
        data: &[u8],
        tcp_done: bool,
        an: &mut Anomalies,
    ) -> Option<Vec<u8>> {
        let (hdr, total, tcp) = self.ring.get(s).map(|e| (e.hdr, e.total, e.held || tcp_done))?;
        let Some(data) = data.get(..len as usize) else {
            return self.give_up(s, Anomaly::FragmentReassemblyFailed, an);
        };
        // where the fragment's bytes fall in the payload (a fragment may repeat some of
        // the header's bytes, which the first fragment gave)
        let end = offset.saturating_add(len);
        let (a, b) = (offset.max(hdr) - hdr, end.max(hdr) - hdr);
        let bytes = data.get((a + hdr - offset) as usize..).unwrap_or_default();
        let asm = self.asm.get(s)?;
        if (total > 0 && end > total) || (!more && asm.end() > b) {
            // past the end the last fragment gave, or a last fragment before bytes
            // already come: no datagram has both
            return self.give_up(s, Anomaly::FragmentReassemblyFailed, an);
        }
        if b > MAX_PAYLOAD {
            return self.give_up(s, Anomaly::FragmentReassemblyFull, an);
        }
        let cap = asm.buf.capacity();
        if b as usize > cap {
            // grow by doubling up to the largest payload (few copies for a datagram of
            // many fragments), or to what is needed where that passes the bound
            let fits = |want: usize| self.bytes - cap + want <= self.max_bytes;
            let want = match (b as usize).max((cap * 2).min(MAX_PAYLOAD as usize)) {
                w if fits(w) => w,
                _ if fits(b as usize) => b as usize,
                _ => return self.give_up(s, Anomaly::FragmentReassemblyFull, an),
            };
            let asm = self.asm.get_mut(s)?;
            asm.buf.reserve_exact(want - asm.buf.len());
            self.bytes = self.bytes - cap + asm.buf.capacity();
        }
        let asm = self.asm.get_mut(s)?;
        if asm.buf.len() < b as usize {
            asm.buf.resize(b as usize, 0);
        }
        if let Some(to) = asm.buf.get_mut(a as usize..b as usize) {
            to.copy_from_slice(bytes);
        }
        if !asm.add(a, b) {
            return self.give_up(s, Anomaly::FragmentReassemblyFailed, an);
        }
        let done = total > 0 && asm.covers(total.saturating_sub(hdr));
        if tcp && tcp_done != done {
            // a held segment is accounted when its fragments add up: its bytes go with
            // that or not at all
            return if tcp_done { self.give_up(s, Anomaly::FragmentReassemblyFailed, an) } else { None };
        }
        if !done {
            return None;
        }
        let whole = std::mem::take(&mut asm.buf);
        self.bytes -= whole.capacity();
        self.release(s);
        Some(whole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> FragKey {
        FragKey { src: 1, dst: 2, id: i, proto: 17, version: 4 }
    }

    impl FragTable {
        fn insert_flow(&mut self, key: FragKey, flow: &Decoded, now: u64) -> bool {
            self.insert(key, flow, None, now, &mut Anomalies::default())
        }
    }

    #[test]
    fn a_held_segment_completes_when_every_byte_came() {
        let mut t = FragTable::new(4, 1000, 1 << 20);
        // 20-byte TCP header and 1460 bytes of payload in the first fragment (1480),
        // then 1480 + 40 bytes: a segment of 2980 bytes of payload
        let first = Decoded { payload_len: 1460, ..Decoded::default() };
        let an = &mut Anomalies::default();
        t.insert(key(1), &first, Some(Share { len: 1480, hold: true, payload: &[] }), 0, an);
        assert_eq!(t.later(&key(1), 1, 2960, 40, false, &[], an).map(|l| l.completes), Some(None));
        assert_eq!(t.later(&key(1), 2, 1480, 1480, true, &[], an).map(|l| l.completes), Some(Some(2980)));
        // a copy of a fragment after that completes nothing again
        assert_eq!(t.later(&key(1), 3, 1480, 1480, true, &[], an).map(|l| l.completes), Some(None));
        // not held: never completes
        t.insert(key(2), &first, None, 0, an);
        assert_eq!(t.later(&key(2), 4, 1480, 40, false, &[], an).map(|l| l.completes), Some(None));
        // no bytes were given (as if cut by a snaplen): nothing is reassembled
        assert_eq!(an.get(Anomaly::FragmentReassemblyFailed), 1);
        assert_eq!(t.held_bytes(), 0);
    }

    #[test]
    fn pieces_merge_and_are_bounded() {
        let mut a = Assembly::default();
        // apart, out of order, then the gaps filled, touching and overlapping
        for (x, y) in [(100, 200), (0, 50), (300, 400)] {
            assert!(a.add(x, y));
        }
        assert_eq!(&a.pieces[..a.n], &[(0, 50), (100, 200), (300, 400)]);
        assert!(a.add(50, 100));
        assert_eq!(&a.pieces[..a.n], &[(0, 200), (300, 400)]);
        assert!(!a.covers(400));
        assert!(a.add(150, 350));
        assert!(a.covers(400) && !a.covers(399) && !a.covers(401));
        assert_eq!(a.end(), 400);
        // more separate ranges than kept: refused
        let mut a = Assembly::default();
        for i in 0..MAX_PIECES as u32 {
            assert!(a.add(i * 10, i * 10 + 5));
        }
        assert!(!a.add(1000, 1005));
        assert!(a.add(5, 10), "a range that joins two is taken");
        assert_eq!(a.n, MAX_PIECES - 1);
    }

    fn flow(port: u16) -> Decoded {
        Decoded { sport: port, ..Decoded::default() }
    }

    #[test]
    fn insert_lookup_expire() {
        let mut t = FragTable::new(4, 100, 1 << 20);
        assert!(!t.insert_flow(key(1), &flow(1), 0));
        assert!(!t.insert_flow(key(2), &flow(2), 10));
        assert_eq!(t.lookup(&key(1), 50).map(|d| d.sport), Some(1));
        assert_eq!(t.lookup(&key(3), 50), None);
        // key 1 expires after 100, key 2 after 110
        assert_eq!(t.lookup(&key(1), 101), None);
        assert_eq!(t.lookup(&key(2), 101).map(|d| d.sport), Some(2));
        assert_eq!(t.len(), 1);
        assert_eq!(t.lookup(&key(2), 111), None);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn full_drops_oldest() {
        let mut t = FragTable::new(3, 1000, 1 << 20);
        for i in 0..3 {
            assert!(!t.insert_flow(key(i), &flow(i as u16), 0));
        }
        assert!(t.insert_flow(key(3), &flow(3), 1));
        assert_eq!(t.lookup(&key(0), 1), None);
        for i in 1..4 {
            assert_eq!(t.lookup(&key(i), 1).map(|d| d.sport), Some(i as u16));
        }
        // re-inserting an existing key updates it without eviction
        assert!(!t.insert_flow(key(2), &flow(99), 2));
        assert_eq!(t.lookup(&key(2), 2).map(|d| d.sport), Some(99));
    }

    #[test]
    fn disabled() {
        let mut t = FragTable::new(0, 1000, 1 << 20);
        assert!(!t.insert_flow(key(0), &flow(0), 0));
        assert_eq!(t.lookup(&key(0), 0), None);
    }

    #[test]
    fn churn_keeps_index_consistent() {
        // many inserts through a small table: every live key stays findable, every
        // dropped one is gone (exercises backward-shift deletion on collisions)
        let cap = 16;
        let mut t = FragTable::new(cap, u64::MAX / 2, 1 << 20);
        for i in 0..2000u32 {
            t.insert_flow(key(i), &flow(i as u16), u64::from(i));
            let lo = (i + 1).saturating_sub(cap as u32);
            for j in lo..=i {
                assert_eq!(t.lookup(&key(j), u64::from(i)).map(|d| d.sport), Some(j as u16));
            }
            if lo > 0 {
                assert_eq!(t.lookup(&key(lo - 1), u64::from(i)), None);
            }
        }
    }

    /// The index's hash before it was keyed: what a sender who knows the code can
    /// compute offline to pick keys that share one probe chain.
    fn known_hash(k: &FragKey) -> u64 {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut h = (k.id as u64) << 16 | (k.proto as u64) << 8 | k.version as u64;
        for w in [k.src as u64, (k.src >> 64) as u64, k.dst as u64, (k.dst >> 64) as u64] {
            h = (h ^ w).wrapping_mul(K);
            h ^= h >> 29;
        }
        h
    }

    /// Sum over the live entries of how far each sits from its home slot: the probes
    /// its lookups take beyond the first.
    fn displacement(t: &FragTable) -> usize {
        let mut sum = 0;
        for (i, &s) in t.index.iter().enumerate() {
            if s != EMPTY {
                let home = t.ring[s as usize].hash as usize & t.mask;
                sum += i.wrapping_sub(home) & t.mask;
            }
        }
        sum
    }

    #[test]
    fn fragments_crafted_against_a_known_hash_do_not_share_a_chain() {
        // 500 datagrams whose keys the unkeyed hash sends to one home slot of the
        // default table (1,024 entries, 2,048 slots): against that hash they form one
        // chain of 500, and each lookup walks it (124,750 probes in all)
        let mut t = FragTable::new(1024, u64::MAX / 2, 0);
        let crafted: Vec<FragKey> = (0u32..)
            .map(|id| FragKey { src: 0x0a00_0001, dst: 0x0a00_0002, id, proto: 17, version: 4 })
            .filter(|k| known_hash(k) & t.mask as u64 == 0)
            .take(500)
            .collect();
        for (i, k) in crafted.iter().enumerate() {
            t.insert_flow(*k, &flow(i as u16), 0);
        }
        assert_eq!(t.len(), 500);
        // keyed at random, they land as any 500 keys do: linear probing at a load of
        // a quarter displaces a key by about 0.17 slots on average
        let d = displacement(&t);
        assert!(d < 5 * 500, "crafted keys displaced by {d} slots in all");
        for (i, k) in crafted.iter().enumerate() {
            assert_eq!(t.lookup(k, 0).map(|d| d.sport), Some(i as u16));
        }
    }
}
