//! Command-line flags, parsed in one step, then turned into configuration.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use tapstat_analyze::{TcpSets, TrackerConfig};
use tapstat_flow::{GcConfig, HashKind, IndexKind, Slots};
use tapstat_lab::synth::Profile;
use tapstat_pipeline::EngineConfig;

const EXAMPLES: &str = "\
Examples:
  tapstat -r trace.pcap -o out/                 analyze a capture into out/
  tapstat -r a.pcap b.pcap -o out/ -w 4         rotated captures as one stream, 4 workers
  tapstat -r - -o out/ --format jsonl < x.pcap  read stdin, write JSON lines
  tapstat -r t.pcap -o out/ --compress zstd     logs compressed as written (*.zst)
  tapstat -r trace.pcap -o - | head             every log as JSON lines on stdout
  tapstat -r day.pcap -o out/ --rotate 1h       a directory per hour of packet time
  tapstat -r trace.pcap -o out/ tcp port 443    only what the filter keeps (as -f; see -r)
  tapstat -r trace.pcap -o out/ -c 1000         the first 1000 packets
  tcpdump -i eth0 -w - | tapstat -r - -o out/   analyze a live capture through a pipe
  tapstat -i eth0 -w 2 -f 'tcp port 443' -o out/ capture live (AF_PACKET fanout), 2 workers
  tapstat --dpdk '-a 0000:3b:00.0' -w 2 -o out/ capture through DPDK (--features dpdk builds)
  tapstat report out/                           out/report.html: histograms, top lists, health
  tapstat synth -o sample.pcap                  write the built-in sample trace
  tapstat bench -r trace.pcap -w 1,2            measure packets/s per CPU-second
  tapstat bench -r trace.pcap --pps 1e6 -o out/ replay through the live path at 1M packets/s
  tapstat bench -r trace.pcap --find-rate -w 2  the sustainable no-loss rate (bisection)

Output (in -o DIR): log_tcp_complete, log_tcp_nocomplete, log_udp_complete,
log_other, log_http_complete and log_dns_complete (application layer on),
log_tcp_periodic and log_udp_periodic (--periodic), as TSV with a header line or as
*.jsonl, compressed with --compress (*.zst, *.gz); with --rotate, in one directory
per interval (YYYY_MM_DD_HH_MM.out, UTC); summary.json; histograms.tsv (link
histograms, --histo-interval); stats.jsonl (live).
`-o -` writes every log to stdout as JSON lines, each line with its log's name as
its first key ({\"log\":\"log_tcp_complete\",...}); the summary goes to stderr only.
Columns: `tapstat schema` or docs/METRICS.md.
Lab knobs, for experiments only, are not listed above: --flow-table, --flow-hash,
--flow-slots, --flow-batches, --time-sample (see docs/USAGE.md).

Exit status: 0 when the whole input was analyzed (a live run stopped by SIGINT or
SIGTERM included, and a run whose stdout reader left, `-o - | head`, which stops it),
1 on an error, 130 when a file run was stopped by SIGINT or SIGTERM before the end
of its input (the flows seen are written, end_reason `interrupted`).";

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
    /// Write tapstat's deterministic sample trace (TCP with loss, DNS over UDP), a SYN flood
    /// or a traffic profile (dominant, many, balanced)
    Synth(SynthArgs),
    /// Write one self-contained HTML page (report.html) of a run's output directory:
    /// the link histograms over time, top applications, server names and talkers, RTT
    /// and retransmission distributions, and the run's health. Opens offline
    Report {
        /// The output directory of a finished run (it holds summary.json)
        dir: PathBuf,
        /// Where to write the page (default DIR/report.html). An existing regular file is
        /// overwritten in place, as cp does; a path that exists and is not a regular file
        /// (a device, a FIFO, a directory, a symbolic link) is refused, never replaced
        #[arg(short = 'o', long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Entries in the top-N charts (applications, names, talkers, ports) [1..=1000]
        #[arg(long, value_name = "N", default_value_t = 15, value_parser = int_in::<usize, 1, 1000>)]
        top: usize,
    },
    /// Write the manual pages (roff: tapstat.1, tapstat-bench.1, ...) into DIR, made from
    /// the flags' definitions (`man -l DIR/tapstat.1`; docs/man holds them)
    Man {
        /// The directory to write the pages in (created if missing)
        #[arg(value_name = "DIR", default_value = ".")]
        dir: PathBuf,
    },
    /// Print the columns of every log (name, type, unit, meaning)
    Schema {
        /// text: a table to read; markdown: docs/METRICS.md's generated part; json:
        /// machine-readable, with a schema_version
        #[arg(long, value_enum, default_value_t = SchemaFormat::Text)]
        format: SchemaFormat,
        /// The same as --format markdown
        #[arg(long, conflicts_with = "format")]
        markdown: bool,
        /// Print ClickHouse CREATE TABLE statements instead (one MergeTree table per log;
        /// docs/DEPLOYMENT.md)
        #[arg(long, conflicts_with_all = ["format", "markdown"])]
        clickhouse: bool,
        /// With --clickhouse: also a Kafka-engine table and a materialized view per log,
        /// consuming from these brokers (host:port,...)
        #[arg(long, value_name = "BROKERS", requires = "clickhouse")]
        kafka_brokers: Option<String>,
        // clap's help text, printed as written: `<log>` is no HTML tag.
        #[allow(rustdoc::invalid_html_tags)]
        /// With --clickhouse --kafka-brokers: the topics are PREFIX.<log>
        #[arg(long, value_name = "PREFIX", default_value = "tapstat", requires = "clickhouse")]
        kafka_topic_prefix: String,
        /// With --clickhouse: the database of the tables
        #[arg(long, value_name = "NAME", default_value = "tapstat", requires = "clickhouse")]
        database: String,
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
    Parquet,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum TimeFormatArg {
    /// Milliseconds since the epoch, 3 decimals (1582454770123.456), as in TSV
    EpochMs,
    /// Seconds since the epoch, 6 decimals (1582454770.123456)
    EpochS,
    /// ISO 8601 in UTC, to the microsecond ("2020-02-23T10:46:10.123456Z")
    Iso8601,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum CompressArg {
    /// Zstandard, level 3 (*.zst)
    Zstd,
    /// gzip, level 6 (*.gz)
    Gzip,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Capture files (pcap or pcapng) to read, in order, as one stream; `-` is stdin.
    /// A filter expression may follow the files, as with tcpdump: the values of -r
    /// from the first one that is neither an existing file nor `-` on are the
    /// expression, joined by spaces (`-r a.pcap b.pcap tcp port 80`); `--` ends the
    /// files explicitly (`-r a.pcap -- tcp port 80`)
    #[arg(help_heading = "Input", short = 'r', long = "read", value_name = "FILE", num_args = 1..)]
    pub read: Vec<PathBuf>,
    /// A trailing filter expression (tcpdump syntax; after `--`, or after options
    /// when no -r precedes it); the same as -f, which it may not be given with
    #[arg(value_name = "EXPR", trailing_var_arg = true)]
    pub expr: Vec<String>,
    /// Stop after N packets (after the filter, as tcpdump's -c) [1..=2^64-1; files only]
    #[arg(help_heading = "Input", short = 'c', long = "count", value_name = "N", allow_negative_numbers = true, value_parser = int_in::<u64, 1, { u64::MAX }>)]
    pub count: Option<u64>,
    /// Live-only flags given on the command line (filled in by main, for the refusal
    /// of those that mean nothing on files).
    #[arg(skip)]
    pub given_live_flags: Vec<&'static str>,
    /// Output directory (created if missing); `-` streams every log to stdout as JSON
    /// lines, each line with its log's name first ({"log":"log_tcp_complete",...}), and
    /// writes no summary.json (the summary goes to stderr)
    #[arg(help_heading = "Output", short = 'o', long = "out", value_name = "DIR", default_value = "tapstat.out")]
    pub out: PathBuf,
    /// Worker threads [default: on files, as many as leave a core to each of their
    /// dispatchers and one to the reader and the writer (1 on up to 3 cores, 5 on 8,
    /// 12 on 16); live, available cores; 1..=max(16, 4 × cores), at most 1024]
    #[arg(short = 'w', long = "workers", value_name = "N", allow_negative_numbers = true, value_parser = int_in::<usize, 1, MAX_WORKERS>)]
    pub workers: Option<usize>,
    /// Record format (parquet: typed columns, zstd; needs a build with --features
    /// parquet, and --rotate on live capture; with -o -, jsonl: the only one a single
    /// stream takes)
    #[arg(help_heading = "Output", long, value_enum, default_value = "tsv")]
    pub format: FormatArg,
    /// How JSON lines write absolute times (--format jsonl, -o -, --kafka): epoch-ms as
    /// TSV does, epoch-s, or iso8601 strings for Elasticsearch and OpenSearch. TSV and
    /// Parquet keep epoch milliseconds; DEPLOYMENT.md's ClickHouse tables expect epoch-ms
    #[arg(help_heading = "Output", long, value_enum, value_name = "FORMAT", default_value = "epoch-ms")]
    pub time_format: TimeFormatArg,
    /// Also export every flow, as it ends, to the IPFIX collector at HOST:PORT (RFC 7011,
    /// bidirectional records per RFC 5103; see docs/ARCHITECTURE.md, "IPFIX export")
    #[arg(help_heading = "Export", long, value_name = "HOST:PORT", value_parser = collector_addr)]
    pub ipfix: Option<std::net::SocketAddr>,
    /// IPFIX transport: udp (messages of at most 1,400 bytes, templates sent again every
    /// 20 s) or tcp (one connection, opened before the run)
    #[arg(help_heading = "Export", long, value_enum, default_value = "udp", requires = "ipfix")]
    pub ipfix_transport: IpfixTransportArg,
    /// IPFIX observation domain id of the messages (tells probes apart at one collector) [0..=2^32-1]
    #[arg(help_heading = "Export", long, value_name = "ID", default_value_t = 1, requires = "ipfix", allow_negative_numbers = true, value_parser = int_in::<u32, 0, { u32::MAX as u64 }>)]
    pub ipfix_domain: u32,
    /// --format given on the command line (filled in by main: `-o -` defaults to jsonl).
    #[arg(skip)]
    pub format_given: bool,
    /// Compress the logs as they are written (log_tcp_complete.zst,
    /// log_tcp_complete.jsonl.gz; with -o -, the stream); live runs end a frame every
    /// --flush, so zstdcat or zcat of a log being written shows its records so far
    #[arg(help_heading = "Output", long, value_enum, value_name = "ALGO")]
    pub compress: Option<CompressArg>,
    /// No progress bar and no summary on stderr (warnings and errors still show)
    #[arg(help_heading = "Output", short = 'q', long)]
    pub quiet: bool,
    /// TCP idle timeout, seconds of packet time [0..=1e10]
    #[arg(help_heading = "Flow table", long, value_name = "S", default_value_t = 300.0, allow_hyphen_values = true, value_parser = timeout_secs)]
    pub tcp_timeout: f64,
    /// UDP idle timeout, seconds of packet time [0..=1e10]
    #[arg(help_heading = "Flow table", long, value_name = "S", default_value_t = 200.0, allow_hyphen_values = true, value_parser = timeout_secs)]
    pub udp_timeout: f64,
    /// ICMP / other IP protocols idle timeout, seconds of packet time [0..=1e10]
    #[arg(help_heading = "Flow table", long, value_name = "S", default_value_t = 200.0, allow_hyphen_values = true, value_parser = timeout_secs)]
    pub other_timeout: f64,
    /// Idle timeout of flows of a single packet, seconds [0..=1e10]
    #[arg(help_heading = "Flow table", long, value_name = "S", default_value_t = 10.0, allow_hyphen_values = true, value_parser = timeout_secs)]
    pub singleton_timeout: f64,
    /// Idle time after which a closed TCP flow (FIN both ways, or RST) is written, seconds [0..=1e10]
    #[arg(help_heading = "Flow table", long, value_name = "S", default_value_t = 10.0, allow_hyphen_values = true, value_parser = timeout_secs)]
    pub closed_timeout: f64,
    /// Most flows per worker; beyond it the flow idle the longest is evicted (counted) [1..=2^28]
    #[arg(help_heading = "Flow table", long, value_name = "N", default_value_t = 1 << 20, allow_negative_numbers = true, value_parser = int_in::<usize, 1, { 1 << 28 }>)]
    pub max_flows: usize,
    /// Most heap the process may use (e.g. 512MiB, 8GiB; raised to 32MiB plus 48MiB per worker),
    /// shared by the flow tables, fragments, held TCP segments, application-layer state
    /// and records on their way out. Each worker's table is sized to half of its share;
    /// past the cap the workers shed state (holes given up, the flows idle the longest
    /// written early, timeouts cut to a tenth) until the heap is back under 7/8 of it.
    /// Counted in summary.json's memory. Default: no cap
    #[arg(help_heading = "Flow table", long, value_name = "SIZE", value_parser = memcap_size)]
    pub memcap: Option<u64>,
    /// Garbage collection period ΔT: the whole flow table is scanned once per ΔT, seconds of packet time [0.001..=86400]
    #[arg(help_heading = "Flow table", long, value_name = "S", default_value_t = GcConfig::default().period_ns as f64 / 1e9, allow_hyphen_values = true, value_parser = gc_secs)]
    pub gc_period: f64,
    /// Garbage collection steps M: every ΔT/M, 1/M of the table is scanned (with W workers on files, W/M of each worker's table every W·ΔT/M) [1..=1000000]
    #[arg(help_heading = "Flow table", long, value_name = "M", default_value_t = GcConfig::default().steps, allow_negative_numbers = true, value_parser = int_in::<u32, 1, 1_000_000>)]
    pub gc_steps: u32,
    /// TCP sets: `core` (volumes, sequence accounting, timing, state) or `full` (core +
    /// RTT and TTL, options and windows, retransmission causes, and for TCP and UDP the
    /// packet size and gap statistics and the first packets)
    #[arg(help_heading = "Output", long, value_enum, default_value = "full")]
    pub tcp_sets: TcpSetsArg,
    /// Packets per flow whose direction, size and gap are recorded (`first_dirs`,
    /// `first_ps`, `first_piat`; full sets) [0..=1000]
    #[arg(help_heading = "Output", long, value_name = "N", default_value_t = 10, allow_negative_numbers = true, value_parser = int_in::<usize, 0, 1000>)]
    pub first_n: usize,
    /// Also write, every S seconds of packet time, a row per live TCP and UDP flow with
    /// what it did in the interval (log_tcp_periodic, log_udp_periodic) [0.001..=1e10]
    #[arg(help_heading = "Output", long, value_name = "S", allow_hyphen_values = true, value_parser = periodic_secs)]
    pub periodic: Option<f64>,
    /// Link histograms every S whole seconds of packet time in histograms.tsv (time,
    /// histogram, direction, bin, count; with -o -, JSON lines tagged "histograms"):
    /// IP length, TTL, IP protocol, server ports, flow durations, bytes and packets,
    /// RTT, flows per application. Written at the end of a file run; a live capture
    /// appends each interval once every worker has passed its end. With --rotate, in
    /// each interval directory: S must divide the period, and the default is the
    /// largest that divides both 300 and the period. `off` (or 0) for none [1..=1e9]
    /// [default: 300]
    #[arg(help_heading = "Output", long, value_name = "S|off", allow_hyphen_values = true, value_parser = histo_secs)]
    pub histo_interval: Option<u64>,
    /// Read the server certificate of TLS and DTLS <= 1.2 (tls_subject_cn, tls_issuer_cn,
    /// tls_issuer, tls_sans, tls_not_before, tls_not_after): `off` spares the reassembly and X.509
    /// parsing
    #[arg(help_heading = "Application layer", long, value_enum, default_value = "on")]
    pub tls_certs: OnOff,
    /// Write the `community_id` column (Community ID v1, seed 0) of TCP and UDP records,
    /// the flow id Zeek, Suricata and Wireshark compute alike, to join their records
    /// with tapstat's. Off by default, as in Suricata: one SHA-1 per record
    #[arg(help_heading = "Output", long)]
    pub community_id: bool,
    /// Application layer: classification (`app`), TLS/QUIC server names and
    /// fingerprints, HTTP and DNS transactions (log_http_complete, log_dns_complete),
    /// DNS names of the servers (`fqdn`)
    #[arg(help_heading = "Application layer", long, value_enum, default_value = "on")]
    pub l7: OnOff,
    /// Payload bytes per flow direction the application layer's parsers may inspect once
    /// the flow is classified (TLS and QUIC hellos, HTTP heads and chunk lines; bodies
    /// skipped by their length do not count). Past it, HTTP heads are still counted
    /// (http_req_cnt, http_res_cnt) but make no more log_http_complete rows. DNS is
    /// bounded by transactions (1024 per flow), not bytes. 0 = classify only: `app` still comes from the first packets'
    /// signatures, but nothing is parsed (no server names, fingerprints, TLS times,
    /// HTTP columns, log_http_complete or log_dns_complete rows) [0..=2^24]
    #[arg(help_heading = "Application layer", long, value_name = "BYTES", default_value_t = 16 * 1024, allow_negative_numbers = true, value_parser = int_in::<u32, 0, { 1 << 24 }>)]
    pub l7_budget: u32,
    /// How much of an HTTP request's URL log_http_complete keeps (privacy)
    #[arg(help_heading = "Application layer", long, value_enum, default_value = "full")]
    pub http_url: UrlArg,
    /// DNS answers (client, address → name) each worker remembers for `fqdn` [0..=2^24]
    #[arg(help_heading = "Application layer", long, value_name = "N", default_value_t = 1 << 16, allow_negative_numbers = true, value_parser = int_in::<usize, 0, { 1 << 24 }>)]
    pub dns_cache: usize,
    /// Internal networks, from a file in Tstat's net file format: one network per line,
    /// `10.0.0.0/8`, `10.0.0.0/255.0.0.0`, `2001:db8::/32` or a bare address; `#`
    /// comments. Sets `c_isint`/`s_isint` and the traffic classes (in, out, local, ext)
    /// of summary.json. Without -N or --internal every address is internal (as in Tstat)
    #[arg(help_heading = "Application layer", short = 'N', long = "net-file", value_name = "FILE", value_parser = parse_net_file)]
    pub net_file: Option<tapstat_analyze::nets::Nets>,
    /// Internal networks given on the command line (added to -N's), comma-separated:
    /// --internal 10.0.0.0/8,192.168.0.0/16,2001:db8::/32
    #[arg(help_heading = "Application layer", long, value_name = "CIDR,...", value_delimiter = ',', value_parser = parse_cidr)]
    pub internal: Vec<String>,
    /// Anonymize every address of every output (logs, DNS answers, IPFIX, Kafka,
    /// Parquet) with prefix-preserving Crypto-PAn, IPv4 and IPv6. KEYFILE holds 32 bytes:
    /// 16 of AES key, 16 of pad (make one: head -c 32 /dev/urandom > KEYFILE; keep it to
    /// anonymize later runs alike). `c_iscrypto`/`s_iscrypto` say which addresses are
    #[arg(help_heading = "Output", long, value_name = "KEYFILE", value_parser = parse_key_file)]
    pub anonymize: Option<KeyBytes>,
    /// Which addresses --anonymize changes: all, internal (those of -N/--internal: the
    /// probe's own users; Tstat's choice) or external
    #[arg(help_heading = "Output", long, value_name = "WHICH", default_value = "all", value_parser = ["all", "internal", "external"], requires = "anonymize")]
    pub anonymize_only: String,
    /// Seed of the flow hash (default: random at start-up, so crafted traffic cannot aim at buckets) [0..=2^64-1]
    #[arg(help_heading = "Tuning", long, value_name = "N", allow_negative_numbers = true, value_parser = int_in::<u64, 0, { u64::MAX }>)]
    pub hash_seed: Option<u64>,
    #[command(flatten)]
    pub live: crate::live::LiveArgs,
    #[command(flatten)]
    pub kafka: crate::kafka::KafkaArgs,
    /// This probe's name, for a store fed by several probes: every Kafka message carries
    /// it in a header `probe_id` (letters, digits, '.', '_', '-'; at most 64) [default:
    /// none]
    #[arg(help_heading = "Export", long, value_name = "NAME", requires = "kafka", value_parser = probe_id)]
    pub probe_id: Option<String>,
    /// Flow table index structure (records do not depend on it; see docs/BENCHMARKS.md)
    #[arg(help_heading = "Tuning", hide = true, long, value_enum, default_value = "chunks")]
    pub flow_table: FlowTableArg,
    /// Flow hash function, computed once per packet by the dispatcher; only foldhash and ahash are keyed (the others warn: crafted traffic can collide whatever the seed)
    #[arg(help_heading = "Tuning", hide = true, long, value_enum, default_value = "foldhash")]
    pub flow_hash: FlowHashArg,
    /// Index size per worker: buckets (lists, trees) or slots (swiss, cuckoo, chunks); 0 = start small and grow [0..=2^24]
    #[arg(help_heading = "Tuning", hide = true, long, value_name = "N", default_value_t = 0, allow_negative_numbers = true, value_parser = int_in::<usize, 0, { 1 << 24 }>)]
    pub flow_slots: usize,
    /// Time the processing of 1 packet in K in the workers (summary.json `packet_time`); 0 = off [0..=2^32-1]
    #[arg(help_heading = "Tuning", hide = true, long, value_name = "K", default_value_t = 64, allow_negative_numbers = true, value_parser = int_in::<u32, 0, { u32::MAX as u64 }>)]
    pub time_sample: u32,
    /// Dispatcher threads with several workers on files: each decodes and hashes every
    /// D-th chunk of the input, in parallel; 0 = one per four workers [0..=1024]
    #[arg(help_heading = "Tuning", long, value_name = "D", default_value_t = 0, allow_negative_numbers = true, value_parser = int_in::<usize, 0, 1024>)]
    pub dispatchers: usize,
    /// Flow-affinity batches: with several workers on files, each worker accounts the
    /// packets of a batch grouped by flow (records are those of input order; see
    /// docs/BENCHMARKS.md; off by default: it did not pay). Refused with one
    /// worker and on live capture, which account packets in input order
    #[arg(help_heading = "Tuning", hide = true, long, value_enum, default_value = "off")]
    pub flow_batches: OnOff,
    /// Frames per chunk read from a file (tests use small chunks to put chunk
    /// boundaries everywhere) [1..=65536]
    #[arg(help_heading = "Tuning", long, value_name = "N", default_value_t = 1024, hide = true, allow_negative_numbers = true, value_parser = int_in::<usize, 1, 65536>)]
    pub chunk_frames: usize,
    /// Which worker a flow's packets go to with several workers on files: hash (fixed
    /// by the flow hash), balance (bins of flows move, state and all, from the busiest
    /// workers to the least busy between epochs), bundle (last-flow-bundle: only bins
    /// idle for an epoch move). Records are the same with every policy; see
    /// docs/ARCHITECTURE.md, "Scheduling"
    #[arg(help_heading = "Tuning", long, value_enum, default_value = "hash")]
    pub schedule: ScheduleArg,
    /// Chunks per scheduling epoch (balance, bundle) [1..=2^20]
    #[arg(help_heading = "Tuning", long, value_name = "N", default_value_t = 64, hide = true, allow_negative_numbers = true, value_parser = int_in::<u64, 1, { 1 << 20 }>)]
    pub epoch_chunks: u64,
    /// Write into an output directory that holds an earlier run's output: the exact
    /// names tapstat writes there (its logs in any format and compression, summary.json,
    /// stats.jsonl, histograms.tsv, report.html, interval directories named
    /// YYYY_MM_DD_HH_MM.out or YYYY_MM_DD_HH_MM_SS.out) are removed first; other names (log_book.txt, a
    /// log_archive/ directory) are left alone, and an interval directory holding
    /// anything tapstat does not write makes the run refuse, naming it, before
    /// removing anything
    #[arg(help_heading = "Output", long)]
    pub force: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum IpfixTransportArg {
    Udp,
    Tcp,
}

/// `--ipfix`'s HOST:PORT: an address, or a name resolved now (its first address).
fn collector_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let mut addrs = s.to_socket_addrs().map_err(|e| format!("{s:?} is not a HOST:PORT collector address ({e})"))?;
    addrs.next().ok_or_else(|| format!("{s:?} resolves to no address"))
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ScheduleArg {
    Hash,
    Balance,
    Bundle,
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

/// The most workers `-w` takes whatever the machine; below it, [`workers_bound`].
pub const MAX_WORKERS: u64 = 1024;

/// The most workers that make sense here: 4 per core (at least 16, so tests and
/// small machines can oversubscribe a little), at most [`MAX_WORKERS`]. Beyond it
/// threads only wait for cores, and each holds a flow table and a buffer.
pub fn workers_bound() -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    cores.saturating_mul(4).max(16).min(MAX_WORKERS as usize)
}

/// `--probe-id`: a name safe in a header, a file name and a ClickHouse string alike.
fn probe_id(s: &str) -> Result<String, String> {
    if s.is_empty() || s.len() > 64 || !s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        return Err(format!("{s:?}: a probe id is 1 to 64 letters, digits, '.', '_' and '-'"));
    }
    Ok(s.to_string())
}

/// A whole number in `LO..=HI`, as a `T`: anything else (negative, fractional, too
/// large) is a one-line error that names the range.
pub fn int_in<T: TryFrom<u64>, const LO: u64, const HI: u64>(s: &str) -> Result<T, String> {
    let range = || if HI == u64::MAX { format!("{LO}..=2^64-1") } else { format!("{LO}..={HI}") };
    let n: i128 = s.trim().parse().map_err(|_| format!("{s:?} is not a whole number in {}", range()))?;
    if n < LO as i128 || n > HI as i128 {
        return Err(format!("{n} is out of range {}", range()));
    }
    T::try_from(n as u64).map_err(|_| format!("{n} is out of range {}", range()))
}

/// A finite number of seconds in `lo..=hi` (NaN, infinities and negatives refused,
/// rather than turned into 0 s or a saturated time).
fn secs_in(s: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let n: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !n.is_finite() || n < lo || n > hi {
        return Err(format!("{s} is out of range: seconds in {lo}..={hi}"));
    }
    Ok(n)
}

/// Idle timeouts: 0 to 1e10 s (317 years), whose nanoseconds fit a u64.
pub const MAX_TIMEOUT_S: f64 = 1e10;

pub fn timeout_secs(s: &str) -> Result<f64, String> {
    secs_in(s, 0.0, MAX_TIMEOUT_S)
}

pub fn gc_secs(s: &str) -> Result<f64, String> {
    secs_in(s, 0.001, 86_400.0)
}

pub fn periodic_secs(s: &str) -> Result<f64, String> {
    secs_in(s, 0.001, MAX_TIMEOUT_S)
}

/// `--histo-interval`: whole seconds, `off` or 0 (none).
pub fn histo_secs(s: &str) -> Result<u64, String> {
    match s.trim() {
        "off" | "0" => Ok(0),
        t => match t.parse::<u64>() {
            Ok(n) if (1..=1_000_000_000).contains(&n) => Ok(n),
            _ => Err(format!("{s:?} is not a whole number of seconds in 1..=1000000000, nor `off`")),
        },
    }
}

/// `--histo-interval`'s default, in seconds.
const HISTO_DEFAULT_S: u64 = 300;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9) as u64
}

/// The inputs of a run: the capture files and the filter expression.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    pub files: Vec<PathBuf>,
    pub filter: Option<String>,
    /// The expression was taken from values of -r that are not files (so a failed
    /// compile may be a mistyped file name).
    pub filter_from_read: bool,
}

impl RunArgs {
    /// Splits -r's values into files and a trailing expression (the rule of -r's
    /// help: from the first value that is neither an existing file nor `-`), joins it
    /// with the words after `--`, and checks it is not given twice.
    pub fn inputs(&self) -> Result<Inputs, String> {
        let split = self.read.iter().position(|p| p.as_os_str() != "-" && !p.exists()).unwrap_or(self.read.len());
        let (files, words) = self.read.split_at(split);
        let mut expr: Vec<String> = words.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        let filter_from_read = !expr.is_empty();
        expr.extend(self.expr.iter().cloned());
        let trailing = (!expr.is_empty()).then(|| expr.join(" "));
        let filter = match (&self.live.filter, trailing) {
            (Some(f), Some(t)) => {
                return Err(format!("the filter is given twice: -f {f:?} and the trailing expression {t:?}; keep one"))
            }
            (Some(f), None) => Some(f.clone()),
            (None, t) => t,
        };
        Ok(Inputs { files: files.to_vec(), filter, filter_from_read })
    }

    /// The worker count, checked against [`workers_bound`].
    pub fn workers(&self) -> Result<usize, String> {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        match self.workers {
            Some(w) if w > workers_bound() => Err(format!(
                "-w {w}: at most {} workers here (4 per core for {cores} core(s), at least 16, at most {MAX_WORKERS})",
                workers_bound()
            )),
            Some(w) => Ok(w.max(1)),
            None => Ok(cores.min(MAX_WORKERS as usize)),
        }
    }

    /// `-o -`: the logs go to stdout.
    /// The link histograms' interval in seconds (0: none): as given, else 300. With
    /// `--rotate`, each interval directory holds whole histogram intervals: one given
    /// must divide the period, and the default becomes the largest interval that
    /// divides both 300 s and the period (60 s for `--rotate 7m`, 10 s for 10s).
    pub fn histo_interval_secs(&self) -> Result<u64, String> {
        const S: u64 = 1_000_000_000;
        let Some(p) = self.live.rotate.map(tapstat_pipeline::rotate_period_ns) else {
            return Ok(self.histo_interval.unwrap_or(HISTO_DEFAULT_S));
        };
        match self.histo_interval {
            Some(0) => Ok(0),
            Some(h) if p % (h * S) == 0 => Ok(h),
            Some(h) => Err(format!(
                "--histo-interval {h} does not divide --rotate's period ({} s): each interval directory \
                 holds whole histogram intervals; give a divisor of the period, or off",
                p as f64 / S as f64
            )),
            None => match gcd(HISTO_DEFAULT_S * S, p) {
                g if g % S == 0 => Ok(g / S),
                _ => Err(format!(
                    "--rotate's period ({} s) is not a whole number of seconds: give --histo-interval S \
                     dividing it, or off",
                    p as f64 / S as f64
                )),
            },
        }
    }

    pub fn to_stdout(&self) -> bool {
        self.out.as_os_str() == "-"
    }

    /// `--time-format`, set for every JSON record of the process; refused where the run
    /// writes no JSON (it would change nothing).
    pub fn apply_time_format(&self) -> Result<(), String> {
        use tapstat_record::json::TimeFormat;
        let f = match self.time_format {
            TimeFormatArg::EpochMs => TimeFormat::EpochMs,
            TimeFormatArg::EpochS => TimeFormat::EpochS,
            TimeFormatArg::Iso8601 => TimeFormat::Iso8601,
        };
        let json = self.to_stdout() || self.format == FormatArg::Jsonl || self.kafka.kafka.is_some();
        if f != TimeFormat::EpochMs && !json {
            return Err("--time-format applies to JSON lines (--format jsonl, -o -, --kafka); TSV and Parquet write epoch milliseconds".into());
        }
        tapstat_record::json::set_time_format(f);
        Ok(())
    }

    /// The internal networks of -N and --internal, for the run's lifetime (the workers'
    /// trackers share them); none when neither is given.
    fn nets(&self) -> Option<&'static tapstat_analyze::nets::Nets> {
        if self.net_file.is_none() && self.internal.is_empty() {
            return None;
        }
        let mut n = self.net_file.clone().unwrap_or_default();
        for c in &self.internal {
            // Checked when the flags were read.
            let _ = n.add_str(c);
        }
        Some(Box::leak(Box::new(n)))
    }

    pub fn engine_config(&self) -> EngineConfig {
        let workers =
            self.workers.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).max(1);
        let cfg = EngineConfig {
            workers,
            format: match self.format {
                FormatArg::Tsv if self.to_stdout() && !self.format_given => tapstat_sink::Format::Jsonl,
                FormatArg::Tsv => tapstat_sink::Format::Tsv,
                FormatArg::Jsonl => tapstat_sink::Format::Jsonl,
                FormatArg::Parquet => tapstat_sink::Format::Parquet,
            },
            out_dir: self.out.clone(),
            compress: match self.compress {
                None => tapstat_sink::Compress::None,
                Some(CompressArg::Zstd) => tapstat_sink::Compress::Zstd,
                Some(CompressArg::Gzip) => tapstat_sink::Compress::Gzip,
            },
            stdout: self.to_stdout(),
            rotate: self.live.rotate,
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
                // Refused before a run starts where it is an error (`analyze`, `replay`).
                histo_ns: self.histo_interval_secs().unwrap_or(0) * 1_000_000_000,
                l7: (self.l7 == OnOff::On).then(|| tapstat_l7::L7Config {
                    budget: self.l7_budget,
                    tls_certs: self.tls_certs == OnOff::On,
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
                start_flows: TrackerConfig::default().start_flows,
                // Parsed and counted when the flags are read (`--shunt` is live-only).
                shunt: tapstat_analyze::shunt::Shunt::new(&self.live.shunt).unwrap_or_default(),
                nets: self.nets(),
                anon: self.anonymize.map(|k| tapstat_analyze::anon::AnonConfig {
                    key: k.0,
                    scope: tapstat_analyze::anon::Scope::parse(&self.anonymize_only).unwrap_or_default(),
                }),
                community_id: self.community_id,
                held_budget: TrackerConfig::default().held_budget,
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
            dispatchers: self.dispatchers,
            flow_batches: self.flow_batches == OnOff::On,
            chunk_frames: self.chunk_frames,
            schedule: match self.schedule {
                ScheduleArg::Hash => tapstat_pipeline::Schedule::Hash,
                ScheduleArg::Balance => tapstat_pipeline::Schedule::Balance,
                ScheduleArg::Bundle => tapstat_pipeline::Schedule::Bundle,
            },
            epoch_chunks: self.epoch_chunks,
            ipfix: self.ipfix.map(|collector| tapstat_pipeline::IpfixConfig {
                collector,
                transport: match self.ipfix_transport {
                    IpfixTransportArg::Udp => tapstat_pipeline::IpfixTransport::Udp,
                    IpfixTransportArg::Tcp => tapstat_pipeline::IpfixTransport::Tcp,
                },
                domain: self.ipfix_domain,
            }),
            kafka: self.kafka.config(self.probe_id.as_deref()),
            ..EngineConfig::default()
        };
        with_memcap(cfg, self.memcap)
    }
}

/// Bytes of `--memcap` below which each worker's share is raised: its records' way
/// to the writer (`OUTPUT_BYTES_PER_WORKER`, 28 MiB) and 20 MiB of flows.
pub const MIN_MEMCAP_PER_WORKER: u64 = 48 << 20;

/// Slots of the engine's rings under `--memcap`, and the bytes of input they are
/// budgeted for: chunks of a file share its 4 MiB blocks, and a ring of chunks pins a
/// block per chunk at worst (frames of some kilobytes).
const MEMCAP_RING_SLOTS: usize = 8;
const MEMCAP_INPUT_BYTES: u64 = (MEMCAP_RING_SLOTS * tapstat_capture::STREAM_FILL) as u64;

/// `--memcap`: a size of at least 80 MiB (the input's blocks and one worker's least share).
fn memcap_size(s: &str) -> Result<u64, String> {
    let n = crate::live::parse_size(s)?;
    if n < MEMCAP_INPUT_BYTES + MIN_MEMCAP_PER_WORKER {
        return Err(format!("{s:?} is below the least memory budget, 80MiB"));
    }
    Ok(n)
}

/// `cfg` with the engine's bounds under a memory budget (`--memcap`). Each worker's
/// share of `memcap` (raised to [`MIN_MEMCAP_PER_WORKER`]), less what its records take
/// on their way out, holds its flows (their slots and a typical flow's boxed state) in
/// half of it, its held TCP segments in an eighth and its fragments' buffers in a
/// sixteenth; the rest (flows' state beyond the typical, records on their way) is what
/// the emergency mode keeps under the cap.
fn with_memcap(mut cfg: EngineConfig, memcap: Option<u64>) -> EngineConfig {
    let Some(m) = memcap else { return cfg };
    let w = cfg.workers.max(1) as u64;
    cfg.memcap = m.max(MEMCAP_INPUT_BYTES + MIN_MEMCAP_PER_WORKER * w);
    // The input's read-ahead: a few blocks of the file in the rings.
    cfg.ring_slots = cfg.ring_slots.min(MEMCAP_RING_SLOTS);
    let share = ((cfg.memcap - MEMCAP_INPUT_BYTES) / w) as usize - tapstat_pipeline::OUTPUT_BYTES_PER_WORKER;
    let flow = tapstat_analyze::Tracker::slot_bytes() + tapstat_analyze::FLOW_HEAP_BYTES;
    cfg.tracker.capacity = cfg.tracker.capacity.min(share / 2 / flow).max(1);
    cfg.tracker.start_flows = cfg.tracker.start_flows.min(cfg.tracker.capacity);
    cfg.tracker.held_budget = cfg.tracker.held_budget.min(share / 8);
    cfg.decode.reassembly_bytes = cfg.decode.reassembly_bytes.min(share / 16);
    cfg
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Capture to measure on
    #[arg(short = 'r', long = "read", value_name = "FILE", required = true, num_args = 1..)]
    pub read: Vec<PathBuf>,
    /// Worker counts to measure, comma-separated [default: 1 and available cores; each as tapstat's -w]
    #[arg(short = 'w', long = "workers", value_delimiter = ',', allow_negative_numbers = true, value_parser = int_in::<usize, 1, MAX_WORKERS>)]
    pub workers: Vec<usize>,
    /// Timed runs per worker count (the median is reported), after one warm-up [1..=1000]
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = int_in::<usize, 1, 1000>)]
    pub runs: usize,
    /// Replay the capture through the live path (acquisition threads, per-worker
    /// buffers, analysis workers) at X times its packet-time speed (e.g. 10, 0.5)
    #[arg(long, value_name = "X", conflicts_with = "pps", allow_hyphen_values = true, value_parser = positive_f64)]
    pub speed: Option<f64>,
    /// Replay through the live path at N packets per second, evenly spaced
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = positive_f64)]
    pub pps: Option<f64>,
    /// Find the sustainable no-loss rate: bisection on --pps, each rate replayed --runs times
    #[arg(long, conflicts_with_all = ["speed", "pps"])]
    pub find_rate: bool,
    /// Largest capture a replay loads into memory (e.g. 512MiB, 4GiB)
    #[arg(long, value_name = "SIZE", default_value = "4GiB", value_parser = crate::live::parse_size)]
    pub replay_max: u64,
    /// Output directory of a replay (a temporary one when not given)
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Record format of a replay
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Each worker's packet buffer in a replay (as a live run's --buffer) [1MiB..=64GiB]
    #[arg(long, value_name = "SIZE", value_parser = crate::live::buffer_size)]
    pub buffer: Option<u64>,
    /// Overload policy of a replay (as a live run's --overload)
    #[arg(long, value_enum)]
    pub overload: Option<crate::live::OverloadArg>,
    /// Overwrite a replay's existing output directory
    #[arg(long)]
    pub force: bool,
    /// No per-second lines and summary on stderr
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Any other option of a run for a replay, after `--` (e.g. `-- --l7 off --acquire poll`)
    #[arg(last = true, value_name = "RUN OPTIONS")]
    pub run_options: Vec<String>,
}

impl BenchArgs {
    /// Whether this bench replays through the live path rather than reading offline.
    pub fn is_replay(&self) -> bool {
        self.speed.is_some() || self.pps.is_some() || self.find_rate
    }
}

/// A finite number above 0.
pub fn positive_f64(s: &str) -> Result<f64, String> {
    let x: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    if !(x.is_finite() && x > 0.0) {
        return Err(format!("{s:?} is out of range (must be above 0)"));
    }
    Ok(x)
}

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// The pcap file to write
    #[arg(short = 'o', long = "out", value_name = "FILE", default_value = "sample/sample.pcap")]
    pub output: PathBuf,
    /// Random seed (same seed, same bytes) [0..=2^64-1]
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = int_in::<u64, 0, { u64::MAX }>)]
    pub seed: u64,
    /// TCP connections [0..=10000000]
    #[arg(long, allow_negative_numbers = true, value_parser = int_in::<usize, 0, 10_000_000>)]
    pub tcp_flows: Option<usize>,
    /// DNS transactions over UDP [0..=10000000]
    #[arg(long, allow_negative_numbers = true, value_parser = int_in::<usize, 0, 10_000_000>)]
    pub udp_flows: Option<usize>,
    /// Write a flood instead: N TCP SYNs from random sources to random destinations,
    /// each a new flow (a stress test of the flow tables; see docs/BENCHMARKS.md)
    #[arg(long, value_name = "N", conflicts_with_all = ["tcp_flows", "udp_flows"])]
    pub flood: Option<usize>,
    /// Packets per second of packet time of --flood
    #[arg(long, value_name = "PPS", default_value_t = 1_000_000, requires = "flood")]
    pub flood_pps: u64,
    /// Write a traffic profile instead, complete TCP connections only (for comparing
    /// scheduling policies; see docs/BENCHMARKS.md): dominant = one elephant carries ~90%
    /// of the packets over a background of short connections (a few thousand in 1 M
    /// packets); many = ~N/10 connections of ~10 packets (handshake, one request, one
    /// response, close), nearly all open at once: the many-flow capture; balanced =
    /// 64..256 long connections with equal shares of the packets, interleaved
    #[arg(long, value_name = "PROFILE", value_parser = profile_parser(), conflicts_with_all = ["tcp_flows", "udp_flows", "flood"])]
    pub profile: Option<Profile>,
    /// About how many packets --profile writes [1..=1000000000]
    #[arg(long, value_name = "N", default_value_t = 1_000_000, requires = "profile", allow_negative_numbers = true, value_parser = int_in::<u64, 1, 1_000_000_000>)]
    pub packets: u64,
}

/// `--profile`'s values, listed in the help and in the error for any other.
fn profile_parser() -> impl clap::builder::TypedValueParser<Value = Profile> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Profile::ALL.map(Profile::name))
        .map(|s| s.parse::<Profile>().expect("a listed profile parses"))
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

/// A Crypto-PAn key read from `--anonymize`'s file (never printed).
#[derive(Clone, Copy)]
pub struct KeyBytes(pub [u8; 32]);

impl std::fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyBytes(..)")
    }
}

/// Most bytes of a `-N` or `--kafka-config` file (a few thousand networks or settings
/// take a few hundred KiB).
pub const OPTION_FILE_MAX: u64 = 1 << 20;

/// Opens the file given to `flag`, refusing anything but a regular file: a device
/// (`/dev/zero`) would be read until memory runs out, a FIFO would block the run. The
/// open does not block (O_NONBLOCK: a FIFO without a writer opens at once), and the
/// check is on the opened descriptor, not on the path (which could change in between).
/// Returns the file and its length. Errors name the flag and the file.
pub fn open_option_file(flag: &str, path: &str) -> Result<(std::fs::File, u64), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| format!("{flag} {path}: {e}"))?;
    let meta = f.metadata().map_err(|e| format!("{flag} {path}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{flag} {path}: not a regular file"));
    }
    Ok((f, meta.len()))
}

/// Reads the file given to `flag` ([`open_option_file`]'s checks), refusing one over
/// `max` bytes; at most `max + 1` bytes are read, should it grow meanwhile.
pub fn read_option_file(flag: &str, path: &str, max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let too_big = |n: u64| format!("{flag} {path}: larger than {max} bytes ({n} bytes)");
    let (f, len) = open_option_file(flag, path)?;
    if len > max {
        return Err(too_big(len));
    }
    let mut v = Vec::with_capacity(len as usize);
    f.take(max + 1).read_to_end(&mut v).map_err(|e| format!("{flag} {path}: {e}"))?;
    if v.len() as u64 > max {
        return Err(too_big(v.len() as u64));
    }
    Ok(v)
}

/// [`read_option_file`] of a text file (UTF-8).
pub fn read_option_text(flag: &str, path: &str, max: u64) -> Result<String, String> {
    String::from_utf8(read_option_file(flag, path, max)?).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
        format!("{flag} {path}: line {line} is not UTF-8 text")
    })
}

/// `--anonymize KEYFILE`: a regular file of exactly 32 bytes (never echoed).
fn parse_key_file(s: &str) -> Result<KeyBytes, String> {
    use std::io::Read;
    let wrong = |n: u64| {
        format!(
            "--anonymize {s}: a Crypto-PAn key file holds exactly 32 bytes (16 of AES key, 16 of pad), this one {n} (make one with: head -c 32 /dev/urandom > key)"
        )
    };
    let (f, len) = open_option_file("--anonymize", s)?;
    if len != 32 {
        return Err(wrong(len));
    }
    let mut v = Vec::with_capacity(33);
    f.take(33).read_to_end(&mut v).map_err(|e| format!("--anonymize {s}: {e}"))?;
    <[u8; 32]>::try_from(v.as_slice()).map(KeyBytes).map_err(|_| wrong(v.len() as u64))
}

/// `-N FILE`: at most [`OPTION_FILE_MAX`] bytes; an error names the line by its number
/// (and at most 64 characters of the bad network).
fn parse_net_file(s: &str) -> Result<tapstat_analyze::nets::Nets, String> {
    let text = read_option_text("-N", s, OPTION_FILE_MAX)?;
    tapstat_analyze::nets::Nets::parse(&text).map_err(|e| format!("-N {s}: {e}"))
}

fn parse_cidr(s: &str) -> Result<String, String> {
    tapstat_analyze::nets::Nets::default().add_str(s)?;
    Ok(s.trim().to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_probe_id_is_a_short_plain_name() {
        assert_eq!(super::probe_id("site1-eth1.a_b").unwrap(), "site1-eth1.a_b");
        for bad in ["", "a b", "a\"b", "é", &"x".repeat(65)] {
            assert!(super::probe_id(bad).is_err(), "{bad:?}");
        }
    }
}
