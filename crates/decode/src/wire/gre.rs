//! GRE (RFC 2784, key and sequence number RFC 2890, routing RFC 1701 §2.1, PPTP's
//! enhanced GRE version 1 RFC 2637 §4.1) and the ERSPAN headers carried in it (type II
//! and III, draft-foschiano-erspan §4).

use super::{be16, be32, need, Error, Result};

/// Byte ranges of the fixed GRE header; optional fields follow at offsets that depend
/// on the flags.
pub mod field {
    use crate::wire::Field;
    /// C, R, K, S, s, Recur (3), A, Flags (4), Ver (3).
    pub const FLAGS_VERSION: Field = 0..2;
    pub const PROTOCOL_TYPE: Field = 2..4;
}

/// Length of the fixed GRE header.
pub const MIN_HEADER_LEN: usize = 4;

/// Flag bits of the first GRE word.
pub mod flags {
    pub const CHECKSUM: u16 = 0x8000;
    pub const ROUTING: u16 = 0x4000;
    pub const KEY: u16 = 0x2000;
    pub const SEQUENCE: u16 = 0x1000;
    /// Acknowledgment number present (version 1 only).
    pub const ACK: u16 = 0x0080;
    pub const VERSION: u16 = 0x0007;
}

/// Most RFC 1701 source route entries followed.
const MAX_SRE: usize = 16;

/// A view of a GRE header with its optional fields.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    buf: &'a [u8],
    len: usize,
    key_at: usize,
    seq_at: usize,
}

impl<'a> Header<'a> {
    /// Checks the whole header, optional fields included. `Malformed` for a version
    /// other than 0 or 1, or a version 1 header that breaks RFC 2637 §4.1 (C or R set,
    /// K clear, protocol not PPP).
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, MIN_HEADER_LEN)?;
        let fl = be16(&buf[field::FLAGS_VERSION]);
        let mut len = MIN_HEADER_LEN;
        let (mut key_at, mut seq_at) = (0, 0);
        match fl & flags::VERSION {
            0 => {
                if fl & (flags::CHECKSUM | flags::ROUTING) != 0 {
                    len += 4; // checksum + offset (RFC 2784 §2.1, RFC 1701 §2.1)
                }
                if fl & flags::KEY != 0 {
                    key_at = len;
                    len += 4;
                }
                if fl & flags::SEQUENCE != 0 {
                    seq_at = len;
                    len += 4;
                }
                need(buf, len)?;
                if fl & flags::ROUTING != 0 {
                    // RFC 1701 §2.1: a list of source route entries ended by a NULL one
                    // (address family 0, length 0)
                    let mut n = 0;
                    loop {
                        let sre = buf.get(len..len + 4).ok_or(Error::Truncated)?;
                        let sre_len = usize::from(sre[3]);
                        len += 4 + sre_len;
                        if be16(&sre[0..2]) == 0 && sre_len == 0 {
                            break;
                        }
                        n += 1;
                        if n > MAX_SRE {
                            return Err(Error::Malformed);
                        }
                    }
                    need(buf, len)?;
                }
            }
            1 => {
                if fl & (flags::CHECKSUM | flags::ROUTING) != 0
                    || fl & flags::KEY == 0
                    || be16(&buf[field::PROTOCOL_TYPE]) != super::ethernet::ethertype::PPP
                {
                    return Err(Error::Malformed);
                }
                key_at = len;
                len += 4;
                if fl & flags::SEQUENCE != 0 {
                    seq_at = len;
                    len += 4;
                }
                if fl & flags::ACK != 0 {
                    len += 4;
                }
                need(buf, len)?;
            }
            _ => return Err(Error::Malformed),
        }
        Ok(Header { buf, len, key_at, seq_at })
    }

    #[inline]
    fn flags_version(&self) -> u16 {
        be16(&self.buf[field::FLAGS_VERSION])
    }

    #[inline]
    pub fn version(&self) -> u8 {
        (self.flags_version() & flags::VERSION) as u8
    }

    #[inline]
    pub fn checksum_present(&self) -> bool {
        self.flags_version() & flags::CHECKSUM != 0
    }

    #[inline]
    pub fn sequence_present(&self) -> bool {
        self.flags_version() & flags::SEQUENCE != 0
    }

    /// Protocol type of the payload (an EtherType).
    #[inline]
    pub fn protocol_type(&self) -> u16 {
        be16(&self.buf[field::PROTOCOL_TYPE])
    }

    /// The key (RFC 2890 §2.1), when present. In version 1 this word holds the payload
    /// length and the call id instead (see [`Header::call_id`]).
    #[inline]
    pub fn key(&self) -> Option<u32> {
        (self.key_at != 0).then(|| be32(&self.buf[self.key_at..self.key_at + 4]))
    }

    /// Version 1: the peer's call id (low half of the key word, RFC 2637 §4.1).
    #[inline]
    pub fn call_id(&self) -> Option<u16> {
        self.key().map(|k| k as u16)
    }

    #[inline]
    pub fn sequence_number(&self) -> Option<u32> {
        (self.seq_at != 0).then(|| be32(&self.buf[self.seq_at..self.seq_at + 4]))
    }

    /// Length of the header, optional fields included.
    #[inline]
    pub fn header_len(&self) -> usize {
        self.len
    }
}

/// Byte ranges of the ERSPAN type II header.
pub mod erspan2_field {
    use crate::wire::Field;
    /// Ver (4 bits, 1 for type II), VLAN (12).
    pub const VER_VLAN: Field = 0..2;
    /// COS (3), En (2), T (1), Session ID (10).
    pub const COS_EN_T_SESSION: Field = 2..4;
    /// Reserved (12), Index (20).
    pub const RESERVED_INDEX: Field = 4..8;
}

/// Length of the ERSPAN type II header.
pub const ERSPAN2_LEN: usize = 8;

/// A view of an ERSPAN type II header (GRE protocol 0x88BE with the S bit set; type I
/// has no header at all).
#[derive(Clone, Copy, Debug)]
pub struct Erspan2<'a> {
    buf: &'a [u8],
}

impl<'a> Erspan2<'a> {
    /// Checks the length and that the version field says type II (1).
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, ERSPAN2_LEN)?;
        let h = Erspan2 { buf };
        if h.version() != 1 {
            return Err(Error::Malformed);
        }
        Ok(h)
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buf[0] >> 4
    }

    #[inline]
    pub fn vlan(&self) -> u16 {
        be16(&self.buf[erspan2_field::VER_VLAN]) & 0x0fff
    }

    #[inline]
    pub fn session_id(&self) -> u16 {
        be16(&self.buf[erspan2_field::COS_EN_T_SESSION]) & 0x03ff
    }

    #[inline]
    pub fn index(&self) -> u32 {
        be32(&self.buf[erspan2_field::RESERVED_INDEX]) & 0x000f_ffff
    }
}

/// Byte ranges of the ERSPAN type III header.
pub mod erspan3_field {
    use crate::wire::Field;
    /// Ver (4 bits, 2 for type III), VLAN (12).
    pub const VER_VLAN: Field = 0..2;
    /// COS (3), BSO (2), T (1), Session ID (10).
    pub const COS_BSO_T_SESSION: Field = 2..4;
    pub const TIMESTAMP: Field = 4..8;
    /// Security group tag.
    pub const SGT: Field = 8..10;
    /// P (1), FT (5), Hw ID (6), D (1), Gra (2), O (1).
    pub const P_FT_HW_D_GRA_O: Field = 10..12;
}

/// Length of the ERSPAN type III header without its optional subheader.
pub const ERSPAN3_LEN: usize = 12;

/// Length of the platform-specific subheader present when the O bit is set.
pub const ERSPAN3_SUBHEADER_LEN: usize = 8;

/// A view of an ERSPAN type III header (GRE protocol 0x22EB).
#[derive(Clone, Copy, Debug)]
pub struct Erspan3<'a> {
    buf: &'a [u8],
}

impl<'a> Erspan3<'a> {
    /// Checks the header and its optional subheader, and that the version field says
    /// type III (2).
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, ERSPAN3_LEN)?;
        let h = Erspan3 { buf };
        if h.version() != 2 {
            return Err(Error::Malformed);
        }
        need(buf, h.header_len())?;
        Ok(h)
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buf[0] >> 4
    }

    #[inline]
    pub fn session_id(&self) -> u16 {
        be16(&self.buf[erspan3_field::COS_BSO_T_SESSION]) & 0x03ff
    }

    #[inline]
    pub fn timestamp(&self) -> u32 {
        be32(&self.buf[erspan3_field::TIMESTAMP])
    }

    /// Frame type: 0 Ethernet, 2 IP.
    #[inline]
    pub fn frame_type(&self) -> u8 {
        (self.buf[erspan3_field::P_FT_HW_D_GRA_O.start] >> 2) & 0x1f
    }

    /// Optional subheader present.
    #[inline]
    pub fn o_bit(&self) -> bool {
        self.buf[erspan3_field::P_FT_HW_D_GRA_O.end - 1] & 1 != 0
    }

    /// Header length, subheader included.
    #[inline]
    pub fn header_len(&self) -> usize {
        ERSPAN3_LEN + if self.o_bit() { ERSPAN3_SUBHEADER_LEN } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v0_options() {
        let h = Header::new_checked(&[0x20, 0, 0x08, 0, 0, 0, 0, 42]).unwrap();
        assert_eq!((h.version(), h.protocol_type(), h.key()), (0, 0x0800, Some(42)));
        assert_eq!((h.header_len(), h.sequence_number()), (8, None));
        let b = [0xb0, 0, 0x86, 0xdd, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 9];
        let h = Header::new_checked(&b).unwrap();
        assert!(h.checksum_present() && h.sequence_present());
        assert_eq!((h.key(), h.sequence_number(), h.header_len()), (Some(7), Some(9), 16));
        assert_eq!(Header::new_checked(&b[..15]).unwrap_err(), Error::Truncated);
        // routing: checksum/offset word, one SRE of 4 bytes, NULL SRE
        let r = [0x40, 0, 8, 0, 0, 0, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4, 0, 0, 0, 0];
        assert_eq!(Header::new_checked(&r).unwrap().header_len(), 20);
        assert!(Header::new_checked(&r[..19]).is_err());
        assert_eq!(Header::new_checked(&[0, 2, 8, 0]).unwrap_err(), Error::Malformed);
    }

    #[test]
    fn v1_pptp() {
        let b = [0x30, 0x81, 0x88, 0x0b, 0, 40, 0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0];
        let h = Header::new_checked(&b).unwrap();
        assert_eq!((h.version(), h.call_id(), h.header_len()), (1, Some(0x1234), 16));
        let mut bad = b;
        bad[0] = 0x10; // K clear
        assert_eq!(Header::new_checked(&bad).unwrap_err(), Error::Malformed);
    }

    #[test]
    fn erspan() {
        let e = Erspan2::new_checked(&[0x10, 0x01, 0x10, 0x65, 0, 0, 0xab, 0xc5]).unwrap();
        assert_eq!((e.version(), e.vlan(), e.session_id(), e.index()), (1, 1, 101, 0xabc5));
        assert!(Erspan2::new_checked(&[0x20, 0, 0, 0, 0, 0, 0, 0]).is_err());
        let mut b3 = [0u8; 20];
        b3[0] = 0x20;
        b3[3] = 5;
        b3[11] = 1;
        let e = Erspan3::new_checked(&b3).unwrap();
        assert_eq!((e.session_id(), e.header_len(), e.frame_type()), (5, 20, 0));
        assert!(Erspan3::new_checked(&b3[..19]).is_err());
        b3[11] = 0;
        assert_eq!(Erspan3::new_checked(&b3[..12]).unwrap().header_len(), 12);
    }
}
