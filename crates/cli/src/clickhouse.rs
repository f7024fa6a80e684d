//! `tapstat schema --clickhouse`: ClickHouse DDL derived from the schema in
//! crates/analyze/src/logs.rs — one MergeTree table per log and, with
//! `--kafka-brokers`, a Kafka-engine table and a materialized view per log that move
//! the Kafka topics' JSON lines into it. Written for ClickHouse 18.16 (Debian 12's
//! package) and later; docs/DEPLOYMENT.md says how to use it.
//!
//! Choices (each forced or suggested by 18.16, which the test runs against):
//! - Every column is `Nullable`: the JSON lines write `null` for no value, 18.16's
//!   JSONEachRow refuses `null` for a `String` and reads it as 0 (NaN) for a number,
//!   which would make "no value" and 0 the same. Lists are `Array(...)` (ClickHouse
//!   has no nullable array: an absent list is `[]`; 18.16 cannot read `null` for an
//!   array, see docs/DEPLOYMENT.md).
//! - Times stay as the logs write them, `Float64` epoch milliseconds (18.16 has no
//!   `DateTime64`); the log's time (`first`, or its first `epoch ms` column) gets a
//!   `MATERIALIZED` `DateTime` beside it (`<name>_time`, whole seconds) for
//!   partitions, the sorting key and TTL. Nullable columns cannot be in a sorting key,
//!   so the addresses are there as `ifNull(c_ip, '')`.
//! - The TTL (ClickHouse 19.6 and later) is printed as a comment: 18.16 has none.

use std::fmt::Write as _;
use tapstat_record::{Field, LogDoc, Type};

/// The options of `tapstat schema --clickhouse`.
pub struct Options<'a> {
    pub database: &'a str,
    /// With brokers, the Kafka-engine tables and their materialized views too.
    pub kafka_brokers: Option<&'a str>,
    pub kafka_topic_prefix: &'a str,
    /// Days of the suggested TTL.
    pub ttl_days: u32,
}

/// The logs that get a table: the schema's, with `log_tcp_nocomplete` (the columns of
/// `log_tcp_complete`, which the schema declares once for both) after `log_tcp_complete`.
pub fn logs() -> Vec<LogDoc> {
    use tapstat_analyze::logs::LogId;
    let mut v = Vec::new();
    for log in tapstat_analyze::logs::docs() {
        let nocomplete = (log.name == LogId::TcpComplete.name()).then(|| LogDoc {
            name: LogId::TcpNocomplete.name(),
            meaning: "TCP flows whose three-way handshake was not seen (the columns of `log_tcp_complete`).",
            fields: log.fields.clone(),
        });
        v.push(log);
        v.extend(nocomplete);
    }
    v
}

/// The ClickHouse type of a column.
pub fn column_type(f: &Field) -> &'static str {
    match f.ty {
        Type::U64 => "Nullable(UInt64)",
        Type::F64 => "Nullable(Float64)",
        Type::Str | Type::Ip => "Nullable(String)",
        Type::Bool => "Nullable(UInt8)",
        // Lists of durations are written in ms with 3 decimals; the others are counts.
        Type::List if f.unit.contains("ms") => "Array(Float64)",
        Type::List => "Array(UInt64)",
        Type::Strs => "Array(String)",
    }
}

/// The column the log's rows are ordered, partitioned and expired by: `first` where
/// the log has it, else its first absolute time.
pub fn time_column(log: &LogDoc) -> Option<&Field> {
    log.fields
        .iter()
        .find(|f| f.name == "first" && f.unit == "epoch ms")
        .or_else(|| log.fields.iter().find(|f| f.unit == "epoch ms"))
}

/// The name of the materialized `DateTime` beside time column `t`.
pub fn datetime_name(t: &Field) -> String {
    format!("{}_time", t.name)
}

/// The expression of the materialized `DateTime` beside time column `t`.
fn datetime_expr(t: &Field) -> String {
    format!("toDateTime(toUInt32(ifNull(`{}`, 0) / 1000))", t.name)
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// One line: no line break or comment end can get out of a `--` comment.
fn comment(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// The column declarations of `log`, the materialized time included when `materialized`.
fn columns(log: &LogDoc, materialized: bool) -> String {
    let mut lines: Vec<String> = log
        .fields
        .iter()
        .map(|f| {
            let unit = if f.unit.is_empty() { String::new() } else { format!(" [{}]", f.unit) };
            format!("    `{}` {}, -- {}{}", f.name, column_type(f), comment(f.meaning), unit)
        })
        .collect();
    if materialized {
        if let Some(t) = time_column(log) {
            lines.push(format!(
                "    `{}` DateTime MATERIALIZED {}, -- `{}` in whole seconds (UTC), for the partitions, the sorting key and TTL",
                datetime_name(t),
                datetime_expr(t),
                t.name
            ));
        }
    }
    // The last declaration takes no comma (before its comment).
    if let Some(last) = lines.last_mut() {
        if let Some(i) = last.find(", -- ") {
            last.replace_range(i..i + 1, "");
        }
    }
    lines.join("\n")
}

/// The DDL: the database, a table per log, and with brokers the Kafka side.
pub fn ddl(logs: &[LogDoc], o: &Options) -> String {
    let db = o.database;
    let mut s = format!(
        "-- Generated by `tapstat schema --clickhouse` (tapstat {}) from tapstat's schema; ClickHouse 18.16 and later.\n\
         -- Times are Float64 epoch milliseconds as in the logs; `<time>_time` is a DateTime materialized from the log's time.\n\
         -- Every column is Nullable (null in the JSON lines: no value); lists are arrays ([] for none).\n\n\
         CREATE DATABASE IF NOT EXISTS `{db}`;\n",
        env!("CARGO_PKG_VERSION")
    );
    for log in logs {
        let names: Vec<&str> = log.fields.iter().map(|f| f.name).collect();
        let _ = write!(
            s,
            "\n-- {}: {}\nCREATE TABLE IF NOT EXISTS `{db}`.`{}`\n(\n",
            log.name,
            comment(log.meaning),
            log.name
        );
        s += &columns(log, true);
        s += "\n)\nENGINE = MergeTree()\n";
        let mut key: Vec<String> = Vec::new();
        if let Some(t) = time_column(log) {
            let _ = writeln!(s, "PARTITION BY toYYYYMMDD(`{}`)", datetime_name(t));
            key.push(format!("`{}`", datetime_name(t)));
        }
        for a in ["c_ip", "s_ip"] {
            if names.contains(&a) {
                key.push(format!("ifNull(`{a}`, '')"));
            }
        }
        let key = if key.is_empty() { "tuple()".to_string() } else { format!("({})", key.join(", ")) };
        let _ = writeln!(s, "ORDER BY {key}");
        if let Some(t) = time_column(log) {
            let _ = writeln!(
                s,
                "-- TTL `{}` + INTERVAL {} DAY -- suggested: ClickHouse 19.6 and later (ALTER TABLE ... MODIFY TTL); 18.16 has no TTL: drop old days with ALTER TABLE ... DROP PARTITION yyyymmdd",
                datetime_name(t),
                o.ttl_days
            );
        }
        s += ";\n";
    }
    if let Some(brokers) = o.kafka_brokers {
        let _ = write!(
            s,
            "\n-- Kafka ingestion: topic `{}.<log>` per log, one JSON line per message (as `--format jsonl` writes them), the flow id as the key.\n\
             -- Each Kafka-engine table consumes its topic; its materialized view moves the rows into the log's table.\n",
            o.kafka_topic_prefix
        );
        for log in logs {
            let topic = format!("{}.{}", o.kafka_topic_prefix, log.name);
            let group = format!("clickhouse.{db}.{}", log.name);
            let _ = write!(s, "\nCREATE TABLE IF NOT EXISTS `{db}`.`{}_kafka`\n(\n", log.name);
            s += &columns(log, false);
            let _ = writeln!(
                s,
                "\n)\nENGINE = Kafka({}, {}, {}, 'JSONEachRow');",
                quote(brokers),
                quote(&topic),
                quote(&group)
            );
            // The view computes the materialized column itself: 18.16 refuses a block
            // without it ("Expected column first_time: while pushing to view").
            let time = time_column(log)
                .map(|t| format!(", {} AS `{}`", datetime_expr(t), datetime_name(t)))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "CREATE MATERIALIZED VIEW IF NOT EXISTS `{db}`.`{0}_mv` TO `{db}`.`{0}` AS SELECT *{time} FROM `{db}`.`{0}_kafka`;",
                log.name
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options<'static> {
        Options {
            database: "tapstat",
            kafka_brokers: Some("k1:9092,k2:9092"),
            kafka_topic_prefix: "probe",
            ttl_days: 30,
        }
    }

    #[test]
    fn every_column_once_with_a_type_and_no_name_clash() {
        let logs = logs();
        assert!(logs.iter().any(|l| l.name == "log_tcp_nocomplete"));
        let out = ddl(&logs, &opts());
        for log in &logs {
            let names: Vec<&str> = log.fields.iter().map(|f| f.name).collect();
            if let Some(t) = time_column(log) {
                assert!(!names.contains(&datetime_name(t).as_str()), "{}: {} is a column", log.name, datetime_name(t));
            }
            for f in &log.fields {
                assert!(out.contains(&format!("`{}` {}", f.name, column_type(f))));
            }
            assert!(out.contains(&format!("Kafka('k1:9092,k2:9092', 'probe.{}'", log.name)));
        }
        let flows = &logs[0];
        assert_eq!(flows.name, "log_tcp_complete");
        assert!(out.contains("ORDER BY (`first_time`, ifNull(`c_ip`, ''), ifNull(`s_ip`, ''))"));
        assert!(out.contains("-- TTL `first_time` + INTERVAL 30 DAY"));
        // The view fills the materialized column (18.16 wants it in the block).
        assert!(out.contains(
            "TO `tapstat`.`log_tcp_complete` AS SELECT *, toDateTime(toUInt32(ifNull(`first`, 0) / 1000)) AS `first_time` FROM `tapstat`.`log_tcp_complete_kafka`;"
        ));
    }

    #[test]
    fn no_kafka_part_without_brokers() {
        let out = ddl(&logs(), &Options { kafka_brokers: None, ..opts() });
        assert!(!out.contains("ENGINE = Kafka"));
        assert!(!out.contains("MATERIALIZED VIEW"));
    }
}
