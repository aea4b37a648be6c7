"""Figures, cross-references, equations and front matter over the shared corpus (issue #18's numbers).

Usage::

    python -m bench.bench_figures [--docs P23,P27] [--crops DIR]

1. **Figure and table records against the LaTeX sources.** For every paper with its LaTeX source
   (P23-P32), the ``figure``/``table`` environments with a ``\\caption`` give the expected labels in
   order (Figure 1, 2, ... and Table 1, 2, ...), and the page of each is where the caption's
   first words are found in the PDF's own text (pymupdf ``get_text``; an extractor-independent
   check). The records of the PDF conversion and of the LaTeX conversion are compared with that
   truth: right number and right page.
2. **Cross-references**: mentions per kind and the share resolved to an existing target, for all
   32 PDF conversions and, separately, for the LaTeX-checked papers.
3. **Equations**: display-math blocks recovered as LaTeX (a LaTeX conversion, or a PDF equation
   matched to its paper's LaTeX source) or as Unicode text only, in the default corpus conversion.
4. **Front matter**: chunks of the default chunker (hepilot, 512 tokens) that are author or
   affiliation lists, with the front matter kept out (now) and chunked as body text (before).

``--crops DIR`` also writes every figure crop of the checked papers to ``DIR`` for a look by eye.
Shared material comes from ``$HEPWB_SHARED`` or ``../shared``; the script exits 0 when absent.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import shared_material
from hepwb.chunking import get_chunker
from hepwb.experiment import ingest
from hepwb.processing import latex_to_document, pdf_to_document
from hepwb.processing.frontmatter import author_list_like
from hepwb.processing.latex import latex_source, pdf_page_keys
from hepwb.processing.links import write_link_files
from hepwb.text.textkey import key
from hepwb.types import Block, Document

_ENV = re.compile(r"\\begin\{(figure|table)(\*?)\}(.*?)\\end\{\1\2\}", re.S)
_CAPTION = re.compile(r"\\caption(?:\[[^\]]*\])?\{")
_CMD = re.compile(r"\\[A-Za-z]+\*?(?:\[[^\]]*\])?")


def _caption_text(env: str) -> str:
    """The first top-level caption's text (balanced braces), TeX commands and math removed."""
    m = _CAPTION.search(env)
    if m is None:
        return ""
    depth, i = 1, m.end()
    while i < len(env) and depth:
        depth += {"{": 1, "}": -1}.get(env[i], 0)
        i += 1
    text = re.sub(r"\$[^$]*\$", " ", env[m.end() : i - 1])
    text = re.sub(r"\\(?:label|ref|cite\w*|eqref)\{[^}]*\}", " ", text)
    return _CMD.sub(" ", text)


def _roman(n: int) -> str:
    out = ""
    for value, digits in ((10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out, n = out + digits, n - value
    return out


def latex_truth(tex_dir: Path, page_keys: list[str]) -> list[tuple[str, int, int]]:
    """``(kind, number, page)`` of the captioned figures and tables of a LaTeX project (page 0: not found)."""
    src = latex_source(tex_dir)
    out: list[tuple[str, int, int]] = []
    counts: Counter[str] = Counter()
    for m in _ENV.finditer(src):
        caption = _caption_text(m.group(3))
        if not caption.strip():
            continue
        kind = m.group(1)
        counts[kind] += 1
        probe = key(caption)[:40]
        labelled = [key(f"{name} {num}") + probe[:20] for name in (kind, kind[:3] + ".") for num in
                    (str(counts[kind]), _roman(counts[kind]))]  # fmt: skip
        page = next((i for i, k in enumerate(page_keys, 1) for p in labelled if p in k), 0)
        if not page:
            page = next((i for i, k in enumerate(page_keys, 1) if probe and probe in k), 0)
        if not page and len(probe) >= 20:
            page = next((i for i, k in enumerate(page_keys, 1) if probe[:20] in k), 0)
        out.append((kind, counts[kind], page))
    return out


def _score(truth: list[tuple[str, int, int]], records: list[dict[str, Any]]) -> tuple[int, int, list[str]]:
    found = {(r["kind"], int(r["number"])): int(r["page"]) for r in records}
    ok, wrong = 0, []
    for kind, number, page in truth:
        got = found.get((kind, number))
        if got is not None and (got == page or page == 0):
            ok += 1
        else:
            wrong.append(f"{kind} {number}: page {page}, got {got}")
    return ok, len(truth), wrong


def _front_chunks(docs: list[Document]) -> tuple[int, int, int]:
    """Author/affiliation-list chunks with front matter kept out, and with it chunked as body."""
    ch = get_chunker("hepilot", chunk_size=512, chunk_overlap=0.1)
    now = before = total = 0
    for d in docs:
        chunks = ch.chunk(d)
        total += len(chunks)
        now += sum(1 for c in chunks if author_list_like(c.text))
        as_body = tuple(Block("text", b.start, b.end, b.page, 0, b.page_end) if b.kind == "front" else b
                        for b in d.blocks)  # fmt: skip
        before += sum(1 for c in ch.chunk(dataclasses.replace(d, blocks=as_body)) if author_list_like(c.text))
    return before, now, total


def main(argv: list[str] | None = None) -> int:
    """Measure and print the four parts; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", default="", help="Comma-separated labels (default: all).")
    ap.add_argument("--crops", type=Path, default=None, help="Write the checked papers' figure crops here.")
    args = ap.parse_args(argv)
    pdf_dir = shared_material("corpus", "papers", "pdf")
    if pdf_dir is None:
        return 0
    only = {s for s in args.docs.split(",") if s}
    pdfs = [p for p in sorted(pdf_dir.glob("*.pdf")) if not only or p.name.split("_")[0] in only]
    docs = {p.name.split("_")[0]: pdf_to_document(p) for p in pdfs}
    tex_root = pdf_dir.parent / "tex"
    print("== 1. figure/table records vs LaTeX sources (right number and page)")
    tot = {"pdf": [0, 0], "latex": [0, 0]}
    checked: list[str] = []
    for label, doc in docs.items():
        tex = next(iter(sorted(tex_root.glob(f"{label}_*"))), None)
        if tex is None:
            continue
        pdf = next(p for p in pdfs if p.name.startswith(label + "_"))
        truth = latex_truth(tex, pdf_page_keys(pdf))
        if not truth:
            continue
        checked.append(label)
        ldoc = latex_to_document(tex, label=label, pdf=pdf)
        for name, d in (("pdf", doc), ("latex", ldoc)):
            ok, n, wrong = _score(truth, d.meta["figures"])
            tot[name][0] += ok
            tot[name][1] += n
            print(f"  {label} {name:5s} {ok}/{n}" + (f"  missed: {'; '.join(wrong[:4])}" if wrong else ""))
        if args.crops:
            out = args.crops / label
            out.mkdir(parents=True, exist_ok=True)
            write_link_files(out, doc)
    for name, (ok, n) in tot.items():
        share = ok / max(n, 1)
        print(f"  TOTAL {name}: {ok}/{n} = {share:.1%} over {len(checked)} papers: {', '.join(checked)}")
    print("== 2. cross-references resolved to an existing target")
    for scope, labels in (("all 32 PDFs", list(docs)), ("LaTeX-checked papers", checked)):
        per: dict[str, list[int]] = {}
        for label in labels:
            for kind, s in docs[label].meta["xref_summary"].items():
                a = per.setdefault(kind, [0, 0])
                a[0] += s["resolved"]
                a[1] += s["mentions"]
        fig = [sum(per.get(k, [0, 0])[i] for k in ("figure", "table", "equation")) for i in (0, 1)]
        print(f"  {scope}: " + ", ".join(f"{k} {r}/{m}" for k, (r, m) in sorted(per.items()))
              + f"; Fig./Table/Eq. {fig[0]}/{fig[1]} = {fig[0] / max(fig[1], 1):.1%}")  # fmt: skip
    print("== 3. display equations: LaTeX vs Unicode text (default conversion: LaTeX source preferred)")
    default = ingest(progress=False, only=sorted(docs))  # the shared corpus with its papers.json
    fmt: Counter[str] = Counter()
    for d in default:
        for k, v in d.meta.get("math_summary", {}).items():
            fmt[k] += v
    print(
        f"  display-math blocks: {fmt['blocks']}; as LaTeX: {fmt['latex']}, as Unicode text: {fmt['unicode']}"
    )
    print(f"  numbered (with their number): {fmt['numbered']}")
    print("== 4. body chunks that are author/affiliation lists (hepilot, 512 tokens)")
    before, now, total = _front_chunks(list(docs.values()))
    print(f"  before (front matter chunked): {before}; now: {now}; of {total} chunks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
