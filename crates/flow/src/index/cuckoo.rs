//! Bucketized cuckoo hashing in the manner of DPDK's rte_hash: every key has two
//! candidate buckets of 8 slots; a slot holds a 16-bit signature and a slot id; a
//! lookup compares the 8 signatures of a bucket at once and reads at most two buckets
//! (one cache line each). The alternative bucket is computed from the current one and
//! the signature alone (partial-key cuckoo hashing), so entries can be moved without
//! reading their keys. A full pair of buckets makes room by a breadth-first search for
//! a displacement path, as rte_hash's `cuckoo_move_insert`; when none is found within
//! the search's bound, the table doubles if it is at least half full (rte_hash would
//! refuse the key); below that, the failure comes from keys of equal hash, which no
//! size separates, and the entry goes to a small stash searched after both buckets.

use super::{prefetch_ptr, FlowIndex, Reduce};

const WAYS: usize = 8;
/// Nodes of the breadth-first search (rte_hash: RTE_HASH_BFS_QUEUE_MAX_LEN = 1000).
const BFS_NODES: usize = 512;
const ROOT: u32 = u32::MAX;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket {
    /// 0 marks a free slot (signatures always have their low bit set).
    sig: [u16; WAYS],
    id: [u32; WAYS],
}

const EMPTY: Bucket = Bucket { sig: [0; WAYS], id: [0; WAYS] };

impl Bucket {
    /// Bit i set when slot i holds signature `s`: the 8 signatures compared in one
    /// SSE2 instruction where there is SSE2 (rte_hash's `compare_signatures`).
    #[inline(always)]
    fn matches(&self, s: u16) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: SSE2 is part of x86_64; the load reads the 16 bytes of `sig`
            // (unaligned load, no alignment needed).
            unsafe {
                let v = _mm_loadu_si128(self.sig.as_ptr() as *const __m128i);
                let eq = _mm_cmpeq_epi16(v, _mm_set1_epi16(s as i16));
                // One bit per slot: the high byte of each 16-bit lane, packed to bytes.
                _mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128())) as u32
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let mut m = 0;
            for i in 0..WAYS {
                m |= ((self.sig[i] == s) as u32) << i;
            }
            m
        }
    }
}

#[inline(always)]
fn sig(h: u64) -> u16 {
    (h >> 48) as u16 | 1
}

pub struct Cuckoo {
    b: Vec<Bucket>,
    reduce: Reduce,
    len: usize,
    /// (hash, id) of entries no bucket had room for; empty in all but crafted cases.
    stash: Vec<(u64, u32)>,
}

#[derive(Clone, Copy)]
struct Node {
    bucket: u32,
    parent: u32,
    /// Slot of the parent's bucket whose entry moves to this bucket.
    pslot: u8,
}

impl Cuckoo {
    /// Room for `n` entries (rounded up to whole buckets of 8).
    pub fn with_slots(n: usize) -> Self {
        let nb = n.div_ceil(WAYS).max(2);
        Cuckoo { b: vec![EMPTY; nb], reduce: Reduce::new(nb), len: 0, stash: Vec::new() }
    }

    /// The other candidate bucket of an entry with signature `s` in bucket `b`: an
    /// involution (`alt(alt(b)) == b`) for any table size.
    #[inline(always)]
    fn alt(&self, b: usize, s: u16) -> usize {
        let f = (s as u64).wrapping_mul(0x5bd1_e995_5bd1_e995) >> 16;
        match self.reduce.mask_or_n() {
            Ok(mask) => ((b as u64 ^ f) & mask) as usize,
            Err(n) => ((f % n + n - b as u64) % n) as usize,
        }
    }

    #[inline(always)]
    fn free_slot(&self, b: usize) -> Option<usize> {
        let m = self.b[b].matches(0);
        (m != 0).then(|| m.trailing_zeros() as usize)
    }

    fn try_put(&mut self, hash: u64, id: u32) -> bool {
        let s = sig(hash);
        let b1 = self.reduce.of(hash);
        let b2 = self.alt(b1, s);
        for b in [b1, b2] {
            if let Some(i) = self.free_slot(b) {
                self.b[b].sig[i] = s;
                self.b[b].id[i] = id;
                self.len += 1;
                return true;
            }
        }
        // Breadth-first search for a bucket with a free slot, from both candidates.
        let mut q: Vec<Node> = Vec::with_capacity(BFS_NODES);
        q.push(Node { bucket: b1 as u32, parent: ROOT, pslot: 0 });
        if b2 != b1 {
            q.push(Node { bucket: b2 as u32, parent: ROOT, pslot: 0 });
        }
        let mut head = 0;
        while head < q.len() {
            let n = q[head];
            let nb = n.bucket as usize;
            for slot in 0..WAYS {
                let a = self.alt(nb, self.b[nb].sig[slot]);
                if a == nb || self.on_path(&q, head as u32, a) {
                    continue;
                }
                if let Some(f) = self.free_slot(a) {
                    // Move entries along the path, from the free end back to the root.
                    let (mut to_b, mut to_s) = (a, f);
                    let (mut cur, mut from_s) = (head as u32, slot);
                    loop {
                        let from_b = q[cur as usize].bucket as usize;
                        self.b[to_b].sig[to_s] = self.b[from_b].sig[from_s];
                        self.b[to_b].id[to_s] = self.b[from_b].id[from_s];
                        self.b[from_b].sig[from_s] = 0;
                        (to_b, to_s) = (from_b, from_s);
                        let node = q[cur as usize];
                        if node.parent == ROOT {
                            break;
                        }
                        from_s = node.pslot as usize;
                        cur = node.parent;
                    }
                    self.b[to_b].sig[to_s] = s;
                    self.b[to_b].id[to_s] = id;
                    self.len += 1;
                    return true;
                }
                if q.len() < BFS_NODES {
                    q.push(Node { bucket: a as u32, parent: head as u32, pslot: slot as u8 });
                }
            }
            head += 1;
        }
        false
    }

    /// Is bucket `b` on the path from node `i` to its root? (A path through one
    /// bucket twice would move an entry twice.)
    fn on_path(&self, q: &[Node], mut i: u32, b: usize) -> bool {
        loop {
            let n = q[i as usize];
            if n.bucket as usize == b {
                return true;
            }
            if n.parent == ROOT {
                return false;
            }
            i = n.parent;
        }
    }

    fn grow(&mut self, hash_of: &impl Fn(u32) -> u64) {
        let ids: Vec<u32> = self
            .b
            .iter()
            .flat_map(|bk| (0..WAYS).filter(|&i| bk.sig[i] != 0).map(|i| bk.id[i]))
            .chain(self.stash.iter().map(|e| e.1))
            .collect();
        *self = Cuckoo::with_slots(self.b.len() * 2 * WAYS);
        for id in ids {
            self.put(hash_of(id), id);
        }
    }

    fn put(&mut self, hash: u64, id: u32) {
        if !self.try_put(hash, id) {
            self.stash.push((hash, id));
            self.len += 1;
        }
    }
}

impl Reduce {
    #[inline(always)]
    fn mask_or_n(&self) -> Result<u64, u64> {
        match self.mask {
            Some(m) => Ok(m),
            None => Err(self.n),
        }
    }
}

impl FlowIndex for Cuckoo {
    #[inline(always)]
    fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let s = sig(hash);
        let b1 = self.reduce.of(hash);
        let bk = &self.b[b1];
        let mut m = bk.matches(s);
        while m != 0 {
            let i = m.trailing_zeros() as usize & (WAYS - 1);
            if eq(bk.id[i]) {
                return Some(bk.id[i]);
            }
            m &= m - 1;
        }
        let bk = &self.b[self.alt(b1, s)];
        let mut m = bk.matches(s);
        while m != 0 {
            let i = m.trailing_zeros() as usize & (WAYS - 1);
            if eq(bk.id[i]) {
                return Some(bk.id[i]);
            }
            m &= m - 1;
        }
        if self.stash.is_empty() {
            return None;
        }
        self.stash.iter().find(|e| e.0 == hash && eq(e.1)).map(|e| e.1)
    }

    fn insert(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64) {
        if self.try_put(hash, id) {
            return;
        }
        if self.len * 2 >= self.b.len() * WAYS {
            self.grow(&hash_of);
        }
        self.put(hash, id);
    }

    fn remove(&mut self, hash: u64, id: u32) {
        let s = sig(hash);
        let b1 = self.reduce.of(hash);
        for b in [b1, self.alt(b1, s)] {
            let mut m = self.b[b].matches(s);
            while m != 0 {
                let i = m.trailing_zeros() as usize & (WAYS - 1);
                if self.b[b].id[i] == id {
                    self.b[b].sig[i] = 0;
                    self.len -= 1;
                    return;
                }
                m &= m - 1;
            }
        }
        if let Some(at) = self.stash.iter().position(|e| e.1 == id) {
            self.stash.swap_remove(at);
            self.len -= 1;
            return;
        }
        debug_assert!(false, "removing an id that is not in the index");
    }

    #[inline]
    fn prefetch(&self, hash: u64) {
        let b1 = self.reduce.of(hash);
        prefetch_ptr(self.b.as_ptr().wrapping_add(b1));
        prefetch_ptr(self.b.as_ptr().wrapping_add(self.alt(b1, sig(hash))));
    }

    #[inline]
    fn candidate(&self, hash: u64) -> Option<u32> {
        let bk = &self.b[self.reduce.of(hash)];
        let m = bk.matches(sig(hash));
        (m != 0).then(|| bk.id[m.trailing_zeros() as usize])
    }

    fn probes(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> u32 {
        let s = sig(hash);
        let b1 = self.reduce.of(hash);
        let bk = &self.b[b1];
        let mut m = bk.matches(s);
        while m != 0 {
            let i = m.trailing_zeros() as usize & (WAYS - 1);
            if eq(bk.id[i]) {
                return 1;
            }
            m &= m - 1;
        }
        if self.stash.iter().any(|e| e.0 == hash && eq(e.1)) {
            3
        } else {
            2
        }
    }

    fn bytes(&self) -> usize {
        self.b.capacity() * std::mem::size_of::<Bucket>() + self.stash.capacity() * 16
    }

    fn buckets(&self) -> usize {
        self.reduce.n() * WAYS
    }
}
