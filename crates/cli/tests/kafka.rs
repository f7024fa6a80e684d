//! Kafka export against a real broker: Apache Kafka 4.1 in KRaft mode
//! (broker and controller in one JVM, three partitions a topic), from Maven Central's
//! jars (`scripts/kafka_jars.sh`, cached under the target directory), started and
//! stopped by the tests on free loopback ports.
//!
//! - `every_record_reaches_its_topic_as_in_the_logs`: mix-small's records (or the
//!   largest dev capture's, without the bench corpus) through `--kafka`, from a TSV run
//!   and a JSON-lines run: each topic holds exactly the log's records — per flow id the
//!   same values in the same order as the JSON lines, byte for byte (the TSV run's are
//!   made by the exporter thread from the TSV lines), the same flow ids as the TSV — and
//!   the schema topic one message per log with its columns. Then a run whose broker
//!   cannot be reached leaves its records in the spool, and the next run with that
//!   spool sends them first.
//! - `a_broker_killed_and_restarted_mid_run_loses_nothing`: a live-path replay of the
//!   capture (`tapstat bench --pps`) while the broker is killed (SIGKILL) and restarted
//!   on the same storage and ports: the records made during the outage go through the
//!   spool, and every record arrives exactly once, in order per flow.
//!
//! - `tls_and_sasl_scram_keep_the_password_out_of_every_output`: a broker with a TLS
//!   listener and a SASL_SSL one (SCRAM-SHA-512), its CA and certificate made by the
//!   test: a run over each (the CA given with `--kafka-option ssl.ca.location`, the
//!   SASL settings and password in a `--kafka-config` file) delivers every record, read
//!   back by a consumer configured the same way; with `--probe-id` every message
//!   carries it in its `probe_id` header; the password appears in no file the
//!   run wrote and not on its stdout or stderr; a wrong password ends the run in time,
//!   its records left in the spool, with a warning that names the failed
//!   authentication.
//!
//! Skipped (with the reason printed) where Java or Maven is missing, unless
//! `TAPSTAT_REQUIRE_KAFKA=1`. Built only with `--features kafka`.
#![cfg(feature = "kafka")]

mod common;
use common::kafka::{capture, free_port, jars, Kafka, TURN};
use common::*;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `f` until it succeeds, for up to a minute: a broker answers "not leader for
/// partition" while a partition's leader is being elected (seen in CI after a run).
fn retry<T>(what: &str, mut f: impl FnMut() -> rdkafka::error::KafkaResult<T>) -> T {
    let t0 = Instant::now();
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) if t0.elapsed() < Duration::from_secs(60) => {
                eprintln!("{what}: {e}, again");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

/// Every message of `topics`, by topic: (key, value), each partition's in order (a key
/// is in one partition, so a key's messages keep their order). One consumer, partitions
/// assigned (its group commits nothing).
fn consume_all(brokers: &str, topics: &[String]) -> BTreeMap<String, Vec<(String, String)>> {
    consume_all_with(brokers, &[], topics)
}

/// [`consume_all`] with librdkafka settings (TLS, SASL): the consumer configured as the
/// producer was.
fn consume_all_with(
    brokers: &str,
    options: &[(String, String)],
    topics: &[String],
) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = topics.iter().map(|t| (t.clone(), Vec::new())).collect();
    consume_each(brokers, options, topics, |m| {
        let key = String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned();
        let value = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
        out.get_mut(m.topic()).unwrap().push((key, value));
    });
    out
}

/// Calls `f` with every message of `topics`.
fn consume_each(
    brokers: &str,
    options: &[(String, String)],
    topics: &[String],
    mut f: impl FnMut(&rdkafka::message::BorrowedMessage<'_>),
) {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", brokers).set("group.id", "tapstat-tests").set("enable.auto.commit", "false");
    for (k, v) in options {
        config.set(k, v);
    }
    let c: BaseConsumer = config.create().unwrap();
    let mut tpl = TopicPartitionList::new();
    let mut ends: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for topic in topics {
        let md = retry("metadata", || c.fetch_metadata(Some(topic), Duration::from_secs(10)));
        for p in md.topics()[0].partitions() {
            let (low, high) = retry("watermarks", || c.fetch_watermarks(topic, p.id(), Duration::from_secs(10)));
            if high > low {
                tpl.add_partition_offset(topic, p.id(), Offset::Beginning).unwrap();
                ends.insert((topic.clone(), p.id()), high);
            }
        }
    }
    if ends.is_empty() {
        return;
    }
    c.assign(&tpl).unwrap();
    let t0 = Instant::now();
    while !ends.is_empty() {
        match c.poll(Duration::from_millis(500)) {
            Some(Ok(m)) => {
                f(&m);
                let at = (m.topic().to_string(), m.partition());
                if ends.get(&at).is_some_and(|&high| m.offset() + 1 >= high) {
                    ends.remove(&at);
                }
            }
            Some(Err(e)) => panic!("consuming: {e}"),
            None => assert!(t0.elapsed() < Duration::from_secs(120), "stuck before the end of {ends:?}"),
        }
    }
}

/// Values by key, each key's in order.
type ByKey = BTreeMap<String, Vec<String>>;

fn by_key(msgs: impl IntoIterator<Item = (String, String)>) -> ByKey {
    let mut m = ByKey::new();
    for (k, v) in msgs {
        m.entry(k).or_default().push(v);
    }
    m
}

/// Panics with what differs between `got` (a topic) and `want` (a log), briefly.
fn same(got: &ByKey, want: &ByKey, what: &str) {
    if got == want {
        return;
    }
    let count = |m: &ByKey| m.values().map(Vec::len).sum::<usize>();
    let only_got: Vec<&String> = got.keys().filter(|k| !want.contains_key(*k)).collect();
    let only_want: Vec<&String> = want.keys().filter(|k| !got.contains_key(*k)).collect();
    let differ: Vec<&String> = got.keys().filter(|k| want.get(*k).is_some_and(|w| w != &got[*k])).collect();
    let example = differ.first().map(|k| {
        let (g, w) = (&got[*k], &want[*k]);
        let i = (0..g.len().min(w.len())).find(|&i| g[i] != w[i]).unwrap_or(g.len().min(w.len()));
        let at = |v: &Vec<String>| v.get(i).map(|s| s.chars().take(300).collect::<String>()).unwrap_or_default();
        format!("key {k}: {} values against {}; #{i}: {} against {}", g.len(), w.len(), at(g), at(w))
    });
    panic!(
        "{what}: {} records in {} keys against {} in {}; keys only in the topic: {} ({:?}), only in the log: {} ({:?}); keys whose records differ: {}; {}",
        count(got),
        got.len(),
        count(want),
        want.len(),
        only_got.len(),
        only_got.iter().take(3).collect::<Vec<_>>(),
        only_want.len(),
        only_want.iter().take(3).collect::<Vec<_>>(),
        differ.len(),
        example.unwrap_or_default()
    );
}

/// A JSON-lines log as (flow id, line), in file order.
fn jsonl(dir: &Path, log: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join(format!("{log}.jsonl"))).unwrap_or_default();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["flow_id"].as_str().unwrap().to_string(), l.to_string())
        })
        .collect()
}

fn kafka_summary(dir: &Path) -> serde_json::Value {
    summary(dir)["kafka"].clone()
}

fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"))
}

/// Every record was delivered, none spooled at the end, none lost; the accounting holds.
fn all_delivered(k: &serde_json::Value) {
    assert_eq!(n(k, "delivered"), n(k, "spool_at_start") + n(k, "records"), "{k}");
    for key in ["dropped", "errors", "left_in_spool"] {
        assert_eq!(n(k, key), 0, "{key}: {k}");
    }
}

/// The logs of a run (its summary's `records`).
fn logs_of(dir: &Path) -> Vec<String> {
    summary(dir)["records"].as_object().unwrap().keys().cloned().collect()
}

#[test]
fn every_record_reaches_its_topic_as_in_the_logs() {
    let Some(cap) = capture() else { return };
    let Some(jars) = jars() else { return };
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let k = Kafka::start(jars, "kafka-logs");
    let b = k.brokers();
    let root = tempdir("kafka-logs-out");
    let (tsv, js) = (root.join("tsv"), root.join("jsonl"));
    // A TSV run (the export formats each record as JSON) and a JSON-lines run (it takes
    // the lines written), each to its own topics.
    let t0 = Instant::now();
    analyze(&cap, &tsv, 2, &["--kafka", &b, "--kafka-topic-prefix", "tsv"]);
    eprintln!("TSV run with --kafka: {:.1} s", t0.elapsed().as_secs_f64());
    analyze(&cap, &js, 2, &["--format", "jsonl", "--kafka", &b, "--kafka-topic-prefix", "jsonl"]);
    for dir in [&tsv, &js] {
        let ks = kafka_summary(dir);
        all_delivered(&ks);
        // A healthy broker may still be slower than the run: records then wait in the
        // spool (a loaded CI machine spooled a third of them), and every one is resent.
        assert_eq!((n(&ks, "resent"), n(&ks, "schema_messages")), (n(&ks, "spooled"), 6), "{ks}");
        assert!(ks.get("topics_error").is_none(), "{ks}");
    }
    let mut total = 0;
    let topics: Vec<String> = logs_of(&tsv)
        .iter()
        .flat_map(|l| [format!("tsv.{l}"), format!("jsonl.{l}")])
        .chain(["tsv.schema".into()])
        .collect();
    let mut got = consume_all(&b, &topics);
    for log in logs_of(&tsv) {
        let want = by_key(jsonl(&js, &log));
        let from_tsv = by_key(got.remove(&format!("tsv.{log}")).unwrap());
        let from_jsonl = by_key(got.remove(&format!("jsonl.{log}")).unwrap());
        same(&from_jsonl, &want, &format!("topic jsonl.{log} against {log}.jsonl"));
        same(&from_tsv, &want, &format!("topic tsv.{log} against {log}.jsonl"));
        // The same run's TSV: one message per row, keyed by its flow id.
        let mut ids: BTreeMap<String, usize> = BTreeMap::new();
        for r in read_log(&tsv, &log) {
            *ids.entry(r["flow_id"].clone()).or_default() += 1;
        }
        let counts: BTreeMap<String, usize> = from_tsv.iter().map(|(k, v)| (k.clone(), v.len())).collect();
        assert_eq!(counts, ids, "{log}: the TSV's flow ids against topic tsv.{log}'s keys");
        total += ids.values().sum::<usize>();
    }
    assert!(total > 1000, "{total} records only");
    eprintln!(
        "{total} records compared, topic by topic, with the logs of {} ({:.1} s)",
        cap.display(),
        t0.elapsed().as_secs_f64()
    );
    // The schema: one message per log, its columns those of the log's TSV header.
    let schema = got.remove("tsv.schema").unwrap();
    assert_eq!(schema.len(), 6, "{schema:?}");
    for (log, v) in &schema {
        let v: serde_json::Value = serde_json::from_str(v).unwrap();
        assert_eq!(v["topic"], format!("tsv.{log}"));
        let cols: Vec<&str> = v["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        let header = std::fs::read_to_string(tsv.join(log)).unwrap();
        assert_eq!(cols.join("\t"), header.lines().next().unwrap(), "{log}");
    }

    // No broker: the records stay in the spool, and the next run with that spool sends
    // them first, to its own topics.
    let small = corpus().unwrap().join("ndpi__dns.pcap");
    let spool = root.join("spool");
    let spool_s = spool.to_str().unwrap();
    let (early, later) = (root.join("early"), root.join("later"));
    let nobody = format!("127.0.0.1:{}", free_port());
    let args =
        ["--format", "jsonl", "--kafka-topic-prefix", "later", "--kafka-spool-dir", spool_s, "--kafka-linger", "1"];
    analyze(&small, &early, 1, &[&["--kafka", &nobody][..], &args[..]].concat());
    let ks = kafka_summary(&early);
    assert_eq!((n(&ks, "delivered"), n(&ks, "left_in_spool")), (0, n(&ks, "records")), "{ks}");
    assert!(std::fs::read_dir(&spool).unwrap().flatten().any(|e| e.path().extension().is_some_and(|x| x == "seg")));
    analyze(&small, &later, 1, &[&["--kafka", &b][..], &args[..]].concat());
    let ks2 = kafka_summary(&later);
    assert_eq!(n(&ks2, "spool_at_start"), n(&ks, "records"), "{ks2}");
    all_delivered(&ks2);
    let topics: Vec<String> =
        logs_of(&later).iter().map(|l| format!("later.{l}")).chain(["later.schema".into()]).collect();
    let mut got = consume_all(&b, &topics);
    for log in logs_of(&later) {
        let mut want = by_key(jsonl(&early, &log));
        for (key, v) in by_key(jsonl(&later, &log)) {
            want.entry(key).or_default().extend(v);
        }
        same(
            &by_key(got.remove(&format!("later.{log}")).unwrap()),
            &want,
            &format!("topic later.{log}: the early run's, then the later run's"),
        );
    }
    eprintln!("the spool left by a run without a broker was sent by the next ({:.1} s)", t0.elapsed().as_secs_f64());
    let schema = got.remove("later.schema").unwrap();
    assert_eq!(schema.len(), 12, "each run's schema messages");
    assert!(!std::fs::read_dir(&spool).unwrap().flatten().any(|e| e.path().extension().is_some_and(|x| x == "seg")));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_broker_killed_and_restarted_mid_run_loses_nothing() {
    let Some(cap) = capture() else { return };
    let Some(jars) = jars() else { return };
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut k = Kafka::start(jars, "kafka-outage");
    let b = k.brokers();
    let out = tempdir("kafka-outage-out");
    // The live path (acquisition threads, buffers, workers flushing every second) at
    // 20,000 packets/s: mix-small's 268k packets take about 13 s. A small client queue
    // (1,000 records), so that the outage fills it and the spool takes the rest.
    let t0 = Instant::now();
    let run = Command::new(bin())
        .args(["bench", "-r", cap.to_str().unwrap(), "--pps", "20000", "-w", "2", "--format", "jsonl", "-q", "--force"])
        .args(["-o", out.to_str().unwrap(), "--", "--kafka", &b, "--kafka-topic-prefix", "outage"])
        .args(["--kafka-linger", "120", "--kafka-option", "queue.buffering.max.messages=1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    k.kill();
    eprintln!("broker killed at {:.1} s", t0.elapsed().as_secs_f64());
    std::thread::sleep(Duration::from_secs(4));
    k.run();
    eprintln!("broker back at {:.1} s", t0.elapsed().as_secs_f64());
    let o = run.wait_with_output().unwrap();
    eprintln!("replay ended at {:.1} s", t0.elapsed().as_secs_f64());
    assert!(o.status.success(), "the replay failed: {}", String::from_utf8_lossy(&o.stderr));
    let ks = kafka_summary(&out);
    eprintln!("kafka: {ks}");
    all_delivered(&ks);
    assert!(n(&ks, "spooled") > 1000, "the outage should have spooled records: {ks}");
    assert_eq!(n(&ks, "resent"), n(&ks, "spooled"), "{ks}");
    let mut total = 0;
    let topics: Vec<String> = logs_of(&out).iter().map(|l| format!("outage.{l}")).collect();
    let mut got = consume_all(&b, &topics);
    for log in logs_of(&out) {
        let want = by_key(jsonl(&out, &log));
        total += want.values().map(Vec::len).sum::<usize>();
        // Exactly once, in order per flow: the idempotent producer's retries across
        // the restart are dropped by the broker.
        let topic = format!("outage.{log}");
        same(&by_key(got.remove(&topic).unwrap()), &want, &format!("topic {topic} against {log}.jsonl"));
    }
    eprintln!("{total} records, each delivered once through the outage ({} spooled)", n(&ks, "spooled"));
    let _ = std::fs::remove_dir_all(&out);
}

/// Every file under `dir` (recursively) that contains `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p).unwrap().windows(needle.len()).any(|w| w == needle) {
                found.push(p);
            }
        }
    }
    found
}

/// `o`'s stdout and stderr, and every file under `out`, hold no `secret`.
fn nowhere(secret: &str, o: &std::process::Output, out: &Path) {
    for (name, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        assert!(
            !String::from_utf8_lossy(text).contains(secret),
            "the password is on {name}: {}",
            String::from_utf8_lossy(text)
        );
    }
    let found = files_containing(out, secret.as_bytes());
    assert!(found.is_empty(), "the password is in {found:?}");
}

#[test]
fn tls_and_sasl_scram_keep_the_password_out_of_every_output() {
    use common::kafka::{SCRAM_PASSWORD, SCRAM_USER};
    let Some(corpus) = corpus() else { return };
    let Some(jars) = jars() else { return };
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let k = Kafka::start_secure(jars, "kafka-secure");
    let small = corpus.join("ndpi__iphone.pcap");
    let root = tempdir("kafka-secure-out");
    let ca = k.ca().to_str().unwrap().to_string();
    let opts = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    // Checks that every record of run `dir` (prefix `prefix`) is in its topics, read
    // with `options`.
    let check = |dir: &Path, brokers: &str, prefix: &str, options: &[(String, String)]| {
        let ks = kafka_summary(dir);
        all_delivered(&ks);
        let topics: Vec<String> = logs_of(dir).iter().map(|l| format!("{prefix}.{l}")).collect();
        let mut got = consume_all_with(brokers, options, &topics);
        let mut total = 0;
        for log in logs_of(dir) {
            let want = by_key(jsonl(dir, &log));
            total += want.values().map(Vec::len).sum::<usize>();
            same(&by_key(got.remove(&format!("{prefix}.{log}")).unwrap()), &want, &format!("{prefix}.{log}"));
        }
        assert!(total > 10, "{total} records only");
        eprintln!("{total} records over {prefix} ({brokers})");
    };

    // TLS: the client trusts the test's CA, and checks the broker's name (127.0.0.1).
    let tls_dir = root.join("tls");
    let ca_opt = format!("ssl.ca.location={ca}");
    // With a probe identity: every message (the schema's too) carries it in a header.
    let tls = ["--kafka-option", "security.protocol=ssl", "--kafka-option", &ca_opt, "--probe-id", "probe-eu.1"];
    analyze(
        &small,
        &tls_dir,
        1,
        &[&["--format", "jsonl", "--kafka", &k.ssl_brokers(), "--kafka-topic-prefix", "tls"][..], &tls[..]].concat(),
    );
    let tls_opts = opts(&[("security.protocol", "ssl"), ("ssl.ca.location", &ca)]);
    check(&tls_dir, &k.ssl_brokers(), "tls", &tls_opts);
    let topics: Vec<String> =
        logs_of(&tls_dir).iter().map(|l| format!("tls.{l}")).chain(["tls.schema".into()]).collect();
    let mut ids: BTreeMap<Option<String>, u64> = BTreeMap::new();
    consume_each(&k.ssl_brokers(), &tls_opts, &topics, |m| {
        use rdkafka::message::Headers;
        let id = m.headers().and_then(|h| h.iter().find(|h| h.key == "probe_id")).and_then(|h| h.value);
        *ids.entry(id.map(|v| String::from_utf8_lossy(v).into_owned())).or_default() += 1;
    });
    let ks = kafka_summary(&tls_dir);
    assert_eq!(ids, BTreeMap::from([(Some("probe-eu.1".to_string()), n(&ks, "records"))]), "probe_id headers");

    // SASL_SSL with SCRAM-SHA-512, the password in a --kafka-config file.
    let sasl = opts(&[
        ("security.protocol", "sasl_ssl"),
        ("sasl.mechanisms", "SCRAM-SHA-512"),
        ("sasl.username", SCRAM_USER),
        ("sasl.password", SCRAM_PASSWORD),
        ("ssl.ca.location", &ca),
    ]);
    let config = root.join("kafka.conf");
    let text: String = sasl.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(&config, format!("# the probe's Kafka credentials\n{text}")).unwrap();
    let sasl_dir = root.join("sasl");
    let o = analyze(
        &small,
        &sasl_dir,
        1,
        &[
            "--format",
            "jsonl",
            "--kafka",
            &k.sasl_brokers(),
            "--kafka-topic-prefix",
            "sasl",
            "--kafka-config",
            config.to_str().unwrap(),
        ],
    );
    check(&sasl_dir, &k.sasl_brokers(), "sasl", &sasl);
    nowhere(SCRAM_PASSWORD, &o, &sasl_dir);
    // summary.json names the file, not what it holds.
    let s = std::fs::read_to_string(sasl_dir.join("summary.json")).unwrap();
    assert!(s.contains(config.to_str().unwrap()) && !s.contains(SCRAM_USER), "{s}");

    // A wrong password: the run still ends (no hang), the records wait in the spool, and
    // the warning names the failed authentication; the wrong password is not shown
    // either.
    let wrong = "Wrong-Secret-0d41b7";
    std::fs::write(&config, text.replace(SCRAM_PASSWORD, wrong)).unwrap();
    let bad_dir = root.join("bad");
    let t0 = Instant::now();
    let o = common::tapstat_within(
        &["-r", small.to_str().unwrap(), "-o", bad_dir.to_str().unwrap(), "-q", "-w", "1", "--format", "jsonl"]
            .into_iter()
            .chain(["--kafka", &k.sasl_brokers(), "--kafka-topic-prefix", "bad", "--kafka-linger", "2"])
            .chain(["--kafka-config", config.to_str().unwrap()])
            .collect::<Vec<_>>(),
        60,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("wrong password: ended in {:.1} s: {err}", t0.elapsed().as_secs_f64());
    let ks = kafka_summary(&bad_dir);
    assert_eq!((n(&ks, "delivered"), n(&ks, "left_in_spool")), (0, n(&ks, "records")), "{ks}");
    assert!(err.to_lowercase().contains("authentication"), "no word of the authentication: {err}");
    assert!(ks["last_error"].as_str().unwrap_or_default().to_lowercase().contains("authentication"), "{ks}");
    nowhere(wrong, &o, &bad_dir);
    nowhere(SCRAM_PASSWORD, &o, &bad_dir);
}
