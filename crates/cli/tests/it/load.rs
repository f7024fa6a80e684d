//! Logs users can load: every log of the dev captures, and of a capture with hostile
//! strings, read with the README's calls (pandas and DuckDB, from pip) and checked
//! against `tapstat schema --format json` by load_check.py. Skipped, with the reason
//! printed, where python3, pandas or DuckDB is missing, unless TAPSTAT_REQUIRE_PYTHON=1.

use crate::common::{analyze, corpus, dev_captures, python_ready, tapstat, tempdir};
use std::path::{Path, PathBuf};
use std::process::Command;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/load_check.py");
const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");

/// The calls README.md documents, which load_check.py makes.
pub(crate) const PANDAS_CALL: &str = r#"read_csv(path, sep="\t")"#;
/// With the separator and the quote named: DuckDB's sniffer, left to guess, takes a
/// file for comma-separated (skipping the rows before) or `'` for its quote when a value
/// from traffic suggests it (crates/cli/tests/it/escapes.rs).
pub(crate) const DUCKDB_CALL: &str = r#"duckdb.read_csv(path, sep="\t", quotechar='"')"#;
const DUCKDB_TYPED_CALL: &str = r#"duckdb.read_csv(path, sep="\t", quotechar='"', dtype=types)"#;

/// An Ethernet/IPv4/TCP frame from 10.0.0.1 (client) or 10.0.0.2 (server), port 40000
/// to 80. Checksums are left at 0: tapstat does not verify them.
fn frame(from_client: bool, flags: u8, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
    let (src, dst, sport, dport) = if from_client {
        ([10, 0, 0, 1], [10, 0, 0, 2], 40000u16, 80u16)
    } else {
        ([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000)
    };
    let mut f = vec![2, 0, 0, 0, 0, 0xb, 2, 0, 0, 0, 0, 0xa, 8, 0];
    let total = (20 + 20 + payload.len()) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 1, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&ack.to_be_bytes());
    f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

/// An HTTP exchange whose request and response carry strings that break naive TSV
/// readers: a User-Agent starting with a double quote, with a tab and a backslash; a
/// Referer of quotes only; a Server header with a quote in the middle.
const USER_AGENT: &str = "\"Mozilla/5.0\" (evil\t\\x) \"";
const REFERER: &str = "\"\"";
const SERVER: &str = "ngin\"x\\";

fn hostile_pcap(path: &Path) {
    let req = format!(
        "GET /a?b=\"c\" HTTP/1.1\r\nHost: example.com\r\nUser-Agent: {USER_AGENT}\r\nReferer: {REFERER}\r\n\r\n"
    );
    let res = format!("HTTP/1.1 200 OK\r\nServer: {SERVER}\r\nContent-Length: 0\r\n\r\n");
    let (c, s) = (1000u32, 9000u32);
    let (rq, rs) = (req.len() as u32, res.len() as u32);
    let (syn, ack, psh, fin) = (0x02, 0x10, 0x08, 0x01);
    let frames = [
        frame(true, syn, c, 0, b""),
        frame(false, syn | ack, s, c + 1, b""),
        frame(true, ack, c + 1, s + 1, b""),
        frame(true, psh | ack, c + 1, s + 1, req.as_bytes()),
        frame(false, psh | ack, s + 1, c + 1 + rq, res.as_bytes()),
        frame(true, fin | ack, c + 1 + rq, s + 1 + rs, b""),
        frame(false, fin | ack, s + 1 + rs, c + 2 + rq, b""),
        frame(true, ack, c + 2 + rq, s + 2 + rs, b""),
    ];
    // pcap, little-endian: magic, version 2.4, zone, sigfigs, snaplen, Ethernet.
    let mut pcap = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    pcap.extend_from_slice(&[2, 0, 4, 0]);
    for w in [0u32, 0, 65535, 1] {
        pcap.extend_from_slice(&w.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        for w in [1_767_225_600u32, i as u32 * 1000, f.len() as u32, f.len() as u32] {
            pcap.extend_from_slice(&w.to_le_bytes());
        }
        pcap.extend_from_slice(f);
    }
    std::fs::write(path, pcap).unwrap();
}

fn python(args: &[&str]) -> String {
    let o = Command::new("python3").args(args).output().expect("python3 runs");
    assert!(
        o.status.success(),
        "python3 {:?} failed:\n{}{}",
        args.first(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn readme_calls_are_the_scripts() {
    let readme = std::fs::read_to_string(README).unwrap();
    let script = std::fs::read_to_string(SCRIPT).unwrap();
    for call in [PANDAS_CALL, DUCKDB_CALL, DUCKDB_TYPED_CALL] {
        let readme_call = call.replace("path", "f");
        assert!(readme.contains(&readme_call), "README.md does not show {readme_call}");
        assert!(script.contains(call), "load_check.py does not make {call}");
    }
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn logs_load_with_pandas_and_duckdb_as_the_schema_says() {
    if !python_ready() {
        return;
    }
    let dir = tempdir("load");
    let schema = dir.join("schema.json");
    let o = tapstat(&["schema", "--format", "json"]);
    assert!(o.status.success());
    std::fs::write(&schema, &o.stdout).unwrap();

    let hostile = dir.join("hostile.pcap");
    hostile_pcap(&hostile);
    let mut outs: Vec<PathBuf> = Vec::new();
    let mut inputs = vec![hostile.clone()];
    if let Some(c) = corpus() {
        inputs.extend(dev_captures(&c));
    }
    for (i, pcap) in inputs.iter().enumerate() {
        // With periodic rows too: every log tapstat writes.
        for (fmt, extra) in
            [("tsv", &["--periodic", "10"][..]), ("jsonl", &["--periodic", "10", "--format", "jsonl"][..])]
        {
            let out = dir.join(format!("{i}.{fmt}"));
            analyze(pcap, &out, 1, extra);
            outs.push(out);
        }
    }

    // The hostile strings: one row, read back as written (escaped in TSV, exact in JSON).
    let http = dir.join("0.tsv/log_http_complete");
    let text = std::fs::read_to_string(&http).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    let escaped = |s: &str| s.replace('\\', "\\\\").replace('\t', "\\t").replace('"', "\\\"");
    let read = python(&[
        "-c",
        "import sys, json, pandas as pd, duckdb\n\
         df = pd.read_csv(sys.argv[1], sep=\"\\t\")\n\
         d = duckdb.read_csv(sys.argv[1]).df()\n\
         print(json.dumps([df.loc[0, c] for c in ('user_agent', 'referer', 'server')] + [d.loc[0, c] for c in ('user_agent', 'referer', 'server')]))",
        http.to_str().unwrap(),
    ]);
    let got: Vec<String> = serde_json::from_str(&read).unwrap();
    let want = [USER_AGENT, REFERER, SERVER].map(escaped);
    assert_eq!(got[..3], want, "pandas");
    assert_eq!(got[3..], want, "DuckDB");
    let js = std::fs::read_to_string(dir.join("0.jsonl/log_http_complete.jsonl")).unwrap();
    let v: serde_json::Value = serde_json::from_str(js.lines().next().unwrap()).unwrap();
    assert_eq!(
        (v["user_agent"].as_str(), v["referer"].as_str(), v["server"].as_str()),
        (Some(USER_AGENT), Some(REFERER), Some(SERVER))
    );
    assert!(v["tunnel"].is_null(), "no tunnel is null, not a placeholder: {}", v["tunnel"]);

    let mut args = vec![SCRIPT.to_string(), schema.to_str().unwrap().to_string()];
    args.extend(outs.iter().map(|p| p.to_str().unwrap().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let report = python(&args);
    eprint!("{report}");
    let _ = std::fs::remove_dir_all(&dir);
}
