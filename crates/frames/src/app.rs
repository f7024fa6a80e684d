//! Application payloads the tests carry: DNS queries and answers, TLS 1.3 hellos, a TLS
//! 1.2 server flight with an X.509 certificate, a Google QUIC hello, an
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

/// A DNS query (recursion desired) whose question name is `labels` as given: a label
/// may hold any byte, dots included (`192.0.2.1` as one label).
pub fn dns_question_labels(id: u16, labels: &[&[u8]], qtype: u16) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend([0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for l in labels {
        m.push(l.len() as u8);
        m.extend(*l);
    }
    m.push(0);
    m.extend(qtype.to_be_bytes());
    m.extend([0, 1]);
    m
}

/// The wire form of a DNS name (uncompressed labels), for the data of a CNAME answer.
pub fn dns_name_bytes(name: &str) -> Vec<u8> {
    let mut m = Vec::new();
    dns_name(&mut m, name);
    m
}

/// A DER element: tag, definite length, contents.
fn der(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    match body.len() {
        n @ 0..=127 => v.push(n as u8),
        n @ 128..=255 => v.extend([0x81, n as u8]),
        n => v.extend([0x82, (n >> 8) as u8, n as u8]),
    }
    v.extend(body);
    v
}

/// An X.501 name of one RDN per attribute (`(oid, value)`, UTF8String), first RDN first.
fn x501_name(attrs: &[(&[u8], &str)]) -> Vec<u8> {
    let rdns: Vec<u8> = attrs
        .iter()
        .flat_map(|(oid, v)| der(0x31, &der(0x30, &[der(0x06, oid), der(0x0c, v.as_bytes())].concat())))
        .collect();
    der(0x30, &rdns)
}

/// The OID of commonName (2.5.4.3).
pub const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
/// The OID of organizationName (2.5.4.10).
pub const OID_O: &[u8] = &[0x55, 0x04, 0x0a];

/// A DER X.509 v3 certificate (not validly signed: what a passive reader parses) with
/// the subject and issuer names `subject` and `issuer` (`(OID, value)` per RDN, e.g.
/// `(OID_CN, "192.0.2.1")`), valid 2024 to 2034, an EC P-256 key, and a
/// subjectAltName of the dNSName entries `dns` and iPAddress entries `ips`.
pub fn x509_certificate(
    subject: &[(&[u8], &str)],
    issuer: &[(&[u8], &str)],
    dns: &[&str],
    ips: &[std::net::IpAddr],
) -> Vec<u8> {
    let ecdsa_sha256 = der(0x30, &der(0x06, &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02]));
    let validity = der(0x30, &[der(0x17, b"240101000000Z"), der(0x17, b"340101000000Z")].concat());
    let alg = der(
        0x30,
        &[
            der(0x06, &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]),
            der(0x06, &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]),
        ]
        .concat(),
    );
    let mut point = vec![0, 4];
    point.extend((1u8..=64).collect::<Vec<_>>());
    let spki = der(0x30, &[alg, der(0x03, &point)].concat());
    let mut names = Vec::new();
    for d in dns {
        names.extend(der(0x82, d.as_bytes()));
    }
    for ip in ips {
        match ip {
            std::net::IpAddr::V4(a) => names.extend(der(0x87, &a.octets())),
            std::net::IpAddr::V6(a) => names.extend(der(0x87, &a.octets())),
        }
    }
    let san = der(0x30, &[der(0x06, &[0x55, 0x1d, 0x11]), der(0x04, &der(0x30, &names))].concat());
    let tbs = der(
        0x30,
        &[
            der(0xa0, &der(0x02, &[2])),
            der(0x02, &[0x01, 0x23, 0x45]),
            ecdsa_sha256.clone(),
            x501_name(issuer),
            validity,
            x501_name(subject),
            spki,
            der(0xa3, &der(0x30, &san)),
        ]
        .concat(),
    );
    let sig = der(0x03, &[&[0u8][..], &der(0x30, &[der(0x02, &[0x11; 8]), der(0x02, &[0x22; 8])].concat())].concat());
    der(0x30, &[tbs, ecdsa_sha256, sig].concat())
}

/// A TLS 1.2 server flight in one record: a ServerHello (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
/// with the ALPN protocol `alpn` when given), a Certificate holding `chain`, a
/// ServerHelloDone.
pub fn tls12_server_flight(alpn: Option<&str>, chain: &[&[u8]]) -> Vec<u8> {
    let mut sh = vec![3, 3];
    sh.extend([0x22; 32]);
    sh.extend([0, 0xc0, 0x2f, 0]);
    let ext = alpn.map_or_else(Vec::new, |p| tls_ext(16, &len16(&[&[p.len() as u8][..], p.as_bytes()].concat())));
    sh.extend(len16(&ext));
    let mut list: Vec<u8> = Vec::new();
    for c in chain {
        list.extend(&(c.len() as u32).to_be_bytes()[1..]);
        list.extend(*c);
    }
    let mut cert = (list.len() as u32).to_be_bytes()[1..].to_vec();
    cert.extend(list);
    let mut hs: Vec<u8> = Vec::new();
    for (t, body) in [(2u8, sh), (11, cert), (14, Vec::new())] {
        hs.push(t);
        hs.extend(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend(body);
    }
    let mut r = vec![0x16, 0x03, 0x03];
    r.extend(len16(&hs));
    r
}

/// A Google QUIC (Q043) client packet holding a plaintext CHLO with the tags `SNI` and
/// `UAID` (server name and user agent).
pub fn gquic_chlo(sni: &str, uaid: &str) -> Vec<u8> {
    let mut p = vec![0x0d, 1, 2, 3, 4, 5, 6, 7, 8, b'Q', b'0', b'4', b'3', 1];
    p.extend([0; 12]);
    p.extend([0xa0, 1, 0, 0]);
    p.extend(b"CHLO\x02\x00\x00\x00SNI\x00");
    p.extend((sni.len() as u32).to_le_bytes());
    p.extend(b"UAID");
    p.extend(((sni.len() + uaid.len()) as u32).to_le_bytes());
    p.extend(sni.as_bytes());
    p.extend(uaid.as_bytes());
    p.resize(p.len().max(1200), 0);
    p
}
