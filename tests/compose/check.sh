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
echo "compose check: deploy/docker-compose.yml valid for the Compose Specification"
