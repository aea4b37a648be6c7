"""Issue 42's "done when", on two real papers: a TF-IDF run made outside hepwb appears in hepwb's report.

hepwb runs bm25 on two papers of the shared corpus; ``hepwb export --format beir`` writes the chunk set as a
BEIR corpus; the TF-IDF script of docs/howto/ir-formats.md (scikit-learn, run as its own process, knowing
nothing of hepwb) ranks it and writes a TREC run file; ``hepwb evaluate --run-file`` scores that file, and
``hepwb report`` shows it beside the bm25 run with its interval, its difference and its verdict.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from tests.helpers import PDF_DIR, QUESTIONS

pytestmark = [pytest.mark.shared, pytest.mark.slow]  # two PDFs converted and a report rendered: about 1 min

DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "ir-formats.md"


def _script_of_the_docs() -> str:
    """The TF-IDF script the how-to page shows (its one python block importing scikit-learn)."""
    text = DOCS_PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)
    return next(b for b in blocks if "TfidfVectorizer" in b)


def _ok(args: list[str]) -> str:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return res.output


def test_a_tfidf_run_made_outside_hepwb_is_in_the_report_with_its_interval_and_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    common = [
        "--corpus",
        str(PDF_DIR),
        "--questions",
        str(QUESTIONS),
        "--max-docs",
        "2",
        "--chunk-size",
        "512",
    ]
    out = _ok(["evaluate", *common, "--retriever", "bm25"])
    bm25 = re.search(r"^run: (\S+)$", out, re.M).group(1)  # type: ignore[union-attr]
    _ok(["export", bm25, "--format", "beir", "beir"])
    (tmp_path / "tfidf_run.py").write_text(_script_of_the_docs(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "tfidf_run.py", "beir", "tfidf.trec"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    out = _ok(["evaluate", *common, "--run-file", "tfidf.trec", "--baseline", bm25])
    assert "retriever run:tfidf" in out and f"against {bm25}" in out
    assert re.search(r"found@5\s+\d\.\d{3} -> \d\.\d{3}  difference [+-]\d\.\d{3} \[", out), out
    _ok(["report"])
    raw = (tmp_path / "reports" / "report.html").read_text(encoding="utf-8")
    start = raw.index('<p class="hw-verdict">')
    table = raw[start : raw.index("</table>", start)]  # the verdict's table, first in the report
    rows = [r for r in re.findall(r"<tr[^>]*>(.*?)</tr>", table, flags=re.S) if "run:tfidf" in r]
    assert len(rows) == 1, table
    cells = [
        html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[0], re.S)
    ]
    assert re.fullmatch(r"\d\.\d{3} – \d\.\d{3}", cells[2]), cells  # its 95 % interval
    assert cells[6] in {"best", "indistinguishable", "worse"}, cells  # its verdict
    if cells[6] != "best":  # its difference to the best with an interval, and the questions + / − / =
        assert re.fullmatch(r"[+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]", cells[3]), cells
        assert re.fullmatch(r"\d+ / \d+ / \d+", cells[-1]), cells
