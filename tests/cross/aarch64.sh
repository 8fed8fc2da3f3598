#!/usr/bin/env bash
# The aarch64 build (ECUs are ARM, issue 36): ddshark cross-compiled with Debian's cross gcc
# against the arm64 libpcap (.cargo/config.toml names the linker and the cross pkg-config;
# scripts/setup.sh --test installs them), checked to be an aarch64 ELF, then run under qemu-user:
# its --version and `ddshark stats` (JSON and text) on bundled fixtures must equal, byte for
# byte, what the x86_64 binary prints.
#   usage: tests/cross/aarch64.sh [X86_64_DDSHARK]     [target/release/ddshark]
# The debug profile: the release profile's fat LTO would add minutes for no more checking.
set -euo pipefail
LIB_TAG=aarch64
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
cd "$REPO_ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
TARGET=aarch64-unknown-linux-gnu
target_dir=${CARGO_TARGET_DIR:-target}
host_bin=${1:-$target_dir/release/ddshark}
need_ddshark "$host_bin"
need_tools aarch64-linux-gnu-gcc aarch64-linux-gnu-pkg-config qemu-aarch64 file
rustup target list --installed | grep -qx "$TARGET" ||
  die "the Rust target $TARGET is missing: rustup target add $TARGET (scripts/setup.sh --test)"

t0=$SECONDS
cargo build -q --target "$TARGET" -p ddshark
bin=$target_dir/$TARGET/debug/ddshark
say "cross build: $((SECONDS - t0)) s"
kind=$(file -b "$bin")
say "$bin: $kind"
grep -q '^ELF 64-bit LSB .*ARM aarch64' <<<"$kind" || die "$bin is not an aarch64 ELF: $kind"

# qemu-aarch64 runs it with the arm64 dynamic loader and libraries that multiarch installed.
work=$(mktemp -d /tmp/ddshark-aarch64.XXXXXX)
trap 'rm -rf "$work"' EXIT
compare() { # compare NAME ARGS...: the two binaries' stdout and exit status must be equal
  local name=$1 rc_host=0 rc_arm=0
  shift
  "$host_bin" "$@" >"$work/$name.x86_64" 2>"$work/$name.x86_64.err" || rc_host=$?
  qemu-aarch64 "$bin" "$@" >"$work/$name.aarch64" 2>"$work/$name.aarch64.err" || rc_arm=$?
  if [ "$rc_host" != 0 ] || [ "$rc_arm" != 0 ]; then
    cat "$work/$name.x86_64.err" "$work/$name.aarch64.err" >&2
    die "$name: exit status x86_64 $rc_host, aarch64 $rc_arm (want 0 and 0)"
  fi
  if ! cmp -s "$work/$name.x86_64" "$work/$name.aarch64"; then
    diff -u "$work/$name.x86_64" "$work/$name.aarch64" | head -40 >&2
    die "$name: the aarch64 output differs from the x86_64 one"
  fi
  say "$name: identical ($(wc -c <"$work/$name.x86_64") bytes)"
}
compare version --version
for f in d_rustdds_interop/a.pcap b_large_frag/a.pcap l_fastdds_tcp/a.pcap; do
  [ -f "$FIXTURES/$f" ] || die "missing fixture $FIXTURES/$f"
  name=${f%.pcap}
  name=${name//\//-}
  compare "stats-json-$name" stats -q "$FIXTURES/$f"
  compare "stats-text-$name" stats -q --format text --ros "$FIXTURES/$f"
done
say "ok: aarch64 build runs and prints what x86_64 prints (in $((SECONDS - t0)) s)"
