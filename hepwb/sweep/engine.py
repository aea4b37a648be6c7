"""Run a sweep: plan it, compute each shared stage once, run the cells on an executor, record everything.

    spec = SweepSpec.from_yaml("sweeps/default.yaml")
    result = run_sweep(spec)                   # LocalCluster sized to this machine
    result = run_sweep(spec, executor="serial")  # in this process, for debugging
    result.frame()

A cell whose configuration and input hashes match a finished run is not recomputed (an unchanged sweep
reruns in about a second, without starting any worker); a failing cell is recorded (error and
traceback in its run folder and the catalog) and the others go on; a sweep killed part-way resumes.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hepwb import defaults
from hepwb.catalog import Catalog
from hepwb.exceptions import ConfigError
from hepwb.experiment.config import ExperimentConfig
from hepwb.experiment.stages import table_parts_of
from hepwb.paths import Layout
from hepwb.runtime.env import configure_runtime
from hepwb.store import resolve_store
from hepwb.sweep.cells import membership, reused, run_cells
from hepwb.sweep.executors import Executor, get_executor
from hepwb.sweep.plan import CellPlan, Planner, SweepPlan, plan_cells
from hepwb.sweep.prepare import PreparedStages, convert_pending, mark_built, prepare_stages
from hepwb.sweep.spec import SweepSpec
from hepwb.sweep.store_client import StoreSweep
from hepwb.sweep.tasks import Outcome
from hepwb.text.ids import ListHash
from hepwb.types import JSONObject

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["SweepResult", "default_spec_path", "load_spec", "plan_sweep", "run_sweep", "sweep_id_of"]

_log = logging.getLogger("hepwb.sweep")


def default_spec_path(layout: Layout | None = None) -> Path:
    """``sweeps/default.yaml`` of the project (the main job's grid)."""
    cands = [
        (layout or Layout.default()).root / "sweeps" / "default.yaml",
        Path(__file__).resolve().parents[2] / "sweeps" / "default.yaml",
    ]
    for c in cands:
        if c.is_file():
            return c
    msg = f"no sweeps/default.yaml under {cands[0].parent.parent}; run hepwb from the project folder"
    raise ConfigError(msg)


def load_spec(spec: SweepSpec | str | Path | JSONObject | None, layout: Layout | None = None) -> SweepSpec:
    """A :class:`SweepSpec` from a spec, a YAML path, a parameters mapping or ``None`` (the default grid)."""
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, dict):
        return SweepSpec.from_dict(spec)
    return SweepSpec.from_yaml(spec if spec is not None else default_spec_path(layout))


def sweep_id_of(spec: SweepSpec, cells: Iterable[Any] | ListHash) -> str:
    """Deterministic id of a sweep: its name and the hash of its cells' configurations.

    ``cells`` may be a :class:`~hepwb.text.ids.ListHash` already fed every cell's ``to_dict()``.
    """
    if not isinstance(cells, ListHash):
        h = ListHash()
        for c in cells:
            h.add(c.to_dict())
        cells = h
    return f"sweep-{spec.name}-{cells.short(10)}"


def plan_sweep(
    spec: SweepSpec | str | Path | JSONObject | None,
    layout: Layout | None = None,
    *,
    notebooks: bool = False,
) -> SweepPlan:
    """Validate ``spec`` and plan it: nothing is computed.

    Every cell is kept; :func:`~hepwb.sweep.dryrun.dry_run` summarises grids too large to list.
    """
    layout = layout or Layout.default()
    spec = load_spec(spec, layout)
    planner = Planner(layout, notebooks=notebooks)
    ids = ListHash()
    cells = []
    for cfg, text in spec.iter_canonical():
        ids.add_json(text)
        cells.append(planner.add(cfg))
    return planner.plan(sweep_id_of(spec, ids), cells)


@dataclass
class SweepResult:
    """What a sweep did: one outcome per cell (reused cells included) and per stage computed."""

    sweep_id: str
    plan: SweepPlan = field(repr=False)
    cells: list[Outcome] = field(repr=False)
    stages: list[Outcome] = field(repr=False)
    wall_s: float
    executor: str
    embedded: int = 0
    unique_texts: int = 0
    moved: dict[str, dict[str, int]] = field(default_factory=dict)
    """A store-backed sweep's bytes sent to and received from the store, per stage (empty: local disk)."""

    @property
    def failed(self) -> list[Outcome]:
        """Cells that failed."""
        return [c for c in self.cells if not c.ok]

    @property
    def computed(self) -> list[Outcome]:
        """Cells computed by this sweep (not reused)."""
        return [c for c in self.cells if c.ok and not c.detail.get("reused")]

    def peak_rss_mib(self) -> dict[str, float]:
        """Peak resident memory (MiB) of every worker that ran a task."""
        out: dict[str, float] = {}
        for o in [*self.cells, *self.stages]:
            if o.worker:
                out[o.worker] = max(out.get(o.worker, 0.0), o.peak_rss_mib)
        return out

    def frame(self, metric: str = defaults.DECISION_METRIC) -> pd.DataFrame:
        """One row per cell: name, status, whether reused, ``metric``, wall time, worker, error."""
        import pandas as pd

        names = {c.key: c.name for c in self.plan.cells}
        return pd.DataFrame(
            [
                {
                    "cell": names.get(o.key, o.key),
                    "status": "ok" if o.ok else f"failed ({o.stage})",
                    "reused": bool(o.detail.get("reused")),
                    metric: (o.detail.get("summary") or {}).get(metric),
                    "wall_s": round(o.wall_s, 2),
                    "worker": o.worker,
                    "error": o.error[:200],
                }
                for o in self.cells
            ]
        )


def run_sweep(
    spec: SweepSpec | str | Path | JSONObject | None = None,
    *,
    layout: Layout | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    n_workers: int | None = None,
    cluster: Any = None,
    gpu_workers: int = 0,
    notebooks: bool = False,
    force: bool = False,
    progress: bool = True,
    security: Any = None,
    store: str | None = None,
) -> SweepResult:
    """Run every cell of ``spec`` (see the module docstring); returns what happened.

    Args:
        spec: A :class:`SweepSpec`, a YAML file, a parameters mapping, or ``None`` for sweeps/default.yaml.
        layout: Artefact folders (default: this project's).
        executor: ``local`` (Dask LocalCluster), ``dask`` (with ``scheduler`` or ``cluster``) or ``serial``.
        scheduler: Address of a running Dask scheduler (implies ``executor="dask"``).
        n_workers: LocalCluster workers (default: one per core) or batch jobs of ``cluster``.
        cluster: A dask-jobqueue cluster (:func:`hepwb.sweep.jobqueue.make_cluster`) or a Dask Gateway one
            (:func:`hepwb.sweep.gateway.make_gateway_cluster`), or a function of no argument returning one,
            called only when some cell is to run; the cluster is closed when the sweep ends.
        gpu_workers: LocalCluster workers with a GPU added to the CPU ones; embedding runs on them.
        notebooks: Run every cell as the ``20-evaluate`` notebook (papermill), kept in its run folder.
        force: Recompute cells even when a finished run with the same key exists.
        progress: Show progress bars.
        security: TLS credentials for ``scheduler``
            (:func:`hepwb.sweep.executors.connect.scheduler_security`).
        store: The artefact store's URL (default: ``$HEPWB_STORE`` or the project's ``hepwb-store.json``;
            ``local`` or none: local disk). With a store the workers need no shared file system: tasks fetch
            their inputs from it and publish their outputs there; this process fetches the finished runs
            and alone writes the catalog (:mod:`hepwb.sweep.store_client`).
    """
    t0 = time.perf_counter()
    configure_runtime(offline=None)
    layout = layout or Layout.default()
    spec = load_spec(spec, layout)
    if spec.device:  # here and in the workers this starts; a remote cluster's workers need HEPWB_DEVICE set
        os.environ["HEPWB_DEVICE"] = spec.device
    cells = spec.cells()
    sid = sweep_id_of(spec, cells)
    url = resolve_store(store, layout.root)
    remote = _store_sweep(url, layout, notebooks=notebooks)
    plan = _plan(cells, layout, sid, remote, notebooks=notebooks)
    catalog = Catalog(layout.catalog)
    catalog.record_sweep(sid, spec.model_dump(mode="json"))
    todo = [c for c in plan.cells if force or not c.done]
    _log.info("%s: %d cells, %d to run\n%s", sid, len(plan.cells), len(todo), plan.summary())
    if not todo:
        return _all_reused(sid, plan, catalog, cluster, remote, t0)
    name = "dask" if (scheduler or cluster is not None) and executor == "local" else executor
    with get_executor(
        name,
        scheduler=scheduler,
        n_workers=n_workers,
        cluster=cluster,
        home=layout.root,
        gpu_workers=gpu_workers,
        security=security,
        store=url,
    ) as ex:
        _log.info("%s", ex.describe())
        plan, prep, outcomes = _compute(
            plan,
            todo,
            ex,
            catalog,
            remote,
            lambda: _plan(cells, layout, sid, remote, notebooks=notebooks),
            force=force,
            notebooks=notebooks,
            progress=progress,
        )
    return _finish(sid, plan, prep, outcomes, catalog, ex.name, remote, t0)


def _store_sweep(url: str | None, layout: Layout, *, notebooks: bool) -> StoreSweep | None:
    """The store side of a sweep whose artefacts are in the store ``url`` (``None``: local disk).

    Raises:
        ConfigError: ``notebooks`` with a store (notebook cells need a shared file system).
    """
    if url is not None and notebooks:
        msg = f"--notebooks runs cells on a shared file system: drop --notebooks or the store {url}"
        raise ConfigError(msg)
    if url is None:
        return None
    remote = StoreSweep(url, layout)
    _log.info("artefacts in the store %s (this project keeps the runs and the catalog)", url)
    return remote


def _plan(
    cells: list[ExperimentConfig], layout: Layout, sid: str, remote: StoreSweep | None, *, notebooks: bool
) -> SweepPlan:
    """The plan of ``cells``: against the store's artefacts, or this project's folders."""
    if remote is not None:
        return remote.plan(cells, sid, notebooks=notebooks)
    return plan_cells(cells, layout, sweep_id=sid, notebooks=notebooks)


def _all_reused(
    sid: str, plan: SweepPlan, catalog: Catalog, cluster: Any, remote: StoreSweep | None, t0: float
) -> SweepResult:
    """The result of a sweep with no cell to run: every cell reused, recorded, and no worker started."""
    if cluster is not None and hasattr(cluster, "close"):  # a started cluster no task will use
        cluster.close()
    outcomes = [reused(c, catalog) for c in plan.cells]
    catalog.record_sweep_cells(sid, [(c.name, c.record.run_id, "ok", True) for c in plan.cells if c.record])
    moved = remote.moved if remote is not None else {}
    return SweepResult(sid, plan, outcomes, [], time.perf_counter() - t0, "none", moved=moved)


def _compute(
    plan: SweepPlan,
    todo: list[CellPlan],
    ex: Executor,
    catalog: Catalog,
    remote: StoreSweep | None,
    replan: Callable[[], SweepPlan],
    *,
    force: bool,
    notebooks: bool,
    progress: bool,
) -> tuple[SweepPlan, PreparedStages, list[Outcome]]:
    """Convert the papers, build the shared stages and run the cells to do, on ``ex``.

    Returns:
        The plan (made again when conversions failed: their cells are left out), the stages and the
        outcomes of the cells run.
    """
    if remote is not None:
        remote.publish_inputs(plan)
    stages = convert_pending(plan, todo, ex, progress=progress)
    if stages:  # failed conversions are left out from now on: plan again
        plan = replan()
        todo = [c for c in plan.cells if force or not c.done]
    prep = PreparedStages(stages=list(stages))
    outcomes: list[Outcome] = []
    for phase in _phases(plan, todo):  # lexical cells first: they never wait for embeddings
        part = prepare_stages(plan, phase, ex, progress=progress)
        outcomes += run_cells(plan, phase, ex, part, catalog, notebooks=notebooks, progress=progress)
        part.collect_indexes(ex)
        mark_built(plan, part, phase)
        prep.merge(part)
    if remote is not None:  # the table builds' bytes, and a store that failed them
        for s in prep.stages:
            if s.stage == "index":
                remote.check(s)
    return plan, prep, outcomes


def _phases(plan: SweepPlan, todo: list[CellPlan]) -> list[list[CellPlan]]:
    """The cells in the order they are prepared and run: those whose retriever reads no vector, then the rest.

    The first phase builds its tables without embeddings and its cells finish while nothing is embedded;
    the second adds the vectors to the same tables in place. A store-backed sweep publishes whole tables:
    one phase.
    """
    if plan.store is not None:
        return [todo] if todo else []
    lexical = [c for c in todo if "vector" not in table_parts_of(c.config)]
    rest = [c for c in todo if "vector" in table_parts_of(c.config)]
    return [p for p in (lexical, rest) if p]


def _finish(
    sid: str,
    plan: SweepPlan,
    prep: PreparedStages,
    outcomes: list[Outcome],
    catalog: Catalog,
    executor: str,
    remote: StoreSweep | None,
    t0: float,
) -> SweepResult:
    """Record the sweep's cells (run or reused) and stages in the catalog; the result, logged."""
    by_key = {o.key: o for o in outcomes}
    all_outcomes = [by_key.get(c.key) or reused(c, catalog) for c in plan.cells]
    catalog.record_sweep_cells(sid, [membership(c, o) for c, o in zip(plan.cells, all_outcomes, strict=True)])
    catalog.record_stages(
        sid,
        [(s.stage, s.key, s.wall_s, s.worker, not s.detail.get("reused"), {"ok": s.ok}) for s in prep.stages],
    )
    result = SweepResult(
        sid,
        plan,
        all_outcomes,
        prep.stages,
        time.perf_counter() - t0,
        executor,
        prep.embedded,
        prep.unique_texts,
        remote.moved if remote is not None else {},
    )
    _log.info(
        "%s: %d cells computed, %d reused, %d failed in %.1f s",
        sid,
        len(result.computed),
        len(plan.cells) - len(outcomes),
        len(result.failed),
        result.wall_s,
    )
    return result
