"""Ask questions of one chunk set with any retrievers, side by side.

Example (in a notebook)::

    s = Searcher.open(chunker="hierarchical", chunk_size=128, max_docs=4)
    s.compare("DVCS beam-spin asymmetry at CLAS12", ["bm25", "hybrid", "entity", "parent"], k=3)

The corpus is converted, chunked and indexed on first use (every stage cached, as in
:func:`~hepwb.experiment.run.run_experiment`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.chunking.chunksets import ChunkSet, build_chunkset
from hepwb.components.callspec import named
from hepwb.corpus import ingest
from hepwb.exceptions import ConfigError, CorpusNotFoundError, DependencyError, RetrieverUnavailableError
from hepwb.hepilot.log import ProcessingLog
from hepwb.index import ChunkStore, get_embedder
from hepwb.index.lance import connect, table_names
from hepwb.limits import K
from hepwb.models.embedder import Embedder
from hepwb.paths import Layout
from hepwb.processing.frontmatter import document_header
from hepwb.processing.links import describe_target, reader_context, targets_of
from hepwb.ragmd.reader import model_name_problem
from hepwb.ragmd.tables import recorded_model
from hepwb.retrieval import RETRIEVERS, get_retriever
from hepwb.retrieval.base import Retriever, table_parts
from hepwb.retrieval.explain import hits_frame
from hepwb.runtime.env import configure_runtime
from hepwb.types import Document, Hit, JSONObject, one_at_a_time

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["Searcher", "availability"]

_FILTER_FETCH = 10  # candidates per requested hit when filtering by collaboration or author


def _matches(meta: JSONObject, collaboration: str | None, author: str | None) -> bool:
    """Whether a paper's metadata or front matter names ``collaboration`` and ``author``."""
    front = meta.get("front_matter") or {}
    if collaboration is not None:
        names = " ".join(
            str(x or "") for x in (meta.get("collaboration"), front.get("collaboration"), meta.get("authors"))
        )
        if collaboration.lower() not in names.lower():
            return False
    if author is not None:
        people = f"{meta.get('authors') or ''} {' '.join(front.get('authors') or [])}"
        if author.lower() not in people.lower():
            return False
    return True


def availability(table: Any, embedder: Embedder, names: Sequence[str] | None = None) -> dict[str, str]:
    """``{retriever: "ok" or the reason it cannot run here}`` for ``names`` (default: all)."""
    out = {}
    for name in names or RETRIEVERS.names():
        try:
            get_retriever(name, table, embedder=embedder)
            out[name] = "ok"
        except (RetrieverUnavailableError, DependencyError, ConfigError) as exc:
            out[name] = " ".join(str(exc).split())  # one line, whole
    return out


@dataclass
class Searcher:
    """Retrievers over the LanceDB table of one chunk set."""

    table: Any
    embedder: Embedder
    chunkset: ChunkSet | None
    not_converted: list[tuple[str, str]] = field(default_factory=list)
    """``(file, reason)`` for each corpus file that could not be converted and is therefore not searched."""
    _retrievers: dict[str, Retriever] = field(default_factory=dict, repr=False)
    _with_parts: Callable[[frozenset[str]], Any] | None = field(default=None, repr=False)
    """Returns the table with the given parts added (a table opened with none: built as retrievers need)."""
    _parts: frozenset[str] = field(default=frozenset(), repr=False)

    @classmethod
    def open(
        cls,
        corpus: str | None = None,
        chunker: str = defaults.CHUNKER,
        chunk_size: int = defaults.CHUNK_SIZE,
        chunk_overlap: float = defaults.CHUNK_OVERLAP,
        tokenizer: str = defaults.EMBEDDING_MODEL,
        embedding_model: str = defaults.EMBEDDING_MODEL,
        max_docs: int | None = None,
        prefer_latex: bool = True,
        layout: Layout | None = None,
        progress: bool = False,
    ) -> Searcher:
        """Convert, chunk and index ``corpus`` (cached) and return a searcher over it."""
        configure_runtime(offline=None)
        layout = layout or Layout.default()
        log = ProcessingLog()
        docs = ingest(
            corpus,
            layout=layout,
            max_docs=max_docs,
            prefer_latex=prefer_latex,
            log=log,
            progress=progress,
            require=True,
        )
        cs = build_chunkset(
            docs,
            chunker,
            layout=layout,
            progress=progress,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            tokenizer=tokenizer,
        )
        embedder = get_embedder(embedding_model)
        store = ChunkStore(layout.lancedb, embedder, progress=progress)
        # the text and the context index now; the other parts when a retriever first reads them
        table = store.table(cs.chunkset_id, cs.chunks, cs.documents, parts=())
        failed = [(str((e.context or {}).get("file_path", "?")), e.message) for e in log.errors]
        searcher = cls(table, embedder, cs, failed)
        searcher._with_parts = lambda parts: store.table(cs.chunkset_id, cs.chunks, cs.documents, parts=parts)
        return searcher

    @classmethod
    def at_table(cls, name: str, *, model: str | None = None, layout: Layout | None = None) -> Searcher:
        """A searcher over the existing LanceDB table ``name`` (an imported ``.ragmd`` file, say).

        The embedding model is the one recorded with an imported file, else ``model`` (default
        :data:`~hepwb.defaults.EMBEDDING_MODEL`).
        """
        configure_runtime(offline=None)
        layout = layout or Layout.default()
        db = connect(layout.lancedb)
        if name not in table_names(db):
            msg = (
                f"no LanceDB table {name!r} in {layout.lancedb}; import a file with `hepwb import-ragmd FILE`"
            )
            raise CorpusNotFoundError(msg)
        table = db.open_table(name)
        recorded = recorded_model(table)
        problem = model_name_problem(recorded) if recorded is not None and model is None else None
        if problem is not None:  # checked where it is loaded: the import ran in another working folder
            msg = f"table {name!r}: {problem}"
            raise ConfigError(msg)
        return cls(table, get_embedder(model or recorded or defaults.EMBEDDING_MODEL), None)

    @property
    def name(self) -> str:
        """The chunk set id, or the table's name when there is no chunk set here."""
        return self.chunkset.chunkset_id if self.chunkset is not None else str(self.table.name)

    def retriever(self, name: str, **params: Any) -> Retriever:
        """Retriever ``name`` (or ``NAME(KEY=VALUE, ...)``) over this chunk set (built once per name)."""
        base, opts = named(name)
        needed = table_parts(base, {**opts, **params})
        if self._with_parts is not None and not needed <= self._parts:
            self._parts |= needed
            self.table = self._with_parts(self._parts)  # added to the same table, once
            self._retrievers.clear()
        if params:
            return get_retriever(base, self.table, embedder=self.embedder, **{**opts, **params})
        if name not in self._retrievers:
            self._retrievers[name] = get_retriever(base, self.table, embedder=self.embedder, **opts)
        return self._retrievers[name]

    def search(
        self,
        question: str,
        retriever: str = defaults.SEARCH_RETRIEVER,
        k: int = defaults.SEARCH_K,
        *,
        collaboration: str | None = None,
        author: str | None = None,
    ) -> list[Hit]:
        """The top ``k`` hits of ``retriever`` for ``question``.

        ``collaboration`` and ``author`` keep the hits of papers whose front matter or metadata
        names them (case-insensitive substring; e.g. ``"HERMES"``, ``"Airapetian"``).
        """
        K.check(k)
        if collaboration is None and author is None:
            return self.retriever(retriever).search(question, k)
        keep = {
            d.document_id for d in one_at_a_time(self._documents()) if _matches(d.meta, collaboration, author)
        }
        hits = [
            h for h in self.retriever(retriever).search(question, k * _FILTER_FETCH) if h.document_id in keep
        ]
        return [dataclasses.replace(h, rank=i) for i, h in enumerate(hits[:k], start=1)]

    def _documents(self) -> list[Document]:
        return list(self.chunkset.documents.values()) if self.chunkset is not None else []

    def links(self, hit: Hit, width: int = defaults.DISPLAY_LINK_CHARS) -> list[str]:
        """What the hit's chunk links to, e.g. ``"Fig. 3 -> Figure 3 (p. 4): FIG. 3. ..."``."""
        doc = self.chunkset.documents.get(hit.document_id) if self.chunkset is not None else None
        if doc is None:
            return []
        return [
            f"{text} -> {describe_target(doc, target, width)}"
            for text, target in targets_of(doc, hit.start, hit.end)
        ]

    def reader_context(self, hit: Hit, *, captions: bool = True, header: bool = False) -> str:
        """The text to hand a reader for ``hit``: its chunk, then the captions of the figures it mentions.

        ``header`` prepends the paper's one-line header (label, title, authors or collaboration,
        year, arXiv id) from its metadata and front matter.
        """
        doc = self.chunkset.documents.get(hit.document_id) if self.chunkset is not None else None
        if doc is None:
            return hit.text
        text = reader_context(doc, hit.start, hit.end, captions=captions)
        return f"{document_header(doc.meta, doc.label)}\n\n{text}" if header else text

    def compare(self, question: str, retrievers: Sequence[str], k: int = defaults.SEARCH_K) -> pd.DataFrame:
        """Side-by-side table: one row per (retriever, rank) with label, pages, section, score, why, snippet.

        A hit without a section heading of its own (a letter has none) gets where it lies in its
        paper, e.g. ``Abstract`` (:func:`~hepwb.retrieval.explain.section_of`). Retrievers that
        cannot run here get one row saying why instead.
        """
        import pandas as pd

        docs = self.chunkset.documents if self.chunkset is not None else None
        frames = []
        for name in retrievers:
            try:
                frame = hits_frame(self.search(question, name, k), docs)
            except (RetrieverUnavailableError, DependencyError) as exc:
                frame = pd.DataFrame([{"rank": 0, "why": f"unavailable: {exc}"}])
            frames.append(frame.assign(retriever=name))
        out = pd.concat(frames, ignore_index=True)
        return out[["retriever", *[c for c in out.columns if c != "retriever"]]]

    def availability(self, names: Sequence[str] | None = None) -> dict[str, str]:
        """Which retrievers can run here (see :func:`availability`)."""
        return availability(self.table, self.embedder, names)
