"""Inter-process locks for artefacts that are expensive to build (one builder, the others wait, then reuse).

The lock is an ``fcntl`` lock held through ``filelock``: the kernel releases it when its process dies, so a
killed builder never leaves a lock behind. The waiting process logs one line saying what it waits for.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> with building(Path(tempfile.mkdtemp()) / "x.lock", "table x"):
    ...     pass
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hepwb.exceptions import CatalogBusyError

__all__ = ["WAIT_S", "building"]

_log = logging.getLogger("hepwb.files.locks")

WAIT_S = 6 * 3600.0
"""Seconds to wait for another process's build (``$HEPWB_BUILD_WAIT_S``); embedding can take hours."""


@contextmanager
def building(lock_path: Path, what: str) -> Iterator[None]:
    """Hold the lock ``lock_path`` while building ``what``; wait (one log line) while another has it."""
    from filelock import FileLock, Timeout

    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        wait_s = float(os.environ.get("HEPWB_BUILD_WAIT_S", WAIT_S))
        _log.warning("waiting for %s, which another process is building (lock %s)", what, lock_path)
        try:
            lock.acquire(timeout=wait_s)
        except Timeout:
            msg = (
                f"{what} has been built by another process for over {wait_s:.0f} s (lock {lock_path}); "
                "let it finish, or stop it and run again"
            )
            raise CatalogBusyError(msg) from None
    try:
        yield
    finally:
        lock.release()
