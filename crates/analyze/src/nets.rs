//! Internal networks (`-N FILE`, `--internal CIDR,...`): which addresses are the
//! probe's own, and the traffic class that follows for a flow or a packet.
//!
//! As in Tstat, without any network given every address is internal (Tstat: "-N
//! option not specified. All subnets are assumed to be internal"), so `c_isint` and
//! `s_isint` are 1 and every flow is `local`.
//!
//! A set is two sorted lists of disjoint address ranges (IPv4, IPv6): a lookup is a
//! binary search, done once per flow when it starts (the result is kept in the flow),
//! never per packet.
//!
//! The file format is Tstat's net file, and a little more: one network per line, `#`
//! starts a comment, blank lines are skipped. A network is `ADDR/LEN` (`10.0.0.0/8`,
//! `2001:db8::/32`), `ADDR/NETMASK` (`10.0.0.0/255.0.0.0`), a bare address (one host),
//! or Tstat's older two-line form, an IPv4 address on one line and its netmask on the
//! next. Host bits set in the address are ignored (`10.1.2.3/8` is `10.0.0.0/8`).

use std::net::{IpAddr, Ipv4Addr};

/// Where a flow (client → server) or a packet (source → destination) goes, from the
/// probe's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// External to internal.
    In,
    /// Internal to external.
    Out,
    /// Internal to internal.
    Local,
    /// External to external (traffic that only crosses the probe's link).
    Ext,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::In, Class::Out, Class::Local, Class::Ext];

    /// The class of traffic from a sender to a receiver, from whether each is internal.
    #[inline]
    pub fn of(src_internal: bool, dst_internal: bool) -> Class {
        match (src_internal, dst_internal) {
            (false, true) => Class::In,
            (true, false) => Class::Out,
            (true, true) => Class::Local,
            (false, false) => Class::Ext,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::In => "in",
            Class::Out => "out",
            Class::Local => "local",
            Class::Ext => "ext",
        }
    }

    /// Index in [`Class::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A set of internal networks. `Nets::default()` is the empty set (nothing internal);
/// a run without networks uses no set at all (everything internal, see the module doc).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Nets {
    /// Disjoint, sorted, merged inclusive ranges.
    v4: Vec<(u32, u32)>,
    v6: Vec<(u128, u128)>,
}

impl std::fmt::Debug for Nets {
    /// The ranges as addresses (summary.json's `options`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v4 = self.v4.iter().map(|&(a, b)| format!("{}-{}", Ipv4Addr::from(a), Ipv4Addr::from(b)));
        let v6 =
            self.v6.iter().map(|&(a, b)| format!("{}-{}", std::net::Ipv6Addr::from(a), std::net::Ipv6Addr::from(b)));
        f.debug_list().entries(v4.chain(v6)).finish()
    }
}

impl Nets {
    /// Adds the network of `addr` with a prefix of `len` bits.
    pub fn add(&mut self, addr: IpAddr, len: u8) -> Result<(), String> {
        match addr {
            IpAddr::V4(a) => {
                if len > 32 {
                    return Err(format!("{addr}/{len}: an IPv4 prefix has at most 32 bits"));
                }
                let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                let lo = u32::from(a) & mask;
                self.v4.push((lo, lo | !mask));
            }
            IpAddr::V6(a) => {
                if len > 128 {
                    return Err(format!("{addr}/{len}: an IPv6 prefix has at most 128 bits"));
                }
                let mask = if len == 0 { 0 } else { u128::MAX << (128 - len) };
                let lo = u128::from(a) & mask;
                self.v6.push((lo, lo | !mask));
            }
        }
        self.v4 = merge(std::mem::take(&mut self.v4));
        self.v6 = merge(std::mem::take(&mut self.v6));
        Ok(())
    }

    /// Adds one network written as `ADDR`, `ADDR/LEN` or `ADDR/NETMASK`.
    pub fn add_str(&mut self, s: &str) -> Result<(), String> {
        let (a, l) = parse_net(s)?;
        self.add(a, l)
    }

    /// Parses a net file (see the module doc). Errors name the line.
    pub fn parse(text: &str) -> Result<Nets, String> {
        let mut nets = Nets::default();
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
            .filter(|(_, l)| !l.is_empty())
            .collect();
        let mut i = 0;
        while i < lines.len() {
            let (n, line) = lines[i];
            // Tstat's older format: an IPv4 address, then its netmask on the next line.
            if !line.contains('/') {
                if let (Ok(a), Some(&(_, next))) = (line.parse::<Ipv4Addr>(), lines.get(i + 1)) {
                    if let Ok(m) = next.parse::<Ipv4Addr>() {
                        if let Some(len) = netmask_len(m).filter(|_| is_netmask_line(next)) {
                            nets.add(IpAddr::V4(a), len).map_err(|e| format!("line {n}: {e}"))?;
                            i += 2;
                            continue;
                        }
                    }
                }
            }
            nets.add_str(line).map_err(|e| format!("line {n}: {e}"))?;
            i += 1;
        }
        Ok(nets)
    }

    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    /// Whether `addr` is in one of the networks.
    pub fn contains(&self, addr: IpAddr) -> bool {
        match addr {
            IpAddr::V4(a) => find(&self.v4, u32::from(a)),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                // An IPv4-mapped address (::ffff:a.b.c.d) is the IPv4 host.
                Some(v4) => find(&self.v4, u32::from(v4)) || find(&self.v6, u128::from(a)),
                None => find(&self.v6, u128::from(a)),
            },
        }
    }

    /// [`Nets::contains`] for an address as flows keep it (`ip_version`, the raw bits).
    #[inline]
    pub fn contains_raw(&self, ip_version: u8, raw: u128) -> bool {
        if ip_version == 6 {
            self.contains(IpAddr::V6(raw.into()))
        } else {
            find(&self.v4, raw as u32)
        }
    }

    /// The class of traffic from `src` to `dst`.
    pub fn class(&self, src: IpAddr, dst: IpAddr) -> Class {
        Class::of(self.contains(src), self.contains(dst))
    }
}

/// Is `nets` (none: every address internal) holding `raw`?
#[inline]
pub fn is_internal(nets: Option<&Nets>, ip_version: u8, raw: u128) -> bool {
    nets.is_none_or(|n| n.contains_raw(ip_version, raw))
}

fn find<T: Ord + Copy>(ranges: &[(T, T)], x: T) -> bool {
    // The last range starting at or before x.
    let i = ranges.partition_point(|r| r.0 <= x);
    i > 0 && x <= ranges[i - 1].1
}

fn merge<T: Ord + Copy + Bump>(mut v: Vec<(T, T)>) -> Vec<(T, T)> {
    v.sort_unstable();
    let mut out: Vec<(T, T)> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(last) if r.0 <= last.1.bump() => last.1 = last.1.max(r.1),
            _ => out.push(r),
        }
    }
    out
}

/// `x + 1`, saturating: adjacent ranges merge.
trait Bump {
    fn bump(self) -> Self;
}
impl Bump for u32 {
    fn bump(self) -> Self {
        self.saturating_add(1)
    }
}
impl Bump for u128 {
    fn bump(self) -> Self {
        self.saturating_add(1)
    }
}

/// The prefix length of a contiguous netmask (`255.255.0.0` → 16).
fn netmask_len(m: Ipv4Addr) -> Option<u8> {
    let m = u32::from(m);
    let len = m.leading_ones();
    (m.checked_shl(len).unwrap_or(0) == 0).then_some(len as u8)
}

/// A line that is only a netmask (Tstat's two-line form): starts with 255 or is 0.0.0.0.
fn is_netmask_line(s: &str) -> bool {
    s.starts_with("255.") || s == "0.0.0.0"
}

/// At most 64 characters of a bad network, quoted: an error names it, but a line of
/// megabytes is not echoed whole.
fn shown(s: &str) -> String {
    match s.char_indices().nth(64) {
        Some((i, _)) => format!("{:?}...", &s[..i]),
        None => format!("{s:?}"),
    }
}

/// `ADDR`, `ADDR/LEN` or `ADDR/NETMASK` (IPv4).
fn parse_net(s: &str) -> Result<(IpAddr, u8), String> {
    let s = s.trim();
    let q = shown(s);
    let (a, l) = match s.split_once('/') {
        Some((a, l)) => (a.trim(), Some(l.trim())),
        None => (s, None),
    };
    let addr: IpAddr = a.parse().map_err(|_| format!("{q}: not an IPv4 or IPv6 address"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = match l {
        None => max,
        Some(l) if l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty() => {
            l.parse::<u8>().ok().filter(|&n| n <= max).ok_or_else(|| format!("{q}: prefix length above {max}"))?
        }
        Some(l) => match (addr, l.parse::<Ipv4Addr>()) {
            (IpAddr::V4(_), Ok(m)) => netmask_len(m).ok_or_else(|| format!("{q}: {l} is not a contiguous netmask"))?,
            _ => return Err(format!("{q}: expected a prefix length or an IPv4 netmask after '/'")),
        },
    };
    Ok((addr, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_tstats_forms_and_looks_up() {
        let text = "# internal networks\n\n130.192.0.0/16\n10.0.0.0/255.0.0.0  # a comment\n192.168.1.7\n172.16.0.0\n255.240.0.0\n2001:db8::/32\n";
        let n = Nets::parse(text).unwrap();
        for (a, yes) in [
            ("130.192.5.1", true),
            ("130.193.0.1", false),
            ("10.255.255.255", true),
            ("11.0.0.0", false),
            ("192.168.1.7", true),
            ("192.168.1.8", false),
            ("172.31.255.255", true),
            ("172.32.0.0", false),
            ("2001:db8:ffff::1", true),
            ("2001:db9::1", false),
            ("::ffff:10.1.2.3", true),
        ] {
            assert_eq!(n.contains(ip(a)), yes, "{a}");
        }
        assert_eq!(n.class(ip("10.0.0.1"), ip("8.8.8.8")), Class::Out);
        assert_eq!(n.class(ip("8.8.8.8"), ip("10.0.0.1")), Class::In);
        assert_eq!(n.class(ip("10.0.0.1"), ip("130.192.0.1")), Class::Local);
        assert_eq!(n.class(ip("8.8.8.8"), ip("1.1.1.1")), Class::Ext);
        assert!(n.contains_raw(4, u32::from(Ipv4Addr::new(10, 9, 9, 9)) as u128));
        assert!(!n.contains_raw(4, u32::from(Ipv4Addr::new(9, 9, 9, 9)) as u128));
    }

    #[test]
    fn host_bits_are_ignored_and_ranges_merge() {
        let mut n = Nets::default();
        n.add_str("10.1.2.3/8").unwrap();
        n.add_str("11.0.0.0/8").unwrap();
        n.add_str("10.128.0.0/9").unwrap();
        assert_eq!(n.v4, vec![(0x0a00_0000, 0x0bff_ffff)]);
        n.add_str("0.0.0.0/0").unwrap();
        assert!(n.contains(ip("255.255.255.255")) && !n.contains(ip("::1")));
    }

    #[test]
    fn no_networks_means_everything_internal() {
        assert!(is_internal(None, 4, 0x0808_0808));
        assert!(is_internal(None, 6, 1));
        assert!(!is_internal(Some(&Nets::default()), 4, 1));
    }

    #[test]
    fn bad_lines_are_errors_naming_the_line() {
        for (text, want) in [
            ("10.0.0.0/8\nfoo\n", "line 2"),
            ("10.0.0.0/33\n", "prefix length"),
            ("10.0.0.0/255.0.255.0\n", "contiguous"),
            ("2001:db8::/129\n", "prefix length"),
            ("2001:db8::/ffff::\n", "prefix length or an IPv4 netmask"),
            (&format!("10.0.0.0/8\n{}\n", "é".repeat(10_000)), "line 2"),
        ] {
            let e = Nets::parse(text).unwrap_err();
            assert!(e.contains(want) && e.len() < 200, "{text:?}: {e}");
        }
    }
}
