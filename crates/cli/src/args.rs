//! Command-line flags, parsed in one step, then turned into configuration.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use tapstat_analyze::{TcpSets, TrackerConfig};
use tapstat_flow::{GcConfig, HashKind, IndexKind, Slots};
use tapstat_pipeline::EngineConfig;

const EXAMPLES: &str = "\
Examples:
  tapstat -r trace.pcap -o out/                 analyze a capture into out/
  tapstat -r a.pcap b.pcap -o out/ -w 4         rotated captures as one stream, 4 workers
  tapstat -r - -o out/ --format jsonl < x.pcap  read stdin, write JSON lines
  tcpdump -i eth0 -w - | tapstat -r - -o out/   analyze a live capture through a pipe
  tapstat -i eth0 -w 2 -f 'tcp port 443' -o out/ capture live (AF_PACKET fanout), 2 workers
  tapstat --dpdk '-a 0000:3b:00.0' -w 2 -o out/ capture through DPDK (--features dpdk builds)
  tapstat synth -o sample.pcap                  write the built-in sample trace
  tapstat bench -r trace.pcap -w 1,2            measure packets/s per CPU-second

Output (in -o DIR): log_tcp_complete, log_tcp_nocomplete, log_udp_complete,
log_other, log_http_complete and log_dns_complete (application layer on),
log_tcp_periodic and log_udp_periodic (--periodic), as TSV with a header line or as
*.jsonl; summary.json; stats.jsonl (live). Columns: `tapstat schema` or
docs/METRICS.md.

Exit status: 0 when the whole input was analyzed (a live run stopped by SIGINT or
SIGTERM included), 1 on an error, 130 when a file run was stopped by SIGINT or
SIGTERM before the end of its input (the flows seen are written, end_reason
`interrupted`).";

/// tapstat: a passive statistical traffic analyzer. Reads pcap/pcapng captures and
/// writes one record per TCP, UDP and other IP flow, with Tstat's column names.
#[derive(Parser, Debug)]
#[command(name = "tapstat", version, about, after_help = EXAMPLES, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure throughput (packets/s and Gbit/s, per CPU-second and wall-clock)
    Bench(BenchArgs),
    /// Write tapstat's deterministic sample trace (TCP with loss, DNS over UDP)
    Synth(SynthArgs),
    /// Print the columns of every log (name, type, unit, meaning)
    Schema {
        /// text: a table to read; markdown: docs/METRICS.md's generated part; json:
        /// machine-readable, with a schema_version
        #[arg(long, value_enum, default_value_t = SchemaFormat::Text)]
        format: SchemaFormat,
        /// The same as --format markdown
        #[arg(long, conflicts_with = "format")]
        markdown: bool,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum SchemaFormat {
    Text,
    Markdown,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum TcpSetsArg {
    Core,
    Full,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum UrlArg {
    /// The request target as sent, query included
    Full,
    /// The path without the query string
    Path,
    /// No URL at all
    None,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum FormatArg {
    Tsv,
    Jsonl,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Capture files (pcap or pcapng) to read, in order, as one stream; `-` is stdin
    #[arg(short = 'r', long = "read", value_name = "FILE", num_args = 1..)]
    pub read: Vec<PathBuf>,
    /// Output directory (created if missing)
    #[arg(short = 'o', long = "out", value_name = "DIR", default_value = "tapstat.out")]
    pub out: PathBuf,
    /// Worker threads [default: available cores]
    #[arg(short = 'w', long = "workers", value_name = "N")]
    pub workers: Option<usize>,
    /// Record format
    #[arg(long, value_enum, default_value = "tsv")]
    pub format: FormatArg,
    /// No progress bar and no summary on stderr (warnings and errors still show)
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// TCP idle timeout, seconds of packet time
    #[arg(long, value_name = "S", default_value_t = 300.0)]
    pub tcp_timeout: f64,
    /// UDP idle timeout, seconds of packet time
    #[arg(long, value_name = "S", default_value_t = 200.0)]
    pub udp_timeout: f64,
    /// ICMP / other IP protocols idle timeout, seconds of packet time
    #[arg(long, value_name = "S", default_value_t = 200.0)]
    pub other_timeout: f64,
    /// Idle timeout of flows of a single packet, seconds
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub singleton_timeout: f64,
    /// Idle time after which a closed TCP flow (FIN both ways, or RST) is written, seconds
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub closed_timeout: f64,
    /// Most flows per worker; beyond it the flow idle the longest is evicted (counted)
    #[arg(long, value_name = "N", default_value_t = 1 << 20)]
    pub max_flows: usize,
    /// Garbage collection period ΔT: the whole flow table is scanned once per ΔT, seconds of packet time
    #[arg(long, value_name = "S", default_value_t = GcConfig::default().period_ns as f64 / 1e9)]
    pub gc_period: f64,
    /// Garbage collection steps M: every ΔT/M, 1/M of the table is scanned
    #[arg(long, value_name = "M", default_value_t = GcConfig::default().steps)]
    pub gc_steps: u32,
    /// TCP sets: `core` (volumes, sequence accounting, timing, state) or `full` (core +
    /// RTT and TTL, options and windows, retransmission causes, and for TCP and UDP the
    /// packet size and gap statistics and the first packets)
    #[arg(long, value_enum, default_value = "full")]
    pub tcp_sets: TcpSetsArg,
    /// Packets per flow whose direction, size and gap are recorded (`first_dirs`,
    /// `first_ps`, `first_piat`; full sets)
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub first_n: usize,
    /// Also write, every S seconds of packet time, a row per live TCP and UDP flow with
    /// what it did in the interval (log_tcp_periodic, log_udp_periodic)
    #[arg(long, value_name = "S")]
    pub periodic: Option<f64>,
    /// Application layer: classification (`app`), TLS/QUIC server names and
    /// fingerprints, HTTP and DNS transactions (log_http_complete, log_dns_complete),
    /// DNS names of the servers (`fqdn`)
    #[arg(long, value_enum, default_value = "on")]
    pub l7: OnOff,
    /// Payload bytes per flow direction the application layer may inspect
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024)]
    pub l7_budget: u32,
    /// How much of an HTTP request's URL log_http_complete keeps (privacy)
    #[arg(long, value_enum, default_value = "full")]
    pub http_url: UrlArg,
    /// DNS answers (client, address → name) each worker remembers for `fqdn`
    #[arg(long, value_name = "N", default_value_t = 1 << 16)]
    pub dns_cache: usize,
    /// Seed of the flow hash (default: random at start-up, so crafted traffic cannot aim at buckets)
    #[arg(long, value_name = "N")]
    pub hash_seed: Option<u64>,
    #[command(flatten)]
    pub live: crate::live::LiveArgs,
    /// Flow table index structure (records do not depend on it; see docs/BENCHMARKS.md, issue 6)
    #[arg(long, value_enum, default_value = "chunks")]
    pub flow_table: FlowTableArg,
    /// Flow hash function, computed once per packet by the dispatcher (coralreef and toeplitz are not keyed)
    #[arg(long, value_enum, default_value = "foldhash")]
    pub flow_hash: FlowHashArg,
    /// Index size per worker: buckets (lists, trees) or slots (swiss, cuckoo, chunks); 0 = start small and grow
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub flow_slots: usize,
    /// Time the processing of 1 packet in K in the workers (summary.json `packet_time`); 0 = off
    #[arg(long, value_name = "K", default_value_t = 64)]
    pub time_sample: u32,
    /// Write into an output directory that holds an earlier run's output: tapstat's
    /// own files there (log_*, summary.json, stats.jsonl, interval directories) are
    /// removed first; other files are left alone
    #[arg(long)]
    pub force: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum FlowTableArg {
    Lists,
    Trees,
    Swiss,
    Cuckoo,
    Chunks,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum FlowHashArg {
    Foldhash,
    Ahash,
    Xxh3,
    Murmur3,
    Lookup3,
    Coralreef,
    Fnv1a,
    Crc32,
    Toeplitz,
}

fn ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9) as u64
}

impl RunArgs {
    pub fn engine_config(&self) -> EngineConfig {
        let workers =
            self.workers.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).max(1);
        EngineConfig {
            workers,
            format: match self.format {
                FormatArg::Tsv => tapstat_sink::Format::Tsv,
                FormatArg::Jsonl => tapstat_sink::Format::Jsonl,
            },
            out_dir: self.out.clone(),
            tracker: TrackerConfig {
                capacity: self.max_flows.max(1),
                tcp_idle_ns: ns(self.tcp_timeout),
                udp_idle_ns: ns(self.udp_timeout),
                other_idle_ns: ns(self.other_timeout),
                singleton_ns: ns(self.singleton_timeout),
                closed_ns: ns(self.closed_timeout),
                gc: GcConfig { period_ns: ns(self.gc_period).max(1), steps: self.gc_steps.max(1) },
                tcp_sets: match self.tcp_sets {
                    TcpSetsArg::Core => TcpSets::Core,
                    TcpSetsArg::Full => TcpSets::Full,
                },
                first_n: self.first_n,
                periodic_ns: self.periodic.map_or(0, |s| ns(s).max(1_000_000)),
                l7: (self.l7 == OnOff::On).then(|| tapstat_l7::L7Config {
                    budget: self.l7_budget,
                    url_privacy: match self.http_url {
                        UrlArg::Full => tapstat_l7::UrlPrivacy::Full,
                        UrlArg::Path => tapstat_l7::UrlPrivacy::PathOnly,
                        UrlArg::None => tapstat_l7::UrlPrivacy::None,
                    },
                    ..Default::default()
                }),
                dns_cache: self.dns_cache,
                index: match self.flow_table {
                    FlowTableArg::Lists => IndexKind::Lists,
                    FlowTableArg::Trees => IndexKind::Trees,
                    FlowTableArg::Swiss => IndexKind::Swiss,
                    FlowTableArg::Cuckoo => IndexKind::Cuckoo,
                    FlowTableArg::Chunks => IndexKind::Chunks,
                },
                slots: if self.flow_slots == 0 { Slots::Auto } else { Slots::Fixed(self.flow_slots) },
            },
            hash_seed: self.hash_seed,
            flow_hash: match self.flow_hash {
                FlowHashArg::Foldhash => HashKind::Foldhash,
                FlowHashArg::Ahash => HashKind::Ahash,
                FlowHashArg::Xxh3 => HashKind::Xxh3,
                FlowHashArg::Murmur3 => HashKind::Murmur3,
                FlowHashArg::Lookup3 => HashKind::Lookup3,
                FlowHashArg::Coralreef => HashKind::Coralreef,
                FlowHashArg::Fnv1a => HashKind::Fnv1a,
                FlowHashArg::Crc32 => HashKind::Crc32,
                FlowHashArg::Toeplitz => HashKind::Toeplitz,
            },
            time_sample: self.time_sample,
            ..EngineConfig::default()
        }
    }
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Capture to measure on
    #[arg(short = 'r', long = "read", value_name = "FILE", required = true, num_args = 1..)]
    pub read: Vec<PathBuf>,
    /// Worker counts to measure, comma-separated [default: 1 and available cores]
    #[arg(short = 'w', long = "workers", value_delimiter = ',')]
    pub workers: Vec<usize>,
    /// Timed runs per worker count (the median is reported), after one warm-up
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// The pcap file to write
    #[arg(short = 'o', long = "out", value_name = "FILE", default_value = "sample/sample.pcap")]
    pub output: PathBuf,
    /// Random seed (same seed, same bytes)
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// TCP connections
    #[arg(long)]
    pub tcp_flows: Option<usize>,
    /// DNS transactions over UDP
    #[arg(long)]
    pub udp_flows: Option<usize>,
    /// Write a flood instead: N TCP SYNs from random sources to random destinations,
    /// each a new flow (a stress test of the flow tables; see docs/BENCHMARKS.md)
    #[arg(long, value_name = "N", conflicts_with_all = ["tcp_flows", "udp_flows"])]
    pub flood: Option<usize>,
    /// Packets per second of packet time of --flood
    #[arg(long, value_name = "PPS", default_value_t = 1_000_000, requires = "flood")]
    pub flood_pps: u64,
}

impl SynthArgs {
    pub fn config(&self) -> tapstat_lab::synth::SynthConfig {
        let mut c = tapstat_lab::synth::SynthConfig { seed: self.seed, ..Default::default() };
        if let Some(n) = self.tcp_flows {
            c.tcp_flows = n;
        }
        if let Some(n) = self.udp_flows {
            c.udp_dns_flows = n;
        }
        c
    }
}
