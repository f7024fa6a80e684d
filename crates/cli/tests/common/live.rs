//! Helpers of the tests that capture live (tests/live.rs, tests/dpdk.rs): a network
//! namespace with a veth pair, tcpreplay into one end, tapstat on the other, and the
//! comparison of its records with those of `tapstat -r` on the replayed file.

use super::{bin, read_log, tempdir, TestDir};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// Why live tests cannot run here, if they cannot.
pub fn live_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (network namespaces and AF_PACKET need it)".into());
    }
    for t in ["ip", "tcpreplay"] {
        if !have(t) {
            return Some(format!("{t} is not installed (apt-get install iproute2 tcpreplay)"));
        }
    }
    None
}

/// `true` when the test may go on; prints why not, or panics under TAPSTAT_REQUIRE_LIVE=1.
pub fn live_ready() -> bool {
    match live_unavailable() {
        None => true,
        Some(why) if std::env::var("TAPSTAT_REQUIRE_LIVE").as_deref() == Ok("1") => {
            panic!("TAPSTAT_REQUIRE_LIVE=1 but {why}")
        }
        Some(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

pub fn run(cmd: &mut Command) {
    let o = cmd.output().expect("command runs");
    assert!(o.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&o.stderr));
}

/// A network namespace with a veth pair `va` (send) — `vb` (capture), removed on drop.
pub struct Netns {
    pub name: String,
    /// One namespace, so one live capture, at a time in a test binary: its tests run in
    /// parallel, and two replays plus busy-polling workers on a 2-core machine starve
    /// each other (a replay that falls behind is fine; a capture that cannot keep up
    /// drops, and the test fails).
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Netns {
    pub fn new(tag: &str) -> Netns {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let name = format!("tapstat-{}-{tag}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        run(Command::new("ip").args(["netns", "add", &name]));
        let ns = Netns { name, _one: one };
        // No IPv6 in the namespace: the kernel would send its own router and
        // neighbour solicitations on the veth, which are not in the file.
        ns.exec(&["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]);
        ns.exec(&["ip", "link", "add", "va", "type", "veth", "peer", "name", "vb"]);
        for dev in ["va", "vb"] {
            ns.exec(&["ip", "link", "set", dev, "mtu", "65535", "up"]);
        }
        ns
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).args(args);
        c
    }

    pub fn exec(&self, args: &[&str]) {
        run(&mut self.cmd(args));
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // A test that failed midway leaves its capture running: end every process
        // still in the namespace, or it would capture (and spin) until the machine
        // stops.
        if let Ok(o) = Command::new("ip").args(["netns", "pids", &self.name]).output() {
            for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-KILL", pid]).output();
            }
        }
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// Timeouts long enough that only the end of the capture ends a flow, so records do
/// not depend on the replay's timing.
pub const NO_TIMEOUTS: [&str; 10] = [
    "--tcp-timeout",
    "1e9",
    "--udp-timeout",
    "1e9",
    "--other-timeout",
    "1e9",
    "--singleton-timeout",
    "1e9",
    "--closed-timeout",
    "1e9",
];

pub fn wait_timeout(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("waitable") {
            return s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Replays `file` into a fresh veth at `pps` while `tapstat -i vb <extra>` captures;
/// stops tapstat with SIGINT and returns its output directory.
pub fn capture(tag: &str, file: &Path, pps: u32, workers: usize, extra: &[&str]) -> TestDir {
    capture_from(tag, file, pps, &["-i", "vb"], workers, extra)
}

/// [`capture`] with tapstat reading from `source` (`-i vb`, `--dpdk '... iface=vb ...'`).
pub fn capture_from(tag: &str, file: &Path, pps: u32, source: &[&str], workers: usize, extra: &[&str]) -> TestDir {
    // One capture at a time (`Netns` holds the binary's lock).
    let ns = Netns::new(tag);
    let out = tempdir(&format!("live-{tag}"));
    let w = workers.to_string();
    let mut args = vec![bin()];
    args.extend_from_slice(source);
    args.extend_from_slice(&["-o", out.to_str().unwrap(), "-q", "-w", &w, "--hash-seed", "7"]);
    // The default kernel ring (64 blocks of 1 MiB): at a test's low rate the kernel
    // retires each block after 10 ms half empty, so the ring covers blocks x 10 ms of a
    // reader not scheduled. 8 blocks (80 ms) dropped once with four polling threads on
    // two cores; 64 cover 640 ms.
    args.extend_from_slice(&["--buffer", "16MiB", "--kernel-ring", "64MiB", "--stats-interval", "200ms"]);
    args.extend_from_slice(&NO_TIMEOUTS);
    args.extend_from_slice(extra);
    let mut tap = ns.cmd(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("tapstat starts");
    wait_started(&mut tap, &out);
    tcpreplay(&ns, file, pps);
    // Let the last block time out of the kernel ring (10 ms) and through the buffer: wait
    // until the frames received (stats.jsonl, every 200 ms) stop growing for half a
    // second. A fixed pause was too short on a loaded machine: the run was stopped with
    // frames still in the ring, and flows came out short.
    let (t0, mut last) = (Instant::now(), u64::MAX);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = received(&out);
        if now == last || t0.elapsed() > Duration::from_secs(30) {
            break;
        }
        last = now;
    }
    run(Command::new("kill").args(["-INT", &tap.id().to_string()]));
    let s = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat -i after SIGINT");
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(tap.stderr.as_mut().unwrap(), &mut err);
    assert!(s.success(), "tapstat -i failed: {err}");
    out
}

/// Replays `file` into the namespace's `va` at `pps` packets a second, and waits for
/// the replay to end (at most 120 s).
pub fn tcpreplay(ns: &Netns, file: &Path, pps: u32) {
    let pps = pps.to_string();
    let mut r = ns
        .cmd(&["tcpreplay", "-q", "-i", "va", "--pps", &pps, file.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tcpreplay starts");
    assert!(wait_timeout(&mut r, Duration::from_secs(120), "tcpreplay").success(), "tcpreplay failed");
}

/// Waits until live tapstat `tap` writing to `out` has its sockets open (and queuing
/// frames): once its stats file exists. Panics with its stderr if it exits first.
pub fn wait_started(tap: &mut Child, out: &Path) {
    let t0 = Instant::now();
    while !out.join("stats.jsonl").exists() {
        if let Some(s) = tap.try_wait().expect("waitable") {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(tap.stderr.as_mut().unwrap(), &mut err);
            panic!("tapstat exited early ({s}): {err}");
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "tapstat did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Frames received by every worker so far (the `rx_packets` of stats.jsonl's lines:
/// one per worker per interval).
pub fn received(out: &Path) -> u64 {
    let text = std::fs::read_to_string(out.join("stats.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["rx_packets"].as_u64())
        .sum()
}

/// The flows of a log as a multiset of (endpoints, packets and bytes each way).
pub fn flows(dir: &Path, log: &str) -> BTreeMap<String, usize> {
    let keys = ["c_ip", "c_port", "s_ip", "s_port", "proto", "c_pkts_all", "s_pkts_all", "c_bytes_all", "s_bytes_all"];
    let mut m = BTreeMap::new();
    for r in read_log(dir, log) {
        let k: Vec<String> = keys.iter().filter_map(|c| r.get(*c).cloned()).collect();
        *m.entry(k.join(" ")).or_insert(0) += 1;
    }
    m
}

pub fn reference(file: &Path, tag: &str, extra: &[&str]) -> TestDir {
    let out = tempdir(&format!("ref-{tag}"));
    let mut args = vec!["-r", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "-w", "1", "--hash-seed", "7"];
    args.extend_from_slice(&NO_TIMEOUTS);
    args.extend_from_slice(extra);
    let o = Command::new(bin()).args(&args).output().expect("tapstat runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}
