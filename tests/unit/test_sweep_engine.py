"""The sweep engine (serial executor) on three short markdown papers: stages once, reruns, failures."""

from __future__ import annotations

import json

import pytest

from hepwb.catalog import Catalog
from hepwb.exceptions import ConfigError
from hepwb.index.cache import EmbeddingCache
from hepwb.paths import Layout
from hepwb.runs.record import CellFailure, RunRecord
from hepwb.sweep import SweepSpec, plan_sweep, run_sweep
from hepwb.sweep.halving import run_halving
from hepwb.sweep.tasks import Outcome, cell_task
from tests.helpers import tiny_corpus


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    corpus, questions = tiny_corpus(root)
    return root, {"corpus": str(corpus), "questions": str(questions), "tokenizer": "words"}


def spec(base, **grid):
    return SweepSpec.from_dict(
        {"name": "t", **base, "grid": grid or {"chunk_size": [32, 64], "retriever": ["bm25", "dense"]}}
    )


def test_stages_once_then_rerun_from_cache(tiny):
    root, base = tiny
    layout = Layout(root / "home-a")
    s = spec(base)
    plan = plan_sweep(s, layout)
    assert plan.counts() == {"convert": (0, 3), "chunkset": (0, 2), "index": (0, 2), "cell": (0, 4)}
    res = run_sweep(s, layout=layout, executor="serial", progress=False)
    assert not res.failed and len(res.computed) == 4
    # each chunk set built once for the two retrievers sharing it; each table built for the bm25 cell first
    # (no vectors: it waits for no embedding), then its vectors added in place for the dense cell; each
    # unique text embedded once
    built = [o for o in res.stages if not o.detail.get("reused")]
    assert sorted(o.stage for o in built if o.stage != "embed") == [
        "chunkset",
        "chunkset",
        "convert",
        "convert",
        "convert",
        "index",
        "index",
        "index",
        "index",
    ]
    first = [o.key for o in res.stages if o.stage in ("embed", "index") and not o.detail.get("reused")]
    assert not any(":" in k for k in first[:2])  # the two lexical tables come before any embedding
    texts = {t for cs in plan.chunksets for t in _texts(layout, cs)}
    assert res.embedded == res.unique_texts == len(texts) > 0
    assert len(EmbeddingCache(layout.lancedb, "all-MiniLM-L6-v2")) == len(texts)
    assert all(o.detail.get("embedded_here") == 0 for o in res.stages if o.stage == "index")
    # a run folder: typed record, tables, parameters and the papermill command for this cell alone
    cell = res.plan.cells[0]
    rec = RunRecord.load(cell.run_dir)
    assert rec.cell_key == cell.key and rec.stage_keys["chunkset"] == cell.chunkset_id and rec.worker
    assert {"retrieve_s", "evaluate_s", "load_s"} <= set(rec.timings_s)
    assert 0 <= rec.metric("hit_rate@5") <= 1 and rec.summary_ci95["hit_rate@5"][0] <= rec.metric(
        "hit_rate@5"
    )
    rerun = (cell.run_dir / "rerun.sh").read_text()
    assert "-m papermill" in rerun and "20-evaluate.ipynb" in rerun and "parameters.yaml" in rerun
    # the catalog: one row per cell with its keys, timings and worker; the sweep's stages
    cat = Catalog(layout.catalog)
    runs = cat.sql("SELECT cell_name, cell_key, config_hash, status, stage_keys, timings, worker FROM runs")
    assert len(runs) == 4 and set(runs["status"]) == {"ok"} and runs["worker"].str.len().min() > 0
    assert set(json.loads(runs["stage_keys"][0])) == {"chunkset", "index", "cell"}
    assert len(cat.metrics_wide(res.sweep_id)) == 4
    assert set(cat.stage_times(res.sweep_id)["stage"]) >= {"chunkset", "embed", "index", "cell:retrieve"}
    # unchanged: nothing recomputed, no executor started, the results are the same
    again = run_sweep(s, layout=layout, executor="serial", progress=False)
    assert again.executor == "none" and not again.computed and len(again.cells) == 4
    assert [o.detail["summary"] for o in again.cells] == [o.detail["summary"] for o in res.cells]
    assert plan_sweep(s, layout).counts()["cell"] == (4, 4)
    # a new cell reuses the chunk set and table it shares with finished cells
    more = run_sweep(
        spec(base, chunk_size=[32], retriever=["bm25", "entity"]),
        layout=layout,
        executor="serial",
        progress=False,
    )
    assert len(more.computed) == 1 and more.embedded == 0
    # the entity cell's part (the chunks' entities) is added to the shared table in place, nothing embedded
    built = [o for o in more.stages if not o.detail.get("reused")]
    assert [o.stage for o in built] == ["index"] and built[0].detail.get("embedded_here") == 0


def _texts(layout, chunkset_id):
    import pyarrow.parquet as pq

    return pq.read_table(layout.chunksets / chunkset_id / "chunks.parquet").column("text").to_pylist()


def test_a_failing_cell_is_recorded_and_the_others_go_on(tiny, monkeypatch):
    root, base = tiny
    monkeypatch.delenv("HEPWB_CROSS_ENCODER", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    layout = Layout(root / "home-b")
    res = run_sweep(
        spec(base, chunk_size=[32], retriever=["bm25", "rerank"]),
        layout=layout,
        executor="serial",
        progress=False,
    )
    (bad,) = res.failed
    assert len(res.computed) == 1 and "cross-encoder" in bad.error.lower()
    folder = next(c.run_dir for c in res.plan.cells if c.key == bad.key)
    failure = CellFailure.load(folder)
    assert failure.stage == "cell" and "Traceback" in (folder / "traceback.txt").read_text()
    assert not (folder / "metrics.json").exists()
    cat = Catalog(layout.catalog)
    failed = cat.failures(res.sweep_id)
    assert len(failed) == 1 and "cross-encoder" in failed["error"][0].lower()
    assert len(cat.metrics_wide(res.sweep_id)) == 1
    # a failed cell is retried by the next run (it may have been a passing problem); the finished one is not
    again = run_sweep(
        spec(base, chunk_size=[32], retriever=["bm25", "rerank"]),
        layout=layout,
        executor="serial",
        progress=False,
    )
    assert len(again.failed) == 1 and not again.computed


@pytest.mark.heavy  # a sweep or a run end to end: make test, not make check
def test_a_cell_failing_here_that_another_process_finished_keeps_that_run(tiny):
    """Two sweeps of one grid: when this process's attempt at a cell fails after another process finished
    the very same cell, the finished run stays whole and the cell counts as done (read back)."""
    root, base = tiny
    layout = Layout(root / "home-e")
    s = spec(base, chunk_size=[32], retriever=["bm25"])
    res = run_sweep(s, layout=layout, executor="serial", progress=False)
    (cell,) = res.plan.cells
    files = {p.name: p.read_bytes() for p in cell.run_dir.iterdir() if p.is_file()}
    lost = Outcome("index", cell.index, False, 0.0, "w", 0.0, error="the table was replaced meanwhile")
    out = cell_task(str(layout.root), cell.config, cell.inputs_key, cell.key, lost, run_dir=cell.run_dir)
    assert out.ok and out.detail["reused"] and out.detail["run_id"] == RunRecord.load(cell.run_dir).run_id
    assert {p.name: p.read_bytes() for p in cell.run_dir.iterdir() if p.is_file()} == files
    assert not (cell.run_dir / CellFailure.FILE).exists()
    # without a finished run of this cell the failure is recorded, as before
    (cell.run_dir / RunRecord.FILE).unlink()
    out = cell_task(str(layout.root), cell.config, cell.inputs_key, cell.key, lost, run_dir=cell.run_dir)
    assert not out.ok and CellFailure.load(cell.run_dir).error.startswith("index")


def test_stage_failures_fail_their_cells_only(tiny):
    root, base = tiny
    layout = Layout(root / "home-c")
    bad = {"name": "semantic", "breakpoint_percentile": 90, "embedding_model": "/no/such/model"}
    res = run_sweep(
        SweepSpec.from_dict(
            {
                "name": "t",
                **base,
                "grid": {"chunk_size": [32], "retriever": ["bm25"], "chunker": ["hepilot", bad]},
            }
        ),
        layout=layout,
        executor="serial",
        progress=False,
    )
    assert len(res.computed) == 1 and len(res.failed) == 1
    assert res.failed[0].stage == "chunkset" and "/no/such/model" in res.failed[0].error


def test_question_subsets_and_halving(tiny):
    root, base = tiny
    layout = Layout(root / "home-a")  # shares the stages built by the first test when run together
    s = SweepSpec.from_dict(
        {
            "name": "h",
            **base,
            "halving": {"min_questions": 2, "eta": 2},
            "grid": {"chunk_size": [32, 64], "retriever": ["bm25", "dense"]},
        }
    )
    res = run_halving(s, layout=layout, executor="serial", progress=False)
    frame = res.frame()
    assert list(frame.groupby("rung")["cell"].count()) == [4, 2, 1]
    assert list(frame.groupby("rung")["questions"].first()) == [2, 4, 8]
    assert res.cell_questions == 4 * 2 + 2 * 4 + 1 * 8 and res.full_grid_cell_questions == 4 * 8
    assert res.compute_share < 1 and res.ci95 is not None and res.winner in set(frame["cell"])
    rec = RunRecord.load(layout.runs / res.winner)  # the final rung is an ordinary, complete run
    assert rec.inputs.question_subset is None and rec.summary["n_questions"] == 8
    assert (layout.reports / "sweeps" / res.sweep_id / "halving.json").is_file()


def test_run_records_say_clearly_what_is_wrong(tmp_path):
    with pytest.raises(ConfigError, match="did not finish; run the cell again"):
        RunRecord.load(tmp_path)
    (tmp_path / "metrics.json").write_text('{"run_id": "r", "chunkset_', encoding="utf-8")
    with pytest.raises(ConfigError, match="is not a hepwb run record"):
        RunRecord.load(tmp_path)
    assert RunRecord.finished(tmp_path) is None


def test_the_serial_executor_runs_a_task_when_its_result_is_needed():
    """A progress bar opened after the submissions advances task by task (it saw nothing for minutes)."""
    from hepwb.sweep.executors.serial import SerialExecutor

    ran: list[int] = []

    def task(i: int, *_: object) -> int:
        ran.append(i)
        return i

    with SerialExecutor() as ex:
        futures = [ex.submit(task, i) for i in range(3)]
        assert ran == []  # nothing runs at submission
        seen = []
        for fut in ex.as_completed(futures):
            seen.append((ex.result(fut), list(ran)))
        assert seen == [(0, [0]), (1, [0, 1]), (2, [0, 1, 2])]
        later = ex.submit(task, 9, futures[0])  # a finished future as an argument
        failing = ex.submit(divmod, 1, 0)
    assert ran == [0, 1, 2, 9] and later.result() == 9  # pending tasks run when the block ends
    assert isinstance(failing.exception(), ZeroDivisionError)
