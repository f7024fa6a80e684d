//! The canonical bidirectional flow key.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A bidirectional flow key: the endpoints in canonical order ((ip, port) of `lo`
/// sorts before `hi`'s), so both directions of a flow have one key.
///
/// IPv4 addresses are held in the low 32 bits of the `u128`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct FlowKey {
    pub lo_ip: u128,
    pub hi_ip: u128,
    pub lo_port: u16,
    pub hi_port: u16,
    pub proto: u8,
    pub ip_version: u8,
}

impl FlowKey {
    /// The key of a packet from `(src, sport)` to `(dst, dport)`, and whether the
    /// source is the `lo` endpoint.
    #[inline]
    pub fn new(ip_version: u8, proto: u8, src: u128, sport: u16, dst: u128, dport: u16) -> (FlowKey, bool) {
        let src_is_lo = (src, sport) <= (dst, dport);
        let (lo_ip, lo_port, hi_ip, hi_port) =
            if src_is_lo { (src, sport, dst, dport) } else { (dst, dport, src, sport) };
        (FlowKey { lo_ip, hi_ip, lo_port, hi_port, proto, ip_version }, src_is_lo)
    }

    /// An address of this key's family as a std address.
    pub fn ip(&self, raw: u128) -> IpAddr {
        ip_of(self.ip_version, raw)
    }
}

/// `raw` (as held in [`FlowKey`]) as a std address of the given IP version.
pub fn ip_of(ip_version: u8, raw: u128) -> IpAddr {
    if ip_version == 6 {
        IpAddr::V6(Ipv6Addr::from(raw))
    } else {
        IpAddr::V4(Ipv4Addr::from(raw as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FlowHasher;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn symmetric(a: u128, b: u128, pa: u16, pb: u16, proto: u8, seed: u64) {
            let h = FlowHasher::new(seed);
            let (k1, d1) = FlowKey::new(6, proto, a, pa, b, pb);
            let (k2, d2) = FlowKey::new(6, proto, b, pb, a, pa);
            prop_assert_eq!(k1, k2);
            prop_assert_eq!(h.hash(&k1), h.hash(&k2));
            if (a, pa) != (b, pb) { prop_assert_ne!(d1, d2); }
        }

        #[test]
        fn worker_in_range(hash: u64, n in 1usize..64) {
            prop_assert!(FlowHasher::worker_of(hash, n) < n);
        }
    }

    #[test]
    fn seed_changes_hash() {
        let (k, _) = FlowKey::new(4, 17, 1, 2, 3, 4);
        assert_ne!(FlowHasher::new(1).hash(&k), FlowHasher::new(2).hash(&k));
    }

    #[test]
    fn workers_are_balanced() {
        let h = FlowHasher::new(99);
        let mut counts = [0u32; 4];
        for i in 0..40_000u32 {
            let (k, _) = FlowKey::new(4, 6, 0x0a00_0000 | i as u128, 40000, 0x0808_0808, 443);
            counts[FlowHasher::worker_of(h.hash(&k), 4)] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "unbalanced: {counts:?}");
        }
    }
}
