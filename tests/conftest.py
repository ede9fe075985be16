"""Markers follow the folder: tests/unit -> unit, tests/integration -> integration,
tests/containers -> containers (plus integration), tests/spark -> spark.

A failing real-cluster test keeps its nodes' logs in ``test-logs/<test>/`` (the clusters its
fixtures hold, those its own ``with`` blocks tore down -- kept by the launchers through
``KAFKA_CHAOS_FAILED_LOGS`` -- and the ``logs/`` of failed scenarios in its results), and its
report ends with the controllers' last lines: an intermittent failure is triaged from what the
brokers and the controller said, not guessed at."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline for the property tests: the test command runs them at the lowest CPU
# priority beside real clusters, where one example may wait seconds for a core, and Hypothesis's
# default 200 ms deadline then failed a correct test ("Unreliable test timings"). Speed targets
# belong in benchmarks, not in timed asserts.
settings.register_profile("kafka-chaos", deadline=None)
settings.load_profile("kafka-chaos")

_REPORT_CACHE_ENV = "KAFKA_CHAOS_REPORT_CACHE"
_report_cache: list[str] = []
_FAILED_LOGS_ENV = "KAFKA_CHAOS_FAILED_LOGS"  # kafka_chaos.harness.node_logs.FAILED_LOGS_ENV
_failed_logs: list[str] = []
_TEST_LOGS = Path(__file__).parents[1] / "test-logs"
_CLUSTER_FOLDERS = ("integration", "containers")
_TAIL_LINES = 25
_kept_before = pytest.StashKey[frozenset[str]]()

_FOLDER_MARKERS = {
    "unit": ("unit",),
    "integration": ("integration",),
    "containers": ("containers", "integration"),
    "spark": ("spark",),
}


def pytest_configure(config: pytest.Config) -> None:
    """The reports the tests write keep their partials in a cache of the session's own (the
    `kafka-chaos` processes the tests start inherit it), not among the user's: their inputs are
    temp files, never read again. Clusters torn down by an exception keep their logs in a
    directory of the session's own, for :func:`pytest_runtest_makereport`."""
    if _REPORT_CACHE_ENV not in os.environ:
        _report_cache.append(tempfile.mkdtemp(prefix="kafka-chaos-test-report-cache-"))
        os.environ[_REPORT_CACHE_ENV] = _report_cache[0]
    if _FAILED_LOGS_ENV not in os.environ:
        _failed_logs.append(tempfile.mkdtemp(prefix="kafka-chaos-failed-logs-"))
        os.environ[_FAILED_LOGS_ENV] = _failed_logs[0]


def pytest_unconfigure(config: pytest.Config) -> None:
    for directory in _report_cache + _failed_logs:
        shutil.rmtree(directory, ignore_errors=True)


def _folder(item: pytest.Item) -> str | None:
    try:
        return Path(item.fspath).relative_to(Path(__file__).parent).parts[0]
    except ValueError:
        return None


def _kept_by_launchers() -> frozenset[str]:
    root = os.environ.get(_FAILED_LOGS_ENV)
    return frozenset(os.listdir(root)) if root and os.path.isdir(root) else frozenset()


def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_kept_before] = _kept_by_launchers()


def _keep_logs(item: pytest.Item, target: Path) -> list[Path]:
    """Every log of ``item``'s clusters into ``target``: what its fixtures' clusters hold now,
    what the launchers kept of clusters torn down during it, failed scenarios' ``logs/``."""
    from kafka_chaos.harness.node_logs import copy_node_logs

    kept: list[Path] = []
    for name, value in getattr(item, "funcargs", {}).items():
        if callable(getattr(value, "log_files", None)):
            try:
                kept += copy_node_logs(value, target / name)
            except Exception as exc:  # noqa: BLE001 - a cluster already gone: what was kept stays
                print(f"keeping the logs of fixture {name}: {exc}")
    root = os.environ.get(_FAILED_LOGS_ENV)
    for name in sorted(_kept_by_launchers() - item.stash.get(_kept_before, frozenset())):
        shutil.move(os.path.join(str(root), name), target / name)
        kept += sorted((target / name).iterdir())
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    for scenario_logs in sorted(Path(tmp).glob("**/logs/*/")) if isinstance(tmp, Path) else []:
        copy = target / "scenarios" / scenario_logs.name
        shutil.copytree(scenario_logs, copy, dirs_exist_ok=True)
        kept += sorted(copy.iterdir())
    return kept


def _tails(files: list[Path]) -> str:
    """The last lines of what the controllers said: each broker's controller and state-change
    log, each KRaft controller's log."""
    parts = []
    for path in files:
        if path.name.endswith(("-controller.log", "-state-change.log")) or path.name.startswith("controller-"):
            lines = path.read_text(errors="replace").splitlines()[-_TAIL_LINES:]
            parts.append(f"--- {path} (last {len(lines)} lines)\n" + "\n".join(lines))
    return "\n".join(parts)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if not report.failed or report.when not in ("setup", "call") or _folder(item) not in _CLUSTER_FOLDERS:
        return
    target = _TEST_LOGS / item.nodeid.replace("/", "_").replace("::", "-").replace("[", "_").replace("]", "")
    kept = _keep_logs(item, target)
    if kept:
        report.sections.append(("kept node logs", f"{len(kept)} file(s) in {target}\n{_tails(kept)}"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in _FOLDER_MARKERS.get(_folder(item) or "", ()):
            item.add_marker(marker)
