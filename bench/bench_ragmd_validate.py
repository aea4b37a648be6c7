"""Validation time of a .ragmd file against its size: linear, including files with repeated chunk ids.

Usage::

    python -m bench.bench_ragmd_validate [--chunks 20000]

Method: two files made by :func:`hepwb.ragmd.dumps` from ``--chunks`` and ten times as many chunks (short
texts, 2-dimensional vectors), in which one chunk id is repeated (a hand-merged file, the worst case of the
old check, which counted every id against the whole list). :func:`hepwb.ragmd.problems` validates each, the
best of three runs timed with ``time.perf_counter``. Target (issue #29): 10× the file → ≤ 12× the time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hepwb.ragmd import RagFile, dumps, problems
from hepwb.ragmd.model import RagChunk, RagDocument


def repeated(n: int) -> str:
    """A .ragmd text of ``n`` chunks whose Chunks section names one chunk twice."""
    chunks = [RagChunk(f"c{i}", "d1", i, 2 * i, 2 * i + 1, "x") for i in range(n)]
    when = "2026-01-01T00:00:00Z"
    rf = RagFile("m", "cs", when, when, [RagDocument("d1", "P01", "", "")], chunks, np.zeros((n, 2), "<f4"))
    return dumps(rf).replace('{"chunk_id": "c1", ', '{"chunk_id": "c0", ')


def best_of_three(text: str) -> float:
    """Seconds :func:`problems` takes on ``text`` (the best of three runs)."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        if not problems(text, "bench.ragmd"):
            msg = "the file with a repeated chunk id passed validation"
            raise SystemExit(msg)
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    """Print the two times and their ratio; exit 1 when the target is missed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=30_000)
    args = ap.parse_args(argv)
    small, large = repeated(args.chunks), repeated(10 * args.chunks)
    t_small, t_large = best_of_three(small), best_of_three(large)
    ratio = t_large / t_small
    print("| chunks | MiB | validate s |\n|---:|---:|---:|")
    print(f"| {args.chunks:,} | {len(small) / 2**20:.1f} | {t_small:.3f} |")
    print(f"| {10 * args.chunks:,} | {len(large) / 2**20:.1f} | {t_large:.3f} |")
    print(f"10× the file: {ratio:.1f}× the time (target ≤ 12×): {'met' if ratio <= 12 else 'MISSED'}")
    return 0 if ratio <= 12 else 1


if __name__ == "__main__":
    raise SystemExit(main())
