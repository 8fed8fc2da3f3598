#!/usr/bin/env bash
# The stack demo as a newcomer meets it: a private stack, scripts/stack/demo.sh replaying a
# bundled capture retimed to now, every dashboard opened as Grafana opens it and required to
# show data. See `tests/flux/demo.sh --help` (tests/flux/democheck.py).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
cd "$REPO_ROOT"
exec python3 tests/flux/democheck.py "$@"
