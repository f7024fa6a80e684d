//! Teredo encapsulation (RFC 4380 §5.1.1): an IPv6 packet in UDP, optionally
//! preceded by an authentication header and an origin indication.

use super::{be16, need, Error, Result};

/// First two bytes of the authentication header.
pub const AUTH_INDICATOR: u16 = 0x0001;
/// First two bytes of the origin indication.
pub const ORIGIN_INDICATOR: u16 = 0x0000;
/// Length of the origin indication.
pub const ORIGIN_LEN: usize = 8;

/// Offset of the IPv6 packet in a Teredo UDP payload `buf` whose length according to
/// the IP/UDP headers is `payload_len` (`buf` may be shorter, cut by a snaplen).
///
/// RFC 4380 has no magic number, so the packet is taken as Teredo only if what
/// follows the optional headers is an IPv6 header (version 6, captured in full) whose
/// payload length accounts exactly for the rest of the UDP payload; `Malformed`
/// otherwise.
pub fn ipv6_offset(buf: &[u8], payload_len: usize) -> Result<usize> {
    let mut off = 0;
    need(buf, 2)?;
    if be16(&buf[0..2]) == AUTH_INDICATOR {
        // indicator (2), ID-len (1), AU-len (1), client id, authentication value,
        // nonce (8), confirmation (1)
        need(buf, 4)?;
        off = 4 + usize::from(buf[2]) + usize::from(buf[3]) + 9;
    }
    let rest = buf.get(off..).ok_or(Error::Truncated)?;
    need(rest, 2)?;
    if be16(&rest[0..2]) == ORIGIN_INDICATOR {
        off += ORIGIN_LEN;
    }
    let ip = buf.get(off..).ok_or(Error::Truncated)?;
    need(ip, super::ipv6::HEADER_LEN)?;
    let plen = usize::from(be16(&ip[4..6]));
    if ip[0] >> 4 != 6 || off + super::ipv6::HEADER_LEN + plen != payload_len {
        return Err(Error::Malformed);
    }
    Ok(off)
}

/// Whether the IPv6 header at the start of `ip` (checked by [`ipv6_offset`]) has a
/// Teredo address (the prefix 2001:0000::/32, RFC 4380 §2.13) as its source or its
/// destination.
pub fn has_teredo_address(ip: &[u8]) -> bool {
    const PREFIX: [u8; 4] = [0x20, 0x01, 0x00, 0x00];
    ip.get(8..12) == Some(&PREFIX[..]) || ip.get(24..28) == Some(&PREFIX[..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv6(plen: u16) -> Vec<u8> {
        let mut v = vec![0u8; 40 + usize::from(plen)];
        v[0] = 0x60;
        v[4..6].copy_from_slice(&plen.to_be_bytes());
        v[6] = 59;
        v
    }

    #[test]
    fn offsets() {
        let p = ipv6(0);
        assert_eq!(ipv6_offset(&p, 40), Ok(0));
        assert_eq!(ipv6_offset(&p, 41), Err(Error::Malformed));
        let mut o = vec![0, 0, 0x12, 0x34, 1, 2, 3, 4];
        o.extend(ipv6(4));
        assert_eq!(ipv6_offset(&o, 52), Ok(8));
        let mut a = vec![0, 1, 0, 0];
        a.extend([0; 9]);
        a.extend(&o);
        assert_eq!(ipv6_offset(&a, 65), Ok(21));
        assert_eq!(ipv6_offset(&[0x45, 0], 2), Err(Error::Truncated));
        let mut v4 = ipv6(0);
        v4[0] = 0x45;
        assert_eq!(ipv6_offset(&v4, 40), Err(Error::Malformed));
    }
}
