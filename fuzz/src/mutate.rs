//! A seeded, deterministic mutation fuzzer that runs on stable Rust: what CI runs on
//! every push (`examples/mutate.rs` drives it), and what a developer without nightly
//! runs for longer.
//!
//! No coverage feedback: each input is a committed seed of the target's corpus, picked
//! at random, with one to [`MAX_STACK`] mutations of the kinds libFuzzer makes (bit
//! flips, interesting values, arithmetic, inserted, deleted, duplicated and copied
//! ranges, splices with another seed, truncation) and, for the inputs made of frames
//! separated by [`FRAME_SEP`], the same on one frame at a time plus frames dropped,
//! duplicated, swapped, split, joined and taken from another seed.
//!
//! Determinism: input `i` of a run depends only on the seed, `i`, the target's name and
//! its corpus ([`Mutator::input`]), so a run is reproducible and a crash's input can be
//! made again from the seed and the iteration alone (it is written to a file anyway).
//!
//! A crash is a panic in any thread while the input runs: the unwinding one is caught
//! ([`std::panic::catch_unwind`]), and a panic hook that [`run`] installs records every
//! panic, so one in a thread whose owner swallows it counts too.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use crate::{split_frames, FRAME_SEP};

/// At most this many mutations are stacked on one input.
pub const MAX_STACK: usize = 6;

/// A small, fast pseudo-random generator (splitmix64): not for secrets, only so that a
/// run is the same on every machine and every build.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`; 0 when `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True once in `n` times.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }
}

/// FNV-1a, 64 bits: names crash files and turns a target's name into a seed.
pub fn fnv64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// How a target's input is laid out, for the mutations that know frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Any bytes (a capture file).
    Bytes,
    /// `prefix` bytes (the `decode` selector), then frames separated by [`FRAME_SEP`].
    Frames { prefix: usize },
}

/// Byte values at the edges: zero, sign bits, all ones, ASCII separators.
const INTERESTING_8: [u8; 12] = [0, 1, 2, 0x0a, 0x0d, 0x10, 0x20, 0x40, 0x7f, 0x80, 0xfe, 0xff];

/// Makes the inputs of one target.
pub struct Mutator<'c> {
    corpus: &'c [Vec<u8>],
    layout: Layout,
    max_len: usize,
    /// Mixed into every input's seed, so that two targets of one run differ.
    salt: u64,
}

impl<'c> Mutator<'c> {
    /// `salt` tells targets apart: [`run`] uses the target's name ([`fnv64`]).
    pub fn new(corpus: &'c [Vec<u8>], layout: Layout, max_len: usize, salt: u64) -> Mutator<'c> {
        Mutator { corpus, layout, max_len, salt }
    }

    /// Input `i` of a run seeded `seed`: a seed of the corpus (empty if there is none)
    /// with one to [`MAX_STACK`] mutations, cut to the target's maximum length.
    pub fn input(&self, seed: u64, i: u64) -> Vec<u8> {
        let mut rng = Rng::new(seed ^ self.salt);
        let mut rng = Rng::new(rng.next_u64() ^ i.wrapping_mul(0xD1B5_4A32_D192_ED03));
        let mut data = self.donor(&mut rng).to_vec();
        for _ in 0..1 + rng.below(MAX_STACK) {
            self.mutate(&mut rng, &mut data);
            data.truncate(self.max_len);
        }
        data
    }

    /// A seed of the corpus, at random.
    fn donor(&self, rng: &mut Rng) -> &'c [u8] {
        if self.corpus.is_empty() {
            &[]
        } else {
            &self.corpus[rng.below(self.corpus.len())]
        }
    }

    /// A frame of a seed of the corpus, at random (the whole seed for `Layout::Bytes`).
    fn donor_frame(&self, rng: &mut Rng) -> &'c [u8] {
        let d = self.donor(rng);
        match self.layout {
            Layout::Bytes => d,
            Layout::Frames { prefix } => {
                let frames = split_frames(&d[prefix.min(d.len())..]);
                frames[rng.below(frames.len())]
            }
        }
    }

    fn mutate(&self, rng: &mut Rng, data: &mut Vec<u8>) {
        match self.layout {
            Layout::Frames { prefix } if rng.one_in(2) => self.mutate_frames(rng, data, prefix),
            _ => {
                let donor = self.donor(rng);
                mutate_bytes(rng, data, donor);
            }
        }
    }

    /// One mutation of the frame structure, or of one frame's bytes.
    fn mutate_frames(&self, rng: &mut Rng, data: &mut Vec<u8>, prefix: usize) {
        if data.len() < prefix {
            let donor = self.donor(rng);
            return mutate_bytes(rng, data, donor);
        }
        let mut head = data[..prefix].to_vec();
        let mut frames: Vec<Vec<u8>> = split_frames(&data[prefix..]).into_iter().map(<[u8]>::to_vec).collect();
        let n = frames.len();
        match rng.below(10) {
            // drop a frame
            0 if n > 1 => {
                frames.remove(rng.below(n));
            }
            // duplicate a frame, to anywhere
            1 => {
                let f = frames[rng.below(n)].clone();
                frames.insert(rng.below(n + 1), f);
            }
            // swap two frames
            2 if n > 1 => frames.swap(rng.below(n), rng.below(n)),
            // a frame of another seed, inserted or in place of one
            3 => {
                let f = self.donor_frame(rng).to_vec();
                if rng.one_in(2) {
                    frames.insert(rng.below(n + 1), f);
                } else {
                    frames[rng.below(n)] = f;
                }
            }
            // split a frame in two
            4 => {
                let k = rng.below(n);
                let at = rng.below(frames[k].len() + 1);
                let tail = frames[k].split_off(at);
                frames.insert(k + 1, tail);
            }
            // join two neighbours
            5 if n > 1 => {
                let k = rng.below(n - 1);
                let next = frames.remove(k + 1);
                frames[k].extend_from_slice(&next);
            }
            // the prefix (the link type selector)
            6 if prefix > 0 => {
                let at = rng.below(prefix);
                head[at] = rng.next_u64() as u8;
            }
            // the bytes of one frame, spliced with a frame of another seed
            _ => {
                let k = rng.below(n);
                let donor = self.donor_frame(rng);
                mutate_bytes(rng, &mut frames[k], donor);
            }
        }
        data.clear();
        data.extend_from_slice(&head);
        for (i, f) in frames.iter().enumerate() {
            if i > 0 {
                data.extend_from_slice(FRAME_SEP);
            }
            data.extend_from_slice(f);
        }
    }
}

/// A value that is interesting as a length or count at `pos` of `data`: the edges of
/// the field's width, and the lengths around it (the whole, the rest, small ones).
fn interesting_len(rng: &mut Rng, data: &[u8], pos: usize, width: usize) -> u64 {
    let max = if width >= 8 { u64::MAX } else { (1u64 << (8 * width)) - 1 };
    let len = data.len() as u64;
    let rest = (data.len() - pos.min(data.len())) as u64;
    let v = match rng.below(12) {
        0 => 0,
        1 => 1,
        2 => max,
        3 => max >> 1,
        4 => (max >> 1) + 1,
        5 => max - 1,
        6 => len,
        7 => rest,
        8 => rest.wrapping_sub(width as u64),
        9 => len + 1 + rng.below(16) as u64,
        10 => rest.wrapping_sub(1 + rng.below(8) as u64),
        _ => 1 << rng.below(8 * width),
    };
    v & max
}

/// Writes `v` as a `width`-byte integer at `pos`, big- or little-endian.
fn put_int(data: &mut [u8], pos: usize, width: usize, v: u64, big: bool) {
    let le = v.to_le_bytes();
    for k in 0..width {
        data[pos + k] = if big { le[width - 1 - k] } else { le[k] };
    }
}

fn get_int(data: &[u8], pos: usize, width: usize, big: bool) -> u64 {
    let mut v = 0u64;
    for k in 0..width {
        let b = if big { data[pos + width - 1 - k] } else { data[pos + k] };
        v |= u64::from(b) << (8 * k);
    }
    v
}

/// A range of `data`: start and length (at least 1 when `data` is not empty), mostly short.
fn range(rng: &mut Rng, len: usize) -> (usize, usize) {
    let start = rng.below(len);
    let most = len - start;
    let n = if rng.one_in(4) { 1 + rng.below(most) } else { 1 + rng.below(most.min(16)) };
    (start, n.min(most))
}

/// One byte-level mutation of `data`; `donor` is another input (or frame) to splice with.
pub fn mutate_bytes(rng: &mut Rng, data: &mut Vec<u8>, donor: &[u8]) {
    if data.is_empty() {
        // Nothing to change: grow it from the donor or from random bytes.
        if !donor.is_empty() && rng.one_in(2) {
            let (s, n) = range(rng, donor.len());
            data.extend_from_slice(&donor[s..s + n]);
        } else {
            for _ in 0..1 + rng.below(8) {
                data.push(rng.next_u64() as u8);
            }
        }
        return;
    }
    let len = data.len();
    let pos = rng.below(len);
    match rng.below(16) {
        // flip a bit
        0 | 1 => data[pos] ^= 1 << rng.below(8),
        // an interesting byte
        2 => data[pos] = rng.pick(&INTERESTING_8),
        // a random byte
        3 => data[pos] = rng.next_u64() as u8,
        // an interesting 16-, 32- or 64-bit value (edges, lengths), either byte order
        4 | 5 => {
            let width = rng.pick(&[2, 2, 4, 4, 8]);
            if len >= width {
                let at = rng.below(len - width + 1);
                let v = interesting_len(rng, data, at, width);
                put_int(data, at, width, v, rng.one_in(2));
            } else {
                data[pos] = rng.pick(&INTERESTING_8);
            }
        }
        // add or subtract a little, to a byte or a 16-bit field
        6 => {
            let delta = 1 + rng.below(35) as u64;
            let width = if len >= 2 && rng.one_in(2) { 2 } else { 1 };
            let at = rng.below(len - width + 1);
            let big = rng.one_in(2);
            let old = get_int(data, at, width, big);
            let new = if rng.one_in(2) { old.wrapping_add(delta) } else { old.wrapping_sub(delta) };
            put_int(data, at, width, new & ((1u64 << (8 * width)) - 1), big);
        }
        // insert random bytes, or one byte repeated
        7 => {
            let most = if rng.one_in(8) { 256 } else { 16 };
            let n = 1 + rng.below(most);
            let fill = rng.next_u64() as u8;
            let repeat = rng.one_in(2);
            let bytes: Vec<u8> = (0..n).map(|_| if repeat { fill } else { rng.next_u64() as u8 }).collect();
            data.splice(pos..pos, bytes);
        }
        // delete a range
        8 | 9 => {
            let (s, n) = range(rng, len);
            data.drain(s..s + n);
        }
        // duplicate a range, inserted anywhere
        10 => {
            let (s, n) = range(rng, len);
            let copy = data[s..s + n].to_vec();
            let at = rng.below(len + 1);
            data.splice(at..at, copy);
        }
        // copy a range over another place
        11 => {
            let (s, n) = range(rng, len);
            let to = rng.below(len - n + 1);
            data.copy_within(s..s + n, to);
        }
        // splice: this one's head, the donor's tail
        12 => {
            if donor.is_empty() {
                data.truncate(pos);
            } else {
                let from = rng.below(donor.len());
                data.truncate(pos);
                data.extend_from_slice(&donor[from..]);
            }
        }
        // insert, or write over, a range of the donor
        13 => {
            if !donor.is_empty() {
                let (s, n) = range(rng, donor.len());
                if rng.one_in(2) {
                    data.splice(pos..pos, donor[s..s + n].iter().copied());
                } else {
                    let n = n.min(len - pos);
                    data[pos..pos + n].copy_from_slice(&donor[s..s + n]);
                }
            }
        }
        // truncate
        14 => data.truncate(rng.below(len)),
        // a frame separator, anywhere (splits a frame; a capture file does not care)
        _ => {
            data.splice(pos..pos, FRAME_SEP.iter().copied());
        }
    }
}

/// Panics seen by the hook since the last [`take_panics`]: in any thread.
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Installs (once per process) the hook that records every panic instead of printing it.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        panic::set_hook(Box::new(|info| {
            let thread = std::thread::current();
            let msg = format!("thread '{}' {info}", thread.name().unwrap_or("<unnamed>"));
            PANICS.lock().unwrap_or_else(|e| e.into_inner()).push(msg);
        }));
    });
}

fn take_panics() -> Vec<String> {
    std::mem::take(&mut *PANICS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// How long and where one target runs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub seed: u64,
    /// Mutated inputs to run (after the corpus itself); `None`: until `time` is up.
    pub runs: Option<u64>,
    /// Stop after this long, even if `runs` are not done.
    pub time: Option<Duration>,
    /// Where crash inputs are written (`crash-<FNV-1a of the input>`); `None`: nowhere.
    pub artifacts: Option<PathBuf>,
    /// Print a progress line to stderr every this often (long runs).
    pub progress: Option<Duration>,
}

/// One input that panicked.
#[derive(Clone, Debug)]
pub struct Crash {
    /// `Some(i)`: mutated input `i`; `None`: the corpus input itself.
    pub iteration: Option<u64>,
    /// The panics it caused, as the hook saw them (message, thread and location).
    pub panics: Vec<String>,
    pub input: Vec<u8>,
    /// Where the input was written.
    pub path: Option<PathBuf>,
}

/// What a run of one target did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Corpus inputs run as they are.
    pub corpus_inputs: u64,
    /// Mutated inputs run.
    pub mutated_inputs: u64,
    pub elapsed: Duration,
    /// The slowest input's time.
    pub slowest: Duration,
    /// The first crashes (at most [`MAX_CRASHES`] kept); `crash_count` counts them all.
    pub crashes: Vec<Crash>,
    pub crash_count: u64,
}

/// Crashes kept per target: one bug tends to crash many inputs.
pub const MAX_CRASHES: usize = 10;

/// Runs `f` on every corpus input, then on mutated inputs of `mutator`, each under
/// `catch_unwind` and a panic hook that sees every thread. Panics are crashes: recorded,
/// written under `cfg.artifacts`, and the run goes on.
pub fn run<F: Fn(&[u8])>(name: &str, f: F, corpus: &[Vec<u8>], mutator: &Mutator, cfg: &RunConfig) -> Outcome {
    install_hook();
    let start = Instant::now();
    let deadline = cfg.time.map(|t| start + t);
    let mut next_progress = cfg.progress.map(|p| start + p);
    let mut out = Outcome::default();
    let one = |out: &mut Outcome, iteration: Option<u64>, input: Vec<u8>| {
        take_panics();
        let t = Instant::now();
        let unwound = panic::catch_unwind(AssertUnwindSafe(|| f(&input))).is_err();
        out.slowest = out.slowest.max(t.elapsed());
        let panics = take_panics();
        if unwound || !panics.is_empty() {
            out.crash_count += 1;
            if out.crashes.len() < MAX_CRASHES {
                let path = cfg.artifacts.as_deref().and_then(|dir| write_crash(dir, &input));
                out.crashes.push(Crash { iteration, panics, input, path });
            }
        }
    };
    for input in corpus {
        one(&mut out, None, input.clone());
        out.corpus_inputs += 1;
    }
    let mut i = 0u64;
    loop {
        if cfg.runs.is_some_and(|n| i >= n) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if cfg.runs.is_none() && deadline.is_none() {
            break;
        }
        one(&mut out, Some(i), mutator.input(cfg.seed, i));
        i += 1;
        out.mutated_inputs = i;
        if let (Some(at), Some(every)) = (next_progress, cfg.progress) {
            if Instant::now() >= at {
                eprintln!("{name}: {i} inputs, {:.0} s, {} crashes", start.elapsed().as_secs_f64(), out.crash_count);
                next_progress = Some(at + every);
            }
        }
    }
    out.elapsed = start.elapsed();
    out
}

/// Writes a crash input as `dir/crash-<hash>`; `None` (with a message) if it cannot.
fn write_crash(dir: &Path, input: &[u8]) -> Option<PathBuf> {
    let path = dir.join(format!("crash-{:016x}", fnv64(input)));
    match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, input)) {
        Ok(()) => Some(path),
        Err(e) => {
            eprintln!("cannot write {}: {e}", path.display());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hook and its record are global: tests that run inputs take turns.
    static TURN: Mutex<()> = Mutex::new(());

    fn corpus() -> Vec<Vec<u8>> {
        vec![b"\x00abc#FRMdefgh#FRMij".to_vec(), vec![0x45, 0, 0, 20, 1, 2, 3, 4], Vec::new()]
    }

    fn cfg(runs: u64, artifacts: Option<PathBuf>) -> RunConfig {
        RunConfig { seed: 7, runs: Some(runs), time: None, artifacts, progress: None }
    }

    #[test]
    fn same_seed_same_inputs() {
        let c = corpus();
        for layout in [Layout::Bytes, Layout::Frames { prefix: 1 }, Layout::Frames { prefix: 0 }] {
            let m = Mutator::new(&c, layout, 64, fnv64(b"t"));
            let a: Vec<Vec<u8>> = (0..500).map(|i| m.input(1, i)).collect();
            let b: Vec<Vec<u8>> = (0..500).map(|i| m.input(1, i)).collect();
            assert_eq!(a, b, "{layout:?}");
            let other: Vec<Vec<u8>> = (0..500).map(|i| m.input(2, i)).collect();
            assert_ne!(a, other, "another seed, other inputs: {layout:?}");
            let salted = Mutator::new(&c, layout, 64, fnv64(b"u"));
            assert_ne!(a, (0..500).map(|i| salted.input(1, i)).collect::<Vec<_>>(), "another target: {layout:?}");
            // They are mutants, mostly new, and within the length.
            assert!(a.iter().all(|x| x.len() <= 64));
            let novel = a.iter().filter(|x| !c.contains(x)).count();
            assert!(novel > 450, "only {novel} of 500 inputs differ from the corpus ({layout:?})");
            let distinct: std::collections::BTreeSet<&Vec<u8>> = a.iter().collect();
            assert!(distinct.len() > 400, "only {} distinct inputs ({layout:?})", distinct.len());
        }
        // A pinned value: the generator and the mutations do not change by accident (a
        // change is fine, but then the CI run's inputs changed too: update this).
        assert_eq!(Rng::new(1).next_u64(), 0x910a_2dec_8902_5cc1);
    }

    #[test]
    fn frame_mutations_keep_frames() {
        // With frames, some inputs have more or fewer frames than any seed.
        let c = corpus();
        let m = Mutator::new(&c, Layout::Frames { prefix: 1 }, 256, 0);
        let frames = |d: Vec<u8>| if d.is_empty() { 0 } else { split_frames(&d[1..]).len() };
        let counts: std::collections::BTreeSet<usize> = (0..500).map(|i| frames(m.input(3, i))).collect();
        assert!(counts.contains(&1) && counts.contains(&3) && counts.iter().any(|&n| n > 3), "{counts:?}");
    }

    #[test]
    fn a_panic_is_a_crash_and_written() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let dir = std::env::temp_dir().join(format!("tapstat-fuzz-mutate-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let c = corpus();
        let m = Mutator::new(&c, Layout::Bytes, 64, 0);
        // Panics on an input holding 0xff: none of the corpus, some mutants.
        let f = |d: &[u8]| assert!(!d.contains(&0xff), "found 0xff");
        let out = run("t", f, &c, &m, &cfg(2000, Some(dir.clone())));
        assert_eq!((out.corpus_inputs, out.mutated_inputs), (3, 2000));
        assert!(out.crash_count > 0 && !out.crashes.is_empty(), "{out:?}");
        let first = &out.crashes[0];
        let i = first.iteration.expect("a mutant crashed");
        assert_eq!(first.input, m.input(7, i), "the crash is input {i} of seed 7, made again");
        assert!(first.panics[0].contains("found 0xff"), "{:?}", first.panics);
        let path = first.path.as_ref().expect("written");
        assert_eq!(std::fs::read(path).unwrap(), first.input);
        assert!(path.file_name().unwrap().to_string_lossy().starts_with("crash-"));
        // The same run again: the same crashes.
        let again = run("t", f, &c, &m, &cfg(2000, None));
        assert_eq!(again.crash_count, out.crash_count);
        let _ = std::fs::remove_dir_all(&dir);
        // No panic, no crash.
        let quiet = run("t", |_: &[u8]| {}, &c, &m, &cfg(100, None));
        assert_eq!((quiet.crash_count, quiet.mutated_inputs), (0, 100));
    }

    #[test]
    fn a_panic_in_another_thread_is_a_crash() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let c = corpus();
        let m = Mutator::new(&c, Layout::Frames { prefix: 0 }, 64, 0);
        // As an engine whose worker panics and that reports no error: only the hook sees it.
        let f = |d: &[u8]| {
            let d = d.to_vec();
            let r = std::thread::spawn(move || assert!(d.len() < 20, "worker: too long")).join();
            let _ = r;
        };
        let out = run("t", f, &c, &m, &cfg(300, None));
        assert!(out.crash_count > 0, "{out:?}");
        let p = &out.crashes[0].panics[0];
        assert!(p.contains("worker: too long") && p.contains("<unnamed>"), "{p}");
        assert!(out.crashes.iter().all(|c| c.input.len() >= 20));
    }
}
