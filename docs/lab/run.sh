#!/bin/sh
# Reproduces docs/lab/*.csv. Run from the workspace root after
# `cargo build --release -p tapstat-lab`; then `python3 docs/lab/plot.py`.
set -e
L=${L:-target/release/tapstat-lab}
O=docs/lab
P=${PCAP:-../shared/pcaps/bench/mix-small.pcap}
# Every structure on every key stream, one at a time and in bursts of 16 (find_bulk), the
# whole flow-matching step and lookups alone.
$L flowtable --pcap $P --stream trace,deterministic,random,netscan,portscan,zipf:0.8,zipf:1.2 --keys 1000000 \
  --table lists,trees,swiss,cuckoo,chunks --batch 0,16 --mode step,lookup --rounds 5 --csv $O/structures.csv > /dev/null
# The default's rule (within 10% of the fastest on every stream, one key at a time), 9 rounds.
$L flowtable --pcap $P --stream trace,deterministic,random,netscan,portscan,zipf:0.8,zipf:1.2 --keys 1000000 --table lists,trees,swiss,cuckoo,chunks \
  --rounds 9 --no-probes --csv $O/default-rule.csv > /dev/null
# fmsim's clock: stream time ~ CPU time (no expiry, GC negligible).
$L flowtable --pcap $P --stream trace --table lists,trees,swiss,cuckoo,chunks --batch 0,16 --speedup 10000 --rounds 5 \
  --no-probes --csv $O/structures-speedup.csv > /dev/null
# The same, fmsim semantics (no LRU list), on the trace.
$L flowtable --pcap $P --stream trace --table lists,trees,swiss,cuckoo,chunks --batch 0,16 --no-lru --rounds 3 \
  --csv $O/structures-nolru.csv > /dev/null
# Run-time (enum) against static dispatch.
$L flowtable --pcap $P --stream trace,deterministic --keys 1000000 --table lists,trees,swiss,cuckoo,chunks --call both \
  --rounds 5 --no-probes --csv $O/dispatch.csv > /dev/null
# Fig. 2/3: size sweep, lists and trees, lookup3 and CoralReef.
$L flowtable --pcap $P --stream trace --table lists,trees --hash lookup3,coralreef \
  --slots 2^14,2^15,2^16,2^17,2^18,2^19,2^20,2^22,2^24 --rounds 1 --csv $O/fig2.csv > /dev/null
# Fig. 4: probe-length distribution and rate of every hash (lists, 2^18 buckets; swiss).
$L flowtable --pcap $P --stream trace --table lists,swiss --slots 2^18 \
  --hash dispatch,foldhash,ahash,xxh3,murmur3,lookup3,coralreef,fnv1a,crc32,toeplitz --rounds 3 --csv $O/fig4.csv > /dev/null
# Fig. 5: CoralReef at power-of-two sizes and at sizes that are not (the paper's single trace).
$L flowtable --pcap $P --copies 1 --stream trace --table lists,trees,cuckoo,chunks --hash coralreef \
  --slots 2^14,16383,2^16,65521,2^18,262139,2^20,1048573 --rounds 3 --csv $O/fig5.csv > /dev/null
# Table 1: deterministic > trace > random, CoralReef, 2^20, the paper's single trace.
$L flowtable --pcap $P --copies 1 --stream deterministic,trace,random --keys 1000000 --table lists,trees,swiss,cuckoo,chunks \
  --hash coralreef --slots 2^20 --mode step,lookup --rounds 3 --csv $O/table1.csv > /dev/null
# GC study (tapstat itself): T=target/release/tapstat R=5 GC="5:1 5:100 5:500 5:2000 5:10000" \
#   sh docs/lab/gc.sh ../shared/pcaps/bench/mix-small.pcap many.pcap > docs/lab/gc.tsv
