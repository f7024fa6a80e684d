//! `tapstat-lab`: the lab's command line.
//!
//! `tapstat-lab synth -o sample.pcap [--seed N] [--tcp-flows N] [--udp-flows N]` writes
//! the deterministic sample capture (see `tapstat_lab::synth`) and prints a one-line
//! summary on stderr.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tapstat_lab::synth::{write_pcap, SynthConfig};

#[derive(Parser)]
#[command(name = "tapstat-lab", version, about = "tapstat's lab: traffic synthesizer and test tools")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
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
