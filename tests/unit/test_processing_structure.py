"""Display math, tables and references of hepwb.processing.pdf (synthetic PDFs and real papers)."""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from pathlib import Path

import pytest

pymupdf = pytest.importorskip("pymupdf")

from hepwb.processing import pdf_to_document  # noqa: E402
from hepwb.processing.markdown import parse_blocks  # noqa: E402
from hepwb.processing.references import parse_references  # noqa: E402
from tests.helpers import PDF_DIR, QUESTIONS  # noqa: E402

PROSE = [
    "Deeply virtual Compton scattering is the simplest hard exclusive process that",
    "gives access to generalised parton distributions of the nucleon, and the cross",
    "section of the process is written in the usual form as follows:",
]
AFTER = [
    "where the mass is the rest mass of the particle and the velocity of light is c in",
    "the vacuum, as measured by several experiments in the last twenty years now.",
]


def key(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKC", s).lower())


def lines(page, texts, y, x=72.0, step=12.0):
    for t in texts:
        page.insert_text((x, y), t, fontsize=10)
        y += step
    return y


def paper(tmp_path: Path) -> Path:
    """One page: prose, a numbered equation, prose, a captioned table, prose, a bibliography."""
    pdf = pymupdf.open()
    page = pdf.new_page()
    y = lines(page, PROSE, 100) + 8
    page.insert_text((250, y), "E = m c", fontsize=10)
    page.insert_text((520, y), "(1)", fontsize=10)
    y = lines(page, AFTER, y + 20) + 10
    y = lines(page, ["Table 1: Yields per bin."], y) + 4
    for cells in [("bin", "N", "A"), ("1", "10", "0.12"), ("2", "20", "0.25"), ("3", "30", "0.31")]:
        for i, c in enumerate(cells):
            page.insert_text((150 + 90 * i, y), c, fontsize=10)
        y += 12
    y = lines(page, ["The asymmetry is negative in all bins and agrees with the model predictions."], y + 10)
    page.insert_text((72, y + 20), "References", fontsize=14)
    refs = [
        "[1] X. Ji, Phys. Rev. Lett. 78 (1997) 610, hep-ph/9603249.",
        "[2] A. V. Radyushkin, Phys. Rev. D 56 (1997) 5524.",
        '[3] CMS Collaboration, "Measurement of something", JHEP 07 (2020) 125, arXiv:2001.01234.',
    ]
    lines(page, refs, y + 44)
    path = tmp_path / "P90_synthetic.pdf"
    pdf.save(path)
    pdf.close()
    return path


def test_equation_table_and_references(tmp_path):
    doc = pdf_to_document(paper(tmp_path))
    kinds = [b.kind for b in doc.blocks]
    assert kinds == ["text", "math", "text", "caption", "table", "text", "heading", *["reference"] * 3]
    texts = [doc.block_text(b) for b in doc.blocks]
    assert texts[1] == "$$\nE = m c (1)\n$$"
    assert texts[3] == "Table 1: Yields per bin."
    assert texts[4].splitlines() == [
        "| bin | N | A |",
        "|---|---|---|",
        "| 1 | 10 | 0.12 |",
        "| 2 | 20 | 0.25 |",
        "| 3 | 30 | 0.31 |",
    ]
    assert texts[7].startswith("[1] X. Ji")
    # the markdown parser sees the same atomic blocks
    parsed = [(b.kind, doc.markdown[b.start : b.end]) for b in parse_blocks(doc.markdown)]
    assert ("math", texts[1]) in parsed
    assert ("table", texts[4]) in parsed
    refs = doc.meta["references"]
    assert [r["id"] for r in refs] == ["ref-1", "ref-2", "ref-3"]
    assert refs[0]["container-title"] == "Phys. Rev. Lett."
    assert refs[0]["issued"] == {"date-parts": [[1997]]}
    assert refs[1]["author"] == [{"family": "Radyushkin", "given": "A. V."}]
    assert refs[2]["title"] == "Measurement of something"
    assert refs[2]["URL"] == "https://arxiv.org/abs/2001.01234"
    assert all(r["note"] for r in refs)
    assert not any(b.retrievable for b in doc.blocks if b.kind == "reference")


def test_inline_math_stays_in_paragraph(tmp_path):
    pdf = pymupdf.open()
    page = pdf.new_page()
    lines(page, ["The asymmetry A = 0.23 ± 0.04 is measured with the positron beam and it", *AFTER], 100)
    path = tmp_path / "P91_inline.pdf"
    pdf.save(path)
    pdf.close()
    doc = pdf_to_document(path)
    assert [b.kind for b in doc.blocks] == ["text"]


def test_parse_references_never_crashes():
    items = parse_references(
        ["", "garbage ((( [", "[7] D. Müller et al., Fortsch. Phys. 42 (1994) 101.", "1" * 500]
    )
    assert [i["id"] for i in items] == ["ref-1", "ref-2", "ref-3", "ref-4"]
    assert items[2]["author"] == [{"family": "Müller", "given": "D."}]
    assert items[2]["volume"] == "42" and items[2]["page"] == "101"
    assert items[1]["note"] == "garbage ((( ["


# --------------------------------------------------------------------------- real papers


def real(label: str) -> Path:
    found = sorted(PDF_DIR.glob(f"{label}_*.pdf"))
    if not found:
        pytest.skip(f"shared test material not found at {PDF_DIR} (set HEPWB_SHARED)")
    return found[0]


@pytest.mark.shared
def test_real_equations_tables_references():
    doc = pdf_to_document(real("P32"))
    maths = [doc.block_text(b) for b in doc.blocks if b.kind == "math" and b.page == 6]
    assert any("(4.1)" in m and m.startswith("$$\n") and m.endswith("\n$$") for m in maths)
    doc = pdf_to_document(real("P24"))
    tables = [doc.block_text(b) for b in doc.blocks if b.kind == "table"]
    assert any(t.startswith("| Settings | Peak Linst |") for t in tables)
    doc = pdf_to_document(real("P01"))
    refs = doc.meta["references"]
    assert len(refs) >= 10
    assert refs[0]["container-title"] == "Phys. Rev. Lett." and refs[0]["volume"] == "78"


@pytest.mark.shared
def test_real_figure_tick_labels_are_figure_text_not_running_text():
    doc = pdf_to_document(real("P01"))
    figure_text = [doc.block_text(b) for b in doc.blocks if b.kind == "figure_text"]
    # Fig. 3's axes (asymmetry ticks, phi ticks, the axis title) and Fig. 4's legend
    assert {"-0.6", "-3 -2 -1 0 1 2 3", "φ (rad)", "λBeam = +1 λBeam = -1", "Mx (GeV)"} <= set(figure_text)
    body = "\n\n".join(doc.block_text(b) for b in doc.blocks if b.retrievable)
    assert "-3 -2 -1 0 1 2 3" not in body and "λBeam = +1" not in body
    # the running text around the figures reads on without them
    assert "In Fig. 3, the azimuthal dependence of the measured beam-spin asymmetry ALU is shown" in body
    for a, b in itertools.pairwise(doc.blocks):  # figure text travels with the captions to the section end
        if a.kind == "figure_text":
            assert b.kind in ("figure_text", "caption", "heading", "reference"), doc.block_text(b)[:80]
    # sentences a figure region reaches stay running text
    p03 = pdf_to_document(real("P03"))
    assert any(
        "single γ production was determined using equation:" in p03.block_text(b)
        for b in p03.blocks
        if b.kind == "text"
    )


@pytest.mark.shared
def test_real_determinism():
    a, b = pdf_to_document(real("P08")), pdf_to_document(real("P08"))
    assert a.markdown == b.markdown
    assert a.blocks == b.blocks
    assert json.dumps(a.meta["references"]) == json.dumps(b.meta["references"])


@pytest.mark.heavy
@pytest.mark.shared
def test_quote_rate_all_papers():
    if not QUESTIONS.is_file():
        pytest.skip(f"shared test material not found at {QUESTIONS} (set HEPWB_SHARED)")
    quotes: dict[str, list[str]] = {}
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            for ev in json.loads(line)["evidence"]:
                quotes.setdefault(ev["doc"], []).append(key(ev["quote"]))
    total = strict = retrievable = 0
    for pdf in sorted(PDF_DIR.glob("*.pdf")):
        doc = pdf_to_document(pdf)
        for a, b in zip(doc.blocks, doc.blocks[1:], strict=False):
            assert a.end + 2 == b.start and doc.markdown[a.end : b.start] == "\n\n"
        mk = key(doc.markdown)
        body = key(" ".join(doc.block_text(b) for b in doc.blocks if b.retrievable))
        qs = quotes.get(doc.label, [])
        total += len(qs)
        strict += sum(q in mk for q in qs)
        retrievable += sum(q in body for q in qs)
    if not total:
        pytest.skip("no evidence quotes found")
    assert strict / total >= 0.99
    assert retrievable / total >= 0.99
