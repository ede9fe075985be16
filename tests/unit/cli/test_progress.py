"""The progress output: plain stamped lines off a terminal (CI logs), a live status line on one."""

from __future__ import annotations

import io

from kafka_chaos.app.progress import Progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_only_plain_lines() -> None:
    out = io.StringIO()
    p = Progress(total=2, out=out)
    p.case_started("a#0")
    p("a#0: step 1/1 hard_kill: waiting for a settled state")
    p.case_done()
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].endswith("a#0: step 1/1 hard_kill: waiting for a settled state")
    assert "\r" not in out.getvalue() and "\033" not in out.getvalue()


def test_on_a_terminal_a_status_line_with_the_estimate() -> None:
    out = Tty()
    p = Progress(total=4, out=out)
    p.case_started("a#0")
    p("a#0: step 1/2 hard_kill: waiting for a settled state")
    assert "[1/4] a#0 step 1/2 hard_kill" in out.getvalue()
    p.case_done()
    p.case_started("b#0")
    p("b#0: creating topics")
    status = p.status()
    assert status.startswith("[2/4] b#0 creating topics") and "left" in status
    p.close()
    assert out.getvalue().endswith("\r\033[K")
