"""Where things are: the repository's folders, and the machine's folders with the one
default each (the same variables and defaults as scripts/lib.sh)."""
import os

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PCAPS = os.path.join(REPO_ROOT, "tests", "pcaps")
FLUX_DIR = os.path.join(REPO_ROOT, "flux-queries")
DASH_DIR = os.path.join(REPO_ROOT, "grafana", "dashboards")
PROV_DIR = os.path.join(REPO_ROOT, "grafana", "provisioning")
STACK_SCRIPTS = os.path.join(REPO_ROOT, "scripts", "stack")
SPAN_SCHEMA_JSON = os.path.join(STACK_SCRIPTS, "span_schema.json")
# The stack's build cache (bin/ with otelcol, influxd, ...).
STACK_DIR = os.environ.get("DDSHARK_STACK_DIR") or os.path.expanduser("~/.cache/ddshark-stack")
