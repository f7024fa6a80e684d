//! The per-worker flow table.
//!
//! A slab of slots (flow key, hash, last-seen time, value) indexed by a [`FlowIndex`]
//! that stores only slot ids (by default hashbrown's SIMD-probed open addressing; the
//! lab measures the others), so the index of a worker stays small and cache-friendly
//! while values stay put. An
//! intrusive doubly-linked list through the slots keeps them in order of last use:
//! when the table is full, the head (the flow idle the longest) is evicted, counted,
//! and handed back to the caller to be written out — never dropped silently.
//!
//! Garbage collection is incremental, as in DPDKStat (seeds/002 §III, seeds/000 §5.2):
//! every ΔT/M of packet time the caller scans 1/M of the slots ([`Gc`]), so the cost of
//! expiry is spread over packets instead of stalling one packet with a full scan.

use crate::index::{AnyIndex, FlowIndex, IndexKind, Slots};
use crate::FlowKey;

/// Index of a flow's slot; stable for the flow's life in the table.
pub type SlotId = u32;

const NIL: u32 = u32::MAX;

/// What expiry and the LRU list need of a slot, kept apart from the flow itself in
/// a dense array: the collector's scan and the LRU updates of every packet then read
/// 16 bytes per flow, contiguous, instead of one cache line in each flow's
/// 700-byte slot.
#[derive(Clone, Copy)]
struct Meta {
    /// Packet time of the last use; `u64::MAX` for a free slot (never idle).
    last_ns: u64,
    prev: u32,
    next: u32,
}

struct Slot<V> {
    key: FlowKey,
    hash: u64,
    val: Option<V>,
}

/// A bounded flow table with LRU eviction. See the module doc. `I` is the index
/// structure: [`AnyIndex`] (chosen at run time) unless a caller names one.
pub struct FlowTable<V, I = AnyIndex> {
    map: I,
    slots: Vec<Slot<V>>,
    meta: Vec<Meta>,
    free: Vec<u32>,
    /// Least recently used (oldest idle) slot.
    head: u32,
    /// Most recently used slot.
    tail: u32,
    len: usize,
    capacity: usize,
    gc_cursor: usize,
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
            slots: Vec::with_capacity(initial),
            meta: Vec::with_capacity(initial),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            len: 0,
            capacity,
            gc_cursor: 0,
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

    /// The slot of `key`, if it is in the table. `hash` must be the key's flow hash.
    #[inline]
    pub fn find(&self, key: &FlowKey, hash: u64) -> Option<SlotId> {
        let slots = &self.slots;
        self.map.find(hash, |i| slots[i as usize].key == *key)
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

    /// Starts loading a slot's key and metadata.
    #[inline]
    pub fn prefetch_slot(&self, id: SlotId) {
        crate::index::prefetch_ptr(self.slots.as_ptr().wrapping_add(id as usize));
        crate::index::prefetch_ptr(self.meta.as_ptr().wrapping_add(id as usize));
    }

    /// Entries the index examines to look `key` up (see [`FlowIndex::probes`]).
    pub fn probes(&self, key: &FlowKey, hash: u64) -> u32 {
        let slots = &self.slots;
        self.map.probes(hash, |i| slots[i as usize].val.is_some() && slots[i as usize].key == *key)
    }

    /// The index.
    pub fn index(&self) -> &I {
        &self.map
    }

    /// Bytes held by the index, the slab and the metadata (allocated capacity).
    pub fn bytes(&self) -> usize {
        self.map.bytes()
            + self.slots.capacity() * std::mem::size_of::<Slot<V>>()
            + self.meta.capacity() * std::mem::size_of::<Meta>()
            + self.free.capacity() * 4
    }

    #[inline]
    pub fn get(&self, id: SlotId) -> &V {
        self.slots[id as usize].val.as_ref().expect("a live slot holds a value")
    }

    #[inline]
    pub fn get_mut(&mut self, id: SlotId) -> &mut V {
        self.slots[id as usize].val.as_mut().expect("a live slot holds a value")
    }

    #[inline]
    pub fn key(&self, id: SlotId) -> &FlowKey {
        &self.slots[id as usize].key
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

    /// Inserts a flow that is not in the table. When the table is full, the flow
    /// idle the longest is evicted first and returned.
    pub fn insert(&mut self, key: FlowKey, hash: u64, val: V, ts_ns: u64) -> (SlotId, Option<(FlowKey, V)>) {
        let evicted = if self.len >= self.capacity && self.head != NIL { Some(self.remove(self.head)) } else { None };
        let slot = Slot { key, hash, val: Some(val) };
        let meta = Meta { last_ns: ts_ns, prev: NIL, next: NIL };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                self.meta[id as usize] = meta;
                id
            }
            None => {
                self.slots.push(slot);
                self.meta.push(meta);
                (self.slots.len() - 1) as u32
            }
        };
        let slots = &self.slots;
        self.map.insert(hash, id, |i| slots[i as usize].hash);
        self.push_tail(id);
        self.len += 1;
        (id, evicted)
    }

    /// Removes a flow and gives back its key and value.
    pub fn remove(&mut self, id: SlotId) -> (FlowKey, V) {
        let hash = self.slots[id as usize].hash;
        self.map.remove(hash, id);
        self.unlink(id);
        self.meta[id as usize].last_ns = u64::MAX;
        self.free.push(id);
        self.len -= 1;
        let s = &mut self.slots[id as usize];
        (s.key, s.val.take().expect("a live slot holds a value"))
    }

    /// Scans the next `n` slots (round robin over the whole slab) and removes the
    /// flows for which `expired(key, value, last_ns)` says yes, handing them to `out`.
    /// Flows used within `min_idle_ns` of `now_ns` (and free slots) are passed over
    /// on the dense metadata alone, without touching the flow.
    pub fn scan(
        &mut self,
        n: usize,
        now_ns: u64,
        min_idle_ns: u64,
        mut expired: impl FnMut(&FlowKey, &V, u64) -> bool,
        mut out: impl FnMut(FlowKey, V),
    ) {
        let total = self.slots.len();
        if total == 0 {
            return;
        }
        for _ in 0..n.min(total) {
            if self.gc_cursor >= total {
                self.gc_cursor = 0;
            }
            let i = self.gc_cursor;
            self.gc_cursor += 1;
            let last = self.meta[i].last_ns;
            if last == u64::MAX || now_ns.saturating_sub(last) <= min_idle_ns {
                continue;
            }
            let s = &self.slots[i];
            if let Some(v) = &s.val {
                if expired(&s.key, v, last) {
                    let (k, v) = self.remove(i as u32);
                    out(k, v);
                }
            }
        }
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
        for (s, m) in self.slots.iter_mut().zip(&self.meta) {
            if let Some(v) = &mut s.val {
                f(&s.key, m.last_ns, v);
            }
        }
    }

    /// Number of slots in the slab (live or free): what a full scan visits.
    pub fn slab_len(&self) -> usize {
        self.slots.len()
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
    /// ΔT = 5 s of packet time (Tstat's period, seeds/000 §5.2) in 500 steps of 10 ms:
    /// a step scans 0.2% of the table. No timeout is shorter than 10 s, so a flow
    /// outlives its timeout by at most 5 s in memory; its record is not affected
    /// (expiry is also decided when the next packet of its 5-tuple arrives).
    fn default() -> Self {
        GcConfig { period_ns: 5_000_000_000, steps: 500 }
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
    /// is due). Steps missed during a gap in packet time are caught up at once, up to
    /// one full scan.
    #[inline]
    pub fn poll(&mut self, now_ns: u64, slab_len: usize) -> usize {
        let step_ns = self.step_ns;
        let next = *self.next_ns.get_or_insert(now_ns.saturating_add(step_ns));
        if now_ns < next {
            return 0;
        }
        let due = ((now_ns - next) / step_ns + 1).min(self.cfg.steps as u64);
        self.next_ns = Some(now_ns.saturating_add(step_ns));
        let per_step = slab_len.div_ceil(self.cfg.steps as usize);
        per_step.saturating_mul(due as usize).min(slab_len)
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
        // A jump of a day catches up at most one full scan.
        assert_eq!(gc.poll(86_400_000_000_000, 100), 100);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, u64),
        Touch(u8, u64),
        Remove(u8),
        Scan(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<u8>(), 0u64..1000).prop_map(|(a, b)| Op::Insert(a % 40, b)),
            (any::<u8>(), 0u64..1000).prop_map(|(a, b)| Op::Touch(a % 40, b)),
            any::<u8>().prop_map(|a| Op::Remove(a % 40)),
            (0u64..1000).prop_map(Op::Scan),
        ]
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
