//! Helpers shared by the integration tests: the corpus, running the binary, reading
//! its logs.
#![allow(dead_code)]

pub mod clickhouse;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod live;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The shared corpus (`TAPSTAT_CORPUS`, default `../shared/pcaps/dev` beside the
/// workspace). `None` (with the reason printed) when it is absent, unless
/// `TAPSTAT_REQUIRE_CORPUS=1`, in which case its absence fails the test.
pub fn corpus() -> Option<PathBuf> {
    let p = std::env::var_os("TAPSTAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/pcaps/dev")));
    if p.join("MANIFEST.tsv").is_file() {
        return Some(p);
    }
    if std::env::var("TAPSTAT_REQUIRE_CORPUS").as_deref() == Ok("1") {
        panic!("TAPSTAT_REQUIRE_CORPUS=1 but no corpus at {}", p.display());
    }
    eprintln!("skipped: no corpus at {} (set TAPSTAT_CORPUS)", p.display());
    None
}

/// The dev captures (not the malformed ones), sorted by name.
pub fn dev_captures(corpus: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus)
        .expect("corpus is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "pcap" || e == "pcapng" || e == "cap"))
        .collect();
    v.sort();
    v
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_tapstat")
}

/// Runs tapstat with `args`.
pub fn tapstat(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("tapstat runs")
}

/// Runs tapstat with `args`, failing the test (the process killed) if it has not ended
/// within `secs` seconds: for inputs that must be refused at once, not hang.
pub fn tapstat_within(args: &[&str], secs: u64) -> Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tapstat runs");
    // Drained as it runs: a child writing more than a pipe holds must not stall on it.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tapstat {args:?} still running after {secs} s (killed)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output { status, stdout: out.join().expect("stdout"), stderr: err.join().expect("stderr") }
}

/// A fresh temporary directory for one test, removed when the returned guard is dropped,
/// unless the test is failing (then it is kept, and its path printed, for a look at what
/// the run wrote). Bind the guard (`let d = tempdir(..)`): `tempdir(..).join(..)` drops it,
/// and the directory with it, at the end of the statement.
#[must_use = "the directory is removed when this guard is dropped"]
pub fn tempdir(tag: &str) -> TestDir {
    let d = std::env::temp_dir().join(format!("tapstat-test-{}-{}", std::process::id(), tag));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    TestDir(d)
}

/// A test's temporary directory (see [`tempdir`]); derefs to its path.
#[derive(Debug)]
pub struct TestDir(PathBuf);

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TestDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for a look: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Runs `tapstat -r FILE -o DIR -q -w N` and panics with its stderr on failure.
pub fn analyze(file: &Path, out: &Path, workers: usize, extra: &[&str]) -> Output {
    let w = workers.to_string();
    let mut args = vec!["-r", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "-w", &w, "--hash-seed", "7"];
    args.extend_from_slice(extra);
    let o = tapstat(&args);
    assert!(o.status.success(), "tapstat failed on {}: {}", file.display(), String::from_utf8_lossy(&o.stderr));
    o
}

/// The records of a TSV log as maps column -> value, with `-` for an empty field (no
/// value), the placeholder the comparisons with other tools spell absence with.
pub fn read_log(dir: &Path, log: &str) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(dir.join(log)).unwrap_or_default();
    let mut lines = text.lines();
    let Some(header) = lines.next() else { return Vec::new() };
    let cols: Vec<&str> = header.split('\t').collect();
    lines
        .map(|l| {
            cols.iter()
                .zip(l.split('\t'))
                .map(|(c, v)| (c.to_string(), if v.is_empty() { "-" } else { v }.to_string()))
                .collect()
        })
        .collect()
}

/// The raw lines of a log, header excluded, sorted (a record set).
pub fn record_set(dir: &Path, log: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(log)).unwrap_or_default();
    let mut v: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
    v.sort();
    v
}

pub const LOGS: [&str; 4] = ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete", "log_other"];

/// The application layer's logs (written when it is on, the default).
pub const L7_LOGS: [&str; 2] = ["log_http_complete", "log_dns_complete"];

/// Is tshark installed? `false` (with the reason printed) where it is not, unless
/// `TAPSTAT_REQUIRE_TSHARK=1`, in which case its absence fails the test.
pub fn tshark_ready() -> bool {
    if Command::new("tshark").arg("-v").output().is_ok() {
        return true;
    }
    assert!(std::env::var("TAPSTAT_REQUIRE_TSHARK").as_deref() != Ok("1"), "TAPSTAT_REQUIRE_TSHARK=1 but no tshark");
    eprintln!("skipped: tshark is not installed");
    false
}

/// Is the openssl command there? `false` (with the reason printed) where it is not,
/// unless `TAPSTAT_REQUIRE_OPENSSL=1`, in which case its absence fails the test.
pub fn openssl_ready() -> bool {
    ready(
        Command::new("openssl").arg("version").output().is_ok_and(|o| o.status.success()),
        "TAPSTAT_REQUIRE_OPENSSL",
        "openssl is not installed",
    )
}

pub fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary.json")).expect("json")
}

/// Is an external tool a test needs there (`found`)? `false`, with `missing` printed as
/// the reason the test is skipped, where it is not, unless the environment sets `var`
/// to 1 (as .ci/run does after installing it), in which case its absence fails the test.
pub fn ready(found: bool, var: &str, missing: &str) -> bool {
    if found {
        return true;
    }
    assert!(std::env::var(var).as_deref() != Ok("1"), "{var}=1 but {missing}");
    eprintln!("skipped: {missing}");
    false
}

/// Does python3 import `modules` (a comma-separated list)?
pub fn python_has(modules: &str) -> bool {
    Command::new("python3").args(["-c", &format!("import {modules}")]).output().is_ok_and(|o| o.status.success())
}

/// Are python3, pandas and DuckDB there? `false` (with the reason printed) where they
/// are not, unless `TAPSTAT_REQUIRE_PYTHON=1`, in which case their absence fails the test.
pub fn python_ready() -> bool {
    ready(
        python_has("pandas, duckdb"),
        "TAPSTAT_REQUIRE_PYTHON",
        "python3 with pandas and duckdb is missing (pip install pandas duckdb)",
    )
}

/// Is chromium installed? `false` (with the reason printed) where it is not, unless
/// `TAPSTAT_REQUIRE_CHROMIUM=1`, in which case its absence fails the test.
pub fn chromium_ready() -> bool {
    let ok = Command::new("chromium").arg("--version").output().is_ok_and(|o| o.status.success());
    ready(ok, "TAPSTAT_REQUIRE_CHROMIUM", "chromium is not installed (apt-get install chromium)")
}

/// The list columns (`list`, `strings`) of each log, from `tapstat schema --format json`.
pub fn list_columns() -> BTreeMap<String, HashSet<String>> {
    let o = tapstat(&["schema", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut m = BTreeMap::new();
    for log in v["logs"].as_array().unwrap() {
        let cols: HashSet<String> = log["columns"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["type"] == "list" || c["type"] == "strings")
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        m.insert(log["name"].as_str().unwrap().to_string(), cols);
    }
    let tcp = m["log_tcp_complete"].clone();
    m.insert("log_tcp_nocomplete".into(), tcp);
    m
}

/// A small synthetic capture (`tapstat synth`'s generator: `tcp_flows` TCP and
/// `udp_dns_flows` DNS flows, no bulk flows) written as `dir/small.pcap`.
pub fn synth_sample(dir: &Path, seed: u64, tcp_flows: usize, udp_dns_flows: usize) -> PathBuf {
    use tapstat_lab::synth::{synthesize, SynthConfig};
    let cfg = SynthConfig { seed, tcp_flows, udp_dns_flows, bulk_flows: 0, ..Default::default() };
    let (bytes, _) = synthesize(&cfg);
    let p = dir.join("small.pcap");
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Whether this test runs as root (tests that chown to another user need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A small tmpfs mounted at a directory for a test, unmounted when dropped.
pub struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// `None` (with the reason printed) where mounting needs a privilege we lack.
    pub fn mount(at: &std::path::Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let o = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", at.to_str().unwrap()])
            .output();
        match o {
            Ok(o) if o.status.success() => Some(Tmpfs(at.to_path_buf())),
            Ok(o) => {
                eprintln!("skipped: cannot mount a tmpfs: {}", String::from_utf8_lossy(&o.stderr).trim());
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount: {e}");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).output();
    }
}

/// A run stopped by a full disk: it failed (status 1), the first line on stderr names
/// the log whose write failed with ENOSPC and the records lost. Gives stderr and that
/// count.
pub fn full_disk_failure(o: &Output) -> (String, u64) {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(first.contains("No space left on device") && first.contains("/log_"), "{err}");
    let lost = first
        .split(", ")
        .find_map(|p| p.strip_suffix(" record(s) were not written"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of lost records in the first line: {err}"));
    (err, lost)
}
