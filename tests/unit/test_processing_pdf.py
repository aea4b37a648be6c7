"""Unit tests of hepwb.processing.pdf (synthetic PDFs built with pymupdf, plus a few real papers)."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path

import pytest

pymupdf = pytest.importorskip("pymupdf")

from hepwb.exceptions import ProcessingError  # noqa: E402
from hepwb.processing import pdf_to_document  # noqa: E402
from hepwb.processing._blocks import join_rows  # noqa: E402
from hepwb.processing._layout import clean_text  # noqa: E402
from hepwb.text.ids import content_uuid, file_sha256  # noqa: E402
from hepwb.types import Document  # noqa: E402

SHARED = Path(os.environ.get("HEPWB_SHARED", Path(__file__).resolve().parents[2].parent / "shared"))
PDF_DIR = SHARED / "corpus" / "papers" / "pdf"
QA = SHARED / "eval" / "hepqa-dev.jsonl"

BODY = [
    "Deeply virtual Compton scattering is the simplest hard exclusive process",
    "that gives access to generalised parton distributions of the nucleon and",
    "it has been measured by several experiments in the last twenty years now.",
]


def key(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKC", s).lower())


def write_lines(page, lines, x=72.0, y=100.0, size=10.0, step=None, font="helv"):
    """Insert ``lines`` one below the other; return the y after the last line."""
    step = step or size * 1.2
    for line in lines:
        page.insert_text((x, y), line, fontsize=size, fontname=font)
        y += step
    return y


def save(doc, path: Path) -> Path:
    doc.save(path)
    doc.close()
    return path


def check_invariants(doc: Document) -> None:
    md = doc.markdown
    assert md == md.strip()
    assert doc.blocks, "no blocks"
    assert doc.blocks[0].start == 0
    assert doc.blocks[-1].end == len(md)
    for a, b in zip(doc.blocks, doc.blocks[1:], strict=False):
        assert a.end <= b.start
        assert md[a.end : b.start] == "\n\n"
    n = doc.meta["pages"]
    for b in doc.blocks:
        text = doc.block_text(b)
        assert text and text == text.strip() and "\n\n" not in text
        assert 1 <= b.page <= b.page_end <= n
        if b.kind == "heading":
            assert 1 <= b.level <= 6
            assert text.startswith("#" * b.level + " ")
        else:
            assert b.level == 0


# --------------------------------------------------------------------------- synthetic PDFs


def test_meta_label_id_and_determinism(tmp_path):
    pdf = pymupdf.open()
    write_lines(pdf.new_page(), BODY)
    path = save(pdf, tmp_path / "P77_hep-ex_0000001.pdf")
    doc = pdf_to_document(path)
    again = pdf_to_document(path)
    assert doc == again
    assert doc.label == "P77"
    assert pdf_to_document(path, label="X1").label == "X1"
    sha = file_sha256(path)
    assert doc.document_id == content_uuid("document", sha)
    assert doc.meta["file_hash"] == sha
    assert doc.meta["file_size"] == path.stat().st_size
    assert doc.meta["pages"] == 1
    assert doc.meta["source_file"] == str(path)
    assert doc.meta["processor"].startswith("hepwb-pdf/") and "pymupdf" in doc.meta["processor"]
    assert "conversion_warnings" not in doc.meta
    assert pdf_to_document(path, meta={"title": "T", "pages": 99}).meta["title"] == "T"
    assert pdf_to_document(path, meta={"pages": 99}).meta["pages"] == 1  # provenance wins
    assert doc.markdown == " ".join(BODY)
    assert [b.kind for b in doc.blocks] == ["text"]
    check_invariants(doc)


def test_two_column_page_reads_left_then_right(tmp_path):
    pdf = pymupdf.open()
    page = pdf.new_page(width=612, height=792)
    page.insert_text((150, 60), "A Two Column Test Paper", fontsize=18, fontname="hebo")
    write_lines(
        page,
        ["Full width abstract text that spans the whole page from the left margin to the right."],
        x=50,
        y=100,
    )
    right = [f"Right column line {i} continues the argument here" for i in range(1, 7)]
    left = [f"Left column line {i} starts the argument of the" for i in range(1, 7)]
    write_lines(page, right, x=330, y=160)  # right column written first: stream order is wrong
    write_lines(page, left, x=50, y=160)
    doc = pdf_to_document(save(pdf, tmp_path / "T01_cols.pdf"))
    md = doc.markdown
    positions = [md.index(t) for t in (*left, *right)]
    assert positions == sorted(positions), md
    assert md.index("Full width abstract") < md.index("Left column line 1")
    assert doc.blocks[0].kind == "heading" and doc.blocks[0].level == 1
    check_invariants(doc)


def test_running_header_footer_and_page_numbers_removed(tmp_path):
    pdf = pymupdf.open()
    for i in range(1, 5):
        page = pdf.new_page(width=612, height=792)
        page.insert_text((72, 40), "Journal of Synthetic Tests 12 (2024)", fontsize=8)
        write_lines(page, [f"Page {i} body: {BODY[0]}", BODY[1], BODY[2]], y=120)
        page.insert_text((300, 770), str(i), fontsize=10)
    doc = pdf_to_document(save(pdf, tmp_path / "T02_furniture.pdf"))
    assert "Journal of Synthetic" not in doc.markdown
    assert not re.search(r"(^|\n)\d+(\n|$)", doc.markdown)
    for i in range(1, 5):
        assert f"Page {i} body" in doc.markdown
    assert [b.page for b in doc.blocks] == [1, 2, 3, 4]
    check_invariants(doc)


def test_hyphenation_spaces_and_paragraphs(tmp_path):
    pdf = pymupdf.open()
    page = pdf.new_page()
    y = write_lines(
        page,
        [
            "The exchanged vir-",
            "tual photon couples to a quark of the",
            "Deeply-",
            "Virtual Compton process.",
        ],
    )
    write_lines(page, ["A second paragraph after a blank line."], y=y + 30)
    doc = pdf_to_document(save(pdf, tmp_path / "T03_hyph.pdf"))
    texts = [doc.block_text(b) for b in doc.blocks]
    assert texts == [
        "The exchanged virtual photon couples to a quark of the Deeply-Virtual Compton process.",
        "A second paragraph after a blank line.",
    ]
    check_invariants(doc)


def test_headings_captions_and_lists(tmp_path):
    pdf = pymupdf.open()
    page = pdf.new_page()
    page.insert_text((72, 60), "Measuring Things Precisely", fontsize=20, fontname="hebo")
    page.insert_text((72, 110), "1 Introduction", fontsize=14, fontname="hebo")
    y = write_lines(page, BODY, y=135)
    page.insert_text((72, y + 20), "2.1 Detector details", fontsize=12, fontname="hebo")
    y = write_lines(page, BODY, y=y + 45)
    y = write_lines(page, ["Figure 1: The measured distribution of photons."], y=y + 25, size=9)
    page.insert_font(fontname="F0", fontbuffer=pymupdf.Font("cjk").buffer)  # has the bullet glyph
    write_lines(
        page, ["\u2022 first item of the list", "\u2022 second item of the list"], y=y + 25, font="F0"
    )
    doc = pdf_to_document(save(pdf, tmp_path / "T04_struct.pdf"))
    got = [(b.kind, b.level, doc.block_text(b)) for b in doc.blocks]
    assert got[0] == ("heading", 1, "# Measuring Things Precisely")
    assert got[1] == ("heading", 2, "## 1 Introduction")
    assert got[3] == ("heading", 3, "### 2.1 Detector details")
    # the caption floats to the end of its section, after the list
    assert got[-2] == ("list", 0, "- first item of the list\n- second item of the list")
    assert got[-1] == ("caption", 0, "Figure 1: The measured distribution of photons.")
    check_invariants(doc)


def test_line_numbers_and_rotated_stamp_removed(tmp_path):
    pdf = pymupdf.open()
    page = pdf.new_page(width=612, height=792)
    lines = [f"{BODY[i % 3]}" for i in range(8)]
    for i, line in enumerate(lines):
        y = 120 + 14 * i
        page.insert_text((30, y), str(41 + i), fontsize=5)
        page.insert_text((72, y), line, fontsize=10)
    page.insert_text((20, 600), "arXiv:1234.56789v1 [hep-ex] 1 Jan 2020", fontsize=16, rotate=90)
    doc = pdf_to_document(save(pdf, tmp_path / "T05_draft.pdf"))
    assert "arXiv" not in doc.markdown
    assert not re.search(r"\b4[1-8]\b", doc.markdown)
    assert doc.markdown == " ".join(lines)
    assert any("line numbers" in w for w in doc.meta["conversion_warnings"])


def test_text_cleaning_helpers():
    assert clean_text("e\ufb03cient \ufb01eld\u200b  and\u00a0\ufeffdata\x07") == "efficient field and data"
    assert clean_text("γ* → π0 ≥ 2σ") == "γ* → π0 ≥ 2σ"  # Greek and math symbols kept
    assert join_rows(["a vir-", "tual", "Deeply-", "Virtual", "end"]) == "a virtual Deeply-Virtual end"


# --------------------------------------------------------------------------- bad inputs


def test_missing_file(tmp_path):
    with pytest.raises(ProcessingError) as exc:
        pdf_to_document(tmp_path / "nope.pdf")
    assert exc.value.code == "PROC_NOT_FOUND"
    assert exc.value.path == str(tmp_path / "nope.pdf")
    assert "nope.pdf" in str(exc.value)


@pytest.mark.parametrize("data", [b"this is plain text, not a PDF\n", b"%PDF-1.4\n garbage garbage\n"])
def test_not_a_pdf(tmp_path, data):
    path = tmp_path / "bad.pdf"
    path.write_bytes(data)
    with pytest.raises(ProcessingError) as exc:
        pdf_to_document(path)
    assert exc.value.code == "PROC_NOT_PDF"
    assert "bad.pdf" in str(exc.value)


def test_encrypted(tmp_path):
    pdf = pymupdf.open()
    write_lines(pdf.new_page(), BODY)
    path = tmp_path / "locked.pdf"
    pdf.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="user")
    pdf.close()
    with pytest.raises(ProcessingError) as exc:
        pdf_to_document(path)
    assert exc.value.code == "PROC_ENCRYPTED"
    assert "password" in str(exc.value)


def test_zero_pages(tmp_path):
    path = tmp_path / "empty.pdf"
    path.write_bytes(
        b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
    )
    try:
        opened = pymupdf.open(path, filetype="pdf")
    except Exception:
        pytest.skip("this pymupdf cannot open a zero-page PDF")
    if opened.page_count != 0:
        pytest.skip("this pymupdf repairs the zero-page PDF into pages")
    opened.close()
    with pytest.raises(ProcessingError) as exc:
        pdf_to_document(path)
    assert exc.value.code == "PROC_EMPTY"


def test_image_only_needs_ocr(tmp_path):
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
    pix.set_rect(pix.irect, (200, 30, 30))
    pdf = pymupdf.open()
    pdf.new_page().insert_image(pymupdf.Rect(72, 72, 272, 272), pixmap=pix)
    path = save(pdf, tmp_path / "scan.pdf")
    with pytest.raises(ProcessingError) as exc:
        pdf_to_document(path)
    assert exc.value.code == "PROC_NO_TEXT"
    assert "OCR" in str(exc.value)


# --------------------------------------------------------------------------- real papers


def _real(label: str) -> Path:
    if not PDF_DIR.is_dir():
        pytest.skip(f"shared test material not found at {SHARED} (set HEPWB_SHARED)")
    found = sorted(PDF_DIR.glob(f"{label}_*.pdf"))
    if not found:
        pytest.skip(f"{label} not in {PDF_DIR}")
    return found[0]


@pytest.mark.shared
@pytest.mark.parametrize("label", ["P01", "P18", "P23"])
def test_real_papers_offsets_and_quotes(label):
    path = _real(label)
    doc = pdf_to_document(path)
    check_invariants(doc)
    assert doc.label == label
    assert any(b.kind == "heading" and b.level == 1 for b in doc.blocks)
    assert doc == pdf_to_document(path)
    assert "arXiv:hep-ex" not in doc.markdown  # vertical stamp of P01 removed
    if QA.is_file():
        mk = key(doc.markdown)
        with QA.open(encoding="utf-8") as fh:
            quotes = [
                ev["quote"]
                for line in fh
                if line.strip()
                for ev in json.loads(line)["evidence"]
                if ev["doc"] == label
            ]
        assert quotes
        assert [q for q in quotes if key(q) not in mk] == []


@pytest.mark.shared
def test_real_draft_line_numbers_removed():
    doc = pdf_to_document(_real("P18"))
    assert "Throughout the last few decades, the field of HEP" in doc.markdown
    assert "## 1 Introduction" in doc.markdown
    assert any("line numbers" in w for w in doc.meta.get("conversion_warnings", []))
