//! The options of a run as summary.json shows them: a JSON object of every flag by
//! its long name, with the value the run used (typed on the command line, or the
//! default), read back from clap's matches so that it names what a user types. The
//! values of `--kafka-option` whose key names a secret (a password, a key, a token)
//! are replaced by `***`, here and in the command line the summary copies.

use clap::{ArgMatches, CommandFactory};
use serde_json::{Map, Value};

/// The flags of the command line `argv` (tapstat's, program name first), with their
/// defaults filled in; a subcommand's flags under its name. An argv clap refuses (a
/// bench's rewritten one is parsed elsewhere) gives an empty object.
pub(crate) fn of_args(argv: &[String]) -> Value {
    match crate::args::Cli::command().try_get_matches_from(argv) {
        Ok(m) => Value::Object(of_matches(&m)),
        Err(_) => Value::Object(Map::new()),
    }
}

fn of_matches(m: &ArgMatches) -> Map<String, Value> {
    let mut out = Map::new();
    for id in m.ids() {
        let id = id.as_str();
        // Groups name sets of flags, not values.
        let Ok(Some(raw)) = m.try_get_raw(id) else { continue };
        let vals: Vec<Value> = raw.map(|v| typed(&v.to_string_lossy(), id)).collect();
        let v = match (vals.len(), m.get_raw_occurrences(id).is_some_and(|o| o.count() > 1)) {
            (1, false) => vals.into_iter().next().unwrap_or(Value::Null),
            _ => Value::Array(vals),
        };
        out.insert(id.replace('_', "-"), v);
    }
    if let Some((name, sub)) = m.subcommand() {
        out.insert(name.to_string(), Value::Object(of_matches(sub)));
    }
    out
}

/// A value as JSON: booleans and numbers typed, the rest strings; a secret hidden.
fn typed(s: &str, id: &str) -> Value {
    if id == "kafka_option" {
        return Value::String(redact_option(s));
    }
    match s {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(n) = s.parse::<u64>() {
        return Value::from(n);
    }
    if let Ok(x) = s.parse::<f64>() {
        if x.is_finite() && !s.starts_with(['+', '.']) && !s.ends_with('.') {
            return Value::from(x);
        }
    }
    Value::String(s.to_string())
}

/// Whether a librdkafka property holds a secret (`sasl.password`,
/// `ssl.key.password`, `ssl.key.pem`, `sasl.oauthbearer.client.secret`, ...).
fn secret_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    ["password", "secret", "key", "token", "credential"].iter().any(|w| k.contains(w))
}

/// `KEY=VALUE` with the value hidden when the key names a secret.
fn redact_option(kv: &str) -> String {
    match kv.split_once('=') {
        Some((k, _)) if secret_key(k) => format!("{k}=***"),
        _ => kv.to_string(),
    }
}

/// The command line with the secrets of `--kafka-option` hidden (`--kafka-option
/// K=V` and `--kafka-option=K=V`).
pub(crate) fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next_is_option = false;
    for a in argv {
        if next_is_option {
            out.push(redact_option(a));
            next_is_option = false;
        } else if let Some(kv) = a.strip_prefix("--kafka-option=") {
            out.push(format!("--kafka-option={}", redact_option(kv)));
        } else {
            next_is_option = a == "--kafka-option";
            out.push(a.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_are_json_by_flag_name_with_defaults() {
        let v = of_args(&argv(&["tapstat", "-r", "a.pcap", "-o", "out", "--udp-timeout", "33", "-w", "2"]));
        assert_eq!(v["udp-timeout"], 33, "{v}");
        assert_eq!(v["workers"], 2, "{v}");
        // A default the user did not type is there too.
        assert_eq!(v["format"], "tsv", "{v}");
        assert!(v.get("hash-seed").is_none(), "a random seed is not published: {v}");
        let v = of_args(&argv(&["tapstat", "-r", "a.pcap", "-o", "out", "--hash-seed", "7"]));
        assert_eq!(v["hash-seed"], 7, "{v}");
    }

    #[test]
    fn kafka_secrets_are_hidden() {
        let a = argv(&[
            "tapstat",
            "--kafka-option",
            "sasl.password=hunter2",
            "--kafka-option=ssl.key.password=x",
            "--kafka-option",
            "acks=all",
        ]);
        let r = redact_argv(&a);
        assert_eq!(r[2], "sasl.password=***");
        assert_eq!(r[3], "--kafka-option=ssl.key.password=***");
        assert_eq!(r[5], "acks=all");
        assert!(!r.join(" ").contains("hunter2"));
    }
}
