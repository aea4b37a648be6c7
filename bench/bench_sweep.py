"""Sweep engine against today's serial papermill loop, and a 48-cell grid on the 32 shared papers.

One command, every number measured in this run on this machine::

    python -m bench.bench_sweep                 # everything (about 35 minutes on 2 cores)
    python -m bench.bench_sweep --part default
    python -m bench.bench_sweep --part grid48

Each scenario gets its own artefact root under ``--work`` holding only the converted papers (the
"conversions cached" state of the issue): chunk sets, embeddings, tables and results start empty.

* ``default``: the 12-cell grid of ``sweeps/default.yaml`` (hepilot × 256/512/1024 × dense, bm25,
  hybrid, entity). Baseline: today's loop, one papermill run of ``20-evaluate.ipynb`` per cell in a
  fresh kernel, one after another (what ``hepwb sweep`` did before the engine). New: ``hepwb sweep``
  on a LocalCluster sized to the machine. Both run twice: a first run, and a second with every stage
  cached (today's loop re-executes every notebook; the engine reuses finished cells, and ``--force``
  recomputes the cells only).
* ``grid48``: ``sweeps/chunkers-sizes-overlaps.yaml``, chunker {hepilot, recursive} × size {256, 512,
  1024} × overlap {0, 0.2} × retriever {dense, bm25, hybrid, entity}: first run, rerun, cells per minute,
  embedding calls against unique chunk texts, peak RSS per worker; then successive halving over the same
  grid (stages cached), its winner against the full grid's (paired permutation test on the main metric)
  and its share of compute.

Results: a markdown table on stdout and ``reports/bench_sweep.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT
from hepwb.catalog import Catalog
from hepwb.evaluation.stats import paired_test
from hepwb.experiment import ExperimentConfig, ingest
from hepwb.experiment.keys import cell_name
from hepwb.experiment.notebook import EVALUATE_NOTEBOOK, run_notebook
from hepwb.index.cache import EmbeddingCache
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord
from hepwb.runtime.env import configure_runtime
from hepwb.sweep import SweepResult, SweepSpec, default_spec_path, run_sweep
from hepwb.sweep.halving import run_halving

HEPWB = Path(sys.executable).parent / "hepwb"
GRID48 = ROOT / "sweeps" / "chunkers-sizes-overlaps.yaml"


def seed_conversions(work: Path) -> Path:
    """A root holding the 32 converted papers (converted once here if the project has none cached)."""
    seed = work / "seed"
    ingest(None, layout=Layout(seed), progress=True, require=True)
    return seed


def fresh_home(work: Path, name: str, seed: Path) -> Path:
    """A project root ``work/name`` holding only ``seed``'s converted papers."""
    home = work / name
    shutil.rmtree(home, ignore_errors=True)
    (home / "data" / "interim").mkdir(parents=True)
    shutil.copytree(seed / "data" / "interim" / "documents", home / "data" / "interim" / "documents")
    return home


def papermill_loop(home: Path, cells: list[ExperimentConfig]) -> float:
    """Today's loop: one papermill run of 20-evaluate.ipynb per cell, one after another; seconds."""
    layout = Layout(home)
    catalog = Catalog(layout.catalog)
    t = time.perf_counter()
    for i, cfg in enumerate(cells, 1):
        params = {k: v for k, v in cfg.to_dict().items() if k != "run_dir"}
        run_dir = layout.runs / cell_name(params)
        t1 = time.perf_counter()
        params["run_dir"] = str(run_dir)
        run_notebook(EVALUATE_NOTEBOOK, run_dir / EVALUATE_NOTEBOOK, params, layout)
        catalog.record_run(run_dir)
        print(f"  papermill cell {i}/{len(cells)}: {time.perf_counter() - t1:.1f} s", flush=True)
    return time.perf_counter() - t


def cli_sweep(home: Path, spec: Path, *extra: str) -> tuple[float, str]:
    """``hepwb sweep SPEC`` in a fresh process (what a user runs); (seconds, stdout)."""
    env = {**os.environ, "HEPWB_HOME": str(home)}
    t = time.perf_counter()
    cmd = [str(HEPWB), "sweep", str(spec), *extra]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return wall, out.stdout


def engine(home: Path, spec: Path, **kw: Any) -> tuple[float, SweepResult]:
    """``run_sweep`` of ``spec`` in project ``home``: seconds and its result."""
    t = time.perf_counter()
    res = run_sweep(spec, layout=Layout(home), **kw)
    return time.perf_counter() - t, res


def bench_default(work: Path, seed: Path) -> dict[str, Any]:
    """The default grid: today's papermill loop against the engine, first run and cached."""
    spec_path = default_spec_path()
    cells = SweepSpec.from_yaml(spec_path).cells()
    print(f"default grid: {len(cells)} cells; today's papermill loop, first run", flush=True)
    old_first = papermill_loop(fresh_home(work, "default-loop", seed), cells)
    print(f"  {old_first:.0f} s; second run (every stage cached)", flush=True)
    old_second = papermill_loop(work / "default-loop", cells)
    print(f"  {old_second:.0f} s; engine (LocalCluster), first run", flush=True)
    home = fresh_home(work, "default-engine", seed)
    new_first, res = engine(home, spec_path, progress=True)
    assert not res.failed, [c.error for c in res.failed]
    new_rerun, _ = cli_sweep(home, spec_path)
    new_force, _ = cli_sweep(home, spec_path, "--force")
    return {
        "cells": len(cells),
        "loop_first_s": old_first,
        "loop_second_s": old_second,
        "engine_first_s": new_first,
        "engine_rerun_s": new_rerun,
        "engine_force_s": new_force,
        "speedup_first": old_first / new_first,
        "speedup_stages_cached": old_second / new_force,
        "rerun_share": new_rerun / new_first,
        "embedded": res.embedded,
        "unique_texts": res.unique_texts,
        "peak_rss_mib": res.peak_rss_mib(),
        "stage_wall_s": _stage_wall(res),
    }


def _stage_wall(res: SweepResult) -> dict[str, float]:
    out: dict[str, float] = {}
    for o in res.stages:
        if not o.detail.get("reused"):
            out[o.stage] = out.get(o.stage, 0.0) + o.wall_s
    out["cell"] = sum(o.wall_s for o in res.cells if not o.detail.get("reused"))
    return {k: round(v, 1) for k, v in out.items()}


def bench_grid48(work: Path, seed: Path) -> dict[str, Any]:
    """The 48-cell grid: first run, rerun, embedding calls, and successive halving against the full grid."""
    spec_path = GRID48
    home = fresh_home(work, "grid48", seed)
    print("48-cell grid: first run", flush=True)
    first, res = engine(home, spec_path, progress=True)
    assert not res.failed, [c.error for c in res.failed]
    rerun, _ = cli_sweep(home, spec_path)
    cached = len(EmbeddingCache(Layout(home).lancedb, "all-MiniLM-L6-v2"))
    metric = SweepSpec.from_yaml(spec_path).metric
    ranked = sorted(res.cells, key=lambda o: o.detail["summary"][metric], reverse=True)
    names = {c.key: c.name for c in res.plan.cells}
    best = names[ranked[0].key]
    print("successive halving over the same grid", flush=True)
    t = time.perf_counter()
    halv = run_halving(str(spec_path), layout=Layout(home), progress=True)
    halving_wall = time.perf_counter() - t
    cat = Catalog(Layout(home).catalog)
    full_q = cat.per_question(RunRecord.load(Layout(home).runs / best).run_id).set_index("qid")[metric]
    win_q = cat.per_question(RunRecord.load(Layout(home).runs / halv.winner).run_id).set_index("qid")[metric]
    test = paired_test(win_q.loc[full_q.index].to_numpy(), full_q.to_numpy())
    cell_wall = sum(o.wall_s for o in res.cells)
    return {
        "cells": len(res.cells),
        "first_s": first,
        "rerun_s": rerun,
        "cells_per_min": len(res.cells) / first * 60,
        "embedded": res.embedded,
        "unique_texts": res.unique_texts,
        "cache_rows": cached,
        "peak_rss_mib": res.peak_rss_mib(),
        "stage_wall_s": _stage_wall(res),
        "grid_winner": best,
        "grid_winner_value": ranked[0].detail["summary"][metric],
        "halving_winner": halv.winner,
        "halving_value": halv.value,
        "halving_ci95": halv.ci95,
        "halving_vs_grid_diff": test.diff.mean,
        "halving_vs_grid_p": test.p_value,
        "halving_compute_share": halv.compute_share,
        "halving_wall_s": halving_wall,
        "grid_cell_wall_s": cell_wall,
    }


def _rss(peaks: dict[str, float]) -> str:
    return ", ".join(f"{v:.0f}" for v in peaks.values()) + " MiB"


def report(results: dict[str, Any]) -> str:
    """The results as the markdown table of the README."""
    rows = [
        "| measure (this machine, 2 cores) | today's papermill loop | engine (LocalCluster) |",
        "|---|---|---|",
    ]
    d = results.get("default")
    if d:
        rows += [
            f"| default grid ({d['cells']} cells), first run, conversions cached | "
            f"{d['loop_first_s']:.0f} s | "
            f"{d['engine_first_s']:.0f} s ({d['speedup_first']:.1f}× faster) |",
            f"| default grid, every stage cached, cells recomputed | {d['loop_second_s']:.0f} s | "
            f"{d['engine_force_s']:.0f} s with `--force` ({d['speedup_stages_cached']:.1f}× faster) |",
            f"| default grid, unchanged rerun | {d['loop_second_s']:.0f} s | {d['engine_rerun_s']:.1f} s "
            f"({d['rerun_share']:.1%} of the first run) |",
            f"| default grid, embedding calls / unique chunk texts | | "
            f"{d['embedded']} / {d['unique_texts']} |",
            f"| default grid, peak RSS per worker | | {_rss(d['peak_rss_mib'])} |",
            f"| default grid, engine time per stage (summed over workers) | | {_stages(d['stage_wall_s'])} |",
        ]
    g = results.get("grid48")
    if g:
        rows += [
            f"| 48-cell grid, first run | | {g['first_s']:.0f} s ({g['cells_per_min']:.1f} cells/min) |",
            f"| 48-cell grid, unchanged rerun | | {g['rerun_s']:.1f} s |",
            f"| 48-cell grid, embedding calls / unique chunk texts | | {g['embedded']} / {g['unique_texts']} "
            f"({g['cache_rows']} cache rows) |",
            f"| 48-cell grid, peak RSS per worker | | {_rss(g['peak_rss_mib'])} |",
            f"| 48-cell grid, engine time per stage | | {_stages(g['stage_wall_s'])} |",
            f"| full grid's best cell | | {g['grid_winner']}: {g['grid_winner_value']:.3f} |",
            f"| successive halving's winner | | {g['halving_winner']}: {g['halving_value']:.3f} "
            f"[{g['halving_ci95'][0]:.3f}, {g['halving_ci95'][1]:.3f}]; vs the full grid's best "
            f"{g['halving_vs_grid_diff']:+.3f} (p = {g['halving_vs_grid_p']:.2f}) |",
            f"| successive halving's compute | | {g['halving_compute_share']:.0%} of the cell-question "
            f"evaluations; {g['halving_wall_s']:.0f} s against {g['grid_cell_wall_s']:.0f} s of cell time |",
        ]
    return "\n".join(rows)


def _stages(times: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f} s" for k, v in times.items())


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["all", "default", "grid48"], default="all")
    parser.add_argument("--work", type=Path, default=Path("/tmp/hepwb-bench-sweep"))
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    configure_runtime(offline=True)
    args.work.mkdir(parents=True, exist_ok=True)
    seed = seed_conversions(args.work)
    out = ROOT / "reports" / "bench_sweep.json"
    results: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}  # keep the other part's
    results["machine"] = {"cpus": os.cpu_count()}
    if args.part in ("all", "default"):
        results["default"] = bench_default(args.work, seed)
    if args.part in ("all", "grid48"):
        results["grid48"] = bench_grid48(args.work, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str))
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
