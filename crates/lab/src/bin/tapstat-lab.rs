//! `tapstat-lab`: the lab's command line.
//!
//! `tapstat-lab synth -o sample.pcap [--seed N] [--tcp-flows N] [--udp-flows N]` writes
//! the deterministic sample capture (see `tapstat_lab::synth`) and prints a one-line
//! summary on stderr.
//!
//! `tapstat-lab scaling -r FILE [-w 1,2,4,8,16]` predicts multi-core speedup from
//! callgrind instructions per thread (`tapstat_lab::scaling`).
//!
//! `tapstat-lab flowtable [--stream trace,random,...] [--table lists,...] [--hash ...]
//! [--slots 2^14,...] [--batch 0,16] [--csv FILE]` runs the flow-table emulator
//! (`tapstat_lab::flowtable`) over every combination, `--rounds` times interleaved, and
//! prints (and writes as CSV) the median of each.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tapstat_flow::{GcConfig, IndexKind, Slots};
use tapstat_lab::flowtable::{run, HashMode, Mode, RunConfig, RunResult, Stream};
use tapstat_lab::synth::{write_pcap, SynthConfig};

#[derive(Parser)]
#[command(name = "tapstat-lab", version, about = "tapstat's lab: traffic synthesizer and test tools")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Flow-table emulator (fmsim-like): lookups per CPU-second, probe lengths, load, memory.
    Flowtable(Box<FlowtableArgs>),
    /// Predicted multi-core speedup from callgrind instructions per thread: runs
    /// tapstat under `valgrind --tool=callgrind --separate-threads=yes` once per worker
    /// count (the first should be 1) and prints, per count, the instructions per packet
    /// of the whole run and of each thread, the predicted speedup (1-worker run /
    /// busiest thread) and the work ratio (whole run / 1-worker run).
    Scaling {
        /// Capture(s) to analyze
        #[arg(short = 'r', long = "read", required = true, num_args = 1..)]
        read: Vec<PathBuf>,
        /// Worker counts
        #[arg(short = 'w', long = "workers", value_delimiter = ',', default_value = "1,2,4,8,16")]
        workers: Vec<usize>,
        /// The tapstat binary [default: `tapstat` beside this program]
        #[arg(long)]
        tapstat: Option<PathBuf>,
        /// Keep callgrind's files here [default: a temporary directory, removed]
        #[arg(long)]
        keep: Option<PathBuf>,
        /// tapstat's --hash-seed (which flows share a worker)
        #[arg(long, default_value_t = 1)]
        hash_seed: u64,
        /// More tapstat flags, after `--`
        #[arg(last = true)]
        extra: Vec<String>,
    },
    /// Write a deterministic synthetic capture (classic pcap, Ethernet, µs).
    Synth {
        /// Output pcap file.
        #[arg(short, long)]
        output: PathBuf,
        /// Seed: the same seed and counts give the same bytes.
        #[arg(long, default_value_t = SynthConfig::default().seed)]
        seed: u64,
        /// Number of TCP connection attempts.
        #[arg(long, default_value_t = SynthConfig::default().tcp_flows)]
        tcp_flows: usize,
        /// Number of DNS-over-UDP flows.
        #[arg(long, default_value_t = SynthConfig::default().udp_dns_flows)]
        udp_flows: usize,
    },
}

fn main() -> ExitCode {
    match Cli::parse().cmd {
        Cmd::Flowtable(a) => match flowtable(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tapstat-lab: {e}");
                ExitCode::FAILURE
            }
        },
        Cmd::Scaling { read, workers, tapstat, keep, hash_seed, extra } => {
            match scaling(&read, &workers, tapstat, keep, hash_seed, &extra) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("tapstat-lab: scaling: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Synth { output, seed, tcp_flows, udp_flows } => {
            let cfg = SynthConfig { seed, tcp_flows, udp_dns_flows: udp_flows, ..SynthConfig::default() };
            match write_pcap(&output, &cfg) {
                Ok(truth) => {
                    let packets: u64 = truth.iter().map(|f| f.pkts()).sum();
                    let wire: u64 = truth.iter().map(|f| f.wire_bytes()).sum();
                    let file = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
                    let first = truth.iter().filter(|f| f.pkts() > 0).map(|f| f.first_ns).min().unwrap_or(0);
                    let last = truth.iter().map(|f| f.last_ns).max().unwrap_or(0);
                    eprintln!(
                        "{}: {packets} packets, {} flows ({tcp_flows} tcp, {udp_flows} udp), {wire} wire bytes, {file} file bytes, {:.1} s",
                        output.display(),
                        truth.len(),
                        last.saturating_sub(first) as f64 / 1e9
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("tapstat-lab: {}: {e}", output.display());
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn scaling(
    read: &[PathBuf],
    workers: &[usize],
    tapstat: Option<PathBuf>,
    keep: Option<PathBuf>,
    seed: u64,
    extra: &[String],
) -> Result<(), String> {
    let bin = match tapstat {
        Some(p) => p,
        None => std::env::current_exe().map_err(|e| e.to_string())?.with_file_name("tapstat"),
    };
    if !bin.exists() {
        return Err(format!("{} not found: build it (cargo build --release) or give --tapstat", bin.display()));
    }
    if workers.iter().any(|&w| w == 0 || w > 64) {
        return Err("worker counts go from 1 to 64".into());
    }
    let dir =
        keep.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("tapstat-scaling-{}", std::process::id())));
    let mut runs = Vec::new();
    for &w in workers {
        eprintln!("tapstat-lab: scaling: {w} worker(s) under callgrind ...");
        let run = tapstat_lab::scaling::measure(&bin, read, w, seed, extra, &dir.join(format!("w{w}")))
            .map_err(|e| e.to_string())?;
        runs.push(run);
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    print!("{}", tapstat_lab::scaling::table(&runs));
    Ok(())
}

#[derive(clap::Args)]
struct FlowtableArgs {
    /// Key streams: trace (the --pcap files), dev (every capture in --dev-dir),
    /// deterministic, random, netscan, portscan, zipf:ALPHA
    #[arg(long, value_delimiter = ',', default_value = "trace")]
    stream: Vec<String>,
    /// Captures of the trace stream
    #[arg(long, value_delimiter = ',', default_value = "../shared/pcaps/bench/mix-small.pcap")]
    pcap: Vec<PathBuf>,
    /// Directory of the dev stream's captures
    #[arg(long, default_value = "../shared/pcaps/dev")]
    dev_dir: PathBuf,
    /// Copies of a capture's flows in its stream (addresses XORed per copy)
    #[arg(long, default_value_t = 8)]
    copies: usize,
    /// Keys of a synthetic stream
    #[arg(long, default_value_t = 2_000_000)]
    keys: usize,
    /// Population of the zipf stream
    #[arg(long, default_value_t = 100_000)]
    population: usize,
    /// What is timed: step (the whole flow-matching step: GC, lookup, expiry, insertion,
    /// update) or lookup (lookups alone, on a table holding every flow of the stream)
    #[arg(long, value_delimiter = ',', default_value = "step")]
    mode: Vec<String>,
    /// Structures: lists, trees, swiss, cuckoo, chunks
    #[arg(long, value_delimiter = ',', default_value = "lists,trees,swiss,cuckoo,chunks")]
    table: Vec<String>,
    /// Dispatch: dyn (the run-time enum, as tapstat), static (the structure's type), or both
    #[arg(long, default_value = "dyn")]
    call: String,
    /// Hashes: dispatch (computed once per packet upstream, reused), or a function computed
    /// per lookup: foldhash, ahash, xxh3, murmur3, lookup3, coralreef, fnv1a, crc32, toeplitz
    #[arg(long, value_delimiter = ',', default_value = "dispatch")]
    hash: Vec<String>,
    /// Index sizes: auto, N or 2^K (buckets of lists/trees, slots of swiss/cuckoo, entries of chunks)
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    slots: Vec<String>,
    /// Burst sizes of batched, prefetched lookups (0: one at a time)
    #[arg(long, value_delimiter = ',', default_value = "0")]
    batch: Vec<usize>,
    /// Most flows in the table (LRU eviction beyond)
    #[arg(long, default_value_t = 1 << 22)]
    capacity: usize,
    /// Idle timeout, seconds of stream time
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Replay capture streams this many times faster than captured (stream time divided)
    #[arg(long, default_value_t = 1.0)]
    speedup: f64,
    /// Garbage collection period ΔT, seconds of stream time
    #[arg(long, default_value_t = GcConfig::default().period_ns as f64 / 1e9)]
    gc_period: f64,
    /// Garbage collection steps M per period
    #[arg(long, default_value_t = GcConfig::default().steps)]
    gc_steps: u32,
    /// Passes over the stream per run
    #[arg(long, default_value_t = 1)]
    loops: usize,
    /// Interleaved repetitions of the whole set of runs (the median is reported)
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// fmsim semantics: no LRU order (a lookup only updates the flow's time); the
    /// default keeps tapstat's LRU list
    #[arg(long)]
    no_lru: bool,
    /// Skip the untimed replay that records probe lengths
    #[arg(long)]
    no_probes: bool,
    /// Write the results as CSV here too
    #[arg(long)]
    csv: Option<PathBuf>,
}

fn parse_slots(s: &str) -> Result<Slots, String> {
    if s == "auto" {
        return Ok(Slots::Auto);
    }
    let n = if let Some(k) = s.strip_prefix("2^") {
        1usize << k.parse::<u32>().map_err(|e| format!("--slots {s}: {e}"))?
    } else {
        s.parse::<usize>().map_err(|e| format!("--slots {s}: {e}"))?
    };
    Ok(Slots::Fixed(n))
}

fn make_stream(name: &str, a: &FlowtableArgs) -> Result<Stream, String> {
    Ok(match name {
        "trace" => Stream::trace("trace", &a.pcap, a.copies)?,
        "dev" => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&a.dev_dir)
                .map_err(|e| format!("{}: {e}", a.dev_dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng" || x == "cap"))
                .collect();
            files.sort();
            Stream::trace("dev", &files, a.copies)?
        }
        "deterministic" => Stream::deterministic(a.keys),
        "random" => Stream::random(a.keys, 1),
        "netscan" => Stream::netscan(a.keys),
        "portscan" => Stream::portscan(a.keys),
        z if z.starts_with("zipf:") => {
            let alpha: f64 = z[5..].parse().map_err(|e| format!("--stream {z}: {e}"))?;
            Stream::zipf(a.keys, a.population, alpha, 1)
        }
        other => return Err(format!("unknown stream {other}")),
    })
}

fn flowtable(a: &FlowtableArgs) -> Result<(), String> {
    let tables: Vec<IndexKind> = a
        .table
        .iter()
        .map(|t| IndexKind::from_name(t).ok_or_else(|| format!("unknown table {t}")))
        .collect::<Result<_, _>>()?;
    let hashes: Vec<HashMode> = a
        .hash
        .iter()
        .map(|h| HashMode::from_name(h).ok_or_else(|| format!("unknown hash {h}")))
        .collect::<Result<_, _>>()?;
    let modes: Vec<Mode> = a
        .mode
        .iter()
        .map(|m| Mode::from_name(m).ok_or_else(|| format!("unknown mode {m}: step or lookup")))
        .collect::<Result<_, _>>()?;
    let slots: Vec<Slots> = a.slots.iter().map(|s| parse_slots(s)).collect::<Result<_, _>>()?;
    let calls: &[bool] = match a.call.as_str() {
        "dyn" => &[true],
        "static" => &[false],
        "both" => &[true, false],
        c => return Err(format!("--call {c}: dyn, static or both")),
    };
    let header = "stream,keys,flows_in_stream,mode,lru,table,call,hash,slots,batch,mlookups_per_cpu_s,min,max,cpu_s,p_l1,e_l,flows,buckets,load,bytes_per_flow,inserts,expired,evicted,probe_hist";
    println!("{header}");
    let mut csv = String::from(header);
    csv.push('\n');
    for sname in &a.stream {
        let mut s = make_stream(sname, a)?;
        if a.speedup != 1.0 && a.speedup > 0.0 {
            s.ts.iter_mut().for_each(|t| *t = (*t as f64 / a.speedup) as u64);
        }
        let distinct = s.flows();
        eprintln!("tapstat-lab: stream {}: {} keys, {} flows", s.name, s.keys.len(), distinct);
        let mut cfgs = Vec::new();
        for &mode in &modes {
            for &index in &tables {
                for &dynamic in calls {
                    for &hash in &hashes {
                        for &sl in &slots {
                            for &batch in &a.batch {
                                cfgs.push(RunConfig {
                                    mode,
                                    index,
                                    dynamic,
                                    slots: sl,
                                    hash,
                                    capacity: a.capacity,
                                    timeout_ns: (a.timeout * 1e9) as u64,
                                    gc: GcConfig { period_ns: (a.gc_period * 1e9) as u64, steps: a.gc_steps },
                                    batch,
                                    loops: a.loops,
                                    probes: false,
                                    lru: !a.no_lru,
                                });
                            }
                        }
                    }
                }
            }
        }
        // Rounds interleave the configurations, so a slow minute of the machine
        // touches all of them alike; the first round also records probe lengths.
        let mut results: Vec<Vec<RunResult>> = vec![Vec::new(); cfgs.len()];
        for round in 0..a.rounds.max(1) {
            for (c, res) in cfgs.iter().zip(results.iter_mut()) {
                let c = RunConfig { probes: round == 0 && !a.no_probes, ..*c };
                res.push(run(&s, &c));
            }
        }
        for (c, res) in cfgs.iter().zip(results) {
            let mut rates: Vec<f64> = res.iter().map(|r| r.mlps).collect();
            rates.sort_by(f64::total_cmp);
            let med = rates[rates.len() / 2];
            let r = &res[0];
            let line = format!(
                "{},{},{},{},{},{},{},{},{},{},{:.2},{:.2},{:.2},{:.4},{:.4},{:.4},{},{},{:.3},{:.1},{},{},{},{}",
                s.name,
                r.keys,
                distinct,
                c.mode.name(),
                c.lru,
                c.index.name(),
                if c.dynamic { "dyn" } else { "static" },
                c.hash.name(),
                match c.slots {
                    Slots::Auto => "auto".to_string(),
                    Slots::Fixed(n) => n.to_string(),
                },
                c.batch,
                med,
                rates[0],
                rates[rates.len() - 1],
                r.cpu_s,
                r.p_l1,
                r.e_l,
                r.flows,
                r.buckets,
                r.load,
                r.bytes_per_flow,
                r.inserts,
                r.expired,
                r.evicted,
                r.probe_hist.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ")
            );
            println!("{line}");
            csv += &line;
            csv.push('\n');
        }
    }
    if let Some(p) = &a.csv {
        std::fs::write(p, csv).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}
