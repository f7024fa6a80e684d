//! How often an acquisition thread looks at its queue (seeds/000 §3.2, §5.1, §6.1).
//!
//! - `Poll`: a busy loop. The best timestamps and the lowest latency, at the price of
//!   a core that never idles.
//! - `Periodic`: the thread runs once per period under `SCHED_DEADLINE` (runtime
//!   about 10% of the period), empties its queue, and gives the rest of its runtime
//!   back with `sched_yield`. The kernel guarantees the thread runs once per period,
//!   so the queue's size is bounded while the core is shared with the analysis
//!   thread. Where the kernel or the privileges refuse `SCHED_DEADLINE`, a
//!   `timerfd` ticking at the same period drives the loop (and a warning says so).
//! - `Block`: the thread sleeps in `poll(2)` until the kernel hands over a block:
//!   the cheapest when traffic is light (not in the paper).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;
use tapstat_capture::live::LiveSource;

/// The acquisition policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    Poll,
    Periodic { period: Duration },
    Block,
}

impl Acquire {
    pub fn name(&self) -> &'static str {
        match self {
            Acquire::Poll => "poll",
            Acquire::Periodic { .. } => "periodic",
            Acquire::Block => "block",
        }
    }
}

/// What actually paces the loop (a periodic policy may fall back to a timer).
pub(crate) enum Pacer {
    Spin,
    Deadline,
    Timer(OwnedFd),
    Block,
}

/// linux/sched/types.h `struct sched_attr` (version 0, 48 bytes).
#[repr(C)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

const SCHED_DEADLINE: u32 = 6;

/// Puts the calling thread under SCHED_DEADLINE: `runtime` of CPU every `period`.
fn set_deadline(runtime: Duration, period: Duration) -> std::io::Result<()> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: SCHED_DEADLINE,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: runtime.as_nanos() as u64,
        sched_deadline: period.as_nanos() as u64,
        sched_period: period.as_nanos() as u64,
    };
    // SAFETY: sched_setattr(2) on the calling thread (pid 0) reads `attr`, a valid
    // struct of the size it declares, during the call.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn timer(period: Duration) -> std::io::Result<OwnedFd> {
    // SAFETY: plain system call; the descriptor is checked before use.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let ts = libc::timespec { tv_sec: period.as_secs() as _, tv_nsec: period.subsec_nanos() as _ };
    let spec = libc::itimerspec { it_interval: ts, it_value: ts };
    // SAFETY: `spec` is valid for reading; the old value is not asked for.
    if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

impl Pacer {
    /// Sets the calling thread up for `policy`; a fallback is explained in `warn`.
    pub(crate) fn new(policy: Acquire, warn: &mut Option<String>) -> Pacer {
        match policy {
            Acquire::Poll => Pacer::Spin,
            Acquire::Block => Pacer::Block,
            Acquire::Periodic { period } => {
                let period = period.max(Duration::from_micros(10));
                let runtime = (period / 10).max(Duration::from_micros(2));
                match set_deadline(runtime, period) {
                    Ok(()) => Pacer::Deadline,
                    Err(e) => {
                        *warn = Some(format!(
                            "SCHED_DEADLINE refused ({e}; it needs root or CAP_SYS_NICE, and room in the kernel's \
                             deadline bandwidth): periodic acquisition falls back to a timerfd every {period:?}"
                        ));
                        match timer(period) {
                            Ok(fd) => Pacer::Timer(fd),
                            Err(e) => {
                                *warn = Some(format!("no timerfd ({e}): periodic acquisition falls back to polling"));
                                Pacer::Spin
                            }
                        }
                    }
                }
            }
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Pacer::Spin => "poll",
            Pacer::Deadline => "SCHED_DEADLINE",
            Pacer::Timer(_) => "timerfd",
            Pacer::Block => "block",
        }
    }

    /// Waits for the next round. `idle`: the last round found nothing.
    #[inline]
    pub(crate) fn wait(&mut self, idle: bool, src: &mut dyn LiveSource) {
        match self {
            Pacer::Spin => {
                if idle {
                    std::hint::spin_loop();
                }
            }
            // Under SCHED_DEADLINE, sched_yield ends this period's job: the thread
            // sleeps until the next period starts.
            // SAFETY: plain system call without arguments.
            Pacer::Deadline => unsafe {
                libc::sched_yield();
            },
            Pacer::Timer(fd) => {
                let mut ticks = 0u64;
                // SAFETY: reads the 8-byte expiry count into `ticks`.
                unsafe { libc::read(fd.as_raw_fd(), (&mut ticks as *mut u64).cast(), 8) };
            }
            Pacer::Block => {
                if idle {
                    src.wait(Duration::from_millis(100));
                }
            }
        }
    }
}
