//! `--format parquet`: every log of the dev captures (periodic rows, HTTP and DNS
//! included) written as Parquet and as TSV by the same run's options, then read back
//! by pyarrow and DuckDB (parquet_check.py) with the TSV's rows and values, the
//! schema's types and the file's metadata. Skipped, with the reason printed, where
//! python3, pyarrow or DuckDB is missing, unless TAPSTAT_REQUIRE_PYTHON=1. Without the
//! `parquet` feature, only the refusal is tested.

mod common;

#[cfg(feature = "parquet")]
use common::{analyze, corpus, dev_captures, python_has, ready};
use common::{tapstat, tempdir};
#[cfg(feature = "parquet")]
use std::path::PathBuf;
#[cfg(feature = "parquet")]
use std::process::Command;

#[cfg(feature = "parquet")]
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/parquet_check.py");

#[cfg(feature = "parquet")]
fn python_ready() -> bool {
    ready(
        python_has("pyarrow, duckdb"),
        "TAPSTAT_REQUIRE_PYTHON",
        "python3 with pyarrow and duckdb is missing (pip install pyarrow duckdb)",
    )
}

#[test]
#[cfg(feature = "parquet")]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn parquet_logs_read_back_by_pyarrow_and_duckdb_as_the_tsv() {
    if !python_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let dir = tempdir("parquet");
    let schema = dir.join("schema.json");
    let o = tapstat(&["schema", "--format", "json"]);
    assert!(o.status.success());
    std::fs::write(&schema, &o.stdout).unwrap();

    let mut pairs: Vec<PathBuf> = Vec::new();
    for (i, pcap) in dev_captures(&c).iter().enumerate() {
        // One worker and one hash seed: the same records in the same order.
        let (tsv, pq) = (dir.join(format!("{i}.tsv")), dir.join(format!("{i}.parquet")));
        analyze(pcap, &tsv, 1, &["--periodic", "10"]);
        analyze(pcap, &pq, 1, &["--periodic", "10", "--format", "parquet"]);
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(pq.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["format"], "parquet");
        pairs.extend([tsv, pq]);
    }
    let mut args = vec![SCRIPT.to_string(), schema.to_str().unwrap().to_string()];
    args.extend(pairs.iter().map(|p| p.to_str().unwrap().to_string()));
    let o = Command::new("python3").args(&args).output().expect("python3 runs");
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "parquet_check.py found problems:\n{report}{}", String::from_utf8_lossy(&o.stderr));
    eprint!("{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Several workers write the same rows (in another order: blocks of different
/// workers interleave), and the row count of each file is the summary's.
#[test]
#[cfg(feature = "parquet")]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn parquet_with_several_workers_holds_every_record() {
    if !python_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let pcap = dev_captures(&c).into_iter().max_by_key(|p| p.metadata().map(|m| m.len()).unwrap_or(0)).unwrap();
    let dir = tempdir("parquet-workers");
    let out = dir.join("out");
    analyze(&pcap, &out, 3, &["--format", "parquet"]);
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let counts = Command::new("python3")
        .args([
            "-c",
            "import sys, json, os, pyarrow.parquet as pq\n\
             d = sys.argv[1]\n\
             print(json.dumps({f[:-8]: pq.ParquetFile(os.path.join(d, f)).metadata.num_rows for f in os.listdir(d) if f.endswith('.parquet')}))",
            out.to_str().unwrap(),
        ])
        .output()
        .expect("python3 runs");
    assert!(counts.status.success(), "{}", String::from_utf8_lossy(&counts.stderr));
    let counts: serde_json::Value = serde_json::from_slice(&counts.stdout).unwrap();
    let records = summary["records"].as_object().expect("summary.json has records by log");
    assert!(!records.is_empty());
    for (log, n) in records {
        assert_eq!(&counts[log], n, "{log}: rows in the file and records in summary.json");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records per `--rotate` interval directory (`*.out`) and log of an output directory:
/// rows of the Parquet files, lines after the header in TSV.
#[cfg(feature = "parquet")]
const COUNT_ROWS: &str = r#"
import sys, json, os, pyarrow.parquet as pq
d, n = sys.argv[1], {}
for i in sorted(os.listdir(d)):
    if not i.endswith('.out'):
        continue
    for f in os.listdir(os.path.join(d, i)):
        p = os.path.join(d, i, f)
        k = i + '/' + f.split('.')[0]
        # A log reopened for late records goes on in log_x.1.parquet, ...: summed.
        rows = pq.ParquetFile(p).metadata.num_rows if f.endswith('.parquet') else sum(1 for _ in open(p)) - 1
        n[k] = n.get(k, 0) + rows
print(json.dumps(n, sort_keys=True))
"#;

/// `--rotate` closes each interval's Parquet files with the interval: a replay
/// through the live path (`bench --speed`) and a file run leave every interval's files
/// readable, with the rows TSV has in that interval and log (a log that took records
/// after its interval closed, in its parts `log_x.1.parquet`...).
#[test]
#[cfg(feature = "parquet")]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn parquet_rotated_intervals_are_closed_and_readable() {
    if !python_ready() {
        return;
    }
    let Some(c) = corpus() else { return };
    let pcap = c.join("ndpi__android.pcap");
    let p = pcap.to_str().unwrap();
    let dir = tempdir("parquet-rotate");
    for mode in ["replay", "file"] {
        let mut counts = Vec::new();
        for format in ["tsv", "parquet"] {
            let out = dir.join(format!("{mode}-{format}"));
            let o = out.to_str().unwrap();
            let run = if mode == "replay" {
                let args = ["bench", "-r", p, "--speed", "1000", "-w", "1", "-q", "-o", o, "--format", format];
                tapstat(&[&args[..], &["--", "--rotate", "60s", "--hash-seed", "7"]].concat())
            } else {
                tapstat(&["-r", p, "-w", "2", "-q", "-o", o, "--format", format, "--rotate", "60s", "--hash-seed", "7"])
            };
            assert!(run.status.success(), "{mode}: {}", String::from_utf8_lossy(&run.stderr));
            let count = Command::new("python3").args(["-c", COUNT_ROWS, o]).output().expect("python3 runs");
            assert!(count.status.success(), "{mode}: {}", String::from_utf8_lossy(&count.stderr));
            counts.push(serde_json::from_slice::<serde_json::Value>(&count.stdout).unwrap());
        }
        assert!(counts[0].as_object().is_some_and(|m| m.len() > 6), "{mode}: {}", counts[0]);
        assert_eq!(counts[0], counts[1], "{mode}: records per interval and log, TSV then Parquet");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Refused in one line, before anything runs: live capture without --rotate (a
/// Parquet file is readable only once closed), standard output (JSON lines only) and
/// --compress (Parquet compresses its columns itself).
#[test]
#[cfg(feature = "parquet")]
fn parquet_refusals_are_one_line() {
    let cases: [(&[&str], &str); 3] = [
        (&["-i", "lo", "-o", "/nonexistent/x"], "--format parquet on live capture needs --rotate"),
        (&["-r", "/nonexistent.pcap", "-o", "-"], "a Parquet file needs a directory"),
        (&["-r", "/nonexistent.pcap", "-o", "/nonexistent/x", "--compress", "zstd"], "--compress does not apply"),
    ];
    for (args, want) in cases {
        let o = tapstat(&[args, &["--format", "parquet"][..]].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Without the feature, `--format parquet` says how to build it, in one line.
#[test]
#[cfg(not(feature = "parquet"))]
fn parquet_without_the_feature_says_how_to_build_it() {
    let o = tapstat(&["-r", "/nonexistent.pcap", "-o", "/nonexistent/x", "--format", "parquet"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--features parquet"), "{err}");
}

/// The `tapstat report` of a directory: its page, less the list of logs read and the
/// directory's name (the only parts that differ between formats), and that list.
#[cfg(feature = "parquet")]
fn report_of(d: &std::path::Path) -> (String, String) {
    let o = tapstat(&["report", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(d.join("report.html")).expect("report.html");
    let at = html.find("flow record(s) in ").expect("the records' note") + "flow record(s) in ".len();
    let end = at + html[at..].find('<').unwrap();
    let dn = d.to_str().unwrap();
    (html[..at].replace(dn, "DIR") + &html[end..].replace(dn, "DIR"), html[at..end].to_string())
}

#[test]
#[cfg(feature = "parquet")]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn parquet_logs_give_the_report_of_the_tsv() {
    let Some(c) = corpus() else { return };
    for cap in ["ndpi__1kxun.pcap", "ndpi__netflix.pcap"] {
        let (tsv, pq) = (tempdir("rep-tsv"), tempdir("rep-pq"));
        analyze(&c.join(cap), &tsv, 1, &["--histo-interval", "60"]);
        analyze(&c.join(cap), &pq, 1, &["--histo-interval", "60", "--format", "parquet"]);
        let ((a, read_tsv), (b, read_pq)) = (report_of(&tsv), report_of(&pq));
        assert!(read_tsv.contains("log_tcp_complete") && !read_tsv.contains(".parquet"), "{cap}: {read_tsv}");
        assert!(read_pq.contains("log_tcp_complete.parquet"), "{cap}: read {read_pq}");
        assert!(!b.contains("Not read"), "{cap}: a Parquet log was not read");
        assert!(a == b, "{cap}: the report of the Parquet logs differs from the TSV's");
        let _ = (std::fs::remove_dir_all(&tsv), std::fs::remove_dir_all(&pq));
    }
}

#[test]
#[cfg(not(feature = "parquet"))]
fn a_report_without_the_feature_lists_parquet_logs_as_not_read() {
    let d = tempdir("rep-nopq");
    let pcap = d.join("sample.pcap");
    let (p, out) = (pcap.to_str().unwrap(), d.join("out"));
    assert!(tapstat(&["synth", "--tcp-flows", "20", "--udp-flows", "5", "-o", p]).status.success());
    assert!(tapstat(&["-q", "-r", p, "-o", out.to_str().unwrap()]).status.success());
    std::fs::write(out.join("log_tcp_complete.parquet"), b"PAR1").unwrap();
    let o = tapstat(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(
        html.contains("Not read: log_tcp_complete.parquet (this tapstat was built without Parquet support"),
        "{html}"
    );
}
