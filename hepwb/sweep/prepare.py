"""The shared stages of a sweep, each computed once: convert → chunk sets → embeddings → tables.

Embeddings are computed for the unique chunk texts of every table still to build, split into batches
over the workers; the vectors come back here and are written to the embedding cache by this process
alone (one writer), so the table builds then only read them. In a store-backed sweep (``plan.store``) the
tasks are those of :mod:`hepwb.sweep.store_tasks`, and the vectors of each table go to the store as one file
(:class:`~hepwb.sweep.store_client.TableVectors`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from hepwb.corpus import failure_marker
from hepwb.experiment.stages import needs_windows, table_parts_of
from hepwb.files.io import write_json
from hepwb.index.cache import EmbeddingCache
from hepwb.index.parts import PARTS
from hepwb.index.windows import window_size, windows_of
from hepwb.sweep import store_tasks
from hepwb.sweep.executors import Executor
from hepwb.sweep.executors.base import ClusterLostError
from hepwb.sweep.plan import CellPlan, IndexPlan, SweepPlan
from hepwb.sweep.store_client import TableVectors
from hepwb.sweep.tasks import Outcome, chunkset_task, convert_task, embed_task, index_task
from hepwb.text.ids import short_hash, text_sha256
from hepwb.types import JSONObject

__all__ = ["PreparedStages", "mark_built", "prepare_stages"]

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

    def merge(self, other: PreparedStages) -> None:
        """Add the stages, failures and counts of a later phase (its table builds collected)."""
        self.stages += other.stages
        self.failed.update(other.failed)
        self.embedded += other.embedded
        self.unique_texts += other.unique_texts

    def collect_indexes(self, ex: Executor) -> None:
        """Add the outcomes of the table builds (all finished once their cells have) to :attr:`stages`."""
        for name, fut in self.index_futures.items():
            try:
                self.stages.append(ex.result(fut))
            except ClusterLostError:
                raise
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
    remote = plan.store
    fn, home = (
        (convert_task, str(plan.layout.root)) if remote is None else (store_tasks.convert_task, remote.site)
    )
    futures = [
        ex.submit(fn, home, cp.corpus, cp.max_docs, cp.prefer_latex, f.conversion_key, key="convert")
        for cp, f in todo
    ]
    out = []
    with _bar(progress, len(futures), "converting", "doc") as bar:
        for fut in ex.as_completed(futures):
            res = _checked(plan, ex.result(fut))
            out.append(res)
            bar.update(1)
            if not res.ok:
                _log.warning("conversion failed: %s", res.error)
                if remote is not None and res.detail.get("failure"):  # remembered here, as by a local sweep
                    write_json(failure_marker(plan.layout, res.key), res.detail["failure"])
    return out


def _checked(plan: SweepPlan, res: Outcome) -> Outcome:
    """``res``; in a store-backed sweep its bytes counted, and a store that failed it stops the sweep."""
    return res if plan.store is None else plan.store.check(res)


def prepare_stages(
    plan: SweepPlan, cells: list[CellPlan], ex: Executor, *, progress: bool = True
) -> PreparedStages:
    """Build the chunk sets, embeddings and tables ``cells`` need (what is done already is reused)."""
    home = str(plan.layout.root)
    prep = PreparedStages()
    cs_needed = {c.chunkset_id for c in cells}
    idx_needed = {c.index for c in cells}
    inputs_key = {c.chunkset_id: c.inputs_key for c in cells}
    wanted = _wanted_parts(plan, cells)
    windows = {c.index for c in cells if needs_windows(c.config)}  # tables whose windows these cells read
    # 1. chunk sets
    futures = {}
    for cs_id in sorted(cs_needed):
        cp = plan.chunksets[cs_id]
        if cp.done:
            prep.stages.append(Outcome("chunkset", cs_id, True, 0.0, "", 0.0, detail={"reused": True}))
            continue
        if plan.store is None:  # the plan's validated configuration, passed along as it is
            futures[cs_id] = ex.submit(
                chunkset_task, home, cp.config, inputs_key[cs_id], cs_id, key=f"chunkset-{cs_id}"
            )
        else:
            documents = [f.conversion_key for f in cp.corpus.files]
            futures[cs_id] = ex.submit(
                store_tasks.chunkset_task,
                plan.store.site,
                cp.config.to_dict(),
                inputs_key[cs_id],
                cs_id,
                key=f"chunkset-{cs_id}",
                documents=documents,
            )
    with _bar(progress, len(futures), "chunking", "set") as bar:
        for fut in ex.as_completed(list(futures.values())):
            res = _checked(plan, ex.result(fut))
            prep.stages.append(res)
            bar.update(1)
            if not res.ok:
                prep.failed[res.key] = res
                _log.error("chunk set %s failed: %s", res.key, res.error)
    # 2. embeddings of every table still to build (unique texts, missing from the cache)
    todo_idx = [
        plan.indexes[n] for n in sorted(idx_needed) if not _done(plan.indexes[n], wanted[n], n in windows)
    ]
    # a table none of these cells reads vectors from is built without them: nothing of it is embedded
    todo_idx = [ix for ix in todo_idx if ix.chunkset_id not in prep.failed and "vector" in wanted[ix.name]]
    for model in sorted({ix.model for ix in todo_idx}):
        _embed_model(plan, [ix for ix in todo_idx if ix.model == model], model, ex, prep, progress)
    # 3. tables (cells wait for theirs)
    by_name = {c.index: c for c in cells}
    for name in sorted(idx_needed):
        ix = plan.indexes[name]
        if ix.chunkset_id in prep.failed:
            prep.failed[name] = prep.failed[ix.chunkset_id]
            continue
        if _done(ix, wanted[name], name in windows):
            prep.stages.append(Outcome("index", name, True, 0.0, "", 0.0, detail={"reused": True}))
            continue
        cell = by_name[name]
        where = {} if plan.store is None else {"artefacts": plan.store.index_artefacts(plan, ix)}
        prep.index_futures[name] = ex.submit(
            index_task if plan.store is None else store_tasks.index_task,
            home if plan.store is None else plan.store.site,
            cell.config if plan.store is None else cell.config.to_dict(),
            cell.inputs_key,
            name,
            name in windows,
            key=f"index-{ix.chunkset_id}",
            parts=sorted(wanted[name]),
            **where,
        )
    return prep


def _wanted_parts(plan: SweepPlan, cells: list[CellPlan]) -> dict[str, frozenset[str]]:
    """The table parts ``cells`` read, per table (every part in a store-backed sweep: whole tables)."""
    wanted: dict[str, frozenset[str]] = {}
    for c in cells:
        wanted[c.index] = wanted.get(c.index, frozenset()) | table_parts_of(c.config)
    return dict.fromkeys(wanted, PARTS) if plan.store is not None else wanted


def _done(ix: IndexPlan, parts: frozenset[str], windows: bool) -> bool:
    """Whether table ``ix`` has ``parts`` (and its window tables, when ``windows``) already."""
    return ix.table_done and parts <= ix.present and (ix.windows_done or not windows)


def mark_built(plan: SweepPlan, prep: PreparedStages, cells: list[CellPlan]) -> None:
    """Record in ``plan`` the chunk sets and table parts ``prep`` built for ``cells``, for a later phase."""
    ok = {(s.stage, s.key) for s in prep.stages if s.ok}
    for c in cells:
        if ("chunkset", c.chunkset_id) in ok:
            plan.chunksets[c.chunkset_id].done = True
        ix = plan.indexes[c.index]
        if ("index", c.index) in ok:
            ix.table_done = True
            ix.present = ix.present | table_parts_of(c.config)
            ix.windows_done = ix.windows_done or needs_windows(c.config)


def _embed_model(
    plan: SweepPlan, tables: list[IndexPlan], model: str, ex: Executor, prep: PreparedStages, progress: bool
) -> None:
    """Embed every unique text ``tables`` need (their windows too when they have window tables)."""
    import pyarrow.parquet as pq

    texts: dict[str, str] = {}
    keys: dict[str, list[str]] = {}  # the text hashes of each chunk set (``+w``: of its windows)
    size = window_size(model) if any(ix.windows for ix in tables) else 0
    for ix in tables:  # one table per chunk set for one model
        cs_id = ix.chunkset_id
        if plan.store is not None:  # this process reads the chunk set: it is brought here
            plan.store.fetch_chunkset(plan.chunksets[cs_id])
        path = plan.layout.chunksets / cs_id / "chunks.parquet"
        keys[cs_id], keys[f"{cs_id}+w"] = [], []
        for t in pq.read_table(path, columns=["text"]).column("text"):
            s = t.as_py()
            keys[cs_id].append(text_sha256(s))
            texts.setdefault(keys[cs_id][-1], s)
            for a, b in windows_of(s, model, size=size) if ix.windows else ():
                keys[f"{cs_id}+w"].append(text_sha256(s[a:b]))
                texts.setdefault(keys[f"{cs_id}+w"][-1], s[a:b])
    sink: EmbeddingCache | TableVectors
    if plan.store is None:
        sink = EmbeddingCache(plan.layout.lancedb, model)
    else:
        sink = plan.store.vectors(plan, tables, keys)
    missing = sink.missing(list(texts))
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
            keys_done = futures[fut]
            pending.update(zip(keys_done, vectors, strict=True))
            if len(pending) >= CACHE_FLUSH:  # written in blocks: a killed sweep keeps most of its work
                sink.add(pending)
                pending = {}
            prep.embedded += len(keys_done)
            bar.update(len(keys_done))
    sink.add(pending)
    if isinstance(sink, TableVectors):
        sink.close()
