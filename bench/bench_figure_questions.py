"""Retrieval on figure questions, and the reader-context option that adds linked captions (issue #18).

Usage::

    python -m bench.bench_figure_questions [--retrievers bm25,dense,hybrid] [--k 5]
        [--chunker hepilot] [--chunk-size 512] [--max-per-doc 10]

Questions: the LLM-free generator's (``hepwb testset``: ``section``, ``caption`` and ``figure``
kinds, all from the shared corpus) and hepqa-dev's. Per question set and kind: ``recall@k`` of
the chunks, and ``evidence_in_context@k`` with the chunk alone and with the captions of the
figures and tables each hit mentions (:mod:`hepwb.evaluation.context`), on the same hits.
Everything is cached under ``data/`` like a sweep; the first run embeds the corpus (minutes).
Shared material comes from ``$HEPWB_SHARED`` or ``../shared``; the script exits 0 when absent.
"""

from __future__ import annotations

import argparse

from bench.common import shared_material
from hepwb.evaluation import build_keyindexes, evaluate, load_questions, locate_all
from hepwb.evaluation.context import evidence_in_context
from hepwb.evaluation.testset import structural_questions
from hepwb.experiment import Searcher


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--retrievers", default="bm25,dense,hybrid")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--chunker", default="hepilot")
    ap.add_argument("--chunk-size", type=int, default=512)
    ap.add_argument("--max-per-doc", type=int, default=10)
    args = ap.parse_args(argv)
    qa = shared_material("eval", "hepqa-dev.jsonl")
    if qa is None:
        return 0
    s = Searcher.open(chunker=args.chunker, chunk_size=args.chunk_size, progress=True)
    if s.chunkset is None:
        print(f"no chunk set for {args.chunker} at {args.chunk_size} tokens: nothing measured")
        return 0
    docs = list(s.chunkset.documents.values())
    sets = {
        "generated": structural_questions(docs, max_per_doc=args.max_per_doc),
        "hepqa-dev": load_questions(qa),
    }
    k = args.k
    print(f"chunk set {s.name}: {len(s.chunkset.chunks)} chunks of {len(docs)} papers; k = {k}")
    print(
        f"{'set':10s} {'kind':10s} {'retriever':9s} {'n':>4s} {'recall':>7s} {'in ctx':>7s} {'+captions':>9s}"
    )
    for set_name, questions in sets.items():
        located, _ = locate_all(questions, docs)
        for name in args.retrievers.split(","):
            hits = {q.qid: s.search(q.question, name, k) for q in questions}
            result = evaluate(questions, located, hits, (k,), keyindexes=build_keyindexes(docs))
            table = result.per_question
            kinds = ["all", *sorted({q.kind for q in questions if q.kind})]
            for kind in kinds:
                chosen = {q.qid for q in questions if kind in ("all", q.kind)}
                sub = [loc for loc in located if loc.qid in chosen]
                if not sub:
                    continue
                rows = table[table["qid"].isin(chosen)]
                by_id = s.chunkset.documents
                plain = evidence_in_context(sub, hits, by_id, k=k, captions=False)
                linked = evidence_in_context(sub, hits, by_id, k=k, captions=True)
                recall = rows[f"recall@{k}"].mean()
                cells = f"{len(chosen):4d} {recall:7.3f} {plain:7.3f} {linked:9.3f}"
                print(f"{set_name:10s} {kind:10s} {name:9s} {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
