"""Vector indexes at 32, 320 and 3,200 documents: recall@10 against exact search, query latency, build time.

Usage (after ``bench.bench_scale``, whose artefact folders hold the real chunk vectors)::

    python -m bench.bench_scale --sizes 32,320 --workdir /tmp/scale
    python -m bench.bench_ann --scale-dir /tmp/scale

Method:

* **Vectors.** 32 and 320 documents: the real all-MiniLM-L6-v2 vectors of bench_scale's chunk tables
  (HEPilot, 512 tokens). 3,200 documents: *derived* — every 320-document vector ten times, each copy moved by
  Gaussian noise scaled so that its cosine with its source equals the median cosine between a real chunk
  and its nearest other chunk at 320 documents (how close the rewritten copies of a paper embed).
* **Queries.** The 124 questions of ``hepqa-dev.jsonl``, embedded by the same model.
* **Indexes.** Each configuration goes through hepwb's own :func:`hepwb.index.ann.with_vector_index` (an ANN
  table beside the chunk table) and :func:`hepwb.index.ann.ann_quality` (recall@10 of the index against
  exact search on the same table, p50/p95 of both), i.e. what a sweep cell with that ``vector_index`` records.
* **Baseline**, in the same run: exact (flat) search on the 32-document table. Target (issue #27): at 3,200
  documents a configuration with recall@10 ≥ 0.95 and query p50 ≤ 2× that baseline's p50.

Prints a markdown table and writes JSON to ``reports/bench/ann.json`` (or ``--json``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.common import REPORTS
from hepwb.corpus import default_questions
from hepwb.evaluation import load_questions
from hepwb.files.io import write_json
from hepwb.index import get_embedder
from hepwb.index.ann import AnnTable, VectorIndex, ann_quality, with_vector_index

Vectors = NDArray[np.float32]
CONFIGS: list[tuple[str, dict[str, int]]] = [
    ("ivf_flat", {"nprobes": 20}),
    ("ivf_sq", {"nprobes": 20}),
    ("ivf_pq", {"nprobes": 20}),
    ("ivf_pq", {"nprobes": 20, "refine_factor": 10}),
    ("ivf_hnsw_sq", {"ef": 100}),
    ("ivf_hnsw_sq", {"ef": 300}),
    ("ivf_hnsw_pq", {"ef": 300, "refine_factor": 10}),
]


def real_vectors(home: Path) -> Vectors:
    """The chunk vectors of bench_scale's table in ``home``."""
    import lancedb

    db = lancedb.connect(str(home / "data" / "processed" / "lancedb"))
    names = [n for n in db.list_tables().tables if not n.startswith("embcache") and "__ann-" not in n]
    if not names:
        msg = f"no chunk table under {home}; run python -m bench.bench_scale --workdir {home.parent} first"
        raise SystemExit(msg)
    tbl = db.open_table(sorted(names)[0])
    col = tbl.search().select(["vector"]).limit(tbl.count_rows()).to_arrow().column("vector")
    return np.asarray(col.combine_chunks().flatten().to_numpy()).reshape(len(col), -1).astype(np.float32)


def derived(vecs: Vectors, copies: int, seed: int = 0) -> tuple[Vectors, float]:
    """``copies`` noisy copies of every vector, at the real nearest-neighbour cosine; and that cosine."""
    rng = np.random.default_rng(seed)
    sample = vecs[rng.choice(len(vecs), min(2000, len(vecs)), replace=False)]
    sims = sample @ vecs.T
    sims[sims > 0.99999] = -1  # the vector itself
    target = float(np.median(sims.max(axis=1)))
    dim = vecs.shape[1]
    # a unit vector plus isotropic noise of norm s has cosine 1/sqrt(1+s^2) with it
    sigma = np.sqrt(1 / target**2 - 1) / np.sqrt(dim)
    out = np.concatenate(
        [vecs + sigma * rng.standard_normal(vecs.shape).astype(np.float32) for _ in range(copies)]
    )
    return out / np.linalg.norm(out, axis=1, keepdims=True), target


def table_of(db: Any, name: str, vecs: Vectors) -> Any:
    """A LanceDB table of ``vecs`` (ids ``c0``, ``c1``, ...)."""
    import pyarrow as pa

    data = pa.table(
        {
            "chunk_id": [f"c{i}" for i in range(len(vecs))],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), vecs.shape[1]),
        }
    )
    return db.create_table(name, data, mode="overwrite")


def exact_latency(table: Any, queries: Vectors) -> dict[str, float]:
    """p50 and p95 (ms) of exact search on ``table`` (after one untimed query)."""
    exact = AnnTable(table, None, VectorIndex.of("exact"))
    exact.exact(queries[0], 10)
    t = []
    for q in queries:
        t0 = time.perf_counter()
        exact.exact(q, 10)
        t.append(1000 * (time.perf_counter() - t0))
    return {"p50_ms": round(float(np.percentile(t, 50)), 3), "p95_ms": round(float(np.percentile(t, 95)), 3)}


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale-dir", type=Path, default=Path("/tmp/scale"), help="bench_scale's --workdir")
    ap.add_argument("--work", type=Path, default=Path("/tmp/hepwb-bench-ann"))
    ap.add_argument("--json", type=Path, default=REPORTS / "ann.json")
    args = ap.parse_args(argv)

    import lancedb

    questions_file = default_questions()
    if questions_file is None:
        print("no question set found (set HEPWB_SHARED to the shared test material): nothing measured")
        return 0
    v32, v320 = real_vectors(args.scale_dir / "home-32"), real_vectors(args.scale_dir / "home-320")
    v3200, cos = derived(v320, 10)
    queries = get_embedder().embed([q.question for q in load_questions(questions_file)])
    shutil.rmtree(args.work, ignore_errors=True)
    db = lancedb.connect(str(args.work))
    rows: list[dict[str, Any]] = []
    base: dict[str, float] = {}
    for docs, vecs, how in (
        (32, v32, "real"),
        (320, v320, "real"),
        (3200, v3200, f"derived (cos {cos:.3f})"),
    ):
        table = table_of(db, f"d{docs}__model", vecs)
        exact = exact_latency(table, queries)
        base = base or exact
        rows.append({"documents": docs, "chunks": len(vecs), "vectors": how, "index": "exact", **exact})
        print(f"  {docs} documents: exact p50 {exact['p50_ms']} ms", file=sys.stderr, flush=True)
        for kind, opts in CONFIGS:
            t0 = time.perf_counter()
            ann = with_vector_index(table, VectorIndex.of(kind, opts))
            build = time.perf_counter() - t0
            q = ann_quality(ann, queries)
            label = kind + "(" + ", ".join(f"{k}={v}" for k, v in opts.items()) + ")"
            rows.append(
                {
                    "documents": docs,
                    "chunks": len(vecs),
                    "vectors": how,
                    "index": label,
                    "build_s": round(build, 2),
                    "recall@10": q["ann_recall@10"],
                    "p50_ms": q["ann_p50_ms"],
                    "p95_ms": q["ann_p95_ms"],
                }
            )
            print(f"  {docs} documents, {label}: {rows[-1]}", file=sys.stderr, flush=True)
    write_json(args.json, {"baseline": base, "rows": rows})
    print(
        "| documents | chunks | vectors | index | build s | recall@10 | p50 ms | p95 ms | p50 / exact (32) |"
    )
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['documents']:,} | {r['chunks']:,} | {r['vectors']} | {r['index']} | "
            f"{r.get('build_s', '')} | {r.get('recall@10', 1.0):.3f} | {r['p50_ms']:.2f} | "
            f"{r['p95_ms']:.2f} | {r['p50_ms'] / base['p50_ms']:.2f}× |"
        )
    ok = [
        r
        for r in rows
        if r["documents"] == 3200 and r.get("recall@10", 0) >= 0.95 and r["p50_ms"] <= 2 * base["p50_ms"]
    ]
    verdict = ", ".join(r["index"] for r in ok) if ok else "none"
    print(f"\n3,200 documents, recall@10 ≥ 0.95 and p50 ≤ 2× the 32-document exact p50: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
