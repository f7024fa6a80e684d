//! Application payloads the tests carry: DNS queries and answers, TLS 1.3 hellos, an
//! SSH KEXINIT.

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
