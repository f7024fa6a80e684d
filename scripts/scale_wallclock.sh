#!/usr/bin/env bash
# scale_wallclock.sh - wall-clock scaling of a release build on a many-core machine:
# synthesizes three captures there (the many-flow profile, the sample's mix, a SYN
# flood), copies in mix-small if given, and runs `tapstat bench` at each worker count,
# then a --find-rate replay at the largest. docs/BENCHMARKS.md "Measured on 16 cores".
#   usage: TAPSTAT=path/to/tapstat [W=1,2,4,8,15] [N=5000000] [MIX=mix-small.pcap] \
#          scripts/scale_wallclock.sh OUTDIR
set -u
B=${TAPSTAT:?set TAPSTAT to a release build}; W=${W:-1,2,4,8,15}; N=${N:-5000000}
B=$(realpath "$B"); out=${1:?OUTDIR}; mkdir -p "$out"; out=$(realpath "$out"); [ -z "${MIX:-}" ] || MIX=$(realpath "$MIX"); tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT; cd "$tmp"
{ nproc; lscpu | grep -E 'Model name|Thread|Core|Socket|NUMA node\(s\)'; uname -r; } | tee "$out/machine.txt"
"$B" synth --profile many --packets "$N" -o many.pcap
"$B" synth --tcp-flows $((N / 25)) --udp-flows $((N / 50)) -o sample.pcap
"$B" synth --flood $((N * 3 / 5)) -o flood.pcap
files="sample many flood"
if [ -n "${MIX:-}" ]; then cp "$MIX" mix.pcap; files="mix $files"; fi
for f in $files; do
  echo "== $f"; "$B" bench -r "$f.pcap" -w "$W" --runs 3 | tee "$out/bench-$f.tsv"
done
echo "== replay --find-rate, many.pcap, ${W##*,} workers"
"$B" bench -r many.pcap --find-rate -w "${W##*,}" --runs 1 -q -o "$tmp/r" --force 2>&1 | tail -5 | tee "$out/find-rate.txt"
