"""The functions a sweep runs on its workers, one per stage; each returns an :class:`Outcome`.

Tasks take plain, picklable arguments (the artefact root and configuration dicts), so they run the same
in this process, on a LocalCluster or on a batch-system worker sharing the project folder. Errors are
caught and returned (with their traceback), so one failing stage or cell never stops the others.
Workers keep documents, chunk sets, open tables and the embedding model between tasks
(:mod:`hepwb.sweep.worker`).
"""

from __future__ import annotations

import logging
import resource
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hepwb.corpus import convert_source, plan_corpus
from hepwb.experiment.cell import worker_name
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.keys import cell_name
from hepwb.hepilot.log import ProcessingLog, utc_now
from hepwb.index.parts import PARTS
from hepwb.paths import Layout
from hepwb.runs.record import CellFailure, RunRecord
from hepwb.sweep import worker
from hepwb.types import JSONObject

_log = logging.getLogger("hepwb.sweep")

__all__ = [
    "Outcome",
    "cell_task",
    "chunkset_task",
    "convert_keyed",
    "convert_task",
    "embed_task",
    "index_task",
    "record_cell_failure",
    "run_stage",
]


@dataclass
class Outcome:
    """What one task did: its stage, key, success, wall time, worker and the worker's peak memory."""

    stage: str
    key: str
    ok: bool
    wall_s: float
    worker: str
    peak_rss_mib: float
    error: str = ""
    error_type: str = ""
    traceback: str = ""
    detail: JSONObject = field(default_factory=dict)


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_stage(stage: str, key: str, body: Any) -> Outcome:
    """Run ``body`` (returning the detail) as ``stage`` of ``key``; its error is kept, not raised."""
    t = time.perf_counter()
    try:
        detail = body() or {}
    except Exception as exc:
        return Outcome(
            stage,
            key,
            False,
            time.perf_counter() - t,
            worker_name(),
            _peak_rss_mib(),
            error=str(exc),
            error_type=type(exc).__name__,
            traceback=traceback.format_exc(),
        )
    return Outcome(stage, key, True, time.perf_counter() - t, worker_name(), _peak_rss_mib(), detail=detail)


def convert_task(
    home: str, corpus: str, max_docs: int | None, prefer_latex: bool, conversion_key: str
) -> Outcome:
    """Convert one corpus file (the file whose conversion key is ``conversion_key``)."""

    def body() -> JSONObject:
        return {
            "label": convert_keyed(corpus, corpus, max_docs, prefer_latex, conversion_key, Layout(Path(home)))
        }

    return run_stage("convert", conversion_key, body)


def convert_keyed(
    folder: str | Path,
    corpus: str,
    max_docs: int | None,
    prefer_latex: bool,
    conversion_key: str,
    layout: Layout,
) -> str:
    """Convert the file of ``folder`` whose conversion key is ``conversion_key``; return its label.

    ``corpus`` names the corpus in messages (a worker's scratch ``folder`` is a copy of the client's).
    """
    items = [
        f
        for f in plan_corpus(folder, max_docs=max_docs, prefer_latex=prefer_latex)
        if f.conversion_key == conversion_key
    ]
    if not items:
        msg = f"no file of {corpus} has conversion key {conversion_key} (the corpus changed meanwhile)"
        raise FileNotFoundError(msg)
    log = ProcessingLog()
    doc = convert_source(items[0], layout, log)
    if doc is None:
        raise RuntimeError("; ".join(e.message for e in log.errors) or "conversion failed")
    return doc.label


def chunkset_task(home: str, cfg: ExperimentConfig, inputs_key: str, chunkset_id: str) -> Outcome:
    """Build (or find) the chunk set of ``cfg``'s chunker configuration (validated by the sweep's plan)."""

    def body() -> JSONObject:
        cs = worker.chunkset(home, cfg, inputs_key)
        if cs.chunkset_id != chunkset_id:
            msg = f"built chunk set {cs.chunkset_id}, planned {chunkset_id}: the corpus changed meanwhile"
            raise RuntimeError(msg)
        return {"n_chunks": len(cs.chunks), "root": str(cs.root)}

    return run_stage("chunkset", chunkset_id, body)


def embed_task(model: str, texts: list[str], batch: str) -> tuple[Any, Outcome]:
    """Embed ``texts`` with ``model``: ``(vectors, outcome)`` (the caller writes the cache).

    ``batch`` names the batch (the hash of its text keys) in the outcome.
    """
    box: JSONObject = {}

    def body() -> JSONObject:
        box["vectors"] = worker.embedder(model).embed(texts)
        return {"n_texts": len(texts)}

    out = run_stage("embed", batch, body)
    return box.get("vectors"), out


def index_task(
    home: str,
    cfg: ExperimentConfig,
    inputs_key: str,
    table: str,
    windows: bool,
    *after: Any,
    parts: Sequence[str] = tuple(PARTS),
) -> Outcome:
    """Build (or open) the LanceDB table of ``cfg``'s chunk set and embedding model (and its windows).

    ``parts``: the table parts the cells on it read (:data:`~hepwb.index.parts.PARTS`); a table no cell
    reads vectors from is built without embeddings.
    """

    def body() -> JSONObject:
        emb = worker.embedder(cfg.embedding_model)
        before = emb.n_embedded
        tbl = worker.table(home, cfg, inputs_key, windows=windows, parts=parts)
        # every vector should come from the cache the driver filled: count any embedded here
        return {"rows": int(tbl.count_rows()), "embedded_here": emb.n_embedded - before}

    return run_stage("index", table, body)


def cell_task(
    home: str,
    cfg: ExperimentConfig,
    inputs_key: str,
    key: str,
    *after: Any,
    run_dir: Path,
    sweep_id: str | None = None,
    question_subset: list[str] | None = None,
    with_ci: bool = True,
    notebook: bool = False,
) -> Outcome:
    """Retrieve and score one cell (in this worker, or as a papermill notebook) and save its run folder.

    ``cfg`` and ``run_dir`` are the sweep plan's (validated once, passed along). A failure leaves
    ``error.json`` and ``traceback.txt`` in the run folder (and removes that folder's earlier results, which
    would otherwise pass for this configuration's).
    """

    def body() -> JSONObject:
        for dep in after:
            if isinstance(dep, Outcome) and not dep.ok:
                msg = f"{dep.stage} {dep.key} failed: {dep.error}"
                raise RuntimeError(msg)
        if notebook:
            rec = worker.cell_notebook(home, cfg, run_dir)
        else:
            rec = worker.cell(home, cfg, inputs_key, sweep_id, question_subset, with_ci, run_dir=run_dir)
        return {
            "run_id": rec.run_id,
            "run_dir": str(run_dir),
            "summary": rec.summary,
            "timings": rec.timings_s,
        }

    out = run_stage("cell", key, body)
    if not out.ok:
        done = record_cell_failure(out, cfg.to_dict(), run_dir, sweep_id)
        if done is not None:  # another process (a second sweep of this grid) finished this very cell
            _log.info("cell %s: finished by another process, whose run is kept (%s)", key[:8], out.error)
            detail = {"run_id": done.run_id, "run_dir": str(run_dir), "summary": done.summary, "reused": True}
            return Outcome("cell", key, True, out.wall_s, out.worker, out.peak_rss_mib, detail=detail)
    return out


def record_cell_failure(
    out: Outcome, config: JSONObject, run_dir: Path, sweep_id: str | None
) -> RunRecord | None:
    """Write the failure ``out`` (of the cell or of a stage it needed) into the cell's run folder.

    A finished run of this very cell (``out.key``), which another process wrote meanwhile, is kept: nothing is
    removed or written, and its record is returned (``None`` when the failure was written).
    """
    done = RunRecord.finished(run_dir, out.key)
    if done is not None:
        return done
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("metrics.json", "per_question.parquet", "hits.parquet"):
        (run_dir / stale).unlink(missing_ok=True)
    CellFailure(
        run_id=f"failed-{cell_name(config)}",
        cell_key=out.key,
        stage=out.stage,
        error=out.error,
        error_type=out.error_type,
        traceback=out.traceback,
        config=config,
        worker=out.worker,
        created=utc_now(),
        sweep_id=sweep_id,
    ).save(run_dir)
    out.detail["run_dir"] = str(run_dir)
    return None
