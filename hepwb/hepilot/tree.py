"""Writing an output tree in order, now or by one background thread, published whole by its last step.

A chunk set's tree holds thousands of small files; their writing is mostly waiting on the file system.
:class:`TreeWriter` runs each step at once (``background=False``), or queues it for the one writer thread
of this process, which runs the steps of every tree in the order they were given while the caller goes
on (indexing, searching). A step that fails stops the tree: its later steps are skipped, its private
folder removed, and the failure raised to whoever waits on a step's future. At most
:data:`WRITE_AHEAD` steps wait in the queue of a tree: the caller blocks beyond that, so memory holds
a few papers, not a corpus. The writer thread is joined at interpreter exit, so a tree being written
when a script ends is still finished (or removed).

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp()) / "tree"
    >>> tree = TreeWriter(root, background=True)
    >>> _ = tree.submit(lambda: root.mkdir())
    >>> tree.submit(lambda: (root / "a.txt").write_text("x")).result() is None
    True
    >>> (root / "a.txt").read_text()
    'x'
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["WRITE_AHEAD", "TreeWriter"]

WRITE_AHEAD = 256
"""Steps of one tree queued for the background writer at most (each may hold a paper in memory: a few MB)."""

_WRITER: list[ThreadPoolExecutor] = []
"""The one background writer thread of this process (made on first use)."""
_WRITER_LOCK = threading.Lock()


def _writer() -> ThreadPoolExecutor:
    with _WRITER_LOCK:
        if not _WRITER:
            _WRITER.append(ThreadPoolExecutor(1, thread_name_prefix="hepwb-tree-writer"))
        return _WRITER[0]


class TreeWriter:
    """The steps that write the private folder ``root``, run in order: now, or in the background.

    Args:
        root: The private folder the steps write (removed when a step fails in the background).
        background: Queue the steps for the background writer thread instead of running them now.
    """

    def __init__(self, root: Path, *, background: bool) -> None:
        self.root = root
        self.failed: list[BaseException] = []
        self._ahead = threading.BoundedSemaphore(WRITE_AHEAD) if background else None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[None]:
        """Run ``fn(*args)`` now (a failure is raised here), or queue it behind this tree's earlier steps."""
        if self._ahead is None:
            fn(*args)
            done: Future[None] = Future()
            done.set_result(None)
            return done
        self._ahead.acquire()
        try:
            return _writer().submit(self._step, fn, args)
        except BaseException:  # the writer is shut down (interpreter exit): the slot is not taken
            self._ahead.release()
            raise

    def _step(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        assert self._ahead is not None
        try:
            if self.failed:  # an earlier step failed: nothing more is written, nothing is published
                raise self.failed[0]
            fn(*args)
        except BaseException as exc:
            if not self.failed:
                self.failed.append(exc)
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        finally:
            self._ahead.release()
