#!/usr/bin/env bash
# Set up a fresh Debian 12 machine for ddshark: system packages, the Rust build,
# the DDS traffic generator's Python venv, cargo-fuzz, and (with --stack) the real
# OpenTelemetry Collector + InfluxDB 2 used by the end-to-end tests.
# Idempotent: what is already there is kept. Needs root (apt-get) or sudo.
#
# usage: scripts/setup.sh [--stack] [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

want_stack=0
build=1
for a in "$@"; do
  case "$a" in
    --stack) want_stack=1 ;;
    --no-build) build=0 ;;
    *) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(
  build-essential pkg-config libpcap-dev           # building ddshark (libpcap)
  tshark tcpdump iproute2 ethtool iputils-ping     # oracle, live capture tests, namespaces
  cyclonedds-tools clang python3-venv              # real DDS traffic generator (tests/traffic)
  jq tmux chromium python3-yaml                    # JSON checks, TUI test, HTML report test, dashboards
  prometheus prometheus-node-exporter              # the docker-free monitoring side (tests)
  curl openssl time                                # OTLP TLS test, benches
  tcpreplay                                        # bench-live.sh: replays RTPS into a private veth
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: installing Rust from Debian (cargo, rustc)" >&2
    $SUDO apt-get install -y -q cargo rustc
  fi
fi

# The traffic generator's Python DDS (Cyclone DDS from PyPI).
VENV=${VENV:-/opt/dds-venv}
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import cyclonedds' 2>/dev/null; then
  echo "setup: creating $VENV with cyclonedds" >&2
  $SUDO python3 -m venv "$VENV"
  $SUDO "$VENV/bin/pip" install -q cyclonedds
fi

# cargo-fuzz (runs on the stable toolchain with RUSTC_BOOTSTRAP=1, see scripts/fuzz.sh).
if ! command -v cargo-fuzz >/dev/null && [ ! -x "$HOME/.cargo/bin/cargo-fuzz" ]; then
  echo "setup: installing cargo-fuzz" >&2
  cargo install -q --locked cargo-fuzz
fi

if [ "$want_stack" -eq 1 ]; then
  scripts/stack/build.sh
fi

if [ "$build" -eq 1 ]; then
  cargo build --release -q -p ddshark
  echo "setup: ddshark built: target/release/ddshark" >&2
fi
