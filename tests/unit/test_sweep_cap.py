"""Sweep plans stay bounded: a grid above the cap is refused before any cell is built; cells stream."""

from __future__ import annotations

import pytest

import hepwb.sweep.cellcheck as cellcheck_module
from hepwb.paths import Layout
from hepwb.sweep.dryrun import dry_run
from hepwb.sweep.engine import plan_sweep, sweep_id_of
from hepwb.sweep.spec import SweepSpec, SweepSpecError
from hepwb.text.ids import short_hash
from tests.helpers import tiny_corpus


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("plan")
    corpus, questions = tiny_corpus(root)
    return Layout(root / "home"), {"corpus": str(corpus), "questions": str(questions), "tokenizer": "words"}


HUGE = {"grid": {"chunk_size": list(range(16, 1016)), "k": list(range(1, 1001))}}  # 10**6 cells


def test_a_grid_above_the_cap_is_refused_before_any_cell_is_built(monkeypatch):
    def built(*_a, **_k):
        raise AssertionError("a cell was validated: the grid must be counted, not built")

    monkeypatch.setattr(cellcheck_module, "validated", built)
    with pytest.raises(SweepSpecError) as err:
        SweepSpec.from_dict(HUGE, source="huge.yaml").cells(check_inputs=False)
    msg = str(err.value)
    assert "huge.yaml: the grid has 1,000,000 cells, more than the cap of 10,000" in msg
    assert "--max-cells" in msg and "--search halving" in msg


def test_the_cap_is_a_setting():
    spec = SweepSpec.from_dict({"max_cells": 3, "grid": {"k": [1, 2, 3, 4]}})
    with pytest.raises(SweepSpecError, match="the grid has 4 cells, more than the cap of 3"):
        spec.cells(check_inputs=False)
    assert len(spec.with_overrides(max_cells=4).cells(check_inputs=False)) == 4


def test_cells_stream_and_every_problem_is_still_reported_at_once():
    spec = SweepSpec.from_dict({"grid": {"chunk_size": [4, 256, 2], "k": [1, 0]}}, source="s.yaml")
    cells = spec.iter_cells(check_inputs=False)
    first = next(cells)  # a generator: the first valid cell comes before the grid is exhausted
    assert (first.chunk_size, first.k) == (256, 1)
    with pytest.raises(SweepSpecError) as err:
        list(cells)
    lines = str(err.value).splitlines()
    assert [ln.split(":")[1].strip() for ln in lines] == [
        "grid.chunk_size[0] = 4",
        "grid.k[1] = 0",
        "grid.chunk_size[2] = 2",
    ]


def test_duplicates_are_dropped_while_streaming():
    spec = SweepSpec.from_dict({"grid": {"retriever": ["bm25", {"name": "bm25"}, "dense"]}})
    assert [c.retriever for c in spec.iter_cells(check_inputs=False)] == ["bm25", "dense"]


def test_the_sweep_id_is_the_hash_of_the_cells_list(tiny):
    tmp_layout, base = tiny
    spec = SweepSpec.from_dict({"name": "ids", **base, "grid": {"k": [1, 2, 3]}})
    cells = spec.cells()
    expected = f"sweep-ids-{short_hash([c.to_dict() for c in cells], 10)}"
    assert sweep_id_of(spec, cells) == expected  # ids of earlier sweeps in catalogs stay valid
    assert plan_sweep(spec, tmp_layout).sweep_id == expected
    assert dry_run(spec, tmp_layout).sweep_id == expected


def test_a_dry_run_lists_the_first_and_last_cells_and_counts_them_all(tiny):
    tmp_layout, base = tiny
    spec = SweepSpec.from_dict({**base, "grid": {"chunk_size": [64, 128, 256], "k": list(range(1, 11))}})
    plan = plan_sweep(spec, tmp_layout)
    summary = dry_run(spec, tmp_layout, rows=6)
    assert summary.cells == len(plan.cells) == 30 and summary.hidden == 24
    assert summary.counts == plan.counts()
    frame = summary.frame()
    listed = [c.name for c in plan.cells[:3] + plan.cells[-3:]]
    assert [c for c in frame["cell"] if not c.startswith("…")] == listed
    assert "… 24 more cells …" in set(frame["cell"])
    assert list(frame["k"])[:3] == [1, 2, 3]  # integers stay integers beside the gap row
    assert summary.summary().splitlines()[0] == f"{plan.sweep_id}: 30 cells"
    small = dry_run(spec, tmp_layout, rows=40)
    assert small.hidden == 0 and list(small.frame()["cell"]) == [c.name for c in plan.cells]
