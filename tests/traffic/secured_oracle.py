#!/usr/bin/env python3
"""Secured-traffic ground truth from tshark fields, per participant and participant pair.

usage: secured_oracle.py CAPTURE.pcap  > oracle_secured.json

A secured message is an RTPS message (one UDP datagram, IP fragments reassembled) that holds
an SRTPS_PREFIX (0x33, RTPS protection) or a SEC_PREFIX (0x31, submessage protection).
Per message: its source participant is the RTPS header's guidPrefix (SRTPS keeps the header in
the clear); its destination is the first INFO_DST's guidPrefix that is not zero, else
"multicast" for a multicast IP destination, else the one participant that sent from the
destination IP address in this capture ("host:IP" when none or several did). Counted:
messages, srtps_messages (those with SRTPS_PREFIX), sec_submessages (SEC_PREFIX, i.e. one per
protected submessage the capture shows), bytes = UDP payload (udp.length - 8).
"""
import collections
import json
import subprocess
import sys

FIELDS = ["frame.number", "ip.src", "ip.dst", "udp.length", "rtps.guidPrefix.src", "rtps.sm.id",
          "rtps.guidPrefix.dst"]
SRTPS_PREFIX, SEC_PREFIX = 0x33, 0x31


def hexprefix(s):
    return "".join(c for c in s.lower() if c in "0123456789abcdef")


def main():
    pcap = sys.argv[1]
    cmd = ["tshark", "-n", "-r", pcap, "-Y", "rtps && udp", "-T", "fields", "-E", "occurrence=a",
           "-E", "aggregator=|", "-E", "separator=\t"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = []
    senders = collections.defaultdict(set)
    for line in out.splitlines():
        cols = line.split("\t")
        if len(cols) < len(FIELDS):
            cols += [""] * (len(FIELDS) - len(cols))
        frame, src, dst, udp_len, prefix_src, sm_ids, prefix_dst = cols[:7]
        src_prefix = hexprefix(prefix_src.split("|")[0])
        if not src_prefix or not udp_len:
            continue
        senders[src].add(src_prefix)
        ids = [int(x, 16) if x.startswith("0x") else int(x) for x in sm_ids.split("|") if x]
        dsts = [hexprefix(p) for p in prefix_dst.split("|") if p]
        dsts = [p for p in dsts if p.strip("0")]
        rows.append((int(frame), src, dst, int(udp_len.split("|")[0]), src_prefix, ids, dsts))
    pairs = collections.defaultdict(collections.Counter)
    parts = collections.defaultdict(collections.Counter)
    for _frame, _src, dst, udp_len, src_prefix, ids, dsts in rows:
        if SRTPS_PREFIX not in ids and SEC_PREFIX not in ids:
            continue
        if dsts:
            to = dsts[0]
        elif 224 <= int(dst.split(".")[0]) <= 239:
            to = "multicast"
        elif len(senders.get(dst, ())) == 1:
            to = next(iter(senders[dst]))
        else:
            to = "host:" + dst
        c = collections.Counter(
            messages=1,
            srtps_messages=1 if SRTPS_PREFIX in ids else 0,
            sec_submessages=ids.count(SEC_PREFIX),
            bytes=udp_len - 8,
        )
        pairs[(src_prefix, to)].update(c)
        parts[src_prefix].update(c)
    keys = ["messages", "srtps_messages", "sec_submessages", "bytes"]
    total = collections.Counter()
    for c in parts.values():
        total.update(c)
    version = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout
    doc = {
        "capture": pcap.rsplit("/", 1)[-1],
        "tshark": version.splitlines()[0] if version else "",
        "total": {k: total[k] for k in keys},
        "participants": [dict(prefix=p, **{k: c[k] for k in keys}) for p, c in sorted(parts.items())],
        "pairs": [dict(src=s, dst=d, **{k: c[k] for k in keys}) for (s, d), c in sorted(pairs.items())],
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
