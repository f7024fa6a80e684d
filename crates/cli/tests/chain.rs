//! The whole chain (docs/DEPLOYMENT.md): two probes → Kafka →
//! ClickHouse → one query.
//!
//! A Kafka broker (tests/common/kafka.rs) and a ClickHouse server
//! (tests/common/clickhouse.rs) are started; the topics are created first, as
//! docs/DEPLOYMENT.md says, then the tables, Kafka-engine tables and materialized views
//! of `tapstat schema --clickhouse`. Two tapstat processes ("probes") read the same
//! capture (mix-small, or the largest dev capture without the bench corpus) at once, each
//! keeping half of its flows with `-f`: `net P` and `not net P`, where P is the IPv4
//! prefix that splits the whole run's flows closest to half. `net` matches a packet by
//! its source or its destination, so both directions of a flow go to the same probe, and
//! every packet to exactly one; the test checks that every flow of the whole run is in
//! exactly one probe's logs. Both export to the same topics. Once ClickHouse holds
//! every record (a bounded poll of its tables' rows), one query gives flows, packets
//! and bytes per application, which must equal those of a single run on the whole
//! capture.
//!
//! Skipped (with the reason printed) where Java, Maven, clickhouse-server or
//! clickhouse-client is missing, unless `TAPSTAT_REQUIRE_KAFKA=1` /
//! `TAPSTAT_REQUIRE_CLICKHOUSE=1`. Built only with `--features kafka`.
#![cfg(feature = "kafka")]

mod common;
use common::clickhouse::{clickhouse_ready, Server};
use common::kafka::{capture, jars, Kafka};
use common::*;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DB: &str = "tapstat_chain";
const PREFIX: &str = "chain";
/// The logs with an `app` column: the flows the per-application totals count.
const APP_LOGS: [&str; 3] = ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete"];

fn num(v: &str) -> u64 {
    if v == "-" || v == "\\N" {
        0
    } else {
        v.parse().unwrap_or_else(|_| panic!("not a number: {v}"))
    }
}

/// Per application (`-` for none): flows, packets (both directions) and bytes on the
/// wire (both directions), over the flow logs of `dirs`.
fn app_totals(dirs: &[&Path]) -> BTreeMap<String, (u64, u64, u64)> {
    let mut m: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for dir in dirs {
        for log in APP_LOGS {
            for r in read_log(dir, log) {
                let e = m.entry(r["app"].clone()).or_default();
                e.0 += 1;
                e.1 += num(&r["c_pkts_all"]) + num(&r["s_pkts_all"]);
                e.2 += num(&r["c_bytes_wire"]) + num(&r["s_bytes_wire"]);
            }
        }
    }
    m
}

/// The flows of a run, one entry per flow record: log, both endpoints and the first
/// packet's time (flow ids depend on the run's workers, these do not).
fn flows(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = LOGS
        .iter()
        .flat_map(|log| {
            read_log(dir, log).into_iter().map(move |r| {
                let f = |k: &str| r.get(k).cloned().unwrap_or_default();
                format!("{log} {}:{} {}:{} {}", f("c_ip"), f("c_port"), f("s_ip"), f("s_port"), f("first"))
            })
        })
        .collect();
    v.sort();
    v
}

/// The IPv4 prefix (of /1 to /4) that puts the flows of `dir` closest to half in `net
/// PREFIX` (either address in it), and the flows it puts there.
fn split(dir: &Path) -> (String, usize) {
    let addrs: Vec<[Option<Ipv4Addr>; 2]> = LOGS
        .iter()
        .flat_map(|log| read_log(dir, log))
        .map(|r| {
            [r["c_ip"].as_str(), r["s_ip"].as_str()].map(|a| match a.parse::<IpAddr>() {
                Ok(IpAddr::V4(v)) => Some(v),
                _ => None,
            })
        })
        .collect();
    let mut best = (usize::MAX, String::new(), 0);
    for len in 1..=4u32 {
        for i in 0..(1u32 << len) {
            let (net, mask) = (i << (32 - len), u32::MAX << (32 - len));
            let inside = addrs.iter().filter(|a| a.iter().flatten().any(|x| u32::from(*x) & mask == net)).count();
            let off = inside.abs_diff(addrs.len() / 2);
            if off < best.0 {
                best = (off, format!("{}/{len}", Ipv4Addr::from(net)), inside);
            }
        }
    }
    (best.1, best.2)
}

/// Waits for a future of rdkafka's admin client (no async runtime in the tests).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_probes_through_kafka_into_clickhouse_give_the_totals_of_one_run() {
    let Some(cap) = capture() else { return };
    let Some(jars) = jars() else { return };
    if !clickhouse_ready() {
        return;
    }
    let t0 = Instant::now();
    let work = tempdir("chain");
    let whole = work.join("whole");
    analyze(&cap, &whole, 1, &[]);
    let all = flows(&whole);
    let (net, inside) = split(&whole);
    eprintln!("{}: {} flows; probe A `net {net}` gets {inside} of them", cap.display(), all.len());

    let kafka = Kafka::start(jars, "chain-kafka");
    let ch = Server::start("chain-clickhouse");
    let b = kafka.brokers();
    // The topics first (docs/DEPLOYMENT.md): the tables' consumers then find them.
    let admin: AdminClient<DefaultClientContext> =
        ClientConfig::new().set("bootstrap.servers", &b).create().expect("admin client");
    let names: Vec<String> =
        APP_LOGS.iter().chain(&["log_other"]).chain(&L7_LOGS).map(|l| format!("{PREFIX}.{l}")).collect();
    let topics: Vec<NewTopic> = names.iter().map(|n| NewTopic::new(n, 3, TopicReplication::Fixed(1))).collect();
    let made =
        block_on(admin.create_topics(&topics, &AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)))))
            .expect("creating the topics");
    for r in made {
        r.unwrap_or_else(|(t, e)| panic!("topic {t}: {e}"));
    }
    let ddl =
        tapstat(&["schema", "--clickhouse", "--database", DB, "--kafka-brokers", &b, "--kafka-topic-prefix", PREFIX]);
    assert!(ddl.status.success());
    ch.client_in(&["--multiquery"], &ddl.stdout).unwrap_or_else(|e| panic!("the DDL: {e}"));

    // The two probes, at once, to the same topics.
    let t1 = Instant::now();
    let probes: Vec<(std::path::PathBuf, std::process::Child)> = [format!("net {net}"), format!("not net {net}")]
        .iter()
        .enumerate()
        .map(|(i, filter)| {
            let out = work.join(format!("probe{i}"));
            let child = Command::new(bin())
                .args(["-r", cap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "-w", "1", "--hash-seed", "7"])
                .args(["-f", filter, "--kafka", &b, "--kafka-topic-prefix", PREFIX])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("tapstat starts");
            (out, child)
        })
        .collect();
    let mut dirs = Vec::new();
    for (out, child) in probes {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "a probe failed: {}", String::from_utf8_lossy(&o.stderr));
        let k = summary(&out)["kafka"].clone();
        let n = |key: &str| k[key].as_u64().unwrap_or_else(|| panic!("no {key} in {k}"));
        assert_eq!(n("delivered"), n("spool_at_start") + n("records"), "{k}");
        for key in ["dropped", "errors", "left_in_spool"] {
            assert_eq!(n(key), 0, "{key}: {k}");
        }
        dirs.push(out);
    }
    eprintln!("probes done in {:.1} s", t1.elapsed().as_secs_f64());

    // The split: every flow of the whole run in exactly one probe, about half in each.
    let (fa, fb) = (flows(&dirs[0]), flows(&dirs[1]));
    let (sa, sb): (BTreeSet<&String>, BTreeSet<&String>) = (fa.iter().collect(), fb.iter().collect());
    assert!(sa.is_disjoint(&sb), "a flow in both probes: {:?}", sa.intersection(&sb).next());
    let mut union = [fa.clone(), fb.clone()].concat();
    union.sort();
    assert!(
        union == all,
        "the probes' flows are not the whole run's: {} + {} against {}",
        fa.len(),
        fb.len(),
        all.len()
    );
    assert!(fa.len().min(fb.len()) * 4 >= all.len(), "an uneven split: {} and {} flows", fa.len(), fb.len());

    // Ingestion: every record of both probes in its table (bounded poll).
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for log in LOGS.iter().chain(&L7_LOGS) {
        let n: u64 = dirs.iter().map(|d| summary(d)["records"][*log].as_u64().unwrap_or(0)).sum();
        want.insert(log.to_string(), n);
    }
    let t2 = Instant::now();
    let count = |log: &str| num(ch.query(&format!("SELECT count() FROM {DB}.{log}")).trim());
    loop {
        let got: BTreeMap<String, u64> = want.keys().map(|l| (l.clone(), count(l))).collect();
        if got == want {
            break;
        }
        assert!(
            got.iter().all(|(l, n)| *n <= want[l]),
            "more rows than records (a record ingested twice): {got:?} against {want:?}"
        );
        assert!(
            t2.elapsed() < Duration::from_secs(120),
            "ClickHouse did not ingest every record in 120 s: {got:?} against {want:?}; server errors: {}",
            ch.err_log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "ClickHouse holds the {} records {:.1} s after the probes ended",
        want.values().sum::<u64>(),
        t2.elapsed().as_secs_f64()
    );

    // One query over every probe's records: the per-application totals.
    let q = format!(
        "SELECT ifNull(app, '-') AS a, count() AS flows, sum(c_pkts_all + s_pkts_all) AS packets, \
         sum(c_bytes_wire + s_bytes_wire) AS bytes FROM (\
         SELECT app, c_pkts_all, s_pkts_all, c_bytes_wire, s_bytes_wire FROM {DB}.log_tcp_complete UNION ALL \
         SELECT app, c_pkts_all, s_pkts_all, c_bytes_wire, s_bytes_wire FROM {DB}.log_tcp_nocomplete UNION ALL \
         SELECT app, c_pkts_all, s_pkts_all, c_bytes_wire, s_bytes_wire FROM {DB}.log_udp_complete) GROUP BY a ORDER BY a"
    );
    let got: BTreeMap<String, (u64, u64, u64)> = ch
        .query(&q)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), (num(f[1]), num(f[2]), num(f[3])))
        })
        .collect();
    let one = app_totals(&[&whole]);
    assert!(one.len() > 3 && one.values().map(|t| t.0).sum::<u64>() > 100, "{one:?}");
    assert_eq!(got, one, "per application (flows, packets, bytes): ClickHouse over two probes against one run");
    // What the tables take on disk, merged (docs/DEPLOYMENT.md's sizing).
    for log in want.keys() {
        ch.query(&format!("OPTIMIZE TABLE {DB}.{log} FINAL"));
    }
    let disk =
        ch.query(&format!("SELECT sum(rows), sum(bytes_on_disk) FROM system.parts WHERE database = '{DB}' AND active"));
    let disk: Vec<u64> = disk.trim().split('\t').map(num).collect();
    assert_eq!(disk[0], want.values().sum::<u64>(), "rows in the active parts");
    eprintln!(
        "ClickHouse: {} rows in {} bytes on disk ({:.0} a row)",
        disk[0],
        disk[1],
        disk[1] as f64 / disk[0] as f64
    );
    eprintln!(
        "chain: {} applications, {} flows; the whole test {:.1} s",
        one.len(),
        one.values().map(|t| t.0).sum::<u64>(),
        t0.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&work);
}
