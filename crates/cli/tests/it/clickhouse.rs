//! ClickHouse: the tables `tapstat schema --clickhouse` prints are
//! created in a real server (Debian's clickhouse-server, 18.16, started by the test as
//! an unprivileged process on loopback ports of its own, its files in a temp
//! directory), the Kafka-engine tables and views included (18.16 takes them without a
//! reachable broker). The JSON lines of a few dev captures are loaded with `INSERT ...
//! FORMAT JSONEachRow`; the rows, the packet and byte sums of each direction and the
//! per-application totals the server gives equal those of the TSV logs.
//!
//! The lines are loaded as tapstat writes them: 18.16's JSONEachRow cannot read `null`
//! for an array column (ClickHouse has no nullable arrays), and the JSON lines write
//! `[]` for a list without items, absent or empty (docs/DEPLOYMENT.md, "Lists").
//!
//! Skipped (with the reason printed) where clickhouse-server or clickhouse-client is
//! not installed, unless `TAPSTAT_REQUIRE_CLICKHOUSE=1`.

use crate::common::clickhouse::{clickhouse_ready, Server};
use crate::common::*;
use std::collections::BTreeMap;
use std::time::Instant;

const DB: &str = "tapstat_test";

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
            // The lines as written: a list without items is `[]`, which 18.16 reads (it
            // refuses `null` for an array).
            let data = std::fs::read(jsonl.join(format!("{log}.jsonl"))).unwrap_or_default();
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
