//! Chunked open addressing in the manner of Facebook folly's F14 (F14Table.h): the
//! table is an array of chunks, each one 64-byte cache line holding 12 one-byte tags
//! (8 bits of the hash; 0 marks a free slot), a one-byte outbound overflow count and
//! the 12 slot ids. A key's home chunk comes from the hash (multiplied, then scaled to
//! the number of chunks); a lookup compares the 12 tags at once (one SSE2 compare), tries
//! the ids whose tag matched, and goes on to the next chunk only when the chunk's
//! overflow count says some entry that passed through it lives further on. So a lookup
//! reads one line of index (the tags and ids share it), then the slot's hot line: where
//! hashbrown reads its control group, then the id array beside it, and where the
//! line can be prefetched from the hash alone ([`FlowIndex::prefetch`]), which
//! hashbrown does not allow.
//!
//! The overflow count of a chunk is the number of entries whose probe sequence passed
//! it full (F14's `outboundOverflowCount`): insertion increments it on every full chunk
//! it passes, removal decrements it on the same chunks, so removal leaves no tombstone.
//! It saturates at 255 and then stays (lookups through that chunk just keep probing
//! until the table is rebuilt). The table doubles at 10 entries per chunk on average
//! (5/6 load), so a free slot is always within reach and every entry is stored, even
//! when all hashes are equal (probing covers the table: no stash).

use super::{prefetch_ptr, FlowIndex};

/// Slots per chunk.
const SLOTS: usize = 12;
/// Bits of the slots in a tag-compare mask.
const FULL: u32 = (1 << SLOTS) - 1;
/// Byte of `Chunk::ctrl` holding the outbound overflow count.
const OVERFLOW: usize = SLOTS;
/// Entries per chunk, on average, at which the table doubles.
const MAX_FILL: usize = 10;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Chunk {
    /// Tags of the 12 slots, the outbound overflow count, 3 spare bytes: 16 bytes, so
    /// one SSE2 load reads them all (the compare masks out the last four).
    ctrl: [u8; 16],
    ids: [u32; SLOTS],
}

const EMPTY: Chunk = Chunk { ctrl: [0; 16], ids: [0; SLOTS] };

impl Chunk {
    /// Bit i set when slot i has tag `t` (`t` = 0: when slot i is free).
    #[inline(always)]
    fn matches(&self, t: u8) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: SSE2 is part of x86_64; `ctrl` is the chunk's first 16 bytes and
            // the chunk is 64-byte aligned, so the aligned load reads exactly `ctrl`.
            let m = unsafe {
                let v = _mm_load_si128(self.ctrl.as_ptr() as *const __m128i);
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(t as i8))) as u32
            };
            m & FULL
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let mut m = 0;
            for i in 0..SLOTS {
                m |= ((self.ctrl[i] == t) as u32) << i;
            }
            m
        }
    }

    #[inline(always)]
    fn overflow(&self) -> u8 {
        self.ctrl[OVERFLOW]
    }
}

/// The tag of a hash: its top 8 bits, 0 made 1.
#[inline(always)]
fn tag(h: u64) -> u8 {
    ((h >> 56) as u8).max(1)
}

pub struct Chunks {
    chunks: Vec<Chunk>,
    len: usize,
}

impl Chunks {
    /// Room for `n` entries without growing, in as many chunks as that takes (any
    /// number: see `home`); doubles beyond.
    pub fn with_capacity(n: usize) -> Self {
        Self::make(n.div_ceil(MAX_FILL))
    }

    fn make(chunks: usize) -> Self {
        Chunks { chunks: vec![EMPTY; chunks.max(1)], len: 0 }
    }

    /// The home chunk of a hash: the hash times 2^64/φ (Fibonacci hashing: every bit
    /// of the hash reaches the high bits of the product), whose high bits are scaled to
    /// the number of chunks (Lemire's multiply-shift reduction: any number, no
    /// division). A mask of the low bits (the shared `Reduce`) made a cliff with hashes
    /// whose low bits are weak: CoralReef on the trace, 4–6 M lookups/s at a
    /// power-of-two number of chunks against 18–28 at other numbers (docs/BENCHMARKS.md).
    /// The worker that owns the flow was chosen from other bits (a finalizer of the
    /// hash, `FlowHasher::worker_of`), so each worker's flows spread over all its chunks.
    #[inline(always)]
    fn home(&self, h: u64) -> usize {
        let m = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((m as u128 * self.chunks.len() as u128) >> 64) as usize
    }

    /// The chunk after `c` on a probe sequence (linear, wrapping).
    #[inline(always)]
    fn next(&self, c: usize) -> usize {
        if c + 1 == self.chunks.len() {
            0
        } else {
            c + 1
        }
    }

    /// Stores `id` in the first chunk with a free slot from its home chunk on,
    /// counting it in the overflow count of every full chunk it passes. There is a free
    /// slot (the table holds fewer than `MAX_FILL` entries per chunk).
    fn put(&mut self, hash: u64, id: u32) {
        let t = tag(hash);
        let mut c = self.home(hash);
        loop {
            let ch = &mut self.chunks[c];
            let free = ch.matches(0);
            if free != 0 {
                let i = free.trailing_zeros() as usize;
                ch.ctrl[i] = t;
                ch.ids[i] = id;
                self.len += 1;
                return;
            }
            ch.ctrl[OVERFLOW] = ch.ctrl[OVERFLOW].saturating_add(1);
            c = self.next(c);
        }
    }

    fn grow(&mut self, hash_of: &impl Fn(u32) -> u64) {
        let ids: Vec<u32> =
            self.chunks.iter().flat_map(|ch| (0..SLOTS).filter(|&i| ch.ctrl[i] != 0).map(|i| ch.ids[i])).collect();
        *self = Self::make(self.chunks.len() * 2);
        for id in ids {
            self.put(hash_of(id), id);
        }
    }
}

impl FlowIndex for Chunks {
    #[inline(always)]
    fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let t = tag(hash);
        let mut c = self.home(hash);
        // Bounded by the number of chunks: saturated overflow counts could otherwise
        // send a miss round the table forever.
        let mut left = self.chunks.len();
        loop {
            let ch = &self.chunks[c];
            let mut m = ch.matches(t);
            while m != 0 {
                let id = ch.ids[m.trailing_zeros() as usize];
                if eq(id) {
                    return Some(id);
                }
                m &= m - 1;
            }
            left -= 1;
            if ch.overflow() == 0 || left == 0 {
                return None;
            }
            c = self.next(c);
        }
    }

    fn insert(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64) {
        if self.len >= self.chunks.len() * MAX_FILL {
            self.grow(&hash_of);
        }
        self.put(hash, id);
    }

    fn remove(&mut self, hash: u64, id: u32) {
        let t = tag(hash);
        let home = self.home(hash);
        let mut c = home;
        for _ in 0..self.chunks.len() {
            let mut m = self.chunks[c].matches(t);
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                if self.chunks[c].ids[i] == id {
                    self.chunks[c].ctrl[i] = 0;
                    self.len -= 1;
                    // The chunks it passed full on insertion count it no more.
                    let mut d = home;
                    while d != c {
                        let o = &mut self.chunks[d].ctrl[OVERFLOW];
                        debug_assert!(*o > 0, "an entry stored past its home chunk was counted");
                        if *o != u8::MAX {
                            *o -= 1;
                        }
                        d = self.next(d);
                    }
                    return;
                }
                m &= m - 1;
            }
            c = self.next(c);
        }
        debug_assert!(false, "removing an id that is not in the index");
    }

    #[inline]
    fn prefetch(&self, hash: u64) {
        prefetch_ptr(self.chunks.as_ptr().wrapping_add(self.home(hash)));
    }

    #[inline]
    fn candidate(&self, hash: u64) -> Option<u32> {
        let ch = &self.chunks[self.home(hash)];
        let m = ch.matches(tag(hash));
        (m != 0).then(|| ch.ids[m.trailing_zeros() as usize])
    }

    fn probes(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> u32 {
        let t = tag(hash);
        let mut c = self.home(hash);
        let mut n = 0;
        for _ in 0..self.chunks.len() {
            let ch = &self.chunks[c];
            let mut m = ch.matches(t);
            while m != 0 {
                n += 1;
                if eq(ch.ids[m.trailing_zeros() as usize]) {
                    return n;
                }
                m &= m - 1;
            }
            if ch.overflow() == 0 {
                break;
            }
            c = self.next(c);
        }
        n.max(1)
    }

    fn bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Chunk>()
    }

    fn buckets(&self) -> usize {
        self.chunks.len() * SLOTS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(i: u32) -> u64 {
        (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    fn overflow_total(c: &Chunks) -> u64 {
        c.chunks.iter().map(|ch| ch.overflow() as u64).sum()
    }

    #[test]
    fn a_chunk_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Chunk>(), 64);
        assert_eq!(std::mem::align_of::<Chunk>(), 64);
    }

    #[test]
    fn growth_keeps_every_entry_and_removal_clears_the_overflow_counts() {
        for mut c in [Chunks::with_capacity(1), Chunks::with_capacity(7), Chunks::with_capacity(1000)] {
            for i in 0..5000 {
                c.insert(h(i), i, h);
            }
            assert!(c.buckets() >= 5000);
            for i in 0..5000 {
                assert_eq!(c.find(h(i), |x| x == i), Some(i));
            }
            for i in 0..5000 {
                c.remove(h(i), i);
            }
            assert_eq!(c.len, 0);
            assert_eq!(overflow_total(&c), 0);
            assert!(c.chunks.iter().all(|ch| ch.matches(0) == FULL));
        }
    }

    #[test]
    fn equal_hashes_overflow_into_the_following_chunks() {
        // 100 entries of one hash: 12 in the home chunk, the rest further on, every
        // one found; removing them in any order brings every count back to 0.
        let mut c = Chunks::with_capacity(200);
        for i in 0..100 {
            c.insert(42, i, |_| 42);
        }
        assert!(overflow_total(&c) > 0);
        for i in 0..100 {
            assert_eq!(c.find(42, |x| x == i), Some(i));
            assert_eq!(c.probes(42, |x| x == i), i + 1);
        }
        for i in (0..100).rev().step_by(2).chain((0..100).step_by(2)) {
            c.remove(42, i);
            assert_eq!(c.find(42, |x| x == i), None);
        }
        assert_eq!(overflow_total(&c), 0);
        // And the same once the table had to grow around them.
        let mut c = Chunks::with_capacity(1);
        for i in 0..300 {
            c.insert(7, i, |_| 7);
        }
        for i in 0..300 {
            assert_eq!(c.find(7, |x| x == i), Some(i));
        }
    }

    #[test]
    fn candidate_is_the_first_match_of_the_home_chunk() {
        let mut c = Chunks::with_capacity(100);
        c.insert(h(1), 1, h);
        c.insert(h(2), 2, h);
        assert_eq!(c.candidate(h(1)), Some(1));
        assert_eq!(c.candidate(h(2)), Some(2));
        c.remove(h(1), 1);
        assert_eq!(c.candidate(h(1)), None);
    }
}
