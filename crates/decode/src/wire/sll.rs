//! Linux "cooked" capture headers: LINKTYPE_LINUX_SLL (v1) and LINKTYPE_LINUX_SLL2
//! (see pcap-linktype(7) and the tcpdump.org link-layer header type pages).

use super::{be16, be32, need, Result};

/// Byte ranges of the SLL (v1) header.
pub mod field {
    use crate::wire::Field;
    pub const PACKET_TYPE: Field = 0..2;
    pub const ARPHRD_TYPE: Field = 2..4;
    pub const LL_ADDR_LEN: Field = 4..6;
    pub const LL_ADDR: Field = 6..14;
    /// An EtherType for most device types.
    pub const PROTOCOL: Field = 14..16;
}

/// Length of the SLL header.
pub const HEADER_LEN: usize = 16;

/// A view of an SLL header.
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

    /// 0 to us, 1 broadcast, 2 multicast, 3 to someone else, 4 sent by us.
    #[inline]
    pub fn packet_type(&self) -> u16 {
        be16(&self.buf[field::PACKET_TYPE])
    }

    #[inline]
    pub fn arphrd_type(&self) -> u16 {
        be16(&self.buf[field::ARPHRD_TYPE])
    }

    #[inline]
    pub fn protocol(&self) -> u16 {
        be16(&self.buf[field::PROTOCOL])
    }
}

/// Byte ranges of the SLL2 header.
pub mod field2 {
    use crate::wire::Field;
    pub const PROTOCOL: Field = 0..2;
    pub const RESERVED: Field = 2..4;
    pub const INTERFACE_INDEX: Field = 4..8;
    pub const ARPHRD_TYPE: Field = 8..10;
    pub const PACKET_TYPE: usize = 10;
    pub const LL_ADDR_LEN: usize = 11;
    pub const LL_ADDR: Field = 12..20;
}

/// Length of the SLL2 header.
pub const HEADER2_LEN: usize = 20;

/// A view of an SLL2 header.
#[derive(Clone, Copy, Debug)]
pub struct Header2<'a> {
    buf: &'a [u8],
}

impl<'a> Header2<'a> {
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, HEADER2_LEN)?;
        Ok(Header2 { buf })
    }

    #[inline]
    pub fn protocol(&self) -> u16 {
        be16(&self.buf[field2::PROTOCOL])
    }

    #[inline]
    pub fn interface_index(&self) -> u32 {
        be32(&self.buf[field2::INTERFACE_INDEX])
    }

    #[inline]
    pub fn arphrd_type(&self) -> u16 {
        be16(&self.buf[field2::ARPHRD_TYPE])
    }

    #[inline]
    pub fn packet_type(&self) -> u8 {
        self.buf[field2::PACKET_TYPE]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let mut b = [0u8; 20];
        b[1] = 4;
        b[3] = 1;
        b[14] = 0x86;
        b[15] = 0xdd;
        let h = Header::new_checked(&b[..16]).unwrap();
        assert_eq!((h.packet_type(), h.arphrd_type(), h.protocol()), (4, 1, 0x86dd));
        assert!(Header::new_checked(&b[..15]).is_err());
        let mut c = [0u8; 20];
        c[0] = 0x08;
        c[7] = 3;
        c[9] = 1;
        c[10] = 4;
        let h = Header2::new_checked(&c).unwrap();
        assert_eq!((h.protocol(), h.interface_index()), (0x0800, 3));
        assert_eq!((h.arphrd_type(), h.packet_type()), (1, 4));
        assert!(Header2::new_checked(&c[..19]).is_err());
    }
}
