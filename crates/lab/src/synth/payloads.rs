//! Application payloads: HTTP/1.1, TLS 1.3 and SSH messages for the TCP conversation
//! model, DNS names, and the word list behind host names.

use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;

use super::tcp::{App, TcpGen};
use super::C;

impl TcpGen {
    /// Application content of a message of about `size` bytes from `from`: real
    /// protocol framing (HTTP/1.1 text, TLS 1.3 hellos with SNI then application-data
    /// records, SSH banners and key exchange then encrypted packets) around random
    /// bytes, so dissectors and DPI see plausible traffic.
    pub(super) fn message(&mut self, from: usize, size: usize) -> Vec<u8> {
        let nth = self.msgs[from];
        self.msgs[from] += 1;
        let mut m = Vec::with_capacity(size + 64);
        match self.app {
            App::Http if from == C && size > 1024 => {
                let path = format!("/{}/{}", word(&mut self.rng), word(&mut self.rng));
                let hdr = format!(
                    "POST {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: tapstat-lab/0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: ",
                    self.host
                );
                let body = size.saturating_sub(hdr.len() + 12).max(1);
                m.extend_from_slice(format!("{hdr}{body}\r\n\r\n").as_bytes());
                self.random(&mut m, body);
            }
            App::Http if from == C => {
                let path = format!("/{}/{}{}.js", word(&mut self.rng), word(&mut self.rng), self.rng.gen_range(0..100));
                m.extend_from_slice(
                    format!(
                        "GET {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: tapstat-lab/0.1\r\nAccept: */*\r\n",
                        self.host
                    )
                    .as_bytes(),
                );
                // Pad with a header to the drawn size, as cookies would.
                if m.len() + 16 < size {
                    m.extend_from_slice(b"Cookie: id=");
                    while m.len() < size - 4 {
                        m.push(b'a' + self.rng.gen_range(0..26u8));
                    }
                    m.extend_from_slice(b"\r\n");
                }
                m.extend_from_slice(b"\r\n");
            }
            App::Http => {
                let hdr = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: ";
                let body = size.saturating_sub(hdr.len() + 12).max(1);
                m.extend_from_slice(format!("{hdr}{body}\r\n\r\n").as_bytes());
                self.random(&mut m, body);
            }
            App::Tls if nth == 0 && from == C => {
                let hello = self.client_hello(size.clamp(260, 600) - 9);
                tls_record(&mut m, 0x16, &hello);
                m[2] = 0x01; // a ClientHello's record says TLS 1.0, for old middleboxes
            }
            App::Tls if nth == 0 => {
                let hello = self.server_hello();
                tls_record(&mut m, 0x16, &hello);
                tls_record(&mut m, 0x14, &[1]); // ChangeCipherSpec (compatibility mode)
                let rest = size.saturating_sub(m.len()).max(32);
                self.app_data(&mut m, rest);
            }
            App::Tls => self.app_data(&mut m, size),
            App::Ssh => match (nth, from) {
                (0, C) => m.extend_from_slice(b"SSH-2.0-OpenSSH_9.6\r\n"),
                (0, _) => m.extend_from_slice(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"),
                (1, _) => {
                    let mut p = vec![20u8]; // KEXINIT
                    self.random(&mut p, 16); // cookie
                    for list in [
                        "curve25519-sha256",
                        "ssh-rsa",
                        "chacha20-poly1305@openssh.com",
                        "chacha20-poly1305@openssh.com",
                        "hmac-sha2-256",
                        "hmac-sha2-256",
                        "none",
                        "none",
                        "",
                        "",
                    ] {
                        ssh_string(&mut p, list.as_bytes());
                    }
                    p.extend_from_slice(&[0, 0, 0, 0, 0]); // first_kex_packet_follows, reserved
                    self.ssh_packet(&mut m, &p);
                }
                (2, C) => {
                    let mut p = vec![30u8]; // KEX_ECDH_INIT: Q_C
                    let q = self.random_vec(32);
                    ssh_string(&mut p, &q);
                    self.ssh_packet(&mut m, &p);
                }
                (2, _) => {
                    let mut p = vec![31u8]; // KEX_ECDH_REPLY: K_S, Q_S, signature
                                            // An RSA host key and "ssh-rsa" signature: Wireshark decodes
                                            // those fully (it flags Ed25519/ECDSA/rsa-sha2 signatures as
                                            // undecoded, on real captures too).
                    let mut key = Vec::new();
                    ssh_string(&mut key, b"ssh-rsa");
                    ssh_string(&mut key, &[0x01, 0x00, 0x01]); // e = 65537
                    let mut n = vec![0u8]; // mpint: a leading zero keeps it positive
                    self.random(&mut n, 256);
                    n[1] |= 0x80;
                    ssh_string(&mut key, &n);
                    ssh_string(&mut p, &key);
                    let q = self.random_vec(32);
                    ssh_string(&mut p, &q);
                    let mut sig = Vec::new();
                    ssh_string(&mut sig, b"ssh-rsa");
                    let mut k = self.random_vec(256);
                    k[0] &= 0x7f; // a positive mpint
                    ssh_string(&mut sig, &k);
                    ssh_string(&mut p, &sig);
                    self.ssh_packet(&mut m, &p);
                    self.ssh_packet(&mut m, &[21]); // NEWKEYS
                }
                (n, _) => {
                    if n == 3 && from == C {
                        self.ssh_packet(&mut m, &[21]); // NEWKEYS
                    }
                    // Encrypted packets: length, ciphertext, 16-byte tag, all opaque.
                    let n = size.max(36).div_ceil(8) * 8 + 4;
                    self.random(&mut m, n);
                }
            },
        }
        m
    }

    /// Appends `n` random bytes.
    fn random(&mut self, m: &mut Vec<u8>, n: usize) {
        let at = m.len();
        m.resize(at + n, 0);
        self.rng.fill_bytes(&mut m[at..]);
    }

    fn random_vec(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n);
        self.random(&mut v, n);
        v
    }

    /// TLS application-data records (at most 16 KiB of ciphertext each) totalling
    /// about `size` bytes.
    fn app_data(&mut self, m: &mut Vec<u8>, size: usize) {
        let mut left = size.max(22);
        while left > 0 {
            let body = left.saturating_sub(5).clamp(17, 16384 + 256);
            let rec = self.random_vec(body);
            tls_record(m, 0x17, &rec);
            left = left.saturating_sub(body + 5);
        }
    }

    /// A TLS 1.3 ClientHello handshake message with SNI and ALPN, padded (padding
    /// extension) to about `size` bytes.
    fn client_hello(&mut self, size: usize) -> Vec<u8> {
        let mut b = vec![0x03, 0x03];
        self.random(&mut b, 32); // random
        b.push(32);
        self.random(&mut b, 32); // legacy session id
        let suites: [u16; 5] = [0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f];
        b.extend_from_slice(&((suites.len() * 2) as u16).to_be_bytes());
        for cs in suites {
            b.extend_from_slice(&cs.to_be_bytes());
        }
        b.extend_from_slice(&[1, 0]); // compression: null
        let mut ext = Vec::new();
        let host = self.host.clone();
        let mut sni = Vec::new();
        sni.extend_from_slice(&((host.len() + 3) as u16).to_be_bytes());
        sni.push(0); // host_name
        sni.extend_from_slice(&(host.len() as u16).to_be_bytes());
        sni.extend_from_slice(host.as_bytes());
        tls_ext(&mut ext, 0x0000, &sni);
        tls_ext(&mut ext, 0x000a, &[0, 4, 0x00, 0x1d, 0x00, 0x17]); // groups: x25519, P-256
        tls_ext(&mut ext, 0x000d, &[0, 6, 0x08, 0x07, 0x04, 0x03, 0x08, 0x04]); // sig algs
        tls_ext(&mut ext, 0x0010, b"\x00\x0c\x02h2\x08http/1.1"); // ALPN
        tls_ext(&mut ext, 0x002b, &[4, 0x03, 0x04, 0x03, 0x03]); // versions: 1.3, 1.2
        let mut ks = vec![0, 36, 0x00, 0x1d, 0, 32];
        self.random(&mut ks, 32);
        tls_ext(&mut ext, 0x0033, &ks); // key share
                                        // 4 bytes of handshake header, 2 of extensions length, 4 of padding header.
        let used = 4 + b.len() + 2 + ext.len() + 4;
        if size > used {
            tls_ext(&mut ext, 0x0015, &vec![0; size - used]);
        }
        b.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        b.extend_from_slice(&ext);
        handshake(1, &b)
    }

    /// A TLS 1.3 ServerHello handshake message.
    fn server_hello(&mut self) -> Vec<u8> {
        let mut b = vec![0x03, 0x03];
        self.random(&mut b, 32);
        b.push(32);
        self.random(&mut b, 32);
        b.extend_from_slice(&[0x13, 0x01, 0]); // TLS_AES_128_GCM_SHA256, null compression
        let mut ext = Vec::new();
        tls_ext(&mut ext, 0x002b, &[0x03, 0x04]);
        let mut ks = vec![0x00, 0x1d, 0, 32];
        self.random(&mut ks, 32);
        tls_ext(&mut ext, 0x0033, &ks);
        b.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        b.extend_from_slice(&ext);
        handshake(2, &b)
    }

    /// An unencrypted SSH binary packet (RFC 4253 §6): length, padding length,
    /// payload, 4–11 bytes of padding to a multiple of 8.
    fn ssh_packet(&mut self, m: &mut Vec<u8>, payload: &[u8]) {
        let mut pad = 8 - (5 + payload.len()) % 8;
        if pad < 4 {
            pad += 8;
        }
        m.extend_from_slice(&((1 + payload.len() + pad) as u32).to_be_bytes());
        m.push(pad as u8);
        m.extend_from_slice(payload);
        self.random(m, pad);
    }
}

fn tls_record(m: &mut Vec<u8>, ctype: u8, body: &[u8]) {
    m.push(ctype);
    m.extend_from_slice(&[0x03, 0x03]);
    m.extend_from_slice(&(body.len() as u16).to_be_bytes());
    m.extend_from_slice(body);
}

fn tls_ext(ext: &mut Vec<u8>, typ: u16, data: &[u8]) {
    ext.extend_from_slice(&typ.to_be_bytes());
    ext.extend_from_slice(&(data.len() as u16).to_be_bytes());
    ext.extend_from_slice(data);
}

fn handshake(typ: u8, body: &[u8]) -> Vec<u8> {
    let mut h = vec![typ];
    h.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    h.extend_from_slice(body);
    h
}

fn ssh_string(m: &mut Vec<u8>, s: &[u8]) {
    m.extend_from_slice(&(s.len() as u32).to_be_bytes());
    m.extend_from_slice(s);
}

const WORDS: [&str; 48] = [
    "alpha", "amber", "apple", "arrow", "atlas", "beacon", "birch", "blue", "bolt", "cedar", "cloud", "coral", "delta",
    "echo", "ember", "falcon", "fern", "forge", "gamma", "glacier", "harbor", "hazel", "iris", "jade", "juniper",
    "kite", "lantern", "lumen", "maple", "meadow", "nimbus", "north", "oak", "onyx", "orbit", "pine", "quartz",
    "raven", "river", "sage", "signal", "spruce", "stone", "tide", "umber", "vertex", "willow", "zephyr",
];
const TLDS: [&str; 5] = ["com", "net", "org", "io", "example"];

fn word(rng: &mut ChaCha8Rng) -> &'static str {
    WORDS[rng.gen_range(0..WORDS.len())]
}

/// A random-looking host name from the word list.
pub(super) fn host_name(rng: &mut ChaCha8Rng) -> String {
    let tld = TLDS[rng.gen_range(0..TLDS.len())];
    match rng.gen_range(0..4) {
        0 => format!("www.{}{}.{tld}", word(rng), word(rng)),
        1 => format!("api.{}-{}.{tld}", word(rng), word(rng)),
        2 => format!("{}.cdn.{}.{tld}", word(rng), word(rng)),
        _ => format!("{}{}.{tld}", word(rng), rng.gen_range(1..100)),
    }
}

/// Encodes a DNS name as labels.
pub(super) fn dns_name(name: &str, out: &mut Vec<u8>) {
    for label in name.split('.') {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}
