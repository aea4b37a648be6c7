"""Pipeline orchestration: ingest, chunk sets, experiments, the DuckDB catalog, sweeps and reports."""

from __future__ import annotations

from hepwb.acquisition.folder import resolve_corpus
from hepwb.pipeline.catalog import Catalog
from hepwb.pipeline.chunksets import ChunkSet, build_chunkset
from hepwb.pipeline.compare import Comparison, compare
from hepwb.pipeline.corpus import ingest
from hepwb.pipeline.experiment import ExperimentConfig, RunResult, run_experiment
from hepwb.pipeline.pin import pin_defaults, pin_from_report
from hepwb.pipeline.questions_check import check_questions
from hepwb.pipeline.search import Searcher

__all__ = [
    "Catalog",
    "ChunkSet",
    "Comparison",
    "ExperimentConfig",
    "RunResult",
    "Searcher",
    "build_chunkset",
    "check_questions",
    "compare",
    "ingest",
    "pin_defaults",
    "pin_from_report",
    "resolve_corpus",
    "run_experiment",
]


def __dir__() -> list[str]:
    return __all__
