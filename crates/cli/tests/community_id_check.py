"""Reads tapstat's TCP and UDP logs and checks every `community_id` against the
`communityid` package (Corelight's reference implementation in Python).

usage: community_id_check.py OUTDIR...   prints "checked N" and exits 1 on a mismatch.
"""
import csv
import os
import sys

import communityid

cid = communityid.CommunityID(seed=0)
checked = 0
bad = []
for out in sys.argv[1:]:
    for log, make in [
        ("log_tcp_complete", communityid.FlowTuple.make_tcp),
        ("log_tcp_nocomplete", communityid.FlowTuple.make_tcp),
        ("log_udp_complete", communityid.FlowTuple.make_udp),
    ]:
        path = os.path.join(out, log)
        if not os.path.exists(path):
            continue
        with open(path, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                want = cid.calc(make(row["c_ip"], row["s_ip"], int(row["c_port"]), int(row["s_port"])))
                checked += 1
                if row["community_id"] != want:
                    bad.append((out, log, row["c_ip"], row["c_port"], row["s_ip"], row["s_port"], row["community_id"], want))
print("checked", checked)
for b in bad[:20]:
    print("mismatch", *b)
sys.exit(1 if bad or checked == 0 else 0)
