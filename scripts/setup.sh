#!/usr/bin/env bash
# Set up a fresh Debian 12 machine for ddshark.
#
#   scripts/setup.sh            what building and running ddshark needs: a C toolchain,
#                               pkg-config and libpcap, a recent enough Rust (checked, see
#                               below), then the release build (target/release/ddshark).
#   scripts/setup.sh --test     also everything the test suite needs (scripts/test.sh calls
#                               this): tshark, tcpdump, namespaces tools, the real DDS traffic
#                               generator (Cyclone DDS venv, ddsperf, clang), tmux, Chromium,
#                               Prometheus, tcpreplay, cargo-fuzz, cargo-deb, and the real OpenTelemetry
#                               Collector + InfluxDB 2 + Telegraf + Grafana's dashboard linter
#                               (scripts/stack/build.sh, ~15 min the first time, cached afterwards).
#   --no-build                  skip the release build.
#
# Rust: the workspace needs rustc >= RUST_MIN (its dependencies declare it: tonic, darling,
# instability need 1.88). Debian 12's own rustc is 1.63, too old, so Rust comes from rustup:
# a missing or older toolchain is installed with rustup (sh.rustup.rs) into ~/.cargo.
# Idempotent: what is already there is kept. Needs root (apt-get) or sudo.
set -euo pipefail
LIB_TAG=setup
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

RUST_MIN=1.88

want_test=0
build=1
for a in "$@"; do
  case "$a" in
    --test) want_test=1 ;;
    --no-build) build=0 ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown option $a" ;;
  esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

# Building and running ddshark.
PACKAGES=(build-essential pkg-config libpcap-dev ca-certificates curl)
# The test suite only.
TEST_PACKAGES=(
  tshark tcpdump iproute2 ethtool iputils-ping     # oracle, live capture tests, namespaces
  cyclonedds-tools clang python3-venv              # real DDS traffic generator (tests/traffic)
  libfastrtps-dev fastddsgen g++                   # its Fast DDS part (tests/traffic/fastdds)
  jq tmux chromium python3-yaml                    # JSON checks, TUI test, HTML report test, dashboards
  prometheus prometheus-node-exporter              # the docker-free monitoring side (tests)
  openssl time                                     # OTLP TLS test, benches
  tcpreplay                                        # bench-live.sh: replays RTPS into a private veth
)
[ "$want_test" -eq 1 ] && PACKAGES+=("${TEST_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- Rust >= RUST_MIN ---------------------------------------------------------------
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"
rustc_version() { rustc --version 2>/dev/null | awk '{print $2}'; }
rust_ok() { # the active rustc is at least RUST_MIN
  local v; v=$(rustc_version)
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$RUST_MIN" "${v%%-*}" | sort -V | head -1)" = "$RUST_MIN" ]
}
if ! rust_ok; then
  have=$(rustc_version); have=${have:-none}
  say "ddshark needs Rust >= $RUST_MIN; found rustc $have ($(command -v rustc || echo 'not on PATH'))."
  say "Debian 12's own rustc (1.63) is too old; installing the stable toolchain with rustup into ~/.cargo"
  if command -v rustup >/dev/null; then
    rustup toolchain install stable --profile minimal && rustup default stable
  else
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  fi || true
  export PATH="$HOME/.cargo/bin:$PATH"
  if ! rust_ok; then
    die "still no Rust >= $RUST_MIN (rustc $(rustc_version || true)). Install it with
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y
and run scripts/setup.sh again."
  fi
fi
say "$(rustc --version)"
# rustfmt and clippy: the test suite's format and lint checks.
if [ "$want_test" -eq 1 ] && command -v rustup >/dev/null; then
  for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
  done
fi

if [ "$want_test" -eq 1 ]; then
  # The traffic generator's Python DDS (Cyclone DDS from PyPI).
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import cyclonedds' 2>/dev/null; then
    say "creating $VENV with cyclonedds"
    $SUDO python3 -m venv "$VENV"
    $SUDO "$VENV/bin/pip" install -q cyclonedds
  fi

  # cargo-fuzz (runs on the stable toolchain with RUSTC_BOOTSTRAP=1, see scripts/fuzz.sh).
  if ! command -v cargo-fuzz >/dev/null; then
    say "installing cargo-fuzz"
    cargo install -q --locked cargo-fuzz
  fi

  # cargo-deb: the Debian package the README documents (tests/deb/check.sh builds it).
  if ! command -v cargo-deb >/dev/null; then
    say "installing cargo-deb"
    cargo install -q --locked cargo-deb
  fi

  # The real OpenTelemetry Collector, InfluxDB 2, Telegraf and Grafana's dashboard linter
  # (pinned, cached in ~/.cache/ddshark-stack).
  scripts/stack/build.sh
fi

if [ "$build" -eq 1 ]; then
  cargo build --release -q -p ddshark
  say "ddshark built: target/release/ddshark"
fi
