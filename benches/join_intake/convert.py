#!/usr/bin/env python3
"""The collector's file-exporter JSON lines (ExportTraceServiceRequest per line) ->
  spans.lp: the SAMPLE/DATA_FRAG spans as Telegraf hands them to the join (tags/fields it reads)
  requests.bin: the same requests as protobuf bodies (u32 BE length prefix), DATA spans kept
ROUNDS copies, host names suffixed by the round (so each round is new input)."""
import json, struct, sys
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "..", "fuzz"))
from seed_corpus import pb_bytes, pb_varint, pb_kv

src, out_dir, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
TAGS = {"writer_id", "topic_name", "slot"}
INTS = {"sn", "start_ns", "fragments_missing", "sample_size", "repairs", "submessages",
        "fragment_starting_num", "frags_in_submessage", "fragment_size", "src_mac"}
STRS = {"src_ip", "announced_ips"}

def val(v):
    if "stringValue" in v: return v["stringValue"]
    if "intValue" in v: return int(v["intValue"])
    return None

def esc(t): return t.replace("\\", "\\\\").replace(",", "\\,").replace(" ", "\\ ").replace("=", "\\=")

reqs = [json.loads(l) for l in open(src) if l.strip()]
lp, bodies, n_join, n_all = [], [], 0, 0
for r in range(rounds):
    for req in reqs:
        body = b""
        for rs in req.get("resourceSpans", []):
            host = None
            for a in rs.get("resource", {}).get("attributes", []):
                if a["key"] == "host.name": host = val(a["value"]) + f"-{r}"
            spans_pb = b""
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    n_all += 1
                    attrs = {a["key"]: val(a["value"]) for a in sp.get("attributes", [])}
                    start, end = int(sp["startTimeUnixNano"]), int(sp["endTimeUnixNano"])
                    body_sp = pb_bytes(5, sp["name"].encode())
                    body_sp += pb_varint(7 << 3 | 1) + struct.pack("<Q", start)
                    body_sp += pb_varint(8 << 3 | 1) + struct.pack("<Q", end)
                    for k, v in attrs.items():
                        if v is not None: body_sp += pb_bytes(9, pb_kv(k, v))
                    spans_pb += pb_bytes(2, body_sp)
                    if sp["name"] not in ("SAMPLE", "DATA_FRAG"): continue
                    n_join += 1
                    tags = {"host.name": host, "span.name": sp["name"]}
                    tags.update({k: str(attrs[k]) for k in TAGS if k in attrs})
                    fields = [f"end_time_unix_nano={end}i"]
                    fields += [f"{k}={attrs[k]}i" for k in sorted(INTS) if k in attrs]
                    fields += [f'{k}="{attrs[k]}"' for k in sorted(STRS) if k in attrs]
                    lp.append("spans," + ",".join(f"{esc(k)}={esc(v)}" for k, v in sorted(tags.items()))
                              + " " + ",".join(fields) + f" {start}")
            body += pb_bytes(1, pb_bytes(1, pb_bytes(1, pb_kv("host.name", host))) + pb_bytes(2, spans_pb))
        bodies.append(body)
open(f"{out_dir}/spans.lp", "w").write("\n".join(lp) + "\n")
with open(f"{out_dir}/requests.bin", "wb") as f:
    for b in bodies: f.write(struct.pack(">I", len(b)) + b)
print(f"{len(bodies)} requests, {n_all} spans ({n_join} SAMPLE/DATA_FRAG), {sum(map(len, bodies))} protobuf bytes, {len(chr(10).join(lp))} LP bytes")
