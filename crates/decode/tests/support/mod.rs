//! Test-only helpers: a tiny capture-file reader (classic pcap in µs or ns resolution,
//! either byte order, and the pcapng blocks that hold packets) and the corpus location.
//!
//! Written here so the decoder's tests do not depend on the capture crate's reader.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// One frame of a capture file.
pub struct Frame {
    pub link: u16,
    pub ts_ns: u64,
    pub orig_len: u32,
    pub data: Vec<u8>,
}

/// Where the capture corpus is, or `None` (with the reason printed) when it is absent.
/// Panics instead when `TAPSTAT_REQUIRE_CORPUS=1`.
pub fn corpus() -> Option<PathBuf> {
    let dir = std::env::var("TAPSTAT_CORPUS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/pcaps/dev").to_string());
    let p = PathBuf::from(&dir);
    if p.is_dir() {
        return Some(p);
    }
    let msg = format!("capture corpus not found at {dir} (set TAPSTAT_CORPUS)");
    if std::env::var("TAPSTAT_REQUIRE_CORPUS").as_deref() == Ok("1") {
        panic!("{msg}, and TAPSTAT_REQUIRE_CORPUS=1");
    }
    eprintln!("skipping: {msg}");
    None
}

/// Capture files under `dir` (recursively), sorted; the `oracles` folder is skipped.
pub fn capture_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "oracles") {
                    stack.push(p);
                }
            } else if p.extension().and_then(|x| x.to_str()).is_some_and(|x| matches!(x, "pcap" | "pcapng" | "cap")) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Reads all frames of a capture; stops quietly at the first inconsistency (the
/// corpus holds damaged files on purpose). `None` when the format is not recognised.
pub fn read(path: &Path) -> Option<Vec<Frame>> {
    let b = std::fs::read(path).ok()?;
    let magic = b.get(0..4)?;
    if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
        return Some(read_pcapng(&b));
    }
    let (le, ns) = match u32::from_le_bytes(magic.try_into().ok()?) {
        0xa1b2c3d4 => (true, false),
        0xa1b23c4d => (true, true),
        0xd4c3b2a1 => (false, false),
        0x4d3cb2a1 => (false, true),
        _ => return None,
    };
    let u32_at = |o: usize| -> Option<u32> {
        let s: [u8; 4] = b.get(o..o + 4)?.try_into().ok()?;
        Some(if le { u32::from_le_bytes(s) } else { u32::from_be_bytes(s) })
    };
    let link = (u32_at(20)? & 0xffff) as u16;
    let mut out = Vec::new();
    let mut off = 24;
    while let (Some(sec), Some(frac), Some(incl), Some(orig)) =
        (u32_at(off), u32_at(off + 4), u32_at(off + 8), u32_at(off + 12))
    {
        let start = off + 16;
        let Some(data) = b.get(start..start + incl as usize) else { break };
        let frac_ns = if ns { u64::from(frac) } else { u64::from(frac) * 1000 };
        out.push(Frame { link, ts_ns: u64::from(sec) * 1_000_000_000 + frac_ns, orig_len: orig, data: data.to_vec() });
        off = start + incl as usize;
    }
    Some(out)
}

fn read_pcapng(b: &[u8]) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut le = true;
    // per interface: link type, ticks per second
    let mut ifaces: Vec<(u16, u64)> = Vec::new();
    let mut off = 0;
    while let Some(h) = b.get(off..off + 12) {
        let typ_raw: [u8; 4] = h[0..4].try_into().unwrap_or_default();
        if typ_raw == [0x0a, 0x0d, 0x0d, 0x0a] {
            match h.get(8..12) {
                Some([0x4d, 0x3c, 0x2b, 0x1a]) => le = true,
                Some([0x1a, 0x2b, 0x3c, 0x4d]) => le = false,
                _ => break,
            }
            ifaces.clear();
        }
        let rd32 = |o: usize| -> Option<u32> {
            let s: [u8; 4] = b.get(o..o + 4)?.try_into().ok()?;
            Some(if le { u32::from_le_bytes(s) } else { u32::from_be_bytes(s) })
        };
        let rd16 = |o: usize| -> Option<u16> {
            let s: [u8; 2] = b.get(o..o + 2)?.try_into().ok()?;
            Some(if le { u16::from_le_bytes(s) } else { u16::from_be_bytes(s) })
        };
        let (Some(typ), Some(len)) = (rd32(off), rd32(off + 4)) else { break };
        let len = len as usize;
        if len < 12 || off + len > b.len() {
            break;
        }
        let body = off + 8;
        let body_end = off + len - 4;
        match typ {
            1 => {
                // interface description: link type, reserved, snaplen, options
                let link = rd16(body).unwrap_or(0);
                let mut tps = 1_000_000u64;
                let mut o = body + 8;
                while o + 4 <= body_end {
                    let (Some(code), Some(olen)) = (rd16(o), rd16(o + 2)) else { break };
                    if code == 0 {
                        break;
                    }
                    if code == 9 && olen >= 1 {
                        let r = b.get(o + 4).copied().unwrap_or(6);
                        tps = if r & 0x80 != 0 {
                            1u64.checked_shl(u32::from(r & 0x7f)).unwrap_or(1_000_000)
                        } else {
                            10u64.checked_pow(u32::from(r)).unwrap_or(1_000_000)
                        };
                    }
                    o += 4 + ((olen as usize + 3) & !3);
                }
                ifaces.push((link, tps));
            }
            6 => {
                // enhanced packet: interface, timestamp (high, low), caplen, origlen
                let (Some(ifc), Some(hi), Some(lo), Some(cap), Some(orig)) =
                    (rd32(body), rd32(body + 4), rd32(body + 8), rd32(body + 12), rd32(body + 16))
                else {
                    break;
                };
                let start = body + 20;
                let Some(data) = b.get(start..start + cap as usize) else { break };
                if start + cap as usize > body_end {
                    break;
                }
                let (link, tps) = ifaces.get(ifc as usize).copied().unwrap_or((1, 1_000_000));
                let ticks = (u64::from(hi) << 32) | u64::from(lo);
                let ts_ns = (ticks as u128 * 1_000_000_000 / u128::from(tps.max(1))) as u64;
                out.push(Frame { link, ts_ns, orig_len: orig, data: data.to_vec() });
            }
            3 => {
                // simple packet: origlen, data up to the block's end
                let Some(orig) = rd32(body) else { break };
                let start = body + 4;
                let cap = (orig as usize).min(body_end.saturating_sub(start));
                let Some(data) = b.get(start..start + cap) else { break };
                let link = ifaces.first().map_or(1, |i| i.0);
                out.push(Frame { link, ts_ns: 0, orig_len: orig, data: data.to_vec() });
            }
            _ => {}
        }
        off += len;
    }
    out
}
