"""The one bounded wait: re-check a condition until it holds, or fail saying what was awaited.

After ducktape's ``wait_until(condition, timeout_sec, backoff_sec, err_msg)``, over tenacity.
Use it only for signs with nothing to watch (a port starting to answer, a pid going away);
ZooKeeper conditions have watches (``ZkObserver.wait_until``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryError, Retrying, retry_if_exception_type, retry_if_result, stop_before_delay, wait_fixed

from kafka_chaos.common.errors import HarnessError

T = TypeVar("T")


class WaitTimeout(HarnessError):
    """A bounded wait ran out.  ``last_error`` is the exception of the last attempt (also the
    ``__cause__``), ``last_value`` what the last attempt returned when it did not raise."""

    def __init__(self, description: str, timeout: float, last_error: BaseException | None = None,
                 last_value: object = None) -> None:
        self.description = description
        self.timeout = timeout
        self.last_error = last_error
        self.last_value = last_value
        if last_error is not None:
            last = f"; last attempt: {type(last_error).__name__}: {last_error}"
        else:
            last = f"; last attempt returned {last_value!r}"
        super().__init__(f"timed out after {timeout:.1f} s waiting for {description}{last}")


def wait_until(condition: Callable[[], T], *, timeout: float, interval: float, description: str,
               retry_on: tuple[type[BaseException], ...] = (),
               accept: Callable[[T], object] = bool) -> T:
    """Call ``condition`` every ``interval`` seconds until what it returns is accepted (by
    default: is true), and return that value.  An exception of a ``retry_on`` type counts as
    "not yet"; any other propagates at once (a node that died ends the wait).  Pass
    ``accept=lambda _: True`` to wait only until ``condition`` stops raising.

    Bounded: at least one attempt, and none that would start after ``timeout``; then raises
    :class:`WaitTimeout` naming ``description`` and chaining the last exception."""
    retrying = Retrying(
        stop=stop_before_delay(max(timeout, 0.0)),
        wait=wait_fixed(interval),
        retry=retry_if_exception_type(retry_on) | retry_if_result(lambda value: not accept(value)),
    )
    try:
        return retrying(condition)
    except RetryError as exc:
        attempt = exc.last_attempt
        error = attempt.exception()
        if error is not None:
            raise WaitTimeout(description, timeout, last_error=error) from error
        raise WaitTimeout(description, timeout, last_value=attempt.result()) from None
