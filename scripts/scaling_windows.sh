#!/usr/bin/env bash
# scaling_windows.sh - predicted speedup at W workers (tapstat-lab scaling: callgrind
# instructions of the 1-worker run over the busiest thread of the W-worker run) on
# windows of a long capture, for several hash seeds and scheduling policies.
#   usage: scripts/scaling_windows.sh LAB TAPSTAT PCAP OUTDIR [W]
#   env:   WINDOWS="1 1500001 3000001" (first packet of each window), PACKETS=200000,
#          SEEDS="1 2 3", POLICIES="hash bundle balance", EXTRA (more tapstat flags)
#   prints one TSV row per window x seed x policy: predicted speedup, work ratio
#   (W-worker run / 1-worker run), the busiest worker's packets over the mean, and
#   each thread's instructions per packet. The 1-worker run (seed 1; one worker has
#   no policy) is measured once per window. Windows are cut with editcap into OUTDIR.
set -euo pipefail
lab=$1; bin=$2; pcap=$3; out=$4; w=${5:-16}
windows=${WINDOWS:-1 1500001 3000001}; n=${PACKETS:-200000}
seeds=${SEEDS:-1 2 3}; policies=${POLICIES:-hash bundle balance}
# shellcheck disable=SC2206
extra=(${EXTRA:-})
mkdir -p "$out"
printf 'window\tseed\tpolicy\tinstr_1w\tinstr_%sw\tbusiest\tpredicted_speedup\twork_ratio\tpkt_skew\tthreads\n' "$w"
for s in $windows; do
  win=$out/win$s.pcap
  [ -s "$win" ] || editcap -F pcap -r "$pcap" "$win" "$s-$((s + n - 1))"
  one=$("$lab" scaling -r "$win" -w 1 --tapstat "$bin" -- "${extra[@]}" 2>/dev/null | awk -F'\t' 'NR == 2 {print $3}')
  for seed in $seeds; do
    for pol in $policies; do
      "$lab" scaling -r "$win" -w "$w" --tapstat "$bin" --hash-seed "$seed" -- --schedule "$pol" "${extra[@]}" 2>/dev/null |
        awk -F'\t' -v s="$s" -v seed="$seed" -v pol="$pol" -v one="$one" 'NR == 2 {
          printf "%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.3f\t%s\t%s\n", s, seed, pol, one, $3, $4, one / $4, $3 / one, $8, $9 }'
    done
  done
done
