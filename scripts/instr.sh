#!/usr/bin/env bash
# instr.sh - load-independent cost per packet: marginal instructions/packet of each peer,
# counted by valgrind (callgrind, no cache simulation) on two prefixes of one pcap.
#   instr/pkt = (Ir(prefix of 2N packets) - Ir(prefix of N packets)) / N
# so start-up (rule loading, dissector registration, Python import) cancels out.
# Instruction counts are repeatable on a busy machine, unlike seconds; they are not
# seconds either (IPC differs between tools), so read them next to scripts/peers.sh.
#
# usage: scripts/instr.sh [-n N] [-o OUTDIR] [-t tool1,tool2] PCAP     (default N=20000)
# tapstat is counted when TAPSTAT=/path/to/tapstat is set.
# needs: valgrind, editcap (wireshark-common), the peers (see scripts/peers.sh)
set -u
N=20000
OUTDIR=""
ONLY=""
while getopts "n:o:t:h" opt; do
  case $opt in
    n) N=$OPTARG ;;
    o) OUTDIR=$OPTARG ;;
    t) ONLY=",$OPTARG," ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,14p' "$0"; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(readlink -f "$1")
OUTDIR=$(readlink -f "${OUTDIR:-$HERE/results-instr}")
W=$OUTDIR/raw
mkdir -p "$W"
FLOOR=$HERE/floor/target/release/pcap-floor
SURICATA=${SURICATA:-$(command -v suricata || true)}
SURICATA_YAML=${SURICATA_YAML:-}
if [ -n "$SURICATA" ] && [ -z "$SURICATA_YAML" ]; then
  for y in "$(dirname "$SURICATA")/../etc/suricata/suricata.yaml" /etc/suricata/suricata.yaml; do
    [ -f "$y" ] && { SURICATA_YAML=$(readlink -f "$y"); break; }
  done
fi
editcap -F pcap -r "$SRC" "$W/p1.pcap" "1-$N" >/dev/null
editcap -F pcap -r "$SRC" "$W/p2.pcap" "1-$((2 * N))" >/dev/null

TOOLS=()
add() { TOOLS+=("$1|$2|$3"); }
add floor-parse "$FLOOR"   '"$FLOOR" parse "$F" --read'
add floor-flows "$FLOOR"   '"$FLOOR" flows "$F" --read --out "$O/flows.csv"'
add tcpdump     tcpdump    'tcpdump -r "$F" -w /dev/null'
add softflowd   softflowd  'softflowd -d -r "$F" -n 127.0.0.1:9 -v 9 -m 1000000 -c none -p "$O/pid"'
add nfpcapd     nfpcapd    'mkdir -p "$O/nf" && nfpcapd -r "$F" -w "$O/nf"'
add argus       argus      'argus -F /dev/null -r "$F" -w "$O/out.argus"'
add tcptrace    tcptrace   'tcptrace -l -r -n "$F" > "$O/out.txt"'
add ndpiReader  ndpiReader 'ndpiReader -q -i "$F" -C "$O/flows.csv"'
add tshark-conv tshark     'tshark -r "$F" -q -z conv,tcp -z conv,udp > "$O/conv.txt"'
if [ -n "${TAPSTAT:-}" ]; then   # the project's own binary, one worker: TAPSTAT=target/release/tapstat
  TAPSTAT=$(readlink -f "$TAPSTAT"); export TAPSTAT
  add tapstat-1w "$TAPSTAT" '"$TAPSTAT" -r "$F" -o "$O/out" -q -w 1'
fi
[ -n "$SURICATA" ] && add suricata-1t "$SURICATA" '"$SURICATA" -c "$SURICATA_YAML" -r "$F" -l "$O" -k none -S /dev/null --runmode single'

ir() {  # total instructions of one run (all threads; children followed)
  local cmd=$1 F=$2 O=$3 log=$4
  rm -rf "$O"; mkdir -p "$O"
  F=$F O=$O FLOOR=$FLOOR TAPSTAT=${TAPSTAT:-} SURICATA=$SURICATA SURICATA_YAML=$SURICATA_YAML \
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=/dev/null sh -c "$cmd" > "$log" 2>&1
  grep -h 'Collected :' "$log" | awk '{ s += $NF } END { printf "%.0f\n", s }'
}

OUT=$OUTDIR/instr.tsv
printf 'tool\tIr_N\tIr_2N\tinstr_per_pkt\tN\n' > "$OUT"
for row in "${TOOLS[@]}"; do
  IFS='|' read -r name bin cmd <<< "$row"
  if [ -n "$ONLY" ] && [[ "$ONLY" != *",$name,"* ]]; then continue; fi
  command -v "$bin" >/dev/null 2>&1 || [ -x "$bin" ] || { echo "skip $name" >&2; continue; }
  a=$(ir "$cmd" "$W/p1.pcap" "$W/$name.o1" "$W/$name.1.log")
  b=$(ir "$cmd" "$W/p2.pcap" "$W/$name.o2" "$W/$name.2.log")
  per=$(awk -v a="$a" -v b="$b" -v n="$N" 'BEGIN { printf "%.0f", (b - a) / n }')
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$a" "$b" "$per" "$N" >> "$OUT"
  echo "$name: $per instructions/packet (Ir $a -> $b)" >&2
done
column -t "$OUT"
