"""Compare PDF converters over the shared corpus: speed, quote survival, structure, memory.

Usage::

    python -m bench.bench_processing [--docs P01,P18] [--converters hepwb,pymupdf,pymupdf4llm]
        [--pymupdf4llm-docs P01,P03|N|all] [--show-missing]

Converters: ``hepwb`` (:func:`hepwb.processing.pdf_to_document`), ``pymupdf`` (plain
``page.get_text()`` per page, pages joined by blank lines) and ``pymupdf4llm``
(``pymupdf4llm.to_markdown`` in default mode, ``ORT_DISABLE_TELEMETRY=1``). pymupdf4llm is slow
(1-4 pages/s on most papers, but P02 alone takes ~15 min and 1.1 GiB here), so by default it only
converts P01, P03, P24 and P32 (35 pages, ~10 s); ``--pymupdf4llm-docs`` takes labels
(``P01,P05``), a count of leading documents (``6``) or ``all``.
Each converter runs in its own subprocess, which reports its peak RSS (``ru_maxrss``).

Per document and in total: pages/s, evidence quotes intact (strict: key(quote) is a substring of
key(text); tolerant: >= 90% of the quote's 16-character key pieces found in order), and counts of
headings, tables, display-math blocks, captions and (hepwb) reference entries. For hepwb the counts
come from its blocks; for the others from markdown regexes (``^#``, GFM separator rows, ``$$``
blocks, ``Figure/Fig./Table N`` lines). Quote key: NFKC, lowercase, only ``[a-z0-9]``.
Shared material comes from ``$HEPWB_SHARED`` or ``../shared``; the script exits 0 when absent.

Results: ``docs/results/conversion.md`` (stamped; the docs' Results page shows it; ``--no-write``: print
only): each converter's totals, then hepwb against each other converter on the papers both converted (pages/s
and its ratio, quotes intact). With the defaults (all 32 papers, pymupdf4llm on 4) it takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import child, shared_material
from bench.results import command_line, git_commit, write_results
from hepwb.processing import pdf_to_document
from hepwb.text.textkey import key, piece_coverage

CONVERTERS = ("hepwb", "pymupdf", "pymupdf4llm")
COUNTS = ("heading", "table", "math", "caption", "reference")
TOTALS = ("pages", "sec", "quotes", "strict", "tolerant", *COUNTS)
_MARK = "@@bench "
_HEAD_RE = re.compile(r"^#{1,6}\s", re.M)
_TABLE_RE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$", re.M)
_MATH_RE = re.compile(r"^\$\$", re.M)
_CAPTION_RE = re.compile(r"^(?:\*\*|_)*(?:Figure|Fig\.|Table)\s*[A-Z]?\d+", re.M | re.I)


def tolerant(quote_key: str, text_key: str, share: float = 0.9) -> bool:
    """check_quotes' tolerant rule: >= ``share`` of the quote key's 16-character pieces occur in order."""
    return piece_coverage(quote_key, text_key) >= share


def convert(name: str, pdf: Path) -> tuple[str, int, dict[str, int]]:
    """Run one converter on ``pdf``; return markdown, page count and structure counts."""
    if name == "hepwb":
        doc = pdf_to_document(pdf)
        kinds: dict[str, int] = defaultdict(int)
        for b in doc.blocks:
            kinds[b.kind] += 1
        counts = {k: kinds[k] for k in ("heading", "table", "math", "caption", "reference")}
        return doc.markdown, int(doc.meta["pages"]), counts
    import pymupdf

    if name == "pymupdf":
        with pymupdf.open(pdf) as d:
            md = "\n\n".join(page.get_text() for page in d)
            n = d.page_count
    else:
        import pymupdf4llm

        with pymupdf.open(pdf) as d:
            n = d.page_count
        md = pymupdf4llm.to_markdown(str(pdf), show_progress=False)
    counts = {
        "heading": len(_HEAD_RE.findall(md)),
        "table": len(_TABLE_RE.findall(md)),
        "math": len(_MATH_RE.findall(md)) // 2,
        "caption": len(_CAPTION_RE.findall(md)),
        "reference": 0,
    }
    return md, n, counts


def worker(name: str, pdfs: list[Path], qa: Path) -> int:
    """Convert ``pdfs`` with ``name`` in this process; print one JSON line per document."""
    quotes: dict[str, list[str]] = defaultdict(list)
    with qa.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                for ev in json.loads(line)["evidence"]:
                    quotes[ev["doc"]].append(ev["quote"])
    if name == "pymupdf4llm":
        os.environ["ORT_DISABLE_TELEMETRY"] = "1"
        import pymupdf4llm  # noqa: F401  (import cost outside the timing)
    import pymupdf  # noqa: F401

    for pdf in pdfs:
        label = pdf.name.split("_")[0]
        t0 = time.perf_counter()
        md, n, counts = convert(name, pdf)
        dt = time.perf_counter() - t0
        mk = key(md)
        qs = [key(q) for q in quotes.get(label, [])]
        row: dict[str, Any] = {"doc": label, "pages": n, "sec": dt, "quotes": len(qs), **counts}
        row["strict"] = sum(q in mk for q in qs)
        row["tolerant"] = sum(q in mk or tolerant(q, mk) for q in qs)
        row["missing"] = [q[:80] for q in qs if q not in mk]
        print(_MARK + json.dumps(row), flush=True)
    print(
        _MARK + json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True
    )
    return 0


def total(rows: list[dict[str, Any]], docs: set[str] | None = None) -> dict[str, float]:
    """The sums of :data:`TOTALS` over ``rows`` (only those of ``docs`` when given)."""
    tot: dict[str, float] = defaultdict(float)
    for row in rows:
        if docs is None or row["doc"] in docs:
            for k in TOTALS:
                tot[k] += row[k]
    return tot


def _rate(tot: dict[str, float]) -> float:
    return tot["pages"] / max(tot["sec"], 1e-9)


def _intact(tot: dict[str, float], which: str = "strict") -> str:
    n = int(tot["quotes"])
    return f"{int(tot[which])}/{n} ({100 * tot[which] / max(n, 1):.1f} %)"


def _papers(labels: list[str], every: int) -> str:
    if len(labels) == every:
        return f"all {every} shared papers ({labels[0]}–{labels[-1]})"
    return f"{len(labels)} of the {every} shared papers ({', '.join(labels)})"


def results_table(runs: dict[str, tuple[list[dict[str, Any]], float]], failed: list[str]) -> str:
    """Markdown: each converter's totals, then hepwb against each other converter on the same papers."""
    body = (
        "| converter | papers | pages | pages/s | quotes intact (strict) | quotes intact (tolerant) "
        "| headings | tables | display math | captions | references | peak RSS (MiB) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    for name, (rows, rss) in runs.items():
        t = total(rows)
        counts = " | ".join(str(int(t[k])) for k in COUNTS)
        body += (f"| `{name}` | {len(rows)} | {int(t['pages'])} | {_rate(t):.1f} | {_intact(t)} "
                 f"| {_intact(t, 'tolerant')} | {counts} | {rss:.0f} |\n")  # fmt: skip
    body += "".join(f"| `{name}` | worker failed | | | | | | | | | | |\n" for name in failed)
    if "hepwb" not in runs or len(runs) < 2:
        return body
    body += (
        "\n| hepwb against | papers both converted | pages | hepwb pages/s | its pages/s | hepwb speed ratio "
        "| quotes intact, hepwb | quotes intact, it |\n|---|---|---:|---:|---:|---:|---:|---:|\n"
    )
    ours = runs["hepwb"][0]
    for name, (rows, _) in runs.items():
        docs = {r["doc"] for r in rows} & {r["doc"] for r in ours}
        if name == "hepwb" or not docs:
            continue
        a, b = total(ours, docs), total(rows, docs)
        ratio = _rate(a) / max(_rate(b), 1e-9)
        body += (f"| `{name}` | {', '.join(sorted(docs))} | {int(a['pages'])} | {_rate(a):.1f} "
                 f"| {_rate(b):.1f} | {ratio:.2f}× | {_intact(a)} | {_intact(b)} |\n")  # fmt: skip
    return body


def main(argv: list[str] | None = None) -> int:
    """Measure and print the tables (or, with ``--worker``, convert in this process); returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", default="", help="comma-separated labels to run (default: all)")
    ap.add_argument("--converters", default=",".join(CONVERTERS), help="comma-separated converters")
    ap.add_argument(
        "--pymupdf4llm-docs", default="P01,P03,P24,P32", help="labels, a count of leading documents, or all"
    )
    ap.add_argument("--show-missing", action="store_true", help="print the quotes that did not survive")
    ap.add_argument("--no-write", action="store_true", help="print only; no results file")
    ap.add_argument("--results-folder", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    pdf_dir, qa = shared_material("corpus", "papers", "pdf"), shared_material("eval", "hepqa-dev.jsonl")
    if pdf_dir is None or qa is None:
        return 0
    wanted = {d for d in args.docs.split(",") if d}
    every = sorted(pdf_dir.glob("*.pdf"))
    pdfs = [p for p in every if not wanted or p.name.split("_")[0] in wanted]
    if args.worker:
        return worker(args.worker, pdfs, qa)
    commit = git_commit()
    head = f"{'conv':11} {'doc':4} {'pages':>5} {'pg/s':>7} {'quotes':>6} {'strict':>6} {'toler':>5}"
    print(head + f" {'head':>5} {'table':>5} {'math':>5} {'capt':>5} {'refs':>5}")
    totals: list[str] = []
    runs: dict[str, tuple[list[dict[str, Any]], float]] = {}
    failed: list[str] = []
    for name in [c for c in args.converters.split(",") if c]:
        docs = pdfs
        sel = args.pymupdf4llm_docs
        if name == "pymupdf4llm" and sel != "all":
            docs = (
                pdfs[: int(sel)]
                if sel.isdigit()
                else [p for p in pdfs if p.name.split("_")[0] in sel.split(",")]
            )
        if not docs:
            continue
        labels = ",".join(p.name.split("_")[0] for p in docs)
        env = {**os.environ, "HEPWB_SHARED": str(qa.parents[1]), "ORT_DISABLE_TELEMETRY": "1"}
        proc = child(["-m", "bench.bench_processing", "--worker", name, "--docs", labels], env=env)
        if proc.returncode:
            print(f"{name}: worker failed\n{proc.stderr[-2000:]}")
            failed.append(name)
            continue
        rows: list[dict[str, Any]] = []
        rss = 0.0
        for line in proc.stdout.splitlines():
            if not line.startswith(_MARK):
                continue  # converters may print their own messages
            row = json.loads(line[len(_MARK) :])
            if "rss_mb" in row:
                rss = row["rss_mb"]
                continue
            rows.append(row)
            print(
                f"{name:11} {row['doc']:4} {row['pages']:5d} {row['pages'] / max(row['sec'], 1e-9):7.1f}"
                f" {row['quotes']:6d} {row['strict']:6d} {row['tolerant']:5d} {row['heading']:5d}"
                f" {row['table']:5d} {row['math']:5d} {row['caption']:5d} {row['reference']:5d}"
            )
            if args.show_missing:
                for q in row["missing"]:
                    print(f"      missing: {q}")
        runs[name] = (rows, rss)
        tot = total(rows)
        nq = max(tot["quotes"], 1)
        totals.append(
            f"{name:11} {int(tot['pages']):4d} pages {tot['pages'] / max(tot['sec'], 1e-9):7.1f} pg/s"
            f"  strict {100 * tot['strict'] / nq:5.1f}%  tolerant {100 * tot['tolerant'] / nq:5.1f}%"
            f" ({int(tot['quotes'])} quotes)  head {int(tot['heading'])} table {int(tot['table'])}"
            f" math {int(tot['math'])} capt {int(tot['caption'])} refs {int(tot['reference'])}"
            f"  peak RSS {rss:.0f} MiB"
        )
    print("\nTOTAL\n" + "\n".join(totals))
    if not runs:
        return 0
    body = results_table(runs, failed)
    llm = sorted({r["doc"] for r in runs.get("pymupdf4llm", ([], 0.0))[0]})
    papers = _papers([p.name.split("_")[0] for p in pdfs], len(every))
    caption = (
        f"PDF conversion of {papers} by {', '.join(runs)}, each converter in its own process"
        + (f" (pymupdf4llm only on {', '.join(llm)}: it is slow)" if llm and len(llm) < len(pdfs) else "")
        + f"; evidence quotes of hepqa-dev intact in the text; `{command_line()}`."
    )
    print("\n" + body)
    if not args.no_write:
        write_results("conversion", body, caption=caption, folder=args.results_folder, commit=commit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
