//! Filters on capture files: a tcpdump-style expression and a packet count.
//!
//! [`FilteredSource`] wraps any [`PacketSource`] and keeps only the frames that a
//! classic BPF program accepts, then stops after the first N of them (`-c N`, after
//! filtering, as tcpdump counts). The expression is compiled by libpcap
//! ([`compile_filter`], the same compiler as for live sockets) once per link type
//! the input shows, so files of several link types are filtered each with its own
//! program, and the result is what `tcpdump -r FILE EXPR` keeps.
//!
//! The program runs in [`run_bpf`], a small interpreter written here rather than
//! libpcap's `pcap_offline_filter`/`bpf_filter` called through `dlopen`. Both are
//! interpreters of the same cost (a switch per instruction), but this one is safe
//! Rust on untrusted bytes: every packet load and scratch access is bounds-checked
//! (an out-of-bounds load rejects the packet, as the kernel and libpcap do), a jump
//! out of the program rejects instead of reading past it, and no `unsafe` call is
//! made per packet. libpcap is only needed to compile.

use crate::live::{compile_filter, BpfProgram};
use crate::{CaptureError, CaptureStats, Chunk, LinkType, PacketSource, Progress};

/// Runs the classic BPF program `insns` on a frame of `wire_len` bytes on the wire of
/// which `pkt` were captured, and returns its verdict: 0 rejects, anything else
/// accepts (the snap length the program asks for, which tapstat does not apply).
///
/// The semantics are libpcap's `bpf_filter`: loads beyond the captured bytes, a
/// division by zero, a scratch index beyond 16 or an unknown instruction return 0;
/// `len` is the wire length. Jumps only go forward, so the loop ends.
pub fn run_bpf(insns: &[libc::sock_filter], pkt: &[u8], wire_len: u32) -> u32 {
    let mut a: u32 = 0;
    let mut x: u32 = 0;
    let mut mem = [0u32; 16];
    let mut pc: usize = 0;
    let load = |off: u32, size: usize| -> Option<u32> {
        let start = off as usize;
        let b = pkt.get(start..start.checked_add(size)?)?;
        Some(b.iter().fold(0u32, |v, &byte| (v << 8) | byte as u32))
    };
    loop {
        let Some(i) = insns.get(pc) else { return 0 };
        pc += 1;
        let k = i.k;
        // The class is the low 3 bits; the rest depends on the class (bpf.h).
        match i.code {
            // BPF_LD|BPF_W/H/B|BPF_ABS
            0x20 | 0x28 | 0x30 => {
                let size = match i.code {
                    0x20 => 4,
                    0x28 => 2,
                    _ => 1,
                };
                match load(k, size) {
                    Some(v) => a = v,
                    None => return 0,
                }
            }
            // BPF_LD|BPF_W/H/B|BPF_IND
            0x40 | 0x48 | 0x50 => {
                let size = match i.code {
                    0x40 => 4,
                    0x48 => 2,
                    _ => 1,
                };
                match x.checked_add(k).and_then(|off| load(off, size)) {
                    Some(v) => a = v,
                    None => return 0,
                }
            }
            0x80 => a = wire_len, // BPF_LD|BPF_W|BPF_LEN
            0x81 => x = wire_len, // BPF_LDX|BPF_W|BPF_LEN
            0x00 => a = k,        // BPF_LD|BPF_IMM
            0x01 => x = k,        // BPF_LDX|BPF_IMM
            0x60 | 0x61 | 0x02 | 0x03 => {
                let Some(slot) = mem.get_mut(k as usize) else { return 0 };
                match i.code {
                    0x60 => a = *slot, // BPF_LD|BPF_MEM
                    0x61 => x = *slot, // BPF_LDX|BPF_MEM
                    0x02 => *slot = a, // BPF_ST
                    _ => *slot = x,    // BPF_STX
                }
            }
            // BPF_LDX|BPF_B|BPF_MSH: the IPv4 header length.
            0xb1 => match load(k, 1) {
                Some(v) => x = (v & 0xf) << 2,
                None => return 0,
            },
            // BPF_ALU: operation in bits 4..8, source (K or X) in bit 3.
            c if c & 0x07 == 0x04 => {
                let v = if c & 0x08 != 0 { x } else { k };
                a = match c & 0xf0 {
                    0x00 => a.wrapping_add(v),
                    0x10 => a.wrapping_sub(v),
                    0x20 => a.wrapping_mul(v),
                    0x30 => match a.checked_div(v) {
                        Some(q) => q,
                        None => return 0,
                    },
                    0x40 => a | v,
                    0x50 => a & v,
                    0x60 => a.checked_shl(v).unwrap_or(0),
                    0x70 => a.checked_shr(v).unwrap_or(0),
                    0x80 => a.wrapping_neg(),
                    0x90 => match a.checked_rem(v) {
                        Some(r) => r,
                        None => return 0,
                    },
                    0xa0 => a ^ v,
                    _ => return 0,
                };
            }
            0x05 => pc = pc.saturating_add(k as usize), // BPF_JMP|BPF_JA
            // BPF_JMP conditional: JEQ, JGT, JGE, JSET against K or X.
            c if c & 0x07 == 0x05 => {
                let v = if c & 0x08 != 0 { x } else { k };
                let taken = match c & 0xf0 {
                    0x10 => a == v,
                    0x20 => a > v,
                    0x30 => a >= v,
                    0x40 => a & v != 0,
                    _ => return 0,
                };
                pc += if taken { i.jt as usize } else { i.jf as usize };
            }
            0x06 => return k, // BPF_RET|BPF_K
            0x16 => return a, // BPF_RET|BPF_A
            0x07 => x = a,    // BPF_MISC|BPF_TAX
            0x87 => a = x,    // BPF_MISC|BPF_TXA
            _ => return 0,
        }
    }
}

/// A source that keeps the frames a filter accepts, and at most `limit` of them.
pub struct FilteredSource<S> {
    inner: S,
    expr: Option<String>,
    /// Programs compiled so far, one per link type met (few: a linear search).
    programs: Vec<(LinkType, BpfProgram)>,
    /// Frames still to deliver (`-c N`); `None` without a limit.
    left: Option<u64>,
    /// Frames and wire bytes the filter rejected.
    rejected: u64,
    rejected_bytes: u64,
    /// Frames and wire bytes read but not delivered because the limit was reached.
    beyond: u64,
    beyond_bytes: u64,
}

impl<S: PacketSource> FilteredSource<S> {
    /// Wraps `inner`: `expr` (tcpdump syntax) selects frames, `limit` stops after that
    /// many selected frames. The expression is checked at once (an invalid one is an
    /// error before any packet is read): it must compile for one of `check_links` at
    /// least, since some expressions hold for some link types only (`vlan` is no
    /// expression on raw IP). It is compiled again for each link type the input
    /// shows, and one that fails then stops the run with the error.
    pub fn new(
        inner: S,
        expr: Option<&str>,
        limit: Option<u64>,
        check_links: &[LinkType],
    ) -> Result<Self, CaptureError> {
        let mut s = FilteredSource {
            inner,
            expr: expr.map(str::to_string),
            programs: Vec::new(),
            left: limit,
            rejected: 0,
            rejected_bytes: 0,
            beyond: 0,
            beyond_bytes: 0,
        };
        if s.expr.is_some() {
            let mut first_err = None;
            for &link in check_links {
                match s.program(link) {
                    Ok(_) => return Ok(s),
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
        }
        Ok(s)
    }

    fn program(&mut self, link: LinkType) -> Result<usize, CaptureError> {
        if let Some(i) = self.programs.iter().position(|(l, _)| *l == link) {
            return Ok(i);
        }
        let expr = self.expr.as_deref().unwrap_or_default();
        let prog = compile_filter(expr, link).map_err(|e| CaptureError::Filter {
            reason: match e {
                crate::live::LiveError::Filter { reason, .. } => reason,
                other => other.to_string(),
            },
            expr: expr.to_string(),
            link: link.0,
        })?;
        self.programs.push((link, prog));
        Ok(self.programs.len() - 1)
    }
}

impl<S: PacketSource> PacketSource for FilteredSource<S> {
    /// May return an empty chunk: after 16 chunks in a row that the filter emptied,
    /// so that the engine looks at its stop flag and progress between them.
    fn next_chunk(&mut self, max_frames: usize) -> Result<Option<Chunk>, CaptureError> {
        for _ in 0..16 {
            if self.left == Some(0) {
                return Ok(None);
            }
            let Some(mut chunk) = self.inner.next_chunk(max_frames)? else { return Ok(None) };
            if self.expr.is_some() {
                let mut keep = Vec::with_capacity(chunk.frames.len());
                for f in &chunk.frames {
                    let p = self.program(f.link)?;
                    if run_bpf(&self.programs[p].1.insns, chunk.data(f), f.orig_len) != 0 {
                        keep.push(*f);
                    } else {
                        self.rejected += 1;
                        self.rejected_bytes += f.orig_len as u64;
                    }
                }
                chunk.frames = keep;
            }
            if let Some(left) = &mut self.left {
                if chunk.frames.len() as u64 > *left {
                    for f in &chunk.frames[*left as usize..] {
                        self.beyond += 1;
                        self.beyond_bytes += f.orig_len as u64;
                    }
                    chunk.frames.truncate(*left as usize);
                }
                *left -= chunk.frames.len() as u64;
            }
            if !chunk.frames.is_empty() {
                return Ok(Some(chunk));
            }
        }
        Ok(Some(Chunk { backing: std::sync::Arc::new(Vec::<u8>::new()), frames: Vec::new() }))
    }

    fn progress(&self) -> Progress {
        self.inner.progress()
    }

    /// The inner source's counters, less the frames not delivered; `filtered_out`
    /// counts the frames the expression rejected.
    fn stats(&self) -> CaptureStats {
        let mut s = self.inner.stats();
        s.frames = s.frames.saturating_sub(self.rejected + self.beyond);
        s.wire_bytes = s.wire_bytes.saturating_sub(self.rejected_bytes + self.beyond_bytes);
        s.filtered_out += self.rejected;
        s
    }

    fn take_warnings(&mut self) -> Vec<String> {
        self.inner.take_warnings()
    }

    fn may_block(&self) -> bool {
        self.inner.may_block()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Ng;
    use tapstat_frames::{Eth, Ipv4};

    fn libpcap_present() -> bool {
        compile_filter("ip", LinkType::ETHERNET).is_ok()
    }

    /// An IPv4 header of protocol `proto` (20 bytes, no payload): every other field 0.
    fn ipv4(proto: u8) -> Vec<u8> {
        Ipv4 { src: [0; 4], dst: [0; 4], ttl: 0, id: 0, total_len: Some(0), ..Ipv4::new(proto) }.build(&[])
    }

    /// [`ipv4`] in an Ethernet frame with zero MAC addresses, not padded.
    fn ether(proto: u8) -> Vec<u8> {
        Eth { dst: [0; 6], src: [0; 6], min_len: 0 }.build(0x0800, &ipv4(proto))
    }

    /// A pcapng with an Ethernet and a raw IP interface: 20 TCP frames, then on each
    /// interface a UDP and a TCP frame.
    fn two_links() -> crate::FileSource {
        let mut ng = Ng::new(false);
        ng.shb(false).idb(1, 0, None, None).idb(101, 0, None, None);
        for i in 0..20 {
            ng.epb(0, i, 34, &ether(6));
        }
        ng.epb(0, 100, 34, &ether(17)).epb(0, 101, 34, &ether(6));
        ng.epb(1, 102, 20, &ipv4(17)).epb(1, 103, 20, &ipv4(6));
        crate::open_reader("t", std::io::Cursor::new(ng.bytes())).expect("a pcapng")
    }

    fn drain(src: &mut impl PacketSource) -> Result<Vec<(u64, LinkType)>, CaptureError> {
        let mut got = Vec::new();
        let mut empty = 0;
        while let Some(c) = src.next_chunk(1)? {
            empty += usize::from(c.frames.is_empty());
            got.extend(c.frames.iter().map(|f| (f.ts_ns, f.link)));
        }
        // 20 rejected frames in chunks of 1: the engine got to look at its stop flag.
        assert!(empty <= 2);
        Ok(got)
    }

    #[test]
    fn each_link_type_gets_its_program_and_the_count_applies_after_the_filter() {
        if !libpcap_present() {
            eprintln!("skipped: libpcap.so.0.8 is not installed");
            return;
        }
        let mut f = FilteredSource::new(two_links(), Some("udp"), None, &[LinkType::ETHERNET]).expect("compiles");
        let got = drain(&mut f).expect("no error");
        assert_eq!(got, vec![(100_000, LinkType::ETHERNET), (102_000, LinkType::RAW)]);
        let st = f.stats();
        assert_eq!((st.frames, st.filtered_out, st.wire_bytes), (2, 22, 54));

        let mut f = FilteredSource::new(two_links(), Some("tcp"), Some(3), &[LinkType::ETHERNET]).expect("compiles");
        assert_eq!(drain(&mut f).expect("no error").len(), 3);
        assert_eq!((f.stats().frames, f.stats().filtered_out), (3, 0));

        let mut f = FilteredSource::new(two_links(), None, Some(21), &[]).expect("no filter");
        assert_eq!(drain(&mut f).expect("no error").last(), Some(&(100_000, LinkType::ETHERNET)));
    }

    #[test]
    fn invalid_expressions_fail_at_once_and_link_specific_ones_when_met() {
        if !libpcap_present() {
            eprintln!("skipped: libpcap.so.0.8 is not installed");
            return;
        }
        let e = FilteredSource::new(two_links(), Some("not bpf(("), None, &[LinkType::ETHERNET, LinkType::RAW]);
        assert!(matches!(e, Err(CaptureError::Filter { .. })));
        // `vlan` means nothing on raw IP: accepted for Ethernet, an error at the first
        // raw IP frame.
        let mut f = FilteredSource::new(two_links(), Some("vlan"), None, &[LinkType::RAW, LinkType::ETHERNET])
            .expect("valid for Ethernet");
        match drain(&mut f) {
            Err(CaptureError::Filter { link, .. }) => assert_eq!(link, 101),
            other => panic!("{other:?}"),
        }
    }

    fn ins(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
        libc::sock_filter { code, jt, jf, k }
    }

    #[test]
    fn loads_beyond_the_capture_reject() {
        // ldh [12]; jeq #0x800 jt 0 jf 1; ret #65535; ret #0
        let p = [ins(0x28, 0, 0, 12), ins(0x15, 0, 1, 0x0800), ins(0x06, 0, 0, 65535), ins(0x06, 0, 0, 0)];
        let mut frame = vec![0u8; 14];
        frame[12] = 0x08;
        assert_eq!(run_bpf(&p, &frame, 60), 65535);
        frame[13] = 0xdd;
        assert_eq!(run_bpf(&p, &frame, 60), 0);
        assert_eq!(run_bpf(&p, &frame[..13], 60), 0, "a half-word beyond the capture rejects");
        // ldx 4*([k]&0xf) far beyond, and a load at X+k that overflows.
        assert_eq!(run_bpf(&[ins(0xb1, 0, 0, u32::MAX), ins(0x06, 0, 0, 1)], &frame, 60), 0);
        let overflow = [ins(0x01, 0, 0, u32::MAX), ins(0x50, 0, 0, 2), ins(0x06, 0, 0, 1)];
        assert_eq!(run_bpf(&overflow, &frame, 60), 0);
    }

    #[test]
    fn arithmetic_scratch_and_bad_programs() {
        // A = len; A /= 0 rejects; scratch beyond 16 rejects; a jump out rejects;
        // an unknown opcode rejects; an empty program rejects.
        assert_eq!(run_bpf(&[ins(0x80, 0, 0, 0), ins(0x16, 0, 0, 0)], &[], 1500), 1500);
        assert_eq!(run_bpf(&[ins(0x80, 0, 0, 0), ins(0x34, 0, 0, 0), ins(0x16, 0, 0, 0)], &[], 9), 0);
        assert_eq!(run_bpf(&[ins(0x02, 0, 0, 16), ins(0x06, 0, 0, 1)], &[], 9), 0);
        assert_eq!(run_bpf(&[ins(0x05, 0, 0, u32::MAX), ins(0x06, 0, 0, 1)], &[], 9), 0);
        assert_eq!(run_bpf(&[ins(0xff, 0, 0, 0)], &[], 9), 0);
        assert_eq!(run_bpf(&[], &[], 9), 0);
        // A = 7; M[3] = A; X = 5; A = M[3]; A -= X; A <<= 40 (0); ret A+1.
        let p = [
            ins(0x00, 0, 0, 7),
            ins(0x02, 0, 0, 3),
            ins(0x01, 0, 0, 5),
            ins(0x60, 0, 0, 3),
            ins(0x1c, 0, 0, 0),
            ins(0x16, 0, 0, 0),
        ];
        assert_eq!(run_bpf(&p, &[], 0), 2);
        let shift = [ins(0x00, 0, 0, 7), ins(0x64, 0, 0, 40), ins(0x04, 0, 0, 1), ins(0x16, 0, 0, 0)];
        assert_eq!(run_bpf(&shift, &[], 0), 1);
    }
}
