#!/usr/bin/env bash
# Proves that a restructuring changes no output: runs `ddshark stats` (json, text, text --ros),
# `ddshark dissect` (text, jsonl) on every fixture under tests/pcaps and `ddshark latency`
# (text, tsv, json, jsonl, html; submessage level) on every two-host pair (a.pcap -> b.pcap),
# then compares the sha256 of every output (stdout, stderr and exit code) between two builds.
#
#   scripts/check-outputs.sh --base HEAD~1        build that revision's binary in a scratch worktree
#                                                 (target/check-outputs/src), compare with this tree's
#   scripts/check-outputs.sh --save FILE          write this tree's manifest to FILE
#   scripts/check-outputs.sh --against FILE       compare this tree's outputs with a saved manifest
#   --bin PATH                                    use PATH as this tree's binary (default: build
#                                                 target/debug/ddshark with cargo)
# Exit 0 = every output identical; 1 = a difference (each one named, with the first lines of a diff
# when both outputs are on disk).
set -euo pipefail
LIB_TAG=check-outputs
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

base_rev='' save='' against='' bin=''
while [ $# -gt 0 ]; do
    case "$1" in
        --base) base_rev=${2:?--base needs a revision}; shift 2 ;;
        --save) save=${2:?--save needs a file}; shift 2 ;;
        --against) against=${2:?--against needs a file}; shift 2 ;;
        --bin) bin=${2:?--bin needs a path}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage_error "unknown argument '$1'" ;;
    esac
done
[ -n "$base_rev$save$against" ] || die "say what to compare: --base REV, --save FILE or --against FILE"
[ -z "$against" ] || [ -f "$against" ] || die "--against: no such manifest '$against'"

export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
scratch="$REPO_ROOT/target/check-outputs"
mkdir -p "$scratch"
pcaps="$FIXTURES"

# run_all BIN OUTDIR: every output of BIN into OUTDIR (one file per command and stream).
run_all() {
    local bin=$1 out=$2 f name dir
    rm -rf "$out"
    mkdir -p "$out"
    run() { # run NAME ARGS...: stdout, stderr and the exit code of one command
        local n=$1
        shift
        local rc=0
        (cd "$out" && "$bin" "$@" >"$n.out" 2>"$n.err") || rc=$?
        echo "$rc" >"$out/$n.rc"
    }
    while IFS= read -r f; do
        name=${f#"$pcaps"/}
        name=${name//\//_}
        run "stats-json-$name" stats -q "$f"
        run "stats-text-$name" stats -q --format text "$f"
        run "stats-text-ros-builtin-$name" stats -q --format text --ros --builtin "$f"
        run "dissect-text-$name" dissect "$f"
        run "dissect-jsonl-$name" dissect --format jsonl "$f"
    done < <(find "$pcaps" -name '*.pcap' -o -name '*.pcapng' | LC_ALL=C sort)
    while IFS= read -r dir; do
        name=${dir#"$pcaps"/}
        [ -f "$dir/b.pcap" ] || continue
        for fmt in text tsv json jsonl; do
            run "latency-$fmt-$name" latency --format "$fmt" "$dir/a.pcap" "$dir/b.pcap"
        done
        run "latency-sub-tsv-$name" latency --level submessage --format tsv "$dir/a.pcap" "$dir/b.pcap"
        run "latency-html-$name" latency --summary --html "latency-$name.html" "$dir/a.pcap" "$dir/b.pcap"
    done < <(find "$pcaps" -name a.pcap -printf '%h\n' | LC_ALL=C sort)
    if [ -f "$pcaps/i_late_start/discovery.pcap" ]; then
        run latency-text-discovery-i_late_start latency --discovery "$pcaps/i_late_start/discovery.pcap" \
            "$pcaps/i_late_start/a.pcap" "$pcaps/i_late_start/b.pcap"
    fi
}

# manifest OUTDIR: "sha256  name" per output, sorted
manifest() { (cd "$1" && LC_ALL=C find . -type f -printf '%P\n' | LC_ALL=C sort | xargs sha256sum); }

# The base is fixed before anything runs (a branch such as main may move meanwhile). Compare a
# restructuring commit with its parent (--base HEAD~1), not with a main that has moved on.
rev=''
if [ -n "$base_rev" ]; then
    rev=$(git -C "$REPO_ROOT" rev-parse --verify "$base_rev^{commit}") || die "--base: unknown revision '$base_rev'"
fi

if [ -z "$bin" ]; then
    say "building this tree's ddshark"
    (cd "$REPO_ROOT" && cargo build -q -p ddshark --bin ddshark)
    bin="$REPO_ROOT/target/debug/ddshark"
fi
[ -x "$bin" ] || die "no binary at '$bin'"
# A copy: the binary under test cannot change while the script runs.
cp "$bin" "$scratch/ddshark-head.new"
mv -f "$scratch/ddshark-head.new" "$scratch/ddshark-head"
bin="$scratch/ddshark-head"

say "running $bin on every fixture"
run_all "$bin" "$scratch/head"
manifest "$scratch/head" >"$scratch/head.sha256"
say "$(wc -l <"$scratch/head.sha256") outputs"

if [ -n "$save" ]; then
    cp "$scratch/head.sha256" "$save"
    say "manifest saved to $save"
fi

compare() { # compare BASE_MANIFEST BASE_DIR(or empty)
    local base_manifest=$1 base_dir=$2 diffs
    diffs=$(diff <(cat "$base_manifest") "$scratch/head.sha256" | sed -n 's/^[<>] [0-9a-f]*  //p' | LC_ALL=C sort -u || true)
    if [ -z "$diffs" ]; then
        say "outputs unchanged ($(wc -l <"$scratch/head.sha256") outputs identical)"
        return 0
    fi
    say "outputs differ:"
    local n
    for n in $diffs; do
        echo "  $n" >&2
        if [ -n "$base_dir" ] && [ -f "$base_dir/$n" ] && [ -f "$scratch/head/$n" ]; then
            diff "$base_dir/$n" "$scratch/head/$n" | head -8 | sed 's/^/      /' >&2 || true
        fi
    done
    return 1
}

status=0
if [ -n "$against" ]; then
    compare "$against" '' || status=1
fi
if [ -n "$rev" ]; then
    src="$scratch/src"
    if [ ! -e "$src/.git" ]; then
        git -C "$REPO_ROOT" worktree add --detach "$src" "$rev" >/dev/null 2>&1 \
            || die "cannot make a worktree at $src"
    fi
    git -C "$src" checkout -q --detach "$rev"
    say "building $base_rev ($(git -C "$src" log -1 --format='%h %s' | cut -c1-60)) in $src"
    # Its own target dir (kept between runs): sharing this tree's would leave target/debug/ddshark
    # pointing at whichever build came last.
    (cd "$src" && CARGO_TARGET_DIR="$scratch/target" cargo build -q -p ddshark --bin ddshark) \
        || die "building $base_rev failed"
    base_bin="$scratch/target/debug/ddshark"
    say "running $base_rev's ddshark on every fixture"
    run_all "$base_bin" "$scratch/base"
    manifest "$scratch/base" >"$scratch/base.sha256"
    compare "$scratch/base.sha256" "$scratch/base" || status=1
fi
exit "$status"
