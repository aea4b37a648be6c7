"""Crash safety and concurrency (issue #17): `hepwb evaluate` killed with SIGKILL at random points, two
evaluations of the same new configuration at once, and a write error (file-size limit) mid-run. Each ends
with either the old state or the new one; the next run repairs or redoes the rest and gives the results of
an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from hepwb.index.lance import table_names
from hepwb.paths import Layout
from tests.helpers import PDF_DIR, QUESTIONS

pytestmark = pytest.mark.shared

HEPWB = str(Path(sys.executable).parent / "hepwb")
ARGS = ["evaluate", "--corpus", str(PDF_DIR), "--questions", str(QUESTIONS), "--max-docs", "2",
        "--chunk-size", "256", "--retriever", "dense", "--k", "10"]  # fmt: skip


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "HEPWB_HOME": str(home), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _start(home: Path, max_file_bytes: int | None = None) -> subprocess.Popen[str]:
    """`hepwb evaluate` in a child; ``max_file_bytes``: no file may grow past it (``ulimit -f``), as on a
    full disk (SIGXFSZ ignored, so a write past the limit fails with EFBIG; set by the shell, not by a
    ``preexec_fn``: forking this process, which holds LanceDB, would warn)."""
    cmd = [HEPWB, *ARGS]
    if max_file_bytes is not None:
        cmd = ["bash", "-c", f"trap '' XFSZ; ulimit -f {max_file_bytes // 1024}; exec \"$@\"", "hepwb", *cmd]
    return subprocess.Popen(cmd, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(proc: subprocess.Popen[str], timeout: float = 300) -> str:
    out, _ = proc.communicate(timeout=timeout)
    return out


def _result(home: Path) -> tuple[dict[str, float], pd.DataFrame]:
    (run,) = [p.parent for p in Layout(home).runs.rglob("metrics.json")]
    summary = json.loads((run / "metrics.json").read_text())["summary"]
    per_q = pd.read_parquet(run / "per_question.parquet").sort_values("qid").reset_index(drop=True)
    return summary, per_q


def _consistent(home: Path) -> None:
    """Every artefact present is whole: cached documents, chunk sets, marked tables and run records."""
    import lancedb

    from hepwb.runs.record import RunRecord

    lay = Layout(home)
    for doc in lay.interim.glob("*/document.json"):
        json.loads(doc.read_text())
    for manifest in lay.chunksets.glob("*/chunkset.json"):
        n = json.loads(manifest.read_text())["n_chunks"]
        assert len(pd.read_parquet(manifest.parent / "chunks.parquet")) == n
    db = lancedb.connect(str(lay.lancedb))
    for marker in (lay.lancedb / "_complete").glob("*.json"):
        rows = json.loads(marker.read_text()).get("rows")
        if rows is not None:
            assert db.open_table(marker.stem).count_rows() == rows, marker
    for rec in lay.runs.rglob("metrics.json"):
        assert RunRecord.finished(rec.parent) is not None, rec


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run: its results and wall time."""
    home = tmp_path_factory.mktemp("reference")
    t = time.monotonic()
    out = _finish(_start(home))
    wall = time.monotonic() - t
    assert "results:" in out, out
    return _result(home), wall


@pytest.mark.parametrize("share", ["quick", pytest.param("rest", marks=pytest.mark.slow)])
def test_sigkill_at_random_points_then_rerun_gives_the_uninterrupted_results(reference, tmp_path, share):
    """``make test`` kills at the first and last of four seeded points, the ``slow`` step at the others."""
    (summary, per_q), wall = reference
    rng = random.Random(17)  # fixed seed: the same kill points on every machine of the same speed
    every = sorted(rng.uniform(0.5, wall) for _ in range(4))
    points = [every[0], every[-1]] if share == "quick" else every[1:-1]
    home = tmp_path / "home"
    for at in points:
        proc = _start(home)
        time.sleep(at)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        _finish(proc)
        _consistent(home)  # the old state or the new one, never half of one
    out = _finish(_start(home))
    assert "results:" in out, out
    got, got_q = _result(home)
    assert got == pytest.approx(summary, abs=1e-9)
    pd.testing.assert_frame_equal(got_q, per_q)


def test_two_evaluations_of_a_new_configuration_embed_once(reference, tmp_path):
    """Two processes wanting the same new chunk set and table: one builds, the other waits and reuses."""
    import lancedb

    home = tmp_path / "home"
    a, b = _start(home), _start(home)
    outs = [_finish(a), _finish(b)]
    assert a.returncode == b.returncode == 0, outs
    assert any("waiting for" in o for o in outs), outs  # one said what it waited for
    db = lancedb.connect(str(Layout(home).lancedb))
    (cache,) = [n for n in table_names(db) if n.startswith("embcache__")]
    keys = db.open_table(cache).to_arrow().column("key").to_pylist()
    assert len(keys) == len(set(keys))  # nothing embedded twice
    summary, _ = _result(home)
    assert summary == pytest.approx(reference[0][0], abs=1e-9)


@pytest.mark.parametrize(
    ("limit", "where"),
    [pytest.param(40_000, "document.json", marks=pytest.mark.slow), (150_000, "LanceDB")],
)
def test_a_write_error_mid_run_leaves_nothing_half_written(reference, tmp_path, limit, where):
    """Files may not grow past ``limit`` bytes (``ulimit -f``, as on a full disk): at 40 kB the first
    paper's cached conversion (its record with figures, cross-references and front matter) cannot be
    written (``make test-slow``), at 150 kB the LanceDB table cannot be written."""
    home = tmp_path / "home"
    proc = _start(home, max_file_bytes=limit)
    out = _finish(proc)
    assert proc.returncode == 2, out
    assert "error: could not write" in out and "File too large" in out and where in out, out[-2000:]
    assert "Traceback" not in out, out[-3000:]
    _consistent(home)
    assert not list(Layout(home).runs.rglob("metrics.json"))
    out = _finish(_start(home))  # with room again: the rest is redone
    assert "results:" in out, out
    got, got_q = _result(home)
    assert got == pytest.approx(reference[0][0], abs=1e-9)
    pd.testing.assert_frame_equal(got_q, reference[0][1])


def test_two_sweeps_on_one_project_both_finish_with_a_consistent_catalog(tmp_path):
    """Two `hepwb sweep` of one grid at once on the same project: both finish; each run is in the catalog
    once, with one row per metric (the catalog waits for its other writer; build locks share the work)."""
    import duckdb

    from tests.helpers import tiny_corpus

    corpus, questions = tiny_corpus(tmp_path)
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        f"corpus: {corpus}\nquestions: {questions}\nchunk_overlap: 0.0\nretriever: bm25\n"
        "grid:\n  chunk_size: [32, 64]\n"
    )
    home = tmp_path / "home"
    cmd = [HEPWB, "sweep", str(grid), "--executor", "serial"]
    out = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    procs = [subprocess.Popen(cmd, env=_env(home), **out) for _ in range(2)]
    outs = [_finish(p) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n----\n".join(outs)  # each output whole
    with duckdb.connect(str(Layout(home).catalog), read_only=True) as con:
        runs = con.execute("SELECT run_id FROM runs WHERE status = 'ok'").fetchall()
        per_run = con.execute(
            "SELECT run_id, count(*), count(DISTINCT metric) FROM metrics GROUP BY run_id"
        ).fetchall()
    assert len(runs) == len({r[0] for r in runs}) == 2
    assert all(n == distinct for _, n, distinct in per_run) and len(per_run) == 2
