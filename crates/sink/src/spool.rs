//! The Kafka export's spool: records that could not be handed to the broker, kept on
//! disk in order until they can, within a bound.
//!
//! A spool is a directory of segment files (`SEQ.seg`, `SEQ` a 20-digit number that
//! gives their order) and a `cursor` file (`SEQ OFFSET`: where reading resumes). Each
//! segment starts with [`MAGIC`] and holds [frames](push_frame) end to end:
//!
//! ```text
//! name_len u8 | name (the log) | key_len u8 | key (the flow id) | value_len u32 LE | value (a JSON object)
//! ```
//!
//! Invariants:
//!
//! - First in, first out: [`Spool::front`] is the oldest record not yet taken, across
//!   runs (a spool that a run leaves is read first by the next run that opens the
//!   directory); [`Spool::close_with_head`] puts records that were taken but not
//!   delivered back before every other.
//! - Bounded: the segments on disk never hold more than the bound's bytes; a record
//!   that would pass it is refused ([`Spool::push`] answers `false`) and the caller
//!   counts it as dropped. (`close_with_head` writes past the bound: those records
//!   were counted in before, as records of the run.)
//! - One user: the directory is locked (`flock` on `.lock`) while a [`Spool`] lives.
//! - A torn tail (the process was killed in the middle of a write) is cut at the last
//!   whole frame when the spool is opened. Writes are not synced: a power cut can
//!   lose what the page cache held; a killed process loses nothing written.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The first bytes of every segment.
pub const MAGIC: &[u8; 8] = b"TSPOOL1\n";
/// A segment is closed and a new one begun past this size (or an eighth of the bound,
/// when that is smaller, so that reading frees room while the spool is in use).
const SEGMENT_MAX: u64 = 64 << 20;
/// A record's value may not be larger (a Kafka message of the default broker
/// configuration is at most 1 MiB).
pub const VALUE_MAX: usize = 16 << 20;
/// Sequence number of the first segment of a new spool: room below it for the
/// segments [`Spool::close_with_head`] puts in front.
const FIRST_SEQ: u64 = 1 << 40;
/// What one read from a segment asks for.
const READ_CHUNK: usize = 1 << 20;

/// Appends one frame (log `name`, `key`, `value`) to `out`.
pub fn push_frame(out: &mut Vec<u8>, name: &str, key: &[u8], value: &[u8]) {
    debug_assert!(name.len() <= 255 && key.len() <= 255 && value.len() <= VALUE_MAX);
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    out.push(key.len() as u8);
    out.extend_from_slice(key);
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}

/// A frame's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub name: &'a str,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// The length of the frame at the start of `b`: `None` when `b` holds less than a whole
/// frame, `Some(Err(()))` when it cannot be a frame (a value over [`VALUE_MAX`]).
fn frame_len(b: &[u8]) -> Option<Result<usize, ()>> {
    let n = *b.first()? as usize;
    let k = *b.get(1 + n)? as usize;
    let at = 2 + n + k;
    let v = u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize;
    if v > VALUE_MAX {
        return Some(Err(()));
    }
    let len = at + 4 + v;
    (b.len() >= len).then_some(Ok(len))
}

/// The frame at the start of `b` and its length, if `b` starts with a whole one.
pub fn parse_frame(b: &[u8]) -> Option<(Frame<'_>, usize)> {
    let len = frame_len(b)?.ok()?;
    let n = b[0] as usize;
    let name = std::str::from_utf8(&b[1..1 + n]).ok()?;
    let k = b[1 + n] as usize;
    let key = &b[2 + n..2 + n + k];
    let value = &b[2 + n + k + 4..len];
    Some((Frame { name, key, value }, len))
}

/// Every whole frame of `b`, in order.
pub fn frames(b: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let (_, len) = parse_frame(&b[at..])?;
        let f = &b[at..at + len];
        at += len;
        Some(f)
    })
}

/// A segment on disk.
#[derive(Debug)]
struct Segment {
    seq: u64,
    /// Bytes in the file (the magic included), and records in it.
    len: u64,
}

/// The spool of one directory (see the module's documentation).
pub struct Spool {
    dir: PathBuf,
    _lock: File,
    bound: u64,
    segment_max: u64,
    /// Segments in order; the last is the one written.
    segs: VecDeque<Segment>,
    /// The tail segment, open for appending (none until the first push after opening).
    tail: Option<File>,
    /// Bytes pushed but not yet written to the tail.
    pending: Vec<u8>,
    /// Where reading is in the head segment, and the bytes read ahead from there.
    offset: u64,
    head: Option<File>,
    ahead: Vec<u8>,
    ahead_at: usize,
    /// Records not yet taken, and bytes of the segments on disk (pending included).
    records: u64,
    disk: u64,
}

fn seg_name(seq: u64) -> String {
    format!("{seq:020}.seg")
}

impl Spool {
    /// Opens (or creates) the spool in `dir`, at most `bound` bytes. Whatever an earlier
    /// run left there is kept, to be read first.
    pub fn open(dir: &Path, bound: u64) -> io::Result<Spool> {
        std::fs::create_dir_all(dir)?;
        let lock = crate::open_append_nofollow(&dir.join(".lock"))?;
        // SAFETY: flock on a descriptor we own; the result is checked.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(io::Error::other("another tapstat run is using this spool (it holds .lock)"));
        }
        let mut seqs: Vec<u64> = std::fs::read_dir(dir)?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".seg")?.parse().ok())
            .collect();
        seqs.sort_unstable();
        let (cur_seq, offset) = std::fs::read_to_string(dir.join("cursor"))
            .ok()
            .and_then(|s| {
                let mut it = s.split_whitespace().map(|x| x.parse::<u64>());
                Some((it.next()?.ok()?, it.next()?.ok()?))
            })
            .unwrap_or((0, MAGIC.len() as u64));
        let mut s = Spool {
            dir: dir.to_path_buf(),
            _lock: lock,
            bound,
            segment_max: (bound / 8).clamp(64 << 10, SEGMENT_MAX),
            segs: VecDeque::new(),
            tail: None,
            pending: Vec::new(),
            offset: MAGIC.len() as u64,
            head: None,
            ahead: Vec::new(),
            ahead_at: 0,
            records: 0,
            disk: 0,
        };
        for seq in seqs {
            let path = dir.join(seg_name(seq));
            if seq < cur_seq {
                // Read to its end by an earlier run.
                std::fs::remove_file(&path)?;
                continue;
            }
            let from = if seq == cur_seq { offset.max(MAGIC.len() as u64) } else { MAGIC.len() as u64 };
            let (records, whole) = scan(&path, from)?;
            if records == 0 {
                std::fs::remove_file(&path)?;
                continue;
            }
            if s.segs.is_empty() {
                s.offset = from;
            }
            s.records += records;
            s.disk += whole;
            s.segs.push_back(Segment { seq, len: whole });
        }
        Ok(s)
    }

    /// Records waiting.
    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Bytes of the segments on disk.
    pub fn disk_bytes(&self) -> u64 {
        self.disk
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends `frame` (one whole frame) at the end; `false` (nothing written) when it
    /// would take the spool past its bound.
    pub fn push(&mut self, frame: &[u8]) -> io::Result<bool> {
        let new_seg = self.tail_full();
        let extra = frame.len() as u64 + if new_seg { MAGIC.len() as u64 } else { 0 };
        if self.disk + extra > self.bound {
            return Ok(false);
        }
        if new_seg {
            self.write_pending()?;
            let seq = self.segs.back().map_or(FIRST_SEQ, |s| s.seq + 1);
            let mut f = crate::create_fresh(&self.dir.join(seg_name(seq)))?;
            f.write_all(MAGIC)?;
            if self.segs.is_empty() {
                self.offset = MAGIC.len() as u64;
            }
            self.segs.push_back(Segment { seq, len: MAGIC.len() as u64 });
            self.tail = Some(f);
            self.disk += MAGIC.len() as u64;
        }
        self.pending.extend_from_slice(frame);
        if let Some(t) = self.segs.back_mut() {
            t.len += frame.len() as u64;
        }
        self.disk += frame.len() as u64;
        self.records += 1;
        if self.pending.len() >= READ_CHUNK {
            self.write_pending()?;
        }
        Ok(true)
    }

    /// Whether the next push begins a segment: the tail is full, or it is an earlier
    /// run's (never appended to: it may belong to another user, `--user`).
    fn tail_full(&self) -> bool {
        match (self.segs.back(), &self.tail) {
            (Some(s), Some(_)) => s.len >= self.segment_max,
            _ => true,
        }
    }

    fn write_pending(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            if let Some(t) = &mut self.tail {
                t.write_all(&self.pending)?;
            }
            self.pending.clear();
        }
        Ok(())
    }

    /// The oldest record not yet taken (a whole frame), without taking it.
    pub fn front(&mut self) -> io::Result<Option<&[u8]>> {
        if self.records == 0 {
            return Ok(None);
        }
        loop {
            if let Some(Ok(len)) = frame_len(&self.ahead[self.ahead_at..]) {
                return Ok(Some(&self.ahead[self.ahead_at..self.ahead_at + len]));
            }
            if !self.read_ahead()? {
                // Counted but not there: the files changed under us.
                self.records = 0;
                return Ok(None);
            }
        }
    }

    /// Reads more of the head segment (or moves to the next segment); `false` when there
    /// is nothing more to read.
    fn read_ahead(&mut self) -> io::Result<bool> {
        let Some(head) = self.segs.front() else { return Ok(false) };
        let (seq, len) = (head.seq, head.len);
        let consumed = self.offset + self.ahead_at as u64;
        let buffered_end = self.offset + self.ahead.len() as u64;
        if buffered_end >= len {
            if self.segs.len() == 1 {
                return Ok(false);
            }
            // The head segment is read: remove it and start the next.
            let gone = self.segs.pop_front().map_or(0, |s| s.len);
            self.disk -= gone;
            self.head = None;
            std::fs::remove_file(self.dir.join(seg_name(seq)))?;
            self.offset = MAGIC.len() as u64;
            self.ahead.clear();
            self.ahead_at = 0;
            return Ok(true);
        }
        if self.segs.len() == 1 {
            // The head is the tail: what is pending must be in the file to be read.
            self.write_pending()?;
        }
        if self.head.is_none() {
            self.head = Some(File::open(self.dir.join(seg_name(seq)))?);
        }
        // Keep the part of a frame already read, and read on after it.
        self.ahead.drain(..self.ahead_at);
        self.ahead_at = 0;
        self.offset = consumed;
        let at = self.ahead.len();
        let want = READ_CHUNK.max(at * 2).min((len - (consumed + at as u64)) as usize);
        self.ahead.resize(at + want, 0);
        let f = self.head.as_ref().expect("opened above");
        let mut got = 0;
        while got < want {
            let n = f.read_at(&mut self.ahead[at + got..], consumed + (at + got) as u64)?;
            if n == 0 {
                break;
            }
            got += n;
        }
        self.ahead.truncate(at + got);
        Ok(got > 0)
    }

    /// Takes the record [`Spool::front`] showed.
    pub fn pop(&mut self) {
        if let Some(Ok(len)) = frame_len(&self.ahead[self.ahead_at..]) {
            self.ahead_at += len;
            self.records -= 1;
            if self.records == 0 {
                // Nothing left: the files go (an empty spool costs no disk).
                let _ = self.reset();
            }
        }
    }

    /// Removes every segment (the spool is empty).
    fn reset(&mut self) -> io::Result<()> {
        self.tail = None;
        self.head = None;
        self.pending.clear();
        self.ahead.clear();
        self.ahead_at = 0;
        self.offset = MAGIC.len() as u64;
        self.disk = 0;
        for s in self.segs.drain(..) {
            std::fs::remove_file(self.dir.join(seg_name(s.seq)))?;
        }
        let _ = std::fs::remove_file(self.dir.join("cursor"));
        Ok(())
    }

    /// Writes what is pending and the cursor: the spool as it is can be opened again.
    pub fn close(self) -> io::Result<()> {
        self.close_with_head(&[])
    }

    /// As [`Spool::close`], with `head` (whole frames, oldest first) put before every
    /// record waiting: records taken but not delivered, which go first next time.
    pub fn close_with_head(mut self, head: &[Vec<u8>]) -> io::Result<()> {
        self.write_pending()?;
        if head.is_empty() {
            if self.records == 0 {
                return self.reset();
            }
            let seq = self.segs.front().map_or(0, |s| s.seq);
            return write_cursor(&self.dir, seq, self.offset + self.ahead_at as u64);
        }
        // One new segment before the others: the head records, then what is left of the
        // head segment (the cursor can only point into one segment).
        let seq = self.segs.front().map_or(FIRST_SEQ, |s| s.seq) - 1;
        let path = self.dir.join(seg_name(seq));
        let mut f = crate::create_fresh(&path)?;
        let mut w = io::BufWriter::new(&mut f);
        w.write_all(MAGIC)?;
        for fr in head {
            w.write_all(fr)?;
        }
        if let Some(first) = self.segs.pop_front() {
            let mut r = File::open(self.dir.join(seg_name(first.seq)))?;
            r.seek(SeekFrom::Start(self.offset + self.ahead_at as u64))?;
            io::copy(&mut (&mut r).take(first.len), &mut w)?;
            drop(r);
            std::fs::remove_file(self.dir.join(seg_name(first.seq)))?;
        }
        w.flush()?;
        drop(w);
        write_cursor(&self.dir, seq, MAGIC.len() as u64)
    }
}

/// Writes the cursor file (a temporary name renamed into place).
fn write_cursor(dir: &Path, seq: u64, offset: u64) -> io::Result<()> {
    let tmp = dir.join(".cursor.tmp");
    let mut f = crate::create_fresh(&tmp)?;
    writeln!(f, "{seq} {offset}")?;
    drop(f);
    std::fs::rename(tmp, dir.join("cursor"))
}

/// Counts the whole frames of segment `path` from byte `from`, and cuts a torn tail
/// off; returns (records, the file's length after the cut). A file without the magic
/// is not a segment: an error.
fn scan(path: &Path, from: u64) -> io::Result<(u64, u64)> {
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
    let len = f.metadata()?.len();
    let mut magic = [0u8; 8];
    if f.read_exact(&mut magic).is_err() || &magic != MAGIC {
        return Err(io::Error::other(format!("{} is not a tapstat spool segment", path.display())));
    }
    let mut r = io::BufReader::with_capacity(1 << 20, &mut f);
    r.seek(SeekFrom::Start(from))?;
    let mut at = from;
    let mut records = 0;
    let mut head = [0u8; 256];
    loop {
        // name_len, name, key_len: read a byte, then the name and the key's length.
        let mut b = [0u8; 1];
        if r.read_exact(&mut b).is_err() {
            break;
        }
        let n = b[0] as usize;
        if r.read_exact(&mut head[..n + 1]).is_err() {
            break;
        }
        let k = head[n] as usize;
        let mut kv = [0u8; 255 + 4];
        if r.read_exact(&mut kv[..k + 4]).is_err() {
            break;
        }
        let v = u32::from_le_bytes(kv[k..k + 4].try_into().expect("4 bytes")) as u64;
        let end = at + 2 + n as u64 + k as u64 + 4 + v;
        if v > VALUE_MAX as u64 || end > len {
            break;
        }
        r.seek_relative(v as i64)?;
        at = end;
        records += 1;
    }
    drop(r);
    if at < len {
        f.set_len(at)?;
    }
    Ok((records, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tapstat-spool-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn frame(i: u64) -> Vec<u8> {
        let mut f = Vec::new();
        let value = format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat((i % 97) as usize));
        push_frame(&mut f, "log_tcp_complete", format!("{i:016x}").as_bytes(), value.as_bytes());
        f
    }

    fn take_all(s: &mut Spool) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        while let Some(f) = s.front().unwrap() {
            v.push(f.to_vec());
            s.pop();
        }
        v
    }

    #[test]
    fn frames_parse_back() {
        let f = frame(7);
        let (p, len) = parse_frame(&f).unwrap();
        assert_eq!(len, f.len());
        assert_eq!((p.name, p.key), ("log_tcp_complete", &b"0000000000000007"[..]));
        assert!(parse_frame(&f[..f.len() - 1]).is_none());
        let two = [f.clone(), frame(8)].concat();
        assert_eq!(frames(&two).count(), 2);
    }

    /// Records come out in the order they went in, across segments and while pushes and
    /// takes interleave; an emptied spool leaves no segment.
    #[test]
    fn first_in_first_out_across_segments() {
        let d = scratch("fifo");
        let mut s = Spool::open(&d, 1 << 20).unwrap();
        assert_eq!(s.segment_max, 128 << 10);
        let mut want = Vec::new();
        let mut got = Vec::new();
        for i in 0..20_000u64 {
            assert!(s.push(&frame(i)).unwrap());
            want.push(frame(i));
            if i % 3 == 0 {
                got.push(s.front().unwrap().unwrap().to_vec());
                s.pop();
            }
            if s.disk_bytes() > 900 << 10 {
                got.extend(take_all(&mut s));
            }
        }
        got.extend(take_all(&mut s));
        assert_eq!(got.len(), want.len());
        assert!(got == want);
        assert!(s.is_empty());
        s.close().unwrap();
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from(".lock")]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Past the bound a record is refused; taking records frees room once a segment is
    /// read to its end.
    #[test]
    fn the_bound_holds() {
        let d = scratch("bound");
        let mut s = Spool::open(&d, 1 << 20).unwrap();
        let mut n = 0;
        while s.push(&frame(n)).unwrap() {
            n += 1;
        }
        assert!(s.disk_bytes() <= 1 << 20);
        let on_disk: u64 = std::fs::read_dir(&d).unwrap().flatten().map(|e| e.metadata().unwrap().len()).sum();
        assert!(on_disk <= 1 << 20, "{on_disk}");
        assert!(!s.push(&frame(n)).unwrap());
        // Take two segments' worth: the first segment goes, and there is room again.
        let mut taken = 0;
        while s.disk_bytes() + 2 * frame(n).len() as u64 > 1 << 20 {
            s.front().unwrap().unwrap();
            s.pop();
            taken += 1;
            assert!(taken <= n);
        }
        assert!(s.push(&frame(n)).unwrap());
        let rest = take_all(&mut s);
        assert_eq!(rest.len() as u64, n + 1 - taken);
        assert_eq!(rest[0], frame(taken));
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// What a run leaves is read first by the next, from where the first stopped; records
    /// put back at the head come before it; a torn tail is cut.
    #[test]
    fn a_spool_is_resumed_in_order() {
        let d = scratch("resume");
        let mut s = Spool::open(&d, 64 << 20).unwrap();
        for i in 0..1000 {
            s.push(&frame(i)).unwrap();
        }
        for _ in 0..300 {
            s.front().unwrap().unwrap();
            s.pop();
        }
        s.close().unwrap();
        // A second user is refused while one holds it.
        let mut s = Spool::open(&d, 64 << 20).unwrap();
        assert!(Spool::open(&d, 64 << 20).is_err());
        assert_eq!(s.records(), 700);
        assert_eq!(s.front().unwrap().unwrap(), &frame(300)[..]);
        for _ in 0..100 {
            s.pop();
            s.front().unwrap();
        }
        for i in 1000..1100 {
            s.push(&frame(i)).unwrap();
        }
        // 290..300 were taken but not delivered: they go back first.
        let head: Vec<Vec<u8>> = (290..300).map(frame).collect();
        s.close_with_head(&head).unwrap();
        // A torn tail: half a frame appended by a killed process.
        let last = std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "seg"))
            .max()
            .unwrap();
        let f = frame(5000);
        std::fs::OpenOptions::new().append(true).open(&last).unwrap().write_all(&f[..f.len() / 2]).unwrap();
        let mut s = Spool::open(&d, 64 << 20).unwrap();
        let got = take_all(&mut s);
        let want: Vec<Vec<u8>> = (290..300).chain(400..1100).map(frame).collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want);
        s.close().unwrap();
        assert!(Spool::open(&d, 64 << 20).unwrap().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A bound of zero spools nothing.
    #[test]
    fn a_zero_bound_refuses_everything() {
        let d = scratch("zero");
        let mut s = Spool::open(&d, 0).unwrap();
        assert!(!s.push(&frame(1)).unwrap());
        assert!(s.front().unwrap().is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
