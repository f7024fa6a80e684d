//! The Toeplitz hash of receive-side scaling (Microsoft RSS spec), with a table of 32-bit
//! contributions per input byte and value, so a 12-byte IPv4 tuple costs 12 loads and
//! XORs. Written by hand: no maintained crate has it, and with the symmetric key
//! (0x6d5a repeated, Woo & Park 2012) a NIC computes the same value for both directions
//! — the value a NIC hands over and the flow table could reuse (FlowMgmt §4.3).

/// The key of the Microsoft RSS verification suite.
pub const MS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

/// The symmetric key: a 16-bit period, so swapping the (32- or 128-bit) addresses and
/// the 16-bit ports gives the same hash.
pub const SYM_KEY: [u8; 40] = {
    let mut k = [0u8; 40];
    let mut i = 0;
    while i < 40 {
        k[i] = if i % 2 == 0 { 0x6d } else { 0x5a };
        i += 1;
    }
    k
};

/// Longest input: IPv6 addresses and ports (36 bytes, what a 40-byte key covers).
pub const MAX_INPUT: usize = 36;

/// The Toeplitz hash of one key, as a table.
#[derive(Clone)]
pub struct Toeplitz {
    t: Box<[[u32; 256]; MAX_INPUT]>,
}

impl Toeplitz {
    pub fn new(key: &[u8; 40]) -> Self {
        let mut t = Box::new([[0u32; 256]; MAX_INPUT]);
        // The 32-bit window of the key that starts at bit `bit`.
        let window = |bit: usize| -> u32 {
            let mut w = 0u64;
            for i in 0..5 {
                w = w << 8 | *key.get(bit / 8 + i).unwrap_or(&0) as u64;
            }
            (w >> (8 - bit % 8)) as u32
        };
        for (pos, row) in t.iter_mut().enumerate() {
            for (v, cell) in row.iter_mut().enumerate() {
                let mut h = 0;
                for b in 0..8 {
                    if v & (0x80 >> b) != 0 {
                        h ^= window(pos * 8 + b);
                    }
                }
                *cell = h;
            }
        }
        Toeplitz { t }
    }

    /// The hash of `input` (at most [`MAX_INPUT`] bytes, more are ignored).
    #[inline]
    pub fn hash(&self, input: &[u8]) -> u32 {
        let mut h = 0;
        for (row, &b) in self.t.iter().zip(input) {
            h ^= row[b as usize];
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(src: &str, sport: u16, dst: &str, dport: u16, ports: bool) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend(src.parse::<Ipv4Addr>().unwrap().octets());
        v.extend(dst.parse::<Ipv4Addr>().unwrap().octets());
        if ports {
            v.extend(sport.to_be_bytes());
            v.extend(dport.to_be_bytes());
        }
        v
    }

    fn v6(src: &str, sport: u16, dst: &str, dport: u16, ports: bool) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend(src.parse::<Ipv6Addr>().unwrap().octets());
        v.extend(dst.parse::<Ipv6Addr>().unwrap().octets());
        if ports {
            v.extend(sport.to_be_bytes());
            v.extend(dport.to_be_bytes());
        }
        v
    }

    /// "Verifying the RSS Hash Calculation" (Microsoft), IPv4: (source, destination,
    /// IP-only hash, hash with TCP ports).
    #[test]
    fn microsoft_vectors_ipv4() {
        let t = Toeplitz::new(&MS_KEY);
        let cases = [
            ("66.9.149.187", 2794, "161.142.100.80", 1766, 0x323e_8fc2, 0x51cc_c178),
            ("199.92.111.2", 14230, "65.69.140.83", 4739, 0xd718_262a, 0xc626_b0ea),
            ("24.19.198.95", 12898, "12.22.207.184", 38024, 0xd2d0_a5de, 0x5c2b_394a),
            ("38.27.205.30", 48228, "209.142.163.6", 2217, 0x8298_9176, 0xafc7_327f),
            ("153.39.163.191", 44251, "202.188.127.2", 1303, 0x5d18_09c5, 0x10e8_28a2),
        ];
        for (s, sp, d, dp, ip_only, with_ports) in cases {
            assert_eq!(t.hash(&v4(s, sp, d, dp, false)), ip_only, "{s} -> {d}");
            assert_eq!(t.hash(&v4(s, sp, d, dp, true)), with_ports, "{s}:{sp} -> {d}:{dp}");
        }
    }

    /// The same document, IPv6.
    #[test]
    fn microsoft_vectors_ipv6() {
        let t = Toeplitz::new(&MS_KEY);
        let cases = [
            ("3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766, 0x2cc1_8cd5, 0x4020_7d3d),
            ("3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739, 0x0f0c_461c, 0xdde5_1bbf),
            ("3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251, "fe80::200:f8ff:fe21:67cf", 38024, 0x4b61_e985, 0x02d1_feef),
        ];
        for (s, sp, d, dp, ip_only, with_ports) in cases {
            assert_eq!(t.hash(&v6(s, sp, d, dp, false)), ip_only, "{s} -> {d}");
            assert_eq!(t.hash(&v6(s, sp, d, dp, true)), with_ports, "{s}:{sp} -> {d}:{dp}");
        }
    }

    /// The symmetric key gives both directions one hash, on raw (not canonical) tuples.
    #[test]
    fn symmetric_key_is_symmetric() {
        let t = Toeplitz::new(&SYM_KEY);
        let mut x = 0x1234_5678_9abc_def1u64;
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (a, b) = (x as u32, (x >> 32) as u32);
            let (pa, pb) = ((x >> 8) as u16, (x >> 40) as u16);
            let fwd = [a.to_be_bytes(), b.to_be_bytes()].concat();
            let fwd = [fwd, pa.to_be_bytes().to_vec(), pb.to_be_bytes().to_vec()].concat();
            let rev = [b.to_be_bytes(), a.to_be_bytes()].concat();
            let rev = [rev, pb.to_be_bytes().to_vec(), pa.to_be_bytes().to_vec()].concat();
            assert_eq!(t.hash(&fwd), t.hash(&rev));
            let a6 = (x as u128) << 64 | (x >> 3) as u128;
            let b6 = (x.rotate_left(17) as u128) << 64 | 7;
            let f6 = [a6.to_be_bytes(), b6.to_be_bytes()].concat();
            let r6 = [b6.to_be_bytes(), a6.to_be_bytes()].concat();
            assert_eq!(t.hash(&f6), t.hash(&r6));
        }
    }
}
