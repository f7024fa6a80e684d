//! The capture file (classic pcap: little-endian, µs, Ethernet) and the frames in it:
//! Ethernet, IPv4/IPv6 with their checksums around a transport header.

use std::io::{self, Write};
use std::net::IpAddr;

use super::{PROTO_UDP, SEC, US};

/// The capture's snap length; frames are never truncated.
const SNAPLEN: u32 = 262_144;

/// The classic pcap file header: little-endian, µs, Ethernet.
pub(super) fn pcap_header() -> [u8; 24] {
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    // thiszone and sigfigs: 0
    h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    h
}

/// One pcap record: the header (time in whole µs, never truncated) and the frame.
pub(super) fn write_record<W: Write>(w: &mut W, ts_ns: u64, frame: &[u8]) -> io::Result<()> {
    let mut rec = [0u8; 16];
    rec[0..4].copy_from_slice(&((ts_ns / SEC) as u32).to_le_bytes());
    rec[4..8].copy_from_slice(&((ts_ns % SEC / US) as u32).to_le_bytes());
    rec[8..12].copy_from_slice(&(frame.len() as u32).to_le_bytes());
    rec[12..16].copy_from_slice(&(frame.len() as u32).to_le_bytes());
    w.write_all(&rec)?;
    w.write_all(frame)
}

/// Addressing of one packet below L4.
pub(super) struct L3 {
    pub(super) src_mac: [u8; 6],
    pub(super) dst_mac: [u8; 6],
    pub(super) src: IpAddr,
    pub(super) dst: IpAddr,
    pub(super) ttl: u8,
    pub(super) ip_id: u16,
    pub(super) df: bool,
    pub(super) flow_label: u32,
}

/// Sum of big-endian 16-bit words (odd tail padded with zero), unfolded.
pub(super) fn sum16(data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(2);
    let mut s: u64 = (&mut chunks).map(|c| u16::from_be_bytes([c[0], c[1]]) as u64).sum();
    if let [b] = chunks.remainder() {
        s += (*b as u64) << 8;
    }
    s
}

/// One's-complement of the folded sum: the Internet checksum.
pub(super) fn fold(mut s: u64) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

pub(super) fn ip_bytes(a: IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// Builds an Ethernet frame around `l4`, filling in the L4 checksum (at `csum_at`
/// within `l4`, over the pseudo-header) and the IPv4 header checksum; pads to 60 bytes.
pub(super) fn frame(l3: &L3, proto: u8, mut l4: Vec<u8>, csum_at: usize) -> Vec<u8> {
    let len = l4.len();
    let (src, dst) = (ip_bytes(l3.src), ip_bytes(l3.dst));
    let pseudo = sum16(&src) + sum16(&dst) + proto as u64 + (len as u64 >> 16) + (len as u64 & 0xffff);
    let mut c = fold(pseudo + sum16(&l4));
    if proto == PROTO_UDP && c == 0 {
        c = 0xffff; // 0 means "no checksum" in UDP
    }
    l4[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());

    let mut f = Vec::with_capacity(14 + 40 + len);
    f.extend_from_slice(&l3.dst_mac);
    f.extend_from_slice(&l3.src_mac);
    match (l3.src, l3.dst) {
        (IpAddr::V4(_), IpAddr::V4(_)) => {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let mut h = [0u8; 20];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&((20 + len) as u16).to_be_bytes());
            h[4..6].copy_from_slice(&l3.ip_id.to_be_bytes());
            if l3.df {
                h[6] = 0x40;
            }
            h[8] = l3.ttl;
            h[9] = proto;
            h[12..16].copy_from_slice(&src);
            h[16..20].copy_from_slice(&dst);
            let hc = fold(sum16(&h));
            h[10..12].copy_from_slice(&hc.to_be_bytes());
            f.extend_from_slice(&h);
        }
        (IpAddr::V6(_), IpAddr::V6(_)) => {
            f.extend_from_slice(&0x86ddu16.to_be_bytes());
            let vtf: u32 = (6 << 28) | (l3.flow_label & 0xf_ffff);
            f.extend_from_slice(&vtf.to_be_bytes());
            f.extend_from_slice(&(len as u16).to_be_bytes());
            f.push(proto);
            f.push(l3.ttl);
            f.extend_from_slice(&src);
            f.extend_from_slice(&dst);
        }
        _ => unreachable!("mixed address families"),
    }
    f.extend_from_slice(&l4);
    if f.len() < 60 {
        f.resize(60, 0); // Ethernet minimum frame (FCS not captured)
    }
    f
}
