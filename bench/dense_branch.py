"""What the dense branch adds to ``bm25(fields=context)``, on hepqa-dev and on Chroma's questions.

Usage::

    python -m bench.dense_branch [--sizes 256,512,1024] [--home DIR]

For each question set (hepqa-dev; Chroma's set, a different domain that checks and never chooses) and
chunk size, on hepwb's own chunk sets (``hepilot``, overlap 0.1, LaTeX preferred) and embedder:

* three dense readings of a chunk: ``first`` (its first 254 word pieces, the chunk table's vector),
  ``max`` (its best window, as ``dense(read=max)``) and ``ctx-max`` (its best window, each window
  embedded after the paper's title and the chunk's section path: the context ``bm25(fields=context)``
  matches, given to the embedder);
* each alone: found@5, and how many questions it finds in its top 5 that ``bm25(fields=context)``
  misses (``dense only``: the only questions a fusion can win) and the reverse (``bm25 only``);
* each fused with ``bm25(fields=context)`` by the convex combination of min-max-normalised scores that
  ``hybrid`` uses, the dense share chosen out of fold
  (:func:`hepwb.experiment.fusion_fit.out_of_fold_choices`:
  folds grouped by paper, as ``fusion`` does; share 0 to 0.5 in steps of 0.05), against
  ``bm25(fields=context)`` alone: the found@5 difference with its 95 % interval and a paired permutation
  test;
* the length bias of best-window scoring: the mean number of windows of dense's top hit against that of
  all chunks.

The fusion here combines score matrices over every chunk (dense scores of all chunks, BM25 scores of its
top 50, others 0; scikit-learn's ``minmax_scale`` per question), so its numbers can differ slightly from
the ``hybrid`` retriever's; found@5 is hepwb's (:func:`hepwb.evaluation.rank.rank_scores`, chunk level).
Scratch artefacts go to ``--home`` (default a temporary folder seeded with this project's embedding cache).
Exits 0 with a message when the shared material is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.common import REPORTS, have_chroma, scratch_sets
from hepwb import defaults
from hepwb.evaluation.levels import relevant_chunks
from hepwb.evaluation.rank import rank_scores
from hepwb.evaluation.stats import paired_test
from hepwb.experiment import ExperimentConfig
from hepwb.experiment.fusion_fit import out_of_fold_choices, paper_of
from hepwb.experiment.stages import chunk_stage, index_stage, load_inputs
from hepwb.files.io import write_json
from hepwb.index import ChunkStore, get_embedder
from hepwb.index.windows import window_size, windows_of
from hepwb.paths import Layout
from hepwb.retrieval import get_retriever
from hepwb.types import Chunk

READS = ("first", "max", "ctx-max")
SHARES = tuple(round(0.05 * i, 2) for i in range(11))


Matrix = NDArray[np.float64]


def _found5(scores: Matrix, relevant: list[set[int]]) -> Matrix:
    """found@5 of each question (row) ranking chunks (columns) by ``scores``; -inf is never retrieved."""
    top = np.argsort(-scores, axis=1, kind="stable")[:, :5]
    run = {str(qi): {str(j): 1.0 / rank for rank, j in enumerate(row.tolist(), 1) if np.isfinite(s[j])}
           for qi, (row, s) in enumerate(zip(top, scores, strict=True))}  # fmt: skip
    qrels = {str(qi): dict.fromkeys(map(str, rel), 1) for qi, rel in enumerate(relevant)}
    found = rank_scores(qrels, run, ["hit_rate@5"])["hit_rate@5"]
    return np.array([found[str(qi)] for qi in range(len(relevant))], float)


def _out_of_fold(dense: Matrix, bm25: Matrix, relevant: list[set[int]], groups: list[str]) -> Matrix:
    """found@5 of each question under the dense share chosen on the other folds' papers."""
    from sklearn.preprocessing import minmax_scale

    dn, bn = minmax_scale(dense, axis=1), minmax_scale(bm25, axis=1)
    table = np.stack([_found5(w * dn + (1 - w) * bn, relevant) for w in SHARES])  # share x question
    out = np.zeros(len(relevant))
    for share, test in out_of_fold_choices(table, groups, min(defaults.FUSION_FOLDS, len(set(groups)))):
        out[test] = table[share, test]
    return out


def measure(layout: Layout, size: int, corpus: str | None, questions: str | None) -> list[dict[str, Any]]:
    """Rows of one question set at one chunk size (see the module docstring)."""
    cfg = ExperimentConfig.from_params(chunk_size=size, corpus=corpus, questions=questions, prefer_latex=True)
    inputs = load_inputs(cfg, layout, progress=False)
    cs = chunk_stage(cfg, inputs.documents, layout, inputs.log, progress=False)
    emb = get_embedder(cfg.embedding_model)
    table = index_stage(cs, emb, layout, progress=False)
    rel_ids = relevant_chunks(inputs.located, cs.chunks, inputs.keyindexes)
    qs = [q for q in inputs.questions if rel_ids.get(q.qid)]
    pos = {c.chunk_id: i for i, c in enumerate(cs.chunks)}
    relevant = [{pos[c] for c in rel_ids[q.qid] if c in pos} for q in qs]
    groups = [paper_of(q) for q in qs]
    bm25 = np.zeros((len(qs), len(cs.chunks)))
    lexical = get_retriever("bm25", table, fields="context")
    for qi, q in enumerate(qs):
        for h in lexical.search(q.question, 50):
            bm25[qi, pos[h.chunk_id]] = h.score
    base = _found5(np.where(bm25 > 0, bm25, -np.inf), relevant)  # BM25 alone ranks only what it retrieved
    qv = emb.embed([q.question for q in qs])
    size_w = window_size(emb.model) - 24  # room for the context line
    spans = [windows_of(c.text, emb.model, size=size_w) for c in cs.chunks]
    owner = np.repeat(np.arange(len(cs.chunks)), [len(s) for s in spans])
    n_windows = np.array([len(s) for s in spans])

    def context(c: Chunk) -> str:
        return f"{cs.documents[c.document_id].title}. {' > '.join(c.section_path)}.\n"

    store = ChunkStore(layout.lancedb, emb, progress=False)  # vectors through the embedding cache
    rows = []
    for read in READS:
        if read == "first":
            vectors, own = store.embed_cached([c.text for c in cs.chunks]), np.arange(len(cs.chunks))
        else:
            prefix = context if read == "ctx-max" else (lambda c: "")
            texts = [prefix(c) + c.text[a:b] for c, sp in zip(cs.chunks, spans, strict=True) for a, b in sp]
            vectors, own = store.embed_cached(texts), owner
        sims = qv @ vectors.T
        dense = np.full((len(qs), len(cs.chunks)), -1.0)
        np.maximum.at(dense.T, own, sims.T)
        alone = _found5(dense, relevant)
        fused = _out_of_fold(dense, bm25, relevant, groups)
        test = paired_test(fused, base)
        top1 = np.argmax(dense, axis=1)
        rows.append({
            "size": size, "read": read, "n": len(qs), "bm25_context": round(float(base.mean()), 4),
            "dense": round(float(alone.mean()), 4),
            "dense_only": int(((alone == 1) & (base == 0)).sum()),
            "bm25_only": int(((alone == 0) & (base == 1)).sum()),
            "fused": round(float(fused.mean()), 4), "gain": round(float(test.diff.mean), 4),
            "gain_ci95": [round(float(test.diff.low), 4), round(float(test.diff.high), 4)],
            "p": round(float(test.p_value), 4), "won": test.n_a_better, "lost": test.n_b_better,
            "windows_top1": round(float(n_windows[top1].mean()), 2),
            "windows_all": round(float(n_windows.mean()), 2),
        })  # fmt: skip
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--home", type=Path, default=None, help="scratch project (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=REPORTS / "dense_branch.json")
    args = ap.parse_args(argv)
    if not have_chroma():
        return 0
    layout, sets = scratch_sets(args.home, "hepwb-dense-")
    rows = []
    for name, (corpus, questions) in sets.items():
        for size in (int(s) for s in args.sizes.split(",")):
            rows += [{"set": name, **r} for r in measure(layout, size, corpus, questions)]
    write_json(args.json, rows)
    print(
        "| set | size | dense reads | dense found@5 | dense only / bm25 only | bm25(fields=context) "
        "| fused, share out of fold | Δ [95 % CI], p | won / lost | windows: top hit / all |\n"
        "|---|---:|---|---:|---|---:|---:|---|---|---|"
    )
    for r in rows:
        lo, hi = r["gain_ci95"]
        cells = [
            r["set"], str(r["size"]), r["read"], f"{r['dense']:.3f}", f"{r['dense_only']} / {r['bm25_only']}",
            f"{r['bm25_context']:.3f}", f"{r['fused']:.3f}",
            f"{r['gain']:+.3f} [{lo:+.3f}, {hi:+.3f}], p={r['p']:.3f}", f"{r['won']} / {r['lost']}",
            f"{r['windows_top1']:.2f} / {r['windows_all']:.2f}",
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
