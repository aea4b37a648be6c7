"""A .ragmd file against the LanceDB table it comes from: size, export, import, load, search time and memory.

Usage::

    python -m bench.bench_ragmd [--chunk-size 512] [--scale 10000] [--queries 50]

Method:

* Two indexes: the 32-paper shared corpus chunked by ``hepilot`` at ``--chunk-size`` tokens (embedded with
  all-MiniLM-L6-v2, the project cache), and a ``--scale``-chunk index made by repeating its chunks (new
  ids, each vector with Gaussian noise sigma 0.02, renormalised) written as a .ragmd file and imported.
* Every operation runs in its own fresh Python process (``--phase``), so its peak RSS (``ru_maxrss``) is
  its own; "RSS +" is that peak minus the peak of a process that only imports hepwb, numpy, lancedb and
  loads the embedding model (measured the same way, first).
* export: LanceDB table -> file. import: file -> LanceDB table with hepwb's indexes. load: read and check
  the whole file. Search: ``--queries`` hepqa-dev questions, each timed with ``time.perf_counter`` after
  3 untimed ones; the file is searched by :class:`hepwb.ragmd.RagmdIndex` (exact inner product, bm25s)
  including its BM25 build on first use (reported apart), the table by hepwb's ``dense`` and ``bm25``
  retrievers. Query embedding is inside both dense timings.

Shared material comes from ``$HEPWB_SHARED`` or ``../shared``; the script exits 0 with a message when it is
absent.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import child, shared_material
from hepwb.evaluation import load_questions
from hepwb.experiment import Searcher
from hepwb.index import connect, get_embedder
from hepwb.paths import Layout, shared_dir
from hepwb.ragmd import RagFile, RagmdIndex, export_table, import_file, load
from hepwb.ragmd.model import RagChunk, RagDocument
from hepwb.ragmd.writer import dump
from hepwb.retrieval import get_retriever
from hepwb.runtime.env import configure_runtime

MODEL = "all-MiniLM-L6-v2"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _questions(n: int) -> list[str]:
    return [q.question for q in load_questions(shared_dir() / "eval" / "hepqa-dev.jsonl")][:n]


def _p50(fn: Callable[[str], Any], qs: list[str]) -> float:
    for q in qs[:3]:
        fn(q)
    times = []
    for q in qs:
        s = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - s) * 1000)
    return statistics.median(times)


def phase(name: str, a: str, b: str, n: int) -> dict[str, float]:
    """One operation in this process; returns its seconds (or ms per query) and peak RSS."""
    configure_runtime(offline=None)
    import lancedb  # noqa: F401  (every phase pays the same imports as the baseline)

    emb = get_embedder(MODEL)
    emb.embed(["warm"], progress=False)
    out: dict[str, float] = {}
    t = time.perf_counter()
    if name == "export":
        export_table(a, b.split("|")[0], MODEL, b.split("|")[1])
    elif name == "import":
        import_file(a, b, table="bench__" + MODEL.lower().replace("-", "_"))
    elif name == "load":
        load(a)
    elif name == "search-file":
        idx = RagmdIndex.load(a, embedder=emb)
        out["load_s"] = time.perf_counter() - t
        s = time.perf_counter()
        idx.lexical_index()
        out["bm25_build_s"] = time.perf_counter() - s
        qs = _questions(n)
        out["dense_ms"] = _p50(lambda q: idx.search(q, "dense", 10), qs)
        out["bm25_ms"] = _p50(lambda q: idx.search(q, "bm25", 10), qs)
    elif name == "search-table":
        tbl = connect(a).open_table(b)
        qs = _questions(n)
        dense, bm25 = get_retriever("dense", tbl, embedder=emb), get_retriever("bm25", tbl, embedder=emb)
        out["dense_ms"] = _p50(lambda q: dense.search(q, 10), qs)
        out["bm25_ms"] = _p50(lambda q: bm25.search(q, 10), qs)
    out["seconds"] = time.perf_counter() - t
    out["rss_mb"] = _rss_mb()
    return out


def run(name: str, a: str = "", b: str = "", n: int = 50) -> dict[str, float]:
    """:func:`phase` in a fresh process."""
    res = child(["-m", "bench.bench_ragmd", "--phase", name, "--a", a, "--b", b, "--queries", str(n)])
    if res.returncode:
        msg = f"phase {name} failed:\n{res.stderr[-2000:]}"
        raise SystemExit(msg)
    out: dict[str, float] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def scaled(src: Path, out: Path, n: int) -> Path:
    """A file of ``n`` chunks: the source's repeated with new ids and noisy, renormalised vectors."""
    rf = load(src)
    rng = np.random.default_rng(0)
    docs: list[RagDocument] = []
    chunks: list[RagChunk] = []
    vecs: list[Any] = []
    copy = 0
    while len(chunks) < n:
        for d in rf.documents:
            docs.append(RagDocument(f"{d.document_id}-{copy}", f"{d.label}x{copy:03d}", d.title, d.arxiv))
        for c, v in zip(rf.chunks, rf.vectors, strict=True):
            if len(chunks) < n:
                chunks.append(
                    RagChunk(
                        f"{c.chunk_id}-{copy}",
                        f"{c.document_id}-{copy}",
                        c.chunk_index,
                        c.i_start,
                        c.i_end,
                        c.text,
                        c.pages,
                        c.section,
                        c.token_count,
                    )
                )
                w = v + rng.normal(0, 0.02, v.shape).astype(np.float32)
                vecs.append(w / np.linalg.norm(w))
        copy += 1
    used = {c.document_id for c in chunks}
    big = RagFile(
        rf.model_name,
        f"{rf.chunkset_id}-x{n}",
        rf.created_at,
        rf.updated_at,
        [d for d in docs if d.document_id in used],
        chunks,
        np.asarray(vecs, "<f4"),
    )
    return dump(big, out)


def main(argv: list[str] | None = None) -> int:
    """Measure and print the tables (or, with ``--phase``, one operation in this process); returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunk-size", type=int, default=512)
    ap.add_argument("--scale", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--phase", default="")
    ap.add_argument("--a", default="")
    ap.add_argument("--b", default="")
    args = ap.parse_args(argv)
    if args.phase:
        print(json.dumps(phase(args.phase, args.a, args.b, args.queries)))
        return 0
    if shared_material("corpus", "papers", "pdf") is None:
        return 0
    lay = Layout.default()
    s = Searcher.open(chunk_size=args.chunk_size)
    if s.chunkset is None:
        print(f"no chunk set at {args.chunk_size} tokens: nothing measured")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="hepwb-bench-ragmd-"))
    base = run("base")
    print(f"baseline process (hepwb, lancedb, model loaded): {base['rss_mb']:.0f} MiB peak RSS\n")
    rows = []
    for label, n in ((f"32 papers, {args.chunk_size} tokens", 0), (f"{args.scale} chunks", args.scale)):
        f = tmp / f"i{n}.ragmd"
        if n == 0:
            exp = run("export", str(lay.lancedb), f"{s.chunkset.chunkset_id}|{f}")
        else:
            scaled(tmp / "i0.ragmd", f, n)
            exp = None
        db = tmp / f"db{n}"
        imp = run("import", str(f), str(db))
        table = "bench__" + "all_minilm_l6_v2"
        load = run("load", str(f))
        sf = run("search-file", str(f), "", args.queries)
        st = run("search-table", str(db), table, args.queries)
        lance_mb = sum(p.stat().st_size for p in (db / f"{table}.lance").rglob("*") if p.is_file()) / 1e6
        rows.append((label, f.stat().st_size / 1e6, lance_mb, exp, imp, load, sf, st))
    print(
        f"{'':24} {'file MB':>8} {'lance MB':>8} {'export s':>8} {'import s':>8} {'load s':>7} "
        f"{'load RSS+':>9} {'bm25 build s':>12}"
    )
    for label, fmb, lmb, exp, imp, load, sf, _ in rows:
        e = f"{exp['seconds']:.2f}" if exp else "-"
        print(
            f"{label:24} {fmb:8.1f} {lmb:8.1f} {e:>8} {imp['seconds']:8.2f} {load['seconds']:7.2f} "
            f"{load['rss_mb'] - base['rss_mb']:8.0f}M {sf['bm25_build_s']:12.2f}"
        )
    print(
        f"\n{'query p50 (ms)':24} {'file dense':>10} {'table dense':>11} {'file bm25':>9} {'table bm25':>10} "
        f"{'file RSS+':>9} {'table RSS+':>10}"
    )
    for label, *_, sf, st in rows:
        rss_f, rss_t = sf["rss_mb"] - base["rss_mb"], st["rss_mb"] - base["rss_mb"]
        print(
            f"{label:24} {sf['dense_ms']:10.1f} {st['dense_ms']:11.1f} {sf['bm25_ms']:9.1f} "
            f"{st['bm25_ms']:10.1f} {rss_f:8.0f}M {rss_t:9.0f}M"
        )
    git_diff(s.chunkset.chunkset_id, tmp, args.chunk_size)
    return 0


def git_diff(full: str, tmp: Path, chunk_size: int) -> None:
    """Commit the export of the first 31 papers, then that of all 32: what ``git diff --stat`` shows."""
    lay = Layout.default()
    fewer_set = Searcher.open(chunk_size=chunk_size, max_docs=31).chunkset
    if fewer_set is None:
        return
    fewer = fewer_set.chunkset_id
    repo = tmp / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    export_table(lay.lancedb, fewer, MODEL, repo / "corpus.ragmd")
    subprocess.run([*git, "add", "corpus.ragmd"], check=True)
    subprocess.run([*git, "commit", "-qm", "31 papers"], check=True)
    export_table(lay.lancedb, full, MODEL, repo / "corpus.ragmd")
    stat = subprocess.run([*git, "diff", "--stat"], capture_output=True, text=True, check=True).stdout
    diff = subprocess.run(
        [*git, "diff", "-U0"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    removed = [ln for ln in diff if ln.startswith("-") and not ln.startswith("---")]
    lines = sum(1 for _ in (repo / "corpus.ragmd").open(encoding="utf-8"))
    print(f"\nadding the 32nd paper to a 31-paper file ({lines} lines):\n{stat.rstrip()}")
    print("lines changed or removed:", *(ln[:90] for ln in removed), sep="\n  ")


if __name__ == "__main__":
    raise SystemExit(main())
