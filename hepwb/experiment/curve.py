"""A metric against chunk size: one evaluated point per (chunker, retriever, chunk size), lexical first.

:func:`curve_configs` lays out the grid in the order it is computed: the configurations whose retriever
reads no vector first (no model is loaded for them, so a new chunk size costs about a second), then the
dense ones, each series by increasing size. :func:`size_curve` evaluates them through
:func:`~hepwb.experiment.run.run_experiment` with the corpus and questions loaded once per process, and
yields each point as soon as it is known (the lexical ones computed by two processes on a machine with two
cores or more); a point whose run already finished is read back, not recomputed.

Example:
    >>> [(c.retriever, c.chunk_size) for c in curve_configs([256, 128], ["hepilot"], ["dense", "bm25"])]
    [('bm25', 128), ('bm25', 256), ('dense', 128), ('dense', 256)]
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hepwb import defaults
from hepwb.exceptions import ConfigError, HepwbError
from hepwb.experiment.cell import RunResult, run_home
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.run import run_experiment
from hepwb.experiment.stages import EvalInputs, load_inputs, needs_vectors
from hepwb.paths import Layout
from hepwb.runtime.env import configure_runtime
from hepwb.types import JSONObject

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

    ``fixed``: the other fields of :class:`~hepwb.experiment.config.ExperimentConfig` (corpus, questions,
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
    workers: int | None = None,
) -> Iterator[CurvePoint]:
    """Evaluate ``configs`` and yield each point when it is known (lexical ones first, then dense ones).

    The corpus and question file (the same for every configuration) are read, and their evidence located,
    once per process. A configuration whose run already finished with the same inputs is read back. With
    ``workers`` above 1 (default :data:`~hepwb.defaults.EXPLORE_WORKERS`, at most the machine's cores), other
    processes compute lexical points beside this one; their runs are read back here, and points then arrive
    out of size order. Dense points are computed here, one by one (their model and embedding cache are
    this process's).

    Raises:
        ConfigError: ``metric`` is not one of the run's metrics (named, with the choices).
    """
    layout = layout or Layout.default()
    if not configs:
        return
    if inputs is None:
        inputs = load_inputs(configs[0], layout, progress=False)
    lexical = deque(c for c in configs if not needs_vectors(c))
    helpers = min(defaults.EXPLORE_WORKERS if workers is None else workers, os.cpu_count() or 1) - 1
    while lexical:  # finished runs are read back at once; other processes help when a point is computed
        if helpers > 0 and len(lexical) > 2 and not _ran_before(lexical[0], layout):
            # a size never run here: the helpers start now (their start-up beside this point), not after it
            yield from _lexical_in_parallel(lexical, helpers, metric, layout, inputs)
            break
        cfg = lexical.popleft()
        start = time.perf_counter()
        res = run_experiment(cfg, layout=layout, progress=False, inputs=inputs)
        yield _point(cfg, res, metric, time.perf_counter() - start)
        if not res.reused and helpers > 0 and len(lexical) > 1:
            yield from _lexical_in_parallel(lexical, helpers, metric, layout, inputs)
    for cfg in [c for c in configs if needs_vectors(c)]:
        start = time.perf_counter()
        res = run_experiment(cfg, layout=layout, progress=False, inputs=inputs)
        yield _point(cfg, res, metric, time.perf_counter() - start)


def _ran_before(cfg: ExperimentConfig, layout: Layout) -> bool:
    """Whether ``cfg`` has a run folder (then it is probably read back: no helper is started for it)."""
    return run_home(cfg, layout).exists()


def _lexical_in_parallel(
    todo: deque[ExperimentConfig], helpers: int, metric: str, layout: Layout, inputs: EvalInputs
) -> Iterator[CurvePoint]:
    """Compute ``todo`` here (smallest sizes first) and in ``helpers`` other processes (largest first).

    Each point is yielded as it is known; the helpers stop when none is left (or the caller stops).
    """
    replies: queue.Queue[tuple[_Helper, JSONObject]] = queue.Queue()
    pool = [_Helper(layout.root, replies) for _ in range(helpers)]
    try:
        while todo or any(h.busy for h in pool):
            for h in pool:
                if h.busy is None and todo:
                    h.submit(todo.pop())
            while not replies.empty():
                yield _read_back(*replies.get(), metric, layout, inputs)
            if todo:
                cfg = todo.popleft()
                start = time.perf_counter()
                res = run_experiment(cfg, layout=layout, progress=False, inputs=inputs)
                yield _point(cfg, res, metric, time.perf_counter() - start)
            elif any(h.busy for h in pool):
                yield _read_back(*replies.get(), metric, layout, inputs)
    finally:
        for h in pool:
            h.close()


class _Helper:
    """Another Python process running configurations for a curve (``python -m hepwb.experiment.curve ROOT``).

    One configuration at a time, as a JSON line on its stdin; it answers one JSON line on stdout (the
    seconds, or the error), read by a thread into ``replies``. Its warnings go to this process's stderr.
    """

    def __init__(self, root: Path, replies: queue.Queue[tuple[_Helper, JSONObject]]) -> None:
        self.busy: ExperimentConfig | None = None
        self._replies = replies
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "hepwb.experiment.curve", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, name="hepwb-curve-helper", daemon=True)
        self._reader.start()

    def submit(self, cfg: ExperimentConfig) -> None:
        """Have the helper run ``cfg``."""
        assert self._proc.stdin is not None
        self.busy = cfg
        self._proc.stdin.write(cfg.model_dump_json() + "\n")
        self._proc.stdin.flush()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._replies.put((self, json.loads(line)))
        if self.busy is not None:  # it died with a configuration given: said as an error of that one
            self._replies.put((self, {"error": f"the helper process ended ({self._proc.wait()})"}))

    def close(self) -> None:
        """End the helper (at once: a configuration it is running is left unfinished, never half-saved)."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        if self.busy is not None:
            self._proc.kill()
        self._proc.wait()
        self._reader.join(timeout=10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def _read_back(
    helper: _Helper, reply: JSONObject, metric: str, layout: Layout, inputs: EvalInputs
) -> CurvePoint:
    """The point of the run a helper finished: its folder read back here, its time the helper's."""
    cfg, helper.busy = helper.busy, None
    assert cfg is not None
    if "error" in reply:
        msg = f"chunk size {cfg.chunk_size} ({cfg.retriever_spec}): {reply['error']}"
        raise ConfigError(msg) if reply.get("bad_input") else RuntimeError(msg)
    res = run_experiment(cfg, layout=layout, progress=False, inputs=inputs)
    return replace(_point(cfg, res, metric, float(reply["seconds"])), reused=bool(reply.get("reused")))


def _serve(root: str) -> None:
    """A helper's loop: run each configuration read from stdin (inputs loaded once), answer on stdout."""
    layout = Layout(Path(root))
    loaded: dict[str, EvalInputs] = {}
    for line in sys.stdin:
        cfg = ExperimentConfig.model_validate_json(line)
        key = json.dumps([cfg.corpus, cfg.questions, cfg.max_docs, cfg.prefer_latex, cfg.accept_unscored])
        start = time.perf_counter()
        try:
            if key not in loaded:
                loaded[key] = load_inputs(cfg, layout, progress=False)
            res = run_experiment(cfg, layout=layout, progress=False, inputs=loaded[key])
            reply: JSONObject = {"seconds": time.perf_counter() - start, "reused": res.reused}
        except Exception as exc:  # answered, not raised: the curve says it for that configuration
            reply = {"error": f"{type(exc).__name__}: {exc}", "bad_input": isinstance(exc, HepwbError)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


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


if __name__ == "__main__":  # a helper process of _lexical_in_parallel
    configure_runtime(offline=None)
    _serve(sys.argv[1])
