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
#                               Collector + InfluxDB 2 + Grafana's dashboard linter
#                               (scripts/stack/build.sh, ~15 min the first time, cached afterwards),
#                               and the aarch64 cross build's parts (Debian's cross gcc, arm64
#                               libpcap through dpkg's multiarch, qemu-user to run the result,
#                               rustup's aarch64-unknown-linux-gnu target; .cargo/config.toml).
#   --no-build                  skip the release build.
#
# Rust: the workspace needs rustc >= RUST_MIN (its dependencies declare it: tonic, darling,
# instability need 1.88). Debian 12's own rustc is 1.63, too old, so Rust comes from rustup:
# a missing or older toolchain is installed with rustup (sh.rustup.rs) into ~/.cargo.
# Idempotent: what is already there is kept. Needs root (apt-get) or sudo.
# Each step that does work prints its time, and the run closes with a table of them.
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

# took NAME T0: NAME's time since T0 (a $SECONDS), printed and kept for the closing table
setup_t0=$SECONDS
setup_times=()
took() {
  setup_times+=("$(printf '%6ss  %s' $((SECONDS - $2)) "$1")")
  say "$1: $((SECONDS - $2)) s"
}

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
  # the aarch64 cross build (scripts/test.sh): linker, C library, arm64 libpcap, and qemu-user
  # to run the binary it makes
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross libpcap-dev:arm64 qemu-user file
)
[ "$want_test" -eq 1 ] && PACKAGES+=("${TEST_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  t0=$SECONDS
  # libpcap-dev:arm64 comes from dpkg's multiarch: arm64 packages next to the amd64 ones.
  if [ "$want_test" -eq 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    say "adding the arm64 architecture to dpkg (the cross build's libpcap-dev:arm64)"
    $SUDO dpkg --add-architecture arm64
  fi
  say "installing ${missing[*]}"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  took "apt packages (${#missing[@]})" "$t0"
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
  t0=$SECONDS
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
  took "Rust toolchain (rustup)" "$t0"
fi
say "$(rustc --version)"
# rustfmt and clippy: the test suite's format and lint checks; the aarch64 target: its cross build.
if [ "$want_test" -eq 1 ]; then
  command -v rustup >/dev/null || die "rustup not found: the test suite needs rustfmt, clippy and the aarch64 target from it"
  for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
  done
  rustup target list --installed | grep -qx aarch64-unknown-linux-gnu || rustup target add aarch64-unknown-linux-gnu
fi

if [ "$want_test" -eq 1 ]; then
  # The traffic generator's Python DDS (Cyclone DDS from PyPI).
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import cyclonedds' 2>/dev/null; then
    say "creating $VENV with cyclonedds"
    t0=$SECONDS
    $SUDO python3 -m venv "$VENV"
    $SUDO "$VENV/bin/pip" install -q cyclonedds
    took "cyclonedds venv" "$t0"
  fi

  # cargo-fuzz (runs on the stable toolchain with RUSTC_BOOTSTRAP=1, see scripts/fuzz.sh).
  if ! command -v cargo-fuzz >/dev/null; then
    say "installing cargo-fuzz"
    t0=$SECONDS
    cargo install -q --locked cargo-fuzz
    took "cargo install cargo-fuzz" "$t0"
  fi

  # cargo-deb: the Debian package the README documents (tests/deb/check.sh builds it).
  if ! command -v cargo-deb >/dev/null; then
    say "installing cargo-deb"
    t0=$SECONDS
    cargo install -q --locked cargo-deb
    took "cargo install cargo-deb" "$t0"
  fi

  # The real OpenTelemetry Collector, InfluxDB 2 and Grafana's dashboard linter
  # (pinned, cached in ~/.cache/ddshark-stack).
  t0=$SECONDS
  scripts/stack/build.sh
  took "the stack (scripts/stack/build.sh; each part's time above)" "$t0"
fi

if [ "$build" -eq 1 ]; then
  t0=$SECONDS
  cargo build --release -q -p ddshark
  took "release build" "$t0"
  say "ddshark built: target/release/ddshark"
fi

say "setup done in $((SECONDS - setup_t0)) s"
if [ ${#setup_times[@]} -gt 0 ]; then
  say "setup step times (steps with nothing to do are not listed):"
  printf '%s\n' "${setup_times[@]}" >&2
fi
