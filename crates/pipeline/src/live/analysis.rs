//! A live worker's analysis thread: drains its buffer into its tracker, shares the
//! DNS answers it learns with the other workers, and reports its link histograms.

use crate::dispatch::{Dispatch, DispatchResult};
use crate::live::buffer::{Consumer, Rec};
use crate::live::telemetry::{Gauges, ProcTimes};
use crate::live::*;
use crate::worker::{Worker, WorkerResult};
use crate::writer::HistoReport;
use crate::PacketTimer;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use tapstat_analyze::dnhunter::{is_dns_response, DnsAnswer};
use tapstat_capture::live::frame_flow;
use tapstat_capture::LinkType;

/// An analysis thread: drains its buffer into its tracker.
pub(crate) struct Analysis {
    pub(crate) dispatch: Dispatch,
    pub(crate) work: Worker,
    pub(crate) cons: Consumer,
    pub(crate) link: LinkType,
    pub(crate) gauges: Arc<Gauges>,
    pub(crate) poll: bool,
    pub(crate) global_clock: Arc<AtomicU64>,
    pub(crate) final_clock: Arc<AtomicU64>,
    pub(crate) end_barrier: Arc<Barrier>,
    /// Set when the run was stopped (a signal), as opposed to a source that ended.
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) flush: Duration,
    /// Rings to every other worker for the DNS answers this one learns, and from them.
    pub(crate) dns_out: Vec<rtrb::Producer<DnsAnswer>>,
    pub(crate) dns_in: Vec<rtrb::Consumer<DnsAnswer>>,
    pub(crate) dns: DnsShare,
    /// Where the flows this worker shunts go: its acquisition thread (`--shunt`).
    pub(crate) shunt_out: Option<rtrb::Producer<u64>>,
    /// Where the intervals of the link histograms this worker has closed go
    /// (`--histo-interval`).
    pub(crate) histo: Option<HistoFeed>,
    /// The earliest time a frame the worker's source has yet to hand out can carry,
    /// where the source knows it (`LiveSource::pending_from_ns`; else `u64::MAX`),
    /// stored by the acquisition thread after it published the frames before it. A
    /// worker whose queue is empty moves its clock there (a quiet link); a worker
    /// following the others' clock goes no further (a replay: whatever the speed-up
    /// and however late its acquisition thread runs).
    pub(crate) pending: Arc<AtomicU64>,
}

/// A worker's link histograms on their way to the writer, an interval at a time.
pub(crate) struct HistoFeed {
    pub(crate) tx: crossbeam_channel::Sender<HistoReport>,
    pub(crate) worker: usize,
    pub(crate) interval_ns: u64,
    /// The worker reports again once its clock reaches this (the end of the interval
    /// of its last report).
    pub(crate) next_ns: u64,
    /// A worker without packets follows the others' clock this far behind (one
    /// interval, or the `--flush` period if longer): the packets it has yet to receive
    /// are not older (its queue is empty; workers' clocks differ by what their queues
    /// and their sources' rings hold).
    pub(crate) slack_ns: u64,
}

/// How often an idle worker moves its clock to its source's bound.
const QUIET_STEP: Duration = Duration::from_millis(1);

/// DNS answers handed to other workers, and those dropped at a full ring.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DnsShare {
    pub(crate) shared: u64,
    pub(crate) dropped: u64,
    /// Shunt requests lost at a full ring to acquisition.
    pub(crate) shunts_lost: u64,
}

impl Analysis {
    pub(crate) fn run(mut self) -> (DispatchResult, WorkerResult, f64, DnsShare, PacketTimer) {
        let mut times = ProcTimes::new();
        let mut idle = 0u32;
        let mut flushed = Instant::now();
        let mut pkt = crate::dispatch::Pkt::default();
        let mut quiet = Instant::now();
        loop {
            // Records wait in 256 KiB blocks; on a quiet link a block would take
            // minutes to fill. One clock read per burst of up to 256 frames.
            if flushed.elapsed() >= self.flush {
                self.work.rout.flush_all();
                flushed = Instant::now();
            }
            let closed = self.cons.closed();
            // Before the read: if it finds nothing, every frame before this was read.
            let pending = self.pending.load(Ordering::Acquire);
            // The answers the other workers learnt so far, before this worker's next
            // packets: a client's connection follows the answer by at least the time
            // the answer takes to reach it and the SYN to come back, while the two
            // wait in different workers' queues.
            for rx in &mut self.dns_in {
                while let Ok(a) = rx.pop() {
                    self.work.tracker.learn_dns_answer(a);
                }
            }
            let (dispatch, work) = (&mut self.dispatch, &mut self.work);
            let (dns_out, dns) = (&mut self.dns_out, &mut self.dns);
            let (shunt_out, link) = (&mut self.shunt_out, self.link);
            let p = &mut pkt;
            let k = self.cons.read(256, self.link, |f, bytes, rec| {
                let t0 = Instant::now();
                if dispatch.frame(f, bytes, p).is_some() {
                    let p = &*p;
                    // (`Worker` follows the packet's clock into its output interval.)
                    if let Rec::Tails(t) = rec {
                        // Tail packets the controller held: their flow counts them,
                        // nothing more; so does the run.
                        work.tails(p, &t);
                        dispatch.r.frames += t.packets().saturating_sub(1);
                        dispatch.r.wire_bytes += t.bytes().saturating_sub(f.orig_len as u64);
                    } else if rec.counted() {
                        // A tail packet the controller did not let through whole: its
                        // flow counts it, nothing more.
                        work.counted(p);
                    } else {
                        work.packet(p, bytes, || dispatch.dec.reassembled(), &[]);
                        if !dns_out.is_empty() && is_dns_response(&p.dec) {
                            share(work.tracker.take_dns_answers(), dns_out, dns);
                        }
                        if let Some(tx) = shunt_out.as_mut() {
                            if work.tracker.take_shunt() {
                                // Acquisition knows the flow by its frame's hash.
                                if let Some(ff) = frame_flow(link, bytes) {
                                    dns.shunts_lost += tx.push(ff.hash).is_err() as u64;
                                }
                            }
                        }
                    }
                }
                times.add(t0.elapsed().as_nanos() as u64);
            });
            if k > 0 {
                idle = 0;
                self.work.mind_memory();
                times.publish(&self.gauges);
                self.publish_gauges();
                self.global_clock.fetch_max(self.dispatch.clock.now(), Ordering::Relaxed);
                // Past the end of an interval of the link histograms: hand over the
                // intervals that ended (one comparison a burst, the work once an
                // interval).
                if self.histo.as_ref().is_some_and(|h| self.work.tracker.now_ns() >= h.next_ns) {
                    self.report_histo(0);
                }
                continue;
            }
            if closed {
                break;
            }
            // A quiet link: every frame before `pending` has been accounted, so the
            // clock moves there and the flows that ended by then are written (within
            // `--flush`), as the next packet would have them written. Once a
            // millisecond at most, and only after a first packet: before it there is
            // no flow to end, nor an output interval to enter (whose directory would
            // be made before `--user` takes effect).
            let now = self.work.tracker.now_ns();
            if pending != u64::MAX && now > 0 && pending > now && quiet.elapsed() >= QUIET_STEP {
                quiet = Instant::now();
                self.work.rout.follow(pending);
                self.work.tracker.idle(pending, &mut self.work.rout);
                self.publish_gauges();
            }
            // An idle worker still follows the others into a new output interval, so
            // the writer can close the old one.
            let g = self.global_clock.load(Ordering::Relaxed);
            if g > 0 {
                self.work.rout.follow(g);
                // Nor does it hold back the link histograms: it follows the others'
                // clock, an interval behind, and ends the flows expired by then.
                if let Some(h) = &self.histo {
                    let at = g.saturating_sub(h.slack_ns).min(pending);
                    if at >= h.next_ns {
                        self.report_histo(at);
                    }
                }
            }
            idle += 1;
            if self.poll && idle < 1000 {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        let (r, end) = self.dispatch.finish();
        // Every worker expires its flows against the latest clock of all of them.
        self.final_clock.fetch_max(end, Ordering::SeqCst);
        self.end_barrier.wait();
        let mut wr = self.work.finish(self.final_clock.load(Ordering::SeqCst), self.stop.load(Ordering::SeqCst));
        if let (Some(h), Some(rest)) = (&self.histo, wr.histo.take()) {
            // The writer only goes away on an I/O error, which it reports itself.
            let _ = h.tx.send(HistoReport { worker: h.worker, mark_ns: u64::MAX, closed: *rest });
        }
        (r, wr, thread_cpu_s(), self.dns, self.cons.delays().clone())
    }

    /// The table's figures and the records made per log, for stats.jsonl and the
    /// metrics endpoint.
    fn publish_gauges(&self) {
        let g = &self.gauges;
        g.flows.store(self.work.tracker.live_flows() as u64, Ordering::Relaxed);
        let st = &self.work.tracker.stats;
        g.evictions.store(st.evictions, Ordering::Relaxed);
        g.held_bytes.store(st.held_bytes, Ordering::Relaxed);
        g.memcap_evictions.store(st.memcap_evictions, Ordering::Relaxed);
        for (a, n) in g.records.iter().zip(&self.work.rout.records) {
            a.store(*n, Ordering::Relaxed);
        }
    }

    /// Hands the writer the intervals of the link histograms that ended by the
    /// worker's clock, moved to `at` first if later (a worker without packets).
    #[cold]
    pub(crate) fn report_histo(&mut self, at: u64) {
        let Some(h) = self.histo.as_mut() else { return };
        let Some(closed) = self.work.tracker.take_histo_before_now(at, &mut self.work.rout) else { return };
        let mark_ns = self.work.tracker.now_ns();
        h.next_ns = (mark_ns / h.interval_ns).saturating_add(1).saturating_mul(h.interval_ns);
        // The writer only goes away on an I/O error, which it reports itself.
        let _ = h.tx.send(HistoReport { worker: h.worker, mark_ns, closed });
    }
}

/// Hands `answers` to every other worker; a full ring drops the answer for that worker
/// (counted) rather than make the packet path wait.
pub(crate) fn share(answers: impl Iterator<Item = DnsAnswer>, out: &mut [rtrb::Producer<DnsAnswer>], n: &mut DnsShare) {
    for a in answers {
        for tx in out.iter_mut() {
            match tx.push(a.clone()) {
                Ok(()) => n.shared += 1,
                Err(_) => n.dropped += 1,
            }
        }
    }
}
