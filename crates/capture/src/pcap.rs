//! Classic pcap: a 24-byte file header, then records of a 16-byte header and the
//! captured bytes (<https://datatracker.ietf.org/doc/draft-ietf-opsawg-pcap/>).
//!
//! Handled: microsecond (`0xa1b2c3d4`) and nanosecond (`0xa1b23c4d`) magic in both
//! byte orders, and the old Kuznetzov "modified pcap" (`0xa1b2cd34`, µs, 24-byte
//! record headers) that some Linux tools wrote. The link type is the low 16 bits
//! of the header's network field (the upper bits carry FCS information).
//! `thiszone` is ignored, as libpcap does (it is always 0 in practice).

use crate::format::{rd16, rd32, Step, MAX_RECORD_LEN};
use crate::{FrameMeta, LinkType};

/// Length of the pcap file header.
pub(crate) const FILE_HEADER_LEN: usize = 24;

/// The largest snapshot length libpcap uses for ordinary link types; a captured
/// length beyond this (plus [`CAPLEN_SLACK`], or the file's own snaplen if that is
/// larger) means the record header is garbage.
pub(crate) const MAX_SANE_CAPLEN: u32 = 262_144;

/// Room above the sane maximum, because some writers exceed their snaplen a
/// little (offloaded super-frames, pseudo-headers added after the snaplen cut).
pub(crate) const CAPLEN_SLACK: u32 = 65_536;

/// What the file header said, which is all a pcap record needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PcapFormat {
    be: bool,
    /// Nanoseconds per unit of the fractional timestamp field: 1000 or 1.
    frac_ns: u64,
    /// 16, or 24 for the modified format.
    rec_hdr_len: usize,
    link: LinkType,
    /// Captured lengths above this are corruption.
    max_caplen: u32,
    /// The header's version, for messages.
    pub(crate) version: (u16, u16),
    /// The header's snapshot length.
    pub(crate) snaplen: u32,
}

impl PcapFormat {
    /// `Ok(None)` if `head` does not start with a pcap magic number; an error if it
    /// does but is too short for the file header.
    pub(crate) fn sniff(head: &[u8]) -> Result<Option<PcapFormat>, String> {
        let (be, frac_ns, rec_hdr_len) = match head.get(..4) {
            Some([0xd4, 0xc3, 0xb2, 0xa1]) => (false, 1000, 16),
            Some([0xa1, 0xb2, 0xc3, 0xd4]) => (true, 1000, 16),
            Some([0x4d, 0x3c, 0xb2, 0xa1]) => (false, 1, 16),
            Some([0xa1, 0xb2, 0x3c, 0x4d]) => (true, 1, 16),
            Some([0x34, 0xcd, 0xb2, 0xa1]) => (false, 1000, 24),
            Some([0xa1, 0xb2, 0xcd, 0x34]) => (true, 1000, 24),
            _ => return Ok(None),
        };
        if head.len() < FILE_HEADER_LEN {
            return Err(format!("too short for a pcap file header ({} of {FILE_HEADER_LEN} bytes)", head.len()));
        }
        let snaplen = rd32(head, 16, be);
        let network = rd32(head, 20, be);
        let limit = snaplen.clamp(MAX_SANE_CAPLEN, (MAX_RECORD_LEN / 2) as u32);
        Ok(Some(PcapFormat {
            be,
            frac_ns,
            rec_hdr_len,
            link: LinkType((network & 0xffff) as u16),
            max_caplen: limit + CAPLEN_SLACK,
            version: (rd16(head, 4, be), rd16(head, 6, be)),
            snaplen,
        }))
    }

    pub(crate) fn is_nanos(&self) -> bool {
        self.frac_ns == 1
    }

    /// The link type of every frame of the file.
    #[cfg(test)]
    pub(crate) fn link(&self) -> LinkType {
        self.link
    }

    /// One record at `buf[pos]`. The hot path of the whole analyzer: a bounds
    /// check, four loads and a multiply.
    #[inline]
    pub(crate) fn step(&self, buf: &[u8], pos: usize) -> Step {
        let rest = match buf.get(pos..) {
            Some(r) if !r.is_empty() => r,
            _ => return Step::End,
        };
        let Some(h) = rest.get(..self.rec_hdr_len) else {
            return Step::Short(self.rec_hdr_len);
        };
        let be = self.be;
        let caplen = rd32(h, 8, be);
        if caplen > self.max_caplen {
            return Step::Corrupt(format!(
                "captured length {caplen} is beyond any sane snapshot length ({})",
                self.max_caplen
            ));
        }
        let len = self.rec_hdr_len + caplen as usize;
        if rest.len() < len {
            return Step::Short(len);
        }
        let sec = u64::from(rd32(h, 0, be));
        let frac = u64::from(rd32(h, 4, be));
        // At most (2^32-1)·10^9 + (2^32-1)·1000 < 2^64: no overflow even when a
        // damaged file has a fraction beyond one second.
        let ts_ns = sec * 1_000_000_000 + frac * self.frac_ns;
        Step::Frame(
            FrameMeta {
                ts_ns,
                orig_len: rd32(h, 12, be),
                caplen,
                offset: (pos + self.rec_hdr_len) as u64,
                link: self.link,
            },
            len,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{pcap_bytes, PcapKind};

    fn parse_all(b: &[u8]) -> (Vec<FrameMeta>, Step) {
        let (f, hdr) = crate::format::sniff(b).unwrap();
        let crate::format::Format::Pcap(p) = f else { panic!("not pcap") };
        let mut pos = hdr;
        let mut out = Vec::new();
        loop {
            match p.step(b, pos) {
                Step::Frame(m, len) => {
                    out.push(m);
                    pos += len;
                }
                other => return (out, other),
            }
        }
    }

    #[test]
    fn header_fields() {
        let b = pcap_bytes(PcapKind::Micro, true, 0x0400_0071, 96, &[]);
        let Ok((crate::format::Format::Pcap(p), 24)) = crate::format::sniff(&b) else { panic!() };
        // FCS bits in the upper half of the network field are dropped.
        assert_eq!(p.link(), LinkType::LINUX_SLL);
        assert_eq!(p.version, (2, 4));
        assert_eq!(p.snaplen, 96);
        assert!(!p.is_nanos());
        assert_eq!(p.max_caplen, MAX_SANE_CAPLEN + CAPLEN_SLACK);
    }

    #[test]
    fn max_timestamp_does_not_overflow() {
        let b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &[(u32::MAX, 999_999, 4, vec![1, 2, 3, 4])]);
        let (frames, end) = parse_all(&b);
        assert_eq!(end, Step::End);
        assert_eq!(frames[0].ts_ns, 4_294_967_295_999_999_000);
        // A damaged fraction (beyond a second) still cannot overflow.
        let b = pcap_bytes(PcapKind::Nano, false, 1, 65535, &[(u32::MAX, u32::MAX, 0, vec![])]);
        let (frames, _) = parse_all(&b);
        assert_eq!(frames[0].ts_ns, 4_294_967_295 * 1_000_000_000 + 4_294_967_295);
    }

    #[test]
    fn modified_pcap_has_24_byte_record_headers() {
        let b = pcap_bytes(PcapKind::Modified, false, 1, 65535, &[(10, 5, 3, vec![7, 8, 9]), (11, 6, 2, vec![5, 6])]);
        let (frames, end) = parse_all(&b);
        assert_eq!(end, Step::End);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].offset, 24 + 24);
        assert_eq!(frames[1].offset, 24 + 24 + 3 + 24);
        assert_eq!(frames[1].ts_ns, 11_000_006_000);
    }

    #[test]
    fn insane_caplen_is_corrupt_and_short_data_is_short() {
        let mut b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &[(1, 0, 4, vec![1, 2, 3, 4])]);
        // Second record header claiming 1 MB.
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&1_000_000u32.to_le_bytes());
        b.extend_from_slice(&1_000_000u32.to_le_bytes());
        let (frames, end) = parse_all(&b);
        assert_eq!(frames.len(), 1);
        assert!(matches!(end, Step::Corrupt(ref s) if s.contains("1000000")), "{end:?}");

        // A sane caplen whose data runs past the end: short, needing header + data.
        let mut b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &[(1, 0, 4, vec![1, 2, 3, 4])]);
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&100u32.to_le_bytes());
        b.extend_from_slice(&100u32.to_le_bytes());
        b.extend_from_slice(&[0; 10]);
        let (frames, end) = parse_all(&b);
        assert_eq!(frames.len(), 1);
        assert_eq!(end, Step::Short(116));

        // A file's larger snaplen raises the limit (capped).
        let b = pcap_bytes(PcapKind::Micro, false, 1, 1 << 20, &[]);
        let Ok((crate::format::Format::Pcap(p), _)) = crate::format::sniff(&b) else { panic!() };
        assert_eq!(p.max_caplen, (1 << 20) + CAPLEN_SLACK);
        let b = pcap_bytes(PcapKind::Micro, false, 1, u32::MAX, &[]);
        let Ok((crate::format::Format::Pcap(p), _)) = crate::format::sniff(&b) else { panic!() };
        assert_eq!(p.max_caplen, (8 << 20) + CAPLEN_SLACK);
    }
}
