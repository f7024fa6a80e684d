#!/usr/bin/env python3
"""overload_bench.py - events kept under overload, TED against plain dropping
(issue 15's goal, after DNAC's evaluation, seed 004).

1. The unloaded run: `tapstat -r FILE -w W` (the reference events).
2. The sustainable no-loss rate: `tapstat bench -r FILE --find-rate -w W --buffer B`
   (or --rate N to give it).
3. Replays at each multiple of that rate with `--overload ted` and `--overload drop`,
   and, for each, the share of the reference's events still reported correctly:
     - handshakes: log_tcp_complete rows with the same flow_id;
     - names: TCP flows of the reference with a server name (c_tls_SNI, http_hostname or
       fqdn) whose row in the replay has the same names;
     - HTTP and DNS: log_http_complete and log_dns_complete rows present verbatim;
   plus the packets dropped, counted without analysis, and packet_time p99.

usage: scripts/overload_bench.py TAPSTAT FILE [-w W] [--buffer 16MiB] [--rate PPS]
                                 [--times 2,5,10]
"""
import argparse
import json
import os
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


def lines(d, log):
    p = os.path.join(d, log)
    if not os.path.exists(p):
        return set()
    with open(p) as f:
        return set(f.read().splitlines()[1:])


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
    for log, k in [("log_http_complete", "http"), ("log_dns_complete", "dns")]:
        a, b = lines(ref, log), lines(run, log)
        out[k] = (len(a & b), len(a))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tapstat")
    ap.add_argument("file")
    ap.add_argument("-w", "--workers", default="1")
    ap.add_argument("--buffer", default="16MiB")
    ap.add_argument("--rate", type=float, default=None)
    ap.add_argument("--times", default="2,5,10")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="tapstat-overload-")
    ref = os.path.join(d, "ref")
    sh([a.tapstat, "-r", a.file, "-o", ref, "-q", "-w", a.workers, "--hash-seed", "7"])
    rate = a.rate
    if rate is None:
        out = sh([a.tapstat, "bench", "-r", a.file, "--find-rate", "--runs", "1", "-w", a.workers,
                  "--buffer", a.buffer]).stdout
        last = out.strip().splitlines()[-1]
        rate = float(last.split()[1])
    print(f"file {os.path.basename(a.file)}, {a.workers} worker(s), buffer {a.buffer}, "
          f"sustainable {rate:,.0f} pps")
    print("| load | policy | handshakes kept | names kept | HTTP rows kept | DNS rows kept | all events | "
          "buffer drops | counted, not analysed | packet_time p99 ns |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t in [float(x) for x in a.times.split(",")]:
        for policy in ["ted", "drop"]:
            run = os.path.join(d, f"{policy}-{t}")
            sh([a.tapstat, "bench", "-r", a.file, "--pps", str(int(rate * t)), "-w", a.workers, "--buffer",
                a.buffer, "-o", run, "-q", "--force", "--overload", policy, "--", "--hash-seed", "7"])
            with open(os.path.join(run, "summary.json")) as f:
                s = json.load(f)
            ev = events(ref, run)
            kept = sum(k for k, _ in ev.values())
            total = sum(n for _, n in ev.values())
            pct = lambda k, n: f"{k}/{n} ({k / n:.0%})" if n else "-"
            live = s["live"]
            print(f"| {t:g}× | {policy} | " + " | ".join(pct(*ev[k]) for k in ["handshakes", "names", "http", "dns"])
                  + f" | **{kept / max(1, total):.1%}** | {live['buffer_drops']:,} | {live.get('unanalysed_packets', 0):,} "
                  f"| {s['packet_time'].get('p99_ns', '-')} |", flush=True)


if __name__ == "__main__":
    main()
