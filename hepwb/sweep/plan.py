"""A sweep's plan: every stage it needs, each once, with its key and whether it is already done.

Planning reads file hashes and small manifests only (no model, no conversion), so ``hepwb sweep FILE
--dry-run`` is instant and an unchanged sweep is recognised as done in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hepwb.acquisition.folder import resolve_corpus
from hepwb.chunking import get_chunker
from hepwb.ids import file_sha256, short_hash
from hepwb.index.store import index_complete, index_key, table_name
from hepwb.index.windows import windows_complete, windows_key
from hepwb.io import read_json
from hepwb.paths import Layout
from hepwb.pipeline.catalog_sweeps import option_label
from hepwb.pipeline.config import ExperimentConfig
from hepwb.pipeline.corpus import failure_marker
from hepwb.pipeline.keys import SourceFile, cell_key, cell_name, chunkset_id_of, chunkset_key, plan_corpus
from hepwb.pipeline.record import RunRecord
from hepwb.pipeline.stages import needs_windows, questions_path
from hepwb.types import JSONObject

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["CellPlan", "ChunkSetPlan", "CorpusPlan", "IndexPlan", "SweepPlan", "plan_cells"]


@dataclass(frozen=True)
class CorpusPlan:
    """One corpus selection (folder, max_docs, LaTeX preference) and its files."""

    corpus: str
    max_docs: int | None
    prefer_latex: bool
    files: tuple[SourceFile, ...]
    failed: tuple[SourceFile, ...] = ()

    @property
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

    @property
    def done(self) -> bool:
        """Whether the table (and, when a cell needs them, its window tables) is complete."""
        return self.table_done and (self.windows_done or not self.windows)


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

    def pending_conversions(self) -> list[tuple[CorpusPlan, SourceFile]]:
        """Corpus files not converted yet."""
        out = []
        seen: set[str] = set()
        for cp in self.corpora.values():
            for f in cp.files:
                if f.conversion_key not in seen and not _converted(self.layout, f):
                    seen.add(f.conversion_key)
                    out.append((cp, f))
        return out

    def counts(self) -> dict[str, tuple[int, int]]:
        """``{stage: (done, total)}``."""
        conv = {
            f.conversion_key: _converted(self.layout, f) for cp in self.corpora.values() for f in cp.files
        }
        return {
            "convert": (sum(conv.values()), len(conv)),
            "chunkset": (sum(c.done for c in self.chunksets.values()), len(self.chunksets)),
            "index": (sum(i.done for i in self.indexes.values()), len(self.indexes)),
            "cell": (sum(c.done for c in self.cells), len(self.cells)),
        }

    def frame(self) -> pd.DataFrame:
        """One row per cell: its dimensions, the stages it needs and whether each is already cached."""
        import pandas as pd

        rows = []
        for c in self.cells:
            cfg = c.config
            rows.append(
                {
                    "cell": c.name,
                    "chunker": option_label(cfg.chunker, cfg.chunker_options),
                    "chunk_size": cfg.chunk_size,
                    "chunk_overlap": cfg.chunk_overlap,
                    "embedding_model": cfg.embedding_model,
                    "retriever": option_label(cfg.retriever, cfg.retriever_options),
                    "k": cfg.k,
                    "chunk set": "cached" if self.chunksets[c.chunkset_id].done else "to build",
                    "index": "cached" if self.indexes[c.index].done else "to build",
                    "result": "cached" if c.done else "to run",
                }
            )
        return pd.DataFrame(rows)

    def summary(self) -> str:
        """One line per stage: how much is cached."""
        return "\n".join(
            f"{stage:9s} {done:4d} of {total:4d} cached" for stage, (done, total) in self.counts().items()
        )


def _converted(layout: Layout, f: SourceFile) -> bool:
    return (layout.interim / f.conversion_key / "document.json").is_file()


def _corpus_plan(layout: Layout, corpus: str | None, max_docs: int | None, prefer_latex: bool) -> CorpusPlan:

    folder = str(resolve_corpus(corpus).resolve())
    files = plan_corpus(folder, max_docs=max_docs, prefer_latex=prefer_latex)
    failed = tuple(f for f in files if failure_marker(layout, f.conversion_key).is_file())
    ok = tuple(f for f in files if f not in failed)
    return CorpusPlan(folder, max_docs, prefer_latex, ok, failed)


def plan_cells(
    cells: list[ExperimentConfig],
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
    corpora: dict[tuple[str, int | None, bool], CorpusPlan] = {}
    chunksets: dict[str, ChunkSetPlan] = {}
    indexes: dict[str, IndexPlan] = {}
    out: list[CellPlan] = []
    qshas: dict[str, str] = {}
    for cfg in cells:
        ckey = (str(cfg.corpus), cfg.max_docs, cfg.prefer_latex)
        if ckey not in corpora:
            corpora[ckey] = _corpus_plan(layout, cfg.corpus, cfg.max_docs, cfg.prefer_latex)
        cp = corpora[ckey]
        qpath = str(questions_path(cfg.questions))
        qsha = qshas.setdefault(qpath, file_sha256(qpath))
        chunker = get_chunker(
            cfg.chunker,
            chunk_size=cfg.chunk_size,
            chunk_overlap=cfg.chunk_overlap,
            tokenizer=cfg.tokenizer,
            **cfg.chunker_options,
        )
        params = chunker.params()
        key = chunkset_key(chunker.name, params, [f.conversion_key for f in cp.files])
        cs_id = chunkset_id_of(chunker.name, params, key)
        if cs_id not in chunksets:
            manifest = layout.chunksets / cs_id / "chunkset.json"
            done = manifest.is_file() and read_json(manifest).get("fingerprint") == key
            chunksets[cs_id] = ChunkSetPlan(cs_id, key, cp, cfg, done)
        tname = table_name(cs_id, cfg.embedding_model)
        ikey = index_key(cs_id, cfg.embedding_model)
        if tname not in indexes:
            indexes[tname] = IndexPlan(
                tname, ikey, cs_id, cfg.embedding_model, index_complete(layout.lancedb, tname, ikey)
            )
        if needs_windows(cfg) and not indexes[tname].windows:
            ix = indexes[tname]
            ix.windows = True
            ix.windows_done = windows_complete(layout.lancedb, tname, windows_key(cs_id, cfg.embedding_model))
        config = cfg.to_dict()
        name = cell_name(config)
        run_dir = Path(cfg.run_dir) if cfg.run_dir else layout.runs / name
        k = cell_key(
            config, chunkset_id=cs_id, index=ikey, questions_sha256=qsha, question_subset=question_subset
        )
        record = RunRecord.finished(run_dir, k)
        if record is not None and notebooks and not (run_dir / "20-evaluate.ipynb").is_file():
            record = None
        inputs_key = short_hash({"corpus": cp.key, "questions": qsha, "q": qpath}, 12)
        out.append(CellPlan(cfg, name, run_dir, k, cs_id, tname, qsha, inputs_key, record))
    return SweepPlan(sweep_id, layout, corpora, chunksets, indexes, out)


def describe_cell(cell: CellPlan) -> JSONObject:
    """Plain-value summary of a cell (for progress messages and results tables)."""
    cfg = cell.config
    return {
        "cell": cell.name,
        "chunker": cfg.chunker,
        "chunk_size": cfg.chunk_size,
        "retriever": cfg.retriever,
    }
