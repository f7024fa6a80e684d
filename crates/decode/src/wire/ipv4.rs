//! IPv4 header (RFC 791 §3.1).

use super::{be16, need, Error, Result};

/// Byte ranges of the fixed IPv4 header.
pub mod field {
    use crate::wire::Field;
    /// Version (4 bits) and IHL (4 bits, in 32-bit words).
    pub const VER_IHL: usize = 0;
    /// DSCP (6 bits) and ECN (2 bits) (RFC 2474, RFC 3168).
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LENGTH: Field = 2..4;
    pub const IDENTIFICATION: Field = 4..6;
    /// Flags (3 bits: reserved, DF, MF) and fragment offset (13 bits, 8-byte units).
    pub const FLAGS_FRAG_OFFSET: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SOURCE: Field = 12..16;
    pub const DESTINATION: Field = 16..20;
}

/// Length of the IPv4 header without options.
pub const MIN_HEADER_LEN: usize = 20;

/// A view of an IPv4 header, options included.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    buf: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Checks that the header, options included, is present: `Truncated` when bytes
    /// are missing, `Malformed` when IHL is below 5. The version is not checked (the
    /// caller counts a wrong one as it sees fit).
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, MIN_HEADER_LEN)?;
        let p = Packet { buf };
        let hl = p.header_len();
        if hl < MIN_HEADER_LEN {
            return Err(Error::Malformed);
        }
        need(buf, hl)?;
        Ok(p)
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buf[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buf[field::VER_IHL] & 0x0f) * 4
    }

    #[inline]
    pub fn dscp_ecn(&self) -> u8 {
        self.buf[field::DSCP_ECN]
    }

    /// Total length of the datagram (header + data) in bytes. 0 in captures of
    /// segmentation-offloaded (TSO / BIG TCP) packets.
    #[inline]
    pub fn total_length(&self) -> u16 {
        be16(&self.buf[field::TOTAL_LENGTH])
    }

    #[inline]
    pub fn identification(&self) -> u16 {
        be16(&self.buf[field::IDENTIFICATION])
    }

    #[inline]
    pub fn dont_fragment(&self) -> bool {
        self.buf[field::FLAGS_FRAG_OFFSET.start] & 0x40 != 0
    }

    #[inline]
    pub fn more_fragments(&self) -> bool {
        self.buf[field::FLAGS_FRAG_OFFSET.start] & 0x20 != 0
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn fragment_offset(&self) -> u32 {
        u32::from(be16(&self.buf[field::FLAGS_FRAG_OFFSET]) & 0x1fff) * 8
    }

    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buf[field::TTL]
    }

    #[inline]
    pub fn protocol(&self) -> u8 {
        self.buf[field::PROTOCOL]
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(&self.buf[field::CHECKSUM])
    }

    #[inline]
    pub fn source(&self) -> [u8; 4] {
        let mut a = [0; 4];
        a.copy_from_slice(&self.buf[field::SOURCE]);
        a
    }

    #[inline]
    pub fn destination(&self) -> [u8; 4] {
        let mut a = [0; 4];
        a.copy_from_slice(&self.buf[field::DESTINATION]);
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HDR: [u8; 24] =
        [0x46, 0x00, 0x00, 0x30, 0x12, 0x34, 0x20, 0x03, 64, 17, 0xab, 0xcd, 10, 0, 0, 1, 10, 0, 0, 2, 1, 1, 1, 0];

    #[test]
    fn fields() {
        let p = Packet::new_checked(&HDR).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.total_length(), 48);
        assert_eq!(p.identification(), 0x1234);
        assert!(p.more_fragments());
        assert!(!p.dont_fragment());
        assert_eq!(p.fragment_offset(), 24);
        assert_eq!((p.ttl(), p.protocol(), p.checksum()), (64, 17, 0xabcd));
        assert_eq!(p.source(), [10, 0, 0, 1]);
        assert_eq!(p.destination(), [10, 0, 0, 2]);
    }

    #[test]
    fn checks() {
        assert_eq!(Packet::new_checked(&HDR[..23]).unwrap_err(), Error::Truncated);
        let mut h = HDR;
        h[0] = 0x44;
        assert_eq!(Packet::new_checked(&h).unwrap_err(), Error::Malformed);
        assert_eq!(Packet::new_checked(&HDR[..19]).unwrap_err(), Error::Truncated);
    }
}
