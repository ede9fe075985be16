"""The failover scaling chart of ``kafka-chaos bench failover``: each phase's median
time against the partition count, log-log, one panel per fault (matplotlib, headless)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def scaling_chart(cells: Sequence[Any], phases: Sequence[str], faults: Sequence[str], path: Path,
                  title: str = "Where a leader switch spends its time") -> Path:
    """``cells``: :class:`benches.failover.Cell` rows (fault, brokers, partitions,
    phase, median_ms, p99_ms, and ``label``: the fault and its launcher when not local);
    ``faults``: the labels to draw, one panel each, in order.  Writes a PNG; phases with no
    positive value are left out (a log axis cannot show 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [f for f in faults if any(c.label == f for c in cells)]
    fig, axes = plt.subplots(1, max(1, len(shown)), figsize=(5.5 * max(1, len(shown)), 4.6), squeeze=False)
    for ax, fault in zip(axes[0], shown):
        for brokers in sorted({c.brokers for c in cells if c.label == fault}):
            for phase in phases:
                points = sorted((c.partitions, c.median_ms) for c in cells
                                if c.label == fault and c.brokers == brokers and c.phase == phase and c.median_ms > 0)
                if not points:
                    continue
                label = phase if len({c.brokers for c in cells}) == 1 else f"{phase} ({brokers} brokers)"
                # one colour per phase across panels
                ax.plot([p for p, _ in points], [m for _, m in points], marker="o", label=label,
                        color=f"C{list(phases).index(phase) % 10}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(fault)
        ax.set_xlabel("partitions")
        ax.set_ylabel("median ms")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
