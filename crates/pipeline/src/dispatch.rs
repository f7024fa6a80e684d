//! The dispatcher: decode a frame once, key it, hash it, and route it to the worker
//! that owns its flow; on the file path, dispatcher threads batch packets per worker.

use crate::reader::Clocked;
use crate::schedule::{Scheduler, Table, BINS};
use crate::worker::WorkerResult;
use crate::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tapstat_analyze::{dnhunter, InputClock};
use tapstat_capture::{Backing, FrameMeta};
use tapstat_decode::{Anomalies, DecodeConfig, Decoded, Decoder, Fragment, SharedFrags, L4};
use tapstat_flow::{FlowHasher, FlowKey};

/// One packet on its way to a worker: decoded, keyed and hashed once, by the
/// dispatcher.
#[derive(Clone, Copy, Default)]
pub(crate) struct Pkt {
    pub(crate) ts_ns: u64,
    /// The input's clock: the latest packet time so far (see `Packet::now_ns`).
    pub(crate) now_ns: u64,
    pub(crate) wire_len: u32,
    /// Where the frame's bytes are in the batch's backing buffer.
    pub(crate) caplen: u32,
    pub(crate) offset: u64,
    /// The flow hash; the key itself is rebuilt by the worker from `dec` (a few
    /// comparisons), which is cheaper than moving 48 more bytes per packet between
    /// cores.
    pub(crate) hash: u64,
    /// A copy of a DNS response for a worker other than its own, to learn its answers
    /// from (DN-Hunter) without accounting it: see `tapstat_analyze::dnhunter`.
    pub(crate) learn_only: bool,
    /// DNS answers the dispatcher parsed for every worker: `None` when it did not look
    /// (the worker parses a DNS response itself), `Some(0)` when the response teaches
    /// nothing, `Some(i)` for the batch's `answers[i - 1]`.
    pub(crate) learnt: Option<u32>,
    pub(crate) dec: Decoded,
}

/// Packets for one worker that share one backing buffer (the bytes stay where the
/// source put them: for a file, in the block read).
pub(crate) struct Batch {
    pub(crate) backing: Arc<dyn Backing>,
    pub(crate) pkts: Vec<Pkt>,
    /// For each packet that is an IP fragment (`dec.fragment` is not `No`), in order:
    /// the whole payload of the datagram it completes, if the decoder reassembled one
    /// ([`Decoder::reassembled`]). Those bytes are in no frame, so they travel beside
    /// the packets. Empty, and unallocated, in almost every batch.
    pub(crate) wholes: Vec<Option<Vec<u8>>>,
    /// The DNS answers the batch's packets point to (`Pkt::learnt`), parsed once for
    /// every worker: one list per chunk, shared by the chunk's batches.
    pub(crate) answers: Option<Arc<Vec<dnhunter::Answers>>>,
    /// The input's clock after the last frame of the batch's chunk.
    pub(crate) end_now: u64,
    /// At the first chunk of a scheduling epoch whose table moved bins: the table.
    /// Before the chunk's packets, each worker hands the flows of the bins it gives
    /// away to their new workers and takes those it receives.
    pub(crate) moves: Option<Arc<Table>>,
}

pub(crate) enum Msg {
    Batch(Batch),
    /// The input ended: the input's clock at its end, and whether the run was stopped
    /// before the end of the input.
    End(u64, bool),
}

#[derive(Default)]
pub(crate) struct DispatchResult {
    pub(crate) anomalies: Anomalies,
    pub(crate) non_ip: u64,
    pub(crate) frames: u64,
    pub(crate) wire_bytes: u64,
    pub(crate) first_ns: u64,
    pub(crate) last_ns: u64,
}

impl DispatchResult {
    /// Counts frame `f` (none of this depends on the order of frames, so dispatchers
    /// working on different chunks count their own and the totals are merged).
    #[inline]
    pub(crate) fn count(&mut self, f: &FrameMeta) {
        self.frames += 1;
        self.wire_bytes += f.orig_len as u64;
        // The earliest, not the first in file order: captures merged from several
        // interfaces, or written by a reordering tool, start with a later packet.
        if self.frames == 1 || f.ts_ns < self.first_ns {
            self.first_ns = f.ts_ns;
        }
        self.last_ns = self.last_ns.max(f.ts_ns);
    }

    pub(crate) fn merge(&mut self, o: &DispatchResult) {
        self.anomalies.merge(&o.anomalies);
        self.non_ip += o.non_ip;
        if o.frames > 0 && (self.frames == 0 || o.first_ns < self.first_ns) {
            self.first_ns = o.first_ns;
        }
        self.frames += o.frames;
        self.wire_bytes += o.wire_bytes;
        self.last_ns = self.last_ns.max(o.last_ns);
    }
}

/// The dispatcher's work on a frame: decode it once, key it, hash it, and pick the
/// worker that owns its flow.
pub(crate) struct Dispatch {
    pub(crate) clock: InputClock,
    pub(crate) dec: Decoder,
    pub(crate) hasher: FlowHasher,
    pub(crate) workers: usize,
    /// Hand DNS responses to every worker (the application layer is on and there are
    /// several workers).
    pub(crate) dns_broadcast: bool,
    pub(crate) r: DispatchResult,
    /// The scheduler's table for the current chunk (`balance`, `bundle`), and the
    /// chunk's packets per bin.
    pub(crate) table: Option<Arc<Table>>,
    pub(crate) per_bin: Vec<u32>,
}

impl Dispatch {
    pub(crate) fn new(cfg: DecodeConfig, hasher: FlowHasher, workers: usize) -> Self {
        Dispatch::with_decoder(Decoder::new(cfg), hasher, workers)
    }

    pub(crate) fn with_decoder(dec: Decoder, hasher: FlowHasher, workers: usize) -> Self {
        Dispatch {
            clock: InputClock::default(),
            dec,
            hasher,
            workers,
            dns_broadcast: false,
            r: DispatchResult::default(),
            table: None,
            per_bin: Vec::new(),
        }
    }

    /// The worker of frame `f`, whose packet is written into `pkt` (the caller's, used
    /// again for the next frame: nothing is moved), or `None` for a frame without IP;
    /// the input's clock is this dispatcher's, which sees every frame in order.
    #[inline]
    pub(crate) fn frame(&mut self, f: &FrameMeta, bytes: &[u8], pkt: &mut Pkt) -> Option<usize> {
        self.r.count(f);
        let now_ns = self.clock.tick(f.ts_ns);
        self.fill(f, bytes, now_ns, pkt)
    }

    /// [`Dispatch::frame`] for a dispatcher thread, with the input's clock at this
    /// frame given (by the reader, when several dispatchers share the input): the
    /// packet is made in `pkt` (its slot in the chunk's packets: nothing is moved);
    /// returns its worker. Counts nothing but frames without IP.
    #[inline]
    pub(crate) fn frame_at(&mut self, f: &FrameMeta, bytes: &[u8], now_ns: u64, pkt: &mut Pkt) -> Option<usize> {
        self.fill(f, bytes, now_ns, pkt)
    }

    /// Decodes frame `f` once into `pkt` (in place: a `Decoded` is 160 bytes, and
    /// each move of it costs ~30 instructions), keys and hashes its flow, and picks
    /// the worker that owns it; `None` for a frame without IP.
    #[inline(always)]
    fn fill(&mut self, f: &FrameMeta, bytes: &[u8], now_ns: u64, pkt: &mut Pkt) -> Option<usize> {
        pkt.ts_ns = f.ts_ns;
        pkt.now_ns = now_ns;
        pkt.wire_len = f.orig_len;
        pkt.caplen = f.caplen;
        pkt.offset = f.offset;
        pkt.learn_only = false;
        pkt.learnt = None;
        self.dec.decode_into(f.link, bytes, f.ts_ns, &mut pkt.dec);
        let d = &pkt.dec;
        if d.l4 == L4::None {
            self.r.non_ip += 1;
            return None;
        }
        let (key, _) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        pkt.hash = self.hasher.hash(&key);
        Some(match &self.table {
            None => FlowHasher::worker_of(pkt.hash, self.workers),
            Some(t) => {
                let b = FlowHasher::bin_of(pkt.hash, BINS);
                self.per_bin[b] += 1;
                t.bins[b] as usize
            }
        })
    }

    /// The counters, and the input's clock at the end.
    pub(crate) fn finish(mut self) -> (DispatchResult, u64) {
        self.r.anomalies = self.dec.anomalies.clone();
        (self.r, self.clock.now())
    }
}

/// The captured L4 payload of a decoded frame: a snaplen may have cut it short of
/// `payload_len`.
#[inline]
pub(crate) fn payload_of<'a>(d: &Decoded, frame: &'a [u8]) -> &'a [u8] {
    let payload = frame.get(d.payload_offset as usize..).unwrap_or(&[]);
    &payload[..payload.len().min(d.payload_len as usize)]
}

/// A dispatcher thread: chunks in (every D-th of the input), one batch per chunk out
/// to every worker.
pub(crate) fn run_dispatcher(
    mut dispatch: Dispatch,
    mut chunks: Receiver<Clocked>,
    mut worker_tx: Vec<Sender<Msg>>,
    mut recycled: Vec<Receiver<Vec<Pkt>>>,
    ends: Ends<'_>,
) -> (DispatchResult, Option<WorkerResult>) {
    let Ends { frags, sched, stop } = ends;
    let n = worker_tx.len();
    let mut batches: Vec<Vec<Pkt>> = (0..n).map(|_| Vec::new()).collect();
    let mut wholes: Vec<Vec<Option<Vec<u8>>>> = (0..n).map(|_| Vec::new()).collect();
    let mut answers: Vec<dnhunter::Answers> = Vec::new();
    let mut last_now = 0;
    // The chunk's packets, decoded in place in input order, and each one's worker;
    // then copied once into batches of the size counted. Batches filled as packets
    // came grew in bursts, and each growth copied every packet already in them again
    // (at 16 workers on mix-large, 77 instructions a packet of the whole run).
    let mut chunk_pkts: Vec<Pkt> = Vec::new();
    let mut dest: Vec<u16> = Vec::new();
    let mut chunk_wholes: Vec<Option<Vec<u8>>> = Vec::new();
    let mut counts = vec![0usize; n];
    'chunks: while let Some(c) = chunks.recv_unless(stop) {
        let chunk = &c.chunk;
        dispatch.dec.begin_turn(c.seq);
        let mut moves = None;
        if let Some(sc) = sched {
            let t = sc.table_for(c.seq);
            if sc.starts_epoch(c.seq) && !t.moves.is_empty() {
                moves = Some(t.clone());
            }
            dispatch.table = Some(t);
            dispatch.per_bin.resize(BINS, 0);
        }
        if chunk_pkts.len() < chunk.frames.len() {
            chunk_pkts.resize(chunk.frames.len(), Pkt::default());
            dest.resize(chunk.frames.len(), 0);
        }
        let mut k = 0;
        for (f, &now) in chunk.frames.iter().zip(&c.now) {
            dispatch.r.count(f);
            let frame = chunk.data(f);
            let p = &mut chunk_pkts[k];
            let Some(w) = dispatch.frame_at(f, frame, now, p) else { continue };
            let frag = p.dec.fragment != Fragment::No;
            let whole = if frag { dispatch.dec.take_reassembled() } else { None };
            if dispatch.dns_broadcast && dnhunter::is_dns_response(&p.dec) {
                // Parsed once here for every worker, not once per worker.
                let payload = if frag { whole.as_deref().unwrap_or_default() } else { payload_of(&p.dec, frame) };
                let i = dnhunter::Answers::parse(p.dec.dst, payload).map_or(0, |a| {
                    answers.push(a);
                    answers.len() as u32
                });
                p.learnt = Some(i);
                counts.iter_mut().for_each(|c| *c += 1);
            } else {
                counts[w] += 1;
            }
            dest[k] = w as u16;
            if frag {
                chunk_wholes.push(whole);
            }
            k += 1;
        }
        for (w, b) in batches.iter_mut().enumerate() {
            if counts[w] > 0 {
                // A vector back from its worker if it is large enough, else a new one
                // (`reserve` on a small one would reallocate, copying its capacity).
                *b = match recycled[w].try_recv() {
                    Some(v) if v.capacity() >= counts[w] => v,
                    _ => Vec::with_capacity(counts[w].next_power_of_two()),
                };
            }
            counts[w] = 0;
        }
        let mut whole_of = chunk_wholes.drain(..);
        for (p, &w) in chunk_pkts[..k].iter().zip(&dest[..k]) {
            let w = w as usize;
            let frag = p.dec.fragment != Fragment::No;
            let whole = if frag { whole_of.next().flatten() } else { None };
            if p.learnt.is_some() {
                for (v, b) in batches.iter_mut().enumerate() {
                    if v != w {
                        b.push(Pkt { learn_only: true, ..*p });
                        if frag {
                            wholes[v].push(whole.clone());
                        }
                    }
                }
            }
            // Copied straight into the batch (`push(*p)` copied it twice, through a
            // temporary).
            batches[w].extend_from_slice(std::slice::from_ref(p));
            if frag {
                wholes[w].push(whole);
            }
        }
        drop(whole_of);
        dispatch.dec.end_turn();
        if let Some(sc) = sched {
            sc.count(c.seq, &dispatch.per_bin);
            dispatch.per_bin.fill(0);
        }
        last_now = c.end_now;
        // Every worker gets a batch for every chunk, empty or not: it takes the
        // chunks in input order, and an empty batch says this one had nothing for it.
        let shared = (!answers.is_empty()).then(|| Arc::new(std::mem::take(&mut answers)));
        for (w, b) in batches.iter_mut().enumerate() {
            let pkts = std::mem::take(b);
            let batch = Batch {
                backing: chunk.backing.clone(),
                pkts,
                wholes: std::mem::take(&mut wholes[w]),
                answers: shared.clone(),
                end_now: c.end_now,
                moves: moves.clone(),
            };
            if worker_tx[w].send(Msg::Batch(batch)).is_err() {
                break 'chunks;
            }
        }
    }
    let stopped = stop.load(Ordering::Relaxed);
    if stopped {
        // Chunks left in the rings will never be decoded: the decoders waiting for
        // their turns, and the scheduler waiting for their counts, must not wait.
        frags.abandon();
        if let Some(sc) = sched {
            sc.abandon();
        }
    }
    for tx in &mut worker_tx {
        let _ = tx.send(Msg::End(last_now, stopped));
    }
    (dispatch.finish().0, None)
}

/// What ends or releases a dispatcher's waits: the shared fragment table's turns, the
/// scheduler's epochs, the stop flag.
pub(crate) struct Ends<'a> {
    pub(crate) frags: &'a SharedFrags,
    pub(crate) sched: Option<&'a Scheduler>,
    pub(crate) stop: &'a AtomicBool,
}
