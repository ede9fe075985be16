"""Markers follow the folder: tests/unit -> unit, tests/integration -> integration,
tests/containers -> containers (plus integration), tests/spark -> spark."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_REPORT_CACHE_ENV = "KAFKA_CHAOS_REPORT_CACHE"
_report_cache: list[str] = []

_FOLDER_MARKERS = {
    "unit": ("unit",),
    "integration": ("integration",),
    "containers": ("containers", "integration"),
    "spark": ("spark",),
}


def pytest_configure(config: pytest.Config) -> None:
    """The reports the tests write keep their partials in a cache of the session's own (the
    `kafka-chaos` processes the tests start inherit it), not among the user's: their inputs are
    temp files, never read again."""
    if _REPORT_CACHE_ENV not in os.environ:
        _report_cache.append(tempfile.mkdtemp(prefix="kafka-chaos-test-report-cache-"))
        os.environ[_REPORT_CACHE_ENV] = _report_cache[0]


def pytest_unconfigure(config: pytest.Config) -> None:
    for directory in _report_cache:
        shutil.rmtree(directory, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_root = Path(__file__).parent
    for item in items:
        try:
            folder = Path(item.fspath).relative_to(tests_root).parts[0]
        except ValueError:
            continue
        for marker in _FOLDER_MARKERS.get(folder, ()):
            item.add_marker(marker)
