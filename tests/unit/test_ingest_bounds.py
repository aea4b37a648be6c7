"""``hepwb ingest --chunk-sizes`` builds at most ``limits.MAX_CHUNK_SIZES`` chunk sets (issue 38 item 5)."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from hepwb import limits
from hepwb.cli import app
from hepwb.exceptions import ConfigError
from hepwb.pipeline.prepare import _checked_sizes, prepare


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
