"""The control socket's address, shared by the daemon and the harness (no FUSE import here:
the harness imports this on machines without libfuse3)."""

from __future__ import annotations

import os


def connect_path(path: str) -> str:
    """A name for ``path`` short enough for a Unix socket address (108 bytes): through an open
    descriptor of its directory when the path is long. The descriptor stays open (one per call
    with a long path: a handful per mount's life)."""
    if len(path.encode()) < 100:
        return path
    directory = os.open(os.path.dirname(path) or ".", os.O_PATH)
    return f"/proc/self/fd/{directory}/{os.path.basename(path)}"
