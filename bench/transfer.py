"""Does it transfer? Each method's gain over ``bm25`` on hepqa-dev and on Chroma's questions, side by side.

Usage::

    .venv/bin/python bench/transfer.py [--sizes 256,512,1024] [--methods "bm25;hybrid(weight=0.3)"]

Method:

* **hepqa-dev**: the 32 shared papers (LaTeX preferred) and their 124 questions, through hepwb's own
  ``run_experiment`` (chunker ``hepilot``, overlap 0.1, k = 10).
* **Chroma's set** (a different domain, used to check, never to choose): the five corpora of
  ``<shared>/eval/chroma`` as one markdown paper each (labels ``chatlogs``, ``finance``, ``pubmed``, ``sotu``,
  ``wikitexts``) and its 472 questions as a hepqa-style file whose evidence quotes are the reference spans,
  verbatim; the same pipeline, chunker and sizes. A corpus without headings: ``fields=context`` adds only
  the corpus name there.
* Metrics: ``found@5`` (``hit_rate@5``: a top-5 chunk covers at least half of an evidence quote) and
  ``MRR@10``; each method's difference from ``bm25`` on the same questions with a paired bootstrap test
  (:func:`hepwb.evaluation.stats.paired_test`, 10,000 resamples).
* When ``bm25(fields=context)`` is among the methods, a second table gives every other method's found@5
  difference from it on the same questions (paired permutation test): does anything beat the best lexical
  method, on both sets?
* A method "transfers" when its found@5 gain has the same sign on both sets at a chunk size; the script
  names the methods whose gain exists on one set only.

Artefacts go to a scratch project (``--home``, default a temporary folder) that starts from a copy of
this project's embedding cache; conversions, chunk tables and runs are its own, so the project's catalog
is untouched. Exits 0 with a message when the shared material is absent.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hepwb.evaluation.stats import paired_test  # noqa: E402
from hepwb.paths import Layout, shared_dir  # noqa: E402
from hepwb.pipeline.config import ExperimentConfig  # noqa: E402
from hepwb.pipeline.experiment import run_experiment  # noqa: E402

CHROMA = {
    "chatlogs": "chatlogs",
    "finance": "finance",
    "pubmed": "pubmed",
    "state_of_the_union": "sotu",
    "wikitexts": "wikitexts",
}
METHODS = ("bm25", "bm25(fields=context)", "dense", "dense(read=max)", "hybrid", "hybrid_linear")
METRICS = ("hit_rate@5", "mrr@10")


def chroma_inputs(folder: Path) -> tuple[Path, Path]:
    """Chroma's corpora and questions as a hepwb corpus folder and a hepqa-style question file."""
    root = shared_dir() / "eval" / "chroma"
    corpus = folder / "chroma-corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for name, label in CHROMA.items():
        text = (root / "corpora" / f"{name}.md").read_text(encoding="utf-8")
        (corpus / f"{label}_chroma.md").write_text(text, encoding="utf-8")
    lines = []
    with open(root / "questions_df.csv", encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            refs = json.loads(row["references"])
            evidence = [{"doc": CHROMA[row["corpus_id"]], "quote": r["content"]} for r in refs]
            lines.append(json.dumps({"qid": f"CH{i:04d}", "question": row["question"], "answer": "-",
                                     "kind": "fact", "style": "chroma", "evidence": evidence}))  # fmt: skip
    questions = folder / "chroma-questions.jsonl"
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return corpus, questions


def have_chroma() -> bool:
    """Whether Chroma's questions are in the shared material (else says so: nothing is measured)."""
    if (shared_dir() / "eval" / "chroma" / "questions_df.csv").is_file():
        return True
    print(f"no Chroma data under {shared_dir()}; set HEPWB_SHARED. Nothing measured.")
    return False


def scratch_sets(home: Path | None, prefix: str) -> tuple[Layout, dict[str, tuple[str | None, str | None]]]:
    """A scratch project (``home``, else a temporary folder) and the two question sets as (corpus, questions).

    The project starts from a copy of this project's embedding cache, so vectors already made are not
    embedded again; hepqa-dev is ``(None, None)`` (the defaults), Chroma's set is written into the project.
    """
    home = home or Path(tempfile.mkdtemp(prefix=prefix))
    layout = Layout(home)
    if not layout.lancedb.exists():
        for cache in Layout.default().lancedb.glob("embcache__*.lance"):
            shutil.copytree(cache, layout.lancedb / cache.name)
    chroma_corpus, chroma_questions = chroma_inputs(home)
    return layout, {"hepqa-dev": (None, None), "chroma": (str(chroma_corpus), str(chroma_questions))}


_INPUTS: dict[tuple[str | None, str | None], Any] = {}


def run(layout: Layout, method: str, size: int, corpus: str | None, questions: str | None) -> Any:
    """One evaluation: its per-question frame (indexed by qid) and summary.

    The papers and located evidence of a question set are loaded once and shared by its runs.
    """
    from hepwb.pipeline.stages import load_inputs

    cfg = ExperimentConfig.from_params(
        retriever=method, chunk_size=size, corpus=corpus, questions=questions, prefer_latex=True
    )
    if (corpus, questions) not in _INPUTS:
        _INPUTS[(corpus, questions)] = load_inputs(cfg, layout, progress=False)
    res = run_experiment(cfg, layout=layout, progress=False, inputs=_INPUTS[(corpus, questions)])
    return res.per_question.set_index("qid"), {**res.summary, **res.record.costs}


def main(argv: list[str] | None = None) -> int:
    """Measure; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--methods", default=",".join(METHODS), help="';'-separated when options hold commas")
    ap.add_argument("--home", type=Path, default=None, help="scratch project (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=ROOT / "reports" / "bench" / "transfer.json")
    args = ap.parse_args(argv)
    if not have_chroma():
        return 0
    sep = ";" if ";" in args.methods else ","
    methods = [m.strip() for m in args.methods.split(sep) if m.strip()]
    if "bm25" not in methods:
        methods.insert(0, "bm25")
    sizes = [int(s) for s in args.sizes.split(",")]
    layout, sets = scratch_sets(args.home, "hepwb-transfer-")
    rows = []
    frames: dict[tuple[str, int, str], Any] = {}  # per-question results, for the second comparison
    for set_name, (corpus, questions) in sets.items():
        for size in sizes:
            base = None
            for method in methods:
                t0 = time.perf_counter()
                per_q, summary = run(layout, method, size, corpus, questions)
                frames[(set_name, size, method)] = per_q
                row: dict[str, Any] = {"set": set_name, "size": size, "method": method,
                                       **{m: round(float(summary[m]), 4) for m in METRICS},
                                       "p50_ms": summary.get("query_p50_ms"),
                                       "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
                if method == "bm25":
                    base = per_q
                elif base is not None:
                    evaluated = base.index[base["n_located"] > 0]
                    for m in METRICS:
                        test = paired_test(per_q.loc[evaluated, m], base.loc[evaluated, m])
                        row[f"{m}_gain"] = round(float(test.diff.mean), 4)
                        ci = [round(float(test.diff.low), 4), round(float(test.diff.high), 4)]
                        row[f"{m}_gain_ci95"] = ci
                        row[f"{m}_p"] = round(float(test.p_value), 4)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print(summarize(rows, sizes, methods))
    if CONTEXT in methods:
        print(against_context(frames, list(sets), sizes, methods))
    return 0


CONTEXT = "bm25(fields=context)"


def against_context(frames: dict[tuple[str, int, str], Any], sets: list[str], sizes: list[int],
                    methods: list[str]) -> str:  # fmt: skip
    """found@5 of every method minus that of ``bm25(fields=context)`` on the same questions, paired test."""
    out = [
        f"\nfound@5 gain over {CONTEXT} (paired permutation test), " + " / ".join(sets) + ":",
        "| method | size | " + " | ".join(f"{s} Δ [95 % CI], p" for s in sets) + " |",
        "|---|---:|" + "---|" * len(sets),
    ]
    for method in (m for m in methods if m not in ("bm25", CONTEXT)):
        for size in sizes:
            cells = []
            for set_name in sets:
                a, b = frames.get((set_name, size, method)), frames.get((set_name, size, CONTEXT))
                if a is None or b is None:
                    cells.append("-")
                    continue
                evaluated = b.index[b["n_located"] > 0]
                t = paired_test(a.loc[evaluated, "hit_rate@5"], b.loc[evaluated, "hit_rate@5"])
                cells.append(f"{t.diff.mean:+.3f} [{t.diff.low:+.3f}, {t.diff.high:+.3f}], p={t.p_value:.3f}")
            out.append(f"| {method} | {size} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def summarize(rows: list[dict[str, Any]], sizes: list[int], methods: list[str]) -> str:
    """The side-by-side table and the methods whose found@5 gain holds on one set only."""
    by = {(r["set"], r["size"], r["method"]): r for r in rows}
    out = [
        "| method | size | dev found@5 (Δ vs bm25, p) | dev MRR@10 (Δ) | Chroma found@5 (Δ, p) "
        "| Chroma MRR@10 (Δ) |",
        "|---|---:|---|---|---|---|",
    ]
    one_sided = []
    for method in methods:
        for size in sizes:
            dev, ch = by.get(("hepqa-dev", size, method)), by.get(("chroma", size, method))
            if dev is None or ch is None:
                continue

            def cell(r: dict[str, Any], m: str, with_p: bool) -> str:
                if r["method"] == "bm25":
                    return f"{r[m]:.3f}"
                p = f", p={r[m + '_p']:.3f}" if with_p else ""
                return f"{r[m]:.3f} ({r[m + '_gain']:+.3f}{p})"

            cells = [cell(dev, "hit_rate@5", True), cell(dev, "mrr@10", False)]
            cells += [cell(ch, "hit_rate@5", True), cell(ch, "mrr@10", False)]
            out.append(f"| {method} | {size} | " + " | ".join(cells) + " |")
            if method != "bm25":
                g_dev, g_ch = dev["hit_rate@5_gain"], ch["hit_rate@5_gain"]
                if (g_dev > 0) != (g_ch > 0) and max(g_dev, g_ch) > 0:
                    one_sided.append(f"{method} at {size} ({g_dev:+.3f} dev, {g_ch:+.3f} Chroma)")
    out.append("")
    out.append("found@5 gain over bm25 on one set only: " + ("; ".join(one_sided) or "none"))
    out.append("query p50 ms on hepqa-dev (this machine's CPU; " + "/".join(map(str, sizes)) + " tokens):")
    for m in methods:
        p50 = [by.get(("hepqa-dev", z, m), {}).get("p50_ms") for z in sizes]
        if all(v is not None for v in p50):
            out.append(f"  {m}: " + " / ".join(f"{v:.0f}" for v in p50))
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
