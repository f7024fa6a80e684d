//! `--kafka` and its flags: every record to Kafka too, one topic per log.
//! The export itself is `tapstat_pipeline::KafkaConfig`'s (crates/pipeline/src/kafka.rs);
//! a build without the `kafka` feature refuses `--kafka` with one line saying how to
//! build it.

use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The Kafka export's flags.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Export")]
pub struct KafkaArgs {
    // clap's help text, printed as written: `<log>` is no HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    /// Also send every record to Kafka, to topic PREFIX.<log> (e.g. tapstat.log_tcp_complete)
    /// as a JSON object keyed by its flow_id; the schema goes to PREFIX.schema. BROKERS:
    /// HOST:PORT[,HOST:PORT...]. Records the broker cannot take (down, slow) are spooled
    /// to disk and sent in order when it can (needs a build with `--features kafka`)
    #[arg(long, value_name = "BROKERS", value_parser = brokers)]
    pub kafka: Option<String>,
    /// Prefix of the Kafka topics (letters, digits, '.', '_', '-')
    #[arg(long, value_name = "P", default_value = "tapstat", requires = "kafka", value_parser = topic_prefix)]
    pub kafka_topic_prefix: String,
    /// Most bytes the Kafka spool keeps on disk; records past it are dropped and counted (e.g. 1GiB, 0: no spool)
    #[arg(long, value_name = "SIZE", default_value = "1GiB", requires = "kafka", value_parser = crate::live::parse_size)]
    pub kafka_spool: u64,
    /// The Kafka spool's directory [default: OUT/kafka-spool]; a spool an earlier run
    /// left there is sent first
    #[arg(long, value_name = "DIR", requires = "kafka")]
    pub kafka_spool_dir: Option<PathBuf>,
    /// How long the end of a run waits for Kafka to take the records still queued or
    /// spooled, seconds; what is left stays in the spool for a later run [0..=1e10]
    #[arg(long, value_name = "S", default_value_t = 10.0, requires = "kafka", allow_hyphen_values = true, value_parser = crate::args::timeout_secs)]
    pub kafka_linger: f64,
    /// A librdkafka setting of the producer (repeatable), e.g. `--kafka-option
    /// security.protocol=ssl` or `--kafka-option queue.buffering.max.messages=1000`
    #[arg(long, value_name = "KEY=VALUE", requires = "kafka", value_parser = option)]
    pub kafka_option: Vec<(String, String)>,
    /// librdkafka settings from a file (KEY=VALUE lines; `#` starts a comment), read
    /// before the --kafka-option ones: where passwords and keys belong, out of the
    /// command line (summary.json does not show their values)
    #[arg(long, value_name = "FILE", requires = "kafka", value_parser = config_file)]
    pub kafka_config: Option<Settings>,
}

/// librdkafka settings read from a `--kafka-config` file.
#[derive(Clone, Debug, Default)]
pub struct Settings(Vec<(String, String)>);

/// `--kafka-config FILE`: read and checked when the flags are parsed (a regular file of
/// at most [`crate::args::OPTION_FILE_MAX`] bytes). An error names the line by its
/// number only: the line may hold a password.
fn config_file(path: &str) -> Result<Settings, String> {
    let text = crate::args::read_option_text("--kafka-config", path, crate::args::OPTION_FILE_MAX)?;
    let mut v = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (k, val) = option(line).map_err(|_| {
            format!("--kafka-config {path} line {}: not KEY=VALUE (the line is not shown: it may hold a secret)", n + 1)
        })?;
        v.push((k, val.trim().to_string()));
    }
    Ok(Settings(v))
}

impl KafkaArgs {
    /// The engine's configuration of the export (`None` without `--kafka`); every
    /// message carries `probe_id` (`--probe-id`) in a header.
    pub fn config(&self, probe_id: Option<&str>) -> Option<tapstat_pipeline::KafkaConfig> {
        let mut options = self.kafka_config.clone().unwrap_or_default().0;
        options.extend(self.kafka_option.iter().cloned());
        Some(tapstat_pipeline::KafkaConfig {
            brokers: self.kafka.clone()?,
            topic_prefix: self.kafka_topic_prefix.clone(),
            spool_dir: self.kafka_spool_dir.clone(),
            spool_bytes: self.kafka_spool,
            linger: Duration::from_secs_f64(self.kafka_linger),
            options,
            probe_id: probe_id.map(str::to_string),
        })
    }
}

/// `--kafka`'s BROKERS: HOST:PORT pairs separated by commas (resolved by the client,
/// which retries: a broker need not be up yet). Refused by a build without the feature.
fn brokers(s: &str) -> Result<String, String> {
    if !cfg!(feature = "kafka") {
        return Err(tapstat_pipeline::NO_KAFKA.into());
    }
    for b in s.split(',') {
        let ok = b.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
        if !ok {
            return Err(format!("{b:?} is not HOST:PORT (BROKERS is HOST:PORT[,HOST:PORT...])"));
        }
    }
    Ok(s.to_string())
}

/// The longest log name: a topic (prefix, '.', log) is at most 249 characters.
const LONGEST_LOG: usize = "log_tcp_nocomplete".len();

/// `--kafka-topic-prefix`: Kafka's topic characters.
fn topic_prefix(s: &str) -> Result<String, String> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        return Err(format!("{s:?}: a topic prefix is letters, digits, '.', '_' and '-'"));
    }
    if s.len() + 1 + LONGEST_LOG > 249 {
        return Err(format!("{s:?} is too long (topics are at most 249 characters)"));
    }
    Ok(s.to_string())
}

/// `--kafka-option KEY=VALUE`.
fn option(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_checked() {
        assert!(topic_prefix("probe-1.eu_west").is_ok());
        assert!(topic_prefix("a b").is_err());
        assert!(topic_prefix("").is_err());
        assert!(topic_prefix(&"x".repeat(240)).is_err());
        assert_eq!(option("acks=all").unwrap(), ("acks".into(), "all".into()));
        assert!(option("=x").is_err());
        assert!(option("acks").is_err());
        let f = std::env::temp_dir().join(format!("tapstat-kafka-config-{}", std::process::id()));
        std::fs::write(&f, "# secrets\nsasl.password = s3=cr3t\n\nacks=all\n").unwrap();
        let got = config_file(f.to_str().unwrap()).unwrap().0;
        assert_eq!(got, vec![("sasl.password".into(), "s3=cr3t".into()), ("acks".into(), "all".into())]);
        std::fs::write(&f, "acks\n").unwrap();
        assert!(config_file(f.to_str().unwrap()).unwrap_err().contains("line 1"));
        std::fs::write(&f, "acks=all\nsasl.password secret-value-xyz\n").unwrap();
        let e = config_file(f.to_str().unwrap()).unwrap_err();
        assert!(e.contains("line 2") && !e.contains("secret-value-xyz"), "{e}");
        std::fs::write(&f, "acks=all\n".repeat(200_000)).unwrap();
        assert!(config_file(f.to_str().unwrap()).unwrap_err().contains("larger than"));
        assert!(config_file("/dev/zero").unwrap_err().contains("not a regular file"));
        std::fs::remove_file(&f).unwrap();
        if cfg!(feature = "kafka") {
            assert!(brokers("127.0.0.1:9092,kafka.example:9093").is_ok());
            assert!(brokers("127.0.0.1").is_err());
            assert!(brokers("h:0").is_err());
        } else {
            assert!(brokers("127.0.0.1:9092").unwrap_err().contains("--features kafka"));
        }
    }
}
