"""Imports go one way: every import in kafka_chaos (function-local ones included) points to a
layer below its own, and inside ``scenarios`` to a room listed before its own."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "kafka_chaos"

# layer -> the layers it may import (its own always)
LAYERS: dict[str, frozenset[str]] = {
    "common": frozenset(),
    "oracle": frozenset({"common"}),
    "records": frozenset({"common"}),
    "harness": frozenset({"common"}),
    "scenarios": frozenset({"common", "oracle", "records", "harness"}),
    "results": frozenset({"common", "records", "scenarios"}),
    "benches": frozenset({"common", "oracle", "records", "harness", "scenarios"}),
    "pytest_plugin": frozenset({"common", "oracle", "records", "harness", "scenarios"}),
    "app": frozenset({"common", "oracle", "records", "harness", "scenarios", "results"}),
    "cli": frozenset({"common", "oracle", "records", "harness", "scenarios", "results", "benches", "app"}),
}
# scenarios' rooms -> the rooms they may import
ROOMS: dict[str, frozenset[str]] = {
    "model": frozenset(),
    "faults": frozenset({"model"}),
    "plans": frozenset({"model", "faults"}),
    "clients": frozenset({"model"}),
    "history": frozenset({"model", "clients"}),
    "checks": frozenset({"model", "clients", "history"}),
    "run": frozenset({"model", "faults", "plans", "clients", "history", "checks"}),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    """Every module ``path`` imports from kafka_chaos, with its line (relative imports resolved)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield node.lineno, module
            # `from kafka_chaos.scenarios import checks` imports the room itself
            yield from ((node.lineno, f"{module}.{alias.name}") for alias in node.names
                        if (PACKAGE.parent / f"{module}.{alias.name}".replace(".", "/")).is_dir())


def upward(importer: str, imported: str) -> str | None:
    """Why ``importer`` must not import ``imported``, or None when the arrow points down."""
    if not imported.startswith("kafka_chaos."):
        return None
    mine, theirs = importer.split("."), imported.split(".")
    if len(mine) < 2 or len(theirs) < 2:
        return None
    if mine[1] != theirs[1]:
        allowed = LAYERS.get(mine[1])
        if allowed is None or theirs[1] not in LAYERS:
            return f"layer {mine[1]!r} or {theirs[1]!r} has no place in LAYERS"
        return None if theirs[1] in allowed else f"{mine[1]} may not import {theirs[1]}"
    if mine[1] == "scenarios" and len(mine) > 2 and len(theirs) > 2 and mine[2] != theirs[2]:
        room, other = mine[2], theirs[2]
        if room not in ROOMS or other not in ROOMS:
            return f"room {room!r} or {other!r} of scenarios has no place in ROOMS"
        return None if other in ROOMS[room] else f"scenarios.{room} may not import scenarios.{other}"
    return None


@pytest.mark.parametrize("importer, imported, verdict", [
    ("kafka_chaos.scenarios.run.step", "kafka_chaos.harness.local.cluster", None),
    ("kafka_chaos.results.timeline", "kafka_chaos.harness.zkevents", "results may not import harness"),
    ("kafka_chaos.scenarios.checks.registry", "kafka_chaos.results.schema", "scenarios may not import results"),
    ("kafka_chaos.oracle.state", "kafka_chaos.scenarios.model.targets", "oracle may not import scenarios"),
    ("kafka_chaos.scenarios.history.observations", "kafka_chaos.scenarios.checks.functions",
     "scenarios.history may not import scenarios.checks"),
    ("kafka_chaos.scenarios.checks.registry", "kafka_chaos.scenarios.history.observations", None),
    ("kafka_chaos.scenarios.model.targets", "kafka_chaos.scenarios.model.snapshots", None),
    ("kafka_chaos.scenarios.run.step", "confluent_kafka", None),
    ("kafka_chaos.scenarios.newroom.x", "kafka_chaos.scenarios.model.targets",
     "room 'newroom' or 'model' of scenarios has no place in ROOMS"),
])
def test_the_rule(importer: str, imported: str, verdict: str | None) -> None:
    assert upward(importer, imported) == verdict


def test_every_import_points_down() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 100
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {imported}: {why}"
                 for path in files for line, imported in imports_of(path)
                 if (why := upward(module_name(path), imported)) is not None]
    assert not offenders, "\n".join(offenders)


def test_the_readme_maps_every_folder_of_the_package_and_no_other() -> None:
    readme = (PACKAGE.parent / "README.md").read_text()
    table = readme[readme.index("## Layout"):]
    table = table[:table.index("\n## ", 1)]
    mapped = {line.split("`")[1].rstrip("/") for line in table.splitlines()
              if line.startswith("| `kafka_chaos")}
    folders = {str(p.relative_to(PACKAGE.parent)) for p in [PACKAGE, *PACKAGE.rglob("*")]
               if p.is_dir() and (p / "__init__.py").is_file()}
    assert mapped == folders
