"""The oracle is pure: no I/O, clocks, randomness, processes, or harness/client libraries."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ORACLE = Path(__file__).resolve().parents[3] / "oracle"
FORBIDDEN = {
    "harness", "scenarios", "results", "cli", "kazoo", "confluent_kafka", "testcontainers", "pyspark", "tenacity",
    "socket", "time", "datetime", "os", "sys", "io", "pathlib", "shutil", "tempfile", "subprocess", "threading",
    "multiprocessing", "asyncio", "random", "secrets", "uuid", "logging", "signal", "select", "urllib", "http",
}


def _imported_roots(source: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_oracle_modules_import_nothing_impure():
    files = sorted(ORACLE.glob("*.py"))
    assert {f.name for f in files} >= {"selectors.py", "election.py", "state.py", "events.py", "controller.py", "jsonio.py"}
    for path in files:
        bad = _imported_roots(path.read_text()) & FORBIDDEN
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_importing_oracle_pulls_in_no_client_library():
    code = (
        "import sys, oracle, oracle.jsonio; "
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'harness','kazoo','confluent_kafka','socket','testcontainers','pyspark','tenacity'})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ORACLE.parent, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
