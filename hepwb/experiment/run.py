"""One evaluation run: corpus → documents → chunk set → LanceDB table → retrieval → metrics.

This is the single call the evaluation notebook makes::

    cfg = ExperimentConfig.from_params(chunk_size=512, retriever="bm25")
    result = run_experiment(cfg)

It chains the typed stages of :mod:`hepwb.experiment.stages` and :mod:`hepwb.experiment.cell`; each is
cached by its key (converted documents, chunk sets, embeddings, tables), so a sweep pays for every
piece of work once. The run folder holds ``metrics.json`` (a
:class:`~hepwb.runs.record.RunRecord`), ``per_question.parquet``, ``hits.parquet``,
``parameters.yaml`` and ``rerun.sh``.
"""

from __future__ import annotations

from hepwb.experiment.cell import RunResult, environment, finished_run, run_cell
from hepwb.experiment.config import DIMENSIONS, ExperimentConfig
from hepwb.experiment.stages import (
    EvalInputs,
    Timer,
    chunk_stage,
    index_stage,
    load_inputs,
    needs_windows,
    questions_path,
    table_parts_of,
)
from hepwb.index import get_embedder
from hepwb.paths import Layout
from hepwb.runtime.env import configure_runtime, release_memory

__all__ = ["DIMENSIONS", "ExperimentConfig", "RunResult", "environment", "questions_path", "run_experiment"]


def run_experiment(
    cfg: ExperimentConfig,
    *,
    layout: Layout | None = None,
    progress: bool = True,
    inputs: EvalInputs | None = None,
    reuse: bool = True,
) -> RunResult:
    """Run one configuration end to end and save its results (see the module docstring).

    Args:
        cfg: The configuration.
        layout: Artefact folders (default: this project's).
        progress: Show progress bars.
        inputs: Documents and questions already loaded by :func:`~hepwb.experiment.stages.load_inputs`.
        reuse: A finished run of this very cell (same configuration, chunk set, question file and code)
            is read back instead of run again (``RunResult.reused``); ``False`` runs it again.
    """
    configure_runtime(offline=None)
    layout = layout or Layout.default()
    timings = Timer()
    with timings("ingest_s"):
        inputs = inputs or load_inputs(cfg, layout, progress=progress)
        release_memory()  # freed buffers go back to the OS: the peak stays near the largest stage's
    with timings("chunk_s"):
        # the chunk set's files are written behind the index and the search; the run waits before saving
        cs = chunk_stage(cfg, inputs.documents, layout, inputs.log, progress=progress, background=True)
        release_memory()
    finished = finished_run(cfg, inputs, cs, layout) if reuse else None
    if finished is not None:  # this very cell ran already: read back, before any table is opened
        return finished
    embedder = get_embedder(cfg.embedding_model)
    with timings("index_s"):
        table = index_stage(
            cs, embedder, layout, parts=table_parts_of(cfg), windows=needs_windows(cfg), progress=progress
        )
        release_memory()
    return run_cell(
        cfg, inputs, cs, table, embedder, layout=layout, timings=timings, progress=progress, reuse=reuse
    )
