"""Plots for notebooks and reports (matplotlib, so HTML reports embed them as images and work offline)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.text.labels import human

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["metric_heatmap", "metric_vs_chunk_size", "metrics_with_ci", "stage_times"]


def metric_vs_chunk_size(
    wide: pd.DataFrame,
    metrics: tuple[str, ...] = (defaults.DECISION_METRIC, "mrr@10"),
    intervals: Mapping[str, pd.DataFrame] | None = None,
) -> Any:
    """Line plot of each metric against chunk size, one line per retriever (and chunker, when several).

    Args:
        wide: :meth:`hepwb.catalog.Catalog.metrics_wide` output.
        metrics: Metric columns to draw, one panel each; put the decision metric first.
        intervals: Per metric, ``run_id, ci_low, ci_high`` (:meth:`Catalog.intervals`): drawn as 95 %
            error bars. A metric without intervals is drawn without bars and says so in its title.

    Returns:
        The matplotlib figure.
    """
    import matplotlib
    import matplotlib.pyplot as plt

    wide = wide[wide["chunk_size"].notna()]  # a run file scored at paper level has no chunk size
    present = [m for m in metrics if m in wide.columns]
    fig, axes = plt.subplots(1, max(len(present), 1), figsize=(5 * max(len(present), 1), 3.8), squeeze=False)
    keys = ["chunker", "retriever"] if wide.get("chunker", wide["retriever"]).nunique() > 1 else ["retriever"]
    for ax, metric in zip(axes[0], present, strict=False):
        ci = (intervals or {}).get(metric)
        frame = wide.merge(ci, on="run_id", how="left") if ci is not None else wide
        for name, grp in frame.groupby(keys):
            grp = grp.sort_values("chunk_size")
            label = " / ".join(map(str, name)) if isinstance(name, tuple) else str(name)
            if ci is not None and grp["ci_low"].notna().any():
                yerr = [
                    (grp[metric] - grp["ci_low"]).clip(lower=0),
                    (grp["ci_high"] - grp[metric]).clip(lower=0),
                ]
                ax.errorbar(grp["chunk_size"], grp[metric], yerr=yerr, marker="o", capsize=3, label=label)
            else:
                ax.plot(grp["chunk_size"], grp[metric], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(wide["chunk_size"].unique()))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("chunk size (tokens)")
        ax.set_ylabel(human(metric))
        ax.set_title(f"{human(metric)}" + (" (bars: 95 % interval)" if ci is not None else ""), fontsize=10)
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(title=" / ".join(keys), fontsize=8)
    fig.tight_layout()
    return fig


def metrics_with_ci(ci: pd.DataFrame, metrics: tuple[str, ...] | None = None) -> Any:
    """Horizontal bars of metric means with their 95 % intervals.

    Args:
        ci: :func:`hepwb.evaluation.stats.summary_with_ci` output (``metric, mean, ci_low, ci_high``).
        metrics: Metrics to draw (default: all rows), top to bottom.

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt

    rows = ci.set_index("metric").loc[list(metrics)] if metrics else ci.set_index("metric")
    rows = rows.iloc[::-1]
    fig, ax = plt.subplots(figsize=(6.5, 0.32 * len(rows) + 1.0))
    err = [rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]]
    ax.barh(rows.index, rows["mean"], xerr=err, color="#7a9cc6", ecolor="#333", capsize=3)
    ax.set_xlim(0, 1)
    ax.set_xlabel("mean over questions (bars: 95 % bootstrap interval)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def metric_heatmap(
    wide: pd.DataFrame,
    x: str,
    y: str,
    metric: str = defaults.DECISION_METRIC,
    ci: pd.DataFrame | None = None,
) -> Any:
    """Heatmap of ``metric`` over two sweep dimensions, each cell annotated with its 95 % interval.

    Where other dimensions vary too, a heatmap cell shows the best run among those sharing its
    ``(x, y)`` (the title says so).

    Args:
        wide: :meth:`hepwb.catalog.Catalog.metrics_wide` output.
        x: Dimension along the columns (e.g. ``"chunk_size"``).
        y: Dimension along the rows (e.g. ``"retriever"``).
        metric: The metric shown.
        ci: Optional ``run_id, ci_low, ci_high`` of ``metric`` (catalog ``metric_ci``).

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    for col in (x, y, metric):
        if col not in wide.columns:
            msg = f"no column {col!r} in the runs table; choose from {sorted(map(str, wide.columns))}"
            raise KeyError(msg)
    df = wide[wide[metric].notna()].copy()  # a run without the metric (a run file at paper level): no cell
    for col in (x, y):
        if str(df[col].dtype) == "Int64":  # a whole-number dimension missing for some run (its chunk size)
            df = df[df[col].notna()]
    if ci is not None and not ci.empty:
        df = df.merge(ci[["run_id", "ci_low", "ci_high"]], on="run_id", how="left")
    best = df.sort_values(metric, ascending=False).groupby([y, x], dropna=False).head(1)
    several = bool((df.groupby([y, x], dropna=False).size() > 1).any())
    xs = sorted(best[x].unique(), key=_sort_key)
    ys = sorted(best[y].unique(), key=_sort_key)
    grid = np.full((len(ys), len(xs)), np.nan)
    for _, r in best.iterrows():
        grid[ys.index(r[y]), xs.index(r[x])] = r[metric]
    fig, ax = plt.subplots(figsize=(1.6 * len(xs) + 2.5, 0.6 * len(ys) + 1.6))
    im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for _, r in best.iterrows():
        i, j = ys.index(r[y]), xs.index(r[x])
        text = f"{r[metric]:.3f}"
        if "ci_low" in r and r["ci_low"] == r["ci_low"]:
            text += f"\n[{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        ax.text(j, i, text, ha="center", va="center", fontsize=8,
                color="black" if r[metric] > 0.6 else "white")  # fmt: skip
    ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_yticks(range(len(ys)), [str(v) for v in ys])
    ax.set_xlabel(human(x))
    ax.set_ylabel(human(y))
    ax.set_title(
        f"{human(metric)} (95 % interval)" + (" - best over the other dimensions" if several else "")
    )
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def _sort_key(v: Any) -> tuple[int, Any]:
    import numbers

    return (0, float(v)) if isinstance(v, numbers.Real) else (1, str(v))


def stage_times(stages: pd.DataFrame) -> Any:
    """Horizontal bars of the wall time spent per sweep stage (computed work only).

    Args:
        stages: :meth:`hepwb.catalog.Catalog.stage_times` output (``stage, computed, wall_s``).

    Returns:
        The matplotlib figure.
    """
    import matplotlib.pyplot as plt

    rows = stages.fillna({"wall_s": 0.0}).iloc[::-1]
    fig, ax = plt.subplots(figsize=(6.5, 0.35 * len(rows) + 1.2))
    ax.barh(rows["stage"], rows["wall_s"], color="#c6967a")
    for i, (w, n) in enumerate(zip(rows["wall_s"], rows["computed"], strict=True)):
        ax.text(w, i, f" {w:.0f} s ({n}×)", va="center", fontsize=8)
    ax.set_xlabel("wall time summed over tasks (s); tasks on different workers overlap")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
