"""LanceDB connections and table helpers shared by the chunk store, the embedding cache and readers.

Example:
    >>> chunkset_of("hepilot-512-abc__all-minilm-l6-v2")
    'hepilot-512-abc'
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hepwb.files.locks import building

__all__ = ["chunkset_of", "connect", "drop_unfinished", "replace_table", "table_lock", "table_names"]

_log = logging.getLogger("hepwb.index")


def connect(db_path: str | Path) -> Any:
    """Open (creating) the LanceDB database at ``db_path``."""
    import lancedb

    Path(db_path).mkdir(parents=True, exist_ok=True)
    return lancedb.connect(str(db_path))


def chunkset_of(name: str) -> str:
    """The chunk set id of a chunk table name (``<chunkset_id>__<model slug>``)."""
    return name.split("__", 1)[0]


def replace_table(db: Any, name: str, data: Any) -> Any:
    """Create table ``name`` from ``data``, replacing an older one.

    LanceDB's ``mode="overwrite"`` logs a warning from Rust when there is nothing to overwrite; a new
    table is created plainly and only an existing one overwritten.
    """
    mode = "overwrite" if name in table_names(db) and not drop_unfinished(db, name) else "create"
    return db.create_table(name, data, mode=mode)


def drop_unfinished(db: Any, name: str) -> bool:
    """Remove table ``name`` if its creation never committed (a killed or failed first write).

    Such a folder is listed as a table but cannot be opened ("was not found"); left there it would make
    every later ``open_table`` fail. Call it only while holding the table's build lock. Returns whether
    a folder was removed.
    """
    import shutil

    try:
        db.open_table(name)
    except ValueError as exc:
        if "not found" not in str(exc):
            raise
        folder = Path(str(db.uri)) / f"{name}.lance"
        _log.warning("removing %s: its creation was interrupted before the first commit", folder)
        shutil.rmtree(folder, ignore_errors=True)
        return True
    return False


def table_names(db: Any) -> set[str]:
    """Names of the tables of LanceDB connection ``db`` (old and new LanceDB APIs)."""
    res = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
    names = getattr(res, "tables", res)
    return set(names)


def table_lock(db_path: str | Path, name: str, what: str) -> AbstractContextManager[None]:
    """The build lock of table ``name`` in LanceDB folder ``db_path`` (:func:`.locks.building`)."""
    return building(Path(db_path) / "_locks" / f"{name}.lock", what)
