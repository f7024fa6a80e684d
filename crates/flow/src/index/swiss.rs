//! Open addressing with SIMD probing: hashbrown's `HashTable` of slot ids (SwissTable:
//! groups of 16 one-byte tags compared in one SSE2 instruction).

use super::FlowIndex;
use hashbrown::HashTable;

pub struct Swiss {
    map: HashTable<u32>,
}

impl Swiss {
    /// Room for `n` entries without growing (it grows beyond).
    pub fn with_capacity(n: usize) -> Self {
        Swiss { map: HashTable::with_capacity(n) }
    }
}

impl FlowIndex for Swiss {
    #[inline(always)]
    fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.map.find(hash, |&i| eq(i)).copied()
    }

    #[inline]
    fn insert(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64) {
        self.map.insert_unique(hash, id, |&i| hash_of(i));
    }

    #[inline]
    fn remove(&mut self, hash: u64, id: u32) {
        if let Ok(e) = self.map.find_entry(hash, |&i| i == id) {
            e.remove();
        }
    }

    // No prefetch: hashbrown does not say where a hash's group lies. The candidate is
    // found by a probe proper (the first entry whose control byte matches).
    #[inline]
    fn candidate(&self, hash: u64) -> Option<u32> {
        self.map.find(hash, |_| true).copied()
    }

    fn probes(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> u32 {
        let mut n = 0;
        self.map.find(hash, |&i| {
            n += 1;
            eq(i)
        });
        n.max(1)
    }

    fn bytes(&self) -> usize {
        // Buckets of 4 bytes plus one control byte each (and a group of 16 more).
        self.map.capacity() * 8 / 7 * 5 + 16
    }

    fn buckets(&self) -> usize {
        self.map.capacity()
    }
}
