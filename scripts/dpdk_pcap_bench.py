#!/usr/bin/env python3
"""Packets per second of the whole engine reading a capture through DPDK's net_pcap
PMD (`tapstat --dpdk '... --vdev=net_pcap0,rx_pcap=FILE'`, 1 worker) against
`tapstat -r FILE` (1 worker), alternating, in one run. Needs a build with
`--features dpdk` and root.

`-r` ends by itself: its rate is summary.json's packets / elapsed_s. A live run never
ends by itself, so its rate is taken from stats.jsonl (one line per worker every
--stats-interval): packets / (the report at which every packet was processed minus the
start of the first interval that received any); the resolution is one interval (10 ms).
The buffer holds the whole file, so a faster acquisition than analysis drops nothing.

usage: scripts/dpdk_pcap_bench.py BIN PCAP [-n 5] [--acquire poll]
"""
import argparse, json, os, shutil, signal, statistics, subprocess, tempfile, time

EAL = "--no-huge --no-pci --no-shconf -m 512 --no-telemetry --log-level=warning"


def file_run(bin_, pcap):
    out = tempfile.mkdtemp(prefix="tapstat-bench-r-")
    subprocess.run([bin_, "-r", pcap, "-o", out, "-q", "-w", "1"], check=True)
    s = json.load(open(os.path.join(out, "summary.json")))
    shutil.rmtree(out)
    return s["packets"], s["elapsed_s"], s["cpu_s"]


def dpdk_run(bin_, pcap, npk, acquire):
    out = tempfile.mkdtemp(prefix="tapstat-bench-dpdk-")
    tap = subprocess.Popen([bin_, "--dpdk", f"{EAL} --vdev=net_pcap0,rx_pcap={pcap}", "-o", out, "-q", "-w", "1",
                            "--acquire", acquire, "--buffer", "1GiB", "--stats-interval", "10ms"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stats = os.path.join(out, "stats.jsonl")
    deadline = time.time() + 120
    lines = []
    while time.time() < deadline:
        time.sleep(0.05)
        if os.path.exists(stats):
            lines = [json.loads(l) for l in open(stats) if l.strip()]
            if sum(l["processed"] for l in lines) >= npk:
                break
        if tap.poll() is not None:
            raise SystemExit(f"tapstat --dpdk exited: {tap.stderr.read().decode()}")
    tap.send_signal(signal.SIGINT)
    tap.wait(60)
    s = json.load(open(os.path.join(out, "summary.json")))
    shutil.rmtree(out)
    first = next(l for l in lines if l["rx_packets"] > 0)
    start = first["time_s"] - first["interval_s"]
    done, acc = None, 0
    for l in lines:
        acc += l["processed"]
        if acc >= npk:
            done = l["time_s"]
            break
    live = s["live"]
    assert live["buffer_drops"] == 0 and live["kernel_drops"] == 0 and s["packets"] == npk, live
    return done - start, live["acquisition_cpu_s"][0], live["analysis_cpu_s"][0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("pcap")
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--acquire", default="poll")
    a = ap.parse_args()
    pcap = os.path.abspath(a.pcap)
    r, d = [], []
    for _ in range(a.n):
        npk, wall, cpu = file_run(a.bin, pcap)
        r.append((wall, cpu))
        d.append(dpdk_run(a.bin, pcap, npk, a.acquire))
    rw = statistics.median(w for w, _ in r)
    rc = statistics.median(c for _, c in r)
    dw = statistics.median(w for w, _, _ in d)
    dq = statistics.median(q for _, q, _ in d)
    dn = statistics.median(n for _, _, n in d)
    print(f"packets: {npk}, median of {a.n} alternating runs")
    print(f"-r FILE:        {rw:.3f} s wall, {npk / rw / 1e6:.3f} Mpkt/s; process CPU {rc:.3f} s")
    print(f"--dpdk net_pcap: {dw:.3f} s wall, {npk / dw / 1e6:.3f} Mpkt/s; acquisition CPU {dq:.3f} s, "
          f"analysis CPU {dn:.3f} s ({npk / dn / 1e6:.3f} Mpkt per analysis CPU-second)")
    print(f"ratio (net_pcap / -r, wall): {rw / dw:.2f}")
    print("all runs (-r wall s, --dpdk wall s):", [(round(x[0], 3), round(y[0], 3)) for x, y in zip(r, d)])


if __name__ == "__main__":
    main()
