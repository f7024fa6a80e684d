//! VXLAN header (RFC 7348 §5), and the VXLAN-GPE header (draft-ietf-nvo3-vxlan-gpe-12
//! §3.2), whose next-protocol field says what follows.

use super::{be24, need, Error, Result};

/// Byte ranges of the VXLAN header.
pub mod field {
    use crate::wire::Field;
    /// Flags: I (0x08, VNI valid) must be set; the others are reserved.
    pub const FLAGS: usize = 0;
    pub const RESERVED1: Field = 1..4;
    pub const VNI: Field = 4..7;
    pub const RESERVED2: usize = 7;
}

/// Length of the VXLAN header; an Ethernet frame follows.
pub const HEADER_LEN: usize = 8;

/// The I flag.
pub const FLAG_I: u8 = 0x08;

/// A view of a VXLAN header.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    buf: &'a [u8],
}

impl<'a> Header<'a> {
    /// Checks the length and that the I flag is set (RFC 7348 §5: "MUST be set to 1
    /// for a valid VXLAN Network ID").
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, HEADER_LEN)?;
        if buf[field::FLAGS] & FLAG_I == 0 {
            return Err(Error::Malformed);
        }
        Ok(Header { buf })
    }

    #[inline]
    pub fn flags(&self) -> u8 {
        self.buf[field::FLAGS]
    }

    /// VXLAN network identifier.
    #[inline]
    pub fn vni(&self) -> u32 {
        be24(&self.buf[field::VNI])
    }
}

/// VXLAN-GPE's P flag: the next-protocol field is valid.
pub const GPE_FLAG_P: u8 = 0x04;

/// VXLAN-GPE next-protocol values (draft-ietf-nvo3-vxlan-gpe-12 §11.2).
pub mod gpe_protocol {
    pub const IPV4: u8 = 1;
    pub const IPV6: u8 = 2;
    pub const ETHERNET: u8 = 3;
    pub const NSH: u8 = 4;
    pub const MPLS: u8 = 5;
}

/// A view of a VXLAN-GPE header (same length as VXLAN's; byte 3 holds the next
/// protocol).
#[derive(Clone, Copy, Debug)]
pub struct GpeHeader<'a> {
    buf: &'a [u8],
}

impl<'a> GpeHeader<'a> {
    /// Checks the length and that the version (top two bits of the flags) is 0.
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, HEADER_LEN)?;
        if buf[field::FLAGS] >> 6 != 0 {
            return Err(Error::Malformed);
        }
        Ok(GpeHeader { buf })
    }

    /// The next protocol; Ethernet when the P flag is clear (as in plain VXLAN).
    #[inline]
    pub fn next_protocol(&self) -> u8 {
        if self.buf[field::FLAGS] & GPE_FLAG_P != 0 {
            self.buf[3]
        } else {
            gpe_protocol::ETHERNET
        }
    }

    #[inline]
    pub fn vni(&self) -> u32 {
        be24(&self.buf[field::VNI])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpe_header() {
        let h = GpeHeader::new_checked(&[0x0c, 0, 0, 2, 0, 0, 9, 0]).unwrap();
        assert_eq!((h.next_protocol(), h.vni()), (gpe_protocol::IPV6, 9));
        let h = GpeHeader::new_checked(&[0x08, 0, 0, 2, 0, 0, 9, 0]).unwrap();
        assert_eq!(h.next_protocol(), gpe_protocol::ETHERNET);
        assert_eq!(GpeHeader::new_checked(&[0x4c, 0, 0, 1, 0, 0, 0, 0]).unwrap_err(), Error::Malformed);
        assert_eq!(GpeHeader::new_checked(&[0x0c; 7]).unwrap_err(), Error::Truncated);
    }

    #[test]
    fn header() {
        let h = Header::new_checked(&[0x08, 0, 0, 0, 0x01, 0x02, 0x03, 0]).unwrap();
        assert_eq!((h.flags(), h.vni()), (0x08, 0x010203));
        assert_eq!(Header::new_checked(&[0; 8]).unwrap_err(), Error::Malformed);
        assert_eq!(Header::new_checked(&[8; 7]).unwrap_err(), Error::Truncated);
    }
}
