//! Client fingerprints of a ClientHello: JA3 (Salesforce, 2017) and JA4 (FoxIO, 2023).
//!
//! JA3: `version,ciphers,extensions,groups,point_formats`, decimal values joined with `-`,
//! GREASE removed, in the order the client sent them; its MD5 is what tools print.
//! JA4 (the JA4+ technical spec, `JA4.md`): `a_b_c` where `a` is
//! protocol, version, SNI presence, cipher and extension counts and the ALPN's first and
//! last characters; `b` is the SHA-256 of the sorted cipher list and `c` of the sorted
//! extensions (without SNI and ALPN) followed by the signature algorithms in their order,
//! each truncated to 12 hex digits.

use std::fmt::Write;

use md5::{Digest, Md5};
use sha2::Sha256;

use super::parser::{is_grease, ClientHello, EXT_ALPN, EXT_SERVER_NAME, EXT_SUPPORTED_VERSIONS};

/// The transport JA4 puts first: `t` TLS over TCP, `q` QUIC, `d` DTLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ja4Transport {
    Tcp,
    Quic,
    Dtls,
}

/// The JA3 string.
pub fn ja3_string(ch: &ClientHello<'_>) -> String {
    let mut s = String::with_capacity(256);
    let _ = write!(s, "{},", ch.legacy_version);
    join_decimal(&mut s, ch.ciphers().filter(|&c| !is_grease(c)));
    s.push(',');
    join_decimal(&mut s, ch.extensions().map(|(t, _)| t).filter(|&t| !is_grease(t)));
    s.push(',');
    join_decimal(&mut s, ch.supported_groups().filter(|&g| !is_grease(g)));
    s.push(',');
    join_decimal(&mut s, ch.ec_point_formats().iter().map(|&f| u16::from(f)));
    s
}

/// The lowercase hex MD5 of a JA3 string.
pub fn ja3_md5(ja3: &str) -> String {
    hex(&Md5::digest(ja3.as_bytes()))
}

fn join_decimal(s: &mut String, it: impl Iterator<Item = u16>) {
    for (i, v) in it.enumerate() {
        if i > 0 {
            s.push('-');
        }
        let _ = write!(s, "{v}");
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// JA4's version code: the highest non-GREASE entry of supported_versions, else the
/// legacy version.
fn ja4_version(ch: &ClientHello<'_>) -> &'static str {
    // Rank versions so DTLS (whose numbers go down as versions go up) compares right.
    fn rank(v: u16) -> (u8, &'static str) {
        match v {
            0x0304 => (7, "13"),
            0x0303 => (6, "12"),
            0x0302 => (5, "11"),
            0x0301 => (4, "10"),
            0x0300 => (3, "s3"),
            0x0002 => (2, "s2"),
            0xfefc => (7, "d3"),
            0xfefd => (6, "d2"),
            0xfeff => (5, "d1"),
            _ => (0, "00"),
        }
    }
    let best = ch.supported_versions().filter(|&v| !is_grease(v)).map(rank).max_by_key(|r| r.0);
    let has_ext = ch.extensions().any(|(t, _)| t == EXT_SUPPORTED_VERSIONS);
    match best {
        Some(r) if has_ext => r.1,
        _ => rank(ch.legacy_version).1,
    }
}

/// The JA4 fingerprint, e.g. `t13d1516h2_8daaf6152771_e5627efa2ab1`.
pub fn ja4(ch: &ClientHello<'_>, transport: Ja4Transport) -> String {
    let mut ciphers: Vec<u16> = ch.ciphers().filter(|&c| !is_grease(c)).collect();
    let mut exts: Vec<u16> = ch.extensions().map(|(t, _)| t).filter(|&t| !is_grease(t)).collect();
    let sigs: Vec<u16> = ch.signature_algorithms().filter(|&s| !is_grease(s)).collect();
    let mut s = String::with_capacity(40);
    s.push(match transport {
        Ja4Transport::Tcp => 't',
        Ja4Transport::Quic => 'q',
        Ja4Transport::Dtls => 'd',
    });
    s.push_str(ja4_version(ch));
    s.push(if exts.contains(&EXT_SERVER_NAME) { 'd' } else { 'i' });
    let _ = write!(s, "{:02}{:02}", ciphers.len().min(99), exts.len().min(99));
    match ch.alpn().next() {
        Some(a) if !a.is_empty() => {
            let (f, l) = (a[0], a[a.len() - 1]);
            if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() {
                s.push(char::from(f));
                s.push(char::from(l));
            } else {
                // JA4.md: a non-alphanumeric first or last byte prints the first and last
                // characters of the value's hex form.
                let h = hex(a);
                s.push_str(&h[..1]);
                s.push_str(&h[h.len() - 1..]);
            }
        }
        _ => s.push_str("00"),
    }
    s.push('_');
    ciphers.sort_unstable();
    s.push_str(&truncated_sha256(&hex4_list(&ciphers), ciphers.is_empty()));
    s.push('_');
    exts.retain(|&t| t != EXT_SERVER_NAME && t != EXT_ALPN);
    exts.sort_unstable();
    let mut c = hex4_list(&exts);
    if !sigs.is_empty() {
        c.push('_');
        c.push_str(&hex4_list(&sigs));
    }
    s.push_str(&truncated_sha256(&c, exts.is_empty()));
    s
}

fn hex4_list(v: &[u16]) -> String {
    let mut s = String::with_capacity(v.len() * 5);
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{x:04x}");
    }
    s
}

fn truncated_sha256(s: &str, empty: bool) -> String {
    if empty {
        return "000000000000".to_string();
    }
    let mut h = hex(&Sha256::digest(s.as_bytes()));
    h.truncate(12);
    h
}

#[cfg(test)]
mod tests {
    use super::super::parser::tests::{alpn_ext, client_hello, sni_ext};
    use super::*;

    /// The ClientHello behind the JA4 spec's own example
    /// `t13d1516h2_8daaf6152771_e5627efa2ab1` (JA4.md, with its JA4_r list of ciphers,
    /// extensions and signature algorithms), with GREASE added to check it is dropped.
    fn ja4_spec_hello() -> Vec<u8> {
        let ciphers = [
            0x0a0a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c,
            0x009d, 0x002f, 0x0035,
        ];
        let sigs: [u16; 8] = [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601];
        let mut sig = ((sigs.len() * 2) as u16).to_be_bytes().to_vec();
        for s in sigs {
            sig.extend_from_slice(&s.to_be_bytes());
        }
        let exts = vec![
            (0x2a2a, vec![]),
            sni_ext("example.com"),
            (0x0017, vec![]),
            (0xff01, vec![0]),
            (0x000a, vec![0, 4, 0x1a, 0x1a, 0, 0x1d]),
            (0x000b, vec![1, 0]),
            (0x0023, vec![]),
            alpn_ext(&["h2", "http/1.1"]),
            (0x0005, vec![1, 0, 0, 0, 0]),
            (0x000d, sig),
            (0x0012, vec![]),
            (0x0033, vec![0, 0]),
            (0x002d, vec![1, 1]),
            (0x002b, vec![4, 0x3a, 0x3a, 3, 4]),
            (0x001b, vec![2, 0, 2]),
            (0x4469, vec![0, 3, 2, b'h', b'2']),
            (0x0015, vec![0; 4]),
        ];
        client_hello(0x0303, &ciphers, &exts, false)
    }

    #[test]
    fn ja4_of_the_spec_example() {
        let msg = ja4_spec_hello();
        let ch = ClientHello::parse(&msg[4..], false).unwrap();
        assert_eq!(ja4(&ch, Ja4Transport::Tcp), "t13d1516h2_8daaf6152771_e5627efa2ab1");
        assert_eq!(&ja4(&ch, Ja4Transport::Quic)[..1], "q");
    }

    #[test]
    fn ja3_string_and_md5() {
        let msg = ja4_spec_hello();
        let ch = ClientHello::parse(&msg[4..], false).unwrap();
        let s = ja3_string(&ch);
        assert_eq!(
            s,
            "771,4865-4866-4867-49195-49199-49196-49200-52393-52392-49171-49172-156-157-47-53,\
             0-23-65281-10-11-35-16-5-13-18-51-45-43-27-17513-21,29,0"
        );
        // Checked with Python's hashlib.md5.
        assert_eq!(ja3_md5(&s), "ddccd825dd16894c51af372253871ddf");
        assert_eq!(ja3_md5(""), "d41d8cd98f00b204e9800998ecf8427e");
    }

    #[test]
    fn ja4_without_extensions_or_alpn() {
        let msg = client_hello(0x0301, &[0x002f], &[], false);
        let ch = ClientHello::parse(&msg[4..], false).unwrap();
        let j = ja4(&ch, Ja4Transport::Tcp);
        assert!(j.starts_with("t10i010000_"), "{j}");
        assert!(j.ends_with("_000000000000"), "{j}");
    }

    #[test]
    fn ja4_alpn_not_alphanumeric_prints_hex() {
        let msg = client_hello(0x0303, &[0x1301], &[(0x10, vec![0, 3, 2, 0xab, 0xcd])], false);
        let ch = ClientHello::parse(&msg[4..], false).unwrap();
        assert_eq!(&ja4(&ch, Ja4Transport::Tcp)[8..10], "ad");
    }
}
