//! Payload signatures: cheap checks on the first bytes of each direction (`probe_tcp`,
//! `probe_udp`), answering yes / maybe / no in the Suricata manner. A few need more than
//! one packet (SMTP's greeting and EHLO, RTP's sequence, uTP's connection id); what they
//! remember is `ProbeMemory`, a few bytes kept inline in the flow.

use super::{services, App};
use crate::dns::parser::{Header as DnsHeader, Message as DnsMessage};
use crate::http::parser::{probe_request, probe_response};
use crate::quic::parser::is_plausible_version;
use crate::tls::parser::MAX_RECORD_LEN;
use crate::Dir;

/// A probe's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Yes(App),
    /// Could still match with more bytes or packets.
    Maybe,
    No,
}

/// What the probes remember between packets of a flow (20 bytes, inline in `L7Flow`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeMemory {
    /// The server greeted with `220` (SMTP or FTP; the client's first command decides).
    greeting_220: bool,
    /// `CLIENT_SPOKE`, `OPENVPN_RESET`: what earlier packets showed.
    flags: u8,
    /// RTP per direction: SSRC, last sequence number, payload type, packets in a row.
    rtp_ssrc: [u32; 2],
    rtp_seq: [u16; 2],
    rtp_pt_run: [u8; 2],
    /// uTP: the connection id seen and how many packets agreed with it.
    utp_conn: u16,
    utp_run: u8,
}

/// The client has sent payload (a server that speaks first, as POP3's, has not).
const CLIENT_SPOKE: u8 = 1;
/// The client sent an OpenVPN hard reset; the server's answers it.
const OPENVPN_RESET: u8 = 2;
/// TFTP transfers on their own ports (RFC 1350 §4): DATA 1 seen, or ACK 0 seen (a write);
/// the other side's ACK 1 or DATA 1 makes the flow TFTP.
const TFTP_DATA1: u8 = 4;
const TFTP_ACK0: u8 = 8;

fn starts_with_ci(b: &[u8], p: &[u8]) -> bool {
    b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p)
}

/// `Some(true)` if `b` starts with `sig`, `None` if `b` is a proper prefix of it.
fn prefix(b: &[u8], sig: &[u8]) -> Option<bool> {
    let n = sig.len().min(b.len());
    if b[..n] != sig[..n] {
        Some(false)
    } else if b.len() < sig.len() {
        None
    } else {
        Some(true)
    }
}

/// The first line, without its line end (bounded).
fn first_line(b: &[u8]) -> &[u8] {
    let b = &b[..b.len().min(512)];
    &b[..line_end(b)]
}

/// The offset of the first CR or LF in `b`, else its length. Eight bytes at a time: most
/// probed payloads are binary and hold neither, so the scan runs to the bound.
fn line_end(b: &[u8]) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero iff its bit 7 is set in the result (no false positives on
    // the lowest such byte, which is the one `trailing_zeros` reports).
    let zero_bytes = |x: u64| x.wrapping_sub(LO) & !x & HI;
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let hits = zero_bytes(w ^ (LO * u64::from(b'\r'))) | zero_bytes(w ^ (LO * u64::from(b'\n')));
        if hits != 0 {
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let rest = chunks.remainder();
    at + rest.iter().position(|&c| c == b'\r' || c == b'\n').unwrap_or(rest.len())
}

/// A TLS record that starts a handshake (RFC 8446 §5.1) with the hello its direction
/// sends first: ClientHello (1) from the client, ServerHello (2) from the server.
pub fn tls_hello(dir: Dir, b: &[u8]) -> Verdict {
    match b {
        [22, 3, minor, hi, lo, kind, ..] if *minor <= 4 => {
            let len = u16::from_be_bytes([*hi, *lo]);
            let want = if dir == Dir::ClientToServer { 1 } else { 2 };
            if (4..=MAX_RECORD_LEN).contains(&len) && *kind == want {
                Verdict::Yes(App::Tls)
            } else {
                Verdict::No
            }
        }
        [22] | [22, 3] | [22, 3, 0..=4] | [22, 3, 0..=4, _] | [22, 3, 0..=4, _, _] => Verdict::Maybe,
        _ => Verdict::No,
    }
}

/// A TLS record header of any type where a capture joins a connection late: type 20-23,
/// version 3.x and a length that ends at the payload's end, at another record header, or
/// beyond a full-sized segment.
pub fn tls_record(b: &[u8]) -> bool {
    let header =
        |h: &[u8]| matches!(h, [20..=23, 3, 0..=4, hi, lo, ..] if u16::from_be_bytes([*hi, *lo]) <= MAX_RECORD_LEN);
    if b.len() < 5 || !header(b) {
        return false;
    }
    let end = 5 + usize::from(u16::from_be_bytes([b[3], b[4]]));
    end == b.len() || b.get(end..).is_some_and(|r| r.len() >= 5 && header(r)) || (end > b.len() && b.len() >= 500)
}

/// Request or status lines of HTTP/1.x, RTSP (RFC 7826 §4: the same shape with
/// `RTSP/1.0`) and SIP (RFC 3261 §7: `SIP/2.0`).
fn text_protocol(dir: Dir, b: &[u8]) -> Verdict {
    let line = first_line(b);
    match dir {
        Dir::ClientToServer => {
            if line.ends_with(b" SIP/2.0") {
                return Verdict::Yes(App::Sip);
            }
            if line.ends_with(b" RTSP/1.0") || line.ends_with(b" RTSP/2.0") {
                return Verdict::Yes(App::Rtsp);
            }
            match probe_request(b) {
                Some(true) => Verdict::Yes(App::Http),
                None => Verdict::Maybe,
                Some(false) => Verdict::No,
            }
        }
        Dir::ServerToClient => {
            if line.starts_with(b"SIP/2.0 ") {
                return Verdict::Yes(App::Sip);
            }
            if line.starts_with(b"RTSP/1.0 ") {
                return Verdict::Yes(App::Rtsp);
            }
            match probe_response(b) {
                Some(true) => Verdict::Yes(App::Http),
                None => Verdict::Maybe,
                Some(false) => Verdict::No,
            }
        }
    }
}

/// The first payload of a TCP direction.
pub fn probe_tcp(dir: Dir, b: &[u8], mem: &mut ProbeMemory, client_port: u16, server_port: u16) -> Verdict {
    if b.is_empty() {
        return Verdict::Maybe;
    }
    let mut maybe = false;
    // In order, and the second only when the first did not decide.
    for probe in [tls_hello, text_protocol] {
        match probe(dir, b) {
            Verdict::Yes(a) => return Verdict::Yes(a),
            Verdict::Maybe => maybe = true,
            Verdict::No => {}
        }
    }
    // RFC 4253 §4.2: both sides send an identification string starting with "SSH-".
    match prefix(b, b"SSH-") {
        Some(true) => return Verdict::Yes(App::Ssh),
        None => maybe = true,
        Some(false) => {}
    }
    // BEP 3: the handshake starts with 19 and "BitTorrent protocol".
    match prefix(b, b"\x13BitTorrent protocol") {
        Some(true) => return Verdict::Yes(App::Bittorrent),
        None => maybe = true,
        Some(false) => {}
    }
    if services::syslog(b, client_port, server_port) {
        return Verdict::Yes(App::Syslog);
    }
    if let Some(app) = tcp_service(dir, b, mem) {
        return Verdict::Yes(app);
    }
    match dir {
        Dir::ServerToClient => {
            // RFC 5321 §4.2 and RFC 959 §4.2 greet with 220; RFC 1939 §4 with +OK;
            // RFC 9051 §7.1 with an untagged OK or PREAUTH.
            if b.starts_with(b"220 ") || b.starts_with(b"220-") {
                mem.greeting_220 = true;
                return Verdict::Maybe;
            }
            // POP3's server speaks first; Redis answers `+OK` to a client that spoke.
            if b.starts_with(b"+OK") && mem.flags & CLIENT_SPOKE == 0 {
                return Verdict::Yes(App::Pop3);
            }
            if b.starts_with(b"* OK") || b.starts_with(b"* PREAUTH") {
                return Verdict::Yes(App::Imap);
            }
        }
        Dir::ClientToServer => {
            if mem.greeting_220 {
                if starts_with_ci(b, b"EHLO") || starts_with_ci(b, b"HELO") {
                    return Verdict::Yes(App::Smtp);
                }
                if ["USER", "AUTH", "FEAT", "SYST", "OPTS", "PASV"].iter().any(|c| starts_with_ci(b, c.as_bytes())) {
                    return Verdict::Yes(App::Ftp);
                }
            }
        }
    }
    if tls_record(b) {
        return Verdict::Yes(App::Tls);
    }
    // DNS over TCP (RFC 1035 §4.2.2): a length prefix, then a plausible message.
    if b.len() >= 14 {
        let n = usize::from(u16::from_be_bytes([b[0], b[1]]));
        let on_53 = client_port == 53 || server_port == 53;
        if (on_53 || n + 2 == b.len()) && dns_message(&b[2..(2 + n).min(b.len())], on_53) {
            return Verdict::Yes(App::Dns);
        }
    }
    if maybe || b.len() < 8 {
        Verdict::Maybe
    } else {
        Verdict::No
    }
}

/// The TCP services of `services`: databases, SMB, RDP, MQTT, OpenVPN.
fn tcp_service(dir: Dir, b: &[u8], mem: &mut ProbeMemory) -> Option<App> {
    match dir {
        Dir::ClientToServer => {
            mem.flags |= CLIENT_SPOKE;
            if services::redis_request(b) {
                return Some(App::Redis);
            }
            if services::postgresql_startup(b) {
                return Some(App::Postgresql);
            }
            if services::mqtt_connect(b) {
                return Some(App::Mqtt);
            }
            if matches!(services::openvpn_opcode(b, true), Some(7 | 10)) {
                return Some(App::Openvpn);
            }
        }
        Dir::ServerToClient => {
            if services::mysql_greeting(b) {
                return Some(App::Mysql);
            }
            // The answer to an inline `PING`.
            if mem.flags & CLIENT_SPOKE != 0 && b == b"+PONG\r\n" {
                return Some(App::Redis);
            }
        }
    }
    if services::smb(b) {
        return Some(App::Smb);
    }
    if services::rdp(b) {
        return Some(App::Rdp);
    }
    None
}

/// A DNS message: a plausible header and, unless `loose`, a question that parses.
fn dns_message(b: &[u8], loose: bool) -> bool {
    let Some(h) = DnsHeader::parse(b) else { return false };
    h.is_plausible(b.len()) && (loose || DnsMessage::validate(b) == Ok(true))
}

/// STUN (RFC 8489 §5): two zero bits, a length that is a multiple of 4 and fills the
/// datagram, and the magic cookie 0x2112A442.
pub fn stun(b: &[u8]) -> bool {
    b.len() >= 20
        && b[0] & 0xc0 == 0
        && b[4..8] == [0x21, 0x12, 0xa4, 0x42]
        && usize::from(u16::from_be_bytes([b[2], b[3]])) + 20 == b.len()
}

/// A DTLS record header (RFC 6347 §4.1) with a DTLS version, or the pre-standard
/// 0x0100 of OpenSSL before 0.9.8f that Cisco AnyConnect still speaks.
pub fn dtls(b: &[u8]) -> bool {
    matches!(b, [20..=23, 0xfe, 0xff | 0xfd | 0xfc, ..] | [20..=23, 0x01, 0x00, ..]) && b.len() >= 13 && {
        let len = usize::from(u16::from_be_bytes([b[11], b[12]]));
        13 + len <= b.len()
    }
}

/// A QUIC long header with a plausible version (RFC 8999 §5.1), or gQUIC's public
/// header with its version flag and a `Q0xx` version.
pub fn quic(b: &[u8]) -> bool {
    if b.len() >= 7 && b[0] & 0x80 != 0 {
        let v = u32::from_be_bytes([b[1], b[2], b[3], b[4]]);
        // Q046 keeps gQUIC's nibble-coded connection id lengths in byte 5.
        let gquic = v >> 24 == 0x51;
        if is_plausible_version(v) && (b[5] <= 20 || gquic) {
            return true;
        }
    }
    // gQUIC ≤ Q043: public flags with the version bit (0x01) and an 8-byte connection id.
    b.len() >= 13 && b[0] & 0x81 == 0x01 && b[0] & 0x08 != 0 && b[9] == b'Q' && b[10] == b'0'
}

/// BitTorrent over UDP: a DHT message (BEP 5, a bencoded dictionary with `y` and `t`
/// keys; `d1:ad2:id20:` and `d1:rd2:id20:` are queries and responses), or the UDP
/// tracker's connect magic (BEP 15).
pub fn bittorrent_udp(b: &[u8]) -> bool {
    if b.starts_with(b"d1:ad2:id20:") || b.starts_with(b"d1:rd2:id20:") || b.starts_with(b"d1:eli") {
        return true;
    }
    if b.starts_with(b"d") && b.ends_with(b"e") && b.len() < 2048 {
        let w = |p: &[u8]| b.windows(p.len()).any(|x| x == p);
        if w(b"1:y1:") && w(b"1:t") {
            return true;
        }
    }
    // BEP 14 local service discovery: an HTTP-like multicast announce.
    if b.starts_with(b"BT-SEARCH * HTTP/1.1") {
        return true;
    }
    b.len() >= 16 && b[..8] == [0, 0, 0x04, 0x17, 0x27, 0x10, 0x19, 0x80] && b[8..12] == [0, 0, 0, 0]
}

/// SIP over UDP: a request line ending in `SIP/2.0` or a status line starting with it.
pub fn sip(b: &[u8]) -> bool {
    let l = first_line(b);
    l.starts_with(b"SIP/2.0 ") || (l.ends_with(b" SIP/2.0") && l.windows(5).any(|w| w.eq_ignore_ascii_case(b" sip:")))
}

/// RTCP (RFC 3550 §6.1): a compound packet that starts with SR or RR, every part of
/// version 2 with a packet type in 192..=223 (RFC 5761 §4) and lengths that add up to the
/// datagram exactly.
pub fn rtcp(b: &[u8]) -> bool {
    if b.len() < 8 || b[0] >> 6 != 2 || !matches!(b[1], 200 | 201) {
        return false;
    }
    let mut at = 0usize;
    while at + 4 <= b.len() {
        if b[at] >> 6 != 2 || !(192..=223).contains(&b[at + 1]) {
            return false;
        }
        at += (usize::from(u16::from_be_bytes([b[at + 2], b[at + 3]])) + 1) * 4;
    }
    at == b.len()
}

/// An RTP header (RFC 3550 §5.1): version 2, room for the CSRCs, and a payload type
/// outside RTCP's range (RFC 5761 §4). Returns (payload type, sequence, SSRC).
pub fn rtp_header(b: &[u8]) -> Option<(u8, u16, u32)> {
    if b.len() < 12 || b[0] >> 6 != 2 {
        return None;
    }
    let cc = usize::from(b[0] & 0x0f);
    let pt = b[1] & 0x7f;
    if b.len() < 12 + 4 * cc || (64..=95).contains(&pt) {
        return None;
    }
    let seq = u16::from_be_bytes([b[2], b[3]]);
    let ssrc = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
    Some((pt, seq, ssrc))
}

/// uTP (BEP 29) header: version 1 in the low nibble of the first byte, a type 0..=4
/// (ST_DATA, ST_FIN, ST_STATE, ST_RESET, ST_SYN) in its high nibble, and a chain of
/// extensions that fits the datagram: each names the next (0 ends the chain) and its
/// length, a selective ACK's (1) a multiple of 4, the extension bits' (2) 8. Only
/// ST_DATA carries data after the chain; the other types are the header alone. A DHCP
/// message is not uTP. Returns (type, connection id).
pub fn utp_header(b: &[u8]) -> Option<(u8, u16)> {
    if b.len() < 20 || b[0] & 0x0f != 1 || b[0] >> 4 > 4 || b[1] > 2 || services::dhcp(b) {
        return None;
    }
    let (kind, mut ext, mut at) = (b[0] >> 4, b[1], 20);
    while ext != 0 {
        let (next, len) = (*b.get(at)?, usize::from(*b.get(at + 1)?));
        let fits = match ext {
            1 => len >= 4 && len % 4 == 0,
            2 => len == 8,
            _ => false,
        };
        at += 2 + len;
        if !fits || at > b.len() {
            return None;
        }
        ext = next;
    }
    if (kind == 0) != (at < b.len()) {
        return None;
    }
    Some((kind, u16::from_be_bytes([b[2], b[3]])))
}

/// The UDP services of `services` after DNS, QUIC, DTLS and STUN: WireGuard, IPsec,
/// SNMP, NTP, syslog, SSDP, TFTP and OpenVPN (its client's hard reset, then the server's).
fn udp_service(dir: Dir, b: &[u8], mem: &mut ProbeMemory, client_port: u16, server_port: u16) -> Option<App> {
    if services::wireguard(b) {
        return Some(App::Wireguard);
    }
    if services::ipsec(b, client_port, server_port) {
        return Some(App::Ipsec);
    }
    if services::snmp(b) {
        return Some(App::Snmp);
    }
    if services::ntp(b, client_port, server_port) {
        return Some(App::Ntp);
    }
    if services::syslog(b, client_port, server_port) {
        return Some(App::Syslog);
    }
    if services::ssdp(b, client_port, server_port) {
        return Some(App::Ssdp);
    }
    match services::tftp(b, server_port == 69) {
        Some(services::Tftp::Request) => return Some(App::Tftp),
        Some(services::Tftp::Data1) if mem.flags & TFTP_ACK0 != 0 => return Some(App::Tftp),
        Some(services::Tftp::Ack(1)) if mem.flags & TFTP_DATA1 != 0 => return Some(App::Tftp),
        Some(services::Tftp::Data1) => mem.flags |= TFTP_DATA1,
        Some(services::Tftp::Ack(0)) => mem.flags |= TFTP_ACK0,
        _ => {}
    }
    match (dir, services::openvpn_opcode(b, false)) {
        // A reset without tls-auth is exactly opcode, session id, an empty ack array and
        // packet id 0: enough alone (ndpi__openvpn.pcap frame 1).
        (_, Some(1 | 7 | 10)) if b.len() == 14 && b[9..] == [0; 5] => return Some(App::Openvpn),
        // The server's answer without tls-auth: one ack for the client's session id,
        // packet id 0 (ndpi__openvpn.pcap frame 2), whichever side the capture saw first.
        (_, Some(2 | 8)) if b.len() == 26 && b[9] == 1 && b[22..] == [0; 4] => return Some(App::Openvpn),
        (Dir::ClientToServer, Some(1 | 7 | 10)) => mem.flags |= OPENVPN_RESET,
        (Dir::ServerToClient, Some(2 | 8)) if mem.flags & OPENVPN_RESET != 0 => return Some(App::Openvpn),
        _ => {}
    }
    None
}

/// RTP packets in a row of one direction with the same SSRC and payload type and
/// sequence numbers that move forward a little, before a flow is called RTP.
const RTP_RUN: u8 = 3;

/// One UDP datagram of a flow still being classified.
pub fn probe_udp(dir: Dir, b: &[u8], mem: &mut ProbeMemory, client_port: u16, server_port: u16) -> Verdict {
    if b.is_empty() {
        return Verdict::Maybe;
    }
    let port = |p: u16| client_port == p || server_port == p;
    if services::dhcp(b) && (port(67) || port(68)) {
        return Verdict::Yes(App::Dhcp);
    }
    if services::dhcpv6(b, client_port, server_port) {
        return Verdict::Yes(App::Dhcpv6);
    }
    // NetBIOS names are DNS-shaped (RFC 1002 §4.2): before DNS.
    if services::netbios(b, client_port, server_port) {
        return Verdict::Yes(App::Netbios);
    }
    if services::dnscrypt(b) {
        return Verdict::Yes(App::Dnscrypt);
    }
    let on_dns_port = port(53) || port(5353) || port(5355);
    if dns_message(b, false) || on_dns_port && DnsHeader::parse(b).is_some_and(|h| h.opcode() == 0 && b.len() >= 12) {
        // RFC 6762 (mDNS) and RFC 4795 (LLMNR) are DNS messages on their own ports.
        return Verdict::Yes(if port(5353) {
            App::Mdns
        } else if port(5355) {
            App::Llmnr
        } else {
            App::Dns
        });
    }
    if quic(b) {
        return Verdict::Yes(App::Quic);
    }
    if dtls(b) {
        return Verdict::Yes(App::Dtls);
    }
    if stun(b) {
        return Verdict::Yes(App::Stun);
    }
    if let Some(app) = udp_service(dir, b, mem, client_port, server_port) {
        return Verdict::Yes(app);
    }
    if bittorrent_udp(b) {
        return Verdict::Yes(App::Bittorrent);
    }
    if sip(b) {
        return Verdict::Yes(App::Sip);
    }
    if rtcp(b) {
        return Verdict::Yes(App::Rtcp);
    }
    let mut maybe = false;
    if let Some((t, conn)) = utp_header(b) {
        // BEP 29: the SYN carries conn id X and the replies X too; data from the
        // initiator then uses X + 1. Three packets that agree within one make uTP.
        let agrees = mem.utp_run > 0
            && (conn == mem.utp_conn || conn == mem.utp_conn.wrapping_add(1) || conn.wrapping_add(1) == mem.utp_conn);
        if agrees {
            mem.utp_run = mem.utp_run.saturating_add(1);
        } else {
            mem.utp_run = 1;
            mem.utp_conn = conn;
        }
        if mem.utp_run >= 3 || (t == 2 && dir == Dir::ServerToClient && mem.utp_run >= 2) {
            return Verdict::Yes(App::Bittorrent);
        }
        maybe = true;
    }
    if let Some((pt, seq, ssrc)) = rtp_header(b) {
        let d = dir as usize;
        let run = mem.rtp_pt_run[d] & 0x0f;
        let same = run > 0
            && mem.rtp_ssrc[d] == ssrc
            && mem.rtp_pt_run[d] >> 4 == pt & 0x0f
            && (1..=16).contains(&seq.wrapping_sub(mem.rtp_seq[d]));
        let run = if same { run + 1 } else { 1 };
        mem.rtp_ssrc[d] = ssrc;
        mem.rtp_seq[d] = seq;
        mem.rtp_pt_run[d] = (pt & 0x0f) << 4 | run.min(15);
        if run >= RTP_RUN {
            return Verdict::Yes(App::Rtp);
        }
        maybe = true;
    }
    if maybe {
        Verdict::Maybe
    } else {
        Verdict::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(dir: Dir, b: &[u8]) -> Verdict {
        probe_tcp(dir, b, &mut ProbeMemory::default(), 40000, 12345)
    }

    #[test]
    fn tcp_signatures() {
        use Dir::*;
        assert_eq!(tcp(ClientToServer, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc"), Verdict::Yes(App::Tls));
        assert_eq!(tcp(ServerToClient, b"\x16\x03\x03\x00\x5a\x02\x00"), Verdict::Yes(App::Tls));
        assert_eq!(tcp(ClientToServer, b"\x16\x03"), Verdict::Maybe);
        assert_eq!(tcp(ClientToServer, b"GET / HTTP/1.1\r\n"), Verdict::Yes(App::Http));
        assert_eq!(tcp(ServerToClient, b"HTTP/1.1 200 OK\r\n"), Verdict::Yes(App::Http));
        assert_eq!(tcp(ClientToServer, b"OPTIONS rtsp://x/y RTSP/1.0\r\n"), Verdict::Yes(App::Rtsp));
        assert_eq!(tcp(ClientToServer, b"INVITE sip:bob@x SIP/2.0\r\n"), Verdict::Yes(App::Sip));
        assert_eq!(tcp(ServerToClient, b"SSH-2.0-OpenSSH_9.6\r\n"), Verdict::Yes(App::Ssh));
        assert_eq!(tcp(ClientToServer, b"\x13BitTorrent protocol\0\0\0\0"), Verdict::Yes(App::Bittorrent));
        assert_eq!(tcp(ServerToClient, b"+OK POP3 ready\r\n"), Verdict::Yes(App::Pop3));
        assert_eq!(tcp(ServerToClient, b"* OK IMAP4rev1\r\n"), Verdict::Yes(App::Imap));
        assert_eq!(tcp(ClientToServer, b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"), Verdict::No);
        let mut m = ProbeMemory::default();
        assert_eq!(probe_tcp(ServerToClient, b"220 mx ESMTP\r\n", &mut m, 1, 25), Verdict::Maybe);
        assert_eq!(probe_tcp(ClientToServer, b"EHLO me\r\n", &mut m, 1, 25), Verdict::Yes(App::Smtp));
        let mut m = ProbeMemory::default();
        probe_tcp(ServerToClient, b"220 ftp ready\r\n", &mut m, 1, 21);
        assert_eq!(probe_tcp(ClientToServer, b"USER anonymous\r\n", &mut m, 1, 21), Verdict::Yes(App::Ftp));
    }

    proptest::proptest! {
        /// The word-at-a-time scan finds what a byte-by-byte one does.
        #[test]
        fn line_end_equals_bytewise(
            b in proptest::collection::vec(proptest::prop_oneof![
                proptest::prelude::Just(b'\r'), proptest::prelude::Just(b'\n'), proptest::prelude::Just(0x0du8 ^ 0x80),
                proptest::prelude::Just(0u8), proptest::prelude::Just(0x0b), proptest::prelude::Just(0x8d),
                proptest::prelude::any::<u8>(), 0x20u8..0x7f, 0x20u8..0x7f, 0x20u8..0x7f], 0..100),
        ) {
            let want = b.iter().position(|&c| c == b'\r' || c == b'\n').unwrap_or(b.len());
            proptest::prop_assert_eq!(line_end(&b), want);
        }
    }

    #[test]
    fn udp_signatures() {
        use Dir::*;
        let mut m = ProbeMemory::default();
        let mut stun_msg = vec![0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42];
        stun_msg.extend_from_slice(&[7; 12]);
        assert_eq!(probe_udp(ClientToServer, &stun_msg, &mut m, 1, 2), Verdict::Yes(App::Stun));
        assert_eq!(
            probe_udp(ClientToServer, b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe", &mut m, 1, 2),
            Verdict::Yes(App::Bittorrent)
        );
        assert_eq!(
            probe_udp(ClientToServer, b"REGISTER sip:x.example SIP/2.0\r\n", &mut m, 1, 2),
            Verdict::Yes(App::Sip)
        );
        // RTCP receiver report with one SDES after it: lengths add up.
        let rr = [0x80, 201, 0, 1, 1, 2, 3, 4, 0x81, 202, 0, 0];
        assert_eq!(probe_udp(ClientToServer, &rr, &mut m, 1, 2), Verdict::Yes(App::Rtcp));
        assert!(dtls(&[22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
        assert!(quic(&[0xc3, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8]));
    }

    #[test]
    fn rtp_needs_a_consistent_run() {
        let mut m = ProbeMemory::default();
        let pkt = |seq: u16| {
            let mut p = vec![0x80, 0, 0, 0, 0, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef];
            p[2..4].copy_from_slice(&seq.to_be_bytes());
            p.extend_from_slice(&[0xd5; 160]);
            p
        };
        assert_eq!(probe_udp(Dir::ClientToServer, &pkt(10), &mut m, 1, 2), Verdict::Maybe);
        assert_eq!(probe_udp(Dir::ClientToServer, &pkt(11), &mut m, 1, 2), Verdict::Maybe);
        assert_eq!(probe_udp(Dir::ClientToServer, &pkt(12), &mut m, 1, 2), Verdict::Yes(App::Rtp));
        let mut m = ProbeMemory::default();
        for s in [10, 500, 11] {
            assert_eq!(probe_udp(Dir::ClientToServer, &pkt(s), &mut m, 1, 2), Verdict::Maybe);
        }
    }
}
