//! Predicted multi-core scaling from instruction counts, which do not drift with the
//! machine's load: a tapstat run under callgrind with one output file per thread
//! (`--separate-threads=yes`). For W workers, the predicted speedup is the instructions
//! of the whole 1-worker run over the instructions of the busiest thread of the
//! W-worker run (the run can go no faster than its busiest thread); the work ratio is
//! the whole W-worker run's instructions over the 1-worker run's; the packet skew is
//! the busiest worker's packets over the mean (summary.json's `per_worker_packets`),
//! which tells an uneven hash from uneven work per packet.
//!
//! ```
//! use tapstat_lab::scaling::ThreadCount;
//! let t = ThreadCount::parse("version: 1\ncmd: tapstat\nthread: 3\nevents: Ir\nsummary: 1234\n").unwrap();
//! assert_eq!((t.thread, t.instructions), (3, 1234));
//! ```

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The instructions one thread executed, from its callgrind output file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadCount {
    pub thread: u32,
    pub instructions: u64,
}

impl ThreadCount {
    /// Reads the `thread:` and the `summary:` (or `totals:`) lines of a callgrind output
    /// file; `None` where it has no count (a file of a thread that ran nothing).
    pub fn parse(text: &str) -> Option<ThreadCount> {
        let mut thread = 1;
        let mut count = None;
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("thread:") {
                thread = v.trim().parse().ok()?;
            } else if let Some(v) = line.strip_prefix("summary:").or_else(|| line.strip_prefix("totals:")) {
                count = v.split_whitespace().next()?.parse().ok();
                break;
            }
        }
        Some(ThreadCount { thread, instructions: count? })
    }
}

/// One run: its threads (busiest first) and the packets it read.
#[derive(Clone, Debug)]
pub struct ScalingRun {
    pub workers: usize,
    pub packets: u64,
    pub threads: Vec<ThreadCount>,
    /// Packets each worker accounted (summary.json), DNS copies for learning left out.
    pub per_worker: Vec<u64>,
}

impl ScalingRun {
    pub fn total(&self) -> u64 {
        self.threads.iter().map(|t| t.instructions).sum()
    }

    pub fn busiest(&self) -> u64 {
        self.threads.first().map_or(0, |t| t.instructions)
    }

    /// Speedup predicted against `one` (the 1-worker run of the same input).
    pub fn predicted_speedup(&self, one: &ScalingRun) -> f64 {
        one.total() as f64 / self.busiest().max(1) as f64
    }

    /// The most packets a worker had over the mean (1 when perfectly even).
    pub fn packet_skew(&self) -> f64 {
        let n = self.per_worker.len().max(1) as f64;
        let sum: u64 = self.per_worker.iter().sum();
        let max = self.per_worker.iter().copied().max().unwrap_or(0);
        if sum == 0 {
            1.0
        } else {
            max as f64 * n / sum as f64
        }
    }

    /// Work of this run over the 1-worker run's.
    pub fn work_ratio(&self, one: &ScalingRun) -> f64 {
        self.total() as f64 / one.total().max(1) as f64
    }
}

/// Runs `tapstat -r PCAP -w W -q --hash-seed SEED EXTRA...` under callgrind in `dir`
/// (which it fills) and reads back every thread's instructions, the packet count of
/// its summary.json and the packets of each worker.
pub fn measure(
    tapstat: &Path,
    pcap: &[PathBuf],
    workers: usize,
    seed: u64,
    extra: &[String],
    dir: &Path,
) -> io::Result<ScalingRun> {
    std::fs::create_dir_all(dir)?;
    let out = dir.join("out");
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--separate-threads=yes")
        .arg(format!("--callgrind-out-file={}/cg.%p", dir.display()))
        .arg(tapstat)
        .arg("-r")
        .args(pcap)
        .arg("-o")
        .arg(&out)
        .args(["-q", "--hash-seed", &seed.to_string(), "-w", &workers.to_string()])
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("valgrind.log"))?)
        .status()
        .map_err(|e| io::Error::new(e.kind(), format!("running valgrind (is it installed?): {e}")))?;
    if !status.success() {
        return Err(io::Error::other(format!(
            "valgrind {}: {status}; see {}",
            tapstat.display(),
            dir.join("valgrind.log").display()
        )));
    }
    let mut threads = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_name().to_string_lossy().starts_with("cg.") {
            if let Some(t) = ThreadCount::parse(&std::fs::read_to_string(e.path())?) {
                threads.push(t);
            }
        }
    }
    threads.sort_by(|a, b| b.instructions.cmp(&a.instructions).then(a.thread.cmp(&b.thread)));
    let summary = std::fs::read_to_string(out.join("summary.json"))?;
    let packets = packets_of(&summary).ok_or_else(|| io::Error::other("summary.json has no packet count"))?;
    let per_worker = per_worker_packets(&summary);
    Ok(ScalingRun { workers, packets, threads, per_worker })
}

/// summary.json's `scheduling.per_worker_packets` (empty for one worker).
fn per_worker_packets(summary: &str) -> Vec<u64> {
    let Some(at) = summary.find("\"per_worker_packets\":") else { return Vec::new() };
    let rest = &summary[at..];
    let (Some(a), Some(b)) = (rest.find('['), rest.find(']')) else { return Vec::new() };
    rest[a + 1..b].split(',').filter_map(|v| v.trim().parse().ok()).collect()
}

/// The top-level `"packets"` count of a summary.json.
fn packets_of(summary: &str) -> Option<u64> {
    let at = summary.find("\"packets\":")? + "\"packets\":".len();
    summary[at..].trim_start().split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// The table `tapstat-lab scaling` prints: one row per worker count, against the first
/// run (which should be the 1-worker run).
pub fn table(runs: &[ScalingRun]) -> String {
    let mut s = String::from("workers\tpackets\tinstr/pkt\tbusiest/pkt\tpredicted_speedup\tof_linear\twork_ratio\tpkt_skew\tthreads (instr/pkt, busiest first)\n");
    let Some(one) = runs.first() else { return s };
    for r in runs {
        let p = r.packets.max(1) as f64;
        let speedup = r.predicted_speedup(one);
        let threads: Vec<String> = r
            .threads
            .iter()
            .filter(|t| t.instructions as f64 / p >= 1.0)
            .map(|t| format!("{:.0}", t.instructions as f64 / p))
            .collect();
        s += &format!(
            "{}\t{}\t{:.0}\t{:.0}\t{:.2}\t{:.0}%\t{:.3}\t{:.2}\t{}\n",
            r.workers,
            r.packets,
            r.total() as f64 / p,
            r.busiest() as f64 / p,
            speedup,
            100.0 * speedup / r.workers.max(1) as f64,
            r.work_ratio(one),
            r.packet_skew(),
            threads.join(" ")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_thread_and_count() {
        assert_eq!(ThreadCount::parse("thread: 7\nevents: Ir\ntotals: 62228664\n").unwrap().instructions, 62_228_664);
        assert_eq!(ThreadCount::parse("thread: 2\nsummary: 5\n").unwrap().thread, 2);
        assert_eq!(ThreadCount::parse("thread: 2\nevents: Ir\n"), None);
        assert_eq!(packets_of("{\n  \"packets\": 267635,\n  \"bytes\": 9\n}"), Some(267_635));
        let s = "{\"scheduling\": {\"per_worker_packets\": [\n 5,\n 7\n ]}}";
        assert_eq!(per_worker_packets(s), vec![5, 7]);
        assert_eq!(per_worker_packets("{}"), Vec::<u64>::new());
    }

    #[test]
    fn speedup_is_one_worker_total_over_busiest_thread() {
        let t = |thread, instructions| ThreadCount { thread, instructions };
        let one = ScalingRun { workers: 1, packets: 10, threads: vec![t(2, 900), t(1, 100)], per_worker: vec![] };
        let four = ScalingRun {
            workers: 4,
            packets: 10,
            threads: vec![t(3, 300), t(4, 250), t(5, 250), t(6, 200), t(1, 100)],
            per_worker: vec![3, 2, 2, 1],
        };
        assert_eq!(four.predicted_speedup(&one), 1000.0 / 300.0);
        assert_eq!(four.work_ratio(&one), 1.1);
        let table = table(&[one, four]);
        let row: Vec<&str> = table.lines().nth(2).unwrap().split('\t').collect();
        assert_eq!(&row[..8], ["4", "10", "110", "30", "3.33", "83%", "1.100", "1.50"]);
        assert_eq!(row[8], "30 25 25 20 10");
    }
}
