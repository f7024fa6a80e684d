//! The C shim's functions (csrc/shim.c) and the structs it fills, laid out as there.

use std::ffi::{c_char, c_int, c_void};

/// One received frame (`struct tapstat_pkt`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Pkt {
    pub data: *const u8,
    pub data_len: u32,
    pub pkt_len: u32,
    pub ts: u64,
    pub nb_segs: u16,
    pub has_ts: u16,
    pub pad: u32,
}

impl Default for Pkt {
    fn default() -> Self {
        Pkt { data: std::ptr::null(), data_len: 0, pkt_len: 0, ts: 0, nb_segs: 0, has_ts: 0, pad: 0 }
    }
}

/// What `tapstat_port_setup` did (`struct tapstat_port_info`).
#[repr(C)]
pub(crate) struct PortInfo {
    pub name: [c_char; 64],
    pub driver: [c_char; 64],
    pub max_rx_queues: u16,
    pub nb_rxd: u16,
    pub nb_tx: u16,
    pub rss_key_len: u16,
    pub rss_hf: u64,
    pub socket: i32,
    /// Bytes of frame one mbuf holds.
    pub mbuf_room: u16,
    pub pad: u16,
    pub step: [c_char; 32],
}

impl Default for PortInfo {
    fn default() -> Self {
        PortInfo {
            name: [0; 64],
            driver: [0; 64],
            max_rx_queues: 0,
            nb_rxd: 0,
            nb_tx: 0,
            rss_key_len: 0,
            rss_hf: 0,
            socket: 0,
            mbuf_room: 0,
            pad: 0,
            step: [0; 32],
        }
    }
}

/// `struct tapstat_stats`: the port's `rte_eth_stats` that tapstat reports.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Stats {
    pub ipackets: u64,
    pub ibytes: u64,
    pub imissed: u64,
    pub ierrors: u64,
    pub rx_nombuf: u64,
}

extern "C" {
    pub(crate) fn tapstat_eal_init(argc: c_int, argv: *mut *mut c_char) -> c_int;
    pub(crate) fn tapstat_eal_cleanup() -> c_int;
    pub(crate) fn tapstat_next_port(from: u16) -> c_int;
    pub(crate) fn tapstat_port_max_rx_queues(port: u16) -> c_int;
    pub(crate) fn tapstat_strerror(e: c_int) -> *const c_char;
    pub(crate) fn tapstat_has_timestamps() -> c_int;
    pub(crate) fn tapstat_port_setup(port: u16, nq: u16, nb_rxd: u16, info: *mut PortInfo) -> c_int;
    pub(crate) fn tapstat_rx(port: u16, queue: u16, out: *mut Pkt, mbufs: *mut *mut c_void, n: u16) -> u16;
    pub(crate) fn tapstat_free(mbufs: *mut *mut c_void, n: u16);
    pub(crate) fn tapstat_copy(mbuf: *const c_void, dst: *mut u8, cap: u32) -> u32;
    pub(crate) fn tapstat_stats(port: u16, out: *mut Stats) -> c_int;
    pub(crate) fn tapstat_port_close(port: u16);
}

/// A C string of a fixed array, up to its first NUL.
pub(crate) fn c_str(a: &[c_char]) -> String {
    let bytes: Vec<u8> = a.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// DPDK's message for a (negative or positive) error code.
pub(crate) fn strerror(rc: c_int) -> String {
    // SAFETY: rte_strerror returns a NUL-terminated string, static or in a
    // per-thread buffer that stays valid until this thread's next call; it is
    // copied out at once.
    unsafe {
        let p = tapstat_strerror(rc);
        if p.is_null() {
            return format!("error {rc}");
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}
