"""Does it transfer? Each method's gain over ``bm25`` on hepqa-dev and on Chroma's questions, side by side.

Usage::

    python -m bench.transfer [--sizes 256,512,1024] [--methods "bm25;hybrid(weight=0.3)"] [--home DIR]

Method:

* **hepqa-dev**: the 32 shared papers (LaTeX preferred) and their 124 questions, through hepwb's own
  ``run_experiment`` (chunker ``hepilot``, overlap 0.1, k = 10).
* **Chroma's set** (a different domain, used to check, never to choose): the five corpora of
  ``<shared>/eval/chroma`` as one markdown paper each (labels ``chatlogs``, ``finance``, ``pubmed``, ``sotu``,
  ``wikitexts``) and its 472 questions as a hepqa-style file whose evidence quotes are the reference spans,
  verbatim; the same pipeline, chunker and sizes. A corpus without headings: ``fields=context`` adds only
  the corpus name there.
* Metrics: ``found@5`` (``hit_rate@5``: a top-5 chunk covers at least half of an evidence quote) and
  ``MRR@10``; each method's difference from ``bm25`` on the same questions with hepwb's paired test
  (:func:`hepwb.evaluation.stats.paired_test`: sign-flip permutation test and the interval that inverts it).
* When ``bm25(fields=context)`` is among the methods, a second table gives every other method's found@5
  difference from it on the same questions: does anything beat the best lexical method, on both sets?
* A method "transfers" when its found@5 gain has the same sign on both sets at a chunk size; the table
  names the methods whose gain exists on one set only.

As soon as a chunk size is measured on both sets, writes its results files ``docs/results/transfer-<size>.md``
(against ``bm25``, with the query p50 on hepqa-dev) and ``transfer-context-<size>.md`` (against
``bm25(fields=context)``), see :mod:`bench.results`, and every run's numbers so far to ``--json``. Artefacts
go to a scratch project (``--home``, default a temporary folder) that starts from a copy of this project's
embedding cache; conversions, chunk tables and runs are its own, so the project's catalog is untouched.
Exits 0 with a message when the shared material is absent.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPORTS, have_chroma, rounded, scratch_sets, versus
from bench.results import Row, command_line, comparison_key, git_commit, run_key, write_results
from hepwb.experiment import ExperimentConfig, run_experiment
from hepwb.experiment.stages import EvalInputs, load_inputs
from hepwb.files.io import write_json
from hepwb.paths import Layout
from hepwb.types import JSONObject

METHODS = ("bm25", "bm25(fields=context)", "dense", "dense(read=max)", "hybrid", "hybrid_linear")
METRICS = ("hit_rate@5", "mrr@10")
CONTEXT = "bm25(fields=context)"
SETS = {"hepqa-dev": "dev", "chroma": "Chroma"}
"""Question sets and their short names in the tables."""

Frames = dict[tuple[str, int, str], Any]
"""(set, size, method) → the run's per-question frame (indexed by qid)."""


class Runs:
    """Runs one method at one size on one question set; a set's papers and located evidence load once."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.inputs: dict[tuple[str | None, str | None], EvalInputs] = {}
        self.frames: Frames = {}
        self.keys: dict[tuple[str, int, str], JSONObject] = {}

    def __call__(self, set_name: str, size: int, method: str, corpus: str | None, questions: str | None
                 ) -> JSONObject:  # fmt: skip
        """One evaluation's summary (its per-question frame and key kept for the comparisons)."""
        cfg = ExperimentConfig.from_params(
            retriever=method, chunk_size=size, corpus=corpus, questions=questions, prefer_latex=True
        )
        if (corpus, questions) not in self.inputs:
            self.inputs[(corpus, questions)] = load_inputs(cfg, self.layout, progress=False)
        res = run_experiment(cfg, layout=self.layout, progress=False, inputs=self.inputs[(corpus, questions)])
        self.frames[(set_name, size, method)] = res.per_question.set_index("qid")
        self.keys[(set_name, size, method)] = run_key(res.record)
        return {**res.summary, **res.record.costs}

    def compare(self, at: tuple[str, int, str], base: str, metric: str) -> tuple[JSONObject, Row]:
        """``at``'s method against ``base`` on ``metric``: the numbers and their results row."""
        set_name, size, method = at
        test = versus(self.frames[at], self.frames[(set_name, size, base)], metric)
        values = {"diff": rounded(test.diff.mean), "ci_low": rounded(test.diff.low),
                  "ci_high": rounded(test.diff.high), "p": rounded(test.p_value)}  # fmt: skip
        key = comparison_key(self.keys[at], self.keys[(set_name, size, base)], metric)
        return values, Row(f"{method} vs {base}, {size} tokens, {set_name}, {metric}", key, values)


def main(argv: list[str] | None = None) -> int:
    """Measure, print the tables and write the results files; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--methods", default=",".join(METHODS), help="';'-separated when options hold commas")
    ap.add_argument("--home", type=Path, default=None, help="scratch project (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=REPORTS / "transfer.json")
    ap.add_argument("--no-results", action="store_true", help="do not write docs/results (a trial run)")
    args = ap.parse_args(argv)
    if not have_chroma():
        return 0
    commit = git_commit()  # the code measured: the commit when the runs start
    sep = ";" if ";" in args.methods else ","
    methods = [m.strip() for m in args.methods.split(sep) if m.strip()]
    if "bm25" not in methods:
        methods.insert(0, "bm25")
    sizes = [int(s) for s in args.sizes.split(",")]
    layout, sets = scratch_sets(args.home, "hepwb-transfer-")
    runs = Runs(layout)
    rows: list[JSONObject] = []
    for size in sizes:  # the results files of a size are written as soon as it is measured
        at_size: list[JSONObject] = []
        published: list[Row] = []
        for set_name, (corpus, questions) in sets.items():
            for method in methods:
                row, measured = measure(runs, set_name, size, method, corpus, questions)
                at_size.append(row)
                published += measured
        rows += at_size
        write_json(args.json, rows)
        tables = {f"transfer-{size}": (against_bm25(at_size, methods), published)}
        if CONTEXT in methods:
            compared = [runs.compare((s, size, m), CONTEXT, "hit_rate@5") for s in sets for m in methods
                        if m not in ("bm25", CONTEXT)]  # fmt: skip
            tables[f"transfer-context-{size}"] = (
                against_context(compared, list(sets), methods),
                [r for _, r in compared],
            )
        for name, (table, _) in tables.items():
            print(f"\n{name}:\n{table}", flush=True)
        if not args.no_results:
            write_all(tables, at_size, size, commit)
    return 0


def measure(runs: Runs, set_name: str, size: int, method: str, corpus: str | None, questions: str | None
            ) -> tuple[JSONObject, list[Row]]:  # fmt: skip
    """One method at one size on one set: its JSON row and its results rows (the run, its gains on bm25)."""
    t0 = time.perf_counter()
    summary = runs(set_name, size, method, corpus, questions)
    row: JSONObject = {"set": set_name, "size": size, "method": method,
                       **{m: rounded(summary[m]) for m in METRICS},
                       "n": int(summary["n_questions_evaluated"]), "p50_ms": summary.get("query_p50_ms"),
                       "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
    key = runs.keys[(set_name, size, method)]
    published = [Row(f"{method}, {size} tokens, {set_name}", key, {m: row[m] for m in METRICS})]
    if method != "bm25":
        for m in METRICS:
            values, comparison = runs.compare((set_name, size, method), "bm25", m)
            row |= {f"{m}_gain": values["diff"], f"{m}_p": values["p"],
                    f"{m}_gain_ci95": [values["ci_low"], values["ci_high"]]}  # fmt: skip
            published.append(comparison)
    print(f"{set_name} {size} {method}: found@5 {row['hit_rate@5']:.3f} ({row['seconds']} s)",
          file=sys.stderr, flush=True)  # fmt: skip
    return row, published


def write_all(
    tables: dict[str, tuple[str, list[Row]]], rows: list[JSONObject], size: int, commit: str
) -> None:
    """The results files of one chunk size (see the module docstring)."""
    n = {s: max((r["n"] for r in rows if r["set"] == s), default=0) for s in SETS}
    where = (f"hepqa-dev ({n['hepqa-dev']} questions, 32 papers, LaTeX preferred) and Chroma's question "
             f"set ({n['chroma']} questions, five corpora); hepilot chunks of {size} tokens, overlap 0.1, "
             "k = 10")  # fmt: skip
    made = f"Made by `{command_line()}`."
    captions = {
        f"transfer-{size}": f"found@5 and MRR@10 of each method on {where}; Δ: the difference to bm25 on the "
        f"same questions, p: hepwb's paired permutation test; 'transfers': the found@5 gain has the same "
        f"sign on both sets; query p50 on hepqa-dev on this machine's CPU (other jobs possibly running: "
        f"compare within the table only). {made}",
        f"transfer-context-{size}": f"found@5 of each method minus that of bm25(fields=context) on the same "
        f"questions (95 % interval of the inverted paired permutation test, p), on {where}. {made}",
    }
    for name, (table, published) in tables.items():
        write_results(name, table, caption=captions[name], rows=published, commit=commit)


def _cell(r: JSONObject, m: str, with_p: bool) -> str:
    if r["method"] == "bm25":
        return f"{r[m]:.3f}"
    p = f", p={r[m + '_p']:.3f}" if with_p else ""
    return f"{r[m]:.3f} ({r[m + '_gain']:+.3f}{p})"


def against_bm25(rows: list[JSONObject], methods: list[str]) -> str:
    """The side-by-side table against ``bm25`` at one size: both sets, whether the gain transfers, latency."""
    by = {(r["set"], r["method"]): r for r in rows}
    out = [
        "| method | dev found@5 (Δ vs bm25, p) | dev MRR@10 (Δ) | Chroma found@5 (Δ, p) | Chroma MRR@10 (Δ) "
        "| transfers | dev query p50 ms |",
        "|---|---|---|---|---|---|---:|",
    ]
    for method in methods:
        dev, ch = by.get(("hepqa-dev", method)), by.get(("chroma", method))
        if dev is None or ch is None:
            continue
        cells = [_cell(dev, "hit_rate@5", True), _cell(dev, "mrr@10", False)]
        cells += [_cell(ch, "hit_rate@5", True), _cell(ch, "mrr@10", False), transfers(dev, ch)]
        p50 = dev.get("p50_ms")
        cells.append("-" if p50 is None else f"{p50:.0f}")
        out.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def transfers(dev: JSONObject, chroma: JSONObject) -> str:
    """``yes`` when the found@5 gain over bm25 has one sign on both sets, else the set that has it.

    Example:
        >>> transfers({"method": "x", "hit_rate@5_gain": 0.08}, {"method": "x", "hit_rate@5_gain": 0.0})
        'dev only'
    """
    if dev["method"] == "bm25":
        return "-"
    g_dev, g_ch = dev["hit_rate@5_gain"], chroma["hit_rate@5_gain"]
    if g_dev > 0 and g_ch > 0:
        return "yes"
    return "dev only" if g_dev > 0 else "Chroma only" if g_ch > 0 else "no gain"


def against_context(compared: list[tuple[JSONObject, Row]], sets: list[str], methods: list[str]) -> str:
    """found@5 of every method minus that of ``bm25(fields=context)`` on the same questions, at one size."""
    values = iter(v for v, _ in compared)
    by = {(s, m): next(values) for s in sets for m in methods if m not in ("bm25", CONTEXT)}
    out = [
        "| method | " + " | ".join(f"{SETS[s]} Δ [95 % CI], p" for s in sets) + " |",
        "|---|" + "---|" * len(sets),
    ]
    for method in (m for m in methods if m not in ("bm25", CONTEXT)):
        cells = [by[(s, method)] for s in sets]
        shown = [f"{c['diff']:+.3f} [{c['ci_low']:+.3f}, {c['ci_high']:+.3f}], p={c['p']:.3f}" for c in cells]
        out.append(f"| {method} | " + " | ".join(shown) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
