"""``hepwb sweep --dry-run``: a sweep's plan summarised while its cells stream.

Cells are validated and planned one at a time and only counts, the first and the last rows are kept,
so a grid of 10^5 cells is summarised in seconds and a flat amount of memory
(``bench/bench_sweep.py --plan`` measures it).

Example:
    >>> from hepwb.sweep import SweepSpec
    >>> spec = SweepSpec.from_dict({"grid": {"k": [1, 2, 3]}})
    >>> dry_run(spec).cells
    3
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hepwb import defaults
from hepwb.paths import Layout
from hepwb.sweep.engine import load_spec, sweep_id_of
from hepwb.sweep.plan import CellPlan, Planner, plan_row, stage_counts, summarize_counts
from hepwb.sweep.spec import SweepSpec
from hepwb.text.ids import ListHash
from hepwb.types import JSONObject

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DryRun", "dry_run"]


@dataclass(frozen=True)
class DryRun:
    """What a sweep would do: stage counts and the first and last cells' rows (not every cell's)."""

    sweep_id: str
    cells: int
    counts: dict[str, tuple[int, int]]
    head: tuple[JSONObject, ...]
    tail: tuple[JSONObject, ...]

    @property
    def hidden(self) -> int:
        """Cells between ``head`` and ``tail`` that are not listed."""
        return self.cells - len(self.head) - len(self.tail)

    def frame(self) -> pd.DataFrame:
        """The listed cells, one row each (with a ``…`` row where cells are left out)."""
        import pandas as pd

        gap = [{"cell": f"… {self.hidden:,} more cells …"}] if self.hidden else []
        return pd.DataFrame([*self.head, *gap, *self.tail], dtype=object).fillna("")

    def summary(self) -> str:
        """The sweep's id, its cell count and one line per stage: how much is cached."""
        return f"{self.sweep_id}: {self.cells:,} cells\n{summarize_counts(self.counts)}"


def dry_run(
    spec: SweepSpec | str | Path | JSONObject | None,
    layout: Layout | None = None,
    *,
    notebooks: bool = False,
    rows: int = defaults.DISPLAY_DRY_RUN_ROWS,
) -> DryRun:
    """Validate and plan ``spec`` streaming its cells; keep counts and ``rows`` listed cells.

    Args:
        spec: A :class:`SweepSpec`, a YAML file, a parameters mapping or ``None`` (the default grid).
        layout: Artefact folders (default: this project's).
        notebooks: A cell counts as done only when its executed notebook is there too.
        rows: How many cells to list (half from the start, half from the end); all when there are
            no more than this.
    """
    layout = layout or Layout.default()
    spec = load_spec(spec, layout)
    planner = Planner(layout, notebooks=notebooks)
    ids = ListHash()
    head: list[JSONObject] = []
    tail: deque[CellPlan] = deque(maxlen=rows)
    n = done = 0
    for cfg, text in spec.iter_canonical():
        ids.add_json(text)
        cell = planner.add(cfg)
        n += 1
        done += cell.done
        if len(head) < (rows + 1) // 2:
            head.append(plan_row(planner, cell))
        else:
            tail.append(cell)
    keep = rows // 2 if n > rows else len(tail)
    last = tuple(plan_row(planner, c) for c in list(tail)[len(tail) - keep :])
    counts = {**stage_counts(layout, planner.corpora, planner.chunksets, planner.indexes), "cell": (done, n)}
    return DryRun(sweep_id_of(spec, ids), n, counts, tuple(head), last)
