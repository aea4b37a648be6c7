"""``hepwb ingest --chunk-sizes`` builds at most ``limits.MAX_CHUNK_SIZES`` chunk sets (issue 38 item 5), and
an overlap leaving chunks little new text (above 0.75) is refused before any work."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from hepwb import limits
from hepwb.chunking.prepare import _checked_sizes, prepare
from hepwb.cli import app
from hepwb.exceptions import ConfigError

runner = CliRunner()


def test_thousands_of_chunk_sizes_are_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setenv("HEPWB_HOME", str(tmp_path))
    sizes = ",".join(str(n) for n in range(8, 3001))
    start = time.perf_counter()
    out = CliRunner().invoke(app, ["ingest", "--chunk-sizes", sizes])
    assert out.exit_code == 2, out.output
    assert out.output.count("\n") == 1
    assert f"2,993 chunk sizes, more than the {limits.MAX_CHUNK_SIZES} one ingest builds" in out.output
    assert "--chunk-sizes" in out.output and "further runs" in out.output
    assert time.perf_counter() - start < 10
    assert not (tmp_path / "data" / "processed").exists()  # nothing converted


def test_sizes_are_checked_first_and_repeats_count_once():
    assert _checked_sizes([512, 256, 512], False) == [512, 256]
    assert len(_checked_sizes([512] * 10_000, False)) == 1
    assert _checked_sizes(list(range(8, 8 + limits.MAX_CHUNK_SIZES)), False)[-1] == 7 + limits.MAX_CHUNK_SIZES
    with pytest.raises(ConfigError, match="chunk_size is a whole number of tokens from 8 to 32768, got 4"):
        prepare(None, chunk_sizes=[512, 4])
    with pytest.raises(ConfigError, match="drop HEPilot-compliant mode"):
        prepare(None, chunk_sizes=[256], require_compliant=True)


@pytest.mark.parametrize(("size", "overlap"), [("64", "0.9999999999"), ("1024", "0.999"), ("64", "0.76")])
def test_an_overlap_leaving_chunks_little_new_text_is_refused_before_any_work(home, size, overlap):
    corpus = home / "corpus"
    corpus.mkdir()
    (corpus / "P00_doc.md").write_text("# Title\n\nThe W boson backgrounds are small.\n", encoding="utf-8")
    res = runner.invoke(
        app, ["ingest", "--corpus", str(corpus), "--chunk-sizes", size, "--chunk-overlap", overlap]
    )
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert res.output.startswith("error: chunk_overlap is a fraction of the chunk size")
    assert f"from 0 to 0.75, got {overlap}" in res.output
    assert not (home / "proj" / "data").exists()  # nothing converted


def test_the_largest_overlap_still_chunks_and_its_label_keeps_every_digit(home):
    from hepwb.chunking import get_chunker
    from hepwb.chunking.keys import chunkset_id_of
    from hepwb.experiment.keys import cell_name

    get_chunker("hepilot", chunk_size=64, chunk_overlap=0.75, tokenizer="words")
    assert chunkset_id_of("hepilot", {"chunk_size": 64, "chunk_overlap": 0.7499999999}, "ab" * 8) == (
        "hepilot-cs64-ov0.7499999999-abababab"
    )
    assert chunkset_id_of("hepilot", {"chunk_size": 64, "chunk_overlap": 0.1}, "ab" * 8).startswith(
        "hepilot-cs64-ov0.1-"
    )
    cfg = {"chunker": "hepilot", "chunk_size": 64, "chunk_overlap": 0.1234567, "retriever": "bm25", "k": 5}
    assert cell_name(cfg).startswith("hepilot-cs64-ov0.1234567-bm25-k5-")
    with pytest.raises(ConfigError, match=r"from 0 to 0\.75"):
        get_chunker("hepilot", chunk_size=64, chunk_overlap=0.9999999999, tokenizer="words")
