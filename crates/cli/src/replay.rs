//! `tapstat bench -r FILE --speed X | --pps N | --find-rate`: a capture replayed
//! through the live path, and the sustainable no-loss rate found by
//! bisection (DPDKStat §5).

use crate::args::{BenchArgs, Cli, RunArgs};
use anyhow::{bail, Context, Result};
use clap::Parser;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tapstat_capture::live::{LiveSource, Pace, ReplayFile};
use tapstat_pipeline::{Progress, Summary};

/// The most probes of a rate search.
const MAX_PROBES: usize = 12;
/// The search stops when the bracket is this narrow (relative to its top).
const PRECISION: f64 = 0.02;
/// A probe's replay kept its pace when it offered at least this share of the rate.
const PACE_KEPT: f64 = 0.95;

/// Runs a replay (`--speed`, `--pps`) or a rate search (`--find-rate`).
pub fn run(b: &BenchArgs) -> Result<()> {
    if b.read.len() != 1 {
        bail!("a replay reads one capture file (-r FILE), not {}", b.read.len());
    }
    if b.workers.len() > 1 {
        bail!("a replay runs one worker count (-w N), not a list");
    }
    let tmp = b.out.is_none().then(|| std::env::temp_dir().join(format!("tapstat-replay-{}", std::process::id())));
    let mut args = run_args(b, tmp.as_deref())?;
    if args.live.is_live() {
        bail!("a replay reads -r FILE: -i and --dpdk do not apply");
    }
    let inputs = args.inputs().map_err(anyhow::Error::msg)?;
    if inputs.filter.is_some() {
        bail!("a replay applies no filter: filter the file first (tcpdump -r IN -w OUT EXPR)");
    }
    if args.count.is_some() {
        bail!("-c does not apply to a replay: it replays the whole file");
    }
    let path = &b.read[0];
    if !path.is_file() {
        bail!("no such capture file: {:?}", path);
    }
    let file = Arc::new(ReplayFile::load(path, b.replay_max).with_context(|| format!("loading {}", path.display()))?);
    if file.frames() == 0 {
        bail!("{}: no frames to replay", path.display());
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            crate::say!("\ntapstat: stopping the replay: writing the flows seen (again to quit at once)");
        });
    }
    let r = match (b.speed, b.pps) {
        (Some(x), _) => replay(&args, &file, Pace::Speed(x), &stop).map(|_| ()),
        (_, Some(p)) => replay(&args, &file, Pace::Pps(p), &stop).map(|_| ()),
        _ => {
            // Every probe replaces the previous one's output.
            args.force = true;
            args.quiet = true;
            find_rate(&args, &file, b.runs, &stop)
        }
    };
    if let Some(t) = tmp {
        let _ = std::fs::remove_dir_all(t);
    }
    r
}

/// The run's flags: those bench takes for a replay, then those after `--`, parsed as
/// `tapstat`'s own (one declaration of every default).
fn run_args(b: &BenchArgs, tmp: Option<&std::path::Path>) -> Result<RunArgs> {
    let mut argv = vec!["tapstat".to_string(), "-r".into(), b.read[0].to_string_lossy().into_owned(), "-o".into()];
    argv.push(b.out.as_deref().or(tmp).expect("an output directory or a temporary one").to_string_lossy().into_owned());
    if tmp.is_some() || b.force {
        argv.push("--force".into());
    }
    if b.quiet {
        argv.push("-q".into());
    }
    if let Some(w) = b.workers.first() {
        argv.extend(["-w".into(), w.to_string()]);
    }
    if let Some(f) = b.format {
        let name = clap::ValueEnum::to_possible_value(&f).expect("every format has a name");
        argv.extend(["--format".into(), name.get_name().into()]);
    }
    if let Some(buf) = b.buffer {
        argv.extend(["--buffer".into(), buf.to_string()]);
    }
    if let Some(o) = b.overload {
        argv.extend(["--overload".into(), if o == crate::live::OverloadArg::Ted { "ted" } else { "drop" }.into()]);
    }
    argv.extend(b.run_options.iter().cloned());
    match Cli::try_parse_from(&argv) {
        Ok(c) if c.command.is_none() => Ok(c.run),
        Ok(_) => bail!("the options after -- are a run's, not a subcommand"),
        Err(e) => {
            let text = e.render().to_string();
            bail!("{} (in the run options)", text.lines().next().unwrap_or_default().trim_start_matches("error: "))
        }
    }
}

/// One replay of `file` at `pace` through the live path; writes the output directory
/// and summary.json as a live run does.
fn replay(a: &RunArgs, file: &Arc<ReplayFile>, pace: Pace, stop: &Arc<AtomicBool>) -> Result<Summary> {
    tapstat_analyze::shunt::Shunt::new(&a.live.shunt).map_err(anyhow::Error::msg)?;
    a.histo_interval_secs().map_err(anyhow::Error::msg)?;
    a.apply_time_format().map_err(anyhow::Error::msg)?;
    let mut cfg = a.engine_config();
    cfg.workers = a.workers().map_err(anyhow::Error::msg)?;
    // With -o - there is no directory to claim (as for -i).
    let _claim = (!cfg.stdout).then(|| crate::outdir::claim(&cfg.out_dir, a.force)).transpose()?;
    let live = crate::live::live_config(a);
    // A poll hands out at most two periods' worth of frames (--period, also for the
    // other policies, which poll more often): the asked rate, without bursts.
    let window = 2 * a.live.period;
    let sources: Vec<Box<dyn LiveSource>> = file
        .sources(cfg.workers, pace)
        .into_iter()
        .map(|mut s| {
            s.bound_bursts(window);
            Box::new(s) as Box<dyn LiveSource>
        })
        .collect();
    let what = match pace {
        Pace::Speed(x) => format!("{x}x packet time"),
        Pace::Pps(p) => format!("{p:.0} pps"),
    };
    if !a.quiet {
        crate::say!(
            "tapstat: replaying {} ({} frames) at {what} with {} worker(s), {} acquisition",
            a.read[0].display(),
            file.frames(),
            cfg.workers,
            live.acquire.name()
        );
    }
    let mut summary = tapstat_pipeline::run_live(sources, &cfg, live, stop.clone(), Arc::new(Progress::default()))?;
    let stopped = crate::say_write_failed(&summary);
    crate::finish_summary(&mut summary, &cfg, vec![a.read[0].to_string_lossy().into_owned()])?;
    for w in &summary.warnings {
        if !a.quiet {
            crate::say!("tapstat: warning: {w}");
        }
    }
    if !a.quiet {
        crate::live::print_summary(&summary, &cfg.out_dir);
    }
    match stopped {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// Packets a replay lost: dropped at a full buffer or (a real source's) ring, or
/// counted without analysis by the overload controller (TED): a rate at which the
/// controller had to cut tails is not sustained without loss.
fn loss(s: &Summary) -> u64 {
    s.live.as_ref().map_or(0, |l| l.buffer_drops + l.kernel_drops + l.unanalysed_packets)
}

/// The sustainable no-loss rate (DPDKStat §5): the highest `--pps` at which every
/// one of `runs` replays of the whole file loses nothing, by bisection, starting from
/// the file's offline rate as an upper estimate.
fn find_rate(a: &RunArgs, file: &Arc<ReplayFile>, runs: usize, stop: &Arc<AtomicBool>) -> Result<()> {
    let mean_bytes = file.wire_bytes() as f64 / file.frames() as f64;
    let gbps = |pps: f64| pps * mean_bytes * 8.0 / 1e9;
    let offline = crate::analyze(a)?;
    let estimate = (offline.packets as f64 / offline.elapsed_s.max(1e-9)).max(1.0);
    println!(
        "offline: {:.0} pps ({:.3} Gbit/s) with {} worker(s); {} frames, mean {:.0} bytes",
        estimate,
        gbps(estimate),
        a.workers().map_err(anyhow::Error::msg)?,
        file.frames(),
        mean_bytes
    );
    let mut probes = 0;
    let mut probe = |pps: f64| -> Result<bool> {
        probes += 1;
        let (mut lost, mut behind) = (Vec::new(), None);
        for _ in 0..runs.max(1) {
            let s = replay(a, file, Pace::Pps(pps), stop)?;
            if stop.load(Ordering::Relaxed) {
                bail!("stopped");
            }
            lost.push(loss(&s));
            // A replay whose acquisition could not keep the pace did not offer the
            // rate: a live capture at it would overflow the kernel's ring.
            let offered = s.live.as_ref().map_or(pps, |l| l.offered_pps);
            if offered < PACE_KEPT * pps {
                behind = Some(offered);
            }
            if lost[lost.len() - 1] > 0 || behind.is_some() {
                break; // one lossy or late run fails the rate
            }
        }
        let pass = lost.iter().all(|&l| l == 0) && behind.is_none();
        println!(
            "probe {probes}: {pps:.0} pps ({:.3} Gbit/s): lost {}{} -> {}",
            gbps(pps),
            lost.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
            behind.map_or(String::new(), |o| format!(", behind its pace (offered {o:.0} pps)")),
            if pass { "pass" } else { "fail" }
        );
        Ok(pass)
    };
    // The bracket: `lo` passed (0: none yet), `hi` failed (None: none yet).
    let (mut lo, mut hi) = (0.0f64, None::<f64>);
    let mut next = estimate;
    let mut n = 0;
    while n < MAX_PROBES {
        n += 1;
        if probe(next)? {
            lo = next;
        } else {
            hi = Some(next);
        }
        next = match hi {
            // Above every rate tried so far without a failure: go up, doubling, for half the probes.
            None if n >= MAX_PROBES / 2 => break,
            None => lo * 2.0,
            Some(h) if (h - lo) / h <= PRECISION => break,
            Some(h) => (lo + h) / 2.0,
        };
    }
    if hi.is_none() {
        println!(
            "no loss at any rate tried: the buffers absorb the whole file; a smaller --buffer or a longer capture bounds the rate"
        );
    }
    println!("sustainable: {lo:.0} pps ({:.3} Gbit/s)", gbps(lo));
    Ok(())
}
