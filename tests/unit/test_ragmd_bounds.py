"""Hostile .ragmd front matter: absurd dimensions are refused before any array is made; errors are text."""

from __future__ import annotations

import pytest

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
