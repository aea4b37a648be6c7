"""Do vectors made on a GPU give the dev-set results that CPU vectors give?

Usage::

    python -m bench.gpu_agreement --inputs bench-gpu-inputs --vectors GPU_OUT

``--inputs`` is the folder ``python -m bench.bench_gpu --export`` wrote (the main job's chunk texts and the
dev-set questions); ``--vectors`` holds what ``python -m bench.bench_gpu --vectors`` wrote on the GPU machine
(``vectors.npy``: hepwb's vectors of those texts; ``queries.npy``: each question embedded alone, as a query
is). This script, on this machine's CPU:

1. Makes the CPU vectors of the same texts (from the project's embedding cache where present, else
   embedded here) and prints the cosine of each GPU vector with its CPU twin (target >= 0.9999).
2. Runs the dev-set evaluation twice per main-job chunk size and retriever, in two scratch projects that
   share this project's converted documents: once with the CPU vectors in the embedding cache and the
   CPU query vectors, once with the GPU ones. It prints how many questions' first relevant rank differs
   (target: at most one per run) and the change of each summary metric.

Nothing is embedded during the runs: every chunk text and question comes from the vectors given (the
script says so, or names how many texts it had to embed).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hepwb import defaults
from hepwb.experiment import ExperimentConfig, run_experiment
from hepwb.index import Embedder, get_embedder
from hepwb.index.cache import EmbeddingCache
from hepwb.paths import Layout
from hepwb.text.ids import text_sha256

Vectors = NDArray[np.float32]

SIZES = (256, 512, 1024)
RETRIEVERS = ("dense", "hybrid")
METRICS = ("recall@5", "mrr@10", "ndcg@10")


def cpu_vectors(texts: list[str]) -> Vectors:
    """CPU vectors of ``texts``: the project's embedding cache, the rest embedded here."""
    keys = [text_sha256(t) for t in texts]
    known = EmbeddingCache(Layout.default().lancedb, defaults.EMBEDDING_MODEL).lookup(keys)
    todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items())
    print(
        f"CPU vectors: {len(known)} of {len(set(keys))} texts from the embedding cache, "
        f"{len(todo)} embedded now"
    )
    if todo:
        vecs = Embedder(device="cpu").embed([t for _, t in todo], progress=True)
        known.update({k: v for (k, _), v in zip(todo, vecs, strict=True)})
    return np.stack([known[k] for k in keys])


def evaluate(
    home: Path, texts: list[str], vectors: Vectors, questions: list[str], queries: Vectors
) -> dict[tuple[int, str], tuple[Any, dict[str, float]]]:
    """Each question's first relevant rank and the summary per (size, retriever), in project ``home``."""
    layout = Layout.at(home)
    layout.interim.parent.mkdir(parents=True, exist_ok=True)
    layout.interim.symlink_to(Layout.default().interim)  # converted documents: shared, read only
    EmbeddingCache(layout.lancedb, defaults.EMBEDDING_MODEL).add(
        {text_sha256(t): v for t, v in zip(texts, vectors, strict=True)}
    )
    embedder = get_embedder(defaults.EMBEDDING_MODEL)
    embedder.remember_queries(dict(zip(questions, queries, strict=True)))
    before = embedder.n_embedded
    out: dict[tuple[int, str], tuple[Any, dict[str, float]]] = {}
    for size in SIZES:
        for retriever in RETRIEVERS:
            cfg = ExperimentConfig(chunk_size=size, retriever=retriever, prefer_latex=True)
            res = run_experiment(cfg, layout=layout, progress=False)
            ranks = res.per_question.set_index("qid")["first_relevant_rank"]
            out[(size, retriever)] = (ranks, res.summary)
    print(f"{home.name}: {embedder.n_embedded - before} texts embedded during the runs (0 expected)")
    return out


def main(argv: list[str] | None = None) -> int:
    """Compare; returns 0 when both targets are met."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=Path, required=True, help="bench.bench_gpu --export folder")
    ap.add_argument(
        "--vectors", type=Path, required=True, help="bench.bench_gpu --vectors folder (from the GPU)"
    )
    args = ap.parse_args(argv)
    texts = json.loads((args.inputs / "texts.json").read_text(encoding="utf-8"))
    questions = json.loads((args.inputs / "questions.json").read_text(encoding="utf-8"))
    gpu = np.load(args.vectors / "vectors.npy")
    gpu_q = np.load(args.vectors / "queries.npy")
    cpu = cpu_vectors(texts)
    cpu_q = np.stack([get_embedder(defaults.EMBEDDING_MODEL, "cpu").embed([q])[0] for q in questions])
    cos = np.sum(gpu * cpu, axis=1)
    cos_q = np.sum(gpu_q * cpu_q, axis=1)
    print(
        f"chunk texts: {len(texts)}, cosine GPU vs CPU min {cos.min():.7f}, median {np.median(cos):.7f}, "
        f"below 0.9999: {int((cos < 0.9999).sum())}; questions: {len(questions)}, min {cos_q.min():.7f}"
    )
    with tempfile.TemporaryDirectory(prefix="gpu-agreement-") as tmp:
        runs = {
            which: evaluate(Path(tmp) / which, texts, vecs, questions, qvecs)
            for which, vecs, qvecs in (("cpu", cpu, cpu_q), ("gpu", gpu, gpu_q))
        }
    print("| chunk size | retriever | questions whose first relevant rank differs | " + " | ".join(
        f"{m} CPU → GPU" for m in METRICS) + " |")  # fmt: skip
    print("|---:|---|---:|" + "---:|" * len(METRICS))
    worst = 0
    for key, (ranks_cpu, summary_cpu) in runs["cpu"].items():
        ranks_gpu, summary_gpu = runs["gpu"][key]
        differ = int((ranks_cpu.fillna(-1) != ranks_gpu.reindex(ranks_cpu.index).fillna(-1)).sum())
        worst = max(worst, differ)
        cells = " | ".join(
            f"{summary_cpu.get(m, float('nan')):.4f} → {summary_gpu.get(m, float('nan')):.4f}"
            for m in METRICS
        )
        print(f"| {key[0]} | {key[1]} | {differ} | {cells} |")
    ok = cos.min() >= 0.9999 and cos_q.min() >= 0.9999 and worst <= 1
    print("targets (cosine >= 0.9999; at most one question differs per run):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
