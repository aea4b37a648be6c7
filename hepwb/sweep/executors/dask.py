"""The Dask executor: a LocalCluster sized to this machine, any running cluster, or a batch-system one.

* ``local`` (the default): :class:`distributed.LocalCluster` with one single-threaded worker process
  per core (memory permitting, 2 GiB each at least); Dask's nanny sets ``OMP_NUM_THREADS=1`` in the
  workers, so each uses one core. Worker processes live for the whole sweep and keep the embedding
  model, documents, chunk sets and open tables loaded between cells. They and the scheduler talk mutual
  TLS on 127.0.0.1 with credentials made for the sweep (:func:`local_security`): another local user
  cannot connect and submit work to them.
* ``dask`` with ``scheduler="tcp://host:8786"``: attach to a running cluster (``dask scheduler`` +
  ``dask worker``); the workers must see the same project folder (a shared file system) and run the
  same hepwb environment - checked on connection.
* ``dask`` with ``cluster=`` a dask-jobqueue cluster (:func:`hepwb.sweep.jobqueue.make_cluster`):
  HTCondor or Slurm jobs as workers; or a Dask Gateway cluster
  (:func:`hepwb.sweep.gateway.make_gateway_cluster`), shut down with the executor.
"""

from __future__ import annotations

import copy
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import hepwb
from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.experiment.keys import STAGE_PACKAGES
from hepwb.runtime.deps import extra
from hepwb.store import store_problem
from hepwb.sweep.executors.base import ClusterLostError, register_executor
from hepwb.sweep.executors.connect import check_scheduler_address, probe_scheduler
from hepwb.text.ids import code_fingerprint
from hepwb.types import JSONObject

__all__ = ["DaskExecutor", "check_scheduler_address", "local_cluster_size", "local_security"]

_log = logging.getLogger("hepwb.sweep")
_GIB = 1 << 30
MIN_WORKER_MEMORY = 2 * _GIB


def local_cluster_size(n_workers: int | None = None) -> tuple[int, int]:
    """``(workers, memory limit per worker in bytes)`` for a LocalCluster on this machine."""
    import psutil

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    total = psutil.virtual_memory().total
    n = n_workers or max(1, min(cores, total // MIN_WORKER_MEMORY))
    return n, int(total * 0.8 / n)


def local_security() -> JSONObject:
    """The LocalCluster's ``security`` and ``protocol``: mutual TLS with credentials made for this sweep.

    :meth:`distributed.security.Security.temporary` makes a CA and one certificate in memory; the
    scheduler, the nannies and the workers accept only peers holding it, so no other process (another local
    user's ``Client("tcp://127.0.0.1:PORT").run(...)`` included) can connect and run code in the workers.
    Needs ``cryptography`` (in the ``sweep`` extra).
    """
    with extra("sweep", "a Dask sweep (TLS between its processes needs cryptography)"):
        import cryptography  # noqa: F401 - Security.temporary() needs it; say so before the cluster starts
        from distributed.security import Security

    return {"security": Security.temporary(), "protocol": "tls://", "host": "127.0.0.1"}


def _worker_check(home: str, store: str | None = None) -> JSONObject:
    """Run on every worker: its hepwb code, whether it sees the project folder and reaches the store."""
    code = [code_fingerprint(pkg) for pkg in STAGE_PACKAGES]
    problem = store_problem(store) if store is not None else None
    return {
        "hepwb": hepwb.__version__,
        "code": code,
        "sees_home": Path(home).is_dir(),
        "store_problem": problem,
    }


@register_executor("local")
@register_executor("dask")
class DaskExecutor:
    """Tasks on Dask workers (see the module docstring).

    Args:
        scheduler: Address of a running scheduler; ``None`` starts a LocalCluster (or uses ``cluster``).
        n_workers: LocalCluster workers (default: one per core, memory permitting); jobs of ``cluster``.
        cluster: A started dask-jobqueue, Dask Gateway (or any Dask) cluster, or a function returning one.
        home: The artefact root every worker must see (unless ``store`` is given).
        security: TLS credentials for ``scheduler``
            (:func:`~hepwb.sweep.executors.connect.scheduler_security`).
        store: The artefact store's URL: the workers must reach it instead of seeing ``home``.
        gpu_workers: LocalCluster only: this many more workers declaring the Dask resource ``GPU=1`` (on a GPU
            node; worker ``i`` sees CUDA device ``i`` when there are that many). Embedding tasks go to workers
            with a ``GPU`` resource whenever any has one (also those of ``--scheduler`` started with
            ``dask worker ADDRESS --resources GPU=1``, and of GPU batch jobs), everything else anywhere.
    """

    name = "dask"

    def __init__(
        self,
        scheduler: str | None = None,
        n_workers: int | None = None,
        cluster: Any = None,
        home: str | Path | None = None,
        gpu_workers: int = 0,
        security: Any = None,
        store: str | None = None,
        **_: Any,
    ) -> None:
        with extra("sweep", "the Dask executor (or run serially: --executor serial)"):
            from distributed import Client, LocalCluster
        _quiet()
        if gpu_workers and (scheduler or cluster is not None):
            msg = (
                "--gpu-workers adds GPU workers to the LocalCluster here; with --scheduler or --cluster,"
                " start them there (dask worker ADDRESS --resources GPU=1, or --gpus-per-job)"
            )
            raise ConfigError(msg)
        self._own: Any = None
        if scheduler:
            check_scheduler_address(
                scheduler, security
            )  # before any Client: a failed one can deadlock the next
            probe_scheduler(scheduler, security)  # and a Dask scheduler answers there, in bounded time
            try:
                self.client = Client(scheduler, timeout=f"{limits.SCHEDULER_WAIT_S:g}s", security=security)
            except OSError as exc:
                msg = (
                    f"cannot connect to the Dask scheduler at {scheduler} ({exc}); start one with "
                    "`dask scheduler` and workers with `dask worker ADDRESS`, or drop --scheduler"
                )
                raise ConfigError(msg) from None
        elif cluster is not None:
            if callable(cluster) and not hasattr(cluster, "scale"):  # a factory: the cluster starts now
                cluster = cluster()
            self._own = cluster
            try:
                if n_workers:  # jobqueue clusters scale by jobs (each runs several workers)
                    is_jobs = hasattr(cluster, "job_script")
                    cluster.scale(**({"jobs": n_workers} if is_jobs else {"n": n_workers}))
                self.client = cluster.get_client() if hasattr(cluster, "get_client") else Client(cluster)
            except BaseException:
                cluster.close()
                raise
        else:
            with extra("sweep", "a Dask sweep"):
                import dask

            n, mem = local_cluster_size(n_workers)
            port = _free_port() if _have_bokeh() else None
            with dask.config.set({**_lean_worker_config(), **(_dashboard(port) if port else {})}):
                self._own = LocalCluster(
                    n_workers=n,
                    threads_per_worker=1,
                    processes=True,
                    memory_limit=mem,
                    dashboard_address=f"127.0.0.1:{port}" if port else None,
                    silence_logs=logging.ERROR,
                    **local_security(),
                )
            self.client = Client(self._own)  # the cluster's credentials
            if gpu_workers:
                _add_gpu_workers(self._own, gpu_workers)
                self.client.wait_for_workers(n + gpu_workers, timeout=120)
        self.gpu = bool(gpu_workers) or getattr(cluster, "hepwb_gpus", 0) > 0 or _gpu_workers(self.client) > 0
        try:
            if home is not None:
                self._check_workers(str(home), store)
        except BaseException:
            self.__exit__()
            raise

    def _check_workers(self, home: str, store: str | None) -> None:
        code = [code_fingerprint(pkg) for pkg in STAGE_PACKAGES]
        if not self.client.scheduler_info().get("workers"):
            return  # a jobqueue cluster whose jobs have not started yet: checked by the tasks themselves
        for addr, info in self.client.run(_worker_check, home, store).items():
            if info.get("store_problem"):
                msg = f"Dask worker {addr} cannot reach the artefact store {store}: {info['store_problem']}"
                raise ConfigError(msg)
            if store is None and not info["sees_home"]:
                msg = (
                    f"Dask worker {addr} cannot see the project folder {home}: run the workers on machines "
                    "sharing that file system, set HEPWB_HOME to a shared folder, or keep the artefacts in "
                    "an object store the workers reach (--store s3://BUCKET/PREFIX)"
                )
                raise ConfigError(msg)
            if info["hepwb"] != hepwb.__version__ or info["code"] != code:
                msg = (
                    f"Dask worker {addr} runs other hepwb code ({info['hepwb']}, {info['code']}) than this "
                    f"process ({hepwb.__version__}, {code}): its results would carry other keys; restart the "
                    "workers from the same checkout"
                )
                raise ConfigError(msg)

    def submit(
        self, fn: Callable[..., Any], *args: Any, key: str | None = None, gpu: bool = False, **kwargs: Any
    ) -> Any:
        """Submit ``fn`` under a readable unique key (futures in the arguments are dependencies).

        ``gpu``: run on a worker with the ``GPU`` resource when there is one.
        """
        name = f"{key or fn.__name__}-{uuid.uuid4().hex[:8]}"
        resources = {"GPU": 1} if gpu and self.gpu else None
        return self.client.submit(fn, *args, key=name, pure=False, resources=resources, **kwargs)

    def as_completed(self, futures: Iterable[Any]) -> Iterator[Any]:
        """The futures as they finish."""
        with extra("sweep", "a Dask sweep"):
            from distributed import as_completed

        return iter(as_completed(list(futures)))

    def result(self, future: Any) -> Any:
        """The task's result (a lost worker raises ``KilledWorker``).

        Raises:
            ClusterLostError: The scheduler went away (a gateway cluster stopped, the scheduler killed):
                one line, and the sweep stops; the cells finished so far are kept for the rerun.
        """
        try:
            return future.result()
        except Exception as exc:
            if self.client.status == "running":
                raise  # the task's own error, or one lost worker: that cell fails, the others go on
            address = getattr(self.client.scheduler, "address", None) or "its address"
            msg = (
                f"the Dask cluster at {address} was lost mid-sweep ({type(exc).__name__}); the cells "
                "finished so far are kept: run the same command again to compute the rest"
            )
            raise ClusterLostError(msg) from None

    def n_workers(self) -> int:
        """Workers connected now (at least 1)."""
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def describe(self) -> str:
        """Workers, threads and the dashboard link."""
        info = self.client.scheduler_info()
        workers = info.get("workers", {})
        threads = sum(w.get("nthreads", 0) for w in workers.values())
        gpus = _gpu_workers(self.client)
        link = self.client.dashboard_link if _have_bokeh() else "no dashboard (pip install bokeh)"
        on_gpu = f", {gpus} with a GPU (embedding goes there)" if gpus else ""
        where = f"Dask {info.get('address', '')}: {len(workers)} workers{on_gpu}, {threads} threads"
        return f"{where}; dashboard {link}"

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        if self._own is not None:
            self._own.close()


def _gpu_workers(client: Any) -> int:
    """Workers that declare the Dask resource ``GPU``."""
    workers = client.scheduler_info().get("workers", {})
    return sum(1 for w in workers.values() if (w.get("resources") or {}).get("GPU"))


def _add_gpu_workers(cluster: Any, n: int) -> None:
    """Add ``n`` workers with the resource ``GPU=1`` to a LocalCluster (worker ``i`` pinned to GPU ``i``)."""
    import torch

    visible = torch.cuda.device_count()
    for i in range(n):
        spec = copy.deepcopy(next(iter(cluster.new_worker_spec().values())))
        env = {"HEPWB_DEVICE": os.environ.get("HEPWB_DEVICE", "auto")}
        if n <= visible:
            env["CUDA_VISIBLE_DEVICES"] = str(i)
        spec["options"].update(resources={"GPU": 1}, env=env)
        cluster.worker_spec[f"gpu-{i}"] = spec
    cluster.sync(cluster._correct_state)


def _quiet() -> None:
    """Dask logs every connection and worker start at INFO: keep its warnings unless hepwb runs verbose.

    The client's own errors (a traceback for each failed reconnection to a scheduler that went away) are
    said by hepwb in one line (:class:`~hepwb.sweep.executors.base.ClusterLostError`).
    """
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        for name in ("distributed", "bokeh", "tornado"):
            logging.getLogger(name).setLevel(logging.WARNING)
        logging.getLogger("distributed.client").setLevel(logging.CRITICAL)


def _lean_worker_config() -> JSONObject:
    """Dask settings for LocalCluster workers doing CPU-bound model work on every core.

    Measured on 2 cores (embedding 64 texts per task): a worker embedded 9.5 texts/s with Dask's defaults
    and 11.1 texts/s with these, as fast as a plain process running the task in a thread. glibc's
    ``MALLOC_TRIM_THRESHOLD_=65536`` (set by the nanny) makes torch return and re-map memory between
    operations; the statistical profiler and the 20 ms event-loop tick wake the worker 150 times a second.
    The dashboard still shows tasks, memory and progress (not the profile).
    """
    with extra("sweep", "a Dask sweep"):
        import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    return {
        "distributed.nanny.pre-spawn-environ": environ,
        "distributed.worker.profile.enabled": False,
        "distributed.admin.tick.interval": "1s",
    }


def _dashboard(port: int) -> JSONObject:
    """The dashboard on 127.0.0.1:``port``, accepting that origin only.

    Dask's default origin ``*`` (and any wildcard) makes bokeh log a warning on every cluster start.
    """
    return {
        "distributed.scheduler.dashboard.bokeh-application.allow_websocket_origin": [
            f"127.0.0.1:{port}",
            f"localhost:{port}",
        ]
    }


def _free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _have_bokeh() -> bool:
    from importlib.util import find_spec

    return find_spec("bokeh") is not None
