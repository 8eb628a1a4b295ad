"""Poll with a deadline: the only place in the tests allowed to sleep."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 30.0, interval: float = 0.2,
               message: str = "condition") -> T:
    """Return the first truthy value of predicate(), or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except AssertionError as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}"
                                 + (f": {last_error}" if last_error else ""))
        time.sleep(interval)
