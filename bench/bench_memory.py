"""Peak memory (RSS) of acquiring, processing and evaluating the 32-paper corpus, one process per stage.

Usage::

    python -m bench.bench_memory [--max-docs 32]

Method: each stage runs in its own child process (``python -c``, from the repository root), which prints
its own peak resident set size (``resource.getrusage(RUSAGE_SELF).ru_maxrss``, KiB on Linux) when done;
helper processes such as pandoc are separate processes with their own, smaller footprint:

* ``baseline`` - a child that only imports hepwb, numpy, torch and lancedb (the floor of any stage);
* ``acquire`` - the 12 corpus papers with arXiv ids downloaded over HTTP from a 127.0.0.1 server
  (the test suite's replay server: Range support, real PDFs, LaTeX tarballs), verified, with
  sources, plus all 32 copied and verified as a ``local`` source;
* ``process`` - conversion of every acquired PDF (PDF or LaTeX path as hepwb chooses) and a
  HEPilot-compliant 512-token chunk set written and schema-validated, in a fresh hepwb home;
* ``evaluate 1024 (fresh)`` - one ``hepwb evaluate`` run (``run_experiment``: conversion, 1024-token
  chunk set, embedding, LanceDB table with its full-text indexes, dense retrieval of the 124 hepqa-dev
  questions, every metric including the offline ragas ones) in a fresh home: nothing cached;
* ``evaluate 1024 (cached)`` - the same again in that home (conversion, chunks and table reused);
* ``evaluate 512, 3 papers`` - a small first run, fresh home.

Targets: every stage below 1 GiB (issue #7); one evaluation process under 1 GiB at 1024 tokens on the
32 papers (issue #17; it was 1.26 GB at 512 tokens and 1.5 GB for 3 papers before the rank metrics moved
from ranx, whose numba compilation held ~200 MiB, to ir-measures, the embedder's CPU batch went from 32
to 4 texts, and stages hand freed memory back, ``hepwb.runtime.env.release_memory``). The ratio column
divides by the baseline of the same command. Exits 0 with a message when ``../shared`` is absent.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
from pathlib import Path

from bench.common import child, shared_material

BASELINE = "import hepwb, numpy, torch, lancedb, pymupdf"

ACQUIRE = """
from pathlib import Path
from hepwb.paths import shared_dir
from hepwb.acquisition.acquire import acquire, discovered, write_sidecar
from hepwb.acquisition.arxiv import ArxivRecord
from hepwb.acquisition.http import PoliteClient
from hepwb.acquisition.acquire_corpus import acquire_corpus
from tests.replay_server import ReplayServer
out = Path({out!r})
with ReplayServer(shared_dir()) as srv, PoliteClient(min_interval_s=0) as client:
    entries = discovered([ArxivRecord(i, title=p["title"]) for i, p in sorted(srv.by_arxiv.items())])
    for e in entries:
        e["source_url"] = srv.url + "/pdf/" + e["arxiv"]["id"]
        e["arxiv"]["source_url"] = srv.url + "/e-print/" + e["arxiv"]["id"]
    doc = acquire(entries, out / "http", client, sources=True)
    write_sidecar(entries, doc, out / "http")
res = acquire_corpus(out / "local", source="local", folder=str(shared_dir() / "corpus" / "papers" / "pdf"),
                     max_results={n}, sources=False)
ok = sum(d["validation_status"] != "failed" for d in doc["acquired_documents"])
print("acquired", ok, "over HTTP and", res.n_ok, "local")
"""

PROCESS = """
import os, sys
os.environ["HEPWB_HOME"] = {home!r}
from pathlib import Path
from hepwb.paths import Layout, shared_dir
from hepwb.experiment import ingest, build_chunkset
from hepwb.hepilot.schemas import validate_tree
layout = Layout.default()
docs = ingest(Path({out!r}) / "local" / "pdf", layout=layout, progress=False)
cs = build_chunkset(docs, "hepilot", layout=layout, progress=False, chunk_size=512, chunk_overlap=0.1,
                    require_compliant=True)
bad = validate_tree(cs.root, shared_dir() / "hepilot")
print("processed", len(docs), "documents,", len(cs.chunks), "chunks, schema failures:", len(bad))
"""


EVALUATE = """
import os
os.environ["HEPWB_HOME"] = {home!r}
from hepwb.paths import Layout
from hepwb.experiment import ExperimentConfig, run_experiment
cfg = ExperimentConfig.from_params(chunk_size={size}, retriever="dense", max_docs={n})
res = run_experiment(cfg, layout=Layout.default(), progress=False)
print("evaluated", int(res.summary["n_questions_evaluated"]), "questions,", int(res.summary["n_chunks"]),
      "chunks, recall@5", round(res.summary["recall@5"], 3))
"""


def peak_mib(code: str) -> tuple[float, str]:
    """Run ``code`` in a child Python; return its own peak RSS in MiB and its last output line."""
    code = (
        textwrap.dedent(code)
        + "\nimport resource\nprint('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    proc = child(["-c", code])
    if proc.returncode:
        print(proc.stderr[-2000:], file=sys.stderr)
        msg = f"child failed with exit code {proc.returncode}"
        raise SystemExit(msg)
    lines = proc.stdout.strip().splitlines()
    peak = int(lines[-1].split()[1]) / 1024  # Linux: KiB
    return peak, (lines[-2] if len(lines) > 1 else "")


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-docs", type=int, default=32)
    args = ap.parse_args(argv)
    if shared_material("corpus", "papers", "pdf") is None:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        out, home = Path(tmp) / "acq", Path(tmp) / "home"
        rows: list[tuple[str, float, str]] = []
        base, _ = peak_mib(BASELINE)
        rows.append(("baseline (imports)", base, ""))
        for name, code in (("acquire", ACQUIRE), ("process", PROCESS)):
            mib, note = peak_mib(code.format(out=str(out), home=str(home), n=args.max_docs))
            rows.append((name, mib, note))
        evals = (
            ("evaluate 1024 (fresh)", Path(tmp) / "eval", 1024, args.max_docs),
            ("evaluate 1024 (cached)", Path(tmp) / "eval", 1024, args.max_docs),
            ("evaluate 512, 3 papers", Path(tmp) / "small", 512, 3),
        )
        for name, where, size, n in evals:
            mib, note = peak_mib(EVALUATE.format(home=str(where), size=size, n=n))
            rows.append((name, mib, note))
    print(f"\n{'stage':20s} {'peak RSS MiB':>12s} {'x baseline':>10s}  note")
    for name, mib, note in rows:
        print(f"{name:20s} {mib:12.0f} {mib / base:10.2f}  {note}")
    worst = max(m for _, m, _ in rows)
    print(f"\ntarget: every stage < 1024 MiB -> {'met' if worst < 1024 else 'NOT met'} (max {worst:.0f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
