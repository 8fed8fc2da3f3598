#!/usr/bin/env python3
"""Seed the fuzz corpora from the real fixtures in tests/pcaps.

datagram/: one input per run of up to 12 consecutive frames (so IP fragments of one
datagram land together), as the fuzz target reads them: a link-type selector byte,
then frames each prefixed by a little-endian u16 length.
parameter_list/: the ParameterList of every SPDP/SEDP DATA (selector byte: bit 0 =
little endian), found by walking Ethernet/IPv4/UDP/RTPS by hand.
tcp_stream/: runs of 20 TCP segments of the RTPS-over-TCP fixtures (l_*), as the fuzz
target reads them: stream selector, flags, sequence delta, time step, length, payload;
plus RTI TCP transport streams (no fixture has one) built from its layout.
line_protocol/: SAMPLE and DATA_FRAG spans of two hosts as Telegraf hands them to the
latency join (`ddshark join`), one sample per input, plus odd escapes.
otlp_intake/: export requests (protobuf) of two hosts' SAMPLE, DATA_FRAG and DATA spans as
the collector sends them to the join's OTLP intake, one sample per input.
capture_file/: the head of every fixture file (pcap and pcapng), cut at a record boundary
after SEED_FILE_BYTES, as `ddshark stats` reads a file.
"""
import hashlib
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "pcaps")
LINK_SELECTOR = {1: 0, 0: 1, 101: 2, 108: 3, 113: 4, 276: 5, 228: 6, 229: 7}
MAX_PER_FILE = 150
SEED_FILE_BYTES = 16 << 10


def pcap_frames(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return None, []
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        return None, []  # pcapng: the pcap copies of the same traffic cover it
    link = struct.unpack(e + "I", data[20:24])[0]
    out, off = [], 24
    while off + 16 <= len(data):
        _, _, caplen, _ = struct.unpack(e + "IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return link, out


def file_head(path):
    """The file's header and its records up to SEED_FILE_BYTES (at least one record)."""
    with open(path, "rb") as f:
        data = f.read(4 << 20)
    magic = data[:4]
    if magic == b"\x0a\x0d\x0d\x0a":  # pcapng: blocks, each with its total length at +4
        e = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        off = 0
        while off + 12 <= len(data):
            n = struct.unpack(e + "I", data[off + 4:off + 8])[0]
            if n < 12 or off + n > len(data) or (off > 0 and off + n > SEED_FILE_BYTES):
                break
            off += n
        return data[:off]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        return b""
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack(e + "I", data[off + 8:off + 12])[0]
        if off + 16 + caplen > len(data) or (off > 24 and off + 16 + caplen > SEED_FILE_BYTES):
            break
        off += 16 + caplen
    return data[:off]


def put(dirname, blob):
    d = os.path.join(HERE, "corpus", dirname)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(blob).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(blob)


def plists(frame):
    """ParameterLists of discovery DATA in an unfragmented Ethernet/IPv4/UDP/RTPS frame."""
    if len(frame) < 14:
        return
    off, et = 14, struct.unpack(">H", frame[12:14])[0]
    while et == 0x8100 and len(frame) >= off + 4:
        et = struct.unpack(">H", frame[off + 2:off + 4])[0]
        off += 4
    if et != 0x0800 or len(frame) < off + 20:
        return
    ihl = (frame[off] & 0x0F) * 4
    if frame[off + 9] != 17 or struct.unpack(">H", frame[off + 6:off + 8])[0] & 0x3FFF:
        return
    rtps = frame[off + ihl + 8:]
    if rtps[:4] != b"RTPS":
        return
    pos = 20
    while pos + 4 <= len(rtps):
        sid, flags = rtps[pos], rtps[pos + 1]
        e = "<" if flags & 1 else ">"
        otnh = struct.unpack(e + "H", rtps[pos + 2:pos + 4])[0]
        body = rtps[pos + 4:pos + 4 + otnh] if otnh else rtps[pos + 4:]
        if sid == 0x15 and len(body) >= 20 and body[11] == 0xC2:
            otiq = struct.unpack(e + "H", body[2:4])[0]
            p = 4 + otiq
            if flags & 0x02:  # inline QoS: skip to its sentinel
                while p + 4 <= len(body):
                    pid, ln = struct.unpack(e + "HH", body[p:p + 4])
                    p += 4 + ln
                    if pid == 1:
                        break
            payload = body[p:]
            if len(payload) > 4 and payload[:2] in (b"\x00\x02", b"\x00\x03"):
                yield bytes([payload[1] & 1]) + payload[4:]
        if otnh == 0:
            break
        pos += 4 + otnh


def tcp_segments(link, frames):
    """(source port, flags, seq, payload) of the Ethernet/IPv4/TCP frames with a payload."""
    if link != 1:
        return
    for f in frames:
        if len(f) < 34 or f[12:14] != b"\x08\x00" or f[23] != 6:
            continue
        ihl = (f[14] & 0x0F) * 4
        tcp = f[14 + ihl:]
        if len(tcp) < 20:
            continue
        doff = (tcp[12] >> 4) * 4
        sport, = struct.unpack(">H", tcp[:2])
        seq, = struct.unpack(">I", tcp[4:8])
        if tcp[doff:]:
            yield sport, tcp[13], seq, tcp[doff:]


def tcp_inputs(segs):
    for start in range(0, min(len(segs), 600), 20):
        blob, last = b"", {}
        for sport, flags, seq, payload in segs[start:start + 20]:
            stream = sport % 4
            delta = (seq - last.get(stream, seq)) & 0xFFFFFFFF
            delta = delta if delta < 0x8000 else 0
            payload = payload[:4000]
            last[stream] = seq + len(payload)
            blob += bytes([stream, flags]) + struct.pack("<hBH", delta, 1, len(payload)) + payload
        yield blob


def rti_tcp_inputs():
    """RTI TCP streams: control messages and an RTPS message, with and without CRC, cut
    into segments of 7, 30 and 200 bytes."""
    rtps = b"RTPS\x02\x01\x01\x01" + bytes(range(12)) + b"\x15\x05\x08\x00" + bytes(8)
    for crc in (False, True):
        def msg(body):
            word = len(body) | (0x40000000 if body[:4] == b"RTPS" else 0)
            head = struct.pack(">I", word) + b"\xdd\x54\xdd\x55"
            return head + (b"CRC2" + bytes(4) if crc else b"") + body
        def control(kind):
            return msg(struct.pack(">HHI", kind, 8, 0x2112A442) + bytes(12)
                       + struct.pack(">HHI", 0x3D02, 4, 7411))
        stream = control(0x0C01) + control(0x0C02) + msg(rtps) + control(0x0C06) + msg(rtps)
        for size in (7, 30, 200):
            blob = b""
            for i in range(0, len(stream), size):
                chunk = stream[i:i + size]
                blob += bytes([0, 0x18]) + struct.pack("<hBH", 0, 1, len(chunk)) + chunk
            yield blob


def main():
    n_dg = n_pl = n_tcp = 0
    n_files = 0
    for root, _, files in os.walk(FIXTURES):
        for fn in sorted(files):
            if fn.endswith((".pcap", ".pcapng")):
                head = file_head(os.path.join(root, fn))
                if head:
                    put("capture_file", head)
                    n_files += 1
            if not fn.endswith(".pcap") or "truncated" in fn:
                continue
            link, frames = pcap_frames(os.path.join(root, fn))
            if link not in LINK_SELECTOR:
                continue
            step = max(1, len(frames) // MAX_PER_FILE)
            for i in range(0, len(frames), step):
                run = frames[i:i + 12] if (i // step) % 4 == 0 else frames[i:i + 1]
                blob = bytes([LINK_SELECTOR[link]]) + b"".join(
                    struct.pack("<H", min(len(f), 0xFFFF)) + f[:0xFFFF] for f in run)
                put("datagram", blob)
                n_dg += 1
            for f in frames:
                for pl in plists(f):
                    put("parameter_list", pl)
                    n_pl += 1
            for blob in tcp_inputs(list(tcp_segments(link, frames))):
                put("tcp_stream", blob)
                n_tcp += 1
    for blob in rti_tcp_inputs():
        put("tcp_stream", blob)
        n_tcp += 1
    for blob in span_lines():
        put("line_protocol", blob)
    for blob in otlp_requests():
        put("otlp_intake", blob)
    print(f"seeded {n_dg} datagram inputs, {n_pl} parameter lists, {n_tcp} TCP segment runs, "
          f"{n_files} capture file heads", file=sys.stderr)


def pb_varint(v):
    v &= (1 << 64) - 1
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out


def pb_bytes(field, data):
    return pb_varint(field << 3 | 2) + pb_varint(len(data)) + data


def pb_kv(key, value):
    """A KeyValue: str values as string_value, ints as int_value."""
    if isinstance(value, str):
        any_value = pb_bytes(1, value.encode())
    else:
        any_value = pb_varint(3 << 3) + pb_varint(value)
    return pb_bytes(1, key.encode()) + pb_bytes(2, any_value)


def pb_span(name, start, end, attrs):
    body = pb_bytes(5, name.encode())
    body += pb_varint(7 << 3 | 1) + struct.pack("<Q", start)
    body += pb_varint(8 << 3 | 1) + struct.pack("<Q", end)
    for k, v in attrs.items():
        body += pb_bytes(9, pb_kv(k, v))
    return body


def otlp_requests():
    """ExportTraceServiceRequest bodies: per host a ResourceSpans with host.name."""
    w = "01100defba0fcccdd1656a12000004c2"
    out = []
    for sn in range(1, 4):
        request = b""
        for host, d in (("a", 0), ("b", 180000)):
            t = 1795276150345705000 + sn * 1000000 + d
            spans = b""
            for fsn in (1, 2):
                spans += pb_bytes(2, pb_span("DATA_FRAG", t + fsn * 10, t + fsn * 10 + 5, {
                    "writer_id": w, "sn": sn, "slot": 0, "topic_name": "rt/blob",
                    "fragment_starting_num": fsn, "frags_in_submessage": 1,
                    "fragment_size": 1000, "sample_size": 2000}))
            spans += pb_bytes(2, pb_span("DATA", t, t, {"writer_id": w, "sn": sn}))
            spans += pb_bytes(2, pb_span("SAMPLE", t, t + 50, {
                "writer_id": w, "sn": sn, "slot": 0, "topic_name": "rt/a,b c",
                "start_ns": t, "fragments_missing": sn % 2, "repairs": 1,
                "sample_size": 2000, "submessages": 2, "src_ip": "10.0.0.1",
                "src_mac": 0x0242AC110002, "announced_ips": "10.0.0.1,192.168.1.5"}))
            resource = pb_bytes(1, pb_kv("host.name", host))
            request += pb_bytes(1, pb_bytes(1, resource) + pb_bytes(2, spans))
        out.append(request)
    return out


def span_lines():
    w = "01100defba0fcccdd1656a12000004c2"
    out = []
    for sn in range(1, 4):
        lines = []
        for host, d in (("a", 0), ("b", 180000)):
            t = 1795276150345705000 + sn * 1000000 + d
            for fsn in (1, 2):
                lines.append(f"spans,host.name={host},slot=0,span.name=DATA_FRAG,topic_name=rt/blob,writer_id={w} "
                             f"end_time_unix_nano={t + fsn * 10 + 5}i,fragment_size=1000i,fragment_starting_num={fsn}i,"
                             f"frags_in_submessage=1i,sample_size=2000i,sn={sn}i {t + fsn * 10}")
            lines.append(f"spans,host.name={host},slot=0,span.name=SAMPLE,topic_name=rt/a\\,b\\ c,writer_id={w} "
                         f"end_time_unix_nano={t + 50}i,fragments_missing={sn % 2}i,repairs=1i,sample_size=2000i,"
                         f"sn={sn}i,start_ns={t}i,submessages=2i,trace_id=\"x,\\\" y\" {t}")
        out.append(("\n".join(lines) + "\n").encode())
    return out


if __name__ == "__main__":
    main()
