"""The oracle is pure: no I/O, clocks, randomness, processes, or harness/client libraries."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ORACLE = ROOT / "kafka_chaos" / "oracle"
FORBIDDEN = {
    "harness", "scenarios", "results", "cli", "kazoo", "confluent_kafka", "testcontainers", "pyspark", "tenacity",
    "socket", "time", "datetime", "os", "sys", "io", "pathlib", "shutil", "tempfile", "subprocess", "threading",
    "multiprocessing", "asyncio", "random", "secrets", "uuid", "logging", "signal", "select", "urllib", "http",
}


def _root(module: str) -> str:
    """A module's top-level package, or its layer inside kafka_chaos (``kafka_chaos.harness.x``: harness)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "kafka_chaos" and len(parts) > 1 else parts[0]


def _imported_roots(source: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(_root(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(_root(node.module))
    return roots


def test_oracle_modules_import_nothing_impure():
    files = sorted(ORACLE.glob("*.py"))
    assert {f.name for f in files} >= {"selectors.py", "election.py", "state.py", "events.py", "controller.py", "jsonio.py"}
    for path in files:
        bad = _imported_roots(path.read_text()) & FORBIDDEN
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_importing_oracle_pulls_in_no_client_library():
    code = (
        "import sys, kafka_chaos.oracle, kafka_chaos.oracle.jsonio; "
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'kazoo','confluent_kafka','socket','testcontainers','pyspark','tenacity'} "
        "or m.startswith(('kafka_chaos.harness', 'kafka_chaos.scenarios')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
