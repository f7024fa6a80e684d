//! The file front end: a reader thread, dispatcher threads and workers joined by
//! bounded rings ([`run`]).

use crate::backend::{Backend, Started};
use crate::dispatch::{run_dispatcher, Dispatch, DispatchResult, Ends, Msg, Pkt};
use crate::flow_groups::FlowGroups;
use crate::migrate::{Mail, Mailboxes};
use crate::reader::{Clocked, Reader, ReaderResult};
use crate::schedule::Scheduler;
use crate::worker::{run_inline, run_worker, Worker};
use crate::{
    random_seed, ring, EngineConfig, EngineError, Progress, Receiver, Schedule, SchedulingSummary, Sender, Summary,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tapstat_analyze::{InputClock, Tracker, TrackerConfig};
use tapstat_capture::{CaptureStats, Chunk, PacketSource};
use tapstat_decode::Decoder;
use tapstat_flow::{FlowHasher, GcConfig};

/// Runs the engine over `source` until it ends or `stop` is set; every live flow is
/// written before returning.
pub fn run(
    source: Box<dyn PacketSource>,
    cfg: &EngineConfig,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
) -> Result<Summary, EngineError> {
    let started = Started::now();
    let n = cfg.workers.max(1);
    let seed = cfg.hash_seed.unwrap_or_else(random_seed);
    let hasher = FlowHasher::with_kind(cfg.flow_hash, seed);

    // The back end first: a collector that refuses the connection or an unwritable
    // directory is an error before any work.
    let mut backend = Backend::start(cfg, n, &stop, None, |_| {})?;

    let p0 = source.progress();
    progress.bytes_total.store(p0.bytes_total.unwrap_or(0), Ordering::Relaxed);
    let mut reader =
        Reader { source, stop: stop.clone(), progress: progress.clone(), chunk_frames: cfg.chunk_frames, err: None };
    let (reader_done_tx, reader_done_rx) = crossbeam_channel::bounded::<ReaderResult>(1);
    let mut dispatch = Dispatch::new(cfg.decode, hasher.clone(), n);
    dispatch.dns_broadcast = n > 1 && cfg.tracker.l7.is_some();
    // Each of n workers holds about 1/n of the flows: its index starts that much
    // smaller (it grows as any other), instead of n times one worker's start-up.
    // The collector's M steps per ΔT are the run's, not each worker's: each of n
    // workers takes M/n steps per ΔT, each over n/M of its table (about 1/n of the
    // flows), so the run scans as many slots, in as many steps, as one worker would.
    // With M steps per worker, every worker would step at every packet of its own
    // once its share of the packets is sparser than ΔT/M (mix-large at 16 workers:
    // +87 instructions a packet of the whole run, in `Tracker::collect`). Records do
    // not depend on when the collector passes.
    let gc = GcConfig { steps: (cfg.tracker.gc.steps / n as u32).max(1), ..cfg.tracker.gc };
    let tracker_cfg = TrackerConfig { start_flows: (cfg.tracker.start_flows / n).max(4096), gc, ..cfg.tracker };
    // Records go to the interval they were due in (`--rotate`; see `Rotation`).
    let mut new_worker = |w: usize| Worker::new(cfg, Tracker::new(tracker_cfg), backend.record_out(cfg, w).by_due());
    let (dispatchers, workers) = if n == 1 && !reader.source.may_block() {
        // One worker reading regular files: it reads, decodes and analyzes in
        // one pass, so each packet's bytes are brought into the cache once. (A
        // separate reader thread would take that miss, and the worker a second one.)
        let work = new_worker(0);
        let h = std::thread::Builder::new()
            .name("tapstat-w0".into())
            .spawn(move || {
                let stop = reader.stop.clone();
                let r = run_inline(dispatch, work, &stop, || reader.next());
                let _ = reader_done_tx.send(reader.finish());
                r
            })
            .expect("spawning a thread succeeds");
        (vec![h], Vec::new())
    } else if n == 1 {
        // One worker on a stream: it decodes its packets itself. A dispatcher thread
        // would only copy every decoded packet from one core to another. The reader
        // thread owns the source and watches the stop flag between chunks; a read can
        // block (a quiet pipe on stdin), so the worker watches the flag too, and on
        // Ctrl-C the engine finishes without waiting for the reader.
        let (mut chunk_tx, mut chunk_rx) = ring::<Chunk>(cfg.ring_slots);
        std::thread::Builder::new()
            .name("tapstat-reader".into())
            .spawn(move || {
                while let Some(chunk) = reader.next() {
                    if chunk_tx.send(chunk).is_err() {
                        break;
                    }
                }
                drop(chunk_tx);
                let _ = reader_done_tx.send(reader.finish());
            })
            .expect("spawning a thread succeeds");
        let work = new_worker(0);
        let stop = stop.clone();
        let h = std::thread::Builder::new()
            .name("tapstat-w0".into())
            .spawn(move || run_inline(dispatch, work, &stop, || chunk_rx.recv_unless(&stop)))
            .expect("spawning a thread succeeds");
        (vec![h], Vec::new())
    } else {
        // Several workers: the reader hands chunk `seq` to dispatcher `seq % D` with
        // the input's clock; the D dispatchers decode and hash in parallel, each
        // sending every worker one batch per chunk (empty or not); each worker takes
        // its batches chunk by chunk, in input order, from the dispatchers in turn.
        // So a worker sees its packets in input order with the clock of the whole
        // input, as with one dispatcher, and the fragment table, shared by the
        // decoders in turns, sees the fragments in input order.
        let nd = cfg.dispatchers_for(n);
        let (decoders, frags) = Decoder::shared(cfg.decode, nd);
        let sched = (cfg.schedule != Schedule::Hash).then(|| Scheduler::new(cfg.schedule, n, cfg.epoch_chunks));
        let mut disp_tx = Vec::with_capacity(nd);
        let mut disp_rx = Vec::with_capacity(nd);
        for _ in 0..nd {
            let (tx, rx) = ring::<Clocked>(cfg.ring_slots.div_ceil(nd).max(4));
            disp_tx.push(tx);
            disp_rx.push(rx);
        }
        std::thread::Builder::new()
            .name("tapstat-reader".into())
            .spawn(move || {
                let mut clock = InputClock::default();
                let mut seq = 0u64;
                while let Some(chunk) = reader.next() {
                    let now: Vec<u64> = chunk.frames.iter().map(|f| clock.tick(f.ts_ns)).collect();
                    let c = Clocked { seq, chunk, now, end_now: clock.now() };
                    if disp_tx[(seq % nd as u64) as usize].send(c).is_err() {
                        break;
                    }
                    seq += 1;
                }
                drop(disp_tx);
                let _ = reader_done_tx.send(reader.finish());
            })
            .expect("spawning a thread succeeds");
        // rings[d][w]: dispatcher d → worker w; recycle[d][w]: emptied batch vectors
        // back. A batch is too big for the allocator's free lists, and a fresh one per
        // chunk would cost an mmap, page faults and an munmap each time.
        let mut to_worker: Vec<Vec<Receiver<Msg>>> = (0..n).map(|_| Vec::with_capacity(nd)).collect();
        let mut recycle_tx: Vec<Vec<Sender<Vec<Pkt>>>> = (0..n).map(|_| Vec::with_capacity(nd)).collect();
        let mut dispatchers = Vec::with_capacity(nd);
        for (d, (dec, chunks)) in decoders.into_iter().zip(disp_rx).enumerate() {
            let mut worker_tx = Vec::with_capacity(n);
            let mut recycled_rx = Vec::with_capacity(n);
            for w in 0..n {
                let (tx, rx) = ring::<Msg>(cfg.ring_slots);
                worker_tx.push(tx);
                to_worker[w].push(rx);
                let (rtx, rrx) = ring::<Vec<Pkt>>(cfg.ring_slots + 2);
                recycle_tx[w].push(rtx);
                recycled_rx.push(rrx);
            }
            let mut dispatch = Dispatch::with_decoder(dec, hasher.clone(), n);
            dispatch.dns_broadcast = cfg.tracker.l7.is_some();
            let (stop, frags, sched) = (stop.clone(), frags.clone(), sched.clone());
            dispatchers.push(
                std::thread::Builder::new()
                    .name(format!("tapstat-d{d}"))
                    .spawn(move || {
                        let ends = Ends { frags: &frags, sched: sched.as_deref(), stop: &stop };
                        run_dispatcher(dispatch, chunks, worker_tx, recycled_rx, ends)
                    })
                    .expect("spawning a thread succeeds"),
            );
        }
        // Mailboxes for the flows of moved bins (`balance`, `bundle`): unbounded, so a
        // worker that gives flows away never waits for the one that takes them.
        let (mail_tx, mail_rx): (Vec<_>, Vec<_>) = (0..n).map(|_| crossbeam_channel::unbounded::<Mail>()).unzip();
        let mut workers = Vec::with_capacity(n);
        for (w, ((rx, recycle), inbox)) in to_worker.into_iter().zip(recycle_tx).zip(mail_rx).enumerate() {
            let work = new_worker(w);
            let mail = Mailboxes { me: w, inbox, outboxes: mail_tx.clone(), early: Vec::new(), moved_in: 0 };
            let groups = cfg.flow_batches.then(|| FlowGroups::new(cfg.tracker.periodic_ns));
            workers.push(
                std::thread::Builder::new()
                    .name(format!("tapstat-w{w}"))
                    .spawn(move || run_worker(work, groups, rx, recycle, mail))
                    .expect("spawning a thread succeeds"),
            );
        }
        drop(mail_tx);
        drop(dispatch);
        (dispatchers, workers)
    };
    let mut disp = DispatchResult::default();
    let mut results = Vec::with_capacity(n);
    for h in dispatchers {
        let (r, w) = h.join().map_err(|_| EngineError::Thread("dispatcher"))?;
        disp.merge(&r);
        results.extend(w);
    }
    for h in workers {
        results.push(h.join().map_err(|_| EngineError::Thread("worker"))?);
    }
    let ended = backend.finish(results)?;
    let written = &ended.written;
    // A closed standard output (`| head`) stops the run too, but nobody interrupted it.
    let interrupted = stop.load(Ordering::Relaxed) && written.error.is_none() && !written.closed;
    // After a normal end the reader has finished; after Ctrl-C it may be blocked in
    // a read that will never return, and is left behind.
    let wait = if interrupted { std::time::Duration::from_millis(200) } else { std::time::Duration::from_secs(3600) };
    let reader = reader_done_rx.recv_timeout(wait).unwrap_or_else(|_| ReaderResult {
        err: None,
        stats: CaptureStats::default(),
        warnings: vec!["the input was still blocked in a read when the run was interrupted".into()],
    });
    if let Some(e) = reader.err {
        // The flows seen so far were written; the error still stops the run.
        return Err(e.into());
    }
    let mut warnings = reader.warnings;
    warnings.extend(ended.warnings.iter().cloned());
    let mut summary = ended.summary(cfg, &disp, reader.stats, warnings, interrupted, started);
    if let Some(e) = &written.error {
        summary.write_error = Some(format!("{e}: {}", e.source));
        summary.records_not_written = written.lost;
    }
    if written.closed {
        summary.output_closed = true;
        summary.records_not_written = written.lost;
    }
    summary.flow_table = cfg.tracker.index.name();
    summary.flow_hash = cfg.flow_hash.name();
    summary.scheduling = (n > 1).then(|| SchedulingSummary {
        policy: cfg.schedule.name(),
        dispatchers: cfg.dispatchers_for(n),
        flows_moved: ended.moved_in,
        per_worker_packets: ended.per_worker_packets.clone(),
    });
    ended.fill(&mut summary);
    Ok(summary)
}
