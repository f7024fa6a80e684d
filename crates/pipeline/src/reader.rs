//! The file front end's reader: the source read chunk by chunk, and the input's clock
//! stamped on each frame for the dispatchers.

use crate::Progress;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tapstat_capture::{CaptureError, CaptureStats, Chunk, PacketSource};

/// A chunk on its way to a dispatcher: its place in the input (`seq`, counting from 0)
/// and the input's clock at each of its frames and after the last. The reader keeps
/// the clock, since it alone sees every frame in order: a few instructions per frame,
/// against the hundreds of decoding, which the dispatchers do in parallel.
pub(crate) struct Clocked {
    pub(crate) seq: u64,
    pub(crate) chunk: Chunk,
    pub(crate) now: Vec<u64>,
    pub(crate) end_now: u64,
}

pub(crate) struct ReaderResult {
    pub(crate) err: Option<CaptureError>,
    pub(crate) stats: CaptureStats,
    pub(crate) warnings: Vec<String>,
}

/// The source, read chunk by chunk until it ends, fails, or the run is stopped.
pub(crate) struct Reader {
    pub(crate) source: Box<dyn PacketSource>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) progress: Arc<Progress>,
    pub(crate) chunk_frames: usize,
    pub(crate) err: Option<CaptureError>,
}

impl Reader {
    pub(crate) fn next(&mut self) -> Option<Chunk> {
        if self.stop.load(Ordering::Relaxed) || self.err.is_some() {
            return None;
        }
        match self.source.next_chunk(self.chunk_frames) {
            Ok(Some(chunk)) => {
                self.progress.packets.fetch_add(chunk.frames.len() as u64, Ordering::Relaxed);
                self.progress.bytes_read.store(self.source.progress().bytes_read, Ordering::Relaxed);
                Some(chunk)
            }
            Ok(None) => None,
            Err(e) => {
                self.err = Some(e);
                None
            }
        }
    }

    pub(crate) fn finish(mut self) -> ReaderResult {
        ReaderResult { err: self.err, stats: self.source.stats(), warnings: self.source.take_warnings() }
    }
}
