"""Measure the PDF converter over the shared corpus: speed, quote survival, pages, headings.

Usage: ``.venv/bin/python bench/bench_processing.py [--docs P01,P18] [--show-missing]``

Shared material is found via ``$HEPWB_SHARED`` or ``../shared`` next to the repository root; the
script exits 0 with a message when it is absent. Quote rule (as ``eval/check_quotes.py``):
key(s) = NFKC, lowercase, only ``[a-z0-9]``; a quote survives when its key is a substring of
key(markdown). "Right page" counts surviving quotes whose first occurrence lies in a block whose
page span includes the evidence page.
"""

from __future__ import annotations

import argparse
import bisect
import importlib
import itertools
import json
import os
import re
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hepwb.processing import pdf_to_document  # noqa: E402
from hepwb.types import Document  # noqa: E402


def key_with_map(text: str) -> tuple[str, list[int]]:
    """Return the quote key of ``text`` and, per key character, its offset in ``text``."""
    chars: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKC", ch).lower():
            if "a" <= c <= "z" or "0" <= c <= "9":
                chars.append(c)
                where.append(i)
    return "".join(chars), where


def key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKC", text).lower())


def pages_at(doc: Document, offset: int) -> tuple[int, int]:
    starts = [b.start for b in doc.blocks]
    i = max(bisect.bisect_right(starts, offset) - 1, 0)
    b = doc.blocks[i]
    return b.page, max(b.page_end, b.page)


def line_pairs(pdf: Path, mkey: str) -> tuple[int, int]:
    """Count consecutive horizontal pymupdf lines (both >= 25 key chars) whose joined key survives."""
    import pymupdf

    total = ok = 0
    with pymupdf.open(pdf) as d:
        for page in d:
            for b in page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT)["blocks"]:
                lines = [
                    "".join(s["text"] for s in ln["spans"])
                    for ln in b.get("lines", [])
                    if abs(ln["dir"][0] - 1) < 1e-3
                ]
                for a, c in itertools.pairwise(lines):
                    if len(key(a)) >= 25 and len(key(c)) >= 25:
                        total += 1
                        ok += key(a + c) in mkey
    return total, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", default="", help="comma-separated labels to run (default: all)")
    ap.add_argument("--show-missing", action="store_true", help="print the quotes that did not survive")
    ap.add_argument(
        "--pairs",
        action="store_true",
        help="also check that every pair of consecutive long pymupdf lines survives (slower)",
    )
    args = ap.parse_args()
    shared = Path(os.environ.get("HEPWB_SHARED", ROOT.parent / "shared"))
    pdf_dir = shared / "corpus" / "papers" / "pdf"
    qa_path = shared / "eval" / "hepqa-dev.jsonl"
    if not pdf_dir.is_dir() or not qa_path.is_file():
        print(f"skipped: shared test material not found at {shared} (set HEPWB_SHARED)")
        return 0
    quotes: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    with qa_path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                q = json.loads(line)
                for ev in q["evidence"]:
                    quotes[ev["doc"]].append((q["qid"], int(ev["page"]), ev["quote"]))
    wanted = {d for d in args.docs.split(",") if d}
    pdfs = sorted(p for p in pdf_dir.glob("*.pdf") if not wanted or p.name.split("_")[0] in wanted)
    head = f"{'doc':4} {'pages':>5} {'sec':>6} {'pg/s':>6} {'quotes':>6} {'found':>5} {'page':>5}"
    print(head + f" {'head':>4} {'capt':>4} {'list':>4} {'chars':>8}  warnings")

    importlib.import_module("pymupdf")  # warm the import: the first document's time is conversion only
    tot = defaultdict(float)
    missing: list[str] = []
    for pdf in pdfs:
        t0 = time.perf_counter()
        doc = pdf_to_document(pdf)
        dt = time.perf_counter() - t0
        mkey, where = key_with_map(doc.markdown)
        found = right = 0
        for qid, page, quote in quotes.get(doc.label, []):
            pos = mkey.find(key(quote))
            if pos < 0:
                missing.append(f"{qid} p{page}: {quote[:100]!r}")
                continue
            found += 1
            lo, hi = pages_at(doc, where[pos])
            right += lo <= page <= hi
        kinds = defaultdict(int)
        for b in doc.blocks:
            kinds[b.kind] += 1
        nq = len(quotes.get(doc.label, []))
        n = doc.meta["pages"]
        warn = "; ".join(doc.meta.get("conversion_warnings", []))
        print(
            f"{doc.label:4} {n:5d} {dt:6.2f} {n / dt:6.1f} {nq:6d} {found:5d} {right:5d}"
            f" {kinds['heading']:4d} {kinds['caption']:4d} {kinds['list']:4d} {len(doc.markdown):8d}"
            f"  {warn[:60]}"
        )
        if args.pairs:
            n_pairs, ok_pairs = line_pairs(pdf, mkey)
            tot["pairs"] += n_pairs
            tot["pairs_ok"] += ok_pairs
            print(f"     line pairs kept: {ok_pairs}/{n_pairs}")
        for k, v in (
            ("pages", n),
            ("sec", dt),
            ("quotes", nq),
            ("found", found),
            ("right", right),
            ("headings", kinds["heading"]),
        ):
            tot[k] += v
    nq = tot["quotes"] or 1
    print(
        f"\nTOTAL {int(tot['pages'])} pages in {tot['sec']:.1f} s = {tot['pages'] / tot['sec']:.1f} pages/s; "
        f"quotes {int(tot['found'])}/{int(tot['quotes'])} = {100 * tot['found'] / nq:.1f}% strict; "
        f"right page {int(tot['right'])} ({100 * tot['right'] / nq:.1f}% of all); "
        f"headings {int(tot['headings'])}"
    )
    if args.pairs:
        print(
            f"line pairs kept: {int(tot['pairs_ok'])}/{int(tot['pairs'])}"
            f" = {100 * tot['pairs_ok'] / max(tot['pairs'], 1):.2f}%"
        )
    if missing and args.show_missing:
        print("\nMISSING:\n" + "\n".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
