"""The sources a workspace crate's binary is built from, as one sha256: the crate's and every
workspace crate's it depends on (transitively: Cargo.toml, build.rs, src/), the workspace's
Cargo.toml and Cargo.lock. A binary stamped with it is current while the digest stays the same,
whatever git did to the files' times (cargo's own check goes by those).

    python3 -m ddtools.build_stamp CRATE     prints the digest (exit 2: no such workspace crate)
"""
import hashlib
import os
import sys
import tomllib

from ddtools.paths import REPO_ROOT


def _toml(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def _path_deps(manifest, workspace_paths):
    """The workspace crates `manifest` depends on to build (normal and build dependencies), each
    as (path, whether the path is the workspace's, relative to the root, or the crate's own)."""
    deps = {}
    for table in ("dependencies", "build-dependencies"):
        deps.update(manifest.get(table, {}))
    for name, spec in deps.items():
        if not isinstance(spec, dict):
            continue
        from_workspace = bool(spec.get("workspace"))
        if from_workspace:
            spec = workspace_paths.get(spec.get("package", name), {})
        if isinstance(spec, dict) and "path" in spec:
            yield spec["path"], from_workspace


def crate_dirs(crate, root=REPO_ROOT):
    """The folders (relative to root) of `crate` and of every workspace crate it builds on."""
    workspace = _toml(os.path.join(root, "Cargo.toml"))
    workspace_deps = workspace.get("workspace", {}).get("dependencies", {})
    start = workspace_deps.get(crate, {})
    if not isinstance(start, dict) or "path" not in start:
        raise KeyError(f"{crate} is not a path crate of the workspace's [workspace.dependencies]")
    todo, seen = [os.path.normpath(start["path"])], set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        manifest = _toml(os.path.join(root, rel, "Cargo.toml"))
        for dep, from_workspace in _path_deps(manifest, workspace_deps):
            todo.append(os.path.normpath(dep if from_workspace else os.path.join(rel, dep)))
    return sorted(seen)


def source_files(crate, root=REPO_ROOT):
    files = ["Cargo.toml", "Cargo.lock"]
    for rel in crate_dirs(crate, root):
        for name in ("Cargo.toml", "build.rs"):
            if os.path.isfile(os.path.join(root, rel, name)):
                files.append(os.path.join(rel, name))
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, rel, "src")):
            dirnames.sort()
            for f in sorted(filenames):
                files.append(os.path.relpath(os.path.join(dirpath, f), root))
    return files


def digest(crate, root=REPO_ROOT):
    h = hashlib.sha256()
    for rel in source_files(crate, root):
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        print(digest(argv[0]))
    except KeyError as e:
        print(f"build_stamp: {e.args[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
