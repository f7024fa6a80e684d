//! `tapstat -i IFACE`: live capture flags, and the glue that opens the sockets,
//! handles signals and drops privileges before the engine runs.

use crate::args::RunArgs;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tapstat_capture::live::{compile_filter, open_fanout, AfPacketConfig, LiveSource};
use tapstat_pipeline::{Acquire, LiveConfig, Overload, OverloadConfig, Progress, Summary};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum AcquireArg {
    /// Busy loop: a core per acquisition thread
    Poll,
    /// Once per --period under SCHED_DEADLINE (a timerfd where refused)
    Periodic,
    /// Sleep until the kernel hands over a block (lightest on an idle link)
    Block,
}

/// Live capture (AF_PACKET; DPDK with the `dpdk` feature).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Live capture")]
pub struct LiveArgs {
    /// Capture live from this interface (AF_PACKET, one socket per worker in one fanout group)
    #[arg(short = 'i', long = "interface", value_name = "IFACE", conflicts_with = "read")]
    pub interface: Option<String>,
    /// Filter, tcpdump syntax (compiled by libpcap; run in the kernel with -i, on each
    /// packet of the files with -r), e.g. 'tcp port 443'; or give it after the options
    #[arg(help_heading = "Input", short = 'f', long = "filter", value_name = "EXPR")]
    pub filter: Option<String>,
    /// Capture through DPDK with these EAL arguments (needs a build with `--features dpdk`)
    #[arg(long, value_name = "EAL ARGS", allow_hyphen_values = true, conflicts_with_all = ["read", "interface"])]
    pub dpdk: Option<String>,
    /// Size of each worker's packet buffer between acquisition and analysis (e.g. 256MiB, 1GiB) [1MiB..=64GiB]
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = buffer_size)]
    pub buffer: u64,
    /// Size of each socket's kernel ring, in blocks of 1 MiB handed over when full or after 10 ms: at low rates the ring bridges a stalled reader for blocks x 10 ms (640 ms by default) [2MiB..=16GiB]
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = ring_size)]
    pub kernel_ring: u64,
    /// Acquisition policy
    #[arg(long, value_enum, default_value = "periodic")]
    pub acquire: AcquireArg,
    /// Period of periodic acquisition (e.g. 500us, 1ms) [1us..=1s]
    #[arg(long, value_name = "DUR", default_value = "500us", allow_hyphen_values = true, value_parser = period_dur)]
    pub period: Duration,
    /// How often each worker's figures go to stderr and stats.jsonl [10ms..=1d]
    #[arg(long, value_name = "DUR", default_value = "1s", allow_hyphen_values = true, value_parser = stats_dur)]
    pub stats_interval: Duration,
    /// Serve Prometheus metrics over HTTP at this address (e.g. 127.0.0.1:9100)
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Start a new output directory (YYYY_MM_DD_HH_MM.out, UTC; _SS added under a minute)
    /// every DUR of packet time (e.g. 1h, 15m), live or on files. A record goes to the
    /// interval in which its flow was written; on files, in which it was due (a timeout
    /// at the moment it passed), the same with any number of workers [1s..=366d]
    #[arg(help_heading = "Output", long, value_name = "DUR", allow_hyphen_values = true, value_parser = rotate_dur)]
    pub rotate: Option<Duration>,
    /// Write each log's pending records at least this often (wall time), so the logs can
    /// be followed while the capture runs [10ms..=1d]
    #[arg(long, value_name = "DUR", default_value = "1s", allow_hyphen_values = true, value_parser = stats_dur)]
    pub flush: Duration,
    /// What a worker does when its buffer fills: ted (tail early dropping: cut flows'
    /// tails first, counting the packets cut; keep --keep's packets) or drop (drop
    /// whatever arrives at a full buffer)
    #[arg(long, value_enum, default_value = "ted")]
    pub overload: OverloadArg,
    /// Packets TED never cuts: any of syn, fin, rst, dns (name services: TCP/UDP 53,
    /// UDP 5353 mDNS, 5355 LLMNR, 137 NBNS), heads (segments starting an HTTP/1 request
    /// or response or a TLS handshake record; QUIC long headers), first=N (a flow's first
    /// N packets), or none
    #[arg(long, value_name = "RULES", default_value = "syn,fin,rst,dns,heads,first=3", value_parser = tapstat_pipeline::Keep::parse)]
    pub keep: tapstat_pipeline::Keep,
    /// Shunt a flow that needs no further analysis: its later packets are only counted
    /// (packets and wire bytes stay exact; SYN, FIN, RST still analysed; the record says
    /// shunted 1). RULE joins terms with 'and': app=NAME, bytes>SIZE, pkts>N, l7done
    /// (e.g. 'app=tls and bytes>1MB'); up to 4 rules, any one matching
    #[arg(long, value_name = "RULE", value_parser = tapstat_analyze::shunt::Rule::parse)]
    pub shunt: Vec<tapstat_analyze::shunt::Rule>,
    /// After opening the sockets, run as this user (and its group), with no capabilities.
    /// It gets the files tapstat creates; an existing output directory keeps its owner
    /// and must be one the user can write (checked before the capture starts)
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
}

impl LiveArgs {
    pub fn is_live(&self) -> bool {
        self.interface.is_some() || self.dpdk.is_some()
    }
}

/// `256MiB`, `64M`, `1G`, `1000000`: bytes (binary multiples for K/M/G with or
/// without `i`/`B`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size (e.g. 256MiB)"))?;
    let mult = match unit.trim().to_ascii_lowercase().trim_end_matches('b').trim_end_matches('i') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return Err(format!("{s:?}: unknown unit (use KiB, MiB or GiB)")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("{s:?} is too large"))
}

/// `500us`, `1ms`, `2s`, `15m`, `1h`, `250ns`, `1e-3s`: a number (exponent allowed)
/// and a unit (seconds without one).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    // Longest units first, so `ms` is not read as `m` after a number ending in `s`.
    const UNITS: [(&str, f64); 9] = [
        ("min", 60.0),
        ("ns", 1e-9),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
        ("d", 86400.0),
    ];
    let (num, secs) = UNITS.iter().find_map(|(u, f)| t.strip_suffix(u).map(|n| (n.trim(), *f))).unwrap_or((t, 1.0));
    let n: f64 = num.parse().map_err(|_| {
        if num.ends_with(|c: char| c.is_ascii_digit() || c == '.') {
            format!("{s:?} is not a duration (e.g. 500us, 1s, 1h)")
        } else {
            format!("{s:?}: unknown unit (ns, us, ms, s, m, h, d)")
        }
    })?;
    if n.is_nan() || n * secs <= 0.0 {
        return Err(format!("{s:?} is out of range (must be positive)"));
    }
    Duration::try_from_secs_f64(n * secs).map_err(|_| format!("{s:?} is out of range (longer than a Duration holds)"))
}

/// A duration in `lo..=hi` (named as `lo_s`..=`hi_s` in the error).
fn duration_in(s: &str, lo: Duration, hi: Duration, range: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < lo || d > hi {
        return Err(format!("{s:?} is out of range {range}"));
    }
    Ok(d)
}

fn period_dur(s: &str) -> Result<Duration, String> {
    duration_in(s, Duration::from_micros(1), Duration::from_secs(1), "1us..=1s")
}

fn stats_dur(s: &str) -> Result<Duration, String> {
    duration_in(s, Duration::from_millis(10), Duration::from_secs(86_400), "10ms..=1d")
}

fn rotate_dur(s: &str) -> Result<Duration, String> {
    duration_in(s, Duration::from_secs(1), Duration::from_secs(366 * 86_400), "1s..=366d")
}

fn size_in(s: &str, lo: u64, hi: u64, range: &str) -> Result<u64, String> {
    let n = parse_size(s)?;
    if n < lo || n > hi {
        return Err(format!("{s:?} is out of range {range}"));
    }
    Ok(n)
}

pub fn buffer_size(s: &str) -> Result<u64, String> {
    size_in(s, 1 << 20, 64 << 30, "1MiB..=64GiB")
}

fn ring_size(s: &str) -> Result<u64, String> {
    size_in(s, 2 << 20, 16 << 30, "2MiB..=16GiB")
}

/// The flags that only mean something for live capture, by clap id and as typed.
pub const LIVE_ONLY: [(&str, &str); 11] = [
    ("user", "--user"),
    ("metrics", "--metrics"),
    ("buffer", "--buffer"),
    ("kernel_ring", "--kernel-ring"),
    ("acquire", "--acquire"),
    ("period", "--period"),
    ("stats_interval", "--stats-interval"),
    ("flush", "--flush"),
    ("overload", "--overload"),
    ("keep", "--keep"),
    ("shunt", "--shunt"),
];

static REOPEN: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sighup(_: libc::c_int) {
    REOPEN.store(true, Ordering::SeqCst);
}

/// SIGHUP reopens the output files (after logrotate, say) instead of stopping.
fn catch_sighup() {
    // SAFETY: sigaction is plain data (all-zero is valid); the handler only stores to
    // an atomic, which is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sighup as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGHUP, &sa, std::ptr::null_mut());
    }
}

/// The user to become: its uid and gid.
fn lookup_user(name: &str) -> Result<(libc::uid_t, libc::gid_t)> {
    let c = std::ffi::CString::new(name).context("user name")?;
    // SAFETY: getpwnam reads a valid C string; the result is copied out at once and
    // no other thread calls getpwnam now.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        bail!("--user {name}: no such user");
    }
    // SAFETY: `pw` is non-null and points to libc's static passwd entry.
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// Makes `out` the `--user` account's to write in, before the capture starts: a
/// directory this run created (`created`) is given to it; one that existed keeps its
/// owner, and must already let the user create files in it (it may hold what is not
/// tapstat's to give away: a key, a `-N` file). Either way, the user's write access
/// is then checked as the user, so that a directory it cannot write (or reach) is an
/// error now, not at the first log rotation or at summary.json.
fn prepare_out_for_user(
    out: &std::path::Path,
    created: bool,
    name: &str,
    uid: libc::uid_t,
    gid: libc::gid_t,
) -> Result<()> {
    if created {
        chown_nofollow(out, uid, gid).with_context(|| format!("giving {} to --user {name}", out.display()))?;
    }
    match access_as(out, uid, gid) {
        Ok(()) => {}
        Err(e) if created => bail!(
            "--user {name} cannot reach {}, created for it ({e}): every directory above it must let the user through (search permission)",
            out.display()
        ),
        Err(e) => bail!(
            "--user {name} cannot write into {} ({e}): give it a directory it owns or may write, or an -o that does not exist yet (tapstat creates it for the user)",
            out.display()
        ),
    }
    Ok(())
}

/// Whether `uid:gid` (with no supplementary groups, as after [`drop_privileges`]) may
/// create files in directory `dir`: `access(W_OK | X_OK)` in a child process that
/// has become that user (the parents' search permission, ACLs and read-only mounts
/// included, as the kernel sees them).
fn access_as(dir: &std::path::Path, uid: libc::uid_t, gid: libc::gid_t) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: the child calls only async-signal-safe functions (setgroups, setgid,
    // setuid, access, _exit) on memory prepared before the fork, and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: see above; every path ends in _exit.
        unsafe {
            let code = if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(gid) != 0 || libc::setuid(uid) != 0
            {
                255
            } else if libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) != 0 {
                // errno values fit a status (they are under 134).
                *libc::__errno_location()
            } else {
                0
            };
            libc::_exit(code);
        }
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above; `status` is valid for writing.
    if unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(255) => Err(std::io::Error::other("could not become the user to check")),
        Some(errno) => Err(std::io::Error::from_raw_os_error(errno)),
        None => Err(std::io::Error::other("the check as the user did not end normally")),
    }
}

/// Gives `path` to `uid:gid` if it is a directory or a regular file with one name,
/// opened with `O_NOFOLLOW` (a symbolic link fails to open; a hard link to a file
/// elsewhere is refused, since its inode is that file's).
pub(crate) fn chown_nofollow(path: &std::path::Path, uid: libc::uid_t, gid: libc::gid_t) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)?;
    let m = f.metadata()?;
    if !(m.is_dir() || (m.is_file() && m.nlink() == 1)) {
        return Err(std::io::Error::other("not a directory or a regular file with a single name"));
    }
    std::os::unix::fs::fchown(&f, Some(uid), Some(gid))
}

/// Gives up root: supplementary groups, group, then user (in that order, since
/// setgid needs the privilege setuid gives up). Without PR_SET_KEEPCAPS, setuid to a
/// non-zero uid clears every capability; the open sockets stay usable.
///
/// First the files the run created (`created`: its logs, stats.jsonl) are given to the
/// user through their descriptors (`fchown`), never by path, and nothing else in the
/// output directory: SIGHUP reopens them as the user. What the run creates later
/// (interval directories, histograms.tsv, summary.json) is created as the user.
fn drop_privileges(uid: libc::uid_t, gid: libc::gid_t, created: &[std::fs::File]) -> Result<(), String> {
    for f in created {
        std::os::unix::fs::fchown(f, Some(uid), Some(gid)).map_err(|e| format!("giving a log to the user: {e}"))?;
    }
    // SAFETY: plain system calls on the whole process (glibc applies set*id to every
    // thread); each result is checked.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0 {
            return Err(format!("setgroups: {}", std::io::Error::last_os_error()));
        }
        if libc::setgid(gid) != 0 {
            return Err(format!("setgid({gid}): {}", std::io::Error::last_os_error()));
        }
        if libc::setuid(uid) != 0 {
            return Err(format!("setuid({uid}): {}", std::io::Error::last_os_error()));
        }
        if libc::setuid(0) == 0 {
            return Err("still able to become root after setuid".into());
        }
    }
    Ok(())
}

/// The opened capture: one source per worker, a name for messages, and what must
/// stay alive while the engine runs (DPDK's EAL).
struct Opened {
    sources: Vec<Box<dyn LiveSource>>,
    what: String,
    _backend: Option<Box<dyn std::any::Any>>,
}

fn open_afpacket(l: &LiveArgs, filter: Option<&str>, iface: &str, workers: usize) -> Result<Opened> {
    let mut ac = AfPacketConfig::new(iface);
    ac.blocks = (l.kernel_ring >> 20).clamp(2, 1 << 14) as u32;
    if let Some(expr) = filter {
        // The link type is the interface's: compile against what the sockets see.
        let link = std::fs::read_to_string(format!("/sys/class/net/{iface}/type"))
            .ok()
            .filter(|t| t.trim() == "65534")
            .map_or(tapstat_capture::LinkType::ETHERNET, |_| tapstat_capture::LinkType::RAW);
        ac.filter = Some(compile_filter(expr, link)?);
    }
    let socks = open_fanout(&ac, workers).with_context(|| format!("capturing on {iface}"))?;
    let sources = socks.into_iter().map(|s| Box::new(s) as Box<dyn LiveSource>).collect();
    Ok(Opened { sources, what: iface.to_string(), _backend: None })
}

#[cfg(not(feature = "dpdk"))]
fn open_dpdk(_: &LiveArgs, _: &str, _: usize, _: bool, _: bool) -> Result<Opened> {
    bail!("--dpdk: this tapstat was built without DPDK; rebuild with `cargo build --release --features dpdk` (needs libdpdk-dev)");
}

/// Starts the EAL and one RX queue per worker on every port it found. Without `-w`
/// (`chosen` false), the workers are as many as the cores but no more than the
/// ports' queues (a net_pcap vdev has one per `rx_pcap=`).
#[cfg(feature = "dpdk")]
fn open_dpdk(l: &LiveArgs, eal_args: &str, mut workers: usize, chosen: bool, quiet: bool) -> Result<Opened> {
    if l.filter.is_some() {
        bail!("-f works with -i only: DPDK frames never pass through the kernel's filter");
    }
    let dpdk = tapstat_dpdk::Dpdk::init(eal_args)?;
    if !chosen {
        if let Some(q) = dpdk.max_rx_queues().filter(|&q| q > 0 && q < workers) {
            if !quiet {
                eprintln!("tapstat: {q} worker(s): the DPDK ports have {q} RX queue(s) (-w sets the number)");
            }
            workers = q;
        }
    }
    let (queues, ports) = dpdk.open(workers)?;
    let what = ports.iter().map(|p| format!("{} ({})", p.name, p.driver)).collect::<Vec<_>>().join(", ");
    if !quiet {
        for p in &ports {
            let rss = match p.rss_key_len {
                0 => "no RSS (the PMD spreads frames itself)".to_string(),
                n => format!("symmetric RSS, {n}-byte key, functions {:#x}", p.rss_hf),
            };
            let ts = if p.stamps { "frames stamped by the PMD" } else { "batch timestamps" };
            crate::say!(
                "tapstat: DPDK port {} {} ({}): {} RX queue(s) of {} descriptors, {rss}, {ts}",
                p.id,
                p.name,
                p.driver,
                p.rx_queues,
                p.rx_desc
            );
        }
    }
    let sources = queues.into_iter().map(|q| Box::new(q) as Box<dyn LiveSource>).collect();
    Ok(Opened { sources, what, _backend: Some(Box::new(dpdk)) })
}

/// Runs a live capture until SIGINT/SIGTERM; writes summary.json.
pub fn analyze(a: &RunArgs) -> Result<Summary> {
    let l = &a.live;
    tapstat_analyze::shunt::Shunt::new(&l.shunt).map_err(anyhow::Error::msg)?;
    if a.count.is_some() {
        bail!("-c works on files only: a live capture runs until SIGINT/SIGTERM");
    }
    let inputs = a.inputs().map_err(anyhow::Error::msg)?;
    if l.dpdk.is_some() && inputs.filter.is_some() {
        bail!("a filter works with -i and -r only: DPDK frames never pass through the kernel's filter");
    }
    a.apply_time_format().map_err(anyhow::Error::msg)?;
    let mut cfg = a.engine_config();
    cfg.workers = a.workers().map_err(anyhow::Error::msg)?;
    let hash_warning = crate::warn_unkeyed_hash(&cfg);
    let user = l.user.as_deref().map(lookup_user).transpose()?;
    let claim = (!cfg.stdout).then(|| crate::outdir::claim(&cfg.out_dir, a.force)).transpose()?;
    if let (Some(c), Some((uid, gid)), Some(name)) = (&claim, user, l.user.as_deref()) {
        prepare_out_for_user(&cfg.out_dir, c.created, name, uid, gid)?;
    }
    let opened = match &l.dpdk {
        Some(eal) => open_dpdk(l, eal, cfg.workers, a.workers.is_some(), a.quiet)?,
        None => {
            open_afpacket(l, inputs.filter.as_deref(), l.interface.as_deref().expect("is_live() checked"), cfg.workers)?
        }
    };
    let Opened { sources, what, _backend } = opened;
    // One worker per source (DPDK without -w: per queue the ports have).
    cfg.workers = sources.len();

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // SIGINT/SIGTERM stop the capture; every live flow is still written. A
        // second one leaves at once.
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            crate::say!("\ntapstat: stopping: writing the live flows (again to quit at once)");
        });
    }
    catch_sighup();
    let mut live = live_config(a);
    live.on_ready = user.map(|(uid, gid)| {
        Box::new(move |created: &[std::fs::File]| drop_privileges(uid, gid, created)) as tapstat_pipeline::OnReady
    });
    if !a.quiet {
        crate::say!(
            "tapstat: capturing on {what} with {} worker(s), {} acquisition; SIGINT/SIGTERM to stop, SIGHUP to reopen files",
            cfg.workers,
            live.acquire.name()
        );
    }
    let mut summary = tapstat_pipeline::run_live(sources, &cfg, live, stop, Arc::new(Progress::default()))?;
    let stopped = crate::say_write_failed(&summary);
    crate::finish_summary(&mut summary, &cfg, vec![what.clone()])?;
    let out = crate::output_name(&cfg);
    // The unkeyed hash's warning was printed at start-up.
    for w in summary.warnings.iter().filter(|w| Some(*w) != hash_warning.as_ref()) {
        crate::say!("tapstat: warning: {w}");
    }
    if !a.quiet {
        print_summary(&summary, &out);
    }
    match stopped {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// `--overload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OverloadArg {
    Ted,
    Drop,
}

/// How a live run (or a replay) acquires, buffers, reports and writes, as the flags say.
pub(crate) fn live_config(a: &RunArgs) -> LiveConfig {
    let l = &a.live;
    LiveConfig {
        buffer_bytes: l.buffer.min(usize::MAX as u64) as usize,
        acquire: match l.acquire {
            AcquireArg::Poll => Acquire::Poll,
            AcquireArg::Periodic => Acquire::Periodic { period: l.period },
            AcquireArg::Block => Acquire::Block,
        },
        stats_interval: l.stats_interval,
        stats_stderr: !a.quiet,
        metrics: l.metrics,
        flush: l.flush,
        reopen: &REOPEN,
        on_ready: None,
        overload: OverloadConfig {
            policy: match l.overload {
                OverloadArg::Ted => Overload::Ted,
                OverloadArg::Drop => Overload::Drop,
            },
            keep: l.keep,
        },
    }
}

/// The summary of a live run on stderr, with its drops.
pub(crate) fn print_summary(summary: &Summary, out: &std::path::Path) {
    crate::say!("{}", summary.human().trim_end());
    if let Some(ls) = &summary.live {
        crate::say!(
            "  live: {} received, {} kernel drops, {} buffer drops, buffer max {:.1}% ({})",
            ls.received_packets,
            ls.kernel_drops,
            ls.buffer_drops,
            100.0 * ls.buffer_max_bytes as f64 / ls.buffer_capacity_bytes.max(1) as f64,
            ls.pacing.join(",")
        );
        if ls.unanalysed_packets + ls.prioritised_packets > 0 {
            crate::say!(
                "  overload ({}): {} offered, {} analysed, {} counted only (flow tails), {} kept by priority, cut-off down to {}",
                ls.overload,
                ls.offered_packets,
                ls.analysed_packets,
                ls.unanalysed_packets,
                ls.prioritised_packets,
                ls.min_cutoff.map_or("-".into(), |c| c.to_string())
            );
        }
        if ls.shunted_flows > 0 {
            crate::say!(
                "  shunted: {} flows, {} of their packets counted only, {} requests lost",
                ls.shunted_flows,
                ls.shunted_packets,
                ls.shunts_lost
            );
        }
    }
    crate::say!("  output: {}", out.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-over of a directory tapstat created changes its owner, never that of
    /// what a link (soft or hard) in its place points to.
    #[test]
    fn chown_never_follows_links() {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: chown to another user needs root");
            return;
        }
        let d = std::env::temp_dir().join(format!("tapstat-chown-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let out = d.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let target = d.join("shadow");
        std::fs::write(&target, "x").unwrap();
        std::os::unix::fs::symlink(&target, d.join("soft")).unwrap();
        std::fs::hard_link(&target, d.join("hard")).unwrap();
        assert!(chown_nofollow(&d.join("soft"), 65534, 65534).is_err());
        assert!(chown_nofollow(&d.join("hard"), 65534, 65534).is_err());
        assert_eq!(std::fs::metadata(&target).unwrap().uid(), 0, "the target must stay root's");
        chown_nofollow(&out, 65534, 65534).unwrap();
        assert_eq!(std::fs::metadata(&out).unwrap().uid(), 65534);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("1 fortnight").is_err());
        // Beyond what a Duration holds: an error, not a panic.
        assert!(parse_duration("1e20s").is_err_and(|e| e.contains("range")));
        assert_eq!(parse_duration("1e-3s"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("infs").is_err() && parse_duration("NaN").is_err() && parse_duration("-1s").is_err());
        assert!(parse_duration("99999999999999999999999d").is_err());
        assert!(period_dur("1e20s").is_err());
        assert!(rotate_dur("367d").is_err() && rotate_dur("1h").is_ok());
        assert!(buffer_size("100GiB").is_err() && ring_size("1MiB").is_err());
    }
}
