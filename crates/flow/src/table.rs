//! The per-worker flow table.
//!
//! A slab of slots indexed by a [`FlowIndex`] that stores only slot ids (by default
//! F14-style chunks: 12 tags and 12 ids per cache line; the lab measures the others),
//! so the index of a worker stays small and cache-friendly while values stay put. A slot is split in
//! three arrays: its hot line ([`Hot`], 64 bytes, aligned: the key packed in five words
//! and the hash) is what a lookup compares; its metadata ([`Meta`], 16 bytes, dense:
//! last-seen time and LRU links) is what every packet updates and what the collector
//! scans; the value (the caller's flow) is read only once the flow is found. An
//! intrusive doubly-linked list through the metadata keeps the slots in order of last
//! use: when the table is full, the head (the flow idle the longest) is evicted,
//! counted, and handed back to the caller to be written out — never dropped silently.
//!
//! Garbage collection is incremental, as in DPDKStat (STA-COTS §III, DPDKStat §5.2):
//! every ΔT/M of packet time the caller scans 1/M of the slots ([`Gc`]), so the cost of
//! expiry is spread over packets instead of stalling one packet with a full scan.
//!
//! Lookups come one at a time ([`FlowTable::find`]) or in bursts
//! ([`FlowTable::find_bulk`], after DPDK's `rte_hash_lookup_bulk`: every bucket of the
//! burst is prefetched, then every candidate slot, then the keys are compared, so the
//! cache misses of a burst overlap).

use crate::index::{prefetch_ptr, AnyIndex, FlowIndex, IndexKind, Slots};
use crate::FlowKey;
use std::cell::Cell;

/// Index of a flow's slot; stable for the flow's life in the table.
pub type SlotId = u32;

const NIL: u32 = u32::MAX;

/// Most keys [`FlowTable::find_bulk`] handles in one pass (longer bursts are split).
pub const BULK_MAX: usize = 64;

/// A flow key packed in five words (both addresses, then ports, protocol and IP
/// version in the fifth), so that two keys compare in five XORs and one test, without
/// a branch per field or padding bytes to skip.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct Packed([u64; 5]);

impl Packed {
    #[inline(always)]
    fn of(k: &FlowKey) -> Packed {
        Packed([
            k.lo_ip as u64,
            (k.lo_ip >> 64) as u64,
            k.hi_ip as u64,
            (k.hi_ip >> 64) as u64,
            k.lo_port as u64 | (k.hi_port as u64) << 16 | (k.proto as u64) << 32 | (k.ip_version as u64) << 40,
        ])
    }

    #[inline]
    fn key(&self) -> FlowKey {
        let w = &self.0;
        FlowKey {
            lo_ip: w[0] as u128 | (w[1] as u128) << 64,
            hi_ip: w[2] as u128 | (w[3] as u128) << 64,
            lo_port: w[4] as u16,
            hi_port: (w[4] >> 16) as u16,
            proto: (w[4] >> 32) as u8,
            ip_version: (w[4] >> 40) as u8,
        }
    }

    #[inline(always)]
    fn same(&self, o: &Packed) -> bool {
        let (a, b) = (&self.0, &o.0);
        ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0
    }
}

/// The hot part of a slot: the line a lookup compares (the packed key) with the hash
/// (for removal and rehashing), alone in a 64-byte cache line so that it never
/// straddles two.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Hot {
    key: Packed,
    hash: u64,
}

/// What expiry and the LRU list need of a slot, in a dense array of its own: the
/// collector's scan and the LRU updates of every packet then read 16 bytes per flow,
/// contiguous (four flows a cache line), instead of a line per flow.
#[derive(Clone, Copy)]
struct Meta {
    /// Packet time of the last use; `u64::MAX` for a free slot (never idle).
    last_ns: u64,
    prev: u32,
    next: u32,
}

/// The first slot of `meta` last used before `threshold`: eight slots per test (most
/// groups of eight hold no candidate, and a test without a branch per slot is a few
/// instructions per slot), then one by one inside the group that holds one.
#[inline]
fn first_idle(meta: &[Meta], threshold: u64) -> Option<usize> {
    let mut groups = meta.chunks_exact(8);
    let mut base = 0;
    for g in groups.by_ref() {
        if g.iter().fold(false, |a, h| a | (h.last_ns < threshold)) {
            return g.iter().position(|h| h.last_ns < threshold).map(|p| base + p);
        }
        base += 8;
    }
    groups.remainder().iter().position(|h| h.last_ns < threshold).map(|p| base + p)
}

/// A bounded flow table with LRU eviction. See the module doc. `I` is the index
/// structure: [`AnyIndex`] (chosen at run time) unless a caller names one.
pub struct FlowTable<V, I = AnyIndex> {
    map: I,
    /// Invariant: every id the index holds is `< hot.len()` (ids are handed out by
    /// `insert` from this array, which never shrinks), so the probe loop indexes it
    /// without a bounds check.
    hot: Vec<Hot>,
    meta: Vec<Meta>,
    vals: Vec<Option<V>>,
    free: Vec<u32>,
    /// Least recently used (oldest idle) slot.
    head: u32,
    /// Most recently used slot.
    tail: u32,
    len: usize,
    capacity: usize,
    gc_cursor: usize,
    insertions: u64,
    removals: u64,
    /// Exact-match cache in front of the index (Open vSwitch's EMC): direct-mapped by
    /// hash bits the index does not use for its position, an entry is the hash's high
    /// 32 bits and the slot id + 1 (0: empty). A hit costs one L1 load, a tag compare
    /// and the key compare, without reading the index; heavy hitters (skewed streams)
    /// mostly hit. Invariant: an entry names a live slot (removal clears it).
    emc: Box<[Cell<u64>]>,
}

/// Entries of the exact-match cache (32 KiB; 1024 entries measured lower on the trace
/// and Zipf streams, docs/BENCHMARKS.md).
const EMC: usize = 4096;

#[inline(always)]
fn emc_slot(hash: u64) -> usize {
    (hash >> 20) as usize & (EMC - 1)
}

#[inline(always)]
fn emc_entry(hash: u64, id: u32) -> u64 {
    (hash & 0xffff_ffff_0000_0000) | (id as u64 + 1)
}

impl<V> FlowTable<V> {
    /// A table holding at most `capacity` flows (at least 1), with the default index.
    pub fn new(capacity: usize) -> Self {
        Self::with_kind(capacity, IndexKind::default(), Slots::Auto)
    }

    /// A table with an index of `kind` and size `slots`.
    pub fn with_kind(capacity: usize, kind: IndexKind, slots: Slots) -> Self {
        Self::with_index(capacity, AnyIndex::new(kind, slots, capacity))
    }
}

impl<V, I: FlowIndex> FlowTable<V, I> {
    /// A table holding at most `capacity` flows (at least 1), indexed by `index`.
    pub fn with_index(capacity: usize, index: I) -> Self {
        let capacity = capacity.clamp(1, u32::MAX as usize - 1);
        let initial = capacity.min(1 << 16);
        FlowTable {
            map: index,
            hot: Vec::with_capacity(initial),
            meta: Vec::with_capacity(initial),
            vals: Vec::with_capacity(initial),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            len: 0,
            capacity,
            gc_cursor: 0,
            insertions: 0,
            removals: 0,
            emc: (0..EMC).map(|_| Cell::new(0)).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Reserves the slot arrays for the whole capacity now, so that they never grow
    /// (the memory is only address space until flows fill it: pages are backed as they
    /// are first written). Growing moves an array to a new place: at 200,000 flows that
    /// is a copy of about 100 MB and the faulting in of twice that, a stall of tens to
    /// hundreds of milliseconds for the one packet that inserts the flow
    /// (docs/BENCHMARKS.md, "Garbage collection: per-packet time"). Returns false, and
    /// leaves the arrays to grow, where the address space cannot be had (strict
    /// overcommit, a small 32-bit space). Only an empty table is reserved (a new one:
    /// a reallocation would copy the arrays' old allocation, touching it all).
    pub fn reserve_all(&mut self) -> bool {
        if !self.hot.is_empty() {
            return false;
        }
        fn exact<T>(v: &mut Vec<T>, n: usize) -> bool {
            let mut fresh = Vec::new();
            let ok = fresh.try_reserve_exact(n).is_ok();
            if ok {
                *v = fresh;
            }
            ok
        }
        let n = self.capacity;
        exact(&mut self.hot, n) && exact(&mut self.meta, n) && exact(&mut self.vals, n)
    }

    /// The hot part of a slot the index gave.
    #[inline(always)]
    fn hot_of(hot: &[Hot], id: u32) -> &Hot {
        debug_assert!((id as usize) < hot.len());
        // SAFETY: ids come from the index, which holds only ids below `hot.len()` (the
        // invariant on `FlowTable::hot`).
        unsafe { hot.get_unchecked(id as usize) }
    }

    /// The slot of `key`, if it is in the table. `hash` must be the key's flow hash.
    #[inline(always)]
    pub fn find(&self, key: &FlowKey, hash: u64) -> Option<SlotId> {
        let q = Packed::of(key);
        let hot = self.hot.as_slice();
        let cell = &self.emc[emc_slot(hash)];
        let e = cell.get();
        if (e ^ hash) >> 32 == 0 && e as u32 != 0 {
            let id = e as u32 - 1;
            if Self::hot_of(hot, id).key.same(&q) {
                return Some(id);
            }
        }
        let found = self.map.find(hash, |i| Self::hot_of(hot, i).key.same(&q));
        if let Some(id) = found {
            cell.set(emc_entry(hash, id));
        }
        found
    }

    /// Looks up a burst of keys (`hashes[j]` is the hash of `keys[j]`) into `out[j]`, as
    /// [`FlowTable::find`] would one at a time, in three passes over the burst (DPDK's
    /// `rte_hash_lookup_bulk`): prefetch the index memory of every hash; take the
    /// first candidate slot of each (the exact-match cache's, else the index's: see
    /// [`FlowIndex::candidate`]) and prefetch its hot line, metadata and value; then
    /// compare the keys, falling back to [`FlowTable::find`] where the candidate is
    /// absent or not the key.
    pub fn find_bulk(&self, keys: &[FlowKey], hashes: &[u64], out: &mut [Option<SlotId>]) {
        let n = keys.len().min(hashes.len()).min(out.len());
        let mut start = 0;
        while start < n {
            let m = (n - start).min(BULK_MAX);
            let (keys, hashes, out) = (&keys[start..start + m], &hashes[start..start + m], &mut out[start..start + m]);
            for &h in hashes {
                self.map.prefetch(h);
            }
            let mut cand = [NIL; BULK_MAX];
            for (c, &h) in cand.iter_mut().zip(hashes) {
                let e = self.emc[emc_slot(h)].get();
                let from_emc = ((e ^ h) >> 32 == 0 && e as u32 != 0).then(|| e as u32 - 1);
                if let Some(id) = from_emc.or_else(|| self.map.candidate(h)) {
                    *c = id;
                    self.prefetch_slot(id);
                }
            }
            let hot = self.hot.as_slice();
            for ((o, k), (&c, &h)) in out.iter_mut().zip(keys).zip(cand.iter().zip(hashes)) {
                let q = Packed::of(k);
                *o = if c != NIL && Self::hot_of(hot, c).key.same(&q) { Some(c) } else { self.find(k, h) };
            }
            start += m;
        }
    }

    /// Whether slot `id` holds the flow `key` now (to check an answer of
    /// [`FlowTable::find_bulk`] after the table changed).
    #[inline]
    pub fn holds(&self, id: SlotId, key: &FlowKey) -> bool {
        self.meta.get(id as usize).is_some_and(|m| m.last_ns != u64::MAX)
            && self.hot[id as usize].key.same(&Packed::of(key))
    }

    /// Flows inserted and removed (expired, evicted) since the table was made: an
    /// answer of [`FlowTable::find_bulk`] stays true while these do not change (a
    /// `Some` while no flow was removed, a `None` while none was inserted).
    #[inline]
    pub fn changes(&self) -> (u64, u64) {
        (self.insertions, self.removals)
    }

    /// Starts loading the index memory a [`FlowTable::find`] of `hash` reads first
    /// (for lookups batched over a burst of packets).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        self.map.prefetch(hash);
    }

    /// The slot the index would compare first for `hash` (see [`FlowIndex::candidate`]).
    #[inline]
    pub fn candidate(&self, hash: u64) -> Option<SlotId> {
        self.map.candidate(hash)
    }

    /// Starts loading a slot's hot line, its metadata and its value.
    #[inline]
    pub fn prefetch_slot(&self, id: SlotId) {
        prefetch_ptr(self.hot.as_ptr().wrapping_add(id as usize));
        prefetch_ptr(self.meta.as_ptr().wrapping_add(id as usize));
        prefetch_ptr(self.vals.as_ptr().wrapping_add(id as usize));
    }

    /// Entries the index examines to look `key` up (see [`FlowIndex::probes`]).
    pub fn probes(&self, key: &FlowKey, hash: u64) -> u32 {
        let q = Packed::of(key);
        let (hot, vals) = (&self.hot, &self.vals);
        self.map.probes(hash, |i| vals[i as usize].is_some() && hot[i as usize].key.same(&q))
    }

    /// The index.
    pub fn index(&self) -> &I {
        &self.map
    }

    /// Bytes one flow's slot takes in the slot arrays, the free list and (about) the
    /// index: what the table of a capacity reserves per flow.
    pub fn slot_bytes() -> usize {
        std::mem::size_of::<Hot>() + std::mem::size_of::<Meta>() + std::mem::size_of::<Option<V>>() + 4 + 16
    }

    /// Bytes held by the index, the hot and cold slot arrays (allocated capacity).
    pub fn bytes(&self) -> usize {
        self.map.bytes()
            + self.hot.capacity() * std::mem::size_of::<Hot>()
            + self.meta.capacity() * std::mem::size_of::<Meta>()
            + self.vals.capacity() * std::mem::size_of::<Option<V>>()
            + self.free.capacity() * 4
    }

    #[inline]
    pub fn get(&self, id: SlotId) -> &V {
        self.vals[id as usize].as_ref().expect("a live slot holds a value")
    }

    #[inline]
    pub fn get_mut(&mut self, id: SlotId) -> &mut V {
        self.vals[id as usize].as_mut().expect("a live slot holds a value")
    }

    /// The key of a live flow.
    #[inline]
    pub fn key(&self, id: SlotId) -> FlowKey {
        self.hot[id as usize].key.key()
    }

    /// Packet time the flow was last touched.
    #[inline]
    pub fn last_ns(&self, id: SlotId) -> u64 {
        self.meta[id as usize].last_ns
    }

    /// Marks the flow as used at `ts_ns` (time never goes backwards for a flow) and
    /// moves it to the young end of the LRU list.
    #[inline]
    pub fn touch(&mut self, id: SlotId, ts_ns: u64) {
        let m = &mut self.meta[id as usize];
        m.last_ns = m.last_ns.max(ts_ns);
        if self.tail != id {
            self.unlink(id);
            self.push_tail(id);
        }
    }

    /// Marks the flow as used at `ts_ns` without moving it in the LRU list: for users
    /// that never fill the table (the lab's fmsim mode), where the order does not matter.
    #[inline]
    pub fn touch_time(&mut self, id: SlotId, ts_ns: u64) {
        let m = &mut self.meta[id as usize];
        m.last_ns = m.last_ns.max(ts_ns);
    }

    /// The flow idle the longest (the one a full table evicts next).
    pub fn oldest(&self) -> Option<SlotId> {
        (self.head != NIL).then_some(self.head)
    }

    /// Inserts a flow that is not in the table. When the table is full, the flow
    /// idle the longest is evicted first and returned.
    pub fn insert(&mut self, key: FlowKey, hash: u64, val: V, ts_ns: u64) -> (SlotId, Option<(FlowKey, V)>) {
        let evicted = if self.len >= self.capacity && self.head != NIL { Some(self.remove(self.head)) } else { None };
        let hot = Hot { key: Packed::of(&key), hash };
        let meta = Meta { last_ns: ts_ns, prev: NIL, next: NIL };
        let id = match self.free.pop() {
            Some(id) => {
                self.hot[id as usize] = hot;
                self.meta[id as usize] = meta;
                self.vals[id as usize] = Some(val);
                id
            }
            None => {
                self.hot.push(hot);
                self.meta.push(meta);
                self.vals.push(Some(val));
                (self.hot.len() - 1) as u32
            }
        };
        let hots = &self.hot;
        self.map.insert(hash, id, |i| hots[i as usize].hash);
        self.emc[emc_slot(hash)].set(emc_entry(hash, id));
        self.push_tail(id);
        self.len += 1;
        self.insertions += 1;
        (id, evicted)
    }

    /// Removes a flow and gives back its key and value.
    pub fn remove(&mut self, id: SlotId) -> (FlowKey, V) {
        let hash = self.hot[id as usize].hash;
        self.map.remove(hash, id);
        let cell = &self.emc[emc_slot(hash)];
        if cell.get() == emc_entry(hash, id) {
            cell.set(0);
        }
        self.unlink(id);
        self.meta[id as usize].last_ns = u64::MAX;
        self.free.push(id);
        self.len -= 1;
        self.removals += 1;
        (self.hot[id as usize].key.key(), self.vals[id as usize].take().expect("a live slot holds a value"))
    }

    /// Scans the next `n` slots (round robin over the whole slab) and removes the
    /// flows for which `expired(key, value, last_ns)` says yes, handing them to `out`.
    /// Flows used within `min_idle_ns` of `now_ns` (and free slots) are passed over
    /// on their time alone (one compare per slot, in a tight loop over the hot lines),
    /// without touching the flow's value.
    pub fn scan(
        &mut self,
        n: usize,
        now_ns: u64,
        min_idle_ns: u64,
        mut expired: impl FnMut(&FlowKey, &V, u64) -> bool,
        mut out: impl FnMut(FlowKey, V),
    ) {
        let total = self.hot.len();
        // Idle past `min_idle_ns` ⇔ last < now − min_idle (free slots: u64::MAX, never).
        let threshold = now_ns.saturating_sub(min_idle_ns);
        let mut left = n.min(total);
        while left > 0 {
            if self.gc_cursor >= total {
                self.gc_cursor = 0;
            }
            let (start, end) = (self.gc_cursor, (self.gc_cursor + left).min(total));
            left -= end - start;
            self.gc_cursor = end;
            let mut i = start;
            while let Some(p) = first_idle(&self.meta[i..end], threshold) {
                i += p;
                let (key, last) = (self.hot[i].key.key(), self.meta[i].last_ns);
                if self.vals[i].as_ref().is_some_and(|v| expired(&key, v, last)) {
                    let (k, v) = self.remove(i as u32);
                    out(k, v);
                }
                i += 1;
            }
        }
    }

    /// Removes the flows whose hash `pick` chooses and gives them back with their key,
    /// hash and last-use time (to move them to another table: the scheduler's bins).
    pub fn take_where(&mut self, mut pick: impl FnMut(u64) -> bool) -> Vec<(FlowKey, u64, V, u64)> {
        let mut out = Vec::new();
        for i in 0..self.hot.len() {
            if self.vals[i].is_some() && pick(self.hot[i].hash) {
                let (hash, last) = (self.hot[i].hash, self.meta[i].last_ns);
                let (k, v) = self.remove(i as u32);
                out.push((k, hash, v, last));
            }
        }
        out
    }

    /// Removes every flow, oldest first.
    pub fn drain(&mut self, mut out: impl FnMut(FlowKey, V)) {
        while self.head != NIL {
            let (k, v) = self.remove(self.head);
            out(k, v);
        }
    }

    /// Visits every live flow with its last-use time.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&FlowKey, u64, &mut V)) {
        for ((h, m), v) in self.hot.iter().zip(&self.meta).zip(&mut self.vals) {
            if let Some(v) = v {
                f(&h.key.key(), m.last_ns, v);
            }
        }
    }

    /// Number of slots in the slab (live or free): what a full scan visits.
    pub fn slab_len(&self) -> usize {
        self.hot.len()
    }

    fn unlink(&mut self, id: SlotId) {
        let Meta { prev, next, .. } = self.meta[id as usize];
        if prev != NIL {
            self.meta[prev as usize].next = next;
        } else if self.head == id {
            self.head = next;
        }
        if next != NIL {
            self.meta[next as usize].prev = prev;
        } else if self.tail == id {
            self.tail = prev;
        }
        let m = &mut self.meta[id as usize];
        m.prev = NIL;
        m.next = NIL;
    }

    fn push_tail(&mut self, id: SlotId) {
        let old = self.tail;
        let m = &mut self.meta[id as usize];
        m.prev = old;
        m.next = NIL;
        if old != NIL {
            self.meta[old as usize].next = id;
        } else {
            self.head = id;
        }
        self.tail = id;
    }
}

/// Settings of the incremental garbage collector: every `period_ns / steps` of packet
/// time, `1/steps` of the table is scanned, so the whole table is visited once per
/// `period_ns` (DPDKStat's ΔT and M).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcConfig {
    pub period_ns: u64,
    pub steps: u32,
}

impl Default for GcConfig {
    /// ΔT = 5 s of packet time (Tstat's period, DPDKStat §5.2) in M = 10,000 steps of
    /// 0.5 ms: a step scans 0.01% of the table, which keeps a GC packet within a few
    /// times an ordinary packet's time up to ~10^5 flows per worker (the bound
    /// α ≤ (L−1)·t/t_OP and the measurements: docs/BENCHMARKS.md, "Garbage
    /// collection"). A packet does one step at most, so below one packet per 0.5 ms
    /// the scan takes longer than ΔT (10,000 packets); a flow then stays in memory
    /// longer past its timeout, its record is not affected (expiry is also decided
    /// when the next packet of its 5-tuple arrives).
    fn default() -> Self {
        GcConfig { period_ns: 5_000_000_000, steps: 10_000 }
    }
}

/// The collector's clock: says when a step is due and how many slots it scans.
#[derive(Clone, Debug)]
pub struct Gc {
    cfg: GcConfig,
    /// ΔT/M, computed once: a division per packet is not free.
    step_ns: u64,
    next_ns: Option<u64>,
}

impl Gc {
    pub fn new(cfg: GcConfig) -> Self {
        let cfg = GcConfig { period_ns: cfg.period_ns.max(1), steps: cfg.steps.max(1) };
        Gc { cfg, step_ns: (cfg.period_ns / cfg.steps as u64).max(1), next_ns: None }
    }

    /// At packet time `now_ns`, how many of `slab_len` slots to scan (0 when no step
    /// is due): one step (`1/steps` of the slots) at most per call. Steps missed during
    /// a gap in packet time are owed, at most one full scan's worth, and paid one per
    /// packet by the packets that follow: a gap never makes one packet scan more than a
    /// step (which is what bounds the time of a GC packet, DPDKStat §5.2).
    #[inline]
    pub fn poll(&mut self, now_ns: u64, slab_len: usize) -> usize {
        let step_ns = self.step_ns;
        let next = *self.next_ns.get_or_insert(now_ns.saturating_add(step_ns));
        if now_ns < next {
            return 0;
        }
        let owed_ns = step_ns.saturating_mul(self.cfg.steps as u64 - 1);
        let due = next.max(now_ns.saturating_sub(owed_ns));
        self.next_ns = Some(due.saturating_add(step_ns));
        slab_len.div_ceil(self.cfg.steps as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn k(i: u32) -> FlowKey {
        FlowKey::new(4, 17, i as u128, 1, 0xffff_ffff, 2).0
    }

    fn h(key: &FlowKey) -> u64 {
        crate::FlowHasher::new(1).hash(key)
    }

    /// A reserved table never moves its slot arrays (no copy while a packet waits),
    /// and only a new table is reserved.
    #[test]
    fn a_reserved_table_does_not_grow() {
        let mut t = FlowTable::<u32>::new(100_000);
        assert!(t.reserve_all());
        let (hot, meta, vals) = (t.hot.as_ptr(), t.meta.as_ptr(), t.vals.as_ptr());
        for i in 0..100_000 {
            t.insert(k(i), h(&k(i)), i, i as u64);
        }
        assert_eq!((t.hot.as_ptr(), t.meta.as_ptr(), t.vals.as_ptr()), (hot, meta, vals));
        assert!(!t.reserve_all(), "a table holding flows is not reserved again");
        assert!(t.hot.capacity() >= 100_000 && t.vals.capacity() < 2 * 100_000);
    }

    #[test]
    fn evicts_the_oldest_idle_flow() {
        let mut t = FlowTable::new(3);
        for i in 0..3 {
            t.insert(k(i), h(&k(i)), i, 100 + i as u64);
        }
        // Flow 0 is used again, so flow 1 is now the one idle the longest.
        let id0 = t.find(&k(0), h(&k(0))).unwrap();
        t.touch(id0, 200);
        let (_, ev) = t.insert(k(9), h(&k(9)), 9, 300);
        assert_eq!(ev, Some((k(1), 1)));
        assert_eq!(t.len(), 3);
        assert!(t.find(&k(1), h(&k(1))).is_none());
    }

    #[test]
    fn gc_scans_the_whole_table_once_per_period() {
        let mut gc = Gc::new(GcConfig { period_ns: 1000, steps: 10 });
        assert_eq!(gc.poll(0, 100), 0);
        let mut scanned = 0;
        for t in (0..=1000).step_by(10) {
            scanned += gc.poll(t, 100);
        }
        assert_eq!(scanned, 100);
        // A jump of a day owes at most one full scan, paid one step per packet.
        let day = 86_400_000_000_000;
        let paid: Vec<usize> = (0..12).map(|_| gc.poll(day, 100)).collect();
        assert_eq!(paid, [10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 0, 0]);
        assert_eq!(gc.poll(day + 99, 100), 0);
        assert_eq!(gc.poll(day + 100, 100), 10);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u64),
        Touch(u8, u64),
        Remove(u8),
        Scan(u64),
        FindBulk,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<u8>(), 0u64..1000).prop_map(|(a, b)| Op::Insert(a % 40, b)),
            (any::<u8>(), 0u64..1000).prop_map(|(a, b)| Op::Touch(a % 40, b)),
            any::<u8>().prop_map(|a| Op::Remove(a % 40)),
            (0u64..1000).prop_map(Op::Scan),
            Just(Op::FindBulk),
        ]
    }

    proptest! {
        /// A key packed for the hot line unpacks to itself, and two keys pack equal
        /// exactly when they are equal.
        #[test]
        fn packed_keys_round_trip(a: u128, b: u128, pa: u16, pb: u16, proto: u8, v in prop_oneof![Just(4u8), Just(6)], other: u128) {
            let (k, _) = FlowKey::new(v, proto, a, pa, b, pb);
            prop_assert_eq!(Packed::of(&k).key(), k);
            let (k2, _) = FlowKey::new(v, proto, other, pa, b, pb);
            prop_assert_eq!(Packed::of(&k).same(&Packed::of(&k2)), k == k2);
        }
    }

    proptest! {
        /// The table, with every index structure (growing, or of a fixed size that is a
        /// power of two or not), behaves as a map with LRU eviction and time-based expiry.
        #[test]
        fn matches_a_reference_model(
            ops in proptest::collection::vec(op(), 1..300),
            cap in 1usize..20,
            kind in proptest::sample::select(IndexKind::ALL.to_vec()),
            slots in prop_oneof![Just(Slots::Auto), (1usize..24).prop_map(Slots::Fixed)],
        ) {
            let mut t: FlowTable<u8> = FlowTable::with_kind(cap, kind, slots);
            // key -> (value, last_ns, lru sequence number)
            let mut model: BTreeMap<u8, (u8, u64, u64)> = BTreeMap::new();
            let mut seq = 0u64;
            for op in ops {
                seq += 1;
                match op {
                    Op::Insert(x, ts) => {
                        if t.find(&k(x as u32), h(&k(x as u32))).is_some() { continue; }
                        let (_, ev) = t.insert(k(x as u32), h(&k(x as u32)), x, ts);
                        if model.len() >= cap {
                            let (&oldest, _) = model.iter().min_by_key(|(_, v)| v.2).unwrap();
                            model.remove(&oldest);
                            prop_assert_eq!(ev.map(|e| e.1), Some(oldest));
                        } else {
                            prop_assert!(ev.is_none());
                        }
                        model.insert(x, (x, ts, seq));
                    }
                    Op::Touch(x, ts) => {
                        if let Some(id) = t.find(&k(x as u32), h(&k(x as u32))) {
                            t.touch(id, ts);
                            let m = model.get_mut(&x).unwrap();
                            m.1 = m.1.max(ts);
                            m.2 = seq;
                        } else {
                            prop_assert!(!model.contains_key(&x));
                        }
                    }
                    Op::Remove(x) => {
                        if let Some(id) = t.find(&k(x as u32), h(&k(x as u32))) {
                            let (key, v) = t.remove(id);
                            prop_assert_eq!(key, k(x as u32));
                            prop_assert_eq!(model.remove(&x).map(|m| m.0), Some(v));
                        } else {
                            prop_assert!(!model.contains_key(&x));
                        }
                    }
                    Op::Scan(now) => {
                        // A full scan with an idle timeout of 100 removes exactly the idle flows.
                        let mut out = Vec::new();
                        t.scan(t.slab_len(), now, 0, |_, _, last| now > last + 100, |key, v| out.push((key, v)));
                        let mut want: Vec<u8> = model.iter().filter(|(_, m)| now > m.1 + 100).map(|(&x, _)| x).collect();
                        for x in &want { model.remove(x); }
                        let mut got: Vec<u8> = out.iter().map(|o| o.1).collect();
                        got.sort();
                        want.sort();
                        prop_assert_eq!(got, want);
                    }
                    Op::FindBulk => {
                        // A burst of every key (longer than BULK_MAX: split) answers as
                        // one lookup at a time, and as the model.
                        let keys: Vec<FlowKey> = (0..BULK_MAX as u32 + 9).map(|x| k(x % 40)).collect();
                        let hashes: Vec<u64> = keys.iter().map(h).collect();
                        let mut out = vec![None; keys.len()];
                        t.find_bulk(&keys, &hashes, &mut out);
                        for (j, key) in keys.iter().enumerate() {
                            prop_assert_eq!(out[j], t.find(key, hashes[j]));
                            prop_assert_eq!(out[j].is_some(), model.contains_key(&((j % 40) as u8)));
                            if let Some(id) = out[j] {
                                prop_assert!(t.holds(id, key));
                                prop_assert_eq!(t.key(id), *key);
                            }
                        }
                    }
                }
                prop_assert_eq!(t.len(), model.len());
            }
            let mut all = Vec::new();
            t.drain(|_, v| all.push(v));
            let mut want: Vec<u8> = model.keys().copied().collect();
            all.sort();
            want.sort();
            prop_assert_eq!(all, want);
        }
    }
}
