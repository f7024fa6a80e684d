//! IEEE 802.2 LLC with a SNAP header (RFC 1042), as 802.11 and FDDI carry IP, and the
//! FDDI MAC header before it.

use super::{be16, need, Error, Result};

/// Byte ranges of an LLC/SNAP header.
pub mod field {
    use crate::wire::Field;
    /// DSAP, SSAP and control: 0xAA 0xAA 0x03 for SNAP.
    pub const DSAP_SSAP_CONTROL: Field = 0..3;
    /// Organization code: 00-00-00 (RFC 1042) or 00-00-F8 (802.1H bridge tunnel).
    pub const OUI: Field = 3..6;
    pub const ETHERTYPE: Field = 6..8;
}

/// Length of an LLC header with SNAP.
pub const SNAP_LEN: usize = 8;

/// Length of the FDDI MAC header (frame control, destination, source; ANSI X3.139).
pub const FDDI_HEADER_LEN: usize = 13;

/// The EtherType of an LLC/SNAP header, when `buf` starts with one whose organization
/// code says an EtherType follows (RFC 1042 §"IEEE 802.2 Details"); `Malformed` for
/// another LLC (STP, NetBIOS...).
#[inline]
pub fn snap_ethertype(buf: &[u8]) -> Result<u16> {
    need(buf, SNAP_LEN)?;
    let oui = &buf[field::OUI];
    if buf[field::DSAP_SSAP_CONTROL] != [0xaa, 0xaa, 0x03] || !(oui == [0, 0, 0] || oui == [0, 0, 0xf8]) {
        return Err(Error::Malformed);
    }
    Ok(be16(&buf[field::ETHERTYPE]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snap() {
        assert_eq!(snap_ethertype(&[0xaa, 0xaa, 3, 0, 0, 0, 0x08, 0x00]), Ok(0x0800));
        assert_eq!(snap_ethertype(&[0xaa, 0xaa, 3, 0, 0, 0xf8, 0x86, 0xdd]), Ok(0x86dd));
        assert_eq!(snap_ethertype(&[0x42, 0x42, 3, 0, 0, 0, 0, 0]), Err(Error::Malformed));
        assert_eq!(snap_ethertype(&[0xaa, 0xaa, 3, 0, 0, 0, 8]), Err(Error::Truncated));
    }
}
