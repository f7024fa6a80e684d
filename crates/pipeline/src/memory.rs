//! The process's heap, counted (`--memcap`).
//!
//! [`Counting`] wraps the global allocator and keeps the bytes allocated and not yet
//! freed, by every thread together: the flow tables, the fragments' buffers, the
//! segments held for holes, the application layer's state, the records on their way
//! to the writer. Each thread adds its allocations to a counter of its own and moves
//! it to the shared one once it passes `SPILL` bytes either way, so an allocation
//! costs a thread-local add and the shared counter sees one atomic add per 256 KiB
//! (the count is exact to `SPILL` bytes per thread). Memory freed by another thread
//! than the one that allocated it (a record formatted by a worker, written by the
//! writer) counts down on the thread that frees it: only the sum is meaningful.
//!
//! A binary installs it (`#[global_allocator]`); without it [`heap_bytes`] is 0 and no
//! memory budget is ever reached. The workers compare [`heap_bytes`] with the budget
//! once per batch of packets and, past it, shed state ([`tapstat_analyze::Tracker::relieve`]).

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

/// Bytes a thread counts before it adds them to the shared count.
const SPILL: i64 = 256 << 10;

static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

thread_local! {
    static PENDING: Cell<i64> = const { Cell::new(0) };
}

/// A global allocator that counts what `A` hands out (see the module documentation).
pub struct Counting<A>(pub A);

#[inline]
fn count(n: i64) {
    let spill = PENDING.try_with(|p| {
        let v = p.get() + n;
        if v.abs() >= SPILL {
            p.set(0);
            v
        } else {
            p.set(v);
            0
        }
    });
    // A thread being torn down has no counter left: straight to the shared one.
    let v = spill.unwrap_or(n);
    if v != 0 {
        let now = LIVE.fetch_add(v, Ordering::Relaxed) + v;
        if v > 0 {
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
    }
}

// SAFETY: every call is passed to `A` unchanged; the counting around it neither
// allocates nor touches the memory.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `A`'s.
        let p = unsafe { self.0.alloc(l) };
        if !p.is_null() {
            count(l.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { self.0.alloc_zeroed(l) };
        if !p.is_null() {
            count(l.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as `alloc`.
        unsafe { self.0.dealloc(p, l) };
        count(-(l.size() as i64));
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: as `alloc`.
        let q = unsafe { self.0.realloc(p, l, new) };
        if !q.is_null() {
            count(new as i64 - l.size() as i64);
        }
        q
    }
}

/// Bytes of heap allocated and not freed, by every thread (to `SPILL` per thread).
#[inline]
pub fn heap_bytes() -> u64 {
    LIVE.load(Ordering::Relaxed).max(0) as u64
}

/// The most [`heap_bytes`] has been.
pub fn peak_heap_bytes() -> u64 {
    PEAK.load(Ordering::Relaxed).max(0) as u64
}

/// The process's peak resident set in bytes since it started (Linux's `VmHWM`), 0
/// where the kernel does not say. Not `getrusage`'s `ru_maxrss`: a process started by
/// `posix_spawn` or `vfork` inherits there the resident set its parent had then (a
/// 400 MB test harness makes every child it starts report 400 MB).
pub fn peak_rss_bytes() -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return 0 };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}
