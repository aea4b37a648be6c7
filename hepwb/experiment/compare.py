"""Several systems on one question set in one call: hepwb's ``pt.Experiment``.

:func:`compare` runs each system (a retriever name or object, or a whole configuration) on the same
corpus and questions (converted and located once), then tests every system against the baseline on the
same questions: per metric, the mean with its 95 % interval, the difference to the baseline with its
interval, how many questions improved, degraded or stayed the same, the paired test's p-value and
Holm's adjustment over the comparisons of that metric. The table reads like PyTerrier's
``pt.Experiment(..., baseline=0, correction="holm")``: ``improved``/``degraded`` are its ``+``/``-``
columns, ``p`` its ``p-value``, ``p (Holm)`` its corrected one.

Example (three retrievers on three papers' questions)::

    from hepwb.experiment import compare
    from hepwb.retrieval import BM25, Dense, Hybrid
    result = compare([BM25(fields="context"), Dense(), Hybrid()], max_docs=3)
    result.table          # one row per system and metric
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.components.callspec import Spec
from hepwb.corpus.haystack import haystack
from hepwb.evaluation.stats import SMALL_N, compare_runs, mean_ci
from hepwb.exceptions import ConfigError
from hepwb.experiment.cell import RunResult
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.run import run_experiment
from hepwb.experiment.stages import EvalInputs, load_inputs
from hepwb.paths import Layout
from hepwb.text.labels import human
from hepwb.text.plaintext import escape_html

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COMPARE_METRICS", "Comparison", "compare", "paired_columns"]

COMPARE_METRICS = (defaults.DECISION_METRIC, "mrr@10")
"""The metrics :func:`compare` reports unless told otherwise: found@5 (the decision metric) and MRR@10."""

System = str | Spec | ExperimentConfig
_SHARED = ("corpus", "questions", "max_docs", "prefer_latex", "accept_unscored")  # what the inputs depend on


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` found: ``table`` (one row per system and metric) and each system's run."""

    baseline: str
    metrics: tuple[str, ...]
    table: pd.DataFrame
    runs: dict[str, RunResult] = field(repr=False)

    def shown(self) -> pd.DataFrame:
        """The table as people read it: rounded, the interval in one column, blanks for the baseline."""
        import pandas as pd

        def text(value: Any, fmt: str) -> str:
            return "" if pd.isna(value) else format(value, fmt)

        t = self.table
        out = t[["system"]].copy()
        out["metric"] = [human(m) for m in t["metric"]]
        out["mean"] = [text(v, ".3f") for v in t["mean"]]
        out["95% interval"] = [
            f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(t["ci_low"], t["ci_high"], strict=True)
        ]
        out["difference [Holm interval]"] = [
            "" if pd.isna(d) else f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            for d, lo, hi in zip(t["difference"], t["diff_low"], t["diff_high"], strict=True)
        ]
        for col in ("improved", "degraded", "unchanged"):
            out[col] = [text(v, "d") for v in t[col]]
        out["p (Holm)"] = [text(v, ".3f") for v in t["p (Holm)"]]
        out["n"] = [
            f"{n} (small sample)" if small else str(n)
            for n, small in zip(t["n"], t["small sample"], strict=True)
        ]
        return out

    def notes(self) -> list[str]:
        """What the table cannot say, as the report says it: a small sample, differences too small to detect.

        The detectable difference comes from the Holm-adjusted intervals, as the verdict and ``p (Holm)`` do.
        """
        t = self.table
        n = int(t["n"].min())
        out = []
        if bool(t["small sample"].any()):
            out.append(
                f"A small sample: {n} questions (fewer than {SMALL_N}); read the intervals before the means."
            )
        for metric in self.metrics:
            rows = t[(t["metric"] == metric) & t["difference"].notna() & ~t["significant"].fillna(False)]
            width = rows["detectable"].dropna()
            if len(width):
                family = len(t[t["metric"] == metric]) - 1
                out.append(
                    f"{human(metric)}: with {n} questions, differences under about {width.max():.2f} cannot "
                    f"be detected (intervals and p-values Holm-adjusted over {family} comparisons): that "
                    "systems cannot be told apart does not make them equal."
                )
        return out

    def _repr_html_(self) -> str:
        notes = "".join(f"<p>{escape_html(line)}</p>" for line in self.notes())
        return str(self.shown().to_html(index=False)) + notes

    def __str__(self) -> str:
        return "\n".join([str(self.shown().to_string(index=False)), *self.notes()])


def _configs(systems: Sequence[System] | Mapping[str, System], params: dict[str, Any]) -> dict[str, Any]:
    """``{label: ExperimentConfig}``; a retriever takes ``params`` beside it, a configuration is kept."""
    named = dict(systems) if isinstance(systems, Mapping) else {_label(s): s for s in systems}
    if not isinstance(systems, Mapping) and len(named) < len(systems):
        msg = "two systems have the same name; give them as a mapping {label: system}"
        raise ConfigError(msg)
    if len(named) < 2:
        msg = f"compare needs at least two systems, got {len(named)}"
        raise ConfigError(msg)
    return {
        label: s if isinstance(s, ExperimentConfig) else ExperimentConfig.from_params(**params, retriever=s)
        for label, s in named.items()
    }


def _label(system: System) -> str:
    if isinstance(system, ExperimentConfig):
        return f"{system.chunker}·{system.chunk_size}·{system.retriever_spec}"
    return str(system)


def compare(
    systems: Sequence[System] | Mapping[str, System],
    *,
    metrics: Sequence[str] = COMPARE_METRICS,
    baseline: int | str = 0,
    layout: Layout | None = None,
    progress: bool = False,
    **params: Any,
) -> Comparison:
    """Run ``systems`` on one question set and test each against the baseline (see the module docstring).

    Args:
        systems: Retrievers (names, call strings or objects such as ``BM25(fields="context")``) or whole
            configurations (:class:`ExperimentConfig`), as a list (labelled by their names) or a mapping
            ``{label: system}``.
        metrics: Per-question metrics to report (columns of a run's ``per_question`` table).
        baseline: The system the others are tested against: its position or label.
        layout: Artefact folders (default: this project's).
        progress: Show progress bars.
        **params: The configuration shared by the retrievers given by name or object (``corpus``,
            ``questions``, ``chunk_size``, ``max_docs``, …), as :meth:`ExperimentConfig.from_params` takes;
            and ``background``: your papers among these (``"shipped"`` or a folder,
            :func:`~hepwb.corpus.haystack.haystack`).

    Returns:
        The :class:`Comparison`; ``table`` has ``system``, ``metric``, ``mean`` with ``ci_low``/``ci_high``,
        ``n``, and against the baseline ``difference`` with its interval, ``improved``, ``degraded``,
        ``unchanged``, ``p``, ``p (Holm)`` and ``significant``.

    Raises:
        ConfigError: Fewer than two systems, an unknown baseline or metric, or a bad configuration.
    """
    if "background" in params:  # your papers among the background's: an ordinary corpus folder
        hay = haystack(params.get("corpus"), params.pop("background"), layout=layout)
        params["corpus"] = None if hay is None else str(hay)
    configs = _configs(systems, params)
    labels = list(configs)
    base = _baseline(labels, baseline)
    runs = _run_all(configs, layout or Layout.default(), progress)
    frames = {label: run.per_question for label, run in runs.items()}
    missing = sorted(m for m in metrics if m not in frames[base].columns)
    if missing:
        msg = (
            f"unknown metric(s) {missing}; a run's per-question metrics are e.g. hit_rate@5, mrr@10, ndcg@10"
        )
        raise ConfigError(msg)
    return Comparison(base, tuple(metrics), _table(frames, metrics, base, runs), runs)


def _baseline(labels: list[str], baseline: int | str) -> str:
    """The label of the baseline given by its position or label.

    Example:
        >>> _baseline(["bm25", "dense"], -1)
        'dense'
        >>> _baseline(["bm25", "dense"], "hybrid")
        Traceback (most recent call last):
        ...
        hepwb.exceptions.ConfigError: baseline 'hybrid' is not one of the systems ['bm25', 'dense']
    """
    base = (
        labels[baseline] if isinstance(baseline, int) and -len(labels) <= baseline < len(labels) else baseline
    )
    if base not in labels:
        msg = f"baseline {baseline!r} is not one of the systems {labels}"
        raise ConfigError(msg)
    return str(base)


def _run_all(configs: dict[str, Any], layout: Layout, progress: bool) -> dict[str, RunResult]:
    """Each configuration's run; the corpus is converted and the quotes located once per input set."""
    loaded: dict[tuple[Any, ...], EvalInputs] = {}
    runs: dict[str, RunResult] = {}
    for label, cfg in configs.items():
        key = tuple(getattr(cfg, k) for k in _SHARED)
        if key not in loaded:
            loaded[key] = load_inputs(cfg, layout, progress=progress)
        runs[label] = run_experiment(cfg, layout=layout, progress=progress, inputs=loaded[key])
    return runs


def _table(
    frames: dict[str, pd.DataFrame], metrics: Sequence[str], base: str, runs: dict[str, RunResult]
) -> pd.DataFrame:
    """One row per metric and system: its mean with interval and, but for the baseline, the paired test."""
    import pandas as pd

    rows = []
    for metric in metrics:
        tests = {str(t["run"]): t for t in compare_runs(frames, metric, baseline=base).to_dict("records")}
        for label in frames:
            row = _mean_row(frames[label][metric], label, metric, runs[label].run_id)
            t = tests.get(label)
            if t is not None:
                row |= paired_columns(t)
            rows.append(row)
    table = pd.DataFrame(rows)
    for col in ("improved", "degraded", "unchanged"):
        table[col] = table[col].astype("Int64")
    return table


def _mean_row(values: pd.Series[Any], label: str, metric: str, run_id: str) -> dict[str, Any]:
    """The columns of one system's mean of ``metric``: the mean, its 95 % interval and the sample size."""
    ci = mean_ci(values.to_numpy(dtype=float))
    return {"system": label, "metric": metric, "mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high,
            "n": ci.n, "small sample": ci.small, "run_id": run_id}  # fmt: skip


def paired_columns(t: Mapping[Any, Any]) -> dict[str, Any]:
    """The columns of a system's paired test against the baseline (a row of :func:`compare_runs`).

    Both comparison tables show these: :func:`compare`'s under these names, and
    :func:`hepwb.interop.compare.experiment_table` under PyTerrier's.
    """
    improved, degraded = int(t["better"]), int(t["worse"])
    return {
        "difference": t["diff"],
        "diff_low": t["ci_low"],
        "diff_high": t["ci_high"],
        "detectable": t["detectable"],
        "improved": improved,
        "degraded": degraded,
        "unchanged": int(t["n"]) - improved - degraded,
        "p": t["p_value"],
        "p (Holm)": t["p_holm"],
        "significant": bool(t["significant"]),
    }
