"""Markers follow the folder: tests/unit -> unit, tests/integration -> integration,
tests/containers -> containers (plus integration), tests/spark -> spark."""

from __future__ import annotations

from pathlib import Path

import pytest

_FOLDER_MARKERS = {
    "unit": ("unit",),
    "integration": ("integration",),
    "containers": ("containers", "integration"),
    "spark": ("spark",),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_root = Path(__file__).parent
    for item in items:
        try:
            folder = Path(item.fspath).relative_to(tests_root).parts[0]
        except ValueError:
            continue
        for marker in _FOLDER_MARKERS.get(folder, ()):
            item.add_marker(marker)
