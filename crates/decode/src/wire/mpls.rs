//! MPLS label stack entries (RFC 3032 §2.1).

use super::{be32, need, Result};

/// Byte ranges of a label stack entry.
pub mod field {
    use crate::wire::Field;
    /// Label (20 bits), traffic class (3), bottom of stack (1), TTL (8).
    pub const ENTRY: Field = 0..4;
}

/// Length of one label stack entry.
pub const ENTRY_LEN: usize = 4;

/// A view of one label stack entry.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    buf: &'a [u8],
}

impl<'a> Entry<'a> {
    #[inline]
    pub fn new_checked(buf: &'a [u8]) -> Result<Self> {
        need(buf, ENTRY_LEN)?;
        Ok(Entry { buf })
    }

    #[inline]
    fn raw(&self) -> u32 {
        be32(&self.buf[field::ENTRY])
    }

    #[inline]
    pub fn label(&self) -> u32 {
        self.raw() >> 12
    }

    /// Traffic class (formerly EXP, RFC 5462).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        ((self.raw() >> 9) & 7) as u8
    }

    /// Bottom of stack: this is the last entry.
    #[inline]
    pub fn bottom_of_stack(&self) -> bool {
        self.raw() & 0x100 != 0
    }

    #[inline]
    pub fn ttl(&self) -> u8 {
        self.raw() as u8
    }
}

/// Length of the pseudowire control word (RFC 4385 §3) that may follow the stack; its
/// first nibble is 0, which tells it from an IP header.
pub const CONTROL_WORD_LEN: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry() {
        // label 16, TC 5, S=1, TTL 64
        let e = Entry::new_checked(&[0x00, 0x01, 0x0b, 0x40]).unwrap();
        assert_eq!(e.label(), 16);
        assert_eq!(e.traffic_class(), 5);
        assert!(e.bottom_of_stack());
        assert_eq!(e.ttl(), 64);
        assert!(Entry::new_checked(&[0; 3]).is_err());
    }
}
