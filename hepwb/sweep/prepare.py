"""The shared stages of a sweep, each computed once: convert → chunk sets → embeddings → tables.

Embeddings are computed for the unique chunk texts of every table still to build, split into batches
over the workers; the vectors come back here and are written to the embedding cache by this process
alone (one writer), so the table builds then only read them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from hepwb.ids import short_hash, text_sha256
from hepwb.index.cache import EmbeddingCache
from hepwb.index.windows import window_size, windows_of
from hepwb.sweep.executors import Executor
from hepwb.sweep.plan import CellPlan, SweepPlan
from hepwb.sweep.tasks import Outcome, chunkset_task, convert_task, embed_task, index_task
from hepwb.types import JSONObject

__all__ = ["PreparedStages", "prepare_stages"]

_log = logging.getLogger("hepwb.sweep")
EMBED_BATCH = 64
CACHE_FLUSH = 1024


@dataclass
class PreparedStages:
    """The stage outcomes of a sweep and, per table, the future (or outcome) of its build."""

    stages: list[Outcome] = field(default_factory=list)
    index_futures: JSONObject = field(default_factory=dict)
    failed: dict[str, Outcome] = field(default_factory=dict)
    """``{chunkset id or table name: the failed outcome}`` (its cells fail with that error)."""
    embedded: int = 0
    unique_texts: int = 0

    def collect_indexes(self, ex: Executor) -> None:
        """Add the outcomes of the table builds (all finished once their cells have) to :attr:`stages`."""
        for name, fut in self.index_futures.items():
            try:
                self.stages.append(ex.result(fut))
            except Exception as exc:  # a lost worker; its cells already failed
                self.stages.append(Outcome("index", name, False, 0.0, "", 0.0, error=str(exc)))
        self.index_futures = {}


def _bar(progress: bool, total: int, desc: str, unit: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not progress or total == 0, leave=False)


def convert_pending(plan: SweepPlan, cells: list[CellPlan], ex: Executor, *, progress: bool) -> list[Outcome]:
    """Convert the corpus files the ``cells`` need that are not converted yet (in parallel)."""
    needed = [plan.corpora[(str(c.config.corpus), c.config.max_docs, c.config.prefer_latex)] for c in cells]
    todo = [(cp, f) for cp, f in plan.pending_conversions() if any(cp is n for n in needed)]
    home = str(plan.layout.root)
    futures = [
        ex.submit(
            convert_task, home, cp.corpus, cp.max_docs, cp.prefer_latex, f.conversion_key, key="convert"
        )
        for cp, f in todo
    ]
    out = []
    with _bar(progress, len(futures), "converting", "doc") as bar:
        for fut in ex.as_completed(futures):
            res = ex.result(fut)
            out.append(res)
            bar.update(1)
            if not res.ok:
                _log.warning("conversion failed: %s", res.error)
    return out


def prepare_stages(
    plan: SweepPlan, cells: list[CellPlan], ex: Executor, *, progress: bool = True
) -> PreparedStages:
    """Build the chunk sets, embeddings and tables ``cells`` need (what is done already is reused)."""
    home = str(plan.layout.root)
    prep = PreparedStages()
    cs_needed = {c.chunkset_id for c in cells}
    idx_needed = {c.index for c in cells}
    inputs_key = {c.chunkset_id: c.inputs_key for c in cells}
    # 1. chunk sets
    futures = {}
    for cs_id in sorted(cs_needed):
        cp = plan.chunksets[cs_id]
        if cp.done:
            prep.stages.append(Outcome("chunkset", cs_id, True, 0.0, "", 0.0, detail={"reused": True}))
            continue
        cfg = cp.config.to_dict()
        futures[cs_id] = ex.submit(
            chunkset_task, home, cfg, inputs_key[cs_id], cs_id, key=f"chunkset-{cs_id}"
        )
    with _bar(progress, len(futures), "chunking", "set") as bar:
        for fut in ex.as_completed(list(futures.values())):
            res = ex.result(fut)
            prep.stages.append(res)
            bar.update(1)
            if not res.ok:
                prep.failed[res.key] = res
                _log.error("chunk set %s failed: %s", res.key, res.error)
    # 2. embeddings of every table still to build (unique texts, missing from the cache)
    todo_idx = [plan.indexes[n] for n in sorted(idx_needed) if not plan.indexes[n].done]
    todo_idx = [ix for ix in todo_idx if ix.chunkset_id not in prep.failed]
    for model in sorted({ix.model for ix in todo_idx}):
        mine = [ix for ix in todo_idx if ix.model == model]
        windowed = [ix.chunkset_id for ix in mine if ix.windows]
        _embed_model(plan, [ix.chunkset_id for ix in mine], windowed, model, ex, prep, progress)
    # 3. tables (cells wait for theirs)
    by_name = {c.index: c for c in cells}
    for name in sorted(idx_needed):
        ix = plan.indexes[name]
        if ix.chunkset_id in prep.failed:
            prep.failed[name] = prep.failed[ix.chunkset_id]
            continue
        if ix.done:
            prep.stages.append(Outcome("index", name, True, 0.0, "", 0.0, detail={"reused": True}))
            continue
        cell = by_name[name]
        prep.index_futures[name] = ex.submit(
            index_task,
            home,
            cell.config.to_dict(),
            cell.inputs_key,
            name,
            ix.windows,
            key=f"index-{ix.chunkset_id}",
        )
    return prep


def _embed_model(
    plan: SweepPlan,
    chunkset_ids: list[str],
    windowed: list[str],
    model: str,
    ex: Executor,
    prep: PreparedStages,
    progress: bool,
) -> None:
    """Embed every unique text the tables of ``chunkset_ids`` need (their windows too for ``windowed``)."""
    import pyarrow.parquet as pq

    texts: dict[str, str] = {}
    size = window_size(model) if windowed else 0
    for cs_id in chunkset_ids:
        column = pq.read_table(plan.layout.chunksets / cs_id / "chunks.parquet", columns=["text"]).column(
            "text"
        )
        for t in column:
            s = t.as_py()
            texts.setdefault(text_sha256(s), s)
            if cs_id in windowed:
                for a, b in windows_of(s, model, size=size):
                    texts.setdefault(text_sha256(s[a:b]), s[a:b])
    cache = EmbeddingCache(plan.layout.lancedb, model)
    missing = cache.missing(list(texts))
    prep.unique_texts += len(texts)
    # longest first: the slowest batches start early and the short ones fill in at the end
    missing.sort(key=lambda k: -len(texts[k]))
    batches = [missing[i : i + EMBED_BATCH] for i in range(0, len(missing), EMBED_BATCH)]
    futures = {
        ex.submit(
            embed_task, model, [texts[k] for k in b], f"{model}:{short_hash(b, 12)}", key="embed", gpu=True
        ): b
        for b in batches
    }
    pending: JSONObject = {}
    with _bar(progress, len(missing), f"embedding ({model})", "text") as bar:
        for fut in ex.as_completed(list(futures)):
            vectors, res = ex.result(fut)
            prep.stages.append(res)
            if not res.ok:
                _log.error("embedding a batch failed (tables will embed what is missing): %s", res.error)
                continue
            keys = futures[fut]
            pending.update(zip(keys, vectors, strict=True))
            if len(pending) >= CACHE_FLUSH:  # written in blocks: a killed sweep keeps most of its work
                cache.add(pending)
                pending = {}
            prep.embedded += len(keys)
            bar.update(len(keys))
    cache.add(pending)
