//! Ethernet II header (IEEE 802.3 clause 3) and IEEE 802.1Q / 802.1ad VLAN tags.

use super::{be16, need, Result};

/// Byte ranges of the Ethernet II header.
pub mod field {
    use crate::wire::Field;
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
}

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = 14;

/// Frames shorter than this (without FCS) are padded on the wire (IEEE 802.3 §4.2.3.3).
pub const MIN_FRAME_LEN: usize = 60;

/// EtherType values (IEEE registry) that the decoder follows. GRE's protocol type,
/// SLL's protocol and Geneve's protocol type use the same numbers.
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    /// IEEE 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// IEEE 802.1ad service VLAN tag.
    pub const QINQ: u16 = 0x88a8;
    /// Pre-standard QinQ tags.
    pub const QINQ_9100: u16 = 0x9100;
    pub const QINQ_9200: u16 = 0x9200;
    pub const IPV6: u16 = 0x86dd;
    /// MPLS unicast / multicast (RFC 3032 §5).
    pub const MPLS_UC: u16 = 0x8847;
    pub const MPLS_MC: u16 = 0x8848;
    /// PPPoE discovery / session stage (RFC 2516 §4).
    pub const PPPOE_DISCOVERY: u16 = 0x8863;
    pub const PPPOE_SESSION: u16 = 0x8864;
    /// Transparent Ethernet bridging (GRE, Geneve: an Ethernet frame follows).
    pub const TEB: u16 = 0x6558;
    /// ERSPAN type I/II (GRE protocol type).
    pub const ERSPAN_II: u16 = 0x88be;
    /// ERSPAN type III (GRE protocol type).
    pub const ERSPAN_III: u16 = 0x22eb;
    /// PPP (PPTP's enhanced GRE, RFC 2637 §4.1).
    pub const PPP: u16 = 0x880b;
    /// Cisco MetaData (TrustSec SGT tag).
    pub const CISCO_METADATA: u16 = 0x8909;
    /// Cisco VN-Tag (IEEE 802.1Qbh's precursor): a 4-byte tag, then the EtherType.
    pub const VNTAG: u16 = 0x8926;
    /// Aruba WLAN (GRE protocol types 0x8200, 0x8210, ... 0x8370): an 802.11 frame.
    pub const ARUBA_FIRST: u16 = 0x8200;
    pub const ARUBA_LAST: u16 = 0x8370;
    /// Values up to this are IEEE 802.3 length fields, not EtherTypes.
    pub const MAX_802_3_LEN: u16 = 0x05dc;
}

/// A view of an Ethernet II header.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    buf: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Checks that the 14-byte header is present.
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, HEADER_LEN)?;
        Ok(Frame { buf })
    }

    #[inline]
    pub fn destination(&self) -> [u8; 6] {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buf[field::DESTINATION]);
        a
    }

    #[inline]
    pub fn source(&self) -> [u8; 6] {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buf[field::SOURCE]);
        a
    }

    /// EtherType (or 802.3 length when ≤ 1500).
    #[inline]
    pub fn ethertype(&self) -> u16 {
        be16(&self.buf[field::ETHERTYPE])
    }
}

/// Byte ranges of an IEEE 802.1Q tag, counted from after the tag's own TPID (the
/// EtherType that announced it).
pub mod vlan_field {
    use crate::wire::Field;
    /// Tag control information: PCP (3 bits), DEI (1), VID (12).
    pub const TCI: Field = 0..2;
    /// EtherType of what follows the tag.
    pub const ETHERTYPE: Field = 2..4;
}

/// Length of a VLAN tag after its TPID.
pub const VLAN_TAG_LEN: usize = 4;

/// A view of one 802.1Q / 802.1ad tag (TCI + inner EtherType).
#[derive(Clone, Copy, Debug)]
pub struct VlanTag<'a> {
    buf: &'a [u8],
}

impl<'a> VlanTag<'a> {
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, VLAN_TAG_LEN)?;
        Ok(VlanTag { buf })
    }

    /// VLAN identifier (IEEE 802.1Q §9.6).
    #[inline]
    pub fn vid(&self) -> u16 {
        be16(&self.buf[vlan_field::TCI]) & 0x0fff
    }

    /// Priority code point.
    #[inline]
    pub fn pcp(&self) -> u8 {
        self.buf[0] >> 5
    }

    #[inline]
    pub fn ethertype(&self) -> u16 {
        be16(&self.buf[vlan_field::ETHERTYPE])
    }
}

/// Length of a VN-Tag after its EtherType: the tag (direction, pointer, destination
/// and source virtual interfaces) then the next EtherType.
pub const VNTAG_LEN: usize = 6;

/// EtherType that follows a VN-Tag (`buf` starts after the 0x8926).
#[inline]
pub fn vntag_ethertype(buf: &[u8]) -> Result<u16> {
    need(buf, VNTAG_LEN)?;
    Ok(be16(&buf[4..6]))
}

/// Cisco MetaData (EtherType 0x8909) header length, whether it follows an Ethernet
/// header (version, length, options, SGT, then the EtherType) or a GRE header (the
/// EtherType first, then version, length, options, SGT).
pub const CISCO_METADATA_LEN: usize = 8;

/// EtherType that follows a Cisco MetaData header. `from_gre` selects the GRE layout.
#[inline]
pub fn cisco_metadata_ethertype(buf: &[u8], from_gre: bool) -> Result<u16> {
    need(buf, CISCO_METADATA_LEN)?;
    Ok(if from_gre { be16(&buf[0..2]) } else { be16(&buf[6..8]) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_and_tag() {
        let b = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81, 0x00, 0x20, 0x0a, 0x08, 0x00];
        let f = Frame::new_checked(&b).unwrap();
        assert_eq!(f.destination(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(f.source(), [7, 8, 9, 10, 11, 12]);
        assert_eq!(f.ethertype(), ethertype::VLAN);
        let t = VlanTag::new_checked(&b[14..]).unwrap();
        assert_eq!(t.vid(), 10);
        assert_eq!(t.pcp(), 1);
        assert_eq!(t.ethertype(), ethertype::IPV4);
        assert!(Frame::new_checked(&b[..13]).is_err());
        assert!(VlanTag::new_checked(&b[15..]).is_err());
    }
}
