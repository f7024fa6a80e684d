//! A balanced search structure per bucket, reached through a pointer (FlowMgmt §3.1:
//! "an hash table of tree roots"): here a vector of (hash, id) sorted by hash and
//! binary-searched, which has a tree's O(log L) lookup and its extra memory access
//! even for a bucket of one flow, without a node allocation per flow.

use super::{prefetch_ptr, FlowIndex, Reduce};

pub struct Trees {
    buckets: Vec<Vec<(u64, u32)>>,
    reduce: Reduce,
    len: usize,
    grow: bool,
}

impl Trees {
    /// `n` buckets, never resized.
    pub fn fixed(n: usize) -> Self {
        Self::make(n, false)
    }

    /// `n` buckets to start with, doubled when the entries outnumber the buckets.
    pub fn growing(n: usize) -> Self {
        Self::make(n, true)
    }

    fn make(n: usize, grow: bool) -> Self {
        let n = n.max(1);
        Trees { buckets: (0..n).map(|_| Vec::new()).collect(), reduce: Reduce::new(n), len: 0, grow }
    }

    fn put(&mut self, hash: u64, id: u32) {
        let v = &mut self.buckets[self.reduce.of(hash)];
        let at = v.partition_point(|&e| e < (hash, id));
        v.insert(at, (hash, id));
        self.len += 1;
    }
}

impl FlowIndex for Trees {
    #[inline(always)]
    fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let v = &self.buckets[self.reduce.of(hash)];
        let mut i = v.partition_point(|e| e.0 < hash);
        while let Some(&(h, id)) = v.get(i) {
            if h != hash {
                break;
            }
            if eq(id) {
                return Some(id);
            }
            i += 1;
        }
        None
    }

    fn insert(&mut self, hash: u64, id: u32, _hash_of: impl Fn(u32) -> u64) {
        if self.grow && self.len >= self.buckets.len() {
            let all: Vec<(u64, u32)> = self.buckets.iter().flatten().copied().collect();
            *self = Self::make(self.buckets.len() * 2, true);
            for (h, i) in all {
                self.put(h, i);
            }
        }
        self.put(hash, id);
    }

    fn remove(&mut self, hash: u64, id: u32) {
        let v = &mut self.buckets[self.reduce.of(hash)];
        if let Ok(at) = v.binary_search(&(hash, id)) {
            v.remove(at);
            self.len -= 1;
        } else {
            debug_assert!(false, "removing an id that is not in the index");
        }
    }

    #[inline]
    fn prefetch(&self, hash: u64) {
        prefetch_ptr(self.buckets.as_ptr().wrapping_add(self.reduce.of(hash)));
    }

    #[inline]
    fn candidate(&self, hash: u64) -> Option<u32> {
        let v = &self.buckets[self.reduce.of(hash)];
        v.get(v.partition_point(|e| e.0 < hash)).filter(|e| e.0 == hash).map(|e| e.1)
    }

    fn probes(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> u32 {
        let v = &self.buckets[self.reduce.of(hash)];
        // Binary search steps, then the candidates of equal hash.
        let mut n = (usize::BITS - v.len().leading_zeros()).max(1);
        let mut i = v.partition_point(|e| e.0 < hash);
        while let Some(&(h, id)) = v.get(i) {
            if h != hash || eq(id) {
                break;
            }
            n += 1;
            i += 1;
        }
        n
    }

    fn bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Vec<(u64, u32)>>()
            + self.buckets.iter().map(|v| v.capacity() * 16).sum::<usize>()
    }

    fn buckets(&self) -> usize {
        self.reduce.n()
    }
}
