//! Prefix-preserving address anonymization (`--anonymize KEYFILE`): Crypto-PAn (Xu,
//! Fan, Ammar, Moon, "Prefix-Preserving IP Address Anonymization", ICNP 2002), for
//! IPv4 as the reference implementation and for IPv6 as its 128-bit generalisation in
//! yacryptopan (the address is the top of a 128-bit block; IPv4 is the same block with
//! 32 bits of address).
//!
//! The key is 32 bytes: an AES-128 key, then 16 bytes whose encryption is the pad. Bit
//! `i` of the output flips bit `i` of the input when the first bit of AES(the first `i`
//! input bits, then the pad's bits) is 1: two addresses sharing a prefix of `k` bits
//! share exactly `k` bits of prefix once anonymized.
//!
//! An IPv4 address costs 32 AES blocks, an IPv6 one 128: each worker keeps the
//! addresses it anonymized in a bounded cache ([`Anonymizer`]), and anonymizes once
//! per flow, when the flow starts.

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes128;
use std::net::IpAddr;

/// Which addresses are anonymized (`--anonymize-only`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scope {
    /// Every address.
    #[default]
    All,
    /// Addresses in the internal networks (`-N`, `--internal`): the probe's own users;
    /// Tstat's default for its crypto option.
    Internal,
    /// Addresses outside them.
    External,
}

impl Scope {
    pub fn parse(s: &str) -> Result<Scope, String> {
        match s {
            "all" => Ok(Scope::All),
            "internal" => Ok(Scope::Internal),
            "external" => Ok(Scope::External),
            _ => Err(format!("--anonymize-only {s:?}: expected all, internal or external")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::All => "all",
            Scope::Internal => "internal",
            Scope::External => "external",
        }
    }

    /// Is an address, internal or not, anonymized?
    #[inline]
    pub fn covers(self, internal: bool) -> bool {
        match self {
            Scope::All => true,
            Scope::Internal => internal,
            Scope::External => !internal,
        }
    }
}

/// What a run anonymizes: the key and the scope. Small and `Copy`, so each worker
/// builds its own [`Anonymizer`] from it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AnonConfig {
    pub key: [u8; 32],
    pub scope: Scope,
}

impl std::fmt::Debug for AnonConfig {
    // Never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnonConfig").field("scope", &self.scope).finish_non_exhaustive()
    }
}

impl AnonConfig {
    /// A secret derived from the key, for ids that must not reveal the addresses they
    /// were computed from (the flow id).
    pub fn id_secret(&self) -> u64 {
        let c = CryptoPan::new(&self.key);
        let mut b = aes::Block::from(*b"tapstat flow id\0");
        c.aes.encrypt_block(&mut b);
        u64::from_be_bytes(b[..8].try_into().unwrap_or_default())
    }
}

/// Crypto-PAn with one key.
#[derive(Clone)]
pub struct CryptoPan {
    aes: Aes128,
    pad: u128,
}

impl CryptoPan {
    pub fn new(key: &[u8; 32]) -> CryptoPan {
        let aes = Aes128::new(aes::cipher::generic_array::GenericArray::from_slice(&key[..16]));
        let mut pad = aes::Block::clone_from_slice(&key[16..]);
        aes.encrypt_block(&mut pad);
        CryptoPan { aes, pad: u128::from_be_bytes(pad.into()) }
    }

    /// Anonymizes the top `bits` bits of `x` (an address shifted to the top of 128).
    fn flips(&self, x: u128, bits: u32) -> u128 {
        let mut out = 0u128;
        for pos in 0..bits {
            let top = if pos == 0 { 0 } else { u128::MAX << (128 - pos) };
            let mut b = aes::Block::from(((x & top) | (self.pad & !top)).to_be_bytes());
            self.aes.encrypt_block(&mut b);
            out = (out << 1) | (b[0] >> 7) as u128;
        }
        out
    }

    pub fn v4(&self, a: u32) -> u32 {
        a ^ self.flips((a as u128) << 96, 32) as u32
    }

    pub fn v6(&self, a: u128) -> u128 {
        a ^ self.flips(a, 128)
    }

    pub fn ip(&self, a: IpAddr) -> IpAddr {
        match a {
            IpAddr::V4(a) => IpAddr::V4(self.v4(a.into()).into()),
            IpAddr::V6(a) => IpAddr::V6(self.v6(a.into()).into()),
        }
    }
}

/// Most addresses a worker's cache holds; when full it starts again empty.
const CACHE: usize = 1 << 16;

/// A worker's anonymizer: Crypto-PAn, the scope, and the addresses done so far.
pub struct Anonymizer {
    pan: CryptoPan,
    pub scope: Scope,
    /// Derived from the key: mixed into flow ids ([`AnonConfig::id_secret`]).
    pub id_secret: u64,
    cache: std::cell::RefCell<hashbrown::HashMap<(u8, u128), u128>>,
}

impl Anonymizer {
    pub fn new(cfg: &AnonConfig) -> Anonymizer {
        Anonymizer {
            pan: CryptoPan::new(&cfg.key),
            scope: cfg.scope,
            id_secret: cfg.id_secret(),
            cache: Default::default(),
        }
    }

    /// The anonymized form of an address as flows keep it (`ip_version`, raw bits).
    pub fn raw(&self, ip_version: u8, raw: u128) -> u128 {
        let mut c = self.cache.borrow_mut();
        if let Some(&v) = c.get(&(ip_version, raw)) {
            return v;
        }
        let v = if ip_version == 6 { self.pan.v6(raw) } else { self.pan.v4(raw as u32) as u128 };
        if c.len() >= CACHE {
            c.clear();
        }
        c.insert((ip_version, raw), v);
        v
    }

    /// The anonymized form of `a`, whatever the scope (DNS answers: their addresses are
    /// not known to be internal or not... see [`Anonymizer::answer`]).
    pub fn ip(&self, a: IpAddr) -> IpAddr {
        match a {
            IpAddr::V4(v) => IpAddr::V4((self.raw(4, u32::from(v) as u128) as u32).into()),
            IpAddr::V6(v) => IpAddr::V6(self.raw(6, u128::from(v)).into()),
        }
    }

    /// An address of a DNS answer, under the scope: anonymized unless the scope keeps
    /// it clear given whether it is internal.
    pub fn answer(&self, a: IpAddr, nets: Option<&crate::nets::Nets>) -> IpAddr {
        let internal = nets.is_none_or(|n| n.contains(a));
        if self.scope.covers(internal) {
            self.ip(a)
        } else {
            a
        }
    }

    /// `s` with the addresses written in it anonymized ([`Anonymizer::text`]), in place.
    pub fn rewrite(&self, s: &mut String, nets: Option<&crate::nets::Nets>) {
        if let Some(n) = self.text(s, nets) {
            *s = n;
        }
    }

    /// Text from the wire (any string a record writes: a name, a URL, a header, a
    /// certificate's names, an SSH banner) with every address written in it anonymized
    /// under the scope; none when that changes nothing (no address, or only addresses the
    /// scope keeps clear). What reads as an address:
    ///
    /// - a dotted quad (four numbers of 1 to 3 digits, each at most 255) that is not part
    ///   of a longer run of dotted numbers: taken inside names and words too
    ///   (`host-192.0.2.1.example`, `ip192.0.2.1`, `CN=192.0.2.1`, `192.0.2.1:8080`), a
    ///   version spelled like one as well (`Agent/1.2.3.4`: on the side of hiding), not
    ///   `v1.2.3.4.5` nor `Chrome/120.0.6099.109`;
    /// - an IPv6 literal standing alone, in any spelling (`2001:db8::1`, the full form,
    ///   `[2001:db8::1]:443`), not inside a longer run of letters, digits, dots or colons;
    /// - a reverse name (`1.2.0.192.in-addr.arpa`, the nibbles of `ip6.arpa`), or its
    ///   labels nearest the suffix when fewer than a whole address (a network's prefix,
    ///   `_dns-sd._udp.0.2.0.192.in-addr.arpa`): the prefix's image, as Crypto-PAn keeps
    ///   prefixes.
    ///
    /// Escapes are read as a reader would: `%2E`, `%3A` and `\.` (a dot inside a DNS
    /// label, as the DNS decoder writes it) are a dot and a colon inside an address, and
    /// written back so; any other percent escape separates like the character it encodes
    /// (`?u=http%3A%2F%2F192.0.2.1%2F`, `ip%3D192.0.2.1`). Not read: an address spelled
    /// otherwise (with dashes, `ec2-192-0-2-1`; as an integer; percent-encoded digits).
    pub fn text(&self, s: &str, nets: Option<&crate::nets::Nets>) -> Option<String> {
        let b = s.as_bytes();
        if !b.iter().any(|&c| c.is_ascii_digit() || c == b':') {
            return None;
        }
        // (start, end, replacement), sorted and disjoint once the runs are read.
        let mut reps: Vec<(usize, usize, String)> = Vec::new();
        self.reverse_names(s, nets, &mut reps);
        let reverse = reps.len();
        let mut units: Vec<(usize, u8)> = Vec::new();
        let (mut i, mut next) = (0, 0);
        while i < b.len() {
            if next < reverse && i >= reps[next].0 {
                i = i.max(reps[next].1);
                next += 1;
                continue;
            }
            let (n, c) = text_unit(b, i);
            if c.is_none() {
                i += n;
                continue;
            }
            units.clear();
            while i < b.len() && !(next < reverse && i >= reps[next].0) {
                let (n, c) = text_unit(b, i);
                let Some(c) = c else { break };
                units.push((i, c));
                i += n;
            }
            self.run(s, &units, i, nets, &mut reps);
        }
        // A reverse name the scope keeps clear is its own replacement (its labels must not
        // be read again as a forward address).
        reps.retain(|(start, end, with)| s[*start..*end] != **with);
        if reps.is_empty() {
            return None;
        }
        reps.sort_unstable_by_key(|r| r.0);
        let mut out = String::with_capacity(s.len() + 8);
        let mut last = 0;
        for (start, end, with) in &reps {
            out.push_str(&s[last..*start]);
            out.push_str(with);
            last = *end;
        }
        out.push_str(&s[last..]);
        Some(out)
    }

    /// The addresses in one run of word units (`units`: where each starts in `s`, and
    /// the byte it stands for; the run ends at `end`).
    fn run(
        &self,
        s: &str,
        units: &[(usize, u8)],
        end: usize,
        nets: Option<&crate::nets::Nets>,
        reps: &mut Vec<(usize, usize, String)>,
    ) {
        let unit_end = |k: usize| units.get(k + 1).map_or(end, |u| u.0);
        let c = |k: usize| units.get(k).map(|u| u.1);
        let digit = |k: usize| c(k).is_some_and(|c| c.is_ascii_digit());
        // A sentence's full stop or colon after an address is not part of it.
        let kept = units.len() - units.iter().rev().take_while(|u| u.1 == b'.' || u.1 == b':').count();
        if kept > 1 && units[..kept].iter().any(|u| u.1 == b':') {
            let tok: String = units[..kept].iter().map(|u| char::from(u.1)).collect();
            if let Ok(a) = tok.parse::<std::net::Ipv6Addr>() {
                let image = self.answer(a.into(), nets);
                if image == IpAddr::V6(a) {
                    return;
                }
                let image = image.to_string();
                reps.push((units[0].0, unit_end(kept - 1), spell(&image, s, &units[..kept], end)));
                return;
            }
        }
        let mut k = 0;
        while k < units.len() {
            // A quad starts a run of digits not after `digit.`: not inside `1.2.3.4.5`.
            let starts = digit(k) && !(k > 0 && digit(k - 1)) && !(k >= 2 && c(k - 1) == Some(b'.') && digit(k - 2));
            let Some((a, j)) = starts.then(|| quad(units, k)).flatten() else {
                k += 1;
                continue;
            };
            let image = self.answer(IpAddr::V4(a), nets);
            if image != IpAddr::V4(a) {
                reps.push((units[k].0, unit_end(j - 1), spell(&image.to_string(), s, &units[k..j], unit_end(j - 1))));
            }
            k = j;
        }
    }

    /// The reverse names in `s` (whole, or the labels of a prefix nearest the suffix),
    /// each as the replacement of its address labels.
    fn reverse_names(&self, s: &str, nets: Option<&crate::nets::Nets>, reps: &mut Vec<(usize, usize, String)>) {
        let b = s.as_bytes();
        if !b.windows(5).any(|w| w.eq_ignore_ascii_case(b".arpa")) {
            return;
        }
        for (suffix, v6) in [(&b".in-addr.arpa"[..], false), (&b".ip6.arpa"[..], true)] {
            let mut from = 0;
            while let Some(p) = b[from..].windows(suffix.len()).position(|w| w.eq_ignore_ascii_case(suffix)) {
                let p = from + p;
                from = p + suffix.len();
                // The suffix ends the name (`.arpa`, `.arpa.`, then no more label).
                let after = &b[from..];
                let after = after.strip_prefix(b".").unwrap_or(after);
                if after.first().is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') {
                    continue;
                }
                // The labels before it, nearest first: octets, or nibbles.
                let (max, mut vals, mut first) = (if v6 { 32 } else { 4 }, Vec::new(), p);
                let mut q = p;
                while vals.len() < max {
                    let start = b[..q].iter().rposition(|&c| c == b'.').map_or(0, |d| d + 1);
                    let label = &s[start..q];
                    let v = if v6 {
                        u8::from_str_radix(label, 16).ok().filter(|_| label.len() == 1)
                    } else {
                        label
                            .parse::<u8>()
                            .ok()
                            .filter(|_| label.len() <= 3 && label.bytes().all(|c| c.is_ascii_digit()))
                    };
                    // `\.` is a dot inside a label, not between two.
                    let escaped = start >= 2 && b[start - 2] == b'\\';
                    let Some(v) = v.filter(|_| !escaped) else { break };
                    vals.push(v);
                    first = start;
                    if start == 0 {
                        break;
                    }
                    q = start - 1;
                }
                if vals.is_empty() {
                    continue;
                }
                let with = if v6 {
                    let raw = vals.iter().enumerate().fold(0u128, |x, (i, &n)| x | (n as u128) << (124 - 4 * i));
                    let IpAddr::V6(a) = self.answer(IpAddr::V6(raw.into()), nets) else { continue };
                    let a = u128::from(a);
                    let nib: Vec<String> =
                        (0..vals.len()).rev().map(|i| format!("{:x}", (a >> (124 - 4 * i)) & 0xf)).collect();
                    nib.join(".")
                } else {
                    let mut o = [0u8; 4];
                    o[..vals.len()].copy_from_slice(&vals);
                    let IpAddr::V4(a) = self.answer(IpAddr::V4(o.into()), nets) else { continue };
                    let o = a.octets();
                    let labels: Vec<String> = (0..vals.len()).rev().map(|i| o[i].to_string()).collect();
                    labels.join(".")
                };
                reps.push((first, p, with));
            }
        }
        reps.sort_unstable_by_key(|r| r.0);
    }
}

/// The dotted quad of `units` from `k`, and the index of the unit after it: four runs of
/// 1 to 3 digits, each at most 255, separated by dots, not followed by a digit or by a
/// dot and a digit (`1.2.3.4.5` is not one).
fn quad(units: &[(usize, u8)], k: usize) -> Option<(std::net::Ipv4Addr, usize)> {
    let c = |k: usize| units.get(k).map(|u| u.1);
    let mut o = [0u8; 4];
    let mut j = k;
    for (n, x) in o.iter_mut().enumerate() {
        if n > 0 {
            if c(j) != Some(b'.') {
                return None;
            }
            j += 1;
        }
        let from = j;
        let mut v = 0u32;
        while let Some(d) = c(j).filter(u8::is_ascii_digit) {
            v = v * 10 + u32::from(d - b'0');
            j += 1;
            if j - from > 3 {
                return None;
            }
        }
        if j == from || v > 255 {
            return None;
        }
        *x = v as u8;
    }
    if c(j) == Some(b'.') && c(j + 1).is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((o.into(), j))
}

/// `image` written with the spelling of the dots and colons of the address it replaces
/// (`units` of `s`, the last ending at `end`): `%2E`, `%3A` and `\.` kept as escapes.
fn spell(image: &str, s: &str, units: &[(usize, u8)], end: usize) -> String {
    let raw = |k: usize| &s[units[k].0..units.get(k + 1).map_or(end, |u| u.0)];
    let norm = |r: &str| match r {
        "." | ":" => None,
        r if r.starts_with('%') => Some(r.to_ascii_uppercase()),
        r => Some(r.to_string()),
    };
    let dots: Vec<Option<String>> = (0..units.len()).filter(|&k| units[k].1 == b'.').map(|k| norm(raw(k))).collect();
    let colon = (0..units.len()).find(|&k| units[k].1 == b':').and_then(|k| norm(raw(k)));
    if dots.iter().all(Option::is_none) && colon.is_none() {
        return image.to_string();
    }
    let mut out = String::with_capacity(image.len() + 8);
    let mut d = 0;
    for ch in image.chars() {
        match ch {
            '.' => {
                match dots.get(d).or(dots.first()) {
                    Some(Some(e)) => out.push_str(e),
                    _ => out.push('.'),
                }
                d += 1;
            }
            ':' => match &colon {
                Some(e) => out.push_str(e),
                None => out.push(':'),
            },
            ch => out.push(ch),
        }
    }
    out
}

/// One unit of free text at `b[i]` for [`Anonymizer::text`]: its length in bytes and, for
/// a unit that can be part of an address (a letter, a digit, a dot, a colon, `%3A`,
/// `%2E`, or `\.`), the byte it stands for. Any other percent escape is one separating
/// unit.
fn text_unit(b: &[u8], i: usize) -> (usize, Option<u8>) {
    let hex = |c: &u8| (*c as char).to_digit(16);
    match b[i] {
        b'%' => {
            if let (Some(h), Some(l)) = (b.get(i + 1).and_then(hex), b.get(i + 2).and_then(hex)) {
                let c = (h << 4 | l) as u8;
                return (3, (c == b':' || c == b'.').then_some(c));
            }
        }
        b'\\' if b.get(i + 1) == Some(&b'.') => return (2, Some(b'.')),
        _ => {}
    }
    let c = b[i];
    (1, (c.is_ascii_alphanumeric() || c == b'.' || c == b':').then_some(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of sample.txt in Jinliang Fan's reference implementation (Crypto-PAn 1.0).
    pub(crate) const SAMPLE_KEY: [u8; 32] = [
        21, 34, 23, 141, 51, 164, 207, 128, 19, 10, 91, 22, 73, 144, 125, 16, 216, 152, 143, 131, 121, 121, 101, 39,
        98, 87, 76, 45, 42, 132, 34, 2,
    ];

    /// Pairs of the reference implementation's sample trace (raw → sanitized).
    const SAMPLE: &[(&str, &str)] = &[
        ("128.11.68.132", "135.242.180.132"),
        ("129.118.74.4", "134.136.186.123"),
        ("130.132.252.244", "133.68.164.234"),
        ("141.223.7.43", "141.167.8.160"),
        ("141.233.145.108", "141.129.237.235"),
        ("152.163.225.39", "151.140.114.167"),
        ("156.29.3.236", "147.225.12.42"),
        ("165.247.96.84", "162.9.99.234"),
        ("166.107.77.190", "160.132.178.185"),
        ("192.102.249.13", "252.138.62.131"),
        ("192.215.32.125", "252.43.47.189"),
        ("192.233.80.103", "252.25.108.8"),
        ("192.41.57.43", "252.222.221.184"),
        ("193.150.244.223", "253.169.52.216"),
        ("195.205.63.100", "255.186.223.5"),
        ("198.200.171.101", "249.199.68.213"),
        ("198.26.132.101", "249.36.123.202"),
        ("198.36.213.5", "249.7.21.132"),
        ("198.51.77.238", "249.18.186.254"),
        ("199.217.79.101", "248.38.184.213"),
        ("202.49.198.20", "245.206.7.234"),
        ("203.12.160.252", "244.248.163.4"),
        ("204.184.162.189", "243.192.77.90"),
        ("204.202.136.230", "243.178.4.198"),
        ("204.29.20.4", "243.33.20.123"),
        ("205.178.38.67", "242.108.198.51"),
        ("205.188.147.153", "242.96.16.101"),
        ("205.188.248.25", "242.96.88.27"),
        ("205.245.121.43", "242.21.121.163"),
        ("207.105.49.5", "241.118.205.138"),
        ("207.135.65.238", "241.202.129.222"),
        ("207.155.9.214", "241.220.250.22"),
        ("207.188.7.45", "241.255.249.220"),
        ("207.25.71.27", "241.33.119.156"),
        ("207.33.151.131", "241.1.233.131"),
        ("208.147.89.59", "227.237.98.191"),
        ("208.234.120.210", "227.154.67.17"),
        ("208.28.185.184", "227.39.94.90"),
        ("208.52.56.122", "227.8.63.165"),
        ("209.12.231.7", "226.243.167.8"),
        ("209.238.72.3", "226.6.119.243"),
        ("209.246.74.109", "226.22.124.76"),
        ("209.68.60.238", "226.184.220.233"),
        ("209.85.249.6", "226.170.70.6"),
        ("212.120.124.31", "228.135.163.231"),
        ("212.146.8.236", "228.19.4.234"),
        ("212.186.227.154", "228.59.98.98"),
        ("212.204.172.118", "228.71.195.169"),
        ("212.206.130.201", "228.69.242.193"),
        ("216.148.237.145", "235.84.194.111"),
        ("216.157.30.252", "235.89.31.26"),
        ("216.184.159.48", "235.96.225.78"),
        ("216.227.10.221", "235.28.253.36"),
        ("216.254.18.172", "235.7.16.162"),
        ("216.32.132.250", "235.192.139.38"),
        ("216.35.217.178", "235.195.157.81"),
        ("24.0.250.221", "100.15.198.226"),
        ("24.13.62.231", "100.2.192.247"),
        ("24.14.213.138", "100.1.42.141"),
        ("24.5.0.80", "100.9.15.210"),
        ("24.7.198.88", "100.10.6.25"),
        ("24.94.26.44", "100.88.228.35"),
        ("38.15.67.68", "64.3.66.187"),
        ("4.3.88.225", "124.60.155.63"),
        ("63.14.55.111", "95.9.215.7"),
        ("63.195.241.44", "95.179.238.44"),
        ("63.97.7.140", "95.97.9.123"),
        ("64.14.118.196", "0.255.183.58"),
        ("64.34.154.117", "0.221.154.117"),
        ("64.39.15.238", "0.219.7.41"),
    ];

    #[test]
    fn reference_sample_pairs() {
        let pan = CryptoPan::new(&SAMPLE_KEY);
        for (raw, want) in SAMPLE {
            let got = pan.ip(raw.parse().unwrap());
            assert_eq!(got.to_string(), *want, "{raw}");
        }
    }

    /// Shared prefix length in bits.
    fn common(a: u128, b: u128) -> u32 {
        (a ^ b).leading_zeros()
    }

    #[test]
    fn prefixes_are_preserved_v4_and_v6() {
        let pan = CryptoPan::new(&SAMPLE_KEY);
        let mut x = 0x1234_5678_9abc_def0_u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200 {
            let (a, b) = (next() as u32, next() as u32);
            // Share a random prefix.
            let k = next() % 33;
            let b = if k == 0 {
                b
            } else {
                (a & (u32::MAX << (32 - k))) | (b & !(u32::MAX.checked_shl(32 - k as u32).unwrap_or(0)))
            };
            let (ea, eb) = (pan.v4(a), pan.v4(b));
            assert_eq!(common(ea as u128, eb as u128), common(a as u128, b as u128), "{a:x} {b:x}");
            let (a6, b6) = ((next() as u128) << 64 | next() as u128, (next() as u128) << 64 | next() as u128);
            let b6 = (a6 & (u128::MAX << 70)) | (b6 & !(u128::MAX << 70));
            assert_eq!(common(pan.v6(a6), pan.v6(b6)), common(a6, b6));
        }
    }

    #[test]
    fn addresses_in_free_text_are_anonymized_and_nothing_else() {
        let a = Anonymizer::new(&AnonConfig { key: SAMPLE_KEY, scope: Scope::All });
        let (v4, v6) = ("135.242.180.132", a.ip("2001:db8::1".parse().unwrap()).to_string());
        let cases: Vec<(&str, Option<String>)> = vec![
            ("/cgi?ip=128.11.68.132&x=1", Some(format!("/cgi?ip={v4}&x=1"))),
            ("seen from 128.11.68.132.", Some(format!("seen from {v4}."))),
            ("peer [2001:db8::1]:443 (128.11.68.132)", Some(format!("peer [{v6}]:443 ({v4})"))),
            ("2001:db8::1", Some(v6.clone())),
            ("Agent/128.11.68.132", Some(format!("Agent/{v4}"))),
            ("128.11.68.132/24", Some(format!("{v4}/24"))),
            // Percent-encoded: a URL in a query, an escaped separator, escaped colons and dots.
            ("/r?u=http%3A%2F%2F128.11.68.132%2Fx", Some(format!("/r?u=http%3A%2F%2F{v4}%2Fx"))),
            ("ip%3D128.11.68.132%26x", Some(format!("ip%3D{v4}%26x"))),
            ("h=128%2E11%2E68%2E132%3A81", Some(format!("h={}%3A81", v4.replace('.', "%2E")))),
            ("%5B2001%3adb8%3A%3A1%5D", Some(format!("%5B{}%5D", v6.replace(':', "%3A")))),
            ("v%3D1.2.3.4.5 100%25", None),
            // Not addresses: longer runs of digits and dots, versions, times, names.
            ("Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0.6099.109 Safari/537.36", None),
            ("AppleCoreMedia/1.0.0 v1.2.3.4.5 12:30:45 std::vector", None),
            ("www.example.com", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(a.text(text, None), want, "{text:?}");
        }
        // A URL whose host is an address, and an address in its query: each once.
        assert_eq!(
            a.text("http://user@128.11.68.132:81/p?ip=128.11.68.132", None).as_deref(),
            Some(format!("http://user@{v4}:81/p?ip={v4}").as_str())
        );
        assert_eq!(a.text("/index.html", None), None);
        let only_ext = Anonymizer::new(&AnonConfig { key: SAMPLE_KEY, scope: Scope::External });
        let mut nets = crate::nets::Nets::default();
        nets.add_str("128.11.0.0/16").unwrap();
        assert_eq!(only_ext.text("at 128.11.68.132", Some(&nets)), None);
    }

    /// Addresses inside other text: names that hold one (an SNI, a Host, a certificate's
    /// names), a DNS label that holds dots, reverse names whole or cut to a prefix, IPv6
    /// in its usual spellings.
    #[test]
    fn addresses_inside_other_text_are_anonymized() {
        let a = Anonymizer::new(&AnonConfig { key: SAMPLE_KEY, scope: Scope::All });
        let v4 = "135.242.180.132";
        let six = a.ip("2001:db8::1".parse().unwrap()).to_string();
        let cases: Vec<(&str, String)> = vec![
            ("host-128.11.68.132.example", format!("host-{v4}.example")),
            ("128.11.68.132.nip.io", format!("{v4}.nip.io")),
            ("x128.11.68.132y", format!("x{v4}y")),
            ("ip128.11.68.132", format!("ip{v4}")),
            ("CN=128.11.68.132,O=Acme", format!("CN={v4},O=Acme")),
            ("SSH-2.0-OpenSSH_9.6 128.11.68.132", format!("SSH-2.0-OpenSSH_9.6 {v4}")),
            ("Apache/2.4 (128.11.68.132)", format!("Apache/2.4 ({v4})")),
            ("text/html; host=128.11.68.132", format!("text/html; host={v4}")),
            ("1.2.3.4a", format!("{}a", a.ip("1.2.3.4".parse().unwrap()))),
            // A DNS label holding dots, as the DNS decoder spells it.
            ("128\\.11\\.68\\.132.example", format!("{}.example", v4.replace('.', "\\."))),
            // IPv6: full, upper case, bracketed with a port, in a name.
            ("2001:0DB8:0000:0000:0000:0000:0000:0001", six.clone()),
            ("http://[2001:db8::1]:443/", format!("http://[{six}]:443/")),
            ("at 2001:db8:0:0:0:0:0:1.", format!("at {six}.")),
        ];
        for (text, want) in cases {
            assert_eq!(a.text(text, None).as_deref(), Some(want.as_str()), "{text:?}");
        }
        // Reverse names, whole or a prefix (DNS-SD's browsing domains name the network).
        assert_eq!(a.text("132.68.11.128.in-addr.arpa", None).as_deref(), Some("132.180.242.135.in-addr.arpa"));
        assert_eq!(a.text("132.68.11.128.IN-ADDR.ARPA.", None).as_deref(), Some("132.180.242.135.IN-ADDR.ARPA."));
        let net = a.ip("128.11.68.0".parse().unwrap()).to_string();
        let o: Vec<&str> = net.split('.').collect();
        assert_eq!(
            a.text("b._dns-sd._udp.0.68.11.128.in-addr.arpa", None),
            Some(format!("b._dns-sd._udp.{}.{}.{}.{}.in-addr.arpa", o[3], o[2], o[1], o[0]))
        );
        assert_eq!(a.text("68.11.128.in-addr.arpa", None).as_deref(), Some("180.242.135.in-addr.arpa"));
        let nib = |v: std::net::Ipv6Addr, n: usize| -> String {
            format!("{:032x}", u128::from(v))
                .chars()
                .take(n)
                .collect::<Vec<_>>()
                .iter()
                .rev()
                .map(|c| format!("{c}."))
                .collect()
        };
        let v6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
        let img: std::net::Ipv6Addr = six.parse().unwrap();
        assert_eq!(a.text(&format!("{}ip6.arpa", nib(v6, 32)), None), Some(format!("{}ip6.arpa", nib(img, 32))));
        assert_eq!(a.text(&format!("{}ip6.arpa", nib(v6, 16)), None), Some(format!("{}ip6.arpa", nib(img, 16))));
        // Not addresses.
        for text in [
            "v1.2.3.4.5",
            "1.2.3.4.5",
            "Chrome/120.0.6099.109",
            "12:30:45",
            "std::vector",
            "in-addr.arpa",
            "www.example.com",
            "1.2.3",
        ] {
            assert_eq!(a.text(text, None), None, "{text:?}");
        }
        // Under a scope, an address inside text as one in a column.
        let only_ext = Anonymizer::new(&AnonConfig { key: SAMPLE_KEY, scope: Scope::External });
        let mut nets = crate::nets::Nets::default();
        nets.add_str("128.11.0.0/16").unwrap();
        assert_eq!(only_ext.text("h-128.11.68.132.example", Some(&nets)), None);
        assert_eq!(only_ext.text("132.68.11.128.in-addr.arpa", Some(&nets)), None);
        assert!(only_ext.text("h-129.11.68.132.example", Some(&nets)).is_some());
    }

    #[test]
    fn anonymizer_caches_and_spells_reverse_names() {
        let a = Anonymizer::new(&AnonConfig { key: SAMPLE_KEY, scope: Scope::All });
        let raw = u32::from(std::net::Ipv4Addr::new(128, 11, 68, 132)) as u128;
        assert_eq!(a.raw(4, raw), a.raw(4, raw));
        assert_eq!(std::net::Ipv4Addr::from(a.raw(4, raw) as u32).to_string(), "135.242.180.132");
        assert_eq!(a.text("132.68.11.128.in-addr.arpa", None).as_deref(), Some("132.180.242.135.in-addr.arpa"));
        assert_eq!(a.text("www.example.com", None), None);
        let v6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
        let nib: String = format!("{:032x}", u128::from(v6)).chars().rev().map(|c| format!("{c}.")).collect();
        let got = a.text(&format!("{nib}ip6.arpa"), None).unwrap();
        let want: String =
            format!("{:032x}", u128::from(a.ip(v6.into()).to_string().parse::<std::net::Ipv6Addr>().unwrap()))
                .chars()
                .rev()
                .map(|c| format!("{c}."))
                .collect();
        assert_eq!(got, format!("{want}ip6.arpa"));
        assert_eq!(a.text("128.11.68.132:8080", None).as_deref(), Some("135.242.180.132:8080"));
        assert_eq!(a.text("www.example.com:80", None), None);
        assert_eq!(
            a.text("http://user@128.11.68.132:81/p?q", None).as_deref(),
            Some("http://user@135.242.180.132:81/p?q")
        );
        assert_eq!(a.text("/index.html", None), None);
        let six = a.ip("2001:db8::1".parse().unwrap());
        assert_eq!(a.text("[2001:db8::1]:443", None), Some(format!("[{six}]:443")));
        let only_ext = Anonymizer::new(&AnonConfig { key: SAMPLE_KEY, scope: Scope::External });
        let mut nets = crate::nets::Nets::default();
        nets.add_str("128.11.0.0/16").unwrap();
        assert_eq!(only_ext.answer("128.11.68.132".parse().unwrap(), Some(&nets)).to_string(), "128.11.68.132");
        assert_ne!(only_ext.answer("129.11.68.132".parse().unwrap(), Some(&nets)).to_string(), "129.11.68.132");
    }
}
