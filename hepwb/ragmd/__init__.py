"""``.ragmd``: a whole index in one human-readable, git-friendly markdown file.

* :mod:`~hepwb.ragmd.writer` / :mod:`~hepwb.ragmd.reader` — the format (front matter, Documents,
  Chunks, Document Metadata, Vectors), written deterministically and read only after every check passed;
* :mod:`~hepwb.ragmd.store` — export any indexed chunk table, import a file as a LanceDB table every
  retriever searches;
* :class:`RagmdIndex` — search the file alone (exact inner product, bm25s BM25, RRF hybrid).

Heavy imports stay inside the functions.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "RagFile",
    "RagmdError",
    "RagmdIndex",
    "dumps",
    "export_table",
    "import_file",
    "load",
    "loads",
    "problems",
]

_WHERE = {
    "RagFile": "model",
    "RagmdError": "reader",
    "load": "reader",
    "loads": "reader",
    "problems": "reader",
    "dumps": "writer",
    "export_table": "store",
    "import_file": "store",
    "RagmdIndex": "search",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"hepwb.ragmd.{_WHERE[name]}"), name)
    msg = f"module 'hepwb.ragmd' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return __all__
