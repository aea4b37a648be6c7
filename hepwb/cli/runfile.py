"""The options of ``hepwb evaluate --run-file`` (an outside system's TREC run) and what it prints.

``hepwb evaluate`` (in :mod:`hepwb.cli`) takes the options defined here and hands them to
:func:`outside_run_lines`; the other interop commands are in :mod:`hepwb.cli.export`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hepwb.cli.show import run_lines
from hepwb.evaluation.stats import SMALL_N
from hepwb.exceptions import ConfigError
from hepwb.experiment.cell import RunResult
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.stages import questions_path
from hepwb.interop import experiment_table, resolve_runs, score_run_file
from hepwb.interop.runfile import LEVELS, Level
from hepwb.report.tables import DECISION_METRICS
from hepwb.runs.folder import read_per_question
from hepwb.runs.record import RunRecord
from hepwb.text.ids import file_sha256
from hepwb.text.labels import human

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Baseline", "LevelOption", "RunFileOption", "SweepOption", "outside_run_lines"]

RunFileOption = Annotated[
    Path | None,
    typer.Option(
        "--run-file",
        help="Score this TREC run file (qid Q0 docno rank score tag) of an outside system instead of a hepwb "
        "retriever: docnos are chunk ids of the chunk set these options build (hepwb export --format beir), "
        "or paper labels with --level paper.",
    ),
]
LevelOption = Annotated[
    str,
    typer.Option(
        "--level", help="With --run-file: chunk (docnos are chunk ids) or paper (docnos are paper labels)."
    ),
]
Baseline = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        help="With --run-file: a run (folder, name or id) to compare it with, question by question "
        "(improved, degraded, unchanged, difference with its interval, p-value).",
    ),
]
SweepOption = Annotated[
    str | None,
    typer.Option(
        "--sweep",
        help="With --run-file: add the run to this sweep (an id or 'latest') so its report shows it.",
    ),
]


def headline(level: str, k: int) -> list[str]:
    """The metrics a run file's lines show: the report's decision metrics, or their paper-level peers.

    Cutoffs beyond ``k`` become ``k`` (a run of 5 hits has no MRR@10).

    Example:
        >>> headline("paper", 5)
        ['doc_hit_rate@5', 'doc_recall@5', 'doc_mrr@5', 'doc_ndcg@5']
    """
    names = (
        DECISION_METRICS
        if level == "chunk"
        else ("doc_hit_rate@5", "doc_recall@5", "doc_mrr@10", "doc_ndcg@10")
    )
    out = []
    for name in names:
        family, _, cut = name.partition("@")
        out.append(f"{family}@{min(int(cut), k)}")
    return list(dict.fromkeys(out))


def _metric_lines(record: RunRecord, names: list[str]) -> list[str]:
    s, ci = record.summary, record.summary_ci95
    n, total = int(s.get("n_questions_evaluated", 0)), int(s.get("n_questions", 0))
    out = []
    for m in (m for m in names if m in s):
        line = f"{human(m):28s} {s[m]:6.3f}"
        if m in ci:
            line += f"  [{ci[m][0]:.3f}, {ci[m][1]:.3f}]"
        out.append(line + (f"  small sample: {n} question{'s' if n != 1 else ''}" if n < SMALL_N else ""))
    out.append(f"questions scored: {n} of {total} (paper level: docnos are paper labels)")
    return out


def _load_baseline(baseline: str) -> tuple[str, RunRecord, pd.DataFrame]:
    """The name, record and checked ``per_question.parquet`` of the ``--baseline`` run.

    Read before the run file is scored, so a baseline that cannot be compared (a sweep, a damaged table) is
    one line before any new run folder is written.

    Raises:
        ConfigError: ``baseline`` names no run or several; its ``per_question.parquet`` is damaged
            (:class:`~hepwb.runs.folder.DamagedRunError`, naming the file and the rebuild command).
    """
    found = resolve_runs(baseline)
    if len(found) != 1:
        msg = f"--baseline {baseline!r} names {len(found)} runs (a sweep); give one run"
        raise ConfigError(msg)
    then = f", then compare again (--baseline {baseline!r})"
    return found[0].name, RunRecord.load(found[0]), read_per_question(found[0], then=then)


def _another_question_set(baseline: str | None) -> str:
    return f"--baseline {baseline!r} was scored on another question set; compare runs of the same questions"


def _comparison_lines(
    res: RunResult, baseline: str, base: tuple[str, RunRecord, pd.DataFrame], level: str
) -> list[str]:
    name, record, per_question = base
    if record.inputs.questions_sha256 != res.record.inputs.questions_sha256:
        raise ConfigError(_another_question_set(baseline))
    frames = {name: per_question, res.run_name: res.per_question}
    wanted = headline(level, int(res.record.config.get("k") or 10))
    metrics = [m for m in wanted if all(m in f.columns for f in frames.values())]
    if not metrics:
        msg = f"--baseline {baseline!r} shares no metric with this run (a paper-level run has doc_… only)"
        raise ConfigError(msg)
    row = experiment_table(frames, metrics, name).set_index("name").loc[res.run_name].to_dict()
    lines = [f"against {name} (paired sign-flip test on the same questions; + improved, - degraded):"]
    for m in metrics:
        base_mean = float(frames[name][m].mean())
        lines.append(
            f"  {human(m):26s} {base_mean:.3f} -> {row[m]:.3f}  difference {row[f'{m} diff']:+.3f} "
            f"[{row[f'{m} diff low']:+.3f}, {row[f'{m} diff high']:+.3f}]  +{int(row[f'{m} +'])} "
            f"-{int(row[f'{m} -'])} ={int(row[f'{m} ='])}  p = {row[f'{m} p-value']:.3g}"
        )
    return lines


def outside_run_lines(
    cfg: ExperimentConfig, run_file: Path | None, *, level: str, baseline: str | None, sweep: str | None
) -> list[str] | None:
    """What ``hepwb evaluate --run-file`` prints (``None`` without ``--run-file``: a hepwb retriever runs).

    Raises:
        ConfigError: ``--level``, ``--baseline`` or ``--sweep`` without ``--run-file``, an unknown level, or
            a run file refused (one line naming its line and the fix).
    """
    if run_file is None:
        if level != "chunk" or baseline is not None or sweep is not None:
            msg = "--level, --baseline and --sweep go with --run-file FILE (an outside system's TREC run)"
            raise ConfigError(msg)
        return None
    if level not in LEVELS:
        msg = f"--level {level!r}: choose chunk or paper"
        raise ConfigError(msg)
    chosen: Level = "chunk" if level == "chunk" else "paper"
    base = None if baseline is None else _load_baseline(baseline)  # refused before a run folder is written
    if base is not None and base[1].inputs.questions_sha256 != file_sha256(questions_path(cfg.questions)):
        raise ConfigError(_another_question_set(baseline))
    res = score_run_file(cfg, run_file, level=chosen, sweep=sweep)
    rec = res.record
    lines = run_lines(rec) if chosen == "chunk" else _metric_lines(rec, headline(chosen, cfg.k))
    missing = int(rec.config.get("questions_without_lines") or 0)
    if missing:
        lines.append(
            f"{missing} question(s) have no line in the run file: scored 0, as a run retrieving nothing"
        )
    if baseline is not None and base is not None:
        lines += _comparison_lines(res, baseline, base, chosen)
    where = f" and sweep {rec.sweep_id}" if rec.sweep_id else ""
    lines += [
        f"run: {res.run_name} (retriever {rec.config['retriever']}, in the catalog{where}: `hepwb report` "
        "compares it with hepwb's runs)",
        f"results: {res.run_dir}",
    ]
    return lines
