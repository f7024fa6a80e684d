//! The frame decoder. (To be written.)
use crate::*;

pub struct Decoder {
    pub anomalies: Anomalies,
}

impl Decoder {
    pub fn new(_cfg: DecodeConfig) -> Self {
        Decoder { anomalies: Anomalies::default() }
    }

    pub fn decode(&mut self, _link: LinkType, _frame: &[u8], _ts_ns: u64) -> Decoded {
        Decoded::default()
    }
}
