//! A worker: its flow table (the [`Tracker`]) and its record output; the worker
//! threads of the file front end.

use crate::dispatch::{payload_of, Dispatch, DispatchResult, Msg, Pkt};
use crate::flow_groups::{account_grouped, FlowGroups};
use crate::migrate::Mailboxes;
use crate::record_out::{RecordOut, NLOGS};
use crate::{PacketTimer, Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};

use tapstat_analyze::{dnhunter, Packet, Tracker, TrackerStats};
use tapstat_capture::Chunk;
use tapstat_decode::Fragment;
use tapstat_flow::FlowKey;

/// A worker's state: its flows and its record formatter.
pub(crate) struct Worker {
    pub(crate) timer: PacketTimer,
    pub(crate) tracker: Tracker,
    pub(crate) rout: RecordOut,
    /// `--memcap` in bytes (0: none), checked once per batch ([`Worker::mind_memory`]).
    pub(crate) memcap: u64,
}

impl Worker {
    /// A worker of `tracker` writing to `rout`, timing 1 packet in `cfg.time_sample`
    /// and minding `cfg.memcap`.
    pub(crate) fn new(cfg: &crate::EngineConfig, tracker: Tracker, rout: RecordOut) -> Worker {
        Worker { timer: PacketTimer::new(cfg.time_sample), tracker, rout, memcap: cfg.memcap }
    }

    /// Between batches: past `--memcap`, the tracker sheds state
    /// ([`Tracker::relieve`]); once the heap is back under 7/8 of it, its timeouts are
    /// the configured ones again. One load of a shared counter when there is a cap.
    #[inline]
    pub(crate) fn mind_memory(&mut self) {
        if self.memcap == 0 {
            return;
        }
        let heap = crate::memory::heap_bytes();
        if heap > self.memcap {
            self.tracker.relieve(&mut self.rout);
        } else if self.tracker.emergency() && heap < self.memcap / 8 * 7 {
            self.tracker.calm();
        }
    }

    #[inline]
    /// Accounts packet `p`, whose captured bytes are `frame`. `whole` is called once for
    /// a packet that is an IP fragment, never for another: it gives the reassembled
    /// payload of the datagram the fragment completes, if any. `answers` are the
    /// batch's parsed DNS answers.
    pub(crate) fn packet<'a>(
        &mut self,
        p: &Pkt,
        frame: &'a [u8],
        whole: impl FnOnce() -> Option<&'a [u8]>,
        answers: &[dnhunter::Answers],
    ) {
        self.packet_at(p, frame, whole, answers, None);
    }

    /// [`Worker::packet`], in a run of packets grouped by flow whose garbage collection
    /// and periodic boundaries are held at clock `held` ([`Tracker::on_packet_held`]),
    /// or in input order (`None`).
    #[inline]
    pub(crate) fn packet_at<'a>(
        &mut self,
        p: &Pkt,
        frame: &'a [u8],
        whole: impl FnOnce() -> Option<&'a [u8]>,
        answers: &[dnhunter::Answers],
        held: Option<u64>,
    ) {
        self.rout.follow(p.now_ns);
        let d = &p.dec;
        let payload = if d.fragment == Fragment::No {
            payload_of(d, frame)
        } else {
            // The application layer sees whole datagrams: a fragment's share is not
            // one, and the fragment that completes a datagram brings all of it.
            whole().unwrap_or_default()
        };
        if let Some(i) = p.learnt {
            if let Some(a) = (i as usize).checked_sub(1).and_then(|i| answers.get(i)) {
                self.tracker.learn_answers(a, p.ts_ns);
            }
        }
        if p.learn_only {
            if p.learnt.is_none() {
                self.tracker.learn_dns(d, payload);
            }
            return;
        }
        let (key, src_is_lo) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        let pkt = Packet {
            ts_ns: p.ts_ns,
            now_ns: p.now_ns,
            wire_len: p.wire_len,
            key,
            hash: p.hash,
            src_is_lo,
            dec: d,
            payload,
            dns_learnt: p.learnt.is_some(),
            unanalysed: false,
        };
        let timed = self.timer.due().then(std::time::Instant::now);
        match held {
            None => self.tracker.on_packet(&pkt, &mut self.rout),
            Some(h) => self.tracker.on_packet_held(&pkt, h, &mut self.rout),
        }
        if let Some(t0) = timed {
            self.timer.record(t0.elapsed().as_nanos() as u64);
        }
    }

    /// Accounts packet `p` of a counted-only record (the overload controller's tail
    /// packet): its flow counts its packet and wire bytes, nothing is analysed.
    #[inline]
    pub(crate) fn counted(&mut self, p: &Pkt) {
        self.rout.follow(p.now_ns);
        let d = &p.dec;
        let (key, src_is_lo) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        let pkt = Packet {
            ts_ns: p.ts_ns,
            now_ns: p.now_ns,
            wire_len: p.wire_len,
            key,
            hash: p.hash,
            src_is_lo,
            dec: d,
            payload: &[],
            dns_learnt: true,
            unanalysed: true,
        };
        self.tracker.on_packet(&pkt, &mut self.rout);
    }

    /// Accounts the tail packets `t` of the flow of `p`, a tails record (the overload
    /// controller held them): per direction, its packets with their wire bytes spread
    /// over them (the sum exact) at the direction's latest time; nothing is analysed.
    pub(crate) fn tails(&mut self, p: &Pkt, t: &crate::live::buffer::Tails) {
        self.rout.follow(p.now_ns);
        let d = &p.dec;
        let (key, src_is_lo) = FlowKey::new(d.ip_version, d.proto, d.src, d.sport, d.dst, d.dport);
        for ((n, bytes, last), lo) in [(t.same, src_is_lo), (t.rev, !src_is_lo)] {
            let pkt = Packet {
                ts_ns: last,
                now_ns: p.now_ns,
                wire_len: bytes,
                key,
                hash: p.hash,
                src_is_lo: lo,
                dec: d,
                payload: &[],
                dns_learnt: true,
                unanalysed: true,
            };
            self.tracker.on_tails(&pkt, n, &mut self.rout);
        }
    }

    pub(crate) fn finish(mut self, final_ns: u64, interrupted: bool) -> WorkerResult {
        if final_ns > 0 {
            self.rout.follow(final_ns);
        }
        self.tracker.finish(final_ns, interrupted, &mut self.rout);
        self.rout.flush_all();
        self.rout.send_late(None);
        WorkerResult {
            stats: self.tracker.stats.clone(),
            records: self.rout.records,
            timer: self.timer,
            moved_in: 0,
            histo: self.tracker.take_histo(),
        }
    }
}

pub(crate) struct WorkerResult {
    pub(crate) stats: TrackerStats,
    pub(crate) records: [u64; NLOGS],
    pub(crate) timer: PacketTimer,
    /// Flows this worker received from others (moved bins).
    pub(crate) moved_in: u64,
    /// The worker's link histograms (`--histo-interval`).
    pub(crate) histo: Option<Box<tapstat_analyze::histo::Histo>>,
}

/// The thread of a single worker that dispatches its own packets.
pub(crate) fn run_inline(
    mut dispatch: Dispatch,
    mut work: Worker,
    stop: &AtomicBool,
    mut next_chunk: impl FnMut() -> Option<Chunk>,
) -> (DispatchResult, Option<WorkerResult>) {
    let mut p = Pkt::default();
    while let Some(chunk) = next_chunk() {
        for f in &chunk.frames {
            let frame = chunk.data(f);
            if dispatch.frame(f, frame, &mut p).is_some() {
                work.packet(&p, frame, || dispatch.dec.reassembled(), &[]);
            }
        }
        work.mind_memory();
    }
    let (r, end) = dispatch.finish();
    (r, Some(work.finish(end, stop.load(Ordering::Relaxed))))
}

/// A worker thread fed by the dispatchers: chunk `seq`'s batch comes from dispatcher
/// `seq % D`, so taking them in turn keeps the input's order. With `groups`
/// (`--flow-batches on`), each batch is accounted grouped by flow.
pub(crate) fn run_worker(
    mut work: Worker,
    mut groups: Option<FlowGroups>,
    mut rx: Vec<Receiver<Msg>>,
    mut recycle: Vec<Sender<Vec<Pkt>>>,
    mut mail: Mailboxes,
) -> WorkerResult {
    let (mut final_ns, mut interrupted) = (0, false);
    for d in (0..rx.len()).cycle() {
        match rx[d].recv() {
            Some(Msg::Batch(b)) => {
                if let Some(t) = &b.moves {
                    mail.exchange(&mut work, t);
                }
                if let Some(g) = groups.as_mut() {
                    account_grouped(&mut work, &b, g);
                } else {
                    let mut wholes = b.wholes.iter();
                    let answers = b.answers.as_deref().map_or(&[][..], Vec::as_slice);
                    for p in &b.pkts {
                        let frame = tapstat_capture::bytes_at(&*b.backing, p.offset, p.caplen);
                        work.packet(p, frame, || wholes.next().and_then(Option::as_deref), answers);
                    }
                }
                work.mind_memory();
                final_ns = b.end_now;
                // A worker with no packets in a chunk still follows the input's clock
                // into the next output interval, so the writer can close the last one.
                work.rout.follow(final_ns);
                let mut v = b.pkts;
                if v.capacity() > 0 {
                    v.clear();
                    let _ = recycle[d].try_send(v);
                }
            }
            // The input ended (or the run stopped) before the next chunk.
            Some(Msg::End(t, i)) => {
                (final_ns, interrupted) = (final_ns.max(t), i);
                break;
            }
            None => break,
        }
    }
    let mut r = work.finish(final_ns, interrupted);
    r.moved_in = mail.moved_in;
    r
}
