"""``.ragmd``: a whole index in one human-readable, git-friendly markdown file.

* :mod:`~hepwb.ragmd.writer` / :mod:`~hepwb.ragmd.reader` — the format (front matter, Documents,
  Chunks, Document Metadata, Vectors), written deterministically and read only after every check passed;
* :mod:`~hepwb.ragmd.tables` — export any indexed chunk table, import a file as a LanceDB table every
  retriever searches;
* :class:`RagmdIndex` — search the file alone (exact inner product, bm25s BM25, RRF hybrid).

"""

from __future__ import annotations

from hepwb.ragmd.index import RagmdIndex
from hepwb.ragmd.model import RagFile
from hepwb.ragmd.reader import RagmdError, load, loads, problems
from hepwb.ragmd.tables import export_table, import_file
from hepwb.ragmd.writer import dumps

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


def __dir__() -> list[str]:
    return __all__
