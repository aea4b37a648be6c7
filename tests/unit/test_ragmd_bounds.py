"""Hostile .ragmd front matter: absurd dimensions are refused before any array is made; errors are text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hepwb.ragmd import reader


@pytest.mark.parametrize("dim", ["1000000000000", "-3", "true", "0", "65537"])
def test_an_absurd_embedding_dim_is_refused_before_allocating(dim):
    text = f"---\nformat_version: 1\nembedding_dim: {dim}\n---\n"
    with pytest.raises(reader.RagmdError) as err:
        reader.loads(text, "x.ragmd")
    assert "embedding_dim must be a whole number from 1 to 65,536" in str(err.value)


def test_the_error_reads_as_text_not_as_a_tuple():
    with pytest.raises(reader.RagmdError) as err:
        reader.loads("no front matter", "x.ragmd")
    assert str(err.value).startswith("x.ragmd: 1 problem(s); nothing was loaded:")
    assert err.value.args[1] == [
        "x.ragmd:1 [front matter] no YAML front matter between '---' lines (not a .ragmd file, or truncated)"
    ]


def _repeated(n: int) -> str:
    """A .ragmd text of ``n`` chunks whose Chunks section names one chunk twice (a hand-merged file)."""
    return _valid(n).replace('{"chunk_id": "c1", ', '{"chunk_id": "c0", ')  # c0 now appears twice


def _valid(n: int) -> str:
    """A valid .ragmd text of ``n`` one-character chunks."""
    import numpy as np

    from hepwb.ragmd import RagFile, dumps
    from hepwb.ragmd.model import RagChunk, RagDocument

    chunks = [RagChunk(f"c{i}", "d1", i, 2 * i, 2 * i + 1, "x") for i in range(n)]
    when = "2026-01-01T00:00:00Z"
    docs = [RagDocument("d1", "P01", "", "")]
    rf = RagFile("m", "cs", when, when, docs, chunks, np.zeros((n, 2), dtype="<f4"))
    return dumps(rf)


def test_repeated_chunk_ids_are_named_and_validation_stays_linear():
    probs = reader.problems(_repeated(20_000), "x.ragmd")  # quadratic before: 20,000² comparisons
    assert any("chunk ids repeated: ['c0']" in p for p in probs), probs[:3]


def test_a_file_over_the_size_cap_is_one_line_and_never_read(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from hepwb.cli import app

    big = tmp_path / "big.ragmd"
    big.write_text(_repeated(50), encoding="utf-8")
    monkeypatch.setattr(reader, "MAX_RAGMD_BYTES", 1000)
    res = CliRunner().invoke(app, ["validate-ragmd", str(big)])
    assert res.exit_code == 1  # validate-ragmd's "the file is bad"
    assert "more than the 1,000 a .ragmd file may hold" in res.output
    assert len(res.output.strip().splitlines()) == 1


_VALID = _valid(5).encode()


@settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 3), st.binary(max_size=8)), max_size=6))
def test_a_mutated_file_fails_only_with_a_ragmd_error(tmp_path, edits):
    """Bytes of a valid file deleted, replaced and inserted at random: a RagmdError or a file, no crash."""
    data = bytearray(_VALID)
    for pos, cut, new in edits:
        at = pos % (len(data) + 1)
        data[at : at + cut] = new
    path = tmp_path / "mutated.ragmd"
    path.write_bytes(bytes(data))
    try:
        reader.load(path)
    except reader.RagmdError as exc:
        assert len(str(exc)) < 5000 and str(exc).startswith(str(path))
