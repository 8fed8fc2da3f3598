"""A running stack (scripts/stack/start.sh): its environment, starting and stopping a
private one, and its Prometheus."""
import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request

from . import say_as
from .paths import STACK_SCRIPTS

say = say_as("stack")


def read_env(path):
    """`export NAME='value'` lines of a stack.env as {NAME: value}."""
    env = {}
    with open(path) as fh:
        for line in fh:
            m = re.match(r"export (\w+)='(.*)'$", line.strip())
            if m:
                env[m.group(1)] = m.group(2)
    return env


def start(run_dir, *flags, env=None):
    """scripts/stack/start.sh --auto-ports --run-dir RUN_DIR FLAGS (env: more variables for
    it); returns the stack's environment. SystemExit, with start.sh's messages, when it
    does not start."""
    p = subprocess.run([os.path.join(STACK_SCRIPTS, "start.sh"), "--auto-ports", "--run-dir", run_dir,
                        *flags], env=dict(os.environ, **(env or {})), capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{p.stderr}the stack did not start in {run_dir} (build it with "
                         f"scripts/stack/build.sh); failing")
    return read_env(os.path.join(run_dir, "stack.env"))


def stop(run_dir, purge=False):
    """scripts/stack/stop.sh --run-dir RUN_DIR (--purge: its data too)."""
    subprocess.run([os.path.join(STACK_SCRIPTS, "stop.sh"), "--run-dir", run_dir,
                    *(["--purge"] if purge else [])], capture_output=True, text=True)


@contextlib.contextmanager
def private(run_dir_var, *flags, keep=False, failed=lambda: False, env=None):
    """A private stack for one run (start.sh --auto-ports FLAGS) in the run dir the
    environment variable run_dir_var names, else in a new /tmp/ddshark-stack-* (two runs must
    not share one); yields its environment. At the end it is stopped, unless keep, and its
    data and a run dir made here removed, unless the run failed (an exception, or failed()
    says so: then its logs stay, and where is said)."""
    run_dir = os.environ.get(run_dir_var)
    made = not run_dir
    if made:
        run_dir = tempfile.mkdtemp(prefix="ddshark-stack-")
    say(f"starting a private stack in {run_dir}")
    stack_env = start(run_dir, *flags, env=env)
    passed = False
    try:
        yield stack_env
        passed = not failed()
    finally:
        if keep:
            say(f"the stack keeps running in {run_dir} (scripts/stack/stop.sh --run-dir {run_dir})")
        elif not passed:
            stop(run_dir)
            say(f"stopped; its logs are in {run_dir}/logs")
        else:
            stop(run_dir, purge=True)
            if made:
                shutil.rmtree(run_dir, ignore_errors=True)


def prom_query_range(url, expr, start, end, step=15):
    """PromQL over [start, end] (s since the epoch): Prometheus' result list."""
    q = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"{url}/api/v1/query_range?{q}", timeout=60) as r:
        data = json.load(r)
    if data.get("status") != "success":
        raise RuntimeError(str(data))
    return data["data"]["result"]


def prom_series(url, match):
    """The series Prometheus has that match."""
    q = urllib.parse.urlencode({"match[]": match})
    with urllib.request.urlopen(f"{url}/api/v1/series?{q}", timeout=60) as r:
        return json.load(r)["data"]
