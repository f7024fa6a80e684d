//! Frames and captures written by tests: a classic pcap, IPv4 (with its checksum), IPv6,
//! UDP, TCP, IPv4 and IPv6 fragments.

use std::path::Path;

/// A classic pcap (µs) of link type `link` with `frames` at the given seconds.
pub fn write_pcap(path: &Path, link: u32, frames: &[(u32, Vec<u8>)]) {
    let mut b = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, link] {
        b.extend(v.to_le_bytes());
    }
    for (s, f) in frames {
        for v in [*s, 0, f.len() as u32, f.len() as u32] {
            b.extend(v.to_le_bytes());
        }
        b.extend(f);
    }
    std::fs::write(path, b).unwrap();
}

pub fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = b.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

pub fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, 0];
    h.extend(((20 + payload.len()) as u16).to_be_bytes());
    h.extend([0, 1, 0, 0, 64, proto, 0, 0]);
    h.extend(src);
    h.extend(dst);
    let c = checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend(payload);
    h
}

pub fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [sport, dport, (8 + payload.len()) as u16, 0] {
        h.extend(v.to_be_bytes());
    }
    h.extend(payload);
    h
}

/// An IPv4 header with identification `id`, fragment offset `off` (bytes) and the
/// more-fragments flag, before `payload` (a share of the datagram's payload).
pub fn ipv4_frag(src: [u8; 4], dst: [u8; 4], proto: u8, id: u16, off: usize, more: bool, payload: &[u8]) -> Vec<u8> {
    let mut h = ipv4(src, dst, proto, payload);
    h[4..6].copy_from_slice(&id.to_be_bytes());
    let fo = (off / 8) as u16 | if more { 0x2000 } else { 0 };
    h[6..8].copy_from_slice(&fo.to_be_bytes());
    h[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(&h[..20]);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

/// An IPv6 header (hop limit 64) before `payload`.
pub fn ipv6(src: [u8; 16], dst: [u8; 16], nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend((payload.len() as u16).to_be_bytes());
    h.extend([nh, 64]);
    h.extend(src);
    h.extend(dst);
    h.extend(payload);
    h
}

/// An IPv6 header and a fragment header (RFC 8200 §4.5) with identification `id`,
/// fragment offset `off` (bytes) and the M flag, before `payload` (a share of the
/// datagram's fragmentable part).
pub fn ipv6_frag(src: [u8; 16], dst: [u8; 16], nh: u8, id: u32, off: usize, more: bool, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![nh, 0];
    f.extend((off as u16 & 0xfff8 | u16::from(more)).to_be_bytes());
    f.extend(id.to_be_bytes());
    f.extend(payload);
    ipv6(src, dst, 44, &f)
}

/// A TCP header (no options, checksum 0) before `payload`.
pub fn tcp(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend(sport.to_be_bytes());
    t.extend(dport.to_be_bytes());
    t.extend(seq.to_be_bytes());
    t.extend(ack.to_be_bytes());
    t.extend([0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend(payload);
    t
}

/// An Ethernet II frame.
pub fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend(ethertype.to_be_bytes());
    f.extend(payload);
    f
}
