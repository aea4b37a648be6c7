"""Cost curves from 32 to 3,200 papers: time, peak memory and disk of every stage as the corpus grows.

Usage::

    python -m bench.bench_scale [--sizes 32,320,3200] [--real-max 320] [--workdir DIR]

Method:

* **Corpora.** The 32 shared papers are converted once (LaTeX preferred) and their markdown is the seed. A
  corpus of N documents holds copy 0 (the papers themselves, same file names, so the dev questions' evidence
  stays locatable) and copies 1, 2, … each rewritten deterministically (seed = copy number): within every
  section the paragraphs are permuted, and every digit ``d`` of prose becomes ``(d + copy) mod 10``, so
  lengths are kept and no chunk of a copy equals one of another. The copies are distractors for retrieval.
* **Stages**, each in its own Python process (its peak RSS read with ``wait4``), over one artefact folder
  per size: ``convert`` (:func:`hepwb.corpus.conversion.ingest` of the markdown folder), ``chunk`` (HEPilot,
  512 tokens, 10 % overlap), ``embed`` (every unique chunk text through the embedding cache), ``evaluate``
  (:func:`hepwb.experiment.run.run_experiment` over ``hepqa-dev.jsonl`` with ``dense`` and then ``bm25``:
  the table build is its ``index_s``, retrieval and scoring the rest), ``report`` (the catalog filled with
  both runs and its chunk set, and the report notebook rendered).
* **Measured or derived.** Up to ``--real-max`` documents every number is measured. Above it the embedding
  time is *derived*: texts / the texts/s measured at the largest real size; the cache is filled with
  deterministic random unit vectors of the model's dimension, so the index, search, memory and disk numbers
  are still measured. The output says which is which.
* **Targets.** Every stage's time grows at most linearly (10× documents → ≤ 11× time); peak RSS per process ≤
  2 GiB at 3,200 documents; the report renders in < 60 s.

Prints a markdown table and writes JSON to ``reports/bench/scale.json`` (or ``--json``), and the results file
``docs/results/scale.md`` (stamped; the docs' Results page shows it; ``--no-write``: none): seconds, peak RSS
and disk per size, and each stage's growth in time against the documents' growth from one size to the next.
Only a run that measures writes it (not ``--rows``, which summarizes earlier runs). With the defaults about
25 minutes on 2 cores alone (3,200 documents about 12, the real embedding at 320 about 6).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPORTS, timed_child
from bench.results import command_line, git_commit, write_results
from hepwb import defaults
from hepwb.catalog import Catalog
from hepwb.experiment import ExperimentConfig, build_chunkset, ingest, run_experiment
from hepwb.files.io import write_json
from hepwb.index.cache import EmbeddingCache
from hepwb.index.chunk_store import TABLE_SLICE, ChunkStore
from hepwb.models.embedder import get_embedder
from hepwb.paths import Layout
from hepwb.report.render import render_report
from hepwb.text.ids import text_sha256

STAGES = ("convert", "chunk", "embed", "evaluate", "report")
_DIGIT = re.compile(r"\d")


# ----------------------------------------------------------------------------------------- corpora
def _rewrite(markdown: str, copy: int) -> str:
    """Copy ``copy`` of a paper: paragraphs permuted within sections, prose digits shifted by ``copy``."""
    rng = random.Random(copy)
    out: list[str] = []
    section: list[str] = []

    def flush() -> None:
        rng.shuffle(section)
        out.extend(section)
        section.clear()

    for block in markdown.split("\n\n"):
        if block.lstrip().startswith("#"):
            flush()
            out.append(block)
        elif block.lstrip().startswith(("$$", "|", "```")):
            section.append(block)  # math, tables and code kept as they are (moved with their section)
        else:
            section.append(_DIGIT.sub(lambda m: str((int(m.group()) + copy) % 10), block))
    flush()
    return "\n\n".join(out)


def make_corpus(seed_docs: list[tuple[str, str]], n: int, folder: Path) -> Path:
    """A folder of ``n`` markdown documents: the seed papers, then rewritten copies (see the module doc)."""
    if folder.is_dir() and len(list(folder.glob("*.md"))) == n:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for i in range(n):
        copy, (name, text) = divmod(i, len(seed_docs))[0], seed_docs[i % len(seed_docs)]
        label = name if copy == 0 else f"C{copy:04d}{name}"
        (folder / f"{label}_scale.md").write_text(
            text if copy == 0 else _rewrite(text, copy), encoding="utf-8"
        )
    return folder


def seed_documents() -> list[tuple[str, str]]:
    """(label, markdown) of the 32 shared papers, converted with hepwb (LaTeX preferred)."""
    docs = ingest(None, prefer_latex=True, progress=False, require=True)
    return [(d.label, d.markdown) for d in docs]


# ------------------------------------------------------------------------------------------ stages
def run_stage(stage: str, home: Path, corpus: Path, extra: dict[str, Any]) -> dict[str, Any]:
    """Run ``stage`` in a fresh process; its result, wall time and peak RSS (MiB)."""
    out = home / f".{stage}.json"
    args = ["-m", "bench.bench_scale", "--stage", stage, "--home", str(home), "--corpus", str(corpus),
            "--extra", json.dumps(extra), "--result", str(out)]  # fmt: skip
    t = timed_child(args, env={**os.environ, "HEPWB_HOME": str(home)}, capture=False)
    if t.returncode != 0:
        msg = f"stage {stage} failed (exit {t.returncode})"
        raise SystemExit(msg)
    result = json.loads(out.read_text(encoding="utf-8"))
    return {**result, "wall_s": round(t.wall_s, 2), "peak_rss_mib": round(t.peak_mib, 1)}


def _stage(stage: str, home: Path, corpus: Path, extra: dict[str, Any]) -> dict[str, Any]:
    """The body of one stage, run in its own process (``--stage``)."""
    layout = Layout(home)
    if stage == "evaluate":  # as a user's run: run_experiment loads what it needs itself
        out: dict[str, Any] = {}
        for retriever in ("dense", "bm25"):
            cfg = ExperimentConfig.from_params(corpus=str(corpus), retriever=retriever, prefer_latex=False)
            res = run_experiment(cfg, layout=layout, progress=False)
            out[retriever] = {
                "timings_s": res.record.timings_s,
                "found@5": res.summary.get("hit_rate@5"),
                "query_p50_ms": res.record.costs.get("query_p50_ms"),
                "run_dir": str(res.run_dir),
            }
            del res
        return out
    docs = ingest(corpus, layout=layout, prefer_latex=False, progress=False, require=True)
    if stage == "convert":
        return {"documents": len(docs)}
    cs = build_chunkset(
        docs, "hepilot", chunk_size=defaults.CHUNK_SIZE, chunk_overlap=defaults.CHUNK_OVERLAP, layout=layout,
        progress=False,
    )  # fmt: skip
    if stage == "chunk":
        return {"chunks": len(cs.chunks)}
    if stage == "embed":
        texts = sorted({c.text for c in cs.chunks})
        del docs, cs  # only the texts are embedded
        if extra.get("derived_rate"):
            emb = get_embedder()
            rng = np.random.default_rng(0)
            cache = EmbeddingCache(layout.lancedb, emb.model)
            for i in range(0, len(texts), TABLE_SLICE):  # as the index stage adds vectors: a slice at a time
                part = texts[i : i + TABLE_SLICE]
                vecs = rng.standard_normal((len(part), emb.dim)).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                cache.add({text_sha256(t): v for t, v in zip(part, vecs, strict=True)})
            return {"texts": len(texts), "derived_s": round(len(texts) / extra["derived_rate"], 1)}
        t0 = time.perf_counter()
        ChunkStore(layout.lancedb, get_embedder()).embed_cached(texts, progress=False)
        return {"texts": len(texts), "texts_per_s": round(len(texts) / (time.perf_counter() - t0), 2)}
    if stage == "report":
        catalog = Catalog(layout.catalog)
        catalog.record_chunkset(cs)
        for run in sorted(layout.reports.glob("runs/*/metrics.json")):
            catalog.record_run(run.parent)
        rows = {
            t: int(catalog.sql(f"SELECT count(*) AS n FROM {t}")["n"][0])
            for t in ("documents", "chunks", "runs")
        }
        t0 = time.perf_counter()
        render_report(layout)
        return {"catalog_rows": rows, "render_s": round(time.perf_counter() - t0, 1)}
    msg = f"unknown stage {stage!r}"
    raise SystemExit(msg)


def _du(path: Path) -> float:
    """MiB under ``path``."""
    if not path.exists():
        return 0.0
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return round(sum(p.stat().st_size for p in files) / 2**20, 1)


def measure(n: int, seeds: list[tuple[str, str]], work: Path, rate: float | None) -> dict[str, Any]:
    """Every stage at ``n`` documents (``rate``: derive the embedding time from it)."""
    corpus = make_corpus(seeds, n, work / f"corpus-{n}")
    home = work / f"home-{n}"
    shutil.rmtree(home, ignore_errors=True)  # every stage from scratch: nothing cached from an earlier run
    home.mkdir(parents=True)
    row: dict[str, Any] = {"documents": n, "embedding": "derived" if rate else "measured"}
    for stage in STAGES:
        extra = {"derived_rate": rate} if stage == "embed" and rate else {}
        row[stage] = run_stage(stage, home, corpus, extra)
        print(
            f"  {n} documents, {stage}: {row[stage]['wall_s']} s, {row[stage]['peak_rss_mib']} MiB",
            flush=True,
        )
    lay = {
        "documents": "data/interim/documents",
        "chunk sets": "data/processed/chunksets",
        "lancedb": "data/processed/lancedb",
        "catalog": "reports/catalog.duckdb",
        "runs": "reports/runs",
    }
    row["disk_mib"] = {k: _du(home / v) for k, v in lay.items()}
    return row


def stage_seconds(row: dict[str, Any]) -> dict[str, float]:
    """Seconds per stage; the evaluate stage split into index (table build) and retrieve + score."""
    ev = row["evaluate"]
    index = sum(ev[r]["timings_s"].get("index_s", 0.0) for r in ("dense", "bm25"))
    embed = row["embed"].get("derived_s") or row["embed"]["wall_s"]
    return {
        "convert": row["convert"]["wall_s"],
        "chunk": row["chunk"]["wall_s"],
        "embed": embed,
        "index": round(index, 2),
        "evaluate": round(
            sum(ev[r]["timings_s"].get(k, 0.0) for r in ("dense", "bm25") for k in ("retrieve_s", "evaluate_s")),  # noqa: E501
            2,
        ),
        "report": row["report"]["render_s"],
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or, with ``--stage``, one stage of it); returns the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="32,320,3200", help="corpus sizes, comma-separated")
    ap.add_argument("--real-max", type=int, default=320, help="embed for real up to this many documents")
    ap.add_argument(
        "--derived-rate",
        type=float,
        default=None,
        help="texts/s for derived embedding times (default: the largest real run's); with --rows, "
        "a later size can be measured alone",
    )
    ap.add_argument("--workdir", type=Path, default=None, help="where corpora and artefacts go (kept)")
    ap.add_argument("--json", type=Path, default=REPORTS / "scale.json")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--extra", default="{}", help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=Path, nargs="+", help="only summarize these earlier outputs (last wins)")
    ap.add_argument("--no-write", action="store_true", help="no results file (docs/results/scale.md)")
    ap.add_argument("--results-folder", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument(
        "--plot",
        type=Path,
        help="with --rows: draw the cost curves to this PNG (times from the first file; peak RSS of each)",
    )
    args = ap.parse_args(argv)
    if args.rows and args.plot:
        plot_curves(
            [(f.stem, json.loads(f.read_text(encoding="utf-8"))["rows"]) for f in args.rows], args.plot
        )
    if args.rows:
        by_size = {
            r["documents"]: r for f in args.rows for r in json.loads(f.read_text(encoding="utf-8"))["rows"]
        }
        return summarize([by_size[n] for n in sorted(by_size)], args.json)
    if args.stage:
        res = _stage(args.stage, args.home, args.corpus, json.loads(args.extra))
        args.result.write_text(json.dumps(res), encoding="utf-8")
        return 0
    commit = git_commit()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    work = args.workdir or Path(tempfile.mkdtemp(prefix="hepwb-scale-"))
    seeds = seed_documents()
    print(f"{len(seeds)} seed papers; work folder {work}")
    rows, rate = [], args.derived_rate
    source = f"the given rate, {rate} texts/s" if rate else ""
    for n in sizes:
        rows.append(measure(n, seeds, work, rate if n > args.real_max else None))
        if n <= args.real_max and args.derived_rate is None:
            rate = rows[-1]["embed"]["texts"] / rows[-1]["embed"]["wall_s"]
            source = f"the rate measured at {n} documents, {rate:.1f} texts/s"
    code = summarize(rows, args.json)
    if not args.no_write:
        line = caption(rows, len(seeds), source)
        write_results("scale", results_table(rows), caption=line, folder=args.results_folder, commit=commit)
    return code


def caption(rows: list[dict[str, Any]], seeds: int, derived: str) -> str:
    """One line: the sizes, how the corpora are made, which embedding times are derived, the command."""
    sizes = [r["documents"] for r in rows]
    real = [n for n, r in zip(sizes, rows, strict=True) if r["embedding"] == "measured"]
    papers = f"the {seeds} shared papers" if min(sizes) >= seeds else f"the first {min(sizes)} shared papers"
    how = "every number measured"
    if len(real) < len(sizes):
        upto = (
            f"measured up to {max(real):,} documents, derived above it" if real else "derived at every size"
        )
        how = (f"embedding time {upto} from {derived} (the cache filled with random unit vectors there: "
               "their dense found@5 means nothing), everything else measured")  # fmt: skip
    return (
        f"Cost of every stage, each in its own process from an empty artefact folder, at "
        f"{', '.join(f'{n:,}' for n in sizes)} documents ({papers}, then copies of them rewritten: "
        f"paragraphs permuted within sections, digits shifted); {how}; found@5 on hepqa-dev; "
        f"`{command_line()}`."
    )


def plot_curves(runs: list[tuple[str, list[dict[str, Any]]]], out: Path) -> None:
    """Seconds per stage against documents (log-log, the first run) and peak RSS per stage of every run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    name, rows = runs[0]
    docs = [r["documents"] for r in rows]
    for c in ("convert", "chunk", "embed", "index", "evaluate"):
        left.plot(docs, [stage_seconds(r)[c] for r in rows], marker="o", label=c)
    left.plot(
        docs, [docs[0] and stage_seconds(rows[0])["chunk"] * d / docs[0] for d in docs], "k:", label="linear"
    )
    left.set(
        xscale="log", yscale="log", xlabel="documents", ylabel="seconds", title=f"time per stage ({name})"
    )
    left.legend(fontsize=8)
    for run, rs in runs:
        right.plot([r["documents"] for r in rs], [max(r[st]["peak_rss_mib"] for st in STAGES) for r in rs],
                   marker="o", label=run)  # fmt: skip
    right.axhline(2048, color="k", ls=":", label="2 GiB target")
    right.set(xscale="log", xlabel="documents", ylabel="MiB", title="peak RSS of any stage process")
    right.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"cost curves: {out}")


COLS = ("convert", "chunk", "embed", "index", "evaluate", "report")
"""The columns of seconds: the stages, the evaluate stage split into index and retrieve + score."""


def size_table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per corpus size, each stage's seconds, peak RSS, disk and found@5."""
    head = " | ".join(f"{c} s" for c in COLS)
    out = f"| documents | chunks | {head} | peak RSS MiB | disk MiB | found@5 bm25 / dense |\n"
    out += "|---" * (len(COLS) + 5) + "|\n"
    for r in rows:
        s = stage_seconds(r)
        peak = max(r[st]["peak_rss_mib"] for st in STAGES)
        disk = round(sum(r["disk_mib"].values()), 1)
        derived = r["embedding"] == "derived"
        vals = [f"{s[c]} (derived)" if c == "embed" and derived else str(s[c]) for c in COLS]
        dense = "random vectors" if derived else f"{r['evaluate']['dense']['found@5']:.3f}"
        found = f"{r['evaluate']['bm25']['found@5']:.3f} / {dense}"
        out += (
            f"| {r['documents']} | {r['chunk']['chunks']} | {' | '.join(vals)} | {peak} | {disk} | {found} |"
        )
        out += "\n"
    return out


def results_table(rows: list[dict[str, Any]]) -> str:
    """:func:`size_table`, then each stage's growth in time from one size to the next (target: ≤ 1.1 × the
    documents' growth; a stage under 1 s at the smaller size is noise, the report follows the runs)."""
    grown = [c for c in COLS if c != "report"]
    out = size_table(rows) + "\n| documents | × documents | " + " | ".join(f"× {c} time" for c in grown)
    out += " | target |\n" + "|---" + "|---:" * (len(grown) + 2) + "|\n"
    for a, b in itertools.pairwise(rows):
        sa, sb = stage_seconds(a), stage_seconds(b)
        factor = b["documents"] / a["documents"]
        cells = [f"{sb[c] / sa[c]:.1f}" if sa[c] > 1.0 else "under 1 s" for c in grown]
        out += (f"| {a['documents']:,} → {b['documents']:,} | {factor:.1f} | {' | '.join(cells)} "
                f"| ≤ {1.1 * factor:.1f} |\n")  # fmt: skip
    return out


def summarize(rows: list[dict[str, Any]], out: Path) -> int:
    """Print the table and the targets of ``rows`` (one per corpus size); write them to ``out``."""
    secs = [stage_seconds(r) for r in rows]
    print("\n" + size_table(rows), end="")
    ok = True
    pairs = list(zip(rows, secs, strict=True))
    for (a, sa), (b, sb) in itertools.pairwise(pairs):
        factor = b["documents"] / a["documents"]
        for c in COLS:
            if c == "report" or sa[c] <= 1.0:
                continue  # the report's time follows the runs, not the documents; sub-second stages are noise
            growth = sb[c] / sa[c]
            flag = "ok" if growth <= 1.1 * factor else "SUPERLINEAR"
            ok &= flag == "ok"
            print(f"{c}: {a['documents']} → {b['documents']} documents: × {growth:.1f} time ({flag})")
    peak = max(r[st]["peak_rss_mib"] for r in rows for st in STAGES)
    render = max(r["report"]["render_s"] for r in rows)
    print(
        f"peak RSS of any stage process: {peak} MiB (target ≤ 2048); report render {render} s (target < 60)"
    )
    ok &= peak <= 2048 and render < 60
    write_json(
        out, {"date": time.strftime("%Y-%m-%d"), "rows": rows, "stage_seconds": secs, "targets_met": ok}
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
