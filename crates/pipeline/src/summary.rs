//! `summary.json`: what a run did.

use crate::EngineConfig;
use serde::Serialize;
use std::collections::BTreeMap;
use tapstat_analyze::TrackerStats;
use tapstat_capture::CaptureStats;
use tapstat_decode::{Anomalies, Anomaly};

/// The figures of one run, written to `summary.json` and shown on stderr.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub tapstat_version: &'static str,
    /// The command line (argv) and the inputs (capture files, or interfaces), as the
    /// binary filled them in.
    pub command_line: Vec<String>,
    pub inputs: Vec<String>,
    /// The run's options, an object of every flag by its long name with the value the
    /// run used (typed, or the default); a random hash seed is not among them (nor
    /// anywhere in the summary), nor the value of a secret.
    pub options: serde_json::Value,
    pub workers: usize,
    pub format: &'static str,
    /// The flow hash's seed when the user gave it (`--hash-seed`); `None` (null) for a
    /// random one, which is never published: whoever reads the summary could aim
    /// crafted traffic at the run's buckets (the point of a keyed hash).
    pub hash_seed: Option<u64>,
    /// Frames read from the input.
    pub packets: u64,
    /// Sum of the frames' original lengths.
    pub bytes: u64,
    /// Frames that carry no IP packet (ARP, LLDP, ...), counted but not in any flow.
    pub non_ip_frames: u64,
    /// Packet time of the earliest frame and of the latest one (epoch seconds), whatever
    /// their order in the file.
    pub first_packet_s: f64,
    pub last_packet_s: f64,
    /// Flows started, by kind.
    pub flows: BTreeMap<&'static str, u64>,
    /// Records written, by log.
    pub records: BTreeMap<&'static str, u64>,
    /// Why flows ended.
    pub end_reasons: BTreeMap<&'static str, u64>,
    /// Flows, packets and wire bytes by traffic class (in, out, local, ext).
    pub traffic: BTreeMap<&'static str, TrafficClass>,
    /// Flows evicted because a worker's table was full.
    pub evictions: u64,
    /// Most flows live at once, summed over workers.
    pub peak_flows: u64,
    /// The memory budget and what it took (`--memcap`; the held segments always).
    pub memory: MemorySummary,
    /// Decoding anomalies by name.
    pub anomalies: BTreeMap<&'static str, u64>,
    pub capture: CaptureSummary,
    pub warnings: Vec<String>,
    /// The run was stopped (Ctrl-C) before the end of the input.
    pub interrupted: bool,
    pub elapsed_s: f64,
    /// CPU time of the process (user + system).
    pub cpu_s: f64,
    pub pkts_per_s: f64,
    pub gbit_per_s: f64,
    pub pkts_per_cpu_s: f64,
    /// Live capture: sources, drops, buffers (absent for files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<crate::LiveSummary>,
    /// The first error writing the logs (a full disk, say), which stopped the run;
    /// the records formatted but not written are `records_not_written` (the `records`
    /// counts include them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_error: Option<String>,
    pub records_not_written: u64,
    /// Standard output's reader left (`-o - | head`): the run stopped there, without
    /// an error; `records_not_written` counts what it was not given. (No summary.json
    /// is written with `-o -`.)
    #[serde(skip)]
    pub output_closed: bool,
    /// The flow table's index structure and the flow hash function.
    pub flow_table: &'static str,
    pub flow_hash: &'static str,
    /// Per-packet processing time in the workers, sampled (`--time-sample`).
    pub packet_time: crate::PacketTimeSummary,
    /// How packets were spread over the workers (file runs with several workers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<SchedulingSummary>,
    /// IPFIX export (`--ipfix`): what was sent and what was lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipfix: Option<crate::IpfixSummary>,
    /// Kafka export (`--kafka`): what was delivered, spooled, dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kafka: Option<crate::KafkaSummary>,
    /// The run's link histograms (`--histo-interval`), merged over the workers; the
    /// binary writes them (histograms.tsv), not summary.json.
    #[serde(skip)]
    pub histograms: Option<tapstat_analyze::histo::Histo>,
}

/// What the flows of one traffic class carried (summary.json `traffic`).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct TrafficClass {
    pub flows: u64,
    pub packets: u64,
    pub bytes: u64,
}

/// summary.json's `memory`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemorySummary {
    /// `--memcap` in bytes; 0 for none.
    pub memcap: u64,
    /// The most heap the process had allocated at once (0 where it is not counted).
    pub peak_heap_bytes: u64,
    /// The process's peak resident set (Linux's `VmHWM`; 0 where it is not known).
    pub peak_rss_bytes: u64,
    /// Times memory ran short (per worker), flows ended early to free it, holes given up.
    pub emergencies: u64,
    pub evicted_flows: u64,
    pub holes_given_up: u64,
    /// Most payload bytes held back for holes in TCP streams, summed over the workers'
    /// peaks, and the budget of all the workers together.
    pub peak_held_bytes: u64,
    pub held_budget: u64,
}

/// summary.json's `scheduling`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SchedulingSummary {
    /// `--schedule`: hash, balance or bundle.
    pub policy: &'static str,
    /// Dispatcher threads (decoding in parallel).
    pub dispatchers: usize,
    /// Flows moved between workers with their bins (balance, bundle).
    pub flows_moved: u64,
    /// Packets each worker analysed (DNS responses learnt from by other workers not
    /// included): how evenly the policy spread the load.
    pub per_worker_packets: Vec<u64>,
}

/// The top-level keys of summary.json and what each holds (docs/METRICS.md is made
/// from this list; a test checks that a run's summary.json has no key missing here).
pub const SUMMARY_KEYS: &[(&str, &str)] = &[
    ("tapstat_version", "the version of tapstat that wrote the file"),
    ("command_line", "the command line (argv) of the run"),
    ("inputs", "the capture files read (or the live sources)"),
    ("options", "the run's options: an object of every flag by its long name and the value used, typed or default (a random hash seed is not published; secret values of --kafka-option show as ***)"),
    ("workers", "worker threads of the run"),
    ("format", "record format: tsv, jsonl or parquet"),
    ("hash_seed", "seed of the flow hash when given with --hash-seed; null when random (never published)"),
    ("packets", "frames read from the input"),
    ("bytes", "sum of the frames' original lengths"),
    ("non_ip_frames", "frames without IP (ARP, LLDP...): counted, in no flow"),
    ("first_packet_s", "packet time of the earliest frame, epoch seconds (whatever the order in the file)"),
    ("last_packet_s", "packet time of the latest frame, epoch seconds"),
    ("flows", "flows started, by kind: tcp, udp, other"),
    ("records", "records written, by log"),
    ("end_reasons", "flows ended, by `end_reason` (see the logs' column)"),
    ("traffic", "flows ended, their packets and wire bytes, by traffic class, client to server: `in` (external client, internal server), `out` (internal client, external server), `local` (both internal), `ext` (both external); internal is -N/--internal's networks, every address without them (so every flow is `local`, as in Tstat)"),
    ("evictions", "flows evicted because a worker's table was full (`--max-flows`) or memory ran short (`--memcap`, `memory.evicted_flows`)"),
    ("peak_flows", "most flows live at once, summed over the workers"),
    ("memory", "the memory budget: `memcap` (`--memcap` in bytes, 0 for none), `peak_heap_bytes` (the most heap allocated at once), `peak_rss_bytes` (the process's peak resident set, Linux's VmHWM, 0 where unknown), `emergencies` (times a worker found the heap past the budget and shed state), `evicted_flows` (flows ended early for it, end_reason evicted, in `evictions` too), `holes_given_up` (holes in TCP streams whose held segments went to the application layer early: at the budget of held bytes or in an emergency), `peak_held_bytes` and `held_budget` (payload bytes held back for holes, and the most allowed, summed over the workers)"),
    ("anomalies", "decoding anomalies by name (the table below); only those seen"),
    ("capture", "damage in the input files: truncated_files, corrupt_records, skipped_blocks, bad_packet_blocks"),
    ("warnings", "what the run warns about (also printed on stderr)"),
    ("write_error", "only when writing failed (a full disk): the error; the run stopped there"),
    ("records_not_written", "records formatted but not written because of `write_error` (counted in `records` too)"),
    ("interrupted", "true when SIGINT/SIGTERM stopped the run (a file run: before the end of its input)"),
    ("elapsed_s", "wall-clock seconds of the run"),
    ("cpu_s", "CPU seconds of the process (user + system, every thread)"),
    ("pkts_per_s", "packets per wall-clock second"),
    ("gbit_per_s", "Gbit/s of wire bytes per wall-clock second"),
    ("pkts_per_cpu_s", "packets per CPU second"),
    ("live", "live runs only: sources, packets received, kernel and buffer drops, buffer occupancy, per-worker packets, DNS answers shared between workers for `fqdn` (`dns_answers_shared`) and dropped at a full ring (`dns_answers_dropped`); the overload policy (`overload`: `ted` or `drop`) and its totals: `offered_packets`, `analysed_packets`, `unanalysed_packets` (flow tails counted, not analysed), `prioritised_packets` (kept by `--keep` beyond the cut-off), `min_cutoff` (the lowest per-flow cut-off reached; none when nothing was cut); shunting (`--shunt`): `shunted_flows` (flows a rule matched), `shunted_packets` (their later packets, counted only), `shunts_lost` (requests acquisition never acted on: those flows went on being analysed); `offered_pps` (the rate the sources delivered, first to last poll with frames: a replay's achieved rate) and `queue_delay` (wall time from a frame's entry into its worker's buffer to the end of its analysis, 1 frame in `--time-sample`: `sample_every`, `samples`, `mean_ns`, `p50_ns`, `p99_ns`, `max_ns`)"),
    ("flow_table", "the flow table's index structure (`--flow-table`)"),
    ("flow_hash", "the flow hash function (`--flow-hash`)"),
    ("packet_time", "per-packet processing time in the workers (the flow tracker's share; live runs too), 1 packet in `--time-sample`: mean, percentiles, maximum, outliers, histogram (ns)"),
    ("scheduling", "file runs with several workers: the policy (`--schedule`), the dispatcher threads, the flows moved between workers (balance, bundle) and the packets each worker analysed"),
    ("ipfix", "runs with `--ipfix` only: the `collector`, the `transport` (udp or tcp), the `observation_domain`; `records` (data records sent, one per ended flow), `messages` (the template messages included), `template_messages`, `bytes`; `send_errors` (messages the transport refused, or not sent for want of a TCP connection), `records_lost` (the data records in them), `records_dropped` (data records the workers dropped because the exporter's queue stayed full for a second: a collector that stops reading never holds the analysis back), `reconnects` (TCP connections opened again, after 1 s, then twice as long after each failure in a row, at most 30 s) and `last_error`"),
    ("kafka", "runs with `--kafka` only: the `brokers`, the `topics` written (`PREFIX.<log>`, `PREFIX.schema`), the `spool_dir`; `records` (handed to the export, the `schema_messages` included), `spool_at_start` (records earlier runs left in the spool, sent first), `produced` (handed to the Kafka client, resends included), `delivered` (acknowledged by the broker), `spooled` (written to the spool: the client's queue was full, the broker down or slow), `resent` (read back from the spool and produced), `dropped` (lost: the spool was at its bound, `--kafka-spool`), `errors` (lost: refused or failed for good by the client), `left_in_spool` (on disk at the end, for the next run with that spool), `maybe_delivered` (of those, taken back while on their way: possibly delivered already, so possibly twice), `linger_s` (the end's wait for deliveries), `topics_error` and `last_error`; always `spool_at_start + records = delivered + errors + dropped + left_in_spool`"),
];

#[derive(Clone, Debug, Serialize)]
pub struct CaptureSummary {
    pub truncated_files: u64,
    pub corrupt_records: u64,
    pub skipped_blocks: u64,
    pub bad_packet_blocks: u64,
    /// Frames the filter expression (`-f`) rejected; they are not in `packets`.
    pub filtered_out: u64,
}

impl Summary {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        cfg: &EngineConfig,
        workers: usize,
        anomalies: &Anomalies,
        non_ip: u64,
        packets: u64,
        bytes: u64,
        first_ns: u64,
        last_ns: u64,
        t: &TrackerStats,
        records: &[(&'static str, u64)],
        cap: CaptureStats,
        warnings: Vec<String>,
        interrupted: bool,
        elapsed_s: f64,
        cpu_s: f64,
    ) -> Summary {
        let per = |x: f64, s: f64| if s > 0.0 { x / s } else { 0.0 };
        let mut warnings = warnings;
        if !cfg.flow_hash.is_keyed() {
            warnings.push(unkeyed_hash_warning(cfg.flow_hash));
        }
        let unsupported = anomalies.get(Anomaly::LinkUnsupported);
        if unsupported > 0 {
            // Frames of a link type that is not decoded are in no flow: without a word
            // a whole capture of them would look like an empty one.
            warnings.push(format!(
                "{unsupported} frame(s) of a link type tapstat does not decode were counted \
                 (anomaly link_unsupported) but are in no flow"
            ));
        }
        Summary {
            tapstat_version: env!("CARGO_PKG_VERSION"),
            command_line: Vec::new(),
            inputs: Vec::new(),
            options: serde_json::Value::Null,
            workers,
            format: cfg.format.name(),
            hash_seed: cfg.hash_seed,
            packets,
            bytes,
            non_ip_frames: non_ip,
            first_packet_s: first_ns as f64 / 1e9,
            last_packet_s: last_ns as f64 / 1e9,
            flows: [("tcp", t.flows_tcp), ("udp", t.flows_udp), ("other", t.flows_other)].into_iter().collect(),
            records: records.iter().copied().collect(),
            end_reasons: [
                ("fin", t.ended_fin),
                ("rst", t.ended_rst),
                ("idle", t.ended_idle),
                ("evicted", t.evictions),
                ("end_of_input", t.ended_end_of_input),
                ("interrupted", t.ended_interrupted),
                ("syn_reuse", t.ended_syn_reuse),
            ]
            .into_iter()
            .collect(),
            traffic: tapstat_analyze::nets::Class::ALL
                .iter()
                .map(|c| {
                    let x = t.classes[c.index()];
                    (c.name(), TrafficClass { flows: x.flows, packets: x.packets, bytes: x.bytes })
                })
                .collect(),
            evictions: t.evictions,
            peak_flows: t.peak_flows,
            memory: MemorySummary {
                memcap: cfg.memcap,
                peak_heap_bytes: crate::memory::peak_heap_bytes(),
                peak_rss_bytes: crate::memory::peak_rss_bytes(),
                emergencies: t.memcap_emergencies,
                evicted_flows: t.memcap_evictions,
                holes_given_up: t.holes_given_up,
                peak_held_bytes: t.peak_held_bytes,
                held_budget: cfg.tracker.held_budget as u64 * workers as u64,
            },
            anomalies: anomalies.iter().collect(),
            capture: CaptureSummary {
                truncated_files: cap.truncated_files,
                corrupt_records: cap.corrupt_records,
                skipped_blocks: cap.skipped_blocks,
                bad_packet_blocks: cap.bad_packet_blocks,
                filtered_out: cap.filtered_out,
            },
            warnings,
            interrupted,
            elapsed_s,
            cpu_s,
            pkts_per_s: per(packets as f64, elapsed_s),
            gbit_per_s: per(bytes as f64 * 8.0 / 1e9, elapsed_s),
            pkts_per_cpu_s: per(packets as f64, cpu_s),
            live: None,
            write_error: None,
            records_not_written: 0,
            output_closed: false,
            flow_table: "",
            scheduling: None,
            flow_hash: "",
            packet_time: Default::default(),
            ipfix: None,
            kafka: None,
            histograms: None,
        }
    }

    /// Records what the IPFIX export did (`None`: no export), with a warning when
    /// records were lost.
    pub(crate) fn set_ipfix(&mut self, s: Option<crate::IpfixSummary>) {
        if let Some(x) = &s {
            if x.records_dropped > 0 {
                self.warnings.push(format!(
                    "IPFIX: {} record(s) dropped before the exporter: its queue to {} stayed full (the collector \
                     did not take them fast enough; the analysis was not held back)",
                    x.records_dropped, x.collector
                ));
            }
            if x.records_lost > 0 {
                self.warnings.push(format!(
                    "IPFIX: {} record(s) in {} message(s) could not be sent to {} over {}{}",
                    x.records_lost,
                    x.send_errors,
                    x.collector,
                    x.transport,
                    x.last_error.as_deref().map(|e| format!(" (last error: {e})")).unwrap_or_default()
                ));
            }
        }
        self.ipfix = s;
    }

    /// Records what the Kafka export did (`None`: no export), with a warning when
    /// records were lost or left in the spool.
    pub(crate) fn set_kafka(&mut self, s: Option<crate::KafkaSummary>) {
        if let Some(x) = &s {
            self.warnings.extend(crate::export::kafka::warnings(x));
        }
        self.kafka = s;
    }

    /// Total records written.
    pub fn total_records(&self) -> u64 {
        self.records.values().sum()
    }

    /// A few lines for a person, on stderr at the end of a run.
    pub fn human(&self) -> String {
        let mut s = format!(
            "tapstat: {} packets, {:.1} MB in {:.2} s ({}, {}, {} per CPU-second, {} worker{})\n",
            self.packets,
            self.bytes as f64 / 1e6,
            self.elapsed_s,
            si(self.pkts_per_s, "pkt/s"),
            si(self.gbit_per_s * 1e9, "bit/s"),
            si(self.pkts_per_cpu_s, "pkt"),
            self.workers,
            if self.workers == 1 { "" } else { "s" }
        );
        s += &format!(
            "  flows: {} tcp, {} udp, {} other; records: {}; evictions: {}; non-IP frames: {}\n",
            self.flows["tcp"],
            self.flows["udp"],
            self.flows["other"],
            self.records.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "),
            self.evictions,
            self.non_ip_frames
        );
        if !self.anomalies.is_empty() {
            s += &format!(
                "  anomalies: {}\n",
                self.anomalies.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
            );
        }
        if let Some(e) = &self.write_error {
            s += &format!(
                "  write error: {e}; the run stopped there, {} record(s) were not written\n",
                self.records_not_written
            );
        }
        if self.output_closed {
            s += &format!(
                "  output: standard output was closed by its reader: the run stopped there ({} record(s) not written, or not read)\n",
                self.records_not_written
            );
        }
        if let Some(x) = &self.ipfix {
            s += &format!(
                "  ipfix: {} records in {} messages to {} over {}; {} lost, {} dropped\n",
                x.records, x.messages, x.collector, x.transport, x.records_lost, x.records_dropped
            );
        }
        if let Some(x) = &self.kafka {
            let earlier =
                if x.spool_at_start > 0 { format!(" (+{} from the spool)", x.spool_at_start) } else { String::new() };
            s += &format!(
                "  kafka: {} records{earlier} to {}: {} delivered, {} spooled, {} resent, {} dropped, {} errors, {} left in {}\n",
                x.records, x.brokers, x.delivered, x.spooled, x.resent, x.dropped, x.errors, x.left_in_spool, x.spool_dir
            );
        }
        if self.capture.filtered_out > 0 {
            s += &format!("  filter: {} packets filtered out (not analysed)\n", self.capture.filtered_out);
        }
        if self.interrupted && self.live.is_some() {
            // A live capture ends by a signal: that is its normal end.
            s += "  capture stopped by a signal; every live flow was written\n";
        } else if self.interrupted {
            s += "  interrupted: the input was not read to its end; every live flow was written\n";
        }
        s
    }
}

/// `x` in `unit` with an SI prefix that leaves a few digits before the point (a live
/// run of a thousand packets a second is "1.0 kpkt/s", not "0.00 Mpkt/s").
fn si(x: f64, unit: &str) -> String {
    let (v, p) = match x {
        x if x >= 1e9 => (x / 1e9, "G"),
        x if x >= 1e6 => (x / 1e6, "M"),
        x if x >= 1e3 => (x / 1e3, "k"),
        x => (x, ""),
    };
    format!("{v:.2} {p}{unit}")
}

/// CPU time (user + system) used by this process so far, in seconds.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct we pass and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The warning for a flow hash that is not keyed (see `HashKind::is_keyed`): the binary
/// prints it at start-up and summary.json keeps it.
pub fn unkeyed_hash_warning(kind: tapstat_flow::HashKind) -> String {
    format!(
        "--flow-hash {} is not keyed: traffic crafted to collide in the flow table does so \
         whatever the seed (use foldhash, the default, or ahash where traffic may be hostile)",
        kind.name()
    )
}
