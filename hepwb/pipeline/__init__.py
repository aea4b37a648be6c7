"""The old name of :mod:`hepwb.experiment`, kept for one release: importing it warns.

Its modules moved to :mod:`hepwb.experiment`, :mod:`hepwb.chunking`, :mod:`hepwb.runs` and
:mod:`hepwb.report`.

``from hepwb.pipeline import run_experiment`` still works; write ``from hepwb.experiment import
run_experiment``. Its old modules (``hepwb.pipeline.cell``, ``hepwb.pipeline.chunksets``, …) import as the
moved modules themselves (:data:`hepwb.runtime.moved.MOVED`).
"""

from __future__ import annotations

import warnings

from hepwb.experiment import (
    ChunkSet,
    Comparison,
    ExperimentConfig,
    RunResult,
    Searcher,
    build_chunkset,
    check_questions,
    compare,
    ingest,
    resolve_corpus,
    run_experiment,
)

warnings.warn(
    "hepwb.pipeline is hepwb.experiment now (chunk sets: hepwb.chunking, run folders: hepwb.runs); "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "ChunkSet",
    "Comparison",
    "ExperimentConfig",
    "RunResult",
    "Searcher",
    "build_chunkset",
    "check_questions",
    "compare",
    "ingest",
    "resolve_corpus",
    "run_experiment",
]
