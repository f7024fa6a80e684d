//! Payload signatures of network services and VPNs (DHCP, NetBIOS, SNMP, IKE, WireGuard,
//! OpenVPN, databases, SMB, RDP, MQTT, ...): each a pure check of one payload against
//! the layout its specification fixes, with lengths that must add up to the payload's,
//! so that a random datagram matches with a negligible chance. Ports only narrow where a
//! layout alone is too loose (NTP's 48 bytes, syslog's `<PRI>`), never decide alone.

/// A DHCP message (RFC 2131 §2, on BOOTP's layout: RFC 951 §3): op 1 or 2, a hardware
/// address length of at most 16, and the magic cookie of the options at 236.
pub fn dhcp(b: &[u8]) -> bool {
    b.len() >= 240 && matches!(b[0], 1 | 2) && b[2] <= 16 && b[236..240] == [0x63, 0x82, 0x53, 0x63]
}

/// A DHCPv6 message (RFC 8415 §8, §9) on its ports (546 client, 547 server): a message
/// type of 1..=13 and, after the header (4 bytes, or 34 for a relay), options whose
/// lengths end exactly at the datagram's end.
pub fn dhcpv6(b: &[u8], client_port: u16, server_port: u16) -> bool {
    let ports = |p: u16| p == 546 || p == 547;
    if !(ports(client_port) && ports(server_port)) || b.len() < 4 {
        return false;
    }
    let mut at = match b[0] {
        1..=11 => 4,
        12 | 13 => 34,
        _ => return false,
    };
    let mut options = 0;
    while at + 4 <= b.len() {
        at += 4 + usize::from(u16::from_be_bytes([b[at + 2], b[at + 3]]));
        options += 1;
    }
    at == b.len() && options > 0
}

/// NTP (RFC 5905 §7.3) on port 123: version 1..=4, a 48-byte header, and then only what
/// may follow it: a MAC (key id and digest, 20 or 24 bytes), extension fields, or the
/// control messages of mode 6 (RFC 9327: a 12-byte header and its count of data).
pub fn ntp(b: &[u8], client_port: u16, server_port: u16) -> bool {
    if client_port != 123 && server_port != 123 || b.is_empty() {
        return false;
    }
    let (version, mode) = ((b[0] >> 3) & 7, b[0] & 7);
    if !(1..=4).contains(&version) || mode == 0 {
        return false;
    }
    match mode {
        6 => b.len() >= 12 && 12 + usize::from(u16::from_be_bytes([b[10], b[11]])) <= b.len(),
        7 => b.len() >= 8,
        _ => b.len() >= 48 && (b.len() - 48).is_multiple_of(4) && b.len() <= 48 + 1024,
    }
}

/// A NetBIOS name service message (RFC 1002 §4.2.1) on port 137: a DNS-shaped header
/// whose opcode is one NBNS uses, and a first name in NetBIOS's first-level encoding (32
/// letters A..P). Or a datagram service message (§4.4) on port 138: a type of 0x10..=0x16
/// and, for the data messages, a length that fits.
pub fn netbios(b: &[u8], client_port: u16, server_port: u16) -> bool {
    if client_port == 137 || server_port == 137 {
        if b.len() < 12 + 34 {
            return false;
        }
        let opcode = (b[2] >> 3) & 0xf;
        let name = &b[13..45];
        return matches!(opcode, 0 | 5..=8)
            && b[12] == 32
            && name.iter().all(|c| (b'A'..=b'P').contains(c))
            && (u16::from_be_bytes([b[4], b[5]]) + u16::from_be_bytes([b[6], b[7]])) > 0;
    }
    if client_port == 138 || server_port == 138 {
        return b.len() >= 10
            && match b[0] {
                0x10..=0x12 => b.len() >= 14 && usize::from(u16::from_be_bytes([b[10], b[11]])) + 14 <= b.len(),
                0x13..=0x16 => true,
                _ => false,
            };
    }
    false
}

/// SSDP (UPnP Device Architecture 2.0 §1.3): HTTP over UDP, a search or a notification
/// (to port 1900 or, as DIAL clients do, unicast to any port), or a search's answer
/// from port 1900 or carrying the `USN` or `ST` header only SSDP answers have.
pub fn ssdp(b: &[u8], client_port: u16, server_port: u16) -> bool {
    if b.starts_with(b"M-SEARCH * HTTP/1.1\r\n") || b.starts_with(b"NOTIFY * HTTP/1.1\r\n") {
        return true;
    }
    b.starts_with(b"HTTP/1.1 200 OK\r\n")
        && (client_port == 1900
            || server_port == 1900
            || b.windows(6).any(|w| w.eq_ignore_ascii_case(b"\r\nUSN:") || w[..5].eq_ignore_ascii_case(b"\r\nST:")))
}

/// A syslog message's priority (RFC 5424 §6.2.1, RFC 3164 §4.1.1): `<`, one to three
/// digits up to 191, `>`. Returns the offset after it.
fn syslog_pri(b: &[u8]) -> Option<usize> {
    if b.first() != Some(&b'<') {
        return None;
    }
    let digits = b[1..].iter().take(4).take_while(|c| c.is_ascii_digit()).count();
    if !(1..=3).contains(&digits) || b.get(1 + digits) != Some(&b'>') {
        return None;
    }
    let pri: u16 = std::str::from_utf8(&b[1..1 + digits]).ok()?.parse().ok()?;
    (pri <= 191).then_some(2 + digits)
}

/// Syslog: on port 514 (RFC 5426) a priority is enough; elsewhere, and over TCP (RFC
/// 6587), the priority must be followed by RFC 5424's version 1 and a full date, or by
/// RFC 3164's month.
pub fn syslog(b: &[u8], client_port: u16, server_port: u16) -> bool {
    let Some(at) = syslog_pri(b) else { return false };
    if client_port == 514 || server_port == 514 {
        return true;
    }
    let rest = &b[at..];
    let dated = rest.len() >= 12
        && rest.starts_with(b"1 ")
        && rest[2..6].iter().all(u8::is_ascii_digit)
        && rest[6] == b'-'
        && rest[9] == b'-';
    const MONTHS: [&[u8]; 12] =
        [b"Jan ", b"Feb ", b"Mar ", b"Apr ", b"May ", b"Jun ", b"Jul ", b"Aug ", b"Sep ", b"Oct ", b"Nov ", b"Dec "];
    dated || MONTHS.iter().any(|m| rest.starts_with(m))
}

/// The length of a BER element (X.690 §8.1.3) at `b[at..]`: (header length, content
/// length), definite forms of up to 4 length bytes.
fn ber_len(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let first = *b.get(at + 1)?;
    if first < 0x80 {
        return Some((2, usize::from(first)));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 4 {
        return None;
    }
    let bytes = b.get(at + 2..at + 2 + n)?;
    Some((2 + n, bytes.iter().fold(0usize, |a, &x| a << 8 | usize::from(x))))
}

/// SNMP (RFC 3416, RFC 3412): a BER SEQUENCE that fills the datagram exactly, starting
/// with the INTEGER version 0 (v1), 1 (v2c) or 3 (v3); v1 and v2c follow it with an
/// OCTET STRING community, v3 with the SEQUENCE of its header data.
pub fn snmp(b: &[u8]) -> bool {
    if b.first() != Some(&0x30) {
        return false;
    }
    let Some((h, len)) = ber_len(b, 0) else { return false };
    if h + len != b.len() || b.get(h..h + 3).is_none() {
        return false;
    }
    matches!((b[h], b[h + 1], b[h + 2], b.get(h + 3)), (0x02, 0x01, 0 | 1, Some(0x04)) | (0x02, 0x01, 3, Some(0x30)))
}

/// An IKE header (RFC 7296 §3.1, RFC 2408 §3.1): a non-zero initiator SPI, a major
/// version of 1 or 2, and a length equal to the message's.
fn ike(b: &[u8]) -> bool {
    b.len() >= 28
        && b[..8] != [0; 8]
        && matches!(b[17] >> 4, 1 | 2)
        && u32::from_be_bytes([b[24], b[25], b[26], b[27]]) as usize == b.len()
}

/// IPsec over UDP: IKE on port 500, and on port 4500 (RFC 3948 §2) IKE after the four
/// zero bytes of the non-ESP marker, a NAT keepalive (one 0xFF byte), or ESP: an SPI
/// outside the reserved 1..=255 (RFC 4303 §2.1), a sequence number that starts from 1,
/// and room for an IV and the ICV.
pub fn ipsec(b: &[u8], client_port: u16, server_port: u16) -> bool {
    if client_port == 500 || server_port == 500 {
        return ike(b);
    }
    if client_port != 4500 && server_port != 4500 {
        return false;
    }
    match b {
        [0xff] => true,
        [0, 0, 0, 0, rest @ ..] => ike(rest),
        _ if b.len() >= 24 => {
            let spi = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let seq = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            spi > 255 && seq >= 1
        }
        _ => false,
    }
}

/// WireGuard (the protocol paper §5.4): a message type 1..=4 and three reserved zero
/// bytes, then the size each type has: 148 bytes for a handshake initiation, 92 for a
/// response, 64 for a cookie reply, and 32 plus a multiple of 16 for transport data.
pub fn wireguard(b: &[u8]) -> bool {
    if b.len() < 32 || b[1..4] != [0, 0, 0] {
        return false;
    }
    match b[0] {
        1 => b.len() == 148,
        2 => b.len() == 92,
        3 => b.len() == 64,
        4 => (b.len() - 32).is_multiple_of(16),
        _ => false,
    }
}

/// OpenVPN's first packets (the "reliability layer" of its ssl.h/reliable.h): the
/// client's hard reset (opcode 1, 7 or 10 in the high five bits, key id 0) with a session
/// id and an empty or short ack array. Over TCP, after a two-byte length that is the
/// rest of the payload. Returns the opcode.
pub fn openvpn_opcode(b: &[u8], tcp: bool) -> Option<u8> {
    let b = if tcp {
        let n = usize::from(u16::from_be_bytes([*b.first()?, *b.get(1)?]));
        if n + 2 != b.len() {
            return None;
        }
        &b[2..]
    } else {
        b
    };
    // Opcode, session id (8), ack count; with an HMAC (tls-auth) the count comes after it.
    if b.len() < 14 || b[0] & 7 != 0 {
        return None;
    }
    let op = b[0] >> 3;
    matches!(op, 1 | 2 | 7 | 8 | 10).then_some(op)
}

/// Redis's RESP (redis.io "RESP protocol spec"): a client command is an array of bulk
/// strings, `*<n>\r\n$<len>\r\n`; the answer to an inline `PING` is `+PONG\r\n`.
pub fn redis_request(b: &[u8]) -> bool {
    let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
    if b.first() != Some(&b'*') {
        return false;
    }
    let n = digits(&b[1..]);
    if n == 0 || n > 5 || b.get(1 + n..3 + n) != Some(b"\r\n") || b.get(3 + n) != Some(&b'$') {
        return false;
    }
    let m = digits(&b[4 + n..]);
    m > 0 && m <= 9 && b.get(4 + n + m..6 + n + m) == Some(b"\r\n")
}

/// MySQL's initial handshake packet (protocol version 10), sent by the server first: a
/// 3-byte length that is the rest of the payload, sequence 0, the version byte 10 and a
/// printable server version ended by NUL.
pub fn mysql_greeting(b: &[u8]) -> bool {
    if b.len() < 5 + 2 + 4 {
        return false;
    }
    let len = usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16;
    if len + 4 != b.len() || b[3] != 0 || b[4] != 10 {
        return false;
    }
    let v = &b[5..];
    let end = v.iter().position(|&c| c == 0).unwrap_or(v.len());
    (1..=64).contains(&end) && end < v.len() && v[..end].iter().all(|c| c.is_ascii_graphic())
}

/// PostgreSQL's first message from the client (protocol 3.0, "Message Formats"): a
/// length equal to the payload's, then the StartupMessage's version 3.0 (196608), or
/// the SSLRequest (80877103), GSSENCRequest (80877104) or CancelRequest (80877102)
/// codes with their fixed lengths.
pub fn postgresql_startup(b: &[u8]) -> bool {
    if b.len() < 8 {
        return false;
    }
    let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let code = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
    match code {
        196608 => len == b.len() && len > 8 && b.ends_with(&[0]),
        80877103 | 80877104 => len == 8 && b.len() == 8,
        80877102 => len == 16 && b.len() == 16,
        _ => false,
    }
}

/// SMB over TCP (MS-SMB2 §2.1, RFC 1002 §4.3.1 session message): a zero type byte, a
/// 3-byte length of at least the SMB header, and the protocol id `\xFFSMB` (SMB1),
/// `\xFESMB` (SMB2/3) or `\xFDSMB` (SMB3 transform).
pub fn smb(b: &[u8]) -> bool {
    b.len() >= 8
        && b[0] == 0
        && (usize::from(b[1]) << 16 | usize::from(b[2]) << 8 | usize::from(b[3])) >= 32
        && matches!(b[4], 0xfd..=0xff)
        && &b[5..8] == b"SMB"
}

/// RDP's X.224 Connection Request or Confirm in a TPKT (MS-RDPBCGR §2.2.1.1, §2.2.1.2;
/// RFC 1006): version 3, a TPKT length that is the payload's, a CR (0xE0) or CC (0xD0)
/// TPDU, and what only RDP puts in it: the `Cookie: mstshash=` of a request, or an RDP
/// negotiation request, response or failure (type 1, 2 or 3, length 8) at its end.
pub fn rdp(b: &[u8]) -> bool {
    if b.len() < 11 || b[0] != 3 || b[1] != 0 || usize::from(u16::from_be_bytes([b[2], b[3]])) != b.len() {
        return false;
    }
    if usize::from(b[4]) + 5 != b.len() || !matches!(b[5], 0xe0 | 0xd0) {
        return false;
    }
    let rest = &b[11..];
    if rest.starts_with(b"Cookie: mstshash=") {
        return true;
    }
    let neg = &b[b.len().saturating_sub(8)..];
    b.len() >= 19 && matches!(neg[0], 1..=3) && neg[2..4] == [8, 0]
}

/// MQTT's CONNECT (MQTT 3.1.1 §3.1, 5.0 §3.1): type 1 with no flags, a remaining length
/// (variable-length integer) that is the rest of the payload, and the protocol name
/// `MQTT` (level 4 or 5) or `MQIsdp` (level 3).
pub fn mqtt_connect(b: &[u8]) -> bool {
    if b.first() != Some(&0x10) {
        return false;
    }
    let (mut len, mut at, mut shift) = (0usize, 1usize, 0);
    loop {
        let Some(&c) = b.get(at) else { return false };
        len |= usize::from(c & 0x7f) << shift;
        at += 1;
        if c & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 21 {
            return false;
        }
    }
    if at + len != b.len() {
        return false;
    }
    let v = &b[at..];
    (v.starts_with(b"\x00\x04MQTT") && matches!(v.get(6), Some(4 | 5)))
        || (v.starts_with(b"\x00\x06MQIsdp") && v.get(8) == Some(&3))
}

/// A TFTP packet's kind (RFC 1350 §5, RFC 2347 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tftp {
    /// A read or write request (opcode 1, 2: file name, NUL, a mode RFC 1350 knows,
    /// NUL, then option pairs), or an option acknowledgment (opcode 6, pairs): enough
    /// alone.
    Request,
    /// DATA of block 1 (opcode 3), the first packet of a read's transfer.
    Data1,
    /// ACK of block 0 or 1 (opcode 4, 4 bytes), a write's first answer or a read's.
    Ack(u16),
}

/// NUL-terminated printable strings filling `b` exactly, at least `min` of them: the
/// first lower-cased into `first` (up to 8 bytes).
fn nul_strings(b: &[u8], min: usize, first: &mut [u8; 8]) -> bool {
    if b.last() != Some(&0) {
        return false;
    }
    let mut n = 0;
    for (i, s) in b[..b.len() - 1].split(|&c| c == 0).enumerate() {
        if s.len() > 255 || !s.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
            return false;
        }
        if i == 1 && s.len() <= 8 {
            for (d, c) in first.iter_mut().zip(s) {
                *d = c.to_ascii_lowercase();
            }
        }
        n += 1;
    }
    n >= min
}

/// TFTP (RFC 1350): what a packet is, if it is one. To port 69 a request's mode may be
/// one RFC 1350 does not know (a broken client's is still a TFTP request: ndpi__tftp.pcap
/// frame 1 sends an empty one).
pub fn tftp(b: &[u8], on_69: bool) -> Option<Tftp> {
    if b.len() < 4 || b[0] != 0 {
        return None;
    }
    match b[1] {
        1 | 2 => {
            let mut mode = [0u8; 8];
            let ok = nul_strings(&b[2..], 2, &mut mode);
            let known = [&b"netascii"[..], b"octet", b"mail"]
                .iter()
                .any(|m| mode.starts_with(m) && mode[m.len()..].iter().all(|&c| c == 0));
            (ok && (known || on_69)).then_some(Tftp::Request)
        }
        6 => nul_strings(&b[2..], 2, &mut [0; 8]).then_some(Tftp::Request),
        3 if b[2..4] == [0, 1] && b.len() <= 4 + 65464 => Some(Tftp::Data1),
        4 if b.len() == 4 && b[2] == 0 && b[3] <= 1 => Some(Tftp::Ack(u16::from(b[3]))),
        _ => None,
    }
}

/// A DNSCrypt certificate query (dnscrypt.info "Protocol", §"Certificates"): a DNS
/// question for `2.dnscrypt-cert.<provider>` (or version 1's `1.`), which every client
/// asks its resolver in clear before it encrypts; or a resolver's encrypted answer,
/// which starts with the magic `r6fnvWj8`.
pub fn dnscrypt(b: &[u8]) -> bool {
    b.get(12..28)
        .is_some_and(|q| q[0] == 1 && matches!(q[1], b'1' | b'2') && q[2] == 13 && &q[3..16] == b"dnscrypt-cert")
        || b.starts_with(b"r6fnvWj8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// The first datagrams of ndpi__snmp.pcap (frames 1, 2), ndpi__wireguard.pcap
    /// (frame 1's type and size) and ndpi__openvpn.pcap (frames 1 and 2, the hard resets).
    #[test]
    fn real_packets() {
        assert!(snmp(&hex("302902010004067075626c6963a11c02044b781a6e020100020100300e300c06082b060102010105000500")));
        let mut wg = hex("01000000d837d030");
        wg.resize(148, 0x5a);
        assert!(wireguard(&wg));
        wg.truncate(147);
        assert!(!wireguard(&wg));
        assert_eq!(openvpn_opcode(&hex("38334857703d96db390000000000"), false), Some(7));
        assert_eq!(openvpn_opcode(&hex("40d31c3a6964602fa00100000000334857703d96db3900000000"), false), Some(8));
        assert!(redis_request(b"*1\r\n$4\r\nPING\r\n"));
        assert!(!redis_request(b"*1\r\nPING\r\n"));
    }

    #[test]
    fn layouts() {
        // A DHCPDISCOVER's fixed part, then the cookie and an end option.
        let mut d = vec![1, 1, 6, 0];
        d.resize(236, 0);
        d.extend_from_slice(&[0x63, 0x82, 0x53, 0x63, 53, 1, 1, 255]);
        assert!(dhcp(&d));
        d[236] = 0;
        assert!(!dhcp(&d));
        // DHCPv6 SOLICIT with an elapsed-time option.
        let s = [1, 0xaa, 0xbb, 0xcc, 0, 8, 0, 2, 0, 0];
        assert!(dhcpv6(&s, 546, 547));
        assert!(!dhcpv6(&s[..9], 546, 547));
        assert!(!dhcpv6(&s, 40000, 547));
        // NTP v4 client request.
        let mut n = vec![0x23];
        n.resize(48, 0);
        assert!(ntp(&n, 40000, 123));
        assert!(!ntp(&n[..47], 40000, 123));
        assert!(!ntp(&n, 40000, 124));
        assert!(syslog(b"<34>Oct 11 22:14:15 mymachine su: 'su root' failed", 514, 514));
        assert!(!syslog(b"<342>x", 514, 514));
        assert!(syslog(b"<22>1 2021-04-18T14:51:48+04:00 iPhone7,2 x", 49948, 52173));
        assert!(!syslog(b"<22>hello", 49948, 52173));
        assert!(ssdp(b"M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\n\r\n", 50000, 1900));
        // ndpi__tftp.pcap frames 3, 2 (an empty file name), 108 (options), 4, 104.
        assert_eq!(tftp(b"\0\x01rfc1350.txt\0octet\0", false), Some(Tftp::Request));
        assert_eq!(tftp(b"\0\x01\0octet\0", false), Some(Tftp::Request));
        assert_eq!(tftp(b"\0\x02empty100KB\0octet\0blksize\x001468\0tsize\x00100000\0", false), Some(Tftp::Request));
        assert_eq!(tftp(b"\0\x01file\0binary\0", false), None);
        assert_eq!(tftp(b"\0\x01file\0binary\0", true), Some(Tftp::Request));
        assert_eq!(tftp(&[0, 3, 0, 1, 9, 9], false), Some(Tftp::Data1));
        assert_eq!(tftp(&[0, 4, 0, 0], false), Some(Tftp::Ack(0)));
        // NBNS name query for "*" (CKAAAA...).
        let mut q = hex("a0c2011000010000000000");
        q.push(0);
        q.push(32);
        q.extend_from_slice(b"CKAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
        q.extend_from_slice(&[0, 0, 0x21, 0, 1]);
        assert!(netbios(&q, 137, 137));
        q[20] = b'Z';
        assert!(!netbios(&q, 137, 137));
    }

    #[test]
    fn vpn_and_ike() {
        let mut ike_init =
            vec![1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 33, 0x20, 34, 8, 0, 0, 0, 0, 0, 0, 0, 28];
        assert!(ipsec(&ike_init, 500, 500));
        ike_init[27] = 29;
        assert!(!ipsec(&ike_init, 500, 500));
        assert!(ipsec(&[0xff], 4500, 14500));
        let esp = [0, 0, 0x12, 0x34, 0, 0, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9];
        assert!(ipsec(&esp, 4500, 14500));
        assert!(!ipsec(&esp, 4501, 14500));
    }

    #[test]
    fn tcp_services() {
        let mut g = vec![0, 0, 0, 0, 10];
        g.extend_from_slice(b"8.0.36\0");
        g.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 0]);
        let n = g.len() - 4;
        g[0] = n as u8;
        assert!(mysql_greeting(&g));
        g[4] = 9;
        assert!(!mysql_greeting(&g));
        assert!(postgresql_startup(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]));
        let mut s = vec![0, 0, 0, 0, 0, 3, 0, 0];
        s.extend_from_slice(b"user\0bob\0\0");
        s[3] = s.len() as u8;
        assert!(postgresql_startup(&s));
        let mut smb2 = vec![0, 0, 0, 68, 0xfe, b'S', b'M', b'B'];
        smb2.resize(72, 0);
        assert!(smb(&smb2));
        // X.224 CR with an RDP negotiation request (MS-RDPBCGR §4.1.1, no cookie).
        let cr = hex("030000130ee000000000000100080003000000");
        assert!(rdp(&cr));
        let mut cookie = hex("0300002a25e00000000000");
        cookie.extend_from_slice(b"Cookie: mstshash=eltons\r\n");
        cookie.extend_from_slice(&hex("0100080000000000")[..6]);
        let len = cookie.len();
        cookie[3] = len as u8;
        cookie[4] = (len - 5) as u8;
        assert!(rdp(&cookie));
        let connect = hex("101000044d5154540402003c0004636c6964");
        assert!(mqtt_connect(&connect));
        assert!(!mqtt_connect(&connect[..connect.len() - 1]));
    }

    proptest::proptest! {
        /// Every detector takes any bytes on any ports without panicking (they index
        /// into untrusted payloads), and a detector that needs its port says no without it.
        #[test]
        fn any_bytes_any_ports(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400), c in 0u16..2000, s in 0u16..2000) {
            let _ = (dhcp(&b), dhcpv6(&b, c, s), netbios(&b, c, s), ssdp(&b, c, s), syslog(&b, c, s), snmp(&b));
            let _ = (ipsec(&b, c, s), wireguard(&b), openvpn_opcode(&b, true), openvpn_opcode(&b, false));
            let _ = (tftp(&b, c == 69), redis_request(&b), mysql_greeting(&b), postgresql_startup(&b), smb(&b), rdp(&b), mqtt_connect(&b), dnscrypt(&b));
            if ![123, 546, 547].contains(&c) && ![123, 546, 547].contains(&s) {
                proptest::prop_assert!(!ntp(&b, c, s) && !dhcpv6(&b, c, s));
            }
        }
    }
}
