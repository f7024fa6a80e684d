//! The core per-flow columns against Tstat's own logs, on every dev capture Tstat read.
//!
//! `oracles/tstat/<capture>/` holds Tstat 3.3's `log_tcp_complete`, `log_tcp_nocomplete`
//! and `log_udp_complete` for each dev capture (`oracles/tstat/STATUS.tsv` says where Tstat
//! ran). tapstat's columns carry Tstat's names, so the columns both write can be compared
//! flow by flow: records are matched by (c_ip, c_port, s_ip, s_port) and, where several
//! records share them, by the nearest first packet time. For every shared column the share
//! of matched flows that agree exactly (times: within [`TIME_TOLERANCE_MS`]) is measured
//! over the whole corpus, printed, and held above a floor set just below the measured
//! share, so that a regression in a counter shows up here. docs/METRICS.md ("Notes")
//! explains each kind of difference; nearly all are different definitions rather than
//! bugs (when a flow starts and ends, what counts as a retransmission, frames or
//! datagrams).
//!
//! Flows only one of the tools has are counted too, and each must have a known reason
//! (Tstat opens a TCP flow only on a SYN; tunnels Tstat does not decapsulate; flows the two
//! tools cut at different times).
//!
//! `TAPSTAT_TSTAT_VERBOSE=1` prints every disagreement (capture, flow, column, values).

use crate::common::*;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::Path;

type Record = BTreeMap<String, String>;

/// Tolerance of the time columns, in ms. tapstat rounds nanosecond timestamps to the
/// microsecond it prints; Tstat truncates them to the microsecond (libpcap's timeval) and
/// computes epoch milliseconds in double precision, which at 1.5e12 ms is 0.24 µs coarse.
/// The two can therefore differ by up to 1 µs + 0.25 µs for the same packet; anything
/// else (a different packet) is at least a microsecond further away in all but
/// pathological captures.
const TIME_TOLERANCE_MS: f64 = 0.0015;

/// How a column compares.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// an integer, exactly
    Count,
    /// a time or duration in ms, within TIME_TOLERANCE_MS; tapstat's `-` (no such packet)
    /// is Tstat's 0
    Ms,
    /// a duration, Tstat in seconds (log_udp_complete's `c_durat`/`s_durat`), tapstat in ms
    TstatSeconds,
    /// a name (server name, host, DNS name), equal ignoring case; `-` for none in both
    Text,
    /// an RTT statistic in ms, within max(10 µs, 1%): Tstat's averages of the same
    /// samples come out a few µs apart from the exact mean of the µs-resolution
    /// samples (e.g. 77.422 vs 77.425 ms over 3 samples whose min and max agree to the µs)
    Rtt,
}

/// A shared column, how it compares, and the least share of matched flows (in %) that
/// must agree over the corpus: a floor set just below the measured share (measured shares
/// are in docs/METRICS.md).
struct Column {
    name: &'static str,
    kind: Kind,
    floor: f64,
}

const fn col(name: &'static str, kind: Kind, floor: f64) -> Column {
    Column { name, kind, floor }
}

use Kind::{Count, Ms, Rtt, Text, TstatSeconds};

/// The columns both of Tstat's TCP logs have (the rest are in log_tcp_complete only).
const CORE_TCP: &[&str] = &[
    "c_pkts_all",
    "s_pkts_all",
    "c_rst_cnt",
    "s_rst_cnt",
    "c_ack_cnt",
    "s_ack_cnt",
    "c_ack_cnt_p",
    "s_ack_cnt_p",
    "c_bytes_uniq",
    "s_bytes_uniq",
    "c_pkts_data",
    "s_pkts_data",
    "c_bytes_all",
    "s_bytes_all",
    "c_pkts_retx",
    "s_pkts_retx",
    "c_bytes_retx",
    "s_bytes_retx",
    "c_pkts_ooo",
    "s_pkts_ooo",
    "c_syn_cnt",
    "s_syn_cnt",
    "c_fin_cnt",
    "s_fin_cnt",
    "first",
    "last",
    "durat",
    "c_first",
    "s_first",
    "c_last",
    "s_last",
    "c_first_ack",
    "s_first_ack",
    "c_isint",
    "s_isint",
    "c_iscrypto",
    "s_iscrypto",
    "con_t",
    "p2p_t",
    "http_t",
];

const TCP_COLUMNS: &[Column] = &[
    col("c_pkts_all", Count, 95.5),
    col("s_pkts_all", Count, 96.0),
    col("c_rst_cnt", Count, 96.3),
    col("s_rst_cnt", Count, 97.5),
    col("c_ack_cnt", Count, 98.8),
    col("s_ack_cnt", Count, 97.5),
    col("c_ack_cnt_p", Count, 99.0),
    col("s_ack_cnt_p", Count, 98.5),
    col("c_bytes_uniq", Count, 99.2),
    col("s_bytes_uniq", Count, 99.1),
    col("c_pkts_data", Count, 99.3),
    col("s_pkts_data", Count, 99.1),
    col("c_bytes_all", Count, 99.3),
    col("s_bytes_all", Count, 99.1),
    col("c_pkts_retx", Count, 94.5),
    col("s_pkts_retx", Count, 97.5),
    col("c_bytes_retx", Count, 99.3),
    col("s_bytes_retx", Count, 99.1),
    col("c_pkts_ooo", Count, 99.4),
    col("s_pkts_ooo", Count, 99.4),
    col("c_syn_cnt", Count, 99.6),
    col("s_syn_cnt", Count, 99.7),
    col("c_fin_cnt", Count, 99.4),
    col("s_fin_cnt", Count, 98.0),
    col("first", Ms, 99.8),
    col("last", Ms, 94.0),
    col("durat", Ms, 94.0),
    col("c_first", Ms, 99.3),
    col("s_first", Ms, 99.7),
    col("c_last", Ms, 99.3),
    col("s_last", Ms, 99.1),
    col("c_first_ack", Ms, 99.6),
    col("s_first_ack", Ms, 98.3),
    // The rest of the core set.
    // Tstat ran without -N: every address internal, none anonymized.
    col("c_isint", Count, 100.0),
    col("s_isint", Count, 100.0),
    col("c_iscrypto", Count, 100.0),
    col("s_iscrypto", Count, 100.0),
    col("con_t", Count, 98.0),
    col("p2p_t", Count, 100.0),
    col("http_t", Count, 99.5),
    // The anomaly classes.
    col("c_pkts_rto", Count, 95.8),
    col("c_pkts_fs", Count, 97.9),
    col("c_pkts_reor", Count, 98.7),
    col("c_pkts_dup", Count, 93.8),
    col("c_pkts_unk", Count, 92.9),
    col("c_pkts_fc", Count, 99.5),
    col("c_pkts_unrto", Count, 96.0),
    col("c_pkts_unfs", Count, 98.7),
    col("c_syn_retx", Count, 97.2),
    col("s_pkts_rto", Count, 95.2),
    col("s_pkts_fs", Count, 97.9),
    col("s_pkts_reor", Count, 98.1),
    col("s_pkts_dup", Count, 94.2),
    col("s_pkts_unk", Count, 92.3),
    col("s_pkts_fc", Count, 99.5),
    col("s_pkts_unrto", Count, 96.0),
    col("s_pkts_unfs", Count, 98.7),
    col("s_syn_retx", Count, 95.6),
    // The end-to-end and options sets.
    col("c_rtt_avg", Rtt, 94.8),
    col("c_rtt_min", Rtt, 97.5),
    col("c_rtt_max", Rtt, 97.7),
    col("c_rtt_cnt", Count, 92.9),
    col("c_rtt_std", Rtt, 93.3),
    col("c_ttl_min", Count, 99.3),
    col("c_ttl_max", Count, 99.5),
    col("c_f1323_opt", Count, 99.5),
    col("c_tm_opt", Count, 99.5),
    col("c_win_scl", Count, 99.5),
    col("c_sack_opt", Count, 99.5),
    col("c_sack_cnt", Count, 99.5),
    col("c_mss", Count, 96.2),
    col("c_mss_max", Count, 99.5),
    col("c_mss_min", Count, 99.5),
    col("c_win_max", Count, 99.1),
    col("c_win_min", Count, 99.3),
    col("c_win_0", Count, 99.5),
    col("c_cwin_max", Count, 98.7),
    col("c_cwin_min", Count, 97.3),
    col("c_cwin_ini", Count, 99.5),
    col("c_pkts_push", Count, 98.5),
    col("s_rtt_avg", Rtt, 98.1),
    col("s_rtt_min", Rtt, 99.1),
    col("s_rtt_max", Rtt, 98.7),
    col("s_rtt_cnt", Count, 97.5),
    col("s_rtt_std", Rtt, 98.3),
    col("s_ttl_min", Count, 99.3),
    col("s_ttl_max", Count, 99.5),
    col("s_f1323_opt", Count, 99.5),
    col("s_tm_opt", Count, 99.5),
    col("s_win_scl", Count, 99.5),
    col("s_sack_opt", Count, 99.5),
    col("s_sack_cnt", Count, 99.3),
    col("s_mss", Count, 96.2),
    col("s_mss_max", Count, 99.5),
    col("s_mss_min", Count, 97.9),
    col("s_win_max", Count, 95.8),
    col("s_win_min", Count, 99.3),
    col("s_win_0", Count, 99.5),
    col("s_cwin_max", Count, 97.7),
    col("s_cwin_min", Count, 98.5),
    col("s_cwin_ini", Count, 96.4),
    col("s_pkts_push", Count, 94.0),
    // The application layer.
    col("c_tls_SNI", Text, 99.3),
    col("http_hostname", Text, 99.7),
    col("fqdn", Text, 99.9),
    col("http_req_cnt", Count, 94.5),
    col("http_res_cnt", Count, 99.0),
    col("c_appdataB", Count, 98.2),
    col("s_appdataB", Count, 96.5),
];

const UDP_COLUMNS: &[Column] = &[
    col("c_first_abs", Ms, 99.7),
    col("s_first_abs", Ms, 99.6),
    col("c_durat", TstatSeconds, 92.2),
    col("s_durat", TstatSeconds, 98.8),
    col("c_bytes_all", Count, 98.4),
    col("s_bytes_all", Count, 98.7),
    col("c_pkts_all", Count, 92.2),
    col("s_pkts_all", Count, 98.7),
    col("c_isint", Count, 100.0),
    col("s_isint", Count, 100.0),
    col("c_iscrypto", Count, 100.0),
    col("s_iscrypto", Count, 100.0),
    col("quic_SNI", Text, 96.0),
    col("fqdn", Text, 99.9),
];

/// UDP ports of tunnels tapstat decapsulates and Tstat does not (it logs the outer UDP
/// flow, tapstat the inner one): VXLAN, Geneve, Teredo, MPLS over UDP, GTP-U.
const TUNNEL_PORTS: &[&str] = &["4789", "6081", "3544", "6635", "2152"];

/// Captures with flows Tstat does not see at all, and why (its link layer stops short).
const NOT_DECODED_BY_TSTAT: &[(&str, &str)] = &[
    ("tcpdump__mpls-traceroute.pcap", "MPLS label stack"),
    ("ndpi__capwap_data.pcapng", "two stacked VLAN tags (802.1ad)"),
    ("ndpi__dns.pcap", "two stacked VLAN tags and PPPoE (frames 4 and 5)"),
];

/// Reads one of Tstat's logs: space-separated values, the first line names the columns
/// as `#31#c_ip:1 c_port:2 ...` (TCP, with the log level) or `#c_ip:1 c_port:2 ...`.
fn read_tstat(path: &Path) -> Vec<Record> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let mut lines = text.lines();
    let Some(header) = lines.next() else { return Vec::new() };
    let mut header = header.strip_prefix('#').unwrap_or_else(|| panic!("{}: no header line", path.display()));
    if let Some((level, rest)) = header.split_once('#') {
        if level.chars().all(|c| c.is_ascii_digit()) {
            header = rest;
        }
    }
    let cols: Vec<&str> = header.split_whitespace().map(|c| c.rsplit_once(':').map_or(c, |(name, _)| name)).collect();
    lines
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| cols.iter().zip(l.split_whitespace()).map(|(c, v)| (c.to_string(), v.to_string())).collect())
        .collect()
}

/// Tstat's captures with output (`STATUS.tsv` status `ok`).
fn tstat_captures(corpus: &Path) -> Vec<String> {
    let status = corpus.join("oracles/tstat/STATUS.tsv");
    let text = std::fs::read_to_string(&status).unwrap_or_else(|e| panic!("{}: {e}", status.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    let (Some(ci), Some(si)) =
        (header.iter().position(|c| *c == "capture"), header.iter().position(|c| *c == "status"))
    else {
        panic!("{}: no capture/status columns", status.display())
    };
    lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|c| c.get(si) == Some(&"ok"))
        .map(|c| c[ci].to_string())
        .collect()
}

/// (c_ip, c_port, s_ip, s_port), addresses in one spelling.
type Quad = (IpAddr, u16, IpAddr, u16);

fn quad(r: &Record, what: &str) -> Quad {
    let ip = |c: &str| -> IpAddr {
        let v = field(r, c, what);
        v.parse().unwrap_or_else(|_| panic!("{what}: {c} = {v:?}"))
    };
    let port = |c: &str| -> u16 {
        let v = field(r, c, what);
        v.parse().unwrap_or_else(|_| panic!("{what}: {c} = {v:?}"))
    };
    (ip("c_ip"), port("c_port"), ip("s_ip"), port("s_port"))
}

/// `row[col]`, or a panic naming the record and the column.
fn field<'a>(row: &'a Record, col: &str, what: &str) -> &'a str {
    row.get(col).unwrap_or_else(|| panic!("{what}: no column {col}"))
}

fn reversed(q: &Quad) -> Quad {
    (q.2, q.3, q.0, q.1)
}

fn ms(v: &str) -> f64 {
    if v == "-" {
        0.0
    } else {
        v.parse().unwrap_or(f64::NAN)
    }
}

/// Do Tstat's value `t` and tapstat's `o` agree?
fn agree(kind: Kind, t: &str, o: &str) -> bool {
    match kind {
        // tapstat's `-` (nothing seen: no data segment for `mss_min`, no RTT sample)
        // is Tstat's 0.
        Count => {
            matches!((t.parse::<u64>(), if o == "-" { Ok(0) } else { o.parse::<u64>() }), (Ok(a), Ok(b)) if a == b)
        }
        Ms => (ms(t) - ms(o)).abs() <= TIME_TOLERANCE_MS,
        TstatSeconds => (ms(t) * 1000.0 - ms(o)).abs() <= TIME_TOLERANCE_MS,
        Rtt => (ms(t) - ms(o)).abs() <= (0.01f64).max(ms(t) * 0.01),
        Text => t.eq_ignore_ascii_case(o),
    }
}

/// A record of one tool, with where it came from.
struct Rec {
    log: &'static str,
    quad: Quad,
    first: f64,
    row: Record,
}

fn records(rows: Vec<Record>, log: &'static str, first_col: &str, what: &str) -> Vec<Rec> {
    rows.into_iter()
        .enumerate()
        .map(|(i, row)| {
            let what = format!("{what} {log} record {}", i + 1);
            Rec { log, quad: quad(&row, &what), first: ms(field(&row, first_col, &what)), row }
        })
        .collect()
}

/// Pairs Tstat's records with tapstat's: same quad, then the nearest first time, one to
/// one. Returns the pairs and the indices of the records left over on each side.
fn match_records(t: &[Rec], o: &[Rec]) -> (Vec<(usize, usize)>, Vec<usize>, Vec<usize>) {
    let mut by_quad: HashMap<Quad, (Vec<usize>, Vec<usize>)> = HashMap::new();
    for (i, r) in t.iter().enumerate() {
        by_quad.entry(r.quad).or_default().0.push(i);
    }
    for (j, r) in o.iter().enumerate() {
        by_quad.entry(r.quad).or_default().1.push(j);
    }
    let (mut pairs, mut t_only, mut o_only) = (Vec::new(), Vec::new(), Vec::new());
    for (ts, os) in by_quad.values() {
        let mut cand: Vec<(f64, usize, usize)> =
            ts.iter().flat_map(|&i| os.iter().map(move |&j| ((t[i].first - o[j].first).abs(), i, j))).collect();
        cand.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let (mut ti, mut oj) = (Vec::new(), Vec::new());
        for (_, i, j) in cand {
            if !ti.contains(&i) && !oj.contains(&j) {
                ti.push(i);
                oj.push(j);
                pairs.push((i, j));
            }
        }
        t_only.extend(ts.iter().filter(|i| !ti.contains(i)));
        o_only.extend(os.iter().filter(|j| !oj.contains(j)));
    }
    pairs.sort_unstable();
    t_only.sort_unstable();
    o_only.sort_unstable();
    (pairs, t_only, o_only)
}

/// Agreement of one column over the corpus.
#[derive(Default)]
struct Tally {
    agree: usize,
    total: usize,
    /// disagreements per capture
    by_capture: BTreeMap<String, usize>,
}

#[derive(Default)]
struct Corpus {
    captures: usize,
    /// "tcp c_pkts_all" -> tally
    columns: BTreeMap<String, Tally>,
    matched: BTreeMap<&'static str, usize>,
    /// (Tstat's log, tapstat's log) of matched TCP flows
    logs: BTreeMap<(&'static str, &'static str), usize>,
    /// (side, proto, reason) -> records
    unmatched: BTreeMap<(&'static str, &'static str, String), usize>,
    /// unmatched records without a known reason
    unexplained: Vec<String>,
}

const TCP_LOGS: [&str; 2] = ["log_tcp_complete", "log_tcp_nocomplete"];

fn compare_capture(corpus: &Path, name: &str, acc: &mut Corpus, verbose: bool) {
    let out = tempdir(&format!("tstat-{name}"));
    analyze(&corpus.join(name), &out, 1, &[]);
    let tdir = corpus.join("oracles/tstat").join(name);
    for proto in ["tcp", "udp"] {
        let (logs, columns, first_col): (&[&'static str], _, _) = match proto {
            "tcp" => (&TCP_LOGS, TCP_COLUMNS, "first"),
            _ => (&["log_udp_complete"], UDP_COLUMNS, "c_first_abs"),
        };
        let (mut t, mut o) = (Vec::new(), Vec::new());
        for &log in logs {
            t.extend(records(read_tstat(&tdir.join(log)), log, first_col, &format!("{name}: Tstat's")));
            o.extend(records(read_log(&out, log), log, first_col, &format!("{name}: tapstat's")));
        }
        let (pairs, t_only, o_only) = match_records(&t, &o);
        *acc.matched.entry(proto).or_default() += pairs.len();
        for &(i, j) in &pairs {
            let (tr, or) = (&t[i], &o[j]);
            if proto == "tcp" {
                *acc.logs.entry((tr.log, or.log)).or_default() += 1;
            }
            for c in columns {
                // Tstat writes the end-to-end and options sets in log_tcp_complete
                // only: its log_tcp_nocomplete has the core columns alone.
                if tr.log == "log_tcp_nocomplete" && !tr.row.contains_key(c.name) && !CORE_TCP.contains(&c.name) {
                    continue;
                }
                let tally = acc.columns.entry(format!("{proto} {}", c.name)).or_default();
                tally.total += 1;
                let tv = tr.row.get(c.name).unwrap_or_else(|| panic!("{name}: Tstat's {} has no {}", tr.log, c.name));
                let ov = or.row.get(c.name).unwrap_or_else(|| panic!("{name}: tapstat's {} has no {}", or.log, c.name));
                if agree(c.kind, tv, ov) {
                    tally.agree += 1;
                } else {
                    *tally.by_capture.entry(name.to_string()).or_default() += 1;
                    if verbose {
                        eprintln!(
                            "{name} {proto} {:?} first {}: {} Tstat {tv} tapstat {ov}",
                            tr.quad, tr.first, c.name
                        );
                    }
                }
            }
        }
        let t_quads: Vec<Quad> = t.iter().map(|r| r.quad).collect();
        let o_quads: Vec<Quad> = o.iter().map(|r| r.quad).collect();
        let same_or_reversed = |quads: &[Quad], q: &Quad| quads.iter().any(|x| x == q || *x == reversed(q));
        for j in o_only {
            let r = &o[j];
            let reason = if proto == "tcp" && !r.row["history"].contains('S') {
                "no SYN from the client: Tstat opens a TCP flow only on a SYN without ACK".to_string()
            } else if r.row["tunnel"] != "-" {
                format!("inside a {} tunnel, which Tstat does not decapsulate", r.row["tunnel"])
            } else if same_or_reversed(&t_quads, &r.quad) {
                "cut differently: Tstat has the same endpoints in fewer or other records".to_string()
            } else if let Some((_, why)) = NOT_DECODED_BY_TSTAT.iter().find(|(c, _)| *c == name) {
                format!("Tstat does not decode the capture's {why}")
            } else {
                acc.unexplained.push(format!("{name}: tapstat's {} {:?} first {}", r.log, r.quad, r.first));
                "unexplained".to_string()
            };
            *acc.unmatched.entry(("tapstat only", proto, reason)).or_default() += 1;
        }
        for i in t_only {
            let r = &t[i];
            let syn_only = |p: &str| r.row[&format!("{p}_pkts_all")] == r.row[&format!("{p}_syn_cnt")];
            let reason = if proto == "tcp" && syn_only("c") && r.row["s_pkts_all"] == "0" {
                "repeated SYNs more than 10 s apart: Tstat's singleton timeout restarts the flow".to_string()
            } else if proto == "udp"
                && (TUNNEL_PORTS.contains(&r.row["c_port"].as_str())
                    || TUNNEL_PORTS.contains(&r.row["s_port"].as_str()))
            {
                "the outer UDP flow of a tunnel tapstat decapsulates".to_string()
            } else if same_or_reversed(&o_quads, &r.quad) {
                "cut differently: tapstat has the same endpoints in fewer or other records".to_string()
            } else {
                acc.unexplained.push(format!("{name}: Tstat's {} {:?} first {}", r.log, r.quad, r.first));
                "unexplained".to_string()
            };
            *acc.unmatched.entry(("Tstat only", proto, reason)).or_default() += 1;
        }
    }
    acc.captures += 1;
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn core_columns_agree_with_tstat() {
    let Some(corpus) = corpus() else { return };
    if !corpus.join("oracles/tstat/STATUS.tsv").is_file() {
        assert!(
            std::env::var("TAPSTAT_REQUIRE_CORPUS").as_deref() != Ok("1"),
            "TAPSTAT_REQUIRE_CORPUS=1 but {} has no oracles/tstat/STATUS.tsv",
            corpus.display()
        );
        eprintln!("skipped: no Tstat oracles in {}", corpus.display());
        return;
    }
    let verbose = std::env::var("TAPSTAT_TSTAT_VERBOSE").as_deref() == Ok("1");
    let caps = tstat_captures(&corpus);
    assert!(caps.len() > 90, "expected Tstat's output for most dev captures, found {}", caps.len());
    let mut acc = Corpus::default();
    for name in &caps {
        assert!(corpus.join(name).is_file(), "{name}: in Tstat's STATUS.tsv but not in the corpus");
        compare_capture(&corpus, name, &mut acc, verbose);
    }

    eprintln!("{} captures; matched flows: {:?}", acc.captures, acc.matched);
    eprintln!("matched TCP flows by log (Tstat's, tapstat's): {:?}", acc.logs);
    for ((side, proto, reason), n) in &acc.unmatched {
        eprintln!("{side} {proto}: {n:>5}  {reason}");
    }
    eprintln!("{:<18} {:>11} {:>8} {:>7}  most disagreements in", "column", "agree", "share", "floor");
    let mut below = Vec::new();
    for (proto, columns) in [("tcp", TCP_COLUMNS), ("udp", UDP_COLUMNS)] {
        for c in columns {
            let key = format!("{proto} {}", c.name);
            let t = &acc.columns[&key];
            let share = 100.0 * t.agree as f64 / t.total.max(1) as f64;
            let mut worst: Vec<(&String, &usize)> = t.by_capture.iter().collect();
            worst.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let worst: Vec<String> = worst.iter().take(3).map(|(c, n)| format!("{c} {n}")).collect();
            eprintln!("{key:<18} {:>5}/{:<5} {share:>7.2}% {:>6.1}%  {}", t.agree, t.total, c.floor, worst.join(", "));
            if share < c.floor {
                below.push(format!(
                    "{key}: {share:.2}% agree with Tstat, floor {}% (worst: {})",
                    c.floor,
                    worst.join(", ")
                ));
            }
        }
    }

    assert!(acc.matched["tcp"] >= 2850, "too few TCP flows matched Tstat's: {}", acc.matched["tcp"]);
    assert!(acc.matched["udp"] >= 1950, "too few UDP flows matched Tstat's: {}", acc.matched["udp"]);
    assert!(
        acc.unexplained.is_empty(),
        "flows only one tool has, for no known reason:\n{}",
        acc.unexplained.join("\n")
    );
    assert!(below.is_empty(), "columns below their floor of agreement with Tstat:\n{}", below.join("\n"));
}

/// Every one of Tstat's 44 core columns (the first 44 of its log_tcp_complete) is
/// compared, or is one of the four that pair the records.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn every_core_column_is_compared() {
    let Some(corpus) = corpus() else { return };
    let Some(name) = tstat_captures(&corpus).into_iter().find(|c| {
        std::fs::read_to_string(corpus.join("oracles/tstat").join(c).join("log_tcp_complete"))
            .is_ok_and(|t| t.lines().count() > 1)
    }) else {
        panic!("no Tstat log_tcp_complete with records in the oracles")
    };
    let rows = read_tstat(&corpus.join("oracles/tstat").join(&name).join("log_tcp_complete"));
    let text = std::fs::read_to_string(corpus.join("oracles/tstat").join(&name).join("log_tcp_complete")).unwrap();
    let header = text.lines().next().unwrap();
    let core: Vec<&str> = header
        .split_whitespace()
        .map(|c| c.rsplit_once(':').map_or(c, |(n, _)| n).rsplit('#').next().unwrap_or(c))
        .take(44)
        .collect();
    assert_eq!((core[0], core[43]), ("c_ip", "http_t"), "{name}: Tstat's header: {header}");
    assert!(rows.iter().all(|r| core.iter().all(|c| r.contains_key(*c))));
    for c in core {
        let compared = TCP_COLUMNS.iter().any(|x| x.name == c) && CORE_TCP.contains(&c);
        assert!(
            compared || ["c_ip", "c_port", "s_ip", "s_port"].contains(&c),
            "Tstat's core column {c} is not compared"
        );
    }
}

#[test]
fn reads_tstats_header_lines() {
    let dir = tempdir("tstat-header");
    std::fs::write(dir.join("tcp"), "#31#c_ip:1 c_port:2 first:29\n10.0.0.1 80 1.5\n").unwrap();
    std::fs::write(dir.join("udp"), "#c_ip:1 c_port:2 c_durat:4\n::1 53 0.25\n").unwrap();
    let tcp = read_tstat(&dir.join("tcp"));
    assert_eq!(tcp.len(), 1);
    assert_eq!(
        (tcp[0]["c_ip"].as_str(), tcp[0]["c_port"].as_str(), tcp[0]["first"].as_str()),
        ("10.0.0.1", "80", "1.5")
    );
    let udp = read_tstat(&dir.join("udp"));
    assert_eq!((udp[0]["c_ip"].as_str(), udp[0]["c_durat"].as_str()), ("::1", "0.25"));
    assert!(agree(TstatSeconds, "0.25", "250.000"));
    assert!(agree(Ms, "0.000000", "-"));
    assert!(agree(Ms, "1603816434535.254883", "1603816434535.256"));
    assert!(!agree(Ms, "1603816434535.254883", "1603816434535.257"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Tstat never logged a BitTorrent TCP flow in the corpus (ndpi__bittorrent.pcap's start
/// mid-connection, without a SYN, which Tstat skips), so `p2p_t` is held here to Tstat's
/// sources: 900 (`IPP2P_BIT * 100`, `IPP2P_BIT` being 9 in Tstat's ipp2p.h) exactly on the
/// flows whose payload showed the BitTorrent handshake, 0 on the others.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn bittorrent_flows_have_tstats_p2p_code() {
    let Some(c) = corpus() else { return };
    let out = tempdir("tstat-p2p");
    analyze(&c.join("ndpi__bittorrent.pcap"), &out, 1, &[]);
    let mut bittorrent = 0;
    for log in ["log_tcp_complete", "log_tcp_nocomplete"] {
        for r in read_log(&out, log) {
            let want = if r["app"] == "bittorrent" { "900" } else { "0" };
            bittorrent += usize::from(want == "900");
            assert_eq!(r["p2p_t"], want, "{log} {}:{} app {}", r["c_ip"], r["c_port"], r["app"]);
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(bittorrent >= 10, "only {bittorrent} BitTorrent TCP flows");
}
