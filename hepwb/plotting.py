"""Plots for notebooks and reports (matplotlib, so HTML reports embed them as images and work offline)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["metric_vs_chunk_size", "metrics_with_ci"]


def metric_vs_chunk_size(wide: pd.DataFrame, metrics: tuple[str, ...] = ("recall@5", "mrr@10")) -> Any:
    """Line plot of each metric against chunk size, one line per retriever (and chunker, when several).

    Args:
        wide: :meth:`hepwb.pipeline.Catalog.metrics_wide` output.
        metrics: Metric columns to draw, one panel each.

    Returns:
        The matplotlib figure.
    """
    import matplotlib
    import matplotlib.pyplot as plt

    present = [m for m in metrics if m in wide.columns]
    fig, axes = plt.subplots(1, max(len(present), 1), figsize=(5 * max(len(present), 1), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], present, strict=False):
        keys = (
            ["chunker", "retriever"]
            if wide.get("chunker", wide["retriever"]).nunique() > 1
            else ["retriever"]
        )
        for name, grp in wide.groupby(keys):
            grp = grp.sort_values("chunk_size")
            label = " / ".join(map(str, name)) if isinstance(name, tuple) else str(name)
            ax.plot(grp["chunk_size"], grp[metric], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(wide["chunk_size"].unique()))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("chunk size (tokens)")
        ax.set_ylabel(metric)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(title=" / ".join(keys))
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
