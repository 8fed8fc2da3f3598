import http.client, struct, sys
port, path = int(sys.argv[1]), sys.argv[2]
data = open(path, "rb").read()
conn = http.client.HTTPConnection("127.0.0.1", port)
i = n = 0
while i < len(data):
    (ln,) = struct.unpack(">I", data[i:i+4]); body = data[i+4:i+4+ln]; i += 4 + ln
    conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
    r = conn.getresponse(); r.read()
    if r.status != 200: sys.exit(f"status {r.status}")
    n += 1
print(f"{n} requests posted")
