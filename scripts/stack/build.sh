#!/usr/bin/env bash
# Build (or reuse from cache) the docker-free ddshark telemetry stack:
#   - otelcol-ddshark : OpenTelemetry Collector built with ocb from
#                       deploy/otelcol/builder-manifest.yaml
#   - influxd         : InfluxDB v2.7.12 (with Flux) built from the Go module
#   - dashboard-linter: Grafana's dashboard linter (Go module, pinned pseudo-version),
#                       run on grafana/dashboards/*.json by tests/flux
#   - compose-validate: deploy/docker-compose.yml through the Compose Specification's own
#                       loader (scripts/stack/compose-validate: compose-go/v2, pinned by its
#                       go.mod and go.sum), run by tests/compose/check.sh
#   - prometheus, prometheus-node-exporter : Debian packages (binaries only,
#                       started directly by start.sh; no services)
#   - telemetrygen    : optional (--with-telemetrygen)
#
# Built binaries are cached in $DDSHARK_STACK_DIR/bin (scripts/lib.sh: ~/.cache/ddshark-stack)
# next to a <name>.stamp file; a binary whose stamp matches the pinned
# versions (and, for the collector, the manifest's hash) is not rebuilt.
#
# Usage: scripts/stack/build.sh [--force] [--no-apt]
#                               [--only otelcol|influxd|dashboard-linter|compose-validate]
#                               [--with-telemetrygen]
set -euo pipefail

# ---- pinned versions (why these: deploy/README.md) ------
OTELCOL_BUILDER_VERSION=v0.161.0      # go.opentelemetry.io/collector/cmd/builder
INFLUXDB_VERSION=v2.7.12              # github.com/influxdata/influxdb/v2
PKG_CONFIG_VERSION=v0.2.14            # github.com/influxdata/pkg-config (pinned by influxdb's go.mod)
INFLUXDB_BUILD_TAGS=sqlite_foreign_keys,sqlite_json
TELEMETRYGEN_VERSION=v0.161.0         # contrib cmd/telemetrygen
# github.com/grafana/dashboard-linter has no tagged release; the checksum database has
# no record of this pseudo-version, so its module hash is pinned here and checked.
DASHBOARD_LINTER_VERSION=v0.0.0-20241224134444-1765d94aec4a
DASHBOARD_LINTER_SUM=h1:wpyAYX8+Rqu0LIEE7zXBR/qjBH4t0yXvqlRGa1wD5rg=
APT_PACKAGES=(build-essential ca-certificates curl python3 prometheus prometheus-node-exporter)

LIB_TAG=build
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

FORCE=0
WITH_APT=1
WITH_TELEMETRYGEN=0
ONLY=""
while (($#)); do
  case "$1" in
    --force) FORCE=1 ;;
    --no-apt) WITH_APT=0 ;;
    --only) ONLY="${2:?--only needs otelcol, influxd, dashboard-linter or compose-validate}"; shift ;;
    --with-telemetrygen) WITH_TELEMETRYGEN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown argument: $1" ;;
  esac
  shift
done
case "$ONLY" in ""|otelcol|influxd|dashboard-linter|compose-validate) ;; *) usage_error "--only takes otelcol, influxd, dashboard-linter or compose-validate" ;; esac

STACK_DIR="$DDSHARK_STACK_DIR"
BIN_DIR="$STACK_DIR/bin"
TOOLS_DIR="$STACK_DIR/tools"
BUILD_DIR="$STACK_DIR/build"
LOG_DIR="$STACK_DIR/logs"
mkdir -p "$BIN_DIR" "$TOOLS_DIR" "$BUILD_DIR" "$LOG_DIR"

run() { say "+ $*"; "$@"; }

# One build at a time per stack dir (several test runs may call this).
exec 9>"$STACK_DIR/.build.lock"
if ! flock -n 9; then
  say "another build holds $STACK_DIR/.build.lock; waiting"
  flock 9
fi

# ---- toolchains -----------------------------------------------------------
if ! command -v go >/dev/null 2>&1; then
  [ -x /usr/local/go/bin/go ] || die "Go not found (expected on PATH or at /usr/local/go/bin/go)"
  export PATH="/usr/local/go/bin:$PATH"
fi
# rustup's cargo/rustc first: RUSTUP_TOOLCHAIN=stable must reach them.
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
say "go: $(go version)"

stamp_ok() { # stamp_ok NAME EXPECTED-STAMP
  [ "$FORCE" = 0 ] && [ -x "$BIN_DIR/$1" ] && [ -f "$BIN_DIR/$1.stamp" ] \
    && [ "$(cat "$BIN_DIR/$1.stamp")" = "$2" ]
}
up_to_date() { # up_to_date NAME EXPECTED-STAMP: stamp_ok, and says so
  stamp_ok "$1" "$2" || return 1
  say "$1 up to date ($BIN_DIR/$1)"
}
install_bin() { # install_bin SRC NAME STAMP
  install -m 0755 "$1" "$BIN_DIR/.$2.tmp"
  mv -f "$BIN_DIR/.$2.tmp" "$BIN_DIR/$2"
  printf '%s\n' "$3" >"$BIN_DIR/$2.stamp"
}
go_install_tool() { # go_install_tool MODULE@VERSION DESTDIR
  say "go install $1 (GOBIN=$2)"
  GOBIN="$2" go install "$1"
}
logged_build() { # logged_build NAME DIR CMD...: CMD in DIR, its output in $LOG_DIR/NAME-build.log
  local name="$1" log="$LOG_DIR/$1-build.log" dir="$2"
  shift 2
  if ! (cd "$dir" && "$@") >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    die "$name build failed (full log: $log)"
  fi
}
go_install_bin() { # go_install_bin NAME STAMP GO-INSTALL-ARGS...: NAME go-installed into BIN_DIR
  local name="$1" want="$2" t0=$SECONDS tmp="$BUILD_DIR/$1-bin"
  shift 2
  mkdir -p "$tmp"
  say "go install $* (log: $LOG_DIR/$name-build.log)"
  logged_build "$name" . env GOBIN="$tmp" go install "$@"
  install_bin "$tmp/$name" "$name" "$want"
  rm -rf "$tmp"
  say "$name built in $((SECONDS - t0)) s"
}
go_module_copy() { # go_module_copy MODULE@VERSION DEST: the module's source, writable, in DEST;
                   # its hash in MODULE_SUM
  local json moddir
  say "go mod download $1"
  json="$(go mod download -json "$1")"
  moddir="$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(d["Error"]) if d.get("Error") else print(d["Dir"])' "$json")"
  MODULE_SUM="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("Sum",""))' "$json")"
  say "copying module source $moddir -> $2"
  rm -rf "$2"
  cp -r "$moddir" "$2"
  chmod -R u+w "$2"
}

# ---- apt packages -----------------------------------------------------------
apt_install() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    say "apt packages present: ${APT_PACKAGES[*]}"
    return
  fi
  command -v apt-get >/dev/null || die "apt-get not found; install manually: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  # Keep Debian's maintainer scripts from starting prometheus/node_exporter as
  # services: start.sh runs the binaries itself, on loopback only.
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    say "temporarily installing $policy (exit 101) so no service starts"
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 0755 "$policy"
    made_policy=1
  fi
  say "installing apt packages: ${missing[*]}"
  local rc=0
  { run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update \
      && run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; } || rc=$?
  if [ "$made_policy" = 1 ]; then "${sudo[@]}" rm -f "$policy"; fi
  [ "$rc" = 0 ] || die "apt-get failed (rc=$rc)"
}

# ---- OpenTelemetry Collector ------------------------------------------------
build_otelcol() {
  local manifest="$REPO_ROOT/deploy/otelcol/builder-manifest.yaml"
  [ -f "$manifest" ] || die "missing $manifest"
  local want
  want="otelcol-ddshark builder=$OTELCOL_BUILDER_VERSION manifest-sha256=$(sha256sum "$manifest" | cut -d' ' -f1)"
  up_to_date otelcol-ddshark "$want" && return
  local t0=$SECONDS
  if ! { [ -x "$TOOLS_DIR/builder" ] && "$TOOLS_DIR/builder" version 2>/dev/null | grep -q "$OTELCOL_BUILDER_VERSION"; }; then
    go_install_tool "go.opentelemetry.io/collector/cmd/builder@$OTELCOL_BUILDER_VERSION" "$TOOLS_DIR"
  fi
  local t1=$SECONDS
  local dir="$BUILD_DIR/otelcol"
  rm -rf "$dir" && mkdir -p "$dir"
  say "building otelcol-ddshark in $dir (log: $LOG_DIR/otelcol-build.log)"
  logged_build otelcol "$dir" "$TOOLS_DIR/builder" --config="$manifest"
  install_bin "$dir/dist/otelcol-ddshark" otelcol-ddshark "$want"
  say "otelcol-ddshark built: builder install $((t1 - t0)) s, generate+compile $((SECONDS - t1)) s"
  "$BIN_DIR/otelcol-ddshark" --version >&2
}

# ---- InfluxDB 2 (influxd) -------------------------------------------------
# `go install .../cmd/influxd@v2.7.12` is refused (go.mod has a replace), so:
# download the module, copy it somewhere writable, go build there with
# influxdata's pkg-config wrapper (it builds libflux with cargo), the stable
# Rust toolchain (flux pins 1.72, not downloadable here) and a RUSTC_WRAPPER
# that caps lints (libflux denies warnings that today's rustc raises).
build_influxd() {
  local want="influxd $INFLUXDB_VERSION tags=$INFLUXDB_BUILD_TAGS pkg-config=$PKG_CONFIG_VERSION rust=stable ldflags=-s,-w"
  "$BIN_DIR/influxd" version 2>/dev/null | grep -q "${INFLUXDB_VERSION}" && up_to_date influxd "$want" && return
  command -v cargo >/dev/null || die "cargo not found (need Rust via rustup in ~/.cargo/bin to build libflux)"
  command -v rustup >/dev/null || die "rustup not found (needed for RUSTUP_TOOLCHAIN=stable)"
  RUSTUP_TOOLCHAIN=stable rustc --version >/dev/null 2>&1 \
    || die "Rust 'stable' toolchain missing: rustup toolchain install stable"
  say "rust: $(RUSTUP_TOOLCHAIN=stable rustc --version)"
  local t0=$SECONDS

  if ! [ -x "$TOOLS_DIR/pkg-config" ] || ! [ "$(cat "$TOOLS_DIR/pkg-config.stamp" 2>/dev/null)" = "$PKG_CONFIG_VERSION" ]; then
    go_install_tool "github.com/influxdata/pkg-config@$PKG_CONFIG_VERSION" "$TOOLS_DIR"
    printf '%s\n' "$PKG_CONFIG_VERSION" >"$TOOLS_DIR/pkg-config.stamp"
  fi

  cat >"$TOOLS_DIR/rustc-cap-lints" <<'EOF'
#!/bin/sh
# RUSTC_WRAPPER: cargo calls "$0 rustc ARGS..."; demote denied lints to
# warnings (libflux uses #![deny(warnings)]; RUSTFLAGS does not reach its
# build-dependencies). Leave calls that already cap lints alone.
for a in "$@"; do
  case "$a" in --cap-lints|--cap-lints=*) exec "$@" ;; esac
done
exec "$@" --cap-lints warn
EOF
  chmod 0755 "$TOOLS_DIR/rustc-cap-lints"

  local src="$BUILD_DIR/influxdb-$INFLUXDB_VERSION"
  go_module_copy "github.com/influxdata/influxdb/v2@$INFLUXDB_VERSION" "$src"

  say "building influxd (several minutes; log: $LOG_DIR/influxd-build.log)"
  local t1=$SECONDS
  logged_build influxd "$src" env \
      PKG_CONFIG="$TOOLS_DIR/pkg-config" \
      RUSTUP_TOOLCHAIN=stable \
      RUSTC_WRAPPER="$TOOLS_DIR/rustc-cap-lints" \
      CGO_ENABLED=1 GO111MODULE=on \
      go build -tags "$INFLUXDB_BUILD_TAGS" \
        -ldflags "-s -w -X main.version=$INFLUXDB_VERSION -X main.commit=module-build" \
        -o "$src/influxd" ./cmd/influxd
  install_bin "$src/influxd" influxd "$want"
  say "influxd built: prep $((t1 - t0)) s, go build (incl. libflux) $((SECONDS - t1)) s"
  "$BIN_DIR/influxd" version >&2
  # The copied source (~100 MB) is not needed any more.
  rm -rf "$src"
}

# ---- Grafana's dashboard linter ---------------------------------------------------
# `go install …@pseudo-version` is refused (the proxy does not serve the version list
# it consults for deprecations), so: download the module without the checksum
# database (it has no record), check its hash against the pinned one, build a copy.
build_dashboard_linter() {
  local want="dashboard-linter $DASHBOARD_LINTER_VERSION"
  up_to_date dashboard-linter "$want" && return
  local t0=$SECONDS src="$BUILD_DIR/dashboard-linter"
  GONOSUMDB=github.com/grafana/dashboard-linter \
    go_module_copy "github.com/grafana/dashboard-linter@$DASHBOARD_LINTER_VERSION" "$src"
  [ "$MODULE_SUM" = "$DASHBOARD_LINTER_SUM" ] \
    || die "dashboard-linter module hash $MODULE_SUM is not the pinned $DASHBOARD_LINTER_SUM"
  say "building dashboard-linter $DASHBOARD_LINTER_VERSION (log: $LOG_DIR/dashboard-linter-build.log)"
  logged_build dashboard-linter "$src" go build -ldflags "-s -w" -o "$src/dashboard-linter" .
  install_bin "$src/dashboard-linter" dashboard-linter "$want"
  rm -rf "$src"
  say "dashboard-linter built in $((SECONDS - t0)) s"
}

# ---- compose-validate ---------------------------------------------------------
# A small Go program around compose-go/v2 (the loader docker compose uses; Debian's
# docker-compose 1.29 rejects the specification's top-level `name:`). Its go.mod/go.sum pin
# compose-go and every dependency's hash; -mod=readonly refuses anything else.
build_compose_validate() {
  local src="$REPO_ROOT/scripts/stack/compose-validate"
  local want
  want="compose-validate src-sha256=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -d' ' -f1)"
  up_to_date compose-validate "$want" && return
  local t0=$SECONDS out="$BUILD_DIR/compose-validate"
  say "building compose-validate (log: $LOG_DIR/compose-validate-build.log)"
  logged_build compose-validate "$src" go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out" .
  install_bin "$out" compose-validate "$want"
  say "compose-validate built in $((SECONDS - t0)) s"
}

build_telemetrygen() {
  local want="telemetrygen $TELEMETRYGEN_VERSION"
  up_to_date telemetrygen "$want" && return
  go_install_bin telemetrygen "$want" \
    "github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@$TELEMETRYGEN_VERSION"
}

# ---- main -------------------------------------------------------------------
say "stack dir: $STACK_DIR"
T_START=$SECONDS
if [ "$WITH_APT" = 1 ] && [ -z "$ONLY" ]; then apt_install; fi
if [ -z "$ONLY" ] || [ "$ONLY" = otelcol ]; then build_otelcol; fi
if [ -z "$ONLY" ] || [ "$ONLY" = influxd ]; then build_influxd; fi
if [ -z "$ONLY" ] || [ "$ONLY" = dashboard-linter ]; then build_dashboard_linter; fi
if [ -z "$ONLY" ] || [ "$ONLY" = compose-validate ]; then build_compose_validate; fi
if [ "$WITH_TELEMETRYGEN" = 1 ]; then build_telemetrygen; fi

say "done in $((SECONDS - T_START)) s; binaries in $BIN_DIR:"
for b in otelcol-ddshark influxd dashboard-linter compose-validate telemetrygen; do
  [ -x "$BIN_DIR/$b" ] && say "  $b: $(cat "$BIN_DIR/$b.stamp" 2>/dev/null) ($(du -h "$BIN_DIR/$b" | cut -f1))"
done
for b in prometheus prometheus-node-exporter; do
  if command -v "$b" >/dev/null; then say "  $b: $(command -v "$b") ($("$b" --version 2>&1 | head -n1))"; fi
done
exit 0
