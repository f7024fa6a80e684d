//! `tapstat bench`: throughput of the whole engine on a capture, per worker count; with
//! `--speed`, `--pps` or `--find-rate`, a replay through the live path (`replay.rs`).

use crate::args::{BenchArgs, RunArgs};
use anyhow::{bail, Result};
use clap::Parser;

/// Runs the engine `runs` times per worker count (after a warm-up that brings the file
/// into the page cache) and prints the medians: packets/s and Gbit/s on the wall clock
/// and per CPU-second (all threads of the process: reader, dispatcher, workers, writer).
pub fn run(b: &BenchArgs) -> Result<()> {
    if b.is_replay() {
        return crate::replay::run(b);
    }
    if b.out.is_some() || b.format.is_some() || b.buffer.is_some() || b.force || b.quiet || !b.run_options.is_empty() {
        bail!("-o, --format, --buffer, --force, -q and run options after -- apply to replays (--speed, --pps, --find-rate)");
    }
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
    // The same defaults as a plain `tapstat -r FILE` run, from the one declaration;
    // every run replaces the previous one's output (`--force`).
    let files: Vec<String> = b.read.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let mut argv =
        vec!["tapstat".to_string(), "-q".into(), "--force".into(), "--hash-seed".into(), "1".into(), "-o".into()];
    argv.push(dir.to_string_lossy().into_owned());
    argv.push("-r".into());
    argv.extend(files);
    let mut args: RunArgs = crate::args::Cli::try_parse_from(argv)?.run;
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
