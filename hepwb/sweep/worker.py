"""What a sweep worker process keeps loaded between tasks: documents, chunk sets, tables, models.

Every cache is keyed by content (the inputs key of the corpus and question set, chunk set ids, index
keys), so a long-lived worker attached to several sweeps never serves a stale object. Corpora and chunk
sets are bounded by bytes (:data:`hepwb.defaults.WORKER_CACHE_MIB` each) as well as by count, so a
worker's memory stays flat over a long grid of large corpora.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Collection
from pathlib import Path
from typing import Any

from hepwb import defaults
from hepwb.chunking.chunksets import ChunkSet
from hepwb.experiment.cell import run_cell
from hepwb.experiment.config import CorpusInputs, ExperimentConfig
from hepwb.experiment.notebook import EVALUATE_NOTEBOOK, notebook_parameters, run_notebook
from hepwb.experiment.stages import (
    EvalInputs,
    Timer,
    chunk_stage,
    index_stage,
    load_documents,
    load_inputs,
    needs_windows,
)
from hepwb.hepilot.log import ProcessingLog
from hepwb.index import get_embedder
from hepwb.index.chunk_store import index_key
from hepwb.models.embedder import Embedder
from hepwb.paths import Layout
from hepwb.retrieval.base import table_parts
from hepwb.runs.record import RunRecord
from hepwb.runtime.env import configure_runtime, release_memory
from hepwb.types import Document

__all__ = ["cell", "cell_notebook", "chunkset", "documents", "embedder", "inputs", "size_bytes", "table"]


def size_bytes(value: Any) -> int:
    """Estimated bytes of a cached corpus (its documents) or chunk set (its chunks); 0 for anything else.

    Python strings take 1, 2 or 4 bytes a character, and documents carry blocks and metadata about as
    large as their text, so the estimate is the strings' own size, doubled for documents; a stored paper
    not read yet costs about a kilobyte (:class:`~hepwb.corpus.stored.StoredDocument`; reading it to
    weigh it would load the corpus).

    Example:
        >>> size_bytes(["not a corpus"])
        0
    """
    if isinstance(value, EvalInputs):
        return sum(2 * sys.getsizeof(d.markdown) if d.loaded else 1024 for d in value.documents)
    if isinstance(value, ChunkSet):
        return sum(sys.getsizeof(c.text) + _CHUNK_OVERHEAD for c in value.chunks)
    return 0


_CHUNK_OVERHEAD = 400  # a Chunk's slots, ids, section path and pages


class _LRU(OrderedDict[Any, Any]):
    """Least recently used entries go first: above ``size`` entries or ``budget_mib`` (:func:`size_bytes`)."""

    def __init__(self, size: int, budget_mib: float | None = None) -> None:
        super().__init__()
        self.size = size
        self.budget = None if budget_mib is None else budget_mib * 2**20
        self.sizes: dict[Any, int] = {}

    def get_or(self, key: Any, make: Any) -> Any:
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = make()
        self[key] = value
        self.sizes[key] = size_bytes(value) if self.budget is not None else 0
        evicted = False
        while len(self) > self.size or (
            self.budget is not None and len(self) > 1 and sum(self.sizes.values()) > self.budget
        ):
            old, _ = self.popitem(last=False)
            self.sizes.pop(old, None)
            evicted = True
        if evicted:
            release_memory()  # the evicted objects' pages go back to the operating system
        return value


_DOCUMENTS = _LRU(2, defaults.WORKER_CACHE_MIB)
_INPUTS = _LRU(2, defaults.WORKER_CACHE_MIB)
_CHUNKSETS = _LRU(6, defaults.WORKER_CACHE_MIB)
_TABLES = _LRU(16)
_configured = False


def _setup() -> None:
    """Once per process: telemetry off, offline defaults, quiet libraries."""
    global _configured
    if not _configured:
        configure_runtime(offline=None)
        _configured = True


def embedder(model: str) -> Embedder:
    """The process's embedder for ``model`` (loaded once)."""
    _setup()

    return get_embedder(model)


def documents(home: str, src: CorpusInputs, inputs_key: str) -> tuple[list[Document], ProcessingLog]:
    """The converted documents of ``src``'s corpus and their log (no question read: chunking needs none)."""
    _setup()
    key = (home, inputs_key, src.corpus, src.max_docs, src.prefer_latex)

    def load() -> tuple[list[Document], ProcessingLog]:
        log = ProcessingLog()
        return load_documents(src, Layout(Path(home)), log, progress=False), log

    return _DOCUMENTS.get_or(key, load)  # type: ignore[no-any-return]


def inputs(home: str, src: CorpusInputs, inputs_key: str) -> EvalInputs:
    """Documents, questions and located evidence of ``src``'s corpus and question set."""
    _setup()
    key = (home, inputs_key, src.corpus, src.max_docs, src.prefer_latex, src.questions, src.accept_unscored)

    def load() -> EvalInputs:
        docs, log = documents(home, src, inputs_key)
        return load_inputs(src, Layout(Path(home)), progress=False, documents=docs, log=log)

    return _INPUTS.get_or(key, load)  # type: ignore[no-any-return]


def chunkset(home: str, cfg: ExperimentConfig, inputs_key: str) -> ChunkSet:
    """The chunk set of ``cfg`` (built on first use, then read from disk or memory); reads no question."""
    docs, log = documents(home, cfg.corpus_inputs, inputs_key)
    key = (
        home,
        inputs_key,
        cfg.chunker,
        cfg.chunk_size,
        cfg.chunk_overlap,
        cfg.tokenizer,
        tuple(sorted(cfg.chunker_options.items())),
    )
    return _CHUNKSETS.get_or(  # type: ignore[no-any-return]
        key, lambda: chunk_stage(cfg, docs, Layout(Path(home)), log, progress=False)
    )


def table(
    home: str,
    cfg: ExperimentConfig,
    inputs_key: str,
    *,
    windows: bool = False,
    parts: Collection[str] = (),
) -> Any:
    """The open LanceDB table of ``cfg``'s chunk set and embedding model (built on first use).

    ``windows``: its window tables too (they are also built when ``cfg``'s retriever reads windows);
    ``parts``: the table parts to build (:data:`~hepwb.index.parts.PARTS`) besides those its retriever reads.
    """
    cs = chunkset(home, cfg, inputs_key)
    windows = windows or needs_windows(cfg)
    # windows are read by retrievers that read vectors: one look at the retriever says what it reads
    wanted = frozenset(parts) | table_parts(cfg.retriever, cfg.retriever_options)
    key = (home, index_key(cs.chunkset_id, cfg.embedding_model), windows, tuple(sorted(wanted)))
    return _TABLES.get_or(
        key,
        lambda: index_stage(
            cs, embedder(cfg.embedding_model), Layout(Path(home)), parts=wanted, windows=windows
        ),
    )


def cell(
    home: str,
    cfg: ExperimentConfig,
    inputs_key: str,
    sweep_id: str | None,
    question_subset: list[str] | None,
    with_ci: bool,
    recorded: ExperimentConfig | None = None,
    run_dir: Path | None = None,
) -> RunRecord:
    """Retrieve and score one cell here, reusing everything loaded; returns its record.

    ``recorded``: the configuration the run is keyed and recorded by, when ``cfg`` reads copies of its
    corpus and question file (a store-backed sweep's scratch folder) under other paths. ``run_dir``: the
    plan's run folder (else the configuration's own, see :func:`~hepwb.experiment.cell.run_cell`).
    """
    timings = Timer()
    with timings("load_s"):
        ins = inputs(home, cfg.corpus_inputs, inputs_key)
        cs = chunkset(home, cfg, inputs_key)
        tbl = table(home, cfg, inputs_key)
        emb = embedder(cfg.embedding_model)
    res = run_cell(
        recorded if recorded is not None else cfg,
        ins,
        cs,
        tbl,
        emb,
        layout=Layout(Path(home)),
        timings=timings,
        question_subset=question_subset,
        with_ci=with_ci,
        sweep_id=sweep_id,
        progress=False,
        run_dir=run_dir,
    )
    return res.record


def cell_notebook(home: str, cfg: ExperimentConfig, run_dir: Path) -> RunRecord:
    """Run one cell as the ``20-evaluate`` notebook (papermill) into ``run_dir``; returns its record."""
    _setup()
    layout = Layout(Path(home))
    params = notebook_parameters(cfg.to_dict(), run_dir, layout)
    (run_dir / RunRecord.FILE).unlink(missing_ok=True)
    run_notebook(EVALUATE_NOTEBOOK, run_dir / EVALUATE_NOTEBOOK, params, layout)
    return RunRecord.load(run_dir)
