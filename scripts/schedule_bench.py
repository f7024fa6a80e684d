#!/usr/bin/env python3
"""schedule_bench.py - the scheduling policies (--schedule hash|balance|bundle) on the
three synthesized kinds of traffic (tapstat synth --profile dominant|many|balanced).

For each profile and policy it prints:
  - the instruction model (callgrind --separate-threads=yes, deterministic): whole-run
    instructions per packet at W workers, the busiest thread's, and the predicted
    speedup = 1-worker run / busiest thread;
  - the worst worker's share of the packets (summary.json scheduling.per_worker_packets)
    and the flows moved;
  - wall-clock at 2 workers (median of --runs) and the sampled per-packet time
    (summary.json packet_time p50 / p99, ns).

usage: scripts/schedule_bench.py TAPSTAT [--packets N] [--workers W] [--runs R] [--dir D]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


def callgrind(tapstat, pcap, out, workers, extra):
    """(instructions of the whole run, of the busiest thread, summary)"""
    os.makedirs(out, exist_ok=True)
    cg = os.path.join(out, "cg")
    run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={cg}.%p",
         tapstat, "-r", pcap, "-o", os.path.join(out, "o"), "-q", "--force", "-w", str(workers),
         "--hash-seed", "1"] + extra)
    per = []
    for f in os.listdir(out):
        if f.startswith("cg."):
            with open(os.path.join(out, f)) as fh:
                for line in fh:
                    if line.startswith(("summary:", "totals:")):
                        per.append(int(line.split()[1]))
                        break
            os.remove(os.path.join(out, f))
    with open(os.path.join(out, "o", "summary.json")) as fh:
        s = json.load(fh)
    return sum(per), max(per), s


def wall(tapstat, pcap, out, workers, extra, runs):
    times, summaries = [], []
    for _ in range(runs):
        run([tapstat, "-r", pcap, "-o", out, "-q", "--force", "-w", str(workers), "--hash-seed", "1"] + extra)
        with open(os.path.join(out, "summary.json")) as fh:
            s = json.load(fh)
        times.append(s["elapsed_s"])
        summaries.append(s)
    return statistics.median(times), summaries[len(summaries) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tapstat")
    ap.add_argument("--packets", type=int, default=200_000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="tapstat-sched-")
    print(f"| profile | policy | instr/pkt, all ({a.workers} w) | busiest thread | predicted speedup ({a.workers} w) "
          f"| worst worker's share ({a.workers} w) | flows moved | wall s (2 w) | packet_time p50 / p99 ns (2 w) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for profile in ["dominant", "many", "balanced"]:
        pcap = os.path.join(d, f"{profile}.pcap")
        if not os.path.exists(pcap):
            run([a.tapstat, "synth", "--profile", profile, "--packets", str(a.packets), "-o", pcap])
        one, _, s1 = callgrind(a.tapstat, pcap, os.path.join(d, "w1"), 1, [])
        pk = s1["packets"]
        for policy in ["hash", "balance", "bundle"]:
            extra = ["--schedule", policy]
            tot, busiest, s = callgrind(a.tapstat, pcap, os.path.join(d, "wn"), a.workers, extra)
            sc = s["scheduling"]
            share = max(sc["per_worker_packets"]) / max(1, sum(sc["per_worker_packets"]))
            t, s2 = wall(a.tapstat, pcap, os.path.join(d, "wall"), 2, extra, a.runs)
            pt = s2["packet_time"]
            print(f"| {profile} | {policy} | {tot // pk:,} | {busiest // pk:,} | {one / busiest:.2f} | "
                  f"{share:.1%} | {sc['flows_moved']:,} | {t:.3f} | {pt.get('p50_ns', '-')} / {pt.get('p99_ns', '-')} |",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
