//! IPv6 header (RFC 8200 §3) and the extension headers the decoder walks: hop-by-hop
//! and destination options (§4.3, §4.6), routing (§4.4), fragment (§4.5) and the
//! authentication header (RFC 4302 §2), plus the jumbo payload option (RFC 2675 §2).

use super::{be16, be32, need, Result};

/// Byte ranges of the IPv6 header.
pub mod field {
    use crate::wire::Field;
    /// Version (4 bits), traffic class (8), flow label (20).
    pub const VER_TC_FLOW: Field = 0..4;
    pub const PAYLOAD_LENGTH: Field = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SOURCE: Field = 8..24;
    pub const DESTINATION: Field = 24..40;
}

/// Length of the IPv6 header.
pub const HEADER_LEN: usize = 40;

/// Next-header values of extension headers (IANA "IPv6 Extension Header Types").
pub mod next_header {
    pub const HOP_BY_HOP: u8 = 0;
    pub const ROUTING: u8 = 43;
    pub const FRAGMENT: u8 = 44;
    pub const ESP: u8 = 50;
    pub const AH: u8 = 51;
    pub const NO_NEXT: u8 = 59;
    pub const DEST_OPTS: u8 = 60;
}

/// A view of the IPv6 header.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    buf: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Checks that the 40-byte header is present (the version is not checked).
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, HEADER_LEN)?;
        Ok(Packet { buf })
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buf[0] >> 4
    }

    #[inline]
    pub fn traffic_class(&self) -> u8 {
        ((be16(&self.buf[0..2]) >> 4) & 0xff) as u8
    }

    #[inline]
    pub fn flow_label(&self) -> u32 {
        be32(&self.buf[field::VER_TC_FLOW]) & 0x000f_ffff
    }

    /// Length of what follows the fixed header, extension headers included; 0 for a
    /// jumbogram (RFC 2675).
    #[inline]
    pub fn payload_length(&self) -> u16 {
        be16(&self.buf[field::PAYLOAD_LENGTH])
    }

    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buf[field::NEXT_HEADER]
    }

    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buf[field::HOP_LIMIT]
    }

    #[inline]
    pub fn source(&self) -> [u8; 16] {
        let mut a = [0; 16];
        a.copy_from_slice(&self.buf[field::SOURCE]);
        a
    }

    #[inline]
    pub fn destination(&self) -> [u8; 16] {
        let mut a = [0; 16];
        a.copy_from_slice(&self.buf[field::DESTINATION]);
        a
    }
}

/// Byte ranges common to the extension headers of the generic format (hop-by-hop,
/// routing, destination options) and AH.
pub mod ext_field {
    pub const NEXT_HEADER: usize = 0;
    /// Hdr Ext Len: in 8-byte units not counting the first 8 (RFC 8200 §4.3), or for
    /// AH in 4-byte units minus 2 (RFC 4302 §2.2).
    pub const LENGTH: usize = 1;
}

/// A view of a generic extension header or an AH (length rules differ, see
/// [`ExtHeader::new_checked`]).
#[derive(Clone, Copy, Debug)]
pub struct ExtHeader<'a> {
    buf: &'a [u8],
    len: usize,
}

impl<'a> ExtHeader<'a> {
    /// Checks that the whole extension header of type `kind` is present; `kind`
    /// selects the length rule (AH counts in 4-byte units, RFC 4302 §2.2).
    #[inline]
    pub fn new_checked(buf: &'a [u8], kind: u8) -> Result<Self> {
        need(buf, 2)?;
        let n = usize::from(buf[ext_field::LENGTH]);
        let len = if kind == next_header::AH { (n + 2) * 4 } else { (n + 1) * 8 };
        need(buf, len)?;
        Ok(ExtHeader { buf, len })
    }

    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buf[ext_field::NEXT_HEADER]
    }

    /// Length of the whole extension header in bytes.
    #[inline]
    pub fn header_len(&self) -> usize {
        self.len
    }

    /// The options area of a hop-by-hop / destination options header.
    #[inline]
    pub fn options(&self) -> &'a [u8] {
        &self.buf[2..self.len]
    }

    /// The Jumbo Payload Length from a hop-by-hop options header (RFC 2675 §2:
    /// option type 0xC2, data length 4), if it holds one.
    pub fn jumbo_payload_length(&self) -> Option<u32> {
        let opts = self.options();
        let mut i = 0;
        while i < opts.len() {
            let t = opts[i];
            if t == 0 {
                // Pad1 (RFC 8200 §4.2)
                i += 1;
                continue;
            }
            let l = usize::from(*opts.get(i + 1)?);
            let data = opts.get(i + 2..i + 2 + l)?;
            if t == 0xc2 && l == 4 {
                return Some(be32(data));
            }
            i += 2 + l;
        }
        None
    }
}

/// Byte ranges of the fragment header (RFC 8200 §4.5).
pub mod frag_field {
    use crate::wire::Field;
    pub const NEXT_HEADER: usize = 0;
    pub const RESERVED: usize = 1;
    /// Fragment offset (13 bits, 8-byte units), reserved (2), M flag (1).
    pub const OFFSET_M: Field = 2..4;
    pub const IDENTIFICATION: Field = 4..8;
}

/// Length of the fragment header.
pub const FRAG_HEADER_LEN: usize = 8;

/// A view of a fragment header.
#[derive(Clone, Copy, Debug)]
pub struct FragHeader<'a> {
    buf: &'a [u8],
}

impl<'a> FragHeader<'a> {
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, FRAG_HEADER_LEN)?;
        Ok(FragHeader { buf })
    }

    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buf[frag_field::NEXT_HEADER]
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn fragment_offset(&self) -> u32 {
        u32::from(be16(&self.buf[frag_field::OFFSET_M]) & 0xfff8)
    }

    #[inline]
    pub fn more_fragments(&self) -> bool {
        self.buf[frag_field::OFFSET_M.end - 1] & 1 != 0
    }

    #[inline]
    pub fn identification(&self) -> u32 {
        be32(&self.buf[frag_field::IDENTIFICATION])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Error;

    #[test]
    fn fixed_header() {
        let mut b = [0u8; 40];
        b[0] = 0x6a;
        b[1] = 0xb1;
        b[2] = 0x23;
        b[3] = 0x45;
        b[4] = 0x01;
        b[5] = 0x00;
        b[6] = 17;
        b[7] = 63;
        b[8] = 0x20;
        b[39] = 1;
        let p = Packet::new_checked(&b).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xab);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_length(), 256);
        assert_eq!((p.next_header(), p.hop_limit()), (17, 63));
        assert_eq!(p.source()[0], 0x20);
        assert_eq!(p.destination()[15], 1);
        assert_eq!(Packet::new_checked(&b[..39]).unwrap_err(), Error::Truncated);
    }

    #[test]
    fn ext_headers() {
        // hop-by-hop with a jumbo option: 8 bytes
        let hbh = [6, 0, 0xc2, 4, 0, 1, 0, 0];
        let e = ExtHeader::new_checked(&hbh, next_header::HOP_BY_HOP).unwrap();
        assert_eq!((e.next_header(), e.header_len()), (6, 8));
        assert_eq!(e.jumbo_payload_length(), Some(65536));
        // AH with length 4 → 24 bytes
        let ah = [17u8, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let e = ExtHeader::new_checked(&ah, next_header::AH).unwrap();
        assert_eq!(e.header_len(), 24);
        assert!(ExtHeader::new_checked(&ah[..23], next_header::AH).is_err());
        assert!(ExtHeader::new_checked(&ah, next_header::ROUTING).is_err());
        let f = FragHeader::new_checked(&[17, 0, 0x05, 0x39, 0xde, 0xad, 0xbe, 0xef]).unwrap();
        assert_eq!(f.fragment_offset(), 0x538);
        assert!(f.more_fragments());
        assert_eq!(f.identification(), 0xdeadbeef);
        // options running past the header end yield nothing
        let bad = [6, 0, 1, 9, 0, 0, 0, 0];
        let e = ExtHeader::new_checked(&bad, 0).unwrap();
        assert_eq!(e.jumbo_payload_length(), None);
    }
}
