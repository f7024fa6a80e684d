#!/usr/bin/env python3
"""Run NFStream on a pcap and write one CSV line per flow (used by scripts/peers.sh).

usage: nfstream_run.py PCAP OUT.csv [N_METERS]   (N_METERS 0 = NFStream's default)
"""
import sys

from nfstream import NFStreamer


def main():
    src, out = sys.argv[1], sys.argv[2]
    n_meters = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    streamer = NFStreamer(source=src, statistical_analysis=True, n_meters=n_meters)
    n = streamer.to_csv(path=out)
    print("flows=%s" % n, file=sys.stderr)


if __name__ == "__main__":
    main()
