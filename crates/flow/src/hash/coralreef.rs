//! CoralReef's flow hash, as FlowMgmt uses it: the endpoints and ports XOR-folded into
//! 32 bits, reduced modulo the table size by the structure. Cheap, and weak in its low
//! bits (two flows that differ in mirrored fields cancel out), which is why the paper
//! finds it must not be used with a power-of-two table (§4.4, Fig. 5). Written by hand:
//! there is no crate, and it is one line.

/// The hash of a canonical key's fields (addresses folded to 32 bits first for IPv6).
#[inline]
pub fn coralreef(lo_ip: u32, hi_ip: u32, lo_port: u16, hi_port: u16, proto: u8) -> u32 {
    lo_ip ^ hi_ip ^ ((lo_port as u32) << 16 | hi_port as u32) ^ proto as u32
}

/// An IPv6 address folded to 32 bits.
#[inline]
pub fn fold(ip: u128) -> u32 {
    (ip as u32) ^ ((ip >> 32) as u32) ^ ((ip >> 64) as u32) ^ ((ip >> 96) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xor_fold() {
        // 10.0.0.1:1234 <-> 10.0.0.2:80, TCP.
        assert_eq!(coralreef(0x0a00_0001, 0x0a00_0002, 1234, 80, 6), 0x04d2_0055);
        assert_eq!(fold(1 << 96 | 2 << 64 | 4 << 32 | 8), 15);
    }
}
