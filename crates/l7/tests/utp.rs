//! uTP (BEP 29) classification: real uTP packets are BitTorrent, and DHCP, whose
//! requests start like a uTP header, is not.

use tapstat_l7::classify::signatures::utp_header;
use tapstat_l7::{App, Dir, L7Config, L7Flow, Transport};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// A DHCP message of `op` (1 request, 2 reply) with Ethernet's htype, the magic cookie
/// and a message type option (RFC 2131 §2, §3; RFC 2132 §9.6), padded as clients do.
fn dhcp(op: u8, message_type: u8) -> Vec<u8> {
    let mut m = vec![op, 1, 6, 0, 0x3d, 0x1d, 0x2b, 0x7e, 0, 0, 0x80, 0];
    m.resize(28, 0); // ciaddr, yiaddr, siaddr, giaddr: 0.0.0.0
    m.extend_from_slice(&[0x00, 0x0b, 0x82, 0x01, 0xfc, 0x42]); // chaddr
    m.resize(236, 0); // rest of chaddr, sname, file
    m.extend_from_slice(&[0x63, 0x82, 0x53, 0x63]);
    m.extend_from_slice(&[53, 1, message_type, 61, 7, 1, 0x00, 0x0b, 0x82, 0x01, 0xfc, 0x42, 255]);
    m.resize(300, 0);
    m
}

/// DHCP Discover and Requests from a client (UDP 68 → 67) were taken for three uTP
/// ST_DATA packets of one connection (op 1 reads as type 0 version 1, htype 1 as a
/// selective ACK, hlen and hops as a connection id) and the flow called BitTorrent.
#[test]
fn dhcp_is_not_utp() {
    for m in [dhcp(1, 1), dhcp(1, 3), dhcp(2, 2), dhcp(2, 5)] {
        assert_eq!(utp_header(&m), None);
    }
    let cfg = L7Config::default();
    let mut f = L7Flow::new(Transport::Udp, 68, 67);
    for (dir, m) in [
        (Dir::ClientToServer, dhcp(1, 1)),
        (Dir::ServerToClient, dhcp(2, 2)),
        (Dir::ClientToServer, dhcp(1, 3)),
        (Dir::ServerToClient, dhcp(2, 5)),
        (Dir::ClientToServer, dhcp(1, 3)),
        (Dir::ClientToServer, dhcp(1, 3)),
    ] {
        f.on_payload(&cfg, dir, &m, 0);
    }
    assert_ne!(f.app(), Some(App::Bittorrent));
}

/// Packets of ndpi__bittorrent_utp.pcap (frames 3, 4, 7 and the head of 5): a SYN, a
/// STATE with the extension bits, a bare STATE, and DATA carrying the BitTorrent
/// handshake. Each is a uTP header, and the SYN and its answer make the flow BitTorrent.
#[test]
fn real_utp_packets_are_bittorrent() {
    let syn = hex("4100530210eeb2f00000000000000000e7f50000");
    let state_ext = hex("2102530206ff3f5f7fffffff0000f00049c7e7f500080000000000000000");
    let state = hex("210053020702908cf6109f290000f00049c8e7f6");
    let mut data = hex("0100530310f0687609f1291700100000e7f649c6");
    data.extend_from_slice(b"\x13BitTorrent protocol");
    assert_eq!(utp_header(&syn), Some((4, 0x5302)));
    assert_eq!(utp_header(&state_ext), Some((2, 0x5302)));
    assert_eq!(utp_header(&state), Some((2, 0x5302)));
    assert_eq!(utp_header(&data), Some((0, 0x5303)));
    // What BEP 29 does not allow: data after a STATE, a DATA without data, an extension
    // past the datagram's end, an unknown extension, a selective ACK of 3 bytes.
    let state_with_data = [&state[..], b"x"].concat();
    let mut data_without_data = syn.clone();
    data_without_data[0] = 0x01;
    let mut past = state_ext.clone();
    past.truncate(29);
    let mut unknown = state_ext.clone();
    unknown[1] = 3;
    let mut sack3 = state_ext.clone();
    sack3[1] = 1;
    sack3[21] = 3;
    for b in [&state_with_data, &data_without_data, &past, &unknown, &sack3] {
        assert_eq!(utp_header(b), None, "{b:02x?}");
    }

    let cfg = L7Config::default();
    let mut f = L7Flow::new(Transport::Udp, 64969, 40959);
    f.on_payload(&cfg, Dir::ClientToServer, &syn, 0);
    f.on_payload(&cfg, Dir::ServerToClient, &state_ext, 1);
    assert_eq!(f.app(), Some(App::Bittorrent));
}
