"""The retriever protocol and registry.

Every retriever searches one LanceDB chunk table and returns :class:`~hepwb.types.Hit` records,
ranked from 1, higher score better.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hepwb.exceptions import ConfigError
from hepwb.registry import Registry
from hepwb.types import Hit

if TYPE_CHECKING:
    from hepwb.index.embedder import Embedder

__all__ = ["RETRIEVERS", "Retriever", "get_retriever", "register_retriever", "rows_to_hits"]

_COLUMNS = ["chunk_id", "document_id", "label", "start", "end", "pages", "section", "text"]


@runtime_checkable
class Retriever(Protocol):
    """What every retrieval method provides."""

    name: str

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Return the top ``k`` hits for ``query``."""
        ...


RETRIEVERS: Registry[type] = Registry("retriever")


def register_retriever(name: str) -> Any:
    """Class decorator registering a retriever under ``name``."""
    return RETRIEVERS.register(name)


def get_retriever(name: str, table: Any, embedder: Embedder | None = None, **params: Any) -> Retriever:
    """Build retriever ``name`` over LanceDB ``table``."""
    cls = RETRIEVERS.get(name)
    try:
        return cls(table=table, embedder=embedder, **params)  # type: ignore[no-any-return]
    except TypeError as exc:
        msg = f"bad parameters for retriever {name!r}: {exc}"
        raise ConfigError(msg) from None


def rows_to_hits(
    rows: list[dict[str, Any]], retriever: str, score_key: str, *, distance: bool = False
) -> list[Hit]:
    """Convert LanceDB result rows to hits (``distance=True``: score = 1 - cosine distance)."""
    hits = []
    for rank, r in enumerate(rows, start=1):
        raw = float(r[score_key])
        hits.append(
            Hit(
                chunk_id=r["chunk_id"],
                document_id=r["document_id"],
                label=r["label"],
                start=int(r["start"]),
                end=int(r["end"]),
                rank=rank,
                score=1.0 - raw if distance else raw,
                text=r["text"],
                retriever=retriever,
                pages=tuple(r["pages"] or ()),
                section_path=tuple(s for s in str(r["section"]).split(" > ") if s),
            )
        )
    return hits


def columns() -> list[str]:
    """Columns every retriever selects."""
    return list(_COLUMNS)
