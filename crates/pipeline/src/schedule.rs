//! Scheduling policies: which worker a flow's packets go to on the offline path
//! (`--schedule`), after "Packet scheduling for deep packet inspection on multi-core
//! architectures" (its three schemes: direct hash, packet hand-off, last-flow-bundle).
//!
//! - `hash`: the worker is a function of the flow hash ([`FlowHasher::worker_of`]),
//!   fixed for the run. Nothing to keep, nothing to move; a flow that carries most of
//!   the traffic makes its worker the busiest.
//! - `balance`: flows are grouped in [`BINS`] bins by other bits of the hash
//!   ([`FlowHasher::bin_of`]), and a table gives each bin its worker. Every *epoch*
//!   (`epoch_chunks` chunks of the input), the table is recomputed from the packets
//!   each bin had: bins move from the busiest worker to the least busy one until the
//!   loads are within 5% of the mean, or no bin fits the gap. A moved bin's flows
//!   move with it, their state whole ([`tapstat_analyze::Tracker::take_flows`]),
//!   between two chunks, when none of their packets is in flight.
//! - `bundle`: last-flow-bundle. A bin that had packets keeps its worker (its flows'
//!   packets go where their state is warm, the cache affinity the seed found to matter
//!   most); only bins that were idle for a whole epoch move, from workers above the
//!   mean load to those below it, so new traffic in them lands on the less busy ones.
//!
//! Determinism: the table of epoch `e` is a function of the table of `e - 1` and of
//! the packet counts of epoch `e - 2` (counted by the dispatchers, merged here), so it
//! does not depend on timing, on the number of dispatchers, or on which dispatcher
//! computes it; waiting for epoch `e - 2` to be counted costs nothing in practice (the
//! dispatchers are a few chunks apart, an epoch is many chunks). Records are the same
//! under every policy: a flow's packets are seen in input order by one worker at a
//! time, and a moved flow is the same flow.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tapstat_flow::FlowHasher;

/// Bins of flows the table assigns (a power of two, so a bin is a few hundredths of a
/// percent of the traffic when flows are many).
pub const BINS: usize = 1024;

/// Most bins `balance` moves per epoch (a quarter of them: the giving workers scan
/// their tables once however many bins they give, but every flow moved is copied).
const MAX_MOVES: usize = BINS / 4;

/// The policy (`--schedule`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Schedule {
    #[default]
    Hash,
    Balance,
    Bundle,
}

impl Schedule {
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Hash => "hash",
            Schedule::Balance => "balance",
            Schedule::Bundle => "bundle",
        }
    }
}

/// The worker of each bin for one epoch, and the bins that moved since the last.
#[derive(Debug)]
pub struct Table {
    pub epoch: u64,
    pub bins: Vec<u16>,
    /// (bin, from, to) for every bin whose worker changed at this epoch.
    pub moves: Vec<(u16, u16, u16)>,
}

impl Table {
    #[inline]
    pub fn worker_of(&self, hash: u64) -> usize {
        self.bins[FlowHasher::bin_of(hash, BINS)] as usize
    }
}

/// The tables of a run, made epoch by epoch from the dispatchers' counts.
pub struct Scheduler {
    policy: Schedule,
    workers: usize,
    epoch_chunks: u64,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// Recent tables by epoch (older ones are dropped).
    tables: BTreeMap<u64, Arc<Table>>,
    /// Packets per bin and chunks counted, by epoch.
    counts: BTreeMap<u64, (Vec<u64>, u64)>,
    abandoned: bool,
}

impl Scheduler {
    pub fn new(policy: Schedule, workers: usize, epoch_chunks: u64) -> Arc<Scheduler> {
        let bins = (0..BINS).map(|b| (b % workers.max(1)) as u16).collect();
        let first = Arc::new(Table { epoch: 0, bins, moves: Vec::new() });
        Arc::new(Scheduler {
            policy,
            workers: workers.max(1),
            epoch_chunks: epoch_chunks.max(1),
            state: Mutex::new(State {
                tables: BTreeMap::from([(0, first)]),
                counts: BTreeMap::new(),
                abandoned: false,
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The epoch of chunk `seq`.
    pub fn epoch_of(&self, seq: u64) -> u64 {
        seq / self.epoch_chunks
    }

    /// Is chunk `seq` the first of its epoch (where bins move)?
    pub fn starts_epoch(&self, seq: u64) -> bool {
        seq.is_multiple_of(self.epoch_chunks)
    }

    /// The table for chunk `seq`: made, if no dispatcher has made it yet, once every
    /// chunk of the epoch two before has been counted.
    pub fn table_for(&self, seq: u64) -> Arc<Table> {
        let e = self.epoch_of(seq);
        let mut s = self.lock();
        loop {
            let (&last, t) = s.tables.last_key_value().expect("the first table is made at start");
            if last >= e {
                return s.tables.get(&e).cloned().unwrap_or_else(|| t.clone());
            }
            let next = last + 1;
            // Epoch `next` needs epoch `next - 2` counted in full (epochs 0 and 1 keep
            // the first table).
            let ready = next < 2 || s.counts.get(&(next - 2)).is_some_and(|(_, n)| *n >= self.epoch_chunks);
            if !ready && !s.abandoned {
                s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            let prev = t.clone();
            let counts = if next < 2 { None } else { s.counts.get(&(next - 2)).map(|(c, _)| c.clone()) };
            let table = Arc::new(self.next_table(&prev, next, counts.as_deref()));
            s.tables.insert(next, table);
            // Dispatchers are at most a few chunks apart: two epochs back is plenty.
            while s.tables.len() > 4 {
                s.tables.pop_first();
            }
            s.counts.retain(|&k, _| k + 2 >= next);
            self.changed.notify_all();
        }
    }

    /// Adds the packets per bin of chunk `seq`.
    pub fn count(&self, seq: u64, per_bin: &[u32]) {
        let e = self.epoch_of(seq);
        let mut s = self.lock();
        let (c, n) = s.counts.entry(e).or_insert_with(|| (vec![0; BINS], 0));
        for (a, b) in c.iter_mut().zip(per_bin) {
            *a += *b as u64;
        }
        *n += 1;
        drop(s);
        self.changed.notify_all();
    }

    /// The run stopped: tables are made without waiting for counts that will not come.
    pub fn abandon(&self) {
        self.lock().abandoned = true;
        self.changed.notify_all();
    }

    /// The table of epoch `epoch` from the one before and the counts two epochs back.
    fn next_table(&self, prev: &Table, epoch: u64, counts: Option<&[u64]>) -> Table {
        let mut bins = prev.bins.clone();
        if let Some(c) = counts {
            match self.policy {
                Schedule::Hash => {}
                Schedule::Balance => balance(&mut bins, c, self.workers),
                Schedule::Bundle => bundle(&mut bins, c, self.workers),
            }
        }
        let moves = (0..BINS).filter(|&b| bins[b] != prev.bins[b]).map(|b| (b as u16, prev.bins[b], bins[b])).collect();
        Table { epoch, bins, moves }
    }
}

/// Each worker's load under `bins` (packets of its bins).
fn loads(bins: &[u16], c: &[u64], workers: usize) -> Vec<u64> {
    let mut l = vec![0u64; workers];
    for (b, &w) in bins.iter().enumerate() {
        l[w as usize] += c[b];
    }
    l
}

/// Moves bins from the busiest worker to the least busy until the loads are within 5%
/// of the mean, or no bin fits the gap: each time the bin whose load is nearest half
/// the gap (the move that narrows it most).
fn balance(bins: &mut [u16], c: &[u64], workers: usize) {
    let mut l = loads(bins, c, workers);
    let mean = l.iter().sum::<u64>() / workers as u64;
    for _ in 0..MAX_MOVES {
        let hi = (0..workers).max_by_key(|&w| (l[w], std::cmp::Reverse(w))).unwrap_or(0);
        let lo = (0..workers).min_by_key(|&w| (l[w], w)).unwrap_or(0);
        let gap = l[hi] - l[lo];
        if gap <= mean / 20 {
            break;
        }
        let best = (0..bins.len())
            .filter(|&b| bins[b] as usize == hi && c[b] > 0 && c[b] < gap)
            .min_by_key(|&b| ((2 * c[b]).abs_diff(gap), b));
        let Some(b) = best else { break };
        bins[b] = lo as u16;
        l[hi] -= c[b];
        l[lo] += c[b];
    }
}

/// Last-flow-bundle: bins with packets stay where they are; bins idle for the epoch
/// move from workers above the mean load to those below it (the least busy first).
fn bundle(bins: &mut [u16], c: &[u64], workers: usize) {
    let l = loads(bins, c, workers);
    let mean = l.iter().sum::<u64>() / workers as u64;
    let mut below: Vec<usize> = (0..workers).filter(|&w| l[w] < mean).collect();
    below.sort_by_key(|&w| (l[w], w));
    if below.is_empty() {
        return;
    }
    let mut next = 0;
    for b in 0..bins.len() {
        if c[b] == 0 && l[bins[b] as usize] > mean {
            bins[b] = below[next % below.len()] as u16;
            next += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Balance narrows the gap that a hot bin opens, and never splits a bin.
    #[test]
    fn balance_moves_bins_towards_the_mean() {
        let mut bins: Vec<u16> = (0..BINS).map(|b| (b % 4) as u16).collect();
        let mut c = vec![10u64; BINS];
        // Worker 0's bins carry three times the rest.
        for b in (0..BINS).step_by(4) {
            c[b] = 30;
        }
        let before = loads(&bins, &c, 4);
        balance(&mut bins, &c, 4);
        let after = loads(&bins, &c, 4);
        let spread = |l: &[u64]| l.iter().max().unwrap() - l.iter().min().unwrap();
        assert!(spread(&after) < spread(&before) / 2, "{before:?} -> {after:?}");
        assert_eq!(before.iter().sum::<u64>(), after.iter().sum::<u64>());
        // A single dominant bin cannot be split: it stays, alone, where it was.
        let mut bins: Vec<u16> = (0..BINS).map(|b| (b % 4) as u16).collect();
        let mut c = vec![0u64; BINS];
        c[5] = 1_000_000;
        balance(&mut bins, &c, 4);
        assert_eq!(bins[5], 1);
    }

    /// Bundle moves only idle bins, and only off workers above the mean.
    #[test]
    fn bundle_moves_only_idle_bins() {
        let mut bins: Vec<u16> = (0..BINS).map(|b| (b % 2) as u16).collect();
        let mut c = vec![0u64; BINS];
        for b in (0..BINS).step_by(2).take(100) {
            c[b] = 50; // worker 0 busy
        }
        c[1] = 10; // worker 1 has one active bin
        let old = bins.clone();
        bundle(&mut bins, &c, 2);
        for b in 0..BINS {
            if c[b] > 0 {
                assert_eq!(bins[b], old[b], "an active bin stays");
            }
            if bins[b] != old[b] {
                assert_eq!((old[b], bins[b]), (0, 1));
            }
        }
        assert!(bins.iter().zip(&old).any(|(a, b)| a != b), "idle bins of the busy worker moved");
    }

    /// The table of an epoch waits for the counts of the epoch two before, and is the
    /// same whichever thread asks first.
    #[test]
    fn tables_follow_the_counts_two_epochs_back() {
        let s = Scheduler::new(Schedule::Balance, 2, 2);
        assert_eq!(s.table_for(3).epoch, 1);
        assert!(s.table_for(3).moves.is_empty(), "epoch 1 keeps the first table");
        let mut hot = vec![0u32; BINS];
        for b in (0..BINS).step_by(2) {
            hot[b] = 100; // worker 0's bins
        }
        hot[1] = 1;
        let s2 = s.clone();
        let h = std::thread::spawn(move || s2.table_for(4));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!h.is_finished(), "epoch 2 waits for epoch 0's two chunks");
        s.count(0, &hot);
        s.count(1, &hot);
        let t = h.join().unwrap();
        assert_eq!(t.epoch, 2);
        assert!(!t.moves.is_empty() && t.moves.iter().all(|&(_, from, to)| (from, to) == (0, 1)), "{:?}", t.moves);
    }
}
