//! VXLAN header (RFC 7348 §5).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header() {
        let h = Header::new_checked(&[0x08, 0, 0, 0, 0x01, 0x02, 0x03, 0]).unwrap();
        assert_eq!((h.flags(), h.vni()), (0x08, 0x010203));
        assert_eq!(Header::new_checked(&[0; 8]).unwrap_err(), Error::Malformed);
        assert_eq!(Header::new_checked(&[8; 7]).unwrap_err(), Error::Truncated);
    }
}
