//! IEEE 802.11 MAC header of data frames (IEEE 802.11-2020 §9.2.3, §9.3.2.1), as Aruba
//! access points tunnel them to their controller in GRE (protocol types 0x8200 to
//! 0x8370, as Wireshark reads them). No FCS follows the frame there.

use super::{need, Error, Result};

/// Byte ranges of the fixed part of a data frame's MAC header.
pub mod field {
    use crate::wire::Field;
    /// Protocol version (2 bits), type (2), subtype (4), then the flags byte.
    pub const FRAME_CONTROL: Field = 0..2;
    pub const DURATION: Field = 2..4;
    pub const ADDRESS1: Field = 4..10;
    pub const ADDRESS2: Field = 10..16;
    pub const ADDRESS3: Field = 16..22;
    pub const SEQUENCE_CONTROL: Field = 22..24;
}

/// Length of a data frame's header with three addresses and no QoS control.
pub const MIN_HEADER_LEN: usize = 24;

/// Frame type "data" (§9.2.4.1.3).
const TYPE_DATA: u8 = 2;
/// Subtype bits of data frames: QoS (a QoS control field follows the addresses), and
/// "no data" (null functions carry no frame body).
const SUBTYPE_QOS: u8 = 0x8;
const SUBTYPE_NO_DATA: u8 = 0x4;
/// Flag bits (second byte of the frame control).
const FLAG_TO_DS: u8 = 0x01;
const FLAG_FROM_DS: u8 = 0x02;
const FLAG_PROTECTED: u8 = 0x40;
/// +HTC: with QoS, a 4-byte HT control field follows the QoS control.
const FLAG_ORDER: u8 = 0x80;

/// Where the frame body of a data frame starts: after the header, with its fourth
/// address (to and from DS), QoS control and HT control when present. `Malformed` for
/// what carries no readable body: management and control frames, null functions,
/// protected (encrypted) frames.
#[inline]
pub fn data_body_offset(buf: &[u8]) -> Result<usize> {
    need(buf, MIN_HEADER_LEN)?;
    let (fc, flags) = (buf[0], buf[1]);
    let (version, kind, subtype) = (fc & 0x3, (fc >> 2) & 0x3, fc >> 4);
    if version != 0 || kind != TYPE_DATA || subtype & SUBTYPE_NO_DATA != 0 || flags & FLAG_PROTECTED != 0 {
        return Err(Error::Malformed);
    }
    let mut len = MIN_HEADER_LEN;
    if flags & (FLAG_TO_DS | FLAG_FROM_DS) == FLAG_TO_DS | FLAG_FROM_DS {
        len += 6;
    }
    if subtype & SUBTYPE_QOS != 0 {
        len += 2;
        if flags & FLAG_ORDER != 0 {
            len += 4;
        }
    }
    need(buf, len)?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_frames() {
        let mut h = [0u8; 40];
        h[0] = 0x08; // data
        assert_eq!(data_body_offset(&h), Ok(24));
        h[0] = 0x88; // QoS data
        assert_eq!(data_body_offset(&h), Ok(26));
        h[1] = FLAG_TO_DS | FLAG_FROM_DS | FLAG_ORDER;
        assert_eq!(data_body_offset(&h), Ok(36));
        h[1] = FLAG_PROTECTED;
        assert_eq!(data_body_offset(&h), Err(Error::Malformed));
        h[1] = 0;
        h[0] = 0xc8; // QoS null
        assert_eq!(data_body_offset(&h), Err(Error::Malformed));
        h[0] = 0x80; // beacon
        assert_eq!(data_body_offset(&h), Err(Error::Malformed));
        assert_eq!(data_body_offset(&[0x08; 23]), Err(Error::Truncated));
    }
}
