"""Planning large sweep grids: ``hepwb sweep FILE --dry-run`` at 10^3, 10^4 and 10^5 cells.

One command, every number measured in this run on this machine::

    python -m bench.bench_plan

Each grid (five dimensions of the shared corpus: chunker × chunk_size × chunk_overlap × retriever × k)
is written to a YAML file and planned by the real CLI in a fresh process; wall time and the process's
peak RSS come from ``os.wait4``. The baseline, in the same run, is the materialising plan
(``plan_sweep(spec).frame()``, every cell kept and listed) of the 10^4-cell grid. A 10^6-cell grid
with the default cap must be refused before any work. Targets (issue #27): the 10^5-cell dry run
prints its summary in ≤ 10 s and ≤ 500 MB.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import yaml

from bench.common import timed_child

HEPWB_CLI = [str(Path(sys.executable).parent / "hepwb")]
"""The ``hepwb`` command a user runs (its console script, run by this interpreter in a fresh process)."""
CHUNKERS = ["hepilot", "recursive", "token", "sentence", "section"]
SIZES = [64, 96, 128, 160, 192, 224, 256, 384, 512, 1024]
OVERLAPS = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45]
RETRIEVERS: list[object] = [
    "dense",
    "bm25",
    "hybrid",
    "entity",
    "bm25_plain",
    "xref",
    *({"name": "hybrid_linear", "weight": w} for w in (0.1, 0.3, 0.5, 0.7)),
]
KS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100]


def grid(cells: int) -> dict[str, object]:
    """A sweep file of exactly ``cells`` cells (10^3 … 10^6)."""
    dims = {"chunker": CHUNKERS[:1], "chunk_size": SIZES, "chunk_overlap": OVERLAPS, "retriever": RETRIEVERS}
    dims["k"] = KS[: cells // 1000] if cells <= 20_000 else KS
    if cells >= 100_000:
        dims["chunker"] = CHUNKERS[: cells // 20_000]
    if cells >= 1_000_000:  # left at the default cap (10,000): it must be refused at once
        dims["chunker"], dims["chunk_size"] = CHUNKERS, list(range(64, 1064, 10))
        return {"name": f"plan{cells}", "grid": dims}
    return {"name": f"plan{cells}", "max_cells": cells, "grid": dims}


def timed(args: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (MiB), exit status and the last output line of ``python ARGS``."""
    t = timed_child(args)
    return t.wall_s, t.peak_mib, t.returncode, (t.output.strip().splitlines() or [""])[-1]


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns 1 when a planned grid fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "hepwb-bench-plan")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    files = {}
    for n in (1_000, 10_000, 100_000, 1_000_000):
        files[n] = args.work / f"grid-{n}.yaml"
        files[n].write_text(yaml.safe_dump(grid(n), sort_keys=False), encoding="utf-8")
    base_code = (
        "import sys; from hepwb.sweep import plan_sweep; "
        "p = plan_sweep(sys.argv[1]); print(p.frame().to_string()[-80:]); print(len(p.cells))"
    )
    bw, brss, _, _ = timed(["-c", base_code, str(files[10_000])])
    print("| cells | dry run (s) | peak RSS (MiB) | s per 10^4 cells | vs materialising plan of 10^4 |")
    print("|---:|---:|---:|---:|---|")
    print(f"| 10,000 (baseline: plan_sweep + frame) | {bw:.2f} | {brss:.0f} | {bw:.2f} | 1.00× |")
    for n in (1_000, 10_000, 100_000):
        wall, rss, code, last = timed([*HEPWB_CLI, "sweep", str(files[n]), "--dry-run"])
        if code != 0:
            print(f"the {n:,}-cell dry run failed (exit {code}): {last}", file=sys.stderr)
            return 1
        per = wall / n * 1e4
        print(
            f"| {n:,} | {wall:.2f} | {rss:.0f} | {per:.2f} | time {wall / bw:.2f}×, RSS {rss / brss:.2f}× |"
        )
    wall, rss, code, last = timed([*HEPWB_CLI, "sweep", str(files[1_000_000]), "--dry-run"])
    print(f"\n10^6-cell grid, default cap: exit {code} after {wall:.2f} s, {rss:.0f} MiB: {last}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
