"""How the command line shows a finished run and a question check: short blocks a person reads.

:func:`run_lines` gives the headline metrics with their intervals (small samples said as such), then
every quote that could not be scored, by name, with its reason; :func:`check_lines` gives the table of
``hepwb questions check``.

Example:
    >>> from hepwb.runs.record import RunRecord
    >>> rec = RunRecord(run_id="r", chunkset_id="c", config={},
    ...     summary={"hit_rate@5": 1.0, "n_questions": 3.0, "n_questions_evaluated": 2.0,
    ...              "n_evidence": 3.0, "n_evidence_located": 2.0},
    ...     summary_ci95={"hit_rate@5": (0.342, 1.0)})
    >>> rec.inputs.unscored.append({"qid": "Q3", "evidence": "Q3#e0", "doc": "N1", "page": None,
    ...     "quote": "not in the note", "status": "not_found", "reason": "the quote is not in N1's text"})
    >>> print("\\n".join(run_lines(rec)))
    found@5 (hit_rate@5)          1.000  [0.342, 1.000]  small sample: 2 questions
    questions scored: 2 of 3 (quotes located: 2 of 3)
    not scored (1 quote; `hepwb questions check` shows every quote):
      Q3  N1  not_found  "not in the note": the quote is not in N1's text
    all metrics: --all-metrics, or metrics.json in the run folder
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hepwb import defaults
from hepwb.evaluation.stats import SMALL_N
from hepwb.report.tables import DECISION_METRICS
from hepwb.runs.record import RunRecord
from hepwb.text.labels import human
from hepwb.text.plaintext import plain
from hepwb.types import JSONObject

__all__ = ["check_lines", "run_lines"]

_QUOTE_CHARS = 70


def _plain(value: Any) -> str:
    """``value`` as printable text on one line: terminal control sequences and controls removed."""
    return " ".join(plain(str(value)).split())


def _quote(text: str) -> str:
    flat = _plain(text)
    return f'"{flat}"' if len(flat) <= _QUOTE_CHARS else f'"{flat[: _QUOTE_CHARS - 1]}…"'


def _metric_line(record: RunRecord, name: str) -> str:
    """One metric: value, interval, and its own n when small or short of the scored questions."""
    shown = f"{human(name)} ({name})" if human(name) != name else name  # found@5 (hit_rate@5)
    ci, n = record.summary_ci95.get(name), record.metric_n(name)
    line = f"{shown:28s} {record.summary[name]:6.3f}"
    if ci is not None:
        line += f"  [{ci[0]:.3f}, {ci[1]:.3f}]"
    if n < SMALL_N:
        line += f"  small sample: {n} question{'s' if n != 1 else ''}"
    if record.without(name):
        line += f" ({record.without(name)})"
    return line


def unscored_lines(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per quote not located: question, document, page, status, quote and reason."""
    out = []
    for r in rows:
        page = f" p.{_plain(r['page'])}" if r.get("page") is not None else ""
        out.append(
            f"  {_plain(r['qid'])}  {_plain(r['doc'])}{page}  {_plain(r['status'])}  "
            f"{_quote(r['quote'])}: {_plain(r['reason'])}"
        )
    return out


def run_lines(record: RunRecord, *, all_metrics: bool = False) -> list[str]:
    """The headline metrics of a run, its questions not scored, and where the rest is."""
    s = record.summary
    n = int(s.get("n_questions_evaluated", 0))
    names = list(s) if all_metrics else [m for m in DECISION_METRICS if m in s]
    lines = [_metric_line(record, m) for m in names]
    if "n_questions" in s:
        lines.append(
            f"questions scored: {n} of {int(s['n_questions'])} "
            f"(quotes located: {int(s.get('n_evidence_located', 0))} of {int(s.get('n_evidence', 0))})"
        )
    papers = len(record.inputs.corpus_documents)
    if 0 < papers < defaults.FEW_PAPERS:
        lines.append(
            f"only {papers} paper(s) to search among: found@k comes easily and comparisons cannot "
            "discriminate; evaluate the same questions among more papers: --background shipped (or a folder)"
        )
    swapped = record.inputs.substitutions
    if swapped:
        labels = ", ".join(s.split(":", 1)[0] for s in swapped)
        lines.append(f"converted from their PDF, not their LaTeX source: {labels} (why: metrics.json inputs)")
    rows = record.inputs.unscored
    if rows:
        m = len(rows)
        lines.append(
            f"not scored ({m} quote{'s' if m != 1 else ''}; `hepwb questions check` shows every quote):"
        )
        lines += unscored_lines(rows)
    if not all_metrics:
        lines.append("all metrics: --all-metrics, or metrics.json in the run folder")
    return lines


def check_lines(rows: Iterable[JSONObject]) -> list[str]:
    """The table of ``hepwb questions check``: one line per quote, then its reason when not located."""
    out = []
    for r in rows:
        page = "-" if r.get("page") is None else _plain(r["page"])
        found = r.get("found_on_page")
        where = (
            ", ".join(map(_plain, found))
            if isinstance(found, list)
            else ("-" if found is None else _plain(found))
        )
        evidence, doc, status = _plain(r["evidence"]), _plain(r["doc"]), _plain(r["status"])
        out.append(f"{evidence:14s} {doc:8s} {page:>4s}  {status:11s} {where:>7s}  {_plain(r['reason'])}")
    return out
