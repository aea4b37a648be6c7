"""hepwb's comparison of runs as IR people read it: pt.Experiment's table against a chosen baseline.

PyTerrier's ``pt.Experiment(..., baseline=0, correction="holm")`` reports for each system the mean of each
measure, the number of queries improved (``+``) and degraded (``-``) against the baseline, the paired test's
p-value and the corrected p-value with its decision (``reject``). :func:`experiment_table` gives the same
columns from hepwb's per-question scores, with hepwb's statistics (:mod:`hepwb.evaluation.stats`): a paired
sign-flip permutation test, its interval of the difference (which agrees with it by construction) and
Holm's correction over the runs compared on each measure; it adds the questions unchanged (``=``) and the
difference with its interval. It compares runs already made (an outside system's run file among them);
:func:`hepwb.experiment.compare.compare` runs several hepwb systems and compares them in one call.

Example:
    >>> import pandas as pd
    >>> frames = {r: pd.DataFrame({"qid": range(24), "hit_rate@5": v}) for r, v in
    ...           {"bm25": [1, 0] * 12, "mine": [1, 1] * 12, "other": [1, 0] * 12}.items()}
    >>> t = experiment_table(frames, ["hit_rate@5"], "bm25").set_index("name")
    >>> float(t.loc["mine", "hit_rate@5"]), [int(t.loc["mine", f"hit_rate@5 {s}"]) for s in "+-="]
    (1.0, [12, 0, 12])
    >>> bool(t.loc["mine", "hit_rate@5 reject"]), bool(t.loc["other", "hit_rate@5 reject"])
    (True, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from hepwb.evaluation.stats import compare_runs
from hepwb.exceptions import ConfigError
from hepwb.experiment.compare import paired_columns

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PT_COLUMNS", "experiment_table"]

PT_COLUMNS = {
    "improved": "+",
    "degraded": "-",
    "unchanged": "=",
    "difference": "diff",
    "diff_low": "diff low",
    "diff_high": "diff high",
    "p": "p-value",
    "p (Holm)": "p-value corrected",
    "significant": "reject",
}
"""hepwb's paired columns (:func:`~hepwb.experiment.compare.paired_columns`) and pt.Experiment's names."""


def experiment_table(
    per_question: Mapping[str, pd.DataFrame], metrics: Sequence[str], baseline: str
) -> pd.DataFrame:
    """One row per run (the baseline first): for each measure ``m``, pt.Experiment's columns and hepwb's.

    Columns per measure: ``m`` (the mean over the run's scored questions), ``m +`` / ``m -`` / ``m =``
    (questions improved, degraded, unchanged against the baseline), ``m diff`` with ``m diff low`` and
    ``m diff high`` (its 95 % interval), ``m p-value``, ``m p-value corrected`` (Holm over the runs) and
    ``m reject`` (corrected p < 0.05). The baseline's own comparison columns are empty.

    Raises:
        ConfigError: ``baseline`` is not one of the runs, or a measure is missing from a run.
    """
    import pandas as pd

    if baseline not in per_question:
        msg = f"baseline {baseline!r} is not one of the runs compared ({', '.join(per_question)})"
        raise ConfigError(msg)
    names = [baseline, *(n for n in per_question if n != baseline)]
    rows: dict[str, dict[str, object]] = {n: {"name": n} for n in names}
    for m in metrics:
        for n in names:
            if m not in per_question[n].columns:
                msg = f"run {n!r} has no measure {m!r}; compare measures every run has"
                raise ConfigError(msg)
            rows[n][m] = float(per_question[n][m].mean())
        tests = compare_runs({n: per_question[n] for n in names}, metric=m, baseline=baseline)
        for t in tests.to_dict("records") if len(names) > 1 else []:
            paired = paired_columns(t)
            rows[str(t["run"])] |= {f"{m} {name}": paired[column] for column, name in PT_COLUMNS.items()}
    table = pd.DataFrame(list(rows.values()))
    counts = [c for c in table.columns if str(c).endswith((" +", " -", " ="))]
    return table.astype(dict.fromkeys(counts, "Int64"))  # whole numbers, empty for the baseline
