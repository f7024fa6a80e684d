#!/usr/bin/env bash
# threads_instr.sh - callgrind instructions of a whole tapstat run and of its busiest
# thread, per packet (valgrind --separate-threads=yes), for each worker count.
#   usage: scripts/threads_instr.sh TAPSTAT PCAP W [W ...]
#   prints: workers, packets, all-thread instructions/packet, busiest thread/packet
# Instruction counts do not drift with the machine's load, unlike seconds.
set -euo pipefail
bin=$1; pcap=$2; shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'workers\tpackets\tinstr_per_pkt\tbusiest_thread_per_pkt\n'
for w in "$@"; do
  d=$tmp/w$w; mkdir -p "$d"
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$d/cg.%p" \
    "$bin" -r "$pcap" -o "$d/out" -q -w "$w" --hash-seed 1 >/dev/null 2>"$d/vg.log"
  total=0; busiest=0
  for f in "$d"/cg.*; do
    ir=$(awk '/^(totals|summary):/ {print $2; exit}' "$f")
    [ -n "$ir" ] || continue
    total=$((total + ir)); [ "$ir" -gt "$busiest" ] && busiest=$ir
  done
  pkts=$(grep -o '"packets": [0-9]*' "$d/out/summary.json" | head -1 | awk '{print $2}')
  printf '%s\t%s\t%s\t%s\n' "$w" "$pkts" $((total / pkts)) $((busiest / pkts))
done
