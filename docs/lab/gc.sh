#!/bin/sh
# GC study (DPDKStat §5.2, Fig. 7/8): every packet timed, 1 worker, four
# (period, fraction) settings and GC=... more; prints one TSV line per run from
# summary.json. R rounds (default 3), interleaved: every setting once per round.
T=${T:-target/release/tapstat}
R=${R:-3}
GC=${GC:-"5:1 5:100 5:10000 5:500"}
printf "trace\tround\tgc\tpackets\tMpkt/CPU-s\tmean_ns\tp50\tp75\tp95\tp99\tp99.9\tmax_ns\toutliers_10x\n"
for f in "$@"; do
  for r in $(seq $R); do
    for gc in $GC; do
      p=${gc%%:*}
      m=${gc##*:}
      d=$(mktemp -d)
      $T -q -w 1 --hash-seed 1 --time-sample 1 --gc-period $p --gc-steps $m -r $f -o $d
      python3 - "$d/summary.json" "$(basename $f)" "$r" "($p s, 1/$m)" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); t = s["packet_time"]
print("\t".join(map(str, [sys.argv[2], sys.argv[3], sys.argv[4], s["packets"], round(s["pkts_per_cpu_s"] / 1e6, 2), t["mean_ns"],
      t["p50_ns"], t["p75_ns"], t["p95_ns"], t["p99_ns"], t["p999_ns"], t["max_ns"], t["outliers_10x"]])))
PY
      rm -rf $d
    done
  done
done
