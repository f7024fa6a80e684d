//! How often an acquisition thread looks at its queue (DPDKStat, §3.2, §5.1, §6.1).
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

use crate::live::buffer::Producer;
use crate::live::overload::{Controller, Verdict, DECIDE_EVERY, UNLIMITED};
use crate::live::telemetry::Gauges;
use crate::live::{thread_cpu_s, wall_ns};
use crate::Progress;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};
use tapstat_capture::live::{LiveError, LiveSource};

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

pub(crate) struct AcqResult {
    /// Shunt requests the controller refused (its table full).
    pub(crate) shunts_refused: u64,
    pub(crate) err: Option<LiveError>,
    pub(crate) warning: Option<String>,
    pub(crate) pacing: &'static str,
    pub(crate) cpu_s: f64,
    /// Wall time (ns) of the first and the last poll that brought frames.
    pub(crate) offered_ns: Option<(u64, u64)>,
}

/// An acquisition thread: frames from `src` into `prod` at the pace of `policy`,
/// until `stop`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn acquire_loop(
    mut src: Box<dyn LiveSource>,
    mut prod: Producer,
    mut ctl: Option<Controller>,
    mut shunt_in: Option<rtrb::Consumer<u64>>,
    policy: Acquire,
    g: &Gauges,
    stop: &AtomicBool,
    ready: &Barrier,
    progress: &Progress,
    pending: &AtomicU64,
) -> AcqResult {
    // Frames not stamped by the source get this thread's clock: those of a later poll
    // are stamped after this poll's end.
    let knows_pending = src.pending_from_ns().is_some() || !src.stamps_frames();
    let mut warning = None;
    let mut pacer = Pacer::new(policy, &mut warning);
    ready.wait();
    let stamps = src.stamps_frames();
    let mut last_poll_ns = wall_ns();
    let mut last_stats = Instant::now();
    let (mut rx, mut bytes, mut drops, mut truncated) = (0u64, 0u64, 0u64, 0u64);
    let (mut unanalysed, mut prioritised, mut min_cutoff) = (0u64, 0u64, UNLIMITED);
    let (mut shunted, mut last_ts) = (0u64, 0u64);
    let (link, cap) = (src.link(), prod.capacity());
    let mut err = None;
    let mut offered_ns = None;
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let mark = prod.mark();
        // TED decides once per poll, and every DECIDE_EVERY frames of a long one; a
        // stamping source's records are then published too, so that the analysis
        // thread can drain them while the poll goes on.
        let mut since = 0u32;
        if let Some(c) = ctl.as_mut() {
            c.decide(prod.occupancy().0, cap);
            min_cutoff = min_cutoff.min(c.cutoff());
            // The flows the worker shunted since the last poll.
            if let Some(rx) = shunt_in.as_mut() {
                while let Ok(h) = rx.pop() {
                    c.shunt(h, last_ts);
                }
            }
        }
        // Asked before the poll: it then bounds every frame the poll leaves behind.
        let bound = src.pending_from_ns();
        let r = src.poll(&mut |m, b| {
            truncated += (b.len() < m.orig_len as usize) as u64;
            let v = match ctl.as_mut() {
                None => Verdict::Analyse,
                Some(c) => {
                    since += 1;
                    if since == DECIDE_EVERY {
                        since = 0;
                        if stamps {
                            prod.publish();
                        }
                        c.decide(prod.occupancy().0, cap);
                        min_cutoff = min_cutoff.min(c.cutoff());
                    }
                    last_ts = last_ts.max(m.ts_ns);
                    c.verdict(link, b, m.ts_ns)
                }
            };
            let pushed = match (v, ctl.as_mut()) {
                // A tail is held and counted with its flow's others (losses: `lost`).
                (Verdict::Count, Some(c)) => {
                    c.hold(&mut prod, m.ts_ns, m.orig_len, b);
                    true
                }
                (v, c) => {
                    // The flow's held tails go first.
                    if let Some(c) = c {
                        c.release(&mut prod);
                    }
                    match v {
                        Verdict::Count | Verdict::Shunted => prod.push_counted(m.ts_ns, m.orig_len, b),
                        _ => prod.push(m.ts_ns, m.orig_len, b),
                    }
                }
            };
            if pushed {
                rx += 1;
                bytes += m.orig_len as u64;
                unanalysed += (v == Verdict::Count) as u64;
                prioritised += (v == Verdict::Priority) as u64;
                shunted += (v == Verdict::Shunted) as u64;
            } else {
                drops += 1;
            }
        });
        let k = match r {
            Ok(k) => k,
            Err(e) => {
                err = Some(e);
                break;
            }
        };
        if !stamps {
            // A batch-stamped source: the frames arrived between the last poll and
            // this one; spread them over that time (DPDKStat, §3.2 and its reference 23).
            let now = wall_ns();
            if k > 0 {
                prod.spread_times(mark, last_poll_ns, now);
            }
            last_poll_ns = now;
        }
        prod.publish();
        if knows_pending {
            // After the frames are published: an analysis thread that reads this, then
            // finds its buffer empty, has had every frame before it.
            let b = if stamps { bound.unwrap_or(u64::MAX) } else { last_poll_ns };
            pending.store(b, Ordering::Release);
        }
        if k > 0 {
            let now = wall_ns();
            offered_ns = Some((offered_ns.map_or(now, |(a, _)| a), now));
            // Held tails a full buffer had no room for are drops, not received.
            let lost = ctl.as_ref().map_or((0, 0), |c| c.lost);
            g.rx_packets.store(rx - lost.0, Ordering::Relaxed);
            g.rx_bytes.store(bytes - lost.1, Ordering::Relaxed);
            g.unanalysed.store(unanalysed - lost.0, Ordering::Relaxed);
            g.prioritised.store(prioritised, Ordering::Relaxed);
            g.shunted.store(shunted, Ordering::Relaxed);
            g.cutoff.store(ctl.as_ref().map_or(0, |c| c.cutoff() as u64), Ordering::Relaxed);
            g.buffer_drops.store(drops + lost.0, Ordering::Relaxed);
            g.truncated.store(truncated, Ordering::Relaxed);
            let (cur, max) = prod.occupancy();
            g.buffer_bytes.store(cur, Ordering::Relaxed);
            g.buffer_max.store(max, Ordering::Relaxed);
            progress.packets.fetch_add(k as u64, Ordering::Relaxed);
        }
        if stopping || (k == 0 && src.ended()) {
            break;
        }
        if last_stats.elapsed() >= Duration::from_millis(100) {
            let s = src.stats();
            g.kernel_drops.store(s.kernel_drops, Ordering::Relaxed);
            g.freezes.store(s.freezes, Ordering::Relaxed);
            g.buffer_bytes.store(prod.occupancy().0, Ordering::Relaxed);
            last_stats = Instant::now();
        }
        pacer.wait(k == 0, &mut *src);
    }
    // The tails still held go in now, waiting (up to a second in all) for the analysis
    // to make room.
    if let Some(c) = ctl.as_mut() {
        c.release_all(&mut prod, 10_000, |p| {
            p.publish();
            std::thread::sleep(Duration::from_micros(100));
        });
    }
    let lost = ctl.as_ref().map_or((0, 0), |c| c.lost);
    let s = src.stats();
    g.kernel_drops.store(s.kernel_drops, Ordering::Relaxed);
    g.freezes.store(s.freezes, Ordering::Relaxed);
    g.rx_packets.store(rx - lost.0, Ordering::Relaxed);
    g.rx_bytes.store(bytes - lost.1, Ordering::Relaxed);
    g.buffer_drops.store(drops + lost.0, Ordering::Relaxed);
    g.truncated.store(truncated, Ordering::Relaxed);
    g.unanalysed.store(unanalysed - lost.0, Ordering::Relaxed);
    g.prioritised.store(prioritised, Ordering::Relaxed);
    g.shunted.store(shunted, Ordering::Relaxed);
    if min_cutoff != UNLIMITED {
        g.min_cutoff.store(min_cutoff as u64, Ordering::Relaxed);
    }
    prod.close();
    let shunts_refused = ctl.as_ref().map_or(0, |c| c.shunts_refused);
    AcqResult { shunts_refused, err, warning, pacing: pacer.kind(), cpu_s: thread_cpu_s(), offered_ns }
}
