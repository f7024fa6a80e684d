#!/bin/bash
# dispatchers_bench.sh - workers x dispatchers on a many-core machine: interleaved rounds
# (R, default 7) of each setting, wall seconds from summary.json, medians at the end.
#   usage: TAPSTAT=path/to/release/tapstat [N=5000000] [R=7] [OUT=dir] scripts/dispatchers_bench.sh
# docs/BENCHMARKS.md "Measured on 16 cores".
set -u
B=$(realpath "${TAPSTAT:?set TAPSTAT to a release build}"); T=/tmp/tsb; OUT=${OUT:-/tmp/out}; R=${R:-7}
mkdir -p $T $OUT; cd $T
$B synth --profile many --packets ${N:-5000000} -o many.pcap 2>&1 | tail -1
$B synth --tcp-flows $((${N:-5000000}/25)) --udp-flows $((${N:-5000000}/50)) -o sample.pcap 2>&1 | tail -1
CONF="15:2 15:3 15:5 15:8 12:2 12:4 14:2"
for f in many sample; do
  $B -q --force -o $T/o -r $f.pcap -w 15 >/dev/null 2>&1  # warm the page cache
  for i in $(seq $R); do
    for c in $CONF; do
      w=${c%:*}; d=${c#*:}
      $B -q --force --hash-seed 1 -o $T/o -r $f.pcap -w $w --dispatchers $d >/dev/null 2>&1
      e=$(python3 -c "import json;print(json.load(open('$T/o/summary.json'))['elapsed_s'])")
      echo "$f $w $d $i $e"
    done
  done
done | tee $OUT/disp.txt
python3 - $OUT/disp.txt <<'PY'
import sys, statistics as st, collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    f,w,dd,i,e=l.split(); d[(f,int(w),int(dd))].append(float(e))
for k in sorted(d): v=sorted(d[k]); print(k, 'median %.3f' % st.median(v), 'min %.3f max %.3f' % (v[0], v[-1]))
PY
