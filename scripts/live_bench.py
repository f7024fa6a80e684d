#!/usr/bin/env python3
"""Highest no-loss replay rate of `tapstat -i` (the sustainable-rate method of
DPDKStat §6): tcpreplay --pps R into a veth in a network namespace of its
own, tapstat capturing on the peer; a rate passes when tapstat received every frame
tcpreplay sent, with no kernel or buffer drop. Bisection to 1% between a passing and a
failing rate. Needs root, iproute2, tcpreplay.

usage: scripts/live_bench.py BIN PCAP --workers 1 2 --acquire poll periodic [--secs 3]
"""
import argparse, json, math, os, re, signal, subprocess, sys, tempfile, time

def sh(*a, check=True, **kw):
    return subprocess.run(a, check=check, capture_output=True, text=True, **kw)

class Netns:
    def __init__(self):
        self.name = f"tapstat-bench-{os.getpid()}"
        sh("ip", "netns", "add", self.name)
        self.ex("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        self.ex("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb")
        for d in ("va", "vb"):
            self.ex("ip", "link", "set", d, "mtu", "65535", "up")
    def cmd(self, *a):
        return ["ip", "netns", "exec", self.name, *a]
    def ex(self, *a):
        return sh(*self.cmd(*a))
    def close(self):
        sh("ip", "netns", "del", self.name, check=False)

def packets_in(pcap, bin_):
    out = tempfile.mkdtemp()
    sh(bin_, "-r", pcap, "-o", out, "-q", "-w", "1")
    return json.load(open(os.path.join(out, "summary.json")))["packets"]

BUFFER = "16MiB"

def trial(ns, bin_, pcap, npk, rate, workers, acquire, secs):
    out = tempfile.mkdtemp(prefix="tapstat-bench-")
    tap = subprocess.Popen(ns.cmd(bin_, "-i", "vb", "-o", out, "-q", "-w", str(workers), "--acquire", acquire,
                                  "--buffer", BUFFER, "--kernel-ring", "64MiB"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while not os.path.exists(os.path.join(out, "stats.jsonl")):
        if tap.poll() is not None or time.time() - t0 > 30:
            sys.exit("tapstat did not start: " + tap.stderr.read())
        time.sleep(0.02)
    loops = max(1, math.ceil((rate or 400_000) * secs / npk))
    rate_args = ["--topspeed"] if rate == 0 else ["--pps", str(rate)]
    r = sh(*ns.cmd("tcpreplay", "-i", "va", *rate_args, "--loop", str(loops), pcap), check=False)
    m = re.search(r"Actual: (\d+) packets .*? in ([\d.]+) seconds", r.stdout)
    sent, dur = (int(m.group(1)), float(m.group(2))) if m else (0, 0.0)
    failed = int((re.search(r"Failed packets:\s+(\d+)", r.stdout) or [0, 0])[1])
    time.sleep(0.5)
    tap.send_signal(signal.SIGINT)
    tap.wait(60)
    s = json.load(open(os.path.join(out, "summary.json")))
    l = s["live"]
    sh("rm", "-rf", out)
    got = l["received_packets"]
    ok = failed == 0 and l["kernel_drops"] == 0 and l["buffer_drops"] == 0 and got == sent - failed
    return dict(rate=rate, sent=sent, failed=failed, actual_pps=round(sent / dur) if dur else 0, received=got,
                kernel_drops=l["kernel_drops"], buffer_drops=l["buffer_drops"], ok=ok, secs=dur,
                acq_cpu=round(sum(l["acquisition_cpu_s"]), 3), ana_cpu=round(sum(l["analysis_cpu_s"]), 3),
                cpu=round(s["cpu_s"], 3), pacing=",".join(sorted(set(l["pacing"]))))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin"); ap.add_argument("pcap")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--acquire", nargs="+", default=["poll", "periodic"])
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--low", type=int, default=10_000)
    ap.add_argument("--buffer", default="16MiB",
                    help="per-worker buffer; small, so that a few seconds measure a sustained rate, not a burst")
    a = ap.parse_args()
    global BUFFER
    BUFFER = a.buffer
    npk = packets_in(a.pcap, a.bin)
    ns = Netns()
    try:
        for w in a.workers:
            for acq in a.acquire:
                top = trial(ns, a.bin, a.pcap, npk, 0, w, acq, a.secs)
                print(f"# w={w} {acq} topspeed: {top}", flush=True)
                if top["ok"]:
                    # tcpreplay is the limit: tapstat kept up with everything it sent.
                    print(json.dumps(dict(workers=w, acquire=acq, limit="tcpreplay", **top)), flush=True)
                    continue
                lo, hi = a.low, max(a.low + 1, top["actual_pps"])
                best = trial(ns, a.bin, a.pcap, npk, lo, w, acq, a.secs)
                if not best["ok"]:
                    print(json.dumps(dict(workers=w, acquire=acq, limit="below --low", **best)), flush=True)
                    continue
                while (hi - lo) / lo > 0.01:
                    mid = (lo + hi) // 2
                    t = trial(ns, a.bin, a.pcap, npk, mid, w, acq, a.secs)
                    print(f"#   {mid} pps: ok={t['ok']} drops={t['kernel_drops']}+{t['buffer_drops']} "
                          f"actual={t['actual_pps']}", flush=True)
                    if t["ok"]:
                        lo, best = mid, t
                    else:
                        hi = mid
                print(json.dumps(dict(workers=w, acquire=acq, limit="tapstat", **best)), flush=True)
    finally:
        ns.close()

if __name__ == "__main__":
    main()
