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
from typing import TYPE_CHECKING, Any

from hepwb.catalog import Catalog
from hepwb.env import configure_runtime
from hepwb.evaluation import load_questions
from hepwb.io import write_json
from hepwb.paths import Layout
from hepwb.pipeline.record import RunRecord
from hepwb.pipeline.stages import questions_path
from hepwb.sweep.engine import _run_cells, load_spec, sweep_id_of
from hepwb.sweep.executors import get_executor
from hepwb.sweep.plan import CellPlan, SweepPlan, plan_cells
from hepwb.sweep.prepare import convert_pending, prepare_stages
from hepwb.sweep.spec import SweepSpec
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
    settings, metric = spec.halving, spec.metric
    cells = spec.cells()
    sid = sweep_id_of(spec, cells) + "-halving"
    plan = plan_cells(cells, layout, sweep_id=sid)
    qids = _question_ids(plan)
    order = qids[:]
    random.Random(settings.seed).shuffle(order)
    catalog = Catalog(layout.catalog)
    catalog.record_sweep(sid, spec.model_dump(mode="json"))
    folder = layout.reports / "sweeps" / sid
    name = "dask" if (scheduler or cluster is not None) and executor == "local" else executor
    rungs: list[JSONObject] = []
    spent = 0
    survivors: list[CellPlan] = list(plan.cells)
    n = min(settings.min_questions, len(order))
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
        rung = 0
        while True:
            final = n >= len(order) or len(survivors) == 1
            subset = None if final else sorted(order[:n])
            configs = [
                c.config if final else c.config.replace(run_dir=str(folder / f"rung{rung}" / c.name))
                for c in survivors
            ]
            rplan = plan_cells(configs, layout, sweep_id=sid, question_subset=subset)
            todo = [c for c in rplan.cells if not c.done]
            outs = {
                o.key: o
                for o in _run_cells(
                    rplan,
                    todo,
                    ex,
                    prep,
                    catalog,
                    notebooks=False,
                    progress=progress,
                    question_subset=subset,
                    with_ci=final,
                )
            }
            results = [(c, outs.get(c.key) or _done(c)) for c in rplan.cells]
            spent += len(results) * (len(order) if final else n)
            ranked = sorted(results, key=lambda r: (_rank_key(r[1], metric), r[0].name), reverse=True)
            keep = len(ranked) if final else max(1, math.ceil(len(ranked) / settings.eta))
            for i, (c, o) in enumerate(ranked):
                rungs.append(
                    {
                        "rung": rung,
                        "cell": c.name,
                        "questions": len(order) if final else n,
                        metric: _rank_key(o, metric)[0],
                        "ok": o.ok,
                        "kept": i < keep,
                    }
                )
            if final:
                break
            by_name = {c.name: c for c in plan.cells}
            survivors = [by_name[c.name] for c, _ in ranked[:keep]]
            n, rung = min(len(order), n * settings.eta), rung + 1
        prep.collect_indexes(ex)
    best_cell, best = ranked[0]
    rec_ci = best.detail.get("ci95") or {}

    record = RunRecord.finished(best_cell.run_dir)
    ci = record.summary_ci95.get(metric) if record else rec_ci.get(metric)
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
    result = HalvingResult(
        sid,
        metric,
        best_cell.name,
        _rank_key(best, metric)[0],
        tuple(ci) if ci else None,
        rungs,
        spent,
        len(plan.cells) * len(order),
        time.perf_counter() - t0,
        {c.name: str(o.detail.get("run_id", "")) for c, o in ranked},
    )
    write_json(folder / "halving.json", {**dataclasses.asdict(result), "compute_share": result.compute_share})
    _log.info("%s", result)
    return result


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
