"""Dask workers as batch jobs on the HTCondor and Slurm clusters of HEP sites (dask-jobqueue).

Each job runs ``cores`` single-threaded hepwb workers (one process per core, like the LocalCluster);
the job script activates the same environment and sets hepwb's offline/telemetry variables. The
scheduler runs where ``hepwb sweep`` runs (a login or submit node), and the workers must share the
project folder with it (AFS/EOS/NFS/Lustre)::

    hepwb sweep sweeps/grid.yaml --cluster slurm --workers 8 --queue short --account hep
    hepwb sweep sweeps/grid.yaml --cluster htcondor --workers 8 --job-extra '+JobFlavour="longlunch"'
    hepwb sweep sweeps/grid.yaml --cluster slurm --job-script   # print the job script, submit nothing

Site defaults can also live in Dask's own configuration (``~/.config/dask/jobqueue.yaml``,
``jobqueue.slurm.*`` / ``jobqueue.htcondor.*``), which dask-jobqueue reads; options given here win.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from hepwb import defaults
from hepwb.exceptions import ConfigError
from hepwb.runtime.deps import extra
from hepwb.runtime.env import OFFLINE_VARIABLES, online_requested
from hepwb.types import JSONObject

__all__ = ["KINDS", "job_prologue", "make_cluster"]

KINDS = ("slurm", "htcondor")
_ENV = (
    *OFFLINE_VARIABLES,
    "HEPWB_ONLINE",
    "RAGAS_DO_NOT_TRACK",
    "ORT_DISABLE_TELEMETRY",
    "HF_HUB_DISABLE_TELEMETRY",
    "TOKENIZERS_PARALLELISM",
    "HEPWB_HOME",
    "HEPWB_SHARED",
)


def job_prologue(home: str | Path, python: str | None = None) -> list[str]:
    """Shell lines run before each worker: the environment of this process and hepwb's variables."""
    py = Path(python or sys.executable)
    lines = []
    activate = py.parent / "activate"
    if activate.is_file():
        lines.append(f"source {activate}")
    env = {k: os.environ[k] for k in _ENV if k in os.environ}
    if not online_requested():
        env.update({k: env.get(k, "1") for k in OFFLINE_VARIABLES})
    env.setdefault("RAGAS_DO_NOT_TRACK", "true")
    env["HEPWB_HOME"] = str(Path(home).resolve())
    lines += [f"export {k}={v}" for k, v in sorted(env.items())]
    lines.append(f"cd {Path(home).resolve()}")
    return lines


def make_cluster(
    kind: str,
    *,
    home: str | Path,
    cores: int = defaults.BATCH_JOB_CORES,
    memory: str = "8GiB",
    walltime: str = "04:00:00",
    queue: str | None = None,
    account: str | None = None,
    disk: str = "10GiB",
    job_extra: list[str] | None = None,
    interface: str | None = None,
    log_directory: str | None = None,
    gpus_per_job: int = 0,
    **options: Any,
) -> Any:
    """A dask-jobqueue cluster of ``kind`` (``slurm`` or ``htcondor``) running hepwb workers.

    Args:
        kind: The batch system.
        home: The project folder (shared with the workers).
        cores: Cores per job; the job runs as many single-threaded workers.
        memory: Memory per job (hepwb workers peak below 1.5 GiB each; see bench/bench_sweep.py).
        walltime: Slurm time limit (``HH:MM:SS``).
        queue: Slurm partition.
        account: Slurm account.
        disk: HTCondor disk request.
        job_extra: Extra directives: ``--constraint=x`` lines (Slurm) or ``key=value`` (HTCondor).
        interface: Network interface the scheduler and workers listen on (e.g. ``ib0``).
        log_directory: Where the batch system writes the workers' logs.
        gpus_per_job: GPUs each job requests (Slurm ``--gres=gpu:N``, HTCondor ``request_gpus``); its workers
            then declare the Dask resource ``GPU`` and the sweep's embedding tasks run on them.
        **options: Any other dask-jobqueue option.
    """
    with extra("sweep", "an HTCondor or Slurm cluster"):
        import dask_jobqueue
    if kind not in KINDS:
        msg = f"unknown batch system {kind!r}; choose one of {list(KINDS)} (or attach with --scheduler)"
        raise ConfigError(msg)
    for what, value in (
        ("--queue", queue),
        ("--account", account),
        *(("--job-extra", x) for x in job_extra or ()),
    ):
        if value is not None and any(ord(ch) < 32 or ord(ch) == 127 for ch in str(value)):
            msg = (
                f"{what} {str(value)[:40]!r} holds a newline or control character: it would add lines to the "
                "batch script; give one directive per --job-extra"
            )
            raise ConfigError(msg)
    common: JSONObject = {
        "cores": cores,
        "processes": cores,
        "memory": memory,
        "job_script_prologue": job_prologue(home, options.pop("python", None)),
        "job_name": "hepwb-worker",
        "log_directory": log_directory or str(Path(home) / "reports" / "dask-logs"),
        "interface": interface,
        **options,
    }
    # the dashboard on a free port (its link is printed): a second sweep on the same login node is no clash
    scheduler = dict(common.get("scheduler_options") or {})
    scheduler.setdefault("dashboard_address", ":0")
    common["scheduler_options"] = scheduler
    directives_list = list(job_extra or [])
    if gpus_per_job:
        common["worker_extra_args"] = [*common.get("worker_extra_args", []), "--resources", "GPU=1"]
        directives_list.append(
            f"--gres=gpu:{gpus_per_job}" if kind == "slurm" else f"request_gpus={gpus_per_job}"
        )
    cluster: Any
    if kind == "slurm":
        cluster = dask_jobqueue.SLURMCluster(  # type: ignore[attr-defined]  # re-exported, no __all__
            walltime=walltime, queue=queue, account=account, job_extra_directives=directives_list, **common
        )
    else:
        directives = dict(e.split("=", 1) for e in directives_list)
        cluster = dask_jobqueue.HTCondorCluster(  # type: ignore[attr-defined]  # re-exported, no __all__
            disk=disk, job_extra_directives=directives, **common
        )
    cluster.hepwb_gpus = gpus_per_job  # read by the Dask executor before any job has started
    return cluster
