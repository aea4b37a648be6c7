"""Experiments: one configuration checked once, run, scored and compared.

:mod:`~hepwb.experiment.config` (the configuration), :mod:`~hepwb.experiment.keys` (what each stage's artefact
depends on), :mod:`~hepwb.experiment.stages` (inputs, chunk set, table), :mod:`~hepwb.experiment.cell` and
:mod:`~hepwb.experiment.scoring` (retrieve, score, save), :mod:`~hepwb.experiment.run`
(:func:`run_experiment`), :mod:`~hepwb.experiment.compare` (several systems in one call) and
:mod:`~hepwb.experiment.curve` (a metric against chunk size). Chunk sets live in :mod:`hepwb.chunking`, run
folders and their records in :mod:`hepwb.runs`. The DuckDB catalog of what was measured (:mod:`hepwb.catalog`)
and the report (:mod:`hepwb.report`) sit above this package: it imports neither.
"""

from __future__ import annotations

from hepwb.acquisition.folder import resolve_corpus
from hepwb.chunking.chunksets import ChunkSet, build_chunkset
from hepwb.corpus import ingest
from hepwb.experiment.compare import Comparison, compare
from hepwb.experiment.questions_check import check_questions
from hepwb.experiment.run import ExperimentConfig, RunResult, run_experiment
from hepwb.experiment.search import Searcher

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


def __dir__() -> list[str]:
    return __all__
