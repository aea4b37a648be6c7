"""Plots for notebooks and reports (matplotlib, so HTML reports embed them as images and work offline)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["metric_vs_chunk_size"]


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
