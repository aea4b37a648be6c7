"""Successive halving over a sweep grid (``hepwb sweep FILE --search halving``).

Every cell is first scored on a random subset of the questions (``min_questions``); the best
``1/eta`` are kept and scored on ``eta`` times as many questions, and so on until the survivors are
scored on the whole set (full runs, recorded like any sweep cell, with 95 % intervals). The shared
stages (chunk sets, embeddings, tables) are built once for every cell, as in a full sweep; what
halving saves is the retrieval and scoring of cells that are clearly behind.

The question order is a seeded shuffle (``halving.seed``), so a rerun takes the same subsets and finds
its rungs cached.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb.catalog import Catalog
from hepwb.evaluation import load_questions
from hepwb.experiment.stages import questions_path
from hepwb.files.io import write_json
from hepwb.paths import Layout
from hepwb.runs.record import RunRecord
from hepwb.runtime.env import configure_runtime
from hepwb.sweep.cells import run_cells
from hepwb.sweep.engine import load_spec, sweep_id_of
from hepwb.sweep.executors import Executor, get_executor
from hepwb.sweep.plan import CellPlan, SweepPlan, plan_cells
from hepwb.sweep.prepare import PreparedStages, convert_pending, prepare_stages
from hepwb.sweep.spec import HalvingSettings, SweepSpec
from hepwb.sweep.tasks import Outcome
from hepwb.types import JSONObject

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["HalvingResult", "run_halving"]

_log = logging.getLogger("hepwb.sweep")


@dataclass
class HalvingResult:
    """The winner of a successive-halving search and what it cost."""

    sweep_id: str
    metric: str
    winner: str
    value: float
    ci95: tuple[float, float] | None
    rungs: list[JSONObject] = field(repr=False)
    cell_questions: int = 0
    full_grid_cell_questions: int = 0
    wall_s: float = 0.0
    final_run_ids: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def compute_share(self) -> float:
        """Cell × question evaluations done, as a share of the full grid's."""
        return self.cell_questions / max(self.full_grid_cell_questions, 1)

    def frame(self) -> pd.DataFrame:
        """One row per (rung, cell): questions, metric value, kept or not."""
        import pandas as pd

        return pd.DataFrame(self.rungs)

    def __str__(self) -> str:
        ci = f" [{self.ci95[0]:.3f}, {self.ci95[1]:.3f}]" if self.ci95 else ""
        return (
            f"winner {self.winner}: {self.metric} = {self.value:.3f}{ci}; "
            f"{self.cell_questions} of {self.full_grid_cell_questions} cell-question evaluations "
            f"({self.compute_share:.0%} of the full grid) in {self.wall_s:.0f} s"
        )


def _question_ids(plan: SweepPlan) -> list[str]:
    """Questions of the sweep's question set that refer only to documents of its corpus."""
    cfgs = {(c.config.questions, str(c.config.corpus), c.config.max_docs) for c in plan.cells}
    if len(cfgs) != 1:
        msg = "successive halving compares cells on the same questions: use one corpus and one question set"
        raise ValueError(msg)
    cell = plan.cells[0]
    corpus = plan.corpora[(str(cell.config.corpus), cell.config.max_docs, cell.config.prefer_latex)]
    labels = {f.label for f in corpus.files}
    qs = load_questions(questions_path(cell.config.questions))
    return sorted(q.qid for q in qs if all(e.doc in labels for e in q.evidence))


def _rank_key(out: Any, metric: str) -> tuple[float, float]:
    s = out.detail.get("summary") or {}
    return (float(s.get(metric, float("-inf"))), float(s.get("mrr@10", s.get("mrr@5", 0.0))))


def run_halving(
    spec: SweepSpec | str | JSONObject | None = None,
    *,
    layout: Layout | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    n_workers: int | None = None,
    cluster: Any = None,
    gpu_workers: int = 0,
    progress: bool = True,
) -> HalvingResult:
    """Successive halving over the cells of ``spec`` (see the module docstring)."""
    t0 = time.perf_counter()
    configure_runtime(offline=None)
    layout = layout or Layout.default()
    spec = load_spec(spec, layout)
    cells = spec.cells()
    sid = sweep_id_of(spec, cells) + "-halving"
    plan = plan_cells(cells, layout, sweep_id=sid)
    order = _question_ids(plan)
    random.Random(spec.halving.seed).shuffle(order)
    catalog = Catalog(layout.catalog)
    catalog.record_sweep(sid, spec.model_dump(mode="json"))
    folder = layout.reports / "sweeps" / sid
    name = "dask" if (scheduler or cluster is not None) and executor == "local" else executor
    with get_executor(
        name,
        scheduler=scheduler,
        n_workers=n_workers,
        cluster=cluster,
        home=layout.root,
        gpu_workers=gpu_workers,
    ) as ex:
        convert_pending(plan, plan.cells, ex, progress=progress)
        plan = plan_cells(cells, layout, sweep_id=sid)
        prep = prepare_stages(plan, plan.cells, ex, progress=progress)
        rungs = _Rungs(layout, sid, folder, ex, prep, catalog, spec.metric, progress)
        ranked, rows, spent = rungs.search(plan, order, spec.halving)
        prep.collect_indexes(ex)
    catalog.record_sweep_cells(
        sid,
        [
            (
                c.name,
                o.detail.get("run_id", f"failed-{c.name}"),
                "ok" if o.ok else "failed",
                bool(o.detail.get("reused")),
            )
            for c, o in ranked
        ],
    )
    result = _result(sid, spec.metric, ranked, rows, spent, len(plan.cells) * len(order), t0)
    write_json(folder / "halving.json", {**dataclasses.asdict(result), "compute_share": result.compute_share})
    _log.info("%s", result)
    return result


@dataclass
class _Rungs:
    """What every rung of one search shares: where its cells run and are recorded, and the metric ranked."""

    layout: Layout
    sweep_id: str
    folder: Path
    ex: Executor
    prep: PreparedStages
    catalog: Catalog
    metric: str
    progress: bool

    def search(
        self, plan: SweepPlan, order: list[str], settings: HalvingSettings
    ) -> tuple[list[tuple[CellPlan, Outcome]], list[JSONObject], int]:
        """Rung after rung, each on ``eta`` times the questions of the last, until full runs of the best.

        Returns:
            The last rung's cells ranked best first, one row per (rung, cell), and the cell × question
            evaluations done.
        """
        rows: list[JSONObject] = []
        spent = 0
        survivors: list[CellPlan] = list(plan.cells)
        n = min(settings.min_questions, len(order))
        rung = 0
        while True:
            final = n >= len(order) or len(survivors) == 1
            ranked = self.run(survivors, rung, None if final else sorted(order[:n]))
            spent += len(ranked) * (len(order) if final else n)
            keep = len(ranked) if final else max(1, math.ceil(len(ranked) / settings.eta))
            for i, (c, o) in enumerate(ranked):
                rows.append(
                    {
                        "rung": rung,
                        "cell": c.name,
                        "questions": len(order) if final else n,
                        self.metric: _rank_key(o, self.metric)[0],
                        "ok": o.ok,
                        "kept": i < keep,
                    }
                )
            if final:
                return ranked, rows, spent
            by_name = {c.name: c for c in plan.cells}
            survivors = [by_name[c.name] for c, _ in ranked[:keep]]
            n, rung = min(len(order), n * settings.eta), rung + 1

    def run(
        self, survivors: list[CellPlan], rung: int, subset: list[str] | None
    ) -> list[tuple[CellPlan, Outcome]]:
        """One rung: the survivors scored on ``subset`` (``None``: full runs, with intervals), best first.

        A rung on a subset writes its runs under the sweep's report folder (``rung<N>/<cell>``), so
        they never stand in for a cell's full run.
        """
        final = subset is None
        configs = [
            c.config if final else c.config.replace(run_dir=str(self.folder / f"rung{rung}" / c.name))
            for c in survivors
        ]
        rplan = plan_cells(configs, self.layout, sweep_id=self.sweep_id, question_subset=subset)
        todo = [c for c in rplan.cells if not c.done]
        outs = {
            o.key: o
            for o in run_cells(
                rplan,
                todo,
                self.ex,
                self.prep,
                self.catalog,
                notebooks=False,
                progress=self.progress,
                question_subset=subset,
                with_ci=final,
            )
        }
        results = [(c, outs.get(c.key) or _done(c)) for c in rplan.cells]
        return sorted(results, key=lambda r: (_rank_key(r[1], self.metric), r[0].name), reverse=True)


def _result(
    sid: str,
    metric: str,
    ranked: list[tuple[CellPlan, Outcome]],
    rows: list[JSONObject],
    spent: int,
    full_grid: int,
    t0: float,
) -> HalvingResult:
    """The search's winner (the best of the last rung, with its run's 95 % interval) and its cost."""
    best_cell, best = ranked[0]
    rec_ci = best.detail.get("ci95") or {}

    record = RunRecord.finished(best_cell.run_dir)
    ci = record.summary_ci95.get(metric) if record else rec_ci.get(metric)
    return HalvingResult(
        sid,
        metric,
        best_cell.name,
        _rank_key(best, metric)[0],
        tuple(ci) if ci else None,
        rows,
        spent,
        full_grid,
        time.perf_counter() - t0,
        {c.name: str(o.detail.get("run_id", "")) for c, o in ranked},
    )


def _done(cell: CellPlan) -> Any:
    rec = cell.record
    summary = rec.summary if rec else {}
    return Outcome(
        "cell",
        cell.key,
        rec is not None,
        0.0,
        "",
        0.0,
        detail={"reused": True, "run_id": rec.run_id if rec else "", "summary": summary},
    )
