//! pcapng: a sequence of blocks (type, length, body, length again)
//! (<https://datatracker.ietf.org/doc/draft-ietf-opsawg-pcapng/>).
//!
//! Used: section header blocks (byte order per section; a new section forgets the
//! interfaces of the previous one), interface description blocks (link type,
//! snaplen, `if_tsresol`, `if_tsoffset`), enhanced packet blocks, simple packet
//! blocks (interface 0, no timestamp: the previous frame's is used) and the
//! obsolete packet block (type 2). Every other block is skipped and counted.
//!
//! Damage: a block length below 12, not a multiple of 4, implausibly large, or
//! whose trailing copy differs means the framing is lost ([`Step::Corrupt`]). A
//! packet block that is well framed but inconsistent inside (captured length
//! beyond the block, an interface no IDB declared) is skipped alone
//! ([`Step::Bad`]), since the next block can still be found.

use crate::format::{rd16, rd32, Step, MAX_RECORD_LEN};
use crate::{FrameMeta, LinkType};

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const OPB: u32 = 2;
const SPB: u32 = 3;
const EPB: u32 = 6;

/// The byte-order magic of a section header, as bytes in the file.
const BOM_BE: [u8; 4] = [0x1a, 0x2b, 0x3c, 0x4d];
const BOM_LE: [u8; 4] = [0x4d, 0x3c, 0x2b, 0x1a];

const OPT_ENDOFOPT: u16 = 0;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// Converts an interface's raw 64-bit timestamps to nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TsConv {
    scale: Scale,
    /// `if_tsoffset` in nanoseconds (seconds in the file; signed).
    offset_ns: i128,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scale {
    /// Units of 10^-k s with k <= 9: multiply.
    Mul(u64),
    /// Units of 10^-k s with k > 9: divide.
    Div(u128),
    /// Units of 2^-k s.
    Bin(u32),
}

impl Default for TsConv {
    /// Microseconds, the pcapng default when `if_tsresol` is absent.
    fn default() -> Self {
        TsConv::from_tsresol(6, 0)
    }
}

impl TsConv {
    /// From the `if_tsresol` byte (high bit set: a power of 2, else of 10) and the
    /// `if_tsoffset` seconds.
    pub(crate) fn from_tsresol(tsresol: u8, offset_s: i64) -> TsConv {
        let k = u32::from(tsresol & 0x7f);
        let scale = if tsresol & 0x80 != 0 {
            Scale::Bin(k)
        } else if k <= 9 {
            Scale::Mul(10u64.pow(9 - k))
        } else {
            // 10^38 is the largest power of ten in a u128; any finer unit makes
            // every 64-bit timestamp round to 0 anyway.
            Scale::Div(10u128.checked_pow(k - 9).unwrap_or(u128::MAX))
        };
        TsConv { scale, offset_ns: i128::from(offset_s) * 1_000_000_000 }
    }

    /// Nanoseconds since the epoch, saturating at 0 and `u64::MAX` (a damaged or
    /// absurd resolution must not wrap around).
    #[inline]
    pub(crate) fn to_ns(self, raw: u64) -> u64 {
        let raw = u128::from(raw);
        // raw < 2^64 and factors <= 10^9 < 2^30: every product fits in 2^94.
        let ns = match self.scale {
            Scale::Mul(m) => raw * u128::from(m),
            Scale::Div(d) => raw / d,
            Scale::Bin(k) => (raw * 1_000_000_000) >> k,
        };
        let ns = ns as i128 + self.offset_ns;
        ns.clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// An interface from an interface description block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Iface {
    pub(crate) link: LinkType,
    /// 0 means no limit.
    pub(crate) snaplen: u32,
    pub(crate) ts: TsConv,
}

/// The state of a pcapng input: the current section's byte order and interfaces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NgState {
    be: bool,
    pub(crate) ifaces: Vec<Iface>,
}

impl NgState {
    /// `Ok(None)` if `head` does not start like a section header block; an error if
    /// it does but cannot be one.
    pub(crate) fn sniff(head: &[u8]) -> Result<Option<NgState>, String> {
        if !head.starts_with(&SHB.to_be_bytes()) {
            return Ok(None);
        }
        if head.len() < 28 {
            return Err(format!("too short for a pcapng section header ({} of 28 bytes)", head.len()));
        }
        let be = match head.get(8..12) {
            Some(b) if b == BOM_BE => true,
            Some(b) if b == BOM_LE => false,
            _ => return Err("pcapng section header with a bad byte-order magic".into()),
        };
        let major = rd16(head, 12, be);
        if major != 1 {
            return Err(format!("pcapng version {major} is not supported"));
        }
        Ok(Some(NgState { be, ifaces: Vec::new() }))
    }

    /// One block at `buf[pos]`.
    #[inline]
    pub(crate) fn step(&mut self, buf: &[u8], pos: usize, last_ts: u64) -> Step {
        let rest = match buf.get(pos..) {
            Some(r) if !r.is_empty() => r,
            _ => return Step::End,
        };
        if rest.len() < 12 {
            return Step::Short(12);
        }
        // A section header's type reads the same in both byte orders; its own
        // byte-order magic says how to read the rest (it may differ from the
        // previous section's).
        let be = if rest.starts_with(&SHB.to_be_bytes()) {
            match rest.get(8..12) {
                Some(b) if b == BOM_BE => true,
                Some(b) if b == BOM_LE => false,
                _ => return Step::Corrupt("section header with a bad byte-order magic".into()),
            }
        } else {
            self.be
        };
        let btype = rd32(rest, 0, be);
        let blen = rd32(rest, 4, be) as usize;
        if blen < 12 || blen & 3 != 0 {
            return Step::Corrupt(format!("block length {blen} (type {btype:#x}) is not a valid pcapng block length"));
        }
        if blen > MAX_RECORD_LEN {
            return Step::Corrupt(format!("block length {blen} (type {btype:#x}) is implausibly large"));
        }
        let Some(block) = rest.get(..blen) else {
            return Step::Short(blen);
        };
        let trailer = rd32(block, blen - 4, be) as usize;
        if trailer != blen {
            return Step::Corrupt(format!(
                "block length {blen} (type {btype:#x}) does not match its trailing copy {trailer}"
            ));
        }
        let body = block.get(8..blen - 4).unwrap_or(&[]);
        match btype {
            SHB => {
                if body.len() < 16 {
                    return Step::Corrupt(format!("section header block too short ({blen} bytes)"));
                }
                let major = rd16(body, 4, be);
                if major != 1 {
                    return Step::Corrupt(format!("pcapng version {major} is not supported"));
                }
                self.be = be;
                self.ifaces.clear();
                Step::Meta(blen)
            }
            IDB => {
                if body.len() < 8 {
                    // Without it, interface numbers of later packets are off by one.
                    return Step::Corrupt(format!("interface description block too short ({blen} bytes)"));
                }
                let link = LinkType(rd16(body, 0, be));
                let snaplen = rd32(body, 4, be);
                let (mut tsresol, mut tsoffset) = (6u8, 0i64);
                for (code, val) in Options::new(body.get(8..).unwrap_or(&[]), be) {
                    match (code, val) {
                        (OPT_IF_TSRESOL, &[r, ..]) => tsresol = r,
                        (OPT_IF_TSOFFSET, &[a, b, c, d, e, f, g, h, ..]) => {
                            let v = [a, b, c, d, e, f, g, h];
                            tsoffset = if be { i64::from_be_bytes(v) } else { i64::from_le_bytes(v) };
                        }
                        _ => {}
                    }
                }
                self.ifaces.push(Iface { link, snaplen, ts: TsConv::from_tsresol(tsresol, tsoffset) });
                Step::Meta(blen)
            }
            EPB | OPB => {
                if body.len() < 20 {
                    return Step::Bad(blen, format!("packet block too short ({blen} bytes)"));
                }
                let iface_id = if btype == EPB { rd32(body, 0, be) } else { u32::from(rd16(body, 0, be)) };
                let Some(iface) = self.ifaces.get(iface_id as usize) else {
                    return Step::Bad(
                        blen,
                        format!("packet for interface {iface_id}, which no interface block described"),
                    );
                };
                let caplen = rd32(body, 12, be);
                if caplen as usize > body.len() - 20 {
                    return Step::Bad(
                        blen,
                        format!("captured length {caplen} is beyond the block ({} bytes of room)", body.len() - 20),
                    );
                }
                let raw = (u64::from(rd32(body, 4, be)) << 32) | u64::from(rd32(body, 8, be));
                Step::Frame(
                    FrameMeta {
                        ts_ns: iface.ts.to_ns(raw),
                        orig_len: rd32(body, 16, be),
                        caplen,
                        offset: (pos + 28) as u64,
                        link: iface.link,
                    },
                    blen,
                )
            }
            SPB => {
                if body.len() < 4 {
                    return Step::Bad(blen, format!("simple packet block too short ({blen} bytes)"));
                }
                let Some(iface) = self.ifaces.first() else {
                    return Step::Bad(blen, "simple packet block before any interface block".to_string());
                };
                let orig_len = rd32(body, 0, be);
                let room = (body.len() - 4) as u32;
                let snap = if iface.snaplen == 0 { u32::MAX } else { iface.snaplen };
                Step::Frame(
                    FrameMeta {
                        ts_ns: last_ts,
                        orig_len,
                        caplen: orig_len.min(snap).min(room),
                        offset: (pos + 12) as u64,
                        link: iface.link,
                    },
                    blen,
                )
            }
            _ => Step::Skipped(blen),
        }
    }
}

/// Iterates over the options of a block body: (code, value without padding).
/// Stops at `opt_endofopt` or at the first option that does not fit.
struct Options<'a> {
    b: &'a [u8],
    be: bool,
}

impl<'a> Options<'a> {
    fn new(b: &'a [u8], be: bool) -> Self {
        Options { b, be }
    }
}

impl<'a> Iterator for Options<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let code = rd16(self.b, 0, self.be);
        let len = usize::from(rd16(self.b, 2, self.be));
        if self.b.len() < 4 || code == OPT_ENDOFOPT {
            return None;
        }
        let val = self.b.get(4..4 + len)?;
        let padded = 4 + len.div_ceil(4) * 4;
        self.b = self.b.get(padded..).unwrap_or(&[]);
        Some((code, val))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsresol_conversions() {
        let us = TsConv::default();
        assert_eq!(us.to_ns(1_700_000_000_123_456), 1_700_000_000_123_456_000);
        let ns = TsConv::from_tsresol(9, 0);
        assert_eq!(ns.to_ns(1_700_000_000_123_456_789), 1_700_000_000_123_456_789);
        let ms = TsConv::from_tsresol(3, 0);
        assert_eq!(ms.to_ns(1_500), 1_500_000_000);
        let ps = TsConv::from_tsresol(12, 0);
        assert_eq!(ps.to_ns(1_234_567), 1_234);
        // 2^-10 s units: 1024 units = 1 s; 1 unit = 976562.5 ns, rounded down.
        let bin = TsConv::from_tsresol(0x80 | 10, 0);
        assert_eq!(bin.to_ns(1024), 1_000_000_000);
        assert_eq!(bin.to_ns(1), 976_562);
        assert_eq!(bin.to_ns(3 * 1024 + 512), 3_500_000_000);
        // 2^-30 s units, as some Windows tools write.
        let bin30 = TsConv::from_tsresol(0x80 | 30, 0);
        assert_eq!(bin30.to_ns(5 << 30), 5_000_000_000);
        // Offsets, both signs; saturation instead of wrapping.
        let off = TsConv::from_tsresol(6, 100);
        assert_eq!(off.to_ns(1), 100_000_001_000);
        let neg = TsConv::from_tsresol(6, -100);
        assert_eq!(neg.to_ns(1), 0);
        assert_eq!(neg.to_ns(200_000_000), 100_000_000_000);
        assert_eq!(TsConv::from_tsresol(0, 0).to_ns(u64::MAX), u64::MAX);
        // Absurd resolutions do not panic.
        assert_eq!(TsConv::from_tsresol(127, 0).to_ns(u64::MAX), 0);
        assert_eq!(TsConv::from_tsresol(0xff, 0).to_ns(u64::MAX), 0);
        assert_eq!(TsConv::from_tsresol(0x80, i64::MAX).to_ns(u64::MAX), u64::MAX);
    }

    #[test]
    fn options_iterator_is_robust() {
        // tsresol=9, a 3-byte option padded to 4, end.
        let b = [9, 0, 1, 0, 9, 0, 0, 0, 2, 0, 3, 0, 1, 2, 3, 0, 0, 0, 0, 0, 99, 0, 0, 0];
        let v: Vec<_> = Options::new(&b, false).collect();
        assert_eq!(v, vec![(9u16, &[9u8][..]), (2, &[1, 2, 3][..])]);
        // An option whose length runs past the body ends the list.
        let b = [9, 0, 200, 0, 9];
        assert_eq!(Options::new(&b, false).count(), 0);
        assert_eq!(Options::new(&[], true).count(), 0);
        assert_eq!(Options::new(&[1, 0, 0], false).count(), 0);
        // Missing end-of-options is fine.
        let b = [0, 9, 0, 1, 9, 0, 0, 0];
        assert_eq!(Options::new(&b, true).collect::<Vec<_>>(), vec![(9u16, &[9u8][..])]);
    }
}
