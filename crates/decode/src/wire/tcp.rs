//! TCP header (RFC 9293 §3.1).

use super::{be16, be32, need, Result};

/// Byte ranges of the fixed TCP header.
pub mod field {
    use crate::wire::Field;
    pub const SOURCE_PORT: Field = 0..2;
    pub const DESTINATION_PORT: Field = 2..4;
    pub const SEQUENCE_NUMBER: Field = 4..8;
    pub const ACKNOWLEDGMENT_NUMBER: Field = 8..12;
    /// Data offset (4 bits, in 32-bit words) and reserved bits.
    pub const DATA_OFFSET: usize = 12;
    /// CWR, ECE, URG, ACK, PSH, RST, SYN, FIN.
    pub const FLAGS: usize = 13;
    pub const WINDOW: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT_POINTER: Field = 18..20;
}

/// Length of the TCP header without options.
pub const MIN_HEADER_LEN: usize = 20;

/// A view of the fixed part of a TCP header. Options may extend past the bytes given
/// (a snaplen cut); [`Packet::header_len`] says how long the header claims to be.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    buf: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Checks that the 20-byte fixed header is present.
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, MIN_HEADER_LEN)?;
        Ok(Packet { buf })
    }

    #[inline]
    pub fn source_port(&self) -> u16 {
        be16(&self.buf[field::SOURCE_PORT])
    }

    #[inline]
    pub fn destination_port(&self) -> u16 {
        be16(&self.buf[field::DESTINATION_PORT])
    }

    #[inline]
    pub fn sequence_number(&self) -> u32 {
        be32(&self.buf[field::SEQUENCE_NUMBER])
    }

    #[inline]
    pub fn acknowledgment_number(&self) -> u32 {
        be32(&self.buf[field::ACKNOWLEDGMENT_NUMBER])
    }

    /// Header length in bytes (data offset × 4); may be below 20 in a bad segment.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buf[field::DATA_OFFSET] >> 4) * 4
    }

    /// The option bytes that were captured (between the fixed header and the
    /// header length; empty when the header length is 20 or less).
    #[inline]
    pub fn options(&self) -> &'a [u8] {
        let end = self.header_len().min(self.buf.len());
        self.buf.get(MIN_HEADER_LEN..end).unwrap_or(&[])
    }

    #[inline]
    pub fn flags(&self) -> u8 {
        self.buf[field::FLAGS]
    }

    #[inline]
    pub fn window(&self) -> u16 {
        be16(&self.buf[field::WINDOW])
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(&self.buf[field::CHECKSUM])
    }

    #[inline]
    pub fn urgent_pointer(&self) -> u16 {
        be16(&self.buf[field::URGENT_POINTER])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let b = [0x01, 0xbb, 0xc0, 0x00, 0, 0, 0, 1, 0, 0, 0, 2, 0x80, 0x12, 0xff, 0xff, 0xaa, 0xbb, 0, 7];
        let t = Packet::new_checked(&b).unwrap();
        assert_eq!((t.source_port(), t.destination_port()), (443, 49152));
        assert_eq!((t.sequence_number(), t.acknowledgment_number()), (1, 2));
        assert_eq!(t.header_len(), 32);
        assert_eq!(t.flags(), 0x12);
        assert_eq!(t.window(), 0xffff);
        assert_eq!(t.checksum(), 0xaabb);
        assert_eq!(t.urgent_pointer(), 7);
        assert!(Packet::new_checked(&b[..19]).is_err());
    }
}
