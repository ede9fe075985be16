"""Number formats shared by the HTML report and the terminal table."""

from __future__ import annotations

import datetime as dt
from typing import Any


def ms(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def rate(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def interval(low: Any, high: Any) -> str:
    if low is None or high is None:
        return "–"
    return f"{100 * low:.1f}–{100 * high:.1f}"


def seconds(value: Any) -> str:
    return "–" if value is None else f"{value:,.1f}"


def flag(value: Any) -> str:
    return "yes" if value else ""


def count(value: Any) -> str:
    return "–" if value is None else f"{value:,}"


def epoch(value: Any) -> str:
    if value is None:
        return "–"
    return dt.datetime.fromtimestamp(value, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def text(value: Any) -> str:
    return "" if value is None else str(value)
