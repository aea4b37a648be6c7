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


def test_text_selected_in_the_browser_is_added_as_evidence(tmp_path):
    from hepwb.evaluation.questions import load_questions

    a = markdown_document(
        "# Alpha\n\nThe fitted amplitude is 0.42 with an error of 0.05.", "A1", meta={"pages": 2}
    )
    b = markdown_document("# Beta\n\nSecond paper.", "B2")
    path = tmp_path / "mine.jsonl"
    br = DocumentBrowser([a, b], question_file=path)
    assert br.marker.file.value == str(path) and list(br.marker.existing.options) == [("new question", "")]
    br.view.selection = "fitted amplitude\n  is 0.42"  # what the page's script sends when text is selected
    assert br.marker.selected.value == "fitted amplitude is 0.42"
    br.marker.question.value = "What amplitude does the fit give?"
    br.marker.button.click()
    assert f"added to {path}: A1-01 (page 1)" in br.marker.status.value
    (q,) = load_questions(path)
    assert [(e.doc, e.page, e.quote) for e in q.evidence] == [("A1", 1, "fitted amplitude is 0.42")]
    assert [v for _, v in br.marker.existing.options] == ["", "A1-01"]
    br.marker.button.click()
    assert "already quotes" in br.marker.status.value and len(load_questions(path)[0].evidence) == 1
    br.paper.value = "B2"  # another page: the passage selected on the last one is forgotten
    assert br.marker.selected.value == "" and br.view.selection == ""
    br.marker.existing.value = "A1-01"
    assert br.marker.question.value == "What amplitude does the fit give?" and br.marker.question.disabled
