"""The HTML report as a reader sees it, in headless Chromium: whole tables, human names, a verdict on top."""

from __future__ import annotations

import pytest

from hepwb.paths import Layout
from hepwb.pipeline.report import render_report
from hepwb.sweep import SweepSpec, run_sweep
from tests.browser.conftest import screenshot
from tests.helpers import tiny_corpus

pytestmark = pytest.mark.browser


def test_report_reads_well_in_a_browser(browser, tmp_path):
    corpus, questions = tiny_corpus(tmp_path)
    layout = Layout(tmp_path)
    spec = SweepSpec.from_dict(
        {
            "corpus": str(corpus),
            "questions": str(questions),
            "chunk_overlap": 0.0,
            "grid": {"chunk_size": [32, 64], "retriever": ["bm25", "dense"]},
        }
    )
    res = run_sweep(spec, layout=layout, executor="serial", progress=False)
    assert not res.failed
    html = render_report(layout, sweep=res.sweep_id)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(html.as_uri())
    headline = page.locator("table.hw-headline")
    headers = headline.locator("th").all_inner_texts()
    assert {"chunk size (tokens)", "retriever", "found@5", "MRR@10"} <= set(headers)
    assert "hit_rate@5" not in headers
    assert headline.locator("tr").count() == 1 + 4  # every run, none cut
    assert headline.locator("td.hw-best").count() >= 1
    assert "…" not in headline.inner_text()
    body = page.locator("body").inner_text()
    assert "What to use" in body and ("significantly better" in body or "not distinguishable" in body)
    assert body.index("What to use") < body.index("Headline metrics")
    heatmap = page.locator("img[alt^='Heatmap of the main metric']")
    assert heatmap.count() == 1 and heatmap.evaluate("img => img.naturalWidth") > 100
    assert page.locator("img").count() >= 2 and page.locator("img:not([alt])").count() == 0
    screenshot(page, "report.png")
    page.close()


PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def test_user_strings_are_text_in_the_report_and_widgets(browser, tmp_path):
    """`<script>` and `onerror=` payloads in a question, a paper title and a file name stay text."""
    import json

    from hepwb.retrieval.explain import hits_html
    from hepwb.types import Hit

    corpus, questions = tiny_corpus(tmp_path)
    first = sorted(corpus.glob("*.md"))[0]
    first.write_text(first.read_text().replace("# ", f"# {PAYLOAD} ", 1))
    (corpus / f"Z09_{PAYLOAD.replace('/', '')}.pdf").write_bytes(b"not a pdf")  # listed as unprocessed
    lines = [json.loads(x) for x in questions.read_text().splitlines()]
    lines[0]["question"] = PAYLOAD + " " + lines[0]["question"]
    questions.write_text("".join(json.dumps(x) + "\n" for x in lines))
    layout = Layout(tmp_path)
    spec = {"corpus": str(corpus), "questions": str(questions), "chunk_overlap": 0.0, "chunk_size": 64,
            "retriever": "bm25"}  # fmt: skip
    res = run_sweep(SweepSpec.from_dict(spec), layout=layout, executor="serial", progress=False)
    assert not res.failed
    html = render_report(layout, sweep=res.sweep_id)
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(html.as_uri())
    body = page.locator("body").inner_text()
    assert "could not be processed" in body and "Z09_<img src=x onerror=" in body  # shown as text
    assert page.evaluate("window.__pwned") is None and not dialogs
    assert page.locator("img[src='x']").count() == 0
    page.close()
    hit = Hit(chunk_id="c", document_id="d", label="A01", title=PAYLOAD, text=PAYLOAD, score=1.0, rank=1,
              start=0, end=10)  # fmt: skip
    widget = browser.new_page()
    widget.set_content(hits_html([hit]))
    assert PAYLOAD in widget.locator("body").inner_text() or "onerror" in widget.locator("body").inner_text()
    assert widget.evaluate("window.__pwned") is None and widget.locator("img[src='x']").count() == 0
    widget.close()
