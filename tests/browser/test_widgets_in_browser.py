"""The explorer notebooks as a user sees them: JupyterLab in headless Chromium, widgets driven by hand."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import open_and_run, parameterized, screenshot
from tests.helpers import tiny_corpus

pytestmark = pytest.mark.browser


def _chunk_count(explorer) -> int:
    text = explorer.locator(".hw-summary").inner_text()
    return int(re.search(r"(\d+) chunks", text).group(1))


def test_chunk_explorer_rechunks_when_the_slider_moves(browser, lab):
    corpus, _ = tiny_corpus(lab["root"])
    nb = parameterized(
        "50-chunk-explorer.ipynb",
        lab["root"],
        corpus=str(corpus),
        paper="A01",
        chunk_size=256,
        home=str(lab["root"]),
    )
    page = open_and_run(browser, lab, nb)
    explorer = page.locator(".widget-vbox", has=page.locator(".hw-summary")).last
    explorer.wait_for(timeout=60_000)
    before = _chunk_count(explorer)
    spans_before = explorer.locator(".hw-label").count()
    assert spans_before == before >= 1
    # every paper of the corpus is in the list, and the view opens on the body, front matter collapsed
    assert explorer.locator("select").first.locator("option").all_inner_texts() == ["A01", "B02", "C03"]
    # move the chunk-size slider to its smallest value with the keyboard, as a user can
    slider = explorer.locator(".widget-slider", has_text="chunk size")
    readout = slider.locator(".widget-readout")
    assert readout.inner_text().strip() == "256"
    histogram = explorer.locator(".widget-output img").first.get_attribute("src")
    handle = slider.get_by_role("slider")
    handle.focus()
    page.keyboard.press("Home")
    # wait for the whole redraw (summary, view and readout), not only its first part
    page.wait_for_function(
        "([el, n, png]) => { const p = el.querySelector('.hw-summary');"
        " const m = p && p.innerText.match(/(\\d+) chunks/); if (!m || Number(m[1]) === n) return false;"
        " const r = el.querySelector('.widget-readout'); const img = el.querySelector('.widget-output img');"
        " return el.querySelectorAll('.hw-label').length === Number(m[1])"
        "   && r && r.innerText.trim() === '64' && img && img.getAttribute('src') !== png; }",
        arg=[explorer.element_handle(), before, histogram],
        timeout=60_000,
    )
    after = _chunk_count(explorer)
    assert readout.inner_text().strip() == "64"
    assert after > before
    assert explorer.locator(".hw-label").count() == after != spans_before
    assert explorer.locator(".hw-chunk, [data-chunks]").count() >= after
    screenshot(page, "chunk-explorer.png", explorer)
    page.close()


def test_retriever_comparison_fills_both_columns(browser, lab):
    corpus, _ = tiny_corpus(lab["root"])
    nb = parameterized(
        "60-compare-retrievers.ipynb",
        lab["root"],
        question="What does the far detector contain?",
        retrievers=["bm25", "dense"],
        chunker="hepilot",
        chunk_size=64,
        corpus=str(corpus),
        max_docs=None,
        k=3,
        home=str(lab["root"]),
    )
    page = open_and_run(browser, lab, nb)
    explorer = page.locator(".widget-vbox", has=page.locator(".widget-text input")).last
    explorer.wait_for(timeout=60_000)
    explorer.locator(".widget-text input").fill("How is the jet energy scale calibrated?")
    explorer.get_by_role("button", name="search").click()
    columns = explorer.locator(".hw-column")
    page.wait_for_function(
        "(el) => el.innerText.includes('B02')",
        arg=explorer.element_handle(),
        timeout=60_000,
    )
    assert columns.count() == 2
    assert [columns.nth(i).get_attribute("data-retriever") for i in range(2)] == ["bm25", "dense"]
    for i in range(2):
        assert columns.nth(i).locator("li").count() >= 1, columns.nth(i).inner_text()
    assert "B02" in columns.nth(0).locator("li").first.inner_text()
    screenshot(page, "compare-retrievers.png", explorer)
    page.close()


def test_a_hot_hit_is_approved_by_clicking(browser, lab):
    import duckdb

    corpus, _ = tiny_corpus(lab["root"])
    folder = lab["root"] / "tiers"
    nb = parameterized(
        "75-tiers.ipynb",
        lab["root"],
        corpus=str(corpus),
        lt_papers=["A01", "B02"],
        todays_papers=["C03"],
        questions=[
            "What does the far detector contain?",
            "How is the jet energy scale calibrated at 13 TeV?",
            "What beam-spin asymmetry did HERMES measure?",
        ],
        evaluate=False,
        tier_folder=str(folder),
        home=str(lab["root"]),
    )
    page = open_and_run(browser, lab, nb)
    widget = page.locator(".widget-vbox", has=page.get_by_role("button", name="approve for LT")).last
    widget.wait_for(timeout=90_000)
    assert "[hot] C03" in widget.locator("select").inner_text().replace("\xa0", " ")
    name = widget.locator(".widget-text input").first
    name.fill("")
    widget.get_by_role("button", name="approve for LT").click()
    page.wait_for_function(
        "(el) => el.innerText.includes('say who approves')", arg=widget.element_handle(), timeout=30_000
    )
    name.fill("Ada")
    widget.locator(".widget-text input").nth(1).fill("the detector description we cite")
    widget.get_by_role("button", name="approve for LT").click()
    page.wait_for_function(
        "(el) => el.innerText.includes('as Ada')", arg=widget.element_handle(), timeout=30_000
    )
    screenshot(page, "tier-approval.png", widget)
    page.close()
    with duckdb.connect(str(folder / "audit.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT doc_key, note FROM signals WHERE kind = 'approved' AND actor = 'Ada'"
        ).fetchall()
    assert rows == [("label:C03", "the detector description we cite")]


# in P01's page 3, one block of text: the passage a physicist marks
PASSAGE = "recorded during the 1996 and 1997 running periods of the HERMES experiment"

_POINT = (
    "([pre, text, last]) => { const node = pre.firstChild; const at = node.textContent.indexOf(text);"
    " if (at < 0) return null; const i = last ? at + text.length - 1 : at; const r = document.createRange();"
    " r.setStart(node, i); r.setEnd(node, i + 1); const b = r.getClientRects()[0];"
    " return [last ? b.right - 1 : b.left + 1, b.top + b.height / 2]; }"
)


def _drag_select(page, pre, passage: str, to=None) -> None:
    """Select ``passage`` of block ``pre`` with the mouse, as a person does: press, drag, release.

    With ``to`` (a block and a text of it), the drag goes on to the end of that text in that block.
    """
    pre.scroll_into_view_if_needed()
    x0, y0 = page.evaluate(_POINT, [pre.element_handle(), passage, False])
    end_pre, end_text = to or (pre, passage)
    x1, y1 = page.evaluate(_POINT, [end_pre.element_handle(), end_text, True])
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=5)
    page.mouse.move(x1, y1, steps=5)
    page.mouse.up()


@pytest.mark.shared
def test_evidence_is_marked_where_it_is_read(browser, lab):
    from hepwb.evaluation.questions import load_questions

    qfile = lab["root"] / "marked" / "my-questions.jsonl"
    nb = parameterized(
        "40-inspect-document.ipynb",
        lab["root"],
        paper="P01",
        page=3,
        home=str(lab["root"]),
        question_file=str(qfile),
    )
    page = open_and_run(browser, lab, nb)
    page.set_viewport_size({"width": 1400, "height": 1300})
    marker = page.locator(".hw-evidence-marker").last
    marker.wait_for(timeout=60_000)
    view = page.locator(".hw-page-text").last
    block = view.locator("pre", has_text=PASSAGE).first
    selected = marker.locator("textarea")
    status = marker.locator(".hw-evidence-status")
    # the passage, selected with the mouse in the rendered page text, reaches the kernel and the box
    _drag_select(page, block, PASSAGE)
    page.wait_for_function(
        "([el, text]) => el.value === text", arg=[selected.element_handle(), PASSAGE], timeout=30_000
    )
    marker.get_by_placeholder("type the question the passage answers").fill(
        "When were the data of the first HERMES beam-spin asymmetry in DVCS recorded?"
    )
    marker.get_by_placeholder("the reference answer (optional", exact=False).fill("In 1996 and 1997")
    marker.get_by_placeholder("numeric, definition", exact=False).fill("setup")
    button = marker.get_by_role("button", name="Add selected text as evidence")
    button.click()
    page.wait_for_function(
        "(el) => el.innerText.includes('added to')", arg=status.element_handle(), timeout=30_000
    )
    assert status.inner_text().strip() == f"added to {qfile}: P01-01 (page 3)"
    (q,) = load_questions(qfile)
    assert q.question.startswith("When were the data") and q.qid == "P01-01"
    assert (q.answer, q.kind) == (
        "In 1996 and 1997",
        "setup",
    )  # typed in the browser, written with the question
    assert [(e.doc, e.page, e.quote) for e in q.evidence] == [("P01", 3, PASSAGE)]
    # the same selection again: refused in one line, nothing written
    before = qfile.read_bytes()
    _drag_select(page, block, PASSAGE)
    button.click()
    page.wait_for_function(
        "(el) => el.innerText.includes('already quotes')", arg=status.element_handle(), timeout=30_000
    )
    refusal = status.inner_text().strip()
    assert refusal.startswith(f"not added to {qfile}: P01-01 already quotes") and "\n" not in refusal
    assert qfile.read_bytes() == before
    # across two blocks: only their text is taken, not the kind labels, offsets or link lines between them
    after = view.locator("pre", has_text="The scattered positrons").first
    _drag_select(page, block, "used in the analysis", to=(after, "The scattered positrons"))
    page.wait_for_function(
        "(el) => el.value.endsWith('The scattered positrons')", arg=selected.element_handle(), timeout=30_000
    )
    assert selected.input_value() == "used in the analysis. The scattered positrons"
    _drag_select(page, block, PASSAGE)  # the passage highlighted in the picture, and in the box
    page.wait_for_function(
        "([el, text]) => el.value === text", arg=[selected.element_handle(), PASSAGE], timeout=30_000
    )
    marker.scroll_into_view_if_needed()
    screenshot(page, "mark-evidence.png")
    page.close()


def test_size_curve_draws_every_point_and_a_click_lists_that_runs_misses(browser, lab):
    """Notebook 55 on a physicist's own folder: every point plotted, then a click answers from the kernel."""
    corpus, questions = tiny_corpus(lab["root"])
    nb = parameterized(
        "55-chunk-size-curve.ipynb",
        lab["root"],
        corpus=str(corpus),
        questions=str(questions),
        max_docs=None,
        size_from=32,
        size_to=160,
        size_step=32,
        retrievers=["bm25", "bm25_plain"],
        metric="hit_rate@1",
        home=str(lab["root"]),
    )
    page = open_and_run(browser, lab, nb)
    # the plotted state itself: ten points (5 sizes x 2 retrievers) and the status saying it is done
    page.wait_for_function(
        "() => { const svg = document.querySelector('.hw-curve svg');"
        " const s = document.querySelector('.hw-curve-status');"
        " return svg && svg.querySelectorAll('.hw-point').length === 10"
        "   && s && s.dataset.state === 'done' && s.innerText.includes('10 of 10 points'); }",
        timeout=120_000,
    )
    curve = page.locator(".hw-curve").last
    sizes = sorted({int(p.get_attribute("data-size")) for p in curve.locator(".hw-point").all()})
    assert sizes == [32, 64, 96, 128, 160]
    series = {p.get_attribute("data-series") for p in curve.locator(".hw-point").all()}
    assert series == {"hepilot · bm25", "hepilot · bm25_plain"}
    point = curve.locator(".hw-point[data-size='64'][data-series='hepilot · bm25_plain']")
    point.click()
    # the kernel answers the click with that configuration's misses (or says none was missed)
    page.wait_for_function(
        "() => { const b = document.querySelector('.hw-misses b');"
        " return b && b.innerText.includes('bm25_plain, 64 tokens'); }",
        timeout=60_000,
    )
    details = page.locator(".hw-misses").last.locator("xpath=..")
    text = details.inner_text()
    assert "hit_rate@1" in text and "over 8 questions" in text
    misses = details.locator(".hw-miss").count()
    assert misses or "No question was missed" in text
    screenshot(page, "chunk-size-curve.png", page.locator(".widget-vbox", has=curve).last)
    page.close()
