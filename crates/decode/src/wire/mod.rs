//! Zero-copy header views, in the smoltcp style.
//!
//! One module per protocol. Each view wraps a byte slice that starts at the header;
//! `new_checked` verifies that every byte an accessor reads is present, so that **after
//! `new_checked` succeeds, no accessor panics** (the contract every view here keeps).
//! Accessors are named after the fields of the RFC that defines the header, and each
//! module has a `field` module with the byte ranges of the fixed fields.
//!
//! The views only cover what the decoder needs: they do not emit packets, verify
//! checksums or interpret options beyond what locating the next header requires.

pub mod ethernet;
pub mod geneve;
pub mod gre;
pub mod gtpu;
pub mod icmp;
pub mod ieee80211;
pub mod ipv4;
pub mod ipv6;
pub mod llc;
pub mod mpls;
pub mod null;
pub mod pppoe;
pub mod sll;
pub mod tcp;
pub mod teredo;
pub mod udp;
pub mod vxlan;

/// A range of bytes in a header.
pub type Field = core::ops::Range<usize>;

/// Why a view could not be made over some bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The bytes end before the header does.
    Truncated,
    /// A field of the header has a value that makes it unusable (a length below the
    /// minimum, a version that is not the expected one...).
    Malformed,
}

/// Result of `new_checked`.
pub type Result<T> = core::result::Result<T, Error>;

/// Reads a big-endian `u16` from the first two bytes of `b` (callers pass a slice of a
/// length already checked).
#[inline(always)]
pub(crate) fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// Reads a big-endian `u32` from the first four bytes of `b`.
#[inline(always)]
pub(crate) fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Reads a big-endian 24-bit value from the first three bytes of `b`.
#[inline(always)]
pub(crate) fn be24(b: &[u8]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

/// `Ok(())` when `buf` holds at least `len` bytes.
#[inline(always)]
pub(crate) fn need(buf: &[u8], len: usize) -> Result<()> {
    if buf.len() >= len {
        Ok(())
    } else {
        Err(Error::Truncated)
    }
}
