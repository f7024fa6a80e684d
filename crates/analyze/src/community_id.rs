//! Community ID flow hashing, version 1 (Corelight's specification,
//! github.com/corelight/community-id-spec): a flow id that Zeek, Suricata, Arkime,
//! Wireshark and others compute the same way, so that records of one flow can be joined
//! across tools.
//!
//! `1:` + base64 (with padding) of SHA-1 over: the seed (2 bytes, big endian), the
//! source and destination addresses, the IP protocol, a zero byte, and the source and
//! destination ports (2 bytes each), with the endpoints ordered so that the smaller
//! (address, then port) is the source. Computed once per record, when it is written.

use base64::Engine as _;
use sha1::{Digest, Sha1};
use std::net::IpAddr;
use tapstat_record::InlineStr;

/// The Community ID of a TCP (6) or UDP (17) flow between `a` and `b`, with `seed`
/// (0 is the default every tool uses).
pub fn community_id(seed: u16, proto: u8, a: (IpAddr, u16), b: (IpAddr, u16)) -> InlineStr {
    let (src, dst) = if a <= b { (a, b) } else { (b, a) };
    let mut h = Sha1::new();
    h.update(seed.to_be_bytes());
    let mut addr = |ip: IpAddr| match ip {
        IpAddr::V4(v) => h.update(v.octets()),
        IpAddr::V6(v) => h.update(v.octets()),
    };
    addr(src.0);
    addr(dst.0);
    h.update([proto, 0]);
    h.update(src.1.to_be_bytes());
    h.update(dst.1.to_be_bytes());
    let digest = h.finalize();
    let mut out = [0u8; 30];
    out[..2].copy_from_slice(b"1:");
    let n =
        base64::engine::general_purpose::STANDARD.encode_slice(digest, &mut out[2..]).expect("28 bytes of base64 fit");
    InlineStr::new(std::str::from_utf8(&out[..2 + n]).expect("base64 is ASCII")).expect("30 bytes fit")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's TCP example (128.232.110.120:34855 → 66.35.250.204:80) and an
    /// IPv6 UDP flow, as the `communityid` Python package computes them
    /// (crates/cli/tests/community_id.rs checks every flow of some captures against it):
    /// the same id whichever way the tuple is given, another with another seed.
    #[test]
    fn spec_vectors() {
        let a = ("128.232.110.120".parse().unwrap(), 34855);
        let b = ("66.35.250.204".parse().unwrap(), 80);
        assert_eq!(community_id(0, 6, a, b).as_str(), "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
        assert_eq!(community_id(0, 6, b, a).as_str(), "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
        let a = ("fe80::1".parse().unwrap(), 5353);
        let b = ("ff02::1:3".parse().unwrap(), 5353);
        assert_eq!(community_id(0, 17, a, b).as_str(), "1:dl99sjYXtGCLo96/b/PbZ/EoWjg=");
        assert_ne!(community_id(1, 17, a, b).as_str(), "1:dl99sjYXtGCLo96/b/PbZ/EoWjg=");
    }
}
