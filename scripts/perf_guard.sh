#!/usr/bin/env bash
# perf_guard.sh - the performance guard: instructions per packet of tapstat (1 worker,
# every default feature on) on a capture the project synthesizes, counted by callgrind
# (scripts/instr.sh: the marginal cost of packets N+1..2N, so start-up cancels out),
# against the figure committed in scripts/perf_guard.expected. Fails when the figure
# rises more than 3 % above it. Raising the committed figure is a deliberate commit that
# says why (a feature states its cost there); lowering it after a speed-up keeps the
# margin honest.
#
# usage: TAPSTAT=target/release/tapstat scripts/perf_guard.sh [--update]
# needs: valgrind, editcap (wireshark-common)
#
# Instruction counts do not drift with load, but they do depend on the code paths the
# CPU's features select (memchr's AVX2, AES-NI, SSE4.2 CRC): the expected file records
# those features, and on a CPU with others the guard prints its figure and does not judge.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
EXPECTED=$HERE/perf_guard.expected
: "${TAPSTAT:?set TAPSTAT to a release build of tapstat}"
TAPSTAT=$(readlink -f "$TAPSTAT")
N=10000
TOLERANCE_PCT=3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

features() {
  grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' \
    | grep -E '^(sse4_2|avx|avx2|aes|pclmulqdq|bmi2|sha_ni|avx512f|avx512bw)$' | sort | tr '\n' ' ' | sed 's/ $//'
}

"$TAPSTAT" synth -o "$WORK/guard.pcap" --seed 42 --tcp-flows 2000 --udp-flows 2000 >/dev/null 2>&1
TAPSTAT=$TAPSTAT bash "$HERE/instr.sh" -n "$N" -t tapstat-1w -o "$WORK/instr" "$WORK/guard.pcap" >/dev/null 2>&1
got=$(awk -F'\t' '$1 == "tapstat-1w" { print $4 }' "$WORK/instr/instr.tsv")
[ -n "$got" ] || { echo "perf guard: no figure measured (valgrind, editcap?)" >&2; exit 1; }
feat=$(features)

if [ "${1:-}" = "--update" ]; then
  {
    echo "# instructions per packet, tapstat -w 1, defaults, on: tapstat synth --seed 42"
    echo "# --tcp-flows 2000 --udp-flows 2000 (scripts/perf_guard.sh); measured $(date -u +%F)"
    echo "instr_per_packet $got"
    echo "cpu_features $feat"
  } > "$EXPECTED"
  echo "perf guard: $got instructions/packet written to $EXPECTED"
  exit 0
fi

want=$(awk '$1 == "instr_per_packet" { print $2 }' "$EXPECTED")
want_feat=$(sed -n 's/^cpu_features //p' "$EXPECTED")
limit=$(( want + want * TOLERANCE_PCT / 100 ))
echo "perf guard: $got instructions/packet (committed $want, limit $limit)"
if [ "$feat" != "$want_feat" ]; then
  echo "perf guard: this CPU's features ($feat) are not those the figure was measured with ($want_feat): not judged" >&2
  exit 0
fi
if [ "$got" -gt "$limit" ]; then
  echo "perf guard: FAILED: $got instructions/packet is more than ${TOLERANCE_PCT} % above the committed $want." >&2
  echo "  If the cost is meant, raise it with a commit that says why: TAPSTAT=... scripts/perf_guard.sh --update" >&2
  exit 1
fi
if [ "$got" -lt $(( want - want * TOLERANCE_PCT / 100 )) ]; then
  echo "perf guard: $got is well below the committed $want: lower it (scripts/perf_guard.sh --update) to keep the guard tight"
fi
