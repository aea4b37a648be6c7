"""Object storage against local disk for a sweep's artefacts: cold and warm, as ratios measured in one run.

One command, every number measured in this run on this machine::

    python -m bench.store_overhead                        # the main grid (21 cells), 32 papers: ~30 minutes
    python -m bench.store_overhead --sizes 1024           # one chunk size of it (7 cells)
    python -m bench.store_overhead --seed OTHER_PROJECT   # take its converted papers instead of converting

The grid is ``sweeps/default.yaml`` (the main job: seven retrievers) at the chunk sizes given, on the shared
32-paper corpus and hepqa-dev. Each scenario gets a fresh project holding only the converted papers (as
``bench.bench_sweep`` does), and runs on a LocalCluster sized to the machine:

* **local disk**: ``run_sweep(store="local")``, every artefact in the project folder;
* **object store**: ``run_sweep(store="s3://...")`` against SeaweedFS (``weed server -s3``, the tests' server,
  started here on 127.0.0.1 with a throwaway bucket): the workers fetch their inputs from the store and
  publish there, this process publishes the papers and the vectors and fetches the finished runs.

Both run cold (every stage but conversion computed), then warm three times (every cell reused; the median is
shown); the ratio is object store over local disk. The bytes each stage of the cold store run moved come
from ``SweepResult.moved``. The two runs' metrics are compared cell for cell (the caption says whether they
agree). Writes ``docs/results/store-overhead.md`` (not with ``--no-results``) and
``reports/bench/store_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from bench.common import REPORTS, ROOT, shared_material
from bench.results import write_results
from hepwb.corpus import plan_corpus
from hepwb.experiment import ingest
from hepwb.paths import Layout
from hepwb.runtime.env import configure_runtime
from hepwb.sweep import SweepResult, SweepSpec, default_spec_path, run_sweep
from tests.s3_server import seaweed

WARM_RUNS = 3
_STAGES = {
    "plan": "client: what the store holds (one listing per kind; listings are not counted)",
    "inputs": "client: the corpus, the question file, the converted papers",
    "convert": "workers: papers converted from the store's copy of the corpus",
    "chunkset": "workers: chunk sets (with their HEPilot tree)",
    "embed": "client: the vectors of each table",
    "index": "workers: tables and window tables",
    "cell": "workers: runs (reading papers, chunk set, table)",
    "fetch": "client: runs and chunk sets into the project",
}


def _spec(sizes: list[int] | None, max_docs: int | None) -> SweepSpec:
    spec = SweepSpec.from_yaml(default_spec_path(Layout(ROOT)))
    spec = spec.with_grid(chunk_size=sizes) if sizes else spec
    return spec.with_overrides(max_docs=max_docs, name="store-overhead")


def seed_documents(work: Path, seed: Path | None, max_docs: int | None) -> Path:
    """A folder of the corpus's converted papers: taken from ``seed`` where it has them, else converted."""
    folder = work / "seed"
    docs = Layout(folder).interim
    docs.mkdir(parents=True, exist_ok=True)
    if seed is not None:
        for f in plan_corpus(None, max_docs=max_docs):
            src = Layout(seed).interim / f.conversion_key
            if (src / "document.json").is_file() and not (docs / f.conversion_key).exists():
                shutil.copytree(src, docs / f.conversion_key)
    ingest(None, layout=Layout(folder), max_docs=max_docs, progress=True, require=True)  # converts the rest
    return docs


def fresh_home(work: Path, name: str, docs: Path) -> Layout:
    """A project ``work/name`` holding only the converted papers."""
    layout = Layout(work / name)
    shutil.rmtree(layout.root, ignore_errors=True)
    layout.interim.parent.mkdir(parents=True)
    shutil.copytree(docs, layout.interim)
    return layout


def scenario(spec: SweepSpec, layout: Layout, store: str, workers: int | None) -> dict[str, Any]:
    """The cold run and :data:`WARM_RUNS` warm runs of ``spec`` in ``layout`` with artefacts in ``store``."""
    t = time.perf_counter()
    cold = run_sweep(spec, layout=layout, store=store, n_workers=workers, progress=True)
    cold_s = time.perf_counter() - t
    if cold.failed:
        msg = f"{len(cold.failed)} cells failed ({store}): {cold.failed[0].error}"
        raise SystemExit(msg)
    warm: list[float] = []
    again: SweepResult | None = None
    for _ in range(WARM_RUNS):
        t = time.perf_counter()
        again = run_sweep(spec, layout=layout, store=store, n_workers=workers, progress=False)
        warm.append(time.perf_counter() - t)
        assert again.executor == "none" and not again.computed, "a warm rerun recomputed something"
    metrics = {c.name: o.detail.get("summary") for c, o in zip(cold.plan.cells, cold.cells, strict=True)}
    return {"cold_s": cold_s, "warm_s": statistics.median(warm), "warm_runs_s": warm,
            "cells": len(cold.cells), "moved": cold.moved, "warm_moved": again.moved if again else {},
            "metrics": metrics}  # fmt: skip


def _mib(n: int) -> str:
    return f"{n / 2**20:,.2f}"


def tables(local: dict[str, Any], store: dict[str, Any]) -> str:
    """The markdown tables: wall times and ratios, then bytes per stage of the cold store run."""
    lines = ["| sweep | local disk (s) | object store (s) | store / local |", "|---|---:|---:|---:|"]
    for what, key in (("cold: every stage but conversion", "cold_s"), (f"warm: every cell reused "
                      f"(median of {WARM_RUNS})", "warm_s")):  # fmt: skip
        lines.append(f"| {what} | {local[key]:.1f} | {store[key]:.1f} | {store[key] / local[key]:.2f} |")
    lines += ["", "| stage (cold store run) | sent (MiB) | received (MiB) | what |", "|---|---:|---:|---|"]
    moved = store["moved"]
    for stage, what in _STAGES.items():
        if stage not in moved:
            continue
        row = moved[stage]
        lines.append(f"| {stage} | {_mib(row['sent'])} | {_mib(row['received'])} | {what} |")
    total = [sum(int(r[k]) for r in moved.values()) for k in ("sent", "received")]
    lines.append(f"| all | {_mib(total[0])} | {_mib(total[1])} | |")
    warm = store["warm_moved"].get("plan", {"sent": 0, "received": 0})
    lines.append(f"| warm rerun | {_mib(warm['sent'])} | {_mib(warm['received'])} | the listings only |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Measure (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="", help="chunk sizes (default: the main grid's, 256,512,1024)")
    parser.add_argument("--max-docs", type=int, default=None, help="only the first N papers (default: all)")
    parser.add_argument("--workers", type=int, default=None, help="LocalCluster workers (default: per core)")
    parser.add_argument("--work", type=Path, default=REPORTS / "store-overhead", help="scratch folder")
    parser.add_argument("--seed", type=Path, default=None, help="a project whose converted papers to reuse")
    parser.add_argument("--no-results", action="store_true", help="leave docs/results alone")
    args = parser.parse_args(argv)
    if (
        shared_material("corpus", "papers", "pdf") is None
        or shared_material("eval", "hepqa-dev.jsonl") is None
    ):
        return
    configure_runtime(offline=None)
    spec = _spec([int(s) for s in args.sizes.split(",")] if args.sizes else None, args.max_docs)
    sizes = sorted({c.chunk_size for c in spec.cells()})
    work = args.work.resolve()
    docs = seed_documents(work, args.seed, args.max_docs)
    with seaweed(work / "seaweedfs") as server:
        os.environ.update(server.env())  # the workers of both scenarios inherit it; only one uses it
        local = scenario(spec, fresh_home(work, "local", docs), "local", args.workers)
        store = scenario(spec, fresh_home(work, "store", docs), server.url("store-overhead"), args.workers)
    same = local["metrics"] == store["metrics"]
    body = tables(local, store)
    print(body)
    print(f"metrics equal cell for cell: {same}")
    REPORTS.mkdir(parents=True, exist_ok=True)
    out = {"sizes": sizes, "max_docs": args.max_docs, "local": local, "store": store, "metrics_equal": same}
    (REPORTS / "store_overhead.json").write_text(json.dumps(out, indent=1, default=str) + "\n")
    if not args.no_results:
        papers = args.max_docs or len(plan_corpus(None))
        caption = (
            f"The main grid (`sweeps/default.yaml`, {local['cells']} cells: chunk size "
            f"{', '.join(map(str, sizes))}) on {papers} papers and hepqa-dev, on a LocalCluster of this "
            "machine, with its artefacts on local disk and in SeaweedFS on 127.0.0.1 (converted papers given "
            "to both); "
            f"the metrics of the two {'agree' if same else 'DIFFER'} cell for cell; "
            "`python -m bench.store_overhead`."
        )
        write_results("store-overhead", body, caption=caption)


if __name__ == "__main__":
    main()
