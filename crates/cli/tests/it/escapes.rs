//! Strings from traffic that would break a log: a capture whose DNS names and answers
//! hold list separators, brackets and quotes, and whose TLS server name and HTTP
//! User-Agent hold terminal escapes, NUL and the characters line splitters split at.
//! Every log must keep one record per line, the header's columns on every line and no
//! raw control character, in TSV and in JSON lines; the values must read back exactly
//! (`tsv::unescape`, `tsv::list_items`, a JSON parser); and, with python3 and DuckDB,
//! Python's `splitlines()` must count the lines `\n` ends and docs/USAGE.md's
//! `CAST(answers AS VARCHAR[])` must give back each answer.

use crate::common::{analyze, python_ready, tempdir};
use crate::load::{DUCKDB_CALL, PANDAS_CALL};
use std::path::Path;
use std::process::Command;
use tapstat_record::tsv::{list_items, str_value, unescape};
use tapstat_testkit::frames::*;

const USAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/USAGE.md");
const CAST: &str = "CAST(answers AS VARCHAR[])";

const CLIENT: [u8; 4] = [192, 0, 2, 10];
const RESOLVER: [u8; 4] = [198, 51, 100, 53];
const SERVER: [u8; 4] = [198, 51, 100, 20];

/// The query's labels, and the name tapstat spells from them (RFC 1035 master-file
/// escapes for bytes that are not printable, a UTF-8 label without controls as it is).
const QUERY: &[&str] = &["a,b", "[q]'\"", "ls\u{2028}"];
const QUERY_TEXT: &str = "a,b.[q]'\".ls\u{2028}";

/// The CNAMEs of the answer, as labels of bytes, and their text in the log.
const CNAMES: &[(&[&[u8]], &str)] = &[
    (&[b"a,b", b"example"], "a,b.example"),
    (&[b"[x]"], "[x]"),
    (&[b"it's", b"q\"u"], "it's.q\"u"),
    (&[b"back\\slash"], "back\\\\slash"),
    (&[b"null"], "null"),
    (&[b"sp ace"], "sp\\032ace"),
    (&[b"{y}(z)"], "{y}(z)"),
    (&["ls\u{2028}ps\u{2029}".as_bytes()], "ls\u{2028}ps\u{2029}"),
    (&[b"\x1b[31mred", b"\x00nul"], "\\027[31mred.\\000nul"),
    (&["nel\u{85}".as_bytes()], "nel\\194\\133"),
    (&["\u{e9}".as_bytes(), b"example"], "\u{e9}.example"),
];
/// An A record after the CNAMEs.
const ADDRESS: [u8; 4] = [192, 0, 2, 1];

/// A server name that sets a terminal's title, clears its screen and rings it, with the
/// C0 and C1 controls and separators `splitlines()` splits at, and list and quote
/// characters.
const SNI: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J,[x]\0\u{b}\u{c}\u{1c}\u{1d}\u{1e}\u{7f}\u{85}\u{2028}\u{2029}\"'\\ end";
const USER_AGENT: &str = "ua\u{1b}[1mbold\u{85}\u{9b}31m\u{2028}x\u{c}y";

fn name(labels: &[&[u8]]) -> Vec<u8> {
    let mut m = Vec::new();
    for l in labels {
        m.push(l.len() as u8);
        m.extend_from_slice(l);
    }
    m.push(0);
    m
}

fn ether(src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
    Eth::plain().build(0x0800, &Ipv4::between(src, dst, proto).build(payload))
}

/// A TCP connection from the client's `port` to the server's `sport`: handshake, one
/// request and one response, FINs.
fn tcp_exchange(frames: &mut Vec<Vec<u8>>, port: u16, sport: u16, req: &[u8], res: &[u8]) {
    let (c, s) = (1_000u32, 9_000u32);
    let (rq, rs) = (req.len() as u32, res.len() as u32);
    let seg = |from_client: bool, seq, ack, flags, payload: &[u8]| {
        let (a, b, pa, pb) = if from_client { (CLIENT, SERVER, port, sport) } else { (SERVER, CLIENT, sport, port) };
        ether(a, b, 6, &Tcp::segment(pa, pb, seq, ack, flags).build(payload))
    };
    frames.extend([
        seg(true, c, 0, 0x02, b""),
        seg(false, s, c + 1, 0x12, b""),
        seg(true, c + 1, s + 1, 0x10, b""),
        seg(true, c + 1, s + 1, 0x18, req),
        seg(false, s + 1, c + 1 + rq, 0x18, res),
        seg(true, c + 1 + rq, s + 1 + rs, 0x11, b""),
        seg(false, s + 1 + rs, c + 2 + rq, 0x11, b""),
        seg(true, c + 2 + rq, s + 2 + rs, 0x10, b""),
    ]);
}

fn hostile_pcap(path: &Path) {
    let mut frames = Vec::new();
    let qname = QUERY.join(".");
    let q = dns_question(0x0101, &qname, 5);
    let cnames: Vec<Vec<u8>> = CNAMES.iter().map(|(labels, _)| name(labels)).collect();
    let refs: Vec<&[u8]> = cnames.iter().map(Vec::as_slice).collect();
    let mut a = dns_reply(0x0101, &qname, 5, 0, &refs);
    // One more answer, an A record owned by the question's name.
    let n = u16::from_be_bytes([a[6], a[7]]) + 1;
    a[6..8].copy_from_slice(&n.to_be_bytes());
    a.extend([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x01, 0x2c, 0, 4]);
    a.extend(ADDRESS);
    frames.push(ether(CLIENT, RESOLVER, 17, &udp(40_001, 53, &q)));
    frames.push(ether(RESOLVER, CLIENT, 17, &udp(53, 40_001, &a)));
    tcp_exchange(&mut frames, 40_002, 443, &tls_client_hello(SNI, &["h2"]), &tls_server_hello(Some("h2")));
    let req = format!("GET / HTTP/1.1\r\nHost: example.com\r\nUser-Agent: {USER_AGENT}\r\n\r\n");
    tcp_exchange(&mut frames, 40_003, 80, req.as_bytes(), b"HTTP/1.1 204 No Content\r\n\r\n");
    let t0 = 1_700_000_000_000_000_000u64;
    let records: Vec<_> =
        frames.into_iter().enumerate().map(|(i, f)| (t0 + i as u64 * 1_000_000, f.clone(), f.len() as u32)).collect();
    std::fs::write(path, pcap(PcapFormat::Micro, false, 1, 65_535, &records)).unwrap();
}

/// Characters a terminal, a line splitter or a JavaScript parser acts on.
fn acted_on(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

fn escaped(s: &str) -> String {
    let mut out = Vec::new();
    str_value(s, &mut out);
    String::from_utf8(out).unwrap()
}

/// The records of a TSV log, each a map column -> field.
fn records(dir: &Path, log: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(dir.join(log)).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    lines.map(|l| header.iter().zip(l.split('\t')).map(|(c, v)| (c.to_string(), v.to_string())).collect()).collect()
}

/// Every line of every log of `dir` has the header's column count and no character
/// acted on but tab and line feed; the number of logs.
fn check_lines(dir: &Path) -> usize {
    let mut files = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let bad: Vec<char> = text.chars().filter(|&c| acted_on(c) && c != '\t' && c != '\n').collect();
        assert!(bad.is_empty(), "{}: raw {bad:?}", p.display());
        let mut lines = text.split_terminator('\n');
        let width = lines.next().map_or(0, |h| h.split('\t').count());
        for (i, l) in lines.enumerate() {
            assert_eq!(l.split('\t').count(), width, "{}:{}: {l:?}", p.display(), i + 2);
        }
        files += 1;
    }
    files
}

#[test]
fn hostile_strings_keep_logs_one_record_a_line_and_read_back_exactly() {
    let dir = tempdir("escapes");
    let pcap = dir.join("hostile.pcap");
    hostile_pcap(&pcap);
    let (tsv, jsonl) = (dir.join("tsv"), dir.join("jsonl"));
    analyze(&pcap, &tsv, 1, &[]);
    analyze(&pcap, &jsonl, 1, &["--format", "jsonl"]);

    assert!(check_lines(&tsv) >= 3);
    let dns = records(&tsv, "log_dns_complete");
    assert_eq!(dns.len(), 1);
    let dns = &dns[0];
    assert_eq!(dns["query"], escaped(QUERY_TEXT));
    assert_eq!(unescape(&dns["query"]), QUERY_TEXT);
    let mut answers: Vec<String> = CNAMES.iter().map(|(_, t)| t.to_string()).collect();
    answers.push("192.0.2.1".into());
    assert_eq!(list_items(&dns["answers"]).as_ref(), Some(&answers), "{}", dns["answers"]);
    assert!(dns["answers"].starts_with("['a,b.example','[x]','it\\'s.q\\\\\"u',"), "{}", dns["answers"]);
    assert!(dns["answers"].ends_with(",é.example,192.0.2.1]"), "{}", dns["answers"]);
    let tcp = records(&tsv, "log_tcp_complete");
    let snis: Vec<String> =
        tcp.iter().filter(|r| !r["c_tls_SNI"].is_empty()).map(|r| unescape(&r["c_tls_SNI"])).collect();
    assert_eq!(snis, [SNI]);
    let http = records(&tsv, "log_http_complete");
    assert_eq!(http.len(), 1);
    assert_eq!(unescape(&http[0]["user_agent"]), USER_AGENT);

    // JSON lines: the same values, exactly, and no raw control either.
    assert!(check_lines(&jsonl) >= 3);
    let json = |log: &str, col: &str| -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(jsonl.join(format!("{log}.jsonl"))).unwrap();
        let rows = text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()[col].clone());
        rows.filter(|v| !v.is_null()).collect()
    };
    assert_eq!(json("log_dns_complete", "query"), [QUERY_TEXT]);
    assert_eq!(json("log_dns_complete", "answers"), [serde_json::json!(answers)]);
    assert_eq!(json("log_tcp_complete", "c_tls_SNI"), [SNI]);
    assert_eq!(json("log_http_complete", "user_agent"), [USER_AGENT]);

    // With DuckDB, the query docs/USAGE.md shows, on the file as it is.
    assert!(std::fs::read_to_string(USAGE).unwrap().contains(CAST), "docs/USAGE.md does not show {CAST}");
    if !python_ready() {
        return;
    }
    // The calls docs/USAGE.md shows (load.rs checks README.md has them too).
    let usage = std::fs::read_to_string(USAGE).unwrap();
    let (duck, pandas) = (DUCKDB_CALL.replace("path", "f"), PANDAS_CALL.replace("path", "f"));
    assert!(usage.contains(&duck) && usage.contains(&pandas), "docs/USAGE.md does not show {duck} and {pandas}");
    let script = format!(
        "import sys, os, json, duckdb, pandas as pd\n\
         d = sys.argv[1]\n\
         lines = {{n: len(open(os.path.join(d, n), encoding='utf-8', newline='').read().splitlines()) for n in os.listdir(d) if not n.endswith('.json')}}\n\
         f = os.path.join(d, 'log_dns_complete')\n\
         rel = {duck}\n\
         got = duckdb.sql('SELECT {CAST}, query FROM rel').fetchall()\n\
         df = pd.{pandas}\n\
         print(json.dumps({{'lines': lines, 'rows': [[list(a), q] for a, q in got], 'pandas': [len(df), df.loc[0, 'answers']]}}))"
    );
    let o = Command::new("python3").args(["-c", &script, tsv.to_str().unwrap()]).output().expect("python3 runs");
    assert!(o.status.success(), "python3 failed: {}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for (log, n) in v["lines"].as_object().unwrap() {
        let text = std::fs::read_to_string(tsv.join(log)).unwrap();
        assert_eq!(n.as_u64(), Some(text.matches('\n').count() as u64), "splitlines() on {log}");
    }
    // Each item as a VARCHAR column gives a string: with the TSV escapes in it.
    let items: Vec<String> = answers.iter().map(|a| escaped(a)).collect();
    assert_eq!(v["rows"], serde_json::json!([[items, escaped(QUERY_TEXT)]]));
    assert_eq!(v["pandas"], serde_json::json!([1, dns["answers"]]));
}
