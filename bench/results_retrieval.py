"""Retrieval quality of every method against bm25 on a question set: the README's results section.

Usage::

    .venv/bin/python bench/results_retrieval.py [--sizes 256,512,1024] [--adapted hep-minilm]
        [--questions FILE] [--out reports/retrieval-results.md]

Method:

* Chunk sets: ``hepilot`` at each size, overlap 0.1, over the shared corpus; questions: hepqa-dev.
* Methods: bm25 (HEP terms, chunk text), bm25 over title + section + text (``fields=context``), with
  acronym expansion, with RM3 feedback; dense reading the first 256 word pieces, the best window, the
  mean window vector; dense with the adapted model (``--adapted``, built by ``hepwb adapt``);
  equal-weight RRF hybrid (the previous default); the fitted fusion with the base and the adapted
  model. Fusions are fitted here by ``hepwb.adapt.run.fit_fusion_for`` (4 folds grouped by paper) and
  scored out of fold: no question is answered with weights fitted on its own paper.
* found@5 (``hit_rate@5``) and MRR@10 with 95 % percentile-bootstrap intervals; the difference of
  found@5 to bm25 on the same questions with a paired permutation test
  (:func:`hepwb.evaluation.stats.compare_runs`); recall@5 by question style.

Prints one markdown table per chunk size (and writes them to ``--out``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

METHODS = [
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


def _with_ci(summary: dict[str, float], ci: dict[str, tuple[float, float]], metric: str) -> str:
    lo, hi = ci[metric]
    return f"{summary[metric]:.3f} [{lo:.3f}, {hi:.3f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="256,512,1024")
    parser.add_argument("--adapted", default="hep-minilm", help="adapted model (hepwb adapt --name ...)")
    parser.add_argument("--questions", default=None)
    parser.add_argument("--out", default="reports/retrieval-results.md")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from hepwb.paths import shared_dir

    if not (shared_dir() / "corpus").is_dir():
        print("results_retrieval: ../shared is absent (set HEPWB_SHARED); nothing to measure")
        return 0

    import pandas as pd

    from hepwb.adapt.run import fit_fusion_for
    from hepwb.evaluation import evaluate_by
    from hepwb.evaluation.stats import compare_runs
    from hepwb.models.tokenizers import model_problem
    from hepwb.paths import Layout
    from hepwb.pipeline import ExperimentConfig, run_experiment
    from hepwb.pipeline.stages import load_inputs

    base = "all-MiniLM-L6-v2"
    adapted = args.adapted
    methods = METHODS
    if model_problem(adapted) is not None:
        print(f"no adapted model {adapted!r} (run `hepwb adapt --name {adapted}`): its rows are left out")
        methods = [m for m in METHODS if m[3] == "base"]
    layout = Layout.default()
    out: list[str] = []
    inputs = None
    for size in (int(s) for s in args.sizes.split(",")):
        per_q: dict[str, pd.DataFrame] = {}
        rows = []
        for label, retriever, options, which in methods:
            model = base if which == "base" else adapted
            opts = dict(options)
            if retriever == "fusion":
                fit_name = f"results-{which}-{size}"
                fit_fusion_for(fit_name, layout=layout, questions=args.questions, chunk_size=size,
                               embedding_model=model, progress=False)  # fmt: skip
                opts["fitted"] = fit_name
            cfg = ExperimentConfig.from_params(
                questions=args.questions, chunk_size=size, retriever=retriever, retriever_options=opts,
                embedding_model=model,
            )  # fmt: skip
            inputs = inputs or load_inputs(cfg, layout, progress=False)
            t = time.perf_counter()
            res = run_experiment(cfg, layout=layout, progress=False, inputs=inputs)
            per_q[label] = res.per_question
            ci = res.record.summary_ci95
            by = evaluate_by(res.per_question, "style")
            rows.append({
                "method": label,
                "found@5": _with_ci(res.summary, ci, "hit_rate@5"),
                "MRR@10": _with_ci(res.summary, ci, "mrr@10"),
                **{f"recall@5 {s}": f"{by.loc[s, 'recall@5']:.3f}" for s in by.index},
            })  # fmt: skip
            print(f"{size:5d} {label:28s} {rows[-1]['found@5']}  ({time.perf_counter() - t:.0f} s)",
                  file=sys.stderr, flush=True)  # fmt: skip
        diffs = compare_runs(per_q, "hit_rate@5", baseline="bm25").set_index("run")
        for row in rows:
            if row["method"] != "bm25":
                d = diffs.loc[row["method"]]
                row["Δ found@5 vs bm25 (p)"] = f"{d['diff']:+.3f} (p={d['p_value']:.3f})"
            else:
                row["Δ found@5 vs bm25 (p)"] = "-"
        frame = pd.DataFrame(rows).set_index("method")
        cols = [
            "found@5",
            "Δ found@5 vs bm25 (p)",
            "MRR@10",
            *[c for c in frame.columns if c.startswith("recall@5")],
        ]
        out.append(f"#### {size} tokens\n\n" + frame[cols].to_markdown() + "\n")
        print(out[-1], flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(out), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
