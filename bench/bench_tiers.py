"""The two-tier walk-through on the 32-paper corpus: rows warmed, evicted, promoted; LT vs LT+HOT latency.

Usage::

    python -m bench.bench_tiers [--hot P29,P30,P31,P32] [--chunk-size 512] [--repeats 3]

Method:

* LT is built from every paper but the ``--hot`` ones (the curated corpus), in a fresh temporary tier
  folder; the ``--hot`` papers are acquired into HOT ("today's listing"). Conversions, chunk sets and
  embeddings come from the project cache (built on first use).
* Session: the ``hepqa-dev`` questions are asked once each (recorded: warming's input), then one
  warming call (``warm_max_docs`` 5, ``warm_max_rows`` 200), one human approval of the best HOT hit of
  the first question about a HOT paper, one promotion, then the clock is moved past the TTL and
  eviction runs. The row counts of each step are printed.
* Latency: every question is searched ``--repeats`` times against LT only and against LT+HOT (both
  tables in parallel threads, then merged), unrecorded, after 5 untimed warm-up queries; p50 and p95
  of ``time.perf_counter`` per query. The baseline is LT only, in the same process; "x LT" is the
  ratio of p50s.
* Quality: :func:`hepwb.tiers.evaluate_tiers` at k = 5 before eviction — LT only, HOT only, LT+HOT.

Shared material comes from ``$HEPWB_SHARED`` or ``../shared``; the script exits 0 with a message when
it is absent.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import shared_material
from hepwb.acquisition.folder import corpus_files, label_of
from hepwb.evaluation import load_questions
from hepwb.paths import Layout
from hepwb.runtime.env import configure_runtime
from hepwb.tiers import TierConfig, Tiers, evaluate_tiers
from hepwb.tiers.clock import ManualClock


def main(argv: list[str] | None = None) -> int:
    """Walk through the session and print its steps, latency and quality; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hot", default="P29,P30,P31,P32", help="Papers acquired into HOT (labels).")
    ap.add_argument("--chunk-size", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    configure_runtime(offline=None)
    pdfs, qfile = shared_material("corpus", "papers", "pdf"), shared_material("eval", "hepqa-dev.jsonl")
    if pdfs is None or qfile is None:
        return 0
    hot = [x.strip() for x in args.hot.split(",") if x.strip()]
    lt = [label_of(p) for p in corpus_files(pdfs) if label_of(p) not in hot]
    clock = ManualClock()
    root = Path(tempfile.mkdtemp(prefix="hepwb-bench-tiers-"))
    t = Tiers(root / "tiers", TierConfig(), clock=clock, layout=Layout.default())
    t0 = time.perf_counter()
    lt_rep = t.init_lt(pdfs, only=lt, chunk_size=args.chunk_size, progress=True)
    hot_rep = t.acquire(pdfs, only=hot)
    print(
        f"LT: {lt_rep.documents} papers, {lt_rep.rows} rows; HOT: {hot_rep.documents} papers acquired, "
        f"{hot_rep.rows} rows ({time.perf_counter() - t0:.1f} s, caches included)"
    )

    qs = load_questions(qfile)
    questions = [q.question for q in qs]
    for q in questions:
        t.search(q, 5)
    warmed = t.warm(actor="bench")
    print(
        f"warm: {len(warmed.entities)} entities of {len(questions)} recent questions -> {warmed.rows} rows "
        f"of {len(warmed.documents)} LT papers copied into HOT"
    )
    frame = evaluate_tiers(t, qfile, k=5)
    print(frame.round(3).to_string(index=False))

    first_hot = next(q for q in qs if q.evidence[0].doc in hot)
    hit = next(h for h in t.search(first_hot.question, 10) if h.tier == "hot")
    t.approve(hit.chunk_id, actor="bench", note="best HOT hit of the first question about a HOT paper")
    cands = t.candidates()
    promo = t.promote(actor="bench")
    print(
        f"promote: {len(cands)} paper(s) earned it ({'; '.join(cands['evidence'].str[:60])}) -> "
        f"{promo.rows} rows of {list(promo.documents)} into LT, version {promo.lt_version_before} -> "
        f"{promo.lt_version_after}"
    )

    timings: dict[str, list[float]] = {"LT only": [], "LT+HOT": []}
    for q in questions[:5]:
        t.search(q, 5, record=False)
    for _ in range(args.repeats):
        for q in questions:
            for name, which in (("LT only", ["lt"]), ("LT+HOT", ["lt", "hot"])):
                s = time.perf_counter()
                t.search(q, 5, which=which, record=False)
                timings[name].append((time.perf_counter() - s) * 1000)
    base = statistics.median(timings["LT only"])
    st = t.status()
    print(
        f"\nquery latency over {len(questions)} questions x {args.repeats} (LT {st['lt']['rows']} rows, "
        f"HOT {st['hot']['rows']} rows):"
    )
    print(f"{'':10} {'p50 ms':>8} {'p95 ms':>8} {'x LT':>6}")
    for name, xs in timings.items():
        p50, p95 = statistics.median(xs), statistics.quantiles(xs, n=20)[18]
        print(f"{name:10} {p50:8.1f} {p95:8.1f} {p50 / base:6.2f}")

    clock.advance(t.config.ttl_s + 1)
    ev = t.evict(actor="bench")
    st = t.status()
    print(
        f"\nevict after the TTL: {ev.rows} HOT rows removed ({len(ev.documents)} papers); "
        f"LT keeps {st['lt']['rows']} rows ({st['lt']['documents']} papers), HOT {st['hot']['rows']}"
    )
    print(t.why(hit.chunk_id)["reason"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
