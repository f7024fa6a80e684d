"""Plots docs/lab/*.csv (from run.sh) as SVG: fig2 (rate and load vs size), fig3
(trees/lists), fig4 (probe-length PDF per hash), fig5 (CoralReef, power-of-two sizes
or not). Needs matplotlib."""
import csv, os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

D = os.path.dirname(os.path.abspath(__file__))

def rows(name):
    p = os.path.join(D, name)
    return list(csv.DictReader(open(p))) if os.path.exists(p) else []

r = rows("fig2.csv")
if r:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, h in zip(axes, ["lookup3", "coralreef"]):
        ax2 = ax.twinx()
        for t, style in [("lists", "-o"), ("trees", "--s")]:
            pts = sorted((int(x["slots"]), float(x["mlookups_per_cpu_s"]), float(x["load"])) for x in r if x["hash"] == h and x["table"] == t)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=t)
            if t == "lists":
                ax2.plot([p[0] for p in pts], [p[2] for p in pts], ":", color="grey", label="load")
        ax.set_xscale("log", base=2); ax.set_title(h); ax.set_xlabel("buckets"); ax.legend(loc="lower right")
        ax2.set_ylabel("peak flows / bucket")
    axes[0].set_ylabel("M lookups per CPU-second")
    fig.tight_layout(); fig.savefig(os.path.join(D, "fig2.svg"))
    fig, ax = plt.subplots(figsize=(5, 4))
    for h in ["lookup3", "coralreef"]:
        l = {int(x["slots"]): float(x["mlookups_per_cpu_s"]) for x in r if x["hash"] == h and x["table"] == "lists"}
        t = {int(x["slots"]): float(x["mlookups_per_cpu_s"]) for x in r if x["hash"] == h and x["table"] == "trees"}
        ks = sorted(set(l) & set(t))
        ax.plot(ks, [t[k] / l[k] for k in ks], "-o", label=h)
    ax.axhline(1, color="grey", lw=0.5); ax.set_xscale("log", base=2); ax.set_xlabel("buckets"); ax.set_ylabel("rate trees / lists"); ax.legend()
    fig.tight_layout(); fig.savefig(os.path.join(D, "fig3.svg"))

r = rows("fig4.csv")
if r:
    fig, ax = plt.subplots(figsize=(7, 4))
    for x in r:
        if x["table"] != "lists" or x["hash"] == "dispatch":
            continue
        h = [int(v) for v in x["probe_hist"].split()]
        tot = sum(h)
        ax.plot(range(1, len(h)), [v / tot for v in h[1:]], "-o", ms=3,
                label=f'{x["hash"]}: P(L=1)={float(x["p_l1"]):.3f} E[L]={float(x["e_l"]):.3f} R={float(x["mlookups_per_cpu_s"]):.1f}M')
    ax.set_yscale("log"); ax.set_xlabel("L (list entries walked)"); ax.set_ylabel("PDF"); ax.legend(fontsize=7)
    fig.tight_layout(); fig.savefig(os.path.join(D, "fig4.svg"))

r = rows("fig5.csv")
if r:
    fig, ax = plt.subplots(figsize=(7, 4))
    for t, c in [("lists", "C0"), ("trees", "C1"), ("cuckoo", "C2"), ("chunks", "C3")]:
        for pow2, style in [(True, "-o"), (False, "--s")]:
            pts = sorted((int(x["slots"]), float(x["mlookups_per_cpu_s"])) for x in r if x["table"] == t and ((int(x["slots"]) & (int(x["slots"]) - 1)) == 0) == pow2)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=c, label=f'{t}, {"2^k" if pow2 else "not 2^k"}')
    ax.set_xscale("log", base=2); ax.set_xlabel("buckets (slots for cuckoo, entries for chunks)"); ax.set_ylabel("M lookups per CPU-second"); ax.set_title("CoralReef hash"); ax.legend(fontsize=8)
    fig.tight_layout(); fig.savefig(os.path.join(D, "fig5.svg"))
