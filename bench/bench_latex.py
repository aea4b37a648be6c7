"""Measure the LaTeX converter over the shared corpus: quote survival, structure, speed, pages.

Usage: ``python -m bench.bench_latex [--docs P23,P31] [--show-missing] [--json OUT]``

For the papers with both LaTeX source and PDF (P23-P32) it converts the source (with the PDF for
page numbers) and reports, per document: conversion seconds, headings / display-math / tables /
captions / references, and the share of ``hepqa-dev`` evidence quotes intact in the markdown under
the strict and tolerant rules of ``eval/check_quotes.py`` (key = NFKC, lowercase, only ``[a-z0-9]``;
strict = substring, tolerant = >= 90 % of 16-character pieces in order), next to the same shares for
the PDF's own text (pymupdf ``page.get_text()``). "Page ok" counts strictly found quotes whose block
page span covers the evidence page. Then it converts the source-only folders (S01-S09) and reports
which succeed. Shared material comes from ``$HEPWB_SHARED`` or ``../shared``; without it the script
prints a message and exits 0.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import shared_material
from hepwb.exceptions import ProcessingError
from hepwb.files.io import write_json
from hepwb.processing.latex import latex_to_document
from hepwb.text.textkey import key as quote_key
from hepwb.text.textkey import piece_coverage as coverage
from hepwb.types import Document


def key_offsets(text: str) -> list[int]:
    """Offset in ``text`` of each character of ``quote_key(text)`` (per-character NFKC)."""
    where: list[int] = []
    for i, ch in enumerate(text):
        where.extend(i for _ in quote_key(ch))
    return where


def page_ok(doc: Document, qk: str, tk: str, where: list[int], page: int) -> bool:
    """Whether the block holding the quote's first character spans ``page``."""
    at = tk.find(qk)
    if at < 0 or at >= len(where):
        return False
    off = where[at]
    for b in doc.blocks:
        if b.start <= off < b.end or b.start > off:
            return b.page <= page <= max(b.page, b.page_end)
    return False


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", default="", help="comma-separated labels (default: all)")
    ap.add_argument("--show-missing", action="store_true", help="print quotes not found")
    ap.add_argument("--citations", default="key", choices=("key", "number"), help="citation style")
    ap.add_argument("--json", type=Path, help="write the results as JSON here")
    args = ap.parse_args(argv)
    tex_dir, qa = shared_material("corpus", "papers", "tex"), shared_material("eval", "hepqa-dev.jsonl")
    if tex_dir is None or qa is None:
        return 0
    pdf_dir = tex_dir.parent / "pdf"
    import pymupdf

    want = {d for d in args.docs.split(",") if d}
    evidence: dict[str, list[dict[str, Any]]] = {}
    for line in qa.read_text(encoding="utf-8").splitlines():
        if line.strip():
            for ev in json.loads(line)["evidence"]:
                evidence.setdefault(ev["doc"], []).append(ev)
    folders = sorted(p for p in tex_dir.iterdir() if p.is_dir())
    results: dict[str, dict[str, Any]] = {}
    header = f"{'doc':4} {'sec':>5} {'head':>4} {'math':>4} {'tab':>3} {'cap':>3} {'ref':>3} {'warn':>4}"
    print(header + f" {'quotes':>6} {'strict':>6} {'toler':>6} {'pdf-s':>6} {'pdf-t':>6} {'pageok':>6}")
    totals: Counter[str] = Counter()
    for folder in folders:
        label = folder.name.split("_", 1)[0]
        if want and label not in want:
            continue
        pdfs = sorted(pdf_dir.glob(f"{label}_*.pdf"))
        t0 = time.perf_counter()
        try:
            doc = latex_to_document(folder, pdf=pdfs[0] if pdfs else None, citations=args.citations)
        except ProcessingError as exc:
            results[label] = {"error": exc.code, "message": str(exc)}
            print(f"{label:4} ERROR {exc.code}: {str(exc)[:150]}")
            continue
        secs = time.perf_counter() - t0
        kinds = Counter(b.kind for b in doc.blocks)
        row: dict[str, Any] = {
            "seconds": round(secs, 3),
            "headings": kinds["heading"],
            "math": kinds["math"],
            "tables": kinds["table"],
            "captions": kinds["caption"],
            "references": kinds["reference"],
            "warnings": len(doc.meta["conversion_warnings"]),
        }
        line = (
            f"{label:4} {secs:5.2f} {row['headings']:4} {row['math']:4} {row['tables']:3} "
            f"{row['captions']:3} {row['references']:3} {row['warnings']:4}"
        )
        evs = evidence.get(label, []) if pdfs else []
        if evs:
            with pymupdf.open(pdfs[0]) as d:
                pdf_key = quote_key("\n".join(page.get_text() for page in d))
            tk, where = quote_key(doc.markdown), key_offsets(doc.markdown)
            n = len(evs)
            strict = tol = ps = pt = pok = 0
            for ev in evs:
                qk = quote_key(ev["quote"])
                s, c = qk in tk, coverage(qk, tk)
                strict += s
                tol += s or c >= 0.9
                ps += qk in pdf_key
                pt += coverage(qk, pdf_key) >= 0.9
                pok += s and page_ok(doc, qk, tk, where, int(ev.get("page") or 0))
                if args.show_missing and not s:
                    tag = "TOLERANT" if c >= 0.9 else "MISSING "
                    print(f"    {tag} {c:.2f} p{ev.get('page')}: {ev['quote'][:100]!r}")
            row.update(quotes=n, strict=strict, tolerant=tol, pdf_strict=ps, pdf_tolerant=pt, page_ok=pok)
            totals.update(quotes=n, strict=strict, tolerant=tol, pdf_strict=ps, pdf_tolerant=pt, page_ok=pok)
            shares = (strict / n, tol / n, ps / n, pt / n, pok / max(strict, 1))
            line += f" {n:6} " + " ".join(f"{x:6.0%}" for x in shares)
        results[label] = row
        print(line)
    if totals["quotes"]:
        n = totals["quotes"]
        print(
            f"ALL  quotes={n} strict={totals['strict'] / n:.1%} tolerant={totals['tolerant'] / n:.1%} "
            f"(PDF text: strict={totals['pdf_strict'] / n:.1%} tolerant={totals['pdf_tolerant'] / n:.1%}) "
            f"page ok={totals['page_ok'] / max(totals['strict'], 1):.1%} of strict"
        )
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
