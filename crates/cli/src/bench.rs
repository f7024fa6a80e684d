//! `tapstat bench`: throughput of the whole engine on a capture, per worker count.

use crate::args::{BenchArgs, FormatArg, RunArgs};
use anyhow::Result;

/// Runs the engine `runs` times per worker count (after a warm-up that brings the file
/// into the page cache) and prints the medians: packets/s and Gbit/s on the wall clock
/// and per CPU-second (all threads of the process: reader, dispatcher, workers, writer).
pub fn run(b: &BenchArgs) -> Result<()> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let counts = if b.workers.is_empty() {
        let mut v = vec![1];
        if cores > 1 {
            v.push(cores);
        }
        v
    } else {
        b.workers.clone()
    };
    let dir = std::env::temp_dir().join(format!("tapstat-bench-{}", std::process::id()));
    let mut args = RunArgs {
        read: b.read.clone(),
        out: dir.clone(),
        workers: Some(1),
        format: FormatArg::Tsv,
        quiet: true,
        tcp_timeout: 300.0,
        udp_timeout: 200.0,
        other_timeout: 200.0,
        singleton_timeout: 10.0,
        closed_timeout: 10.0,
        max_flows: 1 << 20,
        gc_period: 1.0,
        gc_steps: 100,
        hash_seed: Some(1),
    };
    crate::analyze(&args)?; // warm-up
    println!("workers\tpackets\twall_s\tcpu_s\tMpkt/s\tGbit/s\tMpkt/CPU-s\tGbit/CPU-s\trecords");
    for &w in &counts {
        args.workers = Some(w.max(1));
        let mut runs = Vec::new();
        for _ in 0..b.runs.max(1) {
            runs.push(crate::analyze(&args)?);
        }
        runs.sort_by(|a, b| a.elapsed_s.total_cmp(&b.elapsed_s));
        let s = &runs[runs.len() / 2];
        let bits = s.bytes as f64 * 8.0;
        println!(
            "{}\t{}\t{:.3}\t{:.3}\t{:.3}\t{:.3}\t{:.3}\t{:.3}\t{}",
            w,
            s.packets,
            s.elapsed_s,
            s.cpu_s,
            s.packets as f64 / s.elapsed_s / 1e6,
            bits / s.elapsed_s / 1e9,
            s.packets as f64 / s.cpu_s / 1e6,
            bits / s.cpu_s / 1e9,
            s.total_records()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
