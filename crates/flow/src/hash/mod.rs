//! Flow hash functions over the canonical [`FlowKey`], one file per family, behind one
//! seeded [`FlowHasher`].
//!
//! Every function hashes the *canonical* key (endpoints in sorted order), so every one
//! is symmetric: both directions of a flow have one hash. Byte-oriented functions read
//! the classic 5-tuple layout: `lo_ip, hi_ip, lo_port, hi_port, proto` in network order
//! (13 bytes for IPv4, 37 for IPv6); Toeplitz reads the RSS layout (addresses and ports,
//! no protocol), so a NIC's RSS hash with the symmetric key is the same value.
//!
//! 32-bit functions (CoralReef, lookup3, CRC-32C, Toeplitz) are widened to 64 bits by
//! repeating the value in both halves: structures that take tag bits from the top
//! (hashbrown's 7-bit control byte, the cuckoo table's signature) then see the hash's
//! bits rather than zeros, and the bucket bits (the low ones) are the function's own.

pub mod coralreef;
pub mod crc32;
pub mod fnv;
pub mod lookup3;
pub mod toeplitz;

use crate::FlowKey;
use std::hash::BuildHasher;

/// A flow hash function. `Foldhash` is the default on the packet path: keyed by a seed
/// drawn at start-up (crafted-collision resistance), and the fastest in the lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum HashKind {
    /// foldhash (`fast` variant), keyed.
    #[default]
    Foldhash,
    /// aHash (AES rounds where the CPU has them, folded multiply otherwise), keyed.
    Ahash,
    /// XXH3 64-bit, keyed by its seed.
    Xxh3,
    /// MurmurHash3 x64_128 (low 64 bits), seeded.
    Murmur3,
    /// Bob Jenkins' lookup3 `hashlittle`, seeded by its initval (32 bits).
    Lookup3,
    /// CoralReef's XOR fold (32 bits, not keyed).
    Coralreef,
    /// FNV-1a 64, offset basis XOR seed.
    Fnv1a,
    /// CRC-32C (SSE4.2 instruction where available), seeded by the register's start.
    Crc32,
    /// Toeplitz with the symmetric RSS key (not keyed: the key must keep a 16-bit period).
    Toeplitz,
}

impl HashKind {
    pub const ALL: [HashKind; 9] = [
        HashKind::Foldhash,
        HashKind::Ahash,
        HashKind::Xxh3,
        HashKind::Murmur3,
        HashKind::Lookup3,
        HashKind::Coralreef,
        HashKind::Fnv1a,
        HashKind::Crc32,
        HashKind::Toeplitz,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HashKind::Foldhash => "foldhash",
            HashKind::Ahash => "ahash",
            HashKind::Xxh3 => "xxh3",
            HashKind::Murmur3 => "murmur3",
            HashKind::Lookup3 => "lookup3",
            HashKind::Coralreef => "coralreef",
            HashKind::Fnv1a => "fnv1a",
            HashKind::Crc32 => "crc32",
            HashKind::Toeplitz => "toeplitz",
        }
    }

    pub fn from_name(s: &str) -> Option<HashKind> {
        HashKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Keyed: built so that without the seed nobody can predict which keys collide, so
    /// traffic crafted against one run's buckets misses the next (foldhash and aHash,
    /// made for hash-flooding resistance). The others take a seed but their collisions
    /// do not depend on it, or not enough: CRC-32C is linear (two keys of one length
    /// that collide under one start value collide under every one, see the test
    /// `crc32_collisions_hold_under_every_seed`), MurmurHash3 has seed-independent
    /// multicollisions (Aumasson, Bernstein and Boßlet, "Hash-flooding DoS reloaded",
    /// 2012), and XXH3, lookup3 and FNV-1a were never meant to resist a chosen input;
    /// CoralReef and Toeplitz take no seed at all. The binary warns when one of these
    /// is chosen.
    pub fn is_keyed(self) -> bool {
        matches!(self, HashKind::Foldhash | HashKind::Ahash)
    }

    /// Takes a seed at all (the keyed functions and the seeded ones).
    pub fn is_seeded(self) -> bool {
        !matches!(self, HashKind::Coralreef | HashKind::Toeplitz)
    }
}

/// MurmurHash3's 64-bit finalizer: every output bit depends on every input bit.
#[inline]
fn fmix64(hash: u64) -> u64 {
    let mut x = hash ^ (hash >> 33);
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The canonical key in the classic 5-tuple layout (see the module doc); returns the
/// length used (13 or 37).
#[inline(always)]
pub fn key_bytes(k: &FlowKey, buf: &mut [u8; 40]) -> usize {
    if k.ip_version == 6 {
        buf[0..16].copy_from_slice(&k.lo_ip.to_be_bytes());
        buf[16..32].copy_from_slice(&k.hi_ip.to_be_bytes());
        buf[32..34].copy_from_slice(&k.lo_port.to_be_bytes());
        buf[34..36].copy_from_slice(&k.hi_port.to_be_bytes());
        buf[36] = k.proto;
        37
    } else {
        buf[0..4].copy_from_slice(&(k.lo_ip as u32).to_be_bytes());
        buf[4..8].copy_from_slice(&(k.hi_ip as u32).to_be_bytes());
        buf[8..10].copy_from_slice(&k.lo_port.to_be_bytes());
        buf[10..12].copy_from_slice(&k.hi_port.to_be_bytes());
        buf[12] = k.proto;
        13
    }
}

#[inline(always)]
fn widen(h: u32) -> u64 {
    (h as u64) << 32 | h as u64
}

/// The flow hash: one of [`HashKind`] over the canonical key, seeded where the function
/// takes a seed. The seed is drawn at start-up, so traffic crafted to collide in one
/// run's buckets does not collide in the next (cf. the "adversarial key streams" of
/// FlowMgmt, future work there).
///
/// The same 64-bit value picks the worker (upper bits, after a multiply) and the
/// bucket in that worker's table, so a packet is hashed once, by the dispatcher.
#[derive(Clone)]
pub struct FlowHasher {
    kind: HashKind,
    seed: u64,
    fold: foldhash::fast::FixedState,
    ahash: ahash::RandomState,
    crc_hw: bool,
    toeplitz: Option<toeplitz::Toeplitz>,
}

impl std::fmt::Debug for FlowHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowHasher").field("kind", &self.kind).field("seed", &self.seed).finish()
    }
}

impl FlowHasher {
    /// The default hash (foldhash) with `seed`.
    pub fn new(seed: u64) -> Self {
        Self::with_kind(HashKind::Foldhash, seed)
    }

    pub fn with_kind(kind: HashKind, seed: u64) -> Self {
        FlowHasher {
            kind,
            seed,
            fold: foldhash::fast::FixedState::with_seed(seed),
            ahash: ahash::RandomState::with_seeds(
                seed,
                seed ^ 0x243f_6a88_85a3_08d3,
                seed ^ 0x1319_8a2e_0370_7344,
                seed ^ 0xa409_3822_299f_31d0,
            ),
            crc_hw: crc32::has_hw(),
            toeplitz: (kind == HashKind::Toeplitz).then(|| toeplitz::Toeplitz::new(&toeplitz::SYM_KEY)),
        }
    }

    pub fn kind(&self) -> HashKind {
        self.kind
    }

    #[inline]
    pub fn hash(&self, key: &FlowKey) -> u64 {
        match self.kind {
            HashKind::Foldhash => self.fold.hash_one(key),
            HashKind::Ahash => self.ahash.hash_one(key),
            HashKind::Coralreef => {
                let (lo, hi) = if key.ip_version == 6 {
                    (coralreef::fold(key.lo_ip), coralreef::fold(key.hi_ip))
                } else {
                    (key.lo_ip as u32, key.hi_ip as u32)
                };
                widen(coralreef::coralreef(lo, hi, key.lo_port, key.hi_port, key.proto))
            }
            kind => {
                let mut buf = [0u8; 40];
                let n = key_bytes(key, &mut buf);
                let b = &buf[..n];
                match kind {
                    HashKind::Xxh3 => xxhash_rust::xxh3::xxh3_64_with_seed(b, self.seed),
                    HashKind::Murmur3 => fastmurmur3::murmur3_x64_128(b, self.seed) as u64,
                    HashKind::Lookup3 => widen(lookup3::hashlittle(b, self.seed as u32)),
                    HashKind::Fnv1a => fnv::fnv1a64(b, self.seed),
                    HashKind::Crc32 => widen(crc32::crc32c(b, !(self.seed as u32), self.crc_hw)),
                    HashKind::Toeplitz => {
                        // The RSS layout: no protocol byte (it is the last one).
                        let t = self.toeplitz.as_ref().expect("built with the Toeplitz kind");
                        widen(t.hash(&b[..n - 1]))
                    }
                    HashKind::Foldhash | HashKind::Ahash | HashKind::Coralreef => unreachable!("handled above"),
                }
            }
        }
    }

    /// The worker, of `n`, that owns flows with hash `hash`.
    ///
    /// The choice must be independent of every bit an index takes from the same hash,
    /// or each worker's flows land in 1/n of its index. The indexes use the hash as it
    /// is: chunks takes its home chunk from the high bits of `hash × 2^64/φ` and its tag
    /// from the top byte; hashbrown its group from the low bits and its tag from the
    /// top 7; cuckoo, lists and trees the low bits (a mask) or the remainder, and tags
    /// from the high half. A worker chosen from the high bits of `hash × 2^64/φ` (as
    /// this was once) gave every worker a contiguous 1/n of each chunks
    /// index, one long cluster for linear probing: a flood of 1 M random flows ran
    /// about 60× slower at 2 workers than at 1. So the worker comes from a finalizer
    /// (MurmurHash3's `fmix64`): a bijection in which every output bit depends on every
    /// input bit through two multiplications and three shifts, so no function of a
    /// fixed set of the hash's bits (a mask, a remainder, a multiply-shift) sees the
    /// worker's share as anything but a uniform sample. Hashes widened from 32 bits
    /// (equal halves) are mixed as well. `tests/workers.rs` checks the probe lengths of
    /// every index and hash at 1 to 4 workers.
    #[inline]
    pub fn worker_of(hash: u64, n: usize) -> usize {
        if n <= 1 {
            return 0; // the single-worker path pays nothing for the mixing
        }
        (((fmix64(hash) >> 32) * n as u64) >> 32) as usize
    }

    /// The scheduling bin of a flow among `n` (`--schedule balance|bundle` moves bins
    /// between workers): from the low 32 bits of the same finalizer, which
    /// [`FlowHasher::worker_of`] does not take, and so independent of it and of every
    /// index's bits.
    #[inline]
    pub fn bin_of(hash: u64, n: usize) -> usize {
        (((fmix64(hash) & 0xffff_ffff) * n as u64) >> 32) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reference values of the crates' own suites, so a change of crate version that
    /// changes the function is seen here.
    #[test]
    fn crate_vectors() {
        assert_eq!(xxhash_rust::xxh3::xxh3_64(b""), 0x2d06_8005_38d3_94c2);
        // MurmurHash3_x64_128("hello", 0): h1 = cbd8a7b341bd9b02, h2 = 5b1e906a48ae1d19.
        let m = fastmurmur3::murmur3_x64_128(b"hello", 0);
        assert_eq!(m as u64, 0xcbd8_a7b3_41bd_9b02);
        assert_eq!((m >> 64) as u64, 0x5b1e_906a_48ae_1d19);
    }

    #[test]
    fn key_layout() {
        let (k, _) = FlowKey::new(4, 6, 0x0a00_0002, 80, 0x0a00_0001, 1234);
        let mut b = [0u8; 40];
        let n = key_bytes(&k, &mut b);
        assert_eq!(&b[..n], &[10, 0, 0, 1, 10, 0, 0, 2, 0x04, 0xd2, 0, 80, 6]);
        // The Toeplitz value of a canonical key is the RSS hash of its 12-byte tuple.
        let t = toeplitz::Toeplitz::new(&toeplitz::SYM_KEY);
        assert_eq!(FlowHasher::with_kind(HashKind::Toeplitz, 0).hash(&k), widen(t.hash(&b[..12])));
    }

    #[test]
    fn names_round_trip() {
        for k in HashKind::ALL {
            assert_eq!(HashKind::from_name(k.name()), Some(k));
        }
    }

    /// A collision of CRC-32C found under one seed holds under every other seed (CRC is
    /// linear in its start value), so `crc32` must not be called keyed; the same pair
    /// does not collide under foldhash with another seed.
    #[test]
    fn crc32_collisions_hold_under_every_seed() {
        let h = FlowHasher::with_kind(HashKind::Crc32, 1);
        // Random keys (splitmix64): structured ones differ in few bits, which a CRC
        // never maps to the same value.
        let key = |i: u32| {
            let mut z = (i as u64).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            FlowKey::new(4, 6, (z >> 32) as u128, z as u16, z as u32 as u128, (z >> 16) as u16).0
        };
        let mut seen = std::collections::HashMap::new();
        let (a, b) = (0..400_000u32)
            .find_map(|i| seen.insert(h.hash(&key(i)), i).map(|j| (key(j), key(i))))
            .expect("a 32-bit collision among 400,000 keys (birthday bound)");
        for seed in [0, 2, 0xdead_beef, u64::MAX] {
            let h = FlowHasher::with_kind(HashKind::Crc32, seed);
            assert_eq!(h.hash(&a), h.hash(&b), "seed {seed:#x}");
        }
        assert!(!HashKind::Crc32.is_keyed());
        let f1 = FlowHasher::with_kind(HashKind::Foldhash, 1);
        let f2 = FlowHasher::with_kind(HashKind::Foldhash, 2);
        assert!(f1.hash(&a) != f1.hash(&b) || f2.hash(&a) != f2.hash(&b));
    }

    proptest! {
        /// Every function, both directions, IPv4 and IPv6: one hash.
        #[test]
        fn every_hash_is_symmetric(a: u128, b: u128, pa: u16, pb: u16, proto: u8, seed: u64, v6: bool) {
            let (ver, a, b) = if v6 { (6, a, b) } else { (4, a as u32 as u128, b as u32 as u128) };
            for kind in HashKind::ALL {
                let h = FlowHasher::with_kind(kind, seed);
                let (k1, _) = FlowKey::new(ver, proto, a, pa, b, pb);
                let (k2, _) = FlowKey::new(ver, proto, b, pb, a, pa);
                prop_assert_eq!(h.hash(&k1), h.hash(&k2), "{:?}", kind);
            }
        }

        /// Seeded functions change with the seed.
        #[test]
        fn seeded_hashes_follow_the_seed(a: u32, b: u32, s1: u64, s2: u64) {
            prop_assume!(s1 as u32 != s2 as u32);
            let (k, _) = FlowKey::new(4, 17, a as u128, 53, b as u128, 4000);
            for kind in HashKind::ALL.into_iter().filter(|k| k.is_seeded()) {
                prop_assert_ne!(
                    FlowHasher::with_kind(kind, s1).hash(&k),
                    FlowHasher::with_kind(kind, s2).hash(&k),
                    "{:?}", kind
                );
            }
        }
    }
}
