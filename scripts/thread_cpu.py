#!/usr/bin/env python3
"""thread_cpu.py - runs a command and samples its threads' CPU time (utime+stime from
/proc, 10 ms ticks) every 20 ms: prints each thread class's CPU seconds (system time
beside it) and a timeline of the cores each class kept busy, per 100 ms. Shows where a
many-core run waits: serial phases at the start and the end, oversubscription, a
saturated reader. docs/BENCHMARKS.md "Measured on 16 cores".
  usage: scripts/thread_cpu.py tapstat -q --force -o OUT -r FILE -w 15"""
import os, re, signal, subprocess, sys, time
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
cmd = sys.argv[1:]
tck = os.sysconf('SC_CLK_TCK')
p = subprocess.Popen(cmd)
t0 = time.time(); last = {}; tl = []
def cls(c):
    return re.sub(r'\d+$', '', c)
while True:
    snap = {}
    try:
        for tid in os.listdir(f'/proc/{p.pid}/task'):
            try:
                s = open(f'/proc/{p.pid}/task/{tid}/stat').read()
                comm = s[s.index('(') + 1:s.rindex(')')]
                f = s[s.rindex(')') + 2:].split()
                snap[tid] = (comm, (int(f[11]) + int(f[12])) / tck, int(f[12]) / tck)
            except (OSError, ValueError): pass
    except OSError: pass
    if p.poll() is not None: break
    tl.append((time.time() - t0, snap)); last.update(snap)
    time.sleep(0.02)
wall = time.time() - t0
byc = {}
for tid, (c, cpu, sy) in last.items(): byc.setdefault(cls(c), []).append((cpu, sy))
print(f"wall {wall:.3f} s (sampled; threads' last seen CPU, 10 ms ticks)")
for c, v in sorted(byc.items()):
    u = [a for a, _ in v]
    print(f"  {c:16s} n={len(v):2d} total={sum(u):7.3f} sys={sum(b for _, b in v):7.3f} max={max(u):6.3f} min={min(u):6.3f}")
# timeline: cores busy per class per ~100 ms
prev = {}; pt = 0.0; acc = {}; bucket = 0.1; out = []
for t, snap in tl:
    for tid, (c, cpu, _) in snap.items():
        d = cpu - prev.get(tid, 0.0); prev[tid] = cpu
        acc[cls(c)] = acc.get(cls(c), 0.0) + d
    if t - pt >= bucket:
        out.append((t, {k: v / (t - pt) for k, v in acc.items()})); acc = {}; pt = t
keys = sorted({k for _, a in out for k in a})
print("t_s\t" + "\t".join(keys))
for t, a in out:
    print(f"{t:.2f}\t" + "\t".join(f"{a.get(k, 0):.1f}" for k in keys))
