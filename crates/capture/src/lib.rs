//! Packet sources: where frames come from.
//!
//! The main types are [`PacketSource`] (the one interface the engine reads from),
//! [`Chunk`] (a run of frames that share one backing buffer, so the engine can hand
//! them on without copying) and [`FrameMeta`] (timestamp, lengths, link type, and
//! where the bytes are in the backing buffer).
//!
//! ```no_run
//! use tapstat_capture::{open_files, PacketSource};
//! let mut src = open_files(&["trace.pcap".into()]).unwrap();
//! while let Some(chunk) = src.next_chunk(1024).unwrap() {
//!     for f in &chunk.frames {
//!         let bytes = chunk.data(f);
//!         println!("{} ns, {} bytes captured of {}", f.ts_ns, bytes.len(), f.orig_len);
//!     }
//! }
//! ```
//!
//! Only this crate (and `sink`) does I/O. Timestamps are nanoseconds since the Unix
//! epoch, whatever the file's resolution.

use std::path::PathBuf;
use std::sync::Arc;

/// A pcap `LINKTYPE_*` value (<https://www.tcpdump.org/linktypes.html>).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct LinkType(pub u16);

impl LinkType {
    pub const NULL: LinkType = LinkType(0);
    pub const ETHERNET: LinkType = LinkType(1);
    /// DLT_RAW as some BSDs number it.
    pub const RAW_BSD12: LinkType = LinkType(12);
    pub const RAW_BSD14: LinkType = LinkType(14);
    pub const RAW: LinkType = LinkType(101);
    pub const LOOP: LinkType = LinkType(108);
    pub const LINUX_SLL: LinkType = LinkType(113);
    pub const IPV4: LinkType = LinkType(228);
    pub const IPV6: LinkType = LinkType(229);
    pub const LINUX_SLL2: LinkType = LinkType(276);
}

/// One frame of a [`Chunk`]: where its bytes are and what the capture said about it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameMeta {
    /// Capture time, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Length of the frame on the wire (pcap `orig_len`, pcapng "original packet length").
    pub orig_len: u32,
    /// Bytes captured (at most `orig_len` in a sane file; not trusted).
    pub caplen: u32,
    /// Offset of the captured bytes in the chunk's backing buffer.
    pub offset: u64,
    /// Link type of the interface the frame was captured on.
    pub link: LinkType,
}

/// Bytes that frames point into: a block read from a file or a stream (or a memory map).
pub trait Backing: Send + Sync {
    fn bytes(&self) -> &[u8];
}

impl Backing for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

impl Backing for memmap2::Mmap {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// A run of frames sharing one backing buffer. Frames are in capture order.
#[derive(Clone)]
pub struct Chunk {
    pub backing: Arc<dyn Backing>,
    pub frames: Vec<FrameMeta>,
}

impl Chunk {
    /// The captured bytes of `f`, which must be a frame of this chunk.
    #[inline]
    pub fn data(&self, f: &FrameMeta) -> &[u8] {
        frame_bytes(&*self.backing, f)
    }
}

/// The captured bytes of `f` in `backing`; empty if the frame does not fit (never panics).
#[inline]
pub fn frame_bytes<'a>(backing: &'a dyn Backing, f: &FrameMeta) -> &'a [u8] {
    bytes_at(backing, f.offset, f.caplen)
}

/// The `caplen` bytes at `offset` in `backing`; empty if they do not fit (never panics).
#[inline]
pub fn bytes_at(backing: &dyn Backing, offset: u64, caplen: u32) -> &[u8] {
    let start = offset as usize;
    let end = start.saturating_add(caplen as usize);
    backing.bytes().get(start..end).unwrap_or(&[])
}

/// How far a source has got, for progress bars.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Bytes of input consumed so far (all files together).
    pub bytes_read: u64,
    /// Total bytes of input, when known (not for stdin).
    pub bytes_total: Option<u64>,
}

/// Counters of what a source met on the way, reported in the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Frames delivered.
    pub frames: u64,
    /// Sum of `orig_len` of delivered frames.
    pub wire_bytes: u64,
    /// Files whose last record was cut short (the rest of the file was processed).
    pub truncated_files: u64,
    /// Records skipped as impossible (caplen beyond any sane size, bad block), which
    /// ends the reading of that file since framing is lost.
    pub corrupt_records: u64,
    /// pcapng blocks of types this reader does not use (skipped, not an error).
    pub skipped_blocks: u64,
    /// pcapng packet blocks skipped because their content is inconsistent (captured
    /// length beyond the block, an interface no description block declared). The
    /// framing is intact, so reading goes on with the next block.
    pub bad_packet_blocks: u64,
    /// Frames a filter expression rejected (`-f` on files; see [`FilteredSource`]).
    pub filtered_out: u64,
}

/// Errors that stop a source: the input cannot be opened or is not a capture.
/// Damage inside a capture is not an error: it becomes a warning and a counter.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a pcap or pcapng capture ({reason})")]
    NotACapture { path: PathBuf, reason: String },
    /// The filter expression does not compile for a link type of the input.
    #[error("filter {expr:?} (link type {link}): {reason}")]
    Filter { expr: String, link: u16, reason: String },
}

/// The one interface the engine reads packets from.
pub trait PacketSource: Send {
    /// The next run of at most `max_frames` frames, or `Ok(None)` at the end of input.
    fn next_chunk(&mut self, max_frames: usize) -> Result<Option<Chunk>, CaptureError>;
    /// How far the source has got.
    fn progress(&self) -> Progress;
    /// What the source met so far.
    fn stats(&self) -> CaptureStats;
    /// Warnings (one line each, naming the file) collected since the last call.
    fn take_warnings(&mut self) -> Vec<String>;
    /// Whether `next_chunk` can wait for the outside world (a pipe, a socket), as
    /// opposed to regular files, which are read to their end without waiting. The engine reads a
    /// source that may block on a thread of its own, so Ctrl-C is never held up.
    fn may_block(&self) -> bool {
        true
    }
}

mod file;
mod filter;
mod format;
pub mod live;
mod pcap;
mod pcapng;
#[cfg(test)]
mod testutil;

pub use file::{open_files, open_reader, FileSource, STREAM_FILL};
pub use filter::{run_bpf, FilteredSource};
