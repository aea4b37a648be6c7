"""One evaluation run: corpus → documents → chunk set → LanceDB table → retrieval → metrics.

This is the single call the evaluation notebook makes::

    cfg = ExperimentConfig.from_params(chunk_size=512, retriever="bm25")
    result = run_experiment(cfg)

It chains the typed stages of :mod:`hepwb.pipeline.stages` and :mod:`hepwb.pipeline.cell`; each is
cached by its key (converted documents, chunk sets, embeddings, tables), so a sweep pays for every
piece of work once. The run folder holds ``metrics.json`` (a
:class:`~hepwb.pipeline.record.RunRecord`), ``per_question.parquet``, ``hits.parquet``,
``parameters.yaml`` and ``rerun.sh``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.env import configure_runtime
from hepwb.exceptions import ConfigError
from hepwb.models.embedder import DEFAULT_MODEL
from hepwb.models.tokenizers import DEFAULT_TOKENIZER
from hepwb.paths import Layout
from hepwb.pipeline.cell import RunResult, environment
from hepwb.pipeline.stages import questions_path
from hepwb.types import JSONObject

if TYPE_CHECKING:
    from hepwb.pipeline.stages import EvalInputs

__all__ = ["DIMENSIONS", "ExperimentConfig", "RunResult", "environment", "questions_path", "run_experiment"]

from hepwb.limits import MAX_CHUNK_SIZE, MIN_CHUNK_SIZE
from hepwb.limits import MAX_K as _MAX_K

DIMENSIONS = (
    "corpus",
    "questions",
    "chunker",
    "chunk_size",
    "chunk_overlap",
    "tokenizer",
    "embedding_model",
    "retriever",
    "k",
    "max_docs",
    "prefer_latex",
    "min_coverage",
    "ragas_llm",
)
"""Configuration keys a sweep may vary over cells (its grid dimensions, and the report's columns)."""


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that defines one evaluation run (plain values, so papermill can pass them).

    ``chunker_options`` and ``retriever_options`` are keyword options of the chunker and retriever
    (e.g. ``{"parent_size": 1024}``, ``{"weight": 0.5}``).

    Example:
        >>> ExperimentConfig.from_params(chunk_size=256, retriever="bm25").chunk_size
        256
        >>> ExperimentConfig.from_params(chunksize=256)
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: unknown parameter(s) ['chunksize']; valid: ...
    """

    corpus: str | None = None
    questions: str | None = None
    chunker: str = defaults.CHUNKER
    chunk_size: int = defaults.CHUNK_SIZE
    chunk_overlap: float = defaults.CHUNK_OVERLAP
    tokenizer: str = DEFAULT_TOKENIZER
    embedding_model: str = DEFAULT_MODEL
    retriever: str = defaults.RETRIEVER
    k: int = defaults.EVAL_K
    max_docs: int | None = None
    prefer_latex: bool = True
    min_coverage: float = 0.5
    ragas_llm: bool = False
    run_dir: str | None = None
    chunker_options: JSONObject = field(default_factory=dict)
    retriever_options: JSONObject = field(default_factory=dict)

    @classmethod
    def from_params(cls, **params: Any) -> ExperimentConfig:
        """Build from keyword parameters, rejecting unknown names and bad values."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(params) - set(names))
        if unknown:
            msg = f"unknown parameter(s) {unknown}; valid: {names}"
            raise ConfigError(msg)
        for opt in ("chunker_options", "retriever_options"):
            if params.get(opt) is None:
                params.pop(opt, None)
            elif not isinstance(params[opt], dict):
                msg = f"{opt} maps option names to values, e.g. {{'weight': 0.5}}; got {params[opt]!r}"
                raise ConfigError(msg)
        cfg = cls(**params)
        if isinstance(cfg.k, bool) or not isinstance(cfg.k, int) or not 1 <= cfg.k <= _MAX_K:
            msg = (
                f"k must be a whole number from 1 to {_MAX_K} (chunks retrieved per question), got {cfg.k!r}"
            )
            raise ConfigError(msg)
        size = cfg.chunk_size
        if (
            isinstance(size, bool)
            or not isinstance(size, int)
            or not MIN_CHUNK_SIZE <= size <= MAX_CHUNK_SIZE
        ):
            msg = (
                f"chunk_size must be a whole number of tokens from {MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE}, "
                f"got {size!r} (e.g. 512)"
            )
            raise ConfigError(msg)
        ov = cfg.chunk_overlap
        if isinstance(ov, bool) or not isinstance(ov, int | float) or not 0 <= ov < 1:
            msg = f"chunk_overlap is a fraction 0 <= x < 1 (HEPilot), got {ov!r}; e.g. 0.1 for 10%"
            raise ConfigError(msg)
        _check_names(cfg)
        if not 0 < cfg.min_coverage <= 1:
            msg = f"min_coverage must lie in (0, 1], got {cfg.min_coverage}"
            raise ConfigError(msg)
        return cfg

    def to_dict(self) -> JSONObject:
        """Plain dict of the parameters."""
        return dataclasses.asdict(self)


def _check_names(cfg: ExperimentConfig) -> None:
    """Unknown chunker, retriever or embedding model names fail here, before any paper is converted."""
    from hepwb.chunking import CHUNKERS
    from hepwb.models.tokenizers import model_problem
    from hepwb.retrieval import RETRIEVERS

    CHUNKERS.get(cfg.chunker)  # the ConfigError lists the valid names
    RETRIEVERS.get(cfg.retriever)
    problem = model_problem(cfg.embedding_model)
    if problem:
        msg = f"embedding_model: {problem}"
        raise ConfigError(msg)


def run_experiment(
    cfg: ExperimentConfig,
    *,
    layout: Layout | None = None,
    progress: bool = True,
    inputs: EvalInputs | None = None,
) -> RunResult:
    """Run one configuration end to end and save its results (see the module docstring).

    Args:
        cfg: The configuration.
        layout: Artefact folders (default: this project's).
        progress: Show progress bars.
        inputs: Documents and questions already loaded by :func:`~hepwb.pipeline.stages.load_inputs`.
    """
    from hepwb.env import release_memory
    from hepwb.index import get_embedder
    from hepwb.pipeline.cell import run_cell
    from hepwb.pipeline.stages import Timer, chunk_stage, index_stage, load_inputs, needs_windows

    configure_runtime(offline=None)
    layout = layout or Layout.default()
    timings = Timer()
    with timings("ingest_s"):
        inputs = inputs or load_inputs(cfg, layout, progress=progress)
        release_memory()  # freed buffers go back to the OS: the peak stays near the largest stage's
    with timings("chunk_s"):
        cs = chunk_stage(cfg, inputs.documents, layout, inputs.log, progress=progress)
        release_memory()
    embedder = get_embedder(cfg.embedding_model)
    with timings("index_s"):
        table = index_stage(cs, embedder, layout, windows=needs_windows(cfg), progress=progress)
        release_memory()
    return run_cell(cfg, inputs, cs, table, embedder, layout=layout, timings=timings, progress=progress)
