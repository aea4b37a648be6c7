"""Lexical retrieval: BM25 over LanceDB's native full-text indexes.

``bm25`` searches the HEP search terms of each chunk (:func:`hepwb.models.analyzer.search_terms`:
``J/\\psi`` → ``jpsi``, ``√s = 13 TeV`` → ``sqrts 13tev``, ``B_s^0`` → ``bs0 bs b0``), with the
question turned into terms the same way; with ``fields="context"`` the chunk's text together with its
paper's title and section path. ``bm25_plain`` searches the raw text with LanceDB's simple tokenizer, as
a baseline. Both: lowercase, English stemming, stop words removed, OR match.

A query runs on the table's Lance dataset (``LanceTable.to_lance()``, ``LanceDataset.to_table`` with a
full-text query): the same index, the same rows and the same scores as LanceDB's ``table.search(...,
query_type="fts")``, at about half the time per query (that path asks the table's schema three times per
query). A retriever opens the dataset at the table's version when it is made (parts are added before).
A table of up to :data:`HELD_ROWS` chunks also has its hit columns held in memory (a few MB): a query then
asks the index for row ids and scores only, which halves its time (reading ten rows' columns from the
files costs more than the search).
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from hepwb import defaults
from hepwb.exceptions import ConfigError
from hepwb.index.lance import chunkset_of
from hepwb.index.lexicon import expand_acronyms, load_lexicon
from hepwb.limits import MAX_QUESTION_CHARS
from hepwb.models.analyzer import search_terms
from hepwb.models.embedder import Embedder
from hepwb.retrieval.base import columns, register_retriever, rows_to_hits
from hepwb.retrieval.feedback import feedback_query, feedback_terms
from hepwb.retrieval.options import Count, LexicalFields, Share
from hepwb.types import Hit, JSONObject

__all__ = [
    "FIELDS",
    "HELD_ROWS",
    "BM25Retriever",
    "HeldRows",
    "PlainBM25Retriever",
    "fts_rows",
    "note_context_fields",
    "prewarm",
]


FIELDS = {"text": "search_text", "context": "search_context"}

_log = logging.getLogger("hepwb.retrieval")
_NOTED: set[str] = set()
_DATASETS: weakref.WeakKeyDictionary[Any, tuple[int, Any]] = weakref.WeakKeyDictionary()
"""Each open table's Lance dataset, with the table version it was opened at."""
HELD_ROWS = 50_000
"""The most chunks whose hit columns a lexical retriever holds in memory (50,000 chunks: about 150 MB)."""
_HELD: weakref.WeakKeyDictionary[Any, HeldRows] = weakref.WeakKeyDictionary()
"""Each dataset version's held rows, made once however many retrievers read it."""
_PREWARMED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
"""The columns whose full-text index each dataset version has loaded (:func:`prewarm`)."""


class HeldRows:
    """The hit columns (:func:`~hepwb.retrieval.base.columns`) of one dataset version, by row id."""

    def __init__(self, dataset: Any) -> None:
        held = dataset.to_table(columns=columns(), with_row_id=True)
        self.position = {rid: i for i, rid in enumerate(held.column("_rowid").to_pylist())}
        self.table = held.drop_columns(["_rowid"])

    @classmethod
    def of(cls, dataset: Any) -> HeldRows | None:
        """The held rows of ``dataset`` (``None``: no dataset, or more than :data:`HELD_ROWS` rows).

        Made once per dataset version: every retriever over it (``xref`` over ``bm25``, the availability
        check of each name) shares them.
        """
        if dataset is None or dataset.count_rows() > HELD_ROWS:
            return None
        if dataset not in _HELD:
            _HELD[dataset] = cls(dataset)
        return _HELD[dataset]

    def rows(self, found: Any) -> list[JSONObject]:
        """The rows of ``found`` (a table of ``_rowid`` and ``_score``), each with its ``_score``."""
        import pyarrow as pa

        wanted = [self.position[r] for r in found.column("_rowid").to_pylist()]
        rows: list[JSONObject] = self.table.take(pa.array(wanted, pa.int64())).to_pylist()
        for row, score in zip(rows, found.column("_score").to_pylist(), strict=True):
            row["_score"] = score
        return rows


def _dataset(table: Any) -> Any:
    """``table``'s Lance dataset at its current version (``None``: the table has none, e.g. a remote one)."""
    if not hasattr(table, "to_lance"):
        return None
    version = int(table.version)
    cached = _DATASETS.get(table)
    if cached is None or cached[0] != version:
        cached = (version, table.to_lance())
        _DATASETS[table] = cached
    return cached[1]


def prewarm(dataset: Any, column: str) -> None:
    """Load ``dataset``'s full-text index of ``column`` into Lance's cache in one read.

    Otherwise the first questions load it term by term: on a new table of 961 chunks the first pass over
    124 questions took twice as long as the second, and prewarming costs a tenth of that difference.
    """
    if dataset is None or not hasattr(dataset, "prewarm_index"):
        return
    done = _PREWARMED.setdefault(dataset, set())
    if column in done:  # once per dataset version
        return
    done.add(column)
    for index in dataset.describe_indices():
        if list(getattr(index, "field_names", ())) == [column]:
            dataset.prewarm_index(index.name)


def note_context_fields(table: Any) -> None:
    """Say once per table when ``fields=context`` can add no section path: the chunks have no headings.

    The context field is the paper title, the section path and the text; on markdown without headings (a
    plain-text corpus) it adds the title alone, and nothing else tells the user the option barely applies.
    """
    name = str(getattr(table, "name", ""))
    if not name or name in _NOTED:
        return
    _NOTED.add(name)
    try:
        with_sections = int(table.count_rows("section != ''"))
    except (AttributeError, ValueError, RuntimeError, OSError):  # no such column or no counts: say nothing
        return
    if with_sections == 0:
        _log.info(
            "fields=context on %s: no chunk has a section heading, so only the paper title is added to the "
            "text (the corpus has no headings)",
            name,
        )


"""Lexical fields: the chunk's text, or its text with the paper title and section path (HEP terms)."""


def fts_rows(
    table: Any,
    query: str,
    k: int,
    *,
    hep: bool = True,
    where: str | None = None,
    fields: str = "text",
    extra: tuple[str, ...] = (),
    dataset: Any = None,
    held: HeldRows | None = None,
) -> list[JSONObject]:
    """Raw BM25 result rows (with ``_score``) for ``query``; ``where`` is a SQL prefilter.

    The rows hold the :func:`~hepwb.retrieval.base.columns` every retriever reads, and the ``extra`` ones.
    ``dataset`` is ``table``'s Lance dataset when the caller holds it (asking the table for its version
    costs about as much as a third of a query), ``held`` its :class:`HeldRows`.
    """
    if len(query) > MAX_QUESTION_CHARS:
        msg = f"a query of {len(query)} characters is too long; at most {MAX_QUESTION_CHARS} (shorten it)"
        raise ConfigError(msg)
    text = search_terms(query) if hep else query
    if not text.strip():
        return []
    column = FIELDS[fields] if hep else "text"
    selected = [*columns(), *extra, "_score"]
    ds = dataset if dataset is not None else _dataset(table)
    if ds is None:  # LanceDB's own path (the same index and scores)
        q = table.search(text, query_type="fts", fts_columns=column)
        if where:
            q = q.where(where, prefilter=True)
        return q.select(selected).limit(k).to_list()  # type: ignore[no-any-return]
    if held is not None and not extra:  # the index's row ids and scores; the columns from memory
        ids = ds.to_table(
            full_text_query={"columns": [column], "query": text},
            columns=["_score"],
            with_row_id=True,
            limit=k,
            filter=where or None,
            prefilter=bool(where),
        )
        return held.rows(ids)
    found = ds.to_table(
        full_text_query={"columns": [column], "query": text},
        columns=selected,
        limit=k,
        filter=where or None,
        prefilter=bool(where),
    )
    return found.to_pylist()  # type: ignore[no-any-return]


@register_retriever("bm25")
class BM25Retriever:
    """BM25 ranking of the chunks' HEP search terms.

    Args:
        table: LanceDB chunk table.
        embedder: Unused (lexical method).
        fields: ``text`` (the chunk) or ``context`` (with its paper's title and section path).
        acronyms: Also search the other form of every acronym the corpus defines that the question names
            (:mod:`hepwb.index.lexicon`).
        prf: Pseudo-relevance feedback (RM3, :mod:`hepwb.retrieval.feedback`): ``prf_terms`` terms of
            the top ``prf_docs`` hits added with weight ``prf_weight``.
    """

    name = "bm25"

    @staticmethod
    def parts(options: JSONObject) -> set[str]:
        """The table parts it reads (:func:`~hepwb.retrieval.base.table_parts`): its fields' terms."""
        return {"search_text"} if options.get("fields", defaults.LEXICAL_FIELDS) == "text" else set()

    hep = True

    def __init__(
        self,
        table: Any,
        embedder: Embedder | None = None,
        fields: LexicalFields = defaults.LEXICAL_FIELDS,
        acronyms: bool = False,
        prf: bool = False,
        prf_docs: Count = defaults.PRF_DOCS,
        prf_terms: Count = defaults.PRF_TERMS,
        prf_weight: Share = defaults.PRF_WEIGHT,
    ) -> None:
        self.table = table
        self.dataset = _dataset(table)  # the table as it is now: a retriever searches one version
        self.held = HeldRows.of(self.dataset)
        self.fields = fields
        prewarm(self.dataset, FIELDS[fields] if self.hep else "text")
        if fields == "context":
            note_context_fields(table)
        self.prf = (prf_docs, prf_terms, prf_weight) if prf else None
        self.lexicon: dict[str, str] = {}
        if acronyms:
            from pathlib import Path

            self.lexicon = load_lexicon(Path(table.uri).parent, chunkset_of(table.name))

    def search(self, query: str, k: int = defaults.EVAL_K) -> list[Hit]:
        """Top ``k`` chunks by BM25 score (an OR match of the query terms)."""
        if self.lexicon:
            query = expand_acronyms(query, self.lexicon)
        if self.prf is None or not search_terms(query).strip():
            rows = fts_rows(
                self.table, query, k, hep=self.hep, fields=self.fields, dataset=self.dataset, held=self.held
            )
        else:
            rows = self._feedback_rows(query, k)
        return rows_to_hits(rows, self.name, "_score", query=query)

    def _feedback_rows(self, query: str, k: int) -> list[JSONObject]:
        assert self.prf is not None
        docs, n_terms, weight = self.prf
        column = FIELDS[self.fields]
        terms = search_terms(query)
        first = self.table.search(terms, query_type="fts", fts_columns=column)
        first_rows = first.select([column, "_score"]).limit(docs).to_list()
        expansion = feedback_terms(first_rows, column, set(terms.split()), n_terms)
        q = self.table.search(feedback_query(terms, column, expansion, weight), query_type="fts")
        return q.select([*columns(), "_score"]).limit(k).to_list()  # type: ignore[no-any-return]


@register_retriever("bm25_plain")
class PlainBM25Retriever(BM25Retriever):
    """BM25 ranking of the raw chunk text (LanceDB simple tokenizer), the baseline of ``bm25``."""

    name = "bm25_plain"
    hep = False

    @staticmethod
    def parts(options: JSONObject) -> set[str]:
        """The table parts it reads: the full-text index of the raw text."""
        return {"text_index"}

    def __init__(self, table: Any, embedder: Embedder | None = None) -> None:
        super().__init__(table, embedder)
