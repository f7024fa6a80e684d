//! The flow-table emulator (after fmsim, FlowMgmt §3): feeds a stream of flow keys to
//! one [`FlowTable`] in a loop — lookup, insertion of missing flows, removal of flows
//! idle longer than a timeout in stream time, incremental garbage collection — and
//! measures lookups per CPU-second of the thread, the probe-length distribution, the
//! load and the memory per flow.
//!
//! Key streams ([`Stream`]): the flow keys of captures (decoded by tapstat's own
//! capture and decode crates), one key repeated (deterministic), uniformly random keys,
//! a network scan, a port scan, and Zipf-distributed keys over a population of flows.
//!
//! ```
//! use tapstat_lab::flowtable::{run, RunConfig, Stream};
//! use tapstat_flow::{IndexKind, Slots};
//! let s = Stream::zipf(10_000, 1_000, 1.0, 7);
//! let r = run(&s, &RunConfig { index: IndexKind::Lists, slots: Slots::Fixed(1 << 10), ..RunConfig::default() });
//! assert_eq!(r.keys, 10_000);
//! assert!(r.flows <= 1_000);
//! ```

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;
use tapstat_flow::index::{Chunks, Cuckoo, Lists, Swiss, Trees};
use tapstat_flow::{
    AnyIndex, FlowHasher, FlowIndex, FlowKey, FlowTable, Gc, GcConfig, HashKind, IndexKind, SlotId, Slots, BULK_MAX,
};

/// A stream of flow keys with their times (ns) and the dispatcher's hash of each
/// (foldhash, seed 1), computed once when the stream is built.
pub struct Stream {
    pub name: String,
    pub keys: Vec<FlowKey>,
    pub ts: Vec<u64>,
    pub dispatch: Vec<u64>,
}

const PKT_NS: u64 = 1_000; // synthetic streams: one key per µs (1 Mpps)

impl Stream {
    fn new(name: String, keys: Vec<FlowKey>, ts: Vec<u64>) -> Self {
        let h = FlowHasher::new(1);
        let dispatch = keys.iter().map(|k| h.hash(k)).collect();
        Stream { name, keys, ts, dispatch }
    }

    /// The hash of key `i`: by `hasher` when one is under test, else the dispatcher's.
    #[inline(always)]
    fn hash(&self, i: usize, hasher: &Option<FlowHasher>) -> u64 {
        hasher.as_ref().map_or(self.dispatch[i], |x| x.hash(&self.keys[i]))
    }

    fn synthetic(name: String, keys: Vec<FlowKey>) -> Self {
        let ts = (0..keys.len() as u64).map(|i| i * PKT_NS).collect();
        Self::new(name, keys, ts)
    }

    /// The flow keys of the IP packets of `paths` (in order; each file's times continue
    /// after the previous one's), `copies` times: copy `j` reads the trace from a
    /// `j/copies` offset, with its addresses XORed with `j`, so the stream has `copies`
    /// times the flows with the trace's temporal structure.
    pub fn trace(name: &str, paths: &[PathBuf], copies: usize) -> Result<Stream, String> {
        let mut base = Vec::new();
        let mut ts = Vec::new();
        let mut offset = 0u64;
        for p in paths {
            let mut src = tapstat_capture::open_files(std::slice::from_ref(p)).map_err(|e| e.to_string())?;
            let mut dec = tapstat_decode::Decoder::new(tapstat_decode::DecodeConfig::default());
            let (mut first, mut last) = (None, 0u64);
            use tapstat_capture::PacketSource;
            while let Some(chunk) = src.next_chunk(4096).map_err(|e| e.to_string())? {
                for f in &chunk.frames {
                    let d = dec.decode(f.link, chunk.data(f), f.ts_ns);
                    if d.l4 == tapstat_decode::L4::None {
                        continue;
                    }
                    let t0 = *first.get_or_insert(f.ts_ns);
                    let t = offset + f.ts_ns.saturating_sub(t0);
                    last = last.max(t);
                    base.push(FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport).0);
                    ts.push(t);
                }
            }
            offset = last + 1_000_000_000;
        }
        let copies = copies.max(1);
        let n = base.len();
        let mut keys = Vec::with_capacity(n * copies);
        let mut times = Vec::with_capacity(n * copies);
        for i in 0..n {
            for j in 0..copies {
                let k = base[(i + j * n / copies) % n];
                let x = (j as u128) << 20;
                keys.push(FlowKey::new(k.ip_version, k.proto, k.lo_ip ^ x, k.lo_port, k.hi_ip ^ x, k.hi_port).0);
                times.push(ts[i]);
            }
        }
        Ok(Self::new(if copies > 1 { format!("{name}x{copies}") } else { name.to_string() }, keys, times))
    }

    /// One key, `n` times (the paper's deterministic bound).
    pub fn deterministic(n: usize) -> Stream {
        let k = FlowKey::new(4, 6, 0x0a00_0001, 40_000, 0x0a00_0002, 443).0;
        Self::synthetic("deterministic".into(), vec![k; n])
    }

    /// `n` uniformly random IPv4 TCP keys (every one a new flow).
    pub fn random(n: usize, seed: u64) -> Stream {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        let keys = (0..n)
            .map(|_| FlowKey::new(4, 6, r.gen::<u32>() as u128, r.gen(), r.gen::<u32>() as u128, r.gen()).0)
            .collect();
        Self::synthetic("random".into(), keys)
    }

    /// One source probing consecutive destination addresses on port 80.
    pub fn netscan(n: usize) -> Stream {
        let keys = (0..n as u128).map(|i| FlowKey::new(4, 6, 0xc633_6401, 50_000, 0x0a00_0000 + i, 80).0).collect();
        Self::synthetic("netscan".into(), keys)
    }

    /// One source probing every port of one destination (then again from the next
    /// source port).
    pub fn portscan(n: usize) -> Stream {
        let keys = (0..n)
            .map(|i| {
                let sport = 40_000u16.wrapping_add((i >> 16) as u16);
                FlowKey::new(4, 6, 0xc633_6401, sport, 0x0a00_0002, i as u16).0
            })
            .collect();
        Self::synthetic("portscan".into(), keys)
    }

    /// `n` keys drawn from `population` random flows, the flow of rank r with
    /// probability ∝ r^-α (FlowMgmt §4.5: Zipf interpolates between deterministic and
    /// random).
    pub fn zipf(n: usize, population: usize, alpha: f64, seed: u64) -> Stream {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        let pop: Vec<FlowKey> = (0..population.max(1))
            .map(|_| FlowKey::new(4, 17, r.gen::<u32>() as u128, r.gen(), r.gen::<u32>() as u128, r.gen()).0)
            .collect();
        let mut cdf = Vec::with_capacity(pop.len());
        let mut acc = 0.0;
        for rank in 1..=pop.len() {
            acc += (rank as f64).powf(-alpha);
            cdf.push(acc);
        }
        let keys = (0..n)
            .map(|_| {
                let u = r.gen::<f64>() * acc;
                pop[cdf.partition_point(|&c| c < u).min(pop.len() - 1)]
            })
            .collect();
        Self::synthetic(format!("zipf{alpha}"), keys)
    }

    /// Distinct flow keys in the stream.
    pub fn flows(&self) -> usize {
        let mut v = self.keys.clone();
        v.sort_unstable();
        v.dedup();
        v.len()
    }
}

/// How the hash of a key is had in the timed loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashMode {
    /// Computed by the dispatcher and carried with the packet (tapstat's design): the
    /// table reuses it, and the loop does not hash.
    Dispatch,
    /// Computed in the loop, for every key.
    Compute(HashKind),
}

impl HashMode {
    pub fn name(self) -> &'static str {
        match self {
            HashMode::Dispatch => "dispatch",
            HashMode::Compute(k) => k.name(),
        }
    }

    pub fn from_name(s: &str) -> Option<HashMode> {
        if s == "dispatch" {
            return Some(HashMode::Dispatch);
        }
        HashKind::from_name(s).map(HashMode::Compute)
    }
}

/// What the timed loop does with each key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// The whole flow-matching step (fmsim's loop): garbage-collection step when due,
    /// lookup, expiry of a flow idle past the timeout, insertion of a missing flow,
    /// update of the flow's value, time and LRU place.
    #[default]
    Step,
    /// Lookups alone: every flow of the stream is inserted first (untimed), then the
    /// stream's keys are looked up (all hits), nothing else.
    Lookup,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Step => "step",
            Mode::Lookup => "lookup",
        }
    }

    pub fn from_name(s: &str) -> Option<Mode> {
        [Mode::Step, Mode::Lookup].into_iter().find(|m| m.name() == s)
    }
}

/// One emulator run.
#[derive(Clone, Copy, Debug)]
pub struct RunConfig {
    pub mode: Mode,
    pub index: IndexKind,
    /// Call the index through [`AnyIndex`] (run-time choice, as tapstat does) instead of
    /// the structure's own type.
    pub dynamic: bool,
    pub slots: Slots,
    pub hash: HashMode,
    /// Most flows (LRU eviction beyond).
    pub capacity: usize,
    /// Idle timeout in stream time.
    pub timeout_ns: u64,
    pub gc: GcConfig,
    /// Keys per burst looked up together ([`FlowTable::find_bulk`]; 0: one at a time).
    pub batch: usize,
    /// Passes over the stream (time goes on from pass to pass).
    pub loops: usize,
    /// Also replay the stream untimed to record probe lengths.
    pub probes: bool,
    /// Keep the flows in LRU order (tapstat's table: eviction of the flow idle the
    /// longest); without it, as fmsim, a lookup only updates the flow's time.
    pub lru: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            mode: Mode::Step,
            index: IndexKind::Chunks,
            dynamic: true,
            slots: Slots::Auto,
            hash: HashMode::Dispatch,
            capacity: 1 << 22,
            timeout_ns: 60_000_000_000,
            gc: GcConfig::default(),
            batch: 0,
            loops: 1,
            probes: true,
            lru: true,
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub keys: u64,
    pub cpu_s: f64,
    /// Millions of lookups per CPU-second.
    pub mlps: f64,
    /// Probe-length histogram: `probe_hist[l]` lookups examined `l` entries (last bucket:
    /// that many or more).
    pub probe_hist: Vec<u64>,
    pub p_l1: f64,
    pub e_l: f64,
    /// Live flows at the end of the first pass, and the peak (of all passes).
    pub flows: usize,
    pub peak_flows: usize,
    pub buckets: usize,
    /// Peak flows per bucket (or slot) of the index at the end of the first pass.
    pub load: f64,
    pub bytes: usize,
    pub bytes_per_flow: f64,
    pub inserts: u64,
    pub expired: u64,
    pub evicted: u64,
    /// Lookups that found their flow (lookup mode: all of them).
    pub hits: u64,
}

/// The per-flow value of the emulator (fmsim keeps a counter or two per flow).
#[derive(Clone, Copy, Default)]
struct Val {
    pkts: u64,
}

const HIST: usize = 17;

/// Thread CPU time, seconds.
pub fn thread_cpu_s() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we pass and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Runs the emulator on `s` with `cfg`.
pub fn run(s: &Stream, cfg: &RunConfig) -> RunResult {
    let any = |c: &RunConfig| AnyIndex::new(c.index, c.slots, c.capacity);
    if cfg.dynamic {
        return run_with(s, cfg, || any(cfg));
    }
    match any(cfg) {
        AnyIndex::Lists(_) => run_with(s, cfg, || -> Lists { unwrap_lists(any(cfg)) }),
        AnyIndex::Trees(_) => run_with(s, cfg, || -> Trees { unwrap_trees(any(cfg)) }),
        AnyIndex::Swiss(_) => run_with(s, cfg, || -> Swiss { unwrap_swiss(any(cfg)) }),
        AnyIndex::Cuckoo(_) => run_with(s, cfg, || -> Cuckoo { unwrap_cuckoo(any(cfg)) }),
        AnyIndex::Chunks(_) => run_with(s, cfg, || -> Chunks { unwrap_chunks(any(cfg)) }),
    }
}

fn unwrap_lists(a: AnyIndex) -> Lists {
    match a {
        AnyIndex::Lists(i) => i,
        _ => unreachable!("built as lists"),
    }
}
fn unwrap_trees(a: AnyIndex) -> Trees {
    match a {
        AnyIndex::Trees(i) => i,
        _ => unreachable!("built as trees"),
    }
}
fn unwrap_swiss(a: AnyIndex) -> Swiss {
    match a {
        AnyIndex::Swiss(i) => i,
        _ => unreachable!("built as swiss"),
    }
}
fn unwrap_cuckoo(a: AnyIndex) -> Cuckoo {
    match a {
        AnyIndex::Cuckoo(i) => i,
        _ => unreachable!("built as cuckoo"),
    }
}
fn unwrap_chunks(a: AnyIndex) -> Chunks {
    match a {
        AnyIndex::Chunks(i) => i,
        _ => unreachable!("built as chunks"),
    }
}

struct Emu<I> {
    t: FlowTable<Val, I>,
    gc: Gc,
    timeout_ns: u64,
    lru: bool,
    inserts: u64,
    expired: u64,
    evicted: u64,
    peak: usize,
}

impl<I: FlowIndex> Emu<I> {
    /// The flow-matching step of one key: look up; a flow idle past the timeout ends
    /// and a new one starts; a missing flow is inserted (evicting the oldest when full).
    /// `pre`: the answer of a bulk lookup made before the step, with the table's
    /// [`FlowTable::changes`] then; it is used where the table did not change in a way
    /// that can make it wrong, and the key is looked up again otherwise.
    #[inline(always)]
    fn step(&mut self, key: &FlowKey, h: u64, now: u64, pre: Option<(Option<SlotId>, (u64, u64))>) {
        let steps = self.gc.poll(now, self.t.slab_len());
        if steps > 0 {
            let timeout = self.timeout_ns;
            let mut n = 0;
            self.t.scan(steps, now, timeout, |_, _, last| now - last > timeout, |_, _| n += 1);
            self.expired += n;
        }
        let found = match pre {
            None => self.t.find(key, h),
            Some((ans, (ins0, rem0))) => {
                let (ins, rem) = self.t.changes();
                match ans {
                    Some(id) if rem == rem0 || self.t.holds(id, key) => Some(id),
                    None if ins == ins0 => None,
                    _ => self.t.find(key, h),
                }
            }
        };
        let id = match found {
            Some(id) if now.saturating_sub(self.t.last_ns(id)) <= self.timeout_ns => id,
            found => {
                if let Some(old) = found {
                    self.t.remove(old);
                    self.expired += 1;
                }
                let (id, ev) = self.t.insert(*key, h, Val::default(), now);
                self.inserts += 1;
                self.evicted += ev.is_some() as u64;
                self.peak = self.peak.max(self.t.len());
                id
            }
        };
        self.t.get_mut(id).pkts += 1;
        if self.lru {
            self.t.touch(id, now);
        } else {
            self.t.touch_time(id, now);
        }
    }

    /// One timed pass, one key at a time (not inlined: callgrind can measure it alone
    /// with `--toggle-collect='*pass_one*'`).
    #[inline(never)]
    fn pass_one(&mut self, s: &Stream, hasher: &Option<FlowHasher>, off: u64) {
        for i in 0..s.keys.len() {
            let h = s.hash(i, hasher);
            self.step(&s.keys[i], h, s.ts[i] + off, None);
        }
    }

    /// One timed pass in bursts of `b`: the burst is hashed and looked up in bulk
    /// (prefetching buckets, then candidate slots), then stepped key by key.
    #[inline(never)]
    fn pass_bulk(&mut self, s: &Stream, hasher: &Option<FlowHasher>, off: u64, b: usize) {
        let n = s.keys.len();
        let mut hs = [0u64; BULK_MAX];
        let mut ans = [None; BULK_MAX];
        let mut i = 0;
        while i < n {
            let m = b.min(n - i);
            for (j, slot) in hs[..m].iter_mut().enumerate() {
                *slot = s.hash(i + j, hasher);
            }
            self.t.find_bulk(&s.keys[i..i + m], &hs[..m], &mut ans[..m]);
            let changes = self.t.changes();
            for j in 0..m {
                self.step(&s.keys[i + j], hs[j], s.ts[i + j] + off, Some((ans[j], changes)));
            }
            i += m;
        }
    }
}

/// Lookups alone over a table holding every flow of the stream; returns the keys found
/// (the slots found are summed into a black box, so nothing is optimized away).
#[inline(never)]
fn lookups<I: FlowIndex>(t: &FlowTable<Val, I>, s: &Stream, hasher: &Option<FlowHasher>, b: usize) -> u64 {
    let n = s.keys.len();
    let (mut sum, mut hits) = (0u64, 0u64);
    if b == 0 {
        for i in 0..n {
            let h = s.hash(i, hasher);
            let a = t.find(&s.keys[i], h);
            hits += a.is_some() as u64;
            sum = sum.wrapping_add(a.map_or(u64::MAX, u64::from));
        }
    } else {
        let mut hs = [0u64; BULK_MAX];
        let mut ans = [None; BULK_MAX];
        let mut i = 0;
        while i < n {
            let m = b.min(n - i);
            for (j, slot) in hs[..m].iter_mut().enumerate() {
                *slot = s.hash(i + j, hasher);
            }
            t.find_bulk(&s.keys[i..i + m], &hs[..m], &mut ans[..m]);
            for a in &ans[..m] {
                hits += a.is_some() as u64;
                sum = sum.wrapping_add(a.map_or(u64::MAX, u64::from));
            }
            i += m;
        }
    }
    std::hint::black_box(sum);
    hits
}

fn run_with<I: FlowIndex>(s: &Stream, cfg: &RunConfig, make: impl Fn() -> I) -> RunResult {
    let hasher = match cfg.hash {
        HashMode::Dispatch => None,
        HashMode::Compute(k) => Some(FlowHasher::with_kind(k, 1)),
    };
    let new_emu = || Emu {
        t: FlowTable::with_index(cfg.capacity, make()),
        gc: Gc::new(cfg.gc),
        timeout_ns: cfg.timeout_ns,
        lru: cfg.lru,
        inserts: 0,
        expired: 0,
        evicted: 0,
        peak: 0,
    };
    let n = s.keys.len();
    let span = s.ts.last().copied().unwrap_or(0) + 1_000_000_000;
    let mut r = RunResult::default();

    // Probe lengths: an untimed replay of the first pass on a table of its own.
    if cfg.probes {
        let mut e = new_emu();
        let mut hist = vec![0u64; HIST];
        for i in 0..n {
            let h = s.hash(i, &hasher);
            let l = e.t.probes(&s.keys[i], h) as usize;
            hist[l.min(HIST - 1)] += 1;
            e.step(&s.keys[i], h, s.ts[i], None);
        }
        let total: u64 = hist.iter().sum();
        r.p_l1 = hist[1] as f64 / total.max(1) as f64;
        r.e_l = hist.iter().enumerate().map(|(l, &c)| l as f64 * c as f64).sum::<f64>() / total.max(1) as f64;
        r.probe_hist = hist;
    }

    let b = cfg.batch.clamp(1, BULK_MAX);
    if cfg.mode == Mode::Lookup {
        let mut e = new_emu();
        e.t = FlowTable::with_index(cfg.capacity.max(n), make());
        for i in 0..n {
            let h = s.hash(i, &hasher);
            if e.t.find(&s.keys[i], h).is_none() {
                e.t.insert(s.keys[i], h, Val::default(), 0);
            }
        }
        let cpu0 = thread_cpu_s();
        for _ in 0..cfg.loops.max(1) {
            r.hits += lookups(&e.t, s, &hasher, if cfg.batch == 0 { 0 } else { b });
        }
        r.cpu_s = thread_cpu_s() - cpu0;
        r.flows = e.t.len();
        r.peak_flows = e.t.len();
        r.buckets = e.t.index().buckets();
        r.bytes = e.t.bytes();
        r.keys = (n * cfg.loops.max(1)) as u64;
        r.mlps = r.keys as f64 / r.cpu_s.max(1e-9) / 1e6;
        r.load = r.peak_flows as f64 / r.buckets.max(1) as f64;
        r.bytes_per_flow = r.bytes as f64 / r.peak_flows.max(1) as f64;
        return r;
    }
    let mut e = new_emu();
    let cpu0 = thread_cpu_s();
    for pass in 0..cfg.loops.max(1) {
        let off = pass as u64 * span;
        if cfg.batch == 0 {
            e.pass_one(s, &hasher, off);
        } else {
            e.pass_bulk(s, &hasher, off, b);
        }
        if pass == 0 {
            r.flows = e.t.len();
            r.buckets = e.t.index().buckets();
            r.bytes = e.t.bytes();
        }
    }
    r.cpu_s = thread_cpu_s() - cpu0;
    r.keys = (n * cfg.loops.max(1)) as u64;
    r.mlps = r.keys as f64 / r.cpu_s.max(1e-9) / 1e6;
    r.peak_flows = e.peak;
    r.load = r.peak_flows as f64 / r.buckets.max(1) as f64;
    r.bytes_per_flow = r.bytes as f64 / r.peak_flows.max(1) as f64;
    r.inserts = e.inserts;
    r.expired = e.expired;
    r.evicted = e.evicted;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every structure, hash and batch size sees the same flows: the emulator's
    /// counts do not depend on the table.
    #[test]
    fn counts_do_not_depend_on_the_table() {
        let s = Stream::zipf(20_000, 3_000, 0.9, 1);
        let mut seen = None;
        for index in IndexKind::ALL {
            for hash in [HashMode::Dispatch, HashMode::Compute(HashKind::Coralreef)] {
                for (batch, lru) in [(0, true), (16, true), (16, false)] {
                    for slots in [Slots::Auto, Slots::Fixed(1000), Slots::Fixed(1 << 10)] {
                        let cfg = RunConfig {
                            index,
                            hash,
                            batch,
                            slots,
                            lru,
                            capacity: 2_000,
                            timeout_ns: 5_000_000,
                            loops: 2,
                            ..RunConfig::default()
                        };
                        let r = run(&s, &cfg);
                        let got = (r.flows, r.inserts, r.expired, r.evicted);
                        if lru || r.evicted == 0 {
                            assert_eq!(*seen.get_or_insert(got), got, "{index:?} {hash:?} {batch} {slots:?}");
                        }
                    }
                }
            }
        }
    }

    /// Lookups alone find every flow of the stream, one at a time and in bursts.
    #[test]
    fn lookup_mode_finds_every_flow() {
        let s = Stream::zipf(5_000, 800, 1.0, 2);
        for index in IndexKind::ALL {
            for batch in [0, 16, 100] {
                let cfg = RunConfig { mode: Mode::Lookup, index, batch, ..RunConfig::default() };
                let r = run(&s, &cfg);
                assert_eq!((r.keys, r.hits), (5_000, 5_000));
                assert_eq!(r.flows, s.flows(), "{index:?} {batch}");
            }
        }
    }

    #[test]
    fn streams() {
        assert_eq!(Stream::deterministic(100).flows(), 1);
        assert_eq!(Stream::random(1000, 1).flows(), 1000);
        assert_eq!(Stream::netscan(1000).flows(), 1000);
        assert_eq!(Stream::portscan(70_000).flows(), 70_000);
        let z = Stream::zipf(10_000, 500, 1.2, 3);
        assert!(z.flows() <= 500);
    }
}
