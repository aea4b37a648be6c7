"""Sweep plans stay bounded: a grid above the cap is refused before any cell is built."""

from __future__ import annotations

import pytest

import hepwb.sweep.spec as spec_module
from hepwb.sweep.spec import SweepSpec, SweepSpecError

HUGE = {"grid": {"chunk_size": list(range(16, 1016)), "k": list(range(1, 1001))}}  # 10**6 cells


def test_a_grid_above_the_cap_is_refused_before_any_cell_is_built(monkeypatch):
    def built(*_a, **_k):
        raise AssertionError("a cell was validated: the grid must be counted, not built")

    monkeypatch.setattr(spec_module, "config_problems", built)
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
