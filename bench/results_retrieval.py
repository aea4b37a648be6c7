"""Retrieval quality of every method against bm25 on a question set: the docs' retrieval results.

Usage::

    python -m bench.results_retrieval [--sizes 256,512,1024] [--adapted hep-minilm] [--questions FILE]

Method:

* Chunk sets: ``hepilot`` at each size, overlap 0.1, over the shared corpus; questions: hepqa-dev.
* Methods: bm25 (HEP terms, chunk text), bm25 over title + section + text (``fields=context``), with
  acronym expansion, with RM3 feedback; dense reading the first 256 word pieces, the best window, the
  mean window vector; dense with the adapted model (``--adapted``, built by ``hepwb adapt``);
  equal-weight RRF hybrid (the previous default); the fitted fusion with the base and the adapted
  model. Fusions are fitted here by :func:`hepwb.adapt.commands.fit_fusion_for` (4 folds grouped by paper) and
  scored out of fold: no question is answered with weights fitted on its own paper.
* found@5 (``hit_rate@5``) and MRR@10 with their 95 % intervals (:mod:`hepwb.evaluation.stats`: Wilson's
  for found@5, the bootstrap for MRR); the difference of found@5 to bm25 on the same questions with
  hepwb's paired permutation test (:func:`bench.common.versus`); recall@5 by question style.

Prints one markdown table per chunk size and writes each as the results file
``docs/results/retrieval-<size>.md`` (:mod:`bench.results`; ``--no-results`` for a trial run).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import pandas as pd

from bench.common import rounded, shared_material, versus
from bench.results import Row, command_line, comparison_key, git_commit, run_key, write_results
from hepwb.adapt.commands import fit_fusion_for
from hepwb.evaluation import evaluate_by
from hepwb.experiment import ExperimentConfig, run_experiment
from hepwb.experiment.stages import EvalInputs, load_inputs
from hepwb.models.tokenizers import model_problem
from hepwb.paths import Layout
from hepwb.types import JSONObject

BASE_MODEL = "all-MiniLM-L6-v2"
METHODS: list[tuple[str, str, JSONObject, str]] = [
    ("bm25", "bm25", {}, "base"),
    ("bm25 context", "bm25", {"fields": "context"}, "base"),
    ("bm25 context + acronyms", "bm25", {"fields": "context", "acronyms": True}, "base"),
    ("bm25 context + RM3", "bm25", {"fields": "context", "prf": True}, "base"),
    ("dense first", "dense", {}, "base"),
    ("dense max", "dense", {"read": "max"}, "base"),
    ("dense mean", "dense", {"read": "mean"}, "base"),
    ("dense max, adapted", "dense", {"read": "max"}, "adapted"),
    ("hybrid RRF (equal)", "hybrid", {"method": "rrf", "fields": "text", "weight": None}, "base"),
    ("fusion (fitted)", "fusion", {}, "base"),
    ("fusion (fitted), adapted", "fusion", {}, "adapted"),
]
"""(label, retriever, options, which model): ``base`` is all-MiniLM-L6-v2, ``adapted`` is ``--adapted``."""
DELTA = "Δ found@5 vs bm25 (p)"


def _with_ci(summary: dict[str, float], ci: dict[str, tuple[float, float]], metric: str) -> str:
    lo, hi = ci[metric]
    return f"{summary[metric]:.3f} [{lo:.3f}, {hi:.3f}]"


class Size:
    """Every method at one chunk size: the table's rows, the per-question frames, the results rows."""

    def __init__(self, size: int, layout: Layout, questions: str | None, adapted: str) -> None:
        self.size, self.layout, self.questions, self.adapted = size, layout, questions, adapted
        self.rows: list[JSONObject] = []
        self.per_q: dict[str, Any] = {}
        self.keys: dict[str, JSONObject] = {}
        self.published: list[Row] = []

    def run(self, label: str, retriever: str, options: JSONObject, which: str, inputs: EvalInputs | None
            ) -> EvalInputs:  # fmt: skip
        """One method's run (a fusion fitted first); returns the question set's loaded inputs."""
        model = BASE_MODEL if which == "base" else self.adapted
        opts = dict(options)
        if retriever == "fusion":
            fit_name = f"results-{which}-{self.size}"
            fit_fusion_for(fit_name, layout=self.layout, questions=self.questions, chunk_size=self.size,
                           embedding_model=model, progress=False)  # fmt: skip
            opts["fitted"] = fit_name
        cfg = ExperimentConfig.from_params(
            questions=self.questions, chunk_size=self.size, retriever=retriever, retriever_options=opts,
            embedding_model=model,
        )  # fmt: skip
        inputs = inputs or load_inputs(cfg, self.layout, progress=False)
        t = time.perf_counter()
        res = run_experiment(cfg, layout=self.layout, progress=False, inputs=inputs)
        self.per_q[label] = res.per_question.set_index("qid")
        self.keys[label] = run_key(res.record)
        ci = res.record.summary_ci95
        by = evaluate_by(res.per_question, "style")
        self.rows.append({
            "method": label,
            "found@5": _with_ci(res.summary, ci, "hit_rate@5"),
            "MRR@10": _with_ci(res.summary, ci, "mrr@10"),
            **{f"recall@5 {s}": f"{by.loc[s, 'recall@5']:.3f}" for s in by.index},
        })  # fmt: skip
        values = {m: rounded(res.summary[m]) for m in ("hit_rate@5", "mrr@10")}
        values |= {
            f"{m}_{end}": rounded(v) for m in values for end, v in zip(("low", "high"), ci[m], strict=True)
        }
        values |= {f"recall@5 {s}": rounded(by.loc[s, "recall@5"]) for s in by.index}
        self.published.append(Row(f"{label}, {self.size} tokens", self.keys[label], values))
        print(f"{self.size:5d} {label:28s} {self.rows[-1]['found@5']}  ({time.perf_counter() - t:.0f} s)",
              file=sys.stderr, flush=True)  # fmt: skip
        return inputs

    def table(self) -> str:
        """The markdown table of this size (Δ found@5 against bm25 added)."""
        for row in self.rows:
            label = row["method"]
            if label == "bm25":
                row[DELTA] = "-"
                continue
            test = versus(self.per_q[label], self.per_q["bm25"], "hit_rate@5")
            row[DELTA] = f"{test.diff.mean:+.3f} (p={test.p_value:.3f})"
            values = {"diff": rounded(test.diff.mean), "ci_low": rounded(test.diff.low),
                      "ci_high": rounded(test.diff.high), "p": rounded(test.p_value)}  # fmt: skip
            key = comparison_key(self.keys[label], self.keys["bm25"], "hit_rate@5")
            self.published.append(Row(f"{label} vs bm25, {self.size} tokens", key, values))
        frame = pd.DataFrame(self.rows).set_index("method")
        cols = ["found@5", DELTA, "MRR@10", *[c for c in frame.columns if c.startswith("recall@5")]]
        return str(frame[cols].to_markdown())


def main(argv: list[str] | None = None) -> int:
    """Measure, print the tables and write the results files; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="256,512,1024")
    parser.add_argument("--adapted", default="hep-minilm", help="adapted model (hepwb adapt --name ...)")
    parser.add_argument("--questions", default=None, help="question file (default: hepqa-dev)")
    parser.add_argument("--no-results", action="store_true", help="do not write docs/results (a trial run)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if shared_material("corpus") is None:
        return 0
    methods = METHODS
    if model_problem(args.adapted) is not None:
        fix = f"run `hepwb adapt --name {args.adapted}`"
        print(f"no adapted model {args.adapted!r} ({fix}): its rows are left out")
        methods = [m for m in METHODS if m[3] == "base"]
    layout = Layout.default()
    commit = git_commit()  # the code measured: the commit when the runs start
    inputs = None
    for size in (int(s) for s in args.sizes.split(",")):
        at = Size(size, layout, args.questions, args.adapted)
        for label, retriever, options, which in methods:
            inputs = at.run(label, retriever, options, which, inputs)
        table = at.table()
        print(f"\n#### {size} tokens\n\n{table}\n", flush=True)
        if args.no_results or inputs is None:
            continue
        n = sum(1 for q in inputs.questions if q.qid in {loc.qid for loc in inputs.located})
        caption = (
            f"Every method against bm25 at {size} tokens on {inputs.questions_path.name} ({n} questions "
            f"scored), hepilot chunks, overlap 0.1, k = 10: found@5 and MRR@10 with 95 % intervals, "
            f"the found@5 difference to bm25 on the same questions (paired permutation test), recall@5 by "
            f"question style; fusions fitted on 4 folds grouped by paper and scored out of fold. Made by "
            f"`{command_line()}`."
        )
        write_results(f"retrieval-{size}", table, caption=caption, rows=at.published, commit=commit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
