//! BSD loopback encapsulation: LINKTYPE_NULL (a 4-byte address family in the byte
//! order of the capturing host) and LINKTYPE_LOOP (the same, in network byte order).

use super::{be32, need, Result};

/// Length of the header.
pub const HEADER_LEN: usize = 4;

/// AF_INET on every system.
pub const AF_INET: u32 = 2;

/// AF_INET6 as numbered by Linux (10), NetBSD / OpenBSD (24), FreeBSD (28) and
/// Darwin (30).
pub const AF_INET6: [u32; 4] = [10, 24, 28, 30];

/// What the address family says follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Ipv4,
    Ipv6,
    Other(u32),
}

#[inline]
fn family_of(af: u32) -> Option<Family> {
    if af == AF_INET {
        Some(Family::Ipv4)
    } else if AF_INET6.contains(&af) {
        Some(Family::Ipv6)
    } else {
        None
    }
}

/// The family of a LINKTYPE_NULL header: the host byte order is unknown, so both
/// orders are tried.
#[inline]
pub fn null_family(buf: &[u8]) -> Result<Family> {
    need(buf, HEADER_LEN)?;
    let be = be32(&buf[0..4]);
    let le = be.swap_bytes();
    Ok(family_of(le).or_else(|| family_of(be)).unwrap_or(Family::Other(le)))
}

/// The family of a LINKTYPE_LOOP header (network byte order).
#[inline]
pub fn loop_family(buf: &[u8]) -> Result<Family> {
    need(buf, HEADER_LEN)?;
    let af = be32(&buf[0..4]);
    Ok(family_of(af).unwrap_or(Family::Other(af)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(null_family(&[2, 0, 0, 0]), Ok(Family::Ipv4));
        assert_eq!(null_family(&[0, 0, 0, 30]), Ok(Family::Ipv6));
        assert_eq!(null_family(&[24, 0, 0, 0]), Ok(Family::Ipv6));
        assert_eq!(null_family(&[7, 0, 0, 0]), Ok(Family::Other(7)));
        assert_eq!(loop_family(&[0, 0, 0, 2]), Ok(Family::Ipv4));
        assert_eq!(loop_family(&[2, 0, 0, 0]), Ok(Family::Other(0x0200_0000)));
        assert!(null_family(&[2, 0, 0]).is_err());
    }
}
