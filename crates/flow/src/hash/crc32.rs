//! CRC-32C (Castagnoli), the polynomial of the SSE4.2 `crc32` instruction: one
//! instruction per 8 bytes where the CPU has it (checked once, when the hasher is
//! built), a table otherwise. Written by hand: `crc32fast` computes the IEEE
//! polynomial, which has no instruction on x86, and the instruction is one intrinsic.

const POLY: u32 = 0x82f6_3b78; // reflected 0x1EDC6F41

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = table();

/// CRC-32C of `bytes` in software; `init` is the register's start (`!0` for the
/// standard CRC, which also inverts the result).
#[inline]
pub fn crc32c_soft(bytes: &[u8], init: u32) -> u32 {
    let mut c = init;
    for &b in bytes {
        c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// Whether the CRC instruction is there.
pub fn has_hw() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sse4.2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// CRC-32C of `bytes` with the SSE4.2 instruction.
///
/// # Safety
/// The CPU must have SSE4.2 ([`has_hw`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
pub unsafe fn crc32c_hw(bytes: &[u8], init: u32) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut c = init as u64;
    let mut chunks = bytes.chunks_exact(8);
    for ch in &mut chunks {
        c = _mm_crc32_u64(c, u64::from_le_bytes(ch.try_into().expect("chunks of 8")));
    }
    let mut c = c as u32;
    for &b in chunks.remainder() {
        c = _mm_crc32_u8(c, b);
    }
    !c
}

/// CRC-32C, with the instruction when `hw` (which the caller took from [`has_hw`]).
#[inline]
pub fn crc32c(bytes: &[u8], init: u32, hw: bool) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if hw {
        // SAFETY: `hw` is only true when has_hw() said the CPU has SSE4.2.
        return unsafe { crc32c_hw(bytes, init) };
    }
    let _ = hw;
    crc32c_soft(bytes, init)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 3720 (iSCSI) B.4 and the usual check value.
    #[test]
    fn check_values() {
        assert_eq!(crc32c_soft(b"123456789", !0), 0xe306_9283);
        assert_eq!(crc32c_soft(&[0u8; 32], !0), 0x8a91_36aa);
        assert_eq!(crc32c_soft(&[0xffu8; 32], !0), 0x62a8_ab43);
        if has_hw() {
            for n in 0..40 {
                let v: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
                assert_eq!(crc32c(&v, !0, true), crc32c_soft(&v, !0), "length {n}");
            }
        }
    }
}
