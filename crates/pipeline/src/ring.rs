//! Bounded lock-free single-producer/single-consumer rings between threads.
//!
//! The ring itself is `rtrb`'s (wait-free push and pop). What it lacks is a way to
//! wait: a consumer that finds it empty spins briefly, then parks until the producer
//! unparks it; a producer that finds it full does the same. Parking instead of
//! spinning keeps idle threads from burning the CPU that the measure "packets per
//! CPU-second" counts. The waiting flags are set and read with `SeqCst` on both sides
//! (flag, then re-check the ring, then park; push, then read the flag, then unpark),
//! so a wake-up is never lost; the park still times out, after 1 ms and then twice as
//! long each time up to [`PARK_MAX`], only to look at the stop flag. (A fixed 1 ms
//! made idle workers wake a thousand times a second each: under callgrind, where a
//! run is slow, that was a fifth of a 16-worker run's instructions.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::Thread;
use std::time::Duration;

struct Shared {
    consumer_waiting: AtomicBool,
    producer_waiting: AtomicBool,
    consumer: std::sync::OnceLock<Thread>,
    producer: std::sync::OnceLock<Thread>,
}

pub struct Sender<T> {
    inner: rtrb::Producer<T>,
    shared: Arc<Shared>,
}

pub struct Receiver<T> {
    inner: rtrb::Consumer<T>,
    shared: Arc<Shared>,
}

/// A ring of `capacity` slots.
pub fn ring<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let (p, c) = rtrb::RingBuffer::new(capacity.max(1));
    let shared = Arc::new(Shared {
        consumer_waiting: AtomicBool::new(false),
        producer_waiting: AtomicBool::new(false),
        consumer: std::sync::OnceLock::new(),
        producer: std::sync::OnceLock::new(),
    });
    (Sender { inner: p, shared: shared.clone() }, Receiver { inner: c, shared })
}

const SPINS: u32 = 64;
const PARK_MIN: Duration = Duration::from_millis(1);
/// The longest park: how late a waiting thread may notice the stop flag.
const PARK_MAX: Duration = Duration::from_millis(64);

/// The park timeout after `parks` parks in one wait: 1 ms, doubling up to `PARK_MAX`.
fn park_for(parks: u32) -> Duration {
    PARK_MIN.saturating_mul(1 << parks.min(6)).min(PARK_MAX)
}

impl<T> Sender<T> {
    /// Pushes `v`, waiting while the ring is full. Returns `Err(v)` if the receiver is
    /// gone.
    pub fn send(&mut self, mut v: T) -> Result<(), T> {
        let _ = self.shared.producer.set(std::thread::current());
        let mut spins = 0;
        loop {
            match self.inner.push(v) {
                Ok(()) => {
                    if self.shared.consumer_waiting.load(Ordering::SeqCst) {
                        if let Some(t) = self.shared.consumer.get() {
                            t.unpark();
                        }
                    }
                    return Ok(());
                }
                Err(rtrb::PushError::Full(back)) => {
                    v = back;
                    if self.inner.is_abandoned() {
                        return Err(v);
                    }
                    spins += 1;
                    if spins < SPINS {
                        std::hint::spin_loop();
                    } else {
                        self.shared.producer_waiting.store(true, Ordering::SeqCst);
                        if self.inner.is_full() {
                            std::thread::park_timeout(park_for(spins - SPINS));
                        }
                        self.shared.producer_waiting.store(false, Ordering::SeqCst);
                    }
                }
            }
        }
    }
}

impl<T> Sender<T> {
    /// Pushes `v` if there is room, without waiting; gives it back otherwise.
    pub fn try_send(&mut self, v: T) -> Result<(), T> {
        self.inner.push(v).map_err(|rtrb::PushError::Full(v)| v)
    }
}

impl<T> Receiver<T> {
    /// Pops a value if one is waiting, without waiting.
    pub fn try_recv(&mut self) -> Option<T> {
        self.inner.pop().ok()
    }

    /// Pops the next value, waiting while the ring is empty; `None` once the sender is
    /// gone and the ring is drained.
    pub fn recv(&mut self) -> Option<T> {
        self.recv_unless(&AtomicBool::new(false))
    }

    /// As [`Receiver::recv`], but gives up (`None`) once `stop` is set, even if the
    /// sender is blocked and will send nothing more.
    pub fn recv_unless(&mut self, stop: &AtomicBool) -> Option<T> {
        let _ = self.shared.consumer.set(std::thread::current());
        let mut spins = 0;
        loop {
            if let Ok(v) = self.inner.pop() {
                if self.shared.producer_waiting.load(Ordering::SeqCst) {
                    if let Some(t) = self.shared.producer.get() {
                        t.unpark();
                    }
                }
                return Some(v);
            }
            if self.inner.is_abandoned() {
                return self.inner.pop().ok();
            }
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            spins += 1;
            if spins < SPINS {
                std::hint::spin_loop();
            } else {
                self.shared.consumer_waiting.store(true, Ordering::SeqCst);
                if self.inner.is_empty() {
                    std::thread::park_timeout(park_for(spins - SPINS));
                }
                self.shared.consumer_waiting.store(false, Ordering::SeqCst);
            }
        }
    }

    /// Values waiting in the ring.
    pub fn len(&self) -> usize {
        self.inner.slots()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // Wake the consumer so it sees the ring abandoned without waiting out a park.
        if let Some(t) = self.shared.consumer.get() {
            t.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivers_everything_in_order_then_ends() {
        let (mut tx, mut rx) = ring::<u32>(4);
        let h = std::thread::spawn(move || {
            for i in 0..10_000 {
                tx.send(i).unwrap();
            }
        });
        let mut want = 0;
        while let Some(v) = rx.recv() {
            assert_eq!(v, want);
            want += 1;
        }
        h.join().unwrap();
        assert_eq!(want, 10_000);
    }
}
