from __future__ import annotations

import pytest

from hepwb.exceptions import ConfigError
from hepwb.processing.markdown import markdown_document
from hepwb.viz import KIND_COLOURS, DocumentBrowser, page_image_png, page_view_html
from tests.helpers import SAMPLE_MD


def _pdf(tmp_path):
    import pymupdf

    d = pymupdf.open()
    for i in range(2):
        d.new_page().insert_text((72, 72), f"Page {i + 1} text.")
    path = tmp_path / "T01_demo.pdf"
    d.save(str(path))
    return path


def test_page_view_colours_blocks_by_kind_and_embeds_the_page(tmp_path):
    doc = markdown_document(SAMPLE_MD, "S1")
    html = page_view_html(doc, 1, pdf=_pdf(tmp_path))
    for kind in ("heading", "math", "table", "code"):
        assert KIND_COLOURS[kind] in html
    assert "data:image/png;base64," in html
    assert "-t &lt; 0.7" in html and "A_{LU}" in html  # block text is shown, HTML-escaped


def test_page_image_rejects_bad_page(tmp_path):
    assert page_image_png(_pdf(tmp_path), 2)[:4] == b"\x89PNG"
    with pytest.raises(ConfigError, match=r"outside 1\.\.2"):
        page_image_png(_pdf(tmp_path), 3)


def test_browser_updates_on_paper_and_page_change():
    a = markdown_document("# Alpha\n\nFirst paper.", "A1", meta={"pages": 1})
    b = markdown_document("# Beta\n\nSecond paper.", "B2", meta={"pages": 3})
    br = DocumentBrowser([a, b])
    assert "Alpha" in br.view.value and br.page.max == 1
    br.paper.value = "B2"
    assert "Beta" in br.view.value and br.page.max == 3
    br.page.value = 3
    assert "page 3" in br.view.value and "no block starts on this page" in br.view.value
    with pytest.raises(ConfigError, match="choose one of"):
        DocumentBrowser([a], label="ZZ")
