"""The retriever protocol and registry.

Every retriever searches one LanceDB chunk table (see :mod:`hepwb.index.chunk_store`) and returns
:class:`~hepwb.types.Hit` records, ranked from 1, higher score better, each saying why it matched
(``Hit.why``), which query words or entities it holds (``Hit.matched``) and where
(``Hit.highlights``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

from hepwb import defaults
from hepwb.components.callspec import named
from hepwb.components.options import options_trusted
from hepwb.components.registry import Registry
from hepwb.exceptions import ConfigError
from hepwb.index.parts import PARTS
from hepwb.models.embedder import Embedder
from hepwb.retrieval.explain import explain_match, query_words
from hepwb.retrieval.options import check_options
from hepwb.types import Hit, JSONObject

__all__ = [
    "RETRIEVERS",
    "Retriever",
    "check_retriever_options",
    "get_retriever",
    "reads_vectors",
    "register_retriever",
    "rows_to_hits",
    "table_parts",
    "unexplained",
]

_COLUMNS = [
    "chunk_id",
    "document_id",
    "label",
    "title",
    "arxiv",
    "start",
    "end",
    "pages",
    "section",
    "text",
]


@runtime_checkable
class Retriever(Protocol):
    """What every retrieval method provides."""

    name: str

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Return the top ``k`` hits for ``query``."""
        ...


RETRIEVERS: Registry[type] = Registry("retriever")

_EXPLAIN: ContextVar[bool] = ContextVar("hepwb_explain_hits", default=True)


@contextmanager
def unexplained() -> Iterator[None]:
    """Hits made inside carry no highlights and no matched words (``why`` is the retriever and score).

    What an evaluation uses: it scores ids and offsets only, and highlighting every hit's text took about
    half of a lexical retrieval's time (1,240 hits: 0.9 of 1.8 s). Searches for people explain as before.

    Example:
        >>> with unexplained():
        ...     rows_to_hits([{"chunk_id": "c", "document_id": "d", "label": "L", "start": 0, "end": 4,
        ...                    "text": "muon", "pages": [1], "section": "", "_score": 2.0}], "bm25", "_score",
        ...                   query="muon")[0].highlights
        ()
    """
    token = _EXPLAIN.set(False)
    try:
        yield
    finally:
        _EXPLAIN.reset(token)


def register_retriever(name: str) -> Any:
    """Class decorator registering a retriever under ``name``."""
    return RETRIEVERS.register(name)


def check_retriever_options(name: str, options: JSONObject) -> None:
    """Raise :class:`ConfigError` for an unknown retriever ``name`` or a bad option (its signature's)."""
    check_options(name, RETRIEVERS.get(name), options)


def table_parts(name: Any, options: JSONObject | None = None) -> frozenset[str]:
    """The table parts (:data:`hepwb.index.parts.PARTS`) retriever ``name`` reads: a run builds those alone.

    Each retriever class says so with ``parts(options)``; a retriever over a ``base`` (``rerank``,
    ``xref``, ``parent``, ``multi_query``, ``hyde``: ``over_base = True``) reads what its base reads. A
    class that says nothing is taken to read every part. A lexical run never loads the embedding model.

    Example:
        >>> sorted(table_parts("bm25(fields=context)")), sorted(table_parts("bm25"))
        ([], ['search_text'])
        >>> sorted(table_parts("dense")), sorted(table_parts("entity"))
        (['vector'], ['entities', 'search_text'])
        >>> sorted(table_parts("xref", {"base": "bm25_plain"})), sorted(table_parts("rerank(base=hybrid)"))
        (['text_index'], ['vector'])
    """
    name, given = named(name)
    opts = {**given, **(options or {})}
    cls = RETRIEVERS.get(name)
    if getattr(cls, "over_base", False):
        return table_parts(opts.get("base", defaults.BASE_RETRIEVER))
    parts = getattr(cls, "parts", None)
    return frozenset(parts(opts)) if parts is not None else PARTS


def reads_vectors(name: Any, options: JSONObject | None = None) -> bool:
    """Whether retriever ``name`` (with ``options``) reads the chunks' vectors, so a run needs embeddings.

    Example:
        >>> reads_vectors("bm25(fields=context)"), reads_vectors("dense"), reads_vectors("entity")
        (False, True, False)
        >>> reads_vectors("xref", {"base": "bm25"}), reads_vectors("rerank(base=hybrid)")
        (False, True)
    """
    return "vector" in table_parts(name, options)


def get_retriever(name: Any, table: Any, embedder: Embedder | None = None, **params: Any) -> Retriever:
    """Build retriever ``name`` over LanceDB ``table``; its options are checked against its signature.

    ``name`` is a registered name, a call string (``"bm25(fields=context)"``) or a spec object
    (:class:`~hepwb.retrieval.specs.RetrieverSpec`); ``params`` add options (given twice: refused).
    """
    name, given = named(name)
    twice = sorted(set(given) & set(params))
    if twice:
        msg = f"retriever {name!r}: option(s) {twice} given twice; keep one"
        raise ConfigError(msg)
    params = {**given, **params}
    cls = RETRIEVERS.get(name)
    if not options_trusted():  # else built from a validated configuration (checked_already)
        check_options(name, cls, params)
    return cls(table=table, embedder=embedder, **params)  # type: ignore[no-any-return]


def rows_to_hits(
    rows: list[JSONObject],
    retriever: str,
    score_key: str,
    *,
    distance: bool = False,
    query: str = "",
    why: Callable[[JSONObject, float], str] | None = None,
    extra_words: Sequence[str] = (),
) -> list[Hit]:
    """Convert LanceDB result rows to hits.

    Args:
        rows: Result rows (with the :func:`columns` and ``score_key``).
        retriever: Name recorded in each hit.
        score_key: Column of the score (``_score``, ``_distance``, ``_relevance_score``).
        distance: The score is a cosine distance; the hit's score is ``1 - distance``.
        query: The question, whose content words are highlighted and listed in ``Hit.matched``.
        why: ``(row, score) -> str`` explanation; default ``"{retriever} {score:.3f}"``.
        extra_words: More normalised words/phrases to highlight (e.g. entity aliases).
    """
    words = [*query_words(query), *extra_words] if (query or extra_words) and _EXPLAIN.get() else []
    hits = []
    for rank, r in enumerate(rows, start=1):
        raw = float(r[score_key])
        score = 1.0 - raw if distance else raw
        spans, matched = explain_match(r["text"], words) if words else ([], [])
        reason = why(r, score) if why else f"{retriever} {score:.3f}"
        if matched and why is None:
            reason += " on " + ", ".join(matched)
        hits.append(
            Hit(
                chunk_id=r["chunk_id"],
                document_id=r["document_id"],
                label=r["label"],
                start=int(r["start"]),
                end=int(r["end"]),
                rank=rank,
                score=score,
                text=r["text"],
                retriever=retriever,
                pages=tuple(r["pages"] or ()),
                section_path=tuple(s for s in str(r["section"]).split(" > ") if s),
                title=str(r.get("title") or ""),
                arxiv=str(r.get("arxiv") or ""),
                why=reason,
                matched=tuple(matched),
                highlights=tuple(spans),
            )
        )
    return hits


def columns() -> list[str]:
    """Columns every retriever selects."""
    return list(_COLUMNS)
