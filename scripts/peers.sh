#!/usr/bin/env bash
# peers.sh - run existing passive traffic analyzers ("peers") on one pcap, each
# in "read the file, track flows, write per-flow output" mode, and time them.
#
# usage: scripts/peers.sh [-n RUNS] [-o OUTDIR] [-t tool1,tool2,...] [-l] PCAP
#   -n RUNS    timed runs per tool (default 3; one untimed page-cache warm-up first)
#   -o OUTDIR  where results go (default scripts/results); raw per-run files in OUTDIR/raw/
#   -t LIST    comma-separated subset of tools (default: every tool found)
#   -l         list the tools and their commands, then exit
#
# Every run is wrapped in GNU time (/usr/bin/time -v, report kept in OUTDIR/raw/) and
# waited for by scripts/rusage_run.py (wait4): wall clock (ns), user+sys CPU (us) and
# the maximum RSS of the largest process (same figure as GNU time's, finer units).  Throughput is computed
# against the input: packets and wire bytes (sum of pcap orig_len) of PCAP.
#   pkts/s, Gbit/s      = input / median wall time     (what a user waits)
#   pkts/CPU-s          = input / median (user+sys)    (cost per core, sleeps excluded)
# Outputs: OUTDIR/peers.tsv (one line per run), OUTDIR/peers.md (median table),
#          OUTDIR/versions.txt.  The per-flow output of the last run of each tool
#          stays in OUTDIR/raw/<tool>/ and its record count is shown as "records".
#
# Install the peers (Debian 12):  apt-get install -y tshark tcptrace libndpi-bin \
#   argus-server argus-client softflowd pmacct nfdump tcpdump time ; pip install nfstream
# The parse floor is built from scripts/floor (cargo build --release) when cargo exists.
# tapstat is run when TAPSTAT=/path/to/tapstat is set (tools tapstat-1w and tapstat).
# Suricata is used when a `suricata` binary is on PATH or SURICATA=/path/to/suricata
# (with SURICATA_YAML=/path/to/suricata.yaml).  Zeek, YAF, Tstat are not packaged for
# Debian 12 and are not run.
set -u

RUNS=3
OUTDIR=""
ONLY=""
LIST=0
while getopts "n:o:t:lh" opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    o) OUTDIR=$OPTARG ;;
    t) ONLY=",$OPTARG," ;;
    l) LIST=1 ;;
    *) sed -n '2,25p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
HERE=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ] && [ $LIST -eq 0 ]; then sed -n '2,25p' "$0"; exit 2; fi
F=$(readlink -f "${1:-/dev/null}")
OUTDIR=${OUTDIR:-$HERE/results}
RAW=$OUTDIR/raw
mkdir -p "$RAW"
TIME=/usr/bin/time
[ -x $TIME ] || { echo "GNU time (/usr/bin/time) missing: apt-get install time" >&2; exit 1; }

# ---------------------------------------------------------------- the parse floor
FLOOR=$HERE/floor/target/release/pcap-floor
if [ ! -x "$FLOOR" ] && command -v cargo >/dev/null; then
  (cd "$HERE/floor" && cargo build --release -q --target-dir "$HERE/floor/target") >&2 || true
fi
SURICATA=${SURICATA:-$(command -v suricata || true)}
SURICATA_YAML=${SURICATA_YAML:-}
if [ -n "$SURICATA" ] && [ -z "$SURICATA_YAML" ]; then
  for y in "$(dirname "$SURICATA")/../etc/suricata/suricata.yaml" /etc/suricata/suricata.yaml; do
    [ -f "$y" ] && { SURICATA_YAML=$(readlink -f "$y"); break; }
  done
fi

# ---------------------------------------------------------------- tool table
# name | what it computes | needs (binary) | command (run by sh -c; $F input, $O empty output dir)
TOOLS=()
add() { TOOLS+=("$1|$2|$3|$4"); }
add cat          "I/O floor: read the file from page cache"              cat         'cat "$F" > /dev/null'
add dd           "I/O floor: dd bs=1M from page cache"                   dd          'dd if="$F" of=/dev/null bs=1M status=none'
add floor-count  "parse floor: walk pcap record headers (read(2), 1 MiB buffer)" "$FLOOR" '"$FLOOR" count "$F" --read 2> "$O/log.txt"'
add floor-parse  "parse floor: + L2-L4 decode, 5-tuple, TCP flags"       "$FLOOR"    '"$FLOOR" parse "$F" --read 2> "$O/log.txt"'
add floor-flows  "parse floor: + bidir 5-tuple hash table, per-flow counters, CSV" "$FLOOR" '"$FLOOR" flows "$F" --read --out "$O/flows.csv" 2> "$O/log.txt"'
add tcpdump      "libpcap read + pcap write (pure read floor)"           tcpdump     'tcpdump -r "$F" -w /dev/null 2>/dev/null'
add tcpdump-print "libpcap read + decode + print one line per packet"    tcpdump     'tcpdump -nn -r "$F" > "$O/packets.txt" 2>/dev/null'
add argus        "argus: bidir flow records (binary), 5 s status records" argus      'argus -F /dev/null -r "$F" -w "$O/out.argus"'
add argus+ra     "argus + ra: flow records to text"                       ra         'argus -F /dev/null -r "$F" -w "$O/out.argus" && ra -nn -r "$O/out.argus" > "$O/flows.txt"'
add nfpcapd      "nfdump nfpcapd: unidir NetFlow-style records to nfcapd files" nfpcapd 'mkdir -p "$O/nf" && nfpcapd -r "$F" -w "$O/nf" > "$O/log.txt" 2>&1'
add softflowd    "softflowd: bidir flows, NetFlow v9 export to a loopback nfcapd" softflowd 'softflowd -d -r "$F" -n 127.0.0.1:${SOFTFLOWD_PORT:-24739} -v 9 -m 1000000 -c none -p "$O/pid" > "$O/log.txt" 2>&1'
add pmacctd      "pmacctd: 5-tuple aggregation, print plugin CSV (sleeps ~2 s by design)" pmacctd 'printf "%s\n" "daemonize: false" "pcap_savefile: $F" "plugins: print[f]" "aggregate[f]: src_host, dst_host, src_port, dst_port, proto" "print_output[f]: csv" "print_output_file[f]: $O/flows.csv" "print_refresh_time[f]: 3600" "print_cache_entries[f]: 262139" > "$O/pmacctd.conf" && pmacctd -f "$O/pmacctd.conf" > "$O/log.txt" 2>&1'
add tshark-conv  "tshark: full dissection + TCP/UDP conversation tables"  tshark     'tshark -r "$F" -q -z conv,tcp -z conv,udp > "$O/conv.txt" 2>/dev/null'
add tcptrace     "tcptrace -l -r -n: full per-connection TCP stats + RTT" tcptrace   'tcptrace -l -r -n "$F" > "$O/tcptrace.txt" 2>&1'
add ndpiReader   "nDPI ndpiReader: flows + DPI classification, CSV per flow" ndpiReader 'ndpiReader -q -i "$F" -C "$O/flows.csv" > "$O/stdout.txt" 2>&1'
add nfstream     "NFStream: nDPI + statistical_analysis, CSV per flow (default meters)" python3 'python3 "$HERE/nfstream_run.py" "$F" "$O/flows.csv" 0 > "$O/log.txt" 2>&1'
add nfstream-1m  "NFStream with n_meters=1"                               python3    'python3 "$HERE/nfstream_run.py" "$F" "$O/flows.csv" 1 > "$O/log.txt" 2>&1'
if [ -n "${TAPSTAT:-}" ]; then   # the project's own binary: TAPSTAT=target/release/tapstat
  TAPSTAT=$(readlink -f "$TAPSTAT"); export TAPSTAT
  add tapstat-1w "tapstat, one worker: full per-flow analysis, logs" "$TAPSTAT" '"$TAPSTAT" -r "$F" -o "$O/out" -q -w 1 > "$O/log.txt" 2>&1'
  add tapstat    "tapstat, default workers"                          "$TAPSTAT" '"$TAPSTAT" -r "$F" -o "$O/out" -q > "$O/log.txt" 2>&1'
fi
if [ -n "$SURICATA" ]; then
  add suricata-1t "Suricata, no rules: flow+stream+app-layer (TLS/HTTP/DNS/QUIC), eve.json, runmode single" "$SURICATA" '"$SURICATA" -c "$SURICATA_YAML" -r "$F" -l "$O" -k none -S /dev/null --runmode single > "$O/log.txt" 2>&1'
  add suricata    "Suricata, no rules, default runmode (autofp, all cores)" "$SURICATA" '"$SURICATA" -c "$SURICATA_YAML" -r "$F" -l "$O" -k none -S /dev/null > "$O/log.txt" 2>&1'
fi

# number of per-flow records the tool wrote (sanity check that it did the work)
records() {
  local t=$1 O=$2
  case $t in
    floor-flows|ndpiReader|nfstream|nfstream-1m|pmacctd) [ -f "$O/flows.csv" ] && echo $(( $(grep -vc '^#' "$O/flows.csv") - 1 )) ;;
    argus) command -v ra >/dev/null && echo $(( $(ra -nn -r "$O/out.argus" 2>/dev/null | wc -l) - 1 )) ;;
    argus+ra) echo $(( $(wc -l < "$O/flows.txt") - 1 )) ;;
    nfpcapd) nfdump -R "$O/nf" -q -o csv 2>/dev/null | grep -c . ;;
    softflowd) sed -n 's/.*Flows exported: [0-9]* (\([0-9]*\) records).*/\1/p' "$O/log.txt" ;;  # its own count: UDP export to loopback drops some
    tshark-conv) grep -c '<->' "$O/conv.txt" ;;
    tcptrace) grep -c '^TCP connection' "$O/tcptrace.txt" ;;
    tcpdump-print) wc -l < "$O/packets.txt" ;;
    suricata*) [ -f "$O/eve.json" ] && grep -c '"event_type":"flow"' "$O/eve.json" ;;
    *) echo "-" ;;
  esac
}

version_of() {
  case $1 in
    cat) cat --version | head -1 ;;
    dd) dd --version | head -1 ;;
    floor-*) echo "pcap-floor (this repo, scripts/floor), $(rustc --version 2>/dev/null)" ;;
    tcpdump*) tcpdump --version 2>&1 | head -2 | tr '\n' ' ' ;;
    argus) argus -h 2>&1 | grep -m1 -i version ;;
    argus+ra) echo "$(argus -h 2>&1 | grep -m1 -i version); ra $(dpkg-query -W -f='${Version}' argus-client 2>/dev/null)" ;;
    nfpcapd) nfpcapd -V 2>&1 | head -1 ;;
    softflowd) echo "softflowd $(dpkg-query -W -f='${Version}' softflowd 2>/dev/null); nfcapd $(dpkg-query -W -f='${Version}' nfdump 2>/dev/null)" ;;
    pmacctd) pmacctd -V 2>&1 | head -1 ;;
    tshark-conv) tshark --version 2>/dev/null | head -1 ;;
    tcptrace) tcptrace -v 2>&1 | grep -m1 -i version ;;
    ndpiReader) echo "ndpiReader $(ndpiReader -h 2>&1 | grep -m1 -o 'nDPI [0-9.]*') (libndpi-bin $(dpkg-query -W -f='${Version}' libndpi-bin 2>/dev/null))" ;;
    nfstream*) python3 -c 'import nfstream,sys; print("nfstream", nfstream.__version__, "python", sys.version.split()[0])' 2>/dev/null ;;
    suricata*) "$SURICATA" -V 2>/dev/null | head -1 ;;
  esac
}

if [ $LIST -eq 1 ]; then
  for row in "${TOOLS[@]}"; do IFS='|' read -r n d b c <<< "$row"; printf '%-14s %s\n    %s\n' "$n" "$d" "$c"; done
  exit 0
fi

# ---------------------------------------------------------------- input stats
[ -r "$F" ] || { echo "cannot read $F" >&2; exit 1; }
cat "$F" > /dev/null   # warm the page cache
if [ -x "$FLOOR" ]; then
  stats=$("$FLOOR" count "$F" --read 2>&1)
  PKTS=$(sed -n 's/.*packets=\([0-9]*\).*/\1/p' <<< "$stats")
  WIRE=$(sed -n 's/.*wire_bytes=\([0-9]*\).*/\1/p' <<< "$stats")
else
  PKTS=$(capinfos -c -M "$F" | awk -F: '/Number of packets/ {gsub(/ /,"",$2); print $2}')
  WIRE=$(capinfos -d -M "$F" | awk -F: '/Data size/ {gsub(/[^0-9]/,"",$2); print $2}')
fi
FSIZE=$(stat -c %s "$F")
echo "input: $F  packets=$PKTS wire_bytes=$WIRE file_bytes=$FSIZE avg_pkt=$(( WIRE / PKTS )) B" >&2

TSV=$OUTDIR/peers.tsv
printf 'tool\trun\twall_s\tuser_s\tsys_s\tcpu_s\tmaxrss_kb\texit\tload1\n' > "$TSV"
: > "$OUTDIR/versions.txt"; : > "$RAW/records.tsv"
{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
  echo "input: $F packets=$PKTS wire_bytes=$WIRE file_bytes=$FSIZE"
} >> "$OUTDIR/versions.txt"

NFCAPD_PID=""
start_collector() {  # softflowd needs a NetFlow collector on loopback
  local O=$1
  mkdir -p "$O/nfcapd"
  nfcapd -b 127.0.0.1 -p "${SOFTFLOWD_PORT:-24739}" -w "$O/nfcapd" > "$O/nfcapd.log" 2>&1 &
  NFCAPD_PID=$!
  sleep 0.5
}
stop_collector() {
  if [ -n "$NFCAPD_PID" ]; then sleep 1; kill "$NFCAPD_PID" 2>/dev/null; wait "$NFCAPD_PID" 2>/dev/null; NFCAPD_PID=""; fi
}

field() { sed -n "s/^[[:space:]]*$1: //p" "$2" | head -1; }

for row in "${TOOLS[@]}"; do
  IFS='|' read -r name desc bin cmd <<< "$row"
  if [ -n "$ONLY" ] && [[ "$ONLY" != *",$name,"* ]]; then continue; fi
  if ! command -v "$bin" >/dev/null 2>&1 && [ ! -x "$bin" ]; then echo "skip $name: $bin not found" >&2; continue; fi
  case $name in nfstream*) python3 -c 'import nfstream' 2>/dev/null || { echo "skip $name: pip install nfstream" >&2; continue; } ;; esac
  printf '%s\t%s\n' "$name" "$(version_of "$name")" >> "$OUTDIR/versions.txt"
  O=$RAW/$name
  for i in $(seq 1 "$RUNS"); do
    rm -rf "$O"; mkdir -p "$O"
    [ "$name" = softflowd ] && start_collector "$O"
    export F O HERE FLOOR SURICATA SURICATA_YAML TAPSTAT
    load1=$(cut -d' ' -f1 /proc/loadavg)   # machine load when the run starts (shared machines!)
    python3 "$HERE/rusage_run.py" "$RAW/$name.run$i.rusage" $TIME -v -o "$RAW/$name.run$i.time" sh -c "$cmd"
    [ "$name" = softflowd ] && stop_collector
    read -r wall usr sys rss ex < "$RAW/$name.run$i.rusage"
    tf=$RAW/$name.run$i.time
    ex2=$(field 'Exit status' "$tf"); [ -n "$ex2" ] && ex=$ex2
    rss=$(field 'Maximum resident set size (kbytes)' "$tf")   # GNU time: sh and its descendants
    cpu=$(awk -v a="$usr" -v b="$sys" 'BEGIN { printf "%.4f", a + b }')
    printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$i" "$wall" "$usr" "$sys" "$cpu" "$rss" "$ex" "$load1" >> "$TSV"
    echo "$name run $i: wall=${wall}s cpu=${cpu}s maxrss=${rss}kB exit=$ex" >&2
  done
  rec=$(records "$name" "$O" 2>/dev/null); echo "$name	${rec:--}" >> "$RAW/records.tsv"
done

# ---------------------------------------------------------------- summary table (medians)
python3 - "$TSV" "$OUTDIR/versions.txt" "$RAW/records.tsv" "$PKTS" "$WIRE" "$RUNS" > "$OUTDIR/peers.md" <<'EOF'
import sys, statistics, csv
tsv, vers, recf, pkts, wire, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
rows = list(csv.DictReader(open(tsv), delimiter="\t"))
ver = {}
for line in open(vers):
    if "\t" in line:
        k, v = line.rstrip("\n").split("\t", 1)
        ver[k] = v
rec = {}
try:
    for line in open(recf):
        k, v = line.rstrip("\n").split("\t", 1)
        rec[k] = v
except FileNotFoundError:
    pass
order = []
for r in rows:
    if r["tool"] not in order:
        order.append(r["tool"])
print("input: %d packets, %.1f MB wire bytes, avg %.0f B/packet; median of %s runs" % (pkts, wire / 1e6, wire / pkts, runs))
print()
print("| tool | version | wall s (min-max) | CPU s | max RSS MB | Mpkt/s (wall) | Gbit/s (wall) | Mpkt/CPU-s | Gbit/CPU-s | records | exit | load1 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for t in order:
    rs = [r for r in rows if r["tool"] == t]
    w = [float(r["wall_s"]) for r in rs]
    c = [float(r["cpu_s"]) for r in rs]
    m = [int(r["maxrss_kb"]) for r in rs]
    ex = ",".join(sorted(set(r["exit"] for r in rs)))
    wm, cm = statistics.median(w), statistics.median(c)
    f = lambda x: "%.3f" % x if x < 10 else "%.1f" % x
    cpu_rate = (pkts / cm / 1e6) if cm > 0 else float("inf")
    cpu_gb = (wire * 8 / cm / 1e9) if cm > 0 else float("inf")
    ld = ",".join(r.get("load1", "?") for r in rs)
    print("| %s | %s | %s (%s-%s) | %s | %.0f | %.3f | %.2f | %s | %s | %s | %s | %s |" % (
        t, ver.get(t, "?"), f(wm), f(min(w)), f(max(w)), f(cm), statistics.median(m) / 1024,
        pkts / wm / 1e6, wire * 8 / wm / 1e9,
        "%.3f" % cpu_rate if cm > 0 else "n/a (<0.01 s)", "%.2f" % cpu_gb if cm > 0 else "n/a",
        rec.get(t, "-"), ex, ld))
EOF
cat "$OUTDIR/peers.md"
