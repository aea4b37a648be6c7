"""Reproduce the all-MiniLM-L6-v2 rows of Chroma's "Evaluating Chunking Strategies for Retrieval".

Usage::

    python -m bench.reproduce_chroma [--k 5] [--configs all|quick] [--out reports/chroma.json]

Method (the study's, through hepwb's own components):

* Corpora and questions: ``<shared>/eval/chroma`` - five corpora (chatlogs, finance, pubmed,
  state_of_the_union, wikitexts) and 472 questions whose references are character spans of them.
  Each corpus is one hepwb document (``markdown_document``; its text is the file, byte for byte, so
  the reference offsets hold).
* Chunkers: hepwb ``recursive`` (the separator hierarchy of LangChain's recursive splitter) and
  ``token`` (fixed token windows, the TokenTextSplitter) at 200/0, 250/0 and 250/125 tokens
  (size/overlap; hepwb's overlap is a fraction: 125/250 = 0.5), and ``cluster_semantic`` at 200
  tokens (pieces of 50). Sizes count **cl100k_base** tokens, as in the study (hepwb's ``cl100k``
  tokenizer, the offline copy of tiktoken's file). One extra row re-runs recursive 250/0 with the
  all-MiniLM-L6-v2 WordPiece tokenizer to show the effect of the tokenizer.
* Retrieval: every chunk of all five corpora in one LanceDB table (``ChunkStore``), embedded with
  all-MiniLM-L6-v2 (offline copy; its 256-word-piece window truncates longer chunks, as in the
  study), exact cosine search through hepwb's ``dense`` retriever, top ``--k`` (5) per question.
* Metrics: :mod:`hepwb.evaluation.spans` - recall, precision, precision_Ω and IoU over characters,
  mean ± standard deviation over the 472 questions, in percent (the study's table format).
  Differences from Chroma's code are listed in that module's docstring.

Artefacts go to a temporary hepwb home unless ``HEPWB_HOME`` is set (embeddings are cached there,
so a second run only retrieves). Exits 0 with a message when the shared material is absent.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import shared_material
from hepwb.chunking import get_chunker
from hepwb.evaluation.spans import precision_omega, span_scores
from hepwb.files.io import write_json
from hepwb.index import ChunkStore, get_embedder
from hepwb.models.tokenizers import get_tokenizer
from hepwb.paths import Layout
from hepwb.processing import markdown_document
from hepwb.retrieval import get_retriever
from hepwb.runtime.env import configure_runtime
from hepwb.text.ids import short_hash
from hepwb.types import Document

CORPORA = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")
CONFIGS = [
    ("recursive", 200, 0.0, "cl100k"),
    ("recursive", 250, 0.0, "cl100k"),
    ("recursive", 250, 0.5, "cl100k"),
    ("token", 200, 0.0, "cl100k"),
    ("token", 250, 0.0, "cl100k"),
    ("token", 250, 0.5, "cl100k"),
    ("cluster_semantic", 200, 0.0, "cl100k"),
    ("recursive", 250, 0.0, "all-MiniLM-L6-v2"),
]


Questions = list[tuple[str, str, list[tuple[int, int]]]]
"""(question, corpus, reference spans) of each question."""


def load(root: Path) -> tuple[dict[str, Document], Questions]:
    """The five corpora as documents and the questions with their reference spans."""
    docs = {
        c: markdown_document((root / "corpora" / f"{c}.md").read_text(encoding="utf-8"), c) for c in CORPORA
    }
    with open(root / "questions_df.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    questions = [
        (
            r["question"],
            r["corpus_id"],
            [(int(x["start_index"]), int(x["end_index"])) for x in json.loads(r["references"])],
        )
        for r in rows
    ]
    return docs, questions


def run_config(
    docs: dict[str, Document], questions: Questions, chunker_name: str, size: int, overlap: float,
    tokenizer: str, k: int, layout: Layout,
) -> dict[str, Any]:  # fmt: skip
    """One chunking configuration: its chunks embedded and searched, the span metrics of every question."""
    t0 = time.perf_counter()
    chunker = get_chunker(chunker_name, chunk_size=size, chunk_overlap=overlap, tokenizer=tokenizer)
    chunks = [c for d in docs.values() for c in chunker.chunk(d)]
    by_id = {d.document_id: d for d in docs.values()}
    chunk_s = time.perf_counter() - t0
    cs_id = (
        f"chroma-{chunker_name}-{size}-{overlap}-{tokenizer}-{short_hash([c.chunk_id for c in chunks], 8)}"
    )
    emb = get_embedder()
    table = ChunkStore(layout.lancedb, emb).table(cs_id.replace(".", "_"), chunks, by_id)
    dense = get_retriever("dense", table, embedder=emb)
    spans_of: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        spans_of.setdefault(by_id[c.document_id].label, []).append((c.start, c.end))
    scores: dict[str, list[float]] = {"recall": [], "precision": [], "iou": [], "precision_omega": []}
    for question, corpus, refs in questions:
        hits = dense.search(question, k)
        own = [(h.start, h.end) for h in hits if h.label == corpus]
        foreign = sum(h.end - h.start for h in hits if h.label != corpus)
        s = span_scores(refs, own, foreign)
        for m in ("recall", "precision", "iou"):
            scores[m].append(s[m])
        scores["precision_omega"].append(precision_omega(refs, spans_of[corpus]))
    tok = get_tokenizer("cl100k")
    sample = chunks[:: max(1, len(chunks) // 400)]
    return {
        "chunker": chunker_name,
        "size": size,
        "overlap_tokens": round(size * overlap),
        "tokenizer": tokenizer,
        "n_chunks": len(chunks),
        "mean_cl100k_tokens": float(np.mean([tok.count(c.text) for c in sample])),
        **{f"{m}_mean": 100 * float(np.mean(v)) for m, v in scores.items()},
        **{f"{m}_std": 100 * float(np.std(v)) for m, v in scores.items()},
        "chunk_s": round(chunk_s, 1),
        "total_s": round(time.perf_counter() - t0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--configs", choices=["all", "quick", "cluster"], default="all")
    ap.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    questions_file = shared_material("eval", "chroma", "questions_df.csv")
    if questions_file is None:
        return 0
    root = questions_file.parent
    os.environ.setdefault("HEPWB_HOME", tempfile.mkdtemp(prefix="hepwb-chroma-"))
    configure_runtime(offline=True)
    layout = Layout.default()
    docs, questions = load(root)
    configs = {
        "all": CONFIGS,
        "quick": CONFIGS[:1],
        "cluster": [c for c in CONFIGS if c[0] == "cluster_semantic"],
    }[args.configs]
    rows = []
    for cfg in configs:
        row = run_config(docs, questions, *cfg, args.k, layout)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    head = f"{'chunker':17s} {'size':>5s} {'ovl':>4s} {'tokenizer':17s} {'chunks':>6s} {'mean tok':>8s}"
    print(f"\n{head}  {'recall':>12s} {'precision':>11s} {'precision_Ω':>12s} {'IoU':>11s}")
    for r in rows:
        cells = "  ".join(
            f"{r[m + '_mean']:5.1f} ± {r[m + '_std']:4.1f}"
            for m in ("recall", "precision", "precision_omega", "iou")
        )
        print(
            f"{r['chunker']:17s} {r['size']:5d} {r['overlap_tokens']:4d} {r['tokenizer']:17s} "
            f"{r['n_chunks']:6d} {r['mean_cl100k_tokens']:8.1f}  {cells}"
        )
    print(f"\n{len(questions)} questions, k = {args.k}, all-MiniLM-L6-v2, in % (mean ± std over questions)")
    if args.out:
        write_json(args.out, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
