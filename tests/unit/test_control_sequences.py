"""Terminal and HTML output strip every control sequence from corpus text (issue #38 item 7): search results,
``hepwb sql``'s cells and the tables of ``hepwb questions check``."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from hepwb.cli import app
from hepwb.cli.show import check_lines, unscored_lines
from hepwb.retrieval.explain import citation, hits_frame, hits_html, snippet
from hepwb.text.plaintext import escape_html, plain
from hepwb.types import Hit

CLIPBOARD = "\x1b]52;c;SGVsbG8=\x07"
LINK = "\x1b]8;;http://x\x07link\x1b]8;;\x07"
HOSTILE = (
    f"The DVCS {CLIPBOARD}beam-spin asymmetry {LINK} was \x1b[2J\x1b[31mmeasured\x1b[0m\r at CLAS12\x9b6n."
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _clean(text: str) -> bool:
    return not _CONTROL.search(text) and "52;c;" not in text and "http://x" not in text


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        (f"a{CLIPBOARD}b", "ab"),
        (f"a {LINK} b", "a link b"),
        ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ b", "alink b"),  # OSC ended by ST
        ("a\x1bP1$r0m\x1b\\b", "ab"),  # DCS
        ("a\x1b[1;31mb\x1b[0m", "ab"),  # CSI
        ("a\x1b7b\x1b8c\x1b(Bd", "abcd"),  # other escape sequences
        ("a\x9d0;title\x9cb", "ab"),  # 8-bit OSC and ST
        ("tab\tand\nnewline kept\r\n", "tab\tand\nnewline kept\n"),
        ("bell\x07 nul\x00 del\x7f c1\x85 bidi\u202e", "bell nul del c1 bidi"),
        ("unterminated \x1b]52;c;SGVsbG8= text", "unterminated 52;c;SGVsbG8= text"),
    ],
)
def test_plain_removes_every_control_sequence(text, expect):
    assert plain(text) == expect


def test_escape_html_strips_then_escapes():
    assert escape_html(f"<b>{CLIPBOARD}x</b>") == "&lt;b&gt;x&lt;/b&gt;"


def _hit() -> Hit:
    start = HOSTILE.index("DVCS")
    return Hit("c1", "d1", "A02", 0, len(HOSTILE), 1, 2.5, HOSTILE, "bm25", (1,), (f"2 Results{CLIPBOARD}",),
               f"DVCS {LINK}", "2101.00001", highlights=((start, start + 4),))  # fmt: skip


def test_snippet_citation_frame_and_html_are_clean():
    hit = _hit()
    snip = snippet(hit, 400)
    assert _clean(snip) and "**DVCS**" in snip and "asymmetry link was measured at CLAS12" in snip
    assert _clean(citation(hit)) and "DVCS link" in citation(hit)
    frame = hits_frame([hit])
    assert all(_clean(str(v)) for v in frame.iloc[0])
    page = hits_html([hit])
    assert _clean(page) and "<mark>DVCS</mark>" in page


def test_hepwb_search_prints_no_control_sequence(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "A02_dvcs.md").write_text(f"# DVCS {LINK}\n\n{HOSTILE}\n", encoding="utf-8")
    (corpus / "A01_calo.md").write_text("# Calorimetry\n\nATLAS measures photon energies.\n")
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    res = CliRunner().invoke(
        app,
        ["search", "DVCS beam-spin asymmetry", "--corpus", str(corpus), "--retrievers", "bm25",
         "--chunk-size", "64", "-k", "2"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "A02" in res.output and "**DVCS**" in res.output
    assert _clean(res.output), repr(res.output)


def test_sql_prints_no_escape_sequences(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    query = (
        "SELECT chr(27)||']52;c;SGk='||chr(7)||'x' AS a, chr(155)||'2Jy' AS b, "
        "chr(27)||']8;;http://e'||chr(27)||'\\z' AS c, [chr(27)||'[31mr'] AS d, 1 AS n"
    )
    r = CliRunner().invoke(app, ["sql", query, "--no-lance"])
    assert r.exit_code == 0, r.output
    assert not any(ch in r.output for ch in "\x1b\x07\x9b\x9d")
    # a list prints as DuckDB writes it as text (hepwb sql cuts long values in DuckDB, as text)
    assert r.output.split() == ["a", "b", "c", "d", "n", "x", "y", "z", "['r']", "1"]


def test_check_and_unscored_lines_strip_escape_sequences():
    osc8 = "Q\x1b]8;;http://evil\x07click\x1b]8;;\x07"
    row = {
        "evidence": osc8 + "#e0",
        "qid": osc8,
        "doc": "P\x1b[2J01",
        "page": None,
        "found_on_page": ["\x9b1m2"],
        "status": "not_found",
        "reason": "the quote \x1b]52;c;SGk=\x07is not\r in the text",
        "quote": "q\x1b[31mx",
    }
    for line in check_lines([row]) + unscored_lines([row]):
        assert "\x1b" not in line and "\x07" not in line and "\x9b" not in line and "\r" not in line, repr(
            line
        )
        assert "Qclick" in line and "P01" in line
