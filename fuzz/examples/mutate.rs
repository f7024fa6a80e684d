//! The fuzz targets on stable Rust: a seeded, deterministic mutation run of each
//! (`tapstat_fuzz::mutate`), no libFuzzer, no coverage feedback. CI runs a short one.
//!
//!     cargo run --manifest-path fuzz/Cargo.toml --example mutate -- --seed 1 --runs 10000
//!     cargo run --manifest-path fuzz/Cargo.toml --example mutate -- --target decode --time 3600 --seed 42
//!     cargo run --manifest-path fuzz/Cargo.toml --example mutate -- --target decode --input fuzz/artifacts/decode/crash-...
//!
//! Options:
//! - `--seed S` (default 1): the same seed makes the same inputs; vary it for new ones.
//! - `--runs N` (default 1000 without `--time`): mutated inputs per target, divided by
//!   the target's cost (`Target::cost`: `capture` 5, `engine` 50), after the target's
//!   corpus as it is.
//! - `--time SECS`: per target, stop after this long (without `--runs`: run until then).
//! - `--target T` (repeatable, or `a,b`): only these targets (default: all).
//! - `--input FILE` (repeatable; needs one `--target`): run these files once, with
//!   Rust's own panic message and backtrace: to reproduce a crash.
//!
//! Each target's seeds are `fuzz/corpus/<target>/*`. A panic, in any thread, is a crash:
//! the input is written to `fuzz/artifacts/<target>/crash-<hash>`, the seed, iteration,
//! panic and path are printed, and the run goes on; the exit status is 1 if any target
//! crashed, 2 on a usage error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use tapstat_fuzz::mutate::{fnv64, run, Mutator, RunConfig};
use tapstat_fuzz::{Target, TARGETS};

struct Args {
    seed: u64,
    runs: Option<u64>,
    time: Option<Duration>,
    targets: Vec<&'static Target>,
    inputs: Vec<PathBuf>,
}

fn usage(msg: &str) -> ExitCode {
    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    eprintln!("mutate: {msg}");
    eprintln!(
        "usage: mutate [--seed S] [--runs N] [--time SECS] [--target T]... [--input FILE]...\ntargets: {}",
        names.join(", ")
    );
    ExitCode::from(2)
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args { seed: 1, runs: None, time: None, targets: Vec::new(), inputs: Vec::new() };
    while let Some(flag) = argv.next() {
        let mut value = || argv.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--seed" => a.seed = number(value()?)?,
            "--runs" => a.runs = Some(number(value()?)?),
            "--time" => a.time = Some(Duration::from_secs(number(value()?)?)),
            "--target" => {
                for name in value()?.split(',') {
                    let t = TARGETS.iter().find(|t| t.name == name).ok_or(format!("no target {name}"))?;
                    a.targets.push(t);
                }
            }
            "--input" => a.inputs.push(PathBuf::from(value()?)),
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if a.targets.is_empty() {
        a.targets = TARGETS.iter().collect();
    }
    if !a.inputs.is_empty() && a.targets.len() != 1 {
        return Err("--input needs one --target".into());
    }
    if a.runs.is_none() && a.time.is_none() {
        a.runs = Some(1000);
    }
    Ok(a)
}

/// The files of `dir`, sorted by name (so the corpus, and the run, is the same everywhere).
fn load_corpus(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect();
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

fn main() -> ExitCode {
    let a = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => return usage(&e),
    };
    if !a.inputs.is_empty() {
        // Reproduce: no hook of ours, so a panic prints and fails as usual.
        for p in &a.inputs {
            let data = match std::fs::read(p) {
                Ok(d) => d,
                Err(e) => return usage(&format!("{}: {e}", p.display())),
            };
            println!("{}: {} ({} bytes)", a.targets[0].name, p.display(), data.len());
            (a.targets[0].run)(&data);
        }
        println!("no panic");
        return ExitCode::SUCCESS;
    }

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let time = a.time.map(|t| format!(", at most {} s per target", t.as_secs())).unwrap_or_default();
    let runs =
        a.runs.map(|n| format!("{n} mutated inputs per target (divided by its cost)")).unwrap_or("no limit".into());
    println!("mutate: seed {}, {runs}{time}", a.seed);
    let mut crashed = 0;
    for t in &a.targets {
        let corpus = load_corpus(&root.join("corpus").join(t.name));
        let mutator = Mutator::new(&corpus, t.layout, t.max_len, fnv64(t.name.as_bytes()));
        let cfg = RunConfig {
            seed: a.seed,
            runs: a.runs.map(|n| (n / t.cost).max(1)),
            time: a.time,
            artifacts: Some(root.join("artifacts").join(t.name)),
            progress: a.time.filter(|t| *t >= Duration::from_secs(120)).map(|_| Duration::from_secs(60)),
        };
        let out = run(t.name, t.run, &corpus, &mutator, &cfg);
        println!(
            "{:<8} {:>3} corpus + {:>6} mutated inputs in {:>6.1} s (slowest {:.0} ms): {}",
            t.name,
            out.corpus_inputs,
            out.mutated_inputs,
            out.elapsed.as_secs_f64(),
            out.slowest.as_secs_f64() * 1e3,
            if out.crash_count == 0 { "no crash".to_string() } else { format!("{} CRASHES", out.crash_count) }
        );
        for c in &out.crashes {
            let which = c.iteration.map_or("a corpus input".to_string(), |i| format!("seed {} iteration {i}", a.seed));
            let path = c.path.as_ref().map_or("(not written)".to_string(), |p| p.display().to_string());
            println!("  crash: {} {which}, {} bytes: {path}", t.name, c.input.len());
            for p in &c.panics {
                println!("    {}", p.replace('\n', "\n    "));
            }
            if let Some(p) = &c.path {
                println!(
                    "    reproduce: cargo run --manifest-path fuzz/Cargo.toml --example mutate -- --target {} --input {}",
                    t.name,
                    p.display()
                );
            }
        }
        if out.crash_count > 0 {
            crashed += 1;
        }
    }
    if crashed > 0 {
        println!("mutate: {crashed} target(s) crashed (seed {})", a.seed);
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
