//! SSH (RFC 4253): each side's identification string (`SSH-2.0-OpenSSH_9.6`) and its
//! first binary packet, the SSH_MSG_KEXINIT, whose algorithm lists give the HASSH
//! fingerprints (Salesforce's HASSH: the MD5 of `kex;encryption;mac;compression` with the
//! client-to-server lists for the client, `hassh`, and the server-to-client lists for the
//! server, `hasshServer`). Both travel in clear before the key exchange.

use md5::{Digest, Md5};

use crate::Dir;

/// The most bytes kept per direction while the identification and KEXINIT are incomplete
/// (a KEXINIT is 1 to 2 KB; post-quantum key exchanges stay well under this).
const MAX_BUF: usize = 16 * 1024;
/// RFC 4253 §4.2: the identification string is at most 255 bytes with its CR LF.
const MAX_LINE: usize = 255;

/// What one side showed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SshSide {
    /// The identification string without its line end (`SSH-2.0-OpenSSH_9.6`).
    pub version: Option<String>,
    /// The HASSH of its KEXINIT (`hassh` for the client, `hasshServer` for the server).
    pub hassh: Option<String>,
}

#[derive(Clone, Debug, Default)]
struct Side {
    buf: Vec<u8>,
    /// Past the identification string (lines before it, RFC 4253 §4.2, are skipped).
    banner_done: bool,
    done: bool,
    info: SshSide,
}

/// One SSH flow's state.
#[derive(Clone, Debug, Default)]
pub struct SshState {
    sides: [Side; 2],
    /// Its TCP streams put back in order from their first hole on (`reorder`).
    pub(crate) reorder: Option<Box<crate::reorder::Reorder>>,
}

impl SshState {
    /// Feeds in-order bytes of `dir`.
    pub fn on_data(&mut self, dir: Dir, payload: &[u8]) {
        let s = &mut self.sides[dir as usize];
        if s.done {
            return;
        }
        s.buf.extend_from_slice(payload);
        while !s.banner_done {
            let Some(nl) = s.buf.iter().take(MAX_LINE).position(|&c| c == b'\n') else {
                if s.buf.len() >= MAX_LINE {
                    s.done = true;
                    s.buf = Vec::new();
                }
                return;
            };
            let line = &s.buf[..nl];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.starts_with(b"SSH-") {
                s.info.version = Some(String::from_utf8_lossy(line).into_owned());
                s.banner_done = true;
            }
            s.buf.drain(..=nl);
        }
        match kexinit_packet(&s.buf) {
            Packet::Whole(payload) => {
                s.info.hassh = hassh(payload, dir);
                s.done = true;
                s.buf = Vec::new();
            }
            Packet::Partial if s.buf.len() < MAX_BUF => {}
            Packet::Partial | Packet::Bad => {
                s.done = true;
                s.buf = Vec::new();
            }
        }
    }

    /// The identification strings, each handed to `f` (see `L7Flow::texts_mut`); the
    /// HASSHes are hex this crate writes.
    pub(crate) fn texts_mut(&mut self, f: &mut crate::TextVisitor<'_>) {
        for s in &mut self.sides {
            let SshSide { version, hassh: _ } = &mut s.info;
            crate::visit(version, f);
        }
    }

    pub fn side(&self, dir: Dir) -> &SshSide {
        &self.sides[dir as usize].info
    }

    pub fn is_done(&self) -> bool {
        self.sides.iter().all(|s| s.done)
    }

    /// Stops parsing `dir` (its byte budget ran out).
    pub fn stop(&mut self, dir: Dir) {
        let s = &mut self.sides[dir as usize];
        s.done = true;
        s.buf = Vec::new();
    }

    pub fn heap_bytes(&self) -> usize {
        self.sides.iter().map(|s| s.buf.capacity()).sum()
    }
}

enum Packet<'a> {
    Whole(&'a [u8]),
    Partial,
    Bad,
}

/// The first binary packet (RFC 4253 §6: length, padding length, payload, padding; no
/// MAC before the first NEWKEYS) if it is whole: its payload.
fn kexinit_packet(b: &[u8]) -> Packet<'_> {
    if b.len() < 5 {
        return Packet::Partial;
    }
    let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let pad = usize::from(b[4]);
    if !(16..=35000).contains(&len) || pad + 1 > len {
        return Packet::Bad;
    }
    if b.len() < 4 + len {
        return Packet::Partial;
    }
    Packet::Whole(&b[5..4 + len - pad])
}

/// The HASSH of a KEXINIT payload (RFC 4253 §7.1: type 20, a 16-byte cookie, then ten
/// name-lists): MD5 of `kex;enc;mac;comp`, the lists of `dir`'s sending direction.
fn hassh(p: &[u8], dir: Dir) -> Option<String> {
    if p.first() != Some(&20) {
        return None;
    }
    let mut at = 17;
    let mut lists: [&[u8]; 10] = [&[]; 10];
    for l in &mut lists {
        let n = u32::from_be_bytes(p.get(at..at + 4)?.try_into().ok()?) as usize;
        *l = p.get(at + 4..at + 4 + n)?;
        at += 4 + n;
    }
    // kex, host key, enc c→s, enc s→c, mac c→s, mac s→c, comp c→s, comp s→c, lang ×2.
    let (enc, mac, comp) = match dir {
        Dir::ClientToServer => (lists[2], lists[4], lists[6]),
        Dir::ServerToClient => (lists[3], lists[5], lists[7]),
    };
    let mut h = Md5::new();
    h.update(lists[0]);
    h.update(b";");
    h.update(enc);
    h.update(b";");
    h.update(mac);
    h.update(b";");
    h.update(comp);
    Some(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_list(v: &mut Vec<u8>, s: &str) {
        v.extend_from_slice(&(s.len() as u32).to_be_bytes());
        v.extend_from_slice(s.as_bytes());
    }

    /// A KEXINIT packet with the given lists (kex, hostkey, enc ×2, mac ×2, comp ×2, lang ×2).
    fn kexinit(lists: [&str; 10]) -> Vec<u8> {
        let mut p = vec![20];
        p.extend_from_slice(&[7; 16]);
        for l in lists {
            name_list(&mut p, l);
        }
        p.extend_from_slice(&[0, 0, 0, 0, 0]);
        let pad = 8 - (p.len() + 5) % 8 + 4;
        let mut pkt = ((p.len() + pad + 1) as u32).to_be_bytes().to_vec();
        pkt.push(pad as u8);
        pkt.extend_from_slice(&p);
        pkt.extend(std::iter::repeat_n(0, pad));
        pkt
    }

    /// HASSH's definition on a KEXINIT cut anywhere: the identification strings, and the
    /// MD5 of the lists of each side's own direction.
    #[test]
    fn versions_and_hassh_split_anywhere() {
        let lists = [
            "curve25519-sha256",
            "ssh-ed25519",
            "aes128-ctr",
            "aes256-ctr",
            "hmac-sha2-256",
            "hmac-sha1",
            "none",
            "zlib",
            "",
            "",
        ];
        let mut stream = b"SSH-2.0-OpenSSH_9.6\r\n".to_vec();
        stream.extend_from_slice(&kexinit(lists));
        let want_c = format!("{:x}", Md5::digest(b"curve25519-sha256;aes128-ctr;hmac-sha2-256;none"));
        let want_s = format!("{:x}", Md5::digest(b"curve25519-sha256;aes256-ctr;hmac-sha1;zlib"));
        for cut in 1..stream.len() {
            let mut s = SshState::default();
            s.on_data(Dir::ClientToServer, &stream[..cut]);
            s.on_data(Dir::ClientToServer, &stream[cut..]);
            s.on_data(Dir::ServerToClient, &stream);
            assert_eq!(s.side(Dir::ClientToServer).version.as_deref(), Some("SSH-2.0-OpenSSH_9.6"));
            assert_eq!(s.side(Dir::ClientToServer).hassh.as_deref(), Some(want_c.as_str()), "cut {cut}");
            assert_eq!(s.side(Dir::ServerToClient).hassh.as_deref(), Some(want_s.as_str()));
            assert!(s.is_done() && s.heap_bytes() == 0);
        }
    }

    #[test]
    fn garbage_ends_quietly() {
        let mut s = SshState::default();
        s.on_data(Dir::ClientToServer, b"SSH-2.0-x\r\n\xff\xff\xff\xff\x00");
        assert!(s.side(Dir::ClientToServer).hassh.is_none());
        s.on_data(Dir::ServerToClient, &[b'a'; 300]);
        assert!(s.is_done() && s.side(Dir::ServerToClient).version.is_none());
    }

    proptest::proptest! {
        /// Any bytes after an identification string, in any pieces: no panic, and the
        /// state ends or holds at most its bound.
        #[test]
        fn any_bytes_in_any_pieces(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000), cut in 0usize..3000) {
            let mut s = SshState::default();
            let cut = cut.min(b.len());
            s.on_data(Dir::ServerToClient, b"SSH-2.0-x\r\n");
            s.on_data(Dir::ServerToClient, &b[..cut]);
            s.on_data(Dir::ServerToClient, &b[cut..]);
            s.on_data(Dir::ClientToServer, &b);
            proptest::prop_assert!(s.heap_bytes() <= 2 * (MAX_BUF + 3000));
        }
    }
}
