//! PPPoE session header (RFC 2516 §4) and the PPP protocol field (RFC 1661 §2).

use super::{be16, need, Error, Result};

/// Byte ranges of the PPPoE header.
pub mod field {
    use crate::wire::Field;
    /// VER (4 bits, 1) and TYPE (4 bits, 1).
    pub const VER_TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const SESSION_ID: Field = 2..4;
    /// Length of the PPPoE payload (the PPP frame, protocol field included).
    pub const LENGTH: Field = 4..6;
}

/// Length of the PPPoE header.
pub const HEADER_LEN: usize = 6;

/// PPP protocol numbers (IANA PPP DLL protocol numbers) the decoder follows.
pub mod protocol {
    pub const IPV4: u16 = 0x0021;
    pub const IPV6: u16 = 0x0057;
    pub const MPLS_UC: u16 = 0x0281;
    pub const MPLS_MC: u16 = 0x0283;
}

/// A view of a PPPoE header.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    buf: &'a [u8],
}

impl<'a> Header<'a> {
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, HEADER_LEN)?;
        Ok(Header { buf })
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buf[field::VER_TYPE] >> 4
    }

    #[inline]
    pub fn type_(&self) -> u8 {
        self.buf[field::VER_TYPE] & 0x0f
    }

    /// 0 in the session stage.
    #[inline]
    pub fn code(&self) -> u8 {
        self.buf[field::CODE]
    }

    #[inline]
    pub fn session_id(&self) -> u16 {
        be16(&self.buf[field::SESSION_ID])
    }

    #[inline]
    pub fn length(&self) -> u16 {
        be16(&self.buf[field::LENGTH])
    }
}

/// Reads a PPP protocol field at the start of `buf`, skipping the HDLC-like address and
/// control bytes `ff 03` when present (RFC 1662 §3.1; absent when Address-and-Control-
/// Field-Compression is on). Handles Protocol-Field-Compression (RFC 1661 §6.5: a
/// one-byte field, recognised by its odd value). Returns the protocol and the number of
/// bytes consumed.
#[inline]
pub fn ppp_protocol(buf: &[u8]) -> Result<(u16, usize)> {
    let skip = if buf.len() >= 2 && buf[0] == 0xff && buf[1] == 0x03 { 2 } else { 0 };
    let b = buf.get(skip..).ok_or(Error::Truncated)?;
    let first = *b.first().ok_or(Error::Truncated)?;
    if first & 1 == 1 {
        // compressed: the one-byte value is the low byte of the protocol
        return Ok((u16::from(first), skip + 1));
    }
    need(b, 2)?;
    let p = be16(&b[0..2]);
    if p & 1 == 0 {
        // a protocol number's least significant bit is always 1 (RFC 1661 §2)
        return Err(Error::Malformed);
    }
    Ok((p, skip + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_protocol() {
        let h = Header::new_checked(&[0x11, 0, 0x12, 0x34, 0, 42]).unwrap();
        assert_eq!((h.version(), h.type_(), h.code()), (1, 1, 0));
        assert_eq!(h.session_id(), 0x1234);
        assert_eq!(h.length(), 42);
        assert!(Header::new_checked(&[0x11, 0]).is_err());
        assert_eq!(ppp_protocol(&[0x00, 0x21]), Ok((0x21, 2)));
        assert_eq!(ppp_protocol(&[0x21, 0x45]), Ok((0x21, 1)));
        assert_eq!(ppp_protocol(&[0xff, 0x03, 0x00, 0x57]), Ok((0x57, 4)));
        assert_eq!(ppp_protocol(&[0x00, 0x22]), Err(Error::Malformed));
        assert_eq!(ppp_protocol(&[]), Err(Error::Truncated));
        assert_eq!(ppp_protocol(&[0x00]), Err(Error::Truncated));
    }
}
