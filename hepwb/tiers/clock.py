"""A clock you move by hand, for notebooks and tests that show a TTL expiring without waiting.

Example:
    >>> c = ManualClock(start=100.0)
    >>> c(), c.advance(3600), c()
    (100.0, 3700.0, 3700.0)
"""

from __future__ import annotations

import time

__all__ = ["ManualClock"]


class ManualClock:
    """Seconds since the epoch: starts at ``start`` (default now) and moves only by :meth:`advance`."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else float(start)

    def __call__(self) -> float:
        """The current (manual) time."""
        return self.now

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds``; return the new time."""
        self.now += float(seconds)
        return self.now
