#!/usr/bin/env bash
# The Debian package the README documents: `cargo deb -p ddshark` (cargo-deb, installed by
# scripts/setup.sh --test) packs the binary of a cargo profile, release by default (`--profile
# tuned` packs the fat-LTO build instead; only the binary differs, so CI checks the release one
# the test run has built already rather than spend ~6 minutes on a fat-LTO link); the .deb must
# carry /usr/bin/ddshark, depend on libpcap and on setcap's package, give the binary its capture
# capabilities in postinst, and the binary inside it must run.
#   usage: tests/deb/check.sh [PROFILE]     (release; builds `cargo build --profile PROFILE -p ddshark` if needed)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
LIB_TAG="deb check"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

command -v cargo-deb >/dev/null ||
  die "cargo-deb not found: cargo install --locked cargo-deb (scripts/setup.sh --test installs it)"
profile=${1:-release}
cargo build --profile "$profile" -q -p ddshark

rm -rf target/debian
# With --profile, cargo-deb reads the asset target/release/ddshark from target/PROFILE.
cargo deb -p ddshark --profile "$profile" --no-build --no-strip -q >/dev/null
shopt -s nullglob
debs=(target/debian/ddshark_*.deb)
[ ${#debs[@]} -eq 1 ] || die "expected one target/debian/ddshark_*.deb, found ${#debs[@]}"
deb=${debs[0]}

info=$(dpkg-deb --info "$deb")
grep -q '^ Package: ddshark$' <<<"$info" || die "$deb: no 'Package: ddshark'"
depends=$(dpkg-deb --field "$deb" Depends)
for want in libpcap0.8 libcap2-bin; do
  grep -q "$want" <<<"$depends" || die "$deb: Depends ($depends) lacks $want"
done
grep -q ' postinst$\| postinst ' <<<"$info" || die "$deb: no postinst"

contents=$(dpkg-deb --contents "$deb")
grep -qE '^-rwxr-xr-x .* \./usr/bin/ddshark$' <<<"$contents" || die "$deb: no executable ./usr/bin/ddshark"

work=$(mktemp -d /tmp/ddshark-deb-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
dpkg-deb --control "$deb" "$work/DEBIAN"
grep -q 'setcap cap_net_raw,cap_net_admin=eip /usr/bin/ddshark' "$work/DEBIAN/postinst" ||
  die "$deb: postinst does not setcap the binary"
dpkg-deb --extract "$deb" "$work/root"
version=$("$work/root/usr/bin/ddshark" --version) || die "the packaged binary does not run"
cmp -s "$work/root/usr/bin/ddshark" "target/$profile/ddshark" || die "the packaged binary is not target/$profile/ddshark"

echo "deb check: $deb ($(stat -c %s "$deb") bytes): $version, Depends: $depends, postinst sets the capture capabilities"
