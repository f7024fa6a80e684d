//! End-to-end RTT samples and retransmissions against tcptrace, on every dev capture
//! tcptrace read.
//!
//! `oracles/<capture>.tcptrace.txt` is `tcptrace -l -r -n <capture>` (tcptrace 6.6.7): per
//! TCP connection, host a and host b and, side by side for a->b and b->a, the packet
//! counters and the RTT statistics of the segments that direction sent and the other side
//! acknowledged. tapstat runs on each capture with one worker; its TCP records are matched
//! with tcptrace's connections by the 4-tuple (either orientation: a is the client or the
//! server) and, where several share it, by the nearest first packet time. Per direction the
//! RTT sample count, the average RTT and the retransmitted data packets are compared;
//! docs/METRICS.md ("RTT and retransmissions: tcptrace") explains the tolerances and every
//! kind of difference.
//!
//! `TAPSTAT_TCPTRACE_VERBOSE=1` prints every disagreeing direction.

use crate::common::*;

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;

type Record = BTreeMap<String, String>;

/// One end of a connection.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Endpoint {
    ip: IpAddr,
    port: u16,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip {
            IpAddr::V4(ip) => write!(f, "{ip}:{}", self.port),
            IpAddr::V6(ip) => write!(f, "[{ip}]:{}", self.port),
        }
    }
}

impl Endpoint {
    /// tcptrace's `ip:port` (IPv6 addresses unbracketed, with leading zeros).
    fn parse_tcptrace(s: &str) -> Option<Endpoint> {
        let (ip, port) = s.rsplit_once(':')?;
        Some(Endpoint { ip: ip.parse().ok()?, port: port.parse().ok()? })
    }
}

/// What tcptrace says about one direction (the segments a host sent).
#[derive(Clone, Debug, Default, PartialEq)]
struct TtDir {
    total_pkts: u64,
    data_pkts: u64,
    rexmt_pkts: u64,
    syn: u64,
    fin: u64,
    rtt_samples: u64,
    /// ms, printed with one decimal
    rtt_min: f64,
    rtt_max: f64,
    rtt_avg: f64,
    rtt_stdev: f64,
    /// "RTT from 3WHS": the handshake sample (SYN -> SYN/ACK for the SYN's sender, SYN/ACK
    /// -> ACK for the other), 0 when none
    rtt_3whs: f64,
}

/// One connection of tcptrace's.
#[derive(Clone, Debug)]
struct TtConn {
    number: usize,
    a: Endpoint,
    b: Endpoint,
    /// epoch ms of the first packet
    first: f64,
    /// a->b, b->a
    dirs: [TtDir; 2],
}

/// The fields a connection must have, to tell a complete block from a damaged one.
const TT_FIELDS: &[&str] = &[
    "total packets",
    "actual data pkts",
    "rexmt data pkts",
    "SYN/FIN pkts sent",
    "RTT samples",
    "RTT min",
    "RTT max",
    "RTT avg",
    "RTT stdev",
    "RTT from 3WHS",
];

/// `label: left ... label: right` (the two directions side by side) as (label, left, right).
fn two_sided(line: &str) -> Option<(&str, &str, &str)> {
    let (label, rest) = line.split_once(':')?;
    let label = label.trim();
    let at = rest.find(&format!("{label}:"))?;
    Some((label, rest[..at].trim(), rest[at + label.len() + 1..].trim()))
}

/// The first number of a value such as `36.6 ms` or `316`.
fn number(v: &str, what: &str) -> f64 {
    let tok = v.split_whitespace().next().unwrap_or_default();
    tok.parse().unwrap_or_else(|_| panic!("{what}: {v:?} is not a number"))
}

/// `Fri Feb  7 21:04:48.041083 2020` (UTC) as epoch ms.
fn tcptrace_time(s: &str, what: &str) -> f64 {
    let t: Vec<&str> = s.split_whitespace().collect();
    let bad = || panic!("{what}: bad time {s:?}");
    if t.len() != 5 {
        bad();
    }
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let Some(m) = MONTHS.iter().position(|&m| m == t[1]) else { bad() };
    let (Ok(d), Ok(y)) = (t[2].parse::<i64>(), t[4].parse::<i64>()) else { bad() };
    let hms: Vec<&str> = t[3].split(':').collect();
    if hms.len() != 3 {
        bad();
    }
    let (Ok(h), Ok(mi), Ok(sec)) = (hms[0].parse::<i64>(), hms[1].parse::<i64>(), hms[2].parse::<f64>()) else { bad() };
    // days from civil (Howard Hinnant's algorithm)
    let (y, m) = if m < 2 { (y - 1, m as i64 + 10) } else { (y, m as i64 - 2) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400 + h * 3600 + mi * 60) as f64 + sec) * 1000.0
}

/// A connection being parsed: number, host a, host b, first packet, directions.
type Partial = (usize, Option<Endpoint>, Option<Endpoint>, Option<f64>, [TtDir; 2]);

/// Parses tcptrace's long output. Panics on anything unexpected: a connection without one
/// of [`TT_FIELDS`], a count of connections other than the one announced.
fn parse_tcptrace(text: &str, what: &str) -> Vec<TtConn> {
    let mut conns: Vec<TtConn> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut announced = None;
    let mut cur: Option<Partial> = None;
    let finish = |cur: Option<Partial>, seen: &mut Vec<&str>, conns: &mut Vec<TtConn>| {
        if let Some((number, a, b, first, dirs)) = cur {
            let w = format!("{what}: connection {number}");
            let missing: Vec<_> = TT_FIELDS.iter().filter(|f| !seen.contains(f)).collect();
            assert!(missing.is_empty(), "{w}: no {missing:?}");
            conns.push(TtConn {
                number,
                a: a.unwrap_or_else(|| panic!("{w}: no host a")),
                b: b.unwrap_or_else(|| panic!("{w}: no host b")),
                first: first.unwrap_or_else(|| panic!("{w}: no first packet")),
                dirs,
            });
        }
        seen.clear();
    };
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("TCP connection ").and_then(|r| r.strip_suffix(':')) {
            if let Ok(n) = n.parse::<usize>() {
                finish(cur.take(), &mut seen, &mut conns);
                cur = Some((n, None, None, None, Default::default()));
                continue;
            }
        }
        if let Some(n) = line.strip_suffix(" TCP connection traced:").or(line.strip_suffix(" TCP connections traced:"))
        {
            announced = Some(n.trim().parse::<usize>().unwrap_or_else(|_| panic!("{what}: {line:?}")));
            continue;
        }
        let Some((_, a, b, first, dirs)) = cur.as_mut() else { continue };
        let w = || format!("{what}: connection {}: {line:?}", conns.len() + 1);
        if line.starts_with('\t') {
            let Some((label, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            let label = label.trim();
            if label.starts_with("host ") {
                // the hosts are lettered a, b, c, ... over the whole trace: the first host
                // line of a connection is its "a" side (the left column)
                let e = Some(Endpoint::parse_tcptrace(value).unwrap_or_else(|| panic!("{}", w())));
                match (a.is_some(), b.is_some()) {
                    (false, _) => *a = e,
                    (true, false) => *b = e,
                    _ => panic!("{}: a third host", w()),
                }
            } else if label == "first packet" {
                *first = Some(tcptrace_time(value, &w()));
            }
            continue;
        }
        let Some((label, l, r)) = two_sided(line) else { continue };
        let Some(&field) = TT_FIELDS.iter().find(|&&f| f == label) else { continue };
        seen.push(field);
        for (d, v) in dirs.iter_mut().zip([l, r]) {
            let x = || number(v, &w());
            match field {
                "total packets" => d.total_pkts = x() as u64,
                "actual data pkts" => d.data_pkts = x() as u64,
                "rexmt data pkts" => d.rexmt_pkts = x() as u64,
                "SYN/FIN pkts sent" => {
                    let (s, f) = v.split_once('/').unwrap_or_else(|| panic!("{}", w()));
                    d.syn = s.trim().parse().unwrap_or_else(|_| panic!("{}", w()));
                    d.fin = f.trim().parse().unwrap_or_else(|_| panic!("{}", w()));
                }
                "RTT samples" => d.rtt_samples = x() as u64,
                "RTT min" => d.rtt_min = x(),
                "RTT max" => d.rtt_max = x(),
                "RTT avg" => d.rtt_avg = x(),
                "RTT stdev" => d.rtt_stdev = x(),
                "RTT from 3WHS" => d.rtt_3whs = x(),
                _ => unreachable!(),
            }
        }
    }
    finish(cur.take(), &mut seen, &mut conns);
    assert_eq!(announced.unwrap_or(0), conns.len(), "{what}: connections announced vs parsed");
    conns
}

/// tapstat's numbers for one direction of a record (`c_` or `s_`).
#[derive(Clone, Debug)]
struct OurDir {
    rtt_cnt: u64,
    /// ms; `None` for `-` (no sample)
    rtt_avg: Option<f64>,
    pkts_retx: u64,
    pkts_data: u64,
    syn_cnt: u64,
    fin_cnt: u64,
    /// this direction's handshake sample: `c_rtt_3whs` (SYN -> SYN/ACK) for the client,
    /// `s_rtt_3whs` (SYN/ACK -> ACK) for the server
    rtt_3whs: Option<f64>,
}

/// A tapstat TCP record, reduced to what is compared.
#[derive(Clone, Debug)]
struct OurRec {
    c: Endpoint,
    s: Endpoint,
    first: f64,
    /// c_, s_
    dirs: [OurDir; 2],
}

fn opt_ms(r: &Record, col: &str, what: &str) -> Option<f64> {
    let v =
        r.get(col).unwrap_or_else(|| panic!("{what}: no column {col} (does `tapstat schema` have the RTT columns?)"));
    (v != "-").then(|| v.parse().unwrap_or_else(|_| panic!("{what}: {col} = {v:?}")))
}

fn count(r: &Record, col: &str, what: &str) -> u64 {
    let v =
        r.get(col).unwrap_or_else(|| panic!("{what}: no column {col} (does `tapstat schema` have the RTT columns?)"));
    v.parse().unwrap_or_else(|_| panic!("{what}: {col} = {v:?}"))
}

fn our_records(out: &Path, what: &str) -> Vec<OurRec> {
    let mut v = Vec::new();
    for log in ["log_tcp_complete", "log_tcp_nocomplete"] {
        for (i, r) in read_log(out, log).iter().enumerate() {
            let w = format!("{what} {log} record {}", i + 1);
            let ep = |ip: &str, port: &str| Endpoint {
                ip: r[ip].parse().unwrap_or_else(|_| panic!("{w}: {ip}")),
                port: r[port].parse().unwrap_or_else(|_| panic!("{w}: {port}")),
            };
            let dir = |p: &str| OurDir {
                rtt_cnt: count(r, &format!("{p}_rtt_cnt"), &w),
                rtt_avg: opt_ms(r, &format!("{p}_rtt_avg"), &w),
                pkts_retx: count(r, &format!("{p}_pkts_retx"), &w),
                pkts_data: count(r, &format!("{p}_pkts_data"), &w),
                syn_cnt: count(r, &format!("{p}_syn_cnt"), &w),
                fin_cnt: count(r, &format!("{p}_fin_cnt"), &w),
                rtt_3whs: opt_ms(r, &format!("{p}_rtt_3whs"), &w),
            };
            v.push(OurRec {
                c: ep("c_ip", "c_port"),
                s: ep("s_ip", "s_port"),
                first: opt_ms(r, "first", &w).unwrap_or_else(|| panic!("{w}: no first")),
                dirs: [dir("c"), dir("s")],
            });
        }
    }
    v
}

/// One direction seen by both tools: tcptrace's a->b or b->a and tapstat's c_ or s_.
#[derive(Clone, Debug)]
struct Pair {
    capture: String,
    /// tcptrace's connection number
    conn: usize,
    /// sender -> receiver
    from: Endpoint,
    to: Endpoint,
    /// 'c' or 's': the sender is tapstat's client or server
    side: char,
    tt: TtDir,
    ours: OurDir,
}

impl fmt::Display for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, o) = (&self.tt, &self.ours);
        write!(
            f,
            "{} conn {} {:?} -> {:?} ({}_): samples tcptrace {} tapstat {}; avg {:.1} / {}; 3whs {:.1} / {}; \
             retx {} / {}; data {} / {}; syn/fin {}/{} / {}/{}",
            self.capture,
            self.conn,
            self.from,
            self.to,
            self.side,
            t.rtt_samples,
            o.rtt_cnt,
            t.rtt_avg,
            o.rtt_avg.map_or("-".into(), |v| format!("{v:.3}")),
            t.rtt_3whs,
            o.rtt_3whs.map_or("-".into(), |v| format!("{v:.3}")),
            t.rexmt_pkts,
            o.pkts_retx,
            t.data_pkts,
            o.pkts_data,
            t.syn,
            t.fin,
            o.syn_cnt,
            o.fin_cnt
        )
    }
}

/// How the connections of one capture matched.
#[derive(Default, Debug)]
struct Matching {
    conns: usize,
    matched: usize,
    /// 4-tuples tcptrace and tapstat cut into different numbers of connections
    cut_differently: usize,
    /// tcptrace connections with no tapstat record of that 4-tuple
    unmatched: usize,
}

/// Pairs tcptrace's connections with tapstat's records: same 4-tuple (either
/// orientation), and where several share it, as many on both sides, paired in time order.
fn match_conns(capture: &str, tt: &[TtConn], ours: &[OurRec], pairs: &mut Vec<Pair>) -> Matching {
    let key = |x: Endpoint, y: Endpoint| if x <= y { (x, y) } else { (y, x) };
    type Both<'a> = (Vec<&'a TtConn>, Vec<&'a OurRec>);
    let mut by_key: BTreeMap<(Endpoint, Endpoint), Both> = BTreeMap::new();
    for t in tt {
        by_key.entry(key(t.a, t.b)).or_default().0.push(t);
    }
    for o in ours {
        by_key.entry(key(o.c, o.s)).or_default().1.push(o);
    }
    let mut m = Matching { conns: tt.len(), ..Matching::default() };
    for (ts, os) in by_key.values_mut() {
        if ts.is_empty() {
            continue;
        }
        if os.is_empty() {
            m.unmatched += ts.len();
            continue;
        }
        if ts.len() != os.len() {
            m.cut_differently += ts.len();
            continue;
        }
        ts.sort_by(|x, y| x.first.total_cmp(&y.first));
        os.sort_by(|x, y| x.first.total_cmp(&y.first));
        for (t, o) in ts.iter().zip(os.iter()) {
            m.matched += 1;
            // a->b is the client's direction when a is the client
            let a_is_client = t.a == o.c;
            for (i, td) in t.dirs.iter().enumerate() {
                let (from, to) = if i == 0 { (t.a, t.b) } else { (t.b, t.a) };
                let side = if (i == 0) == a_is_client { 0 } else { 1 };
                pairs.push(Pair {
                    capture: capture.to_string(),
                    conn: t.number,
                    from,
                    to,
                    side: ['c', 's'][side],
                    tt: td.clone(),
                    ours: o.dirs[side].clone(),
                });
            }
        }
    }
    m
}

/// Everything compared over the corpus; computed once per test binary. `None` without the
/// corpus.
struct Results {
    /// captures with a non-empty tcptrace output, captures whose output is empty or failed
    compared: Vec<(String, Matching)>,
    empty: usize,
    pairs: Vec<Pair>,
}

fn results() -> Option<&'static Results> {
    static RESULTS: std::sync::OnceLock<Option<Results>> = std::sync::OnceLock::new();
    RESULTS
        .get_or_init(|| {
            let corpus = corpus()?;
            let oracles = corpus.join("oracles");
            if !oracles.is_dir() {
                assert!(
                    std::env::var("TAPSTAT_REQUIRE_CORPUS").as_deref() != Ok("1"),
                    "TAPSTAT_REQUIRE_CORPUS=1 but {} has no oracles/",
                    corpus.display()
                );
                eprintln!("skipped: no oracles/ in {}", corpus.display());
                return None;
            }
            let root = tempdir("tcptrace");
            let mut res = Results { compared: Vec::new(), empty: 0, pairs: Vec::new() };
            for cap in dev_captures(&corpus) {
                let name = cap.file_name().unwrap().to_string_lossy().to_string();
                let oracle = oracles.join(format!("{name}.tcptrace.txt"));
                let text = std::fs::read_to_string(&oracle).unwrap_or_default();
                let tt = parse_tcptrace(&text, &name);
                if tt.is_empty() {
                    // no TCP, a link type tcptrace does not read, or no output at all
                    res.empty += 1;
                    continue;
                }
                let out = root.join(&name);
                analyze(&cap, &out, 1, &[]);
                let ours = our_records(&out, &name);
                let _ = std::fs::remove_dir_all(&out);
                let m = match_conns(&name, &tt, &ours, &mut res.pairs);
                res.compared.push((name, m));
            }
            let _ = std::fs::remove_dir_all(&root);
            Some(res)
        })
        .as_ref()
}

/// Tolerance of an average RTT, ms: tcptrace prints one decimal (±0.05 ms), and it takes
/// libpcap's microsecond timestamps (truncated) where tapstat rounds nanosecond ones, so
/// the same samples can differ by twice its rounding; 5% of the average for the rest (see
/// docs/METRICS.md).
fn avg_tolerance(tcptrace_avg: f64) -> f64 {
    (0.1f64).max(0.05 * tcptrace_avg)
}

/// The three comparisons of one direction.
#[derive(Clone, Copy, Default)]
struct Verdict {
    /// samples equal, or tcptrace has one more: the FIN's (tcptrace counts the FIN as a
    /// sequence byte and times its ACK; tapstat times data and the SYN only)
    count: bool,
    /// the same samples exactly
    count_exact: bool,
    /// whether the average was compared (both have samples and the counts agree), and
    /// whether it agreed
    avg: Option<bool>,
    /// rexmt data pkts == pkts_retx + the SYNs and FINs sent again (tcptrace's retransmitted
    /// packets include them)
    retx: bool,
    retx_exact: bool,
}

fn judge(p: &Pair) -> Verdict {
    let (t, o) = (&p.tt, &p.ours);
    let fin_sample = t.rtt_samples == o.rtt_cnt + 1 && o.fin_cnt > 0;
    let count_exact = t.rtt_samples == o.rtt_cnt;
    let avg = match (o.rtt_avg, o.rtt_cnt > 0) {
        (Some(a), true) if count_exact => Some((a - t.rtt_avg).abs() <= avg_tolerance(t.rtt_avg)),
        (Some(a), true) if fin_sample => {
            // tcptrace's average holds one sample more, the FIN's: it must lie within
            // tcptrace's min and max, give or take the rounding of avg * (n + 1)
            let n = o.rtt_cnt as f64;
            let fin = t.rtt_avg * (n + 1.0) - a * n;
            let slack = 0.05 * (n + 1.0) + 0.1;
            Some(fin >= t.rtt_min - slack && fin <= t.rtt_max + slack)
        }
        _ => None,
    };
    let again = o.syn_cnt.saturating_sub(1) + o.fin_cnt.saturating_sub(1);
    Verdict {
        count: count_exact || fin_sample,
        count_exact,
        avg,
        retx: t.rexmt_pkts == o.pkts_retx + again,
        retx_exact: t.rexmt_pkts == o.pkts_retx,
    }
}

/// agree, total, as a share in %.
fn share(agree: usize, total: usize) -> f64 {
    if total == 0 {
        100.0
    } else {
        100.0 * agree as f64 / total as f64
    }
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn rtt_samples_and_retransmissions_agree_with_tcptrace() {
    let Some(r) = results() else { return };
    let verbose = std::env::var("TAPSTAT_TCPTRACE_VERBOSE").as_deref() == Ok("1");
    // [directions, count, count exact, avg compared, avg agree, retx, retx exact]
    let mut total = [0usize; 7];
    let mut by_capture: BTreeMap<&str, [usize; 7]> = BTreeMap::new();
    for p in &r.pairs {
        let v = judge(p);
        let row = [
            1,
            v.count as usize,
            v.count_exact as usize,
            v.avg.is_some() as usize,
            (v.avg == Some(true)) as usize,
            v.retx as usize,
            v.retx_exact as usize,
        ];
        let c = by_capture.entry(&p.capture).or_default();
        for i in 0..7 {
            c[i] += row[i];
            total[i] += row[i];
        }
        if verbose && (!v.count || v.avg == Some(false) || !v.retx) {
            let what = [(!v.count, "count"), (v.avg == Some(false), "avg"), (!v.retx, "retx")];
            let what: Vec<&str> = what.iter().filter(|w| w.0).map(|w| w.1).collect();
            eprintln!("differs ({}): {p}", what.join(", "));
        }
    }
    eprintln!(
        "{:<40} {:>5} {:>5} {:>5} {:>6} {:>6} {:>6} {:>6}",
        "capture", "conns", "match", "dirs", "count", "avg", "of", "retx"
    );
    let (mut conns, mut matched, mut cut, mut unmatched) = (0, 0, 0, 0);
    for (name, m) in &r.compared {
        let c = by_capture.get(name.as_str()).copied().unwrap_or_default();
        eprintln!(
            "{:<40} {:>5} {:>5} {:>5} {:>6} {:>6} {:>6} {:>6}",
            name.trim_end_matches(".pcap"),
            m.conns,
            m.matched,
            c[0],
            c[1],
            c[4],
            c[3],
            c[5]
        );
        conns += m.conns;
        matched += m.matched;
        cut += m.cut_differently;
        unmatched += m.unmatched;
    }
    let [dirs, count, count_exact, avg_n, avg, retx, retx_exact] = total;
    eprintln!(
        "{} captures with tcptrace connections ({} without: no TCP, a link type tcptrace does not read, or no output); \
         {conns} connections, {matched} matched, {cut} cut differently (skipped), {unmatched} without a tapstat record",
        r.compared.len(),
        r.empty
    );
    let sh =
        [share(count, dirs), share(count_exact, dirs), share(avg, avg_n), share(retx, dirs), share(retx_exact, dirs)];
    eprintln!("directions: {dirs}");
    eprintln!("RTT samples: {count} agree ({:.2}%; exactly: {count_exact}, {:.2}%)", sh[0], sh[1]);
    eprintln!("RTT avg: {avg} of {avg_n} agree ({:.2}%)", sh[2]);
    eprintln!("retransmitted packets: {retx} agree ({:.2}%; exactly: {retx_exact}, {:.2}%)", sh[3], sh[4]);
    assert!(matched > 3900, "suspiciously few matched connections: {matched}");
    assert_eq!(unmatched, 0, "tcptrace connections without a tapstat record");
    assert!(cut <= 30, "{cut} tcptrace connections on 4-tuples the two tools cut differently");
    for (what, got, floor) in [
        ("RTT samples", sh[0], FLOORS[0]),
        ("RTT samples, exactly", sh[1], FLOORS[1]),
        ("RTT avg", sh[2], FLOORS[2]),
        ("retransmitted packets", sh[3], FLOORS[3]),
        ("retransmitted packets, exactly", sh[4], FLOORS[4]),
    ] {
        assert!(got >= floor, "{what}: only {got:.2}% of the matched directions agree with tcptrace (floor {floor}%)");
    }
}

/// Least shares (in %) that must agree, set just below the measured ones (docs/METRICS.md):
/// RTT samples (allowing tcptrace's FIN sample), RTT samples exactly, RTT avg (where
/// compared), retransmitted packets (counting SYNs and FINs sent again), exactly.
const FLOORS: [f64; 5] = [99.3, 98.6, 99.7, 99.3, 97.1];

#[test]
fn parses_tcptrace_long_output() {
    let text = "1 arg remaining, starting with 'x.pcap'\n\
TCP connection info:\n\
1 TCP connection traced:\n\
TCP connection 1:\n\
\thost c:        2001:0db8:0000:0000:0000:0000:0000:0001:443\n\
\thost d:        10.0.0.1:80\n\
\tcomplete conn: no\t(SYNs: 2)  (FINs: 0)\n\
\tfirst packet:  Fri Feb  7 21:04:48.041083 2020\n\
   c->d:\t\t\t      d->c:\n\
     total packets:           316           total packets:           351      \n\
     actual data pkts:         59           actual data pkts:        331      \n\
     rexmt data pkts:           2           rexmt data pkts:           0      \n\
     SYN/FIN pkts sent:       1/1           SYN/FIN pkts sent:       2/0      \n\
     RTT samples:              42           RTT samples:             204      \n\
     RTT min:                36.6 ms        RTT min:                 0.0 ms   \n\
     RTT max:                47.8 ms        RTT max:                 0.3 ms   \n\
     RTT avg:                40.2 ms        RTT avg:                 0.1 ms   \n\
     RTT stdev:               2.7 ms        RTT stdev:               0.0 ms   \n\
\n\
     RTT from 3WHS:          38.5 ms        RTT from 3WHS:           0.1 ms   \n\
     RTT avg (last):         50.9 ms        RTT avg (last):          0.0 ms   \n";
    let c = parse_tcptrace(text, "fake");
    assert_eq!(c.len(), 1);
    let c = &c[0];
    assert_eq!(format!("{:?} {:?}", c.a, c.b), "[2001:db8::1]:443 10.0.0.1:80");
    assert!((c.first - 1_581_109_488_041.083).abs() < 1e-3, "{}", c.first);
    let want = TtDir {
        total_pkts: 316,
        data_pkts: 59,
        rexmt_pkts: 2,
        syn: 1,
        fin: 1,
        rtt_samples: 42,
        rtt_min: 36.6,
        rtt_max: 47.8,
        rtt_avg: 40.2,
        rtt_stdev: 2.7,
        rtt_3whs: 38.5,
    };
    assert_eq!(c.dirs[0], want);
    assert_eq!((c.dirs[1].syn, c.dirs[1].fin, c.dirs[1].rtt_samples, c.dirs[1].rtt_avg), (2, 0, 204, 0.1));
    assert!(parse_tcptrace("", "empty").is_empty());
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn every_tcptrace_output_parses() {
    let Some(corpus) = corpus() else { return };
    let (mut files, mut conns, mut empty) = (0, 0, 0);
    for cap in dev_captures(&corpus) {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let text =
            std::fs::read_to_string(corpus.join("oracles").join(format!("{name}.tcptrace.txt"))).unwrap_or_default();
        let c = parse_tcptrace(&text, &name);
        files += 1;
        conns += c.len();
        empty += c.is_empty() as usize;
    }
    eprintln!("{files} tcptrace outputs, {empty} without a connection, {conns} connections");
}

#[test]
#[should_panic(expected = "connection 1: no [")]
fn a_damaged_connection_fails_the_parse() {
    let text =
        "1 TCP connection traced:\nTCP connection 1:\n\thost a:        10.0.0.1:1\n\thost b:        10.0.0.2:2\n\
                \tfirst packet:  Thu Jan  1 00:00:00.000000 1970\n";
    parse_tcptrace(text, "damaged");
}
