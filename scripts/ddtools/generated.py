"""Files generated from others (grafana/build_dashboards.py, flux-queries/build_adhoc.py):
written when they differ, or with --check only compared."""
import os
import sys


def write_generated(files, argv, generator):
    """files: {path: text}. Writes each file whose text differs and names it on stderr; with
    --check in argv writes nothing and names the stale ones. Returns the exit status (1: stale)."""
    check = "--check" in argv
    stale = []
    for path, text in files.items():
        old = open(path).read() if os.path.exists(path) else None
        if old == text:
            continue
        if check:
            stale.append(path)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
        print(f"wrote {path}", file=sys.stderr)
    if stale:
        print(f"out of date (run {generator}): " + " ".join(stale), file=sys.stderr)
        return 1
    return 0
