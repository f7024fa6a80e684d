//! The pcap / pcapng reader on any bytes, two ways: as a memory-mapped file
//! (`open_files` on a temporary file), and as a stream (`open_reader`) that hands out
//! the input whole, or a half or a quarter of it per `read` (records cut at block
//! ends, carried over to the next block).
//!
//! Asserted for each way (crates/capture/src/lib.rs and file.rs promise these):
//! - opening fails only with `CaptureError::NotACapture` (the input is no capture),
//!   and then it fails both ways; `next_chunk` never fails (no I/O error is
//!   possible here);
//! - a chunk is never empty and has at most `max_frames` frames;
//! - every frame's bytes lie within its chunk's backing buffer:
//!   `offset + caplen <= backing.len()`, so `Chunk::data` returns `caplen` bytes;
//! - `stats().frames` is the number of frames delivered and `stats().wire_bytes` the
//!   sum of their `orig_len`; the end is sticky; a file's progress reaches its size.
//!
//! And across the ways: the same frames (bytes and metadata but the offset, which is
//! relative to a different buffer), the same stats, as many warnings (what the
//! crate's own `read_all_ways` test checks on hand-made files).

use std::io::Read;
use std::path::PathBuf;
use std::sync::OnceLock;

use tapstat_capture::{open_files, open_reader, CaptureError, CaptureStats, FileSource, FrameMeta, PacketSource};

/// A reader that hands out at most `step` bytes per call.
struct Trickle {
    data: Vec<u8>,
    pos: usize,
    step: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let rest = &self.data[self.pos..];
        let n = rest.len().min(buf.len()).min(self.step);
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
    }
}

/// Everything a source delivered.
#[derive(Debug, PartialEq)]
struct Got {
    frames: Vec<(FrameMeta, Vec<u8>)>,
    stats: CaptureStats,
    warnings: usize,
}

fn drain(how: &str, mut src: FileSource, max: usize) -> Got {
    let mut frames = Vec::new();
    let mut warnings = 0;
    loop {
        let chunk = match src.next_chunk(max) {
            Ok(Some(c)) => c,
            Ok(None) => break,
            Err(e) => panic!("{how}: next_chunk failed: {e}"),
        };
        assert!(!chunk.frames.is_empty(), "{how}: an empty chunk");
        assert!(chunk.frames.len() <= max, "{how}: {} frames in a chunk of at most {max}", chunk.frames.len());
        let backing_len = chunk.backing.bytes().len() as u64;
        for f in &chunk.frames {
            let end = f.offset.checked_add(u64::from(f.caplen));
            assert!(
                end.is_some_and(|e| e <= backing_len),
                "{how}: frame {} outside its {backing_len}-byte backing buffer: {f:?}",
                frames.len()
            );
            let d = chunk.data(f);
            assert_eq!(d.len(), f.caplen as usize, "{how}: Chunk::data is not caplen bytes: {f:?}");
            frames.push((FrameMeta { offset: 0, ..*f }, d.to_vec()));
        }
        warnings += src.take_warnings().len();
        drop(chunk);
    }
    assert!(matches!(src.next_chunk(max), Ok(None)), "{how}: the end is not sticky");
    warnings += src.take_warnings().len();
    let stats = src.stats();
    assert_eq!(stats.frames, frames.len() as u64, "{how}: stats().frames is not the frames delivered");
    let wire: u64 = frames.iter().map(|(f, _)| u64::from(f.orig_len)).sum();
    assert_eq!(stats.wire_bytes, wire, "{how}: stats().wire_bytes is not the sum of orig_len");
    let p = src.progress();
    if let Some(total) = p.bytes_total {
        assert_eq!(p.bytes_read, total, "{how}: progress does not reach the total");
    }
    Got { frames, stats, warnings }
}

fn opened(how: &str, r: Result<FileSource, CaptureError>) -> Option<FileSource> {
    match r {
        Ok(s) => Some(s),
        Err(CaptureError::NotACapture { .. }) => None,
        Err(e) => panic!("{how}: open failed with {e}"),
    }
}

fn temp_path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| std::env::temp_dir().join(format!("tapstat-fuzz-capture-{}.cap", std::process::id())))
}

/// One input of the `capture` target.
pub fn capture_one(data: &[u8]) {
    // Chunk sizes and the stream's read size vary with the input, so chunk and block
    // ends fall in different places; a third of the inputs is read whole. (Only one
    // stream way: every block refill of a stream zeroes a STREAM_FILL = 4 MiB buffer,
    // which is most of the cost of a run.)
    let max_file = 1 + data.len() % 5;
    let max_stream = [1024, 1, 3][data.len() % 3];
    let step = [usize::MAX, 16 + data.len() / 2, 16 + data.len() / 4][data.len() % 3];

    let path = temp_path();
    std::fs::write(path, data).expect("writing the temporary file");
    let file = opened("file", open_files(std::slice::from_ref(path)));
    let stream = opened("stream", open_reader("stream", Trickle { data: data.to_vec(), pos: 0, step }));
    assert_eq!(file.is_some(), stream.is_some(), "file and stream disagree on whether this is a capture");
    let (Some(file), Some(stream)) = (file, stream) else { return };
    assert!(!file.may_block() && stream.may_block());

    let f = drain("file", file, max_file);
    let s = drain("stream", stream, max_stream);
    assert_eq!(f, s, "file and stream (read {step} bytes at a time) read differently");
}
