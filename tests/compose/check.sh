#!/usr/bin/env bash
# deploy/docker-compose.yml through the Compose Specification's own loader (compose-go/v2, the
# one docker compose uses; built by scripts/stack/build.sh as compose-validate): the file is
# valid, its bind mounts and build context exist; and the check itself refuses a service key
# the specification does not know and a bind mount of a missing path (so a lenient loader
# cannot pass). Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
LIB_TAG="compose check"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
validate=$DDSHARK_STACK_DIR/bin/compose-validate
[ -x "$validate" ] || die "$validate missing: scripts/stack/build.sh --only compose-validate (scripts/setup.sh --test builds it)"

"$validate" deploy/docker-compose.yml || die "deploy/docker-compose.yml is not a valid Compose file"

# Broken copies next to the original, so that its relative paths resolve the same way.
tmp=$(mktemp deploy/.compose-check.XXXXXX.yml)
trap 'rm -f "$tmp"' EXIT
expect_refused() { # expect_refused WHAT SED-SCRIPT
  sed "$2" deploy/docker-compose.yml >"$tmp"
  cmp -s "$tmp" deploy/docker-compose.yml && die "the $1 mutation changed nothing"
  if "$validate" "$tmp" >/dev/null 2>"$tmp.err"; then
    rm -f "$tmp.err"; die "the loader accepted $1"
  fi
  echo "compose check: refused as it should: $1: $(tail -n1 "$tmp.err")"
  rm -f "$tmp.err"
}
expect_refused "an unknown service key" '0,/^    restart: unless-stopped$/s//    restart: unless-stopped\n    restrat: always/'
expect_refused "a missing bind mount" '0,/\.\/otelcol\/config\.yaml:/s//.\/otelcol\/no-such-config.yaml:/'
# `docker compose up --scale join=N` (docs/fleet.md): the join's replicas are alike, so nothing of
# the service may be one of a kind (a fixed name, a published port, another's network), each
# claims its shard (--shard-auto), and the collector finds them by DNS.
python3 - deploy/docker-compose.yml <<'EOF' || die "deploy/docker-compose.yml: the join cannot be scaled (above)"
import sys, yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
join, otelcol = services["join"], services["otelcol"]
bad = [k for k in ("container_name", "hostname", "ports", "network_mode") if k in join]
if bad:
    sys.exit(f"its join service sets {bad}: its replicas would collide")
for flag in ("--shard-auto", "--otlp-token-file", "--otlp-tls-cert"):
    if not any(str(a).startswith(flag) for a in join["command"]):
        sys.exit(f"its join service lacks {flag}")
if not any("routing-dns.yaml" in str(a) for a in otelcol["command"]):
    sys.exit("its collector has no DNS resolver (otelcol/routing-dns.yaml)")
EOF
echo "compose check: the join scales (--scale join=N): replicas alike, each --shard-auto, found by DNS"
echo "compose check: deploy/docker-compose.yml valid for the Compose Specification"
