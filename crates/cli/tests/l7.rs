//! The application layer through the whole engine, against nDPI and tshark, on every
//! dev capture.
//!
//! - `app` against ndpiReader's protocol (oracles/<capture>.ndpireader.csv) for the
//!   protocols tapstat classifies, flows matched by their endpoints;
//! - TLS and QUIC server names, DNS query names and response codes, and HTTP hosts
//!   against tshark (run here: needs tshark, `.ci/run` installs it; skipped with a
//!   printed reason where missing, unless `TAPSTAT_REQUIRE_TSHARK=1`).
//!
//! docs/METRICS.md ("Application layer") lists the disagreements and who is right.
//! `TAPSTAT_L7_VERBOSE=1` prints every one.

mod common;
use common::*;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::process::Command;

/// Two endpoints in a canonical order (the lower first) and the transport.
type Pair = (bool, (IpAddr, u16), (IpAddr, u16));

fn pair(tcp: bool, a: (&str, &str), b: (&str, &str)) -> Option<Pair> {
    let a = (a.0.parse::<IpAddr>().ok()?, a.1.parse::<u16>().ok()?);
    let b = (b.0.parse::<IpAddr>().ok()?, b.1.parse::<u16>().ok()?);
    Some(if a <= b { (tcp, a, b) } else { (tcp, b, a) })
}

fn verbose() -> bool {
    std::env::var("TAPSTAT_L7_VERBOSE").as_deref() == Ok("1")
}

/// nDPI's master protocol → tapstat's `app`, for the protocols tapstat classifies.
fn ndpi_app(proto: &str) -> Option<&'static str> {
    Some(match proto.split('.').next().unwrap_or_default() {
        "TLS" => "tls",
        "QUIC" => "quic",
        "HTTP" | "HTTP_Proxy" => "http",
        "DNS" | "MDNS" | "LLMNR" => "dns",
        "SSH" => "ssh",
        "SMTP" | "SMTPS" => "smtp",
        "POP3" => "pop3",
        "IMAP" => "imap",
        "BitTorrent" => "bittorrent",
        "RTP" => "rtp",
        "RTCP" => "rtcp",
        "STUN" => "stun",
        "SIP" => "sip",
        "DTLS" => "dtls",
        _ => return None,
    })
}

/// tapstat's TCP and UDP records of a run, by endpoint pair.
fn ours(out: &std::path::Path) -> HashMap<Pair, Vec<BTreeMap<String, String>>> {
    let mut m: HashMap<Pair, Vec<_>> = HashMap::new();
    for (log, tcp) in [("log_tcp_complete", true), ("log_tcp_nocomplete", true), ("log_udp_complete", false)] {
        for r in read_log(out, log) {
            if let Some(k) = pair(tcp, (&r["c_ip"], &r["c_port"]), (&r["s_ip"], &r["s_port"])) {
                m.entry(k).or_default().push(r);
            }
        }
    }
    m
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn classification_agrees_with_ndpi() {
    let Some(corpus) = corpus() else { return };
    let (mut agree, mut total) = (0usize, 0usize);
    let mut confusion: BTreeMap<(String, String), usize> = BTreeMap::new();
    for cap in dev_captures(&corpus) {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let Ok(csv) = std::fs::read_to_string(corpus.join("oracles").join(format!("{name}.ndpireader.csv"))) else {
            continue;
        };
        let out = tempdir(&format!("l7-ndpi-{name}"));
        analyze(&cap, &out, 1, &[]);
        let ours = ours(&out);
        let mut lines = csv.lines();
        let Some(header) = lines.next() else { continue };
        let cols: Vec<&str> = header.trim_start_matches('#').split(',').collect();
        let at = |c: &str| cols.iter().position(|x| *x == c);
        let (Some(p), Some(si), Some(sp), Some(di), Some(dp), Some(np)) =
            (at("protocol"), at("src_ip"), at("src_port"), at("dst_ip"), at("dst_port"), at("ndpi_proto"))
        else {
            continue;
        };
        for line in lines {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() <= np.max(dp) {
                continue;
            }
            let tcp = match f[p] {
                "6" => true,
                "17" => false,
                _ => continue,
            };
            let Some(want) = ndpi_app(f[np]) else { continue };
            let Some(k) = pair(tcp, (f[si], f[sp]), (f[di], f[dp])) else { continue };
            // Flows tapstat did not see as TCP/UDP (tunnels nDPI does not open, ...)
            // are not classification disagreements.
            let Some(recs) = ours.get(&k) else { continue };
            total += 1;
            let got: HashSet<&str> = recs.iter().map(|r| r["app"].as_str()).collect();
            if got.contains(want) {
                agree += 1;
            } else {
                let g = got.into_iter().collect::<Vec<_>>().join("|");
                if verbose() {
                    eprintln!("  {name} {k:?}: nDPI {} ({want}), tapstat {g}", f[np]);
                }
                *confusion.entry((want.to_string(), g)).or_default() += 1;
            }
        }
        let _ = std::fs::remove_dir_all(&out);
    }
    let share = agree as f64 / total.max(1) as f64;
    eprintln!("app agrees with nDPI on {agree} of {total} flows ({:.2}%)", share * 100.0);
    for ((want, got), n) in &confusion {
        eprintln!("  nDPI {want}, tapstat {got}: {n}");
    }
    assert!(total > 1500, "too few flows to compare: {total}");
    assert!(share >= 0.95, "the issue asks for 95%");
}

/// What tshark says: the first ClientHello's SNI per endpoint pair, DNS responses by
/// (pair, id), HTTP request hosts by pair in order.
#[derive(Default)]
struct Tshark {
    sni: HashMap<Pair, String>,
    dns: HashMap<(Pair, u16), (String, u8)>,
    http: HashMap<Pair, Vec<String>>,
}

fn tshark(cap: &std::path::Path) -> Tshark {
    let fields = [
        "ip.src",
        "ipv6.src",
        "tcp.srcport",
        "udp.srcport",
        "ip.dst",
        "ipv6.dst",
        "tcp.dstport",
        "udp.dstport",
        "tls.handshake.type",
        "tls.handshake.extensions_server_name",
        "dns.flags.response",
        "dns.id",
        "dns.qry.name",
        "dns.flags.rcode",
        "http.request",
        "http.host",
    ];
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(cap);
    cmd.args(["-Y", "tls.handshake.type == 1 || dns.flags.response == 1 || http.request", "-T", "fields"]);
    cmd.args(["-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=|"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    let mut t = Tshark::default();
    // Tunnels give several headers: the innermost is the last.
    let last = |s: &str| s.rsplit('|').next().unwrap_or("").to_string();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Vec<&str> = line.split('\t').collect();
        if v.len() < fields.len() {
            continue;
        }
        let src = last(if v[0].is_empty() { v[1] } else { v[0] });
        let dst = last(if v[4].is_empty() { v[5] } else { v[4] });
        let tcp = !v[2].is_empty();
        let (sp, dp) = if tcp { (last(v[2]), last(v[6])) } else { (last(v[3]), last(v[7])) };
        let Some(k) = pair(tcp, (&src, &sp), (&dst, &dp)) else { continue };
        if v[8].split('|').any(|x| x == "1") && !v[9].is_empty() {
            t.sni.entry(k).or_insert_with(|| v[9].split('|').next().unwrap_or("").to_string());
        }
        if v[10].split('|').any(|x| x == "1" || x == "True") && !v[11].is_empty() {
            let id = u16::from_str_radix(v[11].split('|').next().unwrap_or("").trim_start_matches("0x"), 16).ok();
            let rcode = v[13].split('|').next().and_then(|x| x.parse::<u8>().ok());
            if let (Some(id), Some(rcode)) = (id, rcode) {
                let q = v[12].split('|').next().unwrap_or("").to_string();
                t.dns.insert((k, id), (q, rcode));
            }
        }
        if !v[14].is_empty() && !v[15].is_empty() {
            t.http.entry(k).or_default().push(v[15].to_string());
        }
    }
    t
}

/// A name as tapstat writes it (RFC 1035 §5.1 master-file escapes, as dig prints them:
/// `\DDD` for a byte that is not printable ASCII, `\.` for a dot inside a label) back
/// to its bytes, read as UTF-8 the way the test reads tshark's output.
fn unescape(s: &str) -> String {
    // First the TSV writer's escapes (a backslash is written doubled).
    let s = s.replace("\\\\", "\u{1}").replace("\\t", "\t").replace('\u{1}', "\\");
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let n = (b[i + 1] - b'0') as u32 * 100 + (b[i + 2] - b'0') as u32 * 10 + (b[i + 3] - b'0') as u32;
            out.push(n as u8);
            i += 4;
        } else if b[i] == b'\\' && i + 1 < b.len() {
            out.push(b[i + 1]);
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn server_names_dns_and_http_hosts_agree_with_tshark() {
    let Some(corpus) = corpus() else { return };
    if !tshark_ready() {
        return;
    }
    // (agree, total) per measure
    let (mut sni, mut dns, mut rcode, mut http) = ((0, 0), (0, 0), (0, 0), (0, 0));
    for cap in dev_captures(&corpus) {
        let name = cap.file_name().unwrap().to_string_lossy().to_string();
        let out = tempdir(&format!("l7-tshark-{name}"));
        analyze(&cap, &out, 1, &[]);
        let recs = ours(&out);
        let t = tshark(&cap);
        for (k, want) in &t.sni {
            let Some(rs) = recs.get(k) else { continue };
            sni.1 += 1;
            let got: Vec<&str> = rs
                .iter()
                .flat_map(|r| ["c_tls_SNI", "quic_SNI", "dtls_SNI"].map(|c| r.get(c).map_or("-", String::as_str)))
                .collect();
            if got.contains(&want.as_str()) {
                sni.0 += 1;
            } else if verbose() {
                eprintln!("  {name} {k:?}: SNI tshark {want}, tapstat {got:?}");
            }
        }
        let mut ours_dns: HashMap<(Pair, u16), (String, String)> = HashMap::new();
        for r in read_log(&out, "log_dns_complete") {
            let tcp = false;
            let Some(k) = pair(tcp, (&r["c_ip"], &r["c_port"]), (&r["s_ip"], &r["s_port"])) else { continue };
            if r["rcode"] != "-" {
                ours_dns.insert((k, r["trans_id"].parse().unwrap()), (r["query"].clone(), r["rcode"].clone()));
            }
        }
        for (k, (q, rc)) in &t.dns {
            if k.0 .0 {
                continue; // DNS over TCP: tapstat's rows are keyed the same, but rare; skip
            }
            let Some((oq, orc)) = ours_dns.get(k) else {
                if recs.contains_key(&k.0) {
                    dns.1 += 1;
                    rcode.1 += 1;
                    if verbose() {
                        eprintln!("  {name} {k:?}: DNS response {q} not in log_dns_complete");
                    }
                }
                continue;
            };
            // mDNS announcements carry answers and no question: tshark has no name.
            if q.is_empty() {
                continue;
            }
            dns.1 += 1;
            rcode.1 += 1;
            if unescape(oq).trim_end_matches('.').eq_ignore_ascii_case(q.trim_end_matches('.')) {
                dns.0 += 1;
            } else if verbose() {
                eprintln!("  {name} {k:?}: query tshark {q}, tapstat {oq}");
            }
            if orc == &rc.to_string() {
                rcode.0 += 1;
            }
        }
        let mut ours_http: HashMap<Pair, Vec<String>> = HashMap::new();
        for r in read_log(&out, "log_http_complete") {
            let Some(k) = pair(true, (&r["c_ip"], &r["c_port"]), (&r["s_ip"], &r["s_port"])) else { continue };
            if r["method"] != "-" {
                ours_http.entry(k).or_default().push(r["hostname"].clone());
            }
        }
        for (k, hosts) in &t.http {
            // HTTP over UDP (SSDP, to port 1900) is not HTTP/1.x over TCP.
            if !k.0 || !recs.contains_key(k) {
                continue;
            }
            let got = ours_http.get(k).cloned().unwrap_or_default();
            for (i, h) in hosts.iter().enumerate() {
                http.1 += 1;
                if got.get(i) == Some(h) {
                    http.0 += 1;
                } else if verbose() {
                    eprintln!("  {name} {k:?}: HTTP host #{i} tshark {h}, tapstat {:?}", got.get(i));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&out);
    }
    let pct = |(a, n): (usize, usize)| 100.0 * a as f64 / n.max(1) as f64;
    eprintln!(
        "tshark: SNI {}/{} ({:.2}%), DNS names {}/{} ({:.2}%), rcodes {}/{} ({:.2}%), HTTP hosts {}/{} ({:.2}%)",
        sni.0,
        sni.1,
        pct(sni),
        dns.0,
        dns.1,
        pct(dns),
        rcode.0,
        rcode.1,
        pct(rcode),
        http.0,
        http.1,
        pct(http)
    );
    assert!(sni.1 > 300 && dns.1 > 300 && http.1 > 300, "too little to compare");
    // Measured at this commit: 100%, 99.04%, 99.52%, 100%.
    assert!(pct(sni) >= 99.5 && pct(dns) >= 98.5 && pct(rcode) >= 98.5 && pct(http) >= 99.5);
}

/// `--l7-budget 0` classifies and parses nothing: the same `app` as the default budget
/// on every flow, but no server name, fingerprint or HTTP column, and no HTTP or DNS
/// rows (before, 0 changed nothing).
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn budget_zero_classifies_only() {
    let Some(corpus) = corpus() else { return };
    for name in ["ndpi__443-firefox.pcap", "ndpi__http.pcapng", "ndpi__dns.pcap"] {
        let cap = corpus.join(name);
        let (full, zero) = (tempdir(&format!("l7-budget-{name}")), tempdir(&format!("l7-budget0-{name}")));
        analyze(&cap, &full, 1, &[]);
        analyze(&cap, &zero, 1, &["--l7-budget", "0"]);
        let (full_recs, zero_recs) = (ours(&full), ours(&zero));
        assert_eq!(full_recs.len(), zero_recs.len(), "{name}");
        let filled = |recs: &HashMap<Pair, Vec<BTreeMap<String, String>>>, col: &str| {
            recs.values().flatten().filter(|r| r.get(col).is_some_and(|v| v != "-")).count()
        };
        for (k, rs) in &full_recs {
            let apps = |rs: &[BTreeMap<String, String>]| rs.iter().map(|r| r["app"].clone()).collect::<Vec<_>>();
            assert_eq!(apps(rs), apps(&zero_recs[k]), "{name} {k:?}");
        }
        for col in ["c_tls_SNI", "ja3", "ja4", "http_hostname"] {
            assert_eq!(filled(&zero_recs, col), 0, "{name}: {col} with budget 0");
        }
        assert!(
            filled(&full_recs, "c_tls_SNI") + filled(&full_recs, "http_hostname") > 0
                || !read_log(&full, "log_dns_complete").is_empty(),
            "{name}: the default budget finds something"
        );
        for log in ["log_http_complete", "log_dns_complete"] {
            assert!(read_log(&zero, log).is_empty(), "{name}: {log} with budget 0");
        }
        let _ = (std::fs::remove_dir_all(&full), std::fs::remove_dir_all(&zero));
    }
}
