//! Test helpers: writers of small pcap and pcapng captures, byte by byte, so the
//! tests know exactly what every field holds; a temporary directory; a reader that
//! hands out a few bytes at a time (to exercise stream refills).

use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug)]
pub(crate) enum PcapKind {
    Micro,
    Nano,
    /// Kuznetzov's modified pcap (µs, 24-byte record headers).
    Modified,
}

fn put16(v: &mut Vec<u8>, x: u16, be: bool) {
    v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

fn put32(v: &mut Vec<u8>, x: u32, be: bool) {
    v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

/// A pcap file: header, then records `(ts_sec, ts_frac, orig_len, data)`; caplen
/// is `data.len()`.
pub(crate) fn pcap_bytes(
    kind: PcapKind,
    be: bool,
    network: u32,
    snaplen: u32,
    recs: &[(u32, u32, u32, Vec<u8>)],
) -> Vec<u8> {
    let magic = match kind {
        PcapKind::Micro => 0xa1b2_c3d4,
        PcapKind::Nano => 0xa1b2_3c4d,
        PcapKind::Modified => 0xa1b2_cd34,
    };
    let mut v = Vec::new();
    put32(&mut v, magic, be);
    put16(&mut v, 2, be);
    put16(&mut v, 4, be);
    put32(&mut v, 0, be);
    put32(&mut v, 0, be);
    put32(&mut v, snaplen, be);
    put32(&mut v, network, be);
    for (sec, frac, orig, data) in recs {
        put32(&mut v, *sec, be);
        put32(&mut v, *frac, be);
        put32(&mut v, data.len() as u32, be);
        put32(&mut v, *orig, be);
        if let PcapKind::Modified = kind {
            put32(&mut v, 3, be); // ifindex
            put16(&mut v, 0x0800, be); // protocol
            v.push(0); // pkt_type
            v.push(0); // pad
        }
        v.extend_from_slice(data);
    }
    v
}

/// A pcapng writer: one call per block.
pub(crate) struct Ng {
    be: bool,
    out: Vec<u8>,
}

impl Ng {
    /// Starts a capture with a section header in the given byte order.
    pub(crate) fn new(be: bool) -> Ng {
        let mut ng = Ng { be, out: Vec::new() };
        ng.shb(be);
        ng
    }

    /// A new section (it may switch byte order).
    pub(crate) fn shb(&mut self, be: bool) -> &mut Self {
        self.be = be;
        let mut body = Vec::new();
        put32(&mut body, 0x1a2b_3c4d, be);
        put16(&mut body, 1, be);
        put16(&mut body, 0, be);
        body.extend_from_slice(&(-1i64).to_le_bytes()); // section length: unknown
                                                        // One option (shb_userappl, code 4) to check that options are skipped.
        put16(&mut body, 4, be);
        put16(&mut body, 5, be);
        body.extend_from_slice(b"test\0\0\0\0");
        put16(&mut body, 0, be);
        put16(&mut body, 0, be);
        self.block(0x0A0D_0D0A, &body)
    }

    /// An interface description block.
    pub(crate) fn idb(&mut self, link: u16, snaplen: u32, tsresol: Option<u8>, tsoffset: Option<i64>) -> &mut Self {
        let be = self.be;
        let mut body = Vec::new();
        put16(&mut body, link, be);
        put16(&mut body, 0, be);
        put32(&mut body, snaplen, be);
        // if_name first, so the interesting options are not at the start.
        put16(&mut body, 2, be);
        put16(&mut body, 3, be);
        body.extend_from_slice(b"en0\0");
        if let Some(r) = tsresol {
            put16(&mut body, 9, be);
            put16(&mut body, 1, be);
            body.extend_from_slice(&[r, 0, 0, 0]);
        }
        if let Some(o) = tsoffset {
            put16(&mut body, 14, be);
            put16(&mut body, 8, be);
            body.extend_from_slice(&if be { o.to_be_bytes() } else { o.to_le_bytes() });
        }
        put16(&mut body, 0, be);
        put16(&mut body, 0, be);
        self.block(1, &body)
    }

    /// An enhanced packet block; caplen is `data.len()`. It carries an
    /// `opt_comment`, which must be ignored.
    pub(crate) fn epb(&mut self, iface: u32, ts: u64, orig_len: u32, data: &[u8]) -> &mut Self {
        let be = self.be;
        let mut body = Vec::new();
        put32(&mut body, iface, be);
        put32(&mut body, (ts >> 32) as u32, be);
        put32(&mut body, ts as u32, be);
        put32(&mut body, data.len() as u32, be);
        put32(&mut body, orig_len, be);
        body.extend_from_slice(data);
        pad4(&mut body);
        put16(&mut body, 1, be);
        put16(&mut body, 2, be);
        body.extend_from_slice(b"hi\0\0");
        put16(&mut body, 0, be);
        put16(&mut body, 0, be);
        self.block(6, &body)
    }

    /// An obsolete packet block (type 2).
    pub(crate) fn opb(&mut self, iface: u16, ts: u64, orig_len: u32, data: &[u8]) -> &mut Self {
        let be = self.be;
        let mut body = Vec::new();
        put16(&mut body, iface, be);
        put16(&mut body, 0, be); // drops
        put32(&mut body, (ts >> 32) as u32, be);
        put32(&mut body, ts as u32, be);
        put32(&mut body, data.len() as u32, be);
        put32(&mut body, orig_len, be);
        body.extend_from_slice(data);
        pad4(&mut body);
        self.block(2, &body)
    }

    /// A simple packet block: the data is all that is stored of the packet.
    pub(crate) fn spb(&mut self, orig_len: u32, data: &[u8]) -> &mut Self {
        let mut body = Vec::new();
        put32(&mut body, orig_len, self.be);
        body.extend_from_slice(data);
        pad4(&mut body);
        self.block(3, &body)
    }

    /// Any block: type, body (padded here), lengths around it.
    pub(crate) fn block(&mut self, btype: u32, body: &[u8]) -> &mut Self {
        let be = self.be;
        let mut body = body.to_vec();
        pad4(&mut body);
        let len = body.len() as u32 + 12;
        put32(&mut self.out, btype, be);
        put32(&mut self.out, len, be);
        self.out.extend_from_slice(&body);
        put32(&mut self.out, len, be);
        self
    }

    /// Raw bytes appended as they are (to build damaged files).
    pub(crate) fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.out.extend_from_slice(b);
        self
    }

    pub(crate) fn len(&self) -> usize {
        self.out.len()
    }

    pub(crate) fn bytes(&self) -> Vec<u8> {
        self.out.clone()
    }
}

fn pad4(v: &mut Vec<u8>) {
    while v.len() & 3 != 0 {
        v.push(0);
    }
}

/// A directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new() -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "tapstat-capture-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    /// Writes a file and returns its path.
    pub(crate) fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A reader that returns at most `step` bytes per `read`, like a slow pipe.
pub(crate) struct Trickle {
    data: Vec<u8>,
    pos: usize,
    step: usize,
}

impl Trickle {
    pub(crate) fn new(data: Vec<u8>, step: usize) -> Trickle {
        Trickle { data, pos: 0, step }
    }
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        let n = rest.len().min(buf.len()).min(self.step);
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
    }
}
