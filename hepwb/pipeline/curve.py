"""A metric against chunk size: one evaluated point per (chunker, retriever, chunk size), lexical first.

:func:`curve_configs` lays out the grid in the order it is computed: the configurations whose retriever
reads no vector first (no model is loaded for them, so a new chunk size costs about a second), then the
dense ones, each series by increasing size. :func:`size_curve` evaluates them one by one through
:func:`~hepwb.pipeline.experiment.run_experiment` with the corpus and questions loaded once, and yields each
point as soon as it is known; a point whose run already finished is read back, not recomputed.

Example:
    >>> [(c.retriever, c.chunk_size) for c in curve_configs([256, 128], ["hepilot"], ["dense", "bm25"])]
    [('bm25', 128), ('bm25', 256), ('dense', 128), ('dense', 256)]
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hepwb import defaults
from hepwb.exceptions import ConfigError
from hepwb.paths import Layout
from hepwb.pipeline.cell import RunResult
from hepwb.pipeline.config import ExperimentConfig
from hepwb.pipeline.experiment import run_experiment
from hepwb.pipeline.stages import EvalInputs, load_inputs, needs_vectors

__all__ = ["CurvePoint", "curve_configs", "size_curve"]


@dataclass(frozen=True)
class CurvePoint:
    """One evaluated configuration: the metric's mean over the scored questions and its 95 % interval."""

    chunker: str
    retriever: str
    chunk_size: int
    metric: str
    value: float
    low: float
    high: float
    n: int
    """Questions scored (those with located evidence)."""
    dense: bool
    """Its retriever reads vectors (computed after every lexical point)."""
    reused: bool
    """Read back from its finished run folder."""
    seconds: float
    run_dir: Path
    config: ExperimentConfig = field(repr=False)
    result: RunResult = field(repr=False)

    @property
    def series(self) -> str:
        """The curve it belongs to: ``chunker · retriever``."""
        return f"{self.chunker} · {self.retriever}"

    def row(self) -> dict[str, Any]:
        """The point as a table row (what :meth:`SizeExplorer.frame` lists)."""
        return {
            "chunker": self.chunker,
            "retriever": self.retriever,
            "chunk_size": self.chunk_size,
            self.metric: round(self.value, 4),
            "ci_low": round(self.low, 4),
            "ci_high": round(self.high, 4),
            "n": self.n,
            "reused": self.reused,
            "seconds": round(self.seconds, 2),
            "run": self.run_dir.name,
        }


def curve_configs(
    sizes: Sequence[int],
    chunkers: Sequence[str],
    retrievers: Sequence[str | None],
    **fixed: Any,
) -> list[ExperimentConfig]:
    """Every (chunker, retriever, size) configuration, validated, in the order a curve computes them.

    ``fixed``: the other fields of :class:`~hepwb.pipeline.config.ExperimentConfig` (corpus, questions,
    max_docs, k, ...); a retriever ``None`` is the default one. Lexical retrievers come first, then those that
    read vectors; each series by size.

    Raises:
        ConfigError: No size, chunker or retriever, or a value out of its bounds (named).
    """
    for what, values in (("sizes", sizes), ("chunkers", chunkers), ("retrievers", retrievers)):
        if not list(values):
            msg = f"explore: {what} is empty; give at least one"
            raise ConfigError(msg)
    configs = [
        ExperimentConfig.from_params(chunker=ch, retriever=r, chunk_size=int(s), **fixed)
        for ch in dict.fromkeys(chunkers)
        for r in dict.fromkeys(retrievers)
        for s in sorted({int(s) for s in sizes})
    ]
    return sorted(configs, key=lambda c: (needs_vectors(c), c.chunker, c.retriever_spec))


def size_curve(
    configs: Sequence[ExperimentConfig],
    *,
    metric: str = defaults.DECISION_METRIC,
    layout: Layout | None = None,
    inputs: EvalInputs | None = None,
) -> Iterator[CurvePoint]:
    """Evaluate ``configs`` in order and yield each point when it is known.

    The corpus and question file (the same for every configuration) are read, and their evidence located,
    once. A configuration whose run already finished with the same inputs is read back.

    Raises:
        ConfigError: ``metric`` is not one of the run's metrics (named, with the choices).
    """
    layout = layout or Layout.default()
    for cfg in configs:
        if inputs is None:
            inputs = load_inputs(cfg, layout, progress=False)
        start = time.perf_counter()
        res = run_experiment(cfg, layout=layout, progress=False, inputs=inputs)
        yield _point(cfg, res, metric, time.perf_counter() - start)


def _point(cfg: ExperimentConfig, res: RunResult, metric: str, seconds: float) -> CurvePoint:
    summary = res.record.summary
    if metric not in summary:
        choices = sorted(k for k in summary if "@" in k)
        msg = f"explore: no metric {metric!r} in the runs; choose one of {choices}"
        raise ConfigError(msg)
    value = float(summary[metric])
    low, high = res.record.summary_ci95.get(metric, (value, value))
    pq = res.per_question
    n = int((pq["n_located"] > 0).sum()) if "n_located" in pq.columns else len(pq)
    return CurvePoint(
        chunker=cfg.chunker,
        retriever=cfg.retriever_spec,
        chunk_size=cfg.chunk_size,
        metric=metric,
        value=value,
        low=float(low),
        high=float(high),
        n=n,
        dense=needs_vectors(cfg),
        reused=res.reused,
        seconds=seconds,
        run_dir=res.run_dir,
        config=cfg,
        result=res,
    )
