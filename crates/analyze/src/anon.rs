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

    /// A host written as an address (an HTTP Host, a URL's authority: `192.0.2.1`,
    /// `192.0.2.1:8080`, `[2001:db8::1]:443`, `2001:db8::1`), with the address anonymized
    /// under the scope; none for a name.
    pub fn host(&self, host: &str, nets: Option<&crate::nets::Nets>) -> Option<String> {
        if let Ok(a) = host.parse::<IpAddr>() {
            return Some(self.answer(a, nets).to_string());
        }
        if let Some(rest) = host.strip_prefix('[') {
            let (inner, after) = rest.split_once(']')?;
            let a: std::net::Ipv6Addr = inner.parse().ok()?;
            return Some(format!("[{}]{after}", self.answer(a.into(), nets)));
        }
        let (h, port) = host.rsplit_once(':')?;
        let a: std::net::Ipv4Addr = h.parse().ok()?;
        Some(format!("{}:{port}", self.answer(a.into(), nets)))
    }

    /// Free text (a URL, its authority included, a User-Agent, a certificate's common
    /// name) with every address written in it anonymized under the scope; none when it
    /// holds none. An address is a dotted quad or an IPv6 literal standing alone: not inside a
    /// longer run of letters, digits, dots or colons (`v1.2.3.4.5` and `1.2.3.4a` are
    /// left; `ip=10.0.0.1&x`, `[2001:db8::1]`, `(192.0.2.7)` are taken). A version
    /// number spelled like an address (`Agent/1.2.3.4`) is taken too: on the side of
    /// hiding. Percent-encoding is read as a URL's reader would: an escape other than
    /// `%3A` and `%2E` separates like the character it encodes (a URL inside a query,
    /// `?u=http%3A%2F%2F192.0.2.1%2F`, or `ip%3D192.0.2.1`), and `%3A`/`%2E` are a colon
    /// and a dot inside an address (`2001%3Adb8%3A%3A1`), written back encoded.
    pub fn text(&self, s: &str, nets: Option<&crate::nets::Nets>) -> Option<String> {
        let b = s.as_bytes();
        let (mut out, mut last, mut i) = (String::new(), 0, 0);
        // A run of word units from `i`: the bytes they stand for, and where each ends in `s`.
        let (mut tok, mut ends) = (Vec::new(), Vec::new());
        while i < b.len() {
            // Between runs: a run is read whole below, so a word unit here starts one.
            let (n, c) = text_unit(b, i);
            if c.is_none() {
                i += n;
                continue;
            }
            let start = i;
            tok.clear();
            ends.clear();
            while i < b.len() {
                let (n, c) = text_unit(b, i);
                let Some(c) = c else { break };
                tok.push(c);
                i += n;
                ends.push(i);
            }
            // A sentence's full stop or colon after an address is not part of it; a
            // port after a dotted quad (`192.0.2.1:8080`, a URL's authority) is kept.
            let kept = tok.len() - tok.iter().rev().take_while(|&&c| c == b'.' || c == b':').count();
            let tok = std::str::from_utf8(&tok[..kept]).expect("word units are ASCII");
            let addr = match tok.rsplit_once(':') {
                Some((v4, port)) if !port.is_empty() && port.bytes().all(|c| c.is_ascii_digit()) => {
                    v4.parse::<std::net::Ipv4Addr>().ok().map(|a| (IpAddr::V4(a), v4.len()))
                }
                _ => None,
            };
            let Some((a, len)) = addr.or_else(|| tok.parse::<IpAddr>().ok().map(|a| (a, tok.len()))) else { continue };
            let raw = &s[start..ends[len - 1]];
            let image = self.answer(a, nets).to_string();
            out.push_str(&s[last..start]);
            if raw.len() == len {
                out.push_str(&image);
            } else {
                let (colon, dot) =
                    (raw.contains("%3A") || raw.contains("%3a"), raw.contains("%2E") || raw.contains("%2e"));
                for c in image.chars() {
                    match c {
                        ':' if colon => out.push_str("%3A"),
                        '.' if dot => out.push_str("%2E"),
                        c => out.push(c),
                    }
                }
            }
            last = ends[len - 1];
        }
        if last == 0 {
            return None;
        }
        out.push_str(&s[last..]);
        Some(out)
    }

    /// A DNS name that spells an address (`4.3.2.1.in-addr.arpa`, the nibbles of
    /// `ip6.arpa`: reverse lookups), with the address anonymized under the scope; none
    /// for any other name.
    pub fn reverse_name(&self, name: &str, nets: Option<&crate::nets::Nets>) -> Option<String> {
        let lower = name.trim_end_matches('.').to_ascii_lowercase();
        if let Some(rest) = lower.strip_suffix(".in-addr.arpa") {
            let parts: Vec<&str> = rest.split('.').collect();
            if parts.len() != 4 {
                return None;
            }
            let mut o = [0u8; 4];
            for (i, p) in parts.iter().rev().enumerate() {
                o[i] = p.parse().ok()?;
            }
            let IpAddr::V4(a) = self.answer(IpAddr::V4(o.into()), nets) else { return None };
            let o = a.octets();
            return Some(format!("{}.{}.{}.{}.in-addr.arpa", o[3], o[2], o[1], o[0]));
        }
        if let Some(rest) = lower.strip_suffix(".ip6.arpa") {
            let nibbles: Vec<&str> = rest.split('.').collect();
            if nibbles.len() != 32 {
                return None;
            }
            let mut v = 0u128;
            for n in nibbles.iter().rev() {
                v = (v << 4) | u8::from_str_radix(n, 16).ok().filter(|_| n.len() == 1)? as u128;
            }
            let IpAddr::V6(a) = self.answer(IpAddr::V6(v.into()), nets) else { return None };
            let v = u128::from(a);
            let mut s = String::with_capacity(72);
            for i in 0..32 {
                s.push(char::from(b"0123456789abcdef"[(v >> (4 * i) & 0xf) as usize]));
                s.push('.');
            }
            s.push_str("ip6.arpa");
            return Some(s);
        }
        None
    }
}

/// One unit of free text at `b[i]` for [`Anonymizer::text`]: its length in bytes and, for
/// a unit that can be part of an address (a letter, a digit, a dot, a colon, or `%3A` or
/// `%2E`), the byte it stands for. Any other percent escape is one separating unit.
fn text_unit(b: &[u8], i: usize) -> (usize, Option<u8>) {
    let hex = |c: &u8| (*c as char).to_digit(16);
    if b[i] == b'%' {
        if let (Some(h), Some(l)) = (b.get(i + 1).and_then(hex), b.get(i + 2).and_then(hex)) {
            let c = (h << 4 | l) as u8;
            return (3, (c == b':' || c == b'.').then_some(c));
        }
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
            ("AppleCoreMedia/1.0.0.14C92 v1.2.3.4.5 1.2.3.4a 12:30:45 std::vector", None),
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
        assert_eq!(only_ext.text("at 128.11.68.132", Some(&nets)).as_deref(), Some("at 128.11.68.132"));
    }

    #[test]
    fn anonymizer_caches_and_spells_reverse_names() {
        let a = Anonymizer::new(&AnonConfig { key: SAMPLE_KEY, scope: Scope::All });
        let raw = u32::from(std::net::Ipv4Addr::new(128, 11, 68, 132)) as u128;
        assert_eq!(a.raw(4, raw), a.raw(4, raw));
        assert_eq!(std::net::Ipv4Addr::from(a.raw(4, raw) as u32).to_string(), "135.242.180.132");
        assert_eq!(a.reverse_name("132.68.11.128.in-addr.arpa", None).as_deref(), Some("132.180.242.135.in-addr.arpa"));
        assert_eq!(a.reverse_name("www.example.com", None), None);
        let v6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
        let nib: String = format!("{:032x}", u128::from(v6)).chars().rev().map(|c| format!("{c}.")).collect();
        let got = a.reverse_name(&format!("{nib}ip6.arpa"), None).unwrap();
        let want: String =
            format!("{:032x}", u128::from(a.ip(v6.into()).to_string().parse::<std::net::Ipv6Addr>().unwrap()))
                .chars()
                .rev()
                .map(|c| format!("{c}."))
                .collect();
        assert_eq!(got, format!("{want}ip6.arpa"));
        assert_eq!(a.host("128.11.68.132:8080", None).as_deref(), Some("135.242.180.132:8080"));
        assert_eq!(a.host("www.example.com", None), None);
        assert_eq!(a.host("www.example.com:80", None), None);
        assert_eq!(
            a.text("http://user@128.11.68.132:81/p?q", None).as_deref(),
            Some("http://user@135.242.180.132:81/p?q")
        );
        assert_eq!(a.text("/index.html", None), None);
        let six = a.ip("2001:db8::1".parse().unwrap());
        assert_eq!(a.host("[2001:db8::1]:443", None), Some(format!("[{six}]:443")));
        let only_ext = Anonymizer::new(&AnonConfig { key: SAMPLE_KEY, scope: Scope::External });
        let mut nets = crate::nets::Nets::default();
        nets.add_str("128.11.0.0/16").unwrap();
        assert_eq!(only_ext.answer("128.11.68.132".parse().unwrap(), Some(&nets)).to_string(), "128.11.68.132");
        assert_ne!(only_ext.answer("129.11.68.132".parse().unwrap(), Some(&nets)).to_string(), "129.11.68.132");
    }
}
