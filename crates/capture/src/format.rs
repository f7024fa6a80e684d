//! Format detection, and the one-record step that both formats share.
//!
//! A reader ([`crate::file`]) holds a buffer (an mmap'd file or a block of a stream)
//! and calls [`Format::step`] at a position: the step looks at one record (a pcap
//! record or a pcapng block), and says what it is and how long it is, without
//! copying anything. Steps are transactional: the format's state (pcapng sections
//! and interfaces) only changes when a whole record is there, so a stream reader
//! can retry the same position after reading more bytes.

use crate::pcap::PcapFormat;
use crate::pcapng::NgState;
use crate::FrameMeta;

/// How many bytes of an input [`sniff`] wants to see: a pcap file header (24) or
/// the smallest possible pcapng section header block (28).
pub(crate) const HEAD_LEN: usize = 28;

/// Block lengths (pcapng) and record lengths (pcap) above this are taken as
/// corruption rather than as a truncated record: no real capture has a 16 MiB
/// frame, and a stream reader must not be made to buffer an arbitrary length.
pub(crate) const MAX_RECORD_LEN: usize = 16 << 20;

/// What one step over a record found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// A frame: its metadata (offset relative to the buffer), and the length of the
    /// whole record, header included.
    Frame(FrameMeta, usize),
    /// A record without a frame that this reader uses (pcapng section header or
    /// interface description), consumed.
    Meta(usize),
    /// A pcapng block of a type this reader does not use, consumed.
    Skipped(usize),
    /// A packet block whose content is inconsistent (captured length beyond the
    /// block, unknown interface). The framing is intact: skip it and go on.
    Bad(usize, String),
    /// No bytes left at this position.
    End,
    /// The record here needs this many bytes (from its start), more than there are.
    Short(usize),
    /// The record here is impossible: the framing is lost.
    Corrupt(String),
}

/// The per-input parsing state.
#[derive(Debug, Clone)]
pub(crate) enum Format {
    Pcap(PcapFormat),
    PcapNg(NgState),
}

impl Format {
    /// Looks at the record starting at `buf[pos]`. `last_ts` is the timestamp of
    /// the previous frame, for pcapng simple packet blocks, which carry none.
    #[inline]
    pub(crate) fn step(&mut self, buf: &[u8], pos: usize, last_ts: u64) -> Step {
        match self {
            Format::Pcap(p) => p.step(buf, pos),
            Format::PcapNg(ng) => ng.step(buf, pos, last_ts),
        }
    }

    /// A short name for messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Format::Pcap(p) if p.is_nanos() => "pcap (ns)",
            Format::Pcap(_) => "pcap",
            Format::PcapNg(_) => "pcapng",
        }
    }
}

/// Recognises a capture from its first bytes (`head`, at most [`HEAD_LEN`] needed;
/// shorter only if the input is shorter). Returns the format and the length of the
/// file header to skip (pcap: 24; pcapng: 0, since the section header block is
/// read as a block), or why this is not a capture.
pub(crate) fn sniff(head: &[u8]) -> Result<(Format, usize), String> {
    if head.len() < 4 {
        return Err(if head.is_empty() {
            "empty file".to_string()
        } else {
            format!("too short ({} bytes)", head.len())
        });
    }
    if let Some(fmt) = PcapFormat::sniff(head)? {
        return Ok((Format::Pcap(fmt), crate::pcap::FILE_HEADER_LEN));
    }
    if let Some(ng) = NgState::sniff(head)? {
        return Ok((Format::PcapNg(ng), 0));
    }
    let m = rd32(head, 0, true);
    let hint = if head.starts_with(&[0x1f, 0x8b]) {
        " (gzip-compressed? decompress it first)"
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) || head.starts_with(&[0xfd, b'7', b'z', b'X']) {
        " (compressed? decompress it first)"
    } else if head.iter().all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace()) {
        " (looks like text)"
    } else {
        ""
    };
    Err(format!("unknown magic number 0x{m:08x}{hint}"))
}

/// Reads a `u16` at `off` in the given byte order; 0 if out of range (callers
/// check lengths first, so that never happens, but it must not panic either).
#[inline(always)]
pub(crate) fn rd16(b: &[u8], off: usize, be: bool) -> u16 {
    match b.get(off..off.wrapping_add(2)) {
        Some(&[x, y]) => {
            if be {
                u16::from_be_bytes([x, y])
            } else {
                u16::from_le_bytes([x, y])
            }
        }
        _ => 0,
    }
}

/// Reads a `u32` at `off` in the given byte order; 0 if out of range.
#[inline(always)]
pub(crate) fn rd32(b: &[u8], off: usize, be: bool) -> u32 {
    match b.get(off..off.wrapping_add(4)) {
        Some(&[w, x, y, z]) => {
            if be {
                u32::from_be_bytes([w, x, y, z])
            } else {
                u32::from_le_bytes([w, x, y, z])
            }
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff_rejects_non_captures_with_reasons() {
        assert_eq!(sniff(b"").unwrap_err(), "empty file");
        assert_eq!(sniff(b"ab").unwrap_err(), "too short (2 bytes)");
        let e = sniff(b"hello world, this is text\n").unwrap_err();
        assert!(e.contains("0x68656c6c") && e.contains("text"), "{e}");
        let e = sniff(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0]).unwrap_err();
        assert!(e.contains("gzip"), "{e}");
        // Right magic, too short for the header.
        let e = sniff(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0]).unwrap_err();
        assert!(e.contains("too short"), "{e}");
        let e = sniff(&[0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0]).unwrap_err();
        assert!(e.contains("too short"), "{e}");
        // pcapng section header with a bad byte-order magic, or version 2.
        let mut shb = crate::testutil::Ng::new(false).bytes();
        assert!(matches!(sniff(&shb), Ok((Format::PcapNg(_), 0))));
        shb[12] = 2;
        assert_eq!(sniff(&shb).unwrap_err(), "pcapng version 2 is not supported");
        shb[8] = 0;
        assert!(sniff(&shb).unwrap_err().contains("byte-order magic"));
    }

    #[test]
    fn rd_out_of_range_is_zero() {
        assert_eq!(rd32(&[1, 2, 3], 0, false), 0);
        assert_eq!(rd32(&[1, 2, 3, 4], usize::MAX - 1, false), 0);
        assert_eq!(rd16(&[1, 2], 0, true), 0x0102);
        assert_eq!(rd32(&[1, 2, 3, 4], 0, true), 0x01020304);
        assert_eq!(rd32(&[1, 2, 3, 4], 0, false), 0x04030201);
    }
}
