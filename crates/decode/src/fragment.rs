//! Bounded table of IP datagrams whose first fragment was seen.
//!
//! Only the first fragment of a datagram (offset 0, more-fragments set: RFC 791 §3.2,
//! RFC 8200 §4.5) carries the transport header. When it is decoded, the innermost flow
//! it belongs to (addresses, protocol, ports, tunnel...) is remembered here under the
//! datagram's reassembly key (source, destination, protocol, identification); later
//! fragments of the same datagram look it up and are attributed to the same flow.
//!
//! The table is allocated once: a ring of `capacity` entries in insertion order (the
//! oldest at the head), indexed by an open-addressing hash table with linear probing
//! and backward-shift deletion. Entries leave when they are older than the timeout in
//! packet time, or, when the table is full, oldest first (the caller counts that).
//! Nothing is allocated per packet.

use crate::Decoded;

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

impl FragKey {
    #[inline]
    fn hash(&self) -> u64 {
        // a multiply-xorshift mix: keys are not attacker-chosen in a way that matters
        // here (the table is bounded whatever the distribution)
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut h = (self.id as u64) << 16 | (self.proto as u64) << 8 | self.version as u64;
        for w in [self.src as u64, (self.src >> 64) as u64, self.dst as u64, (self.dst >> 64) as u64] {
            h = (h ^ w).wrapping_mul(K);
            h ^= h >> 29;
        }
        h
    }
}

#[derive(Clone, Copy, Default)]
struct Entry {
    key: FragKey,
    hash: u64,
    ts_ns: u64,
    flow: Decoded,
    /// For a TCP segment held until its datagram is complete: bytes of the datagram's
    /// fragmentable part seen so far, its length once the last fragment told it (0
    /// before), and the bytes of it before the TCP payload (extension headers, TCP
    /// header). `held` is false for every other datagram, and once completed.
    held: bool,
    got: u32,
    total: u32,
    hdr: u32,
}

/// What a later fragment learns from the table.
pub(crate) struct Later<'a> {
    /// The flow of the datagram's first fragment.
    pub flow: &'a Decoded,
    /// When this fragment completes a held TCP segment: the segment's payload length.
    pub completes: Option<u32>,
    /// The datagram is a held TCP segment still incomplete after this fragment.
    pub held: bool,
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
}

impl FragTable {
    /// A table of `capacity` entries (0 disables it: every later fragment is then an
    /// orphan).
    pub fn new(capacity: usize, timeout_ns: u64) -> Self {
        let capacity = capacity.min(EMPTY as usize - 1);
        let slots = if capacity == 0 { 0 } else { (capacity * 2).next_power_of_two() };
        FragTable {
            ring: vec![Entry::default(); capacity],
            head: 0,
            len: 0,
            index: vec![EMPTY; slots],
            mask: slots.wrapping_sub(1),
            timeout_ns,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
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
        let (key, hash) = match self.ring.get(self.head) {
            Some(e) => (e.key, e.hash),
            None => return,
        };
        if let Some(slot) = self.find(&key, hash) {
            self.delete_slot(slot);
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

    /// Remembers the flow of a first fragment; `held` is `Some(bytes of the
    /// fragmentable part in this fragment)` for a TCP segment whose accounting waits
    /// for the datagram to be complete. Returns true when the table was full and its
    /// oldest entry was dropped to make room.
    pub fn insert(&mut self, key: FragKey, flow: &Decoded, held: Option<u32>, now: u64) -> bool {
        if self.ring.is_empty() {
            return false;
        }
        self.expire(now);
        let hash = key.hash();
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
        let (got, hdr) = match held {
            Some(n) => (n, n.saturating_sub(flow.payload_len)),
            None => (0, 0),
        };
        self.ring[pos] = Entry { key, hash, ts_ns: now, flow: *flow, held: held.is_some(), got, total: 0, hdr };
        self.len += 1;
        let mut i = hash as usize & self.mask;
        while self.index[i] != EMPTY {
            i = (i + 1) & self.mask;
        }
        self.index[i] = pos as u32;
        evicted
    }

    /// The flow of the datagram `key`, if its first fragment was seen and has not
    /// expired at packet time `now`.
    #[cfg(test)]
    pub fn lookup(&mut self, key: &FragKey, now: u64) -> Option<&Decoded> {
        self.later(key, now, 0, 0, true).map(|l| l.flow)
    }

    /// A later fragment of datagram `key` at packet time `now`, holding `len` bytes at
    /// `offset` of the fragmentable part, the last one when `!more`: the flow of its
    /// first fragment if that was seen and has not expired, and whether it completes
    /// a held TCP segment (every byte up to the end the last fragment gave has come;
    /// duplicates and overlaps are not told apart, as a probe cannot know which copy
    /// the receiver kept).
    pub fn later(&mut self, key: &FragKey, now: u64, offset: u32, len: u32, more: bool) -> Option<Later<'_>> {
        self.expire(now);
        let slot = self.find(key, key.hash())?;
        let s = *self.index.get(slot)? as usize;
        let e = self.ring.get_mut(s)?;
        let mut completes = None;
        if e.held {
            e.got = e.got.saturating_add(len);
            if !more {
                e.total = offset.saturating_add(len);
            }
            if e.total > 0 && e.got >= e.total {
                e.held = false;
                completes = Some(e.total.saturating_sub(e.hdr));
            }
        }
        Some(Later { flow: &e.flow, completes, held: e.held })
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
            self.insert(key, flow, None, now)
        }
    }

    #[test]
    fn a_held_segment_completes_when_every_byte_came() {
        let mut t = FragTable::new(4, 1000);
        // 20-byte TCP header and 1460 bytes of payload in the first fragment (1480),
        // then 1480 + 40 bytes: a segment of 2980 bytes of payload
        let first = Decoded { payload_len: 1460, ..Decoded::default() };
        t.insert(key(1), &first, Some(1480), 0);
        assert_eq!(t.later(&key(1), 1, 2960, 40, false).map(|l| l.completes), Some(None));
        assert_eq!(t.later(&key(1), 2, 1480, 1480, true).map(|l| l.completes), Some(Some(2980)));
        // a copy of a fragment after that completes nothing again
        assert_eq!(t.later(&key(1), 3, 1480, 1480, true).map(|l| l.completes), Some(None));
        // not held: never completes
        t.insert(key(2), &first, None, 0);
        assert_eq!(t.later(&key(2), 4, 1480, 40, false).map(|l| l.completes), Some(None));
    }

    fn flow(port: u16) -> Decoded {
        Decoded { sport: port, ..Decoded::default() }
    }

    #[test]
    fn insert_lookup_expire() {
        let mut t = FragTable::new(4, 100);
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
        let mut t = FragTable::new(3, 1000);
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
        let mut t = FragTable::new(0, 1000);
        assert!(!t.insert_flow(key(0), &flow(0), 0));
        assert_eq!(t.lookup(&key(0), 0), None);
    }

    #[test]
    fn churn_keeps_index_consistent() {
        // many inserts through a small table: every live key stays findable, every
        // dropped one is gone (exercises backward-shift deletion on collisions)
        let cap = 16;
        let mut t = FragTable::new(cap, u64::MAX / 2);
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
}
