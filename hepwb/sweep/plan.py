"""A sweep's plan: every stage it needs, each once, with its key and whether it is already done.

Planning reads file hashes and small manifests only (no model, no conversion), so ``hepwb sweep FILE
--dry-run`` is instant and an unchanged sweep is recognised as done in well under a second.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb.acquisition.folder import file_labels, resolve_corpus
from hepwb.catalog.sweeps import option_label
from hepwb.chunking import get_chunker
from hepwb.chunking.chunksets import finished_fingerprint
from hepwb.chunking.keys import chunkset_id_of, chunkset_key
from hepwb.corpus import SourceFile, failure_marker, plan_corpus
from hepwb.evaluation import load_questions
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.keys import cell_key, cell_name
from hepwb.experiment.stages import left_out, needs_windows, questions_path, say_once, table_parts_of
from hepwb.index.chunk_store import index_complete, index_key, table_name
from hepwb.index.parts import table_parts_present
from hepwb.index.windows import windows_complete, windows_key
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord, run_folder
from hepwb.text.ids import canonical_json, file_sha256, short_hash
from hepwb.types import JSONObject

if TYPE_CHECKING:
    import pandas as pd


__all__ = [
    "CellPlan",
    "ChunkSetPlan",
    "CorpusPlan",
    "IndexPlan",
    "Planner",
    "SweepPlan",
    "plan_cells",
    "plan_row",
    "stage_counts",
    "summarize_counts",
]

_log = logging.getLogger("hepwb.sweep")


@dataclass(frozen=True)
class CorpusPlan:
    """One corpus selection (folder, max_docs, LaTeX preference) and its files."""

    corpus: str
    max_docs: int | None
    prefer_latex: bool
    files: tuple[SourceFile, ...]
    failed: tuple[SourceFile, ...] = ()

    @functools.cached_property
    def key(self) -> str:
        """Key of the converted corpus (its conversion keys)."""
        return short_hash(sorted(f.conversion_key for f in self.files), 12)


@dataclass
class ChunkSetPlan:
    """A chunk set: built once for every cell that uses it."""

    chunkset_id: str
    key: str
    corpus: CorpusPlan
    config: ExperimentConfig
    done: bool


@dataclass
class IndexPlan:
    """A LanceDB table (embeddings + indexes) of one chunk set × embedding model (and its window tables)."""

    name: str
    key: str
    chunkset_id: str
    model: str
    table_done: bool
    windows: bool = False
    windows_done: bool = False
    parts: frozenset[str] = frozenset()
    """The table parts its cells read (:data:`~hepwb.index.parts.PARTS`): a table no cell reads vectors
    from is built, and stays, without embeddings."""
    present: frozenset[str] = frozenset()
    """The parts a complete table has already."""

    @property
    def vectors(self) -> bool:
        """Whether a cell on this table reads its vectors (they are embedded for it)."""
        return "vector" in self.parts

    @property
    def done(self) -> bool:
        """Whether the table (with the parts and window tables its cells read) is complete."""
        return self.table_done and self.parts <= self.present and (self.windows_done or not self.windows)


@dataclass
class CellPlan:
    """One cell: retrieval and scoring of one configuration."""

    config: ExperimentConfig
    name: str
    run_dir: Path
    key: str
    chunkset_id: str
    index: str
    questions_sha256: str
    inputs_key: str
    record: RunRecord | None = field(default=None, repr=False)

    @property
    def done(self) -> bool:
        """Whether a finished run with this cell's key is in its folder."""
        return self.record is not None


@dataclass
class SweepPlan:
    """Every stage of a sweep, deduplicated (see :func:`plan_cells`)."""

    sweep_id: str
    layout: Layout
    corpora: dict[tuple[str, int | None, bool], CorpusPlan]
    chunksets: dict[str, ChunkSetPlan]
    indexes: dict[str, IndexPlan]
    cells: list[CellPlan]
    store: Any = None
    """A store-backed sweep's client (:class:`~hepwb.sweep.store_client.StoreSweep`); ``None``: local disk."""
    converted: set[str] | None = None
    """A store-backed sweep's conversion keys whose documents are in the store (done)."""

    def _converted(self, f: SourceFile) -> bool:
        if self.converted is not None:
            return f.conversion_key in self.converted
        return _converted(self.layout, f)

    def pending_conversions(self) -> list[tuple[CorpusPlan, SourceFile]]:
        """Corpus files not converted yet."""
        out = []
        seen: set[str] = set()
        for cp in self.corpora.values():
            for f in cp.files:
                if f.conversion_key not in seen and not self._converted(f):
                    seen.add(f.conversion_key)
                    out.append((cp, f))
        return out

    def counts(self) -> dict[str, tuple[int, int]]:
        """``{stage: (done, total)}``."""
        counts = stage_counts(self.layout, self.corpora, self.chunksets, self.indexes)
        if self.converted is not None:
            conv = {f.conversion_key: self._converted(f) for cp in self.corpora.values() for f in cp.files}
            counts["convert"] = (sum(conv.values()), len(conv))
        return {**counts, "cell": (sum(c.done for c in self.cells), len(self.cells))}

    def frame(self) -> pd.DataFrame:
        """One row per cell: its dimensions, the stages it needs and whether each is already cached."""
        import pandas as pd

        rows = [plan_row(self, c) for c in self.cells]
        return pd.DataFrame(rows)

    def summary(self) -> str:
        """One line per stage: how much is cached."""
        return summarize_counts(self.counts())


def summarize_counts(counts: dict[str, tuple[int, int]]) -> str:
    """One line per stage of ``{stage: (done, total)}``: how much is cached.

    Example:
        >>> print(summarize_counts({"cell": (2, 12000)}))
        cell           2 of 12,000 cached
    """
    width = max(len(f"{total:,}") for _, total in counts.values())
    return "\n".join(
        f"{stage:9s} {done:>{width},} of {total:>{width},} cached" for stage, (done, total) in counts.items()
    )


def stage_counts(
    layout: Layout,
    corpora: dict[tuple[str, int | None, bool], CorpusPlan],
    chunksets: dict[str, ChunkSetPlan],
    indexes: dict[str, IndexPlan],
) -> dict[str, tuple[int, int]]:
    """``{stage: (done, total)}`` of the shared stages (conversion, chunk sets, tables)."""
    conv = {f.conversion_key: _converted(layout, f) for cp in corpora.values() for f in cp.files}
    return {
        "convert": (sum(conv.values()), len(conv)),
        "chunkset": (sum(c.done for c in chunksets.values()), len(chunksets)),
        "index": (sum(i.done for i in indexes.values()), len(indexes)),
    }


def plan_row(plan: SweepPlan | Planner, c: CellPlan) -> JSONObject:
    """One cell's row of :meth:`SweepPlan.frame`: its dimensions and which stages are cached."""
    cfg = c.config
    return {
        "cell": c.name,
        "chunker": option_label(cfg.chunker, cfg.chunker_options),
        "chunk_size": cfg.chunk_size,
        "chunk_overlap": cfg.chunk_overlap,
        "embedding_model": cfg.embedding_model,
        "retriever": option_label(cfg.retriever, cfg.retriever_options),
        "k": cfg.k,
        "chunk set": "cached" if plan.chunksets[c.chunkset_id].done else "to build",
        "index": "cached" if plan.indexes[c.index].done else "to build",
        "result": "cached" if c.done else "to run",
    }


def _converted(layout: Layout, f: SourceFile) -> bool:
    return (layout.interim / f.conversion_key / "document.json").is_file()


def _corpus_plan(layout: Layout, corpus: str | None, max_docs: int | None, prefer_latex: bool) -> CorpusPlan:
    folder = str(resolve_corpus(corpus).resolve())
    files = plan_corpus(folder, max_docs=max_docs, prefer_latex=prefer_latex)
    failed = tuple(f for f in files if failure_marker(layout, f.conversion_key).is_file())
    ok = tuple(f for f in files if f not in failed)
    return CorpusPlan(folder, max_docs, prefer_latex, ok, failed)


def _say_left_out(cp: CorpusPlan, qpath: str) -> None:
    """One line (once) naming the papers a sweep's ``max_docs`` leaves out and the questions citing them."""
    files = file_labels(Path(cp.corpus))
    used = {f.label for f in (*cp.files, *cp.failed)}
    gone = [label for label, stem in files if label not in used and stem not in used]
    if gone:
        every = load_questions(qpath)
        asked = [q.qid for q in every if all(e.doc in used for e in q.evidence)]
        line = left_out(cp.max_docs, len(files), gone, [q.qid for q in every], asked)
        say_once((cp.corpus, cp.max_docs, qpath), line)


class Planner:
    """Plans cells one at a time, sharing corpora, chunk sets and tables between them.

    Each distinct corpus, chunker configuration, chunk set and table is looked at once, so planning
    costs a few hashes and one ``stat`` per cell (a 10^5-cell dry run streams through it).

    Args:
        layout: Artefact folders.
        question_subset: Cells scored on these questions only (successive halving).
        notebooks: A cell counts as done only when its executed notebook is there too.
    """

    def __init__(
        self, layout: Layout, *, question_subset: list[str] | None = None, notebooks: bool = False
    ) -> None:
        self.layout = layout
        self.question_subset = question_subset
        self.notebooks = notebooks
        self.corpora: dict[tuple[str, int | None, bool], CorpusPlan] = {}
        self.chunksets: dict[str, ChunkSetPlan] = {}
        self.indexes: dict[str, IndexPlan] = {}
        self._questions: dict[str | None, tuple[str, str]] = {}
        self._runs = layout.runs
        self.beside: list[str] = []
        """Cells whose configuration's folder holds another finished run (kept; theirs go beside it)."""
        self._chunkers: dict[tuple[str, int, float, str, str, str], tuple[str, str]] = {}
        self._keys: dict[tuple[str, str], tuple[str, str]] = {}

    def _chunkset(self, cfg: ExperimentConfig, cp: CorpusPlan) -> str:
        options = canonical_json(cfg.chunker_options) if cfg.chunker_options else ""
        ident = (cfg.chunker, cfg.chunk_size, cfg.chunk_overlap, cfg.tokenizer, options, cp.key)
        if ident not in self._chunkers:
            chunker = get_chunker(
                cfg.chunker,
                chunk_size=cfg.chunk_size,
                chunk_overlap=cfg.chunk_overlap,
                tokenizer=cfg.tokenizer,
                **cfg.chunker_options,
            )
            params = chunker.params()
            key = chunkset_key(chunker.name, params, [f.conversion_key for f in cp.files])
            self._chunkers[ident] = (chunkset_id_of(chunker.name, params, key), key)
        cs_id, key = self._chunkers[ident]
        if cs_id not in self.chunksets:
            done = finished_fingerprint(self.layout.chunksets / cs_id) == key
            self.chunksets[cs_id] = ChunkSetPlan(cs_id, key, cp, cfg, done)
        return cs_id

    def _index(self, cfg: ExperimentConfig, cs_id: str) -> tuple[str, str]:
        ident = (cs_id, cfg.embedding_model)
        if ident not in self._keys:
            self._keys[ident] = (
                table_name(cs_id, cfg.embedding_model),
                index_key(cs_id, cfg.embedding_model),
            )
        tname, ikey = self._keys[ident]
        if tname not in self.indexes:
            done = index_complete(self.layout.lancedb, tname, ikey)
            present = table_parts_present(self.layout.lancedb, tname) if done else frozenset()
            self.indexes[tname] = IndexPlan(tname, ikey, cs_id, cfg.embedding_model, done, present=present)
        ix = self.indexes[tname]
        ix.parts |= table_parts_of(cfg)
        if needs_windows(cfg) and not self.indexes[tname].windows:
            ix = self.indexes[tname]
            ix.windows = True
            wkey = windows_key(cs_id, cfg.embedding_model)
            ix.windows_done = windows_complete(self.layout.lancedb, tname, wkey)
        return tname, ikey

    @staticmethod
    @functools.lru_cache(maxsize=256)
    def _inputs_key(corpus_key: str, qsha: str, qpath: str) -> str:
        return short_hash({"corpus": corpus_key, "questions": qsha, "q": qpath}, 12)

    def add(self, cfg: ExperimentConfig) -> CellPlan:
        """Plan one cell (and the stages it needs that no earlier cell needed)."""
        ckey = (str(cfg.corpus), cfg.max_docs, cfg.prefer_latex)
        if ckey not in self.corpora:
            self.corpora[ckey] = _corpus_plan(self.layout, cfg.corpus, cfg.max_docs, cfg.prefer_latex)
        cp = self.corpora[ckey]
        if cfg.questions not in self._questions:
            qpath = str(questions_path(cfg.questions))
            self._questions[cfg.questions] = (qpath, file_sha256(qpath))
        qpath, qsha = self._questions[cfg.questions]
        if cfg.max_docs is not None:
            _say_left_out(cp, qpath)
        cs_id = self._chunkset(cfg, cp)
        tname, ikey = self._index(cfg, cs_id)
        config = cfg.to_dict()
        name = cell_name(config)
        home = Path(cfg.run_dir) if cfg.run_dir else self._runs / name
        k = cell_key(
            config, chunkset_id=cs_id, index=ikey, questions_sha256=qsha, question_subset=self.question_subset
        )
        run_dir = run_folder(home, k)  # beside a finished run of other inputs, never over it
        if run_dir != home:
            self.beside.append(home.name)
        record = RunRecord.finished(run_dir, k)
        if record is not None and self.notebooks and not (run_dir / "20-evaluate.ipynb").is_file():
            record = None
        inputs_key = self._inputs_key(cp.key, qsha, qpath)
        return CellPlan(cfg, name, run_dir, k, cs_id, tname, qsha, inputs_key, record)

    def plan(self, sweep_id: str, cells: list[CellPlan]) -> SweepPlan:
        """The :class:`SweepPlan` of ``cells`` (planned by :meth:`add`)."""
        if self.beside:
            _log.info(
                "%d cell(s) ran before on other inputs (question file, corpus or code): those runs are kept, "
                "and these are read from or written to folders beside them (e.g. %s-<key>)",
                len(self.beside),
                self.beside[0],
            )
        return SweepPlan(sweep_id, self.layout, self.corpora, self.chunksets, self.indexes, cells)


def plan_cells(
    cells: Iterable[ExperimentConfig],
    layout: Layout,
    *,
    sweep_id: str,
    question_subset: list[str] | None = None,
    notebooks: bool = False,
) -> SweepPlan:
    """Plan ``cells``: the corpora, chunk sets, tables and results they need, each with its done state.

    Args:
        cells: The validated cell configurations.
        layout: Artefact folders.
        sweep_id: The sweep's id.
        question_subset: Cells scored on these questions only (successive halving).
        notebooks: A cell counts as done only when its executed notebook is there too.
    """
    planner = Planner(layout, question_subset=question_subset, notebooks=notebooks)
    return planner.plan(sweep_id, [planner.add(cfg) for cfg in cells])


def describe_cell(cell: CellPlan) -> JSONObject:
    """Plain-value summary of a cell (for progress messages and results tables)."""
    cfg = cell.config
    return {
        "cell": cell.name,
        "chunker": cfg.chunker,
        "chunk_size": cfg.chunk_size,
        "retriever": cfg.retriever,
    }
