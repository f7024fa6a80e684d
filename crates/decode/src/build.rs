//! Test-only frame builder: the bytes of Ethernet / VLAN / MPLS / PPPoE / IPv4 / IPv6
//! / TCP / UDP / ICMP / tunnel headers, built from the inside out (each function
//! takes its payload and returns header + payload). Checksums are left at 0: the
//! decoder does not verify them.

pub const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
pub const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];

pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

pub fn v6(last: u16) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0x20;
    a[1] = 0x01;
    a[2] = 0x0d;
    a[3] = 0xb8;
    a[14..].copy_from_slice(&last.to_be_bytes());
    a
}

/// Ethernet II header + payload, padded to the 60-byte minimum.
pub fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = cat(&[&MAC_B, &MAC_A, &ethertype.to_be_bytes(), payload]);
    if v.len() < 60 {
        v.resize(60, 0);
    }
    v
}

/// A VLAN tag announced by `tpid`, carrying `inner` EtherType: TPID + TCI + type.
/// Used as `eth(tpid, &cat(&[&tag(vid, inner), payload]))`.
pub fn tag(vid: u16, inner: u16) -> Vec<u8> {
    cat(&[&(vid & 0x0fff).to_be_bytes(), &inner.to_be_bytes()])
}

/// MPLS label stack entry.
pub fn label(label: u32, bottom: bool) -> [u8; 4] {
    (label << 12 | u32::from(bottom) << 8 | 64).to_be_bytes()
}

/// PPPoE session header + 2-byte PPP protocol + payload.
pub fn pppoe(ppp_proto: u16, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() + 2) as u16;
    cat(&[&[0x11, 0x00, 0x12, 0x34], &len.to_be_bytes(), &ppp_proto.to_be_bytes(), payload])
}

pub struct V4 {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub proto: u8,
    pub ttl: u8,
    pub id: u16,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_off: u16,
    pub mf: bool,
    pub options: Vec<u8>,
    /// Total length override (None: computed).
    pub total_len: Option<u16>,
}

impl V4 {
    pub fn new(proto: u8) -> V4 {
        V4 {
            src: [192, 0, 2, 1],
            dst: [198, 51, 100, 2],
            proto,
            ttl: 64,
            id: 0x1234,
            frag_off: 0,
            mf: false,
            options: Vec::new(),
            total_len: None,
        }
    }

    pub fn build(&self, payload: &[u8]) -> Vec<u8> {
        let hl = 20 + self.options.len();
        assert_eq!(hl & 3, 0);
        let total = self.total_len.unwrap_or((hl + payload.len()) as u16);
        let ff = (self.frag_off / 8) | if self.mf { 0x2000 } else { 0 };
        let mut h = vec![0x40 | (hl / 4) as u8, 0];
        h.extend(total.to_be_bytes());
        h.extend(self.id.to_be_bytes());
        h.extend(ff.to_be_bytes());
        h.extend([self.ttl, self.proto, 0, 0]);
        h.extend(self.src);
        h.extend(self.dst);
        h.extend(&self.options);
        h.extend(payload);
        h
    }
}

pub fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    V4::new(proto).build(payload)
}

pub fn ipv4_addrs(src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
    V4 { src, dst, ..V4::new(proto) }.build(payload)
}

/// IPv6 header (payload length computed, or `plen` if given) + payload.
pub fn ipv6_len(src: [u8; 16], dst: [u8; 16], nh: u8, plen: Option<u16>, payload: &[u8]) -> Vec<u8> {
    let plen = plen.unwrap_or(payload.len() as u16);
    let mut h = vec![0x60, 0, 0, 0];
    h.extend(plen.to_be_bytes());
    h.extend([nh, 61]);
    h.extend(src);
    h.extend(dst);
    h.extend(payload);
    h
}

pub fn ipv6(nh: u8, payload: &[u8]) -> Vec<u8> {
    ipv6_len(v6(1), v6(2), nh, None, payload)
}

/// A generic IPv6 extension header of `units8` × 8 bytes (hop-by-hop, routing,
/// destination options), PadN-filled.
pub fn ext(nh: u8, units8: u8) -> Vec<u8> {
    let len = usize::from(units8) * 8;
    let mut h = vec![nh, units8 - 1];
    h.resize(len, 0);
    if len > 2 {
        h[2] = 1; // PadN
        h[3] = (len - 4) as u8;
    }
    h
}

/// An authentication header (RFC 4302) with a `icv_words` × 4-byte ICV.
pub fn ah(nh: u8, icv_words: u8) -> Vec<u8> {
    let len = 12 + usize::from(icv_words) * 4;
    let mut h = vec![nh, (len / 4 - 2) as u8];
    h.resize(len, 0xaa);
    h
}

/// An IPv6 fragment header.
pub fn frag6(nh: u8, offset: u16, more: bool, id: u32) -> Vec<u8> {
    let om = (offset & 0xfff8) | u16::from(more);
    cat(&[&[nh, 0], &om.to_be_bytes(), &id.to_be_bytes()])
}

pub struct Tcp {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub options: Vec<u8>,
}

impl Tcp {
    pub fn new(sport: u16, dport: u16) -> Tcp {
        Tcp { sport, dport, seq: 1000, ack: 2000, flags: 0x18, window: 8192, options: Vec::new() }
    }

    pub fn build(&self, payload: &[u8]) -> Vec<u8> {
        let hl = 20 + self.options.len();
        assert_eq!(hl & 3, 0);
        let mut h = Vec::new();
        h.extend(self.sport.to_be_bytes());
        h.extend(self.dport.to_be_bytes());
        h.extend(self.seq.to_be_bytes());
        h.extend(self.ack.to_be_bytes());
        h.extend([((hl / 4) as u8) << 4, self.flags]);
        h.extend(self.window.to_be_bytes());
        h.extend([0, 0, 0, 0]);
        h.extend(&self.options);
        h.extend(payload);
        h
    }
}

pub fn tcp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    Tcp::new(sport, dport).build(payload)
}

pub fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = (8 + payload.len()) as u16;
    cat(&[&sport.to_be_bytes(), &dport.to_be_bytes(), &len.to_be_bytes(), &[0, 0], payload])
}

pub fn icmp(msg_type: u8, code: u8, payload: &[u8]) -> Vec<u8> {
    cat(&[&[msg_type, code, 0, 0, 0, 1, 0, 1], payload])
}

/// GRE version 0 with optional checksum, key and sequence number.
pub fn gre(proto: u16, csum: bool, key: Option<u32>, seq: Option<u32>, payload: &[u8]) -> Vec<u8> {
    let mut fl = 0u16;
    let mut opt = Vec::new();
    if csum {
        fl |= 0x8000;
        opt.extend([0, 0, 0, 0]);
    }
    if let Some(k) = key {
        fl |= 0x2000;
        opt.extend(k.to_be_bytes());
    }
    if let Some(s) = seq {
        fl |= 0x1000;
        opt.extend(s.to_be_bytes());
    }
    cat(&[&fl.to_be_bytes(), &proto.to_be_bytes(), &opt, payload])
}

pub fn vxlan(vni: u32, payload: &[u8]) -> Vec<u8> {
    cat(&[&[0x08, 0, 0, 0], &(vni << 8).to_be_bytes(), payload])
}

pub fn geneve(proto: u16, vni: u32, opt_words: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![opt_words & 0x3f, 0];
    h.extend(proto.to_be_bytes());
    h.extend((vni << 8).to_be_bytes());
    h.resize(8 + usize::from(opt_words) * 4, 0x11);
    h.extend(payload);
    h
}

/// GTP-U G-PDU (or another message type) with optional sequence number.
pub fn gtpu(msg_type: u8, teid: u32, seq: Option<u16>, payload: &[u8]) -> Vec<u8> {
    let mut flags = 0x30u8;
    let mut opt = Vec::new();
    if let Some(s) = seq {
        flags |= 0x02;
        opt.extend(s.to_be_bytes());
        opt.extend([0, 0]);
    }
    let len = (opt.len() + payload.len()) as u16;
    cat(&[&[flags, msg_type], &len.to_be_bytes(), &teid.to_be_bytes(), &opt, payload])
}
