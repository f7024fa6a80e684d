//! The Kafka producer (`--features kafka`): librdkafka through the rdkafka crate, as a
//! [`Broker`].
//!
//! Settings (each may be overridden by `--kafka-option KEY=VALUE`, librdkafka's names):
//!
//! - `enable.idempotence=true`: the broker keeps each partition's records in the order
//!   they were produced and drops the copies of the client's own retries, so records
//!   queued in one run arrive exactly once, through broker restarts and lost
//!   connections (librdkafka retries them in order until they are acknowledged);
//!   `acks=all` comes with it.
//! - `message.timeout.ms=0`: a queued record never times out. While the broker is down
//!   the client's queue fills, and the exporter spools what comes next
//!   ([`crate::spool`]) instead of letting queued records fail out of order.
//! - `queue.buffering.max.messages=100000`, `queue.buffering.max.kbytes=32768`: the
//!   memory queue in front of the spool (librdkafka's default is 1 GiB).
//! - `compression.type=lz4`, `linger.ms=20`.
//!
//! TLS and SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) are librdkafka's, built with the
//! system's OpenSSL (the rdkafka crate's `ssl` feature): `security.protocol`,
//! `ssl.ca.location`, `sasl.mechanisms`, `sasl.username`, `sasl.password` and the rest
//! are set like any other setting. GSSAPI (Kerberos) would need cyrus-sasl and is not
//! built in. A failed handshake or authentication is kept as the cause of the
//! "all brokers are down" that follows it: the error the export reports names it.
//!
//! With a probe identity (`--probe-id`), every message carries it in a header
//! `probe_id`: a store fed by several probes tells their records apart without
//! parsing the value (ClickHouse's Kafka engine shows headers as `_headers.name` and
//! `_headers.value`).

use crate::broker::{Broker, Outcome, Report, Sent};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer as _, ProducerContext, PurgeConfig};
use rdkafka::ClientContext;
use std::sync::Mutex;
use std::time::Duration;

/// tapstat's settings, before the user's.
pub const DEFAULTS: &[(&str, &str)] = &[
    ("client.id", "tapstat"),
    ("enable.idempotence", "true"),
    ("message.timeout.ms", "0"),
    ("queue.buffering.max.messages", "100000"),
    ("queue.buffering.max.kbytes", "32768"),
    ("compression.type", "lz4"),
    ("linger.ms", "20"),
];

/// The version of librdkafka linked in.
pub fn librdkafka_version() -> String {
    rdkafka::util::get_rdkafka_version().1
}

/// The callbacks' side: delivery reports and global errors, kept until polled.
struct Ctx {
    prefix: String,
    reports: Mutex<Vec<Report>>,
    error: Mutex<Option<String>>,
    /// Why the latest connection failed, when librdkafka said (TLS, SASL
    /// authentication), until a record is delivered: the "all brokers are down" that
    /// follows says nothing of the cause, and would hide it.
    cause: Mutex<Option<String>>,
}

/// Errors that say why a broker could not be reached: a failed TLS handshake (an
/// unknown CA, a wrong name) or SASL authentication (a wrong password, an unknown
/// mechanism). librdkafka keeps retrying them as it does any lost connection.
fn is_cause(code: Option<RDKafkaErrorCode>) -> bool {
    use RDKafkaErrorCode as E;
    matches!(
        code,
        Some(
            E::Authentication
                | E::SaslAuthenticationFailed
                | E::SSL
                | E::UnsupportedSASLMechanism
                | E::IllegalSASLState
        )
    )
}

impl ClientContext for Ctx {
    fn error(&self, error: KafkaError, reason: &str) {
        let code = error.rdkafka_error_code();
        let mut text = format!("{error}: {reason}");
        if let Ok(mut c) = self.cause.lock() {
            if is_cause(code) {
                *c = Some(text.clone());
            } else if let Some(cause) = c.as_deref() {
                text = format!("{text}; the last connection failed: {cause}");
            }
        }
        if let Ok(mut e) = self.error.lock() {
            *e = Some(text);
        }
    }

    // librdkafka's log lines (a broker going away, reconnections) are not tapstat's
    // messages: the summary counts what matters.
    fn log(&self, _: rdkafka::config::RDKafkaLogLevel, _: &str, _: &str) {}
}

impl ProducerContext for Ctx {
    type DeliveryOpaque = usize;

    fn delivery(&self, r: &DeliveryResult<'_>, seq: usize) {
        let outcome = match r {
            Ok(_) => {
                if let Ok(mut c) = self.cause.lock() {
                    *c = None;
                }
                Outcome::Delivered
            }
            Err((e, m)) => {
                let code = e.rdkafka_error_code();
                if !is_final(code) {
                    let name = m.topic().strip_prefix(self.prefix.as_str()).unwrap_or(m.topic());
                    let mut frame = Vec::new();
                    crate::spool::push_frame(
                        &mut frame,
                        name,
                        m.key().unwrap_or_default(),
                        m.payload().unwrap_or_default(),
                    );
                    Outcome::Undelivered {
                        frame,
                        error: e.to_string(),
                        in_flight: code == Some(RDKafkaErrorCode::PurgeInflight),
                    }
                } else {
                    Outcome::Failed(e.to_string())
                }
            }
        };
        if let Ok(mut v) = self.reports.lock() {
            v.push(Report { seq: seq as u64, outcome });
        }
    }
}

/// librdkafka's producer, records of log `L` going to topic `PREFIX.L`.
pub struct Producer {
    p: BaseProducer<Ctx>,
    config: ClientConfig,
    /// `PREFIX.`, and each log's topic as met.
    prefix: String,
    topics: Vec<(String, String)>,
    /// `--probe-id`: each message's `probe_id` header.
    probe_id: Option<String>,
}

impl Producer {
    /// A producer for `brokers` (librdkafka's `bootstrap.servers`), with tapstat's
    /// settings ([`DEFAULTS`]) and then `options`. Connecting happens in the background:
    /// no broker needs to be up yet. An error for an unknown or invalid setting (which
    /// names the setting, never its value). Each message carries `probe_id` (if any) in
    /// its header `probe_id`.
    pub fn new(
        brokers: &str,
        topic_prefix: &str,
        options: &[(String, String)],
        probe_id: Option<&str>,
    ) -> Result<Producer, String> {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", brokers);
        for (k, v) in DEFAULTS {
            config.set(*k, *v);
        }
        for (k, v) in options {
            config.set(k, v);
        }
        let prefix = format!("{topic_prefix}.");
        let ctx = Ctx {
            prefix: prefix.clone(),
            reports: Mutex::new(Vec::new()),
            error: Mutex::new(None),
            cause: Mutex::new(None),
        };
        let p: BaseProducer<Ctx> = config.create_with_context(ctx).map_err(|e| format!("Kafka producer: {e}"))?;
        Ok(Producer { p, config, prefix, topics: Vec::new(), probe_id: probe_id.map(str::to_string) })
    }

    /// The topic of log `name`.
    pub fn topic(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// What creates the topics of `logs` (the broker's default partitions and
    /// replication) and the compacted topics of `compacted`, from another thread.
    pub fn topic_creator(&self, logs: &[&str], compacted: &[&str]) -> TopicCreator {
        TopicCreator {
            config: self.config.clone(),
            topics: logs
                .iter()
                .map(|l| (self.topic(l), false))
                .chain(compacted.iter().map(|l| (self.topic(l), true)))
                .collect(),
        }
    }

    fn topic_of(&mut self, name: &str) -> usize {
        if let Some(i) = self.topics.iter().position(|(n, _)| n == name) {
            return i;
        }
        self.topics.push((name.to_string(), self.topic(name)));
        self.topics.len() - 1
    }
}

/// Creates the export's topics ([`Producer::topic_creator`]).
pub struct TopicCreator {
    config: ClientConfig,
    /// (topic, compacted).
    topics: Vec<(String, bool)>,
}

impl TopicCreator {
    /// Creates the topics, waiting at most `wait`; a topic that exists already is left as
    /// it is. The error says which could not be created and why (no broker within
    /// `wait`, say).
    pub fn create(&self, wait: Duration) -> Result<(), String> {
        let admin: AdminClient<rdkafka::client::DefaultClientContext> =
            self.config.create().map_err(|e| format!("Kafka admin client: {e}"))?;
        let topics: Vec<NewTopic<'_>> = self
            .topics
            .iter()
            .map(|(n, compact)| {
                let t = NewTopic::new(n, -1, TopicReplication::Fixed(-1));
                if *compact {
                    t.set("cleanup.policy", "compact")
                } else {
                    t
                }
            })
            .collect();
        let opts = AdminOptions::new().operation_timeout(Some(wait)).request_timeout(Some(wait));
        let results = futures_executor::block_on(admin.create_topics(&topics, &opts))
            .map_err(|e| format!("creating the topics: {e}"))?;
        let failed: Vec<String> = results
            .into_iter()
            .filter_map(|r| match r {
                Err((name, code)) if code != RDKafkaErrorCode::TopicAlreadyExists => Some(format!("{name}: {code}")),
                _ => None,
            })
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(format!("creating the topics: {}", failed.join("; ")))
        }
    }
}

/// Errors after which a record is lost for good: it can never be written as it is (too
/// large, malformed) or the client may not write it (authorization). Any other error
/// leaves the record to be sent again later (spooled).
fn is_final(code: Option<RDKafkaErrorCode>) -> bool {
    use RDKafkaErrorCode as E;
    matches!(
        code,
        Some(
            E::MessageSizeTooLarge
                | E::InvalidMessage
                | E::InvalidMessageSize
                | E::InvalidRecord
                | E::MessageBatchTooLarge
                | E::InvalidTopic
                | E::TopicAuthorizationFailed
                | E::ClusterAuthorizationFailed
                | E::BadMessage
                | E::InvalidArgument
        )
    )
}

impl Broker for Producer {
    fn send(&mut self, frame: &[u8], seq: u64) -> Sent {
        let Some((f, _)) = crate::spool::parse_frame(frame) else {
            return Sent::Refused("not a whole record".into());
        };
        let i = self.topic_of(f.name);
        let mut rec = BaseRecord::with_opaque_to(&self.topics[i].1, seq as usize).key(f.key).payload(f.value);
        if let Some(id) = &self.probe_id {
            rec = rec.headers(OwnedHeaders::new_with_capacity(1).insert(Header { key: "probe_id", value: Some(id) }));
        }
        match self.p.send(rec) {
            Ok(()) => Sent::Queued,
            Err((e, _)) => {
                let code = e.rdkafka_error_code();
                if is_final(code) {
                    Sent::Refused(e.to_string())
                } else {
                    // A full queue, a topic the client sees no partition of yet (a
                    // broker that just restarted), a fatal client: later.
                    if code != Some(RDKafkaErrorCode::QueueFull) {
                        *self.p.context().error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                    }
                    Sent::Full
                }
            }
        }
    }

    fn poll(&mut self, wait: Duration, out: &mut Vec<Report>) {
        self.p.poll(wait);
        if let Ok(mut v) = self.p.context().reports.lock() {
            out.append(&mut v);
        }
    }

    fn in_flight(&self) -> u64 {
        self.p.in_flight_count().max(0) as u64
    }

    fn purge(&mut self) {
        self.p.purge(PurgeConfig::default().queue().inflight());
    }

    fn take_error(&mut self) -> Option<String> {
        self.p.context().error.lock().ok()?.take()
    }
}
