//! A TCP direction's payload put back in order for the application layer.
//!
//! The application layer reads each direction of a TCP flow as one stream, in order.
//! While a direction has no hole, the engine hands over the bytes new to it and
//! nothing here runs. At the first segment after a hole (lost at the probe, or still to
//! come out of order), the direction gets a [`Stream`] (`L7Flow::on_tcp_segment`,
//! which the engine then gives every segment of the direction): it holds
//! the segments beyond the hole, each with its own time, until the hole is filled — then
//! the filler and what it joins go out in order — or until a bound is reached (segments
//! or bytes held, a segment cut short by the snap length) or the flow ends: then the
//! application layer is told of the hole and gets the held bytes after it, as it would
//! have without the wait. So a reordered segment costs nothing, and a lost one what it
//! always did, only later.
//!
//! Memory: one pointer in the boxed state of a parser that reads TCP (TLS, HTTP, SSH,
//! DNS), none while probing (a hole there is told at once); from the flow's first hole
//! on, at most [`MAX_HELD`] segments and [`MAX_HELD_BYTES`] bytes per direction. The
//! engine also bounds what all the flows of a worker hold together: past its budget it
//! gives up the oldest holes first (`L7Flow::held_bytes`, `L7Flow::flush_held`).

/// Segments held per direction, at most.
pub const MAX_HELD: usize = 16;
/// Payload bytes held per direction, at most: a certificate chain's worth.
pub const MAX_HELD_BYTES: usize = 64 * 1024;

/// What the application layer gets, in order.
pub enum Step<'a> {
    /// Bytes were lost before what follows.
    Gap,
    /// Bytes that continue the stream, and the time of their segment.
    Bytes(&'a [u8], u64),
}

/// The two directions of a flow, each once it has had a hole.
#[derive(Clone, Debug, Default)]
pub struct Reorder {
    pub dirs: [Option<Stream>; 2],
}

/// One direction after its first hole: what the application layer has been given, and
/// the segments waiting beyond a hole.
#[derive(Clone, Debug)]
pub struct Stream {
    /// Stream offset one past the last byte handed over (or skipped over a hole).
    next: u64,
    /// Segments beyond `next`, by offset.
    held: Vec<HeldSegment>,
    held_bytes: usize,
}

#[derive(Clone, Debug)]
struct HeldSegment {
    at: u64,
    ts_ns: u64,
    bytes: Box<[u8]>,
}

impl Stream {
    /// A direction whose bytes before `next` were handed over.
    pub fn new(next: u64) -> Stream {
        Stream { next, held: Vec::new(), held_bytes: 0 }
    }

    /// Takes the segment at stream offset `at` (`bytes`, or `None` for a segment cut
    /// short by the snap length, whose bytes are not all there) and hands `feed` what
    /// the application layer gets now, in order.
    pub fn push(&mut self, at: u64, len: u64, bytes: Option<&[u8]>, ts_ns: u64, feed: &mut impl FnMut(Step<'_>)) {
        let end = at + len;
        if end <= self.next {
            return;
        }
        if at > self.next {
            match bytes {
                Some(b) if self.held.len() < MAX_HELD && self.held_bytes + b.len() <= MAX_HELD_BYTES => {
                    let i = self.held.partition_point(|h| h.at < at);
                    if self.held.get(i).is_some_and(|h| h.at == at && h.bytes.len() >= b.len()) {
                        return;
                    }
                    self.held_bytes += b.len();
                    self.held.insert(i, HeldSegment { at, ts_ns, bytes: b.into() });
                    return;
                }
                // Over the bounds, or cut: the hole is lost; what waited goes out first.
                _ => self.flush(feed),
            }
        }
        match bytes {
            Some(b) => {
                if at > self.next {
                    feed(Step::Gap);
                }
                self.give(at, b, ts_ns, feed);
            }
            None => {
                feed(Step::Gap);
                self.next = end;
            }
        }
        self.drain(ts_ns, feed);
    }

    /// Hands over the held segments that now follow on. Their bytes could be read only
    /// once the hole before them was filled, at `now_ns`: that is their time.
    fn drain(&mut self, now_ns: u64, feed: &mut impl FnMut(Step<'_>)) {
        while self.held.first().is_some_and(|h| h.at <= self.next) {
            let h = self.held.remove(0);
            self.held_bytes -= h.bytes.len();
            self.give(h.at, &h.bytes, h.ts_ns.max(now_ns), feed);
        }
    }

    /// Gives up on the hole before the held segments: hands them over in order, each
    /// after a gap where one comes before it, at its own time (as without the wait).
    /// At the flow's end, and at a bound.
    pub fn flush(&mut self, feed: &mut impl FnMut(Step<'_>)) {
        self.held_bytes = 0;
        for h in std::mem::take(&mut self.held) {
            if h.at > self.next {
                feed(Step::Gap);
            }
            self.give(h.at, &h.bytes, h.ts_ns, feed);
        }
    }

    /// Hands over what `bytes`, at `at`, add past `next`.
    fn give(&mut self, at: u64, bytes: &[u8], ts_ns: u64, feed: &mut impl FnMut(Step<'_>)) {
        let end = at + bytes.len() as u64;
        if end > self.next {
            let from = self.next.saturating_sub(at) as usize;
            feed(Step::Bytes(&bytes[from..], ts_ns));
            self.next = end;
        }
    }

    /// Whether segments are waiting.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// Payload bytes of the segments waiting.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a stream hands over, as text: bytes as they are, a gap as `|`.
    fn run(next: u64, segs: &[(u64, &str)], end: bool) -> String {
        let mut s = Stream::new(next);
        let mut out = String::new();
        let mut feed = |st: Step<'_>| match st {
            Step::Gap => out.push('|'),
            Step::Bytes(b, _) => out.push_str(std::str::from_utf8(b).unwrap()),
        };
        for (at, text) in segs {
            s.push(*at, text.len() as u64, Some(text.as_bytes()), 0, &mut feed);
        }
        if end {
            s.flush(&mut feed);
        }
        out
    }

    #[test]
    fn reordered_segments_come_out_in_order() {
        // "hello world!" from offset 0: segments 0..5, 5..8, 8..12.
        assert_eq!(run(0, &[(0, "hello"), (5, " wo"), (8, "rld!")], false), "hello world!");
        assert_eq!(run(0, &[(0, "hello"), (8, "rld!"), (5, " wo")], false), "hello world!");
        assert_eq!(run(5, &[(8, "rld!"), (5, " wo")], false), " world!");
        // Three out of order, one retransmitted, one overlapping what was given.
        assert_eq!(run(0, &[(8, "rld!"), (5, " wo"), (8, "rld!"), (3, "lo wo"), (0, "hel")], false), "hello world!");
        // HeldSegment bytes are handed over at the time of the segment that filled the hole.
        let mut s = Stream::new(0);
        let mut times = Vec::new();
        let mut feed = |st: Step<'_>| {
            if let Step::Bytes(b, ts) = st {
                times.push((b.len(), ts));
            }
        };
        s.push(5, 3, Some(b" wo"), 1, &mut feed);
        s.push(0, 5, Some(b"hello"), 2, &mut feed);
        assert_eq!(times, vec![(5, 2), (3, 2)]);
        // A hole never filled: the bytes after it once the flow ends, after a gap.
        assert_eq!(run(0, &[(0, "hel"), (5, " wo"), (8, "rld!")], false), "hel");
        assert_eq!(run(0, &[(0, "hel"), (5, " wo"), (8, "rld!")], true), "hel| world!");
        assert_eq!(run(0, &[(0, "hel"), (8, "rld!"), (5, " w")], true), "hel| w|rld!");
    }

    /// What one push hands over: `None` for a gap, `(bytes, time)` for bytes.
    fn push(s: &mut Stream, at: u64, len: u64, bytes: Option<&[u8]>, ts: u64) -> Vec<Option<(usize, u64)>> {
        let mut out = Vec::new();
        s.push(at, len, bytes, ts, &mut |st| {
            out.push(match st {
                Step::Gap => None,
                Step::Bytes(b, ts) => Some((b.len(), ts)),
            })
        });
        out
    }

    #[test]
    fn bounds_and_cut_segments_give_up_on_the_hole() {
        // A hole at 0..10, then more segments than are held: the first beyond the
        // bound makes the stream give up on the hole and hand everything over.
        let mut s = Stream::new(0);
        let mut out = Vec::new();
        for i in 0..=MAX_HELD as u64 {
            out.extend(push(&mut s, 10 + i * 10, 10, Some(&[0u8; 10]), i));
        }
        assert!(!s.holds());
        let mut want = vec![None];
        want.extend((0..=MAX_HELD as u64).map(|i| Some((10, i))));
        assert_eq!(out, want, "a gap, then every segment with its own time");
        // The filler, late: nothing new.
        assert!(push(&mut s, 0, 10, Some(&[0u8; 10]), 99).is_empty());
        // A segment cut by the snap length beyond a hole: the hole and the segment are
        // lost, the held ones go out.
        let mut s = Stream::new(0);
        assert!(push(&mut s, 20, 10, Some(&[1u8; 10]), 1).is_empty());
        assert_eq!(push(&mut s, 40, 10, None, 2), vec![None, Some((10, 1)), None]);
        assert_eq!(push(&mut s, 50, 10, Some(&[1u8; 10]), 3), vec![Some((10, 3))]);
        // Bytes: a segment that would pass the byte bound is not held.
        let mut s = Stream::new(0);
        let big = vec![0u8; MAX_HELD_BYTES];
        assert!(push(&mut s, 1, big.len() as u64, Some(&big), 1).is_empty() && s.holds());
        assert_eq!(
            push(&mut s, 1 + big.len() as u64, 1, Some(&[0]), 2),
            vec![None, Some((MAX_HELD_BYTES, 1)), Some((1, 2))]
        );
    }
}
