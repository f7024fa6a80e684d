//! UDP header (RFC 768).

use super::{be16, need, Result};

/// Byte ranges of the UDP header.
pub mod field {
    use crate::wire::Field;
    pub const SOURCE_PORT: Field = 0..2;
    pub const DESTINATION_PORT: Field = 2..4;
    /// Length of header + data in bytes (0 for an IPv6 jumbogram, RFC 2675 §4).
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// Well-known UDP ports of the tunnels the decoder opens.
pub mod port {
    /// VXLAN (RFC 7348 §5).
    pub const VXLAN: u16 = 4789;
    /// VXLAN on the Linux kernel's historical default port.
    pub const VXLAN_LINUX: u16 = 8472;
    /// VXLAN-GPE (draft-ietf-nvo3-vxlan-gpe-12 §3.1).
    pub const VXLAN_GPE: u16 = 4790;
    /// Geneve (RFC 8926 §3.3).
    pub const GENEVE: u16 = 6081;
    /// GTP-U (3GPP TS 29.281 §4.4.2.3).
    pub const GTP_U: u16 = 2152;
    /// Teredo (RFC 4380 §4).
    pub const TEREDO: u16 = 3544;
    /// MPLS-in-UDP (RFC 7510 §3).
    pub const MPLS_UDP: u16 = 6635;
}

/// A view of a UDP header.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    buf: &'a [u8],
}

impl<'a> Packet<'a> {
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, HEADER_LEN)?;
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
    pub fn length(&self) -> u16 {
        be16(&self.buf[field::LENGTH])
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(&self.buf[field::CHECKSUM])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let u = Packet::new_checked(&[0, 53, 0x12, 0xb5, 0, 20, 0xff, 0xee]).unwrap();
        assert_eq!((u.source_port(), u.destination_port()), (53, 4789));
        assert_eq!((u.length(), u.checksum()), (20, 0xffee));
        assert!(Packet::new_checked(&[0; 7]).is_err());
    }
}
