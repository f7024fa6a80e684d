//! Geneve header (RFC 8926 §3.4).

use super::{be16, be24, need, Error, Result};

/// Byte ranges of the fixed Geneve header; variable-length options follow.
pub mod field {
    use crate::wire::Field;
    /// Ver (2 bits), Opt Len (6 bits, in 4-byte multiples).
    pub const VER_OPT_LEN: usize = 0;
    /// O (control packet), C (critical options), reserved.
    pub const FLAGS: usize = 1;
    /// EtherType of the payload (0x6558 for Ethernet).
    pub const PROTOCOL_TYPE: Field = 2..4;
    pub const VNI: Field = 4..7;
    pub const RESERVED: usize = 7;
}

/// Length of the fixed Geneve header.
pub const MIN_HEADER_LEN: usize = 8;

/// A view of a Geneve header with its options.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    buf: &'a [u8],
}

impl<'a> Header<'a> {
    /// Checks the header and options are present and the version is 0 (RFC 8926 §3.4:
    /// packets with an unknown version must be dropped).
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, MIN_HEADER_LEN)?;
        let h = Header { buf };
        if h.version() != 0 {
            return Err(Error::Malformed);
        }
        need(buf, h.header_len())?;
        Ok(h)
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buf[field::VER_OPT_LEN] >> 6
    }

    /// Length of the options in bytes.
    #[inline]
    pub fn options_len(&self) -> usize {
        usize::from(self.buf[field::VER_OPT_LEN] & 0x3f) * 4
    }

    /// Control packet (O bit).
    #[inline]
    pub fn oam(&self) -> bool {
        self.buf[field::FLAGS] & 0x80 != 0
    }

    #[inline]
    pub fn protocol_type(&self) -> u16 {
        be16(&self.buf[field::PROTOCOL_TYPE])
    }

    /// Virtual network identifier.
    #[inline]
    pub fn vni(&self) -> u32 {
        be24(&self.buf[field::VNI])
    }

    /// Length of the header, options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        MIN_HEADER_LEN + self.options_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header() {
        let mut b = [0u8; 16];
        b[0] = 2; // 8 bytes of options
        b[2] = 0x65;
        b[3] = 0x58;
        b[4..7].copy_from_slice(&[0, 0, 10]);
        let h = Header::new_checked(&b).unwrap();
        assert_eq!((h.version(), h.options_len(), h.header_len()), (0, 8, 16));
        assert_eq!((h.protocol_type(), h.vni(), h.oam()), (0x6558, 10, false));
        assert_eq!(Header::new_checked(&b[..15]).unwrap_err(), Error::Truncated);
        b[0] = 0x40;
        assert_eq!(Header::new_checked(&b).unwrap_err(), Error::Malformed);
    }
}
