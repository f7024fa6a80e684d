//! IPFIX export against nfdump's collector, `nfcapd`: for every dev
//! capture, the flows, packets and bytes nfdump reads back equal tapstat's logs, flow by
//! flow, each way, over UDP and over TCP.
//!
//! nfcapd 1.7 listens on UDP only, so the TCP test puts a relay in between: it accepts
//! tapstat's TCP connection, checks every message (version, length, observation domain,
//! a sequence number without gap), decodes every record with the templates it was sent
//! (every field, tapstat's own elements included, compared with the logs) and passes
//! each message on to nfcapd as one datagram.
//!
//! nfdump 1.7.1 maps RFC 5103's reverse octet and packet counts onto its `out_bytes`
//! and `out_packets`; it keeps no other reverse element (the reverse TCP flags among
//! them) and skips the enterprise-specific ones.
//!
//! Skipped (with the reason printed) where nfcapd is not installed, unless
//! `TAPSTAT_REQUIRE_NFDUMP=1`.

mod common;
use common::live::{live_ready, tcpreplay, wait_started, wait_timeout, Netns};
use common::*;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Are nfcapd and nfdump installed? `false` (with the reason printed) where they are
/// not, unless `TAPSTAT_REQUIRE_NFDUMP=1`.
fn nfdump_ready() -> bool {
    let ok = |cmd: &str| Command::new(cmd).arg("-V").output().is_ok_and(|o| o.status.success());
    ready(ok("nfcapd") && ok("nfdump"), "TAPSTAT_REQUIRE_NFDUMP", "nfcapd or nfdump is missing (Debian package nfdump)")
}

/// The kernel's state of the UDP socket bound to 127.0.0.1:`port` in the network
/// namespace of process `pid`: (bytes waiting, datagrams dropped), from its
/// /proc/PID/net/udp.
fn udp_socket_state(pid: u32, port: u16) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/udp")).ok()?;
    let want = format!("0100007F:{port:04X}");
    text.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(1) != Some(&want.as_str()) {
            return None;
        }
        let rx = u64::from_str_radix(f.get(4)?.split(':').nth(1)?, 16).ok()?;
        let drops = f.last()?.parse().ok()?;
        Some((rx, drops))
    })
}

/// nfcapd on a free UDP port of 127.0.0.1, writing into its own directory.
struct Nfcapd {
    child: Child,
    port: u16,
    dir: PathBuf,
    /// The directory of `dir` and nfcapd's log: removed with the collector, or handed
    /// out by [`Nfcapd::stop`] with the files.
    root: Option<TestDir>,
}

impl Nfcapd {
    /// nfcapd in this network namespace.
    fn start(tag: &str) -> Nfcapd {
        Nfcapd::start_in(None, tag)
    }

    /// nfcapd in network namespace `ns` (none: this one).
    fn start_in(ns: Option<&Netns>, tag: &str) -> Nfcapd {
        let root = tempdir(tag);
        let dir = root.join("flows");
        std::fs::create_dir_all(&dir).unwrap();
        let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        // A receive buffer as large as the kernel allows (4 MiB asked): a run's
        // datagrams come in one burst.
        let log = std::fs::File::create(root.join("nfcapd.log")).unwrap();
        let port_s = port.to_string();
        let args = ["nfcapd", "-b", "127.0.0.1", "-p", &port_s, "-w", dir.to_str().unwrap(), "-B", "4194304"];
        let mut cmd = match ns {
            // `ip netns exec` execs nfcapd: the child's pid is nfcapd's.
            Some(ns) => ns.cmd(&args),
            None => {
                let mut c = Command::new(args[0]);
                c.args(&args[1..]);
                c
            }
        };
        let child = cmd.stdout(log.try_clone().unwrap()).stderr(log).spawn().expect("nfcapd starts");
        let t0 = Instant::now();
        while udp_socket_state(child.id(), port).is_none() {
            assert!(t0.elapsed() < Duration::from_secs(10), "nfcapd did not bind 127.0.0.1:{port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Nfcapd { child, port, dir, root: Some(root) }
    }

    /// Bytes waiting in nfcapd's socket and datagrams it dropped.
    fn socket(&self) -> Option<(u64, u64)> {
        udp_socket_state(self.child.id(), self.port)
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Waits until nfcapd has read every datagram sent to it.
    fn drain(&self) {
        let t0 = Instant::now();
        while self.socket().is_some_and(|(rx, _)| rx > 0) && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops nfcapd with SIGTERM (it then writes and renames its file) and returns the
    /// directory of its files, with the guard of the directory above it.
    fn stop(mut self) -> (TestDir, PathBuf) {
        self.drain();
        let drops = self.socket().map_or(0, |s| s.1);
        assert_eq!(
            drops, 0,
            "nfcapd's socket dropped {drops} datagram(s): its receive buffer was too small (net.core.rmem_max)"
        );
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let t0 = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            assert!(t0.elapsed() < Duration::from_secs(20), "nfcapd did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
        (self.root.take().expect("stopped once"), self.dir.clone())
    }
}

impl Drop for Nfcapd {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Epoch milliseconds of nfdump's UTC time `2016-08-02T02:19:41.895`.
fn epoch_ms(s: &str) -> u64 {
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    (secs * 1000 + n(20..23)) as u64
}

/// A flow as nfdump reads it (or as the logs have it): the key, then the counts.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct NfFlow {
    proto: u8,
    src: IpAddr,
    sport: u16,
    dst: IpAddr,
    dport: u16,
    first_ms: u64,
    last_ms: u64,
    in_pkts: u64,
    in_bytes: u64,
    out_pkts: u64,
    out_bytes: u64,
}

/// nfdump's flows (with their TCP flags) by observation domain.
type ByDomain = HashMap<u32, Vec<(NfFlow, u8)>>;

/// A flow's 5-tuple and start (ms): its key in both outputs.
type Key = (u8, IpAddr, u16, IpAddr, u16, u64);

/// Every flow in nfcapd's files, by exporter (observation domain), and the sequence
/// failures nfcapd counted for each exporter.
fn read_nfdump(dir: &Path) -> (ByDomain, HashMap<u32, u64>) {
    // Exporters: sysid → observation domain, with their sequence failures.
    let mut domain_of = HashMap::new();
    let mut seq_failures = HashMap::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(!files.is_empty(), "nfcapd wrote no file in {}", dir.display());
    for f in &files {
        let o = Command::new("nfdump").arg("-E").arg(f).output().expect("nfdump runs");
        for l in String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.starts_with("SysID:")) {
            // `SysID: 1, IP: 127.0.0.1, version: 10, ID: 1, Sequence failures: 0, ...`
            let l = format!(", {l}");
            let field = |name: &str| -> u64 {
                let v = l.split(&format!(", {name}:")).nth(1).and_then(|v| v.split(',').next()).map(str::trim);
                v.and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("nfdump -E {}: no number for {name:?} in {l:?}", f.display()))
            };
            domain_of.insert(field("SysID"), field("ID") as u32);
            *seq_failures.entry(field("ID") as u32).or_insert(0) += field("Sequence failures");
        }
    }
    let o = Command::new("nfdump")
        .env("TZ", "UTC")
        .args(["-R", dir.to_str().unwrap(), "-o", "json"])
        .output()
        .expect("nfdump runs");
    assert!(o.status.success(), "nfdump: {}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = if text.trim().is_empty() {
        serde_json::Value::Array(Vec::new())
    } else {
        serde_json::from_str(&text).expect("nfdump's JSON")
    };
    let mut by_domain = ByDomain::new();
    for r in v.as_array().unwrap() {
        let u = |k: &str| r.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
        let ip = |v4: &str, v6: &str| -> IpAddr {
            r.get(v4).or_else(|| r.get(v6)).and_then(|x| x.as_str()).unwrap().parse().unwrap()
        };
        let flags = r
            .get("tcp_flags")
            .and_then(|x| x.as_str())
            .map_or(0, |s| s.bytes().enumerate().filter(|(_, c)| *c != b'.').fold(0u8, |a, (i, _)| a | (0x80 >> i)));
        let f = NfFlow {
            proto: u("proto") as u8,
            src: ip("src4_addr", "src6_addr"),
            sport: u("src_port") as u16,
            dst: ip("dst4_addr", "dst6_addr"),
            dport: u("dst_port") as u16,
            first_ms: epoch_ms(r["first"].as_str().unwrap()),
            last_ms: epoch_ms(r["last"].as_str().unwrap()),
            in_pkts: u("in_packets"),
            in_bytes: u("in_bytes"),
            out_pkts: u("out_packets"),
            out_bytes: u("out_bytes"),
        };
        let d = *domain_of.get(&u("export_sysid")).expect("every record's exporter is listed");
        by_domain.entry(d).or_default().push((f, flags));
    }
    (by_domain, seq_failures)
}

/// A logs' number (`-` for none) as an integer.
fn num(row: &BTreeMap<String, String>, col: &str) -> u64 {
    match row.get(col).map(String::as_str) {
        None | Some("-") => 0,
        Some(v) => v.parse().unwrap_or_else(|_| panic!("{col} = {v:?}")),
    }
}

/// A logs' time in ms with 3 decimals, as integer milliseconds (cut) and microseconds.
fn ms_us(row: &BTreeMap<String, String>, col: &str) -> (u64, u64) {
    let v = row.get(col).map_or("-", String::as_str);
    if v == "-" {
        return (0, 0);
    }
    let (int, frac) = v.split_once('.').unwrap_or((v, "0"));
    let us = int.parse::<u64>().unwrap() * 1000 + format!("{frac:0<3}")[..3].parse::<u64>().unwrap();
    (us / 1000, us)
}

/// A logs' string, unescaped (`-` for none is the empty string).
fn text(row: &BTreeMap<String, String>, col: &str) -> String {
    let v = row.get(col).map_or("-", String::as_str);
    if v == "-" {
        return String::new();
    }
    tapstat_record::tsv::unescape(v)
}

/// Every record of a run's four flow logs, with its IP protocol.
fn log_rows(out: &Path) -> Vec<(u8, BTreeMap<String, String>)> {
    let mut v = Vec::new();
    for log in LOGS {
        for r in read_log(out, log) {
            let proto = match log {
                "log_tcp_complete" | "log_tcp_nocomplete" => 6,
                "log_udp_complete" => 17,
                _ => num(&r, "proto") as u8,
            };
            v.push((proto, r));
        }
    }
    v
}

/// The flow nfdump must read for log record `r`: ports only for TCP and UDP flows
/// (log_other has none), bytes as on the wire.
fn expected(proto: u8, r: &BTreeMap<String, String>) -> NfFlow {
    let port = |c: &str| if r.contains_key("c_port") { num(r, c) as u16 } else { 0 };
    NfFlow {
        proto,
        src: r["c_ip"].parse().unwrap(),
        sport: port("c_port"),
        dst: r["s_ip"].parse().unwrap(),
        dport: port("s_port"),
        first_ms: ms_us(r, "first").0,
        last_ms: ms_us(r, "last").0,
        in_pkts: num(r, "c_pkts_all"),
        in_bytes: num(r, "c_bytes_wire"),
        out_pkts: num(r, "s_pkts_all"),
        out_bytes: num(r, "s_bytes_wire"),
    }
}

/// The TCP flags a side's counters say its segments carried (FIN, SYN, RST, ACK).
fn flags_of_counts(r: &BTreeMap<String, String>, side: &str) -> u8 {
    let has = |c: &str| num(r, &format!("{side}_{c}")) > 0;
    (has("fin_cnt") as u8) | (has("syn_cnt") as u8) << 1 | (has("rst_cnt") as u8) << 2 | (has("ack_cnt") as u8) << 4
}

// ---------------------------------------------------------------------------------
// The TCP relay: checks and decodes every message, passes it on to nfcapd.

/// A decoded field: a number, or bytes (addresses, strings).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    U(u64),
    B(Vec<u8>),
}

/// A decoded data record: (enterprise number, element id) → value.
type Rec = HashMap<(u32, u16), Val>;

/// What the relay saw on one connection: the observation domain and the records.
#[derive(Debug, Default)]
struct Session {
    domain: u32,
    records: Vec<Rec>,
    messages: u64,
    max_message: usize,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// Reads one message; `None` at the end of the stream (between messages only).
fn read_message(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = [0u8; 16];
    let mut got = 0;
    while got < 16 {
        let n = s.read(&mut head[got..]).expect("reading the stream");
        if n == 0 {
            assert_eq!(got, 0, "the stream ended inside a message header");
            return None;
        }
        got += n;
    }
    assert_eq!(be16(&head, 0), 10, "IPFIX version");
    let len = be16(&head, 2) as usize;
    assert!(len >= 16, "message length {len}");
    let mut m = head.to_vec();
    m.resize(len, 0);
    s.read_exact(&mut m[16..]).expect("the whole message");
    Some(m)
}

/// Decodes the sets of message `m` with (and into) `templates`; appends its data
/// records to `out`; returns how many.
fn decode(m: &[u8], templates: &mut HashMap<u16, Vec<(u32, u16, u16)>>, out: &mut Vec<Rec>) -> u32 {
    let mut n = 0;
    let mut at = 16;
    while at < m.len() {
        let (id, len) = (be16(m, at), be16(m, at + 2) as usize);
        assert!(len >= 4 && at + len <= m.len(), "set {id} of length {len} at {at} in a message of {}", m.len());
        let set = &m[at + 4..at + len];
        if id == 2 {
            let mut p = 0;
            while p + 4 <= set.len() {
                let (tid, count) = (be16(set, p), be16(set, p + 2));
                p += 4;
                let mut fields = Vec::new();
                for _ in 0..count {
                    let (ie, flen) = (be16(set, p), be16(set, p + 2));
                    p += 4;
                    let pen = if ie & 0x8000 != 0 {
                        p += 4;
                        be32(set, p - 4)
                    } else {
                        0
                    };
                    fields.push((pen, ie & 0x7fff, flen));
                }
                templates.insert(tid, fields);
            }
        } else {
            assert!(id >= 256, "set id {id}");
            let t = templates.get(&id).unwrap_or_else(|| panic!("data set {id} before its template"));
            let mut p = 0;
            while p < set.len() {
                let mut r = Rec::new();
                for &(pen, ie, flen) in t {
                    let len = if flen == 0xffff {
                        let l = set[p] as usize;
                        p += 1;
                        if l == 255 {
                            p += 2;
                            be16(set, p - 2) as usize
                        } else {
                            l
                        }
                    } else {
                        flen as usize
                    };
                    let b = &set[p..p + len];
                    p += len;
                    let v = if flen != 0xffff && len <= 8 && !matches!(ie, 8 | 12 if pen == 0) {
                        Val::U(b.iter().fold(0u64, |a, &x| a << 8 | x as u64))
                    } else {
                        Val::B(b.to_vec())
                    };
                    r.insert((pen, ie), v);
                }
                out.push(r);
                n += 1;
            }
        }
        at += len;
    }
    n
}

/// The relay: one connection at a time (each tapstat run opens one), until `stop`.
fn relay(l: TcpListener, to: SocketAddr, nfcapd: (u32, u16), stop: Arc<AtomicBool>) -> Vec<Session> {
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sessions = Vec::new();
    for c in l.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let mut c = c.unwrap();
        let mut s = Session::default();
        let mut templates = HashMap::new();
        let mut seq = 0u32;
        while let Some(m) = read_message(&mut c) {
            let (msg_seq, domain) = (be32(&m, 8), be32(&m, 12));
            if s.messages == 0 {
                s.domain = domain;
            }
            assert_eq!(domain, s.domain, "one observation domain per session");
            assert_eq!(msg_seq, seq, "sequence number of message {} of domain {domain}", s.messages);
            seq = seq.wrapping_add(decode(&m, &mut templates, &mut s.records));
            s.messages += 1;
            s.max_message = s.max_message.max(m.len());
            // On to nfcapd, one datagram per message, at the pace it reads them.
            assert_eq!(udp.send_to(&m, to).unwrap(), m.len());
            let t0 = Instant::now();
            while udp_socket_state(nfcapd.0, nfcapd.1).is_some_and(|(rx, _)| rx > 0)
                && t0.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        sessions.push(s);
    }
    sessions
}

/// Checks a record the relay decoded against its log record, every field.
fn check_decoded(rec: &Rec, proto: u8, row: &BTreeMap<String, String>, what: &str) {
    let u = |pen: u32, ie: u16| match rec.get(&(pen, ie)) {
        Some(Val::U(x)) => *x,
        other => panic!("{what}: element {pen}/{ie} is {other:?}"),
    };
    let s = |pen: u32, ie: u16| match rec.get(&(pen, ie)) {
        Some(Val::B(b)) => String::from_utf8(b.clone()).unwrap(),
        None => String::new(),
        other => panic!("{what}: element {pen}/{ie} is {other:?}"),
    };
    let addr = |v4: u16, v6: u16| -> IpAddr {
        match rec.get(&(0, v4)).or_else(|| rec.get(&(0, v6))) {
            Some(Val::B(b)) if b.len() == 4 => IpAddr::from(<[u8; 4]>::try_from(&b[..]).unwrap()),
            Some(Val::B(b)) if b.len() == 16 => IpAddr::from(<[u8; 16]>::try_from(&b[..]).unwrap()),
            other => panic!("{what}: address {other:?}"),
        }
    };
    const R: u32 = 29305;
    const T: u32 = 32473;
    let e = expected(proto, row);
    assert_eq!((addr(8, 27), addr(12, 28)), (e.src, e.dst), "{what}: addresses");
    assert_eq!(u(0, 4), proto as u64, "{what}: protocol");
    assert_eq!((u(0, 152), u(0, 153)), (e.first_ms, e.last_ms), "{what}: times");
    assert_eq!(
        (u(0, 2), u(0, 1), u(R, 2), u(R, 1)),
        (e.in_pkts, e.in_bytes, e.out_pkts, e.out_bytes),
        "{what}: counts"
    );
    assert_eq!(u(T, 1), u64::from_str_radix(&row["flow_id"], 16).unwrap(), "{what}: flow id");
    let reason = match row["end_reason"].as_str() {
        "idle" => 1,
        "fin" | "rst" | "syn_reuse" => 3,
        "end_of_input" | "interrupted" => 4,
        "evicted" => 5,
        r => panic!("{what}: end_reason {r}"),
    };
    assert_eq!(u(0, 136), reason, "{what}: flowEndReason");
    let initiator =
        if row.get("client_rule").map(String::as_str) == Some("first_packet") && proto == 6 { 0 } else { 1 };
    assert_eq!(u(0, 239), initiator, "{what}: biflowDirection");
    if !row.contains_key("c_port") {
        // log_other: the template without ports, TCP or application fields.
        assert!(rec.get(&(0, 7)).is_none() && rec.get(&(T, 4)).is_none(), "{what}: other template");
        return;
    }
    assert_eq!((u(0, 7), u(0, 11)), (e.sport as u64, e.dport as u64), "{what}: ports");
    let rtt = |c: &str| ms_us(row, c).1;
    assert_eq!(
        (u(T, 2), u(T, 0x4002), u(T, 3), u(T, 0x4003)),
        (num(row, "c_pkts_retx"), num(row, "s_pkts_retx"), rtt("c_rtt_avg"), rtt("s_rtt_avg")),
        "{what}: retransmissions and RTT"
    );
    if proto == 6 {
        // Every flag the counters saw, and only those among FIN, SYN, RST, ACK.
        for (ie, pen, side) in [(6, 0, "c"), (6, R, "s")] {
            assert_eq!(u(pen, ie) as u8 & 0x17, flags_of_counts(row, side), "{what}: {side} flags");
        }
    } else {
        assert_eq!((u(0, 6), u(R, 6)), (0, 0), "{what}: UDP has no flags");
    }
    let sni =
        ["c_tls_SNI", "quic_SNI", "dtls_SNI"].iter().map(|c| text(row, c)).find(|t| !t.is_empty()).unwrap_or_default();
    assert_eq!(
        (s(T, 4), s(T, 5), s(T, 6)),
        (text(row, "app"), sni, text(row, "fqdn")),
        "{what}: application, server name, resolved name"
    );
}

// ---------------------------------------------------------------------------------

/// Compares the flows nfdump read (`got`, with their TCP flags) with a run's log
/// records: the same multiset of (5-tuple, start, end, packets and bytes each way), no
/// sequence failure, and the forward TCP flags those the counters saw. Returns the
/// flows, packets and bytes compared.
fn compare(
    what: &str,
    rows: &[(u8, BTreeMap<String, String>)],
    got: &[(NfFlow, u8)],
    seq: Option<u64>,
) -> (usize, u64, u64) {
    let mut want: Vec<NfFlow> = rows.iter().map(|(p, r)| expected(*p, r)).collect();
    let mut flows: Vec<NfFlow> = got.iter().map(|(f, _)| f.clone()).collect();
    want.sort();
    flows.sort();
    if want != flows {
        let missing: Vec<_> = want.iter().filter(|f| !flows.contains(f)).take(5).collect();
        let extra: Vec<_> = flows.iter().filter(|f| !want.contains(f)).take(5).collect();
        panic!(
            "{what}: nfdump read {} flows, the logs have {}; in the logs only: {missing:#?}; in nfdump only: {extra:#?}",
            flows.len(),
            want.len()
        );
    }
    assert_eq!(seq.unwrap_or(0), 0, "{what}: nfcapd's sequence failures");
    // nfdump keeps the forward TCP flags (tcpControlBits): those the counters saw.
    let by_key: HashMap<Key, &BTreeMap<String, String>> = rows
        .iter()
        .filter(|(p, r)| *p == 6 && r.contains_key("c_port"))
        .map(|(p, r)| {
            let e = expected(*p, r);
            ((*p, e.src, e.sport, e.dst, e.dport, e.first_ms), r)
        })
        .collect();
    for (f, fl) in got {
        if let Some(r) = by_key.get(&(f.proto, f.src, f.sport, f.dst, f.dport, f.first_ms)) {
            assert_eq!(fl & 0x17, flags_of_counts(r, "c"), "{what}: flags of {f:?}");
        }
    }
    let pkts = flows.iter().map(|f| f.in_pkts + f.out_pkts).sum();
    let bytes = flows.iter().map(|f| f.in_bytes + f.out_bytes).sum();
    (flows.len(), pkts, bytes)
}

/// One test of this file at a time: each runs tapstat many times (or captures live),
/// and the machine may have 2 cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs tapstat with `--ipfix` over every dev capture (each with an observation domain
/// of its own: its index plus one), then compares what nfdump reads with the logs,
/// capture by capture, flow by flow (and, over TCP, what the relay decoded).
fn export_corpus(transport: &str) {
    let Some(corpus) = corpus() else { return };
    if !nfdump_ready() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let caps = dev_captures(&corpus);
    let nf = Nfcapd::start(&format!("nfcapd-{transport}"));
    let stop = Arc::new(AtomicBool::new(false));
    let (target, relay_thread) = if transport == "tcp" {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (to, port, stop) = (nf.addr(), (nf.child.id(), nf.port), stop.clone());
        (addr, Some(std::thread::spawn(move || relay(l, to, port, stop))))
    } else {
        (nf.addr(), None)
    };
    let target = target.to_string();
    let work = tempdir(&format!("ipfix-{transport}"));
    let mut outs = Vec::new();
    for (i, cap) in caps.iter().enumerate() {
        let out = work.join(format!("{i}"));
        let domain = (i + 1).to_string();
        // Two workers on every other capture: the records of several workers meet in
        // the exporter.
        let w = if i % 2 == 0 { 1 } else { 2 };
        analyze(cap, &out, w, &["--ipfix", &target, "--ipfix-transport", transport, "--ipfix-domain", &domain]);
        let s = summary(&out);
        let x = &s["ipfix"];
        let rows = log_rows(&out).len() as u64;
        assert_eq!(x["records"].as_u64(), Some(rows), "{}: records sent: {x}", cap.display());
        assert_eq!(
            (x["records_lost"].as_u64(), x["send_errors"].as_u64()),
            (Some(0), Some(0)),
            "{}: {x}",
            cap.display()
        );
        assert_eq!(x["transport"], transport);
        outs.push(out);
        if transport == "udp" {
            // One run's burst at a time.
            nf.drain();
        }
    }
    let sessions = relay_thread.map(|h| {
        stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&target);
        h.join().expect("the relay")
    });
    let (_files, dir) = nf.stop();
    let (by_domain, seq_failures) = read_nfdump(&dir);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());

    let (mut flows, mut pkts, mut bytes, mut decoded) = (0usize, 0u64, 0u64, 0usize);
    for (i, (cap, out)) in caps.iter().zip(&outs).enumerate() {
        let domain = i as u32 + 1;
        let rows = log_rows(out);
        let got = by_domain.get(&domain).cloned().unwrap_or_default();
        let (f, p, b) = compare(&cap.display().to_string(), &rows, &got, seq_failures.get(&domain).copied());
        (flows, pkts, bytes) = (flows + f, pkts + p, bytes + b);
        if let Some(sessions) = &sessions {
            // What the relay decoded: every field of every record.
            let recs: Vec<&Rec> = sessions.iter().filter(|s| s.domain == domain).flat_map(|s| &s.records).collect();
            assert_eq!(recs.len(), rows.len(), "{}: records decoded", cap.display());
            let by_id: HashMap<u64, &(u8, BTreeMap<String, String>)> =
                rows.iter().map(|r| (u64::from_str_radix(&r.1["flow_id"], 16).unwrap(), r)).collect();
            assert_eq!(by_id.len(), rows.len(), "{}: flow ids are unique", cap.display());
            for rec in recs {
                let Some(Val::U(id)) = rec.get(&(32473, 1)) else { panic!("no flow id in {rec:?}") };
                let (p, row) = by_id[id];
                check_decoded(rec, *p, row, &format!("{}: flow {id:016x}", cap.display()));
                decoded += 1;
            }
        }
    }
    if let Some(sessions) = &sessions {
        let max = sessions.iter().map(|s| s.max_message).max().unwrap_or(0);
        assert!(max <= 65_000, "a TCP message of {max} bytes");
        eprintln!(
            "tcp: {} sessions, {} messages, largest {max} bytes",
            sessions.len(),
            sessions.iter().map(|s| s.messages).sum::<u64>()
        );
    }
    eprintln!(
        "{transport}: {} captures; nfdump read {flows} flows, {pkts} packets, {bytes} bytes, equal to the logs{}",
        caps.len(),
        if sessions.is_some() { format!("; {decoded} records decoded field by field") } else { String::new() }
    );
    assert!(flows > 1000, "the corpus has flows");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn udp_export_equals_the_logs_in_nfdump() {
    export_corpus("udp");
}

#[test]
fn tcp_export_equals_the_logs_in_nfdump_and_decodes_field_by_field() {
    export_corpus("tcp");
}

/// Over TCP, a collector that is not there is a one-line error before the run, and
/// the output directory is left without logs.
#[test]
fn tcp_collector_refusing_is_an_error_before_the_run() {
    let Some(corpus) = corpus() else { return };
    let cap = dev_captures(&corpus).into_iter().next().unwrap();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = tempdir("ipfix-refused");
    let target = format!("127.0.0.1:{port}");
    let o = tapstat(&[
        "-q",
        "-r",
        cap.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--ipfix",
        &target,
        "--ipfix-transport",
        "tcp",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot open IPFIX export to") && err.contains("over tcp"), "{err}");
    assert!(!out.join("log_tcp_complete").exists() && !out.join("summary.json").exists());
    // The transport and the domain need --ipfix.
    let o = tapstat(&["-q", "-r", cap.to_str().unwrap(), "-o", out.to_str().unwrap(), "--ipfix-transport", "tcp"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&out);
}

/// Over UDP, a collector that is not there costs the run nothing: the messages the
/// kernel refuses (port unreachable) are counted in summary.json.
#[test]
fn udp_send_errors_are_counted() {
    let Some(corpus) = corpus() else { return };
    let cap = corpus.join("ndpi__synscan.pcap");
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = tempdir("ipfix-udp-nobody");
    let target = format!("127.0.0.1:{port}");
    analyze(&cap, &out, 1, &["--ipfix", &target]);
    let s = summary(&out);
    let x = &s["ipfix"];
    let (sent, lost, errors) =
        (x["records"].as_u64().unwrap(), x["records_lost"].as_u64().unwrap(), x["send_errors"].as_u64().unwrap());
    assert_eq!(sent + lost, log_rows(&out).len() as u64, "{x}");
    assert!(errors > 0 && lost > 0, "loopback reports the unreachable port: {x}");
    assert!(s["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("IPFIX")), "{s}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A TCP collector that accepts and then never reads (its receive buffer at the
/// kernel's minimum) must not hold the run back: the exporter's send times out, the
/// workers drop what its full queue cannot take (counted), and the run ends, every
/// record in the logs. Before the export could drop, the workers waited on its queue
/// and a file run never ended. Needs no collector software: the listener is the test's.
#[test]
fn a_collector_that_stops_reading_never_holds_the_run_back() {
    use std::os::fd::AsRawFd;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let small: libc::c_int = 1;
    // SAFETY: a valid socket and a c_int option of the right size.
    let rc = unsafe {
        libc::setsockopt(
            l.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&small as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    // Accepts every connection (the first and each reconnection) and holds it, unread.
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        while !stop2.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((c, _)) => held.push(c),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        held.len()
    });
    let dir = tempdir("ipfix-stalled");
    let (bytes, truth) = tapstat_lab::synth::synthesize(&tapstat_lab::synth::SynthConfig {
        seed: 5,
        tcp_flows: 20_000,
        udp_dns_flows: 20_000,
        ..Default::default()
    });
    let pcap = dir.join("s.pcap");
    std::fs::write(&pcap, bytes).unwrap();
    let out = dir.join("out");
    let target = format!("127.0.0.1:{port}");
    let mut child = Command::new(bin())
        .args(["-q", "-w", "1", "-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "--ipfix", &target])
        .args(["--ipfix-transport", "tcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    stop.store(true, Ordering::Relaxed);
    let connections = holder.join().unwrap();
    let status = status.expect("the run did not end within 180 s: the stalled collector held it back");
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(connections >= 1);
    let s = summary(&out);
    let x = &s["ipfix"];
    let (sent, lost, dropped) =
        (x["records"].as_u64().unwrap(), x["records_lost"].as_u64().unwrap(), x["records_dropped"].as_u64().unwrap());
    let rows = log_rows(&out).len() as u64;
    assert!(rows >= truth.len() as u64, "every flow in the logs: {rows} rows, {} flows", truth.len());
    assert_eq!(sent + lost + dropped, rows, "every record sent, lost or dropped, and counted: {x}");
    assert!(dropped > 0, "the full queue dropped records rather than wait: {x}");
    assert!(
        s["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("dropped before the exporter")),
        "{s}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A live run exports too: `tapstat -i` on a veth in a network namespace of its own,
/// with nfcapd on the namespace's loopback; what nfdump reads equals the run's logs.
/// Needs root, `ip` and `tcpreplay` as the live tests do (skipped otherwise, unless
/// `TAPSTAT_REQUIRE_LIVE=1`).
#[test]
fn live_export_equals_the_logs_in_nfdump() {
    let Some(corpus) = corpus() else { return };
    if !live_ready() || !nfdump_ready() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let file = corpus.join("ndpi__1kxun.pcap");
    let ns = Netns::new("ipfix");
    ns.exec(&["ip", "link", "set", "lo", "up"]);
    let nf = Nfcapd::start_in(Some(&ns), "nfcapd-live");
    let out = tempdir("ipfix-live");
    let target = nf.addr().to_string();
    let args = [
        bin(),
        "-i",
        "vb",
        "-o",
        out.to_str().unwrap(),
        "-q",
        "-w",
        "2",
        "--buffer",
        "16MiB",
        "--kernel-ring",
        "8MiB",
        "--ipfix",
        &target,
        "--ipfix-domain",
        "7",
    ];
    let mut tap = ns.cmd(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("tapstat starts");
    wait_started(&mut tap, &out);
    tcpreplay(&ns, &file, 2000);
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill").args(["-INT", &tap.id().to_string()]).status();
    let st = wait_timeout(&mut tap, Duration::from_secs(60), "tapstat -i after SIGINT");
    let mut err = String::new();
    let _ = tap.stderr.as_mut().unwrap().read_to_string(&mut err);
    assert!(st.success(), "tapstat -i failed: {err}");
    let s = summary(&out);
    let x = &s["ipfix"];
    let rows = log_rows(&out);
    assert_eq!(x["records"].as_u64(), Some(rows.len() as u64), "{x}");
    assert_eq!(x["records_lost"].as_u64(), Some(0), "{x}");
    let (_files, dir) = nf.stop();
    let (by_domain, seq_failures) = read_nfdump(&dir);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    let got = by_domain.get(&7).cloned().unwrap_or_default();
    let (flows, pkts, bytes) = compare("live ndpi__1kxun.pcap", &rows, &got, seq_failures.get(&7).copied());
    eprintln!("live: nfdump read {flows} flows, {pkts} packets, {bytes} bytes, equal to the logs");
    assert!(flows > 100, "{flows} flows");
    let _ = std::fs::remove_dir_all(&out);
}
