#!/usr/bin/env python3
"""overload_bench.py - events kept under overload, TED against plain dropping
(the overload controller's goal, after DNAC's evaluation).

1. The capture: FILE, or one synthesized with `--synth PROFILE:PACKETS` (`tapstat synth
   --profile PROFILE --packets PACKETS`: dominant or balanced give long flows).
2. The unloaded run: `tapstat -r FILE -w W` (the reference events).
3. The sustainable no-loss rate: `tapstat bench -r FILE --find-rate --overload drop
   -w W --buffer B` with the same run options as the replays, --rate-runs times (the
   median search; one search on a shared 2-vCPU VM ranged from 0.66 to 1.96 M pps on
   mix-small), or --rate N to give it.
4. Replays at each multiple of that rate with `--overload ted` and `--overload drop`,
   `--runs` times each (the median run of a cell is reported), and for each the
   share of the reference's events still reported correctly:
     - handshakes: log_tcp_complete rows with the same flow_id;
     - names: TCP flows of the reference with a server name (c_tls_SNI, http_hostname or
       fqdn) whose row in the replay has the same names;
     - HTTP: log_http_complete rows present with every column equal but l7_events,
       which says `http_gap` where TED counted, without analysing, a body's packets
       (the transaction itself is whole); `http_strict` in --json compares verbatim;
     - DNS: log_dns_complete rows present verbatim;
   plus the rate the replay really offered (summary `live.offered_pps`, over the asked
   rate), the packets dropped at the full buffer, counted without analysis, and the
   per-packet latency: `live.queue_delay` p99 (buffer entry to end of analysis) and
   `packet_time` p99 (the tracker's processing time), both sampled.

The replays run with `--acquire poll` unless --run-opts says otherwise: periodic
acquisition runs under SCHED_DEADLINE with 10% of a core, which on a small machine
cannot copy frames much faster than the analysis sustains, so the asked overload is
never offered (the `offered` column shows it).

usage: scripts/overload_bench.py TAPSTAT FILE|--synth PROFILE:PACKETS [-w W]
           [--buffer 16MiB] [--rate PPS | --rate-runs 3] [--times 2,5,10] [--runs 3]
           [--run-opts '--acquire poll'] [--json OUT.json]
"""
import atexit
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import tempfile


def sh(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def rows(d, log):
    p = os.path.join(d, log)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        lines = f.read().splitlines()
    if not lines:
        return []
    head = lines[0].split("\t")
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]]


def lines(d, log, drop=()):
    """The rows of a log as a set of lines, without the columns `drop`."""
    p = os.path.join(d, log)
    if not os.path.exists(p):
        return set()
    with open(p) as f:
        ls = f.read().splitlines()
    if not ls:
        return set()
    keep = [i for i, c in enumerate(ls[0].split("\t")) if c not in drop]
    return {"\t".join(l.split("\t")[i] for i in keep) for l in ls[1:]} if drop else set(ls[1:])


KINDS = ["handshakes", "names", "http", "dns"]


def events(ref, run):
    """(kept, total) per kind of event."""
    rt = {r["flow_id"]: r for r in rows(ref, "log_tcp_complete")}
    ut = {r["flow_id"]: r for r in rows(run, "log_tcp_complete")}
    names = ["c_tls_SNI", "http_hostname", "fqdn"]
    named = [i for i, r in rt.items() if any(r.get(n) for n in names)]
    out = {
        "handshakes": (sum(1 for i in rt if i in ut), len(rt)),
        "names": (sum(1 for i in named if i in ut and all(ut[i].get(n) == rt[i].get(n) for n in names)), len(named)),
    }
    for log, k, drop in [("log_http_complete", "http", ("l7_events",)), ("log_dns_complete", "dns", ()),
                         ("log_http_complete", "http_strict", ())]:
        a, b = lines(ref, log, drop), lines(run, log, drop)
        out[k] = (len(a & b), len(a))
    return out


def one(a, run_opts, rate, t, policy, out):
    """One replay: its events and figures."""
    sh([a.tapstat, "bench", "-r", a.file, "--pps", str(int(rate * t)), "-w", a.workers, "--buffer", a.buffer,
        "-o", out, "-q", "--force", "--overload", policy, "--", "--hash-seed", "7", *run_opts])
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    ev = events(a.ref, out)
    live = s["live"]
    return {
        "events": ev,
        "kept": sum(ev[k][0] for k in KINDS) / max(1, sum(ev[k][1] for k in KINDS)),
        "offered": live.get("offered_pps", 0) / (rate * t),
        "offered_pps": live.get("offered_pps", 0),
        "buffer_drops": live["buffer_drops"],
        "unanalysed": live.get("unanalysed_packets", 0),
        "min_cutoff": live.get("min_cutoff"),
        "buffer_max": live.get("buffer_max_bytes", 0) / max(1, live.get("buffer_capacity_bytes", 1)),
        "queue_p99_ms": live.get("queue_delay", {}).get("p99_ns", 0) / 1e6,
        "queue_max_ms": live.get("queue_delay", {}).get("max_ns", 0) / 1e6,
        "packet_p99_ns": s.get("packet_time", {}).get("p99_ns", 0),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tapstat")
    ap.add_argument("file", nargs="?")
    ap.add_argument("--synth", metavar="PROFILE:PACKETS", help="synthesize the capture (tapstat synth --profile)")
    ap.add_argument("-w", "--workers", default="1")
    ap.add_argument("--buffer", default="16MiB")
    ap.add_argument("--rate", type=float, default=None)
    ap.add_argument("--rate-runs", type=int, default=3, help="rate searches (the median is used)")
    ap.add_argument("--times", default="2,5,10")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--run-opts", default="--acquire poll", help="run options of every replay and of the rate search")
    ap.add_argument("--json", default=None, help="write every run's figures here")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="tapstat-overload-")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    if a.synth:
        profile, packets = a.synth.split(":")
        a.file = os.path.join(d, f"{profile}-{packets}.pcap")
        sh([a.tapstat, "synth", "--profile", profile, "--packets", packets, "-o", a.file])
    if not a.file:
        ap.error("a capture FILE or --synth PROFILE:PACKETS")
    run_opts = shlex.split(a.run_opts)
    a.ref = os.path.join(d, "ref")
    sh([a.tapstat, "-r", a.file, "-o", a.ref, "-q", "-w", a.workers, "--hash-seed", "7"])
    rate, searches = a.rate, []
    if rate is None:
        for _ in range(max(1, a.rate_runs)):
            out = sh([a.tapstat, "bench", "-r", a.file, "--find-rate", "--runs", "1", "-w", a.workers, "--buffer",
                      a.buffer, "--overload", "drop", "--", *run_opts]).stdout
            searches.append(float(out.strip().splitlines()[-1].split()[1]))
        rate = statistics.median(searches)
    total = {k: n for k, (_, n) in events(a.ref, a.ref).items()}
    print(f"file {os.path.basename(a.file)}, {a.workers} worker(s), buffer {a.buffer}, run options "
          f"{' '.join(run_opts) or '-'}, sustainable {rate:,.0f} pps"
          + (f" (median of {', '.join(f'{x:,.0f}' for x in searches)})" if len(searches) > 1 else "")
          + f", {a.runs} run(s) per cell (median), events: "
          + ", ".join(f"{total[k]} {k}" for k in KINDS))
    print("| load | policy | offered | handshakes | names | HTTP rows | DNS rows | all events (runs) | buffer drops "
          "| counted, not analysed | queue delay p99 | packet_time p99 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    every = []
    for t in [float(x) for x in a.times.split(",")]:
        for policy in ["ted", "drop"]:
            runs = [one(a, run_opts, rate, t, policy, os.path.join(d, f"{policy}-{t}-{i}")) for i in range(a.runs)]
            every.append({"load": t, "policy": policy, "runs": runs})
            runs.sort(key=lambda r: r["kept"])
            m = runs[len(runs) // 2]
            pct = lambda k, n: f"{k / n:.1%}" if n else "-"
            med = lambda key: statistics.median(r[key] for r in runs)
            each = ", ".join(format(r["kept"], ".1%") for r in runs)
            print(f"| {t:g}× | {policy} | {m['offered']:.2f}× | "
                  + " | ".join(pct(*m["events"][k]) for k in KINDS)
                  + f" | **{m['kept']:.1%}** ({each}) | {m['buffer_drops']:,}"
                  f" | {m['unanalysed']:,} | {med('queue_p99_ms'):.1f} ms | {med('packet_p99_ns'):,.0f} ns |",
                  flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"file": a.file, "rate": rate, "searches": searches, "run_opts": run_opts, "cells": every}, f,
                      indent=1)


if __name__ == "__main__":
    main()
