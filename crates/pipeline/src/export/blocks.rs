//! An exporter thread that the workers feed with blocks of bytes (IPFIX records, Kafka
//! frames), the blocks going back to the workers for reuse: the plumbing the `--ipfix`
//! and `--kafka` exporters share.

use crate::EngineError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a worker does when the exporter's queue is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backpressure {
    /// Wait for room: the exporter never stalls for long (Kafka's spools to disk).
    Wait,
    /// Wait at most this long, then drop the block and count its records; once a block
    /// was dropped, drop at once (no wait) until the exporter has caught up, so a
    /// collector that stops reading never holds the analysis back (IPFIX).
    DropAfter(Duration),
}

/// What the workers and the exporter share about dropped blocks.
#[derive(Debug, Default)]
pub(crate) struct Drops {
    /// Set by a worker that dropped a block, cleared by the exporter when its queue is
    /// empty again.
    stalled: AtomicBool,
    /// Records in the blocks dropped.
    pub(crate) records: AtomicU64,
}

impl Drops {
    /// The exporter's queue is empty: workers may wait for room again.
    pub(crate) fn caught_up(&self) {
        if self.stalled.load(Ordering::Relaxed) {
            self.stalled.store(false, Ordering::Relaxed);
        }
    }
}

/// Records the workers dropped before an exporter, every exporter of the process
/// together: the metrics endpoint's `tapstat_export_dropped_records_total`.
pub(crate) static EXPORT_RECORDS_DROPPED: AtomicU64 = AtomicU64::new(0);

/// Blocks the workers may have on their way to the exporter before they wait.
const IN_FLIGHT: usize = 64;
/// Emptied blocks kept for reuse.
const FREE: usize = 16;

/// The exporter thread, and the channel the workers' [`BlockOut`]s feed.
pub(crate) struct Blocks<R> {
    tx: Option<crossbeam_channel::Sender<Vec<u8>>>,
    free: crossbeam_channel::Receiver<Vec<u8>>,
    handle: std::thread::JoinHandle<R>,
    /// A worker hands its block over once it holds this many bytes.
    block: usize,
    /// Room reserved beyond `block`, so that a record seldom reallocates a block.
    slack: usize,
    /// The exporter's name in a thread error.
    what: &'static str,
    backpressure: Backpressure,
    drops: Arc<Drops>,
}

impl<R: Send + 'static> Blocks<R> {
    /// Starts thread `name` running `run` over the channel of blocks (and the channel
    /// that takes emptied blocks back).
    /// `backpressure` says what a worker does when the queue is full; `run` is handed
    /// the shared [`Drops`] too (to say when it has caught up).
    pub(crate) fn spawn(
        name: &str,
        what: &'static str,
        block: usize,
        slack: usize,
        backpressure: Backpressure,
        run: impl FnOnce(crossbeam_channel::Receiver<Vec<u8>>, crossbeam_channel::Sender<Vec<u8>>, Arc<Drops>) -> R
            + Send
            + 'static,
    ) -> Blocks<R> {
        let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(IN_FLIGHT);
        let (free_tx, free) = crossbeam_channel::bounded::<Vec<u8>>(FREE);
        let drops = Arc::new(Drops::default());
        let d = drops.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(rx, free_tx, d))
            .expect("spawning a thread succeeds");
        Blocks { tx: Some(tx), free, handle, block, slack, what, backpressure, drops }
    }

    /// A worker's end of the channel.
    pub(crate) fn out(&self) -> Option<BlockOut> {
        let tx = self.tx.clone()?;
        Some(BlockOut {
            buf: Vec::new(),
            records: 0,
            tx,
            free: self.free.clone(),
            block: self.block,
            slack: self.slack,
            backpressure: self.backpressure,
            drops: self.drops.clone(),
        })
    }

    /// Waits for the exporter to finish what the workers handed over (call once every
    /// worker has ended, so every [`BlockOut`] is gone).
    pub(crate) fn finish(mut self) -> Result<R, EngineError> {
        drop(self.tx.take());
        self.handle.join().map_err(|_| EngineError::Thread(self.what))
    }
}

/// A worker's records on their way to the exporter, a block at a time.
pub(crate) struct BlockOut {
    buf: Vec<u8>,
    /// Records in `buf`.
    records: u64,
    tx: crossbeam_channel::Sender<Vec<u8>>,
    free: crossbeam_channel::Receiver<Vec<u8>>,
    block: usize,
    slack: usize,
    backpressure: Backpressure,
    drops: Arc<Drops>,
}

impl BlockOut {
    /// The block to add a record to (allocated whole at the first record).
    #[inline]
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(self.block + self.slack);
        }
        &mut self.buf
    }

    /// After a record: hands the block over once it is full.
    #[inline]
    pub(crate) fn wrote(&mut self) {
        self.records += 1;
        if self.buf.len() >= self.block {
            self.flush();
        }
    }

    /// Hands the records added so far to the exporter.
    pub(crate) fn flush(&mut self) {
        if !self.buf.is_empty() {
            let fresh = self.free.try_recv().unwrap_or_else(|_| Vec::with_capacity(self.block + self.slack));
            let b = std::mem::replace(&mut self.buf, fresh);
            let records = std::mem::take(&mut self.records);
            // The exporter only goes away when it panicked; its summary (or the run)
            // says so.
            let sent = match self.backpressure {
                Backpressure::Wait => self.tx.send(b).is_ok(),
                Backpressure::DropAfter(_) if self.drops.stalled.load(Ordering::Relaxed) => self.tx.try_send(b).is_ok(),
                Backpressure::DropAfter(d) => self.tx.send_timeout(b, d).is_ok(),
            };
            if !sent && self.backpressure != Backpressure::Wait {
                self.drops.stalled.store(true, Ordering::Relaxed);
                self.drops.records.fetch_add(records, Ordering::Relaxed);
                EXPORT_RECORDS_DROPPED.fetch_add(records, Ordering::Relaxed);
            }
        }
    }
}
