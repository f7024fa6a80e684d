#!/usr/bin/env python3
"""Build a large multi-flow benchmark capture from a set of real captures.

Each input capture is loaded once and replayed N times ("copies").  Every copy
gets
  * its own start offset, drawn (deterministically, from --seed) inside a
    window of --window seconds, so copies of the same capture overlap in time
    and the output has many concurrent flows;
  * its own IP address rewrite: the low 16 bits of every unicast IPv4 address
    and bytes 12-13 of every unicast IPv6 address are XOR-ed with a per-copy
    16-bit mask (copy 0 keeps the original addresses).  The /16 (IPv4) and
    /96 (IPv6) prefixes are kept, so private/public and link-local/global
    classes do not change.  Multicast and broadcast addresses are left alone.
    Ports are NOT changed, so port-based application hints stay valid;
    distinct addresses are enough to make every copy a distinct set of flows.

IPv4 header checksums and TCP/UDP/ICMPv6 checksums are updated incrementally
(RFC 1624), so a checksum that was valid stays valid and one that was wrong
(e.g. captured with checksum offload) stays wrong by the same amount.  Only
the outermost IP header is rewritten: tunnelled inner headers are left as
they are, so prefer inputs without tunnels.

Inter-packet gaps longer than --max-gap seconds inside one input are shortened
to --max-gap (some test captures contain jumps of days or years).

Inputs: classic pcap (micro/nanosecond, either byte order), pcapng
(SHB/IDB/EPB/SPB/OPB), optionally gzip-compressed.  Link types Ethernet (1)
are copied as they are; raw IP (12, 14, 101, 228, 229), BSD loopback (0, 108),
Linux cooked SLL (113) and SLL2 (276) are converted to Ethernet by putting a
synthetic 14-byte Ethernet header in front of the IP packet.  Other link types
are skipped with a warning.

Output: one classic little-endian pcap (microsecond timestamps, link type
Ethernet, snaplen 262144), copies merged by timestamp.  Packets keep their
original order inside each copy, so an input whose own timestamps go
backwards makes the output go backwards at the same places.

Only the Python standard library is used.

An input (on the command line or in a --list file) given by a relative path that
does not exist from the current directory is looked up in the dev corpus:
$TAPSTAT_CORPUS, by default ../shared/pcaps/dev next to the repository (as in
.ci/run). scripts/bench_inputs_dev.txt names its inputs that way.

Example:
  python3 make_bench_pcap.py -o mix.pcap --target-bytes 1500000000 \\
      --window 120 --seed 1 dir1/*.pcap dir2/*.pcapng
  scripts/make_bench_pcap.py --list scripts/bench_inputs_dev.txt \\
      --target-bytes 100000000 -o /tmp/mix-dev.pcap
"""

import argparse
import gzip
import heapq
import os
import random
import struct
import sys

ETH_IPV4 = b'\x00\x00\x5e\x00\x53\x01\x00\x00\x5e\x00\x53\x02\x08\x00'
ETH_IPV6 = b'\x00\x00\x5e\x00\x53\x01\x00\x00\x5e\x00\x53\x02\x86\xdd'

RAW_LINKTYPES = (12, 14, 101, 228, 229)

# The dev corpus: $TAPSTAT_CORPUS, else ../shared/pcaps/dev next to the repository.
CORPUS = os.environ.get('TAPSTAT_CORPUS') or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), '..', 'shared', 'pcaps', 'dev')


def resolve_input(path):
    """`path` as given when it exists or is absolute, else its place in CORPUS."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    in_corpus = os.path.join(CORPUS, path)
    return in_corpus if os.path.exists(in_corpus) else path


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------

def _open(path):
    with open(path, 'rb') as f:
        magic = f.read(2)
    if magic == b'\x1f\x8b':
        return gzip.open(path, 'rb')
    return open(path, 'rb')


def read_capture(path):
    """Yield (ts_ns, linktype, frame_bytes, orig_len) for every packet."""
    with _open(path) as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = data[:4]
    if magic == b'\x0a\x0d\x0d\x0a':
        yield from _read_pcapng(data)
        return
    m_le = struct.unpack('<I', magic)[0]
    if m_le in (0xa1b2c3d4, 0xa1b23c4d):
        endian = '<'
        nsec = m_le == 0xa1b23c4d
    else:
        m_be = struct.unpack('>I', magic)[0]
        if m_be not in (0xa1b2c3d4, 0xa1b23c4d):
            raise ValueError('not a pcap/pcapng file')
        endian = '>'
        nsec = m_be == 0xa1b23c4d
    linktype = struct.unpack(endian + 'I', data[20:24])[0] & 0x0fffffff
    hdr = struct.Struct(endian + 'IIII')
    off = 24
    n = len(data)
    mult = 1 if nsec else 1000
    while off + 16 <= n:
        sec, frac, incl, orig = hdr.unpack_from(data, off)
        off += 16
        if incl > 0x4000000 or off + incl > n:
            break  # truncated or corrupt record: stop reading this file
        yield sec * 1000000000 + frac * mult, linktype, data[off:off + incl], max(orig, incl)
        off += incl


def _read_pcapng(data):
    n = len(data)
    off = 0
    endian = '<'
    ifaces = []  # (linktype, ticks_per_second)
    last_ts = 0
    while off + 12 <= n:
        btype = struct.unpack_from(endian + 'I', data, off)[0]
        if btype == 0x0a0d0d0a:
            bom = data[off + 8:off + 12]
            endian = '<' if bom == b'\x4d\x3c\x2b\x1a' else '>'
            ifaces = []
        blen = struct.unpack_from(endian + 'I', data, off + 4)[0]
        if blen < 12 or off + blen > n:
            break
        body = data[off + 8:off + blen - 4]
        if btype == 0x00000001 and len(body) >= 8:  # IDB
            linktype = struct.unpack_from(endian + 'H', body, 0)[0]
            tps = 1000000
            o = 8
            while o + 4 <= len(body):
                code, olen = struct.unpack_from(endian + 'HH', body, o)
                o += 4
                if code == 0:
                    break
                if code == 9 and olen >= 1:  # if_tsresol
                    v = body[o]
                    tps = 2 ** (v & 0x7f) if v & 0x80 else 10 ** v
                o += (olen + 3) & ~3
            ifaces.append((linktype, tps))
        elif btype in (0x00000006, 0x00000002) and len(body) >= 20:  # EPB / OPB
            if btype == 6:
                ifid, tsh, tsl, caplen, olen = struct.unpack_from(endian + 'IIIII', body, 0)
            else:
                ifid, _drops, tsh, tsl, caplen, olen = struct.unpack_from(endian + 'HHIIII', body, 0)
            if ifid < len(ifaces) and 20 + caplen <= len(body):
                linktype, tps = ifaces[ifid]
                ticks = (tsh << 32) | tsl
                ts = ticks * 1000000000 // tps
                last_ts = ts
                yield ts, linktype, body[20:20 + caplen], max(olen, caplen)
        elif btype == 0x00000003 and len(body) >= 4 and ifaces:  # SPB
            linktype, _tps = ifaces[0]
            olen = struct.unpack_from(endian + 'I', body, 0)[0]
            frame = body[4:4 + olen]
            yield last_ts, linktype, frame, max(olen, len(frame))
        off += blen


def to_ethernet(linktype, frame):
    """Return an Ethernet frame for supported link types, else None."""
    if linktype == 1:
        return frame
    if linktype in RAW_LINKTYPES:
        ipb = frame
    elif linktype in (0, 108):
        if len(frame) < 4:
            return None
        ipb = frame[4:]
    elif linktype == 113:
        if len(frame) < 16:
            return None
        et = frame[14:16]
        if et not in (b'\x08\x00', b'\x86\xdd'):
            return None
        ipb = frame[16:]
    elif linktype == 276:
        if len(frame) < 20:
            return None
        et = frame[0:2]
        if et not in (b'\x08\x00', b'\x86\xdd'):
            return None
        ipb = frame[20:]
    else:
        return None
    if not ipb:
        return None
    v = ipb[0] >> 4
    if v == 4:
        return ETH_IPV4 + ipb
    if v == 6:
        return ETH_IPV6 + ipb
    return None


# --------------------------------------------------------------------------
# packet analysis (done once per input packet)
# --------------------------------------------------------------------------

def locate_ip(frame):
    """Return (ip_offset, version) of the outermost IP header, or (None, None)."""
    if len(frame) < 14:
        return None, None
    et = (frame[12] << 8) | frame[13]
    off = 14
    while True:
        if et in (0x8100, 0x88a8, 0x9100):
            if len(frame) < off + 4:
                return None, None
            et = (frame[off + 2] << 8) | frame[off + 3]
            off += 4
            continue
        if et in (0x8847, 0x8848):
            while len(frame) >= off + 4:
                bos = frame[off + 2] & 1
                off += 4
                if bos:
                    break
            if len(frame) <= off:
                return None, None
            v = frame[off] >> 4
            return (off, v) if v in (4, 6) else (None, None)
        if et == 0x8864:
            if len(frame) < off + 8:
                return None, None
            proto = (frame[off + 6] << 8) | frame[off + 7]
            off += 8
            if proto == 0x0021:
                et = 0x0800
            elif proto == 0x0057:
                et = 0x86dd
            else:
                return None, None
        if et == 0x0800:
            return off, 4
        if et == 0x86dd:
            return off, 6
        return None, None


IPV6_EXT = (0, 43, 60, 51)  # hop-by-hop, routing, dest options, AH


def analyse(frame):
    """Precompute the fields the rewrite touches.

    Returns None (no rewrite) or a tuple
      (version, addr_offsets, ip_csum_off, l4_csum_off, l4_is_udp)
    addr_offsets: offsets of the 16-bit words to XOR (one per rewritable address)
    """
    ipo, v = locate_ip(frame)
    if ipo is None:
        return None
    n = len(frame)
    if v == 4:
        if n < ipo + 20 or frame[ipo] >> 4 != 4:
            return None
        ihl = (frame[ipo] & 15) * 4
        proto = frame[ipo + 9]
        words = []
        for a in (ipo + 12, ipo + 16):
            first = frame[a]
            if first >= 224 or first == 0 or first == 127:
                continue  # multicast/broadcast/reserved/loopback: keep
            words.append(a + 2)
        if not words:
            return None
        fragoff = ((frame[ipo + 6] & 0x1f) << 8) | frame[ipo + 7]
        l4 = ipo + ihl
        l4c = -1
        is_udp = False
        if fragoff == 0:
            if proto == 6 and n >= l4 + 18:
                l4c = l4 + 16
            elif proto == 17 and n >= l4 + 8:
                l4c = l4 + 6
                is_udp = True
        return (4, tuple(words), ipo + 10, l4c, is_udp)
    # IPv6
    if n < ipo + 40 or frame[ipo] >> 4 != 6:
        return None
    words = []
    for a in (ipo + 8, ipo + 24):
        if frame[a] == 0xff:
            continue  # multicast
        if frame[a:a + 16] in (b'\x00' * 16, b'\x00' * 15 + b'\x01'):
            continue  # unspecified / loopback
        words.append(a + 12)
    if not words:
        return None
    nh = frame[ipo + 6]
    o = ipo + 40
    l4c = -1
    is_udp = False
    guard = 0
    while nh in IPV6_EXT and guard < 8 and n >= o + 8:
        guard += 1
        if nh == 51:
            ln = (frame[o + 1] + 2) * 4
        else:
            ln = (frame[o + 1] + 1) * 8
        nh = frame[o]
        o += ln
    if nh == 6 and n >= o + 18:
        l4c = o + 16
    elif nh == 17 and n >= o + 8:
        l4c = o + 6
        is_udp = True
    elif nh == 58 and n >= o + 4:
        l4c = o + 2
    return (6, tuple(words), -1, l4c, is_udp)


def csum_update(csum, old_words, new_words):
    """RFC 1624 incremental update: HC' = ~(~HC + sum(~m) + sum(m'))."""
    s = (~csum) & 0xffff
    for m in old_words:
        s += (~m) & 0xffff
    for m in new_words:
        s += m
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def rewrite(frame, info, mask):
    if info is None or mask == 0:
        return frame
    _v, words, ipc, l4c, is_udp = info
    b = bytearray(frame)
    old = []
    new = []
    for w in words:
        o = (b[w] << 8) | b[w + 1]
        nw = o ^ mask
        b[w] = nw >> 8
        b[w + 1] = nw & 0xff
        old.append(o)
        new.append(nw)
    if ipc >= 0:
        c = (b[ipc] << 8) | b[ipc + 1]
        c = csum_update(c, old, new)
        b[ipc] = c >> 8
        b[ipc + 1] = c & 0xff
    if l4c >= 0:
        c = (b[l4c] << 8) | b[l4c + 1]
        if not (is_udp and c == 0):
            c = csum_update(c, old, new)
            if is_udp and c == 0:
                c = 0xffff
            b[l4c] = c >> 8
            b[l4c + 1] = c & 0xff
    return bytes(b)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def load_source(path, max_gap_ns):
    pkts = []  # (rel_ts_ns, frame, orig_len, info)
    prev = None
    rel = 0
    skipped = 0
    for ts, lt, frame, orig in read_capture(path):
        eth = to_ethernet(lt, frame)
        if eth is None or len(eth) > 262144:
            skipped += 1
            continue
        orig += len(eth) - len(frame)
        if prev is not None:
            gap = ts - prev
            if gap > max_gap_ns:
                gap = max_gap_ns
            rel += gap  # negative gaps (reordered capture) are kept as they are
        prev = ts
        pkts.append((rel, eth, orig, analyse(eth)))
    return pkts, skipped


def copy_masks(ncopies, seed):
    rnd = random.Random(seed * 7919 + 17)
    masks = [0]
    used = {0}
    while len(masks) < ncopies:
        m = rnd.randrange(1, 0x10000)
        if m not in used:
            used.add(m)
            masks.append(m)
    return masks


def stream(pkts, start_ns, mask, sid):
    for seq, (rel, frame, orig, info) in enumerate(pkts):
        yield (start_ns + rel, sid, seq, frame, orig, info, mask)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('-o', '--output', required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument('--copies', type=int, help='copies of every input')
    g.add_argument('--target-bytes', type=int,
                   help='choose the number of copies so the output is about this size')
    ap.add_argument('--window', type=float, default=120.0,
                    help='copies start at random offsets in [0, window) seconds (default 120)')
    ap.add_argument('--max-gap', type=float, default=10.0,
                    help='shorten inter-packet gaps longer than this (seconds, default 10)')
    ap.add_argument('--base-time', type=int, default=1700000000,
                    help='epoch second of the first packet (default 1700000000)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--list', action='append', default=[],
                    help='file with one input path per line (# comments allowed); '
                         'relative paths are taken from the current directory, '
                         'else from $TAPSTAT_CORPUS')
    ap.add_argument('inputs', nargs='*')
    args = ap.parse_args()
    for lst in args.list:
        with open(lst) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith('#'):
                    args.inputs.append(line)
    if not args.inputs:
        ap.error('no inputs')
    args.inputs = [resolve_input(p) for p in args.inputs]

    max_gap_ns = int(args.max_gap * 1e9)
    sources = []
    total_bytes = 0
    total_pkts = 0
    for path in sorted(args.inputs):
        try:
            pkts, skipped = load_source(path, max_gap_ns)
        except Exception as e:  # unreadable input: report and go on
            print('skip %s: %s' % (path, e), file=sys.stderr)
            continue
        if not pkts:
            print('skip %s: no usable packets (%d skipped)' % (path, skipped), file=sys.stderr)
            continue
        if skipped:
            print('%s: %d packets of unsupported link type skipped' % (path, skipped),
                  file=sys.stderr)
        b = sum(16 + len(p[1]) for p in pkts)
        total_bytes += b
        total_pkts += len(pkts)
        sources.append((os.path.basename(path), pkts))
    if not sources:
        sys.exit('no usable input')

    if args.copies:
        ncopies = args.copies
    else:
        ncopies = max(1, int(round(args.target_bytes / total_bytes)))
    if ncopies > 0x10000:
        sys.exit('too many copies (max 65536)')
    masks = copy_masks(ncopies, args.seed)
    rnd = random.Random(args.seed)
    window_ns = int(args.window * 1e9)
    base_ns = args.base_time * 1000000000

    streams = []
    sid = 0
    for _name, pkts in sources:
        for k in range(ncopies):
            start = base_ns + (rnd.randrange(window_ns) if window_ns > 0 else 0)
            streams.append(stream(pkts, start, masks[k], sid))
            sid += 1

    print('inputs=%d input_packets=%d input_bytes=%d copies=%d expected_packets=%d'
          % (len(sources), total_pkts, total_bytes, ncopies, total_pkts * ncopies),
          file=sys.stderr)

    npk = 0
    nbytes = 24
    rec = struct.Struct('<IIII')
    with open(args.output, 'wb') as out:
        out.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        buf = []
        for ts, _sid, _seq, frame, orig, info, mask in heapq.merge(*streams):
            data = rewrite(frame, info, mask)
            us = ts // 1000
            buf.append(rec.pack(us // 1000000, us % 1000000, len(data), orig))
            buf.append(data)
            npk += 1
            nbytes += 16 + len(data)
            if len(buf) >= 20000:
                out.write(b''.join(buf))
                buf = []
        out.write(b''.join(buf))
    print('wrote %s: %d packets, %d bytes' % (args.output, npk, nbytes), file=sys.stderr)


if __name__ == '__main__':
    main()
