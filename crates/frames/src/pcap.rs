//! Classic pcap files, byte by byte: either byte order, µs or ns timestamps, and
//! Kuznetzov's modified format.

use std::path::Path;

/// A record: packet time (ns since the epoch), captured bytes, original length.
pub type Record = (u64, Vec<u8>, u32);

/// The flavour of a classic pcap file.
#[derive(Clone, Copy, Debug)]
pub enum PcapFormat {
    /// Magic 0xa1b2c3d4: µs timestamps.
    Micro,
    /// Magic 0xa1b23c4d: ns timestamps.
    Nano,
    /// Magic 0xa1b2cd34, Kuznetzov's modified pcap: µs, 24-byte record headers.
    Modified,
}

fn put16(v: &mut Vec<u8>, x: u16, be: bool) {
    v.extend(if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

fn put32(v: &mut Vec<u8>, x: u32, be: bool) {
    v.extend(if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

/// The bytes of a classic pcap (version 2.4, big-endian when `be`) of link type `link`
/// and snapshot length `snaplen` holding `records`; the timestamps are cut to the
/// format's resolution, each record's caplen is its bytes' length.
pub fn pcap(format: PcapFormat, be: bool, link: u32, snaplen: u32, records: &[Record]) -> Vec<u8> {
    let magic = match format {
        PcapFormat::Micro => 0xa1b2_c3d4,
        PcapFormat::Nano => 0xa1b2_3c4d,
        PcapFormat::Modified => 0xa1b2_cd34,
    };
    let mut v = Vec::new();
    put32(&mut v, magic, be);
    put16(&mut v, 2, be);
    put16(&mut v, 4, be);
    put32(&mut v, 0, be);
    put32(&mut v, 0, be);
    put32(&mut v, snaplen, be);
    put32(&mut v, link, be);
    for (ts, data, orig) in records {
        let frac = match format {
            PcapFormat::Nano => ts % 1_000_000_000,
            _ => ts % 1_000_000_000 / 1000,
        };
        put32(&mut v, (ts / 1_000_000_000) as u32, be);
        put32(&mut v, frac as u32, be);
        put32(&mut v, data.len() as u32, be);
        put32(&mut v, *orig, be);
        if let PcapFormat::Modified = format {
            put32(&mut v, 3, be); // ifindex
            put16(&mut v, 0x0800, be); // protocol
            v.extend([0, 0]); // packet type, padding
        }
        v.extend(data);
    }
    v
}

/// Writes to `path` a classic pcap (µs, little-endian, snaplen 65535) of link type
/// `link` with `frames` whole, at the given seconds.
pub fn write_pcap(path: &Path, link: u32, frames: &[(u32, Vec<u8>)]) {
    let records: Vec<Record> =
        frames.iter().map(|(s, f)| (u64::from(*s) * 1_000_000_000, f.clone(), f.len() as u32)).collect();
    std::fs::write(path, pcap(PcapFormat::Micro, false, link, 65535, &records)).unwrap();
}
