//! The command line as a user meets it: errors, formats, stdin, several files.

use crate::common::*;
use std::io::Write;
use std::process::{Command, Stdio};
use tapstat_lab::synth::{synthesize, SynthConfig};

fn small_sample(dir: &std::path::Path) -> std::path::PathBuf {
    synth_sample(dir, 3, 60, 40)
}

#[test]
fn missing_file_is_a_one_line_error() {
    let o = tapstat(&["-r", "/nonexistent/x.pcap", "-o", "/tmp/tapstat-none", "-q"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/x.pcap"), "{err}");
}

#[test]
fn a_file_that_is_not_a_capture_is_a_one_line_error() {
    let dir = tempdir("notcap");
    let p = dir.join("notes.txt");
    std::fs::write(&p, "hello, this is not a capture\n").unwrap();
    let o = tapstat(&["-r", p.to_str().unwrap(), "-o", dir.join("out").to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not a pcap or pcapng"), "{err}");
}

#[test]
fn no_input_says_what_to_do() {
    let o = tapstat(&["-o", "/tmp/tapstat-none", "-q"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-r FILE"));
}

#[test]
fn help_has_examples() {
    let o = tapstat(&["--help"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Examples:") && out.contains("--format"), "{out}");
}

#[test]
fn stdin_gives_the_same_records_as_the_file() {
    let dir = tempdir("stdin");
    let pcap = small_sample(&dir);
    let a = dir.join("a");
    analyze(&pcap, &a, 1, &[]);
    let b = dir.join("b");
    let mut child = Command::new(bin())
        .args(["-r", "-", "-o", b.to_str().unwrap(), "-q", "-w", "2"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&std::fs::read(&pcap).unwrap()).unwrap();
    assert!(child.wait().unwrap().success());
    for log in LOGS {
        assert_eq!(record_set(&a, log), record_set(&b, log), "{log}");
    }
    assert!(!record_set(&a, "log_tcp_complete").is_empty());
}

#[test]
fn jsonl_has_the_same_values_as_tsv() {
    let dir = tempdir("jsonl");
    let pcap = small_sample(&dir);
    let a = dir.join("tsv");
    let b = dir.join("jsonl");
    analyze(&pcap, &a, 1, &[]);
    analyze(&pcap, &b, 1, &["--format", "jsonl"]);
    for log in LOGS {
        let tsv = read_log(&a, log);
        let text = std::fs::read_to_string(b.join(format!("{log}.jsonl"))).unwrap();
        let js: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(tsv.len(), js.len(), "{log}");
        // A list without items is `[]` in JSON, absent (an empty field in TSV) or empty.
        let lists = &list_columns()[log];
        let mut t: Vec<String> = tsv
            .iter()
            .map(|r| {
                let mut r = r.clone();
                for (c, v) in r.iter_mut() {
                    if lists.contains(c) && v == "-" {
                        *v = "[]".into();
                    }
                }
                format!("{r:?}")
            })
            .collect();
        let mut j: Vec<String> = js
            .iter()
            .map(|o| {
                let m: std::collections::BTreeMap<String, String> = o
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| {
                        let s = match v {
                            serde_json::Value::Null => "-".to_string(),
                            serde_json::Value::String(s) if s.is_empty() => "-".to_string(),
                            serde_json::Value::String(s) => s.clone(),
                            serde_json::Value::Number(n) if n.is_f64() => format!("{:.3}", n.as_f64().unwrap()),
                            serde_json::Value::Array(a) => format!(
                                "[{}]",
                                a.iter()
                                    .map(|x| match x.as_f64() {
                                        Some(f) if x.is_f64() => format!("{f:.3}"),
                                        _ => x.to_string(),
                                    })
                                    .collect::<Vec<_>>()
                                    .join(",")
                            ),
                            other => other.to_string(),
                        };
                        (k.clone(), s)
                    })
                    .collect();
                format!("{m:?}")
            })
            .collect();
        t.sort();
        j.sort();
        assert_eq!(t, j, "{log}");
    }
}

#[test]
fn several_files_are_one_stream() {
    // Split the sample in two files at a packet boundary: flows continue across them.
    let dir = tempdir("split");
    let pcap = small_sample(&dir);
    let bytes = std::fs::read(&pcap).unwrap();
    let mut off = 24;
    let mut n = 0;
    let mut cut = 0;
    while off + 16 <= bytes.len() {
        let caplen = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap()) as usize;
        n += 1;
        off += 16 + caplen;
        if n == 400 {
            cut = off;
        }
    }
    assert!(cut > 0, "sample has {n} packets");
    let p1 = dir.join("p1.pcap");
    let p2 = dir.join("p2.pcap");
    std::fs::write(&p1, &bytes[..cut]).unwrap();
    let mut second = bytes[..24].to_vec();
    second.extend_from_slice(&bytes[cut..]);
    std::fs::write(&p2, second).unwrap();
    let a = dir.join("a");
    analyze(&pcap, &a, 1, &[]);
    let b = dir.join("b");
    let o = tapstat(&["-r", p1.to_str().unwrap(), p2.to_str().unwrap(), "-o", b.to_str().unwrap(), "-q", "-w", "1"]);
    assert!(o.status.success());
    for log in LOGS {
        assert_eq!(record_set(&a, log), record_set(&b, log), "{log}");
    }
}

#[test]
fn a_truncated_last_record_is_a_warning_and_the_rest_is_processed() {
    let dir = tempdir("trunc");
    let pcap = small_sample(&dir);
    let bytes = std::fs::read(&pcap).unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 7]).unwrap();
    let out = dir.join("out");
    let o = tapstat(&["-r", cut.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning") && err.contains("truncated"), "{err}");
    let s = summary(&out);
    assert_eq!(s["capture"]["truncated_files"], 1);
    let full = dir.join("full");
    analyze(&pcap, &full, 1, &[]);
    assert_eq!(s["packets"].as_u64().unwrap() + 1, summary(&full)["packets"].as_u64().unwrap());
}

#[test]
fn ctrl_c_on_a_quiet_pipe_still_writes_every_flow_seen() {
    // Half of a capture arrives on stdin and the writer keeps the pipe open: the
    // reader is blocked in a read when SIGINT comes. tapstat must still finish,
    // write every flow it has (end_reason interrupted), say it was interrupted, and
    // exit with 130 as shells do for SIGINT.
    let dir = tempdir("sigint");
    let cfg = SynthConfig { seed: 5, ..Default::default() };
    let (bytes, _) = synthesize(&cfg);
    let out = dir.join("out");
    let mut child = Command::new(bin())
        .args(["-r", "-", "-o", out.to_str().unwrap(), "-q", "-w", "2"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&bytes[..bytes.len() / 2]).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    drop(stdin);
    assert_eq!(status.code(), Some(130), "{status:?}");
    let s = summary(&out);
    assert_eq!(s["interrupted"], true);
    let ends: Vec<String> = LOGS.iter().flat_map(|l| read_log(&out, l)).map(|r| r["end_reason"].clone()).collect();
    assert!(ends.iter().any(|e| e == "interrupted"), "{ends:?}");
    assert!(!ends.iter().any(|e| e == "end_of_input"), "a stopped run has no flow that saw the end of its input");
    assert_eq!(
        s["end_reasons"]["interrupted"].as_u64().unwrap() as usize,
        ends.iter().filter(|e| *e == "interrupted").count()
    );
    let packets = s["packets"].as_u64().unwrap();
    assert!(packets > 0, "nothing was read before the interrupt");
    let records: u64 = LOGS.iter().map(|l| record_set(&out, l).len() as u64).sum();
    assert_eq!(records, LOGS.iter().map(|l| s["records"][*l].as_u64().unwrap()).sum::<u64>());
    assert!(records > 0);
    // Every packet read is in some record: the flows were written, not dropped.
    let in_records: u64 = LOGS
        .iter()
        .flat_map(|l| read_log(&out, l))
        .map(|r| r["c_pkts_all"].parse::<u64>().unwrap() + r["s_pkts_all"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(in_records, packets - s["non_ip_frames"].as_u64().unwrap());
}

#[test]
fn the_full_tcp_sets_leave_the_core_columns_as_the_core_set_writes_them() {
    let dir = tempdir("tcpsets");
    let cfg = SynthConfig { seed: 11, ..Default::default() };
    let (bytes, _) = synthesize(&cfg);
    let pcap = dir.join("s.pcap");
    std::fs::write(&pcap, bytes).unwrap();
    let core = dir.join("core");
    let full = dir.join("full");
    analyze(&pcap, &core, 1, &["--tcp-sets", "core"]);
    analyze(&pcap, &full, 2, &[]);
    for log in ["log_tcp_complete", "log_tcp_nocomplete"] {
        let c = read_log(&core, log);
        let f = read_log(&full, log);
        assert_eq!(c.len(), f.len(), "{log}");
        assert!(!c.is_empty());
        let cols: Vec<&String> = c[0].keys().collect();
        assert!(cols.len() < f[0].len(), "the core set writes fewer columns");
        let mut a: Vec<Vec<&String>> = c.iter().map(|r| cols.iter().map(|k| &r[*k]).collect()).collect();
        let mut b: Vec<Vec<&String>> = f.iter().map(|r| cols.iter().map(|k| &r[*k]).collect()).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{log}: core columns differ between --tcp-sets core and full");
    }
}

#[test]
fn help_names_every_log_of_the_schema() {
    let help = Command::new(bin()).arg("--help").output().unwrap();
    assert!(help.status.success());
    let help = String::from_utf8(help.stdout).unwrap();
    let schema = Command::new(bin()).args(["schema", "--format", "json"]).output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    let logs = schema["logs"].as_array().unwrap();
    assert!(logs.len() >= 7, "{} logs", logs.len());
    for log in logs {
        let name = log["name"].as_str().unwrap();
        assert!(help.contains(name), "`tapstat --help` does not name {name}");
    }
    assert!(help.contains("Exit status"), "--help says what the exit status means");
}

#[test]
fn every_summary_key_is_documented() {
    let dir = tempdir("summary-doc");
    let (bytes, _) = synthesize(&SynthConfig { seed: 3, tcp_flows: 40, udp_dns_flows: 20, ..Default::default() });
    let pcap = dir.join("s.pcap");
    std::fs::write(&pcap, bytes).unwrap();
    let out = dir.join("out");
    analyze(&pcap, &out, 1, &[]);
    let s = summary(&out);
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/METRICS.md")).unwrap();
    let table = &doc[doc.find("## summary.json").expect("docs/METRICS.md documents summary.json")..];
    for key in s.as_object().unwrap().keys() {
        assert!(
            table.contains(&format!("| `{key}` |")),
            "summary.json key {key} is not in docs/METRICS.md (SUMMARY_KEYS)"
        );
    }
}

#[test]
fn kafka_config_errors_name_the_line_not_its_secret() {
    let work = tempdir("kafka-config-secret");
    let file = work.join("kafka.conf");
    std::fs::write(&file, "# producer\nacks=all\nsasl.password secret-value-xyz\n").unwrap();
    // The file is read when the flag is parsed, before --kafka is (refused by a build
    // without the feature).
    let o = tapstat_within(
        &[
            "-r",
            "/dev/null",
            "-o",
            work.join("o").to_str().unwrap(),
            "--kafka-config",
            file.to_str().unwrap(),
            "--kafka",
            "127.0.0.1:9092",
        ],
        10,
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 3") && err.contains("--kafka-config"), "{err}");
    assert!(!err.contains("secret-value-xyz") && !err.contains("sasl.password secret"), "{err}");
    // Nor is a device read.
    let o = tapstat_within(&["-r", "/dev/null", "--kafka-config", "/dev/zero", "--kafka", "127.0.0.1:9092"], 10);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("not a regular file"), "{err}");
}
