//! pcap and pcapng files, read in large blocks; `-` is stdin.
//!
//! [`open_files`] opens every input before anything is read, so a missing file or
//! a file that is not a capture stops the run at once with a clear error instead
//! of after an hour of processing the files before it. The inputs are then one
//! continuous stream, in the order given; a [`Chunk`] never spans two of them.
//!
//! Every input is read in blocks of [`STREAM_FILL`] bytes into a `Vec<u8>` that
//! frames point into (a record cut by the end of a block is carried over to the next
//! one): regular files fill whole blocks, stdin, pipes and devices deliver what has
//! come so far.
//!
//! # Why files are read, not memory-mapped
//!
//! A map of a file that another process truncates while it is read (tcpdump's
//! `-C`/`-W` reusing a file name, logrotate) turns every access to the lost pages
//! into SIGBUS, which kills the process: no summary, every live flow lost. No safe
//! Rust code can recover from it (a handler would have to jump out of arbitrary
//! code). A `read` of a file that shrank returns end-of-file instead, so the input
//! ends with a warning and every flow seen is written. The cost is one copy of each
//! byte in the kernel, which the page cache makes a `memcpy`; user-space
//! instructions per packet do not change (`read_to_end` fills the block without
//! zeroing it first).
//!
//! Damage inside a capture is not an error (see [`CaptureStats`]): a truncated
//! last record, or a record that breaks the framing, ends that file with a warning
//! naming the file, the record and the byte offset, and reading goes on with the
//! next file. Nothing in here may panic on any input.
//!
//! # Why a hand-written parser, not the `pcap-file` crate
//!
//! The record and block framing is a few dozen lines ([`crate::pcap`],
//! [`crate::pcapng`]), and it is the hot path of the whole analyzer: here a record
//! costs a bounds check, a few loads and a multiply on the block read, with no
//! allocation, `Cow` or `Result` per packet. Beyond speed, `pcap-file` does not do
//! what this reader must:
//! - 2.0.0 scales microsecond pcapng timestamps wrong (×1/1000). 3.0.0-rc1 fixes
//!   decimal resolutions but gets power-of-2 `if_tsresol` wrong (2^(30-k) ns per
//!   unit instead of 10^9/2^k), indexes out of bounds for 2^-30, can overflow a
//!   `Duration` (panic) on a fuzzed timestamp, and ignores `if_tsoffset`;
//! - it rejects pcap records with caplen > snaplen or caplen > orig_len, which real
//!   captures contain (the engine decides what to trust, not the reader);
//! - its errors do not tell a truncated tail (keep what came before) from lost
//!   framing, nor say at which byte and record, which the warnings need.
//!
//! `pcap-file` stays as a dev-dependency: the corpus test cross-checks this reader
//! against it.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::format::{sniff, Format, Step, HEAD_LEN};
use crate::{Backing, CaptureError, CaptureStats, Chunk, PacketSource, Progress};

/// How much of a stream is read at a time. Large enough that the per-block cost
/// (a `read` loop, carrying a partial record over) does not matter; a record
/// larger than this gets a larger buffer.
pub const STREAM_FILL: usize = 4 << 20;

/// Frames per chunk preallocated at most, whatever `max_frames` asks for.
const MAX_PREALLOC_FRAMES: usize = 4096;

/// Packets from one or more capture files (or stdin), one continuous stream.
pub struct FileSource {
    inputs: Vec<Input>,
    /// Index of the input being read.
    cur: usize,
    stats: CaptureStats,
    warnings: Vec<String>,
    /// Sum of the sizes of all inputs; `None` if one is a stream.
    bytes_total: Option<u64>,
    /// Bytes of the inputs already finished.
    bytes_done: u64,
    /// Timestamp of the last frame delivered, for pcapng simple packet blocks.
    last_ts: u64,
}

/// Opens every input in `paths` (`-` is stdin) and checks it is a capture.
///
/// Errors: [`CaptureError::Io`] if a file cannot be opened or read (or is a
/// directory, or `-` is given twice), [`CaptureError::NotACapture`] if it is empty,
/// too short for a capture header, or starts with no pcap/pcapng magic number.
pub fn open_files(paths: &[PathBuf]) -> Result<FileSource, CaptureError> {
    // Checked first, so nothing is read from stdin for a command line that fails.
    if paths.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        return Err(CaptureError::Io {
            path: PathBuf::from("-"),
            source: io::Error::new(io::ErrorKind::InvalidInput, "stdin (-) given more than once"),
        });
    }
    let mut inputs = Vec::with_capacity(paths.len());
    for path in paths {
        let input = if path.as_os_str() == "-" {
            Input::open_stream("<stdin>".into(), path, Box::new(io::stdin()), STREAM_FILL)?
        } else {
            Input::open_path(path)?
        };
        inputs.push(input);
    }
    Ok(FileSource::new(inputs))
}

/// Reads a capture from any byte stream (a decompressor, a socket, a test), as
/// stdin is read. `name` is used in warnings and errors.
pub fn open_reader(name: &str, reader: impl Read + Send + 'static) -> Result<FileSource, CaptureError> {
    let input = Input::open_stream(name.into(), Path::new(name), Box::new(reader), STREAM_FILL)?;
    Ok(FileSource::new(vec![input]))
}

impl FileSource {
    fn new(inputs: Vec<Input>) -> FileSource {
        let bytes_total = inputs.iter().map(|i| i.size).sum();
        FileSource {
            inputs,
            cur: 0,
            stats: CaptureStats::default(),
            warnings: Vec::new(),
            bytes_total,
            bytes_done: 0,
            last_ts: 0,
        }
    }

    /// The number of inputs.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// True if there are no inputs (an empty path list).
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// The input being read (as named in warnings), `None` once all are done.
    pub fn current_name(&self) -> Option<&str> {
        self.inputs.get(self.cur).map(|i| i.name.as_str())
    }

    /// For each input: its name and format (`pcap`, `pcap (ns)`, `pcapng`).
    pub fn formats(&self) -> Vec<(String, &'static str)> {
        self.inputs.iter().map(|i| (i.name.clone(), i.fmt_name)).collect()
    }

    #[cfg(test)]
    fn with_fill(mut self, fill: usize) -> Self {
        for i in &mut self.inputs {
            if let Data::Stream(s) = &mut i.data {
                s.fill = fill;
            }
        }
        self
    }
}

impl PacketSource for FileSource {
    /// At most `max_frames` frames (0 is taken as 1), all from one input; never an
    /// empty chunk. A stream read error ends the source with [`CaptureError::Io`].
    fn next_chunk(&mut self, max_frames: usize) -> Result<Option<Chunk>, CaptureError> {
        let max = max_frames.max(1);
        while let Some(input) = self.inputs.get_mut(self.cur) {
            let got = input.read_chunk(max, &mut self.stats, &mut self.warnings, &mut self.last_ts)?;
            if let Some(chunk) = got {
                return Ok(Some(chunk));
            }
            input.close(&mut self.warnings);
            self.bytes_done += input.consumed();
            self.cur += 1;
        }
        Ok(None)
    }

    fn progress(&self) -> Progress {
        let current = self.inputs.get(self.cur).map_or(0, Input::position);
        Progress { bytes_read: self.bytes_done + current, bytes_total: self.bytes_total }
    }

    fn stats(&self) -> CaptureStats {
        self.stats
    }

    fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Only streams (stdin, pipes) can block; regular files (whose size is known) are read to their end without waiting.
    fn may_block(&self) -> bool {
        self.bytes_total.is_none()
    }
}

/// One input file or stream.
struct Input {
    /// As shown in messages: the path, or `<stdin>`.
    name: String,
    path: PathBuf,
    fmt: Format,
    fmt_name: &'static str,
    data: Data,
    /// File size, `None` for streams.
    size: Option<u64>,
    /// Records (pcap) or blocks (pcapng, section headers included) read whole.
    records: u64,
    /// Frames delivered from this input.
    frames: u64,
    /// Packet blocks skipped as inconsistent, and the first one's offset and why.
    bad: u64,
    first_bad: Option<(u64, String)>,
    /// No more frames will come from this input.
    finished: bool,
}

enum Data {
    Stream(Stream),
    /// Finished and released (chunks still in flight keep their buffers alive).
    Done {
        consumed: u64,
    },
}

/// A stream read block by block.
struct Stream {
    reader: Box<dyn Read + Send>,
    /// The current block; chunks share it, so it is replaced, not overwritten,
    /// unless no chunk holds it any more.
    buf: Arc<Vec<u8>>,
    /// Parse position in `buf`.
    pos: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// Bytes to read per block.
    fill: usize,
    /// A regular file: a refill reads a whole block (nothing to wait for), without
    /// zeroing it first.
    whole: bool,
    /// Earlier blocks, kept for reuse (see `spare_block`).
    spare: Vec<Arc<Vec<u8>>>,
}

/// Why the record loop of [`Input::read_chunk`] stopped.
enum Stop {
    /// `max_frames` reached.
    Full,
    End,
    Short(usize),
    Corrupt(String),
}

impl Input {
    fn open_path(path: &Path) -> Result<Input, CaptureError> {
        let io_err = |source| CaptureError::Io { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io_err)?;
        let meta = file.metadata().map_err(io_err)?;
        let name = path.display().to_string();
        if meta.is_dir() {
            return Err(io_err(io::Error::other("is a directory")));
        }
        if !meta.is_file() {
            // A pipe or a device (`<(zcat x.pcap.gz)`, /dev/stdin): read as a stream.
            return Input::open_stream(name, path, Box::new(file), STREAM_FILL);
        }
        if meta.len() == 0 {
            return Err(not_a_capture(path, "empty file".into()));
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: a hint to the kernel's read-ahead on a descriptor we own; failure
            // changes nothing.
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL) };
        }
        let mut input = Input::open_stream(name, path, Box::new(file), STREAM_FILL)?;
        input.size = Some(meta.len());
        if let Data::Stream(s) = &mut input.data {
            s.whole = true;
        }
        Ok(input)
    }

    fn open_stream(
        name: String,
        path: &Path,
        reader: Box<dyn Read + Send>,
        fill: usize,
    ) -> Result<Input, CaptureError> {
        let mut s = Stream {
            reader,
            buf: Arc::new(Vec::new()),
            pos: 0,
            base: 0,
            eof: false,
            fill,
            whole: false,
            spare: Vec::new(),
        };
        // Only the header now: reading more could block on a live pipe.
        s.refill(HEAD_LEN, HEAD_LEN).map_err(|source| CaptureError::Io { path: path.to_path_buf(), source })?;
        let (fmt, header_len) = sniff(&s.buf).map_err(|r| not_a_capture(path, r))?;
        s.pos = header_len;
        Ok(Input::new(name, path, fmt, Data::Stream(s), None))
    }

    fn new(name: String, path: &Path, fmt: Format, data: Data, size: Option<u64>) -> Input {
        Input {
            name,
            path: path.to_path_buf(),
            fmt_name: fmt.name(),
            fmt,
            data,
            size,
            records: 0,
            frames: 0,
            bad: 0,
            first_bad: None,
            finished: false,
        }
    }

    /// Input offset of the next record.
    fn position(&self) -> u64 {
        match &self.data {
            Data::Stream(s) => s.base + s.pos as u64,
            Data::Done { consumed } => *consumed,
        }
    }

    /// Bytes of the input taken in by the end (all of a file, even past damage).
    fn consumed(&self) -> u64 {
        match &self.data {
            Data::Stream(s) => s.base + s.buf.len() as u64,
            Data::Done { consumed } => *consumed,
        }
    }

    /// Releases the map or stream and reports what was skipped along the way.
    fn close(&mut self, warnings: &mut Vec<String>) {
        if let Some((off, why)) = self.first_bad.take() {
            warnings
                .push(format!("{}: {} packet block(s) skipped, the first at byte {off}: {why}", self.name, self.bad));
        }
        let consumed = self.consumed();
        let at_eof = matches!(&self.data, Data::Stream(st) if st.eof);
        if let Some(size) = self.size.filter(|s| at_eof && consumed < *s) {
            warnings.push(format!(
                "{}: the file shrank while it was read ({size} bytes when opened, {consumed} at the end; \
                 rewritten by tcpdump -C/-W or logrotate?): {} packets read, those after the cut lost",
                self.name, self.frames
            ));
        }
        self.finished = true;
        // Progress counts a file whole once it is done, even when damage ended it
        // early or it shrank.
        self.data = Data::Done { consumed: self.size.map_or(consumed, |s| s.max(consumed)) };
    }

    /// The next chunk of this input, or `None` when it has no more frames.
    fn read_chunk(
        &mut self,
        max: usize,
        stats: &mut CaptureStats,
        warnings: &mut Vec<String>,
        last_ts: &mut u64,
    ) -> Result<Option<Chunk>, CaptureError> {
        loop {
            if self.finished {
                return Ok(None);
            }
            let (bytes, start, base, eof): (&[u8], usize, u64, bool) = match &self.data {
                Data::Stream(s) => (s.buf.as_slice(), s.pos, s.base, s.eof),
                Data::Done { .. } => return Ok(None),
            };
            let mut frames = Vec::with_capacity(max.min(MAX_PREALLOC_FRAMES));
            let mut pos = start;
            let stop = loop {
                if frames.len() >= max {
                    break Stop::Full;
                }
                match self.fmt.step(bytes, pos, *last_ts) {
                    Step::Frame(meta, len) => {
                        *last_ts = meta.ts_ns;
                        stats.frames += 1;
                        stats.wire_bytes += u64::from(meta.orig_len);
                        self.frames += 1;
                        self.records += 1;
                        frames.push(meta);
                        pos += len;
                    }
                    Step::Meta(len) => {
                        self.records += 1;
                        pos += len;
                    }
                    Step::Skipped(len) => {
                        self.records += 1;
                        stats.skipped_blocks += 1;
                        pos += len;
                    }
                    Step::Bad(len, why) => {
                        self.records += 1;
                        self.bad += 1;
                        stats.bad_packet_blocks += 1;
                        self.first_bad.get_or_insert((base + pos as u64, why));
                        pos += len;
                    }
                    Step::End => break Stop::End,
                    Step::Short(need) => break Stop::Short(need),
                    Step::Corrupt(why) => break Stop::Corrupt(why),
                }
            };
            let have = bytes.len().saturating_sub(pos);
            let offset = base + pos as u64;
            let backing: Arc<dyn Backing> = match &mut self.data {
                Data::Stream(s) => {
                    s.pos = pos;
                    s.buf.clone()
                }
                Data::Done { .. } => return Ok(None),
            };
            // What to do once the frames so far are handed out.
            let mut refill_need = None;
            match stop {
                Stop::Full => {}
                Stop::End if eof => self.finished = true,
                Stop::End => refill_need = Some(1),
                Stop::Short(need) if !eof => refill_need = Some(need),
                Stop::Short(need) => {
                    self.finished = true;
                    stats.truncated_files += 1;
                    warnings.push(format!(
                        "{}: last record truncated at byte {offset} (record {}, {have} of \
                         {need} bytes there): {} packets read, the rest ignored",
                        self.name,
                        self.records + 1,
                        self.frames
                    ));
                }
                Stop::Corrupt(why) => {
                    self.finished = true;
                    stats.corrupt_records += 1;
                    warnings.push(format!(
                        "{}: corrupt record at byte {offset} (record {}): {why}; {} packets \
                         read, the rest of the file ignored",
                        self.name,
                        self.records + 1,
                        self.frames
                    ));
                }
            }
            if !frames.is_empty() {
                // A refill, if needed, happens on the next call: these frames point
                // into the current buffer.
                return Ok(Some(Chunk { backing, frames }));
            }
            drop(backing);
            if let (Some(need), Data::Stream(s)) = (refill_need, &mut self.data) {
                let fill = s.fill;
                s.refill(need, fill).map_err(|source| CaptureError::Io { path: self.path.clone(), source })?;
            }
        }
    }
}

/// Blocks a stream keeps for reuse while chunks still hold them: about what the
/// engine's rings keep in flight, so that a long read allocates no new block.
const SPARE_BLOCKS: usize = 8;

impl Stream {
    /// An empty vector with room for `target` bytes: a kept block that no chunk holds
    /// any more, or a new one.
    fn spare_block(&mut self, target: usize) -> Vec<u8> {
        if let Some(i) = self.spare.iter().position(|b| Arc::strong_count(b) == 1 && Arc::weak_count(b) == 0) {
            if let Ok(mut v) = Arc::try_unwrap(self.spare.swap_remove(i)) {
                v.clear();
                v.reserve(target);
                return v;
            }
        }
        Vec::with_capacity(target)
    }

    /// Starts a new block with the unparsed rest of the current one, and reads
    /// until it holds at least `need` bytes, with room for `target`, or the stream
    /// ends. It does not wait for `target`: a live pipe (`tcpdump -w - | tapstat -r -`)
    /// must see its packets as they come, not once 4 MiB have piled up.
    fn refill(&mut self, need: usize, target: usize) -> io::Result<()> {
        let target = target.max(need);
        let pos = self.pos.min(self.buf.len());
        let mut v = match Arc::get_mut(&mut self.buf) {
            // No chunk holds the block any more: reuse its memory.
            Some(v) => {
                let mut v = std::mem::take(v);
                v.drain(..pos);
                v
            }
            None => {
                let mut v = self.spare_block(target);
                v.extend_from_slice(self.buf.get(pos..).unwrap_or(&[]));
                // Chunks still hold the old block: keep it, to reuse once they are
                // done, rather than allocate (and fault in) a fresh block every time.
                let old = std::mem::take(&mut self.buf);
                if self.spare.len() < SPARE_BLOCKS {
                    self.spare.push(old);
                }
                v
            }
        };
        self.base += pos as u64;
        self.pos = 0;
        if self.whole {
            // A regular file: read the whole block (a short read means the end of
            // the file), into the vector's spare room without zeroing it first.
            let want = target.saturating_sub(v.len());
            v.reserve(want);
            let res = (&mut self.reader).take(want as u64).read_to_end(&mut v);
            if matches!(res, Ok(n) if n < want) {
                self.eof = true;
            }
            self.buf = Arc::new(v);
            return res.map(|_| ());
        }
        let mut len = v.len();
        let res = loop {
            // Zero only the room for the next read (a pipe gives at most 64 KiB at a
            // time), not the whole block on every refill.
            let end = target.min(len.saturating_add(READ_STEP).max(need));
            if v.len() < end {
                v.resize(end, 0);
            }
            let Some(dst) = v.get_mut(len..end).filter(|d| !d.is_empty()) else {
                break Ok(());
            };
            match self.reader.read(dst) {
                Ok(0) => {
                    self.eof = true;
                    break Ok(());
                }
                Ok(n) => {
                    len += n.min(dst.len());
                    if len >= need {
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        v.truncate(len);
        self.buf = Arc::new(v);
        res
    }
}

/// Most bytes asked of a stream in one read.
const READ_STEP: usize = 256 << 10;

fn not_a_capture(path: &Path, reason: String) -> CaptureError {
    CaptureError::NotACapture { path: path.to_path_buf(), reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{pcap_bytes, Ng, PcapKind, TempDir, Trickle};
    use crate::{FrameMeta, LinkType};

    /// Everything a source delivers: frames with their bytes, chunk sizes.
    struct Got {
        frames: Vec<(FrameMeta, Vec<u8>)>,
        chunks: Vec<usize>,
        stats: CaptureStats,
        warnings: Vec<String>,
    }

    fn drain(mut src: FileSource, max: usize) -> Got {
        let mut frames = Vec::new();
        let mut chunks = Vec::new();
        while let Some(c) = src.next_chunk(max).unwrap() {
            assert!(!c.frames.is_empty());
            assert!(c.frames.len() <= max.max(1));
            chunks.push(c.frames.len());
            for f in &c.frames {
                let d = c.data(f);
                assert_eq!(d.len(), f.caplen as usize, "frame bytes must be there");
                frames.push((*f, d.to_vec()));
            }
        }
        // The end is sticky.
        assert!(src.next_chunk(max).unwrap().is_none());
        let p = src.progress();
        if let Some(t) = p.bytes_total {
            assert_eq!(p.bytes_read, t, "progress must reach the total");
        }
        Got { frames, chunks, stats: src.stats(), warnings: src.take_warnings() }
    }

    fn read_file(name: &str, bytes: &[u8], max: usize) -> Got {
        let dir = TempDir::new();
        let p = dir.file(name, bytes);
        drain(open_files(&[p]).unwrap(), max)
    }

    /// The same bytes as a stream trickling `step` bytes per read into `fill`-byte
    /// blocks: must give exactly what the file gives.
    fn read_stream(bytes: &[u8], step: usize, fill: usize, max: usize) -> Got {
        let src = open_reader("s", Trickle::new(bytes.to_vec(), step)).unwrap();
        drain(src.with_fill(fill), max)
    }

    /// Reads `bytes` as a file and as streams of several shapes; checks they all
    /// agree and returns the file's result.
    fn read_all_ways(bytes: &[u8], max: usize) -> Got {
        let f = read_file("x.cap", bytes, max);
        // (Not STREAM_FILL: zeroing 4 MiB per stream is slow in debug builds.)
        for (step, fill) in [(1, 1), (7, 50), (4096, 64), (1 << 20, 1 << 16)] {
            let s = read_stream(bytes, step, fill, max);
            assert_eq!(no_offsets(&s.frames), no_offsets(&f.frames), "stream {step}/{fill} differs from file");
            assert_eq!(s.stats, f.stats, "stream {step}/{fill} stats");
            assert_eq!(s.warnings.len(), f.warnings.len(), "{:?}", s.warnings);
        }
        f
    }

    /// Frames without their offsets, which differ between a file and a stream.
    fn no_offsets(frames: &[(FrameMeta, Vec<u8>)]) -> Vec<(FrameMeta, Vec<u8>)> {
        frames.iter().map(|(f, d)| (FrameMeta { offset: 0, ..*f }, d.clone())).collect()
    }

    fn ts(sec: u64, ns: u64) -> u64 {
        sec * 1_000_000_000 + ns
    }

    fn three_records() -> Vec<(u32, u32, u32, Vec<u8>)> {
        vec![
            (1_700_000_000, 123_456, 60, vec![0xaa; 60]),
            (1_700_000_001, 999_999, 1514, (0..=255).cycle().take(96).collect()),
            (1_700_000_002, 0, 3, vec![1, 2, 3, 4, 5]), // caplen > orig_len: as is
        ]
    }

    #[test]
    fn pcap_micro_le_and_be() {
        for be in [false, true] {
            let b = pcap_bytes(PcapKind::Micro, be, 1, 96, &three_records());
            let g = read_all_ways(&b, 100);
            assert_eq!(g.frames.len(), 3);
            let (f0, d0) = &g.frames[0];
            assert_eq!(f0.ts_ns, ts(1_700_000_000, 123_456_000));
            assert_eq!((f0.orig_len, f0.caplen, f0.link), (60, 60, LinkType::ETHERNET));
            // Offsets are into the block read after the file header.
            assert_eq!(f0.offset, 16);
            assert_eq!(d0, &vec![0xaa; 60]);
            let (f1, d1) = &g.frames[1];
            assert_eq!(f1.ts_ns, ts(1_700_000_001, 999_999_000));
            assert_eq!((f1.orig_len, f1.caplen), (1514, 96));
            assert_eq!(f1.offset, 16 + 60 + 16);
            assert_eq!(d1[..4], [0, 1, 2, 3]);
            let (f2, d2) = &g.frames[2];
            assert_eq!(f2.ts_ns, ts(1_700_000_002, 0));
            assert_eq!((f2.orig_len, f2.caplen), (3, 5));
            assert_eq!(d2, &vec![1, 2, 3, 4, 5]);
            assert_eq!(g.chunks, vec![3]);
            assert!(g.warnings.is_empty(), "{:?}", g.warnings);
            assert_eq!(g.stats, CaptureStats { frames: 3, wire_bytes: 60 + 1514 + 3, ..Default::default() });
        }
    }

    #[test]
    fn pcap_nano_le_and_be() {
        for be in [false, true] {
            let recs = vec![(1_700_000_000, 123_456_789, 4, vec![9; 4]), (1_700_000_000, 999_999_999, 4, vec![8; 4])];
            let b = pcap_bytes(PcapKind::Nano, be, 113, 65535, &recs);
            let g = read_all_ways(&b, 100);
            let got: Vec<_> = g.frames.iter().map(|(f, _)| (f.ts_ns, f.link)).collect();
            assert_eq!(
                got,
                vec![
                    (ts(1_700_000_000, 123_456_789), LinkType::LINUX_SLL),
                    (ts(1_700_000_000, 999_999_999), LinkType::LINUX_SLL)
                ]
            );
        }
    }

    #[test]
    fn pcap_header_only_is_fine() {
        let b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &[]);
        let g = read_all_ways(&b, 10);
        assert!(g.frames.is_empty() && g.warnings.is_empty());
        assert_eq!(g.stats, CaptureStats::default());
    }

    /// A frame as expected: ts_ns, orig_len, caplen, link, bytes.
    type Want = (u64, u32, u32, LinkType, Vec<u8>);

    /// The pcapng test capture: four interfaces with different resolutions, every
    /// packet block type, blocks to skip. Returns the bytes and what must be read.
    fn sample_ng(be: bool) -> (Vec<u8>, Vec<Want>) {
        let mut ng = Ng::new(be);
        ng.idb(1, 0, None, None) // 0: Ethernet, µs by default, no snaplen
            .idb(113, 65535, Some(9), None) // 1: SLL, ns
            .idb(101, 65535, Some(0x80 | 10), None) // 2: raw, 2^-10 s
            .idb(228, 64, Some(3), Some(-3600)); // 3: IPv4, ms, offset -1 h
        let mut want = Vec::new();
        // µs: the case pcap-file 2.0.0 gets wrong by a factor 1000.
        ng.epb(0, 1_700_000_000_123_456, 60, &[0x11; 60]);
        want.push((ts(1_700_000_000, 123_456_000), 60, 60, LinkType::ETHERNET, vec![0x11; 60]));
        ng.block(5, &[0; 16]); // interface statistics: skipped
        ng.epb(1, 1_700_000_000_987_654_321, 1500, &[0x22; 33]);
        want.push((ts(1_700_000_000, 987_654_321), 1500, 33, LinkType::LINUX_SLL, vec![0x22; 33]));
        // 2^-10 s units: 1_700_000_000.5 s.
        ng.epb(2, 1_700_000_000 * 1024 + 512, 20, &[0x33; 20]);
        want.push((ts(1_700_000_000, 500_000_000), 20, 20, LinkType::RAW, vec![0x33; 20]));
        ng.epb(3, 1_700_003_600_250, 8, &[0x44; 8]);
        want.push((ts(1_700_000_000, 250_000_000), 8, 8, LinkType::IPV4, vec![0x44; 8]));
        // Simple packet: interface 0, the previous frame's timestamp, caplen from
        // the block (orig 10, stored 10, padded to 12).
        ng.spb(10, &[0x55; 10]);
        want.push((ts(1_700_000_000, 250_000_000), 10, 10, LinkType::ETHERNET, vec![0x55; 10]));
        ng.block(4, &[0, 0, 0, 0]); // name resolution: skipped
        ng.block(0x8000_0001, &[1, 2, 3, 4, 5]); // local use: skipped
                                                 // Obsolete packet block on interface 1 (ns).
        ng.opb(1, 1_700_000_001_000_000_001, 70, &[0x66; 70]);
        want.push((ts(1_700_000_001, 1), 70, 70, LinkType::LINUX_SLL, vec![0x66; 70]));
        (ng.bytes(), want)
    }

    fn check_sample(g: &Got, want: &[Want]) {
        let got: Vec<_> = g.frames.iter().map(|(f, d)| (f.ts_ns, f.orig_len, f.caplen, f.link, d.clone())).collect();
        assert_eq!(got, want);
        assert_eq!(g.stats.skipped_blocks, 3);
        assert_eq!(g.stats.frames, want.len() as u64);
        assert_eq!(g.stats.wire_bytes, want.iter().map(|w| u64::from(w.1)).sum::<u64>());
        assert_eq!(g.stats.truncated_files + g.stats.corrupt_records, 0);
        assert!(g.warnings.is_empty(), "{:?}", g.warnings);
    }

    #[test]
    fn pcapng_interfaces_resolutions_and_block_types() {
        for be in [false, true] {
            let (b, want) = sample_ng(be);
            let g = read_all_ways(&b, 1000);
            check_sample(&g, &want);
            // The first EPB's data starts after the SHB (44 bytes with its
            // option), 4 IDBs (with 0, 1 or 2 timestamp options) and the EPB's
            // 28-byte header.
            let idbs: u64 = [32u64, 40, 40, 52].iter().sum();
            assert_eq!(g.frames[0].0.offset, 44 + idbs + 28);
        }
    }

    #[test]
    fn pcapng_simple_packet_caplen_is_min_of_orig_snaplen_room() {
        let mut ng = Ng::new(false);
        ng.idb(1, 64, None, None);
        ng.epb(0, 5_000_000, 100, &[1; 100]);
        ng.spb(100, &[2; 80]); // snaplen 64 < room 80 < orig 100
        ng.spb(50, &[3; 40]); // room 40 < snaplen 64 < orig 50
        ng.spb(2, &[4; 8]); // orig 2 < everything
        let g = read_all_ways(&ng.bytes(), 100);
        let got: Vec<_> = g.frames.iter().map(|(f, d)| (f.ts_ns, f.orig_len, f.caplen, d.clone())).collect();
        assert_eq!(
            got,
            vec![
                (5_000_000_000, 100, 100, vec![1; 100]),
                (5_000_000_000, 100, 64, vec![2; 64]),
                (5_000_000_000, 50, 40, vec![3; 40]),
                (5_000_000_000, 2, 2, vec![4; 2]),
            ]
        );
    }

    #[test]
    fn pcapng_sections_reset_interfaces_and_byte_order() {
        let mut ng = Ng::new(false);
        ng.idb(1, 0, None, None).idb(1, 0, None, None);
        ng.epb(1, 1_000_000, 4, &[1; 4]);
        ng.shb(true); // big-endian section: interfaces start again
        ng.idb(113, 0, Some(9), None);
        ng.epb(0, 2_000_000_000, 4, &[2; 4]);
        ng.epb(1, 3, 4, &[3; 4]); // interface 1 belongs to the old section
        ng.shb(false);
        ng.idb(229, 0, None, Some(10));
        ng.epb(0, 1, 4, &[4; 4]);
        let g = read_all_ways(&ng.bytes(), 100);
        let got: Vec<_> = g.frames.iter().map(|(f, _)| (f.ts_ns, f.link)).collect();
        assert_eq!(
            got,
            vec![
                (1_000_000_000, LinkType::ETHERNET),
                (2_000_000_000, LinkType::LINUX_SLL),
                (10_000_001_000, LinkType::IPV6),
            ]
        );
        assert_eq!(g.stats.bad_packet_blocks, 1);
        assert_eq!(g.warnings.len(), 1);
        assert!(g.warnings[0].contains("interface 1"), "{:?}", g.warnings);
        assert_eq!(g.stats.corrupt_records, 0);
    }

    #[test]
    fn pcapng_bad_packet_blocks_are_skipped_alone() {
        let mut ng = Ng::new(false);
        ng.idb(1, 0, None, None);
        ng.spb(10, &[1; 10]);
        ng.epb(7, 1, 4, &[0; 4]); // unknown interface
                                  // EPB whose caplen (200) runs beyond its block.
        let mut body = Vec::new();
        for x in [0u32, 0, 5, 200, 200] {
            body.extend_from_slice(&x.to_le_bytes());
        }
        body.extend_from_slice(&[0; 8]);
        let bad_at = ng.len();
        ng.block(6, &body);
        ng.epb(0, 9, 4, &[9; 4]);
        let g = read_all_ways(&ng.bytes(), 100);
        assert_eq!(g.frames.len(), 2);
        assert_eq!(g.frames[1].0.ts_ns, 9_000);
        assert_eq!(g.stats.bad_packet_blocks, 2);
        assert_eq!(g.warnings.len(), 1, "one summary per file: {:?}", g.warnings);
        assert!(g.warnings[0].contains("2 packet block(s) skipped"), "{}", g.warnings[0]);
        assert!(bad_at > 0);
    }

    #[test]
    fn truncated_last_pcap_record_keeps_what_came_before() {
        let b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &three_records());
        // Cut inside the data of the third record, then inside its header.
        let third = 24 + 16 + 60 + 16 + 96;
        for cut in [third + 16 + 2, third + 10] {
            let g = read_all_ways(&b[..cut], 100);
            assert_eq!(g.frames.len(), 2);
            assert_eq!(g.frames[1].0.ts_ns, ts(1_700_000_001, 999_999_000));
            assert_eq!(g.stats.truncated_files, 1);
            assert_eq!(g.stats.corrupt_records, 0);
            assert_eq!(g.warnings.len(), 1);
            let w = &g.warnings[0];
            assert!(w.contains("x.cap: last record truncated at byte 212 (record 3, "), "{w}");
            assert!(w.contains("2 packets read"), "{w}");
        }
        // Stream warnings name the stream.
        let s = read_stream(&b[..third + 3], 5, 40, 10);
        assert!(s.warnings[0].starts_with("s: last record truncated at byte 212"), "{:?}", s.warnings);
    }

    #[test]
    fn truncated_last_pcapng_block() {
        let (b, want) = sample_ng(false);
        let g = read_all_ways(&b[..b.len() - 3], 100);
        assert_eq!(g.frames.len(), want.len() - 1);
        assert_eq!(g.stats.truncated_files, 1);
        assert_eq!(g.warnings.len(), 1);
        // Blocks: SHB, 4 IDBs, 8 before the OPB, which is cut.
        let w = &g.warnings[0];
        assert!(w.contains("truncated at byte 600 (record 14, 101 of 104 bytes there): 5 packets read"), "{w}");
    }

    #[test]
    fn pcapng_broken_framing_is_corrupt() {
        let mut base = Ng::new(false);
        base.idb(1, 0, None, None).epb(0, 1, 4, &[1; 4]);
        let at = base.len();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            // Length not a multiple of 4.
            ([6u32, 30, 0, 0, 0, 0, 0, 30].iter().flat_map(|x| x.to_le_bytes()).collect(), "30"),
            // Length below 12.
            ([6u32, 8, 8].iter().flat_map(|x| x.to_le_bytes()).collect(), "block length 8"),
            // Trailing copy differs.
            ([5u32, 16, 0, 20].iter().flat_map(|x| x.to_le_bytes()).collect(), "trailing"),
            // Implausibly large.
            ([6u32, 0x4000_0000, 0].iter().flat_map(|x| x.to_le_bytes()).collect(), "implausibly"),
        ];
        for (tail, what) in cases {
            let mut ng = Ng::new(false);
            ng.idb(1, 0, None, None).epb(0, 1, 4, &[1; 4]);
            ng.raw(&tail).epb(0, 2, 4, &[2; 4]);
            let g = read_all_ways(&ng.bytes(), 100);
            assert_eq!(g.frames.len(), 1, "{what}");
            assert_eq!(g.stats.corrupt_records, 1, "{what}");
            assert_eq!(g.stats.truncated_files, 0, "{what}");
            let w = &g.warnings[0];
            assert!(w.contains(what) && w.contains(&format!("at byte {at} (record 4)")), "{w}");
        }
    }

    #[test]
    fn pcapng_later_section_of_unknown_version_is_corrupt() {
        let mut ng = Ng::new(false);
        ng.idb(1, 0, None, None).epb(0, 1, 4, &[1; 4]);
        let at = ng.len();
        let mut next = Ng::new(true).bytes();
        next[12..14].copy_from_slice(&2u16.to_be_bytes());
        ng.raw(&next).idb(1, 0, None, None).epb(0, 2, 4, &[2; 4]);
        let g = read_all_ways(&ng.bytes(), 10);
        assert_eq!(g.frames.len(), 1);
        assert_eq!(g.stats.corrupt_records, 1);
        assert!(g.warnings[0].contains(&format!("at byte {at} (record 4): pcapng version 2")), "{:?}", g.warnings);
    }

    #[test]
    fn corrupt_file_stops_and_next_file_goes_on() {
        let dir = TempDir::new();
        let mut bad = pcap_bytes(PcapKind::Micro, false, 1, 65535, &three_records()[..1]);
        bad.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0x40]);
        bad.extend_from_slice(&[0; 200]);
        let good = pcap_bytes(PcapKind::Nano, true, 101, 65535, &[(7, 8, 2, vec![5, 6])]);
        let p1 = dir.file("bad.pcap", &bad);
        let p2 = dir.file("good.pcap", &good);
        let g = drain(open_files(&[p1.clone(), p2]).unwrap(), 100);
        assert_eq!(g.frames.len(), 2);
        assert_eq!(g.frames[1].0.ts_ns, 7_000_000_008);
        assert_eq!(g.frames[1].0.link, LinkType::RAW);
        assert_eq!(g.stats.corrupt_records, 1);
        assert_eq!(g.warnings.len(), 1);
        let w = &g.warnings[0];
        assert!(w.starts_with(&format!("{}: corrupt record at byte 100 (record 2)", p1.display())), "{w}");
    }

    #[test]
    fn several_files_are_one_stream_in_order() {
        let dir = TempDir::new();
        let a = pcap_bytes(PcapKind::Micro, false, 1, 65535, &[(1, 0, 1, vec![1]), (2, 0, 1, vec![2])]);
        let (b, want_b) = sample_ng(true);
        let c = pcap_bytes(PcapKind::Micro, true, 1, 65535, &[(3, 0, 1, vec![3])]);
        let paths = [dir.file("a.pcap", &a), dir.file("b.pcapng", &b), dir.file("c.pcap", &c)];
        let src = open_files(&paths).unwrap();
        assert_eq!(src.len(), 3);
        assert_eq!(src.current_name(), Some(paths[0].display().to_string().as_str()));
        let fmts: Vec<_> = src.formats().into_iter().map(|(_, f)| f).collect();
        assert_eq!(fmts, vec!["pcap", "pcapng", "pcap"]);
        // The file header of the first file was read when it was opened.
        assert_eq!(src.progress().bytes_read, 24);
        assert_eq!(src.progress().bytes_total, Some((a.len() + b.len() + c.len()) as u64));
        let g = drain(src, 4);
        // Chunks never span files: 2 | 4, 2 | 1.
        assert_eq!(g.chunks, vec![2, 4, 2, 1]);
        let ts_all: Vec<u64> = g.frames.iter().map(|(f, _)| f.ts_ns).collect();
        let mut want = vec![1_000_000_000, 2_000_000_000];
        want.extend(want_b.iter().map(|w| w.0));
        want.push(3_000_000_000);
        assert_eq!(ts_all, want);
        assert_eq!(g.frames[0].1, vec![1]);
        assert_eq!(g.frames.last().unwrap().1, vec![3]);
    }

    #[test]
    fn chunk_sizes_respect_max_frames() {
        let recs: Vec<_> = (0..10u32).map(|i| (i, 0, 1, vec![i as u8])).collect();
        let b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &recs);
        assert_eq!(read_all_ways(&b, 3).chunks, vec![3, 3, 3, 1]);
        assert_eq!(read_all_ways(&b, 10).chunks, vec![10]);
        assert_eq!(read_all_ways(&b, 1).chunks, vec![1; 10]);
        assert_eq!(read_file("z", &b, 0).chunks, vec![1; 10]);
        let g = read_all_ways(&b, 4);
        let bytes: Vec<u8> = g.frames.iter().flat_map(|(_, d)| d.clone()).collect();
        assert_eq!(bytes, (0..10).collect::<Vec<u8>>());
    }

    #[test]
    fn progress_moves_with_the_reading() {
        let recs: Vec<_> = (0..4u32).map(|i| (i, 0, 10, vec![0; 10])).collect();
        let b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &recs);
        let dir = TempDir::new();
        let mut src = open_files(&[dir.file("p", &b)]).unwrap();
        assert_eq!(src.progress().bytes_read, 24);
        src.next_chunk(1).unwrap().unwrap();
        assert_eq!(src.progress().bytes_read, 24 + 26);
        src.next_chunk(2).unwrap().unwrap();
        assert_eq!(src.progress().bytes_read, 24 + 3 * 26);
        while src.next_chunk(2).unwrap().is_some() {}
        assert_eq!(src.progress().bytes_read, b.len() as u64);
        assert_eq!(src.current_name(), None);
        // Streams: no total.
        let s = open_reader("s", std::io::Cursor::new(b)).unwrap();
        assert_eq!(s.progress().bytes_total, None);
    }

    #[test]
    fn non_captures_and_missing_files_fail_up_front() {
        let dir = TempDir::new();
        let good = dir.file("good.pcap", &pcap_bytes(PcapKind::Micro, false, 1, 65535, &[]));
        let text = dir.file("notes.txt", b"this is not a capture\nat all\n");
        let empty = dir.file("empty.pcap", b"");
        let short = dir.file("short.pcap", &[0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0]);
        let missing = dir.0.join("missing.pcap");
        let err = |ps: &[PathBuf]| open_files(ps).err().expect("must fail");

        match err(&[good.clone(), text.clone()]) {
            CaptureError::NotACapture { path, reason } => {
                assert_eq!(path, text);
                assert!(reason.contains("unknown magic") && reason.contains("text"), "{reason}");
            }
            e => panic!("{e}"),
        }
        match err(std::slice::from_ref(&empty)) {
            CaptureError::NotACapture { path, reason } => {
                assert_eq!((path, reason.as_str()), (empty, "empty file"));
            }
            e => panic!("{e}"),
        }
        match err(std::slice::from_ref(&short)) {
            CaptureError::NotACapture { reason, .. } => assert!(reason.contains("too short"), "{reason}"),
            e => panic!("{e}"),
        }
        let e = err(&[good.clone(), missing.clone()]);
        assert!(e.to_string().starts_with(&missing.display().to_string()), "{e}");
        match e {
            CaptureError::Io { path, source } => {
                assert_eq!(path, missing);
                assert_eq!(source.kind(), io::ErrorKind::NotFound);
            }
            e => panic!("{e}"),
        }
        assert!(matches!(err(std::slice::from_ref(&dir.0)), CaptureError::Io { .. }));
        // `-` twice fails before reading stdin.
        assert!(matches!(err(&["-".into(), "-".into()]), CaptureError::Io { .. }));
        // Streams are checked the same way.
        assert!(matches!(
            open_reader("t", std::io::Cursor::new(b"GET / HTTP/1.1\r\n".to_vec())).err(),
            Some(CaptureError::NotACapture { .. })
        ));
        assert!(matches!(open_reader("e", std::io::empty()).err(), Some(CaptureError::NotACapture { .. })));
        // An empty list is an empty source.
        let src = open_files(&[]).unwrap();
        assert!(src.is_empty());
        assert_eq!(drain(src, 5).frames.len(), 0);
    }

    #[test]
    fn stream_records_larger_than_the_block_grow_it() {
        let recs = vec![(1, 0, 5000, vec![7; 5000]), (2, 0, 3, vec![1, 2, 3])];
        let b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &recs);
        let g = read_stream(&b, 333, 64, 10);
        assert_eq!(g.frames.len(), 2);
        assert_eq!(g.frames[0].1, vec![7; 5000]);
        assert_eq!(g.frames[1].1, vec![1, 2, 3]);
        assert!(g.warnings.is_empty());
    }

    #[test]
    fn stream_chunks_stay_valid_while_reading_goes_on() {
        // Hold every chunk until the end: the blocks they point into must survive
        // refills (a refill may only reuse a block nobody holds).
        let recs: Vec<_> = (0..50u32).map(|i| (i, 0, 20, vec![i as u8; 20])).collect();
        let b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &recs);
        let mut src = open_reader("s", Trickle::new(b, 13)).unwrap().with_fill(100);
        let mut held = Vec::new();
        while let Some(c) = src.next_chunk(3).unwrap() {
            held.push(c);
        }
        let mut i = 0u8;
        for c in &held {
            for f in &c.frames {
                assert_eq!(c.data(f), &[i; 20][..]);
                i += 1;
            }
        }
        assert_eq!(i, 50);
    }

    #[test]
    fn stream_read_errors_are_io_errors() {
        /// Hands out a header and part of a record, then fails.
        struct Failing(std::io::Cursor<Vec<u8>>);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                match self.0.read(buf)? {
                    0 => Err(io::Error::other("boom")),
                    n => Ok(n),
                }
            }
        }
        let mut b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &three_records());
        b.truncate(50);
        let mut src = open_reader("f", Failing(std::io::Cursor::new(b))).unwrap();
        match src.next_chunk(10) {
            Err(CaptureError::Io { path, source }) => {
                assert_eq!(path, PathBuf::from("f"));
                assert_eq!(source.to_string(), "boom");
            }
            other => panic!("{:?}", other.map(|c| c.map(|c| c.frames))),
        }
    }

    /// Cutting a capture anywhere never panics, and delivers exactly the records
    /// that are whole before the cut, with at most one warning.
    #[test]
    fn every_truncation_point() {
        let pcap = pcap_bytes(PcapKind::Micro, true, 1, 65535, &three_records());
        let pcap_ends = [24 + 16 + 60, 24 + 16 + 60 + 16 + 96, pcap.len()];
        let (ng, _) = sample_ng(false);
        // Frame-carrying block ends in sample_ng, found by reading prefixes.
        for (bytes, header) in [(&pcap, 24), (&ng, 28)] {
            let full = read_file("f", bytes, 100).frames.len();
            let mut prev = 0;
            for cut in header..=bytes.len() {
                let g = read_all_ways(&bytes[..cut], 2);
                let n = g.frames.len();
                assert!(n >= prev && n <= full, "cut {cut}");
                prev = n;
                assert!(g.warnings.len() <= 1, "{:?}", g.warnings);
                assert_eq!(g.stats.corrupt_records, 0, "cut {cut}: {:?}", g.warnings);
                let whole_end = cut == bytes.len() || (bytes == &pcap && pcap_ends.contains(&cut));
                if whole_end {
                    assert!(g.warnings.is_empty(), "cut {cut}: {:?}", g.warnings);
                }
            }
            assert_eq!(prev, full);
        }
        let g = read_all_ways(&pcap[..pcap_ends[1]], 100);
        assert_eq!((g.frames.len(), g.stats.truncated_files), (2, 0));
    }

    /// A file cut short by another process after it was opened (tcpdump `-C/-W`
    /// reusing the name, logrotate): the packets before the cut, a warning, and no
    /// SIGBUS (a memory map of the file would fault on the lost pages).
    #[test]
    fn a_file_truncated_while_open_ends_with_a_warning() {
        let recs: Vec<_> = (0..100u32).map(|i| (i, 0, 1000, vec![i as u8; 1000])).collect();
        let b = pcap_bytes(PcapKind::Micro, false, 1, 65535, &recs);
        let dir = TempDir::new();
        let p = dir.file("rotating.pcap", &b);
        let mut src = open_files(std::slice::from_ref(&p)).unwrap();
        // Cut inside record 31 (each record is 16 + 1000 bytes).
        let cut = 24 + 30 * 1016 + 500;
        std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(cut as u64).unwrap();
        let mut n = 0u32;
        while let Some(c) = src.next_chunk(7).unwrap() {
            for f in &c.frames {
                assert_eq!(c.data(f), &vec![n as u8; 1000][..]);
                n += 1;
            }
        }
        assert_eq!(n, 30);
        let w = src.take_warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("last record truncated"), "{w:?}");
        assert!(w[1].contains("shrank while it was read") && w[1].contains("30 packets read"), "{w:?}");
        assert_eq!(src.stats().truncated_files, 1);
    }

    /// Random damage: no panic, and the stream reader agrees with the file reader.
    #[test]
    fn random_damage_never_panics() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let seeds = [
            pcap_bytes(PcapKind::Micro, false, 1, 65535, &three_records()),
            pcap_bytes(PcapKind::Nano, true, 1, 65535, &three_records()),
            sample_ng(false).0,
            sample_ng(true).0,
        ];
        for _ in 0..300 {
            let mut b = seeds[(next() % 4) as usize].clone();
            for _ in 0..=(next() % 6) {
                let i = (next() as usize) % b.len();
                // Keep the magic so that the damage reaches the record reader.
                if i >= 4 {
                    b[i] = next() as u8;
                }
            }
            if next() % 3 == 0 {
                let keep = 4 + (next() as usize) % (b.len() - 4);
                b.truncate(keep);
            }
            let f = match open_files(&[TempDir::new().file("r", &b)]) {
                Ok(src) => drain(src, 1 + (next() % 5) as usize),
                Err(_) => continue,
            };
            let s = drain(open_reader("s", Trickle::new(b.clone(), 11)).unwrap().with_fill(64), 3);
            assert_eq!(no_offsets(&f.frames), no_offsets(&s.frames));
            assert_eq!(f.stats, s.stats);
        }
    }
}
