"""The HTML report as a reader sees it, in headless Chromium: whole tables, human names, a verdict on top."""

from __future__ import annotations

import pytest

from hepwb.paths import Layout
from hepwb.report.render import render_report
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
    # the first screen answers: what should I use, how sure is that, what does it cost
    verdict = page.locator("p.hw-verdict")
    assert verdict.count() == 1 and verdict.is_visible()
    assert verdict.bounding_box()["y"] < 1000
    text = verdict.inner_text()
    assert "Best:" in text and "95 % interval" in text and "questions" in text and "Holm" in text
    decision = page.locator("table.hw-headline").first
    assert decision.bounding_box()["y"] < 1000
    headers = decision.locator("th").all_inner_texts()
    assert {"configuration", "found@5", "95 % interval", "p (Holm)", "detectable", "verdict", "index (MiB)",
            "query p50 (ms)", "compute (s)"} <= set(headers)  # fmt: skip
    assert decision.locator("tr").count() == 1 + 4
    verdicts = [decision.locator("tr").nth(i).locator("td").nth(6).inner_text() for i in range(1, 5)]
    assert verdicts[0] == "best" and set(verdicts[1:]) <= {"indistinguishable", "worse"}
    costs = decision.locator("tr").nth(1).locator("td")
    assert float(costs.nth(7).inner_text()) > 0 and float(costs.nth(8).inner_text()) > 0  # index MiB, p50 ms
    assert float(costs.nth(9).inner_text()) > 0  # compute s
    body = page.locator("body").inner_text()
    definition = body.index("found@5 (hit_rate@5, the decision metric): share of questions")
    assert definition < body.index("What to use") < body.index("Decision table")
    # the compact decision table: identity columns and the five metrics, nothing cut
    compact = page.locator("table.hw-headline").nth(1)
    headers = compact.locator("th").all_inner_texts()
    assert headers == ["chunker", "chunk size (tokens)", "overlap", "retriever", "found@5", "recall@5",
                       "MRR@10", "nDCG@10", "paper recall@5"]  # fmt: skip
    assert compact.locator("tr").count() == 1 + 4 and compact.locator("td.hw-best").count() >= 1
    assert "…" not in compact.inner_text() and "hit_rate@5" not in headers
    # the full table scrolls sideways with its configuration column in view
    full = page.locator("table.hw-headline").last
    sticky = full.locator("td.hw-sticky").first
    assert sticky.evaluate("e => getComputedStyle(e).position") == "sticky"
    scroller = full.locator("xpath=..")
    x0 = sticky.bounding_box()["x"]
    scroller.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
    page.wait_for_function(
        "(e) => e.scrollLeft > 0 || e.scrollWidth <= e.clientWidth", arg=scroller.element_handle()
    )
    assert abs(sticky.bounding_box()["x"] - x0) < 2
    # no pandas index column, no absolute path, no "None"
    inputs = page.locator("table", has=page.locator("th", has_text="papers")).first
    assert "None" not in inputs.inner_text() and str(tmp_path) not in inputs.inner_text()
    assert "max_docs" not in body
    heatmap = page.locator("img[alt^='Heatmap of the main metric']")
    assert heatmap.count() == 1 and heatmap.evaluate("img => img.naturalWidth") > 100
    lines = page.locator("img[alt*='95 % error bars']")
    assert lines.count() == 1 and lines.evaluate("img => img.naturalWidth") > 100
    assert page.locator("img").count() >= 3 and page.locator("img:not([alt])").count() == 0
    # breakdowns carry n and intervals
    kinds = page.locator("table", has=page.locator("th", has_text="kind")).first
    assert {"n", "ci_low", "ci_high"} <= set(kinds.locator("th").all_inner_texts())
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
