#!/bin/sh
# The stack's secrets, made on first start and kept in DIR (nothing secret is in the
# repository): run by scripts/stack/start.sh (DIR = RUN_DIR/secrets) and by
# deploy/docker-compose.yml's `secrets` service (DIR = the `secrets` volume).
#
#   influx-token            InfluxDB's operator token (the join, Grafana, queries)
#   influx-password         the initial InfluxDB user's password
#   grafana-admin-password  Grafana's admin password
#   otlp-token              the bearer token the collector's OTLP receivers require
#   ca.pem, ca.key          a private CA (ca.key never leaves DIR)
#   otlp.pem, otlp.key      the OTLP receivers' certificate, signed by the CA, for the
#                           names and addresses given as arguments (remade when they change)
#
# A file that exists is kept, so a restart keeps every credential and remote exporters
# keep working. Each file is written to a temporary name and renamed (never half
# written). Mode 0600 unless DDSHARK_SECRETS_MODE says otherwise (compose: 0644, the
# services run as other users and only see the volume).
#
# Usage: deploy/secrets.sh DIR [SAN...]   SAN: IP:10.0.0.5, DNS:collector.lab (127.0.0.1
#        and localhost are always in; DDSHARK_OTLP_TLS_SANS adds a comma-separated list)
set -eu

dir="${1:?usage: secrets.sh DIR [SAN...]}"
shift
mode="${DDSHARK_SECRETS_MODE:-0600}"
command -v openssl >/dev/null 2>&1 || {
  echo "secrets.sh: openssl not found (apt-get install openssl)" >&2
  exit 1
}
umask 077
mkdir -p "$dir"
chmod 0700 "$dir" 2>/dev/null || true
# (compose: the services' users must reach the files in the volume)
[ "$mode" = 0600 ] || chmod 0755 "$dir"

# put NAME: stdin to DIR/NAME, atomically, with the mode
put() {
  cat >"$dir/.$1.tmp"
  chmod "$mode" "$dir/.$1.tmp"
  mv -f "$dir/.$1.tmp" "$dir/$1"
}

# random NAME: 32 random bytes as 64 hex digits, unless NAME exists
random() {
  [ -s "$dir/$1" ] && return 0
  openssl rand -hex 32 | put "$1"
  echo "secrets.sh: made $dir/$1" >&2
}

random influx-token
random influx-password
random grafana-admin-password
random otlp-token

if [ ! -s "$dir/ca.pem" ] || [ ! -s "$dir/ca.key" ]; then
  openssl req -x509 -newkey rsa:3072 -nodes -days 3650 -subj "/CN=ddshark stack CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$dir/.ca.key.tmp" -out "$dir/.ca.pem.tmp" 2>/dev/null
  chmod 0600 "$dir/.ca.key.tmp"
  chmod 0644 "$dir/.ca.pem.tmp"
  mv -f "$dir/.ca.key.tmp" "$dir/ca.key"
  mv -f "$dir/.ca.pem.tmp" "$dir/ca.pem"
  rm -f "$dir/otlp.pem" "$dir/otlp.sans"
  echo "secrets.sh: made the private CA $dir/ca.pem" >&2
fi

sans="IP:127.0.0.1,DNS:localhost"
extra="$(printf '%s' "${DDSHARK_OTLP_TLS_SANS:-}" | tr ',' ' ')"
# shellcheck disable=SC2086 # (split on purpose)
for s in "$@" $extra; do
  case ",$sans," in *",$s,"*) ;; *) sans="$sans,$s" ;; esac
done
if [ ! -s "$dir/otlp.pem" ] || [ ! -s "$dir/otlp.key" ] || [ "$(cat "$dir/otlp.sans" 2>/dev/null)" != "$sans" ]; then
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' \
    "$sans" >"$dir/.otlp.ext"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=ddshark OTLP" \
    -keyout "$dir/.otlp.key.tmp" -out "$dir/.otlp.csr" 2>/dev/null
  openssl x509 -req -in "$dir/.otlp.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -CAserial "$dir/.ca.srl" -days 825 -extfile "$dir/.otlp.ext" \
    -out "$dir/.otlp.pem.tmp" 2>/dev/null
  chmod "$mode" "$dir/.otlp.key.tmp"
  chmod 0644 "$dir/.otlp.pem.tmp"
  mv -f "$dir/.otlp.key.tmp" "$dir/otlp.key"
  mv -f "$dir/.otlp.pem.tmp" "$dir/otlp.pem"
  printf '%s\n' "$sans" | put otlp.sans
  rm -f "$dir/.otlp.csr" "$dir/.otlp.ext"
  echo "secrets.sh: made the OTLP certificate $dir/otlp.pem for $sans" >&2
fi
