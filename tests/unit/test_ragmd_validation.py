"""``hepwb validate-ragmd`` and the ``.ragmd`` loaders refuse the same files: lone surrogates, vectors not of
unit length, a distance or index type the format does not have, and parts that disagree (a byte-order mark, a
section twice, a count that is no whole number, a chunk index given twice)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hepwb.cli import app


def _ragmd(path: Path) -> str:
    """Write a valid two-chunk .ragmd file with hepwb's writer (unit vectors of 384 floats); its text."""
    import numpy as np

    from hepwb.ragmd.model import RagChunk, RagDocument, RagFile
    from hepwb.ragmd.writer import dump

    texts = ["Measurement of the Higgs boson mass at 13 TeV.", "The W and Z boson backgrounds are small."]
    starts = [0, len(texts[0])]
    chunks = [
        RagChunk(f"c{i}", "d1", i, s, s + len(t), t)
        for i, (s, t) in enumerate(zip(starts, texts, strict=True))
    ]
    vectors = np.random.default_rng(0).normal(size=(2, 384)).astype("<f4")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    when = "2026-01-01T00:00:00Z"
    docs = [RagDocument("d1", "P01", "Measurement of the Higgs boson mass 0", "")]
    dump(RagFile("all-MiniLM-L6-v2", "cs", when, when, docs, chunks, vectors), path)
    return path.read_text(encoding="utf-8")


def _huge_vector_line(text: str) -> str:
    import base64

    import numpy as np

    lines = text.split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("c0 "))
    lines[at] = "c0 " + base64.b64encode(np.full(384, 1e38, dtype="<f4").tobytes()).decode()
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("mutate", "why"),
    [
        (
            lambda t: t.replace(
                '"title": "Measurement of the Higgs boson mass 0"', '"title": "Evil \\ud800 title"'
            ),
            "[Document Metadata] the text 'Evil \\ud800 title' holds a lone surrogate (U+D800)",
        ),
        (
            lambda t: t.replace('"text": "The W and Z', '"text": "The W \\udcff Z'),
            "holds a lone surrogate (U+DCFF)",
        ),
        (_huge_vector_line, "1 vector(s) not of unit length (chunks ['c0'])"),
        (
            lambda t: t.replace('distance: "inner_product"', 'distance: "l2"'),
            "distance 'l2'; a .ragmd file has",
        ),
    ],
)
def test_validate_ragmd_refuses_what_the_loaders_refuse(tmp_path, monkeypatch, mutate, why):
    """Hostile-input probe 5 (issue 38), F14 and M6: these files were "valid", then ``search --ragmd`` crashed
    printing the surrogate title (exit 3), ``import-ragmd`` refused the 1e38 vectors, and ``distance: l2`` was
    ignored."""
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path / "home"))
    good = _ragmd(tmp_path / "a.ragmd")
    res = CliRunner().invoke(app, ["validate-ragmd", str(tmp_path / "a.ragmd")])
    assert res.exit_code == 0 and "valid (1 documents, 2 vectors of 384, all-MiniLM-L6-v2)" in res.output
    bad = tmp_path / "s.ragmd"
    bad.write_text(mutate(good), encoding="utf-8")
    res = CliRunner().invoke(app, ["validate-ragmd", str(bad)])
    assert res.exit_code == 1 and why in res.output, res.output
    for args in (
        ["search", "Higgs boson mass", "--ragmd", str(bad), "--retrievers", "bm25"],
        ["import-ragmd", str(bad)],
    ):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2 and why in res.output and "Traceback" not in res.output, res.output


def _ragmd_text() -> str:
    import numpy as np

    from hepwb.ragmd import RagFile, dumps
    from hepwb.ragmd.model import RagChunk, RagDocument

    doc = RagDocument("d1", "P01", "A title", "")
    chunks = [RagChunk("c0", "d1", 0, 0, 5, "alpha"), RagChunk("c1", "d1", 1, 5, 9, "beta")]
    vectors = np.array([[1.0, 0.0], [0.6, 0.8]], dtype="<f4")
    return dumps(
        RagFile(
            "all-MiniLM-L6-v2", "cs", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", [doc], chunks, vectors
        )
    )


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda t: "\ufeff" + t, "byte-order mark"),
        (lambda t: t + "\n## Vectors\n", "section '## Vectors' appears 2 times"),
        (lambda t: t.replace('index_type: "flat"', 'index_type: "hnsw"'), "index_type 'hnsw'"),
        (
            lambda t: t.replace("vector_count: 2", "vector_count: 2.0"),
            "vector_count '2.0' is not a whole number",
        ),
        (lambda t: t.replace('"chunk_index": 1', '"chunk_index": 0'), "chunk_index given twice"),
    ],
    ids=["bom", "two-vector-sections", "index-type", "float-count", "chunk-index-twice"],
)
def test_a_ragmd_file_whose_parts_disagree_is_refused(tmp_path, change, says):
    from hepwb.ragmd import RagmdError
    from hepwb.ragmd.reader import load_searchable

    text = _ragmd_text()
    assert load_searchable(_write(tmp_path / "ok.ragmd", text)).chunks  # the file before the change loads
    changed = change(text)
    assert changed != text
    with pytest.raises(RagmdError, match=re.escape(says)):
        load_searchable(_write(tmp_path / "bad.ragmd", changed))


def test_a_ragmd_vector_not_of_unit_length_is_refused(tmp_path):
    import base64

    import numpy as np

    from hepwb.ragmd import RagmdError
    from hepwb.ragmd.reader import load_searchable

    text = _ragmd_text()
    for scale in (100.0, 1e-20):
        line = "c0 " + base64.b64encode(np.array([scale, 0.0], dtype="<f4").tobytes()).decode()
        changed = "\n".join(line if ln.startswith("c0 ") else ln for ln in text.split("\n"))
        with pytest.raises(RagmdError, match=r"not of unit length \(chunks \['c0'\]\)"):
            load_searchable(_write(tmp_path / "bad.ragmd", changed))


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path
