"""The run path: ingest a corpus, build chunk sets, run experiments and compare retrievers.

The DuckDB catalog of what was measured is :mod:`hepwb.catalog`; the report people read is
:mod:`hepwb.report`. Both sit above this package: it imports neither.
"""

from __future__ import annotations

from hepwb.acquisition.folder import resolve_corpus
from hepwb.corpus import ingest
from hepwb.pipeline.chunksets import ChunkSet, build_chunkset
from hepwb.pipeline.compare import Comparison, compare
from hepwb.pipeline.experiment import ExperimentConfig, RunResult, run_experiment
from hepwb.pipeline.questions_check import check_questions
from hepwb.pipeline.search import Searcher

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
