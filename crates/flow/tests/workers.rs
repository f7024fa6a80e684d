//! A worker's flows must spread over the whole of its index.
//!
//! The dispatcher gives each flow to `FlowHasher::worker_of(hash, n)` and the worker's
//! index takes its buckets from the same hash. Where the two used the same bits, each
//! worker's flows fell into 1/n of its index: with chunks (linear probing) that is one
//! cluster, and a flood of 1 M random flows took ~130 s at 2 workers against 2.3 s at
//! one. These tests split random flows over n workers as the dispatcher does and hold
//! each worker's mean probe length to that of one worker holding them all.

use tapstat_flow::{FlowHasher, FlowKey, FlowTable, HashKind, IndexKind, Slots};

/// splitmix64: a small deterministic generator, enough for random 5-tuples.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `n` distinct random IPv4 TCP keys (a SYN flood from spoofed sources).
fn random_keys(n: usize, seed: u64) -> Vec<FlowKey> {
    let mut rng = Rng(seed);
    let mut seen = std::collections::HashSet::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    while keys.len() < n {
        let a = rng.next();
        let b = rng.next();
        let (k, _) = FlowKey::new(4, 6, (a >> 32) as u128, a as u16, (b >> 32) as u128, b as u16);
        if seen.insert(k) {
            keys.push(k);
        }
    }
    keys
}

/// Mean probes per lookup of every key, with the keys split over `workers` tables as
/// the dispatcher splits them (each table as a worker makes it: sized for the default
/// `--max-flows`, index grown with the flows).
fn mean_probes(keys: &[FlowKey], hasher: &FlowHasher, kind: IndexKind, workers: usize) -> f64 {
    let mut tables: Vec<FlowTable<()>> =
        (0..workers).map(|_| FlowTable::with_kind(1 << 20, kind, Slots::Auto)).collect();
    let hashes: Vec<u64> = keys.iter().map(|k| hasher.hash(k)).collect();
    for (k, &h) in keys.iter().zip(&hashes) {
        let (_, evicted) = tables[FlowHasher::worker_of(h, workers)].insert(*k, h, (), 0);
        assert!(evicted.is_none(), "the tables have room for every key");
    }
    let probes: u64 =
        keys.iter().zip(&hashes).map(|(k, &h)| tables[FlowHasher::worker_of(h, workers)].probes(k, h) as u64).sum();
    probes as f64 / keys.len() as f64
}

/// Each worker count's mean probe length may exceed one worker's by this factor at
/// most (plus a quarter probe of slack for structures near one probe). Before the fix,
/// chunks at 4 workers was over 100 times one worker's on 200 k flows.
const FACTOR: f64 = 1.5;

fn check(keys: &[FlowKey], kind: IndexKind, hash: HashKind, workers: &[usize]) {
    let hasher = FlowHasher::with_kind(hash, 0x5eed);
    let one = mean_probes(keys, &hasher, kind, 1);
    for &w in workers {
        let many = mean_probes(keys, &hasher, kind, w);
        println!(
            "{:>6} {:>9} {} keys: 1 worker {one:.3} probes, {w} workers {many:.3}",
            kind.name(),
            hash.name(),
            keys.len()
        );
        assert!(
            many <= one * FACTOR + 0.25,
            "{} index, {} hash, {} flows: {w} workers probe {many:.2} times per lookup against {one:.2} at 1 worker; \
             the worker choice and the index's buckets share bits",
            kind.name(),
            hash.name(),
            keys.len()
        );
    }
}

/// The case: the default index and hash, 200 k random flows, 2 to 4 workers.
#[test]
fn default_index_spreads_each_workers_flows() {
    let keys = random_keys(200_000, 1);
    check(&keys, IndexKind::default(), HashKind::Foldhash, &[2, 3, 4]);
}

/// Every index with the default hash, and the default index with every hash (the
/// 32-bit ones, widened to equal halves, included), on more flows than an index
/// holds before it first grows (2^16), where a shared bit range makes clusters.
#[test]
fn every_index_and_hash_spreads_each_workers_flows() {
    let keys = random_keys(120_000, 2);
    for kind in IndexKind::ALL {
        check(&keys, kind, HashKind::Foldhash, &[2, 4]);
    }
    for hash in HashKind::ALL {
        check(&keys, IndexKind::default(), hash, &[2, 4]);
    }
    for kind in [IndexKind::Swiss, IndexKind::Cuckoo, IndexKind::Lists] {
        check(&keys, kind, HashKind::Crc32, &[4]);
    }
}
