//! `Cursor`: a bounds-checked reader over a byte slice.
//!
//! Every read returns `None` past the end instead of panicking, so the parsers built on it
//! hold the crate's contract (no panic on any input) by construction: a truncated field is
//! a `None` that the parser turns into a named event.

#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub(crate) fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn u24(&mut self) -> Option<u32> {
        self.take(3).map(|b| u32::from_be_bytes([0, b[0], b[1], b[2]]))
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A vector with a one-byte length prefix (RFC 8446 §3.4 `<0..2^8-1>`).
    pub(crate) fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }

    /// A vector with a two-byte length prefix (`<0..2^16-1>`).
    pub(crate) fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }

    /// A QUIC variable-length integer (RFC 9000 §16): the two top bits of the first byte
    /// give its length, 1, 2, 4 or 8 bytes.
    pub(crate) fn varint(&mut self) -> Option<u64> {
        let first = *self.buf.get(self.pos)?;
        let len = 1usize << (first >> 6);
        let b = self.take(len)?;
        let mut v = u64::from(b[0] & 0x3f);
        for &x in &b[1..] {
            v = (v << 8) | u64::from(x);
        }
        Some(v)
    }
}

/// `String::from_utf8_lossy(b).into_owned()`, through `from_utf8`'s word-at-a-time check
/// when `b` is valid UTF-8 (almost always: names, hosts, user agents).
pub(crate) fn lossy_string(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// Big-endian u16 pairs of a byte slice; an odd trailing byte is ignored.
pub(crate) fn u16s(b: &[u8]) -> impl Iterator<Item = u16> + '_ {
    b.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_the_end() {
        let mut c = Cursor::new(&[1, 2, 3]);
        assert_eq!(c.u16(), Some(0x0102));
        assert_eq!(c.u16(), None);
        assert_eq!(c.u8(), Some(3));
        assert!(c.is_empty());
        assert_eq!(c.take(usize::MAX), None);
    }

    #[test]
    fn varints_of_rfc9000_appendix_a1() {
        // RFC 9000 §A.1's examples.
        let cases: [(&[u8], u64); 4] = [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (b, v) in cases {
            assert_eq!(Cursor::new(b).varint(), Some(v));
        }
        assert_eq!(Cursor::new(&[0x7b]).varint(), None);
    }
}
