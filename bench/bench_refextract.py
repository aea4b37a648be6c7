"""Compare INSPIRE's ``refextract`` with hepwb's own reference parser on the corpus PDFs.

Usage: ``python -m bench.bench_refextract [--docs P01,P23] [--json OUT] [--no-latex]``

For every PDF under ``corpus/papers/pdf`` of the shared material it runs

- hepwb: :func:`hepwb.processing.pdf_to_document` (the whole conversion: layout, bibliography
  detection in ``_refs``/``_bibtail``, CSL parsing in ``references``, marker linking in ``xrefs``);
  entries are ``meta["references"]``, ids their ``number`` (arXiv) and ``DOI``, markers the
  ``citation`` mentions of ``meta["xrefs"]`` and those with a ``target``;
- refextract: ``extract_references_from_file`` (pdftotext + its own parser), in a separate
  interpreter (``$HEPWB_REFEXTRACT_PYTHON``, default ``/tmp/refx-venv/bin/python``) so its pins
  stay out of hepwb's venv; ids are its ``arxiv_eprint``/``reportnumber`` (arXiv form) and
  ``doi`` fields; it does not link markers in the text, it only returns each entry's
  ``linemarker``; it also reads the PDF's link annotations (``url``, ``texkey``) when their count
  matches its entries, so DOIs/arXiv ids that are only hyperlinks count for it. Column "rx-tgt"
  re-links hepwb's own citation mentions to refextract's linemarkers (what marker resolution
  would give with refextract's entries as targets);
- refextract's parser alone on hepwb's entry texts (``extract_references_from_string``, one entry a
  line): whether it would beat ``references.py`` on ids given the same entries ("hw+rx" ids).

Where LaTeX sources exist (P23-P32) a truth bibliography is read from them: ``\\bibitem``s of a
``.bbl`` or of the ``.tex`` files (comments and ``comment`` environments removed), else the cited
keys found in the ``.bib``, else (``.bib`` not in the corpus) the distinct cited keys, count only.
arXiv ids and DOIs in the truth entries give id recall. hepwb's LaTeX converter's entry count and
ids are reported beside it (``--no-latex`` skips it).

Times: hepwb's is the whole PDF conversion (references are not separable from layout analysis);
refextract's is the call itself, interpreter start and import excluded (reported apart).

Writes a markdown table to stdout and JSON to ``reports/bench/refextract.json`` (or ``--json``).
Exits 2 with a one-line message when refextract (or its pdftotext) is not available; exits 0
with a message when the shared corpus is not found.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPORTS, shared_material
from bench.refextract_ids import hepwb_ids, recall, refx_entries, refx_ids, text_ids, truth_for
from hepwb.files.io import write_json
from hepwb.processing import latex_to_document, pdf_to_document

DEFAULT_PY = "/tmp/refx-venv/bin/python"
OUT_JSON = REPORTS / "refextract.json"

_CHECK = r"""
import importlib.metadata as md, json
import refextract
from refextract.references.config import CFG_PATH_PDFTOTEXT
print(json.dumps({"version": md.version("refextract"), "pdftotext": CFG_PATH_PDFTOTEXT}))
"""

_WORKER = r"""
import json, logging, sys, time
logging.disable(logging.CRITICAL)
pdf, entries, out = sys.argv[1:4]
t0 = time.perf_counter()
from refextract import extract_references_from_file, extract_references_from_string
res = {"import_s": time.perf_counter() - t0}
t1 = time.perf_counter()
try:
    res["refs"] = extract_references_from_file(pdf)
except Exception as exc:
    res["error"] = f"{type(exc).__name__}: {exc}"
res["seconds"] = time.perf_counter() - t1
text = open(entries, encoding="utf-8").read()
if text.strip():
    t2 = time.perf_counter()
    try:
        res["string_refs"] = extract_references_from_string(text, is_only_references=True)
    except Exception as exc:
        res["string_error"] = f"{type(exc).__name__}: {exc}"
    res["string_seconds"] = time.perf_counter() - t2
with open(out, "w", encoding="utf-8") as fh:
    json.dump(res, fh)
"""


def check_refextract(py: str) -> dict[str, Any]:
    """Version and pdftotext of the refextract interpreter, or exit 2 with a one-line reason."""
    hint = "create it with: python3.11 -m venv /tmp/refx-venv && /tmp/refx-venv/bin/pip install refextract"
    if not Path(py).exists():
        sys.exit(f"refextract not available: {py} not found (set HEPWB_REFEXTRACT_PYTHON; {hint})")
    try:
        proc = subprocess.run([py, "-c", _CHECK], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        sys.exit(f"refextract not available: {py} cannot run ({exc})")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        sys.exit(f"refextract not available in {py}: {last} ({hint})")
    info: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if not info.get("pdftotext"):
        sys.exit("refextract is installed but pdftotext is missing: apt-get install -y poppler-utils")
    return info


def run_refextract(py: str, pdf: Path, entries: list[str], timeout: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hepwb-refx-") as tmp:
        ent, out = Path(tmp) / "entries.txt", Path(tmp) / "out.json"
        ent.write_text("\n".join(" ".join(e.split()) for e in entries) + "\n", encoding="utf-8")
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [py, "-c", _WORKER, str(pdf), str(ent), str(out)],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout} s", "wall_s": timeout}
        wall = time.perf_counter() - t0
        if not out.exists():
            last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            return {"error": last, "wall_s": wall}
        res: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        res["wall_s"] = wall
        return res


def measure(pdf: Path, tex: Path | None, py: str, timeout: int, latex: bool) -> dict[str, Any]:
    """One paper: hepwb's and refextract's entries, ids, markers and times (and the LaTeX truth)."""
    row: dict[str, Any] = {"paper": pdf.stem.split("_", 1)[0], "file": pdf.name}
    t0 = time.perf_counter()
    try:
        doc = pdf_to_document(pdf)
        hw_err = None
    except Exception as exc:  # report, do not stop the run
        doc, hw_err = None, f"{type(exc).__name__}: {exc}"
    row["hepwb_s"] = round(time.perf_counter() - t0, 2)
    refs = list(doc.meta.get("references") or []) if doc else []
    cites = [x for x in (doc.meta.get("xrefs") or []) if x["kind"] == "citation"] if doc else []
    ha, hd = hepwb_ids(refs)
    notes = " \n".join(str(r.get("note", "")) for r in refs)
    ta, td = text_ids(notes)
    row["hepwb"] = {
        "error": hw_err,
        "entries": len(refs),
        "arxiv": sorted(ha),
        "doi": sorted(hd),
        "arxiv_in_entry_text": len(ta),
        "doi_in_entry_text": len(td),
        "citation_mentions": len(cites),
        "citation_resolved": sum(1 for c in cites if c.get("target")),
        "entries_cited": len({c["target"] for c in cites if c.get("target")}),
    }
    rx = run_refextract(py, pdf, [str(r.get("note", "")) for r in refs], timeout)
    rrefs = rx.get("refs") or []
    ra, rd = refx_ids(rrefs)
    marks = {m for r in rrefs for m in r.get("linemarker", []) if m}
    ta2, td2 = text_ids(" \n".join(" ".join(r.get("raw_ref", [])) for r in rrefs))
    row["refextract"] = {
        "error": rx.get("error"),
        "records": len(rrefs),
        "entries": refx_entries(rrefs),
        "arxiv": sorted(ra),
        "doi": sorted(rd),
        "arxiv_in_entry_text": len(ta2),
        "doi_in_entry_text": len(td2),
        "entries_with_linemarker": refx_entries([r for r in rrefs if any(r.get("linemarker", []))]),
        "texkeys_from_pdf_links": sum(1 for r in rrefs if r.get("texkey")),
        "hepwb_mentions_resolved_to_linemarkers": sum(1 for c in cites if str(c["number"]) in marks),
        "seconds": round(rx.get("seconds", 0.0), 2),
        "import_s": round(rx.get("import_s", 0.0), 2),
        "wall_s": round(rx.get("wall_s", 0.0), 2),
    }
    srefs = rx.get("string_refs") or []
    sa, sd = refx_ids(srefs)
    row["refextract_on_hepwb_entries"] = {
        "error": rx.get("string_error"),
        "entries": refx_entries(srefs),
        "arxiv": sorted(sa),
        "doi": sorted(sd),
        "seconds": round(rx.get("string_seconds", 0.0), 2),
    }
    if tex is not None:
        truth = truth_for(tex)
        row["truth"] = truth
        row["truth"]["folder"] = tex.name
        for key, (a, d) in (
            ("hepwb", (ha, hd)),
            ("refextract", (ra, rd)),
            ("refextract_on_hepwb_entries", (sa, sd)),
        ):
            row[key]["arxiv_recall"] = recall(a, truth["arxiv"])
            row[key]["doi_recall"] = recall(d, truth["doi"])
        if latex:
            t1 = time.perf_counter()
            try:
                ldoc = latex_to_document(tex, pdf=pdf)
                lrefs = list(ldoc.meta.get("references") or [])
                la, ld = hepwb_ids(lrefs)
                lc = [x for x in (ldoc.meta.get("xrefs") or []) if x["kind"] == "citation"]
                row["hepwb_latex"] = {
                    "entries": len(lrefs),
                    "arxiv": sorted(la),
                    "doi": sorted(ld),
                    "arxiv_recall": recall(la, truth["arxiv"]),
                    "doi_recall": recall(ld, truth["doi"]),
                    "citation_mentions": len(lc),
                    "citation_resolved": sum(1 for c in lc if c.get("target")),
                }
            except Exception as exc:
                row["hepwb_latex"] = {"error": f"{type(exc).__name__}: {exc}"}
            row["hepwb_latex"]["seconds"] = round(time.perf_counter() - t1, 2)
    return row


# --- report ------------------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| paper | truth | hw ent | rx ent (rec) | hw arXiv | rx arXiv | hw+rx arXiv | hw DOI | rx DOI "
        "| hw+rx DOI "
        "| hw cites res/ment | rx linemarked | rx-tgt res | hw s | rx s |"
    )
    lines = [head, "|" + "---|" * 15]
    tot: dict[str, float] = {}

    def add(k: str, v: float) -> float:
        tot[k] = tot.get(k, 0) + v
        return v

    for r in rows:
        h, x, s = r["hepwb"], r["refextract"], r["refextract_on_hepwb_entries"]
        t = r.get("truth")
        truth = str(t["count"]) if t else "-"
        rx_ent = "ERR" if x["error"] else f"{add('rx', x['entries'])} ({add('rxr', x['records'])})"
        lines.append(
            f"| {r['paper']} | {truth} | {add('hw', h['entries'])} | {rx_ent} "
            f"| {add('ha', len(h['arxiv']))} | {add('ra', len(x['arxiv']))} | {add('sa', len(s['arxiv']))} "
            f"| {add('hd', len(h['doi']))} | {add('rd', len(x['doi']))} | {add('sd', len(s['doi']))} "
            f"| {add('hr', h['citation_resolved'])}/{add('hm', h['citation_mentions'])} "
            f"| {add('rl', x['entries_with_linemarker'])} "
            f"| {add('rt', x['hepwb_mentions_resolved_to_linemarkers'])} "
            f"| {add('hs', r['hepwb_s']):.1f} | {add('rs', x['seconds']):.1f} |"
        )
    g = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in tot.items()}
    lines.append(
        f"| **total** | | {g.get('hw', 0)} | {g.get('rx', 0)} ({g.get('rxr', 0)}) | {g.get('ha', 0)} "
        f"| {g.get('ra', 0)} | {g.get('sa', 0)} | {g.get('hd', 0)} | {g.get('rd', 0)} | {g.get('sd', 0)} "
        f"| {g.get('hr', 0)}/{g.get('hm', 0)} "
        f"| {g.get('rl', 0)} | {g.get('rt', 0)} | {tot.get('hs', 0):.1f} | {tot.get('rs', 0):.1f} |"
    )
    return "\n".join(lines)


def truth_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| paper | truth source | truth n | truth arXiv/DOI | hw ent | rx ent | latex ent "
        "| arXiv recall hw / rx / hw+rx / latex | DOI recall hw / rx / hw+rx / latex |",
        "|" + "---|" * 9,
    ]
    for r in rows:
        t = r.get("truth")
        if not t:
            continue
        h, x, s, lx = r["hepwb"], r["refextract"], r["refextract_on_hepwb_entries"], r.get("hepwb_latex", {})
        ids = "-" if t["arxiv"] is None else f"{len(t['arxiv'])}/{len(t['doi'])}"
        lines.append(
            f"| {r['paper']} | {t['source']} | {t['count']} | {ids} | {h['entries']} | {x['entries']} "
            f"| {lx.get('entries', 'ERR' if lx.get('error') else '-')} "
            f"| {_pct(h.get('arxiv_recall'))} / {_pct(x.get('arxiv_recall'))} "
            f"/ {_pct(s.get('arxiv_recall'))} "
            f"/ {_pct(lx.get('arxiv_recall'))} "
            f"| {_pct(h.get('doi_recall'))} / {_pct(x.get('doi_recall'))} / {_pct(s.get('doi_recall'))} "
            f"/ {_pct(lx.get('doi_recall'))} |"
        )
    return "\n".join(lines)


def anomalies(rows: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for r in rows:
        h, x = r["hepwb"], r["refextract"]
        p = r["paper"]
        for name, res in (
            ("hepwb", h),
            ("refextract", x),
            ("refextract(string)", r["refextract_on_hepwb_entries"]),
        ):
            if res.get("error"):
                out.append(f"{p}: {name} error: {res['error']}")
        a, b = h["entries"], x["entries"]
        if abs(a - b) > max(3, 0.2 * max(a, b)):
            out.append(f"{p}: entry counts differ: hepwb {a}, refextract {b} ({x['records']} records)")
        t = r.get("truth")
        if t and t["count"]:
            for name, n in (("hepwb", a), ("refextract", b)):
                if abs(n - t["count"]) > max(2, 0.1 * t["count"]):
                    out.append(f"{p}: {name} {n} entries vs truth {t['count']} ({t['source']})")
        if h["citation_mentions"] and h["citation_resolved"] < 0.8 * h["citation_mentions"]:
            out.append(f"{p}: hepwb resolved only {h['citation_resolved']}/{h['citation_mentions']} markers")
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure and print the tables; returns 0 (2 when refextract is not available)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", default="", help="comma-separated labels (default: all)")
    ap.add_argument("--json", type=Path, default=OUT_JSON, help=f"JSON output (default {OUT_JSON})")
    ap.add_argument("--timeout", type=int, default=600, help="seconds allowed per refextract call")
    ap.add_argument("--no-latex", action="store_true", help="skip hepwb's LaTeX converter on P23-P32")
    args = ap.parse_args(argv)
    py = os.environ.get("HEPWB_REFEXTRACT_PYTHON", DEFAULT_PY)
    info = check_refextract(py)
    pdf_dir = shared_material("corpus", "papers", "pdf")
    if pdf_dir is None:
        return 0
    tex_dir = pdf_dir.parent / "tex"
    want = {d for d in args.docs.split(",") if d}
    texs = {p.name.split("_", 1)[0]: p for p in tex_dir.iterdir() if p.is_dir()} if tex_dir.is_dir() else {}
    pdfs = [p for p in sorted(pdf_dir.glob("*.pdf")) if not want or p.stem.split("_", 1)[0] in want]
    if pdfs:  # warm-up (imports, font tables) so the first paper's time is not inflated
        pdf_to_document(pdfs[0])
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for pdf in pdfs:
        label = pdf.stem.split("_", 1)[0]
        row = measure(pdf, texs.get(label), py, args.timeout, not args.no_latex)
        rows.append(row)
        print(
            f"{label}: hepwb {row['hepwb']['entries']} entries {row['hepwb_s']} s, refextract "
            f"{row['refextract']['entries']} entries {row['refextract']['seconds']} s",
            file=sys.stderr,
            flush=True,
        )
    total = time.perf_counter() - t0
    print(f"refextract {info['version']} (pdftotext {info['pdftotext']}) vs hepwb, {len(rows)} PDFs\n")
    print(table(rows))
    print(
        "\nhw = hepwb pdf_to_document; rx = refextract extract_references_from_file; hw+rx = refextract's "
        "parser on hepwb's entry texts; ids are distinct per paper; rx-tgt = hepwb's citation mentions whose "
        "number is a refextract linemarker; hw s = whole hepwb conversion, rx s = refextract call only.\n"
    )
    print(truth_table(rows))
    notes = anomalies(rows)
    if notes:
        print("\nAnomalies:")
        print("\n".join(f"- {n}" for n in notes))
    print(f"\nTotal bench time {total:.0f} s")
    result = {
        "refextract": info,
        "python": py,
        "total_s": round(total, 1),
        "papers": rows,
        "anomalies": notes,
    }
    write_json(args.json, result)
    print(f"JSON written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
