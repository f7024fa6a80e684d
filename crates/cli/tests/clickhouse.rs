//! ClickHouse (issue 16, item 4): the tables `tapstat schema --clickhouse` prints are
//! created in a real server (Debian's clickhouse-server, 18.16, started by the test as
//! an unprivileged process on loopback ports of its own, its files in a temp
//! directory), the Kafka-engine tables and views included (18.16 takes them without a
//! reachable broker). The JSON lines of a few dev captures are loaded with `INSERT ...
//! FORMAT JSONEachRow`; the rows, the packet and byte sums of each direction and the
//! per-application totals the server gives equal those of the TSV logs.
//!
//! 18.16's JSONEachRow cannot read `null` for an array column (ClickHouse has no
//! nullable arrays): the lines' null lists are loaded as `[]` (docs/DEPLOYMENT.md).
//!
//! Skipped (with the reason printed) where clickhouse-server or clickhouse-client is
//! not installed, unless `TAPSTAT_REQUIRE_CLICKHOUSE=1`.

mod common;
use common::*;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DB: &str = "tapstat_test";

fn clickhouse_ready() -> bool {
    let ok = |cmd: &str, arg: &str| Command::new(cmd).arg(arg).output().is_ok();
    if ok("clickhouse-server", "--help") && ok("clickhouse-client", "--version") {
        return true;
    }
    assert!(
        std::env::var("TAPSTAT_REQUIRE_CLICKHOUSE").as_deref() != Ok("1"),
        "TAPSTAT_REQUIRE_CLICKHOUSE=1 but clickhouse-server or clickhouse-client is missing (Debian packages clickhouse-server clickhouse-client)"
    );
    eprintln!("skipped: clickhouse-server/clickhouse-client are not installed (Debian packages clickhouse-server clickhouse-client)");
    false
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A clickhouse-server on free loopback ports, its data, logs and config in `dir`.
struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Server {
    fn start(tag: &str) -> Server {
        let dir = tempdir(tag);
        let (tcp, http) = (free_port(), free_port());
        let d = dir.display();
        let config = format!(
            r#"<?xml version="1.0"?>
<yandex>
  <logger><level>information</level><log>{d}/server.log</log><errorlog>{d}/server.err.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>{tcp}</tcp_port>
  <http_port>{http}</http_port>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
</yandex>
"#
        );
        let users = r#"<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
"#;
        std::fs::write(dir.join("config.xml"), config).unwrap();
        std::fs::write(dir.join("users.xml"), users).unwrap();
        let child = Command::new("clickhouse-server")
            .arg(format!("--config-file={}", dir.join("config.xml").display()))
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("clickhouse-server starts");
        let mut s = Server { child, port: tcp, dir };
        let t0 = Instant::now();
        loop {
            if s.client(&["-q", "SELECT 1"]).is_ok() {
                break;
            }
            if let Ok(Some(st)) = s.child.try_wait() {
                panic!("clickhouse-server exited ({st}): {}", s.err_log());
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "clickhouse-server not up in 60 s: {}", s.err_log());
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!("clickhouse-server up in {:.1} s", t0.elapsed().as_secs_f64());
        s
    }

    fn err_log(&self) -> String {
        let t = std::fs::read_to_string(self.dir.join("server.err.log")).unwrap_or_default();
        t.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    }

    /// Runs clickhouse-client with `args`, `input` on its stdin; its stdout, or its stderr as the error.
    fn client_in(&self, args: &[&str], input: &[u8]) -> Result<String, String> {
        let mut c = Command::new("clickhouse-client")
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut stdin = c.stdin.take().unwrap();
        let input = input.to_vec();
        let w = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let o = c.wait_with_output().map_err(|e| e.to_string())?;
        let _ = w.join();
        if o.status.success() {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&o.stderr).into_owned())
        }
    }

    fn client(&self, args: &[&str]) -> Result<String, String> {
        self.client_in(args, b"")
    }

    fn query(&self, q: &str) -> String {
        self.client(&["-q", q]).unwrap_or_else(|e| panic!("{q}: {e}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The array columns of each log, from `tapstat schema --format json`.
fn list_columns() -> BTreeMap<String, HashSet<String>> {
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

/// `log`'s JSON lines with the null lists as `[]` (what 18.16 can read).
fn lines_for_18_16(dir: &Path, log: &str, lists: &HashSet<String>) -> Vec<u8> {
    let text = std::fs::read_to_string(dir.join(format!("{log}.jsonl"))).unwrap_or_default();
    let mut out = Vec::new();
    for l in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        for c in lists {
            if v.get(c).is_some_and(|x| x.is_null()) {
                v[c] = serde_json::json!([]);
            }
        }
        serde_json::to_writer(&mut out, &v).unwrap();
        out.push(b'\n');
    }
    out
}

fn num(v: &str) -> u64 {
    if v == "-" {
        0
    } else {
        v.parse().unwrap_or_else(|_| panic!("not a number: {v}"))
    }
}

const FLOW_LOGS: [&str; 4] = ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete", "log_other"];
const SUMS: [&str; 6] = ["c_pkts_all", "s_pkts_all", "c_bytes_wire", "s_bytes_wire", "c_bytes_all", "s_bytes_all"];

#[test]
fn schema_tables_load_the_json_lines_with_the_tsv_totals() {
    let Some(corpus) = corpus() else { return };
    if !clickhouse_ready() {
        return;
    }
    let t0 = Instant::now();
    let server = Server::start("clickhouse");
    let ddl = tapstat(&["schema", "--clickhouse", "--database", DB, "--kafka-brokers", "127.0.0.1:1"]);
    assert!(ddl.status.success());
    server.client_in(&["--multiquery"], &ddl.stdout).unwrap_or_else(|e| panic!("the DDL: {e}"));
    let tables = server.query(&format!("SHOW TABLES FROM {DB}"));
    for log in FLOW_LOGS.iter().chain(&L7_LOGS) {
        for t in [log.to_string(), format!("{log}_kafka"), format!("{log}_mv")] {
            assert!(tables.lines().any(|l| l == t), "no table {t}: {tables}");
        }
    }

    let lists = list_columns();
    let work = tempdir("clickhouse-runs");
    // Expected, from the TSV logs: rows and sums per log, flows and bytes per app.
    let mut rows: BTreeMap<&str, u64> = BTreeMap::new();
    let mut sums: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut apps: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let names = [
        "ndpi__1kxun.pcap",
        "ndpi__443-firefox.pcap",
        "ndpi__dns.pcap",
        "ndpi__bittorrent.pcap",
        "ndpi__4in6tunnel.pcap",
    ];
    for name in names {
        let cap = corpus.join(name);
        assert!(cap.is_file(), "{} missing", cap.display());
        let (tsv, jsonl) = (work.join(format!("{name}.tsv")), work.join(format!("{name}.jsonl")));
        analyze(&cap, &tsv, 1, &[]);
        analyze(&cap, &jsonl, 1, &["--format", "jsonl"]);
        for log in FLOW_LOGS.iter().chain(&L7_LOGS) {
            let recs = read_log(&tsv, log);
            *rows.entry(log).or_default() += recs.len() as u64;
            for r in &recs {
                if FLOW_LOGS.contains(log) {
                    for c in SUMS {
                        *sums.entry((log, c)).or_default() += num(&r[c]);
                    }
                }
                if let (true, Some(app)) = (FLOW_LOGS.contains(log), r.get("app")) {
                    let e = apps.entry(app.clone()).or_default();
                    e.0 += 1;
                    e.1 += num(&r["c_bytes_wire"]) + num(&r["s_bytes_wire"]);
                }
            }
            let data = lines_for_18_16(&jsonl, log, &lists[*log]);
            if !data.is_empty() {
                server
                    .client_in(
                        &[
                            "--input_format_skip_unknown_fields=0",
                            "-q",
                            &format!("INSERT INTO {DB}.{log} FORMAT JSONEachRow"),
                        ],
                        &data,
                    )
                    .unwrap_or_else(|e| panic!("{name} {log}: {e}"));
            }
        }
    }

    for log in FLOW_LOGS.iter().chain(&L7_LOGS) {
        let n = num(server.query(&format!("SELECT count() FROM {DB}.{log}")).trim());
        assert_eq!(n, rows[log], "{log}: rows");
    }
    assert!(rows["log_tcp_complete"] > 0 && rows["log_udp_complete"] > 0 && rows["log_dns_complete"] > 0, "{rows:?}");
    for log in FLOW_LOGS {
        let q: Vec<String> = SUMS.iter().map(|c| format!("sum({c})")).collect();
        let got = server.query(&format!("SELECT {} FROM {DB}.{log}", q.join(", ")));
        let got: Vec<u64> = got.trim().split('\t').map(|v| num(if v == "\\N" { "-" } else { v })).collect();
        let want: Vec<u64> = SUMS.iter().map(|c| sums.get(&(log, *c)).copied().unwrap_or(0)).collect();
        assert_eq!(got, want, "{log}: sums of {SUMS:?}");
        // The materialized time is the flow's first packet, in seconds.
        let bad = server.query(&format!(
            "SELECT count() FROM {DB}.{log} WHERE toUInt32(first_time) != toUInt32(intDiv(toUInt64(first), 1000))"
        ));
        assert_eq!(bad.trim(), "0", "{log}: first_time");
    }

    // The per-application totals (docs/DEPLOYMENT.md's query).
    let q = format!(
        "SELECT ifNull(app, '-') AS a, count() AS flows, sum(c_bytes_wire + s_bytes_wire) AS bytes FROM (\
         SELECT app, c_bytes_wire, s_bytes_wire FROM {DB}.log_tcp_complete UNION ALL \
         SELECT app, c_bytes_wire, s_bytes_wire FROM {DB}.log_tcp_nocomplete UNION ALL \
         SELECT app, c_bytes_wire, s_bytes_wire FROM {DB}.log_udp_complete) GROUP BY a ORDER BY a"
    );
    let got: BTreeMap<String, (u64, u64)> = server
        .query(&q)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), (num(f[1]), num(f[2])))
        })
        .collect();
    assert_eq!(got, apps, "per-application flows and bytes");
    assert!(apps.len() > 3, "{apps:?}");
    eprintln!(
        "clickhouse: {} rows of {} captures loaded and checked in {:.1} s; apps {:?}",
        rows.values().sum::<u64>(),
        names.len(),
        t0.elapsed().as_secs_f64(),
        apps.keys().collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&work);
}
