//! The `tapstat` binary: flags are parsed in one step ([`args`]) and turned into the
//! engine's configuration in the next; no analysis logic lives here.

/// `eprintln!` that never panics: with stderr closed (`tapstat ... 2>&-`, or a pipe
/// whose reader left) the message is lost and the run goes on.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($t)*);
    }};
}
pub(crate) use say;

mod args;
mod bench;
mod clickhouse;
mod columnar;
mod kafka;
mod live;
mod man;
mod options;
mod outdir;
mod replay;
mod report;
mod schema;

use anyhow::{bail, Context, Result};
use args::{Cli, Command, RunArgs};
use clap::{CommandFactory, FromArgMatches};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tapstat_capture::LinkType;
use tapstat_pipeline::{Progress, Summary};

/// mimalloc rather than glibc malloc: each worker allocates its flows' boxed state
/// from its own thread arena, which glibc grows a few pages at a time (one `mprotect`
/// per few boxes); mimalloc's per-thread heaps take memory from the OS in large
/// segments. Built without transparent huge pages (feature `no_thp`): a packet that
/// faults one in waits for 2 MiB to be cleared. mimalloc moves a growing block by
/// copying it, so the tracker reserves its flow table up front
/// (`FlowTable::reserve_all`). Measured in docs/BENCHMARKS.md ("TCP end-to-end and
/// options sets", and "The allocator and the table's growth").
///
/// Counted (`tapstat_pipeline::memory`): `--memcap` compares the heap with its budget,
/// and summary.json reports the peak.
#[global_allocator]
static GLOBAL: tapstat_pipeline::memory::Counting<mimalloc::MiMalloc> =
    tapstat_pipeline::memory::Counting(mimalloc::MiMalloc);

/// Exit status of a file run stopped by SIGINT or SIGTERM before the end of its input.
const EXIT_INTERRUPTED: i32 = 130;

fn main() {
    let matches = Cli::command().try_get_matches().unwrap_or_else(|e| usage_error(e));
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Which live-only flags were typed, as opposed to left at their defaults: on a
    // file run they are refused rather than ignored.
    cli.run.given_live_flags = live::LIVE_ONLY
        .iter()
        .filter(|(id, _)| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
        .map(|(_, flag)| *flag)
        .collect();
    cli.run.format_given = matches.value_source("format") == Some(clap::parser::ValueSource::CommandLine);
    let result = match cli.command {
        Some(Command::Bench(b)) => bench::run(&b),
        Some(Command::Synth(s)) => synth(&s),
        Some(Command::Man { dir }) => {
            man::write(&dir).map(|n| say!("tapstat: wrote {n} manual pages in {}", dir.display()))
        }
        Some(Command::Report { dir, out, top }) => report::run(&dir, out.as_deref(), top).map(|p| {
            say!("tapstat: wrote {}", p.display());
        }),
        Some(Command::Schema { format, markdown, clickhouse, kafka_brokers, kafka_topic_prefix, database }) => {
            use std::io::Write as _;
            let text = match (format, markdown) {
                _ if clickhouse && !database.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                    say!("tapstat: error: --database takes letters, digits and _ only");
                    std::process::exit(2);
                }
                _ if clickhouse => clickhouse::ddl(
                    &clickhouse::logs(),
                    &clickhouse::Options {
                        database: &database,
                        kafka_brokers: kafka_brokers.as_deref(),
                        kafka_topic_prefix: &kafka_topic_prefix,
                        ttl_days: 30,
                    },
                ),
                (_, true) | (args::SchemaFormat::Markdown, _) => schema::metrics_markdown(),
                (args::SchemaFormat::Json, _) => schema::schema_json(),
                (args::SchemaFormat::Text, _) => schema::schema_text(),
            };
            // A closed stdout (`| head`) ends the listing, not the process with a panic.
            let _ = write!(std::io::stdout().lock(), "{text}");
            Ok(())
        }
        None => analyze(&cli.run).map(|s| {
            // A file run stopped before the end of its input did not do what was
            // asked: say so as shells do for SIGINT (128 + 2), whatever the signal
            // (SIGINT or SIGTERM). A live run ends this way normally: 0.
            if s.interrupted && s.live.is_none() {
                std::process::exit(EXIT_INTERRUPTED);
            }
        }),
    };
    if let Err(e) = result {
        if e.downcast_ref::<Reported>().is_none() {
            say!("tapstat: error: {e:#}");
        }
        std::process::exit(1);
    }
}

/// A flag clap refused, as one line (`tapstat: error: invalid value ... out of range
/// ...`), exit status 2; help and version go out as clap writes them.
fn usage_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    let mut lines = text.lines();
    let mut first = lines.next().unwrap_or_default().trim_start_matches("error: ").to_string();
    if first.ends_with(':') {
        // A list follows on indented lines (the arguments missing, for an option that
        // needs another): on the same line, or the line names nothing.
        let items: Vec<&str> = lines.take_while(|l| l.starts_with("  ")).map(str::trim).collect();
        first = format!("{first} {}", items.join(", "));
    }
    say!("tapstat: error: {first} (see --help)");
    std::process::exit(2);
}

/// Runs the engine as the flags say; writes summary.json; prints the summary.
pub(crate) fn analyze(a: &RunArgs) -> Result<Summary> {
    columnar::check(a)?;
    a.histo_interval_secs().map_err(anyhow::Error::msg)?;
    if a.live.is_live() && (a.dispatchers != 0 || a.chunk_frames != 1024) {
        bail!("--dispatchers applies to -r files: live capture has no dispatcher (each worker reads its own socket or queue)");
    }
    if a.flow_batches == args::OnOff::On && (a.live.is_live() || a.workers == Some(1)) {
        bail!("--flow-batches applies to -r files with several workers (their batches come from the dispatchers)");
    }
    if a.schedule == args::ScheduleArg::Hash && a.epoch_chunks != 64 {
        bail!("--epoch-chunks applies to --schedule balance|bundle");
    }
    if a.schedule != args::ScheduleArg::Hash {
        // The kernel's fanout or the NIC's RSS picks a live packet's worker; and a
        // periodic row is written by the worker that holds the flow when its clock
        // passes a boundary, which a flow moved between workers could see twice.
        if a.live.is_live() {
            bail!(
                "--schedule applies to -r files: on live capture the kernel (fanout) or the NIC (RSS) picks the worker"
            );
        }
        if a.periodic.is_some() {
            bail!("--schedule balance|bundle does not work with --periodic yet: use --schedule hash");
        }
    }
    check_output(a)?;
    if a.live.is_live() {
        return live::analyze(a);
    }
    if !a.given_live_flags.is_empty() {
        // A file run has no socket, buffer, acquisition thread or privileges to
        // drop; --metrics and the overload flags are for the live path only. Refused
        // rather than ignored.
        let verb = if a.given_live_flags.len() > 1 { "apply" } else { "applies" };
        bail!("{} {verb} only to live capture (-i or --dpdk), not to -r files", a.given_live_flags.join(", "));
    }
    let inputs = a.inputs().map_err(anyhow::Error::msg)?;
    if inputs.files.is_empty() {
        if inputs.filter_from_read {
            bail!("no such capture file: {:?}", a.read[0]);
        }
        bail!("no input: give capture files with -r FILE (or -r - for stdin); see --help");
    }
    a.apply_time_format().map_err(anyhow::Error::msg)?;
    let mut cfg = a.engine_config();
    cfg.workers = a.workers().map_err(anyhow::Error::msg)?;
    if a.workers.is_none() {
        // Without -w, no more busy threads than cores (workers and dispatchers).
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        cfg.workers = tapstat_pipeline::EngineConfig::default_workers(cores);
    }
    let hash_warning = crate::warn_unkeyed_hash(&cfg);
    let files = tapstat_capture::open_files(&inputs.files)?;
    let source: Box<dyn tapstat_capture::PacketSource> = if inputs.filter.is_some() || a.count.is_some() {
        // The expression is checked at once (an invalid one stops the run before any
        // output) for the common link types, then compiled for each link type the
        // files show.
        match tapstat_capture::FilteredSource::new(
            files,
            inputs.filter.as_deref(),
            a.count,
            &[LinkType::ETHERNET, LinkType::RAW, LinkType::LINUX_SLL2, LinkType::LINUX_SLL],
        ) {
            Ok(s) => Box::new(s),
            Err(e) if inputs.filter_from_read => {
                let first = inputs.filter.as_deref().unwrap_or_default().split(' ').next().unwrap_or_default();
                bail!("no such capture file {first:?}, and what follows the files is not a filter either: {e}")
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        Box::new(files)
    };
    // The directory is claimed once the inputs and the filter are known good, so a
    // mistyped command line leaves an earlier run's output as it was.
    let _claim = (!cfg.stdout).then(|| outdir::claim(&cfg.out_dir, a.force)).transpose()?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // Ctrl-C stops reading; every live flow is still written (`interrupted`). A
        // second Ctrl-C leaves at once.
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            say!("\ntapstat: interrupted: writing the live flows (Ctrl-C again to quit at once)");
        });
    }
    let progress = Arc::new(Progress::default());
    let bar = (!a.quiet && std::io::stderr().is_terminal()).then(|| spawn_progress(progress.clone()));
    let result = tapstat_pipeline::run(source, &cfg, stop, progress);
    if let Some((done, h)) = bar {
        done.store(true, Ordering::SeqCst);
        let _ = h.join();
    }
    let mut summary = result?;
    let inputs = inputs.files.iter().map(|p| p.display().to_string()).collect();
    let stopped = say_write_failed(&summary);
    finish_summary(&mut summary, &cfg, inputs)?;
    // The unkeyed hash's warning was printed at start-up.
    for w in summary.warnings.iter().filter(|w| Some(*w) != hash_warning.as_ref()) {
        say!("tapstat: warning: {w}");
    }
    if !a.quiet {
        say!("{}  output: {}", summary.human(), output_name(&cfg).display());
    }
    match stopped {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// An error already written to stderr: the run fails (status 1) without a second line.
#[derive(Debug)]
struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(reported above)")
    }
}

impl std::error::Error for Reported {}

/// Checks what -o asks for: `-` (stdout) is one stream of JSON lines, which TSV (a
/// header per log), interval directories and `--force` (of a directory) have no
/// meaning in.
fn check_output(a: &RunArgs) -> Result<()> {
    if !a.to_stdout() {
        return Ok(());
    }
    if a.format == args::FormatArg::Tsv && a.format_given {
        bail!("-o - streams JSON lines (every log in one stream, each line with its log's name first); TSV has a header per log: drop --format tsv, or give an output directory");
    }
    if a.live.rotate.is_some() {
        bail!("--rotate writes a directory per interval: give an output directory, not -o -");
    }
    if a.force {
        bail!("--force replaces an earlier run's output in a directory: not with -o -");
    }
    Ok(())
}

/// Where the logs went, for messages.
pub(crate) fn output_name(cfg: &tapstat_pipeline::EngineConfig) -> std::path::PathBuf {
    match cfg.stdout {
        true => "standard output (no summary.json)".into(),
        false => cfg.out_dir.clone(),
    }
}

/// Warns at start-up, on stderr, when the flow hash is not keyed (summary.json keeps
/// the warning too); returns it.
pub(crate) fn warn_unkeyed_hash(cfg: &tapstat_pipeline::EngineConfig) -> Option<String> {
    let w = (!cfg.flow_hash.is_keyed()).then(|| tapstat_pipeline::unkeyed_hash_warning(cfg.flow_hash))?;
    say!("tapstat: warning: {w}");
    Some(w)
}

/// Fills in what only the binary knows (the command line, the inputs, the options)
/// and writes summary.json (not with `-o -`: stdout holds the records only, the
/// summary goes to stderr).
pub(crate) fn finish_summary(
    summary: &mut Summary,
    cfg: &tapstat_pipeline::EngineConfig,
    inputs: Vec<String>,
) -> Result<()> {
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    summary.options = options::of_args(&argv);
    summary.command_line = options::redact_argv(&argv);
    summary.inputs = inputs;
    if cfg.stdout {
        // After the records, in the same stream; a reader that left takes none.
        // Compressed as the records are (a frame of its own: one stream to zstdcat).
        if let (Some(h), false) = (&summary.histograms, summary.output_closed) {
            use std::io::Write;
            let out = tapstat_sink::write_compressed(std::io::stdout().lock(), cfg.compress, h.to_jsonl().as_bytes());
            let _ = out.and_then(|mut o| o.flush());
        }
        return Ok(());
    }
    // The summary is written even when the histograms cannot be (it says what the
    // run did); each failure is reported.
    let histograms = match (&summary.histograms, cfg.rotate_ns()) {
        (None, _) => Ok(()),
        (Some(h), None) => outdir::write_new(&cfg.out_dir, outdir::HISTOGRAMS, &h.to_tsv()),
        (Some(h), Some(period_ns)) => outdir::write_rotated_histograms(&cfg.out_dir, period_ns, h.clone()),
    };
    let json = serde_json::to_string_pretty(summary).context("serializing the summary")?;
    let written = outdir::write_summary(&cfg.out_dir, &(json + "\n")).context("summary.json was not written");
    match (histograms, written) {
        (Err(h), Err(s)) => bail!("{h:#}; {s:#}"),
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
        (Ok(()), Ok(())) => Ok(()),
    }
}

/// A run stopped by a write error (a full disk): says so at once, the root cause and
/// the records lost first, before what it made fail next (histograms.tsv and
/// summary.json on the same disk, still attempted), and gives the error the run fails
/// with once its summary is written (already reported: no second line).
pub(crate) fn say_write_failed(summary: &Summary) -> Option<anyhow::Error> {
    let e = summary.write_error.as_ref()?;
    say!("tapstat: error: {e}; the run stopped, {} record(s) were not written", summary.records_not_written);
    Some(Reported.into())
}

fn spawn_progress(p: Arc<Progress>) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let h = std::thread::spawn(move || {
        // Files: a bar of bytes read of the total. Stdin (no total): a spinner with the
        // bytes read so far.
        let with_total = "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {msg}";
        let without = "{spinner} [{elapsed_precise}] {bytes} read, {msg}";
        let bar = indicatif::ProgressBar::new_spinner();
        let mut styled = None;
        let t0 = std::time::Instant::now();
        while !d.load(Ordering::Relaxed) {
            // The engine learns the total when it starts: follow it, not a guess
            // made before.
            let total = p.bytes_total.load(Ordering::Relaxed);
            let has_total = total > 0;
            if styled != Some(has_total) {
                if has_total {
                    bar.set_length(total);
                }
                if let Ok(style) = indicatif::ProgressStyle::with_template(if has_total { with_total } else { without })
                {
                    bar.set_style(style);
                }
                styled = Some(has_total);
            }
            let pk = p.packets.load(Ordering::Relaxed);
            bar.set_position(p.bytes_read.load(Ordering::Relaxed));
            let rate = pk as f64 / t0.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!("{pk} pkts, {:.2} Mpkt/s", rate / 1e6));
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        bar.finish_and_clear();
    });
    (done, h)
}

fn synth(s: &args::SynthArgs) -> Result<()> {
    let cfg = s.config();
    if let Some(dir) = s.output.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
    }
    if let Some(n) = s.flood {
        let pkts = tapstat_lab::synth::write_flood(&s.output, n, s.flood_pps, s.seed)
            .with_context(|| format!("writing {}", s.output.display()))?;
        eprintln!("tapstat: wrote {} ({pkts} flows, {pkts} packets: a SYN flood)", s.output.display());
        return Ok(());
    }
    if let Some(profile) = s.profile {
        let t = tapstat_lab::synth::write_profile(&s.output, profile, s.packets, s.seed)
            .with_context(|| format!("writing {}", s.output.display()))?;
        say!(
            "tapstat: wrote {} (profile {profile}: {} flows, {} packets, {:.1} MB, {:.1} s, largest flow {} packets, at most {} open at once)",
            s.output.display(),
            t.flows(),
            t.packets,
            t.pcap_bytes as f64 / 1e6,
            (t.last_ns - t.first_ns) as f64 / 1e9,
            t.largest(),
            t.peak_open
        );
        return Ok(());
    }
    let truth =
        tapstat_lab::synth::write_pcap(&s.output, &cfg).with_context(|| format!("writing {}", s.output.display()))?;
    let pkts: u64 = truth.iter().map(|t| t.c_pkts + t.s_pkts).sum();
    say!("tapstat: wrote {} ({} flows, {} packets)", s.output.display(), truth.len(), pkts);
    Ok(())
}
