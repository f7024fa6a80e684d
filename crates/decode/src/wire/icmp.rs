//! ICMP (RFC 792) and ICMPv6 (RFC 4443 §2.1) headers.

use super::{be16, need, Result};

/// Byte ranges of the ICMP / ICMPv6 header.
pub mod field {
    use crate::wire::Field;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    /// Type-dependent: identifier and sequence number, unused, MTU, pointer...
    pub const REST_OF_HEADER: Field = 4..8;
}

/// Length of the ICMP header (type, code, checksum and the 4 type-dependent bytes).
pub const HEADER_LEN: usize = 8;

/// Length the decoder needs: type, code and checksum.
pub const MIN_LEN: usize = 4;

/// A view of an ICMP or ICMPv6 header (the layouts share their first 4 bytes).
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    buf: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Checks that type, code and checksum are present.
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, MIN_LEN)?;
        Ok(Packet { buf })
    }

    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.buf[field::TYPE]
    }

    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buf[field::CODE]
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(&self.buf[field::CHECKSUM])
    }
}

/// ICMP error messages, which quote the header of the packet that caused them (RFC
/// 792: destination unreachable 3, source quench 4, redirect 5, time exceeded 11,
/// parameter problem 12).
#[inline]
pub fn is_v4_error(msg_type: u8) -> bool {
    matches!(msg_type, 3 | 4 | 5 | 11 | 12)
}

/// ICMPv6 error messages: types 0–127 (RFC 4443 §2.1); those defined are 1
/// (destination unreachable), 2 (packet too big), 3 (time exceeded), 4 (parameter
/// problem).
#[inline]
pub fn is_v6_error(msg_type: u8) -> bool {
    matches!(msg_type, 1..=4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let p = Packet::new_checked(&[3, 1, 0x12, 0x34]).unwrap();
        assert_eq!((p.msg_type(), p.msg_code(), p.checksum()), (3, 1, 0x1234));
        assert!(Packet::new_checked(&[3, 1, 0]).is_err());
        assert!(is_v4_error(11) && !is_v4_error(8) && !is_v4_error(0));
        assert!(is_v6_error(1) && is_v6_error(4) && !is_v6_error(128));
    }
}
