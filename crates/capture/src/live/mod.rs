//! Live sources: frames from a network interface as they arrive.
//!
//! The main types are [`LiveSource`] (what an acquisition thread polls),
//! [`AfPacket`] (a Linux `AF_PACKET` socket with a `TPACKET_V3` block ring, one per
//! worker, all in one fanout group so the kernel spreads flows over the workers) and
//! [`BpfProgram`] (a tcpdump-style filter compiled by libpcap, attached to every
//! socket) and [`ReplaySource`] (a capture file in memory, replayed at a pace through
//! the live path, one source per worker: `tapstat bench --speed/--pps`).
//!
//! ```no_run
//! use tapstat_capture::live::{open_fanout, AfPacketConfig, LiveSource};
//! let mut socks = open_fanout(&AfPacketConfig::new("eth0"), 2).unwrap();
//! let n = socks[0].poll(&mut |f, bytes| println!("{} ns, {} bytes", f.ts_ns, bytes.len())).unwrap();
//! println!("{n} frames were ready");
//! ```
//!
//! A live source is not a [`crate::PacketSource`]: the engine gives each worker its
//! own source and an acquisition thread that copies frames into the worker's large
//! buffer (DPDKStat §3.2), so a source hands out borrowed frames that are
//! valid only during the callback, and never blocks in `poll`.

mod afpacket;
mod bpf;
mod replay;

pub use afpacket::{open_fanout, AfPacket, AfPacketConfig};
pub use bpf::{compile_filter, BpfProgram};
pub use replay::{flow_worker, frame_flow, FrameFlow, Pace, ReplayFile, ReplaySource};

use crate::{FrameMeta, LinkType};
use std::time::Duration;

/// Counters a live source keeps, cumulative since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveStats {
    /// Frames the kernel (or NIC) dropped because the source's ring was full.
    pub kernel_drops: u64,
    /// Times the kernel froze the ring (`TPACKET_V3`: every block owned by user space).
    pub freezes: u64,
}

/// Errors that stop a live source from opening.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("no network interface named {0:?} (see `ip link`)")]
    NoSuchInterface(String),
    #[error("{what}: permission denied: live capture needs root or the CAP_NET_RAW capability (e.g. `setcap cap_net_raw+ep tapstat`)")]
    Permission {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}")]
    Os {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("interface {iface}: link type {arphrd} is not supported (Ethernet, loopback and raw IP are)")]
    LinkType { iface: String, arphrd: u32 },
    #[error("filter {expr:?}: {reason}")]
    Filter { expr: String, reason: String },
    #[error("{0}")]
    Unsupported(String),
}

impl LiveError {
    /// The error of a failed system call: a permission error names the capability.
    pub(crate) fn os(what: impl Into<String>) -> LiveError {
        let source = std::io::Error::last_os_error();
        let what = what.into();
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => LiveError::Permission { what, source },
            _ => LiveError::Os { what, source },
        }
    }
}

/// A source of live frames that an acquisition thread polls.
pub trait LiveSource: Send {
    /// A name for messages (`eth0#1`: interface and socket).
    fn name(&self) -> String;
    /// Link type of the frames.
    fn link(&self) -> LinkType;
    /// Hands every frame that is ready now to `on_frame`, in arrival order, and
    /// returns how many there were. Never blocks. The bytes are valid only during
    /// the call. A frame's `ts_ns` is 0 when the source does not stamp frames itself
    /// (see [`LiveSource::stamps_frames`]); its `offset` means nothing.
    fn poll(&mut self, on_frame: &mut dyn FnMut(&FrameMeta, &[u8])) -> Result<usize, LiveError>;
    /// Waits at most `timeout` for frames to become ready (or returns at once).
    fn wait(&mut self, timeout: Duration);
    /// Drop counters so far.
    fn stats(&mut self) -> LiveStats;
    /// Whether frames carry their own capture time. When not, the acquisition
    /// thread stamps each batch and spreads the stamps over it (DPDKStat §3.2, \[23\]).
    fn stamps_frames(&self) -> bool {
        true
    }
    /// Whether the source has no more frames to give (a capture file replayed through
    /// DPDK's net_pcap): its acquisition thread then ends as at a stop. A network
    /// source never ends.
    fn ended(&self) -> bool {
        false
    }
    /// The earliest timestamp a frame the source has yet to hand out can carry, if the
    /// source knows it (a replayed file: its next frame's; `u64::MAX` when it has no
    /// more; an `AF_PACKET` socket: the wall clock less the longest a frame waits in
    /// the kernel). Asked before a poll, it bounds every frame that poll leaves. A live
    /// worker whose queue is empty moves its clock there, so that on a quiet link flows
    /// still end and are written; and follows the other workers' clock no further (the
    /// link histograms' hand-over). A source that does not know says `None`.
    fn pending_from_ns(&self) -> Option<u64> {
        None
    }
}
