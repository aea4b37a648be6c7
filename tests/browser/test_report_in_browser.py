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
