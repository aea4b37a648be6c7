"""Bad inputs get a logged error entry (code, file, what to do) and never stop the other documents."""

from __future__ import annotations

import json

import pymupdf
import pytest

from hepwb.experiment import build_chunkset, ingest
from hepwb.hepilot import ProcessingLog, validate_tree
from hepwb.paths import Layout
from tests.helpers import SCHEMAS


def _text_pdf(path, text="A good paper about the beam-spin asymmetry."):
    d = pymupdf.open()
    d.new_page().insert_text((72, 72), text)
    d.save(str(path))


@pytest.fixture
def messy_corpus(tmp_path):
    c = tmp_path / "corpus"
    c.mkdir()
    _text_pdf(c / "A01_good.pdf")
    good = (c / "A01_good.pdf").read_bytes()
    (c / "B02_corrupt.pdf").write_bytes(good[: len(good) // 3])  # truncated download
    (c / "C03_empty.pdf").write_bytes(b"")
    (c / "D04_notpdf.pdf").write_text("<html>an error page saved as .pdf</html>")
    d = pymupdf.open()
    d.new_page().insert_text((72, 72), "secret")
    d.save(str(c / "E05_encrypted.pdf"), encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="pw")
    img = pymupdf.open()
    page = img.new_page()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
    pix.set_rect(pix.irect, (200, 10, 10))
    page.insert_image(pymupdf.Rect(72, 72, 200, 200), pixmap=pix)
    img.save(str(c / "F06_scan.pdf"))
    _text_pdf(c / "G07_good.pdf", "Another good paper on deeply virtual Compton scattering.")
    return c


def test_every_bad_file_is_logged_and_the_good_ones_processed(messy_corpus, tmp_path):
    log = ProcessingLog()
    layout = Layout(tmp_path / "home")
    docs = ingest(messy_corpus, layout=layout, log=log, progress=False)
    assert [d.label for d in docs] == ["A01", "G07"]
    codes = {e.context["file_path"].rsplit("/", 1)[-1]: e.error_code for e in log.errors}
    assert codes["C03_empty.pdf"] in {"PROC_NOT_PDF", "PROC_EMPTY"}
    assert codes["D04_notpdf.pdf"] == "PROC_NOT_PDF"
    assert codes["E05_encrypted.pdf"] == "PROC_ENCRYPTED"
    assert codes["F06_scan.pdf"] == "PROC_NO_TEXT"
    assert "B02_corrupt.pdf" in codes  # truncated: unreadable or no text, but always reported
    for e in log.errors:  # each names the file and says what to do
        assert e.recovery_action
        assert e.context["file_path"] in e.message, e.message
    cs = build_chunkset(docs, layout=layout, log=log, progress=False, chunk_size=64, tokenizer="words")
    entries = json.loads((cs.root / "processing_log.json").read_text())
    assert {e["error_code"] for e in entries if e["level"] == "error"} >= {"PROC_ENCRYPTED", "PROC_NO_TEXT"}
    assert not validate_tree(cs.root, SCHEMAS)


def test_converting_twice_gives_identical_bytes(messy_corpus, tmp_path):
    a = ingest(messy_corpus, layout=Layout(tmp_path / "a"), only=["A01", "G07"], progress=False)
    b = ingest(messy_corpus, layout=Layout(tmp_path / "b"), only=["A01", "G07"], progress=False)
    assert [(d.document_id, d.markdown, d.blocks) for d in a] == [
        (d.document_id, d.markdown, d.blocks) for d in b
    ]
    ca = build_chunkset(a, layout=Layout(tmp_path / "a"), progress=False, chunk_size=64, tokenizer="words")
    cb = build_chunkset(b, layout=Layout(tmp_path / "b"), progress=False, chunk_size=64, tokenizer="words")
    files_a = sorted(p.relative_to(ca.root) for p in ca.root.rglob("*.md"))
    assert files_a == sorted(p.relative_to(cb.root) for p in cb.root.rglob("*.md"))
    assert all((ca.root / f).read_bytes() == (cb.root / f).read_bytes() for f in files_a)
