//! GTP-U header, version 1 (3GPP TS 29.281 §5.1), with its optional sequence number /
//! N-PDU number / extension header fields and the extension header chain (§5.2).

use super::{be16, be32, need, Error, Result};

/// Byte ranges of the GTP-U header.
pub mod field {
    use crate::wire::Field;
    /// Version (3 bits), PT (1), spare (1), E (1), S (1), PN (1).
    pub const FLAGS: usize = 0;
    pub const MESSAGE_TYPE: usize = 1;
    /// Length of what follows the first 8 bytes (optional fields included).
    pub const LENGTH: Field = 2..4;
    /// Tunnel endpoint identifier.
    pub const TEID: Field = 4..8;
    /// Present when any of E, S, PN is set.
    pub const SEQUENCE_NUMBER: Field = 8..10;
    pub const N_PDU_NUMBER: usize = 10;
    pub const NEXT_EXTENSION_HEADER_TYPE: usize = 11;
}

/// Length of the mandatory part of the header.
pub const MIN_HEADER_LEN: usize = 8;

/// Message type of a G-PDU (user data: an IP packet follows).
pub const MSG_G_PDU: u8 = 255;

/// Most extension headers followed.
const MAX_EXT: usize = 8;

/// A view of a GTP-U header, extension headers included.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    buf: &'a [u8],
    len: usize,
}

impl<'a> Header<'a> {
    /// Checks the whole header. `Malformed` when the version is not 1, PT is not 1
    /// (GTP' is not GTP-U), an extension header has length 0, or there are more than
    /// a few extension headers.
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, MIN_HEADER_LEN)?;
        let flags = buf[field::FLAGS];
        if flags >> 5 != 1 || flags & 0x10 == 0 {
            return Err(Error::Malformed);
        }
        let mut len = MIN_HEADER_LEN;
        if flags & 0x07 != 0 {
            need(buf, 12)?;
            len = 12;
            if flags & 0x04 != 0 {
                // §5.2.1: each extension header: length (4-byte units, whole header),
                // contents, next extension header type (last byte)
                let mut next = buf[field::NEXT_EXTENSION_HEADER_TYPE];
                let mut n = 0;
                while next != 0 {
                    n += 1;
                    if n > MAX_EXT {
                        return Err(Error::Malformed);
                    }
                    let units = usize::from(*buf.get(len).ok_or(Error::Truncated)?);
                    if units == 0 {
                        return Err(Error::Malformed);
                    }
                    len += units * 4;
                    next = *buf.get(len - 1).ok_or(Error::Truncated)?;
                }
            }
        }
        Ok(Header { buf, len })
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buf[field::FLAGS] >> 5
    }

    #[inline]
    pub fn message_type(&self) -> u8 {
        self.buf[field::MESSAGE_TYPE]
    }

    #[inline]
    pub fn length(&self) -> u16 {
        be16(&self.buf[field::LENGTH])
    }

    #[inline]
    pub fn teid(&self) -> u32 {
        be32(&self.buf[field::TEID])
    }

    /// Sequence number, when the S flag is set.
    #[inline]
    pub fn sequence_number(&self) -> Option<u16> {
        (self.buf[field::FLAGS] & 0x02 != 0).then(|| be16(&self.buf[field::SEQUENCE_NUMBER]))
    }

    /// Length of the header, optional fields and extension headers included.
    #[inline]
    pub fn header_len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_extended() {
        let b = [0x30, 0xff, 0, 20, 0, 0, 0x12, 0x34];
        let h = Header::new_checked(&b).unwrap();
        assert_eq!((h.version(), h.message_type(), h.length()), (1, 255, 20));
        assert_eq!((h.teid(), h.header_len(), h.sequence_number()), (0x1234, 8, None));
        // E and S set; one PDU session container extension (length 1 = 4 bytes)
        let b = [0x36, 0xff, 0, 20, 0, 0, 0, 1, 0, 9, 0, 0x85, 1, 0x10, 0x01, 0x00];
        let h = Header::new_checked(&b).unwrap();
        assert_eq!((h.header_len(), h.sequence_number()), (16, Some(9)));
        assert_eq!(Header::new_checked(&b[..15]).unwrap_err(), Error::Truncated);
        let mut z = b;
        z[12] = 0;
        assert_eq!(Header::new_checked(&z).unwrap_err(), Error::Malformed);
        assert_eq!(Header::new_checked(&[0x20, 0xff, 0, 0, 0, 0, 0, 0]).unwrap_err(), Error::Malformed);
    }
}
