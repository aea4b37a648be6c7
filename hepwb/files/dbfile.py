"""Opening a DuckDB file other hepwb processes also use: wait for its lock, say so once, name the holder.

DuckDB lets one process write a file at a time; hepwb's writes are short transactions, so a sweep, a second
``hepwb run``, a ``hepwb sql`` poll or a tiers job queue behind each other instead of failing. After
``$HEPWB_CATALOG_WAIT_S`` seconds (default 600) :class:`~hepwb.exceptions.CatalogBusyError` says who holds it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hepwb import limits
from hepwb.exceptions import CatalogBusyError, ConfigError, HepwbError

__all__ = ["WAIT_S", "connect_waiting", "damaged", "named_if_damaged"]

WAIT_S = 600.0
"""How long a process waits for another one to release a DuckDB file (``$HEPWB_CATALOG_WAIT_S``)."""


_DAMAGED = (
    "not a valid DuckDB database file",
    "Could not read enough bytes from file",
    "Corrupt database file",
)


def damaged(exc: BaseException) -> bool:
    """Whether DuckDB's error ``exc`` says its file is damaged (cut short, not a database, corrupt).

    Example:
        >>> damaged(OSError('IO Error: Could not read enough bytes from file "x": attempted to read 4096'))
        True
    """
    return any(words in str(exc) for words in _DAMAGED)


@contextmanager
def named_if_damaged(path: str | Path, what: str, rebuild: str) -> Iterator[None]:
    """Turn DuckDB's word that ``path`` is damaged, raised inside the block, into one line naming it.

    A file cut short fails when it is opened (:func:`connect_waiting` names it); a block of it overwritten
    fails only when a query reads that block ("Corrupt database file: computed checksum … does not match"),
    anywhere in the code that queries it: this names the file, says it is damaged and how to rebuild it.

    Raises:
        ConfigError: ``{what} {path} is damaged (DuckDB's first line); {rebuild}``.

    Example:
        >>> with named_if_damaged("x.duckdb", "the catalog", "delete it"):  # doctest: +ELLIPSIS
        ...     raise OSError("Corrupt database file: computed checksum 1 does not match stored checksum 2")
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: the catalog x.duckdb is damaged (Corrupt database file: ...); delete it
    """
    try:
        yield
    except HepwbError:
        raise
    except Exception as exc:
        if not damaged(exc):
            raise
        msg = f"{what} {path} is damaged ({str(exc).splitlines()[0][:160]}); {rebuild}"
        raise ConfigError(msg) from None


def connect_waiting(
    path: str | Path,
    *,
    read_only: bool = False,
    sandbox: bool = False,
    what: str = "the catalog",
    rebuild: str = "move it aside and run the command again to start a new one",
    log: logging.Logger | None = None,
    memory_mb: int = limits.SQL_MEMORY_MB,
    threads: int = limits.SQL_THREADS,
) -> Any:
    """Open the DuckDB file ``path``, retrying (tenacity) while another process holds its lock.

    Args:
        path: The file.
        read_only: Open it read-only.
        sandbox: No file access outside it, no extensions, and at most ``memory_mb`` MiB of memory and
            ``threads`` threads (for user-typed SQL); the settings are locked, so SQL cannot change them.
        what: How the log line and the error name the file (``"the catalog"``).
        rebuild: What to do when the file is damaged (not a DuckDB database): the command that rebuilds it.
        log: Logger of the one "waiting for …" line (default ``hepwb.catalog``).
        memory_mb: With ``sandbox``: DuckDB's memory limit (MiB); a statement needing more stops.
        threads: With ``sandbox``: DuckDB's threads.
    """
    import duckdb
    from tenacity import retry, retry_if_exception, stop_after_delay, wait_random_exponential

    logger = log or logging.getLogger("hepwb.catalog")
    told: list[bool] = []

    def locked(exc: BaseException) -> bool:
        return isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower()

    def waiting(state: Any) -> None:
        if not told:
            told.append(True)
            why = str(state.outcome.exception()).split("\n")[0][:300]
            logger.warning("waiting for %s %s, which another process is using (%s)", what, path, why)

    config: dict[str, str | bool | int | float | list[str]]
    config = {}
    if sandbox:
        config = {
            "enable_external_access": False,
            "memory_limit": f"{int(memory_mb)}MiB",
            "threads": int(threads),
            "lock_configuration": True,
        }
    wait_s = float(os.environ.get("HEPWB_CATALOG_WAIT_S", WAIT_S))

    @retry(
        retry=retry_if_exception(locked),
        stop=stop_after_delay(wait_s),
        before_sleep=waiting,
        wait=wait_random_exponential(0.05, max=2.0),
        reraise=True,
    )
    def open_() -> Any:
        return duckdb.connect(str(path), read_only=read_only, config=config)

    if Path(path).is_dir():
        msg = f"{what} {path} is a folder, not a DuckDB file: it is damaged; {rebuild}"
        raise ConfigError(msg)
    try:
        return open_()
    except duckdb.Error as exc:  # cut short: an IOException; a corrupt block read on opening: a plain Error
        if damaged(exc):
            msg = f"{what} {path} is damaged ({str(exc).splitlines()[0][:160]}); {rebuild}"
            raise ConfigError(msg) from None
        if not locked(exc):
            raise
        msg = f"{what} {path} stayed locked by another process for {wait_s:g} s: {str(exc)[:300]}"
        raise CatalogBusyError(msg) from None
