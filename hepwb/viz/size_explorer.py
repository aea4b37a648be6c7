"""A metric against chunk size, live in JupyterLab: points appear as they are computed, a click shows misses.

:func:`explore` lays out a grid of chunk sizes × chunkers × retrievers
(:func:`~hepwb.experiment.curve.curve_configs`) and evaluates it in a background thread while the notebook
stays usable: the configurations whose retriever reads no vector first (no model is loaded for them),
then the dense ones behind the progress bar; a point whose run already finished is read back at once.
Each point is the metric's mean over the scored questions with its 95 % interval. Clicking a point lists
the questions that configuration missed, with the passage each needed and what came first instead.

The plot is an anywidget drawing SVG (no plotting server, nothing fetched); :meth:`SizeExplorer.wait` and
:meth:`SizeExplorer.frame` make the same results available to a script, papermill or a test.
"""

from __future__ import annotations

import bisect
import functools
import logging
import threading
from collections.abc import Sequence
from typing import Any

from hepwb import defaults
from hepwb.exceptions import HepwbError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.curve import CurvePoint, curve_configs, size_curve
from hepwb.experiment.stages import EvalInputs, load_inputs, needs_vectors
from hepwb.paths import Layout
from hepwb.report.misses import missed, misses_html
from hepwb.runtime.deps import extra
from hepwb.text.plaintext import escape_html

__all__ = ["SizeExplorer", "default_sizes", "explore"]

_ESM = r"""
const W = 780, H = 380, L = 56, R = 260, T = 16, B = 44;
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
const NS = "http://www.w3.org/2000/svg";

function node(tag, attrs, parent) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  if (parent) parent.appendChild(n);
  return n;
}

function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "hw-curve";
  el.appendChild(box);
  const draw = () => {
    const pts = model.get("points"), sizes = model.get("sizes"), series = model.get("series");
    const chosen = model.get("selected");
    const x0 = Math.min(...sizes), x1 = Math.max(...sizes);
    const X = (s) => L + (x1 === x0 ? 0.5 : (s - x0) / (x1 - x0)) * (W - L - R);
    const Y = (v) => T + (1 - v) * (H - T - B);
    box.replaceChildren();
    const svg = node("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" }, box);
    svg.setAttribute("data-points", String(pts.length));
    for (let g = 0; g <= 4; g++) {
      const v = g / 4;
      node("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: "#e3e3e3" }, svg);
      node("text", { x: L - 6, y: Y(v) + 4, "text-anchor": "end", "font-size": 11 }, svg).textContent =
        v.toFixed(2);
    }
    const every = Math.max(1, Math.ceil(sizes.length / 7));  // at most 7 labels, each a size tried
    for (const s of sizes.filter((_, i) => i % every === 0)) {
      node("text", { x: X(s), y: H - B + 16, "text-anchor": "middle", "font-size": 11 }, svg).textContent =
        String(s);
    }
    node("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", "font-size": 12 }, svg)
      .textContent = "chunk size (tokens)";
    node("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", "font-size": 12,
                   transform: `rotate(-90 14 ${(T + H - B) / 2})` }, svg).textContent =
      model.get("metric_label");
    series.forEach((name, si) => {
      const colour = COLOURS[si % COLOURS.length];
      const dx = (si - (series.length - 1) / 2) * 4;  // series side by side: equal values stay visible
      const own = pts.map((p, i) => [p, i]).filter(([p]) => p.series === name)
        .sort((a, b) => a[0].size - b[0].size);
      if (own.length > 1) {
        node("polyline", { points: own.map(([p]) => `${X(p.size) + dx},${Y(p.value)}`).join(" "),
                           fill: "none", stroke: colour, "stroke-width": 1.5, opacity: 0.7 }, svg);
      }
      for (const [p, i] of own) {
        const x = X(p.size) + dx;
        node("line", { x1: x, x2: x, y1: Y(p.low), y2: Y(p.high), stroke: colour, opacity: 0.5 }, svg);
        const dot = node("circle", { cx: x, cy: Y(p.value), r: i === chosen ? 7 : 5, fill: colour,
                                     stroke: i === chosen ? "#000" : "#fff", "stroke-width": 2,
                                     class: "hw-point", "data-index": i, "data-size": p.size,
                                     "data-series": p.series, style: "cursor:pointer" }, svg);
        node("title", {}, dot).textContent =
          `${p.series}, ${p.size} tokens: ${p.value.toFixed(3)} ` +
          `[${p.low.toFixed(3)}, ${p.high.toFixed(3)}], n=${p.n}${p.reused ? " (read back)" : ""}. ` +
          "Click: the questions it missed";
        dot.addEventListener("click", () => { model.set("selected", i); model.save_changes(); });
      }
      const ly = T + 14 + 18 * si;
      node("circle", { cx: W - R + 16, cy: ly - 4, r: 5, fill: colour }, svg);
      node("text", { x: W - R + 26, y: ly, "font-size": 12 }, svg).textContent = name;
    });
  };
  for (const name of ["points", "series", "selected", "sizes", "metric_label"]) {
    model.on(`change:${name}`, draw);
  }
  draw();
}

export default { render };
"""


@functools.cache
def _plot_class() -> type[Any]:
    with extra("lab", "the chunk-size explorer"):
        import anywidget
        import traitlets

    class CurvePlot(anywidget.AnyWidget):
        """Points with intervals against chunk size, a colour per series; ``selected``: the clicked point."""

        _esm = _ESM
        points: Any = traitlets.List([]).tag(sync=True)
        series: Any = traitlets.List([]).tag(sync=True)
        sizes: Any = traitlets.List([]).tag(sync=True)
        metric_label = traitlets.Unicode("").tag(sync=True)
        selected = traitlets.Int(-1).tag(sync=True)

    return CurvePlot


def default_sizes() -> list[int]:
    """The chunk sizes :func:`explore` tries unless told: 128 to 2,048 tokens by 64 (31 sizes).

    >>> s = default_sizes(); (s[0], s[-1], len(s))
    (128, 2048, 31)
    """
    return list(range(defaults.EXPLORE_SIZE_FROM, defaults.EXPLORE_SIZE_TO + 1, defaults.EXPLORE_SIZE_STEP))


class SizeExplorer:
    """The live curve of :func:`explore` (display it in a notebook; ``wait()``/``frame()`` in a script).

    Args:
        configs: The configurations, in the order they are computed (:func:`curve_configs`).
        metric: The metric plotted (a key of the runs' summaries).
        layout: Artefact folders.
        start: Start computing at once (in a background thread).
        workers: Processes computing lexical points (default :data:`~hepwb.defaults.EXPLORE_WORKERS`).
    """

    def __init__(
        self,
        configs: Sequence[ExperimentConfig],
        *,
        metric: str = defaults.DECISION_METRIC,
        layout: Layout | None = None,
        start: bool = True,
        workers: int | None = None,
    ) -> None:
        with extra("lab", "the chunk-size explorer"):
            import ipywidgets as w

        self.configs = list(configs)
        self.metric = metric
        self.layout = layout or Layout.default()
        self.workers = workers
        self.points: list[CurvePoint] = []
        self.error: HepwbError | None = None
        self.inputs: EvalInputs | None = None
        series = list(dict.fromkeys(f"{c.chunker} · {c.retriever_spec}" for c in self.configs))
        sizes = sorted({c.chunk_size for c in self.configs})
        self.plot = _plot_class()(series=series, sizes=sizes, metric_label=metric)
        self.progress = w.IntProgress(value=0, min=0, max=len(self.configs), description="points")
        self.status = w.HTML(f"<span class='hw-curve-status'>{self._status_text(False)}</span>")
        self.details = w.HTML("<p class='hw-misses'>Click a point to see the questions it missed.</p>")
        self.widget = w.VBox([self.status, self.progress, self.plot, self.details])
        self.plot.observe(self._on_select, names="selected")
        self._thread = threading.Thread(target=self._compute, name=f"hepwb-explore-{id(self)}", daemon=True)
        self._notes = _ThreadNotes(self._thread.name)
        if start:
            self._thread.start()

    def _compute(self) -> None:
        handlers = [*logging.getLogger("hepwb").handlers, *logging.getLogger().handlers]
        for h in handlers:  # this thread's log lines go to the widget, not into whichever cell is running
            h.addFilter(self._notes)
        try:
            self.inputs = load_inputs(self.configs[0], self.layout, progress=False)
            curve = size_curve(
                self.configs, metric=self.metric, layout=self.layout, inputs=self.inputs, workers=self.workers
            )
            for p in curve:
                # points may arrive out of size order (computed by two processes): kept in plot order
                bisect.insort(self.points, p, key=lambda q: (q.series, q.chunk_size))
                self._show(done=False)
        except HepwbError as exc:  # no cell to raise in: shown in the widget, raised again by wait()
            self.error = exc
        finally:
            for h in handlers:
                h.removeFilter(self._notes)
            self._show(done=True)

    def _status_text(self, done: bool) -> str:
        n, total = len(self.points), len(self.configs)
        dense_total = sum(1 for c in self.configs if needs_vectors(c))
        dense_done = sum(p.dense for p in self.points)
        reused = sum(p.reused for p in self.points)
        if self.error is not None:
            return f"stopped after {n} of {total} points: {escape_html(str(self.error))}"
        parts = [f"{n} of {total} points"]
        if dense_total:
            parts.append(f"dense {dense_done} of {dense_total}")
        if reused:
            parts.append(f"{reused} read back from finished runs")
        return ("done: " if done else "computing: ") + ", ".join(parts)

    def _show(self, *, done: bool) -> None:
        self.plot.points = [
            {"series": p.series, "size": p.chunk_size, "value": p.value, "low": p.low, "high": p.high,
             "n": p.n, "dense": p.dense, "reused": p.reused}
            for p in self.points
        ]  # fmt: skip
        self.progress.value = len(self.points)
        state = "done" if done else "running"
        text = self._status_text(done)
        notes = self._notes.lines
        more = (
            f"<details><summary>{len(notes)} note(s) from the runs</summary>"
            + "".join(f"<div>{escape_html(n)}</div>" for n in notes)
            + "</details>"
            if notes
            else ""
        )
        self.status.value = f"<span class='hw-curve-status' data-state='{state}'>{text}</span>{more}"

    def _on_select(self, change: dict[str, Any]) -> None:
        i = int(change["new"])
        if not 0 <= i < len(self.points):
            return
        p = self.points[i]
        head = (
            f"<p class='hw-misses'><b>{escape_html(p.series)}, {p.chunk_size} tokens</b>: {p.metric} "
            f"{p.value:.3f} [{p.low:.3f}, {p.high:.3f}] over {p.n} questions "
            f"(run {escape_html(p.run_dir.name)})</p>"
        )
        try:
            body = misses_html(missed(p.config, p.result, self.layout, metric=p.metric, inputs=self.inputs))
        except HepwbError as exc:
            body = f"<p>{escape_html(str(exc))}</p>"
        self.details.value = head + body

    def wait(self, timeout: float | None = None) -> SizeExplorer:
        """Block until every point is computed (or ``timeout`` seconds); raise what stopped it, if any."""
        self._thread.join(timeout)
        if self.error is not None:
            raise self.error
        return self

    @property
    def done(self) -> bool:
        """Whether the computation has ended (every point, or an error)."""
        return not self._thread.is_alive()

    def frame(self) -> Any:
        """The points computed so far as a table: chunker, retriever, size, metric, interval, n, time, run."""
        import pandas as pd

        return pd.DataFrame([p.row() for p in self.points])

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


class _ThreadNotes(logging.Filter):
    """Keeps the log lines of one thread (the explorer's) for the widget and lets every other line pass."""

    def __init__(self, thread: str) -> None:
        super().__init__()
        self.thread = thread
        self.lines: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.threadName != self.thread:
            return True
        line = record.getMessage()
        if line not in self.lines:  # a handler of hepwb's logger and of the root see the same record
            self.lines.append(line)
        return False


def explore(
    corpus: str | None = None,
    questions: str | None = None,
    *,
    sizes: Sequence[int] | None = None,
    chunkers: Sequence[str] = (defaults.CHUNKER,),
    retrievers: Sequence[str | None] = (None,),
    metric: str = defaults.DECISION_METRIC,
    max_docs: int | None = None,
    home: str | None = None,
    start: bool = True,
    workers: int | None = None,
    **options: Any,
) -> SizeExplorer:
    """Plot ``metric`` against chunk size for every chunker × retriever, live (see the module docstring).

    Args:
        corpus: A folder of papers (default: the shipped corpus, or ``$HEPWB_CORPUS``).
        questions: Its question file (default: the shipped question set, or ``$HEPWB_QUESTIONS``).
        sizes: Chunk sizes in tokens (default :func:`default_sizes`: 128 to 2,048 by 64).
        chunkers: Chunker names (:data:`hepwb.chunking.CHUNKERS`).
        retrievers: Retriever names or call strings (``"bm25(fields=context)"``, ``"dense"``); ``None``: the
            default retriever (the project's pin, else :data:`hepwb.defaults.RETRIEVER`).
        metric: What is plotted (found@5 by default; any metric of a run, e.g. ``"mrr@10"``).
        max_docs: Only the first papers of the corpus (all by default; a question about a paper left out
            is named, not scored).
        home: Artefact root (``data/``, ``reports/``); default this project's.
        start: Start computing at once.
        workers: Processes computing the lexical points (default :data:`~hepwb.defaults.EXPLORE_WORKERS`, at
            most the machine's cores; ``1``: this one only).
        **options: Other fields of :class:`~hepwb.experiment.config.ExperimentConfig` (``k``, ...).

    Raises:
        ConfigError: An empty list, an unknown name or a value out of its bounds, before anything runs.
    """
    configs = curve_configs(
        default_sizes() if sizes is None else sizes,
        chunkers,
        retrievers,
        corpus=corpus,
        questions=questions,
        max_docs=max_docs,
        **options,
    )
    return SizeExplorer(configs, metric=metric, layout=Layout.at(home), start=start, workers=workers)
