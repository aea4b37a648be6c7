"""The options of ``hepwb sweep`` and ``hepwb run``: one typed alias each, with its bound and help."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hepwb import limits
from hepwb.sweep.gateway import AUTH_TYPES

__all__ = [
    "Account",
    "AdaptMax",
    "AdaptMin",
    "Cluster",
    "DryRun",
    "Executor",
    "Force",
    "GatewayAddress",
    "GatewayAuth",
    "GpuWorkers",
    "GpusPerJob",
    "GridChunkers",
    "GridK",
    "GridOverlaps",
    "GridRetrievers",
    "GridSizes",
    "Image",
    "JobExtra",
    "JobScript",
    "MaxCells",
    "Notebooks",
    "Queue",
    "Scheduler",
    "Search",
    "SpecFile",
    "Store",
    "TlsCa",
    "TlsCert",
    "TlsKey",
    "WorkerCores",
    "WorkerMemory",
    "Workers",
]

SpecFile = Annotated[
    Path | None,
    typer.Argument(help="Sweep YAML file (default: sweeps/default.yaml, the main job's grid)."),
]
Executor = Annotated[
    str,
    typer.Option(
        help="Where cells run: local (Dask LocalCluster sized to this machine), serial (this "
        "process, for debugging) or dask (with --scheduler/--cluster)."
    ),
]
Scheduler = Annotated[
    str | None,
    typer.Option(help="Address of a running Dask scheduler (tcp://host:8786) to run the cells on."),
]
Workers = Annotated[
    int | None,
    typer.Option(
        min=1,
        max=limits.MAX_WORKERS,
        help="LocalCluster workers (default: one per core) or batch jobs of --cluster.",
    ),
]
Cluster = Annotated[
    str | None,
    typer.Option(
        help="Where workers start: slurm or htcondor batch jobs (dask-jobqueue), or gateway (a Dask "
        "Gateway cluster, as at coffea-casa or Fermilab EAF; shut down when the sweep ends)."
    ),
]
GatewayAddress = Annotated[
    str | None,
    typer.Option(
        "--gateway-address",
        help="--cluster gateway: the gateway's URL (default: gateway.address of Dask's configuration).",
    ),
]
GatewayAuth = Annotated[
    str | None,
    typer.Option(
        help=f"--cluster gateway: authentication, one of {', '.join(AUTH_TYPES)} (default: "
        "gateway.auth.type; credentials from gateway.auth.kwargs or the facility's environment, never "
        "from the command line)."
    ),
]
WorkerCores = Annotated[
    int | None,
    typer.Option(min=1, max=limits.GATEWAY_MAX_WORKER_CORES, help="--cluster gateway: cores per worker."),
]
WorkerMemory = Annotated[
    float | None,
    typer.Option(
        min=limits.GATEWAY_MIN_WORKER_GIB,
        max=limits.GATEWAY_MAX_WORKER_GIB,
        help="--cluster gateway: memory per worker in GiB.",
    ),
]
Image = Annotated[str | None, typer.Option(help="--cluster gateway: the workers' container image.")]
AdaptMin = Annotated[
    int | None,
    typer.Option(min=0, max=limits.MAX_WORKERS, help="--cluster gateway: adaptive scaling, fewest workers."),
]
AdaptMax = Annotated[
    int | None,
    typer.Option(min=1, max=limits.MAX_WORKERS, help="--cluster gateway: adaptive scaling, most workers."),
]
TlsCa = Annotated[
    Path | None, typer.Option(help="--scheduler tls://: the CA certificate (default: Dask's configuration).")
]
TlsCert = Annotated[Path | None, typer.Option(help="--scheduler tls://: this client's certificate (PEM).")]
TlsKey = Annotated[
    Path | None, typer.Option(help="--scheduler tls://: this client's key (PEM), if not in the cert.")
]
Store = Annotated[
    str | None,
    typer.Option(
        help="Keep the artefacts in this object store (s3://BUCKET/PREFIX, or file:///PATH every worker "
        "mounts): the workers need no shared file system, finished cells are reused from it; local: the "
        "local disk (default: $HEPWB_STORE, else the project's hepwb-store.json, else local disk)."
    ),
]
GridSizes = Annotated[str | None, typer.Option(help="Override the grid's chunk sizes, e.g. 256,512,1024.")]
GridRetrievers = Annotated[
    str | None, typer.Option(help="Override the grid's retrievers, e.g. 'bm25,dense(read=max)'.")
]
GridChunkers = Annotated[
    str | None, typer.Option(help="Override the grid's chunkers, e.g. hepilot,recursive.")
]
GridOverlaps = Annotated[str | None, typer.Option(help="Override the grid's overlaps, e.g. 0,0.1,0.2.")]
GridK = Annotated[int | None, typer.Option(help="Override k (chunks retrieved per question).")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="List the cells and what is cached; run nothing.")]
JobScript = Annotated[bool, typer.Option("--job-script", help="Print the batch job script and stop.")]
Notebooks = Annotated[
    bool, typer.Option("--notebooks", help="Run every cell as the executed 20-evaluate notebook (papermill).")
]
Force = Annotated[bool, typer.Option("--force", help="Recompute cells that are already done.")]
Search = Annotated[str, typer.Option(help="grid (every cell) or halving (successive halving).")]
Queue = Annotated[str | None, typer.Option(help="Slurm partition for --cluster slurm.")]
Account = Annotated[str | None, typer.Option(help="Slurm account for --cluster slurm.")]
JobExtra = Annotated[list[str] | None, typer.Option(help="Extra batch directive (repeatable).")]
GpuWorkers = Annotated[
    int,
    typer.Option(
        min=0,
        max=limits.MAX_GPUS,
        help="LocalCluster on a GPU node: this many more workers with a GPU; embedding runs there.",
    ),
]
GpusPerJob = Annotated[
    int,
    typer.Option(
        min=0,
        max=limits.MAX_GPUS,
        help="--cluster: GPUs per batch job (Slurm --gres=gpu:N, HTCondor request_gpus).",
    ),
]
MaxCells = Annotated[
    int | None,
    typer.Option(
        min=int(limits.SWEEP_MAX_CELLS.low),
        help=f"Refuse grids of more cells than this (default: the file's, else {limits.MAX_SWEEP_CELLS}).",
    ),
]
