//! FNV-1a, 64 bits (Fowler, Noll, Vo; draft-eastlake-fnv). Written by hand: a loop of
//! three lines, and the `fnv` crate's `Hasher` adds a call per field.

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of `bytes`, starting from the offset basis XOR `seed` (seed 0: the standard hash).
#[inline]
pub fn fnv1a64(bytes: &[u8], seed: u64) -> u64 {
    let mut h = OFFSET ^ seed;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(PRIME);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors of the FNV reference test suite.
    #[test]
    fn reference_vectors() {
        assert_eq!(fnv1a64(b"", 0), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a", 0), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar", 0), 0x8594_4171_f739_67e8);
    }
}
