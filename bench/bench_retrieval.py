"""Query latency of every retriever, on the 32-paper corpus and on a 100k-chunk scale-up.

Usage::

    python -m bench.bench_retrieval [--chunk-size 512] [--scale 100000] [--queries 124]

Method:

* The shared corpus (32 papers) is converted, chunked (``hepilot``, ``--chunk-size`` tokens,
  overlap 0.1) and indexed by :class:`hepwb.experiment.search.Searcher` (LanceDB table with both
  full-text indexes; exact vector search below 20k rows). Queries are the ``hepqa-dev`` questions.
* Query embedding (all-MiniLM-L6-v2 on CPU) costs the same at any corpus size, so it is measured
  once on its own ("query embedding" row) and then taken out: the questions are embedded before
  timing and the embedder answers them with those vectors (``Embedder.remember_queries``). Every other cost -
  HEP term analysis, entity extraction, LanceDB search, fusion, hit building with highlights - is
  timed, per query, with ``time.perf_counter``, after 5 untimed warm-up queries.
* The baseline, in the same process, is a brute-force numpy search: one matrix-vector product
  over all normalised vectors and ``argpartition`` for the top k (exact cosine). "x numpy" is a
  retriever's p50 divided by the baseline's p50.
* Scale-up: the corpus table's rows are repeated up to ``--scale`` rows (new chunk ids; each copy's
  vector gets Gaussian noise sigma 0.02 then is renormalised, so neighbours are not exact ties)
  into a fresh LanceDB table with hepwb's indexes (three FTS indexes and, at >= 20k rows, an
  IVF_HNSW_SQ cosine index of one partition per 10,000 rows, searched by ``ann_search``). ANN
  recall@10 is the share of the exact numpy top 10 that the dense retriever returns. Targets at
  100k chunks: dense p50 <= 5 ms, hybrid p50 <= 15 ms.
* "lancedb vector (ids)" and "lancedb hybrid (ids)" time the LanceDB query alone (chunk ids
  only, as a search service would return them); the retriever rows add fetching the chunk columns
  (text, pages, section, entities …) and building explained hits with highlights.
* ``rerank``, ``multi_query`` and ``hyde`` need a cross-encoder or an LLM endpoint; when they are
  unavailable their row says so.

Shared material comes from ``$HEPWB_SHARED`` or ``../shared``; the script exits 0 with a message
when it is absent.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from bench.common import shared_material
from hepwb import DependencyError, RetrieverUnavailableError
from hepwb.evaluation import load_questions
from hepwb.experiment import Searcher
from hepwb.index import Embedder, connect, search_terms
from hepwb.index.chunk_store import ann_search, build_indexes
from hepwb.paths import Layout
from hepwb.retrieval import get_retriever

RETRIEVERS = [
    "dense",
    "bm25",
    "bm25_plain",
    "hybrid",
    "hybrid_linear",
    "entity",
    "parent",
    "rerank",
    "multi_query",
]
K = 10
T = TypeVar("T")
Vectors = NDArray[np.float32]
Row = tuple[str, str, float, float, float, str]
"""(table, retriever, p50 ms, p95 ms, p50 / numpy's p50, note)."""


def timed(fn: Callable[[T], Any], queries: Sequence[T], warmup: int = 5) -> tuple[float, float]:
    """p50 and p95 (ms) of ``fn`` over ``queries``, after ``warmup`` untimed calls."""
    for q in queries[:warmup]:
        fn(q)
    ts = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        ts.append((time.perf_counter() - t) * 1e3)
    return float(np.percentile(ts, 50)), float(np.percentile(ts, 95))


def numpy_topk(matrix: Vectors) -> Callable[[Vectors], NDArray[np.intp]]:
    """Exact top-``K`` search over the rows of ``matrix`` (the baseline)."""

    def search(vec: Vectors) -> NDArray[np.intp]:
        scores = matrix @ vec
        top = np.argpartition(-scores, K)[:K]
        return top[np.argsort(-scores[top])]

    return search


def bench_table(label: str, table: Any, emb: Embedder, questions: list[str], vectors: Vectors) -> list[Row]:
    """Every retriever's latency on ``table``, with numpy's and LanceDB's own searches as baselines."""
    matrix = np.asarray(table.to_arrow().column("vector").to_pylist(), dtype=np.float32)
    base = numpy_topk(matrix)
    b50, b95 = timed(base, list(vectors))
    rows: list[Row] = [(label, "numpy brute force", b50, b95, 1.0, "")]
    # the LanceDB search alone (chunk ids and scores; no columns fetched, no hits built)
    from lancedb.rerankers import RRFReranker

    pairs = list(zip(vectors, [search_terms(q) for q in questions], strict=True))
    ann = timed(
        lambda p: ann_search(table, p[0]).select(["chunk_id"]).limit(K).to_arrow(),
        pairs,
    )
    rows.append((label, "lancedb vector (ids)", *ann, ann[0] / b50, "index search only"))
    hyb = timed(
        lambda p: (
            table.search(query_type="hybrid", vector_column_name="vector", fts_columns="search_text")
            .vector(p[0])
            .text(p[1])
            .metric("cosine")
            .rerank(RRFReranker())
            .select(["chunk_id"])
            .limit(K)
            .to_arrow()
        ),
        pairs,
    )
    rows.append((label, "lancedb hybrid (ids)", *hyb, hyb[0] / b50, "index search + RRF only"))
    for name in RETRIEVERS:
        try:
            r = get_retriever(name, table, embedder=emb)
        except (RetrieverUnavailableError, DependencyError) as exc:
            rows.append(
                (label, name, float("nan"), float("nan"), float("nan"), f"unavailable: {str(exc)[:60]}")
            )
            continue
        p50, p95 = timed(partial(r.search, k=K), questions)
        rows.append((label, name, p50, p95, p50 / b50, ""))
    return rows


def scale_up(table: Any, n: int, folder: Path) -> tuple[Any, float]:
    """``table``'s rows repeated to ``n`` rows (new ids, noisy vectors) with hepwb's indexes; build time."""
    import pyarrow as pa

    src = table.to_arrow()
    reps = -(-n // src.num_rows)
    rng = np.random.default_rng(0)
    parts = []
    for i in range(reps):
        part = src
        vec = np.asarray(src.column("vector").to_pylist(), dtype=np.float32)
        if i:
            vec = vec + rng.normal(0, 0.02, vec.shape).astype(np.float32)
            vec /= np.linalg.norm(vec, axis=1, keepdims=True)
            ids = [f"{c}-{i}" for c in src.column("chunk_id").to_pylist()]
            part = part.set_column(part.schema.get_field_index("chunk_id"), "chunk_id", pa.array(ids))
        col = pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), vec.shape[1])
        parts.append(part.set_column(part.schema.get_field_index("vector"), "vector", col))
    big = pa.concat_tables(parts).slice(0, n)
    db = connect(folder)
    t = time.perf_counter()
    tbl = db.create_table("scaled", big, mode="overwrite")
    build_indexes(tbl)
    return tbl, time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunk-size", type=int, default=512)
    ap.add_argument("--scale", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=124)
    args = ap.parse_args(argv)
    qa = shared_material("eval", "hepqa-dev.jsonl")
    if qa is None:
        return 0
    os.environ.setdefault("HEPWB_HOME", tempfile.mkdtemp(prefix="hepwb-bench-"))
    questions = [q.question for q in load_questions(qa)][: args.queries]
    s = Searcher.open(chunk_size=args.chunk_size, layout=Layout.default())
    t = time.perf_counter()
    for q in questions:
        s.embedder.embed([q])
    embed_ms = (time.perf_counter() - t) * 1e3 / len(questions)
    emb = s.embedder
    vectors = emb.embed(questions)
    emb.remember_queries(dict(zip(questions, vectors, strict=True)))  # retrievers get these, unembedded
    n0 = s.table.count_rows()
    rows = bench_table(f"corpus ({n0} chunks)", s.table, emb, questions, vectors)
    rows.append(
        (f"corpus ({n0} chunks)", "query embedding (all)", embed_ms, float("nan"), float("nan"), "mean")
    )

    recall = float("nan")
    if args.scale:
        with tempfile.TemporaryDirectory() as tmp:
            big, build_s = scale_up(s.table, args.scale, Path(tmp))
            print(
                f"scale-up table: {big.count_rows()} rows, indexes built in {build_s:.1f} s", file=sys.stderr
            )
            rows += bench_table(f"scale-up ({args.scale} chunks)", big, emb, questions, vectors)
            matrix = np.asarray(big.to_arrow().column("vector").to_pylist(), dtype=np.float32)
            ids = big.to_arrow().column("chunk_id").to_pylist()
            exact = numpy_topk(matrix)
            dense = get_retriever("dense", big, embedder=emb)
            recall = float(
                np.mean(
                    [
                        len({ids[i] for i in exact(v)} & {h.chunk_id for h in dense.search(q, K)}) / K
                        for q, v in zip(questions, vectors, strict=True)
                    ]
                )
            )

    print(f"\n{'table':26s} {'retriever':22s} {'p50 ms':>8s} {'p95 ms':>8s} {'x numpy':>8s}  note")
    for label, name, p50, p95, ratio, note in rows:
        print(f"{label:26s} {name:22s} {p50:8.2f} {p95:8.2f} {ratio:8.2f}  {note}")
    if args.scale:
        print(f"\nANN recall@{K} of dense vs exact numpy at {args.scale} chunks: {recall:.3f}")
        got = {name: p50 for label, name, p50, *_ in rows if label.startswith("scale")}
        ann, hyb = got["lancedb vector (ids)"], got["lancedb hybrid (ids)"]
        print(f"target dense p50 <= 5 ms: index {ann:.2f} ms, retriever {got['dense']:.2f} ms")
        print(f"target hybrid p50 <= 15 ms: index {hyb:.2f} ms, retriever {got['hybrid']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
