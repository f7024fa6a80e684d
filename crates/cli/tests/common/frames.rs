//! Frames and captures written by tests: a classic pcap, Ethernet, VLAN tags, MPLS,
//! PPPoE, GRE, VXLAN, IPv4 (with its checksum), IPv6, UDP, TCP, ICMP, IPv4 and IPv6
//! fragments, and the application payloads the golden cases carry (DNS, TLS hellos,
//! SSH KEXINIT).

use std::path::Path;

/// A classic pcap (µs) of link type `link` with `frames` at the given seconds.
pub fn write_pcap(path: &Path, link: u32, frames: &[(u32, Vec<u8>)]) {
    let frames: Vec<(u64, Vec<u8>)> = frames.iter().map(|(s, f)| (u64::from(*s) * 1_000_000, f.clone())).collect();
    std::fs::write(path, pcap_us(link, &frames)).unwrap();
}

/// The bytes of a classic pcap (µs, little-endian) of link type `link` with `frames` at
/// the given times in microseconds.
pub fn pcap_us(link: u32, frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut b = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, link] {
        b.extend(v.to_le_bytes());
    }
    for (us, f) in frames {
        let (s, u) = ((us / 1_000_000) as u32, (us % 1_000_000) as u32);
        for v in [s, u, f.len() as u32, f.len() as u32] {
            b.extend(v.to_le_bytes());
        }
        b.extend(f);
    }
    b
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

/// A TCP header like [`tcp`] with the receive window `window`.
pub fn tcp_win(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, window: u16, payload: &[u8]) -> Vec<u8> {
    let mut t = tcp(sport, dport, seq, ack, flags, payload);
    t[14..16].copy_from_slice(&window.to_be_bytes());
    t
}

/// An ICMP (or ICMPv6) message of `msg_type` and `code`, identifier 1, sequence `seq`
/// (checksum 0).
pub fn icmp(msg_type: u8, code: u8, seq: u16, payload: &[u8]) -> Vec<u8> {
    let mut m = vec![msg_type, code, 0, 0, 0, 1];
    m.extend(seq.to_be_bytes());
    m.extend(payload);
    m
}

/// A VLAN tag's TCI (priority 0, VLAN `vid`) and the `inner` EtherType, before
/// `payload`: `eth(0x8100, &vlan(5, 0x0800, &ip))`.
pub fn vlan(vid: u16, inner: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = (vid & 0x0fff).to_be_bytes().to_vec();
    v.extend(inner.to_be_bytes());
    v.extend(payload);
    v
}

/// An MPLS label stack (`labels`, the last one bottom of stack, TTL 64) before
/// `payload`.
pub fn mpls(labels: &[u32], payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        let bottom = u32::from(i + 1 == labels.len());
        v.extend((l << 12 | bottom << 8 | 64).to_be_bytes());
    }
    v.extend(payload);
    v
}

/// A PPPoE session header (session 0x1234) and the PPP protocol `ppp_proto` (0x0021:
/// IPv4) before `payload`.
pub fn pppoe(ppp_proto: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0x11, 0x00, 0x12, 0x34];
    v.extend(((payload.len() + 2) as u16).to_be_bytes());
    v.extend(ppp_proto.to_be_bytes());
    v.extend(payload);
    v
}

/// A GRE version 0 header carrying `proto` (an EtherType), with the key `key` if given.
pub fn gre(proto: u16, key: Option<u32>, payload: &[u8]) -> Vec<u8> {
    let mut v = (if key.is_some() { 0x2000u16 } else { 0 }).to_be_bytes().to_vec();
    v.extend(proto.to_be_bytes());
    if let Some(k) = key {
        v.extend(k.to_be_bytes());
    }
    v.extend(payload);
    v
}

/// A VXLAN header (RFC 7348) with VNI `vni` before `payload` (an Ethernet frame).
pub fn vxlan(vni: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0x08, 0, 0, 0];
    v.extend((vni << 8).to_be_bytes());
    v.extend(payload);
    v
}

fn dns_name(m: &mut Vec<u8>, name: &str) {
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend(label.as_bytes());
    }
    m.push(0);
}

/// A DNS query (recursion desired) with id `id` and the question `name` of `qtype`,
/// class IN.
pub fn dns_question(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend([0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    dns_name(&mut m, name);
    m.extend(qtype.to_be_bytes());
    m.extend([0, 1]);
    m
}

/// The answer to [`dns_question`] with response code `rcode` and one record of the
/// question's type per entry of `answers` (each owned by the question's name, TTL 300).
pub fn dns_reply(id: u16, name: &str, qtype: u16, rcode: u8, answers: &[&[u8]]) -> Vec<u8> {
    let mut m = dns_question(id, name, qtype);
    m[2..4].copy_from_slice(&[0x81, 0x80 | (rcode & 0x0f)]);
    m[6..8].copy_from_slice(&(answers.len() as u16).to_be_bytes());
    for a in answers {
        m.extend([0xc0, 0x0c]);
        m.extend(qtype.to_be_bytes());
        m.extend([0, 1, 0, 0, 0x01, 0x2c]);
        m.extend((a.len() as u16).to_be_bytes());
        m.extend(*a);
    }
    m
}

/// `body` with a 16-bit length before it.
fn len16(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as u16).to_be_bytes().to_vec();
    v.extend(body);
    v
}

/// A TLS extension: type, length, data.
fn tls_ext(ty: u16, data: &[u8]) -> Vec<u8> {
    let mut v = ty.to_be_bytes().to_vec();
    v.extend(len16(data));
    v
}

/// A handshake message of `msg_type` in one TLS record (legacy version 3.1).
fn tls_handshake(msg_type: u8, body: &[u8]) -> Vec<u8> {
    let mut hs = vec![msg_type];
    hs.extend(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend(body);
    let mut r = vec![0x16, 0x03, 0x01];
    r.extend(len16(&hs));
    r
}

/// A TLS 1.3 ClientHello record: the server name `sni`, the ALPN protocols `alpn`,
/// three cipher suites, the groups x25519 and secp256r1, a key share.
pub fn tls_client_hello(sni: &str, alpn: &[&str]) -> Vec<u8> {
    let mut b = vec![0x03, 0x03];
    b.extend((0u8..32).collect::<Vec<_>>());
    b.push(0); // no session id
    b.extend(len16(&[0x13, 0x01, 0x13, 0x02, 0xc0, 0x2f]));
    b.extend([1, 0]); // compression: null
    let mut sn = vec![0];
    sn.extend(len16(sni.as_bytes()));
    let mut ext = tls_ext(0, &len16(&sn));
    ext.extend(tls_ext(10, &len16(&[0x00, 0x1d, 0x00, 0x17])));
    ext.extend(tls_ext(11, &[1, 0]));
    ext.extend(tls_ext(13, &len16(&[0x04, 0x03, 0x08, 0x04])));
    let protos: Vec<u8> = alpn.iter().flat_map(|p| [&[p.len() as u8][..], p.as_bytes()].concat()).collect();
    ext.extend(tls_ext(16, &len16(&protos)));
    ext.extend(tls_ext(43, &[4, 0x03, 0x04, 0x03, 0x03]));
    let mut share = vec![0x00, 0x1d];
    share.extend(len16(&[0x42; 32]));
    ext.extend(tls_ext(51, &len16(&share)));
    b.extend(len16(&ext));
    tls_handshake(1, &b)
}

/// A TLS 1.3 ServerHello record choosing TLS_AES_128_GCM_SHA256, x25519 and, when
/// given, the ALPN protocol `alpn`.
pub fn tls_server_hello(alpn: Option<&str>) -> Vec<u8> {
    let mut b = vec![0x03, 0x03];
    b.extend((32u8..64).collect::<Vec<_>>());
    b.push(0);
    b.extend([0x13, 0x01, 0]);
    let mut ext = tls_ext(43, &[0x03, 0x04]);
    let mut share = vec![0x00, 0x1d];
    share.extend(len16(&[0x24; 32]));
    ext.extend(tls_ext(51, &share));
    if let Some(p) = alpn {
        ext.extend(tls_ext(16, &len16(&[&[p.len() as u8][..], p.as_bytes()].concat())));
    }
    b.extend(len16(&ext));
    tls_handshake(2, &b)
}

/// An SSH binary packet (RFC 4253 §6, no MAC) holding an SSH_MSG_KEXINIT whose ten
/// name-lists are `lists` (kex, host key, encryption c→s and s→c, MAC c→s and s→c,
/// compression c→s and s→c, languages c→s and s→c).
pub fn ssh_kexinit(lists: [&str; 10]) -> Vec<u8> {
    let mut p = vec![20];
    p.extend([0x5c; 16]); // cookie
    for l in lists {
        p.extend((l.len() as u32).to_be_bytes());
        p.extend(l.as_bytes());
    }
    p.extend([0, 0, 0, 0, 0]); // first_kex_packet_follows, reserved
                               // padding: at least 4 bytes, packet_length + padding_length + payload + padding a
                               // multiple of 8
    let pad = 4 + (8 - (5 + p.len() + 4) % 8) % 8;
    let mut v = ((1 + p.len() + pad) as u32).to_be_bytes().to_vec();
    v.push(pad as u8);
    v.extend(p);
    v.extend(vec![0; pad]);
    v
}
