"""A sweep's cells on an executor: each submitted after its table, each outcome recorded as it finishes.

:func:`run_cells` is shared by the full sweep (:func:`~hepwb.sweep.engine.run_sweep`) and successive
halving (:func:`~hepwb.sweep.halving.run_halving`, whose rungs score cells on question subsets). A cell
whose chunk set or table failed fails with that stage's error without being submitted; a cell whose
worker was lost (killed, out of memory) fails, and the others go on.
"""

from __future__ import annotations

import logging
from typing import Any

from hepwb.catalog import Catalog
from hepwb.sweep.executors import Executor
from hepwb.sweep.executors.base import ClusterLostError
from hepwb.sweep.plan import CellPlan, SweepPlan
from hepwb.sweep.prepare import PreparedStages
from hepwb.sweep.store_tasks import cell_task as store_cell_task
from hepwb.sweep.tasks import Outcome, cell_task, record_cell_failure

__all__ = ["membership", "reused", "run_cells"]

_log = logging.getLogger("hepwb.sweep")


def reused(cell: CellPlan, catalog: Catalog) -> Outcome:
    """The outcome of a cell already done: its record (recorded in the catalog if it is not yet)."""
    rec = cell.record
    assert rec is not None  # only done cells are reused
    if not catalog.has_run(rec.run_id):
        catalog.record_run(cell.run_dir)
    return Outcome(
        "cell",
        cell.key,
        True,
        0.0,
        rec.worker,
        0.0,
        detail={"reused": True, "run_id": rec.run_id, "summary": rec.summary},
    )


def membership(cell: CellPlan, o: Outcome) -> tuple[str, str, str, bool]:
    """The catalog's row of ``cell`` in its sweep: name, run id, status and whether it was reused."""
    run_id = o.detail.get("run_id") or f"failed-{cell.name}"
    return cell.name, run_id, "ok" if o.ok else "failed", bool(o.detail.get("reused"))


def run_cells(
    plan: SweepPlan,
    todo: list[CellPlan],
    ex: Executor,
    prep: PreparedStages,
    catalog: Catalog,
    *,
    notebooks: bool,
    progress: bool,
    question_subset: list[str] | None = None,
    with_ci: bool = True,
) -> list[Outcome]:
    """Submit the cells (each after its table), record each in the catalog as it finishes."""
    from tqdm.auto import tqdm

    futures: dict[Any, CellPlan] = {}
    outcomes: list[Outcome] = []
    for c in todo:
        broken = _upstream_failure(plan, c, prep, catalog)
        if broken is not None:
            outcomes.append(broken)
            continue
        fut = _submit(
            plan, c, ex, prep, notebooks=notebooks, question_subset=question_subset, with_ci=with_ci
        )
        futures[fut] = c
    with tqdm(total=len(todo), initial=len(outcomes), desc="cells", unit="cell", disable=not progress) as bar:
        for fut in ex.as_completed(list(futures)):
            c = futures[fut]
            o = _result(plan, c, ex, fut)
            outcomes.append(o)
            if question_subset is None:
                _record(c, o, catalog)
            bar.update(1)
    return outcomes


def _upstream_failure(plan: SweepPlan, c: CellPlan, prep: PreparedStages, catalog: Catalog) -> Outcome | None:
    """The failed outcome of a cell whose chunk set or table failed (recorded), or ``None``: it can run."""
    broken = prep.failed.get(c.chunkset_id) or prep.failed.get(c.index)
    if broken is None:
        return None
    o = Outcome(
        broken.stage,
        c.key,
        False,
        0.0,
        broken.worker,
        0.0,
        error=broken.error,
        error_type=broken.error_type,
        traceback=broken.traceback,
    )
    record_cell_failure(o, c.config.to_dict(), c.run_dir, plan.sweep_id)
    catalog.record_failure(c.run_dir)
    return o


def _submit(
    plan: SweepPlan,
    c: CellPlan,
    ex: Executor,
    prep: PreparedStages,
    *,
    notebooks: bool,
    question_subset: list[str] | None,
    with_ci: bool,
) -> Any:
    """Submit one cell's task after its table's: on the shared file system, or through the store."""
    after = [prep.index_futures[c.index]] if c.index in prep.index_futures else []
    remote = plan.store
    where = {"run_dir": c.run_dir} if remote is None else {"artefacts": remote.cell_artefacts(plan, c)}
    return ex.submit(
        cell_task if remote is None else store_cell_task,
        str(plan.layout.root) if remote is None else remote.site,
        c.config if remote is None else c.config.to_dict(),
        c.inputs_key,
        c.key,
        *after,
        key=f"cell-{c.name}",
        sweep_id=plan.sweep_id,
        question_subset=question_subset,
        with_ci=with_ci,
        notebook=notebooks,
        **where,
    )


def _result(plan: SweepPlan, c: CellPlan, ex: Executor, fut: Any) -> Outcome:
    """A finished cell's outcome; a lost worker's cell fails (recorded); a store's run fetched here."""
    try:
        o: Outcome = ex.result(fut)
    except ClusterLostError:
        raise  # the whole cluster: no failure of this configuration, the sweep stops in one line
    except Exception as exc:  # a lost worker (killed, out of memory): the cell fails, the rest go on
        o = Outcome(
            "cell",
            c.key,
            False,
            0.0,
            "",
            0.0,
            error=str(exc),
            error_type=type(exc).__name__,
            traceback=f"{type(exc).__name__}: {exc}",
        )
        record_cell_failure(o, c.config.to_dict(), c.run_dir, plan.sweep_id)
    if plan.store is not None:  # its run fetched here, or its failure written here
        plan.store.finish_cell(plan, c, o)
    return o


def _record(c: CellPlan, o: Outcome, catalog: Catalog) -> None:
    """Record a full cell's run (or failure, logged) in the catalog; rung cells of halving are not."""
    if o.ok:
        catalog.record_run(c.run_dir)
    else:
        catalog.record_failure(c.run_dir)
        _log.error("cell %s failed: %s (see %s/traceback.txt)", c.name, o.error, c.run_dir)
