//! Chaining with the first entry of every bucket in the bucket array (FlowMgmt §3.1:
//! "pre-allocates directly in the hash table one empty flow element per table line"):
//! a lookup in a bucket of one flow reads one 12-byte entry; collisions walk a chain of
//! entries in an overflow pool.

use super::{prefetch_ptr, tag, FlowIndex, Reduce};

const NIL: u32 = u32::MAX;

/// An entry: slot id + 1 (0 for an empty bucket, so a fresh array is zeroed memory,
/// which the allocator hands over without writing it), tag, next entry in the pool.
#[derive(Clone, Copy, Default)]
struct Link {
    id1: u32,
    tag: u32,
    next: u32,
}

pub struct Lists {
    heads: Vec<Link>,
    pool: Vec<Link>,
    free: u32,
    reduce: Reduce,
    len: usize,
    grow: bool,
}

impl Lists {
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
        Lists { heads: vec![Link::default(); n], pool: Vec::new(), free: NIL, reduce: Reduce::new(n), len: 0, grow }
    }

    fn alloc(&mut self, l: Link) -> u32 {
        if self.free != NIL {
            let i = self.free;
            self.free = self.pool[i as usize].next;
            self.pool[i as usize] = l;
            i
        } else {
            self.pool.push(l);
            (self.pool.len() - 1) as u32
        }
    }

    fn release(&mut self, i: u32) {
        self.pool[i as usize] = Link { id1: 0, tag: 0, next: self.free };
        self.free = i;
    }

    fn rehash(&mut self, n: usize, hash_of: &impl Fn(u32) -> u64) {
        let mut ids = Vec::with_capacity(self.len);
        for h in &self.heads {
            if h.id1 != 0 {
                ids.push(h.id1 - 1);
                let mut next = h.next;
                while next != NIL {
                    let l = self.pool[next as usize];
                    ids.push(l.id1 - 1);
                    next = l.next;
                }
            }
        }
        let grow = self.grow;
        *self = Self::make(n, grow);
        for id in ids {
            self.put(hash_of(id), id);
        }
    }

    fn put(&mut self, hash: u64, id: u32) {
        let b = self.reduce.of(hash);
        let new = Link { id1: id + 1, tag: tag(hash), next: NIL };
        if self.heads[b].id1 == 0 {
            self.heads[b] = new;
        } else {
            // After the head: the head stays where a lookup reads first.
            let p = self.alloc(Link { next: self.heads[b].next, ..new });
            self.heads[b].next = p;
        }
        self.len += 1;
    }
}

impl FlowIndex for Lists {
    #[inline(always)]
    fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let t = tag(hash);
        let mut l = self.heads[self.reduce.of(hash)];
        if l.id1 == 0 {
            return None;
        }
        loop {
            if l.tag == t && eq(l.id1 - 1) {
                return Some(l.id1 - 1);
            }
            if l.next == NIL {
                return None;
            }
            l = self.pool[l.next as usize];
        }
    }

    fn insert(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64) {
        if self.grow && self.len >= self.heads.len() {
            self.rehash(self.heads.len() * 2, &hash_of);
        }
        self.put(hash, id);
    }

    fn remove(&mut self, hash: u64, id: u32) {
        let b = self.reduce.of(hash);
        let head = self.heads[b];
        if head.id1 == id + 1 {
            if head.next == NIL {
                self.heads[b] = Link::default();
            } else {
                self.heads[b] = self.pool[head.next as usize];
                self.release(head.next);
            }
            self.len -= 1;
            return;
        }
        let (mut prev, mut cur) = (NIL, head.next);
        while cur != NIL {
            let l = self.pool[cur as usize];
            if l.id1 == id + 1 {
                if prev == NIL {
                    self.heads[b].next = l.next;
                } else {
                    self.pool[prev as usize].next = l.next;
                }
                self.release(cur);
                self.len -= 1;
                return;
            }
            prev = cur;
            cur = l.next;
        }
        debug_assert!(false, "removing an id that is not in the index");
    }

    #[inline]
    fn prefetch(&self, hash: u64) {
        prefetch_ptr(self.heads.as_ptr().wrapping_add(self.reduce.of(hash)));
    }

    #[inline]
    fn candidate(&self, hash: u64) -> Option<u32> {
        let l = self.heads[self.reduce.of(hash)];
        (l.id1 != 0 && l.tag == tag(hash)).then(|| l.id1 - 1)
    }

    fn probes(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> u32 {
        let t = tag(hash);
        let mut l = self.heads[self.reduce.of(hash)];
        let mut n = 1;
        if l.id1 == 0 {
            return n;
        }
        loop {
            if l.tag == t && eq(l.id1 - 1) {
                return n;
            }
            if l.next == NIL {
                return n;
            }
            n += 1;
            l = self.pool[l.next as usize];
        }
    }

    fn bytes(&self) -> usize {
        (self.heads.capacity() + self.pool.capacity()) * std::mem::size_of::<Link>()
    }

    fn buckets(&self) -> usize {
        self.reduce.n()
    }
}
