"""What one more chunk size costs: each stage's seconds, lexical and dense, new and cached, beside the limit.

One command, every number measured in this run on this machine::

    python -m bench.bench_explore            # about 8 minutes on 2 cores (the 32 papers converted once)

A fresh artefact root under ``--work`` holds only the converted papers (copied from ``--seed``, converted
there first if needed): chunk sets, tables, embeddings and runs start empty, so a "new" chunk size is new.

* **Warm process** (a notebook): the corpus and the question file are loaded once; one lexical size is run
  untimed first (the tokenizer and libraries load). Then three new chunk sizes (the one given and 8 tokens
  either side; the median by its ratio to the limit is published) and the size given again (cached),
  with ``bm25(fields=context)`` (the default) and with ``dense`` (at another new size, its texts never
  embedded before), each stage's seconds from the run's record.
* **The limit on the same chunks**: the chunker alone at the lexical size (no files written) plus a bare
  ``bm25s`` index of the chunks' HEP search terms and its retrieval of the 124 questions, top 10. The limit
  computes every chunk's terms; hepwb's run reuses those of the chunks it indexed at the sizes before (in
  exploring, most chunks recur between neighbouring sizes: short sections and captions).
* **Cold shell**: ``hepwb evaluate`` at a new chunk size, then again (cached), each a fresh process.
* **The explorer**: :func:`hepwb.viz.size_explorer.explore` over 31 lexical chunk sizes (128 to 2,048 by
  64), waited for.

Results: ``docs/results/explore.md`` (stamped; the docs' Results page shows it) and the table on stdout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import shared_material, timed_child
from bench.results import git_commit, write_results
from hepwb import defaults
from hepwb.chunking import get_chunker
from hepwb.experiment import ExperimentConfig, ingest, run_experiment
from hepwb.experiment.cell import RunResult
from hepwb.experiment.stages import EvalInputs, load_inputs
from hepwb.models.analyzer import search_terms
from hepwb.paths import Layout
from hepwb.runtime.env import configure_runtime
from hepwb.viz.size_explorer import default_sizes, explore

HEPWB = Path(sys.executable).parent / "hepwb"
"""The ``hepwb`` command of this environment (run by this Python, as the shell runs it)."""
LEXICAL = defaults.RETRIEVER
STAGES = ("chunk_s", "index_s", "vector_index_s", "retrieve_s", "evaluate_s", "save_s")


def seeded_root(work: Path, seed: Path) -> Path:
    """A fresh artefact root under ``work`` holding only the papers converted in ``seed``."""
    ingest(None, layout=Layout(seed), progress=True, require=True)
    root = work / "explore-home"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(Layout(seed).interim, Layout(root).interim)
    return root


def _run(cfg: ExperimentConfig, layout: Layout, inputs: EvalInputs) -> tuple[float, RunResult]:
    start = time.perf_counter()
    res = run_experiment(cfg, layout=layout, progress=False, inputs=inputs)
    return time.perf_counter() - start, res


def _stages(res: RunResult) -> str:
    t = res.record.timings_s
    return ", ".join(f"{k.removesuffix('_s')} {t[k]:.2f}" for k in STAGES if t.get(k))


def limit(cfg: ExperimentConfig, inputs: EvalInputs) -> dict[str, float]:
    """Chunking alone (nothing written) plus a bare bm25s index and retrieval of the same chunks."""
    import bm25s

    chunker = get_chunker(cfg.chunker, chunk_size=cfg.chunk_size, chunk_overlap=cfg.chunk_overlap)
    t0 = time.perf_counter()
    chunks = [c for d in inputs.documents for c in chunker.chunk(d)]
    t1 = time.perf_counter()
    terms = search_terms.__wrapped__  # every chunk's terms computed here (hepwb's run remembers those it had)
    corpus = [terms(f"{inputs.by_id[c.document_id].title} {' '.join(c.section_path)} {c.text}")
              for c in chunks]  # fmt: skip
    model = bm25s.BM25()
    model.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    t2 = time.perf_counter()
    queries = bm25s.tokenize([search_terms(q.question) for q in inputs.questions], show_progress=False)
    model.retrieve(queries, k=min(cfg.k, len(chunks)), show_progress=False)
    t3 = time.perf_counter()
    return {
        "chunks": len(chunks),
        "chunk_s": t1 - t0,
        "index_s": t2 - t1,
        "retrieve_s": t3 - t2,
        "total": t3 - t0,
    }


def cold(root: Path, size: int, runs: int = 3) -> tuple[float, float, str]:
    """``hepwb evaluate`` in a fresh process at ``runs`` new sizes from ``size`` (by 8), each then again.

    Returns the median wall seconds of the new and of the cached runs, and the sizes (one cold shell varies
    by a fifth from run to run on a shared two-core machine: the median of three is what is published).
    """
    env = {**os.environ, "HEPWB_HOME": str(root), "HF_HUB_OFFLINE": "1"}
    new, cached = [], []
    sizes = [size + 8 * i for i in range(runs)]
    for s in sizes:
        args = [str(HEPWB), "evaluate", "--chunk-size", str(s), "--retriever", LEXICAL]
        first, again = timed_child(args, env=env), timed_child(args, env=env)
        for t in (first, again):
            if t.returncode:
                sys.exit(f"hepwb evaluate failed ({t.returncode}):\n{t.output[-2000:]}")
        new.append(first.wall_s)
        cached.append(again.wall_s)
    return statistics.median(new), statistics.median(cached), ", ".join(map(str, sizes))


def main(argv: list[str] | None = None) -> None:
    """Measure and write ``docs/results/explore.md``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "hepwb-bench-explore")
    ap.add_argument("--seed", type=Path, default=None, help="artefact root with the converted papers")
    ap.add_argument(
        "--sizes",
        default="448,464,480,496",
        help="warm-up, middle of three lexical sizes (8 either side), dense, first of three cold-shell sizes",
    )
    ap.add_argument("--no-write", action="store_true", help="print only; no results file")
    args = ap.parse_args(argv)
    if shared_material("corpus", "papers") is None:
        return
    configure_runtime(offline=True)
    commit = git_commit()
    warm_up, size, dense_size, cold_size = (int(s) for s in args.sizes.split(","))
    root = seeded_root(args.work, args.seed or Layout.default().root)
    layout = Layout(root)
    base = ExperimentConfig.from_params(retriever=LEXICAL, chunk_size=warm_up)
    t0 = time.perf_counter()
    inputs = load_inputs(base, layout, progress=False)
    load_s = time.perf_counter() - t0
    _run(base, layout, inputs)  # untimed: the tokenizer, the libraries and the papers' token spans load
    # three new sizes around ``size`` (one warm run varies by a fifth here): the median run is published,
    # and its ratio to the limit on its own chunks
    lexical = []
    for s in (size - 8, size, size + 8):
        bare_s = limit(base.replace(chunk_size=s), inputs)
        took, res = _run(base.replace(chunk_size=s), layout, inputs)
        lexical.append((took / bare_s["total"], took, res, bare_s, s))
    ratio, new_s, new, bare, _ = sorted(lexical, key=lambda x: x[0])[1]
    new_sizes = ", ".join(str(x[4]) for x in lexical)
    rows: list[tuple[str, str, str, str]] = []
    lex = base.replace(chunk_size=size)
    cached_s, cached = _run(lex, layout, inputs)
    assert cached.reused
    dense = ExperimentConfig.from_params(chunk_size=dense_size, retriever="dense")
    dnew_s, dnew = _run(dense, layout, inputs)
    dcached_s, _ = _run(dense, layout, inputs)
    cold_new, cold_cached, cold_sizes = cold(root, cold_size)
    t0 = time.perf_counter()
    curve = explore(sizes=default_sizes(), retrievers=[LEXICAL], home=str(root)).wait()
    curve_s = time.perf_counter() - t0
    n_sizes = len(curve.points)
    rows += [
        ("corpus and questions loaded, evidence located (once per process)", f"{load_s:.2f}", "", ""),
        (f"new chunk size, `{LEXICAL}`, warm process (the median of {new_sizes} by the ratio below)",
         f"{new_s:.2f}", _stages(new), "≤ 2 s"),
        (f"the limit on the same {bare['chunks']} chunks: chunking + bare `bm25s` index + retrieval",
         f"{bare['total']:.2f}", f"chunk {bare['chunk_s']:.2f}, index {bare['index_s']:.2f}, "
         f"retrieve {bare['retrieve_s']:.2f}", ""),
        ("new chunk size, lexical, against the limit", f"{ratio:.1f}×", "", "≤ 3×"),
        (f"cached chunk size ({size}), lexical, warm process", f"{cached_s:.2f}", "read back", "≤ 0.5 s"),
        (f"new chunk size ({dense_size}), `dense`, warm process", f"{dnew_s:.2f}", _stages(dnew), ""),
        (f"cached chunk size ({dense_size}), `dense`, warm process", f"{dcached_s:.2f}", "read back", ""),
        (f"`hepwb evaluate`, new size, lexical, cold shell (median of {cold_sizes})", f"{cold_new:.2f}", "",
         "≤ 10 s"),
        (f"`hepwb evaluate`, cached, lexical, cold shell (median of {cold_sizes})", f"{cold_cached:.2f}", "",
         "≤ 3 s"),
        (f"explorer: {n_sizes} lexical chunk sizes (128–2,048 by 64)", f"{curve_s:.1f}", "", "≤ 60 s"),
    ]  # fmt: skip
    body = "| figure | seconds | stages (s) | goal |\n|---|---:|---|---|\n" + "".join(
        f"| {a} | {b} | {c} | {d} |\n" for a, b, c, d in rows
    )
    caption = (
        f"What one more chunk size costs on the {len(inputs.documents)} shipped papers and "
        f"{len(inputs.questions)} questions of hepqa-dev (converted papers given; chunk sets, tables, "
        "embeddings and runs built in this run); stages from each run's record; "
        "`python -m bench.bench_explore`."
    )
    print(body)
    if not args.no_write:
        write_results("explore", body, caption=caption, commit=commit)


if __name__ == "__main__":
    main()
