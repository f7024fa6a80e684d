//! The flow table's index: hash → slot id, behind one interface ([`FlowIndex`]) with
//! five structures (FlowMgmt §3–4 and what came after):
//!
//! - [`Lists`]: chaining, with the first entry of every bucket pre-allocated in the
//!   bucket array (the paper's "lists"), overflow entries in a pool;
//! - [`Trees`]: a sorted vector per bucket, binary-searched (the paper's "trees": a
//!   balanced search structure per bucket, reached through one more pointer);
//! - [`Swiss`]: open addressing with SIMD probing of 16 control bytes (hashbrown);
//! - [`Cuckoo`]: bucketized cuckoo hashing as DPDK's rte_hash: 2 candidate buckets of 8
//!   slots with 16-bit signatures, breadth-first displacement on insertion;
//! - [`Chunks`] (the default): chunked open addressing as folly's F14: 12 one-byte
//!   tags and 12 ids in one 64-byte line, an overflow count per chunk instead of
//!   tombstones.
//!
//! An index stores slot ids only; keys stay in the table's slab, and the index asks the
//! caller (`eq`) whether a candidate slot holds the key, so every structure compares
//! keys the same way. [`AnyIndex`] is the run-time choice (an enum, matched per call:
//! the lab measures it against the structures called directly).

mod chunks;
mod cuckoo;
mod lists;
mod swiss;
mod trees;

pub use chunks::Chunks;
pub use cuckoo::Cuckoo;
pub use lists::Lists;
pub use swiss::Swiss;
pub use trees::Trees;

/// A hash index of slot ids.
pub trait FlowIndex {
    /// The id whose entry has `hash` and for which `eq(id)` holds.
    fn find(&self, hash: u64, eq: impl FnMut(u32) -> bool) -> Option<u32>;
    /// Adds `id` (not in the index) under `hash`. `hash_of` gives the hash of any id
    /// already in the index (structures that grow or move entries rehash with it).
    fn insert(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64);
    /// Removes `id`, which is in the index under `hash`.
    fn remove(&mut self, hash: u64, id: u32);
    /// Starts loading the memory a lookup of `hash` will read first.
    #[inline]
    fn prefetch(&self, _hash: u64) {}
    /// The first slot id a lookup of `hash` would compare, if any (to prefetch the slot
    /// before the lookup proper).
    #[inline]
    fn candidate(&self, _hash: u64) -> Option<u32> {
        None
    }
    /// Entries examined by a lookup of `hash` (for the chain-length statistics of the
    /// lab: list entries walked, tree entries compared, hashbrown candidates whose
    /// control byte matched, cuckoo buckets visited, chunk entries whose tag matched).
    fn probes(&self, hash: u64, eq: impl FnMut(u32) -> bool) -> u32;
    /// Bytes the index holds (allocated), for the memory per flow.
    fn bytes(&self) -> usize;
    /// Buckets (lists, trees) or slots (hashbrown; cuckoo: 8 per bucket; chunks: 12 per
    /// chunk) of the index now.
    fn buckets(&self) -> usize;
}

/// Bucket of a hash in a table of `n` buckets: a mask for powers of two, a remainder
/// otherwise (the paper's modulo: a weak hash is only as good as the bits the reduction
/// keeps, which is what Fig. 5 shows). Independent of the worker choice, which takes a
/// finalizer of the hash (`FlowHasher::worker_of`), not its low bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reduce {
    n: u64,
    mask: Option<u64>,
}

impl Reduce {
    pub(crate) fn new(n: usize) -> Self {
        let n = n.max(1) as u64;
        Reduce { n, mask: n.is_power_of_two().then_some(n - 1) }
    }

    #[inline(always)]
    pub(crate) fn of(&self, h: u64) -> usize {
        match self.mask {
            Some(m) => (h & m) as usize,
            None => (h % self.n) as usize,
        }
    }

    pub(crate) fn n(&self) -> usize {
        self.n as usize
    }
}

/// A 32-bit tag of a hash, kept next to an id so most mismatches are decided without
/// reading the slab.
#[inline(always)]
pub(crate) fn tag(h: u64) -> u32 {
    (h ^ (h >> 32)) as u32
}

/// The structures, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum IndexKind {
    Lists,
    Trees,
    Swiss,
    Cuckoo,
    /// The default: the fastest, or within 10% of the fastest, on every key stream of
    /// the lab (docs/BENCHMARKS.md).
    #[default]
    Chunks,
}

impl IndexKind {
    pub const ALL: [IndexKind; 5] =
        [IndexKind::Lists, IndexKind::Trees, IndexKind::Swiss, IndexKind::Cuckoo, IndexKind::Chunks];

    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Lists => "lists",
            IndexKind::Trees => "trees",
            IndexKind::Swiss => "swiss",
            IndexKind::Cuckoo => "cuckoo",
            IndexKind::Chunks => "chunks",
        }
    }

    pub fn from_name(s: &str) -> Option<IndexKind> {
        IndexKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Size of an index: a fixed number of slots, or grown with the flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Slots {
    /// Start small and grow: lists and trees double their buckets when the flows
    /// outnumber them, hashbrown at 7/8 load, cuckoo when a displacement fails, chunks
    /// at 10 entries per 12-slot chunk.
    #[default]
    Auto,
    /// Buckets (lists, trees), slots (hashbrown: reserved up front, still grows when
    /// full; cuckoo: 8 per bucket; chunks: room for this many entries, still grows when
    /// full). Lists and trees keep this size whatever the load.
    Fixed(usize),
}

/// One of the five structures, chosen at run time.
pub enum AnyIndex {
    Lists(Lists),
    Trees(Trees),
    Swiss(Swiss),
    Cuckoo(Cuckoo),
    Chunks(Chunks),
}

impl AnyIndex {
    /// An index of `kind`; `Slots::Auto` starts with room for `min(capacity, 2^16)`.
    pub fn new(kind: IndexKind, slots: Slots, capacity: usize) -> Self {
        let start = capacity.clamp(1, 1 << 16);
        match kind {
            IndexKind::Lists => AnyIndex::Lists(match slots {
                Slots::Auto => Lists::growing(start),
                Slots::Fixed(n) => Lists::fixed(n),
            }),
            IndexKind::Trees => AnyIndex::Trees(match slots {
                Slots::Auto => Trees::growing(start),
                Slots::Fixed(n) => Trees::fixed(n),
            }),
            IndexKind::Swiss => AnyIndex::Swiss(Swiss::with_capacity(match slots {
                Slots::Auto => start,
                Slots::Fixed(n) => n,
            })),
            IndexKind::Cuckoo => AnyIndex::Cuckoo(Cuckoo::with_slots(match slots {
                Slots::Auto => start,
                Slots::Fixed(n) => n,
            })),
            IndexKind::Chunks => AnyIndex::Chunks(Chunks::with_capacity(match slots {
                Slots::Auto => start,
                Slots::Fixed(n) => n,
            })),
        }
    }

    pub fn kind(&self) -> IndexKind {
        match self {
            AnyIndex::Lists(_) => IndexKind::Lists,
            AnyIndex::Trees(_) => IndexKind::Trees,
            AnyIndex::Swiss(_) => IndexKind::Swiss,
            AnyIndex::Cuckoo(_) => IndexKind::Cuckoo,
            AnyIndex::Chunks(_) => IndexKind::Chunks,
        }
    }
}

impl Default for AnyIndex {
    fn default() -> Self {
        AnyIndex::Chunks(Chunks::with_capacity(1024))
    }
}

macro_rules! each {
    ($self:ident, $i:ident => $e:expr) => {
        match $self {
            AnyIndex::Lists($i) => $e,
            AnyIndex::Trees($i) => $e,
            AnyIndex::Swiss($i) => $e,
            AnyIndex::Cuckoo($i) => $e,
            AnyIndex::Chunks($i) => $e,
        }
    };
}

impl FlowIndex for AnyIndex {
    #[inline(always)]
    fn find(&self, hash: u64, eq: impl FnMut(u32) -> bool) -> Option<u32> {
        each!(self, i => i.find(hash, eq))
    }
    #[inline]
    fn insert(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64) {
        each!(self, i => i.insert(hash, id, hash_of))
    }
    #[inline]
    fn remove(&mut self, hash: u64, id: u32) {
        each!(self, i => i.remove(hash, id))
    }
    #[inline]
    fn prefetch(&self, hash: u64) {
        each!(self, i => i.prefetch(hash))
    }
    #[inline]
    fn candidate(&self, hash: u64) -> Option<u32> {
        each!(self, i => i.candidate(hash))
    }
    fn probes(&self, hash: u64, eq: impl FnMut(u32) -> bool) -> u32 {
        each!(self, i => i.probes(hash, eq))
    }
    fn bytes(&self) -> usize {
        each!(self, i => i.bytes())
    }
    fn buckets(&self) -> usize {
        each!(self, i => i.buckets())
    }
}

/// Starts loading the cache line at `p` (a hint: no effect on what the program does).
#[inline(always)]
pub(crate) fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint that never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16),
        Find(u16),
        Remove(u16),
    }

    fn op(keys: u16) -> impl Strategy<Value = Op> {
        prop_oneof![(0..keys).prop_map(Op::Insert), (0..keys).prop_map(Op::Find), (0..keys).prop_map(Op::Remove),]
    }

    /// Hashes with few distinct values, so collisions, long chains, full cuckoo
    /// buckets and displacements happen in small tests.
    fn weak_hash(key: u16, bits: u32) -> u64 {
        let h = (key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        if bits >= 64 {
            h
        } else {
            h & ((1u64 << bits) - 1)
        }
    }

    fn check(mut idx: AnyIndex, ops: Vec<Op>, bits: u32) -> Result<(), TestCaseError> {
        // Slot ids are handed out as the table does (a slab with a free list); the
        // key of a slot is kept in `slab`.
        let mut slab: Vec<Option<u16>> = Vec::new();
        let mut free: Vec<u32> = Vec::new();
        let mut model: HashMap<u16, u32> = HashMap::new();
        for op in ops {
            match op {
                Op::Insert(k) => {
                    if model.contains_key(&k) {
                        continue;
                    }
                    let id = free.pop().unwrap_or_else(|| {
                        slab.push(None);
                        (slab.len() - 1) as u32
                    });
                    slab[id as usize] = Some(k);
                    let s = &slab;
                    idx.insert(weak_hash(k, bits), id, |i| weak_hash(s[i as usize].unwrap(), bits));
                    model.insert(k, id);
                }
                Op::Find(k) => {
                    let got = idx.find(weak_hash(k, bits), |i| slab[i as usize] == Some(k));
                    prop_assert_eq!(got, model.get(&k).copied());
                    if got.is_some() {
                        prop_assert!(idx.probes(weak_hash(k, bits), |i| slab[i as usize] == Some(k)) >= 1);
                    }
                }
                Op::Remove(k) => {
                    if let Some(id) = model.remove(&k) {
                        idx.remove(weak_hash(k, bits), id);
                        slab[id as usize] = None;
                        free.push(id);
                    }
                }
            }
        }
        for (&k, &id) in &model {
            prop_assert_eq!(idx.find(weak_hash(k, bits), |i| slab[i as usize] == Some(k)), Some(id));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Every structure, fixed and growing, power-of-two size or not, with strong and
        /// colliding hashes, answers as a reference map.
        #[test]
        fn every_index_matches_a_reference_map(
            ops in proptest::collection::vec(op(300), 1..600),
            size in 1usize..40,
            bits in prop_oneof![Just(3u32), Just(6), Just(64)],
            auto: bool,
        ) {
            for kind in IndexKind::ALL {
                let slots = if auto { Slots::Auto } else { Slots::Fixed(size) };
                check(AnyIndex::new(kind, slots, size), ops.clone(), bits)?;
            }
        }
    }
}
