"""LanceDB connections and table helpers shared by the chunk store, the embedding cache and readers.

Example:
    >>> chunkset_of("hepilot-512-abc__all-minilm-l6-v2")
    'hepilot-512-abc'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["chunkset_of", "connect", "replace_table", "table_names"]


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
    mode = "overwrite" if name in table_names(db) else "create"
    return db.create_table(name, data, mode=mode)


def table_names(db: Any) -> set[str]:
    """Names of the tables of LanceDB connection ``db`` (old and new LanceDB APIs)."""
    res = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
    names = getattr(res, "tables", res)
    return set(names)
