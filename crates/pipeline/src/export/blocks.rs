//! An exporter thread that the workers feed with blocks of bytes (IPFIX records, Kafka
//! frames), the blocks going back to the workers for reuse: the plumbing the `--ipfix`
//! and `--kafka` exporters share.

use crate::EngineError;

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
}

impl<R: Send + 'static> Blocks<R> {
    /// Starts thread `name` running `run` over the channel of blocks (and the channel
    /// that takes emptied blocks back).
    pub(crate) fn spawn(
        name: &str,
        what: &'static str,
        block: usize,
        slack: usize,
        run: impl FnOnce(crossbeam_channel::Receiver<Vec<u8>>, crossbeam_channel::Sender<Vec<u8>>) -> R + Send + 'static,
    ) -> Blocks<R> {
        let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(IN_FLIGHT);
        let (free_tx, free) = crossbeam_channel::bounded::<Vec<u8>>(FREE);
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(rx, free_tx))
            .expect("spawning a thread succeeds");
        Blocks { tx: Some(tx), free, handle, block, slack, what }
    }

    /// A worker's end of the channel.
    pub(crate) fn out(&self) -> Option<BlockOut> {
        let tx = self.tx.clone()?;
        Some(BlockOut { buf: Vec::new(), tx, free: self.free.clone(), block: self.block, slack: self.slack })
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
    tx: crossbeam_channel::Sender<Vec<u8>>,
    free: crossbeam_channel::Receiver<Vec<u8>>,
    block: usize,
    slack: usize,
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
        if self.buf.len() >= self.block {
            self.flush();
        }
    }

    /// Hands the records added so far to the exporter.
    pub(crate) fn flush(&mut self) {
        if !self.buf.is_empty() {
            let fresh = self.free.try_recv().unwrap_or_else(|_| Vec::with_capacity(self.block + self.slack));
            let b = std::mem::replace(&mut self.buf, fresh);
            // The exporter only goes away when it panicked; its summary (or the run)
            // says so.
            let _ = self.tx.send(b);
        }
    }
}
