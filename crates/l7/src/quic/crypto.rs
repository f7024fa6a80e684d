//! Initial packet protection (RFC 9001 §5): keys from the client's Destination Connection
//! ID, header protection removal (§5.4) and AEAD_AES_128_GCM decryption (§5.3), all with
//! RustCrypto's maintained crates.

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes128;
use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, Nonce, Tag};
use hkdf::Hkdf;
use sha2::Sha256;

use super::parser::{LongHeader, Version};

/// RFC 9001 §5.2 initial_salt.
const SALT_V1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f,
    0x0a,
];
/// RFC 9369 §3.3.1.
const SALT_V2: [u8; 20] = [
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e,
    0xd9,
];
/// draft-ietf-quic-tls-29 §5.2.
const SALT_DRAFT29: [u8; 20] = [
    0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97, 0x86, 0xf1, 0x9c, 0x61, 0x11, 0xe0, 0x43, 0x90, 0xa8,
    0x99,
];

/// draft-ietf-quic-tls-23 §5.2 (used up to draft-28).
const SALT_DRAFT23: [u8; 20] = [
    0xc3, 0xee, 0xf7, 0x12, 0xc7, 0x2e, 0xbb, 0x5a, 0x11, 0xa7, 0xd2, 0x43, 0x2b, 0xb4, 0x63, 0x65, 0xbe, 0xf9, 0xf5,
    0x02,
];

/// Which side's Initial keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// The Initial keys of one side: AEAD key, IV and header protection key.
#[derive(Clone)]
pub struct InitialKeys {
    pub key: [u8; 16],
    pub iv: [u8; 12],
    pub hp: [u8; 16],
    aead: Aes128Gcm,
    hp_cipher: Aes128,
}

impl std::fmt::Debug for InitialKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitialKeys").finish_non_exhaustive()
    }
}

/// HKDF-Expand-Label (RFC 8446 §7.1) with an empty context.
fn expand_label(hk: &Hkdf<Sha256>, label: &[u8], out: &mut [u8]) {
    let mut info = [0u8; 2 + 1 + 255 + 1];
    let full_len = 6 + label.len();
    info[..2].copy_from_slice(&(out.len() as u16).to_be_bytes());
    info[2] = full_len as u8;
    info[3..9].copy_from_slice(b"tls13 ");
    info[9..9 + label.len()].copy_from_slice(label);
    info[9 + label.len()] = 0;
    hk.expand(&info[..4 + full_len], out).expect("output lengths of 12 to 32 bytes are far below 255 * 32");
}

impl InitialKeys {
    /// RFC 9001 §5.2: initial_secret = HKDF-Extract(salt, client_dst_connection_id), then
    /// "client in" / "server in", then "quic key", "quic iv", "quic hp" (v2: "quicv2 …",
    /// RFC 9369 §3.3.2).
    pub fn new(version: Version, dcid: &[u8], side: Side) -> Self {
        let salt: &[u8] = match version {
            Version::V1 => &SALT_V1,
            Version::V2 => &SALT_V2,
            Version::Draft29 => &SALT_DRAFT29,
            Version::Draft23 => &SALT_DRAFT23,
        };
        let (initial, _) = Hkdf::<Sha256>::extract(Some(salt), dcid);
        let initial = Hkdf::<Sha256>::from_prk(&initial).expect("an extracted PRK has the hash's length");
        let mut secret = [0u8; 32];
        expand_label(&initial, if side == Side::Client { b"client in" } else { b"server in" }, &mut secret);
        let hk = Hkdf::<Sha256>::from_prk(&secret).expect("a 32-byte secret is a valid SHA-256 PRK");
        let (lk, li, lh): (&[u8], &[u8], &[u8]) = match version {
            Version::V2 => (b"quicv2 key", b"quicv2 iv", b"quicv2 hp"),
            _ => (b"quic key", b"quic iv", b"quic hp"),
        };
        let (mut key, mut iv, mut hp) = ([0u8; 16], [0u8; 12], [0u8; 16]);
        expand_label(&hk, lk, &mut key);
        expand_label(&hk, li, &mut iv);
        expand_label(&hk, lh, &mut hp);
        InitialKeys { key, iv, hp, aead: Aes128Gcm::new(&key.into()), hp_cipher: Aes128::new(&hp.into()) }
    }

    /// Removes header protection and decrypts one long-header packet in place
    /// (`packet` is exactly the packet, `hdr` its parsed header). Returns the packet
    /// number and the plaintext payload, or `None` when the packet is too short or
    /// authentication fails.
    pub fn decrypt<'p>(&self, hdr: &LongHeader<'_>, packet: &'p mut [u8]) -> Option<(u64, &'p [u8])> {
        // RFC 9001 §5.4.2: the sample starts 4 bytes after the packet number's start.
        let sample_at = hdr.pn_offset + 4;
        let mut block = aes::Block::clone_from_slice(packet.get(sample_at..sample_at + 16)?);
        self.hp_cipher.encrypt_block(&mut block);
        let mask = block;
        // §5.4.1: long headers protect the low 4 bits of the first byte.
        packet[0] ^= mask[0] & 0x0f;
        let pn_len = usize::from(packet[0] & 0x03) + 1;
        let mut pn: u64 = 0;
        for i in 0..pn_len {
            packet[hdr.pn_offset + i] ^= mask[1 + i];
            pn = (pn << 8) | u64::from(packet[hdr.pn_offset + i]);
        }
        let payload_at = hdr.pn_offset + pn_len;
        if packet.len() < payload_at + 16 {
            return None;
        }
        // §5.3: nonce = iv XOR the packet number, left-padded to the IV's length. The
        // packet number of the first Initials is small; the truncated value is what
        // the nonce uses until a reordering window matters, which it does not for the
        // first packets of a connection.
        let mut nonce = self.iv;
        for (i, b) in pn.to_be_bytes().iter().enumerate() {
            nonce[4 + i] ^= b;
        }
        let tag_at = packet.len() - 16;
        let (aad_and_ct, tag) = packet.split_at_mut(tag_at);
        let (aad, ct) = aad_and_ct.split_at_mut(payload_at);
        let tag = Tag::clone_from_slice(tag);
        self.aead.decrypt_in_place_detached(Nonce::from_slice(&nonce), aad, ct, &tag).ok()?;
        Some((pn, &packet[payload_at..tag_at]))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// Protects a long-header packet (the inverse of `decrypt`, RFC 9001 §5.3-§5.4), to
    /// build test packets: `header` ends with a 4-byte packet number `pn` and its Length
    /// field must already count the packet number, the payload and the 16-byte tag.
    pub(crate) fn protect(keys: &InitialKeys, header: &[u8], pn: u32, payload: &[u8]) -> Vec<u8> {
        let pn_offset = header.len() - 4;
        let mut nonce = keys.iv;
        for (i, b) in u64::from(pn).to_be_bytes().iter().enumerate() {
            nonce[4 + i] ^= b;
        }
        let mut body = payload.to_vec();
        let tag = keys.aead.encrypt_in_place_detached(Nonce::from_slice(&nonce), header, &mut body).unwrap();
        let mut p = header.to_vec();
        p.extend_from_slice(&body);
        p.extend_from_slice(&tag);
        let mut block = aes::Block::clone_from_slice(&p[pn_offset + 4..pn_offset + 20]);
        keys.hp_cipher.encrypt_block(&mut block);
        p[0] ^= block[0] & 0x0f;
        for i in 0..4 {
            p[pn_offset + i] ^= block[1 + i];
        }
        p
    }

    #[test]
    fn protect_then_decrypt_is_the_rfc_packet() {
        // Protecting RFC 9001 A.2's payload gives A.2's packet: `protect` is right, so
        // the packets other tests build with it are real Initials.
        use crate::quic::parser::LongHeader;
        let want = unhex(crate::quic::state::tests::RFC9001_A2_PACKET);
        let mut payload = unhex(crate::quic::state::tests::RFC9001_A2_CRYPTO_FRAME);
        payload.resize(1162, 0);
        let keys = InitialKeys::new(Version::V1, &DCID, Side::Client);
        let header = unhex("c300000001088394c8f03e5157080000449e00000002");
        let p = protect(&keys, &header, 2, &payload);
        assert_eq!(p, want);
        let mut q = p.clone();
        let hdr = LongHeader::parse(&p).unwrap();
        assert_eq!(keys.decrypt(&hdr, &mut q).map(|(pn, _)| pn), Some(2));
    }

    const DCID: [u8; 8] = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08];

    #[test]
    fn rfc9001_appendix_a1_keys() {
        let c = InitialKeys::new(Version::V1, &DCID, Side::Client);
        assert_eq!(c.key.to_vec(), unhex("1f369613dd76d5467730efcbe3b1a22d"));
        assert_eq!(c.iv.to_vec(), unhex("fa044b2f42a3fd3b46fb255c"));
        assert_eq!(c.hp.to_vec(), unhex("9f50449e04a0e810283a1e9933adedd2"));
        let s = InitialKeys::new(Version::V1, &DCID, Side::Server);
        assert_eq!(s.key.to_vec(), unhex("cf3a5331653c364c88f0f379b6067e37"));
        assert_eq!(s.iv.to_vec(), unhex("0ac1493ca1905853b0bba03e"));
        assert_eq!(s.hp.to_vec(), unhex("c206b8d9b9f0f37644430b490eeaa314"));
    }

    #[test]
    fn rfc9369_appendix_a1_keys() {
        let c = InitialKeys::new(Version::V2, &DCID, Side::Client);
        assert_eq!(c.key.to_vec(), unhex("8b1a0bc121284290a29e0971b5cd045d"));
        assert_eq!(c.iv.to_vec(), unhex("91f73e2351d8fa91660e909f"));
        assert_eq!(c.hp.to_vec(), unhex("45b95e15235d6f45a6b19cbcb0294ba9"));
        let s = InitialKeys::new(Version::V2, &DCID, Side::Server);
        assert_eq!(s.key.to_vec(), unhex("82db637861d55e1d011f19ea71d5d2a7"));
        assert_eq!(s.iv.to_vec(), unhex("dd13c276499c0249d3310652"));
        assert_eq!(s.hp.to_vec(), unhex("edf6d05c83121201b436e16877593c3a"));
    }
}
